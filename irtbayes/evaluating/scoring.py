"""Scoring new subjects against a fitted item bank: ``score(fit, responses) -> Scores`` (no refit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core import irt
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.plots import forest_rows
from irtbayes.core.summaries import draws_frame, records, spaced, summary_table
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.result import Fit, check_prob, draws_table
from irtbayes.model.spec import GRADED_KINDS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Scores", "score"]


@dataclass(frozen=True)
class Scores:
    """Abilities of new subjects scored against a fitted item bank.

    Attributes
    ----------
    draws
        ``ability`` draws (chain, draw, subject[, dim]): one per posterior draw of the item parameters used.
    n_responses
        Responses per scored subject, indexed by subject id.
    approximate
        True when the item parameters come from an approximate fit.

    Examples
    --------
    >>> import xarray as xr
    >>> draws = xr.DataArray(
    ...     np.array([[[0.1, -1.0], [0.3, -1.2], [0.2, -0.8]]]),
    ...     dims=("chain", "draw", "subject"),
    ...     coords={"subject": ["a", "b"]},
    ... )
    >>> scores = Scores(draws=draws, n_responses=pd.Series({"a": 10, "b": 12}))
    >>> table = scores.table()
    >>> table["subject"].tolist(), table["n_responses"].tolist(), table["ability_mean"].round(2).tolist()
    (['a', 'b'], [10, 12], [0.2, -1.0])
    """

    draws: xr.DataArray
    n_responses: pd.Series
    approximate: bool = False

    def table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per subject (and dim): ``ability_mean``, ``ability_sd``, ``ability_ci_low``, ``ability_ci_high``."""
        check_prob(ci_prob)
        table = draws_table(self.draws, ci_prob, prefix="ability")
        table.insert(1, "n_responses", table["subject"].map(self.n_responses).astype("int64"))
        table["ci_prob"] = ci_prob
        table.attrs.update(ci_prob=ci_prob, approximate=self.approximate)
        return table

    def summary(self, *, ci_prob: float = 0.9) -> pd.DataFrame:
        """:meth:`table`: ``subject``, (``dim``,) ``n_responses``, ``ability_mean``, ``ability_sd``,
        ``ability_ci_low``, ``ability_ci_high``, ``ci_prob``.

        Examples
        --------
        >>> from irtbayes.fitting.result import Fit
        >>> from irtbayes.evaluating.scoring import score
        >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
        >>> data, truth = simulate_responses(30, 40, missing=0.0, seed=1)
        >>> fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
        >>> scores = score(fit, data.subset(subjects=["subject000", "subject001"]), n_draws=100, seed=3)
        >>> table = scores.summary()
        >>> list(table.columns)
        ['subject', 'n_responses', 'ability_mean', 'ability_sd', 'ability_ci_low', 'ability_ci_high', 'ci_prob']
        >>> bool((table["ability_ci_low"] < truth["ability"].values[:2]).all())
        True
        """
        return summary_table(self.table(ci_prob), ci_prob)

    def to_dict(self, *, ci_prob: float = 0.9) -> dict[str, Any]:
        """Plain JSON values: ``approximate``, ``n_draws``, ``ci_prob`` and ``subjects`` (the rows of :meth:`table`)."""
        return {
            "approximate": self.approximate,
            "n_draws": int(self.draws.sizes["chain"] * self.draws.sizes["draw"]),
            "ci_prob": ci_prob,
            "subjects": records(self.table(ci_prob)),
        }

    def to_text(self, *, ci_prob: float = 0.9) -> str:
        """:meth:`table` as plain text, as the ``score`` command prints it (an approximate fit's scores say so first)."""
        with pd.option_context("display.width", 160, "display.max_rows", 200, "display.precision", 3):
            text = self.table(ci_prob).to_string(index=False)
        return ("APPROXIMATE: the item parameters come from an approximate fit.\n" if self.approximate else "") + text

    def to_dataframe(self) -> pd.DataFrame:
        """The ability draws: index (``chain``, ``draw``), one column ``ability[subject]`` per subject (and dim).

        Examples
        --------
        >>> from irtbayes.evaluating.scoring import score
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(30, 40, missing=0.0)
        >>> draws = score(fit, data.subset(subjects=["subject000"]), n_draws=100, seed=3).to_dataframe()
        >>> draws.shape, list(draws.columns)
        ((100, 1), ['ability[subject000]'])
        """
        return draws_frame(xr.Dataset({"ability": self.draws}))

    def plot_forest(self, *, ci_prob: float = 0.9, max_rows: int = 40, ax: Axes | None = None) -> Axes:
        """The scored abilities with their intervals, sorted (at most ``max_rows`` rows, evenly spaced).

        Examples
        --------
        >>> from irtbayes.evaluating.scoring import score
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(30, 40, missing=0.0)
        >>> ax = score(fit, data.subset(subjects=["subject000", "subject001"]), n_draws=100, seed=3).plot_forest()
        >>> ax.get_xlabel()
        'ability (logits)'
        """
        return forest_rows(self.table(ci_prob), prefix="ability", label="subject", max_rows=max_rows, ax=ax)


def score(
    result: Fit,
    new_responses: ResponseData,
    *,
    n_draws: int = 400,
    grid: np.ndarray | None = None,
    seed: int | None = None,
) -> Scores:
    """Abilities of new subjects with the item parameters held at the fitted posterior (no refit).

    For each of ``n_draws`` posterior draws of the item parameters, each new subject's ability posterior
    under the population prior N(0, 1) is computed on a grid, and one ability is drawn from it (with
    uniform jitter within the grid cell). The draws therefore carry both the subject's own uncertainty and
    the uncertainty of the item parameters. With ``dims="domain"`` each dimension is scored from the
    items of its domain, independently (the ability correlation is not used). k successes of n trials enter
    with the binomial likelihood.

    Parameters
    ----------
    result
        A fit whose items include every item in ``new_responses``.
    new_responses
        Responses of the subjects to score (they may or may not be among the fitted subjects; they are
        scored afresh).
    n_draws
        Posterior draws of the item parameters to use (thinned evenly).
    grid
        Ability grid (default: 241 points on [-6, 6]).
    seed
        Seed for the draws.

    Returns
    -------
    Scores
        ``draws`` (chain=1, draw, subject[, dim]) and ``table()``.

    Raises
    ------
    DataError
        Items in ``new_responses`` that the fit does not know.

    Examples
    --------
    >>> from irtbayes.fitting.result import Fit
    >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(30, 40, missing=0.0, seed=1)
    >>> result = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
    >>> scores = score(result, data, n_draws=100, seed=3)
    >>> dict(scores.draws.sizes)
    {'chain': 1, 'draw': 100, 'subject': 30}
    >>> mean = scores.draws.mean(("chain", "draw"))
    >>> bool(np.corrcoef(mean, truth["ability"])[0, 1] > 0.8)
    True
    """
    if not isinstance(new_responses, ResponseData):
        raise DataError(f"score: expected ResponseData, got {type(new_responses).__name__}")
    known = result.item_ids
    unknown = new_responses.item_ids.difference(known)
    if len(unknown):
        raise DataError(
            f"{new_responses.source}: {len(unknown)} item(s) are not in the fitted item bank, e.g. "
            f"{list(unknown[:5])}; refit with them, or drop them (data.subset(items=...))"
        )
    rng = np.random.default_rng(seed)
    grid = np.linspace(-6, 6, 241) if grid is None else np.asarray(grid, dtype="float64")
    if grid.ndim != 1 or len(grid) < 3 or np.any(np.diff(grid) <= 0):
        raise SpecError("score: grid must be an increasing 1-d array with at least 3 points")
    post = result.posterior
    n_total = post.sizes["chain"] * post.sizes["draw"]
    pick = spaced(n_total, n_draws)
    cols = known.get_indexer(new_responses.item_ids)

    def flat(name: str) -> np.ndarray:
        v = post[name].transpose("chain", "draw", "item").values
        return v.reshape(n_total, -1)[pick][:, cols]

    if result.spec.kind in GRADED_KINDS:
        return _score_graded(result, new_responses, pick=pick, cols=cols, grid=grid, rng=rng)
    a, b = flat("discrimination"), flat("difficulty")
    c = flat("guessing") if "guessing" in post else None
    y = np.zeros((new_responses.n_subjects, new_responses.n_items))
    w = np.zeros_like(y)
    y[new_responses.subject_codes, new_responses.item_codes] = new_responses.values
    w[new_responses.subject_codes, new_responses.item_codes] = new_responses.trials  # k of n: weighed by n
    multi = "dim" in post["ability"].dims
    if multi:
        dims = post["dim"].values.astype(str)
        item_domain = result.constant_data["item_domain"].values.astype(str)[cols]
        groups = [(d, item_domain == d) for d in dims]
    else:
        groups = [("", np.ones(new_responses.n_items, dtype=bool))]
    out = np.zeros((len(pick), new_responses.n_subjects, len(groups)))
    for g, (_, mask) in enumerate(groups):
        yw, nw = (y * w)[:, mask], ((1 - y) * w)[:, mask]
        for s in range(len(pick)):
            eta = irt.linear_predictor(grid[:, None], b[s, mask][None, :], a[s, mask][None, :])
            l1, l0 = irt.log_probabilities(eta, None if c is None else c[s, mask][None, :])
            prob = irt.grid_posterior(l1 @ yw.T + l0 @ nw.T, grid)  # grid x subject
            out[s, :, g] = irt.sample_grid(prob, grid, rng)
    return _scores(out, new_responses, [d for d, _ in groups] if multi else None, approximate=result.approximate)


def _score_graded(
    result: Fit, new: ResponseData, *, pick: np.ndarray, cols: np.ndarray, grid: np.ndarray, rng: np.random.Generator
) -> Scores:
    """:func:`score` for a graded fit: the grid posterior sums log P(Y = y) of each response's category."""
    post = result.posterior
    kind = result.spec.kind
    if "dim" in post["ability"].dims:
        raise SpecError("score: graded fits with abilities by domain are not scored yet; score a one-dimensional fit")
    n_total = post.sizes["chain"] * post.sizes["draw"]
    thresholds = post["threshold"].transpose("chain", "draw", "item", "boundary").values
    thresholds = thresholds.reshape(n_total, *thresholds.shape[2:])[pick][:, cols].astype("float64")
    a = post["discrimination"].transpose("chain", "draw", "item").values.reshape(n_total, -1)[pick][:, cols]
    n_categories = 1 + np.count_nonzero(~np.isnan(thresholds[0]), axis=-1)  # (item,), from the fit
    codes = new.values
    if np.any(codes != np.round(codes)) or np.any(codes >= n_categories[new.item_codes]):
        row = int(np.flatnonzero((codes != np.round(codes)) | (codes >= n_categories[new.item_codes]))[0])
        raise DataError(
            f"{new.source}: the response of subject '{new.responses['subject'].iloc[row]}' to item "
            f"'{new.responses['item'].iloc[row]}' is {codes[row]:g}, not one of the item's categories in the fit "
            f"(codes 0..{n_categories[new.item_codes[row]] - 1}); read the responses as the fit's categories"
        )
    n_max = thresholds.shape[-1] + 1
    onehot = np.zeros((new.n_subjects, new.n_items, n_max))
    onehot[new.subject_codes, new.item_codes, codes.astype("int64")] = 1.0
    out = np.zeros((len(pick), new.n_subjects, 1))
    for s in range(len(pick)):
        logp = irt.graded_log_probabilities(grid[:, None], a[s][None, :], thresholds[s][None, :], kind=kind)
        logp = np.where(np.isfinite(logp), logp, 0.0)  # categories an item lacks: never observed
        prob = irt.grid_posterior(np.einsum("gik,sik->gs", logp, onehot), grid)  # grid x subject
        out[s, :, 0] = irt.sample_grid(prob, grid, rng)
    return _scores(out, new, None, approximate=result.approximate)


def _scores(out: np.ndarray, responses: ResponseData, dims: list[str] | None, *, approximate: bool) -> Scores:
    """:class:`Scores` from (draw, subject, group) ability draws; ``dims`` names the groups of a multidimensional fit."""
    subjects = responses.subject_ids.to_numpy(dtype=str)
    if dims is not None:
        da = xr.DataArray(
            out[None],
            dims=("chain", "draw", "subject", "dim"),
            coords={"subject": subjects, "dim": dims},
            name="ability",
        )
    else:
        da = xr.DataArray(
            out[None, :, :, 0], dims=("chain", "draw", "subject"), coords={"subject": subjects}, name="ability"
        )
    counts = pd.Series(np.bincount(responses.subject_codes, minlength=responses.n_subjects), index=subjects)
    return Scores(draws=da, n_responses=counts, approximate=approximate)
