"""BenchFill: fill difficulty gaps in a benchmark with new items, accepted only on posterior evidence.

The loop: pick a target bin ``[lo, hi)`` on the ability scale; ask a :class:`CandidateSource` (a file, a Python
callable, or an LLM behind an OpenAI-compatible API) for candidates with a :class:`ProposalRequest`; have the
evaluated systems answer them (:func:`export_lm_eval`, :func:`export_csv_template`); refit; accept a candidate
only when :func:`decide` / :func:`decide_all` find it in the bin with probability ``tau`` (under the
calibration's prior and from the data alone) and credibly discriminating, and when the editorial screens pass
(:func:`screen_novelty`: not a copy of a bank item or of another candidate; :func:`screen_construct`: it
measures what its benchmark measures; :func:`combine_screens`); record every decision in a :class:`Ledger`.

Calibration (:mod:`irtbayes.benchfill.calibration`) is a full refit (:func:`calibrate_full`) or a fast
fixed-bank grid (:func:`calibrate_fixed`); :mod:`irtbayes.benchfill.run` holds the loop's steps
(:func:`choose_target`, :func:`propose`, :func:`calibrate_candidates`, :func:`write_benchfill`, ...) and
:mod:`irtbayes.benchfill.commands` the ``irtbayes benchfill`` verbs.
"""

from irtbayes.benchfill.acceptance import REASONS, Decision, decide, decide_all
from irtbayes.benchfill.calibration import (
    FullCalibration,
    calibrate_fixed,
    calibrate_full,
    candidate_response_data,
    operating_characteristic,
    operating_characteristic_table,
)
from irtbayes.benchfill.candidates import (
    Candidate,
    candidate_from_record,
    candidate_id_for,
    items_table,
    load_candidates,
)
from irtbayes.benchfill.client import ChatAPIError, ChatClient
from irtbayes.benchfill.compare import composition_conclusions
from irtbayes.benchfill.construct import screen_construct
from irtbayes.benchfill.editorial import combine_screens
from irtbayes.benchfill.export import LmEvalExport, export_csv_template, export_lm_eval
from irtbayes.benchfill.ledger import LEDGER_COLUMNS, Ledger, decision_records
from irtbayes.benchfill.llm import LLMSource
from irtbayes.benchfill.novelty import classify_pair, screen_novelty
from irtbayes.benchfill.prompts import ReplyError, build_messages, parse_reply, prompt_hash
from irtbayes.benchfill.run import (
    BenchfillResult,
    TargetChoice,
    before_after,
    calibrate_candidates,
    choose_target,
    export_proposal,
    load_benchfill_result,
    load_candidate_responses,
    load_fit_data,
    plot_candidate_intervals,
    plot_coverage_before_after,
    propose,
    read_proposal,
    write_benchfill,
    write_proposal,
)
from irtbayes.benchfill.sources import (
    CallableSource,
    CandidateSource,
    FileSource,
    Proposal,
    ProposalRequest,
    Rejection,
    SeedItem,
    select_seeds,
)

__all__ = [
    "LEDGER_COLUMNS",
    "REASONS",
    "BenchfillResult",
    "CallableSource",
    "Candidate",
    "CandidateSource",
    "ChatAPIError",
    "ChatClient",
    "Decision",
    "FileSource",
    "FullCalibration",
    "LLMSource",
    "Ledger",
    "LmEvalExport",
    "Proposal",
    "ProposalRequest",
    "Rejection",
    "ReplyError",
    "SeedItem",
    "TargetChoice",
    "before_after",
    "build_messages",
    "calibrate_candidates",
    "calibrate_fixed",
    "calibrate_full",
    "candidate_from_record",
    "candidate_id_for",
    "candidate_response_data",
    "choose_target",
    "classify_pair",
    "combine_screens",
    "composition_conclusions",
    "decide",
    "decide_all",
    "decision_records",
    "export_csv_template",
    "export_lm_eval",
    "export_proposal",
    "items_table",
    "load_benchfill_result",
    "load_candidate_responses",
    "load_candidates",
    "load_fit_data",
    "operating_characteristic",
    "operating_characteristic_table",
    "parse_reply",
    "plot_candidate_intervals",
    "plot_coverage_before_after",
    "prompt_hash",
    "propose",
    "read_proposal",
    "screen_construct",
    "screen_novelty",
    "select_seeds",
    "write_benchfill",
    "write_proposal",
]
