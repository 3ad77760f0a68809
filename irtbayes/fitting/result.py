"""The result of a fit: :class:`Fit` (posterior DataTree, spec, sampler settings, data checksum, diagnostics).

A :class:`Fit` holds the posterior as an :class:`xarray.DataTree` (groups ``posterior``, ``sample_stats``
for MCMC, and ``constant_data`` with per-item and per-subject counts from the data), the resolved
:class:`~irtbayes.model.spec.ModelSpec`, the sampler settings, the data checksum and the convergence
:class:`~irtbayes.fitting.diagnostics.verdict.Diagnostics`. :func:`irtbayes.fitting.fit.fit` makes one; :mod:`irtbayes.fitting.storage`
saves and loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import FitError, SpecError, describe_interrupt
from irtbayes.core.files import json_ready
from irtbayes.core.plots import forest_rows
from irtbayes.core.summaries import draws_frame, posterior_summary, summarize
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.diagnostics.verdict import Diagnostics
from irtbayes.model.spec import ModelSpec

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.data.responses import ResponseData

__all__ = [
    "DRAWS_DTYPE",
    "FORMAT_VERSION",
    "ITEM_PARAMETERS",
    "Fit",
    "as_held",
    "check_prob",
    "data_info",
    "derived_names",
    "draws_table",
    "held_dtype",
]

#: Version of the saved-fit folder layout; :func:`load_fit` refuses other versions.
FORMAT_VERSION = 1
ITEM_PARAMETERS = ("difficulty", "discrimination", "intercept", "guessing", "location", "threshold")
_PACKAGES = ("irtbayes", "pymc", "pytensor", "nutpie", "arviz", "arviz-stats", "numpy", "pandas", "xarray", "h5netcdf")


def software_versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def installed_version() -> str:
    """irtbayes' version as installed (the one in pyproject.toml), recorded in every saved fit."""
    try:
        return metadata.version("irtbayes")
    except metadata.PackageNotFoundError:
        return "0+unknown"


#: Held while :meth:`Fit.items_table` summarises: two threads asking at once (``irtbayes audit`` saves the fit
#: while it writes the report) get one table, made once.
_ITEM_TABLES_LOCK = threading.Lock()


@dataclass(eq=False)
class Fit:
    """A fitted IRT model.

    Attributes
    ----------
    idata
        ``posterior`` (chain, draw, ...): ``ability`` (subject[, dim]), ``difficulty``, ``discrimination``,
        ``intercept``, ``guessing`` (item) and hyperparameters; ``sample_stats`` for MCMC fits;
        ``constant_data``: ``item_benchmark``, ``item_domain``, ``item_n_responses``, ``item_mean_response``,
        ``item_rest_corr`` (item) and ``subject_n_responses``, ``subject_mean_response`` (subject).
    spec
        The resolved model spec (no ``"auto"`` left).
    sampler
        Sampler settings: ``name``, ``chains``, ``draws``, ``tune``, ``seed``, ``approximate``,
        ``wall_time_s`` and sampler-specific options.
    data_checksum
        :meth:`ResponseData.checksum` of the data it was fitted to.
    diagnostics
        Convergence checks.
    info
        Data source, sizes, creation time, package versions; for a partial fit (an interrupted run kept with
        ``keep_partial=True``) also ``partial`` (True) and ``interrupted`` (``phase``, ``draws_done``,
        ``draws_requested``, ``chains_done``, ``chains_requested``).

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30)
    >>> fit.spec.kind, fit.approximate, fit.partial, len(fit.item_ids), len(fit.subject_ids)
    ('2pl', False, False, 30, 20)
    >>> fit.data_checksum == data.checksum(), fit.card()["n_responses"] == data.n_responses
    (True, True)
    >>> other, _ = simulate_responses(20, 30, seed=2)
    >>> fit.check_data(other)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.FitError: ...: these are not the data the fit was made from (checksum ..., the fit's ...)
    """

    idata: xr.DataTree
    spec: ModelSpec
    sampler: dict[str, Any]
    data_checksum: str
    diagnostics: Diagnostics
    info: dict[str, Any] = field(default_factory=dict)
    #: :meth:`items_table` by ``ci_prob``, once made: its summaries sort every item's draws (seconds at leaderboard
    #: sizes), and the saved fit's ``items.csv`` and the report's table are the same table
    _item_tables: dict[float, pd.DataFrame] = field(default_factory=dict, init=False, repr=False)

    def __repr__(self) -> str:
        """One line: the model, the data's size, the sampler and the verdict of the checks.

        >>> from irtbayes.examples import simulated_fit
        >>> simulated_fit(20, 30)[0]  # doctest: +ELLIPSIS
        <Fit 2PL of 20 subjects x 30 items (...), external 2 x 100 draws: checks FAILED>
        """
        post = self.idata["posterior"]
        n_subjects, n_items = post.sizes.get("subject", 0), post.sizes.get("item", 0)
        verdict = (
            "APPROXIMATE"
            if self.approximate
            else ("PARTIAL" if self.partial else ("checks passed" if self.diagnostics.ok else "checks FAILED"))
        )
        source = self.info.get("source") or "data"
        return (
            f"<Fit {self.spec.kind.upper()} of {n_subjects} subjects x {n_items} items ({source}), "
            f"{self.sampler.get('name', '?')} {post.sizes.get('chain', 0)} x {post.sizes.get('draw', 0)} draws: {verdict}>"
        )

    @property
    def approximate(self) -> bool:
        """True for variational / Pathfinder fits (labelled approximate in the card and every table)."""
        return bool(self.sampler.get("approximate", False))

    @property
    def partial(self) -> bool:
        """True for the draws of an interrupted run (see ``keep_partial`` in :func:`fit`): never converged."""
        return bool(self.info.get("partial", False))

    def check_data(self, data: ResponseData, *, where: str = "", hint: str = "") -> None:
        """Raise :class:`~irtbayes.core.errors.FitError` unless ``data`` is the data this fit was made from (by checksum).

        Every step that takes a fit and its data (model checks, scoring against the fitted subjects,
        BenchFill, the command line) checks them here. ``where`` opens the message (a function, a fit's
        folder) and ``hint`` closes it (what to do).
        """
        if data.checksum() != self.data_checksum:
            raise FitError(
                f"{where + ': ' if where else ''}{data.source}: these are not the data the fit was made from "
                f"(checksum {data.checksum()[:12]}, the fit's {self.data_checksum[:12]})"
                + (f"; {hint}" if hint else "")
            )

    def category_labels(self) -> list[str] | None:
        """The ordered category labels of a graded fit's items (recorded from its data): the longest item's, when
        every item's labels begin it (a shared scale on which some items use fewer categories); None when the
        fit is not of ordinal data or its items' labels differ (new responses must then be read with their
        categories declared).

        Examples
        --------
        >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
        >>> data, truth = simulate_responses(20, 10, seed=1)
        >>> Fit.from_posterior(posterior_near_truth(data, truth, chains=1, draws=10, seed=2), data).category_labels()
        """
        if "item_categories" not in self.constant_data:
            return None
        from irtbayes.data.columns import CATEGORY_SEPARATOR

        scales = {tuple(s.split(CATEGORY_SEPARATOR)) for s in self.constant_data["item_categories"].values.astype(str)}
        longest = max(scales, key=len)
        if "" in longest or any(scale != longest[: len(scale)] for scale in scales):
            return None
        return list(longest)

    def read_options(self) -> dict[str, Any]:
        """Loader options that read new responses on this fit's own scale (for :func:`irtbayes.data.io.load`,
        ``load_long`` and ``ResponseData.from_long``): none for a fit of binary or fractional responses; for ordinal
        data ``scoring="ordinal"`` with the shared :meth:`category_labels` (inferred integers where the items' labels
        differ).

        Examples
        --------
        >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
        >>> data, truth = simulate_responses(20, 10, seed=1)
        >>> Fit.from_posterior(posterior_near_truth(data, truth, chains=1, draws=10, seed=2), data).read_options()
        {}
        """
        if "item_n_categories" not in self.constant_data:
            return {}
        labels = self.category_labels()
        return {"scoring": "ordinal", **({"categories": labels} if labels is not None else {})}

    def require_binary_model(self, what: str) -> None:
        """Raise :class:`~irtbayes.core.errors.SpecError` when this is a graded (GRM, GPCM) fit: ``what`` works with
        the binary models' item parameters (b, a, c) only."""
        if self.spec.kind in ("grm", "gpcm"):
            raise SpecError(
                f"{what} works with binary IRT models (1PL, 2PL, 3PL); this is a {self.spec.kind.upper()} fit of graded "
                "items, whose fit, model checks, scores and audit are supported"
            )

    @property
    def unsettled(self) -> str:
        """For an approximate-tier fit whose empirical-Bayes modes did not settle, one sentence saying so; else
        ``""``. Such a fit's estimates are unreliable, and the audit, the report, BenchFill and the evaluating verbs
        refuse it (:meth:`refuse_if_unsettled`)."""
        info = self.sampler.get("options") or {}
        if not self.approximate or info.get("modes_converged", True):
            return ""
        return (
            f"the approximate tier's empirical-Bayes modes did not settle ({info.get('items_still_moving')} item(s) "
            f"still moving after {info.get('rounds')} rounds)"
        )

    def refuse_if_unsettled(self, verb: str) -> None:
        """Raise :class:`~irtbayes.core.errors.FitError` for an unsettled approximate fit (:attr:`unsettled`),
        naming ``verb`` and what to do instead."""
        if self.unsettled:
            raise FitError(
                f"{verb}: {self.unsettled}, so its estimates are unreliable and nothing is made from them; fit with "
                "NUTS instead (sampler='nutpie', or --sampler nutpie)"
            )

    def partial_text(self) -> str:
        """For a partial fit, one sentence saying so and how far the run got; else ``""``."""
        if not self.partial:
            return ""
        done = dict(self.info.get("interrupted") or {})
        how = describe_interrupt(
            str(done.get("phase", "sampling")),
            draws_done=int(done.get("draws_done", 0)),
            draws_requested=int(done.get("draws_requested", 0)),
            chains_done=int(done.get("chains_done", 0)),
            chains_requested=int(done.get("chains_requested", 0)),
        )
        return f"PARTIAL fit: the run was {how}; these are the draws so far, not a complete fit."

    @property
    def posterior(self) -> xr.Dataset:
        return self.idata["posterior"].to_dataset()

    @property
    def constant_data(self) -> xr.Dataset:
        return self.idata["constant_data"].to_dataset()

    @property
    def item_ids(self) -> pd.Index:
        return pd.Index(self.posterior["item"].values.astype(str), name="item")

    @property
    def subject_ids(self) -> pd.Index:
        return pd.Index(self.posterior["subject"].values.astype(str), name="subject")

    def card(self) -> dict[str, Any]:
        """What ``card.json`` holds: a JSON-ready description of the fit."""
        return json_ready(
            {
                "format_version": FORMAT_VERSION,
                "irtbayes_version": installed_version(),
                "approximate": self.approximate,
                "partial": self.partial,
                "spec": self.spec.to_dict(),
                "sampler": self.sampler,
                "data_checksum": self.data_checksum,
                "diagnostics": self.diagnostics.to_dict(),
                **{k: v for k, v in self.info.items() if k not in ("format_version", "spec", "sampler", "partial")},
            }
        )

    # ------------------------------------------------------------------ tables
    def _table_attrs(self, table: pd.DataFrame, ci_prob: float) -> pd.DataFrame:
        table.attrs["ci_prob"] = ci_prob
        table.attrs["approximate"] = self.approximate
        table.attrs["sampler"] = self.sampler.get("name")
        table.attrs["kind"] = self.spec.kind
        return table

    def _item_columns(self) -> dict[str, np.ndarray]:
        """Each item's id, benchmark, domain, number of responses and mean response, in fit order."""
        cd = self.constant_data
        return {
            "item": self.item_ids.to_numpy(),
            "benchmark": _labels(cd["item_benchmark"].values),
            "domain": _labels(cd["item_domain"].values),
            "n_responses": cd["item_n_responses"].values.astype("int64"),
            "mean_response": cd["item_mean_response"].values,
        }

    def items_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per item: labels, counts, and posterior summaries of the item parameters.

        Parameters
        ----------
        ci_prob
            Probability of the equal-tailed credible interval.

        Returns
        -------
        pandas.DataFrame
            Columns ``item``, ``benchmark``, ``domain``, ``n_responses``, ``mean_response``, and for p in
            ``difficulty``, ``discrimination``, ``intercept`` (and ``guessing`` for 3PL): ``p_mean``,
            ``p_sd``, ``p_ci_low``, ``p_ci_high``; then ``ci_prob``. Graded fits add ``location_*`` and, per
            threshold k, ``thresholdk_*`` and ``interceptk_*`` (mirt's d_k; NaN where an item has fewer
            categories). ``attrs`` records ``ci_prob`` and
            ``approximate``.
        """
        check_prob(ci_prob)
        with _ITEM_TABLES_LOCK:  # a caller in another thread (the saved fit's, beside the report) waits for it
            return self._items_table(ci_prob).copy()

    def _items_table(self, ci_prob: float) -> pd.DataFrame:
        made = self._item_tables.get(float(ci_prob))
        if made is not None:
            return made
        post = self.posterior
        table = pd.DataFrame(self._item_columns())
        for name in ITEM_PARAMETERS:
            if name not in post:
                continue
            if "boundary" in post[name].dims:  # graded: one column set per threshold (threshold1_mean, ...)
                for k in post[name]["boundary"].values:
                    for col, values in _summaries(post[name].sel(boundary=k), ci_prob).items():
                        table[f"{name}{k}_{col}"] = values
                continue
            for col, values in _summaries(post[name], ci_prob).items():
                table[f"{name}_{col}"] = values
        table["ci_prob"] = ci_prob
        self._item_tables[float(ci_prob)] = self._table_attrs(table, ci_prob)
        return self._item_tables[float(ci_prob)]

    def subjects_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per subject (and dimension): posterior summaries of the ability.

        Returns
        -------
        pandas.DataFrame
            Columns ``subject``, (``dim``,) ``n_responses``, ``mean_response``, ``ability_mean``,
            ``ability_sd``, ``ability_ci_low``, ``ability_ci_high``, ``ci_prob``.
        """
        check_prob(ci_prob)
        ability = self.posterior["ability"]
        cd = self.constant_data
        counts = pd.DataFrame(
            {
                "subject": self.subject_ids.to_numpy(),
                "n_responses": cd["subject_n_responses"].values.astype("int64"),
                "mean_response": cd["subject_mean_response"].values,
            }
        )
        table = draws_table(ability, ci_prob, prefix="ability")
        table = counts.merge(table, on="subject", how="right")
        cols = ["subject"] + (["dim"] if "dim" in table.columns else []) + ["n_responses", "mean_response"]
        table = table[cols + [c for c in table.columns if c not in cols]]
        table["ci_prob"] = ci_prob
        return self._table_attrs(table, ci_prob)

    def flagged_items(self, *, min_discrimination: float = 0.25, prob: float = 0.5) -> pd.DataFrame:
        """Items that measure little: solved by every subject or by none, or with near-zero discrimination.

        Parameters
        ----------
        min_discrimination
            Discriminations below this count as "near zero" (logit change per ability sd).
        prob
            An item is flagged when P(discrimination < ``min_discrimination`` | data) exceeds ``prob``.

        Returns
        -------
        pandas.DataFrame
            One row per flagged item: ``item``, ``benchmark``, ``domain``, ``n_responses``,
            ``mean_response``, ``item_rest_corr`` (correlation of the item with the rest score in the
            data: negative means the item favours weaker subjects, which a model with positive
            discriminations cannot express), ``p_low_discrimination``, ``discrimination_mean`` and
            ``flags`` (``all_correct``, ``all_wrong``, ``low_discrimination``, ``negative_item_rest``,
            joined by ``;``).
        """
        check_prob(prob)
        post = self.posterior
        cd = self.constant_data
        disc = post["discrimination"]
        p_low = (disc < min_discrimination).mean(dim=("chain", "draw")).values
        mean_resp = cd["item_mean_response"].values
        rest = cd["item_rest_corr"].values
        flags = []
        for i in range(len(mean_resp)):
            f = []
            if mean_resp[i] == 1:
                f.append("all_correct")
            elif mean_resp[i] == 0:
                f.append("all_wrong")
            if self.spec.kind != "1pl" and p_low[i] > prob:
                f.append("low_discrimination")
            if np.isfinite(rest[i]) and rest[i] < 0:
                f.append("negative_item_rest")
            flags.append(";".join(f))
        table = pd.DataFrame(
            {
                **self._item_columns(),
                "item_rest_corr": rest,
                "p_low_discrimination": p_low,
                "discrimination_mean": disc.mean(dim=("chain", "draw")).values,
                "flags": flags,
            }
        )
        table = table.loc[table["flags"] != ""].reset_index(drop=True)
        table.attrs.update(min_discrimination=min_discrimination, prob=prob, approximate=self.approximate)
        return table

    # ------------------------------------------------------------------ convenience
    @classmethod
    def from_posterior(
        cls,
        posterior: xr.Dataset,
        data: ResponseData,
        *,
        spec: ModelSpec | None = None,
        sampler: dict[str, Any] | None = None,
    ) -> Fit:
        """A :class:`Fit` around posterior draws made elsewhere: another tool's, or hand-built for tests.

        The convergence checks are run on the draws as given (with no sampler statistics they fail, saying
        so); the data's counts fill ``constant_data``.

        Parameters
        ----------
        posterior
            ``ability`` (chain, draw, subject), ``difficulty`` and, for 2PL/3PL, ``discrimination``
            (chain, draw, item), labelled with the data's subject and item ids.
        data
            The data the draws describe.
        spec
            The model the draws come from (default: a 2PL without hierarchy).
        sampler
            Sampler settings to record (default ``{"name": "external"}``).

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> fit.items_table().shape[0], fit.spec.kind
        (30, '2pl')
        """
        coords = {"subject": data.subject_ids.to_numpy(dtype=str), "item": data.item_ids.to_numpy(dtype=str)}
        tree = xr.DataTree.from_dict(
            {"posterior": posterior.assign_coords(coords), "constant_data": fit_constant_data(data)}
        )
        return cls(
            idata=tree,
            spec=spec or ModelSpec(kind="2pl", hierarchy="none"),
            sampler=dict(
                sampler or {"name": "external"},
                chains=posterior.sizes.get("chain", 1),
                draws=posterior.sizes.get("draw", 1),
            ),
            data_checksum=data.checksum(),
            diagnostics=check_convergence(tree),
            info=data_info(data),
        )

    def summary(self, *, var_names: Sequence[str] | None = None, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per scalar parameter, as ``arviz.summary``: mean, sd, interval, bulk and tail ESS, r-hat, MCSE.

        Parameters
        ----------
        var_names
            Posterior variables to summarise (default: all but the raw ``*_z`` sampling coordinates).
        ci_prob
            Probability of the equal-tailed interval (tail ESS is taken at its ends).

        Returns
        -------
        pandas.DataFrame
            Indexed by ``variable[index]`` (``difficulty[item00003]``: the real ids); columns ``variable``,
            ``index``, then ArviZ's ``mean``, ``sd``, ``eti90_lb``, ``eti90_ub`` (for ``ci_prob=0.9``; see
            :func:`irtbayes.core.summaries.interval_columns`), ``ess_bulk``, ``ess_tail``, ``r_hat``, ``mcse_mean``.
            ``attrs`` record ``ci_prob``, ``approximate``, ``sampler`` (its name) and ``kind``. :meth:`to_text` gives the verdict in
            prose; :meth:`items_table` and :meth:`subjects_table` the item and subject parameters side by side.

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> table = fit.summary(var_names=["difficulty"])
        >>> table.index[0], list(table.columns)
        ('difficulty[item00000]', ['variable', 'index', 'mean', 'sd', 'eti90_lb', 'eti90_ub', 'ess_bulk', 'ess_tail', 'r_hat', 'mcse_mean'])
        >>> bool((table["eti90_lb"] < table["mean"]).all() and (table["mean"] < table["eti90_ub"]).all())
        True
        """
        table = posterior_summary(self.posterior, var_names=var_names, ci_prob=ci_prob)
        table.attrs.update(approximate=self.approximate, sampler=self.sampler.get("name"), kind=self.spec.kind)
        return table

    def to_dict(self) -> dict[str, Any]:
        """The fit's description as plain JSON values: what :meth:`card` gives and ``card.json`` holds."""
        return self.card()

    def to_dataframe(self, *, var_names: Sequence[str] | None = None) -> pd.DataFrame:
        """The draws in wide form: one row per (chain, draw), one column per scalar parameter.

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> draws = fit.to_dataframe(var_names=["ability"])
        >>> draws.shape, draws.index.names, draws.columns[0]
        ((200, 20), FrozenList(['chain', 'draw']), 'ability[subject000]')
        """
        return draws_frame(self.posterior, var_names=var_names)

    def plot_item_person_map(self, *, ax: Axes | None = None) -> Axes:
        """Subjects' abilities beside the items' difficulties by benchmark (:func:`irtbayes.core.plots.plot_item_person_map`).

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30, n_benchmarks=2)
        >>> ax = fit.plot_item_person_map()
        >>> type(ax).__name__
        'Axes'
        """
        from irtbayes.core.plots import plot_item_person_map

        axes: Axes = plot_item_person_map(self.subjects_table(), self.items_table(), ax=ax)
        return axes

    def plot_forest(
        self, *, var_name: str = "difficulty", ci_prob: float = 0.9, max_rows: int = 40, ax: Axes | None = None
    ) -> Axes:
        """Posterior means and intervals of one item parameter (or ``"ability"``), sorted.

        Parameters
        ----------
        var_name
            ``difficulty``, ``discrimination``, ``intercept``, ``guessing`` or ``ability``.
        max_rows
            Beyond this many items or subjects, rows evenly spaced over the sorted order are shown (the title
            says how many), so the figure stays readable whatever the data.

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 60)
        >>> ax = fit.plot_forest(var_name="difficulty", max_rows=20)
        >>> ax.get_title()
        'Difficulty (20 of 60, evenly spaced)'
        """
        if var_name == "ability":
            return forest_rows(
                self.subjects_table(ci_prob), prefix="ability", label="subject", max_rows=max_rows, ax=ax
            )
        if (
            var_name not in ITEM_PARAMETERS
            or var_name not in self.posterior
            or "boundary" in self.posterior[var_name].dims
        ):
            raise SpecError(
                f"no item parameter {var_name!r} in this fit; choose from {[p for p in ITEM_PARAMETERS if p in self.posterior]} or 'ability'"
            )
        return forest_rows(self.items_table(ci_prob), prefix=var_name, label="item", max_rows=max_rows, ax=ax)

    def plot_rhat_ess(self, *, ax: Axes | None = None) -> Axes:
        """R-hat against bulk ESS for every parameter, computed from the draws (also for a loaded fit).

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> fit.plot_rhat_ess().get_ylabel()
        'R-hat'
        """
        from irtbayes.core.plots import plot_rhat_ess

        t = self.diagnostics.thresholds
        axes: Axes = plot_rhat_ess(
            self.summary(), rhat_max=t.get("rhat_max", 1.01), ess_min=t.get("ess_min", 400), ax=ax
        )
        return axes

    def plot_item_curves(
        self, *, items: Sequence[str] | None = None, ci_prob: float = 0.9, ax: Axes | None = None
    ) -> Axes:
        """Item characteristic curves with posterior bands over the subjects' ability range.

        P(correct) of each item is computed for every posterior draw over a grid of 61 abilities spanning the
        subjects' abilities (:func:`irtbayes.core.plots.plot_item_curves` draws its mean and ``ci_prob`` interval).

        Parameters
        ----------
        items
            Item ids (default: the first five items).

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> ax = fit.plot_item_curves(items=["item00000", "item00001"])
        >>> len(ax.get_lines()), ax.get_ylabel()
        (2, 'P(correct)')
        """
        from irtbayes.core.plots import plot_item_curves

        chosen = list(items) if items is not None else list(self.item_ids[:5])
        axes: Axes = plot_item_curves(_item_curves_table(self, items=chosen, ci_prob=ci_prob), ax=ax)
        return axes

    def to_text(self) -> str:
        """A short text: model, data, sampler, convergence (and PARTIAL for an interrupted run kept)."""
        s = self.sampler
        label = (" (APPROXIMATE)" if self.approximate else "") + (" (PARTIAL)" if self.partial else "")
        lines = [
            f"{self.spec.kind.upper()} IRT, hierarchy {self.spec.hierarchy}, abilities {self.spec.dims}, "
            f"identification {self.spec.identification}{label}",
            f"data: {self.info.get('source', '?')} ({self.info.get('n_subjects', '?')} subjects x "
            f"{self.info.get('n_items', '?')} items, {self.info.get('n_responses', '?')} responses)",
            f"sampler: {s.get('name')} {s.get('chains')} chains x {s.get('draws')} draws (tune {s.get('tune')}), "
            f"seed {s.get('seed')}, {s.get('wall_time_s', float('nan')):.1f} s",
            *([self.partial_text()] if self.partial else []),
            self.diagnostics.to_text(),
        ]
        return "\n".join(lines)


def check_prob(p: float) -> None:
    """Raise :class:`SpecError` unless ``0 < p < 1`` (an interval probability or a level).

    Examples
    --------
    >>> check_prob(0.9)
    >>> check_prob(1.0)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: a probability strictly between 0 and 1 is needed, got 1.0
    """
    if not 0 < p < 1:
        raise SpecError(f"a probability strictly between 0 and 1 is needed, got {p}")


def _labels(values: np.ndarray) -> pd.Series:
    out = pd.Series(values.astype(str), dtype="string")
    return out.where(out != "", pd.NA)


def _summaries(da: xr.DataArray, ci_prob: float) -> dict[str, np.ndarray]:
    """Mean, sd and equal-tailed interval over (chain, draw) (see :func:`irtbayes.core.summaries.summarize`)."""
    return summarize(da.transpose("chain", "draw", ...).values, ci_prob=ci_prob, axis=(0, 1))


def draws_table(da: xr.DataArray, ci_prob: float, *, prefix: str) -> pd.DataFrame:
    """Summaries of draws (chain, draw, subject[, dim]) in long form: one row per subject (and dim).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(2, 100, 3))
    >>> da = xr.DataArray(draws, dims=("chain", "draw", "subject"), coords={"subject": ["a", "b", "c"]})
    >>> table = draws_table(da, 0.9, prefix="ability")
    >>> table.columns.tolist(), table["subject"].tolist()
    (['subject', 'ability_mean', 'ability_sd', 'ability_ci_low', 'ability_ci_high'], ['a', 'b', 'c'])
    """
    stats = _summaries(da, ci_prob)
    other = [d for d in da.dims if d not in ("chain", "draw")]
    index = pd.MultiIndex.from_product([da[d].values.astype(str) for d in other], names=other)
    table = pd.DataFrame({f"{prefix}_{k}": v.ravel() for k, v in stats.items()}, index=index).reset_index()
    return table


def _item_curves_table(fit: Fit, *, items: Sequence[str], points: int = 61, ci_prob: float = 0.9) -> pd.DataFrame:
    """P(correct) of ``items`` over an ability grid spanning the subjects' abilities, with intervals.

    Returns one row per (item, theta): ``item``, ``theta``, ``p_mean``, ``p_sd``, ``p_ci_low``, ``p_ci_high``;
    ``attrs["ci_prob"]`` records the interval's probability.
    """
    from irtbayes.core.information import item_curves, theta_grid

    post = fit.posterior
    known = set(fit.item_ids)
    missing = [i for i in items if i not in known]
    if missing:
        raise SpecError(f"no item {missing} in the fit")
    sel = post.sel(item=list(items))
    stack = ("chain", "draw")
    b = sel["difficulty"].stack(sample=stack).transpose("sample", "item").to_numpy()
    a = sel["discrimination"].stack(sample=stack).transpose("sample", "item").to_numpy()
    c = sel["guessing"].stack(sample=stack).transpose("sample", "item").to_numpy() if "guessing" in sel else None
    ability = post["ability"].to_numpy()
    theta = theta_grid(float(np.nanmin(ability)), float(np.nanmax(ability)), points=points)
    p = item_curves(theta, b, a, c)[0]  # (sample, grid, item)
    stats = summarize(p, ci_prob=ci_prob, axis=0)
    rows = []
    for k, item in enumerate(items):
        rows.append(pd.DataFrame({"item": item, "theta": theta, **{f"p_{s}": v[:, k] for s, v in stats.items()}}))
    table = pd.concat(rows, ignore_index=True)
    table.attrs["ci_prob"] = ci_prob
    return table


#: Floating-point dtype of the posterior draws of the item variables (every variable with an ``item`` dimension:
#: difficulties, discriminations, intercepts, guessing). Seven significant digits are far below the Monte Carlo
#: error of any summary, and a saved fit stores its draws in the same precision, so a fit in memory and the
#: same fit saved and loaded hold the same item draws. At MMLU-Pro's size (12,032 items, 4 x 1,350 draws) each
#: item variable takes 260 MB instead of 520 MB. Other draws (abilities, hyperparameters) stay float64.
DRAWS_DTYPE = np.float32


def as_held(posterior: xr.Dataset) -> xr.Dataset:
    """``posterior`` with its draws in the precision a :class:`Fit` holds them: :data:`DRAWS_DTYPE` for every
    floating-point variable with an ``item`` dimension, float64 for the others.

    Examples
    --------
    >>> posterior = xr.Dataset(
    ...     {
    ...         "difficulty": (("chain", "draw", "item"), np.zeros((1, 2, 3))),
    ...         "difficulty_mu": (("chain", "draw"), np.zeros((1, 2), "f4")),
    ...     }
    ... )
    >>> held = as_held(posterior)
    >>> str(held["difficulty"].dtype), str(held["difficulty_mu"].dtype)
    ('float32', 'float64')
    """
    changed = {}
    for name, var in posterior.data_vars.items():
        wanted = held_dtype(var.dtype, var.dims)
        if var.dtype != wanted:
            changed[name] = var.astype(wanted)
    if not changed:
        return posterior
    out = posterior.assign(changed)
    for name in changed:
        out[name].encoding = {}
    return out


def held_dtype(dtype: np.dtype[Any] | type, dims: Sequence[Any]) -> np.dtype[Any]:
    """The dtype a :class:`Fit` holds draws of ``dtype`` along ``dims`` in (see :func:`as_held`): :data:`DRAWS_DTYPE`
    for floating-point item draws, float64 for other floating-point draws, ``dtype`` itself for the rest."""
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        return dtype
    return np.dtype(DRAWS_DTYPE if "item" in dims else np.float64)


def derived_names(spec: ModelSpec) -> list[str]:
    """The posterior variables :func:`~irtbayes.model.build.add_derived` recomputes (not stored in a saved fit).

    Examples
    --------
    >>> derived_names(ModelSpec(kind="2pl")), derived_names(ModelSpec(kind="1pl"))
    (['intercept'], ['intercept', 'discrimination'])
    """
    names = ["intercept"]
    if spec.kind == "1pl":
        names.append("discrimination")
    return names


def _item_rest_correlations(item: np.ndarray, y: np.ndarray, rest: np.ndarray, n_items: int) -> np.ndarray:
    """Per item, the correlation of its responses ``y`` with the subjects' mean response on the other items
    (``rest``), from sums per item (one pass of ``bincount`` each, arrays of one value per response): centred
    within the item, so that the sums of squares do not cancel; NaN where an item's responses or rests are
    constant.

    >>> y, rest = np.array([1.0, 0.0, 1.0, 0.0, 1.0]), np.array([0.9, 0.2, 0.7, 0.4, 0.5])
    >>> r = _item_rest_correlations(np.array([0, 0, 0, 0, 1]), y, rest, 2)
    >>> bool(np.isclose(r[0], np.corrcoef(y[:4], rest[:4])[0, 1])), bool(np.isnan(r[1]))
    (True, True)
    """
    n = np.bincount(item, minlength=n_items).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        my = np.bincount(item, weights=y, minlength=n_items) / n
        mr = np.bincount(item, weights=rest, minlength=n_items) / n
        dy, dr = y - my[item], rest - mr[item]
        cov = np.bincount(item, weights=dy * dr, minlength=n_items)
        vy = np.bincount(item, weights=dy * dy, minlength=n_items)
        vr = np.bincount(item, weights=dr * dr, minlength=n_items)
        return cov / np.sqrt(vy * vr)


def data_info(data: ResponseData) -> dict[str, Any]:
    """What a fit's card records of its data: the source (and how it was read), the counts and the response kind.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(5, 4, missing=0.0, seed=1)
    >>> {k: v for k, v in data_info(data).items() if k != "source"}
    {'n_subjects': 5, 'n_items': 4, 'n_responses': 20, 'binary': True, 'response_kind': 'binary'}
    """
    return {
        "source": data.source,
        **({"reading": dict(data.reading)} if data.reading else {}),
        "n_subjects": data.n_subjects,
        "n_items": data.n_items,
        "n_responses": data.n_responses,
        "binary": data.is_binary,
        "response_kind": data.response_kind,
    }


def fit_constant_data(data: ResponseData) -> xr.Dataset:
    """Per-item and per-subject counts that tables and flags need without the data.

    Mean responses are shares of the most an item can score: for ordinal responses the category code over
    K - 1 (``item_n_categories`` records each item's K and ``item_categories`` its labels, so that new responses
    can be read in the fit's own categories: :meth:`Fit.category_labels`).
    """
    s = data.subject_codes
    i = data.item_codes
    y = data.shares
    ordinal = data.response_kind == "ordinal"
    n_items = np.bincount(i, minlength=data.n_items)
    n_subj = np.bincount(s, minlength=data.n_subjects)
    item_mean = np.bincount(i, weights=y, minlength=data.n_items) / np.maximum(n_items, 1)
    subj_total = np.bincount(s, weights=y, minlength=data.n_subjects)
    subj_mean = subj_total / np.maximum(n_subj, 1)
    corr = _item_rest_correlations(i, y, (subj_total[s] - y) / np.maximum(n_subj[s] - 1, 1), data.n_items)
    items = data.items
    return xr.Dataset(
        {
            "item_benchmark": ("item", items["benchmark"].astype(object).fillna("").to_numpy(dtype=str)),
            "item_domain": ("item", items["domain"].astype(object).fillna("").to_numpy(dtype=str)),
            "item_n_responses": ("item", n_items.astype("int64")),
            "item_mean_response": ("item", item_mean),
            "item_rest_corr": ("item", corr),
            "subject_n_responses": ("subject", n_subj.astype("int64")),
            "subject_mean_response": ("subject", subj_mean),
            **({"item_n_categories": ("item", data.n_categories.astype("int64"))} if ordinal else {}),
            **(
                {"item_categories": ("item", items["categories"].astype(object).fillna("").to_numpy(dtype=str))}
                if ordinal and "categories" in items.columns
                else {}
            ),
        },
        coords={
            "item": data.item_ids.to_numpy(dtype=str),
            "subject": data.subject_ids.to_numpy(dtype=str),
        },
    )
