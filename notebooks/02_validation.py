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
# # 2. Validation: published estimates and recovery of known parameters
#
# Before trusting the audit on AI benchmarks, two checks of the model itself:
#
# 1. **Published estimates.** The Law School Admission Test sections 6 and 7 (1000 examinees x 5 items) are the
#    classic IRT test cases. mirt's own regression tests pin the LSAT7 2PL and the LSAT6 Rasch estimates
#    (maximum likelihood, with 95% confidence intervals), and a published Bayesian Rasch fit of LSAT6 (MCMC)
#    gives posterior quantiles. We put irtbayes's posterior means and 95% credible intervals beside them.
# 2. **Recovery.** Responses simulated from a hierarchical 2PL with known parameters are fitted; the posterior
#    means are plotted against the truth and the share of true values inside the 90% intervals is counted.
#
# Conventions. mirt writes the 2PL in slope-intercept form, logit P = a theta + d, with theta ~ N(0, 1);
# irtbayes writes logit P = a (theta - b) and reports the intercept d = -a b as `intercept`. irtbayes fixes the
# evaluated subjects' abilities to mean 0 and sd 1 in every draw (the sample, not a population, defines the
# scale), which for 1000 examinees differs from mirt's N(0, 1) population by about 1/sqrt(1000) in scale.
# mirt's Rasch fixes a = 1 and frees the ability variance; irtbayes's 1PL fixes the ability sd at 1 and frees
# the shared a, so mirt's variance corresponds to a squared.

# %% tags=["parameters"]
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import Timer, fit_label, settings, short_summary, show, versions
from _common import verdict as fit_verdict

from irtbayes.core.plots import OKABE_ITO
from irtbayes.data import registry as datasets
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.model.spec import ModelSpec

S = settings()
timer = Timer()
SIM_SUBJECTS, SIM_ITEMS = (60, 30) if S.fast else (300, 120)
print(S.describe())
print(f"recovery study: {SIM_SUBJECTS} simulated subjects x {SIM_ITEMS} items")
REFERENCE = None
if S.data_dir is not None:
    path = Path(S.data_dir) / "classic_irt" / "published_reference_estimates.csv"
    REFERENCE = pd.read_csv(path) if path.is_file() else None
print("published reference estimates:", "found" if REFERENCE is not None else "not found (IRTBAYES_DATA_DIR unset)")


# %%
# The full mode samples with NUTS at irtbayes' defaults for each bank (2,000 draws per chain for a small bank of
# fewer than 100 items, 1,000 otherwise) and draws until the convergence checks pass (at most four times as many);
# the fast mode uses the notebook's short approximate settings.
CHAINS, DRAWS, TUNE = (S.chains, S.draws, S.tune) if S.fast else (S.chains or 4, S.draws, S.tune)
SAMPLER = S.sampler or "nutpie"
UNTIL_CONVERGED = not S.fast and SAMPLER == "nutpie"


def run_fit(data, spec):
    """Fit with the sampler settings above; approximation and convergence are stated by short_summary()."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*approximate method.*")
        warnings.filterwarnings("ignore", message=".*did not pass the convergence checks.*")
        return fit(
            data,
            spec,
            sampler=SAMPLER,
            chains=CHAINS,
            draws=DRAWS,
            tune=TUNE,
            seed=S.seed,
            progress=False,
            until_converged=UNTIL_CONVERGED,
        )


# %% [markdown]
# ## LSAT7, 2PL

# %%
with timer("LSAT7 2PL"):
    lsat7 = datasets.load_dataset("lsat7")
    fit7 = run_fit(lsat7, ModelSpec(kind="2pl"))
print(short_summary(fit7))

# %%
CI = 0.95


def compare(published: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Join published (estimate, low, high) with posterior (mean, low, high) and say who contains whom."""
    table = published.merge(ours, on=["item", "parameter"], how="inner")
    table["mean_in_published_ci"] = (table["posterior_mean"] >= table["published_low"]) & (
        table["posterior_mean"] <= table["published_high"]
    )
    table["published_in_credible"] = (table["published"] >= table["posterior_low"]) & (
        table["published"] <= table["posterior_high"]
    )
    table["difference"] = table["posterior_mean"] - table["published"]
    return table


def posterior_rows(result, params: dict[str, str]) -> pd.DataFrame:
    items = result.items_table(ci_prob=CI)
    rows = []
    for _, r in items.iterrows():
        for ours, theirs in params.items():
            rows.append(
                {
                    "item": r["item"].rsplit("item", 1)[-1],
                    "parameter": theirs,
                    "posterior_mean": r[f"{ours}_mean"],
                    "posterior_low": r[f"{ours}_ci_low"],
                    "posterior_high": r[f"{ours}_ci_high"],
                }
            )
    return pd.DataFrame(rows)


def published_rows(dataset: str, model_prefix: str) -> pd.DataFrame:
    ref = REFERENCE.loc[(REFERENCE["dataset"] == dataset) & REFERENCE["model"].str.startswith(model_prefix)]
    return pd.DataFrame(
        {
            "item": ref["item"].astype(str).to_numpy(),
            "parameter": ref["parameter"].to_numpy(),
            "published": ref["estimate"].to_numpy(dtype=float),
            "published_low": ref["ci95_low"].to_numpy(dtype=float),
            "published_high": ref["ci95_high"].to_numpy(dtype=float),
            "source": ref["source"].to_numpy(),
        }
    )


def verdict(table: pd.DataFrame, what: str) -> str:
    n = len(table)
    inside = int(table["mean_in_published_ci"].sum())
    contains = int(table["published_in_credible"].sum())
    worst = table.iloc[int(np.argmax(np.abs(table["difference"].to_numpy())))]
    return (
        f"{what}: {inside} of {n} posterior means lie inside the published 95% intervals, and {contains} of {n} "
        f"published estimates lie inside irtbayes's 95% credible intervals. The largest difference is "
        f"{worst['difference']:+.3f} ({worst['parameter']} of item {worst['item']}: {worst['posterior_mean']:.3f} "
        f"against {worst['published']:.3f})."
    )


validation = []
if REFERENCE is not None:
    ours7 = posterior_rows(fit7, {"discrimination": "a", "intercept": "d"})
    table7 = compare(published_rows("LSAT7", "2PL"), ours7)
    table7.insert(0, "check", "LSAT7 2PL vs mirt")
    table7["verdict"] = fit_verdict(fit7)
    validation.append(table7)
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(table7.drop(columns=["source"]).to_string(index=False))
    print(verdict(table7, "LSAT7 2PL"))

# %% [markdown]
# ## LSAT6, Rasch (1PL)

# %%
with timer("LSAT6 Rasch"):
    lsat6 = datasets.load_dataset("lsat6")
    fit6 = run_fit(lsat6, ModelSpec(kind="1pl"))
print(short_summary(fit6))

# %%
if REFERENCE is not None:
    ours6 = posterior_rows(fit6, {"intercept": "d"})
    # mirt's latent variance is a^2 in irtbayes's parameterisation
    a_draws = fit6.posterior["discrimination"].isel(item=0).values.ravel()
    var = a_draws**2
    lo, hi = np.quantile(var, [(1 - CI) / 2, (1 + CI) / 2])
    ours6 = pd.concat(
        [
            ours6,
            pd.DataFrame(
                [
                    {
                        "item": "latent",
                        "parameter": "var_theta",
                        "posterior_mean": var.mean(),
                        "posterior_low": lo,
                        "posterior_high": hi,
                    }
                ]
            ),
        ],
        ignore_index=True,
    )
    table6 = compare(published_rows("LSAT6", "Rasch"), ours6)
    table6.insert(0, "check", "LSAT6 Rasch vs mirt")
    table6["verdict"] = fit_verdict(fit6)
    validation.append(table6)
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(table6.drop(columns=["source"]).to_string(index=False))
    print(verdict(table6, "LSAT6 Rasch (mirt)"))

    # The published Bayesian Rasch (2 chains x 3750 draws) reports centred difficulties alpha_k - mean(alpha) in
    # logit P = beta theta - alpha_k, i.e. -(d_k - mean(d)) in mirt's form, with posterior 2.5%/97.5% quantiles.
    mamba = REFERENCE.loc[(REFERENCE["dataset"] == "LSAT6") & (REFERENCE["parameter"] == "a_centered_difficulty")]
    d = fit6.posterior["intercept"].transpose("chain", "draw", "item").values.reshape(-1, lsat6.n_items)
    centred = -(d - d.mean(axis=1, keepdims=True))
    q = np.quantile(centred, [(1 - CI) / 2, (1 + CI) / 2], axis=0)
    table_b = pd.DataFrame(
        {
            "item": mamba["item"].astype(str).to_numpy(),
            "parameter": "centred difficulty",
            "published": mamba["estimate"].to_numpy(dtype=float),
            "published_low": mamba["q2.5"].to_numpy(dtype=float),
            "published_high": mamba["q97.5"].to_numpy(dtype=float),
            "source": mamba["source"].to_numpy(),
            "posterior_mean": centred.mean(axis=0),
            "posterior_low": q[0],
            "posterior_high": q[1],
        }
    )
    table_b = compare(
        table_b.iloc[:, :6], table_b[["item", "parameter", "posterior_mean", "posterior_low", "posterior_high"]]
    )
    table_b.insert(0, "check", "LSAT6 Rasch vs published Bayesian fit")
    table_b["verdict"] = fit_verdict(fit6)
    validation.append(table_b)
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(table_b.drop(columns=["source"]).to_string(index=False))
    print(verdict(table_b, "LSAT6 Rasch (published MCMC)"))
if validation:
    pd.concat(validation, ignore_index=True).to_csv(S.out / "validation_published.csv", index=False)
    print("wrote", S.out / "validation_published.csv")

# %% [markdown]
# ## Recovery on simulated data
#
# A hierarchical 2PL with 4 benchmarks in 2 domains and 10% of cells missing. The plot shows posterior means
# (with 90% intervals) against the true values; the table counts how many truths fall inside their 90%
# intervals. For well-calibrated intervals that share is 0.90 give or take the binomial error shown (the
# parameters of one fit are not independent, so the error is only a guide).

# %%
with timer("recovery fit"):
    sim, truth = simulate_responses(
        SIM_SUBJECTS, SIM_ITEMS, kind="2pl", n_benchmarks=4, n_domains=2, missing=0.1, seed=S.seed
    )
    fit_sim = run_fit(sim, ModelSpec(kind="2pl"))
print(short_summary(fit_sim))

# %%
items_sim = fit_sim.items_table(ci_prob=0.9).set_index("item")
subj_sim = fit_sim.subjects_table(ci_prob=0.9).set_index("subject")
panels = {
    "difficulty": (items_sim, truth["difficulty"].to_series()),
    "discrimination": (items_sim, truth["discrimination"].to_series()),
    "ability": (subj_sim, truth["ability"].to_series()),
}
coverage_rows = []
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained")
for k, (ax, (name, (table, true))) in enumerate(zip(axes, panels.items(), strict=True)):
    true = true.reindex(table.index.astype(str))
    mean, low, high = table[f"{name}_mean"], table[f"{name}_ci_low"], table[f"{name}_ci_high"]
    inside = (true >= low) & (true <= high)
    n = len(true)
    coverage_rows.append(
        {
            "parameter": name,
            "n": n,
            "coverage_90": float(inside.mean()),
            "binomial_se": float(np.sqrt(0.9 * 0.1 / n)),
            "correlation": float(np.corrcoef(true, mean)[0, 1]),
            "rmse": float(np.sqrt(np.mean((true - mean) ** 2))),
        }
    )
    ax.errorbar(true, mean, yerr=[mean - low, high - mean], fmt="o", ms=3, lw=0.6, alpha=0.7, color=OKABE_ITO[k])
    span = [min(true.min(), low.min()), max(true.max(), high.max())]
    ax.plot(span, span, color="black", lw=0.8, ls="--")
    ax.set_xlabel(f"true {name}")
    ax.set_ylabel("posterior mean (90% interval)")
    ax.set_title(f"{name}: {inside.mean():.0%} of truths inside")
fig.suptitle(f"Recovery: {SIM_SUBJECTS} subjects x {SIM_ITEMS} items, {fit_label(fit_sim)}")
fig.savefig(S.figures / "recovery.png", dpi=80 if S.fast else 130)
show(S.figures / "recovery.png")
plt.close(fig)
coverage = pd.DataFrame(coverage_rows)
coverage["sampler"] = fit_sim.sampler["name"]
coverage["approximate"] = fit_sim.approximate
coverage["verdict"] = fit_verdict(fit_sim)
coverage.to_csv(S.out / "validation_recovery.csv", index=False)
print(coverage.to_string(index=False))

# %%
for _, r in coverage.iterrows():
    z = (r["coverage_90"] - 0.9) / r["binomial_se"]
    if abs(z) <= 2:
        judgement = "consistent with the nominal 0.90 (within two binomial standard errors)"
    elif z < 0:
        judgement = f"below the nominal 0.90 by {abs(z):.1f} binomial standard errors: the intervals are too narrow"
    else:
        judgement = f"above the nominal 0.90 by {z:.1f} binomial standard errors: the intervals are conservative"
    print(
        f"{r['parameter']}: {r['coverage_90']:.0%} of {r['n']} true values inside the 90% intervals, {judgement}; "
        f"correlation of posterior means with the truth {r['correlation']:.3f}, RMSE {r['rmse']:.3f}."
    )
if fit_sim.approximate:
    print(
        f"These intervals come from {fit_sim.sampler['name']}, an approximate method; mean-field approximations "
        "are known to understate posterior spread, so coverage below 0.90 here says little about the NUTS fits."
    )

# %% [markdown]
# ## Timing and versions

# %%
print(timer.table().to_string(index=False))
print(versions())
