"""The settings of an audit: :class:`AuditSettings`, one object for every choice :func:`~irtbayes.auditing.run.audit`
takes, checked in one place, and the resolution of the target they describe.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from irtbayes.auditing.coverage import DEFAULT_MIN_ITEMS
from irtbayes.auditing.ranking import DEFAULT_GROUP_THRESHOLD, DEFAULT_TOP_K
from irtbayes.auditing.targets import (
    DEFAULT_BINS,
    RANGE_PROBS,
    RANGE_ROUND,
    RANGE_WIDEN,
    Target,
    default_range,
    group_target,
    read_target,
    uniform_target,
    weights_target,
)
from irtbayes.core.errors import SpecError, refuse_unknown
from irtbayes.core.information import DEFAULT_GRID_POINTS
from irtbayes.core.parallel import Scheduler, check_scheduler, scheduler_label
from irtbayes.core.summaries import check_ci_prob

__all__ = [
    "DEFAULT_INFORMATION_DRAWS",
    "DEFAULT_MAX_DRAWS",
    "ENSEMBLES",
    "GRADED_POINTS",
    "AuditFields",
    "AuditSettings",
    "resolve_target",
]

#: Default cap on the draws used for the leaderboard.
DEFAULT_MAX_DRAWS = 1000
#: Default cap on the draws used for the information curves.
DEFAULT_INFORMATION_DRAWS = 200
#: The item locations the ensemble measures can use (see ``AuditSettings.ensemble``).
ENSEMBLES = ("auto", "deconvolved", "draws")
#: Where graded items enter the measures of the whole set (see ``AuditSettings.graded_points``).
GRADED_POINTS = ("location", "thresholds")


@dataclass(frozen=True)
class AuditSettings:
    """Every setting of an audit, with its default.

    Pass one to :func:`~irtbayes.auditing.run.audit` as ``settings=``, or give the fields as keyword arguments
    (``audit(fit, data, bins=8, seed=1)``); :meth:`checked` validates them.

    Attributes
    ----------
    target
        None or ``"uniform"`` (default), a :class:`~irtbayes.auditing.targets.Target`, a CSV path
        (:func:`~irtbayes.auditing.targets.read_target`), or a list of weights per bin.
    bins
        Number of bins K (default 10) or explicit edges.
    range
        (L, U); default from the subjects' abilities (see :mod:`irtbayes.auditing.targets`).
    group
        Subject ids whose pooled ability distribution is the target (instead of ``target``).
    ci_prob
        Probability of the equal-tailed credible intervals.
    min_items
        m in P(bin holds fewer than m items).
    max_draws
        At most this many draws (evenly spaced) for the leaderboard; None: all.
    information_draws
        At most this many draws (evenly spaced) for the information curves; None: all.
    resample_items
        Bayesian bootstrap over items in the re-weighted accuracy (see :mod:`irtbayes.auditing.ranking`).
    top_k, group_threshold
        Saturation's top subjects; P(ahead) that separates leaderboard groups.
    grid_points
        Points of the information grid over [L, U].
    ability_dim
        Multidimensional fits: use this ability dimension everywhere.
    seed
        Seed of the Bayesian bootstrap and of the deconvolved locations.
    progress
        Show a progress bar over chunks of draws.
    ensemble
        Item locations for the measures of the whole set of difficulties (coverage, DDM, Maximum Gap):
        ``"deconvolved"`` draws them under each benchmark's estimated difficulty distribution
        (:mod:`irtbayes.auditing.deconvolve`), which removes the normal prior's pull toward "no gaps";
        ``"draws"`` uses the fit's difficulty draws as they are; ``"auto"`` (default) deconvolves when the
        posterior holds the hierarchy's hyperparameters (``difficulty_sd`` and the item's prior mean), else
        uses the draws. ``settings["ensemble"]`` records the choice.
    fixed_items
        Items whose draws enter the ensemble measures as they are, even when deconvolving (items whose
        prior is not the bank's, such as BenchFill's added candidates).
    calibrated_intervals
        Report the Maximum Gap's (and its parts') and the DDM's intervals recalibrated across design families
        (default; :mod:`irtbayes.auditing.recalibration`); the posterior's own intervals are kept beside them
        (``*_posterior_ci_low``/``_high``). False reports the posterior's own as ``*_ci_low``/``_high``, as does
        ``ensemble="draws"`` (the recalibration was learned on deconvolved locations).
    self_check
        Simulate this many data sets from the fitted posterior with the user's systems, items and missing
        cells, refit each with the approximate tier, audit it, and report the achieved coverage of every
        benchmark's Maximum Gap and DDM intervals (:mod:`irtbayes.auditing.selfcheck`; needs a Fit). 0 (default):
        no self-check.
    scheduler
        Where the self-check's refits run: None (default) on this machine, or on the Dask cluster whose address
        the environment variable ``IRTBAYES_SCHEDULER`` holds; an address (``tcp://host:8786``) or a
        ``dask.distributed.Client``: on that cluster (:mod:`irtbayes.core.parallel`; the ``dask`` extra). The
        results are the same wherever they run, so it is not recorded with the audit.
    graded_points
        Graded fits (GRM, GPCM): where each item enters coverage, DDM and the gaps. ``"location"`` (default):
        once, at the ability where its expected score is half its maximum; ``"thresholds"``: at each of its
        K - 1 thresholds, the abilities where the next category becomes the likelier side (an item of five
        categories then counts four times, and covers the stretch between its lowest and highest threshold).
        The items table, the leaderboard and the information curves are the same either way.
    item_flags
        Flags of bank items, item id -> flag (``"reversed"``, ``"flat"``, ``"dif"``; an empty flag is none), as
        :func:`irtbayes.checks.items.check_items` gives them. By default the audit counts every item and records
        how many are flagged (``settings["item_flags"]``).
    exclude_flagged
        Leave the flagged items out of every measure (coverage, DDM, gaps, the leaderboard, information); the
        audit records how many were left out and why (``settings["excluded_items"]``).

    Examples
    --------
    >>> from irtbayes.auditing.settings import AuditSettings
    >>> settings = AuditSettings(bins=8, ci_prob=0.8, seed=1)
    >>> settings.bins, settings.ci_prob, settings.top_k
    (8, 0.8, 5)
    """

    target: Target | str | os.PathLike[str] | Sequence[float] | None = None
    bins: int | Sequence[float] | None = None
    range: Sequence[float] | None = None
    group: Sequence[str] | None = None
    ci_prob: float = 0.9
    min_items: int = DEFAULT_MIN_ITEMS
    max_draws: int | None = DEFAULT_MAX_DRAWS
    information_draws: int | None = DEFAULT_INFORMATION_DRAWS
    resample_items: bool = True
    top_k: int = DEFAULT_TOP_K
    group_threshold: float = DEFAULT_GROUP_THRESHOLD
    grid_points: int = DEFAULT_GRID_POINTS
    ability_dim: str | None = None
    seed: int = 0
    progress: bool = False
    ensemble: str = "auto"
    fixed_items: Sequence[str] | None = None
    calibrated_intervals: bool = True
    self_check: int = 0
    scheduler: Scheduler = None
    graded_points: str = "location"
    item_flags: Mapping[str, str] | None = None
    exclude_flagged: bool = False

    def replace(self, **changes: Any) -> AuditSettings:
        """A copy with ``changes`` (field names as keywords); :class:`SpecError` for a name that is no field."""
        refuse_unknown("audit", [f.name for f in dataclasses.fields(self)], changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as :func:`~irtbayes.auditing.run.audit`'s keyword arguments (sequences as lists)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            is_sequence = isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))
            out[f.name] = list(value) if is_sequence else value
        out["scheduler"] = scheduler_label(self.scheduler)  # a Client as its address
        return out

    def checked(self) -> AuditSettings:
        """A copy with numbers as plain ints and floats; :class:`SpecError` for a setting out of range.

        Raises
        ------
        SpecError
            ``ci_prob`` not in (0, 1), ``min_items``/``top_k`` < 1, ``grid_points`` < 2, ``max_draws`` or
            ``information_draws`` < 1, ``group_threshold`` not in (0.5, 1], or fewer than one bin.
        """
        ci_prob = check_ci_prob(self.ci_prob)
        min_items = _check_int(self.min_items, "min_items", 1)
        top_k = _check_int(self.top_k, "top_k", 1)
        grid_points = _check_int(self.grid_points, "grid_points", 2)
        max_draws = None if self.max_draws is None else _check_int(self.max_draws, "max_draws", 1)
        information_draws = self.information_draws
        if information_draws is not None:
            information_draws = _check_int(information_draws, "information_draws", 1)
        if not 0.5 < float(self.group_threshold) <= 1:
            raise SpecError(f"group_threshold must be in (0.5, 1], got {self.group_threshold!r}")
        self_check = _check_int(self.self_check, "self_check", 0)
        if self_check == 1:
            raise SpecError("self_check needs at least 2 simulated data sets (20 or more give a usable coverage)")
        if self.graded_points not in GRADED_POINTS:
            raise SpecError(f"graded_points must be one of {list(GRADED_POINTS)}, got {self.graded_points!r}")
        if not isinstance(self.calibrated_intervals, (bool, np.bool_)):
            raise SpecError(f"calibrated_intervals must be True or False, got {self.calibrated_intervals!r}")
        bins = self.bins
        if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool) and bins < 1:
            raise SpecError(f"the number of bins must be at least 1, got {bins}")
        flags = _checked_flags(self.item_flags, self.exclude_flagged)
        if self_check and self.exclude_flagged and any(flags.values()):
            raise SpecError(
                "self_check simulates the whole bank the fit was made from: give it without exclude_flagged"
            )
        return self.replace(
            item_flags=flags or None,
            exclude_flagged=bool(self.exclude_flagged),
            ci_prob=ci_prob,
            min_items=min_items,
            top_k=top_k,
            grid_points=grid_points,
            max_draws=max_draws,
            information_draws=information_draws,
            self_check=self_check,
            scheduler=check_scheduler(self.scheduler, "audit: scheduler"),
            calibrated_intervals=bool(self.calibrated_intervals),
        )

    def flagged(self) -> dict[str, str]:
        """The flagged items, item id -> flag (items with an empty flag left out)."""
        return {item: flag for item, flag in (self.item_flags or {}).items() if flag}

    def group_names(self) -> list[str] | None:
        """``group`` as a list of subject ids (a single id given as a string is one name)."""
        if self.group is None:
            return None
        return [str(self.group)] if isinstance(self.group, str) else [str(g) for g in self.group]


def _checked_flags(flags: Mapping[str, str] | None, exclude: object) -> dict[str, str]:
    """``item_flags`` as plain strings; :class:`SpecError` for a flag that is no text or ``exclude_flagged`` that is
    no boolean."""
    if not isinstance(exclude, (bool, np.bool_)):
        raise SpecError(f"exclude_flagged must be True or False, got {exclude!r}")
    if flags is None:
        return {}
    if not isinstance(flags, Mapping):
        raise SpecError(f"item_flags must map item ids to flags, got {type(flags).__name__}")
    out = {}
    for item, flag in flags.items():
        if flag is not None and not isinstance(flag, str):
            raise SpecError(f"item_flags: the flag of item {item!r} must be text, got {flag!r}")
        out[str(item)] = "" if flag is None else flag
    return out


class AuditFields(TypedDict, total=False):
    """The fields of :class:`AuditSettings` as keyword arguments of :func:`~irtbayes.auditing.run.audit`
    (each optional; the meaning and default of each is in :class:`AuditSettings`)."""

    target: Target | str | os.PathLike[str] | Sequence[float] | None
    bins: int | Sequence[float] | None
    range: Sequence[float] | None
    group: Sequence[str] | None
    ci_prob: float
    min_items: int
    max_draws: int | None
    information_draws: int | None
    resample_items: bool
    top_k: int
    group_threshold: float
    grid_points: int
    ability_dim: str | None
    seed: int
    progress: bool
    ensemble: str
    fixed_items: Sequence[str] | None
    calibrated_intervals: bool
    self_check: int
    scheduler: Scheduler
    graded_points: str
    item_flags: Mapping[str, str] | None
    exclude_flagged: bool


def settings_help() -> str:
    """The audit's settings, each with its meaning and default, as a docstring section (``help(irt.audit)``).

    >>> text = settings_help()
    >>> text.splitlines()[0], "bins (default None)" in text, "Number of bins K" in text
    ('Settings', True, True)
    """
    doc = AuditSettings.__doc__ or ""
    block = doc.split("----------\n", 1)[1].split("\n    Examples", 1)[0]
    defaults = {f.name: f.default for f in dataclasses.fields(AuditSettings)}
    lines = ["Settings", "--------"]
    for line in block.splitlines():
        names = [n.strip() for n in line.split(",")]
        if line.startswith("    ") and not line.startswith("        ") and all(n in defaults for n in names):
            said = [f"{n} default {defaults[n]!r}" if len(names) > 1 else f"default {defaults[n]!r}" for n in names]
            line = f"{line} ({', '.join(said)})"
        lines.append(line[4:] if line.startswith("    ") else line)
    return "\n".join(lines)


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SpecError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def resolve_target(
    target: Any,
    *,
    bins: int | Sequence[float] | None,
    target_range: Sequence[float] | None,
    group: Sequence[str] | None,
    ability: np.ndarray,
    subjects: Sequence[str],
) -> tuple[Target, str]:
    """The target, and a sentence saying how its range was chosen.

    ``ability`` holds the (draw, subject) ability draws of ``subjects``, in their order.
    """
    if target_range is not None:
        if isinstance(target_range, (str, bytes)) or len(target_range) != 2:
            raise SpecError(f"range must be two numbers (L, U), got {target_range!r}")
        lo, hi = float(target_range[0]), float(target_range[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise SpecError(f"the target range needs finite L < U, got L = {lo:g} and U = {hi:g}")
        range_rule = f"given: [{lo:g}, {hi:g}]"
    elif bins is not None and not isinstance(bins, (int, np.integer)):
        edges = np.asarray(bins, dtype="float64")
        lo, hi = float(edges[0]), float(edges[-1])
        range_rule = f"the given bin edges: [{lo:g}, {hi:g}]"
    else:
        lo, hi = default_range(ability)
        range_rule = (
            f"default: the pooled posterior {RANGE_PROBS[0]:.1%}-{RANGE_PROBS[1]:.1%} quantiles of the subjects' "
            f"abilities, widened by {RANGE_WIDEN:g} on each side and rounded outward to {RANGE_ROUND:g}: [{lo:g}, {hi:g}]"
        )

    if group is not None:
        if target is not None:
            raise SpecError("give either target= or group=, not both")
        names = [group] if isinstance(group, str) else [str(g) for g in group]
        if not names:
            raise SpecError("group= names no subject")
        known = pd.Index([str(s) for s in subjects])
        unknown = [g for g in names if g not in set(known)]
        if unknown:
            raise SpecError(f"group= names unknown subject(s) {unknown[:5]}; known: {list(known[:10])}")
        positions = known.get_indexer(names)
        return group_target(
            ability[:, positions], lo=lo, hi=hi, bins=DEFAULT_BINS if bins is None else bins, names=names
        ), range_rule

    if isinstance(target, Target):
        if target_range is not None or bins is not None:
            raise SpecError("a Target carries its own range and bins; do not also give range= or bins=")
        return target, f"from the target: [{target.lo:g}, {target.hi:g}]"
    if target is None or (isinstance(target, str) and target.strip().lower() == "uniform"):
        return uniform_target(lo, hi, bins=DEFAULT_BINS if bins is None else bins), range_rule
    if isinstance(target, (str, os.PathLike)):
        if target_range is not None or bins is not None:
            raise SpecError("a target file carries its own range and bins; do not also give range= or bins=")
        loaded = read_target(target)
        return loaded, f"from the target file: [{loaded.lo:g}, {loaded.hi:g}]"
    if isinstance(target, (Sequence, np.ndarray)):
        return weights_target(list(target), lo=lo, hi=hi, bins=bins), range_rule
    raise SpecError(
        f"target must be None, 'uniform', a Target, a CSV path or a list of weights, got {type(target).__name__}"
    )
