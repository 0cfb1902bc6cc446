"""Serve the browser table: ``python web.py ARGS`` is ``yacht-web ARGS`` (:mod:`yacht_lab.scripts.web`)."""

from yacht_lab.scripts import script

parse_args, main = script("web", __file__)

if __name__ == "__main__":
    raise SystemExit(main())
