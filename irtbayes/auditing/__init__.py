"""Audit maths: coverage per difficulty bin, DDM, Maximum Gap, test information, re-weighted leaderboard.

Every measure is computed per posterior draw (vectorised over draws) and reported with credible
intervals. :func:`~irtbayes.auditing.run.audit` runs them all (its settings one
:class:`~irtbayes.auditing.settings.AuditSettings`); the modules hold the plain per-draw functions and their formulas.
"""
