"""Repeated trials: k successes of n trials per (subject, item), checked column by column.

inspect_ai's epochs, OpenCompass' ``n`` runs and pass@k samples score one item several times. irtbayes holds such a
cell as its share of successes k / n (``response``, so every reader of shares works unchanged) with its number of
trials n (an integer ``trials`` column of :attr:`ResponseData.responses
<irtbayes.data.responses.ResponseData.responses>`), and fits it with the binomial likelihood. A cell of one trial may
hold any score in [0, 1] (a fractional score is one trial); a cell of n > 1 trials must hold a whole number of
successes. These functions read the columns that say so (``trials``, ``successes``) and read repeated 0/1 rows of a
(subject, item) as k of n; every error names the source, the row and the column.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.data.columns import category_label

__all__ = ["REPEATS", "WHOLE_TOLERANCE", "clean_trials", "repeats_as_trials", "share_of_successes", "whole_counts"]

#: How repeated rows of one (subject, item[, condition]) are read: ``"error"`` (they are an error, the default) or
#: ``"trials"`` (0/1 rows, or k-of-n rows, are summed into k successes of n trials).
REPEATS: tuple[str, ...] = ("error", "trials")
#: How far share * trials may lie from a whole number of successes (rounding of k / n written as a decimal).
WHOLE_TOLERANCE = 1e-9


def _shown(value: object) -> str:
    """A cell as a message shows it: a string quoted, a number plain (``3``, ``2.5``)."""
    return repr(value) if isinstance(value, str) else category_label(value)


def _whole_numbers(
    values: pd.Series, *, column: str, source: str, row: Callable[[int], str], least: int, what: str
) -> np.ndarray:
    """A column of whole numbers >= ``least`` as float64 (NaN where blank); an error names the first bad row."""
    if values.dtype == object or pd.api.types.is_string_dtype(values):
        text = values.astype("string").str.strip()
        blank = values.isna().to_numpy() | (text == "").fillna(True).to_numpy(dtype=bool)
        numeric = pd.to_numeric(text.where(~blank), errors="coerce")
    else:
        blank = values.isna().to_numpy()
        numeric = pd.to_numeric(values, errors="coerce")
    numbers = numeric.to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~blank & (~np.isfinite(numbers) | (numbers != np.round(numbers)) | (numbers < least))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{source}: column '{column}' at {row(first)} holds {_shown(values.iloc[first])}; {what} must be a whole "
            f"number >= {least}"
        )
    return numbers


def clean_trials(
    values: pd.Series, *, column: str, source: str, row: Callable[[int], str], present: np.ndarray
) -> np.ndarray:
    """The number of trials of each response as int64 (1 where the response is missing); each must be a whole
    number >= 1, and given wherever a response is (``present``).

    Examples
    --------
    >>> from irtbayes.data.columns import row_namer
    >>> clean_trials(pd.Series([5, 1, None]), column="trials", source="x.csv", row=row_namer(2),
    ...              present=np.array([True, True, False])).tolist()
    [5, 1, 1]
    >>> clean_trials(pd.Series([5, 0]), column="trials", source="x.csv", row=row_namer(2),
    ...              present=np.array([True, True]))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'trials' at line 3 holds 0; the number of trials must be ... >= 1
    """
    numbers = _whole_numbers(values, column=column, source=source, row=row, least=1, what="the number of trials")
    blank = np.isnan(numbers) & present
    if blank.any():
        first = int(np.flatnonzero(blank)[0])
        raise DataError(f"{source}: column '{column}' is empty at {row(first)}, where the row has a response")
    return np.where(np.isnan(numbers), 1.0, numbers).astype("int64")


def share_of_successes(
    values: pd.Series, trials: np.ndarray, *, column: str, source: str, row: Callable[[int], str]
) -> np.ndarray:
    """k / n for a column of successes k (whole numbers, 0 <= k <= n; NaN where blank, a missing response).

    Examples
    --------
    >>> from irtbayes.data.columns import row_namer
    >>> share_of_successes(pd.Series([3, 0, None]), np.array([4, 2, 1]), column="successes", source="x.csv",
    ...                    row=row_namer(2)).tolist()
    [0.75, 0.0, nan]
    >>> share_of_successes(pd.Series([3]), np.array([2]), column="successes", source="x.csv", row=row_namer(2))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'successes' at line 2 holds 3, more than its 2 trials
    """
    k = _whole_numbers(values, column=column, source=source, row=row, least=0, what="the number of successes")
    with np.errstate(invalid="ignore"):
        over = ~np.isnan(k) & (k > trials)
    if over.any():
        first = int(np.flatnonzero(over)[0])
        raise DataError(
            f"{source}: column '{column}' at {row(first)} holds {_shown(values.iloc[first])}, more than its "
            f"{int(trials[first])} trials"
        )
    return k / trials


def whole_counts(
    shares: np.ndarray, trials: np.ndarray, *, column: str, trials_column: str, source: str, row: Callable[[int], str]
) -> None:
    """An error naming the first row of more than one trial whose share * trials is not a whole number of successes
    (within :data:`WHOLE_TOLERANCE`); a row of one trial may hold any score in [0, 1].

    Examples
    --------
    >>> from irtbayes.data.columns import row_namer
    >>> whole_counts(np.array([0.5, 0.5]), np.array([5, 4]), column="response", trials_column="trials",
    ...              source="x.csv", row=row_namer(2))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'response' at line 2 holds 0.5 of 5 trials (column 'trials'), ...
    """
    k = shares * trials
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(k) & (trials > 1) & (np.abs(k - np.round(k)) > WHOLE_TOLERANCE)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        n = int(trials[first])
        raise DataError(
            f"{source}: column '{column}' at {row(first)} holds {shares[first]:g} of {n} trials (column "
            f"'{trials_column}'), {k[first]:g} successes: a share of {n} trials must be k / {n} for a whole number k"
        )


def repeats_as_trials(long: pd.DataFrame, keys: list[str], *, source: str, row: Callable[[int], str]) -> pd.DataFrame:
    """Rows of one ``keys`` group (subject, item[, condition]) summed into k successes of n trials: each row must be
    0/1 or k of n (its ``trials``, 1 when there is no such column); rows with a missing response are left out.

    The result has one row per group, in the order of each group's first row, with ``response`` k / n and ``trials``
    n; ``long``'s other columns keep the first row's values.

    Examples
    --------
    >>> from irtbayes.data.columns import row_namer
    >>> long = pd.DataFrame({"subject": ["a", "a", "a", "b"], "item": ["q"] * 4, "response": [1.0, 0.0, 1.0, 1.0]})
    >>> repeats_as_trials(long, ["subject", "item"], source="x.csv", row=row_namer(2))
      subject item  response  trials
    0       a    q  0.666667       3
    1       b    q  1.000000       1
    """
    long = long.loc[long["response"].notna()]
    trials = long["trials"].to_numpy(dtype="int64") if "trials" in long.columns else np.ones(len(long), dtype="int64")
    shares = long["response"].to_numpy(dtype="float64")
    k = shares * trials
    partial = np.abs(k - np.round(k)) > WHOLE_TOLERANCE
    if partial.any():
        first = int(np.flatnonzero(partial)[0])
        raise DataError(
            f"{source}: column 'response' at {row(int(long.index[first]))} holds {shares[first]:g}; repeated rows are "
            "read as successes of trials (repeats='trials'), so each must be 0 or 1 (or k of n with a trials column)"
        )
    frame = long.assign(successes=np.round(k), trials=trials)
    grouped = frame.groupby(keys, sort=False, observed=True)
    out = grouped.first()
    sums = grouped[["successes", "trials"]].sum()
    out["trials"] = sums["trials"].astype("int64")
    out["response"] = sums["successes"] / sums["trials"]
    return out.drop(columns="successes").reset_index()
