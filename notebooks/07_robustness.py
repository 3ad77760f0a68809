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
# # 7. Robustness: other systems, a revised benchmark, a system prompt
#
# An item's difficulty is measured against the abilities of the systems that answered it, and a ranking under the
# conditions it was run in. The audit of notebook 3 calibrates each population once; this notebook asks three
# questions of its conclusions with `irtbayes.robustness`, on the real data of the populations:
#
# 1. **Other systems.** Would the audit say the same about a benchmark had another set of systems been
#    calibrated? JailbreakBench (18 attack/target-LLM pairs x 100 behaviours) is refitted on bootstrap
#    resamples of its pairs, with each target LLM left out in turn and with each attack method left out in turn
#    (both read from the subject table), and each of the audit's conclusions (target range, DDM, Maximum Gap,
#    where the widest gap lies, the systems' re-weighted ranks) is labelled **stable** or
#    **population-dependent** (`population_stability`).
# 2. **A revised benchmark.** The NLU population holds MuTual and MuTual+ (443 items each; MuTual+ replaces one
#    candidate answer of each dialogue by a "safe" but wrong one). Both versions are fitted together through the
#    90 checkpoints that took both, so their items lie on one scale, and `compare_revision` says whether MuTual+
#    fills MuTual's widest gap, whether DDM and the Maximum Gap changed credibly, and which checkpoints rank
#    credibly worse on the revision.
# 3. **A condition.** XSTest's five setups include Llama-2 and Mistral each run with and without a safety system
#    prompt. Read as two systems under two conditions, they give the condition-effects model
#    (`fit_conditions`): how much the system prompt moves each prompt's difficulty and each system's ability.
#
# **Why JailbreakBench for the refits.** A refit costs as much as the reference fit. JailbreakBench's NUTS fit
# takes seconds and converges, so 20-odd refits fit in a few minutes on a 2-core machine. ChemBench (22 systems x
# 2,854 questions) took over 2 minutes per NUTS fit at 4 x 1000 draws in notebook 3's first full run and fell
# short of the r-hat check (1.04): twenty refits would take most of an hour, and their votes could rest on
# unconverged fits.
# XSTest has 5 systems, too few to resample. Each of the three populations holds one benchmark, so the ordering
# *of benchmarks* cannot be tested on them; the rank conclusion tested is the systems' re-weighted ranking on the
# benchmark (part 2 compares two benchmarks, MuTual and MuTual+, on one scale).
#
# **The agreement rule** (`irtbayes.robustness.population`): a refit agrees with the reference when its
# posterior mean DDM and Maximum Gap lie in the reference's 90% interval, its gap centre in the reference's gap
# (or the reference's centre in its gap), each end of its target range within one bin width of the reference's,
# and at least 80% of the shared systems' rank percentiles inside the reference's rank-percentile intervals; a
# conclusion is stable when at least 80% of the refits agree. Each refit audits against its own target range
# (abilities are standardised within each population, which is part of what is tested), and its gap is also put
# on the reference scale by mean/sigma linking through the common items.
#
# **Convergence.** Every fit's verdict (`converged`, `NOT CONVERGED` for NUTS that failed a check, `approximate`
# for ADVI in the fast mode) is printed beside its numbers and written in every CSV row. Where some refits failed
# their checks, the stability labels are also given over the converged refits alone.

# %% tags=["parameters"]
import logging
import os
import shutil
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import (
    Timer,
    ci,
    fit_label,
    fit_or_load,
    fit_settings,
    load_population,
    settings,
    settings_record,
    short_summary,
    show,
    subsample_note,
    verdict,
    versions,
    write_json,
)
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from irtbayes.auditing.run import audit
from irtbayes.auditing.settings import AuditSettings
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.settings import SamplerSettings
from irtbayes.model.spec import ModelSpec
from irtbayes.robustness.conditions import condition_effects, fit_conditions
from irtbayes.robustness.population import (
    REFIT_DEFAULTS,
    Population,
    population_samples,
    population_stability,
    refit_populations,
)
from irtbayes.robustness.revision import compare_revision

S = settings()
timer = Timer()
BINS = 10
CI_PROB = 0.9
AGREEMENT = 0.8  # share of agreeing refits a stable conclusion needs (irtbayes' default)
AUDIT = {"bins": BINS, "ci_prob": CI_PROB, "max_draws": 400 if S.fast else 1000}
APPROXIMATE = ("approx", "advi", "pathfinder")

# 1. other systems: JailbreakBench refitted on bootstrap resamples and with each family left out
STABILITY_POPULATION = "jailbreakbench"
BOOTSTRAP = 1 if S.fast else 12
FAMILIES = ("target", "method")  # subject-table columns: one refit per value left out
MAX_REFITS = 3 if S.fast else None  # the fast mode refits the first three populations only
if S.fast:
    REFIT = fit_settings(S)  # ADVI, as every fit of the fast mode
else:  # NUTS, fixed length (the reference's 4 x 4000 would cost four times as much per refit)
    REFIT = {
        "sampler": S.sampler or "nutpie",
        "chains": S.chains or 4,
        "draws": S.draws or 1000,
        "tune": S.tune or 1000,
    }
REFIT.pop("until_converged", None)

# 2. a revised benchmark: MuTual and MuTual+ on one scale
REVISION_POPULATION = "nlu"
ORIGINAL, REVISED = "mutual", "mutual_plus"
REVISION_FIT = "nlu_mutual_revision"  # saved under <out>/fits/
# one pool of items: a benchmark level over two benchmarks rests its spread on two values and diverged
# (docs/studies.md#robustness-measured-on-real-data)
REVISION_SPEC = ModelSpec(kind="2pl", hierarchy="none")

# 3. a condition: XSTest's Llama-2 and Mistral with and without their safety system prompt
CONDITION_POPULATION = "xstest"
CONDITION_OF = {
    "llama2orig": ("llama2", "system_prompt"),
    "llama2new": ("llama2", "no_system_prompt"),
    "mistralguard": ("mistral", "system_prompt"),
    "mistralinstruct": ("mistral", "no_system_prompt"),
}
REFERENCE_CONDITION = "no_system_prompt"
CONDITION_FIT = {"chains": 2, "draws": 150, "tune": 200} if S.fast else {"chains": 4, "draws": 1000, "tune": 1000}
if not S.fast:  # IRTBAYES_NB_CHAINS / _DRAWS / _TUNE, when set, apply to these NUTS fits too
    CONDITION_FIT.update({k: getattr(S, k) for k in ("chains", "draws", "tune") if getattr(S, k) is not None})

DPI = 80 if S.fast else 130
# a condition fit that fails its checks logs its whole diagnostics table; the verdict and its worst numbers are
# printed beside the results instead
logging.getLogger("irtbayes.robustness.conditions").setLevel(logging.ERROR)
print(S.describe())
print(f"refits: {REFIT}; condition fits: nutpie {CONDITION_FIT}")

# %% [markdown]
# ## 1. Other systems: JailbreakBench refitted on other populations
#
# The reference is the population's own fit (notebook 3's, reused from `<out>/fits/` when it matches), audited
# with 10 bins and 90% intervals. The other populations: `BOOTSTRAP` resamples of the 18 pairs (drawn with
# replacement; a pair drawn twice enters twice, its copy renamed `id~2`), one population per target LLM left out,
# and one per attack method left out. Refits run one after the other (`engine="serial"`) with the chains of each
# in parallel: the default process engine starts workers with `spawn`, which re-runs a script such as this one
# in every worker.

# %%
with timer("population: load"):
    jbb, jbb_record = load_population(STABILITY_POPULATION, S)
print(f"{STABILITY_POPULATION}: {jbb.n_subjects} systems x {jbb.n_items} items ({subsample_note(jbb_record)})")
with timer("population: reference fit"):
    ref_fit, ref_loaded = fit_or_load(STABILITY_POPULATION, jbb, S)
REF_VERDICT = verdict(ref_fit)
print(("loaded saved fit" if ref_loaded else "fitted now") + f"; sampler wall time {ref_fit.sampler['wall_time_s']}s")
print(short_summary(ref_fit))
print(f"reference fit: {fit_label(ref_fit)}; verdict: {REF_VERDICT}")
with timer("population: reference audit"), warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    ref_audit = audit(ref_fit, jbb, **AUDIT)
bench_scopes = ref_audit.benchmarks.loc[ref_audit.benchmarks["scope_kind"] == "benchmark", "scope"].astype(str)
BENCH = bench_scopes.iloc[0]
ref_row = ref_audit.benchmarks.set_index("scope").loc[BENCH]
print(
    f"reference ({REF_VERDICT}): target range [{ref_audit.target.lo:.2f}, {ref_audit.target.hi:.2f}]; {BENCH}: "
    f"DDM {ci(ref_row['ddm_w1_mean'], ref_row['ddm_w1_ci_low'], ref_row['ddm_w1_ci_high'])}, Maximum Gap "
    f"{ci(ref_row['max_gap_mean'], ref_row['max_gap_ci_low'], ref_row['max_gap_ci_high'])} logits at "
    f"[{ref_row['gap_lo']:.2f}, {ref_row['gap_hi']:.2f}]"
)

# %%
plans = population_samples(jbb, bootstrap=BOOTSTRAP, seed=S.seed)
for column in FAMILIES:
    for p in population_samples(jbb, family=column):
        plans.append(Population(f"{p.name} ({column})", f"leave out one {column}", p.data))
if MAX_REFITS is not None:
    plans = plans[:MAX_REFITS]
print(f"{len(plans)} other populations: " + ", ".join(f"{p.name} [{p.data.n_subjects}]" for p in plans))


def refit_verdict(converged: bool) -> str:
    """The verdict of a refit, in the notebooks' words (refits record only whether the checks passed)."""
    if REFIT["sampler"] in APPROXIMATE:
        return "approximate"
    return "converged" if converged else "NOT CONVERGED"


def announce(outcome) -> None:
    line = f"  {outcome.name}: {outcome.n_subjects} systems, {refit_verdict(outcome.converged)}"
    print(line + (f" ({outcome.convergence})" if outcome.convergence and REFIT["sampler"] not in APPROXIMATE else ""))


with timer("population: refits"), warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    warnings.filterwarnings("ignore", message=".*approximate method.*")
    refits = refit_populations(
        plans,
        spec=ref_fit.spec,
        settings=SamplerSettings(
            **{
                **REFIT_DEFAULTS,
                **REFIT,
                "cores": min(REFIT.get("chains", 1), os.cpu_count() or 1),
                "seed": S.seed,
                "progress": False,
            }
        ),
        audit=AuditSettings(**AUDIT),
        engine="serial",
        on_done=announce,
    )
verdicts = {r.name: refit_verdict(r.converged) for r in refits}
n_failed = sum(v == "NOT CONVERGED" for v in verdicts.values())
n_approx = sum(v == "approximate" for v in verdicts.values())
print(
    f"{len(refits)} refits: {len(refits) - n_failed - n_approx} converged, {n_failed} NOT CONVERGED, {n_approx} approximate"
)

# %% [markdown]
# ### Which conclusions survive other systems
#
# One row per conclusion: the reference's value, how many refits agree, the label and the evidence (the refits'
# range of values). `label_converged_only` repeats the vote over the refits that passed their convergence checks
# when some did not. Written to `robustness_stability.csv`; one row per refit (its values, its agreement with
# each conclusion, the mean/sigma link to the reference scale, its verdict) to `robustness_population.csv`.

# %%
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    stability = population_stability(ref_audit, ref_fit, refits, agreement=AGREEMENT)
    good = [r for r in refits if verdicts[r.name] == "converged"]
    stability_good = (
        population_stability(ref_audit, ref_fit, good, agreement=AGREEMENT) if 0 < len(good) < len(refits) else None
    )
# the population's one benchmark (and the target range, which the tool judges once, on its first scope)
conclusions = stability.conclusions.loc[
    (stability.conclusions["scope"] == BENCH) | (stability.conclusions["conclusion"] == "range")
].copy()
conclusions.insert(0, "population", STABILITY_POPULATION)
conclusions["reference_verdict"] = REF_VERDICT
conclusions["refits_not_converged"] = n_failed
conclusions["refits_approximate"] = n_approx
if stability_good is not None:
    again = stability_good.conclusions.set_index(["scope", "conclusion"])
    keys = list(zip(conclusions["scope"], conclusions["conclusion"], strict=True))
    conclusions["agree_converged_only"] = [again.loc[k, "agree"] for k in keys]
    conclusions["refits_converged_only"] = [again.loc[k, "refits"] for k in keys]
    conclusions["label_converged_only"] = [again.loc[k, "label"] for k in keys]
conclusions.to_csv(S.out / "robustness_stability.csv", index=False)

refit_table = stability.refits.loc[stability.refits["scope"] == BENCH].copy()
refit_table["verdict"] = refit_table["population"].map(verdicts)
refit_table["sampler"] = f"{REFIT['sampler']} {REFIT.get('chains')}x{REFIT.get('draws')}"
reference_line = {
    "population": "reference",
    "kind": "reference",
    "scope": BENCH,
    "n_subjects": jbb.n_subjects,
    "lo": ref_audit.target.lo,
    "hi": ref_audit.target.hi,
    "ddm_w1_mean": ref_row["ddm_w1_mean"],
    "max_gap_mean": ref_row["max_gap_mean"],
    "gap_lo": ref_row["gap_lo"],
    "gap_hi": ref_row["gap_hi"],
    "converged": REF_VERDICT == "converged",
    "verdict": REF_VERDICT,
    "sampler": fit_label(ref_fit),
}
population_csv = pd.concat([pd.DataFrame([reference_line]), refit_table], ignore_index=True)
population_csv.insert(0, "population_of", STABILITY_POPULATION)
population_csv.to_csv(S.out / "robustness_population.csv", index=False)

shown = conclusions[["conclusion", "reference", "agree", "refits", "label"]].copy()
if stability_good is not None:
    shown["converged refits only"] = [
        f"{a}/{n} {lab}"
        for a, n, lab in zip(
            conclusions["agree_converged_only"],
            conclusions["refits_converged_only"],
            conclusions["label_converged_only"],
            strict=True,
        )
    ]
with pd.option_context("display.width", 200, "display.max_colwidth", 60):
    print(f"{BENCH}: reference fit {REF_VERDICT}; refits: {sorted(set(verdicts.values()))}")
    print(shown.to_string(index=False))
    print()
    for r in conclusions.itertuples():
        print(f"{r.conclusion}: {r.evidence}")
print("wrote", S.out / "robustness_stability.csv", "and", S.out / "robustness_population.csv")

# %% [markdown]
# ### What the refits say
#
# Generated from the tables above: the labels, which kind of refit disagrees, and the refit that moves each
# measure most.

# %%
CONCLUSION_NAMES = {
    "range": "the target range",
    "ddm_w1": "DDM",
    "max_gap": "the Maximum Gap's width",
    "gap_location": "where the widest gap lies",
    "ranks": "the systems' re-weighted ranks",
}
caveat = ""
if REF_VERDICT != "converged":
    caveat += f" The reference fit is {REF_VERDICT}: every comparison below is provisional."
if n_failed:
    caveat += f" {n_failed} of {len(refits)} refits did NOT pass their convergence checks (see above)."
if n_approx:
    caveat += f" The {n_approx} refits are approximate (ADVI): their votes are a demonstration, not evidence."
if caveat:
    print("CAVEAT:" + caveat)
stable = conclusions.loc[conclusions["label"] == "stable", "conclusion"].map(CONCLUSION_NAMES).tolist()
dependent = conclusions.loc[conclusions["label"] == "population-dependent", "conclusion"].map(CONCLUSION_NAMES)
print(
    f"Over {len(refits)} refits of {STABILITY_POPULATION} ({BOOTSTRAP} bootstrap, "
    f"{len(refits) - BOOTSTRAP} with one family left out), {len(stable)} of {len(conclusions)} conclusions are stable "
    f"(at least {AGREEMENT:.0%} of the refits agree)" + (f": {', '.join(stable)}" if stable else "") + "."
)
if len(dependent):
    print(f"Population-dependent: {', '.join(dependent)}.")
if stability_good is not None:
    changed = conclusions.loc[conclusions["label"] != conclusions["label_converged_only"]]
    print(
        f"Over the {len(good)} converged refits only, "
        + (
            "the labels are the same."
            if changed.empty
            else "these labels change: "
            + "; ".join(
                f"{CONCLUSION_NAMES[c]} {a} -> {b}"
                for c, a, b in zip(
                    changed["conclusion"], changed["label"], changed["label_converged_only"], strict=True
                )
            )
            + "."
        )
    )

by_kind = refit_table.groupby("kind", sort=False)[[f"agrees_{c}" for c in CONCLUSION_NAMES]].agg(
    lambda x: f"{int(x.dropna().astype(bool).sum())}/{int(x.notna().sum())}"
)
by_kind.columns = list(CONCLUSION_NAMES)
print("\nrefits that agree, by kind of refit:")
print(by_kind.to_string())
for c in ("ddm_w1", "max_gap", "gap_location", "range"):
    col = f"agrees_{c}"
    shares = refit_table.groupby("kind", sort=False)[col].mean()
    if shares.max() - shares.min() >= 0.5:
        print(
            f"{CONCLUSION_NAMES[c][0].upper() + CONCLUSION_NAMES[c][1:]}: {shares.idxmax()} refits agree {shares.max():.0%} of the time, "
            f"{shares.idxmin()} refits {shares.min():.0%}: the kind of population matters."
        )

ref_centre = (ref_row["gap_lo"] + ref_row["gap_hi"]) / 2
moves = {
    "DDM": (refit_table["ddm_w1_mean"] - ref_row["ddm_w1_mean"]).abs(),
    "Maximum Gap": (refit_table["max_gap_mean"] - ref_row["max_gap_mean"]).abs(),
    "gap centre (reference scale)": (
        (refit_table["gap_lo_linked"] + refit_table["gap_hi_linked"]) / 2 - ref_centre
    ).abs(),
}
for what, distance in moves.items():
    k = distance.idxmax()
    r = refit_table.loc[k]
    value = {
        "DDM": f"{r['ddm_w1_mean']:.2f} against {ref_row['ddm_w1_mean']:.2f}",
        "Maximum Gap": f"{r['max_gap_mean']:.2f} against {ref_row['max_gap_mean']:.2f} logits",
        "gap centre (reference scale)": (
            f"[{r['gap_lo_linked']:.2f}, {r['gap_hi_linked']:.2f}] against [{ref_row['gap_lo']:.2f}, "
            f"{ref_row['gap_hi']:.2f}]"
        ),
    }[what]
    print(f"Largest move of the {what}: {r['population']} ({r['n_subjects']} systems, {r['verdict']}): {value}.")
slopes = refit_table["link_slope"].dropna()
if len(slopes):
    print(
        f"Mean/sigma links to the reference scale: slopes {slopes.min():.2f} to {slopes.max():.2f}, intercepts "
        f"{refit_table['link_intercept'].min():.2f} to {refit_table['link_intercept'].max():.2f} logits."
    )
taus = refit_table["kendall_tau"].dropna()
if len(taus):
    print(
        f"Kendall's tau between the reference's and a refit's re-weighted ranks of the shared systems: "
        f"{taus.min():.2f} to {taus.max():.2f} (median {taus.median():.2f})."
    )

# %% [markdown]
# ### Figure: each refit beside the reference
#
# Per refit (the reference at the top, a black diamond): DDM and the Maximum Gap (posterior means; grey band = the
# reference's 90% interval), the widest gap (thick: on the refit's own scale; thin black: linked to the reference
# scale) inside the refit's own target range (grey line), and the share of shared systems whose rank percentile
# stays inside the reference's interval (dashed: the 80% a refit needs). Blue = the refit agrees with the
# reference on that conclusion, orange = it does not; hollow points are refits that did not pass their
# convergence checks.

# %%
rows = population_csv.iloc[::-1].reset_index(drop=True)  # reference at the top
y = np.arange(len(rows))
is_ref = rows["kind"].eq("reference").to_numpy()
failed = rows["verdict"].eq("NOT CONVERGED").to_numpy()
BLUE, ORANGE, GREY = "#0072B2", "#D55E00", "#999999"
fig, axes = plt.subplots(
    1,
    4,
    figsize=(14, 2.2 + 0.3 * len(rows)),
    sharey=True,
    gridspec_kw={"width_ratios": [1, 1, 1.7, 0.9]},
    layout="constrained",
)


def points(ax, x: pd.Series, agrees: pd.Series) -> None:
    """The reference as a black diamond; each refit blue (agrees) or orange (not), hollow when NOT CONVERGED."""
    for xi, yi, ok, ref, bad in zip(x, y, agrees, is_ref, failed, strict=True):
        if ref:
            if np.isfinite(xi):
                ax.scatter([xi], [yi], marker="D", s=28, color="black", zorder=3)
            continue
        colour = GREY if pd.isna(ok) else (BLUE if ok else ORANGE)
        ax.scatter([xi], [yi], s=30, zorder=3, color="white" if bad else colour, edgecolors=colour)


def padded(ax, *values: float) -> None:
    finite = [v for v in values if np.isfinite(v)]
    lo, hi = min(finite), max(finite)
    pad = 0.08 * (hi - lo) if hi > lo else 0.05
    ax.set_xlim(lo - pad, hi + pad)


for ax, m, title in ((axes[0], "ddm_w1", "DDM"), (axes[1], "max_gap", "Maximum Gap (logits)")):
    ax.axvspan(ref_row[f"{m}_ci_low"], ref_row[f"{m}_ci_high"], color=GREY, alpha=0.25, lw=0)
    ax.axvline(ref_row[f"{m}_mean"], color=GREY, lw=1)
    points(ax, rows[f"{m}_mean"], rows[f"agrees_{m}"])
    padded(ax, ref_row[f"{m}_ci_low"], ref_row[f"{m}_ci_high"], *rows[f"{m}_mean"])
    ax.set_title(title, fontsize="medium")
ax = axes[2]
ax.axvspan(ref_row["gap_lo"], ref_row["gap_hi"], color=GREY, alpha=0.25, lw=0)
ax.hlines(y, rows["lo"], rows["hi"], color=GREY, lw=1)
gap_colour = np.where(is_ref, "black", np.where(rows["agrees_gap_location"].eq(True), BLUE, ORANGE))
ax.hlines(y - 0.12, rows["gap_lo"], rows["gap_hi"], color=gap_colour, lw=3.5)
ax.hlines(y + 0.2, rows["gap_lo_linked"], rows["gap_hi_linked"], color="black", lw=1)
ax.set_title("widest gap in the target range (logits)", fontsize="medium")
ax = axes[3]
ax.axvline(AGREEMENT, color=GREY, lw=1, ls="--")
points(ax, rows["rank_share_inside"], rows["agrees_ranks"])
ax.set_xlim(-0.05, 1.05)
ax.set_title("share of ranks inside\nthe reference's intervals", fontsize="medium")
axes[0].set_yticks(y)
axes[0].set_yticklabels([f"{p} [{n}]" for p, n in zip(rows["population"], rows["n_subjects"], strict=True)])
for ax in axes:
    ax.grid(axis="x", alpha=0.3)
    for k in np.flatnonzero(rows["kind"].to_numpy()[1:] != rows["kind"].to_numpy()[:-1]):
        ax.axhline(k + 0.5, color="black", lw=0.5)
handles = [
    Line2D([], [], marker="D", ls="", color="black", label="reference"),
    Patch(color=GREY, alpha=0.25, label="reference 90% interval / widest gap"),
    Line2D([], [], marker="o", ls="", color=BLUE, label="refit agrees"),
    Line2D([], [], marker="o", ls="", color=ORANGE, label="refit disagrees"),
    Line2D([], [], color=GREY, lw=1, label="refit's target range"),
    Line2D([], [], color="black", lw=1, label="refit's gap linked to the reference scale"),
]
if failed.any():
    handles.append(Line2D([], [], marker="o", ls="", color=GREY, markerfacecolor="white", label="refit NOT CONVERGED"))
fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize="small", frameon=False)
fig.suptitle(
    f"{STABILITY_POPULATION}: the audit refitted on {len(refits)} other populations of systems "
    f"([n] = systems; reference fit {REF_VERDICT})",
    fontsize="medium",
)
fig.savefig(S.figures / "robustness_population.png", dpi=DPI, bbox_inches="tight")
show(S.figures / "robustness_population.png")
plt.close(fig)
print("wrote", S.figures / "robustness_population.png")

# %% [markdown]
# ## 2. A revised benchmark: MuTual and MuTual+ on one scale
#
# Both versions are fitted together (concurrent calibration through the 90 checkpoints that took both; the fast
# mode keeps a handful of items of each) and audited once, so their difficulties, target range and widest gaps are
# on one scale; `compare_revision` then reads that audit. The fit pools all items around one mean (hierarchy
# `none`): the default model's benchmark level would rest its spread on two benchmarks, the geometry that gave 36
# divergences in the MuTual run of `docs/studies.md#robustness-measured-on-real-data`. The deconvolved item
# locations of the audit are still estimated per benchmark, so each version keeps its own difficulty distribution.
# The versions are compared as two sets of items: the numbering does not pair them (over the 443 pairs, an item's
# accuracy on one version and on the other are uncorrelated).

# %%
with timer("revision: load"):
    nlu, nlu_record = load_population(REVISION_POPULATION, S)
    both = nlu.subset(benchmarks=[ORIGINAL, REVISED])
per_version = both.items["benchmark"].astype(str).value_counts()
print(
    f"{ORIGINAL} and {REVISED}: {both.n_subjects} checkpoints x {both.n_items} items "
    f"({per_version.get(ORIGINAL, 0)} + {per_version.get(REVISED, 0)} of "
    f"{nlu_record['items_total_per_benchmark'][ORIGINAL]} + {nlu_record['items_total_per_benchmark'][REVISED]}), "
    f"{both.n_responses} responses"
)
with timer("revision: fit"):
    rev_fit, rev_loaded = fit_or_load(REVISION_FIT, both, S, spec=REVISION_SPEC)
    if rev_fit.spec.hierarchy != REVISION_SPEC.hierarchy:  # fit_or_load compares the model's kind only
        print(f"the saved fit has hierarchy {rev_fit.spec.hierarchy!r}; refitting")
        shutil.rmtree(S.fits / REVISION_FIT)
        rev_fit, rev_loaded = fit_or_load(REVISION_FIT, both, S, spec=REVISION_SPEC)
REV_VERDICT = verdict(rev_fit)
print(("loaded saved fit" if rev_loaded else "fitted now") + f"; sampler wall time {rev_fit.sampler['wall_time_s']}s")
print(short_summary(rev_fit))
print(f"revision fit: {fit_label(rev_fit)}; verdict: {REV_VERDICT}")
with timer("revision: audit"), warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    rev_audit = audit(rev_fit, both, **AUDIT)
revision = compare_revision(rev_audit, original=ORIGINAL, revised=REVISED)

# %% [markdown]
# ### The two versions, side by side
#
# One row per version in `robustness_revision.csv` (DDM, Maximum Gap and where it lies, saturated share, raw
# accuracy, whether MuTual+ fills MuTual's widest gap, the fit's verdict); each checkpoint's rank on both versions
# in `robustness_revision_subjects.csv`.

# %%
rev_versions = revision.versions.copy()
changes = revision.changes.set_index("measure")
rev_versions.insert(0, "population", REVISION_POPULATION)
rev_versions["range_lo"], rev_versions["range_hi"] = rev_audit.target.lo, rev_audit.target.hi
rev_versions["items_total"] = [nlu_record["items_total_per_benchmark"][b] for b in rev_versions["benchmark"]]
rev_versions["revised_items_in_original_gap"] = revision.gap["revised_items_inside"]
rev_versions["original_gap_filled"] = revision.gap["filled"]
rev_versions["ddm_change_credible"] = changes.loc["ddm_w1", "credible"]
rev_versions["max_gap_change_credible"] = changes.loc["max_gap", "credible"]
rev_versions["regressing_systems"] = int(revision.subjects["regresses"].sum())
rev_versions["model"] = f"{rev_fit.spec.kind} hierarchy {rev_fit.spec.hierarchy}"
rev_versions["sampler"] = fit_label(rev_fit)
rev_versions["verdict"] = REV_VERDICT
rev_versions["max_rhat"] = rev_fit.diagnostics.max_rhat
rev_versions["min_ess_bulk"] = rev_fit.diagnostics.min_ess_bulk
rev_versions["divergences"] = rev_fit.diagnostics.divergences
rev_versions.to_csv(S.out / "robustness_revision.csv", index=False)
rev_subjects = revision.subjects.assign(verdict=REV_VERDICT)
rev_subjects.to_csv(S.out / "robustness_revision_subjects.csv", index=False)
table = pd.DataFrame(
    {
        "version": rev_versions["benchmark"],
        "items": rev_versions["n_items"],
        "raw accuracy": rev_versions["raw_accuracy"].round(3),
        "DDM": [ci(r.ddm_w1_mean, r.ddm_w1_ci_low, r.ddm_w1_ci_high) for r in rev_versions.itertuples()],
        "Maximum Gap (logits)": [
            ci(r.max_gap_mean, r.max_gap_ci_low, r.max_gap_ci_high) for r in rev_versions.itertuples()
        ],
        "gap at": [f"[{r.gap_lo:.2f}, {r.gap_hi:.2f}]" for r in rev_versions.itertuples()],
        "saturated": [f"{s:.0%}" for s in rev_versions["saturated_share"]],
    }
)
print(f"one scale, target range [{rev_audit.target.lo:.2f}, {rev_audit.target.hi:.2f}]; fit verdict {REV_VERDICT}")
print(table.to_string(index=False))
print("wrote", S.out / "robustness_revision.csv", "and", S.out / "robustness_revision_subjects.csv")

# %% [markdown]
# ### What the revision changed
#
# Generated from the comparison: the tool's own findings, then the same in words.

# %%
if REV_VERDICT != "converged":
    print(f"The joint fit is {REV_VERDICT}: the findings below are provisional.")
for line in revision.summary:
    print(" -", line)
o, r = rev_versions.iloc[0], rev_versions.iloc[1]
for measure, name in (("ddm_w1", "DDM"), ("max_gap", "Maximum Gap")):
    if changes.loc[measure, "credible"]:
        direction = "larger" if r[f"{measure}_mean"] > o[f"{measure}_mean"] else "smaller"
        print(f"{REVISED}'s {name} is credibly {direction} than {ORIGINAL}'s (the 90% intervals are disjoint).")
    else:
        print(f"The data cannot order the two versions by {name}: the 90% intervals overlap.")
gap = revision.gap
print(
    f"{ORIGINAL}'s widest gap [{o['gap_lo']:.2f}, {o['gap_hi']:.2f}] holds {gap['revised_items_inside']} of "
    f"{REVISED}'s items (posterior mean difficulties): "
    + ("the revision fills it." if gap["filled"] else "the revision leaves it empty.")
)
lo_hi = rev_audit.target.lo, rev_audit.target.hi
where = (o["gap_lo"] + o["gap_hi"]) / 2
third = (
    "lower third"
    if where < lo_hi[0] + (lo_hi[1] - lo_hi[0]) / 3
    else ("upper third" if where > lo_hi[1] - (lo_hi[1] - lo_hi[0]) / 3 else "middle third")
)
print(f"That gap lies in the {third} of the target range [{lo_hi[0]:.2f}, {lo_hi[1]:.2f}].")
moved = revision.subjects.loc[revision.subjects["rank_change"].abs().idxmax()]
print(
    f"The largest rank change: {moved['subject']}, rank {moved['rank_original_mean']:.1f} on {ORIGINAL} and "
    f"{moved['rank_revised_mean']:.1f} on {REVISED}"
    + (" (credibly worse: it regresses)." if moved["regresses"] else " (the intervals overlap).")
)

# %% [markdown]
# ### Figure: the two versions on one scale
#
# Left: each item's posterior mean difficulty (histograms), the checkpoints' abilities (ticks), the target range
# (dashed) and each version's widest gap (bars at the top; the audit reads gaps from the deconvolved locations,
# so a bar can hold an item's posterior mean). Right: each checkpoint's re-weighted rank on the two versions with
# 90% intervals; orange = credibly worse on the revision.

# %%
items = rev_audit.items
ability = rev_fit.posterior["ability"].mean(("chain", "draw")).to_numpy().ravel()
fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.5, 1]})
colours = {ORIGINAL: BLUE, REVISED: ORANGE}
values = items["difficulty_mean"].to_numpy(dtype=float)
edges = np.linspace(min(values.min(), lo_hi[0]) - 0.1, max(values.max(), lo_hi[1]) + 0.1, 40)
top = 0.0
for name, colour in colours.items():
    v = items.loc[items["benchmark"].astype(str) == name, "difficulty_mean"].to_numpy(dtype=float)
    counts, _, _ = ax.hist(v, bins=edges, histtype="step", lw=1.8, color=colour, label=f"{name} ({len(v)} items)")
    top = max(top, counts.max())
for k, (name, colour) in enumerate(colours.items()):
    row = rev_versions.set_index("benchmark").loc[name]
    ax.hlines(top * (1.12 + 0.08 * k), row["gap_lo"], row["gap_hi"], color=colour, lw=5, label=f"widest gap of {name}")
ax.plot(ability, np.full_like(ability, -0.03 * top), "|", color="black", ms=8, label="checkpoints' abilities")
for edge in lo_hi:
    ax.axvline(edge, color=GREY, ls="--", lw=1)
ax.set_ylim(-0.08 * top, top * 1.35)
ax.set_xlabel("difficulty / ability (logits, one scale)")
ax.set_ylabel("items")
ax.set_title(f"{ORIGINAL} and {REVISED} ({REV_VERDICT})", fontsize="medium")
ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(0.0, -0.14), ncol=3, frameon=False)
subj = revision.subjects
reg = subj["regresses"].to_numpy(dtype=bool)
for mask, colour in ((~reg, BLUE), (reg, ORANGE)):
    s = subj.loc[mask]
    bx.errorbar(
        s["rank_original_mean"],
        s["rank_revised_mean"],
        xerr=[
            s["rank_original_mean"] - s["rank_original_ci_low"],
            s["rank_original_ci_high"] - s["rank_original_mean"],
        ],
        yerr=[s["rank_revised_mean"] - s["rank_revised_ci_low"], s["rank_revised_ci_high"] - s["rank_revised_mean"]],
        fmt="o",
        ms=3,
        lw=0.6,
        color=colour,
        alpha=0.8,
        label="credibly worse on the revision" if colour == ORANGE else "intervals overlap",
    )
n_sub = len(subj)
bx.plot([1, n_sub], [1, n_sub], color=GREY, lw=1)
bx.set_xlabel(f"rank on {ORIGINAL} (1 = best)")
bx.set_ylabel(f"rank on {REVISED}")
bx.set_title(f"{n_sub} checkpoints; {int(reg.sum())} regress", fontsize="medium")
bx.legend(fontsize="small", loc="upper left")
bx.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(S.figures / "robustness_revision.png", dpi=DPI, bbox_inches="tight")
show(S.figures / "robustness_revision.png")
plt.close(fig)
print("wrote", S.figures / "robustness_revision.png")

# %% [markdown]
# ## 3. A condition: XSTest's system prompt
#
# No registered data set has a `condition` column, but XSTest's setups are named for one: `llama2orig` and
# `llama2new` are Llama-2 with and without its original system prompt, `mistralguard` and `mistralinstruct`
# Mistral with and without a guardrail prompt (GPT-4, run once, is left out). JailbreakBench's second judge
# (Llama Guard), which the example in `docs/studies.md#robustness-measured-on-real-data` treats as a condition, is
# not in the registered data set.
#
# The population scores 1 for the right behaviour: complying with a safe prompt, refusing an unsafe one (a
# partial refusal 0.5). A system prompt that makes a model refuse more then makes safe prompts *harder* and unsafe
# ones *easier*: the effects have opposite signs by label, while the model's horseshoe shrinks each item's effect
# toward one common shift per condition. So the model is fitted once per label (safe prompts, unsafe prompts),
# 1PL (two systems), with `no_system_prompt` as the reference condition. Per label: the common shift of item
# difficulty (positive: the right behaviour is less likely), each system's change in log-odds for a typical
# prompt (its ability shift minus the common shift, per draw), the items that move credibly differently from the
# common shift (Bayesian FDR 0.05) and whether the two systems keep their order.

# %%
with timer("conditions: load"):
    xs, xs_record = load_population(CONDITION_POPULATION, S)
frame = xs.long_frame()
frame = frame.loc[frame["subject"].isin(list(CONDITION_OF))].copy()
frame["condition"] = frame["subject"].map(lambda s: CONDITION_OF[s][1])
frame["subject"] = frame["subject"].map(lambda s: CONDITION_OF[s][0])
item_meta = xs.items.reset_index()
label_of = xs.items["prompt_label"].astype(str)
raw = (
    frame.assign(label=frame["item"].map(label_of))
    .pivot_table(index=["label", "subject"], columns="condition", values="response", aggfunc="mean")
    .round(3)
)
print(
    f"{CONDITION_POPULATION}: {frame['subject'].nunique()} systems x {frame['item'].nunique()} prompts x 2 conditions"
)
print("mean score (1 = the right behaviour) per label, system and condition:")
print(raw.to_string())

condition_rows, condition_items, condition_fits = [], [], {}
for label in ("safe", "unsafe"):
    part = frame.loc[frame["item"].map(label_of) == label]
    data = ResponseData.from_long(
        part,
        condition="condition",
        items=item_meta.loc[item_meta["item"].isin(part["item"].unique())],
        source=f"XSTest {label} prompts, system prompt as a condition",
    )
    with timer(f"conditions: fit {label}"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cfit = fit_conditions(
            data, reference=REFERENCE_CONDITION, kind="1pl", seed=S.seed, progress=False, **CONDITION_FIT
        )
    effects = condition_effects(cfit, ci_prob=CI_PROB)
    sm = cfit.sampler
    cverdict = "converged" if sm.get("converged") else "NOT CONVERGED"
    condition_fits[label] = {
        k: sm.get(k) for k in ("chains", "draws", "tune", "max_rhat", "min_ess_bulk", "divergences")
    }
    condition_fits[label].update(verdict=cverdict, problems=sm.get("convergence_problems", []))
    print(
        f"\n{label} prompts ({data.n_items} items): nutpie {sm['chains']} x {sm['draws']} after {sm['tune']}: "
        f"verdict {cverdict} (max r-hat {sm['max_rhat']:.3f}, min bulk ESS {sm['min_ess_bulk']:.0f}, "
        f"{sm['divergences']} divergences)"
        + (f"; {sm['convergence_problems'][0]}" if cverdict != "converged" and sm.get("convergence_problems") else "")
    )
    cond = next(c for c in effects.conditions if c != effects.reference)
    post = cfit.posterior
    shift = post["shift"].sel(condition=cond).stack(s=("chain", "draw")).to_numpy()
    qlo, qhi = (1 - CI_PROB) / 2, 1 - (1 - CI_PROB) / 2
    quantities = {"common difficulty shift": shift}
    for subject in post["subject"].to_numpy().astype(str):
        delta = post["ability_shift"].sel(condition=cond, subject=subject).stack(s=("chain", "draw")).to_numpy()
        quantities[f"change in log-odds for {subject}"] = delta - shift
    for what, draws in quantities.items():
        condition_rows.append(
            {
                "prompt_label": label,
                "condition": cond,
                "reference_condition": effects.reference,
                "quantity": what,
                "mean": float(draws.mean()),
                "ci_low": float(np.quantile(draws, qlo)),
                "ci_high": float(np.quantile(draws, qhi)),
                "p_positive": float((draws > 0).mean()),
                "items": data.n_items,
                "items_flagged": int(effects.items["flagged"].sum()),
                "p_order_kept": float(effects.agreement["max_rank_displacement_p_zero"].iloc[0])
                if len(effects.agreement)
                else np.nan,
                "verdict": cverdict,
                "max_rhat": sm["max_rhat"],
                "min_ess_bulk": sm["min_ess_bulk"],
                "divergences": sm["divergences"],
                "sampler": f"nutpie {sm['chains']}x{sm['draws']}",
            }
        )
    condition_items.append(effects.items.assign(prompt_label=label, verdict=cverdict))
conditions_table = pd.DataFrame(condition_rows)
conditions_table.to_csv(S.out / "robustness_conditions.csv", index=False)
pd.concat(condition_items, ignore_index=True).to_csv(S.out / "robustness_conditions_items.csv", index=False)
shown = conditions_table.assign(
    estimate=[ci(r.mean, r.ci_low, r.ci_high) for r in conditions_table.itertuples()],
    flagged=[f"{f}/{n}" for f, n in zip(conditions_table["items_flagged"], conditions_table["items"], strict=True)],
)[["prompt_label", "quantity", "estimate", "p_positive", "flagged", "verdict"]]
print()
print(shown.to_string(index=False))
print("wrote", S.out / "robustness_conditions.csv", "and", S.out / "robustness_conditions_items.csv")

# %% [markdown]
# ### What the system prompt does
#
# Generated from the table above ("credibly": the 90% interval excludes 0).

# %%
for label, group in conditions_table.groupby("prompt_label", sort=False):
    g = group.set_index("quantity")
    s = g.loc["common difficulty shift"]
    note = "" if s["verdict"] == "converged" else f" [fit {s['verdict']}: provisional]"
    if s["ci_low"] > 0:
        effect = "credibly harder: the right behaviour is less likely under the system prompt"
    elif s["ci_high"] < 0:
        effect = "credibly easier: the right behaviour is more likely under the system prompt"
    else:
        effect = "not credibly shifted"
    print(f"{label.capitalize()} prompts are {effect} ({ci(s['mean'], s['ci_low'], s['ci_high'])} logits){note}.")
    for what, r in g.drop(index="common difficulty shift").iterrows():
        system = what.rsplit(" ", 1)[-1]
        word = (
            "credibly falls"
            if r["ci_high"] < 0
            else ("credibly rises" if r["ci_low"] > 0 else "does not move credibly")
        )
        print(f"  {system}'s log-odds of the right behaviour {word}: {ci(r['mean'], r['ci_low'], r['ci_high'])}{note}.")
    print(
        f"  {int(s['items_flagged'])} of {int(s['items'])} prompts move credibly differently from the common shift; "
        f"the two systems keep their order in {s['p_order_kept']:.0%} of draws{note}."
    )
shifts = conditions_table.loc[conditions_table["quantity"] == "common difficulty shift"].set_index("prompt_label")
if {"safe", "unsafe"} <= set(shifts.index):
    a, b = shifts.loc["safe"], shifts.loc["unsafe"]
    both_note = "" if (shifts["verdict"] == "converged").all() else " [from fits that did NOT converge: provisional]"
    if a["ci_low"] > 0 and b["ci_high"] < 0:
        print(
            "The system prompt moves XSTest's safe and unsafe prompts in opposite directions (more over-refusal, "
            "less harmful compliance): a prompt's difficulty depends on how the systems were configured, so "
            "difficulties calibrated on one mix of setups carry over to another only as far as the mix is the same"
            + both_note
            + "."
        )
    elif not (a["ci_low"] > 0 or a["ci_high"] < 0) and not (b["ci_low"] > 0 or b["ci_high"] < 0):
        print(f"Neither half is credibly shifted by the system prompt{both_note}.")

# %% [markdown]
# ### Figure: the system prompt's effect per label
#
# Left: the common shift and each system's change in log-odds with 90% intervals, per label. Right: each prompt's
# effect (posterior median), per label; the dashed lines are the common shifts.

# %%
fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.2, 1]})
rows = conditions_table.iloc[::-1].reset_index(drop=True)
y = np.arange(len(rows))
label_colour = {"safe": BLUE, "unsafe": ORANGE}
for k, r in rows.iterrows():
    colour = label_colour[r["prompt_label"]]
    ax.hlines(k, r["ci_low"], r["ci_high"], color=colour, lw=2)
    ax.scatter([r["mean"]], [k], color=colour if r["verdict"] == "converged" else "white", edgecolors=colour, zorder=3)
ax.axvline(0, color=GREY, lw=1)
ax.set_yticks(y)
ax.set_yticklabels([f"{r.prompt_label}: {r.quantity}" for r in rows.itertuples()], fontsize="small")
ax.set_xlabel("logits (90% intervals; hollow = fit NOT CONVERGED)")
ax.set_title("system prompt vs none: shifts", fontsize="medium")
ax.grid(axis="x", alpha=0.3)
items_all = pd.concat(condition_items, ignore_index=True)
cond_name = conditions_table["condition"].iloc[0]
median_col = f"{cond_name}_median"
lo_all, hi_all = items_all[median_col].min(), items_all[median_col].max()
bins_fx = np.linspace(lo_all - 0.05, hi_all + 0.05, 30)
for label, colour in label_colour.items():
    v = items_all.loc[items_all["prompt_label"] == label, median_col]
    bx.hist(v, bins=bins_fx, histtype="step", lw=1.8, color=colour, label=f"{label} ({len(v)} prompts)")
    bx.axvline(shifts.loc[label, "mean"], color=colour, ls="--", lw=1)
bx.axvline(0, color=GREY, lw=1)
bx.set_xlabel("effect on the prompt's difficulty (logits, posterior median)")
bx.set_ylabel("prompts")
bx.set_title("per prompt (dashed: common shift)", fontsize="medium")
bx.legend(fontsize="small")
fig.tight_layout()
fig.savefig(S.figures / "robustness_conditions.png", dpi=DPI, bbox_inches="tight")
show(S.figures / "robustness_conditions.png")
plt.close(fig)
print("wrote", S.figures / "robustness_conditions.png")

# %% [markdown]
# ## Record and timing
#
# `robustness.json` records the settings, every fit's verdict and the main findings; the timing table the seconds
# per step of this run (a reused fit costs only its loading).

# %%
write_json(
    S.out / "robustness.json",
    {
        "settings": settings_record(S),
        "population": {
            "population": STABILITY_POPULATION,
            "subsample": subsample_note(jbb_record),
            "reference": {"sampler": fit_label(ref_fit), "verdict": REF_VERDICT, "reused": ref_loaded},
            "refit_settings": REFIT,
            "refits": [
                {"name": r.name, "kind": r.kind, "n_subjects": r.n_subjects, "verdict": verdicts[r.name]}
                for r in refits
            ],
            "agreement": AGREEMENT,
            "labels": dict(zip(conclusions["conclusion"], conclusions["label"], strict=True)),
        },
        "revision": {
            "population": REVISION_POPULATION,
            "versions": [ORIGINAL, REVISED],
            "model": rev_versions["model"].iloc[0],
            "sampler": fit_label(rev_fit),
            "verdict": REV_VERDICT,
            "gap": revision.gap,
            "summary": revision.summary,
        },
        "conditions": {
            "population": CONDITION_POPULATION,
            "systems": CONDITION_OF,
            "reference_condition": REFERENCE_CONDITION,
            "fits": condition_fits,
        },
    },
)
times = timer.table()
times.to_csv(S.out / "timings_07_robustness.csv", index=False)
print(times.to_string(index=False))
print(f"total {times['seconds'].sum():.0f}s; wrote", S.out / "robustness.json")

# %% [markdown]
# ## Versions

# %%
print(versions())
