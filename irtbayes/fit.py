"""Fitting: ``fit(data, spec) -> Fit``; tables, flags, scoring of new subjects; ``save_fit`` / ``load_fit``.

A :class:`Fit` holds the posterior as an :class:`xarray.DataTree` (groups ``posterior``, ``sample_stats``
for MCMC, and ``constant_data`` with per-item and per-subject counts from the data), the resolved
:class:`~irtbayes.model.ModelSpec`, the sampler settings, the data checksum and the convergence
:class:`~irtbayes.diagnostics.Diagnostics`.

Saved fits are folders: ``posterior.nc`` (netCDF4 via h5netcdf), ``card.json`` (spec, priors, sampler
settings, seed, package versions, data checksum, diagnostics), ``items.csv`` and ``subjects.csv``. They are
written into a temporary folder beside the target and renamed into place, so an interrupted save leaves no
partial folder. Nothing is pickled.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import errno
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import xarray as xr

from irtbayes.data import ResponseData, json_ready
from irtbayes.diagnostics import Diagnostics, check_convergence
from irtbayes.errors import DataError, FitError, FitInterrupted, SpecError, describe_interrupt
from irtbayes.files import read_json
from irtbayes.model import SMALL_BANK_ITEMS, ModelSpec, add_derived, build_model, model_inputs
from irtbayes.progress import SamplingProgress

__all__ = [
    "APPROXIMATE_SAMPLERS",
    "FORMAT_VERSION",
    "SAMPLERS",
    "Fit",
    "FitInterrupted",
    "Scores",
    "fit",
    "load_fit",
    "save_fit",
    "score",
]

log = logging.getLogger(__name__)
#: Seconds between progress log lines when no progress bar can be drawn (output not a terminal).
PROGRESS_EVERY = 30.0

Sampler = Literal["nutpie", "pymc", "numpyro", "advi", "pathfinder"]
SAMPLERS: tuple[str, ...] = ("nutpie", "pymc", "numpyro", "advi", "pathfinder")
APPROXIMATE_SAMPLERS: tuple[str, ...] = ("advi", "pathfinder")
#: Models with more free parameters than this get a default NUTS target acceptance of 0.7 (see :func:`fit`).
LARGE_MODEL = 5000
#: Default draws per chain for models with more than :data:`LARGE_MODEL` free parameters.
LARGE_MODEL_DRAWS = 1250
#: Item banks with fewer items than this get a default NUTS target acceptance of 0.95: the hierarchy's item
#: sds are then prior-dominated and their funnel needs small steps (LSAT7, 5 items: 4 divergences at 0.8).
SMALL_BANK = 30
#: Default draws per chain for a single group of fewer than :data:`~irtbayes.model.SMALL_BANK_ITEMS` items
#: (hierarchy ``"none"``): their few discriminations are barely informed, so the draws are more correlated.
SMALL_BANK_DRAWS = 2000
#: Version of the saved-fit folder layout; :func:`load_fit` refuses other versions.
FORMAT_VERSION = 1
ITEM_PARAMETERS = ("difficulty", "discrimination", "intercept", "guessing")
_PACKAGES = ("irtbayes", "pymc", "pytensor", "nutpie", "arviz", "arviz-stats", "numpy", "pandas", "xarray", "h5netcdf")


def _versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _irtbayes_version() -> str:
    from irtbayes import __version__

    return __version__


# ---------------------------------------------------------------------------------------------- the result
@dataclass(eq=False)
class Fit:
    """A fitted IRT model.

    Attributes
    ----------
    idata
        ``posterior`` (chain, draw, ...): ``ability`` (subject[, dim]), ``difficulty``, ``discrimination``,
        ``intercept``, ``guessing`` (item) and hyperparameters; ``sample_stats`` for MCMC fits;
        ``constant_data``: ``item_benchmark``, ``item_domain``, ``item_n_responses``, ``item_mean_response``,
        ``item_rest_corr`` (item) and ``subject_n_responses``, ``subject_mean_response`` (subject).
    spec
        The resolved model spec (no ``"auto"`` left).
    sampler
        Sampler settings: ``name``, ``chains``, ``draws``, ``tune``, ``seed``, ``approximate``,
        ``wall_time_s`` and sampler-specific options.
    data_checksum
        :meth:`ResponseData.checksum` of the data it was fitted to.
    diagnostics
        Convergence checks.
    info
        Data source, sizes, creation time, package versions; for a partial fit (an interrupted run kept with
        ``keep_partial=True``) also ``partial`` (True) and ``interrupted`` (``phase``, ``draws_done``,
        ``draws_requested``, ``chains_done``, ``chains_requested``).
    """

    idata: xr.DataTree
    spec: ModelSpec
    sampler: dict[str, Any]
    data_checksum: str
    diagnostics: Diagnostics
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def approximate(self) -> bool:
        """True for variational / Pathfinder fits (labelled approximate in the card and every table)."""
        return bool(self.sampler.get("approximate", False))

    @property
    def partial(self) -> bool:
        """True for the draws of an interrupted run (see ``keep_partial`` in :func:`fit`): never converged."""
        return bool(self.info.get("partial", False))

    def partial_text(self) -> str:
        """For a partial fit, one sentence saying so and how far the run got; else ``""``."""
        if not self.partial:
            return ""
        done = dict(self.info.get("interrupted") or {})
        how = describe_interrupt(
            str(done.get("phase", "sampling")),
            draws_done=int(done.get("draws_done", 0)),
            draws_requested=int(done.get("draws_requested", 0)),
            chains_done=int(done.get("chains_done", 0)),
            chains_requested=int(done.get("chains_requested", 0)),
        )
        return f"PARTIAL fit: the run was {how}; these are the draws so far, not a complete fit."

    @property
    def posterior(self) -> xr.Dataset:
        return self.idata["posterior"].to_dataset()

    @property
    def constant_data(self) -> xr.Dataset:
        return self.idata["constant_data"].to_dataset()

    @property
    def item_ids(self) -> pd.Index:
        return pd.Index(self.posterior["item"].values.astype(str), name="item")

    @property
    def subject_ids(self) -> pd.Index:
        return pd.Index(self.posterior["subject"].values.astype(str), name="subject")

    def card(self) -> dict[str, Any]:
        """What ``card.json`` holds: a JSON-ready description of the fit."""
        return json_ready(
            {
                "format_version": FORMAT_VERSION,
                "irtbayes_version": _irtbayes_version(),
                "approximate": self.approximate,
                "partial": self.partial,
                "spec": self.spec.to_dict(),
                "sampler": self.sampler,
                "data_checksum": self.data_checksum,
                "diagnostics": self.diagnostics.to_dict(),
                **{k: v for k, v in self.info.items() if k not in ("format_version", "spec", "sampler", "partial")},
            }
        )

    # ------------------------------------------------------------------ tables
    def _table_attrs(self, table: pd.DataFrame, ci_prob: float) -> pd.DataFrame:
        table.attrs["ci_prob"] = ci_prob
        table.attrs["approximate"] = self.approximate
        table.attrs["sampler"] = self.sampler.get("name")
        table.attrs["kind"] = self.spec.kind
        return table

    def items_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per item: labels, counts, and posterior summaries of the item parameters.

        Parameters
        ----------
        ci_prob
            Probability of the equal-tailed credible interval.

        Returns
        -------
        pandas.DataFrame
            Columns ``item``, ``benchmark``, ``domain``, ``n_responses``, ``mean_response``, and for p in
            ``difficulty``, ``discrimination``, ``intercept`` (and ``guessing`` for 3PL): ``p_mean``,
            ``p_sd``, ``p_ci_low``, ``p_ci_high``; then ``ci_prob``. ``attrs`` records ``ci_prob`` and
            ``approximate``.
        """
        _check_prob(ci_prob)
        post = self.posterior
        cd = self.constant_data
        table = pd.DataFrame(
            {
                "item": self.item_ids.to_numpy(),
                "benchmark": _labels(cd["item_benchmark"].values),
                "domain": _labels(cd["item_domain"].values),
                "n_responses": cd["item_n_responses"].values.astype("int64"),
                "mean_response": cd["item_mean_response"].values,
            }
        )
        for name in ITEM_PARAMETERS:
            if name in post:
                for col, values in _summaries(post[name], ci_prob).items():
                    table[f"{name}_{col}"] = values
        table["ci_prob"] = ci_prob
        return self._table_attrs(table, ci_prob)

    def subjects_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per subject (and dimension): posterior summaries of the ability.

        Returns
        -------
        pandas.DataFrame
            Columns ``subject``, (``dim``,) ``n_responses``, ``mean_response``, ``ability_mean``,
            ``ability_sd``, ``ability_ci_low``, ``ability_ci_high``, ``ci_prob``.
        """
        _check_prob(ci_prob)
        ability = self.posterior["ability"]
        cd = self.constant_data
        counts = pd.DataFrame(
            {
                "subject": self.subject_ids.to_numpy(),
                "n_responses": cd["subject_n_responses"].values.astype("int64"),
                "mean_response": cd["subject_mean_response"].values,
            }
        )
        table = _draws_table(ability, ci_prob, prefix="ability")
        table = counts.merge(table, on="subject", how="right")
        cols = ["subject"] + (["dim"] if "dim" in table.columns else []) + ["n_responses", "mean_response"]
        table = table[cols + [c for c in table.columns if c not in cols]]
        table["ci_prob"] = ci_prob
        return self._table_attrs(table, ci_prob)

    def flagged_items(self, *, min_discrimination: float = 0.25, prob: float = 0.5) -> pd.DataFrame:
        """Items that measure little: solved by every subject or by none, or with near-zero discrimination.

        Parameters
        ----------
        min_discrimination
            Discriminations below this count as "near zero" (logit change per ability sd).
        prob
            An item is flagged when P(discrimination < ``min_discrimination`` | data) exceeds ``prob``.

        Returns
        -------
        pandas.DataFrame
            One row per flagged item: ``item``, ``benchmark``, ``domain``, ``n_responses``,
            ``mean_response``, ``item_rest_corr`` (correlation of the item with the rest score in the
            data: negative means the item favours weaker subjects, which a model with positive
            discriminations cannot express), ``p_low_discrimination``, ``discrimination_mean`` and
            ``flags`` (``all_correct``, ``all_wrong``, ``low_discrimination``, ``negative_item_rest``,
            joined by ``;``).
        """
        _check_prob(prob)
        post = self.posterior
        cd = self.constant_data
        disc = post["discrimination"]
        p_low = (disc < min_discrimination).mean(dim=("chain", "draw")).values
        mean_resp = cd["item_mean_response"].values
        rest = cd["item_rest_corr"].values
        flags = []
        for i in range(len(mean_resp)):
            f = []
            if mean_resp[i] == 1:
                f.append("all_correct")
            elif mean_resp[i] == 0:
                f.append("all_wrong")
            if self.spec.kind != "1pl" and p_low[i] > prob:
                f.append("low_discrimination")
            if np.isfinite(rest[i]) and rest[i] < 0:
                f.append("negative_item_rest")
            flags.append(";".join(f))
        table = pd.DataFrame(
            {
                "item": self.item_ids.to_numpy(),
                "benchmark": _labels(cd["item_benchmark"].values),
                "domain": _labels(cd["item_domain"].values),
                "n_responses": cd["item_n_responses"].values.astype("int64"),
                "mean_response": mean_resp,
                "item_rest_corr": rest,
                "p_low_discrimination": p_low,
                "discrimination_mean": disc.mean(dim=("chain", "draw")).values,
                "flags": flags,
            }
        )
        table = table.loc[table["flags"] != ""].reset_index(drop=True)
        table.attrs.update(min_discrimination=min_discrimination, prob=prob, approximate=self.approximate)
        return table

    def summary(self) -> str:
        """A short text: model, data, sampler, convergence (and PARTIAL for an interrupted run kept)."""
        s = self.sampler
        label = (" (APPROXIMATE)" if self.approximate else "") + (" (PARTIAL)" if self.partial else "")
        lines = [
            f"{self.spec.kind.upper()} IRT, hierarchy {self.spec.hierarchy}, abilities {self.spec.dims}, "
            f"identification {self.spec.identification}{label}",
            f"data: {self.info.get('source', '?')} ({self.info.get('n_subjects', '?')} subjects x "
            f"{self.info.get('n_items', '?')} items, {self.info.get('n_responses', '?')} responses)",
            f"sampler: {s.get('name')} {s.get('chains')} chains x {s.get('draws')} draws (tune {s.get('tune')}), "
            f"seed {s.get('seed')}, {s.get('wall_time_s', float('nan')):.1f} s",
            *([self.partial_text()] if self.partial else []),
            self.diagnostics.summary(),
        ]
        return "\n".join(lines)


def _check_prob(p: float) -> None:
    if not 0 < p < 1:
        raise SpecError(f"a probability strictly between 0 and 1 is needed, got {p}")


def _labels(values: np.ndarray) -> pd.Series:
    out = pd.Series(values.astype(str), dtype="string")
    return out.where(out != "", pd.NA)


def _summaries(da: xr.DataArray, ci_prob: float) -> dict[str, np.ndarray]:
    lo, hi = (1 - ci_prob) / 2, 1 - (1 - ci_prob) / 2
    values = da.transpose("chain", "draw", ...).values
    flat = values.reshape(-1, *values.shape[2:])
    q = np.quantile(flat, [lo, hi], axis=0)
    return {
        "mean": flat.mean(axis=0),
        "sd": flat.std(axis=0, ddof=1) if flat.shape[0] > 1 else np.zeros(flat.shape[1:]),
        "ci_low": q[0],
        "ci_high": q[1],
    }


def _draws_table(da: xr.DataArray, ci_prob: float, *, prefix: str) -> pd.DataFrame:
    """Summaries of draws (chain, draw, subject[, dim]) in long form: one row per subject (and dim)."""
    stats = _summaries(da, ci_prob)
    other = [d for d in da.dims if d not in ("chain", "draw")]
    index = pd.MultiIndex.from_product([da[d].values.astype(str) for d in other], names=other)
    table = pd.DataFrame({f"{prefix}_{k}": v.ravel() for k, v in stats.items()}, index=index).reset_index()
    return table


# ---------------------------------------------------------------------------------------------- fitting
def _constant_data(data: ResponseData) -> xr.Dataset:
    """Per-item and per-subject counts that tables and flags need without the data."""
    s = data.subject_codes
    i = data.item_codes
    y = data.values
    n_items = np.bincount(i, minlength=data.n_items)
    n_subj = np.bincount(s, minlength=data.n_subjects)
    item_mean = np.bincount(i, weights=y, minlength=data.n_items) / np.maximum(n_items, 1)
    subj_total = np.bincount(s, weights=y, minlength=data.n_subjects)
    subj_mean = subj_total / np.maximum(n_subj, 1)
    # item-rest correlation: the item against the subject's mean response on the other items
    rest = (subj_total[s] - y) / np.maximum(n_subj[s] - 1, 1)
    frame = pd.DataFrame({"i": i, "y": y, "r": rest})
    corr = np.full(data.n_items, np.nan)
    g = frame.groupby("i")
    my, mr = g["y"].transform("mean"), g["r"].transform("mean")
    cov = ((frame["y"] - my) * (frame["r"] - mr)).groupby(frame["i"]).sum()
    vy = ((frame["y"] - my) ** 2).groupby(frame["i"]).sum()
    vr = ((frame["r"] - mr) ** 2).groupby(frame["i"]).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        corr[cov.index.to_numpy()] = (cov / np.sqrt(vy * vr)).to_numpy()
    items = data.items
    return xr.Dataset(
        {
            "item_benchmark": ("item", items["benchmark"].astype(object).fillna("").to_numpy(dtype=str)),
            "item_domain": ("item", items["domain"].astype(object).fillna("").to_numpy(dtype=str)),
            "item_n_responses": ("item", n_items.astype("int64")),
            "item_mean_response": ("item", item_mean),
            "item_rest_corr": ("item", corr),
            "subject_n_responses": ("subject", n_subj.astype("int64")),
            "subject_mean_response": ("subject", subj_mean),
        },
        coords={
            "item": data.item_ids.to_numpy(dtype=str),
            "subject": data.subject_ids.to_numpy(dtype=str),
        },
    )


def _clean_posterior(posterior: xr.Dataset, spec: ModelSpec) -> xr.Dataset:
    """Drop sampler-only variables (raw standard normals, Cholesky factors); string coords."""
    drop = [n for n in posterior.data_vars if str(n).endswith(("_z", "_chol"))]
    out = posterior.drop_vars(drop)
    for dim in ("subject", "item", "benchmark", "domain", "dim", "dim2"):
        if dim in out.coords:
            out = out.assign_coords({dim: out[dim].values.astype(str)})
    keep_dims = {d for v in out.data_vars.values() for d in v.dims}
    out = out.drop_vars([c for c in out.coords if c not in keep_dims and c in out.dims])
    return add_derived(out, spec)


def _derived_names(spec: ModelSpec) -> list[str]:
    names = ["intercept"]
    if spec.kind == "1pl":
        names.append("discrimination")
    return names


def _default_settings(
    spec: ModelSpec, *, n_items: int, n_free: int, draws: int | None, target_accept: float | None
) -> tuple[int, float]:
    """Draws per chain and target acceptance where :func:`fit` was given ``None`` (see its docstring)."""
    if draws is None:
        draws = LARGE_MODEL_DRAWS if n_free > LARGE_MODEL else 1000
        if spec.hierarchy == "none" and n_items < SMALL_BANK_ITEMS:
            draws = max(draws, SMALL_BANK_DRAWS)
    if target_accept is None:
        if n_items < SMALL_BANK:
            target_accept = 0.95
        else:
            target_accept = 0.7 if n_free > LARGE_MODEL else 0.8
    return int(draws), float(target_accept)


def _random_seed() -> int:
    return int(np.random.default_rng().integers(1, 2**31 - 1))


def fit(
    data: ResponseData,
    spec: ModelSpec | None = None,
    *,
    sampler: Sampler = "nutpie",
    chains: int = 4,
    draws: int | None = None,
    tune: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    cores: int | None = None,
    target_accept: float | None = None,
    rhat_max: float = 1.01,
    ess_min: float = 400.0,
    sampler_kwargs: dict[str, Any] | None = None,
    keep_partial: bool = False,
) -> Fit:
    """Fit an IRT model to ``data``.

    Parameters
    ----------
    data
        Responses.
    spec
        Model spec (default: 2PL, deepest hierarchy the labels allow, standardised abilities).
    sampler
        ``"nutpie"`` (default; NUTS compiled with numba), ``"pymc"`` (PyMC's NUTS), ``"numpyro"`` (needs
        JAX and NumPyro), or the approximate ``"advi"`` (mean-field ADVI, ``tune`` is its number of
        optimisation steps x 10) and ``"pathfinder"`` (needs pymc-extras).
    chains, draws, tune
        Chains, kept draws per chain, warm-up draws per chain. ``draws=None`` gives 1000;
        :data:`LARGE_MODEL_DRAWS` for models with more than :data:`LARGE_MODEL` free parameters (the largest
        r-hat over tens of thousands of parameters is noisier, and on MMLU-Pro 4 x 1000 draws left two of
        24,064 parameters at r-hat 1.0104); :data:`SMALL_BANK_DRAWS` (2000) for one group of fewer than
        :data:`~irtbayes.model.SMALL_BANK_ITEMS` items (LSAT6, 1,000 examinees x 5 items, missed at 1000
        draws with r-hat 1.009-1.014 at seeds 1-3; each such fit takes seconds). ``tune=None`` gives 500
        for nutpie (its mass-matrix adaptation settles within a few hundred draws; on MMLU-Pro 500 more
        warm-up draws would cost 2 minutes on 2 cores) and 1000 for the other samplers.
    seed
        Random seed; ``None`` draws one, which is recorded in ``fit.sampler["seed"]``.
    progress
        Show the sampler's progress bar.
    cores
        Chains run in parallel (default: min(chains, CPU count)).
    target_accept
        NUTS target acceptance rate. ``None``: 0.95 for banks of fewer than :data:`SMALL_BANK` items, 0.7
        for models with more than :data:`LARGE_MODEL` free parameters, else 0.8. In high dimension most
        directions of an IRT posterior are close to Gaussian, where the optimal acceptance rate of HMC
        tends to 0.65 (Beskos et al. 2013); on MMLU-Pro (24,000 parameters) 0.7 halves the leapfrog steps
        per draw (31 instead of 58) at the same ESS per gradient evaluation. Raise it (0.9) if a fit reports
        divergences.
    rhat_max, ess_min
        Thresholds of the convergence check (:func:`~irtbayes.diagnostics.check_convergence`).
    sampler_kwargs
        Extra keyword arguments for the sampler (e.g. ``{"adaptation": "low_rank"}`` for nutpie).
    keep_partial
        When the run is interrupted (Ctrl-C) after some draws, attach them to the :class:`FitInterrupted`
        raised, as a :class:`Fit` marked partial (``fit.partial``, ``card()["partial"]``) whose convergence
        checks fail with the reason stated. Default: the draws so far are discarded.

    Returns
    -------
    Fit
        Posterior ``ability`` (chain, draw, subject[, dim]), ``difficulty``, ``discrimination``,
        ``intercept`` [, ``guessing``] (chain, draw, item), hyperparameters; diagnostics checked. A fit that
        does not pass the checks gives a warning (it is still returned).

    Raises
    ------
    SpecError
        Unknown sampler, bad settings, or a spec the data cannot support.
    FitInterrupted
        Ctrl-C while building, compiling, tuning or sampling, or a sampler that returned fewer chains or
        draws than asked for (nutpie and PyMC return the draws so far when interrupted). It says the phase
        and the draws done, and carries the partial fit when ``keep_partial`` is True.
    """
    if sampler not in SAMPLERS:
        raise SpecError(f"unknown sampler {sampler!r}; choose one of {list(SAMPLERS)}")
    if tune is None:
        tune = 500 if sampler == "nutpie" else 1000
    for name, value, low in (("chains", chains, 1), ("draws", 1 if draws is None else draws, 1), ("tune", tune, 0)):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise SpecError(f"fit: {name} must be an integer >= {low}, got {value!r}")
    if target_accept is not None and not 0 < target_accept < 1:
        raise SpecError(f"fit: target_accept must be in (0, 1), got {target_accept}")
    spec = spec or ModelSpec()
    if not isinstance(spec, ModelSpec):
        raise SpecError(f"fit: spec must be a ModelSpec, got {type(spec).__name__}")
    seed = _random_seed() if seed is None else int(seed)
    chains, tune = int(chains), int(tune)
    state = _Progress()
    with _InterruptWatch() as watch:
        try:
            if sampler == "numpyro" and spec.layout in ("auto", "fused"):
                resolved = model_inputs(data, spec).spec.layout
                if resolved == "fused":  # the fused Op has no JAX implementation
                    spec = spec.replace(layout="dense")
            model = build_model(data, spec)
            spec = model.irtbayes_spec  # resolved
            dims = model.named_vars_to_dims
            n_free = sum(int(np.prod([len(model.coords[d]) for d in dims.get(rv.name, ())])) for rv in model.free_RVs)
            draws, target_accept = _default_settings(
                spec, n_items=data.n_items, n_free=n_free, draws=draws, target_accept=target_accept
            )
            cores = int(cores or min(chains, os.cpu_count() or 1))
            extra = dict(sampler_kwargs or {})
            settings: dict[str, Any] = {
                "name": sampler,
                "chains": chains,
                "draws": int(draws),
                "tune": tune,
                "seed": seed,
                "cores": cores,
                "target_accept": float(target_accept),
                "approximate": sampler in APPROXIMATE_SAMPLERS,
                "options": json_ready(extra),
            }
            log.info(
                "fitting %s to %s with %s (%d chains x %d draws, tune %d, seed %d)",
                spec.kind,
                data.source,
                sampler,
                chains,
                draws,
                tune,
                seed,
            )
            start = time.perf_counter()
            tree = _sample(
                model,
                sampler=sampler,
                chains=chains,
                draws=draws,
                tune=tune,
                seed=seed,
                progress=progress,
                cores=cores,
                target_accept=target_accept,
                extra=extra,
                state=state,
                watch=watch,
            )
        except KeyboardInterrupt:
            raise FitInterrupted(state.phase, draws_requested=draws or 0, chains_requested=chains) from None
        except Exception:
            # PyMC, interrupted while tuning, raises "Not enough samples to build a trace"
            if watch.seen:
                raise FitInterrupted(state.phase, draws_requested=draws or 0, chains_requested=chains) from None
            raise
    settings["wall_time_s"] = round(time.perf_counter() - start, 3)
    assemble: dict[str, Any] = {
        "data": data,
        "spec": spec,
        "settings": settings,
        "rhat_max": rhat_max,
        "ess_min": ess_min,
    }

    if settings["approximate"]:
        if watch.seen:
            n_chains, n_draws = (int(tree["posterior"].to_dataset().sizes.get(d, 0)) for d in ("chain", "draw"))
            done = {"draws_done": n_draws, "draws_requested": int(draws), "chains_done": n_chains}
            interrupted = {"phase": "optimisation", **done, "chains_requested": chains}
            partial = _assemble(tree, **assemble, interrupted=interrupted) if keep_partial else None
            raise FitInterrupted("optimisation", **done, chains_requested=chains, partial=partial)
        result = _assemble(tree, **assemble)
        warnings.warn(
            f"{sampler} is an approximate method: intervals are approximate and MCMC diagnostics do not apply",
            UserWarning,
            stacklevel=2,
        )
        return result

    done_per_chain = _completed_draws(tree["posterior"].to_dataset(), draws=int(draws))
    if watch.seen or len(done_per_chain) < chains or int(done_per_chain.min(initial=draws)) < draws:
        keep, length = _choose_chains(done_per_chain)
        phase = "sampling" if length > 0 else "tuning"
        done = {"draws_done": length, "draws_requested": int(draws), "chains_done": len(keep)}
        partial = None
        if keep_partial and length > 0:
            kept = xr.DataTree.from_dict(
                {
                    name: tree[name].to_dataset().isel(chain=keep, draw=slice(0, length))
                    for name in ("posterior", "sample_stats")
                    if name in tree.children
                }
            )
            partial = _assemble(kept, **assemble, interrupted={"phase": phase, **done, "chains_requested": chains})
        raise FitInterrupted(phase, **done, chains_requested=chains, partial=partial)

    result = _assemble(tree, **assemble)
    if not result.diagnostics.ok:
        warnings.warn(
            "the fit did not pass the convergence checks:\n" + result.diagnostics.summary(), UserWarning, stacklevel=2
        )
    return result


def _assemble(
    tree: xr.DataTree,
    *,
    data: ResponseData,
    spec: ModelSpec,
    settings: dict[str, Any],
    rhat_max: float,
    ess_min: float,
    interrupted: dict[str, Any] | None = None,
) -> Fit:
    """The :class:`Fit` of a sampler's trace: clean posterior, counts, diagnostics, card information.

    With ``interrupted`` (phase and draws done) the fit is marked partial and its diagnostics fail.
    """
    posterior = _clean_posterior(tree["posterior"].to_dataset(), spec)
    groups: dict[str, xr.Dataset] = {"posterior": posterior}
    if "sample_stats" in tree.children and not settings["approximate"]:
        groups["sample_stats"] = tree["sample_stats"].to_dataset()
    groups["constant_data"] = _constant_data(data)
    idata = xr.DataTree.from_dict(groups)
    idata.attrs.update(
        {
            "irtbayes_version": _irtbayes_version(),
            "sampler": settings["name"],
            "approximate": int(settings["approximate"]),
            "data_checksum": data.checksum(),
        }
    )
    info: dict[str, Any] = {
        "source": data.source,
        "n_subjects": data.n_subjects,
        "n_items": data.n_items,
        "n_responses": data.n_responses,
        "binary": data.is_binary,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "package_versions": _versions(),
    }
    check = {
        "rhat_max": rhat_max,
        "ess_min": ess_min,
        "approximate": settings["approximate"],
        "standardised": spec.identification == "standardise",
    }
    diagnostics = check_convergence(idata, **check)
    if interrupted is not None:
        idata.attrs["partial"] = 1
        info.update(partial=True, interrupted=dict(interrupted))
        reason = f"partial run: {describe_interrupt(**interrupted)}; a partial fit never passes the convergence checks"
        diagnostics = replace(diagnostics, ok=False, problems=[reason, *diagnostics.problems])
    return Fit(
        idata=idata,
        spec=spec,
        sampler=settings,
        data_checksum=data.checksum(),
        diagnostics=diagnostics,
        info=info,
    )


@dataclass
class _Progress:
    """How far a fit has got: ``compile``, ``tuning``, ``sampling``, ``optimisation`` or ``running``."""

    phase: str = "compile"


class _InterruptWatch:
    """Notes a SIGINT (Ctrl-C) during a fit and passes it on to the handler that was installed.

    nutpie and PyMC catch the ``KeyboardInterrupt`` and return the draws so far; this records that the
    interrupt happened, whatever the sampler does with it. Outside the main thread (where Python handles
    no signals) or when SIGINT is not handled by a Python function, it records nothing.
    """

    def __init__(self) -> None:
        self.seen = False
        self._previous: Callable[..., Any] | None = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.seen = True
        if self._previous is not None:
            self._previous(signum, frame)

    def __enter__(self) -> _InterruptWatch:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):
                self._previous = previous
                signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


def _completed_draws(posterior: xr.Dataset, *, draws: int) -> np.ndarray:
    """Per chain, the draws before the first incomplete one (nutpie pads chains cut short with NaN).

    Returns
    -------
    numpy.ndarray
        (chain,) integers; all equal to ``draws`` for a complete run.
    """
    n_chains = int(posterior.sizes.get("chain", 0))
    n_draws = int(posterior.sizes.get("draw", 0))
    floats = [v for v in posterior.data_vars.values() if np.issubdtype(v.dtype, np.floating)]
    if n_chains == 0 or n_draws == 0:
        return np.zeros(n_chains, dtype="int64")
    if n_draws == draws and all(bool(np.isfinite(v.isel(draw=-1)).all()) for v in floats):
        return np.full(n_chains, n_draws, dtype="int64")
    complete = np.ones((n_chains, n_draws), dtype=bool)
    for v in floats:
        rest = [d for d in v.dims if d not in ("chain", "draw")]
        finite = np.isfinite(v.transpose("chain", "draw", *rest).values)
        complete &= finite.reshape(n_chains, n_draws, -1).all(axis=2)
    return np.where(complete.all(axis=1), n_draws, complete.argmin(axis=1)).astype("int64")


def _choose_chains(done: np.ndarray) -> tuple[list[int], int]:
    """The chains to keep of a run cut short, and their common length: the most draws in all (chains x
    length); on a tie, more chains (r-hat needs at least two)."""
    best: tuple[list[int], int] = ([], 0)
    order = np.argsort(-done, kind="stable")
    for k in range(1, len(done) + 1):
        length = int(done[order[k - 1]])
        if length > 0 and k * length >= len(best[0]) * best[1]:
            best = (sorted(int(i) for i in order[:k]), length)
    return best


def _sample(
    model: pm.Model,
    *,
    sampler: str,
    chains: int,
    draws: int,
    tune: int,
    seed: int,
    progress: bool,
    cores: int,
    target_accept: float,
    extra: dict[str, Any],
    state: _Progress | None = None,
    watch: _InterruptWatch | None = None,
) -> xr.DataTree:
    """Run ``sampler`` on ``model``, recording the phase reached in ``state``.

    On Ctrl-C, nutpie and PyMC return the draws so far (PyMC raises when there are none); with ``watch``,
    PyMC's sequential chains stop too instead of running on after the first one is cut short.
    """
    state = state or _Progress()
    if sampler == "nutpie":
        import nutpie

        started = time.perf_counter()
        compiled = nutpie.compile_pymc_model(model)
        state.phase = "tuning"
        log.info("compiled the model in %.1f s; tuning and sampling", time.perf_counter() - started)
        with warnings.catch_warnings():
            # ArviZ's guess about dimension names, raised for a run cut short with fewer draws than chains
            warnings.filterwarnings("ignore", message="Found chain dimension to be longer than draw dimension")
            # a bar where one can be drawn; log lines with draws/s and the time left everywhere else
            bar = progress and sys.stderr.isatty()
            phase_only = not progress or bar
            progress_log = SamplingProgress(
                every=float("inf") if phase_only else PROGRESS_EVERY, on_phase=lambda p: setattr(state, "phase", p)
            )
            return nutpie.sample(
                compiled,
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                seed=seed,
                save_warmup=False,
                progress_bar=bar,
                progress_callback=progress_log,
                target_accept=target_accept,
                **extra,
            )
    if sampler in ("pymc", "numpyro"):
        if sampler == "numpyro":
            try:
                import jax  # noqa: F401
                import numpyro  # noqa: F401
            except ImportError as err:
                raise SpecError("sampler='numpyro' needs JAX and NumPyro: pip install 'irtbayes[jax]'") from err
        if sampler == "pymc":
            # numba: pip installs of PyTensor often have no BLAS for its C backend
            extra.setdefault("compile_kwargs", {"mode": "NUMBA"})
            extra["callback"] = _pymc_callback(state, watch, extra.get("callback"))
        else:
            state.phase = "running"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*ravel_inputs.*")
            return pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                random_seed=seed,
                progressbar=progress,
                model=model,
                target_accept=target_accept,
                compute_convergence_checks=False,
                nuts_sampler="numpyro" if sampler == "numpyro" else "pymc",
                **extra,
            )
    state.phase = "optimisation"
    if sampler == "advi":
        n_steps = int(extra.pop("n", max(10 * tune, 2000)))
        with pytensor.config.change_flags(mode="NUMBA"):
            approx = pm.fit(n=n_steps, method="advi", model=model, random_seed=seed, progressbar=progress, **extra)
            return approx.sample(draws=draws * chains, random_seed=seed)
    try:
        import pymc_extras as pmx
    except ImportError as err:
        raise SpecError("sampler='pathfinder' needs pymc-extras: pip install pymc-extras") from err
    return pmx.fit(method="pathfinder", model=model, num_draws=draws * chains, random_seed=seed, **extra)


def _pymc_callback(
    state: _Progress, watch: _InterruptWatch | None, user: Callable[..., Any] | None
) -> Callable[..., None]:
    """A ``pm.sample`` callback that records the phase and, once Ctrl-C has been seen, stops every chain.

    PyMC samples chains one after the other when ``cores=1`` and, on Ctrl-C, only ends the current one;
    raising ``KeyboardInterrupt`` here ends each later chain at its first draw.
    """

    def callback(trace: Any, draw: Any) -> None:
        state.phase = "tuning" if draw.tuning else "sampling"
        if user is not None:
            user(trace=trace, draw=draw)
        if watch is not None and watch.seen:
            raise KeyboardInterrupt

    return callback


# ---------------------------------------------------------------------------------------------- save / load
def save_fit(result: Fit, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``result`` to the folder ``path`` atomically.

    The folder gets ``posterior.nc`` (netCDF4 via h5netcdf), ``card.json`` (with the SHA-256 of
    ``posterior.nc`` and of the card itself, which :func:`load_fit` checks), ``items.csv`` and
    ``subjects.csv`` (summaries of the draws as stored, so they agree with the fit :func:`load_fit` returns).

    ``posterior.nc`` keeps what later steps read, and no more:

    - ``posterior``: every sampled parameter, its floating-point draws stored as float32 (7 significant
      digits; :func:`load_fit` returns them as float64), zlib-compressed (level 1, with byte shuffling).
      Variables :func:`~irtbayes.model.add_derived` recomputes (``intercept``; ``discrimination`` of a 1PL)
      are not stored.
    - ``sample_stats``: only the fields the convergence checks read (``diverging``, ``energy``, tree-depth
      saturation and steps per draw), in their own dtypes (``energy`` stays float64: E-BFMI takes
      differences of large numbers). The sampler's other statistics (step size, log density, ...) are
      dropped.
    - ``constant_data``: unchanged.

    ``card.json`` records this as ``storage``: ``{"dtype": "float32", "compression": ..., "dropped": [...]}``,
    the dropped ``group/variable`` names and any other group of ``result.idata``, none of which is saved.
    At MMLU-Pro's size (29 x 12,032 items, 4 x 1250 draws) the file is 2.4 times smaller than in float64
    (967 MB -> 397 MB; the compression adds about 11 s to the save, ``scripts/benchmark_storage.py``).

    Everything is written into a temporary folder ``.<name>.tmp-<random>`` beside ``path``, flushed to
    disk, and renamed into place at the end, so ``path`` is at every moment either absent, the previous fit,
    or the new one, complete (an interrupt, a full disk or a killed process never leaves a half-written fit
    there; a killed process may leave the hidden temporary folder behind, which nothing reads). When two
    processes save to the same ``path`` at once, one complete fit ends up there, never a mix.

    Parameters
    ----------
    result
        The fit.
    path
        Target folder.
    overwrite
        Replace an existing folder (the old one is removed only after the new one is complete).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FitError
        ``path`` exists and ``overwrite`` is False (also when another process saved there meanwhile), or the
        folder cannot be written (a full disk, no permission): the message names ``path`` and the reason, and
        a fit already at ``path`` is left unchanged.
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise FitError(f"{target}: already exists (pass overwrite=True to replace it)")
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        _write_fit_files(result, tmp)
        _sync_folder(tmp)
        _move_into_place(tmp, target, overwrite=overwrite)
        _sync_folder(target.parent, files=False)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        kept = "the fit already there is unchanged" if target.exists() else "nothing was saved"
        where = f" ({err.filename})" if err.filename and str(err.filename) != str(target) else ""
        raise FitError(f"{target}: the fit could not be saved: {err.strerror or err}{where}; {kept}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("saved fit to %s", target)
    return target


def _sync_folder(folder: Path, *, files: bool = True) -> None:
    """Flush the files of ``folder`` (and the folder itself) to disk, so a rename publishes complete files."""
    paths = [p for p in folder.iterdir() if p.is_file()] if files else []
    for p in [*paths, folder]:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            if p == folder:  # some systems cannot open a folder (Windows): its entries are then written through
                continue
            raise
        try:
            os.fsync(fd)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.EBADF):  # cannot be synced this way here: not an I/O error
                raise
        finally:
            os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where not supported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _move_into_place(tmp: Path, target: Path, *, overwrite: bool) -> None:
    """Rename the complete folder ``tmp`` to ``target``; with ``overwrite``, replace a folder already there.

    A rename never replaces a non-empty folder, so a fit that another process put at ``target`` meanwhile is
    kept (``overwrite=False``: FitError) or swapped out whole; ``target`` always holds one complete fit.
    """
    for _ in range(10):
        try:
            os.rename(tmp, target)
            return
        except OSError as err:
            if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise
        if not overwrite:
            raise FitError(
                f"{target}: another process saved a fit here while this one was being written; that fit "
                "was kept and this one was not saved (pass overwrite=True to replace it)"
            )
        try:
            if _exchange(tmp, target):
                shutil.rmtree(tmp, ignore_errors=True)  # now the old fit
                return
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(target, old)
        except FileNotFoundError:
            continue  # another writer moved it away: try again
        try:
            os.rename(tmp, target)
        except OSError as err:
            _put_back(old, target)
            if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue  # another writer's fit arrived meanwhile: replace it in turn
            raise
        except BaseException:
            _put_back(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
        return
    raise FitError(f"{target}: other processes kept replacing the fit here; this one was not saved")


def _put_back(old: Path, target: Path) -> None:
    """Return the previous fit, moved aside to ``old``, to ``target``; drop it if another writer's fit is there."""
    try:
        os.rename(old, target)
    except OSError:
        shutil.rmtree(old, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _card_checksum(card: dict[str, Any]) -> str:
    """SHA-256 of the card's content less its own checksum, in a canonical JSON form."""
    body = {k: v for k, v in card.items() if k != "card_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


#: Floating-point dtype of the posterior draws in ``posterior.nc``; and its compression (netCDF4/HDF5 filters).
_STORAGE_DTYPE = "float32"
_STORAGE_COMPRESSION: dict[str, Any] = {"zlib": True, "shuffle": True, "complevel": 1}
#: The ``sample_stats`` fields the convergence checks read (the others are not saved).
_KEPT_SAMPLE_STATS = ("diverging", "energy", "maxdepth_reached", "reached_max_treedepth", "n_steps", "tree_size")
#: The groups of a saved fit; any other group of ``Fit.idata`` is not saved.
_SAVED_GROUPS = ("posterior", "sample_stats", "constant_data")


def _storage_groups(result: Fit) -> tuple[dict[str, xr.Dataset], list[str]]:
    """The groups :func:`save_fit` writes, and the ``group/variable`` names it leaves out (derived ones aside)."""
    post = result.posterior.drop_vars([n for n in _derived_names(result.spec) if n in result.posterior])
    groups = {"posterior": post}
    dropped: list[str] = []
    for name in result.idata.children:
        if name == "posterior":
            continue
        if name not in _SAVED_GROUPS:
            dropped.append(f"{name}/")
            continue
        ds = result.idata[name].to_dataset()
        if name == "sample_stats":
            extra = [str(v) for v in ds.data_vars if v not in _KEPT_SAMPLE_STATS]
            dropped.extend(f"{name}/{v}" for v in extra)
            ds = ds.drop_vars(extra)
        groups[name] = ds
    return groups, dropped


def _storage_encoding(groups: dict[str, xr.Dataset]) -> dict[str, dict[str, dict[str, Any]]]:
    """netCDF encoding: float32 and compression for the posterior's floating-point draws."""
    post = groups["posterior"]
    floats = [str(n) for n, v in post.data_vars.items() if np.issubdtype(v.dtype, np.floating)]
    return {"/posterior": {n: {"dtype": _STORAGE_DTYPE, **_STORAGE_COMPRESSION} for n in floats}}


def _widen(posterior: xr.Dataset) -> xr.Dataset:
    """float32 draws (as :func:`save_fit` stores them) back to float64, so later sums run in float64."""
    narrow = [n for n, v in posterior.data_vars.items() if v.dtype == np.float32]
    if not narrow:
        return posterior
    out = posterior.assign({n: posterior[n].astype("float64") for n in narrow})
    for n in narrow:
        out[n].encoding = {}
    return out


def _write_fit_files(result: Fit, folder: Path) -> None:
    """``posterior.nc``, ``card.json`` and the CSV tables; the tables from the draws as stored."""
    groups, dropped = _storage_groups(result)
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(result.idata.attrs)
    tree.attrs["format_version"] = FORMAT_VERSION
    tree.attrs["data_checksum"] = result.data_checksum
    tree.to_netcdf(folder / "posterior.nc", engine="h5netcdf", encoding=_storage_encoding(groups))
    card = result.card()
    card["storage"] = {
        "dtype": _STORAGE_DTYPE,
        "compression": f"zlib level {_STORAGE_COMPRESSION['complevel']}, shuffle",
        "dropped": dropped,
    }
    card["posterior_sha256"] = _sha256(folder / "posterior.nc")
    card["card_sha256"] = _card_checksum(card)
    (folder / "card.json").write_text(json.dumps(card, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    stored = _as_stored(result, groups["posterior"])
    stored.items_table().to_csv(folder / "items.csv", index=False)
    stored.subjects_table().to_csv(folder / "subjects.csv", index=False)


def _as_stored(result: Fit, posterior: xr.Dataset) -> Fit:
    """``result`` with the posterior :func:`load_fit` returns from ``posterior.nc``, for the CSV tables."""
    floats = [n for n, v in posterior.data_vars.items() if np.issubdtype(v.dtype, np.floating)]
    narrow = posterior.assign({n: posterior[n].astype(_STORAGE_DTYPE) for n in floats})
    tree = xr.DataTree.from_dict(
        {"posterior": add_derived(_widen(narrow), result.spec), "constant_data": result.constant_data}
    )
    return replace(result, idata=tree)


def load_fit(path: str | os.PathLike[str], *, data: ResponseData | None = None) -> Fit:
    """Read a fit saved by :func:`save_fit`.

    Posterior draws stored as float32 come back as float64 (the float32 values, widened); fits saved in
    float64 by earlier versions load unchanged. The card's ``storage`` (absent in older cards) is in
    ``Fit.info``.

    Parameters
    ----------
    path
        The fit folder.
    data
        When given, its checksum must match the one the fit was made from.

    Returns
    -------
    Fit

    Raises
    ------
    FitError
        Missing folder or file, a corrupt ``card.json`` or ``posterior.nc`` (named), a file edited or
        truncated after saving (their SHA-256 in the card differ; cards written before checksums were
        recorded load without this check), another format version, files that disagree with each other, or
        data with another checksum.
    """
    folder = Path(path)
    if not folder.is_dir():
        aside = sorted(folder.parent.glob(f".{folder.name}.old-*")) if folder.parent.is_dir() else []
        hint = f"; a save interrupted while replacing it left the previous fit at {aside[-1]}" if aside else ""
        raise FitError(f"{folder}: no saved fit here (not a folder){hint}")
    card_path = folder / "card.json"
    post_path = folder / "posterior.nc"
    for p in (card_path, post_path):
        if not p.is_file():
            raise FitError(f"{p}: missing; a saved fit needs card.json and posterior.nc")
    card = read_json(card_path, error=FitError)
    if "format_version" in card and card["format_version"] != FORMAT_VERSION:
        raise FitError(
            f"{card_path}: format version {card['format_version']!r}; this irtbayes reads version {FORMAT_VERSION}"
        )
    if "card_sha256" in card and card["card_sha256"] != _card_checksum(card):
        raise FitError(f"{card_path}: edited after it was saved (its content does not match its checksum)")
    if "posterior_sha256" in card and card["posterior_sha256"] != _sha256(post_path):
        raise FitError(
            f"{post_path}: truncated or edited after it was saved (its SHA-256 differs from the one in card.json)"
        )
    for key in ("format_version", "spec", "sampler", "data_checksum", "diagnostics"):
        if key not in card:
            raise FitError(f"{card_path}: key '{key}' is missing")
    try:
        spec = ModelSpec.from_dict(card["spec"])
        diagnostics = Diagnostics.from_dict(card["diagnostics"])
    except (SpecError, KeyError, TypeError, ValueError) as err:
        raise FitError(f"{card_path}: bad 'spec' or 'diagnostics' ({err})") from None
    try:
        with xr.open_datatree(post_path, engine="h5netcdf") as opened:
            tree = opened.load()
    except Exception as err:  # h5py/netCDF raise many kinds of errors for a damaged file
        raise FitError(f"{post_path}: cannot be read as netCDF ({type(err).__name__}: {err})") from None
    if "posterior" not in tree.children or "constant_data" not in tree.children:
        raise FitError(f"{post_path}: the posterior or constant_data group is missing")
    if str(tree.attrs.get("data_checksum")) != card["data_checksum"]:
        raise FitError(f"{post_path}: its data checksum differs from card.json's; the files come from different fits")
    if data is not None and data.checksum() != card["data_checksum"]:
        raise FitError(
            f"{card_path}: the fit was made from other data (checksum {card['data_checksum'][:12]}, "
            f"the data given has {data.checksum()[:12]}: {data.source})"
        )
    groups = {name: tree[name].to_dataset() for name in tree.children}
    try:
        groups["posterior"] = add_derived(_widen(groups["posterior"]), spec)
    except KeyError as err:
        raise FitError(f"{post_path}: posterior variable {err} is missing") from None
    idata = xr.DataTree.from_dict(groups)
    idata.attrs.update({k: v for k, v in tree.attrs.items() if k != "format_version"})
    info = {
        k: v
        for k, v in card.items()
        if k
        not in (
            "format_version",
            "spec",
            "sampler",
            "data_checksum",
            "diagnostics",
            "approximate",
            "posterior_sha256",
            "card_sha256",
        )
    }
    return Fit(
        idata=idata,
        spec=spec,
        sampler=dict(card["sampler"]),
        data_checksum=card["data_checksum"],
        diagnostics=diagnostics,
        info=info,
    )


# ---------------------------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class Scores:
    """Abilities of new subjects scored against a fitted item bank.

    Attributes
    ----------
    draws
        ``ability`` draws (chain, draw, subject[, dim]): one per posterior draw of the item parameters used.
    """

    draws: xr.DataArray
    n_responses: pd.Series
    approximate: bool = False

    def table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per subject (and dim): ``ability_mean``, ``ability_sd``, ``ability_ci_low``, ``ability_ci_high``."""
        _check_prob(ci_prob)
        table = _draws_table(self.draws, ci_prob, prefix="ability")
        table.insert(1, "n_responses", table["subject"].map(self.n_responses).astype("int64"))
        table["ci_prob"] = ci_prob
        table.attrs.update(ci_prob=ci_prob, approximate=self.approximate)
        return table


def score(
    result: Fit,
    new_responses: ResponseData,
    *,
    n_draws: int = 400,
    grid: np.ndarray | None = None,
    seed: int | None = None,
) -> Scores:
    """Abilities of new subjects with the item parameters held at the fitted posterior (no refit).

    For each of ``n_draws`` posterior draws of the item parameters, each new subject's ability posterior
    under the population prior N(0, 1) is computed on a grid, and one ability is drawn from it (with
    uniform jitter within the grid cell). The draws therefore carry both the subject's own uncertainty and
    the uncertainty of the item parameters. With ``dims="domain"`` each dimension is scored from the
    items of its domain, independently (the ability correlation is not used).

    Parameters
    ----------
    result
        A fit whose items include every item in ``new_responses``.
    new_responses
        Responses of the subjects to score (they may or may not be among the fitted subjects; they are
        scored afresh).
    n_draws
        Posterior draws of the item parameters to use (thinned evenly).
    grid
        Ability grid (default: 241 points on [-6, 6]).
    seed
        Seed for the draws.

    Returns
    -------
    Scores
        ``draws`` (chain=1, draw, subject[, dim]) and ``table()``.

    Raises
    ------
    DataError
        Items in ``new_responses`` that the fit does not know.
    """
    if not isinstance(new_responses, ResponseData):
        raise DataError(f"score: expected ResponseData, got {type(new_responses).__name__}")
    known = result.item_ids
    unknown = new_responses.item_ids.difference(known)
    if len(unknown):
        raise DataError(
            f"{new_responses.source}: {len(unknown)} item(s) are not in the fitted item bank, e.g. "
            f"{list(unknown[:5])}; refit with them, or drop them (data.subset(items=...))"
        )
    rng = np.random.default_rng(seed)
    grid = np.linspace(-6, 6, 241) if grid is None else np.asarray(grid, dtype="float64")
    if grid.ndim != 1 or len(grid) < 3 or np.any(np.diff(grid) <= 0):
        raise SpecError("score: grid must be an increasing 1-d array with at least 3 points")
    post = result.posterior
    n_total = post.sizes["chain"] * post.sizes["draw"]
    pick = np.unique(np.linspace(0, n_total - 1, min(n_draws, n_total)).round().astype(int))
    cols = known.get_indexer(new_responses.item_ids)

    def flat(name: str) -> np.ndarray:
        v = post[name].transpose("chain", "draw", "item").values
        return v.reshape(n_total, -1)[pick][:, cols]

    a, b = flat("discrimination"), flat("difficulty")
    c = flat("guessing") if "guessing" in post else None
    y = np.zeros((new_responses.n_subjects, new_responses.n_items))
    w = np.zeros_like(y)
    y[new_responses.subject_codes, new_responses.item_codes] = new_responses.values
    w[new_responses.subject_codes, new_responses.item_codes] = 1.0
    log_prior = -0.5 * grid**2
    spacing = np.gradient(grid)
    multi = "dim" in post["ability"].dims
    if multi:
        dims = post["dim"].values.astype(str)
        item_domain = result.constant_data["item_domain"].values.astype(str)[cols]
        groups = [(d, item_domain == d) for d in dims]
    else:
        groups = [("", np.ones(new_responses.n_items, dtype=bool))]
    out = np.zeros((len(pick), new_responses.n_subjects, len(groups)))
    for g, (_, mask) in enumerate(groups):
        yw, nw = (y * w)[:, mask], ((1 - y) * w)[:, mask]
        for s in range(len(pick)):
            eta = a[s, mask][None, :] * (grid[:, None] - b[s, mask][None, :])
            if c is None:
                l1, l0 = -np.logaddexp(0, -eta), -np.logaddexp(0, eta)
            else:
                cs = c[s, mask][None, :]
                l1 = np.logaddexp(np.log(cs), np.log1p(-cs) - np.logaddexp(0, -eta))
                l0 = np.log1p(-cs) - np.logaddexp(0, eta)
            logpost = l1 @ yw.T + l0 @ nw.T + log_prior[:, None]  # grid x subject
            logpost -= logpost.max(axis=0, keepdims=True)
            prob = np.exp(logpost) * spacing[:, None]
            prob /= prob.sum(axis=0, keepdims=True)
            cdf = np.cumsum(prob, axis=0)
            u = rng.random(prob.shape[1])
            idx = np.minimum((cdf < u[None, :]).sum(axis=0), len(grid) - 1)
            out[s, :, g] = grid[idx] + (rng.random(len(idx)) - 0.5) * spacing[idx]
    subjects = new_responses.subject_ids.to_numpy(dtype=str)
    if multi:
        da = xr.DataArray(
            out[None],
            dims=("chain", "draw", "subject", "dim"),
            coords={"subject": subjects, "dim": [d for d, _ in groups]},
            name="ability",
        )
    else:
        da = xr.DataArray(
            out[None, :, :, 0], dims=("chain", "draw", "subject"), coords={"subject": subjects}, name="ability"
        )
    counts = pd.Series(np.bincount(new_responses.subject_codes, minlength=new_responses.n_subjects), index=subjects)
    return Scores(draws=da, n_responses=counts, approximate=result.approximate)
