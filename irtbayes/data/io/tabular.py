"""Long and wide tables in CSV or Parquet."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Unpack

import pandas as pd

from irtbayes.core.errors import DataError, listed
from irtbayes.data.columns import OrdinalScale, category_label
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import Repeats, ResponseData

__all__ = [
    "checked_folder",
    "checked_score",
    "harness_responses",
    "load_long",
    "load_wide",
    "newest_runs",
    "read_columns",
    "read_table",
]


def checked_score(
    value: Any,
    *,
    where: str,
    options: ReadOptions,
    holds: str = "holds",
    note: str = "",
    bools: bool = True,
) -> float:
    """One logged score as a float in [0, 1] (``True``/``False`` as 1/0 unless ``bools`` is False), else a
    DataError opening with ``where`` (file, line or row, key); 0/1 only with ``scoring="binary"``.

    With ``scoring="ordinal"`` the score is any finite number, to be made a category code later: one of the
    labels of the declared scale (``options.scale``), any number for a scale of bins, an integer when no scale is
    declared (categories inferred from the data).

    Examples
    --------
    >>> checked_score(0.5, where="x.jsonl: line 3 key 'f1'", options=ReadOptions())
    0.5
    >>> ordinal = ReadOptions(scoring="ordinal")
    >>> checked_score(7, where="x.jsonl: line 3 key 'rating'", options=ordinal)
    7.0
    >>> checked_score(7.5, where="x.jsonl: line 3 key 'rating'", options=ordinal)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: x.jsonl: line 3 key 'rating' holds 7.5, which is not an integer category; ...
    """
    if bools and isinstance(value, bool):
        value = float(value)
        if not options.ordinal:
            return value
    if options.ordinal:
        return _ordinal_score(value, where=where, holds=holds, scale=options.scale)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or not 0 <= value <= 1:
        raise DataError(f"{where} {holds} {value!r}, which is not a score in [0, 1]{note}")
    if options.scoring == "binary" and value not in (0, 1):
        raise DataError(
            f"{where} {holds} {value!r}, but binary (0/1) responses were required; pass scoring='fraction' to keep "
            "partial-credit scores"
        )
    return float(value)


def _ordinal_score(value: Any, *, where: str, holds: str, scale: OrdinalScale | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataError(f"{where} {holds} {value!r}, which is not a number (ordinal scores must be numbers)")
    if scale is None and not float(value).is_integer():
        raise DataError(
            f"{where} {holds} {value!r}, which is not an integer category; to group numeric scores into categories, "
            "declare bin edges (bins=[...]; --score-bins on the command line)"
        )
    if scale is not None and not scale.edges and category_label(value) not in scale.labels:
        raise DataError(
            f"{where} {holds} {value!r}, which is not one of the declared categories {listed(scale.labels)}"
        )
    return float(value)


def checked_folder(path: str | Path, expected: str) -> Path:
    """``path`` as a Path; an error when it does not exist or is a file (``expected`` says what it should be)."""
    root = Path(path)
    if not root.exists():
        raise DataError(f"{root}: no such folder")
    if not root.is_dir():
        raise DataError(f"{root}: is a file; expected {expected}")
    return root


def newest_runs[R](
    runs: Iterable[R],
    notes: list[str],
    *,
    who: Callable[[R], tuple[str, str]],
    when: Callable[[R], Any],
    name: Callable[[R], str],
    sort: bool = False,
) -> list[R]:
    """Of several runs of one (subject, benchmark) (``who``), the newest (by ``when``), each other named in ``notes``
    ("m ran b more than once: read ``name(newest)``, not ``name(other)``"); in the order of their first run, or of
    (subject, benchmark) with ``sort``.

    >>> notes = []
    >>> newest_runs(["m/b/1", "m/b/2", "n/b/1"], notes, who=lambda r: tuple(r.split("/")[:2]), when=str, name=str)
    ['m/b/2', 'n/b/1']
    >>> notes
    ['m ran b more than once: read m/b/2, not m/b/1']
    """
    kept: dict[tuple[str, str], R] = {}
    for run in sorted(runs, key=when):
        key = who(run)
        if key in kept:
            notes.append(f"{key[0]} ran {key[1]} more than once: read {name(run)}, not {name(kept[key])}")
        kept[key] = run
    return [kept[key] for key in sorted(kept)] if sort else list(kept.values())


def harness_responses(
    rows: dict[str, list[Any]] | list[dict[str, Any]],
    items: list[dict[str, Any]],
    *,
    with_condition: bool,
    text_columns: Sequence[str],
    options: ReadOptions,
    source: str,
    subjects: pd.DataFrame | None = None,
) -> ResponseData:
    """The responses read from an evaluation harness's logs, with their item table: ``text_columns`` as
    strings, ``n_options`` as nullable integers, and a ``condition`` column only ``with_condition``; a ``trials``
    column of ``rows`` gives each response's number of trials; ``options`` as in :meth:`ResponseData.from_long`."""
    frame = pd.DataFrame(rows)
    if not with_condition:
        frame = frame.drop(columns="condition")
    item_table = pd.DataFrame(items)
    for column in text_columns:
        item_table[column] = item_table[column].astype("string")
    item_table["n_options"] = item_table["n_options"].astype("Int64")
    return ResponseData.from_long(
        frame,
        condition="condition" if with_condition else None,
        trials="trials" if "trials" in frame.columns else None,
        items=item_table,
        subjects=subjects,
        options=options,
        source=source,
    )


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet file, with a clear error for a missing, empty or unreadable file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.tabular import read_table
    >>> path = Path(tempfile.mkdtemp()) / "results.csv"
    >>> _ = path.write_text("subject,item,response\\na,q1,1\\n")
    >>> read_table(path)
      subject item  response
    0       a   q1         1
    >>> read_table(path.with_name("missing.csv"))
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: ...missing.csv: no such file
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a folder, expected a CSV or Parquet file")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: the file is empty")
    suffix = path.suffix.lower()
    try:
        if suffix in {".parquet", ".pq"}:
            frame = pd.read_parquet(path)
        elif suffix in {".csv", ".tsv", ".txt", ".gz"}:
            frame = pd.read_csv(
                path,
                sep="\t" if ".tsv" in path.suffixes else ",",
                keep_default_na=True,
                na_values=[""],
                low_memory=False,
            )
        else:
            raise DataError(f"{path}: unknown file type '{suffix}' (expected .csv, .tsv or .parquet)")
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty") from None
    except pd.errors.ParserError as err:
        raise DataError(f"{path}: not a valid CSV file ({_parser_message(err)})") from None
    except (OSError, ValueError) as err:
        if isinstance(err, DataError):
            raise
        raise DataError(f"{path}: could not read the file ({err})") from None
    if frame.shape[0] == 0:
        raise DataError(f"{path}: the file has a header but no rows")
    return frame


def _parser_message(err: pd.errors.ParserError) -> str:
    """pandas' CSV error in file lines (the header is line 1): it counts some positions in rows from 0."""
    text = str(err).strip().replace("Error tokenizing data. C error: ", "")
    return re.sub(r"starting at row (\d+)", lambda m: f"starting at line {int(m.group(1)) + 1}", text)


def read_columns(path: str | Path) -> list[str]:
    """The column names of a CSV or Parquet file, reading only its header (or Parquet schema).

    A file that can't be read that way is read in full, so the error names the problem as :func:`read_table` does.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.tabular import read_columns
    >>> path = Path(tempfile.mkdtemp()) / "scores.csv"
    >>> _ = path.write_text("model,question,score\\nm1,q1,1\\n")
    >>> read_columns(path)
    ['model', 'question', 'score']
    """
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix in {".parquet", ".pq"} and path.is_file():
            import pyarrow.parquet as pq

            return [str(c) for c in pq.read_schema(path).names]
        if suffix in {".csv", ".tsv", ".txt", ".gz"} and path.is_file() and path.stat().st_size:
            head = pd.read_csv(path, sep="\t" if ".tsv" in path.suffixes else ",", nrows=0)
            return [str(c) for c in head.columns]
    except (pd.errors.EmptyDataError, pd.errors.ParserError, OSError, ValueError):
        pass
    return [str(c) for c in read_table(path).columns]


def _first_line(path: Path) -> int | None:
    """CSV rows are named by file line (the header is line 1); Parquet rows by index."""
    return 2 if path.suffix.lower() in {".csv", ".tsv", ".txt"} else None


def _items_table(items: str | Path | pd.DataFrame | None, *, item_id: str = "item") -> pd.DataFrame | None:
    if items is None or isinstance(items, pd.DataFrame):
        return items
    table = read_table(items)
    if item_id not in table.columns:
        raise DataError(f"{items}: no column '{item_id}' to match items by; the columns are {list(table.columns)}")
    return table.rename(columns={item_id: "item"})


def load_long(
    path: str | Path,
    *,
    subject: str = "subject",
    item: str = "item",
    response: str = "response",
    condition: str | None = None,
    trials: str | None = None,
    successes: str | None = None,
    repeats: Repeats = "error",
    items: str | Path | pd.DataFrame | None = None,
    item_id: str = "item",
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Load a long table: one row per (subject, item[, condition]) with a response column.

    Columns are mapped with ``subject``, ``item``, ``response`` and ``condition``. Item metadata
    (``benchmark``, ``domain``, ``text``, ``n_categories``, ...) may sit on the rows themselves or come from
    ``items`` (a file or frame whose ``item_id`` column holds the item ids). ``options``
    (:class:`~irtbayes.data.reading.ReadOptions`), or its fields as keywords (``scoring``, ``categories``, ``bins``,
    ``require_benchmark``), say how responses are read, as in :meth:`ResponseData.from_long
    <irtbayes.data.responses.ResponseData.from_long>`: ``scoring="ordinal"`` reads graded categories (declared labels
    in order, numeric scores cut at ``bins`` edges, or integers), held as codes 0..K-1.

    Repeated trials (:mod:`irtbayes.data.trials`): a ``trials`` column (found by that name unless named) gives each
    response's number of trials n, the response being the share of successes k / n; a table with ``successes`` and
    ``trials`` columns (and no response column) gives k and n themselves; ``repeats="trials"`` reads rows that
    repeat a (subject, item[, condition]), each 0/1, as k successes of n trials (by default they are an error).

    Examples
    --------
    Columns with other names are mapped; item labels may sit on the rows:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.tabular import load_long
    >>> path = Path(tempfile.mkdtemp()) / "scores.csv"
    >>> _ = path.write_text("model,question,score,benchmark\\nm1,q1,1,arc\\nm1,q2,0.5,gsm8k\\nm2,q1,0,arc\\n")
    >>> data = load_long(path, subject="model", item="question", response="score")
    >>> data.n_subjects, data.n_items, list(data.benchmarks)
    (2, 2, ['arc', 'gsm8k'])
    >>> data.long_frame()[["subject", "item", "response"]]
      subject item  response
    0      m1   q1       1.0
    1      m1   q2       0.5
    2      m2   q1       0.0

    Graded labels, declared in order (the lowest first):

    >>> _ = path.write_text("model,prompt,label\\nm1,p1,refusal\\nm1,p2,partial\\nm2,p1,compliance\\n")
    >>> data = load_long(
    ...     path, subject="model", item="prompt", response="label", scoring="ordinal",
    ...     categories=["compliance", "partial", "refusal"],
    ... )
    >>> data.values.tolist(), data.items["categories"].iloc[0]
    ([2.0, 1.0, 0.0], 'compliance | partial | refusal')

    k successes of n trials, given as counts or as repeated 0/1 rows:

    >>> _ = path.write_text("subject,item,successes,trials\\nm1,q1,3,5\\nm2,q1,5,5\\n")
    >>> data = load_long(path)
    >>> data.response_kind, data.values.tolist(), data.trials.tolist()
    ('counts', [0.6, 1.0], [5, 5])
    >>> _ = path.write_text("subject,item,response\\nm1,q1,1\\nm1,q1,0\\nm1,q1,1\\nm2,q1,1\\n")
    >>> data = load_long(path, repeats="trials")
    >>> data.successes.tolist(), data.trials.tolist()
    ([2.0, 1.0], [3, 1])
    """
    options = ReadOptions.of(options, fields, caller="load_long")
    path = Path(path)
    frame = read_table(path)
    if condition is None and "condition" in frame.columns:
        condition = "condition"
    if trials is None and "trials" in frame.columns and (successes is not None or response in frame.columns):
        trials = "trials"
    return ResponseData.from_long(
        frame,
        subject=subject,
        item=item,
        response=response,
        condition=condition,
        trials=trials,
        successes=successes,
        repeats=repeats,
        items=_items_table(items, item_id=item_id),
        source=str(path),
        first_line=_first_line(path),
        options=options,
    )


def load_wide(
    path: str | Path,
    *,
    rows: Literal["subjects", "items"] = "subjects",
    id_column: str | None = None,
    items: str | Path | pd.DataFrame | None = None,
    item_id: str = "item",
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Load a matrix: one row per subject (or per item with ``rows="items"``), blank cells missing.

    ``id_column`` names the column with the row ids. By default the first column holds them, unless it
    cannot: when it holds only responses (0/1, or scores in [0, 1], or blanks; with ``scoring="ordinal"`` any
    numbers, or mostly declared category labels) and repeats a value, the table is a bare response matrix
    (as LSAT7 and Science ship with mirt) and its rows are numbered 1, 2, ... in file order, which
    :attr:`ResponseData.notes` and the data summary say. ``options`` (or its fields as keywords) are as in
    :func:`load_long`; inferred ordinal categories span the whole matrix.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.tabular import load_wide
    >>> path = Path(tempfile.mkdtemp()) / "matrix.csv"
    >>> _ = path.write_text("system,q1,q2,q3\\nm1,1,0,\\nm2,1,1,0\\n")  # a blank cell is missing
    >>> data = load_wide(path)
    >>> data.to_matrix()
    array([[ 1.,  0., nan],
           [ 1.,  1.,  0.]])

    Ratings 1-10 of a judge, cut into three categories:

    >>> _ = path.write_text("system,q1,q2,q3\\nm1,2,9,5\\nm2,7,10,\\n")
    >>> data = load_wide(path, scoring="ordinal", bins=[4, 8])
    >>> data.to_matrix(), data.items["categories"].iloc[0]
    (array([[ 0.,  2.,  1.],
           [ 1.,  2., nan]]), '<4 | 4-8 | >=8')
    """
    options = ReadOptions.of(options, fields, caller="load_wide")
    path = Path(path)
    frame = read_table(path)
    kind = "subject" if rows == "subjects" else "item"
    notes: tuple[str, ...] = ()
    if id_column is None and _bare_matrix(frame, options):
        frame = frame.set_axis(pd.Index([str(i) for i in range(1, len(frame) + 1)], name=kind), axis=0)
        notes = (f"no id column: the {kind}s are numbered by their row, 1 to {len(frame)}, in file order",)
    else:
        id_column = id_column or str(frame.columns[0])
        _check_row_ids(frame, id_column, path=path, kind=kind)
    data = ResponseData.from_wide(
        frame,
        id_column=id_column,
        rows=rows,
        items=_items_table(items, item_id=item_id),
        source=str(path),
        first_line=_first_line(path),
        options=options,
    )
    return data.with_notes(*notes)


def _bare_matrix(frame: pd.DataFrame, options: ReadOptions) -> bool:
    """Whether the first column holds responses rather than ids, repeating a value: only numbers in [0, 1] or
    blanks; for ordinal responses, only numbers, or (declared labels) mostly labels, so that a stray value is
    reported as one."""
    first = frame.iloc[:, 0]
    values = first.dropna()
    if not len(values) or not values.duplicated().any() or pd.api.types.is_bool_dtype(first):
        return False
    if pd.api.types.is_numeric_dtype(first):
        return bool(options.ordinal or values.between(0, 1).all())
    scale = options.scale
    if scale is not None and not scale.edges:
        return bool(values.map(category_label).isin(scale.labels).mean() >= 0.5)
    return False


def _check_row_ids(frame: pd.DataFrame, id_column: str, *, path: Path, kind: str) -> None:
    """A repeated row id: say how the table was read and how to read it as a long table instead."""
    if id_column not in frame.columns:
        return  # from_wide names the missing column
    ids = frame[id_column].astype(str).str.strip()
    repeated = ids[ids.duplicated()]
    if repeated.empty:
        return
    columns = [str(c) for c in frame.columns]
    raise DataError(
        f"{path}: read as a wide matrix with the ids in column '{id_column}', but {kind} '{repeated.iloc[0]}' has "
        f"more than one row. The columns are {columns[:12]}{' ...' if len(columns) > 12 else ''}. If the table "
        "has one row per response (a long table), name its columns: --subject-col, --item-col and "
        "--response-col on the command line, or load_long(path, subject=..., item=..., response=...)"
    )
