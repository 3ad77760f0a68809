"""Every result object keeps one contract: ``summary()`` is a DataFrame with ArviZ's column names and the values of
the table it summarises, ``to_dict()`` is plain JSON, ``to_text()`` is the text the command line prints, and each
``plot_*()`` returns the matplotlib Axes it drew on. Small simulated fits and hand-built draws: no sampling."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import json
from collections.abc import Callable
from typing import Any

import arviz_stats as azs
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.axes import Axes

from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.benchfill.aim import choose_aim
from irtbayes.benchfill.calibration import candidate_response_data
from irtbayes.benchfill.result import BenchfillResult
from irtbayes.benchfill.run import calibrate_candidates
from irtbayes.checks.predictive import PredictiveCheck, posterior_predictive_check
from irtbayes.core.errors import SpecError
from irtbayes.core.summaries import interval_columns, posterior_summary, summary_table
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.adaptive import AdaptiveResult
from irtbayes.evaluating.prediction import PredictedScores
from irtbayes.evaluating.scoring import Scores
from irtbayes.evaluating.selection import Selection
from irtbayes.examples import simulated_audit, simulated_candidates, simulated_fit
from irtbayes.fitting.diagnostics.verdict import Diagnostics
from irtbayes.fitting.result import Fit
from irtbayes.robustness.conditions import ConditionFit, condition_effects
from irtbayes.robustness.population import outcome_from_audit, population_stability
from irtbayes.robustness.run import RobustnessResult
from irtbayes.robustness.simulation import simulate_condition_responses

LB, UB = "eti90_lb", "eti90_ub"  # a fit's parameter table, as arviz.summary names its interval
LO, HI = "ci_low", "ci_high"  # every other table, summaries and CSV files alike


@pytest.fixture(scope="module")
def fitted():
    return simulated_fit(20, 30, n_benchmarks=2)


@pytest.fixture(scope="module")
def scores() -> Scores:
    draws = xr.DataArray(
        np.random.default_rng(5).normal([0.4, -1.2, 2.0], 0.3, size=(1, 200, 3)),
        dims=("chain", "draw", "subject"),
        coords={"subject": ["alpha", "beta", "gamma"]},
    )
    return Scores(draws=draws, n_responses=pd.Series({"alpha": 10, "beta": 12, "gamma": 7}))


@pytest.fixture(scope="module")
def check(fitted) -> PredictiveCheck:
    fit, data = fitted
    return posterior_predictive_check(fit, data, n_draws=40, seed=3)


@pytest.fixture(scope="module")
def audited() -> AuditResult:
    return simulated_audit(20, 40, bins=4, seed=2)[0]


@pytest.fixture(scope="module")
def round_() -> BenchfillResult:
    fit, data, candidates, answers = simulated_candidates()
    aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    new = candidate_response_data(answers, candidates, fit=fit)
    return calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4)


@pytest.fixture(scope="module")
def robust() -> RobustnessResult:
    """Condition effects of hand-built draws (two items +-1.2 logits under the second condition) and the stability
    of an audit over two refits whose draws lie around the same truth."""
    data, _, _ = simulate_condition_responses(10, 16, n_sensitive_items=2, n_sensitive_subjects=1, seed=1)
    rng = np.random.default_rng(3)
    n = 200
    gamma = 0.3 * rng.standard_normal((1, n, 1, 16))
    gamma[..., :2] += [1.2, -1.2]
    posterior = xr.Dataset(
        {
            "item_effect": (("chain", "draw", "condition", "item"), gamma),
            "ability_shift": (("chain", "draw", "condition", "subject"), 0.3 * rng.standard_normal((1, n, 1, 10))),
            "ability": (("chain", "draw", "subject"), np.linspace(2, -2, 10) + 0.4 * rng.standard_normal((1, n, 10))),
            "shift": (("chain", "draw", "condition"), gamma.mean(axis=3)),
        },
        coords={
            "condition": ["reformatted"],
            "item": data.item_ids.to_numpy(dtype=str),
            "subject": data.subject_ids.to_numpy(dtype=str),
        },
    )
    effects = condition_effects(ConditionFit(posterior=posterior, reference="original", data=data))
    data, truth = simulate_responses(30, 40, n_benchmarks=2, seed=1)
    reference_posterior = posterior_near_truth(data, truth, chains=2, draws=50, seed=2)
    refits = []
    for seed in (3, 4):
        again = posterior_near_truth(data, truth, chains=2, draws=50, seed=seed)
        refits.append(outcome_from_audit(f"again{seed}", "bootstrap", audit(again, data, bins=4), again, n_subjects=30))
    stability = population_stability(audit(reference_posterior, data, bins=4), reference_posterior, refits)
    return RobustnessResult(conditions=effects, population=stability, refits=refits)


def _source_column(column: str) -> str:
    """The items table's name of a fit summary's column: ``eti90_lb`` -> ``ci_low``, ``eti90_ub`` -> ``ci_high``."""
    return {LB: LO, UB: HI}.get(column, column)


def _assert_summarises(summary: pd.DataFrame, table: pd.DataFrame) -> None:
    """``summary`` names each interval as ``table`` (and the CSV files) do, with no ArviZ names beside them, holds
    ``table``'s values and records the interval's probability."""
    assert isinstance(summary, pd.DataFrame) and len(summary) == len(table)
    columns = [str(c) for c in summary.columns]
    assert any(c.endswith(LO) for c in columns) and any(c.endswith(HI) for c in columns), columns
    assert not [c for c in columns if c.endswith(("_lb", "_ub")) and "eti" in c], columns
    assert 0 < summary.attrs["ci_prob"] < 1
    for column in columns:
        want = table[column].to_numpy()
        have = summary[column].to_numpy()
        if pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(want):
            np.testing.assert_allclose(have.astype(float), want.astype(float), err_msg=column)
        else:
            assert list(have) == list(want), column


def _assert_json(values: dict[str, Any]) -> None:
    text = json.dumps(values, allow_nan=False)
    assert isinstance(values, dict) and json.loads(text) == values


def _assert_plots(result: object, kwargs: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Every ``plot_*`` method returns an Axes, and the one it was given when given one."""
    names = [n for n in dir(result) if n.startswith("plot_") and callable(getattr(result, n))]
    assert names, type(result).__name__
    for name in names:
        method: Callable[..., Axes] = getattr(result, name)
        extra = (kwargs or {}).get(name, {})
        assert isinstance(method(**extra), Axes), name
        _fig, ax = plt.subplots()
        assert method(ax=ax, **extra) is ax, name
        plt.close("all")
    return names


# ---------------------------------------------------------------------------------------------------- names
@pytest.mark.parametrize("ci_prob", [0.5, 0.8, 0.89, 0.9, 0.94, 0.95, 0.99, 0.29])
def test_interval_names_are_those_of_arviz_summary(ci_prob: float) -> None:
    posterior = xr.Dataset(
        {"difficulty": (("chain", "draw", "item"), np.random.default_rng(0).normal(size=(2, 50, 2)))}
    )
    theirs = azs.summary(posterior, ci_kind="eti", ci_prob=ci_prob, round_to="none")
    assert [c for c in theirs.columns if c.startswith("eti")] == list(interval_columns(ci_prob))


def test_a_summary_table_keeps_the_names_of_its_table() -> None:
    table = pd.DataFrame({"ci_low": [0.0], "ci_high": [1.0], "rank_ci_low": [1], "mean": [0.5]})
    table.attrs["run"] = "r1"
    out = summary_table(table, 0.8)
    assert list(out.columns) == list(table.columns) and out.attrs == {"run": "r1", "ci_prob": 0.8}
    assert table.attrs == {"run": "r1"}  # a copy
    with pytest.raises(SpecError):
        summary_table(table, 1.5)


def test_posterior_summary_agrees_with_arviz_summary() -> None:
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(4, 300, 3)).cumsum(axis=1) * 0.1 + rng.normal(size=(4, 300, 3))  # autocorrelated
    posterior = xr.Dataset({"ability": (("chain", "draw", "subject"), draws)}, coords={"subject": ["a", "b", "c"]})
    ours = posterior_summary(posterior, ci_prob=0.9)
    theirs = azs.summary(posterior, ci_kind="eti", ci_prob=0.9, round_to="none")
    assert list(ours.index) == list(theirs.index) == ["ability[a]", "ability[b]", "ability[c]"]
    for column in ("mean", "sd", LB, UB, "ess_bulk", "r_hat", "mcse_mean"):
        np.testing.assert_allclose(ours[column], theirs[column], rtol=1e-8, err_msg=column)
    # tail ESS at the ends of the 90% interval, arviz-stats' quantiles (0.05, 0.95)
    tail = azs.ess(posterior, method="tail", prob=(0.05, 0.95))["ability"].to_numpy()
    np.testing.assert_allclose(ours["ess_tail"], tail, rtol=1e-8)


# ---------------------------------------------------------------------------------------------------- Fit
def test_fit_keeps_the_contract(fitted) -> None:
    fit, data = fitted
    summary = fit.summary(var_names=["difficulty", "discrimination"])
    assert list(summary.columns) == [
        "variable",
        "index",
        "mean",
        "sd",
        LB,
        UB,
        "ess_bulk",
        "ess_tail",
        "r_hat",
        "mcse_mean",
    ]
    items = fit.items_table()
    for name in ("difficulty", "discrimination"):
        rows = summary.loc[summary["variable"] == name]
        assert list(rows["index"]) == list(items["item"])
        for stat in ("mean", "sd", LB, UB):
            want = items[f"{name}_{_source_column(stat)}"]
            np.testing.assert_allclose(rows[stat], want, err_msg=f"{name} {stat}")
    assert (summary["mcse_mean"] > 0).all() and (summary["mcse_mean"] < summary["sd"]).all()
    assert list(fit.summary(ci_prob=0.5).columns)[4:6] == ["eti50_lb", "eti50_ub"]

    card = fit.to_dict()
    _assert_json(card)
    assert card == fit.card() and card["n_items"] == 30 and card["data_checksum"] == data.checksum()

    text = fit.to_text()
    assert isinstance(text, str) and "20 subjects x 30 items" in text
    assert _assert_plots(fit) == ["plot_forest", "plot_item_curves", "plot_item_person_map", "plot_rhat_ess"]


# ---------------------------------------------------------------------------------------------------- Scores
def test_scores_keep_the_contract(scores: Scores) -> None:
    summary = scores.summary()
    table = scores.table()
    _assert_summarises(summary, table)
    assert list(summary.columns) == [
        "subject",
        "n_responses",
        "ability_mean",
        "ability_sd",
        f"ability_{LO}",
        f"ability_{HI}",
        "ci_prob",
    ]
    draws = scores.draws.sel(subject="beta").to_numpy().ravel()
    assert summary.loc[1, f"ability_{LO}"] == pytest.approx(np.quantile(draws, 0.05))

    values = scores.to_dict()
    _assert_json(values)
    assert values["n_draws"] == 200 and [s["subject"] for s in values["subjects"]] == ["alpha", "beta", "gamma"]
    assert values["subjects"][2]["n_responses"] == 7

    text = scores.to_text()
    assert isinstance(text, str) and "gamma" in text and f"{table.loc[0, 'ability_mean']:.3f}" in text
    assert "APPROXIMATE" not in text
    approximate = Scores(draws=scores.draws, n_responses=scores.n_responses, approximate=True)
    assert approximate.to_text().startswith("APPROXIMATE")
    assert _assert_plots(scores) == ["plot_forest"]


# ---------------------------------------------------------------------------------------------------- Diagnostics
def test_diagnostics_keep_the_contract(fitted) -> None:
    diag: Diagnostics = fitted[0].diagnostics
    summary = diag.summary()
    assert isinstance(summary, pd.DataFrame)
    assert {"max_r_hat", "worst_r_hat", "min_ess_bulk", "min_ess_tail"} <= set(summary.columns)
    assert not [c for c in summary.columns if "rhat" in c], list(summary.columns)
    by_name = summary.set_index("variable")
    for v in diag.variables:
        assert by_name.loc[v.name, "max_r_hat"] == pytest.approx(v.max_rhat)
        assert by_name.loc[v.name, "worst_r_hat"] == v.worst_rhat
        assert by_name.loc[v.name, "min_ess_tail"] == pytest.approx(v.min_ess_tail)
    per_parameter = diag.to_dataframe()
    assert {"r_hat", "ess_bulk", "ess_tail"} <= set(per_parameter.columns)

    values = diag.to_dict()
    _assert_json(values)
    assert Diagnostics.from_dict(json.loads(json.dumps(values))).summary().equals(summary)

    text = diag.to_text()
    assert isinstance(text, str) and f"{diag.n_chains} chains x {diag.n_draws} draws" in text
    assert _assert_plots(diag) == ["plot_rhat_ess"]


# ---------------------------------------------------------------------------------------------------- PredictiveCheck
def test_predictive_check_keeps_the_contract(check: PredictiveCheck) -> None:
    summary = check.summary()
    _assert_summarises(summary, check.items)
    assert {"observed_mean", "predicted_mean", f"predicted_{LO}", f"predicted_{HI}", "p_value_mean"} <= set(summary)
    assert summary.attrs["ci_prob"] == 0.9 and summary.attrs["n_draws"] == check.n_draws
    assert check.to_dataframe("subjects").equals(check.subjects)

    values = check.to_dict()
    _assert_json(values)
    assert values["n_items_misfit"] == int(check.items["misfit"].sum()) and len(values["subjects"]) == 20
    assert values["items"][3]["observed_mean"] == pytest.approx(check.items.loc[3, "observed_mean"])

    text = check.to_text()
    n_misfit = int(check.items["misfit"].sum())
    assert isinstance(text, str) and f"{n_misfit} of 30 items misfit" in text
    assert _assert_plots(check) == ["plot_items"]


def test_predictive_check_plot_marks_the_observed_means(check: PredictiveCheck) -> None:
    ax = check.plot_items(top=8)
    shown = [label.get_text() for label in ax.get_yticklabels()]
    assert len(shown) == 8 and "8 of 30" in ax.get_title()
    extreme = (check.items["p_value_mean"] - 0.5).abs().sort_values(ascending=False).index[:8]
    assert set(shown) == set(check.items.loc[extreme, "item"])
    observed = ax.collections[-1].get_offsets()[:, 0]
    rows = check.items.set_index("item").loc[shown, "observed_mean"]
    np.testing.assert_allclose(observed, rows.to_numpy())
    plt.close("all")


# ---------------------------------------------------------------------------------------------------- AuditResult
def test_audit_keeps_the_contract(audited: AuditResult) -> None:
    summary = audited.summary()
    _assert_summarises(summary, audited.benchmarks)
    for measure in ("ddm_w1", "max_gap", "interior_gap"):
        assert {f"{measure}_mean", f"{measure}_{LO}", f"{measure}_{HI}"} <= set(summary.columns)

    values = audited.to_dict()
    _assert_json(values)
    assert values == audited.summary_dict()
    assert values["overall"]["max_gap"]["ci_low"] == pytest.approx(summary.loc["all:all", f"max_gap_{LO}"])

    text = audited.to_text()
    assert isinstance(text, str) and audited.target.description in text
    assert _assert_plots(audited) == [
        "plot_ahead",
        "plot_coverage",
        "plot_forest",
        "plot_information",
        "plot_leaderboard",
    ]


# ---------------------------------------------------------------------------------------------------- BenchfillResult
def test_benchfill_round_keeps_the_contract(round_: BenchfillResult) -> None:
    summary = round_.summary()
    _assert_summarises(summary, round_.decisions)
    assert {"decision", "reason", f"difficulty_{LO}", f"difficulty_{HI}", f"slope_{LO}"} <= set(summary.columns)
    assert list(summary.index) == list(round_.decisions.index)

    values = round_.to_dict()
    _assert_json(values)
    assert values == round_.summary_dict() and values["accepted"] == round_.accepted

    text = round_.to_text()
    assert isinstance(text, str) and f"{len(round_.accepted)} of {len(round_.decisions)} candidates accepted" in text
    assert _assert_plots(round_) == ["plot_candidates", "plot_coverage"]


# ---------------------------------------------------------------------------------------------------- RobustnessResult
def test_robustness_result_keeps_the_contract(robust: RobustnessResult) -> None:
    assert robust.conditions is not None and robust.population is not None
    summary = robust.summary()  # the conditions first
    _assert_summarises(summary, robust.conditions.agreement)
    assert list(summary[["condition_a", "condition_b"]].iloc[0]) == ["original", "reformatted"]
    for measure in ("kendall_tau", "max_rank_displacement"):
        assert {f"{measure}_mean", f"{measure}_sd", f"{measure}_{LO}", f"{measure}_{HI}"} <= set(summary.columns)
    assert summary.attrs["part"] == "conditions" and summary.attrs["ci_prob"] == 0.9
    assert (
        summary.loc[0, f"kendall_tau_{LO}"] <= summary.loc[0, "kendall_tau_mean"] <= summary.loc[0, f"kendall_tau_{HI}"]
    )
    assert robust.summary("conditions").equals(summary)
    stable = robust.summary("population")
    assert stable.equals(robust.population.conclusions) and stable.attrs["part"] == "population"
    assert stable is not robust.population.conclusions
    only_population = RobustnessResult(population=robust.population, refits=robust.refits)
    assert only_population.summary().equals(stable)
    with pytest.raises(SpecError, match="no summary part 'revision'"):
        robust.summary("revision")
    with pytest.raises(SpecError, match="no condition comparison"):
        only_population.summary("conditions")

    values = robust.to_dict()
    _assert_json(values)
    assert values == robust.summary_dict()
    pair = values["conditions"]["rank_agreement"][0]
    assert pair["kendall_tau_ci_low"] == pytest.approx(summary.loc[0, f"kendall_tau_{LO}"])
    assert [c["label"] for c in values["population"]["conclusions"]] == list(stable["label"])

    text = robust.to_text()
    assert isinstance(text, str) and f"Kendall tau {summary.loc[0, 'kendall_tau_mean']:.3f}" in text
    assert "populations: 2 refits" in text
    assert _assert_plots(robust) == ["plot_condition_effects", "plot_gap_locations", "plot_rank_shifts"]


def test_robustness_plots_draw_the_result_tables(robust: RobustnessResult) -> None:
    assert robust.conditions is not None and robust.population is not None
    ax = robust.plot_gap_locations(scope="bench01")
    assert [label.get_text() for label in ax.get_yticklabels()] == ["reference", "again3", "again4"]
    assert ax.get_title() == "Widest gap of bench01 across populations"
    ax = robust.plot_rank_shifts(top_k=4)
    assert len(ax.get_yticklabels()) == 4 and "original and reformatted" in ax.get_title()
    ax = robust.plot_condition_effects(top_k=3)
    shown = {label.get_text() for label in ax.get_yticklabels()}
    items = robust.conditions.items
    flagged = set(items.loc[items["flagged"], "item"])
    assert flagged == {"q000", "q001"} and flagged <= shown, shown  # the two planted items, the farthest
    with pytest.raises(SpecError, match="no condition 'original' besides the reference"):
        robust.plot_rank_shifts(condition="original")
    with pytest.raises(SpecError, match="no scope 'nope'"):
        robust.plot_gap_locations(scope="nope")
    with pytest.raises(SpecError, match="no population comparison"):
        RobustnessResult(conditions=robust.conditions).plot_gap_locations()
    plt.close("all")


def test_every_result_class_has_the_four_parts() -> None:
    for cls in (
        Fit,
        Scores,
        Diagnostics,
        PredictiveCheck,
        AuditResult,
        BenchfillResult,
        RobustnessResult,
        PredictedScores,
        Selection,
        AdaptiveResult,
    ):
        missing = [m for m in ("summary", "to_dict", "to_text") if not callable(getattr(cls, m, None))]
        plots = [n for n in dir(cls) if n.startswith("plot_")]
        assert not missing and plots, (cls.__name__, missing, plots)
