"""Evaluation on a few items, side by side: held-out systems scored by each method against their truth.

For each data set and each split of its systems (``random``: a random quarter held out, seeded; ``order``: the
last quarter in the data's order held out; ``top``: the quarter with the highest raw accuracy held out, see below),
a bank is fitted to the training systems and every method of
:mod:`irtbayes.evaluating.study` scores the held-out systems at K items per benchmark: posterior selection with
the posterior score, random items with the posterior score and with their plain mean, tinyBenchmarks-style
anchors with p-IRT, and adaptive tests at the same and at half the budget. Per benchmark and for ``all`` the
study reports the mean absolute error of the full-benchmark accuracy, the coverage and width of the 90%
intervals and Spearman's rank correlation over the held-out systems.

The ``top`` split holds out the strongest systems, ranked by their raw accuracy (mean response over every item
they answered; ties in the data's order), not by a simulation's true abilities, so that it works on real data
too. The bank is then fitted to the weaker systems only and the held-out ones are scored by extrapolation, the
case that :func:`~irtbayes.evaluating.prediction.predict_scores` warns about ("BEYOND THE BANK"). For the methods
scored by the posterior (``posterior``, ``random+posterior``) every row gives ``beyond_bank``, how many of the
held-out systems that warning names when they are scored from the method's items at that K, and for every method
``beyond_bank_all_items``, how many it names when they are scored from all the bank's items they answered. The
summary keeps the ``top`` split apart (column ``splits``) and pools the others.

Data sets (``--datasets``):

- ``openllm_tinybench``, ``mmlu_pro``, ``nlu_vania2021``: the real data (the external ones from
  ``$IRTBAYES_DATA_DIR`` or ``../shared/data``, converted once into a temporary folder);
- ``sim_leaderboard``: a leaderboard-sized simulation (1,200 systems, 4 benchmarks of 500 items, 2PL);
- ``sim_leaderboard_large``: the same with benchmarks of 1,500 items, the size of the leaderboard's ARC, GSM8K and
  WinoGrande (1,172-1,319 items). At K = 100 of 500 items the 400 unanswered items' own answers alone leave a
  mean absolute error of 0.0136 whatever the method (with the true item curves: 0.8 x sqrt(400 x mean p(1-p)) / 500,
  mean p(1-p) 0.18 in these simulations); of 1,500 items, 0.0081;
- ``family:<name>``: one data set of a design family of :data:`irtbayes.data.designs.FAMILIES` per seed.

Rows go to the CSV as each data set and split finishes; ``--fits DIR`` keeps the banks' fits and reuses them.

Usage::

    OMP_NUM_THREADS=2 .venv/bin/python scripts/evaluation_study.py --csv notebooks/results/evaluation_study.csv \\
        --fits /tmp/eval_fits
    .venv/bin/python scripts/evaluation_study.py --datasets sim_leaderboard --ks 10 --csv /tmp/look.csv

The design families, several seeds into one CSV (a run skips the data sets, splits and seeds already in it)::

    for S in 1 2 3 4; do OMP_NUM_THREADS=1 .venv/bin/python scripts/evaluation_study.py --datasets \\
        family:one_uniform family:leaderboard family:skewed_abilities family:heavy_tails family:edge_holes \\
        family:missing_not_at_random family:wide_spread family:few_systems family:few_items --ks 10 30 \\
        --methods posterior random+posterior random+mean anchors+pirt --draws 100 --seed $S \\
        --csv notebooks/results/evaluation_families.csv; done

The strongest quarter held out (scored by extrapolation) beside a random split of the same data sets::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/evaluation_study.py --datasets family:leaderboard \\
        family:skewed_abilities family:wide_spread --splits top random --ks 10 30 --methods posterior \\
        random+posterior --draws 100 --seed 1 --csv notebooks/results/evaluation_beyond_bank.csv
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASETS = (
    "openllm_tinybench",
    "mmlu_pro",
    "nlu_vania2021",
    "sim_leaderboard",
    "family:leaderboard",
    "family:skewed_abilities",
    "family:missing_not_at_random",
)
#: Data sets per row of the figure (each with its error and coverage panels); more wrap into further rows.
FIGURE_COLUMNS = 5
#: tinyBenchmarks' published mean absolute error at 100 items per benchmark (gp-IRT, each scenario alone).
TINYBENCHMARKS_MAE_100 = 0.015

log = logging.getLogger("evaluation_study")


def external_root() -> Path:
    """The converted external data sets (converting the upstream files of ../shared/data once if needed)."""
    root = Path(os.environ.get("IRTBAYES_DATA_DIR") or REPO.parent / "shared" / "data")
    if (root / "openllm_tinybench" / "dataset.json").is_file():
        return root
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "irtbayes-data"
    sys.path.insert(0, str(REPO / "scripts"))
    from convert_data import convert

    for name in ("openllm_tinybench", "nlu_vania2021"):
        if not (cache / name / "dataset.json").is_file():
            log.info("converting %s from %s into %s", name, root, cache)
            convert(name, root, cache)
    return cache


def load(name: str, seed: int):
    """The data set ``name`` (see the module docstring) and a one-line description."""
    import irtbayes as irt
    from irtbayes.data.designs import FAMILIES, simulate_design

    if name == "sim_leaderboard":
        data, _ = irt.simulate_responses(1200, 2000, n_benchmarks=4, missing=0.0, seed=seed)
        return data, "simulated 2PL: 1,200 systems x 4 benchmarks of 500 items, no missing cells"
    if name == "sim_leaderboard_large":
        data, _ = irt.simulate_responses(1200, 6000, n_benchmarks=4, missing=0.0, seed=seed)
        return data, "simulated 2PL: 1,200 systems x 4 benchmarks of 1,500 items, no missing cells"
    if name.startswith("family:"):
        family = FAMILIES[name.split(":", 1)[1]]
        design = simulate_design(family, seed=seed)
        return design.data, f"design family {family.name}, seed {seed}"
    if name == "mmlu_pro":
        return irt.load_dataset(name), "MMLU-Pro, 29 LLMs x 12,032 items"
    return irt.load_dataset(name, root=external_root()), name


def fit_bank(data, name: str, split: str, train: list[str], args: argparse.Namespace):
    """The bank's fit on the training systems (reused from ``--fits``)."""
    import irtbayes as irt

    folder = (
        None if args.fits is None else Path(args.fits) / f"{name.replace(':', '_')}-{split}-{args.seed}-{args.sampler}"
    )
    if folder is not None and (folder / "card.json").is_file():
        return irt.load_fit(folder), 0.0
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the approximate tier says so in every output anyway
        fit = irt.fit(data.subset(subjects=train), sampler=args.sampler, seed=args.seed, progress=False)
    seconds = time.perf_counter() - start
    if folder is not None:
        irt.save_fit(fit, folder, overwrite=True)
    return fit, seconds


def split_systems(data, split: str, seed: int) -> tuple[list[str], list[str]]:
    """(training, held-out) systems: ``random`` and ``order`` as :func:`~irtbayes.evaluating.study.split_subjects`
    makes them; ``top`` holds out as many systems as they do, those of the highest raw accuracy (the mean response
    over every item a system answered; ties in the data's order), kept in the data's order."""
    from irtbayes.evaluating.study import split_subjects

    subjects = [str(s) for s in data.subject_ids]
    if split != "top":
        return split_subjects(subjects, split, seed=seed)
    n_test = len(split_subjects(subjects, "order", seed=seed)[1])  # the same share as the other splits
    accuracy = data.long_frame().groupby("subject", sort=False)["response"].mean().reindex(subjects)
    strongest = set(accuracy.sort_values(ascending=False, kind="stable").index[:n_test])
    return [s for s in subjects if s not in strongest], [s for s in subjects if s in strongest]


def flagged_beyond_bank(bank, y: np.ndarray, mask: np.ndarray, subjects: list[str], seed: int) -> int:
    """How many of the systems :func:`~irtbayes.evaluating.prediction.beyond_the_bank` names (the "BEYOND THE
    BANK" warning of ``predict_scores``) when they are scored from the items of ``mask`` (J, N)."""
    import xarray as xr

    from irtbayes.evaluating.prediction import ability_draws, beyond_the_bank

    theta = ability_draws(bank, y, mask, np.random.default_rng(seed))  # (S, J), as the scores draw them
    ability = xr.DataArray(theta[None], dims=("chain", "draw", "subject"), coords={"subject": subjects})
    # the warning lists at most five names per side, so each system is asked about alone
    return sum(bool(beyond_the_bank(bank, ability.isel(subject=[j]))) for j in range(len(subjects)))


def beyond_bank_counts(bank, y: np.ndarray, w: np.ndarray, subjects: list[str], ks, args) -> pd.DataFrame:
    """Per method scored by the posterior and K, ``beyond_bank``: the held-out systems flagged when scored from the
    study's items for that method (the same items as :func:`~irtbayes.evaluating.study.compare_methods` gives
    them); one row per method and K."""
    from irtbayes.evaluating.selection import select_items
    from irtbayes.evaluating.study import _random_mask

    rows = []
    for k in ks:
        for method in ("posterior", "random+posterior"):
            if method not in args.methods:
                continue
            if method == "posterior":
                chosen = np.zeros(bank.n_items)
                chosen[bank.columns(select_items(bank, per_benchmark=k).item_ids)] = 1.0
                mask = w * chosen[None, :]
            else:  # the study's random items: the same generator, seeded alike
                mask = _random_mask(bank, w, k, np.random.default_rng(args.seed + k))
            rows.append(
                {"method": method, "k": k, "beyond_bank": flagged_beyond_bank(bank, y, mask, subjects, args.seed)}
            )
    return pd.DataFrame(rows, columns=["method", "k", "beyond_bank"]).astype({"k": "int64", "beyond_bank": "float64"})


def run_one(name: str, split: str, args: argparse.Namespace) -> pd.DataFrame:
    from irtbayes.evaluating.bank import ItemBank
    from irtbayes.evaluating.crossfit import CrossFit, cross_fit_applies
    from irtbayes.evaluating.study import compare_methods

    data, what = load(name, args.seed)
    train, test = split_systems(data, split, args.seed)
    fit, fit_seconds = fit_bank(data, name, split, train, args)
    deviations = False if args.one_ability else data.subset(subjects=train)
    bank = ItemBank.from_fit(fit, n_draws=args.draws, prior=args.prior, data=deviations)
    in_bank = set(bank.items)
    if args.max_held_out and len(test) > args.max_held_out:  # evenly spaced, so the order split keeps its order
        test = [test[i] for i in np.unique(np.linspace(0, len(test) - 1, args.max_held_out).round().astype(int))]
    held = data.subset(subjects=test, items=[i for i in data.item_ids if i in in_bank])
    y, w = bank.response_arrays(held)
    log.info(
        "%s (%s), split %s: bank of %d items from %d systems; %d held out",
        name,
        what,
        split,
        bank.n_items,
        len(train),
        len(test),
    )
    ks = [k for k in args.ks if k <= max(int((bank.benchmark == b).sum()) for b in bank.benchmarks)]
    cross_fit = None
    looks = {"posterior", "adaptive", "adaptive/2"} & set(args.methods)  # the methods whose items look at the bank
    if looks and bank.reference is not None and cross_fit_applies(fit, "posterior", args.cross_fit):
        start = time.perf_counter()
        cross_fit = CrossFit.from_fit(fit, bank, data=data.subset(subjects=train), folds=args.folds, seed=args.seed)
        log.info("cross-fitted %d folds in %.1f s", len(cross_fit.banks), time.perf_counter() - start)
    table = compare_methods(
        bank,
        y,
        w,
        held.subject_ids,
        ks=ks,
        methods=args.methods,
        adaptive_systems=args.adaptive_systems,
        seed=args.seed,
        log=log.info,
        cross_fit=cross_fit,
    )
    subjects = [str(s) for s in held.subject_ids]
    table = table.merge(beyond_bank_counts(bank, y, w, subjects, ks, args), on=["method", "k"], how="left")
    table["beyond_bank_all_items"] = flagged_beyond_bank(bank, y, w, subjects, args.seed)
    sizes = {b: int((bank.benchmark == b).sum()) for b in bank.benchmarks}
    sizes["all"] = bank.n_items
    table.insert(0, "dataset", name)
    table.insert(1, "split", split)
    table["benchmark_items"] = table["benchmark"].map(sizes)
    table["train_systems"] = len(train)
    table["held_out_systems"] = len(test)  # scored
    table["sampler"] = fit.sampler.get("name")
    table["approximate"] = fit.approximate
    table["converged"] = bool(fit.diagnostics.ok) and not fit.approximate
    table["fit_seconds"] = fit_seconds
    table["seed"] = args.seed
    table["prior"] = args.prior
    table["posterior_calibration"] = "cross-fitted" if cross_fit is not None else "in-sample"
    table["deviations"] = (
        "none"
        if args.one_ability
        else " ".join(f"{b}={t:g}" for b, t in zip(bank.benchmarks, bank.deviations, strict=True))
    )
    return table


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per data set, method and K, the ``all`` scope and the mean over benchmarks, the splits (and seeds) pooled
    but ``top``, kept apart (column ``splits``: ``top``, or the others' names joined by ``+``); ``beyond_bank`` and
    ``held_out`` are the mean numbers of held-out systems flagged and scored per split and seed."""
    inside = "+".join(sorted(set(table["split"]) - {"top"}))
    table = table.assign(splits=np.where(table["split"] == "top", "top", inside))
    for column in ("beyond_bank", "beyond_bank_all_items"):  # absent from rows of older runs
        if column not in table:
            table[column] = np.nan
    per_bench = table[table["benchmark"] != "all"]
    keys = ["dataset", "splits", "method", "k"]
    bench = per_bench.groupby(keys, sort=False).agg(
        benchmark_mae=("mae", "mean"),
        benchmark_coverage=("coverage", "mean"),
        benchmark_model_coverage=("model_coverage", "mean"),
        benchmark_width=("width", "mean"),
        benchmark_spearman=("spearman", "mean"),
        items=("items", "mean"),
    )
    overall = (
        table[table["benchmark"] == "all"]
        .groupby(keys, sort=False)
        .agg(
            all_mae=("mae", "mean"),
            all_coverage=("coverage", "mean"),
            all_spearman=("spearman", "mean"),
            held_out=("held_out_systems", "mean"),
            beyond_bank=("beyond_bank", "mean"),
            beyond_bank_all_items=("beyond_bank_all_items", "mean"),
        )
    )
    return bench.join(overall).reset_index()


def figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from irtbayes.core.plots import OKABE_ITO, plot_error_curves

    summary = summarise(table)
    summary["panel"] = summary["dataset"].where(summary["splits"] != "top", summary["dataset"] + " (top)")
    datasets = list(dict.fromkeys(summary["panel"]))
    methods = list(dict.fromkeys(summary["method"]))
    colours = {m: OKABE_ITO[k % len(OKABE_ITO)] for k, m in enumerate(methods)}
    per_row = min(len(datasets), FIGURE_COLUMNS)  # more data sets wrap into further pairs of rows
    pairs = -(-len(datasets) // per_row)
    fig, grid = plt.subplots(
        2 * pairs, per_row, figsize=(max(5.0, 3.4 * per_row), 6.4 * pairs), squeeze=False, layout="constrained"
    )
    for extra in range(len(datasets), pairs * per_row):  # the empty panels of the last pair of rows
        for row in (2 * (extra // per_row), 2 * (extra // per_row) + 1):
            grid[row, extra % per_row].set_axis_off()
    for at, name in enumerate(datasets):
        col, pair = at % per_row, at // per_row
        axes = grid[2 * pair : 2 * pair + 2]
        rows = summary[summary["panel"] == name]
        dataset = rows["dataset"].iloc[0]
        approx = bool(table.loc[table["dataset"] == dataset, "approximate"].any())
        plot_error_curves(
            rows,
            x="k",
            y="benchmark_mae",
            ylabel="MAE of benchmark accuracy",
            ax=axes[0, col],
            colours=colours,
            reference=TINYBENCHMARKS_MAE_100
            if dataset in ("openllm_tinybench", "sim_leaderboard", "sim_leaderboard_large")
            else None,
            reference_label="tinyBenchmarks, 100 items",
            panel=name + ("\n(approximate bank)" if approx else ""),
        )
        cov = rows[rows["benchmark_coverage"].notna()]
        plot_error_curves(
            cov, x="k", y="benchmark_coverage", ylabel="coverage of 90% intervals", ax=axes[1, col], colours=colours
        )
        axes[1, col].set_xlabel("K items per benchmark")
        axes[0, col].set_xlabel("K items per benchmark")
        axes[1, col].axhspan(0.85, 0.95, color="0.9", zorder=0)
        axes[1, col].set_ylim(0.4, 1.02)
        for ax in axes[:, col]:
            if at != 0 and ax.get_legend() is not None:  # the first data set shows every method
                ax.get_legend().remove()
    pooled = "splits and seeds pooled" if "top" not in set(table["split"]) else "seeds and splits but top pooled"
    title = f"Held-out systems scored from K items per benchmark ({pooled})"
    if per_row < 2:  # one column is too narrow for the title on one line
        title = title.replace(" (", "\n(")
    fig.suptitle(title, fontsize="medium")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(DEFAULT_DATASETS))
    parser.add_argument("--splits", nargs="+", default=["random", "order"], choices=["random", "order", "top"])
    parser.add_argument("--ks", nargs="+", type=int, default=[10, 30, 100])
    parser.add_argument("--methods", nargs="+", default=None, help="default: every method of the study")
    parser.add_argument("--sampler", default="approx", help="the banks' sampler (default approx; nutpie for NUTS)")
    parser.add_argument("--prior", default="normal", choices=["normal", "population"])
    parser.add_argument("--draws", type=int, default=200, help="posterior draws of the bank used per score")
    parser.add_argument("--one-ability", action="store_true", help="no benchmark deviations (one ability)")
    parser.add_argument(
        "--cross-fit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="calibrate the intervals of the posterior selection and the adaptive tests by cross-fitting (default: "
        "as select and adaptive do, on banks of at most 200 systems)",
    )
    parser.add_argument("--adaptive-systems", type=int, default=60, help="held-out systems given adaptive tests")
    parser.add_argument("--max-held-out", type=int, default=500, help="held-out systems scored (evenly spaced)")
    parser.add_argument("--folds", type=int, default=4, help="folds of the cross-fitting (default 4, as select's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fits", help="folder to keep and reuse the banks' fits")
    parser.add_argument("--csv", required=True, help="the per-benchmark results (a summary CSV is written beside it)")
    parser.add_argument("--figure", help="default: notebooks/results/figures/<csv stem>.png")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("irtbayes").setLevel(logging.WARNING)
    from irtbayes.evaluating.study import STUDY_METHODS

    args.methods = args.methods or list(STUDY_METHODS)
    csv = Path(args.csv)
    done = pd.read_csv(csv) if csv.is_file() else pd.DataFrame()
    log.info("machine: %s, %d cores, Python %s", platform.platform(), os.cpu_count() or 0, platform.python_version())
    for name in args.datasets:
        for split in args.splits:
            if (
                not done.empty
                and ((done["dataset"] == name) & (done["split"] == split) & (done["seed"] == args.seed)).any()
            ):
                log.info("%s %s seed %d: already in %s", name, split, args.seed, csv)
                continue
            start = time.perf_counter()
            table = run_one(name, split, args)
            table["wall_seconds"] = time.perf_counter() - start
            done = pd.concat([done, table], ignore_index=True)
            tmp = csv.with_suffix(".tmp")
            done.to_csv(tmp, index=False)
            tmp.replace(csv)
    summary = summarise(done)
    summary.to_csv(csv.with_name(csv.stem + "_summary.csv"), index=False)
    figure(done, Path(args.figure) if args.figure else REPO / "notebooks" / "results" / "figures" / f"{csv.stem}.png")
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(summary.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
