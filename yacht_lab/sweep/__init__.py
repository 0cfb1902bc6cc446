"""Sweeps: configs x seeds as Ray Tune trials of the training function, and their statistics.

:mod:`~yacht_lab.sweep.spec` reads and checks a sweep file, :mod:`~yacht_lab.sweep.run` runs and resumes it on Ray
Tune, :mod:`~yacht_lab.sweep.report` aggregates the trials (rliable's interval estimates) into a table and curves.
It may import :mod:`yacht_lab.training`, :mod:`yacht_lab.measure` and the shared modules at the lab's top; nothing
imports it but the ``sweep`` command.
"""
