"""lm-evaluation-harness ``--log_samples`` output.

``lm_eval run ... --log_samples --output_path OUT`` writes, for each model, a folder
``OUT/<model_name_sanitized>/`` holding ``results_<date_id>.json`` and one
``samples_<task>_<date_id>.jsonl`` per task. Each samples line is one (document, filter) pair: ``doc_id``,
``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics`` (the names of the
metrics logged), ``doc_hash`` and one key per metric holding the per-item score.

:func:`load_lm_eval` turns such a folder (one model or several) into a :class:`~irtbayes.data.responses.ResponseData`:

- **subject**: the ``model_name`` recorded in the run's ``results_<date_id>.json`` (the raw ``pretrained=``
  value, e.g. ``fixture-org/dummy-a``); when that file is missing or has no name, ``config.model_args``
  ``pretrained=``; when neither exists, the folder name (``fixture-org__dummy-a``), with a warning.
- **item**: ``<task>/<doc_hash>`` when the line has a ``doc_hash`` (a SHA-256 of the document, so the same
  question keeps its id across runs and models), else ``<task>/<doc_id>``. ``doc_id`` is only the row index
  in the task's split: a dataset revision or a ``process_docs`` change can give the same ``doc_id`` to another
  document, which is why the hash is preferred and why documents are compared across files.
- **benchmark**: the task name.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Unpack

import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.core.files import read_json, read_json_lines
from irtbayes.data.io.tabular import checked_folder, checked_score, harness_responses
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["ALL_FILTERS", "is_lm_eval_folder", "list_choices", "load_lm_eval"]

log = logging.getLogger(__name__)

_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
#: Document fields tried, in order, for an item's text.
TEXT_FIELDS: tuple[str, ...] = (
    "question", "query", "problem", "prompt", "input", "text", "sentence", "ctx", "goal", "premise", "passage",
    "context",
)  # fmt: skip

Runs = Literal["latest", "all", "error"]
#: ``filter=ALL_FILTERS`` reads every filter a task logs, each as a condition.
ALL_FILTERS = "all"


@dataclass
class _SamplesFile:
    path: Path
    task: str
    date_id: str
    folder: Path
    subject: str = ""
    output_type: str | None = None
    lines: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def _samples_files(path: Path) -> list[Path]:
    """``samples_*.jsonl`` files in ``path`` and up to two folder levels below it, sorted."""
    found: list[Path] = []
    for pattern in ("samples_*.jsonl", "*/samples_*.jsonl", "*/*/samples_*.jsonl"):
        found.extend(p for p in path.glob(pattern) if p.is_file())
    return sorted(found)


def is_lm_eval_folder(path: str | Path) -> bool:
    """True when ``path`` is a folder with lm-evaluation-harness ``samples_*.jsonl`` files.

    The files may sit in ``path`` itself (one model's folder), one level down
    (``<output_path>/<model_name_sanitized>/``, the usual case) or two levels down (a folder of output paths).

    Examples
    --------
    >>> is_lm_eval_folder("tests/fixtures/lm_eval/lm_eval_dummy")
    True
    >>> is_lm_eval_folder("tests/fixtures/lm_eval/task_definitions")  # task files, no samples
    False
    """
    path = Path(path)
    return path.is_dir() and bool(_samples_files(path))


def _parse_name(path: Path) -> tuple[str, str]:
    """(task, date_id) from ``samples_<task>_<date_id>.jsonl``; date_id is '' when the name has none."""
    match = _SAMPLES.match(path.name)
    if match:
        return match["task"], match["date"]
    return path.name.removeprefix("samples_").removesuffix(".jsonl"), ""


def _read_samples(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a samples file as (line number, object); errors name the file and line.

    Older harness versions log no ``filter`` key: a file none of whose lines has one is read as filter
    ``none`` when each ``doc_id`` appears once (a file that repeats doc_ids without naming their filters
    is an error).
    """
    lines = read_json_lines(path)
    if not lines:
        raise DataError(f"{path}: the file is empty (no sample lines)")
    if not any("filter" in line for _, line in lines):
        first_line: dict[str, int] = {}
        for number, line in lines:
            doc_id = str(line.get("doc_id"))
            if doc_id in first_line:
                raise DataError(
                    f"{path}: lines {first_line[doc_id]} and {number} both hold doc_id {doc_id} and no line names "
                    "its 'filter'; the filters cannot be told apart"
                )
            first_line[doc_id] = number
            line["filter"] = "none"
    return lines


def _pretrained(model_args: Any) -> str | None:
    """``pretrained=`` from ``config.model_args``, a dict (lm-eval >= 0.4.5) or a 'k=v,k=v' string."""
    if isinstance(model_args, dict):
        value = model_args.get("pretrained")
        return str(value) if value else None
    if isinstance(model_args, str):
        for part in model_args.split(","):
            key, _, value = part.partition("=")
            if key.strip() == "pretrained" and value.strip():
                return value.strip()
    return None


class _Results:
    """The ``results_*.json`` files of one model folder, read on demand."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files = {
            p.name.removeprefix("results_").removesuffix(".json"): p for p in sorted(folder.glob("results_*.json"))
        }
        self._cache: dict[str, dict[str, Any]] = {}

    def for_run(self, date_id: str) -> tuple[dict[str, Any], Path] | None:
        """The results of the run with this date_id, else of the newest run in the folder, else None."""
        if not self.files:
            return None
        key = date_id if date_id in self.files else max(self.files)
        if key not in self._cache:
            self._cache[key] = read_json(self.files[key])
        return self._cache[key], self.files[key]


def _subject_of(results: tuple[dict[str, Any], Path] | None, folder: Path) -> str:
    if results is not None:
        content, _ = results
        name = content.get("model_name")
        if isinstance(name, str) and name.strip():
            return name.strip()
        config = content.get("config")
        pretrained = _pretrained(config.get("model_args")) if isinstance(config, dict) else None
        if pretrained:
            return pretrained
    log.warning(
        "%s: no results_*.json with a model name; the folder name '%s' is used as the subject id", folder, folder.name
    )
    return folder.name


def _choose(option: str | Mapping[str, str] | None, task: str) -> str | None:
    if isinstance(option, Mapping):
        return option.get(task)
    return option


def _metric_for(file: _SamplesFile, requested: str | None) -> str:
    number, first = file.lines[0]
    logged = first.get("metrics")
    if not isinstance(logged, list) or not logged:
        logged = [k for k in ("acc", "acc_norm", "exact_match") if k in first]
        if not logged:
            raise DataError(f"{file.path}: line {number} has no 'metrics' list naming the metrics logged")
    logged = [str(m) for m in logged]
    if requested is None:
        if "acc" in logged:
            return "acc"
        if len(logged) == 1:
            return logged[0]
        raise DataError(
            f"{file.path}: task '{file.task}' logs several metrics {logged} and none is 'acc'; choose one with metric="
        )
    if requested not in logged:
        raise DataError(f"{file.path}: task '{file.task}' does not log metric '{requested}'; it logs {logged}")
    return requested


def _logged_filters(file: _SamplesFile) -> list[str]:
    filters: list[str] = []
    for number, line in file.lines:
        if "filter" not in line:
            raise DataError(f"{file.path}: line {number} has no 'filter' key")
        name = str(line["filter"])
        if name not in filters:
            filters.append(name)
    return filters


def choose_filters(file: str | Path, task: str, filters: list[str], requested: str | None) -> list[str]:
    """The filters whose lines are read from a file that logs ``filters``: every one for :data:`ALL_FILTERS`
    (and the only one, whatever was asked for), else the one ``filter=`` names."""
    if requested == ALL_FILTERS or len(filters) <= 1:
        if filters and requested not in (None, ALL_FILTERS, filters[0]):
            log.debug(
                "%s: task '%s' logs only filter '%s'; it is used instead of '%s'", file, task, filters[0], requested
            )
        return filters
    if requested is None:
        raise DataError(
            f"{file}: task '{task}' logs several filters {filters}; choose one with filter= (--filter on the command line)"
        )
    if requested not in filters:
        raise DataError(f"{file}: task '{task}' has no filter '{requested}'; it logs {filters}")
    return [requested]


def options_count(line: dict[str, Any], output_type: str | None) -> int | None:
    arguments = line.get("arguments")
    if not isinstance(arguments, dict) or not arguments:
        return None
    if output_type is None:  # no results file: continuations given as strings, several of them
        continuations = [a.get("arg_1") for a in arguments.values() if isinstance(a, dict)]
        is_mc = len(continuations) > 1 and all(isinstance(c, str) for c in continuations)
        return len(continuations) if is_mc else None
    return len(arguments) if output_type == "multiple_choice" else None


def text_of(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    for key in TEXT_FIELDS:
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def answer_of(target: Any) -> str | None:
    if target is None:
        return None
    if isinstance(target, str):
        return target
    return json.dumps(target, ensure_ascii=False)


def _keep_runs(files: list[_SamplesFile], runs: Runs) -> list[_SamplesFile]:
    """Resolve several samples files for one (subject, task): keep the newest, keep all, or refuse."""
    if runs not in ("latest", "all", "error"):
        raise DataError(f"runs must be 'latest', 'all' or 'error', got {runs!r}")
    groups: dict[tuple[str, str], list[_SamplesFile]] = {}
    for file in files:
        groups.setdefault((file.subject, file.task), []).append(file)
    kept: list[_SamplesFile] = []
    for (subject, task), group in groups.items():
        if len(group) == 1 or runs == "all":
            kept.extend(group)
            continue
        names = ", ".join(str(f.path) for f in group)
        if runs == "error":
            raise DataError(
                f"subject '{subject}' has {len(group)} samples files for task '{task}': {names}; "
                "pass runs='latest' to keep the newest or runs='all' to keep each as a condition"
            )
        dates = [f.date_id for f in group]
        if len(set(dates)) < len(dates):
            raise DataError(
                f"subject '{subject}' has several samples files for task '{task}' with the same "
                f"date_id: {names}; remove the copies or pass runs='all'"
            )
        newest = max(group, key=lambda f: f.date_id)
        for dropped in group:
            if dropped is not newest:
                log.warning(
                    "subject '%s', task '%s': kept the newest run %s and dropped %s",
                    subject,
                    task,
                    newest.path,
                    dropped.path,
                )
        kept.append(newest)
    kept_ids = {id(f) for f in kept}
    return [f for f in files if id(f) in kept_ids]


def load_lm_eval(
    path: str | Path,
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    runs: Runs = "latest",
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Load lm-evaluation-harness ``--log_samples`` output (one model or many) as item-level responses.

    Parameters
    ----------
    path
        The ``--output_path`` folder (one subfolder per model), one model's folder, or a folder of output
        folders: ``samples_<task>_<date_id>.jsonl`` files are looked for up to two levels down.
    metric
        The per-sample metric to read, for every task (``"acc_norm"``) or per task (``{"fx_mc": "acc_norm"}``).
        Default: ``acc`` when the task logs it, else the task's only metric. A metric the task does not log
        is an error listing the metrics it does log.
    filter
        The filter pipeline whose scores are read, for every task or per task. A task that logs a single
        filter (``none`` for most multiple-choice tasks) always uses it; a task that logs several
        (e.g. ``strict-match`` and ``flexible-extract``) needs one named here. ``"all"``
        (:data:`ALL_FILTERS`) reads every filter of every task, the filter's name as each response's
        ``condition`` (for a summary of all of them; a fit needs one filter per task).
    tasks
        Load only these tasks (default: every task found).
    runs
        What to do when one subject has several samples files for a task (a re-run into the same folder):
        ``"latest"`` keeps the newest ``date_id`` and logs a warning naming the files dropped; ``"all"``
        keeps every run and sets the ``condition`` of every response to its run's ``date_id``; ``"error"``
        raises, naming the files.
    options, **fields
        How scores are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords):
        ``scoring="binary"`` refuses scores other than 0/1; ``"auto"`` and ``"fraction"`` keep scores in [0, 1]
        (such as a per-sample F1) as fractions; ``"ordinal"`` reads graded categories as codes 0..K-1: the
        ``categories`` in order, scores cut at increasing ``bins`` edges (below e1 -> 0, [e1, e2) -> 1, ..., from the
        last edge on -> ``len(bins)``; ``bins=[0.5, 0.8]`` makes three of an F1), or else integers (such as a 1-10
        rating).

    Returns
    -------
    ResponseData
        ``responses`` with one row per (subject, item[, condition]); subjects are the ``model_name`` of each
        run's results file (see the module notes), items ``<task>/<doc_hash>`` (or ``<task>/<doc_id>`` when
        the log has no hash). ``items`` has ``benchmark`` (the task), ``text`` (the document's ``question``,
        ``query``, ... field, when one exists), ``answer`` (the logged ``target``), ``n_options`` (number of
        choices, multiple-choice tasks only) and ``doc_id``; ``subjects`` has ``folder`` (where the samples
        were found) and ``model_source``.

    Raises
    ------
    DataError
        No samples files; unreadable or non-JSON lines (file and line named); a line without ``doc_id``,
        ``filter`` or the metric key; an empty samples file; a score outside [0, 1] (or not a category); an
        unknown metric, filter or task; the same item id with different documents in two files; several runs
        when ``runs="error"``.

    Examples
    --------
    >>> folder = "tests/fixtures/lm_eval/lm_eval_dummy"  # three models, tasks fx_mc and fx_gen
    >>> data = load_lm_eval(folder, filter={"fx_gen": "strict-match"})
    >>> data.subject_ids.tolist()
    ['fixture-org/dummy-a', 'fixture-org/dummy-b', 'fixture-org/dummy-c']
    >>> data.n_items, data.n_responses, data.items["benchmark"].value_counts().sort_index().to_dict()
    (50, 150, {'fx_gen': 20, 'fx_mc': 30})
    >>> load_lm_eval(folder)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: ...: task 'fx_gen' logs several filters ['strict-match', 'flexible-extract']; ...
    """
    options = ReadOptions.of(options, fields, caller="load_lm_eval")
    all_filters = filter == ALL_FILTERS
    root = checked_folder(path, "an lm-evaluation-harness output folder")
    files, subject_meta = _found_files(root, tasks)
    collected = Collected()
    seen_doc: dict[str, tuple[str, Path, int]] = {}
    for file in _keep_runs(files, runs):
        file.lines = _read_samples(file.path)
        chosen_metric = _metric_for(file, _choose(metric, file.task))
        chosen_filters = choose_filters(file.path, file.task, _logged_filters(file), _choose(filter, file.task))
        copies: dict[tuple[str, str], int] = {}
        for number, line in file.lines:
            if line["filter"] not in chosen_filters:
                continue
            chosen_filter = str(line["filter"])
            value = _line_score(file, number, line, metric=chosen_metric, options=options)
            item = f"{file.task}/{_doc_key(file, number, line, filter_name=chosen_filter, copies=copies)}"
            _add_document(collected.items, seen_doc, file, number, line, item=item)
            parts = ([file.date_id] if runs == "all" else []) + ([chosen_filter] if all_filters else [])
            collected.add(file.subject, item, value, " ".join(parts))
        file.lines = []  # the parsed lines are not needed any more

    used = set(collected.rows["subject"])
    subjects = pd.DataFrame([{"subject": s, **meta} for s, meta in subject_meta.items() if s in used])
    return collected.data(subjects, with_condition=runs == "all" or all_filters, options=options, source=str(root))


def _found_files(root: Path, tasks: Sequence[str] | None) -> tuple[list[_SamplesFile], dict[str, dict[str, Any]]]:
    """The samples files below ``root`` (of ``tasks`` only, when given), subjects named, and each subject's metadata."""
    paths = _samples_files(root)
    if not paths:
        raise DataError(
            f"{root}: no lm-evaluation-harness samples_*.jsonl files here or up to two folders below "
            "(run lm_eval with --log_samples)"
        )
    files: list[_SamplesFile] = []
    for file_path in paths:
        task, date_id = _parse_name(file_path)
        files.append(_SamplesFile(path=file_path, task=task, date_id=date_id, folder=file_path.parent))
    found_tasks = sorted({f.task for f in files})
    if tasks is not None:
        wanted = [tasks] if isinstance(tasks, str) else list(tasks)
        unknown = [t for t in wanted if t not in found_tasks]
        if unknown:
            raise DataError(f"{root}: no samples for task(s) {unknown}; the tasks found are {found_tasks}")
        files = [f for f in files if f.task in wanted]
    return files, _name_subjects(files, root)


def _name_subjects(files: list[_SamplesFile], root: Path) -> dict[str, dict[str, Any]]:
    """Set each file's subject and output type from its run's results; return each subject's folder and model_source."""
    results_by_folder: dict[Path, _Results] = {}
    subject_meta: dict[str, dict[str, Any]] = {}
    for file in files:
        results = results_by_folder.setdefault(file.folder, _Results(file.folder))
        run = results.for_run(file.date_id)
        file.subject = _subject_of(run, file.folder)
        if run is not None:
            configs = run[0].get("configs")
            config = configs.get(file.task) if isinstance(configs, dict) else None
            if isinstance(config, dict) and isinstance(config.get("output_type"), str):
                file.output_type = config["output_type"]
        subject_meta.setdefault(
            file.subject,
            {
                "folder": str(file.folder.relative_to(root)) if file.folder != root else ".",
                "model_source": str(run[0].get("model_source", "")) if run is not None else "",
            },
        )
    return subject_meta


def _line_score(
    file: _SamplesFile,
    number: int,
    line: dict[str, Any],
    *,
    metric: str,
    options: ReadOptions,
) -> float:
    """The score of one samples line, checked; errors name the file and line."""
    if "doc_id" not in line:
        raise DataError(f"{file.path}: line {number} has no 'doc_id' key")
    if metric not in line:
        raise DataError(f"{file.path}: line {number} has no '{metric}' key (the metric being read)")
    note = " (binary metrics must be 0/1, other metrics a fraction in [0, 1])"
    where = f"{file.path}: line {number} key '{metric}'"
    return checked_score(line[metric], where=where, options=options, note=note)


def _doc_key(
    file: _SamplesFile, number: int, line: dict[str, Any], *, filter_name: str, copies: dict[tuple[str, str], int]
) -> str:
    """The line's document id within its task: its ``doc_hash`` (numbered when repeated), else its ``doc_id``."""
    doc_hash = line.get("doc_hash")
    has_hash = isinstance(doc_hash, str) and bool(doc_hash)
    key = str(doc_hash) if has_hash else str(line["doc_id"])
    copy = copies[filter_name, key] = copies.get((filter_name, key), 0) + 1
    if copy > 1:
        if not has_hash:
            raise DataError(
                f"{file.path}: line {number} repeats doc_id {line['doc_id']} for filter "
                f"'{filter_name}'; each document must appear once per filter"
            )
        # a dataset holding the same document twice: the copies are numbered in file order
        log.warning(
            "%s: line %d repeats the document of an earlier line (doc_hash %s); it is kept as copy %d",
            file.path,
            number,
            key,
            copy,
        )
        key = f"{key}#{copy}"
    return key


def _add_document(
    items: dict[str, dict[str, Any]],
    seen_doc: dict[str, tuple[str, Path, int]],
    file: _SamplesFile,
    number: int,
    line: dict[str, Any],
    *,
    item: str,
) -> None:
    """Record the item's metadata on its first line; an error when a later line gives it another document."""
    doc_text = json.dumps(line.get("doc"), sort_keys=True, ensure_ascii=False, default=str)
    if item in seen_doc:
        earlier, earlier_path, earlier_line = seen_doc[item]
        if earlier != doc_text:
            raise DataError(
                f"{file.path}: line {number} gives item '{item}' a different document than "
                f"{earlier_path} line {earlier_line}; the runs used different data for the same doc_id "
                "(re-run them on the same dataset revision)"
            )
    else:
        seen_doc[item] = (doc_text, file.path, number)
        doc = line.get("doc")
        n_options = options_count(line, file.output_type)
        items[item] = {
            "item": item,
            "benchmark": file.task,
            "text": text_of(doc),
            "answer": answer_of(line.get("target")),
            "n_options": n_options if n_options is not None else pd.NA,
            "doc_id": str(line["doc_id"]),
        }


# Steps shared with irtbayes.data.io.leaderboard.


@dataclass
class Collected:
    """Responses gathered by a loader (long form, with a condition each) and the metadata of their items."""

    rows: dict[str, list[Any]] = field(
        default_factory=lambda: {"subject": [], "item": [], "response": [], "condition": []}
    )
    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, subject: str, item: str, response: float, condition: str) -> None:
        """One response."""
        self.rows["subject"].append(subject)
        self.rows["item"].append(item)
        self.rows["response"].append(response)
        self.rows["condition"].append(condition)

    def data(
        self,
        subjects: pd.DataFrame,
        *,
        with_condition: bool,
        options: ReadOptions,
        source: str,
    ) -> ResponseData:
        """The responses as :class:`~irtbayes.data.responses.ResponseData` (the ``condition`` column only
        ``with_condition``), read as ``options`` say."""
        return harness_responses(
            self.rows,
            list(self.items.values()),
            with_condition=with_condition,
            text_columns=("text", "answer"),
            options=options,
            source=source,
            subjects=subjects,
        )


def list_choices(path: str | Path) -> pd.DataFrame:
    """Every (task, filter) an lm-evaluation-harness folder logs, with its metrics: what ``filter=`` and
    ``metric=`` of :func:`load_lm_eval` can name.

    Parameters
    ----------
    path
        As for :func:`load_lm_eval`.

    Returns
    -------
    pandas.DataFrame
        One row per (task, filter): ``task``, ``filter``, ``metrics`` (comma-separated, as logged),
        ``default_metric`` (what ``metric=None`` reads, empty when the task needs one named), ``subjects``
        (the models that logged it, named as :func:`load_lm_eval` names them: one model run twice counts once) and
        ``documents`` (its lines in the first such file).

    Examples
    --------
    >>> choices = list_choices("tests/fixtures/lm_eval/lm_eval_dummy")
    >>> choices[["task", "filter", "default_metric", "subjects"]].values.tolist()
    [['fx_gen', 'flexible-extract', 'exact_match', 3],
     ['fx_gen', 'strict-match', 'exact_match', 3],
     ['fx_mc', 'none', 'acc', 3]]
    >>> choices.set_index("task").loc["fx_mc", "metrics"]
    'acc, acc_norm'
    """
    root = Path(path)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    if not _samples_files(root):
        raise DataError(f"{root}: no lm-evaluation-harness samples_*.jsonl files here or up to two folders below")
    files, _ = _found_files(root, None)  # subjects named as load_lm_eval names them: one model in two runs is one
    for file in files:
        task, date_id = file.task, file.date_id
        file.lines = _read_samples(file.path)
        for name in _logged_filters(file):
            lines = [(n, line) for n, line in file.lines if str(line["filter"]) == name]
            logged = [str(m) for m in lines[0][1].get("metrics", [])] if lines else []
            try:
                default = _metric_for(_SamplesFile(file.path, task, date_id, file.folder, lines=lines), None)
            except DataError:
                default = ""
            row = rows.setdefault(
                (task, name),
                {"task": task, "filter": name, "metrics": ", ".join(logged), "default_metric": default,
                 "names": set(), "documents": len(lines)},
            )  # fmt: skip
            row["names"].add(file.subject)
    table = pd.DataFrame(list(rows.values()))
    table.insert(4, "subjects", table.pop("names").map(len))
    return table.sort_values(["task", "filter"], ignore_index=True)
