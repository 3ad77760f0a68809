"""Calibration of the audit's Maximum Gap: coverage of its 90% interval, bias and the false-gap rate.

Each simulated data set has one benchmark of 60 items whose true difficulties leave a planted gap of width
``g`` inside the range or at its upper edge (0 = no planted gap), answered
under the 2PL by ``N`` standardised systems. irtbayes fits its default model and runs its default audit on the
fixed range [-2.5, 2.5]; the row records the audit's Maximum Gap (mean and 90% interval) against the true
widest gap of the true difficulties in the same range.

``--design iid`` (the default) draws the 60 true difficulties independently from the uniform population
over the range less the planted stretch, as a benchmark's items are spread; ``--design lattice`` spaces them
evenly, a stress case that no population model expects. The grid crosses g in {0, 1.0, 1.5, 2.0} with N in {30, 80, 200}; gaps alternate between inside and the upper
edge from one data set to the next. Per cell it prints the coverage of the 90% interval, the bias of the
posterior mean, and for g = 0 the false-gap rate: the share of benchmarks whose widest true gap is under 0.5
but whose interval's lower end lies above 0.5. Every row goes to the CSV as soon as it is done, so an
interrupted study keeps what it measured.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/gap_calibration.py --sets 20 --jobs 2 --fits /tmp/gap_fits \
        --csv notebooks/results/gap_calibration.csv                                          # 240 sets
    OMP_NUM_THREADS=1 .venv/bin/python scripts/gap_calibration.py --sets 5 --jobs 2 --design lattice \
        --fits /tmp/gap_fits_lattice --csv notebooks/results/gap_calibration_lattice.csv
    .venv/bin/python scripts/gap_calibration.py --sets 1 --subjects 30 --csv /tmp/quick.csv           # a look
    .venv/bin/python scripts/gap_calibration.py --sets 20 --scheduler tcp://host:8786 --csv gaps.csv  # a Dask cluster

``--fits DIR`` keeps each data set's fit there and reuses it on the next run, so a change to the audit is
measured again in minutes (the fits do not depend on it). The ``seconds`` column is then the audit's alone.
``--scheduler`` (or ``IRTBAYES_SCHEDULER``) fits the data sets on a Dask cluster instead of ``--jobs`` local
processes (docs/scale.md); ``--fits`` must then be a folder every worker sees.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.auditing.gaps import widest_gap
from irtbayes.auditing.run import audit
from irtbayes.core.parallel import map_tasks
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.fit import fit
from irtbayes.fitting.storage import load_fit, save_fit

RANGE = (-2.5, 2.5)
N_ITEMS = 60
GAPS = (0.0, 1.0, 1.5, 2.0)
FALSE_GAP = 0.5


def true_difficulties(gap: float, where: str, *, design: str = "iid", seed: int = 0) -> np.ndarray:
    """60 true difficulties in the range, with an empty stretch of width ``gap`` inside it or at its upper edge.

    ``design="iid"``: drawn independently from the uniform population over the range less the empty
    stretch (how a benchmark's items are spread: the true widest gap is the planted one plus the random
    spacing beside it, and with no planted gap the ordinary spacing of 60 random items, about 0.4).
    ``design="lattice"``: evenly spaced over [-2.4, 2.4] less the stretch, a stress case no population
    model expects (every spacing exactly equal).
    """
    if design == "iid":
        return _iid_difficulties(gap, where, np.random.default_rng(seed + 7919))
    lo, hi = RANGE[0] + 0.1, RANGE[1] - 0.1
    if gap == 0:
        return np.linspace(lo, hi, N_ITEMS)
    if where == "edge":  # the top of the range is empty: the gap runs from the highest item to U
        return np.linspace(lo, RANGE[1] - gap, N_ITEMS)
    centre = 0.25 * (lo + hi)  # off-centre, so that the gap is not where the items' mean pulls them
    below = int(N_ITEMS * (centre - gap / 2 - lo) / (hi - lo - gap))
    return np.concatenate(
        [np.linspace(lo, centre - gap / 2, below), np.linspace(centre + gap / 2, hi, N_ITEMS - below)]
    )


def _iid_difficulties(gap: float, where: str, rng: np.random.Generator) -> np.ndarray:
    lo, hi = RANGE
    if gap == 0:
        return np.sort(rng.uniform(lo, hi, N_ITEMS))
    if where == "edge":
        return np.sort(rng.uniform(lo, hi - gap, N_ITEMS))
    centre = 0.25 * (lo + hi) + 0.25  # off-centre, so that the gap is not where the items' mean pulls them
    start = centre - gap / 2
    u = rng.uniform(lo, hi - gap, N_ITEMS)  # a uniform draw over the range with the stretch cut out
    return np.sort(np.where(u < start, u, u + gap))


def simulate(difficulty: np.ndarray, n_subjects: int, *, seed: int) -> ResponseData:
    """2PL responses of ``n_subjects`` standardised systems (discriminations log-normal around 1)."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n_subjects)
    ability = (ability - ability.mean()) / ability.std()
    discrimination = np.exp(rng.normal(0.0, 0.3, size=len(difficulty)))
    p = 1 / (1 + np.exp(-discrimination * (ability[:, None] - difficulty[None, :])))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    subjects = [f"s{j:03d}" for j in range(n_subjects)]
    items = [f"q{i:02d}" for i in range(len(difficulty))]
    frame = pd.DataFrame(
        {"subject": np.repeat(subjects, len(items)), "item": np.tile(items, n_subjects), "response": y.ravel()}
    )
    return ResponseData.from_long(frame, items=pd.DataFrame({"item": items, "benchmark": "planted"}))


def one_task(task: tuple[float, str, int, int], **options: object) -> dict[str, object]:
    """:func:`one_set` of one (gap, where, subjects, seed), as the map hands it."""
    return one_set(*task, **options)  # type: ignore[arg-type]


def one_set(
    gap: float, where: str, n_subjects: int, seed: int, *, design: str, ensemble: str, fits: Path | None = None
) -> dict[str, object]:
    truth = true_difficulties(gap, where, design=design, seed=seed)
    true_gap = float(widest_gap(truth[None, :], *RANGE).width[0])
    data = simulate(truth, n_subjects, seed=seed)
    started = time.perf_counter()
    saved = None if fits is None else fits / f"{design}_gap{gap:.1f}_{where}_n{n_subjects}_seed{seed}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if saved is not None and saved.exists():
            fitted = load_fit(saved, data=data)
        else:
            fitted = fit(data, seed=seed, progress=False)
            if saved is not None:
                save_fit(fitted, saved, overwrite=True)
        result = audit(fitted, data, range=RANGE, seed=seed, ensemble=ensemble)
    row = result.benchmarks.set_index("scope").loc["planted"]
    lo, hi = float(row["max_gap_ci_low"]), float(row["max_gap_ci_high"])
    return {
        "design": design,
        "ensemble": result.settings["ensemble"],
        "gap": gap,
        "where": where if gap else "none",
        "subjects": n_subjects,
        "seed": seed,
        "true_gap": true_gap,
        "mean": float(row["max_gap_mean"]),
        "ci_low": lo,
        "ci_high": hi,
        "covers": lo <= true_gap <= hi,
        "false_gap": bool(true_gap < FALSE_GAP and lo > FALSE_GAP),
        "converged": bool(fitted.diagnostics.ok),
        "max_rhat": fitted.diagnostics.max_rhat,
        "divergences": fitted.diagnostics.divergences,
        "seconds": time.perf_counter() - started,
    }


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per (gap, subjects): data sets, coverage of the 90% interval, bias of the mean, false-gap rate."""
    return (
        table.assign(error=table["mean"] - table["true_gap"])
        .groupby(["gap", "subjects"])
        .agg(
            sets=("covers", "size"),
            coverage=("covers", "mean"),
            bias=("error", "mean"),
            false_gap_rate=("false_gap", "mean"),
            converged=("converged", "mean"),
        )
        .reset_index()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, nargs="+", default=[30, 80, 200])
    parser.add_argument("--gaps", type=float, nargs="+", default=list(GAPS))
    parser.add_argument("--sets", type=int, default=5, help="data sets per (gap, subjects) cell")
    parser.add_argument("--design", choices=("iid", "lattice"), default="iid", help="how true difficulties are laid")
    parser.add_argument("--ensemble", default="auto", help="the audit's ensemble setting")
    parser.add_argument("--jobs", type=int, default=1, help="data sets fitted at once (one process each)")
    parser.add_argument("--scheduler", help="a dask.distributed scheduler to fit the data sets on (not --jobs)")
    parser.add_argument("--csv", type=Path, required=True, help="where the rows go, one by one")
    parser.add_argument(
        "--fits", type=Path, default=None, help="keep each data set's fit in this folder and reuse those found there"
    )
    args = parser.parse_args()
    logging.getLogger("irtbayes").setLevel(logging.ERROR)
    tasks = []
    for gap in args.gaps:
        for n in args.subjects:
            for k in range(args.sets):
                seed = 1000 * int(10 * gap) + 10 * n + k
                tasks.append((gap, "inside" if k % 2 == 0 else "edge", n, seed))
    options = {"design": args.design, "ensemble": args.ensemble, "fits": args.fits}
    if args.fits is not None:
        args.fits.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []

    def done(_: int, row: dict[str, Any]) -> None:
        rows.append(row)
        pd.DataFrame(rows).sort_values(["gap", "subjects", "seed"]).to_csv(args.csv, index=False)
        print(
            f"gap {row['gap']:.1f} ({row['where']}), N={row['subjects']}, seed {row['seed']}: true "
            f"{row['true_gap']:.2f}, audit {row['mean']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}], "
            f"r-hat {row['max_rhat']:.3f}, {row['seconds']:.0f} s",
            flush=True,
        )

    map_tasks(
        one_task, tasks, common=options, scheduler=args.scheduler, local="processes", workers=args.jobs, on_done=done
    )
    table = pd.DataFrame(rows)
    print("\n" + summarise(table).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    big = table["subjects"] >= 80
    print(
        f"\nOverall: coverage {table['covers'].mean():.2f} over {len(table)} data sets "
        f"({table.loc[big, 'covers'].mean():.2f} with 80 or more systems); false-gap rate "
        f"{table.loc[table['gap'] == 0, 'false_gap'].mean():.2f} over the no-gap sets."
    )


if __name__ == "__main__":
    main()
