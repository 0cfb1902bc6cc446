"""Serve the browser table: ``python web.py ARGS`` is ``yacht-web ARGS``, with messages naming ``web.py``.

The program is :mod:`yacht_lab.scripts.web` (``python web.py --help``).
"""

import os
import sys

from yacht_lab.scripts import web as _script  # the standard library only: the project loads inside main()

PROG = os.path.basename(__file__)


def parse_args(argv=None):
    return _script.parse_args(argv, prog=PROG)


def main(argv=None):
    return _script.main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
