"""The result objects' convenience methods: ``summary()`` and ``to_dataframe()`` give DataFrames with the
documented columns and values that agree with the draws; ``plot_*`` return matplotlib Axes (and draw on a
given one). Hand-built posteriors only: no sampling."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.axes import Axes

from irtbayes.auditing.run import audit
from irtbayes.core.errors import SpecError
from irtbayes.core.summaries import posterior_summary, summary_columns
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.scoring import score
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.diagnostics.verdict import DIAGNOSTIC_COLUMNS
from irtbayes.fitting.result import Fit


@pytest.fixture(scope="module")
def simulated() -> tuple[object, xr.Dataset, Fit]:
    data, truth = simulate_responses(40, 60, n_benchmarks=3, missing=0.0, seed=11)
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=200, seed=12), data)
    return data, truth, fit


def test_fit_summary_has_one_row_per_parameter_with_arviz_columns(simulated) -> None:
    _, _, fit = simulated
    table = fit.summary()
    assert list(table.columns) == ["variable", "index", *summary_columns(0.9)]
    n_expected = sum(
        int(np.prod([fit.posterior[v].sizes[d] for d in fit.posterior[v].dims[2:]])) for v in fit.posterior.data_vars
    )
    assert len(table) == n_expected
    row = table.loc["difficulty[item00007]"]
    draws = fit.posterior["difficulty"].sel(item="item00007").values.ravel()
    assert row["mean"] == pytest.approx(draws.mean())
    assert row["sd"] == pytest.approx(draws.std(ddof=1))
    assert row["eti90_lb"] == pytest.approx(np.quantile(draws, 0.05))
    assert row["eti90_ub"] == pytest.approx(np.quantile(draws, 0.95))
    # independent draws around the truth: converged by every measure
    assert table["r_hat"].max() < 1.05 and table["ess_bulk"].min() > 100, table[["r_hat", "ess_bulk"]].describe()
    assert table.attrs["ci_prob"] == 0.9
    assert fit.summary(var_names=["ability"], ci_prob=0.5)["variable"].unique().tolist() == ["ability"]
    with pytest.raises(SpecError, match="no posterior variable"):
        fit.summary(var_names=["nope"])


def test_fit_summary_r_hat_sees_a_stuck_chain() -> None:
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 300, 2))
    draws[1] += 5.0  # the second chain sits elsewhere
    posterior = xr.Dataset({"ability": (("chain", "draw", "subject"), draws)}, coords={"subject": ["a", "b"]})
    table = posterior_summary(posterior)
    assert (table["r_hat"] > 1.5).all(), table


def test_fit_to_dataframe_holds_every_draw(simulated) -> None:
    _, _, fit = simulated
    draws = fit.to_dataframe(var_names=["difficulty", "ability"])
    assert draws.shape == (400, 100)
    assert draws.index.names == ["chain", "draw"]
    expected = fit.posterior["ability"].sel(subject="subject003").values.ravel()
    np.testing.assert_array_equal(draws["ability[subject003]"].to_numpy(), expected)


def test_fit_plots_return_axes_and_use_the_given_one(simulated) -> None:
    _, _, fit = simulated
    for name, kwargs in [
        ("plot_item_person_map", {}),
        ("plot_forest", {"var_name": "discrimination"}),
        ("plot_forest", {"var_name": "ability"}),
        ("plot_rhat_ess", {}),
        ("plot_item_curves", {"items": ["item00000", "item00001", "item00002"]}),
    ]:
        _fig, ax = plt.subplots()
        assert getattr(fit, name)(ax=ax, **kwargs) is ax, name
        assert isinstance(getattr(fit, name)(**kwargs), Axes), name
        plt.close("all")
    ax = fit.plot_forest(var_name="difficulty", max_rows=25)
    assert len(ax.get_yticklabels()) == 25 and "25 of 60" in ax.get_title()
    assert len(fit.plot_item_curves(items=["item00000", "item00001"]).get_lines()) == 2
    with pytest.raises(SpecError, match="guessing"):
        fit.plot_forest(var_name="guessing")


def test_diagnostics_summary_is_one_row_per_variable(simulated) -> None:
    _, _, fit = simulated
    diag = fit.diagnostics
    table = diag.summary()
    assert list(table.columns) == list(DIAGNOSTIC_COLUMNS)
    assert set(table["variable"]) >= {"ability", "difficulty", "discrimination"}
    row = table.set_index("variable").loc["difficulty"]
    assert row["size"] == 60 and row["n_checked"] == 60
    assert row["max_r_hat"] == pytest.approx(fit.summary(var_names=["difficulty"])["r_hat"].max())
    assert table.attrs["ok"] is diag.ok and diag.ok is False  # no sampler statistics: the fit cannot pass
    per_parameter = diag.to_dataframe()
    assert list(per_parameter.columns) == ["variable", "index", "r_hat", "ess_bulk", "ess_tail"]
    assert per_parameter["r_hat"].max() == pytest.approx(diag.max_rhat)
    assert isinstance(diag.plot_rhat_ess(), Axes)
    assert "NOT converged" in diag.to_text()


def test_diagnostics_summary_ok_per_variable() -> None:
    rng = np.random.default_rng(0)
    clean = rng.normal(size=(4, 500, 2))  # independent draws: r-hat near 1, ESS near 2000
    with_nan = rng.normal(size=(4, 500, 2))
    with_nan[0, 5, 1] = np.nan
    stuck = rng.normal(size=(4, 500, 2))
    stuck[3] += 4.0
    posterior = xr.Dataset(
        {name: (("chain", "draw", "item"), v) for name, v in [("clean", clean), ("nan", with_nan), ("stuck", stuck)]}
    )
    table = check_convergence(xr.DataTree.from_dict({"posterior": posterior})).summary().set_index("variable")
    assert table.loc["clean", "ok"] and not table.loc["nan", "ok"] and not table.loc["stuck", "ok"], table


def test_loaded_diagnostics_say_where_per_parameter_values_are() -> None:
    draws = np.random.default_rng(0).normal(size=(4, 200, 2))
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"difficulty": (("chain", "draw", "item"), draws)})})
    diag = check_convergence(tree)
    restored = type(diag).from_dict(diag.to_dict())
    assert restored.summary().equals(diag.summary())
    with pytest.raises(SpecError, match=r"Fit\.summary"):
        restored.to_dataframe()


def test_scores_methods(simulated) -> None:
    data, _, fit = simulated
    subjects = ["subject000", "subject001", "subject002"]
    scores = score(fit, data.subset(subjects=subjects), n_draws=100, seed=1)
    table = scores.summary()
    assert list(table.columns) == [
        "subject",
        "n_responses",
        "ability_mean",
        "ability_sd",
        "ability_ci_low",
        "ability_ci_high",
        "ci_prob",
    ]
    assert table["subject"].tolist() == subjects and (table["n_responses"] == 60).all()
    draws = scores.to_dataframe()
    assert list(draws.columns) == [f"ability[{s}]" for s in subjects] and len(draws) == 100
    assert draws["ability[subject001]"].mean() == pytest.approx(table.loc[1, "ability_mean"])
    assert isinstance(scores.plot_forest(), Axes)


@pytest.fixture(scope="module")
def audited(simulated):
    data, _, fit = simulated
    return audit(fit, data, bins=6)


def test_audit_summary_is_one_row_per_scope(audited) -> None:
    table = audited.summary()
    assert list(table.index) == ["all:all", "benchmark:bench00", "benchmark:bench01", "benchmark:bench02"]
    for m in ("ddm_w1", "ddm_shape_w1", "max_gap", "interior_gap", "edge_gap_low", "edge_gap_high"):
        for s in ("mean", "ci_low", "ci_high"):
            assert f"{m}_{s}" in table.columns
    expected = audited.benchmarks.set_index("scope")["ddm_w1_mean"]
    np.testing.assert_allclose(table.set_index("scope")["ddm_w1_mean"], expected)
    assert table.attrs["ci_prob"] == audited.ci_prob
    ranking = audited.to_dataframe("ranking")
    assert ranking.equals(audited.ranking) and ranking is not audited.ranking
    with pytest.raises(SpecError, match="no audit table"):
        audited.to_dataframe("nope")


def test_audit_plots_return_axes(audited) -> None:
    for name, kwargs in [
        ("plot_coverage", {}),
        ("plot_coverage", {"scope_kind": "domain"}),  # no domains: all items
        ("plot_forest", {"measure": "max_gap"}),
        ("plot_leaderboard", {"scope": "bench01", "top": 12}),
        ("plot_ahead", {"top": 10}),
        ("plot_information", {}),
    ]:
        _fig, ax = plt.subplots()
        assert getattr(audited, name)(ax=ax, **kwargs) is ax, name
        plt.close("all")
    assert len(audited.plot_leaderboard(top=12).get_yticklabels()) == 12
    assert audited.plot_ahead(top=10).get_images()[0].get_array().shape == (10, 10)
    with pytest.raises(SpecError, match="no scope"):
        audited.plot_leaderboard(scope="bench99")
    with pytest.raises(SpecError, match="no measure"):
        audited.plot_forest(measure="nope")


def test_benchfill_result_methods() -> None:
    from irtbayes.benchfill.aim import choose_aim
    from irtbayes.benchfill.calibration import candidate_response_data
    from irtbayes.benchfill.candidates import Candidate
    from irtbayes.benchfill.run import calibrate_candidates

    data, truth = simulate_responses(100, 40, missing=0.0, seed=1)
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
    # bin 0 holds the true widest gap (0.82 logits; bin 3's is 0.75): a near-tie the audit calls either way
    aim, _ = choose_aim(fit, data, bins=4, aim_bin=0)
    theta, middle = truth["ability"].values, (aim.lo + aim.hi) / 2
    rng = np.random.default_rng(3)
    answers = pd.concat(
        pd.DataFrame(
            {
                "subject": data.subject_ids,
                "item": cid,
                "response": (rng.random(100) < 1 / (1 + np.exp(-slope * (theta - middle)))).astype(float),
            }
        )
        for cid, slope in [("good", 1.5), ("mis-keyed", -1.5)]
    )
    candidates = [
        Candidate(candidate_id=c, text=t, answer="a")
        for c, t in [("good", "What is 7 x 6?"), ("mis-keyed", "Name the capital of Peru.")]
    ]
    result = calibrate_candidates(
        fit, data, candidates, candidate_response_data(answers, candidates, fit=fit), aim, mode="fixed", seed=4
    )
    table = result.summary()
    assert {"decision", "reason", "p_in_aim", "difficulty_mean", "difficulty_ci_low"} <= set(table.columns)
    assert table.loc["good", "decision"] == "accepted" and table.loc["mis-keyed", "reason"] == "mis-keyed"
    for name in ("decisions", "comparison", "bins", "subjects"):
        assert result.to_dataframe(name).equals(getattr(result, name))
    assert isinstance(result.plot_candidates(), Axes) and isinstance(result.plot_coverage(), Axes)
    plt.close("all")


def test_the_items_table_is_made_once_per_interval_and_handed_out_as_a_copy(simulated) -> None:
    import dataclasses

    _, _, fit = simulated
    first = fit.items_table(0.9)
    first.loc[0, "difficulty_mean"] = 99.0  # a caller's edit stays in its copy
    again = fit.items_table(0.9)
    assert again.loc[0, "difficulty_mean"] != 99.0 and again.attrs == first.attrs
    expected = float(fit.posterior["difficulty"].isel(item=0).mean().item())
    assert again.loc[0, "difficulty_mean"] == pytest.approx(expected)
    narrow = fit.items_table(0.5)  # another interval is another table
    assert (narrow["difficulty_ci_high"] < again["difficulty_ci_high"]).all()
    # a fit with other draws (dataclasses.replace) makes its own table
    shifted = fit.idata.copy()
    shifted["posterior"] = shifted["posterior"].assign(difficulty=fit.posterior["difficulty"] + 1.0)
    moved = dataclasses.replace(fit, idata=shifted).items_table(0.9)
    np.testing.assert_allclose(moved["difficulty_mean"], again["difficulty_mean"] + 1.0, rtol=1e-5)


def test_the_audit_does_not_depend_on_its_threads(simulated, monkeypatch: pytest.MonkeyPatch) -> None:
    """The coverage pass takes chunks of draws on threads and appends them in order: one thread or three, and
    chunks small enough that several are in flight at once, give the same numbers."""
    import irtbayes.auditing.draws as draws_module
    import irtbayes.auditing.run as run_module

    data, _, fit = simulated
    monkeypatch.setattr(draws_module, "CHUNK_ELEMENTS", 60 * 37)  # 37 draws of 60 items: 11 chunks of 400 draws
    tables = {}
    for threads in (1, 3):
        monkeypatch.setattr(run_module, "WORKERS", threads)
        monkeypatch.setattr(run_module, "COVERAGE_THREADS", threads)
        tables[threads] = audit(fit, data, bins=6).summary()
    pd.testing.assert_frame_equal(tables[1], tables[3])
    assert np.isfinite(tables[3]["max_gap_mean"]).all()
