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
# # 6. Model checks: does the IRT model fit, which model, and where do the benchmarks measure?
#
# The audit of notebook 3 reads every benchmark through one fitted model per population. Its conclusions are
# only as good as that model, so this notebook checks it in three ways:
#
# 1. **Posterior predictive checks** of each population's fit (the fit notebook 3 saved): replicate the data
#    from the posterior and ask whether each item's proportion correct, each item's correlation with the rest
#    score and each system's total score look like the replications (Bayesian p-values,
#    `irtbayes.checks.predictive.posterior_predictive_check`). The item-rest correlation is the informative one: an
#    item's difficulty is fitted, so its proportion correct is almost always reproduced, while the item-rest
#    relation tests the model's discriminations (all equal under the 1PL).
# 2. **1PL vs 2PL vs 3PL for multiple choice** by PSIS-LOO (`irtbayes.checks.predictive.compare_fits`, leave one
#    response out) on MMLU-Pro: 10 options, so a system that guesses is right about 10% of the time and a
#    lower asymptote (the 3PL's guessing parameter) near 0.1 is plausible. Three fits to the same seeded subset.
# 3. **Information curves and saturation** per population: where on the ability scale each benchmark measures
#    (test information, from the same per-draw formulas as the audit, `irtbayes.core.information`) beside the
#    systems' abilities, and per posterior draw the share of each benchmark's items that the best system (the
#    highest ability in that draw, among the systems that took the benchmark) answers correctly with
#    probability >= 0.9 (**saturation**), and the share of items whose difficulty lies below the lowest such
#    system's ability (items every system is more likely to get right than wrong).
#
# Every number that comes from an approximate fit (ADVI in the fast mode; the approximate tier for the two
# largest populations in the full mode) or from a NUTS fit that failed its convergence checks says so, in the
# tables (`verdict`) and wherever it is printed.

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
    POPULATIONS,
    Timer,
    ci,
    fit_label,
    fit_or_load,
    load_population,
    settings,
    show,
    subsample_note,
    verdict,
    versions,
)
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from scipy import stats

from irtbayes.checks.predictive import compare_fits, posterior_predictive_check
from irtbayes.core.information import test_information
from irtbayes.core.plots import OKABE_ITO, domain_palette, shorten
from irtbayes.data import registry as datasets
from irtbayes.model.spec import ModelSpec

S = settings()
timer = Timer()
CI_PROB = 0.9
ALPHA = 0.05  # two-sided level of the predictive check's misfit flags
LARGE = 2_500_000  # responses: a population above this gets fewer posterior draws in sections 1 and 3
PPC_DRAWS = 50 if S.fast else 200  # replicated data sets per population
PPC_DRAWS_LARGE = 50 if S.fast else 100
CURVE_DRAWS = 50 if S.fast else 200  # posterior draws for the information curves and saturation
CURVE_DRAWS_LARGE = 50 if S.fast else 100
GRID_POINTS = 81
CHUNK = 1 << 21  # array elements per chunk of items (draw x grid x item)
P_SOLVED = 0.9  # an item counts as solved by the best system when P(correct) >= this
SATURATED = 0.5  # a benchmark is saturated when the interval of its saturation lies above this
MC_DATASET = "mmlu_pro"
MC_CATEGORIES = ("law", "computer_science", "psychology")  # hardest-ish, middle, easiest-ish; 3 domains
MC_ITEMS = 12 if S.fast else 250  # a seeded random sample of items per category (full: 750 x 29 systems)
MC_KINDS = ("1pl", "2pl", "3pl")
MC_HIERARCHY = "benchmark"  # one benchmark per domain here: a domain level would not be identified
LOO_DRAWS = None if S.fast else 1000  # posterior draws per fit for PSIS-LOO (None: all)
print(S.describe())


# %%
def thinned(result, n_draws: int) -> dict[str, np.ndarray | None]:
    """The fit's ability, difficulty, discrimination and guessing at about ``n_draws`` draws, evenly spaced in
    every chain, as (sample, subject) and (sample, item) arrays (guessing None unless the fit is 3PL)."""
    post = result.posterior
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    per_chain = max(1, min(n_draw, int(np.ceil(n_draws / n_chain))))
    draws = np.unique(np.linspace(0, n_draw - 1, per_chain).round().astype(int))
    out: dict[str, np.ndarray | None] = {}
    for name in ("ability", "difficulty", "discrimination", "guessing"):
        if name not in post:
            out[name] = None
            continue
        da = post[name].isel(draw=draws)
        if "dim" in da.dims:
            raise ValueError(f"{name} has a 'dim' axis: this notebook handles one-dimensional abilities only")
        out[name] = da.stack(sample=("chain", "draw")).transpose("sample", ...).values
    return out


def tagged(name: str, tag: str) -> str:
    """A population or fit name with its verdict when that is not a clean NUTS pass."""
    return name if tag == "converged" else f"{name} ({tag})"


# %% [markdown]
# ## 1. Posterior predictive checks
#
# For each population: the fit notebook 3 saved (`<out>/fits/<population>`; fitted now, with the same settings,
# if it is missing), 200 replicated data sets (100 for populations of more than 2.5 million responses; 50 in the
# fast mode), a two-sided level of 0.05 per statistic. An item misfits when its proportion correct or its
# item-rest correlation lies in the outer 2.5% of its replications on either side; a system misfits when its
# total score does. Posterior predictive p-values are conservative (a fitted model reproduces its own data
# more closely than new data), so a correct model flags fewer than the nominal 1 - 0.95² ≈ 9.75% of items:
# a share well above that is a real misfit, one below it is no proof of fit. For fractional responses (XSTest's
# partial refusals, fitted with the fractional-logit quasi-likelihood) the replications are 0/1 draws with the
# predicted mean, so only the item means are checked.
#
# The thinned draws that section 3 needs are kept here, so each population's fit is loaded once.

# %%
ppc_rows, ppc_items, kept = [], {}, {}
for pop in POPULATIONS:
    with timer(f"{pop.name}: load"):
        data, record = load_population(pop, S)
        result, loaded = fit_or_load(pop.name, data, S)
    tag = verdict(result)
    large = data.n_responses > LARGE
    print(
        f"\n=== {tagged(pop.name, tag)}: {data.n_subjects:,} subjects x {data.n_items:,} items "
        f"({subsample_note(record)}); {result.spec.kind.upper()}, {fit_label(result)}"
        + ("" if loaded else "; fitted now (notebook 3 had not saved it)")
    )
    with timer(f"{pop.name}: predictive check"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="responses are fractional")  # said in the table and below
        check = posterior_predictive_check(
            result,
            data,
            n_draws=PPC_DRAWS_LARGE if large else PPC_DRAWS,
            alpha=ALPHA,
            ci_prob=CI_PROB,
            seed=S.seed,
        )
    items, subjects = check.items, check.subjects
    p_rest = items["p_value_item_rest"]
    checked_rest = p_rest.notna() & (not check.quasi_likelihood)
    mean_out = (items["p_value_mean"] < ALPHA / 2) | (items["p_value_mean"] > 1 - ALPHA / 2)
    stronger = checked_rest & (p_rest < ALPHA / 2)  # observed item-rest above nearly every replication
    weaker = checked_rest & (p_rest > 1 - ALPHA / 2)
    chance = ALPHA if check.quasi_likelihood else 1 - (1 - ALPHA) ** 2
    # an item that a replication answers alike (all right or all wrong) can get an infinite item-rest correlation
    # there instead of NaN, which makes its predicted (mean) correlation infinite: such items are counted and left
    # out of the average difference and the figure
    gap = items["observed_item_rest"] - items["predicted_item_rest"]
    finite_gap = checked_rest & np.isfinite(gap)
    ppc_rows.append(
        {
            "population": pop.name,
            "model": result.spec.kind.upper(),
            "sampler": fit_label(result),
            "verdict": tag,
            "subjects": data.n_subjects,
            "items": data.n_items,
            "responses": data.n_responses,
            "subsample": subsample_note(record),
            "likelihood": "fractional-logit quasi-likelihood" if check.quasi_likelihood else "bernoulli",
            "ppc_draws": check.n_draws,
            "alpha": ALPHA,
            "items_misfit": int(items["misfit"].sum()),
            "items_misfit_share": float(items["misfit"].mean()),
            "nominal_share": chance,
            "item_mean_misfit": int(mean_out.sum()),
            "item_rest_checked": int(checked_rest.sum()),
            "item_rest_stronger": int(stronger.sum()),
            "item_rest_weaker": int(weaker.sum()),
            "item_rest_obs_minus_pred": float(gap[finite_gap].mean()) if finite_gap.any() else np.nan,
            "item_rest_pred_not_finite": int((checked_rest & ~np.isfinite(items["predicted_item_rest"])).sum()),
            "p_item_mean_median": float(items["p_value_mean"].median()),
            "p_item_rest_median": float(p_rest.median()) if p_rest.notna().any() else np.nan,
            "subjects_misfit": int(subjects["misfit"].sum()),
            "subjects_misfit_share": float(subjects["misfit"].mean()),
            "p_total_median": float(subjects["p_value_total"].median()),
        }
    )
    ppc_items[pop.name] = pd.DataFrame(
        {
            "predicted": items["predicted_item_rest"].to_numpy(dtype=float),
            "observed": items["observed_item_rest"].to_numpy(dtype=float),
            "rest_misfit": (stronger | weaker).to_numpy(),
            "mean_misfit": mean_out.to_numpy(),
        }
    )
    print(check.to_text().splitlines()[0])
    with timer(f"{pop.name}: keep draws"):
        bench = data.items["benchmark"].astype(str).to_numpy()
        s_codes, i_codes = data.subject_codes, data.item_codes
        takers = {}
        for name in dict.fromkeys(bench):
            in_bench = np.zeros(data.n_items, dtype=bool)
            in_bench[bench == name] = True
            takers[name] = np.unique(s_codes[in_bench[i_codes]])
        kept[pop.name] = {
            "draws": thinned(result, CURVE_DRAWS_LARGE if large else CURVE_DRAWS),
            "ability_mean": result.posterior["ability"].mean(("chain", "draw")).values,
            "benchmark": bench,
            "domain": data.items["domain"].astype(str).to_numpy(),
            "takers": takers,
            "takers_all": np.unique(s_codes),
            "verdict": tag,
            "model": result.spec.kind.upper(),
            "sampler": fit_label(result),
        }
    del result, data, check

ppc = pd.DataFrame(ppc_rows)
ppc.to_csv(S.out / "model_checks.csv", index=False)
with pd.option_context("display.width", 220, "display.precision", 3):
    print(
        ppc[
            [
                "population",
                "model",
                "verdict",
                "ppc_draws",
                "items_misfit",
                "items_misfit_share",
                "nominal_share",
                "item_rest_stronger",
                "item_rest_weaker",
                "subjects_misfit",
                "p_item_rest_median",
            ]
        ].to_string(index=False)
    )
print("wrote", S.out / "model_checks.csv")

# %% [markdown]
# ### What the checks say
#
# Generated from the table above; a population's verdict follows its name when its fit is approximate or did
# not pass the convergence checks.

# %%
for r in ppc.itertuples():
    name = f"{r.population} ({r.model}, {r.verdict})"
    level = "above" if r.items_misfit_share > r.nominal_share else "within"
    text = (
        f"{name}: {r.items_misfit:,} of {r.items:,} items misfit ({r.items_misfit_share:.1%}; "
        f"{level} the nominal {r.nominal_share:.1%}); item means misfit for {r.item_mean_misfit:,}"
    )
    if r.item_rest_checked:
        text += (
            f"; {r.item_rest_stronger:,} items relate to the rest score more strongly than the model predicts and "
            f"{r.item_rest_weaker:,} more weakly (observed minus predicted item-rest correlation "
            f"{r.item_rest_obs_minus_pred:+.3f} on average"
            + (
                f", over the items whose predicted correlation is finite: {r.item_rest_pred_not_finite:,} are not"
                if r.item_rest_pred_not_finite
                else ""
            )
            + ")"
        )
    else:
        text += "; item-rest correlations not checked (fractional responses: 0/1 replications)"
    text += f"; {r.subjects_misfit} of {r.subjects:,} systems' total scores misfit."
    print(text)
bad = ppc.loc[ppc["items_misfit_share"] > 2 * ppc["nominal_share"]]
if len(bad):
    solid = bad["verdict"] == "converged"
    parts = []
    if solid.any():
        parts.append(
            "from converged NUTS fits, so the model misses something in these data: "
            + ", ".join(f"{r.population} ({r.items_misfit_share:.1%})" for r in bad.loc[solid].itertuples())
        )
    if (~solid).any():
        parts.append(
            "from approximate or unconverged fits, so the model or the approximation misses something: "
            + ", ".join(
                f"{r.population} ({r.verdict}; {r.items_misfit_share:.1%})" for r in bad.loc[~solid].itertuples()
            )
        )
    print("Item misfit above twice the nominal share, " + "; ".join(parts) + ".")
else:
    print("No population has item misfit above twice the nominal share.")
one_pl = ppc.loc[(ppc["model"] == "1PL") & (ppc["item_rest_checked"] > 0)]
for r in one_pl.itertuples():
    print(
        f"{r.population} is fitted with the 1PL (equal discriminations): {r.item_rest_stronger + r.item_rest_weaker} "
        f"of {r.item_rest_checked} items' item-rest correlations fall outside their replications."
    )
if ppc["verdict"].ne("converged").any():
    others = ppc.loc[ppc["verdict"].ne("converged")]
    print(
        "Checks of "
        + ", ".join(f"{r.population} ({r.verdict})" for r in others.itertuples())
        + " replicate from fits whose intervals are approximate or unconverged: read their counts with that caveat."
    )

# %% [markdown]
# ### Figure: observed vs predicted item-rest correlation
#
# One panel per population: each point is an item, at its predicted (mean over the replications) and observed
# correlation with the rest score. Orange: the observed correlation lies outside its replications (item-rest
# misfit); grey crosses: the item's proportion correct does. Points above the diagonal relate to ability more
# strongly than the model says, points below it more weakly. Items without a finite observed and predicted
# correlation (answered alike by every system, or in some replication) are left out.

# %%
dpi = 80 if S.fast else 130
n_pop = len(ppc)
ncols = 3
nrows = int(np.ceil(n_pop / ncols))
fig, axes = plt.subplots(nrows, ncols, figsize=(4.3 * ncols, 4.1 * nrows), layout="constrained", squeeze=False)
for ax, r in zip(axes.ravel(), ppc.itertuples(), strict=False):
    items = ppc_items[r.population]
    items = items.loc[np.isfinite(items["predicted"]) & np.isfinite(items["observed"])]
    raster = len(items) > 2000
    size = 3 if len(items) > 5000 else 8
    ok = items.loc[~items["rest_misfit"]]
    off = items.loc[items["rest_misfit"]]
    ax.scatter(ok["predicted"], ok["observed"], s=size, alpha=0.35, color=OKABE_ITO[0], lw=0, rasterized=raster)
    ax.scatter(off["predicted"], off["observed"], s=size + 4, alpha=0.8, color=OKABE_ITO[5], lw=0, rasterized=raster)
    means = items.loc[items["mean_misfit"]]
    ax.scatter(
        means["predicted"], means["observed"], s=size + 6, marker="x", color="#555555", lw=0.7, rasterized=raster
    )
    both = items[["predicted", "observed"]].to_numpy(dtype=float)
    finite = both[np.isfinite(both)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    detail = (
        f"item-rest misfit {r.item_rest_stronger + r.item_rest_weaker:,} of {r.item_rest_checked:,}"
        if r.item_rest_checked
        else "fractional: item-rest not checked"
    )
    ax.set_title(
        f"{r.population} · {r.model} · {r.verdict}\n{detail}; any misfit {r.items_misfit_share:.1%}",
        fontsize="medium",
    )
    ax.set_xlabel("predicted item-rest correlation")
    ax.set_ylabel("observed item-rest correlation")
    ax.grid(alpha=0.3)
for ax in axes.ravel()[n_pop:]:
    ax.set_visible(False)
fig.suptitle(
    f"Posterior predictive check: item-rest correlations per item (misfit: outside the replications, two-sided "
    f"level {ALPHA:g})"
)
fig.legend(
    handles=[
        Line2D([], [], ls="", marker="o", color=OKABE_ITO[0], alpha=0.6, label="item-rest within its replications"),
        Line2D([], [], ls="", marker="o", color=OKABE_ITO[5], label="item-rest misfit"),
        Line2D([], [], ls="", marker="x", color="#555555", label="proportion-correct misfit"),
        Line2D([], [], color="black", lw=0.8, label="observed = predicted"),
    ],
    loc="outside lower center",
    ncol=4,
    fontsize="small",
    frameon=False,
)
fig.savefig(S.figures / "ppc_item_rest.png", dpi=dpi, bbox_inches="tight")
show(S.figures / "ppc_item_rest.png")
plt.close(fig)
print("wrote", S.figures / "ppc_item_rest.png")
del ppc_items

# %% [markdown]
# ## 2. Multiple choice: 1PL vs 2PL vs 3PL by PSIS-LOO
#
# MMLU-Pro's questions have 10 options. Three categories that span its difficulty (law, among the hardest;
# computer science, in the middle; psychology, among the easiest), a seeded random sample of items from each
# (250 per category in the full mode: 750 items x 29 systems, 21,748 responses; 12 in the fast mode), fitted
# three times:
#
# - **1PL** (Rasch): one discrimination for every item;
# - **2PL**: a discrimination per item (the audit's model);
# - **3PL**: a discrimination and a lower asymptote (guessing) per item, with a Beta prior centred on chance,
#   1 / 10 (irtbayes' default for items with `n_options`: Beta(0.1 x 20, 0.9 x 20)).
#
# All three use the benchmark level of the hierarchy only (each category is its own domain here, so a domain
# level would rest on the same three values as the benchmark level). The full mode samples each with NUTS
# (nutpie) at irtbayes' defaults (4 chains x 1000 draws after 500); fits are saved as `fits/mc_1pl`,
# `fits/mc_2pl`, `fits/mc_3pl` and reused. The subset is sized for a 2-core machine: one chain of each fit,
# measured there at these settings, took about 13 s (1PL), 23 s (2PL) and 137 s (3PL, whose likelihood has no
# fused kernel), so the three fits take about 6-7 minutes. PSIS-LOO estimates each model's expected log predictive density
# for a held-out response (elpd); the difference between two models comes with its standard error, and a
# difference within 2 SE is not a clear preference. Pareto k above 0.7 marks responses where the estimate is
# unreliable; an approximate fit's LOO is approximate too.
#
# `compare_fits` returns PSIS-LOO's elpd, its SE and each model's difference from the best with its SE, unrounded;
# a difference within 2 SE is no clear preference.

# %%
with timer("mc: data"):
    full_mc = datasets.load_dataset(MC_DATASET)
    rng = np.random.default_rng(S.seed)
    categories = full_mc.items["benchmark"].astype(str)
    keep = []
    for cat in MC_CATEGORIES:
        ids = full_mc.item_ids[(categories == cat).to_numpy()]
        if MC_ITEMS is not None and len(ids) > MC_ITEMS:
            ids = pd.Index(sorted(rng.choice(ids.to_numpy(dtype=str), size=MC_ITEMS, replace=False)))
        keep.extend(ids)
    mc = full_mc.subset(items=keep)
    del full_mc
options = sorted(pd.to_numeric(mc.items["n_options"]).unique().tolist())
print(
    f"{MC_DATASET} subset: {mc.n_subjects} systems x {mc.n_items} items ({', '.join(MC_CATEGORIES)}; "
    f"options per item: {options}), {mc.n_responses:,} responses"
)
mc_fits, mc_rows = {}, []
for kind in MC_KINDS:
    with timer(f"mc: fit {kind}"):
        res, loaded = fit_or_load(f"mc_{kind}", mc, S, spec=ModelSpec(kind=kind, hierarchy=MC_HIERARCHY))
    mc_fits[kind.upper()] = res
    d = res.diagnostics
    mc_rows.append(
        {
            "model": kind.upper(),
            "fit": f"mc_{kind}",
            "sampler": fit_label(res),
            "verdict": verdict(res),
            "max_rhat": d.max_rhat,
            "min_ess_bulk": d.min_ess_bulk,
            "divergences": d.divergences,
            "sampling_s": res.sampler.get("wall_time_s"),
            "reused": loaded,
        }
    )
    print(f"{kind.upper()}: {fit_label(res)}, {res.sampler.get('wall_time_s')} s" + (" (saved fit)" if loaded else ""))

# %%
with timer("mc: loo"), warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Pareto k counts are in the table
    loo = compare_fits(mc_fits, mc, n_draws=LOO_DRAWS)


loo_table = loo.reset_index(names="model").merge(pd.DataFrame(mc_rows), on="model")
loo_table = loo_table.sort_values("elpd", ascending=False, ignore_index=True)
n_obs = mc.n_responses
loo_table["within_2se"] = (loo_table["elpd_diff"].abs() <= 2 * loo_table["dse"]) & (loo_table["rank"] != 0)
loo_table = loo_table.assign(
    dataset=MC_DATASET,
    categories="+".join(MC_CATEGORIES),
    subjects=mc.n_subjects,
    items=mc.n_items,
    responses=n_obs,
    loo_draws=LOO_DRAWS if LOO_DRAWS is not None else "all",
)
loo_table.to_csv(S.out / "loo_comparison.csv", index=False)
with pd.option_context("display.width", 220, "display.precision", 2):
    cols = ["model", "rank", "elpd", "se", "p", "elpd_diff", "dse", "weight", "n_high_pareto_k"]
    print(loo_table[[*cols, "verdict"]].to_string(index=False))
print("wrote", S.out / "loo_comparison.csv")

# %% [markdown]
# ### What LOO says
#
# Generated from the comparison. elpd_diff is how much worse a model predicts the held-out
# responses than the best model, summed over responses; dse is its standard error.

# %%
best = loo_table.iloc[0]
print(
    f"PSIS-LOO prefers the {best['model']} ({best['verdict']}) on {mc.n_subjects} systems x {mc.n_items} "
    f"MMLU-Pro items: elpd {best['elpd']:.1f} (SE {best['se']:.1f}; {best['elpd'] / n_obs:.3f} per "
    "response)."
)
for r in loo_table.iloc[1:].itertuples():
    ratio = abs(r.elpd_diff) / r.dse if r.dse > 0 else np.inf
    clear = "within 2 SE: no clear preference" if r.within_2se else f"{ratio:.1f} SE: a clear preference"
    print(
        f"  {r.model} ({r.verdict}): elpd {abs(r.elpd_diff):.1f} lower than the {best['model']} "
        f"(SE of the difference {r.dse:.1f}; {clear})."
    )
for r in loo_table.loc[loo_table["n_high_pareto_k"] > 0].itertuples():
    print(
        f"  {r.model}: {r.n_high_pareto_k:,} of {n_obs:,} responses have Pareto k > 0.7: its PSIS-LOO estimate is "
        "unreliable there."
    )
not_clean = loo_table.loc[loo_table["verdict"] != "converged"]
if len(not_clean):
    print(
        "Fits that are not NUTS fits passing their checks: "
        + ", ".join(f"{r.model} ({r.verdict})" for r in not_clean.itertuples())
        + "; their elpd values share that caveat."
    )
# the 3PL's lower asymptotes against their prior
if "3PL" in mc_fits:
    g = mc_fits["3PL"].posterior["guessing"].stack(sample=("chain", "draw")).transpose("sample", ...).values
    g_mean, g_sd = g.mean(axis=0), g.std(axis=0)
    g_lo, g_hi = np.quantile(g, [(1 - CI_PROB) / 2, (1 + CI_PROB) / 2], axis=0)
    chance = 1 / pd.to_numeric(mc.items["n_options"]).to_numpy(dtype=float)
    kappa = ModelSpec().priors.guessing_concentration
    prior_sd = np.sqrt(chance * (1 - chance) / (kappa + 1))
    shrink = float(np.median(g_sd / prior_sd))
    p_lo, p_hi = stats.beta.ppf([(1 - CI_PROB) / 2, (1 + CI_PROB) / 2], chance[0] * kappa, (1 - chance[0]) * kappa)
    print(
        f"3PL ({verdict(mc_fits['3PL'])}) guessing, posterior means over {len(g_mean)} items: median "
        f"{np.median(g_mean):.3f}, middle 90% of items [{np.quantile(g_mean, 0.05):.3f}, "
        f"{np.quantile(g_mean, 0.95):.3f}] (chance {np.median(chance):.2f}; prior {CI_PROB:.0%} interval "
        f"[{p_lo:.3f}, {p_hi:.3f}]). {int((g_lo > chance).sum())} items credibly above chance and "
        f"{int((g_hi < chance).sum())} credibly below ({CI_PROB:.0%} intervals). Posterior sd / prior sd: median "
        f"{shrink:.2f} ("
        + ("the data say little beyond the prior for most items" if shrink > 0.8 else "the data narrow the prior")
        + ")."
    )
del mc_fits

# %% [markdown]
# ## 3. Information curves and saturation
#
# Per population and benchmark, on a grid of 81 abilities spanning the systems' abilities and the items'
# difficulties (1 logit beyond both, within [-8, 8]): test information I(θ) = Σ_i I_i(θ) (2PL:
# I_i = a_i² P_i (1 − P_i); the 1PL with its shared discrimination) per posterior draw (200 draws, 100 for
# populations of more than 2.5 million responses; items taken in chunks so that no (draw x grid x item) array
# exceeds about 2 million elements), summarised by its mean and 90% interval; where it peaks (the median of the
# per-draw peaks, with their 90% interval) and the share of the benchmark's systems whose ability (posterior
# mean) lies below that peak. Per draw, over the systems that took the benchmark: **saturation**, the share of
# its items that the system with the highest ability in that draw answers correctly with P ≥ 0.9, and the share
# of its items with difficulty below the lowest such system's ability. A benchmark is called saturated when its
# saturation's 90% interval lies above 0.5. MMLU-Pro is measured as a whole and per category (its categories are
# sub-benchmarks, as in notebook 3). Colours follow domains, the same in every figure
# (`irtbayes.core.plots.domain_palette` over every population's domains, as in notebook 3); benchmarks of one domain
# differ by line style.

# %%
# every domain of every population (and of benchmarks whose categories carry their own), as in notebook 3
all_domains = sorted({d for k in kept.values() for d in k["domain"]} | set(BENCHMARK_DOMAIN.values()))
colours, markers = domain_palette(all_domains)
STYLES = ("-", "--", ":", "-.")
q_lo, q_hi = (1 - CI_PROB) / 2, (1 + CI_PROB) / 2


def scope_measures(dr, idx, takers, grid):
    """Test information (draw, grid) of the items ``idx``, and per draw the share of them that the best of the
    ``takers`` solves with P >= P_SOLVED and the share with difficulty below the lowest taker's ability. Items are
    taken in chunks so that no (draw x grid x item) array exceeds about CHUNK elements."""
    theta = dr["ability"][:, takers]
    best, worst = theta.max(axis=1)[:, None], theta.min(axis=1)[:, None]
    n_draw = theta.shape[0]
    info, solved, below = np.zeros((n_draw, len(grid))), np.zeros(n_draw), np.zeros(n_draw)
    step = max(1, CHUNK // (n_draw * len(grid)))
    for start in range(0, len(idx), step):
        part = idx[start : start + step]
        b = dr["difficulty"][:, part]
        a = None if dr["discrimination"] is None else dr["discrimination"][:, part]
        c = None if dr["guessing"] is None else dr["guessing"][:, part]
        info += test_information(grid, b, a, c)
        p = 1 / (1 + np.exp(-(1.0 if a is None else a) * (best - b)))
        if c is not None:
            p = c + (1 - c) * p
        solved += (p >= P_SOLVED).sum(axis=1)
        below += (b < worst).sum(axis=1)
    return info, solved / len(idx), below / len(idx)


sat_rows, curves = [], {}
for name, k in kept.items():
    with timer(f"{name}: information"):
        dr = k["draws"]
        b_mean = dr["difficulty"].mean(axis=0)
        lo = np.floor(min(k["ability_mean"].min(), np.quantile(b_mean, 0.02)) - 1.0)
        hi = np.ceil(max(k["ability_mean"].max(), np.quantile(b_mean, 0.98)) + 1.0)
        grid = np.linspace(max(lo, -8.0), min(hi, 8.0), GRID_POINTS)
        # scopes: each benchmark; for a benchmark whose categories are the population's benchmarks, the whole
        # benchmark first and its categories as sub-benchmarks (as notebook 3 audits them)
        whole = CATEGORIES_OF.get(name)
        scopes = []
        if whole:
            scopes.append((whole, "", BENCHMARK_DOMAIN.get(whole, ""), np.arange(len(k["benchmark"])), k["takers_all"]))
        for bench in dict.fromkeys(k["benchmark"]):
            idx = np.flatnonzero(k["benchmark"] == bench)
            benchmark, sub = (whole, bench) if whole else (bench, "")
            scopes.append((benchmark, sub, k["domain"][idx[0]], idx, k["takers"][bench]))
        curves[name] = {"grid": grid, "rows": []}
        for benchmark, sub, domain, idx, takers in scopes:
            info, solved, below = scope_measures(dr, idx, takers, grid)
            info_mean = info.mean(axis=0)
            peak_draw = grid[np.argmax(info, axis=1)]
            peak = float(np.median(peak_draw))
            abilities = k["ability_mean"][takers]
            curves[name]["rows"].append(
                {
                    "label": sub or benchmark,
                    "whole": bool(whole) and not sub,
                    "domain": domain,
                    "mean": info_mean,
                    "low": np.quantile(info, q_lo, axis=0),
                    "high": np.quantile(info, q_hi, axis=0),
                    "peak": peak,
                }
            )
            sat_rows.append(
                {
                    "population": name,
                    "benchmark": benchmark,
                    "sub_benchmark": sub,
                    "level": "sub-benchmark" if sub else "benchmark",
                    "domain": domain,
                    "items": len(idx),
                    "systems": len(takers),
                    "saturation_mean": solved.mean(),
                    "saturation_ci_low": np.quantile(solved, q_lo),
                    "saturation_ci_high": np.quantile(solved, q_hi),
                    "below_lowest_mean": below.mean(),
                    "below_lowest_ci_low": np.quantile(below, q_lo),
                    "below_lowest_ci_high": np.quantile(below, q_hi),
                    "info_peak_theta": peak,
                    "info_peak_theta_ci_low": np.quantile(peak_draw, q_lo),
                    "info_peak_theta_ci_high": np.quantile(peak_draw, q_hi),
                    "info_peak_mean": float(info_mean.max()),
                    "peak_at_grid_edge": peak <= grid[0] or peak >= grid[-1],
                    "systems_below_peak": float((abilities < peak).mean()),
                    "ability_min": float(abilities.min()),
                    "ability_max": float(abilities.max()),
                    "saturated": bool(np.quantile(solved, q_lo) > SATURATED),
                    "model": k["model"],
                    "sampler": k["sampler"],
                    "verdict": k["verdict"],
                    "draws": info.shape[0],
                    "p_solved": P_SOLVED,
                    "ci_prob": CI_PROB,
                }
            )
sat = pd.DataFrame(sat_rows)
sat.to_csv(S.out / "information_saturation.csv", index=False)
shown = pd.DataFrame(
    {
        "population": [tagged(p, v) for p, v in zip(sat["population"], sat["verdict"], strict=True)],
        "benchmark": [
            shorten(f"{r.benchmark}/{r.sub_benchmark}" if r.sub_benchmark else r.benchmark, 28)
            for r in sat.itertuples()
        ],
        "domain": sat["domain"],
        "items": sat["items"],
        "saturation": [ci(r.saturation_mean, r.saturation_ci_low, r.saturation_ci_high) for r in sat.itertuples()],
        "below lowest": [
            ci(r.below_lowest_mean, r.below_lowest_ci_low, r.below_lowest_ci_high) for r in sat.itertuples()
        ],
        "info peak θ": [
            ci(r.info_peak_theta, r.info_peak_theta_ci_low, r.info_peak_theta_ci_high, 1) for r in sat.itertuples()
        ],
        "systems below peak": sat["systems_below_peak"].map(lambda v: f"{v:.0%}"),
    }
)
with pd.option_context("display.width", 220, "display.max_rows", 200):
    print(shown.to_string(index=False))
print("wrote", S.out / "information_saturation.csv")

# %% [markdown]
# ### What the curves say
#
# Generated from the table above. A benchmark is named population:benchmark (population:benchmark/category for
# a category of a benchmark), followed by its fit's verdict when that is not a converged NUTS fit.

# %%
sat["label"] = [
    f"{r.population}:{r.benchmark}"
    + (f"/{r.sub_benchmark}" if r.sub_benchmark else "")
    + ("" if r.verdict == "converged" else f" ({r.verdict})")
    for r in sat.itertuples()
]


def listed(labels, k=8):
    labels = list(labels)
    return ", ".join(labels[:k]) + (f" and {len(labels) - k} more" if len(labels) > k else "")


saturated = sat.loc[sat["saturated"]].sort_values("saturation_mean", ascending=False)
print(
    f"{len(saturated)} of {len(sat)} benchmarks and categories are saturated (the {CI_PROB:.0%} interval of the "
    f"share of items the best system solves with P >= {P_SOLVED:g} lies above {SATURATED:g})"
    + (
        ": "
        + listed(
            f"{r.label} {ci(r.saturation_mean, r.saturation_ci_low, r.saturation_ci_high)}"
            for r in saturated.itertuples()
        )
        if len(saturated)
        else "."
    )
)
unsat = sat.loc[sat["saturation_ci_high"] < SATURATED]
between = len(sat) - len(saturated) - len(unsat)
print(
    f"{len(unsat)} {'is' if len(unsat) == 1 else 'are'} credibly not saturated (interval below {SATURATED:g}); for {between} the interval "
    f"straddles {SATURATED:g}."
)
top_sat = sat.sort_values("saturation_mean", ascending=False).iloc[0]
print(
    f"Highest saturation: {top_sat['label']}, "
    f"{ci(top_sat['saturation_mean'], top_sat['saturation_ci_low'], top_sat['saturation_ci_high'])}."
)
floor = sat.loc[sat["below_lowest_ci_low"] > SATURATED]
print(
    f"{len(floor)} benchmarks have most of their items (interval above {SATURATED:g}) easier than their weakest "
    "system" + (": " + listed(floor["label"]) if len(floor) else ".")
)
for name, group in sat.groupby("population", sort=False):
    tag = group["verdict"].iloc[0]
    short = [f"{r.benchmark}/{r.sub_benchmark}" if r.sub_benchmark else r.benchmark for r in group.itertuples()]
    group = group.assign(short=short)
    under = group.loc[group["systems_below_peak"] == 0, "short"]
    over = group.loc[group["systems_below_peak"] == 1, "short"]
    inside = group.loc[group["systems_below_peak"].between(0, 1, inclusive="neither")]
    parts = []
    if len(under):
        parts.append(f"below every system for {len(under)} ({listed(under, 6)})")
    if len(over):
        parts.append(f"above every system for {len(over)} ({listed(over, 6)})")
    if len(inside):
        parts.append(
            f"among the systems for {len(inside)} (share of systems below the peak "
            + (
                f"{inside['systems_below_peak'].iloc[0]:.0%}"
                if len(inside) == 1
                else f"{inside['systems_below_peak'].min():.0%}-{inside['systems_below_peak'].max():.0%}"
            )
            + ")"
        )
    order = group.sort_values("info_peak_theta")
    spread = (
        f"; peaks range from {order['info_peak_theta'].iloc[0]:.1f} ({order['short'].iloc[0]}) to "
        f"{order['info_peak_theta'].iloc[-1]:.1f} ({order['short'].iloc[-1]})"
        if len(group) > 1
        else f"; the peak is at {order['info_peak_theta'].iloc[0]:.1f}"
    )
    edge = int(group["peak_at_grid_edge"].sum())
    print(
        f"{name} ({tag}): information peaks "
        + "; ".join(parts)
        + f". Systems' abilities span [{group['ability_min'].min():.1f}, {group['ability_max'].max():.1f}]"
        + spread
        + "."
        + (f" {edge} peak(s) lie at the edge of the grid (the peak is there or further out)." if edge else "")
    )

# %% [markdown]
# ### Figures: information over the ability scale, with the systems' abilities
#
# One figure per population, `figures/information_<population>.png`: test information per benchmark (log
# scale; bands = 90% intervals when the population has at most 8 curves; marker = the median of the per-draw
# peaks), coloured by domain, and below it the distribution of the systems' abilities (posterior means). For
# MMLU-Pro the whole benchmark is the thick line and its categories the thin ones.

# %%
for name, cv in curves.items():
    k = kept[name]
    grid, rows = cv["grid"], cv["rows"]
    width = 8.5 + (3.5 if len(rows) > 20 else 0.0)  # room for a two-column legend
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(width, 5.8), sharex=True, height_ratios=(3, 1), layout="constrained"
    )
    seen: dict[str, int] = {}
    handles = []
    peak_max = max(float(r["mean"].max()) for r in rows)
    floor_y = max(peak_max * 1e-4, min(float(r["mean"].min()) for r in rows) / 2)
    bands = len(rows) <= 8
    # the whole benchmark first, then by domain, so the legend groups a domain's benchmarks
    for r in sorted(rows, key=lambda r: (not r["whole"], r["domain"], r["label"])):
        d = r["domain"]
        style = "-" if r["whole"] else STYLES[seen.get(d, 0) % len(STYLES)]
        seen[d] = seen.get(d, 0) + (0 if r["whole"] else 1)
        colour, lw = colours[d], (2.6 if r["whole"] else 1.4)
        top.plot(grid, r["mean"], color=colour, ls=style, lw=lw)
        if bands:
            top.fill_between(grid, r["low"], r["high"], color=colour, alpha=0.15, lw=0)
        top.plot([r["peak"]], [np.interp(r["peak"], grid, r["mean"])], marker=markers[d], color=colour, ms=5, ls="")
        label = shorten(r["label"], 22) + (" (all categories)" if r["whole"] else "")
        handles.append(Line2D([], [], color=colour, ls=style, lw=lw, marker=markers[d], ms=4, label=f"{label} · {d}"))
    top.set_yscale("log")
    top.set_ylim(floor_y, peak_max * 3)
    top.set_ylabel("test information")
    top.grid(alpha=0.3)
    top.set_title(
        f"{name}: {k['model']}, {k['sampler']}\ntest information per benchmark"
        + (f" ({CI_PROB:.0%} bands)" if bands else "")
        + "; marker = peak",
        fontsize="medium",
    )
    top.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="x-small" if len(handles) > 14 else "small",
        frameon=False,
        ncol=2 if len(handles) > 20 else 1,
    )
    ab = k["ability_mean"]
    bottom.hist(ab, bins=int(np.clip(len(ab) // 3, 8, 40)), color="grey", alpha=0.7)
    if len(ab) <= 200:
        bottom.plot(ab, np.zeros(len(ab)), "|", color="black", ms=8)
    bottom.set_ylabel("systems")
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel(f"ability (logits): the {len(ab):,} systems' posterior means")
    bottom.set_xlim(grid[0], grid[-1])
    bottom.grid(alpha=0.3)
    path = S.figures / f"information_{name}.png"
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    show(path)
    plt.close(fig)
    print("wrote", path)

# %% [markdown]
# ## Timing
#
# Seconds per step in this run (a saved fit costs only its loading).

# %%
times = timer.table()
print(times.to_string(index=False))
times.to_csv(S.out / "timings_06_model_checks.csv", index=False)

# %% [markdown]
# ## Versions

# %%
print(versions())
