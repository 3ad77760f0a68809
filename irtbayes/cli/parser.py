"""The arguments of the ``irtbayes`` command: one function per verb, given the command the verb runs.

:func:`irtbayes.cli.main.build_parser` adds each verb with its command; this module only says what the verbs
accept, and imports nothing from :mod:`irtbayes.cli.main`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = [
    "FORMATS",
    "Command",
    "add_adaptive_verb",
    "add_audit_verb",
    "add_check_items_verb",
    "add_data_arguments",
    "add_data_verb",
    "add_evaluation_target_arguments",
    "add_export_verb",
    "add_fit_options",
    "add_fit_verb",
    "add_report_verb",
    "add_robustness_verb",
    "add_score_verb",
    "add_select_verb",
    "add_target_arguments",
    "add_track_verb",
    "picked",
    "target_value",
]

#: What a verb runs: the parsed arguments in, the exit code out.
Command = Callable[[argparse.Namespace], int]

FORMATS = (
    "auto", "long", "wide", "pyirt", "lm-eval", "helm", "leaderboard", "inspect", "lighteval", "opencompass", "dataset",
)  # fmt: skip


def picked(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """``{name: args.name}`` for each of ``names``: the options a verb hands on as they were parsed."""
    return {name: getattr(args, name) for name in names}


def add_scheduler_argument(parser: Any, what: str) -> None:
    """``--scheduler ADDRESS``: the Dask cluster ``what`` run on (docs/scale.md)."""
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help=f"run {what} on the dask.distributed scheduler at ADDRESS (tcp://host:8786; needs the dask extra); "
        "default: the address in IRTBAYES_SCHEDULER, else this machine",
    )


def add_data_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Arguments that say how to read a data source; shared by every verb that reads responses."""
    parser.add_argument(
        "data",
        nargs=None if required else "?",
        help="a CSV/Parquet file, an lm-eval, HELM, Open LLM Leaderboard details, inspect_ai, lighteval or OpenCompass "
        "folder, a data set folder, or a registered data set name (see `irtbayes data list`)"
        + ("" if required else "; default: the embedded data"),
    )
    group = parser.add_argument_group("reading the data")
    group.add_argument("--format", choices=FORMATS, default="auto", help="how to read DATA (default: guess)")
    group.add_argument("--rows", choices=("subjects", "items"), default="subjects", help="wide tables: what a row is")
    group.add_argument("--subject-col", default="subject", help="long tables: the subject column")
    group.add_argument("--item-col", default="item", help="long tables: the item column")
    group.add_argument("--response-col", default="response", help="long tables: the response column")
    group.add_argument("--items", help="a CSV/Parquet file of item metadata (item, benchmark, domain, text, ...)")
    group.add_argument(
        "--repeats",
        choices=("error", "trials"),
        default="error",
        help="long tables: rows that repeat a (subject, item) are an error (default), or, with trials, 0/1 trials "
        "of the item read as k successes of n trials (a table with successes and trials columns is read so anyway)",
    )
    group.add_argument(
        "--metric",
        help="lm-eval/HELM/leaderboard/lighteval: the metric to read (e.g. acc, acc_norm, exact_match); inspect: the "
        "scorer; leaderboard, inspect and lighteval: also TASK=METRIC,... for some tasks",
    )
    group.add_argument("--filter", dest="lm_filter", help="lm-eval: the filter, when a task logs several")
    group.add_argument("--suite", help="HELM: the suite(s) to read from a runs/ tree, comma-separated (default: all)")
    group.add_argument(
        "--response-kind",
        choices=("auto", "binary", "fraction", "ordinal"),
        default="auto",
        help="what the responses are: binary refuses anything but 0/1; fraction keeps scores in [0, 1]; ordinal "
        "reads graded categories (integers, --categories labels or --score-bins of numeric scores) as codes 0..K-1 "
        "(default auto: 0/1 or scores in [0, 1])",
    )
    group.add_argument("--binary", action="store_true", help="the same as --response-kind binary")
    group.add_argument(
        "--categories",
        type=_labels,
        metavar="A,B,C",
        help="ordinal: the category labels in order, the lowest first, comma-separated "
        "(e.g. 1_full_compliance,3_partial_refusal,2_full_refusal); default: the integers found",
    )
    group.add_argument(
        "--score-bins",
        type=_edges,
        metavar="E1,E2",
        help="ordinal: increasing edges that cut numeric scores into categories (score < E1 -> 0, "
        "E1 <= score < E2 -> 1, score >= E2 -> 2); not the audit's --bins",
    )


def _labels(text: str) -> list[str]:
    """``--categories A,B,C`` as a list of labels."""
    labels = [part.strip() for part in text.split(",")]
    if len(labels) < 2 or not all(labels):
        raise argparse.ArgumentTypeError(f"expected at least two comma-separated labels, got {text!r}")
    return labels


def _edges(text: str) -> list[float]:
    """``--score-bins E1,E2`` as a list of numbers."""
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def add_fit_options(parser: argparse.ArgumentParser) -> None:
    """Options of the model and the sampler; shared by ``fit`` and ``audit``."""
    group = parser.add_argument_group("the model and the sampler")
    group.add_argument(
        "--model",
        choices=("1pl", "2pl", "3pl", "grm", "gpcm"),
        default=None,
        help="IRT model (default 2pl; 1pl for fewer than 10 systems); grm (graded response) or gpcm (generalised partial credit) for ordinal "
        "responses (--response-kind ordinal), where binary items are the two-category case",
    )
    group.add_argument(
        "--hierarchy",
        choices=("auto", "none", "benchmark", "benchmark+domain"),
        default="auto",
        help="pool item parameters within benchmark and domain (default: as deep as the labels allow)",
    )
    group.add_argument("--dims", choices=("one", "domain"), default="one", help="one ability, or one per domain")
    group.add_argument(
        "--guessing",
        choices=("pooled", "chance"),
        default="pooled",
        help="3pl: each item's floor sampled around its chance level 1/n_options (pooled, default), or fixed there "
        "(chance; 0 for items without options): as fast as the 2pl",
    )
    group.add_argument(
        "--sampler",
        choices=("auto", "nutpie", "pymc", "numpyro", "approx", "advi", "pathfinder"),
        default="auto",
        help="auto (default): NUTS via nutpie when its estimated time fits --budget, else the approximate tier "
        "'approx' (empirical Bayes with grid posteriors, labelled approximate in every output); nutpie, pymc or "
        "numpyro force NUTS; advi/pathfinder are approximate quick looks",
    )
    group.add_argument(
        "--budget",
        type=float,
        default=15.0,
        metavar="MINUTES",
        help="time budget of --sampler auto and of --until-converged in minutes (default 15)",
    )
    group.add_argument(
        "--until-converged",
        action="store_true",
        default=None,
        help="NUTS (nutpie): --draws is the most per chain; stop as soon as r-hat, ESS and the other checks pass, "
        "or when --budget has passed. Without --draws this is the default (at most 4x the usual draws)",
    )
    group.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    group.add_argument(
        "--draws",
        type=int,
        help="draws per chain after tuning, fixed (default with nutpie: until converged, see --until-converged; otherwise 1000, 1250 for models with more than 5,000 parameters)",
    )
    group.add_argument(
        "--tune",
        type=int,
        default=None,
        help="tuning steps per chain (default: the sampler's own; nutpie 200 when warm-started, else 500)",
    )
    group.add_argument(
        "--no-warm-start",
        action="store_true",
        help="nutpie: start the chains where PyMC starts them (the prior's centre), not at draws around the "
        "empirical-Bayes modes (the default for 1PL and 2PL models with one ability dimension)",
    )
    group.add_argument(
        "--target-accept",
        type=float,
        help="NUTS target acceptance (default 0.8; 0.7 above 5,000 parameters; 0.95 below 30 items, or below 50 "
        "responses per item up to 5,000 parameters); a fit until converged that diverges samples again at 0.9, "
        "0.95 and 0.99 while --budget lasts",
    )
    group.add_argument(
        "--no-remedy",
        action="store_true",
        help="until converged: stop at the first run when it ends in divergent transitions instead of sampling "
        "again at a higher target acceptance",
    )
    group.add_argument("--devices", type=int, help="numpyro: JAX devices to split the responses over (default all)")
    group.add_argument("--seed", type=int, default=20260101, help="random seed (default 20260101)")
    group.add_argument("--no-progress", action="store_true", help="hide progress bars")
    group.add_argument(
        "--keep-partial",
        action="store_true",
        help="on Ctrl-C during sampling, save the draws so far as a fit marked PARTIAL (never converged); "
        "default: an interrupted fit saves nothing",
    )


_TARGET_HELP = "a CSV file of bins and weights, or comma-separated weights per bin"
_GROUP_HELP = "comma-separated subjects whose ability distribution is the target"
_RANGE_HELP = "target range on the ability scale"
_BINS_HELP = "number of bins (default 10)"


def target_value(text: str | None) -> str | list[float] | None:
    """``--target`` as the library takes it: a file or ``'uniform'`` as given, comma-separated weights as numbers."""
    from pathlib import Path

    if text is None or "," not in text or Path(text).exists():
        return text
    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        from irtbayes.core.errors import SpecError

        raise SpecError(f"--target: '{text}' is neither a file, 'uniform', nor numbers") from None


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the audit's target (range, bins, weights) and its item locations."""
    group = parser.add_argument_group("the audit's target")
    group.add_argument("--target", default="uniform", help=f"'uniform' (default), {_TARGET_HELP}")
    group.add_argument("--group", help=_GROUP_HELP)
    group.add_argument("--range", nargs=2, type=float, metavar=("L", "U"), help=_RANGE_HELP)
    group.add_argument("--bins", type=int, help=_BINS_HELP)
    group.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    group.add_argument(
        "--ensemble",
        choices=("auto", "deconvolved", "draws"),
        default="auto",
        help="item locations for coverage, DDM and Maximum Gap: deconvolved under each benchmark's estimated "
        "difficulty distribution (auto: when the fit allows) or the fit's draws",
    )
    parser.add_argument(
        "--graded-points",
        choices=("location", "thresholds"),
        default="location",
        help="graded fits (grm, gpcm): count each item at its location (where its expected score is half the "
        "maximum; default) or at each of its thresholds in coverage, DDM and the gaps",
    )


def add_data_verb(verbs: Any, *, summary_command: Command, list_command: Command) -> None:
    """The ``data`` verb and its actions ``summary`` and ``list``."""
    data = verbs.add_parser("data", help="inspect response data")
    data_verbs = data.add_subparsers(dest="data_verb", required=True, metavar="ACTION")
    summary = data_verbs.add_parser("summary", help="counts, missingness, accuracy, uninformative items")
    add_data_arguments(summary, required=False)
    summary.add_argument("--json", action="store_true", help="print JSON for machines")
    summary.add_argument("--max-rows", type=int, default=60, help="rows shown per table (default 60)")
    summary.set_defaults(func=summary_command)
    listing = data_verbs.add_parser("list", help="the data sets irtbayes knows")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=list_command)


def add_fit_verb(verbs: Any, command: Command) -> None:
    """The ``fit`` verb."""
    fit_p = verbs.add_parser("fit", help="fit a Bayesian IRT model and save it")
    add_data_arguments(fit_p)
    add_fit_options(fit_p)
    fit_p.add_argument("--out", required=True, help="folder to write the fit to (posterior.nc, card.json, tables)")
    fit_p.add_argument("--overwrite", action="store_true", help="replace an existing fit folder")
    fit_p.add_argument("--strict", action="store_true", help="exit 1 when the convergence checks fail")
    fit_p.set_defaults(func=command)


def add_audit_verb(verbs: Any, command: Command) -> None:
    """The ``audit`` verb."""
    audit_p = verbs.add_parser("audit", help="fit (or reuse a fit) and audit coverage, mismatch and gaps")
    add_data_arguments(audit_p, required=False)
    audit_p.add_argument("--fit", help="a saved fit folder to audit instead of fitting")
    add_fit_options(audit_p)
    add_target_arguments(audit_p)
    check = audit_p.add_argument_group("calibration of the intervals")
    check.add_argument(
        "--self-check",
        type=int,
        default=0,
        metavar="N",
        help="check the audit on your own design: simulate N data sets from the fitted posterior (your systems, "
        "items and missing cells), refit each with the approximate tier, audit them and report each benchmark's "
        "achieved coverage of its Maximum Gap and DDM intervals, with intervals widened to their calibrated level "
        "where it falls short (summary.json, the text and the report; 20 or more; default 0: off)",
    )
    add_scheduler_argument(check, "the self-check's refits")
    check.add_argument(
        "--posterior-intervals",
        action="store_true",
        help="report the Maximum Gap's and the DDM's posterior intervals as they are, not recalibrated across "
        "design families (the default; see docs/validation.md)",
    )
    flags = audit_p.add_argument_group("flagged items")
    flags.add_argument(
        "--flags",
        metavar="PATH",
        help="the item flags of `irtbayes check-items` (its folder or item_flags.csv): counted and reported, or left "
        "out with --exclude-flagged",
    )
    flags.add_argument(
        "--exclude-flagged",
        action="store_true",
        help="leave the flagged items (reversed, flat, DIF) out of every measure; without --flags, check the items "
        "first",
    )
    audit_p.add_argument("--out", default="out/audit", help="output folder (default out/audit)")
    audit_p.add_argument("--no-report", action="store_true", help="skip the HTML/Markdown report")
    audit_p.set_defaults(func=command)


def add_report_verb(verbs: Any, command: Command) -> None:
    """The ``report`` verb."""
    report_p = verbs.add_parser("report", help="write the research report of a saved fit (and audit)")
    report_p.add_argument("--fit", required=True, help="a saved fit folder")
    report_p.add_argument(
        "--audit", help="an `irtbayes audit` output folder made from this fit: reported as saved, not rerun"
    )
    report_p.add_argument("--benchfill", help="a `benchfill calibrate` output folder to report on")
    report_p.add_argument("--tracking", help="an `irtbayes track` output folder (checkpoints on this fit) to report on")
    report_p.add_argument("--flags", help="an `irtbayes check-items` output folder (or its item_flags.csv) to list")
    report_p.add_argument("--out", required=True, help="folder for report.html, report.md, figures and tables")
    add_data_arguments(report_p, required=False)
    report_p.set_defaults(func=command)


def add_evaluation_target_arguments(parser: argparse.ArgumentParser) -> None:
    """The target of an evaluation's target-weighted score: none unless ``--target`` or ``--group`` is given."""
    group = parser.add_argument_group(
        "the target-weighted score (none unless --target or --group is given; the audit's target rules)"
    )
    group.add_argument("--target", help=f"'uniform', {_TARGET_HELP}")
    group.add_argument("--group", help=_GROUP_HELP)
    group.add_argument("--range", nargs=2, type=float, metavar=("L", "U"), help=f"{_RANGE_HELP} (with --target)")
    group.add_argument("--bins", type=int, help=f"{_BINS_HELP}; with --target")


def _add_bank_arguments(parser: argparse.ArgumentParser, *, draws: int, seed: str) -> None:
    """``--fit``, ``--draws`` and ``--seed`` of the evaluation verbs."""
    parser.add_argument("--fit", required=True, help="a saved fit folder: the item bank (one ability dimension)")
    parser.add_argument(
        "--draws",
        type=int,
        default=draws,
        metavar="N",
        help=f"posterior draws of the item parameters used, evenly spaced (default {draws})",
    )
    parser.add_argument("--seed", type=int, default=0, help=f"seed of {seed} (default 0)")
    deviations = parser.add_mutually_exclusive_group()
    deviations.add_argument(
        "--data",
        help="the fit's own responses (a file, folder or data set name), for how far systems' abilities differ "
        "between benchmarks (default: the source the fit records; without it, one ability across benchmarks, "
        "with a warning)",
    )
    deviations.add_argument(
        "--one-ability",
        action="store_true",
        help="treat a system's ability as the same on every benchmark (no benchmark deviations)",
    )


def _add_prior_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prior",
        choices=("normal", "population"),
        default="normal",
        help="a new system's ability prior for the predicted accuracy: normal, N(0, 1) (default), or population, "
        "the fitted systems' ability distribution (smoothed); the abilities table always uses N(0, 1)",
    )
    parser.add_argument(
        "--no-calibrate",
        dest="calibrate",
        action="store_false",
        help="report the model's own intervals instead of intervals calibrated on the bank's own systems "
        "answering the same items (the default, where the fit's data are found)",
    )
    parser.add_argument(
        "--allow-fitted",
        action="store_true",
        help="score subjects the bank was fitted to (labelled in every output; their intervals are too narrow) "
        "instead of refusing them",
    )


def add_check_items_verb(verbs: Any, command: Command) -> None:
    """The ``check-items`` verb."""
    items_p = verbs.add_parser(
        "check-items",
        help="flag reversed (mis-keyed), flat and differentially functioning (leaked) items of a saved fit",
        description="For every item of a saved fit, the evidence that it is reversed, flat or functions differently "
        "for one group of subjects, flagged at a stated Bayesian false discovery rate (docs/item-flags.md). Writes "
        "item_flags.csv, item_flags.txt and item_flags.png.",
    )
    items_p.add_argument("--fit", required=True, help="a saved fit folder")
    items_p.add_argument("--data", help="the fit's data (default: the data its card records)")
    items_p.add_argument("--out", required=True, metavar="DIR", help="folder for item_flags.csv, .txt and .png")
    groups = items_p.add_mutually_exclusive_group()
    groups.add_argument("--group-col", metavar="COL", help="a subject column of the data naming each subject's group")
    groups.add_argument("--groups", metavar="FILE", help="a CSV with columns subject, group (instead of --group-col)")
    items_p.add_argument(
        "--alpha", type=float, default=0.05, help="Bayesian false discovery rate per flag (default 0.05)"
    )
    items_p.add_argument("--rule", choices=("each", "mean"), default="each", help="multiplicity rule (default each)")
    items_p.add_argument("--draws", type=int, default=60, help="posterior draws used (default 60)")
    items_p.add_argument("--flat-slope", type=float, default=0.3, help="|slope| below which an item is flat (0.3)")
    items_p.add_argument("--min-effect", type=float, default=0.5, help="the smallest DIF effect in logits (0.5)")
    items_p.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    items_p.add_argument("--seed", type=int, default=0, help="seed of the intervals' samples (default 0)")
    items_p.set_defaults(func=command)


def add_track_verb(verbs: Any, command: Command) -> None:
    """The ``track`` verb."""
    track_p = verbs.add_parser(
        "track",
        help="where checkpoints of a model gained and lost, by region of difficulty, against a fitted bank",
        description="Compares checkpoints (or versions) of one model on a fitted item bank: the change of accuracy "
        "in each region of difficulty and benchmark, what the change of ability alone predicts there, and the "
        "smallest change each region can show (docs/tracking.md). Writes changes.csv, abilities.csv, tracking.txt "
        "and trajectory.png.",
    )
    track_p.add_argument(
        "checkpoints",
        nargs="+",
        help="the checkpoints' responses: one file with a subject per checkpoint, or one file or log folder per "
        "checkpoint (in order)",
    )
    _add_bank_arguments(track_p, draws=400, seed="the ability draws and the re-run spread")
    track_p.add_argument("--out", required=True, metavar="DIR", help="folder for the tables and the figure")
    track_p.add_argument("--baseline", metavar="NAME", help="compare every checkpoint with this one (default: each "
                         "with the one before)")  # fmt: skip
    track_p.add_argument("--step", metavar="COL", help="a column of the checkpoints' table that orders them")
    track_p.add_argument(
        "--region",
        nargs=2,
        type=float,
        action="append",
        default=[],
        metavar=("LO", "HI"),
        help="a stretch of difficulty to compare besides the audit's bins (repeatable)",
    )
    track_p.add_argument("--bins", type=int, default=None, help="the audit's bins over the bank's range (default 10)")
    track_p.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    track_p.add_argument(
        "--effect",
        type=float,
        default=0.10,
        help="the change of accuracy an intervention aims at: regions that could not show it are named (default 0.10)",
    )
    track_p.set_defaults(func=command)


def add_score_verb(verbs: Any, command: Command) -> None:
    """The ``score`` verb."""
    score_p = verbs.add_parser(
        "score",
        help="abilities and predicted accuracy of new systems against a fitted item bank",
        description="Abilities of new systems from their responses to some of the bank's items, and their predicted "
        "accuracy over every item of the bank, per benchmark and in all, with credible intervals (docs/evaluation.md). "
        "Prints both tables; with --out, writes scores.csv, predicted_accuracy.csv and summary.json there.",
    )
    score_p.add_argument("responses", help="responses of the new systems (any format `data summary` reads)")
    _add_bank_arguments(score_p, draws=200, seed="the ability and response draws")
    score_p.add_argument("--out", metavar="DIR", help="write scores.csv, predicted_accuracy.csv and summary.json here")
    score_p.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    score_p.add_argument(
        "--selection",
        metavar="DIR",
        help="the folder `irtbayes select` wrote, when the systems answered its items: its cross-fitted factors "
        "(calibration.csv) calibrate the intervals of systems that answered only those items",
    )
    _add_prior_arguments(score_p)
    add_evaluation_target_arguments(score_p)
    score_p.set_defaults(func=command)


def add_select_verb(verbs: Any, command: Command) -> None:
    """The ``select`` verb."""
    select_p = verbs.add_parser(
        "select",
        help="choose a few items of a fitted bank on which to evaluate a new system",
        description="Choose the items a new system should answer so that its predicted scores are most precise "
        "(docs/evaluation.md). Writes selected_items.csv (item, benchmark, order, weight, method, score), "
        "precision.csv (each benchmark's expected error) and, when cross-fitted, calibration.csv (how much the "
        "intervals of a system answering these items widen) to --out; give that folder to `score --selection`.",
    )
    _add_bank_arguments(select_p, draws=200, seed="the random and anchors methods")
    budget = select_p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--items", type=int, metavar="K", help="K items in all, every benchmark keeping at least one")
    budget.add_argument("--per-benchmark", type=int, metavar="K", help="K items of each benchmark")
    select_p.add_argument("--out", required=True, metavar="DIR", help="folder for selected_items.csv and precision.csv")
    select_p.add_argument(
        "--method",
        choices=("posterior", "random", "anchors"),
        default="posterior",
        help="posterior (default): greedy, least expected error of the scores over the fitted population; random: "
        "uniform within each benchmark (the more accurate on an approximate-tier bank of a few dozen systems: "
        "docs/evaluation.md); anchors: tinyBenchmarks' k-means anchor points",
    )
    select_p.add_argument(
        "--exclude",
        metavar="FILE|IDS",
        help="items never to select: a file (one id a line, or a CSV with an 'item' column) or comma-separated ids",
    )
    select_p.add_argument(
        "--cross-fit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="calibrate the intervals of systems answering the chosen items by refitting the model without each of "
        "4 folds of the fit's systems (approximate tier) and choosing again (default: for posterior and anchors on "
        "fits of at most 200 systems whose data are found; docs/evaluation.md)",
    )
    add_scheduler_argument(select_p, "the cross-fitting's refits")
    select_p.add_argument(
        "--ci", type=float, default=0.9, help="the interval probability the cross-fitted factors are for (default 0.9)"
    )
    add_evaluation_target_arguments(select_p)
    select_p.set_defaults(func=command)


def add_adaptive_verb(verbs: Any, command: Command) -> None:
    """The ``adaptive`` verb."""
    ada = verbs.add_parser(
        "adaptive",
        help="test one new system adaptively, item by item, against a fitted bank",
        description="Give one system an adaptive test: each next item is the one expected to sharpen its scores "
        "most; the answers come from a response file or a model behind an OpenAI-compatible chat API "
        "(docs/evaluation.md). Writes log.csv, predicted_accuracy.csv, trace.png (with --endpoint exchanges.csv) and "
        "summary.json to --out at the end, each file atomically. On Ctrl-C the answers so far are written with the stop reason "
        "'interrupted' (the exposure file is not updated) and the exit code is 130.",
    )
    _add_bank_arguments(ada, draws=200, seed="the randomesque choice and the final scores' draws")
    ada.add_argument("--out", required=True, metavar="DIR", help="folder for the test's files")
    answers = ada.add_argument_group("where the answers come from (--responses or --endpoint)")
    source = answers.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--responses", metavar="FILE", help="answers already collected (any format `data summary` reads)"
    )
    source.add_argument("--endpoint", metavar="URL", help="an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1")
    answers.add_argument("--subject", help="--responses: the subject whose answers to give (needed when several)")
    answers.add_argument("--model", metavar="NAME", help="--endpoint: the tested model's name on that server")
    answers.add_argument(
        "--items-file",
        metavar="FILE",
        help="--endpoint: the items' text (item, text, choices, answer; CSV/JSONL/Parquet)",
    )
    answers.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", metavar="VAR", help="environment variable holding the API key"
    )
    answers.add_argument(
        "--cache",
        metavar="DIR",
        help="--endpoint: the replies' cache, so a rerun asks nothing twice (default: llm_cache in --out)",
    )
    answers.add_argument(
        "--allow-fitted", action="store_true", help="--responses: allow a subject the bank was fitted to"
    )
    test = ada.add_argument_group("the test")
    test.add_argument(
        "--score",
        default="benchmarks",
        metavar="benchmarks|all|target|BENCHMARK",
        help="what the test is for: each benchmark's accuracy (default), the bank's overall accuracy, each "
        "benchmark's target-weighted score (--target, default uniform), or one benchmark's accuracy",
    )
    test.add_argument(
        "--criterion",
        choices=("variance", "information"),
        default="variance",
        help="the next item: least expected posterior variance of the scores (default) or most Fisher information",
    )
    test.add_argument(
        "--max-items", type=int, default=50, metavar="K", help="stop after this many answers (default 50)"
    )
    test.add_argument(
        "--min-items", type=int, default=1, metavar="K", help="answers before --se may stop the test (default 1)"
    )
    test.add_argument("--se", type=float, metavar="X", help="stop once every score's posterior sd is at most X")
    test.add_argument(
        "--prior",
        choices=("normal", "population"),
        default="normal",
        help="the ability prior: N(0, 1) (default) or the fitted systems' ability distribution",
    )
    test.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    test.add_argument(
        "--no-calibrate",
        dest="calibrate",
        action="store_false",
        help="the final scores with the model's own intervals, not calibrated on the bank's own systems",
    )
    test.add_argument(
        "--cross-fit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="calibrate the final intervals on the fit's systems each tested on a refit without its fold (4 folds, "
        "approximate tier), so that no test's choices rest on its own answers (default: on fits of at most 200 "
        "systems whose data are found; docs/evaluation.md)",
    )
    add_scheduler_argument(test, "the cross-fitting's refits")
    test.add_argument("--no-progress", action="store_true", help="log each answer instead of a progress bar")
    exposure = ada.add_argument_group("exposure control across tests")
    exposure.add_argument(
        "--exposure", metavar="FILE", help="the exposure counts (JSON): read if it exists, updated after the test"
    )
    exposure.add_argument(
        "--max-rate",
        type=float,
        metavar="R",
        help="never give an item used in more than a share R of the earlier tests (default: the exposure file's, "
        "else 1: no limit)",
    )
    exposure.add_argument(
        "--randomesque",
        type=int,
        metavar="K",
        help="draw each next item at random among the K best (default: the exposure file's, else 1: the best)",
    )
    add_evaluation_target_arguments(ada)
    ada.set_defaults(func=command)


def add_export_verb(verbs: Any, command: Command) -> None:
    """The ``export`` verb."""
    export_p = verbs.add_parser("export", help="write a saved fit for mirt, tinyBenchmarks or py-irt")
    export_p.add_argument("--fit", required=True, help="a saved fit folder")
    export_p.add_argument(
        "--format",
        required=True,
        choices=("mirt", "mirt-si", "pyirt", "tinybenchmarks"),
        help="mirt: items.csv (a, b, g, u), items_sd.csv, subjects.csv (F1, SE_F1); mirt-si: the same with "
        "a1, d, g, u; tinybenchmarks: anchor set (.json or .csv); pyirt: the responses as JSON Lines",
    )
    export_p.add_argument("--out", required=True, help="a folder (mirt, mirt-si) or a file (pyirt, tinybenchmarks)")
    export_p.add_argument("--data", help="pyirt: the data the fit was made from (default: the source it records)")
    export_p.add_argument("--condition", help="pyirt: the condition to write, when the data has several")
    export_p.add_argument("--anchors", type=int, default=100, help="tinybenchmarks: anchor items per benchmark")
    export_p.add_argument("--seed", type=int, default=0, help="tinybenchmarks: seed of the anchor choice")
    export_p.set_defaults(func=command)


def add_robustness_verb(verbs: Any, command: Command) -> None:
    """The ``robustness`` verb."""
    rob = verbs.add_parser(
        "robustness", help="condition sensitivity, population dependence and revisions of the audit's conclusions"
    )
    add_data_arguments(rob)
    rob.add_argument("--fit", help="a saved fit of DATA (its reference condition) to start from")
    rob.add_argument("--out", required=True, help="output folder (tables, robustness.json, report)")
    rob.add_argument("--reference-condition", help="the condition others are compared with (default: original/first)")
    rob.add_argument("--bootstrap", type=int, default=0, help="bootstrap refits over systems (default 0)")
    rob.add_argument("--family-col", help="subject column naming each system's family: leave one family out per refit")
    rob.add_argument("--families", help="a CSV with columns subject, family (instead of --family-col)")
    rob.add_argument("--population", action="append", help="a second population's responses (repeatable)")
    rob.add_argument("--revision", help="ORIGINAL:REVISED benchmark names in DATA to compare on one scale")
    rob.add_argument(
        "--engine",
        choices=("process", "serial", "dask"),
        default="process",
        help="where refits run on this machine: processes (default) or serially (dask: deprecated, use --scheduler)",
    )
    rob.add_argument("--workers", type=int, help="parallel refit processes (default: the CPU count)")
    add_scheduler_argument(rob, "the population refits")
    rob.add_argument("--dask-address", help="deprecated: use --scheduler ADDRESS")
    rob.add_argument("--chains", type=int, default=4, help="chains per fit (default 4)")
    rob.add_argument("--draws", type=int, help="draws per chain (default: 1000 for condition fits, fit's own else)")
    rob.add_argument("--tune", type=int, help="tuning steps per chain")
    rob.add_argument(
        "--target-accept", type=float, help="NUTS target acceptance of every fit (default: each fit's own)"
    )
    rob.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    rob.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    rob.add_argument("--fdr", type=float, default=0.05, help="Bayesian false discovery rate of flags (default 0.05)")
    rob.add_argument("--min-effect", type=float, default=0.0, help="flag only effects beyond this many logits")
    rob.add_argument(
        "--against",
        choices=("shift", "zero"),
        default="shift",
        help="flag items whose effect differs from the condition's common shift (default) or from zero",
    )
    rob.add_argument("--agreement", type=float, default=0.8, help="share of refits a stable conclusion needs")
    rob.add_argument("--no-report", action="store_true", help="skip report.html / report.md")
    rob.set_defaults(func=command)
