"""Operating characteristic of the BenchFill acceptance rule on the fast (fixed-bank) calibration path.

A bank is simulated (2PL, abilities standardised) and fitted; the fitted subjects' posterior mean abilities
are then taken as the systems' true abilities. For each number of responding systems, candidates get true
difficulties uniform on [lo - w, hi + w] (w = hi - lo, so a third lie in the target bin [lo, hi)) and true
discriminations exp(Normal(0, 0.3)) ("uniform"), or are drawn from the fitted hierarchy's predictive for a
new item of bench00 ("bank"); the systems' responses are simulated, the candidates (of benchmark bench00)
are calibrated with ``calibrate_fixed`` under each chosen prior (``--prior candidates bank``: the candidates'
own group, the default, or a new item of bench00) and decided with ``decide_all`` (tau, the data-alone check,
P(a > 0) >= 0.9, at least 10 responses).

Printed: a markdown table with, per number of systems, the candidates, those truly in the bin, those
accepted, the precision (share of accepted items truly in the bin, with its binomial standard error), the
recall (share of in-bin items accepted) and the mean posterior P(in bin) of the accepted items.

Usage::

    .venv/bin/python scripts/benchfill_oc.py --prior candidates    # about 10 minutes on 2 cores
    .venv/bin/python scripts/benchfill_oc.py --systems 20 50 --candidates 60 --subjects 60 --draws 200
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from collections.abc import Sequence

import pandas as pd

from irtbayes.benchfill.calibration import operating_characteristic, operating_characteristic_table
from irtbayes.fit import fit
from irtbayes.model import ModelSpec
from irtbayes.simulate import simulate_responses

SCENARIOS = {
    "uniform": "Candidates aimed at the bin: true difficulties uniform on [{lo:g}, {hi:g}], discriminations "
    "exp(N(0, 0.3)).",
    "bank": "Candidates like the bank's items: true (difficulty, log discrimination) drawn from the fitted "
    "hierarchy's predictive, the prior the calibration uses.",
}


PRIORS = {
    "candidates": "the candidates' own group (default).",
    "bank": "a new item of the bank's benchmark.",
}


def markdown_table(table: pd.DataFrame, *, tau: float) -> str:
    """The OC table in markdown."""
    lines = [
        "| systems | candidates | in bin | accepted | precision (± se) | recall | mean P(in bin) of accepted |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in table.iterrows():
        precision = "–" if pd.isna(r["precision"]) else f"{r['precision']:.3f} ± {r['precision_se']:.3f}"
        promised = "–" if pd.isna(r["mean_p_in_target_accepted"]) else f"{r['mean_p_in_target_accepted']:.3f}"
        lines.append(
            f"| {int(r['n_systems'])} | {int(r['n_candidates'])} | {int(r['n_in_bin'])} | {int(r['n_accepted'])} | "
            f"{precision} | {r['recall']:.3f} | {promised} |"
        )
    accepted = table["n_accepted"].sum()
    pooled = table["n_true_accepted"].sum() / accepted if accepted else float("nan")
    lines.append("")
    lines.append(f"Pooled precision {pooled:.3f} over {int(accepted)} accepted candidates (tau = {tau:g}).")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subjects", type=int, default=200, help="systems in the simulated bank (default 200)")
    parser.add_argument("--items", type=int, default=40, help="items in the simulated bank (default 40)")
    parser.add_argument("--benchmarks", type=int, default=2, help="benchmarks in the bank (default 2)")
    parser.add_argument("--systems", type=int, nargs="+", default=[20, 50, 100, 200], help="responding systems")
    parser.add_argument("--candidates", type=int, default=300, help="candidates per number of systems")
    parser.add_argument("--lo", type=float, default=0.0, help="target bin lower edge (default 0)")
    parser.add_argument("--hi", type=float, default=1.0, help="target bin upper edge (default 1)")
    parser.add_argument("--tau", type=float, default=0.8)
    parser.add_argument("--draws", type=int, default=1000, help="bank fit: draws per chain (2 chains)")
    parser.add_argument("--ability-points", type=int, default=16, help="quantile points per ability posterior")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument(
        "--prior",
        nargs="+",
        choices=("candidates", "bank"),
        default=["candidates", "bank"],
        help="calibration priors to compare (default both)",
    )
    parser.add_argument(
        "--truth", nargs="+", choices=("uniform", "bank"), default=["uniform", "bank"], help="scenarios to run"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    started = time.perf_counter()
    data, _ = simulate_responses(
        args.subjects, args.items, kind="2pl", n_benchmarks=args.benchmarks, missing=0.0, seed=args.seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # two benchmarks make a funnel in the benchmark-level sd: small steps
        bank = fit(data, ModelSpec(kind="2pl"), chains=2, draws=args.draws, tune=args.draws, seed=args.seed,
                   progress=False, target_accept=0.95)  # fmt: skip
    fitted = time.perf_counter() - started
    tables = {}
    for truth in args.truth:
        for prior in args.prior:
            frame = operating_characteristic(
                bank,
                target_lo=args.lo,
                target_hi=args.hi,
                n_systems=args.systems,
                n_candidates=args.candidates,
                truth=truth,
                benchmark="bench00",
                tau=args.tau,
                seed=args.seed,
                ability_points=args.ability_points,
                prior=prior,
            )
            tables[truth, prior] = operating_characteristic_table(frame)
    total = time.perf_counter() - started
    print(
        f"BenchFill operating characteristic: bank {args.subjects} systems x {args.items} items in "
        f"{args.benchmarks} benchmark(s), candidates of bench00 (2PL, {bank.spec.hierarchy} hierarchy, 2 chains x "
        f"{args.draws} draws; {bank.diagnostics.summary().splitlines()[1]}); responding systems' true abilities = "
        f"their posterior means; target bin [{args.lo:g}, {args.hi:g}); tau {args.tau:g}; fixed-bank calibration; "
        f"seed {args.seed}. Fit {fitted:.0f} s, total {total:.0f} s."
    )
    for (truth, prior), table in tables.items():
        scenario = SCENARIOS[truth].format(lo=2 * args.lo - args.hi, hi=2 * args.hi - args.lo)
        print(f"\n{scenario} Calibration prior: {PRIORS[prior]}\n")
        print(markdown_table(table, tau=args.tau))
    return 0


if __name__ == "__main__":
    sys.exit(main())
