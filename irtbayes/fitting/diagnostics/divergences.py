"""Where a NUTS run's divergent transitions sit: ``divergence_sites(posterior, sample_stats) -> list[Site]``.

A divergent transition is flagged on the draw the sampler kept from that trajectory, and the trajectories that
diverge start in the region whose curvature the step size cannot follow (a funnel's neck, a ridge's narrow end).
So the draws flagged divergent lie, in the parameters that make that region, away from where the other draws lie,
and on one side: for each parameter (an element of a variable) :func:`divergence_sites` compares the mean of its
divergent draws with the mean and sd of all draws, ``t = (mean_divergent - mean_all) / (sd_all / sqrt(n))`` with
``n`` the divergent draws, on the sampler's scale (the log of a positive parameter), and names the parameters of the
largest ``|t|``. The same comparison over a variable of many elements finds some large ``t`` by chance alone (about
``sqrt(2 log m)`` among ``m`` elements), so a site is named only where ``|t|`` passes that bound by
:data:`SITE_MARGIN`; with no parameter past it, none is named and the caller says so.

Example
-------
>>> rng = np.random.default_rng(1)
>>> sd = np.exp(rng.normal(-2.0, 1.0, (4, 500)))
>>> posterior = xr.Dataset({"benchmark_sd": (("chain", "draw"), sd),
...                         "difficulty": (("chain", "draw", "item"), rng.normal(size=(4, 500, 50)))})
>>> diverging = sd > np.quantile(sd, 0.995)  # the divergent draws sit at the top of the sd's tail
>>> stats = xr.Dataset({"diverging": (("chain", "draw"), diverging)})
>>> sites = divergence_sites(posterior, stats)
>>> len(sites), sites[0].label()  # the sd, at its high end; no item's difficulty stands out
(1, 'benchmark_sd (high)')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["BLOCK", "SITE_MARGIN", "Site", "divergence_sites", "remedy_text", "sites_phrase"]

#: A parameter is named as a site where its ``|t|`` passes the bound that chance reaches among its variable's
#: elements, ``sqrt(2 log m)`` (at least 2), by this much.
SITE_MARGIN = 1.0
#: Elements of a variable read at once.
BLOCK = 1024


@dataclass(frozen=True)
class Site:
    """One parameter where divergent draws gather: its label (``variable[index]``) and ``t``, the standardised
    difference of its divergent draws' mean, on the sampler's scale (positive: above the other draws)."""

    name: str
    t: float

    def label(self) -> str:
        """The parameter and the side of its posterior the divergent draws lie on, e.g. ``"difficulty_sd (high)"``."""
        return f"{self.name} ({'high' if self.t > 0 else 'low'})"


def divergence_sites(posterior: xr.Dataset, sample_stats: xr.Dataset, *, top: int = 5) -> list[Site]:
    """The parameters whose divergent draws lie furthest from the rest, at most ``top``, the furthest first (see the
    module docstring); empty when there are no divergent draws or no parameter passes the bound. Large variables are
    read :data:`BLOCK` elements at a time."""
    if "diverging" not in sample_stats:
        return []
    flags = np.asarray(sample_stats["diverging"].values, dtype=bool)
    n = int(flags.sum())
    if n == 0:
        return []
    divergent = flags.reshape(-1)
    found: list[Site] = []
    for da in posterior.data_vars.values():
        if "chain" not in da.dims or "draw" not in da.dims or not np.issubdtype(da.dtype, np.floating):
            continue
        rest = [str(d) for d in da.dims if d not in ("chain", "draw")]
        arr = da.transpose("chain", "draw", *rest).values
        if arr.shape[:2] != flags.shape:
            continue
        flat = arr.reshape(arr.shape[0] * arr.shape[1], -1)
        bound = max(2.0, float(np.sqrt(2.0 * np.log(max(flat.shape[1], 2))))) + SITE_MARGIN
        for at in range(0, flat.shape[1], BLOCK):
            block = flat[:, at : at + BLOCK].astype("float64")
            if not np.all(np.isfinite(block)):
                continue
            positive = np.all(block > 0, axis=0)
            scaled = np.where(positive, np.log(np.where(block > 0, block, 1.0)), block)
            sd = scaled.std(axis=0)
            ok = sd > 0
            t = np.zeros(block.shape[1])
            t[ok] = (scaled[divergent][:, ok].mean(axis=0) - scaled[:, ok].mean(axis=0)) / (sd[ok] / np.sqrt(n))
            found += [Site(_label(da, rest, at + int(k)), float(t[k])) for k in np.flatnonzero(np.abs(t) > bound)]
    found.sort(key=lambda s: -abs(s.t))
    return found[:top]


def _label(da: xr.DataArray, rest: list[str], k: int) -> str:
    if not rest:
        return str(da.name)
    shape = [da.sizes[d] for d in rest]
    pos = np.unravel_index(k, shape)
    parts = [str(da[d].values[p]) if d in da.coords else str(p) for d, p in zip(rest, pos, strict=True)]
    return f"{da.name}[{', '.join(parts)}]"


def sites_phrase(attempt: dict[str, Any]) -> str:
    """Where the divergences of one run of a fit (an entry of ``fit.sampler["remedies"]``) sit, in a phrase."""
    if not attempt.get("sites"):
        return "no parameter stands out among the divergent draws"
    return "the divergent draws sit at " + ", ".join(attempt["sites"])


def remedy_text(remedies: list[dict[str, Any]]) -> str:
    """What the remedies of a fit (``fit.sampler["remedies"]``) did, in one sentence; empty when there were none.

    Examples
    --------
    >>> runs = [{"target_accept": 0.8, "divergences": 9, "draws": 1000, "outcome": "divergences", "sites": []},
    ...         {"target_accept": 0.9, "divergences": 0, "draws": 600, "outcome": "converged", "sites": []}]
    >>> remedy_text(runs)
    'NUTS diverged at target acceptance 0.8 (9 divergent transitions in 1000 draws per chain); sampled again at 0.9, which converged.'
    """
    if not remedies:
        return ""
    first, *rest = remedies
    plural = "s" if first["divergences"] != 1 else ""
    text = (
        f"NUTS diverged at target acceptance {first['target_accept']:g} ({first['divergences']} divergent "
        f"transition{plural} in {first['draws']} draws per chain)"
    )
    before = initial = first.get("centring", "auto")
    for run in rest:
        how = f"at {run['target_accept']:g}"
        centring = run.get("centring", "auto")
        if centring != before:  # a remedy that moved the benchmark levels to other coordinates, or back
            moved = centring.replace("noncentred", "non-centred") if centring != initial else "as first sampled"
            how = f"with the benchmark levels {moved} {how}"
            before = centring
        if run["outcome"] == "converged":
            text += f"; sampled again {how}, which converged"
        else:
            text += f"; sampled again {how}: {run['outcome']}"
            if run["outcome"] == "divergences":
                text += f" ({run['divergences']})"
    last = remedies[-1]
    if "next" in last:
        text += f"; {last['next']}"
    elif last["outcome"] == "divergences":
        text += "; every remedy was tried, " + sites_phrase(last)
    return text + "."
