"""The PyMC model of the condition effects: the hierarchical IRT model described in the notes of
:mod:`~irtbayes.robustness.conditions` (the module notes the docstrings here refer to), built but not sampled.

:func:`~irtbayes.robustness.conditions.fit_conditions` samples the model :func:`build_condition_model` builds;
:data:`EFFECT_PRIORS`, :data:`UNPERTURBED`, :data:`SLAB_SCALE` and :data:`SLAB_DF` are its settings, imported from
here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.responses import ResponseData

__all__ = ["EFFECT_PRIORS", "SLAB_DF", "SLAB_SCALE", "UNPERTURBED", "build_condition_model"]

#: Priors of the item and subject deviations: ``"horseshoe"`` (sparse; default) or ``"normal"``.
EFFECT_PRIORS = ("horseshoe", "normal")
#: The condition HELM's reader gives unperturbed instances; preferred as the reference when present.
UNPERTURBED = "original"


def _reference(data: ResponseData, reference: str | None) -> tuple[str, list[str]]:
    conditions = [str(c) for c in data.conditions]
    if len(conditions) < 2:
        raise DataError(
            f"{data.source}: condition effects need responses under at least two conditions "
            f"(a 'condition' column); found {conditions or 'none'}"
        )
    if reference is None:
        reference = UNPERTURBED if UNPERTURBED in conditions else conditions[0]
    if reference not in conditions:
        raise SpecError(f"unknown reference condition {reference!r}; the conditions are {conditions}")
    return reference, [c for c in conditions if c != reference]


def build_condition_model(
    data: ResponseData, *, reference: str | None = None, kind: str = "2pl", effects: str = "horseshoe"
) -> pm.Model:
    """The hierarchical condition-effects model (see the module notes) for ``data``, not yet sampled.

    Parameters
    ----------
    data
        Responses with a ``condition`` column holding at least two conditions.
    reference
        The reference condition (effects 0); default ``"original"`` when present, else the first.
    kind
        ``"2pl"`` (default) or ``"1pl"``.
    effects
        Prior of the deviations: ``"horseshoe"`` (default; each deviation gets its own half-Cauchy scale
        times the condition's scale, so a few large effects stand out while the many null ones shrink to 0)
        or ``"normal"``.

    Returns
    -------
    pymc.Model
        Coords ``subject``, ``item``, ``condition`` (the non-reference conditions); deterministic
        ``item_effect`` (condition, item), ``ability_shift`` (condition, subject), ``ability`` (subject),
        ``difficulty`` and ``discrimination`` (item). ``model.irtbayes_reference`` names the reference.

    Examples
    --------
    >>> from irtbayes.robustness.condition_model import build_condition_model
    >>> from irtbayes.robustness.simulation import simulate_condition_responses
    >>> data, _, _ = simulate_condition_responses(20, 30, n_sensitive_items=3, n_sensitive_subjects=2, seed=1)
    >>> model = build_condition_model(data, reference="original")
    >>> sorted(model.coords)
    ['condition', 'item', 'subject']
    """
    if kind not in ("1pl", "2pl"):
        raise SpecError(f"kind must be '1pl' or '2pl', got {kind!r}")
    if effects not in EFFECT_PRIORS:
        raise SpecError(f"effects must be one of {list(EFFECT_PRIORS)}, got {effects!r}")
    reference, others = _reference(data, reference)
    frame = data.responses
    subj = frame["subject"].cat.codes.to_numpy()
    item = frame["item"].cat.codes.to_numpy()
    order = {c: k for k, c in enumerate([reference, *others])}
    cond = frame["condition"].astype(str).map(order).to_numpy().astype("int64")
    y = frame["response"].to_numpy(dtype="float64")
    n_subjects, n_items = data.n_subjects, data.n_items
    cell = (cond * n_subjects + subj) * n_items + item
    coords = {
        "subject": data.subject_ids.to_numpy(dtype=str),
        "item": data.item_ids.to_numpy(dtype=str),
        "condition": np.array(others, dtype=str),
    }
    with pm.Model(coords=coords) as model:
        ability = pm.ZeroSumNormal("ability", sigma=1.0, dims="subject")
        difficulty_mu = pm.Normal("difficulty_mu", 0.0, 2.0)
        difficulty_sd = pm.HalfNormal("difficulty_sd", 1.5)
        difficulty_z = pm.Normal("difficulty_z", 0.0, 1.0, dims="item")
        difficulty = pm.Deterministic("difficulty", difficulty_mu + difficulty_sd * difficulty_z, dims="item")
        if kind == "2pl":
            log_a_sd = pm.HalfNormal("log_discrimination_sd", 0.5)
            log_a_z = pm.Normal("log_discrimination_z", 0.0, 1.0, dims="item")
            discrimination = pm.Deterministic("discrimination", pt.exp(log_a_sd * log_a_z), dims="item")
        else:
            discrimination = pt.ones(len(coords["item"]))
        shift = pm.Normal("shift", 0.0, 1.0, dims="condition")
        item_effect_sd = pm.HalfNormal("item_effect_sd", 0.5, dims="condition")
        item_effect_z = pm.Normal("item_effect_z", 0.0, 1.0, dims=("condition", "item"))
        ability_shift_sd = pm.HalfNormal("ability_shift_sd", 0.5, dims="condition")
        ability_shift_u = pm.ZeroSumNormal("ability_shift_u", sigma=1.0, dims=("condition", "subject"))
        if effects == "horseshoe":
            item_local = _local_scales("item_effect", item_effect_sd[:, None], ("condition", "item"))
            subject_local = _local_scales("ability_shift", ability_shift_sd[:, None], ("condition", "subject"))
            item_dev = item_effect_sd[:, None] * item_local * item_effect_z
            raw = ability_shift_sd[:, None] * subject_local * ability_shift_u
            subject_dev = raw - raw.mean(axis=1, keepdims=True)  # local scales undo the zero sum: restore it
        else:
            item_dev = item_effect_sd[:, None] * item_effect_z
            subject_dev = ability_shift_sd[:, None] * ability_shift_u
        item_effect = pm.Deterministic("item_effect", shift[:, None] + item_dev, dims=("condition", "item"))
        ability_shift = pm.Deterministic("ability_shift", subject_dev, dims=("condition", "subject"))
        gamma = pt.concatenate([pt.zeros((1, len(coords["item"]))), item_effect], axis=0)
        delta = pt.concatenate([pt.zeros((1, len(coords["subject"]))), ability_shift], axis=0)
        # dense (condition, subject, item) predictor, then the observed cells: one gather compiles fast
        eta_all = discrimination[None, None, :] * (
            (ability[None, :] + delta)[:, :, None] - difficulty[None, None, :] - gamma[:, None, :]
        )
        eta = eta_all.reshape((-1,))[cell]
        if data.response_kind == "counts":  # k successes of n trials
            pm.Binomial("response", n=data.trials, logit_p=eta, observed=data.successes.astype("int64"))
        elif np.all((y == 0) | (y == 1)):
            pm.Bernoulli("response", logit_p=eta, observed=y.astype("int64"))
        else:  # fractional-logit quasi-likelihood for scores in [0, 1]
            pm.Potential("response", pt.sum(y * pt.log(pt.sigmoid(eta)) + (1 - y) * pt.log(pt.sigmoid(-eta))))
    model.irtbayes_reference = reference
    return model


#: Regularised horseshoe (Piironen and Vehtari 2017): the slab's scale and degrees of freedom. An effect far
#: beyond the global scale is shrunk as by a Normal(0, slab) prior rather than left free, which bounds the
#: posterior's tails where the data say little (two systems per prompt) and so removes the divergences the
#: plain horseshoe gave there.
SLAB_SCALE = 2.0
SLAB_DF = 4.0


def _local_scales(prefix: str, global_sd: Any, dims: tuple[str, str]) -> Any:
    """Regularised horseshoe local scales, ``c lambda / sqrt(c^2 + tau^2 lambda^2)`` with ``lambda ~ HalfCauchy(1)``.

    ``lambda`` is sampled as a half-normal over the square root of a Gamma(1/2, 1/2) variable (its exact
    half-Cauchy law), which NUTS follows far better than the Cauchy's own coordinates; ``c^2`` (one per
    condition) has the inverse-gamma slab prior of :data:`SLAB_SCALE` and :data:`SLAB_DF`.
    """
    numerator = pm.HalfNormal(f"{prefix}_local", 1.0, dims=dims)
    mixing = pm.Gamma(f"{prefix}_local_mixing", 0.5, 0.5, dims=dims)
    lam = numerator / pt.sqrt(mixing)
    slab2 = pm.InverseGamma(f"{prefix}_slab_local", SLAB_DF / 2, SLAB_DF * SLAB_SCALE**2 / 2, dims=dims[0])[:, None]
    return pt.sqrt(slab2 * lam**2 / (slab2 + global_sd**2 * lam**2))
