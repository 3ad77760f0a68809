"""Gather the evaluation study's runs into ``notebooks/results/``: one CSV of every row, the summary and the figure.

The study runs data set by data set (``scripts/evaluation_study.py --csv ...``), often in several processes;
this joins their CSVs (``--csv A.csv B.csv ...``), in order, into ``evaluation_study.csv``, writes
``evaluation_study_summary.csv`` and draws ``figures/evaluation_study.png``, with the commands that made them in
``evaluation_study.json``.

Usage::

    .venv/bin/python scripts/evaluation_results.py --csv /tmp/eval/study_openllm.csv /tmp/eval/study_mmlu.csv \\
        --commands "scripts/evaluation_study.py --datasets openllm_tinybench --ks 10 30 --draws 100 ..."
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from evaluation_study import figure, summarise  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", nargs="+", required=True, help="the study's CSVs, in the order to report them")
    parser.add_argument("--commands", nargs="*", default=[], help="the commands that made them, for the record")
    parser.add_argument("--out", default=str(REPO / "notebooks" / "results"))
    args = parser.parse_args(argv)
    table = pd.concat([pd.read_csv(p) for p in args.csv], ignore_index=True)
    out = Path(args.out)
    table.to_csv(out / "evaluation_study.csv", index=False)
    summarise(table).to_csv(out / "evaluation_study_summary.csv", index=False)
    figure(table, out / "figures" / "evaluation_study.png")
    record = {
        "commands": args.commands,
        "seed": sorted(int(s) for s in table["seed"].unique()),
        "machine": f"{platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "datasets": list(dict.fromkeys(table["dataset"])),
        "banks": table.groupby("dataset")[["sampler", "approximate", "converged", "deviations"]]
        .first()
        .reset_index()
        .to_dict(orient="records"),
    }
    (out / "evaluation_study.json").write_text(json.dumps(record, indent=2) + "\n")
    print(
        f"wrote evaluation_study.csv, evaluation_study_summary.csv, evaluation_study.json and figures/evaluation_study.png to {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
