"""``robustness(data, out=...)``: condition sensitivity, population dependence and revisions, written to a folder.

Files written into ``out`` (each atomically):

- ``conditions_items.csv``, ``conditions_subjects.csv`` (when the data has two or more conditions; see
  :func:`~irtbayes.robustness.conditions.condition_effects`);
- ``stability.csv`` (one row per benchmark and conclusion: label and evidence), ``population_refits.csv``
  (one row per refit and benchmark) and ``population_ranks.csv`` (when other populations were refitted; see
  :func:`~irtbayes.robustness.population.population_stability`);
- ``revision_versions.csv``, ``revision_subjects.csv`` (when a revision was compared);
- ``robustness.json``: Kendall's tau and the maximum rank displacement between conditions with credible
  intervals, the flagging rule, the stability labels and the revision's findings;
- ``report.html``, ``report.md`` and ``figures/``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.files import atomic_write_bytes, atomic_write_json, atomic_write_text, json_ready
from irtbayes.data.responses import ResponseData
from irtbayes.robustness.conditions import ConditionEffects, condition_effects, fit_conditions, write_conditions
from irtbayes.robustness.population import (
    Population,
    PopulationStability,
    RefitOutcome,
    population_samples,
    population_stability,
    refit_populations,
)
from irtbayes.robustness.revision import RevisionComparison, compare_revision

__all__ = ["RobustnessResult", "robustness", "write_report"]

log = logging.getLogger(__name__)


@dataclass
class RobustnessResult:
    """What :func:`robustness` found; any part not asked for (or not possible) is None.

    Examples
    --------
    >>> from irtbayes.robustness.run import RobustnessResult
    >>> empty = RobustnessResult()
    >>> empty.conditions is None and empty.refits == []
    True
    """

    conditions: ConditionEffects | None = None
    population: PopulationStability | None = None
    refits: list[RefitOutcome] = field(default_factory=list)
    revision: RevisionComparison | None = None
    files: dict[str, Path] = field(default_factory=dict)

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
                lines.append(f"  NOT CONVERGED: {_convergence_problem(c.sampler)}; read these as provisional")
            for _, row in c.agreement.iterrows():
                lines.append(
                    f"  {row['condition_a']} vs {row['condition_b']}: Kendall tau {row['kendall_tau_mean']:.3f} "
                    f"[{row['kendall_tau_ci_low']:.3f}, {row['kendall_tau_ci_high']:.3f}], max rank displacement "
                    f"{row['max_rank_displacement_mean']:.1f} [{row['max_rank_displacement_ci_low']:.0f}, "
                    f"{row['max_rank_displacement_ci_high']:.0f}]"
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


def robustness(
    data: ResponseData,
    *,
    out: str | os.PathLike[str],
    fit: Any = None,
    reference_condition: str | None = None,
    bootstrap: int = 0,
    family: str | Mapping[str, str] | None = None,
    populations: Sequence[Population] = (),
    revision: tuple[str, str] | None = None,
    fit_kwargs: Mapping[str, Any] | None = None,
    condition_kwargs: Mapping[str, Any] | None = None,
    audit_kwargs: Mapping[str, Any] | None = None,
    engine: str = "process",
    workers: int | None = None,
    dask_address: str | None = None,
    ci_prob: float = 0.9,
    fdr: float = 0.05,
    min_effect: float = 0.0,
    against: str = "shift",
    fdr_rule: str = "each",
    agreement: float = 0.8,
    seed: int = 0,
    report: bool = True,
) -> RobustnessResult:
    """Run the robustness checks that ``data`` and the options allow and write them into ``out``.

    Parameters
    ----------
    data
        Responses; with two or more conditions the condition effects are fitted
        (:func:`~irtbayes.robustness.conditions.fit_conditions`), and the other checks use the reference
        condition's responses.
    out
        Output folder (created; files listed in the module notes).
    fit
        The reference :class:`~irtbayes.fitting.result.Fit` of ``data`` (its reference condition); fitted when needed and
        not given.
    reference_condition
        The condition the others are compared with (default ``"original"`` when present, else the first).
    bootstrap, family, populations
        Other populations: bootstrap refits, leave-one-family-out (a subject column or a mapping), and
        user-given ones (see :mod:`~irtbayes.robustness.population`).
    revision
        ``(original, revised)`` benchmark names in ``data`` to compare (see
        :mod:`~irtbayes.robustness.revision`).
    fit_kwargs
        Settings of the reference fit and of each refit (:func:`irtbayes.fitting.fit.fit`).
    condition_kwargs
        Settings of :func:`~irtbayes.robustness.conditions.fit_conditions` (``chains``, ``draws``, ...).
    audit_kwargs
        Settings of every :func:`irtbayes.auditing.run.audit`.
    engine, workers, dask_address
        Where refits run (see :func:`~irtbayes.robustness.population.refit_populations`).
    ci_prob, fdr, min_effect, against, fdr_rule
        Interval probability; flagging (see :func:`~irtbayes.robustness.conditions.condition_effects`).
    agreement
        Share of agreeing refits a stable conclusion needs.
    seed
        Seeds the bootstrap and the fits.
    report
        Write ``report.html`` / ``report.md`` with figures.

    Returns
    -------
    RobustnessResult

    Examples
    --------
    Every check needs something this simulated data set lacks (conditions, a fit to refit against, a revision), so
    nothing is refitted; the result and the files say what was done:

    >>> import tempfile
    >>> from irtbayes.robustness.run import robustness
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(20, 30, seed=1)
    >>> result = robustness(data, out=tempfile.mkdtemp())
    >>> result.conditions, result.population, sorted(result.files)
    (None, None, ['report_html', 'report_md', 'robustness'])
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    result = RobustnessResult()
    flagging = {"ci_prob": ci_prob, "fdr": fdr, "min_effect": min_effect, "against": against, "fdr_rule": fdr_rule}
    base = _run_conditions(data, result, folder, reference_condition, condition_kwargs, seed=seed, flagging=flagging)
    plans = list(population_samples(base, bootstrap=bootstrap, family=family, seed=seed)) + list(populations)
    if plans or revision is not None:
        settings = {"progress": False, "seed": seed, **dict(fit_kwargs or {})}
        fit, reference_audit = _reference_audit(base, fit, settings, audit_kwargs, ci_prob=ci_prob)
        if plans:
            audit_settings = {"ci_prob": ci_prob, **dict(audit_kwargs or {})}
            parallel = {"engine": engine, "workers": workers, "dask_address": dask_address}
            _run_populations(result, folder, plans, fit, reference_audit, settings, audit_settings, parallel, agreement)
        if revision is not None:
            _run_revision(result, folder, data, base, reference_audit, revision)
    result.files["robustness"] = atomic_write_json(folder / "robustness.json", result.summary_dict())
    if report:
        result.files.update(write_report(result, folder))
    return result


def _run_conditions(
    data: ResponseData,
    result: RobustnessResult,
    folder: Path,
    reference_condition: str | None,
    condition_kwargs: Mapping[str, Any] | None,
    *,
    seed: int,
    flagging: dict[str, Any],
) -> ResponseData:
    """Fit and flag the condition effects when ``data`` has two conditions or more; the reference condition's data."""
    if len(data.conditions) >= 2:
        settings = {"seed": seed, **dict(condition_kwargs or {})}
        cfit = fit_conditions(data, reference=reference_condition, **settings)
        result.conditions = condition_effects(cfit, **flagging)
        result.files.update(write_conditions(result.conditions, folder))
        return data.subset(conditions=[result.conditions.reference])
    if reference_condition is not None:
        raise SpecError(f"reference_condition={reference_condition!r}, but {data.source} has fewer than two conditions")
    return data


def _reference_audit(
    base: ResponseData, fit: Any, settings: dict[str, Any], audit_kwargs: Mapping[str, Any] | None, *, ci_prob: float
) -> tuple[Any, Any]:
    """The reference fit (fitted when not given) and its audit."""
    from irtbayes.auditing.run import audit
    from irtbayes.fitting.fit import fit as fit_model

    if fit is None:
        fit = fit_model(base, **settings)
    return fit, audit(fit.idata, base, ci_prob=ci_prob, **dict(audit_kwargs or {}))


def _run_populations(
    result: RobustnessResult,
    folder: Path,
    plans: list[Population],
    fit: Any,
    reference_audit: Any,
    settings: dict[str, Any],
    audit_settings: dict[str, Any],
    parallel: dict[str, Any],
    agreement: float,
) -> None:
    """Refit every population, label the reference audit's conclusions and write their tables."""
    result.refits = refit_populations(
        plans,
        spec=fit.spec,
        fit_kwargs={"cores": 1, **settings},
        audit_kwargs=audit_settings,
        **parallel,
        on_done=lambda r: log.info("refit %s done (%d systems)", r.name, r.n_subjects),
    )
    result.population = population_stability(reference_audit, fit, result.refits, agreement=agreement)
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


def write_report(result: RobustnessResult, out: str | os.PathLike[str], *, top_k: int = 30) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and ``figures/*.png|svg`` of ``result`` into ``out``.

    Item and system names are escaped (HTML and Markdown); each figure shows at most ``top_k`` rows.

    Returns
    -------
    dict
        ``"report_html"``, ``"report_md"`` -> the paths written.

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.robustness.run import RobustnessResult, write_report
    >>> sorted(write_report(RobustnessResult(), tempfile.mkdtemp()))
    ['report_html', 'report_md']
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from irtbayes.reporting.document import Document
    from irtbayes.robustness.figures import plot_condition_effects, plot_gap_locations, plot_rank_shifts

    folder = Path(out)
    doc = Document(title="Robustness of the audit's conclusions")
    if result.conditions is not None:
        c = result.conditions
        doc.heading("Format and condition sensitivity")
        doc.paragraph(
            f"Conditions: {', '.join(c.conditions)} (reference {c.reference}). Effects are flagged when the set of "
            f"flagged effects has a posterior expected false-flag share of at most {c.fdr:g} (Bayesian FDR over "
            f"local false sign rates{'' if c.min_effect == 0 else f', beyond {c.min_effect:g} logits'}; "
            f"{'effects against the condition' + chr(39) + 's common shift' if c.against == 'shift' else 'effects against 0'}). "
            f"{int(c.items['flagged'].sum())} of {len(c.items)} items and {int(c.subjects['flagged'].sum())} of "
            f"{len(c.subjects)} systems are flagged (rule: {c.fdr_rule})."
        )
        if not c.sampler.get("converged", True):
            doc.paragraph(
                f"**The condition-effects fit did not pass its convergence checks** ({_convergence_problem(c.sampler)}): "
                "every number in this section is provisional; rerun with more draws (--draws, --tune)."
            )
        doc.table(c.agreement, caption=f"Rank agreement between conditions ({c.ci_prob:.0%} intervals over draws)")
        doc.table(c.shifts, caption="Common difficulty shift of each condition (positive: every item harder)")
        for cond in c.conditions[1:]:
            fig, ax = plt.subplots(figsize=(6.5, 6))
            plot_rank_shifts(c.subjects, reference=c.reference, condition=cond, top_k=top_k, ax=ax)
            doc.figure(f"rank_shifts_{_slug(cond)}", fig, caption=f"Ranks under {c.reference} and {cond}")
            fig, ax = plt.subplots(figsize=(6.5, 6))
            shift = float(c.shifts.set_index("condition").loc[cond, "shift_mean"])
            plot_condition_effects(c.items, condition=cond, shift=shift, top_k=top_k, ax=ax)
            doc.figure(f"condition_effects_{_slug(cond)}", fig, caption=f"Effects of {cond} on item difficulty")
        flagged = c.items.loc[c.items["flagged"]].head(top_k)
        if len(flagged):
            doc.table(flagged, caption="Flagged items (the first rows; all in conditions_items.csv)", max_rows=top_k)
    if result.population is not None:
        p = result.population
        doc.heading("Population dependence")
        doc.paragraph(
            f"{len(result.refits)} refits on other populations of systems. A conclusion is stable when at least "
            f"{p.agreement:.0%} of the refits agree with the reference (rule in robustness.json)."
        )
        doc.table(p.conclusions, caption="Stability of each conclusion per benchmark", max_rows=200)
        for scope in p.conclusions["scope"].drop_duplicates().head(6):
            ref = p.conclusions.loc[(p.conclusions["scope"] == scope) & (p.conclusions["conclusion"] == "gap_location")]
            if not len(ref):
                continue
            lo_hi = ref["reference"].iloc[0].strip("[]").split(",")
            fig, ax = plt.subplots(figsize=(6.5, 4))
            plot_gap_locations(p.refits, reference=(float(lo_hi[0]), float(lo_hi[1])), scope=str(scope), ax=ax)
            doc.figure(f"gap_locations_{_slug(str(scope))}", fig, caption=f"Widest gap of {scope} across populations")
    if result.revision is not None:
        doc.heading("Revised against original")
        doc.bullets(result.revision.summary)
        doc.table(result.revision.versions, caption="The two versions on one scale")
        doc.table(
            result.revision.subjects.head(top_k), caption="Largest rank changes (positive: worse on the revision)"
        )
    written = {
        "report_html": atomic_write_text(folder / "report.html", doc.to_html()),
        "report_md": atomic_write_text(folder / "report.md", doc.to_markdown()),
    }
    for name, (png, svg) in doc.figures.items():
        atomic_write_bytes(folder / "figures" / f"{name}.png", png)
        atomic_write_bytes(folder / "figures" / f"{name}.svg", svg)
    return written


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)[:40] or "x"


def _convergence_problem(sampler: dict[str, Any]) -> str:
    """The first convergence problem a condition fit recorded, with its worst r-hat and ESS."""
    problems = sampler.get("convergence_problems") or ["no convergence checks recorded"]
    return (
        f"{problems[0]}; max r-hat {sampler.get('max_rhat', float('nan')):.3f}, min bulk ESS "
        f"{sampler.get('min_ess_bulk', float('nan')):.0f}, {sampler.get('divergences', 0)} divergences"
    )
