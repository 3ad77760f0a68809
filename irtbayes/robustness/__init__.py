"""Robustness of an audit's conclusions: other systems, other prompt formats, revised benchmarks.

- :mod:`~irtbayes.robustness.population`: refits on other populations (bootstrap of systems,
  leave-one-family-out, a user-given population) and a stable / population-dependent label per conclusion;
- :mod:`~irtbayes.robustness.linking`: mean/sigma linking of two calibrations through common items, per draw;
- :mod:`~irtbayes.robustness.conditions`: condition effects on item difficulty and system ability, flagged
  with a Bayesian false discovery rate, and rank agreement between conditions;
- :mod:`~irtbayes.robustness.revision`: two versions of a benchmark on one scale;
- :func:`robustness` runs what the data allow and writes the tables, ``robustness.json`` and a report.
"""

from irtbayes.robustness.conditions import (
    ConditionEffects,
    ConditionFit,
    bayes_fdr_flags,
    build_condition_model,
    condition_effects,
    fit_conditions,
    local_false_sign_rate,
    rank_agreement,
    write_conditions,
)
from irtbayes.robustness.linking import Linking, link_mean_sigma
from irtbayes.robustness.population import (
    Population,
    PopulationStability,
    RefitOutcome,
    outcome_from_audit,
    population_samples,
    population_stability,
    refit_populations,
)
from irtbayes.robustness.revision import RevisionComparison, compare_revision, revision_data
from irtbayes.robustness.run import RobustnessResult, robustness, write_report
from irtbayes.robustness.simulation import simulate_condition_responses

__all__ = [
    "ConditionEffects",
    "ConditionFit",
    "Linking",
    "Population",
    "PopulationStability",
    "RefitOutcome",
    "RevisionComparison",
    "RobustnessResult",
    "bayes_fdr_flags",
    "build_condition_model",
    "compare_revision",
    "condition_effects",
    "fit_conditions",
    "link_mean_sigma",
    "local_false_sign_rate",
    "outcome_from_audit",
    "population_samples",
    "population_stability",
    "rank_agreement",
    "refit_populations",
    "revision_data",
    "robustness",
    "simulate_condition_responses",
    "write_conditions",
    "write_report",
]
