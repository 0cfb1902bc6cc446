"""The Stable-Baselines3 trainers (the ``train`` extra): MaskablePPO and the policy-iteration distillation.

:mod:`~yacht_lab.training.sb3.ppo` trains MaskablePPO solo or at tables (:mod:`~yacht_lab.training.sb3.tasks`, with
a league: :mod:`~yacht_lab.training.sb3.league`), its model built by :mod:`~yacht_lab.training.sb3.model` (a warm
start: :mod:`~yacht_lab.training.sb3.warm_start`) and watched by :mod:`~yacht_lab.training.sb3.callbacks`;
:mod:`~yacht_lab.training.sb3.distill` distils the win agent's moves into a model. It imports the training
folder's shared modules and :mod:`yacht_lab.measure`, never the JAX family.
"""
