"""Convergence and fit checks of a fitted IRT model.

- :func:`check_convergence`: r-hat, bulk and tail ESS (arviz-stats' definitions, computed for all parameters
  of a variable at once by :mod:`irtbayes.convergence`), divergences, E-BFMI and tree-depth
  saturation, against stated thresholds, in a small :class:`Diagnostics` object with ``.ok``. A diagnostic
  that is NaN or missing (an empty or one-chain trace, non-finite draws, no sampler statistics) fails the
  check with its reason; elements that are constant by construction (the diagonal of a correlation matrix,
  a fixed entry of a Cholesky factor) are left out by an explicit rule (:func:`excluded_elements`).
- :func:`posterior_predictive_check`: per-item proportion correct, per-subject total score and the
  item-rest relation, each against its posterior predictive distribution (Bayesian p-values).
- :func:`log_likelihood` and :func:`compare_fits`: pointwise log-likelihood and PSIS-LOO comparison of fits.

Fractional responses are fitted with the fractional-logit quasi-likelihood (:mod:`irtbayes.model`): the
predictive check, the log-likelihood and the LOO comparison say so (in their summaries, their ``attrs`` and a
warning), since a quasi-likelihood is not the density of the data.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import arviz_stats as azs
import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.convergence import rank_diagnostics, tail_probs
from irtbayes.errors import FitError, SpecError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from irtbayes.data import ResponseData
    from irtbayes.fit import Fit

__all__ = [
    "Diagnostics",
    "PredictiveCheck",
    "VariableDiagnostics",
    "check_convergence",
    "compare_fits",
    "excluded_elements",
    "log_likelihood",
    "posterior_predictive_check",
]

log = logging.getLogger(__name__)

#: Posterior variables that are not checked: the raw standard normals of non-centred parameters. Each is
#: either a function of checked variables (``difficulty_z = (difficulty - location) / sd``) or, for
#: standardised abilities, carries only the mean and scale of the raw abilities, which the model does not
#: identify (they are pinned by a factor that leaves the posterior unchanged, see :mod:`irtbayes.model`).
#: Everything else is checked: hyperparameters, derived quantities (``intercept``, ``*_benchmark``),
#: correlation matrices and their Cholesky factors, element by element (:func:`excluded_elements`).
SKIP_SUFFIXES = ("_z",)

#: An element is constant when its range over every draw is at most this share of its magnitude (at least 1):
#: the diagonal of ``chol @ chol.T`` is 1 up to rounding (a range of about 1e-16), which is no parameter.
CONSTANT_RTOL = 1e-12

#: Fewest chains for r-hat, and fewest draws per chain for r-hat and ESS (split chains of at least 2 draws).
MIN_CHAINS = 2
MIN_DRAWS = 4

#: Standardised abilities over fewer subjects than this get a note: each standardised ability lies in
#: [-sqrt(n - 1), sqrt(n - 1)], so with few subjects the implied prior is far from a standard normal.
MIN_STANDARDISED_SUBJECTS = 10

#: Variables whose last two dims form a correlation matrix (its diagonal is 1 by definition).
CORRELATION_SUFFIX = "_corr"

#: What the predictive check, the log-likelihood and the LOO comparison say about fractional responses.
QUASI_LIKELIHOOD_NOTE = (
    "responses are fractional (scores strictly between 0 and 1): the fractional-logit quasi-likelihood is "
    "used, which is not the density of the data; LOO/ELPD values are not comparable with fits to binary "
    "responses, and Pareto k and predictive p-values are approximate"
)


@dataclass(frozen=True)
class VariableDiagnostics:
    """The worst r-hat and ESS of one posterior variable, with the parameter that attains them.

    A NaN worst value names the first checked parameter whose diagnostic is NaN. ``n_excluded`` elements were
    left out by :func:`excluded_elements` (constant over every draw, or a correlation's diagonal).
    """

    name: str
    size: int
    max_rhat: float
    worst_rhat: str
    min_ess_bulk: float
    worst_ess_bulk: str
    min_ess_tail: float
    worst_ess_tail: str
    n_excluded: int = 0

    @property
    def n_checked(self) -> int:
        """Elements judged against the thresholds."""
        return self.size - self.n_excluded

    def to_dict(self) -> dict[str, Any]:
        return {k: _plain(v) for k, v in self.__dict__.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, (np.floating, float)):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if np.isfinite(value) else "NaN"


@dataclass(frozen=True)
class Diagnostics:
    """Convergence of a fit against stated thresholds.

    Attributes
    ----------
    ok
        True when every check passes (always False for approximate fits, which have no MCMC diagnostics, and
        whenever a diagnostic is NaN or missing).
    approximate
        The fit came from an approximate method (ADVI, Pathfinder): r-hat and ESS do not apply.
    thresholds
        ``rhat_max``, ``ess_min`` (bulk and tail), ``ebfmi_min``, ``treedepth_share_max`` and ``ci_prob`` (tail
        ESS is taken at the ends of the central ``ci_prob`` interval).
    variables
        One :class:`VariableDiagnostics` per checked variable.
    divergences, n_chains, n_draws
        Divergent transitions after warm-up; chains and draws per chain.
    ebfmi
        E-BFMI per chain.
    treedepth_saturated
        Draws whose trajectory hit the maximum tree depth.
    problems
        One sentence per failed check.
    notes
        Sentences that do not fail the check but qualify the fit (few subjects to standardise over,
        statistics the sampler did not record).
    parameters
        Per checked scalar parameter: ``variable``, ``index``, ``r_hat``, ``ess_bulk``, ``ess_tail`` (kept in
        memory after :func:`check_convergence`, not saved; ``None`` for a loaded fit).
    """

    ok: bool
    approximate: bool
    thresholds: dict[str, float]
    variables: list[VariableDiagnostics] = field(default_factory=list)
    divergences: int = 0
    n_chains: int = 0
    n_draws: int = 0
    ebfmi: list[float] = field(default_factory=list)
    treedepth_saturated: int = 0
    mean_steps: float | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parameters: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    def _judged(self) -> list[VariableDiagnostics]:
        return [v for v in self.variables if v.n_checked > 0]

    @property
    def max_rhat(self) -> float:
        """The largest r-hat over every checked parameter; NaN when any is NaN or none was checked."""
        values = [v.max_rhat for v in self._judged()]
        return float(max(values)) if values and np.isfinite(values).all() else float("nan")

    @property
    def min_ess_bulk(self) -> float:
        """The smallest bulk ESS over every checked parameter; NaN when any is NaN or none was checked."""
        values = [v.min_ess_bulk for v in self._judged()]
        return float(min(values)) if values and np.isfinite(values).all() else float("nan")

    @property
    def min_ess_tail(self) -> float:
        """The smallest tail ESS over every checked parameter; NaN when any is NaN or none was checked."""
        values = [v.min_ess_tail for v in self._judged()]
        return float(min(values)) if values and np.isfinite(values).all() else float("nan")

    def summary(self) -> str:
        """A few lines of text: verdict (with the first reason when it fails), thresholds, worst parameters,
        sampler warnings, notes."""
        notes = [f"  note: {n}" for n in self.notes]
        if self.approximate:
            return "\n".join(
                [
                    "Approximate fit (variational or Pathfinder): MCMC convergence diagnostics do not apply; "
                    "treat intervals as approximate.",
                    *notes,
                ]
            )
        t = self.thresholds
        if self.ok:
            head = "Converged"
        else:
            first = self.problems[0] if self.problems else "no checks passed"
            more = len(self.problems) - 1
            head = f"NOT converged ({first}{f'; {more} more problem(s)' if more > 0 else ''})"
        if "ci_prob" in t:
            low, high = tail_probs(t["ci_prob"])
            tail = f"tail ESS (at the {low:g} and {high:g} quantiles)"
        else:  # a card written before the tail quantiles were recorded
            tail = "tail ESS"
        lines = [
            f"{head}: {self.n_chains} chains x {self.n_draws} draws; thresholds r-hat <= {t['rhat_max']:g}, "
            f"bulk ESS and {tail} >= {t['ess_min']:g}, "
            f"E-BFMI >= {t['ebfmi_min']:g}, no divergences.",
            f"max r-hat {_fmt(self.max_rhat, '.3f')}, min bulk ESS {_fmt(self.min_ess_bulk, '.0f')}, min tail ESS "
            f"{_fmt(self.min_ess_tail, '.0f')}, divergences {self.divergences}, tree-depth saturated "
            f"{self.treedepth_saturated}"
            + (f", E-BFMI min {_fmt(min(self.ebfmi), '.2f')}" if self.ebfmi else "")
            + (f", mean leapfrog steps {self.mean_steps:.1f}" if self.mean_steps is not None else ""),
        ]
        for v in self.variables:
            excluded = f"  ({v.n_excluded} left out: constant, or a correlation's diagonal)" if v.n_excluded else ""
            lines.append(
                f"  {v.name:<34} r-hat {_fmt(v.max_rhat, '6.3f')} ({v.worst_rhat})  bulk ESS "
                f"{_fmt(v.min_ess_bulk, '7.0f')} ({v.worst_ess_bulk})  tail ESS {_fmt(v.min_ess_tail, '7.0f')}"
                + excluded
            )
        lines += [f"  problem: {p}" for p in self.problems]
        lines += notes
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "approximate": self.approximate,
            "thresholds": dict(self.thresholds),
            "max_rhat": _plain(self.max_rhat),
            "min_ess_bulk": _plain(self.min_ess_bulk),
            "min_ess_tail": _plain(self.min_ess_tail),
            "divergences": int(self.divergences),
            "n_chains": int(self.n_chains),
            "n_draws": int(self.n_draws),
            "ebfmi": [_plain(x) for x in self.ebfmi],
            "treedepth_saturated": int(self.treedepth_saturated),
            "mean_steps": _plain(self.mean_steps) if self.mean_steps is not None else None,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "variables": [v.to_dict() for v in self.variables],
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Diagnostics:
        def num(x: Any) -> float:
            return float("nan") if x is None else float(x)

        variables = [
            VariableDiagnostics(
                name=v["name"],
                size=int(v["size"]),
                max_rhat=num(v["max_rhat"]),
                worst_rhat=v["worst_rhat"],
                min_ess_bulk=num(v["min_ess_bulk"]),
                worst_ess_bulk=v["worst_ess_bulk"],
                min_ess_tail=num(v["min_ess_tail"]),
                worst_ess_tail=v["worst_ess_tail"],
                n_excluded=int(v.get("n_excluded", 0)),
            )
            for v in values.get("variables", [])
        ]
        return cls(
            ok=bool(values["ok"]),
            approximate=bool(values["approximate"]),
            thresholds={k: float(v) for k, v in values["thresholds"].items()},
            variables=variables,
            divergences=int(values.get("divergences", 0)),
            n_chains=int(values.get("n_chains", 0)),
            n_draws=int(values.get("n_draws", 0)),
            ebfmi=[num(x) for x in values.get("ebfmi", [])],
            treedepth_saturated=int(values.get("treedepth_saturated", 0)),
            mean_steps=None if values.get("mean_steps") is None else float(values["mean_steps"]),
            problems=list(values.get("problems", [])),
            notes=list(values.get("notes", [])),
        )


def _label(da: xr.DataArray, flat_index: int) -> str:
    if da.ndim == 0:
        return str(da.name)
    pos = np.unravel_index(flat_index, da.shape)
    parts = []
    for dim, p in zip(da.dims, pos, strict=True):
        parts.append(str(da[dim].values[p]) if dim in da.coords else str(p))
    return f"{da.name}[{', '.join(parts)}]"


def _worst(da: xr.DataArray, checked: np.ndarray, *, largest: bool) -> tuple[float, str]:
    """The largest (smallest) value of ``da`` over the ``checked`` elements and its label; the first checked
    value that is not finite (NaN, or an infinite r-hat) and its label when there is one (NaN is never a
    pass); NaN and "" when nothing is checked."""
    values = np.asarray(da.values, dtype="float64").ravel()
    mask = np.asarray(checked, dtype=bool).ravel()
    if not mask.any():
        return float("nan"), ""
    bad = mask & ~np.isfinite(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        return float(values[first]), _label(da, first)
    masked = np.where(mask, values, -np.inf if largest else np.inf)
    idx = int(np.argmax(masked) if largest else np.argmin(masked))
    return float(values[idx]), _label(da, idx)


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
    :func:`excluded_elements`, which :func:`parameter_table` uses to leave those elements out."""
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


def checked_variables(posterior: xr.Dataset) -> list[str]:
    """Names of the posterior variables that convergence is judged on: all but raw ``*_z`` coordinates
    (see :data:`SKIP_SUFFIXES`)."""
    return [str(name) for name in posterior.data_vars if not str(name).endswith(SKIP_SUFFIXES)]


def _standardised_subjects(posterior: xr.Dataset, standardised: bool | None) -> int | None:
    """The number of subjects the abilities are standardised over, or None when they are not standardised
    (``standardised=None``: detected from the draws, every draw having mean 0 and sd 1 over subjects)."""
    if standardised is False or "ability" not in posterior or "subject" not in posterior["ability"].dims:
        return None
    n = int(posterior.sizes["subject"])
    if standardised:
        return n
    ability = posterior["ability"]
    if ability.sizes.get("chain", 0) * ability.sizes.get("draw", 0) == 0 or n < 2:
        return None
    with np.errstate(invalid="ignore"):
        mean = ability.mean("subject").values
        sd = ability.std("subject").values
    if np.allclose(mean, 0.0, rtol=0, atol=1e-6) and np.allclose(sd, 1.0, rtol=0, atol=1e-6):
        return n
    return None


def _sampler_checks(
    idata: xr.DataTree, *, n_chains: int, n_draws: int, ebfmi_min: float, treedepth_share_max: float
) -> tuple[int, list[float], int, float | None, list[str], list[str]]:
    """Divergences, E-BFMI, tree depth and mean steps from ``sample_stats``; missing or NaN ones fail."""
    problems: list[str] = []
    notes: list[str] = []
    divergences, saturated, mean_steps = 0, 0, None
    ebfmi: list[float] = []
    if "sample_stats" not in idata.children:
        problems.append("no sample_stats group: divergences and E-BFMI are unknown")
        return divergences, ebfmi, saturated, mean_steps, problems, notes
    stats = idata["sample_stats"].to_dataset()
    if "diverging" not in stats:
        problems.append("the sampler recorded no divergence flags ('diverging'): divergences are unknown")
    else:
        flags = np.asarray(stats["diverging"].values, dtype="float64")
        unknown = int(np.isnan(flags).sum())
        divergences = int(np.nansum(flags))
        if unknown:
            problems.append(f"divergence flags are missing (NaN) in {unknown} draw(s)")
        if divergences:
            problems.append(f"{divergences} divergent transition(s)")
    if "energy" not in stats:
        problems.append("the sampler recorded no energy: E-BFMI is unknown")
    elif n_draws < 2:
        problems.append(f"only {n_draws} draw per chain: E-BFMI needs at least 2")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ebfmi = [float(x) for x in np.atleast_1d(azs.bfmi(idata)["energy"].values)]
        missing = [i for i, x in enumerate(ebfmi) if not np.isfinite(x)]
        low = [i for i, x in enumerate(ebfmi) if np.isfinite(x) and x < ebfmi_min]
        if missing:
            problems.append(f"E-BFMI is NaN in chain(s) {missing}")
        if low:
            problems.append(f"E-BFMI below {ebfmi_min:g} in chain(s) {low}")
    for name in ("maxdepth_reached", "reached_max_treedepth"):
        if name in stats:
            saturated = int(np.nansum(np.asarray(stats[name].values, dtype="float64")))
            break
    else:
        notes.append("the sampler did not record tree-depth saturation; it is not checked")
    total = max(n_chains * n_draws, 1)
    if saturated / total > treedepth_share_max:
        problems.append(f"{saturated} of {total} draws hit the maximum tree depth")
    for name in ("n_steps", "tree_size"):
        if name in stats:
            mean_steps = float(stats[name].mean())
            break
    return divergences, ebfmi, saturated, mean_steps, problems, notes


def check_convergence(
    idata: xr.DataTree,
    *,
    rhat_max: float = 1.01,
    ess_min: float = 400.0,
    ebfmi_min: float = 0.3,
    treedepth_share_max: float = 0.01,
    var_names: list[str] | None = None,
    approximate: bool = False,
    ci_prob: float = 0.9,
    standardised: bool | None = None,
) -> Diagnostics:
    """Check MCMC convergence against thresholds (Vehtari et al. 2021 rank-normalised r-hat and ESS).

    NaN is never a pass: an empty trace, fewer than :data:`MIN_CHAINS` chains or :data:`MIN_DRAWS` draws per
    chain, non-finite draws, a NaN r-hat, ESS or E-BFMI, and missing sampler statistics (divergences or
    energy unknown) each fail the check, with a sentence in ``problems`` that :meth:`Diagnostics.summary`
    names. Every element of every checked variable is judged except those :func:`excluded_elements` leaves
    out (constant over the draws, a correlation's diagonal), which are counted in ``n_excluded``.

    Parameters
    ----------
    idata
        DataTree with a ``posterior`` group (chain, draw, ...) and, for NUTS fits, ``sample_stats``.
    rhat_max, ess_min
        Every checked parameter needs r-hat <= ``rhat_max`` and bulk and tail ESS >= ``ess_min``.
    ebfmi_min
        Every chain needs E-BFMI >= ``ebfmi_min``.
    treedepth_share_max
        At most this share of draws may hit the maximum tree depth.
    var_names
        Variables to check (default: every posterior variable except raw standard-normal ``*_z``
        coordinates, see :data:`SKIP_SUFFIXES`).
    approximate
        The draws come from an approximate method: no MCMC checks, ``ok`` is False.
    ci_prob
        Probability of the central intervals the fit reports: tail ESS is taken at their ends, the
        ``(1 - ci_prob) / 2`` and ``(1 + ci_prob) / 2`` quantiles.
    standardised
        Whether the abilities are standardised over the subjects (``None``: detected from the draws). With
        fewer than :data:`MIN_STANDARDISED_SUBJECTS` subjects a note and a warning say that the implied prior
        of the abilities is far from normal.

    Returns
    -------
    Diagnostics

    Raises
    ------
    FitError
        ``idata`` has no posterior group.
    SpecError
        A name in ``var_names`` is not a posterior variable, or ``ci_prob`` is not in (0, 1).
    """
    if not 0 < ci_prob < 1:
        raise SpecError(f"check_convergence: ci_prob must be strictly between 0 and 1, got {ci_prob}")
    thresholds = {
        "rhat_max": float(rhat_max),
        "ess_min": float(ess_min),
        "ebfmi_min": float(ebfmi_min),
        "treedepth_share_max": float(treedepth_share_max),
        "ci_prob": float(ci_prob),
    }
    if "posterior" not in idata.children:
        raise FitError("check_convergence: the DataTree has no posterior group")
    posterior = idata["posterior"].to_dataset()
    n_chains = int(posterior.sizes.get("chain", 0))
    n_draws = int(posterior.sizes.get("draw", 0))
    notes: list[str] = []
    n_standardised = _standardised_subjects(posterior, standardised)
    if n_standardised is not None and n_standardised < MIN_STANDARDISED_SUBJECTS:
        note = (
            f"abilities are standardised over only {n_standardised} subjects (fewer than "
            f"{MIN_STANDARDISED_SUBJECTS}): every ability lies within +-{np.sqrt(n_standardised - 1):.2f} "
            "(sqrt(subjects - 1)), so their implied prior is far from a standard normal"
        )
        notes.append(note)
        warnings.warn(note, UserWarning, stacklevel=2)

    def failed(reason: str, *, variables: list[VariableDiagnostics] | None = None) -> Diagnostics:
        return Diagnostics(
            ok=False,
            approximate=approximate,
            thresholds=thresholds,
            variables=variables or [],
            n_chains=n_chains,
            n_draws=n_draws,
            problems=[reason],
            notes=notes,
        )

    if approximate:
        return failed("approximate fit: MCMC diagnostics do not apply")
    if "chain" not in posterior.dims or "draw" not in posterior.dims:
        return failed(f"the posterior has no chain and draw dims (dims {sorted(map(str, posterior.dims))})")
    names = var_names if var_names is not None else checked_variables(posterior)
    missing = [n for n in names if n not in posterior]
    if missing:
        raise SpecError(f"check_convergence: no posterior variable(s) {missing}; have {list(posterior.data_vars)}")
    if not names:
        return failed("the posterior has no variables to check")
    if n_chains == 0 or n_draws == 0:
        return failed(
            f"the trace is empty ({n_chains} chains x {n_draws} draws): no draws were kept, so convergence "
            "cannot be checked"
        )
    post = posterior[names]
    problems: list[str] = []
    computable = True
    if n_chains < MIN_CHAINS:
        problems.append(f"only {n_chains} chain: r-hat needs at least {MIN_CHAINS} chains")
        computable = False
    if n_draws < MIN_DRAWS:
        problems.append(f"only {n_draws} draws per chain: r-hat and ESS need at least {MIN_DRAWS}")
        computable = False
    rhat, ess_bulk, ess_tail = rank_diagnostics_datasets(post, ci_prob=ci_prob)
    variables: list[VariableDiagnostics] = []
    for name in names:
        excluded = np.asarray(rhat[name].attrs["excluded"])  # excluded_elements(post[name])
        checked = ~excluded
        size = int(excluded.size)
        draws = post[name].transpose("chain", "draw", ...).to_numpy()
        nonfinite = np.count_nonzero(~np.isfinite(draws), axis=(0, 1))
        if nonfinite.any():  # never excluded: excluded_elements requires finite draws
            first = int(np.flatnonzero(np.ravel(nonfinite > 0))[0])
            problems.append(
                f"{int(np.sum(nonfinite))} non-finite (NaN or infinite) draw(s) in {name}, first at "
                f"{_label(rhat[name], first)}"
            )
        max_r, worst_r = _worst(rhat[name], checked, largest=True)
        min_b, worst_b = _worst(ess_bulk[name], checked, largest=False)
        min_t, worst_t = _worst(ess_tail[name], checked, largest=False)
        variables.append(
            VariableDiagnostics(
                name, size, max_r, worst_r, min_b, worst_b, min_t, worst_t, n_excluded=int(excluded.sum())
            )
        )
        if not checked.any():
            notes.append(f"{name}: every element is constant over the draws; nothing to check")
            continue
        if not computable:
            continue
        for label, value, worst, passes in (
            ("r-hat", max_r, worst_r, max_r <= rhat_max),
            ("bulk ESS", min_b, worst_b, min_b >= ess_min),
            ("tail ESS", min_t, worst_t, min_t >= ess_min),
        ):
            if not np.isfinite(value):
                problems.append(f"{label} is not finite ({value}) at {worst}")
            elif not passes:
                op = ">" if label == "r-hat" else "<"
                limit = rhat_max if label == "r-hat" else ess_min
                problems.append(f"{label} {value:.{3 if label == 'r-hat' else 0}f} {op} {limit:g} at {worst}")

    divergences, ebfmi, saturated, mean_steps, sampler_problems, sampler_notes = _sampler_checks(
        idata, n_chains=n_chains, n_draws=n_draws, ebfmi_min=ebfmi_min, treedepth_share_max=treedepth_share_max
    )
    problems += sampler_problems
    notes += sampler_notes
    return Diagnostics(
        ok=not problems,
        approximate=False,
        thresholds=thresholds,
        variables=variables,
        divergences=divergences,
        n_chains=n_chains,
        n_draws=n_draws,
        ebfmi=ebfmi,
        treedepth_saturated=saturated,
        mean_steps=mean_steps,
        problems=problems,
        notes=notes,
        parameters=parameter_table(rhat, ess_bulk, ess_tail, names),
    )


def parameter_table(rhat: xr.Dataset, bulk: xr.Dataset, tail: xr.Dataset, names: list[str]) -> pd.DataFrame:
    """One row per checked scalar parameter of ``names``: ``variable``, ``index`` (coordinates as text),
    ``r_hat``, ``ess_bulk``, ``ess_tail``. Elements marked in ``rhat[name].attrs["excluded"]`` (see
    :func:`rank_diagnostics_datasets`) are left out."""
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


# ---------------------------------------------------------------------------------------------- predictive
def _likelihood_name(data: ResponseData) -> str:
    return "bernoulli" if data.is_binary else "fractional-logit quasi-likelihood"


def _check_data(result: Fit, data: ResponseData) -> None:
    if data.checksum() != result.data_checksum:
        raise FitError(
            f"{data.source}: these are not the data the fit was made from (checksum {data.checksum()[:12]}, "
            f"the fit's {result.data_checksum[:12]})"
        )


def _draw_index(result: Fit, n_draws: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(chain, draw) positions of an even thinning to about ``n_draws`` draws, every chain kept."""
    post = result.posterior
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    per_chain = n_draw if n_draws is None else max(1, min(n_draw, int(np.ceil(n_draws / n_chain))))
    draws = np.unique(np.linspace(0, n_draw - 1, per_chain).round().astype(int))
    return np.arange(n_chain), draws


def _response_probabilities(
    result: Fit, data: ResponseData, chains: np.ndarray, draws: np.ndarray
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield, per (chain, draw), the success probability of every response row of ``data`` (long order)."""
    post = result.posterior
    s, i = data.subject_codes, data.item_codes
    ability = post["ability"].isel(chain=chains, draw=draws)
    diff = post["difficulty"].isel(chain=chains, draw=draws).values
    disc = post["discrimination"].isel(chain=chains, draw=draws).values
    guess = post["guessing"].isel(chain=chains, draw=draws).values if "guessing" in post else None
    if "dim" in ability.dims:
        dims = list(ability["dim"].values.astype(str))
        item_dim = np.array([dims.index(d) for d in result.constant_data["item_domain"].values.astype(str)])
        theta_all = ability.transpose("chain", "draw", "subject", "dim").values
    else:
        item_dim = None
        theta_all = ability.transpose("chain", "draw", "subject").values
    for c in range(len(chains)):
        for d in range(len(draws)):
            theta = theta_all[c, d][s, item_dim[i]] if item_dim is not None else theta_all[c, d][s]
            eta = disc[c, d][i] * (theta - diff[c, d][i])
            p = 1.0 / (1.0 + np.exp(-eta))
            if guess is not None:
                p = guess[c, d][i] + (1 - guess[c, d][i]) * p
            yield c, d, p


def _item_rest_corr(y: np.ndarray, s: np.ndarray, i: np.ndarray, n_subjects: int, n_items: int) -> np.ndarray:
    n_s = np.bincount(s, minlength=n_subjects)
    total = np.bincount(s, weights=y, minlength=n_subjects)
    rest = (total[s] - y) / np.maximum(n_s[s] - 1, 1)
    n = np.bincount(i, minlength=n_items).astype("float64")
    sy = np.bincount(i, weights=y, minlength=n_items)
    sr = np.bincount(i, weights=rest, minlength=n_items)
    syy = np.bincount(i, weights=y * y, minlength=n_items)
    srr = np.bincount(i, weights=rest * rest, minlength=n_items)
    syr = np.bincount(i, weights=y * rest, minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = syr - sy * sr / n
        return cov / np.sqrt((syy - sy**2 / n) * (srr - sr**2 / n))


@dataclass(frozen=True)
class PredictiveCheck:
    """Posterior predictive checks of a fit, with Bayesian p-values.

    Attributes
    ----------
    items
        One row per item: ``item``, ``benchmark``, ``n_responses``, ``observed_mean``, ``predicted_mean``,
        ``predicted_ci_low``, ``predicted_ci_high``, ``p_value_mean``, ``observed_item_rest``,
        ``predicted_item_rest``, ``p_value_item_rest`` and ``misfit`` (either p-value outside
        [alpha/2, 1 - alpha/2]; for fractional responses only the item mean counts, see ``notes``).
    subjects
        One row per subject: ``subject``, ``n_responses``, ``observed_total``, ``predicted_total``,
        ``predicted_ci_low``, ``predicted_ci_high``, ``p_value_total``, ``misfit``.
    alpha, ci_prob, n_draws
        Two-sided level of the misfit flags; interval probability; replicated data sets used.
    quasi_likelihood
        The responses are fractional and the fit used the fractional-logit quasi-likelihood.
    notes
        Sentences that qualify the check (the quasi-likelihood statement for fractional responses).
    """

    items: pd.DataFrame
    subjects: pd.DataFrame
    alpha: float
    ci_prob: float
    n_draws: int
    quasi_likelihood: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        n_items = int(self.items["misfit"].sum())
        n_subj = int(self.subjects["misfit"].sum())
        expected = self.alpha * 2  # two statistics per item
        worst = self.items.sort_values("p_value_item_rest").head(5)["item"].tolist()
        text = (
            f"Posterior predictive check ({self.n_draws} replicated data sets, two-sided level {self.alpha:g}): "
            f"{n_items} of {len(self.items)} items misfit (about {expected:.0%} expected by chance), "
            f"{n_subj} of {len(self.subjects)} subjects' total scores misfit. "
            f"Lowest item-rest p-values: {', '.join(worst)}."
        )
        return "\n".join([text, *(f"Note: {n}." for n in self.notes)])


def _p_value(replicated: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Mid-p: P(T_rep > T_obs) + P(T_rep = T_obs) / 2, per column."""
    with np.errstate(invalid="ignore"):
        above = (replicated > observed[None, :]).mean(axis=0)
        tie = np.isclose(replicated, observed[None, :], rtol=0, atol=1e-12).mean(axis=0)
    return above + 0.5 * tie


def posterior_predictive_check(
    result: Fit,
    data: ResponseData,
    *,
    n_draws: int = 200,
    alpha: float = 0.05,
    ci_prob: float = 0.9,
    seed: int | None = None,
) -> PredictiveCheck:
    """Replicate the data from the posterior and compare per-item and per-subject statistics.

    Statistics: each item's mean response, each item's correlation with the rest score (the subject's mean
    on the other items; a model that misses an item's relation to ability shows here), each subject's
    total score. Fractional responses are fitted with the fractional-logit quasi-likelihood, which has no
    distribution to replicate from: they are replicated as 0/1 with the predicted mean, so only the item
    means are comparable. For them the item-rest p-values are reported but do not flag misfit (0/1
    replications have a weaker item-rest relation than fractional scores), total-score p-values are
    conservative, and ``notes``, the tables' ``attrs`` and a warning say so.

    Parameters
    ----------
    result
        The fit.
    data
        The data it was fitted to (checked by checksum).
    n_draws
        Posterior draws to replicate from (thinned evenly).
    alpha
        Two-sided level: a p-value below alpha/2 or above 1 - alpha/2 flags misfit.
    ci_prob
        Probability of the predictive intervals.
    seed
        Seed of the replications.

    Returns
    -------
    PredictiveCheck
        ``items`` (one row per item) and ``subjects`` (one row per subject) tables.

    Raises
    ------
    FitError
        ``data`` is not the data of the fit.
    """
    _check_data(result, data)
    if not 0 < alpha < 1 or not 0 < ci_prob < 1:
        raise SpecError(f"posterior_predictive_check: alpha and ci_prob must be in (0, 1), got {alpha}, {ci_prob}")
    rng = np.random.default_rng(seed)
    chains, draws = _draw_index(result, n_draws)
    s, i, y = data.subject_codes, data.item_codes, data.values
    n_s, n_i = data.n_subjects, data.n_items
    n_rep = len(chains) * len(draws)
    item_mean = np.empty((n_rep, n_i))
    item_rest = np.empty((n_rep, n_i))
    subj_total = np.empty((n_rep, n_s))
    n_item = np.maximum(np.bincount(i, minlength=n_i), 1)
    for k, (_, _, p) in enumerate(_response_probabilities(result, data, chains, draws)):
        rep = (rng.random(len(p)) < p).astype("float64")
        item_mean[k] = np.bincount(i, weights=rep, minlength=n_i) / n_item
        item_rest[k] = _item_rest_corr(rep, s, i, n_s, n_i)
        subj_total[k] = np.bincount(s, weights=rep, minlength=n_s)
    obs_mean = np.bincount(i, weights=y, minlength=n_i) / n_item
    obs_rest = _item_rest_corr(y, s, i, n_s, n_i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # items answered alike in a replication have no correlation
        pred_rest = np.nanmean(item_rest, axis=0)
    obs_total = np.bincount(s, weights=y, minlength=n_s)
    lo, hi = (1 - ci_prob) / 2, 1 - (1 - ci_prob) / 2
    p_mean = _p_value(item_mean, obs_mean)
    p_rest = _p_value(np.nan_to_num(item_rest, nan=0.0), np.nan_to_num(obs_rest, nan=0.0))
    p_total = _p_value(subj_total, obs_total)

    def outside(p: np.ndarray) -> np.ndarray:
        return (p < alpha / 2) | (p > 1 - alpha / 2)

    items = pd.DataFrame(
        {
            "item": data.item_ids.to_numpy(dtype=str),
            "benchmark": data.items["benchmark"].to_numpy(),
            "n_responses": np.bincount(i, minlength=n_i),
            "observed_mean": obs_mean,
            "predicted_mean": item_mean.mean(axis=0),
            "predicted_ci_low": np.quantile(item_mean, lo, axis=0),
            "predicted_ci_high": np.quantile(item_mean, hi, axis=0),
            "p_value_mean": p_mean,
            "observed_item_rest": obs_rest,
            "predicted_item_rest": pred_rest,
            "p_value_item_rest": p_rest,
        }
    )
    # an item everyone (or no one) answers alike has no item-rest correlation to check
    constant = ~np.isfinite(obs_rest)
    items.loc[constant, "p_value_item_rest"] = np.nan
    quasi = not data.is_binary
    notes = []
    if quasi:
        notes.append(
            f"{QUASI_LIKELIHOOD_NOTE}; the replications are 0/1 draws with the predicted mean, so only the item "
            "means are comparable: item-rest p-values do not flag misfit and total-score p-values are conservative"
        )
        warnings.warn(notes[-1], UserWarning, stacklevel=2)
    items["misfit"] = outside(p_mean) | (outside(p_rest) & ~constant & (not quasi))
    subjects = pd.DataFrame(
        {
            "subject": data.subject_ids.to_numpy(dtype=str),
            "n_responses": np.bincount(s, minlength=n_s),
            "observed_total": obs_total,
            "predicted_total": subj_total.mean(axis=0),
            "predicted_ci_low": np.quantile(subj_total, lo, axis=0),
            "predicted_ci_high": np.quantile(subj_total, hi, axis=0),
            "p_value_total": p_total,
        }
    )
    subjects["misfit"] = outside(p_total)
    for table in (items, subjects):
        table.attrs.update(
            ci_prob=ci_prob,
            alpha=alpha,
            n_draws=n_rep,
            approximate=result.approximate,
            likelihood=_likelihood_name(data),
            notes=list(notes),
        )
    return PredictiveCheck(
        items=items,
        subjects=subjects,
        alpha=alpha,
        ci_prob=ci_prob,
        n_draws=n_rep,
        quasi_likelihood=quasi,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------- LOO
def log_likelihood(result: Fit, data: ResponseData, *, n_draws: int | None = 1000) -> xr.DataArray:
    """Pointwise log-likelihood of every response, per posterior draw.

    Parameters
    ----------
    result
        The fit.
    data
        The data it was fitted to (checked by checksum).
    n_draws
        Posterior draws to use, thinned evenly over each chain (``None``: all). Memory is
        ``n_draws x n_responses x 8`` bytes.

    Returns
    -------
    xarray.DataArray
        ``log_likelihood`` (chain, draw, response); coords ``subject`` and ``item`` on ``response``. ``attrs``:
        ``likelihood`` (``"bernoulli"`` or ``"fractional-logit quasi-likelihood"``), ``quasi_likelihood`` and,
        for fractional responses, ``note`` (:data:`QUASI_LIKELIHOOD_NOTE`, also given as a warning): the
        values are then quasi-log-likelihoods, not comparable with those of binary responses.
    """
    _check_data(result, data)
    chains, draws = _draw_index(result, n_draws)
    y = data.values
    out = np.empty((len(chains), len(draws), data.n_responses))
    for c, d, p in _response_probabilities(result, data, chains, draws):
        p = np.clip(p, 1e-300, 1 - 1e-16)
        out[c, d] = y * np.log(p) + (1 - y) * np.log1p(-p)
    quasi = not data.is_binary
    attrs: dict[str, Any] = {"likelihood": _likelihood_name(data), "quasi_likelihood": int(quasi)}
    if quasi:
        attrs["note"] = QUASI_LIKELIHOOD_NOTE
        warnings.warn(QUASI_LIKELIHOOD_NOTE, UserWarning, stacklevel=2)
    return xr.DataArray(
        out,
        attrs=attrs,
        dims=("chain", "draw", "response"),
        coords={
            "chain": chains,
            "draw": result.posterior["draw"].values[draws],
            "subject": ("response", data.responses["subject"].astype(str).to_numpy()),
            "item": ("response", data.responses["item"].astype(str).to_numpy()),
        },
        name="log_likelihood",
    )


def compare_fits(
    fits: dict[str, Fit] | list[Fit],
    data: ResponseData,
    *,
    n_draws: int | None = 1000,
    pareto_k_max: float = 0.7,
) -> pd.DataFrame:
    """Compare fits to the same data by PSIS-LOO (leave one response out), with Pareto-k warnings.

    Parameters
    ----------
    fits
        Fits by name (a list is named ``fit0``, ``fit1``, ... or by kind when the kinds differ).
    data
        The data every fit was made from (checked by checksum).
    n_draws
        Posterior draws used per fit (thinned evenly).
    pareto_k_max
        Responses whose Pareto k exceeds this make the LOO estimate unreliable: a warning says how many.

    Returns
    -------
    pandas.DataFrame
        arviz-stats' comparison table (rank, elpd, elpd_diff, se, dse, weight, ...), one row per fit,
        plus ``n_high_pareto_k``. ``attrs``: ``pareto_k_max``, ``approximate``, ``likelihood`` and, for
        fractional responses, ``note`` (:data:`QUASI_LIKELIHOOD_NOTE`, also given as one warning): the ELPD
        values are then quasi-likelihood values, comparable between these fits but not with fits to binary
        responses.
    """
    if isinstance(fits, list):
        kinds = [f.spec.kind for f in fits]
        names = kinds if len(set(kinds)) == len(kinds) else [f"fit{k}" for k in range(len(fits))]
        fits = dict(zip(names, fits, strict=True))
    if len(fits) < 2:
        raise SpecError("compare_fits: need at least two fits")
    trees = {}
    high = {}
    for name, result in fits.items():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="responses are fractional", category=UserWarning)
            ll = log_likelihood(result, data, n_draws=n_draws)
        tree = xr.DataTree.from_dict(
            {
                "posterior": xr.Dataset({"ll_total": ll.sum("response")}),
                "log_likelihood": xr.Dataset({"loglik": ll.drop_vars(["subject", "item"])}),
            }
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loo = azs.loo(tree, pointwise=True)
        k = np.asarray(loo.pareto_k).ravel()
        high[name] = int((k > pareto_k_max).sum())
        if high[name]:
            warnings.warn(
                f"{name}: {high[name]} of {len(k)} responses have Pareto k > {pareto_k_max:g}; "
                "the PSIS-LOO estimate of this fit is unreliable",
                UserWarning,
                stacklevel=2,
            )
        trees[name] = tree
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = azs.compare(trees)
    table["n_high_pareto_k"] = [high[name] for name in table.index]
    table.attrs.update(
        pareto_k_max=pareto_k_max,
        approximate=any(f.approximate for f in fits.values()),
        likelihood=_likelihood_name(data),
    )
    if not data.is_binary:
        table.attrs["note"] = QUASI_LIKELIHOOD_NOTE
        warnings.warn(QUASI_LIKELIHOOD_NOTE, UserWarning, stacklevel=2)
    return table
