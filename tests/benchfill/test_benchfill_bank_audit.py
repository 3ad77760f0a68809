"""BenchFill's before/after reads the bank's saved audit instead of running it again, and audits the extended bank
with that audit's own settings; a saved audit of another target is refused."""

from __future__ import annotations

from typing import Any

import pytest

import irtbayes.benchfill.result as result_module
from irtbayes.auditing.run import audit
from irtbayes.benchfill.aim import choose_aim
from irtbayes.benchfill.calibration import candidate_response_data
from irtbayes.benchfill.run import calibrate_candidates
from irtbayes.core.errors import SpecError
from irtbayes.examples import simulated_candidates


def test_the_saved_audit_is_the_before_and_lends_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    fit, data, candidates, answers = simulated_candidates()
    bank = audit(fit, data, bins=4, max_draws=120, information_draws=20, seed=7, top_k=3)
    aim, _ = choose_aim(fit, data, aim_bin=2, audit_result=bank)  # [-0.05, 1.275): the good one at 0.5
    new = candidate_response_data(answers, candidates, fit=fit)
    calls: list[dict[str, Any]] = []

    def counted(posterior: Any, audited: Any, **options: Any) -> Any:
        calls.append(options)
        return audit(posterior, audited, **options)

    monkeypatch.setattr(result_module, "audit", counted)
    result = calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4, bank_audit=bank)
    before = result.comparison.set_index(["scope", "version"]).loc[("all", "before")]
    saved = bank.benchmarks.set_index("scope").loc["all"]
    assert before["ddm_w1_mean"] == saved["ddm_w1_mean"] and before["max_gap_mean"] == saved["max_gap_mean"]
    assert calls and all(c["max_draws"] == 120 and c["seed"] == 7 and c["top_k"] == 3 for c in calls), calls
    assert result.accepted == ["good"] and len(calls) == 2  # the added items, the extended bank; not the bank

    other = audit(fit, data, bins=5, max_draws=50)
    with pytest.raises(SpecError, match=r"the saved audit's target .* is not the round's"):
        calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4, bank_audit=other)
