"""Play Yacht in the terminal: ``python play.py ARGS`` is ``yacht-play ARGS``, with messages naming ``play.py``.

The program is :mod:`yacht_lab.scripts.play` (``python play.py --help``).
"""

import os
import sys

from yacht_lab.scripts import play as _script  # the standard library only: the project loads inside main()

PROG = os.path.basename(__file__)


def parse_args(argv=None):
    return _script.parse_args(argv, prog=PROG)


def main(argv=None):
    return _script.main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
