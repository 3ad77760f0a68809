"""The complete part of a sampler's trace: draws every chain finished (nutpie pads the rest with NaN)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from irtbayes.fitting.result import held_dtype

__all__ = [
    "CHECKED_STATS",
    "choose_chains",
    "complete_part",
    "completed_draws",
    "nutpie_trace",
    "read_nutpie_draws",
    "read_stored_draws",
    "sampler_variable",
    "stored_draw_chunk",
]


def completed_draws(posterior: xr.Dataset, *, draws: int) -> np.ndarray:
    """Per chain, the draws before the first incomplete one (nutpie pads chains cut short with NaN).

    Variables with a ``boundary`` dim (a graded model's thresholds) are NaN by construction where an item has
    fewer categories than the most, so they do not mark a draw incomplete; the others do.

    Returns
    -------
    numpy.ndarray
        (chain,) integers; all equal to ``draws`` for a complete run.

    Examples
    --------
    >>> values = np.zeros((3, 10))
    >>> values[1, 6:] = np.nan  # chain 1 stopped after 6 draws, chain 2 after 3
    >>> values[2, 3:] = np.nan
    >>> completed_draws(xr.Dataset({"difficulty_mu": (("chain", "draw"), values)}), draws=10).tolist()
    [10, 6, 3]
    """
    n_chains = int(posterior.sizes.get("chain", 0))
    n_draws = int(posterior.sizes.get("draw", 0))
    floats = [
        v for v in posterior.data_vars.values() if np.issubdtype(v.dtype, np.floating) and "boundary" not in v.dims
    ]
    if n_chains == 0 or n_draws == 0:
        return np.zeros(n_chains, dtype="int64")
    if n_draws == draws and all(bool(np.isfinite(v.isel(draw=-1)).all()) for v in floats):
        return np.full(n_chains, n_draws, dtype="int64")
    complete = np.ones((n_chains, n_draws), dtype=bool)
    for v in floats:
        rest = [d for d in v.dims if d not in ("chain", "draw")]
        finite = np.isfinite(v.transpose("chain", "draw", *rest).values)
        complete &= finite.reshape(n_chains, n_draws, -1).all(axis=2)
    return np.where(complete.all(axis=1), n_draws, complete.argmin(axis=1)).astype("int64")


def choose_chains(done: np.ndarray) -> tuple[list[int], int]:
    """The chains to keep of a run cut short, and their common length: the most draws in all (chains x
    length); on a tie, more chains (r-hat needs at least two).

    Examples
    --------
    >>> choose_chains(np.array([10, 6, 3]))  # 2 x 6 = 12 draws beat 1 x 10 and 3 x 3
    ([0, 1], 6)
    >>> choose_chains(np.array([10, 2, 2]))
    ([0], 10)
    """
    best: tuple[list[int], int] = ([], 0)
    order = np.argsort(-done, kind="stable")
    for k in range(1, len(done) + 1):
        length = int(done[order[k - 1]])
        if length > 0 and k * length >= len(best[0]) * best[1]:
            best = (sorted(int(i) for i in order[:k]), length)
    return best


def complete_part(tree: xr.DataTree, length: int, chains: Sequence[int] | None = None) -> xr.DataTree:
    """The ``posterior`` and ``sample_stats`` of ``tree`` cut to the first ``length`` draws of ``chains`` (all).

    Examples
    --------
    >>> posterior = xr.Dataset({"x": (("chain", "draw"), np.arange(12.0).reshape(3, 4))})
    >>> part = complete_part(xr.DataTree.from_dict({"posterior": posterior}), 2, chains=[0, 2])
    >>> part["posterior"]["x"].values.tolist()
    [[0.0, 1.0], [8.0, 9.0]]
    """
    select: dict[str, object] = {"draw": slice(0, length)}
    if chains is not None:
        select["chain"] = list(chains)
    return xr.DataTree.from_dict(
        {name: tree[name].to_dataset().isel(select) for name in ("posterior", "sample_stats") if name in tree.children}
    )


#: The sample statistics the convergence checks read (:func:`irtbayes.fitting.diagnostics.sampler.check_convergence`).
CHECKED_STATS = ("diverging", "energy", "maxdepth_reached", "n_steps")


def nutpie_trace(sampler: Any) -> tuple[list[Any], list[Any]] | None:
    """A copy of a running nutpie ``sampler``'s Arrow trace so far: (draw batches, statistics batches), one
    per chain; None where the trace is not an Arrow one. Each call copies every draw (seconds at 29 x 12,032
    after a thousand draws per chain), so a caller reading the same paused state twice keeps the first."""
    inner = getattr(sampler, "_sampler", None)
    if inner is None or getattr(sampler, "_compiled_model", None) is None:
        return None
    results = inner.inspect()
    if not results.is_arrow():
        return None
    draw_batches, stat_batches = results.get_arrow_trace()
    return list(draw_batches), list(stat_batches)


def read_nutpie_draws(
    sampler: Any,
    positions: Mapping[str, np.ndarray] | None = None,
    *,
    trace: tuple[list[Any], list[Any]] | None = None,
    most: int | None = None,
) -> xr.DataTree | None:
    """The draws every chain of a running nutpie ``sampler`` has kept so far, read from its Arrow trace.

    Only what the convergence checks read is converted: the posterior part of each chain (not its warm-up),
    cut to the draws every chain has; the model's variables except the sampler's own coordinates (``*_z``,
    ``*_chol``, transformed values ``*__``); the statistics :data:`CHECKED_STATS`; and, with ``positions``
    (dim -> positions along it), only those positions of every variable along those dims. Converting the
    whole trace, warm-up and all (nutpie's ``inspect``), takes seconds at MMLU-Pro's size even early in a run
    (measured on docs/performance.md#sampling-until-converged).

    ``trace``: what :func:`nutpie_trace` returned for this sampler (read now when not given). ``most``: read
    at most this many draws per chain (a check's planned draws: cut later, the arrays would be views of longer
    ones, which every reshape of the fit's draws copies).
    Returns None where the trace is not an Arrow one (the caller then uses ``sampler.inspect()``).
    """
    import pyarrow

    trace = trace if trace is not None else nutpie_trace(sampler)
    if trace is None:
        return None
    draw_batches, stat_batches = trace
    compiled = sampler._compiled_model
    warmup = [
        int(np.asarray(pyarrow.array(s.column("tuning")).to_numpy(zero_copy_only=False)).sum()) for s in stat_batches
    ]
    length = max(0, min(b.num_rows - w for b, w in zip(draw_batches, warmup, strict=True)))
    length = length if most is None else min(length, most)
    coords = {str(name): np.asarray(values) for name, values in compiled.coords.items()}
    positions = dict(positions or {})

    def variable(batches: list[Any], name: str) -> xr.DataArray:
        field = batches[0].schema.field(name)
        meta = field.metadata or {}
        dims = [d for d in meta.get(b"dims", b"").decode("utf-8").split(",") if d]
        shape = [int(k) for k in meta.get(b"shape", b"").decode("utf-8").split(",") if k]
        out: np.ndarray | None = None
        for c, (batch, w) in enumerate(zip(batches, warmup, strict=True)):
            column = pyarrow.array(batch.column(name)).slice(w, length)
            if hasattr(column, "flatten"):
                column = column.flatten()
            values = column.to_numpy(zero_copy_only=False).reshape(length, *shape)
            for axis, dim in enumerate(dims, start=1):
                if dim in positions:
                    values = np.take(values, positions[dim], axis=axis)
            if out is None:  # filled chain by chain, as a fit holds them: no second copy of every chain's draws
                out = np.empty((len(batches), *values.shape), dtype=held_dtype(values.dtype, dims))
            out[c] = values
        kept = {d: coords[d][positions[d]] if d in positions else coords[d] for d in dims if d in coords}
        return xr.DataArray(out, dims=("chain", "draw", *dims), coords=kept)

    names = [n for n in draw_batches[0].schema.names if not sampler_variable(n)]
    stats = [n for n in CHECKED_STATS if n in stat_batches[0].schema.names]
    sample = {"chain": np.arange(len(draw_batches)), "draw": np.arange(length)}
    posterior = xr.Dataset({n: variable(draw_batches, n) for n in names}).assign_coords(sample)
    sample_stats = xr.Dataset({n: variable(stat_batches, n) for n in stats}).assign_coords(sample)
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})


#: About this many bytes of a stored trace are read at a time (:func:`read_stored_draws`).
READ_BLOCK_BYTES = 16 * 2**20


def stored_draw_chunk(var: xr.DataArray) -> int:
    """Draws per chunk of a variable opened from a Zarr store (nutpie writes 16); 1 for one held in memory.

    >>> stored_draw_chunk(xr.DataArray(np.zeros((2, 3)), dims=("chain", "draw")))
    1
    """
    return max(1, int((var.encoding.get("preferred_chunks") or {}).get("draw", 1)))


#: Draws of the ``energy`` statistic read first when looking for where a stored trace's chains stand (doubled
#: at each further read).
_FIRST_BLOCK = 1024


def _finished_draws(energy: xr.DataArray) -> np.ndarray:
    """(chains,) the draws each chain has finished in a stored (chain, draw) ``energy``: up to its first
    non-finite value. Read in blocks from the start, each twice the last, until every chain's end is found: the
    store is sized for the most draws (4 to 10 times the usual, or all that were allowed), nutpie writes 16 draws
    to a chunk, and reading every chunk of the unfinished part cost seconds at every check.

    >>> e = xr.DataArray(np.array([[1.0] * 3000 + [np.nan] * 2000, [1.0] * 5000]), dims=("chain", "draw"))
    >>> _finished_draws(e).tolist()
    [3000, 5000]
    """
    n_chains, n_draws = int(energy.sizes["chain"]), int(energy.sizes["draw"])
    done = np.full(n_chains, n_draws, dtype=np.int64)
    open_ = np.ones(n_chains, dtype=bool)
    start, block = 0, _FIRST_BLOCK
    while start < n_draws and open_.any():
        stop = min(n_draws, start + block)
        part = np.isfinite(np.asarray(energy.isel(draw=slice(start, stop)).values, dtype="float64"))
        for c in np.flatnonzero(open_ & ~part.all(axis=1)):
            done[c] = start + int(part[c].argmin())
            open_[c] = False
        start, block = stop, 2 * block
    return done


def _plain(values: np.ndarray) -> np.ndarray:
    """Labels as NumPy's fixed-width text, as in-memory traces have them (a Zarr store gives variable-width text)."""
    return values.astype(object).astype(str) if values.dtype.kind == "T" else values


def sampler_variable(name: str) -> bool:
    """Whether ``name`` is one of the sampler's own coordinates (raw normals ``*_z``, Cholesky factors ``*_chol``,
    transformed values ``*__``), which no part of irtbayes reads: the readers here leave them out, and
    :mod:`irtbayes.fitting.compiled` does not store them.

    >>> sampler_variable("ability_z"), sampler_variable("difficulty_sd_log__"), sampler_variable("difficulty")
    (True, True, False)
    """
    return name.endswith(("__", "_z", "_chol"))


def read_stored_draws(
    tree: xr.DataTree,
    positions: Mapping[str, np.ndarray] | None = None,
    *,
    every_stat: bool = False,
    cut: bool = True,
    cache: dict[tuple[str, str], np.ndarray] | None = None,
    most: int | None = None,
) -> xr.DataTree:
    """The draws every chain has completed in a trace nutpie writes to a Zarr store (``tree``, opened lazily by
    the sampler's ``inspect``, ``abort`` or ``wait``), read into memory as a fit holds them.

    Unfinished draws are NaN in the store; the completed length is read from the ``energy`` statistic alone,
    so no variable is read in full to find it. Then only the model's variables (not the sampler's coordinates
    ``*_z``, ``*_chol``, ``*__``) are read, cut to that length and, with ``positions`` (dim -> positions), to
    those positions, one chain at a time; item draws in :data:`~irtbayes.fitting.result.DRAWS_DTYPE`. The
    statistics are :data:`CHECKED_STATS`, or all of them with ``every_stat``. ``cut=False`` reads up to the
    longest chain instead, the others padded with NaN as in the store (a run cut short, whose chains
    :func:`choose_chains` picks from).

    ``cache``: the draws an earlier call read from the same store (filled here; give the same dict again), so
    that only the draws since are read. Draws, once written, do not change; the checks of a run until converged
    read the store at 200, 600, 900, ... draws per chain, and reading all of it at each check was a large part of
    what the checks cost at MMLU-Pro's size (measured on
    docs/performance.md#checks-that-read-only-the-new-draws-the-save-beside-the-report-2026-12-05-evening).
    Variables read at ``positions``, and calls with ``cut=False``, neither use nor fill it. The arrays returned
    are the cached ones: do not change them in place. ``most`` (with ``cut``): read at most this many draws per
    chain (as :func:`read_nutpie_draws`).

    Examples
    --------
    >>> energy = np.array([[1.0, 2.0, np.nan], [1.0, 2.0, 3.0]])  # chain 0 has finished 2 draws
    >>> posterior = xr.Dataset(
    ...     {"difficulty": (("chain", "draw", "item"), np.ones((2, 3, 4))), "difficulty_z": (("chain", "draw"), energy)}
    ... )
    >>> stats = xr.Dataset({"energy": (("chain", "draw"), energy), "step_size": (("chain", "draw"), energy)})
    >>> read = read_stored_draws(xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats}))
    >>> dict(read["posterior"].sizes), list(read["posterior"].data_vars), str(read["posterior"]["difficulty"].dtype)
    ({'chain': 2, 'draw': 2, 'item': 4}, ['difficulty'], 'float32')
    >>> list(read["sample_stats"].data_vars)
    ['energy']
    """
    stats = tree["sample_stats"].to_dataset()
    posterior = tree["posterior"].to_dataset()
    if "energy" in stats:
        energy = stats["energy"].transpose("chain", "draw")
        n_chains, n_draws = int(energy.sizes["chain"]), int(energy.sizes["draw"])
        done = _finished_draws(energy)
    else:  # no energy to read the length from: every variable is read to find it
        n_chains, n_draws = int(posterior.sizes.get("chain", 0)), int(posterior.sizes.get("draw", 0))
        done = completed_draws(posterior, draws=n_draws)
    length = int(done.min(initial=n_draws)) if cut else int(done.max(initial=0))
    if cut and most is not None:
        length = min(length, most)
    positions = dict(positions or {})

    def read(group: str, var: xr.DataArray) -> xr.DataArray:
        rest = [str(d) for d in var.dims if d not in ("chain", "draw")]
        chunk = stored_draw_chunk(var)
        cached = cut and cache is not None and not any(d in positions for d in rest)
        var = var.transpose("chain", "draw", *rest).isel(
            {"draw": slice(0, length), **{d: positions[d] for d in rest if d in positions}}
        )
        earlier = cache.get((group, str(var.name))) if cached and cache is not None else None
        if earlier is not None and earlier.shape[1] >= length:
            out = earlier[:, :length]
            first = length
        else:
            out = np.empty(var.shape, dtype=held_dtype(var.dtype, rest))
            first = 0 if earlier is None else earlier.shape[1]
            if first:
                out[:, :first] = earlier
        # a block of whole chunks of draws at a time, of about READ_BLOCK_BYTES: the store's float64 copy of a
        # block is memory the allocator reuses, where a chain's (over a hundred MB at leaderboard sizes) is
        # mapped afresh and faulted in page by page (reading a chain at a time took two to three times as long)
        row = max(1, int(np.prod(var.shape[2:], dtype=np.int64)) * var.dtype.itemsize)
        block = max(chunk, READ_BLOCK_BYTES // row // chunk * chunk)
        for c in range(var.sizes["chain"] if first < length else 0):
            for start in range(first - first % chunk, length, block):  # blocks on the store's chunks
                lo, hi = max(start, first), min(length, start + block)
                out[c, lo:hi] = var.isel(chain=c, draw=slice(lo, hi)).values
        if cached and cache is not None:
            cache[(group, str(var.name))] = out
        return xr.DataArray(out, dims=var.dims, coords={d: _plain(var[d].values) for d in var.dims if d in var.coords})

    names = [str(n) for n in posterior.data_vars if not sampler_variable(str(n))]
    per_draw = [str(n) for n, v in stats.data_vars.items() if {"chain", "draw"} <= set(v.dims)]
    kept_stats = [n for n in per_draw if every_stat or n in CHECKED_STATS]
    sample = {"chain": np.arange(n_chains), "draw": np.arange(length)}
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({n: read("posterior", posterior[n]) for n in names}).assign_coords(sample),
            "sample_stats": xr.Dataset({n: read("sample_stats", stats[n]) for n in kept_stats}).assign_coords(sample),
        }
    )
