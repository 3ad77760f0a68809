"""BenchFill's operating characteristic: how often the acceptance rule accepts simulated candidates truly in the bin."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irtbayes.benchfill.acceptance import AcceptanceRule, decide_all
from irtbayes.benchfill.fixed import calibrate_fixed, default_min_discrimination
from irtbayes.benchfill.grid import SAMPLE_DIMS, Prior, flatten_samples, level_prior
from irtbayes.core.errors import SpecError
from irtbayes.core.irt import probability
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

log = logging.getLogger(__name__)


def _check_oc(
    fit: Fit, truth: str, target_lo: float, target_hi: float, mis_keyed_share: float, flat_share: float
) -> None:
    if "dim" in fit.posterior["ability"].dims:
        raise SpecError("operating_characteristic: needs a fit with one ability dimension")
    if truth not in ("uniform", "bank"):
        raise SpecError(f"operating_characteristic: truth must be 'uniform' or 'bank', got {truth!r}")
    if not float(target_hi) - float(target_lo) > 0:
        raise SpecError(f"operating_characteristic: need target_lo < target_hi, got [{target_lo}, {target_hi})")
    if not (0 <= mis_keyed_share and 0 <= flat_share and mis_keyed_share + flat_share <= 1):
        raise SpecError(
            f"operating_characteristic: mis_keyed_share {mis_keyed_share} and flat_share {flat_share} must be >= 0 "
            "with a sum <= 1"
        )


def operating_characteristic(
    fit: Fit,
    *,
    target_lo: float,
    target_hi: float,
    n_systems: Sequence[int] = (20, 50, 100, 200),
    n_candidates: int = 100,
    reps: int = 1,
    truth: Literal["uniform", "bank"] = "uniform",
    spread: float | None = None,
    discrimination_sd: float = 0.3,
    benchmark: str | None = None,
    tau: float = 0.8,
    min_responses: int = 10,
    discrimination_prob: float = 0.9,
    min_discrimination: float | None = None,
    mis_keyed_share: float = 0.0,
    flat_share: float = 0.0,
    flat_discrimination: float = 0.05,
    seed: int = 0,
    ability_points: int = 16,
    n_draws: int = 1000,
    prior: Prior = "candidates",
) -> pd.DataFrame:
    """Simulate candidates with known parameters, calibrate them on the fast path and decide.

    For each number of responding systems n and each repetition, n of the fit's subjects are chosen at
    random; their posterior mean abilities are taken as their true abilities. ``n_candidates`` candidates get
    true parameters from one of two scenarios:

    - ``truth="uniform"`` (candidates aimed at the bin that may miss it): difficulties uniform on
      ``[target_lo - spread, target_hi + spread]`` (default spread: the bin width, so a third lie in the bin),
      discriminations ``exp(Normal(0, discrimination_sd))``;
    - ``truth="bank"`` (candidates like the bank's items): (difficulty, log discrimination) drawn from the
      fitted hierarchy's predictive for a new item of ``benchmark`` (one posterior draw of the
      hyperparameters per candidate).

    A share ``mis_keyed_share`` of the candidates (chosen at random) is mis-keyed: their slope is minus the
    drawn discrimination, so their responses fall with ability; a share ``flat_share`` is flat: their slope is
    ``flat_discrimination``. The others are good. The systems' responses are simulated from the 2PL model
    with these slopes; the candidates are calibrated with :func:`calibrate_fixed` (with ``prior``) and
    decided with :func:`~irtbayes.benchfill.acceptance.decide_all` (``min_discrimination`` default:
    :func:`default_min_discrimination` of the fit). ``prior="bank"`` shrinks every candidate towards the
    bank's mean; ``prior="candidates"`` learns where the candidates are from all of them.

    Returns
    -------
    pandas.DataFrame
        One row per simulated candidate: ``n_systems``, ``rep``, ``candidate_id``, ``kind`` (``"good"``,
        ``"mis-keyed"`` or ``"flat"``), ``true_difficulty``, ``true_discrimination`` (the slope, negative for
        a mis-keyed candidate), ``in_bin`` (true difficulty in the bin), ``wanted`` (good and in the bin),
        ``p_in_target``, ``p_in_target_data``, ``slope_mean``, ``difficulty_mean``, ``decision``, ``reason``,
        ``failed``; summarise with :func:`operating_characteristic_table`. ``attrs`` record the settings.

    Examples
    --------
    Six simulated candidates aimed at [0, 1), answered by 60 of the bank's systems, calibrated on the fast path:

    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.oc import operating_characteristic, operating_characteristic_table
    >>> frame = operating_characteristic(fit, target_lo=0.0, target_hi=1.0, n_systems=[60], n_candidates=6, n_draws=50, seed=1)
    >>> frame.shape[0], bool(frame.loc[frame["decision"] == "accepted", "p_in_target"].ge(0.8).all())
    (6, True)
    >>> operating_characteristic_table(frame)[["n_systems", "n_candidates", "n_accepted"]]
       n_systems  n_candidates  n_accepted
    0         60             6           1
    """
    _check_oc(fit, truth, target_lo, target_hi, mis_keyed_share, flat_share)
    spread = float(target_hi) - float(target_lo) if spread is None else float(spread)
    if min_discrimination is None:
        min_discrimination = default_min_discrimination(fit)
    rule = {
        "tau": tau,
        "min_responses": min_responses,
        "discrimination_prob": discrimination_prob,
        "min_discrimination": min_discrimination,
    }
    frames = _oc_rounds(
        fit, n_systems, reps, rng=np.random.default_rng(seed), truth=truth, benchmark=benchmark,
        n_candidates=n_candidates, n_bad=(round(mis_keyed_share * n_candidates), round(flat_share * n_candidates)),
        spread=spread, discrimination_sd=discrimination_sd, flat_discrimination=flat_discrimination,
        target=(target_lo, target_hi), calibrate={"n_draws": n_draws, "ability_points": ability_points, "prior": prior},
        rule=rule,
    )  # fmt: skip
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(
        truth=truth, target_lo=float(target_lo), target_hi=float(target_hi), tau=float(tau), spread=spread,
        discrimination_sd=discrimination_sd, min_responses=min_responses, min_discrimination=float(min_discrimination),
        mis_keyed_share=mis_keyed_share, flat_share=flat_share, flat_discrimination=flat_discrimination, seed=seed,
        prior=prior,
    )  # fmt: skip
    return out


def _oc_rounds(
    fit: Fit, n_systems: Sequence[int], reps: int, *, rng: np.random.Generator, **settings: Any
) -> list[pd.DataFrame]:
    """Every repetition (:func:`_oc_round`, with ``settings``) for each number of systems, in order."""
    theta_all = fit.posterior["ability"].mean(SAMPLE_DIMS).to_series()
    theta_all.index = theta_all.index.astype(str)
    frames = []
    for n in n_systems:
        if n > len(theta_all):
            raise SpecError(f"operating_characteristic: {n} systems asked for but the fit has {len(theta_all)}")
        for rep in range(reps):
            frames.append(_oc_round(fit, theta_all, n, rep, rng=rng, **settings))
    return frames


def _oc_round(
    fit: Fit,
    theta_all: pd.Series,
    n: int,
    rep: int,
    *,
    rng: np.random.Generator,
    truth: str,
    benchmark: str | None,
    n_candidates: int,
    n_bad: tuple[int, int],
    spread: float,
    discrimination_sd: float,
    flat_discrimination: float,
    target: tuple[float, float],
    calibrate: dict[str, Any],
    rule: dict[str, Any],
) -> pd.DataFrame:
    """One repetition of :func:`operating_characteristic` with ``n`` responding systems."""
    target_lo, target_hi = target
    chosen = rng.choice(len(theta_all), size=n, replace=False)
    theta = theta_all.to_numpy()[chosen]
    subjects = theta_all.index[chosen]
    if truth == "bank":
        b, a = _bank_like(fit, benchmark, n_candidates, rng)
    else:
        b = rng.uniform(target_lo - spread, target_hi + spread, n_candidates)
        a = np.exp(rng.normal(0.0, discrimination_sd, n_candidates))
    kind = np.array(["mis-keyed"] * n_bad[0] + ["flat"] * n_bad[1] + ["good"] * (n_candidates - sum(n_bad)))
    kind = kind[rng.permutation(n_candidates)]
    a = np.where(kind == "mis-keyed", -a, np.where(kind == "flat", flat_discrimination, a))
    y = (rng.random((n, n_candidates)) < probability(theta[:, None], b[None, :], a[None, :])).astype(float)
    ids = [f"oc-{n}-{rep}-{k:04d}" for k in range(n_candidates)]
    frame = pd.DataFrame(
        {"subject": np.repeat(subjects.to_numpy(), n_candidates), "item": np.tile(ids, n), "response": y.ravel()}
    )
    meta = pd.DataFrame({"item": ids, "benchmark": benchmark})
    new = ResponseData.from_long(frame, items=meta, source=f"simulated candidates (n={n}, rep {rep})")
    post = calibrate_fixed(fit, new, seed=int(rng.integers(2**31)), **calibrate)
    counts = post["n_responses"].to_series()
    table = decide_all(
        post, target_lo=target_lo, target_hi=target_hi, n_responses=counts, rule=AcceptanceRule(**rule)
    ).reindex(ids)
    in_bin = (b >= target_lo) & (b < target_hi)
    columns = ("p_in_target", "p_in_target_data", "slope_mean", "difficulty_mean", "decision", "reason", "failed")
    return pd.DataFrame(
        {
            "n_systems": n,
            "rep": rep,
            "candidate_id": ids,
            "kind": kind,
            "true_difficulty": b,
            "true_discrimination": a,
            "in_bin": in_bin,
            "wanted": in_bin & (kind == "good"),
        }
        | {c: table[c].to_numpy() for c in columns}
    )


def _bank_like(fit: Fit, benchmark: str | None, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(difficulty, discrimination) of ``n`` new items drawn from the fitted hierarchy's predictive."""
    post = fit.posterior
    n_total = int(post.sizes["chain"] * post.sizes["draw"])
    rows = rng.integers(0, n_total, n)
    prior_b = level_prior(post, fit.spec.hierarchy, "difficulty", rows, benchmark, None)
    b = rng.normal(prior_b.centre, prior_b.sd)
    if fit.spec.kind == "1pl":
        return b, np.exp(flatten_samples(post["log_discrimination_mu"])[rows])
    prior_la = level_prior(
        post,
        fit.spec.hierarchy,
        "log_discrimination",
        rows,
        benchmark,
        None,
        fixed_sd=fit.spec.priors.log_discrimination_sd_scale,
    )
    return b, np.exp(rng.normal(prior_la.centre, prior_la.sd))


def operating_characteristic_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per number of systems: candidates, wanted candidates, accepted, precision and recall, and the rejection
    of mis-keyed and flat candidates.

    A candidate is wanted when it is good (neither mis-keyed nor flat) and truly in the bin.

    Returns
    -------
    pandas.DataFrame
        One row per ``n_systems``: ``n_candidates``, ``n_in_bin`` (wanted candidates), ``n_accepted``,
        ``n_true_accepted`` (wanted and accepted), ``precision`` (share of accepted candidates that are wanted;
        NaN when none is accepted), ``precision_se`` (binomial standard error, sqrt(p (1 - p) / n_accepted)),
        ``recall`` (share of wanted candidates accepted), ``mean_p_in_target_accepted`` (the precision the
        posterior promises); for ``kind`` in mis-keyed and flat: ``n_mis_keyed`` / ``n_flat``,
        ``mis_keyed_rejected`` / ``flat_rejected`` (share rejected) and ``mis_keyed_named`` / ``flat_named``
        (share rejected with that reason among its failed checks; NaN when there are none of that kind).

    Examples
    --------
    Precision and recall from a table of decisions on candidates whose truth is known:

    >>> from irtbayes.benchfill.oc import operating_characteristic_table
    >>> frame = pd.DataFrame(
    ...     {"n_systems": 50, "decision": ["accepted", "accepted", "rejected", "rejected"], "in_bin": [True, False, True, False],
    ...      "p_in_target": [0.9, 0.85, 0.4, 0.1]}
    ... )
    >>> operating_characteristic_table(frame)[["n_accepted", "n_true_accepted", "precision", "recall"]]
       n_accepted  n_true_accepted  precision  recall
    0           2                1        0.5     0.5
    """
    rows = []
    for n, group in frame.groupby("n_systems", sort=True):
        accepted = group["decision"].eq("accepted").to_numpy()
        wanted = group["wanted" if "wanted" in group.columns else "in_bin"].to_numpy(dtype=bool)
        n_acc = int(accepted.sum())
        n_true = int((accepted & wanted).sum())
        precision = n_true / n_acc if n_acc else math.nan
        row: dict[str, Any] = {
            "n_systems": int(n),
            "n_candidates": len(group),
            "n_in_bin": int(wanted.sum()),
            "n_accepted": n_acc,
            "n_true_accepted": n_true,
            "precision": precision,
            "precision_se": math.sqrt(precision * (1 - precision) / n_acc) if n_acc else math.nan,
            "recall": n_true / int(wanted.sum()) if wanted.any() else math.nan,
            "mean_p_in_target_accepted": float(group.loc[accepted, "p_in_target"].mean()) if n_acc else math.nan,
        }
        kinds = group["kind"] if "kind" in group.columns else pd.Series("good", index=group.index)
        failed = group["failed"].fillna("") if "failed" in group.columns else pd.Series("", index=group.index)
        for kind, key in (("mis-keyed", "mis_keyed"), ("flat", "flat")):
            mask = (kinds == kind).to_numpy()
            row[f"n_{key}"] = int(mask.sum())
            if mask.any():
                row[f"{key}_rejected"] = float((~accepted[mask]).mean())
                row[f"{key}_named"] = float(failed[mask].map(lambda f, k=kind: k in f.split("; ")).mean())
            else:
                row[f"{key}_rejected"] = row[f"{key}_named"] = math.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(frame.attrs)
    return table
