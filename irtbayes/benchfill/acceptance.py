"""The BenchFill acceptance rule, applied to posterior draws of a candidate's parameters.

The aim is the interval ``[aim_lo, aim_hi)`` on the ability scale that the new items should fill (by default the
bin of the widest gap; see :mod:`irtbayes.benchfill.aim`). A candidate is **accepted** when all of these hold:

1. it has at least ``min_responses`` responses;
2. its **sign-free slope** ``s`` (the slope of ``P = c + (1 - c) sigmoid(s theta + d)`` with ``s`` free to be
   negative, under a wide symmetric prior; see :mod:`irtbayes.benchfill.calibration`) is credibly above
   ``min_discrimination``: ``P(s > min_discrimination) >= discrimination_prob``. The model's own discrimination
   is ``exp(.)``, so ``P(a > 0) = 1`` whatever the responses: only a slope of either sign can say that the
   responses fall with ability (a mis-keyed item) or do not move with it (a flat one);
3. ``P(b in aim) = P(aim_lo <= b < aim_hi) >= tau`` (the interval is half-open, so adjacent bins never share a
   draw) under the calibration's prior, and also under the draws ``difficulty_data`` of the same likelihood
   with a flat prior on b (``p_in_aim_data``): the data, not only the prior, must place the candidate in the
   aim.

Why both priors: a candidate answered by few systems has a wide likelihood, and its posterior then leans on
the prior's shape. When the prior is right (candidates drawn like the bank's items) the posterior probability
is calibrated; when candidates are aimed at a bin, the normal prior pulls items from either side into it and
accepted items miss the bin more often than ``1 - tau``. Requiring the probability under both priors keeps
the share of accepted items that truly lie in the bin at ``tau`` or above in both cases, at the cost of
accepting fewer (see ``scripts/benchfill_oc.py``).

A missing piece is a failure, never a pass: without slope draws, or without data-alone draws, or with NaN
in them, the candidate is rejected. Probabilities are shares of posterior draws, compared with a tolerance
of 1e-12 so that a threshold met exactly (8 draws of 10 against ``tau=0.8``) counts as met. Otherwise the
candidate is **rejected** with the first failing reason:

- ``"not enough responses"``: too few systems answered it for the posterior to say much;
- ``"mis-keyed"``: the responses fall with ability, ``P(s < -min_discrimination) >= discrimination_prob``, the
  mirror image of the acceptance check (a wrong key, or a question the stronger systems get wrong for a
  reason that is not the skill);
- ``"too easy"``: most of the difficulty mass (more than half) lies below ``aim_lo``;
- ``"too hard"``: more than half lies at or above ``aim_hi``;
- ``"uncertain"``: neither side holds a majority but the mass inside is short of ``tau``;
- ``"prior-driven"``: ``p_in_aim`` reaches ``tau`` but ``p_in_aim_data`` does not;
- ``"data-alone missing"``: the posterior has no data-alone difficulty draws for it;
- ``"flat"``: no credible relation to ability: the slope is not credibly above ``min_discrimination`` and
  not credibly below ``-min_discrimination`` either (a trivial, ambiguous or noisy item, or too few
  responses to tell);
- ``"slope missing"``: the posterior has no sign-free slope draws for it.

A mis-keyed candidate is named before its location (the difficulty of an item whose responses fall with
ability says nothing about where it measures); a flat one after it (an item far outside the bin is first of
all out of the bin, and the slope of a very easy or very hard item is hard to pin down with few systems).
``failed`` lists every failing check, in the order above. Credible
intervals are equal-tailed with probability ``ci_prob`` (default 0.9, as in the fit and audit tables; linear
interpolation between order statistics). ``p_discrimination_positive`` is ``P(s > 0)`` of the sign-free slope.

A graded candidate (the full refit of a GRM or GPCM bank) is judged by the same rule with ``b`` its location,
the ability at which its expected score is half its maximum (where the audit places graded items); its
data-alone location and sign-free slope are those of the logistic curve through its scores as shares of the
maximum (see :mod:`irtbayes.benchfill.calibration`).

The rule's operating characteristic (:func:`operating_characteristic`): how often it accepts simulated
candidates truly in the bin.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.auditing.draws import posterior_dataset
from irtbayes.benchfill.calibration import calibrate_fixed, default_min_discrimination
from irtbayes.benchfill.grid import SAMPLE_DIMS, Prior, fixed_benchmark_sd, flatten_samples, level_prior
from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.core.irt import probability
from irtbayes.core.summaries import format_interval
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

__all__ = [
    "REASONS",
    "AcceptanceRule",
    "Decision",
    "decide",
    "decide_all",
    "operating_characteristic",
    "operating_characteristic_table",
]


#: Reasons a decision can give, in the order they are checked (``"in aim"`` for an accepted candidate).
REASONS: tuple[str, ...] = (
    "not enough responses",
    "mis-keyed",
    "too easy",
    "too hard",
    "uncertain",
    "prior-driven",
    "data-alone missing",
    "flat",
    "slope missing",
    "in aim",
)
_TOL = 1e-12
_SAMPLE_DIMS = ("chain", "draw")


@dataclass(frozen=True)
class Decision:
    """The verdict on one candidate, with the posterior numbers behind it.

    Examples
    --------
    >>> from irtbayes.benchfill.acceptance import decide
    >>> rng = np.random.default_rng(0)
    >>> b = rng.normal(0.5, 0.1, 1000)
    >>> decision = decide(b, None, aim_lo=0.0, aim_hi=1.0, n_responses=5, slope_draws=rng.normal(1.0, 0.1, 1000),
    ...                   data_difficulty_draws=b)
    >>> decision.decision, decision.reason, round(decision.p_in_aim, 2)
    ('rejected', 'not enough responses', 1.0)
    """

    decision: Literal["accepted", "rejected"]
    reason: str
    detail: str
    failed: tuple[str, ...]
    p_in_aim: float
    p_below: float
    p_above: float
    p_discrimination_positive: float
    difficulty_mean: float
    difficulty_sd: float
    difficulty_ci_low: float
    difficulty_ci_high: float
    discrimination_mean: float
    discrimination_ci_low: float
    discrimination_ci_high: float
    n_responses: int
    aim_lo: float
    aim_hi: float
    ci_prob: float
    p_in_aim_data: float = float("nan")
    p_slope_above_min: float = float("nan")
    p_slope_below_min: float = float("nan")
    slope_mean: float = float("nan")
    slope_ci_low: float = float("nan")
    slope_ci_high: float = float("nan")
    min_discrimination: float = 0.0

    @property
    def accepted(self) -> bool:
        return self.decision == "accepted"

    def to_record(self) -> dict[str, Any]:
        """A dict for :meth:`irtbayes.benchfill.ledger.Ledger.append` (``failed`` joined with ``"; "``)."""
        record = asdict(self)
        record["failed"] = "; ".join(self.failed)
        return record


@dataclass(frozen=True)
class AcceptanceRule:
    """BenchFill's acceptance rule: how sure the posterior must be that a candidate lies in the aim and
    discriminates (see the module notes). Pass one to :func:`decide`, :func:`decide_all` and
    :func:`~irtbayes.benchfill.run.calibrate_candidates`.

    Attributes
    ----------
    tau
        Least posterior probability of the aim, ``P(b in aim)``, under the model's prior and from the data alone, in (0, 1]
        (default 0.8).
    min_discrimination
        The least sign-free slope: ``P(slope > min_discrimination)`` must reach ``discrimination_prob``, and
        ``P(slope < -min_discrimination)`` reaching it makes a candidate "mis-keyed". A number >= 0, or None
        (default): BenchFill's calibration uses :data:`~irtbayes.benchfill.grid.MIN_DISCRIMINATION_SHARE` of the
        bank's typical discrimination (:meth:`resolved`); :func:`decide` and :func:`decide_all`, which see no
        bank, use 0.
    discrimination_prob
        Least posterior probability of the slope condition, in (0, 1] (default 0.9).
    min_responses
        Least responses a candidate needs, a whole number >= 0 (default 10).
    ci_prob
        Probability of the reported equal-tailed intervals, in (0, 1) (default 0.9).

    Examples
    --------
    >>> from irtbayes.benchfill.acceptance import AcceptanceRule
    >>> rule = AcceptanceRule(tau=0.9)
    >>> rule.to_dict()
    {'tau': 0.9, 'min_discrimination': None, 'discrimination_prob': 0.9, 'min_responses': 10, 'ci_prob': 0.9}
    >>> rule.resolved(0.25).min_discrimination
    0.25
    >>> AcceptanceRule(tau=0)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.SpecError: acceptance: tau must be in (0, 1], got 0
    """

    tau: float = 0.8
    min_discrimination: float | None = None
    discrimination_prob: float = 0.9
    min_responses: int = 10
    ci_prob: float = 0.9

    def __post_init__(self) -> None:
        if not (_is_number(self.tau) and 0 < self.tau <= 1):
            raise SpecError(f"acceptance: tau must be in (0, 1], got {self.tau!r}")
        if not (_is_number(self.discrimination_prob) and 0 < self.discrimination_prob <= 1):
            raise SpecError(f"acceptance: discrimination_prob must be in (0, 1], got {self.discrimination_prob!r}")
        md = self.min_discrimination
        if md is not None and not (_is_number(md) and np.isfinite(md) and md >= 0):
            raise SpecError(f"acceptance: min_discrimination must be a number >= 0 or None, got {md!r}")
        mr = self.min_responses
        if isinstance(mr, bool) or not isinstance(mr, (int, np.integer)) or mr < 0:
            raise SpecError(f"acceptance: min_responses must be a whole number >= 0, got {mr!r}")
        if not (_is_number(self.ci_prob) and 0 < self.ci_prob < 1):
            raise SpecError(f"acceptance: ci_prob must be in (0, 1), got {self.ci_prob!r}")

    def resolved(self, min_discrimination: float) -> AcceptanceRule:
        """This rule with ``min_discrimination`` where it has none (the bank's default, for instance)."""
        if self.min_discrimination is not None:
            return self
        return dataclasses.replace(self, min_discrimination=float(min_discrimination))

    def to_dict(self) -> dict[str, Any]:
        """The fields by name."""
        return asdict(self)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


@dataclass(frozen=True)
class _Rule:
    """An :class:`AcceptanceRule` applied to one aim ``[aim_lo, aim_hi)``."""

    aim_lo: float
    aim_hi: float
    tau: float
    min_discrimination: float
    discrimination_prob: float
    min_responses: int
    ci_prob: float

    def __post_init__(self) -> None:
        lo, hi = self.aim_lo, self.aim_hi
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
            raise SpecError(f"acceptance: the aim [{lo}, {hi}) must be finite with lo < hi")

    @classmethod
    def of(cls, rule: AcceptanceRule | None, aim_lo: float, aim_hi: float) -> _Rule:
        """``rule`` (default :class:`AcceptanceRule`) on the aim; a None ``min_discrimination`` is 0."""
        rule = AcceptanceRule() if rule is None else rule
        if not isinstance(rule, AcceptanceRule):
            raise SpecError(f"acceptance: rule must be an AcceptanceRule, got {type(rule).__name__}")
        fields = {**rule.to_dict(), "min_discrimination": float(rule.min_discrimination or 0.0)}
        return cls(aim_lo, aim_hi, **fields)


def _complete(values: np.ndarray | None, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """(values with incomplete rows set to NaN, mask of complete rows); ``None``: every row missing."""
    if values is None or values.shape[1] == 0:
        return np.full((n_items, 1), np.nan), np.zeros(n_items, dtype=bool)
    ok = np.all(np.isfinite(values), axis=1)
    return np.where(ok[:, None], values, np.nan), ok


def _share(mask: np.ndarray, ok: np.ndarray) -> np.ndarray:
    return np.where(ok, np.mean(mask, axis=1), np.nan)


def _decide_arrays(
    b: np.ndarray,
    a: np.ndarray | None,
    n_responses: np.ndarray,
    rule: _Rule,
    *,
    b_data: np.ndarray | None = None,
    slope: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The rule over items: ``b``, ``a``, ``b_data`` and ``slope`` are (item, sample); ``a=None`` means a fixed
    at 1 (1PL); ``b_data=None`` / ``slope=None`` (or NaN in an item's row): that piece is missing (a failure)."""
    aim_lo, aim_hi, tau = rule.aim_lo, rule.aim_hi, rule.tau
    if b.shape[1] == 0:
        raise FitError("acceptance: no posterior draws of difficulty")
    if not np.all(np.isfinite(b)):
        raise FitError("acceptance: the difficulty draws hold NaN or infinite values")
    if a is None:
        a = np.ones_like(b)
    elif a.shape[1] == 0 or not np.all(np.isfinite(a)):
        raise FitError("acceptance: the discrimination draws are empty or hold NaN or infinite values")
    n_items = b.shape[0]
    p_below = np.mean(b < aim_lo, axis=1)
    p_above = np.mean(b >= aim_hi, axis=1)
    p_in = np.mean((b >= aim_lo) & (b < aim_hi), axis=1)
    q = [(1 - rule.ci_prob) / 2, (1 + rule.ci_prob) / 2]
    b_ci = np.quantile(b, q, axis=1)
    a_ci = np.quantile(a, q, axis=1)

    b_data, has_data = _complete(b_data, n_items)
    p_data = _share((b_data >= aim_lo) & (b_data < aim_hi), has_data)
    slope, has_slope = _complete(slope, n_items)
    p_pos = _share(slope > 0, has_slope)
    p_neg = _share(slope < -rule.min_discrimination, has_slope)
    p_slope = _share(slope > rule.min_discrimination, has_slope)
    s_ci = np.where(has_slope[None, :], np.quantile(np.nan_to_num(slope), q, axis=1), np.nan)

    enough = n_responses >= rule.min_responses
    by_data = has_data & (p_data >= tau - _TOL)
    located = (p_in >= tau - _TOL) & by_data
    location = np.where(p_below > 0.5, "too easy", np.where(p_above > 0.5, "too hard", "uncertain"))
    location = np.where((p_in >= tau - _TOL) & has_data & ~by_data, "prior-driven", location)
    location = np.where((p_in >= tau - _TOL) & ~has_data, "data-alone missing", location)
    related = has_slope & (p_slope >= rule.discrimination_prob - _TOL)
    relation = np.where(
        ~has_slope, "slope missing", np.where(p_neg >= rule.discrimination_prob - _TOL, "mis-keyed", "flat")
    )
    return {
        "enough": enough,
        "located": located,
        "related": related,
        "location": location,
        "relation": relation,
        "p_in_aim": p_in,
        "p_in_aim_data": p_data,
        "p_below": p_below,
        "p_above": p_above,
        "p_discrimination_positive": p_pos,
        "p_slope_above_min": p_slope,
        "p_slope_below_min": p_neg,
        "slope_mean": np.where(has_slope, np.nan_to_num(slope).mean(axis=1), np.nan),
        "slope_ci_low": s_ci[0],
        "slope_ci_high": s_ci[1],
        "difficulty_mean": b.mean(axis=1),
        "difficulty_sd": b.std(axis=1, ddof=1) if b.shape[1] > 1 else np.zeros(b.shape[0]),
        "difficulty_ci_low": b_ci[0],
        "difficulty_ci_high": b_ci[1],
        "discrimination_mean": a.mean(axis=1),
        "discrimination_ci_low": a_ci[0],
        "discrimination_ci_high": a_ci[1],
    }


def _verdict(row: Mapping[str, Any], *, n: int, rule: _Rule) -> tuple[str, str, str, tuple[str, ...]]:
    aim_lo, aim_hi, tau = rule.aim_lo, rule.aim_hi, rule.tau
    md, discrimination_prob, min_responses = rule.min_discrimination, rule.discrimination_prob, rule.min_responses
    failed = []
    if not row["enough"]:
        failed.append("not enough responses")
    if not row["related"] and row["relation"] == "mis-keyed":
        failed.append("mis-keyed")
    if not row["located"]:
        failed.append(str(row["location"]))
    if not row["related"] and row["relation"] != "mis-keyed":
        failed.append(str(row["relation"]))
    interval = f"P({aim_lo:g} <= b < {aim_hi:g}) = {row['p_in_aim']:.3f}"
    slope = f"slope {format_interval(row, 'slope')}, P(slope > {md:g}) = {row['p_slope_above_min']:.3f}"
    if not failed:
        detail = (
            f"{interval} ({row['p_in_aim_data']:.3f} from the data alone) >= tau {tau:g} and {slope} >= "
            f"{discrimination_prob:g}, with {n} responses (at least {min_responses})"
        )
        return "accepted", "in aim", detail, ()
    notes = []
    if not row["enough"]:
        notes.append(f"{n} responses, fewer than {min_responses}")
    if not row["related"] and row["relation"] == "mis-keyed":
        notes.append(
            f"mis-keyed: responses fall with ability (P(slope < -{md:g}) = {row['p_slope_below_min']:.3f} >= "
            f"{discrimination_prob:g}; {slope})"
        )
    if not row["located"]:
        if row["location"] == "prior-driven":
            notes.append(
                f"{interval} with the prior, but {row['p_in_aim_data']:.3f} < tau {tau:g} from the data alone "
                "(flat prior on b)"
            )
        elif row["location"] == "data-alone missing":
            notes.append(f"{interval} with the prior, but the data-alone draws (flat prior on b) are missing")
        else:
            notes.append(
                f"{interval} < tau {tau:g} (P(b < {aim_lo:g}) = {row['p_below']:.3f}, "
                f"P(b >= {aim_hi:g}) = {row['p_above']:.3f})"
            )
    if not row["related"] and row["relation"] == "slope missing":
        notes.append("slope missing: no sign-free slope draws, so its relation to ability is unchecked")
    elif not row["related"] and row["relation"] == "flat":
        notes.append(f"flat: no credible relation to ability ({slope} < {discrimination_prob:g})")
    return "rejected", failed[0], "; ".join(notes), tuple(failed)


def _draws(values: Any, *, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype="float64").reshape(-1)
    if arr.size == 0:
        raise FitError(f"acceptance: no posterior draws of {name}")
    return arr


def decide(
    difficulty_draws: Any,
    discrimination_draws: Any | None,
    *,
    aim_lo: float,
    aim_hi: float,
    n_responses: int,
    slope_draws: Any | None,
    data_difficulty_draws: Any | None,
    rule: AcceptanceRule | None = None,
) -> Decision:
    """Accept or reject one candidate from posterior draws of its parameters.

    Parameters
    ----------
    difficulty_draws, discrimination_draws
        Draws of b and of the model's discrimination a, of any shape (flattened; e.g. (chain, draw)).
        ``discrimination_draws=None`` means a model that fixes ``a = 1`` (1PL). a is reported, not checked.
    aim_lo, aim_hi
        The aim ``[aim_lo, aim_hi)`` on the ability scale: the interval the new items should fill.
    n_responses
        Responses the candidate received.
    slope_draws
        Draws of the sign-free slope; ``None`` (or any NaN): missing, and the candidate is rejected.
    data_difficulty_draws
        Draws of b under a flat prior (the same likelihood); they must place b in the bin with probability
        ``tau`` too. ``None`` (or any NaN): missing, and the candidate is rejected.
    rule
        The :class:`AcceptanceRule` (default: its defaults): ``tau``, the least slope ``min_discrimination``
        (None: 0) with its ``discrimination_prob``, ``min_responses``, and the intervals' ``ci_prob``.

    Returns
    -------
    Decision

    Examples
    --------
    A candidate whose difficulty draws sit inside [0, 1) and whose slope is credibly positive, answered by 50 systems:

    >>> from irtbayes.benchfill.acceptance import decide
    >>> rng = np.random.default_rng(0)
    >>> b = rng.normal(0.5, 0.1, 1000)
    >>> decision = decide(b, np.exp(rng.normal(0, 0.1, 1000)), aim_lo=0.0, aim_hi=1.0, n_responses=50,
    ...                   slope_draws=rng.normal(1.0, 0.1, 1000), data_difficulty_draws=b)
    >>> decision.decision, decision.reason
    ('accepted', 'in aim')
    >>> decide(b + 2.0, None, aim_lo=0.0, aim_hi=1.0, n_responses=50, slope_draws=rng.normal(1.0, 0.1, 1000),
    ...        data_difficulty_draws=b + 2.0).reason
    'too hard'
    """
    bin_rule = _Rule.of(rule, aim_lo, aim_hi)
    b = _draws(difficulty_draws, name="difficulty")[None, :]
    a = None if discrimination_draws is None else _draws(discrimination_draws, name="discrimination")[None, :]
    if int(n_responses) != n_responses or n_responses < 0:
        raise SpecError(f"acceptance: n_responses must be a whole number >= 0, got {n_responses!r}")
    b_data = None if data_difficulty_draws is None else _draws(data_difficulty_draws, name="difficulty_data")[None, :]
    slope = None if slope_draws is None else _draws(slope_draws, name="slope")[None, :]
    stats = _decide_arrays(b, a, np.array([int(n_responses)]), bin_rule, b_data=b_data, slope=slope)
    row = {key: value[0] for key, value in stats.items()}
    decision, reason, detail, failed = _verdict(row, n=int(n_responses), rule=bin_rule)
    return Decision(
        decision=decision,  # type: ignore[arg-type]
        reason=reason,
        detail=detail,
        failed=failed,
        n_responses=int(n_responses),
        aim_lo=float(aim_lo),
        aim_hi=float(aim_hi),
        ci_prob=float(bin_rule.ci_prob),
        min_discrimination=float(bin_rule.min_discrimination),
        **{key: float(row[key]) for key in stats if key not in _FLAGS},
    )


#: The flags of :func:`_decide_arrays` that decide; its other entries are the numbers behind a decision.
_FLAGS = ("enough", "located", "related", "location", "relation")


def _item_matrix(var: xr.DataArray, *, name: str, items: pd.Index) -> np.ndarray:
    sample = [d for d in _SAMPLE_DIMS if d in var.dims]
    extra = [d for d in var.dims if d not in (*_SAMPLE_DIMS, "item")]
    if extra:
        raise SpecError(
            f"decide_all: '{name}' has dims {var.dims}; only (chain, draw, item) are supported "
            f"(extra dims {extra}: select one, e.g. posterior.sel(dim=0))"
        )
    if "item" not in var.dims:
        var = var.expand_dims(item=items)
    var = var.sel(item=items).transpose("item", *sample)
    return var.to_numpy().reshape(len(items), -1).astype("float64")


def _response_counts(n_responses: Any, items: pd.Index) -> np.ndarray:
    if isinstance(n_responses, ResponseData):
        counts = n_responses.responses["item"].astype(str).value_counts()
        return counts.reindex(items, fill_value=0).to_numpy(dtype="int64")
    if isinstance(n_responses, int | np.integer):
        if n_responses < 0:
            raise SpecError(f"decide_all: n_responses must be >= 0, got {n_responses}")
        return np.full(len(items), int(n_responses), dtype="int64")
    if isinstance(n_responses, Mapping | pd.Series):
        series = pd.Series(dict(n_responses) if isinstance(n_responses, Mapping) else n_responses)
        series.index = series.index.astype(str)
        missing = items.difference(series.index)
        if len(missing):
            raise DataError(f"decide_all: no response count for item(s) {list(missing[:5])}")
        values = series.reindex(items).to_numpy(dtype="float64")
        if np.any(values < 0) or np.any(values != np.round(values)):
            raise DataError("decide_all: response counts must be whole numbers >= 0")
        return values.astype("int64")
    raise SpecError(
        "decide_all: n_responses must be an int, a mapping or Series item -> count, or a ResponseData; "
        f"got {type(n_responses).__name__}"
    )


def decide_all(
    posterior: xr.Dataset | xr.DataTree,
    *,
    aim_lo: float,
    aim_hi: float,
    n_responses: int | Mapping[str, int] | pd.Series | ResponseData,
    items: Sequence[str] | None = None,
    rule: AcceptanceRule | None = None,
) -> pd.DataFrame:
    """Apply :func:`decide` to many items at once.

    Parameters
    ----------
    posterior
        A Dataset with ``difficulty`` over (chain, draw, item) and, unless the model fixes it at 1,
        ``discrimination`` over (chain, draw, item) (or without ``item``, when shared); ``slope`` (chain,
        draw, item), the sign-free slope, and ``difficulty_data`` (chain, draw, item), draws of b under a flat
        prior (see the module notes), as :func:`~irtbayes.benchfill.calibration.calibrate_fixed` and
        :func:`~irtbayes.benchfill.calibration.calibrate_full` write them: without either (or with NaN in an
        item's draws) the item is rejected. A DataTree is read from its ``posterior`` group.
    n_responses
        Responses per item: one int for all, a mapping or Series item -> count (every item needed), or the
        :class:`~irtbayes.data.responses.ResponseData` of the refit (items absent from it count 0).
    items
        The items to decide (the candidate ids); default every item in the posterior.
    rule
        The :class:`AcceptanceRule`, as in :func:`decide`.

    Returns
    -------
    pandas.DataFrame
        One row per item (index ``item``), columns ``decision``, ``reason``, ``detail``, ``failed``,
        ``p_in_aim``, ``p_in_aim_data``, ``p_below``, ``p_above``, ``p_discrimination_positive``
        (``P(slope > 0)``), ``p_slope_above_min`` (``P(slope > min_discrimination)``), ``p_slope_below_min``
        (``P(slope < -min_discrimination)``), ``slope_mean``, ``slope_ci_low``,
        ``slope_ci_high``, ``difficulty_mean``, ``difficulty_sd``, ``difficulty_ci_low``,
        ``difficulty_ci_high``, ``discrimination_mean``, ``discrimination_ci_low``, ``discrimination_ci_high``,
        ``n_responses``, ``aim_lo``, ``aim_hi``, ``min_discrimination`` (NaN where a piece is missing).
        ``attrs`` record ``ci_prob``, ``tau``, ``min_discrimination``, ``discrimination_prob`` and
        ``min_responses``.

    Examples
    --------
    >>> import xarray as xr
    >>> from irtbayes.benchfill.acceptance import decide_all
    >>> rng = np.random.default_rng(0)
    >>> b = np.stack([rng.normal(0.5, 0.1, (2, 500)), rng.normal(-1.5, 0.1, (2, 500))], axis=-1)  # (chain, draw, item)
    >>> slope = rng.normal(1.0, 0.1, (2, 500, 2))
    >>> posterior = xr.Dataset(
    ...     {"difficulty": (("chain", "draw", "item"), b), "difficulty_data": (("chain", "draw", "item"), b),
    ...      "slope": (("chain", "draw", "item"), slope), "discrimination": (("chain", "draw", "item"), np.abs(slope))},
    ...     coords={"item": ["in-bin", "too-easy"]},
    ... )
    >>> decide_all(posterior, aim_lo=0.0, aim_hi=1.0, n_responses=40)[["decision", "reason"]]
              decision     reason
    item
    in-bin    accepted     in aim
    too-easy  rejected   too easy
    """
    bin_rule = _Rule.of(rule, aim_lo, aim_hi)
    posterior = _posterior_dataset(posterior)
    difficulty = _with_str_items(posterior["difficulty"], name="difficulty")
    chosen = _chosen_items(difficulty, items)
    b = _item_matrix(difficulty, name="difficulty", items=chosen)
    a = _discrimination_matrix(posterior, chosen)
    pieces = {name: _piece_matrix(posterior, name, chosen) for name in ("difficulty_data", "slope")}
    counts = _response_counts(n_responses, chosen)
    stats = _decide_arrays(b, a, counts, bin_rule, b_data=pieces["difficulty_data"], slope=pieces["slope"])
    return _decision_table(stats, counts, chosen, bin_rule)


def _posterior_dataset(posterior: xr.Dataset | xr.DataTree) -> xr.Dataset:
    """The posterior as a Dataset (a DataTree's ``posterior`` group), checked to hold ``difficulty``."""
    posterior = posterior_dataset(posterior)
    if "difficulty" not in posterior.data_vars:
        raise FitError(f"decide_all: the posterior has no 'difficulty' (variables: {list(posterior.data_vars)})")
    return posterior


def _with_str_items(var: xr.DataArray, *, name: str) -> xr.DataArray:
    """``var`` with its ``item`` labels as strings; it must have an ``item`` dim."""
    if "item" not in var.dims:
        raise FitError(f"decide_all: '{name}' has no 'item' dim (dims {var.dims})")
    return var.assign_coords(item=var["item"].to_numpy().astype(str))


def _chosen_items(difficulty: xr.DataArray, items: Sequence[str] | None) -> pd.Index:
    """The items to decide: ``items`` (each checked to be in the posterior), or every item of ``difficulty``."""
    known = pd.Index(difficulty["item"].to_numpy())
    if items is None:
        return known
    chosen = pd.Index([str(i) for i in items])
    missing = chosen.difference(known)
    if len(missing):
        raise DataError(f"decide_all: item(s) {list(missing[:5])} are not in the posterior")
    return chosen


def _discrimination_matrix(posterior: xr.Dataset, items: pd.Index) -> np.ndarray | None:
    """The (item, sample) discrimination draws, or ``None`` when the posterior has none (a fixed at 1)."""
    if "discrimination" not in posterior.data_vars:
        return None
    discrimination = posterior["discrimination"]
    if "item" in discrimination.dims:
        discrimination = _with_str_items(discrimination, name="discrimination")
    return _item_matrix(discrimination, name="discrimination", items=items)


def _piece_matrix(posterior: xr.Dataset, name: str, items: pd.Index) -> np.ndarray | None:
    """The (item, sample) draws of ``difficulty_data`` or ``slope``, or ``None`` when the posterior lacks it."""
    if name not in posterior.data_vars:
        return None
    return _item_matrix(_with_str_items(posterior[name], name=name), name=name, items=items)


def _decision_table(stats: dict[str, np.ndarray], counts: np.ndarray, chosen: pd.Index, rule: _Rule) -> pd.DataFrame:
    """One row per item: its verdict, the numbers behind it and the rule's settings."""
    rows = []
    for k in range(len(chosen)):
        row = {key: value[k] for key, value in stats.items()}
        decision, reason, detail, failed = _verdict(row, n=int(counts[k]), rule=rule)
        rows.append({"decision": decision, "reason": reason, "detail": detail, "failed": "; ".join(failed)})
    table = pd.DataFrame(rows, index=pd.Index(chosen, name="item"))
    for key in (k for k in stats if k not in _FLAGS):
        table[key] = stats[key].astype("float64")
    table["n_responses"] = counts
    table["aim_lo"] = float(rule.aim_lo)
    table["aim_hi"] = float(rule.aim_hi)
    table["min_discrimination"] = float(rule.min_discrimination)
    table.attrs.update({k: v for k, v in asdict(rule).items() if k not in ("aim_lo", "aim_hi")})
    return table


# =========================================================================================== operating characteristic
def _check_oc(fit: Fit, truth: str, aim_lo: float, aim_hi: float, mis_keyed_share: float, flat_share: float) -> None:
    if "dim" in fit.posterior["ability"].dims:
        raise SpecError("operating_characteristic: needs a fit with one ability dimension")
    if truth not in ("uniform", "bank"):
        raise SpecError(f"operating_characteristic: truth must be 'uniform' or 'bank', got {truth!r}")
    if not float(aim_hi) - float(aim_lo) > 0:
        raise SpecError(f"operating_characteristic: need aim_lo < aim_hi, got [{aim_lo}, {aim_hi})")
    if not (0 <= mis_keyed_share and 0 <= flat_share and mis_keyed_share + flat_share <= 1):
        raise SpecError(
            f"operating_characteristic: mis_keyed_share {mis_keyed_share} and flat_share {flat_share} must be >= 0 "
            "with a sum <= 1"
        )


def operating_characteristic(
    fit: Fit,
    *,
    aim_lo: float,
    aim_hi: float,
    n_systems: Sequence[int] = (20, 50, 100, 200),
    n_candidates: int = 100,
    reps: int = 1,
    truth: Literal["uniform", "bank"] = "uniform",
    spread: float | None = None,
    discrimination_sd: float = 0.3,
    benchmark: str | None = None,
    tau: float = 0.8,
    min_responses: int = 10,
    discrimination_prob: float = 0.9,
    min_discrimination: float | None = None,
    mis_keyed_share: float = 0.0,
    flat_share: float = 0.0,
    flat_discrimination: float = 0.05,
    seed: int = 0,
    ability_points: int = 16,
    n_draws: int = 1000,
    prior: Prior = "candidates",
) -> pd.DataFrame:
    """Simulate candidates with known parameters, calibrate them on the fast path and decide.

    For each number of responding systems n and each repetition, n of the fit's subjects are chosen at
    random; their posterior mean abilities are taken as their true abilities. ``n_candidates`` candidates get
    true parameters from one of two scenarios:

    - ``truth="uniform"`` (candidates aimed at the bin that may miss it): difficulties uniform on
      ``[aim_lo - spread, aim_hi + spread]`` (default spread: the bin width, so a third lie in the bin),
      discriminations ``exp(Normal(0, discrimination_sd))``;
    - ``truth="bank"`` (candidates like the bank's items): (difficulty, log discrimination) drawn from the
      fitted hierarchy's predictive for a new item of ``benchmark`` (one posterior draw of the
      hyperparameters per candidate).

    A share ``mis_keyed_share`` of the candidates (chosen at random) is mis-keyed: their slope is minus the
    drawn discrimination, so their responses fall with ability; a share ``flat_share`` is flat: their slope is
    ``flat_discrimination``. The others are good. The systems' responses are simulated from the 2PL model
    with these slopes; the candidates are calibrated with :func:`calibrate_fixed` (with ``prior``) and
    decided with :func:`~irtbayes.benchfill.acceptance.decide_all` (``min_discrimination`` default:
    :func:`default_min_discrimination` of the fit). ``prior="bank"`` shrinks every candidate towards the
    bank's mean; ``prior="candidates"`` learns where the candidates are from all of them.

    Returns
    -------
    pandas.DataFrame
        One row per simulated candidate: ``n_systems``, ``rep``, ``candidate_id``, ``kind`` (``"good"``,
        ``"mis-keyed"`` or ``"flat"``), ``true_difficulty``, ``true_discrimination`` (the slope, negative for
        a mis-keyed candidate), ``in_bin`` (true difficulty in the bin), ``wanted`` (good and in the bin),
        ``p_in_aim``, ``p_in_aim_data``, ``slope_mean``, ``difficulty_mean``, ``decision``, ``reason``,
        ``failed``; summarise with :func:`operating_characteristic_table`. ``attrs`` record the settings.

    Examples
    --------
    Six simulated candidates aimed at [0, 1), answered by 60 of the bank's systems, calibrated on the fast path:

    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.acceptance import operating_characteristic, operating_characteristic_table
    >>> frame = operating_characteristic(fit, aim_lo=0.0, aim_hi=1.0, n_systems=[60], n_candidates=6, n_draws=50, seed=1)
    >>> frame.shape[0], bool(frame.loc[frame["decision"] == "accepted", "p_in_aim"].ge(0.8).all())
    (6, True)
    >>> operating_characteristic_table(frame)[["n_systems", "n_candidates", "n_accepted"]]
       n_systems  n_candidates  n_accepted
    0         60             6           1
    """
    fit.require_binary_model("the operating characteristic (simulated binary candidates on the fixed-bank grid)")
    _check_oc(fit, truth, aim_lo, aim_hi, mis_keyed_share, flat_share)
    spread = float(aim_hi) - float(aim_lo) if spread is None else float(spread)
    if min_discrimination is None:
        min_discrimination = default_min_discrimination(fit)
    rule = {
        "tau": tau,
        "min_responses": min_responses,
        "discrimination_prob": discrimination_prob,
        "min_discrimination": min_discrimination,
    }
    frames = _oc_rounds(
        fit, n_systems, reps, rng=np.random.default_rng(seed), truth=truth, benchmark=benchmark,
        n_candidates=n_candidates, n_bad=(round(mis_keyed_share * n_candidates), round(flat_share * n_candidates)),
        spread=spread, discrimination_sd=discrimination_sd, flat_discrimination=flat_discrimination,
        aim=(aim_lo, aim_hi), calibrate={"n_draws": n_draws, "ability_points": ability_points, "prior": prior},
        rule=rule,
    )  # fmt: skip
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(
        truth=truth, aim_lo=float(aim_lo), aim_hi=float(aim_hi), tau=float(tau), spread=spread,
        discrimination_sd=discrimination_sd, min_responses=min_responses, min_discrimination=float(min_discrimination),
        mis_keyed_share=mis_keyed_share, flat_share=flat_share, flat_discrimination=flat_discrimination, seed=seed,
        prior=prior,
    )  # fmt: skip
    return out


def _oc_rounds(
    fit: Fit, n_systems: Sequence[int], reps: int, *, rng: np.random.Generator, **settings: Any
) -> list[pd.DataFrame]:
    """Every repetition (:func:`_oc_round`, with ``settings``) for each number of systems, in order."""
    theta_all = fit.posterior["ability"].mean(SAMPLE_DIMS).to_series()
    theta_all.index = theta_all.index.astype(str)
    frames = []
    for n in n_systems:
        if n > len(theta_all):
            raise SpecError(f"operating_characteristic: {n} systems asked for but the fit has {len(theta_all)}")
        for rep in range(reps):
            frames.append(_oc_round(fit, theta_all, n, rep, rng=rng, **settings))
    return frames


def _oc_round(
    fit: Fit,
    theta_all: pd.Series,
    n: int,
    rep: int,
    *,
    rng: np.random.Generator,
    truth: str,
    benchmark: str | None,
    n_candidates: int,
    n_bad: tuple[int, int],
    spread: float,
    discrimination_sd: float,
    flat_discrimination: float,
    aim: tuple[float, float],
    calibrate: dict[str, Any],
    rule: dict[str, Any],
) -> pd.DataFrame:
    """One repetition of :func:`operating_characteristic` with ``n`` responding systems."""
    aim_lo, aim_hi = aim
    chosen = rng.choice(len(theta_all), size=n, replace=False)
    theta = theta_all.to_numpy()[chosen]
    subjects = theta_all.index[chosen]
    if truth == "bank":
        b, a = _bank_like(fit, benchmark, n_candidates, rng)
    else:
        b = rng.uniform(aim_lo - spread, aim_hi + spread, n_candidates)
        a = np.exp(rng.normal(0.0, discrimination_sd, n_candidates))
    kind = np.array(["mis-keyed"] * n_bad[0] + ["flat"] * n_bad[1] + ["good"] * (n_candidates - sum(n_bad)))
    kind = kind[rng.permutation(n_candidates)]
    a = np.where(kind == "mis-keyed", -a, np.where(kind == "flat", flat_discrimination, a))
    y = (rng.random((n, n_candidates)) < probability(theta[:, None], b[None, :], a[None, :])).astype(float)
    ids = [f"oc-{n}-{rep}-{k:04d}" for k in range(n_candidates)]
    frame = pd.DataFrame(
        {"subject": np.repeat(subjects.to_numpy(), n_candidates), "item": np.tile(ids, n), "response": y.ravel()}
    )
    meta = pd.DataFrame({"item": ids, "benchmark": benchmark})
    new = ResponseData.from_long(frame, items=meta, source=f"simulated candidates (n={n}, rep {rep})")
    post = calibrate_fixed(fit, new, seed=int(rng.integers(2**31)), **calibrate)
    counts = post["n_responses"].to_series()
    table = decide_all(post, aim_lo=aim_lo, aim_hi=aim_hi, n_responses=counts, rule=AcceptanceRule(**rule)).reindex(ids)
    in_bin = (b >= aim_lo) & (b < aim_hi)
    columns = ("p_in_aim", "p_in_aim_data", "slope_mean", "difficulty_mean", "decision", "reason", "failed")
    return pd.DataFrame(
        {
            "n_systems": n,
            "rep": rep,
            "candidate_id": ids,
            "kind": kind,
            "true_difficulty": b,
            "true_discrimination": a,
            "in_bin": in_bin,
            "wanted": in_bin & (kind == "good"),
        }
        | {c: table[c].to_numpy() for c in columns}
    )


def _bank_like(fit: Fit, benchmark: str | None, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(difficulty, discrimination) of ``n`` new items drawn from the fitted hierarchy's predictive."""
    post = fit.posterior
    n_total = int(post.sizes["chain"] * post.sizes["draw"])
    rows = rng.integers(0, n_total, n)
    fixed = fixed_benchmark_sd(fit.spec, "difficulty")
    prior_b = level_prior(post, fit.spec.hierarchy, "difficulty", rows, benchmark, None, benchmark_sd=fixed)
    b = rng.normal(prior_b.centre, prior_b.sd)
    if fit.spec.kind == "1pl":
        return b, np.exp(flatten_samples(post["log_discrimination_mu"])[rows])
    prior_la = level_prior(
        post,
        fit.spec.hierarchy,
        "log_discrimination",
        rows,
        benchmark,
        None,
        fixed_sd=fit.spec.priors.log_discrimination_sd_scale,
        benchmark_sd=fixed_benchmark_sd(fit.spec, "log_discrimination"),
    )
    return b, np.exp(rng.normal(prior_la.centre, prior_la.sd))


def operating_characteristic_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per number of systems: candidates, wanted candidates, accepted, precision and recall, and the rejection
    of mis-keyed and flat candidates.

    A candidate is wanted when it is good (neither mis-keyed nor flat) and truly in the bin.

    Returns
    -------
    pandas.DataFrame
        One row per ``n_systems``: ``n_candidates``, ``n_in_bin`` (wanted candidates), ``n_accepted``,
        ``n_true_accepted`` (wanted and accepted), ``precision`` (share of accepted candidates that are wanted;
        NaN when none is accepted), ``precision_se`` (binomial standard error, sqrt(p (1 - p) / n_accepted)),
        ``recall`` (share of wanted candidates accepted), ``mean_p_in_aim_accepted`` (the precision the
        posterior promises); for ``kind`` in mis-keyed and flat: ``n_mis_keyed`` / ``n_flat``,
        ``mis_keyed_rejected`` / ``flat_rejected`` (share rejected) and ``mis_keyed_named`` / ``flat_named``
        (share rejected with that reason among its failed checks; NaN when there are none of that kind).

    Examples
    --------
    Precision and recall from a table of decisions on candidates whose truth is known:

    >>> from irtbayes.benchfill.acceptance import operating_characteristic_table
    >>> frame = pd.DataFrame(
    ...     {"n_systems": 50, "decision": ["accepted", "accepted", "rejected", "rejected"], "in_bin": [True, False, True, False],
    ...      "p_in_aim": [0.9, 0.85, 0.4, 0.1]}
    ... )
    >>> operating_characteristic_table(frame)[["n_accepted", "n_true_accepted", "precision", "recall"]]
       n_accepted  n_true_accepted  precision  recall
    0           2                1        0.5     0.5
    """
    rows = []
    for n, group in frame.groupby("n_systems", sort=True):
        accepted = group["decision"].eq("accepted").to_numpy()
        wanted = group["wanted" if "wanted" in group.columns else "in_bin"].to_numpy(dtype=bool)
        n_acc = int(accepted.sum())
        n_true = int((accepted & wanted).sum())
        precision = n_true / n_acc if n_acc else math.nan
        row: dict[str, Any] = {
            "n_systems": int(n),
            "n_candidates": len(group),
            "n_in_bin": int(wanted.sum()),
            "n_accepted": n_acc,
            "n_true_accepted": n_true,
            "precision": precision,
            "precision_se": math.sqrt(precision * (1 - precision) / n_acc) if n_acc else math.nan,
            "recall": n_true / int(wanted.sum()) if wanted.any() else math.nan,
            "mean_p_in_aim_accepted": float(group.loc[accepted, "p_in_aim"].mean()) if n_acc else math.nan,
        }
        kinds = group["kind"] if "kind" in group.columns else pd.Series("good", index=group.index)
        failed = group["failed"].fillna("") if "failed" in group.columns else pd.Series("", index=group.index)
        for kind, key in (("mis-keyed", "mis_keyed"), ("flat", "flat")):
            mask = (kinds == kind).to_numpy()
            row[f"n_{key}"] = int(mask.sum())
            if mask.any():
                row[f"{key}_rejected"] = float((~accepted[mask]).mean())
                row[f"{key}_named"] = float(failed[mask].map(lambda f, k=kind: k in f.split("; ")).mean())
            else:
                row[f"{key}_rejected"] = row[f"{key}_named"] = math.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(frame.attrs)
    return table
