"""Validation of the approximate tier (``sampler="approx"``) against the truth and against NUTS.

For each case the data are simulated (2PL, 10% of cells missing, items in 25 benchmarks over 7 domains, as
in ``scripts/benchmark_fit.py``) or read (``mmlu_pro``: the embedded MMLU-Pro matrix, which has no truth).
Each fit runs in its own subprocess, so its wall time and peak memory (max RSS) are its own. Written per
(case, seed, method), one row each as it is measured, to ``--out`` (CSV):

- ``seconds``, ``peak_mib``, ``n_responses``;
- against the truth (simulated cases): coverage of the 90% intervals of difficulties and abilities, RMSE
  of the posterior means, Spearman correlation of the difficulty means with the true difficulties;
- against NUTS (on the ``method=nutpie`` row, which describes the approximate fit of the same data
  against that NUTS fit): the share of NUTS posterior means inside the approximate 90% intervals, the
  ratio of the mean interval widths (approx / NUTS), the correlations of difficulty and ability means, the largest difference in a
  benchmark's headline DDM (``ddm_w1``) and Maximum Gap (posterior means), and the Spearman correlation of the
  re-weighted leaderboards' mean ranks (every scope's rows together).

Usage:
    python scripts/validate_approx.py --cases 100x1000 --seeds 1,2,3 --nuts          # with NUTS (minutes each)
    python scripts/validate_approx.py --cases 400x5000,80x100000 --seeds 1            # approx only
    python scripts/validate_approx.py --cases mmlu_pro --nuts
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path


def _load(case: str, seed: int):  # type: ignore[no-untyped-def]
    from irtbayes.data.simulate import simulate_responses

    if case == "mmlu_pro":
        from irtbayes.data.registry import load_dataset

        return load_dataset("mmlu_pro"), None
    n_subjects, n_items = (int(v) for v in case.split("x"))
    return simulate_responses(n_subjects, n_items, kind="2pl", n_benchmarks=25, n_domains=7, missing=0.1, seed=seed)


def _worker(config: dict) -> dict:
    """Fit one case with one method; save the posterior summaries needed for comparison."""
    import numpy as np

    from irtbayes.auditing.run import audit
    from irtbayes.fitting.fit import fit

    warnings.simplefilter("ignore")
    data, truth = _load(config["case"], config["seed"])
    start = time.perf_counter()
    kwargs = {"chains": 4, "draws": 250} if config["method"] == "approx" else {}
    result = fit(data, sampler=config["method"], seed=config["seed"], progress=False, **kwargs)
    seconds = time.perf_counter() - start
    post = result.posterior
    out: dict = {"seconds": round(seconds, 1), "n_responses": data.n_responses, "converged": result.diagnostics.ok}
    summaries = {}
    for name in ("difficulty", "ability"):
        draws = post[name].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
        lo, hi = np.quantile(draws, [0.05, 0.95], axis=-1)
        summaries[name] = {"mean": draws.mean(-1).tolist(), "lo": lo.tolist(), "hi": hi.tolist()}
        if truth is not None:
            t = truth[name].to_numpy()
            out[f"{name}_coverage"] = float(np.mean((t >= lo) & (t <= hi)))
            out[f"{name}_rmse"] = float(np.sqrt(np.mean((draws.mean(-1) - t) ** 2)))
    if truth is not None:
        from scipy.stats import spearmanr

        out["difficulty_spearman_truth"] = float(spearmanr(summaries["difficulty"]["mean"], truth["difficulty"])[0])
    res = audit(result.idata, data, max_draws=500, seed=config["seed"])
    bench = res.benchmarks
    bench = bench[bench["scope_kind"] == "benchmark"].set_index("scope")
    summaries["ddm"] = bench["ddm_w1_mean"].to_dict()
    summaries["max_gap"] = bench["max_gap_mean"].to_dict()
    ranking = res.ranking
    summaries["rank"] = {f"{r.scope}|{r.subject}": float(r.rank_mean) for r in ranking.itertuples()}
    out["audit_seconds"] = round(time.perf_counter() - start - seconds, 1)
    out["peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    Path(config["summaries"]).write_text(json.dumps(summaries))
    return out


def _run(config: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(config)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{config}: worker failed\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _compare(approx: dict, nuts: dict) -> dict:
    import numpy as np
    from scipy.stats import pearsonr, spearmanr

    out = {}
    for name in ("difficulty", "ability"):
        m = np.asarray(nuts[name]["mean"])
        lo, hi = np.asarray(approx[name]["lo"]), np.asarray(approx[name]["hi"])
        out[f"{name}_covers_nuts_mean"] = float(np.mean((m >= lo) & (m <= hi)))
        out[f"{name}_r_with_nuts"] = float(pearsonr(approx[name]["mean"], m)[0])
        width_a = np.mean(hi - lo)
        width_n = np.mean(np.asarray(nuts[name]["hi"]) - np.asarray(nuts[name]["lo"]))
        out[f"{name}_width_ratio"] = float(width_a / width_n)
    for key in ("ddm", "max_gap"):
        common = sorted(set(approx[key]) & set(nuts[key]))
        diff = [abs(approx[key][k] - nuts[key][k]) for k in common]
        out[f"{key}_max_abs_diff"] = float(np.nanmax(diff)) if diff else float("nan")
    subjects = sorted(set(approx["rank"]) & set(nuts["rank"]))
    out["rank_spearman_with_nuts"] = float(
        spearmanr([approx["rank"][s] for s in subjects], [nuts["rank"][s] for s in subjects])[0]
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="100x1000", help="comma-separated SUBJECTSxITEMS or mmlu_pro")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--nuts", action="store_true", help="also fit NUTS (nutpie) and compare")
    parser.add_argument("--out", default="notebooks/results/approx_validation.csv")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(json.loads(args.worker))))
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = [
        "case",
        "seed",
        "method",
        "n_responses",
        "seconds",
        "audit_seconds",
        "peak_mib",
        "converged",
        "difficulty_coverage",
        "ability_coverage",
        "difficulty_rmse",
        "ability_rmse",
        "difficulty_spearman_truth",
        "difficulty_covers_nuts_mean",
        "ability_covers_nuts_mean",
        "difficulty_r_with_nuts",
        "ability_r_with_nuts",
        "difficulty_width_ratio",
        "ability_width_ratio",
        "ddm_max_abs_diff",
        "max_gap_max_abs_diff",
        "rank_spearman_with_nuts",
    ]
    new = not out.exists()
    with out.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        if new:
            writer.writeheader()
        for case in args.cases.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                summaries = {}
                for method in ["approx", *(["nutpie"] if args.nuts else [])]:
                    path = Path(f"/tmp/validate_approx_{case}_{seed}_{method}.json")
                    row = _run({"case": case, "seed": seed, "method": method, "summaries": str(path)})
                    summaries[method] = json.loads(path.read_text())
                    row.update(case=case, seed=seed, method=method)
                    if method == "nutpie":
                        row.update(_compare(summaries["approx"], summaries["nutpie"]))
                    writer.writerow(row)
                    handle.flush()
                    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
