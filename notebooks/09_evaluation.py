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
# # 9. Evaluating the next system on a few items
#
# An audit says what a benchmark measures; the next thing its users do is evaluate a new system, and full
# benchmarks are expensive. irtbayes uses the fitted bank for that, with an interval on every score:
#
# 1. `select_items`: the K items per benchmark that make a new system's full-benchmark accuracy most precise in
#    expectation over the systems the bank was fitted to;
# 2. `predict_scores`: the system's accuracy over *every* item of each benchmark from the items it answered, the
#    others predicted from the posterior (its ability and the items' uncertainty integrated out, the unanswered
#    items' own Bernoulli spread included);
# 3. `AdaptiveTest`: items chosen one at a time, each the one that most reduces the posterior variance of the
#    scores, stopping at a precision or a budget.
#
# Part 1 shows the three on a simulated leaderboard whose truth is known. Part 2 reads the side-by-side study of
# `scripts/evaluation_study.py` (real data: the Open LLM Leaderboard's tinyBenchmarks items and MMLU-Pro; and
# simulations), which compares them with random subsets and with tinyBenchmarks' anchors and p-IRT (Polo et al.
# 2024) on held-out systems. In fast mode part 2 runs a tiny study of its own instead.

# %% tags=["parameters"]
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import RESULTS, Timer, settings, show, versions

from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.adaptive import AdaptiveTest
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.prediction import predict_from_arrays
from irtbayes.evaluating.selection import select_items
from irtbayes.evaluating.study import compare_methods, split_subjects
from irtbayes.fitting.result import Fit

S = settings()
timer = Timer()
SYSTEMS, ITEMS, BENCHMARKS = (120, 240, 3) if S.fast else (800, 1200, 4)
K = 10  # items per benchmark in part 1
print(S.describe())

# %% [markdown]
# ## Part 1: a simulated leaderboard
#
# A 2PL leaderboard with a known truth. The bank is a posterior scattered around the true item parameters of
# the training systems (no sampling here: part 2 fits real banks), and a quarter of the systems are held out
# as the "new" systems.

# %%
with timer("simulate and build the bank"):
    data, truth = simulate_responses(SYSTEMS, ITEMS, n_benchmarks=BENCHMARKS, missing=0.0, seed=S.seed)
    train, test = split_subjects(list(data.subject_ids), "random", seed=S.seed)
    training = data.subset(subjects=train)
    keep = [list(data.subject_ids).index(s) for s in train]
    bank_fit = Fit.from_posterior(
        posterior_near_truth(training, truth.isel(subject=keep), chains=2, draws=100, seed=S.seed), training
    )
    bank = ItemBank.from_fit(bank_fit, n_draws=100 if S.fast else 200, data=training)
    held = data.subset(subjects=test)
    y, w = bank.response_arrays(held)
print(f"{len(train)} training systems, {len(test)} held out; {bank.n_items} items in {len(bank.benchmarks)} benchmarks")

# %% [markdown]
# ### Selection: which K items per benchmark?

# %%
with timer("select"):
    chosen = select_items(bank, per_benchmark=K)
    random_pick = select_items(bank, per_benchmark=K, method="random", seed=S.seed)
    anchors = select_items(bank, per_benchmark=K, method="anchors", seed=S.seed)
precision = chosen.summary()[["benchmark", "items_selected", "items_total", "expected_error"]].rename(
    columns={"expected_error": "posterior"}
)
precision["random"] = random_pick.summary()["expected_error"].to_numpy()
precision["anchors"] = anchors.summary()["expected_error"].to_numpy()
print("Expected error (root mean square, over the training systems' abilities) of each benchmark's accuracy:")
print(precision.round(4).to_string(index=False))

# %% [markdown]
# ### Scores of the held-out systems from those items

# %%
with timer("predict"):
    mask = w * np.isin(bank.items, chosen.item_ids)[None, :]
    scores = predict_from_arrays(bank, y, mask, held.subject_ids.to_numpy(dtype=str), seed=S.seed)
table = scores.table()
true_acc = pd.DataFrame(y, columns=bank.items).T.groupby(bank.benchmark).mean().T
true_acc["all"] = y.mean(axis=1)
table["truth"] = [
    true_acc.loc[j, b]
    for j, b in zip(np.repeat(np.arange(len(test)), len(scores.scopes)), table["benchmark"], strict=True)
]
table["covered"] = (table["truth"] >= table["accuracy_ci_low"]) & (table["truth"] <= table["accuracy_ci_high"])
part1 = table.groupby("benchmark", sort=False).agg(
    mae=("accuracy_mean", lambda m: float(np.abs(m - table.loc[m.index, "truth"]).mean())),
    coverage=("covered", "mean"),
    width=("accuracy_ci_high", lambda h: float((h - table.loc[h.index, "accuracy_ci_low"]).mean())),
)
print(f"{K} items per benchmark (posterior selection), {len(test)} held-out systems, 90% intervals:")
print(part1.round(3).to_string())
ax = scores.plot_accuracy()
ax.figure.savefig(S.figures / "evaluation_predicted_accuracy.png", dpi=120, bbox_inches="tight")
plt.close(ax.figure)

# %% [markdown]
# ### An adaptive test of one held-out system
#
# The test is for every benchmark's accuracy; it stops once each has a posterior sd of at most 0.03, or after
# 60 items.

# %%
with timer("adaptive test"):
    j = int(np.argsort(y.mean(axis=1))[len(test) // 2])  # a system in the middle of the held-out ones
    test_ = AdaptiveTest(bank, max_items=60, se=0.03, seed=S.seed)
    result = test_.run(lambda item: float(y[j, bank.columns([item])[0]]), subject=str(held.subject_ids[j]))
print(result.to_text())
ax = result.plot_trace(truth=float(y[j].mean()))
ax.figure.savefig(S.figures / "evaluation_adaptive_trace.png", dpi=120, bbox_inches="tight")
plt.close(ax.figure)
show(S.figures / "evaluation_adaptive_trace.png")

# %% [markdown]
# ## Part 2: the study side by side
#
# `scripts/evaluation_study.py` holds out a random quarter of the systems and, separately, the last quarter in
# the data's order, fits the bank to the rest, and scores the held-out systems at K = 10, 30 and 100 items per
# benchmark with each method. In fast mode a tiny version runs here on the simulated leaderboard above.

# %%
study_csv = RESULTS / "evaluation_study.csv"
if S.fast or not study_csv.is_file():
    with timer("a tiny study"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        study = compare_methods(bank, y, w, held.subject_ids, ks=(5, 10), adaptive_systems=5, seed=S.seed)
    study.insert(0, "dataset", "simulated (this notebook)")
    study.insert(1, "split", "random")
    study.to_csv(S.out / "evaluation_study_fast.csv", index=False)
else:
    study = pd.read_csv(study_csv)
per_bench = study[study["benchmark"] != "all"]
summary = (
    per_bench.groupby(["dataset", "method", "k"], sort=False)
    .agg(
        items=("items", "mean"),
        mae=("mae", "mean"),
        coverage=("coverage", "mean"),
        width=("width", "mean"),
        spearman=("spearman", "mean"),
    )
    .reset_index()
)
with pd.option_context("display.width", 160, "display.max_rows", 200):
    print("Mean over benchmarks and splits of each benchmark's MAE, 90% coverage, width and rank correlation:")
    print(summary.round(4).to_string(index=False))

# %%
best_static = summary[summary["method"].isin(["posterior", "random+posterior", "random+mean", "anchors+pirt"])]
for (dataset, k), rows in summary.groupby(["dataset", "k"], sort=False):
    by = rows.set_index("method")
    line = f"{dataset}, K={k}: posterior MAE {by.loc['posterior', 'mae']:.4f}"
    if "random+mean" in by.index:
        line += f" vs random+mean {by.loc['random+mean', 'mae']:.4f}"
    if "anchors+pirt" in by.index:
        line += f" vs anchors+p-IRT {by.loc['anchors+pirt', 'mae']:.4f}"
    if "adaptive/2" in by.index:
        line += f"; adaptive with half the items {by.loc['adaptive/2', 'mae']:.4f}"
    print(line)
figure = RESULTS / "figures" / "evaluation_study.png"
if not S.fast and figure.is_file():
    show(figure)

# %%
print(timer.table().to_string(index=False))
print(versions())
