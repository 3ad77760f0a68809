"""The self-check: coverage of an audit's intervals on its own design, by simulation from the posterior.

Tiny designs (60 systems x 40 items, approximate fits of 2 x 100 draws) audited with the fit's draws as the
ensemble, so each simulated set costs a fraction of a second; one test checks that the deconvolved truth is
made with the audit's own arguments.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import dataclasses
import json
import types
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

import irtbayes.auditing.run as run_module
import irtbayes.auditing.selfcheck as selfcheck_module
from irtbayes.auditing.draws import extract_draws
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import _prepare, audit
from irtbayes.auditing.selfcheck import (
    MEASURES,
    SelfCheck,
    _audit_settings,
    _calibrated,
    _truth_locations,
    calibration_factor,
    interval_scales,
    self_check,
)
from irtbayes.auditing.settings import AuditSettings
from irtbayes.core.errors import FitError, SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit
from irtbayes.model.spec import ModelSpec

RANGE = (-2.5, 2.5)


def _approx_fit(data: ResponseData, seed: int) -> Fit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the approximate tier warns that MCMC checks do not apply
        return fit(data, sampler="approx", chains=2, draws=100, seed=seed, progress=False)


def _design(seed: int) -> tuple[ResponseData, Fit]:
    data, _ = simulate_responses(60, 40, n_benchmarks=2, missing=0.1, seed=seed)
    return data, _approx_fit(data, seed)


@pytest.fixture(scope="module")
def design() -> tuple[ResponseData, Fit]:
    return _design(3)


@pytest.fixture(scope="module")
def audited(design: tuple[ResponseData, Fit]) -> AuditResult:
    data, fitted = design
    return audit(fitted, data, range=RANGE, bins=5, ensemble="draws")


@pytest.fixture(scope="module")
def checked(design: tuple[ResponseData, Fit], audited: AuditResult) -> SelfCheck:
    data, fitted = design
    return self_check(fitted, data, audited, n_sets=6, seed=1, progress=False, audit_fn=audit, max_draws=50)


# ---------------------------------------------------------------------------------------------- the factor
def test_interval_scales_of_a_hand_built_case() -> None:
    # mean 1, interval [0.5, 1.5]: 1.2 is 0.4 of the upper half-width out, 2.0 and 0.0 twice a half-width
    scales = interval_scales(1.0, 0.5, 1.5, [1.2, 2.0, 0.0, 1.0, 1.5, 0.75])
    np.testing.assert_allclose(scales, [0.4, 2.0, 2.0, 0.0, 1.0, 0.5])
    # covered exactly when the scale is at most 1
    truth = np.linspace(-1, 3, 41)
    assert np.array_equal(interval_scales(1.0, 0.5, 1.5, truth) <= 1, (truth >= 0.5) & (truth <= 1.5))


def test_interval_scales_with_zero_width_sides_and_a_mean_outside() -> None:
    # a side of zero width: the truth on it is 0 away, beyond it infinitely many half-widths
    assert interval_scales(0.0, 0.0, 0.0, [0.0, 0.2]).tolist() == [0.0, np.inf]
    assert interval_scales(0.0, 0.0, 1.0, [-0.1, 0.5]).tolist() == [np.inf, 0.5]
    # a mean outside its (equal-tailed) interval is clamped to the nearer end
    np.testing.assert_allclose(interval_scales(2.0, 0.5, 1.5, [1.5, 1.0, 2.5]), [0.0, 0.5, np.inf])
    with np.errstate(all="raise"):  # no division by zero on the way
        interval_scales([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0, 1.0])


def test_calibration_factor_is_the_quantile_floored_at_one() -> None:
    scales = interval_scales(1.0, 0.5, 1.5, [1.2, 2.0, 0.0, 1.1, 1.3])  # 0.4, 2, 2, 0.2, 0.6
    assert calibration_factor(scales, 0.9) == pytest.approx(2.0)  # the 5th of 5 ordered scales
    assert calibration_factor(scales, 0.5) == 1.0  # the 3rd (0.4), never narrowed below 1
    ten = np.arange(1, 11) / 4.0  # 0.25, ..., 2.5
    assert calibration_factor(ten, 0.9) == pytest.approx(2.25)  # 9 of 10 sets covered at 2.25
    assert calibration_factor([0.1, 0.2, np.inf], 0.9) == np.inf
    assert calibration_factor([0.1, 0.2, np.inf], 0.5) == 1.0
    assert np.isnan(calibration_factor([np.nan], 0.9))
    with pytest.raises(SpecError):
        calibration_factor([1.0], 1.5)


def test_calibrated_interval_is_clipped_to_the_measure_range() -> None:
    assert _calibrated(1.0, 0.5, 1.5, 2.0, 5.0) == pytest.approx((0.0, 2.0))  # 1 - 2 * 0.5 = 0
    assert _calibrated(1.0, 0.8, 1.5, 3.0, 2.0) == pytest.approx((0.4, 2.0))  # 1 + 3 * 0.5 clipped at U - L = 2
    assert _calibrated(0.1, 0.05, 0.2, 10.0, 1.0) == pytest.approx((0.0, 1.0))  # a DDM stays in [0, 1]
    assert _calibrated(1.0, 0.5, 1.5, np.inf, 5.0) == (0.0, 5.0)  # unbounded factor: the whole range
    assert _calibrated(1.0, 0.5, 1.5, 1.0, 5.0) == pytest.approx((0.5, 1.5))  # factor 1: unchanged


# ---------------------------------------------------------------------------------------------- structure
def test_one_row_per_benchmark_scope_and_measure(checked: SelfCheck, design: tuple[ResponseData, Fit]) -> None:
    data, _ = design
    table = checked.table
    scopes = {"all", *map(str, data.benchmarks)}
    assert len(scopes) == 3  # all items and two benchmarks
    assert set(zip(table["scope"], table["measure"], strict=True)) == {(s, m) for s in scopes for m in MEASURES}
    assert len(table) == len(scopes) * len(MEASURES)
    assert checked.n_sets == 6 and checked.n_failed == 0 and checked.sampler == "approx" and checked.seed == 1
    assert (table["n_sets"] == 6).all() and (table["nominal"] == 0.9).all()
    assert len(checked.sets) == 6 * len(table)


def test_invariants_of_the_table(checked: SelfCheck, audited: AuditResult) -> None:
    table = checked.table
    assert table["coverage"].between(0, 1).all()
    assert (table["factor"] >= 1).all()
    assert (table["calibrated_ci_low"] <= table["ci_low"] + 1e-12).all()
    assert (table["calibrated_ci_high"] >= table["ci_high"] - 1e-12).all()
    assert (table["calibrated_ci_low"] >= 0).all()
    width = audited.target.hi - audited.target.lo
    gaps = table["measure"] != "ddm_w1"
    assert (table.loc[gaps, "calibrated_ci_high"] <= width + 1e-12).all()
    assert (table.loc[~gaps, "calibrated_ci_high"] <= 1).all()
    # mean and interval are the original audit's
    original = audited.benchmarks.set_index("scope")
    for _, row in table.iterrows():
        assert row["mean"] == original.loc[row["scope"], f"{row['measure']}_mean"]
        assert row["ci_low"] == original.loc[row["scope"], f"{row['measure']}_ci_low"]
    # coverage and bias are the per-set records summarised
    sets = checked.sets
    assert ((sets["scale"] <= 1) == sets["covers"]).all()
    pooled = sets.groupby(["scope", "measure"])["covers"].mean()
    for _, row in table.iterrows():
        assert row["coverage"] == pytest.approx(pooled.loc[(row["scope"], row["measure"])])


def test_result_contract(checked: SelfCheck) -> None:
    values = checked.to_dict()
    assert json.loads(json.dumps(values, allow_nan=False)) == values
    assert values["sampler"] == "approx" and len(values["table"]) == len(checked.table)
    summary = checked.summary()
    assert {"ci_low", "ci_high", "calibrated_ci_low", "calibrated_ci_high"} <= set(summary.columns)
    assert list(summary.columns) == list(checked.table.columns) and summary.attrs["ci_prob"] == checked.interval_prob
    np.testing.assert_array_equal(summary["ci_low"], checked.table["ci_low"])
    np.testing.assert_array_equal(summary["coverage"], checked.table["coverage"])
    text = checked.to_text()
    assert "approximate" in text and "6 data sets" in text
    assert "bench01" in text and "Maximum Gap" in text and "DDM" in text
    ax = checked.plot_coverage()
    assert isinstance(ax, Axes)
    _, given = plt.subplots()
    assert checked.plot_coverage(ax=given) is given
    plt.close("all")


# ---------------------------------------------------------------------------------------------- known miscalibration
@pytest.mark.parametrize("seed", [5, 8])
def test_intervals_too_narrow_for_the_claim_are_found_and_widened(seed: int) -> None:
    # the posterior's own 50% intervals checked against a 90% claim: coverage far below 0.9 (near 0.5: 0.40-0.62
    # over seeds 5, 8, 11, 13, 21), and the factor widens them
    data, fitted = _design(seed)
    narrow = audit(fitted, data, range=RANGE, bins=5, ensemble="draws", ci_prob=0.5, calibrated_intervals=False)
    assert not _audit_settings(narrow, None).calibrated_intervals  # the simulated audits report the same kind
    check = self_check(
        fitted, data, narrow, n_sets=8, seed=seed, progress=False, audit_fn=audit, ci_prob=0.9, max_draws=50
    )
    table, sets = check.table, check.sets
    assert check.nominal == 0.9 and check.interval_prob == 0.5
    assert sets["covers"].mean() < 0.8
    assert (table["factor"] > 1).mean() >= 0.5
    widened = (table["calibrated_ci_high"] - table["calibrated_ci_low"]) > (table["ci_high"] - table["ci_low"])
    assert widened.mean() >= 0.5
    assert "short of 90%" in check.to_text() and "widened to its calibrated level" in check.to_text()
    # the same data, claiming only what the intervals are for: mostly no shortfall beyond sampling error
    honest = self_check(fitted, data, narrow, n_sets=8, seed=seed, progress=False, audit_fn=audit, max_draws=50)
    assert honest.nominal == 0.5
    assert honest.sets["covers"].mean() == pytest.approx(check.sets["covers"].mean())  # same sets, other claim
    assert (honest.table["factor"] <= check.table["factor"]).all()


# ---------------------------------------------------------------------------------------------- the truth
def test_deconvolved_truth_is_the_audits_ensemble(
    design: tuple[ResponseData, Fit], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the truth is deconvolved with exactly the audit's arguments (draws, prior, groups, chunks, seed); a recording
    # stand-in keeps the test exact and fast
    data, fitted = design
    calls: list[dict[str, object]] = []

    def recording(difficulty, prior, groups, *, chunks, seed):
        calls.append({"difficulty": difficulty, "prior": prior, "groups": groups, "chunks": chunks, "seed": seed})
        return difficulty + 1.0, {0: types.SimpleNamespace(smoothing=1.0)}

    monkeypatch.setattr(run_module, "deconvolved_locations", recording)
    monkeypatch.setattr(selfcheck_module, "deconvolved_locations", recording)
    run = _prepare(fitted, data, AuditSettings(range=RANGE, bins=5, seed=4).checked())
    assert run.ensemble == "deconvolved"
    draws = extract_draws(fitted.posterior, data)
    recorded = types.SimpleNamespace(settings={"ensemble": "deconvolved", "seed": 4})
    truth = _truth_locations(fitted.posterior, data, draws, recorded)  # type: ignore[arg-type]
    np.testing.assert_array_equal(truth, run.locations)
    np.testing.assert_array_equal(truth, draws.difficulty + 1.0)
    theirs, mine = calls
    np.testing.assert_array_equal(mine["difficulty"], theirs["difficulty"])
    for part in ("loc", "sd", "item_group"):
        np.testing.assert_array_equal(getattr(mine["prior"], part), getattr(theirs["prior"], part))
    assert [g.tolist() for g in mine["groups"]] == [g.tolist() for g in theirs["groups"]]  # type: ignore[attr-defined]
    assert mine["chunks"] == theirs["chunks"] and mine["seed"] == theirs["seed"] == 4
    as_drawn = types.SimpleNamespace(settings={"ensemble": "draws", "seed": 4})
    assert _truth_locations(fitted.posterior, data, draws, as_drawn) is draws.difficulty  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- failures
def test_failed_sets_are_skipped_and_counted(
    design: tuple[ResponseData, Fit], audited: AuditResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, fitted = design
    real_fit = selfcheck_module.fit

    def flaky(sim, spec, **kwargs):
        if kwargs["seed"] % 2:
            raise FitError("simulated failure")
        return real_fit(sim, spec, **kwargs)

    monkeypatch.setattr(selfcheck_module, "fit", flaky)
    check = self_check(fitted, data, audited, n_sets=4, seed=0, progress=False, audit_fn=audit, max_draws=20)
    assert (check.n_sets, check.n_failed) == (2, 2)
    assert sorted(set(check.sets["set"])) == [0, 2]
    assert (check.table["n_sets"] == 2).all()

    def broken(sim, spec, **kwargs):
        raise FitError("simulated failure")

    monkeypatch.setattr(selfcheck_module, "fit", broken)
    with pytest.raises(FitError, match="fewer than half"):
        self_check(fitted, data, audited, n_sets=3, progress=False, audit_fn=audit)


def test_simulated_audits_reuse_the_audits_settings(audited: AuditResult) -> None:
    settings = _audit_settings(audited, 30)
    assert settings.target == audited.target and settings.ci_prob == audited.ci_prob
    assert (settings.target.lo, settings.target.hi) == RANGE
    assert settings.ensemble == "draws" and settings.seed == audited.settings["seed"]
    assert settings.calibrated_intervals == audited.settings["calibrated_intervals"]
    assert settings.max_draws == 30 and not settings.progress and settings.self_check == 0
    assert _audit_settings(audited, None).max_draws == audited.settings["max_draws"]


def test_refuses_what_it_cannot_check(design: tuple[ResponseData, Fit], audited: AuditResult) -> None:
    data, fitted = design
    with pytest.raises(SpecError, match="needs the Fit"):
        self_check(fitted.posterior, data, audited, n_sets=2, progress=False, audit_fn=audit)  # type: ignore[arg-type]
    shares = data.long_frame().assign(response=lambda f: np.where(f["response"] > 0, 0.7, 0.2))
    fractional = ResponseData.from_long(shares, items=data.items.reset_index())
    assert fractional.response_kind == "fraction"
    with pytest.raises(SpecError, match=r"binary .* and k successes of n trials only"):
        self_check(fitted, fractional, audited, n_sets=2, progress=False, audit_fn=audit)
    three = dataclasses.replace(fitted, spec=ModelSpec(kind="3pl"))
    with pytest.raises(SpecError, match="1PL and 2PL"):
        self_check(three, data, audited, n_sets=2, progress=False, audit_fn=audit)
    with pytest.raises(SpecError, match="n_sets"):
        self_check(fitted, data, audited, n_sets=0, progress=False, audit_fn=audit)
    with pytest.raises(SpecError, match="audit_fn"):
        self_check(fitted, data, audited, n_sets=2, progress=False)


def test_counts_are_simulated_as_binomial_over_each_cells_trials() -> None:
    """k successes of n trials: each set draws Binomial(n, p) on the observed cells with their own n, and the
    self-check runs on such data like on 0/1 responses."""
    data, _ = simulate_responses(60, 40, n_benchmarks=2, missing=0.1, n_trials=3, seed=4)
    assert data.response_kind == "counts"
    fitted = _approx_fit(data, 4)
    cells = selfcheck_module._observed_cells(data)
    draws = extract_draws(fitted.posterior, data)
    task = selfcheck_module._SetTask(0, 5, 11, draws.ability[5, :, 0], draws.discrimination[5], draws.difficulty[5])
    sim = selfcheck_module._simulate(data, task, cells)
    assert sim.response_kind == "counts" and sim.n_responses == data.n_responses
    original = data.long_frame().set_index(["subject", "item"]).sort_index()
    simulated = sim.long_frame().set_index(["subject", "item"]).sort_index()
    assert simulated.index.equals(original.index)
    assert (simulated["trials"] == original["trials"]).all() and (sim.successes <= sim.trials).all()
    # every trial independent: a cell's mean share follows the draw's probability, not one 0/1 response copied
    assert 0.05 < float(np.mean((sim.successes > 0) & (sim.successes < sim.trials))) < 0.95
    audited = audit(fitted, data, range=RANGE, bins=5, ensemble="draws")
    check = self_check(fitted, data, audited, n_sets=3, seed=2, progress=False, audit_fn=audit, max_draws=50)
    assert check.n_failed == 0 and check.table["coverage"].notna().all()
