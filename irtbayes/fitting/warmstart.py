"""Warm start for NUTS: each chain begins at a draw around the empirical-Bayes modes.

By default PyMC starts every chain at the centre of the prior with a uniform jitter of +-1 on each
unconstrained coordinate; with thousands of abilities and items the sampler then spends the first part of its
warm-up travelling to the posterior and adapting its step size and mass matrix on the way. A warm start
begins where the posterior is: the first stage of the approximate tier (:func:`irtbayes.fitting.approx.empirical_bayes`:
alternating Newton steps, seconds even for leaderboard-sized matrices) gives every ability, difficulty and
log-discrimination a mode and a Laplace variance, and each chain starts at its own draw from that normal
approximation (the hierarchy's means and sds set from the drawn items, :func:`irtbayes.model.build.start_values`).
The chains are dispersed on the scale of the posterior, as r-hat needs, and :func:`irtbayes.fitting.fit.fit` needs a
shorter warm-up (:data:`WARM_TUNE`).

A 3PL starts from the 2PL's modes moved to the curve with a lower asymptote: each item's guessing at a draw
around its prior mean (the chance level, 1 / ``n_options``; at that level where it is fixed there), and its
difficulty and discrimination those of the 3PL curve that crosses 1/2 where the 2PL's does, with the same slope
there (:func:`floored`).

Supported: 1PL, 2PL and 3PL models with one ability dimension (standardised abilities or the N(0, 1) prior).
Others (abilities by domain, graded models) start as PyMC starts them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import clone_replace

from irtbayes.data.responses import ResponseData
from irtbayes.fitting.approx import Modes, empirical_bayes
from irtbayes.model.build import chance_floor, guessing_prior_mean, start_values
from irtbayes.model.inputs import ModelInputs
from irtbayes.model.spec import ModelSpec

__all__ = ["COLD_TUNE", "WARM_TUNE", "WarmStart", "floored", "supports", "warm_start"]

#: Warm-up draws per chain of a warm-started nutpie fit, and of one that starts where PyMC starts it.
WARM_TUNE = 200
COLD_TUNE = 500


@dataclass(frozen=True)
class WarmStart:
    """Where each chain starts: ``point(seed)`` is a flat vector of the model's unconstrained free variables,
    in PyMC's order (nutpie's ``initial_point_func``); ``info`` is recorded on the fit's card."""

    point: Callable[[int], np.ndarray]
    info: dict[str, Any]


def supports(spec: ModelSpec) -> bool:
    """Whether :func:`warm_start` can start a model of ``spec`` (1PL, 2PL or 3PL, one ability dimension)."""
    return spec.kind in ("1pl", "2pl", "3pl") and spec.dims == "one"


def warm_start(model: pm.Model, data: ResponseData) -> WarmStart:
    """Starting points around the empirical-Bayes modes for a model built by :func:`irtbayes.model.build.build_model`.

    Each call of ``point(seed)`` draws the abilities, difficulties and log-discriminations from their Laplace
    approximations (independent normals; an item's difficulty and log-discrimination jointly), standardises
    the abilities, and maps them to the model's free variables.

    Examples
    --------
    >>> from irtbayes.model.build import build_model
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, truth = simulate_responses(40, 60, seed=1)
    >>> model = build_model(data)
    >>> start = warm_start(model, data)
    >>> start.point(1).shape == (sum(model.initial_point()[v.name].size for v in model.value_vars),)
    True
    >>> bool(np.isfinite(start.point(1)).all()), bool((start.point(1) != start.point(2)).all())  # one per chain
    (True, True)
    """
    inputs = model.irtbayes_inputs
    floor = inputs.spec.kind == "3pl"
    own = replace(inputs, spec=replace(inputs.spec, kind="2pl")) if floor else inputs  # a floor's modes: the 2PL's
    modes = empirical_bayes(data, own.spec, inputs=own)
    arrays = (modes.ability, modes.ability_var, modes.difficulty, modes.log_discrimination, modes.item_cov)
    if not all(np.isfinite(a).all() for a in arrays):
        raise FloatingPointError("the empirical-Bayes modes are not finite")
    to_vector = _unconstrained(model)
    twopl = inputs.spec.kind != "1pl"
    difficulty, log_discrimination, chol, clipped = _bounded(modes, inputs)
    fixed = inputs.spec.guessing == "chance"
    chance = (chance_floor(inputs) if fixed else guessing_prior_mean(inputs)) if floor else None
    ability_sd = np.sqrt(np.maximum(modes.ability_var, 0.0))
    lock = threading.Lock()

    def point(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        theta = modes.ability + rng.standard_normal(len(modes.ability)) * ability_sd
        n_items = len(modes.difficulty)
        if twopl:
            noise = np.einsum("ijk,ik->ij", chol, rng.standard_normal((n_items, 2)))
            b, alpha = difficulty + noise[:, 0], log_discrimination + noise[:, 1]
        else:
            b = difficulty + rng.standard_normal(n_items) * chol[:, 0, 0]
            alpha = log_discrimination + rng.standard_normal() * chol[0, 1, 1]
        c = None
        if chance is not None:
            c = 1.0 / (
                1.0 + np.exp(-(np.log(chance / (1.0 - chance)) + GUESSING_START_SD * rng.standard_normal(n_items)))
            )
            c = np.minimum(c, GUESSING_START_MAX)
            b, alpha = floored(b, alpha, c)
        values = start_values(inputs, ability=theta, difficulty=b, log_discrimination=alpha, guessing=c)
        with lock:  # nutpie starts chains from several threads
            return to_vector(values)

    info = {
        "from": "empirical-Bayes modes (irtbayes.fitting.approx), each chain at a draw from their Laplace approximation",
        "rounds": modes.rounds,
        "modes_converged": modes.converged,
        "items_bounded": clipped,
        "seconds": round(modes.seconds, 3),
    }
    return WarmStart(point=point, info=info)


#: The sd, on the log-odds scale, of a 3PL start's guessing around its prior mean, and the largest guessing a
#: start takes (:func:`floored` needs a floor below 1/2).
GUESSING_START_SD = 0.25
GUESSING_START_MAX = 0.45


def floored(
    difficulty: np.ndarray, log_discrimination: np.ndarray, guessing: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The difficulty and log-discrimination of the 3PL curve ``c + (1 - c) sigmoid(a (theta - b))`` that
    crosses 1/2 where the 2PL curve ``sigmoid(a2 (theta - b2))`` does, with the same slope there.

    At that point the 3PL's sigmoid is ``s = (1/2 - c) / (1 - c)``, so ``b = b2 - logit(s) / a`` and
    ``a = a2 / (4 (1 - c) s (1 - s))``; ``c`` must be below 1/2.

    Examples
    --------
    >>> b, la = floored(np.array([0.0]), np.array([0.0]), np.array([0.25]))
    >>> float(np.exp(la[0])), round(float(b[0]), 4)  # s = 1/3: a = 1.5 a2, b = b2 + log(2) / a
    (1.5, 0.4621)
    >>> floored(np.array([0.3]), np.array([0.2]), np.array([0.0]))  # no floor: the 2PL's curve
    (array([0.3]), array([0.2]))
    """
    s = (0.5 - guessing) / (1.0 - guessing)
    log_a = log_discrimination - np.log(4.0 * (1.0 - guessing) * s * (1.0 - s))
    return difficulty - np.log(s / (1.0 - s)) / np.exp(log_a), log_a


#: Bounds of a start's difficulties (logits on the standardised ability scale) and log-discriminations. An item
#: answered alike by every subject, or unrelated to ability, can drift along a ridge of its likelihood while the
#: modes are found (toward a -> 0 and |b| -> infinity, with a * b fixed, on simulated 60 x 90 data in 7
#: benchmarks three items reached b = -66,000); an item whose mode is out of bounds starts elsewhere.
START_DIFFICULTY_BOUND = 8.0
START_LOG_DISCRIMINATION_BOUNDS = (-3.0, 2.5)
#: The sds of such an item's start (difficulty, log-discrimination): its Laplace variances mean nothing there.
BOUNDED_SD = (0.5, 0.3)


def _bounded(modes: Modes, inputs: ModelInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The items' modes where they lie within the bounds of a start; elsewhere the difficulty that the item's
    share of correct answers gives at the typical discrimination (``-logit(p) / a``, p shrunk by half an answer
    toward 1/2) and the median log-discrimination of the other items. Also the Cholesky factors of their
    Laplace covariances (:data:`BOUNDED_SD` for the items moved), and the number of items moved."""
    low, high = START_LOG_DISCRIMINATION_BOUNDS
    alpha = modes.log_discrimination
    out = (np.abs(modes.difficulty) > START_DIFFICULTY_BOUND) | (alpha < low) | (alpha > high)
    b, alpha = modes.difficulty.copy(), alpha.copy()
    chol = _cholesky_2x2(modes.item_cov)
    if out.any():
        n_items = len(b)
        correct = np.bincount(inputs.item_code, weights=inputs.response, minlength=n_items)
        answers = np.bincount(inputs.item_code, minlength=n_items)
        p = (correct + 0.5) / (answers + 1.0)
        typical = float(np.median(alpha[~out])) if (~out).any() else 0.0
        b[out] = -np.log(p[out] / (1.0 - p[out])) / np.exp(typical)
        alpha[out] = typical
        chol[out] = np.diag(BOUNDED_SD)
    return b, alpha, chol, int(out.sum())


def _cholesky_2x2(cov: np.ndarray) -> np.ndarray:
    """Lower Cholesky factors of (n, 2, 2) covariances; where one is not positive definite (a Newton step on
    a posterior that is not concave there), the factor of its diagonal, each variance at least 1e-12."""
    c00 = np.maximum(cov[:, 0, 0], 1e-12)
    l00 = np.sqrt(c00)
    l10 = cov[:, 1, 0] / l00
    rest = cov[:, 1, 1] - l10**2
    definite = (cov[:, 0, 0] > 0) & (rest > 1e-12)
    out = np.zeros_like(cov)
    out[:, 0, 0] = l00
    out[:, 1, 0] = np.where(definite, l10, 0.0)
    out[:, 1, 1] = np.where(
        definite, np.sqrt(np.maximum(rest, 1e-12)), np.sqrt(np.maximum(np.abs(cov[:, 1, 1]), 1e-12))
    )
    return out


def _unconstrained(model: pm.Model) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """A function from the free variables' values (by name) to the flat vector of their unconstrained values."""
    placeholders = {rv: rv.type(name=rv.name) for rv in model.free_RVs}
    parts = []
    for rv, x in placeholders.items():
        transform = model.rvs_to_transforms.get(rv)
        parts.append((x if transform is None else transform.forward(x, *rv.owner.inputs)).ravel())
    flat = clone_replace(pt.concatenate(parts), replace=placeholders)
    fn = pytensor.function(list(placeholders.values()), flat, mode="FAST_COMPILE", on_unused_input="ignore")
    dtypes = [(rv.name, rv.dtype) for rv in model.free_RVs]

    def to_vector(values: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(fn(*(np.asarray(values[name], dtype=dtype) for name, dtype in dtypes)), dtype="float64")

    return to_vector
