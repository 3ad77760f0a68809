"""The Maximum Gap of small, uncertain benchmarks with no planted gap: the support model against a smooth population.

Each data set draws ``--items`` true difficulties uniformly over [-2, 2], measures each with a normal error
of sd ``--se``, and builds exact posterior draws under a normal prior (no MCMC, so many data sets run in
seconds). The widest gap in [-2, 2] is read from the deconvolved locations with the population's support and
hole (the default) and without them (``support=False``: the smooth population alone). Printed per setting:
the coverage of the 90% interval and the mean error of the posterior mean against the true widest gap.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/gap_small_banks.py                       # 12 and 30 items, se 0.6
    OMP_NUM_THREADS=1 .venv/bin/python scripts/gap_small_banks.py --items 12 --se 0.3 --sets 50
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from irtbayes.auditing.deconvolve import MIN_ITEMS, PriorDraws, deconvolved_locations
from irtbayes.auditing.gaps import widest_gap

LO, HI = -2.0, 2.0
SAMPLES = 1000


def one_set(n_items: int, se: float, seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(true widest gap, its draws with the support, its draws without) for one simulated benchmark."""
    rng = np.random.default_rng(seed)
    truth = np.sort(rng.uniform(LO, HI, n_items))
    estimate = truth + rng.normal(0, se, n_items)
    loc = rng.normal(estimate.mean(), 0.1, SAMPLES)  # the hyperparameters' posterior, roughly
    sd = np.abs(rng.normal(max(float(estimate.std()), 0.5), 0.1, SAMPLES))
    precision = 1 / se**2 + 1 / sd[:, None] ** 2
    mean = (estimate[None, :] / se**2 + loc[:, None] / sd[:, None] ** 2) / precision
    draws = mean + rng.standard_normal(mean.shape) / np.sqrt(precision)
    prior = PriorDraws(loc=loc[:, None], sd=sd, item_group=np.zeros(n_items, dtype=np.int64))
    widths = []
    for support in (True, False):
        located, _ = deconvolved_locations(draws, prior, [np.arange(n_items)], support=support, seed=seed)
        widths.append(widest_gap(located, LO, HI).width)
    return float(widest_gap(truth[None, :], LO, HI).width[0]), widths[0], widths[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[12, 30])
    parser.add_argument("--se", type=float, nargs="+", default=[0.6])
    parser.add_argument("--sets", type=int, default=30)
    args = parser.parse_args()
    if min(args.items) < MIN_ITEMS:
        parser.error(f"--items: at least {MIN_ITEMS} per benchmark (smaller ones keep the fit's draws)")
    if min(args.se) <= 0 or args.sets < 1:
        parser.error("--se must be positive and --sets at least 1")
    warnings.simplefilter("ignore")
    print("| items | se | data sets | with support: coverage | bias | smooth population: coverage | bias |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n_items in args.items:
        for se in args.se:
            rows = [one_set(n_items, se, seed) for seed in range(args.sets)]
            cells = []
            for k in (1, 2):
                covers = [np.quantile(r[k], 0.05) <= r[0] <= np.quantile(r[k], 0.95) for r in rows]
                cells += [f"{np.mean(covers):.2f}", f"{np.mean([r[k].mean() - r[0] for r in rows]):+.2f}"]
            print(f"| {n_items} | {se} | {args.sets} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
