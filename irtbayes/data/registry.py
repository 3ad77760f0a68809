"""Registry of real item-level data sets, each described by one manifest, ``data/<name>/dataset.json``.

A manifest gives the data set's name, title, population, size, licence, origin and citation, and how its files
are laid out (``"format": "wide"`` or ``"patterns"``; ``data/README.md`` describes every key). Adding a data set
means adding a folder with a manifest; nothing here names a data set.

Embedded data sets (``"storage": "embedded"``, the default) keep their files beside the manifest: ``mmlu_pro``,
``lsat6`` and ``lsat7``. External ones (``"storage": "external"``) are not copied into the repository: their
upstream files are converted once with ``scripts/convert_data.py`` into ``<folder>/<name>/`` (a response matrix,
an item table, a subject table and a copy of the manifest), and read from the folder named by the environment
variable ``IRTBAYES_DATA_DIR`` (or the ``root=`` argument of :func:`load_dataset`).

Every item has a ``benchmark`` and a ``domain``; domains use one vocabulary across data sets (``data/README.md``).

Ordinal (graded) data sets say so in their manifest: ``"response_kind": "ordinal"``, with ``"categories"``
listing the values of the response files in order, the lowest first (e.g. ``[1, 2, 3, 4]``, or labels); without
``"categories"`` the values must be integers and the categories are inferred (every integer from the smallest
to the largest, none unused). The responses become codes 0..K-1, and every item gets ``n_categories`` K and its
``categories`` labels. ``"response_kind": "binary"`` refuses anything but 0/1 (as ``responses.scoring`` does).
"""

from __future__ import annotations

import csv
import functools
import logging
import os
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.core.files import read_json
from irtbayes.data.columns import SCORINGS, OrdinalScale, category_label, inferred_scale, require_benchmarks
from irtbayes.data.reading import ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = [
    "CONVERTER",
    "DATA_DIR_ENV",
    "DEFAULT_DATA_ENV",
    "MANIFEST",
    "data_root",
    "default_data_path",
    "is_dataset_folder",
    "list_datasets",
    "load_dataset",
    "load_folder",
    "manifests",
]

log = logging.getLogger(__name__)

#: Environment variable naming the folder that holds the converted external data sets.
DATA_DIR_ENV = "IRTBAYES_DATA_DIR"
#: Environment variable overriding the default data set used by ``irtbayes audit`` with no arguments.
DEFAULT_DATA_ENV = "IRTBAYES_DEFAULT_DATA"
#: File name of a data set folder's manifest.
MANIFEST = "dataset.json"
#: The script that converts an external data set's upstream files.
CONVERTER = "scripts/convert_data.py"
#: Options every data set accepts: keep these benchmarks; keep subjects with responses in at least n benchmarks.
SUBSET_OPTIONS = ("benchmarks", "min_benchmarks")


def data_root() -> Path:
    """The folder that holds every manifest and the embedded data sets' files.

    An installed wheel carries the top-level ``data/`` folder as the package data ``irtbayes/_data/``; a source
    checkout (also one installed in editable mode) reads the top-level ``data/`` folder itself.

    Examples
    --------
    >>> (data_root() / "lsat7" / MANIFEST).is_file(), (data_root() / "mmlu_pro" / MANIFEST).is_file()
    (True, True)
    """
    installed = resources.files("irtbayes").joinpath("_data")
    if isinstance(installed, Path) and installed.is_dir():
        return installed.resolve()
    return Path(__file__).resolve().parents[2] / "data"


def default_data_path() -> Path:
    """The data set ``irtbayes audit`` uses when given none: ``data/mmlu_pro``, or ``$IRTBAYES_DEFAULT_DATA``.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {DEFAULT_DATA_ENV: ""}):
    ...     default_data_path() == data_root() / "mmlu_pro"
    True
    >>> with mock.patch.dict(os.environ, {DEFAULT_DATA_ENV: "/srv/benchmarks/mine"}):
    ...     str(default_data_path())
    '/srv/benchmarks/mine'
    """
    override = os.environ.get(DEFAULT_DATA_ENV)
    return Path(override).expanduser() if override else data_root() / "mmlu_pro"


# ---------------------------------------------------------------------------------------------------- reading


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
    subjects: pd.DataFrame,
    source: str,
    scale: OrdinalScale | None = None,
) -> ResponseData:
    """A :class:`ResponseData` from a dense (subject, item) matrix with NaN for missing cells.

    ``items`` is indexed by item id in the matrix's column order and holds ``benchmark`` and ``domain``; ``subjects``
    is indexed by subject id. Subjects and items without responses are left out. Vectorised: the 90 x 82,756 NLU
    matrix is built in about a second (:meth:`ResponseData.from_wide` takes over ten). With an ordinal ``scale``
    the values are its codes, and every item gets its ``n_categories`` and ``categories``.
    """
    sids = _string_index(subject_ids, name="subject", source=source)
    iids = _string_index(items.index, name="item", source=source)
    present = ~np.isnan(values)
    top = 1 if scale is None else scale.n_categories - 1
    bad = present & ((values < 0) | (values > top))
    if bad.any():
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(f"{source}: subject '{sids[r]}', item '{iids[c]}' holds {values[r, c]:g}, outside [0, {top}]")
    keep_s, keep_i = present.any(axis=1), present.any(axis=0)
    if not keep_s.all() or not keep_i.all():
        log.info("%s: %d subject(s), %d item(s) without responses left out", source, (~keep_s).sum(), (~keep_i).sum())
        values, present, sids, iids = values[keep_s][:, keep_i], present[keep_s][:, keep_i], sids[keep_s], iids[keep_i]
        items = items.iloc[np.flatnonzero(keep_i)]
    rows, cols = np.nonzero(present)
    responses = pd.DataFrame(
        {
            "subject": pd.Categorical.from_codes(rows, categories=sids),
            "item": pd.Categorical.from_codes(cols, categories=iids),
            "response": values[rows, cols],
        }
    )
    items = items.set_axis(iids).astype({"benchmark": "string", "domain": "string"})
    items = items[["benchmark", "domain", *(c for c in items.columns if c not in ("benchmark", "domain"))]]
    if scale is not None:
        items = items.assign(
            n_categories=pd.array([scale.n_categories] * len(items), dtype="Int64"),
            categories=pd.array([scale.joined] * len(items), dtype="string"),
        )
    subjects = subjects.set_axis(_string_index(subjects.index, name="subject", source=source))
    unknown = sids.difference(subjects.index)
    if len(unknown):
        raise DataError(f"{source}: subject(s) {list(unknown[:5])} have responses but no subject metadata")
    subjects = subjects.reindex(sids).rename_axis("subject")
    notes = (scale.note,) if scale is not None and scale.note else ()
    return ResponseData(
        responses=responses, items=items.rename_axis("item"), subjects=subjects, source=source, notes=notes
    )


def _read_csv(path: Path, *, what: str) -> pd.DataFrame:
    """A CSV file as text and numbers (only empty cells are missing); errors name the file."""
    if not path.is_file():
        raise DataError(f"{path}: no such file ({what})")
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path}: could not read the CSV file ({err})") from None
    with path.open(newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh), [])
    if len(set(header)) != len(header):
        raise DataError(f"{path}: column '{next(h for h in header if header.count(h) > 1)}' appears twice")
    return frame


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], *, path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; the columns are {list(map(str, frame.columns))[:12]}")


def _numeric(frame: pd.DataFrame, *, path: Path, rows: Sequence[Any]) -> np.ndarray:
    """The frame as a float matrix; an error names the first cell that is not a number."""
    try:
        return frame.to_numpy(dtype="float64")
    except (TypeError, ValueError):
        for col in frame.columns:
            converted = pd.to_numeric(frame[col], errors="coerce")
            bad = (converted.isna() & frame[col].notna()).to_numpy()
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"{path}: row '{rows[i]}', column '{col}' holds {frame[col].iloc[i]!r}, not a number"
                ) from None
        return frame.apply(pd.to_numeric).to_numpy(dtype="float64")


def _manifest_reading(manifest: Mapping[str, Any], *, mpath: Path) -> ReadOptions:
    """How the manifest says its responses are read: ``response_kind`` (``"auto"`` when absent) and ``categories``
    (only with ``"ordinal"``), checked; an error names the manifest and its key."""
    kind = manifest.get("response_kind", "auto")
    if kind not in SCORINGS:
        raise DataError(f"{mpath}: 'response_kind' must be 'auto', 'binary', 'fraction' or 'ordinal', got {kind!r}")
    if "categories" in manifest and kind != "ordinal":
        raise DataError(f'{mpath}: \'categories\' describes ordinal responses; it needs "response_kind": "ordinal"')
    try:
        return ReadOptions(scoring=kind, categories=manifest.get("categories"))
    except DataError as err:
        raise DataError(f"{mpath}: {err}") from None


def _ordinal_codes(
    values: np.ndarray,
    reading: ReadOptions,
    *,
    mpath: Path,
    path: Path,
    rows: Sequence[Any],
    columns: Sequence[Any],
) -> tuple[np.ndarray, OrdinalScale]:
    """The values of an ordinal data set as codes 0..K-1, with their scale: the manifest's ``categories`` in order
    (``reading.scale``), or the integers inferred from the values. An error names the cell."""
    present = ~np.isnan(values)
    scale = reading.scale
    if scale is None:
        bad = present & (values != np.round(values))
        if bad.any():
            r, c = (int(i[0]) for i in np.nonzero(bad))
            raise DataError(
                f"{path}: row '{rows[r]}', column '{columns[c]}' holds {values[r, c]:g}, which is not an integer "
                f"category; list the categories in order in {mpath} ('categories')"
            )
        scale = inferred_scale(values[present], source=str(path), what="the matrix")
        return values - int(scale.labels[0]), scale
    codes = np.full(values.shape, np.nan)
    for value in np.unique(values[present]):
        label = category_label(value)
        if label not in scale.labels:
            r, c = (int(i[0]) for i in np.nonzero(values == value))
            raise DataError(
                f"{path}: row '{rows[r]}', column '{columns[c]}' holds {label}, which is not one of the categories "
                f"{list(scale.labels)} of {mpath}"
            )
        codes[values == value] = scale.labels.index(label)
    return codes, scale


def _check_binary(values: np.ndarray, *, path: Path, rows: Sequence[Any], columns: Sequence[Any]) -> None:
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        r, c = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(f"{path}: row '{rows[r]}', column '{columns[c]}' holds {values[r, c]:g}; expected 0 or 1")


_EMPTY_CELL = re.compile(r"(?:(?<=,)|^)(?=,|$)")


def _read_matrix(path: Path, *, id_column: str) -> tuple[pd.Index, pd.Index, np.ndarray]:
    """A response matrix whose column ``id_column`` holds the row ids: (row ids, column names, values).

    A plain file (the ids first, no quotes) is parsed by :func:`numpy.loadtxt`, many times faster than pandas on
    very wide files (90 x 82,756 in about a second); anything else, and any error, goes through pandas.
    """
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, UnicodeDecodeError):
        lines = []
    header = next(csv.reader(lines[:1]), [])
    if header and header[0] == id_column and len(lines) > 1 and not any('"' in line for line in lines):
        split = [line.partition(",") for line in lines[1:]]
        try:
            values = np.loadtxt([_EMPTY_CELL.sub("nan", s[2]) for s in split], delimiter=",", ndmin=2)
        except ValueError:
            values = None
        if values is not None and values.shape == (len(split), len(header) - 1):
            return pd.Index([s[0].strip() for s in split]), pd.Index([h.strip() for h in header[1:]]), values
    frame = _read_csv(path, what="the response matrix")
    _require_columns(frame, [id_column], path=path)
    frame = frame.set_index(id_column)
    values = _numeric(frame, path=path, rows=frame.index)
    return frame.index, pd.Index([str(c).strip() for c in frame.columns]), values


# ---------------------------------------------------------------------------------------------------- manifests


def _get(manifest: Mapping[str, Any], key: str, *, path: Path) -> Any:
    node: Any = manifest
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise DataError(f"{path}: missing key '{key}'")
        node = node[part]
    return node


def _file(manifest: Mapping[str, Any], key: str, *, folder: Path, mpath: Path) -> Path:
    name = _get(manifest, f"files.{key}", path=mpath)
    path = folder / str(name)
    if not path.is_file():
        raise DataError(f"{mpath}: files.{key} names '{name}', but {path} does not exist")
    return path


def _labels(items: pd.DataFrame, manifest: Mapping[str, Any], *, mpath: Path) -> pd.DataFrame:
    """``benchmark`` (from the item table or ``items.benchmark``) and ``domain`` (``domains`` or ``items.domain``)."""
    spec = manifest.get("items", {})
    if "benchmark" not in items.columns:
        items["benchmark"] = _get(manifest, "items.benchmark", path=mpath)
    items["benchmark"] = items["benchmark"].astype("string").replace(spec.get("benchmark_labels", {}))
    if "domains" in manifest:
        lookup = {b: d for d, bs in manifest["domains"].items() for b in bs}
        unknown = sorted(set(items["benchmark"].dropna()) - set(lookup))
        if unknown:
            raise DataError(f"{mpath}: benchmark(s) {unknown} have no domain in 'domains'")
        items["domain"] = items["benchmark"].map(lookup)
    elif "domain" not in items.columns:
        items["domain"] = _get(manifest, "items.domain", path=mpath)
    if "n_options" in spec:
        items["n_options"] = int(spec["n_options"])
    return items


def _table(manifest: Mapping[str, Any], key: str, *, folder: Path, mpath: Path, ids: pd.Index) -> pd.DataFrame:
    """The item or subject table ``files.<key>``, indexed by ``<key>.id_column``; an item table must list ``ids``."""
    spec = manifest.get(key, {})
    path = _file(manifest, key, folder=folder, mpath=mpath)
    table = _read_csv(path, what=f"the {key[:-1]} table")
    id_column = _get(manifest, f"{key}.id_column", path=mpath)
    columns = dict(spec.get("columns", {c: c for c in table.columns if c != id_column}))
    _require_columns(table, [id_column, *columns], path=path)
    table = table.set_index(table[id_column].astype(str).str.strip())[list(columns)].rename(columns=columns)
    if table.index.duplicated().any():
        raise DataError(f"{path}: {key[:-1]} '{table.index[table.index.duplicated()][0]}' has more than one row")
    missing, extra = ids.difference(table.index), table.index.difference(ids)
    if key == "items" and (len(missing) or len(extra)):
        raise DataError(
            f"{path}: its '{id_column}' column and the response columns differ: {len(missing)} column(s) not in "
            f"the item table (e.g. {list(missing[:3])}), {len(extra)} item(s) without a column (e.g. {list(extra[:3])})"
        )
    return table


def _load_wide(folder: Path, manifest: Mapping[str, Any], *, mpath: Path) -> ResponseData:
    subject_column = _get(manifest, "responses.subject_column", path=mpath)
    rpath = _file(manifest, "responses", folder=folder, mpath=mpath)
    sids, columns, values = _read_matrix(rpath, id_column=subject_column)
    if columns.duplicated().any():
        raise DataError(f"{rpath}: column '{columns[columns.duplicated()][0]}' appears twice")
    files = manifest.get("files", {})
    items = pd.DataFrame(index=columns)
    if "items" in files:  # in the item table's order
        items = _table(manifest, "items", folder=folder, mpath=mpath, ids=columns)
        values = values[:, columns.get_indexer(items.index)]
    reading = _manifest_reading(manifest, mpath=mpath)
    scale = None
    if reading.ordinal:
        values, scale = _ordinal_codes(values, reading, mpath=mpath, path=rpath, rows=sids, columns=items.index)
    elif reading.scoring == "binary" or manifest.get("responses", {}).get("scoring") == "binary":
        _check_binary(values, path=rpath, rows=sids, columns=items.index)
    items.index = manifest.get("items", {}).get("id_prefix", "") + items.index
    items = _labels(items, manifest, mpath=mpath)
    subjects = pd.DataFrame(index=sids.astype(str))
    if "subjects" in files:
        subjects = _table(manifest, "subjects", folder=folder, mpath=mpath, ids=subjects.index)
    return _assemble(values, subject_ids=sids, items=items, subjects=subjects, source=str(folder), scale=scale)


def _load_patterns(folder: Path, manifest: Mapping[str, Any], *, mpath: Path) -> ResponseData:
    ppath = _file(manifest, "patterns", folder=folder, mpath=mpath)
    columns = list(_get(manifest, "patterns.item_columns", path=mpath))
    freq = _get(manifest, "patterns.frequency_column", path=mpath)
    table = _read_csv(ppath, what="the response patterns")
    _require_columns(table, [*columns, freq], path=ppath)
    lines = [f"line {i + 2}" for i in range(len(table))]
    counts = _numeric(table[[freq]], path=ppath, rows=lines)[:, 0]
    wrong = np.isnan(counts) | (counts < 0) | (counts != np.round(counts))
    if wrong.any():
        row = int(np.flatnonzero(wrong)[0])
        raise DataError(f"{ppath}: line {row + 2}: '{freq}' must be a whole number >= 0, got {counts[row]:g}")
    patterns = _numeric(table[columns], path=ppath, rows=lines)
    scale = None
    reading = _manifest_reading(manifest, mpath=mpath)
    if reading.ordinal:
        codes, scale = _ordinal_codes(patterns, reading, mpath=mpath, path=ppath, rows=lines, columns=columns)
    else:
        _check_binary(patterns, path=ppath, rows=lines, columns=columns)
        codes = patterns
    values = np.repeat(codes, counts.astype(int), axis=0)
    ids = list(manifest.get("items", {}).get("ids", columns))
    if len(ids) != len(columns):
        raise DataError(f"{mpath}: items.ids has {len(ids)} ids for {len(columns)} pattern columns")
    items = _labels(pd.DataFrame(index=ids), manifest, mpath=mpath)
    prefix = str(manifest["patterns"].get("subject_prefix", ""))
    width = max(4, len(str(len(values))))
    subject_ids = [f"{prefix}{i:0{width}d}" for i in range(1, len(values) + 1)]
    text = ["".join("." if np.isnan(v) else str(int(v)) for v in row) for row in patterns]
    subjects = pd.DataFrame({"pattern": np.repeat(text, counts.astype(int))}, index=subject_ids)
    return _assemble(values, subject_ids=subject_ids, items=items, subjects=subjects, source=str(folder), scale=scale)


def _load_manifest(folder: Path, manifest: Mapping[str, Any], *, mpath: Path) -> ResponseData:
    fmt = _get(manifest, "format", path=mpath)
    if fmt == "wide":
        return _load_wide(folder, manifest, mpath=mpath)
    if fmt == "patterns":
        return _load_patterns(folder, manifest, mpath=mpath)
    raise DataError(f"{mpath}: format '{fmt}' is not one irtbayes knows (expected 'wide' or 'patterns')")


# ---------------------------------------------------------------------------------------------------- registry


@functools.cache
def _registry() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(data_root().glob(f"*/{MANIFEST}")):
        manifest = read_json(path)
        if manifest.get("name") != path.parent.name:
            raise DataError(f"{path}: 'name' is {manifest.get('name')!r}, but the folder is '{path.parent.name}'")
        found[path.parent.name] = manifest
    return found


def manifests() -> dict[str, dict[str, Any]]:
    """Every registered data set's manifest (``data/<name>/dataset.json``), by name, embedded ones first.

    Examples
    --------
    >>> found = manifests()
    >>> list(found)[:3], found["lsat7"]["n_items"]
    (['lsat6', 'lsat7', 'mmlu_pro'], 5)
    """
    table = _registry()
    return {n: dict(table[n]) for n in sorted(table, key=lambda n: (_external(table[n]), n))}


def _external(manifest: Mapping[str, Any]) -> bool:
    return manifest.get("storage", "embedded") == "external"


def _manifest(name: str) -> dict[str, Any]:
    table = manifests()
    if name not in table:
        raise DataError(f"unknown data set '{name}'; known data sets: {', '.join(table)}")
    return table[name]


def _external_root(root: str | Path | None) -> Path | None:
    if root is None:
        root = os.environ.get(DATA_DIR_ENV) or None
    return None if root is None else Path(root).expanduser()


def _folder_of(manifest: Mapping[str, Any], root: str | Path | None) -> Path:
    name = manifest["name"]
    if not _external(manifest):
        return data_root() / name
    base = _external_root(root)
    how = (
        f"convert the upstream files ({manifest.get('origin')}) with `python {CONVERTER} UPSTREAM_DIR OUT_DIR "
        f"--only {name}`, where UPSTREAM_DIR holds '{manifest.get('upstream')}/', and set {DATA_DIR_ENV} "
        "(or pass root=) to OUT_DIR"
    )
    if base is None:
        raise DataError(f"data set '{name}' is not shipped with irtbayes and {DATA_DIR_ENV} is not set: {how}")
    folder = base / name
    if not (folder / MANIFEST).is_file():
        raise DataError(f"{folder}: no such folder with a {MANIFEST} (data set '{name}'): {how}")
    return folder


def _subset(data: ResponseData, options: Mapping[str, Any]) -> ResponseData:
    if options.get("benchmarks") is not None:
        data = data.subset(benchmarks=options["benchmarks"])
    if options.get("min_benchmarks") is not None:
        least = int(options["min_benchmarks"])
        if not 1 <= least <= len(data.benchmarks):
            raise DataError(f"{data.source}: min_benchmarks must lie in 1..{len(data.benchmarks)}, got {least}")
        bench = data.items["benchmark"].to_numpy()[data.item_codes]
        pairs = pd.DataFrame({"subject": data.subject_codes, "benchmark": bench}).drop_duplicates()
        counts = np.bincount(pairs["subject"].to_numpy(), minlength=data.n_subjects)
        data = data.subset(subjects=data.subject_ids[counts >= least])
    return data


def list_datasets(*, root: str | Path | None = None) -> pd.DataFrame:
    """The registered data sets.

    Parameters
    ----------
    root
        Folder of the converted external data sets (default ``$IRTBAYES_DATA_DIR``), for the ``available`` column.

    Returns
    -------
    pandas.DataFrame
        One row per data set (index ``name``): ``title``, ``population``, ``n_subjects``, ``n_items`` (as loaded
        with default options), ``domains`` (comma-separated), ``licence``, ``storage`` (``embedded`` or
        ``external``), ``folder``, ``available`` (whether it can be loaded now), ``options`` (the converter's,
        for external sets), ``origin`` and ``citation``.

    Examples
    --------
    >>> table = list_datasets()
    >>> row = table.loc["lsat7"]
    >>> int(row["n_subjects"]), int(row["n_items"]), row["storage"], bool(row["available"])
    (1000, 5, 'embedded', True)
    """
    base = _external_root(root)
    rows = []
    for name, m in manifests().items():
        external = _external(m)
        folder = (base / name if base else None) if external else data_root() / name
        domains = list(m["domains"]) if "domains" in m else [m.get("items", {}).get("domain", "")]
        rows.append(
            {
                "name": name,
                **{k: m.get(k, "") for k in ("title", "population", "n_subjects", "n_items")},
                "domains": ", ".join(domains),
                "licence": m.get("licence", ""),
                "storage": "external" if external else "embedded",
                "folder": f"${DATA_DIR_ENV}/{name}" if external else f"data/{name}",
                "available": bool(folder is not None and (folder / MANIFEST).is_file()),
                "options": ", ".join(m.get("options", {})),
                "origin": m.get("origin", ""),
                "citation": m.get("citation", ""),
            }
        )
    return pd.DataFrame(rows).set_index("name")


def load_dataset(
    name: str, *, root: str | Path | None = None, options: ReadOptions | None = None, **keywords: Any
) -> ResponseData:
    """Load a registered data set by name.

    Parameters
    ----------
    name
        One of :func:`list_datasets`'s names.
    root
        Folder holding the converted external data sets (default ``$IRTBAYES_DATA_DIR``); unused for embedded ones.
    options
        :class:`~irtbayes.data.reading.ReadOptions` as every loader takes them (or their fields among ``keywords``).
        A data set's manifest says how its responses are read, so ``categories`` and ``bins`` are refused and
        ``scoring="binary"`` or ``"ordinal"`` must be what it holds.
    **keywords
        ``benchmarks`` (keep these benchmarks) and ``min_benchmarks`` (keep subjects with responses in at least
        that many of them), e.g. ``min_benchmarks=5`` for ``openllm_tinybench``. Scoring choices of external data
        sets (``list_datasets()["options"]``) are made when converting them.

    Returns
    -------
    ResponseData
        Dims ``subject`` x ``item``; every item has ``benchmark`` and ``domain`` labels.

    Raises
    ------
    DataError
        Unknown name (the message lists the known ones), unknown option, missing data folder (the message says how
        to convert the upstream files and which variable to set), or malformed files.

    Examples
    --------
    >>> data = load_dataset("lsat7")
    >>> data.n_subjects, data.n_items, data.n_responses
    (1000, 5, 5000)
    >>> data.item_ids[:2].tolist(), data.items["benchmark"].unique().tolist()
    (['lsat7/item1', 'lsat7/item2'], ['lsat7'])
    >>> load_dataset("lsat8")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: unknown data set 'lsat8'; known data sets: lsat6, lsat7, ...
    """
    manifest = _manifest(name)
    folder = _folder_of(manifest, root)
    if _external(manifest):  # the copy the converter wrote, which records the options it was converted with
        manifest = read_json(folder / MANIFEST)
    return _load(folder, manifest, mpath=folder / MANIFEST, options=options, keywords=keywords)


def _load(
    folder: Path, manifest: Mapping[str, Any], *, mpath: Path, options: ReadOptions | None, keywords: Mapping[str, Any]
) -> ResponseData:
    read, subset = ReadOptions.split(keywords, options)
    unknown = sorted(set(subset) - set(SUBSET_OPTIONS))
    if unknown:
        raise DataError(
            f"{folder}: unknown option(s) {unknown}; accepted options: {', '.join(SUBSET_OPTIONS)} (an external data "
            f"set's scoring choices are made when converting it with {CONVERTER})"
        )
    return _read_as(_subset(_load_manifest(folder, manifest, mpath=mpath), subset), read)


def _read_as(data: ResponseData, options: ReadOptions) -> ResponseData:
    """A data set, read as its manifest says, checked against the loader's ``options``: ``categories`` and ``bins``
    are the manifest's to declare, ``scoring="binary"`` or ``"ordinal"`` must be what it holds, and
    ``require_benchmark`` needs every item labelled."""
    given = [name for name in ("categories", "bins") if getattr(options, name) is not None]
    if given:
        raise DataError(
            f"{data.source}: a registered data set declares its own categories in its manifest; "
            f"{' and '.join(given)} apply to files and evaluation logs"
        )
    if options.scoring in ("binary", "ordinal") and data.response_kind != options.scoring:
        raise DataError(
            f"{data.source}: scoring='{options.scoring}' asked for {options.scoring} responses, but this data set "
            f"holds {data.summary().kind_text}"
        )
    if options.require_benchmark:
        require_benchmarks(data.items, source=data.source)
    return data


def _matching(path: Path) -> list[str]:
    """Embedded data sets whose files all lie in ``path`` (an upstream folder laid out like them)."""
    found = []
    for name, m in manifests().items():
        if not _external(m) and all((path / str(f)).is_file() for f in m.get("files", {}).values()):
            found.append(name)
    return found


def is_dataset_folder(path: str | Path) -> bool:
    """True for a folder with a ``dataset.json`` manifest, or holding the files of an embedded data set.

    Examples
    --------
    >>> is_dataset_folder(data_root() / "lsat7"), is_dataset_folder(data_root())
    (True, False)
    """
    path = Path(path)
    return path.is_dir() and ((path / MANIFEST).is_file() or bool(_matching(path)))


def load_folder(
    path: str | Path, *, dataset: str | None = None, options: ReadOptions | None = None, **keywords: Any
) -> ResponseData:
    """Load a data set folder by its ``dataset.json``, or the embedded data set whose files it holds.

    Parameters
    ----------
    path
        The folder.
    dataset
        Which embedded data set to read, for a folder that holds the files of several (an upstream folder of
        mirt's data holds both ``lsat6`` and ``lsat7``).
    options, **keywords
        As in :func:`load_dataset`: the loaders' :class:`~irtbayes.data.reading.ReadOptions` (checked against the
        manifest), ``benchmarks`` and ``min_benchmarks``.

    Returns
    -------
    ResponseData
        Dims ``subject`` x ``item``.

    Examples
    --------
    >>> data = load_folder(data_root() / "lsat7")
    >>> data.n_subjects, data.n_items
    (1000, 5)
    >>> data.checksum() == load_dataset("lsat7").checksum()
    True
    """
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path}: no such folder")
    mpath = path / MANIFEST
    if dataset is None and mpath.is_file():
        manifest = read_json(mpath)
        if _external(manifest) and path.resolve() == data_root() / str(manifest.get("name")):
            # the registry's entry, read from its data folder
            return load_dataset(str(manifest["name"]), options=options, **keywords)
        return _load(path, manifest, mpath=mpath, options=options, keywords=keywords)
    matches = _matching(path)
    if dataset is not None and dataset not in matches:
        files = list(_manifest(dataset).get("files", {}).values())
        raise DataError(f"{path}: does not hold data set '{dataset}' (expected file(s) {files})")
    if not matches:
        raise DataError(f"{path}: no {MANIFEST} and not laid out like any embedded data set")
    if dataset is None and len(matches) > 1:
        raise DataError(f"{path}: holds several data sets ({', '.join(matches)}); choose one with dataset=")
    name = dataset or matches[0]
    return _load(path, _manifest(name), mpath=data_root() / name / MANIFEST, options=options, keywords=keywords)
