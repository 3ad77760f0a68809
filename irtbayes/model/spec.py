"""What model to fit: :class:`ModelSpec` and its :class:`Priors`, with the names of the choices.

This module imports neither PyMC nor the data: later stages that need only a constant (:data:`UNLABELLED`)
or a spec's fields read them here. :mod:`irtbayes.model.build` builds the PyMC model a spec describes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from irtbayes.core.errors import SpecError, refuse_unknown

__all__ = [
    "DIMS",
    "FIXED_SD_MAX_BENCHMARKS",
    "GRADED_KINDS",
    "HIERARCHIES",
    "IDENTIFICATIONS",
    "KINDS",
    "LAYOUTS",
    "NO_FLOOR",
    "SMALL_BANK_ITEMS",
    "UNLABELLED",
    "ModelSpec",
    "Priors",
]


KINDS = ("1pl", "2pl", "3pl", "grm", "gpcm")
#: Models of graded (ordinal) responses: Samejima's graded response model and Muraki's generalised partial credit.
GRADED_KINDS = ("grm", "gpcm")
HIERARCHIES = ("auto", "none", "benchmark", "benchmark+domain")
DIMS = ("one", "domain")
IDENTIFICATIONS = ("standardise", "prior")
LAYOUTS = ("auto", "fused", "dense", "long")
UNLABELLED = "(unlabelled)"
#: One group of fewer items than this gets a fixed spread of log-discriminations (``discrimination_sd="auto"``).
SMALL_BANK_ITEMS = 100
#: A benchmark level of at most this many benchmarks gets a fixed sd (``benchmark_sd="auto"``): the sd of two or three
#: means is not identified by the data, and where it is sampled its posterior runs from near 0 to the prior's tail, a
#: funnel for the centred level at one end and for the non-centred one at the other (docs/model.md).
FIXED_SD_MAX_BENCHMARKS = 3


@dataclass(frozen=True)
class Priors:
    """Weakly-informative priors, on the ability scale (abilities have mean 0 and sd 1).

    Attributes
    ----------
    difficulty_mu_sd
        ``difficulty_mu ~ Normal(0, difficulty_mu_sd)``: the mean item difficulty.
    difficulty_sd_scale
        ``difficulty_sd ~ HalfNormal(difficulty_sd_scale)``: spread of items around their benchmark.
    difficulty_group_sd_scale
        ``difficulty_benchmark_sd``, ``difficulty_domain_sd ~ HalfNormal(difficulty_group_sd_scale)``.
    log_discrimination_mu_mean, log_discrimination_mu_sd
        ``log_discrimination_mu ~ Normal(mean, sd)``: the typical discrimination is about exp(mean) = 1.
    log_discrimination_sd_scale
        ``log_discrimination_sd ~ HalfNormal(.)``: spread of item log-discriminations (with
        ``ModelSpec.discrimination_sd="fixed"``, the spread itself).
    log_discrimination_group_sd_scale
        Spread of benchmark and domain mean log-discriminations.
    guessing_mean, guessing_concentration
        3PL: ``guessing ~ Beta(mean * concentration, (1 - mean) * concentration)``.
    guessing_chance
        3PL: centre the guessing prior on chance, 1 / ``n_options``, for items whose metadata gives it.
    ability_corr_eta
        ``dims="domain"``: LKJ concentration of the correlation between ability dimensions.
    step_mu_mean, step_mu_sd, step_sd_scale, step_group_sd_scale
        Graded models: the gaps between an item's consecutive thresholds, on the log scale for the GRM
        (``log_step``; its thresholds are ordered) and as they are for the GPCM (``step``; may be negative).
        Each gap ~ Normal(its item's location, ``*_sd``), ``*_sd ~ HalfNormal(step_sd_scale)``; the
        locations pooled within benchmark and domain like the difficulties (``*_mu ~ Normal(step_mu_mean,
        step_mu_sd)``, group sds ``HalfNormal(step_group_sd_scale)``). The defaults put a typical gap near 1
        on the ability scale (log gap 0 for the GRM; the GPCM's prior mean is ``exp(step_mu_mean)`` too).

    Examples
    --------
    >>> priors = Priors(difficulty_sd_scale=1.0)
    >>> Priors.from_dict(priors.to_dict()) == priors
    True
    >>> Priors(guessing_mean=1.5)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: Priors.guessing_mean must be in (0, 1), got 1.5
    """

    difficulty_mu_sd: float = 2.0
    difficulty_sd_scale: float = 2.0
    difficulty_group_sd_scale: float = 1.0
    log_discrimination_mu_mean: float = 0.0
    log_discrimination_mu_sd: float = 0.5
    log_discrimination_sd_scale: float = 0.5
    log_discrimination_group_sd_scale: float = 0.25
    guessing_mean: float = 0.15
    guessing_concentration: float = 20.0
    guessing_chance: bool = True
    ability_corr_eta: float = 2.0
    step_mu_mean: float = 0.0
    step_mu_sd: float = 1.0
    step_sd_scale: float = 0.5
    step_group_sd_scale: float = 0.25

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "guessing_chance":
                if not isinstance(value, bool):
                    raise SpecError(f"Priors.guessing_chance must be true or false, got {value!r}")
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not np.isfinite(value):
                raise SpecError(f"Priors.{f.name} must be a finite number, got {value!r}")
            if f.name not in ("log_discrimination_mu_mean", "step_mu_mean") and value <= 0:
                raise SpecError(f"Priors.{f.name} must be positive, got {value!r}")
        if not 0 < self.guessing_mean < 1:
            raise SpecError(f"Priors.guessing_mean must be in (0, 1), got {self.guessing_mean}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Priors:
        refuse_unknown(cls.__name__, [f.name for f in dataclasses.fields(cls)], values, noun="prior setting")
        return cls(**values)


#: The floor of an item without options under ``ModelSpec(guessing="chance")``: 0 in effect (a floor that the
#: 3PL's log-likelihood, which takes log c, can hold).
NO_FLOOR = 1e-12


@dataclass(frozen=True)
class ModelSpec:
    """What model to fit. JSON round trip: :meth:`to_dict` / :meth:`from_dict`.

    Attributes
    ----------
    kind
        ``"1pl"``, ``"2pl"`` or ``"3pl"`` for binary (or fractional) responses; ``"grm"`` (graded response)
        or ``"gpcm"`` (generalised partial credit) for ordinal responses, where binary items are the
        two-category case (the 2PL).
    hierarchy
        ``"auto"`` (deepest the labels allow), ``"none"``, ``"benchmark"`` or ``"benchmark+domain"``.
    dims
        ``"one"`` ability per subject, or ``"domain"``: one per domain with an LKJ correlation.
    identification
        ``"standardise"`` (abilities standardised in every draw; default) or ``"prior"`` (N(0, 1) prior).
    layout
        Likelihood layout: ``"auto"``, ``"dense"`` (subject x item matrix) or ``"long"`` (one row per response).
    fractional
        ``"quasi"``: fractional-logit quasi-likelihood for scores in [0, 1]; ``"error"``: refuse them.
    centring
        Benchmark level of the hierarchy: ``"auto"`` (with at least 4 benchmarks, difficulties centred when every
        benchmark has at least 30 items and their mean difficulties lie at least two standard errors apart,
        log-discriminations when every benchmark has at least 100 items; otherwise non-centred), ``"centred"`` or
        ``"noncentred"``.
    item_centring
        Item level: ``"auto"`` (difficulties centred when the median item has at least 20 responses,
        discriminations non-centred), ``"centred"`` or ``"noncentred"``.
    precision
        Working precision of the likelihood's cells: ``"auto"`` (float32 in the fused layout, float64 in the
        others), ``"float64"`` or ``"float32"``. The fused layout in float32 computes each cell in single
        precision and every sum in double (faster per gradient, measured on
        docs/performance.md#single-precision-cells-2026-12-04-later; the log-likelihood within 1e-7 of its value);
        the dense one in float32 sums each row in single precision (no faster with nutpie; faster with the JAX
        sampler on a CPU, measured on docs/performance.md#numpyro-on-a-cpu); the long layout ignores it.
    discrimination_sd
        Spread of item log-discriminations around their mean: ``"sampled"`` (``log_discrimination_sd``
        with a half-normal prior), ``"fixed"`` (at ``priors.log_discrimination_sd_scale``), or ``"auto"``:
        fixed for one group of fewer than :data:`SMALL_BANK_ITEMS` items, else sampled.
    benchmark_sd
        Spread of the benchmarks' means around their parent (difficulties and log-discriminations alike):
        ``"sampled"`` (``*_benchmark_sd`` with a half-normal prior), ``"fixed"`` (at the prior's group scale,
        ``priors.difficulty_group_sd_scale`` and ``priors.log_discrimination_group_sd_scale``; the level is then
        centred), or ``"auto"``: fixed with 2 or 3 benchmarks (and no domain level), where the sd of so few means
        is not identified by the data, sampled otherwise.
    guessing
        The 3PL's lower asymptotes: ``"pooled"`` (each item's ``guessing`` sampled from a Beta prior around its
        chance level, ``Priors.guessing_*``) or ``"chance"`` (fixed at the chance level of its options,
        1 / ``n_options``, and at 0 for items without options: open answers cannot be guessed). ``"chance"``
        adds no parameter to the 2PL, so it samples as fast; ``"pooled"`` lets the data move each floor.
    group_sd
        How the sampler moves the sd of a non-centred benchmark or domain level (the model is the same either
        way): ``"signed"`` (default; a signed scale whose absolute value is the sd, which passes through an sd
        near 0, for levels of at least 4 groups, the log for 2 or 3) or ``"log"`` (the sd's logarithm, PyMC's
        transform of a half-normal, for every level).
    priors
        :class:`Priors`.

    Examples
    --------
    >>> spec = ModelSpec(kind="1pl", hierarchy="benchmark")
    >>> ModelSpec.from_dict(json.loads(spec.to_json())) == spec
    True
    >>> spec.replace(kind="2pl").kind, spec.priors.difficulty_mu_sd
    ('2pl', 2.0)
    >>> ModelSpec(kind="4pl")
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: ModelSpec.kind must be one of ['1pl', '2pl', '3pl', 'grm', 'gpcm'], got '4pl'
    """

    kind: str = "2pl"
    hierarchy: str = "auto"
    dims: str = "one"
    identification: str = "standardise"
    layout: str = "auto"
    fractional: str = "quasi"
    centring: str = "auto"
    item_centring: str = "auto"
    precision: str = "auto"
    discrimination_sd: str = "auto"
    benchmark_sd: str = "auto"
    guessing: str = "pooled"
    group_sd: str = "signed"
    priors: Priors = field(default_factory=Priors)

    def __post_init__(self) -> None:
        checks = {
            "kind": KINDS,
            "hierarchy": HIERARCHIES,
            "dims": DIMS,
            "identification": IDENTIFICATIONS,
            "layout": LAYOUTS,
            "fractional": ("quasi", "error"),
            "centring": ("auto", "centred", "noncentred"),
            "item_centring": ("auto", "centred", "noncentred"),
            "precision": ("auto", "float64", "float32"),
            "discrimination_sd": ("auto", "sampled", "fixed"),
            "benchmark_sd": ("auto", "sampled", "fixed"),
            "guessing": ("pooled", "chance"),
            "group_sd": ("signed", "log"),
        }
        for name, allowed in checks.items():
            value = getattr(self, name)
            if value not in allowed:
                raise SpecError(f"ModelSpec.{name} must be one of {list(allowed)}, got {value!r}")
        if not isinstance(self.priors, Priors):
            raise SpecError(f"ModelSpec.priors must be a Priors, got {type(self.priors).__name__}")

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["priors"] = self.priors.to_dict()
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ModelSpec:
        if not isinstance(values, dict):
            raise SpecError(f"a model spec must be a mapping, got {type(values).__name__}")
        refuse_unknown(cls.__name__, [f.name for f in dataclasses.fields(cls)], values, noun="model spec key")
        values = dict(values)
        if "priors" in values and not isinstance(values["priors"], Priors):
            values["priors"] = Priors.from_dict(values["priors"] or {})
        return cls(**values)

    def replace(self, **changes: Any) -> ModelSpec:
        return dataclasses.replace(self, **changes)
