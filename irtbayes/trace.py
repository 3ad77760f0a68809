"""The complete part of a sampler's trace: draws every chain finished (nutpie pads the rest with NaN)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

__all__ = ["choose_chains", "complete_part", "completed_draws"]


def completed_draws(posterior: xr.Dataset, *, draws: int) -> np.ndarray:
    """Per chain, the draws before the first incomplete one (nutpie pads chains cut short with NaN).

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
    floats = [v for v in posterior.data_vars.values() if np.issubdtype(v.dtype, np.floating)]
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
