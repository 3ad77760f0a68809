"""The ``irtbayes`` command: thin wrappers over the library's verbs.

Errors a user can cause (bad files, bad settings, mismatched fits) print one line to stderr and exit 2;
nothing prints a traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from irtbayes.errors import IrtbayesError

log = logging.getLogger("irtbayes")

FORMATS = ("auto", "long", "wide", "lm-eval", "helm", "dataset")


def _add_data_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Arguments that say how to read a data source; shared by every verb that reads responses."""
    parser.add_argument(
        "data",
        nargs=None if required else "?",
        help="a CSV/Parquet file, an lm-eval or HELM output folder, a data set folder, or a registered data "
        "set name (see `irtbayes data list`)" + ("" if required else "; default: the embedded data"),
    )
    group = parser.add_argument_group("reading the data")
    group.add_argument("--format", choices=FORMATS, default="auto", help="how to read DATA (default: guess)")
    group.add_argument("--rows", choices=("subjects", "items"), default="subjects", help="wide tables: what a row is")
    group.add_argument("--subject-col", default="subject", help="long tables: the subject column")
    group.add_argument("--item-col", default="item", help="long tables: the item column")
    group.add_argument("--response-col", default="response", help="long tables: the response column")
    group.add_argument("--items", help="a CSV/Parquet file of item metadata (item, benchmark, domain, text, ...)")
    group.add_argument("--metric", help="lm-eval/HELM: the metric to read (e.g. acc, acc_norm, exact_match)")
    group.add_argument("--filter", dest="lm_filter", help="lm-eval: the filter, when a task logs several")
    group.add_argument("--binary", action="store_true", help="refuse responses other than 0/1")


def load_data_argument(args: argparse.Namespace) -> object:
    """Read the data that ``args`` name (see :func:`_add_data_arguments`)."""
    from irtbayes import datasets, io
    from irtbayes.io import helm, lm_eval

    scoring = "binary" if args.binary else "auto"
    source = args.data
    if source is None:
        return datasets.load_folder(datasets.default_data_path())
    path = Path(source)
    if not path.exists() and args.format in ("auto", "dataset") and source in datasets.list_datasets().index:
        return datasets.load_dataset(source)
    fmt = args.format
    if fmt == "long":
        return io.load_long(
            path,
            subject=args.subject_col,
            item=args.item_col,
            response=args.response_col,
            items=args.items,
            scoring=scoring,
        )
    if fmt == "wide":
        return io.load_wide(path, rows=args.rows, items=args.items, scoring=scoring)
    if fmt == "lm-eval":
        return lm_eval.load_lm_eval(path, metric=args.metric, filter=args.lm_filter, scoring=scoring)
    if fmt == "helm":
        kwargs = {"metric": args.metric} if args.metric else {}
        return helm.load_helm(path, scoring=scoring, **kwargs)
    if fmt == "dataset":
        return datasets.load_folder(path)
    if path.is_file():
        head = io.read_table(path).columns
        if {args.subject_col, args.item_col, args.response_col} <= set(map(str, head)):
            return io.load_long(
                path,
                subject=args.subject_col,
                item=args.item_col,
                response=args.response_col,
                items=args.items,
                scoring=scoring,
            )
        return io.load_wide(path, rows=args.rows, items=args.items, scoring=scoring)
    if path.is_dir():
        if datasets.is_dataset_folder(path):
            return datasets.load_folder(path)
        if lm_eval.is_lm_eval_folder(path):
            return lm_eval.load_lm_eval(path, metric=args.metric, filter=args.lm_filter, scoring=scoring)
        if helm.is_helm_folder(path):
            kwargs = {"metric": args.metric} if args.metric else {}
            return helm.load_helm(path, scoring=scoring, **kwargs)
    return io.load(path)


# ---------------------------------------------------------------------------------------------- verbs
def cmd_data_summary(args: argparse.Namespace) -> int:
    data = load_data_argument(args)
    summary = data.summary()  # type: ignore[attr-defined]
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        print(summary.to_text(max_rows=args.max_rows))
    return 0


def cmd_data_list(args: argparse.Namespace) -> int:
    from irtbayes import datasets

    table = datasets.list_datasets()
    if args.json:
        print(table.reset_index().to_json(orient="records", indent=2))
    else:
        import pandas as pd

        shown = table[["n_subjects", "n_items", "domains", "licence", "storage", "available"]]
        with pd.option_context("display.max_colwidth", 50, "display.width", 160):
            print(shown.to_string())
        print(
            f"\nExternal data sets are read from ${datasets.DATA_DIR_ENV} (see `irtbayes data list --json` for origins)."
        )
    return 0


# ---------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irtbayes",
        description="Bayesian IRT audits of AI benchmarks: coverage, difficulty mismatch and gaps with credible "
        "intervals.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    parser.add_argument("--quiet", action="store_true", help="only warnings and errors")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    data = verbs.add_parser("data", help="inspect response data")
    data_verbs = data.add_subparsers(dest="data_verb", required=True, metavar="ACTION")
    summary = data_verbs.add_parser("summary", help="counts, missingness, accuracy, uninformative items")
    _add_data_arguments(summary, required=False)
    summary.add_argument("--json", action="store_true", help="print JSON for machines")
    summary.add_argument("--max-rows", type=int, default=60, help="rows shown per table (default 60)")
    summary.set_defaults(func=cmd_data_summary)
    listing = data_verbs.add_parser("list", help="the data sets irtbayes knows")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_data_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 user error, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.debug else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    log.setLevel(level)
    try:
        return int(args.func(args))
    except IrtbayesError as err:
        if args.debug:
            raise
        print(f"irtbayes: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("irtbayes: interrupted; nothing half-written was left behind", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
