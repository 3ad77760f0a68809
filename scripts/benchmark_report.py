"""Benchmark: memory, time and size of the audit and the report as the number of subjects and items grows.

No sampling: each size gets a hand-built posterior. Responses are simulated from a 2PL
(:func:`irtbayes.data.simulate.simulate_responses`, 10% of cells missing, items in 5 benchmarks across 2 domains);
the posterior draws are the true values plus independent normal scatter (sd 0.3 for abilities, 0.15 for
difficulties, 0.05 for log-discriminations), with the hierarchy's hyperparameters, so that the audit
deconvolves as it does for a real fit. The convergence checks run on these draws as for a real fit. Each size
runs in its own subprocess, so that peak memory (max RSS) is its own.

The output folder is laid out as ``irtbayes audit`` lays it out: the audit's files (``summary.json``, one CSV
per table) with the report in ``report/`` (``report.html``, ``report.md``, ``figures/``, ``tables/``).

Prints, per size: peak RSS after building the fit, after the audit and after the report (the process's
maximum so far), wall time of the audit (with the audit's own breakdown) and of the report, the size of the
report folder (all its files, the CSV tables included) and of the audit's files beside it, the largest file,
the largest figure in pixels; then the ratios largest / baseline.

Usage:
    python scripts/benchmark_report.py                      # 100x500 (baseline) and 5000x500, 4 chains x 1000 draws
    python scripts/benchmark_report.py --sizes 300x50 --chains 2 --draws 200     # a quick check
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def _hand_built_fit(n_subjects: int, n_items: int, *, chains: int, draws: int, seed: int):  # type: ignore[no-untyped-def]
    """Simulated data and a Fit whose posterior is the truth plus known scatter."""
    import xarray as xr

    from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    from irtbayes.fitting.diagnostics.sampler import check_convergence
    from irtbayes.fitting.result import Fit, fit_constant_data
    from irtbayes.model.spec import ModelSpec

    data, truth = simulate_responses(n_subjects, n_items, kind="2pl", n_benchmarks=5, n_domains=2, seed=seed)
    posterior = posterior_near_truth(data, truth, chains=chains, draws=draws, seed=seed + 1)
    tree = xr.DataTree.from_dict({"posterior": posterior, "constant_data": fit_constant_data(data)})
    fitted = Fit(
        idata=tree,
        spec=ModelSpec(kind="2pl"),
        sampler={"name": "hand-built", "chains": chains, "draws": draws, "tune": 0, "seed": seed},
        data_checksum=data.checksum(),
        diagnostics=check_convergence(tree),
    )
    return data, fitted


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def _worker(config: dict) -> dict:
    """Build the fit, audit it and write the report (called in a subprocess)."""
    import logging
    import tempfile
    import time
    import warnings
    from pathlib import Path

    from PIL import Image

    from irtbayes.auditing.folder import save_audit
    from irtbayes.auditing.run import audit
    from irtbayes.reporting.report import report

    warnings.simplefilter("ignore")  # the hand-built draws fail nothing, but keep the output to the numbers
    data, fitted = _hand_built_fit(
        config["subjects"], config["items"], chains=config["chains"], draws=config["draws"], seed=config["seed"]
    )
    out = {"subjects": config["subjects"], "items": config["items"], "peak_fit_mib": _peak_mib()}
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("irtbayes.auditing").addHandler(handler)
    logging.getLogger("irtbayes.auditing").setLevel(logging.INFO)
    started = time.perf_counter()
    result = audit(fitted.idata, data, seed=config["seed"])
    out["audit_s"] = time.perf_counter() - started
    out["audit_log"] = messages[-1] if messages else ""
    out["peak_audit_mib"] = _peak_mib()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "audit"
        save_audit(result, folder)
        started = time.perf_counter()
        report(fitted, folder / "report", data=data, audit=result)
        out["report_s"] = time.perf_counter() - started
        out["peak_report_mib"] = _peak_mib()
        files = [p for p in folder.rglob("*") if p.is_file()]
        sizes = {str(p.relative_to(folder)): p.stat().st_size for p in files}
        out["report_mib"] = sum(v for k, v in sizes.items() if k.startswith("report/")) / 2**20
        out["audit_files_mib"] = sum(v for k, v in sizes.items() if not k.startswith("report/")) / 2**20
        out["html_mib"] = sizes["report/report.html"] / 2**20
        largest = max(sizes, key=sizes.__getitem__)
        out["largest_file"] = f"{largest} ({sizes[largest] / 2**20:.2f} MiB)"
        pixels = {p.name: Image.open(p).size for p in files if p.suffix == ".png"}
        widest = max(pixels, key=lambda k: pixels[k][0] * pixels[k][1])
        out["largest_png"] = f"{widest} {pixels[widest][0]} x {pixels[widest][1]} px"
        out["n_figures"] = len(pixels)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["100x500", "5000x500"], help="SUBJECTSxITEMS; first = baseline")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(json.loads(args.worker))))
        return 0
    rows = []
    for size in args.sizes:
        subjects, items = (int(v) for v in size.lower().split("x"))
        config = {"subjects": subjects, "items": items, "chains": args.chains, "draws": args.draws, "seed": args.seed}
        done = subprocess.run(
            [sys.executable, __file__, "--worker", json.dumps(config)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            print(f"{size}: failed (exit {done.returncode})\n{done.stderr[-3000:]}", file=sys.stderr)
            return 1
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{subjects:>6,} subjects x {items:,} items, {args.chains} chains x {args.draws} draws: "
            f"peak RSS {row['peak_fit_mib']:,.0f} MiB after building the fit, {row['peak_audit_mib']:,.0f} after "
            f"the audit ({row['audit_s']:.1f} s), {row['peak_report_mib']:,.0f} after the report "
            f"({row['report_s']:.1f} s); report folder {row['report_mib']:.2f} MiB (report.html "
            f"{row['html_mib']:.2f} MiB), audit files beside it {row['audit_files_mib']:.2f} MiB, largest file "
            f"{row['largest_file']}; {row['n_figures']} figures, largest {row['largest_png']}\n"
            f"    audit log: {row['audit_log']}",
            flush=True,
        )
    base = rows[0]
    for row in rows[1:]:
        print(
            f"{row['subjects']:,}x{row['items']:,} / {base['subjects']:,}x{base['items']:,}: "
            f"cells x{row['subjects'] * row['items'] / (base['subjects'] * base['items']):.0f}, "
            f"peak RSS x{row['peak_report_mib'] / base['peak_report_mib']:.2f}, "
            f"report folder x{row['report_mib'] / base['report_mib']:.2f}, "
            f"audit time x{row['audit_s'] / base['audit_s']:.1f}, report time x{row['report_s'] / base['report_s']:.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
