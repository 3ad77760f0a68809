"""Population dependence: refits on other sets of systems, and whether each conclusion survives them.

A difficulty is relative to the systems that produced it: abilities are standardised within the population
fitted, so the target range, each benchmark's DDM, its Maximum Gap and the re-weighted ranks can move when the
systems change. :func:`population_samples` builds other populations from the data: a bootstrap of systems
(drawn with replacement; a system drawn twice enters as two systems, its copy renamed ``id~2``), and one
population per family left out when systems carry a family or organisation label. A user-given second
population is any other :class:`~irtbayes.data.responses.ResponseData` wrapped in a :class:`Population`.

:func:`refit_populations` fits and audits each population with :func:`irtbayes.fitting.fit.fit` and
:func:`irtbayes.auditing.run.audit`, in parallel processes by default, serially, or on a ``dask.distributed`` cluster
when a scheduler is given (:func:`irtbayes.core.parallel.map_tasks`).

:func:`population_stability` compares every refit with the reference audit and labels each conclusion
**stable** or **population-dependent** by one rule: a refit *agrees* with the reference when

- DDM (``ddm_w1``) and Maximum Gap width (``max_gap``): its posterior mean lies inside the reference's
  credible interval;
- gap location: the centre of its gap interval lies inside the reference's gap interval ``[gap_lo, gap_hi]``,
  or the reference's centre inside its interval (each on its own population's scale, as each audit states it);
- target range: each end moves by at most one reference bin width;
- re-weighted ranks: at least ``agreement`` of the systems they share have a rank percentile inside the
  reference's rank-percentile interval (percentile = (rank - 1) / (n - 1), so populations of different sizes
  compare); a population that shares no system with the reference does not vote on ranks;

and a conclusion is **stable** when at least ``agreement`` (default 0.8) of the refits agree, else
**population-dependent**; the evidence column says how many agreed and where the refits' values lay.
Each refit is also put on the reference scale by mean/sigma linking through the common items
(:func:`~irtbayes.robustness.linking.link_mean_sigma`), and its gap interval is reported on that scale too.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.auditing.settings import AuditSettings
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.parallel import Scheduler, map_tasks
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.settings import SamplerSettings

__all__ = [
    "DASK_ENGINE_DEPRECATED",
    "ENGINES",
    "REFIT_DEFAULTS",
    "Population",
    "PopulationStability",
    "RefitOutcome",
    "outcome_from_audit",
    "population_samples",
    "population_stability",
    "refit_populations",
]

log = logging.getLogger(__name__)

#: Where refits run on this machine; ``"dask"`` is deprecated (give ``scheduler=``) and runs as ``"process"``.
ENGINES = ("process", "serial", "dask")
#: The sampler settings of a refit by default: 2 chains of 500 draws after 500 warm-up, one core each, no
#: progress bar (:func:`refit_populations` adds seed 0; ``RobustnessSettings.refit`` its own seed).
REFIT_DEFAULTS: dict[str, Any] = {"chains": 2, "draws": 500, "tune": 500, "cores": 1, "progress": False}
#: Subject metadata columns read as a family or organisation label, in this order.
FAMILY_COLUMNS = ("family", "organisation", "organization", "org")
#: Difficulty draws kept from each refit for linking.
LINK_DRAWS = 200
_MEASURES = ("ddm_w1", "max_gap")
#: What ``engine="dask"`` and ``dask_address`` say, for one release.
DASK_ENGINE_DEPRECATED = (
    "engine='dask' and dask_address are deprecated and will be removed in the next release: give scheduler= "
    "(a dask.distributed scheduler's address or Client; --scheduler ADDRESS on the command line) to run refits on "
    "a Dask cluster; without one, engine='dask' runs as engine='process'"
)


@dataclass(frozen=True, eq=False)
class Population:
    """Another set of systems: ``name``, ``kind`` (``bootstrap``, ``leave-out``, ``population``) and its data.

    Examples
    --------
    >>> from irtbayes.robustness.population import Population
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(20, 30, seed=1)
    >>> population = Population("first ten", "population", data.subset(subjects=list(data.subject_ids[:10])))
    >>> population.name, population.data.n_subjects
    ('first ten', 10)
    """

    name: str
    kind: str
    data: ResponseData


def _family_labels(data: ResponseData, family: str | Mapping[str, str] | None) -> pd.Series | None:
    if family is None:
        present = [c for c in FAMILY_COLUMNS if c in data.subjects.columns]
        if not present:
            return None
        family = present[0]
    if isinstance(family, str):
        if family not in data.subjects.columns:
            raise DataError(
                f"{data.source}: no subject column '{family}'; the subject columns are {list(data.subjects.columns)}"
            )
        labels = data.subjects[family]
    else:
        labels = pd.Series(dict(family)).reindex(data.subject_ids)
    labels = labels.astype("string").str.strip()
    missing = labels.isna() | (labels == "")
    if missing.any():
        raise DataError(f"{data.source}: subject '{labels.index[missing.to_numpy()][0]}' has no family label")
    return labels.astype(str)


def _bootstrap_data(data: ResponseData, drawn: np.ndarray, name: str) -> ResponseData:
    frame = data.long_frame()
    ids = data.subject_ids.to_numpy(dtype=str)
    rows = frame.groupby("subject", sort=False, observed=True).indices
    seen: dict[str, int] = {}
    take, names = [], []
    for code in drawn:
        sid = ids[code]
        seen[sid] = seen.get(sid, 0) + 1
        take.append(rows[sid])
        names.append(np.full(len(rows[sid]), sid if seen[sid] == 1 else f"{sid}~{seen[sid]}", dtype=object))
    long = frame.iloc[np.concatenate(take)].reset_index(drop=True)
    long["subject"] = np.concatenate(names)
    items = data.items.loc[data.items.index.isin(long["item"].unique())].reset_index()
    trials = "trials" if "trials" in long.columns else None
    return ResponseData.from_long(
        long[["subject", "item", "response", *([trials] if trials else [])]],
        trials=trials,
        items=items,
        source=f"{data.source} [{name}]",
    )


def population_samples(
    data: ResponseData,
    *,
    bootstrap: int = 0,
    family: str | Mapping[str, str] | None = None,
    seed: int = 0,
) -> list[Population]:
    """Other populations of systems drawn from ``data``.

    Parameters
    ----------
    data
        The reference responses (one condition).
    bootstrap
        Number of bootstrap populations (systems drawn with replacement, as many as there are).
    family
        A subject metadata column, or a mapping subject -> family: one population per family, that family
        left out. None: the first of ``family``, ``organisation``, ``organization``, ``org`` that the subject
        table holds, if any.
    seed
        Seeds the bootstrap.

    Returns
    -------
    list of Population
        Bootstrap populations first (``bootstrap1``...), then ``without <family>``.

    Examples
    --------
    >>> from irtbayes.robustness.population import population_samples
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(20, 30, seed=1)
    >>> samples = population_samples(data, bootstrap=2, seed=0)
    >>> [(p.name, p.kind) for p in samples]
    [('bootstrap1', 'bootstrap'), ('bootstrap2', 'bootstrap')]
    """
    if bootstrap < 0:
        raise SpecError(f"bootstrap must be >= 0, got {bootstrap}")
    if len(data.conditions) > 1:
        raise DataError(f"{data.source}: choose one condition before refitting on other populations")
    rng = np.random.default_rng(seed)
    out = []
    for b in range(bootstrap):
        name = f"bootstrap{b + 1}"
        drawn = rng.integers(0, data.n_subjects, data.n_subjects)
        out.append(Population(name, "bootstrap", _bootstrap_data(data, drawn, name)))
    labels = _family_labels(data, family)
    if labels is not None:
        for fam in pd.unique(labels.to_numpy()):
            keep = labels.index[labels.to_numpy() != fam]
            if len(keep) < 3:
                raise DataError(f"{data.source}: leaving out family '{fam}' leaves {len(keep)} systems")
            sub = data.subset(subjects=keep)
            out.append(Population(f"without {fam}", "leave-out", sub))
    return out


@dataclass(frozen=True, eq=False)
class RefitOutcome:
    """What a refit keeps: the audit's benchmark and ranking tables, its range, and difficulty draws
    (:func:`outcome_from_audit` makes one; its example shows how).

    Attributes
    ----------
    name, kind
        The population's name and kind.
    n_subjects
        Systems in the population.
    benchmarks, ranking
        :class:`~irtbayes.auditing.result.AuditResult` tables.
    lo, hi, n_bins
        The audit's target range and number of bins.
    difficulty
        ``difficulty`` draws (draw, item), at most :data:`LINK_DRAWS`, for linking.
    converged
        The fit's convergence checks passed (True for hand-built posteriors; False for approximate fits, which
        MCMC checks do not apply to).
    convergence
        Why they failed: the first problem, with the worst r-hat, least bulk ESS and divergences ("" when
        they passed).
    approximate
        The refit came from an approximate method (``approx``, ADVI, Pathfinder), not NUTS.
    """

    name: str
    kind: str
    n_subjects: int
    benchmarks: pd.DataFrame
    ranking: pd.DataFrame
    lo: float
    hi: float
    n_bins: int
    difficulty: xr.Dataset
    converged: bool = True
    convergence: str = ""
    approximate: bool = False


def _thin_difficulty(posterior: xr.Dataset, n: int) -> xr.Dataset:
    var = posterior["difficulty"].stack(sample=("chain", "draw")).transpose("sample", "item")
    keep = np.unique(np.linspace(0, var.sizes["sample"] - 1, min(n, var.sizes["sample"])).astype(int))
    values = np.asarray(var.values[keep], dtype="float64")
    return xr.Dataset(
        {"difficulty": (("chain", "draw", "item"), values[None])},
        coords={"chain": [0], "draw": np.arange(len(keep)), "item": np.asarray(var["item"].values).astype(str)},
    )


def outcome_from_audit(
    name: str,
    kind: str,
    result: Any,
    posterior: xr.Dataset,
    *,
    n_subjects: int,
    converged: bool = True,
    convergence: str = "",
    approximate: bool = False,
) -> RefitOutcome:
    """A :class:`RefitOutcome` from an :class:`~irtbayes.auditing.result.AuditResult` and its posterior.

    Examples
    --------
    >>> from irtbayes.auditing.run import audit
    >>> from irtbayes.robustness.population import outcome_from_audit
    >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(30, 60, n_benchmarks=2, seed=1)
    >>> posterior = posterior_near_truth(data, truth, chains=2, draws=50, seed=2)
    >>> outcome = outcome_from_audit("bootstrap1", "bootstrap", audit(posterior, data, bins=5), posterior, n_subjects=30)
    >>> outcome.name, outcome.kind, outcome.converged, outcome.n_bins, outcome.benchmarks.shape[0]
    ('bootstrap1', 'bootstrap', True, 5, 3)
    >>> bool(outcome.lo < outcome.hi)
    True
    """
    return RefitOutcome(
        name=name,
        kind=kind,
        n_subjects=int(n_subjects),
        benchmarks=result.benchmarks.copy(),
        ranking=result.ranking.copy(),
        lo=float(result.target.lo),
        hi=float(result.target.hi),
        n_bins=int(result.target.n_bins),
        difficulty=_thin_difficulty(posterior, LINK_DRAWS),
        converged=bool(converged),
        convergence=convergence,
        approximate=bool(approximate),
    )


def _refit_one(task: tuple[Population, Any, SamplerSettings, AuditSettings]) -> RefitOutcome:
    """Fit and audit one population (runs in a worker process)."""
    import warnings

    from irtbayes.auditing.run import audit
    from irtbayes.fitting.fit import fit

    population, spec, sampler_settings, audit_settings = task
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # convergence is recorded in the outcome
        result = fit(population.data, spec, settings=sampler_settings)
    audited = audit(result.idata, population.data, settings=audit_settings)
    return outcome_from_audit(
        population.name,
        population.kind,
        audited,
        result.posterior,
        n_subjects=population.data.n_subjects,
        converged=bool(result.diagnostics.ok),
        convergence=_convergence_line(result.diagnostics),
        approximate=bool(result.approximate),
    )


def _convergence_line(diagnostics: Any) -> str:
    """The first failed check with the worst r-hat, least bulk ESS and divergences; "" when every check passed."""
    if diagnostics.ok:
        return ""
    first = diagnostics.problems[0] if diagnostics.problems else "not checked"
    return (
        f"{first} (max r-hat {diagnostics.max_rhat:.3f}, min bulk ESS {diagnostics.min_ess_bulk:.0f}, "
        f"{diagnostics.divergences} divergences)"
    )


def refit_populations(
    populations: Sequence[Population],
    *,
    spec: Any = None,
    settings: SamplerSettings | None = None,
    audit: AuditSettings | None = None,
    engine: str = "process",
    workers: int | None = None,
    scheduler: Scheduler = None,
    dask_address: str | None = None,
    on_done: Callable[[RefitOutcome], None] | None = None,
) -> list[RefitOutcome]:
    """Fit and audit every population; in parallel processes, serially, or on a Dask cluster.

    Parameters
    ----------
    populations
        From :func:`population_samples`, plus any user-given :class:`Population`.
    spec
        :class:`~irtbayes.model.spec.ModelSpec` of every refit (default: :func:`irtbayes.fitting.fit.fit`'s).
    settings
        The :class:`~irtbayes.fitting.settings.SamplerSettings` of every refit (default: :data:`REFIT_DEFAULTS`
        with seed 0). Every refit gets the same settings, seed included; a None seed lets each fit draw its own.
    audit
        The :class:`~irtbayes.auditing.settings.AuditSettings` of every refit's audit (give the reference's
        ``range`` and ``bins`` to audit every population against the same target; default: the defaults, so
        each population's own range).
    engine
        Where refits run when no scheduler is given: ``"process"`` (default: ``workers`` spawned processes) or
        ``"serial"``. ``"dask"`` is deprecated (a :class:`DeprecationWarning`): it runs as ``"process"``, or on
        the cluster at ``dask_address``.
    workers
        Processes for ``engine="process"`` (default: the executor's).
    scheduler
        A ``dask.distributed`` cluster to run the refits on: its address (``tcp://host:8786``) or a Client; None
        (default): the address in ``IRTBAYES_SCHEDULER`` if set, else this machine
        (:func:`~irtbayes.core.parallel.map_tasks`).
    dask_address
        Deprecated alias of ``scheduler`` (with ``engine="dask"``), kept for one release.
    on_done
        Called with each outcome as it arrives, e.g. to log progress.

    Returns
    -------
    list of RefitOutcome
        In the order of ``populations``.

    Raises
    ------
    SpecError
        Unknown engine, ``dask_address`` without ``engine="dask"``, ``settings``/``audit`` of the wrong type, a
        scheduler that cannot be reached or given without ``dask.distributed`` installed.

    Examples
    --------
    Each population is fitted with NUTS (minutes); with none there is nothing to do:

    >>> from irtbayes.robustness.population import refit_populations
    >>> refit_populations([])
    []
    """
    if engine not in ENGINES:
        raise SpecError(f"unknown engine {engine!r}; choose one of {list(ENGINES)}")
    if dask_address is not None and engine != "dask":
        raise SpecError("dask_address needs engine='dask'")
    if engine == "dask":
        warnings.warn(DASK_ENGINE_DEPRECATED, DeprecationWarning, stacklevel=2)
        engine, scheduler = "process", dask_address if scheduler is None else scheduler
    sampler_settings = SamplerSettings(**REFIT_DEFAULTS, seed=0) if settings is None else settings
    audit_settings = AuditSettings() if audit is None else audit
    if not isinstance(sampler_settings, SamplerSettings):
        raise SpecError(f"refit_populations: settings must be a SamplerSettings, got {type(settings).__name__}")
    if not isinstance(audit_settings, AuditSettings):
        raise SpecError(f"refit_populations: audit must be an AuditSettings, got {type(audit).__name__}")
    tasks = [(p, spec, sampler_settings, audit_settings) for p in populations]
    return map_tasks(
        _refit_one,
        tasks,
        scheduler=scheduler,
        local="processes" if engine == "process" else "serial",
        workers=workers,
        desc="population refits",
        on_done=None if on_done is None else lambda _, outcome: on_done(outcome),
    )


# ---------------------------------------------------------------------------------------------- stability
@dataclass(frozen=True)
class PopulationStability:
    """Result of :func:`population_stability`.

    Attributes
    ----------
    conclusions
        One row per (scope, conclusion): ``scope``, ``conclusion`` (``range``, ``ddm_w1``, ``max_gap``,
        ``gap_location``, ``ranks``), ``reference`` (text), ``agree``, ``refits``, ``share_agree``,
        ``label`` (``stable`` / ``population-dependent``; ``not compared`` for ranks when no refit shares
        systems with the reference), ``evidence``.
    refits
        One row per (refit, scope): ``population``, ``kind``, ``scope``, ``n_subjects``, ``lo``, ``hi``,
        ``ddm_w1_mean``, ``max_gap_mean``, ``gap_lo``, ``gap_hi``, ``gap_lo_linked``, ``gap_hi_linked``,
        ``link_slope``, ``link_intercept`` (posterior means of the per-draw link) with ``link_slope_ci_low``,
        ``link_slope_ci_high``, ``link_intercept_ci_low``, ``link_intercept_ci_high``, ``kendall_tau``,
        ``rank_share_inside``, ``converged``, ``approximate``, and ``agrees_{conclusion}`` for each conclusion.
    ranks
        One row per (refit, scope, shared subject): ``population``, ``scope``, ``subject``,
        ``ref_percentile_mean``, ``ref_percentile_low``, ``ref_percentile_high``, ``percentile``, ``inside``.
    agreement
        The share of agreeing refits a stable conclusion needs.

    Examples
    --------
    >>> import dataclasses
    >>> from irtbayes.robustness.population import PopulationStability
    >>> [f.name for f in dataclasses.fields(PopulationStability)]
    ['conclusions', 'refits', 'ranks', 'agreement']
    """

    conclusions: pd.DataFrame
    refits: pd.DataFrame
    ranks: pd.DataFrame
    agreement: float


def _percentiles(rank: pd.Series, n: int) -> pd.Series:
    return (rank - 1) / max(n - 1, 1)


def _rank_comparison(reference: pd.DataFrame, refit: pd.DataFrame, scope: str) -> pd.DataFrame:
    ref = reference.loc[reference["scope"] == scope].set_index("subject")
    new = refit.loc[refit["scope"] == scope].set_index("subject")
    shared = ref.index.intersection(new.index, sort=False)
    n_ref, n_new = len(ref), len(new)
    return pd.DataFrame(
        {
            "subject": shared,
            "ref_rank_mean": ref.loc[shared, "rank_mean"].to_numpy(),
            "ref_percentile_mean": _percentiles(ref.loc[shared, "rank_mean"], n_ref).to_numpy(),
            "ref_percentile_low": _percentiles(ref.loc[shared, "rank_ci_low"], n_ref).to_numpy(),
            "ref_percentile_high": _percentiles(ref.loc[shared, "rank_ci_high"], n_ref).to_numpy(),
            "rank_mean": new.loc[shared, "rank_mean"].to_numpy(),
            "percentile": _percentiles(new.loc[shared, "rank_mean"], n_new).to_numpy(),
        }
    )


def _kendall(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2:
        return float("nan")
    from scipy import stats

    return float(stats.kendalltau(a, b).statistic)


def _fmt(x: float) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.2f}"


def population_stability(
    reference: Any,
    reference_posterior: Any,
    refits: Sequence[RefitOutcome],
    *,
    agreement: float = 0.8,
) -> PopulationStability:
    """Label each conclusion of the reference audit stable or population-dependent (rule in the module notes).

    Parameters
    ----------
    reference
        The reference :class:`~irtbayes.auditing.result.AuditResult`.
    reference_posterior
        The reference fit (or its posterior), for linking.
    refits
        From :func:`refit_populations` or :func:`outcome_from_audit`.
    agreement
        Share of agreeing refits a stable conclusion needs (and, for ranks, the share of shared systems).

    Returns
    -------
    PopulationStability

    Examples
    --------
    A refit of the same population, with other draws, agrees with the reference on the range, DDM, gap widths
    and ranks; where the widest gap lies is a near-tie between two regions here (the modal bin holds it in
    about half of the draws), and the refit settles it the other way for the whole set:

    >>> from irtbayes.auditing.run import audit
    >>> from irtbayes.robustness.population import outcome_from_audit, population_stability
    >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(30, 60, n_benchmarks=2, seed=1)
    >>> reference_posterior = posterior_near_truth(data, truth, chains=2, draws=50, seed=2)
    >>> reference = audit(reference_posterior, data, bins=5)
    >>> again = posterior_near_truth(data, truth, chains=2, draws=50, seed=3)
    >>> refit = outcome_from_audit("again", "population", audit(again, data, bins=5), again, n_subjects=30)
    >>> stability = population_stability(reference, reference_posterior, [refit])
    >>> stability.conclusions.query("label != 'stable'")[["scope", "conclusion", "label"]].to_numpy().tolist()
    [['all', 'gap_location', 'population-dependent']]
    >>> stability.conclusions.query("scope == 'all'")["conclusion"].tolist()
    ['range', 'ddm_w1', 'max_gap', 'gap_location', 'ranks']
    """
    if not refits:
        raise SpecError("population_stability: no refits to compare")
    if not 0 < agreement <= 1:
        raise SpecError(f"agreement must be in (0, 1], got {agreement}")
    bench = reference.benchmarks.set_index("scope")
    rows: list[dict[str, Any]] = []
    rank_rows: list[pd.DataFrame] = []
    for r in refits:
        link = _link_to_reference(r, reference, reference_posterior)
        other = r.benchmarks.set_index("scope")
        for scope in bench.index.intersection(other.index, sort=False):
            out, ranks = _compare_scope(reference, r, scope, bench.loc[scope], other.loc[scope], link, agreement)
            rank_rows.append(ranks)
            rows.append(out)
    table = pd.DataFrame(rows)
    out_table = _conclusions_table(reference, bench, table, agreement)
    ranks_table = pd.concat(rank_rows, ignore_index=True) if rank_rows else pd.DataFrame()
    return PopulationStability(conclusions=out_table, refits=table, ranks=ranks_table, agreement=float(agreement))


def _link_to_reference(r: RefitOutcome, reference: Any, reference_posterior: Any) -> tuple[float, float, list[float]]:
    """Mean/sigma link of a refit to the reference scale: mean slope, mean intercept and their interval bounds."""
    from irtbayes.robustness.linking import link_mean_sigma

    try:
        link = link_mean_sigma(r.difficulty, reference_posterior, ci_prob=reference.ci_prob)
        constants = link.table().set_index("constant")
        slope, intercept = float(link.slope.mean()), float(link.intercept.mean())
        bounds = [float(constants.loc[c, k]) for c in ("slope", "intercept") for k in ("ci_low", "ci_high")]
    except SpecError:  # fewer than two common items
        slope = intercept = float("nan")
        bounds = [float("nan")] * 4
    return slope, intercept, bounds


def _compare_scope(
    reference: Any,
    r: RefitOutcome,
    scope: Any,
    ref_row: pd.Series,
    row: pd.Series,
    link: tuple[float, float, list[float]],
    agreement: float,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """One refit's row of the refits table for one scope (with its agreement flags), and its rank comparison."""
    slope, intercept, bounds = link
    width = (reference.target.hi - reference.target.lo) / reference.target.n_bins
    out: dict[str, Any] = {
        "population": r.name,
        "kind": r.kind,
        "scope": scope,
        "n_subjects": r.n_subjects,
        "lo": r.lo,
        "hi": r.hi,
        "converged": r.converged,
        "approximate": r.approximate,
        "convergence": r.convergence,
        "link_slope": slope,
        "link_intercept": intercept,
        "link_slope_ci_low": bounds[0],
        "link_slope_ci_high": bounds[1],
        "link_intercept_ci_low": bounds[2],
        "link_intercept_ci_high": bounds[3],
    }
    for m in _MEASURES:
        out[f"{m}_mean"] = float(row[f"{m}_mean"])
        out[f"agrees_{m}"] = bool(ref_row[f"{m}_ci_low"] <= row[f"{m}_mean"] <= ref_row[f"{m}_ci_high"])
    out["gap_lo"], out["gap_hi"] = float(row["gap_lo"]), float(row["gap_hi"])
    out["gap_lo_linked"] = slope * out["gap_lo"] + intercept
    out["gap_hi_linked"] = slope * out["gap_hi"] + intercept
    centre = (out["gap_lo"] + out["gap_hi"]) / 2
    ref_centre = (ref_row["gap_lo"] + ref_row["gap_hi"]) / 2
    out["agrees_gap_location"] = bool(
        ref_row["gap_lo"] <= centre <= ref_row["gap_hi"] or out["gap_lo"] <= ref_centre <= out["gap_hi"]
    )
    out["agrees_range"] = bool(abs(r.lo - reference.target.lo) <= width and abs(r.hi - reference.target.hi) <= width)
    ranks = _rank_comparison(reference.ranking, r.ranking, scope)
    inside = (ranks["percentile"] >= ranks["ref_percentile_low"]) & (
        ranks["percentile"] <= ranks["ref_percentile_high"]
    )
    ranks["inside"] = inside.to_numpy()
    ranks.insert(0, "scope", scope)
    ranks.insert(0, "population", r.name)
    out["kendall_tau"] = _kendall(ranks["ref_rank_mean"].to_numpy(), ranks["rank_mean"].to_numpy())
    out["rank_share_inside"] = float(inside.mean()) if len(ranks) else float("nan")
    # no shared systems (a disjoint population): ranks cannot be compared, so this refit does not vote
    out["agrees_ranks"] = bool(out["rank_share_inside"] >= agreement) if len(ranks) else None
    return out, ranks


def _conclusion_texts(reference: Any, ref_row: pd.Series, group: pd.DataFrame) -> dict[str, tuple[str, pd.Series, str]]:
    """Per conclusion: the reference's value as text, the refits' values, and what those values are."""
    return {
        "range": (f"[{_fmt(reference.target.lo)}, {_fmt(reference.target.hi)}]", group["lo"], "lo"),
        "ddm_w1": (
            f"{_fmt(ref_row['ddm_w1_mean'])} [{_fmt(ref_row['ddm_w1_ci_low'])}, {_fmt(ref_row['ddm_w1_ci_high'])}]",
            group["ddm_w1_mean"],
            "mean",
        ),
        "max_gap": (
            f"{_fmt(ref_row['max_gap_mean'])} [{_fmt(ref_row['max_gap_ci_low'])}, {_fmt(ref_row['max_gap_ci_high'])}]",
            group["max_gap_mean"],
            "mean",
        ),
        "gap_location": (
            f"[{_fmt(ref_row['gap_lo'])}, {_fmt(ref_row['gap_hi'])}]",
            (group["gap_lo"] + group["gap_hi"]) / 2,
            "centre",
        ),
        "ranks": ("rank intervals", group["kendall_tau"], "Kendall tau"),
    }


def _conclusion_row(
    scope: Any,
    conclusion: str,
    texts: tuple[str, pd.Series, str],
    group: pd.DataFrame,
    agreement: float,
) -> dict[str, Any]:
    """One row of the conclusions table: how many refits agree, the label and the evidence."""
    ref_text, values, what = texts
    voting = group.loc[group[f"agrees_{conclusion}"].notna()]
    agree = int(voting[f"agrees_{conclusion}"].astype(bool).sum())
    n = len(voting)
    by_kind = ", ".join(
        f"{kind} {int(g[f'agrees_{conclusion}'].astype(bool).sum())}/{len(g)}"
        for kind, g in voting.groupby("kind", sort=False)
    )
    share = agree / n if n else float("nan")
    if n == 0:
        label = "not compared"
    else:
        label = "stable" if share >= agreement else "population-dependent"
    if n < len(group):
        by_kind += f"; {len(group) - n} refit(s) share no systems with the reference and do not vote"
    evidence = (
        f"{agree} of {n} refits agree ({by_kind}); refit {what} from {_fmt(float(values.min()))} to "
        f"{_fmt(float(values.max()))}"
    )
    if conclusion == "range":
        evidence += f" (low end), high end {_fmt(float(group['hi'].min()))} to {_fmt(float(group['hi'].max()))}"
    return {
        "scope": scope,
        "conclusion": conclusion,
        "reference": ref_text,
        "agree": agree,
        "refits": n,
        "share_agree": share,
        "label": label,
        "evidence": evidence,
    }


def _conclusions_table(reference: Any, bench: pd.DataFrame, table: pd.DataFrame, agreement: float) -> pd.DataFrame:
    """The conclusions table: one row per (scope, conclusion), the range judged once (first scope)."""
    conclusions = []
    for scope, group in table.groupby("scope", sort=False):
        texts = _conclusion_texts(reference, bench.loc[scope], group)
        if scope != table["scope"].iloc[0]:
            del texts["range"]  # one target range for every scope: judged once
        for conclusion, conclusion_texts in texts.items():
            conclusions.append(_conclusion_row(scope, conclusion, conclusion_texts, group, agreement))
    out_table = pd.DataFrame(conclusions)
    out_table.attrs["agreement"] = agreement
    return out_table
