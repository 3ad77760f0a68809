"""The scopes of an audit: all items, each benchmark and each domain, with their subjects and responses.

A :class:`Scope` also collects the per-draw results of the audit's passes over the draws
(:mod:`irtbayes.auditing.run`), which :mod:`irtbayes.auditing.tables` turns into table rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from irtbayes.auditing.draws import PosteriorDraws
from irtbayes.data.responses import ResponseData

__all__ = ["Scope", "build_scopes", "response_matrix", "scope_ability"]

log = logging.getLogger("irtbayes.auditing.run")


@dataclass
class Scope:
    kind: str
    name: str
    items: np.ndarray  # item positions
    subjects: np.ndarray  # subject positions with a response to the scope's items
    ability: np.ndarray  # (sample, subject) — the scope's ability, all subjects
    responses: np.ndarray  # (scope subject, scope item), NaN where missing
    points: np.ndarray | None = None  # columns of the ensemble locations (graded thresholds); None: the items
    # per-draw results, filled in as chunks are processed
    counts: list[np.ndarray] = field(default_factory=list)
    shape_w1: list[np.ndarray] = field(default_factory=list)
    gap_width: list[np.ndarray] = field(default_factory=list)
    gap_lo: list[np.ndarray] = field(default_factory=list)
    gap_hi: list[np.ndarray] = field(default_factory=list)
    gap_edge: list[np.ndarray] = field(default_factory=list)
    interior_gap: list[np.ndarray] = field(default_factory=list)
    edge_gap_low: list[np.ndarray] = field(default_factory=list)
    edge_gap_high: list[np.ndarray] = field(default_factory=list)
    edge_gap_low_inner: list[np.ndarray] = field(default_factory=list)
    edge_gap_high_inner: list[np.ndarray] = field(default_factory=list)
    racc: list[np.ndarray] = field(default_factory=list)
    ranks: list[np.ndarray] = field(default_factory=list)
    ability_ranks: list[np.ndarray] = field(default_factory=list)

    @property
    def columns(self) -> np.ndarray:
        """The scope's columns of the ensemble locations: its items, or its items' thresholds."""
        return self.items if self.points is None else self.points


def scope_ability(
    draws: PosteriorDraws, data: ResponseData, kind: str, name: str, items: np.ndarray, ability_dim: str | None
) -> np.ndarray:
    if not draws.dims:
        return draws.ability[:, :, 0]
    if ability_dim is not None:
        return draws.ability[:, :, draws.dims.index(ability_dim)]
    label = None
    if kind == "domain":
        label = name
    elif kind == "benchmark":
        domains = data.items["domain"].iloc[items].dropna().unique()
        label = str(domains[0]) if len(domains) == 1 else None
    if label is not None and label in draws.dims:
        return draws.ability[:, :, draws.dims.index(label)]
    return draws.ability.mean(axis=2)


def response_matrix(data: ResponseData) -> np.ndarray:
    """The (subject, item) matrix of responses, NaN where missing; several conditions are averaged per cell.

    Ordinal responses enter as shares of the item's maximum, code / (K - 1), so that a re-weighted score is
    a mean share of the most each item gives, as accuracy is for binary items.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(10, 8, missing=0.25, seed=1)
    >>> matrix = response_matrix(data)
    >>> matrix.shape, int((~np.isnan(matrix)).sum()) == data.n_responses
    ((10, 8), True)
    """
    frame = data.responses
    if "condition" in frame.columns and frame.duplicated(["subject", "item"]).any():
        log.info("%s: responses under several conditions are averaged per (subject, item)", data.source)
        frame = frame.groupby(["subject", "item"], observed=True, as_index=False)["response"].mean()
    matrix = np.full((data.n_subjects, data.n_items), np.nan)
    items = frame["item"].cat.codes.to_numpy()
    values = frame["response"].to_numpy()
    if data.response_kind == "ordinal":
        values = values / (data.n_categories[items] - 1)
    matrix[frame["subject"].cat.codes.to_numpy(), items] = values
    return matrix


def build_scopes(data: ResponseData, draws: PosteriorDraws, matrix: np.ndarray, ability_dim: str | None) -> list[Scope]:
    specs: list[tuple[str, str, np.ndarray]] = [("all", "all", np.arange(data.n_items))]
    for kind, column, labels in (("benchmark", "benchmark", data.benchmarks), ("domain", "domain", data.domains)):
        values = data.items[column]
        for label in labels:
            specs.append((kind, str(label), np.flatnonzero(values.eq(label).fillna(False).to_numpy(dtype=bool))))
    out = []
    for kind, name, items in specs:
        sub = matrix[:, items]
        subjects = np.flatnonzero((~np.isnan(sub)).any(axis=1))
        out.append(
            Scope(
                kind=kind,
                name=name,
                items=items,
                subjects=subjects,
                ability=scope_ability(draws, data, kind, name, items, ability_dim),
                responses=sub[subjects],
            )
        )
    return out
