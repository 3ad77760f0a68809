"""Fitting: ``fit(data, spec) -> Fit``.

:func:`fit` builds the model (:mod:`irtbayes.model.build`), runs the sampler (:mod:`irtbayes.fitting.sampling`), and
assembles a :class:`~irtbayes.fitting.result.Fit` with its convergence checks (:mod:`irtbayes.fitting.diagnostics.sampler`).
Its sampler settings are one :class:`~irtbayes.fitting.settings.SamplerSettings`, given as ``settings=`` or as
keywords.

Example
-------
>>> import warnings
>>> from irtbayes.data.simulate import simulate_responses
>>> data, truth = simulate_responses(40, 60, seed=1)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")  # an approximate fit warns that MCMC checks do not apply
...     result = fit(data, sampler="approx", seed=1, progress=False)
>>> result.approximate, dict(result.posterior["difficulty"].sizes)
(True, {'chain': 4, 'draw': 250, 'item': 60})
>>> difficulty = result.posterior["difficulty"].mean(("chain", "draw"))
>>> bool(np.corrcoef(difficulty, truth["difficulty"])[0, 1] > 0.85)
True
>>> result.items_table()[["item", "difficulty_mean", "difficulty_ci_low"]].shape
(60, 3)
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import logging
import os
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from irtbayes.core.errors import FitError, FitInterrupted, SpecError, describe_interrupt, refuse_unknown
from irtbayes.core.files import json_ready
from irtbayes.data.responses import ResponseData
from irtbayes.fitting import warmstart
from irtbayes.fitting.approx import ApproxSettings, approx_posterior
from irtbayes.fitting.auto import DEFAULT_BUDGET_S, Choice, choose_sampler
from irtbayes.fitting.diagnostics.divergences import remedy_text, sites_phrase
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.diagnostics.verdict import Diagnostics
from irtbayes.fitting.result import Fit, as_held, data_info, fit_constant_data, installed_version, software_versions
from irtbayes.fitting.sampling import APPROXIMATE_SAMPLERS, InterruptWatch, RunState, Sampler, run_sampler
from irtbayes.fitting.settings import SamplerSettings
from irtbayes.fitting.trace import choose_chains, complete_part, completed_draws, sampler_variable
from irtbayes.fitting.until_converged import StopRule, most_draws
from irtbayes.model.build import add_derived, build_model
from irtbayes.model.inputs import MIN_2PL_SUBJECTS, default_spec, model_inputs
from irtbayes.model.spec import GRADED_KINDS, SMALL_BANK_ITEMS, ModelSpec

__all__ = [
    "REMEDIES",
    "fit",
]

log = logging.getLogger(__name__)

#: Models with more free parameters than this get a default NUTS target acceptance of 0.7 (see :func:`fit`).
LARGE_MODEL = 5000
#: Default draws per chain for models with more than :data:`LARGE_MODEL` free parameters.
LARGE_MODEL_DRAWS = 1250
#: Item banks with fewer items than this get a default NUTS target acceptance of 0.95: the hierarchy's item
#: sds are then prior-dominated and their funnel needs small steps (LSAT7 diverged at 0.8:
#: docs/performance.md#geometry-with-few-groups-and-small-banks).
SMALL_BANK = 30
#: Models of at most :data:`LARGE_MODEL` free parameters whose median item has fewer responses than this get a default
#: NUTS target acceptance of 0.95 too: each item's parameters are barely informed, and simulated small banks in 2-3
#: benchmarks diverged at 0.8 and not at 0.95
#: (docs/performance.md#small-banks-of-a-few-benchmarks-2026-12-05-late-night).
FEW_RESPONSES = 50
#: Default draws per chain for a single group of fewer than :data:`~irtbayes.model.spec.SMALL_BANK_ITEMS` items
#: (hierarchy ``"none"``): their few discriminations are barely informed, so the draws are more correlated.
SMALL_BANK_DRAWS = 2000


# ---------------------------------------------------------------------------------------------- fitting
def _kept_draws(tree: xr.DataTree, spec: ModelSpec, *, approximate: bool) -> xr.DataTree:
    """What a fit keeps of a sampler's trace: the clean posterior and (MCMC) the sampler statistics."""
    groups = {"posterior": _clean_posterior(tree["posterior"].to_dataset(), spec)}
    if "sample_stats" in tree.children and not approximate:
        groups["sample_stats"] = tree["sample_stats"].to_dataset()
    return xr.DataTree.from_dict(groups)


def _clean_posterior(posterior: xr.Dataset, spec: ModelSpec) -> xr.Dataset:
    """Drop sampler-only variables (raw standard normals, Cholesky factors); string coords; the draws in the
    precision a fit holds them (:func:`~irtbayes.fitting.result.as_held`); the derived variables."""
    drop = [n for n in posterior.data_vars if str(n).endswith(("_z", "_chol"))]
    out = posterior.drop_vars(drop)
    for dim in ("subject", "item", "benchmark", "domain", "dim", "dim2"):
        if dim in out.coords:
            out = out.assign_coords({dim: out[dim].values.astype(str)})
    keep_dims = {d for v in out.data_vars.values() for d in v.dims}
    out = out.drop_vars([c for c in out.coords if c not in keep_dims and c in out.dims])
    return add_derived(as_held(out), spec)


def _default_settings(
    spec: ModelSpec,
    *,
    n_items: int,
    n_free: int,
    draws: int | None,
    target_accept: float | None,
    per_item: float = np.inf,
) -> tuple[int, float]:
    """Draws per chain and target acceptance where :func:`fit` was given ``None``.

    ``draws=None`` gives 1000; :data:`LARGE_MODEL_DRAWS` for models with more than :data:`LARGE_MODEL` free
    parameters (the largest r-hat over tens of thousands of parameters is noisier, and on MMLU-Pro 4 x 1000
    draws left two of 24,064 parameters at r-hat 1.0104); :data:`SMALL_BANK_DRAWS` (2000) for one group of
    fewer than :data:`~irtbayes.model.spec.SMALL_BANK_ITEMS` items (LSAT6, 1,000 examinees x 5 items, missed at
    1000 draws with r-hat 1.009-1.014 at seeds 1-3; each such fit takes seconds).

    ``target_accept=None`` gives 0.95 for banks of fewer than :data:`SMALL_BANK` items and for models of at most
    :data:`LARGE_MODEL` free parameters whose median item has fewer than :data:`FEW_RESPONSES` responses
    (``per_item``), 0.7 for models with more than :data:`LARGE_MODEL` free parameters, else 0.8. In high
    dimension most directions of an IRT posterior are close to Gaussian, where the optimal acceptance rate of HMC
    tends to 0.65 (Beskos et al. 2013); on MMLU-Pro (24,000 parameters) 0.7 halves the leapfrog steps per draw (31
    instead of 58) at the same ESS per gradient evaluation.
    """
    if draws is None:
        draws = LARGE_MODEL_DRAWS if n_free > LARGE_MODEL else 1000
        if spec.hierarchy == "none" and n_items < SMALL_BANK_ITEMS:
            draws = max(draws, SMALL_BANK_DRAWS)
    if target_accept is None:
        if n_items < SMALL_BANK or (n_free <= LARGE_MODEL and per_item < FEW_RESPONSES):
            target_accept = 0.95
        else:
            target_accept = 0.7 if n_free > LARGE_MODEL else 0.8
    return int(draws), float(target_accept)


def _n_values(model: pm.Model, variables: list[Any]) -> int:
    """How many values ``variables`` of ``model`` hold, each sized by its dimensions (1 without)."""
    dims = model.named_vars_to_dims
    return sum(int(np.prod([len(model.coords[d]) for d in dims.get(var.name) or ()])) for var in variables)


def _stored_values(model: pm.Model) -> int:
    """The values a draw stores: the model's own variables, not the sampler's coordinates
    (:func:`~irtbayes.fitting.trace.sampler_variable`)."""
    own = [var for var in [*model.free_RVs, *model.deterministics] if not sampler_variable(var.name)]
    return _n_values(model, own)


def _random_seed() -> int:
    return int(np.random.default_rng().integers(1, 2**31 - 1))


def fit(
    data: ResponseData,
    spec: ModelSpec | str | None = None,
    *,
    model: str | None = None,
    settings: SamplerSettings | None = None,
    sampler: Sampler = "auto",
    chains: int = 4,
    draws: int | None = None,
    tune: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    cores: int | None = None,
    target_accept: float | None = None,
    rhat_max: float = 1.01,
    ess_min: float = 400.0,
    sampler_kwargs: Mapping[str, Any] | None = None,
    keep_partial: bool = False,
    budget_s: float = DEFAULT_BUDGET_S,
    until_converged: bool | None = None,
    warm_start: bool | None = None,
    remedy: bool = True,
) -> Fit:
    """Fit an IRT model to ``data`` (an example opens this module's docstring).

    Parameters
    ----------
    data, spec
        Responses; the model: a :class:`~irtbayes.model.spec.ModelSpec` or the name of its kind (``"1pl"``,
        ``"2pl"``, ``"3pl"``, ``"grm"``, ``"gpcm"``; default: 2PL, deepest hierarchy the labels allow,
        standardised abilities; the 1PL for fewer than 10 subjects, :func:`~irtbayes.model.inputs.default_spec`).
    model
        The model's kind by name, as the command line's ``--model`` (``fit(data, model="1pl")``); the other
        settings of the model are :class:`~irtbayes.model.spec.ModelSpec`'s defaults.
    settings
        Every sampler setting below as one :class:`~irtbayes.fitting.settings.SamplerSettings`; with it, leave
        the other keywords at their defaults (a keyword that differs from its default as well is a SpecError).
    sampler
        ``"auto"`` (default): ``"nutpie"`` when NUTS's estimated time fits ``budget_s``, else ``"approx"``
        (:mod:`irtbayes.fitting.auto`; logged first, recorded in ``fit.sampler["auto"]``). NUTS: ``"nutpie"``,
        ``"pymc"``, ``"numpyro"`` (JAX). Approximate, labelled so in every output: ``"approx"``
        (:mod:`irtbayes.fitting.approx`, 1PL/2PL, ``draws`` defaults to 250 per chain), ``"advi"`` (``tune`` x 10
        steps) and ``"pathfinder"`` (pymc-extras).
    chains, draws, tune
        Chains, kept draws per chain, warm-up draws per chain. ``draws=None`` gives 1000, more for large
        models and small item banks (see :func:`_default_settings`). ``tune=None``: nutpie 200 when
        warm-started, else 500 (:mod:`irtbayes.fitting.warmstart`); 1000 for the other samplers.
    seed
        Random seed; ``None`` draws one, which is recorded in ``fit.sampler["seed"]``.
    progress, cores
        Show the sampler's progress bar; chains run in parallel (default: min(chains, CPU count)).
    target_accept
        NUTS target acceptance rate. ``None``: 0.95 below :data:`SMALL_BANK` items, 0.7 above :data:`LARGE_MODEL`
        free parameters, else 0.8 (:func:`_default_settings`); a run until converged that diverges is sampled
        again at a higher one (``remedy``).
    rhat_max, ess_min
        Thresholds of the convergence check (:func:`~irtbayes.fitting.diagnostics.sampler.check_convergence`).
    sampler_kwargs
        Extra keyword arguments for the sampler (e.g. ``{"adaptation": "low_rank"}`` for nutpie; ``{"devices": 2}``
        for numpyro, :mod:`irtbayes.fitting.jaxnuts`; fields of :class:`~irtbayes.fitting.approx.ApproxSettings`).
    budget_s
        Time budget in seconds (default 15 minutes) of ``sampler="auto"`` and of ``until_converged``.
    until_converged
        nutpie: sample until the convergence checks pass, with ``draws`` the most per chain (default 4 to 10
        times the usual, :func:`~irtbayes.fitting.until_converged.most_draws`), or until ``budget_s`` has passed
        (:mod:`irtbayes.fitting.until_converged`; ``fit.sampler["until_converged"]``).
        ``None`` (default): yes when ``draws`` is not given; give ``draws`` (or ``False``) for a fixed number.
    remedy
        With ``until_converged``: a run ending in divergences is sampled again at a higher target acceptance
        (:data:`REMEDIES`) while the budget lasts, recorded in ``fit.sampler["remedies"]``. ``False``: no remedy.
    warm_start
        nutpie: start each chain at its own draw around the empirical-Bayes modes (``None``, the default: yes
        for the 1PL and 2PL with one ability dimension; recorded in ``fit.sampler["warm_start"]``).
    keep_partial
        On Ctrl-C after some draws, attach them to the :class:`FitInterrupted` raised, as a :class:`Fit` marked
        partial (``fit.partial``) whose convergence checks fail, saying why. Default: they are discarded.

    Returns
    -------
    Fit
        Posterior ``ability`` (chain, draw, subject[, dim]), ``difficulty``, ``discrimination``, ``intercept``
        [, ``guessing``] (chain, draw, item), hyperparameters; checked (a failed check warns, the fit is returned).

    Raises
    ------
    SpecError
        Unknown sampler, bad settings, or a spec the data cannot support.
    FitInterrupted
        Ctrl-C while building, compiling, tuning or sampling, or a sampler that returned fewer chains or draws
        than asked for. It says the phase and the draws done, and carries the partial fit with ``keep_partial``.
    """
    given = {k: v for k, v in locals().items() if k not in ("data", "spec", "model", "settings")}  # as given
    given["sampler_kwargs"] = {} if sampler_kwargs is None else sampler_kwargs
    named = model_spec(spec, model)
    result = _fit(data, named or default_spec(data), _settings(settings, given))
    if named is None:
        note_default_model(result, data)
    return result


def note_default_model(result: Fit, data: ResponseData) -> None:
    """A fit whose model was chosen for it (none named) and is not the 2PL says why in its diagnostics' notes."""
    if result.spec.kind == "1pl" and data.n_subjects < MIN_2PL_SUBJECTS:
        result.diagnostics.notes.append(
            f"the 1PL, as no model was named: with {data.n_subjects} subjects (fewer than {MIN_2PL_SUBJECTS}) "
            "a 2PL's discrimination of each item would rest on as many responses; model='2pl' (--model 2pl) fits it"
        )


def model_spec(spec: ModelSpec | str | None, model: str | None = None) -> ModelSpec | None:
    """The :class:`ModelSpec` of :func:`fit`'s ``spec`` and ``model`` (a kind's name); an error saying how to give
    one for anything else.

    >>> model_spec("1pl").kind, model_spec(None, model="3pl").kind, model_spec(None) is None
    ('1pl', '3pl', True)
    >>> model_spec(ModelSpec(kind="2pl"), model="1pl")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: fit: give the model as spec= (a ModelSpec) or as model= (its kind), not both
    >>> model_spec({"kind": "2pl"})
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: fit: spec must be a ModelSpec or a model's name, such as fit(data, model="2pl") or fit(data, ModelSpec(kind="2pl", hierarchy="benchmark")); got dict
    """
    if model is not None:
        if spec is not None:
            raise SpecError("fit: give the model as spec= (a ModelSpec) or as model= (its kind), not both")
        spec = model
    if spec is None or isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str):
        return ModelSpec(kind=spec.lower())
    raise SpecError(
        'fit: spec must be a ModelSpec or a model\'s name, such as fit(data, model="2pl") or '
        f'fit(data, ModelSpec(kind="2pl", hierarchy="benchmark")); got {type(spec).__name__}'
    )


def _settings(settings: SamplerSettings | None, given: dict[str, Any]) -> SamplerSettings:
    """One :class:`SamplerSettings` from ``settings=`` or from :func:`fit`'s keywords (not both)."""
    if settings is None:
        return SamplerSettings(**given)
    if not isinstance(settings, SamplerSettings):
        raise SpecError(f"fit: settings must be a SamplerSettings, got {type(settings).__name__}")
    defaults = SamplerSettings().to_dict()
    clash = sorted(name for name, value in given.items() if value != defaults[name])
    if clash:
        raise SpecError(f"fit: give settings= or the keywords {clash}, not both (they are fields of settings)")
    return settings


def _fit(data: ResponseData, spec: ModelSpec | None, asked: SamplerSettings) -> Fit:
    """:func:`fit` with its settings as one object."""
    choice = _choose(data, spec, asked)
    sampler = cast(Sampler, choice.sampler) if choice is not None else asked.sampler
    warm, tune_given = _use_warm_start(asked.warm_start, sampler, spec), asked.tune is not None
    spec, seed, tune = _check_arguments(spec, sampler=sampler, tune=asked.tune, seed=asked.seed, warm=warm)
    request = asked.replace(sampler=sampler, seed=seed, tune=tune)
    stop = _stop_rule(request, spec)
    if sampler == "approx":
        tree, spec, record, seen = _approximate(data, spec, request)
    else:
        tree, spec, record, seen = _build_and_sample(data, spec, request, stop=stop, warm=warm, tune_given=tune_given)
    checked = _record_stop(stop, record)
    _refuse_empty(stop)
    if choice is not None:
        record["auto"] = choice.to_dict()
    thresholds = {"rhat_max": request.rhat_max, "ess_min": request.ess_min}
    assemble: dict[str, Any] = {"data": data, "spec": spec, "settings": record, **thresholds}
    _raise_if_cut_short(tree, assemble, seen=seen, keep_partial=request.keep_partial)
    result = _assemble(tree, **assemble, checked=checked)
    _note_remedies(result)
    _note_unsettled_modes(result)
    _note_chance_floors(result, data)
    _warn_if_not_checked(result, sampler)
    return result


def _choose(data: ResponseData, spec: ModelSpec | None, asked: SamplerSettings) -> Choice | None:
    """``sampler="auto"``: the sampler that fits the budget (:func:`irtbayes.fitting.auto.choose_sampler`); else
    None."""
    if asked.sampler != "auto":
        return None
    if not isinstance(data, ResponseData):
        raise SpecError(f"fit: expected ResponseData, got {type(data).__name__}")
    spec = spec or ModelSpec()
    return choose_sampler(
        data, spec, chains=asked.chains, draws=asked.draws, tune=asked.tune, cores=asked.cores, budget_s=asked.budget_s
    )


def _use_warm_start(warm_start: bool | None, sampler: str, spec: ModelSpec | None) -> bool:
    """Whether to warm-start (:mod:`irtbayes.fitting.warmstart`): nutpie, a supported model, not switched off."""
    supported = sampler == "nutpie" and warmstart.supports(spec or ModelSpec())
    if warm_start and not supported and sampler not in APPROXIMATE_SAMPLERS:  # an approximation has no start
        raise SpecError(
            "fit: warm_start needs sampler='nutpie' (or 'auto') and a 1PL or 2PL model with one ability dimension"
        )
    return supported and warm_start is not False


def _stop_rule(request: SamplerSettings, spec: ModelSpec) -> StopRule | None:
    """The stop rule of ``until_converged`` (NUTS with nutpie; the approximate tier has nothing to stop).
    ``None`` means yes for nutpie when ``draws`` is not given."""
    sampler, until_converged = request.sampler, request.until_converged
    if until_converged is None:
        until_converged = sampler == "nutpie" and request.draws is None
    if not until_converged or sampler == "approx":
        return None
    if sampler != "nutpie":
        raise SpecError(f"fit: until_converged needs sampler='nutpie' (or 'auto'), got {sampler!r}")
    standardised = spec.identification == "standardise"
    return StopRule(
        rhat_max=request.rhat_max, ess_min=request.ess_min, budget_s=request.budget_s, standardised=standardised
    )


def _record_stop(stop: StopRule | None, settings: dict[str, Any]) -> Diagnostics | None:
    """Record a run until converged in ``settings``; the diagnostics of its passing check, if it passed."""
    if stop is None or stop.outcome == "interrupted":
        return None
    settings.update(draws_max=settings["draws"], draws=stop.draws_done, until_converged=stop.record())
    return stop.passed if stop.outcome == "converged" else None


def _refuse_empty(stop: StopRule | None) -> None:
    """A run until converged whose budget passed before any draw was kept (still tuning) is an error, not an empty fit
    that every later step would fail on."""
    if stop is not None and stop.outcome == "budget" and stop.draws_done == 0:
        raise FitError(
            f"fit: the time budget of {stop.budget_s:.0f} s passed while NUTS was still tuning, before any draw was "
            "kept: there is nothing to check or audit; give a larger budget (budget_s=, --budget MINUTES) or use the "
            "approximate tier for data this large (sampler='approx', 1PL and 2PL)"
        )


def _note_remedies(result: Fit) -> None:
    """A fit sampled again to remedy divergences says so in its diagnostics' notes."""
    text = remedy_text(result.sampler.get("remedies") or [])
    if text:
        result.diagnostics.notes.append(text)


def _note_chance_floors(result: Fit, data: ResponseData) -> None:
    """A 1PL or 2PL fit of multiple-choice items (``n_options``) says that it leaves out their chance floor, and how
    to fit it (docs/model.md, "Multiple-choice floors"), in its notes; ``info["multiple_choice"]`` records how many
    items and options, for the report's findings."""
    if result.spec.kind not in ("1pl", "2pl") or "n_options" not in data.items.columns:
        return
    options = pd.to_numeric(data.items["n_options"], errors="coerce")
    chosen = options[options >= 2]
    if len(chosen):
        low, high = int(chosen.min()), int(chosen.max())
        result.info["multiple_choice"] = {"items": len(chosen), "options_low": low, "options_high": high}
        result.diagnostics.notes.append(
            f"{len(chosen)} of {data.n_items} items are multiple choice ({low if low == high else f'{low}-{high}'} "
            f"options): the {result.spec.kind.upper()} leaves out their chance floor of 1/options, which moves their "
            "difficulties and narrows the spread the audit measures; the 3PL with the floors fixed at chance "
            "(--model 3pl --guessing chance; ModelSpec(kind='3pl', guessing='chance')) fits it"
        )


def _note_unsettled_modes(result: Fit) -> None:
    """An approximate-tier fit whose empirical-Bayes modes did not settle says so in its diagnostics' notes."""
    if result.unsettled:
        result.diagnostics.notes.append(
            f"{result.unsettled}: those estimates are unreliable, and the audit, the report, BenchFill and the "
            "evaluating verbs refuse this fit; fit with NUTS (sampler='nutpie')"
        )


def _warn_if_not_checked(result: Fit, sampler: str) -> None:
    """A warning for an approximate fit, or for one that failed its convergence checks."""
    if result.approximate:
        message = f"{sampler} is an approximate method: intervals are approximate and MCMC diagnostics do not apply"
        message += "".join(f"; {note}" for note in result.diagnostics.notes if "did not settle" in note)
        warnings.warn(message, UserWarning, stacklevel=3)
    elif not result.diagnostics.ok:
        message = "the fit did not pass the convergence checks:\n" + result.diagnostics.to_text()
        warnings.warn(message, UserWarning, stacklevel=3)


def _approximate(
    data: ResponseData, spec: ModelSpec, request: SamplerSettings
) -> tuple[xr.DataTree, ModelSpec, dict[str, Any], bool]:
    """Run the approximate tier (:func:`irtbayes.fitting.approx.approx_posterior`); same returns as
    :func:`_build_and_sample`."""
    sampler, chains, seed = request.sampler, request.chains, int(cast(int, request.seed))
    draws = 250 if request.draws is None else int(request.draws)
    log.info(
        "fitting %s to %s with the approximate tier (%d x %d draws, seed %d)",
        spec.kind,
        data.source,
        chains,
        draws,
        seed,
    )
    start = time.perf_counter()
    try:
        tree, spec, info = approx_posterior(
            data, spec, chains=chains, draws=draws, seed=seed, settings=_approx_settings(request.sampler_kwargs)
        )
    except KeyboardInterrupt:
        raise FitInterrupted("running", draws_requested=draws, chains_requested=chains) from None
    settings: dict[str, Any] = {"name": sampler, "chains": chains, "draws": draws, "tune": 0, "seed": seed}
    settings.update(cores=1, target_accept=None, approximate=True, options=json_ready(info))
    settings["wall_time_s"] = round(time.perf_counter() - start, 3)
    return tree, spec, settings, False


def _approx_settings(options: Mapping[str, Any]) -> ApproxSettings | None:
    """The approximate tier's settings from ``sampler_kwargs`` (fields of :class:`ApproxSettings`); None for none."""
    if not options:
        return None
    known = [f.name for f in dataclasses.fields(ApproxSettings)]
    refuse_unknown("fit: sampler_kwargs for sampler='approx'", known, dict(options), noun="setting")
    return ApproxSettings(**options)


def _check_arguments(
    spec: ModelSpec | None, *, sampler: str, tune: int | None, seed: int | None, warm: bool = False
) -> tuple[ModelSpec, int, int]:
    """The spec (default :class:`ModelSpec`), seed and warm-up :func:`fit` runs with (the sampler settings are
    checked by :class:`SamplerSettings`); SpecError for a spec that is not a ModelSpec."""
    if tune is None:
        tune = (warmstart.WARM_TUNE if warm else warmstart.COLD_TUNE) if sampler == "nutpie" else 1000
    spec = spec or ModelSpec()
    if not isinstance(spec, ModelSpec):
        raise SpecError(f"fit: spec must be a ModelSpec, got {type(spec).__name__}")
    return spec, _random_seed() if seed is None else int(seed), int(tune)


def _build_and_sample(
    data: ResponseData,
    spec: ModelSpec,
    request: SamplerSettings,
    *,
    stop: StopRule | None = None,
    warm: bool = False,
    tune_given: bool = True,
) -> tuple[xr.DataTree, ModelSpec, dict[str, Any], bool]:
    """Build the model, find the chains' starts (``warm``) and run the sampler, watching for Ctrl-C.

    A warm start that cannot be made (modes that are not finite) is logged and recorded, and the chains start
    where PyMC starts them, with the warm-up of a cold start unless ``tune`` was given.

    Returns the sampler's trace, the resolved spec, the sampler settings (with ``wall_time_s``) and whether
    an interrupt was seen (the sampler may have returned the draws so far). ``request``: :func:`fit`'s settings
    with the sampler, seed and warm-up resolved.
    """
    sampler, chains, draws = request.sampler, request.chains, request.draws
    state = RunState()
    settings: dict[str, Any] = {"draws": draws or 0}
    with InterruptWatch() as watch:
        try:
            if sampler == "numpyro" and spec.layout in ("auto", "fused"):
                resolved = model_inputs(data, spec).spec
                # the fused Op has no JAX implementation; graded models default to long, which it does not take
                if resolved.layout == "fused" or (resolved.kind in GRADED_KINDS and resolved.layout == "long"):
                    spec = spec.replace(layout="dense")
            model = build_model(data, spec)
            spec = model.irtbayes_spec  # resolved
            settings = _sampler_settings(model, data, spec, request)
            if stop is not None:
                # every chain at once (threads share the CPUs): nutpie otherwise runs the chains in groups of
                # `cores`, and the checks would wait for the first group to reach the most draws
                settings["cores"] = max(settings["cores"], chains)
                stop.planned = settings["draws"]
                stop.prepare = functools.partial(_kept_draws, spec=spec, approximate=False)
                if draws is None:  # the most draws; sampling stops when the checks pass
                    settings["draws"] = most_draws(
                        settings["draws"], values_per_draw=_stored_values(model), chains=int(settings["chains"])
                    )
            start_at = _warm_start(model, data, settings, tune_given=tune_given) if warm else None
            log.info(
                "fitting %s to %s with %s (%d chains x %d draws, tune %d, seed %d)",
                spec.kind,
                data.source,
                sampler,
                chains,
                settings["draws"],
                settings["tune"],
                settings["seed"],
            )
            start = time.perf_counter()
            run = {k: settings[k] for k in ("chains", "draws", "tune", "seed", "cores", "target_accept")}
            options = {"progress": request.progress, "extra": dict(request.sampler_kwargs), "stop": stop}
            sample = _Sampling(model, start_at, sampler=sampler, state=state, watch=watch, **options)
            tree = sample(**run)
            if stop is not None and stop.outcome == "divergences" and request.remedy:
                tree, run, sample = _remedy(
                    tree, sample, stop, run, data=data, warm=warm, budget_s=request.budget_s, started=start, watch=watch
                )
                spec = sample.model.irtbayes_spec  # a remedy may have changed the coordinates (centring)
                settings.update(tune=run["tune"], target_accept=run["target_accept"], remedies=stop.remedies)
        except KeyboardInterrupt:
            raise FitInterrupted(state.phase, draws_requested=settings["draws"], chains_requested=chains) from None
        except Exception:
            # PyMC, interrupted while tuning, raises "Not enough samples to build a trace"
            if watch.seen:
                raise FitInterrupted(state.phase, draws_requested=settings["draws"], chains_requested=chains) from None
            raise
    settings["wall_time_s"] = round(time.perf_counter() - start, 3)
    if state.compile_s is not None:  # nutpie: the part of the wall time spent compiling the model
        settings["compile_s"] = round(state.compile_s, 3)
    if sampler == "numpyro":  # where the likelihood ran (irtbayes.fitting.jaxnuts)
        attrs = tree["posterior"].attrs
        settings.update({k: attrs[k] for k in ("devices", "device_kind", "sharded_axis") if k in attrs})
    return tree, spec, settings, watch.seen


#: What sampling until converged tries, in order, when a run ends in divergent transitions: where the divergent
#: draws lie at the low end of a centred benchmark level's sd (``*_benchmark_sd (low)``, the funnel of a centred level),
#: the same model with its benchmark levels non-centred (``ModelSpec.centring``), kept only if it diverges less; then
#: NUTS again at higher target acceptances, so smaller steps through the curvature that diverged, with a longer
#: warm-up from 0.95 on (the step size adapted to the new target over more draws; a target at or below the run's own
#: is skipped).
REMEDIES: tuple[dict[str, Any], ...] = (
    {"recentre": True},
    {"target_accept": 0.9, "tune_factor": 1.0},
    {"target_accept": 0.95, "tune_factor": 2.0},
    {"target_accept": 0.99, "tune_factor": 2.0},
)


class _Sampling:
    """Runs the sampler on one built model (``run_sampler``'s arguments but the run's own settings bound)."""

    def __init__(self, model: pm.Model, start_at: Callable[[int], np.ndarray] | None, **options: Any) -> None:
        self.model, self.options = model, options
        self.run = functools.partial(run_sampler, model, start_at=start_at, **options)

    def __call__(self, **run: Any) -> xr.DataTree:
        return self.run(**run)

    def recentred(self, prefix: str, data: ResponseData, *, warm: bool) -> tuple[_Sampling, str] | None:
        """The same model with its benchmark levels non-centred (built and warm-started anew), and that ``centring``;
        None unless ``prefix``'s level is centred now (a fixed sd or no benchmark level leave nothing to move)."""
        spec: ModelSpec = self.model.irtbayes_spec
        if spec.benchmark_sd == "fixed" or spec.hierarchy == "none":
            return None
        if f"{prefix}_benchmark" not in {rv.name for rv in self.model.free_RVs}:
            return None
        model = build_model(data, spec.replace(centring="noncentred"))
        start_at = _warm_start(model, data, {"tune": 0}, tune_given=True) if warm else None
        return _Sampling(model, start_at, **self.options), "noncentred"


def _named_level(attempt: dict[str, Any]) -> str | None:
    """The hierarchy's prefix (``difficulty`` or ``log_discrimination``) whose benchmark sd the divergent draws of
    ``attempt`` name at its low end (``*_benchmark_sd (low)``: a centred level's funnel), if any."""
    for site in attempt.get("sites", []):
        for prefix in ("difficulty", "log_discrimination"):
            if str(site) == f"{prefix}_benchmark_sd (low)":
                return prefix
    return None


def _remedy(
    tree: xr.DataTree,
    sample: _Sampling,
    stop: StopRule,
    run: dict[str, Any],
    *,
    data: ResponseData,
    warm: bool,
    budget_s: float,
    started: float,
    watch: InterruptWatch,
) -> tuple[xr.DataTree, dict[str, Any], _Sampling]:
    """Sample again with the next remedy of :data:`REMEDIES` while the run ends in divergences and the budget has
    room for another run as long as the last; returns the last run's trace, settings and sampler (its model). Each
    run is recorded in ``stop.remedies`` (its target acceptance, warm-up, centring where a remedy changed it,
    outcome, divergences, draws, seconds and where its divergences sit, :mod:`irtbayes.fitting.diagnostics.divergences`)."""
    last_start = started
    attempt = _attempt(tree, stop, run, seconds=time.perf_counter() - started, spec=sample.model.irtbayes_spec)
    for remedy in REMEDIES:
        if stop.outcome != "divergences" or watch.seen:
            break
        if remedy.get("recentre"):
            prefix = _named_level(attempt)
            recentred = sample.recentred(prefix, data, warm=warm) if prefix else None
            if recentred is None:
                continue
            change: dict[str, Any] = {}
            what = f"the benchmark levels {recentred[1]}"
        elif remedy["target_accept"] <= run["target_accept"]:
            continue
        else:
            recentred = None
            change = {"target_accept": remedy["target_accept"], "tune": int(run["tune"] * remedy["tune_factor"])}
            what = f"target acceptance {change['target_accept']:g}, tune {change['tune']}"
        stop.remedies.append(attempt)
        now = time.perf_counter()
        left = budget_s - (now - started)
        if left < attempt["seconds"]:
            attempt["next"] = f"no remedy tried: {left:.0f} s of the budget left, the last run took longer"
            log.info("until converged: divergences remain; %s", attempt["next"])
            return tree, run, sample
        log.info(
            "until converged: %d divergences at target acceptance %g (%s); sampling again with %s",
            attempt["divergences"],
            attempt["target_accept"],
            sites_phrase(attempt),
            what,
        )
        before, sample = sample, (recentred[0] if recentred is not None else sample)
        run = {**run, **change}
        stop.again(left)
        last_start = time.perf_counter()
        tree = sample(**run)
        previous, attempt = (
            attempt,
            _attempt(tree, stop, run, seconds=time.perf_counter() - last_start, spec=sample.model.irtbayes_spec),
        )
        if (
            recentred is not None
            and attempt["outcome"] == "divergences"
            and attempt["divergences"] > previous["divergences"]
        ):
            sample = before  # the other coordinates did worse: the next remedies sample the model as it was
            attempt["reverted"] = True
    if stop.remedies and "next" not in stop.remedies[-1]:
        stop.remedies.append(attempt)
        if stop.outcome == "divergences":
            log.info("until converged: divergences remain after every remedy; %s", sites_phrase(attempt))
    return tree, run, sample


def _posterior_and_stats(tree: xr.DataTree) -> tuple[xr.Dataset, xr.Dataset]:
    stats = tree["sample_stats"].to_dataset() if "sample_stats" in tree.children else xr.Dataset()
    return tree["posterior"].to_dataset(), stats


def _attempt(
    tree: xr.DataTree, stop: StopRule, run: dict[str, Any], *, seconds: float, spec: ModelSpec
) -> dict[str, Any]:
    """One run of a fit with remedies, as the card records it."""
    from irtbayes.fitting.diagnostics.divergences import divergence_sites

    last = stop.history[-1] if stop.history else {}
    sites = divergence_sites(*_posterior_and_stats(tree)) if stop.outcome == "divergences" else []
    return {
        "target_accept": float(run["target_accept"]),
        "tune": int(run["tune"]),
        "centring": spec.centring,
        "outcome": stop.outcome,
        "divergences": int(last.get("divergences", 0)),
        "draws": int(last.get("draws", 0)),
        "seconds": round(seconds, 1),
        "sites": [site.label() for site in sites],
    }


def _warm_start(
    model: pm.Model, data: ResponseData, settings: dict[str, Any], *, tune_given: bool
) -> Callable[[int], np.ndarray] | None:
    """The chains' starts around the empirical-Bayes modes, recorded in ``settings``; None where they fail."""
    try:
        started = warmstart.warm_start(model, data)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
        log.warning("no warm start (%s): the chains start where PyMC starts them", err)
        settings["warm_start"] = {"skipped": str(err)}
        if not tune_given:
            settings["tune"] = warmstart.COLD_TUNE
        return None
    settings["warm_start"] = started.info
    log.info("warm start: empirical-Bayes modes in %.1f s (%d rounds)", started.info["seconds"], started.info["rounds"])
    return started.point


def _sampler_settings(model: pm.Model, data: ResponseData, spec: ModelSpec, request: SamplerSettings) -> dict[str, Any]:
    """The sampler settings recorded in ``Fit.sampler``, with the defaults resolved for ``model``."""
    n_free = _n_values(model, model.free_RVs)
    per_item = float(np.median(np.bincount(data.item_codes, minlength=data.n_items))) if data.n_items else 0.0
    draws, target_accept = _default_settings(
        spec,
        n_items=data.n_items,
        n_free=n_free,
        draws=request.draws,
        target_accept=request.target_accept,
        per_item=per_item,
    )
    sampler, chains = request.sampler, request.chains
    return {
        "name": sampler,
        "chains": chains,
        "draws": int(draws),
        "tune": request.tune,
        "seed": request.seed,
        "cores": int(request.cores or min(chains, os.cpu_count() or 1)),
        "target_accept": float(target_accept),
        "approximate": sampler in APPROXIMATE_SAMPLERS,
        "options": json_ready(dict(request.sampler_kwargs)),
    }


def _raise_if_cut_short(tree: xr.DataTree, assemble: dict[str, Any], *, seen: bool, keep_partial: bool) -> None:
    """Raise :class:`FitInterrupted` for a run interrupted or cut short, with the partial fit if asked for.

    ``assemble`` holds the keyword arguments of :func:`_assemble`. An approximate run seen interrupted
    stopped in its optimisation; an MCMC run is cut short when a chain has fewer draws than asked for.
    """
    settings = assemble["settings"]
    draws, chains = int(settings["draws"]), int(settings["chains"])
    if settings["approximate"]:
        if not seen:
            return
        n_chains, n_draws = (int(tree["posterior"].to_dataset().sizes.get(d, 0)) for d in ("chain", "draw"))
        done = {"draws_done": n_draws, "draws_requested": draws, "chains_done": n_chains}
        interrupted = {"phase": "optimisation", **done, "chains_requested": chains}
        partial = _assemble(tree, **assemble, interrupted=interrupted) if keep_partial else None
        raise FitInterrupted("optimisation", **done, chains_requested=chains, partial=partial)
    done_per_chain = completed_draws(tree["posterior"].to_dataset(), draws=draws)
    if not (seen or len(done_per_chain) < chains or int(done_per_chain.min(initial=draws)) < draws):
        return
    keep, length = choose_chains(done_per_chain)
    phase = "sampling" if length > 0 else "tuning"
    done = {"draws_done": length, "draws_requested": draws, "chains_done": len(keep)}
    partial = None
    if keep_partial and length > 0:
        kept = complete_part(tree, length, keep)
        partial = _assemble(kept, **assemble, interrupted={"phase": phase, **done, "chains_requested": chains})
    raise FitInterrupted(phase, **done, chains_requested=chains, partial=partial)


def _assemble(
    tree: xr.DataTree,
    *,
    data: ResponseData,
    spec: ModelSpec,
    settings: dict[str, Any],
    rhat_max: float,
    ess_min: float,
    interrupted: dict[str, Any] | None = None,
    checked: Diagnostics | None = None,
) -> Fit:
    """The :class:`Fit` of a sampler's trace: clean posterior, counts, diagnostics, card information.

    With ``interrupted`` (phase and draws done) the fit is marked partial and its diagnostics fail.
    ``checked``: the diagnostics of a check already made on exactly these draws, as :func:`_kept_draws` keeps
    them (the passing check of a run until converged), which are not computed again.
    """
    kept = _kept_draws(tree, spec, approximate=settings["approximate"])
    idata = xr.DataTree.from_dict(
        {**{k: kept[k].to_dataset() for k in kept.children}, "constant_data": fit_constant_data(data)}
    )
    idata.attrs.update(
        {
            "irtbayes_version": installed_version(),
            "sampler": settings["name"],
            "approximate": int(settings["approximate"]),
            "data_checksum": data.checksum(),
        }
    )
    info: dict[str, Any] = {
        **data_info(data),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "package_versions": software_versions(),
    }
    check = {
        "rhat_max": rhat_max,
        "ess_min": ess_min,
        "approximate": settings["approximate"],
        "standardised": spec.identification == "standardise",
    }
    if checked is None or interrupted is not None:
        checked = check_convergence(idata, **check)
    diagnostics = checked
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
