"""Flagged items: the audit counts them and says so, or leaves them out of every measure and says why; the saved
audit still reads back against the whole data and its fit. Hand-built posteriors, no sampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irtbayes.auditing.folder import load_audit, save_audit
from irtbayes.auditing.run import audit
from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.fitting.result import Fit
from irtbayes.reporting.findings import audit_findings


@pytest.fixture(scope="module")
def bank() -> tuple[Fit, object]:
    data, truth = simulate_responses(40, 60, n_benchmarks=2, missing=0.0, seed=4)
    return Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=5), data), data


def test_flags_are_counted_by_default_and_left_out_when_asked(bank, tmp_path: Path) -> None:
    fit, data = bank
    items = [str(i) for i in data.item_ids]
    flags = {items[0]: "reversed", items[1]: "flat", items[2]: "flat", items[3]: ""}
    common = {"bins": 4, "range": (-2.5, 2.5), "ensemble": "draws", "max_draws": 100, "seed": 0}
    counted = audit(fit, data, item_flags=flags, **common)
    assert len(counted.items) == 60 and counted.settings["excluded_items"] == []
    assert counted.settings["item_flags"] == {"flat": 2, "reversed": 1}
    assert "3 items are flagged (1 reversed, 2 flat) and counted in every measure" in counted.to_text()

    left = audit(fit, data, item_flags=flags, exclude_flagged=True, **common)
    assert sorted(left.items["item"]) == sorted(items[3:])
    assert left.settings["excluded_items"] == sorted(items[:3])
    everything = left.benchmarks.set_index("scope").loc["all"]
    assert everything["n_items"] == 57
    # the measures are those of an audit of the kept items alone
    alone = audit(fit.posterior.sel(item=items[3:]), data.subset(items=items[3:]), **common)
    np.testing.assert_allclose(
        left.benchmarks["ddm_w1_mean"].to_numpy(), alone.benchmarks["ddm_w1_mean"].to_numpy(), rtol=1e-12
    )
    assert "3 flagged items (1 reversed, 2 flat) are left out of every measure." in left.to_text()
    found = audit_findings(fit, left)
    assert any("3 flagged items (1 reversed, 2 flat) are left out" in s for s in found.found), found.found
    assert not any("--exclude-flagged" in s for s in found.todo)
    assert any("audit again with `--exclude-flagged`" in s for s in audit_findings(fit, counted).todo)
    # saved, it reads back against the whole data and the fit it was made from
    back = load_audit(save_audit(left, tmp_path / "a"), fit=fit, data=data)
    assert back.settings["excluded_items"] == left.settings["excluded_items"]


def test_bad_flags_are_refused_by_name(bank) -> None:
    fit, data = bank
    with pytest.raises(SpecError, match=r"item_flags name 1 item\(s\) that are not in .*\['nope'\]"):
        audit(fit, data, item_flags={"nope": "flat"}, bins=4)
    with pytest.raises(SpecError, match="exclude_flagged must be True or False"):
        audit(fit, data, exclude_flagged="yes", bins=4)
    with pytest.raises(SpecError, match="the flag of item"):
        audit(fit, data, item_flags={str(data.item_ids[0]): 1}, bins=4)
    everything = {str(i): "flat" for i in data.item_ids}
    with pytest.raises(SpecError, match="exclude_flagged leaves no item"):
        audit(fit, data, item_flags=everything, exclude_flagged=True, bins=4)
