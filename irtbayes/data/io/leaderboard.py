"""Open LLM Leaderboard "details" files: per-sample Parquet.

The leaderboard (v2) publishes one details dataset per evaluated model, ``open-llm-leaderboard/<org>__<model>-details``
on the Hugging Face hub. Its files are lm-evaluation-harness samples, one file per task and run,
``<org>__<model>/samples_<task>_<YYYY-MM-DDTHH-MM-SS.ffffff>.jsonl``; the dataset card declares one
configuration per task, ``<org>__<model>__<task>`` (e.g. ``Qwen__Qwen2.5-72B-Instruct__leaderboard_mmlu_pro``),
with one split per run (``2024_06_26T18_35_38.148866``) and a ``latest`` split. The hub's Parquet conversion
(the ``refs/convert/parquet`` revision) stores each (configuration, split) as
``<configuration>/<split>/0000.parquet`` (more shards ``0001.parquet``, ... for large splits). Each row is one
document: ``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``, ``doc_hash``,
``prompt_hash``, ``target_hash`` and one column per metric (``acc_norm`` for BBH, GPQA and MuSR, ``acc`` for
MMLU-Pro, ``exact_match`` for MATH, ``prompt_level_strict_acc`` and three more for IFEval); newer harness
versions add ``filter`` and ``metrics`` columns.

:func:`load_leaderboard` reads a folder holding such Parquet files in either layout:

- **the hub's Parquet conversion**: ``<configuration>/<split>/*.parquet``, the configurations of one model or
  many (one ``<org>__<model>-details`` folder per model, or all configurations side by side). A (model, task)
  reads its ``latest`` split when there is one (else ``train``, which some cards say points to the latest
  run), else its newest run.
- **the repository's own layout, in Parquet**: ``<org>__<model>/samples_<task>_<date>.parquet``, one folder
  per model (the samples files saved as Parquet, e.g. with ``datasets``' ``to_parquet``). A (model, task) with
  several runs reads the newest, with a warning naming the files left out.

The long table it builds:

- **subject**: the model, ``<org>/<model>`` (the ``__`` of the hub's names read back as ``/``).
- **item**: ``<task>/<doc_id>``; **benchmark**: the task (``leaderboard_bbh_navigate``).
- **response**: the chosen metric's value for the document (booleans read as 0/1; scores must lie in [0, 1]).

Archived v1 details (``open-llm-leaderboard-old/details_<org>__<model>``, lighteval's ``details_harness|...``
files with ``example``/``metrics`` columns and no ``doc_id``) are not read, nor is a configuration holding
several tasks (some early cards grouped BBH's subtasks as ``leaderboard_bbh``): its doc_ids repeat, which is
an error naming the file. The repository's own JSONL files are lm-evaluation-harness samples
(:mod:`irtbayes.data.io.lm_eval`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.data.io.lm_eval import Collected, answer_of, choose_filters, options_count, text_of
from irtbayes.data.io.tabular import checked_folder, checked_score
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["ALL", "DEFAULT_METRICS", "is_leaderboard_folder", "list_choices", "load_leaderboard", "parquet_schema"]

log = logging.getLogger(__name__)

#: ``metric=ALL`` (or ``filter=ALL``) reads every metric (filter) of every task, each as a condition.
ALL = "all"
#: The metric read by default for tasks that log several: IFEval's per-prompt strict accuracy (its per-instruction
#: accuracies are lists, one value per instruction, not one score per document).
DEFAULT_METRICS: dict[str, str] = {"leaderboard_ifeval": "prompt_level_strict_acc"}
#: Columns of a samples row that are not metrics.
NOT_METRICS = frozenset(
    {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "doc_hash", "prompt_hash", "target_hash",
     "filter", "metrics", "task_name", "__index_level_0__"}
)  # fmt: skip
#: How many folder levels below the given path Parquet files are looked for
#: (``<root>/<org>__<model>-details/<configuration>/<split>/0000.parquet`` is four).
MAX_DEPTH = 4

_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.parquet$")
_SPLIT = re.compile(r"^(?:latest|train|\d{4}_\d{2}_\d{2}T\d{2}_\d{2}_\d{2}(?:\.\d+)?)$")
#: Splits that name the newest run, preferred in this order over the runs' own (dated) splits.
LATEST_SPLITS = ("latest", "train")


@dataclass
class _Run:
    """One (subject, task, run): one samples file, or the shards of one converted split."""

    subject: str
    task: str
    run: str  #: ``latest``/``train`` or the run's date as ``YYYY-MM-DDTHH-MM-SS[.ffffff]``
    folder: Path  #: the model's folder, or the folder holding its configurations (converted layout)
    files: list[Path] = field(default_factory=list)

    @property
    def where(self) -> str:
        return str(self.files[0]) if len(self.files) == 1 else f"{self.files[0].parent}/*.parquet"


def _parquet_files(path: Path) -> list[Path]:
    found: set[Path] = set()
    for depth in range(MAX_DEPTH + 1):
        found.update(p for p in path.glob("*/" * depth + "*.parquet") if p.is_file())
    return sorted(found)


def _subject_of(name: str) -> str:
    """``org__model`` -> ``org/model`` (the hub's file-name form of a model id)."""
    return name.replace("__", "/", 1)


def _split_config(config: Path) -> tuple[str, str] | None:
    """(subject, task) from a configuration folder ``<org>__<model>__<task>``; None when the name is not one.

    A ``<org>__<model>-details`` folder above it says where the model's name ends; without one the name is
    split at its first two ``__``.
    """
    name = config.name
    for parent in config.parents:
        if parent.name.endswith("-details"):
            prefix = parent.name.removesuffix("-details")
            if name.startswith(prefix + "__") and len(name) > len(prefix) + 2:
                return _subject_of(prefix), name[len(prefix) + 2 :]
            break
    parts = name.split("__")
    if len(parts) < 3 or not all(parts[:3]):
        return None
    return f"{parts[0]}/{parts[1]}", "__".join(parts[2:])


def _classify(path: Path) -> tuple[str, str, str]:
    """(subject, task, run) of one Parquet file, from where it lies; an error naming it when the layout is unknown."""
    match = _SAMPLES.match(path.name)
    if match:
        return _subject_of(path.parent.name), match["task"], match["date"]
    split = path.parent
    if split.name.startswith("partial-") and _SPLIT.match(split.name.removeprefix("partial-")):
        raise DataError(
            f"{path}: a partial split (the hub converts only the first part of a large split to Parquet); "
            "use the samples files of that run instead"
        )
    if _SPLIT.match(split.name):
        names = _split_config(split.parent)
        if names is not None:
            run = split.name if split.name in LATEST_SPLITS else split.name.replace("_", "-")
            return names[0], names[1], run
    raise DataError(
        f"{path}: not in an Open LLM Leaderboard details layout: expected "
        "<org>__<model>/samples_<task>_<date>.parquet or <org>__<model>__<task>/<split>/<shard>.parquet "
        "(split 'latest', 'train' or a run's date)"
    )


def is_leaderboard_folder(path: str | Path) -> bool:
    """True when ``path`` is a folder holding Parquet files in a details layout (up to four levels down).

    Examples
    --------
    >>> is_leaderboard_folder("tests/fixtures/leaderboard"), is_leaderboard_folder("tests/fixtures/helm")
    (True, False)
    """
    path = Path(path)
    if not path.is_dir():
        return False
    for file in _parquet_files(path):
        try:
            _classify(file)
        except DataError:
            continue
        return True
    return False


def _runs(root: Path) -> list[_Run]:
    """The run each (subject, task) is read from: ``latest`` when there is one, else the newest."""
    files = _parquet_files(root)
    if not files:
        raise DataError(
            f"{root}: no Parquet files here or up to {MAX_DEPTH} folders below (expected Open LLM Leaderboard "
            "details: <org>__<model>/samples_<task>_<date>.parquet or <org>__<model>__<task>/<split>/0000.parquet)"
        )
    runs: dict[tuple[str, str, str], _Run] = {}
    for file in files:
        subject, task, run_id = _classify(file)
        folder = file.parent if _SAMPLES.match(file.name) else file.parent.parent.parent
        entry = runs.setdefault((subject, task, run_id), _Run(subject, task, run_id, folder))
        if entry.files and entry.files[0].parent != file.parent:
            raise DataError(
                f"{file}: subject '{subject}', task '{task}', run '{run_id}' is also in {entry.files[0]}; "
                "keep one copy of each run"
            )
        entry.files.append(file)
    chosen: dict[tuple[str, str], list[_Run]] = {}
    for run in runs.values():
        chosen.setdefault((run.subject, run.task), []).append(run)
    kept: list[_Run] = []
    for (subject, task), group in sorted(chosen.items()):
        latest = sorted((r for r in group if r.run in LATEST_SPLITS), key=lambda r: LATEST_SPLITS.index(r.run))
        pick = latest[0] if latest else max(group, key=lambda r: r.run)
        dropped = [r for r in group if r is not pick]
        if dropped and not latest:
            log.warning(
                "subject '%s', task '%s': read the newest run %s and left out %s",
                subject,
                task,
                pick.where,
                ", ".join(r.where for r in dropped),
            )
        kept.append(pick)
    return kept


def parquet_schema(path: Path) -> Any:
    """The Arrow schema of a Parquet file; a :class:`DataError` naming it when it is empty or unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.stat().st_size == 0:
            raise DataError(f"{path}: the file is empty (0 bytes)")
        return pq.read_schema(path)
    except (OSError, pa.ArrowException) as err:
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None


def _metric_names(schema: Any) -> list[str]:
    """Columns that hold one number or boolean per document, in file order."""
    import pyarrow as pa

    names = []
    for column in schema:
        if column.name in NOT_METRICS:
            continue
        if pa.types.is_boolean(column.type) or pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
            names.append(column.name)
    return names


def _read_table(path: Path, columns: list[str]) -> Any:
    """Some columns of a Parquet file as a pyarrow Table; errors name the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as err:
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None


def _item_meta(path: Path, names: list[str], rows: list[int]) -> list[dict[str, Any]]:
    """Text, answer and number of options of the documents in ``rows`` (row numbers of ``path``).

    Only these rows of ``doc`` and ``target`` become Python objects; the options are counted from the
    ``arguments`` struct (one field per request: one per choice of a multiple-choice document) without
    reading its prompts into Python.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted: list[str] = [c for c in ("doc", "target", "arguments") if c in names]
    table = _read_table(path, wanted) if wanted else None
    if table is not None and rows != list(range(table.num_rows)):
        table = table.take(pa.array(rows))
    docs = table.column("doc").to_pylist() if table is not None and "doc" in wanted else [None] * len(rows)
    targets = table.column("target").to_pylist() if table is not None and "target" in wanted else [None] * len(rows)
    options: list[int | None] = [None] * len(rows)
    if table is not None and "arguments" in wanted:
        arguments = table.column("arguments").combine_chunks()
        if pa.types.is_struct(arguments.type):
            counts = pa.array([0] * len(rows), type=pa.int64())
            for index in range(arguments.type.num_fields):
                valid = pc.and_(arguments.is_valid(), arguments.field(index).is_valid())
                counts = pc.add(counts, pc.cast(valid, pa.int64()))
            options = [c if c > 1 else None for c in counts.to_pylist()]
        else:
            options = [options_count({"arguments": a}, None) for a in arguments.to_pylist()]
    return [
        {
            "text": text_of(doc),
            "answer": answer_of(target),
            "n_options": n if n is not None else pd.NA,
        }
        for doc, target, n in zip(docs, targets, options, strict=True)
    ]


def _parse_option(value: str | Mapping[str, str] | None) -> str | Mapping[str, str] | None:
    """``"task=metric,task=metric"`` (the command line's form) as a mapping; anything else as given."""
    if isinstance(value, str) and "=" in value:
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        bad = [p[0] for p in pairs if not p[0].strip() or not p[2].strip()]
        if bad:
            raise DataError(f"'{value}': expected METRIC or TASK=METRIC,TASK=METRIC")
        return {k.strip(): v.strip() for k, _, v in pairs}
    return value


def _choose_metrics(
    run: _Run, logged: list[str], requested: str | Mapping[str, str] | None, *, where: str
) -> tuple[list[str], str | None]:
    """The metrics read for one task, and a note when the choice was not the one named."""
    if not logged:
        raise DataError(f"{where}: no metric column (a number or boolean per document) in task '{run.task}'")
    wanted = requested.get(run.task) if isinstance(requested, Mapping) else requested
    if wanted == ALL:
        return logged, None
    if wanted is not None and wanted in logged:
        return [wanted], None
    if wanted is not None and isinstance(requested, Mapping):
        raise DataError(f"{where}: task '{run.task}' does not log metric '{wanted}'; it logs {logged}")
    default = logged[0] if len(logged) == 1 else DEFAULT_METRICS.get(run.task)
    if default in logged:
        if len(logged) == 1:
            note = None if wanted is None else f"task '{run.task}': read '{default}', its only metric"
        else:
            note = f"task '{run.task}': read '{default}', the leaderboard's measure (it logs {logged})"
        return [str(default)], note
    raise DataError(
        f"{where}: task '{run.task}' logs several metrics {logged}"
        + ("" if wanted is None else f", not '{wanted}'")
        + "; choose one with metric= (--metric METRIC, or --metric TASK=METRIC,... for some tasks)"
    )


def load_leaderboard(
    path: str | Path,
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: str | None = None,
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Load Open LLM Leaderboard details (per-sample Parquet) as item-level responses.

    Parameters
    ----------
    path
        A folder holding the details of one model or many, in the hub's Parquet-conversion layout
        (``<org>__<model>__<task>/<split>/0000.parquet``) or the repository's layout saved as Parquet
        (``<org>__<model>/samples_<task>_<date>.parquet``); files are looked for up to four levels down.
    metric
        The metric column to read: one name for every task that logs it (a task with a single metric reads
        that one, and IFEval its default; said in :attr:`~irtbayes.data.responses.ResponseData.notes`), a mapping from
        task to name (tasks left out read their default), the command line's ``"task=metric,task=metric"``, or
        ``"all"`` (:data:`ALL`: every metric, its name as each response's ``condition``, for a summary).
        Default: a task's only metric; for IFEval ``prompt_level_strict_acc`` (:data:`DEFAULT_METRICS`); a task
        with several metrics and no default must be given one.
    filter
        For files with a ``filter`` column holding several filters: the one to read, or ``"all"`` (each filter
        a condition).
    options, **fields
        How scores are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords):
        ``scoring="binary"`` refuses scores other than 0/1; ``"auto"`` and ``"fraction"`` keep scores in [0, 1].
        ``"ordinal"`` is refused: the leaderboard's per-sample metrics are 0/1 accuracies.

    Returns
    -------
    ResponseData
        ``responses`` with one row per (subject, item[, condition]): subjects ``<org>/<model>``, items
        ``<task>/<doc_id>``. ``items`` has ``benchmark`` (the task), ``text`` (the document's question field
        when it has one), ``answer`` (the ``target``), ``n_options`` (the number of choices of a
        multiple-choice document), ``doc_id`` and ``metric`` (the column read); ``subjects`` has ``folder``.

    Raises
    ------
    DataError
        No Parquet files, or one outside the layouts above; an empty or corrupt file; a file without rows or
        without a ``doc_id`` column; one ``doc_id`` twice in a file; one item with different documents in
        two files; a score outside [0, 1] or missing (file, doc_id and column named); ordinal scoring; a task with several
        metrics and none chosen, one task read with different metrics for different models, or an unknown
        metric or filter.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> from irtbayes.data.io.leaderboard import load_leaderboard
    >>> root = Path(tempfile.mkdtemp())
    >>> for model, scores in {"org__m1": [1.0, 0.0, 1.0], "org__m2": [0.0, 0.0, 1.0]}.items():
    ...     path = root / f"{model}-details" / f"{model}__leaderboard_bbh_navigate" / "latest" / "0000.parquet"
    ...     path.parent.mkdir(parents=True)
    ...     pq.write_table(pa.table({"doc_id": [0, 1, 2], "doc_hash": ["h0", "h1", "h2"], "acc_norm": scores}), path)
    >>> data = load_leaderboard(root)
    >>> list(data.subject_ids), list(data.item_ids)
    (['org/m1', 'org/m2'], ['leaderboard_bbh_navigate/0', 'leaderboard_bbh_navigate/1', 'leaderboard_bbh_navigate/2'])
    >>> data.to_matrix().tolist()
    [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    """
    options = ReadOptions.of(options, fields, caller="load_leaderboard")
    root = checked_folder(path, "a folder of Open LLM Leaderboard details")
    options.refuse_ordinal(str(root), recorded="Open LLM Leaderboard details log 0/1 accuracies per sample")
    requested = _parse_option(metric)
    runs = _runs(root)
    _check_requested(root, runs, requested)

    collected = Collected()
    seen_doc: dict[str, tuple[str, str]] = {}
    subjects: dict[str, str] = {}
    notes: list[str] = []
    task_metrics: dict[str, tuple[list[str], Path]] = {}
    for run in runs:
        subjects.setdefault(run.subject, str(run.folder.relative_to(root)) if run.folder.is_relative_to(root) else ".")
        metrics = _run_metrics(run, requested, task_metrics=task_metrics, notes=notes)
        _read_run(run, metrics, collected, seen_doc, requested=requested, filter_option=filter, options=options)

    with_condition = requested == ALL or filter == ALL
    subject_table = pd.DataFrame([{"subject": s, "folder": f} for s, f in subjects.items()])
    data = collected.data(subject_table, with_condition=with_condition, options=options, source=str(root))
    return data.with_notes(*notes)


def _check_requested(root: Path, runs: list[_Run], requested: str | Mapping[str, str] | None) -> None:
    """An error when ``metric=`` names a metric no task logs, or tasks that are not here."""
    if isinstance(requested, str) and requested != ALL:
        logged_anywhere = {m for run in runs for f in run.files for m in _metric_names(parquet_schema(f))}
        if requested not in logged_anywhere:
            raise DataError(f"{root}: no task logs metric '{requested}'; the metrics are {sorted(logged_anywhere)}")
    if isinstance(requested, Mapping):
        tasks = {run.task for run in runs}
        unknown = sorted(set(requested) - tasks)
        if unknown:
            raise DataError(f"{root}: metric= names task(s) {unknown} that are not here; the tasks are {sorted(tasks)}")


def _run_metrics(
    run: _Run,
    requested: str | Mapping[str, str] | None,
    *,
    task_metrics: dict[str, tuple[list[str], Path]],
    notes: list[str],
) -> list[str]:
    """The metrics read from one run (a note added when chosen for the user); an error when another model's differ."""
    logged = _metric_names(parquet_schema(run.files[0]))
    metrics, note = _choose_metrics(run, logged, requested, where=str(run.files[0]))
    if note and note not in notes:
        notes.append(note)
    earlier_metrics, earlier_file = task_metrics.setdefault(run.task, (metrics, run.files[0]))
    if earlier_metrics != metrics:
        raise DataError(
            f"{run.files[0]}: task '{run.task}' reads {metrics} here but {earlier_metrics} in {earlier_file}; "
            "choose a metric every model logs with metric= (--metric)"
        )
    return metrics


def _read_run(
    run: _Run,
    metrics: list[str],
    collected: Collected,
    seen_doc: dict[str, tuple[str, str]],
    *,
    requested: str | Mapping[str, str] | None,
    filter_option: str | None,
    options: ReadOptions,
) -> None:
    """Add one run's responses (each metric of each document) and its documents not seen before to ``collected``."""
    seen_in_run: dict[tuple[str, str], int] = {}
    for file in run.files:
        names, columns = _read_columns(file, metrics)
        filters = list(dict.fromkeys(str(f) for f in columns["filter"])) if "filter" in columns else []
        chosen_filters = choose_filters(file, run.task, filters, filter_option)
        by_filter = filter_option == ALL and bool(filters)  # each filter a condition
        new_rows: list[int] = []
        for number, doc_id in enumerate(columns["doc_id"]):
            if doc_id is None or (isinstance(doc_id, float) and math.isnan(doc_id)):
                raise DataError(f"{file}: row {number} has no doc_id")
            doc_filter = str(columns["filter"][number]) if filters else ""
            if filters and doc_filter not in chosen_filters:
                continue
            _check_once(file, seen_in_run, columns, number=number, doc_id=doc_id, doc_filter=doc_filter)
            item = f"{run.task}/{doc_id}"
            if _first_seen(file, run.task, seen_doc, columns, item=item, number=number, doc_id=doc_id):
                new_rows.append(number)
                collected.items[item] = {
                    "item": item,
                    "benchmark": run.task,
                    "doc_id": str(doc_id),
                    "metric": ",".join(metrics) if requested == ALL else metrics[0],
                }
            for name in metrics:
                value = checked_score(
                    columns[name][number], where=f"{file}: doc_id {doc_id}, column '{name}'", options=options
                )
                parts = ([name] if requested == ALL else []) + ([doc_filter] if by_filter else [])
                collected.add(run.subject, item, value, " ".join(parts))
        if new_rows:
            for row, meta in zip(new_rows, _item_meta(file, names, new_rows), strict=True):
                collected.items[f"{run.task}/{columns['doc_id'][row]}"].update(meta)


def _read_columns(file: Path, metrics: list[str]) -> tuple[list[str], dict[str, list[Any]]]:
    """The file's column names, and the columns read from it (documents only when there is no hash to compare)."""
    schema = parquet_schema(file)
    names = list(schema.names)
    if "doc_id" not in names:
        raise DataError(f"{file}: no 'doc_id' column; the columns are {names}")
    missing = [m for m in metrics if m not in names]
    if missing:
        raise DataError(f"{file}: no column {missing[0]!r} (the metric being read); it has {names}")
    # the light columns of every row; documents only where there is no hash to compare them by
    has_hash = "doc_hash" in names
    wanted = ["doc_id", *(c for c in ("doc_hash", "filter") if c in names), *metrics]
    if not has_hash and "doc" in names:
        wanted.append("doc")
    table = _read_table(file, wanted)
    if table.num_rows == 0:
        raise DataError(f"{file}: the file has no rows")
    return names, table.to_pydict()


def _check_once(
    file: Path,
    seen_in_run: dict[tuple[str, str], int],
    columns: dict[str, list[Any]],
    *,
    number: int,
    doc_id: Any,
    doc_filter: str,
) -> None:
    """Record the row of (doc_id, filter) in its run; an error when an earlier row had it."""
    key = (str(doc_id), doc_filter)
    if key in seen_in_run:
        first = seen_in_run[key]
        if "doc_hash" in columns and columns["doc_hash"][first] != columns["doc_hash"][number]:
            raise DataError(
                f"{file}: rows {first} and {number} are two documents with doc_id {doc_id}: a "
                "configuration holding several tasks (as the group configurations of early cards, "
                "e.g. leaderboard_bbh) cannot be read; use the per-task configurations"
            )
        raise DataError(
            f"{file}: doc_id {doc_id} appears in rows {first} and {number}"
            + (f" (filter '{doc_filter}')" if "filter" in columns else "")
            + "; each document must appear once per run"
        )
    seen_in_run[key] = number


def _first_seen(
    file: Path,
    task: str,
    seen_doc: dict[str, tuple[str, str]],
    columns: dict[str, list[Any]],
    *,
    item: str,
    number: int,
    doc_id: Any,
) -> bool:
    """True when the item is new; an error when it was seen before with another document."""
    if "doc_hash" in columns:
        doc_key = str(columns["doc_hash"][number] or "")
    else:
        doc_key = json.dumps(columns.get("doc", [None] * (number + 1))[number], sort_keys=True, default=str)
    if item in seen_doc:
        earlier_doc, doc_file = seen_doc[item]
        if earlier_doc != doc_key:
            raise DataError(
                f"{file}: doc_id {doc_id} of task '{task}' is another document than in "
                f"{doc_file}; the runs used different data for the same doc_id"
            )
        return False
    seen_doc[item] = (doc_key, str(file))
    return True


def list_choices(path: str | Path) -> pd.DataFrame:
    """Every task of a details folder with the metrics it logs: what ``metric=`` of :func:`load_leaderboard` names.

    Reads only the Parquet schemas and row counts.

    Parameters
    ----------
    path
        As for :func:`load_leaderboard`.

    Returns
    -------
    pandas.DataFrame
        One row per task: ``task``, ``metrics`` (comma-separated, in file order), ``default_metric`` (what
        ``metric=None`` reads; empty when the task needs one named), ``subjects`` (models with the task) and
        ``documents`` (rows in the first model's run).

    Examples
    --------
    >>> choices = list_choices("tests/fixtures/leaderboard")  # three models, three tasks
    >>> choices[["task", "default_metric", "subjects"]].values.tolist()
    [['leaderboard_bbh_navigate', 'acc_norm', 3],
     ['leaderboard_ifeval', 'prompt_level_strict_acc', 3],
     ['leaderboard_math_algebra_hard', 'exact_match', 3]]
    >>> choices.set_index("task").loc["leaderboard_ifeval", "metrics"]
    'prompt_level_strict_acc, prompt_level_loose_acc'
    """
    import pyarrow.parquet as pq

    root = Path(path)
    rows: dict[str, dict[str, Any]] = {}
    for run in _runs(root):
        logged = _metric_names(parquet_schema(run.files[0]))
        row = rows.get(run.task)
        if row is None:
            default = logged[0] if len(logged) == 1 else DEFAULT_METRICS.get(run.task, "")
            documents = sum(pq.ParquetFile(f).metadata.num_rows for f in run.files)
            row = rows[run.task] = {
                "task": run.task,
                "metrics": ", ".join(logged),
                "default_metric": default if default in logged else "",
                "subjects": 0,
                "documents": documents,
            }
        row["subjects"] += 1
    return pd.DataFrame(list(rows.values())).sort_values("task", ignore_index=True)
