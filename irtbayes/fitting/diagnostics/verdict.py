"""The verdict of the convergence checks: :class:`Diagnostics` (with ``.ok``) and its tables, text and plot.

:func:`irtbayes.fitting.diagnostics.sampler.check_convergence` makes one; a fit's card stores it (:meth:`Diagnostics.to_dict`,
:meth:`Diagnostics.from_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.core.chains import tail_probs
from irtbayes.core.errors import SpecError
from irtbayes.core.files import json_ready

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.axes import Axes

__all__ = ["DIAGNOSTIC_COLUMNS", "Diagnostics", "VariableDiagnostics"]


#: Columns of a per-variable convergence summary (:meth:`Diagnostics.summary`), after ArviZ's ``r_hat``,
#: ``ess_bulk`` and ``ess_tail``: the worst value of each over the variable and the parameter that has it.
DIAGNOSTIC_COLUMNS = (
    "variable",
    "size",
    "n_checked",
    "max_r_hat",
    "worst_r_hat",
    "min_ess_bulk",
    "worst_ess_bulk",
    "min_ess_tail",
    "worst_ess_tail",
    "ok",
)
#: :class:`VariableDiagnostics` field of each statistic column of :data:`DIAGNOSTIC_COLUMNS`.
_FIELDS = {
    "max_r_hat": "max_rhat",
    "worst_r_hat": "worst_rhat",
    "min_ess_bulk": "min_ess_bulk",
    "worst_ess_bulk": "worst_ess_bulk",
    "min_ess_tail": "min_ess_tail",
    "worst_ess_tail": "worst_ess_tail",
}


@dataclass(frozen=True)
class VariableDiagnostics:
    """The worst r-hat and ESS of one posterior variable, with the parameter that attains them.

    A NaN worst value names the first checked parameter whose diagnostic is NaN. ``n_excluded`` elements were
    left out by :func:`excluded_elements` (constant over every draw, or a correlation's diagonal).
    :attr:`Diagnostics.variables` holds one per checked variable (:meth:`Diagnostics.to_dataframe` shows one).
    """

    name: str
    size: int
    max_rhat: float
    worst_rhat: str
    min_ess_bulk: float
    worst_ess_bulk: str
    min_ess_tail: float
    worst_ess_tail: str
    n_excluded: int = 0

    @property
    def n_checked(self) -> int:
        """Elements judged against the thresholds."""
        return self.size - self.n_excluded

    def to_dict(self) -> dict[str, Any]:
        return {k: json_ready(v) for k, v in self.__dict__.items()}


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if np.isfinite(value) else "NaN"


@dataclass(frozen=True)
class Diagnostics:
    """Convergence of a fit against stated thresholds.

    Attributes
    ----------
    ok
        True when every check passes (always False for approximate fits, which have no MCMC diagnostics, and
        whenever a diagnostic is NaN or missing).
    approximate
        The fit came from an approximate method (ADVI, Pathfinder): r-hat and ESS do not apply.
    thresholds
        ``rhat_max``, ``ess_min`` (bulk and tail), ``ebfmi_min``, ``treedepth_share_max`` and ``ci_prob`` (tail
        ESS is taken at the ends of the central ``ci_prob`` interval).
    variables
        One :class:`VariableDiagnostics` per checked variable.
    divergences, n_chains, n_draws
        Divergent transitions after warm-up; chains and draws per chain.
    ebfmi
        E-BFMI per chain.
    treedepth_saturated
        Draws whose trajectory hit the maximum tree depth.
    problems
        One sentence per failed check.
    notes
        Sentences that do not fail the check but qualify the fit (few subjects to standardise over,
        statistics the sampler did not record).
    parameters
        Per checked scalar parameter: ``variable``, ``index``, ``r_hat``, ``ess_bulk``, ``ess_tail`` (kept in
        memory after :func:`check_convergence`, not saved; ``None`` for a loaded fit).

    Examples
    --------
    >>> import xarray as xr
    >>> from irtbayes.fitting.diagnostics.sampler import check_convergence
    >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
    >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)})
    >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": posterior}), approximate=True)
    >>> diag.ok, diag.approximate, diag.n_chains, diag.n_draws, diag.problems
    (False, True, 4, 500, ['approximate fit: MCMC diagnostics do not apply'])
    >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": posterior}))
    >>> diag.summary()[["variable", "n_checked", "ok"]]  # one row per variable
         variable  n_checked    ok
    0  difficulty          3  True
    >>> diag.ok  # the whole fit fails: no sampler statistics to check divergences with
    False
    """

    ok: bool
    approximate: bool
    thresholds: dict[str, float]
    variables: list[VariableDiagnostics] = field(default_factory=list)
    divergences: int = 0
    n_chains: int = 0
    n_draws: int = 0
    ebfmi: list[float] = field(default_factory=list)
    treedepth_saturated: int = 0
    mean_steps: float | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parameters: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    def _judged(self) -> list[VariableDiagnostics]:
        return [v for v in self.variables if v.n_checked > 0]

    def _worst(self, name: str, pick: Callable[[list[float]], float]) -> float:
        """``pick`` (max or min) of one statistic over the judged variables; NaN when any is NaN or none was judged."""
        values = [getattr(v, name) for v in self._judged()]
        return float(pick(values)) if values and np.isfinite(values).all() else float("nan")

    @property
    def max_rhat(self) -> float:
        """The largest r-hat over every checked parameter; NaN when any is NaN or none was checked."""
        return self._worst("max_rhat", max)

    @property
    def min_ess_bulk(self) -> float:
        """The smallest bulk ESS over every checked parameter; NaN when any is NaN or none was checked."""
        return self._worst("min_ess_bulk", min)

    @property
    def min_ess_tail(self) -> float:
        """The smallest tail ESS over every checked parameter; NaN when any is NaN or none was checked."""
        return self._worst("min_ess_tail", min)

    def summary(self) -> pd.DataFrame:
        """One row per checked variable, as a table: the worst r-hat and ESS and where they are, and ``ok``
        (the class's example shows it).

        Returns
        -------
        pandas.DataFrame
            Columns :data:`DIAGNOSTIC_COLUMNS`: ``variable``, ``size``, ``n_checked``, ``max_r_hat``,
            ``worst_r_hat``, ``min_ess_bulk``, ``worst_ess_bulk``, ``min_ess_tail``, ``worst_ess_tail`` and ``ok``
            (the variable's worst r-hat and ESS meet the thresholds; NaN never does). Divergences, E-BFMI and
            tree depth concern the whole fit: ``attrs`` record the fit's verdict ``ok``, ``approximate``,
            ``divergences`` and the ``thresholds``. :meth:`to_text` gives the verdict as text.
        """
        t = self.thresholds
        rows = []
        for v in self.variables:
            row: dict[str, object] = {"variable": v.name, "size": v.size, "n_checked": v.n_checked}
            row.update({column: getattr(v, name) for column, name in _FIELDS.items()})
            finite = np.isfinite([v.max_rhat, v.min_ess_bulk, v.min_ess_tail]).all()
            row["ok"] = bool(
                finite
                and v.max_rhat <= t.get("rhat_max", np.inf)
                and min(v.min_ess_bulk, v.min_ess_tail) >= t.get("ess_min", 0)
            )
            rows.append(row)
        table = pd.DataFrame(rows, columns=list(DIAGNOSTIC_COLUMNS))
        table.attrs.update(ok=self.ok, approximate=self.approximate, divergences=self.divergences, thresholds=dict(t))
        return table

    def to_dataframe(self) -> pd.DataFrame:
        """One row per checked scalar parameter: ``variable``, ``index``, ``r_hat``, ``ess_bulk``, ``ess_tail``.

        Kept in memory after :func:`check_convergence` (a copy of :attr:`parameters`); a loaded fit's
        diagnostics do not have it (:class:`~irtbayes.core.errors.SpecError`: use :meth:`irtbayes.fitting.result.Fit.summary`,
        which computes them from the draws).

        Examples
        --------
        >>> import xarray as xr
        >>> from irtbayes.fitting.diagnostics.sampler import check_convergence
        >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
        >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)}, coords={"item": ["a", "b", "c"]})
        >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": posterior}))
        >>> diag.to_dataframe()[["variable", "index"]]
             variable index
        0  difficulty     a
        1  difficulty     b
        2  difficulty     c
        >>> variable = diag.variables[0]  # the worst of each variable
        >>> variable.name, variable.n_checked, variable.worst_rhat, round(variable.max_rhat, 2)
        ('difficulty', 3, 'difficulty[a]', 1.0)
        """
        if self.parameters is None:
            raise SpecError(
                "per-parameter diagnostics are kept only in memory after the checks and are not saved with a fit; "
                "use Fit.summary() (it computes r-hat and ESS from the draws) or check_convergence(fit.idata)"
            )
        return self.parameters.copy()

    def plot_rhat_ess(self, *, ax: Axes | None = None) -> Axes:
        """R-hat against bulk ESS for every checked parameter, with the thresholds (:func:`irtbayes.core.plots.plot_rhat_ess`).

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> ax = simulated_fit(20, 30)[0].diagnostics.plot_rhat_ess()
        >>> ax.get_xlabel(), ax.get_ylabel()
        ('bulk ESS', 'R-hat')
        """
        from irtbayes.core.plots import plot_rhat_ess

        t = self.thresholds
        axes: Axes = plot_rhat_ess(
            self.to_dataframe(), rhat_max=t.get("rhat_max", 1.01), ess_min=t.get("ess_min", 400), ax=ax
        )
        return axes

    def to_text(self) -> str:
        """A few lines of text: verdict (with the first reason when it fails), thresholds, worst parameters,
        sampler warnings, notes."""
        notes = [f"  note: {n}" for n in self.notes]
        if self.approximate:
            return "\n".join(
                [
                    "Approximate fit (the approximate tier, ADVI or Pathfinder): MCMC convergence diagnostics do not apply; "
                    "treat intervals as approximate.",
                    *notes,
                ]
            )
        t = self.thresholds
        if self.ok:
            head = "Converged"
        else:
            first = self.problems[0] if self.problems else "no checks passed"
            more = len(self.problems) - 1
            head = f"NOT converged ({first}{f'; {more} more problem(s)' if more > 0 else ''})"
        if "ci_prob" in t:
            low, high = tail_probs(t["ci_prob"])
            tail = f"tail ESS (at the {low:g} and {high:g} quantiles)"
        else:  # a card written before the tail quantiles were recorded
            tail = "tail ESS"
        lines = [
            f"{head}: {self.n_chains} chains x {self.n_draws} draws; thresholds r-hat <= {t['rhat_max']:g}, "
            f"bulk ESS and {tail} >= {t['ess_min']:g}, "
            f"E-BFMI >= {t['ebfmi_min']:g}, no divergences.",
            f"max r-hat {_fmt(self.max_rhat, '.3f')}, min bulk ESS {_fmt(self.min_ess_bulk, '.0f')}, min tail ESS "
            f"{_fmt(self.min_ess_tail, '.0f')}, divergences {self.divergences}, tree-depth saturated "
            f"{self.treedepth_saturated}"
            + (f", E-BFMI min {_fmt(min(self.ebfmi), '.2f')}" if self.ebfmi else "")
            + (f", mean leapfrog steps {self.mean_steps:.1f}" if self.mean_steps is not None else ""),
        ]
        for v in self.variables:
            excluded = f"  ({v.n_excluded} left out: constant, or a correlation's diagonal)" if v.n_excluded else ""
            lines.append(
                f"  {v.name:<34} r-hat {_fmt(v.max_rhat, '6.3f')} ({v.worst_rhat})  bulk ESS "
                f"{_fmt(v.min_ess_bulk, '7.0f')} ({v.worst_ess_bulk})  tail ESS {_fmt(v.min_ess_tail, '7.0f')}"
                + excluded
            )
        lines += [f"  problem: {p}" for p in self.problems]
        lines += notes
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "approximate": self.approximate,
            "thresholds": dict(self.thresholds),
            "max_rhat": json_ready(self.max_rhat),
            "min_ess_bulk": json_ready(self.min_ess_bulk),
            "min_ess_tail": json_ready(self.min_ess_tail),
            "divergences": int(self.divergences),
            "n_chains": int(self.n_chains),
            "n_draws": int(self.n_draws),
            "ebfmi": [json_ready(x) for x in self.ebfmi],
            "treedepth_saturated": int(self.treedepth_saturated),
            "mean_steps": json_ready(self.mean_steps) if self.mean_steps is not None else None,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "variables": [v.to_dict() for v in self.variables],
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Diagnostics:
        def num(x: Any) -> float:
            return float("nan") if x is None else float(x)

        variables = [
            VariableDiagnostics(
                name=v["name"],
                size=int(v["size"]),
                max_rhat=num(v["max_rhat"]),
                worst_rhat=v["worst_rhat"],
                min_ess_bulk=num(v["min_ess_bulk"]),
                worst_ess_bulk=v["worst_ess_bulk"],
                min_ess_tail=num(v["min_ess_tail"]),
                worst_ess_tail=v["worst_ess_tail"],
                n_excluded=int(v.get("n_excluded", 0)),
            )
            for v in values.get("variables", [])
        ]
        return cls(
            ok=bool(values["ok"]),
            approximate=bool(values["approximate"]),
            thresholds={k: float(v) for k, v in values["thresholds"].items()},
            variables=variables,
            divergences=int(values.get("divergences", 0)),
            n_chains=int(values.get("n_chains", 0)),
            n_draws=int(values.get("n_draws", 0)),
            ebfmi=[num(x) for x in values.get("ebfmi", [])],
            treedepth_saturated=int(values.get("treedepth_saturated", 0)),
            mean_steps=None if values.get("mean_steps") is None else float(values["mean_steps"]),
            problems=list(values.get("problems", [])),
            notes=list(values.get("notes", [])),
        )
