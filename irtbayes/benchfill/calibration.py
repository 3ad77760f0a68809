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
    - **difficulty prior, ``prior="candidates"`` (default)**: candidates are aimed at a target, not drawn
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

:func:`operating_characteristic` measures, on simulated candidates with known difficulties, how often the
acceptance rule run on the fast path accepts items that truly lie in the target bin.


"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import xarray as xr

from irtbayes.benchfill.fixed import data_alone_and_slope
from irtbayes.benchfill.grid import Prior, candidate_group_label, check_prior
from irtbayes.benchfill.responses import check_new_data, response_counts
from irtbayes.core.errors import DataError
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

__all__ = [
    "FullCalibration",
    "calibrate_full",
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
    meta = new_data.items.copy()
    meta["benchmark"] = [candidate_group_label(None if pd.isna(b) else str(b)) for b in meta["benchmark"]]
    return ResponseData.from_long(new_data.long_frame(), items=meta.reset_index(), source=new_data.source)


def _new_item_posterior(refit: Fit, new_data: ResponseData, *, seed: int, prior: str) -> xr.Dataset:
    """The new items' posterior from the refit, with their response counts, data-alone and slope draws."""
    new_ids = [str(i) for i in new_data.item_ids]
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
    }
    return posterior
