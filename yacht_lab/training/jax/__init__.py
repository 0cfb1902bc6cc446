"""PPO on the JAX core (the ``jax`` extra): :mod:`~yacht_lab.training.jax.ppo` is the trainer, many seeds in one
``vmap``; :mod:`~yacht_lab.training.jax.init` its starting parameters, :mod:`~yacht_lab.training.jax.rollouts` the
games it plays (solo and at tables), :mod:`~yacht_lab.training.jax.learner` the network and its update,
:mod:`~yacht_lab.training.jax.report` the seeds' curves and the chosen seed. It imports neither torch nor
Stable-Baselines3, and nothing of the SB3 family.
"""
