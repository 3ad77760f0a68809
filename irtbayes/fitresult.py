"""The result of a fit: :class:`Fit` (posterior DataTree, spec, sampler settings, data checksum, diagnostics).

A :class:`Fit` holds the posterior as an :class:`xarray.DataTree` (groups ``posterior``, ``sample_stats``
for MCMC, and ``constant_data`` with per-item and per-subject counts from the data), the resolved
:class:`~irtbayes.model.ModelSpec`, the sampler settings, the data checksum and the convergence
:class:`~irtbayes.diagnostics.Diagnostics`. :func:`irtbayes.fit.fit` makes one; :mod:`irtbayes.storage`
saves and loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.data import json_ready
from irtbayes.errors import SpecError, describe_interrupt
from irtbayes.model import ModelSpec
from irtbayes.sampler_checks import Diagnostics
from irtbayes.summaries import summarize

__all__ = ["FORMAT_VERSION", "ITEM_PARAMETERS", "Fit", "check_prob", "derived_names", "draws_table"]

#: Version of the saved-fit folder layout; :func:`load_fit` refuses other versions.
FORMAT_VERSION = 1
ITEM_PARAMETERS = ("difficulty", "discrimination", "intercept", "guessing")
_PACKAGES = ("irtbayes", "pymc", "pytensor", "nutpie", "arviz", "arviz-stats", "numpy", "pandas", "xarray", "h5netcdf")


def _versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _irtbayes_version() -> str:
    from irtbayes import __version__

    return __version__


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
    """

    idata: xr.DataTree
    spec: ModelSpec
    sampler: dict[str, Any]
    data_checksum: str
    diagnostics: Diagnostics
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def approximate(self) -> bool:
        """True for variational / Pathfinder fits (labelled approximate in the card and every table)."""
        return bool(self.sampler.get("approximate", False))

    @property
    def partial(self) -> bool:
        """True for the draws of an interrupted run (see ``keep_partial`` in :func:`fit`): never converged."""
        return bool(self.info.get("partial", False))

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
                "irtbayes_version": _irtbayes_version(),
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
            ``p_sd``, ``p_ci_low``, ``p_ci_high``; then ``ci_prob``. ``attrs`` records ``ci_prob`` and
            ``approximate``.
        """
        check_prob(ci_prob)
        post = self.posterior
        cd = self.constant_data
        table = pd.DataFrame(
            {
                "item": self.item_ids.to_numpy(),
                "benchmark": _labels(cd["item_benchmark"].values),
                "domain": _labels(cd["item_domain"].values),
                "n_responses": cd["item_n_responses"].values.astype("int64"),
                "mean_response": cd["item_mean_response"].values,
            }
        )
        for name in ITEM_PARAMETERS:
            if name in post:
                for col, values in _summaries(post[name], ci_prob).items():
                    table[f"{name}_{col}"] = values
        table["ci_prob"] = ci_prob
        return self._table_attrs(table, ci_prob)

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
                "item": self.item_ids.to_numpy(),
                "benchmark": _labels(cd["item_benchmark"].values),
                "domain": _labels(cd["item_domain"].values),
                "n_responses": cd["item_n_responses"].values.astype("int64"),
                "mean_response": mean_resp,
                "item_rest_corr": rest,
                "p_low_discrimination": p_low,
                "discrimination_mean": disc.mean(dim=("chain", "draw")).values,
                "flags": flags,
            }
        )
        table = table.loc[table["flags"] != ""].reset_index(drop=True)
        table.attrs.update(min_discrimination=min_discrimination, prob=prob, approximate=self.approximate)
        return table

    def summary(self) -> str:
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
            self.diagnostics.summary(),
        ]
        return "\n".join(lines)


def check_prob(p: float) -> None:
    if not 0 < p < 1:
        raise SpecError(f"a probability strictly between 0 and 1 is needed, got {p}")


def _labels(values: np.ndarray) -> pd.Series:
    out = pd.Series(values.astype(str), dtype="string")
    return out.where(out != "", pd.NA)


def _summaries(da: xr.DataArray, ci_prob: float) -> dict[str, np.ndarray]:
    """Mean, sd and equal-tailed interval over (chain, draw) (see :func:`irtbayes.summaries.summarize`)."""
    return summarize(da.transpose("chain", "draw", ...).values, ci_prob=ci_prob, axis=(0, 1))


def draws_table(da: xr.DataArray, ci_prob: float, *, prefix: str) -> pd.DataFrame:
    """Summaries of draws (chain, draw, subject[, dim]) in long form: one row per subject (and dim)."""
    stats = _summaries(da, ci_prob)
    other = [d for d in da.dims if d not in ("chain", "draw")]
    index = pd.MultiIndex.from_product([da[d].values.astype(str) for d in other], names=other)
    table = pd.DataFrame({f"{prefix}_{k}": v.ravel() for k, v in stats.items()}, index=index).reset_index()
    return table


def derived_names(spec: ModelSpec) -> list[str]:
    """The posterior variables :func:`~irtbayes.model.add_derived` recomputes (not stored in a saved fit)."""
    names = ["intercept"]
    if spec.kind == "1pl":
        names.append("discrimination")
    return names
