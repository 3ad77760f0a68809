"""Simulated item responses with their true parameters, for recovery tests, calibration checks and benchmarks.

The generator follows the models in :mod:`irtbayes.model.build`: item difficulties are drawn around benchmark
means, which are drawn around domain means; log-discriminations likewise. Abilities are standard normal
and then standardised exactly (mean 0, sd 1 over the simulated subjects), which is the scale on which the
default model identifies them, so the truth can be compared with posterior draws directly.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData

__all__ = ["PLANTED_GAP", "planted_gap_responses", "posterior_near_truth", "simulate_responses"]


def _standardise(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=0)) / x.std(axis=0)


def simulate_responses(
    n_subjects: int,
    n_items: int,
    *,
    kind: Literal["1pl", "2pl", "3pl"] = "2pl",
    n_benchmarks: int = 1,
    n_domains: int = 1,
    dims: Literal["one", "domain"] = "one",
    missing: float = 0.1,
    n_trials: int = 1,
    n_options: int = 4,
    difficulty_sd: float = 1.0,
    benchmark_sd: float = 0.5,
    domain_sd: float = 0.5,
    log_discrimination_sd: float = 0.3,
    ability_corr: float = 0.6,
    seed: int | np.random.Generator | None = None,
) -> tuple[ResponseData, xr.Dataset]:
    """Simulate item responses from a 1PL, 2PL or 3PL model with benchmark and domain structure.

    Parameters
    ----------
    n_subjects, n_items
        Size of the response matrix before cells are removed.
    kind
        ``"1pl"`` (one shared discrimination), ``"2pl"`` or ``"3pl"`` (a lower asymptote per item, around
        chance ``1 / n_options``).
    n_benchmarks, n_domains
        Items are spread evenly over benchmarks (labels ``bench01``...); benchmarks over domains
        (``domain1``...). With one of each, the labels are left out.
    dims
        ``"domain"`` gives one ability per domain (correlation ``ability_corr`` between every pair), each
        item loading on its domain's ability only.
    missing
        Share of (subject, item) cells removed at random; every subject and item keeps one response.
    n_trials
        1 gives 0/1 responses; more gives fractional scores (the share of ``n_trials`` Bernoulli trials).
    n_options
        Options per item, stored in the item metadata (``n_options``) and used as the 3PL chance level.
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
        3PL, ``guessing`` (item); item coords ``benchmark`` and ``domain``.

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
    rng = np.random.default_rng(seed)

    subject_ids = np.array([f"subject{j:03d}" for j in range(n_subjects)])
    item_ids = np.array([f"item{i:05d}" for i in range(n_items)])
    bench_ids = np.array([f"bench{k:02d}" for k in range(n_benchmarks)])
    domain_ids = np.array([f"domain{d}" for d in range(n_domains)])
    bench_of_item, domain_of_bench, domain_of_item = _layout(n_items, n_benchmarks, n_domains)
    sds = (domain_sd, benchmark_sd, difficulty_sd, log_discrimination_sd)
    difficulty, discrimination = _item_parameters(rng, kind, bench_of_item, domain_of_bench, sds=sds)

    ability, theta = _abilities(
        rng, n_subjects, domain_of_item, n_domains=n_domains if dims == "domain" else 1, corr=ability_corr
    )
    response, guessing = _draw_responses(rng, kind, theta, difficulty, discrimination, n_options, n_trials)

    labels = {"benchmark": (n_benchmarks, bench_ids[bench_of_item]), "domain": (n_domains, domain_ids[domain_of_item])}
    cells = _observed_cells(rng, n_subjects, n_items, missing=missing)
    source = f"simulated {kind} ({n_subjects} subjects x {n_items} items)"
    data = _response_data(response, cells, subject_ids, item_ids, n_options=n_options, labels=labels, source=source)

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
    )
    return data, truth


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
    n_options: int,
    labels: dict[str, tuple[int, np.ndarray]],
    source: str,
) -> ResponseData:
    """The kept (row, column) cells as long data; items get ``n_options`` and each label whose count is over 1."""
    rows, cols = cells
    frame = pd.DataFrame({"subject": subject_ids[rows], "item": item_ids[cols], "response": response[rows, cols]})
    items = pd.DataFrame({"item": item_ids, "n_options": np.full(len(item_ids), n_options)})
    items = items.assign(**{name: values for name, (count, values) in labels.items() if count > 1})
    return ResponseData.from_long(frame, items=items, source=source)


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
    if kind not in ("1pl", "2pl", "3pl"):
        raise SpecError(f"simulate_responses: kind must be '1pl', '2pl' or '3pl', got {kind!r}")
    if dims not in ("one", "domain"):
        raise SpecError(f"simulate_responses: dims must be 'one' or 'domain', got {dims!r}")
    if n_benchmarks < 1 or n_domains < 1 or n_domains > n_benchmarks or n_benchmarks > n_items:
        raise SpecError(
            f"simulate_responses: need 1 <= n_domains ({n_domains}) <= n_benchmarks ({n_benchmarks}) <= n_items"
        )
    if dims == "domain" and n_domains < 2:
        raise SpecError("simulate_responses: dims='domain' needs n_domains >= 2")


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
) -> xr.Dataset:
    """The true parameters of a simulation, labelled as a fit's posterior is."""
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
    return xr.Dataset(variables, coords=coords, attrs=attrs)


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
