"""The evaluation verbs: ``score``, ``select``, ``adaptive`` (thin wrappers over :mod:`irtbayes.evaluating`).

::

    irtbayes score --fit FIT RESPONSES [--out DIR] [--ci 0.9] [--prior normal|population] [--allow-fitted]
    irtbayes select --fit FIT (--items K | --per-benchmark K) --out DIR [--method posterior|random|anchors]
        [--exclude FILE-or-ids]
    irtbayes adaptive --fit FIT --out DIR (--responses FILE [--subject NAME] |
        --endpoint URL --model NAME --items-file FILE [--api-key-env VAR] [--cache DIR])
        [--score benchmarks|all|target|BENCHMARK] [--criterion variance|information] [--max-items 50]
        [--min-items 1] [--se X] [--exposure FILE] [--max-rate R] [--randomesque K]

Each also takes ``--target``/``--group``/``--range``/``--bins`` (a target-weighted score; none unless given),
``--draws`` and ``--seed``. Every file is written atomically (a temporary file, then a rename), one by one, and
``summary.json`` last; files of the output folder that a verb does not write are left alone. The warnings of
the item bank (an approximate or unconverged fit, subjects already in the bank) are printed first and kept in
``summary.json``.

``adaptive`` with ``--endpoint`` also writes ``exchanges.csv`` (each item asked: the prompt's hash, the reply,
the answer read from it and its grade) and caches the replies (``--cache``, default ``OUT/llm_cache``), so a
rerun asks nothing twice. A Ctrl-C during an adaptive test writes the answers so far (log, scores, trace) with
the stop reason ``interrupted`` and exits 130; the exposure file is not updated, as the test did not finish. A
Ctrl-C before the first answer, or while the files are written, leaves no half-written file (exit 130).
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irtbayes.cli.parser import target_value
from irtbayes.core.errors import DataError, IrtbayesError, SpecError, listed
from irtbayes.core.files import atomic_write_bytes, atomic_write_json, atomic_write_text, json_ready

if TYPE_CHECKING:
    import pandas as pd

    from irtbayes.auditing.targets import Target
    from irtbayes.evaluating.adaptive import AdaptiveResult, AdaptiveTest, Exposure
    from irtbayes.evaluating.bank import ItemBank
    from irtbayes.fitting.result import Fit

__all__ = ["cmd_adaptive", "cmd_score", "cmd_select"]

log = logging.getLogger("irtbayes")


# ---------------------------------------------------------------------------------------------- shared
def _target(fit: Fit, args: argparse.Namespace, *, default: str | None = None) -> Target | None:
    """The target of ``--target``/``--group``/``--range``/``--bins`` (None when none is given and no ``default``)."""
    from irtbayes.evaluating.prediction import evaluation_target

    if args.target is not None and args.group is not None:
        raise SpecError("give --target or --group, not both")
    target = args.target if args.target is not None or args.group is not None else default
    if target is None and args.group is None:
        if args.range is not None or args.bins is not None:
            raise SpecError("--range and --bins shape a target: give --target too (e.g. --target uniform)")
        return None
    return evaluation_target(
        fit,
        target_value(target),
        bins=args.bins,
        target_range=args.range,
        group=args.group.split(",") if args.group else None,
    )


def _write_csv(path: Path, table: pd.DataFrame) -> Path:
    return atomic_write_text(path, table.to_csv(index=False))


def _write_json(path: Path, payload: dict[str, Any]) -> Path:
    return atomic_write_json(path, json_ready(payload))


def _warnings_first(warnings: list[str] | tuple[str, ...]) -> None:
    for warning in warnings:
        print(warning)


# ---------------------------------------------------------------------------------------------- score
def cmd_score(args: argparse.Namespace) -> int:
    """``score``: abilities and predicted accuracy of new systems; with ``--out``, their files."""
    from irtbayes.core.summaries import check_ci_prob
    from irtbayes.data import io as data_io
    from irtbayes.evaluating.bank import bank_warnings
    from irtbayes.evaluating.prediction import predict_scores
    from irtbayes.evaluating.scoring import score
    from irtbayes.evaluating.selection import Selection
    from irtbayes.fitting.storage import load_fit

    check_ci_prob(args.ci)
    fit_result = load_fit(args.fit)
    graded = fit_result.spec.kind in ("grm", "gpcm")
    # a graded fit's new responses are read in its own categories (inferred ones could number them otherwise)
    responses = data_io.load(Path(args.responses), **fit_result.read_options())
    # the predicted accuracy first, so that unknown items and subjects already in the bank are refused before
    # anything is drawn; a fit with one ability per domain gives the abilities per dimension only, as before
    predicted = None
    if graded:
        if args.target is not None or args.group is not None:
            raise SpecError("--target is for binary fits; this is a graded fit, which gives the abilities only")
        warnings = [
            *bank_warnings(fit_result),
            f"GRADED: a {fit_result.spec.kind.upper()} fit; the predicted accuracy over the bank is for binary fits, "
            "so only the abilities are given.",
        ]
    elif "dim" in fit_result.posterior["ability"].dims:
        if args.target is not None or args.group is not None:
            raise SpecError("--target needs a fit with one ability dimension (this one has dims='domain')")
        warnings = [
            *bank_warnings(fit_result),
            "MULTIDIMENSIONAL: the fit has one ability per domain; the predicted accuracy over the bank needs a "
            "one-dimensional fit, so only the abilities are given.",
        ]
    else:
        predicted = predict_scores(
            _bank(fit_result, args, prior=args.prior),
            responses,
            target=_target(fit_result, args),
            allow_fitted=args.allow_fitted,
            calibrate=args.calibrate,
            ci_prob=args.ci,
            seed=args.seed,
            selection=None if args.selection is None else Selection.load(args.selection),
        )
        warnings = list(predicted.warnings)
    scores = score(fit_result, responses, n_draws=args.draws, seed=args.seed)
    _warnings_first(warnings)
    abilities = scores.to_text(ci_prob=args.ci)
    if scores.approximate:  # the warnings above already say so
        abilities = abilities.split("\n", 1)[1]
    print(f"Abilities (logits; {args.ci:.0%} intervals)\n{abilities}")
    if predicted is not None:
        print()
        print(predicted.to_text(ci_prob=args.ci).removeprefix("".join(f"{w}\n" for w in predicted.warnings)))
    if args.out:
        out = Path(args.out)
        _write_csv(out / "scores.csv", scores.table(args.ci))
        if predicted is not None:
            _write_csv(out / "predicted_accuracy.csv", predicted.table(args.ci))
        payload = {
            "warnings": warnings,
            "fit": str(args.fit),
            "responses": str(args.responses),
            "prior": args.prior,
            "selection": args.selection,  # its cross-fitted factors, when it has them, calibrate its systems
            "abilities": scores.to_dict(ci_prob=args.ci),
            "predicted": None if predicted is None else predicted.to_dict(ci_prob=args.ci),
        }
        _write_json(out / "summary.json", payload)
        written = "scores.csv, " + ("predicted_accuracy.csv, " if predicted is not None else "") + "summary.json"
        print(f"\nWrote {written} to {out}")
    return 0


# ---------------------------------------------------------------------------------------------- select
def _excluded(value: str | None) -> list[str]:
    """``--exclude``: a file (one id a line, or a CSV/Parquet table with an ``item`` column) or comma-separated ids."""
    if not value:
        return []
    path = Path(value)
    if not path.is_file():
        if path.suffix.lower() in {".csv", ".txt", ".tsv", ".parquet", ".json"} and "," not in value:
            raise DataError(f"--exclude: {value}: no such file")
        return [v.strip() for v in value.split(",") if v.strip()]
    if path.suffix.lower() in {".csv", ".tsv", ".parquet", ".pq"}:
        from irtbayes.data.io.tabular import read_table

        table = read_table(path)
        if "item" in table.columns:
            return table["item"].dropna().astype(str).str.strip().tolist()
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"--exclude: {path}: could not read the file ({err})") from None
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def cmd_select(args: argparse.Namespace) -> int:
    """``select``: the items a new system should answer; writes selected_items.csv, precision.csv and, when
    cross-fitted, calibration.csv."""
    from irtbayes.core.summaries import check_ci_prob
    from irtbayes.evaluating.selection import select_items
    from irtbayes.fitting.storage import load_fit

    check_ci_prob(args.ci)
    fit_result = load_fit(args.fit)
    selection = select_items(
        _bank(fit_result, args),
        items=args.items,
        per_benchmark=args.per_benchmark,
        target=_target(fit_result, args),
        method=args.method,
        exclude=_excluded(args.exclude),
        seed=args.seed,
        cross_fit=args.cross_fit,
        ci_prob=args.ci,
        source_fit=fit_result,
        data=_bank_data(args),
        scheduler=args.scheduler,
    )
    out = Path(args.out)
    written = ["selected_items.csv", "precision.csv"]
    _write_csv(out / "selected_items.csv", selection.table())
    _write_csv(out / "precision.csv", selection.summary())
    stale = out / "calibration.csv"
    if selection.calibration is not None:
        _write_csv(stale, selection.calibration)
        written.append("calibration.csv")
    elif stale.is_file():
        stale.unlink()  # an earlier selection's factors must not be read with this one
    print(selection.to_text())
    print(f"\nWrote {', '.join(written)} to {out}")
    return 0


# ---------------------------------------------------------------------------------------------- adaptive
def _file_answers(args: argparse.Namespace, bank: ItemBank) -> tuple[Callable[[str], float], str, list[str], list[str]]:
    """``--responses``: the responder, the subject, the items it answered and the notes beyond the bank's own."""
    from irtbayes.data import io as data_io
    from irtbayes.evaluating.prediction import check_new_responses
    from irtbayes.evaluating.responders import file_responder

    if args.model or args.items_file:
        raise SpecError("--model and --items-file go with --endpoint, not --responses")
    data = data_io.load(Path(args.responses))
    responder = file_responder(data, args.subject)  # refuses an unknown subject, or none named among several
    subject = str(args.subject) if args.subject is not None else str(data.subject_ids[0])
    own = data.subset(subjects=[subject])
    notes = check_new_responses(bank, own, allow_fitted=args.allow_fitted)
    return responder, subject, [str(i) for i in own.item_ids], [n for n in notes if n not in bank.warnings]


def _endpoint_answers(
    args: argparse.Namespace, bank: ItemBank
) -> tuple[Callable[[str], float], str, list[str], list[str]]:
    """``--endpoint``: the responder asking the model, its name, the items it can be asked and the notes."""
    from irtbayes.benchfill.llm import ChatClient
    from irtbayes.evaluating.responders import EndpointResponder

    if not args.model or not args.items_file:
        raise SpecError("--endpoint needs --model NAME (the tested model on that server) and --items-file FILE")
    if args.subject or args.allow_fitted:
        raise SpecError("--subject and --allow-fitted go with --responses, not --endpoint")
    cache = Path(args.cache) if args.cache else Path(args.out) / "llm_cache"
    client = ChatClient(args.endpoint, args.model, api_key_env=args.api_key_env, cache_dir=cache)
    responder = EndpointResponder.from_file(client, args.items_file)
    in_bank = set(bank.items.astype(str))
    items = [i for i in responder.item_ids if i in in_bank]
    if not items:
        raise DataError(f"{args.items_file}: none of its items is in the fitted item bank ({bank.source})")
    notes = []
    if len(items) < len(responder.item_ids):
        left = [i for i in responder.item_ids if i not in in_bank]
        notes.append(f"NOT IN THE BANK: {listed(left, 5)} of {args.items_file} are not in the item bank; never asked.")
    if len(items) < bank.n_items:
        log.info("%d of the bank's %d items have text in %s", len(items), bank.n_items, args.items_file)
    return responder, str(args.model), items, notes


def _exposure(args: argparse.Namespace) -> Exposure | None:
    """The exposure control: the file's state when it exists, with ``--max-rate``/``--randomesque`` over it."""
    from irtbayes.evaluating.adaptive import Exposure

    given = {k: v for k, v in (("max_rate", args.max_rate), ("randomesque", args.randomesque)) if v is not None}
    if args.exposure and Path(args.exposure).exists():
        state = Exposure.load(args.exposure)
        settings = {"max_rate": state.max_rate, "randomesque": state.randomesque, **given}
        return Exposure(**settings, counts=state.counts, n_tests=state.n_tests)
    if args.exposure or given:
        return Exposure(**given)
    return None


def _give_test(test: AdaptiveTest, responder: Callable[[str], float], subject: str, args: argparse.Namespace) -> bool:
    """Give the test, item by item, with a progress bar on a terminal or a log line per answer; False on Ctrl-C."""
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm.auto import tqdm

        bar = tqdm(total=test.max_items, desc=subject, unit="item", file=sys.stderr, leave=False)
    try:
        while (item := test.next_item()) is not None:
            test.answer(item, responder(item))
            row = test.rows[-1]
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"score {row['score_mean']:.3f} ± {row['score_sd']:.3f}")
            else:
                log.info("item %d: %s (%s) -> %g; score %.3f ± %.3f", *_step(row))
    except KeyboardInterrupt:
        if test.n_answered == 0:
            raise
        test.stop_reason = "interrupted"
        return False
    finally:
        if bar is not None:
            bar.close()
    if test.exposure is not None:  # a finished test counts towards the items' exposure
        test.exposure.record([str(test.bank.items[c]) for c in test.responses])
    return True


def _step(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["step"], row["item"], row["benchmark"], row["response"], row["score_mean"], row["score_sd"]


def _write_adaptive(
    result: AdaptiveResult, payload: dict[str, Any], out: Path, ci_prob: float, exchanges: pd.DataFrame | None
) -> None:
    """log.csv, predicted_accuracy.csv, trace.png (and exchanges.csv), then summary.json, each atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _write_csv(out / "log.csv", result.log)
    _write_csv(out / "predicted_accuracy.csv", result.scores.table(ci_prob))
    figure = result.plot_trace().get_figure(root=True)
    if figure is None:  # never: plot_trace draws on a figure of its own
        raise RuntimeError("plot_trace returned an Axes without a figure")
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=150, bbox_inches="tight")
    plt.close(figure)
    atomic_write_bytes(out / "trace.png", png.getvalue())
    if exchanges is not None:
        _write_csv(out / "exchanges.csv", exchanges)
    _write_json(out / "summary.json", payload)


def _exchanges(responder: Callable[[str], float]) -> pd.DataFrame | None:
    """An endpoint's exchanges (item, prompt hash, reply, parsed answer, response); None for a file's answers."""
    from irtbayes.evaluating.responders import EndpointResponder

    if not isinstance(responder, EndpointResponder):
        return None
    import pandas as pd

    columns = ["item", "prompt_hash", "reply", "parsed", "response"]
    return pd.DataFrame([asdict(e) for e in responder.log], columns=columns)


def _bank_data(args: argparse.Namespace) -> str | None:
    """The ``data`` of :meth:`ItemBank.from_fit` from ``--data``."""
    return getattr(args, "data", None)


def _bank(fit_result: Fit, args: argparse.Namespace, *, prior: str = "normal") -> ItemBank:
    """The item bank of ``--fit``, ``--draws``, ``--data`` and ``--one-ability``."""
    from irtbayes.evaluating.bank import ItemBank

    return ItemBank.from_fit(
        fit_result,
        n_draws=args.draws,
        prior=prior,
        data=_bank_data(args),
        deviations=not getattr(args, "one_ability", False),
    )


def cmd_track(args: argparse.Namespace) -> int:
    """``track``: changes between checkpoints by region; writes changes.csv, abilities.csv, tracking.txt and the
    trajectory figure."""
    from irtbayes.data import io as data_io
    from irtbayes.data.responses import ResponseData
    from irtbayes.evaluating.tracking import track
    from irtbayes.fitting.storage import load_fit

    fit_result = load_fit(args.fit)
    parts = [data_io.load(Path(p), **fit_result.read_options()) for p in args.checkpoints]
    checkpoints = parts[0] if len(parts) == 1 else ResponseData.combine(parts)
    step = _steps(Path(args.checkpoints[0]), args.step) if args.step and len(parts) == 1 else None
    if args.step and len(parts) > 1:
        raise SpecError("--step orders the checkpoints of one table; several files are taken in the order given")
    result = track(
        fit_result,
        checkpoints,
        bank=_bank(fit_result, args),
        baseline=args.baseline,
        step=step,
        regions=args.region,
        bins=args.bins,
        ci_prob=args.ci,
        seed=args.seed,
        effect=args.effect,
    )
    written = result.save(args.out)
    print(result.to_text())
    print(f"\nWrote {', '.join(written)} to {args.out}")
    return 0


def _steps(path: Path, column: str) -> dict[str, float]:
    """Each checkpoint's step from the ``column`` of the table at ``path`` (one value per subject)."""
    from irtbayes.data.io.tabular import read_table

    table = read_table(path)
    if column not in table.columns or "subject" not in table.columns:
        raise DataError(
            f"{path}: --step {column} needs the columns subject and {column}; found {listed(table.columns)}"
        )
    per = table.groupby(table["subject"].astype(str))[column].agg(["min", "max"])
    varying = per.index[per["min"] != per["max"]]
    if len(varying):
        raise DataError(f"{path}: column {column!r} varies within checkpoint(s) {listed(list(varying), 5)}")
    return {str(k): float(v) for k, v in per["min"].items()}


def cmd_adaptive(args: argparse.Namespace) -> int:
    """``adaptive``: one adaptive test; writes log.csv, predicted_accuracy.csv, summary.json and trace.png."""
    from irtbayes.core.summaries import check_ci_prob
    from irtbayes.evaluating.adaptive import AdaptiveTest
    from irtbayes.evaluating.crossfit import CrossFit, cross_fit_applies, not_cross_fitted
    from irtbayes.fitting.storage import load_fit

    check_ci_prob(args.ci)
    fit_result = load_fit(args.fit)
    bank = _bank(fit_result, args, prior=args.prior)
    target = _target(fit_result, args, default="uniform" if args.score == "target" else None)
    answers = _file_answers if args.responses else _endpoint_answers
    responder, subject, items, notes = answers(args, bank)
    exposure = _exposure(args)
    cross_fit = None
    if args.calibrate and bank.reference is not None and cross_fit_applies(fit_result, "adaptive", args.cross_fit):
        try:
            cross_fit = CrossFit.from_fit(
                fit_result, bank, data=_bank_data(args), seed=args.seed, scheduler=args.scheduler
            )
        except IrtbayesError as err:
            if args.cross_fit or args.scheduler:  # asked for: say why it could not be done
                raise
            notes.append(not_cross_fitted(err, "the final intervals"))
    test = AdaptiveTest(
        bank,
        score=args.score,
        target=target,
        criterion=args.criterion,
        max_items=args.max_items,
        min_items=args.min_items,
        se=args.se,
        exposure=exposure,
        items=items,
        ci_prob=args.ci,
        calibrate=args.calibrate,
        seed=args.seed,
        cross_fit=cross_fit,
    )
    _warnings_first([*bank.warnings, *notes])
    finished = _give_test(test, responder, subject, args)
    result = test.result(subject, allow_fitted=args.allow_fitted)
    out = Path(args.out)
    payload = result.to_dict(ci_prob=args.ci)
    payload["warnings"] = [*result.warnings, *notes]
    payload["settings"] = {
        "fit": str(args.fit),
        "answers": args.responses or f"{args.endpoint} ({args.model})",
        **{k: getattr(args, k) for k in ("score", "criterion", "max_items", "min_items", "se", "prior", "seed")},
        "n_draws": args.draws,
        "target": None if target is None else target.to_dict(),
        "exposure": args.exposure,
        "calibration": "none" if not args.calibrate else "cross-fitted" if cross_fit is not None else "in-sample",
    }
    _write_adaptive(result, payload, out, args.ci, _exchanges(responder))
    print(result.to_text(ci_prob=args.ci).removeprefix("".join(f"{w}\n" for w in result.warnings)))
    if not finished:
        print(
            f"irtbayes: interrupted after {test.n_answered} answers: wrote them to {out} (stop reason 'interrupted')"
            + ("; the exposure file was not updated" if args.exposure else ""),
            file=sys.stderr,
        )
        return 130
    if exposure is not None and args.exposure:
        exposure.save(args.exposure)
    print(f"\nWrote log.csv, predicted_accuracy.csv, trace.png and summary.json to {out}")
    if exposure is not None and args.exposure:
        print(
            f"Updated the exposure counts in {args.exposure} ({exposure.n_tests} test{'' if exposure.n_tests == 1 else 's'} so far)"
        )
    return 0
