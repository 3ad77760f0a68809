"""Stage 2, the model: what to fit (:class:`~irtbayes.model.spec.ModelSpec`), the arrays it is built from, the
log-likelihood as a PyTensor graph and the hierarchical PyMC model."""
