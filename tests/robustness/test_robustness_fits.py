"""Robustness checks with real (tiny, seeded) fits: the command line end to end, and planted recovery (slow)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from irtbayes.cli.main import main
from irtbayes.data.simulate import simulate_responses
from irtbayes.robustness.condition_model import build_condition_model
from irtbayes.robustness.conditions import condition_effects, fit_conditions
from irtbayes.robustness.simulation import simulate_condition_responses


@pytest.mark.filterwarnings("ignore:the fit did not pass the convergence checks")
def test_cli_refits_a_bootstrap_population_and_compares_two_versions(tmp_path, capsys) -> None:
    data, _ = simulate_responses(24, 30, n_benchmarks=2, seed=7, missing=0.0)
    path = tmp_path / "responses.csv"
    frame = data.long_frame().merge(data.items[["benchmark"]], left_on="item", right_index=True)
    frame.to_csv(path, index=False)
    out = tmp_path / "rob"
    code = main(
        [
            "robustness",
            str(path),
            "--out",
            str(out),
            "--bootstrap",
            "1",
            "--engine",
            "serial",
            "--revision",
            "bench00:bench01",
            "--chains",
            "1",
            "--draws",
            "100",
            "--tune",
            "100",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "populations: 1 refits" in printed and "revision:" in printed
    assert "(1 refits did not pass the convergence checks)" in printed  # 1 chain of 100 draws
    assert "bootstrap1 NOT CONVERGED: " in printed and "max r-hat" in printed  # and why
    summary = json.loads((out / "robustness.json").read_text())
    labels = {(c["scope"], c["conclusion"]): c["label"] for c in summary["population"]["conclusions"]}
    assert {("all", "gap_location"), ("bench00", "ddm_w1"), ("bench01", "ranks")} <= set(labels)
    assert set(labels.values()) <= {"stable", "population-dependent"}
    assert summary["revision"]["gap"]["original_gap"][0] < summary["revision"]["gap"]["original_gap"][1]
    stability = pd.read_csv(out / "stability.csv")
    assert len(stability) == 1 + 3 * 4  # range once, four conclusions per scope (all, bench00, bench01)
    assert (out / "report.html").read_text().count("<table>") >= 3
    assert (out / "revision_subjects.csv").exists()


@pytest.mark.slow
def test_planted_format_sensitive_items_and_systems_are_recovered() -> None:
    """40 systems x 60 items x 2 conditions, 8 items (+-1.5 logits) and 4 systems (+-1.5) planted.

    Measured (data seed 0, fit seed 1, 2 x 300 draws, about 2 minutes on 2 busy cores), default rule "each":
    items 4 flagged, precision 1.0, recall 0.5; systems 4 flagged, precision 1.0, recall 1.0. The "mean" rule:
    items 6 flagged (precision 1.0, recall 0.75), systems 8 flagged (precision 0.5, recall 1.0).
    """
    data, items, subjects = simulate_condition_responses(40, 60, n_sensitive_items=8, n_sensitive_subjects=4, seed=0)
    model = build_condition_model(data, kind="1pl")
    point = model.initial_point()
    assert np.isfinite(model.compile_logp()(point)) and np.isfinite(model.compile_dlogp()(point)).all()
    effects = condition_effects(fit_conditions(data, kind="1pl", chains=2, draws=300, tune=300, seed=1))
    for table, key, planted in ((effects.items, "item", items), (effects.subjects, "subject", subjects)):
        flagged = set(table.loc[table["flagged"], key])
        hits = len(flagged & set(planted))
        precision = hits / max(len(flagged), 1)
        recall = hits / len(planted)
        assert precision >= 0.9 and recall >= 0.5, (key, sorted(flagged), precision, recall)
    row = effects.agreement.iloc[0]
    assert row["max_rank_displacement_ci_low"] >= 1  # the planted systems move
    assert np.isfinite(row["kendall_tau_mean"]) and row["kendall_tau_ci_high"] < 1
