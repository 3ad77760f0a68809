"""Fitting: recovery on tiny seeded fits, tables, flags, scoring, save/load, convergence checks."""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

import irtbayes.fitting.fit as fit_module
import irtbayes.fitting.sampling as sampling_module
import irtbayes.fitting.storage as storage_module
import irtbayes.fitting.until_converged as until_converged
from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.evaluating.scoring import score
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.fit import fit
from irtbayes.fitting.settings import SamplerSettings
from irtbayes.fitting.storage import load_fit, save_fit
from irtbayes.model.build import build_model
from irtbayes.model.inputs import model_inputs
from irtbayes.model.spec import ModelSpec


def _coverage(table: pd.DataFrame, truth: np.ndarray, name: str) -> float:
    inside = (table[f"{name}_ci_low"].to_numpy() <= truth) & (truth <= table[f"{name}_ci_high"].to_numpy())
    return float(inside.mean())


def _check_recovery(fitted, *, params=("difficulty",), min_cover=0.75, min_rank=0.8):
    result, truth = fitted.fit, fitted.truth
    items = result.items_table(ci_prob=0.9).set_index("item").loc[truth["item"].values]
    report = []
    for name in params:
        true = truth[name].values
        cover = _coverage(items, true, name)
        rank = spearmanr(items[f"{name}_mean"], true).statistic
        report.append(f"{name}: 90% coverage {cover:.2f}, rank corr {rank:.3f}")
        assert cover >= min_cover, "; ".join(report)
        assert rank >= min_rank, "; ".join(report)
    subjects = result.subjects_table(ci_prob=0.9)
    if "dim" in subjects.columns:
        true_ab = truth["ability"].to_series().rename("truth").reset_index()
        merged = subjects.merge(true_ab, on=["subject", "dim"])
    else:
        merged = subjects.merge(truth["ability"].to_series().rename("truth").reset_index(), on="subject")
    cover = _coverage(merged, merged["truth"].to_numpy(), "ability")
    rank = spearmanr(merged["ability_mean"], merged["truth"]).statistic
    assert cover >= min_cover and rank >= 0.8, f"ability: 90% coverage {cover:.2f}, rank corr {rank:.3f}"
    # tiny data: the audit quantities must have mixed; hyper-sds of discriminations mix slowest there
    d = result.diagnostics
    core = max(v.max_rhat for v in d.variables if v.name in ("ability", "difficulty"))
    assert core <= 1.05, f"max r-hat of abilities and difficulties {core:.3f}\n{d.to_text()}"
    assert d.max_rhat <= 1.1, f"max r-hat {d.max_rhat:.3f}\n{d.to_text()}"
    assert d.divergences == 0, f"{d.divergences} divergences\n{d.to_text()}"


def test_2pl_recovers_the_truth(fitted_2pl):
    _check_recovery(fitted_2pl, params=("difficulty", "discrimination"), min_rank=0.6)


def test_1pl_recovers_the_truth(fitted_1pl):
    _check_recovery(fitted_1pl, params=("difficulty",))
    table = fitted_1pl.fit.items_table()
    assert table["discrimination_sd"].nunique() == 1, "1PL items must share one discrimination"


@pytest.mark.slow  # the only default test of a sampled 3PL fit: compiling and sampling it cost 15 s on empty caches
def test_3pl_recovers_difficulties_and_guessing(fitted_3pl):
    _check_recovery(fitted_3pl, params=("difficulty",), min_rank=0.75)
    items = fitted_3pl.fit.items_table()
    assert items["guessing_mean"].between(0.05, 0.5).all(), items["guessing_mean"].describe().to_string()


@pytest.mark.slow  # the two-dimensional model compiles on its own: about 65 s on empty caches
def test_2dim_recovers_abilities_per_domain_and_their_correlation(fitted_2dim):
    _check_recovery(fitted_2dim, params=("difficulty",))
    corr = fitted_2dim.fit.posterior["ability_corr"].isel(dim=0, dim2=1)
    lo, hi = np.quantile(corr.values, [0.05, 0.95])
    assert lo < 0.5 < hi or abs(float(corr.mean()) - 0.5) < 0.25, f"correlation 90% interval [{lo:.2f}, {hi:.2f}]"
    two = fitted_2dim.fit.subjects_table()
    assert len(two) == 2 * fitted_2dim.data.n_subjects and set(two["dim"]) == set(fitted_2dim.data.domains)


def test_abilities_are_standardised_in_every_draw(fitted_2pl):
    ability = fitted_2pl.fit.posterior["ability"]
    means = ability.mean("subject").values
    sds = ability.std("subject").values
    assert np.abs(means).max() < 1e-8 and np.abs(sds - 1).max() < 1e-8, f"{np.abs(means).max()}, {sds.min()}"


def test_items_table_columns_and_ci_prob(fitted_2pl):
    result, data = fitted_2pl.fit, fitted_2pl.data
    table = result.items_table(ci_prob=0.8)
    assert list(table["item"]) == list(data.item_ids)
    for p in ("difficulty", "discrimination", "intercept"):
        for s in ("mean", "sd", "ci_low", "ci_high"):
            assert f"{p}_{s}" in table.columns
    assert "guessing_mean" not in table.columns
    assert table.attrs["ci_prob"] == 0.8 and (table["ci_prob"] == 0.8).all()
    assert table.attrs["approximate"] is False
    assert (table["difficulty_ci_low"] < table["difficulty_mean"]).all()
    assert (table["difficulty_mean"] < table["difficulty_ci_high"]).all()
    wider = result.items_table(ci_prob=0.95)
    assert (
        wider["difficulty_ci_high"] - wider["difficulty_ci_low"]
        > table["difficulty_ci_high"] - table["difficulty_ci_low"]
    ).all()
    assert list(table["benchmark"]) == list(data.items["benchmark"])
    d = result.posterior
    assert np.allclose(d["intercept"], -d["discrimination"] * d["difficulty"]), "intercept must be -a*b"


def test_subjects_table(fitted_2pl):
    table = fitted_2pl.fit.subjects_table()
    assert list(table["subject"]) == list(fitted_2pl.data.subject_ids)
    assert {"ability_mean", "ability_sd", "ability_ci_low", "ability_ci_high", "n_responses"} <= set(table.columns)


def test_save_and_load_round_trip(fitted_2pl, tmp_path):
    result, data = fitted_2pl.fit, fitted_2pl.data
    target = save_fit(result, tmp_path / "fit")
    assert sorted(p.name for p in target.iterdir()) == ["card.json", "items.csv", "posterior.nc", "subjects.csv"]
    card = json.loads((target / "card.json").read_text())
    assert card["spec"] == result.spec.to_dict() and card["sampler"]["seed"] == result.sampler["seed"]
    assert card["data_checksum"] == data.checksum() and "pymc" in card["package_versions"]
    again = load_fit(target, data=data)
    pd.testing.assert_frame_equal(again.items_table(), result.items_table())
    pd.testing.assert_frame_equal(again.subjects_table(), result.subjects_table())
    assert again.spec == result.spec and again.diagnostics == result.diagnostics
    saved_items = pd.read_csv(target / "items.csv")
    assert np.allclose(saved_items["difficulty_mean"], result.items_table()["difficulty_mean"])
    with pytest.raises(FitError, match="already exists"):
        save_fit(result, target)
    save_fit(result, target, overwrite=True)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary folders left behind"


def test_load_refuses_other_data(fitted_2pl, tmp_path):
    target = save_fit(fitted_2pl.fit, tmp_path / "fit")
    other, _ = simulate_responses(20, 10, seed=99)
    with pytest.raises(FitError, match="other data"):
        load_fit(target, data=other)


def test_load_names_the_damaged_file(fitted_2pl, tmp_path):
    target = save_fit(fitted_2pl.fit, tmp_path / "fit")
    nc = target / "posterior.nc"
    raw = nc.read_bytes()
    nc.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(FitError, match=r"posterior\.nc"):
        load_fit(target)
    nc.write_bytes(raw)
    card = target / "card.json"
    text = card.read_text()
    card.write_text(text[: len(text) // 2])
    with pytest.raises(FitError, match=r"card\.json"):
        load_fit(target)
    card.write_text(json.dumps({**json.loads(text), "format_version": 99}))
    with pytest.raises(FitError, match="format version"):
        load_fit(target)
    card.unlink()
    with pytest.raises(FitError, match=r"card\.json: missing"):
        load_fit(target)
    with pytest.raises(FitError, match="no saved fit"):
        load_fit(tmp_path / "nowhere")


def test_interrupted_save_leaves_no_folder(fitted_2pl, tmp_path, monkeypatch):
    def broken(result, folder: Path, **options: object) -> None:
        (folder / "posterior.nc").write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(storage_module, "_write_fit_files", broken)
    with pytest.raises(KeyboardInterrupt):
        save_fit(fitted_2pl.fit, tmp_path / "fit")
    assert list(tmp_path.iterdir()) == [], f"left behind: {list(tmp_path.iterdir())}"


def test_score_new_subjects_with_items_fixed(fitted_2pl):
    result, data = fitted_2pl.fit, fitted_2pl.data
    scores = score(result, data, n_draws=200, seed=1)
    table = scores.table()
    fitted = result.subjects_table().set_index("subject")["ability_mean"]
    rho = np.corrcoef(table.set_index("subject")["ability_mean"].loc[fitted.index], fitted)[0, 1]
    assert rho > 0.95, f"correlation of scored and fitted abilities {rho:.3f}"
    assert (table["ability_sd"] > 0).all()
    few = data.subset(items=list(data.item_ids[:5]))
    wide = score(result, few, n_draws=200, seed=1).table()
    assert wide["ability_sd"].median() > table["ability_sd"].median(), "fewer items must give wider intervals"
    frame = pd.DataFrame({"subject": ["new"], "item": ["not-an-item"], "response": [1]})
    with pytest.raises(DataError, match="not in the fitted item bank"):
        score(result, ResponseData.from_long(frame))


def test_flagged_items(fitted_2pl):
    table = fitted_2pl.fit.flagged_items(min_discrimination=10.0, prob=0.5)
    assert len(table) == fitted_2pl.data.n_items and table["flags"].str.contains("low_discrimination").all()
    none = fitted_2pl.fit.flagged_items(min_discrimination=0.01)
    data = fitted_2pl.data
    constant = data.uninformative_items()
    assert set(none["item"]) >= set(constant.index), (none, constant)


def test_flags_items_everyone_solves(fitted_2pl):
    flags = fitted_2pl.fit.flagged_items().set_index("item")["flags"]
    first, second = fitted_2pl.data.item_ids[:2]
    assert "all_correct" in flags.get(first, ""), flags.to_string()
    assert "all_wrong" in flags.get(second, ""), flags.to_string()


def test_fit_rejects_bad_settings(fitted_2pl):
    with pytest.raises(SpecError, match="unknown sampler"):
        fit(fitted_2pl.data, sampler="gibbs")
    with pytest.raises(SpecError, match="chains"):
        fit(fitted_2pl.data, chains=0)


def test_default_sampler_settings_follow_the_model_size(monkeypatch):
    """Small banks get small steps; models above LARGE_MODEL parameters get more draws."""
    # two benchmarks, so that the single-group rule for draws (tested below) does not apply
    data, _ = simulate_responses(30, 8, kind="2pl", n_benchmarks=2, seed=3)
    monkeypatch.setattr(fit_module, "LARGE_MODEL_DRAWS", 30)
    compiles = _count_compiles(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 20 draws of one chain cannot pass the checks
        small = fit(data, chains=1, draws=20, tune=20, seed=1, progress=False)
        monkeypatch.setattr(fit_module, "LARGE_MODEL", 10)
        large = fit(data, chains=1, tune=20, seed=1, progress=False, until_converged=False)
        # no draws given: until converged, with ten times the usual as the most for so small a model (one chain
        # never passes), and four times where the stored draws would take more than MOST_DRAWS_BYTES
        until = fit(data, chains=1, tune=20, seed=1, progress=False)
        monkeypatch.setattr(until_converged, "MOST_DRAWS_BYTES", 8 * 30 * 4 * 40)  # 4 x 30 draws of 40 values
        capped = fit(data, chains=1, tune=20, seed=1, progress=False)
    assert small.sampler["target_accept"] == 0.95 and small.sampler["draws"] == 20
    assert "until_converged" not in small.sampler  # draws given: a fixed number
    assert large.sampler["draws"] == 30 and large.posterior.sizes["draw"] == 30
    record = until.sampler["until_converged"]
    assert until.sampler["draws_max"] == 300 and record["planned"] == 30 and record["outcome"] == "most draws"
    assert until.posterior.sizes["draw"] == until.sampler["draws"] == 300
    # 30 abilities and 16 item parameters, at least: more than 40 values per draw, so four times the usual draws
    assert capped.sampler["draws_max"] == 120 and capped.sampler["until_converged"]["outcome"] == "most draws"
    assert large.diagnostics.parameters is not None
    assert set(large.diagnostics.parameters.columns) == {"variable", "index", "r_hat", "ess_bulk", "ess_tail"}
    assert len(compiles) <= 1  # the same data and spec: compiled once (or by an earlier test), then reused


def _count_compiles(monkeypatch) -> list[object]:
    """The models compiled for nutpie from now on (each call is recorded, then passed on)."""
    from irtbayes.fitting import compiled as compiled_module

    calls: list[object] = []
    compile_model = compiled_module.compile_model

    def counted(model, *args, **kwargs):
        calls.append(model)
        return compile_model(model, *args, **kwargs)

    monkeypatch.setattr(compiled_module, "compile_model", counted)
    return calls


def test_a_refit_of_the_same_inputs_reuses_the_compiled_model_and_draws_the_same(monkeypatch):
    data, _ = simulate_responses(30, 8, kind="2pl", n_benchmarks=2, seed=3)
    compiles = _count_compiles(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 40 draws cannot pass the checks
        first, second = (fit(data, chains=2, draws=20, tune=20, seed=5, progress=False) for _ in range(2))
        other = fit(data, chains=2, draws=20, tune=20, seed=6, progress=False)
    assert len(compiles) <= 1
    # a model of more responses than COMPILED_MAX_RESPONSES is not kept: each of its fits compiles
    monkeypatch.setattr(sampling_module, "COMPILED_MAX_RESPONSES", data.n_responses - 1)
    before = len(compiles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fit(data, chains=2, draws=20, tune=20, seed=5, progress=False)
    assert len(compiles) == before + 1
    for name in ("difficulty", "ability", "discrimination"):
        np.testing.assert_array_equal(first.posterior[name].values, second.posterior[name].values)
    assert not np.array_equal(first.posterior["difficulty"].values, other.posterior["difficulty"].values)
    # the key sees everything the model is built from: another spec, or the same responses in another order
    key = model_inputs(data, ModelSpec()).key()
    assert model_inputs(data, ModelSpec(kind="1pl")).key() != key
    assert (
        model_inputs(data, ModelSpec(priors=dataclasses.replace(ModelSpec().priors, difficulty_sd_scale=1.0))).key()
        != key
    )
    reordered = ResponseData.from_long(
        data.long_frame()[["subject", "item", "response"]].iloc[::-1], items=data.items.reset_index()[::-1]
    )
    assert list(reordered.item_ids) != list(data.item_ids)
    assert model_inputs(reordered, ModelSpec()).key() != key


def test_one_small_group_of_items_gets_more_draws_by_default():
    """LSAT-like banks (one group of few items) draw SMALL_BANK_DRAWS; labelled or large banks do not."""
    small, _ = simulate_responses(30, 5, seed=1)
    mid, _ = simulate_responses(30, fit_module.SMALL_BANK_ITEMS - 1, seed=1)
    big, _ = simulate_responses(30, fit_module.SMALL_BANK_ITEMS, seed=1)
    labelled, _ = simulate_responses(30, 40, n_benchmarks=4, seed=1)

    def defaults(data: ResponseData, n_free: int = 100, **given) -> tuple[int, float]:
        spec = model_inputs(data, ModelSpec()).spec
        given = {"draws": None, "target_accept": None, **given}
        return fit_module._default_settings(spec, n_items=data.n_items, n_free=n_free, **given)

    assert defaults(small) == (fit_module.SMALL_BANK_DRAWS, 0.95)
    assert defaults(mid) == (fit_module.SMALL_BANK_DRAWS, 0.8)
    assert defaults(big) == (1000, 0.8)
    assert defaults(labelled) == (1000, 0.8)
    assert defaults(small, n_free=fit_module.LARGE_MODEL + 1) == (fit_module.SMALL_BANK_DRAWS, 0.95)
    assert defaults(big, n_free=fit_module.LARGE_MODEL + 1) == (fit_module.LARGE_MODEL_DRAWS, 0.7)
    assert defaults(small, draws=300, target_accept=0.85) == (300, 0.85)
    assert fit_module.SMALL_BANK_DRAWS > 1000


def test_items_answered_by_few_systems_get_target_acceptance_095_below_large_models():
    """A median item with fewer than FEW_RESPONSES responses: 0.95 (barely informed items, funnels); large models
    keep 0.7; a given target is kept. The fit's settings count the responses per item themselves."""
    data, _ = simulate_responses(30, 40, n_benchmarks=4, seed=1)
    spec = model_inputs(data, ModelSpec()).spec

    def accept(per_item: float, n_free: int = 100, given: float | None = None) -> float:
        return fit_module._default_settings(
            spec, n_items=40, n_free=n_free, draws=None, target_accept=given, per_item=per_item
        )[1]

    assert accept(fit_module.FEW_RESPONSES - 1) == 0.95
    assert accept(fit_module.FEW_RESPONSES) == 0.8
    assert accept(5, n_free=fit_module.LARGE_MODEL + 1) == 0.7
    assert accept(5, given=0.85) == 0.85
    # what fit records, resolved from the model and its data (30 responses per item), without sampling
    settings = fit_module._sampler_settings(build_model(data, spec), data, spec, SamplerSettings(sampler="nutpie"))
    assert settings["target_accept"] == 0.95


def test_check_convergence_flags_a_stuck_chain(fitted_2pl):
    tree = fitted_2pl.fit.idata.copy(deep=True)
    post = tree["posterior"].to_dataset()
    shifted = post.copy()
    shifted["difficulty"] = post["difficulty"] + (post["chain"] == 0) * 3.0
    tree["posterior"] = tree["posterior"].assign(difficulty=shifted["difficulty"])
    diag = check_convergence(tree)
    assert not diag.ok and diag.max_rhat > 1.5, diag.to_text()
    assert any("difficulty[" in p for p in diag.problems), diag.problems
    ok = check_convergence(fitted_2pl.fit.idata, ess_min=10, rhat_max=1.1)
    assert ok.ok, ok.to_text()
    assert ok.to_dict()["thresholds"]["ess_min"] == 10


@pytest.mark.slow  # ADVI's graph compiles on its own (about 20 s on empty caches); the approximate tier's labels are
# checked in the default suite by tests/fitting/test_approx.py
def test_advi_is_labelled_approximate(tmp_path):
    data, _ = simulate_responses(15, 10, seed=31)
    with pytest.warns(UserWarning, match="approximate"):
        result = fit(data, sampler="advi", draws=100, chains=1, tune=100, seed=1, progress=False)
    assert result.approximate and result.items_table().attrs["approximate"] is True
    assert result.subjects_table().attrs["approximate"] is True
    assert not result.diagnostics.ok and result.diagnostics.approximate
    target = save_fit(result, tmp_path / "advi")
    assert json.loads((target / "card.json").read_text())["approximate"] is True
    assert load_fit(target).approximate


# ------------------------------------------------------------------------------------------------ slow checks
CLASSIC = Path(__file__).resolve().parents[1] / "fixtures"


def _lsat(name: str) -> ResponseData:
    path = CLASSIC / f"{name}_responses.csv"
    if not path.is_file():
        pytest.skip(f"{path} is absent (shared data not available)")
    wide = pd.read_csv(path)
    wide.insert(0, "person", [f"p{i:04d}" for i in range(len(wide))])
    return ResponseData.from_wide(wide, id_column="person", source=str(path))


def _reference(dataset: str, model_prefix: str) -> pd.DataFrame:
    path = CLASSIC / "published_reference_estimates.csv"
    if not path.is_file():
        pytest.skip(f"{path} is absent (shared data not available)")
    ref = pd.read_csv(path)
    ref = ref.loc[(ref["dataset"] == dataset) & ref["model"].str.startswith(model_prefix)]
    return ref.drop_duplicates(["item", "parameter"])


def _assert_mixed(result) -> None:
    d = result.diagnostics
    assert d.max_rhat <= 1.02 and d.divergences == 0 and d.min_ess_bulk >= 200, d.to_text()


@pytest.mark.slow
def test_lsat7_2pl_matches_mirt():
    data = _lsat("lsat7")
    ref = _reference("LSAT7", "2PL")
    # five items: the hyper-sd of their discriminations is prior-dominated; the default for small banks
    # (target acceptance 0.95) must mix without divergences
    result = fit(data, ModelSpec(kind="2pl"), chains=4, draws=1000, tune=1000, seed=7, progress=False)
    assert result.sampler["target_accept"] == 0.95
    _assert_mixed(result)
    table = result.items_table().set_index("item")
    misses = []
    for _, row in ref.iterrows():
        col = {"a": "discrimination_mean", "d": "intercept_mean"}[row["parameter"]]
        est = table.loc[f"item{row['item']}", col]
        if not row["ci95_low"] <= est <= row["ci95_high"]:
            misses.append(
                f"item {row['item']} {row['parameter']}: {est:.3f} not in [{row['ci95_low']}, "
                f"{row['ci95_high']}] (mirt {row['estimate']})"
            )
    assert not misses, "\n".join(misses)


@pytest.mark.slow
def test_lsat6_rasch_matches_mirt():
    data = _lsat("lsat6")
    ref = _reference("LSAT6", "Rasch")
    result = fit(data, ModelSpec(kind="1pl"), chains=4, draws=1000, tune=1000, seed=6, progress=False)
    _assert_mixed(result)
    table = result.items_table().set_index("item")
    misses = []
    for _, row in ref.loc[ref["parameter"] == "d"].iterrows():
        est = table.loc[f"item{row['item']}", "intercept_mean"]
        if not row["ci95_low"] <= est <= row["ci95_high"]:
            misses.append(f"item {row['item']} d: {est:.3f} not in [{row['ci95_low']}, {row['ci95_high']}]")
    # mirt's Rasch fixes a = 1 and frees the ability variance; on the N(0, 1) scale the slope is its sd
    var = ref.loc[ref["parameter"] == "var_theta"].iloc[0]
    slope = float(table["discrimination_mean"].iloc[0])
    if not np.sqrt(var["ci95_low"]) <= slope <= np.sqrt(var["ci95_high"]):
        misses.append(f"slope {slope:.3f} not in sqrt of [{var['ci95_low']}, {var['ci95_high']}]")
    assert not misses, "\n".join(misses)


@pytest.mark.slow
def test_2pl_interval_calibration_over_simulations():
    """Simulation-based calibration, small: ranks of the truth among posterior draws are roughly uniform."""
    ranks = []
    for rep in range(8):
        data, truth = simulate_responses(40, 20, n_benchmarks=2, seed=100 + rep)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            result = fit(data, chains=2, draws=200, tune=300, seed=rep, progress=False)
        draws = result.posterior["difficulty"].stack(s=("chain", "draw")).transpose("item", "s").values
        ranks.append((draws < truth["difficulty"].values[:, None]).mean(axis=1))
    u = np.concatenate(ranks)
    inside = np.mean((u > 0.05) & (u < 0.95))
    assert 0.8 <= inside <= 0.97, f"90% intervals cover {inside:.2f} of {len(u)} true difficulties"
    hist = np.histogram(u, bins=4, range=(0, 1))[0] / len(u)
    assert hist.min() > 0.12, f"rank histogram {hist} far from uniform"


def test_posterior_predictive_check_flags_a_misfitting_item(fitted_2pl):
    from irtbayes.checks.predictive import posterior_predictive_check

    result, data = fitted_2pl.fit, fitted_2pl.data
    check = posterior_predictive_check(result, data, n_draws=100, seed=1)
    items = check.items
    assert len(items) == data.n_items and len(check.subjects) == data.n_subjects
    share = items["misfit"].mean()
    assert share <= 0.2, f"{share:.2f} of items misfit on data simulated from the model\n{check.to_text()}"
    assert items["p_value_mean"].between(0, 1).all()
    # the same data with one item's responses reversed: its item-rest relation must now misfit
    frame = data.long_frame()
    target = "item00003"
    frame.loc[frame["item"] == target, "response"] = 1 - frame.loc[frame["item"] == target, "response"]
    other = ResponseData.from_long(frame[["subject", "item", "response"]], items=data.items.reset_index())
    with pytest.raises(FitError, match="not the data"):
        posterior_predictive_check(result, other)
    other._cache["checksum"] = data.checksum()  # pretend these are the fitted data, to check the statistic
    bad = posterior_predictive_check(result, other, n_draws=100, seed=1).items.set_index("item")
    assert bad.loc[target, "misfit"], bad.loc[target].to_string()
    assert bad.loc[target, "p_value_item_rest"] > 0.975, bad.loc[target].to_string()


# a second model fitted to the same data (15 s on empty caches); compare_fits' LOO arithmetic is checked exactly,
# without sampling, in tests/checks/test_binomial_checks.py
@pytest.mark.slow
def test_compare_fits_prefers_the_true_model(fitted_2pl):
    from irtbayes.checks.predictive import compare_fits, log_likelihood

    data = fitted_2pl.data
    ll = log_likelihood(fitted_2pl.fit, data, n_draws=100)
    assert ll.sizes["response"] == data.n_responses and np.all(ll.values <= 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rasch = fit(data, ModelSpec(kind="1pl"), chains=2, draws=200, tune=200, seed=3, progress=False)
        table = compare_fits({"2pl": fitted_2pl.fit, "1pl": rasch}, data, n_draws=200)
    assert set(table.index) == {"2pl", "1pl"} and np.isfinite(table["elpd"]).all(), table.to_string()
    margin = 2 * float(table["dse"].max())
    assert table.loc["2pl", "elpd"] >= table.loc["1pl", "elpd"] - margin, table.to_string()
    assert "n_high_pareto_k" in table.columns


def test_optional_samplers_say_what_they_need(fitted_2pl):
    import importlib.util

    if importlib.util.find_spec("numpyro") is None:
        with pytest.raises(SpecError, match="JAX and NumPyro"):
            fit(fitted_2pl.data, sampler="numpyro", progress=False)
    if importlib.util.find_spec("pymc_extras") is None:
        with pytest.raises(SpecError, match="pymc-extras"):
            fit(fitted_2pl.data, sampler="pathfinder", progress=False)


def test_items_table_is_made_once_for_threads_asking_at_once(monkeypatch):
    """``irtbayes audit`` saves the fit in one thread while the report, in another, asks for the same table."""
    import threading

    import irtbayes.fitting.result as result_module
    from irtbayes.examples import simulated_fit

    fit, _ = simulated_fit(10, 12, draws=20)
    calls: list[str] = []
    summaries = result_module._summaries

    def slow(da, ci_prob):
        calls.append(str(da.name))
        time.sleep(0.05)  # long enough for the other thread to ask meanwhile
        return summaries(da, ci_prob)

    monkeypatch.setattr(result_module, "_summaries", slow)
    tables: list[object] = []
    threads = [threading.Thread(target=lambda: tables.append(fit.items_table())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls and sorted(calls) == sorted(set(calls))  # each variable summarised once
    assert tables[0] is not tables[1] and tables[0].equals(tables[1])  # each caller its own copy


def test_the_model_is_named_as_on_the_command_line():
    """``fit(data, model="1pl")`` and ``fit(data, "1pl")`` fit the named kind; anything else says how to name it."""
    from irtbayes.core.errors import SpecError
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.fitting.fit import fit

    data, _ = simulate_responses(30, 20, seed=1)
    assert fit(data, model="1pl", sampler="approx", seed=1, progress=False).spec.kind == "1pl"
    assert fit(data, "1pl", sampler="approx", seed=1, progress=False).spec.kind == "1pl"
    with pytest.raises(SpecError, match='fit\\(data, model="2pl"\\)'):
        fit(data, {"kind": "1pl"}, sampler="approx")  # type: ignore[arg-type]


def test_a_2pl_of_multiple_choice_items_says_it_leaves_out_their_floor():
    import dataclasses

    from irtbayes.data.simulate import simulate_responses
    from irtbayes.fitting.fit import _note_chance_floors, fit

    data, _ = simulate_responses(30, 20, kind="3pl", n_options=4, seed=1)
    fitted = fit(data, sampler="approx", seed=1, progress=False)
    notes = fitted.diagnostics.notes
    assert any(
        "20 of 20 items are multiple choice (4 options): the 2PL leaves out their chance floor" in n for n in notes
    )
    assert fitted.info["multiple_choice"] == {"items": 20, "options_low": 4, "options_high": 4}  # for the findings
    three = dataclasses.replace(fitted, spec=fitted.spec.replace(kind="3pl"))
    three.diagnostics = dataclasses.replace(fitted.diagnostics, notes=[])
    _note_chance_floors(three, data)
    assert three.diagnostics.notes == []
