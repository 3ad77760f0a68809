"""The arrays a model is built from: ``model_inputs(data, spec) -> ModelInputs``.

:func:`model_inputs` resolves a spec's ``"auto"`` choices against the data (hierarchy, layout, spread of
the discriminations, precision) and turns the data's labels into integer codes and coordinates.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.trials import WHOLE_TOLERANCE
from irtbayes.model.spec import FIXED_SD_MAX_BENCHMARKS, GRADED_KINDS, SMALL_BANK_ITEMS, UNLABELLED, ModelSpec

__all__ = ["MIN_2PL_SUBJECTS", "ModelInputs", "default_spec", "model_inputs", "step_items"]

#: With fewer subjects than this the model fitted when none is named is the 1PL (:func:`default_spec`).
MIN_2PL_SUBJECTS = 10


def default_spec(data: ResponseData) -> ModelSpec:
    """The model fitted when none is named: :class:`ModelSpec`'s defaults (the 2PL), or the 1PL for binary,
    fractional or count responses of fewer than :data:`MIN_2PL_SUBJECTS` subjects.

    A 2PL's discrimination of an item rests on that item's responses, one per subject. With a handful of subjects an
    item that the stronger ones pass and the weaker ones fail is separated, its likelihood flat as the discrimination
    grows, so the posterior is the prior's tail bent along a ridge, where NUTS diverges at any target acceptance;
    the 1PL asks the data for one shared slope. ``fit(data, model="2pl")`` (``--model 2pl``) fits the 2PL anyway.

    >>> from irtbayes.data.simulate import simulate_responses
    >>> default_spec(simulate_responses(5, 20, seed=1)[0]).kind, default_spec(simulate_responses(10, 20, seed=1)[0]).kind
    ('1pl', '2pl')
    """
    if data.response_kind != "ordinal" and data.n_subjects < MIN_2PL_SUBJECTS:
        return ModelSpec(kind="1pl")
    return ModelSpec()


@dataclass(frozen=True)
class ModelInputs:
    """Arrays and labels that a model is built from (resolved spec, codes, coords).

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(10, 8, missing=0.0, seed=1)
    >>> inputs = model_inputs(data, ModelSpec())
    >>> len(inputs.subject_code), len(inputs.item_code), len(inputs.response), inputs.item_benchmark
    (80, 80, 80, None)
    >>> inputs.chance.tolist() == [0.25] * 8  # simulated items have 4 options
    True
    """

    spec: ModelSpec
    coords: dict[str, list[str]]
    subject_code: np.ndarray  #: per response
    item_code: np.ndarray  #: per response
    response: np.ndarray  #: per response
    item_benchmark: np.ndarray | None  #: benchmark code per item
    benchmark_domain: np.ndarray | None  #: domain code per benchmark
    item_domain: np.ndarray | None  #: domain code per item
    chance: np.ndarray  #: 1 / n_options per item (NaN where unknown)
    n_categories: np.ndarray | None = None  #: graded models: categories per item (2 for a binary item)
    #: per response, the number of trials n of data with repeated trials (``response`` is then the share k / n and
    #: the likelihood binomial); None when every response is one trial
    trials: np.ndarray | None = None

    @property
    def successes(self) -> np.ndarray:
        """Per response, the successes k = share * n of data with trials (whole numbers where n > 1); the responses
        themselves otherwise."""
        if self.trials is None:
            return self.response
        k = self.response * self.trials
        rounded = np.round(k)
        return np.where(np.abs(k - rounded) <= WHOLE_TOLERANCE, rounded, k)

    def key(self) -> str:
        """SHA-256 of everything here: equal keys build the same model (the sampler reuses its compilation).

        Examples
        --------
        >>> from irtbayes.data.simulate import simulate_responses
        >>> data, _ = simulate_responses(10, 8, seed=1)
        >>> model_inputs(data, ModelSpec()).key() == model_inputs(data, ModelSpec()).key()
        True
        >>> model_inputs(data, ModelSpec()).key() == model_inputs(data, ModelSpec(kind="1pl")).key()
        False
        """
        digest = hashlib.sha256(repr(self.spec).encode())
        digest.update(json.dumps(self.coords, sort_keys=True, default=str).encode())
        for field in fields(self):
            if field.name in ("spec", "coords"):
                continue
            value = getattr(self, field.name)
            if field.name == "trials" and value is None:
                continue  # data without trials keep the keys (and compiled models) they had before trials existed
            digest.update(field.name.encode())
            if value is not None:
                value = np.ascontiguousarray(value)
                digest.update(f"{value.dtype}{value.shape}".encode())
                digest.update(value.tobytes())
        return digest.hexdigest()


def _labels(data: ResponseData) -> tuple[pd.Series, pd.Series]:
    bench = data.items["benchmark"].astype("string")
    domain = data.items["domain"].astype("string")
    return bench, domain


def model_inputs(data: ResponseData, spec: ModelSpec) -> ModelInputs:
    """Resolve ``spec`` against ``data`` (the ``"auto"`` choices) and collect the arrays for the model.

    Raises
    ------
    SpecError
        The data cannot support the spec (no labels for a hierarchy, one domain for ``dims="domain"``,
        fractional responses with ``fractional="error"``, too few subjects to standardise, k successes of n trials
        with a graded model or ``layout="fused"``).

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(40, 60, n_benchmarks=3, seed=1)
    >>> inputs = model_inputs(data, ModelSpec())
    >>> inputs.spec.hierarchy  # "auto" resolved: the items carry benchmark labels, no domains
    'benchmark'
    >>> {name: len(ids) for name, ids in inputs.coords.items()}
    {'subject': 40, 'item': 60, 'benchmark': 3}
    >>> len(inputs.response) == data.n_responses, np.bincount(inputs.item_benchmark).tolist()
    (True, [20, 20, 20])
    >>> unlabelled, _ = simulate_responses(40, 60, seed=1)
    >>> model_inputs(unlabelled, ModelSpec(hierarchy="benchmark"))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: ...: hierarchy='benchmark' needs items labelled with at least 2 benchmarks (found 0)
    """
    _check_supported(data, spec)
    labels = _Labels.of(data)
    resolved = _resolve(spec, data, labels)
    coords, item_benchmark, benchmark_domain, item_domain = _codes(data, resolved, labels)
    if "n_options" in data.items.columns:
        n_opt = pd.to_numeric(data.items["n_options"], errors="coerce").to_numpy(dtype="float64")
        chance = np.where(n_opt >= 2, 1.0 / np.where(n_opt >= 2, n_opt, 1.0), np.nan)
    else:
        chance = np.full(data.n_items, np.nan)
    if resolved.kind in GRADED_KINDS:
        n_categories = np.asarray(data.n_categories, dtype="int64")
        coords["boundary"] = [str(k) for k in range(1, int(n_categories.max()))]
        steps = _steps(data, n_categories)
        if steps:
            coords["item_step"] = steps
    else:
        n_categories = None
    return ModelInputs(
        spec=resolved,
        coords=coords,
        subject_code=data.subject_codes.astype("int64"),
        item_code=data.item_codes.astype("int64"),
        response=data.values,
        item_benchmark=item_benchmark,
        benchmark_domain=benchmark_domain,
        item_domain=item_domain,
        chance=chance,
        n_categories=n_categories,
        trials=data.trials if data.has_trials else None,
    )


def _steps(data: ResponseData, n_categories: np.ndarray) -> list[str]:
    """Labels of the gaps between consecutive thresholds, item by item: ``"<item>[k]"`` is the gap between
    thresholds k and k + 1 (an item of K categories has K - 2; a binary item none)."""
    return [f"{item}[{k}]" for item, n in zip(data.item_ids, n_categories, strict=True) for k in range(1, int(n) - 1)]


def step_items(inputs: ModelInputs) -> tuple[np.ndarray, np.ndarray]:
    """For each gap of ``inputs.coords["item_step"]``, its item's code and its position among the item's gaps (from 0).

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(30, 3, kind="grm", n_categories=[2, 4, 3], missing=0.0, seed=1)
    >>> inputs = model_inputs(data, ModelSpec(kind="grm"))
    >>> inputs.coords["item_step"]
    ['item00001[1]', 'item00001[2]', 'item00002[1]']
    >>> [values.tolist() for values in step_items(inputs)]
    [[1, 1, 2], [0, 1, 0]]
    """
    assert inputs.n_categories is not None
    gaps = np.maximum(inputs.n_categories - 2, 0)
    item = np.repeat(np.arange(len(gaps)), gaps)
    position = np.arange(int(gaps.sum())) - np.repeat(np.cumsum(gaps) - gaps, gaps)
    return item.astype("int64"), position.astype("int64")


def _check_supported(data: ResponseData, spec: ModelSpec) -> None:
    """SpecError for data no spec of this kind can be fitted to (before the labels are looked at)."""
    if not isinstance(data, ResponseData):
        raise SpecError(f"build_model: expected ResponseData, got {type(data).__name__}")
    if "condition" in data.responses.columns and data.responses.duplicated(["subject", "item"]).any():
        raise SpecError(
            f"{data.source}: several conditions give more than one response per (subject, item); "
            f"subset to one condition first (data.subset(conditions=[...])), conditions: {list(data.conditions)}"
        )
    kind = data.response_kind
    if spec.fractional == "error" and kind == "fraction":
        raise SpecError(
            f"{data.source}: responses are fractional (scores strictly between 0 and 1) but the spec has "
            "fractional='error'; use fractional='quasi' for the fractional-logit quasi-likelihood"
        )
    if spec.kind in GRADED_KINDS and (kind == "fraction" or data.has_trials):
        held = "k successes of n trials" if data.has_trials else "fractional scores"
        raise SpecError(
            f"{data.source}: responses are {held}, but model '{spec.kind}' is for ordinal categories; fit them with "
            "a binary model ('1pl', '2pl' or '3pl'), or read them as categories (scoring='ordinal')"
        )
    if spec.kind not in GRADED_KINDS and kind == "ordinal":
        raise SpecError(
            f"{data.source}: responses are ordinal ({int(data.n_categories.max())} categories at most); fit them "
            "with model 'grm' or 'gpcm', or collapse them to 0/1 for a binary model"
        )
    if spec.identification == "standardise" and data.n_subjects < 3:
        raise SpecError(
            f"{data.source}: {data.n_subjects} subject(s); standardised abilities need at least 3 "
            "(use identification='prior')"
        )


@dataclass(frozen=True)
class _Labels:
    """The items' benchmark and domain labels (missing ones as :data:`UNLABELLED`) and what they allow."""

    bench: pd.Series
    domain: pd.Series
    has_bench: bool
    n_bench: int
    has_domain: bool
    n_domain: int
    bench_domain: dict[str, str]

    @classmethod
    def of(cls, data: ResponseData) -> _Labels:
        bench, domain = _labels(data)
        has_bench = bool(bench.notna().any())
        bench_filled = bench.fillna(UNLABELLED)
        n_bench = int(bench_filled.nunique()) if has_bench else 0
        # a benchmark must sit in one domain
        dom_filled = domain.fillna(UNLABELLED)
        has_domain = bool(domain.notna().any())
        bench_domain_map: dict[str, str] = {}
        if has_domain:
            pairs = pd.DataFrame({"b": bench_filled.to_numpy(), "d": dom_filled.to_numpy()}).drop_duplicates()
            multi = pairs.groupby("b").size()
            if (multi > 1).any():
                bad = multi.index[multi > 1][0]
                doms = sorted(pairs.loc[pairs["b"] == bad, "d"])
                raise SpecError(
                    f"{data.source}: benchmark '{bad}' has items in several domains {doms}; a benchmark "
                    "must belong to one domain"
                )
            bench_domain_map = dict(zip(pairs["b"], pairs["d"], strict=True))
        n_domain = int(dom_filled.nunique()) if has_domain else 0
        return cls(bench_filled, dom_filled, has_bench, n_bench, has_domain, n_domain, bench_domain_map)


def _resolve(spec: ModelSpec, data: ResponseData, labels: _Labels) -> ModelSpec:
    """``spec`` with its ``"auto"`` hierarchy, layout, discrimination spread and precision chosen for ``data``."""
    has_bench, n_bench, has_domain, n_domain = labels.has_bench, labels.n_bench, labels.has_domain, labels.n_domain
    hierarchy = spec.hierarchy
    if hierarchy == "auto":
        if has_bench and n_bench >= 2 and has_domain and n_domain >= 3:
            hierarchy = "benchmark+domain"
        elif has_bench and n_bench >= 2:
            hierarchy = "benchmark"
        else:
            hierarchy = "none"
    if hierarchy in ("benchmark", "benchmark+domain") and not (has_bench and n_bench >= 2):
        raise SpecError(
            f"{data.source}: hierarchy='{hierarchy}' needs items labelled with at least 2 benchmarks (found {n_bench})"
        )
    if hierarchy == "benchmark+domain" and not (has_domain and n_domain >= 2):
        raise SpecError(f"{data.source}: hierarchy='benchmark+domain' needs at least 2 domains (found {n_domain})")
    if spec.dims == "domain" and not (has_domain and n_domain >= 2):
        raise SpecError(f"{data.source}: dims='domain' needs items labelled with at least 2 domains (found {n_domain})")
    layout = spec.layout
    n_cells = data.n_subjects * data.n_items
    if spec.kind in GRADED_KINDS:
        if layout == "fused":
            raise SpecError("layout='fused' is for 1PL and 2PL models; graded models use 'long' or 'dense'")
        if layout == "auto":
            layout = "long"
    elif layout == "auto":
        dense = data.n_responses >= 0.5 * n_cells and n_cells <= 50_000_000
        # the fused kernel weighs each cell 0 or 1: k of n trials take the dense matrix in plain PyTensor instead
        layout = ("dense" if data.has_trials else "fused") if dense else "long"
    if layout == "fused" and data.has_trials:
        raise SpecError(
            f"{data.source}: layout='fused' has no per-cell trials; responses of k successes of n trials use "
            "layout='dense' or 'long' (or 'auto')"
        )
    if layout == "fused" and spec.kind == "3pl" and spec.precision == "float32":
        raise SpecError("the 3PL's fused layout computes in float64; use precision='float64' or 'auto'")
    discrimination_sd = spec.discrimination_sd
    if discrimination_sd == "auto":
        discrimination_sd = "fixed" if hierarchy == "none" and data.n_items < SMALL_BANK_ITEMS else "sampled"
    benchmark_sd = spec.benchmark_sd
    if benchmark_sd == "auto":
        benchmark_sd = "fixed" if hierarchy == "benchmark" and n_bench <= FIXED_SD_MAX_BENCHMARKS else "sampled"
    precision = spec.precision
    if precision == "auto":
        precision = "float32" if layout == "fused" and spec.kind != "3pl" else "float64"
    return spec.replace(
        hierarchy=hierarchy,
        layout=layout,
        discrimination_sd=discrimination_sd,
        benchmark_sd=benchmark_sd,
        precision=precision,
    )


def _codes(
    data: ResponseData, spec: ModelSpec, labels: _Labels
) -> tuple[dict[str, list[str]], np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Coordinates, and the benchmark code per item, domain code per benchmark and domain code per item."""
    coords: dict[str, list[str]] = {
        "subject": [str(s) for s in data.subject_ids],
        "item": [str(i) for i in data.item_ids],
    }
    item_benchmark = benchmark_domain = item_domain = None
    if spec.hierarchy != "none":
        bench_ids = list(pd.unique(labels.bench.to_numpy()))
        coords["benchmark"] = [str(b) for b in bench_ids]
        item_benchmark = pd.Index(bench_ids).get_indexer(labels.bench.to_numpy()).astype("int64")
    if labels.has_domain and labels.n_domain >= 2 and (spec.hierarchy == "benchmark+domain" or spec.dims == "domain"):
        domain_ids = list(pd.unique(labels.domain.to_numpy()))
        coords["domain"] = [str(d) for d in domain_ids]
        item_domain = pd.Index(domain_ids).get_indexer(labels.domain.to_numpy()).astype("int64")
        if spec.hierarchy == "benchmark+domain":
            benchmark_domain = (
                pd.Index(domain_ids).get_indexer([labels.bench_domain[b] for b in coords["benchmark"]]).astype("int64")
            )
        if spec.dims == "domain":
            coords["dim"] = list(coords["domain"])
    return coords, item_benchmark, benchmark_domain, item_domain
