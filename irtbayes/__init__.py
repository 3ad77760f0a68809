"""irtbayes: Bayesian item response theory audits of AI benchmarks.

One import gives the verbs of the whole pipeline, data -> model -> fit -> checks -> audit -> report, with
BenchFill, the robustness checks and the evaluation of new systems on a few items beside it::

    import irtbayes as irt

    data = irt.load_dataset("lsat7")
    fit = irt.fit(data, seed=1)
    result = irt.audit(fit, data)
    irt.report(fit, "out/report", data=data, audit=result)

Every name below is defined in one module of a stage subpackage (``irtbayes.data``, ``irtbayes.model``,
``irtbayes.fitting``, ``irtbayes.checks``, ``irtbayes.auditing``, ``irtbayes.reporting``, ``irtbayes.benchfill``,
``irtbayes.robustness``, ``irtbayes.evaluating``) and imported from there on first use, so ``import irtbayes``
itself is quick and the command line starts without loading PyMC. The stage modules hold the rest (per-draw
kernels, loaders of single formats, plot functions) for those who need them.
"""

from __future__ import annotations

import importlib
import warnings
from importlib import metadata
from typing import TYPE_CHECKING, Any

try:
    __version__ = metadata.version("irtbayes")
except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"

# public name -> the module that defines it
_PUBLIC: dict[str, str] = {
    # errors
    "IrtbayesError": "irtbayes.core.errors",
    "DataError": "irtbayes.core.errors",
    "SpecError": "irtbayes.core.errors",
    "FitError": "irtbayes.core.errors",
    "FitInterrupted": "irtbayes.core.errors",
    # data
    "ResponseData": "irtbayes.data.responses",
    "load": "irtbayes.data.io",
    "load_dataset": "irtbayes.data.registry",
    "list_datasets": "irtbayes.data.registry",
    "simulate_responses": "irtbayes.data.simulate",
    # model
    "ModelSpec": "irtbayes.model.spec",
    "Priors": "irtbayes.model.spec",
    # fit
    "fit": "irtbayes.fitting.fit",
    "Fit": "irtbayes.fitting.result",
    "SamplerSettings": "irtbayes.fitting.settings",
    "StopRule": "irtbayes.fitting.until_converged",
    "save_fit": "irtbayes.fitting.storage",
    "load_fit": "irtbayes.fitting.storage",
    # checks
    "Diagnostics": "irtbayes.fitting.diagnostics.verdict",
    "PredictiveCheck": "irtbayes.checks.predictive",
    "posterior_predictive_check": "irtbayes.checks.predictive",
    "log_likelihood": "irtbayes.checks.predictive",
    "compare_fits": "irtbayes.checks.predictive",
    "check_items": "irtbayes.checks.items",
    "ItemChecks": "irtbayes.checks.items",
    # audit
    "audit": "irtbayes.auditing.run",
    "AuditSettings": "irtbayes.auditing.settings",
    "AuditResult": "irtbayes.auditing.result",
    "save_audit": "irtbayes.auditing.folder",
    "load_audit": "irtbayes.auditing.folder",
    "Target": "irtbayes.auditing.targets",
    "uniform_target": "irtbayes.auditing.targets",
    "weights_target": "irtbayes.auditing.targets",
    "group_target": "irtbayes.auditing.targets",
    "read_target": "irtbayes.auditing.targets",
    # report and exports
    "report": "irtbayes.reporting.report",
    "write_mirt": "irtbayes.reporting.interchange",
    "write_tinybenchmarks": "irtbayes.reporting.interchange",
    # BenchFill
    "choose_target": "irtbayes.benchfill.target",
    "propose": "irtbayes.benchfill.proposal",
    "calibrate_candidates": "irtbayes.benchfill.run",
    "save_benchfill": "irtbayes.benchfill.result",
    "load_benchfill": "irtbayes.benchfill.result",
    "BenchfillResult": "irtbayes.benchfill.result",
    "AcceptanceRule": "irtbayes.benchfill.acceptance",
    "Candidate": "irtbayes.benchfill.candidates",
    "load_candidates": "irtbayes.benchfill.candidates",
    "FileSource": "irtbayes.benchfill.sources",
    "CallableSource": "irtbayes.benchfill.sources",
    "LLMSource": "irtbayes.benchfill.llm",
    "ProposalRequest": "irtbayes.benchfill.sources",
    "export_lm_eval": "irtbayes.benchfill.export",
    "export_csv_template": "irtbayes.benchfill.export",
    # robustness
    "check_robustness": "irtbayes.robustness.run",
    "RobustnessSettings": "irtbayes.robustness.run",
    "RobustnessResult": "irtbayes.robustness.run",
    "report_robustness": "irtbayes.reporting.robustness",
    # evaluating new systems: their abilities, and scores on a few items
    "score": "irtbayes.evaluating.scoring",
    "Scores": "irtbayes.evaluating.scoring",
    "predict_scores": "irtbayes.evaluating.prediction",
    "PredictedScores": "irtbayes.evaluating.prediction",
    "select_items": "irtbayes.evaluating.selection",
    "Selection": "irtbayes.evaluating.selection",
    "AdaptiveTest": "irtbayes.evaluating.adaptive",
    "AdaptiveResult": "irtbayes.evaluating.adaptive",
    "run_adaptive": "irtbayes.evaluating.adaptive",
    "Exposure": "irtbayes.evaluating.adaptive",
    "ItemBank": "irtbayes.evaluating.bank",
    "track": "irtbayes.evaluating.tracking",
    "Tracking": "irtbayes.evaluating.tracking",
    "file_responder": "irtbayes.evaluating.responders",
    "EndpointResponder": "irtbayes.evaluating.responders",
}

__all__ = [
    "AcceptanceRule",
    "AdaptiveResult",
    "AdaptiveTest",
    "AuditResult",
    "AuditSettings",
    "BenchfillResult",
    "CallableSource",
    "Candidate",
    "DataError",
    "Diagnostics",
    "EndpointResponder",
    "Exposure",
    "FileSource",
    "Fit",
    "FitError",
    "FitInterrupted",
    "IrtbayesError",
    "ItemBank",
    "ItemChecks",
    "LLMSource",
    "ModelSpec",
    "PredictedScores",
    "PredictiveCheck",
    "Priors",
    "ProposalRequest",
    "ResponseData",
    "RobustnessResult",
    "RobustnessSettings",
    "SamplerSettings",
    "Scores",
    "Selection",
    "SpecError",
    "StopRule",
    "Target",
    "Tracking",
    "__version__",
    "audit",
    "calibrate_candidates",
    "check_items",
    "check_robustness",
    "choose_target",
    "compare_fits",
    "export_csv_template",
    "export_lm_eval",
    "file_responder",
    "fit",
    "group_target",
    "list_datasets",
    "load",
    "load_audit",
    "load_benchfill",
    "load_candidates",
    "load_dataset",
    "load_fit",
    "log_likelihood",
    "posterior_predictive_check",
    "predict_scores",
    "propose",
    "read_target",
    "report",
    "report_robustness",
    "run_adaptive",
    "save_audit",
    "save_benchfill",
    "save_fit",
    "score",
    "select_items",
    "simulate_responses",
    "track",
    "uniform_target",
    "weights_target",
    "write_mirt",
    "write_tinybenchmarks",
]

# old public name -> its new name: still given, with a DeprecationWarning, for a release (in neither __all__ nor _PUBLIC)
_RENAMED: dict[str, str] = {
    "write_audit": "save_audit",
    "write_benchfill": "save_benchfill",
    "load_benchfill_result": "load_benchfill",
}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"irtbayes.{name} is deprecated: use irtbayes.{new}", DeprecationWarning, stacklevel=2)
        return __getattr__(new)
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'irtbayes' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # what IDEs and mypy see; at run time the names load on first use
    from irtbayes.auditing.folder import load_audit, save_audit
    from irtbayes.auditing.result import AuditResult
    from irtbayes.auditing.run import audit
    from irtbayes.auditing.settings import AuditSettings
    from irtbayes.auditing.targets import Target, group_target, read_target, uniform_target, weights_target
    from irtbayes.benchfill.acceptance import AcceptanceRule
    from irtbayes.benchfill.candidates import Candidate, load_candidates
    from irtbayes.benchfill.export import export_csv_template, export_lm_eval
    from irtbayes.benchfill.llm import LLMSource
    from irtbayes.benchfill.proposal import propose
    from irtbayes.benchfill.result import BenchfillResult, load_benchfill, save_benchfill
    from irtbayes.benchfill.run import calibrate_candidates
    from irtbayes.benchfill.sources import CallableSource, FileSource, ProposalRequest
    from irtbayes.benchfill.target import choose_target
    from irtbayes.checks.items import ItemChecks, check_items
    from irtbayes.checks.predictive import PredictiveCheck, compare_fits, log_likelihood, posterior_predictive_check
    from irtbayes.core.errors import DataError, FitError, FitInterrupted, IrtbayesError, SpecError
    from irtbayes.data.io import load
    from irtbayes.data.registry import list_datasets, load_dataset
    from irtbayes.data.responses import ResponseData
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.evaluating.adaptive import AdaptiveResult, AdaptiveTest, Exposure, run_adaptive
    from irtbayes.evaluating.bank import ItemBank
    from irtbayes.evaluating.prediction import PredictedScores, predict_scores
    from irtbayes.evaluating.responders import EndpointResponder, file_responder
    from irtbayes.evaluating.scoring import Scores, score
    from irtbayes.evaluating.selection import Selection, select_items
    from irtbayes.evaluating.tracking import Tracking, track
    from irtbayes.fitting.diagnostics.verdict import Diagnostics
    from irtbayes.fitting.fit import fit
    from irtbayes.fitting.result import Fit
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.fitting.storage import load_fit, save_fit
    from irtbayes.fitting.until_converged import StopRule
    from irtbayes.model.spec import ModelSpec, Priors
    from irtbayes.reporting.interchange import write_mirt, write_tinybenchmarks
    from irtbayes.reporting.report import report
    from irtbayes.reporting.robustness import report_robustness
    from irtbayes.robustness.run import RobustnessResult, RobustnessSettings, check_robustness
