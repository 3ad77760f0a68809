"""Simulated item responses with their true parameters, for recovery tests, calibration checks and benchmarks.

The generator follows the models in :mod:`irtbayes.model.build`: item difficulties are drawn around benchmark
means, which are drawn around domain means; log-discriminations likewise. Abilities are standard normal
and then standardised exactly (mean 0, sd 1 over the simulated subjects), which is the scale on which the
default model identifies them, so the truth can be compared with posterior draws directly.

Graded kinds (``"grm"``, Samejima's graded response model, and ``"gpcm"``, the generalised partial credit model;
see :func:`irtbayes.core.irt.graded_log_probabilities`) draw each item's location as the binary kinds draw its
difficulty and place its K - 1 thresholds around it (:func:`graded_thresholds`). Their data hold category codes
(float64, 0..K_i-1, read with ``scoring="ordinal"``) and the items' ``n_categories`` (integer), and no
``n_options``. Their truth is labelled as a graded fit's posterior is: ``threshold`` (item, boundary) holds the
thresholds, NaN-padded (boundary k, labelled ``"1"``..``"Kmax-1"``, lies between categories k - 1 and k),
``intercept`` (item, boundary) is mirt's ``d_k = -a b_k``, ``difficulty`` (item) the thresholds' mean and
``location`` (item) the ability at which the expected score is half the maximum
(:func:`irtbayes.core.irt.graded_location`). A mixed bank of a binary, a 3- and a 5-category item:

>>> data, truth = simulate_responses(40, 3, kind="grm", n_categories=[2, 3, 5], seed=1)
>>> data.items["n_categories"].tolist(), truth["threshold"].values.round(2).tolist()
([2, 3, 5], [[0.33, nan, nan, nan], [-1.9, -0.7, nan, nan], [-0.55, 0.22, 1.48, 2.47]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData

__all__ = [
    "GPCM_STEP_MEAN",
    "GPCM_STEP_SD",
    "GRM_STEP_LOG_SD",
    "ITEM_FAULTS",
    "PLANTED_GAP",
    "graded_thresholds",
    "planted_gap_responses",
    "planted_item_faults",
    "posterior_near_truth",
    "simulate_responses",
]

#: The kinds of :func:`simulate_responses` whose responses are graded categories.
_GRADED = ("grm", "gpcm")
#: GRM thresholds are spaced by lognormal steps of median 1 and this log-sd (so they increase).
GRM_STEP_LOG_SD = 0.25
#: GPCM steps between thresholds are normal with this mean and sd (a step below 0 reverses two thresholds).
GPCM_STEP_MEAN = 0.8
GPCM_STEP_SD = 0.5


def _standardise(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=0)) / x.std(axis=0)


def simulate_responses(
    n_subjects: int,
    n_items: int,
    *,
    kind: Literal["1pl", "2pl", "3pl", "grm", "gpcm"] = "2pl",
    n_benchmarks: int = 1,
    n_domains: int = 1,
    dims: Literal["one", "domain"] = "one",
    missing: float = 0.1,
    n_trials: int = 1,
    n_options: int = 4,
    n_categories: int | Sequence[int] | None = None,
    difficulty_sd: float = 1.0,
    benchmark_sd: float = 0.5,
    domain_sd: float = 0.5,
    log_discrimination_sd: float = 0.3,
    ability_corr: float = 0.6,
    seed: int | np.random.Generator | None = None,
) -> tuple[ResponseData, xr.Dataset]:
    """Simulate item responses from a 1PL, 2PL, 3PL or graded (GRM, GPCM) model with benchmark and domain structure.

    Parameters
    ----------
    n_subjects, n_items
        Size of the response matrix before cells are removed.
    kind
        ``"1pl"`` (one shared discrimination), ``"2pl"`` or ``"3pl"`` (a lower asymptote per item, around
        chance ``1 / n_options``); or graded, ``"grm"`` or ``"gpcm"`` (the module's docstring says what they give).
    n_benchmarks, n_domains
        Items are spread evenly over benchmarks (labels ``bench01``...); benchmarks over domains
        (``domain1``...). With one of each, the labels are left out.
    dims
        ``"domain"`` gives one ability per domain (correlation ``ability_corr`` between every pair), each
        item loading on its domain's ability only.
    missing
        Share of (subject, item) cells removed at random; every subject and item keeps one response.
    n_trials
        1 gives 0/1 responses; more gives k successes of ``n_trials`` trials per cell (:mod:`irtbayes.data.trials`).
    n_options
        Options per item, stored in the item metadata (``n_options``) and used as the 3PL chance level.
    n_categories
        Graded kinds only: categories per item, one number or one per item (2: a binary item); None: 4.
    difficulty_sd, benchmark_sd, domain_sd, log_discrimination_sd
        Spreads of the item, benchmark and domain difficulties and of the item log-discriminations.
    seed
        Seed or generator.

    Returns
    -------
    data : ResponseData
        Long responses with item labels ``benchmark`` and ``domain`` (when more than one of each).
    truth : xarray.Dataset
        ``ability`` (subject[, dim]), ``difficulty``, ``discrimination``, ``intercept`` (item) and, for
        3PL, ``guessing`` (item); item coords ``benchmark`` and ``domain``. Graded kinds: see the module.

    Examples
    --------
    >>> data, truth = simulate_responses(40, 60, n_benchmarks=3, seed=1)
    >>> data.n_subjects, data.n_items, round(data.n_responses / (40 * 60), 2)  # 10% of the cells missing
    (40, 60, 0.9)
    >>> sorted(truth.data_vars), sorted(set(truth["benchmark"].values.tolist()))
    (['ability', 'difficulty', 'discrimination', 'intercept'], ['bench00', 'bench01', 'bench02'])
    >>> round(float(truth["ability"].mean()), 6), round(float(truth["ability"].std()), 6)  # standardised
    (0.0, 1.0)
    """
    _check_arguments(
        n_subjects, n_items, kind=kind, dims=dims, missing=missing, n_benchmarks=n_benchmarks, n_domains=n_domains
    )
    n_cat = _checked_categories(n_categories, n_items, kind=kind, n_trials=n_trials)
    rng = np.random.default_rng(seed)

    subject_ids, item_ids, bench_ids, domain_ids = _ids(n_subjects, n_items, n_benchmarks, n_domains)
    bench_of_item, domain_of_bench, domain_of_item = _layout(n_items, n_benchmarks, n_domains)
    sds = (domain_sd, benchmark_sd, difficulty_sd, log_discrimination_sd)
    difficulty, discrimination = _item_parameters(rng, kind, bench_of_item, domain_of_bench, sds=sds)

    ability, theta = _abilities(
        rng, n_subjects, domain_of_item, n_domains=n_domains if dims == "domain" else 1, corr=ability_corr
    )
    response, guessing, thresholds = _draw(rng, kind, theta, (difficulty, discrimination, n_cat), n_options, n_trials)

    labels = {"benchmark": (n_benchmarks, bench_ids[bench_of_item]), "domain": (n_domains, domain_ids[domain_of_item])}
    cells = _observed_cells(rng, n_subjects, n_items, missing=missing)
    sizes = (n_options, n_cat, n_trials)
    data = _response_data(response, cells, subject_ids, item_ids, kind=kind, counts=sizes, labels=labels)

    truth = _truth(
        subject_ids,
        item_ids,
        bench=bench_ids[bench_of_item] if n_benchmarks > 1 else np.full(n_items, ""),
        domain=domain_ids[domain_of_item] if n_domains > 1 else np.full(n_items, ""),
        dims=domain_ids if dims == "domain" else None,
        ability=ability,
        difficulty=difficulty,
        discrimination=discrimination,
        guessing=guessing,
        attrs={"kind": kind, "n_trials": n_trials, "missing": missing},
        thresholds=thresholds,
    )
    return data, truth


def _ids(n_subjects: int, n_items: int, n_benchmarks: int, n_domains: int) -> tuple[np.ndarray, ...]:
    """The subject, item, benchmark and domain labels of a simulation."""
    return (
        np.array([f"subject{j:03d}" for j in range(n_subjects)]),
        np.array([f"item{i:05d}" for i in range(n_items)]),
        np.array([f"bench{k:02d}" for k in range(n_benchmarks)]),
        np.array([f"domain{d}" for d in range(n_domains)]),
    )


def _layout(n_items: int, n_benchmarks: int, n_domains: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each item's benchmark, each benchmark's domain, each item's domain (spread evenly, in sorted blocks)."""
    bench_of_item = np.sort(np.arange(n_items) % n_benchmarks)
    domain_of_bench = np.sort(np.arange(n_benchmarks) % n_domains)
    return bench_of_item, domain_of_bench, domain_of_bench[bench_of_item]


def _item_parameters(
    rng: np.random.Generator,
    kind: str,
    bench_of_item: np.ndarray,
    domain_of_bench: np.ndarray,
    *,
    sds: tuple[float, float, float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """Difficulties (domain, benchmark and item levels) and discriminations (one shared for the 1PL)."""
    domain_sd, benchmark_sd, difficulty_sd, log_discrimination_sd = sds
    n_items, n_benchmarks = len(bench_of_item), len(domain_of_bench)
    n_domains = int(domain_of_bench.max()) + 1
    domain_b = rng.normal(0.0, domain_sd if n_domains > 1 else 0.0, n_domains)
    bench_b = domain_b[domain_of_bench] + rng.normal(0.0, benchmark_sd if n_benchmarks > 1 else 0.0, n_benchmarks)
    difficulty = bench_b[bench_of_item] + rng.normal(0.0, difficulty_sd, n_items)
    if kind == "1pl":
        discrimination = np.full(n_items, float(np.exp(rng.normal(0.0, 0.2))))
    else:
        bench_la = rng.normal(0.0, 0.1 if n_benchmarks > 1 else 0.0, n_benchmarks)
        discrimination = np.exp(bench_la[bench_of_item] + rng.normal(0.0, log_discrimination_sd, n_items))
    return difficulty, discrimination


def _abilities(
    rng: np.random.Generator, n_subjects: int, domain_of_item: np.ndarray, *, n_domains: int, corr: float
) -> tuple[np.ndarray, np.ndarray]:
    """Standardised abilities (subject[, dim]) and each response's ability (subject, item).

    With ``n_domains`` > 1 one ability per domain, correlated ``corr`` between every pair.
    """
    n_items = len(domain_of_item)
    if n_domains > 1:
        matrix = np.full((n_domains, n_domains), corr)
        np.fill_diagonal(matrix, 1.0)
        ability = _standardise(rng.multivariate_normal(np.zeros(n_domains), matrix, size=n_subjects))
        return ability, ability[:, domain_of_item]
    ability = _standardise(rng.normal(size=n_subjects))
    return ability, np.repeat(ability[:, None], n_items, axis=1)


def graded_thresholds(
    rng: np.random.Generator, location: np.ndarray, n_categories: np.ndarray, *, kind: str
) -> np.ndarray:
    """Thresholds of graded items around their locations: ``location + offsets``, NaN-padded.

    An item of K categories has K - 1 thresholds spaced by K - 2 steps, centred so that their mean is the
    location. GRM steps are lognormal (median 1, log-sd :data:`GRM_STEP_LOG_SD`), so the thresholds
    increase; GPCM steps are normal (mean :data:`GPCM_STEP_MEAN`, sd :data:`GPCM_STEP_SD`), so neighbouring
    thresholds are sometimes reversed. One (item, Kmax - 2) block of steps is drawn from ``rng`` (none when
    every item is binary), the steps past an item's own unused.

    Parameters
    ----------
    rng
        The generator.
    location
        (item,) the thresholds' means.
    n_categories
        (item,) categories per item, each at least 2.
    kind
        ``"grm"`` or ``"gpcm"``.

    Returns
    -------
    numpy.ndarray
        (item, Kmax - 1) thresholds, NaN after an item's own K - 1.

    Examples
    --------
    >>> b = graded_thresholds(np.random.default_rng(0), np.array([0.5, -1.0]), np.array([4, 2]), kind="grm")
    >>> b.shape, np.nanmean(b, axis=1).round(12).tolist(), bool(np.isnan(b[1, 1:]).all())
    ((2, 3), [0.5, -1.0], True)
    >>> bool((np.diff(b[0]) > 0).all())  # GRM thresholds increase
    True
    """
    location = np.asarray(location, dtype="float64")
    n_categories = np.asarray(n_categories, dtype="int64")
    n_max = int(n_categories.max())
    shape = (len(location), n_max - 2)
    if n_max == 2:
        steps = np.zeros(shape)
    elif kind == "grm":
        steps = rng.lognormal(0.0, GRM_STEP_LOG_SD, shape)
    else:
        steps = rng.normal(GPCM_STEP_MEAN, GPCM_STEP_SD, shape)
    offsets = np.concatenate([np.zeros((len(location), 1)), np.cumsum(steps, axis=1)], axis=1)
    offsets[np.arange(n_max - 1)[None, :] >= (n_categories - 1)[:, None]] = np.nan
    offsets -= np.nanmean(offsets, axis=1, keepdims=True)
    return location[:, None] + offsets


def _draw(
    rng: np.random.Generator,
    kind: str,
    theta: np.ndarray,
    items: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_options: int,
    n_trials: int,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The (subject, item) responses, the 3PL lower asymptotes (else None) and the graded thresholds (else None),
    from the items' (difficulty or location, discrimination, categories)."""
    difficulty, discrimination, n_categories = items
    if kind not in _GRADED:
        return (*_draw_responses(rng, kind, theta, difficulty, discrimination, n_options, n_trials), None)
    thresholds = graded_thresholds(rng, difficulty, n_categories, kind=kind)
    return _draw_categories(rng, kind, theta, discrimination, thresholds, n_categories), None, thresholds


def _draw_categories(
    rng: np.random.Generator,
    kind: str,
    theta: np.ndarray,
    discrimination: np.ndarray,
    thresholds: np.ndarray,
    n_categories: np.ndarray,
) -> np.ndarray:
    """Each (subject, item) category code as float64: one uniform per cell, inverted through the item's cdf."""
    prob = irt.graded_probabilities(theta, discrimination, thresholds, kind=kind)  # (subject, item, Kmax)
    u = rng.random(theta.shape)
    code = (np.cumsum(prob, axis=-1)[..., :-1] < u[..., None]).sum(axis=-1)
    return np.minimum(code, n_categories - 1).astype("float64")  # a cdf that rounds short of 1 stays in range


def _draw_responses(
    rng: np.random.Generator,
    kind: str,
    theta: np.ndarray,
    difficulty: np.ndarray,
    discrimination: np.ndarray,
    n_options: int,
    n_trials: int,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each (subject, item) response (a share of ``n_trials`` correct), and the 3PL lower asymptotes (else None)."""
    guessing = None
    if kind == "3pl":
        chance = 1.0 / n_options
        guessing = rng.beta(20 * chance, 20 * (1 - chance), len(difficulty))
    prob = irt.probability(theta, difficulty[None, :], discrimination[None, :], guessing)
    response = rng.binomial(n_trials, prob) / n_trials
    return response, guessing


def _response_data(
    response: np.ndarray,
    cells: tuple[np.ndarray, np.ndarray],
    subject_ids: np.ndarray,
    item_ids: np.ndarray,
    *,
    kind: str,
    counts: tuple[int, np.ndarray, int],
    labels: dict[str, tuple[int, np.ndarray]],
) -> ResponseData:
    """The kept (row, column) cells as long data, with the trials of each (the third of ``counts``) when over 1; items
    get ``n_options`` (the first of ``counts``) or, for graded kinds, ``n_categories`` (the second; the responses read
    as ordinal codes) and each label whose count is over 1."""
    rows, cols = cells
    frame = pd.DataFrame({"subject": subject_ids[rows], "item": item_ids[cols], "response": response[rows, cols]})
    source = f"simulated {kind} ({response.shape[0]} subjects x {response.shape[1]} items)"
    n_options, n_categories, trials = counts
    if kind not in _GRADED:
        items = pd.DataFrame({"item": item_ids, "n_options": np.full(len(item_ids), n_options)})
        items = items.assign(**{name: values for name, (count, values) in labels.items() if count > 1})
        if trials > 1:
            frame["trials"] = trials
        return ResponseData.from_long(frame, items=items, source=source, trials="trials" if trials > 1 else None)
    items = pd.DataFrame({"item": item_ids, "n_categories": n_categories})
    items = items.assign(**{name: values for name, (count, values) in labels.items() if count > 1})
    categories = list(range(int(n_categories.max())))  # codes declared: a category no one chose keeps its code
    return ResponseData.from_long(frame, items=items, scoring="ordinal", categories=categories, source=source)


def _observed_cells(
    rng: np.random.Generator, n_subjects: int, n_items: int, *, missing: float
) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the cells kept: a share ``missing`` removed at random, one cell per subject and item kept."""
    keep = rng.random((n_subjects, n_items)) >= missing
    keep[np.arange(n_subjects), rng.integers(0, n_items, n_subjects)] = True
    keep[rng.integers(0, n_subjects, n_items), np.arange(n_items)] = True
    rows, cols = np.nonzero(keep)
    return rows, cols


def _check_arguments(
    n_subjects: int, n_items: int, *, kind: str, dims: str, missing: float, n_benchmarks: int, n_domains: int
) -> None:
    """SpecError for sizes and choices :func:`simulate_responses` cannot simulate."""
    if n_subjects < 3 or n_items < 2:
        raise SpecError(f"simulate_responses: need at least 3 subjects and 2 items, got {n_subjects} x {n_items}")
    if not 0 <= missing < 0.9:
        raise SpecError(f"simulate_responses: missing must be in [0, 0.9), got {missing}")
    if kind not in ("1pl", "2pl", "3pl", *_GRADED):
        raise SpecError(f"simulate_responses: kind must be '1pl', '2pl', '3pl', 'grm' or 'gpcm', got {kind!r}")
    if dims not in ("one", "domain"):
        raise SpecError(f"simulate_responses: dims must be 'one' or 'domain', got {dims!r}")
    if n_benchmarks < 1 or n_domains < 1 or n_domains > n_benchmarks or n_benchmarks > n_items:
        raise SpecError(
            f"simulate_responses: need 1 <= n_domains ({n_domains}) <= n_benchmarks ({n_benchmarks}) <= n_items"
        )
    if dims == "domain" and n_domains < 2:
        raise SpecError("simulate_responses: dims='domain' needs n_domains >= 2")


def _checked_categories(
    n_categories: int | Sequence[int] | None, n_items: int, *, kind: str, n_trials: int
) -> np.ndarray:
    """(item,) categories per item (2 for binary kinds); SpecError for settings that do not fit ``kind``."""
    if kind not in _GRADED:
        if n_categories is not None:
            raise SpecError(
                f"simulate_responses: n_categories is for the graded kinds 'grm' and 'gpcm'; kind {kind!r} is binary"
            )
        return np.full(n_items, 2, dtype="int64")
    if n_trials != 1:
        raise SpecError(
            f"simulate_responses: n_trials={n_trials} gives k successes of n trials, which graded kinds ({kind!r}) "
            "do not have; leave n_trials at 1"
        )
    given = 4 if n_categories is None else n_categories
    values = np.atleast_1d(np.asarray(given))
    if values.ndim != 1 or values.dtype.kind not in "iu" or (values.size != 1 and values.size != n_items):
        raise SpecError(
            f"simulate_responses: n_categories must be one integer or a sequence of {n_items} (one per item), "
            f"got {given!r}"
        )
    if (values < 2).any():
        raise SpecError(f"simulate_responses: every item needs at least 2 categories, got n_categories {given!r}")
    return np.broadcast_to(values, n_items).astype("int64")


def _graded_truth(truth: xr.Dataset, thresholds: np.ndarray, *, kind: str) -> xr.Dataset:
    """A graded simulation's truth: ``threshold`` and ``intercept`` (item, boundary) replacing the binary
    ``intercept``, and ``location`` (item), labelled as a graded fit's posterior is (the module's docstring)."""
    a = truth["discrimination"].values
    boundary = [str(k) for k in range(1, thresholds.shape[1] + 1)]
    return truth.assign_coords(boundary=boundary).assign(
        threshold=(("item", "boundary"), thresholds),
        intercept=(("item", "boundary"), -a[:, None] * thresholds),
        location=("item", irt.graded_location(a, thresholds, kind=kind)),
    )


def _truth(
    subject_ids: np.ndarray,
    item_ids: np.ndarray,
    *,
    bench: np.ndarray,
    domain: np.ndarray,
    dims: np.ndarray | None,
    ability: np.ndarray,
    difficulty: np.ndarray,
    discrimination: np.ndarray,
    guessing: np.ndarray | None,
    attrs: dict[str, object],
    thresholds: np.ndarray | None = None,
) -> xr.Dataset:
    """The true parameters of a simulation, labelled as a fit's posterior is (graded kinds: given ``thresholds``)."""
    if thresholds is not None:
        difficulty = np.nanmean(thresholds, axis=1)  # the drawn location, up to rounding
    coords: dict[str, object] = {
        "subject": subject_ids,
        "item": item_ids,
        "benchmark": ("item", bench),
        "domain": ("item", domain),
    }
    variables: dict[str, object] = {
        "difficulty": ("item", difficulty),
        "discrimination": ("item", discrimination),
        "intercept": ("item", -discrimination * difficulty),
    }
    if dims is not None:
        coords["dim"] = dims
        variables["ability"] = (("subject", "dim"), ability)
    else:
        variables["ability"] = ("subject", ability)
    if guessing is not None:
        variables["guessing"] = ("item", guessing)
    truth = xr.Dataset(variables, coords=coords, attrs=attrs)
    return truth if thresholds is None else _graded_truth(truth, thresholds, kind=str(attrs["kind"]))


#: The empty stretch of :func:`planted_gap_responses`' difficulties.
PLANTED_GAP = (-0.3, 1.2)


def planted_gap_responses(n_subjects: int, *, seed: int) -> tuple[ResponseData, np.ndarray]:
    """1PL responses to 60 items whose difficulties leave the stretch :data:`PLANTED_GAP` empty.

    36 difficulties are evenly spaced on [-2.4, -0.3] and 24 on [1.2, 2.4]; the ``n_subjects`` abilities are
    standard normal draws, standardised. Used to check that an audit finds a known gap.

    Returns
    -------
    (data, difficulty)
        The responses (one benchmark, ``"planted"``) and the 60 true difficulties.

    Examples
    --------
    >>> data, difficulty = planted_gap_responses(30, seed=1)
    >>> data.n_subjects, data.n_items
    (30, 60)
    >>> low, high = PLANTED_GAP
    >>> int(((difficulty > low) & (difficulty < high)).sum())  # no item inside the gap
    0
    """
    rng = np.random.default_rng(seed)
    ability = _standardise(rng.normal(size=n_subjects))
    difficulty = np.concatenate([np.linspace(-2.4, PLANTED_GAP[0], 36), np.linspace(PLANTED_GAP[1], 2.4, 24)])
    p = irt.probability(ability[:, None], difficulty[None, :])
    y = (rng.uniform(size=p.shape) < p).astype(float)
    subjects = [f"s{j:03d}" for j in range(n_subjects)]
    items = [f"q{i:02d}" for i in range(60)]
    frame = pd.DataFrame(
        {"subject": np.repeat(subjects, 60), "item": np.tile(items, n_subjects), "response": y.ravel()}
    )
    data = ResponseData.from_long(frame, items=pd.DataFrame({"item": items, "benchmark": "planted"}))
    return data, difficulty


def posterior_near_truth(
    data: ResponseData,
    truth: xr.Dataset,
    *,
    chains: int,
    draws: int,
    seed: int,
    sd_ability: float = 0.3,
    sd_difficulty: float = 0.15,
    sd_log_discrimination: float = 0.05,
) -> xr.Dataset:
    """A hand-built 2PL posterior: the true parameters plus independent normal scatter in every draw.

    For tests and benchmarks that need a posterior of a known shape and size without sampling (as ArviZ's
    tests build fake posteriors from known draws). Hyperparameters are the draws' own means and sds.

    Parameters
    ----------
    data, truth
        From :func:`simulate_responses` (``kind="2pl"``).
    chains, draws
        The posterior's size.
    seed
        Seeds the scatter.
    sd_ability, sd_difficulty, sd_log_discrimination
        The scatter's sd for each parameter.

    Returns
    -------
    xarray.Dataset
        ``ability`` (chain, draw, subject), ``difficulty`` and ``discrimination`` (chain, draw, item), and
        ``difficulty_mu``, ``difficulty_sd``, ``log_discrimination_mu``, ``log_discrimination_sd`` (chain,
        draw), with the data's ids as coordinates.

    Examples
    --------
    >>> data, truth = simulate_responses(40, 60, seed=1)
    >>> posterior = posterior_near_truth(data, truth, chains=2, draws=100, seed=2)
    >>> dict(posterior["difficulty"].sizes)
    {'chain': 2, 'draw': 100, 'item': 60}
    >>> error = posterior["difficulty"].mean(("chain", "draw")) - truth["difficulty"]
    >>> bool(abs(error).max() < 0.1)  # sd 0.15 scatter, averaged over 200 draws
    True
    """
    rng = np.random.default_rng(seed)
    shape = (chains, draws)

    def around(values: np.ndarray, sd: float) -> np.ndarray:
        return values + sd * rng.standard_normal((*shape, len(values)))

    difficulty = around(truth["difficulty"].values, sd_difficulty)
    log_a = around(np.log(truth["discrimination"].values), sd_log_discrimination)
    return xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), around(truth["ability"].values, sd_ability)),
            "difficulty": (("chain", "draw", "item"), difficulty),
            "discrimination": (("chain", "draw", "item"), np.exp(log_a)),
            "difficulty_mu": (("chain", "draw"), difficulty.mean(axis=-1)),
            "difficulty_sd": (("chain", "draw"), difficulty.std(axis=-1)),
            "log_discrimination_mu": (("chain", "draw"), log_a.mean(axis=-1)),
            "log_discrimination_sd": (("chain", "draw"), log_a.std(axis=-1)),
        },
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            "subject": data.subject_ids.to_numpy(dtype=str),
            "item": data.item_ids.to_numpy(dtype=str),
        },
    )


#: What :func:`planted_item_faults` plants, in the order it chooses the items.
ITEM_FAULTS = ("reversed", "flat", "dif")


def planted_item_faults(
    n_subjects: int,
    n_items: int,
    *,
    n_reversed: int = 5,
    n_flat: int = 5,
    n_leaked: int = 5,
    n_groups: int = 4,
    leak_shift: float = 3.0,
    seed: int,
    **simulate: object,
) -> tuple[ResponseData, xr.Dataset, pd.DataFrame]:
    """2PL responses (:func:`simulate_responses`) with reversed, flat and leaked items planted among sound ones.

    Subjects are spread evenly at random over ``n_groups`` groups (subject column ``group``: ``g0``, ``g1``, ...).
    A **reversed** item answers as a mis-keyed one, with the true slope's sign turned: P = sigmoid(-a (theta - b)).
    A **flat** item is answered at a constant rate whatever the ability, drawn uniformly from [0.15, 0.6]. A
    **leaked** item (one of the harder half, b > 0, so that a leak shows) is answered by one group's members as if
    ``leak_shift`` logits easier, the other subjects as the model says. The missing cells stay as simulated.

    Returns
    -------
    data : ResponseData
        The responses, with the subject column ``group``.
    truth : xarray.Dataset
        :func:`simulate_responses`' truth (the sound model of every item).
    planted : pandas.DataFrame
        One row per item, in the data's order: ``item``, ``fault`` (``"reversed"``, ``"flat"``, ``"dif"`` or
        ``""``), ``group`` (the leaking group, else ``""``) and ``direction`` (``"above"`` for a leak, else ``""``).

    Examples
    --------
    >>> data, truth, planted = planted_item_faults(60, 80, seed=1)
    >>> planted["fault"].value_counts().to_dict()
    {'': 65, 'dif': 5, 'flat': 5, 'reversed': 5}
    >>> sorted(data.subjects["group"].unique())
    ['g0', 'g1', 'g2', 'g3']
    """
    rng = np.random.default_rng(seed)
    data, truth = simulate_responses(n_subjects, n_items, seed=rng, **simulate)  # type: ignore[arg-type]
    if n_reversed + n_flat + n_leaked > n_items or n_groups < 2:
        raise SpecError(f"planted_item_faults: {n_items} items cannot hold the faults, or fewer than 2 groups")
    group = np.array([f"g{k}" for k in rng.permutation(np.arange(n_subjects) % n_groups)])
    b, a = truth["difficulty"].values, truth["discrimination"].values
    order = rng.permutation(n_items)
    reversed_, flat = order[:n_reversed], order[n_reversed : n_reversed + n_flat]
    rest = order[n_reversed + n_flat :]
    leaked = rest[b[rest] > 0][:n_leaked]
    fault = np.full(n_items, "", dtype=object)
    fault[reversed_], fault[flat], fault[leaked] = "reversed", "flat", "dif"
    leak_group = np.full(n_items, "", dtype=object)
    leak_group[leaked] = rng.choice(np.unique(group), size=len(leaked))

    frame = data.responses.copy()
    s, i = data.subject_codes, data.item_codes
    theta = truth["ability"].values[s]
    eta = a[i] * (theta - b[i])
    eta = np.where(fault[i] == "reversed", -eta, eta)
    eta = np.where((fault[i] == "dif") & (group[s] == leak_group[i]), eta + leak_shift, eta)
    p = irt.sigmoid_mix(eta)
    rate = rng.uniform(0.15, 0.6, size=n_items)
    p = np.where(fault[i] == "flat", rate[i], p)
    changed = fault[i] != ""
    frame.loc[changed, "response"] = (rng.uniform(size=int(changed.sum())) < p[changed]).astype("float64")
    subjects = pd.DataFrame({"subject": data.subject_ids.to_numpy(dtype=str), "group": group})
    planted_data = ResponseData.from_long(
        frame, items=data.items.reset_index(), subjects=subjects, source=f"{data.source}, faults planted"
    )
    planted = pd.DataFrame(
        {
            "item": data.item_ids.to_numpy(dtype=str),
            "fault": fault.astype(str),
            "group": leak_group.astype(str),
            "direction": np.where(fault == "dif", "above", ""),
        }
    )
    return planted_data, truth, planted
