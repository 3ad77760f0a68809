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
# # 10. Graded items: ordinal responses fitted as what they are
#
# Many evaluations are not right/wrong: judges rate answers 1-10, rubrics give partial credit, and safety labels
# have a middle category (XSTest's partial refusals). irtbayes fits them with the **graded response model**
# (GRM, Samejima: P(Y >= k) = sigmoid(a (theta - b_k)) with ordered thresholds) or the **generalised partial
# credit model** (GPCM, Muraki), hierarchical like the 2PL (`irtbayes.model.build`, section "Graded models").
# Each item is audited at its **location**, the ability at which its expected score is half its maximum.
#
# 1. **mirt's Science data** (392 people, 4 Likert items of 4 categories): our posterior intervals beside mirt's
#    published graded-response estimates (slope a and intercepts d_k = -a b_k), and the GRM against the GPCM by
#    PSIS-LOO (both are true likelihoods of the categories, so their LOO values compare).
# 2. **XSTest's three labels** (5 model setups x 450 prompts, human labels full compliance / partial refusal /
#    full refusal): the labels as ordered categories (compliance < partial refusal < full refusal), no longer
#    collapsed to 0/1; the prompts' locations (how readily a prompt draws a refusal), the setups' refusal
#    propensities, and the audit of the prompts' locations.
#
# Every number from a fit that did not pass its convergence checks says so (`verdict`).

# %% tags=["parameters"]
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import Timer, settings, show, verdict, versions

from irtbayes.auditing.run import audit
from irtbayes.checks.predictive import compare_fits, posterior_predictive_check
from irtbayes.core.plots import OKABE_ITO
from irtbayes.data.io.tabular import load_long, load_wide
from irtbayes.fitting.fit import fit
from irtbayes.model.spec import ModelSpec

S = settings()
timer = Timer()
CI_PROB = 0.9
# full mode: irtbayes' defaults (NUTS until converged); fast mode (the test suite): short chains
FIT = {"chains": 2, "draws": 150, "tune": 200} if S.fast else {}
DATA = Path(S.data_dir) if S.data_dir else None
if DATA is None or not (DATA / "classic_irt" / "science_mirt.csv").is_file():
    raise SystemExit(f"the shared data sets are not at {DATA}: set IRTBAYES_DATA_DIR")
XSTEST_ORDER = ["1_full_compliance", "3_partial_refusal", "2_full_refusal"]
print(f"mode {S.mode}; NUTS (nutpie) {FIT or 'at irtbayes defaults, until converged'}; seed {S.seed}; out {S.out}")


def fitted(data, kind: str, seed: int, **spec):
    """A graded fit with this notebook's settings; a failed check is reported by verdict(), not raised."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*did not pass the convergence checks.*")
        warnings.filterwarnings("ignore", message=".*standardised over only.*")  # XSTest: 5 setups, said below
        return fit(data, ModelSpec(kind=kind, **spec), seed=seed, progress=False, **FIT)


# %% [markdown]
# ## 1. Science: the GRM against mirt's published graded fit
#
# mirt's estimates are maximum likelihood with abilities N(0, 1); ours are posterior means with 90% intervals
# under the hierarchical model (with four items, the discriminations are pooled with a fixed spread, which pulls
# the steepest item, Future, a little toward the others).

# %%
with timer("Science: fit GRM and GPCM"):
    science = load_wide(DATA / "classic_irt" / "science_mirt.csv", scoring="ordinal")
    grm = fitted(science, "grm", S.seed)
    gpcm = fitted(science, "gpcm", S.seed)
print(science.summary().kind_text, "|", "; ".join(science.notes))
print("GRM:", verdict(grm), "| GPCM:", verdict(gpcm))

reference = pd.read_csv(DATA / "classic_irt" / "published_reference_estimates.csv")
reference = reference[reference["dataset"].eq("Science") & reference["model"].str.startswith("graded")]
post = grm.posterior
rows = []
for _, r in reference.iterrows():
    item, name = r["item"], r["parameter"]
    draws = (
        post["discrimination"].sel(item=item) if name == "a1" else post["intercept"].sel(item=item, boundary=name[1:])
    ).values.ravel()
    lo, hi = np.quantile(draws, [(1 - CI_PROB) / 2, (1 + CI_PROB) / 2])
    rows.append(
        {
            "item": item,
            "parameter": name,
            "mirt": float(r["estimate"]),
            "posterior_mean": float(draws.mean()),
            "ci_low": lo,
            "ci_high": hi,
            "inside": bool(lo <= r["estimate"] <= hi),
            "verdict": verdict(grm),
        }
    )
science_table = pd.DataFrame(rows)
science_table.to_csv(S.out / "graded_science_vs_mirt.csv", index=False)
print(science_table.round(3).to_string(index=False))
print(
    f"{int(science_table['inside'].sum())} of {len(science_table)} published estimates lie inside our "
    f"{CI_PROB:.0%} intervals ({verdict(grm)} fit)."
)

# %%
fig, ax = plt.subplots(figsize=(7, 4.5))
y = np.arange(len(science_table))[::-1]
ax.hlines(
    y, science_table["ci_low"], science_table["ci_high"], color=OKABE_ITO[0], lw=2, label=f"{CI_PROB:.0%} interval"
)
ax.plot(science_table["posterior_mean"], y, "o", color=OKABE_ITO[0], label="posterior mean")
ax.plot(science_table["mirt"], y, "x", color=OKABE_ITO[5], ms=8, label="mirt (ML)")
ax.set_yticks(y, science_table["item"] + " " + science_table["parameter"])
ax.set_xlabel("value (slope a1, intercepts d1 > d2 > d3)")
ax.set_title(f"Science, graded response model ({verdict(grm)})")
ax.legend(loc="lower right", fontsize=8)
ax.grid(alpha=0.3)
path = S.figures / "graded_science_vs_mirt.png"
fig.savefig(path, dpi=120, bbox_inches="tight")
show(path)
plt.close(fig)

# %% [markdown]
# ### GRM or GPCM?
#
# PSIS-LOO, leave one response out; the higher `elpd` the better, `dse` the standard error of the difference.

# %%
with timer("Science: LOO"), warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # Pareto k notes, reported in the table
    loo = compare_fits({"grm": grm, "gpcm": gpcm}, science, n_draws=1000)
loo.to_csv(S.out / "graded_science_loo.csv")
print(loo[["rank", "elpd", "se", "elpd_diff", "dse", "n_high_pareto_k"]].round(2).to_string())
print("likelihood:", loo.attrs["likelihood"])

# %% [markdown]
# ## 2. XSTest: three labels as ordered categories
#
# The five setups answered 450 prompts (250 safe, 200 unsafe), and annotators labelled each answer full
# compliance, partial refusal or full refusal. Ordered from compliance to refusal, a setup's "ability" is its
# propensity to refuse and a prompt's location is how readily it draws a refusal. Each prompt has only five
# responses, so its discrimination and thresholds lean on the pooling. The prompts are pooled as one group
# (`hierarchy="none"`): with safe and unsafe prompts as two benchmark groups, the spread between two groups is
# hardly informed by the data and its funnel stopped the chains (671 divergent transitions at seed 2026), while
# one group converged. The audit still reads safe and unsafe prompts as two scopes. With five setups, the
# standardised abilities lie within +-2 (sqrt(5 - 1)).

# %%
with timer("XSTest: load and fit the GRM"):
    root = DATA / "xstest_completions"
    meta = pd.read_csv(root / "xstest_prompt_meta.csv")
    items = pd.DataFrame(
        {
            "item": "v2-" + meta["id"].astype(str),
            "benchmark": np.where(meta["label"] == "safe", "safe prompts", "unsafe prompts"),
            "type": meta["type"],
        }
    )
    xstest = load_long(
        root / "xstest_labels_long.csv",
        subject="model",
        item="id",
        response="final_label",
        items=items,
        scoring="ordinal",
        categories=XSTEST_ORDER,
    )
    xs_fit = fitted(xstest, "grm", S.seed, hierarchy="none")
print(xstest.summary().kind_text, "|", xs_fit.diagnostics.to_text().splitlines()[0])

# %%
setups = xs_fit.subjects_table(CI_PROB)[
    ["subject", "mean_response", "ability_mean", "ability_ci_low", "ability_ci_high"]
]
setups = setups.sort_values("ability_mean").assign(verdict=verdict(xs_fit))
setups.to_csv(S.out / "graded_xstest_setups.csv", index=False)
print("Refusal propensity of each setup (mean_response: mean share of the most refusing label):")
print(setups.round(2).to_string(index=False))

with timer("XSTest: predictive check"), warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    check = posterior_predictive_check(xs_fit, xstest, n_draws=50 if S.fast else 200, seed=S.seed)
print(
    f"predictive check: {int(check.items['misfit'].sum())} of {len(check.items)} prompts flagged ({check.items.attrs['likelihood']})"
)

# %% [markdown]
# ### Where the prompts sit, and the audit of their locations

# %%
with timer("XSTest: audit"), warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    xs_audit = audit(xs_fit, xstest, seed=S.seed)
print(xs_audit.to_text(max_subjects=5))
prompts = xs_audit.items.merge(items, on="item", suffixes=("", "_meta"))
prompts["verdict"] = verdict(xs_fit)
prompts.to_csv(S.out / "graded_xstest_prompts.csv", index=False)
by_type = prompts.groupby(["benchmark", "type"])["difficulty_mean"].agg(["count", "mean", "min", "max"])
print(by_type.round(2).to_string())

# %%
fig, ax = plt.subplots(figsize=(8, 5))
order = by_type.sort_values("mean").index
for k, (bench, kind) in enumerate(order):
    values = prompts.loc[(prompts["benchmark"] == bench) & (prompts["type"] == kind), "difficulty_mean"]
    color = OKABE_ITO[0] if bench == "safe prompts" else OKABE_ITO[5]
    ax.plot(values, np.full(len(values), k) + np.linspace(-0.2, 0.2, len(values)), "|", color=color, ms=6)
for k, (_, row) in enumerate(setups.iterrows()):  # labels staggered: two setups may sit close together
    ax.axvline(row["ability_mean"], color="grey", lw=0.8, ls=":")
    ax.text(row["ability_mean"], len(order) - 0.4 - 4 * (k % 2), str(row["subject"]), rotation=90, fontsize=7, va="top")
ax.set_yticks(range(len(order)), [f"{kind} ({bench.split()[0]})" for bench, kind in order], fontsize=7)
ax.set_xlabel("location (logits): where a prompt's expected label is half-way to full refusal")
ax.set_title(f"XSTest prompts by type, and the five setups (dotted) — GRM, {verdict(xs_fit)}")
ax.grid(alpha=0.3, axis="x")
path = S.figures / "graded_xstest_locations.png"
fig.savefig(path, dpi=120, bbox_inches="tight")
show(path)
plt.close(fig)

# %% [markdown]
# ## Timing

# %%
times = timer.table()
print(times.to_string(index=False))
times.to_csv(S.out / "timings_10_graded.csv", index=False)

# %% [markdown]
# ## Versions

# %%
print(versions())
