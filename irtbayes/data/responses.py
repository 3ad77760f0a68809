"""Response data: one long table of (subject, item, response) plus item and subject metadata.

:class:`ResponseData` is what every later stage consumes. A *subject* is the AI system (or person) under
test, an *item* is one benchmark question. Responses are 1/0, k successes of n repeated trials (held as the
share k / n with the number of trials n, :mod:`irtbayes.data.trials`), a fractional score in [0, 1] that is kept
as such, or an ordinal (graded) category held as its code 0..K_i-1, K_i being the item's ``n_categories``
(:attr:`ResponseData.response_kind` says which). Missing cells are simply absent rows (long format), so sparse
benchmark matrices cost nothing.

Ids are strings. Integer codes are positions in :attr:`ResponseData.subject_ids` and
:attr:`ResponseData.item_ids`, which keep the order in which ids first appear (item metadata first, when
given), so the same file always gives the same codes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Unpack

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import DataError, listed
from irtbayes.core.files import json_ready
from irtbayes.data.columns import (
    CATEGORY_SEPARATOR,
    OrdinalScale,
    Scoring,
    clean_ids,
    clean_items,
    clean_ordinal,
    clean_scores,
    clean_subjects,
    duplicated_rows,
    first_duplicates,
    frame_checksum,
    inferred_scale,
    integer_scores,
    items_from_rows,
    row_namer,
)
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.trials import (
    REPEATS,
    WHOLE_TOLERANCE,
    clean_trials,
    repeats_as_trials,
    share_of_successes,
    whole_counts,
)

__all__ = [
    "ITEM_COLUMNS",
    "DataSummary",
    "Repeats",
    "ResponseData",
    "ResponseKind",
]

log = logging.getLogger(__name__)

#: Item metadata columns that irtbayes knows by name (others are kept as free columns).
ITEM_COLUMNS: tuple[str, ...] = (
    "benchmark", "domain", "text", "answer", "source", "n_options", "n_categories", "categories"
)  # fmt: skip
#: What the responses are (:attr:`ResponseData.response_kind`).
ResponseKind = Literal["binary", "fraction", "counts", "ordinal"]
#: How repeated rows of one (subject, item[, condition]) are read (:data:`irtbayes.data.trials.REPEATS`).
Repeats = Literal["error", "trials"]


@dataclass(frozen=True, eq=False)
class ResponseData:
    """Item-level responses in long form, with item and subject metadata.

    Build one with :meth:`from_long`, :meth:`from_wide` or a loader in :mod:`irtbayes.data.io`; the constructor
    itself assumes already validated frames.

    Attributes
    ----------
    responses
        One row per response: ``subject`` (str), ``item`` (str), ``response`` (float64 in [0, 1], or for
        ordinal data the category code 0..K_i-1 as a float) and, when present, ``condition`` (str: prompt format,
        perturbation, run) and ``trials`` (int64 n >= 1, present when some response counts more than one trial:
        ``response`` is then the share of successes k / n, :mod:`irtbayes.data.trials`).
    items
        Indexed by item id (index name ``item``), in code order. Columns ``benchmark`` and ``domain``
        (may be missing values), optional ``text``, ``answer``, ``source``, ``n_options`` and free columns.
        Ordinal data add ``n_categories`` (``Int64``, K_i; 2 for the binary items of a mixed bank) and
        ``categories`` (the labels in order, joined by ``" | "``).
    subjects
        Indexed by subject id (index name ``subject``), in code order; free columns.
    source
        Where the data came from (a path or a description), used in messages and reports.
    notes
        Sentences on how the data were read that a reader should know (e.g. ids made from row numbers);
        shown by :meth:`summary`.
    reading
        How :func:`irtbayes.data.io.load` read them (``path``, absolute; ``format``; ``options``), or None for data
        built in memory: a fit records it, so the verbs read the same data again from any folder.

    Examples
    --------
    >>> from irtbayes.data.responses import ResponseData
    >>> frame = pd.DataFrame(
    ...     {"subject": ["m1", "m1", "m2", "m2"], "item": ["q1", "q2", "q1", "q2"], "response": [1, 0, 1, 1]}
    ... )
    >>> data = ResponseData.from_long(frame, items=pd.DataFrame({"item": ["q1", "q2"], "benchmark": ["arc", "gsm8k"]}))
    >>> data.n_subjects, data.n_items, data.n_responses, data.is_binary
    (2, 2, 4, True)
    >>> data.to_matrix()  # (subject, item), NaN where missing
    array([[1., 0.],
           [1., 1.]])
    >>> data.items["benchmark"].tolist()
    ['arc', 'gsm8k']
    """

    responses: pd.DataFrame
    items: pd.DataFrame
    subjects: pd.DataFrame
    source: str = "<data>"
    notes: tuple[str, ...] = ()
    reading: Mapping[str, Any] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        """One line: where the data came from and their size.

        >>> frame = pd.DataFrame({"subject": ["m1", "m2"], "item": ["q1", "q1"], "response": [1, 0]})
        >>> ResponseData.from_long(frame, source="toy.csv")
        <ResponseData toy.csv: 2 subjects x 1 items, 2 binary responses (0% of cells missing)>
        """
        cells = self.n_subjects * self.n_items
        missing = 1 - len(self.responses.drop_duplicates(["subject", "item"])) / cells if cells else 0.0
        kind = {"fraction": "fractional", "counts": "k-of-n"}.get(self.response_kind, self.response_kind)
        benchmarks = self.items["benchmark"].nunique() if "benchmark" in self.items.columns else 0
        where = f" in {benchmarks} benchmarks" if benchmarks > 1 else ""
        return (
            f"<ResponseData {self.source}: {self.n_subjects} subjects x {self.n_items} items{where}, "
            f"{self.n_responses} {kind} responses ({missing:.0%} of cells missing)>"
        )

    def read_as(self, reading: Mapping[str, Any] | None) -> ResponseData:
        """The same data, recorded as read by ``reading`` (see :attr:`reading`)."""
        return dataclasses.replace(self, reading=None if reading is None else dict(reading), _cache={})

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_long(
        cls,
        frame: pd.DataFrame,
        *,
        subject: str = "subject",
        item: str = "item",
        response: str = "response",
        condition: str | None = None,
        trials: str | None = None,
        successes: str | None = None,
        repeats: Repeats = "error",
        items: pd.DataFrame | None = None,
        subjects: pd.DataFrame | None = None,
        source: str = "<data frame>",
        first_line: int | None = None,
        options: ReadOptions | None = None,
        **fields: Unpack[ReadFields],
    ) -> ResponseData:
        """Validate a long table and build a :class:`ResponseData`.

        Ordinal data share the K declared or inferred categories: every item gets ``n_categories`` K and its labels
        in ``categories`` (joined by ``" | "``), except an item whose ``n_categories`` the item metadata gives,
        which keeps it (its codes must be below it; binary items of a mixed bank have 2).

        Parameters
        ----------
        frame
            One row per response.
        subject, item, response, condition
            Column names in ``frame`` (``condition`` optional).
        trials, successes, repeats
            Repeated trials (:mod:`irtbayes.data.trials`): ``trials`` names a column of each response's number of trials
            n >= 1, ``response`` being the share of successes k / n (a whole k where n > 1); ``successes`` a column of
            k, read instead of ``response`` (found by name in a table with ``successes`` and ``trials`` columns and no
            ``response``). Rows that repeat a (subject, item[, condition]) are an error unless ``repeats="trials"``
            reads them (each 0/1, or k of n) as k successes of n trials.
        items
            Item metadata with an ``item`` column (or index) and any of :data:`ITEM_COLUMNS`; every item
            in ``frame`` must appear here. Item columns found in ``frame`` itself (e.g. ``benchmark``) are
            used when ``items`` is not given.
        subjects
            Subject metadata with a ``subject`` column (or index).
        source, first_line
            The file's name, and the file line of ``frame``'s first row (2 for a CSV with a header), for error
            messages.
        options, **fields
            How responses are read (:class:`~irtbayes.data.reading.ReadOptions`), or its fields as keywords
            (``scoring="ordinal"``, ``categories=[...]``, ``bins=[...]``, ``require_benchmark=True``), which take
            precedence. ``scoring="binary"`` refuses anything but 0/1 (and k of n > 1 trials); ``"fraction"`` and
            ``"auto"`` keep scores in [0, 1]; ``"ordinal"`` reads graded categories as codes 0..K-1: declared
            ``categories`` in order, numeric scores cut at ``bins`` edges, or else integers, the categories every
            integer from the smallest to the largest (1..4 become codes 0..3, which :attr:`notes` records; an
            integer in between that no response uses is an error).

        Raises
        ------
        DataError
            Empty input, unknown columns, missing ids, non-numeric or out-of-range responses, an ordinal response
            outside the categories (or a gap in inferred ones), bad trials or successes, duplicate rows, unknown items.

        Examples
        --------
        >>> frame = pd.DataFrame({"subject": ["a", "a", "b", "b"], "item": ["q1", "q2"] * 2, "response": [1, 4, 2, 3]})
        >>> data = ResponseData.from_long(frame, scoring="ordinal")
        >>> data.response_kind, data.n_categories.tolist(), data.values.tolist(), data.items["categories"].iloc[0]
        ('ordinal', [4, 4], [0.0, 3.0, 1.0, 2.0], '1 | 2 | 3 | 4')
        >>> counts = pd.DataFrame({"subject": ["a", "b"], "item": "q1", "successes": [3, 1], "trials": [5, 5]})
        >>> data = ResponseData.from_long(counts)
        >>> data.response_kind, data.values.tolist(), data.trials.tolist()
        ('counts', [0.6, 0.2], [5, 5])
        """
        options = ReadOptions.of(options, fields, caller="ResponseData.from_long")
        row = row_namer(first_line)
        successes, trials = _count_columns(frame, response=response, successes=successes, trials=trials)
        wanted = [subject, item, successes or response] + [c for c in (trials, condition) if c]
        frame = _checked_frame(frame, wanted, source=source)
        scores, n, scale = _read_responses(
            frame, response=response, successes=successes, trials=trials, options=options, source=source, row=row,
            repeats=repeats,
        )  # fmt: skip
        long = _long_table(frame, (subject, item, condition), scores, n, source=source, row=row)
        if items is None:
            present = [c for c in frame.columns if c in ITEM_COLUMNS and c not in wanted]
            items = items_from_rows(frame[present], row_items=long["item"], source=source)
        if repeats == "trials":
            keys = ["subject", "item"] + (["condition"] if condition else [])
            long = repeats_as_trials(long, keys, source=source, row=row)
        return cls._from_clean(
            long, items=items, subjects=subjects, scale=scale, options=options, source=source, row=row
        )

    @classmethod
    def _from_clean(
        cls,
        long: pd.DataFrame,
        *,
        items: pd.DataFrame,
        subjects: pd.DataFrame | None,
        scale: OrdinalScale | None,
        options: ReadOptions,
        source: str,
        row: Callable[[int], str],
    ) -> ResponseData:
        """Build from a long table of clean string ids and checked responses (codes of ``scale`` when ordinal)."""
        condition = "condition" in long.columns
        keys = ["subject", "item"] + (["condition"] if condition else [])
        dup = duplicated_rows(long, keys)
        if dup.any():
            rows = np.flatnonzero(dup)
            first = long.iloc[rows[0]]
            same = long.iloc[rows].loc[(long.iloc[rows][keys] == first[keys]).all(axis=1)]
            values = sorted(set(same["response"].tolist()), key=str)
            differ = "different values" if len(values) > 1 else "the same value"
            where = ", ".join(row(int(i)) for i in same.index[:3])
            raise DataError(
                f"{source}: subject '{first['subject']}' and item '{first['item']}' appear "
                f"{len(same)} times ({where}) with {differ} {values}; each (subject, item"
                f"{', condition' if condition else ''}) pair must appear once"
                + ("" if condition else " (name a condition column if these are different prompts or judges)")
                + "; if they are repeated trials of one item, read them as k successes of n trials with "
                "repeats='trials' (--repeats trials on the command line)"
            )

        n_missing = int(long["response"].isna().sum())
        if n_missing:
            log.info("%s: %d rows with an empty response are treated as missing cells", source, n_missing)
            long = long.loc[long["response"].notna()].reset_index(drop=True)
            if len(long) == 0:
                raise DataError(f"{source}: every response is empty")
        if "trials" in long.columns and bool((long["trials"] == 1).all()):
            long = long.drop(columns="trials")  # one trial each: the same data as without the column
        elif "trials" in long.columns:
            long["trials"] = long["trials"].astype("int64")

        item_table = clean_items(items, long["item"], source=source, require_benchmark=options.require_benchmark)
        item_table = _with_categories(item_table, long, scale, source=source)
        subject_table = clean_subjects(subjects, long["subject"], source=source)
        long["subject"] = pd.Categorical(long["subject"], categories=subject_table.index)
        long["item"] = pd.Categorical(long["item"], categories=item_table.index)
        if condition:
            long["condition"] = long["condition"].astype("category")
        notes = (scale.note,) if scale is not None and scale.note else ()
        return cls(responses=long, items=item_table, subjects=subject_table, source=source, notes=notes)

    @classmethod
    def from_wide(
        cls,
        frame: pd.DataFrame,
        *,
        id_column: str | None = None,
        rows: Literal["subjects", "items"] = "subjects",
        items: pd.DataFrame | None = None,
        subjects: pd.DataFrame | None = None,
        source: str = "<data frame>",
        first_line: int | None = None,
        options: ReadOptions | None = None,
        **fields: Unpack[ReadFields],
    ) -> ResponseData:
        """Build from a matrix: rows are subjects (or items, with ``rows="items"``); blank cells are missing.

        ``id_column`` names the column holding the row ids (default: the index). ``options`` (or its fields as
        keywords: ``scoring``, ``categories``, ``bins``, ``require_benchmark``) are as in :meth:`from_long`; inferred
        ordinal categories span every cell of the matrix.

        Examples
        --------
        >>> frame = pd.DataFrame({"Comfort": [4, 3, 2], "Work": [4, 1, None]}, index=["r1", "r2", "r3"])
        >>> data = ResponseData.from_wide(frame, scoring="ordinal", categories=[4, 3, 2, 1])  # reversed
        >>> data.to_matrix()
        array([[ 0.,  0.],
               [ 1.,  3.],
               [ 2., nan]])
        """
        options = ReadOptions.of(options, fields, caller="ResponseData.from_wide")
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
        if frame.shape[0] == 0 or frame.shape[1] == 0:
            raise DataError(f"{source}: the table is empty")
        if id_column is not None:
            if id_column not in frame.columns:
                raise DataError(
                    f"{source}: no id column '{id_column}'; the columns are {list(map(str, frame.columns))}"
                )
            frame = frame.set_index(id_column)
        row_kind, col_kind = ("subject", "item") if rows == "subjects" else ("item", "subject")
        row_ids = clean_ids(
            frame.index.to_series(), column=id_column or "index", source=source, row=row_namer(first_line)
        )
        if row_ids.duplicated().any():
            dup = row_ids[row_ids.duplicated()].iloc[0]
            raise DataError(f"{source}: {row_kind} '{dup}' has more than one row")
        col_ids = pd.Index([str(c).strip() for c in frame.columns])
        if col_ids.duplicated().any():
            raise DataError(f"{source}: {col_kind} column '{col_ids[col_ids.duplicated()][0]}' appears twice")
        body = frame.copy()
        body.index = pd.Index(row_ids.to_numpy())
        body.columns = col_ids
        place = f"{col_kind} column {{}}"  # the cell's column, counted from 1 in the file
        offset = 1 + (id_column is not None)
        scale = options.scale
        if options.ordinal:
            body, scale = _ordinal_body(
                body, scale=scale, source=source, first_line=first_line, place=place, offset=offset
            )
        else:
            body = _checked_body(
                body, scoring=options.scoring, source=source, first_line=first_line, place=place, offset=offset
            )
        stacked = body.stack(future_stack=True).rename("response").reset_index()
        stacked.columns = [row_kind, col_kind, "response"]
        stacked = stacked.loc[stacked["response"].notna()]
        if len(stacked) == 0:
            raise DataError(f"{source}: every cell is empty")
        if rows == "items":
            stacked = stacked.sort_values(["subject"], kind="stable")
            if items is None:
                items = pd.DataFrame({"item": row_ids.to_numpy()})
        elif items is None:
            items = pd.DataFrame({"item": col_ids})
        long = stacked[["subject", "item", "response"]].reset_index(drop=True)
        if scale is not None:
            return cls._from_clean(
                long, items=items, subjects=subjects, scale=scale, options=options, source=source, row=row_namer(None)
            )
        return cls.from_long(long, items=items, subjects=subjects, options=options, source=source)

    @classmethod
    def combine(cls, parts: Sequence[ResponseData], *, source: str | None = None) -> ResponseData:
        """Stack data sets over shared subject ids; item ids must not collide (prefix them by benchmark).

        Ordinal parts combine with binary parts (a mixed bank: the binary items get ``n_categories`` 2 and the
        categories ``0 | 1``), not with fractional or count ones. Parts with trials keep them (the others count one
        trial per response). The parts' :attr:`notes` are kept.

        Examples
        --------
        >>> graded = ResponseData.from_long(
        ...     pd.DataFrame({"subject": ["a", "b", "c"], "item": "g1", "response": [1, 2, 3]}), scoring="ordinal"
        ... )
        >>> binary = ResponseData.from_long(pd.DataFrame({"subject": ["a", "b"], "item": "b1", "response": [1, 0]}))
        >>> bank = ResponseData.combine([graded, binary])
        >>> bank.response_kind, bank.n_categories.tolist(), bank.items["categories"].tolist()
        ('ordinal', [3, 2], ['1 | 2 | 3', '0 | 1'])
        """
        if not parts:
            raise DataError("combine: nothing to combine")
        seen: dict[str, str] = {}
        for part in parts:
            for item_id in part.item_ids:
                if item_id in seen:
                    raise DataError(
                        f"combine: item '{item_id}' is in both {seen[item_id]} and {part.source}; "
                        "give items unique ids (e.g. prefixed by benchmark)"
                    )
                seen[item_id] = part.source
        responses = pd.concat([p.long_frame() for p in parts], ignore_index=True)
        items = pd.concat(_combined_items(parts))
        subject_frames = [p.subjects for p in parts if p.subjects.shape[1]]
        subjects = None
        if subject_frames:
            merged = pd.concat(subject_frames)
            subjects = merged.loc[~merged.index.duplicated()]
            all_ids = pd.Index(pd.unique(responses["subject"].to_numpy()))
            subjects = subjects.reindex(all_ids)
            subjects.index.name = "subject"
        has_condition = "condition" in responses.columns
        ordinal = "n_categories" in items.columns and bool((items["n_categories"] >= 3).any())
        if "trials" in responses.columns:
            responses["trials"] = responses["trials"].fillna(1).astype("int64")
        combined = cls.from_long(
            responses,
            condition="condition" if has_condition else None,
            trials="trials" if "trials" in responses.columns else None,
            items=items.reset_index(),
            subjects=subjects.reset_index() if subjects is not None else None,
            scoring="ordinal" if ordinal else "auto",
            # the codes stand for themselves; each item keeps its n_categories and its labels
            categories=list(range(max(int(items["n_categories"].max()), 2))) if ordinal else None,
            source=source or " + ".join(p.source for p in parts),
        )
        return combined.with_notes(*dict.fromkeys(note for part in parts for note in part.notes))

    # ------------------------------------------------------------------ basic views
    @property
    def subject_ids(self) -> pd.Index:
        """Subject ids in code order."""
        return self.subjects.index

    @property
    def item_ids(self) -> pd.Index:
        """Item ids in code order."""
        return self.items.index

    @property
    def n_subjects(self) -> int:
        return len(self.subjects)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_responses(self) -> int:
        return len(self.responses)

    @property
    def subject_codes(self) -> np.ndarray:
        """Integer code of each response's subject (int32, one per row of :attr:`responses`)."""
        return self.responses["subject"].cat.codes.to_numpy().astype("int32")

    @property
    def item_codes(self) -> np.ndarray:
        """Integer code of each response's item (int32, one per row of :attr:`responses`)."""
        return self.responses["item"].cat.codes.to_numpy().astype("int32")

    @property
    def values(self) -> np.ndarray:
        """The responses as float64: scores in [0, 1], or category codes 0..K_i-1 for ordinal data."""
        return self.responses["response"].to_numpy(dtype="float64")

    @property
    def shares(self) -> np.ndarray:
        """The responses as shares of the most each item gives (float64, one per row of :attr:`responses`): an
        ordinal code over K_i - 1, a binary or fractional score as it is.

        Examples
        --------
        >>> frame = pd.DataFrame({"subject": ["s1", "s2", "s3"], "item": "q", "response": [1, 2, 3]})
        >>> ResponseData.from_long(frame, scoring="ordinal").shares.tolist()
        [0.0, 0.5, 1.0]
        """
        values = self.values
        if self.response_kind == "ordinal":
            return values / (self.n_categories[self.item_codes] - 1)
        return values

    @property
    def trials(self) -> np.ndarray:
        """The number of trials n of each response (int64, one per row of :attr:`responses`): its ``trials`` column,
        ones when there is none (:mod:`irtbayes.data.trials`)."""
        if "trials" not in self.responses.columns:
            return np.ones(self.n_responses, dtype="int64")
        return self.responses["trials"].to_numpy(dtype="int64")

    @property
    def successes(self) -> np.ndarray:
        """The successes k = share * n of each response (float64, one per row of :attr:`responses`): whole numbers
        for binary and count data (a fractional score is its share of one trial).

        Examples
        --------
        >>> frame = pd.DataFrame({"subject": ["s1", "s2"], "item": "q", "response": [0.6, 1.0], "trials": [5, 2]})
        >>> data = ResponseData.from_long(frame, trials="trials")
        >>> data.successes.tolist(), data.trials.tolist(), data.response_kind
        ([3.0, 2.0], [5, 2], 'counts')
        """
        k = self.values * self.trials
        rounded = np.round(k)
        return np.where(np.abs(k - rounded) <= WHOLE_TOLERANCE, rounded, k)

    @property
    def has_trials(self) -> bool:
        """Whether some response counts more than one trial (the data carry a ``trials`` column)."""
        return "trials" in self.responses.columns and bool((self.responses["trials"] > 1).any())

    @property
    def response_kind(self) -> ResponseKind:
        """What the responses are: ``"ordinal"`` when the items have ``n_categories`` and one has 3 or more (the
        responses are then category codes); ``"counts"`` when some response is k successes of n > 1 trials and every
        one is a whole number of successes; else ``"binary"`` when every response is 0 or 1, else ``"fraction"``
        (scores in [0, 1], fitted under the fractional-logit quasi-likelihood)."""
        if "response_kind" not in self._cache:
            self._cache["response_kind"] = self._kind()
        kind: ResponseKind = self._cache["response_kind"]
        return kind

    def _kind(self) -> ResponseKind:
        if "n_categories" in self.items.columns:
            graded = pd.to_numeric(self.items["n_categories"], errors="coerce") >= 3
            if bool(graded.fillna(False).any()):
                return "ordinal"
        if self.has_trials:
            k = self.values * self.trials
            return "counts" if bool(np.all(np.abs(k - np.round(k)) <= WHOLE_TOLERANCE)) else "fraction"
        v = self.values
        return "binary" if bool(np.all((v == 0) | (v == 1))) else "fraction"

    @property
    def is_binary(self) -> bool:
        """True when every response is exactly 0 or 1 and no item has more than two categories."""
        return self.response_kind == "binary"

    @property
    def n_categories(self) -> np.ndarray:
        """The number of categories of each item (int64, in item-code order): the items' ``n_categories`` for
        ordinal data, 2 for every item otherwise."""
        if self.response_kind != "ordinal":
            return np.full(self.n_items, 2, dtype="int64")
        counts = pd.to_numeric(self.items["n_categories"], errors="coerce")
        if counts.isna().any():
            raise DataError(
                f"{self.source}: item '{self.item_ids[counts.isna().to_numpy()][0]}' has no n_categories in ordinal data"
            )
        return counts.to_numpy(dtype="int64")

    @property
    def conditions(self) -> pd.Index:
        """Distinct conditions (empty when the data has none)."""
        if "condition" not in self.responses.columns:
            return pd.Index([], name="condition")
        return pd.Index(self.responses["condition"].cat.categories, name="condition")

    @property
    def benchmarks(self) -> pd.Index:
        """Distinct benchmark labels in item order (missing labels left out)."""
        return pd.Index(pd.unique(self.items["benchmark"].dropna().to_numpy()), name="benchmark")

    @property
    def domains(self) -> pd.Index:
        """Distinct domain labels in item order (missing labels left out)."""
        return pd.Index(pd.unique(self.items["domain"].dropna().to_numpy()), name="domain")

    def long_frame(self) -> pd.DataFrame:
        """The responses as a plain long table with string ids and the item's benchmark and domain."""
        out = self.responses.copy()
        for col in ("subject", "item", "condition"):
            if col in out.columns:
                out[col] = out[col].astype(str)
        return out

    def checksum(self) -> str:
        """SHA-256 of the responses, the item labels and (when present) the items' ``n_categories``; a saved fit
        records it to detect other data."""
        if "checksum" not in self._cache:
            # n_categories counts only when present, so binary and fractional data keep their checksums
            columns = ["benchmark", "domain"] + (["n_categories"] if "n_categories" in self.items.columns else [])
            labels = self.items[columns].astype(str)
            self._cache["checksum"] = frame_checksum(_sorted_rows(self.responses), labels)
        return str(self._cache["checksum"])

    # ------------------------------------------------------------------ conversions
    def _single_condition_frame(self, condition: str | None) -> pd.DataFrame:
        frame = self.responses
        if "condition" in frame.columns:
            if condition is not None:
                if condition not in self.conditions:
                    raise DataError(f"{self.source}: unknown condition '{condition}'; known: {list(self.conditions)}")
                frame = frame.loc[frame["condition"] == condition]
            elif frame.duplicated(["subject", "item"]).any():
                raise DataError(
                    f"{self.source}: several conditions give more than one response per (subject, item); "
                    f"choose one of {list(self.conditions)}"
                )
        elif condition is not None:
            raise DataError(f"{self.source}: the data has no conditions, so condition='{condition}' cannot apply")
        return frame

    def to_matrix(self, *, condition: str | None = None, fill: float = np.nan, dtype: Any = "float64") -> np.ndarray:
        """Dense (subject, item) matrix of ``dtype`` (float64); missing cells are ``fill`` (NaN)."""
        frame = self._single_condition_frame(condition)
        matrix = np.full((self.n_subjects, self.n_items), fill, dtype=dtype)
        matrix[frame["subject"].cat.codes.to_numpy(), frame["item"].cat.codes.to_numpy()] = frame["response"].to_numpy()
        return matrix

    def to_dataset(self, *, condition: str | None = None) -> xr.Dataset:
        """The responses as an :class:`xarray.Dataset`.

        Returns
        -------
        xarray.Dataset
            ``response`` with dims (``subject``, ``item``), NaN where missing (and, for data with trials, ``trials``,
            0 where missing); the item metadata columns ``benchmark`` and ``domain`` (and ``n_categories`` for
            ordinal data) as coordinates on ``item``.
        """
        matrix = self.to_matrix(condition=condition)
        coords: dict[str, Any] = {
            "subject": self.subject_ids.to_numpy(dtype=str),
            "item": self.item_ids.to_numpy(dtype=str),
            "benchmark": ("item", self.items["benchmark"].astype(object).fillna("").to_numpy(dtype=str)),
            "domain": ("item", self.items["domain"].astype(object).fillna("").to_numpy(dtype=str)),
        }
        if self.response_kind == "ordinal":
            coords["n_categories"] = ("item", self.n_categories)
        variables = {"response": (("subject", "item"), matrix)}
        if self.has_trials:
            frame = self._single_condition_frame(condition)
            n = np.zeros((self.n_subjects, self.n_items), dtype="int64")
            n[frame["subject"].cat.codes.to_numpy(), frame["item"].cat.codes.to_numpy()] = frame["trials"].to_numpy()
            variables["trials"] = (("subject", "item"), n)
        return xr.Dataset(variables, coords=coords, attrs={"source": self.source})

    def subset(
        self,
        *,
        benchmarks: Iterable[str] | None = None,
        domains: Iterable[str] | None = None,
        subjects: Iterable[str] | None = None,
        items: Iterable[str] | None = None,
        conditions: Iterable[str] | None = None,
    ) -> ResponseData:
        """Keep only the named benchmarks, domains, subjects, items and conditions.

        Unknown names raise :class:`DataError` listing them; codes are renumbered in the original order. The item
        and subject tables keep their columns (``n_categories`` and ``categories`` too), the responses their
        ``trials``, and the data its :attr:`notes`.
        """
        keep_items = np.ones(self.n_items, dtype=bool)
        for column, wanted in (("benchmark", benchmarks), ("domain", domains)):
            if wanted is None:
                continue
            wanted = [wanted] if isinstance(wanted, str) else list(wanted)
            known = set(self.items[column].dropna())
            unknown = [w for w in wanted if w not in known]
            if unknown:
                raise DataError(f"{self.source}: unknown {column}(s) {unknown}; known: {sorted(known)}")
            keep_items &= self.items[column].isin(wanted).fillna(False).to_numpy(dtype=bool)
        if items is not None:
            wanted_items = pd.Index([items] if isinstance(items, str) else list(items)).astype(str)
            unknown_items = wanted_items.difference(self.item_ids)
            if len(unknown_items):
                raise DataError(f"{self.source}: unknown item(s) {list(unknown_items[:10])}")
            keep_items &= self.item_ids.isin(wanted_items)
        keep_subjects = self.subject_ids
        if subjects is not None:
            wanted_subjects = pd.Index([subjects] if isinstance(subjects, str) else list(subjects)).astype(str)
            unknown_subjects = wanted_subjects.difference(self.subject_ids)
            if len(unknown_subjects):
                raise DataError(f"{self.source}: unknown subject(s) {list(unknown_subjects[:10])}")
            keep_subjects = self.subject_ids[self.subject_ids.isin(wanted_subjects)]
        frame = self.responses
        mask = frame["item"].isin(self.item_ids[keep_items]) & frame["subject"].isin(keep_subjects)
        if conditions is not None:
            wanted_conditions = [conditions] if isinstance(conditions, str) else list(conditions)
            unknown_conditions = [c for c in wanted_conditions if c not in self.conditions]
            if unknown_conditions:
                raise DataError(
                    f"{self.source}: unknown condition(s) {unknown_conditions}; known: {list(self.conditions)}"
                )
            mask &= frame["condition"].isin(wanted_conditions)
        kept = frame.loc[mask.to_numpy()]
        if len(kept) == 0:
            raise DataError(f"{self.source}: the subset holds no responses")
        item_table = self.items.loc[self.items.index.isin(kept["item"].astype(str).unique())]
        subject_table = self.subjects.loc[self.subjects.index.isin(kept["subject"].astype(str).unique())]
        out = kept.copy()
        out["subject"] = pd.Categorical(out["subject"].astype(str), categories=subject_table.index)
        out["item"] = pd.Categorical(out["item"].astype(str), categories=item_table.index)
        if "condition" in out.columns:
            out["condition"] = out["condition"].astype(str).astype("category")
        if "trials" in out.columns and bool((out["trials"] == 1).all()):
            out = out.drop(columns="trials")  # one trial each: the same data as without the column
        return ResponseData(
            responses=out.reset_index(drop=True),
            items=item_table,
            subjects=subject_table,
            source=self.source,
            notes=self.notes,
        )

    # ------------------------------------------------------------------ summary
    def uninformative_items(self) -> pd.DataFrame:
        """Items answered identically by every subject who saw them (all 1, all 0, one constant score, or every
        response in one ordinal category).

        Returns
        -------
        pandas.DataFrame
            One row per such item (index ``item``): ``benchmark``, ``n_responses``, ``value`` (the shared
            response; a category code for ordinal items) and ``kind``: ``all_correct``, ``all_wrong`` or
            ``constant`` for scores; for an item with 3 or more categories ``all_lowest`` (code 0), ``all_highest``
            (the top code) or ``one_category`` (one in between).

        Examples
        --------
        >>> frame = pd.DataFrame({"subject": ["a", "b", "a", "b"], "item": ["q1", "q1", "q2", "q2"], "response": [3, 3, 1, 2]})
        >>> ResponseData.from_long(frame, scoring="ordinal").uninformative_items()[["value", "kind"]]
              value         kind
        item
        q1      2.0  all_highest
        """
        grouped = self.responses.groupby("item", observed=True)["response"]
        stats = grouped.agg(["min", "max", "size"])
        constant = stats.loc[stats["min"] == stats["max"]]
        kind = np.where(constant["min"] == 1, "all_correct", np.where(constant["min"] == 0, "all_wrong", "constant"))
        if self.response_kind == "ordinal":
            top = pd.Series(self.n_categories - 1, index=self.item_ids).loc[constant.index.astype(str)].to_numpy()
            value = constant["min"].to_numpy()
            graded = np.where(value == 0, "all_lowest", np.where(value == top, "all_highest", "one_category"))
            kind = np.where(top >= 2, graded, kind)
        out = pd.DataFrame(
            {
                "benchmark": self.items.loc[constant.index.astype(str), "benchmark"].to_numpy(),
                "n_responses": constant["size"].to_numpy(),
                "value": constant["min"].to_numpy(),
                "kind": kind,
            },
            index=pd.Index(constant.index.astype(str), name="item"),
        )
        return out

    def summary(self) -> DataSummary:
        """Counts, missingness, accuracy per subject and benchmark, and uninformative items."""
        return DataSummary.of(self)

    def with_benchmarks(self, labels: Mapping[str, Any] | pd.Series) -> ResponseData:
        """The same responses with some items' ``benchmark`` labels replaced (``labels`` maps item ids to the new
        labels; items it does not name keep theirs). Responses, ordinal codes and the items' other metadata are
        kept as they are.

        Examples
        --------
        >>> frame = pd.DataFrame({"subject": ["s1", "s2"], "item": ["q1", "q2"], "response": [1, 0]})
        >>> ResponseData.from_long(frame).with_benchmarks({"q2": "arith"}).items["benchmark"].tolist()
        [<NA>, 'arith']
        """
        labels = pd.Series(labels, dtype=object)
        unknown = labels.index.difference(pd.Index(self.item_ids.astype(str)))
        if len(unknown):
            raise DataError(f"{self.source}: with_benchmarks names item(s) that are not in the data: {listed(unknown)}")
        items = self.items.copy()
        new = items["benchmark"].astype(object)
        new.loc[labels.index] = labels.to_numpy()
        items["benchmark"] = new.astype("string").str.strip().replace("", pd.NA)
        return ResponseData(
            responses=self.responses, items=items, subjects=self.subjects, source=self.source, notes=self.notes
        )

    def without_trials(self) -> ResponseData:
        """The same shares with no ``trials``: each k of n read as one fractional score (the fractional-logit
        quasi-likelihood), as irtbayes read repeated trials before it counted them.

        Examples
        --------
        >>> frame = pd.DataFrame({"subject": ["s1", "s2"], "item": "q", "successes": [3, 1], "trials": [4, 4]})
        >>> data = ResponseData.from_long(frame)
        >>> data.response_kind, data.without_trials().response_kind, data.without_trials().values.tolist()
        ('counts', 'fraction', [0.75, 0.25])
        """
        if not self.has_trials:
            return self
        return ResponseData(
            responses=self.responses.drop(columns="trials"),
            items=self.items,
            subjects=self.subjects,
            source=self.source,
            notes=self.notes,
            reading=None,
        )

    def with_notes(self, *notes: str) -> ResponseData:
        """The same data with ``notes`` added (see :attr:`notes`)."""
        if not notes:
            return self
        return ResponseData(
            responses=self.responses,
            items=self.items,
            subjects=self.subjects,
            source=self.source,
            notes=(*self.notes, *notes),
            reading=self.reading,
        )


def _appearance_order(codes: np.ndarray, n_groups: int, *, rows_per_chunk: int = 1 << 20) -> np.ndarray:
    """The group codes present in ``codes`` in the order of their first row (a scan in chunks, stopping once every
    group has been seen): the order ``groupby(sort=False)`` gives.

    >>> _appearance_order(np.array([2, 2, 0, 2, 0]), 3).tolist()
    [2, 0]
    """
    first = np.full(n_groups, len(codes), dtype=np.int64)
    present = np.bincount(codes, minlength=n_groups) > 0
    for start in range(0, len(codes), rows_per_chunk):
        unseen = first == len(codes)
        if not (unseen & present).any():
            break
        values, index = np.unique(codes[start : start + rows_per_chunk], return_index=True)
        new = unseen[values]
        first[values[new]] = start + index[new]
    order = np.argsort(first, kind="stable")
    return order[present[order]]


@dataclass(frozen=True)
class _SummaryRows:
    """The responses' codes that :meth:`DataSummary.of` counts with, one value per response (no string per row):
    subject, item, benchmark and domain codes (labels ``(none)`` where missing), the shares, and which rows open
    their (subject, item) cell."""

    subject: np.ndarray
    item: np.ndarray
    benchmark: np.ndarray
    domain: np.ndarray
    shares: np.ndarray
    first: np.ndarray
    names: dict[str, np.ndarray]
    domain_of: np.ndarray  #: each benchmark's domain code (its first item's)

    @classmethod
    def of(cls, data: ResponseData, shares: np.ndarray) -> _SummaryRows:
        labels = data.items[["benchmark", "domain"]].astype(object).fillna("(none)")
        names, per_item = {}, {}
        for column in ("benchmark", "domain"):
            per_item[column], names[column] = pd.factorize(labels[column].to_numpy())
        _, first_item = np.unique(per_item["benchmark"], return_index=True)  # each benchmark's first item
        domain_of = np.zeros(len(names["benchmark"]), dtype=np.int64)
        domain_of[per_item["benchmark"][first_item]] = per_item["domain"][first_item]
        per_row = {column: codes[data.item_codes] for column, codes in per_item.items()}
        names["subject"] = data.subject_ids.to_numpy(dtype=object)
        names["item"] = data.item_ids.to_numpy(dtype=object)
        repeated = first_duplicates(data.responses, ["subject", "item"])
        return cls(data.subject_codes, data.item_codes, per_row["benchmark"], per_row["domain"], shares,
                   ~repeated, names, domain_of)  # fmt: skip

    @property
    def n_cells(self) -> int:
        return int(np.count_nonzero(self.first))

    def _distinct(self, outer: np.ndarray, inner: np.ndarray, n_inner: int) -> np.ndarray:
        """Per ``outer`` code, how many distinct ``inner`` codes its rows hold."""
        n_outer = int(outer.max(initial=-1)) + 1
        seen = np.zeros(n_outer * n_inner, dtype=bool)
        seen[outer.astype(np.int64) * n_inner + inner] = True
        return seen.reshape(n_outer, n_inner).sum(axis=1)

    def _table(self, codes: np.ndarray, name: str, columns: dict[str, np.ndarray]) -> pd.DataFrame:
        order = _appearance_order(codes, len(self.names[name]))
        size = np.bincount(codes, minlength=len(self.names[name]))
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = np.bincount(codes, weights=self.shares, minlength=len(size)) / size
        table = pd.DataFrame({**columns, "responses": size, "accuracy": accuracy}).iloc[order]
        table.index = pd.Index(self.names[name][order], name=name)
        return table

    def benchmarks(self) -> pd.DataFrame:
        n_b = len(self.names["benchmark"])
        items = self._distinct(self.benchmark, self.item, len(self.names["item"]))
        subjects = self._distinct(self.benchmark, self.subject, len(self.names["subject"]))
        cells = np.bincount(self.benchmark[self.first], minlength=n_b)
        n_subjects = len(self.names["subject"])
        table = self._table(self.benchmark, "benchmark", {
            "domain": self.names["domain"][self.domain_of], "items": _padded(items, n_b),
            "subjects": _padded(subjects, n_b),
        })  # fmt: skip
        position = pd.Index(self.names["benchmark"]).get_indexer(table.index)
        table.insert(4, "missing_share", 1 - cells[position] / (table["items"].to_numpy() * n_subjects))
        return table

    def domains(self) -> pd.DataFrame:
        n_d = len(self.names["domain"])
        benchmarks = self._distinct(self.domain, self.benchmark, len(self.names["benchmark"]))
        items = self._distinct(self.domain, self.item, len(self.names["item"]))
        return self._table(
            self.domain, "domain", {"benchmarks": _padded(benchmarks, n_d), "items": _padded(items, n_d)}
        )

    def subjects(self) -> pd.DataFrame:
        return self._table(self.subject, "subject", {})

    def by_condition(self, data: ResponseData) -> pd.DataFrame:
        """Per (benchmark, condition): items, responses, accuracy (data with conditions are small: pandas groups
        them)."""
        frame = pd.DataFrame({
            "benchmark": self.names["benchmark"][self.benchmark],
            "condition": data.responses["condition"].astype(str).to_numpy(),
            "item": self.item, "response": self.shares,
        })  # fmt: skip
        return frame.groupby(["benchmark", "condition"], sort=False).agg(
            items=("item", "nunique"), responses=("response", "size"), accuracy=("response", "mean")
        )


def _padded(values: np.ndarray, n: int) -> np.ndarray:
    """``values`` (one per code up to the largest present) padded with zeros to ``n`` codes."""
    out = np.zeros(n, dtype=np.int64)
    out[: len(values)] = values
    return out


def _sorted_rows(responses: pd.DataFrame, *, rows_per_chunk: int = 1 << 20) -> Iterable[pd.DataFrame]:
    """The rows of :meth:`ResponseData.long_frame` sorted by subject and item id (stably), in chunks of consecutive
    rows indexed by their position: what :func:`~irtbayes.data.columns.frame_checksum` hashes, made from the codes
    (the ids' order is their categories' string order) without a string per row, a chunk at a time."""
    keys = []
    for col in ("item", "subject"):  # np.lexsort sorts by the last key first
        rank = np.argsort(np.argsort(responses[col].cat.categories.astype(str).to_numpy(), kind="stable")).astype(
            np.int32
        )
        keys.append(rank[responses[col].cat.codes.to_numpy()])
    order = np.lexsort(keys)
    for start in range(0, len(order), rows_per_chunk):
        rows = order[start : start + rows_per_chunk]
        chunk = responses.iloc[rows].copy()
        for col in ("subject", "item", "condition"):
            if col in chunk.columns:
                chunk[col] = chunk[col].astype(str)
        chunk.index = pd.RangeIndex(start, start + len(rows))
        yield chunk


def _long_table(
    frame: pd.DataFrame,
    columns: tuple[str, str, str | None],
    scores: np.ndarray,
    trials: np.ndarray | None,
    *,
    source: str,
    row: Callable[[int], str],
) -> pd.DataFrame:
    """The long table of clean string ids (the ``subject``, ``item`` and optional ``condition`` columns of
    ``frame``), the checked responses and, when given, their trials."""
    subject, item, condition = columns
    long = pd.DataFrame(
        {
            "subject": clean_ids(frame[subject], column=subject, source=source, row=row),
            "item": clean_ids(frame[item], column=item, source=source, row=row),
            "response": scores,
        }
    )
    if trials is not None:
        long["trials"] = trials
    if condition:
        long["condition"] = frame[condition].astype("string").fillna("").astype(str)
    return long


def _count_columns(
    frame: pd.DataFrame, *, response: str, successes: str | None, trials: str | None
) -> tuple[str | None, str | None]:
    """The ``successes`` and ``trials`` columns to read: as given, or ``successes`` and ``trials`` when the table has
    them and no ``response`` column."""
    if successes is not None and trials is None:
        raise DataError(f"successes={successes!r} needs the column of trials too (trials=...)")
    columns = set(frame.columns) if isinstance(frame, pd.DataFrame) else set()
    if successes is None and trials is None and response not in columns and {"successes", "trials"} <= columns:
        return "successes", "trials"
    return successes, trials


def _read_responses(
    frame: pd.DataFrame,
    *,
    response: str,
    successes: str | None,
    trials: str | None,
    options: ReadOptions,
    source: str,
    row: Callable[[int], str],
    repeats: str,
) -> tuple[np.ndarray, np.ndarray | None, OrdinalScale | None]:
    """The responses (scores, shares of successes or ordinal codes), the trials of each (None without a trials
    column) and the ordinal scale (the declared one of ``options``, else inferred), each column checked."""
    if repeats not in REPEATS:
        raise DataError(f"{source}: repeats must be one of {', '.join(map(repr, REPEATS))}, got {repeats!r}")
    scoring, scale = options.scoring, options.scale
    if options.ordinal:
        if trials is not None or repeats != "error":
            raise DataError(
                f"{source}: trials (k successes of n) are counts of correct answers, not ordinal categories; "
                "read them with scoring='auto'"
            )
        scores, scale = clean_ordinal(frame[response], column=response, source=source, row=row, scale=scale)
        return scores, None, scale
    if trials is None:
        return clean_scores(frame[response], column=response, source=source, row=row, scoring=scoring), None, scale
    if successes is not None:
        present = frame[successes].notna().to_numpy()
        n = clean_trials(frame[trials], column=trials, source=source, row=row, present=present)
        scores = share_of_successes(frame[successes], n, column=successes, source=source, row=row)
    else:
        scores = clean_scores(frame[response], column=response, source=source, row=row, scoring=scoring)
        n = clean_trials(frame[trials], column=trials, source=source, row=row, present=~np.isnan(scores))
        whole_counts(scores, n, column=response, trials_column=trials, source=source, row=row)
    many = ~np.isnan(scores) & (n > 1)
    if scoring == "binary" and many.any():
        first = int(np.flatnonzero(many)[0])
        raise DataError(
            f"{source}: column '{trials}' at {row(first)} holds {int(n[first])} trials, but binary (0/1) responses "
            "were required; pass scoring='auto' to read k successes of n trials"
        )
    return scores, n, scale


def _checked_frame(frame: pd.DataFrame, wanted: list[str], *, source: str) -> pd.DataFrame:
    """A long table with rows and the ``wanted`` columns, its index reset."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
    if len(frame) == 0:
        raise DataError(f"{source}: no responses (the table is empty)")
    missing_cols = [c for c in wanted if c not in frame.columns]
    if missing_cols:
        raise DataError(f"{source}: missing column(s) {missing_cols}; the columns are {list(map(str, frame.columns))}")
    return frame.reset_index(drop=True)


def _checked_body(
    body: pd.DataFrame, *, scoring: Scoring, source: str, first_line: int | None, place: str, offset: int
) -> pd.DataFrame:
    """A wide matrix of scores in [0, 1] (0/1 for binary scoring), checked; an error names the cell."""
    numeric = body.apply(pd.api.types.is_numeric_dtype).all() and not body.apply(pd.api.types.is_bool_dtype).any()
    checked = body.to_numpy(dtype="float64") if numeric else None
    if checked is not None and not np.any(
        ~np.isnan(checked) & ((checked < 0) | (checked > 1) | ((checked != 0) & (checked != 1) & (scoring == "binary")))
    ):
        return body
    # slow path: validate column by column so the message names the cell
    body = body.copy()
    for j, col in enumerate(body.columns):
        try:
            body[col] = clean_scores(
                body[col], column=str(col), source=source, row=row_namer(first_line), scoring=scoring
            )
        except DataError as err:
            raise DataError(f"{err} ({place.format(j + offset)})") from None
    return body


def _ordinal_body(
    body: pd.DataFrame, *, scale: OrdinalScale | None, source: str, first_line: int | None, place: str, offset: int
) -> tuple[pd.DataFrame, OrdinalScale]:
    """A wide matrix of ordinal responses as category codes (NaN where missing), and their scale (``scale`` when
    declared, else inferred from every cell). An error names the cell."""
    row = row_namer(first_line)
    columns: dict[str, np.ndarray] = {}
    for j, col in enumerate(body.columns):
        try:
            if scale is not None:
                columns[col] = scale.codes(body[col], column=str(col), source=source, row=row)
            else:
                columns[col] = integer_scores(body[col], column=str(col), source=source, row=row)
        except DataError as err:
            raise DataError(f"{err} ({place.format(j + offset)})") from None
    values = np.column_stack(list(columns.values())) if columns else np.empty((len(body), 0))
    if scale is None:
        scale = inferred_scale(values.ravel(), source=source, what="the matrix")
        values = values - int(scale.labels[0])
    return pd.DataFrame(values, index=body.index, columns=body.columns), scale


def _with_categories(
    table: pd.DataFrame, long: pd.DataFrame, scale: OrdinalScale | None, *, source: str
) -> pd.DataFrame:
    """The item table with ``n_categories`` and ``categories`` for ordinal data (``scale`` given), checked
    against the codes of ``long`` (string ids); other data keep the table, which must give no item 3+ categories."""
    given = table["n_categories"] if "n_categories" in table.columns else None
    if scale is None:
        graded = (given >= 3).fillna(False).to_numpy(dtype=bool) if given is not None else None
        if given is not None and graded is not None and graded.any():
            item = table.index[graded][0]
            raise DataError(
                f"{source}: item '{item}' has n_categories {given[item]} in the item metadata, but the responses were "
                "read as scores in [0, 1]; pass scoring='ordinal' (--response-kind ordinal on the command line) to "
                "read graded categories"
            )
        return table
    k = scale.n_categories
    n = (given if given is not None else pd.Series(pd.NA, index=table.index, dtype="Int64")).fillna(k).astype("Int64")
    limit = long["item"].map(n).to_numpy(dtype="float64")
    codes = long["response"].to_numpy(dtype="float64")
    over = codes >= limit
    if over.any():
        i = int(np.flatnonzero(over)[0])
        code, n_i = int(codes[i]), int(limit[i])
        label = scale.labels[code] if code < k else str(code)
        raise DataError(
            f"{source}: subject '{long['subject'].iloc[i]}' answers item '{long['item'].iloc[i]}' in category "
            f"{label!r} (code {code}), but the item metadata gives the item n_categories {n_i} (codes 0-{n_i - 1})"
        )
    own = pd.Series(
        [CATEGORY_SEPARATOR.join(scale.labels[:m]) if m <= k else pd.NA for m in n.tolist()],
        index=table.index,
        dtype="string",
    )
    labels = own if "categories" not in table.columns else table["categories"].astype("string").fillna(own)
    for item, text in labels.dropna().items():
        if len(str(text).split(CATEGORY_SEPARATOR.strip())) != n[item]:
            raise DataError(
                f"{source} (item metadata): item '{item}' has categories {str(text)!r} but n_categories {n[item]}; "
                f"give one label per category, joined by '{CATEGORY_SEPARATOR}'"
            )
    table = table.copy()
    table["n_categories"] = n
    table["categories"] = labels
    return table


def _combined_items(parts: Sequence[ResponseData]) -> list[pd.DataFrame]:
    """The parts' item tables for :meth:`ResponseData.combine`: binary items of a bank with ordinal ones get 2
    categories; fractional scores and ordinal categories do not mix."""
    ordinal = [p for p in parts if p.response_kind == "ordinal"]
    if not ordinal:
        return [p.items for p in parts]
    fraction = [p for p in parts if p.response_kind in ("fraction", "counts")]
    if fraction:
        held = "k successes of n trials" if fraction[0].response_kind == "counts" else "fractional scores"
        raise DataError(
            f"combine: {fraction[0].source} holds {held} and {ordinal[0].source} ordinal categories; one "
            "item bank cannot hold both: bin the scores into categories (scoring='ordinal' with bins=[...]) or "
            "score them 0/1"
        )
    tables = []
    for part in parts:
        table = part.items.copy()
        if part.response_kind != "ordinal":
            given = table["n_categories"] if "n_categories" in table.columns else pd.Series(pd.NA, index=table.index)
            table["n_categories"] = given.astype("Int64").fillna(2)
            labels = table["categories"] if "categories" in table.columns else pd.Series(pd.NA, index=table.index)
            table["categories"] = labels.astype("string").fillna(CATEGORY_SEPARATOR.join(("0", "1")))
        tables.append(table)
    return tables


@dataclass(frozen=True)
class DataSummary:
    """What a data set holds: a few tables and a sentence of prose (see :meth:`to_text`).

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(20, 30, n_benchmarks=2, missing=0.1, seed=1)
    >>> summary = data.summary()
    >>> summary.n_subjects, summary.n_items, summary.binary
    (20, 30, True)
    >>> summary.benchmarks[["items", "subjects"]]
               items  subjects
    benchmark
    bench00       15        20
    bench01       15        20
    """

    source: str
    n_subjects: int
    n_items: int
    n_responses: int
    missing_share: float
    binary: bool
    conditions: list[str]
    checksum: str
    benchmarks: pd.DataFrame  #: one row per benchmark: domain, items, subjects, responses, missing_share, accuracy
    domains: pd.DataFrame  #: one row per domain: benchmarks, items, responses, accuracy
    subjects: pd.DataFrame  #: one row per subject: responses, accuracy
    uninformative: pd.DataFrame  #: see :meth:`ResponseData.uninformative_items`
    notes: tuple[str, ...] = ()  #: see :attr:`ResponseData.notes`
    #: one row per (benchmark, condition) when there are conditions: items, responses, accuracy
    by_condition: pd.DataFrame | None = None
    response_kind: ResponseKind = "binary"  #: see :attr:`ResponseData.response_kind`
    n_categories: tuple[int, int] = (2, 2)  #: the fewest and the most categories of an item
    n_trials: tuple[int, int] = (1, 1)  #: the fewest and the most trials of a response (:attr:`ResponseData.trials`)
    total_trials: int | None = None  #: the trials of every response together (None without trials)

    @classmethod
    def of(cls, data: ResponseData) -> DataSummary:
        """The summary of ``data``. For ordinal data, ``accuracy`` is the mean of code / (K_i - 1), the category
        scaled to [0, 1] (0 the lowest category, 1 the highest)."""
        kind = data.response_kind
        counts = data.n_categories
        shares = data.values / (counts[data.item_codes] - 1) if kind == "ordinal" else data.values
        rows = _SummaryRows.of(data, shares)
        per_bench, per_domain, per_subject = rows.benchmarks(), rows.domains(), rows.subjects()
        return cls(
            source=data.source,
            n_subjects=data.n_subjects,
            n_items=data.n_items,
            n_responses=data.n_responses,
            missing_share=1 - rows.n_cells / (data.n_subjects * data.n_items),
            binary=data.is_binary,
            conditions=[str(c) for c in data.conditions],
            checksum=data.checksum(),
            benchmarks=per_bench,
            domains=per_domain,
            subjects=per_subject,
            uninformative=data.uninformative_items(),
            notes=data.notes,
            by_condition=rows.by_condition(data) if "condition" in data.responses.columns else None,
            response_kind=kind,
            n_categories=(int(counts.min()), int(counts.max())),
            n_trials=(int(data.trials.min()), int(data.trials.max())),
            total_trials=int(data.trials.sum()) if data.has_trials else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""

        def records(table: pd.DataFrame, key: str) -> list[dict[str, Any]]:
            out = table.reset_index().rename(columns={table.index.name or "index": key})
            return json_ready(out.to_dict(orient="records"))

        return {
            "source": self.source,
            "n_subjects": self.n_subjects,
            "n_items": self.n_items,
            "n_responses": self.n_responses,
            "missing_share": self.missing_share,
            "binary": self.binary,
            "response_kind": self.response_kind,
            "n_categories": list(self.n_categories),
            "n_trials": list(self.n_trials),
            "total_trials": self.total_trials,
            "conditions": self.conditions,
            "checksum": self.checksum,
            "benchmarks": records(self.benchmarks, "benchmark"),
            "domains": records(self.domains, "domain"),
            "subjects": records(self.subjects, "subject"),
            "uninformative_items": records(self.uninformative, "item"),
            "notes": list(self.notes),
            "by_condition": None
            if self.by_condition is None
            else json_ready(self.by_condition.reset_index().to_dict(orient="records")),
        }

    @property
    def kind_text(self) -> str:
        """The responses in words: ``binary``, ``fractional scores``, ``ordinal (4 categories)``, ``ordinal (2-5
        categories)``, ``k successes of n trials (5 trials each)`` or ``k successes of n trials (1-5 trials, 1,234 in
        all)``."""
        if self.response_kind == "ordinal":
            low, high = self.n_categories
            return f"ordinal ({high if low == high else f'{low}-{high}'} categories)"
        low, high = self.n_trials
        trials = f"{high} trials each" if low == high else f"{low}-{high} trials, {self.total_trials:,} in all"
        if self.response_kind == "counts":
            return f"k successes of n trials ({trials})"
        if self.total_trials is not None:
            return f"fractional scores and k successes of n trials ({trials})"
        return "binary" if self.binary else "fractional scores"

    def to_text(self, *, max_rows: int = 40) -> str:
        """A human-readable summary."""
        lines = [
            f"{self.source}",
            f"{self.n_subjects} subjects x {self.n_items} items, {self.n_responses} responses "
            f"({self.missing_share:.1%} of cells missing; {self.kind_text})",
        ]
        lines += [f"note: {note}" for note in self.notes]
        if self.response_kind == "ordinal":
            lines.append("accuracy: the mean category scaled to [0, 1], code / (categories - 1)")
        if self.conditions:
            lines.append(f"conditions: {', '.join(self.conditions)}")
        lines.append(f"checksum: {self.checksum[:16]}")
        with pd.option_context("display.max_rows", max_rows, "display.width", 120, "display.precision", 3):
            lines += ["", "Benchmarks:", self.benchmarks.to_string()]
            if self.by_condition is not None:
                lines += ["", "Benchmarks by condition:", self.by_condition.to_string()]
            if len(self.domains) > 1 or self.domains.index[0] != "(none)":
                lines += ["", "Domains:", self.domains.to_string()]
            lines += ["", "Subjects:", self.subjects.sort_values("accuracy", ascending=False).to_string()]
        n_u = len(self.uninformative)
        if n_u:
            kinds = self.uninformative["kind"].value_counts().to_dict()
            shown = ", ".join(self.uninformative.index[:10])
            lines += [
                "",
                f"Uninformative items (same response from every subject): {n_u} {kinds}: {shown}"
                + (" ..." if n_u > 10 else ""),
            ]
        else:
            lines += ["", "Uninformative items: none"]
        return "\n".join(lines)
