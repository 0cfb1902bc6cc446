"""The command-line programs: ``yacht-train``, ``yacht-evaluate``, ``yacht-play``, ``yacht-sweep`` and ``yacht-web``.

Each program here has ``parse_args(argv, prog=None)`` and ``main(argv=None, prog=None) -> exit status``; the console
commands (``[project.scripts]``), ``python -m yacht_lab <command>`` and the repository's ``train.py``,
``evaluate.py``, ``play.py``, ``sweep.py`` and ``web.py`` (each :func:`script`) all run ``main``; :mod:`.cli` holds
what they share. Only the standard library is imported at the top of these modules: the project (numpy, torch) is
imported inside ``main``, where Ctrl-C during the imports ends in one line, not a traceback.

Messages name the program as it was started (:func:`program_name`): ``yacht-train: error: ...`` from the console
command, ``train.py: error: ...`` from the repository's script, ``python -m yacht_lab train: error: ...`` from
``python -m yacht_lab train``.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any


def program_name(command: str, prog: str | None = None) -> str:
    """``prog`` if given, else how this process was started: the name of ``sys.argv[0]`` (``yacht-train`` for the
    console command, ``train.py`` for the script), or ``command`` when that says nothing (``-c``, an
    interpreter's ``__main__.py``, an empty ``argv``).
    """
    if prog:
        return prog
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return command if name in ("", "-c", "-m", "__main__.py") else name


def rerun_command(prog: str) -> str:
    """The command line that runs ``prog`` again: ``python sweep.py`` for a script, else ``prog`` itself."""
    return f"python {prog}" if prog.endswith(".py") else prog


def script(command: str, path: str) -> tuple[Callable[..., Any], Callable[..., int]]:
    """The ``parse_args`` and ``main`` of a repository script (``train.py`` runs ``script("train", __file__)``):
    the program :mod:`yacht_lab.scripts.<command>`'s, with messages naming the script's file (``train.py: error:
    ...``). Only the standard library is imported: the project loads inside ``main()``.
    """
    program = importlib.import_module(f"{__name__}.{command}")
    prog = os.path.basename(path)
    return functools.partial(program.parse_args, prog=prog), functools.partial(program.main, prog=prog)
