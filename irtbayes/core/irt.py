"""IRT numerics in numpy, written once: response probabilities, log-likelihoods, grid posteriors.

The 1PL/2PL/3PL response function is

    P(y = 1 | theta) = c + (1 - c) * sigmoid(eta),   eta = a (theta - b),

with discrimination ``a`` (1 for the 1PL), difficulty ``b`` and guessing ``c`` (0 for the 1PL and 2PL).
Log-probabilities are computed from log-sigmoids, ``log sigmoid(eta) = -log(1 + exp(-eta))``, with
:func:`numpy.logaddexp`, so they stay finite and exact for any ``eta`` (no ``log(0)`` where the probability
rounds to 0 or 1). Fractional scores ``y`` in [0, 1] use the same terms: ``y log P + (1 - y) log(1 - P)`` is
the fractional-logit quasi-log-likelihood.

Every function broadcasts its arguments (numpy rules), so the same code serves one draw or many, one
subject or a grid of abilities. The PyMC model writes the same terms in PyTensor (:mod:`irtbayes.model.likelihood`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "grid_posterior",
    "linear_predictor",
    "log_likelihood",
    "log_probabilities",
    "probability",
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
    eta = np.asarray(eta, dtype="float64")
    # sigmoid without overflow: exp of a non-positive number only
    e = np.exp(-np.abs(eta))
    p = np.where(eta >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
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


def log_likelihood(y: ArrayLike, eta: ArrayLike, guessing: ArrayLike | None = None) -> np.ndarray:
    """Per-response ``y log P + (1 - y) log(1 - P)``: Bernoulli for 0/1 ``y``, fractional-logit for scores in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> log_likelihood(np.array([1.0, 0.0]), np.array([0.0, 0.0])).round(4)
    array([-0.6931, -0.6931])
    >>> float(log_likelihood(1.0, -800.0))  # finite where P rounds to 0
    -800.0
    """
    y = np.asarray(y, dtype="float64")
    if guessing is None:  # the same terms, with one logaddexp per response: y eta - log(1 + e^eta)
        eta = np.asarray(eta, dtype="float64")
        return y * eta - np.logaddexp(0.0, eta)
    log_p, log_q = log_probabilities(eta, guessing)
    return y * log_p + (1 - y) * log_q


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
        (grid, subject) probabilities, each column summing to 1.

    Examples
    --------
    >>> grid = np.linspace(-4, 4, 81)
    >>> prob = grid_posterior(np.zeros((81, 2)), grid)  # no responses: the N(0, 1) prior
    >>> prob.sum(axis=0).round(6).tolist(), round(float(grid @ prob[:, 0]), 6)
    ([1.0, 1.0], 0.0)
    """
    grid = np.asarray(grid, dtype="float64")
    prior = -0.5 * grid**2 if log_prior is None else np.asarray(log_prior, dtype="float64")
    logpost = log_lik + prior[:, None]
    logpost = logpost - logpost.max(axis=0, keepdims=True)
    prob = np.exp(logpost) * np.gradient(grid)[:, None]
    return prob / prob.sum(axis=0, keepdims=True)


def sample_grid(prob: np.ndarray, grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One ability per column of ``prob`` (from :func:`grid_posterior`), jittered uniformly within its cell.

    Returns
    -------
    numpy.ndarray
        (subject,) draws.

    Examples
    --------
    >>> grid = np.linspace(-4, 4, 81)
    >>> prob = grid_posterior(np.zeros((81, 5000)), grid)
    >>> draws = sample_grid(prob, grid, np.random.default_rng(0))
    >>> draws.shape, round(float(draws.mean()), 1), round(float(draws.std()), 1)
    ((5000,), 0.0, 1.0)
    """
    grid = np.asarray(grid, dtype="float64")
    spacing = np.gradient(grid)
    cdf = np.cumsum(prob, axis=0)
    u = np.asarray(rng.random(prob.shape[1]))
    idx = np.minimum((cdf < u[None, :]).sum(axis=0), len(grid) - 1)
    return grid[idx] + (rng.random(len(idx)) - 0.5) * spacing[idx]
