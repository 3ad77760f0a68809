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
# # 1. A tour of the data
#
# Every analysis in these notebooks runs on real item-level results: which system answered which item, and
# whether it got it right. This notebook says what each registered source is (who the subjects are, what the
# items are, how a response was scored), counts subjects, items and missing cells per benchmark, lists the
# items that every subject answered the same way (they carry no information about ability), and draws the
# distribution of item accuracies per benchmark.
#
# Everything below is read through `irtbayes.data.registry`. The external sources are read from the folder named by
# `IRTBAYES_DATA_DIR`.

# %% tags=["parameters"]


import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import POPULATIONS, Timer, settings, show, versions

from irtbayes.core.plots import OKABE_ITO, domain_colours, shorten
from irtbayes.data import registry as datasets

S = settings()
timer = Timer()
print(S.describe())
print("data folder:", S.data_dir)

# %% [markdown]
# ## The registry
#
# One row per registered data set: its population of subjects, its size as loaded with default options, its
# domains (the registry's one vocabulary of domain labels), licence and origin. `available` says whether it can
# be loaded from this machine.

# %%
registry = datasets.list_datasets()
with pd.option_context("display.width", 200, "display.max_colwidth", 70):
    print(registry[["title", "population", "n_subjects", "n_items", "domains", "licence", "available"]].to_string())

# %% [markdown]
# ## Per benchmark: counts, missingness, accuracy
#
# For each population that the audit calibrates (notebook 3), the full data set is loaded and summarised per
# benchmark: items, subjects with at least one response, the share of (subject, item) cells without a
# response, the mean response (accuracy; for XSTest a partial refusal counts 0.5), and the items that every
# subject answered identically. The counts here are those of the complete data sets; notebook 3 says which
# parts of the two largest are calibrated. The Open LLM Leaderboard rows count the 1,989 systems with results on all
# five benchmarks, the population notebook 3 draws from.

# %%
rows = []
item_acc = []
subject_acc = {}
scoring = {}
with timer("load and summarise"):
    for pop in POPULATIONS:
        entry = registry.loc[pop.dataset]
        if not entry["available"]:
            print(f"{pop.dataset}: not available here ({entry['folder']}); skipped")
            continue
        data = datasets.load_dataset(pop.dataset, **dict(pop.options))
        scoring[pop.dataset] = (entry["title"], entry["population"], data.is_binary)
        codes_i, codes_s, y = data.item_codes, data.subject_codes, data.values
        subject_acc[pop.name] = np.bincount(codes_s, weights=y, minlength=data.n_subjects) / np.bincount(
            codes_s, minlength=data.n_subjects
        )
        n_resp_item = np.bincount(codes_i, minlength=data.n_items)
        acc_item = np.bincount(codes_i, weights=y, minlength=data.n_items) / np.maximum(n_resp_item, 1)
        # an item is uninformative when its smallest and largest response coincide
        lo = np.full(data.n_items, np.inf)
        hi = np.full(data.n_items, -np.inf)
        np.minimum.at(lo, codes_i, y)
        np.maximum.at(hi, codes_i, y)
        constant = lo == hi
        bench = data.items["benchmark"].astype(str).to_numpy()
        domain = data.items["domain"].astype(str).to_numpy()
        for b in dict.fromkeys(bench):
            mask = bench == b
            subj = np.unique(codes_s[mask[codes_i]])
            n_cells = mask.sum() * data.n_subjects
            rows.append(
                {
                    "population": pop.name,
                    "benchmark": b,
                    "domain": domain[mask][0],
                    "items": int(mask.sum()),
                    "subjects": len(subj),
                    "responses": int(n_resp_item[mask].sum()),
                    "missing_share": 1 - n_resp_item[mask].sum() / n_cells,
                    "accuracy": float(np.average(acc_item[mask], weights=n_resp_item[mask])),
                    "all_correct": int((constant & (lo == 1) & mask).sum()),
                    "all_wrong": int((constant & (lo == 0) & mask).sum()),
                    "constant_other": int((constant & (lo != 0) & (lo != 1) & mask).sum()),
                }
            )
        item_acc.append(pd.DataFrame({"population": pop.name, "benchmark": bench, "domain": domain, "acc": acc_item}))
tour = pd.DataFrame(rows)
tour["uninformative_share"] = (tour["all_correct"] + tour["all_wrong"] + tour["constant_other"]) / tour["items"]
tour.to_csv(S.out / "data_tour.csv", index=False)
with pd.option_context("display.width", 200, "display.max_rows", 100, "display.precision", 3):
    print(tour.to_string(index=False))

# %% [markdown]
# ## How responses were scored
#
# The registry's title of each source says what a 1 means; responses in [0, 1] that are not all 0/1 are kept
# as fractional scores (the model then uses the fractional-logit quasi-likelihood).

# %%
for name, (title, population, binary) in scoring.items():
    print(
        f"- {name}: {title}. Subjects: {population}. Responses: {'0/1' if binary else 'fractional scores in [0, 1]'}."
    )

# %% [markdown]
# ## What the counts say
#
# The sentences below are generated from the table above.

# %%
n_bench = len(tour)
n_domain = tour["domain"].nunique()
print(
    f"{n_bench} benchmarks in {n_domain} domains ({', '.join(sorted(tour['domain'].unique()))}) across "
    f"{tour['population'].nunique()} populations of systems."
)
miss = tour.sort_values("missing_share", ascending=False).iloc[0]
print(
    f"The most incomplete benchmark is {miss['population']}:{miss['benchmark']} with {miss['missing_share']:.1%} of "
    f"its cells missing; {int((tour['missing_share'] == 0).sum())} benchmarks are complete."
)
unin = tour.sort_values("uninformative_share", ascending=False).iloc[0]
total_unin = int((tour["all_correct"] + tour["all_wrong"] + tour["constant_other"]).sum())
print(
    f"{total_unin} items of {int(tour['items'].sum())} were answered identically by every subject; the largest share "
    f"is in {unin['population']}:{unin['benchmark']} ({unin['uninformative_share']:.1%}: {unin['all_correct']} solved "
    f"by all, {unin['all_wrong']} by none). Such items say nothing about how the subjects differ: the data bound "
    "their difficulty on one side only (below every subject's ability, or above it), and the prior does the rest."
)
easy = tour.sort_values("accuracy").iloc[[0, -1]]
print(
    f"Mean accuracy ranges from {easy['accuracy'].iloc[0]:.1%} ({easy['population'].iloc[0]}:"
    f"{easy['benchmark'].iloc[0]}) to {easy['accuracy'].iloc[1]:.1%} ({easy['population'].iloc[1]}:"
    f"{easy['benchmark'].iloc[1]})."
)

# %% [markdown]
# ## Item accuracy per benchmark
#
# One box per benchmark: the spread of its items' mean responses. A box crowded at 1 (or 0) means most of the
# benchmark's items are solved by (almost) every system (or by none): such a benchmark separates the systems
# only through its few middling items.

# %%
acc = pd.concat(item_acc, ignore_index=True)
acc["label"] = acc["population"] + ":" + acc["benchmark"] + " · " + acc["domain"]
labels = list(dict.fromkeys(acc["label"]))
colours = domain_colours(acc["domain"])
fig, ax = plt.subplots(figsize=(7.5, max(4.0, 0.2 * len(labels) + 1.2)), layout="constrained")
groups = [acc.loc[acc["label"] == lab, "acc"].to_numpy() for lab in labels]
box = ax.boxplot(groups, orientation="horizontal", widths=0.6, patch_artist=True, showfliers=False)
for patch, lab in zip(box["boxes"], labels, strict=True):
    patch.set_facecolor(colours[str(acc.loc[acc["label"] == lab, "domain"].iloc[0])])
    patch.set_alpha(0.7)
ax.set_yticks(range(1, len(labels) + 1), [shorten(lab, 44) for lab in labels], fontsize="x-small")
ax.invert_yaxis()
ax.set_xlabel("item accuracy (mean response over subjects)")
ax.set_title("Distribution of item accuracy per benchmark (full data sets)")
handles = [plt.Line2D([], [], color=c, lw=6, alpha=0.7, label=d) for d, c in colours.items()]
ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
ax.grid(axis="x", alpha=0.3)
fig.savefig(S.figures / "item_accuracy.png", dpi=80 if S.fast else 130)
show(S.figures / "item_accuracy.png")
plt.close(fig)
print("wrote", S.figures / "item_accuracy.png")

# %% [markdown]
# ## Subjects' accuracy per population
#
# A population whose subjects span a wide range of accuracy gives the abilities, and so the difficulty scale,
# a wide span; a population of near-identical systems pins down little.

# %%
with timer("subject accuracy"):
    fig, axes = plt.subplots(1, len(POPULATIONS), figsize=(2.2 * len(POPULATIONS), 2.8), layout="constrained")
    for k, (pop, ax) in enumerate(zip(POPULATIONS, np.atleast_1d(axes), strict=True)):
        if pop.name not in subject_acc:
            ax.set_visible(False)
            continue
        s_acc = subject_acc[pop.name]
        ax.hist(s_acc, bins=min(30, max(5, len(s_acc) // 3)), color=OKABE_ITO[k % len(OKABE_ITO)])
        ax.set_title(f"{pop.name} (n={len(s_acc)})", fontsize="small")
        ax.set_xlabel("subject accuracy", fontsize="small")
    fig.savefig(S.figures / "subject_accuracy.png", dpi=80 if S.fast else 130)
    show(S.figures / "subject_accuracy.png")
    plt.close(fig)
print("wrote", S.figures / "subject_accuracy.png")


# %% [markdown]
# ## Timing and versions

# %%
print(timer.table().to_string(index=False))
print(versions())
