"""Convert external data sets from their upstream files into folders that irtbayes reads by their manifest.

Usage::

    python scripts/convert_data.py UPSTREAM_DIR OUT_DIR [--only NAME ...] [--option NAME=VALUE ...]

``UPSTREAM_DIR`` holds one folder per upstream source (``openllm_tinybench_atlas/``, ``nlu_test_sets_vania2021/``,
``chembench_irt_on_bench/``, ``jailbreakbench_artifacts/``, ``xstest_completions/``, ``pyirt_sst3_fixture/``,
``classic_irt/``: the ``upstream`` key of each manifest in ``data/``). Each data set becomes ``OUT_DIR/<name>/``:
``responses.csv`` (one row per subject, one column per item, empty = missing), ``items.csv`` (``item``,
``benchmark`` and the item metadata), ``subjects.csv`` and ``dataset.json`` (the manifest from ``data/<name>/``,
with the options used). Then ``IRTBAYES_DATA_DIR=OUT_DIR`` makes ``irtbayes.data.registry.load_dataset(name)`` read it,
and ``irtbayes.data.io.load(OUT_DIR/<name>)`` reads the folder directly. A matrix rather than a long table, as the
NLU set (90 x 82,756) would take about 300 MB as a long CSV.

Scoring choices (``--option``, one data set at a time; ``irtbayes data list`` shows each set's options):

- ``jailbreakbench``: a subject is an (attack method, target LLM) pair and 1 means the target resisted the
  jailbreak. ``judge=artifact`` (each artifact's own judge) or ``judge=llama_guard`` (Llama Guard 1 verdicts,
  absent for DSN); ``unsubmitted=resisted`` (an attack that submitted no prompt counts as resisted, as
  JailbreakBench's attack success rate counts it) or ``unsubmitted=missing``.
- ``xstest``: 1 = complied with a safe prompt or refused an unsafe one; a partial refusal scores ``partial``
  (default 0.5); ``split=true`` gives two benchmarks, ``xstest_safe`` and ``xstest_unsafe``.
- ``nlu_vania2021``: ``tasks=rte,snli,...`` keeps those test sets (default ``all``).
- ``sat12``: ``omitted=wrong`` scores an omitted answer as wrong (mirt's ``key2binary``), ``omitted=missing``
  scores the raw answers against the key and leaves omissions missing.
- ``science``: ``threshold=3`` gives 1 for "agree" or "strongly agree" (category >= 3; 2 and 4 are allowed);
  ``threshold=none`` keeps the ordinal answer as the score (category - 1) / 3.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.core.files import atomic_dir, read_json, read_json_lines
from irtbayes.data.registry import manifests

#: (responses: subjects x items with NaN for missing, items: indexed by item id with ``benchmark``, subjects)
Tables = tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]


def read_csv(path: Path, **kwargs: Any) -> pd.DataFrame:
    """A CSV file; errors name the file."""
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        return pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path}: could not read the CSV file ({err})") from None


def need(frame: pd.DataFrame, columns: list[str], *, path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; the columns are {list(map(str, frame.columns))[:12]}")


def numbers(frame: pd.DataFrame, *, path: Path, binary: bool = True) -> pd.DataFrame:
    """The frame as floats; an error names the first cell that is not a number (or not 0/1 when ``binary``)."""
    try:
        values = frame.to_numpy(dtype="float64")
    except (TypeError, ValueError):
        converted = frame.apply(pd.to_numeric, errors="coerce")
        bad = (converted.isna() & frame.notna()).to_numpy()
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(
            f"{path}: row '{frame.index[r]}', column '{frame.columns[c]}' holds {frame.iat[r, c]!r}"
        ) from None
    wrong = ~np.isnan(values) & (values != 0) & (values != 1)
    if binary and wrong.any():
        r, c = (int(i[0]) for i in np.nonzero(wrong))
        raise DataError(
            f"{path}: row '{frame.index[r]}', column '{frame.columns[c]}' holds {values[r, c]:g}; expected 0 or 1"
        )
    return pd.DataFrame(values, index=frame.index, columns=frame.columns)


def write_matrix(matrix: pd.DataFrame, path: Path) -> None:
    """The matrix as CSV, ``subject`` then one column per item; missing cells empty."""
    values = matrix.to_numpy(dtype="float64")
    if np.isin(values[~np.isnan(values)], (0, 1)).all():  # fast path: 0/1 and missing only
        cells = np.array(["0", "1", ""])[np.where(np.isnan(values), 2, values).astype(int)]
    else:
        cells = np.where(np.isnan(values), "", values.astype(str))
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["subject", *map(str, matrix.columns)])
        for subject, row in zip(matrix.index, cells, strict=True):
            writer.writerow([str(subject), *row])


def numbered(prefix: str, n: int, width: int = 3) -> list[str]:
    return [f"{prefix}/{i:0{width}d}" for i in range(1, n + 1)]


# ---------------------------------------------------------------------------------------------------- sources

TINY = {"arc": ("arc_challenge", None), "gsm8k": ("gsm8k", None), "hellaswag": ("hellaswag", 4)}
TINY |= {"truthfulqa": ("truthfulqa", None), "winogrande": ("winogrande", 2)}  # file stem: (benchmark, options)


def tinybench(folder: Path) -> Tables:
    """The five tinyBenchmarks matrices joined over the Hugging Face model ids.

    The files cover different models (6,122 in all, 1,989 in all five): a model missing from a benchmark has
    missing cells there. Item ids are ``<benchmark>/<index in the leaderboard's evaluation split>``; ATLAS's own
    3PL estimates are kept as ``atlas_a1``, ``atlas_d``, ``atlas_g``.
    """
    blocks, items = [], []
    for stem, (label, n_options) in TINY.items():
        path = folder / f"response_matrix_tiny{stem}.csv"
        frame = read_csv(path, index_col=0)
        frame.index = frame.index.astype(str)
        block = numbers(frame, path=path)
        cols = [str(c).strip() for c in frame.columns]
        block.columns = [f"{label}/{c}" for c in cols]
        table = pd.DataFrame({"benchmark": label, "n_options": n_options, "source_index": cols}, index=block.columns)
        params_path = folder / f"irt_item_parameters_tiny{stem}.csv"
        if params_path.is_file():
            params = read_csv(params_path, index_col=0).rename(index=str)
            for col in ("a1", "d", "g"):
                if col in params.columns:
                    table[f"atlas_{col}"] = params[col].reindex(cols).to_numpy()
        blocks.append(block)
        items.append(table)
    matrix = pd.concat(blocks, axis=1, join="outer").sort_index()
    subjects = pd.DataFrame({"n_benchmarks": sum(b.reindex(matrix.index).notna().any(axis=1) for b in blocks)})
    return matrix, pd.concat(items), subjects.astype(int)


def nlu(folder: Path, *, tasks: str = "all") -> Tables:
    """Vania et al. (2021): 90 fine-tuned encoder checkpoints x 29 NLU test sets; benchmark = test set."""
    meta_path = folder / "task_metadata.csv"
    meta = read_csv(meta_path)
    need(meta, ["jiant_name", "taskname", "format", "year"], path=meta_path)
    meta = meta.set_index("jiant_name")
    names = list(meta.index) if tasks == "all" else [t.strip() for t in str(tasks).split(",")]
    unknown = [t for t in names if t not in meta.index]
    if unknown:
        raise DataError(f"{meta_path}: unknown task(s) {unknown}; known: {list(meta.index)}")
    blocks: list[pd.DataFrame] = []
    items: list[pd.DataFrame] = []
    for task in names:
        path = folder / f"{task}_irt_all_coded.csv"
        frame = read_csv(path, index_col="userid")
        if frame.index.duplicated().any():
            raise DataError(f"{path}: subject '{frame.index[frame.index.duplicated()][0]}' has more than one row")
        if blocks and not frame.index.sort_values().equals(blocks[0].index.sort_values()):
            differ = frame.index.symmetric_difference(blocks[0].index)
            raise DataError(f"{path}: its subjects differ from the other tasks' (e.g. {list(differ[:3])})")
        blocks.append(numbers(frame, path=path).reindex(blocks[0].index if blocks else frame.index))
        row = meta.loc[task]
        info = {"task_name": row["taskname"], "task_format": row["format"], "task_year": int(row["year"])}
        items.append(pd.DataFrame({"benchmark": task.replace("-", "_"), **info}, index=frame.columns))
    matrix = pd.concat(blocks, axis=1).sort_index()
    parts = [str(s).rpartition("_") for s in matrix.index]
    subjects = pd.DataFrame({"base_model": [p[0] for p in parts], "train_fraction": [p[2] for p in parts]})
    return matrix, pd.concat(items), subjects.set_axis(matrix.index)


def chembench(folder: Path) -> Tables:
    """ChemBench (irt-on-bench): the stored matrix is items x subjects; ChemBench's difficulty tag kept."""
    path = folder / "binary_matrix.csv"
    frame = read_csv(path, index_col=0)
    index = [str(i) for i in frame.index]
    matrix = numbers(frame, path=path).T
    matrix.columns = [f"chembench/{i}" for i in index]
    items = pd.DataFrame({"benchmark": "chembench", "source_index": index}, index=matrix.columns)
    tags_path = folder / "difficulty_dict.json"
    if tags_path.is_file():
        label = {str(i): str(tag) for tag, ids in read_json(tags_path).items() for i in ids}
        items["difficulty_label"] = [label.get(i) for i in index]
    return matrix, items, pd.DataFrame(index=matrix.index)


def jailbreakbench(folder: Path, *, judge: str = "artifact", unsubmitted: str = "resisted") -> Tables:
    """JailbreakBench: subjects = 'METHOD|target' pairs, items = the 100 behaviours, 1 = jailbreak resisted."""
    if judge not in {"artifact", "llama_guard"} or unsubmitted not in {"resisted", "missing"}:
        raise DataError(
            f"judge must be artifact or llama_guard ({judge!r}), unsubmitted resisted or missing ({unsubmitted!r})"
        )
    path = folder / "jailbreakbench_long.csv"
    frame = read_csv(path)
    column = "jailbroken" if judge == "artifact" else "jailbroken_llama_guard1"
    need(
        frame,
        ["method", "attack_type", "model", "behavior_index", "behavior", "category", "prompt_submitted", column],
        path=path,
    )
    frame["subject"] = frame["method"].astype(str) + "|" + frame["model"].astype(str)
    twice = frame.duplicated(["subject", "behavior_index"])
    if twice.any():
        first = frame.loc[twice].iloc[0]
        raise DataError(f"{path}: subject '{first['subject']}' has behaviour {first['behavior_index']} twice")
    resisted = 1.0 - numbers(frame[[column]], path=path)[column]
    if unsubmitted == "missing":
        resisted[~frame["prompt_submitted"].astype(str).str.lower().isin(["true", "1"])] = np.nan
    wide = frame.assign(resisted=resisted).pivot(index="subject", columns="behavior_index", values="resisted")
    behaviours = frame.drop_duplicates("behavior_index").set_index("behavior_index").sort_index()
    wide = wide.reindex(columns=behaviours.index).sort_index()
    wide.columns = [f"jailbreakbench/{i}" for i in behaviours.index]
    items = behaviours[["behavior", "category"]].set_axis(wide.columns).assign(benchmark="jailbreakbench")
    pairs = frame.drop_duplicates("subject").set_index("subject")[["method", "attack_type", "model"]]
    return wide, items, pairs.rename(columns={"model": "target"}).reindex(wide.index)


XSTEST_LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")


def xstest(folder: Path, *, partial: float = 0.5, split: bool = False) -> Tables:
    """XSTest: 5 LLM setups x 450 prompts; 1 = complied with a safe prompt or refused an unsafe one."""
    partial = float(partial)
    if not 0 <= partial <= 1:
        raise DataError(f"partial must lie in [0, 1], got {partial}")
    lpath, mpath = folder / "xstest_labels_long.csv", folder / "xstest_prompt_meta.csv"
    labels, meta = read_csv(lpath), read_csv(mpath)
    need(labels, ["id", "type", "model", "final_label"], path=lpath)
    need(meta, ["id", "type", "label", "focus", "note"], path=mpath)
    bad = ~labels["final_label"].isin(XSTEST_LABELS).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{lpath}: line {i + 2}: final_label {labels['final_label'].iloc[i]!r} is not one of {list(XSTEST_LABELS)}"
        )
    meta = meta.set_index("v2-" + meta["id"].astype(str))
    unknown = pd.Index(labels["id"].unique()).difference(meta.index)
    if len(unknown):
        raise DataError(f"{lpath}: prompt id(s) {list(unknown[:5])} are not in {mpath.name}")
    label_of = meta["label"].reindex(labels["id"]).to_numpy()
    if not set(label_of) <= {"safe", "unsafe"}:
        raise DataError(f"{mpath}: column 'label' must be 'safe' or 'unsafe', found {sorted(set(label_of))}")
    final = labels["final_label"].to_numpy()
    score = np.where(label_of == "safe", final == "1_full_compliance", final == "2_full_refusal").astype("float64")
    score[final == "3_partial_refusal"] = partial
    wide = labels.assign(score=score).pivot(index="model", columns="id", values="score")
    meta = meta.loc[[p for p in meta.index if p in wide.columns]]
    wide = wide[meta.index].set_axis([f"xstest/{p}" for p in meta.index], axis=1)
    items = pd.DataFrame(
        {
            "benchmark": ("xstest_" + meta["label"]).to_numpy() if split else "xstest",
            "prompt_type": meta["type"].to_numpy(),
            "prompt_label": meta["label"].to_numpy(),
            "focus": meta["focus"].to_numpy(),
            "note": meta["note"].to_numpy(),
        },
        index=wide.columns,
    )
    return wide, items, pd.DataFrame(index=wide.index)


def sst3(folder: Path) -> Tables:
    """py-irt's SST-3 fixture: 8 sentiment classifiers x 1,100 sentences (the item text)."""
    path = folder / "minitest.amortized.jsonlines"
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    records = []
    for n, rec in read_json_lines(path):
        if "subject_id" not in rec or not isinstance(rec.get("responses"), dict):
            raise DataError(f"{path} line {n}: expected an object with 'subject_id' and 'responses'")
        records.append(rec)
    if not records:
        raise DataError(f"{path}: no records")
    texts = list(dict.fromkeys(t for rec in records for t in rec["responses"]))
    column = {t: f"sst3/{j}" for j, t in enumerate(texts)}
    full = [str(rec["subject_id"]) for rec in records]
    short = [m.group(1) if (m := re.search(r"/ts\d+-([^/]+)/", s)) else s for s in full]
    ids = short if len(set(short)) == len(short) else full
    rows = [{column[t]: v for t, v in rec["responses"].items()} for rec in records]
    matrix = numbers(pd.DataFrame(rows, index=ids, columns=list(column.values())), path=path)
    items = pd.DataFrame({"benchmark": "sst3", "text": texts, "n_options": 3}, index=matrix.columns)
    return matrix, items, pd.DataFrame({"source_id": full}, index=ids)


def sat12(folder: Path, *, omitted: str = "wrong") -> Tables:
    """SAT12: 600 students x 32 grade-12 science items, scored with mirt's key."""
    if omitted not in {"wrong", "missing"}:
        raise DataError(f"omitted must be 'wrong' or 'missing', got {omitted!r}")
    if omitted == "wrong":
        path = folder / "sat12_scored.csv"
        frame = read_csv(path)
        matrix = numbers(frame.set_axis([f"line {i + 2}" for i in range(len(frame))]), path=path)
    else:
        path, kpath = folder / "sat12_raw.csv", folder / "sat12_key.csv"
        frame, key = read_csv(path), read_csv(kpath)
        need(key, ["item", "key"], path=kpath)
        key = key.set_index("item")["key"]
        missing = [c for c in frame.columns if c not in key.index]
        if missing:
            raise DataError(f"{kpath}: no key for item(s) {missing}")
        raw = numbers(frame, path=path, binary=False)
        matrix = (raw == key.reindex(frame.columns).to_numpy(dtype="float64")).astype("float64")
        matrix[(raw == 8) | raw.isna()] = np.nan
    matrix = matrix.set_axis(numbered("sat12", len(frame)))
    matrix.columns = [f"sat12/{str(c).strip().replace('Item.', 'item')}" for c in frame.columns]
    items = pd.DataFrame({"benchmark": "sat12", "n_options": 5}, index=matrix.columns)
    return matrix, items, pd.DataFrame(index=matrix.index)


def science(folder: Path, *, threshold: int | str | None = 3) -> Tables:
    """Science (Eurobarometer 38.1, via mirt): 392 respondents x 4 four-category attitude items."""
    path = folder / "science_mirt.csv"
    frame = read_csv(path)
    raw = numbers(frame.set_axis([f"line {i + 2}" for i in range(len(frame))]), path=path, binary=False)
    bad = (raw.notna() & ~raw.isin([1, 2, 3, 4])).to_numpy()
    if bad.any():
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(f"{path}: line {r + 2}, column '{frame.columns[c]}' holds {raw.iat[r, c]:g}; expected 1-4")
    if threshold is None or str(threshold).lower() == "none":
        matrix = (raw - 1) / 3
    elif str(threshold) in {"2", "3", "4"}:
        matrix = (raw >= int(threshold)).astype("float64").where(raw.notna())
    else:
        raise DataError(f"threshold must be 2, 3, 4 or none, got {threshold!r}")
    matrix = matrix.set_axis(numbered("science", len(frame))).set_axis([f"science/{c}" for c in frame.columns], axis=1)
    return matrix, pd.DataFrame({"benchmark": "science"}, index=matrix.columns), pd.DataFrame(index=matrix.index)


def verbagg(folder: Path) -> Tables:
    """VerbAgg (lme4): 316 respondents x 24 verbal-aggression items, 1 = "yes" or "perhaps" (lme4's ``r2``)."""
    path = folder / "verbagg_r2_wide.csv"
    frame = read_csv(path, index_col="id")
    matrix = numbers(frame, path=path)
    items = pd.DataFrame({"benchmark": "verbagg"}, index=list(frame.columns))
    subjects = pd.DataFrame(index=frame.index)
    long_path = folder / "verbagg_long.csv"
    if long_path.is_file():
        long = read_csv(long_path)
        if {"item", "btype", "situ", "mode"} <= set(long.columns):
            facets = long.drop_duplicates("item").set_index("item")[["btype", "situ", "mode"]]
            items = items.join(facets)
        if {"id", "Anger", "Gender"} <= set(long.columns):
            people = long.drop_duplicates("id").set_index("id")[["Anger", "Gender"]]
            subjects = people.rename(columns=str.lower).reindex(frame.index)
    ids = [f"verbagg/{i}" for i in frame.index]
    items.index = [f"verbagg/{c}" for c in frame.columns]
    return matrix.set_axis(ids).set_axis(items.index, axis=1), items, subjects.set_axis(ids)


CONVERTERS: dict[str, Callable[..., Tables]] = {
    "openllm_tinybench": tinybench,
    "nlu_vania2021": nlu,
    "chembench": chembench,
    "jailbreakbench": jailbreakbench,
    "xstest": xstest,
    "pyirt_sst3": sst3,
    "sat12": sat12,
    "science": science,
    "verbagg": verbagg,
}


# ---------------------------------------------------------------------------------------------------- writing


def convert(name: str, upstream: str | Path, out: str | Path, **options: Any) -> Path:
    """Convert one data set from ``upstream/<its upstream folder>`` into ``out/<name>/``; returns that folder."""
    registry = manifests()
    if name not in CONVERTERS or name not in registry:
        raise DataError(f"no converter for '{name}'; converters: {', '.join(CONVERTERS)}")
    manifest = registry[name]
    known = manifest.get("options", {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise DataError(f"{name}: unknown option(s) {unknown}; options: {', '.join(known) or 'none'}")
    source = Path(upstream) / str(manifest["upstream"])
    if not source.is_dir():
        raise DataError(f"{source}: no such folder (the upstream files of '{name}': {manifest.get('origin')})")
    matrix, items, subjects = CONVERTERS[name](source, **options)
    target = Path(out) / name
    with atomic_dir(target) as tmp:
        write_matrix(matrix, tmp / manifest["files"]["responses"])
        items.rename_axis("item").to_csv(tmp / manifest["files"]["items"])
        subjects.rename_axis("subject").to_csv(tmp / manifest["files"]["subjects"])
        copy = {**manifest, "options": {**known, **options}, "converted_from": str(source)}
        (tmp / "dataset.json").write_text(json.dumps(copy, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def _value(text: str) -> Any:
    """An option's value from the command line: a number, true/false, none, or the text."""
    lowered = text.strip().lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    if lowered == "none":
        return None
    try:
        return json.loads(text) if re.fullmatch(r"-?\d+(\.\d+)?", text.strip()) else text
    except ValueError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("upstream", help="folder holding one folder per upstream source")
    parser.add_argument("out", help="folder to write <name>/ into (then set IRTBAYES_DATA_DIR to it)")
    parser.add_argument("--only", nargs="+", choices=list(CONVERTERS), help="data sets to convert (default all)")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="a scoring choice")
    args = parser.parse_args(argv)
    names = args.only or list(CONVERTERS)
    options = dict(o.split("=", 1) for o in args.option)
    if options and len(names) != 1:
        parser.error("--option needs exactly one data set in --only")
    try:
        for name in names:
            source = Path(args.upstream) / str(manifests()[name]["upstream"])
            if not source.is_dir() and not args.only:
                print(f"{name}: skipped, {source} is absent")
                continue
            target = convert(name, args.upstream, args.out, **{k: _value(v) for k, v in options.items()})
            print(f"{name}: {target}")
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
