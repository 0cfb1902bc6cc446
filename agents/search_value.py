"""The search agent's value network ``V`` (:mod:`yacht_agents.search`): what it sees, its numpy inference and its
files.

A network ``V`` values the *afterstate* of a turn, the sheets once the pick is made and before anyone rolls again:

* solo, the points still to come (an open mask, the upper subtotal capped at the bonus threshold, whether the
  Yahtzee box holds its points; every box filled: exactly 0);
* at a table of ``P``, the chance that the mover finishes first (a tie among ``m`` leaders counts ``1 / m``), from
  what the table view shows: its own sheet, bonus progress and total, and each opponent's open mask, bonus progress
  and total in seat order after it (every sheet filled: exactly the game's result). A table network may carry a solo
  network of its own (``solo_net_arch``: a ``search:`` solo model, learned from its own solo games): its estimate of
  every sheet's points still to come is then part of the input, so ``V`` reads the race's expected margins. Encoding
  3 also reads *the race*: the mover's chance of finishing first if every seat played that solo network's search to
  the end, their dice independent, from the exact score distributions of that policy (:meth:`ValueNetwork.race`:
  the win agent's model over the agent's own solo play); its logit is ``V``'s starting point, to which the network
  adds what it learned.

A table network with a solo network may also play for its *placing* (``placing``, a weight ``w`` in the ``.json``):
it then picks by ``(1 - w) V + w R``, ``R`` the expected fraction of the opponents it finishes ahead of (ties half) if
every seat played its solo network's search to the end (each opponent's pairwise race; at two seats the race itself),
from the exact score distributions of that play (under the family's rules, :mod:`yacht_env.family_recurrence` over
the solo network's plan of every reachable turn start, :func:`yacht_agents.win_family.FamilyModel.start_chances`).
``V`` is unchanged: the learned chance of finishing first; ``R`` separates the afterstates where that chance is spent,
and at two seats tempers ``V``'s errors with the race's exact model.

It sees nothing of a solver: its inputs are the sheets (:func:`features`) and what its own solo network makes of them.
Inference is plain numpy: the weights are a ``.npz`` of float32 arrays and a ``.json`` beside it (the rules, the table
size, the layer widths, the input encoding, the solo network's widths), read through the one bounded reader,
:mod:`yacht_agents.archive`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np

from yacht_agents.archive import (
    READ_ERRORS,
    Refused,
    open_zip,
    read_arrays,
    read_spec_json,
    resolve_npz,
)
from yacht_agents.search_turn import family_policy, solo_policy_table
from yacht_agents.win_family import FamilyModel
from yacht_agents.win_model import cdf_before, first_seat_chances
from yacht_env import family_recurrence as FR
from yacht_env import rules as R
from yacht_env.family_states import state_ids
from yacht_env.score_recurrence import policy_start_distributions
from yacht_env.util import cache_folder, cache_stem

FORMAT = "yacht-rl search value 1"
#: The input encodings (:func:`features`): 1 shows the opponents' open masks and totals only; 2 adds each opponent's
#: bonus progress and, with a solo network, every sheet's points to come; 3 (a table network with a solo network) adds
#: the race: its chance and its logit, the logit added to the network's output.
FEATURE_VERSIONS = (1, 2, 3)
#: The race's chance is clipped into ``[RACE_CLIP, 1 - RACE_CLIP]`` before its logit (at most 13.8 in size).
RACE_CLIP = 1e-6
MAX_PLAYERS = 10
MAX_LAYERS = 8
MAX_LAYER_WIDTH = 2048
#: The most a value network's ``.npz`` may expand to, and its members (two per layer).
MAX_VALUE_BYTES = 64 * 2**20
MAX_VALUE_MEMBERS = 4 * (MAX_LAYERS + 1)  # the network's layers and its solo network's
#: The solo networks' score distributions made in this process, by the hash of their weights (Yacht's about 13 MB
#: each; the family's memory-mapped files).
_DISTRIBUTIONS: dict[bytes, object] = {}
_DISTRIBUTIONS_LOCK = threading.Lock()
_MAX_DISTRIBUTIONS = 8
#: Points in one unit of the network's output (solo) and of its total inputs.
POINTS_SCALE = 100.0


class ValueSpec(NamedTuple):
    """What a saved value network is (its ``.json``): the rules, the table size (1: solo), the hidden widths, the
    input encoding (:data:`FEATURE_VERSIONS`), the hidden widths of the solo network it carries (empty: none) and the
    weight of the placing in its play (``0 <= placing < 1``; above 0 only for a table network with a solo network).
    """

    rules: str
    players: int
    net_arch: tuple[int, ...]
    features: int = 1
    solo_net_arch: tuple[int, ...] = ()
    placing: float = 0.0

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
    return own + 1 + (version > 1 and to_come) + (players - 1) * opponent + 2 * (version > 2)


def features(
    rules: R.Rules,
    players: int,
    own: tuple,
    opponents: tuple | None = None,
    version: int = 1,
    to_come=None,
    race=None,
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
        to_come: With ``version`` 2 or 3, ``(open_mask, upper, armed) -> points to come`` (a solo network's estimate,
            :meth:`ValueNetwork.to_come`), or ``None``.
        race: With ``version`` 3, ``(open_masks, totals) -> chances`` (``(m, P)`` ints each, the mover first;
            :meth:`ValueNetwork.race`).

    Per row: the mover's open boxes, the fraction open, its upper subtotal / threshold and Yahtzee box (rules with
    them); at a table its total / 100 (and its points to come / 100), then per opponent its open boxes and its lead
    (total minus the mover's) / 100, and, version 2, its upper subtotal, Yahtzee box and expected lead (total plus
    points to come, minus the mover's) / 100; version 3 then the race's chance and its logit.
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
                    theirs = opponent_total[:, j] + to_come(
                        opponent_open[:, j], opponent_upper[:, j], opponent_armed[:, j]
                    )
                    parts.append(((theirs - expected) / POINTS_SCALE)[:, None])
        if version > 2:
            if race is None:
                raise ValueError("encoding 3 reads the race: pass race (a solo network's, ValueNetwork.race)")
            chance = race(
                np.column_stack([open_mask, opponent_open]),
                np.column_stack([total, opponent_total]),
                0.0,
                np.column_stack([upper, opponent_upper]),
                np.column_stack([armed, opponent_armed]),
            )
            chance = np.clip(chance, RACE_CLIP, 1.0 - RACE_CLIP)
            parts += [chance[:, None], np.log(chance / (1.0 - chance))[:, None]]
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts], axis=1)


class ValueNetwork:
    """The network ``V`` in numpy: relu hidden layers, one output (solo: points / :data:`POINTS_SCALE`; at a table:
    a logit, through a sigmoid; encoding 3 adds its input's last column, the race's logit, to it).

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
        if spec.placing and not (0 < spec.placing < 1 and _plays_a_race(spec)):
            raise ValueError(f"placing weighs the race of a table network's solo network, in (0, 1): {spec}")
        self._to_come: np.ndarray | None = None  # the solo network's points to come by sheet, filled as asked
        self._distributions = None  # a solo network's policy's score distributions (the race's), made on first use
        self._race_cdf: np.ndarray | None = None  # and their cumulative sums
        self._family_model: FamilyModel | None = None  # or the family's race over them
        self._exact_layers: list[tuple[np.ndarray, np.ndarray]] | None = None  # float64 copies, made on first use

    def __call__(self, x: np.ndarray, exact: bool = False) -> np.ndarray:
        """``(m,)`` float64: the values of feature rows ``x`` (points solo, a win chance at a table).

        The products run on one BLAS thread. ``exact``: in float64 (the float32 weights exactly), each value then
        rounded to float32, so that a row's value does not depend on the thread count nor on the rows beside it in
        ``x`` (float32 products do, in their last bits: a matrix product's blocking differs with the batch).
        """
        layers = self.layers
        if exact:
            if self._exact_layers is None:
                self._exact_layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in self.layers]
            layers, x = self._exact_layers, np.asarray(x, dtype=np.float64)
        with _one_blas_thread():
            h = x
            for w, b in layers[:-1]:
                h = h @ w
                h += b
                np.maximum(h, 0.0, out=h)
            w, b = layers[-1]
            out = (h @ w + b)[:, 0]
            if self.spec.features > 2:
                out = out + x[:, -1]
        if self.spec.players > 1:
            out = 1.0 / (1.0 + np.exp(-np.clip(out.astype(np.float64), -60.0, 60.0)))
        else:
            out = out.astype(np.float64) * POINTS_SCALE
        return out.astype(np.float32).astype(np.float64) if exact else out

    def features(self, own: tuple, opponents: tuple | None = None) -> np.ndarray:
        """:func:`features` of afterstates in this network's encoding (its solo network's points to come included)."""
        to_come = self.solo.to_come if self.solo is not None else None
        race = self.solo.race if self.solo is not None and self.spec.features > 2 else None
        return features(self.rules, self.spec.players, own, opponents, self.spec.features, to_come, race)

    def values(self, own: tuple, opponents: tuple | None = None, exact: bool = False) -> np.ndarray:
        """``(m,)``: ``V`` of afterstates (:func:`features`' arguments; ``exact`` as :meth:`__call__`), the placing's
        race mixed in by the spec's weight (the module docstring).
        """
        value = self(self.features(own, opponents), exact)
        placing = self.spec.placing
        if placing:
            masks, uppers, armeds, totals = (
                np.column_stack([np.asarray(own[i]), np.asarray(opponents[i])]) for i in range(4)
            )
            value = (1.0 - placing) * value + placing * self.solo.race(masks, totals, 1.0, uppers, armeds)
        return value

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
                values[playing] = self(features(self.rules, 1, own), exact=True)
            self._to_come[missing] = values
        return self._to_come[index]

    def distributions(self):
        """A solo network's exact score distributions under its own search's play: under rules without bonuses
        (:class:`~yacht_env.score_recurrence.StartDistributions`) its whole policy read
        (:func:`yacht_agents.search_turn.solo_policy_table`) and evaluated by the recurrence, a few seconds; under the
        family's (:class:`~yacht_env.family_recurrence.FamilyDistributions`) its plan of every reachable turn start
        (:func:`yacht_agents.search_turn.family_policy`) evaluated by the family's recurrence and kept in files beside
        the solver's cache, named by the weights (Yahtzee: 1.4 GB, some minutes; memory-mapped after). Made once per
        process for each solo network's weights (the last eight kept).
        """
        if self.spec.players != 1:
            raise ValueError("the score distributions are a solo network's")
        if self._distributions is None:
            key = hashlib.sha256(json.dumps(self.rules.as_dict(), sort_keys=True).encode())
            for w, b in self.layers:
                key.update(w.tobytes())
                key.update(b.tobytes())
            key = key.digest()  # the same weights play the same policy: the shipped table models share one
            with _DISTRIBUTIONS_LOCK:
                found = _DISTRIBUTIONS.get(key)
            if found is None:
                if self.rules.has_bonuses:
                    found = _own_family_distributions(self, key)
                else:
                    found = policy_start_distributions(self.rules, solo_policy_table(self))
                with _DISTRIBUTIONS_LOCK:
                    _DISTRIBUTIONS[key] = found
                    while len(_DISTRIBUTIONS) > _MAX_DISTRIBUTIONS:
                        _DISTRIBUTIONS.pop(next(iter(_DISTRIBUTIONS)))
            self._distributions = found
        return self._distributions

    def race(
        self, open_masks: np.ndarray, totals: np.ndarray, placing: float = 0.0, uppers=None, armeds=None
    ) -> np.ndarray:
        """``(m,)``: the first seat's chance of finishing first (ties split) at tables of turn starts, ``open_masks``
        and ``totals`` ``(m, P)`` ints each (under the family's rules ``uppers`` and ``armeds`` too), if every seat
        plays this solo network's search to the end, the dice independent
        (:func:`yacht_agents.win_model.first_seat_chances` over :meth:`distributions`, under the family's rules
        :meth:`yacht_agents.win_family.FamilyModel.start_chances`; ``placing`` as there: 1, the expected fraction of
        the opponents finished ahead of).
        """
        if self.rules.has_bonuses:
            if self._family_model is None:
                self._family_model = FamilyModel(self.distributions())
            rows = self.distributions().rows(open_masks, uppers, armeds)
            return self._family_model.start_chances(rows, totals, placing)
        if self._race_cdf is None:
            self._race_cdf = cdf_before(self.distributions())
        return first_seat_chances(self.distributions(), open_masks, totals, self._race_cdf, placing)

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights as named arrays (``w0``, ``b0``, ...; the solo network's ``solo_w0``, ...)."""
        out = {}
        for i, (w, b) in enumerate(self.layers):
            out[f"w{i}"], out[f"b{i}"] = w, b
        if self.solo is not None:
            out.update({f"solo_{k}": v for k, v in self.solo.arrays().items()})
        return out


@functools.cache
def _blas() -> object:
    """The controller (threadpoolctl's) of the BLAS libraries numpy loaded."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread():
    """A context in which numpy's BLAS runs on one thread: a matrix product's sums then run in one order whatever
    the process's thread settings (``OPENBLAS_NUM_THREADS``, ...), so the agent's figures reproduce to the digit.
    """
    return _blas().limit(limits=1, user_api="blas")


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
    if spec.placing:
        meta.update(placing=spec.placing)
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
    return resolve_npz(path, "search", "search model")


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
        with np.errstate(over="ignore", invalid="ignore"):  # a float64 1e300 is inf as float32: refused below
            arrays = {name: array.astype(np.float32) for name, array in arrays.items()}
        for name, shape in expected.items():
            if arrays[name].shape != shape or not np.isfinite(arrays[name]).all():
                raise Refused(f"its {name!r} is not a finite {shape} float32 array")

        def layers(prefix: str, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
            return [(arrays[f"{prefix}w{i}"], arrays[f"{prefix}b{i}"]) for i in range(count)]

        solo = ValueNetwork(spec.solo_spec, layers("solo_", len(solo_shapes))) if spec.solo_spec else None
        network = ValueNetwork(spec, layers("", len(shapes)), solo)
        for checked in (network, solo):
            if checked is not None:
                _probe(checked)
    except Refused as error:
        raise ValueError(f"cannot read the search model {str(path)!r}: {error}") from None
    except READ_ERRORS as error:
        detail = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"cannot read the search model {str(path)!r}: not a readable .npz ({detail})") from None
    return network


#: Inputs of the probe every loaded network is run on: features lie in [0, 1], totals and leads (in units of
#: :data:`POINTS_SCALE`) within +-16.
_PROBE_RANGE = 16.0


def _probe(network: ValueNetwork) -> None:
    """Refuses weights, finite each, that overflow float32 on the way through: on a probe batch (zeros, ones, and
    seeded rows in +-:data:`_PROBE_RANGE`) every layer's output and the network's value must be finite.
    """
    layers = network.layers
    width = layers[0][0].shape[0]
    rows = np.random.default_rng(0).uniform(-_PROBE_RANGE, _PROBE_RANGE, (62, width))
    h = np.concatenate([np.zeros((1, width)), np.ones((1, width)), rows]).astype(np.float32)
    x = h
    with np.errstate(over="ignore", invalid="ignore"):
        for i, (w, b) in enumerate(layers):
            h = h @ w + b
            if not np.isfinite(h).all():
                raise Refused(f"its layer {i} overflows float32 on a probe of inputs within +-{_PROBE_RANGE:g}")
            if i < len(layers) - 1:
                h = np.maximum(h, 0.0)
        if not np.isfinite(network(x)).all():
            raise Refused("its value is not finite on a probe of inputs")


def _read_spec(path: Path) -> ValueSpec:
    meta = read_spec_json(path, FORMAT)
    required = {"format", "rules", "players", "net_arch"}
    if not (required <= set(meta) <= {*required, "features", "solo_net_arch", "placing"}):
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
    if version > 2 and not solo_arch:
        raise Refused(f"its {path.name}'s features 3 (the race) needs a solo network")
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
    placing = meta.get("placing", 0.0)
    if not (type(placing) in (int, float) and 0 <= placing < 1):
        raise Refused(f"its {path.name}'s placing is not a number in [0, 1)")
    spec = ValueSpec(rules, players, tuple(arch), version, tuple(solo_arch), float(placing))
    if placing and not _plays_a_race(spec):
        raise Refused(f"its {path.name}'s placing weighs the race of a table network's solo network")
    return spec


def _plays_a_race(spec: ValueSpec) -> bool:
    """Whether a network of ``spec`` has a race to play for its placing: at a table, with a solo network."""
    return spec.players > 1 and bool(spec.solo_net_arch)


def _own_family_distributions(network: ValueNetwork, digest: bytes):
    """The family's distributions of a solo network's own play (:meth:`ValueNetwork.distributions`): the verified
    files ``<name>-search-dist-<key prefix>.npz`` (and its ``.cdf`` and ``.policy``) beside the solver's cache, the
    key the weights' digest, else built into them.
    """
    rules = network.rules
    key = hashlib.sha256(digest + f"family {FR.FAMILY_DISTRIBUTION_FORMAT_VERSION}".encode()).hexdigest()
    path = cache_folder() / f"{cache_stem(rules.name)}-search-dist-{key[:16]}.npz"
    states = np.flatnonzero(state_ids(rules).ravel() >= 0)
    return FR.cached(path, key, rules, functools.partial(family_policy, network, states))


__all__ = [
    "FEATURE_VERSIONS",
    "FORMAT",
    "POINTS_SCALE",
    "RACE_CLIP",
    "ValueNetwork",
    "ValueSpec",
    "feature_size",
    "features",
    "layer_shapes",
    "load_value",
    "resolve_value",
    "save_value",
]
