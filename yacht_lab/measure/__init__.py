"""Measuring agents: evaluation on common dice, head to head, ratings and the two-player yardstick.

- :mod:`~yacht_lab.measure.evaluation`: agents on seeded solo games against the solver (``evaluate.py``);
- :mod:`~yacht_lab.measure.head_to_head`: agents at tables on common dice, seat-rotated (its report:
  :mod:`~yacht_lab.measure.head_to_head_report`; on a Ray cluster: :mod:`~yacht_lab.measure.head_to_head_ray`;
  its round sizes: :mod:`~yacht_lab.measure.calibration`; its seating and play of tables:
  :mod:`~yacht_lab.measure.tables`);
- :mod:`~yacht_lab.measure.ratings`: Bradley-Terry ratings with bootstrap intervals;
- :mod:`~yacht_lab.measure.yardstick`: two-player agents against the solved equilibrium;
- :mod:`~yacht_lab.measure.report`: what the reports share (intervals, progress, figures).

It may import :mod:`yacht_lab.table`'s game record (``--record``) and the shared modules at the lab's top; never
:mod:`yacht_lab.training` or :mod:`yacht_lab.sweep`.
"""
