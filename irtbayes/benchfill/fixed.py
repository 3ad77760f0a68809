"""BenchFill's fixed-bank calibration: each candidate's posterior on a grid, the bank held at its posterior.

See :mod:`irtbayes.benchfill.calibration` for the method.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.benchfill.grid import (
    B_RANGE,
    EDGE_MASS_WARN,
    GRID_POINTS,
    GUESSING_POINTS,
    LOG_A_MIN_HALF_WIDTH,
    MIN_DISCRIMINATION_SHARE,
    POOL_GRID_POINTS,
    SAMPLE_DIMS,
    SLOPE_GRID_POINTS,
    SLOPE_PRIOR_SD,
    Prior,
    candidate_group_label,
    check_prior,
    data_alone_draws,
    flatten_samples,
    grid_slope_draws,
    group_mean_prior,
    guessing_prior,
    level_prior,
    log_normal_mixture,
    loglik_grid,
    pooled_priors,
    two_pass,
)
from irtbayes.benchfill.responses import check_new_data, response_counts
from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.core.irt import jitter_cells, sample_cells
from irtbayes.core.summaries import spaced
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

log = logging.getLogger(__name__)


def typical_discrimination(fit: Fit) -> float:
    """The bank's typical discrimination: the median over items of the posterior mean discrimination.

    A 1PL fit (one shared discrimination) gives that discrimination's posterior mean.
    """
    post = fit.posterior
    if "discrimination" in post:
        means = post["discrimination"].mean(SAMPLE_DIMS).to_numpy().ravel()
    else:
        means = np.array([float(np.exp(flatten_samples(post["log_discrimination_mu"])).mean())])
    means = means[np.isfinite(means)]
    if means.size == 0:
        raise FitError("the fit's discriminations are missing or not finite")
    return float(np.median(means))


def default_min_discrimination(fit: Fit, *, share: float = MIN_DISCRIMINATION_SHARE) -> float:
    """``share`` (default :data:`MIN_DISCRIMINATION_SHARE`) of :func:`typical_discrimination`.

    With the default 0.25, an accepted item's slope is credibly above a quarter of the bank's typical one: its
    peak information (a^2 / 4) is at least 1/16 of a typical item's.
    """
    if not 0 <= share:
        raise SpecError(f"the share of the typical discrimination must be >= 0, got {share}")
    return share * typical_discrimination(fit)


def _candidate_inputs(
    post: xr.Dataset,
    spec: Any,
    subject_ids: pd.Index,
    new_data: ResponseData,
    *,
    ability_points: int,
    rows: np.ndarray,
    group_label: bool,
    guessing_points: int,
) -> list[dict[str, Any]]:
    """Per candidate: labels, responses ``y``, the responding subjects' ability quantiles ``theta`` (n_j, Q),
    its guessing prior (3PL) and its log-discrimination prior (``group_label``: that of its candidates' group)."""
    ability = post["ability"]
    multi = "dim" in ability.dims
    probs = (np.arange(ability_points) + 0.5) / ability_points
    if multi:
        dims = [str(d) for d in ability["dim"].values]
        flat = flatten_samples(ability, "subject", "dim")  # (S, subject, dim)
    else:
        dims = []
        flat = flatten_samples(ability, "subject")[:, :, None]
    quant = np.quantile(flat, probs, axis=0)  # (Q, subject, dim)
    subject_pos = subject_ids.get_indexer(new_data.subject_ids)
    items = new_data.items
    y_all = new_data.values
    s_codes = new_data.subject_codes
    i_codes = new_data.item_codes
    per_item: list[dict[str, Any]] = []
    for i, item in enumerate(new_data.item_ids):
        bench = items["benchmark"].iloc[i]
        dom = items["domain"].iloc[i]
        bench = None if pd.isna(bench) else str(bench)
        dom = None if pd.isna(dom) else str(dom)
        mask = i_codes == i
        if multi:
            if dom not in dims:
                raise DataError(
                    f"{new_data.source}: candidate '{item}' has domain {dom!r}, which is not an ability dimension of "
                    f"the fit {dims}; label it with one of them"
                )
            d = dims.index(dom)
        else:
            d = 0
        guessing = None
        if spec.kind == "3pl":
            n_opt = items["n_options"].iloc[i] if "n_options" in items.columns else None
            guessing = guessing_prior(spec, n_opt, points=guessing_points)
        per_item.append(
            {
                "bench": bench,
                "dom": dom,
                "y": y_all[mask],
                "theta": quant[:, subject_pos[s_codes[mask]], d].T,  # (n_j, Q)
                "guessing": guessing,
                "prior_la": None
                if spec.kind == "1pl"
                else level_prior(
                    post,
                    spec.hierarchy,
                    "log_discrimination",
                    rows,
                    candidate_group_label(bench) if group_label else bench,
                    dom,
                    fixed_sd=spec.priors.log_discrimination_sd_scale,
                ),
            }
        )
    return per_item


def data_alone_and_slope(
    post: xr.Dataset,
    spec: Any,
    subject_ids: pd.Index,
    new_data: ResponseData,
    *,
    seed: int,
    ability_points: int = 16,
    prior_draws: int = 200,
    grid_points: tuple[int, int] = GRID_POINTS,
    b_range: tuple[float, float] = B_RANGE,
) -> tuple[np.ndarray, np.ndarray]:
    """A refit's data-alone difficulty draws and sign-free slope draws of the new items, on the grid.

    Computed as in the fixed-bank path, from the refit's own abilities (``ability_points`` quantiles per
    subject) and hyperparameters; the new items' labels are those of the refit (their candidates' group).
    Returns two (chain * draw, item) arrays; an item whose pieces cannot be computed (the posterior lacks a
    variable the grid needs) gets NaN, which the acceptance rule rejects.
    """
    n_total = _n_samples(post)
    n_items = new_data.n_items
    b_data = np.full((n_total, n_items), np.nan)
    slope = np.full((n_total, n_items), np.nan)
    rng = np.random.default_rng(seed)
    rows = _prior_rows(n_total, prior_draws)
    try:
        per_item = _candidate_inputs(
            post,
            spec,
            subject_ids,
            new_data,
            ability_points=ability_points,
            rows=rows,
            group_label=False,
            guessing_points=GUESSING_POINTS,
        )
        _, a_fixed = _shared_discrimination(post, spec.kind)
    except KeyError as err:
        log.warning("calibrate_full: the refit's posterior lacks %s; the data-alone and slope checks are missing", err)
        return b_data, slope
    nb, na = (int(g) for g in grid_points)
    for i, info in enumerate(per_item):
        theta, y, guessing = info["theta"], info["y"], info["guessing"]
        b_data[:, i] = data_alone_draws(
            theta,
            y,
            info["prior_la"],
            guessing=guessing,
            a_fixed=a_fixed,
            b_range=b_range,
            nb=nb,
            na=na,
            n_draws=n_total,
            rng=rng,
        )
        slope[:, i] = grid_slope_draws(theta, y, guessing, n_draws=n_total, grid_points=SLOPE_GRID_POINTS, rng=rng)
    return b_data, slope


def _check_grid(
    grid_points: tuple[int, int],
    b_range: tuple[float, float],
    ability_points: int,
    prior_draws: int,
    guessing_points: int,
) -> tuple[int, int]:
    nb, na = (int(g) for g in grid_points)
    if nb < 5 or na < 3:
        raise SpecError(f"calibrate_fixed: grid_points must be at least (5, 3), got {grid_points}")
    if ability_points < 1 or prior_draws < 1 or guessing_points < 1:
        raise SpecError("calibrate_fixed: ability_points, prior_draws and guessing_points must be at least 1")
    if not b_range[0] < b_range[1]:
        raise SpecError(f"calibrate_fixed: b_range must be (lo, hi) with lo < hi, got {b_range}")
    return nb, na


def calibrate_fixed(
    fit: Fit,
    new_data: ResponseData,
    *,
    n_draws: int | None = None,
    seed: int | None = 0,
    grid_points: tuple[int, int] = GRID_POINTS,
    b_range: tuple[float, float] = B_RANGE,
    ability_points: int = 16,
    prior_draws: int = 200,
    prior: Prior = "candidates",
    guessing_points: int = GUESSING_POINTS,
) -> xr.Dataset:
    """Posterior of new items' parameters with the bank held at its posterior (no refit; see the module notes).

    Parameters
    ----------
    fit
        The bank's fit.
    new_data
        The candidates' responses (see :func:`candidate_response_data`), from the fit's subjects. Item labels
        (``benchmark``, ``domain``, ``n_options``) choose each item's prior.
    n_draws
        Draws per item (default: as many as the fit has, chains times draws, so that the draws can be paired
        with the bank's).
    seed
        Seed of the draws.
    grid_points
        Points of b and of log a in each of the two passes.
    b_range
        Range of b in the first pass.
    ability_points
        Quantile points per subject that represent its ability posterior in the likelihood.
    prior_draws
        Posterior draws of the hyperparameters (evenly spaced) that make up the prior mixture.
    prior
        ``"candidates"`` (default): the candidates of one benchmark form their own benchmark group, whose
        mean is inferred from all of them; ``"bank"``: each gets the prior of a new item of its benchmark in
        the bank (see the module notes).
    guessing_points
        3PL: strata of each candidate's guessing prior over which the likelihood is integrated.

    Returns
    -------
    xarray.Dataset
        ``difficulty``, ``difficulty_data`` (b under a flat prior, for the acceptance rule), ``slope`` (the
        sign-free slope, for the acceptance rule), ``discrimination`` (and ``guessing``, 3PL) over
        (chain=1, draw, item); ``n_responses`` (item); ``prior_group`` (item: which level of the hierarchy
        gave the prior), ``prior_difficulty_mean`` and ``prior_difficulty_sd`` (item), ``edge_mass`` (item:
        posterior mass in the outermost cells of the final grid). Coords ``item`` are the candidate ids.

    Raises
    ------
    DataError
        Subjects the fit does not know, items already in the bank, or (multidimensional fits) a candidate
        whose domain is not an ability dimension.
    SpecError
        Bad grid settings.

    Examples
    --------
    The bank is held at its posterior; each candidate's (b, log a) posterior is computed on a grid:

    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> from irtbayes.benchfill.fixed import calibrate_fixed
    >>> from irtbayes.benchfill.responses import candidate_response_data
    >>> post = calibrate_fixed(fit, candidate_response_data(answers, candidates, fit=fit), n_draws=400, seed=1)
    >>> (post["slope"] > 0).mean(("chain", "draw")).round(2).to_series().to_dict()  # P(slope > 0); true slopes 1.5, -1.5
    {'good': 1.0, 'mis-keyed': 0.0}
    """
    nb, na, n_draws = _check_fixed(
        fit, new_data, prior, n_draws, grid_points, b_range, ability_points, prior_draws, guessing_points
    )
    rng = np.random.default_rng(seed)
    rows = _prior_rows(_n_samples(fit.posterior), prior_draws)
    a_draws, a_fixed = _shared_discrimination(fit.posterior, fit.spec.kind)
    # each candidate's responses, its log-discrimination prior and its difficulty prior
    pooled = prior == "candidates" and fit.spec.hierarchy != "none"
    per_item = _inputs_with_priors(
        fit, new_data, pooled=pooled, rows=rows, ability_points=ability_points, guessing_points=guessing_points,
        b_range=b_range, a_fixed=a_fixed, rng=rng,
    )  # fmt: skip
    # each candidate's posterior on its own grid
    grids = {"b_range": b_range, "nb": nb, "na": na, "a_fixed": a_fixed}
    columns = _item_posteriors(new_data, per_item, grids=grids, a_draws=a_draws, n_draws=n_draws, rng=rng)
    out = _fixed_dataset(columns, new_data, kind=fit.spec.kind, n_draws=n_draws)
    out.attrs = _fixed_attrs(
        fit.spec.kind, grid_points, ability_points, len(rows), prior if pooled else "bank", guessing_points
    )
    return out


def _n_samples(post: xr.Dataset) -> int:
    """The posterior's number of samples, chains times draws."""
    return int(post.sizes["chain"] * post.sizes["draw"])


def _prior_rows(n_total: int, prior_draws: int) -> np.ndarray:
    """``prior_draws`` evenly spaced rows (at most ``n_total``) of the posterior's samples: the prior mixture's draws."""
    return spaced(n_total, prior_draws)


def _shared_discrimination(post: xr.Dataset, kind: str) -> tuple[np.ndarray | None, float | None]:
    """1PL: the bank's shared discrimination draws and their mean; otherwise ``(None, None)``."""
    if kind != "1pl":
        return None, None
    a_draws = np.exp(flatten_samples(post["log_discrimination_mu"]))
    return a_draws, float(a_draws.mean())


def _check_fixed(
    fit: Fit,
    new_data: ResponseData,
    prior: str,
    n_draws: int | None,
    grid_points: tuple[int, int],
    b_range: tuple[float, float],
    ability_points: int,
    prior_draws: int,
    guessing_points: int,
) -> tuple[int, int, int]:
    """Check :func:`calibrate_fixed`'s inputs; return the grid's points (b, log a) and the draws per item."""
    check_new_data(fit, new_data)
    check_prior(prior)
    nb, na = _check_grid(grid_points, b_range, ability_points, prior_draws, guessing_points)
    n_total = _n_samples(fit.posterior)
    n_draws = n_total if n_draws is None else int(n_draws)
    if n_draws < 1:
        raise SpecError(f"calibrate_fixed: n_draws must be at least 1, got {n_draws}")
    return nb, na, n_draws


def _fixed_attrs(
    kind: str, grid_points: tuple[int, int], ability_points: int, prior_draws: int, prior: str, guessing_points: int
) -> dict[str, Any]:
    """The settings :func:`calibrate_fixed` records in its Dataset's ``attrs``."""
    return {
        "method": "fixed bank (grid)",
        "kind": kind,
        "grid_points": list(grid_points),
        "ability_points": int(ability_points),
        "prior_draws": prior_draws,
        "prior": prior,
        "guessing_points": int(guessing_points) if kind == "3pl" else 0,
        "slope_prior_sd": SLOPE_PRIOR_SD,
        "approximate": 1,
    }


def _inputs_with_priors(
    fit: Fit,
    new_data: ResponseData,
    *,
    pooled: bool,
    rows: np.ndarray,
    ability_points: int,
    guessing_points: int,
    b_range: tuple[float, float],
    a_fixed: float | None,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """:func:`_candidate_inputs` with each candidate's difficulty prior (``prior_b``) added."""
    post, spec = fit.posterior, fit.spec
    per_item = _candidate_inputs(
        post,
        spec,
        fit.subject_ids,
        new_data,
        ability_points=ability_points,
        rows=rows,
        group_label=pooled,
        guessing_points=guessing_points,
    )
    if pooled:
        _pool_difficulty_priors(post, spec.hierarchy, per_item, rows=rows, b_range=b_range, a_fixed=a_fixed, rng=rng)
    else:
        for info in per_item:
            info["prior_b"] = level_prior(post, spec.hierarchy, "difficulty", rows, info["bench"], info["dom"])
    return per_item


def _pool_difficulty_priors(
    post: xr.Dataset,
    hierarchy: str,
    per_item: list[dict[str, Any]],
    *,
    rows: np.ndarray,
    b_range: tuple[float, float],
    a_fixed: float | None,
    rng: np.random.Generator,
) -> None:
    """Set ``prior_b`` of each candidate: its group's mean inferred from all the group's candidates."""
    by_group: dict[tuple[str | None, str | None], list[int]] = {}
    for i, info in enumerate(per_item):
        by_group.setdefault((info["bench"], info["dom"]), []).append(i)
    b_grid = np.linspace(b_range[0], b_range[1], POOL_GRID_POINTS[0])
    for (bench, dom), members in by_group.items():
        loglik = np.empty((len(members), len(b_grid)))
        for r, i in enumerate(members):
            info = per_item[i]
            if info["prior_la"] is None:
                la_grid, log_w = np.log(np.array([a_fixed])), np.zeros(1)
            else:
                half = max(4 * info["prior_la"].total_sd, LOG_A_MIN_HALF_WIDTH)
                la_grid = np.linspace(info["prior_la"].mean - half, info["prior_la"].mean + half, POOL_GRID_POINTS[1])
                log_w = log_normal_mixture(la_grid, info["prior_la"])
            cube = loglik_grid(info["theta"], info["y"], b_grid, np.exp(la_grid), info["guessing"])
            grid = (cube + log_w[None, :, None]).reshape(len(b_grid), -1) - math.log(cube.shape[2])
            top = grid.max(axis=1, keepdims=True)
            loglik[r] = top[:, 0] + np.log(np.exp(grid - top).sum(axis=1))
        centre, group_sd, item_sd = group_mean_prior(post, hierarchy, rows, dom)
        name = f"benchmark '{candidate_group_label(bench)}' ({len(members)} candidate(s) pooled)"
        priors_b = pooled_priors(loglik, b_grid, centre, group_sd, item_sd, name=name, rng=rng)
        for i, p_b in zip(members, priors_b, strict=True):
            per_item[i]["prior_b"] = p_b


def _item_posterior(
    item: str,
    info: dict[str, Any],
    *,
    grids: dict[str, Any],
    a_draws: np.ndarray | None,
    n_draws: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One candidate's draws (difficulty, data-alone difficulty, slope, discrimination, guessing) from its grid."""
    theta, y, guessing = info["theta"], info["y"], info["guessing"]
    prior_b, prior_la = info["prior_b"], info["prior_la"]
    grids = {**grids, "guessing": guessing}
    a_fixed = grids["a_fixed"]
    out: dict[str, Any] = {"group": prior_b.group, "prior_mean": prior_b.mean, "prior_sd": prior_b.total_sd}
    # the same likelihood under a flat prior on b: what the data alone say (see acceptance)
    out["difficulty_data"] = data_alone_draws(theta, y, prior_la, **grids, n_draws=n_draws, rng=rng)
    # the slope with a free sign: does the candidate relate to ability at all, and which way?
    out["slope"] = grid_slope_draws(theta, y, guessing, n_draws=n_draws, grid_points=SLOPE_GRID_POINTS, rng=rng)
    prob, b_grid, la_grid = two_pass(theta, y, prior_b, prior_la, **grids)
    marg_b = prob.sum(axis=(1, 2))
    edge_b = float(marg_b[0] + marg_b[-1])
    edge_a = 0.0
    if a_fixed is None:
        marg_a = prob.sum(axis=(0, 2))
        edge_a = float(marg_a[0] + marg_a[-1])
    out["edge"] = max(edge_b, edge_a)
    if out["edge"] > EDGE_MASS_WARN:
        log.warning(
            "calibrate_fixed: item '%s' has %.3g of its posterior mass in the outermost grid cells of b in "
            "[%.2f, %.2f] and %.3g in those of log a in [%.2f, %.2f]; its interval may be cut short",
            item,
            edge_b,
            b_grid[0],
            b_grid[-1],
            edge_a,
            la_grid[0],
            la_grid[-1],
        )
    ib, ia, ic = np.unravel_index(sample_cells(prob.reshape(1, -1), n_draws, rng)[0], prob.shape)
    out["difficulty"] = jitter_cells(b_grid[None, :], ib[None, :], rng)[0]
    if a_draws is None:
        out["discrimination"] = np.exp(jitter_cells(la_grid[None, :], ia[None, :], rng)[0])
    else:
        out["discrimination"] = a_draws[rng.integers(0, len(a_draws), n_draws)]
    out["guessing"] = guessing.draws(ic, rng) if guessing is not None else np.full(n_draws, np.nan)
    return out


def _item_posteriors(
    new_data: ResponseData,
    per_item: list[dict[str, Any]],
    *,
    grids: dict[str, Any],
    a_draws: np.ndarray | None,
    n_draws: int,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """Each candidate's draws from its own grid (:func:`_item_posterior`), in ``new_data``'s item order."""
    return [
        _item_posterior(str(item), info, grids=grids, a_draws=a_draws, n_draws=n_draws, rng=rng)
        for item, info in zip(new_data.item_ids, per_item, strict=True)
    ]


def _fixed_dataset(columns: list[dict[str, Any]], new_data: ResponseData, *, kind: str, n_draws: int) -> xr.Dataset:
    """The candidates' draws as one Dataset over (chain=1, draw, item), with their prior labels per item."""
    ids = [str(i) for i in new_data.item_ids]
    sample = ("chain", "draw", "item")

    def stack(name: str) -> np.ndarray:
        return np.stack([c[name] for c in columns], axis=1)[None] if columns else np.empty((1, n_draws, 0))

    names = ["difficulty", "difficulty_data", "slope", "discrimination"] + (["guessing"] if kind == "3pl" else [])
    data_vars: dict[str, Any] = {name: (sample, stack(name)) for name in names}
    data_vars |= {
        "n_responses": ("item", response_counts(new_data)),
        "prior_group": ("item", np.array([c["group"] for c in columns], dtype=object).astype(str)),
        "prior_difficulty_mean": ("item", np.array([c["prior_mean"] for c in columns], dtype=float)),
        "prior_difficulty_sd": ("item", np.array([c["prior_sd"] for c in columns], dtype=float)),
        "edge_mass": ("item", np.array([c["edge"] for c in columns], dtype=float)),
    }
    return xr.Dataset(data_vars, coords={"chain": [0], "draw": np.arange(n_draws), "item": ids})
