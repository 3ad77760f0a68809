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
# **Domains.** Benchmarks are grouped by the registry's domain labels (`irtbayes.data.registry`): one vocabulary
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
# responses, so XSTest gets the 1PL (Rasch) model. Every population is calibrated **in full** (no subsample):
#
# - MMLU-Pro: NUTS (nutpie) at irtbayes' defaults for its size, 4 chains x 1,250 draws after 500 (the fit of
#   `make run`, which the full run reuses when it is given; `scripts/run_notebooks.py --reuse-make-run DIR`);
# - ChemBench, JailbreakBench, XSTest: NUTS, 4 chains, drawing until the convergence checks pass (at most 4,000
#   draws per chain);
# - the Open LLM Leaderboard (all 6,122 systems x 493 tinyBenchmarks items, 2.0M responses) and the NLU test sets
#   (90 checkpoints x all 82,756 items, 7.4M responses): beyond NUTS on a 2-core machine, so the **approximate
#   tier** (`--sampler approx`), validated against NUTS at 100 x 1,000, 400 x 5,000 and on MMLU-Pro (coverage of
#   90% intervals 0.89-0.92; `docs/validation.md`, "The approximate tier against NUTS"). Their rows say `approximate`.
#
# Every row of the table carries its fit's verdict: `converged` (NUTS that passed r-hat <= 1.01, bulk and tail
# ESS >= 400, no divergences), `NOT CONVERGED`, or `approximate`; every figure marks the rows that are not
# `converged`.
#
# **Counting.** A benchmark is counted once however many populations took it (ARC-Challenge, HellaSwag and
# WinoGrande were taken by both the leaderboard and the NLU checkpoints: they are shown side by side), and
# MMLU-Pro's 14 categories are its sub-benchmarks, not benchmarks of their own. The leaderboard's five rows are
# the tinyBenchmarks anchor subsets (about 100 items each), and `items_benchmark` gives the size of the test set
# they were drawn from.
#
# **Item locations.** Coverage, DDM and the Maximum Gap use the audit's default deconvolved item locations:
# in each draw every item is placed under its benchmark's estimated difficulty distribution rather than the
# model's normal prior, which would otherwise fill empty regions with its neighbours' scatter (`docs/audit-definitions.md`,
# "Deconvolved item locations"). The table's `ensemble` column records it per row.

# %% tags=["parameters"]
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import (
    BENCHMARK_DOMAIN,
    CATEGORIES_OF,
    ITEM_SUBSETS,
    POPULATIONS,
    Timer,
    ci,
    fit_label,
    fit_or_load,
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
from _figures import (
    plot_coverage_with_outside,
    plot_difficulty_vs_ability,
    plot_forests,
    plot_side_by_side,
)

from irtbayes.auditing.run import audit
from irtbayes.core.plots import domain_palette

S = settings()
timer = Timer()
BINS = 10
CI_PROB = 0.9
print(S.describe())

# %% [markdown]
# ## Calibrate and audit each population
#
# Fits are saved under `<out>/fits/<population>` and reused when they match the data and the sampler
# settings, so notebooks 4-7 (and reruns) do not refit.


# %%
def table_rows(pop, report, data, record, result, loaded):
    """One row per audited benchmark (and per sub-benchmark) of one population."""
    lo, hi = report.target.lo, report.target.hi
    whole = CATEGORIES_OF.get(pop.name)
    kinds = ["benchmark", "all"] if whole else ["benchmark"]
    table = report.benchmarks.loc[report.benchmarks["scope_kind"].isin(kinds)]
    domain_of = data.items.groupby("benchmark", observed=True)["domain"].first().astype(str)
    rows = []
    for _, r in table.iterrows():
        is_all = r["scope_kind"] == "all"
        outside = r["mass_below_mean"] + r["mass_above_mean"]
        m = max(round(r["n_items"] * (1 - outside)), 0)
        # expected widest of the m + 1 spacings of m uniform points on [0, 1] (L and U count as edges)
        gap_ref = float(np.sum(1.0 / np.arange(1, m + 2)) / (m + 1))
        if whole:
            benchmark, sub = whole, ("" if is_all else str(r["scope"]))
        else:
            benchmark, sub = str(r["scope"]), ""
        domain = BENCHMARK_DOMAIN.get(benchmark, "") if is_all else domain_of.get(r["scope"], "")
        total, subset = ITEM_SUBSETS.get((pop.name, benchmark), (None, ""))
        n_total = record["items_total"] if is_all else record["items_total_per_benchmark"].get(r["scope"])
        rows.append(
            {
                "population": pop.name,
                "benchmark": benchmark,
                "sub_benchmark": sub,
                "level": "sub-benchmark" if sub else "benchmark",
                "scope_kind": r["scope_kind"],
                "scope": r["scope"],
                "domain": domain,
                "dataset": pop.dataset,
                "items": int(r["n_items"]),
                "items_total": int(n_total if n_total is not None else r["n_items"]),
                "items_benchmark": int(total) if total else int(n_total if n_total is not None else r["n_items"]),
                "item_set": subset or "all items",
                "subjects": int(r["n_subjects"]),
                "subjects_total": record["subjects_total"],
                "raw_accuracy": r["raw_accuracy"],
                "range_lo": lo,
                "range_hi": hi,
                **{f"ddm_{k}": r[f"ddm_w1_{k}"] for k in ("mean", "sd", "ci_low", "ci_high")},
                "ddm_floor": outside + (1 - outside) / (4 * max(m, 1)),
                **{f"ddm_tv_{k}": r[f"ddm_tv_{k}"] for k in ("mean", "ci_low", "ci_high")},
                **{f"max_gap_{k}": r[f"max_gap_{k}"] for k in ("mean", "sd", "ci_low", "ci_high")},
                **{f"max_gap_rel_{k}": r[f"max_gap_{k}"] / (hi - lo) for k in ("mean", "ci_low", "ci_high")},
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
                "verdict": verdict(result),
                "approximate": result.approximate,
                "converged": (not result.approximate) and result.diagnostics.ok,
                "max_rhat": result.diagnostics.max_rhat,
                "min_ess_bulk": result.diagnostics.min_ess_bulk,
                "divergences": result.diagnostics.divergences,
                "subsample": subsample_note(record),
                "ci_prob": CI_PROB,
                "bins": BINS,
            }
        )
    return rows


bench_rows, bin_rows, pop_records, shapes = [], [], [], {}
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
        report = audit(result, data, bins=BINS, ci_prob=CI_PROB, max_draws=400 if S.fast else 1000, progress=False)
    bench_rows.extend(table_rows(pop, report, data, record, result, loaded))
    bins = report.bins.loc[report.bins["scope_kind"].isin(["benchmark", "all"])].copy()
    bins.insert(0, "population", pop.name)
    bin_rows.append(bins)
    items = result.items_table()[["item", "benchmark", "difficulty_mean"]]
    shapes[pop.name] = {
        "difficulty": items,
        "ability": result.subjects_table()["ability_mean"].to_numpy(),
        "range": (report.target.lo, report.target.hi),
        "verdict": verdict(result),
        "sampler": fit_label(result),
    }
    if pop.name == "mmlu_pro":
        ax = report.plot_coverage(scope_kind="benchmark")
        ax.set_title(f"MMLU-Pro's 14 categories over the difficulty bins ({fit_label(result)})")
        ax.figure.savefig(S.figures / "mmlu_pro_coverage.png", dpi=80 if S.fast else 130, bbox_inches="tight")
        show(S.figures / "mmlu_pro_coverage.png")
        plt.close(ax.figure)
    record.update(
        sampler=result.sampler,
        model=result.spec.kind,
        verdict=verdict(result),
        diagnostics_ok=result.diagnostics.ok,
        max_rhat=result.diagnostics.max_rhat,
        min_ess_bulk=result.diagnostics.min_ess_bulk,
        divergences=result.diagnostics.divergences,
        approximate=result.approximate,
        range=[report.target.lo, report.target.hi],
        fit_reused=loaded,
        seconds={row["step"].split(": ")[1]: row["seconds"] for row in timer.rows if row["step"].startswith(pop.name)},
    )
    pop_records.append(record)
    print(f"target range [{report.target.lo:g}, {report.target.hi:g}] ({report.settings['range_rule']})")

# %% [markdown]
# ## The results table
#
# First how each population's fit went, then one row per (population, benchmark), with MMLU-Pro's categories as
# sub-benchmark rows. Written to `<out>/benchmark_audit.csv`; the per-bin coverage of every benchmark goes to
# `<out>/benchmark_bins.csv`.

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
            "verdict": p["verdict"],
        }
        for p in pop_records
    ]
)
with pd.option_context("display.width", 200, "display.precision", 3):
    print(convergence.to_string(index=False))
# population:benchmark, or the benchmark's own name when it is the population's name; then /sub-benchmark
name = results["benchmark"].where(
    results["population"] == results["benchmark"], results["population"] + ":" + results["benchmark"]
)
results.insert(0, "label", name + np.where(results["sub_benchmark"] != "", "/" + results["sub_benchmark"], ""))
results.insert(1, "label_domain", results["label"] + " · " + results["domain"])
results.to_csv(S.out / "benchmark_audit.csv", index=False)
all_bins = pd.concat(bin_rows, ignore_index=True)
all_bins.to_csv(S.out / "benchmark_bins.csv", index=False)
write_json(S.out / "populations.json", {"settings": settings_record(S), "populations": pop_records})
shown = pd.DataFrame(
    {
        "benchmark": results["label"],
        "domain": results["domain"],
        "items": results["items"].astype(str) + "/" + results["items_benchmark"].astype(str),
        "subjects": results["subjects"],
        "DDM": [ci(r.ddm_mean, r.ddm_ci_low, r.ddm_ci_high) for r in results.itertuples()],
        "max gap (share of range)": [
            ci(r.max_gap_rel_mean, r.max_gap_rel_ci_low, r.max_gap_rel_ci_high) for r in results.itertuples()
        ],
        "gap at (logits)": [f"[{r.gap_lo:.2f}, {r.gap_hi:.2f}]" for r in results.itertuples()],
        "below/above": [f"{r.mass_below_mean:.0%}/{r.mass_above_mean:.0%}" for r in results.itertuples()],
        "fit": results["verdict"],
    }
)
with pd.option_context("display.width", 240, "display.max_rows", 200):
    print(shown.to_string(index=False))
print("wrote", S.out / "benchmark_audit.csv")

# %% [markdown]
# ## Counting honestly
#
# Distinct benchmarks (a benchmark taken by two populations counts once; sub-benchmarks do not count) and the
# domains they cover. A benchmark's domain is the registry's label of its items (MMLU-Pro, whose categories carry
# MMLU's four groups, is "knowledge").

# %%
benchmarks_only = results.loc[results["level"] == "benchmark"]
distinct = benchmarks_only.groupby("benchmark").agg(
    domain=("domain", "first"), populations=("population", lambda s: ", ".join(sorted(set(s))))
)
n_b, n_d = len(distinct), distinct["domain"].nunique()
n_sub = int((results["level"] == "sub-benchmark").sum())
n_pop = results["population"].nunique()
print(
    f"{n_b} distinct benchmarks in {n_d} domains, audited in {n_pop} populations ({len(benchmarks_only)} "
    f"(population, benchmark) rows), plus {n_sub} sub-benchmarks (MMLU-Pro's categories)."
)
by_verdict = benchmarks_only["verdict"].value_counts()
print("rows by fit verdict:", ", ".join(f"{k} {v}" for k, v in by_verdict.items()))
print(distinct.groupby("domain").size().sort_values(ascending=False).to_string())
twice = distinct.loc[distinct["populations"].str.contains(",")]
print(f"taken by two populations: {', '.join(twice.index)}")
partial = benchmarks_only.loc[benchmarks_only["item_set"] != "all items"]
for r in partial.itertuples():
    print(f"  {r.label}: {r.items} of {r.items_benchmark} items ({r.item_set})")

# %% [markdown]
# ## What the table says
#
# Generated from the numbers above. "Credibly" means the 90% interval excludes the value compared with; where
# intervals overlap we say the data cannot order the benchmarks. Orderings use the benchmark rows (not the
# sub-benchmarks) and name each row's fit verdict.

# %%
per_domain = benchmarks_only.groupby("domain").agg(
    benchmarks=("benchmark", "nunique"),
    populations=("population", "nunique"),
    median_ddm=("ddm_mean", "median"),
    median_gap_share=("max_gap_rel_mean", "median"),
)
with pd.option_context("display.precision", 3):
    print(per_domain.sort_values("median_ddm", ascending=False).to_string())
not_conv = sorted(results.loc[results["verdict"] == "NOT CONVERGED", "population"].unique())
if not_conv:
    print(f"The NUTS fits of {', '.join(not_conv)} did not pass every convergence check: their rows say so.")
n_approx = int(benchmarks_only["approximate"].sum())
if n_approx:
    pops = sorted(benchmarks_only.loc[benchmarks_only["approximate"], "population"].unique())
    print(f"{n_approx} benchmark rows come from the approximate tier ({', '.join(pops)}).")


def ordering_sentence(frame: pd.DataFrame, prefix: str, what: str, k: int = 5) -> None:
    top = frame.sort_values(f"{prefix}_mean", ascending=False).head(k)
    print(f"Largest {what}:")
    for r in top.itertuples():
        value = ci(getattr(r, prefix + "_mean"), getattr(r, prefix + "_ci_low"), getattr(r, prefix + "_ci_high"))
        print(f"  {r.label} ({r.domain}; {r.verdict}): {value}")
    first, second = top.iloc[0], top.iloc[1]
    if first[f"{prefix}_ci_low"] > second[f"{prefix}_ci_high"]:
        print(f"  {first['label']}'s {what} is credibly larger than every other benchmark's.")
    else:
        tied = top.loc[top[f"{prefix}_ci_high"] >= first[f"{prefix}_ci_low"], "label"].tolist()
        print(f"  The intervals of {', '.join(tied)} overlap with the largest: the data cannot order them.")


ordering_sentence(benchmarks_only, "ddm", "DDM")
ordering_sentence(benchmarks_only, "max_gap_rel", "Maximum Gap (share of the range)")
wide = benchmarks_only.loc[benchmarks_only["max_gap_rel_ci_low"] > benchmarks_only["gap_rel_uniform_ref"]]
print(
    f"{len(wide)} of {len(benchmarks_only)} benchmark rows have a widest gap credibly wider than expected if their "
    "in-range items were spread uniformly at random over the range (the 90% interval lies above the reference)"
    + (f": {', '.join(wide.sort_values('max_gap_rel_mean', ascending=False)['label'].head(10))}" if len(wide) else ".")
)
for r in benchmarks_only.sort_values("max_gap_rel_ci_low", ascending=False).head(3).itertuples():
    print(
        f"{r.label} ({r.verdict}): widest gap {ci(r.max_gap_mean, r.max_gap_ci_low, r.max_gap_ci_high)} logits, on "
        f"average at [{r.gap_lo:.2f}, {r.gap_hi:.2f}]; it falls in bin [{r.gap_modal_bin_lo:.2f}, "
        f"{r.gap_modal_bin_hi:.2f}) in {r.gap_p_modal_bin:.0%} of draws. {r.mass_below_mean:.0%} of its items lie "
        f"below the range and {r.mass_above_mean:.0%} above."
    )
saturated = benchmarks_only.loc[benchmarks_only["mass_below_mean"] >= 0.5]
print(
    f"{len(saturated)} benchmark rows have half or more of their items below the population's ability range "
    f"(too easy to tell these systems apart): "
    + ", ".join(f"{r.label} {r.mass_below_mean:.0%}" for r in saturated.itertuples())
)
low = benchmarks_only.loc[benchmarks_only["ddm_ci_high"] < 0.1]
print(f"{len(low)} of {len(benchmarks_only)} benchmark rows have DDM credibly below 0.1.")

# %% [markdown]
# ## Figures
#
# One colour (and marker) per domain across every figure, from the sorted list of all domains. A row whose fit is
# not `converged` carries a mark in its label: `≈` approximate tier, `†` NUTS that failed its checks.
#
# **Each benchmark's difficulty distribution beside the systems' abilities** (the paper's central picture), per
# population: violins of the items' posterior mean difficulties per benchmark, the systems' posterior mean
# abilities on top, the target range shaded.

# %%
dpi = 80 if S.fast else 130
colours, markers = domain_palette(results["domain"])
fig = plot_difficulty_vs_ability(shapes, results, colours)
fig.savefig(S.figures / "difficulty_vs_ability.png", dpi=dpi, bbox_inches="tight")
show(S.figures / "difficulty_vs_ability.png")
plt.close(fig)
print("wrote", S.figures / "difficulty_vs_ability.png")

# %% [markdown]
# **DDM and Maximum Gap per population** (forest plots, 90% intervals; sub-benchmarks indented under their
# benchmark's population). The Maximum Gap is shown as a share of each population's range, with the expected
# widest gap of as many items spread at random (|).

# %%
fig = plot_forests(
    results, "ddm", "DDM = share outside + share inside x W1(inside, uniform) / (U - L)", colours, markers
)
fig.savefig(S.figures / "forest_ddm.png", dpi=dpi, bbox_inches="tight")
show(S.figures / "forest_ddm.png")
plt.close(fig)
fig = plot_forests(results, "max_gap_rel", "widest gap / (U - L)", colours, markers, reference="gap_rel_uniform_ref")
fig.savefig(S.figures / "forest_max_gap.png", dpi=dpi, bbox_inches="tight")
show(S.figures / "forest_max_gap.png")
plt.close(fig)
print("wrote", S.figures / "forest_ddm.png", "and", S.figures / "forest_max_gap.png")

# %% [markdown]
# **Coverage with the out-of-range shares.** Rows are benchmarks, columns the share of items below the range, in
# each of the 10 bins of the population's range, and above it; x = the bin is empty with probability >= 0.8.

# %%
fig = plot_coverage_with_outside(results, all_bins, colours)
fig.savefig(S.figures / "coverage_heatmap.png", dpi=dpi, bbox_inches="tight")
show(S.figures / "coverage_heatmap.png")
plt.close(fig)
print("wrote", S.figures / "coverage_heatmap.png")

# %% [markdown]
# **A benchmark in two populations.** The same benchmark read by two populations of systems: its measures are
# relative to each population's ability range, so a benchmark can be well matched to one population and saturated
# for another.

# %%
pairs = benchmarks_only.loc[benchmarks_only["benchmark"].isin(twice.index)].sort_values(["benchmark", "population"])
side = pairs[["benchmark", "population", "items", "items_benchmark", "verdict"]].copy()
side["DDM"] = [ci(r.ddm_mean, r.ddm_ci_low, r.ddm_ci_high) for r in pairs.itertuples()]
side["gap share"] = [ci(r.max_gap_rel_mean, r.max_gap_rel_ci_low, r.max_gap_rel_ci_high) for r in pairs.itertuples()]
side["below/above"] = [f"{r.mass_below_mean:.0%}/{r.mass_above_mean:.0%}" for r in pairs.itertuples()]
print(side.to_string(index=False))
side.to_csv(S.out / "benchmarks_in_two_populations.csv", index=False)
if len(pairs):
    fig = plot_side_by_side(pairs, colours)
    fig.savefig(S.figures / "benchmarks_in_two_populations.png", dpi=dpi, bbox_inches="tight")
    show(S.figures / "benchmarks_in_two_populations.png")
    plt.close(fig)

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
