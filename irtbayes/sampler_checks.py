"""Convergence checks of a sampler's draws: ``check_convergence(idata) -> Diagnostics``.

r-hat, bulk and tail ESS (arviz-stats' definitions, computed for all parameters of a variable at once by
:mod:`irtbayes.convergence`), divergences, E-BFMI and tree-depth saturation, against stated thresholds, in a
small :class:`Diagnostics` object with ``.ok``. A diagnostic that is NaN or missing (an empty or one-chain
trace, non-finite draws, no sampler statistics) fails the check with its reason; elements that are constant
by construction (the diagonal of a correlation matrix, a fixed entry of a Cholesky factor) are left out by an
explicit rule (:func:`excluded_elements`). These checks read only a DataTree; the checks of a model against
its data are in :mod:`irtbayes.model_checks`; :mod:`irtbayes.diagnostics` gathers both.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import arviz_stats as azs
import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.convergence import parameter_table, rank_diagnostics_datasets, tail_probs
from irtbayes.errors import FitError, SpecError
from irtbayes.files import json_ready

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "DIAGNOSTIC_COLUMNS",
    "Diagnostics",
    "VariableDiagnostics",
    "check_convergence",
    "checked_variables",
]

#: Posterior variables that are not checked: the raw standard normals of non-centred parameters. Each is
#: either a function of checked variables (``difficulty_z = (difficulty - location) / sd``) or, for
#: standardised abilities, carries only the mean and scale of the raw abilities, which the model does not
#: identify (they are pinned by a factor that leaves the posterior unchanged, see :mod:`irtbayes.model`).
#: Everything else is checked: hyperparameters, derived quantities (``intercept``, ``*_benchmark``),
#: correlation matrices and their Cholesky factors, element by element (:func:`excluded_elements`).
SKIP_SUFFIXES = ("_z",)

#: Fewest chains for r-hat, and fewest draws per chain for r-hat and ESS (split chains of at least 2 draws).
MIN_CHAINS = 2
MIN_DRAWS = 4

#: Standardised abilities over fewer subjects than this get a note: each standardised ability lies in
#: [-sqrt(n - 1), sqrt(n - 1)], so with few subjects the implied prior is far from a standard normal.
MIN_STANDARDISED_SUBJECTS = 10

#: Columns of a per-variable convergence summary (:meth:`Diagnostics.summary`).
DIAGNOSTIC_COLUMNS = (
    "variable",
    "size",
    "n_checked",
    "max_rhat",
    "worst_rhat",
    "min_ess_bulk",
    "worst_ess_bulk",
    "min_ess_tail",
    "worst_ess_tail",
    "ok",
)


@dataclass(frozen=True)
class VariableDiagnostics:
    """The worst r-hat and ESS of one posterior variable, with the parameter that attains them.

    A NaN worst value names the first checked parameter whose diagnostic is NaN. ``n_excluded`` elements were
    left out by :func:`excluded_elements` (constant over every draw, or a correlation's diagonal).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
    >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)}, coords={"item": ["a", "b", "c"]})
    >>> variable = check_convergence(xr.DataTree.from_dict({"posterior": posterior})).variables[0]
    >>> variable.name, variable.n_checked, variable.worst_rhat, round(variable.max_rhat, 2)
    ('difficulty', 3, 'difficulty[a]', 1.0)
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
    >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
    >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)})
    >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": posterior}), approximate=True)
    >>> diag.ok, diag.approximate, diag.n_chains, diag.n_draws, diag.problems
    (False, True, 4, 500, ['approximate fit: MCMC diagnostics do not apply'])
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

    @property
    def max_rhat(self) -> float:
        """The largest r-hat over every checked parameter; NaN when any is NaN or none was checked."""
        values = [v.max_rhat for v in self._judged()]
        return float(max(values)) if values and np.isfinite(values).all() else float("nan")

    @property
    def min_ess_bulk(self) -> float:
        """The smallest bulk ESS over every checked parameter; NaN when any is NaN or none was checked."""
        values = [v.min_ess_bulk for v in self._judged()]
        return float(min(values)) if values and np.isfinite(values).all() else float("nan")

    @property
    def min_ess_tail(self) -> float:
        """The smallest tail ESS over every checked parameter; NaN when any is NaN or none was checked."""
        values = [v.min_ess_tail for v in self._judged()]
        return float(min(values)) if values and np.isfinite(values).all() else float("nan")

    def summary(self) -> pd.DataFrame:
        """One row per checked variable, as a table: the worst r-hat and ESS and where they are, and ``ok``.

        Returns
        -------
        pandas.DataFrame
            Columns :data:`DIAGNOSTIC_COLUMNS`: ``variable``, ``size``, ``n_checked``, ``max_rhat``,
            ``worst_rhat``, ``min_ess_bulk``, ``worst_ess_bulk``, ``min_ess_tail``, ``worst_ess_tail`` and ``ok``
            (the variable's worst r-hat and ESS meet the thresholds; NaN never does). Divergences, E-BFMI and
            tree depth concern the whole fit: ``attrs`` record the fit's verdict ``ok``, ``approximate``,
            ``divergences`` and the ``thresholds``. :meth:`to_text` gives the verdict as text.

        Examples
        --------
        >>> from irtbayes.diagnostics import check_convergence
        >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
        >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)})
        >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": posterior}))
        >>> table = diag.summary()
        >>> table[["variable", "n_checked", "ok"]]
             variable  n_checked    ok
        0  difficulty          3  True
        >>> diag.ok  # the whole fit fails: no sampler statistics to check divergences with
        False
        """
        t = self.thresholds
        rows = []
        for v in self.variables:
            row: dict[str, object] = {"variable": v.name, "size": v.size, "n_checked": v.n_checked}
            row.update({k: getattr(v, k) for k in DIAGNOSTIC_COLUMNS[3:-1]})
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
        diagnostics do not have it (:class:`~irtbayes.errors.SpecError`: use :meth:`irtbayes.fit.Fit.summary`,
        which computes them from the draws).

        Examples
        --------
        >>> from irtbayes.diagnostics import check_convergence
        >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
        >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)}, coords={"item": ["a", "b", "c"]})
        >>> table = check_convergence(xr.DataTree.from_dict({"posterior": posterior})).to_dataframe()
        >>> table[["variable", "index"]]
             variable index
        0  difficulty     a
        1  difficulty     b
        2  difficulty     c
        """
        if self.parameters is None:
            raise SpecError(
                "per-parameter diagnostics are kept only in memory after the checks and are not saved with a fit; "
                "use Fit.summary() (it computes r-hat and ESS from the draws) or check_convergence(fit.idata)"
            )
        return self.parameters.copy()

    def plot_rhat_ess(self, *, ax: Axes | None = None) -> Axes:
        """R-hat against bulk ESS for every checked parameter, with the thresholds (:func:`irtbayes.plots.plot_rhat_ess`).

        Examples
        --------
        >>> from irtbayes.diagnostics import check_convergence
        >>> draws = np.random.default_rng(0).normal(size=(4, 500, 3))
        >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)})
        >>> ax = check_convergence(xr.DataTree.from_dict({"posterior": posterior})).plot_rhat_ess()
        >>> ax.get_xlabel(), ax.get_ylabel()
        ('bulk ESS', 'R-hat')
        """
        from irtbayes.plots import plot_rhat_ess

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


def _label(da: xr.DataArray, flat_index: int) -> str:
    if da.ndim == 0:
        return str(da.name)
    pos = np.unravel_index(flat_index, da.shape)
    parts = []
    for dim, p in zip(da.dims, pos, strict=True):
        parts.append(str(da[dim].values[p]) if dim in da.coords else str(p))
    return f"{da.name}[{', '.join(parts)}]"


def _worst(da: xr.DataArray, checked: np.ndarray, *, largest: bool) -> tuple[float, str]:
    """The largest (smallest) value of ``da`` over the ``checked`` elements and its label; the first checked
    value that is not finite (NaN, or an infinite r-hat) and its label when there is one (NaN is never a
    pass); NaN and "" when nothing is checked."""
    values = np.asarray(da.values, dtype="float64").ravel()
    mask = np.asarray(checked, dtype=bool).ravel()
    if not mask.any():
        return float("nan"), ""
    bad = mask & ~np.isfinite(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        return float(values[first]), _label(da, first)
    masked = np.where(mask, values, -np.inf if largest else np.inf)
    idx = int(np.argmax(masked) if largest else np.argmin(masked))
    return float(values[idx]), _label(da, idx)


def checked_variables(posterior: xr.Dataset) -> list[str]:
    """Names of the posterior variables that convergence is judged on: all but raw ``*_z`` coordinates
    (see :data:`SKIP_SUFFIXES`).

    Examples
    --------
    >>> posterior = xr.Dataset(
    ...     {
    ...         "difficulty": (("chain", "draw", "item"), np.zeros((2, 10, 3))),
    ...         "ability_z": (("chain", "draw", "subject"), np.zeros((2, 10, 4))),
    ...     }
    ... )
    >>> checked_variables(posterior)
    ['difficulty']
    """
    return [str(name) for name in posterior.data_vars if not str(name).endswith(SKIP_SUFFIXES)]


def _standardised_subjects(posterior: xr.Dataset, standardised: bool | None) -> int | None:
    """The number of subjects the abilities are standardised over, or None when they are not standardised
    (``standardised=None``: detected from the draws, every draw having mean 0 and sd 1 over subjects)."""
    if standardised is False or "ability" not in posterior or "subject" not in posterior["ability"].dims:
        return None
    n = int(posterior.sizes["subject"])
    if standardised:
        return n
    ability = posterior["ability"]
    if ability.sizes.get("chain", 0) * ability.sizes.get("draw", 0) == 0 or n < 2:
        return None
    with np.errstate(invalid="ignore"):
        mean = ability.mean("subject").values
        sd = ability.std("subject").values
    if np.allclose(mean, 0.0, rtol=0, atol=1e-6) and np.allclose(sd, 1.0, rtol=0, atol=1e-6):
        return n
    return None


def _sampler_checks(
    idata: xr.DataTree, *, n_chains: int, n_draws: int, ebfmi_min: float, treedepth_share_max: float
) -> tuple[int, list[float], int, float | None, list[str], list[str]]:
    """Divergences, E-BFMI, tree depth and mean steps from ``sample_stats``; missing or NaN ones fail."""
    problems: list[str] = []
    notes: list[str] = []
    divergences, saturated, mean_steps = 0, 0, None
    ebfmi: list[float] = []
    if "sample_stats" not in idata.children:
        problems.append("no sample_stats group: divergences and E-BFMI are unknown")
        return divergences, ebfmi, saturated, mean_steps, problems, notes
    stats = idata["sample_stats"].to_dataset()
    if "diverging" not in stats:
        problems.append("the sampler recorded no divergence flags ('diverging'): divergences are unknown")
    else:
        flags = np.asarray(stats["diverging"].values, dtype="float64")
        unknown = int(np.isnan(flags).sum())
        divergences = int(np.nansum(flags))
        if unknown:
            problems.append(f"divergence flags are missing (NaN) in {unknown} draw(s)")
        if divergences:
            problems.append(f"{divergences} divergent transition(s)")
    if "energy" not in stats:
        problems.append("the sampler recorded no energy: E-BFMI is unknown")
    elif n_draws < 2:
        problems.append(f"only {n_draws} draw per chain: E-BFMI needs at least 2")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ebfmi = [float(x) for x in np.atleast_1d(azs.bfmi(idata)["energy"].values)]
        missing = [i for i, x in enumerate(ebfmi) if not np.isfinite(x)]
        low = [i for i, x in enumerate(ebfmi) if np.isfinite(x) and x < ebfmi_min]
        if missing:
            problems.append(f"E-BFMI is NaN in chain(s) {missing}")
        if low:
            problems.append(f"E-BFMI below {ebfmi_min:g} in chain(s) {low}")
    for name in ("maxdepth_reached", "reached_max_treedepth"):
        if name in stats:
            saturated = int(np.nansum(np.asarray(stats[name].values, dtype="float64")))
            break
    else:
        notes.append("the sampler did not record tree-depth saturation; it is not checked")
    total = max(n_chains * n_draws, 1)
    if saturated / total > treedepth_share_max:
        problems.append(f"{saturated} of {total} draws hit the maximum tree depth")
    for name in ("n_steps", "tree_size"):
        if name in stats:
            mean_steps = float(stats[name].mean())
            break
    return divergences, ebfmi, saturated, mean_steps, problems, notes


def check_convergence(
    idata: xr.DataTree,
    *,
    rhat_max: float = 1.01,
    ess_min: float = 400.0,
    ebfmi_min: float = 0.3,
    treedepth_share_max: float = 0.01,
    var_names: list[str] | None = None,
    approximate: bool = False,
    ci_prob: float = 0.9,
    standardised: bool | None = None,
) -> Diagnostics:
    """Check MCMC convergence against thresholds (Vehtari et al. 2021 rank-normalised r-hat and ESS).

    NaN is never a pass: an empty trace, fewer than :data:`MIN_CHAINS` chains or :data:`MIN_DRAWS` draws per
    chain, non-finite draws, a NaN r-hat, ESS or E-BFMI, and missing sampler statistics (divergences or
    energy unknown) each fail the check, with a sentence in ``problems`` that :meth:`Diagnostics.to_text`
    names. Every element of every checked variable is judged except those :func:`excluded_elements` leaves
    out (constant over the draws, a correlation's diagonal), which are counted in ``n_excluded``.

    Parameters
    ----------
    idata
        DataTree with a ``posterior`` group (chain, draw, ...) and, for NUTS fits, ``sample_stats``.
    rhat_max, ess_min
        Every checked parameter needs r-hat <= ``rhat_max`` and bulk and tail ESS >= ``ess_min``.
    ebfmi_min
        Every chain needs E-BFMI >= ``ebfmi_min``.
    treedepth_share_max
        At most this share of draws may hit the maximum tree depth.
    var_names
        Variables to check (default: every posterior variable except raw standard-normal ``*_z``
        coordinates, see :data:`SKIP_SUFFIXES`).
    approximate
        The draws come from an approximate method: no MCMC checks, ``ok`` is False.
    ci_prob
        Probability of the central intervals the fit reports: tail ESS is taken at their ends, the
        ``(1 - ci_prob) / 2`` and ``(1 + ci_prob) / 2`` quantiles.
    standardised
        Whether the abilities are standardised over the subjects (``None``: detected from the draws). With
        fewer than :data:`MIN_STANDARDISED_SUBJECTS` subjects a note and a warning say that the implied prior
        of the abilities is far from normal.

    Returns
    -------
    Diagnostics

    Raises
    ------
    FitError
        ``idata`` has no posterior group.
    SpecError
        A name in ``var_names`` is not a posterior variable, or ``ci_prob`` is not in (0, 1).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), rng.normal(size=(4, 500, 3)))})
    >>> stats = xr.Dataset(
    ...     {
    ...         "diverging": (("chain", "draw"), np.zeros((4, 500), dtype=bool)),
    ...         "energy": (("chain", "draw"), rng.normal(size=(4, 500))),
    ...     }
    ... )
    >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats}))
    >>> diag.ok, round(diag.max_rhat, 2), diag.divergences
    (True, 1.0, 0)
    >>> stuck = posterior + xr.DataArray([0.0, 0.0, 0.0, 3.0], dims="chain")  # one chain elsewhere
    >>> diag = check_convergence(xr.DataTree.from_dict({"posterior": stuck, "sample_stats": stats}))
    >>> diag.ok, diag.problems[0]
    (False, 'r-hat 1.481 > 1.01 at difficulty[1]')
    """
    if not 0 < ci_prob < 1:
        raise SpecError(f"check_convergence: ci_prob must be strictly between 0 and 1, got {ci_prob}")
    thresholds = {
        "rhat_max": float(rhat_max),
        "ess_min": float(ess_min),
        "ebfmi_min": float(ebfmi_min),
        "treedepth_share_max": float(treedepth_share_max),
        "ci_prob": float(ci_prob),
    }
    if "posterior" not in idata.children:
        raise FitError("check_convergence: the DataTree has no posterior group")
    posterior = idata["posterior"].to_dataset()
    n_chains = int(posterior.sizes.get("chain", 0))
    n_draws = int(posterior.sizes.get("draw", 0))
    notes: list[str] = []
    note = _standardised_note(posterior, standardised)
    if note:
        notes.append(note)
        warnings.warn(note, UserWarning, stacklevel=2)
    base: dict[str, Any] = {"thresholds": thresholds, "n_chains": n_chains, "n_draws": n_draws, "notes": notes}
    if approximate:
        return Diagnostics(
            ok=False, approximate=True, problems=["approximate fit: MCMC diagnostics do not apply"], **base
        )
    names = _names_to_check(posterior, var_names)
    reason = _nothing_to_check(posterior, names, n_chains=n_chains, n_draws=n_draws)
    if reason:
        return Diagnostics(ok=False, approximate=False, problems=[reason], **base)
    return _full_check(
        idata,
        names,
        base,
        rhat_max=rhat_max,
        ess_min=ess_min,
        ebfmi_min=ebfmi_min,
        treedepth_share_max=treedepth_share_max,
        ci_prob=ci_prob,
    )


def _full_check(
    idata: xr.DataTree,
    names: list[str],
    base: dict[str, Any],
    *,
    rhat_max: float,
    ess_min: float,
    ebfmi_min: float,
    treedepth_share_max: float,
    ci_prob: float,
) -> Diagnostics:
    """The checks of :func:`check_convergence` once there are draws to check: every variable, then the sampler."""
    n_chains, n_draws, notes, thresholds = base["n_chains"], base["n_draws"], base["notes"], base["thresholds"]
    posterior = idata["posterior"].to_dataset()
    problems: list[str] = []
    if n_chains < MIN_CHAINS:
        problems.append(f"only {n_chains} chain: r-hat needs at least {MIN_CHAINS} chains")
    if n_draws < MIN_DRAWS:
        problems.append(f"only {n_draws} draws per chain: r-hat and ESS need at least {MIN_DRAWS}")
    post = posterior[names]
    rhat, ess_bulk, ess_tail = rank_diagnostics_datasets(post, ci_prob=ci_prob)
    variables = _judge_variables(
        post,
        names,
        (rhat, ess_bulk, ess_tail),
        rhat_max=rhat_max,
        ess_min=ess_min,
        computable=not problems,
        problems=problems,
        notes=notes,
    )
    divergences, ebfmi, saturated, mean_steps, sampler_problems, sampler_notes = _sampler_checks(
        idata, n_chains=n_chains, n_draws=n_draws, ebfmi_min=ebfmi_min, treedepth_share_max=treedepth_share_max
    )
    return Diagnostics(
        ok=not (problems or sampler_problems),
        approximate=False,
        thresholds=thresholds,
        variables=variables,
        divergences=divergences,
        n_chains=n_chains,
        n_draws=n_draws,
        ebfmi=ebfmi,
        treedepth_saturated=saturated,
        mean_steps=mean_steps,
        problems=problems + sampler_problems,
        notes=notes + sampler_notes,
        parameters=parameter_table(rhat, ess_bulk, ess_tail, names),
    )


def _standardised_note(posterior: xr.Dataset, standardised: bool | None) -> str:
    """The note for abilities standardised over fewer than :data:`MIN_STANDARDISED_SUBJECTS` subjects, or ``""``."""
    n = _standardised_subjects(posterior, standardised)
    if n is None or n >= MIN_STANDARDISED_SUBJECTS:
        return ""
    return (
        f"abilities are standardised over only {n} subjects (fewer than "
        f"{MIN_STANDARDISED_SUBJECTS}): every ability lies within +-{np.sqrt(n - 1):.2f} "
        "(sqrt(subjects - 1)), so their implied prior is far from a standard normal"
    )


def _names_to_check(posterior: xr.Dataset, var_names: list[str] | None) -> list[str]:
    """``var_names`` (each must be a posterior variable) or, by default, :func:`checked_variables`."""
    if "chain" not in posterior.dims or "draw" not in posterior.dims:
        return []
    names = var_names if var_names is not None else checked_variables(posterior)
    missing = [n for n in names if n not in posterior]
    if missing:
        raise SpecError(f"check_convergence: no posterior variable(s) {missing}; have {list(posterior.data_vars)}")
    return names


def _nothing_to_check(posterior: xr.Dataset, names: list[str], *, n_chains: int, n_draws: int) -> str:
    """Why the draws cannot be checked at all (no chain/draw dims, no variables, no draws), or ``""``."""
    if "chain" not in posterior.dims or "draw" not in posterior.dims:
        return f"the posterior has no chain and draw dims (dims {sorted(map(str, posterior.dims))})"
    if not names:
        return "the posterior has no variables to check"
    if n_chains == 0 or n_draws == 0:
        return (
            f"the trace is empty ({n_chains} chains x {n_draws} draws): no draws were kept, so convergence "
            "cannot be checked"
        )
    return ""


def _judge_variables(
    post: xr.Dataset,
    names: list[str],
    diagnostics: tuple[xr.Dataset, xr.Dataset, xr.Dataset],
    *,
    rhat_max: float,
    ess_min: float,
    computable: bool,
    problems: list[str],
    notes: list[str],
) -> list[VariableDiagnostics]:
    """Per variable, its worst r-hat and ESS; failed thresholds and non-finite draws appended to ``problems``."""
    rhat, ess_bulk, ess_tail = diagnostics
    variables: list[VariableDiagnostics] = []
    for name in names:
        excluded = np.asarray(rhat[name].attrs["excluded"])  # excluded_elements(post[name])
        checked = ~excluded
        draws = post[name].transpose("chain", "draw", ...).to_numpy()
        nonfinite = np.count_nonzero(~np.isfinite(draws), axis=(0, 1))
        if nonfinite.any():  # never excluded: excluded_elements requires finite draws
            first = int(np.flatnonzero(np.ravel(nonfinite > 0))[0])
            problems.append(
                f"{int(np.sum(nonfinite))} non-finite (NaN or infinite) draw(s) in {name}, first at "
                f"{_label(rhat[name], first)}"
            )
        max_r, worst_r = _worst(rhat[name], checked, largest=True)
        min_b, worst_b = _worst(ess_bulk[name], checked, largest=False)
        min_t, worst_t = _worst(ess_tail[name], checked, largest=False)
        size, n_excluded = int(excluded.size), int(excluded.sum())
        variables.append(
            VariableDiagnostics(name, size, max_r, worst_r, min_b, worst_b, min_t, worst_t, n_excluded=n_excluded)
        )
        if not checked.any():
            notes.append(f"{name}: every element is constant over the draws; nothing to check")
            continue
        if not computable:
            continue
        for label, value, worst, passes in (
            ("r-hat", max_r, worst_r, max_r <= rhat_max),
            ("bulk ESS", min_b, worst_b, min_b >= ess_min),
            ("tail ESS", min_t, worst_t, min_t >= ess_min),
        ):
            if not np.isfinite(value):
                problems.append(f"{label} is not finite ({value}) at {worst}")
            elif not passes:
                op = ">" if label == "r-hat" else "<"
                limit = rhat_max if label == "r-hat" else ess_min
                problems.append(f"{label} {value:.{3 if label == 'r-hat' else 0}f} {op} {limit:g} at {worst}")
    return variables
