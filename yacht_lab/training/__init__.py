"""Training: which trainer runs a config, the config and its schema, the run context and run folders, and one folder
per trainer family.

- :mod:`~yacht_lab.training.trainers`: :func:`~yacht_lab.training.trainers.train` (``yacht_lab.train``) chooses a
  config's trainer; :mod:`~yacht_lab.training.config` and :mod:`~yacht_lab.training.schema` read and check configs;
  :mod:`~yacht_lab.training.run_context` and :mod:`~yacht_lab.training.runs` own a run folder (its lock, files,
  checkpoints, curves, Ctrl-C and ``--resume``) for every trainer.
- :mod:`yacht_lab.training.sb3`: Stable-Baselines3's MaskablePPO (solo, at tables, with a league) and the
  policy-iteration distillation (the ``train`` extra).
- :mod:`yacht_lab.training.jax`: PPO on the JAX core, many seeds in one ``vmap`` (the ``jax`` extra).

It may import :mod:`yacht_lab.measure` (a curve evaluates the live model), :mod:`yacht_lab.table` and the shared
modules at the lab's top; never :mod:`yacht_lab.sweep`. A family never imports another family. Importing this
package imports nothing but the standard library.
"""
