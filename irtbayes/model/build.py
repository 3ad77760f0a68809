"""Hierarchical Bayesian IRT models: ``build_model(data, spec) -> pm.Model``.

Models
------
For subject j and item i, with ability theta_j, difficulty b_i and discrimination a_i > 0:

- ``"2pl"``: logit P(correct) = a_i (theta_j - b_i);
- ``"1pl"`` (Rasch): one discrimination shared by every item (``discrimination`` still has dim ``item``);
- ``"3pl"``: P = c_i + (1 - c_i) sigmoid(a_i (theta_j - b_i)) with a lower asymptote (``guessing``) c_i.

The slope-intercept form of mirt, d_i = -a_i b_i, is ``intercept``; it is computed after sampling (it
costs nothing there, while a Deterministic would be stored for every draw), see :func:`add_derived`.

Identification
--------------
Abilities define the scale. With ``identification="standardise"`` (the default) the model samples
unconstrained standard-normal ``ability_z`` and sets, in every draw, ``ability = (z - mean(z)) / sd(z)``
(sd over subjects, ddof 0, per dimension). So the evaluated subjects have mean ability 0 and sd 1
*exactly*, in every draw and every chain; difficulties and discriminations have no location/scale ridge
left with the abilities (the main sampling problem of IRT models), and discriminations are positive
(log-normal), so no reflection or label switching can occur between chains. The implied prior on the
abilities is uniform on the sphere {sum theta = 0, sum theta^2 = n}: for many subjects this is mirt's
N(0, 1) population; for a handful of subjects the scale is "the evaluated subjects", which is what an
audit of benchmarks compares against. The mean and sd of ``z`` are held near 0 and 1 by a factor that
does not change the model (see :func:`_pin_scale`). ``identification="prior"`` instead gives abilities
an N(0, 1) population prior (soft identification, as mirt does); it samples more slowly because of the
ridge. ``"standardise"`` needs at least 3 subjects.

Multi-dimensional abilities (``dims="domain"``): one dimension per domain, with an LKJ correlation
(``ability_corr``); each item loads on its own domain's dimension only, so dimensions are labelled by
domains and cannot rotate or switch. Each dimension is standardised as above.

Hierarchy and parameterisation
------------------------------
``hierarchy="benchmark+domain"``: ``difficulty ~ Normal(difficulty_benchmark[k(i)], difficulty_sd)``,
``difficulty_benchmark ~ Normal(difficulty_domain[d(k)], difficulty_benchmark_sd)``,
``difficulty_domain ~ Normal(difficulty_mu, difficulty_domain_sd)``; log-discriminations likewise
(``log_discrimination_*``; ``discrimination = exp(.)``). ``"benchmark"`` drops the domain level,
``"none"`` pools every item around ``difficulty_mu``. The default (``"auto"``) is the deepest level the
labels allow: benchmark labels (missing ones put in a group ``"(unlabelled)"``) and, above them, domain
labels when there are at least three domains (with two, the spread between domains is not identified by
the data and only slows sampling; ask for ``"benchmark+domain"`` explicitly to have it anyway).

Small banks. With one group of items (hierarchy ``"none"``: one benchmark, or none labelled) of fewer than
:data:`SMALL_BANK_ITEMS` items, the default (``discrimination_sd="auto"``) fixes the spread of item
log-discriminations at ``Priors.log_discrimination_sd_scale`` (0.5: a discrimination within a factor of e
of the bank's typical one with 95% probability) and draws log-discriminations centred around the sampled
``log_discrimination_mu``; a few items pin a sampled hyper-sd poorly, while with 100 items or more its
relative posterior sd is about 1 / sqrt(2 n), under 7%. ``discrimination_sd="sampled"`` keeps the
hyper-sd. Difficulties keep their sampled ``difficulty_sd`` (the audit's deconvolved locations need it),
and :func:`irtbayes.fitting.fit.fit` draws more per chain for such banks.

Centred or non-centred is chosen per level from the data (``centring`` and ``item_centring`` override):
a level is centred when the data pin each group's value more tightly than the hierarchy does, otherwise
non-centred (which removes the funnel between a group sd and its members). Domain level: non-centred.
Benchmark level: with at least 4 benchmarks, difficulties centred when every benchmark has at least 30 items and
the benchmarks' mean difficulties lie at least two standard errors apart (:func:`_benchmark_spread`),
log-discriminations when every benchmark has at least 100 items; with 2 or 3 benchmarks, or benchmarks of alike
difficulty, non-centred (their sd is then barely fixed by the data, and its posterior reaches near 0, where a
centred level is a funnel). Item level: difficulties centred when the
median item has at least 20 responses; discriminations (weakly informed by each item's responses) non-centred.

Non-centred levels: one centre and zero-sum effects. A non-centred level writes each group's mean as its
parent plus ``sd * e``; with a handful of groups the mean of the ``e`` is barely fixed by the data, so
``*_mu`` and the group sd trade against it along a ridge that narrows into a funnel where the sd is large.
The same model is therefore sampled in other coordinates: the effects of a level of K groups are split
into their mean, ``*_{level}_mean_z / sqrt(K)``, and the rest, zero-sum normal ``*_{level}_z``
(``pm.ZeroSumNormal``'s density and coordinates, written out: :func:`_zero_sum_normal`); the data see only
``*_centre`` (the mean that the groups' values sit around) plus ``sd`` times the zero-sum effects, and
``*_centre`` is drawn given the means of the effects so that ``*_mu = *_centre - sum(sd * mean(e))`` keeps its
Normal prior exactly. ``*_mu``, ``*_domain`` and ``*_benchmark`` are the same quantities, with the same prior,
as with independent effects (so a new group's predictive, Normal(parent, sd), is exact); only the sampler's
coordinates changed. The sd of a
non-centred level of at least 4 groups is sampled as a signed scale, ``*_sd_signed_z ~ Normal(0, scale)`` with
``*_sd`` its absolute value (:func:`_group_scale`: again the same model, and a coordinate that passes through an sd
near 0 where the log of a positive sd has a long tail); with 2 or 3 groups as its log. A centred level is
unchanged.

Likelihood
----------
Binary responses: Bernoulli with logit link, ``y * eta - softplus(eta)``. k successes of n repeated trials
(inspect_ai epochs, OpenCompass runs, pass@k samples: :mod:`irtbayes.data.trials`): binomial,
``k * eta - n * softplus(eta)`` (the constant log C(n, k) left out), in the ``"long"`` or ``"dense"`` layout.
Fractional responses y in
[0, 1] (partial credit): the same expression, the fractional-logit quasi-likelihood of Papke and
Wooldridge (1996), which has the right mean (E[y] = P) and is the Bernoulli likelihood when y is 0/1; its
posterior is a quasi-posterior (intervals are approximate when responses are strongly over- or
under-dispersed). Set ``fractional="error"`` to refuse fractional data instead. Missing cells are
absent rows. The 3PL uses ``y log P + (1 - y) log(1 - P)`` in log-sum-exp form.

The layout of the likelihood (``layout``, :mod:`irtbayes.model.likelihood`): when at least half of the
(subject, item) cells are observed, they use ``"fused"``, a PyTensor Op whose numba kernel computes the
log-likelihood and its gradient in one pass over the dense matrix (1PL/2PL: one ``exp`` per cell; 3PL: an
``exp`` and a ``log``, in float64; both as polynomials, so that the loop over items vectorises); ``"dense"`` is
the same matrix in plain PyTensor; sparse data use ``"long"`` (one row per response, integer indexing). The fused
Op has no JAX form: the ``numpyro`` sampler uses ``"dense"``. Data with repeated trials take ``"dense"`` where
the fused layout would be chosen (its kernel weighs a cell 0 or 1).

Graded models
-------------
``"grm"`` (Samejima's graded response model) and ``"gpcm"`` (Muraki's generalised partial credit) fit
responses in K ordered categories 0..K-1 (K may differ between items; a binary item is the two-category
case, where both are the 2PL). Item i has a discrimination a_i and thresholds b_i1..b_i,K-1:

- GRM: P(Y >= k) = sigmoid(a_i (theta - b_ik)), the thresholds increasing;
- GPCM: P(Y = k) proportional to exp(sum_{v <= k} a_i (theta - b_iv)), step difficulties in any order.

The thresholds are the item's ``difficulty`` (their mean, pooled within benchmark and domain exactly as the
binary models' difficulties are) plus centred offsets built from the gaps between consecutive thresholds:
``log_step`` (GRM, gaps exp(log_step) > 0) or ``step`` (GPCM), dim ``item_step`` labelled ``"<item>[k]"``,
themselves pooled (``log_step_mu``, ``log_step_sd``, ``log_step_benchmark``...; see :class:`Priors`). The
Deterministic ``threshold`` (item, boundary; boundary k lies between categories k - 1 and k) holds them
(NaN past an item's own K - 1); after sampling, ``intercept`` (item, boundary) is mirt's slope-intercept
d_k = -a b_k and ``location`` the ability at which the expected score is half the maximum
(:func:`add_derived`). The gaps are non-centred (each is informed by two categories' responses only).
Graded models use the ``"long"`` layout (``"dense"`` with the numpyro sampler) and the same abilities,
identification and discriminations.

The measurements behind these choices (ESS per second of each parameterisation, the cost per gradient of
each layout, the small-bank fits) are in the documentation's performance and validation pages
(``docs/performance.md``, ``docs/validation.md``).

Priors
------
See :class:`Priors`: weakly informative on the ability scale, overridable, saved with every fit.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from scipy.special import ndtri

from irtbayes.core.errors import SpecError
from irtbayes.core.irt import graded_location
from irtbayes.data.responses import ResponseData
from irtbayes.model.inputs import ModelInputs, model_inputs, step_items
from irtbayes.model.likelihood import response_loglik
from irtbayes.model.spec import GRADED_KINDS, NO_FLOOR, ModelSpec

__all__ = [
    "add_derived",
    "build_model",
    "chance_floor",
    "guessing_prior_mean",
    "start_values",
]

log = logging.getLogger(__name__)


def _shared(values: Any, name: str) -> Any:
    """``values`` as a shared variable, not a constant: the compiled log-density then takes it as an argument, so
    models of one structure share their compiled code whatever their data (:mod:`irtbayes.fitting.compiled`)."""
    return pytensor.shared(np.asarray(values), name=name)


def _length(dim: str) -> Any:
    """The length of the current model's ``dim``, as the symbolic value PyMC keeps for it (not a constant)."""
    return pm.modelcontext(None).dim_lengths[dim]


def _item_location(
    prefix: str,
    inputs: ModelInputs,
    *,
    mu_mean: float,
    mu_sd: float,
    group_sd_scale: float,
    min_items_centred: int,
) -> pt.TensorVariable:
    """Mean of each item's parameter under the hierarchy (benchmark means around domain means).

    The domain level is non-centred (``{prefix}_domain`` is a Deterministic of ``{prefix}_domain_z``); the
    benchmark level is centred when there are at least :data:`CENTRED_MIN_GROUPS` benchmarks and every one has at
    least ``min_items_centred`` items (its mean is then pinned by the data and the non-centred form would leave a
    ridge between ``{prefix}_mu`` and the raw effects), and non-centred otherwise. A non-centred level is sampled
    as the mean of its groups and zero-sum effects around it (see the module docstring), the same model in other
    coordinates: with ``K`` groups, independent standard-normal effects ``e`` are ``mean(e) + (e - mean(e))``,
    where ``e - mean(e)`` is zero-sum normal (``{prefix}_{level}_z``) and ``mean(e)`` is
    ``{prefix}_{level}_mean_z / sqrt(K)``; ``{prefix}_centre``, the mean that the groups' values sit around, is
    drawn given those means so that ``{prefix}_mu`` (a Deterministic) keeps its ``Normal(mu_mean, mu_sd)`` prior
    exactly. Its sd is sampled as a signed scale with at least :data:`SIGNED_MIN_GROUPS` groups, else as its log
    (:func:`_group_scale`). Returns one value per item.
    """
    hierarchy = inputs.spec.hierarchy
    if hierarchy == "none":
        mu = pm.Normal(f"{prefix}_mu", mu_mean, mu_sd)
        return mu * pt.ones(_length("item"))
    levels = []  # (name, sd) of the non-centred levels, top down
    if hierarchy == "benchmark+domain":
        levels.append(("domain", _group_scale(f"{prefix}_domain_sd", group_sd_scale, inputs, "domain")))
    centred_bench = _centred_benchmarks(inputs, min_items_centred, prefix)
    if inputs.spec.benchmark_sd == "fixed":
        bench_sd: Any = group_sd_scale  # no hyper-sd, so no funnel: centred
    elif centred_bench:
        bench_sd = pm.HalfNormal(f"{prefix}_benchmark_sd", group_sd_scale)
    else:
        bench_sd = _group_scale(f"{prefix}_benchmark_sd", group_sd_scale, inputs, "benchmark")
        levels.append(("benchmark", bench_sd))
    if not levels:
        mu = pm.Normal(f"{prefix}_mu", mu_mean, mu_sd)
        return pm.Normal(f"{prefix}_benchmark", mu, bench_sd, dims="benchmark")[_item_benchmark(inputs)]
    effects = {}  # level -> standard-normal effects e = mean(e) + zero-sum part
    shift: Any = 0.0  # centre - mu = sum over levels of sd * mean(e)
    for level, sd in levels:
        mean_e = pm.Normal(f"{prefix}_{level}_mean_z", 0.0, 1.0) / pt.sqrt(pt.cast(_length(level), "float64"))
        effects[level] = mean_e + _zero_sum_normal(f"{prefix}_{level}_z", level)
        shift = shift + sd * mean_e
    centre = pm.Normal(f"{prefix}_centre", mu_mean + shift, mu_sd)
    mu = pm.Deterministic(f"{prefix}_mu", centre - shift)
    if hierarchy == "benchmark+domain":
        dom = pm.Deterministic(f"{prefix}_domain", mu + levels[0][1] * effects["domain"], dims="domain")
        assert inputs.benchmark_domain is not None
        parent = dom[_shared(inputs.benchmark_domain, f"{prefix}_benchmark_domain")]
    else:
        parent = mu
    if centred_bench:
        bench = pm.Normal(f"{prefix}_benchmark", parent, bench_sd, dims="benchmark")
    else:
        bench = pm.Deterministic(f"{prefix}_benchmark", parent + bench_sd * effects["benchmark"], dims="benchmark")
    return bench[_item_benchmark(inputs)]


def _zero_sum_normal(name: str, level: str) -> Any:
    """Standard-normal effects of ``level``'s groups that sum to zero: ``pm.ZeroSumNormal(name, 1.0, dims=level)``
    written out, the same log-density in the same coordinates, for a cheaper compiled graph.

    PyMC samples a zero-sum normal of K values through K - 1 free coordinates ``u`` (its ``ZeroSumTransform``):
    the values are ``(u_1 - c, ..., u_{K-1} - c, f - c)`` with ``s = sum(u)``, ``c = s / (sqrt(K) + K)`` and
    ``f = c - s / sqrt(K)``, an isometry, so the density of the values is that of K - 1 independent standard
    normals ``u``. Here ``u`` is that free variable (``*_zerosum_z``, K - 1 values, a plain Normal) and the values
    (the Deterministic ``name``) are built from it by one gather and a switch, where PyMC's transform concatenates
    ``u`` with ``f`` and sums with kept dimensions, whose gradients (a split, a broadcast) cost a first run seconds
    of numba compilation (measured on docs/performance.md#a-cheaper-graph-to-compile-2026-12-06-night).
    Log-density and gradient agree with PyMC's to rounding (``tests/model/test_model.py``). A level of one group
    (no free coordinate) keeps ``pm.ZeroSumNormal``.
    """
    n_groups = len(pm.modelcontext(None).coords[level])
    if n_groups < 2:
        return pm.ZeroSumNormal(name, 1.0, dims=level)
    u = pm.Normal(_zero_sum_free(name), 0.0, 1.0, shape=_length(level) - 1)
    k = pt.cast(_length(level), "float64")
    total = u.sum()
    centre = total / (pt.sqrt(k) + k)
    # code: the place in u of each group, -1 for the last; mask and gather come from one array, so their lengths
    # agree without a shape check in the graph
    code = _shared(np.r_[np.arange(n_groups - 1), -1].astype("int64"), f"{name}_code")
    values = pt.switch(pt.ge(code, 0), u[pt.maximum(code, 0)], centre - total / pt.sqrt(k)) - centre
    return pm.Deterministic(name, values, dims=level)


def _zero_sum_free(name: str) -> str:
    """The name of the free coordinates of :func:`_zero_sum_normal` ``name`` (a sampler coordinate: ``*_z``)."""
    return name.removesuffix("_z") + "_zerosum_z"


def _group_scale(name: str, scale: float, inputs: ModelInputs, level: str) -> Any:
    """The sd of a non-centred level, ``name ~ HalfNormal(scale)``, sampled as a signed scale (``spec.group_sd``
    ``"signed"`` and at least :data:`SIGNED_MIN_GROUPS` groups): a free ``{name}_signed_z ~ Normal(0, scale)`` whose
    absolute value is ``name`` (a Deterministic); the level's effects are the signed scale times its standard-normal
    effects. Returns the signed scale (otherwise the HalfNormal itself, which PyMC samples as its log).

    The same model: ``|u|`` of ``u ~ Normal(0, scale)`` is HalfNormal(scale), and ``u * e`` has the law of ``|u|
    * e`` for symmetric ``e``, so every variable irtbayes keeps has the same posterior (the sign is not a
    quantity of the model; the chains may hold either). What changes is the sampler's coordinate. A positive sd
    is sampled as its logarithm, and where the data put a level's sd near 0 (benchmarks or domains that differ
    little) the log's posterior has a long tail toward minus infinity that NUTS crosses slowly; ``u`` passes
    through 0 smoothly. On the simulated 100 x 1,000 data of ``scripts/benchmark_fit.py`` (7 domains, 25
    benchmarks, no spread of mean log-discriminations between them) the fit converged after fewer draws per chain
    than with the log (docs/performance.md#group-sds-as-signed-scales-2026-12-05-late-night). With two or three
    groups the data rarely tell their effects from 0, and the signed scale times the effects is pinned near 0 along
    both axes, a cross that NUTS diverged on in fits that pass with the log (same page), so such levels keep the log.
    """
    if _scale_name(name, inputs, level) == name:
        return pm.HalfNormal(name, scale)
    signed = pm.Normal(f"{name}_signed_z", 0.0, scale)
    pm.Deterministic(name, pt.abs(signed))
    return signed


def _item_benchmark(inputs: ModelInputs) -> Any:
    """Each item's benchmark code, shared (see :func:`_shared`)."""
    if inputs.item_benchmark is None:
        raise SpecError("a benchmark level needs each item's benchmark; build the inputs with model_inputs")
    return _shared(inputs.item_benchmark, "item_benchmark")


#: The benchmark level of difficulties is centred when every benchmark has at least this many items; that of
#: log-discriminations (each item's discrimination is known far less well) when every one has at least
#: :data:`CENTRED_MIN_ITEMS_DISCRIMINATION`.
CENTRED_MIN_ITEMS = 30
CENTRED_MIN_ITEMS_DISCRIMINATION = 100
#: ... and when there are at least this many benchmarks: the sd of two or three groups' means is barely fixed by
#: the data, and where its posterior reaches near 0 a centred level is a funnel (simulated banks of 23-44 systems in
#: 2-3 benchmarks of 31-94 items: 6-609 divergences centred, none non-centred at target acceptance 0.95).
CENTRED_MIN_GROUPS = 4
#: ... and, for difficulties, when the benchmarks' mean difficulties lie at least this many standard errors apart
#: (:func:`_benchmark_spread`): where they lie close together the level's sd reaches near 0, where a centred level is a
#: funnel (the leaderboard design family, 4-5 benchmarks of 80-150 systems: 12-239 divergences centred, none
#: non-centred).
CENTRED_MIN_SPREAD = 2.0
#: The sd of a non-centred level is sampled as a signed scale when it has at least this many groups
#: (:func:`_group_scale`); with fewer, as its log.
SIGNED_MIN_GROUPS = 4


def _item_centring(inputs: ModelInputs) -> tuple[bool, bool]:
    """(difficulty centred, discrimination centred) at the item level."""
    choice = inputs.spec.item_centring
    if choice == "centred":
        return True, True
    if choice == "noncentred":
        return False, False
    n_items = len(inputs.coords["item"])
    per_item = np.median(np.bincount(inputs.item_code, weights=inputs.trials, minlength=n_items))  # trials count
    return bool(per_item >= CENTRED_MIN_RESPONSES), False


#: Item difficulties are centred when the median item has at least this many responses (its data then
#: inform its difficulty more than the hierarchy does); otherwise non-centred.
CENTRED_MIN_RESPONSES = 20


def _centred_benchmarks(inputs: ModelInputs, min_items: int, prefix: str) -> bool:
    """Whether the benchmark level of ``prefix`` is centred (module docstring)."""
    if inputs.spec.benchmark_sd == "fixed":  # no hyper-sd, no funnel: the level is centred whatever ``centring``
        return True
    if inputs.spec.centring != "auto":
        return inputs.spec.centring == "centred"
    if inputs.item_benchmark is None:
        raise SpecError("a benchmark level needs each item's benchmark; build the inputs with model_inputs")
    counts = np.bincount(inputs.item_benchmark, minlength=len(inputs.coords["benchmark"]))
    if len(counts) < CENTRED_MIN_GROUPS or counts.min() < min_items:
        return False
    if prefix == "difficulty" and inputs.spec.kind not in GRADED_KINDS:
        spread, error = _benchmark_spread(inputs)
        return bool(spread >= CENTRED_MIN_SPREAD * error)
    return True


def _benchmark_spread(inputs: ModelInputs) -> tuple[float, float]:
    """How far the benchmarks' mean difficulties lie apart, against how precisely the data place each one.

    Each item's empirical difficulty is ``-logit`` of its share of correct answers (half an answer added to each
    side); a benchmark's mean has the standard error ``sd / sqrt(n)`` of its items'. Returns the between-benchmark
    sd of the means, less what those errors explain (method of moments, at least 0), and the root mean square of the
    errors. Binary or fractional responses, or k successes of n trials (counted as n answers).
    """
    assert inputs.item_benchmark is not None
    n_items = len(inputs.coords["item"])
    right = np.bincount(inputs.item_code, weights=inputs.successes, minlength=n_items)
    answers = np.bincount(inputs.item_code, weights=inputs.trials, minlength=n_items).astype("float64")
    b = -np.log((right + 0.5) / (answers - right + 0.5))
    n_bench = len(inputs.coords["benchmark"])
    means = np.array([b[inputs.item_benchmark == k].mean() for k in range(n_bench)])
    errors2 = np.array(
        [b[inputs.item_benchmark == k].var(ddof=1) / (inputs.item_benchmark == k).sum() for k in range(n_bench)]
    )
    between = max(0.0, float(means.var(ddof=1) - errors2.mean()))
    return float(np.sqrt(between)), float(np.sqrt(errors2.mean()))


def _initial_abilities(inputs: ModelInputs) -> np.ndarray:
    """Normal scores of the subjects' mean responses: a starting point with spread (sd 0 cannot be standardised)."""
    n = len(inputs.coords["subject"])
    totals = np.bincount(inputs.subject_code, weights=inputs.response, minlength=n)
    counts = np.maximum(np.bincount(inputs.subject_code, minlength=n), 1)
    ranks = pd.Series(totals / counts).rank(method="first").to_numpy()
    return np.asarray(ndtri(ranks / (n + 1)), dtype="float64")


def _pin_scale(z: Any, tau: Any, *, name: str) -> None:
    """Keep the mean and sd of the raw abilities near 0 and 1 (width ``tau``) without changing the model.

    Standardised abilities do not depend on the mean and sd of ``z``, and for iid normal ``z`` those two are
    independent of the standardised vector; a factor that depends on them only therefore leaves the prior
    of the abilities (uniform on the sphere) and the posterior unchanged. It does change the geometry:
    without it, ``z`` spreads along the two directions that standardisation removes (scale 1) while it is
    pinned to within the ability's posterior sd (0.02 with 10,000 responses per subject) in every other
    direction, a sheet that a diagonal mass matrix cannot follow. ``tau`` is set near the abilities'
    posterior sd, so that every direction has a similar scale.

    The sd is pinned through its logarithm, so the factor vanishes at sd 0. There the standardised abilities
    turn to the opposite direction, and a step across that point is a divergence. Near sd 1 the logarithm is
    sd - 1, so with many subjects the geometry is the same; with a handful, a pin on sd - 1 left sd 0 within
    reach (docs/validation.md#a-handful-of-systems-the-scale-of-the-raw-abilities).

    ``z`` is (subjects,) for one ability dimension, (subjects, dimensions) otherwise. One dimension is not made a
    column: the gradient of a mean over the rows of a one-column matrix compiles to numba's general reduction,
    seconds of a first run's compilation (measured on docs/performance.md#a-cheaper-graph-to-compile-2026-12-06-night),
    where a vector's mean is a plain sum.
    """
    n = z.shape[0]
    mean = z.mean(axis=0)
    sd = z.std(axis=0)
    pm.Potential(name, -0.5 * (((mean * pt.sqrt(n)) / tau) ** 2 + ((pt.log(sd) * pt.sqrt(n)) / tau) ** 2).sum())


def _pin_width(inputs: ModelInputs) -> float:
    """About the posterior sd of an ability: 1 / sqrt(Fisher information), 0.15 per response."""
    n = len(inputs.coords["subject"])
    # responses, not trials: weighing the trials narrowed the pin below what the standardised abilities of a few
    # systems move by, and the inspect_ai fixture (3 systems, 2 epochs) diverged where per response it did not
    per_subject = np.bincount(inputs.subject_code, minlength=n).astype("float64")
    if inputs.spec.dims == "domain":
        per_subject = per_subject / len(inputs.coords["dim"])
    return float(np.clip(1.0 / np.sqrt(1.0 + 0.15 * np.median(per_subject)), 0.01, 1.0))


def _abilities(inputs: ModelInputs) -> pt.TensorVariable:
    spec = inputs.spec
    priors = spec.priors
    start = _initial_abilities(inputs)
    standardise = spec.identification == "standardise"
    if spec.dims == "one":
        if not standardise:
            return pm.Normal("ability", 0.0, 1.0, dims="subject", initval=start)
        z = pm.Normal("ability_z", 0.0, 1.0, dims="subject", initval=start)
        _pin_scale(z, _shared(_pin_width(inputs), "ability_z_scale_width"), name="ability_z_scale")
        return pm.Deterministic("ability", (z - z.mean()) / z.std(), dims="subject")
    n_dim = len(inputs.coords["dim"])
    chol = pm.LKJCorr("ability_corr_chol", n=n_dim, eta=priors.ability_corr_eta)
    pm.Deterministic("ability_corr", chol @ chol.T, dims=("dim", "dim2"))
    z = pm.Normal("ability_z", 0.0, 1.0, dims=("subject", "dim"), initval=np.repeat(start[:, None], n_dim, axis=1))
    raw = z @ chol.T
    if not standardise:
        return pm.Deterministic("ability", raw, dims=("subject", "dim"))
    _pin_scale(raw, _shared(_pin_width(inputs), "ability_z_scale_width"), name="ability_z_scale")
    return pm.Deterministic("ability", (raw - raw.mean(axis=0)) / raw.std(axis=0), dims=("subject", "dim"))


def _difficulties(inputs: ModelInputs, *, centred: bool) -> pt.TensorVariable:
    """The items' difficulties around their location (benchmark, domain or overall mean), centred or not."""
    priors = inputs.spec.priors
    b_loc = _item_location(
        "difficulty",
        inputs,
        mu_mean=0.0,
        mu_sd=priors.difficulty_mu_sd,
        group_sd_scale=priors.difficulty_group_sd_scale,
        min_items_centred=CENTRED_MIN_ITEMS,
    )
    b_sd = pm.HalfNormal("difficulty_sd", priors.difficulty_sd_scale)
    if centred:
        return pm.Normal("difficulty", b_loc, b_sd, dims="item")
    b_z = pm.Normal("difficulty_z", 0.0, 1.0, dims="item")
    return pm.Deterministic("difficulty", b_loc + b_sd * b_z, dims="item")


def _discriminations(inputs: ModelInputs, *, centred: bool) -> pt.TensorVariable:
    """The items' discriminations: one shared value (1PL) or log-normal around their location (2PL, 3PL)."""
    spec = inputs.spec
    priors = spec.priors
    if spec.kind == "1pl":
        la = pm.Normal("log_discrimination_mu", priors.log_discrimination_mu_mean, priors.log_discrimination_mu_sd)
        return pt.exp(la) * pt.ones(_length("item"))
    la_loc = _item_location(
        "log_discrimination",
        inputs,
        mu_mean=priors.log_discrimination_mu_mean,
        mu_sd=priors.log_discrimination_mu_sd,
        group_sd_scale=priors.log_discrimination_group_sd_scale,
        min_items_centred=CENTRED_MIN_ITEMS_DISCRIMINATION,
    )
    if spec.discrimination_sd == "fixed":
        la_sd = priors.log_discrimination_sd_scale
        # no hyper-sd, so no funnel: the centred form leaves no ridge between the mean and the items
        centred = spec.item_centring != "noncentred"
    else:
        la_sd = pm.HalfNormal("log_discrimination_sd", priors.log_discrimination_sd_scale)
    if centred:
        return pm.LogNormal("discrimination", la_loc, la_sd, dims="item")
    a_z = pm.Normal("discrimination_z", 0.0, 1.0, dims="item")
    return pm.Deterministic("discrimination", pt.exp(la_loc + la_sd * a_z), dims="item")


def guessing_prior_mean(inputs: ModelInputs) -> np.ndarray:
    """The mean of each item's guessing prior: its chance level, 1 / ``n_options``, where the items' metadata
    give it and ``Priors.guessing_chance`` is on; ``Priors.guessing_mean`` elsewhere."""
    priors = inputs.spec.priors
    mean = np.full(len(inputs.coords["item"]), priors.guessing_mean)
    if priors.guessing_chance:
        mean = np.where(np.isnan(inputs.chance), mean, inputs.chance)
    return mean


def chance_floor(inputs: ModelInputs) -> np.ndarray:
    """Each item's lower asymptote under ``ModelSpec(guessing="chance")``: 1 / ``n_options``, or :data:`NO_FLOOR`
    for an item without options."""
    return np.where(np.isnan(inputs.chance), NO_FLOOR, inputs.chance)


def _guessing(inputs: ModelInputs) -> pt.TensorVariable:
    """The 3PL's guessing parameters: Beta around the items' chance level (or the prior mean), or fixed at the
    chance level (``guessing="chance"``)."""
    if inputs.spec.guessing == "chance":
        return pm.Deterministic("guessing", pt.as_tensor_variable(chance_floor(inputs)), dims="item")
    mean = guessing_prior_mean(inputs)
    kappa = inputs.spec.priors.guessing_concentration
    return pm.Beta(
        "guessing", _shared(mean * kappa, "guessing_alpha"), _shared((1 - mean) * kappa, "guessing_beta"), dims="item"
    )


def _thresholds(inputs: ModelInputs, difficulty: pt.TensorVariable, *, centred: bool) -> pt.TensorVariable:
    """Graded models: each item's thresholds (item, Kmax - 1), ``difficulty`` being their mean.

    An item of K categories has K - 2 gaps between consecutive thresholds (``inputs.coords["item_step"]``): the
    GRM's are ``exp(log_step)`` (so its thresholds are ordered), the GPCM's are ``step`` (its step
    difficulties may be reversed). Positions are the cumulative sums of the gaps, centred to mean 0, plus the
    item's difficulty. The gaps' prior is hierarchical like the difficulties' (see :class:`Priors`), and
    non-centred unless ``item_centring="centred"``: a gap is informed only by the responses in the two
    categories beside it, so, like a discrimination, weakly (centred gaps diverged in a funnel with their sd
    on a simulated 150 x 12 bank). Entries past an item's own thresholds repeat its last one (finite, so that
    no NaN reaches a gradient); the Deterministic ``threshold`` stores NaN there.
    """
    assert inputs.n_categories is not None
    priors = inputs.spec.priors
    n_items, n_thresholds = _length("item"), _length("boundary")
    if "item_step" not in inputs.coords:  # every item is binary: one threshold, the difficulty
        positions = pt.zeros((n_items, 1))
    else:
        grm = inputs.spec.kind == "grm"
        name = "log_step" if grm else "step"
        item, position = (
            _shared(codes, label)
            for codes, label in zip(step_items(inputs), ("step_item", "step_position"), strict=True)
        )
        loc = _item_location(
            name,
            inputs,
            mu_mean=priors.step_mu_mean if grm else float(np.exp(priors.step_mu_mean)),
            mu_sd=priors.step_mu_sd,
            group_sd_scale=priors.step_group_sd_scale,
            min_items_centred=CENTRED_MIN_ITEMS,
        )[item]
        sd = pm.HalfNormal(f"{name}_sd", priors.step_sd_scale)
        if centred:
            raw = pm.Normal(name, loc, sd, dims="item_step")
        else:
            raw = pm.Deterministic(
                name, loc + sd * pm.Normal(f"{name}_z", 0.0, 1.0, dims="item_step"), dims="item_step"
            )
        gaps = pt.zeros((n_items, n_thresholds - 1))
        gaps = pt.set_subtensor(gaps[item, position], pt.exp(raw) if grm else raw)
        positions = pt.concatenate([pt.zeros((n_items, 1)), pt.cumsum(gaps, axis=1)], axis=1)
    n_thresholds_of = _shared(inputs.n_categories - 1, "n_thresholds")  # K - 1 per item
    own = pt.lt(pt.arange(n_thresholds)[None, :], n_thresholds_of[:, None])
    mean = (positions * own).sum(axis=1) / n_thresholds_of
    thresholds = difficulty[:, None] + positions - mean[:, None]
    pm.Deterministic("threshold", pt.switch(own, thresholds, np.nan), dims=("item", "boundary"))
    return thresholds


def build_model(data: ResponseData, spec: ModelSpec | None = None) -> pm.Model:
    """Build the PyMC model for ``data`` under ``spec`` (see the module docstring for the maths).

    Parameters
    ----------
    data
        Responses (long format; missing cells absent).
    spec
        Model settings; ``None`` gives the default 2PL. ``"auto"`` settings are resolved against the data
        (the resolved spec is in ``model.irtbayes_spec``).

    Returns
    -------
    pymc.Model
        Free variables include ``ability_z`` (subject[, dim]; or ``ability`` with ``identification="prior"``),
        ``difficulty`` (item), ``discrimination`` (item; 2PL/3PL), ``guessing`` (item; 3PL) and the
        hyperparameters ``difficulty_mu``, ``difficulty_sd``, ``difficulty_benchmark[_sd]``,
        ``difficulty_domain[_sd]``, ``log_discrimination_*`` (with a non-centred group level, ``*_mu`` is a
        Deterministic of ``*_centre``); Deterministic ``ability`` (subject[, dim]).
        The response log-likelihood is the Potential ``response_loglik``.

    Raises
    ------
    SpecError
        The data cannot support the spec.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(40, 60, seed=1)
    >>> model = build_model(data, ModelSpec(kind="2pl"))
    >>> model.irtbayes_spec.hierarchy  # "auto" with no benchmark labels
    'none'
    >>> sorted(v.name for v in model.free_RVs)
    ['ability_z', 'difficulty', 'difficulty_mu', 'difficulty_sd', 'discrimination', 'log_discrimination_mu']
    >>> len(model.coords["subject"]), len(model.coords["item"]), "response_loglik" in model.named_vars
    (40, 60, True)
    """
    spec = spec or ModelSpec()
    inputs = model_inputs(data, spec)
    spec = inputs.spec
    n_subjects = len(inputs.coords["subject"])
    coords = dict(inputs.coords)
    if "dim" in coords:
        coords["dim2"] = list(coords["dim"])

    with pm.Model(coords=coords) as model:
        ability = _abilities(inputs)

        centred_b, centred_a = _item_centring(inputs)
        difficulty = _difficulties(inputs, centred=centred_b)
        discrimination = _discriminations(inputs, centred=centred_a)
        guessing = _guessing(inputs) if spec.kind == "3pl" else None
        if spec.kind in GRADED_KINDS:  # the likelihood takes the thresholds where the binary models take b
            difficulty = _thresholds(inputs, difficulty, centred=centred_a)

        loglik = response_loglik(inputs, ability, difficulty, discrimination, guessing, n_subjects=n_subjects)
        pm.Potential("response_loglik", loglik)
    model.irtbayes_spec = spec
    model.irtbayes_inputs = inputs
    return model


def _scale_name(name: str, inputs: ModelInputs, level: str) -> str:
    """The free variable of the sd ``name`` of a non-centred ``level`` (:func:`_group_scale`); its start is the sd."""
    signed = inputs.spec.group_sd == "signed" and len(inputs.coords[level]) >= SIGNED_MIN_GROUPS
    return f"{name}_signed_z" if signed else name


#: Least value given to a hierarchy sd in a start (a HalfNormal sd at 0 is outside its support).
START_SD_FLOOR = 0.05


def _location_start(
    prefix: str, inputs: ModelInputs, values: np.ndarray, *, min_items_centred: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The free variables of :func:`_item_location` for items whose parameter is ``values``, and each item's
    location: benchmark means are the means of their items, domain means those of their benchmarks, and each
    level's sd the spread of its groups around their parent (at least :data:`START_SD_FLOOR`)."""
    out: dict[str, np.ndarray] = {}
    hierarchy = inputs.spec.hierarchy
    if hierarchy == "none":
        out[f"{prefix}_mu"] = np.asarray(values.mean())
        return out, np.full(len(values), values.mean())
    assert inputs.item_benchmark is not None
    n_bench = len(inputs.coords["benchmark"])
    bench = np.bincount(inputs.item_benchmark, weights=values, minlength=n_bench)
    bench = bench / np.maximum(np.bincount(inputs.item_benchmark, minlength=n_bench), 1)
    levels = []  # (name, values, parent, sd) of the non-centred levels, top down
    if hierarchy == "benchmark+domain":
        assert inputs.benchmark_domain is not None
        n_dom = len(inputs.coords["domain"])
        dom = np.bincount(inputs.benchmark_domain, weights=bench, minlength=n_dom)
        dom = dom / np.maximum(np.bincount(inputs.benchmark_domain, minlength=n_dom), 1)
        mu = float(dom.mean())
        parent = dom[inputs.benchmark_domain]
        dom_sd = max(float(np.sqrt(np.mean((dom - mu) ** 2))), START_SD_FLOOR)
        out[_scale_name(f"{prefix}_domain_sd", inputs, "domain")] = np.asarray(dom_sd)
        levels.append(("domain", dom, np.full(n_dom, mu), dom_sd))
    else:
        mu = float(bench.mean())
        parent = np.full(n_bench, mu)
    bench_sd = max(float(np.sqrt(np.mean((bench - parent) ** 2))), START_SD_FLOOR)
    if _centred_benchmarks(inputs, min_items_centred, prefix):
        if inputs.spec.benchmark_sd != "fixed":
            out[f"{prefix}_benchmark_sd"] = np.asarray(bench_sd)
        out[f"{prefix}_benchmark"] = bench
    else:
        out[_scale_name(f"{prefix}_benchmark_sd", inputs, "benchmark")] = np.asarray(bench_sd)
        levels.append(("benchmark", bench, parent, bench_sd))
    if not levels:
        out[f"{prefix}_mu"] = np.asarray(mu)
        return out, bench[inputs.item_benchmark]
    # each parent is the mean of its groups, so a level's effects sum to zero: their mean (``*_mean_z``) is 0
    # and the centre is the mean itself
    for level, group_values, group_parent, sd in levels:
        out[f"{prefix}_{level}_mean_z"] = np.asarray(0.0)
        effects = (group_values - group_parent) / sd
        effects = effects - effects.mean()  # removes rounding only
        name = f"{prefix}_{level}_z"
        out[name if len(effects) < 2 else _zero_sum_free(name)] = _zero_sum_coordinates(effects)
    out[f"{prefix}_centre"] = np.asarray(mu)
    return out, bench[inputs.item_benchmark]


def _zero_sum_coordinates(effects: np.ndarray) -> np.ndarray:
    """The free coordinates of :func:`_zero_sum_normal` whose values are the zero-sum ``effects`` (PyMC's
    ``ZeroSumTransform.forward``); ``effects`` itself for a single group, which keeps ``pm.ZeroSumNormal``.

    >>> e = np.array([0.5, -1.0, 0.25, 0.25])
    >>> u = _zero_sum_coordinates(e)
    >>> k, s = len(e), u.sum()
    >>> c = s / (np.sqrt(k) + k)
    >>> np.allclose(np.r_[u - c, c - s / np.sqrt(k) - c], e)
    True
    """
    k = len(effects)
    if k < 2:
        return effects
    return effects[:-1] - effects[-1] * np.sqrt(k) / (np.sqrt(k) + k)


def start_values(
    inputs: ModelInputs,
    *,
    ability: np.ndarray,
    difficulty: np.ndarray,
    log_discrimination: np.ndarray,
    guessing: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Values of the free variables of :func:`build_model` at which the model's abilities, difficulties,
    discriminations (and a 3PL's guessing) are the given ones: a start for NUTS from a quick estimate
    (:mod:`irtbayes.fitting.warmstart`).

    ``ability`` (subjects; one dimension) is standardised where the model standardises it; the hierarchy's
    means are the means of their members, its sds their spreads (at least :data:`START_SD_FLOOR`). A 1PL
    takes the mean log-discrimination; a 3PL without ``guessing`` starts each item at its prior mean
    (:func:`guessing_prior_mean`). Abilities by domain and graded models are not supported (:class:`SpecError`).
    Returns constrained values keyed by variable name.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, truth = simulate_responses(30, 40, seed=1)
    >>> inputs = model_inputs(data, ModelSpec())
    >>> values = start_values(
    ...     inputs, ability=truth["ability"].values, difficulty=truth["difficulty"].values,
    ...     log_discrimination=np.log(truth["discrimination"].values),
    ... )
    >>> sorted(values) == sorted(rv.name for rv in build_model(data).free_RVs)  # one value per free variable
    True
    """
    spec = inputs.spec
    if spec.kind not in ("1pl", "2pl", "3pl") or spec.dims != "one":
        raise SpecError(
            f"start values are for 1PL, 2PL and 3PL models with one ability dimension, not {spec.kind} by {spec.dims}"
        )
    ability = np.asarray(ability, dtype="float64")
    if spec.identification == "standardise":
        out = {"ability_z": (ability - ability.mean()) / ability.std()}
    else:
        out = {"ability": ability}
    centred_b, centred_a = _item_centring(inputs)
    b_values, b_loc = _location_start("difficulty", inputs, difficulty, min_items_centred=CENTRED_MIN_ITEMS)
    out.update(b_values)
    b_sd = max(float(np.sqrt(np.mean((difficulty - b_loc) ** 2))), START_SD_FLOOR)
    out["difficulty_sd"] = np.asarray(b_sd)
    out["difficulty" if centred_b else "difficulty_z"] = difficulty if centred_b else (difficulty - b_loc) / b_sd
    if spec.kind == "1pl":
        out["log_discrimination_mu"] = np.asarray(float(np.mean(log_discrimination)))
        return out
    a_values, a_loc = _location_start(
        "log_discrimination", inputs, log_discrimination, min_items_centred=CENTRED_MIN_ITEMS_DISCRIMINATION
    )
    out.update(a_values)
    if spec.discrimination_sd == "fixed":
        a_sd = spec.priors.log_discrimination_sd_scale
        centred_a = spec.item_centring != "noncentred"
    else:
        a_sd = max(float(np.sqrt(np.mean((log_discrimination - a_loc) ** 2))), START_SD_FLOOR)
        out["log_discrimination_sd"] = np.asarray(a_sd)
    if centred_a:
        out["discrimination"] = np.exp(log_discrimination)
    else:
        out["discrimination_z"] = (log_discrimination - a_loc) / a_sd
    if spec.kind == "3pl" and spec.guessing == "pooled":
        out["guessing"] = guessing_prior_mean(inputs) if guessing is None else np.asarray(guessing, dtype="float64")
    return out


def add_derived(posterior: xr.Dataset, spec: ModelSpec) -> xr.Dataset:
    """Add the variables computed after sampling: ``discrimination`` for 1PL and ``intercept`` (d = -a b).

    Graded models: ``intercept`` (item, boundary) is mirt's d_k = -a b_k, and ``location`` (item) is the
    ability at which the item's expected score is half its maximum (:func:`irtbayes.core.irt.graded_location`;
    the difficulty b of a binary item).

    Parameters
    ----------
    posterior
        Posterior draws with ``difficulty`` (chain, draw, item) and ``discrimination`` or, for 1PL,
        ``log_discrimination_mu``.

    Returns
    -------
    xarray.Dataset
        ``posterior`` with ``discrimination`` and ``intercept`` (chain, draw, item).

    Examples
    --------
    >>> posterior = xr.Dataset(
    ...     {
    ...         "difficulty": (("chain", "draw", "item"), [[[-1.0, 0.5]]]),
    ...         "log_discrimination_mu": (("chain", "draw"), [[np.log(2.0)]]),
    ...     }
    ... )
    >>> out = add_derived(posterior, ModelSpec(kind="1pl"))
    >>> out["discrimination"].values.round(6).tolist()  # the 1PL's shared discrimination, per item
    [[[2.0, 2.0]]]
    >>> out["intercept"].values.round(6).tolist()  # d = -a b
    [[[2.0, -1.0]]]
    """
    out = posterior
    dtype = out["difficulty"].dtype
    if "discrimination" not in out:
        shared = np.exp(out["log_discrimination_mu"])
        out = out.assign(discrimination=(shared * xr.ones_like(out["difficulty"])).astype(dtype))
    if spec.kind in GRADED_KINDS:
        return _add_graded(out, spec)
    if "intercept" not in out:
        out = out.assign(intercept=_negated(out["discrimination"] * out["difficulty"]))
    return out


def _negated(product: xr.DataArray) -> xr.DataArray:
    """``-product``: a NumPy array of ours is negated in place (``-a * b`` made a second array of the draws' size,
    at the peak of a fit's memory: docs/performance.md#memory-the-checks-garbage-and-the-fits-views-2026-12-05-later);
    any other (a lazy or read-only one) by a copy.

    >>> p = xr.DataArray(np.array([1.0, -2.0]))
    >>> _negated(p).values.tolist(), p.values.tolist()  # in place
    ([-1.0, 2.0], [-1.0, 2.0])
    >>> q = xr.DataArray(np.array([1.0, -2.0]))
    >>> q.values.flags.writeable = False
    >>> _negated(q).values.tolist(), q.values.tolist()
    ([-1.0, 2.0], [1.0, -2.0])
    """
    data = product.data
    if isinstance(data, np.ndarray) and data.flags.writeable:
        np.negative(data, out=data)
        return product
    return -product


def _add_graded(posterior: xr.Dataset, spec: ModelSpec) -> xr.Dataset:
    """``intercept`` (item, boundary) and ``location`` (item) of a graded model's draws."""
    out = posterior.assign_attrs(model_kind=spec.kind)  # the audit reads the kind from the draws
    a, b = out["discrimination"], out["threshold"]
    if "intercept" not in out:
        out = out.assign(intercept=_negated(a * b).transpose(*b.dims))
    if "location" not in out:
        core = b.transpose(..., "boundary")
        values = graded_location(a.transpose(*core.dims[:-1]).values, core.values, kind=spec.kind)
        out = out.assign(location=(core.dims[:-1], values.astype(b.dtype)))
    return out
