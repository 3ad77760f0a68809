"""The ``irtbayes`` command: thin wrappers over the library's verbs.

Errors a user can cause (bad files, bad settings, mismatched fits) print one line to stderr and exit 2;
nothing prints a traceback unless ``--debug`` is given. Ctrl-C prints one line saying what was lost and
exits 130; an interrupted fit saves nothing unless ``--keep-partial`` is given.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from irtbayes.cli import evaluate as evaluate_commands
from irtbayes.cli import parser as cli_parser
from irtbayes.core.errors import DataError, FitInterrupted, IrtbayesError

if TYPE_CHECKING:
    import pandas as pd

    from irtbayes.data.columns import Scoring

log = logging.getLogger("irtbayes")


def load_data_argument(args: argparse.Namespace) -> object:
    """Read the data that ``args`` name (see :func:`irtbayes.cli.parser.add_data_arguments`)."""
    from irtbayes.data import io
    from irtbayes.data import registry as datasets

    source = args.data
    if source is None:
        return _checked_kind(datasets.load_folder(datasets.default_data_path()), args)
    path = Path(source)
    if not path.exists() and args.format in ("auto", "dataset") and source in datasets.list_datasets().index:
        return _checked_kind(datasets.load_dataset(source), args)
    fmt = args.format if args.format != "auto" else _detect_format(path, args)
    if fmt == "dataset":
        return _checked_kind(io.load(path, format=fmt), args)
    return io.load(path, format=fmt or "auto", **loader_options(args, fmt))


def loader_options(args: argparse.Namespace, fmt: str) -> dict[str, Any]:
    """The options of :func:`irtbayes.data.io.load` for a ``fmt`` file or folder from the data arguments."""
    scoring, ordinal = _scoring_options(args)
    options: dict[str, Any] = {"scoring": scoring, **ordinal}
    if fmt == "long":
        columns = {"subject": args.subject_col, "item": args.item_col, "response": args.response_col}
        options.update({key: value for key, value in columns.items() if value != key}, items=args.items)
        if getattr(args, "repeats", "error") != "error":
            options["repeats"] = args.repeats
    elif fmt == "wide":
        options.update(rows=args.rows, items=args.items)
    elif fmt in ("lm-eval", "leaderboard"):
        options.update(metric=args.metric, filter=args.lm_filter)
    elif fmt == "helm":
        options.update(_helm_options(args))
    elif fmt in ("inspect", "lighteval"):
        options.update(metric=args.metric)
    if fmt != "long" and getattr(args, "repeats", "error") != "error":
        raise DataError(f"--repeats reads repeated rows of a long table; {fmt or 'this'} data are not one")
    return {key: value for key, value in options.items() if value is not None}


def _scoring_options(args: argparse.Namespace) -> tuple[Scoring, dict[str, Any]]:
    """The loaders' ``scoring`` and their ordinal options (``categories``, ``bins``) from ``--response-kind``,
    ``--binary``, ``--categories`` and ``--score-bins``; an error for options that contradict each other."""
    kind = getattr(args, "response_kind", "auto") or "auto"
    if getattr(args, "binary", False):
        if kind not in ("auto", "binary"):
            raise DataError(f"--binary means --response-kind binary; it cannot go with --response-kind {kind}")
        kind = "binary"
    options = {"categories": ("categories", "--categories"), "bins": ("score_bins", "--score-bins")}
    ordinal = {key: getattr(args, dest) for key, (dest, _) in options.items() if getattr(args, dest, None) is not None}
    if ordinal and kind != "ordinal":
        given = " and ".join(options[key][1] for key in ordinal)
        raise DataError(f"{given} describe ordinal categories; they need --response-kind ordinal")
    return cast("Scoring", kind), ordinal


def _checked_kind(data: Any, args: argparse.Namespace) -> object:
    """A registered data set, whose manifest says what its responses are: an error when ``--response-kind`` (or
    ``--binary``) asks for binary or ordinal responses and it holds others, or when ``--categories``/``--score-bins`` are
    given (the manifest declares the categories)."""
    kind, ordinal = _scoring_options(args)
    if ordinal:
        raise DataError(
            f"{data.source}: a registered data set declares its own categories in its manifest; "
            "--categories and --score-bins apply to files and evaluation logs"
        )
    if kind in ("binary", "ordinal") and data.response_kind != kind:
        raise DataError(
            f"{data.source}: --response-kind {kind} asked for {kind} responses, but this data set holds "
            f"{data.summary().kind_text}"
        )
    return data


def _detect_format(path: Path, args: argparse.Namespace) -> str:
    """The format of ``--format auto`` (:func:`irtbayes.data.io.detect_format`, with the long table's column options)."""
    from irtbayes.data import io

    return io.detect_format(path, long_columns={args.subject_col, args.item_col, args.response_col})


def _helm_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {"metric": args.metric} if args.metric else {}
    if getattr(args, "suite", None):
        options["suite"] = [s.strip() for s in args.suite.split(",") if s.strip()]
    return options


# ---------------------------------------------------------------------------------------------- verbs
def cmd_data_summary(args: argparse.Namespace) -> int:
    from irtbayes.data import io
    from irtbayes.data.io import leaderboard, lm_eval

    choices = None
    choices_key = "lm_eval_choices"
    choices_title = "Tasks, filters and metrics logged (--filter and --metric choose among them):"
    source = Path(args.data) if args.data is not None else None
    if source is not None and (
        args.format == "lm-eval" or (args.format == "auto" and lm_eval.is_lm_eval_folder(source))
    ):
        # every filter is summarised, each as a condition; fit and audit ask for one where a task logs several
        choices = lm_eval.list_choices(source)
        if args.lm_filter is None:
            args.format, args.lm_filter = "lm-eval", lm_eval.ALL_FILTERS
    elif source is not None and (
        args.format == "leaderboard" or (args.format == "auto" and io.detect_format(source) == "leaderboard")
    ):
        # every metric is summarised, each as a condition; fit and audit ask for one where a task logs several
        # and has no default
        choices = leaderboard.list_choices(source)
        choices_key, choices_title = "leaderboard_choices", "Tasks and metrics logged (--metric chooses among them):"
        if args.metric is None:
            args.format, args.metric = "leaderboard", leaderboard.ALL
    data = load_data_argument(args)
    summary = data.summary()  # type: ignore[attr-defined]
    if args.json:
        payload = summary.to_dict()
        if choices is not None:
            payload[choices_key] = choices.to_dict(orient="records")
        print(json.dumps(payload, indent=2))
        return 0
    if choices is not None:
        import pandas as pd

        with pd.option_context("display.width", 160, "display.max_rows", args.max_rows):
            print(choices_title)
            print(choices.to_string(index=False) + "\n")
    print(summary.to_text(max_rows=args.max_rows))
    return 0


def cmd_data_list(args: argparse.Namespace) -> int:
    from irtbayes.data import registry as datasets

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


def _fit_from_args(data: object, args: argparse.Namespace) -> object:
    from irtbayes.fitting.fit import fit, note_default_model
    from irtbayes.model.inputs import default_spec
    from irtbayes.model.spec import ModelSpec

    kind = args.model or default_spec(data).kind  # type: ignore[arg-type]
    spec = ModelSpec(kind=kind, hierarchy=args.hierarchy, dims=args.dims, guessing=args.guessing)
    log.info("fitting a %s model (%s, %d chains)", kind.upper(), args.sampler, args.chains)
    fitted = fit(
        data,  # type: ignore[arg-type]
        spec,
        **cli_parser.picked(args, "sampler", "chains", "draws", "tune", "target_accept", "seed"),
        progress=not args.no_progress,
        keep_partial=bool(getattr(args, "keep_partial", False)),
        budget_s=60.0 * float(getattr(args, "budget", 15.0)),
        until_converged=getattr(args, "until_converged", None),
        warm_start=False if getattr(args, "no_warm_start", False) else None,
        remedy=not getattr(args, "no_remedy", False),
        sampler_kwargs=_sampler_kwargs(args),
    )
    if args.model is None:
        note_default_model(fitted, data)  # type: ignore[arg-type]
    return fitted


def _sampler_kwargs(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--devices`` for the numpyro sampler; a SpecError (exit 2, one line) with any other sampler."""
    from irtbayes.core.errors import SpecError

    if getattr(args, "devices", None) is None:
        return None
    if args.sampler != "numpyro":
        raise SpecError(f"--devices is for --sampler numpyro, not --sampler {args.sampler}")
    return {"devices": args.devices}


def _fit_interrupted(err: FitInterrupted, args: argparse.Namespace, *, inside_audit: bool) -> int:
    """Say in one line on stderr what an interrupted fit lost; with ``--keep-partial``, save the draws so far.

    The partial fit goes where the complete one would have: ``--out`` for ``fit``, ``OUT/fit`` for ``audit``
    (no audit is run on it). Returns 130, the exit code of a Ctrl-C.
    """
    from irtbayes.core.files import atomic_dir
    from irtbayes.fitting.storage import save_fit

    if err.partial is None or not getattr(args, "keep_partial", False):
        if getattr(args, "keep_partial", False):
            lost = "no draws to keep, nothing saved"
        elif err.draws_done > 0 or err.phase == "optimisation":
            lost = "nothing saved; rerun, or use --keep-partial to keep the draws so far"
        else:
            lost = "nothing saved; rerun"
        print(f"irtbayes: {err}: {lost}", file=sys.stderr)
        return 130
    try:
        if inside_audit:
            with atomic_dir(args.out) as tmp:
                save_fit(err.partial, tmp / "fit")
            path = Path(args.out) / "fit"
        else:
            path = save_fit(err.partial, args.out, overwrite=args.overwrite)
    except IrtbayesError as save_error:
        print(f"irtbayes: {err}: the draws so far were not saved ({save_error})", file=sys.stderr)
        return 130
    print(err.partial.to_text())
    after = f"; no audit was run (`irtbayes audit --fit {path}` audits it)" if inside_audit else ""
    print(
        f"irtbayes: {err}: saved the draws so far to {path} as a PARTIAL fit (its convergence checks fail){after}",
        file=sys.stderr,
    )
    return 130


def cmd_fit(args: argparse.Namespace) -> int:
    from irtbayes.fitting.storage import save_fit

    data = load_data_argument(args)
    try:
        result = _fit_from_args(data, args)
    except FitInterrupted as err:
        return _fit_interrupted(err, args, inside_audit=False)
    path = save_fit(result, args.out, overwrite=args.overwrite)  # type: ignore[arg-type]
    print(result.to_text())  # type: ignore[attr-defined]
    print(f"\nSaved the fit to {path}")
    ok = result.diagnostics.ok  # type: ignore[attr-defined]
    return 1 if args.strict and not ok else 0


def _load_fit_and_data(args: argparse.Namespace, fit_dir: str) -> tuple[object, object]:
    """A saved fit and the data it was made from: DATA when given, else the data its card records, read again as
    they were read (format, filter, metric, columns, response kind), from any folder. DATA that is the recorded file
    or folder, given without loader options of its own, is read as recorded too.

    The data's checksum must equal the one the fit recorded.
    """
    from irtbayes.fitting.storage import load_fit, load_fit_data

    fit_result = load_fit(fit_dir)
    reading = fit_result.info.get("reading")
    recorded = reading and args.data is not None and Path(args.data).resolve() == Path(reading["path"])
    if args.data is None or (recorded and not _loader_options_given(args)):
        data = load_fit_data(fit_result, hint="give the data as an argument")
        if getattr(args, "data", None) is None:
            args.data = str(reading["path"]) if reading else str(fit_result.info.get("source") or "")
        return fit_result, data
    given = load_data_argument(args)
    fit_result.check_data(given, where=str(fit_dir))  # type: ignore[arg-type]
    return fit_result, given


def _loader_options_given(args: argparse.Namespace) -> bool:
    """Whether the command line names how to read its data (a format, columns, a metric, a filter, ...)."""
    defaults = {
        "format": "auto",
        "subject_col": "subject",
        "item_col": "item",
        "response_col": "response",
        "rows": "subjects",
        "response_kind": "auto",
        "binary": False,
    }
    given = any(getattr(args, key, value) not in (value, None) for key, value in defaults.items())
    optional = ("items", "metric", "lm_filter", "suite", "categories", "score_bins")
    return given or any(getattr(args, key, None) is not None for key in optional)


def _audit_from_args(
    fit_result: object, data: object, args: argparse.Namespace, checks: pd.DataFrame | None = None
) -> object:
    from irtbayes.auditing.run import audit

    target = cli_parser.target_value(args.target)
    return audit(
        fit_result,  # type: ignore[arg-type]
        data,  # type: ignore[arg-type]
        target=target if args.group is None else None,
        bins=args.bins,
        range=args.range,
        group=args.group.split(",") if args.group else None,
        ci_prob=args.ci,
        ensemble=getattr(args, "ensemble", "auto"),
        graded_points=getattr(args, "graded_points", "location"),
        progress=not getattr(args, "no_progress", False),
        calibrated_intervals=not getattr(args, "posterior_intervals", False),
        self_check=getattr(args, "self_check", 0),
        scheduler=getattr(args, "scheduler", None),
        item_flags=None if checks is None else dict(zip(checks["item"], checks["flag"], strict=True)),
        exclude_flagged=bool(getattr(args, "exclude_flagged", False)),
    )


def _item_checks(fit_result: object, data: object, args: argparse.Namespace) -> pd.DataFrame | None:
    """The item checks the audit counts or leaves out: ``--flags`` (a check-items output), or with
    ``--exclude-flagged`` alone, the checks run now."""
    if getattr(args, "flags", None):
        from irtbayes.checks.items import load_item_checks

        return load_item_checks(args.flags)
    if getattr(args, "exclude_flagged", False):
        from irtbayes.checks.items import check_items

        log.info("checking the items for reversed, flat and DIF flags (irtbayes check-items)")
        return check_items(fit_result, data).items  # type: ignore[arg-type]
    return None


def cmd_audit(args: argparse.Namespace) -> int:
    from irtbayes.auditing.folder import save_audit
    from irtbayes.core.files import atomic_dir
    from irtbayes.fitting.storage import save_fit
    from irtbayes.reporting.findings import audit_findings
    from irtbayes.reporting.report import build_report, write_report_files

    if args.fit:
        fit_result, data = _load_fit_and_data(args, args.fit)
    else:
        data = load_data_argument(args)
        from irtbayes.auditing.deconvolve import NUMBA_WARMUP
        from irtbayes.core.jit import want

        want(NUMBA_WARMUP)  # the audit's numba code compiles beside the model on a first run
        try:
            fit_result = _fit_from_args(data, args)
        except FitInterrupted as err:
            return _fit_interrupted(err, args, inside_audit=True)
        from irtbayes.fitting.sampling import release_compiled

        release_compiled()  # this process fits once: the audit, the saved fit and the report need the memory
    checks = _item_checks(fit_result, data, args)
    result = _audit_from_args(fit_result, data, args, checks)
    # the fit is saved while the report is written (each about 6 s at MMLU-Pro's size, much of it in NumPy and
    # file writes, which let the other thread run); leaving the block waits for both, error or Ctrl-C, before
    # the folder is put in place or removed
    fit_folder = str(args.fit or Path(args.out) / "fit")
    found = audit_findings(fit_result, result, fit_folder=fit_folder)  # type: ignore[arg-type]
    with atomic_dir(args.out) as tmp, ThreadPoolExecutor(1) as pool:
        save_audit(result, tmp, text=found.to_text() + "\n\n" + result.to_text())  # type: ignore[arg-type, attr-defined]
        saved = None if args.fit else pool.submit(save_fit, fit_result, tmp / "fit")  # type: ignore[arg-type]
        if not args.no_report:
            log.info("writing the report")
            doc = build_report(
                fit_result,  # type: ignore[arg-type]
                data,  # type: ignore[arg-type]
                audit=result,  # type: ignore[arg-type]
                fit_folder=fit_folder,
                item_checks=checks,
            )
            write_report_files(doc, fit_result, tmp / "report", audit=result)  # type: ignore[arg-type]
        if saved is not None:
            saved.result()  # its error, if any
    print(fit_result.to_text())  # type: ignore[attr-defined]
    print()
    print(dataclasses.replace(found, open=[], glossary=[]).to_text())
    print()
    print(result.to_text())  # type: ignore[attr-defined]
    print(f"\nWrote {Path(args.out) / 'summary.json'}, bins.csv, ranking.csv and the other tables")
    if not args.fit:
        print(f"Saved the fit to {Path(args.out) / 'fit'} (reuse it with --fit)")
    if not args.no_report:
        print(f"Report: {Path(args.out) / 'report' / 'report.html'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from irtbayes.auditing.folder import load_audit
    from irtbayes.reporting.report import report

    fit_result, data = _load_fit_and_data(args, args.fit)
    # a saved audit is read as it was written (its own target, seed, draws, top-k, group and intervals) and
    # must have been made from this fit; it is never rerun
    result = None if not args.audit else load_audit(args.audit, fit=fit_result, data=data)  # type: ignore[arg-type]
    benchfill = None
    if args.benchfill:
        from irtbayes.benchfill.result import load_benchfill

        benchfill = load_benchfill(args.benchfill)
    tracking = None
    if getattr(args, "tracking", None):
        from irtbayes.evaluating.tracking import Tracking

        tracking = Tracking.load(args.tracking)
    item_checks = None
    if getattr(args, "flags", None):
        from irtbayes.checks.items import load_item_checks

        item_checks = load_item_checks(args.flags)
    path = report(
        fit_result,  # type: ignore[arg-type]
        args.out,
        data=data,  # type: ignore[arg-type]
        audit=result,
        benchfill=benchfill,
        tracking=tracking,
        item_checks=item_checks,
        fit_folder=args.fit,
    )
    if fit_result.partial:  # type: ignore[attr-defined]
        print(fit_result.partial_text())  # type: ignore[attr-defined]
    print(f"Report: {path}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write a saved fit for other tools: mirt tables, a tinyBenchmarks anchor set, or py-irt JSON Lines."""
    from irtbayes.core.errors import DataError
    from irtbayes.data.io.pyirt import write_pyirt
    from irtbayes.fitting.storage import load_fit, load_fit_data
    from irtbayes.reporting import interchange

    fit_result = load_fit(args.fit)
    out = Path(args.out)
    data = None
    if args.format == "pyirt":
        data = load_fit_data(fit_result, args.data, hint="give it with --data")
    try:
        if data is not None:
            print(f"py-irt JSON Lines: {write_pyirt(data, out, condition=args.condition)}")
        elif args.format in ("mirt", "mirt-si"):
            paths = interchange.write_mirt(fit_result, out, layout="irt" if args.format == "mirt" else "si")
            print(f"mirt tables in {out}: " + ", ".join(p.name for p in paths.values()))
        else:
            written = interchange.write_tinybenchmarks(fit_result, out, n_anchors=args.anchors, seed=args.seed)
            print(f"tinyBenchmarks anchor set: {written}")
    except OSError as err:
        raise DataError(f"{out}: cannot be written ({err.strerror or err})") from None
    if fit_result.approximate:
        print("note: the fit is APPROXIMATE (the approximate tier, ADVI or Pathfinder); so are the exported values")
    if fit_result.partial:
        print(fit_result.partial_text())
    return 0


def _refit_engine(args: argparse.Namespace) -> dict[str, Any]:
    """``--engine`` and ``--scheduler`` as robustness settings; the deprecated ``--engine dask`` and ``--dask-address``
    are read, with a warning, as the local processes and ``--scheduler``."""
    engine, scheduler = args.engine, args.scheduler
    if engine == "dask" or args.dask_address is not None:
        log.warning(
            "--engine dask and --dask-address are deprecated and will be removed in the next release: give "
            "--scheduler ADDRESS to run the refits on a Dask cluster"
        )
        engine, scheduler = "process" if engine == "dask" else engine, scheduler or args.dask_address
    return {"engine": engine, "scheduler": scheduler}


def cmd_robustness(args: argparse.Namespace) -> int:
    """Condition sensitivity, population dependence and revisions of a data set's audit."""
    import pandas as pd

    from irtbayes.core.errors import DataError, SpecError
    from irtbayes.data import io
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.fitting.storage import load_fit
    from irtbayes.robustness.population import REFIT_DEFAULTS, Population
    from irtbayes.robustness.run import ConditionSettings, RobustnessSettings, check_robustness

    data = load_data_argument(args)
    family: object = args.family_col
    if args.families:
        table = pd.read_csv(args.families, dtype=str)
        if not {"subject", "family"} <= set(table.columns):
            raise DataError(f"{args.families}: needs columns 'subject' and 'family', has {list(table.columns)}")
        family = dict(zip(table["subject"], table["family"], strict=True))
    populations = [Population(Path(p).stem, "population", io.load(Path(p))) for p in (args.population or [])]
    revision = None
    if args.revision:
        if args.revision.count(":") != 1:
            raise SpecError(f"--revision takes ORIGINAL:REVISED benchmark names, got {args.revision!r}")
        original, revised = args.revision.split(":")
        revision = (original, revised)
    chosen = (("draws", args.draws), ("tune", args.tune), ("target_accept", args.target_accept))
    given = {k: v for k, v in chosen if v is not None}
    fits = {"chains": args.chains, "seed": args.seed, "progress": False, **given}
    settings = RobustnessSettings(
        family=family,  # type: ignore[arg-type]
        populations=populations,
        revision=revision,
        fit=SamplerSettings(**fits),
        refit=SamplerSettings(**{**REFIT_DEFAULTS, **fits}),
        conditions=ConditionSettings(chains=args.chains, **given),
        **cli_parser.picked(args, "reference_condition", "bootstrap", "workers"),
        **_refit_engine(args),
        **cli_parser.picked(args, "fdr", "min_effect", "against", "agreement", "seed"),
        ci_prob=args.ci,
    )
    result = check_robustness(
        data,  # type: ignore[arg-type]
        out=args.out,
        fit=load_fit(args.fit) if args.fit else None,
        settings=settings,
    )
    if not args.no_report:
        from irtbayes.reporting.robustness import report_robustness

        result.files.update(report_robustness(result, args.out))
    print(result.to_text())
    print(f"\nWrote {', '.join(sorted(p.name for p in result.files.values()))} to {args.out}")
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
    cli_parser.add_data_verb(verbs, summary_command=cmd_data_summary, list_command=cmd_data_list)
    cli_parser.add_fit_verb(verbs, cmd_fit)
    cli_parser.add_audit_verb(verbs, cmd_audit)
    cli_parser.add_report_verb(verbs, cmd_report)
    cli_parser.add_score_verb(verbs, evaluate_commands.cmd_score)
    cli_parser.add_select_verb(verbs, evaluate_commands.cmd_select)
    cli_parser.add_adaptive_verb(verbs, evaluate_commands.cmd_adaptive)
    cli_parser.add_track_verb(verbs, evaluate_commands.cmd_track)
    cli_parser.add_export_verb(verbs, cmd_export)
    cli_parser.add_robustness_verb(verbs, cmd_robustness)
    from irtbayes.cli import items as items_commands

    cli_parser.add_check_items_verb(verbs, items_commands.cmd_check_items)

    from irtbayes.cli import benchfill as benchfill_commands

    benchfill_commands.add_parser(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 user error, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.debug else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    log.setLevel(level)
    with warnings.catch_warnings():
        if not args.debug and not _recording_warnings():
            warnings.showwarning = _plain_warning(set())
        return _run(args)


def _recording_warnings() -> bool:
    """Whether a caller records warnings (``catch_warnings(record=True)``, ``pytest.warns``): they are its to keep.
    CPython's recorder is the ``append`` of a list, installed as the warnings module's ``_showwarnmsg_impl``."""
    return isinstance(getattr(getattr(warnings, "_showwarnmsg_impl", None), "__self__", None), list)


def _plain_warning(seen: set[str]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each warning once, as one line (``warning: ...``), without the
    source path and line that Python's default shows (``--debug`` keeps Python's form)."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        text = str(message).strip()
        if text not in seen:
            seen.add(text)
            print(f"warning: {text}", file=sys.stderr)

    return show


def _run(args: argparse.Namespace) -> int:
    """Run the verb ``args`` name; returns the exit code."""
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
    except FitInterrupted as err:  # from a fit outside `fit` and `audit` (which say more)
        print(f"irtbayes: {err}: nothing saved", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("irtbayes: interrupted; nothing half-written was left behind", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
