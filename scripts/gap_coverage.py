"""Coverage of the Maximum Gap's credible interval: the fit's draws against deconvolved locations.

Each data set plants a gap of 1.5 logits among 60 item difficulties (36 evenly spaced on [-2.4, -0.3], 24
on [1.2, 2.4]; :func:`irtbayes.data.simulate.planted_gap_responses`), simulates 1PL responses of N standardised
subjects, fits irtbayes' 1PL (2 chains x 300 draws), and computes the widest gap in [-2.5, 2.6] per draw
from (a) the fit's difficulty draws and (b) the deconvolved locations the audit uses by default. Printed per
data set: the 90% interval and median of each; then, per N, how often each interval covers the true width
and the mean posterior median.

Usage::

    .venv/bin/python scripts/gap_coverage.py --sets 16              # N = 40 and 100: the table in docs/validation.md (~2 min)
    .venv/bin/python scripts/gap_coverage.py --subjects 150 --sets 4
"""

from __future__ import annotations

import argparse
import logging
import warnings

import numpy as np
import pandas as pd

from irtbayes.auditing.deconvolve import deconvolved_locations, prior_draws
from irtbayes.auditing.gaps import widest_gap
from irtbayes.data.simulate import planted_gap_responses
from irtbayes.fitting.fit import fit
from irtbayes.model.spec import ModelSpec

RANGE = (-2.5, 2.6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, nargs="+", default=[40, 100])
    parser.add_argument("--sets", type=int, default=8, help="data sets per number of subjects")
    parser.add_argument("--penalty-order", type=int, default=3, help="order of the log-spline's difference penalty")
    parser.add_argument("--ridge", type=float, default=0.01, help="precision of the deviation from the normal base")
    args = parser.parse_args()
    logging.getLogger("irtbayes").setLevel(logging.ERROR)
    true = float(widest_gap(planted_gap_responses(2, seed=0)[1][None, :], *RANGE).width[0])
    rows = []
    for n in args.subjects:
        for seed in range(1, args.sets + 1):
            data, _ = planted_gap_responses(n, seed=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = fit(data, ModelSpec(kind="1pl"), chains=2, draws=300, tune=300, seed=seed, progress=False)
            post = fitted.posterior
            draws = post["difficulty"].stack(s=("chain", "draw")).transpose("s", "item").to_numpy()
            prior = prior_draws(post, list(data.items["benchmark"]))
            assert prior is not None
            locations, _ = deconvolved_locations(
                draws, prior, [np.arange(data.n_items)], seed=seed, penalty_order=args.penalty_order, ridge=args.ridge
            )
            row = {"subjects": n, "set": seed}
            for name, values in (("draws", draws), ("deconvolved", locations)):
                lo, med, hi = np.quantile(widest_gap(values, *RANGE).width, [0.05, 0.5, 0.95])
                row |= {f"{name}_lo": lo, f"{name}_median": med, f"{name}_hi": hi, f"{name}_covers": lo <= true <= hi}
            rows.append(row)
            print(
                f"N={n:4d} set {seed}: draws [{row['draws_lo']:.2f}, {row['draws_hi']:.2f}] median "
                f"{row['draws_median']:.2f}; deconvolved [{row['deconvolved_lo']:.2f}, {row['deconvolved_hi']:.2f}] "
                f"median {row['deconvolved_median']:.2f}",
                flush=True,
            )
    table = pd.DataFrame(rows)
    print(f"\nTrue widest gap {true:.2f}. Coverage of the 90% interval and mean posterior median:")
    print("| subjects | data sets | draws: coverage | draws: median | deconvolved: coverage | deconvolved: median |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, g in table.groupby("subjects"):
        print(
            f"| {n} | {len(g)} | {g['draws_covers'].mean():.2f} | {g['draws_median'].mean():.2f} | "
            f"{g['deconvolved_covers'].mean():.2f} | {g['deconvolved_median'].mean():.2f} |"
        )


if __name__ == "__main__":
    main()
