"""Calibration of the audit's intervals across design families: Maximum Gap (and its parts) and DDM.

For each family of :data:`irtbayes.data.designs.FAMILIES` and each seed, one data set is simulated
(:func:`~irtbayes.data.designs.simulate_design`), fitted with irtbayes' default fit (NUTS, sampling until the
convergence checks pass) and audited with the default audit on the family's range (the default range where
the family has none). Each benchmark's reported 90% intervals are compared with the audit's measures of the
true difficulties on the same range and target (:func:`~irtbayes.auditing.truth.true_measures`). One row per
(data set, benchmark, measure) goes to the CSV as soon as the data set is done, so an interrupted study keeps
what it measured; ``--fits DIR`` keeps each fit and reuses it, so a change to the audit is measured again in
minutes.

Seeds: ``--seeds`` names them. The study's reported table uses seeds 1-12 (``--seeds 1-12``); any tuning of
the audit used seeds 101-106 only, and never these. The convergence study (the share of default fits that pass
their checks, the remedies they needed; ``*_convergence.csv``) uses seeds 201-212: the default fit was tuned on
seeds 1-2 of each family and never on these.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/calibration_study.py --seeds 1-12 --jobs 2 \
        --fits /tmp/calib_fits --csv notebooks/results/calibration_study.csv
    .venv/bin/python scripts/calibration_study.py --families leaderboard --seeds 101 --csv /tmp/look.csv
    .venv/bin/python scripts/calibration_study.py --seeds 1-12 --scheduler tcp://host:8786 --csv study.csv

``--scheduler`` (or ``IRTBAYES_SCHEDULER``) runs the data sets on a Dask cluster instead of ``--jobs`` local
processes (docs/scale.md); ``--fits`` must then be a folder every worker sees.

The summary printed at the end (and written next to the CSV as ``*_summary.csv``) gives per family and
measure: benchmarks, coverage of the 90% interval, bias of the posterior mean, mean width, and for the
Maximum Gap the false-gap rate (lower end above 0.5 while the true widest gap is under 0.5).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

FALSE_GAP = 0.5
MEASURES = ("max_gap", "interior_gap", "edge_gap_low", "edge_gap_high", "ddm_w1", "ddm_tv")


def parse_seeds(text: str) -> list[int]:
    """``"1-12"`` or ``"1,2,5"`` or a mix."""
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def one_task(task: tuple[str, int], **options: object) -> list[dict]:
    """:func:`one_set` of one (family, seed), as the map hands it."""
    return one_set(*task, **options)  # type: ignore[arg-type]


def one_set(
    family: str,
    seed: int,
    *,
    sampler: str,
    fits: Path | None,
    audit_options: dict,
    model: str = "2pl",
    choices: int | None = None,
) -> list[dict]:
    from irtbayes.auditing.run import audit
    from irtbayes.auditing.truth import interval_check, true_measures
    from irtbayes.data.designs import FAMILIES, simulate_design
    from irtbayes.fitting.fit import fit
    from irtbayes.fitting.storage import load_fit, save_fit
    from irtbayes.model.spec import ModelSpec

    logging.getLogger("irtbayes").setLevel(logging.ERROR)
    design = FAMILIES[family]
    if choices is not None:  # the family with every benchmark's items of this many options
        import dataclasses

        family = f"{family}_{choices}_options"
        design = dataclasses.replace(design, name=family, choices=(choices,))
    sim = simulate_design(design, seed=seed)
    started = time.perf_counter()
    suffix = "" if model == "2pl" else f"_{model}"
    saved = None if fits is None else fits / f"{family}_seed{seed}_{sampler}{suffix}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if saved is not None and saved.exists():
            fitted = load_fit(saved, data=sim.data)
            fit_seconds = float(fitted.sampler.get("wall_time_s", np.nan))  # as recorded when it was fitted
        else:
            options = {} if sampler == "default" else {"sampler": sampler}
            kind, _, guessing = model.partition("-")  # "3pl-chance": the 3PL with its floors fixed at chance
            spec = ModelSpec(kind=kind, **({"guessing": guessing} if guessing else {}))
            fitted = fit(sim.data, spec, seed=seed, progress=False, **options)
            fit_seconds = time.perf_counter() - started
            if saved is not None:
                save_fit(fitted, saved, overwrite=True)
        audit_started = time.perf_counter()
        options = dict(audit_options)
        if design.range is not None:
            options["range"] = design.range
        result = audit(fitted, sim.data, seed=seed, progress=False, **options)
    truth = true_measures(sim.truth["difficulty"].values, sim.truth["benchmark"].values, result.target)
    check = interval_check(result.benchmarks, truth, measures=MEASURES)
    check = check[check["scope"] != "all"]
    diag = fitted.diagnostics
    base = {
        "family": family,
        "seed": seed,
        "sampler": sampler,
        "model": model,
        "systems": sim.drawn["systems"],
        "benchmarks": sim.drawn["benchmarks"],
        "missing": sim.drawn["missing_observed"],
        "range_lo": result.target.lo,
        "range_hi": result.target.hi,
        "converged": bool(diag.ok),
        "max_rhat": float(diag.max_rhat),
        "min_ess": float(min(diag.min_ess_bulk, diag.min_ess_tail)),
        "divergences": int(diag.divergences),
        "target_accept": float(fitted.sampler.get("target_accept") or np.nan),
        "remedies": max(0, len(fitted.sampler.get("remedies") or []) - 1),
        "outcome": str((fitted.sampler.get("until_converged") or {}).get("outcome", "")),
        "draws": int(fitted.sampler.get("draws", 0)),
        "fit_seconds": fit_seconds,
        "audit_seconds": time.perf_counter() - audit_started,
    }
    names = sorted(set(sim.truth["benchmark"].values.tolist()))  # bench00, bench01, ...: the order drawn
    rows = []
    for rec in check.to_dict("records"):
        rec = base | rec
        rec["items"] = int(truth.loc[rec["scope"], "n_items"])
        rec["hole"] = str(sim.drawn["holes"][names.index(rec["scope"])])
        rows.append(rec)
    return rows


def convergence_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per family (and in all): data sets, the share whose default fit passed its convergence checks, how many
    needed a remedy for divergences (and passed), fit time, and the 90% coverage of the Maximum Gap and DDM intervals
    over the fits that passed."""
    sets = table.drop_duplicates(["family", "seed"])
    passed = table[table["converged"]]
    cover = passed.groupby(["family", "measure"])["covers"].mean().unstack()

    def one(group: pd.DataFrame, cov: pd.Series | None) -> dict:
        return {
            "data_sets": len(group),
            "passed": float(group["converged"].mean()),
            "remedied": int((group["remedies"] > 0).sum()) if "remedies" in group else 0,
            "remedied_passed": int(((group["remedies"] > 0) & group["converged"]).sum()) if "remedies" in group else 0,
            "systems": f"{group['systems'].min()}-{group['systems'].max()}",
            "fit_s_median": float(group["fit_seconds"].median()),
            "fit_s_max": float(group["fit_seconds"].max()),
            "max_gap_coverage": float(cov["max_gap"]) if cov is not None and "max_gap" in cov else np.nan,
            "ddm_coverage": float(cov["ddm_w1"]) if cov is not None and "ddm_w1" in cov else np.nan,
        }

    rows = [{"family": f, **one(g, cover.loc[f] if f in cover.index else None)} for f, g in sets.groupby("family")]
    overall = passed.groupby("measure")["covers"].mean()
    rows.append({"family": "all", **one(sets, overall)})
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per family and measure: benchmarks, coverage, bias, mean width; false-gap rate for the Maximum Gap."""
    if "posterior_ci_low" in table.columns:
        table = table.assign(
            posterior_covers=(table["truth"] >= table["posterior_ci_low"])
            & (table["truth"] <= table["posterior_ci_high"])
        )
    else:
        table = table.assign(posterior_covers=table["covers"])
    table = table.assign(
        false_gap=(table["measure"] == "max_gap") & (table["truth"] < FALSE_GAP) & (table["ci_low"] > FALSE_GAP),
        small_truth=(table["measure"] == "max_gap") & (table["truth"] < FALSE_GAP),
    )
    out = (
        table.groupby(["family", "measure"])
        .agg(
            benchmarks=("covers", "size"),
            coverage=("covers", "mean"),
            posterior_coverage=("posterior_covers", "mean"),
            bias=("error", "mean"),
            mae=("error", lambda e: float(np.abs(e).mean())),
            width=("width", "mean"),
            false_gaps=("false_gap", "sum"),
            converged=("converged", "mean"),
        )
        .reset_index()
    )
    return out


def plot_coverage(table: pd.DataFrame, path: Path) -> None:
    """Coverage per family of the reported and the posterior's own 90% intervals, Maximum Gap and DDM."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = sorted(table["family"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 0.5 + 0.42 * len(families)), sharey=True, layout="constrained")
    for ax, (measure, title) in zip(axes, (("max_gap", "Maximum Gap"), ("ddm_w1", "DDM (W1)")), strict=True):
        sub = table[table["measure"] == measure]
        own = (sub["truth"] >= sub["posterior_ci_low"]) & (sub["truth"] <= sub["posterior_ci_high"])
        y = np.arange(len(families))
        reported = sub.groupby("family")["covers"].mean().reindex(families)
        posterior = own.groupby(sub["family"]).mean().reindex(families)
        ax.hlines(y, posterior, reported, color="0.7", linewidth=1)
        ax.plot(posterior, y, "o", color="0.55", label="posterior's own interval")
        ax.plot(reported, y, "o", color="C0", label="reported (recalibrated)")
        ax.axvline(0.9, color="0.3", linestyle="--", linewidth=1, label="nominal 0.90")
        ax.axvline(0.85, color="C3", linestyle=":", linewidth=1, label="target 0.85")
        ax.set_yticks(y, [f"{f} ({int((sub['family'] == f).sum())})" for f in families])
        ax.set_xlim(0.3, 1.02)
        ax.set_xlabel("coverage of the 90% interval")
        ax.set_title(title)
    axes[0].invert_yaxis()
    axes[1].legend(loc="lower left", fontsize="small")
    fig.suptitle("Calibration across design families (held-out seeds; benchmarks per family in brackets)")
    fig.savefig(path, dpi=130)
    plt.close(fig)


def learn_table(csvs: list[Path], out: Path) -> None:
    """Learn the recalibration table from tuning rows; write it as JSON and print the module's literal."""
    import json

    from irtbayes.auditing.recalibration import learn

    rows = pd.concat([pd.read_csv(p) for p in csvs], ignore_index=True)
    table = learn(rows)
    record = {
        "command": "scripts/calibration_study.py --learn " + " ".join(str(p) for p in csvs),
        "seeds": sorted(int(s) for s in rows["seed"].unique()),
        "families": sorted(rows["family"].unique().tolist()),
        "sampler": sorted(rows["sampler"].unique().tolist()) if "sampler" in rows.columns else [],
        "table": table,
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")
    for m, e in table.items():
        print(
            f"{m}: tail scales {e['tail_scale_low']} (low), {e['tail_scale_high']} (high), in-sample coverage {e['in_sample_coverage']}, worst {e.get('worst_family')}"
        )
    print("TABLE = " + json.dumps(table))


def main() -> None:
    from irtbayes.core.parallel import map_tasks
    from irtbayes.data.designs import FAMILIES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--seeds", default="1-12", help="e.g. 1-12 or 101,102")
    parser.add_argument("--jobs", type=int, default=1, help="data sets fitted at once (one process each)")
    parser.add_argument("--scheduler", help="a dask.distributed scheduler to fit the data sets on (not --jobs)")
    parser.add_argument("--csv", type=Path, required=True, help="where the rows go, data set by data set")
    parser.add_argument("--fits", type=Path, default=None, help="keep each fit here and reuse those found")
    parser.add_argument(
        "--sampler",
        default="default",
        help="'default' (the default fit: NUTS until converged) or a fit sampler, e.g. approx",
    )
    parser.add_argument("--ensemble", default=None, help="the audit's ensemble setting (default: the audit's)")
    parser.add_argument(
        "--model",
        default="2pl",
        help="the model fitted (default 2pl; 3pl: guessing prior on 1/n_options; 3pl-chance: floors fixed at 1/n_options)",
    )
    parser.add_argument(
        "--choices", type=int, default=None, help="give every benchmark's items this many options (a floor of 1/K)"
    )
    parser.add_argument("--plot", action="store_true", help="only redraw the coverage figure from --csv")
    parser.add_argument(
        "--learn", type=Path, nargs="+", default=None, help="learn the recalibration table from these tuning CSVs"
    )
    args = parser.parse_args()
    if args.learn:
        learn_table(args.learn, args.csv)
        return
    if args.plot:
        plot_coverage(pd.read_csv(args.csv), args.csv.with_suffix(".png"))
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.fits is not None:
        args.fits.mkdir(parents=True, exist_ok=True)
    audit_options = {} if args.ensemble is None else {"ensemble": args.ensemble}
    tasks = [(f, s) for s in parse_seeds(args.seeds) for f in args.families]
    rows: list[dict] = []
    started = time.perf_counter()
    arrived = 0

    def done(index: int, got: list[dict] | BaseException) -> None:
        nonlocal arrived
        arrived += 1
        family, seed = tasks[index]
        if isinstance(got, BaseException):  # one failed data set is reported, the study goes on
            print(f"[{arrived}/{len(tasks)}] {family} seed {seed}: FAILED {type(got).__name__}: {got}", flush=True)
            return
        rows.extend(got)
        pd.DataFrame(rows).sort_values(["family", "seed", "scope", "measure"]).to_csv(args.csv, index=False)
        gaps = [r for r in got if r["measure"] == "max_gap"]
        text = "; ".join(
            f"{r['truth']:.2f} in [{r['ci_low']:.2f}, {r['ci_high']:.2f}]{'' if r['covers'] else ' MISS'}" for r in gaps
        )
        g0 = got[0]
        print(
            f"[{arrived}/{len(tasks)}] {family} seed {seed}: {g0['systems']} systems, r-hat {g0['max_rhat']:.3f}, "
            f"fit {g0['fit_seconds']:.0f} s, audit {g0['audit_seconds']:.0f} s; max gap {text}",
            flush=True,
        )

    options = {
        "sampler": args.sampler,
        "fits": args.fits,
        "audit_options": audit_options,
        "model": args.model,
        "choices": args.choices,
    }
    map_tasks(
        one_task,
        tasks,
        common=options,
        scheduler=args.scheduler,
        local="processes",
        workers=args.jobs,
        on_done=done,
        failures="return",
    )
    table = pd.DataFrame(rows)
    summary = summarise(table)
    summary.to_csv(args.csv.with_name(args.csv.stem + "_summary.csv"), index=False)
    if "posterior_ci_low" in table.columns:
        plot_coverage(table, args.csv.with_suffix(".png"))
    print("\n" + summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for m in ("max_gap", "ddm_w1"):
        sub = table[table["measure"] == m]
        big = sub["systems"] >= 80
        print(
            f"{m}: coverage {sub['covers'].mean():.3f} over {len(sub)} benchmarks "
            f"({sub.loc[big, 'covers'].mean():.3f} with 80 or more systems)"
        )
    gap = table[table["measure"] == "max_gap"]
    small = gap[gap["truth"] < FALSE_GAP]
    false = int((small["ci_low"] > FALSE_GAP).sum())
    print(f"false credible gaps: {false} of {len(gap)} benchmarks ({len(small)} with a true widest gap under 0.5)")
    if "remedies" in table.columns:
        passing = convergence_summary(table)
        passing.to_csv(args.csv.with_name(args.csv.stem + "_convergence.csv"), index=False)
        print("\n" + passing.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
