"""Rank-normalised split r-hat and bulk/tail ESS for many parameters at once.

The same quantities as ``arviz_stats.rhat(method="rank")`` and ``arviz_stats.ess(method="bulk" | "tail")``
(Vehtari, Gelman, Simpson, Carpenter and Bürkner 2021), computed for every parameter of a variable in one
call (one batched sort, then one compiled pass per parameter, on every CPU), much faster than arviz-stats on a
fit with tens of thousands of item parameters (measured on
docs/performance.md#against-a-straightforward-pymc-2pl-scalar-kernel and
docs/performance.md#the-likelihood-kernel-and-the-diagnostics). The definitions follow arviz-stats step by step:

- chains are split in halves (the middle draw dropped when the number of draws is odd);
- rank normalisation: ``z = Φ⁻¹((r - 3/8) / (S + 1/4))`` with average ranks ``r`` over all S split draws;
- r-hat: ``sqrt((B / W + n - 1) / n)`` on the normalised draws and on the normalised folded draws
  ``|x - median|``; the larger of the two;
- ESS: autocovariances (summed lag by lag until Geyer's sequence stops, or by FFT for a parameter that
  needs more than :data:`MAX_LAG` lags), Geyer's initial positive sequence and initial monotone sequence,
  with the autocorrelation time bounded below by ``1 / log10(S)``; bulk on the rank-normalised split draws, tail the
  smaller of the ESS of the indicators ``x <= q_low`` and ``x <= q_high`` (split chains) at the ends of the
  central ``ci_prob`` interval that irtbayes reports, ``low = (1 - ci_prob) / 2`` and ``high = 1 - low``
  (0.05 and 0.95 for the default 0.9): arviz-stats' ``ess(method="tail", prob=(low, high))``. (arviz-stats'
  own default, ``prob=None``, takes the quantiles ``1 - p`` and ``p`` of its ``stats.ci_prob`` setting,
  0.11 and 0.89, which are not the ends of the intervals irtbayes reports.)
- a parameter constant over every draw has ESS equal to the number of draws.
- a parameter with a NaN (or infinite) draw has NaN r-hat and ESS, as in arviz-stats.

The same quantities over labelled draws, and which parameters a fit's convergence check looks at, are in
:mod:`irtbayes.fitting.diagnostics.convergence`. ``tests/core/test_chains.py`` checks every value against
arviz-stats.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from scipy.fft import next_fast_len
from scipy.special import ndtri

from irtbayes.core.jit import Warmup

__all__ = [
    "NUMBA_WARMUP",
    "ess_bulk",
    "ess_tail",
    "rank_diagnostics",
    "rhat_rank",
    "tail_probs",
    "warm_numba_cache",
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


def _nonfinite(x: np.ndarray) -> np.ndarray:
    """Parameters of (parameter, chain, draw) draws with a NaN or infinite draw: their diagnostics are NaN
    (arviz-stats gives NaN for NaN draws; an infinite draw has no rank-normalised value either)."""
    return ~np.isfinite(x).all(axis=(1, 2))


def _split(x: np.ndarray) -> np.ndarray:
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half :]], axis=1)


def _rank_table(size: int) -> np.ndarray:
    """``Φ⁻¹((r - 3/8) / (S + 1/4))`` for S = ``size`` draws at every average rank r (index 2 r)."""
    return ndtri((np.arange(2 * size + 1) / 2 - 3 / 8) / (size - 2 * 3 / 8 + 1))


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
    table = _rank_table(size)
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
    return rank_diagnostics(draws)[0]


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
    return rank_diagnostics(draws)[1]


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
    return rank_diagnostics(draws, ci_prob=ci_prob)[2]


def _array_diagnostics(
    part: np.ndarray, probs: tuple[float, float], several_chains: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r-hat, bulk ESS, tail ESS) of (parameter, chain, draw) draws with array operations: ESS by FFT."""
    s = _split(part)
    z = _z_scale(s)
    bulk = _ess(z)
    in_rows = part.reshape(len(part), -1)
    tail = np.minimum(
        *[_ess(_split((part <= np.quantile(in_rows, q, axis=1)[:, None, None]).astype("float64"))) for q in probs]
    )
    rhat = np.full(len(part), np.nan)
    if several_chains:
        folded = np.abs(s - np.median(s.reshape(len(s), -1), axis=1)[:, None, None])
        r_bulk, r_tail = _rhat(z), _rhat(_z_scale(folded))
        with np.errstate(invalid="ignore"):
            rhat = np.fmax(r_bulk, r_tail)
        rhat[np.isnan(r_bulk) | np.isnan(r_tail)] = np.nan
    bad = _nonfinite(part)
    rhat[bad], bulk[bad], tail[bad] = np.nan, np.nan, np.nan
    return rhat, bulk, tail


# ---------------------------------------------------------------------------------------------- compiled path
# One parameter at a time: its sort order (NumPy's sort, several times faster than numba's) gives the ranks of
# the split draws, both quantiles of the tail indicators, the median and, merging the draws below and above the
# median, the ranks of the folded draws; the ESS sums autocovariances lag by lag and stops where Geyer's
# sequence stops, which for a mixing chain is a few lags instead of an FFT over every lag. A parameter whose
# sequence runs past :data:`MAX_LAG` lags goes to the array path above (FFT), which is cheaper there. Plain
# loops rather than array expressions: they compile in a fraction of the time.

#: Lags the compiled ESS computes directly before a parameter goes to the FFT path.
MAX_LAG = 96
_RESOLUTION = float(np.finfo(float).resolution)  # a range below this is a constant parameter


@numba.njit(cache=True)
def _quantile_sorted(values: np.ndarray, order: np.ndarray, q: float) -> float:
    """``np.quantile(values, q)`` (method "linear", with NumPy's arithmetic) from the sort order of ``values``;
    the compiled twin of :func:`irtbayes.core.summaries.quantiles`, which does the same for many quantities at once."""
    n = len(order)
    virtual = (n - 1) * q
    below = math.floor(virtual)
    gamma = virtual - below
    lo = min(max(int(below), 0), n - 1)
    hi = min(max(int(below) + 1, 0), n - 1)
    a, b = values[order[lo]], values[order[hi]]
    diff = b - a
    return b - diff * (1.0 - gamma) if gamma >= 0.5 else a + diff * gamma


@numba.njit(cache=True)
def _place_ranks(sorted_values: np.ndarray, slots: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """Write ``table[2 r]`` (``r`` the average rank of each run of equal values) to ``out[slots]``."""
    size = len(sorted_values)
    i = 0
    while i < size:
        j = i
        while j + 1 < size and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        value = table[i + j + 2]
        for t in range(i, j + 1):
            out[slots[t]] = value
        i = j + 1


@numba.njit(cache=True)
def _chain_moments(y: np.ndarray, m: int, means: np.ndarray) -> float:
    """Fill ``means`` with the means of the ``m`` chains of flat (chain x draw) ``y``; return the mean over
    chains of their variances (ddof 1)."""
    n = len(y) // m
    within = 0.0
    for j in range(m):
        total = 0.0
        for i in range(j * n, (j + 1) * n):
            total += y[i]
        means[j] = total / n
        squares = 0.0
        for i in range(j * n, (j + 1) * n):
            squares += (y[i] - means[j]) ** 2
        within += squares / (n - 1)
    return within / m


@numba.njit(cache=True)
def _variance(values: np.ndarray) -> float:
    """Variance (ddof 1)."""
    mean = 0.0
    for v in values:
        mean += v
    mean /= len(values)
    squares = 0.0
    for v in values:
        squares += (v - mean) ** 2
    return squares / (len(values) - 1)


@numba.njit(cache=True)
def _rhat_split(z: np.ndarray, m: int, means: np.ndarray) -> float:
    """:func:`_rhat` of one parameter's flat (split chain x draw) values."""
    n = len(z) // m
    within = _chain_moments(z, m, means)
    return math.sqrt((n * _variance(means) / within + n - 1) / n)


@numba.njit(fastmath={"reassoc", "contract"}, cache=True)
def _acov(centred: np.ndarray, m: int, lag: int) -> float:
    """Autocovariance at ``lag`` of flat (chain x draw) centred values, averaged over chains (divisor: draws)."""
    n = len(centred) // m
    total = 0.0
    for j in range(m):
        start = j * n
        for i in range(start, start + n - lag):
            total += centred[i] * centred[i + lag]
    return total / (n * m)


@numba.njit(cache=True)
def _ess_direct(y: np.ndarray, m: int, means: np.ndarray, centred: np.ndarray, max_lag: int) -> tuple[float, bool]:
    """:func:`_ess` of one parameter's flat (split chain x draw) values with autocovariances summed lag by
    lag: (ESS, True), or (NaN, False) when Geyer's sequence needs more than ``max_lag`` lags."""
    size = len(y)
    n = size // m
    if y.max() - y.min() < _RESOLUTION:
        return float(size), True
    if n < 4:
        return np.nan, True
    for j in range(m):
        total = 0.0
        for i in range(j * n, (j + 1) * n):
            total += y[i]
        means[j] = total / n
        for i in range(j * n, (j + 1) * n):
            centred[i] = y[i] - means[j]
    mean_var = _acov(centred, m, 0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + _variance(means)
    if not var_plus > 0.0:
        return np.nan, True
    j_max = max(0, (n - 3) // 2)  # len(range(1, n - 3, 2)): steps of Geyer's initial positive sequence
    pair = 2.0 - (mean_var - _acov(centred, m, 1)) / var_plus  # rho_0 + rho_1, rho_0 = 1
    running_min, kept_sum, even = pair, 0.0, 1.0
    for k in range(1, j_max + 1):
        if 2 * k + 1 > max_lag:
            return np.nan, False
        kept_sum += running_min  # the initial monotone sequence up to the pair before this one
        even = 1.0 - (mean_var - _acov(centred, m, 2 * k)) / var_plus
        pair = even + 1.0 - (mean_var - _acov(centred, m, 2 * k + 1)) / var_plus
        if pair <= 0.0:
            break
        running_min = min(running_min, pair)
    last = even if pair >= 0.0 else max(even, 0.0)
    tau = max(-1.0 + 2.0 * kept_sum + last, 1.0 / math.log10(size))
    return size / tau, True


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _diagnose(
    x: np.ndarray,
    orders: np.ndarray,
    low: float,
    high: float,
    table: np.ndarray,
    max_lag: int,
    out: np.ndarray,
    direct: np.ndarray,
) -> None:
    """(r-hat, bulk ESS, tail ESS) of each parameter of (parameter, chain, draw) ``x`` into ``out`` (3, p),
    given each parameter's sort order of its chain x draw values (``orders``); ``direct[k]`` is set False
    where parameter k must go to the FFT path instead."""
    p, c, n = x.shape
    half = n // 2
    m = 2 * c
    size = m * half
    z, folded_z, below_low, below_high = np.empty(size), np.empty(size), np.empty(size), np.empty(size)
    centred, means = np.empty(size), np.empty(m)
    sorted_values, folded = np.empty(size), np.empty(size)
    slots, folded_slots = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    split_slot = np.full(c * n, -1, dtype=np.int64)  # chain x draw -> position among the split draws (_split)
    for chain in range(c):
        for draw in range(half):
            split_slot[chain * n + draw] = chain * half + draw
            split_slot[chain * n + n - half + draw] = (c + chain) * half + draw
    for k in range(p):
        values, order = x[k].reshape(-1), orders[k]
        direct[k] = True
        finite = True
        for v in values:
            finite = finite and math.isfinite(v)
        if not finite:
            out[0, k], out[1, k], out[2, k] = np.nan, np.nan, np.nan
            continue
        q_low, q_high = _quantile_sorted(values, order, low), _quantile_sorted(values, order, high)
        count = 0
        for flat in order:  # the split draws in sorted order
            slot = split_slot[flat]
            if slot >= 0:
                sorted_values[count], slots[count] = values[flat], slot
                below_low[slot] = 1.0 if values[flat] <= q_low else 0.0
                below_high[slot] = 1.0 if values[flat] <= q_high else 0.0
                count += 1
        _place_ranks(sorted_values, slots, table, z)
        bulk, ok_bulk = _ess_direct(z, m, means, centred, max_lag)
        tail_low, ok_low = _ess_direct(below_low, m, means, centred, max_lag)
        tail_high, ok_high = _ess_direct(below_high, m, means, centred, max_lag)
        if not (ok_bulk and ok_low and ok_high):
            direct[k] = False
            continue
        out[1, k] = bulk
        out[2, k] = np.nan if math.isnan(tail_low) or math.isnan(tail_high) else min(tail_low, tail_high)
        out[0, k] = np.nan
        if c < 2:
            continue
        median = (sorted_values[size // 2 - 1] + sorted_values[size // 2]) / 2
        right = 0
        while right < size and sorted_values[right] < median:
            right += 1
        left = right - 1
        for t in range(size):  # |x - median| in order: merge the draws below (downwards) and above (upwards)
            take_right = left < 0 or (
                right < size and abs(sorted_values[right] - median) <= abs(sorted_values[left] - median)
            )
            source = right if take_right else left
            folded[t], folded_slots[t] = abs(sorted_values[source] - median), slots[source]
            if take_right:
                right += 1
            else:
                left -= 1
        _place_ranks(folded, folded_slots, table, folded_z)
        r_bulk, r_tail = _rhat_split(z, m, means), _rhat_split(folded_z, m, means)
        if not (math.isnan(r_bulk) or math.isnan(r_tail)):
            out[0, k] = max(r_bulk, r_tail)


def rank_diagnostics(draws: np.ndarray, *, ci_prob: float = 0.9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r-hat, bulk ESS, tail ESS) of each parameter of (chain, draw, ...) draws, in chunks of parameters.

    Tail ESS is taken at the ends of the central ``ci_prob`` interval (:func:`tail_probs`). One sort per
    parameter serves the ranks, the quantiles, the median and the folded ranks (a compiled pass over each
    parameter; see the "compiled path" comment). Chunks of :data:`CHUNK_PARAMETERS` parameters are small
    enough to stay in cache, and run on :data:`WORKERS` threads (the sort and the compiled pass release the
    GIL). At MMLU-Pro's size this is several times faster than array operations with FFTs (measured on
    docs/performance.md#the-likelihood-kernel-and-the-diagnostics).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
    >>> rhat, bulk, tail = rank_diagnostics(draws)
    >>> rhat.round(2).tolist(), bool(np.allclose(bulk, ess_bulk(draws))), bool(np.allclose(tail, ess_tail(draws)))
    ([1.0, 1.0, 1.0], True, True)
    """
    probs = tail_probs(ci_prob)
    values = np.asarray(draws)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype("float64")
    if values.ndim < 2:
        raise ValueError(f"expected (chain, draw, ...) draws, got shape {values.shape}")
    shape = values.shape[2:]
    flat = values.reshape(values.shape[0], values.shape[1], -1)  # (chain, draw, parameter)
    p = flat.shape[2]
    rhat, bulk, tail = np.full(p, np.nan), np.full(p, np.nan), np.full(p, np.nan)
    if flat.shape[1] < 4:
        return rhat.reshape(shape), bulk.reshape(shape), tail.reshape(shape)

    several_chains = flat.shape[0] >= 2
    table = _rank_table(2 * (flat.shape[1] // 2) * flat.shape[0])

    def chunk(start: int) -> None:
        # (parameter, chain, draw) for this chunk only: transposing chunk by chunk stays in cache
        # in float64 whatever the draws' precision (a fit holds float32 draws): converted chunk by chunk
        part = np.ascontiguousarray(np.moveaxis(flat[:, :, start : start + CHUNK_PARAMETERS], 2, 0), dtype="float64")
        sl = slice(start, start + len(part))
        out = np.empty((3, len(part)))
        direct = np.ones(len(part), dtype=bool)
        orders = np.argsort(part.reshape(len(part), -1), axis=1)
        _diagnose(part, orders, probs[0], probs[1], table, MAX_LAG, out, direct)
        slow = np.flatnonzero(~direct)
        if len(slow):
            out[:, slow] = _array_diagnostics(part[slow], probs, several_chains)
        rhat[sl], bulk[sl], tail[sl] = out

    starts = range(0, p, CHUNK_PARAMETERS)
    if WORKERS > 1 and len(starts) > 1:
        with ThreadPoolExecutor(min(WORKERS, len(starts))) as pool:
            list(pool.map(chunk, starts))  # list(): re-raise any error
    else:
        for start in starts:
            chunk(start)
    return rhat.reshape(shape), bulk.reshape(shape), tail.reshape(shape)


def warm_numba_cache() -> None:
    """Compile the checks' pass (:func:`_diagnose`) into numba's disk cache, on small draws: :data:`NUMBA_WARMUP`."""
    rank_diagnostics(np.random.default_rng(0).normal(size=(2, 8, 2)))


#: The checks' compiled pass, compiled beside a model on a first run (:func:`irtbayes.core.jit.compile_in_background`;
#: else it compiles at the first check while the chains wait: docs/performance.md#sampling-until-converged).
NUMBA_WARMUP = Warmup("irtbayes.core.chains:warm_numba_cache", (_diagnose,))
