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
# # 11. Tracking checkpoints: where a change helped and where it hurt
#
# A training team asks whether a change helped where it was meant to, not which model leads. A flat overall score
# can hide a gain in one region of difficulty and a loss in another, or a gain in a region the benchmark barely
# covers. `irt.track` compares checkpoints of one model on a fitted bank, region by region and benchmark by
# benchmark, with intervals, and says the smallest change each region could show (docs/tracking.md).
#
# Part 1 plants changes on a simulated bank whose truth is known: a plain gain, a gain and a loss that cancel,
# and two identical checkpoints. Part 2 follows the Llama 7-8B line on MMLU-Pro (four releases standing in for
# checkpoints) on a bank fitted to the other 25 systems.

# %% tags=["parameters"]
import warnings

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
from _common import REPO, Timer, settings, show, versions

import irtbayes as irt
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.evaluating.tracking import Tracking

S = settings()
timer = Timer()
SYSTEMS, ITEMS = (120, 400) if S.fast else (200, 1000)
DRAWS = 100 if S.fast else 400
warnings.simplefilter("ignore")
print(S.describe())

# %% [markdown]
# ## Part 1: planted changes
#
# A bank of simulated systems, fitted by the approximate tier, and four checkpoints answering every item: c0 to c1
# gains 0.8 logits of ability; c1 to c2 keeps the ability but gains 2.5 logits on the items of true difficulty in
# [1.2, 2.2) and loses 2.5 on those in [-0.9, 0.1); c2 to c3 changes nothing (fresh answers to the same
# propensities). The same design, over 30 seeds, is `scripts/tracking_study.py` (docs/validation.md).

# %%
GAIN, LOSS = (1.2, 2.2), (-0.9, 0.1)
with timer("bank (approximate tier)"):
    data, truth = simulate_responses(SYSTEMS, ITEMS, n_benchmarks=2, seed=11, missing=0.0)
    bank = irt.fit(data, sampler="approx", seed=1, progress=False)
rng = np.random.default_rng(S.seed)
b, a = truth["difficulty"].values, truth["discrimination"].values
shift = np.where((b >= GAIN[0]) & (b < GAIN[1]), 2.5, 0.0) - np.where((b >= LOSS[0]) & (b < LOSS[1]), 2.5, 0.0)
etas = {"c0": a * (0.0 - b), "c1": a * (0.8 - b)}
etas["c2"] = etas["c1"] + shift
etas["c3"] = etas["c2"]
rows = [
    pd.DataFrame({"subject": name, "item": truth["difficulty"].coords["item"].values,
                  "response": (rng.random(len(b)) < 1 / (1 + np.exp(-eta))).astype(float)})
    for name, eta in etas.items()
]  # fmt: skip
checkpoints = ResponseData.from_long(pd.concat(rows), source="planted checkpoints")
with timer("track"):
    planted = irt.track(bank, checkpoints, data=data, n_draws=DRAWS, seed=S.seed)
print(planted.to_text())

# %%
rows = planted.changes
whole = rows[(rows["scope"] == "all") & (rows["region"] == "whole range")]
print(whole[["from", "to", "accuracy_change_mean", "accuracy_change_ci_low", "accuracy_change_ci_high",
             "expected_change_mean", "credible"]].round(3).to_string(index=False))  # fmt: skip
planted.save(S.out / "tracking_planted")
show(S.out / "tracking_planted" / "trajectory.png")

# %% [markdown]
# What to read: c0 to c1 is credible over the whole range, as its ability shift predicts (the expected change
# equals the accuracy change). c1 to c2 is nearly flat over the whole range, but credible gains sit in the bins
# of the planted gain and credible losses in those of the planted loss, with the ability shift explaining little
# of either (the `beyond_ability` columns). c2 to c3 shows nothing credible. The detectable change of each region
# says how large a change it could have shown.

# %% [markdown]
# ## Part 2: the Llama 7-8B line on MMLU-Pro
#
# Four releases of Meta's 7-8B models, compared each with the one before on a bank fitted to the other 25
# systems. Releases are not checkpoints of one run: the example shows what the tables say. The full run
# (`scripts/tracking_example.py`, NUTS) keeps its tables in `notebooks/results/tracking_llama8b/`; fast mode fits
# the bank with the approximate tier on a fifth of the items.

# %%
LINE = ["Llama-2-7b-hf", "Meta-Llama-3-8B", "Meta-Llama-3_1-8B", "Meta-Llama-3_1-8B-Instruct"]
mmlu = irt.load_dataset("mmlu_pro")
if S.fast:
    mmlu = mmlu.subset(items=list(mmlu.item_ids[::5]))
others = mmlu.subset(subjects=[s for s in mmlu.subject_ids if s not in LINE])
saved = REPO / "notebooks" / "results" / "tracking_llama8b"
if not S.fast and (saved / "changes.csv").is_file():
    llama = Tracking.load(saved)
else:
    with timer("MMLU-Pro bank"):
        llama_bank = irt.fit(others, sampler="approx" if S.fast else "auto", seed=1, progress=False)
    with timer("track the line"):
        llama = irt.track(llama_bank, mmlu.subset(subjects=LINE), step={n: k for k, n in enumerate(LINE)},
                          data=others, n_draws=DRAWS, seed=1)  # fmt: skip
    llama.save(S.out / "tracking_llama8b")
print(llama.abilities.round(3).to_string(index=False))

# %%
for (start, end), part in llama.changes.groupby(["from", "to"], sort=False):
    total = part[(part["scope"] == "all") & (part["region"] == "whole range")].iloc[0]
    regions = part[(part["scope"] == "all") & (part["region"] != "whole range")]
    print(f"{start} -> {end}: {total['accuracy_change_mean']:+.3f} "
          f"[{total['accuracy_change_ci_low']:+.3f}, {total['accuracy_change_ci_high']:+.3f}]; credible regions "
          f"{int(regions['credible'].sum())} of {len(regions)}; detectable "
          f"{regions['detectable_change'].min():.2f}-{regions['detectable_change'].max():.2f}")  # fmt: skip

# %% [markdown]
# In the full run (NUTS, all 12,032 items), the first step (Llama-2 to Llama-3) gains everywhere, most on the
# easiest items; the second (3 to 3.1) is credible over all items but in no single region, each region able to
# show only a larger change than it made; the instruction-tuned 3.1 gains in the middle of the range, as its
# ability shift predicts. Fast mode, on a fifth of the items, can show less: its regions' detectable changes
# are larger.

# %%
print(timer.table().to_string(index=False))
print(versions())
