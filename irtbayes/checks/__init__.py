"""Stage 4, the model checks: how well a fitted model describes its data (posterior predictive checks of every item
and subject, PSIS-LOO and the comparison of fits), read from a :class:`~irtbayes.fitting.result.Fit`.

The checks of the sampler (r-hat, ESS, divergences: the verdict every ``Fit`` carries) are part of the fit, in
:mod:`irtbayes.fitting.diagnostics`."""
