"""Evaluating new systems: their abilities given a fitted bank (``score``) and, from a few items, predicted
full-benchmark scores, subsets chosen from the posterior, adaptive tests and the baselines they are compared with."""
