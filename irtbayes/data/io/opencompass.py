"""OpenCompass results with per-example details, read without OpenCompass installed.

``opencompass CONFIG --dump-eval-details`` writes, under its work folder (``outputs/default/<time>/``, the
time as ``%Y%m%d_%H%M%S``), ``predictions/<model_abbr>/<dataset_abbr>.json`` (``{"0": {"origin_prompt",
"prediction", "gold"}, "1": ...}``) and ``results/<model_abbr>/<dataset_abbr>.json``: the dataset's aggregate
scores and, with ``--dump-eval-details`` (the default from OpenCompass 0.5 on), a ``details`` entry per example
(``OpenICLEvalTask``). Its form depends on the version and the evaluator:

- **a list** (OpenCompass 0.4.1 on, ``BaseEvaluator.evaluate``): one entry per example, in the dataset's order,
  with ``example_abbr`` and each field of the evaluator's detail as a list over the ``n`` repeated runs of the
  dataset (``"correct": [true, false, true]``);
- **a mapping** ``{"0": {...}, "1": {...}}`` (earlier versions, evaluators that log a mapping, and the details
  OpenCompass formats itself for an evaluator that logs none, with a ``"type"`` of ``"GEN"`` or ``"PPL"``): one
  entry per example, a single value per field.

Whether an example was answered correctly is its ``correct``, ``is_correct`` or ``cascade_correct`` (the keys
OpenCompass counts for G-Pass@k, :data:`CORRECT_KEYS`): a boolean, a number in [0, 1], or a list of them over
repeated runs. :func:`load_opencompass` reads such a folder (``outputs/default``, one ``<time>`` folder of it, or
its ``results/`` folder) into a :class:`~irtbayes.data.responses.ResponseData`:

- **subject**: the model's abbreviation (``model_abbr``, the folder below ``results/``);
- **item**: ``<dataset_abbr>/<example index>`` (the index in the dataset, as the predictions file counts it);
  **benchmark**: the dataset's abbreviation. The item's ``text`` is the example's prompt (``origin_prompt`` of
  the details or the predictions file), ``answer`` its reference.
- **response**: 1 correct, 0 not; an example run ``n`` times is k correct of its n runs (``response`` k / n with
  ``trials`` n, fitted with the binomial likelihood: :mod:`irtbayes.data.trials`), and the notes say how many runs
  there were. Runs scored by a number strictly between 0 and 1 give their mean, one fractional score.
- Of several runs of one (model, dataset) in different ``<time>`` folders, the newest is read, and the notes name
  the others. A results file without ``details`` is an error asking to rerun with ``--dump-eval-details``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

import pandas as pd

from irtbayes.core.errors import DataError, listed
from irtbayes.core.files import read_json
from irtbayes.data.io.lighteval import partial_subjects
from irtbayes.data.io.tabular import checked_folder, checked_score, harness_responses, newest_runs
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["CORRECT_KEYS", "is_opencompass_folder", "load_opencompass"]

log = logging.getLogger(__name__)

#: The keys of a detail that say whether the example was answered correctly, in the order read.
CORRECT_KEYS = ("correct", "is_correct", "cascade_correct")
#: Keys of a detail (or of a predictions entry) that hold the example's prompt, and its reference answer.
PROMPT_KEYS = ("origin_prompt", "prompt")
ANSWER_KEYS = ("answer", "gold", "references", "refr", "reference")
_HEAD_BYTES = 65536
_OTHER_RESULTS = re.compile(r"^results_\d{4}-\d{2}-\d{2}T")  # lm-evaluation-harness and lighteval results files


@dataclass
class _Result:
    path: Path  #: ``<time>/results/<model_abbr>/<dataset_abbr>.json``
    model: str
    dataset: str
    run: str  #: the ``<time>`` folder's name

    @property
    def predictions(self) -> Path:
        return self.path.parents[2] / "predictions" / self.model / self.path.name


def _result_files(path: Path) -> list[Path]:
    """``results/<model_abbr>/<dataset_abbr>.json`` files in or below ``path`` (``path`` may be ``results/``)."""
    found = path.rglob("*.json") if path.name != "results" else path.glob("*/*.json")
    return sorted(
        p for p in found if p.is_file() and p.parent.parent.name == "results" and not _OTHER_RESULTS.match(p.name)
    )


def _looks_like_results(path: Path) -> bool:
    """An OpenCompass results file: its run folder holds ``predictions/``, or its head names ``details``."""
    if (path.parents[2] / "predictions").is_dir():
        return True
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES).decode("utf-8", errors="ignore")
    return '"details"' in head and '"config_general"' not in head


def is_opencompass_folder(path: str | Path) -> bool:
    """Whether ``path`` is an OpenCompass output folder: ``results/<model_abbr>/<dataset_abbr>.json`` files in or
    below it, beside a ``predictions/`` folder or holding ``details``.

    >>> is_opencompass_folder("tests/fixtures/opencompass"), is_opencompass_folder("tests/fixtures/lighteval")
    (True, False)
    """
    path = Path(path)
    return path.is_dir() and any(_looks_like_results(p) for p in _result_files(path))


def _details(result: _Result) -> list[tuple[int, dict[str, Any]]]:
    """The (example index, detail) pairs of a results file; an error naming it when it has none."""
    content = read_json(result.path)
    details = content.get("details")
    if details is None:
        error = f" (it records the error {content['error']!r})" if "error" in content else ""
        raise DataError(
            f"{result.path}: no per-example 'details'{error}; OpenCompass writes them when run with "
            "--dump-eval-details (the default from OpenCompass 0.5 on, unless it was set to False): rerun it with "
            "that flag"
        )
    if isinstance(details, list):
        pairs = list(enumerate(details))
    elif isinstance(details, dict):
        pairs = sorted((int(key), entry) for key, entry in details.items() if str(key).isdigit())
    else:
        raise DataError(f"{result.path}: 'details' is neither a list nor a mapping of examples")
    if not pairs:
        raise DataError(f"{result.path}: 'details' holds no examples")
    for index, entry in pairs:
        if not isinstance(entry, dict):
            raise DataError(f"{result.path}: details entry {index} is not a mapping")
    return pairs


def _trials(entry: dict[str, Any], *, where: str, options: ReadOptions) -> list[float]:
    """The correctness of one example in each of its runs, as numbers in [0, 1]."""
    key = next((k for k in CORRECT_KEYS if entry.get(k) is not None), None)
    if key is None:
        raise DataError(
            f"{where} has none of {', '.join(CORRECT_KEYS)} (its keys: {listed(entry)}); the dataset's evaluator "
            "does not record whether each example was answered correctly"
        )
    values = entry[key] if isinstance(entry[key], list) else [entry[key]]
    if not values:
        raise DataError(f"{where} key {key!r} is an empty list")
    # each run must be a score (ordinal scoring is refused before): 0/1 for binary scoring, else in [0, 1]
    return [checked_score(v, where=f"{where} key {key!r}", options=options) for v in values]


def _first(value: Any, replicated: bool) -> Any:
    """A field's value for the first run: the list's first element where every field lists the runs."""
    return value[0] if replicated and isinstance(value, list) and value else value


def _prompt_text(value: Any) -> str | None:
    """A prompt as text: a string, or a chat prompt's human turns (``{"role": "HUMAN", "prompt": ...}``).

    >>> _prompt_text([{"role": "SYSTEM", "prompt": "Be brief."}, {"role": "HUMAN", "prompt": "2+2?"}])
    '2+2?'
    """
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        if str(value.get("role", "HUMAN")).upper() not in ("HUMAN", "USER"):
            return None
        return _prompt_text(value.get("prompt", value.get("content")))
    if isinstance(value, list):
        parts = [_prompt_text(part) for part in value]
        return "\n".join(p for p in parts if p) or None
    return str(value)


def _answer_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _predictions(result: _Result) -> dict[str, Any]:
    """The predictions file of a result (``{"0": {"origin_prompt", "prediction", "gold"}, ...}``), or ``{}``."""
    return read_json(result.predictions) if result.predictions.is_file() else {}


def load_opencompass(
    path: str | Path,
    *,
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Read OpenCompass results with per-example details (``--dump-eval-details``).

    Parameters
    ----------
    path
        A work folder (``outputs/default``, whose ``<time>`` folders are searched), one ``<time>`` folder, or its
        ``results/`` folder.
    options, **fields
        How scores are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords):
        ``scoring="binary"`` refuses repeated runs that disagree; ``"auto"`` and ``"fraction"`` read them as k
        correct of n runs. ``"ordinal"`` is refused (with ``categories`` and ``bins``): OpenCompass records correct
        or not.

    Returns
    -------
    ResponseData
        One response per (model, example), with its ``trials`` (the runs) where a dataset was run several times:
        subjects the models' abbreviations, items ``<dataset_abbr>/<index>``; ``items`` has ``benchmark`` (the
        dataset), ``text``, ``answer`` and ``trials`` (the most runs of the example); ``subjects`` has ``run`` (the
        ``<time>`` folder of its first dataset).

    Raises
    ------
    DataError
        No results files; a results file without ``details`` (run without ``--dump-eval-details``); a detail
        without ``correct``, ``is_correct`` or ``cascade_correct``; a value that is not a score. Each names the file.

    Examples
    --------
    >>> data = load_opencompass("tests/fixtures/opencompass/outputs/default")
    >>> data.subject_ids.tolist(), sorted(data.benchmarks)
    (['hf_tiny_a', 'hf_tiny_b', 'hf_tiny_c'], ['demo_gsm8k', 'demo_mmlu'])
    >>> cell = data.long_frame().set_index(["subject", "item"]).loc[("hf_tiny_c", "demo_gsm8k/0")]
    >>> float(cell["response"]), int(cell["trials"]), data.response_kind  # 2 correct of 3 runs
    (0.6666666666666666, 3, 'counts')
    """
    options = ReadOptions.of(options, fields, caller="load_opencompass")
    root = checked_folder(path, "an OpenCompass work folder (outputs/default, one of its runs or its results/)")
    options.refuse_ordinal(str(root), recorded="OpenCompass details record whether each example was answered correctly")
    files = _result_files(root)
    if not files:
        raise DataError(
            f"{root}: no OpenCompass results (<time>/results/<model_abbr>/<dataset_abbr>.json) here or below"
        )
    notes: list[str] = []
    found = [_Result(p, p.parent.name, p.stem, p.parents[2].name) for p in files]
    results = newest_runs(  # of several runs of one (model, dataset), the newest by its <time> folder
        found,
        notes,
        who=lambda r: (r.model, r.dataset),
        when=lambda r: (r.run, str(r.path)),
        name=lambda r: f"the run {r.run}",
        sort=True,
    )
    rows: dict[str, list[Any]] = {"subject": [], "item": [], "response": [], "trials": [], "condition": []}
    items: dict[str, dict[str, Any]] = {}
    repeated: dict[str, dict[str, int]] = {}  # dataset -> model -> most runs of an example
    for result in results:
        for item, response, trials, runs_read in _read_result(result, items, options=options):
            rows["subject"].append(result.model)
            rows["item"].append(item)
            rows["response"].append(response)
            rows["trials"].append(trials)
            rows["condition"].append("")
            if runs_read > 1:
                runs = repeated.setdefault(result.dataset, {})
                runs[result.model] = max(runs.get(result.model, 1), runs_read)
    for dataset, runs in sorted(repeated.items()):
        models = ", ".join(f"{model} {n}" for model, n in sorted(runs.items()))
        notes.append(
            f"{dataset}: examples run several times (runs: {models}); each (model, example) is k correct of its n "
            "runs, fitted with the binomial likelihood (the mean of its runs where a run has a partial score)"
        )
    ran = {r.model: {q.dataset: q.path for q in results if q.model == r.model} for r in results}
    for message in partial_subjects(ran, what="datasets"):
        log.warning(message)
        notes.append(message)
    subjects = pd.DataFrame([{"subject": r.model, "run": r.run} for r in results]).drop_duplicates("subject")
    data = harness_responses(
        rows,
        list(items.values()),
        with_condition=False,
        text_columns=("text", "answer"),
        options=options,
        source=str(root),
        subjects=subjects,
    )
    return data.with_notes(*notes)


def _read_result(
    result: _Result, items: dict[str, dict[str, Any]], *, options: ReadOptions
) -> list[tuple[str, float, int, int]]:
    """(item, response, trials, runs) for each example of one results file: k correct of n runs (the share k / n,
    n trials) where each run is 0/1, else the mean of the runs as one trial; its items added to ``items``."""
    pairs = _details(result)
    replicated = all("example_abbr" in entry for _, entry in pairs)  # every field lists the runs
    predictions: dict[str, Any] | None = None
    out = []
    for index, entry in pairs:
        where = f"{result.path}: details entry {index}"
        trials = _trials(entry, where=where, options=options)
        item = f"{result.dataset}/{index}"
        share = sum(trials) / len(trials)
        if options.scoring == "binary" and share not in (0.0, 1.0):
            raise DataError(
                f"{where}: {len(trials)} runs, {sum(trials):g} correct: a share, but binary (0/1) responses were "
                "required; pass scoring='auto' to read k correct of n runs"
            )
        whole = all(value in (0.0, 1.0) for value in trials)
        out.append((item, share, len(trials) if whole else 1, len(trials)))
        if item in items:
            items[item]["trials"] = max(items[item]["trials"], len(trials))
            continue
        origin = entry.get("origin_prediction")  # the details OpenCompass formats for a PPL dataset
        where_prompt = origin if isinstance(origin, dict) and not any(k in entry for k in PROMPT_KEYS) else entry
        text = _prompt_text(_first(next((where_prompt[k] for k in PROMPT_KEYS if k in where_prompt), None), replicated))
        answer = _first(next((entry[k] for k in ANSWER_KEYS if k in entry), None), replicated)
        if text is None or answer is None:
            predictions = _predictions(result) if predictions is None else predictions
            predicted = predictions.get(str(index))
            if isinstance(predicted, dict):
                text = text or _prompt_text(next((predicted[k] for k in PROMPT_KEYS if k in predicted), None))
                answer = answer if answer is not None else predicted.get("gold")
        items[item] = {
            "item": item,
            "benchmark": result.dataset,
            "text": text,
            "answer": _answer_text(answer),
            "n_options": pd.NA,
            "trials": len(trials),
        }
    return out
