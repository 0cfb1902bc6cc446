"""``search:PATH``: a learned value of the turn's end, and the exact expectimax over the agent's own dice.

A network ``V`` values the *afterstate* of a turn, the sheets once the pick is made and before anyone rolls again:

* solo, the points still to come (an open mask, the upper subtotal capped at the bonus threshold, whether the
  Yahtzee box holds its points; every box filled: exactly 0);
* at a table of ``P``, the chance that the mover finishes first (a tie among ``m`` leaders counts ``1 / m``), from
  what the table view shows: its own sheet, bonus progress and total, and each opponent's open mask, bonus progress
  and total in seat order after it (every sheet filled: exactly the game's result). A table network may carry a solo
  network of its own (``solo_net_arch``: a ``search:`` solo model, learned from its own solo games): its estimate of
  every sheet's points still to come is then part of the input, so ``V`` reads the race's expected margins.

It sees nothing of a solver: its inputs are the sheets (:func:`features`), and it was trained on its own games
(:mod:`yacht_lab.training.search`). Each decision is the exact expectimax over the rest of the turn, from the rules
alone (the dice's odds and the scoring of :func:`yacht_env.rules.pick_outcome`): a pick is worth its points plus
``V`` of its afterstate (solo) or ``V`` of its afterstate (at a table), and a keep the mean over the re-rolled dice
of the best that follows (:func:`yacht_env.turn_rows.turn_values`' passes). Everything the turn's decisions read
depends only on the turn's *context* (the sheets and totals, fixed for a whole turn), so :class:`TurnPlanner`
computes it once per distinct context of a batch of games: ``V`` once per distinct afterstate of a context (a
category and what it earns), never per roll, then the whole turn's keeps. The agent keeps the last call's contexts,
so a turn costs one plan, not three.

Inference is plain numpy: the network's weights are a ``.npz`` of float32 arrays and a ``.json`` beside it (the
rules, the table size, the layer widths), read through the one bounded reader, :mod:`yacht_agents.archive`. A
``search:PATH`` spec names the ``.npz``, a run folder (its ``model.npz``) or a shipped model (``search:standard``,
``models/search_standard.npz``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np

from yacht_agents.archive import (
    READ_ERRORS,
    Refused,
    npz_model_path,
    open_zip,
    read_arrays,
    read_spec_json,
    shipped_npz,
)
from yacht_agents.base import Agent
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.turn_rows import FIRST_ROLL, KEEP_PROPER, KEPT_ROW, ROLL_ORDER, best_keeps, expected_keeps

FORMAT = "yacht-rl search value 1"
#: The input encodings (:func:`features`): 1 shows the opponents' open masks and totals only; 2 (every new network)
#: adds each opponent's bonus progress and, with a solo network, every sheet's points to come.
FEATURE_VERSIONS = (1, 2)
MAX_PLAYERS = 10
MAX_LAYERS = 8
MAX_LAYER_WIDTH = 2048
#: The most a value network's ``.npz`` may expand to, and its members (two per layer).
MAX_VALUE_BYTES = 64 * 2**20
MAX_VALUE_MEMBERS = 4 * (MAX_LAYERS + 1)  # the network's layers and its solo network's
#: Points in one unit of the network's output (solo) and of its total inputs.
POINTS_SCALE = 100.0
_CHUNK = 1024  # contexts planned together: bounds the (contexts, 252, C) pick arrays to ~30 MB


class ValueSpec(NamedTuple):
    """What a saved value network is (its ``.json``): the rules, the table size (1: solo), the hidden widths, the
    input encoding (:data:`FEATURE_VERSIONS`) and the hidden widths of the solo network it carries (empty: none).
    """

    rules: str
    players: int
    net_arch: tuple[int, ...]
    features: int = 1
    solo_net_arch: tuple[int, ...] = ()

    @property
    def solo_spec(self) -> ValueSpec | None:
        """The spec of the solo network this one carries, if any."""
        return ValueSpec(self.rules, 1, self.solo_net_arch) if self.solo_net_arch else None


def feature_size(rules: R.Rules, players: int, version: int = 1, to_come: bool = False) -> int:
    """The length of :func:`features`' rows."""
    bonus = (rules.upper_bonus > 0) + (rules.yahtzee_bonus > 0)
    own = rules.num_categories + 1 + bonus
    if players == 1:
        return own
    opponent = rules.num_categories + 1 + (bonus + to_come if version > 1 else 0)
    return own + 1 + (version > 1 and to_come) + (players - 1) * opponent


def features(
    rules: R.Rules,
    players: int,
    own: tuple,
    opponents: tuple | None = None,
    version: int = 1,
    to_come=None,
) -> np.ndarray:
    """``(m, feature_size)`` float32: afterstates as the network sees them.

    Args:
        rules: The game.
        players: The table (1: solo).
        own: ``(open_mask, upper, armed, total)``, ``(m,)`` ints each: the mover's sheet after its pick (``total``
            is not read solo: the points to come do not depend on it).
        opponents: At a table, ``(open_masks, uppers, armeds, totals)``, ``(m, P - 1)`` ints each, in seat order after
            the mover.
        version: The encoding (:data:`FEATURE_VERSIONS`): 1 reads the opponents' open masks and totals only.
        to_come: With ``version`` 2, ``(open_mask, upper, armed) -> points to come`` (a solo network's estimate,
            :meth:`ValueNetwork.to_come`), or ``None``.

    Per row: the mover's open boxes, the fraction open, its upper subtotal / threshold and Yahtzee box (rules with
    them); at a table its total / 100 (and its points to come / 100), then per opponent its open boxes and its lead
    (total minus the mover's) / 100, and, version 2, its upper subtotal, Yahtzee box and expected lead (total plus
    points to come, minus the mover's) / 100.
    """
    open_mask, upper, armed, total = (np.asarray(x) for x in own)
    c = rules.num_categories
    bits = R.open_bits(c).astype(np.float32)

    def bonus(upper, armed) -> list:
        parts = []
        if rules.upper_bonus:
            parts.append((upper / rules.upper_bonus_threshold)[..., None])
        if rules.yahtzee_bonus:
            parts.append(np.asarray(armed, dtype=np.float32)[..., None])
        return parts

    parts = [bits[open_mask], (bits[open_mask].sum(axis=1, keepdims=True) / c), *bonus(upper, armed)]
    if players > 1:
        opponent_open, opponent_upper, opponent_armed, opponent_total = (np.asarray(x) for x in opponents)
        parts.append((total / POINTS_SCALE)[:, None])
        expected = None
        if version > 1 and to_come is not None:
            expected = total + to_come(open_mask, upper, armed)
            parts.append((expected - total)[:, None] / POINTS_SCALE)
        for j in range(players - 1):
            parts += [bits[opponent_open[:, j]], ((opponent_total[:, j] - total) / POINTS_SCALE)[:, None]]
            if version > 1:
                parts += bonus(opponent_upper[:, j], opponent_armed[:, j])
                if expected is not None:
                    theirs = opponent_total[:, j] + to_come(opponent_open[:, j], opponent_upper[:, j], opponent_armed[:, j])
                    parts.append(((theirs - expected) / POINTS_SCALE)[:, None])
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts], axis=1)


class ValueNetwork:
    """The network ``V`` in numpy: relu hidden layers, one output (solo: points / :data:`POINTS_SCALE`; at a table:
    a logit, through a sigmoid).

    Args:
        spec: Its :class:`ValueSpec`.
        layers: ``[(w, b), ...]`` float32, ``w`` ``(in, out)``; the last layer's ``out`` is 1.
        solo: The solo network it carries (``spec.solo_net_arch``), or ``None``.
    """

    def __init__(
        self, spec: ValueSpec, layers: list[tuple[np.ndarray, np.ndarray]], solo: ValueNetwork | None = None
    ) -> None:
        self.spec, self.layers, self.solo = spec, layers, solo
        self.rules = R.get_rules(spec.rules)
        if (solo is None) != (not spec.solo_net_arch) or (solo is not None and solo.spec != spec.solo_spec):
            raise ValueError(f"the solo network does not fit the spec {spec}")
        self._to_come: np.ndarray | None = None  # the solo network's points to come by sheet, filled as asked

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``(m,)`` float64: the values of feature rows ``x`` (points solo, a win chance at a table), on one BLAS
        thread, so that a value, and every decision read from it, does not depend on the thread count.
        """
        with _one_blas_thread():
            h = x
            for w, b in self.layers[:-1]:
                h = h @ w
                h += b
                np.maximum(h, 0.0, out=h)
            w, b = self.layers[-1]
            out = (h @ w + b)[:, 0].astype(np.float64)
        if self.spec.players > 1:
            return 1.0 / (1.0 + np.exp(-np.clip(out, -60.0, 60.0)))
        return out * POINTS_SCALE

    def features(self, own: tuple, opponents: tuple | None = None) -> np.ndarray:
        """:func:`features` of afterstates in this network's encoding (its solo network's points to come included)."""
        to_come = self.solo.to_come if self.solo is not None else None
        return features(self.rules, self.spec.players, own, opponents, self.spec.features, to_come)

    def values(self, own: tuple, opponents: tuple | None = None) -> np.ndarray:
        """``(m,)``: ``V`` of afterstates (:func:`features`' arguments)."""
        return self(self.features(own, opponents))

    def to_come(self, open_mask: np.ndarray, upper: np.ndarray, armed: np.ndarray) -> np.ndarray:
        """A solo network's points still to come of sheets (``(m,)`` each; every box filled: 0), each sheet valued
        once and kept: a sheet is ``open_mask`` (``2 ** C``), ``upper`` and ``armed`` (:attr:`Rules.bonus_shape`).
        """
        if self.spec.players != 1:
            raise ValueError("only a solo network values the points to come")
        uppers, armeds = self.rules.bonus_shape
        if self._to_come is None:
            self._to_come = np.full((1 << self.rules.num_categories) * uppers * armeds, np.nan)
        index = (np.asarray(open_mask, dtype=np.intp) * uppers + upper) * armeds + armed
        missing = np.unique(index[np.isnan(self._to_come[index])])
        if len(missing):
            o, rest = np.divmod(missing, uppers * armeds)
            u, a = np.divmod(rest, armeds)
            values = np.zeros(len(missing))
            playing = o != 0
            if playing.any():
                own = (o[playing], u[playing], a[playing], np.zeros(int(playing.sum()), dtype=np.intp))
                values[playing] = self(features(self.rules, 1, own))
            self._to_come[missing] = values
        return self._to_come[index]

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights as named arrays (``w0``, ``b0``, ...; the solo network's ``solo_w0``, ...)."""
        out = {}
        for i, (w, b) in enumerate(self.layers):
            out[f"w{i}"], out[f"b{i}"] = w, b
        if self.solo is not None:
            out.update({f"solo_{k}": v for k, v in self.solo.arrays().items()})
        return out


_BLAS = []


def _one_blas_thread():
    """A context in which numpy's BLAS runs on one thread: a matrix product's sums then run in one order whatever
    the process's thread settings (``OPENBLAS_NUM_THREADS``, ...), so the agent's figures reproduce to the digit.
    """
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


def layer_shapes(spec: ValueSpec) -> list[tuple[int, int]]:
    """``(in, out)`` of each layer of ``spec``'s network."""
    rules = R.get_rules(spec.rules)
    widths = [feature_size(rules, spec.players, spec.features, bool(spec.solo_net_arch)), *spec.net_arch, 1]
    return list(zip(widths[:-1], widths[1:], strict=True))


def save_value(path: str | Path, network: ValueNetwork) -> Path:
    """Writes ``path`` (``.npz``, the weights) and the ``.json`` beside it, each atomically; returns the ``.npz``."""
    from yacht_env.util import atomic_output

    path = Path(path).with_suffix(".npz")
    spec = network.spec
    meta = {"format": FORMAT, "rules": spec.rules, "players": spec.players, "net_arch": list(spec.net_arch)}
    if spec.features > 1:  # version 1 files name no encoding: they stay readable by older releases
        meta.update(features=spec.features, solo_net_arch=list(spec.solo_net_arch))
    with atomic_output(path.with_suffix(".json")) as temp:
        Path(temp).write_text(json.dumps(meta, indent=2) + "\n")
    with atomic_output(path) as temp, open(temp, "wb") as file:
        np.savez(file, **network.arrays())
    return path


def resolve_value(path: str | Path) -> Path:
    """The ``.npz`` a ``search:PATH`` spec names: the file, a run folder's ``model.npz``, or a shipped model's name
    (``standard`` is ``models/search_standard.npz``).

    Raises:
        ValueError: nothing there, or a path that cannot be looked up.
    """
    text = str(path)
    path = shipped_npz(text, "search_") or path
    try:
        path, found = npz_model_path(path)
    except Refused as error:
        raise ValueError(f"no search model at {text!r}: {error}") from None
    if not found:
        raise ValueError(
            f"no search model at {text!r}: expected a .npz file (with its .json), a run folder or a shipped name"
        )
    return path


def load_value(path: str | Path) -> ValueNetwork:
    """The network saved at ``path`` (:func:`resolve_value`): its spec's every field checked, the arrays bounded
    before they are read, their names and shapes the spec's, finite float32 values.

    Raises:
        ValueError: ``cannot read the search model '<path>': <why>``.
    """
    path = resolve_value(path)
    try:
        spec = _read_spec(path.with_suffix(".json"))
        with open_zip(path, what="a search model", max_bytes=MAX_VALUE_BYTES, max_members=MAX_VALUE_MEMBERS) as zf:
            arrays = read_arrays(zf, kinds="f")
        shapes = layer_shapes(spec)
        solo_shapes = layer_shapes(spec.solo_spec) if spec.solo_spec else []
        expected = {
            f"{prefix}{p}{i}": s
            for prefix, layer_list in (("", shapes), ("solo_", solo_shapes))
            for i, (a, b) in enumerate(layer_list)
            for p, s in (("w", (a, b)), ("b", (b,)))
        }
        if set(arrays) != set(expected):
            raise Refused(f"its arrays {sorted(arrays)[:6]} are not the spec's network's {sorted(expected)[:6]}")
        for name, shape in expected.items():
            if arrays[name].shape != shape or not np.isfinite(arrays[name]).all():
                raise Refused(f"its {name!r} is not a finite {shape} array")
    except Refused as error:
        raise ValueError(f"cannot read the search model {str(path)!r}: {error}") from None
    except READ_ERRORS as error:
        detail = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"cannot read the search model {str(path)!r}: not a readable .npz ({detail})") from None
    def layers(prefix: str, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(arrays[f"{prefix}w{i}"].astype(np.float32), arrays[f"{prefix}b{i}"].astype(np.float32)) for i in range(count)]

    solo = ValueNetwork(spec.solo_spec, layers("solo_", len(solo_shapes))) if spec.solo_spec else None
    return ValueNetwork(spec, layers("", len(shapes)), solo)


def _read_spec(path: Path) -> ValueSpec:
    meta = read_spec_json(path, FORMAT)
    required = {"format", "rules", "players", "net_arch"}
    if not (required <= set(meta) <= {*required, "features", "solo_net_arch"}):
        raise Refused(f"its {path.name} is not a {FORMAT!r} file")
    rules, players, arch = meta["rules"], meta["players"], meta["net_arch"]
    version, solo_arch = meta.get("features", 1), meta.get("solo_net_arch", [])
    if not (isinstance(rules, str) and rules in R.PRESETS):
        raise Refused(f"its {path.name}'s rules {json.dumps(rules)[:40]} is not a preset")
    if not (type(players) is int and 1 <= players <= MAX_PLAYERS):
        raise Refused(f"its {path.name}'s players is not an int in 1..{MAX_PLAYERS}")
    if not (
        isinstance(arch, list)
        and 1 <= len(arch) <= MAX_LAYERS
        and all(type(w) is int and 1 <= w <= MAX_LAYER_WIDTH for w in arch)
    ):
        raise Refused(f"its {path.name}'s net_arch is not 1..{MAX_LAYERS} widths of 1..{MAX_LAYER_WIDTH}")
    if not (type(version) is int and version in FEATURE_VERSIONS):
        raise Refused(f"its {path.name}'s features is not one of {list(FEATURE_VERSIONS)}")
    if not (
        isinstance(solo_arch, list)
        and len(solo_arch) <= MAX_LAYERS
        and all(type(w) is int and 1 <= w <= MAX_LAYER_WIDTH for w in solo_arch)
        and (not solo_arch or (players > 1 and version > 1))
    ):
        raise Refused(
            f"its {path.name}'s solo_net_arch is not 0..{MAX_LAYERS} widths of 1..{MAX_LAYER_WIDTH} "
            "(a table network's of features 2)"
        )
    return ValueSpec(rules, players, tuple(arch), version, tuple(solo_arch))


# --------------------------------------------------------------------------------------------------
# The turn: what every decision of a context reads
# --------------------------------------------------------------------------------------------------
class Plan(NamedTuple):
    """A turn's values for ``n`` contexts.

    Fields:
        pick: ``(n, 252, C)``: a pick's value (``-inf`` where it is not legal), by roll and category.
        keep: ``(n, 2, 210)``: a keep's value with 1 or 2 re-rolls left, by kept multiset (``rules.KEPT``).
        start: ``(n,)``: the turn's value before its first roll (what the afterstate before it is worth).
    """

    pick: np.ndarray
    keep: np.ndarray
    start: np.ndarray


class TurnPlanner:
    """The turn's exact expectimax for batches of contexts, from a value of afterstates.

    Args:
        rules, players: The game and the table (1: solo).
        value: A :class:`ValueNetwork` (its ``values(own, opponents) -> (m,)`` float64 is called once per :meth:`plan`).
    """

    def __init__(self, rules: R.Rules, players: int, value) -> None:
        self.rules, self.players, self.value = rules, players, value
        c = rules.num_categories
        self._bits = (1 << np.arange(c)).astype(np.intp)
        tables = R.pick_tables(rules)
        # A pick's outcome and legality depend on the roll only through the category's score and, under the jokers
        # and the Yahtzee bonus, the face of a five of a kind (pick_outcome, legal_picks): a category's rolls fall in
        # classes of one (score, face), each valued once per context from one roll of its own.
        face = R.FIVE_OF_A_KIND_FACE if rules.joker != "none" or rules.yahtzee_bonus else 0 * R.FIVE_OF_A_KIND_FACE
        shape = (R.NUM_ROLLS, c)
        keys = np.stack(
            [np.broadcast_to(np.arange(c), shape), tables.score, np.broadcast_to(face[:, None], shape)], axis=-1
        ).reshape(-1, 3)
        classes, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        self._class_category = classes[:, 0].astype(np.intp)
        self._class_roll = (first // c).astype(np.intp)
        self._class_of = inverse.reshape(shape)
        uppers, armeds = rules.bonus_shape
        self._totals = R.max_total(rules) + 1 if players > 1 else 1
        self._sheet_keys = (1 << c) * uppers * armeds * self._totals  # the distinct sheets

    def _sheet_key(self, sheet: tuple) -> np.ndarray:
        """One integer per sheet ``(open_mask, upper, armed, total)`` (solo the total is left out)."""
        open_mask, upper, armed, total = sheet
        uppers, armeds = self.rules.bonus_shape
        key = (open_mask.astype(np.int64) * uppers + upper) * armeds + armed
        return key * self._totals + total if self._totals > 1 else key

    def plan(self, own: tuple, opponents: tuple | None = None) -> Plan:
        """The turn of each context: ``own`` ``(open_mask, upper, armed, total)`` ``(n,)`` each, at a table
        ``opponents`` ``(open_masks, uppers, armeds, totals)`` ``(n, P - 1)`` each (as :func:`features`).
        """
        n = len(own[0])
        parts = []
        for first in range(0, n, _CHUNK):
            at = slice(first, first + _CHUNK)
            them = None if opponents is None else tuple(np.asarray(x)[at] for x in opponents)
            parts.append(self._plan(tuple(np.asarray(x, dtype=np.intp)[at] for x in own), them))
        if len(parts) == 1:
            return parts[0]
        return Plan(*(np.concatenate(p) for p in zip(*parts, strict=True)))

    def _plan(self, own: tuple, opponents: tuple | None) -> Plan:
        pick = self._picks(own, opponents)
        # The turn, rows (252 rolls, n contexts): V0 the best pick, then keeps with 1 and 2 re-rolls left.
        now = pick.max(axis=2).T[ROLL_ORDER]
        keep1 = expected_keeps(now)
        (best,) = best_keeps([keep1.copy()])
        keep2 = expected_keeps(np.maximum(best, now))
        (best,) = best_keeps([keep2.copy()])
        start = FIRST_ROLL @ np.maximum(best, now)
        keep = np.stack([keep1.T, keep2.T], axis=1)[:, :, KEPT_ROW]  # (n, 2, 210) by KEPT index
        return Plan(pick, keep, start)

    def _picks(self, own: tuple, opponents: tuple | None) -> np.ndarray:
        """The picks' values ``(n, 252, C)``: each legal class of each context scored once by
        :func:`yacht_env.rules.pick_outcome` from its roll, its afterstate valued by :meth:`afterstate_values`, and
        spread to the class's rolls; solo a pick is worth its points plus ``V``, at a table ``V`` alone.
        """
        open_mask, upper, armed, total = own
        category, roll = self._class_category, self._class_roll
        legal = (R.legal_picks(self.rules, roll[None, :], open_mask[:, None]) >> category & 1).astype(bool)
        g, j = np.nonzero(legal)
        points, _, up, arm = R.pick_outcome(self.rules, roll[j], category[j], open_mask[g], upper[g], armed[g])
        after = (open_mask[g] & ~self._bits[category[j]], up, arm, total[g] + points)
        theirs = None if opponents is None else tuple(x[g] for x in opponents)
        values = np.full(legal.shape, -np.inf)
        values[g, j] = self.afterstate_values(after, theirs) + (points if self.players == 1 else 0)
        return values[:, self._class_of]

    def afterstate_values(self, own: tuple, opponents: tuple | None) -> np.ndarray:
        """``V`` of afterstates (:func:`features`' arguments), each distinct one valued once; exact where nothing is
        left to play: solo, every box filled (0); at a table, every sheet filled (the result, ties split).
        """
        own = tuple(np.asarray(x, dtype=np.intp) for x in own)
        table = self.players > 1
        opponents = tuple(np.asarray(x, dtype=np.intp) for x in opponents) if table else ()
        done = own[0] == 0
        if table:
            done &= (opponents[0] == 0).all(axis=1)
        values = np.zeros(len(done))
        if table and done.any():
            values[done] = result(own[3][done], opponents[3][done])
        playing = np.flatnonzero(~done)
        if len(playing):
            # The distinct afterstates: each seat's sheet (solo without its total, which is not read) one integer.
            seats = [self._sheet_key(tuple(x[playing] for x in own))]
            seats += [self._sheet_key(tuple(x[playing, j] for x in opponents)) for j in range(self.players - 1)]
            first, inverse = _distinct(seats, self._sheet_keys)
            at = playing[first]
            mine = tuple(x[at] for x in own)
            values[playing] = self.value.values(mine, tuple(x[at] for x in opponents) if table else None)[inverse]
        return values


def _distinct(keys: list[np.ndarray], radix: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of integer columns ``keys`` (each in ``[0, radix)``): ``(first, inverse)``, the index of
    each distinct row's first occurrence and each row's distinct row, as :func:`numpy.unique` gives them.
    """
    per_word = max(1, int(63 // max(radix - 1, 1).bit_length()))
    words = []
    for start in range(0, len(keys), per_word):
        word = keys[start]
        for key in keys[start + 1 : start + per_word]:
            word = word * radix + key
        words.append(word)
    if len(words) == 1:
        _, first, inverse = np.unique(words[0], return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    order = np.lexsort(words[::-1])
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.any([w[order][1:] != w[order][:-1] for w in words], axis=0)
    inverse = np.empty(len(order), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def result(total: np.ndarray, opponent_total: np.ndarray) -> np.ndarray:
    """The mover's share of the win at a finished table: 1 / (number of leaders) if it leads, else 0."""
    best = np.maximum(total, opponent_total.max(axis=1))
    leaders = (total == best) + (opponent_total == best[:, None]).sum(axis=1)
    return np.where(total == best, 1.0 / np.maximum(leaders, 1), 0.0)


def decide(plan: Plan, index: np.ndarray, roll: np.ndarray, rolls_left: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``(N,)`` actions: the best of ``legal`` ``(N, num_actions)`` under each game's plan (row ``index``); a tie goes
    to the first best action (a keep before a pick: the turn's values are the same either way).
    """
    n, c = len(roll), plan.pick.shape[2]
    values = np.full((n, R.PICK_OFFSET + c), -np.inf)
    values[:, R.PICK_OFFSET :] = plan.pick[index, roll]
    re_roll = np.flatnonzero(rolls_left > 0)
    kept = KEEP_PROPER[roll[re_roll]]  # (m, 32) kept-multiset indices
    values[re_roll, : R.NUM_KEEPS] = plan.keep[index[re_roll, None], rolls_left[re_roll, None] - 1, kept]
    values = np.where(legal, values, -np.inf)
    return values.argmax(axis=1)


class SearchAgent(Agent):
    """Plays the exact expectimax of each turn over a learned value of its end (module docstring).

    Args:
        path: The network's ``.npz``, a run folder, or a shipped name (:func:`resolve_value`); or a
            :class:`ValueNetwork` itself.
        rules: The game; must be the network's.
        name: The agent's name (default ``search:PATH``).

    Attributes:
        table_players: ``None`` for a solo network (it plays its own game at any table), ``P`` for one trained at a
            table of ``P``: it acts on that table's view, at tables of ``P`` only.

    Raises:
        ValueError: an unreadable file, or a network of other rules.
    """

    def __init__(
        self, path: str | Path | ValueNetwork, rules: str | R.Rules = "standard", name: str | None = None
    ) -> None:
        super().__init__(name or f"search:{path}", rules)
        self.network = path if isinstance(path, ValueNetwork) else load_value(path)
        spec = self.network.spec
        if spec.rules != self.rules.name or R.PRESETS.get(spec.rules) != self.rules:
            where = "network" if isinstance(path, ValueNetwork) else repr(str(path))
            raise ValueError(f"the search model {where} plays the {spec.rules!r} rules, not {self.rules.name!r}")
        self.table_players = spec.players if spec.players > 1 else None
        self.view = MultiplayerEncoder(self.rules, spec.players) if spec.players > 1 else None
        self.planner = TurnPlanner(self.rules, spec.players, self.network)
        self._cache: tuple[dict[bytes, int], Plan | None] = ({}, None)

    @classmethod
    def from_network(cls, network: ValueNetwork, rules: str | R.Rules, name: str) -> SearchAgent:
        """The agent of a network in memory (a trainer's current weights)."""
        return cls(network, rules, name)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        if self.view is None:
            state = self.encoder.decode(observations)
            roll, rolls_left, open_mask, upper, armed = (np.asarray(x, dtype=np.intp) for x in state)
            total = np.zeros_like(open_mask)
            context = np.stack([open_mask, upper, armed], axis=1)
        else:
            view = self.view.decode(observations)
            roll, rolls_left, open_mask, upper, armed, total = (np.asarray(x, dtype=np.intp) for x in view[:6])
            theirs = (view.opponent_open, view.opponent_upper, view.opponent_armed, view.opponent_total)
            context = np.concatenate([np.stack([open_mask, upper, armed, total], axis=1), *theirs], axis=1)
        plan, index = self._plans(np.ascontiguousarray(context, dtype=np.intp))
        return decide(plan, index, roll, rolls_left, action_masks)

    def _plans(self, context: np.ndarray) -> tuple[Plan, np.ndarray]:
        """The plan of each distinct context (the last call's kept: the same games' next decision finds them)."""
        unique, inverse = np.unique(context, axis=0, return_inverse=True)
        keys = unique.view(np.dtype((np.void, unique.shape[1] * unique.itemsize))).reshape(-1).tolist()
        old_index, old_plan = self._cache
        found = np.array([old_index.get(key, -1) for key in keys], dtype=np.intp)
        missing = np.flatnonzero(found < 0)
        if len(missing) == len(keys) or old_plan is None:
            plan = self._plan_rows(unique)
        else:
            fresh = self._plan_rows(unique[missing]) if len(missing) else None
            parts = []
            for old, new in zip(old_plan, fresh or (None,) * 3, strict=True):
                array = np.empty((len(keys), *old.shape[1:]))
                array[found >= 0] = old[found[found >= 0]]
                if new is not None:
                    array[missing] = new
                parts.append(array)
            plan = Plan(*parts)
        self._cache = (dict(zip(keys, range(len(keys)), strict=True)), plan)
        return plan, inverse.reshape(-1)

    def _plan_rows(self, rows: np.ndarray) -> Plan:
        own = (rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3] if self.view is not None else np.zeros(len(rows)))
        if self.view is None:
            return self.planner.plan(own)
        k = self.table_players - 1
        return self.planner.plan(own, tuple(rows[:, 4 + i * k : 4 + (i + 1) * k] for i in range(4)))


__all__ = ["FORMAT", "Plan", "SearchAgent", "TurnPlanner", "ValueNetwork", "ValueSpec", "features", "load_value"]
