"""The table people play at: one game at a table, the coach, the terminal table, the browser table and the game
record.

- :mod:`~yacht_lab.table.game`: a game at one table (seats, dice, decisions, the sheet as data);
- :mod:`~yacht_lab.table.coach`: the solver's numbers for the player on turn;
- :mod:`~yacht_lab.table.terminal`: the terminal table (``play.py``), with :mod:`~yacht_lab.table.commands` (what a
  player types) and :mod:`~yacht_lab.table.screen` (how it is drawn);
- :mod:`~yacht_lab.table.record`: recorded games as JSON Lines (``evaluate.py --record`` writes them, the browser
  replays them);
- :mod:`yacht_lab.table.web`: the browser table (``yacht-web``), its page in ``static/``.

It imports only :mod:`yacht_env`, :mod:`yacht_agents` and its own modules: never :mod:`yacht_lab.training`,
:mod:`yacht_lab.sweep` or :mod:`yacht_lab.measure`.
"""
