"""Graded fits (GRM, GPCM) end to end: recovery, storage, model checks, scores, the audit, exports and refusals.

The fits are the session fixtures ``fitted_grm`` and ``fitted_gpcm`` (150 and 300 simulated subjects x 12 items with
2 to 5 categories, 2 chains x 1,000 draws); the slow tests compare with mirt's published graded fit of the Science data.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.auditing.run import audit
from irtbayes.checks.predictive import compare_fits, log_likelihood, posterior_predictive_check
from irtbayes.core import irt
from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.io.tabular import load_wide
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.scoring import score
from irtbayes.fitting.fit import fit
from irtbayes.fitting.storage import load_fit, save_fit
from irtbayes.model.spec import ModelSpec
from irtbayes.reporting.interchange import mirt_items

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _inside(posterior, truth, name: str, prob: float = 0.9) -> np.ndarray:
    """Whether each true value lies in its equal-tailed ``prob`` interval (true values that exist only)."""
    draws = posterior[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # absent thresholds: NaN in every draw
        lo = draws.quantile((1 - prob) / 2, ("chain", "draw"))
        hi = draws.quantile((1 + prob) / 2, ("chain", "draw"))
    t = truth[name].transpose(*lo.dims)
    valid = ~np.isnan(t.values)
    return ((t >= lo) & (t <= hi)).values[valid]


# the GPCM compiles on its own (about 50 s on empty caches): its recovery runs in the slow tier, here and over seeds
@pytest.mark.parametrize("which", ["fitted_grm", pytest.param("fitted_gpcm", marks=pytest.mark.slow)])
def test_graded_fits_converge_and_recover_the_truth(which, request):
    fitted = request.getfixturevalue(which)
    post, diag = fitted.fit.posterior, fitted.fit.diagnostics
    assert diag.divergences == 0
    assert diag.max_rhat < 1.03
    # absent thresholds (items with fewer categories) are left out of the checks, not failed
    threshold = next(v for v in diag.variables if v.name == "threshold")
    assert threshold.n_excluded == int(np.isnan(fitted.truth["threshold"].values).sum())
    inside = np.concatenate([_inside(post, fitted.truth, n) for n in ("threshold", "discrimination", "location")])
    # 30 thresholds, 12 discriminations, 12 locations at 90%: 48.6 expected, sd about 2.2 if independent
    assert inside.mean() >= 0.75, inside.mean()
    corr = np.corrcoef(post["ability"].mean(("chain", "draw")), fitted.truth["ability"])[0, 1]
    assert corr > 0.85


def test_location_is_where_the_expected_score_is_half_the_maximum(fitted_grm):
    post = fitted_grm.fit.posterior
    a = post["discrimination"].isel(chain=0, draw=slice(0, 20)).values
    b = post["threshold"].isel(chain=0, draw=slice(0, 20)).transpose("draw", "item", "boundary").values
    location = post["location"].isel(chain=0, draw=slice(0, 20)).values
    expected = irt.graded_expected_score(location, a, b, kind="grm")
    top = np.asarray(fitted_grm.data.n_categories) - 1
    np.testing.assert_allclose(expected, np.broadcast_to(top / 2, expected.shape), atol=1e-6)
    assert post["intercept"].dims[-1] == "boundary"
    np.testing.assert_allclose(post["intercept"], -post["discrimination"] * post["threshold"], rtol=1e-6)


def test_a_saved_graded_fit_loads_with_its_thresholds_and_locations(fitted_grm, tmp_path):
    folder = save_fit(fitted_grm.fit, tmp_path / "grm")
    loaded = load_fit(folder)
    assert loaded.spec.kind == "grm"
    for name in ("threshold", "location", "intercept", "log_step"):
        np.testing.assert_allclose(loaded.posterior[name], fitted_grm.fit.posterior[name], rtol=1e-6)
    items = pd.read_csv(folder / "items.csv")
    assert {"threshold1_mean", "threshold4_ci_high", "intercept2_mean", "location_mean"} <= set(items.columns)
    assert items.loc[0, ["threshold2_mean", "threshold3_mean", "threshold4_mean"]].isna().all()  # a binary item


def test_mirt_export_of_a_graded_fit(fitted_grm):
    si = mirt_items(fitted_grm.fit, layout="si")
    irt_layout = mirt_items(fitted_grm.fit)
    assert si.columns.tolist() == ["a1", "d1", "d2", "d3", "d4"]
    assert irt_layout.columns.tolist() == ["a", "b1", "b2", "b3", "b4"]
    assert si.loc["item00003"].notna().all() and si.loc["item00000", ["d2", "d3", "d4"]].isna().all()
    post = fitted_grm.fit.posterior
    mean_d = post["intercept"].sel(item="item00003").astype("float64").mean(("chain", "draw")).values
    np.testing.assert_allclose(si.loc["item00003", ["d1", "d2", "d3", "d4"]], mean_d, rtol=1e-6)


def test_graded_log_likelihood_and_predictive_check(fitted_grm):
    data = fitted_grm.data
    ll = log_likelihood(fitted_grm.fit, data, n_draws=40)
    assert ll.attrs["likelihood"] == "graded response (categorical)" and ll.attrs["quasi_likelihood"] == 0
    post = fitted_grm.fit.posterior.isel(chain=[0], draw=[ll["draw"].values[0]])
    s, i = data.subject_codes, data.item_codes
    theta = post["ability"].values.ravel()[s]
    a = post["discrimination"].values.reshape(-1)[i]
    b = post["threshold"].transpose(..., "item", "boundary").values.reshape(data.n_items, -1)[i]
    np.testing.assert_allclose(
        ll.isel(chain=0, draw=0), irt.graded_log_likelihood(data.values, theta, a, b, kind="grm")
    )
    check = posterior_predictive_check(fitted_grm.fit, data, n_draws=100, seed=1)
    assert not check.quasi_likelihood
    assert int(check.items["misfit"].sum()) <= 3  # the true model: about 2 x 5% of 12 items by chance
    observed = np.bincount(i, weights=data.values) / np.bincount(i)
    np.testing.assert_allclose(check.items["observed_mean"], observed)


@pytest.mark.slow  # a second fit of the same data (about 15 s)
def test_grm_and_gpcm_compare_by_loo(fitted_grm):
    """The GPCM fitted to the GRM's data: a true likelihood each, so their LOO values compare (no quasi note)."""
    data = fitted_grm.data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a short fit that may miss ESS >= 400; Pareto k
        other = fit(data, ModelSpec(kind="gpcm"), chains=2, draws=300, tune=300, seed=7, progress=False)
        table = compare_fits({"grm": fitted_grm.fit, "gpcm": other}, data, n_draws=200)
    assert set(table.index) == {"grm", "gpcm"} and "note" not in table.attrs
    assert "graded response (categorical)" in table.attrs["likelihood"]


def test_scores_of_new_subjects_on_a_graded_bank(fitted_grm):
    data = fitted_grm.data
    scores = score(fitted_grm.fit, data, n_draws=100, seed=2)
    mean = scores.draws.mean(("chain", "draw")).values
    assert np.corrcoef(mean, fitted_grm.truth["ability"])[0, 1] > 0.85
    frame = pd.DataFrame({"subject": ["new"] * 2, "item": ["item00000", "item00001"], "response": [2, 1]})
    bad = ResponseData.from_long(frame, scoring="ordinal", categories=[0, 1, 2], source="new.csv")
    with pytest.raises(DataError, match=r"new.csv: .*'item00000' is 2, not one of the item's categories .*0\.\.1"):
        score(fitted_grm.fit, bad)


def test_audit_of_graded_items_places_them_at_their_locations(fitted_grm):
    result = audit(fitted_grm.fit, fitted_grm.data, seed=1)
    assert result.settings["graded"] == "grm"
    assert "Graded items (graded response model)" in result.to_text()
    items = result.items.set_index("item")
    location = fitted_grm.fit.posterior["location"].mean(("chain", "draw")).to_series()
    np.testing.assert_allclose(items.loc[location.index, "difficulty_mean"], location, atol=1e-4)
    racc = result.ranking["reweighted_mean"]
    assert racc.between(0, 1).all()  # shares of each item's maximum score


def test_audit_of_graded_items_at_their_thresholds(fitted_grm, tmp_path):
    from irtbayes.auditing.folder import load_audit, save_audit

    result = audit(fitted_grm.fit, fitted_grm.data, graded_points="thresholds", ensemble="draws", seed=1)
    assert result.settings["graded_points"] == "thresholds"
    assert "at each of its thresholds" in result.to_text()
    bins = result.bins[result.bins["scope"] == "all"]
    n_thresholds = int((~np.isnan(fitted_grm.truth["threshold"].values)).sum())  # 30: each item's K - 1
    in_range = bins["count_mean"].sum()
    below_above = result.benchmarks.set_index("scope").loc["all", ["mass_below_mean", "mass_above_mean"]].sum()
    assert in_range + below_above * n_thresholds == pytest.approx(n_thresholds, rel=1e-6)
    # the items table still places each item once, at its location
    located = audit(fitted_grm.fit, fitted_grm.data, ensemble="draws", seed=1)
    pd.testing.assert_frame_equal(result.items, located.items)
    save_audit(result, tmp_path / "audit")
    assert load_audit(tmp_path / "audit").settings["graded_points"] == "thresholds"
    with pytest.raises(SpecError, match="graded_points must be one of"):
        audit(fitted_grm.fit, fitted_grm.data, graded_points="each")


def test_stages_for_binary_models_refuse_a_graded_fit(fitted_grm):
    with pytest.raises(SpecError, match=r"evaluating a new system .* this is a GRM fit of graded items"):
        ItemBank.from_fit(fitted_grm.fit, data=False)


def test_ordinal_file_fit_audit_and_score_from_the_command_line(tmp_path, capsys):
    """The README's path for graded items: a wide file of ratings 1..4 read as categories, fitted with the GRM,
    audited from the saved fit alone (its data re-read on the fit's own scale) and new ratings scored.

    Two benchmarks, named in an item file, give the model of ``fitted_grm``'s structure, whose compiled code this
    fit loads instead of compiling a model of its own (about 45 s on empty caches)."""
    from irtbayes.cli.main import main

    data, _ = simulate_responses(60, 8, kind="grm", n_categories=4, n_benchmarks=2, missing=0.0, seed=9)
    wide = data.to_matrix().astype(int) + 1
    path = tmp_path / "ratings.csv"
    pd.DataFrame(wide, columns=data.item_ids, index=data.subject_ids).rename_axis("subject").to_csv(path)
    data.items[["benchmark"]].rename_axis("item").to_csv(tmp_path / "items.csv")
    loaded = load_wide(path, scoring="ordinal")
    assert loaded.response_kind == "ordinal" and loaded.n_categories.tolist() == [4] * 8
    np.testing.assert_array_equal(loaded.to_matrix(), data.to_matrix())
    fitted = tmp_path / "fit"
    argv = ["fit", str(path), "--response-kind", "ordinal", "--model", "grm", "--out", str(fitted)]
    argv += ["--items", str(tmp_path / "items.csv")]
    assert main([*argv, "--chains", "2", "--draws", "200", "--tune", "200", "--seed", "1", "--no-progress"]) == 0
    assert main(["audit", "--fit", str(fitted), "--out", str(tmp_path / "audit"), "--no-report", "--no-progress"]) == 0
    assert "Graded items (graded response model)" in (tmp_path / "audit" / "audit.txt").read_text()
    new = pd.DataFrame({"subject": ["new"] * 8, "item": data.item_ids, "response": [4, 4, 3, 4, 4, 4, 3, 4]})
    new.to_csv(tmp_path / "new.csv", index=False)
    assert main(["score", "--fit", str(fitted), str(tmp_path / "new.csv"), "--out", str(tmp_path / "scores")]) == 0
    ability = pd.read_csv(tmp_path / "scores" / "scores.csv").set_index("subject").loc["new", "ability_mean"]
    assert ability > 0.5  # near the top category on every item: well above the average subject
    capsys.readouterr()


@pytest.mark.slow
def test_science_graded_fit_matches_mirt():
    """mirt's Science data: our posterior intervals hold mirt's published graded estimates (a, d1, d2, d3)."""
    data = load_wide(FIXTURES / "science_mirt.csv", scoring="ordinal")
    result = fit(data, ModelSpec(kind="grm"), seed=1, progress=False)
    assert result.diagnostics.ok, result.diagnostics.to_text()
    reference = pd.read_csv(FIXTURES / "published_reference_estimates.csv")
    rows = reference[reference["dataset"].eq("Science") & reference["model"].str.startswith("graded")]
    assert len(rows) == 16
    post = result.posterior
    inside = []
    for _, row in rows.iterrows():
        item, name, value = row["item"], row["parameter"], float(row["estimate"])
        draws = (
            post["discrimination"].sel(item=item)
            if name == "a1"
            else post["intercept"].sel(item=item, boundary=name[1:])
        )
        lo, hi = np.quantile(draws.values, [0.05, 0.95])
        inside.append(lo <= value <= hi)
    assert all(inside), rows.assign(inside=inside)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["grm", "gpcm"])
def test_graded_recovery_over_seeds(kind):
    """Coverage of the 90% intervals of thresholds, discriminations and locations over three simulated banks."""
    inside = []
    for seed in (31, 32, 33):
        data, truth = simulate_responses(200, 16, kind=kind, n_categories=[2, 3, 4, 5] * 4, n_benchmarks=2, seed=seed)
        result = fit(data, ModelSpec(kind=kind), seed=seed, progress=False)
        assert result.diagnostics.ok, result.diagnostics.to_text()
        inside += [_inside(result.posterior, truth, n) for n in ("threshold", "discrimination", "location")]
    coverage = np.concatenate(inside).mean()
    assert 0.8 <= coverage <= 0.97, coverage


@pytest.mark.slow
def test_graded_fit_with_the_numpyro_sampler():
    """The numpyro path runs the graded likelihood in its dense layout (the JAX graph) and recovers the bank."""
    pytest.importorskip("numpyro")
    data, truth = simulate_responses(150, 12, kind="grm", n_categories=[2, 3, 4, 5] * 3, n_benchmarks=2, seed=21)
    result = fit(data, ModelSpec(kind="grm"), sampler="numpyro", chains=2, draws=500, tune=500, seed=3, progress=False)
    assert result.spec.layout == "dense" and result.diagnostics.divergences == 0
    assert result.diagnostics.max_rhat < 1.05
    location = result.posterior["location"].mean(("chain", "draw"))
    assert np.corrcoef(location, truth["location"])[0, 1] > 0.9


def test_score_command_reads_new_responses_in_the_fit_s_categories(fitted_grm, tmp_path, capsys):
    """``irtbayes score`` on a graded fit: the responses are read on the fit's category scale (not re-inferred,
    which would renumber a scale whose lowest category nobody used), and only abilities are given."""
    from irtbayes.cli.main import main

    folder = save_fit(fitted_grm.fit, tmp_path / "fit")
    assert fitted_grm.fit.category_labels() == ["0", "1", "2", "3", "4"]
    new = fitted_grm.data.long_frame()[["subject", "item", "response"]]
    new = new[new["subject"].isin(["subject000", "subject001"])].assign(subject=lambda f: "new-" + f["subject"])
    new = new[new["response"] > 0]  # nobody in the new file uses category 0: inferred categories would renumber
    new.assign(response=new["response"].astype(int)).to_csv(tmp_path / "new.csv", index=False)
    assert main(["score", "--fit", str(folder), str(tmp_path / "new.csv"), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "GRADED: a GRM fit" in out
    scores = pd.read_csv(tmp_path / "out" / "scores.csv").set_index("subject")
    direct = score(fitted_grm.fit, load_long_codes(tmp_path / "new.csv"), seed=None).table(0.9).set_index("subject")
    np.testing.assert_allclose(scores["ability_mean"], direct["ability_mean"], atol=0.15)


def load_long_codes(path: Path) -> ResponseData:
    """The new responses read as codes 0..4 (the fixture's scale), declared."""
    from irtbayes.data.io.tabular import load_long

    return load_long(path, scoring="ordinal", categories=[0, 1, 2, 3, 4])


# ------------------------------------------------------------------------------------------- BenchFill, graded
def _graded_candidates(benchmark: str, ids: list[str]) -> list:
    from irtbayes.benchfill.candidates import Candidate

    texts = {
        "good": "Rate how well the reply explains the proof that there are infinitely many primes.",
        "miskeyed": "Judge the poem about autumn leaves for its use of rhyme and imagery in every stanza.",
        "easy": "Score the greeting the assistant wrote for a customer who asked about store hours.",
    }
    return [Candidate(candidate_id=c, text=texts[c], answer="rubric", benchmark=benchmark) for c in ids]


def test_graded_candidates_are_read_on_the_fit_s_scale_and_the_fixed_grid_refuses_them(fitted_grm):
    """BenchFill on a graded bank: the candidates' ratings are read in the bank's own categories (a file whose
    lowest rating nobody used keeps its codes), a graded ResponseData keeps its labels, and the binary-only paths
    (the fixed-bank grid, the operating characteristic) refuse with a message naming the full refit."""
    from irtbayes.benchfill.acceptance import operating_characteristic
    from irtbayes.benchfill.aim import choose_aim
    from irtbayes.benchfill.calibration import calibrate_fixed, candidate_response_data
    from irtbayes.benchfill.run import calibrate_candidates

    fit_result, data = fitted_grm.fit, fitted_grm.data
    bench = str(data.items["benchmark"].iloc[0])
    candidates = _graded_candidates(bench, ["good"])
    subjects = [str(s) for s in data.subject_ids[:40]]
    ratings = np.arange(40) % 4 + 1  # 1..4: category 0 unused
    frame = pd.DataFrame({"subject": subjects, "item": "good", "response": ratings.astype(str)})
    new = candidate_response_data(frame, candidates, fit=fit_result)
    assert new.response_kind == "ordinal" and new.n_categories.tolist() == [5]
    np.testing.assert_array_equal(new.values, ratings.astype(float))  # labels "1".."4" are codes 1..4 of 0..4
    np.testing.assert_allclose(new.shares, ratings / 4)
    again = candidate_response_data(new, candidates, fit=fit_result)
    np.testing.assert_array_equal(again.values, new.values)
    with pytest.raises(DataError, match=r"holds .9., which is not one of the declared categories 0, 1, 2, 3, 4"):
        candidate_response_data(frame.assign(response="9"), candidates, fit=fit_result)
    with pytest.raises(SpecError, match="full refit"):
        calibrate_fixed(fit_result, new)
    aim, _ = choose_aim(fit_result, data, interval=(0.0, 1.0))
    with pytest.raises(SpecError, match=r"mode=.fixed. .* GRM fit, .* full refit"):
        calibrate_candidates(fit_result, data, candidates, new, aim, mode="fixed")
    with pytest.raises(SpecError, match=r"operating characteristic .* GRM fit"):
        operating_characteristic(fit_result, aim_lo=0.0, aim_hi=1.0)


def test_item_fit_of_graded_candidates_flags_reversed_ratings(fitted_grm):
    """The construct screen on graded items: the bank's five-category items' own ratings fit their thresholds
    (posterior predictive p-values spread over (0, 1), median well above the screen's 0.01), the same ratings
    reversed do not (p below 0.01 for each, with a far larger discrepancy)."""
    from irtbayes.benchfill.screens import ITEM_FIT_PPP, item_fit

    fit_result, data = fitted_grm.fit, fitted_grm.data
    n_cat = data.items["n_categories"]
    chosen = [str(i) for i in n_cat.index[n_cat.to_numpy() == 5]]
    post = fit_result.posterior
    items = post[["location", "discrimination", "threshold"]].sel(item=chosen).rename({"location": "difficulty"})
    items.attrs = {"model_kind": "grm"}
    own = data.subset(items=chosen)
    frame = own.long_frame()[["subject", "item", "response"]]
    meta = own.items.reset_index()[["item", "benchmark", "n_categories"]]
    reversed_ = ResponseData.from_long(
        frame.assign(response=4 - frame["response"]), items=meta, scoring="ordinal", categories=list(range(5))
    )
    fits = item_fit(post["ability"], items, own, seed=1)
    flipped = item_fit(post["ability"], items, reversed_, seed=1)
    assert len(chosen) == 3 and fits["item_fit_ppp"].median() > 0.1
    assert (flipped["item_fit_ppp"] < ITEM_FIT_PPP).all()
    assert (flipped["item_fit_discrepancy"] > 5 * fits["item_fit_discrepancy"]).all()
    items.attrs = {}
    with pytest.raises(DataError, match="model_kind"):
        item_fit(post["ability"], items, own)


@pytest.mark.slow  # a graded bank's fit and its refit with the candidates (about a minute)
@pytest.mark.parametrize(("kind", "n_benchmarks"), [("grm", 1), ("gpcm", 2)])
def test_benchfill_round_on_a_graded_bank(kind, n_benchmarks, tmp_path):
    """A full BenchFill round on a simulated graded bank: a candidate whose location lies in the aim is
    accepted (its location's interval holds the truth), one with reversed ratings is rejected as mis-keyed, one
    far below as too easy; the audit after places the added item at its location and the result is written.
    With two benchmarks the candidates are refitted as their own group and counted in their benchmark after."""
    from irtbayes.benchfill.aim import choose_aim
    from irtbayes.benchfill.calibration import candidate_response_data
    from irtbayes.benchfill.result import save_benchfill
    from irtbayes.benchfill.run import calibrate_candidates

    data, truth = simulate_responses(150, 14, kind=kind, n_categories=4, n_benchmarks=n_benchmarks, seed=3)
    bank = fit(data, ModelSpec(kind=kind), chains=2, draws=500, tune=500, seed=1, progress=False)
    theta = truth["ability"].values
    rng = np.random.default_rng(5)
    designs = {
        "good": ([0.5, 1.0, 1.5], False),
        "miskeyed": ([0.5, 1.0, 1.5], True),
        "easy": ([-3.0, -2.5, -2.0], False),
    }
    frames = []
    for cid, (thresholds, reverse) in designs.items():
        probs = irt.graded_probabilities(theta[:, None], np.array([1.5]), np.array([thresholds]), kind=kind)[:, 0]
        codes = (np.cumsum(probs, axis=-1) < rng.random((len(theta), 1))).sum(axis=-1)
        codes = 3 - codes if reverse else codes
        frames.append(pd.DataFrame({"subject": data.subject_ids.astype(str), "item": cid, "response": codes}))
    bench = str(data.items["benchmark"].iloc[0])
    candidates = _graded_candidates(bench, list(designs))
    new = candidate_response_data(pd.concat(frames), candidates, fit=bank)
    aim, _ = choose_aim(bank, data, interval=(0.5, 1.5))
    result = calibrate_candidates(bank, data, candidates, new, aim, mode="full", seed=2, draws=500, tune=500, chains=2)
    decisions = result.decisions
    assert result.accepted == ["good"]
    assert decisions.loc["miskeyed", "key_check"] == "mis-keyed"
    assert decisions.loc["easy", "bin_check"] == "too easy"
    true_location = float(irt.graded_location(np.array(1.5), np.array([0.5, 1.0, 1.5]), kind=kind))
    assert decisions.loc["good", "difficulty_ci_low"] <= true_location <= decisions.loc["good", "difficulty_ci_high"]
    assert decisions.loc["miskeyed", "construct"].startswith("off-construct")
    comparison = result.comparison.set_index(["scope", "version"])
    after = comparison.loc[("all", "after")]
    assert int(after["n_items"]) == 15 and int(after["n_added"]) == 1
    if n_benchmarks > 1:  # the candidates' group "bench [candidates]" is counted as its benchmark again
        assert result.settings["prior"] == "candidates"
        before_bench = int(comparison.loc[(bench, "before"), "n_items"])
        assert int(comparison.loc[(bench, "after"), "n_items"]) == before_bench + 1
    assert f"Graded items ({kind.upper()})" in result.to_text()
    save_benchfill(result, tmp_path / "round", candidates=candidates)
    assert (tmp_path / "round").is_dir()


def test_a_graded_fit_s_data_file_is_read_again_on_its_scale(fitted_grm, tmp_path):
    """``load_fit_data`` (BenchFill's way back to a fit's data) reads a graded fit's file as ordinal categories on
    the fit's own scale, so the checksum matches (the fit: the fixture's five-category items, whose ratings in
    the file do not use every category on every item)."""
    from irtbayes.fitting.result import Fit
    from irtbayes.fitting.storage import load_fit_data

    data = fitted_grm.data
    five = [str(i) for i in data.items.index[data.items["n_categories"].to_numpy() == 5]]
    data = data.subset(items=five)
    names = ["ability", "difficulty", "discrimination", "threshold", "location"]
    posterior = fitted_grm.fit.posterior[names].sel(item=five, subject=[str(s) for s in data.subject_ids])
    bank = Fit.from_posterior(posterior, data, spec=fitted_grm.fit.spec)
    frame = data.long_frame()[["subject", "item", "response"]]
    frame = frame.assign(response=frame["response"].astype(int), benchmark=frame["item"].map(data.items["benchmark"]))
    frame.to_csv(tmp_path / "ratings.csv", index=False)
    loaded = load_fit_data(bank, tmp_path / "ratings.csv")
    assert loaded.response_kind == "ordinal" and loaded.checksum() == data.checksum()
