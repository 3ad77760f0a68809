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
# # 3. The audit: measure mismatch and coverage gaps across benchmarks and domains
#
# Each benchmark is read as an empirical measure over item difficulty, on the same scale as the abilities of
# the systems that took it. Difficulties are only comparable within one calibration, so the audit calibrates
# **one population of systems at a time** (one hierarchical 2PL fit each) and audits every benchmark that
# population took:
#
# | population | systems | benchmarks |
# |---|---|---|
# | `mmlu_pro` | 29 LLMs | MMLU-Pro's 14 subject categories |
# | `openllm` | Open LLM Leaderboard v1 systems | ARC-Challenge, GSM8K, HellaSwag, TruthfulQA, WinoGrande (tinyBenchmarks items) |
# | `nlu` | 90 fine-tuned encoder checkpoints | 29 NLU test sets (Vania et al., 2021) |
# | `chembench` | 21 LLMs and one agent | ChemBench |
# | `jailbreakbench` | 18 (attack, target LLM) pairs | JailbreakBench |
# | `xstest` | 5 LLM setups | XSTest |
#
# **Domains.** Benchmarks are grouped by the registry's domain labels (`irtbayes.datasets`): one vocabulary
# across sources, assigned by what a test set measures rather than by where it came from, so that, e.g., ARC
# is "science" both on the leaderboard and among the NLU sets, and MMLU-Pro's categories keep MMLU's own four
# groups (stem, humanities, social_science, professional). We use them unchanged so the grouping is fixed
# before any result is seen.
#
# **Measures** (per posterior draw, summarised by the mean and a 90% equal-tailed interval): the target range
# [L, U] is where the population's abilities lie (pooled 2.5%-97.5% posterior quantiles, widened by 0.5),
# cut into 10 bins with a uniform target. **DDM** counts the share of the benchmark's items outside [L, U] in
# full and adds, for the share inside, the 1-Wasserstein distance between those items and the uniform target
# divided by U - L (0 = every item inside and spread evenly, 1 = no item inside). **Maximum Gap** is the
# widest interval in [L, U] with no item difficulty (L and U count as edges); we report it in logits and as a
# share of U - L, which is comparable across populations. Coverage is the expected share of items per bin and
# the probability that a bin is empty.
#
# **Models and sampling.** A hierarchical 2PL (item difficulties and log-discriminations pooled within benchmark
# and domain) for every population except XSTest: with 5 systems an item's discrimination would rest on 5
# responses, so XSTest gets the 1PL (Rasch) model. The full mode samples with nutpie (NUTS), 2 chains x 500
# draws after 500 warm-up draws, and 4 chains x 1000 after 1000 for the small populations (at most 100,000
# responses: ChemBench, JailbreakBench, XSTest), whose fits take seconds to minutes.
#
# **Subsampling.** Two populations are too large to sample in full with NUTS on a 2-core machine in
# reasonable time: the Open LLM Leaderboard (the 1,989 systems with all five benchmarks x 493 items) and the
# NLU test sets (90 x 82,756 items). The full mode calibrates a seeded random subset of 400 leaderboard systems
# and of 100 items per NLU test set; the fast mode (the test suite) shrinks every population further and uses
# ADVI. Every row of the results table says what was calibrated and with which sampler. A full run on more
# data is `IRTBAYES_NB_MAX_SUBJECTS=all IRTBAYES_NB_MAX_ITEMS=all IRTBAYES_NB_MODE=full python
# notebooks/03_audit.py` (or any other caps), on a machine with more cores. A smaller subsample inflates the
# Maximum Gap (fewer points leave wider gaps) and raises DDM's floor, o + (1 - o)/(4m) for m items inside and a
# share o outside; the table reports both the number of items calibrated and a reference gap for that many
# items spread at random.
#
# **Item locations.** Coverage, DDM and the Maximum Gap use the audit's default deconvolved item locations:
# in each draw every item is placed under its benchmark's estimated difficulty distribution rather than the
# model's normal prior, which would otherwise fill empty regions with its neighbours' scatter (README, "What
# the audit computes"). The table's `ensemble` column records it per row.

# %% tags=["parameters"]
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import (
    POPULATIONS,
    Timer,
    ci,
    fit_label,
    fit_or_load,
    load_population,
    settings,
    settings_record,
    short_summary,
    subsample_note,
    versions,
    write_json,
)

from irtbayes.audit import audit
from irtbayes.plots import plot_coverage_heatmap, plot_forest

S = settings()
timer = Timer()
BINS = 10
CI_PROB = 0.9
RHAT_OK = 1.05  # a NUTS fit with a larger r-hat has chains that disagree: its rows are kept out of the orderings
print(S.describe())

# %% [markdown]
# ## Calibrate and audit each population
#
# Fits are saved under `<out>/fits/<population>` and reused when they match the data and the sampler
# settings, so notebooks 4 and 5 (and reruns) do not refit.

# %%
bench_rows, bin_rows, pop_records = [], [], []
for pop in POPULATIONS:
    with timer(f"{pop.name}: load"):
        data, record = load_population(pop, S)
    print(f"\n=== {pop.name}: {data.n_subjects} subjects x {data.n_items} items ({subsample_note(record)})")
    with timer(f"{pop.name}: fit"):
        result, loaded = fit_or_load(pop.name, data, S)
    print(("loaded saved fit" if loaded else "fitted now") + f"; sampler wall time {result.sampler['wall_time_s']}s")
    print(short_summary(result))
    with timer(f"{pop.name}: audit"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        report = audit(result, data, bins=BINS, ci_prob=CI_PROB, max_draws=400 if S.fast else 1000)
    lo, hi = report.target.lo, report.target.hi
    table = report.benchmarks.loc[report.benchmarks["scope_kind"] == "benchmark"].copy()
    domain_of = data.items.groupby("benchmark", observed=True)["domain"].first().astype(str)
    for _, r in table.iterrows():
        width = hi - lo
        outside = r["mass_below_mean"] + r["mass_above_mean"]
        in_range = r["n_items"] * (1 - outside)
        m = max(round(in_range), 0)
        # expected widest of the m + 1 spacings of m uniform points on [0, 1] (L and U count as edges)
        gap_ref = float(np.sum(1.0 / np.arange(1, m + 2)) / (m + 1))
        bench_rows.append(
            {
                "population": pop.name,
                "dataset": pop.dataset,
                "benchmark": r["scope"],
                "domain": domain_of.get(r["scope"], ""),
                "items": int(r["n_items"]),
                "items_total": record["items_total_per_benchmark"].get(r["scope"], int(r["n_items"])),
                "subjects": int(r["n_subjects"]),
                "subjects_total": record["subjects_total"],
                "raw_accuracy": r["raw_accuracy"],
                "range_lo": lo,
                "range_hi": hi,
                **{f"ddm_{k}": r[f"ddm_w1_{k}"] for k in ("mean", "sd", "ci_low", "ci_high")},
                "ddm_floor": outside + (1 - outside) / (4 * max(m, 1)),
                **{f"ddm_tv_{k}": r[f"ddm_tv_{k}"] for k in ("mean", "ci_low", "ci_high")},
                **{f"max_gap_{k}": r[f"max_gap_{k}"] for k in ("mean", "sd", "ci_low", "ci_high")},
                **{f"max_gap_rel_{k}": r[f"max_gap_{k}"] / width for k in ("mean", "ci_low", "ci_high")},
                "gap_rel_uniform_ref": gap_ref,
                "gap_lo": r["gap_lo"],
                "gap_hi": r["gap_hi"],
                "gap_modal_bin": int(r["gap_modal_bin"]),
                "gap_modal_bin_lo": report.target.edges[int(r["gap_modal_bin"])],
                "gap_modal_bin_hi": report.target.edges[int(r["gap_modal_bin"]) + 1],
                "gap_p_modal_bin": r["gap_p_modal_bin"],
                "empty_bins_mean": r["empty_bins_mean"],
                "ensemble": report.settings["ensemble"],
                "mass_below_mean": r["mass_below_mean"],
                "mass_above_mean": r["mass_above_mean"],
                "sampler": fit_label(result),
                "approximate": result.approximate,
                "converged": (not result.approximate) and result.diagnostics.ok,
                "mixed": result.approximate or bool(result.diagnostics.max_rhat <= RHAT_OK),
                "max_rhat": result.diagnostics.max_rhat,
                "min_ess_bulk": result.diagnostics.min_ess_bulk,
                "subsample": subsample_note(record),
                "ci_prob": CI_PROB,
                "bins": BINS,
            }
        )
    bins = report.bins.loc[report.bins["scope_kind"] == "benchmark"].copy()
    bins.insert(0, "population", pop.name)
    bin_rows.append(bins)
    record.update(
        sampler=result.sampler,
        model=result.spec.kind,
        diagnostics_ok=result.diagnostics.ok,
        max_rhat=result.diagnostics.max_rhat,
        min_ess_bulk=result.diagnostics.min_ess_bulk,
        divergences=result.diagnostics.divergences,
        approximate=result.approximate,
        range=[lo, hi],
        fit_reused=loaded,
        seconds={row["step"].split(": ")[1]: row["seconds"] for row in timer.rows if row["step"].startswith(pop.name)},
    )
    pop_records.append(record)
    print(f"target range [{lo:g}, {hi:g}] ({report.settings['range_rule']})")

# %% [markdown]
# ## The results table
#
# First how each population's fit went (NUTS diagnostics: r-hat <= 1.01 and bulk/tail ESS >= 400 for "converged"),
# then one row per (population, benchmark). Written to `<out>/benchmark_audit.csv`; the per-bin coverage of every
# benchmark goes to `<out>/benchmark_bins.csv`.

# %%
results = pd.DataFrame(bench_rows)
convergence = pd.DataFrame(
    [
        {
            "population": p["population"],
            "model": p["model"],
            "sampler": p["sampler"]["name"],
            "chains x draws": f"{p['sampler']['chains']} x {p['sampler']['draws']}",
            "seconds": p["sampler"].get("wall_time_s"),
            "max r-hat": p["max_rhat"],
            "min bulk ESS": p["min_ess_bulk"],
            "divergences": p["divergences"],
            "verdict": "approximate" if p["approximate"] else ("converged" if p["diagnostics_ok"] else "not converged"),
        }
        for p in pop_records
    ]
)
with pd.option_context("display.width", 200, "display.precision", 3):
    print(convergence.to_string(index=False))
# a benchmark is named population:benchmark, or by its own name when it is the population's only benchmark
results.insert(
    0,
    "label",
    results["benchmark"].where(
        results["population"] == results["benchmark"], results["population"] + ":" + results["benchmark"]
    ),
)
results.insert(1, "label_domain", results["label"] + " · " + results["domain"])
results.to_csv(S.out / "benchmark_audit.csv", index=False)
all_bins = pd.concat(bin_rows, ignore_index=True)
all_bins.to_csv(S.out / "benchmark_bins.csv", index=False)
write_json(S.out / "populations.json", {"settings": settings_record(S), "populations": pop_records})
shown = pd.DataFrame(
    {
        "benchmark": results["label"],
        "domain": results["domain"],
        "items": results["items"].astype(str) + "/" + results["items_total"].astype(str),
        "subjects": results["subjects"],
        "DDM": [ci(r.ddm_mean, r.ddm_ci_low, r.ddm_ci_high) for r in results.itertuples()],
        "max gap (share of range)": [
            ci(r.max_gap_rel_mean, r.max_gap_rel_ci_low, r.max_gap_rel_ci_high) for r in results.itertuples()
        ],
        "gap at (logits)": [f"[{r.gap_lo:.2f}, {r.gap_hi:.2f}]" for r in results.itertuples()],
        "below/above": [f"{r.mass_below_mean:.0%}/{r.mass_above_mean:.0%}" for r in results.itertuples()],
    }
)
with pd.option_context("display.width", 220, "display.max_rows", 200):
    print(shown.to_string(index=False))
print("wrote", S.out / "benchmark_audit.csv")

# %% [markdown]
# ## What the table says
#
# Generated from the numbers above. "Credibly" means the 90% interval excludes the value compared with; where
# intervals overlap we say the data cannot order the benchmarks.

# %%
n_b, n_d = len(results), results["domain"].nunique()
per_domain = results.groupby("domain").agg(
    benchmarks=("label", "size"),
    populations=("population", "nunique"),
    median_ddm=("ddm_mean", "median"),
    median_gap_share=("max_gap_rel_mean", "median"),
)
print(f"{n_b} benchmarks in {n_d} domains were audited across {results['population'].nunique()} populations.")
with pd.option_context("display.precision", 3):
    print(per_domain.sort_values("median_ddm", ascending=False).to_string())
n_approx = int(results["approximate"].sum())
if n_approx:
    pops = sorted(results.loc[results["approximate"], "population"].unique())
    print(f"{n_approx} rows come from an approximate fit ({', '.join(pops)}): their intervals are approximate.")
not_conv = sorted(results.loc[~results["approximate"] & ~results["converged"], "population"].unique())
if not_conv:
    print(f"The NUTS fits of {', '.join(not_conv)} did not pass every convergence check (see the fit summaries).")
unmixed = results.loc[~results["mixed"]]
if len(unmixed):
    print(
        f"The fits of {', '.join(sorted(unmixed['population'].unique()))} have r-hat above {RHAT_OK} (chains that "
        f"disagree): their {len(unmixed)} row(s) are reported but left out of the orderings below."
    )
solid = results.loc[results["mixed"]]


def ordering_sentence(frame: pd.DataFrame, prefix: str, what: str, k: int = 5) -> None:
    top = frame.sort_values(f"{prefix}_mean", ascending=False).head(k)
    print(f"Largest {what}:")
    for r in top.itertuples():
        print(
            f"  {r.label} ({r.domain}): {ci(getattr(r, prefix + '_mean'), getattr(r, prefix + '_ci_low'), getattr(r, prefix + '_ci_high'))}"
        )
    first, second = top.iloc[0], top.iloc[1]
    if first[f"{prefix}_ci_low"] > second[f"{prefix}_ci_high"]:
        print(f"  {first['label']}'s {what} is credibly larger than every other benchmark's.")
    else:
        tied = top.loc[top[f"{prefix}_ci_high"] >= first[f"{prefix}_ci_low"], "label"].tolist()
        print(f"  The intervals of {', '.join(tied)} overlap with the largest: the data cannot order them.")


ordering_sentence(solid, "ddm", "DDM")
ordering_sentence(solid, "max_gap_rel", "Maximum Gap (share of the range)")

wide = solid.loc[solid["max_gap_rel_ci_low"] > solid["gap_rel_uniform_ref"]]
print(
    f"{len(wide)} of {len(solid)} benchmarks have a widest gap credibly wider than expected if their in-range items were "
    "spread uniformly at random over the range (the 90% interval lies above the reference)"
    + (
        f": {', '.join(wide.sort_values('max_gap_rel_mean', ascending=False)['label'].head(10))}"
        + (" ..." if len(wide) > 10 else "")
        if len(wide)
        else "."
    )
)
for r in solid.sort_values("max_gap_rel_ci_low", ascending=False).head(3).itertuples():
    print(
        f"{r.label}: widest gap {ci(r.max_gap_mean, r.max_gap_ci_low, r.max_gap_ci_high)} logits, on average at "
        f"[{r.gap_lo:.2f}, {r.gap_hi:.2f}]; it falls in bin [{r.gap_modal_bin_lo:.2f}, {r.gap_modal_bin_hi:.2f}) in "
        f"{r.gap_p_modal_bin:.0%} of draws. {r.mass_below_mean:.0%} of its items lie below the range and "
        f"{r.mass_above_mean:.0%} above."
    )
low = solid.loc[solid["ddm_ci_high"] < 0.1]
print(
    f"{len(low)} of {len(solid)} benchmarks have DDM credibly below 0.1 (difficulty spread close to uniform over the range)."
)

# %% [markdown]
# ## Figures: DDM and Maximum Gap across all benchmarks, coloured by domain

# %%
dpi = 80 if S.fast else 130
ax = plot_forest(
    results,
    mean="ddm_mean",
    low="ddm_ci_low",
    high="ddm_ci_high",
    label="label_domain",
    colour_by="domain",
    xlabel="DDM = share outside + share inside x W1(inside, uniform target) / (U - L)",
    title=f"Difficulty Distribution Mismatch, {n_b} benchmarks ({CI_PROB:.0%} intervals)",
)
ax.figure.savefig(S.figures / "forest_ddm.png", dpi=dpi, bbox_inches="tight")
plt.close(ax.figure)
ax = plot_forest(
    results,
    mean="max_gap_rel_mean",
    low="max_gap_rel_ci_low",
    high="max_gap_rel_ci_high",
    label="label_domain",
    colour_by="domain",
    xlabel="widest gap / (U - L)",
    title=f"Maximum Gap as a share of the target range, {n_b} benchmarks ({CI_PROB:.0%} intervals)",
)
order = results.sort_values("max_gap_rel_mean")
ax.scatter(order["gap_rel_uniform_ref"], np.arange(len(order)), marker="|", color="black", s=40, zorder=4)
ax.text(
    0.99,
    0.01,
    "| = expected widest gap of as many items spread at random",
    transform=ax.transAxes,
    ha="right",
    va="bottom",
    fontsize="x-small",
)
ax.figure.savefig(S.figures / "forest_max_gap.png", dpi=dpi, bbox_inches="tight")
plt.close(ax.figure)
print("wrote", S.figures / "forest_ddm.png", "and", S.figures / "forest_max_gap.png")

# %% [markdown]
# ## Coverage heatmap
#
# Rows are benchmarks (grouped by domain), columns the 10 bins of each population's range (shown as shares of
# the range, since the ranges differ between populations); shade = expected share of the benchmark's items in
# the bin, x = the bin is empty with probability >= 0.8.

# %%
heat = all_bins.copy()
heat["scope"] = heat["scope"].where(heat["population"] == heat["scope"], heat["population"] + ":" + heat["scope"])
heat["scope"] = heat["scope"] + " · " + heat["scope"].map(dict(zip(results["label"], results["domain"], strict=True)))
heat["lo"] = heat["bin"] / BINS
heat["hi"] = (heat["bin"] + 1) / BINS
domains = dict(zip(results["label_domain"], results["domain"], strict=True))
ax = plot_coverage_heatmap(heat, scope_kind="benchmark", domains=domains)
ax.set_xlabel("difficulty bin (share of each population's target range)")
ax.figure.savefig(S.figures / "coverage_heatmap.png", dpi=dpi, bbox_inches="tight")
plt.close(ax.figure)
print("wrote", S.figures / "coverage_heatmap.png")

# %% [markdown]
# ## Timing
#
# Seconds per population in this run (a reused fit costs only its loading), beside the sampling time recorded
# with each fit when it was made.

# %%
times = pd.DataFrame(
    [
        {
            "population": p["population"],
            "responses": p["responses"],
            "fit_reused": p["fit_reused"],
            "sampling_s (when fitted)": p["sampler"].get("wall_time_s"),
            **{f"{k}_s (this run)": v for k, v in p["seconds"].items()},
        }
        for p in pop_records
    ]
)
print(times.to_string(index=False))
times.to_csv(S.out / "timings_03_audit.csv", index=False)

# %% [markdown]
# ## Versions

# %%
print(versions())
