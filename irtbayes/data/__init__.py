"""Stage 1, the responses: :class:`~irtbayes.data.responses.ResponseData`, its column checks, the loaders of
each source format (:mod:`irtbayes.data.io`), the registry of embedded and external data sets and simulation."""
