"""Rank-normalised split r-hat and bulk/tail ESS for many parameters at once.

The same quantities as ``arviz_stats.rhat(method="rank")`` and ``arviz_stats.ess(method="bulk" | "tail")``
(Vehtari, Gelman, Simpson, Carpenter and Bürkner 2021), computed with array operations over every
parameter of a variable together instead of one parameter at a time: for a fit with 24,000 item parameters
that is seconds instead of a minute and a half. The definitions follow arviz-stats step by step:

- chains are split in halves (the middle draw dropped when the number of draws is odd);
- rank normalisation: ``z = Φ⁻¹((r - 3/8) / (S + 1/4))`` with average ranks ``r`` over all S split draws;
- r-hat: ``sqrt((B / W + n - 1) / n)`` on the normalised draws and on the normalised folded draws
  ``|x - median|``; the larger of the two;
- ESS: autocovariances by FFT, Geyer's initial positive sequence and initial monotone sequence, with the
  autocorrelation time bounded below by ``1 / log10(S)``; bulk on the rank-normalised split draws, tail the
  smaller of the ESS of the indicators ``x <= q_low`` and ``x <= q_high`` (split chains) at the ends of the
  central ``ci_prob`` interval that irtbayes reports, ``low = (1 - ci_prob) / 2`` and ``high = 1 - low``
  (0.05 and 0.95 for the default 0.9): arviz-stats' ``ess(method="tail", prob=(low, high))``. (arviz-stats'
  own default, ``prob=None``, takes the quantiles ``1 - p`` and ``p`` of its ``stats.ci_prob`` setting,
  0.11 and 0.89, which are not the ends of the intervals irtbayes reports.)
- a parameter constant over every draw has ESS equal to the number of draws.
- a parameter with a NaN (or infinite) draw has NaN r-hat and ESS, as in arviz-stats.

The same quantities over labelled draws: :func:`rank_diagnostics_datasets` (one Dataset per diagnostic,
shaped like the posterior's variables), :func:`excluded_elements` (elements constant by construction, left
out of the checks) and :func:`parameter_table` (one row per checked scalar parameter).

``tests/test_convergence.py`` checks every value against arviz-stats.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import xarray as xr
from scipy.fft import next_fast_len
from scipy.special import ndtri

__all__ = [
    "CONSTANT_RTOL",
    "CORRELATION_SUFFIX",
    "ess_bulk",
    "ess_tail",
    "excluded_elements",
    "parameter_table",
    "rank_diagnostics",
    "rank_diagnostics_datasets",
    "rhat_rank",
    "tail_probs",
]

#: Parameters processed together (bounds the memory of the temporaries: about 10 arrays of this many
#: parameters x draws; 128 x 4,000 draws keeps each in a few MB, in cache).
CHUNK_PARAMETERS = 128
#: Threads over chunks of parameters: the CPUs this process may use.
WORKERS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def tail_probs(ci_prob: float = 0.9) -> tuple[float, float]:
    """The quantiles at the ends of a central ``ci_prob`` interval: ``((1 - ci_prob) / 2, (1 + ci_prob) / 2)``.

    Raises
    ------
    ValueError
        ``ci_prob`` is not strictly between 0 and 1.

    Examples
    --------
    >>> tail_probs(0.9), tail_probs(0.5)
    ((0.05, 0.95), (0.25, 0.75))
    """
    if not 0 < ci_prob < 1:
        raise ValueError(f"ci_prob must be strictly between 0 and 1, got {ci_prob}")
    low = round((1 - float(ci_prob)) / 2, 12)  # 0.05, not 0.04999999999999999: the quantile is exact
    return low, round(1 - low, 12)


def _as_3d(x: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """(chain, draw, ...) -> contiguous (parameter, chain, draw), and the parameter shape."""
    x = np.asarray(x, dtype="float64")
    if x.ndim < 2:
        raise ValueError(f"expected (chain, draw, ...) draws, got shape {x.shape}")
    shape = x.shape[2:]
    return np.ascontiguousarray(np.moveaxis(x.reshape(x.shape[0], x.shape[1], -1), 2, 0)), shape


def _nonfinite(x: np.ndarray) -> np.ndarray:
    """Parameters of (parameter, chain, draw) draws with a NaN or infinite draw: their diagnostics are NaN
    (arviz-stats gives NaN for NaN draws; an infinite draw has no rank-normalised value either)."""
    return ~np.isfinite(x).all(axis=(1, 2))


def _split(x: np.ndarray) -> np.ndarray:
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half :]], axis=1)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalised draws ``Φ⁻¹((r - 3/8) / (S + 1/4))`` of (parameter, chain, draw) draws, with average
    ranks ``r`` over each parameter's S draws (``scipy.stats.rankdata(method="average")``).

    One sort per parameter; tied draws (common in fits stored as float32) get the mean of their positions.
    An average rank is a multiple of 1/2, so every normal quantile comes from one table of 2S values
    instead of an inverse normal per draw. Draws of a parameter with a NaN come out finite here; the callers
    set that parameter's diagnostics to NaN.
    """
    p, c, n = x.shape
    size = c * n
    flat = x.reshape(p, size)
    order = np.argsort(flat, axis=1)
    ordered = np.take_along_axis(flat, order, axis=1)
    starts = np.ones((p, size), dtype=bool)  # where a run of equal draws begins (each row begins one)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=starts[:, 1:])
    starts = starts.ravel()
    first = np.flatnonzero(starts)  # positions in the flattened (p, size) array
    last = np.append(first[1:], p * size) - 1
    run = np.cumsum(starts) - 1
    row_offset = np.repeat(np.arange(p) * size, size)
    twice_rank = first[run] + last[run] - 2 * row_offset + 2  # 2 r: positions are 0-based, ranks 1-based
    table = ndtri((np.arange(2 * size + 1) / 2 - 3 / 8) / (size - 2 * 3 / 8 + 1))
    z = np.empty((p, size))
    np.put_along_axis(z, order, table[twice_rank].reshape(p, size), axis=1)
    return z.reshape(p, c, n)


def _rhat(x: np.ndarray) -> np.ndarray:
    n = x.shape[2]
    chain_mean = x.mean(axis=2)
    within = x.var(axis=2, ddof=1).mean(axis=1)
    between = n * chain_mean.var(axis=1, ddof=1)
    return np.sqrt((between / within + n - 1) / n)


def rhat_rank(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split r-hat of each parameter; ``draws`` is (chain, draw, ...). NaN with < 2 chains
    or < 4 draws.

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(4, 1000, 2))
    >>> rhat_rank(draws).round(2).tolist()
    [1.0, 1.0]
    >>> shifted = draws + np.array([0.0, 0.0, 0.0, 2.0])[:, None, None]  # one chain elsewhere
    >>> bool((rhat_rank(shifted) > 1.3).all()), rhat_rank(draws[:1]).tolist()
    (True, [nan, nan])
    """
    x, shape = _as_3d(draws)
    if x.shape[1] < 2 or x.shape[2] < 4:
        return np.full(shape, np.nan)
    s = _split(x)
    bulk = _rhat(_z_scale(s))
    folded = np.abs(s - np.median(s.reshape(s.shape[0], -1), axis=1)[:, None, None])
    tail = _rhat(_z_scale(folded))
    with np.errstate(invalid="ignore"):
        out = np.fmax(bulk, tail)
    out[np.isnan(bulk) | np.isnan(tail) | _nonfinite(x)] = np.nan
    return out.reshape(shape)


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of each parameter of (parameter, chain, draw) draws (chains already split)."""
    p, c, n = x.shape
    size = c * n
    out = np.full(p, np.nan)
    const = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    out[const] = size
    live = np.flatnonzero(~const)
    if not len(live) or n < 4:
        return out
    y = x[live]
    m = next_fast_len(2 * n)
    centred = y - y.mean(axis=2, keepdims=True)
    spec = np.fft.rfft(centred, n=m, axis=2)
    acov = np.fft.irfft(spec * np.conjugate(spec), n=m, axis=2)[:, :, :n] / n  # (p, c, n)
    mean_acov = acov.mean(axis=1)  # (p, n)
    mean_var = mean_acov[:, 0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if c > 1:
        var_plus = var_plus + y.mean(axis=2).var(axis=1, ddof=1)
    rho = 1.0 - (mean_var[:, None] - mean_acov) / var_plus[:, None]  # (p, n); rho[:, 0] is replaced by 1
    rho[:, 0] = 1.0
    j_max = len(range(1, n - 3, 2))  # iterations of Geyer's initial positive sequence
    k = np.arange(j_max + 1)
    pairs = rho[:, 2 * k] + rho[:, 2 * k + 1]  # (p, j_max + 1): pair k = rho[2k] + rho[2k+1]
    rows = np.arange(len(live))
    if j_max == 0:
        stop = np.zeros(len(live), dtype=np.int64)
        kept_sum = np.zeros(len(live))
    else:
        nonpos = pairs[:, 1:] <= 0
        stop = np.where(nonpos.any(axis=1), nonpos.argmax(axis=1) + 1, j_max)  # J: the last pair computed
        # initial monotone sequence over the pairs before J: each pair at most the one before it
        mono = np.minimum.accumulate(pairs[:, :j_max], axis=1)
        kept = np.arange(j_max)[None, :] < stop[:, None]
        kept_sum = np.where(kept, mono, 0.0).sum(axis=1)
    even = rho[rows, 2 * stop]
    last = np.where(pairs[rows, stop] >= 0, even, np.maximum(even, 0.0))
    tau = np.maximum(-1.0 + 2.0 * kept_sum + last, 1 / np.log10(size))
    ess = size / tau
    ess[np.isnan(rho).any(axis=1)] = np.nan
    out[live] = ess
    return out


def ess_bulk(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS of each parameter; ``draws`` is (chain, draw, ...).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> independent = rng.normal(size=(4, 1000, 2))
    >>> bool((ess_bulk(independent) > 3000).all())  # near the 4000 draws
    True
    >>> ar = np.zeros((4, 1000))  # AR(1) chains with coefficient 0.9: ESS about 4000 * 0.1 / 1.9 = 210
    >>> noise = rng.normal(size=(4, 1000))
    >>> for t in range(1, 1000):
    ...     ar[:, t] = 0.9 * ar[:, t - 1] + noise[:, t]
    >>> 150 < float(ess_bulk(ar)) < 270
    True
    """
    x, shape = _as_3d(draws)
    if x.shape[2] < 4:
        return np.full(shape, np.nan)
    out = _ess(_z_scale(_split(x)))
    out[_nonfinite(x)] = np.nan
    return out.reshape(shape)


def ess_tail(draws: np.ndarray, *, ci_prob: float = 0.9) -> np.ndarray:
    """Tail ESS of each parameter: the smaller of the ESS at the two ends of the central ``ci_prob``
    interval (see :func:`tail_probs`); ``draws`` is (chain, draw, ...).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(4, 1000, 2))
    >>> tail = ess_tail(draws)
    >>> tail.shape, bool((tail > 3000).all())
    ((2,), True)
    >>> ess_tail(draws[:, :3]).tolist()  # fewer than 4 draws per chain
    [nan, nan]
    """
    probs = tail_probs(ci_prob)
    x, shape = _as_3d(draws)
    if x.shape[2] < 4:
        return np.full(shape, np.nan)
    flat = x.reshape(x.shape[0], -1)
    out = []
    for prob in probs:
        q = np.quantile(flat, prob, axis=1)
        out.append(_ess(_split((x <= q[:, None, None]).astype("float64"))))
    tail = np.minimum(*out)  # NaN if either is NaN
    tail[_nonfinite(x)] = np.nan
    return tail.reshape(shape)


def rank_diagnostics(draws: np.ndarray, *, ci_prob: float = 0.9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r-hat, bulk ESS, tail ESS) of each parameter of (chain, draw, ...) draws, in chunks of parameters.

    Tail ESS is taken at the ends of the central ``ci_prob`` interval (:func:`tail_probs`). The
    rank-normalised split draws serve both the bulk r-hat and the bulk ESS, so they are computed once.
    Chunks of :data:`CHUNK_PARAMETERS` parameters are small enough to stay in cache, and run on
    :data:`WORKERS` threads (NumPy's sorts and FFTs release the GIL).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
    >>> rhat, bulk, tail = rank_diagnostics(draws)
    >>> rhat.round(2).tolist(), bool(np.allclose(bulk, ess_bulk(draws))), bool(np.allclose(tail, ess_tail(draws)))
    ([1.0, 1.0, 1.0], True, True)
    """
    probs = tail_probs(ci_prob)
    values = np.asarray(draws, dtype="float64")
    if values.ndim < 2:
        raise ValueError(f"expected (chain, draw, ...) draws, got shape {values.shape}")
    shape = values.shape[2:]
    flat = values.reshape(values.shape[0], values.shape[1], -1)  # (chain, draw, parameter)
    p = flat.shape[2]
    rhat, bulk, tail = np.full(p, np.nan), np.full(p, np.nan), np.full(p, np.nan)
    if flat.shape[1] < 4:
        return rhat.reshape(shape), bulk.reshape(shape), tail.reshape(shape)

    def chunk(start: int) -> None:
        # (parameter, chain, draw) for this chunk only: transposing chunk by chunk stays in cache
        part = np.ascontiguousarray(np.moveaxis(flat[:, :, start : start + CHUNK_PARAMETERS], 2, 0))
        sl = slice(start, start + len(part))
        s = _split(part)
        z = _z_scale(s)
        bulk[sl] = _ess(z)
        in_rows = part.reshape(len(part), -1)
        tail[sl] = np.minimum(
            *[_ess(_split((part <= np.quantile(in_rows, q, axis=1)[:, None, None]).astype("float64"))) for q in probs]
        )
        if flat.shape[0] >= 2:
            folded = np.abs(s - np.median(s.reshape(len(s), -1), axis=1)[:, None, None])
            r_bulk, r_tail = _rhat(z), _rhat(_z_scale(folded))
            with np.errstate(invalid="ignore"):
                r = np.fmax(r_bulk, r_tail)
            r[np.isnan(r_bulk) | np.isnan(r_tail)] = np.nan
            rhat[sl] = r
        bad = _nonfinite(part)
        rhat[sl][bad], bulk[sl][bad], tail[sl][bad] = np.nan, np.nan, np.nan

    starts = range(0, p, CHUNK_PARAMETERS)
    if WORKERS > 1 and len(starts) > 1:
        with ThreadPoolExecutor(min(WORKERS, len(starts))) as pool:
            list(pool.map(chunk, starts))  # list(): re-raise any error
    else:
        for start in starts:
            chunk(start)
    return rhat.reshape(shape), bulk.reshape(shape), tail.reshape(shape)


#: An element is constant when its range over every draw is at most this share of its magnitude (at least 1):
#: the diagonal of ``chol @ chol.T`` is 1 up to rounding (a range of about 1e-16), which is no parameter.
CONSTANT_RTOL = 1e-12

#: Variables whose last two dims form a correlation matrix (its diagonal is 1 by definition).
CORRELATION_SUFFIX = "_corr"


def excluded_elements(da: xr.DataArray) -> tuple[np.ndarray, dict[str, int]]:
    """Which elements of a posterior variable carry no information to check, and why.

    Two rules, applied to the draws (``da`` has dims ``chain`` and ``draw``):

    - the diagonal of a correlation matrix (a variable named ``*_corr`` whose last two dims have the same
      length) is 1 by definition;
    - an element whose every draw is finite and whose range over the draws is at most :data:`CONSTANT_RTOL`
      times its magnitude (at least 1) is constant (a fixed entry of a Cholesky factor, rounding noise on a
      diagonal). Its r-hat is undefined and its ESS meaningless.

    An element with NaN or infinite draws is never excluded (its diagnostics are NaN and fail the check).

    Returns
    -------
    (numpy.ndarray, dict)
        A boolean mask shaped like ``da`` without (chain, draw), True where the element is left out; the
        count left out by each rule (``"correlation diagonal"``, ``"constant"``).

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
    return excluded, counts


def rank_diagnostics_datasets(
    posterior: xr.Dataset, *, ci_prob: float = 0.9
) -> tuple[xr.Dataset, xr.Dataset, xr.Dataset]:
    """Rank-normalised r-hat, bulk ESS and tail ESS of every variable, as Datasets shaped like the
    variables without (chain, draw); the values of ``arviz_stats.rhat`` / ``ess`` (see
    :mod:`irtbayes.convergence`; tail ESS at the ends of the central ``ci_prob`` interval), computed for all
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
