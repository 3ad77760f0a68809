"""The report's size is bounded whatever the number of subjects, and degenerate data draw without warnings.

Hand-built posteriors (the truth plus known scatter), no sampling.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.figure import Figure
from PIL import Image

from irtbayes.auditing.ranking import (
    MAX_AHEAD_SUBJECTS,
    ahead_probability,
    indistinguishable_groups,
    ranked_groups,
    reweighted_accuracy,
)
from irtbayes.auditing.run import audit
from irtbayes.core import plots
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.result import Fit, fit_constant_data
from irtbayes.model.spec import ModelSpec
from irtbayes.reporting.report import TOP_SUBJECTS, build_report, report

#: Largest PNG side the report may hold: the plots' cap (13 x 14 inches) at 150 dpi, plus the tight box's margin.
MAX_PIXELS = int(max(plots.MAX_WIDTH, plots.MAX_HEIGHT) * 150) + 300


def hand_built_fit(data: ResponseData, ability: np.ndarray, difficulty: np.ndarray, *, scatter: float) -> Fit:
    """A 2PL Fit whose draws are the given values plus independent normal scatter (2 chains x 100 draws)."""
    rng = np.random.default_rng(0)
    shape = (2, 100)
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), ability + scatter * rng.standard_normal((*shape, len(ability)))),
            "difficulty": (
                ("chain", "draw", "item"),
                difficulty + 0.1 * rng.standard_normal((*shape, len(difficulty))),
            ),
            "discrimination": (
                ("chain", "draw", "item"),
                np.exp(0.05 * rng.standard_normal((*shape, len(difficulty)))),
            ),
        },
        coords={"subject": data.subject_ids.to_numpy(dtype=str), "item": data.item_ids.to_numpy(dtype=str)},
    )
    tree = xr.DataTree.from_dict({"posterior": posterior, "constant_data": fit_constant_data(data)})
    return Fit(
        idata=tree,
        spec=ModelSpec(kind="2pl", hierarchy="none"),
        sampler={"name": "hand-built", "chains": 2, "draws": 100},
        data_checksum=data.checksum(),
        diagnostics=check_convergence(tree),
    )


def png_sizes(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: Image.open(p).size for p in sorted((folder / "figures").glob("*.png"))}


@pytest.fixture(scope="module")
def many_subjects() -> tuple[ResponseData, Fit]:
    data, truth = simulate_responses(300, 84, kind="2pl", n_benchmarks=42, n_domains=2, missing=0.1, seed=21)
    return data, hand_built_fit(data, truth["ability"].values, truth["difficulty"].values, scatter=0.3)


def test_report_of_300_subjects_and_42_benchmarks_is_bounded_and_says_what_is_left_out(
    many_subjects: tuple[ResponseData, Fit], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, fitted = many_subjects
    # the PNGs (and the HTML that embeds them) are measured here, not the SVGs: those are left empty, rendering them
    # being a quarter of the time this report takes
    render = Figure.savefig

    def png_only(self: Figure, fname: object, *args: object, **kwargs: object) -> None:
        if kwargs.get("format") != "svg":
            render(self, fname, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "savefig", png_only)
    result = audit(fitted.idata, data, max_draws=100)
    ranking = result.ranking.loc[result.ranking["scope_kind"] == "all"]
    assert len(ranking) == 300 and result.ahead.shape == (MAX_AHEAD_SUBJECTS, MAX_AHEAD_SUBJECTS), result.ahead.shape
    # the kept P(ahead) block is the top of the order by mean rank
    assert list(result.ahead.index) == ranking.sort_values("rank_mean", kind="stable")["subject"].head(200).tolist()

    html = report(fitted, tmp_path / "report", data=data, audit=result)
    sizes = png_sizes(tmp_path / "report")
    assert {"leaderboard", "ahead", "item_person_map", "diagnostics"} <= {Path(n).stem for n in sizes}, sizes
    too_big = {name: px for name, px in sizes.items() if max(px) > MAX_PIXELS}
    assert not too_big, f"figures over {MAX_PIXELS} px: {too_big}"
    # the P(ahead) figure is the top-k block: about as tall as a 30-row figure, not 300
    assert sizes["ahead.png"][1] < 1500, sizes["ahead.png"]
    text = html.read_text(encoding="utf-8")
    assert len(text.encode()) < 3 * 2**20, f"report.html is {len(text.encode()) / 2**20:.2f} MiB"
    assert f"show the top {TOP_SUBJECTS} of 300 subjects" in text and "270 subjects are left out" in text, text[:2000]
    assert "Leaderboard: the top 30 of 300 subjects" in text
    assert "show the 40 of 42 benchmarks with the largest DDM; the other 2 are in tables/benchmarks.csv" in text
    # every subject stays in the table beside the report
    table = pd.read_csv(tmp_path / "report" / "tables" / "ranking.csv")
    assert (table["scope_kind"] == "all").sum() == 300


def test_ranked_groups_equal_the_groups_from_the_full_matrix() -> None:
    rng = np.random.default_rng(3)
    # 150 subjects in steps of ability: many groups, some large
    ability = np.repeat(np.arange(15.0), 10) * 0.4 + rng.normal(0, 0.1, 150)
    scores = ability + rng.normal(0, 0.5, (400, 150))
    ranks = (-scores).argsort(axis=1).argsort(axis=1) + 1
    for threshold in (0.6, 0.9, 0.99):
        expected = indistinguishable_groups(ahead_probability(ranks), ranks.mean(axis=0), threshold=threshold)
        got = ranked_groups(ranks, threshold=threshold)
        assert np.array_equal(got, expected), (threshold, got, expected)
        assert 1 < expected.max() < 150, expected.max()


def test_ahead_probability_of_a_subset_is_the_block_of_the_full_matrix() -> None:
    rng = np.random.default_rng(4)
    ranks = np.argsort(rng.normal(size=(300, 60)), axis=1).argsort(axis=1) + 1
    keep = np.array([5, 0, 17, 42])
    full = ahead_probability(ranks)
    np.testing.assert_array_equal(ahead_probability(ranks[:, keep]), full[np.ix_(keep, keep)])
    np.testing.assert_array_equal(ahead_probability(ranks, chunk=7), full)


def _png_size(ax: plots.Axes) -> tuple[int, int]:
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png", dpi=150, bbox_inches="tight")
    plt.close(ax.figure)
    buffer.seek(0)
    return Image.open(buffer).size


def test_every_plot_stays_bounded_with_thousands_of_rows() -> None:
    rng = np.random.default_rng(5)
    n = 2000
    names = [f"subject-with-a-rather-long-name-{j:05d}" for j in range(n)]
    ranking = pd.DataFrame({"subject": names, "mean": rng.normal(size=n)})
    ranking["low"], ranking["high"] = ranking["mean"] - 1, ranking["mean"] + 1
    ahead = pd.DataFrame(rng.random((400, 400)), index=names[:400], columns=names[:400])
    bins = pd.DataFrame(
        {"scope": np.repeat(names[:300], 4), "bin": np.tile(range(4), 300), "lo": np.tile(range(4), 300)}
    ).assign(hi=lambda t: t["lo"] + 1, share_mean=rng.random(1200), p_empty=rng.random(1200))
    diagnostics = pd.DataFrame(
        {
            "variable": rng.choice(["ability", "difficulty", "discrimination"], n),
            "r_hat": 1 + rng.random(n) / 50,
            "ess_bulk": rng.uniform(50, 900, n),
        }
    )
    sizes = {
        "leaderboard": _png_size(plots.plot_leaderboard(ranking, columns={"x": ("mean", "low", "high")})),
        "forest": _png_size(plots.plot_forest(ranking, mean="mean", low="low", high="high", label="subject")),
        "ahead": _png_size(plots.plot_ahead_matrix(ahead)),
        "coverage": _png_size(plots.plot_coverage_heatmap(bins)),
        "rhat_ess": _png_size(plots.plot_rhat_ess(diagnostics)),
    }
    too_big = {name: px for name, px in sizes.items() if max(px) > MAX_PIXELS}
    assert not too_big, f"over {MAX_PIXELS} px: {too_big}"


def _classic(case: str) -> ResponseData:
    """Five items in one benchmark and one domain.

    ``unlabelled``: 400 subjects, no benchmark or domain labels (as LSAT7 is read); ``one group``: labelled, four
    subjects who all gave the same responses, so that the posterior cannot order them.
    """
    if case == "one group":
        frame = pd.DataFrame(
            {"subject": np.repeat(["s1", "s2", "s3", "s4"], 5), "item": np.tile([f"i{k}" for k in range(5)], 4)}
        )
        frame["response"] = np.tile([1.0, 1.0, 0.0, 1.0, 0.0], 4)
        items = pd.DataFrame({"item": [f"i{k}" for k in range(5)], "benchmark": "tiny", "domain": "law"})
        return ResponseData.from_long(frame, items=items, source="one group")
    data, _ = simulate_responses(400, 5, kind="2pl", missing=0.0, seed=31)
    return data


@pytest.mark.parametrize("case", ["unlabelled", "one group"])
def test_degenerate_data_draw_every_figure_without_a_warning(case: str) -> None:
    data = _classic(case)
    ability = np.zeros(data.n_subjects) if case == "one group" else np.linspace(-1, 1, data.n_subjects)
    fitted = hand_built_fit(data, ability, np.linspace(-1, 1, 5), scatter=1.0)
    result = audit(fitted.idata, data, max_draws=100, range=(-2, 2))
    if case == "one group":
        assert set(result.ranking["group"]) == {1}, result.ranking[["subject", "group", "rank_mean"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = build_report(fitted, data, audit=result)
        # one parameter, every ESS the same: the log axis must not collapse
        single = pd.DataFrame({"variable": ["ability"], "r_hat": [1.0], "ess_bulk": [400.0]})
        plt.close(plots.plot_rhat_ess(single, ess_min=400).figure)
    expected = {"diagnostics", "item_person_map", "coverage", "ddm", "max_gap", "information", "leaderboard", "ahead"}
    assert expected <= set(doc.figures), sorted(doc.figures)


def test_reweighted_accuracy_in_blocks_of_draws_equals_one_block() -> None:
    rng = np.random.default_rng(6)
    codes = rng.integers(0, 7, size=(23, 40))  # 5 bins, codes 0 and 6 outside the range
    responses = np.where(rng.random((30, 40)) < 0.2, np.nan, rng.random((30, 40)).round())
    weights = rng.dirichlet(np.ones(5), size=23)
    g = rng.standard_exponential((23, 40))
    whole = reweighted_accuracy(codes, responses, weights, item_weights=g, block=23)
    for block in (1, 4, 10):
        np.testing.assert_array_equal(
            reweighted_accuracy(codes, responses, weights, item_weights=g, block=block), whole
        )
    assert np.isfinite(whole).mean() > 0.9, whole


def test_a_domain_has_one_colour_in_every_forest_whatever_the_row_order() -> None:
    from matplotlib.colors import to_hex

    table = pd.DataFrame(
        {
            "scope": ["b1", "b2", "b3", "b4"],
            "domain": ["math", "law", "math", "code"],
            "ddm": [0.1, 0.4, 0.3, 0.2],
            "gap": [0.9, 0.2, 0.5, 0.1],
        }
    )
    colours, markers = plots.domain_palette(table["domain"])
    assert list(colours) == ["code", "law", "math"] and len(set(colours.values())) == 3

    def drawn(mean: str, **palette: dict[str, str]) -> dict[str, str]:
        ax = plots.plot_forest(table.assign(lo=table[mean] - 0.05, hi=table[mean] + 0.05), mean=mean, low="lo",
                               high="hi", **palette)  # fmt: skip
        rows = table.sort_values(mean)
        seen = [to_hex(c) for c in ax.collections[0].get_colors()]  # the interval lines, one per row in order
        plt.close(ax.figure)
        return dict(zip(rows["domain"], seen, strict=True))

    # sorted by DDM the first row is math, sorted by gap it is code: on their own the mappings differ
    assert drawn("ddm") != drawn("gap")
    shared = {"colours": colours, "markers": markers}
    assert drawn("ddm", **shared) == drawn("gap", **shared) == {d: to_hex(c) for d, c in colours.items()}
