"""The approximate tier (``sampler="approx"``): empirical Bayes with conditional grid posteriors.

For matrices beyond NUTS on the machine at hand (tens of thousands of items, millions of responses). It
fits the same 1PL/2PL model as :mod:`irtbayes.model.build` (standardised abilities, items around their
benchmark's mean difficulty and log-discrimination) in two stages, and returns posterior draws in the
same layout as NUTS, so the audit, the report and BenchFill run unchanged.

1. **Empirical-Bayes modes.** Alternating Newton steps on the items given the abilities and on the
   abilities given the items, with the hyperparameters (each benchmark's mean difficulty and mean
   log-discrimination, the spreads around them) set in each round to their EM estimates from the items'
   Laplace moments, and the abilities re-standardised (mean 0, mean square 1 over subjects, their
   posterior variance included) as the model does in every draw.
2. **Conditional grid posteriors.** Each item's posterior on a grid over (difficulty, log-discrimination)
   given the abilities *and their uncertainty*: the likelihood of a response integrates the subject's
   ability over its normal approximation with the probit approximation
   E[sigmoid(a (theta - b))] ~ sigmoid(a (m - b) / sqrt(1 + pi a^2 v / 8)). Each ability's posterior on a
   grid given the items and their uncertainty, in the same way (the variance of a (theta - b) from the
   items' grid moments). Draws are taken from the grids (jittered within a cell), independently across
   items and subjects, and abilities standardised in every draw.

What it leaves out, and so where it is approximate: the dependence between items through the abilities
(and between abilities through the items) beyond their means and variances, the uncertainty of the
hyperparameters in the items' priors (plugged in at their estimates; their own draws in the output come
from their sampling distributions), and the domain level of the hierarchy (benchmark means are estimated
without pooling across benchmarks). These matter little when every subject answers many items and every
item is answered by many subjects (leaderboards), and a lot when they do not (a 5-item test): the
validation in ``scripts/validate_approx.py`` measures the coverage of its intervals against the truth
and against NUTS. Every output of a fit from this tier is labelled approximate. 3PL and multidimensional
abilities are not supported (:class:`~irtbayes.core.errors.SpecError`).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.core.irt import grid_draws, grid_probabilities, log_likelihood, sigmoid_mix
from irtbayes.data.responses import ResponseData
from irtbayes.model.inputs import ModelInputs, model_inputs
from irtbayes.model.spec import ModelSpec, Priors

__all__ = ["ApproxSettings", "Modes", "approx_posterior", "empirical_bayes"]

log = logging.getLogger(__name__)

_PROBIT = math.pi / 8.0
_CELLS_PER_CHUNK = 4_000_000  # grid evaluations held in memory at once (float64: 32 MB per array)
_EDGE_MASS = 1e-3  # an item grid holding more than this on its edge is evaluated again, wider
#: Rounds of the empirical-Bayes iteration at most (``ApproxSettings.max_iter=None``): at least MIN_ROUNDS, at most
#: MAX_ROUNDS, and otherwise as many as make ROUND_CELLS cell evaluations (leaderboards settle in about 40 rounds;
#: three systems' answers to 50 items, under 1,300).
MIN_ROUNDS, MAX_ROUNDS, ROUND_CELLS = 200, 3000, 50_000_000


def _max_rounds(settings: ApproxSettings, cells: int) -> int:
    """The most rounds of the iteration for a matrix of ``cells`` cells.

    >>> _max_rounds(ApproxSettings(), 150), _max_rounds(ApproxSettings(), 29 * 12_032), _max_rounds(ApproxSettings(max_iter=7), 1)
    (3000, 200, 7)
    """
    if settings.max_iter is not None:
        return int(settings.max_iter)
    return int(np.clip(ROUND_CELLS // max(cells, 1), MIN_ROUNDS, MAX_ROUNDS))


@dataclass(frozen=True)
class ApproxSettings:
    """Settings of the approximate tier.

    Attributes
    ----------
    max_iter
        Rounds of the empirical-Bayes iteration at most; None (default): :data:`MIN_ROUNDS` for large matrices, up
        to :data:`MAX_ROUNDS` for small ones (:data:`ROUND_CELLS` cells in all: a round costs a pass over the
        matrix, and small data with few subjects, whose modes move along flat ridges, settle in hundreds of rounds).
    tol
        Stop when no difficulty, log-discrimination or ability moves by more than this many of its own
        posterior sds (Laplace) in a round.
    item_grid
        Grid points per item: (difficulty, log-discrimination); the 1PL uses the first only.
    ability_grid
        Grid points per subject.
    width
        Half-width of each grid in posterior standard deviations of the Laplace approximation.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> from irtbayes.model.spec import ModelSpec
    >>> data, _ = simulate_responses(40, 60, seed=1)
    >>> coarse = ApproxSettings(item_grid=(11, 5), ability_grid=21)
    >>> _, _, info = approx_posterior(data, ModelSpec(kind="1pl"), chains=1, draws=100, settings=coarse)
    >>> info["item_grid"], info["ability_grid"]  # the 1PL has no discrimination axis: 2 * 11 - 1 points
    ([21, 1], 21)
    """

    max_iter: int | None = None
    tol: float = 0.01
    item_grid: tuple[int, int] = (21, 11)
    ability_grid: int = 41
    width: float = 5.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _State:
    """Modes and Laplace variances of every parameter, and the hyperparameters."""

    theta: np.ndarray  # (S,)
    theta_var: np.ndarray  # (S,)
    b: np.ndarray  # (I,)
    alpha: np.ndarray  # (I,) log-discrimination (1PL: all equal)
    cov: np.ndarray  # (I, 2, 2) Laplace covariance of (b, alpha); 1PL: [0, 0] only
    mu: np.ndarray  # (K,) mean difficulty per group
    sd_b: float
    nu: np.ndarray  # (K,) mean log-discrimination per group
    sd_a: float


def _matrix(data: ResponseData) -> tuple[np.ndarray, np.ndarray]:
    """Responses as a dense float32 matrix with missing cells at 0, and each cell's weight in the likelihood: the
    mask of observed cells, or for k successes of n trials the number of trials n (0 where missing), so that
    ``weight * log_likelihood(share, eta)`` is the binomial kernel. Single precision holds 0/1 and shares of trials
    to 1e-7 and halves the matrix (the iteration's sums are in float64)."""
    y = data.to_matrix(fill=0.0, dtype=np.float32)  # one response per cell, or an error naming the conditions
    cells = (data.subject_codes, data.item_codes)
    if not data.has_trials:
        mask = np.zeros(y.shape, dtype=bool)
        mask[cells] = True
        return y, mask
    weight = np.zeros(y.shape, dtype=np.float32)
    weight[cells] = data.trials
    return y, weight


def _group_mean(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    counts = np.bincount(groups, minlength=n_groups)
    return np.bincount(groups, weights=values, minlength=n_groups) / np.maximum(counts, 1)


def _init(y: np.ndarray, mask: np.ndarray, groups: np.ndarray, n_groups: int) -> _State:
    n = mask.sum(axis=1, dtype=np.float64)
    p_subject = ((y * mask).sum(axis=1, dtype=np.float64) + 0.5) / (n + 1.0)
    z = np.log(p_subject / (1 - p_subject))
    theta = (z - z.mean()) / max(float(z.std()), 1e-6)
    m = mask.sum(axis=0, dtype=np.float64)
    p_item = ((y * mask).sum(axis=0, dtype=np.float64) + 0.5) / (m + 1.0)
    b = -np.log(p_item / (1 - p_item)) / 1.7
    mu = _group_mean(b, groups, n_groups)
    n_items = y.shape[1]
    return _State(
        theta=theta,
        theta_var=np.full(theta.shape, 0.1),
        b=b,
        alpha=np.zeros(n_items),
        cov=np.tile(np.eye(2) * 0.1, (n_items, 1, 1)),
        mu=mu,
        sd_b=max(float(np.std(b - mu[groups])), 0.3),
        nu=np.zeros(n_groups),
        sd_a=0.3,
    )


def _item_step(
    y: np.ndarray, mask: np.ndarray, st: _State, groups: np.ndarray, *, twopl: bool, priors: Priors
) -> float:
    """One Newton step for every item (Fisher scoring with the priors); returns the largest move."""
    a = np.exp(st.alpha)
    sums = _item_sums(y, mask, st)
    prec_b = 1.0 / st.sd_b**2
    g_b = -a * sums["r"] - (st.b - st.mu[groups]) * prec_b
    h_bb = -(a**2) * sums["w"] - prec_b
    if not twopl:
        # at most 1 logit, or one prior sd where the responses barely inform the item (answered alike by every
        # subject): its step is then the prior's own pull, which a 1-logit cap would leave behind the rescaling of
        # each round's standardisation, so that such items drift out without bound
        limit = np.maximum(1.0, np.sqrt(-1.0 / h_bb))
        step_b = np.clip(-g_b / h_bb, -limit, limit)
        st.b = st.b + step_b
        st.cov[:, 0, 0] = -1.0 / h_bb
        # the shared log-discrimination: one Fisher-scoring step over every response, with its Normal prior (which
        # alone bounds it where the responses separate: a handful of subjects, each item passed by the stronger)
        prec_mu = 1.0 / priors.log_discrimination_mu_sd**2
        g = float(sums["r_eta"].sum()) - (float(st.alpha[0]) - priors.log_discrimination_mu_mean) * prec_mu
        h = -float(sums["w_eta2"].sum()) - prec_mu
        shift = float(np.clip(-g / h, -0.5, 0.5))
        st.alpha = st.alpha + shift
        st.cov[:, 1, 1] = -1.0 / h
        return float(max(np.abs(step_b).max(initial=0.0), abs(shift)))
    prec_a = 1.0 / st.sd_a**2
    g_a = sums["r_eta"] - (st.alpha - st.nu[groups]) * prec_a
    h_aa = -sums["w_eta2"] - prec_a
    h_ba = a * sums["w_eta"]
    det = h_bb * h_aa - h_ba**2
    step_b = -(h_aa * g_b - h_ba * g_a) / det
    step_a = -(-h_ba * g_b + h_bb * g_a) / det
    scale = np.maximum(1.0, np.maximum(np.abs(step_b), np.abs(step_a)))  # at most 1 logit per step
    step_b, step_a = _backtrack(y, mask, st, groups, step_b / scale, step_a / scale, sums["ll"])
    st.b = st.b + step_b
    st.alpha = st.alpha + step_a
    st.cov[:, 0, 0] = -h_aa / det
    st.cov[:, 1, 1] = -h_bb / det
    st.cov[:, 0, 1] = st.cov[:, 1, 0] = h_ba / det
    return float(np.max(np.abs(np.concatenate([step_b, step_a])), initial=0.0))


def _row_chunks(n_rows: int, n_columns: int) -> list[slice]:
    """Slices of rows holding about :data:`_CELLS_PER_CHUNK` cells of ``n_columns`` each: the iteration's arrays of
    a subject x item matrix are made a block of subjects at a time, so its memory stays that of the matrix itself."""
    step = max(1, _CELLS_PER_CHUNK // max(1, n_columns))
    return [slice(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


def _item_sums(y: np.ndarray, mask: np.ndarray, st: _State) -> dict[str, np.ndarray]:
    """Per item, the sums over subjects of Fisher scoring at the modes: residuals ``r = weight (y - p)``, weights
    ``w = weight p (1 - p)``, ``r eta``, ``w eta^2``, ``w eta`` and the log-likelihood ``ll``."""
    a = np.exp(st.alpha)
    sums = {k: np.zeros(y.shape[1]) for k in ("r", "w", "r_eta", "w_eta2", "w_eta", "ll")}
    for rows in _row_chunks(*y.shape):
        eta = a[None, :] * (st.theta[rows, None] - st.b[None, :])
        p = sigmoid_mix(eta)
        r = mask[rows] * (y[rows] - p)
        w = mask[rows] * (p * (1 - p))
        sums["r"] += r.sum(axis=0)
        sums["w"] += w.sum(axis=0)
        sums["r_eta"] += (r * eta).sum(axis=0)
        sums["w_eta"] += (w * eta).sum(axis=0)
        sums["w_eta2"] += (w * eta**2).sum(axis=0)
        sums["ll"] += (mask[rows] * log_likelihood(y[rows], eta)).sum(axis=0)
    return sums


def _item_log_posterior(
    y: np.ndarray, mask: np.ndarray, st: _State, groups: np.ndarray, b: np.ndarray, alpha: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """Log posterior (up to a constant) of the items ``cols`` at (b, alpha), abilities at their modes."""
    ll = np.zeros(len(cols))
    for rows in _row_chunks(y.shape[0], len(cols)):
        eta = np.exp(alpha)[None, :] * (st.theta[rows, None] - b[None, :])
        ll += (mask[rows][:, cols] * log_likelihood(y[rows][:, cols], eta)).sum(axis=0)
    g = groups[cols]
    return ll - 0.5 * ((b - st.mu[g]) / st.sd_b) ** 2 - 0.5 * ((alpha - st.nu[g]) / st.sd_a) ** 2


def _backtrack(
    y: np.ndarray,
    mask: np.ndarray,
    st: _State,
    groups: np.ndarray,
    step_b: np.ndarray,
    step_a: np.ndarray,
    loglik: np.ndarray,
    *,
    halvings: int = 8,
) -> tuple[np.ndarray, np.ndarray]:
    """Halve each item's Newton step until its log posterior does not fall (the 2PL's item posterior is not
    concave in (b, log a), and a full step can overshoot back and forth); an item with no such step stays.
    ``loglik``: each item's log-likelihood at the current modes."""
    g = groups
    current = loglik.copy()
    current -= 0.5 * ((st.b - st.mu[g]) / st.sd_b) ** 2 + 0.5 * ((st.alpha - st.nu[g]) / st.sd_a) ** 2
    todo = np.arange(len(st.b))
    step_b, step_a = step_b.copy(), step_a.copy()
    for _ in range(halvings):
        new = _item_log_posterior(y, mask, st, groups, st.b[todo] + step_b[todo], st.alpha[todo] + step_a[todo], todo)
        worse = new < current[todo] - 1e-9
        todo = todo[worse]
        if not len(todo):
            break
        step_b[todo] *= 0.5
        step_a[todo] *= 0.5
    step_b[todo] = 0.0
    step_a[todo] = 0.0
    return step_b, step_a


def _ability_step(y: np.ndarray, mask: np.ndarray, st: _State) -> float:
    a = np.exp(st.alpha)
    g, h = -st.theta.copy(), np.full(len(st.theta), -1.0)
    for rows in _row_chunks(*y.shape):
        p = sigmoid_mix(a[None, :] * (st.theta[rows, None] - st.b[None, :]))
        g[rows] += (mask[rows] * (y[rows] - p) * a[None, :]).sum(axis=1)
        h[rows] -= (mask[rows] * (p * (1 - p)) * (a**2)[None, :]).sum(axis=1)
    step = np.clip(-g / h, -1.0, 1.0)
    st.theta = st.theta + step
    st.theta_var = -1.0 / h
    return float(np.abs(step).max(initial=0.0))


def _standardise(st: _State) -> None:
    """Mean 0 and mean square 1 over subjects (variances included); items and hyperparameters follow."""
    c = float(st.theta.mean())
    s = float(np.sqrt(np.mean((st.theta - c) ** 2 + st.theta_var)))
    st.theta = (st.theta - c) / s
    st.theta_var = st.theta_var / s**2
    st.b = (st.b - c) / s
    st.mu = (st.mu - c) / s
    st.sd_b = st.sd_b / s
    st.alpha = st.alpha + math.log(s)
    st.nu = st.nu + math.log(s)
    st.cov[:, 0, 0] /= s**2
    st.cov[:, 0, 1] /= s
    st.cov[:, 1, 0] /= s


def _hyper_step(st: _State, groups: np.ndarray, n_groups: int, *, twopl: bool, priors: Priors) -> None:
    """The groups' means and the spreads around them, from the items' Laplace moments: their posterior modes under
    the model's priors (:func:`_prior_mean`, :func:`_prior_spread`), which are the EM estimates wherever the items
    pin them and stay bounded where they do not (items that every subject answers alike, whose difficulty would
    otherwise drift out along a ridge with the spread estimated from them)."""
    b_prior_sd = math.hypot(priors.difficulty_mu_sd, priors.difficulty_group_sd_scale)
    st.mu = _prior_mean(st.b, groups, n_groups, st.sd_b, centre=0.0, prior_sd=b_prior_sd)
    st.sd_b = max(_prior_spread((st.b - st.mu[groups]) ** 2 + st.cov[:, 0, 0], priors.difficulty_sd_scale), 0.05)
    if twopl:
        a_prior_sd = math.hypot(priors.log_discrimination_mu_sd, priors.log_discrimination_group_sd_scale)
        centre = priors.log_discrimination_mu_mean
        st.nu = _prior_mean(st.alpha, groups, n_groups, st.sd_a, centre=centre, prior_sd=a_prior_sd)
        squares = (st.alpha - st.nu[groups]) ** 2 + st.cov[:, 1, 1]
        st.sd_a = max(_prior_spread(squares, priors.log_discrimination_sd_scale), 0.05)
    else:
        st.nu = np.full(n_groups, float(st.alpha[0]))


def _prior_mean(
    values: np.ndarray, groups: np.ndarray, n_groups: int, sd: float, *, centre: float, prior_sd: float
) -> np.ndarray:
    """Each group's mean of ``values`` (spread ``sd`` around it) under a ``Normal(centre, prior_sd)`` prior: the
    precision-weighted mean of the items' mean and ``centre``.

    >>> _prior_mean(np.array([1.0, 3.0, 10.0]), np.array([0, 0, 1]), 2, 1.0, centre=0.0, prior_sd=1e6).round(6)
    array([ 2., 10.])
    """
    counts = np.bincount(groups, minlength=n_groups)
    sums = np.bincount(groups, weights=values, minlength=n_groups)
    return (sums / sd**2 + centre / prior_sd**2) / (counts / sd**2 + 1.0 / prior_sd**2)


def _prior_spread(squares: np.ndarray, scale: float) -> float:
    """The spread of values whose squared deviations (plus their variances) are ``squares``, under the model's
    ``HalfNormal(scale)`` prior: the mode of ``-n log s - S / (2 s^2) - s^2 / (2 scale^2)``, ``s^2 = 2 S / (n +
    sqrt(n^2 + 4 S / scale^2))``; the root mean square ``sqrt(S / n)`` when the values pin it.

    >>> round(_prior_spread(np.full(10_000, 4.0), 2.0), 3)  # many values: their root mean square
    2.0
    >>> round(_prior_spread(np.full(3, 1e6), 2.0), 1) < 100  # three values far out: bounded by the prior
    True
    """
    n, total = len(squares), float(np.sum(squares))
    if n == 0:
        return scale
    return float(np.sqrt(2.0 * total / (n + math.sqrt(n * n + 4.0 * total / scale**2))))


def _modes(
    y: np.ndarray,
    mask: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    twopl: bool,
    settings: ApproxSettings,
    priors: Priors,
) -> tuple[_State, int, bool, int]:
    """Empirical-Bayes modes; returns the state, the rounds, whether they converged and the items still moving.

    Converged: in three rounds running, no ability and no hyperparameter moved by more than ``settings.tol``
    of its sd. These are what the grid posteriors condition on. The items' modes only place their grids,
    which are re-centred until they hold the posterior (:func:`_item_draws`): items with weakly informative
    responses (answered alike by every subject, or unrelated to ability) creep along a ridge of their
    posterior for hundreds of rounds by a tenth of an sd each (on the NLU sets about 1,250 of 82,756 after
    the rest had settled in 40 rounds) without moving the rest; their number is reported.
    """
    st = _init(y, mask, groups, n_groups)
    moving, calm = len(st.b), 0
    rounds = _max_rounds(settings, y.size)
    for it in range(1, rounds + 1):
        before = np.concatenate([st.b, st.alpha, st.theta])
        hyper = np.concatenate([st.mu, st.nu, [st.sd_b, st.sd_a]])
        _item_step(y, mask, st, groups, twopl=twopl, priors=priors)
        _hyper_step(st, groups, n_groups, twopl=twopl, priors=priors)
        _ability_step(y, mask, st)
        _standardise(st)
        # moves after standardising (each ability step widens the abilities a little and the
        # standardisation takes it back, so the steps themselves never vanish), in posterior sds
        n = len(st.b)
        sd = np.sqrt(np.concatenate([st.cov[:, 0, 0], st.cov[:, 1, 1] if twopl else st.cov[:, 0, 0], st.theta_var]))
        moved = np.abs(np.concatenate([st.b, st.alpha, st.theta]) - before) / sd
        item_moved = np.maximum(moved[:n], moved[n : 2 * n])
        moving = int((item_moved > settings.tol).sum())
        hyper_sd = np.concatenate([np.full(n_groups, st.sd_b), np.full(n_groups, st.sd_a), [st.sd_b, st.sd_a]])
        hyper_moved = np.abs(np.concatenate([st.mu, st.nu, [st.sd_b, st.sd_a]]) - hyper) / hyper_sd
        settled = float(moved[2 * n :].max()) < settings.tol and float(hyper_moved.max()) < settings.tol
        calm = calm + 1 if settled else 0
        if calm >= 3:
            return st, it, True, moving
    return st, rounds, False, moving


def _grid(centre: np.ndarray, sd: np.ndarray, n: int, width: float) -> np.ndarray:
    """(len(centre), n) evenly spaced points centre +- width * sd."""
    offsets = np.linspace(-width, width, n)
    return centre[:, None] + sd[:, None] * offsets[None, :]


def _item_draws(
    y: np.ndarray,
    mask: np.ndarray,
    st: _State,
    groups: np.ndarray,
    *,
    twopl: bool,
    n_draws: int,
    settings: ApproxSettings,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Difficulty and log-discrimination draws (I, n_draws) from each item's grid posterior.

    The grid spans the Laplace approximation's +- ``settings.width`` sd around the mode (inflated by 1.25:
    the likelihood integrated over the abilities is flatter than the plug-in one); items whose grid holds
    more than :data:`_EDGE_MASS` of its probability on its edge are evaluated again on a grid centred on
    the grid's mean and twice as wide (three times at most), so a skewed posterior (an item almost every
    subject answers correctly) or a mode still moving along a flat ridge is not cut.
    """
    n_i = y.shape[1]
    shape = settings.item_grid if twopl else (settings.item_grid[0] * 2 - 1, 1)
    frame = {"cb": st.b.copy(), "ca": st.alpha.copy()}
    frame.update(sb=1.25 * np.sqrt(st.cov[:, 0, 0]), sa=1.25 * np.sqrt(st.cov[:, 1, 1]))
    out = (np.empty((n_i, n_draws)), np.empty((n_i, n_draws)))
    moments = {k: np.empty(n_i) for k in ("b_mean", "b_var", "a_mean", "a_var", "ab_cov", "edge_mass")}
    todo = np.arange(n_i)
    for _ in range(4):
        _item_grids(y, mask, st, groups, todo, frame, shape, n_draws, settings.width, rng, out, moments)
        todo = todo[moments["edge_mass"][todo] > _EDGE_MASS]
        if not len(todo):
            break
        frame["cb"][todo], frame["ca"][todo] = moments["b_mean"][todo], moments["a_mean"][todo]
        frame["sb"][todo] *= 2.0
        frame["sa"][todo] *= 2.0
    if not twopl:
        out[1][:] = st.alpha[:, None]
    return out[0], out[1], moments


def _item_grids(
    y: np.ndarray,
    mask: np.ndarray,
    st: _State,
    groups: np.ndarray,
    items: np.ndarray,
    frame: dict[str, np.ndarray],
    shape: tuple[int, int],
    n_draws: int,
    width: float,
    rng: np.random.Generator,
    out: tuple[np.ndarray, np.ndarray],
    moments: dict[str, np.ndarray],
) -> None:
    """Evaluate the grid posteriors of ``items`` in chunks; write their draws and moments in place."""
    nb, na = shape
    twopl = na > 1
    chunk = max(1, _CELLS_PER_CHUNK // max(1, y.shape[0] * nb * na))
    var = st.theta_var[:, None, None]
    theta = st.theta[:, None, None]
    on_edge = np.zeros((nb, na), dtype=bool)
    on_edge[[0, -1], :] = True
    if twopl:
        on_edge[:, [0, -1]] = True
    edge = on_edge.ravel()
    for start in range(0, len(items), chunk):
        idx = items[start : start + chunk]
        bs = _grid(frame["cb"][idx], frame["sb"][idx], nb, width)  # (c, nb)
        als = _grid(frame["ca"][idx], frame["sa"][idx], na, width) if twopl else st.alpha[idx, None]
        bb = np.repeat(bs, na, axis=1)  # (c, G), row-major over (nb, na)
        aa = np.tile(als, (1, nb))
        # abilities enter through their normal moments (probit), not as quantile points: not BenchFill's kernel
        ll = _grid_loglik(y[:, idx, None], mask[:, idx, None], theta, var, bb, np.exp(aa))  # (c, G)
        g = groups[idx, None]
        ll += -0.5 * ((bb - st.mu[g]) / st.sd_b) ** 2
        if twopl:
            ll += -0.5 * ((aa - st.nu[g]) / st.sd_a) ** 2
        w = grid_probabilities(ll, axis=1)
        out[0][idx], out[1][idx] = grid_draws(w, (bs, als), n_draws, rng)
        b_mean, a_mean = (w * bb).sum(axis=1), (w * aa).sum(axis=1)
        moments["b_mean"][idx], moments["a_mean"][idx] = b_mean, a_mean
        moments["b_var"][idx] = (w * (bb - b_mean[:, None]) ** 2).sum(axis=1)
        moments["a_var"][idx] = (w * (aa - a_mean[:, None]) ** 2).sum(axis=1)
        moments["ab_cov"][idx] = (w * (bb - b_mean[:, None]) * (aa - a_mean[:, None])).sum(axis=1)
        moments["edge_mass"][idx] = w[:, edge].sum(axis=1)


def _grid_loglik(
    y: np.ndarray, weight: np.ndarray, theta: np.ndarray, var: np.ndarray, b: np.ndarray, a: np.ndarray
) -> np.ndarray:
    """(c, G) log-likelihood of ``c`` items at ``G`` grid points (``b``, ``a``: (c, G)) summed over the subjects, the
    abilities (S, 1, 1) entering through their normal moments (probit: ``eta = a (theta - b) / sqrt(1 + pi/8 a^2
    var)``); ``y`` and ``weight`` (S, c, 1) the shares and their weights (mask or trials; ``y`` 0 where missing).

    The cells are computed in float32 and summed in float64: the terms are ``weight (y eta - softplus(eta))`` with
    softplus written as ``max(eta, 0) + log1p(exp(-|eta|))``. Single-precision cells carry a relative error near
    1e-7 each, far below the differences between grid points; the float64 sum keeps it from growing with the
    number of subjects (docs/performance.md#the-whole-leaderboard-on-one-machine has the speed).
    """
    f32 = np.float32
    ea = a.astype(f32)[None, :, :]
    eta = ea * (theta.astype(f32) - b.astype(f32)[None, :, :])  # (S, c, G)
    eta /= np.sqrt(f32(1.0) + f32(_PROBIT) * ea**2 * var.astype(f32))
    return _summed_loglik(eta, y, weight, axis=0)


def _summed_loglik(eta: np.ndarray, y: np.ndarray, weight: np.ndarray, *, axis: int) -> np.ndarray:
    """``sum(weight (y eta - softplus(eta)))`` over ``axis``: float32 cells (``eta`` is overwritten), a float64 sum."""
    f32 = np.float32
    soft = np.log1p(np.exp(-np.abs(eta)))
    soft += np.maximum(eta, f32(0.0))
    eta *= np.asarray(y, dtype=f32) * np.asarray(weight, dtype=f32)
    soft *= np.asarray(weight, dtype=f32)
    eta -= soft
    return eta.sum(axis=axis, dtype=np.float64)


def _ability_draws(
    y: np.ndarray,
    mask: np.ndarray,
    st: _State,
    items: dict[str, np.ndarray],
    *,
    n_draws: int,
    settings: ApproxSettings,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Ability draws (S, n_draws) from each subject's grid posterior, items integrated over their moments.

    Grids are re-centred and widened as the items' are (:func:`_item_draws`): the mode comes from the
    items' modes, the grid's posterior from their means and variances, which can sit several of the
    (small) ability sds away when every subject answers tens of thousands of items.
    """
    n_s = y.shape[0]
    centre, sd = st.theta.copy(), 1.25 * np.sqrt(st.theta_var)
    draws = np.empty((n_s, n_draws))
    edge_mass = np.empty(n_s)
    means = np.empty(n_s)
    todo = np.arange(n_s)
    for _ in range(4):
        _ability_grids(y, mask, items, todo, centre, sd, settings, rng, draws, edge_mass, means)
        todo = todo[edge_mass[todo] > _EDGE_MASS]
        if not len(todo):
            break
        centre[todo] = means[todo]
        sd[todo] *= 2.0
    return draws, edge_mass


def _ability_grids(
    y: np.ndarray,
    mask: np.ndarray,
    items: dict[str, np.ndarray],
    subjects: np.ndarray,
    centre: np.ndarray,
    sd: np.ndarray,
    settings: ApproxSettings,
    rng: np.random.Generator,
    draws: np.ndarray,
    edge_mass: np.ndarray,
    means: np.ndarray,
) -> None:
    """Evaluate the grid posteriors of ``subjects`` in chunks; write draws, edge mass and means in place."""
    n_i = y.shape[1]
    ng = settings.ability_grid
    f32 = np.float32
    ea_mean = np.exp(items["a_mean"] + items["a_var"] / 2)  # E[a] under a normal log-discrimination
    ea_var = ea_mean**2 * np.expm1(items["a_var"])
    moments = {  # eta = (E[a] d - E[a] cov(b, log a)) / sqrt(1 + pi/8 (E[a]^2 var b + d^2 var a)), d = theta - E[b]
        "b_mean": items["b_mean"].astype(f32),
        "ea_mean": ea_mean.astype(f32),
        "ea_ab": (ea_mean * items["ab_cov"]).astype(f32),
        "ea_var": ea_var.astype(f32),
        "ea2_b_var": (ea_mean**2 * items["b_var"]).astype(f32),
    }
    chunk = max(1, _CELLS_PER_CHUNK // max(1, n_i * ng))
    for start in range(0, len(subjects), chunk):
        sl = subjects[start : start + chunk]
        pts = _grid(centre[sl], sd[sl], ng, settings.width)  # (c, G)
        diff = pts[:, :, None].astype(f32) - moments["b_mean"][None, None, :]  # (c, G, I), float32 as _grid_loglik
        eta = moments["ea_mean"] * diff - moments["ea_ab"]
        diff *= diff
        diff *= moments["ea_var"]
        diff += moments["ea2_b_var"]
        diff *= f32(_PROBIT)
        diff += f32(1.0)
        eta /= np.sqrt(diff)
        ll = _summed_loglik(eta, y[sl, None, :], mask[sl, None, :], axis=2) - 0.5 * pts**2
        w = grid_probabilities(ll, axis=1)
        (draws[sl],) = grid_draws(w, (pts,), draws.shape[1], rng)
        edge_mass[sl] = w[:, 0] + w[:, -1]
        means[sl] = (w * pts).sum(axis=1)


def approx_posterior(
    data: ResponseData,
    spec: ModelSpec,
    *,
    chains: int = 4,
    draws: int = 250,
    seed: int = 0,
    settings: ApproxSettings | None = None,
) -> tuple[xr.DataTree, ModelSpec, dict[str, Any]]:
    """Posterior draws of the approximate tier, in the layout of a NUTS fit.

    Parameters
    ----------
    data
        Responses (binary, k successes of n trials, or fractional scores in [0, 1]).
    spec
        A 1PL or 2PL spec with one ability dimension and standardised abilities.
    chains, draws
        Draws are independent; they are laid out as ``chains`` x ``draws`` so that every later step reads
        them as it reads a NUTS fit (r-hat and ESS do not apply).
    seed
        Seed of the draws.
    settings
        :class:`ApproxSettings`.

    Returns
    -------
    tree : xarray.DataTree
        ``posterior`` with ``ability`` (chain, draw, subject), ``difficulty``, ``discrimination`` (chain,
        draw, item), ``difficulty_mu``, ``difficulty_sd``, ``log_discrimination_mu`` and, with a benchmark
        level, ``difficulty_benchmark`` and ``log_discrimination_benchmark`` (chain, draw, benchmark);
        2PL adds ``log_discrimination_sd``.
    spec : ModelSpec
        The resolved spec.
    info : dict
        What happened: rounds, whether the modes converged, grid sizes, the largest probability mass on a
        grid's edge (near 0 when the grids hold the posterior), times.

    Raises
    ------
    SpecError
        A 3PL, multidimensional or ``identification="prior"`` spec.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> from irtbayes.model.spec import ModelSpec
    >>> data, truth = simulate_responses(40, 60, seed=1)
    >>> tree, spec, info = approx_posterior(data, ModelSpec(kind="2pl"), chains=2, draws=100, seed=1)
    >>> spec.kind, info["modes_converged"], dict(tree["posterior"]["difficulty"].sizes)
    ('2pl', True, {'chain': 2, 'draw': 100, 'item': 60})
    >>> difficulty = tree["posterior"]["difficulty"].mean(("chain", "draw"))
    >>> bool(np.corrcoef(difficulty, truth["difficulty"])[0, 1] > 0.85)
    True
    >>> approx_posterior(data, ModelSpec(kind="3pl"))
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: sampler='approx' fits 1PL and 2PL models with one standardised ability dimension; ...
    """
    settings = settings or ApproxSettings()
    inputs = model_inputs(data, spec)
    spec = inputs.spec
    _check_supported(spec)
    twopl = spec.kind == "2pl"
    has_groups = inputs.item_benchmark is not None
    groups, n_groups = _groups(inputs, data.n_items)
    rng = np.random.default_rng(seed)
    n_total = chains * draws
    start = time.perf_counter()
    y, mask = _matrix(data)
    st, rounds, converged, moving = _modes(
        y, mask, groups, n_groups, twopl=twopl, settings=settings, priors=spec.priors
    )
    t_modes = time.perf_counter() - start
    log.info("modes after %d rounds (%s) in %.1f s", rounds, "converged" if converged else "NOT converged", t_modes)
    b, alpha, moments = _item_draws(y, mask, st, groups, twopl=twopl, n_draws=n_total, settings=settings, rng=rng)
    t_items = time.perf_counter() - start - t_modes
    log.info("item grids in %.1f s", t_items)
    theta, ability_edge = _ability_draws(y, mask, st, moments, n_draws=n_total, settings=settings, rng=rng)
    theta = (theta - theta.mean(axis=0)) / theta.std(axis=0)
    t_abilities = time.perf_counter() - start - t_modes - t_items

    draws_by_name = {"ability": theta, "difficulty": b, "discrimination": np.exp(alpha)}
    draws_by_name.update(_hyper_draws(st, groups, n_groups, twopl=twopl, n_total=n_total, rng=rng))
    if not twopl:  # one discrimination per draw, shared by the items
        draws_by_name["discrimination"] = np.exp(draws_by_name["log_discrimination_mu"])[None, :].repeat(
            data.n_items, axis=0
        )
    posterior = _dataset(draws_by_name, inputs.coords, chains=chains, draws=draws, grouped=has_groups)
    info = {
        "method": "empirical Bayes modes, then conditional grid posteriors (irtbayes.fitting.approx)",
        "rounds": rounds,
        "modes_converged": converged,
        "items_still_moving": moving,
        **_grid_info(settings, twopl=twopl, item_edge=moments["edge_mass"], ability_edge=ability_edge),
        "time_modes_s": round(t_modes, 3),
        "time_items_s": round(t_items, 3),
        "time_abilities_s": round(t_abilities, 3),
    }
    return xr.DataTree.from_dict({"posterior": posterior}), spec, info


def _groups(inputs: ModelInputs, n_items: int) -> tuple[np.ndarray, int]:
    """Each item's group (its benchmark, or one group without a benchmark level) and the number of groups."""
    groups = inputs.item_benchmark if inputs.item_benchmark is not None else np.zeros(n_items, dtype=np.int64)
    return groups, int(groups.max()) + 1


@dataclass(frozen=True)
class Modes:
    """Empirical-Bayes modes of a 1PL/2PL and their Laplace (co)variances, on the standardised ability scale."""

    ability: np.ndarray  #: (subjects,)
    ability_var: np.ndarray  #: (subjects,)
    difficulty: np.ndarray  #: (items,)
    log_discrimination: np.ndarray  #: (items,); one shared value for the 1PL
    item_cov: np.ndarray  #: (items, 2, 2): covariance of (difficulty, log-discrimination); 1PL: [0, 0] only
    rounds: int
    converged: bool
    seconds: float


def empirical_bayes(
    data: ResponseData,
    spec: ModelSpec,
    settings: ApproxSettings | None = None,
    *,
    inputs: ModelInputs | None = None,
) -> Modes:
    """The first stage of the approximate tier alone: empirical-Bayes modes with Laplace variances.

    ``spec`` is a 1PL or 2PL with one ability dimension (abilities standardised or not: the modes are on the
    standardised scale either way); items are grouped by the model's benchmark level. :mod:`irtbayes.fitting.warmstart`
    starts NUTS from them, passing the ``inputs`` its model was built from (``model.irtbayes_inputs``, with
    ``spec`` as their spec) so that they are not built again.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, truth = simulate_responses(40, 60, seed=1)
    >>> modes = empirical_bayes(data, ModelSpec(kind="2pl"))
    >>> modes.converged, modes.item_cov.shape
    (True, (60, 2, 2))
    >>> bool(np.corrcoef(modes.difficulty, truth["difficulty"])[0, 1] > 0.85)
    True
    """
    settings = settings or ApproxSettings()
    inputs = model_inputs(data, spec) if inputs is None else inputs
    if inputs.spec.kind not in ("1pl", "2pl") or inputs.spec.dims != "one":
        raise SpecError(
            "empirical-Bayes modes are for 1PL and 2PL models with one ability dimension, "
            f"not kind={inputs.spec.kind!r}, dims={inputs.spec.dims!r}"
        )
    groups, n_groups = _groups(inputs, data.n_items)
    start = time.perf_counter()
    y, mask = _matrix(data)
    twopl = inputs.spec.kind == "2pl"
    st, rounds, converged, _ = _modes(y, mask, groups, n_groups, twopl=twopl, settings=settings, priors=spec.priors)
    return Modes(st.theta, st.theta_var, st.b, st.alpha, st.cov, rounds, converged, time.perf_counter() - start)


def _check_supported(spec: ModelSpec) -> None:
    """Refuse a spec the approximate tier does not fit (3PL, several dimensions, abilities not standardised)."""
    if spec.kind not in ("1pl", "2pl") or spec.dims != "one" or spec.identification != "standardise":
        raise SpecError(
            "sampler='approx' fits 1PL and 2PL models with one standardised ability dimension; "
            f"got kind={spec.kind!r}, dims={spec.dims!r}, identification={spec.identification!r} (use NUTS)"
        )


def _grid_info(
    settings: ApproxSettings, *, twopl: bool, item_edge: np.ndarray, ability_edge: np.ndarray
) -> dict[str, Any]:
    """The grid sizes and the largest probability mass on any grid's edge, for the fit's ``info``."""
    return {
        "item_grid": list(settings.item_grid if twopl else (settings.item_grid[0] * 2 - 1, 1)),
        "ability_grid": settings.ability_grid,
        "grid_edge_mass_max": float(max(item_edge.max(initial=0.0), ability_edge.max(initial=0.0))),
    }


def _hyper_draws(
    st: _State, groups: np.ndarray, n_groups: int, *, twopl: bool, n_total: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Draws of the hyperparameters from their sampling distributions given the items' estimates.

    Group means: normal with the spread around them over the group's size; spreads: scaled inverse
    chi-square with (items - groups) degrees of freedom; 1PL: the shared log-discrimination's Laplace sd.
    Last axis: the draws; group variables have the group first.
    """
    counts = np.bincount(groups, minlength=n_groups)
    dof = max(len(groups) - n_groups, 1)
    out = {
        "difficulty_sd": st.sd_b * np.sqrt(dof / rng.chisquare(dof, n_total)),
        "difficulty_benchmark": st.mu[:, None]
        + rng.standard_normal((n_groups, n_total)) * (st.sd_b / np.sqrt(counts))[:, None],
    }
    if twopl:
        out["log_discrimination_sd"] = st.sd_a * np.sqrt(dof / rng.chisquare(dof, n_total))
        nu = st.nu[:, None] + rng.standard_normal((n_groups, n_total)) * (st.sd_a / np.sqrt(counts))[:, None]
        out["log_discrimination_benchmark"] = nu
        out["log_discrimination_mu"] = nu.mean(axis=0)
    else:
        out["log_discrimination_mu"] = st.alpha[0] + rng.standard_normal(n_total) * np.sqrt(st.cov[0, 1, 1])
    out["difficulty_mu"] = out["difficulty_benchmark"].mean(axis=0)
    return out


def _dataset(
    values: dict[str, np.ndarray], coords: dict[str, list[str]], *, chains: int, draws: int, grouped: bool
) -> xr.Dataset:
    """The posterior Dataset: each array's last axis (the draws) laid out as (chain, draw) in front."""
    dims = {"ability": ("subject",), "difficulty": ("item",), "discrimination": ("item",)}
    if grouped:
        dims.update(difficulty_benchmark=("benchmark",), log_discrimination_benchmark=("benchmark",))
    variables = {}
    for name, array in values.items():
        if name.endswith("_benchmark") and not grouped:
            continue
        shaped = np.moveaxis(array.reshape(*array.shape[:-1], chains, draws), (-2, -1), (0, 1))
        variables[name] = (("chain", "draw", *dims.get(name, ())), shaped)
    out = {"chain": np.arange(chains), "draw": np.arange(draws), "subject": coords["subject"], "item": coords["item"]}
    if grouped:
        out["benchmark"] = coords["benchmark"]
    return xr.Dataset(variables, coords=out)
