"""Helpers shared by the notebooks (not part of the irtbayes package): settings read from the environment, the
populations of systems and how each is subsampled, fit-or-load, and small formatting helpers.

Environment
-----------
``IRTBAYES_NB_MODE``          ``full`` (default) or ``fast`` (tiny sizes, for the test suite).
``IRTBAYES_NB_OUT``           Output folder (default ``notebooks/results/`` in full mode, a temporary folder in fast
                              mode). Fits are saved under ``<out>/fits/`` and reused when present.
``IRTBAYES_NB_SAMPLER``       Full mode: each population's own (``Population.full``: NUTS with nutpie where it converges
                              on a 2-core machine, the validated approximate tier ``approx`` where NUTS is out of
                              reach); set, it applies to every population (``nutpie``, ``pymc``, ``approx``,
                              ``advi``, ``pathfinder``). Fast mode: ``advi``.
``IRTBAYES_NB_DRAWS``         Kept draws per chain (full: per population; fast 150).
``IRTBAYES_NB_TUNE``          Warm-up draws per chain (full: per population; fast 200; ADVI runs at least 2,000 steps).
``IRTBAYES_NB_CHAINS``        Chains (full: per population; fast 1).
``IRTBAYES_NB_MAX_ITEMS``     At most this many items per benchmark, in every population (default: per population).
``IRTBAYES_NB_MAX_SUBJECTS``  At most this many subjects per population (default: per population).
``IRTBAYES_NB_SEED``          Seed of the subsamples and the samplers (default 2026).
``IRTBAYES_DATA_DIR``         The external data sets (default ``../shared/data`` beside the repository, when present):
                              converted ones, or their upstream files, which are converted once into a temporary
                              folder with ``scripts/convert_data.py``.
"""

from __future__ import annotations

import hashlib
import html
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.core.errors import FitError
from irtbayes.data import registry as datasets
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit
from irtbayes.fitting.storage import load_fit, save_fit
from irtbayes.model.spec import ModelSpec

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "notebooks" / "results"


# ============================================================================================ settings
@dataclass(frozen=True)
class Settings:
    """What the environment asked for (see the module docstring)."""

    mode: str
    out: Path
    sampler: str | None
    draws: int | None
    tune: int | None
    chains: int | None
    max_items: int | None
    max_subjects: int | None
    seed: int
    data_dir: str | None

    @property
    def fast(self) -> bool:
        return self.mode == "fast"

    @property
    def fits(self) -> Path:
        return self.out / "fits"

    @property
    def figures(self) -> Path:
        return self.out / "figures"

    def describe(self) -> str:
        def cap(value: int | None) -> str:
            return "per population" if value is None else ("all" if value == NO_CAP else str(value))

        cap_i, cap_s = cap(self.max_items), cap(self.max_subjects)
        sampling = "per population" if self.sampler is None else self.sampler
        for what, value in (("chains", self.chains), ("draws", self.draws), ("tune", self.tune)):
            if value is not None:
                sampling += f", {what} {value}"
        return (
            f"mode {self.mode}; sampler {sampling}; "
            f"items per benchmark: {cap_i}; subjects per population: {cap_s}; seed {self.seed}; out {self.out}"
        )


NO_CAP = -1  #: a cap of ``all`` in the environment: no limit


def _env_int(name: str, default: int | None) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if value.lower() in ("none", "all"):
        return NO_CAP
    number = int(value)
    if number < 1:
        raise ValueError(f"{name} must be a positive whole number or 'all', got {value!r}")
    return number


def settings() -> Settings:
    """Read the notebook settings from the environment; make the output folders; point at the data."""
    mode = os.environ.get("IRTBAYES_NB_MODE", "full").strip().lower() or "full"
    if mode not in ("fast", "full"):
        raise ValueError(f"IRTBAYES_NB_MODE must be 'fast' or 'full', got {mode!r}")
    fast = mode == "fast"
    out_env = os.environ.get("IRTBAYES_NB_OUT", "").strip()
    if out_env:
        out = Path(out_env).expanduser().resolve()
    elif fast:
        out = Path(tempfile.gettempdir()) / "irtbayes-notebooks-fast"
    else:
        out = RESULTS
    data_dir = os.environ.get(datasets.DATA_DIR_ENV, "").strip() or None
    if data_dir is None:
        shared = REPO.parent / "shared" / "data"
        if shared.is_dir():
            data_dir = str(shared)
    if data_dir is not None:
        os.environ[datasets.DATA_DIR_ENV] = str(converted_data(Path(data_dir)))
    s = Settings(
        mode=mode,
        out=out,
        sampler=os.environ.get("IRTBAYES_NB_SAMPLER", "").strip() or ("advi" if fast else None),
        draws=_env_int("IRTBAYES_NB_DRAWS", 150 if fast else None),
        tune=_env_int("IRTBAYES_NB_TUNE", 200 if fast else None),
        chains=_env_int("IRTBAYES_NB_CHAINS", 1 if fast else None),
        max_items=_env_int("IRTBAYES_NB_MAX_ITEMS", None),
        max_subjects=_env_int("IRTBAYES_NB_MAX_SUBJECTS", None),
        seed=int(os.environ.get("IRTBAYES_NB_SEED", "").strip() or 2026),
        data_dir=data_dir,
    )
    s.out.mkdir(parents=True, exist_ok=True)
    s.figures.mkdir(parents=True, exist_ok=True)
    return s


def converted_data(root: Path) -> Path:
    """``root`` if it holds the converted external data sets of the populations; else a folder into which the
    upstream files in ``root`` are converted once (``scripts/convert_data.py``)."""
    names = [p.dataset for p in POPULATIONS if datasets.manifests()[p.dataset].get("storage") == "external"]
    if all((root / name / datasets.MANIFEST).is_file() for name in names):
        return root
    converter = REPO / "scripts" / "convert_data.py"
    key = hashlib.sha1(str(root.resolve()).encode() + converter.read_bytes()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"irtbayes-data-{key}"
    sys.path.insert(0, str(converter.parent))
    from convert_data import convert

    for name in names:
        upstream = root / datasets.manifests()[name]["upstream"]
        if upstream.is_dir() and not (cache / name / datasets.MANIFEST).is_file():
            convert(name, root, cache)
    return cache


# ============================================================================================ populations
@dataclass(frozen=True)
class Population:
    """One population of systems calibrated together: a registered data set, how it is subsampled and fitted.

    ``items_full`` / ``items_fast``: at most this many items per benchmark (None: all); ``subjects_full`` /
    ``subjects_fast``: at most this many subjects (None: all), drawn at random with the notebook seed.
    ``full``: the fit's settings in the full mode (keyword arguments of :func:`irtbayes.fitting.fit`; those not given take
    irtbayes' defaults). ``spec``: fields of the population's :class:`~irtbayes.model.spec.ModelSpec` beyond ``kind``.
    """

    name: str
    dataset: str
    options: tuple[tuple[str, Any], ...] = ()
    items_full: int | None = None
    items_fast: int | None = None
    subjects_full: int | None = None
    subjects_fast: int | None = None
    kind: str = "2pl"
    why: str = ""
    full: tuple[tuple[str, Any], ...] = (("sampler", "nutpie"),)
    spec: tuple[tuple[str, Any], ...] = ()

    def model_spec(self) -> ModelSpec:
        return ModelSpec(kind=self.kind, **dict(self.spec))


#: NUTS at irtbayes' defaults (4 chains, drawing until the convergence checks pass): what ``make run``
#: fits, so the saved fit of ``make run`` can be reused (``scripts/run_notebooks.py --reuse-make-run``)
NUTS_DEFAULT = (("sampler", "nutpie"), ("chains", 4))
#: NUTS for the small populations, drawing until the convergence checks pass (at most 4,000 per chain, 15 min)
NUTS_UNTIL_CONVERGED = (
    ("sampler", "nutpie"),
    ("chains", 4),
    ("draws", 4000),
    ("tune", 1000),
    ("until_converged", True),
)
#: the approximate tier (validated against NUTS: docs/validation.md, "The approximate tier against NUTS"), where NUTS is out of reach
APPROX = (("sampler", "approx"), ("chains", 4))

POPULATIONS: tuple[Population, ...] = (
    Population(
        "mmlu_pro",
        "mmlu_pro",
        items_fast=6,
        why="29 LLMs on all 12,032 questions of MMLU-Pro's 14 categories",
        full=NUTS_DEFAULT,
    ),
    Population(
        "openllm",
        "openllm_tinybench",
        items_fast=8,
        subjects_fast=40,
        why=(
            "every Open LLM Leaderboard v1 system with results on the tinyBenchmarks items of at least one of the "
            "five benchmarks (6,122 systems x 493 items, 2.0M responses): beyond NUTS on a 2-core machine, so the "
            "approximate tier"
        ),
        full=APPROX,
    ),
    Population(
        "nlu",
        "nlu_vania2021",
        items_fast=5,
        why=(
            "90 fine-tuned encoder checkpoints on all 82,756 items of 29 NLU test sets (7.4M responses): beyond NUTS "
            "on a 2-core machine, so the approximate tier"
        ),
        full=APPROX,
    ),
    Population(
        "chembench",
        "chembench",
        items_fast=30,
        why=(
            "21 LLMs and one agent on ChemBench's 2,854 questions; item parameters non-centred (with 22 responses an "
            "item's difficulty is prior-dominated: the default centred difficulties gave E-BFMI 0.20 in every chain "
            "after 4 x 4,000 draws, non-centred ones 0.59 and converged at 4 x 1,000)"
        ),
        full=NUTS_UNTIL_CONVERGED,
        spec=(("item_centring", "noncentred"),),
    ),
    Population(
        "jailbreakbench",
        "jailbreakbench",
        items_fast=40,
        why="18 (attack, target LLM) pairs on JailbreakBench's 100 behaviours; 1 = the jailbreak was resisted",
        full=NUTS_UNTIL_CONVERGED,
    ),
    Population(
        "xstest",
        "xstest",
        items_fast=60,
        kind="1pl",
        why=(
            "5 LLM setups on XSTest's 450 prompts; 1 = complied with a safe prompt or refused an unsafe one; with "
            "5 systems an item's discrimination would rest on 5 responses, so the 1PL (Rasch) model is used; target "
            "acceptance 0.95 (at 0.8 the fit had 3 divergences)"
        ),
        full=(*NUTS_UNTIL_CONVERGED, ("target_accept", 0.95)),
    ),
)
BY_NAME = {p.name: p for p in POPULATIONS}


#: Populations whose ``benchmark`` column holds one benchmark's categories: the benchmark's name. The whole
#: benchmark is audited as the population's ``all`` scope, its categories as sub-benchmarks.
CATEGORIES_OF = {"mmlu_pro": "mmlu_pro"}
#: The domain of a benchmark whose categories carry their own domains.
BENCHMARK_DOMAIN = {"mmlu_pro": "knowledge"}
#: Benchmarks of which a population took a subset: (population, benchmark) -> (size of the benchmark's own test
#: set, what the subset is). The Open LLM Leaderboard population answered the tinyBenchmarks anchor items
#: (Polo et al., 2024); the full test sets are ARC-Challenge's test split, GSM8K's test split, HellaSwag's
#: validation split, TruthfulQA's multiple-choice questions and WinoGrande's validation split, as the leaderboard
#: scored them.
ITEM_SUBSETS = {
    ("openllm", "arc_challenge"): (1172, "tinyBenchmarks anchor subset"),
    ("openllm", "gsm8k"): (1319, "tinyBenchmarks anchor subset"),
    ("openllm", "hellaswag"): (10042, "tinyBenchmarks anchor subset"),
    ("openllm", "truthfulqa"): (817, "tinyBenchmarks anchor subset"),
    ("openllm", "winogrande"): (1267, "tinyBenchmarks anchor subset"),
}


def caps(pop: Population, s: Settings) -> tuple[int | None, int | None]:
    """(items per benchmark, subjects) caps for ``pop`` under ``s``: the environment overrides the defaults."""
    items = s.max_items if s.max_items is not None else (pop.items_fast if s.fast else pop.items_full)
    subjects = s.max_subjects if s.max_subjects is not None else (pop.subjects_fast if s.fast else pop.subjects_full)
    return (None if items == NO_CAP else items), (None if subjects == NO_CAP else subjects)


def load_population(pop: Population | str, s: Settings) -> tuple[ResponseData, dict[str, Any]]:
    """The population's data (subsampled as documented) and a record of what was kept.

    Subjects are drawn first (uniformly at random without replacement), then items: per benchmark, uniformly
    at random without replacement. Both draws are seeded, so every notebook rebuilds the same data (and the
    saved fits' data checksums match).
    """
    pop = BY_NAME[pop] if isinstance(pop, str) else pop
    full = datasets.load_dataset(pop.dataset, **dict(pop.options))
    max_items, max_subjects = caps(pop, s)
    rng = np.random.default_rng(s.seed)
    subjects = full.subject_ids
    if max_subjects is not None and len(subjects) > max_subjects:
        subjects = pd.Index(sorted(rng.choice(subjects.to_numpy(dtype=str), size=max_subjects, replace=False)))
    items = full.item_ids
    if max_items is not None:
        bench = full.items["benchmark"].astype(str)
        keep = []
        for name in dict.fromkeys(bench):
            ids = full.item_ids[(bench == name).to_numpy()]
            if len(ids) > max_items:
                ids = pd.Index(rng.choice(ids.to_numpy(dtype=str), size=max_items, replace=False))
            keep.extend(ids)
        items = pd.Index(keep)
    data = full
    if len(subjects) < full.n_subjects or len(items) < full.n_items:
        data = full.subset(subjects=list(subjects), items=list(items))
    per_bench_total = full.items["benchmark"].astype(str).value_counts()
    record = {
        "population": pop.name,
        "dataset": pop.dataset,
        "options": dict(pop.options),
        "subjects_total": full.n_subjects,
        "items_total": full.n_items,
        "subjects": data.n_subjects,
        "items": data.n_items,
        "responses": data.n_responses,
        "max_items_per_benchmark": max_items,
        "max_subjects": max_subjects,
        "items_total_per_benchmark": {str(k): int(v) for k, v in per_bench_total.items()},
        "why": pop.why,
    }
    return data, record


def subsample_note(record: dict[str, Any]) -> str:
    """One phrase saying what part of the population was calibrated."""
    parts = []
    if record["subjects"] < record["subjects_total"]:
        parts.append(f"random {record['subjects']} of {record['subjects_total']} subjects")
    if record["items"] < record["items_total"]:
        parts.append(f"random <= {record['max_items_per_benchmark']} items per benchmark")
    if record["options"]:
        parts.append(", ".join(f"{k}={v}" for k, v in record["options"].items()))
    return "; ".join(parts) if parts else "all subjects and items"


# ============================================================================================ fitting
def fit_settings(s: Settings, pop: Population | str | None = None, *, sampler: str | None = None) -> dict[str, Any]:
    """Keyword arguments of :func:`irtbayes.fitting.fit` for a fit in this run.

    Full mode: the population's own settings (``Population.full``; a fit outside the populations gets NUTS at
    irtbayes' defaults), with any ``IRTBAYES_NB_*`` sampler setting (or ``sampler``) overriding them. Fast mode: the
    notebook's (ADVI, 1 x 150).
    """
    pop = BY_NAME.get(pop, None) if isinstance(pop, str) else pop
    out: dict[str, Any] = dict(pop.full) if (pop is not None and not s.fast) else {"sampler": "nutpie"}
    if s.sampler is not None:
        out = {"sampler": s.sampler}
    for key in ("chains", "draws", "tune"):
        if getattr(s, key) is not None:
            out[key] = getattr(s, key)
    if sampler is not None:
        out = {"sampler": sampler, **{k: v for k, v in out.items() if k in ("chains", "draws", "tune")}}
    if out.get("sampler") != "nutpie":
        out.pop("until_converged", None)
    return out


def _recorded(result: Fit) -> dict[str, Any]:
    """The fit's sampler settings in :func:`fit_settings`' terms."""
    sm = result.sampler
    return {
        "sampler": sm.get("name"),
        "chains": sm.get("chains"),
        "draws": sm.get("draws_max", sm.get("draws")),
        "tune": sm.get("tune"),
        "until_converged": "until_converged" in sm,
        "target_accept": sm.get("target_accept"),
    }


def fit_or_load(
    name: str,
    data: ResponseData,
    s: Settings,
    *,
    spec: ModelSpec | None = None,
    sampler: str | None = None,
) -> tuple[Fit, bool]:
    """Load ``<out>/fits/<name>`` when it was fitted to this data with these settings, else fit and save it.

    A population's fit uses its model (``Population.kind``) unless ``spec`` is given. The saved fit's seed is not
    compared (it is recorded with the fit). Returns the fit and whether it was loaded (True) or fitted now (False).
    """
    if spec is None and name in BY_NAME:
        spec = BY_NAME[name].model_spec()
    wanted = fit_settings(s, name, sampler=sampler)
    path = s.fits / name
    if path.is_dir():
        try:
            result = load_fit(path, data=data)
        except FitError as err:
            print(f"{name}: the saved fit cannot be reused ({err}); refitting")
        else:
            have = _recorded(result)
            differs = {k: (have.get(k), v) for k, v in wanted.items() if have.get(k) != v}
            asked = ("kind", *(dict(BY_NAME[name].spec) if name in BY_NAME else {}))
            same_spec = spec is None or all(getattr(result.spec, f) == getattr(spec, f) for f in asked)
            if not differs and same_spec:
                return result, True
            print(f"{name}: the saved fit differs from the settings wanted ({differs}); refitting")
    with warnings.catch_warnings():
        # both facts are reported by short_summary() and in every table (fit_label)
        warnings.filterwarnings("ignore", message=".*approximate method.*")
        warnings.filterwarnings("ignore", message=".*did not pass the convergence checks.*")
        result = fit(data, spec, seed=s.seed, progress=False, **wanted)
    save_fit(result, path, overwrite=True)
    return result, False


def fit_label(result: Fit) -> str:
    """How a fit was made, for tables: sampler, chains x draws, and APPROXIMATE or the convergence verdict."""
    sm = result.sampler
    base = f"{sm.get('name')} {sm.get('chains')}x{sm.get('draws')}"
    if result.approximate:
        return f"{base} (approximate)"
    return f"{base} NUTS ({'converged' if result.diagnostics.ok else 'NOT CONVERGED'})"


def verdict(result: Fit) -> str:
    """``converged``, ``NOT CONVERGED`` (NUTS that failed its checks) or ``approximate``."""
    if result.approximate:
        return "approximate"
    return "converged" if result.diagnostics.ok else "NOT CONVERGED"


# ============================================================================================ formatting
def ci(mean: float, low: float, high: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def row_ci(row: pd.Series | dict[str, Any], prefix: str, digits: int = 2) -> str:
    return ci(row[f"{prefix}_mean"], row[f"{prefix}_ci_low"], row[f"{prefix}_ci_high"], digits)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when the intervals a and b overlap."""
    return a[0] <= b[1] and b[0] <= a[1]


def show(*paths: Path) -> None:
    """Show saved figures inline when the notebook runs in a Jupyter kernel (the rendered HTML of
    ``scripts/run_notebooks.py --html``, in ``<out>/html/``); nothing when it runs as a script. The HTML links each
    figure in ``<out>/figures/`` rather than embedding a second copy."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        return
    if get_ipython() is None:
        return
    for path in paths:
        path = Path(path)
        link = os.path.relpath(path, path.parent.parent / "html")
        display(HTML(f'<img src="{html.escape(link)}" alt="{html.escape(path.name)}" style="max-width: 100%">'))


def write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")


class Timer:
    """Wall-clock seconds per named step, for the notebooks' timing tables."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def __call__(self, step: str) -> _Step:
        return _Step(self, step)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["step", "seconds"])


class _Step:
    def __init__(self, timer: Timer, step: str) -> None:
        self.timer, self.step = timer, step

    def __enter__(self) -> _Step:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.rows.append({"step": self.step, "seconds": round(time.perf_counter() - self.start, 1)})


def versions() -> str:
    """Python and package versions, one line."""
    names = ("irtbayes", "pymc", "pytensor", "arviz", "nutpie", "numpy", "pandas", "xarray", "matplotlib")
    parts = [f"python {platform.python_version()}"]
    for n in names:
        try:
            parts.append(f"{n} {importlib.metadata.version(n)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{n} (not installed)")
    return ", ".join(parts)


def settings_record(s: Settings) -> dict[str, Any]:
    """The settings as JSON-ready values; paths inside the repository are given relative to it."""
    out = asdict(s)
    out["out"] = str(s.out.relative_to(REPO)) if s.out.is_relative_to(REPO) else str(s.out)
    out["data_dir"] = f"${datasets.DATA_DIR_ENV}" if s.data_dir else None
    return out


def short_summary(result: Fit) -> str:
    """The fit's summary without the per-variable diagnostics: model, data, sampler, verdict, worst numbers."""
    lines = result.to_text().splitlines()
    return "\n".join(lines[:5])
