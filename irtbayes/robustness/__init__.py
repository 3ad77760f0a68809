"""Robustness of an audit's conclusions: other systems, other prompt formats, revised benchmarks.

- :mod:`~irtbayes.robustness.population`: refits on other populations (bootstrap of systems,
  leave-one-family-out, a user-given population) and a stable / population-dependent label per conclusion;
- :mod:`~irtbayes.robustness.linking`: mean/sigma linking of two calibrations through common items, per draw;
- :mod:`~irtbayes.robustness.conditions`: condition effects on item difficulty and system ability, flagged
  with a Bayesian false discovery rate, and rank agreement between conditions;
- :mod:`~irtbayes.robustness.revision`: two versions of a benchmark on one scale;
- :mod:`~irtbayes.robustness.run`: :func:`~irtbayes.robustness.run.check_robustness` runs what the data allow
  (its settings one :class:`~irtbayes.robustness.run.RobustnessSettings`) and writes the tables,
  ``robustness.json`` and a report.
"""
