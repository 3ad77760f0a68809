"""lighteval details: one Parquet file per task and run, read without lighteval installed.

``lighteval ... --output-dir OUT --save-details`` writes, for a model named ``org/model``,
``OUT/results/org/model/results_<date>.json`` (``config_general.model_name`` names the model; ``results`` holds
the aggregate scores) and ``OUT/details/org/model/<date>/details_<task>_<date>.parquet``, one row per sample
(``EvaluationTracker.save_details``; ``<date>`` is the run's ISO time with ``-`` for ``:``). The task is lighteval's
full name: ``<task>|<few-shot count>`` (``mmlu:abstract_algebra|5``; before lighteval 0.13 with a suite in
front, ``leaderboard|mmlu:abstract_algebra|5``). The rows changed with lighteval 0.11:

- **lighteval >= 0.11**: columns ``doc`` (the sample: ``query``, ``choices``, ``gold_index``, ``id``, ...),
  ``model_response`` (``text``, ``logprobs``, ...) and ``metric`` (``{metric name: value}``).
- **earlier versions**: flat columns ``example`` (the query), ``full_prompt``, ``predictions``, ``gold``,
  ``choices``, ``gold_index``, ``metrics`` (``{metric name: value}``), ...; before lighteval 0.9 every column was
  written as the text of its Python value (``"{'acc': 1.0}"``), which is read back here. These rows carry no
  sample id: the samples are numbered by their row, and the texts of one number must agree across files.

:func:`load_lighteval` turns such a folder into a :class:`~irtbayes.data.responses.ResponseData`:

- **subject**: ``config_general.model_name`` of the run's ``results_<date>.json``; without one, the folder path
  below ``details/`` (``org/model``), and the notes say so.
- **benchmark**: the task without its few-shot count and suite (:func:`benchmark_of`:
  ``leaderboard|mmlu:abstract_algebra|5`` -> ``mmlu:abstract_algebra``), so that runs with other few-shot counts
  or suites are one benchmark; the notes say when the models ran it in several variants, and the item table's
  ``task`` column keeps the full name of the first run read.
- **item**: ``<benchmark>/<sample id>`` (the row number for the older files); the item's ``text`` is the
  sample's query, ``answer`` its gold choice(s), ``n_options`` the number of choices of a multiple-choice sample.
- **response**: one per-sample metric for each benchmark: the one ``metric=`` names (``NAME`` or
  ``TASK=NAME,...``), else the first of :data:`DEFAULT_METRICS` the benchmark logs, else its only metric; the
  notes say which was read where there were several. Booleans read as 0/1; scores must lie in [0, 1].
- Of several runs of one (model, benchmark), the newest is read, and the notes name the others.
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

import pandas as pd

from irtbayes.core.errors import DataError, listed
from irtbayes.core.files import read_json
from irtbayes.data.io.leaderboard import parquet_schema
from irtbayes.data.io.tabular import checked_folder, checked_score, harness_responses, newest_runs
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["DEFAULT_METRICS", "benchmark_of", "is_lighteval_folder", "load_lighteval", "partial_subjects"]

log = logging.getLogger(__name__)

#: The per-sample metric read by default: the first of these a benchmark logs (accuracy of a multiple-choice
#: sample, then the exact-match family of generative tasks, in lighteval's names).
DEFAULT_METRICS: tuple[str, ...] = (
    "acc", "acc_norm", "extractive_match", "em", "qem", "pem", "pqem", "exact_match", "quasi_exact_match",
    "prefix_exact_match", "prefix_quasi_exact_match", "loglikelihood_acc", "loglikelihood_acc_norm",
    "truthfulqa_mc1", "mc1",
)  # fmt: skip
_DETAILS = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.parquet$")
_FEWSHOT = re.compile(r"\|\d+$")


@dataclass
class _Sample:
    key: str  #: the sample id (lighteval >= 0.11) or the row number
    row: int
    text: str | None
    answer: str | None
    n_options: int | None
    metrics: dict[str, Any]


@dataclass
class _Run:
    path: Path
    task: str  #: lighteval's full task name, as in the file name
    date: str
    model_folder: str  #: the folder path below ``details/`` (``org/model``)
    subject: str = ""
    samples: list[_Sample] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return benchmark_of(self.task)


def benchmark_of(task: str) -> str:
    """The benchmark of a lighteval task name: the name without its few-shot count (``|5``) and its suite.

    >>> benchmark_of("leaderboard|mmlu:abstract_algebra|5"), benchmark_of("gsm8k|0"), benchmark_of("ifeval")
    ('mmlu:abstract_algebra', 'gsm8k', 'ifeval')
    """
    name = _FEWSHOT.sub("", task)
    return name.split("|", 1)[1] if "|" in name else name


def _details_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("details_*.parquet") if p.is_file() and _DETAILS.match(p.name))


def is_lighteval_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding lighteval details files (``details_<task>_<date>.parquet``, any depth).

    >>> is_lighteval_folder("tests/fixtures/lighteval"), is_lighteval_folder("tests/fixtures/leaderboard")
    (True, False)
    """
    path = Path(path)
    return path.is_dir() and bool(_details_files(path))


def _run_of(path: Path) -> _Run:
    """The run of one details file: its task and date from the name, its model from the folders above it."""
    match = _DETAILS.match(path.name)
    if match is None:
        raise DataError(f"{path}: not a lighteval details file name (details_<task>_<date>.parquet)")
    date_folder = path.parent
    details_root = next((p for p in date_folder.parents if p.name == "details"), None)
    if details_root is not None and date_folder.parent != details_root:
        model_folder = date_folder.parent.relative_to(details_root).as_posix()
    else:
        model_folder = date_folder.parent.name
    return _Run(path=path, task=match["task"], date=match["date"], model_folder=model_folder)


def _name_subjects(runs: list[_Run], notes: list[str]) -> None:
    """Each run's subject: ``config_general.model_name`` of its results file, else its model folder (noted)."""
    unnamed: set[str] = set()
    for run in runs:
        details_root = next((p for p in run.path.parents if p.name == "details"), None)
        results = details_root.parent / "results" / run.model_folder if details_root is not None else None
        name = _model_name(results, run.date) if results is not None else None
        run.subject = name or run.model_folder
        if not name:
            unnamed.add(run.model_folder)
    if unnamed:
        notes.append(
            f"no results_<date>.json with config_general.model_name for {listed(sorted(unnamed))}: "
            "the folder below details/ names the model"
        )


def _model_name(results: Path, date: str) -> str | None:
    """``config_general.model_name`` of the run's results file, else of the newest results file beside it."""
    files = sorted(results.glob("results_*.json")) if results.is_dir() else []
    if not files:
        return None
    own = results / f"results_{date}.json"
    content = read_json(own if own in files else files[-1])
    general = content.get("config_general")
    name = general.get("model_name") if isinstance(general, dict) else None
    return str(name).strip() if isinstance(name, str) and name.strip() else None


def _read_columns(path: Path, columns: list[str]) -> dict[str, list[Any]]:
    """Columns of a Parquet file (``doc.query`` reads one field of a struct, named ``query``) as Python lists."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=columns).to_pydict()
    except (OSError, pa.ArrowException) as err:
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None


def _read_samples(path: Path) -> list[_Sample]:
    """The samples of one details file, in either layout; an error naming the file when it is neither."""
    import pyarrow as pa

    schema = parquet_schema(path)
    names = list(schema.names)
    if "doc" in names and "metric" in names and pa.types.is_struct(schema.field("doc").type):
        samples = _new_samples(path, schema)
    elif "example" in names and "metrics" in names:
        samples = _old_samples(path, names)
    else:
        raise DataError(
            f"{path}: not a lighteval details file: no 'doc' and 'metric' columns (lighteval 0.11 on) nor "
            f"'example' and 'metrics' (earlier versions); the columns are {names}"
        )
    if not samples:
        raise DataError(f"{path}: the file has no rows")
    return samples


def _new_samples(path: Path, schema: Any) -> list[_Sample]:
    """Samples of lighteval >= 0.11: the ``doc`` struct's id, query, choices and gold index, the ``metric`` struct."""
    import pyarrow as pa

    doc_fields = {f.name for f in schema.field("doc").type}
    wanted = [f"doc.{name}" for name in ("id", "query", "choices", "gold_index") if name in doc_fields]
    response = schema.field("model_response").type if "model_response" in schema.names else None
    if response is not None and pa.types.is_struct(response) and "logprobs" in {f.name for f in response}:
        wanted.append("model_response.logprobs")
    columns = _read_columns(path, [*wanted, "metric"])
    rows = len(columns["metric"])
    ids = columns.get("id", [None] * rows)
    samples = []
    for row in range(rows):
        metrics = columns["metric"][row]
        choices = _listed(columns.get("choices", [None] * rows)[row])
        logprobs = _listed(columns.get("logprobs", [None] * rows)[row])
        key = str(ids[row]) if ids[row] not in (None, "") else str(row)
        samples.append(
            _Sample(
                key=key,
                row=row,
                text=_text(columns.get("query", [None] * rows)[row]),
                answer=_golds(choices, columns.get("gold_index", [None] * rows)[row]),
                n_options=len(choices) if len(choices) > 1 and len(logprobs) == len(choices) else None,
                metrics=metrics if isinstance(metrics, dict) else {},
            )
        )
    return samples


def _old_samples(path: Path, names: list[str]) -> list[_Sample]:
    """Samples of lighteval < 0.11: flat columns, written as the text of their Python values before 0.9."""
    wanted: list[str] = [c for c in ("example", "metrics", "gold", "choices", "predictions") if c in names]
    columns = _read_columns(path, wanted)
    rows = len(columns["metrics"])
    samples = []
    for row in range(rows):
        metrics = _python_value(columns["metrics"][row])
        if not isinstance(metrics, dict):
            raise DataError(f"{path}: row {row} column 'metrics' holds {columns['metrics'][row]!r}, not a mapping")
        choices = _listed(_python_value(columns.get("choices", [None] * rows)[row]))
        predictions = _listed(_python_value(columns.get("predictions", [None] * rows)[row]))
        gold = _listed(_python_value(columns.get("gold", [None] * rows)[row]))
        samples.append(
            _Sample(
                key=str(row),
                row=row,
                text=_text(columns["example"][row]),
                answer=" | ".join(str(g).strip() for g in gold) or None,
                n_options=len(choices) if len(choices) > 1 and len(predictions) == len(choices) else None,
                metrics=metrics,
            )
        )
    return samples


def _python_value(value: Any) -> Any:
    """A value written as the text of a Python value (lighteval < 0.9) read back; others as they are.

    >>> _python_value("{'acc': 1.0, 'em': True}"), _python_value(["A"]), _python_value("not python")
    ({'acc': 1.0, 'em': True}, ['A'], 'not python')
    """
    if not isinstance(value, str):
        return value
    for text in (value, re.sub(r"\bnan\b", "None", value)):  # a NaN score is written as nan
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return value


def _listed(value: Any) -> list[Any]:
    if value is None or isinstance(value, str):
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _golds(choices: list[Any], gold_index: Any) -> str | None:
    """The gold choice(s) of a sample, joined by `` | ``.

    >>> _golds(["4", "5"], 1), _golds(["a", "b", "c"], [0, 2]), _golds([], 0)
    ('5', 'a | c', None)
    """
    indices = [i for i in (_listed(gold_index) or []) if isinstance(i, int) and 0 <= i < len(choices)]
    return " | ".join(str(choices[i]).strip() for i in indices) or None


def _parse_metric(metric: str | None) -> dict[str, str]:
    """``metric=`` as {task: metric name}; one name for every task under the key ``""``.

    >>> _parse_metric("acc"), _parse_metric("gsm8k=em, mmlu:abstract_algebra=acc_norm"), _parse_metric(None)
    ({'': 'acc'}, {'gsm8k': 'em', 'mmlu:abstract_algebra': 'acc_norm'}, {})
    """
    if not metric or not metric.strip():
        return {}
    if "=" not in metric:
        return {"": metric.strip()}
    pairs = [part.partition("=") for part in metric.split(",") if part.strip()]
    if any(not task.strip() or not name.strip() for task, _, name in pairs):
        raise DataError(f"metric {metric!r}: expected NAME or TASK=NAME,TASK=NAME")
    return {task.strip(): name.strip() for task, _, name in pairs}


def _choose_metrics(root: Path, runs: list[_Run], metric: str | None, notes: list[str]) -> dict[Path, str]:
    """The metric read from each run: the one ``metric`` names for its task (or for every task), else the first of
    :data:`DEFAULT_METRICS` it logs, else its only one; the notes say which, where there was a choice. An error
    naming the file for a metric it does not log (listing those it does)."""
    asked = _parse_metric(metric)
    logged = {run.path: list(dict.fromkeys(m for sample in run.samples for m in sample.metrics)) for run in runs}
    everywhere = {name for names in logged.values() for name in names}
    if "" in asked and asked[""] not in everywhere:
        raise DataError(f"{root}: no task logs metric {asked['']!r}; the metrics are {listed(sorted(everywhere))}")
    chosen: dict[Path, str] = {}
    read: dict[str, dict[str, list[str]]] = {}  # benchmark -> metric -> subjects
    for run in runs:
        names = logged[run.path]
        own = asked.get(run.task, asked.get(run.benchmark))
        want = own or asked.get("")
        if not names:
            raise DataError(f"{run.path}: task {run.task!r} logs no metric")
        if want is not None and (want in names or own is not None or len(names) > 1):
            if want not in names:
                raise DataError(f"{run.path}: task {run.task!r} has no metric {want!r}; it logs {listed(names)}")
            chosen[run.path] = want
        else:
            chosen[run.path] = next((m for m in DEFAULT_METRICS if m in names), names[0])
            if len(names) > 1 and chosen[run.path] not in DEFAULT_METRICS:
                raise DataError(
                    f"{run.path}: task {run.task!r} logs several metrics ({listed(names)}) and none irtbayes reads "
                    "by default; choose one with metric= (--metric NAME, or --metric TASK=NAME,...)"
                )
            if len(names) > 1:
                notes.append(
                    f"{run.path.name}: metrics found: {listed(names)}; read {chosen[run.path]!r} (choose with --metric)"
                )
        read.setdefault(run.benchmark, {}).setdefault(chosen[run.path], []).append(run.subject)
    for benchmark, by_metric in read.items():
        if len(by_metric) > 1:
            parts = [f"{name!r} ({listed(subjects)})" for name, subjects in by_metric.items()]
            notes.append(f"{benchmark}: the models log different metrics; read {'; '.join(parts)}")
    return chosen


def load_lighteval(
    path: str | Path,
    *,
    metric: str | None = None,
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Read lighteval details: the ``--output-dir`` folder (holding ``details/`` and ``results/``), its
    ``details/`` folder, one model's folder or one details file.

    Parameters
    ----------
    path
        The folder (details files are looked for at any depth) or one ``details_<task>_<date>.parquet``.
    metric
        The per-sample metric to read: one name for every task (a task that logs one metric only reads that one),
        or ``TASK=NAME,...`` per task (the task as its benchmark, ``gsm8k``, or its full name, ``gsm8k|5``).
        Default: the first of :data:`DEFAULT_METRICS` a task logs, else its only metric.
    options, **fields
        How scores are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords), as in
        :meth:`~irtbayes.data.responses.ResponseData.from_long`: ``scoring="binary"`` refuses scores other than 0/1;
        ``"ordinal"`` reads graded scores (a judge's rating) as categories.

    Returns
    -------
    ResponseData
        One response per (model, sample): subjects the models' names, items ``<benchmark>/<sample id>``;
        ``items`` has ``benchmark``, ``task`` (lighteval's full name), ``text`` (the query), ``answer``,
        ``n_options`` and ``metric`` (the metric read); ``subjects`` has ``folder`` (below ``details/``).

    Raises
    ------
    DataError
        No details files; a file that is not Parquet or has neither layout's columns; a metric no task logs, or
        that a task does not log (the metrics it logs listed); a score outside [0, 1]; one sample id twice in a
        file; one item with different queries in two files. Each names the file.

    Examples
    --------
    >>> data = load_lighteval("tests/fixtures/lighteval/output")  # lighteval 0.13 (model-a, -b) and 0.8 (model-c)
    >>> data.subject_ids.tolist(), sorted(data.benchmarks)
    (['fixture-org/model-a', 'fixture-org/model-b', 'model-c'], ['gsm8k', 'mmlu:abstract_algebra'])
    >>> data.items.loc["gsm8k/1", ["task", "metric"]].tolist()  # model-c's gsm8k ran as leaderboard|gsm8k|5
    ['gsm8k|0', 'extractive_match, qem']
    """
    options = ReadOptions.of(options, fields, caller="load_lighteval")
    root = Path(path)
    if root.is_file():
        runs = [_run_of(root)]
    else:
        checked_folder(root, "a lighteval output folder or one details file")
        runs = [_run_of(p) for p in _details_files(root)]
        if not runs:
            raise DataError(
                f"{root}: no lighteval details files (details/<model>/<date>/details_<task>_<date>.parquet); "
                "run lighteval with --save-details"
            )
    notes: list[str] = []
    _name_subjects(runs, notes)
    runs = newest_runs(  # of several runs of one (model, benchmark), the newest
        runs,
        notes,
        who=lambda r: (r.subject, r.benchmark),
        when=lambda r: (r.date, r.path.name),
        name=lambda r: r.path.name,
        sort=True,
    )
    for run in runs:
        run.samples = _read_samples(run.path)
    chosen = _choose_metrics(root, runs, metric, notes)
    rows, items = _collect(runs, chosen, options=options)
    _variants(runs, notes)
    for message in partial_subjects(
        {r.subject: {q.benchmark: q.path for q in runs if q.subject == r.subject} for r in runs}
    ):
        log.warning(message)
        notes.append(message)
    subjects = pd.DataFrame(
        [{"subject": s, "folder": f} for s, f in dict((r.subject, r.model_folder) for r in runs).items()]
    )
    data = harness_responses(
        rows,
        list(items.values()),
        with_condition=False,
        text_columns=("task", "text", "answer", "metric"),
        options=options,
        source=str(root),
        subjects=subjects,
    )
    return data.with_notes(*notes)


def _collect(
    runs: list[_Run], chosen: dict[Path, str], *, options: ReadOptions
) -> tuple[dict[str, list[Any]], dict[str, dict[str, Any]]]:
    """The responses (long form) and the items' table; errors for repeated ids and items whose queries differ."""
    rows: dict[str, list[Any]] = {"subject": [], "item": [], "response": [], "condition": []}
    items: dict[str, dict[str, Any]] = {}
    first_file: dict[str, Path] = {}
    read: dict[str, dict[str, None]] = {}
    for run in runs:
        read.setdefault(run.benchmark, {})[chosen[run.path]] = None
    for run in runs:
        name = chosen[run.path]
        seen: dict[str, int] = {}
        for sample in run.samples:
            if sample.key in seen:
                raise DataError(
                    f"{run.path}: rows {seen[sample.key]} and {sample.row} both hold sample id {sample.key!r}"
                )
            seen[sample.key] = sample.row
            item = f"{run.benchmark}/{sample.key}"
            if item not in items:
                first_file[item] = run.path
                items[item] = {
                    "item": item,
                    "benchmark": run.benchmark,
                    "task": run.task,
                    "text": sample.text,
                    "answer": sample.answer,
                    "n_options": sample.n_options if sample.n_options is not None else pd.NA,
                    "metric": ", ".join(read[run.benchmark]),
                }
            elif sample.text is not None and items[item]["text"] not in (None, sample.text):
                raise DataError(
                    f"{run.path}: sample {sample.key!r} has another query than in {first_file[item]}; the runs used "
                    "different data for the same sample (re-run them on the same dataset revision)"
                )
            if sample.n_options is not None and pd.isna(items[item]["n_options"]):
                items[item]["n_options"] = sample.n_options
            if name not in sample.metrics:
                raise DataError(
                    f"{run.path}: row {sample.row} has no metric {name!r}; it logs {listed(sample.metrics)}"
                )
            value = sample.metrics[name]
            if value is None:  # not scored by this metric: a missing cell
                continue
            where = f"{run.path}: row {sample.row} (sample {sample.key!r}) metric {name!r}"
            rows["subject"].append(run.subject)
            rows["item"].append(item)
            rows["response"].append(checked_score(value, where=where, options=options))
            rows["condition"].append("")
    return rows, items


def _variants(runs: list[_Run], notes: list[str]) -> None:
    """Say which benchmarks were run as several tasks (other few-shot counts or suites) by different models."""
    tasks: dict[str, dict[str, None]] = {}
    for run in runs:
        tasks.setdefault(run.benchmark, {})[run.task] = None
    for benchmark, names in tasks.items():
        if len(names) > 1:
            notes.append(
                f"{benchmark} was run as {listed(names)} (other few-shot counts or suites), read as one benchmark"
            )


def partial_subjects(ran: Mapping[str, Mapping[str, Path]], *, what: str = "benchmarks") -> list[str]:
    """Sentences naming the subjects that ran only some of the benchmarks (their other cells are missing), with
    the files they have; ``ran`` maps each subject to {benchmark: file}.

    >>> partial_subjects({"m1": {"a": Path("a.json"), "b": Path("b.json")}, "m2": {"a": Path("a2.json")}})
    ['m2 ran only a of the 2 benchmarks (a2.json); its other cells are missing']
    """
    every = {benchmark for done in ran.values() for benchmark in done}
    return [
        f"{subject} ran only {listed(sorted(done))} of the {len(every)} {what} "
        f"({', '.join(str(done[b]) for b in sorted(done))}); its other cells are missing"
        for subject, done in sorted(ran.items())
        if set(done) != every
    ]
