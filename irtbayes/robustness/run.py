"""``check_robustness(data, out=..., settings=RobustnessSettings(...))``: condition sensitivity, population dependence and revisions, written to a folder.

Files written into ``out`` (each atomically):

- ``conditions_items.csv``, ``conditions_subjects.csv`` (when the data has two or more conditions; see
  :func:`~irtbayes.robustness.conditions.condition_effects`);
- ``stability.csv`` (one row per benchmark and conclusion: label and evidence), ``population_refits.csv``
  (one row per refit and benchmark) and ``population_ranks.csv`` (when other populations were refitted; see
  :func:`~irtbayes.robustness.population.population_stability`);
- ``revision_versions.csv``, ``revision_subjects.csv`` (when a revision was compared);
- ``robustness.json``: Kendall's tau and the maximum rank displacement between conditions with credible
  intervals, the flagging rule, the stability labels and the revision's findings;
- and, written by :func:`irtbayes.reporting.robustness.report_robustness` (the command line does it unless
  ``--no-report``), ``report.html``, ``report.md`` and ``figures/``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.settings import AuditSettings
from irtbayes.core.errors import DataError, SpecError, refuse_unknown
from irtbayes.core.files import atomic_write_json, atomic_write_text, json_ready
from irtbayes.core.multiplicity import FDR_RULES
from irtbayes.core.parallel import Scheduler, check_scheduler, scheduler_label
from irtbayes.core.summaries import check_ci_prob, format_interval, summary_table
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.result import Fit
from irtbayes.fitting.settings import SamplerSettings
from irtbayes.model.spec import ModelSpec
from irtbayes.robustness.condition_model import EFFECT_PRIORS
from irtbayes.robustness.conditions import (
    ConditionEffects,
    condition_effects,
    fit_conditions,
    save_conditions,
)
from irtbayes.robustness.population import (
    DASK_ENGINE_DEPRECATED,
    ENGINES,
    REFIT_DEFAULTS,
    Population,
    PopulationStability,
    RefitOutcome,
    population_samples,
    population_stability,
    refit_populations,
)
from irtbayes.robustness.revision import RevisionComparison, compare_revision

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "SUMMARY_PARTS",
    "ConditionSettings",
    "RobustnessResult",
    "RobustnessSettings",
    "check_robustness",
    "convergence_problem",
]

log = logging.getLogger(__name__)

#: The parts :meth:`RobustnessResult.summary` can show, in the order its default looks for them.
SUMMARY_PARTS = ("conditions", "population")


@dataclass
class RobustnessResult:
    """What :func:`check_robustness` found; any part not asked for (or not possible) is None.

    Like every result: :meth:`summary` (a table, ArviZ's column names), :meth:`to_dict` (``robustness.json``),
    :meth:`to_text` (what the command line prints) and ``plot_*`` methods (each returns its Axes).

    Attributes
    ----------
    conditions
        The condition effects and rank agreement (:class:`~irtbayes.robustness.conditions.ConditionEffects`).
    population
        The stability of each conclusion over the refits
        (:class:`~irtbayes.robustness.population.PopulationStability`), and ``refits`` their outcomes.
    revision
        The revised benchmark against the original (:class:`~irtbayes.robustness.revision.RevisionComparison`).
    files
        What :func:`check_robustness` wrote, by name.

    Examples
    --------
    >>> from irtbayes.robustness.run import RobustnessResult
    >>> empty = RobustnessResult()
    >>> empty.conditions is None and empty.refits == []
    True
    >>> empty.to_dict(), empty.to_text()
    ({}, 'nothing to compare')
    """

    conditions: ConditionEffects | None = None
    population: PopulationStability | None = None
    refits: list[RefitOutcome] = field(default_factory=list)
    revision: RevisionComparison | None = None
    files: dict[str, Path] = field(default_factory=dict)

    def summary(self, part: str | None = None) -> pd.DataFrame:
        """One table of the result: the rank agreement between conditions, or the stability of each conclusion.

        Parameters
        ----------
        part
            ``"conditions"``: :attr:`ConditionEffects.agreement <irtbayes.robustness.conditions.ConditionEffects>`,
            one row per pair of conditions: ``condition_a``, ``condition_b``, ``kendall_tau_{mean,sd}``,
            ``kendall_tau_ci_low``, ``kendall_tau_ci_high``, the same for ``max_rank_displacement``, ``max_rank_displacement_p_zero`` and
            ``n_subjects`` (the systems seen under both).
            ``"population"``: :attr:`PopulationStability.conclusions
            <irtbayes.robustness.population.PopulationStability>`, one row per (scope, conclusion): ``scope``,
            ``conclusion``, ``reference``, ``agree``, ``refits``, ``share_agree``, ``label``, ``evidence`` (no
            interval columns: the reference's intervals are in ``reference``, as text). None (default): the
            first of these the result holds: a change of prompt format or condition is read first, from the
            ranks' agreement with intervals over the draws; then whether the conclusions survive other
            populations.

        Returns
        -------
        pandas.DataFrame
            A copy; ``attrs["part"]`` names the part (None, with no rows and no columns, when the result holds
            neither), ``attrs["ci_prob"]`` the intervals' probability (conditions).

        Raises
        ------
        SpecError
            An unknown part, or one the result does not hold.

        Examples
        --------
        >>> from irtbayes.robustness.run import RobustnessResult
        >>> RobustnessResult().summary().attrs
        {'part': None}
        >>> RobustnessResult().summary("conditions")
        Traceback (most recent call last):
            ...
        irtbayes.core.errors.SpecError: robustness: no condition comparison in this result (it needs data with two conditions or more)
        """
        if part is not None and part not in SUMMARY_PARTS:
            raise SpecError(f"robustness: no summary part {part!r}; the parts are {list(SUMMARY_PARTS)}")
        held = [name for name in SUMMARY_PARTS if getattr(self, name) is not None]
        if part is None:
            if not held:
                empty = pd.DataFrame()
                empty.attrs["part"] = None
                return empty
            part = held[0]
        if part == "conditions":
            c = self._conditions()
            table = summary_table(c.agreement, c.ci_prob)
            table.attrs.update(part="conditions", ci_prob=c.ci_prob)
            return table
        table = self._population().conclusions.copy()
        table.attrs = {**table.attrs, "part": "population"}
        return table

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: :meth:`summary_dict`, what ``robustness.json`` holds."""
        return self.summary_dict()

    def plot_rank_shifts(self, *, condition: str | None = None, top_k: int = 30, ax: Axes | None = None) -> Axes:
        """Each system's rank under the reference condition and under ``condition`` (default: the first other one).

        The ``top_k`` systems that move most (:func:`~irtbayes.robustness.figures.plot_rank_shifts`).
        """
        from irtbayes.robustness.figures import plot_rank_shifts

        c = self._conditions()
        return plot_rank_shifts(
            c.subjects, reference=c.reference, condition=self._other_condition(condition), top_k=top_k, ax=ax
        )

    def plot_condition_effects(self, *, condition: str | None = None, top_k: int = 30, ax: Axes | None = None) -> Axes:
        """Each item's effect of ``condition`` (default: the first other one) on difficulty, with its common shift.

        The ``top_k`` items farthest from the shift (:func:`~irtbayes.robustness.figures.plot_condition_effects`).
        """
        from irtbayes.robustness.figures import plot_condition_effects

        c = self._conditions()
        cond = self._other_condition(condition)
        shift = float(c.shifts.set_index("condition").loc[cond, "shift_mean"])
        return plot_condition_effects(c.items, condition=cond, shift=shift, top_k=top_k, ax=ax)

    def plot_gap_locations(self, *, scope: str | None = None, ax: Axes | None = None) -> Axes:
        """The widest gap of ``scope`` (default: the first, all items) in every refit beside the reference's.

        See :func:`~irtbayes.robustness.figures.plot_gap_locations`.
        """
        from irtbayes.robustness.figures import plot_gap_locations

        p = self._population()
        scopes = [str(x) for x in p.conclusions["scope"].drop_duplicates()]
        chosen = scopes[0] if scope is None and scopes else scope
        if chosen not in scopes:
            raise SpecError(f"robustness: no scope {scope!r} in the population comparison; the scopes are {scopes}")
        return plot_gap_locations(p.refits, reference=_reference_gap(p, chosen), scope=chosen, ax=ax)

    def _conditions(self) -> ConditionEffects:
        if self.conditions is None:
            raise SpecError(
                "robustness: no condition comparison in this result (it needs data with two conditions or more)"
            )
        return self.conditions

    def _population(self) -> PopulationStability:
        if self.population is None:
            raise SpecError(
                "robustness: no population comparison in this result (ask for bootstrap, family or populations)"
            )
        return self.population

    def _other_condition(self, condition: str | None) -> str:
        c = self._conditions()
        others = [x for x in c.conditions if x != c.reference]
        if condition is None:
            return others[0]
        if condition not in others:
            raise SpecError(f"robustness: no condition {condition!r} besides the reference; the others are {others}")
        return condition

    def summary_dict(self) -> dict[str, Any]:
        """The content of ``robustness.json``."""
        out: dict[str, Any] = {}
        if self.conditions is not None:
            out["conditions"] = self.conditions.summary_dict()
        if self.population is not None:
            out["population"] = {
                "rule": (
                    "a refit agrees when its posterior mean (DDM, Maximum Gap) lies in the reference's credible "
                    "interval, its gap centre in the reference gap or the reference's centre in its gap, each range "
                    "end within one bin width, and at least `agreement` of shared systems' rank percentiles in the "
                    "reference's rank-percentile interval; a conclusion is stable when at least `agreement` of the "
                    "refits agree"
                ),
                "agreement": self.population.agreement,
                "refits": [
                    {
                        "name": r.name,
                        "kind": r.kind,
                        "n_subjects": r.n_subjects,
                        "converged": r.converged,
                        "approximate": r.approximate,
                        "convergence": r.convergence,
                    }
                    for r in self.refits
                ],
                "conclusions": self.population.conclusions.to_dict(orient="records"),
            }
        if self.revision is not None:
            out["revision"] = {
                "gap": self.revision.gap,
                "changes": self.revision.changes.to_dict(orient="records"),
                "regressing_subjects": self.revision.subjects.loc[self.revision.subjects["regresses"], "subject"]
                .astype(str)
                .tolist(),
                "summary": self.revision.summary,
            }
        return json_ready(out)

    def to_text(self) -> str:
        """A few lines for the terminal."""
        lines = []
        if self.conditions is not None:
            c = self.conditions
            lines.append(
                f"conditions ({', '.join(c.conditions)}; reference {c.reference}): "
                f"{int(c.items['flagged'].sum())} of {len(c.items)} items and {int(c.subjects['flagged'].sum())} of "
                f"{len(c.subjects)} systems flagged (Bayesian FDR {c.fdr:g})"
            )
            if not c.sampler.get("converged", True):
                lines.append(f"  NOT CONVERGED: {convergence_problem(c.sampler)}; read these as provisional")
            for _, row in c.agreement.iterrows():
                lines.append(
                    f"  {row['condition_a']} vs {row['condition_b']}: Kendall tau "
                    f"{format_interval(row, 'kendall_tau', digits=3)}, max rank displacement "
                    f"{format_interval(row, 'max_rank_displacement', digits=1, ends='{:.0f}'.format)}"
                )
        if self.population is not None:
            table = self.population.conclusions
            dependent = table.loc[table["label"] == "population-dependent"]
            unconverged = sum(not r.converged and not r.approximate for r in self.refits)
            approximate = sum(r.approximate for r in self.refits)
            lines.append(
                f"populations: {len(self.refits)} refits; {len(dependent)} of {len(table)} conclusions "
                "population-dependent"
                + (f" ({unconverged} refits did not pass the convergence checks)" if unconverged else "")
                + (f" ({approximate} refits APPROXIMATE: MCMC checks do not apply)" if approximate else "")
            )
            for r in self.refits:
                if not r.converged and not r.approximate:
                    lines.append(f"  {r.name} NOT CONVERGED: {r.convergence or 'convergence checks failed'}")
            for _, row in dependent.head(20).iterrows():
                lines.append(f"  {row['scope']} {row['conclusion']}: {row['evidence']}")
        if self.revision is not None:
            lines += ["revision:", *[f"  {s}" for s in self.revision.summary]]
        return "\n".join(lines) if lines else "nothing to compare"


@dataclass(frozen=True)
class ConditionSettings:
    """The settings of the condition-effects fit (:func:`~irtbayes.robustness.conditions.fit_conditions`).

    Attributes
    ----------
    kind
        ``"2pl"`` (default) or ``"1pl"`` (see :func:`~irtbayes.robustness.condition_model.build_condition_model`).
    effects
        Prior of the condition effects: ``"horseshoe"`` (default) or ``"normal"``.
    chains, draws, tune
        NUTS chains (default 4), kept draws (1000) and warm-up draws (1000) per chain.
    sampler
        ``"nutpie"`` (default) or ``"pymc"``.
    target_accept
        NUTS target acceptance rate in (0, 1) (default 0.9).
    progress
        Show the sampler's progress bar (default False).

    Examples
    --------
    >>> from irtbayes.robustness.run import ConditionSettings
    >>> ConditionSettings(draws=500).to_dict()["draws"]
    500
    """

    kind: str = "2pl"
    effects: str = "horseshoe"
    chains: int = 4
    draws: int = 1000
    tune: int = 1000
    sampler: str = "nutpie"
    target_accept: float = 0.9
    progress: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("1pl", "2pl"):
            raise SpecError(f"conditions: kind must be '1pl' or '2pl', got {self.kind!r}")
        if self.effects not in EFFECT_PRIORS:
            raise SpecError(f"conditions: effects must be one of {list(EFFECT_PRIORS)}, got {self.effects!r}")
        if self.sampler not in ("nutpie", "pymc"):
            raise SpecError(f"conditions: sampler must be 'nutpie' or 'pymc', got {self.sampler!r}")
        for name, low in (("chains", 1), ("draws", 1), ("tune", 0)):
            _check_int(f"conditions: {name}", getattr(self, name), low)
        if not (_is_number(self.target_accept) and 0 < self.target_accept < 1):
            raise SpecError(f"conditions: target_accept must be in (0, 1), got {self.target_accept!r}")
        if not isinstance(self.progress, bool):
            raise SpecError(f"conditions: progress must be True or False, got {self.progress!r}")

    def to_dict(self) -> dict[str, Any]:
        """The fields as keyword arguments of :func:`~irtbayes.robustness.conditions.fit_conditions`."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RobustnessSettings:
    """Every setting of :func:`check_robustness`, with its default.

    Attributes
    ----------
    reference_condition
        The condition the others are compared with (default None: ``"original"`` when present, else the first).
    bootstrap
        Bootstrap refits over systems (default 0).
    family
        Leave-one-family-out refits: a subject column naming each system's family, or a mapping subject ->
        family (default None: none).
    populations
        User-given other populations to refit (default none; see :mod:`~irtbayes.robustness.population`).
    revision
        ``(original, revised)`` benchmark names to compare on one scale (default None; see
        :mod:`~irtbayes.robustness.revision`).
    spec
        The :class:`~irtbayes.model.spec.ModelSpec` of the reference fit when it is fitted (default None: fit's
        default); refits use the reference fit's spec.
    fit
        Sampler settings of the reference fit when it is fitted (default: fit's defaults without a progress bar;
        a None seed takes ``seed``).
    refit
        Sampler settings of each population's refit (default: 2 chains of 500 draws after 500 warm-up, one core
        each, no progress bar; a None seed takes ``seed``).
    conditions
        Settings of the condition-effects fit (default :class:`ConditionSettings`; its seed is ``seed``).
    audit
        Settings of every audit (default: :class:`~irtbayes.auditing.settings.AuditSettings` with ``ci_prob``);
        its ``ci_prob`` must be ``ci_prob``.
    engine, workers
        Where refits run on this machine: ``"process"`` (default) or ``"serial"``; the processes (default None: the
        executor's). See :func:`~irtbayes.robustness.population.refit_populations`.
    scheduler
        A ``dask.distributed`` cluster to run the refits on: its address (``tcp://host:8786``) or a Client
        (default None: the address in ``IRTBAYES_SCHEDULER`` if set, else this machine; docs/scale.md).
    dask_address
        Deprecated, with ``engine="dask"``, for one release (a :class:`DeprecationWarning`): read as
        ``scheduler``, and ``engine="dask"`` as ``"process"``.
    ci_prob
        Probability of every credible interval (default 0.9).
    fdr, min_effect, against, fdr_rule
        Flagging of condition effects: Bayesian false discovery rate (default 0.05), the least effect in logits
        (0), ``"shift"`` (default: against the condition's common shift) or ``"zero"``, and ``"each"`` (default)
        or ``"mean"`` (see :func:`~irtbayes.robustness.conditions.condition_effects`).
    agreement
        Share of agreeing refits a stable conclusion needs, in (0, 1] (default 0.8).
    seed
        Seeds the bootstrap and the fits (default 0).

    Examples
    --------
    >>> from irtbayes.robustness.run import RobustnessSettings
    >>> settings = RobustnessSettings(bootstrap=4, seed=1)
    >>> settings.refit.draws, settings.audit_settings().ci_prob, settings.to_dict()["bootstrap"]
    (500, 0.9, 4)
    >>> RobustnessSettings(agreement=0)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.SpecError: robustness: agreement must be in (0, 1], got 0
    """

    reference_condition: str | None = None
    bootstrap: int = 0
    family: str | Mapping[str, str] | None = None
    populations: Sequence[Population] = ()
    revision: tuple[str, str] | None = None
    spec: ModelSpec | None = None
    fit: SamplerSettings = field(default_factory=lambda: SamplerSettings(progress=False))
    refit: SamplerSettings = field(default_factory=lambda: SamplerSettings(**REFIT_DEFAULTS))
    conditions: ConditionSettings = field(default_factory=ConditionSettings)
    audit: AuditSettings | None = None
    engine: str = "process"
    workers: int | None = None
    scheduler: Scheduler = None
    dask_address: str | None = None
    ci_prob: float = 0.9
    fdr: float = 0.05
    min_effect: float = 0.0
    against: str = "shift"
    fdr_rule: str = "each"
    agreement: float = 0.8
    seed: int = 0

    def __post_init__(self) -> None:
        _check_int("robustness: bootstrap", self.bootstrap, 0)
        _check_int("robustness: seed", self.seed, 0)
        if self.workers is not None:
            _check_int("robustness: workers", self.workers, 1)
        if self.engine not in ENGINES:
            raise SpecError(f"robustness: unknown engine {self.engine!r}; choose one of {list(ENGINES)}")
        if self.dask_address is not None and self.engine != "dask":
            raise SpecError("robustness: dask_address needs engine='dask'")
        object.__setattr__(self, "scheduler", check_scheduler(self.scheduler, "robustness: scheduler"))
        if self.engine == "dask":  # read as the scheduler and the local processes, for one release
            warnings.warn(DASK_ENGINE_DEPRECATED, DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "scheduler", self.dask_address if self.scheduler is None else self.scheduler)
            object.__setattr__(self, "engine", "process")
            object.__setattr__(self, "dask_address", None)
        ci_prob = check_ci_prob(self.ci_prob)
        if not (_is_number(self.fdr) and 0 < self.fdr <= 1):
            raise SpecError(f"robustness: fdr must be in (0, 1], got {self.fdr!r}")
        if not (_is_number(self.min_effect) and math.isfinite(self.min_effect) and self.min_effect >= 0):
            raise SpecError(f"robustness: min_effect must be a number >= 0, got {self.min_effect!r}")
        if self.against not in ("shift", "zero"):
            raise SpecError(f"robustness: against must be 'shift' or 'zero', got {self.against!r}")
        if self.fdr_rule not in FDR_RULES:
            raise SpecError(f"robustness: fdr_rule must be one of {list(FDR_RULES)}, got {self.fdr_rule!r}")
        if not (_is_number(self.agreement) and 0 < self.agreement <= 1):
            raise SpecError(f"robustness: agreement must be in (0, 1], got {self.agreement!r}")
        if self.family is not None and not isinstance(self.family, (str, Mapping)):
            raise SpecError(f"robustness: family must be a column name or a mapping, got {type(self.family).__name__}")
        if self.revision is not None and (
            isinstance(self.revision, str)
            or len(self.revision) != 2
            or not all(isinstance(b, str) for b in self.revision)
        ):
            raise SpecError(f"robustness: revision must be (original, revised) benchmark names, got {self.revision!r}")
        if any(not isinstance(p, Population) for p in self.populations):
            raise SpecError("robustness: populations must be Population objects")
        for name, kind in (("fit", SamplerSettings), ("refit", SamplerSettings), ("conditions", ConditionSettings)):
            if not isinstance(getattr(self, name), kind):
                raise SpecError(
                    f"robustness: {name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}"
                )
        if self.spec is not None and not isinstance(self.spec, ModelSpec):
            raise SpecError(f"robustness: spec must be a ModelSpec, got {type(self.spec).__name__}")
        if self.audit is not None and not isinstance(self.audit, AuditSettings):
            raise SpecError(f"robustness: audit must be an AuditSettings, got {type(self.audit).__name__}")
        if self.audit is not None and self.audit.ci_prob != ci_prob:
            raise SpecError(
                f"robustness: audit.ci_prob ({self.audit.ci_prob}) differs from ci_prob ({ci_prob}); give one value"
            )
        object.__setattr__(self, "populations", tuple(self.populations))

    def replace(self, **changes: Any) -> RobustnessSettings:
        """A copy with ``changes`` (field names as keywords), checked again."""
        refuse_unknown("robustness", [f.name for f in dataclasses.fields(self)], changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (populations by name and size; nested settings as dicts)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["family"] = dict(self.family) if isinstance(self.family, Mapping) else self.family
        out["populations"] = [
            {"name": p.name, "kind": p.kind, "n_subjects": p.data.n_subjects} for p in self.populations
        ]
        out["revision"] = None if self.revision is None else list(self.revision)
        out["spec"] = None if self.spec is None else self.spec.to_dict()
        out["fit"], out["refit"] = self.fit.to_dict(), self.refit.to_dict()
        out["conditions"] = self.conditions.to_dict()
        out["audit"] = self.audit_settings().to_dict()
        out["scheduler"] = scheduler_label(self.scheduler)  # a Client as its address
        return out

    def audit_settings(self) -> AuditSettings:
        """The settings of every audit: ``audit``, or the defaults with ``ci_prob``."""
        return self.audit if self.audit is not None else AuditSettings(ci_prob=self.ci_prob)

    def seeded(self, settings: SamplerSettings) -> SamplerSettings:
        """``settings`` with ``seed`` where its seed is None."""
        return settings.replace(seed=self.seed) if settings.seed is None else settings


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise SpecError(f"{name} must be an integer >= {low}, got {value!r}")


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def check_robustness(
    data: ResponseData,
    *,
    out: str | os.PathLike[str],
    fit: Fit | None = None,
    settings: RobustnessSettings | None = None,
) -> RobustnessResult:
    """Run the robustness checks that ``data`` and the settings allow and write them into ``out``.

    Parameters
    ----------
    data
        Responses; with two or more conditions the condition effects are fitted
        (:func:`~irtbayes.robustness.conditions.fit_conditions`), and the other checks use the reference
        condition's responses.
    out
        Output folder (created; files listed in the module notes).
    fit
        The reference :class:`~irtbayes.fitting.result.Fit` of ``data`` (its reference condition); fitted when
        needed and not given.
    settings
        Every other choice (default :class:`RobustnessSettings`): the other populations, the revision, the
        settings of the fits and audits, the flagging rule, where refits run.

    Returns
    -------
    RobustnessResult

    Examples
    --------
    Every check needs something this simulated data set lacks (conditions, a fit to refit against, a revision), so
    nothing is refitted; the result and the files say what was done:

    >>> import tempfile
    >>> from irtbayes.robustness.run import check_robustness
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(20, 30, seed=1)
    >>> result = check_robustness(data, out=tempfile.mkdtemp())
    >>> result.conditions, result.population, sorted(result.files)
    (None, None, ['robustness'])
    """
    s = RobustnessSettings() if settings is None else settings
    if not isinstance(s, RobustnessSettings):
        raise SpecError(f"robustness: settings must be a RobustnessSettings, got {type(s).__name__}")
    if fit is not None:
        fit.require_binary_model("robustness")
    if s.spec is not None and s.spec.kind in ("grm", "gpcm"):
        raise SpecError("robustness works with binary IRT models (1PL, 2PL, 3PL); the settings ask for a graded model")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    result = RobustnessResult()
    base = _run_conditions(data, result, folder, s)
    plans = list(population_samples(base, bootstrap=s.bootstrap, family=s.family, seed=s.seed)) + list(s.populations)
    if plans or s.revision is not None:
        fit, reference_audit = _reference_audit(base, fit, s)
        if plans:
            _run_populations(result, folder, plans, fit, reference_audit, s)
        if s.revision is not None:
            _run_revision(result, folder, data, base, reference_audit, s.revision)
    result.files["robustness"] = atomic_write_json(folder / "robustness.json", result.summary_dict())
    return result


def _run_conditions(data: ResponseData, result: RobustnessResult, folder: Path, s: RobustnessSettings) -> ResponseData:
    """Fit and flag the condition effects when ``data`` has two conditions or more; the reference condition's data."""
    if len(data.conditions) >= 2:
        c = s.conditions
        cfit = fit_conditions(
            data,
            reference=s.reference_condition,
            kind=c.kind,
            effects=c.effects,
            chains=c.chains,
            draws=c.draws,
            tune=c.tune,
            seed=s.seed,
            sampler=c.sampler,
            target_accept=c.target_accept,
            progress=c.progress,
        )
        result.conditions = condition_effects(
            cfit, ci_prob=s.ci_prob, fdr=s.fdr, min_effect=s.min_effect, against=s.against, fdr_rule=s.fdr_rule
        )
        result.files.update(save_conditions(result.conditions, folder))
        return data.subset(conditions=[result.conditions.reference])
    if s.reference_condition is not None:
        raise SpecError(
            f"reference_condition={s.reference_condition!r}, but {data.source} has fewer than two conditions"
        )
    return data


def _reference_audit(base: ResponseData, fit: Fit | None, s: RobustnessSettings) -> tuple[Fit, AuditResult]:
    """The reference fit (fitted when not given) and its audit."""
    from irtbayes.auditing.run import audit
    from irtbayes.fitting.fit import fit as fit_model

    if fit is None:
        fit = fit_model(base, s.spec, settings=s.seeded(s.fit))
    return fit, audit(fit.idata, base, settings=s.audit_settings())


def _run_populations(
    result: RobustnessResult,
    folder: Path,
    plans: list[Population],
    fit: Fit,
    reference_audit: AuditResult,
    s: RobustnessSettings,
) -> None:
    """Refit every population, label the reference audit's conclusions and write their tables."""
    result.refits = refit_populations(
        plans,
        spec=fit.spec,
        settings=s.seeded(s.refit),
        audit=s.audit_settings(),
        engine=s.engine,
        workers=s.workers,
        scheduler=s.scheduler,
        on_done=lambda r: log.info("refit %s done (%d systems)", r.name, r.n_subjects),
    )
    result.population = population_stability(reference_audit, fit, result.refits, agreement=s.agreement)
    for name, table in (
        ("stability", result.population.conclusions),
        ("population_refits", result.population.refits),
        ("population_ranks", result.population.ranks),
    ):
        result.files[name] = atomic_write_text(folder / f"{name}.csv", table.to_csv(index=False))


def _run_revision(
    result: RobustnessResult,
    folder: Path,
    data: ResponseData,
    base: ResponseData,
    reference_audit: Any,
    revision: tuple[str, str],
) -> None:
    """Compare the revision's two benchmarks in the reference audit and write its tables."""
    if len(revision) != 2:
        raise SpecError(f"revision must be (original, revised), got {revision!r}")
    missing = [b for b in revision if b not in set(base.benchmarks)]
    if missing:
        raise DataError(f"{data.source}: no benchmark {missing}; the benchmarks are {list(base.benchmarks)}")
    result.revision = compare_revision(reference_audit, original=revision[0], revised=revision[1])
    result.files["revision_versions"] = atomic_write_text(
        folder / "revision_versions.csv", result.revision.versions.to_csv(index=False)
    )
    result.files["revision_subjects"] = atomic_write_text(
        folder / "revision_subjects.csv", result.revision.subjects.to_csv(index=False)
    )


def _reference_gap(population: PopulationStability, scope: str) -> tuple[float, float]:
    """The reference's gap interval of ``scope``, as the conclusions table states it (``[lo, hi]``)."""
    table = population.conclusions
    rows = table.loc[(table["scope"].astype(str) == scope) & (table["conclusion"] == "gap_location"), "reference"]
    if rows.empty:
        raise SpecError(f"robustness: no gap location of scope {scope!r} in the population comparison")
    lo, hi = (float(x) for x in str(rows.iloc[0]).strip("[]").split(","))
    return lo, hi


def convergence_problem(sampler: dict[str, Any]) -> str:
    """The first convergence problem a condition fit recorded, with its worst r-hat and ESS."""
    problems = sampler.get("convergence_problems") or ["no convergence checks recorded"]
    return (
        f"{problems[0]}; max r-hat {sampler.get('max_rhat', float('nan')):.3f}, min bulk ESS "
        f"{sampler.get('min_ess_bulk', float('nan')):.0f}, {sampler.get('divergences', 0)} divergences"
    )
