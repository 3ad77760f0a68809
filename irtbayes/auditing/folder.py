"""The audit folder: :func:`save_audit` writes an :class:`~irtbayes.auditing.result.AuditResult`, :func:`load_audit`
reads it back as it was (nothing is recomputed) and checks that it was made from a given fit.

Files
-----
``bins.csv``, ``benchmarks.csv``, ``ranking.csv``, ``ahead.csv`` (index = subject ahead), ``information.csv``,
``items.csv`` (the tables, see :func:`~irtbayes.auditing.run.audit`), ``target.csv`` (readable by
:func:`~irtbayes.auditing.targets.read_target`), ``audit.txt`` (the text summary) and ``summary.json``: the target,
``ci_prob``, the settings (seed, draws, ``top_k``, ``group``, ``ensemble``, ``partial``, ``converged``, the data
checksum and the fit's identity), the per-scope results, and under ``files`` each table's columns with their
types and ``attrs`` and each file's SHA-256. Everything is text (CSV and JSON); nothing is pickled.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.auditing.draws import fit_identity
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.targets import Target, read_target
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.core.files import atomic_write_text, json_ready, read_json
from irtbayes.data.responses import ResponseData

__all__ = ["AUDIT_FORMAT", "AUDIT_FORMAT_VERSION", "check_audit_source", "load_audit", "save_audit"]


# ============================================================================================ writing
#: What ``summary.json`` says it is, and the version of the folder's layout.
AUDIT_FORMAT = "irtbayes-audit"
AUDIT_FORMAT_VERSION = 2
#: Table columns holding labels: read as text whatever they look like (a subject called ``1`` or ``NA``).
TEXT_COLUMNS = ("scope_kind", "scope", "subject", "item", "benchmark", "domain", "gap_kind")


def _table_csv(name: str, frame: pd.DataFrame) -> str:
    return frame.to_csv(index=name == "ahead", lineterminator="\n")


def save_audit(result: AuditResult, out_dir: str | os.PathLike[str], *, text: str | None = None) -> Path:
    """Write ``summary.json``, ``audit.txt``, ``target.csv`` and one CSV per table into ``out_dir``.

    ``audit.txt`` holds ``text`` (the command line gives the findings followed by the tables) or, by default,
    :meth:`~irtbayes.auditing.result.AuditResult.to_text`.

    Every file's content is prepared first, then each is written through a temporary file and
    :func:`os.replace`, so no file is ever half-written; ``summary.json`` is written last. Files:
    ``bins.csv``, ``benchmarks.csv``, ``ranking.csv``, ``ahead.csv`` (index = subject ahead),
    ``information.csv``, ``items.csv``, ``target.csv`` (readable by :func:`~irtbayes.auditing.targets.read_target`),
    ``audit.txt`` and ``summary.json``. Besides the target, settings and per-scope results,
    ``summary.json`` holds ``format`` and ``format_version`` and, under ``files``, each table's columns with
    their types and ``attrs`` and each file's SHA-256, so that :func:`load_audit` rebuilds the result exactly and notices a
    file edited, truncated or left from another audit.

    Returns
    -------
    pathlib.Path
        ``out_dir``.

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.auditing.folder import save_audit
    >>> from irtbayes.examples import simulated_audit
    >>> result, data = simulated_audit(20, 30, chains=1, bins=4)
    >>> folder = save_audit(result, tempfile.mkdtemp())
    >>> sorted(p.name for p in folder.iterdir())
    ['ahead.csv', 'audit.txt', 'benchmarks.csv', 'bins.csv', 'information.csv', 'items.csv', 'ranking.csv', 'summary.json', 'target.csv']
    """
    out = Path(out_dir)
    payloads: dict[str, str] = {f"{name}.csv": _table_csv(name, frame) for name, frame in result.tables().items()}
    payloads["target.csv"] = result.target.to_frame().to_csv(index=False, lineterminator="\n")
    payloads["audit.txt"] = (result.to_text() if text is None else text) + "\n"
    files: dict[str, Any] = {
        name: {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()} for name, text in payloads.items()
    }
    for name, frame in result.tables().items():
        files[f"{name}.csv"]["columns"] = {str(c): str(t) for c, t in frame.dtypes.items()}
        files[f"{name}.csv"]["attrs"] = json_ready(dict(frame.attrs))
    summary = {
        "format": AUDIT_FORMAT,
        "format_version": AUDIT_FORMAT_VERSION,
        **result.summary_dict(),
        "files": files,
    }
    payloads["summary.json"] = json.dumps(summary, indent=2, allow_nan=False) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    for name, text in payloads.items():
        atomic_write_text(out / name, text)
    return out


# ============================================================================================ reading
def load_audit(
    path: str | os.PathLike[str],
    *,
    fit: Any = None,
    data: ResponseData | None = None,
) -> AuditResult:
    """Read an audit folder written by :func:`save_audit` back into an :class:`AuditResult`.

    The tables (with their column types and ``attrs``), the target, ``ci_prob`` and the settings (seed,
    draws, ``top_k``, ``group``, ``ensemble``, ``partial``, ``converged``, ...) equal those of the result
    that was written; nothing is recomputed.

    Parameters
    ----------
    path
        The audit folder.
    fit
        The fit the audit should have been made from (a :class:`~irtbayes.fitting.result.Fit`, its DataTree or
        posterior; needs ``data``): its draws must have the identity the audit recorded
        (:func:`fit_identity`).
    data
        The data the audit should have been made from: its checksum must equal the recorded one.

    Returns
    -------
    AuditResult

    Raises
    ------
    DataError
        ``path`` is not an audit folder, or a file is missing, unreadable, edited or truncated (the
        message names the file).
    FitError
        The audit was made from other data or from another fit than ``fit``, or records neither.

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.auditing.folder import load_audit, save_audit
    >>> from irtbayes.examples import simulated_audit
    >>> result, data = simulated_audit(20, 30, chains=1, bins=4)
    >>> again = load_audit(save_audit(result, tempfile.mkdtemp()), data=data)  # the data's checksum is checked
    >>> again.benchmarks.equals(result.benchmarks), again.target == result.target
    (True, True)
    """
    folder = Path(path)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (an audit folder holds summary.json and the tables)")
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        raise DataError(f"{summary_path}: no such file; {folder} is not an audit folder (see save_audit)")
    summary = read_json(summary_path)
    missing = [k for k in ("ci_prob", "target", "settings") if not isinstance(summary.get(k), (dict, int, float))]
    if missing or not isinstance(summary["settings"], dict) or not isinstance(summary["target"], dict):
        raise DataError(f"{summary_path}: not an audit summary (missing or malformed {missing or ['settings']})")
    if summary.get("format", AUDIT_FORMAT) != AUDIT_FORMAT:
        raise DataError(f"{summary_path}: format {summary.get('format')!r} is not an audit ({AUDIT_FORMAT!r})")
    files = summary.get("files") or {}
    if not isinstance(files, dict):
        raise DataError(f"{summary_path}: 'files' must be an object, found {type(files).__name__}")
    ci_prob = float(summary["ci_prob"])
    target = _recorded_target(summary_path, summary["target"])
    _check_target_file(folder / "target.csv", target, files.get("target.csv"))
    tables = {}
    for name in ("bins", "benchmarks", "ranking", "ahead", "information", "items"):
        frame = _read_table(folder / f"{name}.csv", name, files.get(f"{name}.csv"))
        record = files.get(f"{name}.csv")
        attrs = record.get("attrs") if isinstance(record, dict) else None
        frame.attrs.update(attrs if isinstance(attrs, dict) else {"ci_prob": ci_prob, "target": target.to_dict()})
        tables[name] = frame
    result = AuditResult(target=target, ci_prob=ci_prob, settings=dict(summary["settings"]), **tables)
    if data is not None or fit is not None:
        check_audit_source(result, fit=fit, data=data, where=str(summary_path))
    return result


def check_audit_source(
    result: AuditResult,
    *,
    fit: Any = None,
    data: ResponseData | None = None,
    where: str = "the audit",
) -> None:
    """Check that ``result`` was made from ``data`` (its checksum) and from ``fit`` (its draws' identity).

    Raises
    ------
    FitError
        The audit records another data checksum or fit identity, or records none (an audit written before
        they were recorded: run the audit again).

    Examples
    --------
    >>> from irtbayes.auditing.folder import check_audit_source
    >>> from irtbayes.data.simulate import simulate_responses
    >>> from irtbayes.examples import simulated_audit
    >>> result, data = simulated_audit(20, 30, chains=1, bins=4)
    >>> check_audit_source(result, data=data)  # the same data: no error
    >>> other, _ = simulate_responses(20, 30, seed=3)
    >>> check_audit_source(result, data=other)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.FitError: the audit: the audit was made from other data (checksum ...) than simulated 2pl (20 subjects x 30 items) (...)
    """
    settings = result.settings
    if fit is not None and data is None:
        raise SpecError("checking an audit against a fit needs the fit's data as well")
    if data is not None:
        recorded = settings.get("data_checksum")
        if not recorded:
            raise FitError(f"{where}: the audit records no data checksum (an older audit); run the audit again")
        if recorded != data.checksum():
            raise FitError(
                f"{where}: the audit was made from other data (checksum {str(recorded)[:12]}) than {data.source} "
                f"(checksum {data.checksum()[:12]})"
            )
    if fit is not None:
        assert data is not None
        fit_checksum = getattr(fit, "data_checksum", None)
        if isinstance(fit_checksum, str) and fit_checksum != settings.get("data_checksum"):
            raise FitError(f"{where}: the audit was made from other data than the fit (checksum {fit_checksum[:12]})")
        recorded = settings.get("fit_identity")
        if not recorded:
            raise FitError(f"{where}: the audit records no fit identity (an older audit); run the audit again")
        if recorded != fit_identity(fit, data):
            raise FitError(
                f"{where}: the audit was made from another fit of the same data (its draws differ from this "
                "fit's); report a fit with the audit made from it, or run the audit again"
            )


def _recorded_target(where: Path, recorded: dict[str, Any]) -> Target:
    try:
        edges = tuple(float(e) for e in recorded["edges"])
        weights = tuple(float(w) for w in recorded["weights"])
        target = Target(
            edges=edges, weights=weights, kind=str(recorded["kind"]), description=str(recorded.get("description", ""))
        )
    except (KeyError, TypeError, ValueError) as err:
        raise DataError(f"{where}: the recorded target is malformed ({err})") from None
    object.__setattr__(target, "weights", weights)  # exactly as recorded (already normalised when written)
    return target


def _file_text(path: Path, record: Any) -> str:
    if not path.is_file():
        raise DataError(f"{path}: no such file; the audit folder is incomplete")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except OSError as err:
        raise DataError(f"{path}: could not read the file ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    expected = record.get("sha256") if isinstance(record, dict) else None
    if expected is not None and hashlib.sha256(raw).hexdigest() != expected:
        raise DataError(
            f"{path}: its content differs from what summary.json records (edited, truncated or left from another audit)"
        )
    return text


def _check_target_file(path: Path, target: Target, record: Any) -> None:
    _file_text(path, record)
    try:
        saved = read_target(path)
    except SpecError as err:
        raise DataError(str(err)) from None
    same = saved.n_bins == target.n_bins and np.allclose(saved.edges_array, target.edges_array, rtol=1e-12, atol=0)
    if not same or not np.allclose(saved.weights_array, target.weights_array, rtol=1e-12, atol=1e-15):
        raise DataError(f"{path}: the bins or weights differ from the target summary.json records")


def _read_table(path: Path, name: str, record: Any) -> pd.DataFrame:
    text = _file_text(path, record)
    columns = record.get("columns") if isinstance(record, dict) else None
    text_columns = (
        [c for c, t in columns.items() if t in ("object", "str", "string")]
        if isinstance(columns, dict)
        else list(TEXT_COLUMNS)
    )
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            index_col=0 if name == "ahead" else None,
            dtype={c: str for c in text_columns},
            keep_default_na=False,
            na_values=[""],
        )
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    except (pd.errors.ParserError, ValueError) as err:
        raise DataError(f"{path}: not a readable audit table ({err})") from None
    if name == "ahead":
        if len(frame.columns) or len(frame):
            frame.index = pd.Index([str(j) for j in frame.index], name="subject")
            frame.columns = pd.Index([str(c) for c in frame.columns], name="behind")
        else:
            frame = pd.DataFrame()
        return frame
    if isinstance(columns, dict):
        if list(frame.columns) != list(columns):
            raise DataError(
                f"{path}: columns {list(frame.columns)[:8]}... differ from the {len(columns)} columns summary.json "
                f"records ({list(columns)[:8]}...)"
            )
        for column, kind in columns.items():
            if kind in ("object", "str", "string") or str(frame[column].dtype) == kind:
                continue
            try:
                frame[column] = frame[column].astype(kind)
            except (TypeError, ValueError) as err:
                raise DataError(f"{path}: column '{column}' does not hold {kind} values ({err})") from None
    return frame


# ============================================================================================ old names
write_audit = deprecated_alias(save_audit, "write_audit")
