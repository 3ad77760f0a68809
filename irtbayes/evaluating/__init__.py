"""Evaluating a new system on a few items: predicted full-benchmark scores, subsets chosen from the posterior,
adaptive tests and the baselines they are compared with."""
