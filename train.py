"""Train a policy for Yacht: ``python train.py ARGS`` is ``yacht-train ARGS`` (:mod:`yacht_lab.scripts.train`)."""

from yacht_lab.scripts import script

parse_args, main = script("train", __file__)

if __name__ == "__main__":
    raise SystemExit(main())
