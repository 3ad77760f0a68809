"""Stage 4, the checks: convergence of the sampler (rank-normalised r-hat and ESS, divergences, the verdict every
:class:`~irtbayes.fitting.result.Fit` carries) and the fit of the model to the data (posterior predictive checks,
PSIS-LOO), and the generic tables of draws every result's ``summary()`` is built on
(:mod:`~irtbayes.checks.summary`).

The convergence checks read only a DataTree, so the fit runs them before a ``Fit`` exists; the model checks
(:mod:`~irtbayes.checks.predictive`) read a ``Fit``."""
