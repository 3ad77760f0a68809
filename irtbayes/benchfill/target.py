"""BenchFill's target: the bank's data and the interval ``[lo, hi)`` new items should fill.

By default the target is the bin holding the widest gap of the chosen benchmark (all items when none is
chosen): the audit's ``gap_modal_bin``, the bin in which the midpoint of the widest empty interval falls most
often over the posterior draws. ``gap_interval=True`` takes the interval ``[gap_lo, gap_hi]`` itself (mean end
points over the draws whose gap lies in that bin). A bin number (0-based, of the audit's target) or an
explicit interval ``[L, U)`` may be given instead.

"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.auditing.targets import Target
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.files import json_ready
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

log = logging.getLogger(__name__)

#: Draws used by the audits for the leaderboard and the information curves.
AUDIT_MAX_DRAWS = 400
AUDIT_INFORMATION_DRAWS = 50


# ============================================================================================ target
@dataclass(frozen=True)
class TargetChoice:
    """The target interval ``[lo, hi)``, the audit binning it came from, and how it was chosen.

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
    >>> from irtbayes.benchfill.target import choose_target
    >>> choice, _ = choose_target(fit, data, interval=(0.0, 1.0))
    >>> (choice.lo, choice.hi), choice.how
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
        """What ``target.json`` holds (plus what the caller adds)."""
        return json_ready(
            {
                "target_lo": self.lo,
                "target_hi": self.hi,
                "target_bin": self.bin,
                "benchmark": self.benchmark,
                "how": self.how,
                "audit_target": self.target.to_dict(),
                "gap": self.gap,
            }
        )

    @classmethod
    def from_dict(cls, record: dict[str, Any], *, where: str = "target.json") -> TargetChoice:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        DataError
            Missing keys or values of the wrong kind (named).
        """
        try:
            spec = record["audit_target"]
            target = Target(
                edges=tuple(float(e) for e in spec["edges"]),
                weights=tuple(float(w) for w in spec["weights"]),
                kind=str(spec.get("kind", "weights")),
                description=str(spec.get("description", "")),
            )
            lo, hi = float(record["target_lo"]), float(record["target_hi"])
            bin_ = record.get("target_bin")
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
            raise DataError(f"{where}: not a BenchFill target ({type(err).__name__}: {err})") from None

    @property
    def label(self) -> str:
        bin_text = f"bin {self.bin}, " if self.bin is not None else ""
        return f"[{self.lo:.2f}, {self.hi:.2f}) ({bin_text}{self.benchmark or 'all items'})"


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
    target_bin: int | None,
    interval: Sequence[float] | None,
    gap_interval: bool,
) -> tuple[float, float, int | None, str]:
    """(lo, hi, bin, how) of the target: a bin given, an interval given, or the widest gap's bin or interval."""
    edges = tgt.edges_array
    if target_bin is not None:
        if isinstance(target_bin, bool) or not isinstance(target_bin, int | np.integer):
            raise SpecError(f"the target bin must be a whole number, got {target_bin!r}")
        if not 0 <= int(target_bin) < tgt.n_bins:
            raise SpecError(
                f"target bin {target_bin} is out of range: the audit's target has {tgt.n_bins} bins, numbered 0 to "
                f"{tgt.n_bins - 1}, over [{tgt.lo:g}, {tgt.hi:g}]"
            )
        k = int(target_bin)
        return float(edges[k]), float(edges[k + 1]), k, f"bin {k} of the audit's {tgt.n_bins} bins, chosen by the user"
    if interval is not None:
        if isinstance(interval, str) or len(interval) != 2:
            raise SpecError(f"the target interval must be two numbers L U, got {interval!r}")
        lo, hi = float(interval[0]), float(interval[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise SpecError(f"the target interval needs finite L < U, got L = {lo:g} and U = {hi:g}")
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


def choose_target(
    fit: Fit,
    data: ResponseData,
    *,
    benchmark: str | None = None,
    target_bin: int | None = None,
    interval: Sequence[float] | None = None,
    bins: int | None = None,
    range: Sequence[float] | None = None,
    gap_interval: bool = False,
    ci_prob: float = 0.9,
    audit_result: AuditResult | None = None,
) -> tuple[TargetChoice, AuditResult]:
    """Choose the target interval from an audit of ``fit`` (see the module notes).

    Parameters
    ----------
    fit, data
        The bank's fit and its data.
    benchmark
        Fill this benchmark's widest gap (default: all items together).
    target_bin
        Use this 0-based bin of the audit's target instead of the widest gap's.
    interval
        Use ``[L, U)`` instead.
    bins, range
        The audit's number of bins and range (defaults as in :func:`irtbayes.auditing.run.audit`).
    gap_interval
        Use the widest gap's interval ``[gap_lo, gap_hi]`` rather than its bin.
    audit_result
        A ready audit of ``fit`` (then ``bins`` and ``range`` are not used).

    Returns
    -------
    tuple
        The :class:`TargetChoice` and the audit it came from.

    Raises
    ------
    SpecError
        Both ``target_bin`` and ``interval``, an unknown benchmark, a bin out of range, or a bad interval.

    Examples
    --------
    The bin that most often holds the widest gap of a simulated bank. Here two gaps nearly tie (the true widest,
    0.82 logits, lies in bin 0, one of 0.75 in bin 3), and ``choice.how`` says how often the chosen bin won:

    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.target import choose_target
    >>> choice, bank_audit = choose_target(fit, data, bins=4)
    >>> choice.bin, choice.label
    (0, '[-2.70, -1.38) (bin 0, all items)')
    >>> choice.how
    'the bin holding the widest gap of all items most often: bin 0 [-2.70, -1.38), P = 0.53'
    """
    fit.refuse_if_unsettled("BenchFill's target")
    if target_bin is not None and interval is not None:
        raise SpecError("give a target bin or a target interval, not both")
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
    lo, hi, k, how = _interval(tgt, row, scope, target_bin=target_bin, interval=interval, gap_interval=gap_interval)
    choice = TargetChoice(lo=lo, hi=hi, bin=k, benchmark=benchmark, how=how, target=tgt, gap=gap)
    log.info("BenchFill target %s: %s", choice.label, how)
    return choice, result
