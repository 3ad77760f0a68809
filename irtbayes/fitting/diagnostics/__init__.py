"""The convergence checks of a fit: ``check_convergence(idata) -> Diagnostics``
(:mod:`~irtbayes.fitting.diagnostics.sampler`), the verdict with ``.ok`` (:mod:`~irtbayes.fitting.diagnostics.verdict`),
which parameters are checked (:mod:`~irtbayes.fitting.diagnostics.convergence`) and where divergences sit
(:mod:`~irtbayes.fitting.diagnostics.divergences`). They read only a DataTree, so the fit runs them before a
:class:`~irtbayes.fitting.result.Fit` exists; the r-hat and ESS estimators are :mod:`irtbayes.core.chains`."""
