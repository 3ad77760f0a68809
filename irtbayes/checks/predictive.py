"""Checks of a fitted model against its data: posterior predictive checks and PSIS-LOO.

- :func:`posterior_predictive_check`: per-item proportion correct, per-subject total score and the
  item-rest relation, each against its posterior predictive distribution (Bayesian p-values).
- :func:`log_likelihood` and :func:`compare_fits`: pointwise log-likelihood and PSIS-LOO comparison of fits.

k successes of n repeated trials (:mod:`irtbayes.data.trials`) have the binomial likelihood: their log-likelihood is
the binomial log pmf (LOO values are exact and compare with other binomial fits of the same data) and their
replications are Binomial(n, p) draws, compared as shares.
Fractional responses are fitted with the fractional-logit quasi-likelihood (:mod:`irtbayes.model.build`): the
predictive check, the log-likelihood and the LOO comparison say so (in their summaries, their ``attrs`` and a
warning), since a quasi-likelihood is not the density of the data. Ordinal responses fitted with a graded
model (GRM, GPCM) have a true likelihood: their LOO values compare between graded fits of the same data, and
their replications are categories drawn from the model (statistics on the category codes 0..K-1).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import arviz_stats as azs
import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.core.files import json_ready
from irtbayes.core.summaries import records, spaced, summarize, summary_table
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.result import Fit

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["QUASI_LIKELIHOOD_NOTE", "PredictiveCheck", "compare_fits", "log_likelihood", "posterior_predictive_check"]

#: What the predictive check, the log-likelihood and the LOO comparison say about fractional responses.
QUASI_LIKELIHOOD_NOTE = (
    "responses are fractional (scores strictly between 0 and 1): the fractional-logit quasi-likelihood is "
    "used, which is not the density of the data; LOO/ELPD values are not comparable with fits to binary "
    "responses, and Pareto k and predictive p-values are approximate"
)


#: The likelihood of each graded model, as the checks name it.
GRADED_LIKELIHOODS = {"grm": "graded response (categorical)", "gpcm": "generalised partial credit (categorical)"}


def _likelihood_name(data: ResponseData, kind: str = "2pl") -> str:
    if kind in GRADED_LIKELIHOODS:
        return GRADED_LIKELIHOODS[kind]
    return {"binary": "bernoulli", "counts": "binomial"}.get(data.response_kind, "fractional-logit quasi-likelihood")


def _is_quasi(data: ResponseData) -> bool:
    """Whether the fit used the fractional-logit quasi-likelihood (fractional scores, not categories)."""
    return data.response_kind == "fraction"


def _draw_index(result: Fit, n_draws: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(chain, draw) positions of an even thinning to about ``n_draws`` draws, every chain kept."""
    post = result.posterior
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    per_chain = n_draw if n_draws is None else max(1, min(n_draw, int(np.ceil(n_draws / n_chain))))
    draws = spaced(n_draw, per_chain)
    return np.arange(n_chain), draws


def _response_predictors(
    result: Fit, data: ResponseData, chains: np.ndarray, draws: np.ndarray
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray | None]]:
    """Yield, per (chain, draw), the linear predictor and guessing of every response row of ``data`` (long order)."""
    post = result.posterior
    i = data.item_codes
    diff = post["difficulty"].isel(chain=chains, draw=draws).values
    disc = post["discrimination"].isel(chain=chains, draw=draws).values
    guess = post["guessing"].isel(chain=chains, draw=draws).values if "guessing" in post else None
    for c, d, theta in _row_abilities(result, data, chains, draws):
        yield (
            c,
            d,
            irt.linear_predictor(theta, diff[c, d][i], disc[c, d][i]),
            None if guess is None else guess[c, d][i],
        )


def _row_abilities(
    result: Fit, data: ResponseData, chains: np.ndarray, draws: np.ndarray
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield, per (chain, draw), the ability behind every response row of ``data`` (its item's dimension's)."""
    s, i = data.subject_codes, data.item_codes
    ability = result.posterior["ability"].isel(chain=chains, draw=draws)
    if "dim" in ability.dims:
        dims = list(ability["dim"].values.astype(str))
        item_dim = np.array([dims.index(d) for d in result.constant_data["item_domain"].values.astype(str)])
        theta_all = ability.transpose("chain", "draw", "subject", "dim").values
    else:
        item_dim = None
        theta_all = ability.transpose("chain", "draw", "subject").values
    for c in range(len(chains)):
        for d in range(len(draws)):
            yield c, d, theta_all[c, d][s, item_dim[i]] if item_dim is not None else theta_all[c, d][s]


def _graded_rows(
    result: Fit, data: ResponseData, chains: np.ndarray, draws: np.ndarray
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield, per (chain, draw) of a graded fit, the ability, discrimination and thresholds of every response row."""
    post = result.posterior
    i = data.item_codes
    disc = post["discrimination"].isel(chain=chains, draw=draws).transpose("chain", "draw", "item").values
    thresholds = post["threshold"].isel(chain=chains, draw=draws).transpose("chain", "draw", "item", "boundary").values
    for c, d, theta in _row_abilities(result, data, chains, draws):
        yield c, d, theta, disc[c, d][i].astype("float64"), thresholds[c, d][i].astype("float64")


def _item_rest_corr(y: np.ndarray, s: np.ndarray, i: np.ndarray, n_subjects: int, n_items: int) -> np.ndarray:
    n_s = np.bincount(s, minlength=n_subjects)
    total = np.bincount(s, weights=y, minlength=n_subjects)
    rest = (total[s] - y) / np.maximum(n_s[s] - 1, 1)
    n = np.bincount(i, minlength=n_items).astype("float64")
    sy = np.bincount(i, weights=y, minlength=n_items)
    sr = np.bincount(i, weights=rest, minlength=n_items)
    syy = np.bincount(i, weights=y * y, minlength=n_items)
    srr = np.bincount(i, weights=rest * rest, minlength=n_items)
    syr = np.bincount(i, weights=y * rest, minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = syr - sy * sr / n
        var_y, var_r = syy - sy**2 / n, srr - sr**2 / n
        # an item answered alike by everyone (or rest scores all equal) has no correlation: NaN, not the +-inf
        # that rounding leaves in a variance that should be 0
        flat = (var_y <= 1e-9 * np.maximum(syy, 1.0)) | (var_r <= 1e-9 * np.maximum(srr, 1.0))
        return np.where(flat, np.nan, cov / np.sqrt(var_y * var_r))


@dataclass(frozen=True)
class PredictiveCheck:
    """Posterior predictive checks of a fit, with Bayesian p-values.

    Attributes
    ----------
    items
        One row per item: ``item``, ``benchmark``, ``n_responses``, ``observed_mean``, ``predicted_mean``,
        ``predicted_ci_low``, ``predicted_ci_high``, ``p_value_mean``, ``observed_item_rest``,
        ``predicted_item_rest``, ``p_value_item_rest`` and ``misfit`` (either p-value outside
        [alpha/2, 1 - alpha/2]; for fractional responses only the item mean counts, see ``notes``).
    subjects
        One row per subject: ``subject``, ``n_responses``, ``observed_total``, ``predicted_total``,
        ``predicted_ci_low``, ``predicted_ci_high``, ``p_value_total``, ``misfit``.
    alpha, ci_prob, n_draws
        Two-sided level of the misfit flags; interval probability; replicated data sets used.
    quasi_likelihood
        The responses are fractional and the fit used the fractional-logit quasi-likelihood.
    notes
        Sentences that qualify the check (the quasi-likelihood statement for fractional responses).

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> result, data = simulated_fit(40, 60)
    >>> check = posterior_predictive_check(result, data, n_draws=100, seed=3)
    >>> check.to_text().startswith("Posterior predictive check (100 replicated data sets")
    True
    >>> table = check.summary()
    >>> list(table.columns[:5]), table.attrs["ci_prob"]
    (['item', 'benchmark', 'n_responses', 'observed_mean', 'predicted_mean'], 0.9)
    >>> ax = check.plot_items(top=10)
    >>> len(ax.get_yticklabels())
    10
    """

    items: pd.DataFrame
    subjects: pd.DataFrame
    alpha: float
    ci_prob: float
    n_draws: int
    quasi_likelihood: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        """One row per item (:attr:`items`): ``predicted_mean``, ``predicted_ci_low``, ``predicted_ci_high``, ....

        ``attrs`` record ``ci_prob``, ``alpha``, ``n_draws``, ``approximate``, ``likelihood`` and ``notes``;
        :meth:`to_dataframe` gives the subjects' table, :meth:`to_text` the verdict in prose.
        """
        return summary_table(self.items, self.ci_prob)

    def to_dataframe(self, table: str = "items") -> pd.DataFrame:
        """One of the tables by name, a copy (``attrs`` kept): ``items`` or ``subjects``."""
        tables = {"items": self.items, "subjects": self.subjects}
        if table not in tables:
            raise SpecError(f"no predictive-check table {table!r}; the tables are {sorted(tables)}")
        return tables[table].copy()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: the settings, the misfit counts, ``notes`` and the rows of both tables."""
        return json_ready(
            {
                "alpha": self.alpha,
                "ci_prob": self.ci_prob,
                "n_draws": self.n_draws,
                "quasi_likelihood": self.quasi_likelihood,
                "notes": list(self.notes),
                "n_items_misfit": int(self.items["misfit"].sum()),
                "n_subjects_misfit": int(self.subjects["misfit"].sum()),
                "items": records(self.items),
                "subjects": records(self.subjects),
            }
        )

    def to_text(self) -> str:
        """A paragraph: misfitting items and subjects against the share expected by chance, the lowest item-rest
        p-values, and the notes."""
        n_items = int(self.items["misfit"].sum())
        n_subj = int(self.subjects["misfit"].sum())
        expected = self.alpha * 2  # two statistics per item
        worst = self.items.sort_values("p_value_item_rest").head(5)["item"].tolist()
        text = (
            f"Posterior predictive check ({self.n_draws} replicated data sets, two-sided level {self.alpha:g}): "
            f"{n_items} of {len(self.items)} items misfit (about {expected:.0%} expected by chance), "
            f"{n_subj} of {len(self.subjects)} subjects' total scores misfit. "
            f"Lowest item-rest p-values: {', '.join(worst)}."
        )
        return "\n".join([text, *(f"Note: {n}." for n in self.notes)])

    def plot_items(self, *, top: int = 30, ax: Axes | None = None) -> Axes:
        """The predicted interval of each item's mean response with the observed mean (×), for the ``top`` items
        whose p-values are furthest from 1/2 (:func:`irtbayes.core.plots.plot_forest`)."""
        from irtbayes.core.plots import plot_forest

        items = self.items
        rows = items.loc[(items["p_value_mean"] - 0.5).abs().sort_values(ascending=False, na_position="last").index]
        rows = rows.head(top)
        shown = (
            f"the {len(rows)} of {len(items)} items with the most extreme p-values"
            if len(rows) < len(items)
            else "every item"
        )
        axes: Axes = plot_forest(
            rows,
            mean="predicted_mean",
            low="predicted_ci_low",
            high="predicted_ci_high",
            observed="observed_mean",
            label="item",
            colour_by="benchmark",
            xlabel="mean response",
            title=f"Predicted {self.ci_prob:.0%} interval and observed (×) item means: {shown}",
            ax=ax,
        )
        return axes


def _p_value(replicated: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Mid-p: P(T_rep > T_obs) + P(T_rep = T_obs) / 2, per column, over the replications where T_rep is defined
    (finite); NaN where T_obs is not, or no replication is.

    Examples
    --------
    >>> rep = np.array([[0.1, np.nan], [0.3, 0.2], [0.5, np.nan]])
    >>> _p_value(rep, np.array([0.3, 0.1])).round(3).tolist()
    [0.5, 1.0]
    """
    finite = np.isfinite(replicated)
    n = finite.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        above = ((replicated > observed[None, :]) & finite).sum(axis=0) / n
        tie = (np.isclose(replicated, observed[None, :], rtol=0, atol=1e-12) & finite).sum(axis=0) / n
    return np.where(np.isfinite(observed) & (n > 0), above + 0.5 * tie, np.nan)


def posterior_predictive_check(
    result: Fit,
    data: ResponseData,
    *,
    n_draws: int = 200,
    alpha: float = 0.05,
    ci_prob: float = 0.9,
    seed: int | None = None,
) -> PredictiveCheck:
    """Replicate the data from the posterior and compare per-item and per-subject statistics.

    Statistics: each item's mean response, each item's correlation with the rest score (the subject's mean
    on the other items; a model that misses an item's relation to ability shows here), each subject's
    total score. Fractional responses are fitted with the fractional-logit quasi-likelihood, which has no
    distribution to replicate from: they are replicated as 0/1 with the predicted mean, so only the item
    means are comparable. For them the item-rest p-values are reported but do not flag misfit (0/1
    replications have a weaker item-rest relation than fractional scores), total-score p-values are
    conservative, and ``notes``, the tables' ``attrs`` and a warning say so.

    Parameters
    ----------
    result
        The fit.
    data
        The data it was fitted to (checked by checksum).
    n_draws
        Posterior draws to replicate from (thinned evenly).
    alpha
        Two-sided level: a p-value below alpha/2 or above 1 - alpha/2 flags misfit.
    ci_prob
        Probability of the predictive intervals.
    seed
        Seed of the replications.

    Returns
    -------
    PredictiveCheck
        ``items`` (one row per item) and ``subjects`` (one row per subject) tables.

    Raises
    ------
    FitError
        ``data`` is not the data of the fit.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> result, data = simulated_fit(40, 60)
    >>> check = posterior_predictive_check(result, data, n_draws=100, seed=3)
    >>> check.items.shape, check.subjects.shape, check.n_draws
    ((60, 12), (40, 8), 100)
    >>> int(check.items["misfit"].sum()) <= 6  # about 2 x 5% of 60 items by chance, for the true model
    True
    """
    result.check_data(data)
    if not 0 < alpha < 1 or not 0 < ci_prob < 1:
        raise SpecError(f"posterior_predictive_check: alpha and ci_prob must be in (0, 1), got {alpha}, {ci_prob}")
    rng = np.random.default_rng(seed)
    chains, draws = _draw_index(result, n_draws)
    replicated = _replicate(result, data, chains, draws, rng)
    n_rep = len(replicated[0])
    quasi = _is_quasi(data)
    notes = []
    if quasi:
        notes.append(
            f"{QUASI_LIKELIHOOD_NOTE}; the replications are 0/1 draws with the predicted mean, so only the item "
            "means are comparable: item-rest p-values do not flag misfit and total-score p-values are conservative"
        )
        warnings.warn(notes[-1], UserWarning, stacklevel=2)
    items, subjects = _predictive_tables(data, replicated, alpha=alpha, ci_prob=ci_prob, quasi=quasi)
    for table in (items, subjects):
        table.attrs.update(
            ci_prob=ci_prob,
            alpha=alpha,
            n_draws=n_rep,
            approximate=result.approximate,
            likelihood=_likelihood_name(data, result.spec.kind),
            notes=list(notes),
        )
    return PredictiveCheck(
        items=items,
        subjects=subjects,
        alpha=alpha,
        ci_prob=ci_prob,
        n_draws=n_rep,
        quasi_likelihood=quasi,
        notes=notes,
    )


def _predictive_tables(
    data: ResponseData,
    replicated: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    alpha: float,
    ci_prob: float,
    quasi: bool,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``items`` and ``subjects`` tables of :class:`PredictiveCheck` from the replicated statistics."""
    item_mean, item_rest, subj_total = replicated
    s, i, y = data.subject_codes, data.item_codes, data.values
    n_s, n_i = data.n_subjects, data.n_items
    n_item = np.maximum(np.bincount(i, minlength=n_i), 1)
    obs_mean = np.bincount(i, weights=y, minlength=n_i) / n_item
    obs_rest = _item_rest_corr(y, s, i, n_s, n_i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # items answered alike in a replication have no correlation
        pred_rest = np.nanmean(item_rest, axis=0)
    obs_total = np.bincount(s, weights=y, minlength=n_s)
    item_stats = summarize(item_mean, ci_prob=ci_prob)
    total_stats = summarize(subj_total, ci_prob=ci_prob)
    p_mean = _p_value(item_mean, obs_mean)
    p_rest = _p_value(item_rest, obs_rest)
    p_total = _p_value(subj_total, obs_total)

    def outside(p: np.ndarray) -> np.ndarray:
        return (p < alpha / 2) | (p > 1 - alpha / 2)

    items = pd.DataFrame(
        {
            "item": data.item_ids.to_numpy(dtype=str),
            "benchmark": data.items["benchmark"].to_numpy(),
            "n_responses": np.bincount(i, minlength=n_i),
            "observed_mean": obs_mean,
            "predicted_mean": item_stats["mean"],
            "predicted_ci_low": item_stats["ci_low"],
            "predicted_ci_high": item_stats["ci_high"],
            "p_value_mean": p_mean,
            "observed_item_rest": obs_rest,
            "predicted_item_rest": pred_rest,
            "p_value_item_rest": p_rest,
        }
    )
    # an item everyone (or no one) answers alike has no item-rest correlation to check
    constant = ~np.isfinite(obs_rest)
    items.loc[constant, "p_value_item_rest"] = np.nan
    items["misfit"] = outside(p_mean) | (outside(p_rest) & ~constant & (not quasi))
    subjects = pd.DataFrame(
        {
            "subject": data.subject_ids.to_numpy(dtype=str),
            "n_responses": np.bincount(s, minlength=n_s),
            "observed_total": obs_total,
            "predicted_total": total_stats["mean"],
            "predicted_ci_low": total_stats["ci_low"],
            "predicted_ci_high": total_stats["ci_high"],
            "p_value_total": p_total,
        }
    )
    subjects["misfit"] = outside(p_total)
    return items, subjects


def _replicate(
    result: Fit, data: ResponseData, chains: np.ndarray, draws: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per replicated data set (one per posterior draw): item means, item-rest correlations, subject totals."""
    s, i = data.subject_codes, data.item_codes
    n_s, n_i = data.n_subjects, data.n_items
    n_rep = len(chains) * len(draws)
    item_mean = np.empty((n_rep, n_i))
    item_rest = np.empty((n_rep, n_i))
    subj_total = np.empty((n_rep, n_s))
    n_item = np.maximum(np.bincount(i, minlength=n_i), 1)
    for k, rep in enumerate(_replications(result, data, chains, draws, rng)):
        item_mean[k] = np.bincount(i, weights=rep, minlength=n_i) / n_item
        item_rest[k] = _item_rest_corr(rep, s, i, n_s, n_i)
        subj_total[k] = np.bincount(s, weights=rep, minlength=n_s)
    return item_mean, item_rest, subj_total


def _replications(
    result: Fit, data: ResponseData, chains: np.ndarray, draws: np.ndarray, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """One replicated response per row of ``data``, per (chain, draw): 0/1 draws, shares of successes of Binomial(n,
    p) draws for data with trials, or categories of a graded fit."""
    kind = result.spec.kind
    if kind in GRADED_LIKELIHOODS:
        for _, _, theta, a, b in _graded_rows(result, data, chains, draws):
            cumulative = np.cumsum(irt.graded_probabilities(theta, a, b, kind=kind), axis=-1)
            yield (rng.random(len(theta))[:, None] > cumulative[:, :-1]).sum(axis=1).astype("float64")
        return
    trials = data.trials if data.has_trials else None
    for _, _, eta, guessing in _response_predictors(result, data, chains, draws):
        p = irt.sigmoid_mix(eta, guessing)
        if trials is None:
            yield (rng.random(len(p)) < p).astype("float64")
        else:  # k of n trials: the share of successes of n draws
            yield rng.binomial(trials, p) / trials


# ---------------------------------------------------------------------------------------------- LOO
def log_likelihood(result: Fit, data: ResponseData, *, n_draws: int | None = 1000) -> xr.DataArray:
    """Pointwise log-likelihood of every response, per posterior draw.

    Parameters
    ----------
    result, data
        The fit and the data it was fitted to (checked by checksum).
    n_draws
        Posterior draws to use, thinned evenly over each chain (``None``: all). Memory is
        ``n_draws x n_responses x 8`` bytes.

    Returns
    -------
    xarray.DataArray
        ``log_likelihood`` (chain, draw, response); coords ``subject`` and ``item`` on ``response``; for k successes
        of n trials the binomial log pmf, log C(n, k) included. ``attrs``: ``likelihood`` (``"bernoulli"``,
        ``"binomial"``, ``"fractional-logit quasi-likelihood"`` or, for a graded fit, the
        categorical likelihood of its model, :data:`GRADED_LIKELIHOODS`), ``quasi_likelihood`` and,
        for fractional responses, ``note`` (:data:`QUASI_LIKELIHOOD_NOTE`, also given as a warning): the
        values are then quasi-log-likelihoods, not comparable with those of binary responses.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> result, data = simulated_fit(40, 60)
    >>> ll = log_likelihood(result, data, n_draws=50)  # 25 draws from each chain
    >>> dict(ll.sizes), ll.sizes["response"] == data.n_responses, ll.attrs["likelihood"]
    ({'chain': 2, 'draw': 25, 'response': 2161}, True, 'bernoulli')
    >>> bool((ll < 0).all())
    True
    """
    result.check_data(data)
    chains, draws = _draw_index(result, n_draws)
    y = data.values
    out = np.empty((len(chains), len(draws), data.n_responses))
    kind = result.spec.kind
    if kind in GRADED_LIKELIHOODS:
        for c, d, theta, a, b in _graded_rows(result, data, chains, draws):
            out[c, d] = irt.graded_log_likelihood(y, theta, a, b, kind=kind)
    elif data.has_trials:  # the binomial log pmf, log C(n, k) included, so that LOO values are the data's density
        n = data.trials
        constant = irt.log_binomial_coefficient(n, data.successes)
        for c, d, eta, guessing in _response_predictors(result, data, chains, draws):
            out[c, d] = irt.log_likelihood(y, eta, guessing, trials=n) + constant
    else:
        for c, d, eta, guessing in _response_predictors(result, data, chains, draws):
            out[c, d] = irt.log_likelihood(y, eta, guessing)
    quasi = _is_quasi(data)
    attrs: dict[str, Any] = {"likelihood": _likelihood_name(data, kind), "quasi_likelihood": int(quasi)}
    if quasi:
        attrs["note"] = QUASI_LIKELIHOOD_NOTE
        warnings.warn(QUASI_LIKELIHOOD_NOTE, UserWarning, stacklevel=2)
    return xr.DataArray(
        out,
        attrs=attrs,
        dims=("chain", "draw", "response"),
        coords={
            "chain": chains,
            "draw": result.posterior["draw"].values[draws],
            "subject": ("response", data.responses["subject"].astype(str).to_numpy()),
            "item": ("response", data.responses["item"].astype(str).to_numpy()),
        },
        name="log_likelihood",
    )


def compare_fits(
    fits: dict[str, Fit] | list[Fit],
    data: ResponseData,
    *,
    n_draws: int | None = 1000,
    pareto_k_max: float = 0.7,
) -> pd.DataFrame:
    """Compare fits to the same data by PSIS-LOO (leave one response out), with Pareto-k warnings.

    Parameters
    ----------
    fits
        Fits by name (a list is named ``fit0``, ``fit1``, ... or by kind when the kinds differ).
    data
        The data every fit was made from (checked by checksum).
    n_draws
        Posterior draws used per fit (thinned evenly).
    pareto_k_max
        Responses whose Pareto k exceeds this make the LOO estimate unreliable: a warning says how many.

    Returns
    -------
    pandas.DataFrame
        arviz-stats' comparison table (rank, elpd, elpd_diff, se, dse, weight, ...), one row per fit,
        plus ``n_high_pareto_k``. ``attrs``: ``pareto_k_max``, ``approximate``, ``likelihood`` and, for
        fractional responses, ``note`` (:data:`QUASI_LIKELIHOOD_NOTE`, also given as one warning): the ELPD
        values are then quasi-likelihood values, comparable between these fits but not with fits to binary
        responses.

    Examples
    --------
    >>> import warnings
    >>> from irtbayes.fitting.result import Fit
    >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(20, 30, seed=1)
    >>> posterior = posterior_near_truth(data, truth, chains=2, draws=100, seed=2)
    >>> true = Fit.from_posterior(posterior, data)
    >>> flipped = Fit.from_posterior(posterior.assign(difficulty=-posterior["difficulty"]), data)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # a few responses have high Pareto k with so few draws
    ...     table = compare_fits({"true": true, "flipped": flipped}, data, n_draws=200)
    >>> table.index.tolist(), bool(table.loc["flipped", "elpd_diff"] < -50)
    (['true', 'flipped'], True)
    """
    if isinstance(fits, list):
        kinds = [f.spec.kind for f in fits]
        names = kinds if len(set(kinds)) == len(kinds) else [f"fit{k}" for k in range(len(fits))]
        fits = dict(zip(names, fits, strict=True))
    if len(fits) < 2:
        raise SpecError("compare_fits: need at least two fits")
    trees = {}
    high = {}
    for name, result in fits.items():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="responses are fractional", category=UserWarning)
            ll = log_likelihood(result, data, n_draws=n_draws)
        tree = xr.DataTree.from_dict(
            {
                "posterior": xr.Dataset({"ll_total": ll.sum("response")}),
                "log_likelihood": xr.Dataset({"loglik": ll.drop_vars(["subject", "item"])}),
            }
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loo = azs.loo(tree, pointwise=True)
        k = np.asarray(loo.pareto_k).ravel()
        high[name] = int((k > pareto_k_max).sum())
        if high[name]:
            warnings.warn(
                f"{name}: {high[name]} of {len(k)} responses have Pareto k > {pareto_k_max:g}; "
                "the PSIS-LOO estimate of this fit is unreliable",
                UserWarning,
                stacklevel=2,
            )
        trees[name] = tree
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = azs.compare(trees, round_to="none")
    table["n_high_pareto_k"] = [high[name] for name in table.index]
    table.attrs.update(
        pareto_k_max=pareto_k_max,
        approximate=any(f.approximate for f in fits.values()),
        likelihood=" / ".join(sorted({_likelihood_name(data, f.spec.kind) for f in fits.values()})),
    )
    if _is_quasi(data):
        table.attrs["note"] = QUASI_LIKELIHOOD_NOTE
        warnings.warn(QUASI_LIKELIHOOD_NOTE, UserWarning, stacklevel=2)
    return table
