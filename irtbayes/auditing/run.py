"""The whole audit: every measure, per posterior draw, per benchmark, per domain and overall; tidy tables.

:func:`audit` takes a posterior (a DataTree with a ``posterior`` group, or that group as a Dataset) and the
:class:`~irtbayes.data.responses.ResponseData` it was fitted to, with its settings as one
:class:`~irtbayes.auditing.settings.AuditSettings` (or its fields as keywords), and returns an
:class:`~irtbayes.auditing.result.AuditResult`; :func:`~irtbayes.auditing.folder.save_audit` writes it to a folder
and :func:`~irtbayes.auditing.folder.load_audit` reads it back. The steps: :mod:`irtbayes.auditing.draws` reads
the draws, :mod:`irtbayes.auditing.scopes` builds the scopes, three passes over the draws here fill them, and
:mod:`irtbayes.auditing.tables` turns each scope into table rows.

Scopes
------
Each benchmark (``scope_kind="benchmark"``), each domain (``"domain"``) and all items together
(``"all"``, scope name ``"all"``) is audited as one benchmark: its own bins, DDM, gaps, information and
leaderboard. Items without a benchmark (domain) label belong to no benchmark (domain) scope, only to
``"all"``. A scope's subjects are those with at least one response to its items.

Draws
-----
Coverage, DDM and gaps use every posterior draw (for W1 and the gap, each benchmark's difficulties are
sorted in single precision, which moves them by less than 1e-6 logits and halves the sorting time). The
leaderboard costs (draws x items x subjects) and uses at most ``max_draws`` draws (default 1,000); the
information curves cost (draws x items x grid points) and use at most ``information_draws`` (default 200).
Both are taken evenly spaced over the stacked (chain, draw) sequence. Work is done in chunks of draws
(about 2 million array elements each), so memory stays bounded whatever the number of draws.

Locations
---------
Coverage, DDM and the Maximum Gap describe the whole set of a benchmark's difficulties. By default they
use *deconvolved* locations (:mod:`irtbayes.auditing.deconvolve`): per draw, each item's location is drawn
under its benchmark's estimated difficulty distribution instead of the model's normal prior, which would
otherwise fill gaps with the scatter of neighbouring items. Each item's own difficulty (the items table),
the leaderboard and the information curves use the fit's draws. ``ensemble="draws"`` uses the fit's draws
everywhere; a posterior without the hierarchy's hyperparameters (a hand-built one) always does.

Ability
-------
One-dimensional fits: the ``ability`` variable. Multidimensional fits (``ability`` with a ``dim`` axis,
one dimension per domain, each item loading on its domain's dimension): a domain scope uses its own
dimension, a benchmark scope the dimension of its domain when all its items share one, and the ``"all"``
scope (or a benchmark spread over several domains) the mean over dimensions; ``ability_dim`` forces one
dimension everywhere. The default range pools every dimension (each is standardised to mean 0, sd 1).
Top subjects for saturation are chosen by the scope's ability.

Responses under several conditions are averaged per (subject, item) for raw and re-weighted accuracy.
"""

from __future__ import annotations

import dataclasses
import logging
import textwrap
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

from irtbayes.auditing.coverage import CoverageDraws, bin_codes, count_items, coverage_table
from irtbayes.auditing.deconvolve import deconvolved_locations, prior_draws
from irtbayes.auditing.draws import (
    PosteriorDraws,
    draw_chunks,
    draws_identity,
    extract_draws,
    fit_created,
    fit_identity,
    posterior_dataset,
    recorded_checksum,
)
from irtbayes.auditing.gaps import GapDraws, edge_gaps, gap_location, gap_parts
from irtbayes.auditing.mismatch import ddm_shape_w1
from irtbayes.auditing.ranking import MAX_AHEAD_SUBJECTS, StackedResponses, draw_ranks, reweighted_accuracy
from irtbayes.auditing.recalibration import interval_calibration_note
from irtbayes.auditing.result import DDM_DEFINITIONS, AuditResult
from irtbayes.auditing.scopes import Scope, build_scopes, response_matrix
from irtbayes.auditing.settings import ENSEMBLES, AuditFields, AuditSettings, resolve_target, settings_help
from irtbayes.auditing.tables import ahead_table, benchmark_row, items_table, ranking_table
from irtbayes.auditing.targets import RANGE_WIDEN, Target, check_range_holds_subjects
from irtbayes.core.chains import WORKERS
from irtbayes.core.errors import FitError, SpecError
from irtbayes.core.information import curves_by_blocks, item_blocks, theta_grid
from irtbayes.core.progress import bars_shown
from irtbayes.core.summaries import spaced, summarize
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.diagnostics.divergences import remedy_text
from irtbayes.model.spec import UNLABELLED

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

__all__ = [
    "audit",
]

log = logging.getLogger(__name__)

#: Leaderboard draws of each simulated audit of the self-check (the measures it checks do not use them).
SELF_CHECK_MAX_DRAWS = 200
#: Edge gaps are also reported for [L + margin, U - margin]: the default range's widening on each side.
EDGE_GAP_MARGIN = RANGE_WIDEN
#: How the edge gaps move with the range (derivation in irtbayes.auditing.gaps).
EDGE_GAP_RULE = (
    "moving L down (U up) by d adds exactly d to the low (high) edge gap in every draw with no item in the added "
    "stretch: derivative 1 per unit of widening; the *_inner columns are the edge gaps of "
    f"[L + {EDGE_GAP_MARGIN:g}, U - {EDGE_GAP_MARGIN:g}]"
)


# ============================================================================================ helpers
def _thin(n_samples: int, max_draws: int | None) -> np.ndarray:
    if max_draws is None or n_samples <= max_draws:
        return np.arange(n_samples)
    return spaced(n_samples, max_draws)


# ============================================================================================ audit
def audit(
    posterior: Fit | xr.DataTree | xr.Dataset,
    data: ResponseData,
    *,
    settings: AuditSettings | None = None,
    **fields: Unpack[AuditFields],
) -> AuditResult:
    """Audit benchmarks against a target: coverage, DDM, Maximum Gap, information, re-weighted leaderboard.

    Parameters
    ----------
    posterior
        The fit's DataTree (its ``posterior`` group is used), the posterior Dataset, or an object with a
        ``posterior`` attribute. Needs ``difficulty`` (chain, draw, item) and ``ability`` (chain, draw,
        subject[, dim]); ``discrimination`` (absent: 1) and ``guessing`` (absent: 0) are optional.
    data
        The responses the posterior was fitted to (item and subject ids must match the coords).
    settings
        The audit's settings (default: :class:`~irtbayes.auditing.settings.AuditSettings` with its defaults).
    **fields
        Fields of :class:`~irtbayes.auditing.settings.AuditSettings` given one by one (``bins=8, seed=1``), typed
        by :class:`~irtbayes.auditing.settings.AuditFields`; they override ``settings``, and an unknown name is a
        SpecError. Each one's meaning and default: "Settings" at the end (``help(irt.audit)``).

    Returns
    -------
    AuditResult
        The tables ``bins``, ``benchmarks``, ``ranking``, ``ahead``, ``information`` and ``items`` (their
        columns are listed in :class:`~irtbayes.auditing.result.AuditResult`), the target and the settings.

    Raises
    ------
    FitError
        The posterior lacks variables, holds non-finite draws, or its ids do not match ``data``.
    SpecError
        Invalid settings: K < 1, L >= U, a range holding no subject, bad weights, unknown group subjects.

    Examples
    --------
    A hand-built posterior near the truth of a simulated benchmark whose items leave a known stretch empty:

    >>> import numpy as np
    >>> import xarray as xr
    >>> from irtbayes.auditing.run import audit
    >>> from irtbayes.data.simulate import PLANTED_GAP, planted_gap_responses
    >>> data, difficulty = planted_gap_responses(200, seed=1)
    >>> PLANTED_GAP
    (-0.3, 1.2)
    >>> rng = np.random.default_rng(2)
    >>> posterior = xr.Dataset(
    ...     {"ability": (("chain", "draw", "subject"), rng.normal(0, 1, (2, 100, 200))),
    ...      "difficulty": (("chain", "draw", "item"), difficulty + 0.05 * rng.standard_normal((2, 100, 60)))},
    ...     coords={"subject": data.subject_ids.to_numpy(), "item": data.item_ids.to_numpy()},
    ... )
    >>> result = audit(posterior, data, range=(-2.5, 2.5), bins=5, ensemble="draws")
    >>> row = result.benchmarks.set_index("scope").loc["planted"]
    >>> round(float(row["interior_gap_mean"]), 1), row["gap_kind"]  # the planted gap is 1.5 wide
    (1.5, 'interior')
    """
    started = time.perf_counter()
    if not isinstance(data, ResponseData):
        raise SpecError(f"data must be a ResponseData, got {type(data).__name__}")
    getattr(posterior, "refuse_if_unsettled", lambda verb: None)("audit")  # a Fit; a bare posterior has no record
    s = (settings or AuditSettings()).replace(**fields).checked()
    full, data = data, _counted(data, s)
    run = _prepare(posterior, data, s, full=full)
    timer = {"ensemble": time.perf_counter() - started}
    item_codes = _coverage_pass(run, s)
    timer["coverage"] = time.perf_counter() - started
    keep = _leaderboard_pass(run, s)
    timer["ranking"] = time.perf_counter() - started - timer["coverage"]
    theta = theta_grid(run.target.lo, run.target.hi, points=s.grid_points)
    curve_draws = _information_pass(run, s, theta)
    timer["information"] = time.perf_counter() - started - timer["coverage"] - timer["ranking"]
    tables = _scope_tables(run, data, s, theta, curve_draws)
    saturation_by_scope = tables.pop("saturation")
    tables["items"] = items_table(data, run.draws.difficulty, item_codes, run.n_samples, saturation_by_scope, s.ci_prob)
    recorded = _recorded_settings(posterior, full, s, run, n_ranking=len(keep), n_information=len(curve_draws["info"]))
    for frame in tables.values():
        frame.attrs.update(ci_prob=s.ci_prob, target=run.target.to_dict())
    log.info(
        "audit of %d items x %d subjects, %d draws (%d for the leaderboard), %d scopes: %.1fs "
        "(%s locations %.1fs, coverage/DDM/gaps %.1fs, leaderboard %.1fs, information %.1fs)",
        data.n_items,
        data.n_subjects,
        run.n_samples,
        len(keep),
        len(run.scopes),
        time.perf_counter() - started,
        run.ensemble,
        timer["ensemble"],
        timer["coverage"] - timer["ensemble"],
        timer["ranking"],
        timer["information"],
    )
    result = AuditResult(target=run.target, ci_prob=s.ci_prob, settings=recorded, **tables)
    if s.self_check:
        result = _with_self_check(result, posterior, data, s, run.locations)
    return result


def _with_self_check(
    result: AuditResult, posterior: Any, data: ResponseData, s: AuditSettings, locations: np.ndarray
) -> AuditResult:
    """The audit with its self-check: per benchmark and measure, the achieved coverage and the calibrated
    interval as columns ``{m}_self_check_coverage``, ``_ci_low``, ``_ci_high`` of ``benchmarks``, and the
    check's settings under ``settings["self_check"]`` (:mod:`irtbayes.auditing.selfcheck`)."""
    from irtbayes.auditing.selfcheck import SHORTFALL, self_check

    log.info("self-check: %d simulated data sets, each refitted with the approximate tier and audited", s.self_check)
    check = self_check(
        posterior,  # a Fit: self_check says so otherwise
        data,
        result,
        n_sets=s.self_check,
        seed=s.seed,
        progress=s.progress,
        max_draws=None if s.max_draws is None else min(s.max_draws, SELF_CHECK_MAX_DRAWS),
        audit_fn=audit,
        locations=locations,  # the audit's own item locations: not deconvolved a second time
        scheduler=s.scheduler,
    )
    bench = result.benchmarks.copy()
    kinds = np.where(bench["scope_kind"].to_numpy() == "all", "all", bench["scope"].astype(str).to_numpy())
    checked = bench["scope_kind"].isin(["all", "benchmark"]).to_numpy()
    for measure, rows in check.table.groupby("measure", sort=False):
        by_scope = rows.set_index("scope")
        for column, source in (
            ("coverage", "coverage"),
            ("ci_low", "calibrated_ci_low"),
            ("ci_high", "calibrated_ci_high"),
        ):
            values = by_scope[source].reindex(kinds).to_numpy(dtype="float64")
            bench[f"{measure}_self_check_{column}"] = np.where(checked, values, np.nan)
    bench.attrs = dict(result.benchmarks.attrs)
    summary = {k: v for k, v in check.to_dict().items() if k != "table"}
    summary["shortfall"] = SHORTFALL
    settings = result.settings | {"self_check": summary}
    return dataclasses.replace(result, benchmarks=bench, settings=settings)


@dataclass
class _Run:
    """What the audit's passes share: the draws, the scopes, the target and the ensemble locations."""

    post: xr.Dataset
    draws: PosteriorDraws
    scopes: list[Scope]
    target: Target
    range_rule: str
    inner_range: tuple[float, float] | None
    chunks: list[slice]
    locations: np.ndarray
    ensemble: str
    smoothing: dict[str, float]

    @property
    def n_samples(self) -> int:
        return int(self.draws.difficulty.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.draws.difficulty.shape[1])


def _counted(data: ResponseData, s: AuditSettings) -> ResponseData:
    """The data the measures count: all of it, or without the flagged items when ``exclude_flagged``."""
    flagged = s.flagged()
    unknown = sorted(set(flagged) - set(data.item_ids.astype(str)))
    if unknown:
        raise SpecError(f"item_flags name {len(unknown)} item(s) that are not in {data.source}: {unknown[:5]}")
    if not (s.exclude_flagged and flagged):
        return data
    keep = [i for i in data.item_ids.astype(str) if i not in flagged]
    if not keep:
        raise SpecError(f"exclude_flagged leaves no item of {data.source}: all {data.n_items} are flagged")
    return data.subset(items=keep)


def _prepare(posterior: Any, data: ResponseData, s: AuditSettings, *, full: ResponseData | None = None) -> _Run:
    """Check the posterior against the data (``full``: the whole data it was fitted to, when ``data`` leaves items
    out), extract its draws, build the scopes, resolve the target."""
    full = data if full is None else full
    post = posterior_dataset(posterior)
    recorded = recorded_checksum(posterior, post)
    if recorded is not None and recorded != full.checksum():
        raise FitError(
            f"the posterior records data checksum {recorded[:12]}... but {full.source} has {full.checksum()[:12]}...; "
            "this looks like a fit from a different data set"
        )
    if data is not full:  # the items left out leave the draws too
        kept = post["item"].to_index().astype(str).isin(data.item_ids.astype(str))
        post = post.isel(item=np.flatnonzero(kept))
    draws = extract_draws(post, data)
    if s.ability_dim is not None and s.ability_dim not in draws.dims:
        raise SpecError(
            f"ability_dim={s.ability_dim!r} is not an ability dimension of the fit ({draws.dims or 'one-dimensional'})"
        )
    scopes = build_scopes(data, draws, response_matrix(data), s.ability_dim)
    overall_ability = scopes[0].ability  # the "all" scope's ability (see the module docstring)
    range_ability = draws.ability if s.ability_dim is None else overall_ability
    tgt, range_rule = resolve_target(
        s.target, bins=s.bins, target_range=s.range, group=s.group, ability=range_ability, subjects=data.subject_ids
    )
    check_range_holds_subjects(tgt, overall_ability.mean(axis=0), list(data.subject_ids))
    n_samples, n_items = draws.difficulty.shape
    # edge gaps are reported again for the range without the default's margin (see irtbayes.auditing.gaps)
    inner_range = (
        (tgt.lo + EDGE_GAP_MARGIN, tgt.hi - EDGE_GAP_MARGIN) if tgt.hi - tgt.lo > 2 * EDGE_GAP_MARGIN else None
    )
    chunks = draw_chunks(n_samples, n_items)
    values, labels, ids, shift = _points(draws, data, scopes, s.graded_points)
    locations, ensemble_used, smoothing = _ensemble_locations(
        post,
        values,
        labels=labels,
        ids=ids,
        ensemble=s.ensemble,
        fixed_items=s.fixed_items,
        chunks=draw_chunks(n_samples, values.shape[1]),
        seed=s.seed,
        shift=shift,
    )
    return _Run(post, draws, scopes, tgt, range_rule, inner_range, chunks, locations, ensemble_used, smoothing)


#: Threads of the coverage pass (:func:`_coverage_pass`), at most.
COVERAGE_THREADS = 4


def _coverage_pass(run: _Run, s: AuditSettings) -> np.ndarray:
    """Coverage, DDM and gaps over every draw, appended to each scope; returns each item's bin counts.

    Chunks of draws go to :data:`~irtbayes.core.chains.WORKERS` threads, at most
    :data:`COVERAGE_THREADS` (the sorts and counts release the GIL), and are appended in their order, so the
    result does not depend on the threads."""
    draws, locations, tgt = run.draws, run.locations, run.target
    edges, weights, n_bins = tgt.edges_array, tgt.weights_array, tgt.n_bins
    n_items = run.n_items

    def chunk(sl: slice) -> tuple[np.ndarray, list[dict[str, Any]]]:
        own = bin_codes(draws.difficulty[sl], edges)  # each item's own difficulty: the fit's draws
        flat = (np.arange(n_items, dtype=np.int64)[None, :] * (n_bins + 2) + own).ravel()
        item_counts = np.bincount(flat, minlength=n_items * (n_bins + 2)).reshape(n_items, n_bins + 2)
        block = locations[sl]
        codes = own if locations is draws.difficulty else bin_codes(block, edges)
        found = []
        for scope in run.scopes:
            # single-precision sort (twice as fast); W1 and the gap move by < 1e-6 logits
            x = np.sort(block[:, scope.columns].astype(np.float32), axis=1)
            parts = gap_parts(x, tgt.lo, tgt.hi, presorted=True)
            values = {
                "counts": count_items(codes[:, scope.columns], n_bins),
                "shape_w1": ddm_shape_w1(x, edges, weights, presorted=True),
                "gap_width": parts.widest.width,
                "gap_lo": parts.widest.lo,
                "gap_hi": parts.widest.hi,
                "gap_edge": parts.widest.edge,
                "interior_gap": parts.interior,
                "edge_gap_low": parts.edge_low,
                "edge_gap_high": parts.edge_high,
            }
            if run.inner_range is not None:
                values["edge_gap_low_inner"], values["edge_gap_high_inner"] = edge_gaps(
                    x, *run.inner_range, presorted=True
                )
            found.append(values)
        return item_counts, found

    item_codes = np.zeros((n_items, n_bins + 2), dtype=np.int64)
    # at most COVERAGE_THREADS chunks at once: each holds tens of MB of codes and sorted copies while in flight
    with ThreadPoolExecutor(max(1, min(WORKERS, COVERAGE_THREADS, len(run.chunks)))) as pool:
        done = pool.map(chunk, run.chunks)
        for item_counts, found in tqdm(
            done, total=len(run.chunks), desc="audit: coverage and gaps", disable=not bars_shown(s.progress)
        ):
            item_codes += item_counts
            for scope, values in zip(run.scopes, found, strict=True):
                for name, value in values.items():
                    getattr(scope, name).append(value)
    return item_codes


def _leaderboard_pass(run: _Run, s: AuditSettings) -> np.ndarray:
    """Re-weighted accuracy and ranks over the thinned draws, appended to each scope; returns the draws used."""
    keep = _thin(run.n_samples, s.max_draws)
    rng = np.random.default_rng(s.seed)
    edges, weights = run.target.edges_array, run.target.weights_array
    blocks = []  # each block of draws: its rows, bin codes and bootstrap weights (drawn in the blocks' order)
    for sl in draw_chunks(len(keep), run.n_items):
        codes = bin_codes(run.draws.difficulty[keep[sl]], edges)
        blocks.append((keep[sl], codes, rng.standard_exponential(codes.shape) if s.resample_items else None))
    shown = bars_shown(s.progress)
    with tqdm(total=len(blocks) * len(run.scopes), desc="audit: leaderboard", disable=not shown) as bar:
        for scope in run.scopes:  # the scope's stacked responses made once, for every block
            stacked = StackedResponses.of(scope.responses)
            for rows, codes, g in blocks:
                racc = reweighted_accuracy(
                    codes[:, scope.items], stacked, weights, item_weights=None if g is None else g[:, scope.items]
                )
                scope.racc.append(racc)
                scope.ranks.append(draw_ranks(racc, tiebreak=scope.ability[rows][:, scope.subjects]))
                scope.ability_ranks.append(draw_ranks(scope.ability[rows][:, scope.subjects]))
                bar.update()
    return keep


def _information_pass(run: _Run, s: AuditSettings, theta: np.ndarray) -> dict[str, np.ndarray]:
    """Information, standard error, expected score and its slope per scope: (sample, grid, scope) draws."""
    draws = run.draws
    membership = np.zeros((run.n_items, len(run.scopes)))
    for j, scope in enumerate(run.scopes):
        membership[scope.items, j] = 1.0
    curves: dict[str, list[np.ndarray]] = {"info": [], "se": [], "score": [], "slope": []}
    keep_info = _thin(run.n_samples, s.information_draws)
    blocks = item_blocks(membership)
    chunks = draw_chunks(len(keep_info), run.n_items * s.grid_points)
    for sl in tqdm(chunks, desc="audit: information", disable=not bars_shown(s.progress)):
        rows = keep_info[sl]
        out = curves_by_blocks(
            theta,
            draws.difficulty[rows],
            None if draws.discrimination is None else draws.discrimination[rows],
            None if draws.guessing is None else draws.guessing[rows],
            blocks=blocks,
            thresholds=None if draws.thresholds is None else draws.thresholds[rows],
            graded=draws.graded,
        )
        for key in curves:
            curves[key].append(out[key])
    return {k: np.concatenate(v, axis=0) for k, v in curves.items()}


def _scope_tables(
    run: _Run, data: ResponseData, s: AuditSettings, theta: np.ndarray, curve_draws: dict[str, np.ndarray]
) -> dict[str, Any]:
    """The ``bins``, ``benchmarks``, ``ranking``, ``ahead`` and ``information`` tables, and each scope's
    saturation (under ``"saturation"``) for the items table."""
    bins_rows, bench_rows, rank_rows, info_rows = [], [], [], []
    saturation_by_scope: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    ahead_frame = pd.DataFrame()
    for j, scope in enumerate(run.scopes):
        cov = CoverageDraws.from_counts(np.concatenate(scope.counts, axis=0), len(scope.columns))
        gaps = GapDraws(
            width=np.concatenate(scope.gap_width),
            lo=np.concatenate(scope.gap_lo),
            hi=np.concatenate(scope.gap_hi),
            edge=np.concatenate(scope.gap_edge),
        )
        where = gap_location(gaps, run.target.edges_array)
        table = coverage_table(
            cov,
            edges=run.target.edges_array,
            target_weights=run.target.weights_array,
            ci_prob=s.ci_prob,
            min_items=s.min_items,
        )
        table.insert(0, "scope", scope.name)
        table.insert(0, "scope_kind", scope.kind)
        table["p_widest_gap_here"] = where.p_bins
        bins_rows.append(table)
        rk, sat, n_top = ranking_table(scope, data, s)
        saturation_by_scope[(scope.kind, scope.name)] = dict(sat) | {"items": scope.items}
        rank_rows.append(rk.sort_values("rank_mean", kind="stable"))
        if scope.kind == "all":
            ahead_frame = ahead_table(scope, data)
        info = pd.DataFrame({"scope_kind": scope.kind, "scope": scope.name, "theta": theta})
        for key in ("info", "se", "score", "slope"):
            for k, v in summarize(curve_draws[key][:, :, j], ci_prob=s.ci_prob).items():
                info[f"{key}_{k}"] = v
        info_rows.append(info)
        bench_rows.append(
            benchmark_row(
                scope, run.target, cov, gaps, where, sat, n_top, info, s.ci_prob, calibrated=_recalibrated(run, s)
            )
        )
    return {
        "bins": pd.concat(bins_rows, ignore_index=True),
        "benchmarks": pd.DataFrame(bench_rows),
        "ranking": pd.concat(rank_rows, ignore_index=True),
        "ahead": ahead_frame,
        "information": pd.concat(info_rows, ignore_index=True),
        "saturation": saturation_by_scope,
    }


def _recalibrated(run: _Run, s: AuditSettings) -> bool:
    """Whether the gap and DDM intervals are recalibrated: asked for, and on the deconvolved locations the
    recalibration was learned on (:mod:`irtbayes.auditing.recalibration`)."""
    return bool(s.calibrated_intervals) and run.ensemble == "deconvolved"


def _remedies(posterior: Any) -> list[dict[str, Any]]:
    """A fit's record of its remedies for divergences (``fit.sampler["remedies"]``); none for a bare posterior."""
    sampler = getattr(posterior, "sampler", None)
    return list(sampler.get("remedies") or []) if isinstance(sampler, dict) else []


def _recorded_settings(
    posterior: Any, data: ResponseData, s: AuditSettings, run: _Run, *, n_ranking: int, n_information: int
) -> dict[str, Any]:
    """``AuditResult.settings``: what the audit was made from and with (``summary.json``'s ``settings``); ``data`` is
    the whole data the fit was made from, whatever items the measures left out."""
    draws = run.draws
    flagged = s.flagged()
    counts = dict(sorted(pd.Series(list(flagged.values()), dtype=object).value_counts().items())) if flagged else {}
    left_out = s.exclude_flagged and bool(flagged)
    return {
        "source": data.source,
        # what the audit was made from, checked when a saved audit is read back with its fit (load_audit)
        "data_checksum": data.checksum(),
        "fit_identity": fit_identity(posterior, data) if left_out else draws_identity(draws, data),
        "item_flags": {str(k): int(v) for k, v in counts.items()},
        "excluded_items": sorted(flagged) if left_out else [],
        "fit_created": fit_created(posterior),
        "partial": bool(getattr(posterior, "partial", False) or getattr(posterior, "attrs", {}).get("partial", 0)),
        # None when the draws come without a fit's checks (a bare posterior): never read as a pass
        "converged": getattr(getattr(posterior, "diagnostics", None), "ok", None),
        # what sampling until converged did about divergences (irtbayes.fitting.fit.REMEDIES); "" when nothing
        "fit_remedy": remedy_text(_remedies(posterior)),
        "approximate": bool(getattr(posterior, "approximate", False)),
        "n_chains": draws.n_chains,
        "n_draws": draws.n_draws,
        "n_samples": run.n_samples,
        "n_samples_ranking": n_ranking,
        "n_samples_information": n_information,
        "max_draws": s.max_draws,
        "information_draws": s.information_draws,
        "resample_items": bool(s.resample_items),
        "seed": int(s.seed),
        "group": s.group_names(),
        "n_fixed_items": 0 if s.fixed_items is None else len(s.fixed_items),
        "min_items": s.min_items,
        "top_k": s.top_k,
        "group_threshold": float(s.group_threshold),
        "ahead_max_subjects": MAX_AHEAD_SUBJECTS,
        "grid_points": s.grid_points,
        "ability_dims": draws.dims,
        "ability_dim": s.ability_dim,
        "range_rule": run.range_rule,
        "ensemble": run.ensemble,
        "graded": draws.graded,
        "graded_points": s.graded_points if draws.graded else None,
        "deconvolution_smoothing": run.smoothing,
        "interval": "equal-tailed",
        "calibrated_intervals": _recalibrated(run, s),
        "interval_calibration": interval_calibration_note(s.calibrated_intervals, run.ensemble),
        "ddm_default": DDM_DEFINITIONS["ddm_w1"],
        "ddm_definitions": DDM_DEFINITIONS,
        "edge_gap_inner_range": None if run.inner_range is None else list(run.inner_range),
        "edge_gap_rule": EDGE_GAP_RULE,
    }


def _points(
    draws: PosteriorDraws, data: ResponseData, scopes: list[Scope], graded_points: str
) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray | None]:
    """The columns the ensemble measures read: (sample, column) draws, each column's benchmark label and item
    id, and (graded fits) its shift from the item's difficulty. One column per item, or with
    ``graded_points="thresholds"`` one per threshold of each graded item (``scope.points`` set to its columns).
    """
    labels = [UNLABELLED if pd.isna(b) else str(b) for b in data.items["benchmark"]]
    ids = data.item_ids.astype(str).to_numpy()
    if graded_points == "location":
        return draws.difficulty, labels, ids, draws.shift
    if draws.graded is None or draws.thresholds is None or draws.shift is None:
        raise SpecError("graded_points='thresholds' is for graded fits (GRM, GPCM); this fit is binary")
    item, boundary = np.nonzero(~np.isnan(draws.thresholds[0]))
    values = draws.thresholds[:, item, boundary]
    mean_threshold = draws.difficulty - draws.shift  # the model's difficulty: the mean of the thresholds
    for scope in scopes:
        scope.points = np.flatnonzero(np.isin(item, scope.items))
    return values, [labels[i] for i in item], ids[item], (values - mean_threshold[:, item]).astype(values.dtype)


def _ensemble_locations(
    post: xr.Dataset,
    values: np.ndarray,
    *,
    labels: list[str],
    ids: np.ndarray,
    ensemble: str,
    fixed_items: Sequence[str] | None,
    chunks: list[slice],
    seed: int,
    shift: np.ndarray | None = None,
) -> tuple[np.ndarray, str, dict[str, float]]:
    """The locations the ensemble measures use, the mode used, and the smoothing chosen per benchmark.

    ``values`` (sample, column) are the draws of the columns (items, or a graded fit's thresholds), ``labels``
    and ``ids`` each column's benchmark and item; ``shift``: a graded fit's column minus its item's difficulty
    per draw (see :class:`~irtbayes.auditing.deconvolve.PriorDraws`).
    """
    if ensemble not in ENSEMBLES:
        raise SpecError(f"ensemble must be one of {ENSEMBLES}, got {ensemble!r}")
    if ensemble == "draws":
        return values, "draws", {}
    prior = prior_draws(post, labels, shift=shift)
    if prior is None:
        if ensemble == "deconvolved":
            raise SpecError(
                "ensemble='deconvolved' needs the fit's difficulty prior (posterior variables 'difficulty_sd' and "
                "'difficulty_benchmark' or 'difficulty_mu'), which this posterior lacks; use ensemble='draws'"
            )
        log.info("the posterior has no difficulty hyperparameters: ensemble measures use the fit's draws")
        return values, "draws", {}
    fixed = set() if fixed_items is None else {str(i) for i in fixed_items}
    unknown = sorted(fixed - set(map(str, ids)))
    if unknown:
        raise SpecError(f"fixed_items: {len(unknown)} item(s) are not in the data: {unknown[:10]}")
    keep = ~np.isin(ids, list(fixed))
    names = sorted(set(labels))
    groups = [np.flatnonzero(keep & (np.asarray(labels) == name)) for name in names]
    locations, populations = deconvolved_locations(values, prior, groups, chunks=chunks, seed=seed)
    if not populations:  # every benchmark too small (or held as it is): nothing was deconvolved
        log.info("no benchmark has enough items to deconvolve: ensemble measures use the fit's draws")
        return values, "draws", {}
    smoothing = {names[g]: float(pop.smoothing) for g, pop in populations.items()}
    return locations, "deconvolved", smoothing


audit.__doc__ = f"{audit.__doc__}\n{textwrap.indent(settings_help(), '    ')}\n"
