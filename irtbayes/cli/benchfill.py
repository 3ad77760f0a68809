"""The ``irtbayes benchfill`` verbs: ``propose``, ``export``, ``calibrate``.

::

    irtbayes benchfill propose --fit models/fit [--benchmark B] [--aim-bin K | --aim L U] [--bins K]
        (--llm BASE_URL --llm-model NAME [--api-key-env VAR] [--n 10] | --candidates FILE) --out out/bf
    irtbayes benchfill export out/bf --format lm-eval|csv
    irtbayes benchfill calibrate --fit models/fit --candidates out/bf/candidates.jsonl --responses PATH
        (--aim-bin K | --aim L U | --aim-json out/bf/aim.json) [--tau 0.8] [--mode full|fixed] [--prior candidates|bank]
        [--min-discrimination A] --out out/bf/round1

The aim is the interval ``[lo, hi)`` on the ability scale that the new items should fill; by default the bin of the
widest gap. The old flags ``--target-bin``, ``--target`` and ``--target-json`` still work for a release, hidden from
the help, each with a warning naming its new flag.

Each verb is a thin wrapper over :mod:`irtbayes.benchfill.run`; errors a user can cause raise
:class:`~irtbayes.core.errors.IrtbayesError` subclasses, which the command line prints as one line (exit 2).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irtbayes.cli.parser import picked
from irtbayes.core.errors import SpecError
from irtbayes.core.summaries import format_interval

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.benchfill.aim import Aim
    from irtbayes.data.responses import ResponseData
    from irtbayes.fitting.result import Fit

__all__ = ["add_parser", "cmd_calibrate", "cmd_export", "cmd_propose"]

log = logging.getLogger(__name__)


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from irtbayes.fitting.storage import load_fit, load_fit_data

    fit = load_fit(args.fit)
    data = load_fit_data(fit, args.data)
    return fit, data


#: The old flags of the aim (hidden, deprecated) -> their new flags, and the dest each is parsed into.
OLD_AIM_FLAGS: dict[str, tuple[str, str]] = {
    "--target-bin": ("--aim-bin", "aim_bin"),
    "--target": ("--aim", "aim"),
    "--target-json": ("--aim-json", "aim_json"),
}


def _old_dest(new_dest: str) -> str:
    return f"old_{new_dest}"


def _old_aim_flags(args: argparse.Namespace) -> None:
    """Read the deprecated ``--target*`` flags into their new ``--aim*`` dests, warning for each one given."""
    for old, (new, dest) in OLD_AIM_FLAGS.items():
        value = getattr(args, _old_dest(dest), None)
        if value is not None:
            log.warning("%s is deprecated and will be removed in the next release: use %s", old, new)
            setattr(args, dest, value)


def _interval(args: argparse.Namespace) -> tuple[float, float] | None:
    return None if args.aim is None else (float(args.aim[0]), float(args.aim[1]))


def _aim(fit: Fit, data: ResponseData, args: argparse.Namespace) -> tuple[Aim, AuditResult | None]:
    """The aim the command line names (a bin, an interval or the widest gap's bin) for ``fit``; its gaps from the
    saved audit ``--audit`` names (checked to be of this fit and these data, and returned), else from a new audit
    (then None)."""
    from irtbayes.auditing.folder import load_audit
    from irtbayes.benchfill.aim import choose_aim

    saved = None
    if getattr(args, "audit", None):
        if getattr(args, "bins", None) is not None or getattr(args, "range", None) is not None:
            raise SpecError("--audit brings its own bins and range; leave out --bins and --range")
        saved = load_audit(args.audit, fit=fit, data=data)
        log.info("the aim from the saved audit %s (no new audit)", args.audit)
    aim, _ = choose_aim(
        fit,
        data,
        **picked(args, "benchmark", "aim_bin", "bins", "range"),
        interval=_interval(args),
        gap_interval=getattr(args, "gap_interval", False),
        audit_result=saved,
    )
    return aim, saved


# ---------------------------------------------------------------------------------------------- propose
def cmd_propose(args: argparse.Namespace) -> int:
    """``benchfill propose``: choose the aim, ask the source for candidates, write them with the aim."""
    from irtbayes.benchfill.llm import ChatClient, LLMSource
    from irtbayes.benchfill.proposal import propose, save_proposal
    from irtbayes.benchfill.sources import FileSource

    _old_aim_flags(args)
    fit, data = _load(args)
    aim, _ = _aim(fit, data, args)
    out = Path(args.out)
    if args.candidates:
        source: Any = FileSource(args.candidates)
        label = f"file:{args.candidates}"
    else:
        if not args.llm_model:
            raise SpecError("--llm needs --llm-model NAME (the generator's model name on that server)")
        client = ChatClient(
            args.llm,
            args.llm_model,
            api_key_env=args.api_key_env,
            cache_dir=args.cache_dir or out / "llm_cache",
        )
        source = LLMSource(client, temperature=args.temperature)
        label = f"llm:{args.llm_model} at {args.llm}"
    n_choices: Any = "auto" if args.n_choices is None else (None if args.n_choices == 0 else args.n_choices)
    proposal = propose(fit, data, aim, source, n=args.n, n_choices=n_choices, max_seeds=args.max_seeds)
    paths = save_proposal(
        out, proposal, aim, fit_dir=args.fit, data_source=str(data.source), source=label, audit_dir=args.audit
    )
    gap = aim.gap
    print(f"Aim {aim.label}: {aim.how}.")
    print(
        f"Widest gap of {gap.get('scope')}: "
        f"{format_interval({k: gap.get(k, float('nan')) for k in ('max_gap_mean', 'max_gap_ci_low', 'max_gap_ci_high')}, 'max_gap')} logits."
    )
    print(f"{len(proposal.candidates)} candidate(s) from {label}; {len(proposal.rejections)} rejected.")
    for rejection in proposal.rejections[:10]:
        print(f"  rejected: {rejection.reason}")
    print(f"Wrote {paths['candidates']}, {paths['aim'].name} and {paths['rejections'].name}")
    print(f"Next: irtbayes benchfill export {out} --format lm-eval (or csv)")
    return 0


# ---------------------------------------------------------------------------------------------- export
def cmd_export(args: argparse.Namespace) -> int:
    """``benchfill export``: the candidates as an lm-eval task or a CSV template, into DIR/export/."""
    from irtbayes.benchfill.proposal import export_proposal, recorded_fit
    from irtbayes.fitting.storage import load_fit

    fit = load_fit(args.fit) if args.fit else None
    if fit is None and args.format == "csv":  # the template's fit, loaded once: its subjects and its scale
        fit = recorded_fit(args.dir)
    paths = export_proposal(args.dir, args.format, fit=fit, output_type=args.output_type, task_name=args.task_name)
    for path in paths:
        print(f"Wrote {path}")
    if args.format == "lm-eval":
        print(
            f"Run: lm_eval run --model ... --tasks {args.task_name} --include_path {Path(args.dir) / 'export'} "
            "--log_samples --output_path <folder>"
        )
    elif fit is not None and fit.spec.kind in ("grm", "gpcm"):
        labels = fit.category_labels()
        scale = ", ".join(labels) if labels else "the bank's categories"
        print(f"Fill in the response column with a category of the bank's scale ({scale}) and pass the file to "
              "`benchfill calibrate`.")  # fmt: skip
    else:
        print("Fill in the response column (1/0 or a score in [0, 1]) and pass the file to `benchfill calibrate`.")
    return 0


# ---------------------------------------------------------------------------------------------- calibrate
def cmd_calibrate(args: argparse.Namespace) -> int:
    """``benchfill calibrate``: responses -> calibration -> decisions -> ledger and before/after audit."""
    from irtbayes.auditing.folder import load_audit
    from irtbayes.benchfill.acceptance import AcceptanceRule
    from irtbayes.benchfill.aim import read_aim
    from irtbayes.benchfill.calibration import load_candidate_responses
    from irtbayes.benchfill.candidates import load_candidates
    from irtbayes.benchfill.result import save_benchfill
    from irtbayes.benchfill.run import calibrate_candidates

    _old_aim_flags(args)
    fit, data = _load(args)
    candidates = load_candidates(args.candidates)
    audit_dir = args.audit
    if args.aim_json:
        aim, record = read_aim(args.aim_json)
        audit_dir = audit_dir or record.get("audit")
        bank_audit = load_audit(audit_dir, fit=fit, data=data) if audit_dir else None
    else:
        aim, bank_audit = _aim(fit, data, args)
    # the bank's saved audit is the comparison's "before", not run again; the extended bank is audited alike
    new_data = load_candidate_responses(
        args.responses, candidates, fit=fit, metric=args.metric, lm_filter=args.lm_filter
    )
    min_discrimination = args.min_discrimination
    if min_discrimination is not None and not min_discrimination >= 0:
        raise SpecError(f"--min-discrimination must be a number >= 0, got {min_discrimination}")
    rule = AcceptanceRule(
        **picked(args, "tau", "min_responses", "discrimination_prob"),
        min_discrimination=min_discrimination,
        ci_prob=args.ci,
    )
    result = calibrate_candidates(
        fit,
        data,
        candidates,
        new_data,
        aim,
        rule=rule,
        **picked(args, "mode", "prior", "chains", "draws", "tune", "seed", "allow_rewrites"),
        progress=not args.no_progress,
        bank_audit=bank_audit,
    )
    paths = save_benchfill(result, args.out, candidates=candidates)
    if min_discrimination is None:
        print(
            f"Least slope {result.settings['min_discrimination']:.3g}: {result.settings['min_discrimination_rule']} "
            "(set it with --min-discrimination)."
        )
    print(result.to_text())
    print(
        f"\nAppended {len(result.decisions)} decision(s) to {paths['ledger']}; wrote {paths['ledger_csv'].name}, "
        f"{paths['before_after_csv'].name} and {paths['before_after_json'].name}"
    )
    return 0


# ---------------------------------------------------------------------------------------------- parser
def _fit_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fit", required=True, help="a saved fit folder (the bank)")
    parser.add_argument(
        "--data", help="the data the fit was made from (default: the source its card records; checksum checked)"
    )


def _aim_arguments(parser: argparse.ArgumentParser, *, allow_json: bool) -> None:
    group = parser.add_argument_group(
        "the aim: the interval [L, U) the new items should fill (default: the widest gap's bin)"
    )
    exclusive = group.add_mutually_exclusive_group()
    exclusive.add_argument("--aim-bin", type=int, metavar="K", help="aim at bin K (0-based) of the audit's target")
    exclusive.add_argument("--aim", nargs=2, type=float, metavar=("L", "U"), help="aim at the interval [L, U)")
    exclusive.add_argument("--target-bin", type=int, dest=_old_dest("aim_bin"), help=argparse.SUPPRESS)
    exclusive.add_argument("--target", nargs=2, type=float, dest=_old_dest("aim"), help=argparse.SUPPRESS)
    if allow_json:
        exclusive.add_argument(
            "--aim-json",
            metavar="PATH",
            help="an aim.json written by `benchfill propose`, or its folder (an older one's target.json is read too)",
        )
        exclusive.add_argument("--target-json", dest=_old_dest("aim_json"), help=argparse.SUPPRESS)
    else:
        exclusive.add_argument(
            "--gap-interval",
            action="store_true",
            help="the widest gap's own interval [gap_lo, gap_hi] instead of the bin holding it",
        )
    group.add_argument("--benchmark", help="fill this benchmark's gap (default: all items)")
    group.add_argument("--bins", type=int, help="number of bins of the audit (default 10)")
    group.add_argument("--range", nargs=2, type=float, metavar=("L", "U"), help="the audit's range")


def _add_propose(verbs: Any) -> None:
    """The ``benchfill propose`` sub-verb."""
    p = verbs.add_parser("propose", help="choose the aim (by default the widest gap's bin) and obtain candidates")
    _fit_arguments(p)
    _aim_arguments(p, allow_json=False)
    source = p.add_argument_group("the candidates' source (one of)")
    exclusive = source.add_mutually_exclusive_group(required=True)
    exclusive.add_argument("--llm", metavar="BASE_URL", help="an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1")
    exclusive.add_argument("--candidates", metavar="FILE", help="a CSV or JSONL file of candidates")
    source.add_argument("--llm-model", metavar="NAME", help="the generator's model name")
    source.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", metavar="VAR", help="environment variable holding the API key"
    )
    source.add_argument("--n", type=int, help="candidates wanted (default 10 from an LLM, every one from a file)")
    source.add_argument(
        "--n-choices", type=int, help="options per multiple-choice item (0: free response; default: the benchmark's)"
    )
    source.add_argument("--max-seeds", type=int, default=8, help="existing items shown to the generator (default 8)")
    source.add_argument("--temperature", type=float, default=0.7, help="LLM sampling temperature (default 0.7)")
    source.add_argument("--cache-dir", help="LLM response cache (default OUT/llm_cache; a rerun costs nothing)")
    p.add_argument("--out", required=True, help="folder for candidates.jsonl, aim.json, rejections.jsonl")
    p.add_argument(
        "--audit",
        metavar="DIR",
        help="an audit of the same fit (`irtbayes audit --fit FIT --out DIR`) whose gaps choose the aim, instead "
        "of auditing again (its bins and range are the audit's)",
    )
    p.set_defaults(func=cmd_propose)


def add_parser(subparsers: Any) -> None:
    """Add the ``benchfill`` verb and its sub-verbs to ``subparsers`` (from ``parser.add_subparsers()``).

    Each sub-verb sets ``func``, which takes the parsed :class:`argparse.Namespace` and returns the exit code.
    """
    bf = subparsers.add_parser(
        "benchfill",
        help="fill difficulty gaps with new items, accepted only on posterior evidence",
        description="Propose candidate items for a difficulty gap, export them for the systems to answer, then "
        "calibrate them and accept those the posterior places in the aim (the interval [L, U) the new items should "
        "fill; by default the bin of the widest gap).",
    )
    verbs = bf.add_subparsers(dest="benchfill_verb", required=True, metavar="ACTION")

    _add_propose(verbs)

    e = verbs.add_parser("export", help="write the candidates as an lm-eval task or a CSV template")
    e.add_argument("dir", help="a folder written by `benchfill propose`")
    e.add_argument("--format", required=True, choices=("lm-eval", "csv"))
    e.add_argument("--fit", help="the fit whose subjects fill the CSV template (default: the one in aim.json)")
    e.add_argument("--output-type", choices=("multiple_choice", "generate_until"), help="lm-eval task type")
    e.add_argument("--task-name", default="irtbayes_benchfill", help="lm-eval task name (default irtbayes_benchfill)")
    e.set_defaults(func=cmd_export)

    c = verbs.add_parser("calibrate", help="calibrate answered candidates, decide, and audit before/after")
    _fit_arguments(c)
    c.add_argument("--candidates", required=True, metavar="FILE", help="the candidates (candidates.jsonl)")
    c.add_argument(
        "--responses",
        required=True,
        metavar="PATH",
        help="a long CSV subject,item,response (item = candidate id) or lm-eval --log_samples output",
    )
    _aim_arguments(c, allow_json=True)
    c.add_argument(
        "--audit",
        metavar="DIR",
        help="the saved audit of the fit (default: the one aim.json names): the before/after comparison reads it "
        "as the bank's audit and audits the extended bank with its settings",
    )
    rule = c.add_argument_group("the acceptance rule")
    rule.add_argument("--tau", type=float, default=0.8, help="least P(b in aim) (default 0.8)")
    rule.add_argument("--min-responses", type=int, default=10, help="least responses per candidate (default 10)")
    rule.add_argument(
        "--min-discrimination",
        type=float,
        metavar="A",
        help="least slope: a candidate is accepted only when P(slope > A) >= --discrimination-prob, where the "
        "slope's sign is free (a mis-keyed item has a negative one); default 0.25 of the bank's typical "
        "discrimination (the median posterior mean), so an accepted item carries at least 1/16 of a typical "
        "item's peak information",
    )
    rule.add_argument(
        "--discrimination-prob",
        type=float,
        default=0.9,
        help="least P(slope > --min-discrimination); P(slope < -A) this high rejects as mis-keyed (default 0.9)",
    )
    rule.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    rule.add_argument(
        "--allow-rewrites",
        action="store_true",
        help="accept a rewrite of a bank item that is not the candidate's seed (named in the ledger); near-verbatim "
        "copies are rejected either way",
    )
    cal = c.add_argument_group("the calibration")
    cal.add_argument(
        "--mode",
        choices=("full", "fixed"),
        default="full",
        help="full: refit the bank with the candidates (default); fixed: hold the bank at its posterior (fast)",
    )
    cal.add_argument(
        "--prior",
        choices=("candidates", "bank"),
        default="candidates",
        help="candidates: the candidates of a benchmark form their own group in the hierarchy, its mean learnt "
        "from them (default); bank: each gets the prior of a new item of its benchmark",
    )
    cal.add_argument("--chains", type=int, help="refit chains (default: the fit's)")
    cal.add_argument("--draws", type=int, help="refit draws per chain (default: the fit's)")
    cal.add_argument("--tune", type=int, help="refit warm-up draws (default: the fit's)")
    cal.add_argument("--seed", type=int, default=20260102, help="seed (default 20260102)")
    cal.add_argument("--no-progress", action="store_true", help="hide progress bars")
    cal.add_argument("--metric", help="lm-eval: the per-sample metric (default acc)")
    cal.add_argument("--filter", dest="lm_filter", help="lm-eval: the filter, when the task logs several")
    c.add_argument("--out", required=True, help="folder for ledger.jsonl, ledger.csv, before_after.csv/.json")
    c.set_defaults(func=cmd_calibrate)
