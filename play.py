"""Play Yacht in the terminal: ``python play.py ARGS`` is ``yacht-play ARGS`` (:mod:`yacht_lab.scripts.play`)."""

from yacht_lab.scripts import script

parse_args, main = script("play", __file__)

if __name__ == "__main__":
    raise SystemExit(main())
