"""Registry of real item-level data sets: the ones shipped with irtbayes and the ones read from a data folder.

Embedded data sets live in the repository's ``data/`` folder, one folder each with the data files, a ``SOURCE.md``
(origin, licence, how derived, how to cite) and a ``dataset.json`` manifest that says how to load it:

- ``mmlu_pro``: MMLU-Pro, 29 LLMs x 12,032 questions (Apache-2.0). The default data set of ``irtbayes audit``.
- ``lsat6``, ``lsat7``: the classic Law School Admission Test sections, 1000 examinees x 5 items (mirt/ltm data).

External data sets are not copied into the repository (their licence is unstated, or only derived extracts exist).
The registry names their upstream origin and reads them from the folder named by the environment variable
``IRTBAYES_DATA_DIR`` (or the ``root=`` argument of :func:`load_dataset`), which holds one sub-folder per source:
``openllm_tinybench_atlas/``, ``nlu_test_sets_vania2021/``, ``chembench_irt_on_bench/``,
``jailbreakbench_artifacts/``, ``xstest_completions/``, ``pyirt_sst3_fixture/`` and ``classic_irt/``, each with the
files its loader below names.

Labels
------
Every item has a ``benchmark`` and a ``domain``. Benchmarks are the natural test sets of each source. Domains use
one vocabulary across entries:

=====================  ==========================================================================================
domain                 benchmarks
=====================  ==========================================================================================
stem                   MMLU-Pro math, physics, chemistry, biology, computer_science, engineering
humanities             MMLU-Pro law, philosophy, history
social_science         MMLU-Pro economics, psychology
professional           MMLU-Pro business, health, other (MMLU's own "other" group of subjects)
science                ARC (Open LLM Leaderboard and NLU), SAT12 (grade-12 science test)
math                   GSM8K
commonsense            HellaSwag, WinoGrande, COPA, CommonsenseQA, SocialIQA, PIQA, abductive NLI
truthfulness           TruthfulQA
nli                    RTE, SNLI, MNLI, CB, ANLI
reading_comprehension  BoolQ, MCScript, CosmosQA, QuAIL, MuTual, MuTual+, QAMR, NewsQA, SQuAD2.0, MRQA-NQ, Quoref
coreference_wsd        WSC, WiC
temporal               MC-TACO
argumentation          ARCT
chemistry              ChemBench
safety                 JailbreakBench, XSTest
sentiment              SST-3
aptitude               LSAT sections 6 and 7 (human examinees)
attitude               Science (Eurobarometer attitudes to science and technology; human respondents)
personality            VerbAgg (verbal aggression inclinations; human respondents)
=====================  ==========================================================================================

Subject ids are the upstream model ids (``Llama-2-7b-hf``, ``0-hero/Matter-0.1-7B``, ``PAIR|gpt-4-0125-preview``);
human respondents are numbered within their set (``lsat7/0001``, ``sat12/001``).

Scoring choices: a response is 1 when the subject did the desirable thing. In ``jailbreakbench`` a subject is an
(attack method, target LLM) pair and 1 means the target *resisted* the jailbreak (the judge did not flag the reply);
in ``xstest`` 1 means compliance on a safe prompt or refusal on an unsafe one, with partial refusals scored
``partial`` (default 0.5). Item ids are namespaced by source (``mmlu_pro/70``, ``hellaswag/30``), except the NLU
test sets, whose upstream ids already carry the task name (``cb_0``), so entries can be combined with
:meth:`~irtbayes.data.ResponseData.combine` without id clashes.
"""

from __future__ import annotations

import csv
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.data import ResponseData
from irtbayes.errors import DataError
from irtbayes.files import read_json, read_json_lines

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_ENV",
    "MANIFEST",
    "DatasetEntry",
    "data_root",
    "default_data_path",
    "is_dataset_folder",
    "list_datasets",
    "load_dataset",
    "load_folder",
]

log = logging.getLogger(__name__)

#: Environment variable naming the folder that holds the external (not shipped) data sets.
DATA_DIR_ENV = "IRTBAYES_DATA_DIR"
#: Environment variable overriding the default data set used by ``irtbayes audit`` with no arguments.
DEFAULT_DATA_ENV = "IRTBAYES_DEFAULT_DATA"
#: File name of a data set folder's manifest.
MANIFEST = "dataset.json"


def data_root() -> Path:
    """The repository's ``data/`` folder, which holds the embedded data sets."""
    return Path(__file__).resolve().parents[1] / "data"


def default_data_path() -> Path:
    """The data set ``irtbayes audit`` uses when given none: ``data/mmlu_pro``, or ``$IRTBAYES_DEFAULT_DATA``."""
    override = os.environ.get(DEFAULT_DATA_ENV)
    if override:
        return Path(override).expanduser()
    return data_root() / "mmlu_pro"


# ---------------------------------------------------------------------------------------------------- building


def _string_index(values: Sequence[Any] | pd.Index, *, name: str, source: str) -> pd.Index:
    index = pd.Index([str(v).strip() for v in values], dtype="str", name=name)
    if (index == "").any():
        raise DataError(f"{source}: a {name} id is blank (position {int(np.flatnonzero(index == '')[0])})")
    if index.duplicated().any():
        raise DataError(f"{source}: {name} id '{index[index.duplicated()][0]}' appears more than once")
    return index


def _assemble(
    values: np.ndarray,
    *,
    subject_ids: Sequence[Any] | pd.Index,
    items: pd.DataFrame,
    subjects: pd.DataFrame | None = None,
    source: str,
) -> ResponseData:
    """Build a :class:`ResponseData` from a dense (subject, item) matrix with NaN for missing cells.

    ``items`` is indexed by item id, in the matrix's column order, and holds ``benchmark`` and ``domain``;
    ``subjects`` (optional) is indexed by subject id. Subjects and items with no response are left out.
    Vectorised, so the 90 x 82,756 NLU matrix is built in well under a second.
    """
    values = np.asarray(values, dtype="float64")
    sids = _string_index(subject_ids, name="subject", source=source)
    iids = _string_index(items.index, name="item", source=source)
    if values.shape != (len(sids), len(iids)):
        raise DataError(f"{source}: {values.shape} matrix for {len(sids)} subjects and {len(iids)} items")
    present = ~np.isnan(values)
    bad = present & ((values < 0) | (values > 1))
    if bad.any():
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(f"{source}: subject '{sids[r]}', item '{iids[c]}' holds {values[r, c]:g}, outside [0, 1]")
    keep_s, keep_i = present.any(axis=1), present.any(axis=0)
    if not keep_s.all() or not keep_i.all():
        log.info(
            "%s: %d subject(s) and %d item(s) without responses left out",
            source,
            int((~keep_s).sum()),
            int((~keep_i).sum()),
        )
        values, present = values[keep_s][:, keep_i], present[keep_s][:, keep_i]
        sids, iids = sids[keep_s], iids[keep_i]
        items = items.iloc[np.flatnonzero(keep_i)]
    rows, cols = np.nonzero(present)
    responses = pd.DataFrame(
        {
            "subject": pd.Categorical.from_codes(rows, categories=sids),
            "item": pd.Categorical.from_codes(cols, categories=iids),
            "response": values[rows, cols],
        }
    )
    item_table = items.copy()
    item_table.index = iids
    for col in ("benchmark", "domain"):
        if col not in item_table.columns:
            item_table[col] = pd.NA
        item_table[col] = item_table[col].astype("string")
    item_table = item_table[
        ["benchmark", "domain", *(c for c in item_table.columns if c not in ("benchmark", "domain"))]
    ]
    if subjects is None:
        subject_table = pd.DataFrame(index=sids)
    else:
        subject_table = subjects.copy()
        subject_table.index = _string_index(subject_table.index, name="subject", source=source)
        unknown = sids.difference(subject_table.index)
        if len(unknown):
            raise DataError(f"{source}: subject(s) {list(unknown[:5])} have responses but no subject metadata")
        subject_table = subject_table.reindex(sids)
    subject_table.index.name = "subject"
    return ResponseData(responses=responses, items=item_table, subjects=subject_table, source=source)


def _need(path: Path, *, what: str) -> Path:
    if not path.is_file():
        raise DataError(f"{path}: no such file ({what})")
    return path


def _read_csv(path: Path, *, what: str, **kwargs: Any) -> pd.DataFrame:
    """Read a CSV with errors that name the file; refuse duplicate column names (pandas would rename them)."""
    _need(path, what=what)
    try:
        frame = pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path}: could not read the CSV file ({err})") from None
    with path.open(newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh), [])
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise DataError(f"{path}: column '{dup}' appears more than once in the header")
    return frame


def _read_matrix(path: Path, *, what: str, id_column: str) -> tuple[pd.Index, list[str], np.ndarray]:
    """Read a numeric matrix CSV whose first column holds row ids: (row ids, column names, values).

    Plain files (no quoting, no empty cells) are parsed with :func:`numpy.loadtxt`, several times faster than
    :func:`pandas.read_csv` on very wide files; anything else goes through pandas.
    """
    _need(path, what=what)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not a UTF-8 text file ({err})") from None
    if not lines:
        raise DataError(f"{path}: the file is empty")
    header = next(csv.reader([lines[0]]))
    if header[0] != id_column:
        raise DataError(f"{path}: the first column is '{header[0]}', expected '{id_column}'")
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise DataError(f"{path}: column '{dup}' appears more than once in the header")
    body = [line for line in lines[1:] if line]
    if not body:
        raise DataError(f"{path}: the file has a header but no rows")
    columns = [h.strip() for h in header[1:]]
    if not any('"' in line for line in lines):
        split = [line.partition(",") for line in body]
        try:
            values = np.loadtxt([p[2] for p in split], delimiter=",", dtype="float64", ndmin=2)
        except ValueError:
            values = None
        if values is not None and values.shape == (len(body), len(columns)):
            return pd.Index([p[0].strip() for p in split], dtype="str"), columns, values
    frame = _read_csv(path, what=what, index_col=0)
    return pd.Index(frame.index.astype(str), dtype="str"), columns, _numeric(frame, path=path)


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], *, path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; the columns are {list(map(str, frame.columns))[:12]}")


def _numeric(frame: pd.DataFrame, *, path: Path) -> np.ndarray:
    """A numeric matrix from a data frame, or an error naming the first non-numeric cell."""
    if all(pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t) for t in frame.dtypes):
        return frame.to_numpy(dtype="float64")
    for j, col in enumerate(frame.columns):
        converted = pd.to_numeric(frame[col], errors="coerce")
        bad = (converted.isna() & frame[col].notna()).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{path}: row '{frame.index[i]}', column '{col}' (column {j + 2}) holds {frame[col].iloc[i]!r}, "
                "not a number"
            )
        frame[col] = converted
    return frame.to_numpy(dtype="float64")


def _check_binary(values: np.ndarray, *, path: Path, rows: Sequence[Any], columns: Sequence[Any]) -> None:
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(f"{path}: row '{rows[r]}', column '{columns[c]}' holds {values[r, c]:g}; expected 0 or 1")


def _domains_of(benchmarks: pd.Series, groups: Mapping[str, Sequence[str]], *, source: str) -> pd.Series:
    lookup = {b: d for d, bs in groups.items() for b in bs}
    unknown = sorted(set(benchmarks.dropna()) - set(lookup))
    if unknown:
        raise DataError(f"{source}: benchmark(s) {unknown} have no domain in the domain groups {dict(groups)}")
    return benchmarks.map(lookup)


# ---------------------------------------------------------------------------------------------------- manifests


def _manifest_get(manifest: Mapping[str, Any], key: str, *, path: Path) -> Any:
    node: Any = manifest
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise DataError(f"{path}: missing key '{key}'")
        node = node[part]
    return node


def _read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    _need(path, what="the data set manifest")
    return read_json(path)


def _manifest_file(manifest: Mapping[str, Any], key: str, *, folder: Path, manifest_path: Path) -> Path:
    name = _manifest_get(manifest, f"files.{key}", path=manifest_path)
    path = folder / str(name)
    if not path.is_file():
        raise DataError(f"{manifest_path}: files.{key} names '{name}', but {path} does not exist")
    return path


def _load_manifest_folder(
    folder: Path, manifest: Mapping[str, Any] | None = None, *, manifest_path: Path | None = None
) -> ResponseData:
    """Load a folder described by a manifest (its own ``dataset.json``, or one given for an upstream layout)."""
    if manifest is None:
        manifest = _read_manifest(folder)
    mpath = manifest_path or folder / MANIFEST
    fmt = _manifest_get(manifest, "format", path=mpath)
    source = str(folder)
    if fmt == "wide":
        return _load_manifest_wide(folder, manifest, mpath=mpath, source=source)
    if fmt == "patterns":
        return _load_manifest_patterns(folder, manifest, mpath=mpath, source=source)
    raise DataError(f"{mpath}: format '{fmt}' is not one irtbayes knows (expected 'wide' or 'patterns')")


def _manifest_labels(items: pd.DataFrame, manifest: Mapping[str, Any], *, mpath: Path, source: str) -> pd.DataFrame:
    spec = manifest.get("items", {})
    if "benchmark" not in items.columns:
        items["benchmark"] = _manifest_get(manifest, "items.benchmark", path=mpath)
    renames = spec.get("benchmark_labels", {})
    items["benchmark"] = items["benchmark"].astype("string").replace(renames)
    if "domains" in manifest:
        items["domain"] = _domains_of(items["benchmark"], manifest["domains"], source=f"{source} ({mpath.name})")
    else:
        items["domain"] = _manifest_get(manifest, "items.domain", path=mpath)
    if "n_options" in spec:
        items["n_options"] = int(spec["n_options"])
    return items


def _load_manifest_wide(folder: Path, manifest: Mapping[str, Any], *, mpath: Path, source: str) -> ResponseData:
    subject_column = _manifest_get(manifest, "responses.subject_column", path=mpath)
    rpath = _manifest_file(manifest, "responses", folder=folder, manifest_path=mpath)
    frame = _read_csv(rpath, what="the response matrix")
    _require_columns(frame, [subject_column], path=rpath)
    frame = frame.set_index(subject_column)
    frame.columns = [str(c).strip() for c in frame.columns]
    spec = manifest.get("items", {})
    prefix = str(spec.get("id_prefix", ""))
    if "items" in manifest.get("files", {}):
        ipath = _manifest_file(manifest, "items", folder=folder, manifest_path=mpath)
        table = _read_csv(ipath, what="the item table")
        id_column = _manifest_get(manifest, "items.id_column", path=mpath)
        columns = dict(spec.get("columns", {}))
        _require_columns(table, [id_column, *columns], path=ipath)
        raw_ids = table[id_column].astype(str).str.strip()
        missing = pd.Index(raw_ids).difference(frame.columns)
        extra = frame.columns.difference(pd.Index(raw_ids))
        if len(missing) or len(extra):
            raise DataError(
                f"{rpath}: the response columns and {ipath.name}'s '{id_column}' differ: "
                f"{len(missing)} item(s) without a column (e.g. {list(missing[:3])}), "
                f"{len(extra)} column(s) not in the item table (e.g. {list(extra[:3])})"
            )
        items = pd.DataFrame({new: table[old].to_numpy() for old, new in columns.items()})
        items.index = prefix + raw_ids.to_numpy()
        frame = frame[raw_ids.tolist()]
    else:
        items = pd.DataFrame(index=[prefix + c for c in frame.columns])
    items = _manifest_labels(items, manifest, mpath=mpath, source=source)
    values = _numeric(frame, path=rpath)
    if manifest.get("responses", {}).get("scoring") == "binary":
        _check_binary(values, path=rpath, rows=frame.index, columns=frame.columns)
    subjects = None
    if "subjects" in manifest.get("files", {}):
        spath = _manifest_file(manifest, "subjects", folder=folder, manifest_path=mpath)
        stable = _read_csv(spath, what="the subject table")
        sid = manifest.get("subjects", {}).get("id_column", subject_column)
        _require_columns(stable, [sid], path=spath)
        subjects = stable.set_index(sid)
    return _assemble(values, subject_ids=frame.index, items=items, subjects=subjects, source=source)


def _load_manifest_patterns(folder: Path, manifest: Mapping[str, Any], *, mpath: Path, source: str) -> ResponseData:
    ppath = _manifest_file(manifest, "patterns", folder=folder, manifest_path=mpath)
    columns = list(_manifest_get(manifest, "patterns.item_columns", path=mpath))
    freq = _manifest_get(manifest, "patterns.frequency_column", path=mpath)
    table = _read_csv(ppath, what="the response patterns")
    _require_columns(table, [*columns, freq], path=ppath)
    counts = _numeric(table[[freq]].copy(), path=ppath)[:, 0]
    if np.isnan(counts).any() or (counts < 0).any() or (counts != np.round(counts)).any():
        row = int(np.flatnonzero(np.isnan(counts) | (counts < 0) | (counts != np.round(counts)))[0])
        raise DataError(f"{ppath}: line {row + 2}: '{freq}' must be a whole number >= 0, got {counts[row]:g}")
    patterns = _numeric(table[columns].copy(), path=ppath)
    _check_binary(patterns, path=ppath, rows=[f"line {i + 2}" for i in range(len(table))], columns=columns)
    values = np.repeat(patterns, counts.astype(int), axis=0)
    ids = list(manifest.get("items", {}).get("ids", columns))
    if len(ids) != len(columns):
        raise DataError(f"{mpath}: items.ids has {len(ids)} ids for {len(columns)} pattern columns")
    items = _manifest_labels(pd.DataFrame(index=ids), manifest, mpath=mpath, source=source)
    prefix = str(manifest["patterns"].get("subject_prefix", ""))
    width = max(4, len(str(len(values))))
    subject_ids = [f"{prefix}{i:0{width}d}" for i in range(1, len(values) + 1)]
    pattern_text = np.array(["".join(str(int(v)) if not np.isnan(v) else "." for v in row) for row in patterns])
    subjects = pd.DataFrame({"pattern": np.repeat(pattern_text, counts.astype(int))}, index=subject_ids)
    return _assemble(values, subject_ids=subject_ids, items=items, subjects=subjects, source=source)


# ---------------------------------------------------------------------------------------------------- external sets

_TINY_BENCHMARKS: dict[str, tuple[str, str, int | None]] = {
    # file stem: (benchmark label, domain, answer options)
    "arc": ("arc_challenge", "science", None),  # mostly 4 options, a few 3 or 5
    "gsm8k": ("gsm8k", "math", None),  # free-response
    "hellaswag": ("hellaswag", "commonsense", 4),
    "truthfulqa": ("truthfulqa", "truthfulness", None),  # multiple-true MC
    "winogrande": ("winogrande", "commonsense", 2),
}


def _load_tinybench(folder: Path, *, benchmarks: Sequence[str] | None = None, min_benchmarks: int = 1) -> ResponseData:
    """The five tinyBenchmarks response matrices joined into one data set over the Hugging Face model ids.

    The files cover different models: ARC 3,747, GSM8K 3,741, HellaSwag 3,467, TruthfulQA 4,635 and
    WinoGrande 4,680, 6,122 in all; 1,989 are in all five, 1,494 in four, 601 in three, 508 in two and 1,530 in
    only one (pairwise overlaps 2,754-3,374). A model missing from a benchmark keeps its other responses and has
    missing cells there (a third of the joined matrix is missing). ``min_benchmarks`` keeps only models present
    in at least that many of the chosen ``benchmarks``: ``min_benchmarks=5`` gives the complete 1,989 x 493 block.
    Item ids are ``<benchmark>/<index in the leaderboard's evaluation split>``; the upstream ``tiny*_item_ids.csv``
    lists are not used, as nothing documents how they pair with the matrix columns (three of them have more rows
    than the matrix has columns). ATLAS's own 3PL estimates are kept as ``atlas_a1``, ``atlas_d``, ``atlas_g``.
    """
    chosen = list(_TINY_BENCHMARKS) if benchmarks is None else [str(b) for b in benchmarks]
    labels = {v[0]: k for k, v in _TINY_BENCHMARKS.items()}
    stems = []
    for b in chosen:
        stem = labels.get(b, b)
        if stem not in _TINY_BENCHMARKS:
            raise DataError(f"{folder}: unknown benchmark '{b}'; known: {sorted(labels)}")
        stems.append(stem)
    if not 1 <= int(min_benchmarks) <= len(stems):
        raise DataError(f"{folder}: min_benchmarks must be between 1 and {len(stems)}, got {min_benchmarks}")
    blocks, item_tables = [], []
    for stem in stems:
        path = folder / f"response_matrix_tiny{stem}.csv"
        frame = _read_csv(path, what=f"the tinyBenchmarks {stem} response matrix", index_col=0)
        values = _numeric(frame, path=path)
        _check_binary(values, path=path, rows=frame.index, columns=frame.columns)
        label, domain, n_options = _TINY_BENCHMARKS[stem]
        cols = [str(c).strip() for c in frame.columns]
        table = pd.DataFrame(
            {
                "benchmark": label,
                "domain": domain,
                "n_options": pd.array([n_options] * len(cols), dtype="Int64"),
                "source_index": pd.array([int(c) for c in cols], dtype="Int64"),
            },
            index=[f"{label}/{c}" for c in cols],
        )
        ppath = folder / f"irt_item_parameters_tiny{stem}.csv"
        if ppath.is_file():
            params = _read_csv(ppath, what="ATLAS's item parameters", index_col=0)
            params.index = params.index.astype(str)
            for col in ("a1", "d", "g"):
                if col in params.columns:
                    table[f"atlas_{col}"] = params[col].reindex(cols).to_numpy()
        blocks.append((pd.Index(frame.index.astype(str), dtype="str"), values))
        item_tables.append(table)
    present = pd.concat([pd.Series(1, index=ids) for ids, _ in blocks], axis=1).fillna(0).sum(axis=1)
    subject_ids = present.index[present.to_numpy() >= int(min_benchmarks)].sort_values()
    n_items = sum(v.shape[1] for _, v in blocks)
    matrix = np.full((len(subject_ids), n_items), np.nan)
    start = 0
    for ids, values in blocks:
        pos = subject_ids.get_indexer(ids)
        kept = pos >= 0
        matrix[pos[kept], start : start + values.shape[1]] = values[kept]
        start += values.shape[1]
    subjects = pd.DataFrame({"n_benchmarks": present.reindex(subject_ids).astype(int).to_numpy()}, index=subject_ids)
    items = pd.concat(item_tables)
    return _assemble(matrix, subject_ids=subject_ids, items=items, subjects=subjects, source=str(folder))


_NLU_DOMAINS: dict[str, tuple[str, ...]] = {
    "nli": ("rte", "snli", "mnli", "cb", "adversarial-nli"),
    "commonsense": ("copa", "commonsenseqa", "socialiqa", "abductive-nli", "piqa", "hellaswag", "winogrande"),
    "reading_comprehension": (
        "boolq",
        "mcscript",
        "cosmosqa",
        "quail",
        "mutual",
        "mutual-plus",
        "qamr",
        "newsqa",
        "squad_v2",
        "mrqa-nq",
        "quoref",
    ),
    "science": ("arc-challenge", "arc-easy"),
    "coreference_wsd": ("wsc", "wic"),
    "temporal": ("mctaco",),
    "argumentation": ("arct",),
}


def _load_nlu(folder: Path, *, tasks: Sequence[str] | None = None) -> ResponseData:
    """Vania et al. (2021): 90 fine-tuned encoder checkpoints x 29 NLU test sets; benchmark = test set."""
    meta_path = folder / "task_metadata.csv"
    meta = _read_csv(meta_path, what="the NLU task list")
    _require_columns(meta, ["jiant_name", "taskname", "format", "year"], path=meta_path)
    meta = meta.set_index("jiant_name")
    names = list(meta.index) if tasks is None else [str(t) for t in tasks]
    unknown = [t for t in names if t not in meta.index]
    if unknown:
        raise DataError(f"{folder}: unknown task(s) {unknown}; known: {list(meta.index)}")
    domain_of = {t: d for d, ts in _NLU_DOMAINS.items() for t in ts}
    subject_ids: pd.Index | None = None
    blocks, item_tables = [], []
    for task in names:
        path = folder / f"{task}_irt_all_coded.csv"
        ids, columns, values = _read_matrix(path, what=f"the NLU responses of task '{task}'", id_column="userid")
        if ids.duplicated().any():
            raise DataError(f"{path}: subject '{ids[ids.duplicated()][0]}' has more than one row")
        if subject_ids is None:
            subject_ids = ids.sort_values()
        elif len(ids) != len(subject_ids) or not ids.isin(subject_ids).all():
            differ = ids.symmetric_difference(subject_ids)
            raise DataError(f"{path}: its subjects differ from the other tasks' (e.g. {list(differ[:3])})")
        values = values[ids.get_indexer(subject_ids)]
        _check_binary(values, path=path, rows=subject_ids, columns=columns)
        blocks.append(values)
        row = meta.loc[task]
        item_tables.append(
            pd.DataFrame(
                {
                    "benchmark": task.replace("-", "_"),
                    "domain": domain_of.get(task, pd.NA),
                    "task_name": row["taskname"],
                    "task_format": row["format"],
                    "task_year": int(row["year"]),
                },
                index=columns,
            )
        )
    assert subject_ids is not None
    items = pd.concat(item_tables)
    if items["domain"].isna().any():
        raise DataError(
            f"{folder}: task(s) {sorted(set(items.loc[items['domain'].isna(), 'benchmark']))} have no domain group"
        )
    parts = [s.rpartition("_") for s in subject_ids]
    subjects = pd.DataFrame(
        {"base_model": [p[0] for p in parts], "train_fraction": [p[2] for p in parts]}, index=subject_ids
    )
    return _assemble(np.hstack(blocks), subject_ids=subject_ids, items=items, subjects=subjects, source=str(folder))


def _load_chembench(folder: Path) -> ResponseData:
    """ChemBench (irt-on-bench): the stored matrix is items x subjects; one benchmark, ChemBench's difficulty tag."""
    path = folder / "binary_matrix.csv"
    frame = _read_csv(path, what="the ChemBench binary matrix", index_col=0)
    values = _numeric(frame, path=path)
    _check_binary(values, path=path, rows=frame.index, columns=frame.columns)
    index = [str(i) for i in frame.index]
    items = pd.DataFrame({"benchmark": "chembench", "domain": "chemistry"}, index=[f"chembench/{i}" for i in index])
    items["source_index"] = pd.array([int(i) for i in index], dtype="Int64")
    dpath = folder / "difficulty_dict.json"
    if dpath.is_file():
        tags = read_json(dpath)
        label = {str(i): str(tag) for tag, ids in tags.items() for i in ids}
        items["difficulty_label"] = pd.array([label.get(i) for i in index], dtype="string")
    return _assemble(values.T, subject_ids=list(frame.columns), items=items, source=str(folder))


def _load_jailbreakbench(folder: Path, *, judge: str = "artifact", unsubmitted: str = "resisted") -> ResponseData:
    """JailbreakBench: subjects = 'METHOD|target' pairs, items = the 100 behaviours, 1 = jailbreak resisted.

    A subject's ability is therefore the robustness of that target against that attack, and an item's difficulty
    how hard that behaviour is to refuse. Four pairs resist every behaviour (JailbreakChat against GPT-3.5, GPT-4
    and Llama-2, and PAIR against Llama-2, where 96 of the 100 attacks submitted no prompt).

    ``judge``: ``"artifact"`` (each artifact's own jailbreak judge) or ``"llama_guard"`` (Llama Guard 1 verdicts,
    absent for DSN). ``unsubmitted``: an attack that submitted no prompt counts as ``"resisted"`` (as
    JailbreakBench's attack success rate counts it) or is a ``"missing"`` cell.
    """
    if judge not in {"artifact", "llama_guard"}:
        raise DataError(f"{folder}: judge must be 'artifact' or 'llama_guard', got {judge!r}")
    if unsubmitted not in {"resisted", "missing"}:
        raise DataError(f"{folder}: unsubmitted must be 'resisted' or 'missing', got {unsubmitted!r}")
    path = folder / "jailbreakbench_long.csv"
    frame = _read_csv(path, what="the JailbreakBench long table")
    column = "jailbroken" if judge == "artifact" else "jailbroken_llama_guard1"
    needed = ["method", "attack_type", "model", "behavior_index", "behavior", "category", "prompt_submitted", column]
    _require_columns(frame, needed, path=path)
    frame["subject"] = frame["method"].astype(str) + "|" + frame["model"].astype(str)
    if frame.duplicated(["subject", "behavior_index"]).any():
        first = frame.loc[frame.duplicated(["subject", "behavior_index"])].iloc[0]
        raise DataError(f"{path}: subject '{first['subject']}' has behaviour {first['behavior_index']} twice")
    jailbroken = _numeric(frame[[column]].copy(), path=path)[:, 0]
    _check_binary(jailbroken[:, None], path=path, rows=frame.index, columns=[column])
    resisted = 1.0 - jailbroken
    submitted = frame["prompt_submitted"].astype(str).str.lower().isin(["true", "1"]).to_numpy()
    if unsubmitted == "missing":
        resisted[~submitted] = np.nan
    frame["resisted"] = resisted
    wide = frame.pivot(index="subject", columns="behavior_index", values="resisted").sort_index()
    behaviours = frame.drop_duplicates("behavior_index").set_index("behavior_index").sort_index()
    wide = wide.reindex(columns=behaviours.index)
    items = pd.DataFrame(
        {
            "benchmark": "jailbreakbench",
            "domain": "safety",
            "behavior": behaviours["behavior"].to_numpy(),
            "category": behaviours["category"].to_numpy(),
        },
        index=[f"jailbreakbench/{i}" for i in behaviours.index],
    )
    pairs = frame.drop_duplicates("subject").set_index("subject")[["method", "attack_type", "model"]]
    subjects = pairs.rename(columns={"model": "target"}).reindex(wide.index)
    return _assemble(
        wide.to_numpy(dtype="float64"), subject_ids=wide.index, items=items, subjects=subjects, source=str(folder)
    )


_XSTEST_LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")


def _load_xstest(folder: Path, *, partial: float = 0.5, split: bool = False) -> ResponseData:
    """XSTest: 5 LLM setups x 450 prompts; 1 = complied with a safe prompt or refused an unsafe one.

    A partial refusal scores ``partial`` on either kind of prompt (0 makes the score strict: only the fully
    desirable behaviour earns 1). ``split=True`` gives two benchmarks, ``xstest_safe`` and ``xstest_unsafe``.
    """
    partial = float(partial)
    if not 0 <= partial <= 1:
        raise DataError(f"{folder}: partial must lie in [0, 1], got {partial}")
    lpath, mpath = folder / "xstest_labels_long.csv", folder / "xstest_prompt_meta.csv"
    labels = _read_csv(lpath, what="the XSTest labels")
    meta = _read_csv(mpath, what="the XSTest prompt table")
    _require_columns(labels, ["id", "type", "model", "final_label"], path=lpath)
    _require_columns(meta, ["id", "type", "label", "focus", "note"], path=mpath)
    bad = ~labels["final_label"].isin(_XSTEST_LABELS).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{lpath}: line {i + 2}: final_label {labels['final_label'].iloc[i]!r} is not one of {list(_XSTEST_LABELS)}"
        )
    meta["pid"] = "v2-" + meta["id"].astype(str)
    meta = meta.set_index("pid")
    unknown = pd.Index(labels["id"].unique()).difference(meta.index)
    if len(unknown):
        raise DataError(f"{lpath}: prompt id(s) {list(unknown[:5])} are not in {mpath.name}")
    label_of = meta["label"].reindex(labels["id"]).to_numpy()
    if not set(label_of) <= {"safe", "unsafe"}:
        raise DataError(f"{mpath}: column 'label' must be 'safe' or 'unsafe', found {sorted(set(label_of))}")
    final = labels["final_label"].to_numpy()
    complied = final == "1_full_compliance"
    refused = final == "2_full_refusal"
    score = np.where(label_of == "safe", complied, refused).astype("float64")
    score[final == "3_partial_refusal"] = partial
    labels["score"] = score
    wide = labels.pivot(index="model", columns="id", values="score")
    wide = wide.reindex(columns=[p for p in meta.index if p in wide.columns])
    meta = meta.reindex(wide.columns)
    bench = ("xstest_" + meta["label"]).to_numpy() if split else "xstest"
    items = pd.DataFrame(
        {
            "benchmark": bench,
            "domain": "safety",
            "prompt_type": meta["type"].to_numpy(),
            "prompt_label": meta["label"].to_numpy(),
            "focus": meta["focus"].to_numpy(),
            "note": meta["note"].to_numpy(),
        },
        index=[f"xstest/{p}" for p in wide.columns],
    )
    return _assemble(wide.to_numpy(dtype="float64"), subject_ids=wide.index, items=items, source=str(folder))


def _load_sst3(folder: Path) -> ResponseData:
    """py-irt's SST-3 fixture: 8 sentiment classifiers x 1,100 sentences (the item text)."""
    path = folder / "minitest.amortized.jsonlines"
    _need(path, what="py-irt's JSON Lines fixture")
    records = []
    for n, rec in read_json_lines(path):
        if "subject_id" not in rec or not isinstance(rec.get("responses"), dict):
            raise DataError(f"{path} line {n}: expected an object with 'subject_id' and 'responses'")
        records.append(rec)
    if not records:
        raise DataError(f"{path}: no records")
    texts = list(dict.fromkeys(t for rec in records for t in rec["responses"]))
    position = {t: j for j, t in enumerate(texts)}
    matrix = np.full((len(records), len(texts)), np.nan)
    for i, rec in enumerate(records):
        cols = [position[t] for t in rec["responses"]]
        matrix[i, cols] = np.asarray(list(rec["responses"].values()), dtype="float64")
    full = [str(rec["subject_id"]) for rec in records]
    short = [m.group(1) if (m := re.search(r"/ts\d+-([^/]+)/", s)) else s for s in full]
    ids = short if len(set(short)) == len(short) else full
    _check_binary(matrix, path=path, rows=ids, columns=[f"sst3/{j}" for j in range(len(texts))])
    items = pd.DataFrame(
        {"benchmark": "sst3", "domain": "sentiment", "text": pd.array(texts, dtype="string"), "n_options": 3},
        index=[f"sst3/{j}" for j in range(len(texts))],
    )
    subjects = pd.DataFrame({"source_id": full}, index=ids)
    return _assemble(matrix, subject_ids=ids, items=items, subjects=subjects, source=str(folder))


def _load_sat12(folder: Path, *, omitted: str = "wrong") -> ResponseData:
    """SAT12: 600 students x 32 grade-12 science items, scored with mirt's key.

    ``omitted="wrong"`` scores an omitted answer (code 8) as wrong, as mirt's ``key2binary`` does (the scored file);
    ``omitted="missing"`` scores the raw answers against the key and leaves omissions as missing cells.
    """
    if omitted not in {"wrong", "missing"}:
        raise DataError(f"{folder}: omitted must be 'wrong' or 'missing', got {omitted!r}")
    if omitted == "wrong":
        path = folder / "sat12_scored.csv"
        frame = _read_csv(path, what="the scored SAT12 responses")
        values = _numeric(frame, path=path)
        _check_binary(values, path=path, rows=[f"line {i + 2}" for i in range(len(frame))], columns=frame.columns)
    else:
        path, kpath = folder / "sat12_raw.csv", folder / "sat12_key.csv"
        frame = _read_csv(path, what="the raw SAT12 answers")
        key = _read_csv(kpath, what="the SAT12 answer key")
        _require_columns(key, ["item", "key"], path=kpath)
        key = key.set_index("item")["key"]
        missing = [c for c in frame.columns if c not in key.index]
        if missing:
            raise DataError(f"{kpath}: no key for item(s) {missing}")
        raw = _numeric(frame, path=path)
        values = (raw == key.reindex(frame.columns).to_numpy(dtype="float64")).astype("float64")
        values[(raw == 8) | np.isnan(raw)] = np.nan
    names = [str(c).strip().replace("Item.", "item") for c in frame.columns]
    items = pd.DataFrame(
        {"benchmark": "sat12", "domain": "science", "n_options": 5}, index=[f"sat12/{n}" for n in names]
    )
    subject_ids = [f"sat12/{i:03d}" for i in range(1, len(frame) + 1)]
    return _assemble(values, subject_ids=subject_ids, items=items, source=str(folder))


def _load_science(folder: Path, *, threshold: int | None = 3) -> ResponseData:
    """Science (Eurobarometer 38.1, via mirt): 392 respondents x 4 four-category attitude items.

    ``threshold=3`` dichotomises: 1 = agree or strongly agree (category >= 3). ``threshold=None`` keeps the
    ordinal answer as a fractional score (category - 1) / 3.
    """
    path = folder / "science_mirt.csv"
    frame = _read_csv(path, what="the Science attitude answers")
    raw = _numeric(frame, path=path)
    bad = ~np.isnan(raw) & ~np.isin(raw, [1, 2, 3, 4])
    if bad.any():
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(f"{path}: line {r + 2}, column '{frame.columns[c]}' holds {raw[r, c]:g}; expected 1-4")
    if threshold is None:
        values = (raw - 1) / 3
    else:
        if int(threshold) not in {2, 3, 4}:
            raise DataError(f"{folder}: threshold must be 2, 3, 4 or None, got {threshold!r}")
        values = np.where(np.isnan(raw), np.nan, (raw >= int(threshold)).astype("float64"))
    items = pd.DataFrame({"benchmark": "science", "domain": "attitude"}, index=[f"science/{c}" for c in frame.columns])
    subject_ids = [f"science/{i:03d}" for i in range(1, len(frame) + 1)]
    return _assemble(values, subject_ids=subject_ids, items=items, source=str(folder))


def _load_verbagg(folder: Path) -> ResponseData:
    """VerbAgg (lme4): 316 respondents x 24 verbal-aggression items, 1 = "yes" or "perhaps" (lme4's ``r2``)."""
    path = folder / "verbagg_r2_wide.csv"
    frame = _read_csv(path, what="the VerbAgg r2 matrix")
    _require_columns(frame, ["id"], path=path)
    frame = frame.set_index("id")
    values = _numeric(frame, path=path)
    _check_binary(values, path=path, rows=frame.index, columns=frame.columns)
    items = pd.DataFrame(
        {"benchmark": "verbagg", "domain": "personality"}, index=[f"verbagg/{c}" for c in frame.columns]
    )
    subjects = None
    lpath = folder / "verbagg_long.csv"
    if lpath.is_file():
        long = _read_csv(lpath, what="the VerbAgg long table")
        if {"item", "btype", "situ", "mode"} <= set(long.columns):
            facets = long.drop_duplicates("item").set_index("item")[["btype", "situ", "mode"]]
            for col in facets.columns:
                items[col] = facets[col].reindex(frame.columns).to_numpy()
        if {"id", "Anger", "Gender"} <= set(long.columns):
            people = long.drop_duplicates("id").set_index("id")[["Anger", "Gender"]]
            subjects = people.rename(columns=str.lower).reindex(frame.index)
            subjects.index = [f"verbagg/{i}" for i in subjects.index]
    subject_ids = [f"verbagg/{i}" for i in frame.index]
    return _assemble(values, subject_ids=subject_ids, items=items, subjects=subjects, source=str(folder))


# ---------------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class DatasetEntry:
    """One registered data set: where it lives, what it holds and how to load it."""

    name: str
    title: str
    population: str
    n_subjects: int
    n_items: int
    domains: tuple[str, ...]
    licence: str
    origin: str
    folder: str  #: under ``data/`` when embedded, under ``$IRTBAYES_DATA_DIR`` when external
    embedded: bool
    signature: tuple[str, ...]  #: files that identify the folder's upstream layout
    loader: Callable[..., ResponseData] | None = None  #: None: load with the folder's manifest
    options: tuple[str, ...] = ()
    citation: str = ""


def _embedded_upstream(name: str) -> Callable[..., ResponseData]:
    """Load an upstream folder laid out like an embedded data set, using the embedded folder's manifest."""

    def load(folder: Path) -> ResponseData:
        home = data_root() / name
        manifest = _read_manifest(home)
        return _load_manifest_folder(folder, manifest, manifest_path=home / MANIFEST)

    return load


_CLASSIC = "github.com/cran/mirt 1.45.1 (commit 6665574afa7be2c24471ee102cb0c218e480b119)"
_E = DatasetEntry

_ENTRIES: tuple[DatasetEntry, ...] = (
    _E(
        name="mmlu_pro",
        title="MMLU-Pro per-question correctness (5-shot CoT)",
        population="29 LLMs",
        n_subjects=29,
        n_items=12032,
        domains=("stem", "humanities", "social_science", "professional"),
        licence="Apache-2.0",
        origin="github.com/TIGER-AI-Lab/MMLU-Pro eval_results (commit f418b116db00b065c2aea046518d8fcf74d39872)",
        folder="mmlu_pro",
        embedded=True,
        signature=("mmlu_pro_responses.csv", "mmlu_pro_items.csv"),
        citation="Wang et al. (2024), MMLU-Pro, NeurIPS 2024 Datasets and Benchmarks",
    ),
    _E(
        name="lsat6",
        title="Law School Admission Test, section 6",
        population="1000 human examinees",
        n_subjects=1000,
        n_items=5,
        domains=("aptitude",),
        licence="GPL (R package data)",
        origin=f"{_CLASSIC}, data/LSAT6.RData; ltm's LSAT",
        folder="lsat6",
        embedded=True,
        signature=("lsat6_patterns.csv",),
        citation="Bock & Lieberman (1970), Psychometrika 35, 179-197",
    ),
    _E(
        name="lsat7",
        title="Law School Admission Test, section 7",
        population="1000 human examinees",
        n_subjects=1000,
        n_items=5,
        domains=("aptitude",),
        licence="GPL (R package data)",
        origin=f"{_CLASSIC}, data/LSAT7.RData",
        folder="lsat7",
        embedded=True,
        signature=("lsat7_patterns.csv",),
        citation="Bock & Lieberman (1970), Psychometrika 35, 179-197",
    ),
    _E(
        name="openllm_tinybench",
        title="Open LLM Leaderboard v1 on the tinyBenchmarks items (ARC, GSM8K, HellaSwag, TruthfulQA, WinoGrande)",
        population="6,122 Hugging Face LLMs (1,989 in all five benchmarks)",
        n_subjects=6122,
        n_items=493,
        domains=("science", "math", "commonsense", "truthfulness"),
        licence="none stated",
        origin="github.com/Peiyu-Georgia-Li/ATLAS experiments/baseline_compare/tinybenchmark_calibration "
        "(commit c0bc19b33aaa11703b8258377abb367533b8a824); metabench's scrape of the Open LLM Leaderboard",
        folder="openllm_tinybench_atlas",
        embedded=False,
        loader=_load_tinybench,
        signature=("response_matrix_tinyarc.csv",),
        options=("benchmarks", "min_benchmarks"),
        citation="Polo et al. (2024), tinyBenchmarks: evaluating LLMs with fewer examples, ICML 2024; ATLAS",
    ),
    _E(
        name="nlu_vania2021",
        title="29 NLU test sets (Comparing Test Sets with Item Response Theory)",
        population="90 fine-tuned encoder checkpoints (18 models x 5 training sizes)",
        n_subjects=90,
        n_items=82756,
        domains=tuple(_NLU_DOMAINS),
        licence="none stated",
        origin="github.com/nyu-mll/nlu-test-sets data/*_irt_all_coded.csv "
        "(commit 9b91bc46621eaa4859c899fc4f9f37bac88e6129)",
        folder="nlu_test_sets_vania2021",
        embedded=False,
        loader=_load_nlu,
        signature=("task_metadata.csv", "snli_irt_all_coded.csv"),
        options=("tasks",),
        citation="Vania et al. (2021), Comparing Test Sets with Item Response Theory, ACL 2021",
    ),
    _E(
        name="chembench",
        title="ChemBench chemistry questions (all-correct metric)",
        population="21 LLMs and one agent system",
        n_subjects=22,
        n_items=2854,
        domains=("chemistry",),
        licence="MIT",
        origin="github.com/lamalab-org/irt-on-bench results/binary_matrix.csv "
        "(commit a914cea87f9577dafdc9381b1cbfa685007ccbeb)",
        folder="chembench_irt_on_bench",
        embedded=False,
        loader=_load_chembench,
        signature=("binary_matrix.csv",),
        citation="Mirza et al. (2024), Are large language models superhuman chemists? (ChemBench)",
    ),
    _E(
        name="jailbreakbench",
        title="JailbreakBench attack artifacts; 1 = jailbreak resisted",
        population="18 (attack method, target LLM) pairs",
        n_subjects=18,
        n_items=100,
        domains=("safety",),
        licence="MIT",
        origin="github.com/JailbreakBench/artifacts attack-artifacts (commit 909e68c01d94222b8ad2e397a017e2e12e2adb73)",
        folder="jailbreakbench_artifacts",
        embedded=False,
        loader=_load_jailbreakbench,
        signature=("jailbreakbench_long.csv",),
        options=("judge", "unsubmitted"),
        citation="Chao et al. (2024), JailbreakBench, NeurIPS 2024 Datasets and Benchmarks",
    ),
    _E(
        name="xstest",
        title="XSTest exaggerated safety; 1 = complied with a safe prompt or refused an unsafe one",
        population="5 LLM setups",
        n_subjects=5,
        n_items=450,
        domains=("safety",),
        licence="CC BY 4.0",
        origin="github.com/paul-rottger/exaggerated-safety model_completions "
        "(commit d7bb5bd738c1fcbc36edd83d5e7d1b71a3e2d84d)",
        folder="xstest_completions",
        embedded=False,
        loader=_load_xstest,
        signature=("xstest_labels_long.csv",),
        options=("partial", "split"),
        citation="Röttger et al. (2024), XSTest, NAACL 2024",
    ),
    _E(
        name="pyirt_sst3",
        title="SST-3 sentiment dev sentences (py-irt test fixture)",
        population="8 sentiment classifiers",
        n_subjects=8,
        n_items=1100,
        domains=("sentiment",),
        licence="MIT",
        origin="github.com/nd-ball/py-irt test_fixtures/minitest.amortized.jsonlines "
        "(commit 51a74910c449a2e5f721cef81f1e73306350ce44)",
        folder="pyirt_sst3_fixture",
        embedded=False,
        loader=_load_sst3,
        signature=("minitest.amortized.jsonlines",),
        citation="Lalor & Rodriguez (2023), py-irt, INFORMS Journal on Computing; Socher et al. (2013), SST",
    ),
    _E(
        name="sat12",
        title="SAT12 grade-12 science test, scored with mirt's key",
        population="600 human students",
        n_subjects=600,
        n_items=32,
        domains=("science",),
        licence="GPL (R package data)",
        origin=f"{_CLASSIC}, data/SAT12.RData",
        folder="classic_irt",
        embedded=False,
        loader=_load_sat12,
        signature=("sat12_scored.csv",),
        options=("omitted",),
        citation="mirt's SAT12, from the TESTFACT manual (Wood et al., 2003)",
    ),
    _E(
        name="science",
        title="Attitudes to science and technology (Eurobarometer 38.1), dichotomised at 'agree'",
        population="392 human respondents",
        n_subjects=392,
        n_items=4,
        domains=("attitude",),
        licence="GPL (R package data)",
        origin=f"{_CLASSIC}, data/Science.RData",
        folder="classic_irt",
        embedded=False,
        loader=_load_science,
        signature=("science_mirt.csv",),
        options=("threshold",),
        citation="Karlheinz & Melich (1992), Euro-Barometer 38.1; the ltm and mirt R packages",
    ),
    _E(
        name="verbagg",
        title="Verbal aggression inclinations (r2: yes or perhaps)",
        population="316 human respondents",
        n_subjects=316,
        n_items=24,
        domains=("personality",),
        licence="GPL (R package data)",
        origin="github.com/cran/lme4 1.1-37 (commit 79c411060a27b934ee4d541bdb983ea4db7269b2), data/VerbAgg.rda",
        folder="classic_irt",
        embedded=False,
        loader=_load_verbagg,
        signature=("verbagg_r2_wide.csv",),
        citation="De Boeck & Wilson (2004), Explanatory Item Response Models, Springer",
    ),
)

_REGISTRY: dict[str, DatasetEntry] = {e.name: e for e in _ENTRIES}


def _entry(name: str) -> DatasetEntry:
    if name not in _REGISTRY:
        raise DataError(f"unknown data set '{name}'; known data sets: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def _external_root(root: str | Path | None) -> Path | None:
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env).expanduser() if env else None


def _folder_of(entry: DatasetEntry, root: str | Path | None) -> Path:
    if entry.embedded:
        folder = data_root() / entry.folder
        if not (folder / MANIFEST).is_file():
            raise DataError(
                f"{folder}: the embedded data set '{entry.name}' is missing (no {MANIFEST}); "
                "reinstall irtbayes from its source tree"
            )
        return folder
    base = _external_root(root)
    if base is None:
        raise DataError(
            f"data set '{entry.name}' is not shipped with irtbayes: set the environment variable {DATA_DIR_ENV} "
            f"(or pass root=) to a folder holding '{entry.folder}/' with the upstream files from {entry.origin}"
        )
    folder = base / entry.folder
    if not folder.is_dir():
        raise DataError(
            f"{folder}: no such folder for data set '{entry.name}'; {DATA_DIR_ENV} (or root=) must name a folder "
            f"holding '{entry.folder}/' with the upstream files from {entry.origin}"
        )
    return folder


def _check_options(entry: DatasetEntry, options: Mapping[str, object]) -> None:
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        accepted = ", ".join(entry.options) if entry.options else "none"
        raise DataError(f"data set '{entry.name}': unknown option(s) {unknown}; accepted options: {accepted}")


def _load_entry(entry: DatasetEntry, folder: Path, options: Mapping[str, Any]) -> ResponseData:
    _check_options(entry, options)
    if entry.loader is not None:
        return entry.loader(folder, **options)
    if (folder / MANIFEST).is_file():
        return _load_manifest_folder(folder)
    return _embedded_upstream(entry.name)(folder)


def list_datasets(*, root: str | Path | None = None) -> pd.DataFrame:
    """The registered data sets.

    Parameters
    ----------
    root
        Folder of the external data sets (default ``$IRTBAYES_DATA_DIR``), used for the ``available`` column.

    Returns
    -------
    pandas.DataFrame
        One row per data set (index ``name``): ``title``, ``population``, ``n_subjects``, ``n_items`` (as
        loaded with default options), ``domains`` (comma-separated), ``licence``, ``storage`` (``embedded`` or
        ``external``), ``folder``, ``available`` (whether it can be loaded now), ``options``, ``origin`` and
        ``citation``.
    """
    base = _external_root(root)
    rows = []
    for e in _ENTRIES:
        folder = data_root() / e.folder if e.embedded else (base / e.folder if base else None)
        available = bool(folder is not None and folder.is_dir() and (not e.embedded or (folder / MANIFEST).is_file()))
        rows.append(
            {
                "name": e.name,
                "title": e.title,
                "population": e.population,
                "n_subjects": e.n_subjects,
                "n_items": e.n_items,
                "domains": ", ".join(e.domains),
                "licence": e.licence,
                "storage": "embedded" if e.embedded else "external",
                "folder": f"data/{e.folder}" if e.embedded else f"${DATA_DIR_ENV}/{e.folder}",
                "available": available,
                "options": ", ".join(e.options),
                "origin": e.origin,
                "citation": e.citation,
            }
        )
    return pd.DataFrame(rows).set_index("name")


def load_dataset(name: str, *, root: str | Path | None = None, **options: Any) -> ResponseData:
    """Load a registered data set by name.

    Parameters
    ----------
    name
        One of :func:`list_datasets`'s names.
    root
        Folder holding the external data sets (default ``$IRTBAYES_DATA_DIR``); ignored for embedded ones.
    **options
        Data-set specific choices (see ``list_datasets()["options"]``), e.g. ``judge="llama_guard"`` for
        ``jailbreakbench``, ``partial=0`` for ``xstest``, ``min_benchmarks=5`` for ``openllm_tinybench``.

    Returns
    -------
    ResponseData
        Dims ``subject`` x ``item``; every item has ``benchmark`` and ``domain`` labels.

    Raises
    ------
    DataError
        Unknown name (the message lists the known ones), unknown option, missing data folder (the message names
        the environment variable to set and the upstream origin), or malformed files.
    """
    entry = _entry(name)
    return _load_entry(entry, _folder_of(entry, root), options)


def _matching_entries(path: Path) -> list[DatasetEntry]:
    return [e for e in _ENTRIES if e.signature and all((path / f).is_file() for f in e.signature)]


def is_dataset_folder(path: str | Path) -> bool:
    """True for a folder with a ``dataset.json`` manifest or laid out like one of the registered upstream sources."""
    path = Path(path)
    if not path.is_dir():
        return False
    return (path / MANIFEST).is_file() or bool(_matching_entries(path))


def load_folder(path: str | Path, *, dataset: str | None = None, **options: Any) -> ResponseData:
    """Load a data set folder: its ``dataset.json`` manifest, or the registered upstream layout it matches.

    Parameters
    ----------
    path
        The folder.
    dataset
        Which registered data set to read, for a folder that holds several (the classic IRT folder holds
        ``sat12``, ``science``, ``verbagg``, ``lsat6`` and ``lsat7``).
    **options
        Passed to the data set's loader (see :func:`load_dataset`).

    Returns
    -------
    ResponseData
        Dims ``subject`` x ``item``.
    """
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path}: no such folder")
    if dataset is None and (path / MANIFEST).is_file():
        if options:
            raise DataError(f"{path}: a folder loaded by its {MANIFEST} takes no options (got {sorted(options)})")
        return _load_manifest_folder(path)
    matches = _matching_entries(path)
    if dataset is not None:
        entry = _entry(dataset)
        if entry not in matches:
            raise DataError(f"{path}: does not hold data set '{dataset}' (expected file(s) {list(entry.signature)})")
        return _load_entry(entry, path, options)
    if not matches:
        raise DataError(f"{path}: no {MANIFEST} and not laid out like any registered data set")
    if len(matches) > 1:
        raise DataError(
            f"{path}: holds several data sets ({', '.join(e.name for e in matches)}); choose one with dataset="
        )
    return _load_entry(matches[0], path, options)
