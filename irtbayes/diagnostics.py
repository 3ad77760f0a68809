"""Checks of a fit: convergence of the sampler and fit of the model to the data.

- :mod:`irtbayes.sampler_checks`: :func:`check_convergence` (r-hat, bulk and tail ESS, divergences, E-BFMI,
  tree-depth saturation) -> :class:`Diagnostics` with ``.ok``; it reads only the DataTree and runs inside
  :func:`irtbayes.fit.fit`.
- :mod:`irtbayes.model_checks`: :func:`posterior_predictive_check`, :func:`log_likelihood` and
  :func:`compare_fits` (PSIS-LOO), which take a :class:`~irtbayes.fit.Fit` and its data.

This module gathers both, so ``from irtbayes.diagnostics import ...`` reaches every check.
"""

from __future__ import annotations

from irtbayes.convergence import (
    CONSTANT_RTOL,
    CORRELATION_SUFFIX,
    excluded_elements,
    parameter_table,
    rank_diagnostics_datasets,
)
from irtbayes.model_checks import (
    QUASI_LIKELIHOOD_NOTE,
    PredictiveCheck,
    compare_fits,
    log_likelihood,
    posterior_predictive_check,
)
from irtbayes.sampler_checks import (
    MIN_CHAINS,
    MIN_DRAWS,
    MIN_STANDARDISED_SUBJECTS,
    SKIP_SUFFIXES,
    Diagnostics,
    VariableDiagnostics,
    check_convergence,
    checked_variables,
)

__all__ = [
    "CONSTANT_RTOL",
    "CORRELATION_SUFFIX",
    "MIN_CHAINS",
    "MIN_DRAWS",
    "MIN_STANDARDISED_SUBJECTS",
    "QUASI_LIKELIHOOD_NOTE",
    "SKIP_SUFFIXES",
    "Diagnostics",
    "PredictiveCheck",
    "VariableDiagnostics",
    "check_convergence",
    "checked_variables",
    "compare_fits",
    "excluded_elements",
    "log_likelihood",
    "parameter_table",
    "posterior_predictive_check",
    "rank_diagnostics_datasets",
]
