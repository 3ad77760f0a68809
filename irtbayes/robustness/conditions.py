"""Format and condition sensitivity: condition effects on item difficulty and on system ability.

When the responses carry a ``condition`` (prompt format, answer order, scoring method, judge, HELM
perturbation), :func:`fit_conditions` fits one hierarchical IRT model to all conditions at once:

    logit P(y = 1) = a_i (theta_s + delta_{s,c} - b_i - gamma_{i,c})

with one *reference* condition (``delta`` and ``gamma`` are 0 there; default: the first condition, or
``"original"`` when present) and, for every other condition c,

- ``gamma_{i,c} = shift_c + item_effect_sd_c * lambda_{i,c} * z_{i,c}``: the condition's effect on item i's
  difficulty, around the condition's common shift (non-centred; ``z`` standard normal; ``lambda`` half-Cauchy
  local scales: a horseshoe prior, under which a few large effects stand out while the many null ones shrink
  to 0, regularised by a Student-t slab so that effects the data barely inform stay bounded (see
  :data:`~irtbayes.robustness.condition_model.SLAB_SCALE`); ``effects="normal"`` sets every ``lambda`` to 1);
- ``delta_{s,c} = ability_shift_sd_c * lambda_{s,c} * u_{s,c}``: system s's ability shift, with ``u`` zero-sum over systems
  (:class:`pymc.ZeroSumNormal`), so a shift common to every system is the condition's ``shift_c`` and the two
  are identified (with the horseshoe, ``u`` times its local scales is centred over systems again).

Abilities theta have a N(0, 1) prior centred over the systems (:class:`pymc.ZeroSumNormal`: the systems' mean
ability is the scale's origin, so it cannot trade against the mean difficulty; with the plain N(0, 1) prior that
ridge left r-hat at 1.03 on XSTest's two systems), difficulties ``b = difficulty_mu + difficulty_sd * z`` (non-centred),
log-discriminations ``log_discrimination_sd * z`` (``kind="1pl"``: every a is 1). Scores in [0, 1] enter
through the fractional-logit quasi-likelihood, 0/1 responses through the Bernoulli, k successes of n trials
through the binomial.

An item is flagged when its effect differs credibly from its condition's common shift ``shift_c`` (the
items a format moves differently from the rest; ``against="zero"`` tests the effect itself). A system is flagged
when its ability shift differs credibly from the typical system's, the median over systems in each draw
(:func:`typical_shift`): the shifts sum to zero, so against their mean the systems a format leaves alone would rise
as the few it hurts fall. Flagging
(:func:`condition_effects`) controls the Bayesian false discovery rate (Newton et al. 2004; Muller et al. 2006)
over all (item, condition) effects together, and separately over all (subject, condition) shifts. Each effect
gets a *local false sign rate* ``v = min(P(effect <= m), P(effect >= -m))``, the posterior probability that it
is not beyond ``m`` (``min_effect``, default 0) in its more likely direction (Stephens 2017). By default every
effect with ``v <= fdr`` (0.05) is flagged, so the posterior expected share of false flags among the flagged
is at most ``fdr`` however many items there are; ``fdr_rule="mean"`` flags the largest set whose mean ``v``
is at most ``fdr``, which flags more but relies on the prior being right (see
:func:`irtbayes.core.multiplicity.bayes_fdr_flags`).

Rank agreement between conditions is computed per draw: in each draw, systems are ranked by their ability
under each condition (1 = best), and Kendall's tau and the maximum rank displacement (the largest
``|rank_c - rank_c'|`` over systems; Alzahrani et al. 2024) between every pair of conditions are taken; their
means and equal-tailed intervals over draws are reported.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import SpecError
from irtbayes.core.files import atomic_write_text, json_ready
from irtbayes.core.multiplicity import bayes_fdr_flags
from irtbayes.core.summaries import check_ci_prob, summarize
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.robustness.condition_model import build_condition_model

__all__ = [
    "ConditionEffects",
    "ConditionFit",
    "condition_effects",
    "fit_conditions",
    "local_false_sign_rate",
    "rank_agreement",
    "save_conditions",
    "typical_shift",
]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class ConditionFit:
    """A sampled condition-effects model.

    Attributes
    ----------
    posterior
        ``ability`` (chain, draw, subject), ``ability_shift`` (chain, draw, condition, subject),
        ``item_effect`` (chain, draw, condition, item), ``shift`` (chain, draw, condition), ``difficulty``,
        and the hyperparameters; ``condition`` holds the non-reference conditions.
    reference
        The reference condition.
    data
        The responses fitted.
    sampler
        Sampler settings and the number of divergent transitions.
    """

    posterior: xr.Dataset
    reference: str
    data: ResponseData
    sampler: dict[str, Any] = field(default_factory=dict)

    @property
    def conditions(self) -> list[str]:
        """Every condition, the reference first."""
        return [self.reference, *map(str, self.posterior["condition"].values)]


def fit_conditions(
    data: ResponseData,
    *,
    reference: str | None = None,
    kind: str = "2pl",
    effects: str = "horseshoe",
    chains: int = 4,
    draws: int = 1000,
    tune: int = 1000,
    seed: int = 0,
    sampler: str = "nutpie",
    target_accept: float = 0.9,
    progress: bool = False,
) -> ConditionFit:
    """Sample the condition-effects model (see the module notes).

    Parameters
    ----------
    data
        Responses with a ``condition`` column holding at least two conditions.
    reference, kind, effects
        See :func:`build_condition_model`.
    chains, draws, tune, seed, target_accept, progress
        NUTS settings. The defaults (4 x 1000 draws after 1000) were tried on XSTest's and JailbreakBench's
        real conditions (their convergence and times measured on docs/studies.md#robustness-measured-on-real-data).
    sampler
        ``"nutpie"`` (default) or ``"pymc"``.

    Returns
    -------
    ConditionFit
        With ``sampler["divergences"]`` counted and the convergence checks of
        :func:`~irtbayes.fitting.diagnostics.sampler.check_convergence` over every reported variable (``converged``,
        ``max_rhat``, ``min_ess_bulk``, ``min_ess_tail``, ``convergence_problems``).

    Examples
    --------
    Sampling takes minutes, so this example stops at the check made first: the responses need a ``condition``
    column with two conditions at least (:func:`simulate_condition_responses` makes such data).

    >>> from irtbayes.robustness.conditions import fit_conditions
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(20, 30, seed=1)
    >>> fit_conditions(data)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: simulated 2pl (20 subjects x 30 items): condition effects need responses under at least two conditions (a 'condition' column); found none
    """
    if sampler not in ("nutpie", "pymc"):
        raise SpecError(f"sampler must be 'nutpie' or 'pymc', got {sampler!r}")
    from irtbayes.fitting.sampling import run_sampler

    model = build_condition_model(data, reference=reference, kind=kind, effects=effects)
    run: dict[str, Any] = {"chains": chains, "draws": draws, "tune": tune, "seed": seed, "target_accept": target_accept}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # small fits warn about r-hat; divergences are counted below
        cores = min(chains, os.cpu_count() or 1)
        trace = run_sampler(model, sampler=sampler, **run, progress=progress, cores=cores, extra={})
    settings = {"name": sampler, **run, "kind": kind, "effects": effects}
    posterior = _checked_posterior(trace, settings)
    return ConditionFit(posterior=posterior, reference=model.irtbayes_reference, data=data, sampler=settings)


def _checked_posterior(trace: Any, settings: dict[str, Any]) -> xr.Dataset:
    """The reported posterior variables; divergences and convergence checks recorded into ``settings``."""
    posterior = trace["posterior"]
    posterior = posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior
    keep = [v for v in posterior.data_vars if not str(v).endswith(("_z", "_u")) and "_local" not in str(v)]
    stats_group = trace["sample_stats"]
    diverging = stats_group["diverging"] if "diverging" in stats_group else None
    n_div = int(np.asarray(diverging.values).sum()) if diverging is not None else 0
    if n_div:
        log.warning("condition-effects fit: %d divergent transitions; raise target_accept or tune", n_div)
    settings.update(divergences=n_div)
    stats = stats_group.to_dataset() if hasattr(stats_group, "to_dataset") else stats_group
    diagnostics = check_convergence(
        xr.DataTree.from_dict({"posterior": posterior[keep], "sample_stats": stats}), standardised=False
    )
    settings.update(
        converged=diagnostics.ok,
        max_rhat=diagnostics.max_rhat,
        min_ess_bulk=diagnostics.min_ess_bulk,
        min_ess_tail=diagnostics.min_ess_tail,
        convergence_problems=list(diagnostics.problems),
    )
    if not diagnostics.ok:
        log.warning("condition-effects fit did not pass its convergence checks:\n%s", diagnostics.to_text())
    return posterior[keep]


# ---------------------------------------------------------------------------------------------- flagging
def local_false_sign_rate(draws: np.ndarray, *, min_effect: float = 0.0, axis: int = 0) -> np.ndarray:
    """``min(P(x <= m), P(x >= -m))`` over draws along ``axis``: the chance x is not beyond ``m`` in its likelier direction.

    Parameters
    ----------
    draws
        Posterior draws of effects.
    min_effect
        m >= 0 (0: the local false sign rate).

    Returns
    -------
    numpy.ndarray
        ``draws`` with ``axis`` removed, in [0, 1].

    Examples
    --------
    >>> from irtbayes.robustness.conditions import local_false_sign_rate
    >>> draws = np.random.default_rng(0).normal([2.0, 0.1], 0.5, size=(4000, 2))  # (draw, effect)
    >>> local_false_sign_rate(draws).round(2)  # the first effect's sign is sure, the second's is not
    array([0.  , 0.43])
    """
    if min_effect < 0:
        raise SpecError(f"min_effect must be >= 0, got {min_effect}")
    arr = np.asarray(draws, dtype="float64")
    not_up = (arr <= min_effect).mean(axis=axis)
    not_down = (arr >= -min_effect).mean(axis=axis)
    return np.minimum(not_up, not_down)


def _stacked(post: xr.Dataset, name: str, *rest: str) -> np.ndarray:
    var = post[name].transpose("chain", "draw", *rest)
    arr = np.asarray(var.values, dtype="float64")
    return arr.reshape((-1, *arr.shape[2:]))


def _ranks(ability: np.ndarray) -> np.ndarray:
    """Ranks (1 = highest) along the last axis."""
    order = np.argsort(-ability, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, ability.shape[-1] + 1)[None, :], axis=-1)
    return ranks


def rank_agreement(abilities: dict[str, np.ndarray], *, ci_prob: float = 0.9) -> pd.DataFrame:
    """Kendall's tau and the maximum rank displacement between every pair of conditions, per draw.

    Parameters
    ----------
    abilities
        Condition -> ability draws (draw, subject), the same subjects in the same order.
    ci_prob
        Probability of the equal-tailed intervals.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``condition_a``, ``condition_b``, ``kendall_tau_{mean,sd,ci_low,ci_high}``,
        ``max_rank_displacement_{mean,sd,ci_low,ci_high}``, ``max_rank_displacement_p_zero``.

    Examples
    --------
    The same abilities under two prompt formats, the second with two systems swapped:

    >>> from irtbayes.robustness.conditions import rank_agreement
    >>> a = np.tile(np.arange(5.0), (100, 1))  # (draw, subject)
    >>> b = a[:, [1, 0, 2, 3, 4]]
    >>> rank_agreement({"original": a, "reworded": b})[["condition_a", "condition_b", "kendall_tau_mean", "max_rank_displacement_mean"]]
      condition_a condition_b  kendall_tau_mean  max_rank_displacement_mean
    0    original    reworded               0.8                         1.0
    """
    ci_prob = check_ci_prob(ci_prob)
    names = list(abilities)
    ranks = {c: _ranks(np.asarray(a)) for c, a in abilities.items()}
    rows = []
    for a, b in combinations(names, 2):
        ra, rb = ranks[a], ranks[b]
        tau = np.array([stats.kendalltau(x, y).statistic for x, y in zip(ra, rb, strict=True)])
        disp = np.abs(ra - rb).max(axis=1).astype("float64")
        row: dict[str, Any] = {"condition_a": a, "condition_b": b}
        for name, values in (("kendall_tau", tau), ("max_rank_displacement", disp)):
            for k, v in summarize(values, ci_prob=ci_prob).items():
                row[f"{name}_{k}"] = float(v)
        row["max_rank_displacement_p_zero"] = float((disp == 0).mean())
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["ci_prob"] = ci_prob
    return out


@dataclass(frozen=True)
class ConditionEffects:
    """Tables of :func:`condition_effects` (columns there) and the summary for ``robustness.json``."""

    items: pd.DataFrame
    subjects: pd.DataFrame
    agreement: pd.DataFrame
    shifts: pd.DataFrame
    reference: str
    conditions: list[str]
    ci_prob: float
    fdr: float
    min_effect: float
    against: str
    fdr_rule: str
    sampler: dict[str, Any]

    def summary_dict(self) -> dict[str, Any]:
        """The content of ``robustness.json``'s ``conditions`` entry."""
        return json_ready(
            {
                "reference": self.reference,
                "conditions": self.conditions,
                "ci_prob": self.ci_prob,
                "flagging": {
                    "rule": "Bayesian FDR over local false sign rates",
                    "fdr_rule": self.fdr_rule,
                    "fdr": self.fdr,
                    "min_effect": self.min_effect,
                    "items_tested_against": self.against,
                    "items_flagged": int(self.items["flagged"].sum()),
                    "items": len(self.items),
                    "subjects_flagged": int(self.subjects["flagged"].sum()),
                    "subjects": len(self.subjects),
                },
                "rank_agreement": self.agreement.to_dict(orient="records"),
                "condition_shift": self.shifts.to_dict(orient="records"),
                "sampler": self.sampler,
            }
        )


def _seen(data: ResponseData, key: str, ids: pd.Index, conditions: list[str]) -> np.ndarray:
    """(condition, id) booleans: the id has at least one response under the condition."""
    frame = data.responses
    if "condition" not in frame.columns:
        return np.ones((len(conditions), len(ids)), dtype=bool)
    pairs = frame[[key, "condition"]].astype(str).drop_duplicates()
    table = pd.crosstab(pairs["condition"], pairs[key]).reindex(index=conditions, columns=ids, fill_value=0)
    return table.to_numpy() > 0


def condition_effects(
    result: ConditionFit,
    *,
    ci_prob: float = 0.9,
    fdr: float = 0.05,
    min_effect: float = 0.0,
    against: str = "shift",
    fdr_rule: str = "each",
) -> ConditionEffects:
    """Condition effects per item and per subject, flags with a Bayesian FDR, and rank agreement.

    Parameters
    ----------
    result
        From :func:`fit_conditions` (or a hand-built :class:`ConditionFit`).
    ci_prob
        Probability of the equal-tailed intervals.
    fdr
        Bound on the expected share of false flags (see the module notes).
    min_effect
        Effects must be credibly beyond this many logits to be flagged (0: credibly non-zero in sign).
    against
        What an item's effect is tested against: ``"shift"`` (default): the condition's common shift, so the
        flagged items are those the condition moves differently from the rest (a system prompt that makes
        every prompt more often refused flags none by itself; the common shift is in ``shifts``); ``"zero"``:
        the effect itself (then a credible common shift flags every item).
    fdr_rule
        ``"each"`` or ``"mean"`` (see :func:`bayes_fdr_flags`).

    Returns
    -------
    ConditionEffects
        ``items``: one row per item: ``item``, ``benchmark``, per non-reference condition c
        ``{c}_mean``, ``{c}_ci_low``, ``{c}_ci_high`` (the effect on difficulty; positive: the item is harder
        under c), ``{c}_median`` (a steadier summary than the mean under the horseshoe's heavy tails when an item
        has few responses), ``{c}_beyond_shift_mean`` (the effect minus the condition's common shift), ``{c}_lfsr`` (of
        what is tested, see ``against``), ``{c}_flagged``, then ``flagged`` (any condition) and ``flagged_conditions``.
        ``subjects``: one row per subject: ``subject``, per non-reference c ``shift_{c}_mean``,
        ``shift_{c}_ci_low``, ``shift_{c}_ci_high``, ``shift_{c}_lfsr``, ``shift_{c}_flagged`` (the shift
        against the typical system's, :func:`typical_shift`; positive: stronger under c than most systems are), per condition (reference included) ``rank_{c}_mean``,
        ``rank_{c}_ci_low``, ``rank_{c}_ci_high`` (among the systems observed under c; NaN for the others),
        then ``flagged``. Effects of an item or system never observed under a condition are not flagged.
        ``agreement``: :func:`rank_agreement` over every pair of conditions, on the systems observed under
        both (``n_subjects``).
        ``shifts``: one row per non-reference condition: ``condition``, ``shift_{mean,sd,ci_low,ci_high}``
        (the common difficulty shift: positive means every item is harder).
    """
    ci_prob = check_ci_prob(ci_prob)
    post = result.posterior
    others = [str(c) for c in post["condition"].values]
    item_ids = pd.Index(np.asarray(post["item"].values).astype(str), name="item")
    subject_ids = pd.Index(np.asarray(post["subject"].values).astype(str), name="subject")
    gamma, delta, theta = _finite_effect_draws(post)

    if against not in ("shift", "zero"):
        raise SpecError(f"against must be 'shift' or 'zero', got {against!r}")
    shift = _stacked(post, "shift", "condition")  # (draw, condition)
    beyond = gamma - shift[:, :, None]
    conditions = [result.reference, *others]
    seen_subjects = _seen(result.data, "subject", subject_ids, conditions)  # (condition, subject), reference first
    seen_items = _seen(result.data, "item", item_ids, conditions)
    tested = beyond if against == "shift" else gamma
    item_v, item_flags = _flag_effects(tested, seen_items, min_effect=min_effect, fdr=fdr, fdr_rule=fdr_rule)
    relative = delta - typical_shift(delta, seen_subjects)
    subject_v, subject_flags = _flag_effects(relative, seen_subjects, min_effect=min_effect, fdr=fdr, fdr_rule=fdr_rule)

    items = _items_table(result, item_ids, others, gamma, beyond, item_v, item_flags, ci_prob=ci_prob)
    abilities = {result.reference: theta}
    for k, c in enumerate(others):
        abilities[c] = theta + delta[:, k, :]
    subjects = _subjects_table(
        subject_ids, others, relative, subject_v, subject_flags, abilities, seen_subjects, ci_prob=ci_prob
    )

    s = summarize(shift, ci_prob=ci_prob)
    shifts = pd.DataFrame({"condition": others, **{f"shift_{k}": v for k, v in s.items()}})
    agreement = _pairwise_agreement(conditions, abilities, seen_subjects, ci_prob=ci_prob)
    for table in (items, subjects, shifts):
        table.attrs.update(ci_prob=ci_prob, fdr=fdr, min_effect=min_effect, reference=result.reference)
        table.attrs.update(against=against, fdr_rule=fdr_rule)
    return ConditionEffects(
        items=items,
        subjects=subjects,
        agreement=agreement,
        shifts=shifts,
        reference=result.reference,
        conditions=result.conditions,
        ci_prob=ci_prob,
        fdr=float(fdr),
        min_effect=float(min_effect),
        against=against,
        fdr_rule=fdr_rule,
        sampler=dict(result.sampler),
    )


def _finite_effect_draws(post: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``item_effect`` (draw, condition, item), ``ability_shift`` (draw, condition, subject), ``ability`` draws."""
    gamma = _stacked(post, "item_effect", "condition", "item")  # (draw, condition, item)
    delta = _stacked(post, "ability_shift", "condition", "subject")
    theta = _stacked(post, "ability", "subject")
    for name, arr in (("item_effect", gamma), ("ability_shift", delta), ("ability", theta)):
        if not np.isfinite(arr).all():
            raise SpecError(f"condition effects: '{name}' holds non-finite draws")
    return gamma, delta, theta


def typical_shift(delta: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The typical system's ability shift under each condition, per draw: the median over the systems observed under
    it and the reference, (draw, condition, 1).

    A system reacts to a condition when its shift differs from the typical system's. The model's shifts sum to zero
    over systems, so when a few systems drop under a format the others rise by as much in total; against the mean
    they would all look stronger. The median is the shift of most systems, and stays there while fewer than half
    react.

    Examples
    --------
    >>> delta = np.array([[[-1.5, -1.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0]]])  # two systems drop; the zero sum lifts the rest
    >>> seen = np.array([[True] * 8, [True] * 7 + [False]])
    >>> (delta - typical_shift(delta, seen))[0, 0, :7].tolist()
    [-2.0, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    both = seen[1:] & seen[:1]  # (condition, subject)
    masked = np.where(both[None, :, :], delta, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a condition no system was observed under: NaN, not flagged
        typical = np.nanmedian(masked, axis=2, keepdims=True)
    return np.nan_to_num(typical, nan=0.0)


def _flag_effects(
    effects: np.ndarray, seen: np.ndarray, *, min_effect: float, fdr: float, fdr_rule: str
) -> tuple[np.ndarray, np.ndarray]:
    """Local false sign rates (draw axis removed) of (condition, id) effects, and their Bayesian FDR flags."""
    v = local_false_sign_rate(effects, min_effect=min_effect)
    v[~(seen[1:] & seen[:1])] = 1.0  # an effect never observed cannot be flagged
    return v, bayes_fdr_flags(v, fdr=fdr, rule=fdr_rule)


def _items_table(
    result: ConditionFit,
    item_ids: pd.Index,
    others: list[str],
    gamma: np.ndarray,
    beyond: np.ndarray,
    item_v: np.ndarray,
    item_flags: np.ndarray,
    *,
    ci_prob: float,
) -> pd.DataFrame:
    """The ``items`` table of :func:`condition_effects`."""
    items = pd.DataFrame({"item": item_ids})
    meta = result.data.items.reindex(item_ids)
    if "benchmark" in meta.columns and meta["benchmark"].notna().any():
        items["benchmark"] = meta["benchmark"].to_numpy()
    g = summarize(gamma, ci_prob=ci_prob)
    for k, c in enumerate(others):
        items[f"{c}_mean"] = g["mean"][k]
        items[f"{c}_ci_low"] = g["ci_low"][k]
        items[f"{c}_ci_high"] = g["ci_high"][k]
        items[f"{c}_median"] = np.median(gamma[:, k, :], axis=0)
        items[f"{c}_beyond_shift_mean"] = beyond[:, k, :].mean(axis=0)
        items[f"{c}_lfsr"] = item_v[k]
        items[f"{c}_flagged"] = item_flags[k]
    items["flagged"] = item_flags.any(axis=0)
    items["flagged_conditions"] = [
        ";".join(c for k, c in enumerate(others) if item_flags[k, i]) for i in range(len(item_ids))
    ]
    return items


def _subjects_table(
    subject_ids: pd.Index,
    others: list[str],
    delta: np.ndarray,
    subject_v: np.ndarray,
    subject_flags: np.ndarray,
    abilities: dict[str, np.ndarray],
    seen_subjects: np.ndarray,
    *,
    ci_prob: float,
) -> pd.DataFrame:
    """The ``subjects`` table of :func:`condition_effects`: ability shifts, their flags and ranks per condition."""
    subjects = pd.DataFrame({"subject": subject_ids})
    d = summarize(delta, ci_prob=ci_prob)
    for k, c in enumerate(others):
        subjects[f"shift_{c}_mean"] = d["mean"][k]
        subjects[f"shift_{c}_ci_low"] = d["ci_low"][k]
        subjects[f"shift_{c}_ci_high"] = d["ci_high"][k]
        subjects[f"shift_{c}_lfsr"] = subject_v[k]
        subjects[f"shift_{c}_flagged"] = subject_flags[k]
    for j, (cond, ability_c) in enumerate(abilities.items()):
        seen = seen_subjects[j]
        for stat in ("mean", "ci_low", "ci_high"):
            subjects[f"rank_{cond}_{stat}"] = np.nan
        if seen.any():  # ranks among the systems observed under the condition
            r = summarize(_ranks(ability_c[:, seen]).astype("float64"), ci_prob=ci_prob)
            for stat in ("mean", "ci_low", "ci_high"):
                subjects.loc[seen, f"rank_{cond}_{stat}"] = r[stat]
    subjects["flagged"] = subject_flags.any(axis=0)
    return subjects


def _pairwise_agreement(
    conditions: list[str], abilities: dict[str, np.ndarray], seen_subjects: np.ndarray, *, ci_prob: float
) -> pd.DataFrame:
    """:func:`rank_agreement` for every pair of conditions, on the systems observed under both."""
    pairs = []
    for (ja, ca), (jb, cb) in combinations(enumerate(conditions), 2):
        both = seen_subjects[ja] & seen_subjects[jb]
        if both.sum() < 2:
            continue
        pair = rank_agreement({ca: abilities[ca][:, both], cb: abilities[cb][:, both]}, ci_prob=ci_prob)
        pairs.append(pair.assign(n_subjects=int(both.sum())))
    agreement = pd.concat(pairs, ignore_index=True) if pairs else pd.DataFrame()
    agreement.attrs["ci_prob"] = ci_prob
    return agreement


def save_conditions(effects: ConditionEffects, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``conditions_items.csv`` and ``conditions_subjects.csv`` into ``out`` (atomically, each).

    Returns
    -------
    dict
        ``"items"`` and ``"subjects"`` -> the paths written.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"items": folder / "conditions_items.csv", "subjects": folder / "conditions_subjects.csv"}
    atomic_write_text(paths["items"], effects.items.to_csv(index=False))
    atomic_write_text(paths["subjects"], effects.subjects.to_csv(index=False))
    return paths


# ============================================================================================ old names
write_conditions = deprecated_alias(save_conditions, "write_conditions")
