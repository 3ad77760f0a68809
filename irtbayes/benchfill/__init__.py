"""BenchFill: fill difficulty gaps in a benchmark with new items, accepted only on posterior evidence.

The loop: pick the aim, the interval ``[lo, hi)`` on the ability scale the new items should fill (by default the bin
of the widest gap); ask a :class:`CandidateSource` (a file, a Python callable, or an LLM behind an OpenAI-compatible
API) for candidates with a :class:`ProposalRequest`; have the evaluated systems answer them (:func:`export_lm_eval`,
:func:`export_csv_template`); refit; accept a candidate only when :func:`decide` / :func:`decide_all` find it in the
aim with probability ``tau`` (under the calibration's prior and from the data alone) and credibly discriminating,
and when the editorial screens pass (:func:`screen_novelty`: not a copy of a bank item or of another candidate;
:func:`screen_construct`: it measures what its benchmark measures; :func:`combine_screens`); record every decision
in a :class:`Ledger`.

The modules, in the order of a round:

- :mod:`~irtbayes.benchfill.aim`: the bank's data and the aim (:class:`Aim`, :func:`choose_aim`);
- :mod:`~irtbayes.benchfill.candidates`: :class:`Candidate`, its validation and :func:`load_candidates`;
- :mod:`~irtbayes.benchfill.sources`: the :class:`ProposalRequest`, seed items, :class:`FileSource` and
  :class:`CallableSource`;
- :mod:`~irtbayes.benchfill.llm`: :class:`LLMSource`, its OpenAI-compatible client (:class:`ChatClient`) and prompt;
- :mod:`~irtbayes.benchfill.proposal`: :func:`propose`, the proposal written, read back and exported;
- :mod:`~irtbayes.benchfill.export`: an lm-evaluation-harness task or a CSV template for the systems to answer;
- :mod:`~irtbayes.benchfill.calibration`: the candidates' responses read and checked, then a full refit
  (:func:`calibrate_full`) or a fast fixed-bank grid (:func:`calibrate_fixed`);
- :mod:`~irtbayes.benchfill.grid`: the grid posteriors and priors behind the fixed-bank calibration;
- :mod:`~irtbayes.benchfill.acceptance`: :class:`AcceptanceRule`, :func:`decide` / :func:`decide_all` and the
  rule's operating characteristic;
- :mod:`~irtbayes.benchfill.screens`: the novelty and construct screens and the editorial verdict;
- :mod:`~irtbayes.benchfill.ledger`: the append-only :class:`Ledger`;
- :mod:`~irtbayes.benchfill.result`: :class:`BenchfillResult`, the before/after audit, its figures,
  :func:`save_benchfill` and :func:`load_benchfill`;
- :mod:`~irtbayes.benchfill.run`: one round (:func:`calibrate_candidates`).

:mod:`irtbayes.cli.benchfill` holds the ``irtbayes benchfill`` verbs.
"""
