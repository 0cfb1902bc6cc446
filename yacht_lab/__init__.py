"""The experiment lab of yacht-rl: training, evaluation, head to head, sweeps and the terminal table.

It stands on :mod:`yacht_env` (the game) and :mod:`yacht_agents` (the players), as CleanRL's ``cleanrl_utils``
stands beside ``cleanrl``; neither of those imports it. The command-line tools (``yacht-train``,
``yacht-evaluate``, ``yacht-play``, ``yacht-sweep``, and the repository's ``train.py`` and friends) are thin
fronts over its modules.
"""
