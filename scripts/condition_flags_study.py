"""How many systems the condition check flags when several systems react to a format the same way.

Simulated 2PL responses of ``--systems`` systems to 200 items under two conditions; under the second the first
``--reacting`` systems are 1.5 logits weaker (``--both-ways``: alternately weaker and stronger, so the shifts
cancel) and 10 items 1.5 logits harder or easier (alternating). The condition
model is fitted once per seed (NUTS, 2 chains x 500 draws after 500: short, so some fits miss the convergence
thresholds; the flags are compared on the same draws) and the systems are flagged two ways: against the typical
system (the median shift per draw, what ``condition_effects`` does) and against the mean (the zero sum alone, the
earlier rule). Prints one row per seed and writes ``--csv``.

    .venv/bin/python scripts/condition_flags_study.py --seeds 1-4 --systems 17 --reacting 5 --csv out.csv

The seeds run one after another, or on a Dask cluster with ``--scheduler ADDRESS`` (or ``IRTBAYES_SCHEDULER``;
docs/scale.md), each fit seeded by its own seed either way.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from irtbayes.core import irt
from irtbayes.core.multiplicity import bayes_fdr_flags
from irtbayes.core.parallel import map_tasks
from irtbayes.data.responses import ResponseData
from irtbayes.robustness.conditions import (
    condition_effects,
    fit_conditions,
    local_false_sign_rate,
)

ITEMS, SHIFT, ITEM_EFFECT, REACTING_ITEMS = 200, 1.5, 1.5, 10


def simulate(
    n_systems: int, n_reacting: int, seed: int, *, both_ways: bool = False
) -> tuple[ResponseData, set[str], set[str]]:
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n_systems)
    ability = (ability - ability.mean()) / ability.std()
    difficulty = rng.normal(0.0, 1.0, ITEMS)
    slope = np.exp(rng.normal(0.0, 0.3, ITEMS))
    gamma = np.zeros(ITEMS)
    gamma[:REACTING_ITEMS] = ITEM_EFFECT * np.where(np.arange(REACTING_ITEMS) % 2 == 0, 1.0, -1.0)
    delta = np.zeros(n_systems)
    delta[:n_reacting] = -SHIFT
    if both_ways:
        delta[1:n_reacting:2] = SHIFT
    systems = [f"s{j:02d}" for j in range(n_systems)]
    items = [f"q{i:03d}" for i in range(ITEMS)]
    frames = []
    for k, condition in enumerate(("original", "reformatted")):
        p = irt.probability((ability + k * delta)[:, None], (difficulty + k * gamma)[None, :], slope[None, :])
        y = (rng.random(p.shape) < p).astype(float)
        frames.append(
            pd.DataFrame(
                {
                    "subject": np.repeat(systems, ITEMS),
                    "item": np.tile(items, n_systems),
                    "response": y.ravel(),
                    "condition": condition,
                }
            )
        )
    data = ResponseData.from_long(pd.concat(frames, ignore_index=True), condition="condition", source="simulated")
    return data, set(systems[:n_reacting]), set(items[:REACTING_ITEMS])


def one(seed: int, n_systems: int, n_reacting: int, *, both_ways: bool = False) -> dict[str, object]:
    data, reacting, _ = simulate(n_systems, n_reacting, seed, both_ways=both_ways)
    started = time.perf_counter()
    fit = fit_conditions(data, chains=2, draws=500, tune=500, seed=seed)
    seconds = time.perf_counter() - started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        subjects = condition_effects(fit).subjects
    typical = set(subjects.loc[subjects["flagged"], "subject"])
    delta = fit.posterior["ability_shift"].stack(sample=("chain", "draw")).transpose("sample", ...).to_numpy()
    mean_rule = bayes_fdr_flags(local_false_sign_rate(delta), fdr=0.05, rule="each")[0]
    against_mean = set(np.asarray(subjects["subject"])[mean_rule])
    return {
        "seed": seed,
        "systems": n_systems,
        "reacting": n_reacting,
        "both_ways": both_ways,
        "converged": bool(fit.sampler.get("converged")),
        "seconds": round(seconds),
        "typical_flagged": len(typical),
        "typical_right": len(typical & reacting),
        "typical_false": len(typical - reacting),
        "mean_flagged": len(against_mean),
        "mean_right": len(against_mean & reacting),
        "mean_false": len(against_mean - reacting),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-4", help="a range, e.g. 1-4")
    parser.add_argument("--systems", type=int, default=17)
    parser.add_argument("--reacting", type=int, default=5)
    parser.add_argument("--both-ways", action="store_true", help="reacting systems alternately weaker and stronger")
    parser.add_argument("--csv", help="write the rows here")
    parser.add_argument("--scheduler", help="a dask.distributed scheduler to fit the seeds on")
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.seeds.split("-"))
    rows = map_tasks(
        one,
        list(range(lo, hi + 1)),
        common={"n_systems": args.systems, "n_reacting": args.reacting, "both_ways": args.both_ways},
        scheduler=args.scheduler,
        on_done=lambda _, row: print(row, flush=True),
    )
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
