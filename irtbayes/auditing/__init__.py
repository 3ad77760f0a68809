"""Audit maths: coverage per difficulty bin, DDM, Maximum Gap, test information, re-weighted leaderboard.

Every measure is computed per posterior draw (vectorised over draws) and reported with credible
intervals. :func:`audit` runs them all; the modules hold the plain per-draw functions and their formulas.
"""
