"""BenchFill's editorial screen end to end on a hand-built posterior: novelty, construct and key together, the
ledger's reasons and closest items, the before/after counts and the escaped report section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from irtbayes.benchfill.aim import choose_aim
from irtbayes.benchfill.calibration import candidate_response_data
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.result import composition_conclusions, load_benchfill, save_benchfill
from irtbayes.benchfill.run import calibrate_candidates
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.fitting.result import Fit
from irtbayes.reporting.benchfill import benchfill_section
from irtbayes.reporting.document import Document

PAIRS = pd.read_csv(Path(__file__).parents[1] / "fixtures" / "benchfill_novelty_pairs.csv")
SCRIPT = "<script>alert(1)</script>"
N_SUBJECTS, N_ITEMS = 100, 40


@pytest.fixture(scope="module")
def round_():
    simulated, truth = simulate_responses(N_SUBJECTS, N_ITEMS, missing=0.0, seed=1)
    texts = list(PAIRS.loc[PAIRS["label"] == "near-duplicate", "bank_text"])
    texts += list(PAIRS.loc[PAIRS["label"] == "unrelated", "candidate_text"])[: N_ITEMS - len(texts)]
    texts[15] = f"{SCRIPT} {texts[15]}"  # "Which organ in the human body produces insulin?"
    items = simulated.items.reset_index()[["item"]].assign(benchmark="bench00", text=texts)
    data = ResponseData.from_long(simulated.long_frame(), items=items, source="bank with texts")
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
    aim, _ = choose_aim(fit, data, interval=(-0.5, 0.5))
    bank_ids = [str(i) for i in data.item_ids]
    theta = truth["ability"].values
    middle = (aim.lo + aim.hi) / 2
    rng = np.random.default_rng(3)
    specs = {
        # candidate id: (text, seed item, responses' slope; None: right for the weakest and strongest only)
        "rewrite": ("Insulin is secreted by which organ of the human body?", bank_ids[15], 2.5),
        "copy": ("What is the chemical symbol for platinum?", None, 2.5),  # bank: "... for gold?"
        "miskeyed": ("How many strings does a standard violin have?", None, -1.5),
        "odd": ("Which city hosted the 1908 Summer Olympics?", None, None),
        "novel": ("A cyclist rides 45 km in 3 hours. What is her average speed in km/h?", None, 2.5),
    }
    frames, candidates = [], []
    for cid, (text, seed, slope) in specs.items():
        if slope is None:
            p = np.where(np.abs(theta - middle) > 1.2, 0.9, 0.1)
        else:
            p = expit(slope * (theta - middle))
        frames.append(
            pd.DataFrame({"subject": data.subject_ids, "item": cid, "response": (rng.random(N_SUBJECTS) < p)})
        )
        candidates.append(Candidate(candidate_id=cid, text=text, answer="a", benchmark="bench00", seed_item=seed))
    answers = pd.concat(frames).astype({"response": float})
    new = candidate_response_data(answers, candidates, fit=fit)
    result = calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4)
    return fit, data, candidates, result


def test_each_screen_gives_its_own_reason(round_):
    _, data, _, result = round_
    d = result.decisions
    assert d["decision"].to_dict() == {
        "rewrite": "accepted",
        "copy": "rejected",
        "miskeyed": "rejected",
        "odd": "rejected",
        "novel": "accepted",
    }, d[["decision", "reason", "failed"]]
    bank_ids = [str(i) for i in data.item_ids]
    assert d.loc["copy", "reason"] == f"near-duplicate of {bank_ids[19]}"
    assert d.loc["rewrite", "novelty"] == f"rewrite of seed {bank_ids[15]}"
    assert d.loc["miskeyed", "reason"] == "mis-keyed" and d.loc["miskeyed", "key_check"] == "mis-keyed"
    assert d.loc["odd", "reason"] == "off-construct", d.loc["odd", ["failed", "construct"]]
    assert d.loc["odd", "construct"].startswith("off-construct: poor item fit")
    assert (d.loc[["rewrite", "novel"], "bin_check"] == "in aim").all()
    assert (d.loc[["rewrite", "novel"], "key_check"] == "ok").all()
    assert d["closest_item"].notna().all() and d["closest_content_similarity"].notna().all()
    assert result.settings["novelty"]["bank_texts"] == N_ITEMS


def test_the_extended_benchmark_keeps_the_original_items_and_counts_the_added(round_):
    _, _, _, result = round_
    c = result.comparison.set_index(["scope", "version"])
    for scope in ("all", "bench00"):
        assert c.loc[(scope, "after"), "n_items"] == c.loc[(scope, "before"), "n_items"] + len(result.accepted)
        assert c.loc[(scope, "added"), "n_items"] == len(result.accepted)
    bins = result.bins.loc[result.bins["scope"] == "all"]
    assert np.allclose(bins["count_before_mean"], bins["count_original_after_mean"])
    assert bins["count_added_mean"].sum() == pytest.approx(len(result.accepted), abs=0.05)
    conclusions = result.conclusions
    assert set(conclusions["cause"]) == {"composition"}  # fixed bank: nothing is re-estimated
    assert {"Maximum Gap", "DDM (W1)", "widest gap's bin", "ranks (all items)"} <= set(conclusions["measure"])
    assert any(m.startswith("aim bin") for m in conclusions["measure"])


def test_ledger_and_report_record_every_reason_and_escape_texts(round_, tmp_path):
    _, _, candidates, result = round_
    paths = save_benchfill(result, tmp_path, candidates=candidates)
    ledger = pd.read_csv(paths["ledger_csv"]).set_index("candidate_id")
    for col in ("decision", "reason", "bin_check", "key_check", "novelty", "construct", "closest_item"):
        assert ledger[col].notna().all(), col
    assert ledger.loc["copy", "decision"] == "rejected" and ledger.loc["copy", "reason"].startswith("near-duplicate")
    assert (ledger["closest_word_similarity"].between(0, 1)).all()
    assert json.loads(Path(paths["before_after_json"]).read_text())["conclusions"]
    back = load_benchfill(tmp_path)
    assert back.conclusions.shape == result.conclusions.shape

    doc = Document(title="t")
    benchfill_section(back, doc, lambda name, ax, caption: doc.figure(name, ax.figure, caption=caption))
    html, markdown = doc.to_html(), doc.to_markdown()
    assert "Accepted items beside their closest bank item" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and SCRIPT not in html
    assert SCRIPT not in markdown
    assert "near-duplicate of" in html and "off-construct" in html


def test_conclusions_name_changes_by_composition_and_by_re_estimation():
    """Hand-made comparison: the refit moves nothing, the added items halve the gap."""
    base = {"n_items": 10, "n_added": 0, "ddm_w1_mean": 0.3, "ddm_w1_ci_low": 0.2, "ddm_w1_ci_high": 0.4,
            "gap_modal_bin": 2}  # fmt: skip
    rows = []
    for version, gap, modal in (("before", 2.0, 2), ("original", 1.9, 2), ("after", 1.0, 4)):
        rows.append(
            {"scope_kind": "all", "scope": "all", "version": version} | base
            | {"max_gap_mean": gap, "max_gap_ci_low": gap - 0.2, "max_gap_ci_high": gap + 0.2, "gap_modal_bin": modal}
        )  # fmt: skip
    bins = pd.DataFrame(
        {"scope_kind": "all", "scope": "all", "bin": [2], "p_empty_before": [0.9], "p_empty_original_after": [0.8],
         "p_empty_after": [0.1]}
    )  # fmt: skip
    subjects = pd.DataFrame({"subject": ["a", "b"]})
    out = composition_conclusions(pd.DataFrame(rows), bins, subjects, aim_bin=2).set_index(["cause", "measure"])
    assert out.loc[("composition", "Maximum Gap"), "verdict"] == "credibly smaller"
    assert out.loc[("composition", "widest gap's bin"), "changed"]
    assert out.loc[("composition", "aim bin 2 empty"), "verdict"] == "no longer empty"
    assert out.loc[("re-estimation", "Maximum Gap"), "verdict"] == "no credible change"
    assert not out.loc[("re-estimation", "aim bin 2 empty"), "changed"]
