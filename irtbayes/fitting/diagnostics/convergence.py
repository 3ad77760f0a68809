"""Rank-normalised r-hat and bulk/tail ESS over a posterior's labelled draws, and which elements a convergence
check leaves out: :func:`rank_diagnostics_datasets` (one Dataset per diagnostic, shaped like the posterior's
variables), :func:`excluded_elements` (elements constant by construction) and :func:`parameter_table` (one row per
checked scalar parameter). The estimators themselves are :mod:`irtbayes.core.chains`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.chains import rank_diagnostics

__all__ = [
    "CONSTANT_RTOL",
    "CORRELATION_SUFFIX",
    "excluded_elements",
    "parameter_table",
    "rank_diagnostics_datasets",
]


#: An element is constant when its range over every draw is at most this share of its magnitude (at least 1):
#: the diagonal of ``chol @ chol.T`` is 1 up to rounding (a range of about 1e-16), which is no parameter.
CONSTANT_RTOL = 1e-12

#: Variables whose last two dims form a correlation matrix (its diagonal is 1 by definition).
CORRELATION_SUFFIX = "_corr"


def excluded_elements(da: xr.DataArray) -> tuple[np.ndarray, dict[str, int]]:
    """Which elements of a posterior variable carry no information to check, and why.

    Three rules, applied to the draws (``da`` has dims ``chain`` and ``draw``):

    - the diagonal of a correlation matrix (a variable named ``*_corr`` whose last two dims have the same
      length) is 1 by definition;
    - an element whose every draw is finite and whose range over the draws is at most :data:`CONSTANT_RTOL`
      times its magnitude (at least 1) is constant (a fixed entry of a Cholesky factor, rounding noise on a
      diagonal). Its r-hat is undefined and its ESS meaningless;
    - in a variable with a ``boundary`` dim (graded models), an element that is NaN in every draw is a
      threshold the item does not have (an item with fewer categories than the bank's most).

    Any other element with NaN or infinite draws is never excluded (its diagnostics are NaN and fail the check).

    Returns
    -------
    (numpy.ndarray, dict)
        A boolean mask shaped like ``da`` without (chain, draw), True where the element is left out; the
        count left out by each rule (``"correlation diagonal"``, ``"constant"``, and ``"absent threshold"``
        when there are any).

    Examples
    --------
    >>> draws = np.concatenate([np.random.default_rng(0).normal(size=(2, 50, 1)), np.ones((2, 50, 1))], axis=-1)
    >>> mask, counts = excluded_elements(xr.DataArray(draws, dims=("chain", "draw", "item"), name="difficulty"))
    >>> mask.tolist(), counts  # the second item never moves
    ([False, True], {'correlation diagonal': 0, 'constant': 1})
    """
    rest = [d for d in da.dims if d not in ("chain", "draw")]
    values = da.transpose("chain", "draw", *rest).to_numpy()
    shape = values.shape[2:]
    excluded = np.zeros(shape, dtype=bool)
    counts = {"correlation diagonal": 0, "constant": 0}
    if str(da.name).endswith(CORRELATION_SUFFIX) and len(shape) >= 2 and shape[-1] == shape[-2]:
        diagonal = np.zeros(shape, dtype=bool)
        idx = np.arange(shape[-1])
        diagonal[..., idx, idx] = True
        excluded |= diagonal
        counts["correlation diagonal"] = int(diagonal.sum())
    if values.shape[0] * values.shape[1] == 0:
        return excluded, counts
    with np.errstate(invalid="ignore"):
        high, low = np.max(values, axis=(0, 1)), np.min(values, axis=(0, 1))  # NaN when any draw is NaN
        finite = np.isfinite(high) & np.isfinite(low)
        scale = np.maximum(1.0, np.maximum(np.abs(high), np.abs(low)))
        constant = finite & (high - low <= CONSTANT_RTOL * scale) & ~excluded
    excluded |= constant
    counts["constant"] = int(constant.sum())
    if "boundary" in rest:
        absent = np.isnan(values).all(axis=(0, 1))
        if absent.any():
            excluded |= absent
            counts["absent threshold"] = int(absent.sum())
    return excluded, counts


def rank_diagnostics_datasets(
    posterior: xr.Dataset, *, ci_prob: float = 0.9
) -> tuple[xr.Dataset, xr.Dataset, xr.Dataset]:
    """Rank-normalised r-hat, bulk ESS and tail ESS of every variable, as Datasets shaped like the
    variables without (chain, draw); the values of ``arviz_stats.rhat`` / ``ess`` (see
    :mod:`irtbayes.fitting.diagnostics.convergence`; tail ESS at the ends of the central ``ci_prob`` interval), computed for all
    parameters of a variable at once. Each result variable carries ``attrs["excluded"]``, the mask of
    :func:`excluded_elements`, which :func:`parameter_table` uses to leave those elements out.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> posterior = xr.Dataset(
    ...     {
    ...         "difficulty": (("chain", "draw", "item"), rng.normal(size=(4, 200, 3))),
    ...         "difficulty_mu": (("chain", "draw"), rng.normal(size=(4, 200))),
    ...     },
    ...     coords={"item": ["a", "b", "c"]},
    ... )
    >>> rhat, bulk, tail = rank_diagnostics_datasets(posterior)
    >>> dict(rhat["difficulty"].sizes), rhat["difficulty_mu"].shape
    ({'item': 3}, ())
    >>> table = parameter_table(rhat, bulk, tail, ["difficulty", "difficulty_mu"])  # one row per parameter
    >>> table[["variable", "index"]].values.tolist()
    [['difficulty', 'a'], ['difficulty', 'b'], ['difficulty', 'c'], ['difficulty_mu', '']]
    >>> table.columns.tolist()
    ['variable', 'index', 'r_hat', 'ess_bulk', 'ess_tail']
    """
    out: tuple[dict[str, xr.DataArray], ...] = ({}, {}, {})
    for name, var in posterior.data_vars.items():
        rest = [d for d in var.dims if d not in ("chain", "draw")]
        values = var.transpose("chain", "draw", *rest).to_numpy()
        coords = {d: var[d] for d in rest if d in var.coords}
        excluded, _ = excluded_elements(var)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            results = rank_diagnostics(values, ci_prob=ci_prob)
        for target, result in zip(out, results, strict=True):
            target[str(name)] = xr.DataArray(result, dims=rest, coords=coords, attrs={"excluded": excluded})
    return xr.Dataset(out[0]), xr.Dataset(out[1]), xr.Dataset(out[2])


def parameter_table(rhat: xr.Dataset, bulk: xr.Dataset, tail: xr.Dataset, names: list[str]) -> pd.DataFrame:
    """One row per checked scalar parameter of ``names``: ``variable``, ``index`` (coordinates as text),
    ``r_hat``, ``ess_bulk``, ``ess_tail``. Elements marked in ``rhat[name].attrs["excluded"]`` (see
    :func:`rank_diagnostics_datasets`, whose example makes one) are left out.
    """
    rows = []
    for name in names:
        frame = pd.DataFrame(
            {
                "r_hat": np.ravel(rhat[name].values),
                "ess_bulk": np.ravel(bulk[name].values),
                "ess_tail": np.ravel(tail[name].values),
            }
        )
        dims = rhat[name].dims
        if dims:
            index = pd.MultiIndex.from_product([rhat[name][d].values for d in dims]).map(
                lambda t: ",".join(map(str, t if isinstance(t, tuple) else (t,)))
            )
            frame.insert(0, "index", np.asarray(index))
        else:
            frame.insert(0, "index", "")
        frame.insert(0, "variable", name)
        excluded = rhat[name].attrs.get("excluded")
        if excluded is not None:
            frame = frame.loc[~np.ravel(excluded)]
        rows.append(frame)
    return (
        pd.concat(rows, ignore_index=True)
        if rows
        else pd.DataFrame(columns=["variable", "index", "r_hat", "ess_bulk", "ess_tail"])
    )
