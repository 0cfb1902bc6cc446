"""Benchmark Yacht agents: ``python evaluate.py ARGS`` is ``yacht-evaluate ARGS``
(:mod:`yacht_lab.scripts.evaluate`)."""

from yacht_lab.scripts import script

parse_args, main = script("evaluate", __file__)

if __name__ == "__main__":
    raise SystemExit(main())
