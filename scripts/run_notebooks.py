"""Run the notebooks in ``notebooks/`` in order, as plain scripts, and report how long each took.

Usage::

    IRTBAYES_NB_MODE=full python scripts/run_notebooks.py            # the paper-style run -> notebooks/results/
    IRTBAYES_NB_MODE=fast python scripts/run_notebooks.py            # tiny sizes, outputs in a temporary folder
    python scripts/run_notebooks.py --only 03 04                     # some notebooks only
    python scripts/run_notebooks.py --html                           # executed in a kernel, rendered to HTML
    python scripts/run_notebooks.py --reuse-make-run out/audit/fit   # MMLU-Pro's fit from `make run`

``--html`` executes each notebook in a Jupyter kernel (nbclient; the ``notebooks`` extra) instead of as a script
and writes ``<out>/html/<notebook>.html`` with every output, the printed conclusions included; a notebook that
fails is still rendered up to the failing cell. ``--reuse-make-run DIR`` copies the saved fit of ``make run``
(``out/audit/fit``: MMLU-Pro at irtbayes' defaults, the full mode's settings for that population) to
``<out>/fits/mmlu_pro`` when no fit is there yet; notebook 3 checks its data and settings before reusing it.

Every ``IRTBAYES_NB_*`` variable (see ``notebooks/_common.py``) is passed through to the notebooks. Each
notebook's output goes to ``<out>/logs/<notebook>.log``; a summary (seconds and exit status per notebook) is
printed and written to ``<out>/logs/run_summary.csv`` (rows of notebooks not run this time are kept). The exit status is 1 when any notebook failed.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from irtbayes.core.files import atomic_write_text

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
    parser.add_argument("--html", action="store_true", help="execute in a Jupyter kernel and render to HTML")
    parser.add_argument("--reuse-make-run", type=Path, metavar="DIR", help="the saved fit of `make run` (MMLU-Pro)")
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
    if args.reuse_make_run is not None:
        reuse_fit(args.reuse_make_run, out / "fits" / "mmlu_pro")
    print(f"mode {mode}; outputs in {out}; logs in {logs}", flush=True)
    rows = []
    for path in chosen:
        log_path = logs / f"{path.stem}.log"
        start = time.perf_counter()
        if args.html:
            status_code = execute_to_html(path, out / "html" / f"{path.stem}.html", log_path, env)
        else:
            with log_path.open("w") as log:
                proc = subprocess.run(
                    [sys.executable, str(path)],
                    cwd=NOTEBOOKS,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            status_code = proc.returncode
        seconds = time.perf_counter() - start
        rows.append(
            {
                "notebook": path.name,
                "seconds": round(seconds, 1),
                "exit_status": status_code,
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            }
        )
        status = "ok" if status_code == 0 else f"FAILED (exit {status_code}; see {log_path})"
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


def reuse_fit(source: Path, target: Path) -> None:
    """Copy a saved fit folder to ``target`` unless one is there (the notebook checks data and settings)."""
    if target.exists():
        print(f"{target} exists; --reuse-make-run leaves it", flush=True)
        return
    if not (source / "card.json").is_file():
        raise SystemExit(f"--reuse-make-run: {source} holds no saved fit (no card.json)")
    tmp = target.with_name(target.name + ".copying")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    tmp.rename(target)
    print(f"copied the fit in {source} to {target}", flush=True)


def shared_styles(body: str, folder: Path) -> str:
    """``body`` with each ``<style>`` block of its head written once to ``folder/styles-<hash>.css`` and linked.

    nbconvert puts the same 260 kB of CSS into every notebook's page; the notebooks share one copy instead.
    """
    head_end = body.find("</head>")

    def link(match: re.Match[str]) -> str:
        if match.start() > head_end:  # a style inside an output stays where it is
            return match.group(0)
        css = match.group(1)
        name = f"styles-{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
        target = folder / name
        if not target.exists():  # written whole or not at all: a later run never finds a cut-off copy
            atomic_write_text(target, css)
        return f'<link rel="stylesheet" href="{name}">'

    return re.sub(r"<style[^>]*>(.*?)</style>", link, body, flags=re.S)


def execute_to_html(path: Path, html: Path, log_path: Path, env: dict[str, str]) -> int:
    """Execute the jupytext notebook ``path`` in a kernel with ``env``; write its HTML (also after a failing
    cell) and its text outputs to ``log_path``. Returns 0, or 1 when a cell failed."""
    try:
        import jupytext
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError
        from nbconvert import HTMLExporter
    except ImportError as err:
        raise SystemExit(
            f"--html needs jupytext, nbclient and nbconvert (pip install -e '.[notebooks]'): {err}"
        ) from err
    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    saved = dict(os.environ)
    os.environ.update(env)  # the kernel inherits this process's environment
    status = 0
    try:
        NotebookClient(
            nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
        ).execute()
    except CellExecutionError as err:
        status = 1
        print(f"{path.name}: a cell failed: {str(err).splitlines()[0] if str(err) else err}", file=sys.stderr)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    html.parent.mkdir(parents=True, exist_ok=True)
    body, _ = HTMLExporter().from_notebook_node(nb)
    atomic_write_text(html, shared_styles(body, html.parent))
    texts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                texts.append(output.get("text", ""))
            elif output.get("output_type") == "error":
                texts.append("\n".join(output.get("traceback", [])))
    log_path.write_text("".join(texts), encoding="utf-8")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
