"""Files: atomic writes (a crash or Ctrl-C never leaves a half-written file or folder) and JSON reading
whose errors name the file, line and column.

Files and folders written here get the permissions the user's umask gives (0644 and 0755 under the common
umask 022), like files written with :func:`open`, although they are made as private temporaries first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError

__all__ = [
    "apply_umask",
    "atomic_dir",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "current_umask",
    "json_ready",
    "read_json",
    "read_json_lines",
]

_JSON_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def _json_kind(value: Any) -> str:
    return _JSON_KINDS.get(type(value), "a number")


def read_json(path: str | Path, *, top: type | None = dict, error: type[Exception] = DataError) -> Any:
    """Read one JSON document (a byte-order mark is allowed).

    ``top`` is the type the document must have at the top level (``dict``, ``list``, or ``None`` for any).
    Every failure raises ``error`` with a message that names ``path`` and, for invalid JSON, the line and
    column.

    Examples
    --------
    >>> folder = Path(tempfile.mkdtemp())
    >>> read_json(atomic_write_json(folder / "card.json", {"kind": "2pl"}))
    {'kind': '2pl'}
    >>> _ = (folder / "bad.json").write_text('{"kind": }')
    >>> read_json(folder / "bad.json")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: .../bad.json: not valid JSON (line 1, column 10: Expecting value)
    """
    try:
        with Path(path).open(encoding="utf-8-sig") as handle:
            value = json.load(handle)
    except json.JSONDecodeError as err:
        raise error(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except UnicodeDecodeError as err:
        raise error(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise error(f"{path}: could not read the file ({err.strerror or err})") from None
    if top is not None and not isinstance(value, top):
        raise error(f"{path}: expected {_JSON_KINDS[top]} at the top level, found {_json_kind(value)}")
    return value


def read_json_lines(path: str | Path, *, error: type[Exception] = DataError) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a JSON Lines file as ``(line number, object)``.

    Each line must hold a JSON object; a line that does not, invalid JSON, or bytes that are not UTF-8 raise
    ``error`` naming the file and the line.

    Examples
    --------
    >>> path = atomic_write_text(Path(tempfile.mkdtemp()) / "samples.jsonl", '{"doc_id": 0}\\n\\n{"doc_id": 1}\\n')
    >>> read_json_lines(path)
    [(1, {'doc_id': 0}), (3, {'doc_id': 1})]
    """
    records: list[tuple[int, dict[str, Any]]] = []
    try:
        with Path(path).open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise error(f"{path} line {number}: not UTF-8 text ({err.reason} at byte {err.start})") from None
                if not line.strip():
                    continue
                try:
                    value = json.loads(line.rstrip("\r\n"))
                except json.JSONDecodeError as err:
                    raise error(f"{path} line {number}: not valid JSON ({err.msg} at column {err.colno})") from None
                if not isinstance(value, dict):
                    raise error(f"{path} line {number}: expected a JSON object, found {_json_kind(value)}")
                records.append((number, value))
    except OSError as err:
        raise error(f"{path}: could not read the file ({err.strerror or err})") from None
    return records


def current_umask() -> int:
    """The process's umask (read from ``/proc`` where it can be, so no other thread sees it change).

    Examples
    --------
    >>> 0 <= current_umask() <= 0o777
    True
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | Path) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would have given it (0666 or 0777 less the umask).

    :func:`tempfile.mkstemp` and :func:`tempfile.mkdtemp` make private (0600/0700) temporaries; a file or
    folder renamed into place from one would otherwise stay private whatever the user's umask.

    Examples
    --------
    >>> folder = tempfile.mkdtemp()  # private: 0700
    >>> apply_umask(folder)
    >>> oct(os.stat(folder).st_mode & 0o777) == oct(0o777 & ~current_umask())
    True
    """
    path = Path(path)
    base = 0o777 if path.is_dir() else 0o666
    os.chmod(path, base & ~current_umask())


def atomic_write_bytes(path: str | Path, payload: bytes) -> Path:
    """Write ``payload`` to ``path`` through a temporary file in the same folder and :func:`os.replace`.

    The file gets the mode the umask gives (see :func:`apply_umask`).

    Examples
    --------
    >>> path = atomic_write_bytes(Path(tempfile.mkdtemp()) / "sub" / "a.bin", bytes([0, 1]))
    >>> list(path.read_bytes()), sorted(p.name for p in path.parent.iterdir())  # no temporary file left behind
    ([0, 1], ['a.bin'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` atomically (see :func:`atomic_write_bytes`).

    Examples
    --------
    >>> text = "θ ≥ 0"
    >>> atomic_write_text(Path(tempfile.mkdtemp()) / "note.txt", text).read_bytes() == text.encode("utf-8")
    True
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON atomically.

    Examples
    --------
    >>> print(atomic_write_json(Path(tempfile.mkdtemp()) / "x.json", {"n": 1}).read_text(), end="")
    {
      "n": 1
    }
    >>> atomic_write_json(Path(tempfile.mkdtemp()) / "x.json", {"n": float("nan")})  # JSON has no NaN
    Traceback (most recent call last):
    ...
    ValueError: Out of range float values are not JSON compliant...
    """
    return atomic_write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary folder beside ``target``; on success it replaces ``target`` in one rename.

    On any exception (Ctrl-C included) the temporary folder is removed and ``target`` is left as it was. The
    folder gets the mode the umask gives (see :func:`apply_umask`).

    Examples
    --------
    >>> target = Path(tempfile.mkdtemp()) / "report"
    >>> with atomic_dir(target) as tmp:
    ...     _ = (tmp / "a.txt").write_text("first")
    >>> try:
    ...     with atomic_dir(target) as tmp:
    ...         _ = (tmp / "a.txt").write_text("second")
    ...         raise RuntimeError("interrupted")
    ... except RuntimeError:
    ...     pass
    >>> (target / "a.txt").read_text(), sorted(p.name for p in target.parent.iterdir())  # left as it was
    ('first', ['report'])
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        apply_umask(tmp)
        yield tmp
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def json_ready(obj: Any) -> Any:
    """Plain JSON values from nested dicts/lists/tuples/arrays of numpy and pandas scalars.

    Keys become strings, tuples and arrays lists, numpy scalars Python ones; NaN, infinities, ``None``,
    ``pd.NA`` and ``pd.NaT`` become ``None`` (JSON has no NaN). This is the one JSON-cleaning helper of the
    package: cards, summaries and settings pass through it before they are written.

    Examples
    --------
    >>> json_ready({1: np.float64(0.5), "k": (np.int64(2), np.nan), "flag": np.bool_(True), "na": pd.NA})
    {'1': 0.5, 'k': [2, None], 'flag': True, 'na': None}
    """
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [json_ready(v) for v in obj.tolist()]
    if obj is None or obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj
