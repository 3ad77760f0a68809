"""Stage 3, the fit: :func:`~irtbayes.fitting.fit.fit`, its settings
(:class:`~irtbayes.fitting.settings.SamplerSettings`) and its :class:`~irtbayes.fitting.result.Fit`, the samplers
(nutpie, PyMC, NumPyro), the approximate tier, the warm start, sampling until converged, the convergence checks
(:mod:`~irtbayes.fitting.diagnostics`), saved fits and scores of new subjects against a fitted bank."""
