"""The estimators irtbayes' evaluation is compared with: the plain mean of a subset, and tinyBenchmarks' p-IRT.

``subset_mean``
    A benchmark's accuracy estimated by the mean of the items the system answered, with the Wilson score
    interval for a proportion drawn without replacement from the benchmark's N items: the sample size enters
    as its effective size under the finite-population correction, ``n (N - 1) / (N - n)`` (infinite, so a
    zero-width interval, once every item is answered).
``pirt_accuracy``
    p-IRT of tinyBenchmarks (Polo et al. 2024, "tinyBenchmarks: evaluating LLMs with fewer examples", section
    4): with point estimates of the item parameters (here the posterior means of the bank) and the system's
    ability estimated from its answers, the accuracy on benchmark B is

        (1 / N_B) [ sum_{answered i in B} y_i + sum_{unanswered i in B} P_i(theta_hat) ].

    The paper estimates theta by maximum likelihood; here it is the maximum a posteriori under N(0, 1) (on
    the grid), which stays finite when every answer is right or wrong. It gives no interval.
``anchor_mean``
    tinyBenchmarks' anchor estimate: the anchors' responses weighted by their clusters' shares.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from irtbayes.core import irt
from irtbayes.evaluating.bank import ItemBank

__all__ = ["anchor_mean", "pirt_accuracy", "subset_mean", "wilson_interval"]


def wilson_interval(successes: np.ndarray, n: np.ndarray, ci_prob: float) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a proportion (``n`` may be a non-integer effective size; inf: exact).

    Examples
    --------
    >>> lo, hi = wilson_interval(np.array([5.0]), np.array([10.0]), 0.95)
    >>> round(float(lo[0]), 3), round(float(hi[0]), 3)
    (0.237, 0.763)
    """
    z = norm.ppf(0.5 + ci_prob / 2)
    n = np.asarray(n, dtype="float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.asarray(successes, dtype="float64") / n
        finite = np.isfinite(n)
        n_f = np.where(finite, n, 1.0)
        p_f = np.where(finite, np.asarray(successes, dtype="float64") / n_f, p)
        centre = (p_f + z**2 / (2 * n_f)) / (1 + z**2 / n_f)
        half = z * np.sqrt(p_f * (1 - p_f) / n_f + z**2 / (4 * n_f**2)) / (1 + z**2 / n_f)
    return np.where(finite, centre - half, p), np.where(finite, centre + half, p)


def subset_mean(
    y: np.ndarray, w: np.ndarray, member: np.ndarray, *, ci_prob: float = 0.9, count: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per system and scope: the mean of the answered items and its interval (module docstring).

    Parameters
    ----------
    y, w
        (J, N) responses and observed-mask.
    member
        (N, scopes) item membership (any positive weight counts the item in the scope).
    count
        (J, N) the items each system's score is over (the finite population; default: every item of the scope).

    Returns
    -------
    tuple of numpy.ndarray
        (J, scopes) estimate, interval low, interval high (NaN where the system answered none of a scope).

    Examples
    --------
    >>> y = np.array([[1.0, 0.0, 1.0, 1.0]]); w = np.array([[1.0, 1.0, 0.0, 0.0]])
    >>> est, lo, hi = subset_mean(y, w, np.ones((4, 1)))
    >>> float(est[0, 0]), bool(lo[0, 0] < 0.5 < hi[0, 0])
    (0.5, True)
    """
    counts = member > 0
    n = w @ counts
    counted = np.ones_like(w) if count is None else ((np.asarray(count) > 0) | (w > 0)).astype("float64")
    total = counted @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        est = ((y * w) @ counts) / n
        effective = np.where(n < total, n * (total - 1) / (total - n), np.inf)
    lo, hi = wilson_interval(est * np.where(np.isfinite(effective), effective, 1.0), effective, ci_prob)
    lo = np.where(np.isfinite(effective), lo, est)
    hi = np.where(np.isfinite(effective), hi, est)
    return est, lo, hi


def pirt_accuracy(
    bank: ItemBank, y: np.ndarray, w: np.ndarray, member: np.ndarray, *, count: np.ndarray | None = None
) -> np.ndarray:
    """(J, scopes) p-IRT accuracies (module docstring), with the bank's posterior-mean item parameters, over the
    items that ``count`` (J, N) marks (default: all)."""
    a = bank.discrimination.mean(axis=0)
    b = bank.difficulty.mean(axis=0)
    c = None if bank.guessing is None else bank.guessing.mean(axis=0)
    grid = bank.grid
    eta = irt.linear_predictor(grid[:, None], b[None, :], a[None, :])
    l1, l0 = irt.log_probabilities(eta, None if c is None else c[None, :])
    log_post = l1 @ (y * w).T + l0 @ ((1 - y) * w).T + bank.log_prior[:, None]  # (G, J)
    theta = grid[np.argmax(log_post, axis=0)]
    p = irt.probability(theta[:, None], b[None, :], a[None, :], None if c is None else c[None, :])
    completed = np.where(w > 0, y, p)
    counted = np.ones_like(w) if count is None else ((np.asarray(count) > 0) | (w > 0)).astype("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        return (completed * counted) @ (member > 0) / (counted @ (member > 0))


def anchor_mean(y: np.ndarray, anchors: np.ndarray, share: np.ndarray) -> np.ndarray:
    """(J,) the anchors' responses weighted by their clusters' shares (``anchors`` are item positions).

    Examples
    --------
    >>> anchor_mean(np.array([[1.0, 0.0, 1.0]]), np.array([0, 1]), np.array([0.75, 0.25])).tolist()
    [0.75]
    """
    return (y[:, anchors] * share[None, :]).sum(axis=1) / share.sum()
