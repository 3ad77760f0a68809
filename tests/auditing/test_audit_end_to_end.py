"""End to end: simulate responses with a planted difficulty gap, fit a small 1PL, audit it, find the gap.

150 subjects put each difficulty's posterior sd near 0.2 logits; ``scripts/gap_coverage.py`` studies how
often the interval covers the truth with fewer subjects.
"""

from __future__ import annotations

import warnings

import pytest

from irtbayes.auditing.gaps import widest_gap
from irtbayes.auditing.run import audit
from irtbayes.data.simulate import PLANTED_GAP, planted_gap_responses

fit_module = pytest.importorskip("irtbayes.fitting.fit", reason="the fit module is needed for the end-to-end audit")
model_module = pytest.importorskip("irtbayes.model.build", reason="the model module is needed for the end-to-end audit")

TRUE_GAP = PLANTED_GAP  # no item difficulty in between


def test_audit_of_a_real_fit_finds_the_planted_gap() -> None:
    data, difficulty = planted_gap_responses(150, seed=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a tiny fit may miss the ESS threshold
        fitted = fit_module.fit(
            data, model_module.ModelSpec(kind="1pl"), chains=2, draws=300, tune=300, seed=7, progress=False
        )

    result = audit(fitted, data)
    target = result.target
    truth = widest_gap(difficulty[None, :], target.lo, target.hi)
    assert (truth.lo[0], truth.hi[0]) == pytest.approx(TRUE_GAP), "the planted gap should be the widest in range"
    gap = result.summary_dict()["benchmarks"]["planted"]["max_gap"]
    lo, hi = gap["interval"]
    true_mid = sum(TRUE_GAP) / 2
    message = f"estimated widest gap {gap}, true gap {TRUE_GAP} in range [{target.lo}, {target.hi}]"
    # location: the estimated gap lies inside the true one and holds its middle; the modal bin holds it too
    assert TRUE_GAP[0] - 0.2 <= lo < true_mid < hi <= TRUE_GAP[1] + 0.2, message
    k = gap["modal_bin"]
    assert target.edges[k] <= true_mid < target.edges[k + 1], message
    bins = result.bins.loc[result.bins["scope"] == "planted"].set_index("bin")
    assert bins["p_widest_gap_here"].idxmax() == k and bins.loc[k, "p_widest_gap_here"] > 0.3, message
    # width: the 90% interval covers the true width (deconvolved locations, the default) ...
    assert result.settings["ensemble"] == "deconvolved", message
    assert gap["ci_low"] <= truth.width[0] <= gap["ci_high"], message
    # ... where the fit's own draws, which scatter items into the hole, understate it
    raw = audit(fitted, data, ensemble="draws").summary_dict()["benchmarks"]["planted"]["max_gap"]
    assert raw["ci_high"] < truth.width[0] and raw["mean"] < gap["mean"], f"{message}; from the draws: {raw}"
