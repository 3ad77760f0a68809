"""BenchFill's aim (the interval [lo, hi) the new items should fill) under its old name, "target": the old Python
names warn and work, and folders written before the rename (target.json, target_* keys, reason "in target") load.
Simulated fits only: no sampling."""

from __future__ import annotations

import dataclasses
import importlib
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import irtbayes
from irtbayes.benchfill.aim import Aim, choose_aim, choose_target, frame_with_aim_names, read_aim, with_aim_names
from irtbayes.benchfill.calibration import candidate_response_data
from irtbayes.benchfill.proposal import load_proposal, save_proposal
from irtbayes.benchfill.result import BenchfillResult, load_benchfill, save_benchfill
from irtbayes.benchfill.run import calibrate_candidates
from irtbayes.benchfill.sources import Proposal, ProposalRequest
from irtbayes.core.errors import DataError, SpecError
from irtbayes.examples import simulated_candidates

#: A ``target.json`` as ``benchfill propose`` wrote it before the aim had its name.
OLD_TARGET_JSON = {
    "target_lo": -0.5,
    "target_hi": 0.5,
    "target_bin": 2,
    "benchmark": None,
    "how": "bin 2 of the audit's 4 bins, chosen by the user",
    "audit_target": {"edges": [-1.5, -1.0, -0.5, 0.5, 1.5], "weights": [0.25, 0.25, 0.25, 0.25], "kind": "uniform"},
    "gap": {"scope": "all items", "modal_bin": 2},
    "fit": None,
    "audit": None,
    "n_candidates": 1,
}


@pytest.fixture(scope="module")
def round_() -> tuple[BenchfillResult, list]:
    fit, data, candidates, answers = simulated_candidates()
    aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    new = candidate_response_data(answers, candidates, fit=fit)
    return calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4), candidates


def _warns(match: str):
    return pytest.warns(DeprecationWarning, match=match)


def test_the_old_python_names_warn_and_do_what_the_new_ones_do() -> None:
    fit, data, _, _ = simulated_candidates()
    aim, _ = choose_aim(fit, data, bins=4, aim_bin=1)
    with _warns(r"choose_target is deprecated: use choose_aim"):
        old, _ = choose_target(fit, data, bins=4, aim_bin=1)
    assert old == aim
    with _warns(r"irtbayes\.choose_target is deprecated: use irtbayes\.choose_aim"):
        assert irtbayes.choose_target is irtbayes.choose_aim
    assert "choose_target" not in irtbayes.__all__ and "choose_aim" in irtbayes.__all__
    # the old keyword of the bin, through the old name and the new one
    with _warns(r"target_bin is deprecated: use aim_bin"):
        assert choose_aim(fit, data, bins=4, target_bin=1)[0] == aim
    with _warns(r"choose_target is deprecated"), _warns(r"target_bin is deprecated"):
        assert choose_target(fit, data, bins=4, target_bin=1)[0] == aim
    with _warns(r"target_bin is deprecated"), pytest.raises(SpecError, match="not both aim_bin and its old name"):
        choose_aim(fit, data, bins=4, aim_bin=1, target_bin=1)
    # the class, from the module that defines Aim, in no __all__
    module = importlib.import_module("irtbayes.benchfill.aim")
    with _warns(r"TargetChoice is deprecated: use Aim"):
        assert module.TargetChoice is Aim
    assert "TargetChoice" not in module.__all__ and "choose_target" not in module.__all__
    with pytest.raises(AttributeError):
        module.NoSuchName  # noqa: B018


def test_the_old_attributes_of_a_request_and_a_round_warn(round_) -> None:
    request = ProposalRequest(aim_lo=0.0, aim_hi=1.0, aim_bin=5, n=2)
    with _warns(r"ProposalRequest\.target_(lo|hi|bin) is deprecated: use ProposalRequest\.aim_") as caught:
        assert (request.target_lo, request.target_hi, request.target_bin) == (0.0, 1.0, 5)
    assert [str(w.message).split()[0] for w in caught] == [f"ProposalRequest.target_{k}" for k in ("lo", "hi", "bin")]
    assert caught[0].filename == __file__, "the warning points at the caller's line"
    result, _ = round_
    with _warns(r"BenchfillResult\.target is deprecated: use BenchfillResult\.aim"):
        assert result.target is result.aim
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names do not warn
        assert (request.aim_lo, result.aim.lo) == (0.0, 0.0)


def test_a_proposal_folder_with_a_target_json_written_by_hand_loads(tmp_path: Path) -> None:
    (tmp_path / "target.json").write_text(json.dumps(OLD_TARGET_JSON))
    (tmp_path / "candidates.jsonl").write_text(json.dumps({"candidate_id": "c1", "text": "q", "answer": "a"}) + "\n")
    candidates, aim, meta = load_proposal(tmp_path)
    assert [c.candidate_id for c in candidates] == ["c1"]
    assert (aim.lo, aim.hi, aim.bin, aim.benchmark) == (-0.5, 0.5, 2, None)
    assert aim.target.edges == (-1.5, -1.0, -0.5, 0.5, 1.5) and aim.how.startswith("bin 2")
    assert (meta["aim_lo"], meta["aim_bin"], meta["n_candidates"]) == (-0.5, 2, 1)
    assert not [k for k in meta if k.startswith("target")], meta
    # the file itself, and an aim.json beside it wins
    assert read_aim(tmp_path / "target.json")[0] == aim
    save_proposal(tmp_path, Proposal(candidates), dataclasses.replace(aim, lo=0.0, hi=0.4, bin=None))
    assert (tmp_path / "aim.json").is_file() and read_aim(tmp_path)[0].hi == 0.4
    with pytest.raises(
        DataError, match=r"nothing: no such file or folder \(an aim\.json written by `benchfill propose`"
    ):
        read_aim(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        DataError, match=r"empty.aim\.json: missing; is .*empty a folder written by `benchfill propose`"
    ):
        read_aim(tmp_path / "empty")


def test_a_round_saved_under_the_old_names_loads_as_the_new(round_, tmp_path: Path) -> None:
    result, candidates = round_
    folder = tmp_path / "round"
    save_benchfill(result, folder, candidates=candidates)
    new = load_benchfill(folder)

    # rewrite the folder as older versions wrote it: "target" keys and columns, reason "in target"
    def old(record: dict) -> dict:
        names = {"aim": "target", "aim_lo": "target_lo", "aim_hi": "target_hi", "aim_bin": "target_bin",
                 "aim_benchmark": "benchmark_target", "p_in_aim": "p_in_target", "p_in_aim_data": "p_in_target_data"}  # fmt: skip
        out = {names.get(k, k): v for k, v in record.items()}
        return out | {k: "in target" for k in ("reason", "bin_check") if out.get(k) == "in aim"}

    summary = json.loads((folder / "before_after.json").read_text())
    conclusions = [c | {"measure": c["measure"].replace("aim bin", "target bin")} for c in summary["conclusions"]]
    summary = old(summary) | {"target": old(summary["aim"]), "conclusions": conclusions}
    (folder / "before_after.json").write_text(json.dumps(summary))
    lines = [old(json.loads(line)) for line in (folder / "ledger.jsonl").read_text().splitlines()]
    (folder / "ledger.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert '"target_lo"' in (folder / "ledger.jsonl").read_text() and '"aim' not in json.dumps(summary)

    back = load_benchfill(folder)
    assert (back.aim, back.run_id, back.settings) == (new.aim, new.run_id, new.settings)
    pd.testing.assert_frame_equal(back.decisions, new.decisions)
    assert back.summary()["reason"].tolist() == ["in aim", "mis-keyed"]
    for name in ("comparison", "bins", "subjects", "conclusions"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(new, name), obj=name)


def test_the_one_mapping_renames_keys_columns_and_reasons_and_lets_the_new_name_win() -> None:
    assert with_aim_names({"target_lo": 1.0, "aim_lo": 2.0, "target_weight": 0.1}) == {
        "aim_lo": 2.0,
        "target_weight": 0.1,
    }
    frame = pd.DataFrame({"target_bin": [1, 2], "aim_bin": [None, 5], "reason": ["in target", "flat"]})
    out = frame_with_aim_names(frame)
    assert out.columns.tolist() == ["aim_bin", "reason"]
    assert out["aim_bin"].tolist() == [1, 5] and out["reason"].tolist() == ["in aim", "flat"]
    assert frame.columns.tolist() == ["target_bin", "aim_bin", "reason"], "the input is left as it was"
