"""The BenchFill loop as functions: aim, proposal, export, responses, calibration, decisions, before/after.

One round::

    data = load_fit_data(fit)                                   # the bank's responses (checksum checked)
    aim, audit_result = choose_aim(fit, data, benchmark="bench01")      # the widest gap's bin
    proposal = propose(fit, data, aim, FileSource("cands.jsonl"))
    save_proposal("out/bf", proposal, aim, fit_dir="models/fit")
    export_proposal("out/bf", "lm-eval")                        # the systems answer the candidates
    new = load_candidate_responses("lm_eval_out/", proposal.candidates, fit=fit)
    result = calibrate_candidates(fit, data, proposal.candidates, new, aim, mode="full")
    save_benchfill(result, "out/bf/round1", candidates=proposal.candidates)


The steps live in :mod:`~irtbayes.benchfill.aim` (the aim: the interval ``[lo, hi)`` the new items should fill), :mod:`~irtbayes.benchfill.proposal` (the
proposal and its export), :mod:`~irtbayes.benchfill.calibration` (the candidates' responses and their calibration),
:mod:`~irtbayes.benchfill.acceptance` and :mod:`~irtbayes.benchfill.screens` (the decisions) and
:mod:`~irtbayes.benchfill.result` (before/after, the result written and read back); this module holds the round
itself (:func:`calibrate_candidates`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.benchfill.acceptance import AcceptanceRule, decide_all
from irtbayes.benchfill.aim import Aim
from irtbayes.benchfill.calibration import calibrate_fixed, calibrate_full, typical_discrimination
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.grid import MIN_DISCRIMINATION_SHARE, Prior
from irtbayes.benchfill.result import HYPER_VARS, BenchfillResult, append_draws, before_after
from irtbayes.benchfill.screens import CONSTRUCT_PROB, ITEM_FIT_PPP, combine_screens, screen_construct, screen_novelty
from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.model.spec import GRADED_KINDS

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.fitting.result import Fit

__all__ = [
    "calibrate_candidates",
]

log = logging.getLogger(__name__)

Mode = Literal["full", "fixed"]


def _silent_rows(ids: Sequence[str], *, aim: Aim, min_responses: int) -> pd.DataFrame:
    """Decision rows for candidates nobody answered."""
    rows = [
        {
            "item": cid,
            "decision": "rejected",
            "reason": "not enough responses",
            "detail": f"0 responses, fewer than {min_responses}",
            "failed": "not enough responses",
            "n_responses": 0,
            "aim_lo": aim.lo,
            "aim_hi": aim.hi,
        }
        for cid in ids
    ]
    return pd.DataFrame(rows).set_index("item")


def calibrate_candidates(
    fit: Fit,
    data: ResponseData,
    candidates: Sequence[Candidate],
    new_data: ResponseData,
    aim: Aim,
    *,
    mode: Mode = "full",
    prior: Prior = "candidates",
    rule: AcceptanceRule | None = None,
    chains: int | None = None,
    draws: int | None = None,
    tune: int | None = None,
    seed: int | None = None,
    progress: bool = False,
    allow_rewrites: bool = False,
    bank_audit: AuditResult | None = None,
) -> BenchfillResult:
    """Calibrate the candidates, decide each one, and compare the bank before and after.

    Parameters
    ----------
    fit, data
        The bank's fit and its data.
    candidates
        Every candidate of the round (those without responses are rejected for "not enough responses").
    new_data
        Their responses (:func:`load_candidate_responses`).
    aim
        The aim: the interval the new items should fill (:func:`~irtbayes.benchfill.aim.choose_aim`).
    mode
        ``"full"`` refits the bank with the candidates (:func:`~irtbayes.benchfill.calibration.calibrate_full`);
        ``"fixed"`` holds the bank at its posterior (:func:`~irtbayes.benchfill.calibration.calibrate_fixed`).
    prior
        ``"candidates"`` (default): the candidates of a benchmark form their own group in the hierarchy;
        ``"bank"``: each gets the prior of a new item of its benchmark.
    rule
        The :class:`~irtbayes.benchfill.acceptance.AcceptanceRule` (default: its defaults). A rule without
        ``min_discrimination`` (the default) takes :data:`~irtbayes.benchfill.grid.MIN_DISCRIMINATION_SHARE` of
        the bank's typical discrimination (:func:`~irtbayes.benchfill.calibration.typical_discrimination`), recorded
        in the settings as ``min_discrimination`` with ``min_discrimination_rule``.
    chains, draws, tune, seed, progress
        Sampler settings of the refit (default: the fit's own); ``seed`` also seeds the fixed-bank draws.
    allow_rewrites
        Accept a rewrite of a bank item that is not the candidate's seed (see
        :func:`~irtbayes.benchfill.screens.screen_novelty`).
    bank_audit
        The saved audit of the bank the aim came from: the before/after comparison reads it as the ``before``
        audit and audits the extended bank with its settings (see :func:`~irtbayes.benchfill.result.before_after`).

    Returns
    -------
    BenchfillResult

    Examples
    --------
    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> from irtbayes.benchfill.run import calibrate_candidates
    >>> from irtbayes.benchfill.calibration import candidate_response_data
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    >>> new = candidate_response_data(answers, candidates, fit=fit)
    >>> result = calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4)
    >>> result.accepted, result.decisions.loc["mis-keyed", "reason"]
    (['good'], 'mis-keyed')
    """
    fit.refuse_if_unsettled("BenchFill calibrate")
    if mode not in ("full", "fixed"):
        raise SpecError(f"mode must be 'full' or 'fixed', got {mode!r}")
    if mode == "fixed" and fit.spec.kind in GRADED_KINDS:
        raise SpecError(
            f"mode='fixed' holds the bank on a grid made for binary items; this is a {fit.spec.kind.upper()} fit, "
            "whose graded candidates are calibrated by the full refit (mode='full', `--mode full`)"
        )
    ids = _check_round(candidates, new_data)
    settings = _round_settings(fit, mode=mode, prior=prior, rule=AcceptanceRule() if rule is None else rule)
    posterior, refit = _calibrate_round(
        fit, data, new_data, settings, chains=chains, draws=draws, tune=tune, seed=seed, progress=progress
    )
    decisions = _decisions(posterior, candidates, new_data, aim, settings=settings)
    ability = (refit if refit is not None else fit).posterior["ability"]
    decisions = _editorial(
        decisions, candidates, data, new_data, posterior, ability, seed=seed, allow_rewrites=allow_rewrites
    )
    settings["novelty"] = decisions.attrs["novelty"]
    settings["construct"] = {"item_fit_ppp": ITEM_FIT_PPP, "construct_prob": CONSTRUCT_PROB}
    accepted = [i for i in ids if decisions.loc[i, "decision"] == "accepted"]
    extended, extended_data = _extended_bank(fit, data, new_data, posterior, refit, accepted)
    tables = before_after(
        fit, data, extended, extended_data, added=accepted, target=aim.target, benchmark=aim.benchmark,
        aim_bin=_bin_of(aim), ci_prob=settings["ci_prob"], bank_audit=bank_audit,
    )  # fmt: skip
    return _round_result(decisions, tables, aim, settings)


def _calibrate_round(
    fit: Fit,
    data: ResponseData,
    new_data: ResponseData,
    settings: dict[str, Any],
    *,
    chains: int | None,
    draws: int | None,
    tune: int | None,
    seed: int | None,
    progress: bool,
) -> tuple[xr.Dataset, Fit | None]:
    """The candidates' posterior by ``settings["mode"]``, and the refit (``None`` when the bank is held fixed);
    what the calibration was is added to ``settings``."""
    if settings["mode"] == "full":
        full = calibrate_full(
            fit, data, new_data, chains=chains, draws=draws, tune=tune, seed=seed, progress=progress,
            prior=settings["prior"],
        )  # fmt: skip
        refit = full.refit
        settings["refit"] = {k: refit.sampler.get(k) for k in ("name", "chains", "draws", "tune", "seed")}
        settings["refit_converged"] = bool(refit.diagnostics.ok)
        return full.posterior, refit
    fit.check_data(data)
    posterior = calibrate_fixed(fit, new_data, seed=seed, prior=settings["prior"])
    settings["fixed"] = dict(posterior.attrs)
    settings["bank_converged"] = bool(fit.diagnostics.ok)
    return posterior, None


def _round_result(
    decisions: pd.DataFrame, tables: dict[str, Any], aim: Aim, settings: dict[str, Any]
) -> BenchfillResult:
    """The round's result, under a new run id (UTC time and a random suffix)."""
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    return BenchfillResult(decisions=decisions, aim=aim, settings=settings, run_id=run_id, **tables)


def _bin_of(aim: Aim) -> int | None:
    """The aim's bin, or the audit bin holding the middle of an aim that is no bin."""
    if aim.bin is not None:
        return aim.bin
    edges = aim.target.edges_array
    k = int(np.searchsorted(edges, (aim.lo + aim.hi) / 2, side="right")) - 1
    return k if 0 <= k < aim.target.n_bins else None


def _check_round(candidates: Sequence[Candidate], new_data: ResponseData) -> list[str]:
    """The candidates' ids, after checking that they are unique and that every response is to a candidate."""
    ids = [c.candidate_id for c in candidates]
    if len(set(ids)) != len(ids):
        raise DataError(f"candidate id(s) {sorted({i for i in ids if ids.count(i) > 1})} appear more than once")
    extra = sorted(set(map(str, new_data.item_ids)) - set(ids))
    if extra:
        raise DataError(f"{new_data.source}: responses to item(s) that are not candidates: {extra[:20]}")
    return ids


def _round_settings(
    fit: Fit,
    *,
    mode: str,
    prior: str,
    rule: AcceptanceRule,
) -> dict[str, Any]:
    """The round's settings; a rule without ``min_discrimination`` takes its default share of the bank's typical one."""
    if not isinstance(rule, AcceptanceRule):
        raise SpecError(f"rule must be an AcceptanceRule, got {type(rule).__name__}")
    rule_text, min_discrimination = "given", rule.min_discrimination
    if min_discrimination is None:
        typical = typical_discrimination(fit)
        min_discrimination = MIN_DISCRIMINATION_SHARE * typical
        rule_text = (
            f"{MIN_DISCRIMINATION_SHARE:g} of the bank's typical discrimination {typical:.3g} (median posterior mean)"
        )
    return {
        "mode": mode,
        "prior": prior,
        "tau": rule.tau,
        "min_responses": rule.min_responses,
        "discrimination_prob": rule.discrimination_prob,
        "min_discrimination": min_discrimination,
        "min_discrimination_rule": rule_text,
        "ci_prob": rule.ci_prob,
        "kind": fit.spec.kind,
        "bank_sampler": {k: fit.sampler.get(k) for k in ("name", "chains", "draws", "tune", "seed")},
    }


def _decisions(
    posterior: xr.Dataset,
    candidates: Sequence[Candidate],
    new_data: ResponseData,
    aim: Aim,
    *,
    settings: dict[str, Any],
) -> pd.DataFrame:
    """One row per candidate (index ``candidate_id``, in the candidates' order): the acceptance rule's verdict."""
    ids = [c.candidate_id for c in candidates]
    answered = [str(i) for i in new_data.item_ids]
    min_responses = int(settings["min_responses"])
    decisions = decide_all(
        posterior,
        aim_lo=aim.lo,
        aim_hi=aim.hi,
        n_responses=posterior["n_responses"].to_series(),
        items=answered,
        rule=AcceptanceRule(**{key: settings[key] for key in AcceptanceRule.__dataclass_fields__}),
    )
    silent = [i for i in ids if i not in set(answered)]
    if silent:
        log.info("%d candidate(s) have no responses and are rejected: %s", len(silent), silent[:10])
        decisions = pd.concat([decisions, _silent_rows(silent, aim=aim, min_responses=min_responses)])
    by_id = {c.candidate_id: c for c in candidates}
    decisions = decisions.reindex(ids)
    decisions.index.name = "candidate_id"
    decisions["benchmark"] = [by_id[i].benchmark for i in ids]
    decisions["text"] = [by_id[i].text for i in ids]
    decisions.attrs.update(ci_prob=settings["ci_prob"], tau=settings["tau"])
    return decisions


def _editorial(
    decisions: pd.DataFrame,
    candidates: Sequence[Candidate],
    data: ResponseData,
    new_data: ResponseData,
    posterior: xr.Dataset,
    ability: xr.DataArray,
    *,
    seed: int | None,
    allow_rewrites: bool = False,
) -> pd.DataFrame:
    """The acceptance rule's decisions with the novelty screen (against the bank's item texts, from ``data``)
    and the construct screen folded in (see :mod:`irtbayes.benchfill.screens`)."""
    table = pd.DataFrame(
        {"text": [c.text for c in candidates], "seed_item": [c.seed_item for c in candidates]},
        index=pd.Index([c.candidate_id for c in candidates], name="candidate_id"),
    )
    bank = data.items["text"] if "text" in data.items.columns else pd.Series(dtype=object)
    novelty = screen_novelty(table, bank, allow_rewrites=allow_rewrites)
    if novelty.attrs["bank_texts"] == 0:
        log.warning("%s: the bank's items have no text, so the candidates are not compared with it", data.source)
    construct = screen_construct(ability, posterior, new_data, seed=0 if seed is None else seed)
    return combine_screens(decisions, novelty, construct)


def _extended_bank(
    fit: Fit,
    data: ResponseData,
    new_data: ResponseData,
    posterior: xr.Dataset,
    refit: Fit | None,
    accepted: Sequence[str],
) -> tuple[xr.Dataset, ResponseData]:
    """The posterior and data of the original items plus the accepted ones, under the candidates' own labels.

    The full refit's posterior is restricted to the original and accepted items; the fixed-bank draws of the
    accepted items are appended to the bank's posterior. The data keeps each accepted item's benchmark as the
    candidate names it (never the refit's calibration group), so the after-audit counts it in its benchmark.
    """
    accepted = list(accepted)
    if refit is not None:
        keep = [str(i) for i in data.item_ids] + accepted
        graded = ("threshold", "location") if refit.spec.kind in GRADED_KINDS else ()
        names = [
            n
            for n in ("ability", "difficulty", "discrimination", "guessing", *graded, *HYPER_VARS)
            if n in refit.posterior
        ]
        extended = refit.posterior[names].sel(item=keep)
        # a graded posterior says which model it is, so that the audit places its items at their locations
        extended.attrs = {"model_kind": refit.spec.kind} if graded else {}
    else:
        extended = append_draws(fit.posterior, posterior, accepted, kind=fit.spec.kind)
    extended_data = ResponseData.combine([data, new_data.subset(items=accepted)]) if accepted else data
    return extended, extended_data
