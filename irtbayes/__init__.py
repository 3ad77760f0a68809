"""irtbayes: Bayesian item response theory audits of AI benchmarks."""

from irtbayes.data import DataSummary, ResponseData
from irtbayes.errors import DataError, FitError, IrtbayesError, SpecError

__version__ = "0.1.0"

__all__ = ["DataError", "DataSummary", "FitError", "IrtbayesError", "ResponseData", "SpecError", "__version__"]
