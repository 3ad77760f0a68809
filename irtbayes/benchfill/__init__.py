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
:mod:`irtbayes.cli.benchfill` the ``irtbayes benchfill`` verbs.
"""
