"""The BenchFill ledger: one JSON line per candidate decision, appended, never rewritten.

Each record holds the candidate (``candidate_id``, ``source``, ``prompt_hash``), the aim (``aim_lo``, ``aim_hi``,
``aim_bin``: the interval the new items should fill, and its bin of the audit's target), the refit posterior of the
candidate (``difficulty_mean``, ``difficulty_ci_low``, ``difficulty_ci_high``, ``discrimination_mean``,
``discrimination_ci_low``, ``discrimination_ci_high``, ``p_in_aim``, ``p_discrimination_positive``),
``n_responses``, the ``decision`` (``"accepted"`` or ``"rejected"``), its ``reason`` and every failed check
(``failed``, joined with ``"; "``), the numbers behind the data-alone and relation-to-ability checks
(``p_in_aim_data``, ``min_discrimination``, ``p_slope_above_min``, ``p_slope_below_min``, ``slope_mean``,
``slope_ci_low``, ``slope_ci_high``; see :mod:`irtbayes.benchfill.acceptance`), each editorial screen's verdict
(``bin_check``, ``key_check``, ``novelty``, ``construct``; see :mod:`irtbayes.benchfill.screens`), the closest bank
item and candidate with their similarities (``closest_item``, ``closest_word_similarity``,
``closest_content_similarity``, ``closest_candidate``, ``closest_candidate_similarity``), the construct numbers
(``item_fit_ppp``, ``p_other_stronger``), a UTC ``timestamp`` and the ``run_id``.
Other keys (``ci_prob``, ``tau``, ``detail``, ``text``, ...) are kept as given. Missing numbers are JSON ``null``.
Records written before the aim had its name (``target_lo``, ``p_in_target``, reason ``"in target"``, ...) are read,
and appended, under today's names (:func:`~irtbayes.benchfill.aim.with_aim_names`).

Crash safety: :meth:`Ledger.append` writes all its lines with one ``os.write`` on a file descriptor opened
with ``O_APPEND`` and then fsyncs, so a crash leaves at most a torn last line. Opening a ledger checks for one:
a torn tail is moved to ``<ledger>.torn`` (appended, with a timestamp) and cut from the ledger, keeping every
complete line, and a warning says so. A rerun appends to the same file.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from irtbayes.benchfill.aim import with_aim_names
from irtbayes.core.errors import DataError
from irtbayes.core.files import atomic_write_text, json_ready, read_json_lines

if TYPE_CHECKING:
    from irtbayes.benchfill.candidates import Candidate

__all__ = ["CSV_COLUMNS", "LEDGER_COLUMNS", "Ledger", "decision_records"]

log = logging.getLogger(__name__)

#: Keys of every ledger record, in this order.
LEDGER_COLUMNS: tuple[str, ...] = (
    "candidate_id",
    "source",
    "prompt_hash",
    "aim_lo",
    "aim_hi",
    "aim_bin",
    "difficulty_mean",
    "difficulty_ci_low",
    "difficulty_ci_high",
    "discrimination_mean",
    "discrimination_ci_low",
    "discrimination_ci_high",
    "p_in_aim",
    "p_discrimination_positive",
    "n_responses",
    "decision",
    "reason",
    "failed",
    "p_in_aim_data",
    "min_discrimination",
    "p_slope_above_min",
    "p_slope_below_min",
    "slope_mean",
    "slope_ci_low",
    "slope_ci_high",
    "bin_check",
    "key_check",
    "novelty",
    "closest_item",
    "closest_word_similarity",
    "closest_content_similarity",
    "closest_candidate",
    "closest_candidate_similarity",
    "construct",
    "item_fit_ppp",
    "p_other_stronger",
    "timestamp",
    "run_id",
)
_INTEGERS = ("aim_bin", "n_responses")
_TEXT = (
    "candidate_id", "source", "prompt_hash", "decision", "reason", "failed", "bin_check", "key_check", "novelty",
    "closest_item", "closest_candidate", "construct", "timestamp", "run_id",
)  # fmt: skip
#: Every other ledger column is a number (NaN where a record has none).
_NUMBERS = tuple(c for c in LEDGER_COLUMNS if c not in _TEXT + _INTEGERS)
_DECISIONS = ("accepted", "rejected")

#: Leading columns of :meth:`Ledger.to_csv`; the other ledger columns follow.
CSV_COLUMNS: tuple[str, ...] = (
    "candidate_id",
    "p_in_aim",
    "difficulty_mean",
    "difficulty_ci_low",
    "difficulty_ci_high",
    "discrimination_mean",
    "decision",
    "reason",
    "failed",
)


class Ledger:
    """An append-only JSONL ledger of BenchFill decisions.

    Parameters
    ----------
    path
        The ``.jsonl`` file; created (with its folder) on the first append.
    run_id
        Stamped on records that carry none; default a new random id per :class:`Ledger`.

    Attributes
    ----------
    repaired
        What opening the ledger repaired (a sentence), or ``None``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.benchfill.ledger import Ledger
    >>> ledger = Ledger(Path(tempfile.mkdtemp()) / "ledger.jsonl", run_id="round-1")
    >>> ledger.append([{"candidate_id": "c1", "decision": "accepted", "reason": "in aim", "aim_bin": 5}])
    1
    >>> ledger.read()[["candidate_id", "decision", "run_id"]]
      candidate_id  decision   run_id
    0           c1  accepted  round-1
    """

    def __init__(self, path: str | Path, *, run_id: str | None = None) -> None:
        self.path = Path(path)
        self.run_id = run_id or datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
        self.repaired: str | None = None
        if self.path.is_dir():
            raise DataError(f"{self.path}: is a folder, expected a ledger file (.jsonl)")
        if self.path.exists():
            self._repair_tail()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r}, run_id={self.run_id!r})"

    # ------------------------------------------------------------------ crash recovery
    def _repair_tail(self) -> None:
        raw = self.path.read_bytes()
        if not raw or raw.endswith(b"\n"):
            return
        cut = raw.rfind(b"\n") + 1
        tail = raw[cut:]
        line = raw.count(b"\n", 0, cut) + 1
        try:
            record = json.loads(tail)
        except (json.JSONDecodeError, UnicodeDecodeError):
            record = None
        if isinstance(record, dict) and "candidate_id" in record and "decision" in record:
            with self.path.open("ab") as handle:
                handle.write(b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            self.repaired = f"line {line} was complete but lacked its line break, which was added"
            log.info("%s: %s", self.path, self.repaired)
            return
        torn = self.path.with_name(self.path.name + ".torn")
        stamp = datetime.now(UTC).isoformat()
        with torn.open("ab") as handle:
            handle.write(f"# {stamp} cut from line {line} of {self.path.name}\n".encode() + tail + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        with self.path.open("r+b") as handle:
            handle.truncate(cut)
            handle.flush()
            os.fsync(handle.fileno())
        self.repaired = (
            f"line {line} was torn (an interrupted write, {len(tail)} bytes); it was moved to {torn.name} and the "
            f"{line - 1} complete lines were kept"
        )
        log.warning("%s: %s", self.path, self.repaired)

    # ------------------------------------------------------------------ writing
    def _normalise(self, record: Mapping[str, Any], *, where: str, now: str) -> dict[str, Any]:
        record = with_aim_names(record)
        out = {key: json_ready(record.get(key)) for key in LEDGER_COLUMNS}
        out.update({str(k): json_ready(v) for k, v in record.items() if k not in out})
        aim = record.get("aim")
        if aim is not None:
            if isinstance(aim, str) or not isinstance(aim, Sequence) or len(aim) != 3:
                raise DataError(f"{where}: 'aim' must be (lo, hi, bin), got {aim!r}")
            out.pop("aim")
            for key, value in zip(("aim_lo", "aim_hi", "aim_bin"), aim, strict=True):
                if out[key] is None:
                    out[key] = json_ready(value)
        if not isinstance(out["candidate_id"], str) or not out["candidate_id"].strip():
            raise DataError(f"{where}: the record has no candidate_id")
        if out["decision"] not in _DECISIONS:
            raise DataError(f"{where}: decision must be 'accepted' or 'rejected', got {out['decision']!r}")
        for key in _NUMBERS:
            value = out[key]
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise DataError(f"{where}: '{key}' must be a number, got {value!r}")
                out[key] = float(value)
        for key in _INTEGERS:
            value = out[key]
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int | float) or float(value) != int(value):
                    raise DataError(f"{where}: '{key}' must be a whole number, got {value!r}")
                out[key] = int(value)
        out["timestamp"] = out["timestamp"] or now
        out["run_id"] = out["run_id"] or self.run_id
        return out

    def append(self, records: Iterable[Mapping[str, Any]] | pd.DataFrame) -> int:
        """Append records (mappings, or the rows of a data frame) in one atomic, fsynced write.

        A data frame's index is used as ``candidate_id`` when it has no such column. Returns the number of
        lines written.

        Raises
        ------
        DataError
            A record without ``candidate_id``, with a ``decision`` other than accepted/rejected, or with a
            non-numeric number field; nothing is written then.
        """
        if isinstance(records, pd.DataFrame):
            frame = records if "candidate_id" in records.columns else records.rename_axis("candidate_id").reset_index()
            records = frame.to_dict(orient="records")
        now = datetime.now(UTC).isoformat()
        lines = []
        for k, record in enumerate(records):
            if not isinstance(record, Mapping):
                raise DataError(f"{self.path}: record #{k} is a {type(record).__name__}, not a mapping")
            normal = self._normalise(record, where=f"{self.path}: record #{k}", now=now)
            lines.append(json.dumps(normal, ensure_ascii=False, allow_nan=False, default=str) + "\n")
        if not lines:
            return 0
        data = "".join(lines).encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        log.info("%s: %d decision(s) recorded", self.path, len(lines))
        return len(lines)

    # ------------------------------------------------------------------ reading
    def read(self) -> pd.DataFrame:
        """All records, one row per line, columns :data:`LEDGER_COLUMNS` then any others (the older names of a
        record written before the aim had its name read as today's).

        Raises
        ------
        DataError
            A line that is not a JSON object (named by line number).
        """
        rows = [with_aim_names(record) for _, record in read_json_lines(self.path)] if self.path.exists() else []
        frame = pd.DataFrame(rows)
        for key in LEDGER_COLUMNS:
            if key not in frame.columns:
                frame[key] = None
        extra = [c for c in frame.columns if c not in LEDGER_COLUMNS]
        frame = frame[list(LEDGER_COLUMNS) + extra]
        for key in _NUMBERS:
            frame[key] = pd.to_numeric(frame[key], errors="coerce").astype("float64")
        for key in _INTEGERS:
            frame[key] = pd.to_numeric(frame[key], errors="coerce").astype("Int64")
        return frame

    def latest(self) -> pd.DataFrame:
        """The last decision for each candidate (index ``candidate_id``), e.g. to skip decided ones on a rerun."""
        frame = self.read()
        return frame.drop_duplicates("candidate_id", keep="last").set_index("candidate_id")

    def to_csv(self, path: str | Path) -> Path:
        """Write the ledger as CSV (atomically): :data:`CSV_COLUMNS` first, then the other columns."""
        frame = self.read()
        order = list(CSV_COLUMNS) + [c for c in frame.columns if c not in CSV_COLUMNS]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write_text(path, frame[order].to_csv(index=False, lineterminator="\n"))


def decision_records(
    table: pd.DataFrame,
    *,
    candidates: Sequence[Candidate] | None = None,
    aim_bin: int,
    extra: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Ledger records from a :func:`~irtbayes.benchfill.acceptance.decide_all` table.

    ``candidates`` adds ``source`` and ``prompt_hash`` (matched on ``candidate_id``); ``extra`` is added to
    every record (e.g. ``{"tau": 0.8}``). ``ci_prob`` is taken from the table's attrs when present.

    Examples
    --------
    >>> import xarray as xr
    >>> from irtbayes.benchfill.acceptance import decide_all
    >>> from irtbayes.benchfill.ledger import decision_records
    >>> rng = np.random.default_rng(0)
    >>> b = rng.normal(0.5, 0.1, (2, 500, 1))
    >>> posterior = xr.Dataset(
    ...     {"difficulty": (("chain", "draw", "item"), b), "difficulty_data": (("chain", "draw", "item"), b),
    ...      "slope": (("chain", "draw", "item"), rng.normal(1.0, 0.1, (2, 500, 1)))},
    ...     coords={"item": ["c1"]},
    ... )
    >>> records = decision_records(decide_all(posterior, aim_lo=0.0, aim_hi=1.0, n_responses=40), aim_bin=5)
    >>> records[0]["candidate_id"], records[0]["decision"], records[0]["aim_bin"]
    ('c1', 'accepted', 5)
    """
    by_id = {c.candidate_id: c for c in candidates or ()}
    out = []
    frame = table if "candidate_id" in table.columns else table.rename_axis("candidate_id").reset_index()
    for row in frame.to_dict(orient="records"):
        record: dict[str, Any] = {**row, "aim_bin": aim_bin}
        candidate = by_id.get(str(row["candidate_id"]))
        if candidate is not None:
            record["source"] = record.get("source") or candidate.source
            record["prompt_hash"] = record.get("prompt_hash") or candidate.prompt_hash
        if "ci_prob" in table.attrs:
            record.setdefault("ci_prob", table.attrs["ci_prob"])
        record.update(extra or {})
        out.append(record)
    return out
