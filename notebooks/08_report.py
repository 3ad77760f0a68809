# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 8. The report: the reproduction written up as a results section
#
# This notebook writes `REPORT.md` in the output folder from the tables the other notebooks wrote: every number in
# it is read from a results file, with its 90% interval, and every claim names the table or figure it comes from.
# It fits nothing, so it runs in seconds; rerun it after any other notebook.
#
# A result from a fit that did not pass its convergence checks is marked where it appears, and so is one from the
# approximate tier.

# %% tags=["parameters"]
import json

import pandas as pd
from _common import REPO, settings, versions

S = settings()
OUT = S.out
print(S.describe())


def read(name: str, **kwargs) -> pd.DataFrame | None:
    path = OUT / name
    return pd.read_csv(path, keep_default_na=False, **kwargs) if path.is_file() else None


def iv(mean: float, low: float, high: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def where(path: str) -> str:
    """A results file or figure, as a link relative to the report."""
    return f"[`{path}`]({path})"


def markdown_table(table: pd.DataFrame) -> str:
    """A Markdown table; floats to 3 significant digits."""

    def cell(x: object) -> str:
        return f"{x:.3g}" if isinstance(x, float) else str(x)

    head = "| " + " | ".join(map(str, table.columns)) + " |\n|" + "---|" * len(table.columns)
    return head + "".join("\n| " + " | ".join(cell(x) for x in row) + " |" for row in table.itertuples(index=False))


MARK = {"converged": "", "approximate": " (approximate tier)", "NOT CONVERGED": " (**NOT CONVERGED**)"}
audit_table = read("benchmark_audit.csv")
populations = json.loads((OUT / "populations.json").read_text()) if (OUT / "populations.json").is_file() else None
lines: list[str] = []


def say(*parts: str) -> None:
    lines.append("".join(parts))


# %% [markdown]
# ## Data, models and fits

# %%
say("# Reproduction report: benchmarks as empirical measures over difficulty\n")
say(
    "This report is written by `notebooks/08_report.py` from the results of notebooks 2-7 (in this folder). "
    "Intervals are 90% equal-tailed posterior intervals unless stated. Each population of systems is calibrated "
    "on its own scale, so difficulties and gaps compare within a population; DDM and the gap as a share of the "
    "range compare across populations. The measures are irtbayes' own ([docs/audit-definitions.md](../../docs/audit-definitions.md)): "
    "DDM = share of items outside the population's ability range [L, U] + share inside x W1(items inside, "
    "uniform on [L, U]) / (U - L); the Maximum Gap is the widest stretch of [L, U] with no item, computed on "
    "deconvolved item locations.\n"
)
if populations is not None and audit_table is not None:
    say("## Data and calibration\n")
    say(f"Source: {where('populations.json')}, {where('benchmark_audit.csv')}.\n")
    say("| population | systems x items | responses | model | fit | max r-hat | min bulk ESS | divergences |")
    say("|---|---|---|---|---|---|---|---|")
    for p in populations["populations"]:
        sm = p["sampler"]
        fit = f"{sm['name']} {sm['chains']} x {sm['draws']}: {p['verdict']}"
        rhat = "n/a" if p["approximate"] else f"{p['max_rhat']:.3f}"
        ess = "n/a" if p["approximate"] else f"{p['min_ess_bulk']:.0f}"
        say(
            f"| {p['population']} | {p['subjects']:,} x {p['items']:,} | {p['responses']:,} | {p['model']} | {fit} | "
            f"{rhat} | {ess} | {p['divergences'] if not p['approximate'] else 'n/a'} |"
        )
    bench = audit_table.loc[audit_table["level"] == "benchmark"]
    distinct = bench.groupby("benchmark").agg(domain=("domain", "first"), pops=("population", "nunique"))
    n_sub = int((audit_table["level"] == "sub-benchmark").sum())
    say("")
    say(
        f"**Count.** {len(distinct)} distinct benchmarks in {distinct['domain'].nunique()} domains, audited as "
        f"{len(bench)} (population, benchmark) rows in {bench['population'].nunique()} populations, plus {n_sub} "
        f"sub-benchmarks (MMLU-Pro's categories). {', '.join(distinct.index[distinct['pops'] > 1])} were taken by two "
        "populations and count once. The leaderboard's rows are the tinyBenchmarks anchor subsets "
        f"({', '.join(f'{r.benchmark}: {r.items} of {r.items_benchmark}' for r in bench.loc[bench['item_set'] != 'all items'].itertuples())} items).\n"
    )
    counts = bench["verdict"].value_counts()
    say(
        "**Fits.** "
        + ", ".join(f"{v} rows from fits that are {k}" for k, v in counts.items())
        + ". The approximate tier (`--sampler approx`) is used where NUTS is out of reach on the 2-core machine that "
        "made these results; its 90% intervals covered 89-92% of true difficulties in the validation "
        "([docs/validation.md](../../docs/validation.md#the-approximate-tier-against-nuts)), and its rows are marked in every table and figure.\n"
    )

# %% [markdown]
# ## Validation (notebook 2)

# %%
published, recovery = read("validation_published.csv"), read("validation_recovery.csv")
if published is not None or recovery is not None:
    say("## Validation against published estimates and simulated truth\n")
if published is not None:
    for check, g in published.groupby("check", sort=False):
        fits = ", ".join(sorted(set(g["verdict"]))) if "verdict" in g else "?"
        say(
            f"- {check} ({fits}): {int(g['published_in_credible'].astype(str).eq('True').sum())} of {len(g)} published "
            f"values lie inside irtbayes' 95% credible intervals; the largest difference is "
            f"{g['difference'].astype(float).abs().max():.3f} ({where('validation_published.csv')})."
        )
if recovery is not None:
    for r in recovery.itertuples():
        say(
            f"- Recovery of {r.parameter} ({r.n} parameters, {getattr(r, 'verdict', r.sampler)}): {r.coverage_90:.1%} "
            f"inside the 90% intervals (binomial se {r.binomial_se:.3f}), correlation {r.correlation:.3f}, RMSE "
            f"{r.rmse:.3f} ({where('validation_recovery.csv')}, {where('figures/recovery.png')})."
        )
if published is not None or recovery is not None:
    say("")

# %% [markdown]
# ## Measure mismatch and coverage gaps (notebook 3)

# %%
if audit_table is not None:
    bench = audit_table.loc[audit_table["level"] == "benchmark"].copy()
    for c in [c for c in bench.columns if c.endswith(("_mean", "_ci_low", "_ci_high", "_ref"))]:
        bench[c] = bench[c].astype(float)
    say("## Measure mismatch: DDM\n")
    top = bench.sort_values("ddm_mean", ascending=False).head(5)
    say(f"The five largest DDMs ({where('benchmark_audit.csv')}, {where('figures/forest_ddm.png')}):\n")
    for r in top.itertuples():
        say(
            f"- {r.label} ({r.domain}){MARK[r.verdict]}: {iv(r.ddm_mean, r.ddm_ci_low, r.ddm_ci_high)}; "
            f"{r.mass_below_mean:.0%} of its items below the range, {r.mass_above_mean:.0%} above."
        )
    first, second = top.iloc[0], top.iloc[1]
    say(
        ""
        if first["ddm_ci_low"] <= second["ddm_ci_high"]
        else f"\n{first['label']}'s DDM is credibly the largest (its interval lies above every other).\n"
    )
    low = bench.loc[bench["ddm_ci_high"] < 0.1]
    say(
        f"{len(low)} of {len(bench)} benchmark rows have DDM credibly below 0.1"
        + (f" ({', '.join(low['label'])})" if 0 < len(low) <= 8 else "")
        + ". "
    )
    sat = bench.loc[bench["mass_below_mean"] >= 0.5]
    say(
        f"{len(sat)} rows have half or more of their items below the population's ability range, where they no "
        "longer separate these systems"
        + (
            ": " + ", ".join(f"{r.label} ({r.mass_below_mean:.0%}){MARK[r.verdict]}" for r in sat.itertuples())
            if len(sat)
            else ""
        )
        + f" ({where('figures/coverage_heatmap.png')}, the 'below' column).\n"
    )
    per_domain = (
        bench.groupby("domain")
        .agg(rows=("label", "size"), ddm=("ddm_mean", "median"), gap=("max_gap_rel_mean", "median"))
        .sort_values("ddm", ascending=False)
    )
    say("Median DDM and median Maximum Gap (share of the range) per domain:\n")
    say("| domain | rows | median DDM | median gap share |")
    say("|---|---|---|---|")
    for d, r in per_domain.iterrows():
        say(f"| {d} | {int(r['rows'])} | {r['ddm']:.3f} | {r['gap']:.3f} |")
    say("")
    say("## Coverage gaps: the Maximum Gap\n")
    wide = bench.loc[bench["max_gap_rel_ci_low"] > bench["gap_rel_uniform_ref"]]
    say(
        f"{len(wide)} of {len(bench)} benchmark rows have a widest gap credibly wider than the expected widest gap "
        f"of as many items spread uniformly at random over the range ({where('figures/forest_max_gap.png')}). The "
        "three with the largest lower bound:\n"
    )
    for r in bench.sort_values("max_gap_rel_ci_low", ascending=False).head(3).itertuples():
        say(
            f"- {r.label}{MARK[r.verdict]}: {iv(r.max_gap_mean, r.max_gap_ci_low, r.max_gap_ci_high)} logits "
            f"({iv(r.max_gap_rel_mean, r.max_gap_rel_ci_low, r.max_gap_rel_ci_high)} of the range), on average at "
            f"[{r.gap_lo:.2f}, {r.gap_hi:.2f}], in bin [{float(r.gap_modal_bin_lo):.2f}, "
            f"{float(r.gap_modal_bin_hi):.2f}) in {float(r.gap_p_modal_bin):.0%} of draws."
        )
    say("")
    pairs = read("benchmarks_in_two_populations.csv")
    if pairs is not None and len(pairs):
        say("## One benchmark, two populations\n")
        say(
            "The same benchmark measured against two populations of systems "
            f"({where('benchmarks_in_two_populations.csv')}, {where('figures/benchmarks_in_two_populations.png')}):\n"
        )
        say("| benchmark | population | items | fit | DDM | gap share | below/above |")
        say("|---|---|---|---|---|---|---|")
        for _, r in pairs.iterrows():
            say(
                f"| {r['benchmark']} | {r['population']} | {r['items']} of {r['items_benchmark']} | {r['verdict']} | "
                f"{r['DDM']} | {r['gap share']} | {r['below/above']} |"
            )
        say("")
    say(
        f"The central picture, each benchmark's difficulties beside the systems' abilities, is "
        f"{where('figures/difficulty_vs_ability.png')}.\n"
    )

# %% [markdown]
# ## Items that do not discriminate
#
# A 2PL item whose discrimination is near zero is answered alike by strong and weak systems: its difficulty
# (-intercept / discrimination) is not identified and can lie tens of logits outside the range. The audit counts such
# items as outside the range (they measure nothing there), which raises DDM. How many each population has, from the
# saved fits' item tables:

# %%
LOW_A = 0.25
rows = []
for pop in populations["populations"] if populations is not None else []:
    path = OUT / "fits" / pop["population"] / "items.csv"
    if not path.is_file():
        continue
    items = pd.read_csv(path)
    if "discrimination_mean" not in items:
        continue
    flat = items["discrimination_mean"] < LOW_A
    lo, hi = pop["range"]
    rows.append(
        {
            "population": pop["population"],
            "items": len(items),
            "flat": int(flat.sum()),
            "flat_outside": int((flat & ~items["difficulty_mean"].between(lo, hi)).sum()),
            "far": int((~items["difficulty_mean"].between(lo - 4, hi + 4)).sum()),
            "verdict": pop["verdict"],
        }
    )
flat_table = pd.DataFrame(rows)
print(flat_table.to_string(index=False))
if len(flat_table):
    say("## Items that do not discriminate\n")
    say(
        f"An item whose posterior mean discrimination is below {LOW_A} is answered alike by strong and weak systems; "
        "its difficulty (-intercept / discrimination) is not identified and can lie far outside the range, where the "
        "audit counts it as outside (it measures nothing in the range). From the saved fits' item tables:\n"
    )
    say("| population | items | discrimination < 0.25 | of them outside the range | more than 4 logits outside | fit |")
    say("|---|---|---|---|---|---|")
    for r in flat_table.itertuples():
        say(f"| {r.population} | {r.items:,} | {r.flat:,} | {r.flat_outside:,} | {r.far:,} | {r.verdict} |")
    say(
        "\nWhere such items are many, the rows' DDM includes them as outside. They are expected where many "
        "systems answer multiple-choice items near chance: a 2PL has no lower asymptote, so an item that strong and "
        "weak systems get right at similar rates can only be fitted as flat. A 3PL with a guessing floor is the model "
        "for that (notebook 6 compares 1PL, 2PL and 3PL on MMLU-Pro); the approximate tier fits 1PL and 2PL only.\n"
    )

# %% [markdown]
# ## Re-weighted leaderboards (notebook 4)

# %%
sens = read("sensitivity_leaderboard.csv")
if sens is not None:
    say("## Does difficulty weighting change the leaderboard?\n")
    for pop, g in sens.groupby("population", sort=False):
        ten = g.loc[g["bins"].astype(int) == 10].set_index("target")
        verdict = ""
        if audit_table is not None:
            v = audit_table.loc[audit_table["population"] == pop, "verdict"]
            verdict = MARK.get(v.iloc[0], "") if len(v) else ""
        say(
            f"- {pop}{verdict}: under the uniform target the top system is {ten.loc['uniform', 'top_system']} (rank "
            f"interval {ten.loc['uniform', 'top_system_rank_ci']}), under the frontier target "
            f"{ten.loc['frontier', 'top_system']} ({ten.loc['frontier', 'top_system_rank_ci']}); Kendall's tau with "
            f"the raw ranking {float(ten.loc['uniform', 'kendall_tau_vs_raw']):.2f} (uniform) and "
            f"{float(ten.loc['frontier', 'kendall_tau_vs_raw']):.2f} (frontier); "
            f"{ten.loc['uniform', 'rank_interval_excludes_raw_rank']} and "
            f"{ten.loc['frontier', 'rank_interval_excludes_raw_rank']} of {ten.loc['uniform', 'n_subjects']} systems "
            "have a rank interval that excludes their raw rank "
            f"({where(f'leaderboard_{pop}.csv')}, {where(f'figures/leaderboard_{pop}.png')})."
        )
    say(
        f"\nAcross 5, 10 and 20 bins ({where('sensitivity_leaderboard.csv')}, {where('sensitivity_ddm.csv')}, "
        f"{where('figures/sensitivity_ddm.png')}) the top system is the same in "
        + ", ".join(
            f"{pop}: {int(g['top_system'].value_counts().iloc[0])} of {len(g)} settings"
            for pop, g in sens.groupby("population", sort=False)
        )
        + ".\n"
    )

# %% [markdown]
# ## BenchFill (notebook 5)

# %%
before_after, ledger = read("benchfill_before_after.csv", index_col=0), read("benchfill_ledger.csv")
if before_after is not None:
    say("## BenchFill: filling the widest gap\n")
    ba = before_after
    say(
        f"Candidates with simulated responses were calibrated and accepted only when P(difficulty in the target "
        f"bin) >= tau and P(a > 0) >= 0.9 ({where('benchfill_ledger.csv')}). Posterior of the decisions: "
        f"{ba.loc['posterior', 'after'] if 'posterior' in ba.index else 'not recorded'}.\n"
    )
    if ledger is not None:
        for stage, g in ledger.groupby("stage", sort=False):
            say(f"- {stage}: {int((g['decision'] == 'accepted').sum())} of {len(g)} candidates accepted.")
    say("")
    say("| | before | after |")
    say("|---|---|---|")
    for row, r in ba.iterrows():
        if row != "posterior":
            say(f"| {row} | {r['before']} | {r['after']} |")
    say(f"\n({where('benchfill_before_after.csv')}, {where('figures/benchfill_candidates.png')})\n")
oc = read("benchfill_operating_characteristic.csv")
if oc is not None:
    say(
        "Operating characteristic of the acceptance rule on simulated candidates "
        f"({where('benchfill_operating_characteristic.csv')}): "
        + "; ".join(
            f"{r.n_systems} systems: {r.n_accepted} of {r.n_candidates} accepted"
            + (f", precision {float(r.precision):.2f}" if str(r.precision) not in ("", "nan") else "")
            + f", recall {float(r.recall):.2f}"
            for r in oc.itertuples()
        )
        + ".\n"
    )

# %% [markdown]
# ## Model checks and robustness (notebooks 6 and 7)

# %%
checks = read("model_checks.csv")
if checks is not None:
    say("## Model checks: posterior predictive\n")
    say(
        f"Items whose proportion correct or item-rest correlation falls outside the central 95% of its posterior "
        f"predictive distribution, and systems whose total score does ({where('model_checks.csv')}, "
        f"{where('figures/ppc_item_rest.png')}):\n"
    )
    say(
        "| population | model | fit | items misfitting (nominal) | item-rest weaker than predicted | systems misfitting |"
    )
    say("|---|---|---|---|---|---|")
    for r in checks.itertuples():
        say(
            f"| {r.population} | {r.model} | {r.verdict} | {float(r.items_misfit_share):.1%} ({float(r.nominal_share):.1%}) | "
            f"{r.item_rest_weaker} | {float(r.subjects_misfit_share):.1%} |"
        )
    say("")
loo = read("loo_comparison.csv")
if loo is not None:
    say("## 1PL, 2PL and 3PL by PSIS-LOO\n")
    loo = loo.assign(elpd=loo["elpd"].astype(float), se=loo["se"].astype(float))
    loo = loo.assign(elpd_diff=loo["elpd_diff"].astype(float), dse=loo["dse"].astype(float))
    say(
        f"On {loo['subjects'].iloc[0]} systems x {loo['items'].iloc[0]} MMLU-Pro items ({loo['categories'].iloc[0]}; "
        f"{where('loo_comparison.csv')}):\n"
    )
    say("| model | fit | elpd (SE) | difference from the best (SE) | divergences |")
    say("|---|---|---|---|---|")
    for r in loo.itertuples():
        say(
            f"| {r.model} | {r.verdict} | {r.elpd:.1f} ({r.se:.1f}) | {r.elpd_diff:.1f} ({r.dse:.1f}) | {r.divergences} |"
        )
    best, second = loo.iloc[0], loo.iloc[1]
    say(
        f"\nPSIS-LOO prefers the {best['model']}{MARK.get(best['verdict'], '')} by {abs(second['elpd_diff']):.1f} "
        f"({abs(second['elpd_diff']) / second['dse']:.1f} SE of the difference) over the {second['model']}"
        + (
            "; the preferred fit did not pass its convergence checks, so the comparison is provisional."
            if best["verdict"] != "converged"
            else "."
        )
        + "\n"
    )
info = read("information_saturation.csv")
if info is not None:
    say("## Information and saturation\n")
    rows = info.loc[info["level"] == "benchmark"].copy()
    for c in ("saturation_mean", "saturation_ci_low", "saturation_ci_high"):
        rows[c] = rows[c].astype(float)
    sat = rows.loc[rows["saturation_ci_low"] > 0.5].sort_values("saturation_mean", ascending=False)
    say(
        "Saturation is the share of a benchmark's items that the best system answers correctly with probability at "
        f"least 0.9, per draw ({where('information_saturation.csv')}, `figures/information_*.png`). "
        f"{len(sat)} of {len(rows)} benchmark rows are credibly more than half saturated"
        + (
            ": "
            + ", ".join(
                f"{r.population}:{r.benchmark} {iv(r.saturation_mean, r.saturation_ci_low, r.saturation_ci_high)}"
                f"{MARK.get(r.verdict, '')}"
                for r in sat.itertuples()
            )
            if len(sat)
            else ""
        )
        + ".\n"
    )
stability = read("robustness_stability.csv")
if stability is not None:
    say("## Robustness: other systems\n")
    say(
        f"Refits on other populations of systems ({where('robustness_stability.csv')}, {where('robustness_population.csv')}):\n"
    )
    for r in stability.itertuples():
        unconverged = int(r.refits_not_converged or 0) if str(r.refits_not_converged) != "" else 0
        also = (
            f"; **{unconverged} of the {r.refits} refits did NOT CONVERGE**: over the {r.refits_converged_only} "
            f"converged ones alone, {r.agree_converged_only} agree ({r.label_converged_only})"
            if unconverged
            else ""
        )
        say(f"- {r.population} {r.conclusion}: reference {r.reference}; {r.label} ({r.evidence}){also}.")
    say("")
revision = read("robustness_revision.csv")
if revision is not None:
    say("## Robustness: a revised benchmark\n")
    say(f"Two versions of a benchmark calibrated on one scale ({where('robustness_revision.csv')}):\n")
    for r in revision.itertuples():
        say(
            f"- {r.benchmark} ({r.version}, {r.verdict}): DDM "
            f"{iv(float(r.ddm_w1_mean), float(r.ddm_w1_ci_low), float(r.ddm_w1_ci_high))}, Maximum Gap "
            f"{iv(float(r.max_gap_mean), float(r.max_gap_ci_low), float(r.max_gap_ci_high))} logits at "
            f"[{float(r.gap_lo):.2f}, {float(r.gap_hi):.2f}]."
        )
    first = revision.iloc[0]
    say(
        f"\nThe revision puts {first['revised_items_in_original_gap']} items into the original's widest gap; "
        f"{first['regressing_systems']} systems regress (their rank interval on the revision lies below the one on "
        "the original).\n"
    )

# %% [markdown]
# ## What differs from the paper, and why

# %%
say("## What differs from the paper, and why\n")
say(
    "- **Definitions.** The paper's exact formulas are not public; irtbayes defines DDM and the Maximum Gap itself "
    "(above) and computes them per posterior draw, so every number has an interval. Point values are therefore "
    "not comparable one to one with the paper's; orderings and the presence of gaps are.\n"
    "- **Benchmarks and populations.** The paper audits 25 benchmarks in 7 domains; this reproduction audits the "
    "benchmarks for which item-level responses are public (count above), in populations of systems that differ "
    "from the paper's, and each population is calibrated on its own scale.\n"
    "- **Approximations.** The two largest populations use the approximate tier, validated against NUTS but not "
    "NUTS; their rows say so.\n"
    "- **BenchFill.** The candidates' responses are simulated from the fitted abilities (no model answered new "
    "items here), so the before/after shows the mechanics and the acceptance rule, not the quality of rewritten "
    "items.\n"
)
summary = OUT / "logs" / "run_summary.csv"
if summary.is_file():
    runs = pd.read_csv(summary)
    runs = runs.loc[runs["exit_status"] == 0]  # the last successful run of each notebook
    say(
        "## Reproducing\n\n`IRTBAYES_NB_MODE=full python scripts/run_notebooks.py --html` (the rendered notebooks are "
        f"in {where('html/')}). Seconds per notebook in the run that made these results: "
        + ", ".join(f"{r.notebook} {r.seconds:.0f}" for r in runs.itertuples())
        + f" (total {runs['seconds'].sum() / 60:.0f} min).\n"
    )
say(f"Versions: {versions()}.\n")
text = "\n".join(lines)
(OUT / "REPORT.md").write_text(text)
print(text)
print("wrote", OUT / "REPORT.md", f"({len(text.splitlines())} lines); repository {REPO.name}")

# %% [markdown]
# ## Versions

# %%
print(versions())
