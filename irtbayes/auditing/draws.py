"""The posterior draws an audit reads: from a fit, its DataTree or a posterior Dataset, in the data's order.

:func:`extract_draws` checks the posterior against the data (variables present, ids matching, draws
finite) and returns :class:`PosteriorDraws`, (sample, item) and (sample, subject, dim) arrays with the
(chain, draw) sample dims stacked. :func:`fit_identity` is a checksum of those draws, recorded by the audit
so that a saved audit can be matched with its fit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import FitError
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.result import DRAWS_DTYPE

__all__ = [
    "CHUNK_ELEMENTS",
    "SAMPLE_DIMS",
    "PosteriorDraws",
    "draw_chunks",
    "draws_identity",
    "extract_draws",
    "fit_created",
    "fit_identity",
    "posterior_dataset",
    "recorded_checksum",
]

SAMPLE_DIMS = ("chain", "draw")
#: About this many array elements per chunk of draws.
CHUNK_ELEMENTS = 1 << 21


def draw_chunks(n_draws: int, per_draw: int) -> list[slice]:
    """Slices of ``n_draws`` draws, each about :data:`CHUNK_ELEMENTS` elements of ``per_draw`` each.

    The deconvolved item locations depend on the chunks, so the audit and its self-check both chunk here.

    Examples
    --------
    >>> from irtbayes.auditing.draws import draw_chunks
    >>> draw_chunks(5, 1 << 20)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    size = max(1, CHUNK_ELEMENTS // max(per_draw, 1))
    return [slice(start, min(start + size, n_draws)) for start in range(0, n_draws, size)]


@dataclass(frozen=True)
class PosteriorDraws:
    """Posterior draws as (sample, item) / (sample, subject[, dim]) arrays in the data's order.

    For a graded fit (``graded`` is its kind, ``"grm"`` or ``"gpcm"``) ``difficulty`` holds each item's
    ``location`` (where its expected score is half the maximum: the place on the ability scale the audit
    bins it at), ``thresholds`` its thresholds (sample, item, boundary; NaN past an item's own), and
    ``shift`` the location minus the mean threshold (the model's ``difficulty``), which
    :class:`~irtbayes.auditing.deconvolve.PriorDraws` needs.
    """

    difficulty: np.ndarray
    discrimination: np.ndarray | None
    guessing: np.ndarray | None
    ability: np.ndarray  # (sample, subject, dim) — dim 1 for a one-dimensional fit
    dims: list[str]  # coordinate labels of the ability dimensions ([] when one-dimensional)
    n_chains: int
    n_draws: int
    graded: str | None = None
    thresholds: np.ndarray | None = None
    shift: np.ndarray | None = None


def posterior_dataset(obj: Any) -> xr.Dataset:
    if isinstance(obj, xr.DataTree):
        if "posterior" in obj.children:
            return obj["posterior"].to_dataset()
        ds = obj.to_dataset()
        if "difficulty" in ds.data_vars:
            return ds
        raise FitError(f"the DataTree has no 'posterior' group (groups: {sorted(obj.children)})")
    if isinstance(obj, xr.Dataset):
        return obj
    inner = getattr(obj, "posterior", None)
    if inner is not None and inner is not obj:
        return posterior_dataset(inner)
    raise FitError(f"expected a posterior (xarray DataTree or Dataset), got {type(obj).__name__}")


def recorded_checksum(obj: Any, posterior: xr.Dataset) -> str | None:
    """The data checksum a fit recorded (on a Fit, its DataTree or the posterior), if any."""
    direct = getattr(obj, "data_checksum", None)
    if isinstance(direct, str) and direct:
        return direct
    tree = getattr(obj, "idata", obj)
    for attrs in (getattr(tree, "attrs", None) or {}, posterior.attrs):
        value = attrs.get("data_checksum")
        if value:
            return str(value)
    return None


def _aligned(var: xr.DataArray, *, dim: str, ids: pd.Index, name: str) -> xr.DataArray:
    """``var`` reordered along ``dim`` to ``ids``; a different set of ids is a fit from other data."""
    if dim not in var.dims:
        raise FitError(f"posterior variable '{name}' has no '{dim}' dimension (dims {list(var.dims)})")
    have = pd.Index(np.asarray(var[dim].to_numpy()).astype(str))
    want = pd.Index(ids.astype(str))
    missing, extra = want.difference(have), have.difference(want)
    if len(missing) or len(extra) or len(have) != len(want):
        raise FitError(
            f"the posterior's {dim} ids do not match the data's: {len(missing)} {dim}(s) in the data are not in "
            f"'{name}' (e.g. {list(missing[:3])}), {len(extra)} in '{name}' are not in the data "
            f"(e.g. {list(extra[:3])}); this looks like a fit from a different data set"
        )
    if have.equals(want):  # already in the data's order (a fit of these data): no reordered copy
        return var
    position = have.get_indexer(want)
    return var.isel({dim: position})


def _stacked(var: xr.DataArray, name: str, *, keep: Sequence[str], absent: np.ndarray | None = None) -> np.ndarray:
    """(sample, *keep) draws; every draw finite, but for the elements ``absent`` marks (NaN in every draw)."""
    missing = [d for d in SAMPLE_DIMS if d not in var.dims]
    if missing:
        raise FitError(f"posterior variable '{name}' lacks the sample dimension(s) {missing} (dims {list(var.dims)})")
    arr = var.transpose(*SAMPLE_DIMS, *keep).to_numpy()
    if arr.dtype != DRAWS_DTYPE:  # item draws stay in the precision a fit holds them (no float64 copy)
        arr = arr.astype("float64", copy=False)
    arr = arr.reshape((-1, *arr.shape[2:]))
    finite = np.isfinite(arr)
    if absent is not None:
        finite |= absent[None] & np.isnan(arr)
    if not np.all(finite):
        raise FitError(f"posterior variable '{name}' holds non-finite draws (NaN or inf); the fit is broken")
    return arr


def _graded_fields(posterior: xr.Dataset, data: ResponseData) -> dict[str, Any]:
    """``graded``, ``thresholds`` and ``shift`` of a graded fit's :class:`PosteriorDraws` (empty for a binary fit)."""
    if "threshold" not in posterior.data_vars:
        return {}
    kind = str(posterior.attrs.get("model_kind") or ("gpcm" if "step_sd" in posterior.data_vars else "grm"))
    var = _aligned(posterior["threshold"], dim="item", ids=data.item_ids, name="threshold")
    if "boundary" not in var.dims:
        raise FitError(f"posterior variable 'threshold' has no 'boundary' dimension (dims {list(var.dims)})")
    first = var.isel({d: 0 for d in SAMPLE_DIMS}).transpose("item", "boundary").to_numpy()
    thresholds = _stacked(var, "threshold", keep=("item", "boundary"), absent=np.isnan(first))
    return {"graded": kind, "thresholds": thresholds}


def extract_draws(posterior: xr.Dataset, data: ResponseData) -> PosteriorDraws:
    if "difficulty" not in posterior.data_vars:
        raise FitError(f"the posterior has no 'difficulty' (variables: {sorted(map(str, posterior.data_vars))})")
    if "ability" not in posterior.data_vars:
        raise FitError(f"the posterior has no 'ability' (variables: {sorted(map(str, posterior.data_vars))})")
    graded = _graded_fields(posterior, data)
    if graded and "location" not in posterior.data_vars:
        raise FitError("a graded fit's posterior has no 'location' (it is added when the fit is made or loaded)")
    item_vars: dict[str, np.ndarray | None] = {}
    for name in ("difficulty", "discrimination", "guessing", *(["location"] if graded else [])):
        if name not in posterior.data_vars:
            item_vars[name] = None
            continue
        var = _aligned(posterior[name], dim="item", ids=data.item_ids, name=name)
        extra = [str(d) for d in var.dims if d not in (*SAMPLE_DIMS, "item")]
        if name == "discrimination" and len(extra) == 1:
            var = ((var**2).sum(extra[0])) ** 0.5  # multidimensional: Reckase's MDISC
        elif extra:
            raise FitError(f"posterior variable '{name}' has unexpected dimension(s) {extra}")
        item_vars[name] = _stacked(var, name, keep=("item",))
    ability = _aligned(posterior["ability"], dim="subject", ids=data.subject_ids, name="ability")
    extra = [str(d) for d in ability.dims if d not in (*SAMPLE_DIMS, "subject")]
    if len(extra) > 1:
        raise FitError(f"posterior variable 'ability' has more than one extra dimension: {extra}")
    dims: list[str] = []
    if extra:
        dims = [str(v) for v in ability[extra[0]].to_numpy()]
        ability_arr = _stacked(ability, "ability", keep=("subject", extra[0]))
    else:
        ability_arr = _stacked(ability, "ability", keep=("subject",))[:, :, None]
    difficulty = item_vars["difficulty"]
    assert difficulty is not None
    if graded:  # graded items are audited at their locations (see PosteriorDraws)
        location = item_vars["location"]
        assert location is not None
        graded["shift"] = (location - difficulty).astype(location.dtype, copy=False)
        difficulty = location
    return PosteriorDraws(
        difficulty=difficulty,
        discrimination=item_vars["discrimination"],
        guessing=item_vars["guessing"],
        ability=ability_arr,
        dims=dims if len(dims) > 1 else [],
        n_chains=int(posterior.sizes["chain"]),
        n_draws=int(posterior.sizes["draw"]),
        **graded,
    )


def draws_identity(draws: PosteriorDraws, data: ResponseData) -> str:
    """SHA-256 of the draws the audit reads (in the data's order) and of their ids: the fit's identity."""
    digest = hashlib.sha256()
    header = {
        "items": [str(i) for i in data.item_ids],
        "subjects": [str(j) for j in data.subject_ids],
        "dims": draws.dims,
        "chains": draws.n_chains,
        "draws": draws.n_draws,
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    for name in ("difficulty", "discrimination", "guessing", "ability"):
        values = getattr(draws, name)
        digest.update(name.encode())
        if values is not None:
            # single precision: a saved fit may store its draws as float32 (see irtbayes.fitting.storage.save_fit)
            digest.update(np.ascontiguousarray(values, dtype="<f4"))  # the buffer itself: no bytes copy
    return digest.hexdigest()


def fit_created(posterior: Any) -> str | None:
    """When the fit was made (``Fit.info["created"]``), if the posterior comes with it."""
    info = getattr(posterior, "info", None)
    created = info.get("created") if isinstance(info, dict) else None
    return None if created is None else str(created)


def fit_identity(posterior: Any, data: ResponseData) -> str:
    """The identity :func:`audit` records for a fit (``settings["fit_identity"]``).

    A SHA-256 over the posterior draws of ``difficulty``, ``discrimination``, ``guessing`` and ``ability`` in
    the data's item and subject order, rounded to single precision, with the ids and the numbers of chains
    and draws: the same fit, in memory or saved (in float32 or float64) and loaded again, has the same
    identity; any other fit (other draws, seed or data) another.

    Parameters
    ----------
    posterior
        A fit, its DataTree or its posterior Dataset (as :func:`audit` takes).
    data
        The data the fit was made from.

    Returns
    -------
    str
        64 hexadecimal digits.

    Examples
    --------
    The same draws have the same identity (in memory, or saved and loaded again); other draws another:

    >>> from irtbayes.auditing.draws import fit_identity
    >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(20, 30, seed=1)
    >>> posterior = posterior_near_truth(data, truth, chains=2, draws=50, seed=2)
    >>> identity = fit_identity(posterior, data)
    >>> len(identity), identity == fit_identity(posterior.copy(deep=True), data)
    (64, True)
    >>> identity == fit_identity(posterior_near_truth(data, truth, chains=2, draws=50, seed=3), data)
    False
    """
    return draws_identity(extract_draws(posterior_dataset(posterior), data), data)
