"""Benchmark: the default NUTS fit at two target acceptance rates, on simulated and real data of several designs.

Each case is fitted twice in one process with nutpie's defaults (warm start, sampling until converged, the same
sampler seed), once at each target acceptance (``--targets``, default 0.8 and 0.7); the model is compiled once,
for the first fit, and its compile time is left out of both. Per fit the script prints and writes (``--out``, a
CSV): the free parameters, the seconds of tuning, sampling and checks, the draws per chain until the checks
passed, the mean leapfrog steps per draw, the gradients (chains x (tune + draws) x steps, approximately: the
warm-up's steps are not stored and are counted at the kept draws' mean), the divergences, the largest r-hat,
the least bulk and tail ESS and the verdict; then, per case, the ratio of the seconds (second target / first).

Cases (``--cases``, comma-separated):

- ``sim:SxI:SEED``: 2PL responses of S subjects x I items, 25 benchmarks in 7 domains, 10% missing
  (``scripts/benchmark_fit.py``'s data);
- ``family:NAME:SEED``: a draw of a design family of the calibration study (``irtbayes.data.designs.FAMILIES``);
- ``data:NAME[:BENCH+BENCH...]``: a registered data set (external ones need ``$IRTBAYES_DATA_DIR``, see
  ``scripts/convert_data.py``), optionally only some of its benchmarks; ``data:openllm_tinybench@5`` keeps the
  systems that answered all five benchmarks.

Usage:
    python scripts/benchmark_target_accept.py --cases sim:100x1000:1,sim:100x1000:2 --out /tmp/ta.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path


def _data(case: str):  # type: ignore[no-untyped-def]
    kind, _, rest = case.partition(":")
    if kind == "sim":
        from irtbayes.data.simulate import simulate_responses

        size, seed = rest.split(":")
        n_subjects, n_items = (int(x) for x in size.lower().split("x"))
        data, _ = simulate_responses(
            n_subjects, n_items, kind="2pl", n_benchmarks=25, n_domains=7, missing=0.1, seed=int(seed)
        )
        return data, int(seed)
    if kind == "family":
        from irtbayes.data.designs import FAMILIES, simulate_design

        name, seed = rest.split(":")
        return simulate_design(FAMILIES[name], seed=int(seed)).data, int(seed)
    if kind == "data":
        from irtbayes.data.registry import load_dataset

        name, _, benches = rest.partition(":")
        options: dict = {}
        if "@" in name:
            name, least = name.split("@")
            options["min_benchmarks"] = int(least)
        if benches:
            options["benchmarks"] = benches.split("+")
        return load_dataset(name, **options), 1
    raise SystemExit(f"unknown case {case!r}: expected sim:SxI:SEED, family:NAME:SEED or data:NAME[:BENCH+...]")


def _worker(case: str, targets: list[float]) -> list[dict]:
    warnings.simplefilter("ignore")
    from irtbayes.fitting.fit import fit
    from irtbayes.model.build import build_model

    try:
        data, seed = _data(case)
    except (ValueError, KeyError) as error:  # a malformed size or seed, an unknown family
        raise SystemExit(
            f"case {case!r}: {error!r}; expected sim:SxI:SEED, family:NAME:SEED or data:NAME[:B+...]"
        ) from None
    model = build_model(data)
    n_free = int(sum(v.size for v in model.initial_point().values()))
    rows = []
    for target in targets:
        start = time.perf_counter()
        result = fit(data, sampler="nutpie", seed=seed, target_accept=target, progress=False)
        wall = time.perf_counter() - start
        card, diag = result.sampler, result.diagnostics
        done = card["until_converged"]["draws_done"]
        steps = float(diag.mean_steps or float("nan"))
        rows.append(
            {
                "case": case,
                "subjects": data.n_subjects,
                "items": data.n_items,
                "free": n_free,
                "target": target,
                "seconds": round(wall - (card.get("compile_s") or 0.0), 2),
                "draws": done,
                "steps": round(steps, 1),
                "gradients": int(card["chains"] * (card["tune"] + done) * steps),
                "divergences": diag.divergences,
                "max_rhat": round(diag.max_rhat, 4),
                "min_ess_bulk": round(diag.min_ess_bulk),
                "min_ess_tail": round(diag.min_ess_tail),
                "converged": bool(diag.ok),
                "outcome": card["until_converged"]["outcome"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="", help="comma-separated cases (see above)")
    parser.add_argument("--targets", default="0.8,0.7", help="comma-separated target acceptance rates")
    parser.add_argument("--out", type=Path, help="CSV to write (appended to, with a header when new)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    targets = [float(t) for t in args.targets.split(",")]
    if args.worker:
        print(json.dumps(_worker(args.worker, targets)))
        return 0
    if not args.cases:
        parser.error("--cases is required")
    fields = [
        "case", "subjects", "items", "free", "target", "seconds", "draws", "steps", "gradients", "divergences",
        "max_rhat", "min_ess_bulk", "min_ess_tail", "converged", "outcome",
    ]  # fmt: skip
    print(" ".join(f"{f:>12}" for f in fields), flush=True)
    for case in (c for c in args.cases.split(",") if c):
        print(f"[{time.strftime('%H:%M:%S')}] {case} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", case, "--targets", args.targets], capture_output=True, text=True
        )
        if proc.returncode != 0:
            print(f"{case}: failed\n{proc.stderr[-2000:]}", file=sys.stderr, flush=True)
            continue
        rows = json.loads(proc.stdout.strip().splitlines()[-1])
        for row in rows:
            print(" ".join(f"{row[f]!s:>12}" for f in fields), flush=True)
        last, first = rows[-1], rows[0]
        print(f"{'':>12} seconds {last['target']} / {first['target']}: {last['seconds'] / first['seconds']:.2f}")
        if args.out:
            new = not args.out.exists()
            with args.out.open("a", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=fields)
                if new:
                    writer.writeheader()
                writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
