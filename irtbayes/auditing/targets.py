"""The audit target: a range [L, U] on the ability scale, K bins, and the weight the user wants on each bin.

Bins
----
``edges`` e_0 = L < e_1 < ... < e_K = U. Bin k (0-based) is [e_k, e_{k+1}), the last one closed [e_{K-1}, U].
A difficulty below L or above U lies outside the range and is reported separately (mass below / above).
Within a bin the target is spread uniformly, so a target is a piecewise-uniform density on [L, U].

Default range
-------------
From the evaluated subjects' abilities: the 2.5% and 97.5% quantiles of the *pooled* posterior draws of
every subject's ability (all chains, draws and subjects together, each subject counted equally), widened by
0.5 on each side and rounded outward to a multiple of 0.1 (so bin edges print cleanly). The pooled quantiles
follow where the subjects are while ignoring the far tails of single draws; the widening keeps the weakest
and strongest subjects' own neighbourhoods inside the range, since an item half a logit beyond a subject
still tells it apart from its neighbours.

Targets
-------
- ``uniform`` (default): weight 1/K per bin (equal-width bins, so a uniform density on [L, U]).
- ``weights``: explicit non-negative weights per bin, normalised to sum 1.
- ``group``: the ability distribution of chosen subjects (e.g. frontier systems). *Pooled*: weight k is
  the share of all posterior ability draws of the group's subjects (all draws, all group members) that fall
  in bin k, among those inside [L, U]. This is the posterior predictive distribution of "the ability of a
  randomly chosen group member" and equals the posterior mean of the per-draw bin shares. The target is
  therefore a fixed distribution, and the uncertainty reported for the DDM comes from the item
  difficulties alone.
- ``file``: a CSV with one row per bin, columns ``lo``, ``hi`` and ``weight`` (see :func:`read_target`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.core.errors import SpecError

__all__ = [
    "DEFAULT_BINS",
    "RANGE_PROBS",
    "RANGE_ROUND",
    "RANGE_WIDEN",
    "Target",
    "bin_edges",
    "check_range_holds_subjects",
    "default_range",
    "group_target",
    "read_target",
    "uniform_target",
    "weights_target",
]

#: Default number of bins.
DEFAULT_BINS = 10
#: Quantiles of the pooled ability draws that define the default range.
RANGE_PROBS = (0.025, 0.975)
#: How far the default range is widened beyond those quantiles, on each side (ability units).
RANGE_WIDEN = 0.5
#: The default range is rounded outward to a multiple of this.
RANGE_ROUND = 0.1


@dataclass(frozen=True)
class Target:
    """A target distribution over K bins of the ability scale.

    Attributes
    ----------
    edges
        K + 1 strictly increasing bin edges; ``edges[0]`` = L and ``edges[-1]`` = U.
    weights
        K non-negative weights, normalised on construction to sum 1.
    kind
        ``uniform``, ``weights``, ``group`` or ``file``.
    description
        One line saying where the target came from.

    Examples
    --------
    >>> from irtbayes.auditing.targets import Target
    >>> target = Target(edges=(-2.0, 0.0, 2.0), weights=(3.0, 1.0))  # weights are normalised
    >>> target.weights, target.lo, target.hi, target.n_bins
    ((0.75, 0.25), -2.0, 2.0, 2)
    >>> target.bin_label(1)
    '[0.00, 2.00]'
    >>> target.to_frame()
       bin   lo   hi  weight
    0    0 -2.0  0.0    0.75
    1    1  0.0  2.0    0.25
    """

    edges: tuple[float, ...]
    weights: tuple[float, ...]
    kind: str = "weights"
    description: str = ""

    def __post_init__(self) -> None:
        edges = _check_edges(self.edges)
        weights = _check_weights(self.weights, n_bins=len(edges) - 1)
        object.__setattr__(self, "edges", tuple(float(e) for e in edges))
        object.__setattr__(self, "weights", tuple(float(w) for w in weights))

    # ---------------------------------------------------------------- views
    @property
    def lo(self) -> float:
        """L, the lower end of the range."""
        return self.edges[0]

    @property
    def hi(self) -> float:
        """U, the upper end of the range."""
        return self.edges[-1]

    @property
    def n_bins(self) -> int:
        """K, the number of bins."""
        return len(self.weights)

    @property
    def edges_array(self) -> np.ndarray:
        """The edges as a float64 array (K + 1,)."""
        return np.asarray(self.edges, dtype="float64")

    @property
    def weights_array(self) -> np.ndarray:
        """The weights as a float64 array (K,), summing to 1."""
        return np.asarray(self.weights, dtype="float64")

    def bin_label(self, k: int) -> str:
        """``[lo, hi)`` of bin ``k`` (``]`` for the last bin)."""
        close = "]" if k == self.n_bins - 1 else ")"
        return f"[{self.edges[k]:.2f}, {self.edges[k + 1]:.2f}{close}"

    def to_frame(self) -> pd.DataFrame:
        """One row per bin: ``bin`` (0-based), ``lo``, ``hi``, ``weight``; readable by :func:`read_target`."""
        e = self.edges_array
        return pd.DataFrame({"bin": np.arange(self.n_bins), "lo": e[:-1], "hi": e[1:], "weight": self.weights_array})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: kind, description, range, bins, edges, weights."""
        return {
            "kind": self.kind,
            "description": self.description,
            "range": [self.lo, self.hi],
            "bins": self.n_bins,
            "edges": list(self.edges),
            "weights": list(self.weights),
        }


# -------------------------------------------------------------------------------------------- validation
def _check_edges(edges: Sequence[float] | np.ndarray) -> np.ndarray:
    try:
        arr = np.asarray(edges, dtype="float64")
    except (TypeError, ValueError):
        raise SpecError(f"bin edges must be numbers, got {edges!r}") from None
    if arr.ndim != 1 or arr.size < 2:
        raise SpecError(f"bin edges need at least two values (one bin), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise SpecError(f"bin edges must be finite, got {arr.tolist()}")
    steps = np.diff(arr)
    if np.any(steps <= 0):
        k = int(np.flatnonzero(steps <= 0)[0])
        raise SpecError(f"bin edges must increase strictly: edge {k} is {arr[k]:g} and edge {k + 1} is {arr[k + 1]:g}")
    return arr


def _check_weights(weights: Sequence[float] | np.ndarray, *, n_bins: int) -> np.ndarray:
    try:
        arr = np.asarray(weights, dtype="float64")
    except (TypeError, ValueError):
        raise SpecError(f"target weights must be numbers, got {weights!r}") from None
    if arr.ndim != 1 or arr.size != n_bins:
        raise SpecError(f"{arr.size} target weight(s) given for {n_bins} bin(s); give one weight per bin")
    if not np.all(np.isfinite(arr)):
        raise SpecError(f"target weights must be finite, got {arr.tolist()}")
    if np.any(arr < 0):
        k = int(np.flatnonzero(arr < 0)[0])
        raise SpecError(f"target weights must not be negative: bin {k} has weight {arr[k]:g}")
    total = float(arr.sum())
    if not total > 0:
        raise SpecError(f"target weights must sum to a positive number, got sum {total:g}")
    return arr / total


def _check_range(lo: float, hi: float) -> tuple[float, float]:
    try:
        lo_f, hi_f = float(lo), float(hi)
    except (TypeError, ValueError):
        raise SpecError(f"the target range must be two numbers [L, U], got {(lo, hi)!r}") from None
    if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
        raise SpecError(f"the target range must be finite, got [{lo_f:g}, {hi_f:g}]")
    if lo_f >= hi_f:
        raise SpecError(f"the target range needs L < U, got L = {lo_f:g} and U = {hi_f:g}")
    return lo_f, hi_f


def bin_edges(lo: float, hi: float, bins: int | Sequence[float] = DEFAULT_BINS) -> np.ndarray:
    """K + 1 edges: ``bins`` equal-width bins over [lo, hi], or ``bins`` itself when it is a sequence of edges.

    Raises
    ------
    SpecError
        K < 1, L >= U, or explicit edges that do not increase strictly or do not span [lo, hi].

    Examples
    --------
    >>> from irtbayes.auditing.targets import bin_edges
    >>> bin_edges(-2.0, 2.0, 4)
    array([-2., -1.,  0.,  1.,  2.])
    >>> bin_edges(-2.0, 2.0, [-2.0, -1.0, 2.0])  # explicit edges must span the range
    array([-2., -1.,  2.])
    """
    lo, hi = _check_range(lo, hi)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise SpecError(f"the number of bins must be at least 1, got {bins}")
        return np.linspace(lo, hi, int(bins) + 1)
    if isinstance(bins, (float, str, bool)):
        raise SpecError(f"bins must be a whole number of bins or a list of edges, got {bins!r}")
    edges = _check_edges(bins)
    if not (np.isclose(edges[0], lo) and np.isclose(edges[-1], hi)):
        raise SpecError(f"the bin edges span [{edges[0]:g}, {edges[-1]:g}] but the range is [{lo:g}, {hi:g}]")
    return edges


def default_range(
    ability: np.ndarray,
    *,
    probs: tuple[float, float] = RANGE_PROBS,
    widen: float = RANGE_WIDEN,
    round_to: float = RANGE_ROUND,
) -> tuple[float, float]:
    """The default target range from posterior ability draws (rule in the module docstring).

    Parameters
    ----------
    ability
        Ability draws of the evaluated subjects, any shape (all values are pooled).

    Returns
    -------
    tuple
        (L, U) = (floor((q_low - widen) / round_to) * round_to, ceil((q_high + widen) / round_to) * round_to).

    Examples
    --------
    The pooled 2.5% and 97.5% quantiles, widened by 0.5 and rounded outward to 0.1:

    >>> from irtbayes.auditing.targets import default_range
    >>> ability = np.random.default_rng(0).normal(size=(4, 500, 20))  # (chain, draw, subject)
    >>> default_range(ability)
    (-2.5, 2.5)
    """
    values = np.asarray(ability, dtype="float64").ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise SpecError("no finite ability draws to set the default target range from; give range=(L, U)")
    q_low, q_high = np.quantile(values, probs)
    lo = math.floor(round((q_low - widen) / round_to, 9)) * round_to
    hi = math.ceil(round((q_high + widen) / round_to, 9)) * round_to
    return round(lo, 10), round(hi, 10)


def check_range_holds_subjects(target: Target, ability_mean: np.ndarray, subjects: Sequence[str]) -> None:
    """Raise :class:`SpecError` when no subject's posterior mean ability lies in [L, U].

    An audit range that holds none of the evaluated subjects describes a region where no comparison can be
    made, which is almost always a mistake (a range on the wrong scale, or swapped signs).

    Examples
    --------
    >>> abilities = np.array([-0.5, 0.3])
    >>> check_range_holds_subjects(uniform_target(-2.0, 2.0), abilities, ["a", "b"])
    >>> check_range_holds_subjects(uniform_target(3.0, 5.0), abilities, ["a", "b"])
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: the target range [3, 5] holds no subject: the 2 subjects' posterior mean abilities lie in [-0.5, 0.3]; ...
    """
    means = np.asarray(ability_mean, dtype="float64")
    inside = (means >= target.lo) & (means <= target.hi)
    if not inside.any():
        lo_s, hi_s = float(np.nanmin(means)), float(np.nanmax(means))
        raise SpecError(
            f"the target range [{target.lo:g}, {target.hi:g}] holds no subject: the {len(subjects)} subjects' posterior "
            f"mean abilities lie in [{lo_s:.3g}, {hi_s:.3g}]; choose a range on the ability scale that covers some of them"
        )


# -------------------------------------------------------------------------------------------- constructors
def uniform_target(lo: float, hi: float, *, bins: int | Sequence[float] = DEFAULT_BINS) -> Target:
    """Equal weight on each bin: with equal-width bins, the uniform density on [lo, hi].

    With explicit unequal edges, the weights stay proportional to bin width, so the target is still the
    uniform density on [lo, hi].

    Examples
    --------
    >>> from irtbayes.auditing.targets import uniform_target
    >>> target = uniform_target(-3.0, 3.0, bins=6)
    >>> target.weights_array
    array([0.16666667, 0.16666667, 0.16666667, 0.16666667, 0.16666667,
           0.16666667])
    >>> target.description
    'uniform over [-3, 3] in 6 bins'
    """
    edges = bin_edges(lo, hi, bins)
    widths = np.diff(edges)
    return Target(
        edges=tuple(edges),
        weights=tuple(widths / widths.sum()),
        kind="uniform",
        description=f"uniform over [{edges[0]:g}, {edges[-1]:g}] in {len(widths)} bins",
    )


def weights_target(
    weights: Sequence[float] | np.ndarray,
    *,
    lo: float,
    hi: float,
    bins: int | Sequence[float] | None = None,
    description: str | None = None,
) -> Target:
    """Explicit weights per bin (normalised to sum 1); ``bins`` defaults to ``len(weights)`` equal bins.

    Examples
    --------
    >>> from irtbayes.auditing.targets import weights_target
    >>> target = weights_target([1, 2, 1], lo=-1.5, hi=1.5)
    >>> target.weights, target.edges
    ((0.25, 0.5, 0.25), (-1.5, -0.5, 0.5, 1.5))
    """
    n = len(weights)
    edges = bin_edges(lo, hi, n if bins is None else bins)
    if len(edges) - 1 != n:
        raise SpecError(f"{n} target weight(s) given for {len(edges) - 1} bin(s); give one weight per bin")
    return Target(
        edges=tuple(edges),
        weights=tuple(np.asarray(weights, dtype="float64")),
        kind="weights",
        description=description or f"user weights over [{edges[0]:g}, {edges[-1]:g}] in {n} bins",
    )


def group_target(
    ability: np.ndarray,
    *,
    lo: float,
    hi: float,
    bins: int | Sequence[float] = DEFAULT_BINS,
    names: Sequence[str] = (),
) -> Target:
    """The pooled posterior ability distribution of a group of subjects, binned (see the module docstring).

    Parameters
    ----------
    ability
        Ability draws of the group's subjects, any shape (pooled).
    names
        The group's subject ids, for the description.

    Examples
    --------
    Half of the group's ability draws fall in the top bin:

    >>> from irtbayes.auditing.targets import group_target
    >>> ability = np.array([[-0.5, 1.5], [0.5, 1.2]])  # (draw, subject) of the group
    >>> group_target(ability, lo=-2.0, hi=2.0, bins=4, names=["a", "b"]).weights
    (0.0, 0.25, 0.25, 0.5)
    """
    edges = bin_edges(lo, hi, bins)
    values = np.asarray(ability, dtype="float64").ravel()
    values = values[np.isfinite(values) & (values >= edges[0]) & (values <= edges[-1])]
    if values.size == 0:
        raise SpecError(
            f"no posterior ability draw of the group {list(names)} lies in the range [{edges[0]:g}, {edges[-1]:g}], "
            "so their distribution cannot serve as the target; widen the range or choose other subjects"
        )
    idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(idx, minlength=len(edges) - 1).astype("float64")
    shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
    return Target(
        edges=tuple(edges),
        weights=tuple(counts),
        kind="group",
        description=f"pooled posterior ability distribution of {len(names)} subject(s) ({shown}) "
        f"over [{edges[0]:g}, {edges[-1]:g}] in {len(edges) - 1} bins",
    )


def read_target(path: str | os.PathLike[str]) -> Target:
    """Read a target from a CSV file with one row per bin: columns ``lo``, ``hi`` and (optional) ``weight``.

    Rows must be contiguous and increasing (each ``lo`` equals the previous row's ``hi``); a missing
    ``weight`` column means equal weights. Other columns (e.g. ``bin``) are ignored.

    Raises
    ------
    SpecError
        Missing file or columns, non-numeric cells, gaps or overlaps between rows, invalid weights; the
        message names the file and the row (file line, header = line 1).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.auditing.targets import read_target, weights_target
    >>> path = Path(tempfile.mkdtemp()) / "target.csv"
    >>> weights_target([1, 3], lo=-2.0, hi=2.0).to_frame().to_csv(path, index=False)
    >>> read_target(path).weights
    (0.25, 0.75)
    """
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such target file")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: not a readable CSV target file ({err})") from None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in ("lo", "hi") if c not in frame.columns]
    if missing:
        raise SpecError(f"{path}: missing column(s) {missing}; a target file needs lo, hi and weight per bin")
    if len(frame) == 0:
        raise SpecError(f"{path}: the target file has no bins")
    numeric = {}
    for col in [c for c in ("lo", "hi", "weight") if c in frame.columns]:
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = values.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise SpecError(f"{path}: line {row + 2}, column '{col}' holds {frame[col].iloc[row]!r}, not a number")
        numeric[col] = values.to_numpy(dtype="float64")
    lo, hi = numeric["lo"], numeric["hi"]
    for row in range(len(frame)):
        if not lo[row] < hi[row]:
            raise SpecError(f"{path}: line {row + 2}: lo = {lo[row]:g} is not below hi = {hi[row]:g}")
        if row and not np.isclose(lo[row], hi[row - 1]):
            raise SpecError(
                f"{path}: line {row + 2}: lo = {lo[row]:g} does not meet the previous row's hi = {hi[row - 1]:g}; "
                "bins must be contiguous and increasing"
            )
    edges = np.concatenate([lo, hi[-1:]])
    weights = numeric.get("weight", np.ones(len(frame)))
    try:
        return Target(edges=tuple(edges), weights=tuple(weights), kind="file", description=f"read from {path}")
    except SpecError as err:
        raise SpecError(f"{path}: {err}") from None
