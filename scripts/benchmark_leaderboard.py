"""The whole leaderboard on one machine: a simulated leaderboard read from Parquet and fitted by the approximate tier.

The data are drawn like a large LLM leaderboard: ``--systems`` x ``--items`` in ``--benchmarks`` benchmarks of equal
size, 2PL responses (abilities N(0, 1), difficulties N(benchmark mean, 1) with benchmark means spread over
[-1, 1], log-discriminations N(0, 0.3)), and a share ``--block-missing`` of the (system, benchmark) pairs never run
(every system keeps at least one benchmark). They are written once to Parquet with dictionary-encoded ``subject``,
``item`` and ``benchmark`` columns, as common tools export them, and kept in ``--cache`` for later runs.

Each case is fitted by ``irtbayes fit DATA --sampler approx`` in a child process, whose wall time and peak
resident memory are measured (``os.wait4``'s resource usage of that child); the fit's log gives the time of each
stage. With ``--audit``, ``irtbayes audit --fit`` (with its report) is measured alike. The script then reads the saved fit and reports the Spearman correlation of the difficulties' posterior
means with the truth and the coverage of their 90% intervals. The first case is the baseline: every other case
prints its time and memory as ratios against it, and against the targets (20 minutes, 12 GB).

Usage::

    OMP_NUM_THREADS=2 .venv/bin/python scripts/benchmark_leaderboard.py                     # 1000x6000, then 5000x30000
    .venv/bin/python scripts/benchmark_leaderboard.py --cases 1000x6000 --cache /tmp/lb
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
TARGET_S, TARGET_GB = 20 * 60, 12.0


def simulate(n_sub: int, n_items: int, n_bench: int, block_missing: float, seed: int, path: Path) -> pd.DataFrame:
    """Write the leaderboard's responses to ``path`` (Parquet, dictionary-encoded ids) in slices of systems; return
    the items' truth (``item``, ``benchmark``, ``difficulty``, ``discrimination``)."""
    rng = np.random.default_rng(seed)
    bench = np.repeat(np.arange(n_bench), -(-n_items // n_bench))[:n_items]
    means = np.linspace(-1.0, 1.0, n_bench)
    difficulty = rng.normal(means[bench], 1.0)
    discrimination = np.exp(rng.normal(0.0, 0.3, n_items))
    ability = rng.normal(size=n_sub)
    runs = rng.uniform(size=(n_sub, n_bench)) >= block_missing
    runs[np.arange(n_sub), rng.integers(0, n_bench, n_sub)] = True  # at least one benchmark each
    subjects = pa.array([f"model{j:05d}" for j in range(n_sub)]).dictionary_encode()
    items = pa.array([f"b{b}/q{i:06d}" for i, b in enumerate(bench)]).dictionary_encode()
    benchmarks = pa.array([f"bench{b}" for b in range(n_bench)]).dictionary_encode()
    schema = pa.schema(
        [
            ("subject", pa.dictionary(pa.int32(), pa.string())),
            ("item", pa.dictionary(pa.int32(), pa.string())),
            ("benchmark", pa.dictionary(pa.int8(), pa.string())),
            ("response", pa.int8()),
        ]
    )
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_sub, 250):
            rows = np.arange(start, min(start + 250, n_sub))
            eta = discrimination * (ability[rows, None] - difficulty)
            y = (rng.uniform(size=eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int8)
            s, i = np.nonzero(runs[rows][:, bench])
            table = pa.table(
                {
                    "subject": pa.DictionaryArray.from_arrays(pa.array(rows[s], pa.int32()), subjects.dictionary),
                    "item": pa.DictionaryArray.from_arrays(pa.array(i, pa.int32()), items.dictionary),
                    "benchmark": pa.DictionaryArray.from_arrays(pa.array(bench[i], pa.int8()), benchmarks.dictionary),
                    "response": pa.array(y[s, i]),
                },
                schema=schema,
            )
            writer.write_table(table)
    tmp.replace(path)
    return pd.DataFrame(
        {
            "item": items.dictionary.to_pylist(),
            "benchmark": [f"bench{b}" for b in bench],
            "difficulty": difficulty,
            "discrimination": discrimination,
        }
    )


def prepared(case: str, args: argparse.Namespace) -> tuple[Path, pd.DataFrame, int]:
    """The case's Parquet file and its truth, made once in ``args.cache``; the number of responses."""
    n_sub, n_items = (int(v) for v in case.split("x"))
    stem = f"leaderboard_{case}_b{args.benchmarks}_m{args.block_missing}_s{args.seed}"
    data, truth_path = args.cache / f"{stem}.parquet", args.cache / f"{stem}_truth.csv"
    if not (data.is_file() and truth_path.is_file()):
        t0 = time.perf_counter()
        truth = simulate(n_sub, n_items, args.benchmarks, args.block_missing, args.seed, data)
        truth.to_csv(truth_path, index=False)
        print(f"{case}: simulated in {time.perf_counter() - t0:.0f} s -> {data}", flush=True)
    return data, pd.read_csv(truth_path), pq.ParquetFile(data).metadata.num_rows


def run_child(command: list[str]) -> tuple[float, float, str]:
    """Run ``command`` in a child process: wall seconds, the child's own peak resident memory in GB, its stderr."""
    t0 = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO) as child:
        stderr = child.stderr.read() if child.stderr else ""
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t0
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:5])} failed ({child.returncode}):\n{stderr[-4000:]}")
    return seconds, usage.ru_maxrss / 1024**2, stderr


def run_fit(data: Path, out: Path, args: argparse.Namespace) -> tuple[float, float, str]:
    """``irtbayes fit DATA --sampler approx``: wall seconds, peak GB of the child, its log."""
    command = [sys.executable, "-m", "irtbayes", "fit", str(data), "--sampler", "approx", "--seed", "1"]
    return run_child([*command, "--out", str(out), "--overwrite", "--no-progress", *args.fit_args])


def run_audit(fit: Path, out: Path) -> tuple[float, float, str]:
    """``irtbayes audit --fit FIT`` with its report: wall seconds, peak GB of the child, its log."""
    return run_child([sys.executable, "-m", "irtbayes", "audit", "--fit", str(fit), "--out", str(out), "--no-progress"])


def recovery(out: Path, truth: pd.DataFrame) -> dict[str, float]:
    """Spearman of the difficulties' posterior means with the truth, and the coverage of their 90% intervals."""
    items = pd.read_csv(out / "items.csv")  # the saved fit's items table: 90% intervals
    merged = truth.merge(items, on="item", how="inner")
    covered = (merged["difficulty_ci_low"] <= merged["difficulty"]) & (
        merged["difficulty"] <= merged["difficulty_ci_high"]
    )
    return {
        "items_compared": len(merged),
        "spearman_difficulty": float(merged["difficulty"].corr(merged["difficulty_mean"], method="spearman")),
        "coverage90_difficulty": float(covered.mean()),
    }


def stages(log: str) -> dict[str, float]:
    """Seconds of the stages the fit's log reports (``... in 12.3 s``)."""
    found: dict[str, float] = {}
    for line in log.splitlines():
        match = re.search(r"irtbayes[.\w]*: (.+?) in (\d+(?:\.\d+)?) s", line)
        if match:
            found[match.group(1)[:60]] = float(match.group(2))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", default="1000x6000,5000x30000", help="SYSTEMSxITEMS, comma-separated; the first is the baseline"
    )
    parser.add_argument("--benchmarks", type=int, default=8)
    parser.add_argument("--block-missing", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/irtbayes_leaderboard"))
    parser.add_argument("--json", type=Path, help="append the rows to this JSON-lines file")
    parser.add_argument("--audit", action="store_true", help="also audit each fit, with its report (time, memory)")
    parser.add_argument("fit_args", nargs="*", help="more options for `irtbayes fit` (after --)")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    base: dict[str, float] | None = None
    for case in args.cases.split(","):
        data, truth, n_responses = prepared(case, args)
        out = args.cache / f"fit_{case}"
        seconds, peak_gb, log = run_fit(data, out, args)
        audit_s, audit_gb, _ = run_audit(out, args.cache / f"audit_{case}") if args.audit else (None, None, "")
        row = {
            "case": case,
            "responses": n_responses,
            "seconds": round(seconds, 1),
            "peak_gb": round(peak_gb, 2),
            **recovery(out, truth),
            "stages_s": stages(log),
            "audit_seconds": None if audit_s is None else round(audit_s, 1),
            "audit_peak_gb": None if audit_gb is None else round(audit_gb, 2),
            "commit": commit.strip(),
            "machine": f"{platform.node()} {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d %H:%M"),
        }
        base = base or row
        print(
            f"{case}: {n_responses:,} responses, {seconds:.0f} s ({seconds / base['seconds']:.2f} x baseline, "
            f"{seconds / TARGET_S:.2f} of the target), peak {peak_gb:.2f} GB ({peak_gb / base['peak_gb']:.2f} x "
            f"baseline, {peak_gb / TARGET_GB:.2f} of the target); Spearman {row['spearman_difficulty']:.3f}, "
            f"coverage {row['coverage90_difficulty']:.3f}",
            flush=True,
        )
        print(f"  stages: {json.dumps(row['stages_s'])}", flush=True)
        if audit_s is not None:
            print(f"  audit with its report: {audit_s:.0f} s, peak {audit_gb:.2f} GB", flush=True)
        if args.json:
            with args.json.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
