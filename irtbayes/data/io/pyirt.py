"""py-irt's JSON Lines format, in and out.

py-irt (``Dataset.from_jsonlines``) reads one JSON object per line, one line per subject::

    {"subject_id": "<subject>", "responses": {"<item>": 1, "<item>": 0, ...}}

Items a subject did not answer are simply absent from its ``responses``, so sparse matrices cost nothing.
Subject and item ids are strings; responses are numbers (irtbayes reads 1/0, scores in [0, 1] or, with
``scoring="ordinal"``, graded categories).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Unpack

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.core.files import atomic_write_text, read_json_lines
from irtbayes.data.io.tabular import checked_score
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["PYIRT_SUFFIXES", "is_pyirt_file", "load_pyirt", "write_pyirt"]

#: File name endings read as py-irt JSON Lines.
PYIRT_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonlines")


def is_pyirt_file(path: str | Path) -> bool:
    """Whether ``path`` is a file named like JSON Lines (``.jsonl`` or ``.jsonlines``).

    Only the name is looked at; :func:`load_pyirt` checks the content and names any bad line.

    Examples
    --------
    >>> is_pyirt_file("tests/fixtures/pyirt/sparse.jsonl"), is_pyirt_file("tests/fixtures/pyirt/README.md")
    (True, False)
    """
    path = Path(path)
    return path.is_file() and path.suffix.lower() in PYIRT_SUFFIXES


def load_pyirt(path: str | Path, *, options: ReadOptions | None = None, **fields: Unpack[ReadFields]) -> ResponseData:
    """Load a py-irt JSON Lines file: one ``{"subject_id": ..., "responses": {item: 0/1}}`` object a line.

    Parameters
    ----------
    path
        The file. Blank lines are skipped; a ``null`` response is a missing cell.
    options, **fields
        How responses are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords):
        ``scoring="binary"`` refuses anything but 0/1; ``"auto"`` and ``"fraction"`` keep scores in [0, 1];
        ``"ordinal"`` reads graded categories (numbers) as codes 0..K-1: the ``categories`` in order, or increasing
        ``bins`` edges that cut numeric scores into categories (as in :meth:`ResponseData.from_long
        <irtbayes.data.responses.ResponseData.from_long>`); without either the responses must be integers, their
        categories inferred.

    Returns
    -------
    ResponseData
        Subjects in file order, items in order of first appearance; no benchmark or domain labels.

    Raises
    ------
    DataError
        An empty file, a line that is not a JSON object, a missing or blank ``subject_id``, ``responses`` that
        is not an object, a response that is not a number in [0, 1], or a subject on two lines: the message
        names the file and the line (and the item).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.pyirt import load_pyirt
    >>> path = Path(tempfile.mkdtemp()) / "responses.jsonl"
    >>> _ = path.write_text('{"subject_id": "m1", "responses": {"q1": 1, "q2": 0}}\\n{"subject_id": "m2", "responses": {"q2": 1}}\\n')
    >>> data = load_pyirt(path)
    >>> list(data.subject_ids), list(data.item_ids), data.n_responses
    (['m1', 'm2'], ['q1', 'q2'], 3)
    """
    options = ReadOptions.of(options, fields, caller="load_pyirt")
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    records = read_json_lines(path)
    if not records:
        raise DataError(f"{path}: the file is empty (expected one py-irt JSON object per line)")
    subjects: list[str] = []
    items: list[str] = []
    values: list[float] = []
    first_line: dict[str, int] = {}
    for number, record in records:
        where = f"{path} line {number}"
        if "subject_id" not in record or "responses" not in record:
            raise DataError(
                f"{where}: expected py-irt's keys 'subject_id' and 'responses', found {sorted(map(str, record))[:10]}"
            )
        raw_id = record["subject_id"]
        if raw_id is None or isinstance(raw_id, dict | list) or not str(raw_id).strip():
            raise DataError(f"{where}: 'subject_id' is {raw_id!r}; it must be a non-blank string or number")
        subject = str(raw_id).strip()
        if subject in first_line:
            raise DataError(
                f"{where}: subject '{subject}' already has a line (line {first_line[subject]}); py-irt expects one "
                "line per subject"
            )
        first_line[subject] = number
        responses = record["responses"]
        if not isinstance(responses, dict):
            raise DataError(f"{where}: 'responses' of subject '{subject}' must be an object {{item: response}}")
        for item, value in responses.items():
            if value is None:
                continue
            item_id = str(item).strip()
            if not item_id:
                raise DataError(f"{where}: subject '{subject}' has a response to an item with a blank id")
            values.append(
                checked_score(value, where=f"{where}: subject '{subject}', item '{item_id}'", options=options)
            )
            subjects.append(subject)
            items.append(item_id)
    if not values:
        raise DataError(f"{path}: no responses (every 'responses' object is empty)")
    frame = pd.DataFrame({"subject": subjects, "item": items, "response": np.asarray(values, dtype="float64")})
    dup = frame.duplicated(["subject", "item"])
    if dup.any():  # two keys that differ only by surrounding spaces
        row = frame.loc[dup.to_numpy()].iloc[0]
        raise DataError(
            f"{path} line {first_line[str(row['subject'])]}: subject '{row['subject']}' answers item "
            f"'{row['item']}' twice (item ids are compared without surrounding spaces)"
        )
    return ResponseData.from_long(frame, options=options, source=str(path))


def write_pyirt(data: ResponseData, path: str | Path, *, condition: str | None = None) -> Path:
    """Write responses as a py-irt JSON Lines file (atomically), readable by ``Dataset.from_jsonlines``.

    Parameters
    ----------
    data
        The responses.
    path
        The file to write (``.jsonl`` or ``.jsonlines`` so that :func:`irtbayes.data.io.load` reads it back).
    condition
        For data with several conditions (prompt formats, runs): the one to write; py-irt has no conditions.

    Returns
    -------
    pathlib.Path
        ``path``. One line per subject in :attr:`ResponseData.subject_ids` order, each with its answered items
        in :attr:`ResponseData.item_ids` order; 0/1 (and ordinal category codes) are written as integers, other
        scores as floats. Item
        metadata (benchmark, domain, text) is not part of py-irt's format and is not written.

    Raises
    ------
    DataError
        Several conditions and none chosen, or an unknown condition.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.pyirt import write_pyirt
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(3, 4, missing=0.0, seed=1)
    >>> path = write_pyirt(data, Path(tempfile.mkdtemp()) / "responses.jsonl")
    >>> print(path.read_text().splitlines()[0])
    {"subject_id": "subject000", "responses": {"item00000": 1, "item00001": 1, "item00002": 1, "item00003": 1}}
    """
    matrix = data.to_matrix(condition=condition)
    item_ids = [str(i) for i in data.item_ids]
    lines = []
    for subject, row in zip(data.subject_ids, matrix, strict=True):
        answered = np.flatnonzero(~np.isnan(row))
        if not len(answered):
            continue
        responses = {item_ids[j]: (int(row[j]) if row[j].is_integer() else float(row[j])) for j in answered}
        lines.append(json.dumps({"subject_id": str(subject), "responses": responses}, ensure_ascii=False))
    return atomic_write_text(Path(path), "\n".join(lines) + "\n")
