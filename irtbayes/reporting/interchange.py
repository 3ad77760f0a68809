"""Exports that other IRT tools read: mirt's item and person tables, tinyBenchmarks anchor sets, py-irt data.

Item tables hold posterior means (and, in a separate table, posterior sds) in the layouts mirt prints:

- ``layout="irt"``: ``coef(mod, IRTpars = TRUE, simplify = TRUE)$items``: columns ``a``, ``b``, ``g``, ``u``
  with rows named by item; P = g + (u - g) / (1 + exp(-a (theta - b))).
- ``layout="si"``: mirt's slope-intercept form, ``coef(mod, simplify = TRUE)$items``: columns ``a1``, ``d``,
  ``g``, ``u`` with d = -a b, so P = g + (u - g) / (1 + exp(-(a1 theta + d))). For abilities by domain
  (``dims="domain"``) there is one slope per dimension, ``a1`` ... ``aK`` (in the order of the ``dim``
  coordinate), zero where an item does not load.

``g`` is the posterior of ``guessing`` for 3PL and 0 otherwise; ``u`` is 1 (irtbayes has no upper asymptote).
In the sd table, parameters fixed by the model (``g`` of 1PL/2PL, ``u``) are empty (NA in R). For 1PL, ``a``
is the one discrimination every item shares. ``d`` is the posterior mean of -a b over the draws, which differs
slightly from -(mean a)(mean b).

Person tables follow ``fscores(mod, full.scores.SE = TRUE)``: ``F1`` (posterior mean ability) and ``SE_F1``
(posterior sd), with ``F2``, ``SE_F2``, ... for more dimensions, plus a first column ``subject``.

tinyBenchmarks (``tinyBenchmarks.evaluate``) keeps, per benchmark suite, a pickle of ``irt_parameters``
``{"A", "B"}`` (arrays of shape (1, D, n_items)), ``seen_examples`` (the anchor items' positions),
``examples_weights`` (per scenario, the anchors' weights), ``scenarios_position`` and
``subscenarios_position``; its item curve is P = sigmoid(sum_d (A[0, d, i] theta_d - B[0, d, i])).
:func:`tinybenchmarks_anchors` gives the same structure as plain JSON (never a pickle), with A = a and
B = a b (= -d), so tinyBenchmarks' curve gives irtbayes' 2PL probabilities.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.core.files import atomic_write_text
from irtbayes.fitting.result import Fit
from irtbayes.model.build import add_derived
from irtbayes.model.spec import UNLABELLED

__all__ = [
    "MIRT_IRT_COLUMNS",
    "MIRT_SI_COLUMNS",
    "mirt_items",
    "mirt_subjects",
    "tinybenchmarks_anchors",
    "write_mirt",
    "write_tinybenchmarks",
]

#: Columns of ``coef(mod, IRTpars = TRUE, simplify = TRUE)$items`` for a unidimensional dichotomous model.
MIRT_IRT_COLUMNS: tuple[str, ...] = ("a", "b", "g", "u")
#: Columns of ``coef(mod, simplify = TRUE)$items`` (slope-intercept) for a unidimensional dichotomous model.
MIRT_SI_COLUMNS: tuple[str, ...] = ("a1", "d", "g", "u")

Layout = Literal["irt", "si"]
Stat = Literal["mean", "sd"]


def _with_derived(fit: Fit) -> Fit:
    """The fit with ``discrimination`` (1PL) and ``intercept`` in its posterior (a hand-built fit may lack them)."""
    post = fit.posterior
    if "intercept" in post and "discrimination" in post:
        return fit
    tree = fit.idata.copy()
    tree["posterior"] = xr.DataTree(add_derived(post, fit.spec))
    return dataclasses.replace(fit, idata=tree)


def _dims(fit: Fit) -> list[str]:
    ability = fit.posterior["ability"]
    return [str(d) for d in ability["dim"].values] if "dim" in ability.dims else []


def _item_domains(fit: Fit) -> np.ndarray:
    return fit.constant_data["item_domain"].values.astype(str)


def mirt_items(fit: Fit, *, layout: Layout = "irt", stat: Stat = "mean") -> pd.DataFrame:
    """Item parameters in mirt's ``coef(..., simplify = TRUE)$items`` layout.

    Parameters
    ----------
    fit
        A fitted model.
    layout
        ``"irt"``: columns ``a``, ``b``, ``g``, ``u`` (``IRTpars = TRUE``); ``"si"``: ``a1`` (... ``aK``),
        ``d``, ``g``, ``u`` (slope-intercept, d = -a b). A graded fit has mirt's graded/gpcm columns
        instead: ``a``, ``b1`` ... ``b{K-1}`` (``"irt"``) or ``a1``, ``d1`` ... ``d{K-1}`` (``"si"``; d_k = -a b_k),
        NaN past an item's own categories.
    stat
        ``"mean"``: posterior means; ``"sd"``: posterior sds (NaN for parameters the model fixes).

    Returns
    -------
    pandas.DataFrame
        One row per item (index ``item``, in the fit's item order) and exactly the columns above.

    Raises
    ------
    SpecError
        An unknown ``layout``/``stat``, or ``layout="irt"`` for abilities by domain (mirt has no IRT
        parameterisation of a multidimensional model either).

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, n_benchmarks=2, draws=50)
    >>> items = mirt_items(fit)
    >>> items.shape, items.columns.tolist(), items.index.name
    ((30, 4), ['a', 'b', 'g', 'u'], 'item')
    >>> items[["g", "u"]].iloc[0].tolist()  # a 2PL: no guessing, upper asymptote 1
    [0.0, 1.0]
    >>> mirt_items(fit, layout="si").columns.tolist()
    ['a1', 'd', 'g', 'u']
    >>> mirt_items(fit, stat="sd")[["g", "u"]].isna().all().tolist()  # fixed by the model
    [True, True]
    """
    if layout not in ("irt", "si"):
        raise SpecError(f"layout must be 'irt' or 'si', got {layout!r}")
    if stat not in ("mean", "sd"):
        raise SpecError(f"stat must be 'mean' or 'sd', got {stat!r}")
    dims = _dims(fit)
    if layout == "irt" and dims:
        raise SpecError(
            "the IRT layout (a, b) is for one ability dimension; this fit has abilities by domain "
            f"({', '.join(dims)}): use the slope-intercept layout (a1 ... aK, d)"
        )
    fit = _with_derived(fit)
    table = fit.items_table()
    index = pd.Index(table["item"].astype(str).to_numpy(), name="item")
    if fit.spec.kind in ("grm", "gpcm"):
        return _mirt_graded(fit, table, index, layout=layout, stat=stat)
    fixed = np.full(len(table), np.nan) if stat == "sd" else None
    a = table[f"discrimination_{stat}"].to_numpy(dtype="float64")
    if "guessing_mean" in table.columns:
        g = table[f"guessing_{stat}"].to_numpy(dtype="float64")
    else:
        g = fixed if fixed is not None else np.zeros(len(table))
    u = fixed if fixed is not None else np.ones(len(table))
    if layout == "irt":
        columns: dict[str, np.ndarray] = {"a": a, "b": table[f"difficulty_{stat}"].to_numpy(dtype="float64")}
    else:
        columns = {}
        if dims:
            domains = _item_domains(fit)
            for k, dim in enumerate(dims, start=1):
                columns[f"a{k}"] = np.where(domains == dim, a, 0.0)
        else:
            columns["a1"] = a
        columns["d"] = table[f"intercept_{stat}"].to_numpy(dtype="float64")
    columns.update(g=g, u=u)
    out = pd.DataFrame(columns, index=index)
    out.attrs.update(approximate=fit.approximate, kind=fit.spec.kind, stat=stat, layout=layout)
    return out


def _mirt_graded(fit: Fit, table: pd.DataFrame, index: pd.Index, *, layout: Layout, stat: Stat) -> pd.DataFrame:
    """:func:`mirt_items` of a graded fit (mirt's ``itemtype = "graded"`` / ``"gpcm"`` coefficients)."""
    if _dims(fit):
        raise SpecError("mirt export of graded fits with abilities by domain is not supported; export a 1-D fit")
    boundaries = [str(k) for k in fit.posterior["boundary"].values]
    slope, prefix, source = ("a", "b", "threshold") if layout == "irt" else ("a1", "d", "intercept")
    columns = {slope: table[f"discrimination_{stat}"].to_numpy(dtype="float64")}
    for k in boundaries:
        columns[f"{prefix}{k}"] = table[f"{source}{k}_{stat}"].to_numpy(dtype="float64")
    out = pd.DataFrame(columns, index=index)
    out.attrs.update(approximate=fit.approximate, kind=fit.spec.kind, stat=stat, layout=layout)
    return out


def mirt_subjects(fit: Fit) -> pd.DataFrame:
    """Abilities in the layout of mirt's ``fscores(mod, full.scores.SE = TRUE)``.

    Returns
    -------
    pandas.DataFrame
        One row per subject (fit order): ``subject``, ``F1`` ... ``FK`` (posterior mean ability per
        dimension), ``SE_F1`` ... ``SE_FK`` (posterior sd).

    Examples
    --------
    >>> from irtbayes.fitting.result import Fit
    >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(20, 30, n_benchmarks=2, seed=1)
    >>> fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=50, seed=2), data)
    >>> subjects = mirt_subjects(fit)
    >>> subjects.shape, subjects.columns.tolist()
    ((20, 3), ['subject', 'F1', 'SE_F1'])
    >>> bool(np.corrcoef(subjects["F1"], truth["ability"])[0, 1] > 0.95)
    True
    """
    table = fit.subjects_table()
    dims = _dims(fit)
    subjects = [str(s) for s in fit.subject_ids]
    if not dims:
        return pd.DataFrame(
            {
                "subject": subjects,
                "F1": table["ability_mean"].to_numpy(dtype="float64"),
                "SE_F1": table["ability_sd"].to_numpy(dtype="float64"),
            }
        )
    wide = table.pivot(index="subject", columns="dim", values=["ability_mean", "ability_sd"]).loc[subjects]
    out = pd.DataFrame({"subject": subjects})
    for k, dim in enumerate(dims, start=1):
        out[f"F{k}"] = wide[("ability_mean", dim)].to_numpy(dtype="float64")
    for k, dim in enumerate(dims, start=1):
        out[f"SE_F{k}"] = wide[("ability_sd", dim)].to_numpy(dtype="float64")
    return out


def _csv(frame: pd.DataFrame, path: Path, *, index: bool) -> Path:
    return atomic_write_text(path, frame.to_csv(index=index, float_format="%.10g", lineterminator="\n"))


def write_mirt(fit: Fit, folder: str | Path, *, layout: Layout = "irt") -> dict[str, Path]:
    """Write mirt-layout tables into ``folder``: ``items.csv``, ``items_sd.csv`` and ``subjects.csv``.

    Each file is written atomically. In R: ``read.csv("items.csv", row.names = 1)`` gives a data frame with
    exactly mirt's columns (see :func:`mirt_items`); ``read.csv("subjects.csv")`` has ``subject``, ``F1``,
    ``SE_F1``. Empty cells of ``items_sd.csv`` are parameters the model fixes (NA in R).

    Parameters
    ----------
    fit
        A fitted model.
    folder
        Created if missing; files of the same names are replaced.
    layout
        ``"irt"`` (``a``, ``b``, ``g``, ``u``) or ``"si"`` (``a1``, ``d``, ``g``, ``u``).

    Returns
    -------
    dict
        ``{"items": path, "items_sd": path, "subjects": path}``.

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, n_benchmarks=2, draws=50)
    >>> paths = write_mirt(fit, tempfile.mkdtemp())
    >>> sorted(path.name for path in paths.values())
    ['items.csv', 'items_sd.csv', 'subjects.csv']
    >>> pd.read_csv(paths["items"], index_col=0).columns.tolist()
    ['a', 'b', 'g', 'u']
    """
    folder = Path(folder)
    items = mirt_items(fit, layout=layout, stat="mean")
    sds = mirt_items(fit, layout=layout, stat="sd")
    return {
        "items": _csv(items, folder / "items.csv", index=True),
        "items_sd": _csv(sds, folder / "items_sd.csv", index=True),
        "subjects": _csv(mirt_subjects(fit), folder / "subjects.csv", index=False),
    }


# ---------------------------------------------------------------------------------------------- tinyBenchmarks
def _anchors(embedding: np.ndarray, n_anchors: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions (into ``embedding``'s rows) of anchor items and their weights (summing to 1).

    k-means on the item embedding; each cluster is represented by the item nearest its centre and weighted by
    its share of the items (tinyBenchmarks' anchor-IRT choice).
    """
    n = embedding.shape[0]
    if n <= n_anchors:
        return np.arange(n), np.full(n, 1.0 / n)
    distinct, first, counts = np.unique(embedding, axis=0, return_index=True, return_counts=True)
    if len(distinct) <= n_anchors:  # one anchor per distinct item: k-means has nothing to choose
        order = np.argsort(first)
        return first[order], counts[order] / n
    from scipy.cluster.vq import kmeans2

    with warnings.catch_warnings():  # an empty cluster is skipped below
        warnings.filterwarnings("ignore", message="One of the clusters is empty")
        centres, labels = kmeans2(embedding, n_anchors, minit="++", seed=np.random.default_rng(seed))
    weights: dict[int, float] = {}
    for k in range(len(centres)):
        members = np.flatnonzero(labels == k)
        if not len(members):
            continue
        nearest = int(members[np.argmin(((embedding[members] - centres[k]) ** 2).sum(axis=1))])
        weights[nearest] = weights.get(nearest, 0.0) + len(members) / n
    order = np.array(sorted(weights), dtype=int)
    return order, np.array([weights[i] for i in order])


def tinybenchmarks_anchors(
    fit: Fit, *, n_anchors: int = 100, name: str = "irtbayes", seed: int = 0
) -> dict[str, dict[str, Any]]:
    """The fit's items as a tinyBenchmarks-style anchor set (plain JSON-ready values).

    Parameters
    ----------
    fit
        A fitted 1PL or 2PL model (tinyBenchmarks' item curve has no guessing parameter).
    n_anchors
        Anchor items per benchmark (all of a benchmark's items when it has no more than this).
    name
        The suite's key at the top level (tinyBenchmarks uses ``"lb"``, ``"mmlu"``, ...).
    seed
        Seed of the k-means that picks the anchors.

    Returns
    -------
    dict
        ``{name: {...}}`` with tinyBenchmarks' keys: ``irt_parameters`` (``A``, ``B``: nested lists of shape
        (1, D, n_items); A = posterior mean discrimination on the item's dimension, B = posterior mean of a b,
        zero on other dimensions), ``seen_examples`` (anchor positions, by benchmark then position),
        ``examples_weights`` (per benchmark, the anchors' weights in ``seen_examples`` order, summing to 1),
        ``scenarios_position`` (per benchmark, its items' positions) and ``subscenarios_position``
        (``{benchmark: {benchmark: positions}}``). Added keys: ``item_ids`` (position -> item id),
        ``anchor_items`` (per benchmark, anchor ids), ``dims``, ``item_curve`` (the formula), ``kind``,
        ``approximate``. There is no ``optimal_lambdas``: tinyBenchmarks fits those on held-out subjects.

    Raises
    ------
    SpecError
        A 3PL fit, or ``n_anchors`` < 1.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, n_benchmarks=2, draws=50)
    >>> suite = tinybenchmarks_anchors(fit, n_anchors=5)["irtbayes"]
    >>> np.asarray(suite["irt_parameters"]["A"]).shape  # (1, dimensions, items)
    (1, 1, 30)
    >>> {bench: len(ids) for bench, ids in suite["anchor_items"].items()}
    {'bench00': 5, 'bench01': 5}
    >>> {bench: round(sum(w), 6) for bench, w in suite["examples_weights"].items()}
    {'bench00': 1.0, 'bench01': 1.0}
    """
    fit.require_binary_model("the tinyBenchmarks export")
    if fit.spec.kind == "3pl":
        raise SpecError(
            "tinyBenchmarks' item curve sigmoid(A theta - B) has no guessing parameter; export a 1PL or 2PL fit"
        )
    if n_anchors < 1:
        raise SpecError(f"n_anchors must be at least 1, got {n_anchors}")
    fit = _with_derived(fit)
    post = fit.posterior
    a = post["discrimination"].mean(dim=("chain", "draw")).values
    ab = (-post["intercept"]).mean(dim=("chain", "draw")).values
    dims = _dims(fit)
    n_items = len(a)
    if dims:
        domains = _item_domains(fit)
        loads = np.stack([domains == dim for dim in dims])  # (D, n_items)
    else:
        loads = np.ones((1, n_items), dtype=bool)
    big_a = np.where(loads, a, 0.0)[None, :, :]
    big_b = np.where(loads, ab, 0.0)[None, :, :]
    labels = fit.constant_data["item_benchmark"].values.astype(str)
    labels = np.where(labels == "", UNLABELLED, labels)
    item_ids = [str(i) for i in fit.item_ids]
    scenarios: dict[str, list[int]] = {}
    for position, label in enumerate(labels):
        scenarios.setdefault(str(label), []).append(position)
    seen: list[int] = []
    weights: dict[str, list[float]] = {}
    anchor_items: dict[str, list[str]] = {}
    embedding = np.column_stack([big_a[0].T, big_b[0].T])
    for k, (scenario, positions) in enumerate(scenarios.items()):
        pos = np.asarray(positions)
        chosen, w = _anchors(embedding[pos], n_anchors, seed=seed + k)
        seen.extend(int(p) for p in pos[chosen])
        weights[scenario] = [float(x) for x in w]
        anchor_items[scenario] = [item_ids[int(p)] for p in pos[chosen]]
    curve = "P(correct) = 1 / (1 + exp(-sum_d (A[0, d, i] * theta_d - B[0, d, i])))"
    return {
        name: {
            "irt_parameters": {"A": big_a.tolist(), "B": big_b.tolist()},
            "seen_examples": seen,
            "examples_weights": weights,
            "scenarios_position": scenarios,
            "subscenarios_position": {s: {s: p} for s, p in scenarios.items()},
            "item_ids": item_ids,
            "anchor_items": anchor_items,
            "dims": dims or ["ability"],
            "item_curve": curve,
            "kind": fit.spec.kind,
            "approximate": fit.approximate,
        }
    }


def write_tinybenchmarks(
    fit: Fit, path: str | Path, *, n_anchors: int = 100, name: str = "irtbayes", seed: int = 0
) -> Path:
    """Write :func:`tinybenchmarks_anchors` as JSON (``.json``) or as a CSV table (``.csv``), atomically.

    The CSV has one row per item: ``item``, ``benchmark``, ``position``, ``A`` and ``B`` (``A_<dim>``,
    ``B_<dim>`` for abilities by domain), ``anchor`` (true/false) and ``anchor_weight`` (empty for other items).

    In Python, tinyBenchmarks' pickle is replaced by ``json.load`` and ``np.asarray`` of ``A`` and ``B``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, n_benchmarks=2, draws=50)
    >>> path = write_tinybenchmarks(fit, Path(tempfile.mkdtemp()) / "anchors.csv", n_anchors=5)
    >>> table = pd.read_csv(path)
    >>> table.columns.tolist(), len(table), int(table["anchor"].sum())
    (['item', 'benchmark', 'position', 'A', 'B', 'anchor', 'anchor_weight'], 30, 10)
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise SpecError(f"{path}: a tinyBenchmarks export is written as .json or .csv")
    anchors = tinybenchmarks_anchors(fit, n_anchors=n_anchors, name=name, seed=seed)
    if suffix == ".json":
        return atomic_write_text(path, json.dumps(anchors, indent=1, allow_nan=False) + "\n")
    suite = anchors[name]
    big_a = np.asarray(suite["irt_parameters"]["A"])[0]
    big_b = np.asarray(suite["irt_parameters"]["B"])[0]
    benchmark = np.empty(len(suite["item_ids"]), dtype=object)
    for scenario, positions in suite["scenarios_position"].items():
        benchmark[positions] = scenario
    table = pd.DataFrame({"item": suite["item_ids"], "benchmark": benchmark, "position": range(len(benchmark))})
    dims = suite["dims"]
    for d, dim in enumerate(dims):
        table["A" if len(dims) == 1 else f"A_{dim}"] = big_a[d]
    for d, dim in enumerate(dims):
        table["B" if len(dims) == 1 else f"B_{dim}"] = big_b[d]
    weights = {
        item: w
        for scenario, ws in suite["examples_weights"].items()
        for item, w in zip(suite["anchor_items"][scenario], ws, strict=True)
    }
    table["anchor"] = table["item"].isin(list(weights))
    table["anchor_weight"] = table["item"].map(weights)
    return _csv(table, path, index=False)
