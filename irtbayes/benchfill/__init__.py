"""BenchFill: fill difficulty gaps in a benchmark with new items, accepted only on posterior evidence.

The loop: pick a target bin ``[lo, hi)`` on the ability scale; ask a :class:`CandidateSource` (a file, a Python
callable, or an LLM behind an OpenAI-compatible API) for candidates with a :class:`ProposalRequest`; have the
evaluated systems answer them (:func:`export_lm_eval`, :func:`export_csv_template`); refit; accept a candidate
only when :func:`decide` / :func:`decide_all` find it in the bin with probability ``tau`` and credibly
discriminating; record every decision in a :class:`Ledger`.
"""

from irtbayes.benchfill.acceptance import REASONS, Decision, decide, decide_all
from irtbayes.benchfill.candidates import (
    CallableSource,
    Candidate,
    CandidateSource,
    FileSource,
    LLMSource,
    Proposal,
    ProposalRequest,
    Rejection,
    SeedItem,
    candidate_from_record,
    candidate_id_for,
    items_table,
    load_candidates,
    select_seeds,
)
from irtbayes.benchfill.client import ChatAPIError, ChatClient
from irtbayes.benchfill.export import LmEvalExport, export_csv_template, export_lm_eval
from irtbayes.benchfill.ledger import LEDGER_COLUMNS, Ledger, decision_records
from irtbayes.benchfill.prompts import ReplyError, build_messages, parse_reply, prompt_hash

__all__ = [
    "LEDGER_COLUMNS",
    "REASONS",
    "CallableSource",
    "Candidate",
    "CandidateSource",
    "ChatAPIError",
    "ChatClient",
    "Decision",
    "FileSource",
    "LLMSource",
    "Ledger",
    "LmEvalExport",
    "Proposal",
    "ProposalRequest",
    "Rejection",
    "ReplyError",
    "SeedItem",
    "build_messages",
    "candidate_from_record",
    "candidate_id_for",
    "decide",
    "decide_all",
    "decision_records",
    "export_csv_template",
    "export_lm_eval",
    "items_table",
    "load_candidates",
    "parse_reply",
    "prompt_hash",
    "select_seeds",
]
