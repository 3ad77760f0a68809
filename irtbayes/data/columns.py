"""Checking the columns of response tables: ids, scores, item and subject metadata.

:meth:`ResponseData.from_long <irtbayes.data.responses.ResponseData.from_long>` and ``from_wide`` pass every column
through these functions; each error names the source and the row (a file line, header counted, or a 0-based
data-frame row) and the column.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Literal

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError

__all__ = [
    "Scoring",
    "clean_ids",
    "clean_items",
    "clean_scores",
    "clean_subjects",
    "frame_checksum",
    "items_from_rows",
    "row_namer",
]

log = logging.getLogger("irtbayes.data.responses")

Scoring = Literal["auto", "binary", "fraction"]


def row_namer(first_line: int | None) -> Callable[[int], str]:
    """How messages name a row: a file line (header counted) or a 0-based data-frame row.

    Examples
    --------
    >>> row_namer(2)(0), row_namer(None)(0)  # a CSV file's first data row is its line 2
    ('line 2', 'row 0')
    """
    if first_line is None:
        return lambda i: f"row {i}"
    return lambda i: f"line {first_line + i}"


def clean_ids(values: pd.Series, *, column: str, source: str, row: Callable[[int], str]) -> pd.Series:
    """Turn an id column into clean strings; a missing or blank id is an error naming the row.

    Examples
    --------
    >>> clean_ids(pd.Series([1.0, 2.0]), column="item", source="x.csv", row=row_namer(2)).tolist()  # not "1.0"
    ['1', '2']
    >>> clean_ids(pd.Series(["a", None]), column="item", source="x.csv", row=row_namer(2))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'item' is empty at line 3 (1 rows have no item id)
    """
    missing = values.isna().to_numpy()
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise DataError(
            f"{source}: column '{column}' is empty at {row(first)} ({int(missing.sum())} rows have no {column} id)"
        )
    if pd.api.types.is_float_dtype(values) and np.all(np.mod(values.to_numpy(), 1) == 0):
        values = values.astype("int64")
    out = values.astype(str).str.strip()
    blank = (out == "").to_numpy()
    if blank.any():
        first = int(np.flatnonzero(blank)[0])
        raise DataError(f"{source}: column '{column}' is blank at {row(first)}")
    return out


def clean_scores(
    values: pd.Series, *, column: str, source: str, row: Callable[[int], str], scoring: Scoring
) -> np.ndarray:
    """Parse responses to float64 in [0, 1]; NaN stays NaN (a missing cell).

    Examples
    --------
    >>> name = row_namer(2)
    >>> clean_scores(pd.Series([1, 0.5, None]), column="response", source="x.csv", row=name, scoring="auto")
    array([1. , 0.5, nan])
    >>> clean_scores(pd.Series([0, 2]), column="response", source="x.csv", row=name, scoring="auto")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'response' at line 3 holds 2, outside [0, 1] ...
    """
    if pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype="float64")
    if values.dtype == object or pd.api.types.is_string_dtype(values):
        lowered = values.astype("string").str.strip().str.lower()
        values = lowered.replace({"true": "1", "false": "0", "": pd.NA})
    numeric = pd.to_numeric(values, errors="coerce")
    bad_type = (numeric.isna() & values.notna()).to_numpy()
    if bad_type.any():
        first = int(np.flatnonzero(bad_type)[0])
        raise DataError(
            f"{source}: column '{column}' at {row(first)} holds {values.iloc[first]!r}, which is not a number "
            "(responses must be 1/0 or a score in [0, 1])"
        )
    arr = numeric.to_numpy(dtype="float64")
    out_of_range = ~np.isnan(arr) & ((arr < 0) | (arr > 1))
    if out_of_range.any():
        first = int(np.flatnonzero(out_of_range)[0])
        raise DataError(
            f"{source}: column '{column}' at {row(first)} holds {float(arr[first]):g}, outside [0, 1] "
            "(responses must be 1/0 or a score in [0, 1])"
        )
    if scoring == "binary":
        fractional = ~np.isnan(arr) & (arr != 0) & (arr != 1)
        if fractional.any():
            first = int(np.flatnonzero(fractional)[0])
            raise DataError(
                f"{source}: column '{column}' at {row(first)} holds {float(arr[first]):g}, but binary (0/1) responses "
                "were required; pass scoring='fraction' to keep partial-credit scores"
            )
    return arr


def frame_checksum(*frames: pd.DataFrame) -> str:
    digest = hashlib.sha256()
    for frame in frames:
        hashed = pd.util.hash_pandas_object(frame, index=True).to_numpy()
        digest.update(np.ascontiguousarray(hashed).tobytes())
        digest.update("|".join(map(str, frame.columns)).encode())
    return digest.hexdigest()


def items_from_rows(meta: pd.DataFrame, *, row_items: pd.Series, source: str) -> pd.DataFrame:
    """Item metadata carried on the response rows: one value per item, or an error naming the item."""
    table = meta.copy()
    table.insert(0, "item", row_items.to_numpy())
    if table.shape[1] > 1:
        counts = table.drop_duplicates().groupby("item", sort=False).size()
        conflict = counts[counts > 1]
        if len(conflict):
            raise DataError(
                f"{source}: item '{conflict.index[0]}' has more than one value of {list(meta.columns)} "
                "across its rows; item metadata must be constant per item"
            )
    return table.drop_duplicates("item")


def clean_items(items: pd.DataFrame, used: pd.Series, *, source: str, require_benchmark: bool) -> pd.DataFrame:
    table = items.copy()
    if "item" in table.columns:
        table = table.set_index("item")
    table.index = clean_ids(
        table.index.to_series(), column="item", source=f"{source} (item metadata)", row=row_namer(None)
    ).to_numpy()
    table.index.name = "item"
    dup = table.index.duplicated()
    if dup.any():
        raise DataError(f"{source} (item metadata): item '{table.index[dup][0]}' is listed more than once")
    unknown = pd.Index(used.unique()).difference(table.index)
    if len(unknown):
        raise DataError(f"{source}: {len(unknown)} item(s) have responses but no metadata, e.g. {list(unknown[:5])}")
    unused = table.index.difference(pd.Index(used.unique()))
    if len(unused):
        log.warning(
            "%s: %d item(s) in the metadata have no responses and are left out, e.g. %s",
            source,
            len(unused),
            list(unused[:5]),
        )
        table = table.loc[table.index.isin(used.unique())]
    for col in ("benchmark", "domain"):
        if col not in table.columns:
            table[col] = pd.NA
        table[col] = table[col].astype("string").str.strip().replace("", pd.NA)
    if require_benchmark and table["benchmark"].isna().any():
        bad = table.index[table["benchmark"].isna().to_numpy()]
        raise DataError(
            f"{source}: {len(bad)} item(s) have no benchmark label, e.g. {list(bad[:5])}; "
            "a benchmark label is required here"
        )
    return table


def clean_subjects(subjects: pd.DataFrame | None, used: pd.Series, *, source: str) -> pd.DataFrame:
    order = pd.Index(pd.unique(used.to_numpy()), name="subject")
    if subjects is None:
        return pd.DataFrame(index=order)
    table = subjects.copy()
    if "subject" in table.columns:
        table = table.set_index("subject")
    table.index = table.index.astype(str)
    table.index.name = "subject"
    if table.index.duplicated().any():
        raise DataError(
            f"{source} (subject metadata): subject '{table.index[table.index.duplicated()][0]}' is listed twice"
        )
    unknown = order.difference(table.index)
    if len(unknown):
        raise DataError(f"{source}: subject(s) {list(unknown[:5])} have responses but no subject metadata")
    return table.loc[table.index.isin(order)]
