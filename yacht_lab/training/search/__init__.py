"""A learned-value search agent trained by self-play (the ``train`` extra's torch): :mod:`~yacht_lab.training.search.
trainer` is the trainer, :mod:`~yacht_lab.training.search.rollouts` the games it plays (every turn the exact expectimax
of :mod:`yacht_agents.search`) and their TD(lambda) targets, :mod:`~yacht_lab.training.search.learner` the value
network's regression. It imports nothing of the SB3 or JAX families, and no solver but as the curve's yardstick.
"""
