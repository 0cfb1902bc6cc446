"""The commands a person types at the terminal table of :mod:`yacht_lab.table.terminal`, and actions put back into
words.

* :func:`parse_command` reads what a person types (``keep 4 4 6``, ``k 245``, ``roll``, ``s fh``, ``help``,
  ``quit``) into a :class:`Command`; :func:`resolve` turns a command into the env's action for the dice showing
  (a keep by faces or by positions becomes the canonical keep-mask of that multiset, the env's legality).
  Both raise :class:`CommandError` with a one-line explanation.
* :func:`match_category` and :func:`display_name`: the category names a person may type and the ones shown.
* :func:`describe` and :func:`command_for` go the other way: an action in words (a pick's points as
  :func:`pick_words` says them, jokers and bonuses included), and a command that plays it; :func:`dice_text` and
  :func:`kept_dice` write the dice. :func:`help_text` is the ``help`` of a preset's sheet.

Separate from the game (:mod:`yacht_lab.table.terminal`) and its screens (:mod:`yacht_lab.table.screen`): reading and
writing commands is text and the rules only, usable and testable without a game, a solver or a terminal.

The sheet numbers the categories 1..N as shown (``s 7`` is Full House on Yacht's sheet, ``s 9`` on Yahtzee's).
Every preset's sheet is read the same way; a name a person types is matched only against the boxes of the sheet
played, so ``yahtzee`` names Yacht's ``yacht`` box on Yacht's sheet and the ``yahtzee`` box on Yahtzee's, and
``ls`` is Yacht's Little Straight but Yahtzee's Large Straight.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from yacht_env import rules as R

# --------------------------------------------------------------------------------------------------
# Category names
# --------------------------------------------------------------------------------------------------
#: Extra names a person may type for each category (besides its display name and its rules name). Only the boxes of
#: the sheet played are matched, so two boxes that are never on one sheet may share a name (``ls``, ``yahtzee``).
ALIASES: dict[str, tuple[str, ...]] = {
    "ones": ("1s", "aces", "one"),
    "twos": ("2s", "two"),
    "threes": ("3s", "three"),
    "fours": ("4s", "four"),
    "fives": ("5s", "five"),
    "sixes": ("6s", "six"),
    "full_house": ("fh", "full"),
    "four_of_a_kind": ("4k", "4oak", "4 of a kind", "quads"),
    "little_straight": ("ls", "ss", "small straight", "sm straight"),
    "big_straight": ("bs", "large straight", "lg straight"),
    "choice": ("chance",),
    "yacht": ("yahtzee", "yatzy"),
    "three_of_a_kind": ("3k", "3oak", "3 of a kind", "trips"),
    # The family's boxes (Yahtzee, Scandinavian Yatzy).
    "one_pair": ("1p", "pair"),
    "two_pairs": ("2p", "two pair"),
    "small_straight": ("ss", "sm straight", "little straight"),
    "large_straight": ("ls", "lg straight", "bs", "big straight"),
    "chance": ("choice",),
    "yahtzee": ("yacht", "yatzy"),
    "yatzy": ("yahtzee", "yacht"),
}
_SMALL_WORDS = {"of", "a"}


def display_name(category: str) -> str:
    """``"four_of_a_kind"`` -> ``"Four of a Kind"``."""
    words = category.split("_")
    return " ".join(w if i and w in _SMALL_WORDS else w.capitalize() for i, w in enumerate(words))


#: The longest line read as a command (past any terminal's line, 4,096): a longer one is refused whole, so a reader
#: need keep no more of a line than this and its end (``yacht-play`` reads no more of one from a pipe).
MAX_LINE = 8192

#: Numbers a person types are read only up to this many digits: longer ones are out of every range here (and
#: ``int`` refuses more than 4,300 digits).
_MAX_DIGITS = 6


def _is_number(word: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts superscripts (``²``, a key of AZERTY keyboards) that
    ``int`` cannot read.
    """
    return word.isascii() and word.isdigit()


def _small_int(word: str) -> int | None:
    """The value of ASCII digits ``word`` (leading zeros allowed), or ``None`` past :data:`_MAX_DIGITS` digits."""
    digits = word.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_DIGITS else None


def _shown(text: str, limit: int = 20) -> str:
    """``text`` as a message shows it: cut to ``limit`` characters (a 5,000-digit number is not echoed whole)."""
    return text if len(text) <= limit else text[:limit] + "..."


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


def match_category(text: str, categories: Sequence[str] = R.CATEGORIES) -> int:
    """The index of the category ``text`` names: its number in the sheet (1-based), its name, a common name
    (``fh``, ``4k``, ``ls``, ``small straight``, ``yahtzee``, ``chance``, ``1s``, ...) or an unambiguous prefix.

    Raises:
        CommandError: no such category, or a prefix of several (named in the message).
    """
    text = text.strip()
    if not text:
        raise CommandError("score which category? e.g. s fh, s 7, score full house")
    if _is_number(text):
        number = _small_int(text)
        if number is not None and 1 <= number <= len(categories):
            return number - 1
        shown = number if number is not None else _shown(text)
        raise CommandError(f"there is no category {shown}: the sheet numbers them 1..{len(categories)}")
    key = _key(text)
    names = [
        {_key(name), _key(display_name(name)), *(_key(alias) for alias in ALIASES.get(name, ()))} for name in categories
    ]
    exact = [k for k, keys in enumerate(names) if key in keys]
    if len(exact) == 1:
        return exact[0]
    found = [k for k, keys in enumerate(names) if any(n.startswith(key) for n in keys)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise CommandError(
            f"unknown category {_shown(text, 40)!r}: type its number in the sheet or its name (help lists them)"
        )
    listed = [display_name(categories[k]) for k in found]
    raise CommandError(f"{text!r} could be {', '.join(listed[:-1])} or {listed[-1]}: type more of the name")


# --------------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------------
#: How the terminal says the moves a message may suggest (``CommandError.suggest``).
SUGGESTIONS = {"score": "s <category>"}


class CommandError(ValueError):
    """A command that cannot be played; the message is one line that says why.

    Args:
        reason: Why, in words that hold at any face of the table.
        suggest: The move to make instead (``"score"``), which the terminal puts as its command after the reason
            (:data:`SUGGESTIONS`) and another face in its own words; ``None``: none.
    """

    def __init__(self, reason: str, suggest: str | None = None) -> None:
        self.reason, self.suggest = reason, suggest
        super().__init__(reason if suggest is None else f"{reason} ({SUGGESTIONS[suggest]})")


@dataclass(frozen=True)
class Command:
    """What a person typed: ``kind`` is ``"keep"``, ``"score"``, ``"help"`` or ``"quit"``.

    A keep has ``faces`` (the values to keep) or ``positions`` (1..5 under the sorted dice); ``roll`` is a keep
    of nothing. A score has ``category`` (its index).
    """

    kind: str
    faces: tuple[int, ...] | None = None
    positions: tuple[int, ...] | None = None
    category: int | None = None


_HELP = """\
commands:
  keep 4 4 6     keep the dice showing these faces, re-roll the others (also: k 4 4 6)
  k 245          keep the dice at these positions (1..5, the numbers under the dice, written together)
  roll           re-roll all five dice (also: r)
  score fh       score the dice in a category: its number in the sheet (s 7), its name (score full house),
                 a common name ({common}, 1s..6s)
                 or the start of its name (s ful); also: s
  help           this text (also: h, ?)
  quit           leave the game (also: q; Ctrl-D too)
the sheet: filled scores; (n) beside an open category of the player on turn is what the dice would score there
now; - is an open category. Keeping all five dice is not a move: score instead."""
#: The common names :func:`help_text` lists, in this order, for the boxes of the sheet played.
_COMMON_NAMES = {
    "one_pair": "1p",
    "two_pairs": "2p",
    "full_house": "fh",
    "three_of_a_kind": "3k",
    "four_of_a_kind": "4k",
    "little_straight": "ls/small straight",
    "big_straight": "bs/large straight",
    "small_straight": "ss/small straight",
    "large_straight": "ls/large straight",
    "yacht": "yacht/yahtzee",
    "yahtzee": "yahtzee",
    "yatzy": "yatzy",
    "choice": "chance",
    "chance": "chance",
}


def help_text(rules: R.Rules = R.PRESETS["standard"]) -> str:
    """The ``help`` text of a preset's sheet: the common names of its boxes and, for the family's sheets, what the
    bonus rows count and how the joker plays.
    """
    lines = [_HELP.format(common=", ".join(short for name, short in _COMMON_NAMES.items() if name in rules.categories))]
    if rules.upper_bonus:
        threshold = rules.upper_bonus_threshold
        lines.append(
            f"Upper Bonus: {rules.upper_bonus} once Ones..Sixes total {threshold}; the sheet shows the subtotal "
            f"(45/{threshold}), then the bonus ({rules.upper_bonus} or 0)."
        )
    box = "" if rules.five_of_a_kind_category is None else display_name(rules.categories[rules.five_of_a_kind_category])
    if rules.yahtzee_bonus:
        lines.append(
            f"{box} Bonus: {rules.yahtzee_bonus} for each extra five of a kind once {box} holds {rules.yacht}; the "
            f"sheet shows the points so far."
        )
    if rules.joker == "free":
        lines.append(
            f"Joker: five of a kind scores Full House and the straights in full once {box} and its upper box "
            f"are filled."
        )
    elif rules.joker == "forced":
        lines.append(
            f"Joker: once {box} is filled, five of a kind goes in its face's upper box if open, else outside the "
            f"upper\nsection if a box is open there, else anywhere; Full House and the straights then score in full."
        )
    return "\n".join(lines)


#: The ``help`` text of Yacht's sheet.
HELP = help_text()

_KEEP_WORDS = ("keep", "k", "hold")
_ROLL_WORDS = ("roll", "r", "reroll", "re-roll")
_SCORE_WORDS = ("score", "s")
_HELP_WORDS = ("help", "h", "?")
_QUIT_WORDS = ("quit", "q", "exit")


def parse_command(text: str, categories: Sequence[str] = R.CATEGORIES) -> Command:
    """Reads one line typed by a person (see :data:`HELP`); case and extra spaces do not matter.

    Faces are separated (``keep 4 4 6``, commas allowed); positions are written together (``k 245``), so one
    digit is a face (``k 6`` keeps one 6).

    Raises:
        CommandError: the line is not a command, or its arguments cannot be read.
    """
    if len(text) > MAX_LINE:
        raise CommandError(f"a command is at most {MAX_LINE} characters: this line is longer")
    words = text.strip().lower().replace(",", " ").split()
    if not words:
        raise CommandError("type a command (help lists them)")
    head, rest = words[0], words[1:]
    if head in _HELP_WORDS and not rest:
        return Command("help")
    if head in _QUIT_WORDS and not rest:
        return Command("quit")
    if head in _ROLL_WORDS:
        if rest:
            raise CommandError(f"{head} re-rolls all five dice and takes nothing more; to keep some: keep 4 4 6")
        return Command("keep", faces=())
    if head in _SCORE_WORDS:
        return Command("score", category=match_category(" ".join(rest), categories))
    if head in _KEEP_WORDS:
        return _parse_keep(head, rest)
    raise CommandError(f"unknown command {_shown(text.strip(), 40)!r}: type help for the commands")


def _parse_keep(head: str, rest: list[str]) -> Command:
    if not rest:
        raise CommandError("keep which dice? e.g. keep 4 4 6 (faces) or k 245 (positions); roll re-rolls all five")
    if len(rest) == 1 and len(rest[0]) > 1 and _is_number(rest[0]):
        positions = tuple(int(c) for c in rest[0])
        if any(not 1 <= p <= R.NUM_DICE for p in positions) or len(set(positions)) != len(positions):
            spaced = " ".join(rest[0])
            raise CommandError(
                f"{head} {_shown(rest[0])}: positions are 1..5, each once "
                f"(to keep by faces, separate them: {head} {_shown(spaced)})"
            )
        return Command("keep", positions=tuple(sorted(positions)))
    if not all(_is_number(w) for w in rest):
        raise CommandError(f"{head} takes faces (keep 4 4 6) or positions (k 245), got {_shown(' '.join(rest), 40)!r}")
    bad = [w for w in rest if _small_int(w) is None or not 1 <= _small_int(w) <= R.NUM_FACES]
    if bad:
        shown = _small_int(bad[0]) if _small_int(bad[0]) is not None else _shown(bad[0])
        raise CommandError(f"{shown} is not a face of a die (1..6)")
    faces = tuple(int(w) for w in rest)
    if len(faces) > R.NUM_DICE:
        raise CommandError(f"there are only five dice; got {len(faces)} faces to keep")
    return Command("keep", faces=tuple(sorted(faces)))


def dice_text(dice: Sequence[int]) -> str:
    """The five dice as text, e.g. ``1 3 3 5 6``."""
    return " ".join(str(int(d)) for d in dice)


def _count_words(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four"}.get(n, str(n))


def resolve(command: Command, roll: int, rolls_left: int, open_mask: int, sheet: Sequence[int], rules: R.Rules) -> int:
    """The env's action for a keep or score ``command`` in a state (the canonical keep-mask of a keep).

    Raises:
        CommandError: no re-rolls left for a keep, dice that are not showing, keeping all five, a filled category,
            an open one the forced joker's placement rules out (:func:`yacht_env.rules.legal_picks`).
    """
    dice = R.ROLLS[roll]
    if command.kind == "score":
        k = command.category
        if not open_mask >> k & 1:
            raise CommandError(
                f"{display_name(rules.categories[k])} is already filled ({int(sheet[k])}): choose an open category"
            )
        legal = R.legal_picks(rules, roll, open_mask)
        if not legal >> k & 1:
            allowed = [display_name(name) for j, name in enumerate(rules.categories) if legal >> j & 1]
            raise CommandError(
                f"the joker rules out {display_name(rules.categories[k])}: an extra five of a kind goes in its face's "
                f"upper box if open, else in an open box outside the upper section (here: {_or_list(allowed)})"
            )
        return R.PICK_OFFSET + k
    if command.kind != "keep":
        raise ValueError(f"not a move: {command!r}")
    if rolls_left == 0:
        raise CommandError("no re-rolls left this turn: score the dice", suggest="score")
    if command.positions is not None:
        mask = sum(1 << (p - 1) for p in command.positions)
    else:
        mask, used = 0, set()
        for face in command.faces:
            free = [i for i in range(R.NUM_DICE) if dice[i] == face and i not in used]
            if not free:
                have = int((dice == face).sum())
                what = f"no {face}" if have == 0 else f"only {_count_words(have)} {face}{'s' if have > 1 else ''}"
                raise CommandError(f"you have {what} to keep (the dice: {dice_text(dice)})")
            used.add(free[0])
            mask |= 1 << free[0]
    if mask == R.KEEP_ALL:
        raise CommandError("keeping all five dice re-rolls nothing: score instead", suggest="score")
    return int(np.flatnonzero(R.KEEP[roll] == R.KEEP[roll, mask])[0])  # the canonical mask of that multiset


def _or_list(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def kept_dice(roll: int, action: int) -> np.ndarray:
    """The faces keep-mask ``action`` keeps of sorted roll ``roll``."""
    return R.ROLLS[roll][R.KEEP_BITS[action]]


def pick_words(k: int, roll: int, rules: R.Rules, open_mask: int | None = None, upper: int = 0, armed: int = 0) -> str:
    """A pick in words: ``Yacht for 50``. Given the state (``open_mask``, and the family's ``upper`` and ``armed``),
    what it earns under the family's rules (:func:`yacht_env.rules.pick_outcome`): a joker's full points and any bonus
    the pick earns, ``Sixes for 24 + 35 upper bonus``, ``Full House for 25 + 100 Yahtzee bonus``.
    """
    name = display_name(rules.categories[k])
    if open_mask is None or not rules.has_bonuses:
        return f"{name} for {int(R.score_table(rules)[roll, k])}"
    points, box, new_upper, _ = R.pick_outcome(rules, roll, k, open_mask, upper, armed)
    words = f"{name} for {box}"
    upper_bonus = rules.upper_bonus if upper < rules.upper_bonus_threshold <= new_upper else 0
    if upper_bonus:
        words += f" + {upper_bonus} upper bonus"
    if points - box - upper_bonus:
        five = display_name(rules.categories[rules.five_of_a_kind_category])
        words += f" + {points - box - upper_bonus} {five} bonus"
    return words


def describe(
    action: int, roll: int, rules: R.Rules, open_mask: int | None = None, upper: int = 0, armed: int = 0
) -> str:
    """An action in words: ``keep 4 4``, ``re-roll all five``, ``score Yacht for 50`` (a pick as :func:`pick_words`
    says it, with the state where it is given).
    """
    if action >= R.PICK_OFFSET:
        return "score " + pick_words(action - R.PICK_OFFSET, roll, rules, open_mask, upper, armed)
    if action == 0:
        return "re-roll all five"
    return f"keep {dice_text(kept_dice(roll, action))}"


def command_for(action: int, roll: int) -> str:
    """A command that plays ``action`` in sorted roll ``roll``: ``r``, ``k 245`` (positions), ``k 6`` (one die,
    by its face) or ``s 7``; :func:`resolve` maps it back to ``action`` when ``action`` is canonical.
    """
    if action >= R.PICK_OFFSET:
        return f"s {action - R.PICK_OFFSET + 1}"
    if action == 0:
        return "r"
    positions = [i + 1 for i in range(R.NUM_DICE) if action >> i & 1]
    if len(positions) == 1:
        return f"k {int(R.ROLLS[roll][positions[0] - 1])}"
    return "k " + "".join(map(str, positions))
