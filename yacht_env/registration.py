"""The Gymnasium ids: one solo id and one versus id per rule preset, each the same env with that preset's rules.

``import yacht_env`` calls :func:`register_envs`, so a script that only takes an env id can choose the rules:
``gymnasium.make("Yahtzee-v0")`` is ``gymnasium.make("Yacht-v0", rules="yahtzee")``, and ``gymnasium.make_vec``
on it builds the native vector env on those rules. :func:`env_id` names every id.

A ``rules=`` given to ``make`` or ``make_vec`` wins over the id's preset (Gymnasium's keyword arguments override the
registered ones): ``gymnasium.make("Yahtzee-v0", rules="yatzy")`` plays Yatzy. Name the rules once, by id or by
``rules``.
"""

from __future__ import annotations

from yacht_env.rules import PRESETS

#: The entry points of the solo ids and of the versus ids: (one game, N games).
ENTRY_POINTS = {
    False: ("yacht_env.env:YachtEnv", "yacht_env.vector:YachtVectorEnv"),
    True: ("yacht_env.versus:YachtVersusEnv", "yacht_env.versus:YachtVersusVectorEnv"),
}
#: The games a preset's name may begin with; any other preset is one of Yacht's.
_GAMES = ("yacht", "yahtzee", "yatzy")


def env_id(preset: str, versus: bool = False) -> str:
    """The Gymnasium id of a preset: its name in CamelCase, after ``Yacht`` where the name does not begin with its
    game (``yahtzee_no_joker``: ``YahtzeeNoJoker-v0``; ``classic``: ``YachtClassic-v0``; ``standard``, the default
    rules: ``Yacht-v0``); ``Versus`` ends the name of the versus env's id (``YahtzeeVersus-v0``).

    Raises:
        ValueError: ``preset`` is not a name of :data:`yacht_env.rules.PRESETS`.
    """
    if not isinstance(preset, str) or preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    words = [] if preset == "standard" else preset.split("_")
    if not words or words[0] not in _GAMES:
        words.insert(0, "yacht")
    return "".join(word.capitalize() for word in words) + ("Versus" if versus else "") + "-v0"


def register_envs() -> None:
    """Registers both ids of every preset with Gymnasium (an id already registered is left as it is)."""
    import gymnasium  # here, not above: env_id names ids without gymnasium, for the JAX core's gymnax registry

    for preset in PRESETS:
        for versus, (entry_point, vector_entry_point) in ENTRY_POINTS.items():
            name = env_id(preset, versus)
            if name not in gymnasium.registry:
                gymnasium.register(
                    id=name,
                    entry_point=entry_point,
                    vector_entry_point=vector_entry_point,
                    kwargs={"rules": preset},
                )
