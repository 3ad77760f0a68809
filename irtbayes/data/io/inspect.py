"""inspect_ai evaluation logs (``.eval`` archives and ``.json`` logs), read without inspect_ai installed.

An ``.eval`` log is a zip archive whose entries are zstd-compressed JSON: ``header.json`` (``eval.model``,
``eval.task``, ``eval.created``, ``status``, ``results``; a log still being written has ``_journal/start.json``
instead) and one ``samples/<id>_epoch_<n>.json`` per sample and epoch, each with its ``scores``
(``{scorer: {"value": ..., "answer": ...}}``). A ``.json`` log is one EvalLog: the same header fields and
``samples[]``. :func:`load_inspect` turns a folder of such logs (or one log) into a
:class:`~irtbayes.data.responses.ResponseData`:

- **subject**: ``eval.model`` (``openai/gpt-4o``); **item**: ``<task>/<sample id>``; **benchmark**: the task;
  the item's ``text`` is the sample's input (a chat input: its user messages), ``answer`` its target.
- **score**: ``C`` (correct) 1, ``P`` (partial) 0.5, ``I`` (incorrect) and ``N`` (no answer) 0, booleans, and
  numbers in [0, 1]; other values are an error naming the file and sample. Each task is read by one scorer:
  its only one, else the one ``metric=`` names (``NAME``, or ``TASK=NAME,...``), else its logs' headline scorer,
  and the notes say which were found. A sample its scorer did not score is a missing cell.
- **epochs**: a sample scored in several epochs, each correct or incorrect (``C``/``I``/``N``, booleans, 0/1), is
  k correct of its n epochs: ``response`` k / n with ``trials`` n, fitted with the binomial likelihood
  (:mod:`irtbayes.data.trials`). A sample with a partial score in some epoch (``P``, a number strictly between 0
  and 1) gets the mean of its epochs' scores, as inspect_ai reduces them by default (``mean``): a fractional score,
  fitted under the fractional-logit quasi-likelihood. The notes say which and how many epochs.
- A log whose ``status`` is ``error`` or ``cancelled`` is read for the samples it holds, and the notes say so;
  of several logs of one (model, task) the newest (``eval.created``) is read, and the notes say which were left.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError, listed
from irtbayes.data.io.tabular import checked_folder, newest_runs
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["INSPECT_SCORES", "is_inspect_folder", "is_inspect_log", "load_inspect"]

#: inspect_ai's score letters (``inspect_ai.scorer``: CORRECT, INCORRECT, PARTIAL, NOANSWER) as numbers.
INSPECT_SCORES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_SAMPLE_ENTRY = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
_ZIP_ZSTD = 93  # the zip compression method of zstd
_LOCAL_HEADER = 30


@dataclass
class _Log:
    path: Path
    model: str
    task: str
    created: str
    status: str
    headline: str | None
    samples: list[dict[str, Any]] = field(default_factory=list)


def is_inspect_log(path: str | Path) -> bool:
    """Whether ``path`` is an inspect_ai log: an ``.eval`` file, or a ``.json`` file that opens as an EvalLog."""
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    with path.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", errors="ignore")
    return '"eval"' in head and '"status"' in head and '"version"' in head


def is_inspect_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding inspect_ai logs (``.eval`` or EvalLog ``.json`` files, at any depth)."""
    path = Path(path)
    return path.is_dir() and any(is_inspect_log(p) for p in _candidates(path))


def _candidates(path: Path) -> list[Path]:
    return sorted(p for suffix in ("*.eval", "*.json") for p in path.rglob(suffix) if p.is_file())


def _zstd(data: bytes, where: str) -> bytes:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a dependency of the package
        raise DataError(
            f"{where}: reading inspect .eval logs needs the zstandard package (pip install zstandard)"
        ) from None
    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


class _Archive:
    """The entries of an ``.eval`` zip archive, read whatever their compression (stored, deflate or zstd)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as err:
            raise DataError(f"{path}: not an inspect_ai .eval log (not a zip archive: {err})") from None
        self.names = set(self.zip.namelist())

    def json(self, name: str) -> Any:
        info = self.zip.getinfo(name)
        if info.compress_type != _ZIP_ZSTD:
            data = self.zip.read(name)
        else:  # Python's zipfile reads zstd entries from 3.14 on: the raw bytes, decompressed here
            with self.path.open("rb") as handle:
                handle.seek(info.header_offset)
                header = handle.read(_LOCAL_HEADER)
                name_len, extra_len = struct.unpack("<HH", header[26:30])
                handle.seek(info.header_offset + _LOCAL_HEADER + name_len + extra_len)
                data = _zstd(handle.read(info.compress_size), f"{self.path}: {name}")
        try:
            return json.loads(data)
        except ValueError as err:
            raise DataError(f"{self.path}: {name} is not JSON ({err})") from None


def _read_eval(path: Path) -> _Log:
    archive = _Archive(path)
    head_name = "header.json" if "header.json" in archive.names else "_journal/start.json"
    if head_name not in archive.names:
        raise DataError(f"{path}: not an inspect_ai .eval log (no header.json or _journal/start.json)")
    header = archive.json(head_name)
    log = _header(header, path)
    entries = sorted(n for n in archive.names if _SAMPLE_ENTRY.match(n))
    log.samples = [archive.json(name) for name in entries]
    return log


def _read_json(path: Path) -> _Log:
    try:
        with path.open("rb") as handle:
            content = json.load(handle)
    except ValueError as err:
        raise DataError(f"{path}: not an inspect_ai log (not JSON: {err})") from None
    if not isinstance(content, dict) or "eval" not in content:
        raise DataError(f"{path}: not an inspect_ai log (no 'eval' key)")
    log = _header(content, path)
    log.samples = list(content.get("samples") or [])
    return log


def _header(header: dict[str, Any], path: Path) -> _Log:
    spec = header.get("eval") or {}
    model, task = spec.get("model"), spec.get("task")
    if not model or not task:
        raise DataError(f"{path}: the log names no model or task (eval.model, eval.task)")
    results = header.get("results") or {}
    headline = (results.get("headline") or {}).get("scorer") if isinstance(results, dict) else None
    return _Log(
        path=path,
        model=str(model),
        task=str(task),
        created=str(spec.get("created") or ""),
        status=str(header.get("status") or "started"),
        headline=headline,
    )


def _score(value: Any, where: str) -> float:
    """One inspect score value as a number in [0, 1]."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().upper() in INSPECT_SCORES:
        return INSPECT_SCORES[value.strip().upper()]
    if isinstance(value, int | float) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise DataError(
        f"{where}: score {value!r} is not one irtbayes reads (C, P, I, N, true/false, or a number in [0, 1])"
    )


def _text(value: Any) -> str | None:
    """A sample's input or target as text: a string; a chat input's user messages; a message's content given as
    parts (``{"type": "text", "text": ...}``).

    >>> _text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "2+2?"}]}])
    '2+2?'
    >>> _text(["A", "B"])
    'A | B'
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "role" in value:  # a chat message: its content, if the user wrote it
            return _text(value.get("content")) if value["role"] == "user" else None
        return _text(value.get("text") if "text" in value else value.get("content"))
    if isinstance(value, list):
        parts = [_text(part) for part in value]
        return " | ".join(p for p in parts if p) or None
    return str(value)


def _scorers(logs: list[_Log], metric: str | None, notes: list[str]) -> dict[str, str]:
    """The scorer read for each task: ``metric`` (one name, or ``TASK=NAME,...``), else the task's only scorer,
    else its logs' headline scorer (said in ``notes``)."""
    asked = _asked(metric)
    chosen: dict[str, str] = {}
    for task in sorted({g.task for g in logs}):
        mine = [g for g in logs if g.task == task]
        found: dict[str, None] = {}
        for log in mine:
            for sample in log.samples:
                found.update(dict.fromkeys(sample.get("scores") or {}))
        if not found:
            raise DataError(f"{mine[0].path}: task {task!r} has no scored samples")
        want = asked.get(task, asked.get(""))
        if want is not None and want in found:
            chosen[task] = want
        elif want is not None and (task in asked or len(found) > 1):
            raise DataError(f"{mine[0].path}: task {task!r} has no scorer {want!r}; found {listed(found)}")
        elif len(found) == 1:
            chosen[task] = next(iter(found))
        else:
            chosen[task] = next((g.headline for g in mine if g.headline in found), None) or next(iter(found))
            notes.append(
                f"task {task}: scorers found: {', '.join(found)}; read {chosen[task]!r} (choose with --metric)"
            )
    return chosen


def _asked(metric: str | None) -> dict[str, str]:
    """``metric`` as {task: scorer}; one name for every task under the key ``""``.

    >>> _asked("match"), _asked("arith=match, capitals=graded")
    ({'': 'match'}, {'arith': 'match', 'capitals': 'graded'})
    """
    if not metric:
        return {}
    if "=" not in metric:
        return {"": metric.strip()}
    pairs = [part.split("=", 1) for part in metric.split(",") if part.strip()]
    return {task.strip(): name.strip() for task, name in pairs}


def load_inspect(
    path: str | Path,
    *,
    metric: str | None = None,
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Read inspect_ai logs: a folder of ``.eval`` / ``.json`` logs (at any depth), or one log.

    Parameters
    ----------
    path
        The folder or the log.
    metric
        The scorer to read where the logs hold several (default: the logs' headline scorer).
    options, **fields
        How scores are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords), as in
        :meth:`~irtbayes.data.responses.ResponseData.from_long` (``scoring="binary"`` refuses partial scores and
        samples scored in several epochs).

    Examples
    --------
    >>> from pathlib import Path
    >>> logs = Path("tests/fixtures/inspect/logs")
    >>> data = load_inspect(logs)
    >>> data.n_subjects, data.n_items, sorted(data.items["benchmark"].unique())
    (3, 11, ['arith', 'capitals'])
    >>> frame = data.long_frame().set_index(["subject", "item"])
    >>> float(frame.loc[("mockllm/sys-00", "capitals/capitals-0"), "response"])  # P and I: their mean, one trial
    0.25
    >>> cell = frame.loc[("mockllm/sys-00", "arith/arith-0")]  # 1 correct of 2 epochs
    >>> float(cell["response"]), int(cell["trials"])
    (0.5, 2)
    """
    options = ReadOptions.of(options, fields, caller="load_inspect")
    path = Path(path)
    if path.is_file():
        files = [path]
    else:
        checked_folder(path, "a folder of inspect_ai logs or one log")
        files = [p for p in _candidates(path) if is_inspect_log(p)]
        if not files:
            raise DataError(f"{path}: no inspect_ai logs (.eval or EvalLog .json files)")
    logs = [_read_eval(f) if f.suffix == ".eval" else _read_json(f) for f in files]
    notes: list[str] = []
    for log in logs:
        if log.status in ("error", "cancelled", "started"):
            notes.append(f"{log.path.name}: status {log.status!r}; read the {len(log.samples)} samples it holds")
        if not log.samples:
            raise DataError(f"{log.path}: the log holds no samples (was it run with log_samples off?)")
    logs = newest_runs(  # of several logs of one (model, task), the newest
        logs,
        notes,
        who=lambda g: (g.model, g.task),
        when=lambda g: (g.created, g.path.name),
        name=lambda g: g.path.name,
    )
    scorers = _scorers(logs, metric, notes)
    rows, items, _ = _rows(logs, scorers)
    frame = _epochs(pd.DataFrame(rows), notes)
    _one_task_models(logs, notes)
    item_table = pd.DataFrame(list(items.values()))
    for column in ("text", "answer"):
        item_table[column] = item_table[column].astype("string")
    data = ResponseData.from_long(frame, items=item_table, trials="trials", options=options, source=str(path))
    return data.with_notes(*notes)


def _epochs(rows: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """One row per (model, sample) from its epochs' scores: k correct of n epochs (``response`` k / n, ``trials`` n)
    where every epoch is scored 0 or 1, else the mean of the scores as one trial (a fractional score); said in
    ``notes``.

    >>> rows = pd.DataFrame({"subject": "m", "item": ["a", "a", "a", "b", "b"], "response": [1, 0, 1, 0.5, 0]})
    >>> _epochs(rows, notes := [])
      subject item  response  trials
    0       m    a  0.666667       3
    1       m    b  0.250000       1
    """
    rows = rows.assign(whole=rows["response"].isin([0.0, 1.0]))
    cells = rows.groupby(["subject", "item"], sort=False, as_index=False).agg(
        response=("response", "mean"), epochs=("response", "size"), whole=("whole", "all")
    )
    cells["trials"] = np.where(cells["whole"], cells["epochs"], 1).astype("int64")
    counted = cells["whole"] & (cells["epochs"] > 1)
    partial = ~cells["whole"] & (cells["epochs"] > 1)
    if counted.any():
        notes.append(
            f"samples scored in several epochs (up to {int(cells.loc[counted, 'epochs'].max())}): each (model, "
            "sample) whose epochs are scored correct or incorrect is k correct of its n epochs, fitted with the "
            "binomial likelihood"
        )
    if partial.any():
        notes.append(
            f"{int(partial.sum())} (model, sample) cells scored in several epochs (up to "
            f"{int(cells.loc[partial, 'epochs'].max())}) hold partial scores (P or numbers between 0 and 1): each is "
            "the mean of its epochs' scores, as inspect_ai reduces them, fitted as a fractional score"
        )
    return cells[["subject", "item", "response", "trials"]]


def _rows(
    logs: list[_Log], scorers: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[tuple[str, str], int]]:
    """One row per (model, sample, epoch) scored by its task's scorer; the items' table; the epochs per (model,
    item)."""
    rows: list[dict[str, Any]] = []
    items: dict[str, dict[str, Any]] = {}
    trials: dict[tuple[str, str], int] = {}
    for log in logs:
        for sample in log.samples:
            sample_id = sample.get("id")
            where = f"{log.path}: sample {sample_id!r} epoch {sample.get('epoch', 1)}"
            if sample_id is None:
                raise DataError(f"{log.path}: a sample has no id")
            score = (sample.get("scores") or {}).get(scorers[log.task])
            if score is None:  # not scored by this scorer (an error before scoring): a missing cell
                continue
            value = score.get("value") if isinstance(score, dict) else score
            item = f"{log.task}/{sample_id}"
            rows.append({"subject": log.model, "item": item, "response": _score(value, where)})
            trials[(log.model, item)] = trials.get((log.model, item), 0) + 1
            items.setdefault(
                item,
                {
                    "item": item,
                    "benchmark": log.task,
                    "text": _text(sample.get("input")),
                    "answer": _text(sample.get("target")),
                },
            )
    if not rows:
        raise DataError(f"{logs[0].path.parent}: no sample of the inspect logs is scored")
    return rows, items, trials


def _one_task_models(logs: list[_Log], notes: list[str]) -> None:
    """Say which models ran only some of the tasks (their other cells are missing)."""
    tasks = {g.task for g in logs}
    if len(tasks) < 2:
        return
    ran: dict[str, set[str]] = {}
    for log in logs:
        ran.setdefault(log.model, set()).add(log.task)
    partial = sorted(model for model, done in ran.items() if done != tasks)
    if partial:
        notes.append(f"models that ran only some of the {len(tasks)} tasks (the rest are missing): {listed(partial)}")
