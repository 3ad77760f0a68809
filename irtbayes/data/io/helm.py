"""HELM (``crfm-helm``) run folders.

``helm-run --suite S`` writes one folder per run under ``benchmark_output/runs/S/``, named after the run
entry (``simple_mcqa:model=simple_model1``), holding ``run_spec.json`` (scenario, adapter and model),
``scenario_state.json`` (every request and completion), ``per_instance_stats.json`` (the metrics of each
instance) and ``stats.json`` (aggregates); ``helm-summarize`` adds ``instances.json`` and display files.

:func:`load_helm` reads the per-instance stats of one run folder, one suite, or a whole ``runs/`` tree of
several suites as a :class:`~irtbayes.data.responses.ResponseData`:

- **subject**: ``adapter_spec.model`` from ``run_spec.json`` (e.g. ``openai/gpt2``), or the
  ``model_deployment`` when no model is recorded.
- **benchmark**: the run's first run group (``run_spec.json`` ``groups[0]``, e.g. ``mmlu``), else the run-entry
  name before ``:``.
- **item**: ``<scenario>/<instance_id>``, where ``<scenario>`` is the run-entry name before ``:`` plus the
  scenario arguments when there are any (``simple_mcqa/id60``, ``mmlu:subject=anatomy/id12``). HELM numbers
  instances within one scenario, so the arguments keep MMLU's subjects apart. Adapter settings (prompt
  method, model) are not part of the id: the same question asked of two models is one item.
- **condition**: the perturbation of the instance when the run used data augmentation: ``"original"`` for the
  unperturbed instance, otherwise the perturbation's name followed by its settings in brackets
  (``typos(prob=0.1)``; ``seed=`` appears when several seeds were drawn). The ``condition`` column is present
  only when some perturbation is present. A perturbed copy is never merged with the original: it is the same
  item under another condition, and a fit asks for one condition (``data.subset(conditions=["original"])``).

Suites: a ``runs/`` tree with several suites (``runs/v1``, ``runs/v2``, ...) is read as one data set, each
(subject, item, condition) from the one suite that scored it; the same subject scored on the same item (and
condition) in two suites is an error naming both run folders, to be settled by choosing suites (``suite=``,
``--suite``). Run folders of different models on one scenario give one item per instance, answered by each model.
- **response**: the ``mean`` of the per-instance stat named ``metric`` on the chosen split; when the run has
  several train trials (``num_train_trials > 1``), the mean over trials.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.core.files import read_json
from irtbayes.data.io.tabular import checked_folder, checked_score, harness_responses
from irtbayes.data.reading import ReadFields, ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = ["is_helm_folder", "load_helm"]

log = logging.getLogger(__name__)

#: Files whose presence marks a HELM run folder.
RUN_FILES: tuple[str, ...] = ("per_instance_stats.json", "run_spec.json", "scenario_state.json")
#: How many folder levels below ``path`` run folders are looked for: a run folder
#: ``benchmark_output/runs/<suite>/<run>`` is four levels below the folder holding ``benchmark_output``.
MAX_DEPTH = 4
UNPERTURBED = "original"
_PERTURBATION_FLAGS = ("name", "robustness", "fairness", "computed_on")


@dataclass
class _Run:
    folder: Path
    suite: str
    subject: str = ""
    benchmark: str = ""
    scenario: str = ""
    method: str = ""


def _run_folders(path: Path) -> list[Path]:
    """Folders at ``path`` or up to :data:`MAX_DEPTH` levels below it that hold a HELM run file, sorted."""
    found: set[Path] = set()
    for depth in range(MAX_DEPTH + 1):
        prefix = "*/" * depth
        for name in RUN_FILES:
            found.update(p.parent for p in path.glob(prefix + name) if p.is_file())
    return sorted(found)


def is_helm_folder(path: str | Path) -> bool:
    """True when ``path`` is (or holds, up to four levels down) a HELM run folder with ``per_instance_stats.json``.

    ``path`` may be a run folder, a suite folder (``benchmark_output/runs/<suite>``), ``benchmark_output/runs``,
    ``benchmark_output`` or the folder holding it.

    Examples
    --------
    >>> is_helm_folder("tests/fixtures/helm/benchmark_output"), is_helm_folder("tests/fixtures/pyirt")
    (True, False)
    """
    path = Path(path)
    if not path.is_dir():
        return False
    return any(any(path.glob("*/" * depth + "per_instance_stats.json")) for depth in range(MAX_DEPTH + 1))


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _condition(perturbation: Any) -> str:
    """A short label for a perturbation description; ``original`` for none."""
    if not perturbation:
        return UNPERTURBED
    if not isinstance(perturbation, dict) or "name" not in perturbation:
        return _format_value(perturbation)
    settings = {k: v for k, v in perturbation.items() if k not in _PERTURBATION_FLAGS and v is not None}
    name = str(perturbation["name"])
    if not settings:
        return name
    return name + "(" + ",".join(f"{k}={_format_value(v)}" for k, v in sorted(settings.items())) + ")"


def _read_run(folder: Path, suite: str) -> _Run:
    for name in ("run_spec.json", "per_instance_stats.json"):
        if not (folder / name).is_file():
            raise DataError(f"{folder}: HELM run folder without {name} (did the run finish?)")
    spec_path = folder / "run_spec.json"
    spec = read_json(spec_path)
    adapter = spec.get("adapter_spec")
    if not isinstance(adapter, dict):
        raise DataError(f"{spec_path}: no 'adapter_spec' object")
    subject = adapter.get("model") or adapter.get("model_deployment")
    if not isinstance(subject, str) or not subject.strip():
        raise DataError(f"{spec_path}: 'adapter_spec' has no 'model' (nor 'model_deployment')")
    spec_name = spec.get("name")
    run_name = spec_name if isinstance(spec_name, str) and spec_name else folder.name
    prefix = run_name.split(":", 1)[0]
    groups = spec.get("groups")
    benchmark = groups[0] if isinstance(groups, list) and groups and isinstance(groups[0], str) else prefix
    scenario_spec = spec.get("scenario_spec")
    args = scenario_spec.get("args") if isinstance(scenario_spec, dict) else None
    scenario = prefix
    if isinstance(args, dict) and args:
        scenario += ":" + ",".join(f"{k}={_format_value(v)}" for k, v in sorted(args.items()))
    return _Run(
        folder=folder,
        suite=suite,
        subject=subject.strip(),
        benchmark=benchmark,
        scenario=scenario,
        method=str(adapter.get("method", "")),
    )


def _instances(run: _Run) -> dict[str, dict[str, Any]]:
    """Instance metadata by id (the unperturbed version when there are several), from instances.json or
    scenario_state.json; empty when neither exists."""
    path = run.folder / "instances.json"
    if path.is_file():
        listed = read_json(path, top=list)
    else:
        path = run.folder / "scenario_state.json"
        if not path.is_file():
            log.info("%s: no instances.json or scenario_state.json; items get no text", run.folder)
            return {}
        state = read_json(path)
        states = state.get("request_states")
        if not isinstance(states, list):
            raise DataError(f"{path}: no 'request_states' list")
        listed = [s.get("instance") for s in states if isinstance(s, dict)]
    out: dict[str, dict[str, Any]] = {}
    for instance in listed:
        if not isinstance(instance, dict) or "id" not in instance:
            continue
        key = str(instance["id"])
        if key not in out or (out[key].get("perturbation") and not instance.get("perturbation")):
            out[key] = instance
    return out


def _item_meta(instance: dict[str, Any] | None, *, run: _Run) -> dict[str, Any]:
    if not instance:
        return {"text": pd.NA, "answer": pd.NA, "n_options": pd.NA}
    given = instance.get("input")
    text = given.get("text") if isinstance(given, dict) else given
    references = [r for r in instance.get("references") or [] if isinstance(r, dict)]
    correct = [
        str(r["output"].get("text", ""))
        for r in references
        if "correct" in (r.get("tags") or []) and isinstance(r.get("output"), dict)
    ]
    n_options = len(references) if run.method.startswith("multiple_choice") and references else pd.NA
    return {
        "text": text if isinstance(text, str) else pd.NA,
        "answer": " | ".join(correct) if correct else pd.NA,
        "n_options": n_options,
    }


def _stat_value(
    stat: dict[str, Any], *, path: Path, instance_id: str, metric: str, options: ReadOptions
) -> float | None:
    """The stat's mean, checked; None for a stat with count 0 (no value)."""
    if "mean" not in stat:
        if stat.get("count") == 0:
            return None
        raise DataError(f"{path}: instance '{instance_id}', stat '{metric}' has no 'mean'")
    where = f"{path}: instance '{instance_id}', stat '{metric}'"
    return checked_score(stat["mean"], where=where, options=options, holds="has mean", bools=False)


def _run_scores(
    run: _Run, *, metric: str, split: str | None, options: ReadOptions
) -> dict[tuple[str, str], list[float]]:
    """(instance_id, condition) -> the metric's values (one per train trial) for one run."""
    path = run.folder / "per_instance_stats.json"
    entries = read_json(path, top=list)
    if not entries:
        raise DataError(f"{path}: the list of per-instance stats is empty")
    scores: dict[tuple[str, str], list[float]] = {}
    names: set[str] = set()
    splits: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or "instance_id" not in entry:
            raise DataError(f"{path}: entry {index} has no 'instance_id'")
        instance_id = str(entry["instance_id"])
        stats = entry.get("stats")
        if not isinstance(stats, list):
            raise DataError(f"{path}: entry {index} (instance '{instance_id}') has no 'stats' list")
        for stat in stats:
            name = stat.get("name") if isinstance(stat, dict) else None
            if not isinstance(name, dict) or not isinstance(name.get("name"), str):
                raise DataError(f"{path}: entry {index} (instance '{instance_id}') has a stat without 'name.name'")
            stat_split = name.get("split")
            if stat_split is not None:
                splits.add(str(stat_split))
            if split is not None and stat_split != split:
                continue
            names.add(name["name"])
            if name["name"] != metric:
                continue
            perturbation = name.get("perturbation") or entry.get("perturbation")
            if isinstance(perturbation, dict) and perturbation.get("computed_on", "perturbed") != "perturbed":
                continue  # worst-case or original-side aggregates, not an instance's own score
            value = _stat_value(stat, path=path, instance_id=instance_id, metric=metric, options=options)
            if value is None:
                log.warning("%s: instance '%s', stat '%s' has count 0; treated as missing", path, instance_id, metric)
                continue
            scores.setdefault((instance_id, _condition(perturbation)), []).append(value)
    if split is not None and not names:
        raise DataError(
            f"{path}: no per-instance stats on split '{split}'; the splits are {sorted(splits)} "
            "(pass split=None for all)"
        )
    if metric not in names:
        raise DataError(
            f"{path}: no per-instance stat named '{metric}'"
            + (f" on split '{split}'" if split is not None else "")
            + f"; the metrics are {sorted(names)}"
        )
    return scores


def load_helm(
    path: str | Path,
    *,
    metric: str | Mapping[str, str] = "exact_match",
    split: str | None = "test",
    suite: str | Sequence[str] | None = None,
    options: ReadOptions | None = None,
    **fields: Unpack[ReadFields],
) -> ResponseData:
    """Load the per-instance results of a HELM suite as item-level responses.

    Parameters
    ----------
    path
        A run folder, a suite folder (``benchmark_output/runs/<suite>``), ``benchmark_output/runs``,
        ``benchmark_output`` or the folder that holds it; run folders are looked for up to four levels down.
    metric
        The per-instance stat to read (``name.name`` in ``per_instance_stats.json``): one name for every run, or
        a mapping from benchmark (run group) to stat name, with ``exact_match`` for the benchmarks it leaves
        out. A name a run does not have is an error listing the names it has.
    split
        Only stats on this split (``"test"``, ``"valid"``); ``None`` keeps every split.
    suite
        The suite or suites to read when ``path`` holds several (default: every suite; a subject scored on
        the same item in two of them is an error).
    options, **fields
        How scores are read (:class:`~irtbayes.data.reading.ReadOptions`, or its fields as keywords):
        ``scoring="binary"`` refuses means other than 0/1; ``"auto"`` and ``"fraction"`` keep scores in [0, 1];
        ``"ordinal"`` reads them as graded categories (codes 0..K-1), the same in every train trial unless binned:
        the stat's values that are ``categories``, in order; or increasing ``bins`` edges cutting scores into
        categories (below e1 -> 0, [e1, e2) -> 1, ..., from the last edge on -> ``len(bins)``); with neither,
        integers, such as a rating.

    Returns
    -------
    ResponseData
        ``responses`` with one row per (subject, item[, condition]); see the module notes for the ids.
        ``items`` has ``benchmark``, ``text`` (the instance input), ``answer`` (the correct references,
        joined by `` | ``), ``n_options`` (number of references, multiple-choice adapters only),
        ``instance_id`` and ``scenario``.

    Raises
    ------
    DataError
        No run folders; a run folder without ``run_spec.json`` or ``per_instance_stats.json``; broken JSON
        (file named); a stat without ``mean`` or with a mean outside [0, 1]; an unknown metric, split or suite;
        two runs (of one suite or of two) giving the same subject a score for the same item and condition,
        naming both run folders; one item id with different inputs.

    Examples
    --------
    A ``runs/`` tree of two suites, one model in each, on the same scenario:

    >>> import json
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data.io.helm import load_helm
    >>> runs = Path(tempfile.mkdtemp()) / "benchmark_output" / "runs"
    >>> for suite, model, scores in [("v1", "org/a", [1, 0]), ("v2", "org/b", [1, 1])]:
    ...     run = runs / suite / f"mmlu:model={model.replace('/', '_')}"
    ...     run.mkdir(parents=True)
    ...     spec = {"name": run.name, "adapter_spec": {"model": model}, "groups": ["mmlu"]}
    ...     _ = (run / "run_spec.json").write_text(json.dumps(spec))
    ...     stats = [
    ...         {"instance_id": f"id{i}", "stats": [{"name": {"name": "exact_match", "split": "test"}, "mean": x}]}
    ...         for i, x in enumerate(scores)
    ...     ]
    ...     _ = (run / "per_instance_stats.json").write_text(json.dumps(stats))
    >>> data = load_helm(runs)
    >>> list(data.subject_ids), list(data.item_ids), data.to_matrix().tolist()
    (['org/a', 'org/b'], ['mmlu/id0', 'mmlu/id1'], [[1.0, 0.0], [1.0, 1.0]])
    >>> list(load_helm(runs, suite="v2").subject_ids)
    ['org/b']
    """
    options = ReadOptions.of(options, fields, caller="load_helm")
    root = checked_folder(path, "a HELM run or suite folder")
    rows: list[dict[str, Any]] = []
    items: dict[str, dict[str, Any]] = {}
    provided: dict[tuple[str, str, str], Path] = {}
    read: dict[str, set[str]] = {}  # benchmark -> the metrics read
    for folder in _chosen_folders(root, suite):
        run = _read_run(folder, folder.parent.name)
        read.setdefault(run.benchmark, set()).add(run_metric := _metric_of(metric, run.benchmark))
        scores = _run_scores(run, metric=run_metric, split=split, options=options)
        instances = _instances(run)
        for (instance_id, condition), values in scores.items():
            item = f"{run.scenario}/{instance_id}"
            _claim(provided, run, item=item, condition=condition)
            _merge_item(
                items, run, item=item, instance_id=instance_id, instance=instances.get(instance_id), split=split
            )
            mean = _mean_score(values, run, instance_id=instance_id, metric=run_metric, options=options)
            rows.append({"subject": run.subject, "item": item, "response": mean, "condition": condition})
            if len(values) > 1:
                log.debug("%s: item '%s' averaged over %d train trials", folder, item, len(values))
    if not rows:
        raise DataError(f"{root}: no per-instance '{metric}' values in the runs found")
    data = _response_data(rows, items, options=options, source=str(root))
    return data.with_notes(_metric_note(read, split))  # which metric and split were read


def _metric_of(metric: str | Mapping[str, str], benchmark: str) -> str:
    """The metric read for ``benchmark``: ``metric``, or its entry in a mapping (default ``exact_match``)."""
    return metric.get(benchmark, "exact_match") if isinstance(metric, Mapping) else metric


def _metric_note(read: dict[str, set[str]], split: str | None) -> str:
    """The note saying which metric was read for each benchmark, and from which split.

    >>> _metric_note({"mmlu": {"exact_match"}}, "test")
    'metric read (test split): mmlu: exact_match (choose another with --metric)'
    """
    said = "; ".join(f"{bench}: {', '.join(sorted(names))}" for bench, names in sorted(read.items()))
    return f"metric read ({f'{split} split' if split else 'every split'}): {said} (choose another with --metric)"


def _chosen_folders(root: Path, suite: str | Sequence[str] | None) -> list[Path]:
    """The run folders below ``root`` of the suites chosen (every suite for None); errors when there are none."""
    folders = _run_folders(root)
    if not folders:
        raise DataError(
            f"{root}: no HELM run folders (per_instance_stats.json, run_spec.json) here or up to "
            f"{MAX_DEPTH} folders below"
        )
    suites = sorted({f.parent.name for f in folders})
    if suite is not None:
        wanted = [suite] if isinstance(suite, str) else list(suite)
        unknown = [s for s in wanted if s not in suites]
        if unknown:
            raise DataError(f"{root}: no suite '{unknown[0]}'; the suites are {suites}")
        folders = [f for f in folders if f.parent.name in wanted]
    return folders


def _claim(provided: dict[tuple[str, str, str], Path], run: _Run, *, item: str, condition: str) -> None:
    """Record that ``run`` scores its subject on (item, condition); an error naming both runs when one already did."""
    key = (run.subject, item, condition)
    if key in provided:
        first = provided[key]
        advice = (
            f"in suites '{first.parent.name}' and '{run.suite}'; choose suites with suite= (--suite)"
            if first.parent.name != run.suite
            else "load these runs separately (e.g. different adapter settings)"
        )
        raise DataError(
            f"{run.folder}: subject '{run.subject}' already has a score for item '{item}'"
            + (f" ({condition})" if condition != UNPERTURBED else "")
            + f" from {first}; {advice}"
        )
    provided[key] = run.folder


def _merge_item(
    items: dict[str, dict[str, Any]],
    run: _Run,
    *,
    item: str,
    instance_id: str,
    instance: dict[str, Any] | None,
    split: str | None,
) -> None:
    """Add the item's metadata to ``items``, or fill in an earlier entry's; an error when the inputs differ."""
    meta = _item_meta(instance, run=run)
    if item in items:
        earlier = items[item]
        if (
            instance is not None
            and not pd.isna(earlier["text"])
            and not pd.isna(meta["text"])
            and earlier["text"] != meta["text"]
        ):
            raise DataError(
                f"{run.folder}: item '{item}' has input {meta['text']!r} here but "
                f"{earlier['text']!r} in {earlier['_run']}"
            )
        if pd.isna(earlier["text"]) and not pd.isna(meta["text"]):
            earlier.update(meta)
    else:
        split_value = instance.get("split") if instance else split
        items[item] = {
            "item": item,
            "benchmark": run.benchmark,
            **meta,
            "instance_id": instance_id,
            "scenario": run.scenario,
            "split": split_value if split_value else pd.NA,
            "_run": run.folder,
        }


def _mean_score(
    values: list[float],
    run: _Run,
    *,
    instance_id: str,
    metric: str,
    options: ReadOptions,
) -> float:
    """The mean over train trials; an error when binary responses are required and it is not 0 or 1, or when
    ordinal categories (not bins) differ between trials."""
    mean = sum(values) / len(values)
    binned = options.scale is not None and bool(options.scale.edges)
    if options.ordinal and not binned and len(set(values)) > 1:
        raise DataError(
            f"{run.folder / 'per_instance_stats.json'}: instance '{instance_id}', stat '{metric}' takes the "
            f"categories {sorted(set(values))} over {len(values)} train trials; ordinal responses need one "
            "category per instance (cut the mean into categories with bins=[...]; --score-bins on the command line)"
        )
    if options.scoring == "binary" and mean not in (0, 1):
        raise DataError(
            f"{run.folder / 'per_instance_stats.json'}: instance '{instance_id}', stat "
            f"'{metric}' averages {mean:g} over {len(values)} train trials, but binary "
            "(0/1) responses were required; pass scoring='fraction' to keep the average"
        )
    return mean


def _response_data(
    rows: list[dict[str, Any]],
    items: dict[str, dict[str, Any]],
    *,
    options: ReadOptions,
    source: str,
) -> ResponseData:
    """The responses with their item table; a ``condition`` column only when some instance was perturbed."""
    perturbed = any(row["condition"] != UNPERTURBED for row in rows)
    return harness_responses(
        rows,
        [{k: v for k, v in item.items() if k != "_run"} for item in items.values()],
        with_condition=perturbed,
        text_columns=("text", "answer", "split"),
        options=options,
        source=source,
    )
