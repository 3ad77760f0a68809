"""The whole audit on hand-built posteriors: planted gaps, real uncertainty, table schemas, errors, output files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.auditing.coverage import bin_codes, count_items
from irtbayes.auditing.folder import save_audit
from irtbayes.auditing.run import audit
from irtbayes.auditing.tables import rank_interval
from irtbayes.auditing.targets import weights_target
from irtbayes.core.errors import FitError, SpecError
from irtbayes.data.responses import ResponseData

# Benchmark A: items every 0.1 from -1.95 to 0.25 and from 1.25 to 1.95, so (0.25, 1.25) is empty and the
# bins [0.4, 0.8) and [0.8, 1.2) of the range [-2, 2] in 10 bins hold nothing. Benchmark B: no hole.
A_ITEMS = np.round(np.concatenate([np.arange(-1.95, 0.26, 0.1), np.arange(1.25, 1.96, 0.1)]), 2)
B_ITEMS = np.round(np.arange(-1.95, 1.96, 0.1), 2)
SUBJECT_ABILITY = np.linspace(-1.5, 1.5, 8)


def make_data(
    difficulty: np.ndarray,
    ability: np.ndarray,
    *,
    benchmarks: list[str],
    domains: list[str] | None = None,
    missing: float = 0.0,
    seed: int = 0,
) -> ResponseData:
    """Rasch responses of subjects with ``ability`` to items with ``difficulty``, labelled by benchmark."""
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    y[rng.uniform(size=y.shape) < missing] = np.nan
    subjects = [f"s{j:02d}" for j in range(len(ability))]
    items = [f"q{i:03d}" for i in range(len(difficulty))]
    frame = pd.DataFrame(
        {"subject": np.repeat(subjects, len(items)), "item": np.tile(items, len(subjects)), "response": y.ravel()}
    )
    meta = pd.DataFrame({"item": items, "benchmark": benchmarks, "domain": domains or [None] * len(items)})
    return ResponseData.from_long(frame.dropna(), items=meta, source="hand-built")


def fake_posterior(
    data: ResponseData,
    difficulty: np.ndarray,
    ability: np.ndarray,
    *,
    scatter: float = 0.0,
    ability_scatter: float = 0.2,
    chains: int = 2,
    draws: int = 50,
    seed: int = 1,
    discrimination: float | None = 1.0,
    guessing: float | None = None,
) -> xr.Dataset:
    """Posterior draws: the given values plus independent normal scatter per draw."""
    rng = np.random.default_rng(seed)
    shape = (chains, draws)
    n, j = len(difficulty), len(ability)
    variables = {
        "difficulty": (("chain", "draw", "item"), difficulty + scatter * rng.normal(size=(*shape, n))),
        "ability": (("chain", "draw", "subject"), ability + ability_scatter * rng.normal(size=(*shape, j))),
    }
    if discrimination is not None:
        variables["discrimination"] = (("chain", "draw", "item"), np.full((*shape, n), discrimination))
    if guessing is not None:
        variables["guessing"] = (("chain", "draw", "item"), np.full((*shape, n), guessing))
    return xr.Dataset(
        variables,
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            "item": data.item_ids.to_numpy(dtype=str),
            "subject": data.subject_ids.to_numpy(dtype=str),
        },
    )


@pytest.fixture(scope="module")
def two_benchmarks() -> tuple[ResponseData, np.ndarray]:
    difficulty = np.concatenate([A_ITEMS, B_ITEMS])
    labels = ["A"] * len(A_ITEMS) + ["B"] * len(B_ITEMS)
    domains = ["maths"] * len(A_ITEMS) + ["code"] * len(B_ITEMS)
    return make_data(difficulty, SUBJECT_ABILITY, benchmarks=labels, domains=domains), difficulty


# ---------------------------------------------------------------------------------------------- planted gap
def test_planted_gap_is_found_with_its_location_and_empty_bins(two_benchmarks: tuple[ResponseData, np.ndarray]) -> None:
    data, difficulty = two_benchmarks
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY)
    result = audit(post, data, range=(-2, 2), bins=10, resample_items=False)
    gap = result.summary_dict()["benchmarks"]["A"]["max_gap"]
    assert gap["mean"] == pytest.approx(1.0) and gap["ci_low"] == pytest.approx(1.0), gap
    assert gap["interval"] == pytest.approx([0.25, 1.25]) and gap["modal_bin"] == 6 and gap["p_modal_bin"] == 1.0, gap
    bins = result.bins.set_index(["scope", "bin"])
    assert bins.loc[("A", 6), "p_empty"] == 1.0 and bins.loc[("A", 7), "p_empty"] == 1.0
    assert bins.loc[("A", 5), "p_empty"] == 0.0 and bins.loc[("B", 6), "p_empty"] == 0.0
    assert bins.loc[("A", 6), "p_widest_gap_here"] == 1.0
    b_gap = result.summary_dict()["benchmarks"]["B"]["max_gap"]["mean"]
    assert b_gap == pytest.approx(0.1), f"B has no hole; its widest gap should be one spacing, got {b_gap}"
    assert (
        result.summary_dict()["benchmarks"]["A"]["ddm"]["mean"]
        > result.summary_dict()["benchmarks"]["B"]["ddm"]["mean"]
    )
    # the planted hole lies between two items; the edge gaps are the half spacing at either end
    a = result.summary_dict()["benchmarks"]["A"]
    assert a["max_gap"]["kind"] == "interior" and a["max_gap"]["p_edge_low"] == 0.0, a["max_gap"]
    assert a["interior_gap"]["mean"] == pytest.approx(1.0), a["interior_gap"]
    assert a["edge_gap_low"]["mean"] == pytest.approx(0.05) and a["edge_gap_high"]["mean"] == pytest.approx(0.05)
    # [L + 0.5, U - 0.5] = [-1.5, 1.5]: the nearest items are -1.45 and 1.45
    assert a["edge_gap_low"]["inner"]["mean"] == pytest.approx(0.05), a["edge_gap_low"]
    assert a["edge_gap_high"]["inner"]["mean"] == pytest.approx(0.05), a["edge_gap_high"]
    text = result.to_text()
    assert "A: the widest gap is 1.00 [1.00, 1.00]" in text and "[0.25, 1.25]" in text, text
    assert "[0.25, 1.25] (between two items" in text, text


def test_items_outside_the_range_count_in_the_headline_ddm_and_edge_gaps_are_named() -> None:
    # S: 80 of 100 items below L = -2, 20 well spread inside; E: items from -0.95 up, nothing near L
    spread = np.round(np.arange(-1.9, 2.0, 0.2), 2)
    s_items = np.concatenate([np.linspace(-4.0, -2.5, 80), spread])
    e_items = np.round(np.arange(-0.95, 1.96, 0.1), 2)
    difficulty = np.concatenate([s_items, e_items])
    labels = ["S"] * len(s_items) + ["E"] * len(e_items)
    data = make_data(difficulty, SUBJECT_ABILITY, benchmarks=labels)
    result = audit(fake_posterior(data, difficulty, SUBJECT_ABILITY), data, range=(-2, 2), resample_items=False)
    summary = result.summary_dict()["benchmarks"]
    sat = summary["S"]
    # in range S is as spread as it gets (shape W1 = 1 / (4 * 20)); the headline counts the 80% outside
    # (W1 is computed from difficulties sorted in single precision: within 1e-6)
    assert sat["ddm_shape_w1"]["mean"] == pytest.approx(1 / 80, abs=1e-6), sat["ddm_shape_w1"]
    assert sat["ddm_shape_tv"]["mean"] == pytest.approx(0.0, abs=1e-12), sat["ddm_shape_tv"]
    assert sat["ddm"]["mean"] == pytest.approx(0.8 + 0.2 / 80, abs=1e-6), sat["ddm"]
    assert sat["ddm_tv"]["mean"] == pytest.approx(0.5 * (10 * 0.08 + 0.8)), sat["ddm_tv"]
    bench = result.benchmarks.set_index("scope")
    assert bench.loc["S", "ddm_w1_mean"] > bench.loc["E", "ddm_w1_mean"], bench[["ddm_w1_mean", "ddm_shape_w1_mean"]]
    edge = summary["E"]
    assert edge["max_gap"]["kind"] == "low edge" and edge["max_gap"]["p_edge_low"] == 1.0, edge["max_gap"]
    assert edge["max_gap"]["mean"] == pytest.approx(1.05) and edge["edge_gap_low"]["mean"] == pytest.approx(1.05)
    assert edge["interior_gap"]["mean"] == pytest.approx(0.1) and edge["edge_gap_high"]["mean"] == pytest.approx(0.05)
    # half a logit of that edge gap is the range's margin: from L + 0.5 = -1.5 the first item is 0.55 away
    assert edge["edge_gap_low"]["inner"]["mean"] == pytest.approx(0.55), edge["edge_gap_low"]
    assert "an edge gap, set by where the range ends" in result.to_text()
    assert result.settings["edge_gap_inner_range"] == pytest.approx([-1.5, 1.5])


def test_wider_scatter_makes_the_planted_gap_less_certain(two_benchmarks: tuple[ResponseData, np.ndarray]) -> None:
    data, difficulty = two_benchmarks
    results = {}
    for scatter in (0.03, 0.3):
        post = fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=scatter, draws=400, seed=5)
        results[scatter] = audit(post, data, range=(-2, 2), bins=10, max_draws=50)
    p_empty = {s: r.bins.set_index(["scope", "bin"]).loc[("A", 6), "p_empty"] for s, r in results.items()}
    width = {
        s: r.summary_dict()["benchmarks"]["A"]["max_gap"]["ci_high"]
        - r.summary_dict()["benchmarks"]["A"]["max_gap"]["ci_low"]
        for s, r in results.items()
    }
    assert p_empty[0.3] < p_empty[0.03], f"P(bin empty) by scatter: {p_empty}"
    assert p_empty[0.03] == 1.0, p_empty
    assert width[0.3] > width[0.03] + 0.1, f"gap interval width by scatter: {width}"


# ---------------------------------------------------------------------------------------------- re-weighting
def test_reweighted_equals_raw_when_the_target_is_the_benchmarks_own_distribution() -> None:
    rng = np.random.default_rng(4)
    difficulty = rng.uniform(-1.9, 1.9, 60)
    data = make_data(difficulty, SUBJECT_ABILITY, benchmarks=["A"] * 60, seed=3)
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY)  # no scatter: the bins are known
    edges = np.linspace(-2, 2, 9)
    counts = count_items(bin_codes(difficulty[None, :], edges), 8)[0, 1:-1]
    target = weights_target(counts, lo=-2, hi=2)
    result = audit(post, data, target=target, resample_items=False)
    ranking = result.ranking
    np.testing.assert_allclose(ranking["reweighted_mean"], ranking["raw_accuracy"], atol=1e-12)
    np.testing.assert_allclose(ranking["reweighted_ci_low"], ranking["raw_accuracy"], atol=1e-12)
    # and with the item bootstrap the intervals widen around it
    boot = audit(post, data, target=target, seed=1).ranking
    assert (boot["reweighted_ci_high"] - boot["reweighted_ci_low"]).min() > 0.02
    assert np.abs(boot["reweighted_mean"] - boot["raw_accuracy"]).max() < 0.05


def test_ranking_table_has_permutation_ranks_groups_and_ahead_matrix(
    two_benchmarks: tuple[ResponseData, np.ndarray],
) -> None:
    data, difficulty = two_benchmarks
    result = audit(fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1), data, range=(-2, 2))
    overall = result.ranking.loc[result.ranking["scope_kind"] == "all"]
    assert sorted(overall["subject"]) == sorted(data.subject_ids)
    assert overall["rank_mean"].sum() == pytest.approx(8 * 9 / 2)
    assert (overall["rank_ci_low"] <= overall["rank_mean"]).all() and (
        overall["rank_mean"] <= overall["rank_ci_high"]
    ).all()
    assert overall["group"].iloc[0] == 1 and overall["group"].is_monotonic_increasing
    # ability ranks: per draw by the scope's ability, summarised by the same quantile rule as the re-weighted ranks
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1)
    ability = post["ability"].stack(sample=("chain", "draw")).transpose("sample", "subject")
    ability = ability.sel(subject=list(overall["subject"])).to_numpy()
    ranks = (-ability).argsort(axis=1).argsort(axis=1) + 1
    np.testing.assert_allclose(overall["ability_rank_mean"], ranks.mean(axis=0))
    low, high = rank_interval(ranks, ci_prob=0.9)
    np.testing.assert_array_equal(overall["ability_rank_ci_low"], low)
    np.testing.assert_array_equal(overall["ability_rank_ci_high"], high)
    assert ((ranks >= low).mean(axis=0) >= 0.95).all() and ((ranks <= high).mean(axis=0) >= 0.95).all()
    assert list(low[:3]) == [int(np.quantile(ranks[:, j], 0.05, method="lower")) for j in range(3)]
    ahead = result.ahead
    assert list(ahead.index) == list(overall["subject"]) and ahead.shape == (8, 8)
    off = ahead.to_numpy() + ahead.to_numpy().T
    np.testing.assert_allclose(off[~np.eye(8, dtype=bool)], 1.0)  # P(A ahead of B) + P(B ahead of A) = 1


# ---------------------------------------------------------------------------------------------- schemas
def test_table_schemas_and_scopes(two_benchmarks: tuple[ResponseData, np.ndarray]) -> None:
    data, difficulty = two_benchmarks
    result = audit(fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1), data, ci_prob=0.8, bins=5)
    stats = ["mean", "sd", "ci_low", "ci_high"]
    assert list(result.bins.columns) == [
        "scope_kind", "scope", "bin", "lo", "hi", "target_weight",
        *[f"count_{s}" for s in stats], *[f"share_{s}" for s in stats], *[f"share_in_range_{s}" for s in stats],
        "p_empty", "p_fewer_than_m", "p_widest_gap_here",
    ]  # fmt: skip
    assert list(result.ranking.columns) == [
        "scope_kind", "scope", "subject", "n_responses", "raw_accuracy", "raw_rank",
        *[f"reweighted_{s}" for s in stats], *[f"ability_{s}" for s in stats],
        "rank_mean", "rank_ci_low", "rank_ci_high", "ability_rank_mean", "ability_rank_ci_low",
        "ability_rank_ci_high", "group",
    ]  # fmt: skip
    assert list(result.information.columns) == [
        "scope_kind",
        "scope",
        "theta",
        *[f"{q}_{s}" for q in ("info", "se", "score", "slope") for s in stats],
    ]
    expected = {
        "n_items",
        "n_subjects",
        "raw_accuracy",
        "gap_lo",
        "gap_hi",
        "gap_modal_bin",
        "gap_p_modal_bin",
        "top_k",
        "saturated_share",
        "unseparating_share",
        "info_peak_theta",
        "moves_lo",
        "moves_hi",
    }
    expected |= {"gap_kind", "gap_p_edge_low", "gap_p_edge_high"}
    for q in (
        *("mass_below", "mass_above", "ddm_w1", "ddm_tv", "ddm_shape_w1", "ddm_shape_tv", "max_gap"),
        *("interior_gap", "edge_gap_low", "edge_gap_high", "edge_gap_low_inner", "edge_gap_high_inner"),
        *("empty_bins", "unrepresented"),
    ):
        expected |= {f"{q}_{s}" for s in stats}
    assert expected <= set(result.benchmarks.columns), expected - set(result.benchmarks.columns)
    scopes = list(zip(result.benchmarks["scope_kind"], result.benchmarks["scope"], strict=True))
    assert scopes == [("all", "all"), ("benchmark", "A"), ("benchmark", "B"), ("domain", "maths"), ("domain", "code")]
    assert len(result.bins) == 5 * 5 and len(result.ranking) == 5 * 8
    for table in result.tables().values():
        assert table.attrs["ci_prob"] == 0.8 and table.attrs["target"]["bins"] == 5
    shares = result.bins.groupby("scope")["share_mean"].sum()
    below_above = result.benchmarks.set_index("scope")[["mass_below_mean", "mass_above_mean"]].sum(axis=1)
    np.testing.assert_allclose(shares + below_above.loc[shares.index], 1.0)
    items = result.items
    assert list(items["item"]) == list(data.item_ids) and {"difficulty_mean", "p_below", "modal_bin"} <= set(items)
    summary = result.summary_dict()
    assert set(summary) >= {"ci_prob", "range", "bins", "edges", "target_weights", "target", "overall", "benchmarks"}
    assert set(summary["overall"]["max_gap"]) >= {"mean", "ci_low", "ci_high", "interval", "kind", "p_edge_low"}
    for key in ("ddm", "ddm_tv", "ddm_shape_w1", "ddm_shape_tv", "interior_gap", "edge_gap_low", "edge_gap_high"):
        assert set(summary["benchmarks"]["A"][key]) >= {"mean", "ci_low", "ci_high"}, (key, summary["benchmarks"]["A"])
    assert set(summary["benchmarks"]["A"]["edge_gap_low"]["inner"]) >= {"mean", "ci_low", "ci_high"}
    json.dumps(summary, allow_nan=False)


def test_inputs_datatree_fit_like_1pl_3pl_and_multidimensional(two_benchmarks: tuple[ResponseData, np.ndarray]) -> None:
    data, difficulty = two_benchmarks
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1)
    base = audit(post, data, range=(-2, 2))
    tree = xr.DataTree.from_dict({"posterior": post})
    pd.testing.assert_frame_equal(audit(tree, data, range=(-2, 2)).benchmarks, base.benchmarks)

    class FitLike:
        posterior = post

    pd.testing.assert_frame_equal(audit(FitLike(), data, range=(-2, 2)).bins, base.bins)
    no_a = audit(post.drop_vars("discrimination"), data, range=(-2, 2))
    pd.testing.assert_frame_equal(no_a.information, base.information)  # 1PL: a = 1
    guess = audit(fake_posterior(data, difficulty, SUBJECT_ABILITY, guessing=0.25), data, range=(-2, 2))
    score_low = guess.information.loc[guess.information["scope"] == "all", "score_mean"].min()
    assert score_low > 0.25, f"3PL expected score must stay above the guessing floor, got {score_low}"

    rng = np.random.default_rng(9)
    ability_2d = np.stack([SUBJECT_ABILITY, -SUBJECT_ABILITY], axis=1)  # (subject, dim)
    multi = (
        post.drop_vars("ability")
        .assign(ability=(("chain", "draw", "subject", "dim"), ability_2d + 0.1 * rng.normal(size=(2, 50, 8, 2))))
        .assign_coords(dim=["maths", "code"])
    )
    result = audit(multi, data, range=(-2, 2))
    rk = result.ranking.set_index(["scope", "subject"])
    assert rk.loc[("maths", "s07"), "ability_mean"] == pytest.approx(1.5, abs=0.05)
    assert rk.loc[("code", "s07"), "ability_mean"] == pytest.approx(-1.5, abs=0.05)
    assert rk.loc[("all", "s07"), "ability_mean"] == pytest.approx(0.0, abs=0.05)
    forced = audit(multi, data, range=(-2, 2), ability_dim="code").ranking.set_index(["scope", "subject"])
    assert forced.loc[("all", "s07"), "ability_mean"] == pytest.approx(-1.5, abs=0.05)


def test_default_range_group_target_file_target_and_thinning(
    two_benchmarks: tuple[ResponseData, np.ndarray], tmp_path: Path
) -> None:
    data, difficulty = two_benchmarks
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1, draws=300)
    result = audit(post, data, max_draws=40, information_draws=20)
    pooled = post["ability"].to_numpy().ravel()
    lo, hi = np.quantile(pooled, [0.025, 0.975])
    assert result.target.lo == pytest.approx(np.floor((lo - 0.5) * 10) / 10), (result.target.lo, lo)
    assert result.target.hi == pytest.approx(np.ceil((hi + 0.5) * 10) / 10), (result.target.hi, hi)
    assert result.settings["n_samples"] == 600 and result.settings["n_samples_ranking"] == 40
    assert result.settings["n_samples_information"] == 20

    grouped = audit(post, data, range=(-2, 2), bins=4, group=["s06", "s07"])
    assert grouped.target.kind == "group" and grouped.target.weights[-1] > 0.6, grouped.target.weights

    path = tmp_path / "target.csv"
    pd.DataFrame({"lo": [-2, 0], "hi": [0, 2], "weight": [1, 3]}).to_csv(path, index=False)
    from_file = audit(post, data, target=path)
    assert from_file.target.weights == pytest.approx((0.25, 0.75)) and from_file.target.kind == "file"
    assert audit(post, data, target=[1, 1, 2], range=(-2, 2)).target.n_bins == 3


# ---------------------------------------------------------------------------------------------- bad input
def test_bad_input_gives_clear_errors(two_benchmarks: tuple[ResponseData, np.ndarray]) -> None:
    data, difficulty = two_benchmarks
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY)
    with pytest.raises(SpecError, match="holds no subject"):
        audit(post, data, range=(3, 5))
    with pytest.raises(SpecError, match="at least 1"):
        audit(post, data, bins=0)
    with pytest.raises(SpecError, match="sum to a positive"):
        audit(post, data, target=[0, 0, 0], range=(-2, 2))
    with pytest.raises(SpecError, match="L < U"):
        audit(post, data, range=(1, -1))
    with pytest.raises(SpecError, match="ci_prob"):
        audit(post, data, ci_prob=1.5)
    with pytest.raises(SpecError, match="unknown subject"):
        audit(post, data, group=["nobody"])
    renamed = post.assign_coords(item=[f"x{i}" for i in range(post.sizes["item"])])
    with pytest.raises(FitError, match="different data set"):
        audit(renamed, data)
    fewer = post.isel(subject=slice(0, 5))
    with pytest.raises(FitError, match=r"subject ids do not match.*different data set"):
        audit(fewer, data)
    broken = post.copy()
    broken["difficulty"][0, 0, 0] = np.nan
    with pytest.raises(FitError, match="non-finite"):
        audit(broken, data)
    with pytest.raises(FitError, match="no 'difficulty'"):
        audit(post.drop_vars("difficulty"), data)
    stamped = post.assign_attrs(data_checksum="0" * 64)
    with pytest.raises(FitError, match="checksum"):
        audit(stamped, data)


def test_item_order_in_the_posterior_does_not_matter(two_benchmarks: tuple[ResponseData, np.ndarray]) -> None:
    data, difficulty = two_benchmarks
    post = fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1)
    shuffled = post.isel(item=np.random.default_rng(0).permutation(post.sizes["item"]))
    pd.testing.assert_frame_equal(audit(shuffled, data, range=(-2, 2)).items, audit(post, data, range=(-2, 2)).items)


# ---------------------------------------------------------------------------------------------- writing
def test_save_audit_writes_every_file_and_never_half(
    two_benchmarks: tuple[ResponseData, np.ndarray], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, difficulty = two_benchmarks
    result = audit(fake_posterior(data, difficulty, SUBJECT_ABILITY, scatter=0.1), data, range=(-2, 2))
    out = save_audit(result, tmp_path / "audit")
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [
            "summary.json",
            "audit.txt",
            "target.csv",
            "bins.csv",
            "benchmarks.csv",
            "ranking.csv",
            "ahead.csv",
            "information.csv",
            "items.csv",
        ]
    ), names
    summary = json.loads((out / "summary.json").read_text())
    assert summary["converged"] is None, "bare draws carry no convergence checks: never recorded as a pass"
    assert summary["benchmarks"]["A"]["max_gap"]["interval"] == pytest.approx(
        result.summary_dict()["benchmarks"]["A"]["max_gap"]["interval"]
    )
    bins = pd.read_csv(out / "bins.csv")
    assert len(bins) == len(result.bins) and list(bins.columns) == list(result.bins.columns)
    before = (out / "summary.json").read_text()

    def boom(self: object) -> str:
        raise RuntimeError("interrupted while preparing the text")

    monkeypatch.setattr(type(result), "to_text", boom)
    with pytest.raises(RuntimeError):
        save_audit(result, out)
    assert (out / "summary.json").read_text() == before
    assert sorted(p.name for p in out.iterdir()) == names, "temporary files were left behind"


def test_unlabelled_items_and_several_conditions() -> None:
    items = [f"q{i}" for i in range(6)]
    rows = []
    for j, subject in enumerate(["a", "b", "c"]):
        for i, item in enumerate(items):
            for condition, shift in (("plain", 0), ("shuffled", 1)):
                rows.append((subject, item, condition, float((i + j + shift) % 2)))
    frame = pd.DataFrame(rows, columns=["subject", "item", "condition", "response"])
    data = ResponseData.from_long(frame, condition="condition", source="conditions")
    difficulty = np.linspace(-1, 1, 6)
    ability = np.array([-0.5, 0.0, 0.5])
    result = audit(fake_posterior(data, difficulty, ability), data, range=(-1.5, 1.5), bins=3)
    assert list(result.benchmarks["scope_kind"]) == ["all"] and result.summary_dict()["benchmarks"] == {}
    # every (subject, item) is 1 under one condition and 0 under the other: averaged, accuracy 0.5
    np.testing.assert_allclose(result.ranking["raw_accuracy"], 0.5)
