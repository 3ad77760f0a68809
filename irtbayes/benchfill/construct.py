"""BenchFill's construct screen: does a candidate measure what its benchmark measures?

One ability dimension: **item fit from the posterior predictive**. The responding systems are split by
posterior mean ability into up to :data:`ITEM_FIT_GROUPS` groups of (nearly) equal size, at least
:data:`ITEM_FIT_MIN_PER_GROUP` systems each. For each of up to ``max_draws`` posterior draws s (evenly
spaced; a candidate's draw s is paired with draw s of the abilities, as in the before/after audit), with
``P_js = c + (1 - c) sigmoid(a (theta_js - b))``, the discrepancy is

    D(y, s) = sum over groups g of (O_g - E_gs)^2 / V_gs,

``O_g`` the sum of the group's responses, ``E_gs`` the sum of ``P_js`` and ``V_gs`` the sum of
``P_js (1 - P_js)``. Replicated responses ``y_rep ~ Bernoulli(P_js)`` give ``D(y_rep, s)``; the posterior
predictive p-value is ``P(D(y_rep) >= D(y))``. A candidate whose responses do not follow the model's curve
(for example right for weak and strong systems and wrong for those between) gets a small p-value and is
rejected as ``"off-construct"`` (poor item fit) when it is below :data:`ITEM_FIT_PPP`. Posterior predictive
p-values are conservative (they pile up near 0.5 for items that fit), so the rate of good items rejected is
below :data:`ITEM_FIT_PPP`. Fractional responses enter as their sums; the replicates are 0/1.

Several ability dimensions (one per domain): **the candidate's own dimension must carry it**. For each
dimension d the sign-free slope ``s_d`` of ``P = sigmoid(s_d theta_d + k)`` is computed on the grid of the
calibration (the systems' ability posteriors on dimension d, each marginalised over ``ability_points``
quantiles), and the candidate is rejected as ``"off-construct"`` when another dimension's slope exceeds its
own with posterior probability at least :data:`CONSTRUCT_PROB` (draws of different dimensions paired at
random). Dimensions of correlated abilities give similar slopes; the rule rejects only when the data say
credibly that the candidate follows another domain's ability more than its own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.benchfill.grid import SAMPLE_DIMS, SLOPE_GRID_POINTS, flatten_samples, grid_slope_draws
from irtbayes.core.errors import DataError
from irtbayes.core.irt import probability
from irtbayes.core.summaries import spaced
from irtbayes.data.responses import ResponseData

__all__ = [
    "CONSTRUCT_PROB",
    "ITEM_FIT_GROUPS",
    "ITEM_FIT_MIN_PER_GROUP",
    "ITEM_FIT_PPP",
    "dimension_check",
    "item_fit",
    "screen_construct",
]

#: Poor item fit: posterior predictive p-value below this.
ITEM_FIT_PPP = 0.01
#: Ability groups of the item-fit discrepancy, and the least systems per group (fewer: fewer groups).
ITEM_FIT_GROUPS = 5
ITEM_FIT_MIN_PER_GROUP = 10
#: Off-construct: another dimension's slope above the own one's with at least this posterior probability.
CONSTRUCT_PROB = 0.9


def _responses(new_data: ResponseData, item: int, subject_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mask = new_data.item_codes == item
    return subject_pos[new_data.subject_codes[mask]], new_data.values[mask].astype("float64")


def _subject_positions(ability: xr.DataArray, new_data: ResponseData) -> np.ndarray:
    subjects = pd.Index([str(s) for s in ability["subject"].values])
    pos = subjects.get_indexer([str(s) for s in new_data.subject_ids])
    if (pos < 0).any():
        missing = [str(s) for s, p in zip(new_data.subject_ids, pos, strict=True) if p < 0]
        raise DataError(f"{new_data.source}: subject(s) {missing[:10]} have no ability draws")
    return pos


def item_fit(
    ability: xr.DataArray,
    items: xr.Dataset,
    new_data: ResponseData,
    *,
    max_draws: int = 400,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Posterior predictive item fit of each candidate (one ability dimension; see the module notes).

    Parameters
    ----------
    ability
        Ability draws (chain, draw, subject).
    items
        The candidates' ``difficulty`` and ``discrimination`` draws (and ``guessing``, 3PL) over (chain, draw,
        item).
    new_data
        The candidates' responses.

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``item_fit_ppp`` (NaN when too few systems answered for two groups),
        ``item_fit_groups``, ``item_fit_discrepancy`` (mean of ``D(y, s)`` over the draws).
    """
    rng = np.random.default_rng(seed)
    theta_all = flatten_samples(ability, "subject")  # (S, subject)
    n_total = theta_all.shape[0]
    rows = spaced(n_total, max_draws)
    subject_pos = _subject_positions(ability, new_data)
    out = []
    for i, item in enumerate(new_data.item_ids):
        params = {
            name: flatten_samples(items[name].sel(item=item))
            for name in ("difficulty", "discrimination", "guessing")
            if name in items
        }
        n_item = len(params["difficulty"])
        who, y = _responses(new_data, i, subject_pos)
        theta = theta_all[np.ix_(rows, who)]  # (s, n_j)
        pick = rows % n_item
        b = params["difficulty"][pick][:, None]
        a = params["discrimination"][pick][:, None]
        c = params["guessing"][pick][:, None] if "guessing" in params else None
        p = probability(theta, b, a, c)
        n_groups = min(ITEM_FIT_GROUPS, len(y) // ITEM_FIT_MIN_PER_GROUP)
        record = {"candidate_id": str(item), "item_fit_groups": n_groups}
        if n_groups < 2:
            out.append(record | {"item_fit_ppp": np.nan, "item_fit_discrepancy": np.nan})
            continue
        order = np.argsort(theta_all[:, who].mean(axis=0), kind="stable")
        group = np.empty(len(y), dtype=int)
        group[order] = np.arange(len(y)) * n_groups // len(y)
        onehot = np.eye(n_groups)[group]  # (n_j, G)
        expected = p @ onehot
        var = np.maximum((p * (1.0 - p)) @ onehot, 1e-12)
        observed = y @ onehot
        replicate = (rng.random(p.shape) < p).astype(float) @ onehot
        d_obs = (((observed[None, :] - expected) ** 2) / var).sum(axis=1)
        d_rep = (((replicate - expected) ** 2) / var).sum(axis=1)
        out.append(
            record | {"item_fit_ppp": float(np.mean(d_rep >= d_obs)), "item_fit_discrepancy": float(d_obs.mean())}
        )
    return pd.DataFrame(out).set_index("candidate_id")


def dimension_check(
    ability: xr.DataArray,
    new_data: ResponseData,
    *,
    ability_points: int = 16,
    n_draws: int = 1000,
    seed: int | None = 0,
) -> pd.DataFrame:
    """The sign-free slope of each candidate on every ability dimension (several dimensions; module notes).

    Parameters
    ----------
    ability
        Ability draws (chain, draw, subject, dim); the dimensions are the domains.
    new_data
        The candidates' responses; each candidate's ``domain`` names its own dimension.

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``own_dimension``, ``strongest_dimension`` (the highest mean slope),
        ``p_other_stronger`` (the largest ``P(s_d > s_own)`` over the other dimensions), and
        ``slope_<dim>_mean`` for every dimension.

    Raises
    ------
    DataError
        A candidate whose domain is not a dimension of the fit.
    """
    rng = np.random.default_rng(seed)
    dims = [str(d) for d in ability["dim"].values]
    probs = (np.arange(ability_points) + 0.5) / ability_points
    quant = np.quantile(flatten_samples(ability, "subject", "dim"), probs, axis=0)  # (Q, subject, dim)
    subject_pos = _subject_positions(ability, new_data)
    domains = new_data.items["domain"] if "domain" in new_data.items.columns else pd.Series(dtype=object)
    out = []
    for i, item in enumerate(new_data.item_ids):
        own = domains.get(item)
        own = None if own is None or pd.isna(own) else str(own)
        if own not in dims:
            raise DataError(
                f"{new_data.source}: candidate '{item}' has domain {own!r}, which is not an ability dimension of "
                f"the fit {dims}"
            )
        who, y = _responses(new_data, i, subject_pos)
        slopes = {
            d: grid_slope_draws(quant[:, who, k].T, y, None, n_draws=n_draws, grid_points=SLOPE_GRID_POINTS, rng=rng)
            for k, d in enumerate(dims)
        }
        mine = slopes[own]
        p_other = max(
            (float(np.mean(rng.permutation(slopes[d]) > mine)) for d in dims if d != own),
            default=0.0,
        )
        record = {
            "candidate_id": str(item),
            "own_dimension": own,
            "strongest_dimension": max(dims, key=lambda d: float(slopes[d].mean())),
            "p_other_stronger": p_other,
        }
        out.append(record | {f"slope_{d}_mean": float(slopes[d].mean()) for d in dims})
    return pd.DataFrame(out).set_index("candidate_id")


def screen_construct(
    ability: xr.DataArray,
    items: xr.Dataset,
    new_data: ResponseData,
    *,
    seed: int | None = 0,
) -> pd.DataFrame:
    """The construct verdict of each answered candidate: item fit (one dimension) or dimension check (several).

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``construct`` (``"on-construct"``, ``"off-construct: ..."`` or ``"not checked:
        ..."``), ``construct_ok`` (bool: False only when off-construct), ``item_fit_ppp`` and
        ``p_other_stronger`` (NaN where not computed), ``strongest_dimension``.
    """
    if not set(SAMPLE_DIMS) <= set(ability.dims):
        raise DataError("screen_construct: ability draws need chain and draw dimensions")
    ids = pd.Index([str(i) for i in new_data.item_ids], name="candidate_id")
    out = pd.DataFrame(index=ids)
    out["item_fit_ppp"] = np.nan
    out["p_other_stronger"] = np.nan
    out["strongest_dimension"] = pd.Series(None, index=ids, dtype=object)
    if "dim" in ability.dims and ability.sizes["dim"] > 1:
        check = dimension_check(ability, new_data, seed=seed)
        out["p_other_stronger"] = check["p_other_stronger"]
        out["strongest_dimension"] = check["strongest_dimension"]
        off = check["p_other_stronger"] >= CONSTRUCT_PROB
        out["construct"] = [
            f"off-construct: follows dimension '{row['strongest_dimension']}' more than its own '{row['own_dimension']}' "
            f"(P = {row['p_other_stronger']:.2f})"
            if bad
            else "on-construct"
            for (_, row), bad in zip(check.iterrows(), off, strict=True)
        ]
        out["construct_ok"] = ~off.to_numpy()
        return out
    missing = [name for name in ("difficulty", "discrimination") if name not in items.data_vars]
    if missing:
        out["construct"] = f"not checked: the posterior has no {' or '.join(missing)} draws for the item-fit check"
        out["construct_ok"] = True
        return out
    one = ability.isel(dim=0, drop=True) if "dim" in ability.dims else ability
    fit = item_fit(one, items, new_data, seed=seed)
    out["item_fit_ppp"] = fit["item_fit_ppp"]
    poor = fit["item_fit_ppp"] < ITEM_FIT_PPP
    out["construct"] = [
        "not checked: too few responses for the item-fit check"
        if np.isnan(ppp)
        else (f"off-construct: poor item fit (posterior predictive p = {ppp:.3f})" if bad else "on-construct")
        for ppp, bad in zip(fit["item_fit_ppp"], poor, strict=True)
    ]
    out["construct_ok"] = ~poor.to_numpy()
    return out
