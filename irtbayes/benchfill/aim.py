"""BenchFill's aim: the interval ``[lo, hi)`` on the ability scale that the new items should fill.

By default the aim is the bin holding the widest gap of the chosen benchmark (all items when none is chosen): the
audit's ``gap_modal_bin``, the bin in which the midpoint of the widest empty interval falls most often over the
posterior draws. ``gap_interval=True`` takes the interval ``[gap_lo, gap_hi]`` itself (mean end points over the
draws whose gap lies in that bin). A bin number (0-based, of the audit's target) or an explicit interval
``[L, U)`` may be given instead.

The audit's :class:`~irtbayes.auditing.targets.Target` is another thing: the difficulty distribution the audit
asks for (range, bins, weights). An :class:`Aim` holds the audit target its bins come from.

Older BenchFill folders called the aim "target" (``target.json``, ``target_lo``, ``p_in_target``, ...);
:data:`OLD_NAMES` maps those names to today's, and every reader goes through :func:`with_aim_names` (a record) or
:func:`frame_with_aim_names` (a table), so such folders still load.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.auditing.targets import Target
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.files import json_ready, read_json
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

__all__ = [
    "AIM_FILE",
    "AUDIT_INFORMATION_DRAWS",
    "AUDIT_MAX_DRAWS",
    "OLD_AIM_FILE",
    "OLD_NAMES",
    "OLD_REASONS",
    "Aim",
    "choose_aim",
    "frame_with_aim_names",
    "read_aim",
    "with_aim_names",
]

log = logging.getLogger(__name__)

#: Draws used by the audits for the leaderboard and the information curves.
AUDIT_MAX_DRAWS = 400
AUDIT_INFORMATION_DRAWS = 50

#: The file ``benchfill propose`` writes the aim into, and the name older versions gave it.
AIM_FILE = "aim.json"
OLD_AIM_FILE = "target.json"

#: Keys and columns older BenchFill folders wrote -> today's names. ``target`` is the aim's key in
#: ``before_after.json`` (and the ledger's ``(lo, hi, bin)`` shorthand); the audit's target keeps its own keys
#: (``audit_target``, ``target_weight``).
OLD_NAMES: dict[str, str] = {
    "target": "aim",
    "target_lo": "aim_lo",
    "target_hi": "aim_hi",
    "target_bin": "aim_bin",
    "benchmark_target": "aim_benchmark",
    "p_in_target": "p_in_aim",
    "p_in_target_data": "p_in_aim_data",
    "mean_p_in_target_accepted": "mean_p_in_aim_accepted",
}
#: Values older folders wrote in the ``reason`` and ``bin_check`` columns -> today's.
OLD_REASONS: dict[str, str] = {"in target": "in aim"}
_REASON_COLUMNS = ("reason", "bin_check")
#: The measure a saved ``conclusions`` table named ``"target bin K empty"``, now ``"aim bin K empty"``.
_OLD_MEASURE = r"^target bin (\d+) empty$"


def with_aim_names(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` (a ledger line, an aim file, a saved summary) with the old names of :data:`OLD_NAMES` and
    :data:`OLD_REASONS` replaced by today's; where both an old and a new key are present, the new one wins.

    Examples
    --------
    >>> with_aim_names({"target_lo": 0.0, "target_hi": 1.0, "reason": "in target", "audit_target": {}})
    {'aim_lo': 0.0, 'aim_hi': 1.0, 'reason': 'in aim', 'audit_target': {}}
    """
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = OLD_NAMES.get(str(key), str(key))
        if name == key or name not in record:
            out[name] = value
    for key in _REASON_COLUMNS:
        value = out.get(key)
        if isinstance(value, str) and value in OLD_REASONS:
            out[key] = OLD_REASONS[value]
    return out


def frame_with_aim_names(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` (a ledger or a saved table) with the old column names and reasons replaced as
    :func:`with_aim_names` does, and a conclusions table's measure ``"target bin K empty"`` as ``"aim bin K
    empty"``; where both an old and a new column are present, the new one wins where it has a value.

    Examples
    --------
    >>> old = pd.DataFrame({"candidate_id": ["c1"], "p_in_target": [0.9], "reason": ["in target"]})
    >>> frame_with_aim_names(old).columns.tolist(), frame_with_aim_names(old)["reason"].tolist()
    (['candidate_id', 'p_in_aim', 'reason'], ['in aim'])
    """
    out = frame.copy()
    for old, new in OLD_NAMES.items():
        if old not in out.columns:
            continue
        if new in out.columns:
            out[new] = out[new].where(out[new].notna(), out[old])
            out = out.drop(columns=old)
        else:
            out = out.rename(columns={old: new})
    for key in _REASON_COLUMNS:
        if key in out.columns:
            out[key] = out[key].replace(OLD_REASONS)
    if "measure" in out.columns:
        out["measure"] = out["measure"].replace(_OLD_MEASURE, r"aim bin \1 empty", regex=True)
    return out


# ============================================================================================ aim
@dataclass(frozen=True)
class Aim:
    """The aim: the interval ``[lo, hi)`` on the ability scale that the new items should fill, the audit binning
    it came from, and how it was chosen.

    Attributes
    ----------
    lo, hi
        The interval on the ability scale (half-open, as in the acceptance rule).
    bin
        0-based bin of ``target`` that is the interval, or ``None`` for an interval that is not one of its bins.
    benchmark
        The benchmark whose gap is filled (``None``: all items).
    how
        One sentence saying how the interval was chosen.
    target
        The audit's target (range, bins, weights), reused for the before/after audits.
    gap
        The audit's widest gap for the scope: ``max_gap`` (mean and interval), ``gap_lo``, ``gap_hi``,
        ``modal_bin``, ``p_modal_bin``.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    >>> (aim.lo, aim.hi), aim.how
    ((0.0, 1.0), 'the interval [0, 1) given by the user')
    """

    lo: float
    hi: float
    bin: int | None
    benchmark: str | None
    how: str
    target: Target
    gap: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """What ``aim.json`` holds (plus what the caller adds)."""
        return json_ready(
            {
                "aim_lo": self.lo,
                "aim_hi": self.hi,
                "aim_bin": self.bin,
                "benchmark": self.benchmark,
                "how": self.how,
                "audit_target": self.target.to_dict(),
                "gap": self.gap,
            }
        )

    @classmethod
    def from_dict(cls, record: Mapping[str, Any], *, where: str = AIM_FILE) -> Aim:
        """Rebuild from :meth:`to_dict` output (or an older ``target.json``'s, see :func:`with_aim_names`).

        Raises
        ------
        DataError
            Missing keys or values of the wrong kind (named).
        """
        try:
            record = with_aim_names(record)
            spec = record["audit_target"]
            target = Target(
                edges=tuple(float(e) for e in spec["edges"]),
                weights=tuple(float(w) for w in spec["weights"]),
                kind=str(spec.get("kind", "weights")),
                description=str(spec.get("description", "")),
            )
            lo, hi = float(record["aim_lo"]), float(record["aim_hi"])
            bin_ = record.get("aim_bin")
            return cls(
                lo=lo,
                hi=hi,
                bin=None if bin_ is None else int(bin_),
                benchmark=record.get("benchmark"),
                how=str(record.get("how", "")),
                target=target,
                gap=dict(record.get("gap") or {}),
            )
        except (KeyError, TypeError, ValueError, SpecError) as err:
            raise DataError(f"{where}: not a BenchFill aim ({type(err).__name__}: {err})") from None

    @property
    def label(self) -> str:
        bin_text = f"bin {self.bin}, " if self.bin is not None else ""
        return f"[{self.lo:.2f}, {self.hi:.2f}) ({bin_text}{self.benchmark or 'all items'})"


def read_aim(path: str | os.PathLike[str]) -> tuple[Aim, dict[str, Any]]:
    """The aim and the whole content of an aim file written by ``benchfill propose``.

    ``path`` is the file, or the proposal folder: then its ``aim.json``, or the ``target.json`` of a folder written
    before the aim had its name.

    Raises
    ------
    DataError
        No such file, or one that holds no aim.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> old = {"target_lo": 0.0, "target_hi": 1.0, "target_bin": 2, "audit_target": {"edges": [-1, 0, 1, 2], "weights": [1, 1, 1]}}
    >>> _ = (folder / "target.json").write_text(json.dumps(old))
    >>> aim, record = read_aim(folder)
    >>> (aim.lo, aim.hi, aim.bin), record["aim_bin"]
    ((0.0, 1.0, 2), 2)
    """
    path = Path(path)
    if path.is_dir():
        old = path / OLD_AIM_FILE
        folder, path = path, old if old.is_file() and not (path / AIM_FILE).is_file() else path / AIM_FILE
        if not path.is_file():
            raise DataError(f"{path}: missing; is {folder} a folder written by `benchfill propose`?")
    elif not path.is_file():
        raise DataError(f"{path}: no such file or folder (an {AIM_FILE} written by `benchfill propose`, or its folder)")
    record = with_aim_names(read_json(path))
    return Aim.from_dict(record, where=str(path)), record


def _scope_row(result: AuditResult, benchmark: str | None) -> pd.Series:
    table = result.benchmarks
    kind, name = ("benchmark", benchmark) if benchmark else ("all", "all")
    rows = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)]
    if rows.empty:
        raise SpecError(f"the audit has no scope {kind} '{name}'")
    return rows.iloc[0]


def _matching_bin(lo: float, hi: float, edges: np.ndarray) -> int | None:
    """The bin whose edges are ``lo`` and ``hi`` (to 1e-9), else ``None``."""
    for k in np.arange(len(edges) - 1):
        if math.isclose(edges[k], lo, abs_tol=1e-9) and math.isclose(edges[k + 1], hi, abs_tol=1e-9):
            return int(k)
    return None


def _interval(
    tgt: Target,
    row: pd.Series,
    scope: str,
    *,
    aim_bin: int | None,
    interval: Sequence[float] | None,
    gap_interval: bool,
) -> tuple[float, float, int | None, str]:
    """(lo, hi, bin, how) of the aim: a bin given, an interval given, or the widest gap's bin or interval."""
    edges = tgt.edges_array
    if aim_bin is not None:
        if isinstance(aim_bin, bool) or not isinstance(aim_bin, int | np.integer):
            raise SpecError(f"the aim's bin must be a whole number, got {aim_bin!r}")
        if not 0 <= int(aim_bin) < tgt.n_bins:
            raise SpecError(
                f"aim bin {aim_bin} is out of range: the audit's target has {tgt.n_bins} bins, numbered 0 to "
                f"{tgt.n_bins - 1}, over [{tgt.lo:g}, {tgt.hi:g}]"
            )
        k = int(aim_bin)
        return float(edges[k]), float(edges[k + 1]), k, f"bin {k} of the audit's {tgt.n_bins} bins, chosen by the user"
    if interval is not None:
        if isinstance(interval, str) or len(interval) != 2:
            raise SpecError(f"the aim interval must be two numbers L U, got {interval!r}")
        lo, hi = float(interval[0]), float(interval[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise SpecError(f"the aim interval needs finite L < U, got L = {lo:g} and U = {hi:g}")
        return lo, hi, _matching_bin(lo, hi, edges), f"the interval [{lo:g}, {hi:g}) given by the user"
    k = int(row["gap_modal_bin"])
    p = float(row["gap_p_modal_bin"])
    if gap_interval:
        lo, hi = float(row["gap_lo"]), float(row["gap_hi"])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise SpecError(f"the audit's widest gap for {scope} has no usable interval ([{lo}, {hi}])")
        how = (
            f"the widest gap of {scope}: its mean interval [{lo:.2f}, {hi:.2f}] over the draws whose gap lies in "
            f"bin {k} (P = {p:.2f})"
        )
        return lo, hi, k, how
    how = f"the bin holding the widest gap of {scope} most often: bin {k} {tgt.bin_label(k)}, P = {p:.2f}"
    return float(edges[k]), float(edges[k + 1]), k, how


def choose_aim(
    fit: Fit,
    data: ResponseData,
    *,
    benchmark: str | None = None,
    aim_bin: int | None = None,
    interval: Sequence[float] | None = None,
    bins: int | None = None,
    range: Sequence[float] | None = None,
    gap_interval: bool = False,
    ci_prob: float = 0.9,
    audit_result: AuditResult | None = None,
    target_bin: int | None = None,
) -> tuple[Aim, AuditResult]:
    """Choose the aim, the interval ``[lo, hi)`` the new items should fill, from an audit of ``fit`` (see the module
    notes).

    Parameters
    ----------
    fit, data
        The bank's fit and its data.
    benchmark
        Fill this benchmark's widest gap (default: all items together).
    aim_bin
        Aim at this 0-based bin of the audit's target instead of the widest gap's.
    interval
        Aim at ``[L, U)`` instead.
    bins, range
        The audit's number of bins and range (defaults as in :func:`irtbayes.auditing.run.audit`).
    gap_interval
        Aim at the widest gap's interval ``[gap_lo, gap_hi]`` rather than its bin.
    audit_result
        A ready audit of ``fit`` (then ``bins`` and ``range`` are not used).
    target_bin
        Deprecated (a :class:`DeprecationWarning`): the old name of ``aim_bin``.

    Returns
    -------
    tuple
        The :class:`Aim` and the audit it came from.

    Raises
    ------
    SpecError
        Both ``aim_bin`` and ``interval``, an unknown benchmark, a bin out of range, or a bad interval.

    Examples
    --------
    The bin that most often holds the widest gap of a simulated bank. Here two gaps nearly tie (the true widest,
    0.82 logits, lies in bin 0, one of 0.75 in bin 3), and ``aim.how`` says how often the chosen bin won:

    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> aim, bank_audit = choose_aim(fit, data, bins=4)
    >>> aim.bin, aim.label
    (0, '[-2.70, -1.38) (bin 0, all items)')
    >>> aim.how
    'the bin holding the widest gap of all items most often: bin 0 [-2.70, -1.38), P = 0.53'
    """
    if target_bin is not None:
        warnings.warn("choose_aim: target_bin is deprecated: use aim_bin", DeprecationWarning, stacklevel=2)
        if aim_bin is not None:
            raise SpecError("give aim_bin, not both aim_bin and its old name target_bin")
        aim_bin = target_bin
    fit.refuse_if_unsettled("BenchFill's aim")
    if aim_bin is not None and interval is not None:
        raise SpecError("give the aim as a bin or as an interval, not both")
    if benchmark is not None:
        known = [str(b) for b in data.benchmarks]
        if benchmark not in known:
            raise SpecError(f"benchmark '{benchmark}' is not in {data.source}; its benchmarks are {known[:20]}")
    result = audit_result or audit(
        fit,
        data,
        bins=bins,
        range=range,
        ci_prob=ci_prob,
        max_draws=AUDIT_MAX_DRAWS,
        information_draws=AUDIT_INFORMATION_DRAWS,
        progress=False,
    )
    tgt = result.target
    row = _scope_row(result, benchmark)
    scope = f"benchmark '{benchmark}'" if benchmark else "all items"
    gap = {
        "scope": scope,
        "max_gap_mean": float(row["max_gap_mean"]),
        "max_gap_ci_low": float(row["max_gap_ci_low"]),
        "max_gap_ci_high": float(row["max_gap_ci_high"]),
        "gap_lo": float(row["gap_lo"]),
        "gap_hi": float(row["gap_hi"]),
        "modal_bin": int(row["gap_modal_bin"]),
        "p_modal_bin": float(row["gap_p_modal_bin"]),
        "ci_prob": result.ci_prob,
    }
    lo, hi, k, how = _interval(tgt, row, scope, aim_bin=aim_bin, interval=interval, gap_interval=gap_interval)
    aim = Aim(lo=lo, hi=hi, bin=k, benchmark=benchmark, how=how, target=tgt, gap=gap)
    log.info("BenchFill aim %s: %s", aim.label, how)
    return aim, result


# ============================================================================================ old names
choose_target = deprecated_alias(choose_aim, "choose_target")


def __getattr__(name: str) -> Any:
    if name == "TargetChoice":
        warnings.warn("TargetChoice is deprecated: use Aim", DeprecationWarning, stacklevel=2)
        return Aim
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
