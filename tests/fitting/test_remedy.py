"""Fits that converge on multi-benchmark data, and runs that end in divergences remedied by sampling again."""

from __future__ import annotations

import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from irtbayes.core.errors import FitError
from irtbayes.data.designs import FAMILIES, simulate_design
from irtbayes.fitting import fit as fit_module
from irtbayes.fitting.diagnostics.divergences import divergence_sites, remedy_text
from irtbayes.fitting.fit import REMEDIES, fit
from irtbayes.fitting.sampling import InterruptWatch
from irtbayes.fitting.until_converged import StopRule
from irtbayes.model.spec import ModelSpec


def _tree(divergent: int, *, seed: int = 0, sd_name: str = "benchmark_sd", low: bool = False) -> xr.DataTree:
    """Draws of a sd whose top (``low``: bottom) ``divergent`` draws are flagged divergent, beside 30 items'
    unremarkable difficulties."""
    rng = np.random.default_rng(seed)
    sd = np.exp(rng.normal(-2.0, 1.0, (4, 250)))
    flags = np.zeros(sd.shape, dtype=bool)
    if divergent:
        order = np.argsort(sd, axis=None)
        flags.reshape(-1)[order[:divergent] if low else order[-divergent:]] = True
    posterior = xr.Dataset(
        {
            sd_name: (("chain", "draw"), sd),
            "difficulty": (("chain", "draw", "item"), rng.normal(size=(4, 250, 30))),
        },
        coords={"item": [f"i{k}" for k in range(30)]},
    )
    stats = xr.Dataset({"diverging": (("chain", "draw"), flags)})
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})


class _Runs:
    """A sampler stand-in: the n-th call ends with ``outcomes[n]`` (divergences or converged), after ``seconds``;
    its divergent draws name ``sd_name``. ``recentred`` gives the same stand-in on a model of the other centring."""

    def __init__(self, stop, outcomes, seconds=0.0, sd_name="benchmark_sd", calls=None, centring="auto", **kw):
        self.stop, self.outcomes, self.seconds, self.sd_name = stop, outcomes, seconds, sd_name
        self.low, self.centred = kw.get("low", False), kw.get("centred", True)
        self.calls = [] if calls is None else calls
        spec = ModelSpec(hierarchy="benchmark", benchmark_sd="sampled", centring=centring)
        free = [SimpleNamespace(name="difficulty_benchmark")] if self.centred and centring == "auto" else []
        self.model = SimpleNamespace(irtbayes_spec=spec, free_RVs=free)

    def __call__(self, **run):
        self.calls.append({**run, "centring": self.model.irtbayes_spec.centring})
        divergences = self.outcomes[len(self.calls) - 1]
        time.sleep(self.seconds)
        self.stop.outcome = "divergences" if divergences else "converged"
        self.stop.history.append({"draws": 1000, "divergences": divergences})
        return _tree(divergences, seed=len(self.calls), sd_name=self.sd_name, low=self.low)

    def recentred(self, prefix, data, *, warm):  # the real method's rule, on the stand-in's model
        assert prefix == "difficulty"
        if not any(rv.name == "difficulty_benchmark" for rv in self.model.free_RVs):
            return None
        again = _Runs(self.stop, self.outcomes, self.seconds, self.sd_name, self.calls, "noncentred", low=self.low)
        return again, "noncentred"


def _remedied(outcomes, *, target_accept=0.8, budget_s=900.0, seconds=0.0, sd_name="benchmark_sd", **kw):
    stop = StopRule(budget_s=budget_s)
    runs = _Runs(stop, outcomes, seconds, sd_name, **kw)
    started = time.perf_counter()
    tree = runs(target_accept=target_accept, tune=200)
    first = {k: v for k, v in runs.calls[0].items() if k != "centring"}
    with InterruptWatch() as watch:
        tree, run, _ = fit_module._remedy(
            tree, runs, stop, first, data=None, warm=False, budget_s=budget_s, started=started, watch=watch
        )
    return stop, runs, run


def test_a_run_that_diverges_is_sampled_again_at_a_higher_target_acceptance_until_one_passes():
    stop, runs, run = _remedied([9, 3, 0])
    assert [c["target_accept"] for c in runs.calls] == [0.8, 0.9, 0.95]
    assert [c["tune"] for c in runs.calls] == [200, 200, 400]  # 0.95 warms up twice as long
    assert run == {k: v for k, v in runs.calls[-1].items() if k != "centring"} and stop.outcome == "converged"
    assert [(r["target_accept"], r["outcome"], r["divergences"]) for r in stop.remedies] == [
        (0.8, "divergences", 9),
        (0.9, "divergences", 3),
        (0.95, "converged", 0),
    ]
    # the divergent draws of the first run sit at the top of the sd's tail: named there, not at the items
    assert stop.remedies[0]["sites"] == ["benchmark_sd (high)"]
    assert remedy_text(stop.remedies) == (
        "NUTS diverged at target acceptance 0.8 (9 divergent transitions in 1000 draws per chain); sampled again "
        "at 0.9: divergences (3); sampled again at 0.95, which converged."
    )


def test_every_remedy_failing_stops_not_converged_naming_the_sites():
    stop, runs, _ = _remedied([9, 8, 7, 6])
    # no benchmark level among the sites: the remedy that changes coordinates is skipped
    targets = [r["target_accept"] for r in REMEDIES if "target_accept" in r]
    assert [c["target_accept"] for c in runs.calls] == [0.8, *targets]
    assert stop.outcome == "divergences" and len(stop.remedies) == 4
    assert remedy_text(stop.remedies).endswith(
        "every remedy was tried, the divergent draws sit at benchmark_sd (high)."
    )


def test_a_centred_level_whose_sd_diverges_low_is_sampled_non_centred_first():
    stop, runs, _ = _remedied([9, 8, 0], sd_name="difficulty_benchmark_sd", low=True)
    assert [(c["target_accept"], c["centring"]) for c in runs.calls] == [
        (0.8, "auto"),
        (0.8, "noncentred"),
        (0.9, "noncentred"),
    ]
    assert stop.remedies[0]["sites"] == ["difficulty_benchmark_sd (low)"]
    assert stop.remedies[-1]["centring"] == "noncentred" and stop.outcome == "converged"
    assert remedy_text(stop.remedies) == (
        "NUTS diverged at target acceptance 0.8 (9 divergent transitions in 1000 draws per chain); sampled again "
        "with the benchmark levels non-centred at 0.8: divergences (8); sampled again at 0.9, which converged."
    )


def test_other_coordinates_that_diverge_more_are_left_for_the_next_remedies():
    stop, runs, _ = _remedied([9, 30, 0], sd_name="difficulty_benchmark_sd", low=True)
    assert [(c["target_accept"], c["centring"]) for c in runs.calls] == [
        (0.8, "auto"),
        (0.8, "noncentred"),
        (0.9, "auto"),
    ]
    assert stop.remedies[1]["reverted"] and stop.outcome == "converged"
    assert remedy_text(stop.remedies).endswith(
        "with the benchmark levels non-centred at 0.8: divergences (30); sampled again with the benchmark levels as "
        "first sampled at 0.9, which converged."
    )


def test_divergences_high_in_a_level_sd_or_in_a_non_centred_level_change_no_coordinates():
    _, runs, _ = _remedied([9, 0], sd_name="difficulty_benchmark_sd")  # high: a non-centred level's funnel
    assert [(c["target_accept"], c["centring"]) for c in runs.calls] == [(0.8, "auto"), (0.9, "auto")]
    _, runs, _ = _remedied([9, 0], sd_name="difficulty_benchmark_sd", low=True, centred=False)
    assert [(c["target_accept"], c["centring"]) for c in runs.calls] == [(0.8, "auto"), (0.9, "auto")]


def test_remedies_below_the_runs_own_target_acceptance_are_skipped():
    _, runs, _ = _remedied([5, 0], target_accept=0.9)
    assert [c["target_accept"] for c in runs.calls] == [0.9, 0.95]


def test_no_remedy_is_started_without_budget_for_a_run_as_long_as_the_last():
    stop, runs, _ = _remedied([5, 0], budget_s=0.15, seconds=0.1)
    assert len(runs.calls) == 1 and stop.outcome == "divergences"
    assert stop.remedies[-1]["next"].startswith("no remedy tried")
    assert "no remedy tried" in remedy_text(stop.remedies)


def test_divergence_sites_name_nothing_where_the_divergent_draws_are_unremarkable():
    tree = _tree(0)
    flags = np.zeros((4, 250), dtype=bool)
    flags[:, ::50] = True  # evenly spread over the draws: no parameter sets them apart
    stats = xr.Dataset({"diverging": (("chain", "draw"), flags)})
    assert divergence_sites(tree["posterior"].to_dataset(), stats) == []


@pytest.fixture(scope="module")
def hard_design():
    """136 systems, 3 benchmarks of 54-109 items, 20-40% of cells missing not at random: a small design on which the
    earlier default (a sampled sd of the three benchmarks' means) diverged."""
    return simulate_design(FAMILIES["missing_not_at_random"], seed=2).data


# NUTS runs until a remedy passes: 28 s on empty caches; the remedies' logic is tested above on stubbed runs
@pytest.mark.slow
def test_the_default_fit_converges_on_a_small_multi_benchmark_design_where_a_sampled_level_sd_diverged(hard_design):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        before = fit(hard_design, ModelSpec(benchmark_sd="sampled"), seed=1, progress=False, remedy=False)
        after = fit(hard_design, seed=1, progress=False)
    assert before.diagnostics.divergences > 0 and not before.diagnostics.ok
    assert before.sampler["until_converged"]["outcome"] == "divergences"
    assert after.spec.benchmark_sd == "fixed"
    assert after.diagnostics.ok, after.diagnostics.to_text()
    assert after.diagnostics.divergences == 0 and "remedies" not in after.sampler


@pytest.mark.slow
def test_a_fit_that_diverges_is_remedied_and_says_so_in_the_card_the_audit_and_the_report(tmp_path):
    """heavy_tails seed 2: 105 systems in 4 benchmarks, sampled first at target acceptance 0.3, whose steps are too
    long for it (hundreds of divergences on any machine, where a first run at the default 0.8 diverges on some
    machines only); the remedy at 0.9 passes. The audit's text and the report say what was done."""
    from irtbayes.auditing.run import audit
    from irtbayes.fitting.storage import load_fit, save_fit
    from irtbayes.reporting.report import report

    data = simulate_design(FAMILIES["heavy_tails"], seed=2).data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(data, seed=2, progress=False, target_accept=0.3)
        without = fit(data, seed=2, progress=False, remedy=False, target_accept=0.3)
    assert not without.diagnostics.ok and without.diagnostics.divergences > 0
    assert result.diagnostics.ok, result.diagnostics.to_text()
    runs = result.sampler["remedies"]
    assert runs[0]["target_accept"] == 0.3 and runs[0]["outcome"] == "divergences"
    assert runs[-1]["outcome"] == "converged" and result.sampler["target_accept"] == runs[-1]["target_accept"]
    text = remedy_text(runs)
    assert any(note == text for note in result.diagnostics.notes)
    save_fit(result, tmp_path / "fit")
    assert load_fit(tmp_path / "fit", data=data).sampler["remedies"] == runs  # in card.json
    audited = audit(result, data, progress=False)
    assert f"Fit: {text}" in audited.to_text()
    html = report(result, tmp_path / "report", data=data, audit=audited).read_text()
    assert text in html


def test_a_budget_that_passes_before_any_draw_is_kept_is_a_clear_error(hard_design):
    """Not an empty fit that the audit would fail on later with an unrelated message (the budget is first looked at
    half a second into the run, while this design's chains are still tuning)."""
    with pytest.raises(FitError, match=r"budget of 0 s passed while NUTS was still tuning, before any draw was kept"):
        fit(hard_design, sampler="nutpie", seed=1, progress=False, budget_s=0.01, tune=2000)


def test_a_run_that_used_all_its_draws_with_divergences_is_answered_by_a_remedy():
    """A small model can sample every draw before a check stops it: divergences among them make the outcome
    ``divergences`` (so the remedies run), recorded as the history's last entry; none leaves "most draws"."""
    from irtbayes.fitting.until_converged import _last_divergences

    diverging = np.zeros((4, 50), dtype=bool)
    diverging[2, 7] = True
    tree = xr.DataTree.from_dict(
        {"sample_stats": xr.Dataset({"diverging": (("chain", "draw"), diverging)}), "posterior": xr.Dataset()}
    )
    rule = StopRule(budget_s=60.0, min_draws=10, planned=50)
    rule.outcome = "most draws"
    _last_divergences(rule, tree, 50)
    assert rule.outcome == "divergences" and rule.history[-1]["divergences"] == 1
    clean = StopRule(budget_s=60.0, min_draws=10, planned=50)
    clean.outcome = "most draws"
    none = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((4, 50), dtype=bool))})
    _last_divergences(clean, xr.DataTree.from_dict({"sample_stats": none}), 50)
    assert clean.outcome == "most draws" and clean.history == []
