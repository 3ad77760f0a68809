"""Planted reversed, flat and leaked items, flagged or not by ``irtbayes.check_items`` (docs/item-flags.md).

Per size (subjects x items) and seed, a simulated 2PL bank (:func:`irtbayes.data.simulate.planted_item_faults`:
subjects in 4 groups, 8 reversed, 8 flat and 8 leaked items, a leak +3 logits for one group on an item of the
harder half), and per size one bank of sound items only. Each bank is fitted with NUTS (``irt.fit``, default
settings) and checked with both multiplicity rules, and with the fixed N(0, 1) prior of the DIF effects instead of
the fitted mixture. Per bank, method and flag: the planted items, the flagged ones, recall (planted items flagged
with that flag, for DIF with the planted group and direction), precision (flags that are right) and the share of
the sound items that carry the flag. The table printed at the end sums over seeds and banks.

    .venv/bin/python scripts/item_flags_study.py --sizes 30x400,120x400,400x1000 --seeds 1-3 \\
        --csv notebooks/results/item_flags_study.csv [--cache DIR]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

FLAGS = ("reversed", "flat", "dif")
#: (multiplicity rule, DIF prior) pairs compared; the first is check_items' default.
METHODS = (("each", "empirical"), ("mean", "empirical"), ("each", "normal"))


def score_flags(items: pd.DataFrame, planted: pd.DataFrame) -> list[dict[str, object]]:
    """Per flag: planted, flagged, right, recall, precision and the sound items flagged (count and share)."""
    table = items.merge(planted.rename(columns={"group": "planted_group"}), on="item")
    sound = table["fault"] == ""
    rows = []
    for flag in FLAGS:
        has = table["flags"].str.split(";").apply(lambda fs, f=flag: f in fs)
        right = has & (table["fault"] == flag)
        if flag == "dif":
            right &= (table["dif_group"] == table["planted_group"]) & (table["dif_direction"] == table["direction"])
        n_planted, n_flagged = int((table["fault"] == flag).sum()), int(has.sum())
        rows.append(
            {
                "flag": flag,
                "planted": n_planted,
                "flagged": n_flagged,
                "right": int(right.sum()),
                "recall": right.sum() / n_planted if n_planted else np.nan,
                "precision": right.sum() / n_flagged if n_flagged else np.nan,
                "sound_flagged": int((has & sound).sum()),
                "sound": int(sound.sum()),
            }
        )
    return rows


def run_bank(
    n_subjects: int, n_items: int, seed: int, *, planted_faults: bool, cache: Path | None = None
) -> list[dict[str, object]]:
    """Simulate, fit (or read the fit saved in ``cache``) and check one bank; one row per method and flag."""
    from irtbayes.checks.items import check_items
    from irtbayes.data.simulate import planted_item_faults
    from irtbayes.fitting.fit import fit
    from irtbayes.fitting.storage import load_fit, save_fit

    n = 8 if planted_faults else 0
    data, _, planted = planted_item_faults(
        n_subjects, n_items, n_reversed=n, n_flat=n, n_leaked=n, n_groups=4, seed=seed
    )
    saved = None if cache is None else cache / f"fit_{n_subjects}x{n_items}_{seed}"
    start = time.perf_counter()
    if saved is not None and saved.is_dir():
        result = load_fit(saved, data=data)
        fit_s = float(result.sampler.get("wall_time_s", np.nan))
    else:
        result = fit(data, seed=seed, progress=False, cores=2)
        fit_s = time.perf_counter() - start
        if saved is not None:
            save_fit(result, saved)
    rows = []
    for rule, prior in METHODS:
        start = time.perf_counter()
        checks = check_items(result, data, group_col="group", rule=rule, dif_prior=prior, seed=seed)
        check_s = time.perf_counter() - start
        for row in score_flags(checks.items, planted):
            rows.append(
                {
                    "size": f"{n_subjects}x{n_items}",
                    "bank": "planted" if planted_faults else "sound",
                    "seed": seed,
                    "rule": rule,
                    "dif_prior": prior,
                    **row,
                    "fit_converged": bool(result.diagnostics.ok),
                    "fit_s": round(fit_s, 1),
                    "check_s": round(check_s, 1),
                }
            )
    return rows


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Sums over seeds and banks per size, rule and flag: recall, precision, share of sound items flagged."""
    sums = rows.groupby(["rule", "dif_prior", "size", "flag"], sort=False)[
        ["planted", "flagged", "right", "sound_flagged", "sound"]
    ].sum()
    sums["recall"] = sums["right"] / sums["planted"]
    sums["precision"] = (sums["right"] / sums["flagged"]).where(sums["flagged"] > 0)
    sums["sound_flagged_share"] = sums["sound_flagged"] / sums["sound"]
    return sums.reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="30x400,120x400,400x1000", help="subjects x items, comma separated")
    parser.add_argument("--seeds", default="1-3", help="seeds of the banks with planted faults, as 1-3")
    parser.add_argument("--csv", type=Path, default=None, help="one row per bank, rule and flag")
    parser.add_argument("--cache", type=Path, default=None, help="save the fits here, and reuse those found")
    args = parser.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    warnings.simplefilter("ignore")
    logging.getLogger("irtbayes").setLevel(logging.WARNING)
    rows: list[dict[str, object]] = []
    for size in args.sizes.split(","):
        n_subjects, n_items = (int(v) for v in size.split("x"))
        for seed in [*seeds, 1000]:  # seed 1000: the bank of sound items only
            rows += run_bank(n_subjects, n_items, seed, planted_faults=seed != 1000, cache=args.cache)
            last = pd.DataFrame(rows[-3 * len(METHODS) :])
            print(last.to_string(index=False), flush=True)
    table = pd.DataFrame(rows)
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False)
        summarise(table).to_csv(args.csv.with_name(args.csv.stem + "_summary.csv"), index=False)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(summarise(table).to_string(index=False))


if __name__ == "__main__":
    main()
