"""Run the notebooks in ``notebooks/`` in order, as plain scripts, and report how long each took.

Usage::

    IRTBAYES_NB_MODE=full python scripts/run_notebooks.py            # the paper-style run -> notebooks/results/
    IRTBAYES_NB_MODE=fast python scripts/run_notebooks.py            # tiny sizes, outputs in a temporary folder
    python scripts/run_notebooks.py --only 03 04                     # some notebooks only

Every ``IRTBAYES_NB_*`` variable (see ``notebooks/_common.py``) is passed through to the notebooks. Each
notebook's output goes to ``<out>/logs/<notebook>.log``; a summary (seconds and exit status per notebook) is
printed and written to ``<out>/logs/run_summary.csv`` (rows of notebooks not run this time are kept). The exit status is 1 when any notebook failed.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"


def notebooks() -> list[Path]:
    """The notebook scripts, in order (``NN_name.py``)."""
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def default_out(mode: str) -> Path:
    env = os.environ.get("IRTBAYES_NB_OUT", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    if mode == "fast":
        return Path(tempfile.gettempdir()) / "irtbayes-notebooks-fast"
    return NOTEBOOKS / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("fast", "full"), help="overrides IRTBAYES_NB_MODE (default full)")
    parser.add_argument("--out", type=Path, help="overrides IRTBAYES_NB_OUT")
    parser.add_argument("--only", nargs="*", default=None, help="notebook numbers or names to run (e.g. 03 04)")
    args = parser.parse_args(argv)

    mode = args.mode or os.environ.get("IRTBAYES_NB_MODE", "full").strip().lower() or "full"
    out = args.out.resolve() if args.out else default_out(mode)
    env = dict(os.environ, IRTBAYES_NB_MODE=mode, IRTBAYES_NB_OUT=str(out), MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    chosen = notebooks()
    if args.only:
        chosen = [p for p in chosen if any(p.name.startswith(k) or p.stem == k for k in args.only)]
        if not chosen:
            print(f"no notebook matches {args.only}; notebooks: {[p.name for p in notebooks()]}", file=sys.stderr)
            return 2
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"mode {mode}; outputs in {out}; logs in {logs}", flush=True)
    rows = []
    for path in chosen:
        log_path = logs / f"{path.stem}.log"
        start = time.perf_counter()
        with log_path.open("w") as log:
            proc = subprocess.run(
                [sys.executable, str(path)], cwd=NOTEBOOKS, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
            )
        seconds = time.perf_counter() - start
        rows.append(
            {
                "notebook": path.name,
                "seconds": round(seconds, 1),
                "exit_status": proc.returncode,
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            }
        )
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode}; see {log_path})"
        print(f"{path.name:<28} {seconds:8.1f} s  {status}", flush=True)
    # the summary keeps earlier rows of notebooks not run this time
    summary = logs / "run_summary.csv"
    fields = ["notebook", "seconds", "exit_status", "finished"]
    earlier = []
    if summary.is_file():
        with summary.open(newline="") as fh:
            earlier = [r for r in csv.DictReader(fh) if r.get("notebook") not in {row["notebook"] for row in rows}]
    merged = sorted(earlier + rows, key=lambda r: r["notebook"])
    with summary.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows(merged)
    total = sum(r["seconds"] for r in rows)
    failed = [r["notebook"] for r in rows if r["exit_status"] != 0]
    print(f"total {total:.1f} s; " + (f"failed: {', '.join(failed)}" if failed else "all notebooks ran"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
