"""Seed and hyperparameter sweeps: ``python sweep.py ARGS`` is ``yacht-sweep ARGS`` (:mod:`yacht_lab.scripts.sweep`)."""

from yacht_lab.scripts import script

parse_args, main = script("sweep", __file__)

if __name__ == "__main__":
    raise SystemExit(main())
