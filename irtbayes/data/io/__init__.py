"""Loaders: one small module per source format, each returning a :class:`~irtbayes.data.responses.ResponseData`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from irtbayes.core.errors import DataError
from irtbayes.data.io.leaderboard import load_leaderboard
from irtbayes.data.io.pyirt import PYIRT_SUFFIXES, load_pyirt
from irtbayes.data.io.tabular import load_long, load_wide, read_columns
from irtbayes.data.reading import ReadOptions
from irtbayes.data.responses import ResponseData

__all__ = [
    "FORMATS",
    "detect_format",
    "load",
    "reread",
]

LONG_COLUMNS = {"subject", "item", "response"}
#: What :func:`load` reads (``format=``); ``"auto"`` chooses by what the path holds.
FORMATS = (
    "auto", "long", "wide", "pyirt", "lm-eval", "helm", "leaderboard", "inspect", "lighteval", "opencompass", "dataset",
)  # fmt: skip


def load(
    path: str | Path, *, format: str = "auto", options: ReadOptions | None = None, **keywords: Any
) -> ResponseData:
    """Load responses from a path, choosing the loader from what the path holds (or ``format``, one of
    :data:`FORMATS`).

    - a CSV/Parquet file with ``subject``, ``item`` and ``response`` columns (or ``successes`` and ``trials`` in
      place of ``response``): :func:`load_long`;
    - any other CSV/Parquet file: :func:`load_wide` (rows are subjects, first column their ids);
    - a ``.jsonl``/``.jsonlines`` file: py-irt's JSON Lines (:func:`load_pyirt`);
    - an inspect_ai log (``.eval``, or an EvalLog ``.json``), or a folder of them
      (:func:`~irtbayes.data.io.inspect.load_inspect`);
    - a folder: lm-evaluation-harness ``--log_samples`` output, a HELM run folder or ``runs/`` tree, Open LLM
      Leaderboard details (per-sample Parquet, :func:`~irtbayes.data.io.leaderboard.load_leaderboard`), lighteval
      details (``details/<model>/<date>/details_<task>_<date>.parquet``,
      :func:`~irtbayes.data.io.lighteval.load_lighteval`), OpenCompass results with ``--dump-eval-details``
      (``<time>/results/<model_abbr>/<dataset_abbr>.json``, :func:`~irtbayes.data.io.opencompass.load_opencompass`),
      or a data set folder known to :mod:`irtbayes.data.registry`.

    ``options`` (:class:`~irtbayes.data.reading.ReadOptions`) say how responses are read into scores, the same for
    every loader: ``scoring`` (``"auto"``, ``"binary"``, ``"fraction"`` or ``"ordinal"``) and, for ordinal
    responses, ``categories`` (the labels in order) or ``bins`` (edges that cut numeric scores into categories), and
    ``require_benchmark``. Its fields may also be given as keywords (``scoring="ordinal"``), which take precedence;
    the other ``keywords`` go to the chosen loader: ``metric`` for the harness loaders (lm-evaluation-harness, HELM,
    leaderboard, inspect_ai, lighteval); column names and ``repeats="trials"`` for a long table (:func:`load_long`).

    The data remember how they were read (``data.reading``: the absolute path, the format and the options, flat: the
    fields of ``options`` that differ from the defaults beside the loader's keywords), so a fit of them can be read
    again the same way from any folder (:func:`reread`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.data import io
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "long.csv").write_text("subject,item,response\\na,q1,1\\na,q2,0\\nb,q1,1\\nb,q2,1\\n")
    >>> _ = (folder / "wide.csv").write_text("q1,q2,q3\\n1,0,1\\n0,0,1\\n1,1,1\\n")  # no id column, as LSAT7 ships
    >>> io.load(folder / "long.csv").n_responses
    4
    >>> wide = io.load(folder / "wide.csv")
    >>> list(wide.subject_ids), wide.notes
    (['1', '2', '3'], ('no id column: the subjects are numbered by their row, 1 to 3, in file order',))
    >>> _ = (folder / "graded.csv").write_text("q1,q2\\n1,3\\n2,3\\n2,1\\n")  # ratings 1-3, no id column
    >>> graded = io.load(folder / "graded.csv", scoring="ordinal")
    >>> graded.response_kind, graded.to_matrix().tolist()
    ('ordinal', [[0.0, 2.0], [1.0, 2.0], [1.0, 0.0]])
    >>> graded.reading["format"], graded.reading["options"], Path(graded.reading["path"]).is_absolute()
    ('wide', {'scoring': 'ordinal'}, True)
    >>> from irtbayes.data.reading import ReadOptions
    >>> io.load(folder / "graded.csv", options=ReadOptions(scoring="ordinal")).checksum() == graded.checksum()
    True
    """
    from irtbayes.data import registry as datasets
    from irtbayes.data.io import helm, inspect, lighteval, lm_eval, opencompass

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    if format not in FORMATS:
        raise DataError(f"{path}: unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    loaders: dict[str, Callable[..., ResponseData]] = {
        "pyirt": load_pyirt,
        "long": load_long,
        "wide": load_wide,
        "dataset": datasets.load_folder,
    }
    loaders.update({"lm-eval": lm_eval.load_lm_eval, "helm": helm.load_helm, "leaderboard": load_leaderboard})
    loaders["inspect"] = inspect.load_inspect
    loaders.update({"lighteval": lighteval.load_lighteval, "opencompass": opencompass.load_opencompass})
    read, rest = ReadOptions.split(keywords, options)
    columns = {rest.get(key, key) for key in ("subject", "item", "response")}
    fmt = detect_format(path, long_columns=columns) if format == "auto" else format
    if not fmt:
        raise DataError(
            f"{path}: a folder with no evaluation logs irtbayes knows (no lm-evaluation-harness samples_*.jsonl, "
            "no HELM per_instance_stats.json, no Open LLM Leaderboard details Parquet, no inspect_ai .eval or .json "
            "logs, no lighteval details_*.parquet, no OpenCompass results/, no data set manifest)"
        )
    data = loaders[fmt](path, options=read, **rest)
    return data.read_as(_reading(path, fmt, {**read.recorded(), **rest}))


def _reading(path: Path, fmt: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """How data were read, as ``card.json`` records it: the absolute path, the format and the options (item
    tables by their absolute path); None where an option is not plain data (a data frame of items)."""
    recorded: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key == "items" and isinstance(value, str | Path):
            value = str(Path(value).resolve())
        elif isinstance(value, tuple | list):
            value = list(value)
        if not isinstance(value, str | int | float | bool | list):
            return None
        recorded[key] = value
    return {"path": str(path.resolve()), "format": fmt, "options": recorded}


def reread(reading: dict[str, Any], *, where: str = "") -> ResponseData:
    """Read data again as ``reading`` (``data.reading``, a fit's ``info["reading"]``) says they were read.

    Raises :class:`DataError` naming the path when it is no longer there.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "t.csv").write_text("who,q,ok\\na,q1,1\\nb,q1,0\\n")
    >>> data = load(folder / "t.csv", subject="who", item="q", response="ok")
    >>> reread(data.reading).checksum() == data.checksum()
    True
    >>> (folder / "t.csv").unlink()
    >>> reread(data.reading)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: .../t.csv: the data the fit was made from are no longer there
    """
    path = Path(reading["path"])
    if not path.exists():
        raise DataError(f"{where + ': ' if where else ''}{path}: the data the fit was made from are no longer there")
    return load(path, format=reading.get("format", "auto"), **reading.get("options", {}))


def detect_format(path: str | Path, *, long_columns: set[str] = LONG_COLUMNS) -> str:
    """What ``path`` holds: ``"pyirt"``, ``"inspect"`` (an inspect_ai log), ``"long"`` (a table with
    ``long_columns``) or ``"wide"`` for a file; ``"dataset"``, ``"lm-eval"``, ``"helm"``, ``"lighteval"``,
    ``"leaderboard"``, ``"opencompass"`` or ``"inspect"`` for a folder (the first that fits); else ``""``.

    >>> detect_format("no/such/path")
    ''
    """
    from irtbayes.data import registry as datasets
    from irtbayes.data.io import helm, inspect, leaderboard, lighteval, lm_eval, opencompass

    path = Path(path)
    if path.is_file():
        if path.suffix.lower() in PYIRT_SUFFIXES:
            return "pyirt"
        if inspect.is_inspect_log(path):
            return "inspect"
        columns = set(read_columns(path))
        # k successes of n trials stand for the response column
        counts = len(long_columns - columns) == 1 and {"successes", "trials"} <= columns
        return "long" if long_columns <= columns or counts else "wide"
    folders = {
        "dataset": datasets.is_dataset_folder,
        "lm-eval": lm_eval.is_lm_eval_folder,
        "helm": helm.is_helm_folder,
        "lighteval": lighteval.is_lighteval_folder,
        "leaderboard": leaderboard.is_leaderboard_folder,
        "opencompass": opencompass.is_opencompass_folder,
        "inspect": inspect.is_inspect_folder,
    }
    return next((fmt for fmt, holds in folders.items() if path.is_dir() and holds(path)), "")
