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
    standardised per draw). ``tests/test_benchfill_calibration.py`` checks it against the full refit on
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
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit
from scipy.stats import beta as beta_dist

from irtbayes.benchfill.acceptance import decide_all
from irtbayes.benchfill.candidates import Candidate, items_table
from irtbayes.data import ResponseData
from irtbayes.errors import DataError, FitError, SpecError

if TYPE_CHECKING:
    from irtbayes.fit import Fit

__all__ = [
    "CANDIDATE_GROUP_SUFFIX",
    "FullCalibration",
    "calibrate_fixed",
    "calibrate_full",
    "candidate_group_label",
    "candidate_response_data",
    "operating_characteristic",
    "operating_characteristic_table",
]

log = logging.getLogger(__name__)

#: Which prior candidates' difficulties get (see the module notes).
Prior = Literal["candidates", "bank"]

SAMPLE_DIMS = ("chain", "draw")
#: Default grid: points of b and of log a per pass.
GRID_POINTS = (161, 33)
#: Default range of b in the first pass (ability units; abilities have mean 0 and sd 1).
B_RANGE = (-8.0, 8.0)
#: The first pass covers log a within at least this much of its prior mean (a factor of about 12 either way).
LOG_A_MIN_HALF_WIDTH = 2.5
#: Mass left out on each side when the second pass narrows the grid.
REFINE_TAIL = 1e-6
#: Posterior mass in an outermost grid cell above which a warning says the grid may be too narrow.
EDGE_MASS_WARN = 1e-3
#: 3PL: equal-mass strata of a candidate's guessing prior over which the likelihood is integrated.
GUESSING_POINTS = 11
#: The sign-free slope's prior, Normal(0, SLOPE_PRIOR_SD): wide and symmetric, so its sign comes from the data.
SLOPE_PRIOR_SD = 3.0
#: The intercept's prior in the sign-free model, Normal(0, INTERCEPT_PRIOR_SD), and its first-pass range.
INTERCEPT_PRIOR_SD = 5.0
INTERCEPT_RANGE = (-15.0, 15.0)
#: Points of the intercept and of the slope in each of the two passes of the sign-free grid.
SLOPE_GRID_POINTS = 41
#: Default least slope, as a share of the bank's typical discrimination (see :func:`default_min_discrimination`).
MIN_DISCRIMINATION_SHARE = 0.25


# ============================================================================================ data
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
        The candidates' responses: a :class:`~irtbayes.data.ResponseData` (any loader) or a long frame with
        ``subject``, ``item`` (the candidate id) and ``response`` columns.
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
    """
    if isinstance(responses, ResponseData):
        frame = responses.long_frame()
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
    frame = frame[["subject", "item", "response"]].copy()
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
        shown = ", ".join(unknown_items[:20]) + (
            f" and {len(unknown_items) - 20} more" if len(unknown_items) > 20 else ""
        )
        raise DataError(
            f"{name}: responses to {len(unknown_items)} item(s) that are not candidates: {shown}; the item column "
            f"must hold candidate ids (e.g. {list(by_id)[:3]})"
        )
    known_subjects = set(fit.subject_ids)
    unknown_subjects = sorted(set(frame["subject"]) - known_subjects)
    if unknown_subjects:
        shown = ", ".join(unknown_subjects[:20]) + (
            f" and {len(unknown_subjects) - 20} more" if len(unknown_subjects) > 20 else ""
        )
        raise DataError(
            f"{name}: {len(unknown_subjects)} subject(s) are not among the fit's {len(known_subjects)} subjects: "
            f"{shown}. Candidates are calibrated against the systems the bank was fitted to; evaluate them with "
            "those systems (check the spelling of the names), or fit the bank again with the new systems first"
        )
    answered = [c for c in candidates if c.candidate_id in set(frame["item"])]
    if not answered:
        raise DataError(f"{name}: no responses to any candidate")
    meta = items_table(answered)
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
    return ResponseData.from_long(frame, items=meta.reset_index(), source=name)


def _check_prior(prior: str) -> None:
    if prior not in ("candidates", "bank"):
        raise SpecError(f"prior must be 'candidates' or 'bank', got {prior!r}")


def _check_new_data(fit: Fit, new_data: ResponseData) -> None:
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


def _counts(new_data: ResponseData) -> np.ndarray:
    return np.bincount(new_data.item_codes, minlength=new_data.n_items).astype("int64")


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
        The combined responses it was fitted to.
    """

    posterior: xr.Dataset
    refit: Fit
    data: ResponseData


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
    """
    from irtbayes.fit import fit as fit_model

    if not isinstance(data, ResponseData):
        raise DataError(f"calibrate_full: expected the bank's data as ResponseData, got {type(data).__name__}")
    if data.checksum() != fit.data_checksum:
        raise FitError(
            f"calibrate_full: {data.source} is not the data the fit was made from (checksum {data.checksum()[:12]}, "
            f"the fit records {fit.data_checksum[:12]})"
        )
    _check_new_data(fit, new_data)
    _check_prior(prior)
    if prior == "candidates" and fit.spec.hierarchy != "none":
        meta = new_data.items.copy()
        meta["benchmark"] = [candidate_group_label(None if pd.isna(b) else str(b)) for b in meta["benchmark"]]
        new_data = ResponseData.from_long(new_data.long_frame(), items=meta.reset_index(), source=new_data.source)
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
    new_ids = [str(i) for i in new_data.item_ids]
    names = [n for n in ("difficulty", "discrimination", "guessing") if n in refit.posterior]
    posterior = refit.posterior[names].sel(item=new_ids)
    posterior = posterior.assign(n_responses=("item", _counts(new_data)))
    b_data, slope = _data_alone_and_slope(refit.posterior, refit.spec, refit.subject_ids, new_data, seed=seed)
    shape = (refit.posterior.sizes["chain"], refit.posterior.sizes["draw"], len(new_ids))
    sample = ("chain", "draw", "item")
    posterior = posterior.assign(difficulty_data=(sample, b_data.reshape(shape)), slope=(sample, slope.reshape(shape)))
    posterior.attrs = {
        "method": "full refit",
        "prior": prior if fit.spec.hierarchy != "none" else "bank",
        "sampler": refit.sampler.get("name"),
        "approximate": int(refit.approximate),
    }
    return FullCalibration(posterior=posterior, refit=refit, data=combined)


# ============================================================================================ fixed bank
def _flat(var: xr.DataArray, *rest: str) -> np.ndarray:
    arr = var.transpose(*SAMPLE_DIMS, *rest).values.astype("float64")
    return arr.reshape(-1, *arr.shape[2:])


@dataclass(frozen=True)
class _Prior:
    """A mixture of normals, mean over components s of Normal(centre_s, sd_s), weighted by ``weights``."""

    centre: np.ndarray  # (S,)
    sd: np.ndarray  # (S,)
    group: str
    weights: np.ndarray | None = None  # (S,) summing to 1; None: equal

    @property
    def _w(self) -> np.ndarray:
        return np.full(len(self.centre), 1.0 / len(self.centre)) if self.weights is None else self.weights

    @property
    def mean(self) -> float:
        return float(self._w @ self.centre)

    @property
    def total_sd(self) -> float:
        w = self._w
        return float(np.sqrt(w @ self.sd**2 + w @ (self.centre - self.mean) ** 2))


def _level_prior(
    post: xr.Dataset,
    hierarchy: str,
    prefix: str,
    rows: np.ndarray,
    benchmark: str | None,
    domain: str | None,
    *,
    fixed_sd: float | None = None,
) -> _Prior:
    """The predictive of a new item's ``prefix`` parameter (difficulty or log_discrimination) under the hierarchy.

    ``fixed_sd`` is the item-level sd where the model fixes it instead of sampling it (small banks:
    ``ModelSpec.discrimination_sd="fixed"``), used when the posterior has no ``{prefix}_sd``.
    """
    from irtbayes.model import UNLABELLED

    if f"{prefix}_sd" in post or fixed_sd is None:
        item_sd = _flat(post[f"{prefix}_sd"])[rows]
    else:
        item_sd = np.full(len(rows), float(fixed_sd))
    mu = _flat(post[f"{prefix}_mu"])[rows]
    if hierarchy == "none":
        return _Prior(mu, item_sd, "population")
    bench = benchmark if benchmark is not None else UNLABELLED
    benches = [str(b) for b in post[f"{prefix}_benchmark"]["benchmark"].values]
    if bench in benches:
        centre = _flat(post[f"{prefix}_benchmark"].sel(benchmark=bench))[rows]
        return _Prior(centre, item_sd, f"benchmark '{bench}'")
    var = item_sd**2 + _flat(post[f"{prefix}_benchmark_sd"])[rows] ** 2
    if hierarchy == "benchmark+domain":
        dom = domain if domain is not None else UNLABELLED
        domains = [str(d) for d in post[f"{prefix}_domain"]["domain"].values]
        if dom in domains:
            centre = _flat(post[f"{prefix}_domain"].sel(domain=dom))[rows]
            return _Prior(centre, np.sqrt(var), f"a new benchmark in domain '{dom}'")
        var = var + _flat(post[f"{prefix}_domain_sd"])[rows] ** 2
        return _Prior(mu, np.sqrt(var), "a new benchmark in a new domain")
    return _Prior(mu, np.sqrt(var), "a new benchmark")


#: Suffix of the benchmark label that candidates get in the hierarchy (``prior="candidates"``).
CANDIDATE_GROUP_SUFFIX = "[candidates]"
#: Points of the common b grid (over ``b_range``) and of log a on which the candidates' group mean is inferred.
POOL_GRID_POINTS = (161, 11)


def candidate_group_label(benchmark: str | None) -> str:
    """The benchmark label candidates of ``benchmark`` get in the hierarchy with ``prior="candidates"``."""
    from irtbayes.model import UNLABELLED

    return f"{benchmark if benchmark is not None else UNLABELLED} {CANDIDATE_GROUP_SUFFIX}"


def _group_mean_prior(
    post: xr.Dataset, hierarchy: str, rows: np.ndarray, domain: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre, sd) of a new benchmark's mean difficulty and the item-level sd, per hyperparameter draw."""
    from irtbayes.model import UNLABELLED

    item_sd = _flat(post["difficulty_sd"])[rows]
    mu = _flat(post["difficulty_mu"])[rows]
    var = _flat(post["difficulty_benchmark_sd"])[rows] ** 2
    if hierarchy == "benchmark+domain":
        dom = domain if domain is not None else UNLABELLED
        if dom in [str(d) for d in post["difficulty_domain"]["domain"].values]:
            return _flat(post["difficulty_domain"].sel(domain=dom))[rows], np.sqrt(var), item_sd
        var = var + _flat(post["difficulty_domain_sd"])[rows] ** 2
    return mu, np.sqrt(var), item_sd


def _pooled_priors(
    loglik: np.ndarray,
    b_grid: np.ndarray,
    centre: np.ndarray,
    group_sd: np.ndarray,
    item_sd: np.ndarray,
    *,
    name: str,
    rng: np.random.Generator,
) -> list[_Prior]:
    """Difficulty priors of a group of candidates that share one group mean, inferred from all of them.

    ``loglik`` (item, b) is each candidate's log-likelihood on ``b_grid`` (log a integrated out). For each
    hyperparameter draw s, the group mean is drawn from ``p(mu | s, all candidates) ∝
    Normal(mu; centre_s, group_sd_s) prod_i int L_i(b) Normal(b; mu, item_sd_s) db`` on the grid. Candidate
    i's posterior is then the equal mixture over s of ``p(b | mu_s, item_sd_s, y_i)``, each normalised: a
    mixture prior with component weights proportional to ``1 / Z_is``, ``Z_is = int L_i(b) Normal(b; mu_s,
    item_sd_s) db``, so that no candidate's data count twice.
    """
    db = float(b_grid[1] - b_grid[0])
    lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))  # (n, nb)
    n_s = len(centre)
    mus = np.empty(n_s)
    z = np.empty((n_s, len(lik)))
    for s in range(n_s):
        kernel = np.exp(-0.5 * ((b_grid[:, None] - b_grid[None, :]) / item_sd[s]) ** 2) / item_sd[s]
        m = np.maximum(lik @ kernel, 1e-300)  # (n, mu)
        logpost = np.log(m).sum(axis=0) - 0.5 * ((b_grid - centre[s]) / group_sd[s]) ** 2
        p = np.exp(logpost - logpost.max())
        k = int(rng.choice(len(b_grid), p=p / p.sum()))
        mus[s] = b_grid[k] + (rng.random() - 0.5) * db
        z[s] = m[:, k]
    w = 1.0 / z
    w /= w.sum(axis=0, keepdims=True)
    return [_Prior(mus, item_sd, name, weights=w[:, i]) for i in range(len(lik))]


def _log_normal_mixture(x: np.ndarray, prior: _Prior) -> np.ndarray:
    """log of sum_s w_s Normal(x; centre_s, sd_s), for each x (any shape)."""
    z = (x.reshape(-1, 1) - prior.centre[None, :]) / prior.sd[None, :]
    terms = -0.5 * z**2 - np.log(prior.sd)[None, :] - 0.5 * math.log(2 * math.pi)
    top = terms.max(axis=1, keepdims=True)
    out = top[:, 0] + np.log(np.exp(terms - top) @ prior._w)
    return out.reshape(x.shape)


@dataclass(frozen=True)
class _Guessing:
    """A 3PL candidate's guessing prior ``Beta(alpha, beta)``, integrated over ``points`` equal-mass strata.

    The likelihood is averaged over the strata's midpoints (the prior's quantiles at (k + 1/2) / K, a
    midpoint rule on the prior's probability scale); a draw in stratum k is the prior's quantile at
    (k + u) / K with u uniform, so the draws follow the posterior of the strata and the prior within each.
    With the default 11 strata, on 30 responses that move c from 0.25 to 0.30, the draws' mean is within
    0.005 and their sd within 6% of exact quadrature (``tests/test_benchfill_calibration.py``).
    """

    alpha: float
    beta: float
    points: int

    @property
    def nodes(self) -> np.ndarray:
        return np.asarray(beta_dist.ppf((np.arange(self.points) + 0.5) / self.points, self.alpha, self.beta))

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def draws(self, stratum: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draws given each draw's stratum (n,): the prior's shape within the stratum."""
        u = (stratum + rng.random(len(stratum))) / self.points
        return np.asarray(beta_dist.ppf(np.clip(u, 1e-12, 1 - 1e-12), self.alpha, self.beta))


def _loglik_grid(
    theta: np.ndarray,
    y: np.ndarray,
    b_grid: np.ndarray,
    a_grid: np.ndarray,
    guessing: _Guessing | None,
    *,
    intercept: bool = False,
) -> np.ndarray:
    """(b, a, c) grid of sum_j log p(y_j | a, b, c), p marginalised over the quantile points theta (n_j, Q).

    ``intercept=False``: P = c + (1 - c) sigmoid(a (theta - b)); ``intercept=True`` (the sign-free slope):
    the first grid holds intercepts d and the second slopes s of any sign, P = c + (1 - c) sigmoid(s theta + d).
    The last axis runs over the guessing strata (length 1 without guessing).
    """
    nodes = np.zeros(1) if guessing is None else guessing.nodes
    out = np.empty((len(b_grid), len(a_grid), len(nodes)))
    for k, a in enumerate(a_grid):
        if intercept:
            p0 = expit(a * theta[None, :, :] + b_grid[:, None, None]).mean(axis=2)  # (nb, n_j)
        else:
            p0 = expit(a * (theta[None, :, :] - b_grid[:, None, None])).mean(axis=2)
        for m, c in enumerate(nodes):
            p = c + (1.0 - c) * p0
            p = np.clip(p, 1e-300, None)
            q = np.clip(1.0 - p, 1e-300, None)
            out[:, k, m] = np.log(p) @ y + np.log(q) @ (1.0 - y)
    return out


def _grid_posterior(
    theta: np.ndarray,
    y: np.ndarray,
    b_grid: np.ndarray,
    la_grid: np.ndarray,
    *,
    prior_b: _Prior | None,
    prior_la: _Prior | None,
    a_fixed: float | None,
    guessing: _Guessing | None,
    slope: bool = False,
) -> np.ndarray:
    """Normalised posterior probabilities on the (b, log a, c) grid (nb, na, nc); na = 1 when ``a_fixed``,
    nc = 1 without guessing; ``prior_b=None``: a flat prior on b. ``slope=True``: the grids are of the
    intercept d and the sign-free slope s (no log), with priors ``prior_b`` and ``prior_la``."""
    if slope:
        a_grid = la_grid
    else:
        a_grid = np.array([a_fixed]) if a_fixed is not None else np.exp(la_grid)
    logp = _loglik_grid(theta, y, b_grid, a_grid, guessing, intercept=slope)
    if prior_b is not None:
        logp = logp + _log_normal_mixture(b_grid, prior_b)[:, None, None]
    if prior_la is not None and (slope or a_fixed is None):
        logp = logp + _log_normal_mixture(la_grid, prior_la)[None, :, None]
    logp -= logp.max()
    prob = np.exp(logp)
    return prob / prob.sum()


def _two_pass(
    theta: np.ndarray,
    y: np.ndarray,
    prior_b: _Prior | None,
    prior_la: _Prior | None,
    *,
    b_range: tuple[float, float],
    nb: int,
    na: int,
    a_fixed: float | None,
    guessing: _Guessing | None,
    slope: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid posterior (see the module notes): a coarse pass to find the mass, then a fine one over it.

    Returns the probabilities (nb, na, nc) and the two grids."""
    b_lo, b_hi = b_range
    free_a = slope or a_fixed is None
    if prior_la is not None:
        half = max(5 * prior_la.total_sd, LOG_A_MIN_HALF_WIDTH)
        la_lo, la_hi = prior_la.mean - half, prior_la.mean + half
    else:
        la_lo, la_hi = 0.0, 1.0
    la_range = (la_lo, la_hi)
    for _pass in range(2):
        # the first pass only finds where the mass is: half the points in each direction
        pb, pa = (max(41, nb // 2 + 1), max(9, na // 2 + 1)) if _pass == 0 else (nb, na)
        b_grid = np.linspace(b_lo, b_hi, pb)
        la_grid = np.linspace(la_lo, la_hi, pa) if free_a else np.zeros(1)
        prob = _grid_posterior(
            theta,
            y,
            b_grid,
            la_grid,
            prior_b=prior_b,
            prior_la=prior_la,
            a_fixed=a_fixed,
            guessing=guessing,
            slope=slope,
        )
        if _pass == 0:
            b_lo, b_hi = _narrowed(b_grid, prob.sum(axis=(1, 2)), lo=b_range[0], hi=b_range[1])
            if free_a:
                la_lo, la_hi = _narrowed(la_grid, prob.sum(axis=(0, 2)), lo=la_range[0], hi=la_range[1])
    return prob, b_grid, la_grid


def _narrowed(grid: np.ndarray, marginal: np.ndarray, *, lo: float, hi: float) -> tuple[float, float]:
    cdf = np.cumsum(marginal)
    first = int(np.searchsorted(cdf, REFINE_TAIL))
    last = int(np.searchsorted(cdf, 1.0 - REFINE_TAIL))
    step = grid[1] - grid[0] if len(grid) > 1 else 1.0
    new_lo = max(lo, grid[max(first, 0)] - step)
    new_hi = min(hi, grid[min(last, len(grid) - 1)] + step)
    return new_lo, new_hi


def _guessing_prior(spec: Any, n_options: Any, *, points: int) -> _Guessing:
    """The model's guessing prior for one item (centred on chance when the item gives its options)."""
    priors = spec.priors
    mean = float(priors.guessing_mean)
    if priors.guessing_chance and n_options is not None and not pd.isna(n_options) and int(n_options) >= 2:
        mean = 1.0 / int(n_options)
    kappa = float(priors.guessing_concentration)
    return _Guessing(mean * kappa, (1.0 - mean) * kappa, int(points))


def _slope_draws(
    theta: np.ndarray,
    y: np.ndarray,
    guessing: _Guessing | None,
    *,
    n_draws: int,
    grid_points: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of the sign-free slope s of ``P = c + (1 - c) sigmoid(s theta + d)`` (see the module notes)."""
    prior_s = _Prior(np.zeros(1), np.array([SLOPE_PRIOR_SD]), "slope")
    prior_d = _Prior(np.zeros(1), np.array([INTERCEPT_PRIOR_SD]), "intercept")
    prob, _, s_grid = _two_pass(
        theta,
        y,
        prior_d,
        prior_s,
        b_range=INTERCEPT_RANGE,
        nb=grid_points,
        na=grid_points,
        a_fixed=None,
        guessing=guessing,
        slope=True,
    )
    marg = prob.sum(axis=(0, 2))
    cells = rng.choice(len(s_grid), size=n_draws, p=marg / marg.sum())
    return s_grid[cells] + (rng.random(n_draws) - 0.5) * (s_grid[1] - s_grid[0])


def _data_alone_draws(
    theta: np.ndarray,
    y: np.ndarray,
    prior_la: _Prior | None,
    *,
    guessing: _Guessing | None,
    a_fixed: float | None,
    b_range: tuple[float, float],
    nb: int,
    na: int,
    n_draws: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of b under a flat prior on b (the same likelihood, log a and c with their priors)."""
    flat, flat_grid, _ = _two_pass(
        theta, y, None, prior_la, b_range=b_range, nb=nb, na=na, a_fixed=a_fixed, guessing=guessing
    )
    marg = flat.sum(axis=(1, 2))
    cells = rng.choice(len(flat_grid), size=n_draws, p=marg / marg.sum())
    return flat_grid[cells] + (rng.random(n_draws) - 0.5) * (flat_grid[1] - flat_grid[0])


def typical_discrimination(fit: Fit) -> float:
    """The bank's typical discrimination: the median over items of the posterior mean discrimination.

    A 1PL fit (one shared discrimination) gives that discrimination's posterior mean.
    """
    post = fit.posterior
    if "discrimination" in post:
        means = post["discrimination"].mean(SAMPLE_DIMS).to_numpy().ravel()
    else:
        means = np.array([float(np.exp(_flat(post["log_discrimination_mu"])).mean())])
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
        flat = _flat(ability, "subject", "dim")  # (S, subject, dim)
    else:
        dims = []
        flat = _flat(ability, "subject")[:, :, None]
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
            guessing = _guessing_prior(spec, n_opt, points=guessing_points)
        per_item.append(
            {
                "bench": bench,
                "dom": dom,
                "y": y_all[mask],
                "theta": quant[:, subject_pos[s_codes[mask]], d].T,  # (n_j, Q)
                "guessing": guessing,
                "prior_la": None
                if spec.kind == "1pl"
                else _level_prior(
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


def _data_alone_and_slope(
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
    n_total = int(post.sizes["chain"] * post.sizes["draw"])
    n_items = new_data.n_items
    b_data = np.full((n_total, n_items), np.nan)
    slope = np.full((n_total, n_items), np.nan)
    rng = np.random.default_rng(seed)
    rows = np.unique(np.linspace(0, n_total - 1, min(prior_draws, n_total)).round().astype(int))
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
        a_fixed = float(np.exp(_flat(post["log_discrimination_mu"])).mean()) if spec.kind == "1pl" else None
    except KeyError as err:
        log.warning("calibrate_full: the refit's posterior lacks %s; the data-alone and slope checks are missing", err)
        return b_data, slope
    nb, na = (int(g) for g in grid_points)
    for i, info in enumerate(per_item):
        theta, y, guessing = info["theta"], info["y"], info["guessing"]
        b_data[:, i] = _data_alone_draws(
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
        slope[:, i] = _slope_draws(theta, y, guessing, n_draws=n_total, grid_points=SLOPE_GRID_POINTS, rng=rng)
    return b_data, slope


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
    """
    _check_new_data(fit, new_data)
    _check_prior(prior)
    nb, na = (int(g) for g in grid_points)
    if nb < 5 or na < 3:
        raise SpecError(f"calibrate_fixed: grid_points must be at least (5, 3), got {grid_points}")
    if ability_points < 1 or prior_draws < 1 or guessing_points < 1:
        raise SpecError("calibrate_fixed: ability_points, prior_draws and guessing_points must be at least 1")
    if not b_range[0] < b_range[1]:
        raise SpecError(f"calibrate_fixed: b_range must be (lo, hi) with lo < hi, got {b_range}")
    post = fit.posterior
    spec = fit.spec
    n_total = int(post.sizes["chain"] * post.sizes["draw"])
    n_draws = n_total if n_draws is None else int(n_draws)
    if n_draws < 1:
        raise SpecError(f"calibrate_fixed: n_draws must be at least 1, got {n_draws}")
    rng = np.random.default_rng(seed)
    rows = np.unique(np.linspace(0, n_total - 1, min(prior_draws, n_total)).round().astype(int))

    a_fixed = None
    a_draws = None
    if spec.kind == "1pl":
        a_draws = np.exp(_flat(post["log_discrimination_mu"]))
        a_fixed = float(a_draws.mean())

    n_items = new_data.n_items
    b_out = np.empty((n_draws, n_items))
    b_data = np.empty((n_draws, n_items))
    s_out = np.empty((n_draws, n_items))
    a_out = np.empty((n_draws, n_items))
    c_out = np.full((n_draws, n_items), np.nan)
    groups, prior_mean, prior_sd, edge = [], np.empty(n_items), np.empty(n_items), np.empty(n_items)
    counts = _counts(new_data)

    # ---- each candidate's responses, its log-discrimination prior and its difficulty prior
    pooled = prior == "candidates" and spec.hierarchy != "none"
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
                    la_grid = np.linspace(
                        info["prior_la"].mean - half, info["prior_la"].mean + half, POOL_GRID_POINTS[1]
                    )
                    log_w = _log_normal_mixture(la_grid, info["prior_la"])
                cube = _loglik_grid(info["theta"], info["y"], b_grid, np.exp(la_grid), info["guessing"])
                grid = (cube + log_w[None, :, None]).reshape(len(b_grid), -1) - math.log(cube.shape[2])
                top = grid.max(axis=1, keepdims=True)
                loglik[r] = top[:, 0] + np.log(np.exp(grid - top).sum(axis=1))
            centre, group_sd, item_sd = _group_mean_prior(post, spec.hierarchy, rows, dom)
            name = f"benchmark '{candidate_group_label(bench)}' ({len(members)} candidate(s) pooled)"
            priors_b = _pooled_priors(loglik, b_grid, centre, group_sd, item_sd, name=name, rng=rng)
            for i, p_b in zip(members, priors_b, strict=True):
                per_item[i]["prior_b"] = p_b
    else:
        for info in per_item:
            info["prior_b"] = _level_prior(post, spec.hierarchy, "difficulty", rows, info["bench"], info["dom"])

    # ---- each candidate's posterior on its own grid
    for i, item in enumerate(new_data.item_ids):
        info = per_item[i]
        theta, y, guessing = info["theta"], info["y"], info["guessing"]
        prior_b, prior_la = info["prior_b"], info["prior_la"]
        groups.append(prior_b.group)
        prior_mean[i], prior_sd[i] = prior_b.mean, prior_b.total_sd

        grids = {"b_range": b_range, "nb": nb, "na": na, "a_fixed": a_fixed, "guessing": guessing}
        # the same likelihood under a flat prior on b: what the data alone say (see acceptance)
        b_data[:, i] = _data_alone_draws(theta, y, prior_la, **grids, n_draws=n_draws, rng=rng)
        # the slope with a free sign: does the candidate relate to ability at all, and which way?
        s_out[:, i] = _slope_draws(theta, y, guessing, n_draws=n_draws, grid_points=SLOPE_GRID_POINTS, rng=rng)

        prob, b_grid, la_grid = _two_pass(theta, y, prior_b, prior_la, **grids)
        marg_b = prob.sum(axis=(1, 2))
        edge_b = float(marg_b[0] + marg_b[-1])
        edge_a = 0.0
        if a_fixed is None:
            marg_a = prob.sum(axis=(0, 2))
            edge_a = float(marg_a[0] + marg_a[-1])
        edge[i] = max(edge_b, edge_a)
        if edge[i] > EDGE_MASS_WARN:
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
        cell = rng.choice(prob.size, size=n_draws, p=prob.ravel())
        ib, ia, ic = np.unravel_index(cell, prob.shape)
        db = b_grid[1] - b_grid[0]
        b_out[:, i] = b_grid[ib] + (rng.random(n_draws) - 0.5) * db
        if a_fixed is None:
            da = la_grid[1] - la_grid[0]
            a_out[:, i] = np.exp(la_grid[ia] + (rng.random(n_draws) - 0.5) * da)
        else:
            assert a_draws is not None
            a_out[:, i] = a_draws[rng.integers(0, len(a_draws), n_draws)]
        if guessing is not None:
            c_out[:, i] = guessing.draws(ic, rng)

    ids = [str(i) for i in new_data.item_ids]
    sample = ("chain", "draw", "item")
    data_vars: dict[str, Any] = {
        "difficulty": (sample, b_out[None]),
        "difficulty_data": (sample, b_data[None]),
        "slope": (sample, s_out[None]),
        "discrimination": (sample, a_out[None]),
        "n_responses": ("item", counts),
        "prior_group": ("item", np.array(groups, dtype=object).astype(str)),
        "prior_difficulty_mean": ("item", prior_mean),
        "prior_difficulty_sd": ("item", prior_sd),
        "edge_mass": ("item", edge),
    }
    if spec.kind == "3pl":
        data_vars["guessing"] = (sample, c_out[None])
    out = xr.Dataset(data_vars, coords={"chain": [0], "draw": np.arange(n_draws), "item": ids})
    out.attrs = {
        "method": "fixed bank (grid)",
        "kind": spec.kind,
        "grid_points": list(grid_points),
        "ability_points": int(ability_points),
        "prior_draws": len(rows),
        "prior": prior if pooled else "bank",
        "guessing_points": int(guessing_points) if spec.kind == "3pl" else 0,
        "slope_prior_sd": SLOPE_PRIOR_SD,
        "approximate": 1,
    }
    return out


# ============================================================================================ OC
def operating_characteristic(
    fit: Fit,
    *,
    target_lo: float,
    target_hi: float,
    n_systems: Sequence[int] = (20, 50, 100, 200),
    n_candidates: int = 100,
    reps: int = 1,
    truth: Literal["uniform", "bank"] = "uniform",
    spread: float | None = None,
    discrimination_sd: float = 0.3,
    benchmark: str | None = None,
    tau: float = 0.8,
    min_responses: int = 10,
    discrimination_prob: float = 0.9,
    min_discrimination: float | None = None,
    mis_keyed_share: float = 0.0,
    flat_share: float = 0.0,
    flat_discrimination: float = 0.05,
    seed: int = 0,
    ability_points: int = 16,
    n_draws: int = 1000,
    prior: Prior = "candidates",
) -> pd.DataFrame:
    """Simulate candidates with known parameters, calibrate them on the fast path and decide.

    For each number of responding systems n and each repetition, n of the fit's subjects are chosen at
    random; their posterior mean abilities are taken as their true abilities. ``n_candidates`` candidates get
    true parameters from one of two scenarios:

    - ``truth="uniform"`` (candidates aimed at the bin that may miss it): difficulties uniform on
      ``[target_lo - spread, target_hi + spread]`` (default spread: the bin width, so a third lie in the bin),
      discriminations ``exp(Normal(0, discrimination_sd))``;
    - ``truth="bank"`` (candidates like the bank's items): (difficulty, log discrimination) drawn from the
      fitted hierarchy's predictive for a new item of ``benchmark`` (one posterior draw of the
      hyperparameters per candidate).

    A share ``mis_keyed_share`` of the candidates (chosen at random) is mis-keyed: their slope is minus the
    drawn discrimination, so their responses fall with ability; a share ``flat_share`` is flat: their slope is
    ``flat_discrimination``. The others are good. The systems' responses are simulated from the 2PL model
    with these slopes; the candidates are calibrated with :func:`calibrate_fixed` (with ``prior``) and
    decided with :func:`~irtbayes.benchfill.acceptance.decide_all` (``min_discrimination`` default:
    :func:`default_min_discrimination` of the fit).
    With ``prior="bank"`` every candidate is shrunk towards the bank's mean, which suits bank-like
    candidates but not candidates aimed at a bin far from that mean; ``prior="candidates"`` learns where
    the candidates are from all of them.

    Returns
    -------
    pandas.DataFrame
        One row per simulated candidate: ``n_systems``, ``rep``, ``candidate_id``, ``kind`` (``"good"``,
        ``"mis-keyed"`` or ``"flat"``), ``true_difficulty``, ``true_discrimination`` (the slope, negative for
        a mis-keyed candidate), ``in_bin`` (true difficulty in the bin), ``wanted`` (good and in the bin),
        ``p_in_target``, ``p_in_target_data``, ``slope_mean``, ``difficulty_mean``, ``decision``, ``reason``,
        ``failed``; summarise with :func:`operating_characteristic_table`. ``attrs`` record the settings.
    """
    if "dim" in fit.posterior["ability"].dims:
        raise SpecError("operating_characteristic: needs a fit with one ability dimension")
    if truth not in ("uniform", "bank"):
        raise SpecError(f"operating_characteristic: truth must be 'uniform' or 'bank', got {truth!r}")
    width = float(target_hi) - float(target_lo)
    if not width > 0:
        raise SpecError(f"operating_characteristic: need target_lo < target_hi, got [{target_lo}, {target_hi})")
    spread = width if spread is None else float(spread)
    if not (0 <= mis_keyed_share and 0 <= flat_share and mis_keyed_share + flat_share <= 1):
        raise SpecError(
            f"operating_characteristic: mis_keyed_share {mis_keyed_share} and flat_share {flat_share} must be >= 0 "
            "with a sum <= 1"
        )
    if min_discrimination is None:
        min_discrimination = default_min_discrimination(fit)
    n_bad = (round(mis_keyed_share * n_candidates), round(flat_share * n_candidates))
    theta_all = fit.posterior["ability"].mean(SAMPLE_DIMS).to_series()
    theta_all.index = theta_all.index.astype(str)
    rng = np.random.default_rng(seed)
    frames = []
    for n in n_systems:
        if n > len(theta_all):
            raise SpecError(f"operating_characteristic: {n} systems asked for but the fit has {len(theta_all)}")
        for rep in range(reps):
            chosen = rng.choice(len(theta_all), size=n, replace=False)
            theta = theta_all.to_numpy()[chosen]
            subjects = theta_all.index[chosen]
            if truth == "bank":
                b, a = _bank_like(fit, benchmark, n_candidates, rng)
            else:
                b = rng.uniform(target_lo - spread, target_hi + spread, n_candidates)
                a = np.exp(rng.normal(0.0, discrimination_sd, n_candidates))
            kind = np.array(["mis-keyed"] * n_bad[0] + ["flat"] * n_bad[1] + ["good"] * (n_candidates - sum(n_bad)))
            kind = kind[rng.permutation(n_candidates)]
            a = np.where(kind == "mis-keyed", -a, np.where(kind == "flat", flat_discrimination, a))
            y = (rng.random((n, n_candidates)) < expit(a[None, :] * (theta[:, None] - b[None, :]))).astype(float)
            ids = [f"oc-{n}-{rep}-{k:04d}" for k in range(n_candidates)]
            frame = pd.DataFrame(
                {
                    "subject": np.repeat(subjects.to_numpy(), n_candidates),
                    "item": np.tile(ids, n),
                    "response": y.ravel(),
                }
            )
            meta = pd.DataFrame({"item": ids, "benchmark": benchmark})
            new = ResponseData.from_long(frame, items=meta, source=f"simulated candidates (n={n}, rep {rep})")
            post = calibrate_fixed(
                fit,
                new,
                n_draws=n_draws,
                seed=int(rng.integers(2**31)),
                ability_points=ability_points,
                prior=prior,
            )
            table = decide_all(
                post,
                target_lo=target_lo,
                target_hi=target_hi,
                n_responses=post["n_responses"].to_series(),
                tau=tau,
                min_responses=min_responses,
                discrimination_prob=discrimination_prob,
                min_discrimination=min_discrimination,
            )
            table = table.reindex(ids)
            in_bin = (b >= target_lo) & (b < target_hi)
            frames.append(
                pd.DataFrame(
                    {
                        "n_systems": n,
                        "rep": rep,
                        "candidate_id": ids,
                        "kind": kind,
                        "true_difficulty": b,
                        "true_discrimination": a,
                        "in_bin": in_bin,
                        "wanted": in_bin & (kind == "good"),
                        "p_in_target": table["p_in_target"].to_numpy(),
                        "p_in_target_data": table["p_in_target_data"].to_numpy(),
                        "slope_mean": table["slope_mean"].to_numpy(),
                        "difficulty_mean": table["difficulty_mean"].to_numpy(),
                        "decision": table["decision"].to_numpy(),
                        "reason": table["reason"].to_numpy(),
                        "failed": table["failed"].to_numpy(),
                    }
                )
            )
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(
        truth=truth,
        target_lo=float(target_lo),
        target_hi=float(target_hi),
        tau=float(tau),
        spread=spread,
        discrimination_sd=discrimination_sd,
        min_responses=min_responses,
        min_discrimination=float(min_discrimination),
        mis_keyed_share=mis_keyed_share,
        flat_share=flat_share,
        flat_discrimination=flat_discrimination,
        seed=seed,
        prior=prior,
    )
    return out


def _bank_like(fit: Fit, benchmark: str | None, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(difficulty, discrimination) of ``n`` new items drawn from the fitted hierarchy's predictive."""
    post = fit.posterior
    n_total = int(post.sizes["chain"] * post.sizes["draw"])
    rows = rng.integers(0, n_total, n)
    prior_b = _level_prior(post, fit.spec.hierarchy, "difficulty", rows, benchmark, None)
    b = rng.normal(prior_b.centre, prior_b.sd)
    if fit.spec.kind == "1pl":
        return b, np.exp(_flat(post["log_discrimination_mu"])[rows])
    prior_la = _level_prior(
        post,
        fit.spec.hierarchy,
        "log_discrimination",
        rows,
        benchmark,
        None,
        fixed_sd=fit.spec.priors.log_discrimination_sd_scale,
    )
    return b, np.exp(rng.normal(prior_la.centre, prior_la.sd))


def operating_characteristic_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per number of systems: candidates, wanted candidates, accepted, precision and recall, and the rejection
    of mis-keyed and flat candidates.

    A candidate is wanted when it is good (neither mis-keyed nor flat) and truly in the bin.

    Returns
    -------
    pandas.DataFrame
        One row per ``n_systems``: ``n_candidates``, ``n_in_bin`` (wanted candidates), ``n_accepted``,
        ``n_true_accepted`` (wanted and accepted), ``precision`` (share of accepted candidates that are wanted;
        NaN when none is accepted), ``precision_se`` (binomial standard error, sqrt(p (1 - p) / n_accepted)),
        ``recall`` (share of wanted candidates accepted), ``mean_p_in_target_accepted`` (the precision the
        posterior promises); for ``kind`` in mis-keyed and flat: ``n_mis_keyed`` / ``n_flat``,
        ``mis_keyed_rejected`` / ``flat_rejected`` (share rejected) and ``mis_keyed_named`` / ``flat_named``
        (share rejected with that reason among its failed checks; NaN when there are none of that kind).
    """
    rows = []
    for n, group in frame.groupby("n_systems", sort=True):
        accepted = group["decision"].eq("accepted").to_numpy()
        wanted = group["wanted" if "wanted" in group.columns else "in_bin"].to_numpy(dtype=bool)
        n_acc = int(accepted.sum())
        n_true = int((accepted & wanted).sum())
        precision = n_true / n_acc if n_acc else math.nan
        row: dict[str, Any] = {
            "n_systems": int(n),
            "n_candidates": len(group),
            "n_in_bin": int(wanted.sum()),
            "n_accepted": n_acc,
            "n_true_accepted": n_true,
            "precision": precision,
            "precision_se": math.sqrt(precision * (1 - precision) / n_acc) if n_acc else math.nan,
            "recall": n_true / int(wanted.sum()) if wanted.any() else math.nan,
            "mean_p_in_target_accepted": float(group.loc[accepted, "p_in_target"].mean()) if n_acc else math.nan,
        }
        kinds = group["kind"] if "kind" in group.columns else pd.Series("good", index=group.index)
        failed = group["failed"].fillna("") if "failed" in group.columns else pd.Series("", index=group.index)
        for kind, key in (("mis-keyed", "mis_keyed"), ("flat", "flat")):
            mask = (kinds == kind).to_numpy()
            row[f"n_{key}"] = int(mask.sum())
            if mask.any():
                row[f"{key}_rejected"] = float((~accepted[mask]).mean())
                row[f"{key}_named"] = float(failed[mask].map(lambda f, k=kind: k in f.split("; ")).mean())
            else:
                row[f"{key}_rejected"] = row[f"{key}_named"] = math.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(frame.attrs)
    return table
