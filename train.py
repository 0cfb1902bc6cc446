"""Train MaskablePPO on Yacht: ``python train.py ARGS`` is ``yacht-train ARGS``, with messages naming ``train.py``.

The program is :mod:`yacht_lab.scripts.train` (``python train.py --help``).
"""

import os
import sys

from yacht_lab.scripts import train as _script  # the standard library only: the project loads inside main()

PROG = os.path.basename(__file__)


def parse_args(argv=None):
    return _script.parse_args(argv, prog=PROG)


def main(argv=None):
    return _script.main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
