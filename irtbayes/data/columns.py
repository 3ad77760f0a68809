"""Checking the columns of response tables: ids, scores, ordinal categories, item and subject metadata.

:meth:`ResponseData.from_long <irtbayes.data.responses.ResponseData.from_long>` and ``from_wide`` pass every column
through these functions; each error names the source and the row (a file line, header counted, or a 0-based
data-frame row) and the column.

Ordinal (graded) responses are held as category codes 0..K-1. An :class:`OrdinalScale` says how raw responses
become codes: declared labels in order (:func:`declared_scale`), numeric scores binned at declared edges
(``bins``), or integer categories inferred from the data (:func:`inferred_scale`). How a loader reads responses
(``scoring``, ``categories``, ``bins``) is one :class:`~irtbayes.data.reading.ReadOptions`.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError, listed

__all__ = [
    "CATEGORY_SEPARATOR",
    "SCORINGS",
    "OrdinalScale",
    "Scoring",
    "category_label",
    "clean_ids",
    "clean_items",
    "clean_n_categories",
    "clean_ordinal",
    "clean_scores",
    "clean_subjects",
    "declared_scale",
    "duplicated_rows",
    "first_duplicates",
    "frame_checksum",
    "inferred_scale",
    "integer_scores",
    "items_from_rows",
    "require_benchmarks",
    "row_namer",
]

log = logging.getLogger("irtbayes.data.responses")

#: How responses are read: ``"binary"`` (0/1 only), ``"fraction"`` or ``"auto"`` (scores in [0, 1]), or
#: ``"ordinal"`` (graded categories, held as codes 0..K-1).
Scoring = Literal["auto", "binary", "fraction", "ordinal"]
#: The values of :data:`Scoring` (checked by :class:`~irtbayes.data.reading.ReadOptions`).
SCORINGS: tuple[str, ...] = ("auto", "binary", "fraction", "ordinal")
#: What joins an item's category labels in its ``categories`` column (``"1 | 2 | 3 | 4"``).
CATEGORY_SEPARATOR = " | "


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
    if isinstance(values.dtype, pd.CategoricalDtype):
        coded = _clean_categorical_ids(values, column=column, source=source, row=row)
        if coded is not None:
            return coded
    if pd.api.types.is_float_dtype(values) and np.all(np.mod(values.to_numpy(), 1) == 0):
        values = values.astype("int64")
    out = values.astype(str).str.strip()
    blank = (out == "").to_numpy()
    if blank.any():
        first = int(np.flatnonzero(blank)[0])
        raise DataError(f"{source}: column '{column}' is blank at {row(first)}")
    return out


def _clean_categorical_ids(
    values: pd.Series, *, column: str, source: str, row: Callable[[int], str]
) -> pd.Series | None:
    """:func:`clean_ids` of a categorical column (Parquet's dictionary-encoded ids) on its categories, not on every
    row: the same clean strings, kept as a categorical of the rows' codes; None where two categories clean to one id
    (the row-wise path then merges them)."""
    categories = pd.Series(values.cat.categories)
    if pd.api.types.is_float_dtype(categories) and np.all(np.mod(categories.to_numpy(), 1) == 0):
        categories = categories.astype("int64")
    cleaned = categories.astype(str).str.strip()
    if cleaned.duplicated().any():
        return None
    codes = values.cat.codes.to_numpy()
    used = np.zeros(len(cleaned), dtype=bool)
    used[codes] = True
    blank = (cleaned == "").to_numpy() & used
    if blank.any():
        first = int(np.flatnonzero(codes == np.flatnonzero(blank)[0])[0])
        raise DataError(f"{source}: column '{column}' is blank at {row(first)}")
    unused = pd.Index(cleaned.to_numpy())[~used]
    kept = pd.Categorical.from_codes(codes, categories=cleaned.to_numpy())
    return pd.Series(kept, index=values.index, name=values.name).cat.remove_categories(unused)


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
            "(responses must be 1/0 or a score in [0, 1]; ratings or categories are read with --response-kind "
            "ordinal, scoring='ordinal' in Python)"
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


def category_label(value: Any) -> str:
    """The text that names a category: a number without a trailing ``.0`` (so ``1``, ``1.0`` and ``"1"`` name one
    category), a string stripped.

    Examples
    --------
    >>> category_label(1.0), category_label(" 2 "), category_label(0.5), category_label("1_full_compliance")
    ('1', '2', '0.5', '1_full_compliance')
    """
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text) if "_" not in text else math.nan  # float() would read "1_0" as 10
        except ValueError:
            return text
        return category_label(number) if math.isfinite(number) else text
    if isinstance(value, bool | np.bool_ | int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)
    return str(value).strip()


def _shown(value: Any) -> str:
    """A response as an error message shows it: strings quoted, numbers as their category label."""
    return repr(value) if isinstance(value, str) else category_label(value)


def _missing(values: pd.Series) -> np.ndarray:
    """Missing cells: NaN/None, or a blank string."""
    missing = values.isna().to_numpy()
    if values.dtype == object or pd.api.types.is_string_dtype(values):
        missing = missing | (values.astype("string").str.strip() == "").fillna(True).to_numpy(dtype=bool)
    return missing


def _numbers(values: pd.Series, *, column: str, source: str, row: Callable[[int], str], why: str) -> np.ndarray:
    """The responses as float64 (NaN where missing); a cell that is not a finite number is an error naming its row."""
    missing = _missing(values)
    if pd.api.types.is_bool_dtype(values):
        numeric = values.astype("float64")
    else:
        numeric = pd.to_numeric(values.where(~missing), errors="coerce")
    arr = numeric.to_numpy(dtype="float64", na_value=np.nan, copy=True)
    bad = ~missing & ~np.isfinite(arr)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}: column '{column}' at {row(first)} holds {_shown(values.iloc[first])}, {why}")
    arr[missing] = np.nan
    return arr


def integer_scores(values: pd.Series, *, column: str, source: str, row: Callable[[int], str]) -> np.ndarray:
    """Responses that must be integer categories, as float64 (NaN where missing); errors name the row.

    Examples
    --------
    >>> integer_scores(pd.Series([1, 4, None]), column="Comfort", source="x.csv", row=row_namer(2))
    array([ 1.,  4., nan])
    >>> integer_scores(pd.Series([1, 2.5]), column="Comfort", source="x.csv", row=row_namer(2))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'Comfort' at line 3 holds 2.5, which is not an integer category; ...
    """
    declare = "declare the categories in order (categories=[...]; --categories on the command line)"
    arr = _numbers(
        values,
        column=column,
        source=source,
        row=row,
        why=f"which is not an integer category; to read labels, {declare}",
    )
    fractional = ~np.isnan(arr) & (arr != np.round(arr))
    if fractional.any():
        first = int(np.flatnonzero(fractional)[0])
        raise DataError(
            f"{source}: column '{column}' at {row(first)} holds {_shown(values.iloc[first])}, which is not an integer "
            "category; to group numeric scores into categories, declare bin edges (bins=[...]; --score-bins on the "
            "command line)"
        )
    return arr


#: The most categories :func:`inferred_scale` accepts (more are numeric scores to bin).
MAX_INFERRED_CATEGORIES = 100


@dataclass(frozen=True)
class OrdinalScale:
    """How raw responses become ordinal category codes 0..K-1.

    Attributes
    ----------
    labels
        The K category labels in order: code ``k`` is category ``labels[k]``.
    edges
        For numeric scores binned into categories, the increasing edges: a score below ``edges[0]`` is code 0,
        one in ``[edges[k-1], edges[k])`` code ``k``, one at or above ``edges[-1]`` code ``K-1``. Empty when the
        responses are the labels themselves.
    note
        How the categories were found, for :attr:`ResponseData.notes <irtbayes.data.responses.ResponseData.notes>`
        (empty when they were declared as labels).

    Examples
    --------
    >>> scale = declared_scale(categories=["low", "mid", "high"])
    >>> scale.n_categories, scale.joined
    (3, 'low | mid | high')
    >>> scale.codes(pd.Series(["mid", "high", None]), column="rating", source="x.csv", row=row_namer(2))
    array([ 1.,  2., nan])
    """

    labels: tuple[str, ...]
    edges: tuple[float, ...] = ()
    note: str = ""

    @property
    def n_categories(self) -> int:
        """K, the number of categories."""
        return len(self.labels)

    @property
    def joined(self) -> str:
        """The labels as one string, joined by :data:`CATEGORY_SEPARATOR` (an item's ``categories`` value)."""
        return CATEGORY_SEPARATOR.join(self.labels)

    def codes(self, values: pd.Series, *, column: str, source: str, row: Callable[[int], str]) -> np.ndarray:
        """The code of each response (float64, NaN where missing); a value the scale lacks is an error naming its row.

        Examples
        --------
        >>> scale = declared_scale(bins=[0.5, 0.8])  # < 0.5 -> 0, [0.5, 0.8) -> 1, >= 0.8 -> 2
        >>> scale.codes(pd.Series([0.2, 0.5, 0.8, 1.0]), column="f1", source="x.csv", row=row_namer(2))
        array([0., 1., 2., 2.])
        >>> declared_scale(categories=[1, 2, 3]).codes(pd.Series([1, 7]), column="r", source="x.csv", row=row_namer(2))
        Traceback (most recent call last):
        ...
        irtbayes.core.errors.DataError: x.csv: column 'r' at line 3 holds 7, which is not one of the declared categories 1, 2, 3
        """
        if self.edges:
            edges = ", ".join(f"{e:g}" for e in self.edges)
            numbers = _numbers(
                values, column=column, source=source, row=row, why=f"which is not a number to bin at {edges}"
            )
            codes = np.searchsorted(np.asarray(self.edges), numbers, side="right").astype("float64")
            codes[np.isnan(numbers)] = np.nan
            return codes
        missing = _missing(values)
        lookup = {label: float(k) for k, label in enumerate(self.labels)}
        present = pd.Series(values.to_numpy(dtype=object)[~missing])
        mapping = {value: lookup.get(category_label(value), np.nan) for value in pd.unique(present)}
        mapped = present.map(mapping).to_numpy(dtype="float64")
        unknown = np.isnan(mapped)
        if unknown.any():
            first = int(np.flatnonzero(~missing)[np.flatnonzero(unknown)[0]])
            raise DataError(
                f"{source}: column '{column}' at {row(first)} holds {_shown(values.iloc[first])}, which is not one of "
                f"the declared categories {listed(self.labels)}"
            )
        codes = np.full(len(values), np.nan)
        codes[~missing] = mapped
        return codes


def _labels(categories: Sequence[Any]) -> tuple[str, ...]:
    if isinstance(categories, str) or not isinstance(categories, Sequence | np.ndarray | pd.Index | pd.Series):
        raise DataError(
            f"categories must be a list of labels in order, e.g. ['low', 'mid', 'high'], got {categories!r}"
        )
    labels = tuple(category_label(c) for c in categories)
    if any(label == "" for label in labels):
        raise DataError(f"categories: a category label is blank in {list(categories)}")
    if any("|" in label for label in labels):
        raise DataError(f"categories: a category label may not hold '|', got {list(labels)}")
    repeated = [label for i, label in enumerate(labels) if label in labels[:i]]
    if repeated:
        raise DataError(f"categories: '{repeated[0]}' is listed twice in {list(labels)}")
    return labels


def declared_scale(*, categories: Sequence[Any] | None = None, bins: Sequence[float] | None = None) -> OrdinalScale:
    """The scale of declared categories: labels in order, or numeric scores binned at increasing edges.

    Parameters
    ----------
    categories
        The category labels in order (strings or numbers; ``1``, ``1.0`` and ``"1"`` are one label). With ``bins``,
        one label per bin.
    bins
        Increasing edges e1 < e2 < ...: a score below e1 is category 0, one in [e1, e2) category 1, ..., one at or
        above the last edge category ``len(bins)``. The labels read ``<e1``, ``e1-e2``, ..., ``>=ek`` unless
        ``categories`` names them.

    Raises
    ------
    DataError
        Fewer than two categories, a blank or repeated label, a label holding ``|``, edges that are not increasing
        numbers, or a number of labels other than ``len(bins) + 1``.

    Examples
    --------
    >>> declared_scale(categories=["1_full_compliance", "3_partial_refusal", "2_full_refusal"]).labels
    ('1_full_compliance', '3_partial_refusal', '2_full_refusal')
    >>> scale = declared_scale(bins=[0.5, 0.8])
    >>> scale.joined, scale.note
    ('<0.5 | 0.5-0.8 | >=0.8', 'numeric scores binned at 0.5, 0.8 into ordinal categories <0.5, 0.5-0.8, >=0.8 (codes 0-2)')
    """
    if bins is None:
        if categories is None:
            raise DataError("ordinal categories: declare the categories in order or bin edges")
        labels = _labels(categories)
        if len(labels) < 2:
            raise DataError(f"categories: an ordinal scale needs at least two categories, got {list(labels)}")
        return OrdinalScale(labels=labels)
    try:
        edges = tuple(float(e) for e in bins)
    except (TypeError, ValueError):
        raise DataError(f"bins must be increasing numbers (the edges between categories), got {bins!r}") from None
    if not edges or not all(math.isfinite(e) for e in edges) or any(b <= a for a, b in itertools.pairwise(edges)):
        raise DataError(f"bins must be increasing numbers (the edges between categories), got {list(bins)}")
    text = [f"{e:g}" for e in edges]
    labels = (f"<{text[0]}", *(f"{a}-{b}" for a, b in itertools.pairwise(text)), f">={text[-1]}")
    if categories is not None:
        named = _labels(categories)
        if len(named) != len(labels):
            raise DataError(
                f"{len(edges)} bin edge(s) make {len(labels)} categories, but {len(named)} category labels were "
                f"given ({list(named)})"
            )
        labels = named
    note = (
        f"numeric scores binned at {', '.join(text)} into ordinal categories {', '.join(labels)} "
        f"(codes 0-{len(labels) - 1})"
    )
    return OrdinalScale(labels=labels, edges=edges, note=note)


def inferred_scale(numbers: np.ndarray, *, source: str, what: str = "the data") -> OrdinalScale:
    """The categories of integer responses: every integer from the smallest to the largest observed, in order.

    ``numbers`` are integers (NaN for missing cells); code 0 is the smallest. An integer between the smallest and
    the largest that no response uses is an error: it may be a category no one chose (declare the categories) or
    a typo. ``what`` names the responses in messages (``"column 'rating'"``, ``"the matrix"``: it "holds").

    Examples
    --------
    >>> inferred_scale(np.array([1.0, 4.0, 2.0, 3.0, np.nan]), source="x.csv").note
    'ordinal categories inferred from the data: 1, 2, 3, 4 -> codes 0-3'
    >>> inferred_scale(np.array([1.0, 2.0, 4.0]), source="x.csv", what="column 'rating'")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: column 'rating' holds the integers 1, 2, 4 but never 3; ...
    """
    present = np.unique(numbers[~np.isnan(numbers)]).astype(np.int64)
    declare = "declare the categories in order (categories=[...]; --categories on the command line)"
    if len(present) < 2:
        held = f"only the value {present[0]}" if len(present) else "no responses"
        raise DataError(f"{source}: {what} holds {held}, so no ordinal categories can be inferred; {declare}")
    low, high = int(present[0]), int(present[-1])
    if high - low + 1 > MAX_INFERRED_CATEGORIES:
        raise DataError(
            f"{source}: {what} holds integers from {low} to {high}, too many to be categories (at most "
            f"{MAX_INFERRED_CATEGORIES}); group the scores into categories with bin edges (bins=[...]; --score-bins on "
            "the command line)"
        )
    unused = sorted(set(range(low, high + 1)) - set(present.tolist()))
    if unused:
        raise DataError(
            f"{source}: {what} holds the integers {listed(present)} but never {listed(unused)}; if "
            f"{'that is a category' if len(unused) == 1 else 'those are categories'} no response used, {declare}"
        )
    labels = tuple(str(v) for v in range(low, high + 1))
    return OrdinalScale(
        labels=labels,
        note=f"ordinal categories inferred from the data: {', '.join(labels)} -> codes 0-{len(labels) - 1}",
    )


def clean_ordinal(
    values: pd.Series,
    *,
    column: str,
    source: str,
    row: Callable[[int], str],
    scale: OrdinalScale | None = None,
) -> tuple[np.ndarray, OrdinalScale]:
    """Ordinal responses as category codes (float64, NaN where missing) and the scale that made them.

    With a declared ``scale`` (:func:`declared_scale`) each response must fit it; without one the responses must be
    integers and the scale is inferred from them (:func:`inferred_scale`).

    Examples
    --------
    >>> codes, scale = clean_ordinal(pd.Series([2, 4, 3, 1]), column="Comfort", source="x.csv", row=row_namer(2))
    >>> codes, scale.labels
    (array([1., 3., 2., 0.]), ('1', '2', '3', '4'))
    """
    if scale is not None:
        return scale.codes(values, column=column, source=source, row=row), scale
    numbers = integer_scores(values, column=column, source=source, row=row)
    scale = inferred_scale(numbers, source=source, what=f"column '{column}'")
    return numbers - int(scale.labels[0]), scale


def clean_n_categories(values: pd.Series, *, source: str) -> pd.Series:
    """An item table's ``n_categories`` as nullable integers (``Int64``); each given value must be a whole number
    >= 2, else an error naming the item.

    Examples
    --------
    >>> clean_n_categories(pd.Series([4, None], index=["q1", "q2"]), source="items.csv").tolist()
    [4, <NA>]
    """
    numbers = pd.to_numeric(values, errors="coerce")
    bad = (numbers.isna() & values.notna()) | (numbers.notna() & ((numbers < 2) | (numbers != numbers.round())))
    if bad.any():
        item = values.index[bad.to_numpy()][0]
        raise DataError(
            f"{source} (item metadata): item '{item}' has n_categories {values[item]!r}; it must be a whole number "
            ">= 2 (2 for a binary item)"
        )
    return numbers.astype("Int64")


def frame_checksum(*frames: pd.DataFrame | Iterable[pd.DataFrame]) -> str:
    """SHA-256 of the frames' rows (``pandas.util.hash_pandas_object``, index included) and column names, in order; a
    frame may come as an iterable of chunks of its rows (each indexed as in the whole), which hashes the same."""
    digest = hashlib.sha256()
    for frame in frames:
        columns: list[str] = []
        for chunk in [frame] if isinstance(frame, pd.DataFrame) else frame:
            hashed = pd.util.hash_pandas_object(chunk, index=True).to_numpy()
            digest.update(np.ascontiguousarray(hashed).tobytes())
            columns = list(map(str, chunk.columns))
        digest.update("|".join(columns).encode())
    return digest.hexdigest()


def duplicated_rows(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Which rows repeat another's ``keys`` (every such row, as ``DataFrame.duplicated(keep=False)``); categorical
    keys are compared by their codes, as one integer per row.

    Examples
    --------
    >>> frame = pd.DataFrame({"s": pd.Categorical(["a", "a", "b"]), "i": pd.Categorical(["x", "x", "x"])})
    >>> duplicated_rows(frame, ["s", "i"]).tolist(), duplicated_rows(frame.astype(str), ["s", "i"]).tolist()
    ([True, True, False], [True, True, False])
    """
    columns = [frame[k] for k in keys]
    key = _code_key(columns)
    if key is None:
        return frame.duplicated(keys, keep=False).to_numpy()
    cells = int(np.prod([len(c.cat.categories) + 1 for c in columns], dtype=np.float64))
    if cells <= max(16 * len(frame), 1 << 20):  # a bitmap of the cells, no bigger than the keys themselves
        seen = np.zeros(cells, dtype=bool)
        seen[key] = True
        if int(np.count_nonzero(seen)) == len(frame):  # every row its own cell: none repeats
            return np.zeros(len(frame), dtype=bool)
    return pd.Series(key).duplicated(keep=False).to_numpy()


def first_duplicates(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Which rows repeat an earlier row's ``keys`` (``DataFrame.duplicated(keys)``), by codes where the keys are
    categorical, with no table of the rows where no row repeats another (a bitmap of the cells says so).

    >>> frame = pd.DataFrame({"s": pd.Categorical(["a", "a", "b"]), "i": pd.Categorical(["x", "x", "x"])})
    >>> first_duplicates(frame, ["s", "i"]).tolist()
    [False, True, False]
    """
    if not duplicated_rows(frame, keys).any():
        return np.zeros(len(frame), dtype=bool)
    key = _code_key([frame[k] for k in keys])
    return frame.duplicated(keys).to_numpy() if key is None else pd.Series(key).duplicated().to_numpy()


def items_from_rows(meta: pd.DataFrame, *, row_items: pd.Series, source: str) -> pd.DataFrame:
    """Item metadata carried on the response rows: one value per item, or an error naming the item."""
    table = meta.copy()
    table.insert(0, "item", row_items.array)
    if table.shape[1] > 1:
        distinct = table.loc[~_repeats_earlier(table)]
        counts = distinct.groupby("item", sort=False, observed=True).size()
        conflict = counts[counts > 1]
        if len(conflict):
            raise DataError(
                f"{source}: item '{conflict.index[0]}' has more than one value of {list(meta.columns)} "
                "across its rows; item metadata must be constant per item"
            )
        table = distinct
    out = table.drop_duplicates("item")
    out["item"] = out["item"].astype(str)
    return out


def _repeats_earlier(table: pd.DataFrame) -> np.ndarray:
    """Which rows repeat an earlier row (``DataFrame.duplicated()``), compared by codes where every column is
    categorical."""
    key = _code_key([table[c] for c in table.columns])
    return table.duplicated().to_numpy() if key is None else pd.Series(key).duplicated().to_numpy()


def _code_key(columns: list[pd.Series]) -> np.ndarray | None:
    """One int64 per row that tells rows apart as the categorical ``columns`` do together (their codes in mixed
    radix); None when a column is not categorical or the radices overflow int64."""
    if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in columns):
        return None
    if np.prod([float(len(c.cat.categories) + 1) for c in columns]) >= 2.0**62:
        return None
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        key = key * (len(column.cat.categories) + 1) + column.cat.codes.to_numpy().astype(np.int64) + 1
    return key


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
    if "n_categories" in table.columns:
        table["n_categories"] = clean_n_categories(table["n_categories"], source=source)
    if "categories" in table.columns:
        table["categories"] = table["categories"].astype("string").str.strip().replace("", pd.NA)
    if require_benchmark:
        require_benchmarks(table, source=source)
    return table


def require_benchmarks(items: pd.DataFrame, *, source: str) -> None:
    """An error naming the items of ``items`` (indexed by item id) that have no ``benchmark`` label.

    >>> require_benchmarks(pd.DataFrame({"benchmark": ["arc", None]}, index=["q1", "q2"]), source="x.csv")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.csv: 1 item(s) have no benchmark label, e.g. ['q2']; a benchmark label is required here
    """
    missing = items["benchmark"].isna().to_numpy() if "benchmark" in items.columns else np.ones(len(items), bool)
    if missing.any():
        bad = items.index[missing]
        raise DataError(
            f"{source}: {len(bad)} item(s) have no benchmark label, e.g. {list(bad[:5])}; "
            "a benchmark label is required here"
        )


def clean_subjects(subjects: pd.DataFrame | None, used: pd.Series, *, source: str) -> pd.DataFrame:
    order = pd.Index(np.asarray(used.unique()), name="subject")  # in order of appearance; categoricals by code
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
