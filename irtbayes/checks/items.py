"""Item checks of a fitted bank: reversed (mis-keyed), flat and differentially functioning (leaked) items.

:func:`check_items` looks at every item of a fit for three faults:

- **reversed**: responses fall as ability rises (a mis-keyed item). The fitted model constrains discrimination
  above 0, so such an item shows there only as a flat, misplaced one; the check uses a slope of free sign.
- **flat**: no relation to ability (the item is answered at one rate, at chance or not, whatever the ability).
- **dif**: differential item functioning between groups of subjects (model family, organisation, release date):
  one group answers the item far above (a *leaked* item) or below what its ability predicts.

**Method.** The fit's posterior draws are thinned evenly to ``n_draws`` (60 by default). In each draw, every item's
observed responses are regressed on the drawn abilities of the subjects who answered it, standardised over the
subjects (so the slope is in logits per sd of ability; a multidimensional fit uses each item's own dimension):
``y ~ Bernoulli(sigmoid(c + a z))`` with priors ``c ~ N(0, 3^2)``, ``a ~ N(0, 2^2)`` and the slope ``a`` of either sign.
Fractional scores enter through the same terms (the fractional-logit quasi-likelihood of the fit itself), k
successes of n trials with weight n (binomial). The posterior mode is found by Newton steps vectorised over all
items at once and the Laplace approximation taken there; the draws' normal approximations are then mixed (an equal
mixture over draws), which carries the abilities' uncertainty into the slope. This gives ``P(a < 0)`` (reversed) and
``P(|a| < flat_slope)`` (flat, :data:`FLAT_SLOPE` = 0.3 logits per sd by default, a quarter of a typical
discrimination). For DIF, each item and group g gets the model's own predicted logit from the fit's draws of
ability, difficulty and discrimination (and guessing: :func:`irtbayes.core.irt.linear_predictor`,
:func:`~irtbayes.core.irt.sigmoid_mix`) plus an offset ``c0`` common to the item's respondents and an effect
``delta`` for the group's members, fitted the same way with ``c0 ~ N(0, 3^2)`` and ``delta ~ N(0, 1)``: ``delta`` is
the group's departure from the rest of the subjects on the item, whatever the fit's own difficulty made of the two
(a leak pulls the fitted difficulty down for everyone; a group-against-the-curve offset, as first suggested, would
then also flag the other groups, "below"). With two groups the two contrasts are one; the item is reported for the
group above.

**The DIF effects' prior is fitted to the bank** (an improvement on the fixed N(0, 1), ``dif_prior="normal"``):
most of a bank's (item, group) effects are nil, and under a wide fixed prior the chance fluctuations of a few of
thousands of cells pass for effects (on simulated banks a quarter of the N(0, 1) prior's DIF flags were false).
Each draw's Laplace posterior is turned back into a normal likelihood of ``delta`` (the prior's precision taken
off), and the prior becomes a mixture of normals around 0 with the scales :data:`EFFECT_SCALES` (0: a point
mass), its weights fitted by maximum marginal likelihood over every cell (EM, the point mass's weight raised by
:data:`NULL_WEIGHT` as ashr's ``nullweight``; Stephens 2017). A bank without DIF puts nearly all the weight on
the point mass and flags none. This gives ``P(delta > min_effect)`` (above) and ``P(delta < -min_effect)``
(below), :data:`MIN_EFFECT` = 0.5 logits by default, each an equal mixture over the draws of the posterior under
the fitted prior.

**Flags.** Each candidate gets a local false-flag probability: ``1 - P(a < 0)`` for reversed, ``1 -
P(|a| < flat_slope)`` for flat and ``1 - max(P(delta > m), P(delta < -m))`` for each (item, group) cell. Each kind
is flagged over all items (DIF over all (item, group) cells) by the Bayesian false discovery rate
(:func:`irtbayes.core.multiplicity.bayes_fdr_flags`): by default (``rule="each"``) every candidate whose own
probability is at most ``alpha`` (0.05), so the posterior expected share of false flags among the flagged is at
most ``alpha``; ``rule="mean"`` flags the largest set whose mean probability is at most ``alpha``, which flags more
and relies more on the priors. On simulated banks with planted faults (docs/validation.md, "Item flags on
simulated banks") the default rule flagged next to no sound item. An item flagged flat is not
also flagged reversed (a slope within ``flat_slope`` of 0 is flat, whatever its sign). An item flagged for several
kinds has them all in ``flags`` and the first of reversed, flat, dif as its ``flag`` (a reversed item shows DIF
against a curve that is not its own).

What the data can show depends on the number of subjects: with about 30 systems a slope is known to about
+-0.4 logits, so no item can be shown flat (``notes`` says so) and only strong reversals and leaks are flagged.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit, logsumexp, ndtr

from irtbayes.core import irt
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, SpecError, listed
from irtbayes.core.files import atomic_write_bytes, atomic_write_text, json_ready
from irtbayes.core.multiplicity import FDR_RULES, bayes_fdr_flags
from irtbayes.core.summaries import check_ci_prob, format_interval, records, spaced, summarize, summary_table
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.result import Fit

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FLAGS", "FLAT_SLOPE", "MIN_EFFECT", "ItemChecks", "check_items", "load_item_checks", "load_item_flags"]

#: The flags, in the order an item flagged for several takes its ``flag``.
FLAGS = ("reversed", "flat", "dif")
#: A slope below this in absolute value (logits per sd of ability) is flat.
FLAT_SLOPE = 0.3
#: The smallest DIF effect (logits) a flag reports.
MIN_EFFECT = 0.5
#: Prior sds: the regression's intercept and slope; DIF's common offset and group effect.
INTERCEPT_SD, SLOPE_SD, OFFSET_SD, EFFECT_SD = 3.0, 2.0, 3.0, 1.0
#: The scales of the DIF effects' prior mixture (0: a point mass at 0), whose weights are fitted to the bank, and
#: the extra weight of the point mass (ashr's ``nullweight``).
EFFECT_SCALES, NULL_WEIGHT = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0), 10.0
#: Newton steps at most per draw, their tolerance and the largest step (logits) taken at once.
NEWTON_STEPS, NEWTON_TOL, MAX_STEP = 50, 1e-6, 3.0
#: Samples per item drawn from the mixture of the draws' Laplace approximations for the intervals.
MIXTURE_SAMPLES = 2000
#: Panels of :meth:`ItemChecks.plot_flagged`, and lines of :meth:`ItemChecks.to_text`.
MAX_PANELS, MAX_LINES = 12, 50


@dataclass(frozen=True)
class ItemChecks:
    """Reversed, flat and DIF flags of every item of a fit (:func:`check_items`).

    Attributes
    ----------
    items
        One row per item, the flagged ones first in the order of :meth:`to_text`, then the others in the bank's
        order: ``item``, ``benchmark``, ``n_responses``, ``rank`` (1, 2, ... among the flagged; 0 otherwise),
        ``flag`` (``"reversed"``, ``"flat"``, ``"dif"`` or ``""``), ``flags`` (every flag, joined by ``;``),
        ``local_false_flag`` (the flag's local false-flag probability; NaN when unflagged), ``slope_mean``,
        ``slope_ci_low``, ``slope_ci_high`` (logits per sd of ability), ``p_reversed`` (P(slope < 0)), ``p_flat``
        (P(|slope| < flat_slope)), ``dif_group`` and ``dif_direction`` (the group with the strongest evidence of DIF
        and whether its members answer ``"above"`` or ``"below"`` the rest; ``""`` without groups),
        ``dif_effect_mean``, ``dif_effect_ci_low``, ``dif_effect_ci_high`` (that group's effect, logits),
        ``p_dif`` (P(effect beyond min_effect in that direction)) and ``text`` when the data have item text.
        ``attrs``: the settings below.
    curves
        For the flagged items shown by :meth:`plot_flagged`: ``item``, ``series`` (``"model"``, the fit's curve
        averaged over the draws; ``"observed"``; or ``"observed: <group>"`` and ``"observed: others"`` for a DIF
        item), ``ability``, ``value`` (probability or proportion correct) and ``n`` (responses in the bin).
    settings
        ``alpha``, ``rule``, ``flat_slope``, ``min_effect``, ``ci_prob``, ``n_draws``, ``n_subjects``, ``groups``
        (where the groups came from, or ``""``), ``n_groups``, ``approximate``, ``likelihood`` and ``priors``.
    notes
        Sentences that qualify the flags (an approximate or unconverged fit, too few subjects to show flatness).

    Examples
    --------
    >>> from irtbayes.checks.items import check_items
    >>> from irtbayes.data.simulate import planted_item_faults, posterior_near_truth
    >>> from irtbayes.fitting.result import Fit
    >>> data, truth, planted = planted_item_faults(300, 60, n_flat=0, seed=3)
    >>> fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=50, seed=4), data)
    >>> checks = check_items(fit, data, group_col="group", n_draws=20)
    >>> flagged = checks.items.loc[checks.items["flag"] != ""]
    >>> set(flagged["item"]) == set(planted.loc[planted["fault"] != "", "item"])
    True
    >>> checks.to_text().splitlines()[0]
    'Item checks of 60 items answered by 300 subjects (20 posterior draws): 5 reversed, 0 flat, 5 dif.'
    """

    items: pd.DataFrame
    curves: pd.DataFrame
    settings: dict[str, Any]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __repr__(self) -> str:
        return f"<ItemChecks of {len(self.items)} items: {self._counts_text()}>"

    @property
    def flagged(self) -> pd.DataFrame:
        """The flagged rows of :attr:`items`, ranked."""
        return self.items.loc[self.items["flag"] != ""].reset_index(drop=True)

    def item_flags(self) -> dict[str, str]:
        """Every item's ``flag`` (``""`` when unflagged), item id -> flag: what the audit's ``item_flags`` takes
        (:class:`irtbayes.auditing.settings.AuditSettings`)."""
        return dict(zip(self.items["item"].astype(str), self.items["flag"].astype(str), strict=True))

    def _counts_text(self) -> str:
        counts = self.items["flag"].value_counts()
        return ", ".join(f"{int(counts.get(flag, 0))} {flag}" for flag in FLAGS)

    def summary(self) -> pd.DataFrame:
        """:attr:`items` (``slope_ci_low``, ``dif_effect_ci_high``, ...); ``attrs`` kept, ``ci_prob`` among them."""
        return summary_table(self.items, self.settings["ci_prob"])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: the settings, the counts per flag, the notes and every item's row."""
        counts = self.items["flag"].value_counts()
        return json_ready(
            {
                "settings": dict(self.settings),
                "counts": {flag: int(counts.get(flag, 0)) for flag in FLAGS},
                "notes": list(self.notes),
                "items": records(self.items),
            }
        )

    def to_text(self) -> str:
        """The counts, the rule, the notes and the flagged items ranked, one line each with its statistic and
        probability (at most :data:`MAX_LINES`)."""
        s = self.settings
        lines = [
            f"Item checks of {len(self.items)} items answered by {s['n_subjects']} subjects "
            f"({s['n_draws']} posterior draws): {self._counts_text()}.",
            f"Flags: Bayesian FDR at most {s['alpha']:g} per flag kind (rule '{s['rule']}'); flat: |slope| < "
            f"{s['flat_slope']:g} logits per sd of ability; dif: an effect beyond {s['min_effect']:g} logits"
            + (f" between the groups of {s['groups']}." if s["groups"] else " (no groups given: not checked)."),
        ]
        lines += [f"Note: {note}" for note in self.notes]
        flagged = self.flagged
        lines += [f"{row['rank']:>3}. {_item_line(row, s)}" for _, row in flagged.head(MAX_LINES).iterrows()]
        if len(flagged) > MAX_LINES:
            lines.append(f"... and {len(flagged) - MAX_LINES} more flagged items (item_flags.csv)")
        return "\n".join(lines)

    def plot_flagged(self, *, top: int = MAX_PANELS) -> Figure:
        """Each of the ``top`` first flagged items (at most :data:`MAX_PANELS`): its observed proportion correct
        by bin of ability (marker area by responses; a DIF item's group apart from the others) against the fit's
        curve. Returns the Figure (one panel per item; one saying so when nothing is flagged)."""
        import matplotlib.pyplot as plt

        shown = self.flagged.head(max(1, min(top, MAX_PANELS)))
        n = max(len(shown), 1)
        cols = min(n, 4)
        rows = math.ceil(n / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.7 * rows), squeeze=False, layout="constrained")
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        if shown.empty:
            axes[0, 0].text(0.5, 0.5, "no flagged items", ha="center", va="center")
            axes[0, 0].set_axis_off()
            return fig
        for ax, (_, row) in zip(axes.flat, shown.iterrows(), strict=False):
            _draw_panel(ax, row, self.curves.loc[self.curves["item"] == row["item"]])
        fig.suptitle(f"Flagged items: observed proportion correct by ability against the fit's curve ({n} shown)")
        return fig

    def save(self, out: str | os.PathLike[str]) -> list[str]:
        """Write ``item_flags.csv`` (:attr:`items`), ``item_flags.txt`` (:meth:`to_text`) and ``item_flags.png``
        (:meth:`plot_flagged`) to the folder ``out`` (made if missing), each atomically; returns the names."""
        import matplotlib.pyplot as plt

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / "item_flags.csv", self.items.to_csv(index=False))
        atomic_write_text(folder / "item_flags.txt", self.to_text() + "\n")
        figure, png = self.plot_flagged(), io.BytesIO()
        figure.savefig(png, format="png", dpi=110)
        plt.close(figure)
        atomic_write_bytes(folder / "item_flags.png", png.getvalue())
        return ["item_flags.csv", "item_flags.txt", "item_flags.png"]

    write = deprecated_alias(save, "write")


def load_item_checks(path: str | os.PathLike[str]) -> pd.DataFrame:
    r"""The table an ``item_flags.csv`` holds (or the ``check-items`` folder holding it): :attr:`ItemChecks.items`.

    Raises
    ------
    DataError
        No such file, or no ``item`` or ``flag`` column (named with the file).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "item_flags.csv").write_text("item,flag,slope_mean\nq1,reversed,-1.2\nq2,,0.9\n")
    >>> load_item_checks(folder)["flag"].tolist()
    ['reversed', '']
    """
    file = Path(path)
    if file.is_dir():
        file = file / "item_flags.csv"
    if not file.is_file():
        raise DataError(f"{file}: no such file (the item_flags.csv `irtbayes check-items` writes)")
    labels = ("item", "flag", "flags", "benchmark", "dif_group", "dif_direction", "text")
    # only empty cells are missing (an item called "NA" stays one); the label columns keep "" for none
    table = pd.read_csv(file, dtype=dict.fromkeys(labels, str), keep_default_na=False, na_values=[""])
    missing = [c for c in ("item", "flag") if c not in table.columns]
    if missing:
        raise DataError(f"{file}: no column {missing} (columns: {list(table.columns)[:10]})")
    for column in (c for c in labels if c in table.columns):
        table[column] = table[column].fillna("")
    return table


def load_item_flags(path: str | os.PathLike[str]) -> dict[str, str]:
    """The flags of :func:`load_item_checks`, item id -> flag (``""`` when unflagged), as the audit's
    ``item_flags`` takes them."""
    table = load_item_checks(path)
    return dict(zip(table["item"], table["flag"], strict=True))


def _probability_text(p: float) -> str:
    return "> 0.999" if p > 0.9995 else f"{p:.3f}"


def _item_line(row: pd.Series, settings: Mapping[str, Any]) -> str:
    """One flagged item: where it is, the flag, its statistic and interval, its probability (and its text)."""
    where = f"{row['item']}" + (f" ({row['benchmark']})" if str(row.get("benchmark") or "") else "")
    slope = format_interval(row, "slope")
    if row["flag"] == "reversed":
        what = f"reversed: slope {slope}, P(slope < 0) {_probability_text(row['p_reversed'])}"
    elif row["flag"] == "flat":
        what = f"flat: slope {slope}, P(|slope| < {settings['flat_slope']:g}) {_probability_text(row['p_flat'])}"
    else:
        sign = ">" if row["dif_direction"] == "above" else "< -"
        what = (
            f"dif: group {row['dif_group']} {row['dif_direction']} the others by "
            f"{format_interval(row, 'dif_effect')} logits, P(effect {sign}{settings['min_effect']:g}) "
            f"{_probability_text(row['p_dif'])}"
        )
    others = [f for f in str(row["flags"]).split(";") if f and f != row["flag"]]
    text = str(row.get("text") or "").replace("\n", " ").strip()
    return (
        f"{where}: {what}"
        + (f" (also {', '.join(others)})" if others else "")
        + (f' "{text[:77] + "..." if len(text) > 80 else text}"' if text else "")
    )


def _draw_panel(ax: Any, row: pd.Series, curves: pd.DataFrame) -> None:
    model = curves.loc[curves["series"] == "model"]
    ax.plot(model["ability"], model["value"], color="0.3", lw=1.5, label="fit")
    observed = [s for s in curves["series"].unique() if s != "model"]
    for k, series in enumerate(observed):
        part = curves.loc[curves["series"] == series]
        size = 12 + 60 * part["n"] / max(float(curves["n"].max()), 1.0)
        label = series.removeprefix("observed: ") if series != "observed" else "observed"
        ax.scatter(
            part["ability"], part["value"], s=size, color=f"C{k + (1 if row['flag'] == 'dif' else 0)}", label=label
        )
    ax.set_ylim(-0.03, 1.03)
    name = str(row["item"])
    ax.set_title(f"{name if len(name) <= 26 else name[:25] + '…'}: {row['flag']}", fontsize=9)
    ax.set_xlabel("ability (posterior mean)", fontsize=8)
    ax.set_ylabel("proportion correct", fontsize=8)
    ax.tick_params(labelsize=7)
    if len(observed) > 1:
        ax.legend(fontsize=6, loc="best")


# ---------------------------------------------------------------------------------------------- the check
def check_items(
    fit: Fit,
    data: ResponseData,
    *,
    group_col: str | None = None,
    groups: Mapping[str, str] | str | os.PathLike[str] | None = None,
    alpha: float = 0.05,
    rule: str = "each",
    n_draws: int = 60,
    flat_slope: float = FLAT_SLOPE,
    min_effect: float = MIN_EFFECT,
    dif_prior: str = "empirical",
    ci_prob: float = 0.9,
    seed: int | None = 0,
) -> ItemChecks:
    """Flag the reversed, flat and differentially functioning items of a fit (the module says how).

    Parameters
    ----------
    fit
        A binary (1PL, 2PL, 3PL) fit; graded fits are refused.
    data
        The data it was fitted to (checked by checksum).
    group_col
        A subject column of ``data`` (``data.subjects``) naming each subject's group, for the DIF check.
    groups
        Instead of ``group_col``: a mapping subject -> group, or a CSV file with columns ``subject`` and
        ``group``. Subjects without a group count among "the others" of every group.
    alpha
        Bound on the Bayesian false discovery rate of each flag kind.
    rule
        ``"each"`` or ``"mean"`` (:func:`irtbayes.core.multiplicity.bayes_fdr_flags`).
    n_draws
        Posterior draws used, thinned evenly over the chains.
    flat_slope
        |slope| (logits per sd of ability) below which an item is flat.
    min_effect
        The smallest DIF effect (logits) that counts.
    dif_prior
        ``"empirical"`` (default): the DIF effects' prior is a mixture of normals around 0 fitted to the bank's
        (item, group) cells; ``"normal"``: the fixed N(0, 1).
    ci_prob
        Probability of the intervals.
    seed
        Seed of the samples from which the intervals are read.

    Returns
    -------
    ItemChecks
        ``items`` (one row per item), ``curves``, ``settings``, ``notes``.

    Raises
    ------
    FitError
        ``data`` is not the data of the fit.
    SpecError
        A graded fit, or a setting out of range.
    DataError
        ``group_col`` is not a subject column, or the ``groups`` file lacks its columns or gives fewer than two
        groups (the message names the file or column).
    """
    fit.check_data(data, where="check_items")
    fit.require_binary_model("check_items")
    fit.refuse_if_unsettled("check_items")
    _check_settings(alpha=alpha, rule=rule, n_draws=n_draws, flat_slope=flat_slope, min_effect=min_effect)
    check_ci_prob(ci_prob)
    if dif_prior not in ("empirical", "normal"):
        raise SpecError(f"check_items: dif_prior must be 'empirical' or 'normal', got {dif_prior!r}")
    membership, group_names, group_source = _group_codes(data, group_col=group_col, groups=groups)
    drawn = _Drawn.of(fit, data, n_draws)
    slope_fits, dif_fits, converged = _laplace_passes(drawn, data, membership, len(group_names))
    rng = np.random.default_rng(seed)
    table = _slope_columns(slope_fits, flat_slope=flat_slope, ci_prob=ci_prob, rng=rng)
    dif, cells = _dif_columns(
        dif_fits,
        group_names,
        min_effect=min_effect,
        ci_prob=ci_prob,
        rng=rng,
        n_items=data.n_items,
        empirical=dif_prior == "empirical",
    )
    table = _item_table(data, pd.concat([table, dif], axis=1), cells, alpha=alpha, rule=rule)
    curves = _curves(drawn, data, table.loc[table["flag"] != ""].head(MAX_PANELS), membership, group_names)
    settings = {
        **dict(alpha=alpha, rule=rule, flat_slope=flat_slope, min_effect=min_effect, ci_prob=ci_prob),
        **dict(n_draws=drawn.n_draws, n_subjects=data.n_subjects, groups=group_source, n_groups=len(group_names)),
        "approximate": fit.approximate,
        "likelihood": {"binary": "bernoulli", "counts": "binomial"}.get(
            data.response_kind, "fractional-logit quasi-likelihood"
        ),
        "priors": {"intercept_sd": INTERCEPT_SD, "slope_sd": SLOPE_SD, "offset_sd": OFFSET_SD},
        "dif_prior": dif_prior,
        "dif_prior_weights": dif.attrs.get("dif_prior", {}),
    }
    table.attrs.update(settings)
    notes = _notes(fit, data, slope_fits, settings, converged=converged, membership=membership)
    return ItemChecks(items=table, curves=curves, settings=settings, notes=tuple(notes))


def _check_settings(*, alpha: float, rule: str, n_draws: int, flat_slope: float, min_effect: float) -> None:
    if rule not in FDR_RULES or not 0 < alpha < 1:
        raise SpecError(
            f"check_items: alpha must be in (0, 1) and rule one of {list(FDR_RULES)}, got {alpha}, {rule!r}"
        )
    if n_draws < 1 or flat_slope <= 0 or min_effect < 0:
        raise SpecError(
            f"check_items: n_draws must be >= 1, flat_slope > 0 and min_effect >= 0, got {n_draws}, {flat_slope}, "
            f"{min_effect}"
        )


def _notes(
    fit: Fit,
    data: ResponseData,
    slope_fits: tuple[np.ndarray, np.ndarray],
    settings: Mapping[str, Any],
    *,
    converged: bool,
    membership: np.ndarray,
) -> list[str]:
    """The sentences that qualify the flags."""
    notes = []
    if fit.approximate:
        notes.append(f"the fit is approximate ({fit.sampler.get('name')}): its abilities' spread is approximate too")
    elif fit.partial or not fit.diagnostics.ok:
        notes.append("the fit did not pass its convergence checks: the abilities behind the flags may be off")
    if "dim" in fit.posterior["ability"].dims:
        notes.append("multidimensional fit: each item is checked against the ability of its own dimension")
    if data.response_kind == "fraction":
        notes.append("fractional scores: the regressions use the fractional-logit quasi-likelihood")
    sd = float(np.nanmedian(np.sqrt(np.mean(slope_fits[1] ** 2, axis=0))))
    best = 2 * float(ndtr(settings["flat_slope"] / sd)) - 1
    if best < 1 - settings["alpha"]:
        notes.append(
            f"with {data.n_subjects} subjects an item's slope is known to about +-{sd:.2f} (median sd), so even a "
            f"slope of exactly 0 has P(|slope| < {settings['flat_slope']:g}) of only {best:.2f}: no item can be "
            "shown flat"
        )
    if settings["n_groups"] and (membership < 0).any():
        notes.append(f"{int((membership < 0).sum())} subjects have no group and count among the others of every group")
    if not converged:
        notes.append("the Newton steps of some regressions did not settle to 1e-6; their probabilities are approximate")
    return notes


# ---------------------------------------------------------------------------------------------- groups
def _group_codes(
    data: ResponseData, *, group_col: str | None, groups: Mapping[str, str] | str | os.PathLike[str] | None
) -> tuple[np.ndarray, list[str], str]:
    """Each subject's group code (-1: none), the group names and where they came from (``""`` when none given)."""
    if group_col is not None and groups is not None:
        raise SpecError("check_items: give group_col or groups, not both")
    if group_col is None and groups is None:
        return np.full(data.n_subjects, -1), [], ""
    if group_col is not None:
        if group_col not in data.subjects.columns:
            raise DataError(
                f"{data.source}: no subject column {group_col!r} to group the subjects by; the subject columns are "
                f"{listed(list(data.subjects.columns)) or 'none'}"
            )
        labels = data.subjects[group_col].reindex(data.subject_ids)
        source = f"column {group_col!r}"
    elif isinstance(groups, Mapping):
        labels = pd.Series(dict(groups), dtype=object).reindex(data.subject_ids)
        source = "the mapping given"
    else:
        labels = _read_groups_file(Path(groups), data)  # type: ignore[arg-type]
        source = str(groups)
    labels = labels.astype(object).where(labels.notna() & (labels.astype(str).str.strip() != ""))
    names = sorted({str(v) for v in labels.dropna()})
    if len(names) < 2:
        raise DataError(f"{source}: DIF needs at least two groups among the fit's subjects, found {len(names)}")
    codes = labels.map(lambda v: names.index(str(v)) if isinstance(v, str) or pd.notna(v) else -1)
    return codes.to_numpy(dtype=np.int64), names, source


def _read_groups_file(path: Path, data: ResponseData) -> pd.Series:
    """The ``group`` of each of the data's subjects from a CSV ``subject,group`` (NaN for subjects not in it)."""
    if not path.is_file():
        raise DataError(f"{path}: no such groups file (a CSV with columns subject, group)")
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    if not {"subject", "group"} <= set(table.columns):
        raise DataError(
            f"{path}: a groups file needs the columns 'subject' and 'group'; found {listed(list(table.columns))}"
        )
    table = table.drop_duplicates(["subject", "group"])
    twice = table["subject"][table["subject"].duplicated()]
    if len(twice):
        raise DataError(f"{path}: subject(s) {listed(sorted(set(twice)), 5)} are given more than one group")
    labels = table.set_index("subject")["group"].reindex(data.subject_ids)
    if labels.isna().all():
        raise DataError(
            f"{path}: none of its subjects is a subject of the fit (e.g. {listed(list(data.subject_ids), 3)})"
        )
    return labels


# ---------------------------------------------------------------------------------------------- draws
@dataclass(frozen=True)
class _Drawn:
    """The thinned draws the regressions need, per response row: abilities, item parameters (draw, ...)."""

    ability: np.ndarray  # (draw, subject[, dim])
    difficulty: np.ndarray  # (draw, item)
    discrimination: np.ndarray | None  # (draw, item)
    guessing: np.ndarray | None  # (draw, item)
    item_dim: np.ndarray | None  # (item,) the dimension of each item

    @property
    def n_draws(self) -> int:
        return int(self.ability.shape[0])

    @classmethod
    def of(cls, fit: Fit, data: ResponseData, n_draws: int) -> _Drawn:
        post = fit.posterior
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        flat = spaced(n_chain * n_draw, n_draws)
        chain, draw = np.unravel_index(flat, (n_chain, n_draw))

        def take(name: str, *rest: str) -> np.ndarray | None:
            if name not in post:
                return None
            var = post[name].isel(chain=xr.DataArray(chain, dims="sample"), draw=xr.DataArray(draw, dims="sample"))
            return np.asarray(var.transpose("sample", *rest).values, dtype="float64")

        ability = post["ability"]
        item_dim = None
        if "dim" in ability.dims:
            dims = list(ability["dim"].values.astype(str))
            domains = fit.constant_data["item_domain"].values.astype(str)
            item_dim = np.array([dims.index(d) if d in dims else 0 for d in domains])
            theta = take("ability", "subject", "dim")
        else:
            theta = take("ability", "subject")
        assert theta is not None
        difficulty = take("difficulty", "item")
        assert difficulty is not None
        return cls(theta, difficulty, take("discrimination", "item"), take("guessing", "item"), item_dim)

    def rows(self, data: ResponseData) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]:
        """Per draw: the standardised ability, the ability, the fit's linear predictor and guessing of every row."""
        s, i = data.subject_codes, data.item_codes
        for d in range(self.n_draws):
            theta = self.ability[d]
            z = (theta - theta.mean(axis=0)) / np.maximum(theta.std(axis=0), 1e-12)
            if self.item_dim is None:
                theta_r, z_r = theta[s], z[s]
            else:
                theta_r, z_r = theta[s, self.item_dim[i]], z[s, self.item_dim[i]]
            a = None if self.discrimination is None else self.discrimination[d][i]
            eta = irt.linear_predictor(theta_r, self.difficulty[d][i], a)
            yield z_r, theta_r, eta, None if self.guessing is None else self.guessing[d][i]


# ---------------------------------------------------------------------------------------------- regressions
def _laplace(
    y: np.ndarray,
    x: np.ndarray,
    key: np.ndarray,
    start: np.ndarray,
    *,
    offset: np.ndarray | None,
    guessing: np.ndarray | None,
    prior_sd: tuple[float, float],
    trials: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Posterior modes of ``(c, b)`` per key, with the Laplace sd of ``b``, for responses
    ``y ~ g + (1 - g) sigmoid(offset + c + b x)`` and priors ``c ~ N(0, sd0^2)``, ``b ~ N(0, sd1^2)``; with
    ``trials`` n, ``y`` is the share of successes of n trials (binomial: each response's score and weight times n).

    Fisher scoring (Newton's method for the logistic case), vectorised over the keys (``start``: (key, 2)).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=4000)
    >>> y = (rng.uniform(size=4000) < 1 / (1 + np.exp(-(0.5 - 1.5 * x)))).astype(float)
    >>> mode, sd, ok = _laplace(y, x, np.zeros(4000, dtype=int), np.zeros((1, 2)), offset=None, guessing=None, prior_sd=(3, 2))
    >>> mode.round(1).tolist(), bool(sd[0] < 0.1), ok
    ([[0.5, -1.5]], True, True)
    """
    n_keys = len(start)
    inv0, inv1 = prior_sd[0] ** -2.0, prior_sd[1] ** -2.0
    mode = start.copy()
    with np.errstate(divide="ignore"):
        log_g = None if guessing is None else np.log(guessing)
    converged = False
    for _ in range(NEWTON_STEPS):
        eta = mode[key, 0] + mode[key, 1] * x + (0.0 if offset is None else offset)
        s = expit(eta)
        if guessing is None:
            resid, w = y - s, s * (1.0 - s)
        else:
            r = expit(eta - log_g)  # s / p: the 3PL's score weight
            resid, w = r * (y - (guessing + (1.0 - guessing) * s)), r * (1.0 - guessing) * s * (1.0 - s)
        if trials is not None:
            resid, w = trials * resid, trials * w
        wx = w * x
        g0 = np.bincount(key, weights=resid, minlength=n_keys) - mode[:, 0] * inv0
        g1 = np.bincount(key, weights=resid * x, minlength=n_keys) - mode[:, 1] * inv1
        h00 = np.bincount(key, weights=w, minlength=n_keys) + inv0
        h01 = np.bincount(key, weights=wx, minlength=n_keys)
        h11 = np.bincount(key, weights=wx * x, minlength=n_keys) + inv1
        det = h00 * h11 - h01**2
        step = np.stack([(h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det], axis=1)
        step = np.clip(step, -MAX_STEP, MAX_STEP)
        mode += step
        if float(np.abs(step).max(initial=0.0)) < NEWTON_TOL:
            converged = True
            break
    return mode, np.sqrt(h00 / det), converged


def _laplace_passes(
    drawn: _Drawn, data: ResponseData, membership: np.ndarray, n_groups: int
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], bool]:
    """Per draw, the slope regressions of every item and the DIF contrasts of every (item, group): the modes and
    Laplace sds of the slope (draw, item) and of the group effect (draw, item, group)."""
    y, i, s = data.values, data.item_codes, data.subject_codes
    n = data.trials if data.has_trials else None
    n_items, n_draws = data.n_items, drawn.n_draws
    slope_m, slope_s = np.empty((n_draws, n_items)), np.empty((n_draws, n_items))
    dif_m, dif_s = np.zeros((n_draws, n_items, n_groups)), np.ones((n_draws, n_items, n_groups))
    start = np.zeros((n_items, 2))
    dif_start = np.zeros((n_groups, n_items, 2))
    member = [(membership[s] == g).astype("float64") for g in range(n_groups)]
    converged = True
    for d, (z, _, eta, guessing) in enumerate(drawn.rows(data)):
        start, slope_s[d], ok = _laplace(
            y, z, i, start, offset=None, guessing=None, prior_sd=(INTERCEPT_SD, SLOPE_SD), trials=n
        )
        slope_m[d] = start[:, 1]
        converged &= ok
        for g in range(n_groups):
            prior = (OFFSET_SD, EFFECT_SD)
            dif_start[g], dif_s[d, :, g], ok = _laplace(
                y, member[g], i, dif_start[g], offset=eta, guessing=guessing, prior_sd=prior, trials=n
            )
            dif_m[d, :, g] = dif_start[g][:, 1]
            converged &= ok
    return (slope_m, slope_s), (dif_m, dif_s), converged


def _mixture_interval(
    mean: np.ndarray, sd: np.ndarray, *, ci_prob: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Mean and equal-tailed interval of the equal mixture over draws of N(mean, sd^2) (draw, key): the mean
    exactly, the interval from :data:`MIXTURE_SAMPLES` samples per key (:func:`irtbayes.core.summaries.summarize`)."""
    n_draws, n_keys = mean.shape
    per = max(1, math.ceil(MIXTURE_SAMPLES / n_draws))
    out = {"mean": mean.mean(axis=0), "ci_low": np.empty(n_keys), "ci_high": np.empty(n_keys)}
    step = max(1, 4_000_000 // (per * n_draws))
    for lo in range(0, n_keys, step):
        cols = slice(lo, min(lo + step, n_keys))
        samples = mean[None, :, cols] + sd[None, :, cols] * rng.standard_normal((per, n_draws, cols.stop - lo))
        stats = summarize(samples.reshape(per * n_draws, -1), ci_prob=ci_prob)
        out["ci_low"][cols], out["ci_high"][cols] = stats["ci_low"], stats["ci_high"]
    return out


def _slope_columns(
    fits: tuple[np.ndarray, np.ndarray], *, flat_slope: float, ci_prob: float, rng: np.random.Generator
) -> pd.DataFrame:
    """The slope's mean and interval, P(slope < 0) and P(|slope| < flat_slope) of every item."""
    m, s = fits
    stats = _mixture_interval(m, s, ci_prob=ci_prob, rng=rng)
    return pd.DataFrame(
        {
            "slope_mean": stats["mean"],
            "slope_ci_low": stats["ci_low"],
            "slope_ci_high": stats["ci_high"],
            "p_reversed": ndtr(-m / s).mean(axis=0),
            "p_flat": (ndtr((flat_slope - m) / s) - ndtr((-flat_slope - m) / s)).mean(axis=0),
        }
    )


def _dif_columns(
    fits: tuple[np.ndarray, np.ndarray],
    names: list[str],
    *,
    min_effect: float,
    ci_prob: float,
    rng: np.random.Generator,
    n_items: int,
    empirical: bool = True,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Per item, the group with the strongest evidence of DIF (its name, direction, effect and probability), and
    the local false-flag probability of every (item, group) cell, for the multiplicity rule."""
    if not names:
        return pd.DataFrame(
            {
                "dif_group": [""] * n_items,
                "dif_direction": [""] * n_items,
                **{c: np.full(n_items, np.nan) for c in ("dif_effect_mean", "dif_effect_ci_low", "dif_effect_ci_high")},
                "p_dif": np.full(n_items, np.nan),
            }
        ), np.empty((n_items, 0))
    est, se2 = _effect_likelihoods(*fits)  # (draw, item, group)
    weights = _effect_prior(est, se2) if empirical else np.eye(len(EFFECT_SCALES))[list(EFFECT_SCALES).index(EFFECT_SD)]
    above, below = np.empty(est.shape[1:]), np.empty(est.shape[1:])
    for cols in _chunks(est.shape[1], est.shape[0] * est.shape[2]):
        w, mu, var = _effect_posterior(est[:, cols], se2[:, cols], weights)
        sd = np.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            up = np.where(sd > 0, ndtr((mu - min_effect) / sd), mu > min_effect)
            down = np.where(sd > 0, ndtr((-min_effect - mu) / sd), mu < -min_effect)
        above[cols], below[cols] = (w * up).sum(-1).mean(0), (w * down).sum(-1).mean(0)
    p = np.maximum(above, below)
    # the strongest evidence first; at a tie (two groups are one contrast) the group above
    best = np.argmax(np.round(p, 4) + 1e-6 * (above >= below), axis=1)
    rows = np.arange(n_items)
    stats = _effect_interval(est[:, rows, best], se2[:, rows, best], weights, ci_prob=ci_prob, rng=rng)
    table = pd.DataFrame(
        {
            "dif_group": np.asarray(names, dtype=object)[best],
            "dif_direction": np.where(above[rows, best] >= below[rows, best], "above", "below"),
            "dif_effect_mean": stats["mean"],
            "dif_effect_ci_low": stats["ci_low"],
            "dif_effect_ci_high": stats["ci_high"],
            "p_dif": p[rows, best],
        }
    )
    table.attrs["dif_prior"] = dict(zip(EFFECT_SCALES, weights.round(6).tolist(), strict=True))
    return table, 1.0 - p


def _chunks(n: int, per: int, budget: int = 2_000_000) -> Iterator[slice]:
    """Slices of ``range(n)`` whose ``per`` x ``len(EFFECT_SCALES)`` values stay near ``budget``."""
    step = max(1, budget // max(per * len(EFFECT_SCALES), 1))
    for lo in range(0, n, step):
        yield slice(lo, min(lo + step, n))


def _effect_likelihoods(mode: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normal approximation N(est, se2) of each DIF effect's likelihood, from its Laplace posterior
    N(mode, sd^2) under the prior N(0, EFFECT_SD^2): precisions subtract, the estimate scales back."""
    precision = np.maximum(sd**-2.0 - EFFECT_SD**-2.0, 1e-8)
    return mode / (sd**2 * precision), 1.0 / precision


def _effect_prior(est: np.ndarray, se2: np.ndarray, *, steps: int = 500) -> np.ndarray:
    """The weights of the prior mixture sum_k pi_k N(0, EFFECT_SCALES[k]^2) of the DIF effects, by maximum
    marginal likelihood over every (item, group) cell (EM; the null component's weight is penalised towards
    1 by :data:`NULL_WEIGHT`, as ashr does, so that a bank without DIF gets the point mass)."""
    scales2 = np.asarray(EFFECT_SCALES) ** 2
    n_cells = est.shape[1] * est.shape[2]
    log_f = np.empty((n_cells, len(scales2)))
    flat_est, flat_se2 = est.reshape(est.shape[0], -1), se2.reshape(se2.shape[0], -1)
    for cols in _chunks(n_cells, est.shape[0]):
        var = flat_se2[:, cols, None] + scales2
        log_pdf = -0.5 * (np.log(2 * np.pi * var) + flat_est[:, cols, None] ** 2 / var)
        log_f[cols] = logsumexp(log_pdf, axis=0) - np.log(est.shape[0])  # the likelihood averaged over the draws
    f = np.exp(log_f - log_f.max(axis=1, keepdims=True))
    extra = np.zeros(len(scales2))
    extra[0] = NULL_WEIGHT - 1.0
    weights = np.full(len(scales2), 1.0 / len(scales2))
    for _ in range(steps):
        r = weights * f
        r /= r.sum(axis=1, keepdims=True)
        new = (r.sum(axis=0) + extra) / (n_cells + extra.sum())
        if np.abs(new - weights).max() < 1e-8:
            return new
        weights = new
    return weights


def _effect_posterior(
    est: np.ndarray, se2: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per draw and cell, the posterior of a DIF effect under the prior mixture: component weights, means and
    variances (..., component); a component of scale 0 is the point mass at 0."""
    scales2 = np.asarray(EFFECT_SCALES) ** 2
    var = se2[..., None] + scales2
    with np.errstate(divide="ignore"):
        log_w = np.log(weights) - 0.5 * (np.log(var) + est[..., None] ** 2 / var)
    w = np.exp(log_w - log_w.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    shrink = scales2 / var
    return w, shrink * est[..., None], shrink * se2[..., None]


def _effect_interval(
    est: np.ndarray, se2: np.ndarray, weights: np.ndarray, *, ci_prob: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Mean (exact) and equal-tailed interval (from :data:`MIXTURE_SAMPLES` samples) of each cell's DIF effect,
    its posterior the equal mixture over draws of :func:`_effect_posterior` (draw, cell)."""
    n_draws, n_cells = est.shape
    per = max(1, math.ceil(MIXTURE_SAMPLES / n_draws))
    out = {"mean": np.empty(n_cells), "ci_low": np.empty(n_cells), "ci_high": np.empty(n_cells)}
    for cols in _chunks(n_cells, per * n_draws):
        w, mu, var = _effect_posterior(est[:, cols], se2[:, cols], weights)
        out["mean"][cols] = (w * mu).sum(-1).mean(0)
        u = rng.uniform(size=(per, *w.shape[:-1], 1))
        k = np.minimum((np.cumsum(w, axis=-1)[None] < u).sum(-1), len(EFFECT_SCALES) - 1)[..., None]
        pick = np.take_along_axis(np.broadcast_to(mu, (per, *mu.shape)), k, -1)[..., 0]
        spread = np.sqrt(np.take_along_axis(np.broadcast_to(var, (per, *var.shape)), k, -1)[..., 0])
        samples = pick + spread * rng.standard_normal(pick.shape)
        stats = summarize(samples.reshape(per * n_draws, -1), ci_prob=ci_prob)
        out["ci_low"][cols], out["ci_high"][cols] = stats["ci_low"], stats["ci_high"]
    return out


def _item_table(data: ResponseData, stats: pd.DataFrame, cells: np.ndarray, *, alpha: float, rule: str) -> pd.DataFrame:
    """The :attr:`ItemChecks.items` table: the flags by the multiplicity rule, ranked, with the items' labels."""
    local = {
        "reversed": 1.0 - stats["p_reversed"].to_numpy(),
        "flat": 1.0 - stats["p_flat"].to_numpy(),
        "dif": cells.min(axis=1) if cells.size else np.full(len(stats), np.nan),
    }
    flagged = {
        "reversed": bayes_fdr_flags(local["reversed"], fdr=alpha, rule=rule),
        "flat": bayes_fdr_flags(local["flat"], fdr=alpha, rule=rule),
        "dif": bayes_fdr_flags(cells, fdr=alpha, rule=rule).any(axis=1) if cells.size else np.zeros(len(stats), bool),
    }
    flagged["reversed"] &= ~flagged["flat"]  # a slope within +-flat_slope of 0 is flat, whatever its sign
    flags = [";".join(f for f in FLAGS if flagged[f][k]) for k in range(len(stats))]
    primary = np.array([f.split(";")[0] for f in flags], dtype=object)
    v = np.full(len(stats), np.nan)
    strength = np.zeros(len(stats))
    for k, flag in enumerate(FLAGS):
        here = primary == flag
        v[here] = local[flag][here]
        size = {
            "reversed": -stats["slope_mean"],
            "flat": -stats["slope_mean"].abs(),
            "dif": stats["dif_effect_mean"].abs(),
        }
        strength[here] = size[flag].to_numpy()[here] - 10.0 * k  # at equal evidence: reversed, flat, dif
    items = pd.DataFrame(
        {
            "item": data.item_ids.to_numpy(dtype=str),
            "benchmark": data.items["benchmark"].astype(object).fillna("").to_numpy(),
            "n_responses": np.bincount(data.item_codes, minlength=data.n_items),
            "rank": 0,
            "flag": np.where(primary == "", "", primary).astype(str),
            "flags": flags,
            "local_false_flag": v,
        }
    )
    items = pd.concat([items, stats.reset_index(drop=True)], axis=1)
    if "text" in data.items.columns:
        items["text"] = data.items["text"].astype(object).fillna("").to_numpy()
    order = np.lexsort((-strength, np.round(np.nan_to_num(v, nan=2.0), 3), items["flag"].to_numpy() == ""))
    items = items.iloc[order].reset_index(drop=True)
    n_flagged = int((items["flag"] != "").sum())
    items.loc[: n_flagged - 1, "rank"] = np.arange(1, n_flagged + 1)
    return items


def _curves(
    drawn: _Drawn, data: ResponseData, shown: pd.DataFrame, membership: np.ndarray, names: list[str]
) -> pd.DataFrame:
    """For each item of ``shown``: the fit's curve (mean over the draws) and the observed proportion correct by
    bin of posterior-mean ability (for a DIF item, its group's and the others' apart)."""
    columns = ["item", "series", "ability", "value", "n"]
    if shown.empty:
        return pd.DataFrame(columns=columns)
    mean_ability = drawn.ability.mean(axis=0)  # (subject[, dim])
    n_bins = int(np.clip(data.n_subjects // 5, 3, 8))
    s, i, y = data.subject_codes, data.item_codes, data.values
    parts = []
    for _, row in shown.iterrows():
        code = data.item_ids.get_loc(row["item"])
        ability = mean_ability if drawn.item_dim is None else mean_ability[:, drawn.item_dim[code]]
        grid = np.linspace(ability.min() - 0.25, ability.max() + 0.25, 41)
        disc = None if drawn.discrimination is None else drawn.discrimination[:, code]
        guess = None if drawn.guessing is None else drawn.guessing[:, code]
        p = irt.probability(grid[:, None], drawn.difficulty[:, code], disc, guess).mean(axis=1)
        parts.append(pd.DataFrame({"item": row["item"], "series": "model", "ability": grid, "value": p, "n": 0}))
        rows = i == code
        edges = np.quantile(ability, np.linspace(0, 1, n_bins + 1))
        bins = np.clip(np.searchsorted(edges, ability[s[rows]], side="right") - 1, 0, n_bins - 1)
        split = {"observed": np.ones(int(rows.sum()), dtype=bool)}
        if row["flag"] == "dif" and names:
            member = membership[s[rows]] == names.index(row["dif_group"])
            split = {f"observed: {row['dif_group']}": member, "observed: others": ~member}
        for series, keep in split.items():
            n = np.bincount(bins[keep], minlength=n_bins)
            with np.errstate(invalid="ignore", divide="ignore"):
                value = np.bincount(bins[keep], weights=y[rows][keep], minlength=n_bins) / n
                where = np.bincount(bins[keep], weights=ability[s[rows]][keep], minlength=n_bins) / n
            part = pd.DataFrame({"item": row["item"], "series": series, "ability": where, "value": value, "n": n})
            parts.append(part.loc[n > 0])
    return pd.concat(parts, ignore_index=True)[columns]


# ============================================================================================ old names
read_item_checks = deprecated_alias(load_item_checks, "read_item_checks")
read_item_flags = deprecated_alias(load_item_flags, "read_item_flags")
