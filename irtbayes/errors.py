"""Exceptions raised by irtbayes.

Every error a user can cause derives from :class:`IrtbayesError`; the command line turns it into a one-line
message and a non-zero exit code instead of a traceback.
"""

from __future__ import annotations


class IrtbayesError(Exception):
    """Base class of the errors that irtbayes raises on purpose."""


class DataError(IrtbayesError, ValueError):
    """Input data is malformed: the message names the file and the row, column or key."""


class FitError(IrtbayesError):
    """A saved fit is missing, corrupt, or does not match the data it is used with."""


class SpecError(IrtbayesError, ValueError):
    """A model, audit or BenchFill setting is invalid."""
