"""Design families: simulated leaderboards that cross what real data vary in, for calibration studies.

A :class:`Design` is a *family* of data sets: each draw of :func:`simulate_design` picks the number of systems,
benchmarks and items, the item populations, the holes and the missing share from the family's ranges, then
draws 2PL responses. The truth is kept with the data, on the scale the fit identifies: the systems'
abilities are standardised (mean 0, sd 1 over the simulated systems, as the model standardises them), so the
true difficulties need no linking to be compared with the audit's.

What a family varies
--------------------
- ``systems``, ``benchmarks``, ``items`` (per benchmark): ranges ``(low, high)``, drawn uniformly.
- ``abilities``: ``"normal"``, ``"skewed"`` (a gamma with shape 2, long upper tail) or ``"heavy"``
  (Student t with 3 degrees of freedom), standardised.
- ``populations``: each benchmark's item population, drawn from this tuple: ``"uniform"`` over a stretch
  centred near 0, ``"normal"``, or ``"bimodal"`` (two normals). ``reach`` widens the populations beyond
  [-2.5, 2.5] (the default range of standardised normal abilities), so items lie past the range.
- ``spread_sd``: the log-normal sd of the benchmarks' spreads (1 = each benchmark as wide as the base).
- ``discrimination_sd``: the log-normal sd of the items' discriminations around their benchmark's, and
  ``benchmark_discrimination_sd`` that of the benchmarks' own typical discrimination.
- ``hole``: each benchmark gets an empty stretch of width drawn from this range (``(0, 0)``: none) centred
  anywhere in [-2.5, 2.5] (``hole_at="edge"``: against -2.5 or 2.5), its items drawn from the population
  less the hole.
- ``missing`` with ``missing_kind``: the share of cells removed, ``"random"`` or ``"not_at_random"``
  (weaker systems skip harder items: a cell's chance of being missing grows with b_i - theta_j).
- ``range``: the audit's range for the family, ``None`` for the audit's default.

What LLM leaderboards add (the ``llm_*`` families):

- ``clusters``: model families: the systems fall into this many families (drawn from the range; ``(0, 0)``: none),
  each system's ability its family's (drawn as ``abilities`` says) plus a smaller spread within it.
- ``choices``: each benchmark's number of options, drawn from this tuple; ``k > 0`` gives its items a chance
  floor, P = 1/k + (1 - 1/k) sigmoid(a (theta - b)) (multiple choice), 0 none (open answers).
- ``block_missing``: the share of (system, benchmark) pairs never run (every system keeps at least one benchmark).
- ``offset_sd``: the sd of the benchmarks' mean difficulties around 0 (0: within +-0.3 of each other).
- ``extremes``: the share of each benchmark's items that no system can answer or every system can (difficulty
  4-7 logits past 0, half each way).

:data:`FAMILIES` holds the families of the calibration study (``scripts/calibration_study.py``).
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData

__all__ = ["FAMILIES", "Design", "SimulatedDesign", "simulate_design"]

ABILITIES = ("normal", "skewed", "heavy")
POPULATIONS = ("uniform", "normal", "bimodal")
MISSING_KINDS = ("random", "not_at_random")
#: Half the width of the base item population: [-2.5, 2.5], the default range for standardised normal abilities.
BASE_HALF_WIDTH = 2.5


@dataclass(frozen=True)
class Design:
    """A family of simulated data sets (see the module docstring for each field)."""

    name: str
    systems: tuple[int, int]
    benchmarks: tuple[int, int] = (1, 1)
    items: tuple[int, int] = (60, 60)
    abilities: str = "normal"
    populations: tuple[str, ...] = ("uniform",)
    reach: float = 0.0
    spread_sd: float = 0.0
    discrimination_sd: float = 0.3
    benchmark_discrimination_sd: float = 0.0
    hole: tuple[float, float] = (0.0, 0.0)
    hole_at: str = "anywhere"
    missing: tuple[float, float] = (0.0, 0.0)
    missing_kind: str = "random"
    range: tuple[float, float] | None = None
    clusters: tuple[int, int] = (0, 0)
    choices: tuple[int, ...] = (0,)
    block_missing: tuple[float, float] = (0.0, 0.0)
    offset_sd: float = 0.0
    extremes: tuple[float, float] = (0.0, 0.0)
    description: str = ""

    def __post_init__(self) -> None:
        for name in ("systems", "benchmarks", "items", "hole", "missing", "clusters", "block_missing", "extremes"):
            low, high = getattr(self, name)
            if low > high or low < 0:
                raise SpecError(f"Design.{name} must be (low, high) with 0 <= low <= high, got {(low, high)}")
        if self.systems[0] < 2 or self.items[0] < 2 or self.benchmarks[0] < 1:
            raise SpecError("a design needs at least 2 systems, 2 items per benchmark and 1 benchmark")
        if self.missing[1] >= 0.9:
            raise SpecError(f"Design.missing must stay below 0.9, got {self.missing}")
        if self.block_missing[1] >= 0.9 or self.extremes[1] >= 0.5:
            raise SpecError("Design.block_missing must stay below 0.9 and Design.extremes below 0.5")
        if not self.choices or any(int(k) < 0 or int(k) == 1 for k in self.choices):
            raise SpecError(
                f"Design.choices must hold 0 (open answers) or option counts of 2 or more, got {self.choices}"
            )
        checks = (("abilities", ABILITIES), ("missing_kind", MISSING_KINDS), ("hole_at", ("anywhere", "edge")))
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise SpecError(f"Design.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        unknown = [p for p in self.populations if p not in POPULATIONS]
        if unknown or not self.populations:
            raise SpecError(f"Design.populations must be drawn from {POPULATIONS}, got {self.populations}")

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain values."""
        return asdict(self)


@dataclass(frozen=True)
class SimulatedDesign:
    """One data set of a family: the responses, the truth and what was drawn.

    Attributes
    ----------
    data
        The responses, items labelled by ``benchmark``.
    truth
        ``ability`` (subject; standardised; coord ``family``, the model family, 0 without ``clusters``),
        ``difficulty`` and ``discrimination`` (item; coord ``benchmark``).
    drawn
        What the family left to chance, e.g. ``{"systems": 112, "benchmarks": 3, "holes": [...], ...}``.
    design
        The family.
    seed
        The seed it was drawn with.
    """

    data: ResponseData
    truth: xr.Dataset
    drawn: dict[str, Any] = field(default_factory=dict)
    design: Design | None = None
    seed: int = 0


def _abilities(rng: np.random.Generator, kind: str, n: int, clusters: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Standardised abilities of ``n`` systems and each one's family (all 0 without ``clusters``); with ``clusters``,
    each a family's ability (drawn as ``kind`` says) plus a spread within the family of half their sd."""
    size = clusters if clusters > 0 else n
    if kind == "normal":
        raw = rng.normal(size=size)
    elif kind == "skewed":
        raw = rng.gamma(2.0, size=size)
    else:
        raw = rng.standard_t(3.0, size=size)
    family = np.zeros(n, dtype=int)
    if clusters > 0:
        family = rng.integers(clusters, size=n)
        raw = raw[family] + rng.normal(0.0, 0.5 * max(float(raw.std()), 0.5), size=n)
    return (raw - raw.mean()) / raw.std(), family


def _population_draw(rng: np.random.Generator, kind: str, n: int, centre: float, half: float) -> np.ndarray:
    if kind == "uniform":
        return rng.uniform(centre - half, centre + half, size=n)
    if kind == "normal":
        return rng.normal(centre, half / 2.0, size=n)
    side = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    return rng.normal(centre + side * half / 2.0, half / 4.0)


def _items_of_benchmark(
    rng: np.random.Generator, design: Design, n: int, kind: str
) -> tuple[np.ndarray, tuple[float, float] | None]:
    """``n`` difficulties from the population ``kind``, less a hole when the design plants one."""
    spread = float(np.exp(rng.normal(0.0, design.spread_sd))) if design.spread_sd > 0 else 1.0
    half = (BASE_HALF_WIDTH + design.reach) * spread
    centre = float(rng.uniform(-0.3, 0.3)) + (float(rng.normal(0.0, design.offset_sd)) if design.offset_sd > 0 else 0.0)
    width = float(rng.uniform(*design.hole))
    hole = None
    if width > 0:
        if design.hole_at == "edge":
            side = -1.0 if rng.uniform() < 0.5 else 1.0
            mid = side * (BASE_HALF_WIDTH - width / 2.0 + float(rng.uniform(-0.3, 0.3)))
        else:
            mid = float(rng.uniform(-BASE_HALF_WIDTH, BASE_HALF_WIDTH))
        hole = (mid - width / 2.0, mid + width / 2.0)
    kept: list[np.ndarray] = []
    have = 0
    for _ in range(1000):
        x = _population_draw(rng, kind, 2 * n, centre, half)
        if hole is not None:
            x = x[(x < hole[0]) | (x > hole[1])]
        kept.append(x)
        have += len(x)
        if have >= n:
            break
    else:  # pragma: no cover - a hole wider than the population
        raise SpecError(f"design {design.name!r}: the hole {hole} leaves no room for {n} items")
    items = np.concatenate(kept)[:n]
    share = float(rng.uniform(*design.extremes)) if design.extremes[1] > 0 else 0.0
    if share > 0:  # items no system can answer, or every system can
        picked = rng.choice(n, size=round(share * n), replace=False)
        sign = np.where(rng.uniform(size=len(picked)) < 0.5, -1.0, 1.0)
        items[picked] = sign * rng.uniform(4.0, 7.0, size=len(picked))
    return items, hole


def _missing_cells(
    rng: np.random.Generator, design: Design, ability: np.ndarray, difficulty: np.ndarray, bench: np.ndarray
) -> tuple[np.ndarray, float]:
    """A (subject, item) mask of observed cells; every subject and item keeps at least one."""
    share = float(rng.uniform(*design.missing))
    n_sub, n_item = len(ability), len(difficulty)
    blocks = _blocks_run(rng, design, n_sub, bench)
    if share <= 0:
        return blocks, 0.0
    if design.missing_kind == "random":
        p = np.full((n_sub, n_item), share)
    else:  # weaker systems skip harder items: the chance grows with b - theta, scaled to the share
        raw = irt.sigmoid_mix(1.5 * (difficulty[None, :] - ability[:, None]))
        p = np.clip(raw * share / raw.mean(), 0.0, 0.95)
    observed = (rng.uniform(size=p.shape) >= p) & blocks
    for j in np.flatnonzero(~observed.any(axis=1)):
        observed[j, rng.integers(n_item)] = True
    for i in np.flatnonzero(~observed.any(axis=0)):
        observed[rng.integers(n_sub), i] = True
    return observed, share


def _blocks_run(rng: np.random.Generator, design: Design, n_sub: int, bench: np.ndarray) -> np.ndarray:
    """A (subject, item) mask of the (system, benchmark) pairs run: ``design.block_missing`` of the pairs are not,
    every system keeping at least one benchmark and every benchmark at least two systems."""
    names, codes = np.unique(bench, return_inverse=True)
    share = float(rng.uniform(*design.block_missing)) if design.block_missing[1] > 0 else 0.0
    run = np.ones((n_sub, len(names)), dtype=bool)
    if share > 0 and len(names) > 1:
        run = rng.uniform(size=run.shape) >= share
        for j in np.flatnonzero(~run.any(axis=1)):
            run[j, rng.integers(len(names))] = True
        for k in np.flatnonzero(run.sum(axis=0) < 2):
            run[rng.choice(n_sub, size=2, replace=False), k] = True
    return run[:, codes]


def simulate_design(design: Design, *, seed: int) -> SimulatedDesign:
    """Draw one data set of ``design`` (2PL responses; the truth on the fitted scale).

    Examples
    --------
    >>> from irtbayes.data.designs import FAMILIES, simulate_design
    >>> sim = simulate_design(FAMILIES["leaderboard"], seed=1)
    >>> sim.data.n_subjects == sim.drawn["systems"], sim.drawn["benchmarks"] == sim.data.items["benchmark"].nunique()
    (True, True)
    >>> round(float(sim.truth["ability"].mean()), 6), round(float(sim.truth["ability"].std()), 6)
    (0.0, 1.0)
    """
    # the family's name enters the seed, so families with the same ranges still draw different designs
    rng = np.random.default_rng([int(seed), zlib.crc32(design.name.encode()), 20261203])
    n_sub = int(rng.integers(design.systems[0], design.systems[1] + 1))
    n_bench = int(rng.integers(design.benchmarks[0], design.benchmarks[1] + 1))
    n_clusters = int(rng.integers(design.clusters[0], design.clusters[1] + 1)) if design.clusters[1] > 0 else 0
    ability, family = _abilities(rng, design.abilities, n_sub, n_clusters)
    difficulty, discrimination, bench, kinds, holes, sizes, floors = [], [], [], [], [], [], []
    for k in range(n_bench):
        n = int(rng.integers(design.items[0], design.items[1] + 1))
        kind = str(rng.choice(list(design.populations)))
        b, hole = _items_of_benchmark(rng, design, n, kind)
        typical = rng.normal(0.0, design.benchmark_discrimination_sd) if design.benchmark_discrimination_sd else 0.0
        a = np.exp(typical + rng.normal(0.0, design.discrimination_sd, size=n))
        options = int(rng.choice(list(design.choices))) if any(design.choices) else 0
        floors.append(np.full(n, 1.0 / options if options else 0.0))
        difficulty.append(b)
        discrimination.append(a)
        bench.append(np.full(n, f"bench{k:02d}"))
        kinds.append(kind)
        holes.append(None if hole is None else [round(hole[0], 6), round(hole[1], 6)])
        sizes.append(n)
    b_all, a_all, bench_all = np.concatenate(difficulty), np.concatenate(discrimination), np.concatenate(bench)
    floor = np.concatenate(floors)
    p = irt.probability(ability[:, None], b_all[None, :], a_all[None, :], floor)
    y = (rng.uniform(size=p.shape) < p).astype(float)
    observed, share = _missing_cells(rng, design, ability, b_all, bench_all)
    subjects = np.array([f"sys{j:03d}" for j in range(n_sub)])
    items = np.array([f"item{i:04d}" for i in range(len(b_all))])
    rows, cols = np.nonzero(observed)
    frame = pd.DataFrame({"subject": subjects[rows], "item": items[cols], "response": y[rows, cols]})
    item_table = pd.DataFrame({"item": items, "benchmark": bench_all})
    if floor.any():  # the number of options, as a loader reads it from multiple-choice items (0: open answers)
        item_table["n_options"] = np.where(floor > 0, np.round(1.0 / np.where(floor > 0, floor, 1.0)), 0).astype(int)
    data = ResponseData.from_long(frame, items=item_table, source=f"design {design.name} (seed {seed})")
    truth = xr.Dataset(
        {
            "ability": ("subject", ability),
            "difficulty": ("item", b_all),
            "discrimination": ("item", a_all),
        },
        coords={"subject": subjects, "item": items, "benchmark": ("item", bench_all), "family": ("subject", family)},
        attrs={"design": design.name, "seed": int(seed)},
    )
    drawn = {
        "systems": n_sub,
        "benchmarks": n_bench,
        "items": sizes,
        "populations": kinds,
        "holes": holes,
        "missing": round(share, 6),
        "missing_observed": round(float(1.0 - observed.mean()), 6),
    }
    if n_clusters:
        drawn["clusters"] = n_clusters
    if floor.any():
        drawn["chance_floor"] = [round(float(floor[bench_all == name][0]), 6) for name in np.unique(bench_all)]
    return SimulatedDesign(data=data, truth=truth, drawn=drawn, design=design, seed=int(seed))


#: The calibration study's families (``scripts/calibration_study.py``; ``docs/validation.md``).
FAMILIES: dict[str, Design] = {
    d.name: d
    for d in (
        Design(
            "one_uniform",
            systems=(80, 200),
            items=(40, 120),
            hole=(0.0, 2.0),
            range=(-2.5, 2.5),
            description="one benchmark, items uniform inside the fixed range, a hole of 0-2 logits",
        ),
        Design(
            "leaderboard",
            systems=(80, 150),
            benchmarks=(3, 5),
            items=(40, 120),
            populations=("uniform", "normal"),
            reach=1.0,
            spread_sd=0.3,
            benchmark_discrimination_sd=0.3,
            hole=(0.0, 1.5),
            missing=(0.05, 0.05),
            description="several benchmarks under one hierarchy, populations past the range, 5% missing",
        ),
        Design(
            "skewed_abilities",
            systems=(80, 200),
            benchmarks=(1, 3),
            items=(30, 100),
            abilities="skewed",
            populations=("normal", "bimodal"),
            reach=0.5,
            hole=(0.0, 2.0),
            missing=(0.0, 0.1),
            description="abilities with a long upper tail, normal and bimodal item populations",
        ),
        Design(
            "heavy_tails",
            systems=(80, 300),
            benchmarks=(2, 4),
            items=(30, 80),
            abilities="heavy",
            populations=("uniform", "bimodal"),
            reach=1.0,
            hole=(0.0, 1.5),
            missing=(0.0, 0.2),
            range=(-2.5, 2.5),
            description="heavy-tailed abilities (t, 3 df), a fixed range",
        ),
        Design(
            "edge_holes",
            systems=(80, 200),
            benchmarks=(1, 2),
            items=(60, 200),
            populations=("uniform", "normal"),
            reach=0.5,
            hole=(1.0, 2.0),
            hole_at="edge",
            description="holes of 1-2 logits beside the range's ends",
        ),
        Design(
            "missing_not_at_random",
            systems=(80, 200),
            benchmarks=(2, 3),
            items=(40, 120),
            populations=("uniform", "normal", "bimodal"),
            reach=0.5,
            hole=(0.0, 1.5),
            missing=(0.2, 0.4),
            missing_kind="not_at_random",
            description="20-40% of cells missing, weaker systems skipping harder items",
        ),
        Design(
            "wide_spread",
            systems=(100, 300),
            benchmarks=(2, 4),
            items=(30, 150),
            populations=("uniform", "normal", "bimodal"),
            reach=1.5,
            spread_sd=0.5,
            discrimination_sd=0.5,
            benchmark_discrimination_sd=0.5,
            hole=(0.0, 2.0),
            missing=(0.0, 0.1),
            description="spreads and discriminations log-normal with sd 0.5, populations far past the range",
        ),
        Design(
            "few_systems",
            systems=(30, 60),
            benchmarks=(1, 3),
            items=(30, 100),
            populations=("uniform", "normal"),
            reach=0.5,
            hole=(0.0, 2.0),
            missing=(0.0, 0.1),
            description="30-60 systems",
        ),
        Design(
            "few_items",
            systems=(80, 200),
            benchmarks=(2, 5),
            items=(30, 40),
            populations=("uniform", "normal"),
            reach=0.5,
            hole=(0.0, 1.5),
            missing=(0.0, 0.05),
            description="2-5 benchmarks of 30-40 items",
        ),
        Design(
            "llm_leaderboard",
            systems=(60, 400),
            benchmarks=(1, 6),
            items=(60, 500),
            populations=("uniform", "normal", "bimodal"),
            reach=1.0,
            spread_sd=0.3,
            benchmark_discrimination_sd=0.3,
            hole=(0.0, 1.5),
            missing=(0.0, 0.05),
            clusters=(4, 15),
            choices=(0, 0, 4, 10),
            block_missing=(0.0, 0.3),
            offset_sd=1.0,
            extremes=(0.0, 0.08),
            description="LLM leaderboards: model families, multiple-choice floors, impossible and trivial items, "
            "benchmarks run by some systems only, mean difficulties far apart",
        ),
        Design(
            "llm_multiple_choice",
            systems=(60, 250),
            benchmarks=(2, 4),
            items=(60, 300),
            populations=("uniform", "normal"),
            reach=0.5,
            benchmark_discrimination_sd=0.3,
            hole=(0.0, 1.5),
            missing=(0.0, 0.05),
            clusters=(3, 10),
            choices=(4,),
            block_missing=(0.1, 0.3),
            extremes=(0.02, 0.08),
            description="multiple-choice benchmarks of close mean difficulty (4 options: a floor of 1/4), model "
            "families, block-missing results",
        ),
    )
}
