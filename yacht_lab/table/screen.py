"""The screens of the terminal table of :mod:`yacht_lab.table.terminal`: where the game's lines and score sheet are
shown.

* :class:`SheetView` is what the table shows: the rows of the score sheet and, for a decision, the dice.
* :class:`PlainScreen` writes plain text (piped output, ``NO_COLOR``, no ``rich``); :class:`RichScreen` the same
  with colour and a boxed sheet.

Separate from the game: the game decides what to show (a :class:`SheetView`, a line and its style), a screen
only how; a test or another front end passes its own screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class SheetView:
    """What the table shows: the rows of the score sheet and, for a decision, the dice."""

    names: list[str]
    categories: list[str]
    cells: list[list[str]]  # per category, per player
    potential: list[list[bool]]  # the cell is what the dice would score now
    totals: list[int]
    on_turn: int | None
    title: str
    dice: tuple[int, ...] | None = None
    bonus_rows: list[tuple[str, list[str]]] = field(default_factory=list)  # (label, per player), before the total


class PlainScreen:
    """Plain text on a stream: what ``play.py`` writes when piped, with ``NO_COLOR`` or without ``rich``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def say(self, text: str, style: str | None = None) -> None:
        """Prints a line of text."""
        self.out.write(text + "\n")
        self.out.flush()

    def sheet(self, view: SheetView) -> None:
        """Prints the score sheet."""
        rows = [["#", "category", *view.names]]
        for k, name in enumerate(view.categories):
            rows.append([str(k + 1), name, *view.cells[k]])
        for label, cells in view.bonus_rows:
            rows.append(["", label, *cells])
        rows.append(["", "Total", *map(str, view.totals)])
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
        lines = [f"== {view.title} =="]
        for row in rows:
            cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])]
            cells += [cell.rjust(max(widths[c], 5)) for c, cell in enumerate(row[2:], start=2)]
            lines.append(" ".join(cells).rstrip())
        if view.dice is not None:
            lines.append("dice      " + "  ".join(map(str, view.dice)))
            lines.append("position  " + "  ".join(str(i + 1) for i in range(len(view.dice))))
        self.say("\n".join(lines))


class RichScreen(PlainScreen):
    """The same with colour and a boxed sheet through ``rich`` (a terminal that supports it)."""

    STYLES = {"error": "bold red", "coach": "green", "agent": "yellow", "human": "cyan", "result": "bold"}

    def __init__(self, console) -> None:
        self.console = console

    def say(self, text: str, style: str | None = None) -> None:
        """Prints a line of text, styled."""
        from rich.text import Text

        self.console.print(Text(text, style=self.STYLES.get(style, "") if style else ""))

    def sheet(self, view: SheetView) -> None:
        """Prints the score sheet as a table."""
        from rich import box
        from rich.table import Table
        from rich.text import Text

        self.console.print(Text(view.title, style="bold"))
        table = Table(box=box.SIMPLE_HEAVY)
        table.add_column("#", justify="right", style="dim")
        table.add_column("category")
        for p, name in enumerate(view.names):
            table.add_column(name, justify="right", style="bold cyan" if p == view.on_turn else "")
        for k, name in enumerate(view.categories):
            cells = [
                Text(cell, style="dim italic" if view.potential[k][p] else "") for p, cell in enumerate(view.cells[k])
            ]
            table.add_row(str(k + 1), name, *cells)
        for label, cells in view.bonus_rows:
            table.add_row("", Text(label, style="italic"), *cells)
        table.add_row("", Text("Total", style="bold"), *(Text(str(t), style="bold") for t in view.totals))
        self.console.print(table)
        if view.dice is not None:
            dice = Text("dice      ")
            for d in view.dice:
                dice.append(f" {d} ", style="bold black on white")
                dice.append(" ")
            self.console.print(dice)
            self.console.print(Text("position  " + "".join(f" {i + 1}  " for i in range(len(view.dice))), style="dim"))
