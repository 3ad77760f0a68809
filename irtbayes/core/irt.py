"""IRT numerics in numpy, written once: response probabilities (binary and graded), log-likelihoods, grid posteriors.

The 1PL/2PL/3PL response function is

    P(y = 1 | theta) = c + (1 - c) * sigmoid(eta),   eta = a (theta - b),

with discrimination ``a`` (1 for the 1PL), difficulty ``b`` and guessing ``c`` (0 for the 1PL and 2PL).
Log-probabilities are computed from log-sigmoids, ``log sigmoid(eta) = -log(1 + exp(-eta))``, with
:func:`numpy.logaddexp`, so they stay finite and exact for any ``eta`` (no ``log(0)`` where the probability
rounds to 0 or 1). Fractional scores ``y`` in [0, 1] use the same terms: ``y log P + (1 - y) log(1 - P)`` is
the fractional-logit quasi-log-likelihood; k successes of n trials (``y = k / n``) weigh them by n, the binomial
log-likelihood less log C(n, k) (:func:`log_binomial_coefficient`).

Graded (ordinal) items have categories ``0..K-1``, a discrimination and ``K - 1`` thresholds, NaN-padded to the
longest item's: Samejima's graded response model (``kind="grm"``, cumulative logits) and Muraki's generalised
partial credit model (``kind="gpcm"``, adjacent-category logits), both reducing to the 2PL for ``K = 2``.
:func:`graded_log_probabilities` (stable in log space), :func:`graded_probabilities`,
:func:`graded_log_likelihood`, :func:`graded_expected_score`, :func:`graded_information` and
:func:`graded_location` (the ability of half the maximum expected score) are their numerics.

Every function broadcasts its arguments (numpy rules), so the same code serves one draw or many, one
subject or a grid of abilities. The PyMC model writes the same terms in PyTensor (:mod:`irtbayes.model.likelihood`).

Grid posteriors are written here once too: a caller sums its log-likelihood over the responses at each grid
point and adds its log prior; :func:`grid_probabilities` normalises that to cell probabilities,
:func:`sample_cells` draws cells from them and :func:`jitter_cells` spreads each draw uniformly over its cell
(:func:`grid_draws` does both, over grids of any number of axes). Scoring (:func:`grid_posterior`,
:func:`sample_grid`), the approximate tier's item and ability grids and BenchFill's (b, log a, c) grids all
use them; what differs between them is the likelihood at a grid point, the prior and the grid.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, gammaln

from irtbayes.core.errors import SpecError

__all__ = [
    "graded_expected_score",
    "graded_expected_score_slope",
    "graded_information",
    "graded_location",
    "graded_log_likelihood",
    "graded_log_probabilities",
    "graded_probabilities",
    "grid_draws",
    "grid_posterior",
    "grid_probabilities",
    "jitter_cells",
    "linear_predictor",
    "log_binomial_coefficient",
    "log_likelihood",
    "log_probabilities",
    "probability",
    "sample_cells",
    "sample_grid",
    "sigmoid_mix",
]


def linear_predictor(theta: ArrayLike, difficulty: ArrayLike, discrimination: ArrayLike | None = None) -> np.ndarray:
    """``eta = a (theta - b)`` (``a = 1`` when ``discrimination`` is None), broadcast.

    Examples
    --------
    >>> linear_predictor(np.array([[0.0], [1.0]]), np.array([0.5, -0.5]), np.array([2.0, 1.0]))  # subject x item
    array([[-1. ,  0.5],
           [ 1. ,  1.5]])
    """
    diff = np.asarray(theta, dtype="float64") - np.asarray(difficulty, dtype="float64")
    return diff if discrimination is None else np.asarray(discrimination, dtype="float64") * diff


def probability(
    theta: ArrayLike,
    difficulty: ArrayLike,
    discrimination: ArrayLike | None = None,
    guessing: ArrayLike | None = None,
) -> np.ndarray:
    """P(correct) under the 1PL/2PL/3PL: ``c + (1 - c) * sigmoid(a (theta - b))``, broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> probability(np.array([-1.0, 0.0, 1.0]), 0.0, 2.0).round(3)
    array([0.119, 0.5  , 0.881])
    >>> float(probability(-50.0, 0.0, 1.0, 0.25))
    0.25
    """
    return sigmoid_mix(linear_predictor(theta, difficulty, discrimination), guessing)


def sigmoid_mix(eta: ArrayLike, guessing: ArrayLike | None = None) -> np.ndarray:
    """``c + (1 - c) * sigmoid(eta)`` from the linear predictor (``c = 0`` when ``guessing`` is None).

    Examples
    --------
    >>> sigmoid_mix(np.array([-1000.0, 0.0, 1000.0])).tolist()  # no overflow
    [0.0, 0.5, 1.0]
    >>> float(sigmoid_mix(0.0, 0.25))
    0.625
    """
    p = expit(np.asarray(eta, dtype="float64"))  # one pass, no overflow at any eta
    if guessing is None:
        return p
    c = np.asarray(guessing, dtype="float64")
    return c + (1 - c) * p


def log_probabilities(eta: ArrayLike, guessing: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(log P, log(1 - P))`` for linear predictor ``eta`` and guessing ``c``, stable for any ``eta``.

    Without guessing: ``log P = -log(1 + exp(-eta))`` and ``log(1 - P) = -log(1 + exp(eta))``; with it,
    ``log P = logaddexp(log c, log(1 - c) + log sigmoid(eta))`` and ``log(1 - P) = log(1 - c) + log sigmoid(-eta)``.

    Examples
    --------
    >>> log_p, log_q = log_probabilities(np.array([0.0, -800.0]))
    >>> log_p.round(4).tolist(), log_q.round(4).tolist()
    ([-0.6931, -800.0], [-0.6931, -0.0])
    >>> [round(float(np.exp(v)), 6) for v in log_probabilities(-800.0, 0.25)]  # P falls to the guessing floor
    [0.25, 0.75]
    """
    eta = np.asarray(eta, dtype="float64")
    log_p = -np.logaddexp(0.0, -eta)
    log_q = -np.logaddexp(0.0, eta)
    if guessing is None:
        return log_p, log_q
    c = np.asarray(guessing, dtype="float64")
    with np.errstate(divide="ignore"):  # c = 0 gives log c = -inf, which logaddexp handles
        log_c, log_1mc = np.log(c), np.log1p(-c)
    return np.logaddexp(log_c, log_1mc + log_p), log_1mc + log_q


def log_likelihood(
    y: ArrayLike, eta: ArrayLike, guessing: ArrayLike | None = None, *, trials: ArrayLike | None = None
) -> np.ndarray:
    """Per-response ``y log P + (1 - y) log(1 - P)``: Bernoulli for 0/1 ``y``, fractional-logit for scores in [0, 1].

    With ``trials`` n, ``y`` is the share of successes k / n and the terms are the binomial kernel
    ``k log P + (n - k) log(1 - P)`` (n times the above), without the constant log C(n, k) that
    :func:`log_binomial_coefficient` gives.

    Examples
    --------
    >>> import numpy as np
    >>> log_likelihood(np.array([1.0, 0.0]), np.array([0.0, 0.0])).round(4)
    array([-0.6931, -0.6931])
    >>> float(log_likelihood(1.0, -800.0))  # finite where P rounds to 0
    -800.0
    >>> float(log_likelihood(0.75, 0.0, trials=4))  # 3 of 4 at P = 1/2: 4 log(1/2)
    -2.772588722239781
    """
    y = np.asarray(y, dtype="float64")
    if guessing is None:  # the same terms, with one logaddexp per response: y eta - log(1 + e^eta)
        eta = np.asarray(eta, dtype="float64")
        terms = y * eta - np.logaddexp(0.0, eta)
    else:
        log_p, log_q = log_probabilities(eta, guessing)
        terms = y * log_p + (1 - y) * log_q
    return terms if trials is None else np.asarray(trials, dtype="float64") * terms


def log_binomial_coefficient(trials: ArrayLike, successes: ArrayLike) -> np.ndarray:
    """``log C(n, k)``, the constant that makes :func:`log_likelihood` with ``trials`` the binomial log pmf (0 for one
    trial), broadcast.

    Examples
    --------
    >>> log_binomial_coefficient(np.array([4, 1, 10]), np.array([2, 1, 0])).round(4).tolist()  # log 6, 0, 0
    [1.7918, 0.0, 0.0]
    """
    n = np.asarray(trials, dtype="float64")
    k = np.asarray(successes, dtype="float64")
    return np.asarray(gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0))


# ---------------------------------------------------------------------------------------------- graded models
#: The graded (ordinal) response models: Samejima's graded response model and Muraki's generalised partial
#: credit model (:data:`irtbayes.model.spec.GRADED_KINDS` names the same two).
_GRADED_KINDS = ("grm", "gpcm")

#: :func:`graded_location` solves to this absolute tolerance on the ability scale.
_LOCATION_TOLERANCE = 1e-10


def _graded_thresholds(thresholds: ArrayLike, kind: str, caller: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(b, valid, n_categories)``: the thresholds as float64, where they are not padding, and K per item.

    Raises SpecError for an unknown ``kind`` and ValueError for thresholds that no graded item can have: no
    threshold axis, an item without a threshold, NaN padding that is not at the end, or (GRM) thresholds that
    decrease.
    """
    if kind not in _GRADED_KINDS:
        raise SpecError(f"{caller}: kind must be 'grm' or 'gpcm', got {kind!r}")
    b = np.asarray(thresholds, dtype="float64")
    if b.ndim == 0 or b.shape[-1] == 0:
        raise ValueError(
            f"{caller}: thresholds need a last axis of length Kmax - 1 >= 1 (one threshold per category above "
            f"the lowest), got shape {b.shape}"
        )
    valid = ~np.isnan(b)
    if not valid[..., 0].all():
        raise ValueError(f"{caller}: every item needs at least its first threshold; some have only NaN")
    if (~valid[..., :-1] & valid[..., 1:]).any():
        raise ValueError(
            f"{caller}: NaN thresholds are padding and must come after an item's own thresholds (found a "
            "threshold after a NaN)"
        )
    if kind == "grm" and (np.diff(b, axis=-1) < 0).any():  # NaN differences (padding) compare False
        raise ValueError(f"{caller}: GRM thresholds must increase along the last axis (b_1 <= ... <= b_(K-1))")
    return b, valid, 1 + valid.sum(axis=-1)


def _log1mexp(u: np.ndarray) -> np.ndarray:
    """``log(1 - exp(u))`` for ``u <= 0``, accurate on both sides of ``-log 2`` (Maechler 2012); -inf at 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(u > -np.log(2.0), np.log(-np.expm1(u)), np.log1p(-np.exp(u)))


def _graded_log_p(
    theta: ArrayLike, a: ArrayLike, b: np.ndarray, valid: np.ndarray, n_cat: np.ndarray, kind: str
) -> np.ndarray:
    """:func:`graded_log_probabilities` for thresholds already checked by :func:`_graded_thresholds`."""
    theta = np.asarray(theta, dtype="float64")[..., None]
    a = np.asarray(a, dtype="float64")[..., None]
    k = np.arange(b.shape[-1] + 1)  # the categories 0..Kmax-1
    n_cat = n_cat[..., None]
    with np.errstate(invalid="ignore"):  # NaN padding enters only terms that are masked out
        eta = a * (theta - b)  # (..., Kmax - 1): a (theta - b_k), k = 1..Kmax-1
        if kind == "gpcm":
            zero = np.zeros((*eta.shape[:-1], 1))
            score = np.where(k < n_cat, np.concatenate([zero, np.cumsum(eta, axis=-1)], axis=-1), -np.inf)
            top_k = score.argmax(axis=-1)[..., None]  # category 0's score is 0, so the maximum is finite
            top = np.take_along_axis(score, top_k, axis=-1)
            rest = np.where(k == top_k, 0.0, np.exp(score - top)).sum(axis=-1, keepdims=True)
            return (score - top) - np.log1p(rest)  # exact where the top category is nearly certain
        log_above, log_below = log_probabilities(eta)  # log P(Y >= k), log P(Y < k)
        pad = np.zeros((*eta.shape[:-1], 1))
        lower = np.concatenate([pad, log_above], axis=-1)  # category k: log sigmoid(x), x = a (theta - b_k)
        upper = np.concatenate([log_below, pad], axis=-1)  # category k: log sigmoid(-z), z = a (theta - b_(k+1))
        gap = _log1mexp(-a * np.diff(b, axis=-1))  # log(1 - exp(-a (b_(k+1) - b_k))), k = 1..Kmax-2
        gap = np.broadcast_to(gap, (*eta.shape[:-1], gap.shape[-1]))  # with theta's axes too
        middle = np.concatenate([pad, gap, pad], axis=-1) if b.shape[-1] > 1 else np.zeros_like(lower)
        has_low, has_high = (k >= 1) & (k < n_cat), k < n_cat - 1
        log_p = (
            np.where(has_low, lower, 0.0) + np.where(has_high, upper, 0.0) + np.where(has_low & has_high, middle, 0.0)
        )
    return np.where(k < n_cat, log_p, -np.inf)


def graded_log_probabilities(
    theta: ArrayLike, discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str
) -> np.ndarray:
    """``log P(Y = k | theta)`` of a graded item for every category ``k``, stable at any ability.

    An item of ``K`` categories ``0..K-1`` has a discrimination ``a > 0`` and ``K - 1`` thresholds
    ``b_1..b_(K-1)``, NaN-padded to the longest item's ``Kmax - 1``.

    - ``kind="grm"`` (Samejima's graded response model): ``P(Y >= k) = sigmoid(a (theta - b_k))`` with
      increasing thresholds and ``P(Y = k) = P(Y >= k) - P(Y >= k + 1)``. With ``x = a (theta - b_k)`` and
      ``z = a (theta - b_(k+1))``, ``log P(Y = k) = log sigmoid(x) + log sigmoid(-z) + log(1 - exp(-a (b_(k+1)
      - b_k)))``; the lowest category has only the second term and the highest only the first, so a binary
      item (``K = 2``) is the 2PL. The last term depends on the gap between the thresholds only, so the
      difference stays exact where both cumulative probabilities round to 0 or 1. mirt's slope-intercept form
      has intercepts ``d_k = -a b_k``.
    - ``kind="gpcm"`` (Muraki's generalised partial credit model): ``P(Y = k)`` is proportional to
      ``exp(sum_(v <= k) a (theta - b_v))`` (0 for ``k = 0``), normalised with log-sum-exp over the item's own
      categories; the thresholds (step difficulties) need not be ordered.

    Parameters
    ----------
    theta
        Abilities; broadcast against ``discrimination`` and ``thresholds[..., 0]``.
    discrimination
        ``a`` per item, broadcast likewise.
    thresholds
        ``(..., Kmax - 1)`` thresholds, NaN after an item's own (NaN only at the end of the last axis; a GRM
        item's must not decrease).
    kind
        ``"grm"`` or ``"gpcm"``.

    Returns
    -------
    numpy.ndarray
        ``(..., Kmax)``: the leading axes are those of ``theta``, ``discrimination`` and ``thresholds[..., 0]``
        broadcast together, the last one the categories; ``-inf`` for categories an item does not have. For
        example ``theta`` (subject, 1), ``discrimination`` (item,) and ``thresholds`` (item, Kmax - 1) give
        (subject, item, Kmax); per draw, ``theta`` (draw, subject, 1), ``discrimination`` (draw, 1, item) and
        ``thresholds`` (draw, 1, item, Kmax - 1) give (draw, subject, item, Kmax).

    Raises
    ------
    SpecError
        ``kind`` is not a graded kind.
    ValueError
        Thresholds without a last axis, an item without a threshold, NaN before a threshold, or decreasing GRM
        thresholds.

    Examples
    --------
    >>> b = np.array([[-1.0, 1.0], [0.5, np.nan]])  # a 3-category item and a binary one
    >>> np.exp(graded_log_probabilities(0.0, np.array([1.0, 2.0]), b, kind="grm")).round(4)
    array([[0.2689, 0.4621, 0.2689],
           [0.7311, 0.2689, 0.    ]])
    >>> graded_log_probabilities(40.0, 1.0, [-1.0, 1.0], kind="grm").round(2)  # finite far out
    array([-41.  , -39.15,  -0.  ])
    >>> np.exp(graded_log_probabilities(0.0, 1.0, [1.0, -1.0], kind="gpcm")).round(4)  # reversed steps: a rare middle
    array([0.4223, 0.1554, 0.4223])
    """
    b, valid, n_cat = _graded_thresholds(thresholds, kind, "graded_log_probabilities")
    return _graded_log_p(theta, discrimination, b, valid, n_cat, kind)


def graded_probabilities(
    theta: ArrayLike, discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str
) -> np.ndarray:
    """``P(Y = k | theta)`` of graded items: the exponential of :func:`graded_log_probabilities`.

    Returns
    -------
    numpy.ndarray
        ``(..., Kmax)`` probabilities summing to 1 over each item's categories; 0 for categories it lacks.

    Examples
    --------
    >>> p = graded_probabilities(np.array([[-1.0], [1.0]]), np.ones(2), [[0.0, np.nan], [-1.0, 1.0]], kind="gpcm")
    >>> p.shape, p.sum(axis=-1).round(12).tolist()  # (subject, item, Kmax)
    ((2, 2, 3), [[1.0, 1.0], [1.0, 1.0]])
    """
    return np.exp(graded_log_probabilities(theta, discrimination, thresholds, kind=kind))


def _graded_moments(
    theta: ArrayLike, a: ArrayLike, b: np.ndarray, valid: np.ndarray, n_cat: np.ndarray, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(E[Y | theta], d E[Y | theta] / d theta)`` of checked thresholds.

    GRM: ``E[Y] = sum_k P(Y >= k)``, whose slope is ``a sum_k P(Y >= k) (1 - P(Y >= k))``; GPCM: ``E[Y] =
    sum_k k P(Y = k)``, whose slope is ``a Var(Y)``.
    """
    a = np.asarray(a, dtype="float64")
    if kind == "grm":
        with np.errstate(invalid="ignore"):
            above = expit(a[..., None] * (np.asarray(theta, dtype="float64")[..., None] - b))
        above = np.where(valid, above, 0.0)
        return above.sum(axis=-1), a * (above * (1 - above)).sum(axis=-1)
    p = np.exp(_graded_log_p(theta, a, b, valid, n_cat, kind))
    k = np.arange(p.shape[-1])
    mean = (k * p).sum(axis=-1)
    return mean, a * (p * (k - mean[..., None]) ** 2).sum(axis=-1)


def graded_expected_score(
    theta: ArrayLike, discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str
) -> np.ndarray:
    """``E[Y | theta] = sum_k k P(Y = k | theta)`` of graded items, on the 0..K-1 scale.

    Broadcast as :func:`graded_log_probabilities`; for the GRM it is computed as ``sum_k P(Y >= k)``.

    Returns
    -------
    numpy.ndarray
        The leading (broadcast) shape, without the category axis: in [0, K - 1] per item.

    Examples
    --------
    >>> graded_expected_score(np.array([-5.0, 0.0, 5.0]), 1.0, [-1.0, 0.0, 1.0], kind="grm").round(3)
    array([0.027, 1.5  , 2.973])
    >>> float(graded_expected_score(0.3, 1.5, [0.3, np.nan], kind="gpcm"))  # binary: P(y = 1) at theta = b
    0.5
    """
    b, valid, n_cat = _graded_thresholds(thresholds, kind, "graded_expected_score")
    return _graded_moments(theta, discrimination, b, valid, n_cat, kind)[0]


def graded_expected_score_slope(
    theta: ArrayLike, discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(E[Y | theta], d E[Y | theta] / d theta)`` of graded items, broadcast as :func:`graded_expected_score`.

    The slope is ``a sum_k P(Y >= k) (1 - P(Y >= k))`` for the GRM and ``a Var(Y | theta)`` for the GPCM; for a
    binary item both are the 2PL's ``a p (1 - p)``.

    Examples
    --------
    >>> score, slope = graded_expected_score_slope(0.0, 2.0, np.array([0.0]), kind="grm")
    >>> float(score), float(slope)
    (0.5, 0.5)
    """
    b, valid, n_cat = _graded_thresholds(thresholds, kind, "graded_expected_score_slope")
    return _graded_moments(theta, discrimination, b, valid, n_cat, kind)


def graded_information(theta: ArrayLike, discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str) -> np.ndarray:
    """Fisher information of graded items at ``theta``: ``I(theta) = sum_k (d P_k / d theta)^2 / P_k``.

    - GRM: ``d P_k / d theta = a (W_k - W_(k+1))`` with ``W_k = P*_k (1 - P*_k)`` for the cumulative
      probabilities ``P*_k = P(Y >= k)`` (``W_0 = W_K = 0``), so ``I = a^2 sum_k (W_k - W_(k+1))^2 / P_k``.
    - GPCM: ``d P_k / d theta = a P_k (k - E[Y])``, so ``I = a^2 Var(Y | theta)``.

    A binary item gives the 2PL's ``a^2 p (1 - p)`` under both. Categories whose probability underflows to 0
    add nothing (their term's limit).

    Returns
    -------
    numpy.ndarray
        The leading (broadcast) shape of :func:`graded_log_probabilities`, without the category axis: one
        value per item (the item axis is kept; sum over it for the test information).

    Examples
    --------
    >>> float(graded_information(0.0, 2.0, [0.0, np.nan], kind="grm"))  # 2PL: a^2 p (1 - p) = 4 / 4
    1.0
    >>> graded_information(np.array([[-2.0], [0.0]]), 1.0, [[-1.0, 1.0], [-1.0, 1.0]], kind="gpcm").round(4)
    array([[0.2331, 0.2331],
           [0.4239, 0.4239]])
    """
    b, valid, n_cat = _graded_thresholds(thresholds, kind, "graded_information")
    a = np.asarray(discrimination, dtype="float64")
    p = np.exp(_graded_log_p(theta, a, b, valid, n_cat, kind))
    if kind == "gpcm":
        k = np.arange(p.shape[-1])
        mean = (k * p).sum(axis=-1, keepdims=True)
        return a**2 * (p * (k - mean) ** 2).sum(axis=-1)
    with np.errstate(invalid="ignore"):
        log_above, log_below = log_probabilities(a[..., None] * (np.asarray(theta, dtype="float64")[..., None] - b))
    w = np.where(valid, np.exp(log_above + log_below), 0.0)  # W_k = P*_k (1 - P*_k), k = 1..Kmax-1
    pad = np.zeros((*w.shape[:-1], 1))
    slope = np.concatenate([pad, w], axis=-1) - np.concatenate([w, pad], axis=-1)  # (W_k - W_(k+1)), k = 0..Kmax-1
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, slope**2 / p, 0.0)
    return a**2 * terms.sum(axis=-1)


def graded_location(discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str) -> np.ndarray:
    """The location of graded items: the ability at which the expected score is half its maximum, ``(K - 1) / 2``.

    A binary item's location is its difficulty ``b``; a GRM item with thresholds symmetric about their mean
    has that mean. The expected score increases with ``theta`` under both models, so the root is found by
    Newton's method safeguarded by bisection, over any leading shape at once, to 1e-10 on the ability scale.
    The bracket starts at the thresholds' range (it always holds the GRM's root) and is widened, doubling,
    until it holds the root (GPCM steps may be reversed).

    Parameters
    ----------
    discrimination
        ``a`` per item; broadcast against ``thresholds[..., 0]``.
    thresholds
        ``(..., Kmax - 1)`` thresholds, NaN-padded (as :func:`graded_log_probabilities`).
    kind
        ``"grm"`` or ``"gpcm"``.

    Returns
    -------
    numpy.ndarray
        The leading shape of ``discrimination`` and ``thresholds[..., 0]`` broadcast: one location per item
        (NaN where the discrimination is NaN or not positive).

    Examples
    --------
    >>> graded_location(1.5, [[-1.0, 0.0, 1.0], [0.7, np.nan, np.nan]], kind="grm").round(8).tolist()
    [0.0, 0.7]
    >>> loc = graded_location(1.0, [-1.0, 0.5], kind="gpcm")
    >>> round(float(graded_expected_score(loc, 1.0, [-1.0, 0.5], kind="gpcm")), 8)  # half of K - 1 = 2
    1.0
    """
    b, valid, n_cat = _graded_thresholds(thresholds, kind, "graded_location")
    a = np.asarray(discrimination, dtype="float64")
    shape = np.broadcast_shapes(a.shape, b.shape[:-1])
    a = np.broadcast_to(a, shape)
    target = np.broadcast_to((n_cat - 1) / 2.0, shape)
    lo = np.broadcast_to(np.nanmin(b, axis=-1), shape).copy()
    hi = np.broadcast_to(np.nanmax(b, axis=-1), shape).copy()
    x = np.broadcast_to(np.nanmean(b, axis=-1), shape).copy()
    usable = a > 0  # NaN compares False
    for bound, outside, direction in ((lo, np.greater, -1.0), (hi, np.less, 1.0)):
        width = np.maximum(hi - lo, 1.0)
        for _ in range(64):  # widen until E[Y](lo) <= target <= E[Y](hi)
            widen = usable & outside(_graded_moments(bound, a, b, valid, n_cat, kind)[0], target)
            if not widen.any():
                break
            bound += np.where(widen, direction * width, 0.0)
            width *= 2.0
    for _ in range(200):
        value, slope = _graded_moments(x, a, b, valid, n_cat, kind)
        f = value - target
        lo, hi = np.where(f <= 0, x, lo), np.where(f >= 0, x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x - f / slope
        step = np.where((step > lo) & (step < hi), step, 0.5 * (lo + hi))  # outside the bracket, or 0/0: bisect
        done = ~usable | (np.abs(step - x) < _LOCATION_TOLERANCE) | (hi - lo < _LOCATION_TOLERANCE)
        x = step
        if done.all():
            break
    return np.where(usable, x, np.nan)


def graded_log_likelihood(
    y: ArrayLike, theta: ArrayLike, discrimination: ArrayLike, thresholds: ArrayLike, *, kind: str
) -> np.ndarray:
    """Per-response ``log P(Y = y | theta)`` of graded items, for integer category codes ``y``.

    Parameters
    ----------
    y
        Category codes 0..Kmax-1 (any integer or integer-valued float type), broadcast against the leading
        shape of :func:`graded_log_probabilities`; a code at or above an item's own ``K`` has log-probability
        ``-inf``.
    theta, discrimination, thresholds, kind
        As :func:`graded_log_probabilities`.

    Returns
    -------
    numpy.ndarray
        The leading shape broadcast with ``y``'s: one log-probability per response.

    Raises
    ------
    ValueError
        Codes that are not whole numbers in 0..Kmax-1 (NaN included: leave missing cells out).

    Examples
    --------
    >>> graded_log_likelihood(np.array([0, 1, 2]), 0.0, 1.0, [-1.0, 1.0], kind="grm").round(4)
    array([-1.3133, -0.7719, -1.3133])
    >>> float(graded_log_likelihood(1, 0.0, 2.0, [0.0], kind="gpcm")) == float(log_likelihood(1.0, 0.0))  # 2PL
    True
    """
    b, valid, n_cat = _graded_thresholds(thresholds, kind, "graded_log_likelihood")
    codes = np.asarray(y)
    n_max = b.shape[-1] + 1
    if codes.dtype.kind not in "iu":
        as_float = codes.astype("float64")
        if not np.all(np.isfinite(as_float) & (as_float == np.round(as_float))):
            raise ValueError(
                "graded_log_likelihood: y must hold whole category codes (no NaN: leave missing cells out)"
            )
        codes = as_float.astype("int64")
    if codes.size and (codes.min() < 0 or codes.max() >= n_max):
        raise ValueError(
            f"graded_log_likelihood: category codes must lie in 0..{n_max - 1} (Kmax = {n_max}), "
            f"got {int(codes.min())}..{int(codes.max())}"
        )
    log_p = _graded_log_p(theta, discrimination, b, valid, n_cat, kind)
    shape = np.broadcast_shapes(codes.shape, log_p.shape[:-1])
    log_p = np.broadcast_to(log_p, (*shape, n_max))
    return np.take_along_axis(log_p, np.broadcast_to(codes, shape)[..., None], axis=-1)[..., 0]


def grid_probabilities(
    log_post: ArrayLike, *, axis: int | tuple[int, ...] | None = None, cell_width: ArrayLike | None = None
) -> np.ndarray:
    """The grid posterior: probabilities of grid cells from the log posterior density at their points.

    ``exp(log_post - max)``, times the cells' widths where given, normalised to sum 1 over ``axis`` (None:
    the whole array is one grid). Every grid posterior of the package is normalised here: the ability grids
    of :func:`grid_posterior` (scoring), the approximate tier's item and ability grids, BenchFill's
    (b, log a, c) grids.

    Parameters
    ----------
    log_post
        Log posterior density (up to a constant) at each grid point; any shape.
    axis
        The axis or axes that span one grid; the others index separate grids.
    cell_width
        Widths (or areas) of the cells, broadcast against ``log_post``; None: equal cells.

    Returns
    -------
    numpy.ndarray
        Probabilities of the shape of ``log_post``, summing to 1 over ``axis``.

    Examples
    --------
    >>> grid_probabilities(np.log([[1.0, 3.0], [1.0, 1.0]]), axis=1).tolist()  # one grid per row
    [[0.25, 0.75], [0.5, 0.5]]
    >>> float(grid_probabilities(np.array([-1000.0, -1000.0]))[0])  # no underflow far from 0
    0.5
    """
    log_post = np.asarray(log_post, dtype="float64")
    prob = np.exp(log_post - log_post.max(axis=axis, keepdims=True))
    if cell_width is not None:
        prob = prob * np.asarray(cell_width, dtype="float64")
    return prob / prob.sum(axis=axis, keepdims=True)


def grid_posterior(log_lik: np.ndarray, grid: np.ndarray, *, log_prior: np.ndarray | None = None) -> np.ndarray:
    """Posterior probabilities of the cells of an ability grid, per column of ``log_lik``.

    Parameters
    ----------
    log_lik
        (grid, subject) log-likelihood of each subject's responses at each grid point.
    grid
        Increasing ability grid; each point stands for a cell of width ``numpy.gradient(grid)``.
    log_prior
        (grid,) log prior density (default: standard normal, up to a constant).

    Returns
    -------
    numpy.ndarray
        (grid, subject) probabilities, each column summing to 1 (:func:`grid_probabilities`).

    Examples
    --------
    >>> grid = np.linspace(-4, 4, 81)
    >>> prob = grid_posterior(np.zeros((81, 2)), grid)  # no responses: the N(0, 1) prior
    >>> prob.sum(axis=0).round(6).tolist(), round(float(grid @ prob[:, 0]), 6)
    ([1.0, 1.0], 0.0)
    """
    grid = np.asarray(grid, dtype="float64")
    prior = -0.5 * grid**2 if log_prior is None else np.asarray(log_prior, dtype="float64")
    return grid_probabilities(log_lik + prior[:, None], axis=0, cell_width=np.gradient(grid)[:, None])


#: :func:`sample_cells` compares each draw with every cell of its row (vectorised over rows, this many
#: comparisons at once) where a row has at most :data:`_COMPARE_PER_ROW` draws times cells, and otherwise
#: searches row by row (fewer draws than cells: comparing is faster); both give the same cells.
_COMPARE_AT_ONCE = 1 << 20
_COMPARE_PER_ROW = 4096


def sample_cells(prob: ArrayLike, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Cells drawn from each row of ``prob`` by inverting its cumulative sum.

    The same cells, from the same generator state, as ``rng.choice(G, size=n_draws, p=row / row.sum())`` row
    after row (one uniform per draw, ``rng.random((rows, n_draws))``).

    Parameters
    ----------
    prob
        (rows, G) non-negative weights of the cells of each row's grid (any positive total).
    n_draws
        Draws per row.
    rng
        The generator.

    Returns
    -------
    numpy.ndarray
        (rows, n_draws) integer cell indices in [0, G).

    Examples
    --------
    >>> sample_cells(np.array([[0.0, 1.0, 0.0], [3.0, 0.0, 0.0]]), 4, np.random.default_rng(0)).tolist()
    [[1, 1, 1, 1], [0, 0, 0, 0]]
    """
    prob = np.asarray(prob, dtype="float64")
    rows, n_cells = prob.shape
    cdf = np.cumsum(prob, axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random((rows, n_draws))
    index = np.empty((rows, n_draws), dtype=np.int64)
    per_row = n_draws * n_cells
    if per_row <= _COMPARE_PER_ROW:  # the count of cdf values <= u is searchsorted(cdf, u, side="right")
        step = max(1, _COMPARE_AT_ONCE // max(per_row, 1))
        for r in range(0, rows, step):
            index[r : r + step] = (cdf[r : r + step, None, :] <= u[r : r + step, :, None]).sum(axis=2)
    else:
        for r in range(rows):
            index[r] = np.searchsorted(cdf[r], u[r], side="right")
    return np.minimum(index, n_cells - 1)


def jitter_cells(
    points: np.ndarray, index: np.ndarray, rng: np.random.Generator, *, width: ArrayLike | None = None
) -> np.ndarray:
    """Values uniform within the drawn cells: ``points[cell] + (u - 1/2) * width[cell]`` along each row.

    Parameters
    ----------
    points
        (rows, n) grid points of each row, or (1, n) shared by every row.
    index
        (rows, n_draws) cells (:func:`sample_cells`).
    rng
        The generator; one uniform per draw, ``rng.random(index.shape)``.
    width
        Cell widths broadcast against ``points``; None: each row's spacing ``points[:, 1] - points[:, 0]``
        (evenly spaced grids; 0 for a grid of one point).

    Returns
    -------
    numpy.ndarray
        (rows, n_draws) values.
    """
    if width is None:
        width = points[:, 1:2] - points[:, 0:1] if points.shape[1] > 1 else np.zeros((points.shape[0], 1))
    cell_width = np.broadcast_to(np.asarray(width, dtype="float64"), points.shape)
    value = np.take_along_axis(points, index, axis=1)
    return value + (rng.random(value.shape) - 0.5) * np.take_along_axis(cell_width, index, axis=1)


def grid_draws(
    prob: ArrayLike,
    points: tuple[np.ndarray, ...],
    n_draws: int,
    rng: np.random.Generator,
    *,
    widths: tuple[ArrayLike, ...] | None = None,
) -> tuple[np.ndarray, ...]:
    """Draws from grid posteriors, one grid per row of ``prob``, each jittered uniformly within its cell.

    Parameters
    ----------
    prob
        (rows, G) cell probabilities (:func:`grid_probabilities`; any positive total per row) over a grid
        flattened row-major from its axes, G the product of the axes' lengths.
    points
        Per axis, the (rows, n_axis) points of each row's grid, or (1, n_axis) shared by every row.
    n_draws
        Draws per row.
    rng
        The generator: the cells are drawn first (:func:`sample_cells`), then the jitter axis by axis.
    widths
        Per axis, the cell widths (:func:`jitter_cells`); None: evenly spaced axes.

    Returns
    -------
    tuple of numpy.ndarray
        Per axis, (rows, n_draws) draws.

    Examples
    --------
    >>> grid = np.linspace(-4, 4, 81)
    >>> prob = grid_probabilities(-0.5 * grid**2)[None, :]  # N(0, 1) on a grid
    >>> (draws,) = grid_draws(prob, (grid[None, :],), 5000, np.random.default_rng(0))
    >>> draws.shape, round(float(draws.mean()), 1), round(float(draws.std()), 1)
    ((1, 5000), 0.0, 1.0)
    """
    cells = sample_cells(prob, n_draws, rng)
    index = np.unravel_index(cells, tuple(p.shape[1] for p in points))
    return tuple(
        jitter_cells(pts, index[axis], rng, width=None if widths is None else widths[axis])
        for axis, pts in enumerate(points)
    )


def sample_grid(prob: np.ndarray, grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One ability per column of ``prob`` (from :func:`grid_posterior`), jittered uniformly within its cell.

    Returns
    -------
    numpy.ndarray
        (subject,) draws (:func:`grid_draws`, cells of width ``numpy.gradient(grid)``).

    Examples
    --------
    >>> grid = np.linspace(-4, 4, 81)
    >>> prob = grid_posterior(np.zeros((81, 5000)), grid)
    >>> draws = sample_grid(prob, grid, np.random.default_rng(0))
    >>> draws.shape, round(float(draws.mean()), 1), round(float(draws.std()), 1)
    ((5000,), 0.0, 1.0)
    """
    grid = np.asarray(grid, dtype="float64")
    (draws,) = grid_draws(prob.T, (grid[None, :],), 1, rng, widths=(np.gradient(grid)[None, :],))
    return draws[:, 0]
