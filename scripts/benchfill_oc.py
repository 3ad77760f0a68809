"""Operating characteristic of the BenchFill acceptance rule on the fast (fixed-bank) calibration path.

A bank is simulated (2PL, abilities standardised) and fitted; the fitted subjects' posterior mean abilities are then
taken as the systems' true abilities. For each number of responding systems, candidates get true difficulties
uniform on [lo - w, hi + w] (w = hi - lo, so a third lie in the aim, the bin [lo, hi) the candidates should fill)
and true discriminations exp(Normal(0, 0.3)) ("uniform"), or are drawn from the fitted hierarchy's predictive for a
new item of bench00 ("bank"). A share of them (``--mis-keyed``, default 20%) is mis-keyed (slope minus the drawn
discrimination: responses fall with ability) and a share (``--flat``, default 20%) is flat (slope 0.05). The
systems' responses are simulated, the candidates (of benchmark bench00) are calibrated with ``calibrate_fixed``
under each chosen prior (``--prior candidates bank``: the candidates' own group, the default, or a new item of
bench00) and decided with ``decide_all`` (tau, the data-alone check, the sign-free slope credibly above the least
slope, by default a quarter of the bank's typical discrimination, at least 10 responses).

Printed: a markdown table with, per number of systems, the candidates, those wanted (good and truly in the
bin), those accepted, the precision (share of accepted candidates that are wanted, with its binomial standard
error), the recall (share of wanted candidates accepted), the mean posterior P(in bin) of the accepted ones,
and for the mis-keyed and the flat candidates the share rejected and the share rejected with their own
reason among the failed checks.

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

from irtbayes.benchfill.acceptance import operating_characteristic, operating_characteristic_table
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.model.spec import ModelSpec

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


def _share(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:.2f}"


def markdown_table(table: pd.DataFrame, *, tau: float) -> str:
    """The OC table in markdown."""
    lines = [
        "| systems | candidates | wanted | accepted | precision (± se) | recall | mean P(in bin) of accepted | "
        "mis-keyed: rejected (named) | flat: rejected (named) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in table.iterrows():
        precision = "–" if pd.isna(r["precision"]) else f"{r['precision']:.3f} ± {r['precision_se']:.3f}"
        promised = "–" if pd.isna(r["mean_p_in_aim_accepted"]) else f"{r['mean_p_in_aim_accepted']:.3f}"
        lines.append(
            f"| {int(r['n_systems'])} | {int(r['n_candidates'])} | {int(r['n_in_bin'])} | {int(r['n_accepted'])} | "
            f"{precision} | {r['recall']:.3f} | {promised} | "
            f"{_share(r['mis_keyed_rejected'])} ({_share(r['mis_keyed_named'])}) of {int(r['n_mis_keyed'])} | "
            f"{_share(r['flat_rejected'])} ({_share(r['flat_named'])}) of {int(r['n_flat'])} |"
        )
    accepted = table["n_accepted"].sum()
    pooled = table["n_true_accepted"].sum() / accepted if accepted else float("nan")
    rows = table.loc[table["n_accepted"] > 0]
    short = rows.loc[rows["precision"] < tau, "n_systems"].tolist()
    lines.append("")
    lines.append(
        f"Pooled precision {pooled:.3f} over {int(accepted)} accepted candidates (tau = {tau:g}); precision "
        + (f"below tau with {short} systems." if short else "at least tau in every row with an acceptance.")
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subjects", type=int, default=200, help="systems in the simulated bank (default 200)")
    parser.add_argument("--items", type=int, default=40, help="items in the simulated bank (default 40)")
    parser.add_argument("--benchmarks", type=int, default=2, help="benchmarks in the bank (default 2)")
    parser.add_argument("--systems", type=int, nargs="+", default=[20, 50, 100, 200], help="responding systems")
    parser.add_argument("--candidates", type=int, default=300, help="candidates per number of systems")
    parser.add_argument("--lo", type=float, default=0.0, help="the aim's lower edge (default 0)")
    parser.add_argument("--hi", type=float, default=1.0, help="the aim's upper edge (default 1)")
    parser.add_argument("--tau", type=float, default=0.8)
    parser.add_argument("--draws", type=int, default=1000, help="bank fit: draws per chain (2 chains)")
    parser.add_argument("--ability-points", type=int, default=16, help="quantile points per ability posterior")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--mis-keyed", type=float, default=0.2, help="share of mis-keyed candidates (default 0.2)")
    parser.add_argument("--flat", type=float, default=0.2, help="share of flat candidates, slope 0.05 (default 0.2)")
    parser.add_argument(
        "--min-discrimination", type=float, help="least slope (default 0.25 of the bank's typical discrimination)"
    )
    parser.add_argument("--csv", help="also write the per-row table (every scenario and prior) to this CSV file")
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
    least = float("nan")
    for truth in args.truth:
        for prior in args.prior:
            frame = operating_characteristic(
                bank,
                aim_lo=args.lo,
                aim_hi=args.hi,
                n_systems=args.systems,
                n_candidates=args.candidates,
                truth=truth,
                benchmark="bench00",
                tau=args.tau,
                seed=args.seed,
                ability_points=args.ability_points,
                prior=prior,
                min_discrimination=args.min_discrimination,
                mis_keyed_share=args.mis_keyed,
                flat_share=args.flat,
            )
            tables[truth, prior] = operating_characteristic_table(frame)
            least = frame.attrs["min_discrimination"]
    total = time.perf_counter() - started
    print(
        f"BenchFill operating characteristic: bank {args.subjects} systems x {args.items} items in "
        f"{args.benchmarks} benchmark(s), candidates of bench00 (2PL, {bank.spec.hierarchy} hierarchy, 2 chains x "
        f"{args.draws} draws; {bank.diagnostics.to_text().splitlines()[1]}); responding systems' true abilities = "
        f"their posterior means; aim [{args.lo:g}, {args.hi:g}); tau {args.tau:g}; least slope {least:.3g}; "
        f"{args.mis_keyed:.0%} mis-keyed and {args.flat:.0%} flat candidates; fixed-bank calibration; "
        f"seed {args.seed}. Fit {fitted:.0f} s, total {total:.0f} s."
    )
    if args.csv:
        rows = [table.assign(truth=truth, prior=prior) for (truth, prior), table in tables.items()]
        pd.concat(rows, ignore_index=True).to_csv(args.csv, index=False)
    for (truth, prior), table in tables.items():
        scenario = SCENARIOS[truth].format(lo=2 * args.lo - args.hi, hi=2 * args.hi - args.lo)
        print(f"\n{scenario} Calibration prior: {PRIORS[prior]}\n")
        print(markdown_table(table, tau=args.tau))
    return 0


if __name__ == "__main__":
    sys.exit(main())
