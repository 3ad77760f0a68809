"""Convergence checks of a sampler's draws: ``check_convergence(idata) -> Diagnostics``.

r-hat, bulk and tail ESS (arviz-stats' definitions, computed for all parameters of a variable at once by
:mod:`irtbayes.fitting.diagnostics.convergence`), divergences, E-BFMI and tree-depth saturation, against stated thresholds, in a
small :class:`Diagnostics` object with ``.ok``. A diagnostic that is NaN or missing (an empty or one-chain
trace, non-finite draws, no sampler statistics) fails the check with its reason; elements that are constant
by construction (the diagonal of a correlation matrix, a fixed entry of a Cholesky factor) are left out by an
explicit rule (:func:`excluded_elements`). These checks read only a DataTree; the checks of a model against
its data are in :mod:`irtbayes.checks.predictive`.
"""

from __future__ import annotations

import warnings
from typing import Any

import arviz_stats as azs
import numpy as np
import xarray as xr

from irtbayes.core.errors import FitError, SpecError
from irtbayes.fitting.diagnostics.convergence import parameter_table, rank_diagnostics_datasets
from irtbayes.fitting.diagnostics.verdict import Diagnostics, VariableDiagnostics

__all__ = [
    "check_convergence",
    "checked_variables",
]

#: Posterior variables that are not checked: the raw standard normals of non-centred parameters. Each is
#: either a function of checked variables (``difficulty_z = (difficulty - location) / sd``) or, for
#: standardised abilities, carries only the mean and scale of the raw abilities, which the model does not
#: identify (they are pinned by a factor that leaves the posterior unchanged, see :mod:`irtbayes.model.build`).
#: Everything else is checked: hyperparameters, derived quantities (``intercept``, ``*_benchmark``),
#: correlation matrices and their Cholesky factors, element by element (:func:`excluded_elements`).
SKIP_SUFFIXES = ("_z",)

#: Fewest chains for r-hat, and fewest draws per chain for r-hat and ESS (split chains of at least 2 draws).
MIN_CHAINS = 2
MIN_DRAWS = 4

#: Standardised abilities over fewer subjects than this get a note: each standardised ability lies in
#: [-sqrt(n - 1), sqrt(n - 1)], so with few subjects the implied prior is far from a standard normal.
MIN_STANDARDISED_SUBJECTS = 10


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


def _thresholds(
    rhat_max: float, ess_min: float, ebfmi_min: float, treedepth_share_max: float, ci_prob: float, /
) -> dict[str, float]:
    """The thresholds as floats, for the record; ``ci_prob`` outside (0, 1) raises SpecError."""
    if not 0 < ci_prob < 1:
        raise SpecError(f"check_convergence: ci_prob must be strictly between 0 and 1, got {ci_prob}")
    return {
        "rhat_max": float(rhat_max),
        "ess_min": float(ess_min),
        "ebfmi_min": float(ebfmi_min),
        "treedepth_share_max": float(treedepth_share_max),
        "ci_prob": float(ci_prob),
    }


def _posterior_and_sizes(idata: xr.DataTree) -> tuple[xr.Dataset, int, int]:
    """The posterior Dataset and its numbers of chains and draws; no posterior group raises FitError."""
    if "posterior" not in idata.children:
        raise FitError("check_convergence: the DataTree has no posterior group")
    posterior = idata["posterior"].to_dataset()
    return posterior, int(posterior.sizes.get("chain", 0)), int(posterior.sizes.get("draw", 0))


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
    thresholds = _thresholds(rhat_max, ess_min, ebfmi_min, treedepth_share_max, ci_prob)
    posterior, n_chains, n_draws = _posterior_and_sizes(idata)
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
    return _full_check(idata, names, base)


def _full_check(idata: xr.DataTree, names: list[str], base: dict[str, Any]) -> Diagnostics:
    """The checks of :func:`check_convergence` once there are draws to check: every variable, then the sampler."""
    n_chains, n_draws, notes, thresholds = base["n_chains"], base["n_draws"], base["notes"], base["thresholds"]
    rhat_max, ess_min, ci_prob = thresholds["rhat_max"], thresholds["ess_min"], thresholds["ci_prob"]
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
        idata,
        n_chains=n_chains,
        n_draws=n_draws,
        ebfmi_min=thresholds["ebfmi_min"],
        treedepth_share_max=thresholds["treedepth_share_max"],
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
        nonfinite = np.where(excluded, 0, np.count_nonzero(~np.isfinite(draws), axis=(0, 1)))
        if nonfinite.any():  # never excluded but for absent thresholds (NaN in every draw by construction)
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
