"""BenchFill calibration: the posterior of new items' parameters, by a full refit or against a fixed bank.

Two ways to put candidates on the bank's scale once the evaluated systems have answered them:

Full concurrent calibration (:func:`calibrate_full`)
    The original responses and the candidates' responses are combined (same subjects) and the fit's own
    model (``fit.spec``, same sampler settings unless overridden) is refitted. Every parameter, old and new,
    is re-estimated. This is the reference; it costs a full MCMC run.

Fixed-bank calibration (:func:`calibrate_fixed`)
    The bank (existing items, abilities, hyperparameters) is held at its posterior, and only the new items'
    parameters are inferred, each item on its own, on a grid (no MCMC). For new item i with responses
    y_ij from subjects j:

    - **likelihood**: each response is marginalised over the responding subject's ability posterior,
      ``p(y_ij | a, b) = E[P(y_ij | theta_j, a, b)]`` over theta_j's posterior draws, with the expectation
      taken over ``ability_points`` equally weighted quantiles of the draws (probabilities (q + 1/2) / Q).
      Subjects are treated as independent given (a, b). Fractional responses enter as
      ``y log p + (1 - y) log(1 - p)``, as in the model.
    - **difficulty prior, ``prior="candidates"`` (default)**: candidates are aimed at an interval (the aim), not drawn
      like the bank's items, so the candidates of one benchmark B form their own benchmark group
      ``"B [candidates]"``, exactly as the full refit treats them: ``b ~ Normal(mu_c, difficulty_sd)`` with
      the group mean ``mu_c`` drawn like a new benchmark's mean in B's domain (``Normal(difficulty_domain,
      difficulty_benchmark_sd)``; without a domain level, ``Normal(difficulty_mu, difficulty_benchmark_sd)``).
      For each of ``prior_draws`` evenly spaced posterior draws s of the bank's hyperparameters, ``mu_c`` is
      drawn from its posterior given all the group's candidates (on a grid over ``b_range``, each
      candidate's likelihood integrated over log a); each candidate's posterior is the equal mixture over s
      of its posterior given ``(mu_c, difficulty_sd)`` of draw s. Without a benchmark level
      (``hierarchy="none"``) the bank's population prior below is used.
    - **log a, and b with ``prior="bank"``**: the posterior predictive of a new item under the fitted
      hierarchy (with ``prior="candidates"``, of an item of the new group ``"B [candidates]"``: a new
      benchmark in B's domain), a mixture over
      ``prior_draws`` evenly spaced posterior draws of the hyperparameters. A candidate whose benchmark is
      in the bank gets ``b ~ Normal(difficulty_benchmark[k], difficulty_sd)`` and
      ``log a ~ Normal(log_discrimination_benchmark[k], log_discrimination_sd)``, exactly the prior the refit
      would give it; a candidate of a benchmark the bank does not hold gets a new benchmark's predictive (the
      benchmark sd added in quadrature, centred on its domain when the domain is known, else on the
      population mean with the domain sd added too); with ``hierarchy="none"`` the population
      ``Normal(difficulty_mu, difficulty_sd)``. A candidate without a benchmark label belongs, like in the
      refit, to the group ``"(unlabelled)"``.
    - **grid**: the posterior is evaluated on a 2-D grid of (b, log a) (``grid_points``; 1PL: b only, with
      the bank's shared discrimination held at its posterior mean in the likelihood and its draws
      resampled for the output; 3PL: a third axis over ``guessing_points`` equal-mass strata of the
      candidate's guessing prior, the model's ``Beta`` centred on chance 1 / n_options when the candidate
      has choices and the fit's priors centre on chance, else on ``guessing_mean``: the likelihood is
      integrated over c, and the ``guessing`` draws follow its posterior). A first, coarser pass (half the points in each direction) covers b in
      ``b_range`` and log a within 5 prior sds of its prior mean; the second pass covers, with
      ``grid_points``, the region where the first pass put all but 1e-6 of the mass on each side, widened
      by one coarse cell (so the grid is fine wherever the posterior is narrow). The first pass spans log a
      over at least +-2.5 around its prior mean.
    - **draws**: grid cells are drawn with their posterior probabilities and jittered uniformly within
      the cell.
    - **sign-free slope** (``slope``): the same likelihood in slope-intercept form,
      ``P = c + (1 - c) sigmoid(s theta + d)``, with the slope s free to be negative under a wide symmetric
      prior ``Normal(0, SLOPE_PRIOR_SD)`` and ``d ~ Normal(0, INTERCEPT_PRIOR_SD)``, on its own two-pass grid
      (``SLOPE_GRID_POINTS``; c integrated as above). The model's discrimination is ``exp(.)`` and cannot
      say that responses fall with ability; this slope can, and the acceptance rule rejects mis-keyed and
      flat candidates on it.

    The approximation ignores what the new item tells about the abilities and hyperparameters (little for
    one item among many) and the correlation between subjects' abilities in one draw (they are
    standardised per draw). ``tests/benchfill/test_benchfill_calibration.py`` checks it against the full refit on
    simulated data.

Both return the new items' posterior as an :class:`xarray.Dataset` with ``difficulty`` and
``discrimination`` (chain, draw, item), ``difficulty_data`` (chain, draw, item: b under a flat prior, with
the same likelihood), ``slope`` (chain, draw, item: the sign-free slope) and ``n_responses`` (item), ready
for :func:`~irtbayes.benchfill.acceptance.decide_all`, which requires both priors to place a candidate in
the bin and the slope to be credibly above its least value. Both paths compute ``difficulty_data`` and
``slope`` on the grid above: the fixed path from the bank's abilities, the full refit from the refit's own
abilities and hyperparameters (the candidates' labels as in the refit). Where they cannot be computed they
are NaN, and the acceptance rule rejects the candidate rather than pass it.

:func:`~irtbayes.benchfill.acceptance.operating_characteristic` measures, on simulated candidates with known
difficulties, how often the acceptance rule run on the fast path accepts items that truly lie in the aim.

Graded banks (GRM, GPCM) are calibrated by the full refit only: it fits each candidate's discrimination and
thresholds with the bank, and the candidate's ``difficulty`` in the returned posterior is its ``location`` (its
``threshold`` draws go with it). ``difficulty_data`` and ``slope`` come from the grid above applied to the
candidate's scores as shares of its maximum, code / (K - 1), entered like fractional responses: the midpoint of
the logistic curve through the shares is where the expected share is one half, the location's definition. One
curve through shares carries less information than the categories, so these checks are conservative. The
fixed-bank grid refuses a graded fit.

The candidates' responses (:func:`load_candidate_responses`, :func:`candidate_response_data`) are read,
checked against the fit and labelled for calibration here too; a graded fit's candidates are read in its own
categories (:meth:`~irtbayes.fitting.result.Fit.category_labels`).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.benchfill.candidates import Candidate, items_table
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
    fixed_benchmark_sd,
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
from irtbayes.core.errors import DataError, FitError, SpecError, listed
from irtbayes.core.irt import jitter_cells, sample_cells
from irtbayes.core.summaries import spaced
from irtbayes.data.responses import ResponseData
from irtbayes.model.spec import GRADED_KINDS

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

__all__ = [
    "FullCalibration",
    "calibrate_fixed",
    "calibrate_full",
    "candidate_response_data",
    "check_new_data",
    "data_alone_and_slope",
    "default_min_discrimination",
    "load_candidate_responses",
    "response_counts",
    "trial_rows",
    "typical_discrimination",
]

log = logging.getLogger(__name__)


# ============================================================================================ full refit
@dataclass(frozen=True)
class FullCalibration:
    """A full refit with the candidates.

    Attributes
    ----------
    posterior
        The new items' ``difficulty``, ``discrimination`` (and ``guessing`` for 3PL), ``difficulty_data``
        and ``slope`` (computed on the grid from the refit's abilities) over (chain, draw, item), and
        ``n_responses`` (item).
    refit
        The refit of the whole bank plus the candidates.
    data
        The combined responses, each candidate under its own benchmark name (what an audit of the extended
        benchmark counts).
    fitted_data
        The combined responses as the refit saw them: with ``prior="candidates"`` each candidate of benchmark
        B in the calibration group ``"B [candidates]"``.

    Examples
    --------
    :func:`calibrate_full` returns one; its ``posterior`` holds the candidates' parameters in the layout
    :func:`~irtbayes.benchfill.acceptance.decide_all` reads, ``refit`` the whole refit and ``data`` the bank's
    responses with the candidates'.

    >>> from irtbayes.benchfill.calibration import FullCalibration
    >>> [f.name for f in __import__("dataclasses").fields(FullCalibration)][:3]
    ['posterior', 'refit', 'data']
    """

    posterior: xr.Dataset
    refit: Fit
    data: ResponseData
    fitted_data: ResponseData | None = None


def calibrate_full(
    fit: Fit,
    data: ResponseData,
    new_data: ResponseData,
    *,
    chains: int | None = None,
    draws: int | None = None,
    tune: int | None = None,
    seed: int | None = None,
    sampler: str | None = None,
    progress: bool = False,
    prior: Prior = "candidates",
) -> FullCalibration:
    """Refit the bank together with the candidates (full concurrent calibration).

    Parameters
    ----------
    fit
        The bank's fit; its resolved spec (``fit.spec``) is refitted.
    data
        The responses ``fit`` was made from (checked by checksum).
    new_data
        The candidates' responses (see :func:`candidate_response_data`), from the fit's subjects.
    chains, draws, tune, sampler
        Sampler settings; each defaults to the fit's own.
    seed
        Seed of the refit (default: the fit's seed + 1).
    progress
        Show the sampler's progress bar.
    prior
        ``"candidates"`` (default): in the refit, the candidates of each benchmark B form their own
        benchmark group ``"B [candidates]"`` in B's domain; ``"bank"``: they join B's group.

    Returns
    -------
    FullCalibration
        ``posterior`` of the new items (chain, draw, item), the ``refit`` and the combined ``data``.

    Raises
    ------
    FitError
        ``data`` is not the data the fit was made from.
    DataError
        Unknown subjects, or candidate ids that are bank items.

    Examples
    --------
    A full refit samples the bank and the candidates together with NUTS (minutes), so this example stops at the
    check made before sampling: a candidate may not reuse a bank item's id.

    >>> from irtbayes.data.responses import ResponseData
    >>> from irtbayes.benchfill.calibration import calibrate_full
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(30, 20, missing=0.0, draws=50)
    >>> new = ResponseData.from_long(pd.DataFrame({"subject": data.subject_ids, "item": "item00003", "response": 1.0}))
    >>> calibrate_full(fit, data, new)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: <data frame>: item(s) ['item00003'] are already items of the fitted bank
    """
    from irtbayes.fitting.fit import fit as fit_model

    _check_full(fit, data, new_data, prior)
    labelled = ResponseData.combine([data, new_data], source=f"{data.source} + {new_data.source}")
    if prior == "candidates" and fit.spec.hierarchy != "none":
        new_data = _in_candidate_groups(new_data)
    combined = ResponseData.combine([data, new_data], source=f"{data.source} + {new_data.source}")
    settings = fit.sampler
    seed = int(settings.get("seed", 0)) + 1 if seed is None else int(seed)
    log.info("refitting %s with %d candidate item(s)", data.source, new_data.n_items)
    refit = fit_model(
        combined,
        fit.spec,
        sampler=sampler or settings.get("name", "nutpie"),  # type: ignore[arg-type]
        chains=int(chains or settings.get("chains", 4)),
        draws=int(draws or settings.get("draws", 1000)),
        tune=int(tune if tune is not None else settings.get("tune", 1000)),
        seed=seed,
        progress=progress,
    )
    posterior = _new_item_posterior(refit, new_data, seed=seed, prior=prior if fit.spec.hierarchy != "none" else "bank")
    return FullCalibration(posterior=posterior, refit=refit, data=labelled, fitted_data=combined)


def _check_full(fit: Fit, data: ResponseData, new_data: ResponseData, prior: str) -> None:
    """Check :func:`calibrate_full`'s inputs: the bank's own data, candidates new to it, a known prior."""
    if not isinstance(data, ResponseData):
        raise DataError(f"calibrate_full: expected the bank's data as ResponseData, got {type(data).__name__}")
    fit.check_data(data, where="calibrate_full")
    check_new_data(fit, new_data)
    check_prior(prior)


def _in_candidate_groups(new_data: ResponseData) -> ResponseData:
    """The candidates' responses with each benchmark B relabelled as its calibration group ``"B [candidates]"``."""
    labels = [candidate_group_label(None if pd.isna(b) else str(b)) for b in new_data.items["benchmark"]]
    return new_data.with_benchmarks(dict(zip(new_data.items.index.astype(str), labels, strict=True)))


def _new_item_posterior(refit: Fit, new_data: ResponseData, *, seed: int, prior: str) -> xr.Dataset:
    """The new items' posterior from the refit, with their response counts, data-alone and slope draws."""
    new_ids = [str(i) for i in new_data.item_ids]
    graded = refit.spec.kind in GRADED_KINDS
    if graded:  # a graded item is placed at its location; its thresholds go with it for the item-fit screen
        posterior = refit.posterior[["location", "discrimination", "threshold"]].sel(item=new_ids)
        posterior = posterior.rename({"location": "difficulty"})
    else:
        names = [n for n in ("difficulty", "discrimination", "guessing") if n in refit.posterior]
        posterior = refit.posterior[names].sel(item=new_ids)
    posterior = posterior.assign(n_responses=("item", response_counts(new_data)))
    b_data, slope = data_alone_and_slope(refit.posterior, refit.spec, refit.subject_ids, new_data, seed=seed)
    shape = (refit.posterior.sizes["chain"], refit.posterior.sizes["draw"], len(new_ids))
    sample = ("chain", "draw", "item")
    posterior = posterior.assign(difficulty_data=(sample, b_data.reshape(shape)), slope=(sample, slope.reshape(shape)))
    posterior.attrs = {
        "method": "full refit",
        "prior": prior,
        "sampler": refit.sampler.get("name"),
        "approximate": int(refit.approximate),
        **({"model_kind": refit.spec.kind, "difficulty": "location"} if graded else {}),
    }
    return posterior


# ============================================================================================= fixed-bank calibration
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
    y_all = new_data.shares  # graded responses enter the share-curve grid as shares of the item's maximum
    trials = new_data.trials if new_data.has_trials else None
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
        y, theta = y_all[mask], quant[:, subject_pos[s_codes[mask]], d].T  # (n_j, Q)
        if trials is not None:
            y, theta = trial_rows(y, trials[mask], theta)
        per_item.append(
            {
                "bench": bench,
                "dom": dom,
                "y": y,
                "theta": theta,
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
                    benchmark_sd=fixed_benchmark_sd(spec, "log_discrimination"),
                ),
            }
        )
    return per_item


def trial_rows(y: np.ndarray, trials: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Responses of k successes of n trials (shares ``y``, ``trials`` n) as n rows each, k of them 1 and the others 0,
    each with its subject's ability quantiles (rows of ``theta``): summed over them, the grids' Bernoulli terms are
    the binomial log-likelihood (less log C(n, k)). A response of one trial stays one row, as it is.

    Examples
    --------
    >>> y, theta = trial_rows(np.array([2 / 3, 0.5]), np.array([3, 1]), np.array([[0.1], [0.2]]))
    >>> y.tolist(), theta.ravel().tolist()
    ([1.0, 1.0, 0.0, 0.5], [0.1, 0.1, 0.1, 0.2])
    """
    reps = np.asarray(trials, dtype="int64")
    position = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    successes = np.repeat(np.round(y * reps), reps)
    many = np.repeat(reps > 1, reps)
    return np.where(many, (position < successes).astype("float64"), np.repeat(y, reps)), np.repeat(theta, reps, axis=0)


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
    >>> from irtbayes.benchfill.calibration import calibrate_fixed
    >>> from irtbayes.benchfill.calibration import candidate_response_data
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
    if fit.spec.kind in GRADED_KINDS:
        raise SpecError(
            f"the fixed-bank calibration's grid is for binary items; this is a {fit.spec.kind.upper()} fit, whose "
            "graded candidates are calibrated by the full refit (mode='full', `--mode full`)"
        )
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
        _pool_difficulty_priors(
            post,
            spec.hierarchy,
            per_item,
            rows=rows,
            b_range=b_range,
            a_fixed=a_fixed,
            rng=rng,
            benchmark_sd=fixed_benchmark_sd(spec, "difficulty"),
        )
    else:
        fixed = fixed_benchmark_sd(spec, "difficulty")
        for info in per_item:
            info["prior_b"] = level_prior(
                post, spec.hierarchy, "difficulty", rows, info["bench"], info["dom"], benchmark_sd=fixed
            )
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
    benchmark_sd: float | None = None,
) -> None:
    """Set ``prior_b`` of each candidate: its group's mean inferred from all the group's candidates
    (``benchmark_sd``: the benchmarks' sd where the model fixes it)."""
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
        centre, group_sd, item_sd = group_mean_prior(post, hierarchy, rows, dom, benchmark_sd=benchmark_sd)
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


# ========================================================================================== the candidates' responses
def _bank_labels(fit: Fit) -> pd.DataFrame:
    cd = fit.constant_data
    frame = pd.DataFrame(
        {
            "benchmark": cd["item_benchmark"].values.astype(str),
            "domain": cd["item_domain"].values.astype(str),
        },
        index=fit.item_ids,
    )
    return frame.where(frame != "", None)


def _response_frame(responses: ResponseData | pd.DataFrame, source: str | None) -> tuple[pd.DataFrame, str]:
    """The long frame of ``responses`` and the name messages give it."""
    if isinstance(responses, ResponseData):
        frame = _as_labels(responses, responses.long_frame())
        name = source or responses.source
        if "condition" in frame.columns and frame["condition"].nunique() > 1:
            raise DataError(
                f"{name}: responses under {frame['condition'].nunique()} conditions; calibrate one condition at a "
                "time (data.subset(conditions=[...]))"
            )
    elif isinstance(responses, pd.DataFrame):
        name = source or "<responses>"
        missing = [c for c in ("subject", "item", "response") if c not in responses.columns]
        if missing:
            raise DataError(f"{name}: missing column(s) {missing}; the columns are {list(map(str, responses.columns))}")
        frame = responses
    else:
        raise DataError(f"expected responses as ResponseData or a data frame, got {type(responses).__name__}")
    return frame, name


def _with_bank_domains(meta: pd.DataFrame, fit: Fit) -> pd.DataFrame:
    """Candidates' item metadata with the bank's domain filled in for a bank benchmark (a contradiction raises)."""
    bank = _bank_labels(fit)
    domain_of = bank.dropna(subset=["benchmark"]).drop_duplicates("benchmark").set_index("benchmark")["domain"]
    for cid, row in meta.iterrows():
        bench = row["benchmark"]
        if bench is None or pd.isna(bench) or bench not in domain_of.index:
            continue
        bank_domain = domain_of[bench]
        bank_domain = None if bank_domain is None or pd.isna(bank_domain) else str(bank_domain)
        if row["domain"] is None or pd.isna(row["domain"]):
            meta.loc[cid, "domain"] = bank_domain
        elif bank_domain is not None and str(row["domain"]) != bank_domain:
            raise DataError(
                f"candidate '{cid}': domain '{row['domain']}' but its benchmark '{bench}' is in domain "
                f"'{bank_domain}' in the fitted bank"
            )
    return meta


def candidate_response_data(
    responses: ResponseData | pd.DataFrame,
    candidates: Sequence[Candidate],
    *,
    fit: Fit,
    source: str | None = None,
) -> ResponseData:
    """Check the candidates' responses against the fit and the candidates, and label them for calibration.

    Parameters
    ----------
    responses
        The candidates' responses: a :class:`~irtbayes.data.responses.ResponseData` (any loader) or a long frame with
        ``subject``, ``item`` (the candidate id) and ``response`` columns, and a ``trials`` column for k successes of
        n trials (the response their share k / n).
    candidates
        The candidates (their ids, labels and choices become the item metadata).
    fit
        The bank's fit: every responding subject must be one of its subjects.
    source
        How messages name the responses (default: the data's own source).

    Returns
    -------
    ResponseData
        The responses with item metadata from the candidates (``benchmark``, ``domain``, ``text``,
        ``answer``, ``n_options``, ...). A candidate whose benchmark is in the bank and that names no domain
        gets the benchmark's domain. Candidates without responses are not in it.

    Raises
    ------
    DataError
        Responses from subjects the fit does not know (all listed), responses to items that are not
        candidates (all listed), a candidate id that is already a bank item, a candidate whose domain
        contradicts its benchmark's domain in the bank, or malformed responses.

    Examples
    --------
    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> from irtbayes.benchfill.calibration import candidate_response_data
    >>> new = candidate_response_data(answers, candidates, fit=fit)
    >>> new.n_subjects, list(new.item_ids)
    (100, ['good', 'mis-keyed'])
    >>> candidate_response_data(answers.assign(subject="stranger"), candidates, fit=fit)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: <responses>: 1 subject(s) are not among the fit's 100 subjects: stranger. Candidates are calibrated against the systems the bank was fitted to; evaluate them with those systems (check the spelling of the names), or fit the bank again with the new systems first
    """
    frame, name = _response_frame(responses, source)
    trials = "trials" if "trials" in frame.columns else None  # k successes of n trials keep their n
    frame = frame[["subject", "item", "response", *([trials] if trials else [])]].copy()
    frame["subject"] = frame["subject"].astype(str).str.strip()
    frame["item"] = frame["item"].astype(str).str.strip()
    by_id = {c.candidate_id: c for c in candidates}
    if len(by_id) != len(candidates):
        ids = [c.candidate_id for c in candidates]
        raise DataError(f"candidate id(s) {sorted({i for i in ids if ids.count(i) > 1})} appear more than once")
    bank_items = set(fit.item_ids)
    clash = sorted(set(by_id) & bank_items)
    if clash:
        raise DataError(f"candidate id(s) {clash[:10]} are already items of the fitted bank; give candidates new ids")
    unknown_items = sorted(set(frame["item"]) - set(by_id))
    if unknown_items:
        raise DataError(
            f"{name}: responses to {len(unknown_items)} item(s) that are not candidates: {listed(unknown_items)}; "
            f"the item column must hold candidate ids (e.g. {list(by_id)[:3]})"
        )
    known_subjects = set(fit.subject_ids)
    unknown_subjects = sorted(set(frame["subject"]) - known_subjects)
    if unknown_subjects:
        raise DataError(
            f"{name}: {len(unknown_subjects)} subject(s) are not among the fit's {len(known_subjects)} subjects: "
            f"{listed(unknown_subjects)}. Candidates are calibrated against the systems the bank was fitted to; "
            "evaluate them with those systems (check the spelling of the names), or fit the bank again with the new systems first"
        )
    answered = [c for c in candidates if c.candidate_id in set(frame["item"])]
    if not answered:
        raise DataError(f"{name}: no responses to any candidate")
    meta = _with_bank_domains(items_table(answered), fit)
    return ResponseData.from_long(frame, trials=trials, items=meta.reset_index(), source=name, **_fit_scale(fit, name))


def _fit_scale(fit: Fit, name: str) -> dict[str, Any]:
    """How candidates' responses are read for ``fit``: a graded fit's own ordered categories (so that a rating
    means what it means in the bank), nothing for a binary fit."""
    if fit.spec.kind not in GRADED_KINDS:
        return {}
    options = fit.read_options()
    if "categories" not in options:
        raise SpecError(
            f"{name}: the {fit.spec.kind.upper()} fit's items do not share one scale of categories, so the "
            "candidates' ratings cannot be read on it; give candidates of a bank whose items share their categories"
        )
    return options


def _as_labels(data: ResponseData, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (``data``'s long frame) with ordinal codes turned back into their category labels."""
    if data.response_kind != "ordinal" or "categories" not in data.items.columns:
        return frame
    from irtbayes.data.columns import CATEGORY_SEPARATOR

    labels = {str(item): str(text).split(CATEGORY_SEPARATOR) for item, text in data.items["categories"].items()}
    frame = frame.copy()
    frame["response"] = [
        np.nan if pd.isna(code) else labels[str(item)][int(code)]
        for item, code in zip(frame["item"], frame["response"], strict=True)
    ]
    return frame


def check_new_data(fit: Fit, new_data: ResponseData) -> None:
    if not isinstance(new_data, ResponseData):
        raise DataError(f"expected the candidates' responses as ResponseData, got {type(new_data).__name__}")
    unknown = new_data.subject_ids.difference(fit.subject_ids)
    if len(unknown):
        raise DataError(
            f"{new_data.source}: {len(unknown)} subject(s) are not among the fit's subjects: {list(unknown[:20])}"
        )
    clash = new_data.item_ids.intersection(fit.item_ids)
    if len(clash):
        raise DataError(f"{new_data.source}: item(s) {list(clash[:10])} are already items of the fitted bank")


def response_counts(new_data: ResponseData) -> np.ndarray:
    return np.bincount(new_data.item_codes, minlength=new_data.n_items).astype("int64")


def _lm_eval_candidate_responses(
    root: Path, candidates: Sequence[Candidate], *, metric: str | None, lm_filter: str | None
) -> pd.DataFrame:
    """Responses of lm-eval logs of the exported task, each item mapped to the candidate whose text it asks.

    The logs are read by :func:`irtbayes.data.io.lm_eval.load_lm_eval` (its item ids, documents and checks). A
    logged document's question is the candidate's text (:func:`~irtbayes.benchfill.export.export_lm_eval`);
    where several candidates share a text, the document's position in the task (``doc_id``) names the one
    exported there.
    """
    from irtbayes.data.io.lm_eval import load_lm_eval

    loaded = load_lm_eval(root, metric=metric, filter=lm_filter)
    by_text: dict[str, list[int]] = {}
    for k, candidate in enumerate(candidates):
        by_text.setdefault(candidate.text.strip(), []).append(k)
    items = loaded.items
    mapping: dict[str, str] = {}
    unknown: dict[str, list[str]] = {}
    for item, row in items.iterrows():
        text = "" if pd.isna(row.get("text")) else str(row["text"]).strip()
        matches = by_text.get(text, [])
        doc_id = pd.to_numeric(row.get("doc_id"), errors="coerce")
        if len(matches) > 1 and pd.notna(doc_id) and int(doc_id) in matches:
            matches = [int(doc_id)]
        if len(matches) == 1:
            mapping[str(item)] = candidates[matches[0]].candidate_id
        else:
            unknown.setdefault(str(row["benchmark"]), []).append(str(item))
    tasks = sorted({str(items.loc[i, "benchmark"]) for i in mapping})
    if not tasks:
        raise DataError(
            f"{root}: no lm-eval document asks the text of a candidate; answer the task written by "
            "`irtbayes benchfill export --format lm-eval` with these candidates"
        )
    stray = {task: ids for task, ids in unknown.items() if task in tasks}
    if stray:
        where = "; ".join(f"task {task}: {', '.join(ids[:5])}" for task, ids in stray.items())
        raise DataError(
            f"{root}: lm-eval documents of a BenchFill task whose question is not the text of exactly one candidate, "
            f"so of unknown items: {where}"
        )
    frame = loaded.long_frame()
    frame = frame.loc[frame["item"].astype(str).isin(mapping)].copy()
    frame["item"] = frame["item"].astype(str).map(mapping)
    if frame.duplicated(["subject", "item"]).any():
        dup = frame.loc[frame.duplicated(["subject", "item"], keep=False)].iloc[0]
        raise DataError(
            f"{root}: subject '{dup['subject']}' answered candidate '{dup['item']}' more than once (in several tasks "
            "or documents); keep one"
        )
    return frame[["subject", "item", "response"]]


def load_candidate_responses(
    path: str | os.PathLike[str],
    candidates: Sequence[Candidate],
    *,
    fit: Fit,
    metric: str | None = None,
    lm_filter: str | None = None,
) -> ResponseData:
    """Read the candidates' responses and check them against the fit and the candidates.

    Parameters
    ----------
    path
        A long CSV/Parquet file ``subject,item,response`` (item = candidate id; blank responses are missing
        cells), or lm-evaluation-harness ``--log_samples`` output of the exported task, read by
        :func:`irtbayes.data.io.lm_eval.load_lm_eval`: each logged document's question names its candidate, the
        subject is the run's model name. Other tasks in the folder are read too (give ``lm_filter`` or
        ``metric`` where they need one) and left out.
    metric, lm_filter
        lm-eval: the per-sample metric and filter to read (see :func:`irtbayes.data.io.lm_eval.load_lm_eval`).

    Returns
    -------
    ResponseData
        See :func:`~irtbayes.benchfill.calibration.candidate_response_data`.

    Raises
    ------
    DataError
        A missing or unreadable path, responses from subjects the fit does not know (listed), responses to
        items that are not candidates (listed).

    Examples
    --------
    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.benchfill.calibration import load_candidate_responses
    >>> path = Path(tempfile.mkdtemp()) / "answers.csv"
    >>> answers.to_csv(path, index=False)
    >>> load_candidate_responses(path, candidates, fit=fit).n_responses
    200
    """
    from irtbayes.data.io.lm_eval import is_lm_eval_folder
    from irtbayes.data.io.tabular import load_long

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    if path.is_dir():
        if not is_lm_eval_folder(path):
            raise DataError(f"{path}: a folder without lm-evaluation-harness samples_*.jsonl files")
        frame = _lm_eval_candidate_responses(path, candidates, metric=metric, lm_filter=lm_filter)
        return candidate_response_data(frame, candidates, fit=fit, source=str(path))
    responses = load_long(path, **_fit_scale(fit, str(path)))
    return candidate_response_data(responses, candidates, fit=fit, source=str(path))
