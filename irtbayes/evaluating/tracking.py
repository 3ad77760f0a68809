"""Where a checkpoint gained and where it lost: ``track(fit, checkpoints)``, by region of difficulty.

A training team's question is not which model leads but where a change helped or hurt. The checkpoints (or
versions) of one model answer some or all of a fitted bank's items; each pair of checkpoints (each with the one
before, or each with a baseline) is compared in every **region** of difficulty (by default the audit's bins over
the bank's range, and the whole range; ``regions`` adds the stretches a team cares about) and **scope** (``all``
and each benchmark). Per posterior draw s of the item parameters (``n_draws`` evenly spaced draws):

- a region's items are the bank's items whose difficulty in draw s lies in it, so an item near a region's edge
  counts in the draws that place it there (membership follows the posterior, like the audit's bins);
- each checkpoint's ability theta_s is drawn from its posterior given its answers and draw s's items
  (:func:`irtbayes.evaluating.prediction.ability_draws`);
- **accuracy change**: the change of the checkpoints' accuracy on the region's items, each item counted by the
  checkpoint's answer where it answered and by the model's probability P_i(theta_s) where it did not, plus a
  normal draw with the binomial spread of a re-run of the answered items at the model's probabilities
  (sum_i p_i (1 - p_i) over each checkpoint's answered items, over the number of items squared): the interval
  says what the change would be on a re-run, so two runs of one checkpoint differ by chance within it;
- **expected change**: what the change of ability alone predicts there, the mean over the region's items of
  P_i(theta_to,s) - P_i(theta_from,s);
- **beyond ability**: their difference, a change the ability shift does not explain (the checkpoint changed
  shape: it gained in one region and lost in another).

``credible`` marks a change whose interval, at 1 - (1 - ci_prob) / m with m the pair's rows (every scope and
region; Bonferroni over the rows of a pair), excludes 0, judged by a normal approximation to the draws (mean and
sd: the extreme quantiles of a few hundred draws are too noisy to decide on). Two identical checkpoints then show
a credible change somewhere among the m rows with probability at most 1 - ci_prob. ``detectable_change`` is the
smallest change of accuracy a region can show as credible with probability 0.8 under the same rule:
(z_{1 - alpha / 2m} + z_{0.8}) times the sd of the change between two checkpoints at the "from" checkpoint's
ability (the re-run spread of the region's answered items).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from irtbayes.core import irt
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, SpecError, listed
from irtbayes.core.summaries import check_ci_prob, format_interval
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.prediction import ALL, ability_draws, check_new_responses, evaluation_target

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from irtbayes.fitting.result import Fit

__all__ = ["POWER", "Tracking", "pair_lines", "track"]

#: The probability with which ``detectable_change`` is shown credible.
POWER = 0.8
#: The region of the bank's whole range.
WHOLE = "whole range"


@dataclass(frozen=True)
class Tracking:
    """Changes between checkpoints by scope and region (:func:`track`).

    Attributes
    ----------
    changes
        One row per (from, to, scope, region): ``from``, ``to``, ``scope``, ``region`` (its label, or
        :data:`WHOLE`), ``region_low``, ``region_high``,
        ``items`` (the mean number of the bank's items in the region over the draws), ``answered_from``,
        ``answered_to``, ``accuracy_change_{mean,ci_low,ci_high}``, ``expected_change_{...}``,
        ``beyond_ability_{...}``, ``detectable_change``, ``credible`` (and ``direction``: ``gain``, ``loss`` or
        empty).
    abilities
        One row per checkpoint in order: ``checkpoint``, ``step``, ``ability_{mean,ci_low,ci_high}``,
        ``accuracy_{mean,ci_low,ci_high}`` (its accuracy over every item of the bank: answered items by its answers,
        the others by the model, with a re-run's spread), ``answered``.
    notes
        Sentences every output carries (the bank's warnings, items left out, empty regions).
    settings
        ``ci_prob``, ``rows_per_pair``, ``level`` (the per-row level of ``credible``), ``baseline``, ``n_draws``.
    """

    changes: pd.DataFrame
    abilities: pd.DataFrame
    notes: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        pairs = self.changes[["from", "to"]].drop_duplicates()
        return f"<Tracking of {len(self.abilities)} checkpoints, {len(pairs)} pairs: {int(self.changes['credible'].sum())} credible changes>"

    def to_text(self) -> str:
        """For each pair: the change over the whole range, then the credible gains and losses by region."""
        lines = [
            f"Changes between checkpoints (credible: rule in docs/tracking.md, {self.settings['ci_prob']:.0%} "
            f"over each pair's {self.settings['rows_per_pair']} rows; effect aimed at "
            f"{self.settings.get('effect', 0.10):.2f})"
        ]
        lines += [f"note: {n}" for n in self.notes]
        for (a, b), rows in self.changes.groupby(["from", "to"], sort=False):
            lines.append(f"\n{a} -> {b}")
            lines.extend(pair_lines(rows, self.settings.get("effect", 0.10)))
        return "\n".join(lines)

    def save(self, out: str | Any) -> list[str]:
        """Write ``changes.csv``, ``abilities.csv``, ``tracking.txt`` and ``trajectory.png`` to the folder ``out``."""
        from pathlib import Path

        from irtbayes.core.files import atomic_write_bytes, atomic_write_text

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / "changes.csv", self.changes.to_csv(index=False))
        atomic_write_text(folder / "abilities.csv", self.abilities.to_csv(index=False))
        atomic_write_text(folder / "tracking.txt", self.to_text() + "\n")
        import io

        import matplotlib.pyplot as plt

        figure, png = self.plot(), io.BytesIO()
        figure.savefig(png, format="png", dpi=120, bbox_inches="tight")
        plt.close(figure)
        atomic_write_bytes(folder / "trajectory.png", png.getvalue())
        return ["changes.csv", "abilities.csv", "tracking.txt", "trajectory.png"]

    @classmethod
    def load(cls, folder: str | Any) -> Tracking:
        """A tracking written by :meth:`save` (its tables and notes; the settings it states)."""
        from pathlib import Path

        root = Path(folder)
        for name in ("changes.csv", "abilities.csv"):
            if not (root / name).is_file():
                raise DataError(f"{root}: no {name}; give a folder written by `irtbayes track`")
        changes = pd.read_csv(root / "changes.csv", keep_default_na=False, na_values=[""])
        changes["direction"] = changes["direction"].fillna("").astype(str)
        text = (root / "tracking.txt").read_text() if (root / "tracking.txt").is_file() else ""
        notes = tuple(line[len("note: ") :] for line in text.splitlines() if line.startswith("note: "))
        pairs = changes[["from", "to"]].drop_duplicates()
        stated = re.search(r"(\d+)% over each pair", text)  # the text's first line states the interval
        effect = re.search(r"effect aimed at ([0-9.]+)\)", text)
        settings = {
            "ci_prob": int(stated.group(1)) / 100 if stated else 0.9,
            "rows_per_pair": len(changes) // max(len(pairs), 1),
            "effect": float(effect.group(1)) if effect else 0.10,
        }
        return cls(changes=changes, abilities=pd.read_csv(root / "abilities.csv"), notes=notes, settings=settings)

    write = deprecated_alias(save, "write")
    read = deprecated_alias(load, "read")

    def plot(self) -> Figure:
        """Ability against step with its band, and each region's accuracy change from the first checkpoint's."""
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        ab = self.abilities
        x = ab["step"].to_numpy(dtype="float64")
        left.fill_between(x, ab["ability_ci_low"], ab["ability_ci_high"], alpha=0.25, color="C0")
        left.plot(x, ab["ability_mean"], "o-", color="C0")
        left.set(xlabel="step", ylabel="ability (logits)", title="Ability")
        rows = self.changes[(self.changes["scope"] == ALL) & (self.changes["region"] != WHOLE)]
        groups = list(rows.groupby("region", sort=False))
        spacing = float(np.diff(np.unique(x)).min()) if len(np.unique(x)) > 1 else 1.0
        for k, (region, part) in enumerate(groups):
            steps = ab.set_index("checkpoint").loc[part["to"], "step"].to_numpy(dtype="float64")
            shift = (k - (len(groups) - 1) / 2) * 0.5 * spacing / max(len(groups), 1)  # side by side, centred
            right.errorbar(
                steps + shift,
                part["accuracy_change_mean"],
                yerr=[
                    part["accuracy_change_mean"] - part["accuracy_change_ci_low"],
                    part["accuracy_change_ci_high"] - part["accuracy_change_mean"],
                ],
                fmt="o",
                label=region,
                capsize=2,
            )
        right.axhline(0, color="grey", lw=0.8)
        ylabel = f"accuracy change ({self.settings.get('ci_prob', 0.9):.0%} intervals)"
        right.set(xlabel="step of the later checkpoint", ylabel=ylabel, title="Change by region, all items")
        right.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        return fig


def pair_lines(rows: pd.DataFrame, effect: float = 0.10) -> list[str]:
    """What changed from one checkpoint to the next, a line each: all items, each credible gain and loss by region
    and benchmark, the regions too thin to show the effect, and the smallest change each region could show."""
    whole = rows[(rows["scope"] == ALL) & (rows["region"] == WHOLE)].iloc[0]
    out = [f"  all items: {_change(whole)}{' (credible)' if whole['credible'] else ''}"]
    for direction in ("gain", "loss"):
        found = rows[(rows["direction"] == direction) & (rows["region"] != WHOLE)]
        for _, row in found.iterrows():
            out.append(f"  credible {direction} in {row['region']} ({row['scope']}): {_change(row)}")
    regions = rows[(rows["scope"] == ALL) & (rows["region"] != WHOLE)]
    if len(out) == 1:
        out.append("  no credible change in any region or benchmark")
    thin = regions.loc[~(regions["detectable_change"] <= effect), "region"].tolist()  # NaN (no items) is thin
    if thin:
        out.append(f"  too thin to show a change of {effect:.2f} (all items): {', '.join(thin)}")
    smallest = ", ".join(f"{r} {d:.2f}" for r, d in zip(regions["region"], regions["detectable_change"], strict=True))
    out.append(f"  smallest change each region could show (all items): {smallest}")
    return out


def _change(row: pd.Series) -> str:
    change = format_interval(row, "accuracy_change", fmt=lambda v: f"{v:+.3f}")
    return f"{change}, ability alone {row['expected_change_mean']:+.3f}"


def _ordered(responses: ResponseData, step: str | Mapping[str, float] | None) -> tuple[list[str], np.ndarray]:
    """The checkpoints in order (by ``step``: a column of the subjects' table or a mapping from checkpoint to
    step; else their order in the file) and their steps."""
    ids = [str(s) for s in responses.subject_ids]
    if isinstance(step, Mapping):
        missing = [s for s in ids if s not in step]
        if missing:
            raise DataError(f"{responses.source}: no step for checkpoint(s) {listed(missing, 5)}")
        values = pd.Series([step[s] for s in ids], index=ids)
        step = "step"
    elif step is not None:
        if step not in responses.subjects.columns:
            raise DataError(f"{responses.source}: no column {step!r} orders the checkpoints")
        values = responses.subjects[step]
    if step is not None:
        values = pd.to_numeric(values, errors="coerce")
        if values.isna().any():
            raise DataError(f"{responses.source}: column {step!r} must hold a number for every checkpoint")
        order = np.argsort(values.to_numpy(), kind="stable")
        return [ids[k] for k in order], values.to_numpy(dtype="float64")[order]
    first = pd.unique(responses.responses["subject"].astype(str))
    return list(first), np.arange(len(first), dtype="float64")


def _regions(target_edges: Sequence[float], extra: Sequence[Sequence[float]]) -> list[tuple[str, float, float]]:
    edges = [float(e) for e in target_edges]
    regions = [(f"[{lo:.2f}, {hi:.2f})", lo, hi) for lo, hi in itertools.pairwise(edges)]
    for pair in extra:
        if len(pair) != 2 or not float(pair[0]) < float(pair[1]):
            raise SpecError(f"track: a region is two numbers LO < HI, got {list(pair)}")
        lo, hi = float(pair[0]), float(pair[1])
        regions.append((f"[{lo:.2f}, {hi:.2f})", lo, hi))
    return [(WHOLE, edges[0], edges[-1]), *regions]


def track(
    fit: Fit | ItemBank,
    checkpoints: ResponseData,
    *,
    baseline: str | None = None,
    step: str | Mapping[str, float] | None = None,
    regions: Sequence[Sequence[float]] = (),
    bins: int | Sequence[float] | None = None,
    n_draws: int = 400,
    ci_prob: float = 0.9,
    data: ResponseData | str | bool | None = None,
    seed: int = 0,
    bank: ItemBank | None = None,
    effect: float = 0.10,
) -> Tracking:
    """Compare checkpoints of one model on a fitted bank, by region of difficulty (module docstring).

    Parameters
    ----------
    fit
        The fitted bank (its systems are not the checkpoints).
    checkpoints
        The checkpoints' responses (subjects = checkpoints) to the bank's items; items the bank does not hold
        are left out (said).
    baseline
        Compare every checkpoint with this one; default: each with the one before.
    step
        What orders the checkpoints: a column of ``checkpoints.subjects`` or a mapping from checkpoint to step;
        default: their order in the file.
    regions
        Extra (LO, HI) stretches of difficulty besides the audit's bins (``bins`` of them over the bank's range).
    n_draws, ci_prob, seed
        Posterior draws of the bank used, the interval's probability, the seed of the ability draws.
    data
        The bank's own responses (:meth:`ItemBank.from_fit`): None reads what the fit records.
    bank
        The :class:`ItemBank` of ``fit`` when already made (``n_draws`` and ``data`` are then its own).
    effect
        The change of accuracy an intervention aims at: the text names the regions whose detectable change is
        larger (too thin to show it).

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> from irtbayes.data.simulate import simulate_responses
    >>> fit, _ = simulated_fit(200, 60, missing=0.0)
    >>> new, _ = simulate_responses(3, 60, seed=4, missing=0.0)
    >>> frame = new.long_frame().assign(subject=lambda f: "ckpt" + f["subject"].astype(str).str[-1])
    >>> result = track(fit, ResponseData.from_long(frame), n_draws=50, data=False)
    >>> result.changes[["from", "to"]].drop_duplicates().values.tolist()
    [['ckpt0', 'ckpt1'], ['ckpt1', 'ckpt2']]
    """
    check_ci_prob(ci_prob)
    if bank is None:
        bank = fit if isinstance(fit, ItemBank) else ItemBank.from_fit(fit, n_draws=n_draws, data=data)
    notes = _bank_items(bank, checkpoints)
    known = checkpoints.item_ids.intersection(bank.items)
    if len(known) < checkpoints.n_items:
        checkpoints = checkpoints.subset(items=list(known))
    notes = [*check_new_responses(bank, checkpoints), *notes]
    order, steps = _ordered(checkpoints, step)
    if len(order) < 2:
        raise DataError(f"{checkpoints.source}: tracking needs at least 2 checkpoints, found {len(order)}")
    if baseline is not None and baseline not in order:
        raise DataError(f"{checkpoints.source}: baseline {baseline!r} is not a checkpoint; found {listed(order)}")
    pairs = [(baseline, c) for c in order if c != baseline] if baseline else list(itertools.pairwise(order))
    target = evaluation_target(fit, "uniform", bins=bins) if not isinstance(fit, ItemBank) else None
    edges = list(target.edges) if target is not None else _bank_edges(bank, bins).tolist()
    spans = _regions(edges, regions)
    y, w, trials, spread = _matrix(bank, checkpoints, order)
    rng = np.random.default_rng(seed)
    theta = ability_draws(bank, y, w, rng, trials)  # (S, J)
    prob = _Probabilities(bank, theta)
    scopes = [ALL, *bank.benchmarks]
    m = len(scopes) * len(spans)
    level = 1 - (1 - ci_prob) / m
    onehot = np.stack([np.ones(bank.n_items, bool)] + [bank.benchmark == b for b in bank.benchmarks], axis=1)
    rows: list[dict[str, Any]] = []
    for a, b in pairs:
        ja, jb = order.index(a), order.index(b)
        sums = _PairSums(y, spread, prob, ja, jb, answered=w)
        for label, lo, hi in spans:
            member = (bank.difficulty >= lo) & (bank.difficulty < hi)  # (S, N): per draw
            if hi >= bank.difficulty.max():  # the top of the range holds its edge
                member |= bank.difficulty == hi
            totals = sums.by_scope(member, onehot.astype("float64"))
            for k, scope in enumerate(scopes):
                row = _row({name: t[:, k] for name, t in totals.items()}, lo, hi, rng, ci_prob=ci_prob, level=level)
                rows.append({"from": a, "to": b, "scope": scope, "region": label, **row})
    changes = pd.DataFrame(rows)
    empty = changes.loc[changes["items"] == 0, ["scope", "region"]].drop_duplicates()
    if len(empty):
        notes.append(
            f"{len(empty)} (scope, region) row(s) hold no items of the bank and have no change: "
            + listed([f"{s} {r}" for s, r in empty.itertuples(index=False)], 5)
        )
    abilities = _abilities(bank, order, steps, theta, prob, y, spread, ci_prob)
    settings = {"ci_prob": ci_prob, "rows_per_pair": m, "level": level, "baseline": baseline, "n_draws": bank.n_draws}
    settings["effect"] = float(effect)
    return Tracking(changes=changes, abilities=abilities, notes=tuple(notes), settings=settings)


def _bank_items(bank: ItemBank, checkpoints: ResponseData) -> list[str]:
    if not isinstance(checkpoints, ResponseData):
        raise DataError(f"track: the checkpoints must be ResponseData, got {type(checkpoints).__name__}")
    unknown = checkpoints.item_ids.difference(bank.items)
    if len(unknown) == checkpoints.n_items:
        raise DataError(f"{checkpoints.source}: none of the checkpoints' {checkpoints.n_items} items is in the bank")
    if len(unknown):
        return [f"{len(unknown)} item(s) not in the bank were left out: {listed(list(unknown), 5)}"]
    return []


def _bank_edges(bank: ItemBank, bins: int | Sequence[float] | None) -> np.ndarray:
    if bins is not None and not isinstance(bins, int):
        return np.asarray(bins, dtype="float64")
    b = bank.difficulty.mean(axis=0)
    return np.linspace(float(b.min()), float(b.max()), (bins or 10) + 1)


def _matrix(
    bank: ItemBank, responses: ResponseData, order: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """(J, N) responses and observed mask of the checkpoints in ``order`` on the bank's items; for k successes of n
    trials the trials (1 where missing; None without trials), the responses being the shares of successes over all of
    a cell's trials; and the weight of each observed share's variance p (1 - p) (the mask, over n with trials)."""
    frame = responses.long_frame().assign(successes=responses.successes, trials=responses.trials)
    frame = frame.groupby(["subject", "item"], observed=True, as_index=False).agg(
        response=("response", "mean"), successes=("successes", "sum"), trials=("trials", "sum")
    )
    rows = pd.Index(order).get_indexer(frame["subject"].astype(str))
    cols = pd.Index(bank.items).get_indexer(frame["item"].astype(str))
    y = np.zeros((len(order), bank.n_items))
    w = np.zeros_like(y)
    w[rows, cols] = 1.0
    if not responses.has_trials:
        y[rows, cols] = frame["response"].to_numpy(dtype="float64")
        return y, w, None, w
    n = np.ones_like(y)
    n[rows, cols] = frame["trials"].to_numpy(dtype="float64")
    y[rows, cols] = frame["successes"].to_numpy(dtype="float64") / n[rows, cols]
    return y, w, n, w / n


class _Probabilities:
    """``prob[j]``: (S, N) checkpoint j's probability of each item per draw, computed once when first asked for
    (a pair at a time: all checkpoints at once would hold S x J x N numbers)."""

    def __init__(self, bank: ItemBank, theta: np.ndarray) -> None:
        self.bank, self.theta = bank, theta
        self.cache: dict[int, np.ndarray] = {}

    def __getitem__(self, j: int) -> np.ndarray:
        if j not in self.cache:
            if len(self.cache) >= 2:
                self.cache.pop(next(iter(self.cache)))
            bank = self.bank
            self.cache[j] = irt.probability(self.theta[:, j, None], bank.difficulty, bank.discrimination, bank.guessing)
        return self.cache[j]


class _PairSums:
    """Per-item quantities of one pair of checkpoints (each (S, N)), summed over a region's items by scope."""

    def __init__(
        self, y: np.ndarray, w: np.ndarray, prob: _Probabilities, ja: int, jb: int, *, answered: np.ndarray
    ) -> None:
        """``w`` weighs each observed share's sampling variance p (1 - p) (1 over its number of trials, 0 where
        missing); ``answered`` is the observed mask."""
        pa, pb = prob[ja], prob[jb]
        qa = np.where(answered[ja][None, :] > 0, y[ja][None, :], pa)
        qb = np.where(answered[jb][None, :] > 0, y[jb][None, :], pb)
        self.parts = {
            "observed": qb - qa,
            "expected": pb - pa,
            "spread_a": pa * (1 - pa) * w[ja][None, :],
            "spread_b": pb * (1 - pb) * w[jb][None, :],
        }
        self.answered = {"answered_from": answered[ja], "answered_to": answered[jb]}

    def by_scope(self, member: np.ndarray, onehot: np.ndarray) -> dict[str, np.ndarray]:
        """Each quantity summed over the region's items in each draw and scope: (S, scopes); ``count`` too."""
        inside = member.astype("float64")
        out = {name: (values * inside) @ onehot for name, values in self.parts.items()}
        out["count"] = inside @ onehot
        out.update({name: (inside * mask[None, :]) @ onehot for name, mask in self.answered.items()})
        return out


def _row(
    totals: dict[str, np.ndarray], lo: float, hi: float, rng: np.random.Generator, *, ci_prob: float, level: float
) -> dict[str, Any]:
    """One (pair, scope, region) row from its per-draw sums (module docstring)."""
    count = totals["count"]
    base = {"region_low": lo, "region_high": hi, "items": float(count.mean())}
    base["answered_from"] = int(totals["answered_from"].mean().round())
    base["answered_to"] = int(totals["answered_to"].mean().round())
    if not count.any():
        empty = {"detectable_change": np.nan, "credible": False, "direction": ""}
        return {**base, **dict.fromkeys(_COLUMNS, np.nan), **empty}
    valid = count > 0
    n = count[valid]
    spread_a, spread_b = totals["spread_a"][valid], totals["spread_b"][valid]
    change = totals["observed"][valid] / n + rng.standard_normal(len(n)) * np.sqrt(spread_a + spread_b) / n
    expected = totals["expected"][valid] / n
    out: dict[str, Any] = dict(base)
    for name, v in (("accuracy_change", change), ("expected_change", expected), ("beyond_ability", change - expected)):
        out[f"{name}_mean"] = float(v.mean())
        low, high = np.quantile(v, [(1 - ci_prob) / 2, (1 + ci_prob) / 2])
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = float(low), float(high)
    z = norm.ppf(1 - (1 - level) / 2)
    sd = float(change.std(ddof=1)) if len(change) > 1 else 0.0
    out["credible"] = bool(sd > 0 and abs(change.mean()) > z * sd)
    out["direction"] = ("gain" if change.mean() > 0 else "loss") if out["credible"] else ""
    null_sd = float((np.sqrt(2 * spread_a) / n).mean())
    out["detectable_change"] = float((z + norm.ppf(POWER)) * null_sd) if null_sd > 0 else math.inf
    return out


_COLUMNS = [
    f"{m}_{s}" for m in ("accuracy_change", "expected_change", "beyond_ability") for s in ("mean", "ci_low", "ci_high")
]


def _abilities(
    bank: ItemBank,
    order: list[str],
    steps: np.ndarray,
    theta: np.ndarray,
    prob: _Probabilities,
    y: np.ndarray,
    w: np.ndarray,
    ci_prob: float,
) -> pd.DataFrame:
    """Each checkpoint's ability and accuracy over the bank's items: its answers where it answered, the model's
    probabilities elsewhere, with a re-run's binomial spread of the answered items (as the changes have). ``w`` is
    the observed mask, or 1 / n where a share of n trials was observed."""
    lo, hi = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    rng = np.random.default_rng(0)
    columns = []
    for j in range(len(order)):
        p = prob[j]
        mean = np.where(w[j][None] > 0, y[j][None], p).mean(axis=1)
        spread = np.sqrt((p * (1 - p) * w[j][None]).sum(axis=1)) / p.shape[1]
        columns.append(mean + rng.standard_normal(len(mean)) * spread)
    completed = np.stack(columns, axis=1)
    rows = []
    for j, name in enumerate(order):
        rows.append(
            {
                "checkpoint": name,
                "step": float(steps[j]),
                "ability_mean": float(theta[:, j].mean()),
                "ability_ci_low": float(np.quantile(theta[:, j], lo)),
                "ability_ci_high": float(np.quantile(theta[:, j], hi)),
                "accuracy_mean": float(completed[:, j].mean()),
                "accuracy_ci_low": float(np.quantile(completed[:, j], lo)),
                "accuracy_ci_high": float(np.quantile(completed[:, j], hi)),
                "answered": int(w[j].sum()),
            }
        )
    return pd.DataFrame(rows)
