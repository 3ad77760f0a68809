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
from scipy.special import expit

__all__ = [
    "grid_draws",
    "grid_posterior",
    "grid_probabilities",
    "jitter_cells",
    "linear_predictor",
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
