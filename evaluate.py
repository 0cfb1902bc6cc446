"""Benchmark Yacht agents: ``python evaluate.py ARGS`` is ``yacht-evaluate ARGS``, with messages naming ``evaluate.py``.

The program is :mod:`yacht_lab.scripts.evaluate` (``python evaluate.py --help``).
"""

import os
import sys

from yacht_lab.scripts import evaluate as _script  # the standard library only: the project loads inside main()

PROG = os.path.basename(__file__)


def parse_args(argv=None):
    return _script.parse_args(argv, prog=PROG)


def main(argv=None):
    return _script.main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
