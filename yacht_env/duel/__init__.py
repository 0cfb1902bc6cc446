"""Two-player Yacht, solved exactly: the equilibrium (both players play to win) and the best response to a fixed
solo policy, for any rules without bonuses.

Between two turns the game is ``(mover, other, lead)``: the open masks of the player about to move and of the
other player, and the mover's total minus the other's (Yacht has no bonus, so the totals matter only through
their difference). The value of a state is ``W = P(the mover finishes ahead) + P(tie) / 2``. The first player
moves first in every round. A turn is the solo solver's turn with a vector over the lead in place of one number:
after a pick of box ``c`` for ``s`` points the mover's chance is ``1 - W(other, mover without c, -(lead + s))``
(or 1, 1/2, 0 by the sign of ``lead + s`` once both sheets are full); the best pick and the best keep are taken
per lead; a keep averages over the re-rolled dice. :mod:`yacht_env.duel.layout` has the levels and the window
of leads each state keeps (the rest are decided or never reached), :mod:`yacht_env.duel.turn` the pick values of a
turn (the rest of it is :mod:`yacht_env.turn_rows`, the solo solver's), :mod:`yacht_env.duel.levels` a level from
the level below and the kinds of solve, :mod:`yacht_env.duel.builder` the level-by-level build on disk,
:mod:`yacht_env.duel.accel` the same kernels on a GPU.

* :func:`solve` ``(rules)``: the equilibrium. ``first_player_value`` is the game's value ``V*`` for the first
  player; its strategy (:meth:`DuelSolution.best_action`) is a player no opponent beats on average over the two
  seats.
* :func:`solve` ``(rules, opponent="optimal")`` (or a policy table, e.g. a trained agent's through
  :func:`yacht_agents.win.policy_table`): the best response to that solo policy, the most any player can win
  against it. The opponent's turn does not look at the lead, so it is averaged over how that policy's turns end
  from its open mask (:func:`yacht_env.distributions.turn_outcomes`). ``seat_values`` are the exact win rates of
  the best response in each seat.

A solution is built once per rules, opponent and precision and kept on disk (beside the solver's cache, in
``duel/``): the small games of the tests take a second, ``standard``'s equilibrium 29 minutes on two cores
(``python -m yacht_env.duel build --rules standard``). Its files are arrays only, checksummed, memory-mapped for
play.

Example:
    >>> from yacht_env.rules import Rules
    >>> from yacht_env.duel import solve
    >>> duel = solve(Rules(name="two-box", categories=("ones", "yacht")), precision="float64")
    >>> round(duel.first_player_value, 6)
    0.498983
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_env.duel.builder import (
    FORMAT_VERSION,
    MAX_WORKERS,
    WORKERS,
    build,
    load_tables,
    read_manifest,
)
from yacht_env.duel.layout import Layout
from yacht_env.duel.play import DuelSolution
from yacht_env.duel.turn import QUANT

__all__ = [
    "QUANT",
    "DuelSolution",
    "Layout",
    "evaluate",
    "read_manifest",
    "solution_folder",
    "solve",
    "unsupported",
]

PRECISIONS = {"float32": np.float32, "float64": np.float64}
_MEMO: dict[tuple[str, str], DuelSolution] = {}  # (folder, storage) -> the solution


def unsupported(rules: R.Rules, players: int = 2) -> str | None:
    """Why the two-player solve does not cover ``rules`` at ``players`` seats (one line), or ``None``."""
    if players != 2:
        return f"the exact table solve covers two players, not {players}: three or more stay open"
    if rules.has_bonuses:
        return (
            f"the exact two-player solve covers rules without bonuses (Yacht's presets); {rules.name!r} has an upper "
            "or Yahtzee bonus, whose subtotals multiply the joint states beyond reach"
        )
    return None


def _opponent(rules: R.Rules, opponent) -> tuple[str, np.ndarray | None, str | None]:
    """``(kind, outcomes, digest)`` of an opponent: ``None`` (the equilibrium), ``"optimal"`` or a policy table."""
    from yacht_env import distributions as D

    if opponent is None:
        return "equilibrium", None, None
    if isinstance(opponent, str):
        if opponent != "optimal":
            raise ValueError(
                f"opponent must be None (the equilibrium), 'optimal' or a policy table (3, num_open_masks, 252), "
                f"got {opponent!r}"
            )
        policy = D.solver_policy(rules)
    else:
        policy = np.asarray(opponent)
    outcomes = D.turn_outcomes(rules, policy)  # checks the table
    digest = hashlib.sha256(np.ascontiguousarray(policy, dtype=np.uint8).tobytes()).hexdigest()
    return "best_response", outcomes, digest


def _key(rules: R.Rules, kind: str, digest: str | None, precision: str) -> str:
    payload = {"rules": rules.as_dict(), "format": FORMAT_VERSION, "kind": kind, "policy": digest, "dtype": precision}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def solution_folder(
    rules: str | R.Rules = "standard",
    opponent=None,
    precision: str = "float32",
    cache_dir: str | os.PathLike | None = None,
) -> Path:
    """The folder a solution is built in: ``<cache_dir>/duel/<rules>-<kind>-<key prefix>``."""
    rules = R.get_rules(rules)
    kind, _, digest = _opponent(rules, opponent)
    return _folder(rules, kind, _key(rules, kind, digest, precision), cache_dir)


def _folder(rules: R.Rules, kind: str, key: str, cache_dir: str | os.PathLike | None) -> Path:
    from yacht_env import solver as S

    name = re.sub(r"[^A-Za-z0-9_.-]", "_", rules.name)[:40]
    return S.cache_path(rules, cache_dir).parent / "duel" / f"{name}-{kind}-{key[:16]}"


def solve(
    rules: str | R.Rules = "standard",
    opponent=None,
    *,
    precision: str = "float32",
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    keep_float32: bool = False,
    build_missing: bool = True,
    storage: str = "compact",
    device: str = "auto",
    workers: int | None = None,
) -> DuelSolution:
    """The exact two-player solution of ``rules``: the equilibrium, or the best response to ``opponent``.

    Args:
        rules: A preset name or :class:`~yacht_env.rules.Rules` without bonuses.
        opponent: ``None`` for the equilibrium; ``"optimal"`` (the solver's policy) or a policy table
            ``(3, num_open_masks, 252)`` of legal actions for the best response to that solo policy.
        precision: ``"float32"`` (the full games) or ``"float64"`` (small games exact to 1e-12).
        cache_dir: The cache folder (as :func:`yacht_env.solver.solve`'s); the solution lies in its ``duel/``.
        progress: Show the build's progress line on stderr.
        keep_float32: Keep the float32 level files of a build beside the uint16 ones.
        build_missing: Build what is not on disk yet (resuming a stopped build); ``False`` raises instead.
        storage: ``"compact"`` plays from the uint16 files where the build made them (float32 builds), ``"exact"``
            from the float files (float64 builds, or float32 ones built with ``keep_float32``).
        device: Where a build computes (:func:`yacht_env.duel.accel.device_for`): ``"auto"`` takes a GPU where
            torch sees one, else numpy on all cores.
        workers: The worker processes a numpy build computes its big levels in (``None``: one per core; ``1``:
            none, all in this process); the values do not depend on it.

    Raises:
        ValueError: rules with bonuses, a bad opponent or precision, or (``build_missing=False``) no finished
            solution on disk.
    """
    rules = R.get_rules(rules)
    reason = unsupported(rules)
    if reason is not None:
        raise ValueError(reason)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be 'float32' or 'float64', got {precision!r}")
    if storage not in ("compact", "exact"):
        raise ValueError(f"storage must be 'compact' or 'exact', got {storage!r}")
    kind, outcomes, digest = _opponent(rules, opponent)
    key = _key(rules, kind, digest, precision)
    folder = _folder(rules, kind, key, cache_dir)
    hint = f"python -m yacht_env.duel build --rules {rules.name}" + (" --opponent optimal" * (opponent == "optimal"))
    options = {"progress": progress, "keep_float32": keep_float32, "dtype": PRECISIONS[precision], "device": device}
    options["workers"] = _workers(workers)
    return _finished(folder, Layout(rules), kind, key, outcomes, storage, hint, options if build_missing else None)


def evaluate(
    rules: str | R.Rules = "standard",
    opponent="optimal",
    *,
    precision: str = "float32",
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    build_missing: bool = True,
    device: str = "auto",
    workers: int | None = None,
) -> DuelSolution:
    """The equilibrium's exact chance to win against a fixed solo policy, in each seat (no sampling).

    The equilibrium's player makes every keep and pick as the ``duel`` agent does (from the equilibrium's stored
    values, ties to a re-roll and to the smallest box; ties between two keeps may go another way than the agent's,
    a difference of at most the stored values' rounding); the opponent plays its policy. The recurrence is the
    best response's with the maximising turn replaced by the equilibrium's (:mod:`yacht_env.duel.builder`): a
    pass as long as the equilibrium's build, after it.

    Args:
        rules: A preset name or :class:`~yacht_env.rules.Rules` without bonuses.
        opponent: ``"optimal"`` (the solver's policy) or a policy table ``(3, num_open_masks, 252)``.
        precision: The equilibrium's and the evaluation's float type, as :func:`solve`'s.
        cache_dir: The cache folder, as :func:`solve`'s.
        progress: Show the builds' progress lines on stderr.
        build_missing: Build what is not on disk yet (the equilibrium included); ``False`` raises instead.
        device: Where the builds compute, as :func:`solve`'s.
        workers: The builds' worker processes, as :func:`solve`'s.

    Returns:
        A :class:`DuelSolution` of kind ``"evaluation"``: ``seat_values`` are the equilibrium's exact win rates
        against the opponent in each seat, ``value`` its chance at any state; it has no actions of its own (ask
        the equilibrium's :meth:`~DuelSolution.q_values`).

    Raises:
        ValueError: as :func:`solve`'s, or no opponent (the equilibrium against itself is ``V*``).
    """
    rules = R.get_rules(rules)
    if opponent is None:
        raise ValueError("evaluate needs a fixed opponent ('optimal' or a policy table): against itself it is V*")
    equilibrium = solve(
        rules,
        precision=precision,
        cache_dir=cache_dir,
        progress=progress,
        build_missing=build_missing,
        device=device,
        workers=workers,
    )
    _, outcomes, digest = _opponent(rules, opponent)
    key = _key(rules, "evaluation", digest, precision)
    folder = _folder(rules, "evaluation", key, cache_dir)
    hint = f"python -m yacht_env.duel evaluate --rules {rules.name}"
    options = {
        "progress": progress,
        "dtype": PRECISIONS[precision],
        "device": device,
        "workers": _workers(workers),
        "strategy": equilibrium.levels("E"),
    }
    build_options = options if build_missing else None
    return _finished(folder, equilibrium.layout, "evaluation", key, outcomes, "compact", hint, build_options)


def _workers(workers: int | None) -> int:
    if workers is None:
        return WORKERS
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be an int in 1..{MAX_WORKERS} (or None: one per core), got {workers!r}")
    return int(workers)


def _finished(
    folder: Path, layout: Layout, kind: str, key: str, outcomes, storage: str, hint: str, build_options: dict | None
) -> DuelSolution:
    """The solution in ``folder``, built first where it is not finished (``build_options=None``: raises instead)."""
    if (str(folder), storage) in _MEMO:
        return _MEMO[str(folder), storage]
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("key") != key or not manifest.get("complete"):
        if build_options is None:
            raise ValueError(
                f"no finished two-player solution of {layout.rules.name!r} ({kind}) in {folder}: build it with {hint}"
            )
        manifest = build(folder, layout, kind, key, outcomes, **build_options)
    tables = load_tables(folder, manifest, layout, storage)
    solution = DuelSolution(layout, kind, tables, manifest["values"], folder)
    _MEMO[str(folder), storage] = solution
    return solution
