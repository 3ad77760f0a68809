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
# # 12. Item flags: reversed, flat and leaked items
#
# An audit that says what a benchmark measures must also say which items measure nothing or the wrong thing: a
# mis-keyed item (responses fall as ability rises), a flat one (answered at one rate whatever the ability) and a
# leaked one (one family of systems answers it far above its ability). `irt.check_items` gives each item the
# evidence and flags them at a stated false discovery rate (docs/item-flags.md); the audit can leave them out.
#
# Part 1 plants each fault in a simulated bank whose truth is known. Part 2 checks MMLU-Pro's 12,032 items,
# grouping its 29 systems by organisation.

# %% tags=["parameters"]
import warnings

import matplotlib

matplotlib.use("Agg")
import pandas as pd
from _common import Timer, settings, show, versions

import irtbayes as irt
from irtbayes.data.simulate import planted_item_faults

S = settings()
timer = Timer()
SYSTEMS, ITEMS = (150, 200) if S.fast else (400, 1000)
warnings.simplefilter("ignore")
print(S.describe())

# %% [markdown]
# ## Part 1: planted faults
#
# A 2PL bank with 8 reversed, 8 flat and 8 leaked items among sound ones; the systems fall in four groups, and
# each leaked item is answered by one group as if 3 logits easier. The fit is the approximate tier in fast mode,
# NUTS otherwise. The same design over several seeds and sizes is `scripts/item_flags_study.py`
# (docs/validation.md, "Item flags on simulated banks").

# %%
with timer("planted bank"):
    data, truth, planted = planted_item_faults(SYSTEMS, ITEMS, n_reversed=8, n_flat=8, n_leaked=8, seed=3)
    bank = irt.fit(data, sampler="approx" if S.fast else "auto", seed=1, progress=False)
with timer("check_items"):
    checks = irt.check_items(bank, data, group_col="group", seed=S.seed)
print(checks.to_text()[:2000])

# %%
found = checks.items.merge(planted, on="item")
table = pd.crosstab(found["fault"].replace("", "sound"), found["flag"].replace("", "none"))
print(table.to_string())
sound = found["fault"] == ""
print(f"sound items flagged: {int((found.loc[sound, 'flag'] != '').sum())} of {int(sound.sum())}")
checks.save(S.out / "item_flags_planted")
show(S.out / "item_flags_planted" / "item_flags.png")

# %% [markdown]
# What to read: each planted fault is flagged as its own kind where the data can show it, and sound items are
# left alone. Flat items need many systems (with 150 systems, few are shown flat); a leak shows when its group's
# members answer the item far above the curve, and the flag names the group and the direction (`above`).

# %% [markdown]
# ## Part 2: MMLU-Pro
#
# The 29 systems of the embedded MMLU-Pro, grouped by the organisation that released them (from the names: Meta,
# Mistral AI, Google, Alibaba, 01.AI, and five organisations with one system each). Fast mode checks a fifth of
# the items on an approximate fit.

# %%
ORGANISATIONS = {"Llama": "Meta", "Meta": "Meta", "Mistral": "Mistral AI", "Mixtral": "Mistral AI",
                 "mathstral": "Mistral AI", "gemini": "Google", "gemma": "Google", "Qwen1.5": "Alibaba",
                 "Yi": "01.AI", "DeepSeek": "DeepSeek", "Phi": "Microsoft", "c4ai": "Cohere", "jamba": "AI21"}  # fmt: skip
mmlu = irt.load_dataset("mmlu_pro")
if S.fast:
    mmlu = mmlu.subset(items=list(mmlu.item_ids[::5]))
groups = {str(s): ORGANISATIONS[str(s).split("-")[0]] for s in mmlu.subject_ids}
print(pd.Series(groups).value_counts().to_string())
with timer("MMLU-Pro fit"):
    mmlu_fit = irt.fit(mmlu, sampler="approx" if S.fast else "auto", seed=1, progress=False)
with timer("check_items (MMLU-Pro)"):
    mmlu_checks = irt.check_items(mmlu_fit, mmlu, groups=groups, seed=S.seed)
counts = mmlu_checks.items["flag"].replace("", "none").value_counts()
print(counts.to_string())
shown = ["item", "benchmark", "flag", "slope_mean", "slope_ci_low", "slope_ci_high", "p_reversed", "dif_group"]
print(mmlu_checks.flagged[[c for c in shown if c in mmlu_checks.flagged.columns]].head(10).round(3).to_string())
mmlu_checks.save(S.out / "item_flags_mmlu_pro")

# %% [markdown]
# With 29 systems a slope is known to about +-0.4 logits per sd of ability: no item can be shown flat, and only
# strong reversals show. The reversed items are those the weaker systems answer correctly more often than the
# stronger ones, which is what a wrong key looks like; read each (its question and key, in the source data) before
# dropping it. The audit without them:

# %%
with timer("audit without the flagged items"):
    clean = irt.audit(mmlu_fit, mmlu, item_flags=mmlu_checks.item_flags(), exclude_flagged=True)
print(next(line for line in clean.to_text().splitlines() if "flagged" in line))

# %%
print(timer.table().to_string(index=False))
print(versions())
