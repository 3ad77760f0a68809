"""Two calibrations on one scale: mean/sigma linking through common items, computed per posterior draw.

Abilities are standardised within each population, so a difficulty of 1.0 among one set of systems is not a
difficulty of 1.0 among another. Mean/sigma linking (Marco 1977; Kolen and Brennan 2014, ch. 6) finds the
line ``y = A x + B`` that carries the *source* scale onto the *reference* scale by matching the mean and sd
of the common items' difficulties:

    A = sd(b_ref) / sd(b_src),        B = mean(b_ref) - A mean(b_src).

Both fits are posteriors, so A and B are computed in every draw: draw ``d`` of the source is paired with
draw ``d`` of the reference (the two posteriors are independent, so any pairing of their draws is a draw of
the joint), and the spread of (A, B) over draws is the linking's uncertainty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.auditing.draws import posterior_dataset
from irtbayes.core.errors import FitError, SpecError

__all__ = ["Linking", "link_mean_sigma"]


def draws_matrix(post: xr.Dataset, name: str, dim: str) -> tuple[np.ndarray, pd.Index]:
    """``post[name]`` as a (draw, ``dim``) array over all chains, with the ``dim`` ids."""
    if name not in post:
        raise FitError(f"the posterior has no '{name}' variable (it has {sorted(map(str, post.data_vars))})")
    var = post[name]
    extra = [d for d in var.dims if d not in ("chain", "draw", dim)]
    if extra:
        raise FitError(f"'{name}' has dimensions {extra} besides chain, draw and {dim}; choose one first")
    stacked = var.stack(sample=("chain", "draw")).transpose("sample", dim)
    values = np.asarray(stacked.values, dtype="float64")
    if not np.isfinite(values).all():
        raise FitError(f"'{name}' holds non-finite draws")
    return values, pd.Index(np.asarray(var[dim].values).astype(str), name=dim)


@dataclass(frozen=True)
class Linking:
    """A mean/sigma link ``reference = A * source + B``, per draw (:func:`link_mean_sigma` makes one; its
    example shows :meth:`table` and :meth:`transform`).

    Attributes
    ----------
    slope, intercept
        A and B, one value per paired draw (draw,).
    items
        The common items used.
    ci_prob
        Probability of the intervals in :meth:`table`.
    """

    slope: np.ndarray
    intercept: np.ndarray
    items: pd.Index
    ci_prob: float

    def table(self) -> pd.DataFrame:
        """One row per constant (``slope``, ``intercept``): ``mean``, ``sd``, ``ci_low``, ``ci_high``."""
        tail = (1 - self.ci_prob) / 2
        rows = []
        for name, values in (("slope", self.slope), ("intercept", self.intercept)):
            low, high = np.quantile(values, [tail, 1 - tail])
            rows.append({"constant": name, "mean": values.mean(), "sd": values.std(), "ci_low": low, "ci_high": high})
        out = pd.DataFrame(rows)
        out.attrs["ci_prob"] = self.ci_prob
        out.attrs["n_common_items"] = len(self.items)
        return out

    def transform(self, values: np.ndarray | float) -> np.ndarray:
        """Source-scale locations (abilities or difficulties) on the reference scale, per draw.

        Parameters
        ----------
        values
            A scalar, a (k,) array of fixed locations, or a (draw, k) array of draws.

        Returns
        -------
        numpy.ndarray
            (draw, k) (a scalar gives (draw, 1)).
        """
        arr = np.asarray(values, dtype="float64")
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.shape[0] not in (1, len(self.slope)):
            raise SpecError(f"transform: {arr.shape[0]} draws given, the link has {len(self.slope)}")
        return self.slope[:, None] * arr + self.intercept[:, None]


def link_mean_sigma(
    source: Any,
    reference: Any,
    *,
    items: Sequence[str] | None = None,
    ci_prob: float = 0.9,
    max_draws: int | None = 1000,
    seed: int = 0,
) -> Linking:
    """Mean/sigma linking of ``source``'s scale onto ``reference``'s through common items, per draw.

    Parameters
    ----------
    source, reference
        Fits, DataTrees or posterior Datasets with ``difficulty`` (chain, draw, item).
    items
        The anchor items (default: every item the two posteriors share).
    ci_prob
        Probability of the intervals of :meth:`Linking.table`.
    max_draws
        Draws paired (a random subset without replacement of each posterior when they have more, or fewer
        when one has fewer); None: as many as the smaller posterior has.
    seed
        Seeds the choice and pairing of draws.

    Returns
    -------
    Linking
        A and B per paired draw, so that ``reference = A * source + B``.

    Raises
    ------
    SpecError
        Fewer than two common items, an anchor missing from a posterior, or anchors of zero spread.

    Examples
    --------
    Two calibrations of the same items, the second on a scale stretched by 2 and shifted by 1:

    >>> from irtbayes.robustness.linking import link_mean_sigma
    >>> rng = np.random.default_rng(0)
    >>> b = rng.normal(size=20)
    >>> reference = xr.Dataset({"difficulty": (("chain", "draw", "item"), b + 0.01 * rng.standard_normal((2, 200, 20)))}, coords={"item": [f"q{i}" for i in range(20)]})
    >>> source = xr.Dataset({"difficulty": (("chain", "draw", "item"), 2 * b + 1 + 0.01 * rng.standard_normal((2, 200, 20)))}, coords={"item": [f"q{i}" for i in range(20)]})
    >>> link = link_mean_sigma(source, reference)
    >>> link.table().round(2).iloc[:, :2]  # reference = A * source + B: A = 1/2, B = -1/2
        constant  mean
    0      slope   0.5
    1  intercept  -0.5
    >>> round(float(link.transform(3.0).mean()), 2)  # 3 on the source's scale is 1 on the reference's
    1.0
    """
    src, src_items = draws_matrix(posterior_dataset(source), "difficulty", "item")
    ref, ref_items = draws_matrix(posterior_dataset(reference), "difficulty", "item")
    if items is None:
        common = src_items.intersection(ref_items, sort=False)
    else:
        common = pd.Index([str(i) for i in items], name="item")
        missing = [i for i in common if i not in src_items or i not in ref_items]
        if missing:
            raise SpecError(f"link_mean_sigma: anchor item(s) {missing[:5]} are not in both posteriors")
    if len(common) < 2:
        raise SpecError(f"link_mean_sigma: needs at least 2 common items, found {len(common)}")
    src = src[:, src_items.get_indexer(common)]
    ref = ref[:, ref_items.get_indexer(common)]
    n = min(len(src), len(ref)) if max_draws is None else min(len(src), len(ref), int(max_draws))
    rng = np.random.default_rng(seed)
    src = src[rng.choice(len(src), n, replace=False)]
    ref = ref[rng.choice(len(ref), n, replace=False)]
    sd_src = src.std(axis=1)
    if np.any(sd_src <= 0):
        raise SpecError("link_mean_sigma: the anchor items' difficulties have no spread in some draw")
    slope = ref.std(axis=1) / sd_src
    intercept = ref.mean(axis=1) - slope * src.mean(axis=1)
    return Linking(slope=slope, intercept=intercept, items=common, ci_prob=float(ci_prob))
