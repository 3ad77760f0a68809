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
# # 5. BenchFill: filling a real benchmark's widest gap
#
# BenchFill adds items aimed at a difficulty region a benchmark leaves empty, and keeps a candidate only when
# the posterior, after the evaluated systems have answered it, places it in the aim (the interval [lo, hi) the new
# items should fill, here the bin of the widest gap) with probability at least tau (0.8) and gives it a credibly
# positive discrimination. Every decision goes into a ledger.
#
# **What is real and what is simulated.** The benchmark, its fitted item bank, the systems and their abilities
# are real (the Open LLM Leaderboard population of notebook 3). The candidate items are not: a real run would
# obtain candidates from an item writer or an LLM and have *the systems themselves* answer them. Here each
# candidate is given a chosen true difficulty and discrimination, and the systems' responses to it are
# **simulated** from the 2PL model with each system's posterior mean ability as its true ability. That makes it
# possible to see the acceptance rule at work against a known truth: which candidates really lie in the bin,
# and which the rule accepts.
#
# **Why this population.** A candidate's difficulty is located only as precisely as the responses allow: with
# n responding systems its posterior sd shrinks roughly like 1/sqrt(n). The leaderboard population has by far
# the most systems, so its candidates can be located within one bin; the operating characteristic at the end
# shows how acceptance behaves as the number of systems shrinks.
#
# Steps: pick the benchmark with the widest credible gap and its modal bin; propose candidates in and around
# that bin; simulate the responses; calibrate the candidates against the fixed bank (fast path) and, in the full
# mode, by a full refit of the bank with the candidates (the reference); decide; record; audit before and after.

# %% tags=["parameters"]
import os
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
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
from scipy.special import expit

from irtbayes.auditing.run import audit
from irtbayes.benchfill.acceptance import (
    AcceptanceRule,
    decide_all,
    operating_characteristic,
    operating_characteristic_table,
)
from irtbayes.benchfill.calibration import calibrate_fixed, calibrate_full, candidate_response_data
from irtbayes.benchfill.ledger import Ledger, decision_records
from irtbayes.benchfill.sources import CallableSource, ProposalRequest
from irtbayes.core.plots import OKABE_ITO
from irtbayes.data.responses import ResponseData

S = settings()
timer = Timer()
POPULATION = "openllm"
TAU = 0.8
CI_PROB = 0.9
# the full refit costs a whole MCMC run of the population: on in the full mode, off in the fast mode
REFIT = os.environ.get("IRTBAYES_NB_BENCHFILL_REFIT", "0" if S.fast else "1").strip() not in ("0", "", "no")
print(S.describe())
print("full refit as reference:", "yes" if REFIT else "no (set IRTBAYES_NB_BENCHFILL_REFIT=1)")

# %% [markdown]
# ## The bank and its widest gap
#
# The benchmark is the one whose widest gap (10-bin audit) has the largest lower bound. The bin width for
# BenchFill is then chosen from how precisely a new item can be located: a candidate answered by all the systems,
# with the benchmark's typical discrimination a, has Fisher information I(b) = a^2 sum_j p_j (1 - p_j) about its
# difficulty at the gap's centre (p_j from each system's posterior mean ability), so its posterior sd is at least
# s = 1 / sqrt(I). An aim narrower than a few s cannot hold P(b in bin) >= tau even for a candidate aimed
# at its centre; we take the finest binning of the same range (at most 10 bins) whose bins are at least 6 s wide
# (the Fisher sd ignores the uncertainty of the candidate's discrimination and of the abilities, so real
# posteriors are wider). The operating characteristic at the end checks the choice.

# %%
with timer("data and fit"):
    data, record = load_population(POPULATION, S)
    bank, loaded = fit_or_load(POPULATION, data, S)
print(
    f"{POPULATION}: {data.n_subjects} systems x {data.n_items} items ({subsample_note(record)}); "
    + ("reused the saved fit" if loaded else "fitted now")
)
print(short_summary(bank))
with timer("audit before"), warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    first = audit(bank, data, bins=10, ci_prob=CI_PROB)
benches = first.benchmarks.loc[first.benchmarks["scope_kind"] == "benchmark"].sort_values(
    "max_gap_ci_low", ascending=False
)
BENCH = str(benches.iloc[0]["scope"])
RANGE = (first.target.lo, first.target.hi)
centre = 0.5 * (benches.iloc[0]["gap_lo"] + benches.iloc[0]["gap_hi"])
items_b = bank.items_table().set_index("item")
a_typ = float(items_b.loc[items_b["benchmark"] == BENCH, "discrimination_mean"].median())
theta = bank.subjects_table().set_index("subject")["ability_mean"]
p_c = expit(a_typ * (theta.to_numpy() - centre))
s_fisher = 1 / np.sqrt(a_typ**2 * np.sum(p_c * (1 - p_c)))
BINS = int(np.clip(np.floor((RANGE[1] - RANGE[0]) / (6 * s_fisher)), 3, 10))
print(
    f"{BENCH}: widest gap centred at {centre:.2f}; a candidate there with a = {a_typ:.2f}, answered by all "
    f"{data.n_subjects} systems, has Fisher sd {s_fisher:.3f}; bins of at least {6 * s_fisher:.2f} logits over "
    f"[{RANGE[0]:g}, {RANGE[1]:g}] give {BINS} bins of {(RANGE[1] - RANGE[0]) / BINS:.2f}."
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    before = audit(bank, data, bins=BINS, range=RANGE, ci_prob=CI_PROB)
edges = np.asarray(before.target.edges)
gap_row = before.benchmarks.loc[
    (before.benchmarks["scope_kind"] == "benchmark") & (before.benchmarks["scope"] == BENCH)
].iloc[0]
K = int(gap_row["gap_modal_bin"])
LO, HI = float(edges[K]), float(edges[K + 1])
DOMAIN = str(data.items.loc[data.items["benchmark"] == BENCH, "domain"].iloc[0])
print(
    f"Aim: {BENCH} ({DOMAIN}), whose widest gap {ci(gap_row['max_gap_mean'], gap_row['max_gap_ci_low'], gap_row['max_gap_ci_high'])} "
    f"logits ({BINS}-bin audit) lies on average at "
    f"[{gap_row['gap_lo']:.2f}, {gap_row['gap_hi']:.2f}] and in bin {K} = [{LO:.2f}, {HI:.2f}) in "
    f"{gap_row['gap_p_modal_bin']:.0%} of draws. That bin is the aim."
)
bins_b = before.bins.loc[(before.bins["scope_kind"] == "benchmark") & (before.bins["scope"] == BENCH)]
print(
    bins_b[
        ["bin", "lo", "hi", "count_mean", "count_ci_low", "count_ci_high", "p_empty", "p_widest_gap_here"]
    ].to_string(index=False)
)

# %% [markdown]
# ## Candidates with chosen true difficulties
#
# Twelve candidates, proposed through a `CallableSource` (the same interface an LLM source answers): five
# spread across the aim, two inside it with almost no discrimination (items that do not measure), one
# just below the bin and one further below, the same above, and one central candidate that only eight systems
# answer. Their true discrimination is the benchmark's median posterior discrimination.

# %%
w = HI - LO
design = [
    *[("inside", LO + f * w, a_typ, None) for f in (0.1, 0.3, 0.5, 0.7, 0.9)],
    ("inside, flat", LO + 0.4 * w, 0.1, None),
    ("inside, flat", LO + 0.6 * w, 0.1, None),
    ("just below", LO - 0.3 * w, a_typ, None),
    ("below", LO - 1.5 * w, a_typ, None),
    ("just above", HI + 0.3 * w, a_typ, None),
    ("above", HI + 1.5 * w, a_typ, None),
    ("inside, few answers", LO + 0.5 * w, a_typ, 8),
]
truth = {}


def propose(request: ProposalRequest):
    """Stand-in for an item writer: one record per designed candidate, with a placeholder text."""
    out = []
    for k, (kind, b, a, n_answer) in enumerate(design):
        cid = f"bf-sim-{k:02d}"
        truth[cid] = {"kind": kind, "true_difficulty": b, "true_discrimination": a, "n_answering": n_answer}
        out.append(
            {
                "candidate_id": cid,
                "text": f"[simulated {request.benchmark} candidate {k}: {kind}, aimed at b = {b:.2f}]",
                "answer": "(simulated)",
            }
        )
    return out


request = ProposalRequest(aim_lo=LO, aim_hi=HI, aim_bin=K, n=len(design), benchmark=BENCH, domain=DOMAIN)
candidates = CallableSource(propose, name="designed_candidates").propose(request)
design_table = pd.DataFrame.from_dict(truth, orient="index")
design_table["in_bin"] = (design_table["true_difficulty"] >= LO) & (design_table["true_difficulty"] < HI)
print(design_table.round(3).to_string())

# %% [markdown]
# ## Simulated responses
#
# Each system answers each candidate with probability sigmoid(a (theta - b)), theta = the system's posterior mean
# ability in the bank. (SIMULATED: the systems did not see these items.)

# %%
rng = np.random.default_rng(S.seed)
rows = []
for cid, t in truth.items():
    who = theta.index
    if t["n_answering"] is not None:
        who = pd.Index(rng.choice(theta.index.to_numpy(dtype=str), size=t["n_answering"], replace=False))
    p = expit(t["true_discrimination"] * (theta.loc[who].to_numpy() - t["true_difficulty"]))
    rows.append(pd.DataFrame({"subject": who, "item": cid, "response": (rng.random(len(who)) < p).astype(float)}))
responses = pd.concat(rows, ignore_index=True)
new_data = candidate_response_data(
    responses, candidates, fit=bank, source="simulated responses to BenchFill candidates"
)
print(f"{new_data.n_responses} simulated responses from {new_data.n_subjects} systems to {new_data.n_items} candidates")

# %% [markdown]
# ## Calibration and the acceptance rule
#
# Fast path: `calibrate_fixed` holds the bank (items, abilities, hyperparameters) at its posterior and computes
# each candidate's posterior on a grid. Reference (full mode): `calibrate_full` refits the whole bank with the
# candidates. Both are decided by the same rule, P(b in [lo, hi)) >= tau and P(a > 0) >= 0.9 with at least 10 responses.

# %%
with timer("calibrate (fixed bank)"):
    post_fixed = calibrate_fixed(bank, new_data, seed=S.seed)
full = None
if REFIT:
    with timer("calibrate (full refit)"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*approximate method.*")
        warnings.filterwarnings("ignore", message=".*did not pass the convergence checks.*")
        full = calibrate_full(bank, data, new_data, seed=S.seed + 1)
    print(short_summary(full.refit))


def decide(post: xr.Dataset) -> pd.DataFrame:
    return decide_all(
        post,
        aim_lo=LO,
        aim_hi=HI,
        n_responses=post["n_responses"].to_series(),
        rule=AcceptanceRule(tau=TAU, ci_prob=CI_PROB),
    )


decisions = {"fixed bank": decide(post_fixed)}
if full is not None:
    decisions["full refit"] = decide(full.posterior)
BASIS = "full refit" if full is not None else "fixed bank"  # the decisions that count
ledger_path = S.out / "benchfill" / "ledger.jsonl"
ledger_path.unlink(missing_ok=True)  # one fresh ledger per run of this notebook
ledger = Ledger(ledger_path)
for stage, table in decisions.items():
    records = decision_records(
        table, candidates=candidates, aim_bin=K, extra={"stage": stage, "tau": TAU, "responses": "simulated"}
    )
    for rec in records:
        rec.update({k: v for k, v in truth[rec["candidate_id"]].items() if k != "n_answering"})
    ledger.append(records)
ledger.to_csv(S.out / "benchfill_ledger.csv")
book = ledger.read()
shown = book[
    [
        "candidate_id",
        "stage",
        "kind",
        "true_difficulty",
        "difficulty_mean",
        "difficulty_ci_low",
        "difficulty_ci_high",
        "p_in_aim",
        "p_discrimination_positive",
        "n_responses",
        "decision",
        "reason",
    ]
]
with pd.option_context("display.width", 220, "display.precision", 3):
    print(shown.to_string(index=False))
print("wrote", S.out / "benchfill_ledger.csv")

# %% [markdown]
# ## What the ledger says
#
# Generated from the decisions above, against the known (simulated) truth.

# %%
for stage, table in decisions.items():
    t = table.join(design_table)
    acc = t["decision"] == "accepted"
    true_in = t["in_bin"]
    reasons = t.loc[~acc, "reason"].value_counts()
    print(
        f"{stage}: {int(acc.sum())} of {len(t)} candidates accepted, {int((acc & true_in).sum())} of them truly in the "
        f"bin; {int((true_in & ~acc).sum())} of the {int(true_in.sum())} truly in-bin candidates were rejected "
        f"({', '.join(f'{v} {k}' for k, v in t.loc[true_in & ~acc, 'reason'].value_counts().items()) or 'none'}); "
        f"rejections by reason: {', '.join(f'{v} {k}' for k, v in reasons.items()) or 'none'}."
    )
    false_acc = t.loc[acc & ~true_in]
    if len(false_acc):
        print(
            f"  accepted although truly outside the bin: {', '.join(false_acc.index)} (true b "
            f"{', '.join(f'{b:.2f}' for b in false_acc['true_difficulty'])})."
        )
if full is not None:
    agree = (decisions["fixed bank"]["decision"] == decisions["full refit"]["decision"]).sum()
    print(f"The fast path and the full refit agree on {agree} of {len(design)} decisions.")
    gap_b = decisions["full refit"]["p_in_aim"] - decisions["fixed bank"]["p_in_aim"]
    print(f"Largest difference in P(in bin) between the two: {gap_b.abs().max():.3f} ({gap_b.abs().idxmax()}).")

# %% [markdown]
# ## Before and after
#
# One posterior audited twice with the same range and bins: once with the bank's items only (before), once with
# the bank plus the accepted candidates (after), so only the added items differ. The posterior is the full refit's
# when it was run; otherwise the bank's draws with the fixed-bank draws of the candidates beside them (draw s of
# a candidate is paired with draw s of the bank, as `calibrate_fixed` draws one per bank draw).

# %%
accepted = decisions[BASIS].index[decisions[BASIS]["decision"] == "accepted"].tolist()
POSTERIOR_LABEL = (
    f"full refit: {fit_label(full.refit)}" if full is not None else f"bank {fit_label(bank)} + fixed-bank candidates"
)
if full is not None:
    joint, joint_data = full.refit.posterior, full.data
else:

    def stacked(da: xr.DataArray) -> xr.DataArray:
        flat = da.stack(sample=("chain", "draw")).transpose("sample", ...)
        return flat.drop_vars(["sample", "chain", "draw"]).rename(sample="draw").expand_dims(chain=[0])

    joint = xr.Dataset(
        {
            n: xr.concat([stacked(bank.posterior[n]), post_fixed[n].drop_vars(["chain", "draw"])], dim="item")
            for n in ("difficulty", "discrimination")
        }
    )
    joint["ability"] = stacked(bank.posterior["ability"])
    joint_data = ResponseData.combine([data, new_data], source=f"{data.source} + candidates")


def audit_subset(items: list[str]):
    sub = joint_data.subset(items=items)
    post = xr.Dataset({n: joint[n].sel(item=items) for n in ("difficulty", "discrimination")})
    post["ability"] = joint["ability"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return audit(post, sub, bins=BINS, range=(edges[0], edges[-1]), ci_prob=CI_PROB)


with timer("audits before/after"):
    bank_items = [str(i) for i in data.item_ids]
    a_before = audit_subset(bank_items)
    a_after = audit_subset(bank_items + accepted) if accepted else a_before


def bench_row(rep) -> pd.Series:
    b = rep.benchmarks
    return b.loc[(b["scope_kind"] == "benchmark") & (b["scope"] == BENCH)].iloc[0]


def bin_row(rep) -> pd.Series:
    b = rep.bins
    return b.loc[(b["scope_kind"] == "benchmark") & (b["scope"] == BENCH) & (b["bin"] == K)].iloc[0]


compare = pd.DataFrame(
    {
        stage: {
            "items": int(bench_row(rep)["n_items"]),
            "Maximum Gap (logits)": ci(*bench_row(rep)[["max_gap_mean", "max_gap_ci_low", "max_gap_ci_high"]]),
            "gap location": f"[{bench_row(rep)['gap_lo']:.2f}, {bench_row(rep)['gap_hi']:.2f}]",
            "DDM": ci(*bench_row(rep)[["ddm_w1_mean", "ddm_w1_ci_low", "ddm_w1_ci_high"]], digits=3),
            f"items in bin {K}": ci(*bin_row(rep)[["count_mean", "count_ci_low", "count_ci_high"]], digits=1),
            f"P(bin {K} empty)": f"{bin_row(rep)['p_empty']:.2f}",
            "accepted candidates added": 0 if stage == "before" else len(accepted),
            "posterior": POSTERIOR_LABEL,
        }
        for stage, rep in (("before", a_before), ("after", a_after))
    }
)
n_before, n_after = int(bench_row(a_before)["n_items"]), int(bench_row(a_after)["n_items"])
if n_after != n_before + len(accepted):
    raise RuntimeError(f"{BENCH}: {n_after} items after, expected {n_before} + {len(accepted)} accepted")
print(compare.to_string())
compare.to_csv(S.out / "benchfill_before_after.csv")

rb, ra = bench_row(a_before), bench_row(a_after)
if not accepted:
    print("No candidate was accepted, so the benchmark is unchanged.")
else:
    shrink = ra["max_gap_ci_high"] < rb["max_gap_ci_low"]
    print(
        f"Adding {len(accepted)} accepted candidate(s) to {BENCH} moves its Maximum Gap from "
        f"{ci(rb['max_gap_mean'], rb['max_gap_ci_low'], rb['max_gap_ci_high'])} to "
        f"{ci(ra['max_gap_mean'], ra['max_gap_ci_low'], ra['max_gap_ci_high'])} logits"
        + (
            " (the intervals do not overlap: a credible reduction)"
            if shrink
            else " (the intervals overlap: the data cannot call it a reduction)"
        )
        + f", and its DDM from {rb['ddm_w1_mean']:.3f} to {ra['ddm_w1_mean']:.3f}. P(bin {K} empty) goes from "
        f"{bin_row(a_before)['p_empty']:.2f} to {bin_row(a_after)['p_empty']:.2f}. The widest gap now lies on average at "
        f"[{ra['gap_lo']:.2f}, {ra['gap_hi']:.2f}]: the next aim for BenchFill."
    )

# %% [markdown]
# ## Figure: candidates against the aim

# %%
t = decisions[BASIS].join(design_table)
order = t.sort_values("true_difficulty")
y = np.arange(len(order))
fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
ax.axvspan(LO, HI, color="#E69F00", alpha=0.15, label=f"aim [{LO:.2f}, {HI:.2f})")
colours = {"accepted": OKABE_ITO[2], "rejected": OKABE_ITO[5]}
for dec, rows in order.groupby("decision"):
    yy = y[order.index.get_indexer(rows.index)]
    ax.hlines(yy, rows["difficulty_ci_low"], rows["difficulty_ci_high"], color=colours[dec], lw=2)
    ax.scatter(rows["difficulty_mean"], yy, color=colours[dec], s=20, zorder=3, label=f"{dec} (posterior, 90%)")
ax.scatter(order["true_difficulty"], y, marker="x", color="black", s=25, zorder=4, label="true difficulty")
ax.set_yticks(y, [f"{i} ({k})" for i, k in zip(order.index, order["kind"], strict=True)], fontsize="x-small")
ax.set_xlabel("difficulty (logits)")
ax.set_title(f"BenchFill on {BENCH}: {BASIS} posterior of simulated candidates, tau = {TAU}")
ax.legend(fontsize="x-small", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
fig.savefig(S.figures / "benchfill_candidates.png", dpi=80 if S.fast else 130)
show(S.figures / "benchfill_candidates.png")
plt.close(fig)
print("wrote", S.figures / "benchfill_candidates.png")

# %% [markdown]
# ## Operating characteristic: how many systems does the rule need?
#
# Simulated candidates with difficulties uniform on the bin widened by one bin width on each side (so a third lie
# in the bin) are answered by n of the population's systems, calibrated on the fast path and decided. Precision
# is the share of accepted candidates truly in the bin (the rule promises at least about tau); recall the share of
# in-bin candidates accepted.

# %%
n_sys = [n for n in (20, 50, 100, 200, 400) if n <= data.n_subjects]
with timer("operating characteristic"):
    oc = operating_characteristic(
        bank,
        aim_lo=LO,
        aim_hi=HI,
        n_systems=n_sys,
        n_candidates=30 if S.fast else 100,
        benchmark=BENCH,
        tau=TAU,
        seed=S.seed,
        n_draws=200 if S.fast else 1000,
    )
oc_table = operating_characteristic_table(oc)
oc_table.to_csv(S.out / "benchfill_operating_characteristic.csv", index=False)
with pd.option_context("display.precision", 3):
    print(oc_table.to_string(index=False))
for r in oc_table.itertuples():
    prec = "no candidate accepted" if r.n_accepted == 0 else f"precision {r.precision:.2f} (se {r.precision_se:.2f})"
    print(f"{r.n_systems} systems: {r.n_accepted} of {r.n_candidates} accepted, {prec}, recall {r.recall:.2f}.")

# %% [markdown]
# ## Timing and versions

# %%
print(timer.table().to_string(index=False))
print(versions())
