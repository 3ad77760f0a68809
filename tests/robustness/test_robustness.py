"""Robustness checks on hand-built posteriors: linking, flagging, rank agreement, population labels, revisions."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.auditing.run import audit
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.multiplicity import bayes_fdr_flags
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.reporting.robustness import report_robustness
from irtbayes.robustness.condition_model import build_condition_model
from irtbayes.robustness.conditions import (
    ConditionFit,
    condition_effects,
    fit_conditions,
    local_false_sign_rate,
    rank_agreement,
    save_conditions,
)
from irtbayes.robustness.linking import link_mean_sigma
from irtbayes.robustness.population import (
    Population,
    outcome_from_audit,
    population_samples,
    population_stability,
    refit_populations,
)
from irtbayes.robustness.revision import compare_revision, revision_data
from irtbayes.robustness.run import RobustnessResult
from irtbayes.robustness.simulation import simulate_condition_responses


def _difficulty_posterior(values: np.ndarray, items: list[str]) -> xr.Dataset:
    return xr.Dataset(
        {"difficulty": (("chain", "draw", "item"), values[None])},
        coords={"chain": [0], "draw": np.arange(values.shape[0]), "item": items},
    )


# ---------------------------------------------------------------------------------------------- linking
def test_linking_recovers_a_known_slope_and_shift() -> None:
    rng = np.random.default_rng(1)
    truth = rng.normal(0, 1, 40)
    items = [f"q{i}" for i in range(40)]
    source = truth + 0.1 * rng.standard_normal((400, 40))
    reference = 1.3 * truth + 0.5 + 0.1 * rng.standard_normal((400, 40))
    link = link_mean_sigma(_difficulty_posterior(source, items), _difficulty_posterior(reference, items))
    table = link.table().set_index("constant")
    for name, true in (("slope", 1.3), ("intercept", 0.5)):
        row = table.loc[name]
        assert row["ci_low"] <= true <= row["ci_high"], (name, row.to_dict())
        assert abs(row["mean"] - true) < 0.05, (name, row["mean"])
    assert table.loc["slope", "sd"] > 0  # the uncertainty is carried, per draw
    moved = link.transform(np.array([0.0, 1.0])).mean(axis=0)
    np.testing.assert_allclose(moved, [0.5, 1.8], atol=0.06)


def test_linking_needs_two_common_items() -> None:
    a = _difficulty_posterior(np.array([[0.0, 1.0]] * 10), ["a", "b"])
    b = _difficulty_posterior(np.array([[0.0, 1.0]] * 10), ["b", "c"])
    with pytest.raises(SpecError, match="at least 2 common items"):
        link_mean_sigma(a, b)


# ---------------------------------------------------------------------------------------------- flagging
def test_local_false_sign_rate_and_bayes_fdr_flags_exact() -> None:
    draws = np.array([[1.0, -1.0, 0.5], [2.0, 1.0, -0.5], [3.0, -2.0, 0.5], [4.0, -3.0, -0.5]])
    np.testing.assert_allclose(local_false_sign_rate(draws), [0.0, 0.25, 0.5])
    np.testing.assert_allclose(local_false_sign_rate(draws, min_effect=1.5), [0.25, 0.5, 1.0])
    v = np.array([0.0, 0.01, 0.2, 0.04, 0.5, 0.06])
    assert bayes_fdr_flags(v, fdr=0.05).tolist() == [True, True, False, True, False, False]
    # sorted 0, .01, .04, .06, .2: running means 0, .005, .0167, .0275, .062 -> the first four
    assert bayes_fdr_flags(v, fdr=0.05, rule="mean").tolist() == [True, True, False, True, False, True]
    assert not bayes_fdr_flags(np.array([0.3, 0.4]), fdr=0.05, rule="mean").any()
    assert bayes_fdr_flags(np.array([0.01, np.nan])).tolist() == [True, False]  # NaN is never flagged


def test_rank_agreement_exact_for_identical_and_reversed_orders() -> None:
    base = np.tile(np.arange(6.0), (50, 1))
    table = rank_agreement({"a": base, "b": base + 1.0, "c": -base}).set_index(["condition_a", "condition_b"])
    assert table.loc[("a", "b"), "kendall_tau_mean"] == pytest.approx(1.0, abs=1e-12)
    assert table.loc[("a", "b"), "max_rank_displacement_mean"] == 0.0
    assert table.loc[("a", "c"), "kendall_tau_mean"] == pytest.approx(-1.0, abs=1e-12)
    assert table.loc[("a", "c"), "max_rank_displacement_ci_high"] == 5.0


def _hand_built_condition_fit(seed: int = 0, common: float = 0.0) -> tuple[ConditionFit, set[str], set[str]]:
    """Posterior draws: items 0-3 shifted by +-1.2 (sd 0.3), systems 0-1 by -+1.0; everything else N(0, 0.3).

    ``common`` is added to every item's effect (the condition's common shift)."""
    data, items, subjects = simulate_condition_responses(12, 30, n_sensitive_items=4, n_sensitive_subjects=2, seed=seed)
    rng = np.random.default_rng(seed)
    n = 400
    gamma = 0.3 * rng.standard_normal((n, 1, 30))
    gamma[:, 0, :4] += 1.2 * np.array([1, -1, 1, -1])
    gamma += common
    delta = 0.3 * rng.standard_normal((n, 1, 12))
    delta[:, 0, :2] += np.array([-1.0, 1.0])
    theta = np.linspace(2, -2, 12) + 0.1 * rng.standard_normal((n, 12))
    post = xr.Dataset(
        {
            "item_effect": (("chain", "draw", "condition", "item"), gamma[None]),
            "ability_shift": (("chain", "draw", "condition", "subject"), delta[None]),
            "ability": (("chain", "draw", "subject"), theta[None]),
            "shift": (("chain", "draw", "condition"), gamma.mean(axis=2)[None]),
        },
        coords={
            "chain": [0],
            "draw": np.arange(n),
            "condition": ["reformatted"],
            "item": data.item_ids.to_numpy(dtype=str),
            "subject": data.subject_ids.to_numpy(dtype=str),
        },
    )
    return ConditionFit(posterior=post, reference="original", data=data), set(items), set(subjects)


def test_systems_a_format_leaves_alone_are_not_flagged_when_others_drop() -> None:
    """Four of twelve systems drop by 1.2 logits; the shifts sum to zero, so the other eight rise by 0.6 against the
    mean. Against the typical (median) system only the four are flagged; against the mean all twelve would be."""
    cfit, _, _ = _hand_built_condition_fit()
    rng = np.random.default_rng(3)
    raw = np.where(np.arange(12) < 4, -1.2, 0.0) + 0.1 * rng.standard_normal((400, 1, 12))
    delta = raw - raw.mean(axis=2, keepdims=True)  # the model's zero sum
    post = cfit.posterior.assign(ability_shift=(("chain", "draw", "condition", "subject"), delta[None]))
    subjects = condition_effects(ConditionFit(post, cfit.reference, cfit.data), fdr=0.05).subjects
    ids = list(cfit.data.subject_ids.astype(str))
    assert set(subjects.loc[subjects["flagged"], "subject"]) == set(ids[:4])
    np.testing.assert_allclose(subjects["shift_reformatted_mean"].to_numpy()[4:], 0.0, atol=0.1)
    assert (local_false_sign_rate(delta[:, :, 4:]) < 0.05).all()  # the mean's rule would flag the other eight


def test_condition_effects_flag_the_planted_items_and_systems(tmp_path) -> None:
    cfit, planted_items, planted_subjects = _hand_built_condition_fit()
    effects = condition_effects(cfit, fdr=0.05)
    items, subjects = effects.items, effects.subjects
    assert set(items.loc[items["flagged"], "item"]) == planted_items
    assert set(subjects.loc[subjects["flagged"], "subject"]) == planted_subjects
    assert list(items.columns[:8]) == [
        "item",
        "reformatted_mean",
        "reformatted_ci_low",
        "reformatted_ci_high",
        "reformatted_median",
        "reformatted_beyond_shift_mean",
        "reformatted_lfsr",
        "reformatted_flagged",
    ]
    assert {"rank_original_mean", "rank_reformatted_mean", "shift_reformatted_ci_low"} <= set(subjects.columns)
    # system 0 is the best under the reference and loses about one logit under the other condition
    top = subjects.set_index("subject").loc["sys000"]
    assert top["rank_original_mean"] == pytest.approx(1.0, abs=0.05)
    assert top["rank_reformatted_mean"] > 1.5
    row = effects.agreement.iloc[0]
    assert row["kendall_tau_ci_high"] <= 1.0 and row["kendall_tau_mean"] < 1.0
    assert row["max_rank_displacement_ci_low"] >= 1.0
    paths = save_conditions(effects, tmp_path)
    back = pd.read_csv(paths["items"])
    assert back["flagged"].sum() == len(planted_items)
    summary = effects.summary_dict()
    assert summary["flagging"]["items_flagged"] == 4 and summary["reference"] == "original"
    written = report_robustness(RobustnessResult(conditions=effects), tmp_path)
    html = written["report_html"].read_text()
    assert "Rank agreement between conditions" in html and html.count("<figure>") == 2
    assert (tmp_path / "figures" / "condition_effects_reformatted.png").stat().st_size > 1000


def test_flags_are_tested_against_the_common_shift_by_default() -> None:
    cfit, planted_items, _ = _hand_built_condition_fit(common=1.5)
    items = condition_effects(cfit).items
    assert set(items.loc[items["flagged"], "item"]) == planted_items
    np.testing.assert_allclose(items["reformatted_mean"] - items["reformatted_beyond_shift_mean"], 1.5, atol=0.1)
    every = condition_effects(cfit, against="zero").items
    assert every["flagged"].sum() >= 26  # a common shift of 1.5 makes nearly every effect credibly non-zero


def test_a_system_never_seen_under_a_condition_is_neither_flagged_nor_ranked_there() -> None:
    cfit, _, _ = _hand_built_condition_fit()
    frame = cfit.data.long_frame()
    frame = frame.loc[~((frame["subject"] == "sys000") & (frame["condition"] == "reformatted"))]
    data = ResponseData.from_long(frame, condition="condition")
    effects = condition_effects(ConditionFit(posterior=cfit.posterior, reference="original", data=data))
    row = effects.subjects.set_index("subject").loc["sys000"]
    assert not row["flagged"] and row["shift_reformatted_lfsr"] == 1.0
    assert np.isnan(row["rank_reformatted_mean"]) and row["rank_original_mean"] == pytest.approx(1.0, abs=0.05)
    assert effects.agreement["n_subjects"].tolist() == [11]
    assert effects.subjects["rank_reformatted_mean"].max() <= 11


def test_condition_model_builds_with_its_labels() -> None:
    data, _, _ = simulate_condition_responses(6, 8, n_sensitive_items=1, n_sensitive_subjects=1, seed=2)
    model = build_condition_model(data)
    assert model.irtbayes_reference == "original"
    assert list(model.coords["condition"]) == ["reformatted"]
    assert list(model.coords["item"]) == list(data.item_ids)
    free = {rv.name for rv in model.free_RVs}
    assert {"item_effect_z", "item_effect_local", "item_effect_local_mixing", "ability_shift_u", "shift"} <= free
    assert {"item_effect_slab_local", "ability_shift_slab_local"} <= free  # the regularised horseshoe's slab
    assert model.named_vars_to_dims["item_effect"] == ("condition", "item")
    with pytest.raises(SpecError, match="unknown reference condition"):
        build_condition_model(data, reference="nope")
    with pytest.raises(DataError, match="at least two conditions"):
        build_condition_model(data.subset(conditions=["original"]))


# ---------------------------------------------------------------------------------------------- populations
def _with_gap(data: ResponseData, truth: xr.Dataset, lo: float, hi: float, seed: int):
    moved = truth.copy()
    moved["difficulty"] = ("item", np.concatenate([np.linspace(-2.5, lo, 50), np.linspace(hi, 2.5, 30)]))
    post = posterior_near_truth(data, moved, chains=2, draws=100, seed=seed)
    return post, audit(post, data, range=(-2.5, 2.5), ensemble="draws")


def test_a_gap_that_moves_is_population_dependent_and_an_unchanged_one_stable() -> None:
    data, truth = simulate_responses(60, 80, seed=3, missing=0.0)
    post, reference = _with_gap(data, truth, -0.5, 1.0, seed=0)
    unchanged = [
        outcome_from_audit(f"b{k}", "bootstrap", result, p, n_subjects=60)
        for k in range(3)
        for p, result in [_with_gap(data, truth, -0.5, 1.0, seed=k + 1)]
    ]
    moved = [
        outcome_from_audit(f"m{k}", "population", result, p, n_subjects=60)
        for k in range(3)
        for p, result in [_with_gap(data, truth, -2.0, -0.5, seed=k + 1)]
    ]
    same = population_stability(reference, post, unchanged)
    stable = same.conclusions.set_index("conclusion")
    assert stable.loc["gap_location", "label"] == "stable", stable.loc["gap_location", "evidence"]
    assert stable.loc["max_gap", "label"] == "stable"
    assert stable.loc["ranks", "label"] == "stable"
    # the same items on the same scale: the link is the identity and the linked gap the gap
    np.testing.assert_allclose(same.refits["link_slope"], 1.0, atol=0.02)
    assert (same.refits["link_slope_ci_low"] <= 1.0).all() and (same.refits["link_slope_ci_high"] >= 1.0).all()
    np.testing.assert_allclose(same.refits["gap_lo_linked"], same.refits["gap_lo"], atol=0.05)
    dependent = population_stability(reference, post, moved)
    labels = dependent.conclusions.set_index("conclusion")
    # a population of other systems cannot vote on ranks
    disjoint = [replace(r, ranking=r.ranking.assign(subject="other-" + r.ranking["subject"])) for r in moved]
    ranks = population_stability(reference, post, disjoint).conclusions.set_index("conclusion").loc["ranks"]
    assert ranks["label"] == "not compared" and "share no systems" in ranks["evidence"]
    assert labels.loc["gap_location", "label"] == "population-dependent", labels.loc["gap_location", "evidence"]
    assert labels.loc["gap_location", "evidence"].startswith("0 of 3 refits agree (population 0/3)")


def test_an_approximate_refit_is_labelled_approximate_not_unconverged() -> None:
    data, truth = simulate_responses(60, 80, seed=3, missing=0.0)
    post, reference = _with_gap(data, truth, -0.5, 1.0, seed=0)
    refits = [
        outcome_from_audit("nuts", "bootstrap", reference, post, n_subjects=60, converged=False, convergence="r-hat"),
        outcome_from_audit("advi", "bootstrap", reference, post, n_subjects=60, converged=False, approximate=True),
    ]
    stability = population_stability(reference, post, refits)
    assert stability.refits.set_index("population")["approximate"].to_dict() == {"nuts": False, "advi": True}
    text = RobustnessResult(population=stability, refits=refits).to_text()
    assert "nuts NOT CONVERGED: r-hat" in text and "advi NOT CONVERGED" not in text
    assert "(1 refits did not pass the convergence checks) (1 refits APPROXIMATE" in text
    saved = RobustnessResult(population=stability, refits=refits).summary_dict()["population"]["refits"]
    assert [r["approximate"] for r in saved] == [False, True]


def test_the_report_draws_the_gap_of_each_scope_across_populations(tmp_path) -> None:
    data, truth = simulate_responses(60, 80, n_benchmarks=2, seed=3, missing=0.0)
    post, reference = _with_gap(data, truth, -0.5, 1.0, seed=0)
    refits = [
        outcome_from_audit(f"b{k}", "bootstrap", result, p, n_subjects=60)
        for k in range(2)
        for p, result in [_with_gap(data, truth, -0.5, 1.0, seed=k + 1)]
    ]
    result = RobustnessResult(population=population_stability(reference, post, refits), refits=refits)
    written = report_robustness(result, tmp_path)
    scopes = ["all", "bench00", "bench01"]
    assert list(result.summary()["scope"].drop_duplicates()) == scopes
    for scope in scopes:
        assert (tmp_path / "figures" / f"gap_locations_{scope}.png").stat().st_size > 1000, scope
    assert written["report_html"].read_text().count("<figure>") == len(scopes)
    gap = result.population.conclusions.query("scope == 'bench00' and conclusion == 'gap_location'")
    ax = result.plot_gap_locations(scope="bench00")
    reference_line = ax.collections[0].get_segments()[0]  # the reference's gap, as the conclusions table says it
    assert gap["reference"].iloc[0] == f"[{reference_line[0][0]:.2f}, {reference_line[1][0]:.2f}]"
    with pytest.raises(SpecError, match="no condition comparison"):
        result.plot_rank_shifts()


def test_population_samples_bootstrap_and_leave_one_family_out() -> None:
    data, _ = simulate_responses(9, 12, seed=1, missing=0.0)
    families = {s: f"fam{i % 3}" for i, s in enumerate(data.subject_ids)}
    plans = population_samples(data, bootstrap=2, family=families, seed=4)
    assert [p.kind for p in plans] == ["bootstrap", "bootstrap", "leave-out", "leave-out", "leave-out"]
    boot = plans[0].data
    assert boot.n_subjects == 9
    copies = [s for s in boot.subject_ids if "~" in s]
    assert copies and len(copies) == 9 - len({s.split("~")[0] for s in boot.subject_ids})
    frame = boot.long_frame().set_index(["subject", "item"])["response"]
    for copy in copies:
        original = copy.split("~")[0]
        np.testing.assert_array_equal(frame.loc[copy].sort_index(), frame.loc[original].sort_index())
    left = plans[2].data
    assert left.n_subjects == 6 and not any(families[s] == "fam0" for s in left.subject_ids)
    with pytest.raises(DataError, match="no subject column 'org2'"):
        population_samples(data, family="org2")


def test_refit_engines_are_checked_before_any_fit() -> None:
    data, _ = simulate_responses(5, 6, seed=1)
    plans = [Population("p", "population", data)]
    with pytest.raises(SpecError, match="unknown engine"):
        refit_populations(plans, engine="threads")
    with pytest.raises(SpecError, match="dask_address needs engine='dask'"):
        refit_populations(plans, dask_address="tcp://x:8786")
    with pytest.raises(SpecError, match="scheduler must be a Dask scheduler's address"):
        refit_populations(plans, scheduler=8786)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- revisions
def test_revision_fills_the_original_gap_and_names_the_system_that_regresses() -> None:
    rng = np.random.default_rng(5)
    n = 30
    ability = np.sort(rng.normal(size=n))[::-1]
    ability = (ability - ability.mean()) / ability.std()
    orig_b = np.concatenate([np.linspace(-2.4, -0.6, 20), np.linspace(1.2, 2.4, 10)])  # gap [-0.6, 1.2]
    rev_b = np.linspace(-2.0, 2.0, 30)
    subjects = [f"s{j:02d}" for j in range(n)]

    def responses(b: np.ndarray) -> np.ndarray:
        p = 1 / (1 + np.exp(-(ability[:, None] - b[None, :])))
        return (rng.uniform(size=p.shape) < p).astype(float)

    y_orig, y_rev = responses(orig_b), responses(rev_b)
    y_rev[0] = 0.0  # the best system fails every revised item
    frames = []
    for y in (y_orig, y_rev):
        frames.append(
            ResponseData.from_long(
                pd.DataFrame(
                    {
                        "subject": np.repeat(subjects, 30),
                        "item": np.tile([f"q{i}" for i in range(30)], n),
                        "response": y.ravel(),
                    }
                )
            )
        )
    data = revision_data(frames[0], frames[1], original_name="orig", revised_name="rev")
    assert set(data.benchmarks) == {"orig", "rev"} and data.n_items == 60
    truth = xr.Dataset(
        {
            "ability": ("subject", ability),
            "difficulty": ("item", np.concatenate([orig_b, rev_b])),
            "discrimination": ("item", np.ones(60)),
        },
        coords={"subject": subjects, "item": data.item_ids.to_numpy(dtype=str)},
    )
    post = posterior_near_truth(data, truth, chains=2, draws=100, seed=0)
    result = audit(post, data, ensemble="draws")
    comparison = compare_revision(result, original="orig", revised="rev")
    assert comparison.gap["filled"], comparison.gap
    assert comparison.gap["revised_items_inside"] >= 5
    regress = comparison.subjects.loc[comparison.subjects["regresses"], "subject"].tolist()
    assert regress == ["s00"], comparison.subjects.head()
    assert comparison.subjects.iloc[0]["subject"] == "s00"  # the largest rank change comes first
    with pytest.raises(DataError, match="benchmark 'nope'"):
        compare_revision(result, original="orig", revised="nope")


def test_robustness_writes_the_condition_tables_json_and_report(tmp_path, monkeypatch) -> None:
    import json

    import irtbayes.robustness.run as run_module

    cfit, planted_items, _ = _hand_built_condition_fit()
    monkeypatch.setattr(run_module, "fit_conditions", lambda data, **kwargs: cfit)  # the sampling is tested apart
    result = run_module.check_robustness(cfit.data, out=tmp_path)
    assert {p.name for p in result.files.values()} >= {
        "conditions_items.csv",
        "conditions_subjects.csv",
        "robustness.json",
    }
    assert not (tmp_path / "report.html").exists()  # the report is the reporting stage's
    written = report_robustness(result, tmp_path)
    assert {p.name for p in written.values()} == {"report.html", "report.md"}
    summary = json.loads((tmp_path / "robustness.json").read_text())
    pair = summary["conditions"]["rank_agreement"][0]
    assert pair["condition_a"] == "original" and pair["condition_b"] == "reformatted"
    assert pair["kendall_tau_ci_low"] <= pair["kendall_tau_mean"] <= pair["kendall_tau_ci_high"] < 1
    assert summary["conditions"]["flagging"]["items_flagged"] == len(planted_items)
    items = pd.read_csv(tmp_path / "conditions_items.csv")
    assert set(items.loc[items["flagged"], "item"]) == planted_items
    assert "population" not in summary  # no other population was asked for
    assert "convergence checks" not in (tmp_path / "report.md").read_text()  # the hand-built fit records none


def test_an_unconverged_condition_fit_is_marked_in_the_text_json_and_report(tmp_path, monkeypatch) -> None:
    import json

    import irtbayes.robustness.run as run_module

    cfit, _, _ = _hand_built_condition_fit()
    cfit.sampler = {
        "divergences": 3,
        "converged": False,
        "max_rhat": 1.08,
        "min_ess_bulk": 40.0,
        "convergence_problems": ["r-hat 1.080 > 1.01 at ability[s03]"],
    }
    monkeypatch.setattr(run_module, "fit_conditions", lambda data, **kwargs: cfit)
    result = run_module.check_robustness(cfit.data, out=tmp_path)
    assert "NOT CONVERGED: r-hat 1.080 > 1.01 at ability[s03]; max r-hat 1.080" in result.to_text()
    report_robustness(result, tmp_path)
    assert "**The condition-effects fit did not pass its convergence checks**" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "robustness.json").read_text())["conditions"]["sampler"]["converged"] is False


@pytest.mark.slow  # compiles the condition-effects model of its own: about 80 s on empty caches
def test_a_short_real_condition_fit_runs_the_convergence_checks() -> None:
    data, _, _ = simulate_condition_responses(8, 10, n_sensitive_items=1, n_sensitive_subjects=1, seed=3)
    cfit = fit_conditions(data, chains=2, draws=20, tune=20, seed=1)
    sampler = cfit.sampler
    assert sampler["converged"] is False and sampler["convergence_problems"]  # 20 draws cannot give ESS 400
    assert sampler["min_ess_bulk"] < 400 and sampler["max_rhat"] > 1.0
    assert not any("_local" in str(v) for v in cfit.posterior.data_vars)  # the horseshoe's scales are not kept


def test_the_deprecated_dask_engine_warns_and_runs_on_the_scheduler_or_in_processes(monkeypatch) -> None:
    import irtbayes.robustness.population as population_module

    calls: list[dict] = []

    def recording(func, tasks, **kwargs):
        calls.append(kwargs)
        return [task[0].name for task in tasks]

    monkeypatch.setattr(population_module, "map_tasks", recording)
    data, _ = simulate_responses(5, 6, seed=1)
    plans = [Population(name, "population", data) for name in ("first", "second", "third")]
    assert refit_populations(plans, scheduler="tcp://new:8786", workers=3) == ["first", "second", "third"]
    assert (calls[-1]["scheduler"], calls[-1]["local"], calls[-1]["workers"]) == ("tcp://new:8786", "processes", 3)
    with pytest.warns(DeprecationWarning, match="give scheduler="):
        assert refit_populations(plans, engine="dask", dask_address="tcp://old:8786") == ["first", "second", "third"]
    assert (calls[-1]["scheduler"], calls[-1]["local"]) == ("tcp://old:8786", "processes")
    with pytest.warns(DeprecationWarning, match="engine='dask' runs as engine='process'"):
        refit_populations(plans, engine="dask")
    assert (calls[-1]["scheduler"], calls[-1]["local"]) == (None, "processes")
    refit_populations(plans, engine="serial")
    assert (calls[-1]["scheduler"], calls[-1]["local"]) == (None, "serial")


def test_refit_populations_hands_every_fit_and_audit_the_settings_given(monkeypatch) -> None:
    import types

    import irtbayes.auditing.run as audit_module
    import irtbayes.fitting.fit as fit_module
    import irtbayes.robustness.population as population_module
    from irtbayes.auditing.settings import AuditSettings
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.model.spec import ModelSpec

    seen: list = []

    def fake_fit(data, spec=None, **kwargs):
        seen.append(("fit", data.n_subjects, spec, kwargs))
        return types.SimpleNamespace(
            idata="idata", posterior="posterior", diagnostics=types.SimpleNamespace(ok=True), approximate=False
        )

    def fake_audit(posterior, data, **kwargs):
        seen.append(("audit", data.n_subjects, posterior, kwargs))
        return "audited"

    monkeypatch.setattr(fit_module, "fit", fake_fit)
    monkeypatch.setattr(audit_module, "audit", fake_audit)
    monkeypatch.setattr(population_module, "outcome_from_audit", lambda name, kind, result, posterior, **kw: name)
    data, _ = simulate_responses(6, 8, seed=1)
    plans = [
        Population("six", "population", data),
        Population("four", "population", data.subset(subjects=list(data.subject_ids[:4]))),
    ]
    spec = ModelSpec(kind="1pl")
    sampler = SamplerSettings(sampler="pymc", chains=1, draws=30, tune=20, seed=9, progress=False)
    audit_settings = AuditSettings(bins=4, range=(-2.0, 2.0), ci_prob=0.8)
    done: list[str] = []
    names = refit_populations(
        plans, spec=spec, settings=sampler, audit=audit_settings, engine="serial", on_done=done.append
    )
    assert names == done == ["six", "four"]
    assert seen == [
        ("fit", 6, spec, {"settings": sampler}),
        ("audit", 6, "idata", {"settings": audit_settings}),
        ("fit", 4, spec, {"settings": sampler}),
        ("audit", 4, "idata", {"settings": audit_settings}),
    ]
    seen.clear()
    refit_populations(plans[:1], engine="serial")  # the defaults: REFIT_DEFAULTS with seed 0, the audit's defaults
    assert seen[0][3] == {"settings": SamplerSettings(chains=2, draws=500, tune=500, cores=1, progress=False, seed=0)}
    assert seen[1][3] == {"settings": AuditSettings()}
    with pytest.raises(SpecError, match="settings must be a SamplerSettings, got dict"):
        refit_populations(plans, settings={"chains": 2}, engine="serial")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="audit must be an AuditSettings, got dict"):
        refit_populations(plans, audit={"bins": 4}, engine="serial")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- settings
def test_robustness_settings_check_each_field_and_record_themselves() -> None:
    from irtbayes.auditing.settings import AuditSettings
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.robustness.run import ConditionSettings, RobustnessSettings

    settings = RobustnessSettings(bootstrap=3, revision=("a", "b"), ci_prob=0.8, seed=2)
    assert settings.audit_settings() == AuditSettings(ci_prob=0.8), "every audit uses ci_prob by default"
    assert settings.refit == SamplerSettings(chains=2, draws=500, tune=500, cores=1, progress=False)
    assert settings.seeded(settings.refit).seed == 2 and settings.seeded(settings.fit.replace(seed=7)).seed == 7
    record = settings.to_dict()
    assert record["revision"] == ["a", "b"] and record["audit"]["ci_prob"] == 0.8 and record["fit"]["progress"] is False
    assert record["conditions"] == ConditionSettings().to_dict()
    for field, bad in [
        ("bootstrap", -1),
        ("engine", "threads"),
        ("workers", 0),
        ("ci_prob", 1.5),
        ("fdr", 0),
        ("min_effect", -1.0),
        ("against", "mean"),
        ("fdr_rule", "all"),
        ("agreement", 1.2),
        ("seed", 1.5),
        ("revision", "a:b"),
        ("family", 3),
        ("fit", {"chains": 2}),
        ("audit", {"bins": 5}),
    ]:
        with pytest.raises(SpecError, match=field):
            RobustnessSettings(**{field: bad})
    with pytest.raises(SpecError, match="dask_address needs engine='dask'"):
        RobustnessSettings(dask_address="tcp://here:8786")
    with pytest.raises(SpecError, match="robustness: scheduler must be"):
        RobustnessSettings(scheduler=8786)  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match="engine='dask' and dask_address are deprecated"):
        old = RobustnessSettings(engine="dask", dask_address="tcp://here:8786")
    assert (old.engine, old.scheduler, old.dask_address) == ("process", "tcp://here:8786", None)
    assert RobustnessSettings(scheduler="tcp://here:8786").to_dict()["scheduler"] == "tcp://here:8786"
    with pytest.raises(SpecError, match=r"audit\.ci_prob \(0\.9\) differs from ci_prob \(0\.8\)"):
        RobustnessSettings(ci_prob=0.8, audit=AuditSettings())
    for field, bad in [("kind", "3pl"), ("effects", "cauchy"), ("draws", 0), ("target_accept", 1.0)]:
        with pytest.raises(SpecError, match=field):
            ConditionSettings(**{field: bad})


def test_check_robustness_hands_each_stage_its_settings(tmp_path, monkeypatch) -> None:
    import irtbayes.auditing.run as audit_module
    import irtbayes.fitting.fit as fit_module
    import irtbayes.robustness.run as run_module
    from irtbayes.auditing.settings import AuditSettings
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.model.spec import ModelSpec
    from irtbayes.robustness.population import PopulationStability
    from irtbayes.robustness.run import RobustnessSettings

    data, _ = simulate_responses(12, 10, seed=1)
    seen: dict = {}

    class Fitted:
        idata, spec = "idata", ModelSpec(kind="1pl")

    def fake_fit(data, spec=None, *, settings=None):
        seen["fit"] = (spec, settings)
        return Fitted()

    def fake_audit(posterior, data, *, settings=None):
        seen["audit"] = settings
        return "reference audit"

    def fake_refits(plans, **kwargs):
        seen["refits"] = (len(plans), kwargs)
        return []

    empty = PopulationStability(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), 0.7)
    monkeypatch.setattr(fit_module, "fit", fake_fit)
    monkeypatch.setattr(audit_module, "audit", fake_audit)
    monkeypatch.setattr(run_module, "refit_populations", fake_refits)
    monkeypatch.setattr(run_module, "population_stability", lambda *args, **kwargs: empty)
    spec = ModelSpec(kind="1pl")
    settings = RobustnessSettings(bootstrap=2, spec=spec, ci_prob=0.8, agreement=0.7, seed=3)
    result = run_module.check_robustness(data, out=tmp_path, settings=settings)
    assert seen["fit"] == (spec, SamplerSettings(progress=False, seed=3))
    assert seen["audit"].ci_prob == 0.8
    n_plans, kwargs = seen["refits"]
    assert n_plans == 2 and kwargs["spec"] is Fitted.spec and kwargs["engine"] == "process"
    assert kwargs["settings"] == SamplerSettings(chains=2, draws=500, tune=500, cores=1, progress=False, seed=3)
    assert kwargs["audit"] == AuditSettings(ci_prob=0.8) == seen["audit"]  # the reference audit's settings
    assert result.population is empty and "report_html" not in result.files


@pytest.mark.parametrize("draws", [None, 100])
def test_the_robustness_verb_builds_the_settings_its_flags_say(tmp_path, monkeypatch, capsys, draws) -> None:
    import irtbayes.robustness.run as run_module
    from irtbayes.cli.main import main
    from irtbayes.fitting.settings import SamplerSettings
    from irtbayes.robustness.run import ConditionSettings, RobustnessResult

    data, _ = simulate_responses(12, 10, seed=1)
    path = tmp_path / "responses.csv"
    data.long_frame().to_csv(path, index=False)
    seen = {}

    def fake(data, *, out, fit=None, settings=None):
        seen.update(out=out, fit=fit, settings=settings)
        return RobustnessResult()

    monkeypatch.setattr(run_module, "check_robustness", fake)
    flags = ["--bootstrap", "2", "--chains", "1", "--seed", "5", "--ci", "0.8", "--engine", "serial", "--no-report"]
    flags += [] if draws is None else ["--draws", str(draws), "--tune", "50"]
    assert main(["robustness", str(path), "--out", str(tmp_path / "rob"), *flags]) == 0, capsys.readouterr()
    s = seen["settings"]
    given = {} if draws is None else {"draws": draws, "tune": 50}
    assert s.fit == SamplerSettings(chains=1, seed=5, progress=False, **given)
    assert s.refit == SamplerSettings(
        **{"chains": 1, "draws": 500, "tune": 500, "cores": 1, "seed": 5, "progress": False, **given}
    )
    assert s.conditions == ConditionSettings(chains=1, **given)
    assert (s.bootstrap, s.seed, s.ci_prob, s.engine) == (2, 5, 0.8, "serial")
    assert not (tmp_path / "rob" / "report.html").exists()  # --no-report
    assert seen["fit"] is None and seen["out"] == str(tmp_path / "rob")


def test_the_robustness_verb_reads_scheduler_and_the_deprecated_dask_flags(tmp_path, monkeypatch, caplog) -> None:
    import irtbayes.robustness.run as run_module
    from irtbayes.cli.main import main
    from irtbayes.robustness.run import RobustnessResult

    data, _ = simulate_responses(12, 10, seed=1)
    path = tmp_path / "responses.csv"
    data.long_frame().to_csv(path, index=False)
    seen = []
    monkeypatch.setattr(
        run_module, "check_robustness", lambda *a, settings, **k: seen.append(settings) or RobustnessResult()
    )
    base = ["robustness", str(path), "--out", str(tmp_path / "rob"), "--bootstrap", "1", "--no-report"]
    assert main([*base, "--scheduler", "tcp://new:8786"]) == 0
    assert (seen[-1].engine, seen[-1].scheduler) == ("process", "tcp://new:8786")
    assert "deprecated" not in caplog.text
    assert main([*base, "--engine", "dask", "--dask-address", "tcp://old:8786"]) == 0
    assert (seen[-1].engine, seen[-1].scheduler, seen[-1].dask_address) == ("process", "tcp://old:8786", None)
    assert "--engine dask and --dask-address are deprecated" in caplog.text
