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

# the names users call -> the module that defines it; the results they return (AuditResult, Scores, ...), BenchFill's
# candidate sources and the adaptive test's parts are imported from that module (each result's own ``load``)
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
    "posterior_predictive_check": "irtbayes.checks.predictive",
    "log_likelihood": "irtbayes.checks.predictive",
    "compare_fits": "irtbayes.checks.predictive",
    "check_items": "irtbayes.checks.items",
    # audit
    "audit": "irtbayes.auditing.run",
    "AuditSettings": "irtbayes.auditing.settings",
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
    "choose_aim": "irtbayes.benchfill.aim",
    "propose": "irtbayes.benchfill.proposal",
    "calibrate_candidates": "irtbayes.benchfill.run",
    "save_benchfill": "irtbayes.benchfill.result",
    "load_benchfill": "irtbayes.benchfill.result",
    "AcceptanceRule": "irtbayes.benchfill.acceptance",
    "load_candidates": "irtbayes.benchfill.candidates",
    # robustness
    "check_robustness": "irtbayes.robustness.run",
    "RobustnessSettings": "irtbayes.robustness.run",
    "report_robustness": "irtbayes.reporting.robustness",
    # evaluating new systems: their abilities, and scores on a few items
    "score": "irtbayes.evaluating.scoring",
    "predict_scores": "irtbayes.evaluating.prediction",
    "select_items": "irtbayes.evaluating.selection",
    "AdaptiveTest": "irtbayes.evaluating.adaptive",
    "run_adaptive": "irtbayes.evaluating.adaptive",
    "track": "irtbayes.evaluating.tracking",
    "file_responder": "irtbayes.evaluating.responders",
}

__all__ = [
    "AcceptanceRule",
    "AdaptiveTest",
    "AuditSettings",
    "DataError",
    "Fit",
    "FitError",
    "FitInterrupted",
    "IrtbayesError",
    "ModelSpec",
    "Priors",
    "ResponseData",
    "RobustnessSettings",
    "SamplerSettings",
    "SpecError",
    "StopRule",
    "Target",
    "__version__",
    "audit",
    "calibrate_candidates",
    "check_items",
    "check_robustness",
    "choose_aim",
    "compare_fits",
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
    "choose_target": "choose_aim",
}


# names once at the top level, now only in the stage module that defines them: still given, with a
# DeprecationWarning naming that module, for a release (in neither __all__ nor _PUBLIC)
_MOVED: dict[str, str] = {
    "AdaptiveResult": "irtbayes.evaluating.adaptive",
    "AuditResult": "irtbayes.auditing.result",
    "BenchfillResult": "irtbayes.benchfill.result",
    "CallableSource": "irtbayes.benchfill.sources",
    "Candidate": "irtbayes.benchfill.candidates",
    "Diagnostics": "irtbayes.fitting.diagnostics.verdict",
    "EndpointResponder": "irtbayes.evaluating.responders",
    "Exposure": "irtbayes.evaluating.adaptive",
    "FileSource": "irtbayes.benchfill.sources",
    "ItemBank": "irtbayes.evaluating.bank",
    "ItemChecks": "irtbayes.checks.items",
    "LLMSource": "irtbayes.benchfill.llm",
    "PredictedScores": "irtbayes.evaluating.prediction",
    "PredictiveCheck": "irtbayes.checks.predictive",
    "ProposalRequest": "irtbayes.benchfill.sources",
    "RobustnessResult": "irtbayes.robustness.run",
    "Scores": "irtbayes.evaluating.scoring",
    "Selection": "irtbayes.evaluating.selection",
    "Tracking": "irtbayes.evaluating.tracking",
    "export_csv_template": "irtbayes.benchfill.export",
    "export_lm_eval": "irtbayes.benchfill.export",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        home = _MOVED[name]
        warnings.warn(
            f"irtbayes.{name} is deprecated: import it from {home} ({name} is no longer at the top level)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)
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
    from irtbayes.auditing.run import audit
    from irtbayes.auditing.settings import AuditSettings
    from irtbayes.auditing.targets import Target, group_target, read_target, uniform_target, weights_target
    from irtbayes.benchfill.acceptance import AcceptanceRule
    from irtbayes.benchfill.aim import choose_aim
    from irtbayes.benchfill.candidates import load_candidates
    from irtbayes.benchfill.proposal import propose
    from irtbayes.benchfill.result import load_benchfill, save_benchfill
    from irtbayes.benchfill.run import calibrate_candidates
    from irtbayes.checks.items import check_items
    from irtbayes.checks.predictive import compare_fits, log_likelihood, posterior_predictive_check
    from irtbayes.core.errors import DataError, FitError, FitInterrupted, IrtbayesError, SpecError
    from irtbayes.data.io import load
    from irtbayes.data.registry import list_datasets, load_dataset
    from irtbayes.data.responses import ResponseData
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.evaluating.adaptive import AdaptiveTest, run_adaptive
    from irtbayes.evaluating.prediction import predict_scores
    from irtbayes.evaluating.responders import file_responder
    from irtbayes.evaluating.scoring import score
    from irtbayes.evaluating.selection import select_items
    from irtbayes.evaluating.tracking import track
    from irtbayes.fitting.fit import fit
    from irtbayes.fitting.result import Fit
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.fitting.storage import load_fit, save_fit
    from irtbayes.fitting.until_converged import StopRule
    from irtbayes.model.spec import ModelSpec, Priors
    from irtbayes.reporting.interchange import write_mirt, write_tinybenchmarks
    from irtbayes.reporting.report import report
    from irtbayes.reporting.robustness import report_robustness
    from irtbayes.robustness.run import RobustnessSettings, check_robustness
