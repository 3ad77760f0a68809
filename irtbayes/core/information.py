"""Test information, standard error and the expected-score curve of a benchmark, per posterior draw.

For item i with discrimination a_i (1 when the fit is 1PL), difficulty b_i and lower asymptote c_i (0 unless
the fit is 3PL), at ability theta:

    sigma_i(theta) = 1 / (1 + exp(-a_i (theta - b_i)))
    P_i(theta)     = c_i + (1 - c_i) sigma_i(theta)                       probability of a correct response
    P_i'(theta)    = a_i (1 - c_i) sigma_i (1 - sigma_i)                  its slope
    I_i(theta)     = P_i'^2 / (P_i (1 - P_i)) = a_i^2 (1 - c_i) sigma_i^2 (1 - sigma_i) / P_i
                   = a_i^2 P_i (1 - P_i)                                  when c_i = 0 (1PL/2PL)

Per benchmark (the items of the scope, n of them):

    I(theta)     = sum_i I_i(theta)          test information; SE(theta) = 1 / sqrt(I(theta))
    E(theta)     = (1/n) sum_i P_i(theta)    expected accuracy of a subject with ability theta
    E'(theta)    = (1/n) sum_i P_i'(theta)   how fast that accuracy moves with ability

A benchmark's score is informative where E'(theta) is large; where it is flat, subjects that differ in
ability get the same expected score. A single 2PL item has its peak information a^2 / 4 at theta = b.
A multidimensional discrimination (an extra ``dim`` axis) is reduced beforehand to Reckase's MDISC,
sqrt(sum_d a_id^2), by the audit.
"""

from __future__ import annotations

import numpy as np

from irtbayes.core import irt
from irtbayes.core.errors import SpecError

__all__ = [
    "DEFAULT_GRID_POINTS",
    "curves_by_blocks",
    "graded_curves",
    "item_blocks",
    "item_curves",
    "scope_curves",
    "test_information",
    "theta_grid",
]

#: Default number of grid points over [L, U].
DEFAULT_GRID_POINTS = 61


def theta_grid(lo: float, hi: float, *, points: int = DEFAULT_GRID_POINTS) -> np.ndarray:
    """``points`` equally spaced abilities from lo to hi inclusive.

    Examples
    --------
    >>> from irtbayes.core.information import theta_grid
    >>> theta_grid(-2.0, 2.0, points=5)
    array([-2., -1.,  0.,  1.,  2.])
    """
    if int(points) < 2:
        raise SpecError(f"the information grid needs at least 2 points, got {points}")
    return np.linspace(float(lo), float(hi), int(points))


def _as_draws(values: np.ndarray | None, like: np.ndarray, fill: float) -> np.ndarray:
    if values is None:
        return np.full(like.shape, fill)
    return np.atleast_2d(np.asarray(values, dtype="float64"))


def item_curves(
    theta: np.ndarray,
    difficulty: np.ndarray,
    discrimination: np.ndarray | None = None,
    guessing: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-item probability, slope and information on a grid, per draw.

    Parameters
    ----------
    theta
        (grid,) abilities.
    difficulty
        (draw, item) b.
    discrimination
        (draw, item) a; None means 1 (1PL).
    guessing
        (draw, item) c; None means 0.

    Returns
    -------
    tuple of numpy.ndarray
        P, P' and I, each (draw, grid, item).

    Examples
    --------
    A 2PL item's information peaks at a^2 / 4 at theta = b:

    >>> from irtbayes.core.information import item_curves
    >>> p, slope, info = item_curves(np.array([-1.0, 0.0, 1.0]), np.array([[0.0]]), np.array([[2.0]]))
    >>> p[0, :, 0].round(3), info[0, :, 0].round(3)
    (array([0.119, 0.5  , 0.881]), array([0.42, 1.  , 0.42]))
    """
    b = np.atleast_2d(np.asarray(difficulty, dtype="float64"))
    a = _as_draws(discrimination, b, 1.0)
    theta = np.asarray(theta, dtype="float64")
    sigma = irt.probability(theta[None, :, None], b[:, None, :], a[:, None, :])
    a = a[:, None, :]
    if guessing is None:
        q = sigma * (1 - sigma)
        return sigma, a * q, a * a * q
    c = _as_draws(guessing, b, 0.0)[:, None, :]
    p = c + (1 - c) * sigma
    slope = a * (1 - c) * sigma * (1 - sigma)
    with np.errstate(invalid="ignore", divide="ignore"):
        info = np.where(p > 0, a * a * (1 - c) * sigma * sigma * (1 - sigma) / p, 0.0)
    return p, slope, info


def graded_curves(
    theta: np.ndarray, discrimination: np.ndarray, thresholds: np.ndarray, *, kind: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graded items' expected score as a share of the maximum, its slope, and the information, on a grid.

    Parameters
    ----------
    theta
        (grid,) abilities.
    discrimination
        (draw, item) a.
    thresholds
        (draw, item, boundary) b_k, NaN past an item's own.
    kind
        ``"grm"`` or ``"gpcm"``.

    Returns
    -------
    tuple of numpy.ndarray
        E[Y] / (K - 1), its derivative and the Fisher information (:func:`irtbayes.core.irt.graded_information`),
        each (draw, grid, item). For a binary item (K = 2) they are the 2PL's P, P' and I of :func:`item_curves`.

    Examples
    --------
    >>> theta = np.array([-1.0, 0.0, 1.0])
    >>> p, slope, info = graded_curves(theta, np.array([[2.0]]), np.array([[[0.0]]]), kind="grm")
    >>> p2, slope2, info2 = item_curves(theta, np.array([[0.0]]), np.array([[2.0]]))
    >>> bool(np.allclose(p, p2) and np.allclose(slope, slope2) and np.allclose(info, info2))
    True
    """
    a = np.atleast_2d(np.asarray(discrimination, dtype="float64"))[:, None, :]  # (draw, 1, item)
    cuts = np.asarray(thresholds, dtype="float64")[:, None, :, :]  # (draw, 1, item, boundary)
    grid = np.asarray(theta, dtype="float64")[None, :, None]  # (1, grid, 1)
    top = np.count_nonzero(~np.isnan(cuts), axis=-1).astype("float64")  # K - 1
    mean, slope = irt.graded_expected_score_slope(grid, a, cuts, kind=kind)
    info = irt.graded_information(grid, a, cuts, kind=kind)
    return mean / top, slope / top, info


def test_information(
    theta: np.ndarray,
    difficulty: np.ndarray,
    discrimination: np.ndarray | None = None,
    guessing: np.ndarray | None = None,
) -> np.ndarray:
    """Test information I(theta) = sum_i I_i(theta) of one benchmark.

    Returns
    -------
    numpy.ndarray
        (draw, grid).

    Examples
    --------
    >>> from irtbayes.core.information import test_information
    >>> difficulty = np.array([[-1.0, 0.0, 1.0]])  # one draw, three 1PL items
    >>> test_information(np.array([-1.0, 0.0, 1.0]), difficulty).round(3)  # (draw, grid)
    array([[0.552, 0.643, 0.552]])
    """
    return item_curves(theta, difficulty, discrimination, guessing)[2].sum(axis=2)


test_information.__test__ = False  # type: ignore[attr-defined]  # a library function, not a pytest test


def scope_curves(
    theta: np.ndarray,
    difficulty: np.ndarray,
    discrimination: np.ndarray | None = None,
    guessing: np.ndarray | None = None,
    *,
    membership: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Information, SE, expected score and its slope for several benchmarks at once.

    Parameters
    ----------
    theta
        (grid,) abilities.
    difficulty, discrimination, guessing
        (draw, item) draws (see :func:`item_curves`).
    membership
        (item, scope) 0/1 matrix: which items make up each scope; None means one scope of all items.

    Returns
    -------
    dict
        ``info``, ``se``, ``score``, ``slope``: each (draw, grid, scope).

    Notes
    -----
    Items with the same membership row (e.g. the same benchmark and domain) are summed first, in one pass
    over contiguous blocks, and the scopes are then sums of those blocks; the cost is one pass over
    (draw, grid, item) whatever the number of scopes.

    Examples
    --------
    Two scopes: the first two items, and all three:

    >>> from irtbayes.core.information import scope_curves
    >>> membership = np.array([[1, 1], [1, 1], [0, 1]])  # (item, scope)
    >>> curves = scope_curves(np.array([0.0]), np.array([[0.0, 0.0, 2.0]]), membership=membership)
    >>> curves["info"].round(3), curves["score"].round(3)  # (draw, grid, scope)
    (array([[[0.5  , 0.605]]]), array([[[0.5  , 0.373]]]))
    """
    b = np.atleast_2d(np.asarray(difficulty, dtype="float64"))
    member = np.ones((b.shape[1], 1)) if membership is None else np.asarray(membership, dtype="float64")
    return curves_by_blocks(theta, b, discrimination, guessing, blocks=item_blocks(member))


def item_blocks(membership: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group items with identical membership rows, for :func:`curves_by_blocks`.

    Returns
    -------
    tuple
        ``order`` (item,) items sorted by block; ``starts`` (block,) where each block begins in that
        order; ``blocks`` (block, scope) each block's membership row; ``size`` (scope,) items per scope.
    """
    member = np.asarray(membership, dtype="float64")
    blocks, block_of_item = np.unique(member, axis=0, return_inverse=True)
    block_of_item = block_of_item.ravel()
    order = np.argsort(block_of_item, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(block_of_item[order]) != 0])
    return order, starts, blocks, member.sum(axis=0)


def curves_by_blocks(
    theta: np.ndarray,
    difficulty: np.ndarray,
    discrimination: np.ndarray | None,
    guessing: np.ndarray | None,
    *,
    blocks: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    thresholds: np.ndarray | None = None,
    graded: str | None = None,
) -> dict[str, np.ndarray]:
    """:func:`scope_curves` with the item blocks of :func:`item_blocks` computed once by the caller.

    Graded items (``graded`` their kind, ``thresholds`` (draw, item, boundary)) use :func:`graded_curves`.
    """
    order, starts, block_rows, size = blocks

    def reorder(values: np.ndarray | None) -> np.ndarray | None:
        return None if values is None else np.atleast_2d(np.asarray(values, dtype="float64"))[:, order]

    b = reorder(difficulty)
    assert b is not None
    if graded is not None:
        if thresholds is None or discrimination is None:
            raise ValueError("graded curves need the items' thresholds and discriminations")
        cuts = np.asarray(thresholds, dtype="float64")[:, order]
        p, slope, info = graded_curves(theta, reorder(discrimination), cuts, kind=graded)  # type: ignore[arg-type]
    else:
        p, slope, info = item_curves(theta, b, reorder(discrimination), reorder(guessing))
    totals = {
        name: np.add.reduceat(arr, starts, axis=2) @ block_rows
        for name, arr in (("p", p), ("slope", slope), ("info", info))
    }
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "info": totals["info"],
            "se": 1 / np.sqrt(totals["info"]),
            "score": totals["p"] / size,
            "slope": totals["slope"] / size,
        }
