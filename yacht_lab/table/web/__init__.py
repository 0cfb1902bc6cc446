"""The browser table: ``yacht-web`` serves a page to play Yacht (and Yahtzee, Yatzy) with the solver as coach, and to
step through the games an agent played (``evaluate.py --record``).

The server is a thin face over the game at one table (:mod:`yacht_lab.table.game`, the terminal's too), the agents,
the :class:`~yacht_lab.table.coach.Coach` and the records:
:mod:`yacht_lab.table.web.games` holds the games, :mod:`yacht_lab.table.web.seats` says which seats this install can
play, :mod:`yacht_lab.table.web.shared` shares the agents and coaches between games, :mod:`yacht_lab.table.web.replays`
the replays, :mod:`yacht_lab.table.web.visitors` who a visitor and a client are, :mod:`yacht_lab.table.web.bodies` how
a request's body is read within its bounds, :mod:`yacht_lab.table.web.app` is the Starlette app and its API,
:mod:`yacht_lab.table.web.server` serves it with uvicorn, and ``static/`` the page (HTML, CSS and a little JavaScript
that only draws what the server sends and sends the person's clicks back: no rule lives there). It needs the ``web``
extra (``pip install 'yacht-rl[web]'``: Starlette and uvicorn); importing this package does not.
"""
