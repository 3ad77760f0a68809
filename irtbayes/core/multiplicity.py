"""Flags over many items at once: the Bayesian false discovery rate over local false-flag probabilities.

Each candidate (an item, an (item, group) cell, a condition effect) has a *local false-flag probability* ``v``, the
posterior probability that it is not what a flag would say (for a sign, the local false sign rate of Stephens
2017). :func:`bayes_fdr_flags` chooses which to flag so that the posterior expected share of false flags among
the flagged is at most ``fdr`` (Newton et al. 2004; Muller et al. 2006), whatever the number of candidates.

The item checks (:mod:`irtbayes.checks.items`) and the condition effects (:mod:`irtbayes.robustness.conditions`)
both flag with it.
"""

from __future__ import annotations

import numpy as np

from irtbayes.core.errors import SpecError

__all__ = ["FDR_RULES", "bayes_fdr_flags"]

#: Rules of :func:`bayes_fdr_flags`.
FDR_RULES = ("each", "mean")


def bayes_fdr_flags(local: np.ndarray, *, fdr: float = 0.05, rule: str = "each") -> np.ndarray:
    """Flag candidates so that the posterior expected share of false flags among the flagged is at most ``fdr``.

    Parameters
    ----------
    local
        One local false-flag probability per candidate, in [0, 1] (any shape). NaN is never flagged.
    fdr
        Bound on the posterior expected share of false flags among the flagged.
    rule
        ``"each"`` (default): flag every candidate whose own probability is at most ``fdr`` (then their mean is
        too); ``"mean"``: flag the largest set, taken in order of increasing probability, whose *mean* is at most
        ``fdr`` (Newton et al. 2004), which also admits candidates above ``fdr`` and is exact only when the
        prior behind the probabilities is right.

    Returns
    -------
    numpy.ndarray
        Booleans of the shape of ``local``.

    Examples
    --------
    >>> v = np.array([0.001, 0.02, 0.09, 0.6, np.nan])
    >>> bayes_fdr_flags(v, fdr=0.05)
    array([ True,  True, False, False, False])
    >>> bayes_fdr_flags(v, fdr=0.05, rule="mean")  # mean of the first three is 0.037
    array([ True,  True,  True, False, False])
    """
    if not 0 < fdr < 1:
        raise SpecError(f"fdr (alpha) must be strictly between 0 and 1, got {fdr}")
    if rule not in FDR_RULES:
        raise SpecError(f"rule must be one of {list(FDR_RULES)}, got {rule!r}")
    v = np.asarray(local, dtype="float64")
    known = np.isfinite(v)
    if rule == "each":
        return known & (v <= fdr)
    flat = np.where(known, v, np.inf).ravel()
    order = np.argsort(flat, kind="stable")
    with np.errstate(invalid="ignore"):
        running = np.cumsum(flat[order]) / np.arange(1, flat.size + 1)
    ok = np.flatnonzero(running <= fdr)
    flags = np.zeros(flat.size, dtype=bool)
    if ok.size:
        flags[order[: ok[-1] + 1]] = True
    return flags.reshape(v.shape)
