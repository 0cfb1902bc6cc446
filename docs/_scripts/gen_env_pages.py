"""Write the environment pages ``docs/envs/*.md`` from the envs' docstrings: the docstring is the single source.

Each page has PettingZoo's layout for its classic envs (``docs/_scripts/gen_envs_mds.py`` there): a title, the
docstring's first line, a summary table (Import, Actions, Agents, Action Shape, Action Values, Observation Shape,
Observation Values; the spaces read off a live env, as Gymnasium's ``docs/_scripts/gen_mds.py`` does), then the
docstring's own ``## `` sections (Observation, Action mask, Actions, Rewards, ..., Version History) as they are.
RST roles in the docstring (``:class:`X```) become MyST roles (``{py:class}`X```).

Run it after editing an env's docstring (``python docs/_scripts/gen_env_pages.py``); ``--check`` only compares
and exits 1 when a page is stale. ``tests/test_docs.py`` fails when a committed page differs from what this
script writes.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
REQUIRED_SECTIONS = ("Observation", "Action mask", "Actions", "Rewards", "Version History")


@dataclass(frozen=True)
class Page:
    slug: str  # docs/envs/<slug>.md
    title: str
    obj: str  # "module:attribute" whose docstring is the page
    import_line: str
    agents: str
    make: Callable[[], tuple]  # -> (action space, observation space) of one agent / one game
    batched: bool = False  # the spaces get a leading axis of N (a vector env)
    jax: str | None = None  # the same game in the JAX core's faces (yacht_env.jax), if it has one


def _yacht():
    import gymnasium as gym

    import yacht_env  # noqa: F401

    env = gym.make("Yacht-v0")
    return env.action_space, env.observation_space


def _vector():
    from yacht_env.vector import YachtVectorEnv

    env = YachtVectorEnv(2)
    return env.single_action_space, env.single_observation_space


def _sb3():
    from yacht_env.sb3 import YachtSB3VecEnv

    env = YachtSB3VecEnv(2)
    return env.action_space, env.observation_space


def _versus():
    import gymnasium as gym

    import yacht_env  # noqa: F401

    env = gym.make("YachtVersus-v0", opponents=["random"])
    return env.action_space, env.observation_space


def _multiplayer():
    from yacht_env.multiplayer import env

    table = env(num_players=2)
    return table.action_space("player_0"), table.observation_space("player_0")["observation"]


PAGES = (
    Page(
        "yacht",
        "Yacht-v0",
        "yacht_env.env:YachtEnv",
        'gymnasium.make("Yacht-v0")',
        "1",
        _yacht,
        jax="yacht_env.jax.YachtGymnax(rules)` (gymnax) or `yacht_env.jax.YachtPgx(rules, num_players=1)` (pgx)",
    ),
    Page(
        "vector",
        "YachtVectorEnv (the native vector env)",
        "yacht_env.vector:YachtVectorEnv",
        'gymnasium.make_vec("Yacht-v0", num_envs=N)',
        "1 per game, N games",
        _vector,
        batched=True,
        jax="jax.vmap(YachtPgx(rules, num_players=1).step)` (or `YachtGymnax`'s step), under `jax.jit`",
    ),
    Page(
        "sb3",
        "YachtSB3VecEnv (the Stable-Baselines3 adapter)",
        "yacht_env.sb3:YachtSB3VecEnv",
        "from yacht_env.sb3 import YachtSB3VecEnv",
        "1 per game, N games",
        _sb3,
        batched=True,
    ),
    Page(
        "versus",
        "YachtVersus-v0",
        "yacht_env.versus:YachtVersusEnv",
        'gymnasium.make("YachtVersus-v0", opponents=["greedy"])',
        "1 learner; 1 to 9 opponents inside `step`",
        _versus,
    ),
    Page(
        "multiplayer",
        "Multiplayer (PettingZoo, yacht_v0)",
        "yacht_env.multiplayer:raw_env",
        "from yacht_env.multiplayer import env",
        "`player_0` .. `player_{n-1}`, n = `num_players` (1 to 10; 2 by default)",
        _multiplayer,
        jax="yacht_env.jax.YachtPgx(rules, num_players=n)` (pgx's `current_player`, one reward per player)",
    ),
)

_ROLE = re.compile(r":(class|func|meth|mod|attr|data|obj|exc):`([^`]+)`")


def _shape(shape: tuple, batched: bool) -> str:
    return f"`{('N', *shape)}`".replace("'N'", "N") if batched else f"`{shape}`"


def _values(space) -> str:
    low, high = space.low.min(), space.high.max()
    return f"`[{low:g}, {high:g}]`"


def docstring(obj: str) -> str:
    module, attribute = obj.split(":")
    doc = inspect.cleandoc(getattr(importlib.import_module(module), attribute).__doc__)
    return _ROLE.sub(lambda m: f"{{py:{m.group(1)}}}`{m.group(2)}`", doc)


def render(page: Page) -> str:
    doc = docstring(page.obj)
    summary, _, body = doc.partition("\n\n")
    sections = re.findall(r"^## (.+)$", body, flags=re.MULTILINE)
    missing = [name for name in REQUIRED_SECTIONS if name not in sections]
    if missing or not body.startswith("## ") or sections[-1] != "Version History":
        raise ValueError(f"{page.obj}: the docstring needs the sections {REQUIRED_SECTIONS} (missing {missing})")
    action_space, observation_space = page.make()
    obs_shape = observation_space.shape
    rows = [
        ("Import", f"`{page.import_line}`"),
        ("Actions", type(action_space).__name__),
        ("Agents", page.agents),
        ("Action Shape", _shape(action_space.shape, page.batched)),
        ("Action Values", f"`{action_space}`"),
        ("Observation Shape", _shape(obs_shape, page.batched)),
        ("Observation Values", _values(observation_space)),
    ]
    if page.jax is not None:  # the JAX entry point: docs/jax.md
        rows.insert(1, ("JAX", f"`{page.jax} ([JAX](../jax.md))"))
    table = [f"| {rows[0][0]} | {rows[0][1]} |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows[1:])]
    head = [
        f"<!-- Generated by docs/_scripts/gen_env_pages.py from the docstring of {page.obj.replace(':', '.')}: "
        "edit the docstring, then run the script. -->",
        "",
        f"# {page.title}",
        "",
        summary,
        "",
        *table,
        "",
    ]
    return "\n".join(head) + "\n" + body.rstrip() + "\n"


def render_pages() -> dict[Path, str]:
    return {DOCS / "envs" / f"{page.slug}.md": render(page) for page in PAGES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a page is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in render_pages().items():
        if not path.is_file() or path.read_text() != text:
            stale.append(path)
            if not args.check:
                path.write_text(text)
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(DOCS.parent)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
