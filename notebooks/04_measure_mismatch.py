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
# # 4. Measure mismatch: what re-weighting to an intended target does to a leaderboard
#
# A benchmark score averages over the benchmark's items, so it weights difficulty regions by how many items
# happen to sit there. The target distribution should instead come from the decision at hand. Here the
# decision is **"which of the strongest systems is best?"**, so the target is the ability distribution of the
# frontier systems (the `group=` target: the pooled posterior abilities of the top 20% of systems by posterior
# mean ability, at least 3). It is compared with the default uniform target over the population's ability range.
#
# For MMLU-Pro (29 LLMs) and the Open LLM Leaderboard population, using the fits saved by notebook 3 (or fitting
# them now, with the same data and settings, when they are missing):
#
# 1. the raw leaderboard (accuracy over all items) beside the re-weighted leaderboards (each item weighted so
#    that the benchmark's difficulty distribution matches the target), with rank intervals;
# 2. how sensitive the conclusions are to the target (uniform vs frontier) and to the number of bins (5, 10, 20):
#    the DDM of each benchmark, the top system, and the agreement of the re-weighted ranking with the raw one.
#
# Caveat stated up front: choosing the frontier from the same data that is then re-weighted is a convenience
# of this demonstration; in practice the group is named by the decision-maker (the systems they are choosing
# between).

# %% tags=["parameters"]
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
    load_population,
    settings,
    short_summary,
    show,
    subsample_note,
    versions,
)
from scipy.stats import kendalltau, spearmanr

from irtbayes.auditing.run import audit
from irtbayes.core.plots import OKABE_ITO, plot_leaderboard, shorten

S = settings()
timer = Timer()
POPULATIONS = ("mmlu_pro", "openllm")
BIN_COUNTS = (5, 10, 20)
FRONTIER_SHARE = 0.2
SHOW = 15  # leaderboard rows printed
MAX_DRAWS = 300 if S.fast else 1000
print(S.describe())


# %%
def run_audit(result, data, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return audit(result, data, ci_prob=0.9, max_draws=MAX_DRAWS, information_draws=20, **kwargs)


def frontier_of(result, share: float = FRONTIER_SHARE) -> list[str]:
    subjects = result.subjects_table().sort_values("ability_mean", ascending=False)
    k = max(3, round(share * len(subjects)))
    return subjects["subject"].head(k).astype(str).tolist()


def board(report, name: str) -> pd.DataFrame:
    """The all-items leaderboard of one audit, with columns suffixed by the setting's name."""
    r = report.ranking.loc[report.ranking["scope_kind"] == "all"].set_index("subject")
    cols = ["reweighted_mean", "reweighted_ci_low", "reweighted_ci_high", "rank_mean", "rank_ci_low", "rank_ci_high"]
    return r[cols].add_suffix(f"_{name}")


# %% [markdown]
# ## Leaderboards and sensitivity, one population at a time

# %%
sensitivity_rows, ddm_rows, boards, verdicts = [], [], {}, {}
for pop_name in POPULATIONS:
    with timer(f"{pop_name}: data and fit"):
        data, record = load_population(pop_name, S)
        result, loaded = fit_or_load(pop_name, data, S)
    print(
        f"\n=== {pop_name}: {data.n_subjects} subjects x {data.n_items} items ({subsample_note(record)}); "
        + ("reused the saved fit" if loaded else "fitted now")
    )
    print(short_summary(result))
    frontier = frontier_of(result)
    print(
        f"frontier ({len(frontier)} systems, top {FRONTIER_SHARE:.0%} by posterior mean ability): "
        + ", ".join(frontier)
    )
    reports = {}
    with timer(f"{pop_name}: audits"):
        for bins in BIN_COUNTS:
            reports[("uniform", bins)] = run_audit(result, data, bins=bins)
            reports[("frontier", bins)] = run_audit(result, data, bins=bins, group=frontier)
    # ---- the leaderboard under the 10-bin targets
    base = reports[("uniform", 10)].ranking.loc[lambda t: t["scope_kind"] == "all"].set_index("subject")
    lb = base[["raw_accuracy", "raw_rank", "ability_mean"]].join(board(reports[("uniform", 10)], "uniform"))
    lb = lb.join(board(reports[("frontier", 10)], "frontier"))
    lb["group_frontier"] = (
        reports[("frontier", 10)].ranking.loc[lambda t: t["scope_kind"] == "all"].set_index("subject")["group"]
    )
    lb = lb.sort_values("rank_mean_frontier")
    lb.to_csv(S.out / f"leaderboard_{pop_name}.csv")
    boards[pop_name] = (lb, reports, frontier)
    verdicts[pop_name] = fit_label(result)
    shown = pd.DataFrame(
        {
            "system": [shorten(s, 34) for s in lb.index],
            "raw acc (rank)": [f"{a:.3f} ({int(k)})" for a, k in zip(lb["raw_accuracy"], lb["raw_rank"], strict=True)],
            "uniform: acc": [
                ci(*r) for r in lb[[f"reweighted_{c}_uniform" for c in ("mean", "ci_low", "ci_high")]].to_numpy()
            ],
            "rank": [
                f"{m:.1f} [{lo:.0f}, {hi:.0f}]"
                for m, lo, hi in lb[["rank_mean_uniform", "rank_ci_low_uniform", "rank_ci_high_uniform"]].to_numpy()
            ],
            "frontier: acc": [
                ci(*r) for r in lb[[f"reweighted_{c}_frontier" for c in ("mean", "ci_low", "ci_high")]].to_numpy()
            ],
            "rank ": [
                f"{m:.1f} [{lo:.0f}, {hi:.0f}]"
                for m, lo, hi in lb[["rank_mean_frontier", "rank_ci_low_frontier", "rank_ci_high_frontier"]].to_numpy()
            ],
        }
    )
    with pd.option_context("display.width", 220):
        print(shown.head(SHOW).to_string(index=False))
    # ---- sensitivity over targets and bins
    raw_rank = base["raw_rank"]
    for (kind, bins), rep in reports.items():
        r = rep.ranking.loc[rep.ranking["scope_kind"] == "all"].set_index("subject").reindex(raw_rank.index)
        top = r["rank_mean"].idxmin()
        b = rep.benchmarks
        allrow = b.loc[b["scope_kind"] == "all"].iloc[0]
        moved = int(((r["rank_ci_low"] > raw_rank) | (r["rank_ci_high"] < raw_rank)).sum())
        sensitivity_rows.append(
            {
                "population": pop_name,
                "target": kind,
                "bins": bins,
                "ddm_all_mean": allrow["ddm_w1_mean"],
                "ddm_all_ci_low": allrow["ddm_w1_ci_low"],
                "ddm_all_ci_high": allrow["ddm_w1_ci_high"],
                "unrepresented_mean": allrow["unrepresented_mean"],
                "top_system": top,
                "top_system_rank_ci": f"[{r.loc[top, 'rank_ci_low']:.0f}, {r.loc[top, 'rank_ci_high']:.0f}]",
                "kendall_tau_vs_raw": kendalltau(r["rank_mean"], raw_rank).statistic,
                "rank_interval_excludes_raw_rank": moved,
                "n_subjects": len(r),
            }
        )
        for _, row in b.loc[b["scope_kind"] == "benchmark"].iterrows():
            ddm_rows.append(
                {
                    "population": pop_name,
                    "benchmark": row["scope"],
                    "target": kind,
                    "bins": bins,
                    "ddm_mean": row["ddm_w1_mean"],
                    "ddm_ci_low": row["ddm_w1_ci_low"],
                    "ddm_ci_high": row["ddm_w1_ci_high"],
                    "ddm_tv_mean": row["ddm_tv_mean"],
                    "ddm_tv_ci_low": row["ddm_tv_ci_low"],
                    "ddm_tv_ci_high": row["ddm_tv_ci_high"],
                }
            )
sens = pd.DataFrame(sensitivity_rows)
ddm = pd.DataFrame(ddm_rows)
sens.to_csv(S.out / "sensitivity_leaderboard.csv", index=False)
ddm.to_csv(S.out / "sensitivity_ddm.csv", index=False)
with pd.option_context("display.width", 220, "display.precision", 3):
    print(sens.to_string(index=False))

# %% [markdown]
# ## What the leaderboards say
#
# Generated from the tables above. A rank interval is the 90% interval of a system's rank over posterior draws
# (with a Bayesian bootstrap over items); two systems whose intervals overlap cannot be ordered by this data.

# %%
for pop_name, (lb, _, _) in boards.items():
    raw_top = lb["raw_rank"].idxmin()
    for kind in ("uniform", "frontier"):
        order = lb.sort_values(f"rank_mean_{kind}")
        top = order.index[0]
        t_lo, t_hi = order.loc[top, f"rank_ci_low_{kind}"], order.loc[top, f"rank_ci_high_{kind}"]
        rivals = order.iloc[1:].loc[lambda f, k=kind, h=t_hi: f[f"rank_ci_low_{k}"] <= h].index
        sep = (
            f"and its rank interval [{t_lo:.0f}, {t_hi:.0f}] lies above every other system's, so it is credibly first"
            if len(rivals) == 0
            else f"but its rank interval [{t_lo:.0f}, {t_hi:.0f}] overlaps those of {len(rivals)} other system(s) "
            f"({', '.join(rivals[:3])}{' ...' if len(rivals) > 3 else ''}): the data cannot say which is first"
        )
        same = "the same system as" if top == raw_top else "unlike"
        print(f"{pop_name}, {kind} target: {top} leads ({same} the raw leader {raw_top}), {sep}.")
    n = len(lb)
    top_k = max(3, round(FRONTIER_SHARE * n))
    raw_set = set(lb.sort_values("raw_rank").index[:top_k])
    fr_set = set(lb.sort_values("rank_mean_frontier").index[:top_k])
    print(
        f"{pop_name}: {len(raw_set & fr_set)} of the raw top {top_k} stay in the top {top_k} under the frontier target"
        + (
            f"; leaving: {', '.join(sorted(raw_set - fr_set)[:5])}{' ...' if len(raw_set - fr_set) > 5 else ''}"
            if raw_set - fr_set
            else ""
        )
        + "."
    )
    rho = spearmanr(lb["rank_mean_uniform"], lb["rank_mean_frontier"]).statistic
    print(f"{pop_name}: Spearman correlation of the uniform and frontier re-weighted rankings: {rho:.3f}.")

# %% [markdown]
# ## How much the conclusions depend on the target and the number of bins

# %%
for pop_name in POPULATIONS:
    s = sens.loc[sens["population"] == pop_name]
    tops = s["top_system"].value_counts()
    print(
        f"{pop_name}: the top system is {tops.index[0]} in {tops.iloc[0]} of {len(s)} settings"
        + (f" (others: {', '.join(f'{k} in {v}' for k, v in tops.iloc[1:].items())})" if len(tops) > 1 else "")
        + f"; Kendall's tau between re-weighted and raw ranks ranges {s['kendall_tau_vs_raw'].min():.2f}-"
        f"{s['kendall_tau_vs_raw'].max():.2f}; the number of systems whose rank interval excludes their raw rank "
        f"ranges {s['rank_interval_excludes_raw_rank'].min()}-{s['rank_interval_excludes_raw_rank'].max()} of "
        f"{s['n_subjects'].iloc[0]}."
    )
    d = ddm.loc[ddm["population"] == pop_name]
    for kind in ("uniform", "frontier"):
        dk = d.loc[d["target"] == kind]
        w1 = dk.pivot(index="benchmark", columns="bins", values="ddm_mean")
        w1_spread = float((w1.max(axis=1) - w1.min(axis=1)).max())
        # the headline DDM (W1) compares items with the target's density, which the bins only discretise: against
        # the uniform target it is the same at every bin count by construction. The binned DDM (total variation
        # over the bins and the two outside bins) is the one the number of bins can move.
        w = dk.pivot(index="benchmark", columns="bins", values="ddm_tv_mean")
        spread = (w.max(axis=1) - w.min(axis=1)).max()
        sd_typ = dk["ddm_tv_ci_high"].sub(dk["ddm_tv_ci_low"]).median()
        worst = w.mean(axis=1).idxmax()
        unrep = sens.loc[(sens["population"] == pop_name) & (sens["target"] == kind)].set_index("bins")
        matters = (
            "so the number of bins hardly matters for it"
            if spread < 0.5 * sd_typ
            else "so the number of bins matters for it"
        )
        print(
            f"  {kind} target: the headline DDM (W1) changes by at most {w1_spread:.3f} between "
            f"{', '.join(map(str, BIN_COUNTS))} bins"
            + (" (the uniform target is the same at every bin count)" if kind == "uniform" else "")
            + f"; the binned DDM (total variation) changes by at most {spread:.3f}, against a typical 90% interval "
            f"width of {sd_typ:.3f}, {matters}; the largest binned DDM is {worst}'s in "
            f"{int((w.idxmax(axis=0) == worst).sum())} of {len(BIN_COUNTS)} bin counts. The share of the target's "
            f"mass in bins without any item (which re-weighting cannot represent) is "
            + ", ".join(f"{unrep.loc[k, 'unrepresented_mean']:.1%} with {k} bins" for k in BIN_COUNTS)
            + "."
        )
    u = d.loc[(d["target"] == "uniform") & (d["bins"] == 10)].set_index("benchmark")
    f = d.loc[(d["target"] == "frontier") & (d["bins"] == 10)].set_index("benchmark").reindex(u.index)
    change = (f["ddm_mean"] - u["ddm_mean"]).sort_values()
    credible = [
        b
        for b in u.index
        if f.loc[b, "ddm_ci_low"] > u.loc[b, "ddm_ci_high"] or f.loc[b, "ddm_ci_high"] < u.loc[b, "ddm_ci_low"]
    ]
    print(
        f"  uniform -> frontier (10 bins): the change in a benchmark's DDM ranges from {change.iloc[0]:+.3f} "
        f"({change.index[0]}) to {change.iloc[-1]:+.3f} ({change.index[-1]}); for {len(credible)} of {len(u)} benchmarks the two intervals do "
        "not overlap"
        + (f" ({', '.join(credible[:8])}{' ...' if len(credible) > 8 else ''})" if credible else "")
        + ("; for the others the data cannot tell the two targets' mismatch apart." if len(credible) < len(u) else ".")
    )
    rho = spearmanr(u["ddm_mean"], f["ddm_mean"]).statistic
    print(f"  the ordering of benchmarks by DDM under the two targets has Spearman correlation {rho:.2f}.")

# %% [markdown]
# ## Figures

# %%
dpi = 80 if S.fast else 130
for pop_name, (lb, _, _) in boards.items():
    top = lb.head(SHOW if pop_name != "mmlu_pro" else len(lb)).reset_index()
    ax = plot_leaderboard(
        top,
        columns={
            "raw accuracy": ("raw_rank", "raw_rank", "raw_rank"),
            "re-weighted, uniform": ("rank_mean_uniform", "rank_ci_low_uniform", "rank_ci_high_uniform"),
            "re-weighted, frontier": ("rank_mean_frontier", "rank_ci_low_frontier", "rank_ci_high_frontier"),
        },
        sort_by="rank_mean_frontier",
    )
    ax.set_title(f"{pop_name}: ranks with 90% intervals (ordered by the frontier target); {verdicts[pop_name]}")
    ax.figure.savefig(S.figures / f"leaderboard_{pop_name}.png", dpi=dpi, bbox_inches="tight")
    show(S.figures / f"leaderboard_{pop_name}.png")
    plt.close(ax.figure)

fig, axes = plt.subplots(1, len(POPULATIONS), figsize=(11, 6), layout="constrained")
for ax, pop_name in zip(np.atleast_1d(axes), POPULATIONS, strict=True):
    d = ddm.loc[ddm["population"] == pop_name]
    names = list(d.loc[(d["target"] == "uniform") & (d["bins"] == 10)].sort_values("ddm_tv_mean")["benchmark"])
    y = {b: k for k, b in enumerate(names)}
    for j, ((kind, bins), rows) in enumerate(d.groupby(["target", "bins"], sort=False)):
        off = (j - 2.5) * 0.1
        yy = np.array([y[b] for b in rows["benchmark"]]) + off
        ax.hlines(yy, rows["ddm_tv_ci_low"], rows["ddm_tv_ci_high"], color=OKABE_ITO[j % 8], lw=1)
        ax.scatter(rows["ddm_tv_mean"], yy, s=10, color=OKABE_ITO[j % 8], label=f"{kind}, {bins} bins", zorder=3)
    ax.set_yticks(range(len(names)), [shorten(n, 22) for n in names], fontsize="small")
    ax.set_xlabel("binned DDM: total variation over the bins (90% interval)")
    ax.set_title(f"{pop_name} ({verdicts[pop_name]})")
    ax.grid(axis="x", alpha=0.3)
np.atleast_1d(axes)[-1].legend(fontsize="x-small", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
fig.savefig(S.figures / "sensitivity_ddm.png", dpi=dpi)
show(S.figures / "sensitivity_ddm.png")
plt.close(fig)
print("wrote leaderboard and sensitivity figures to", S.figures)

# %% [markdown]
# ## Timing and versions

# %%
print(timer.table().to_string(index=False))
print(versions())
