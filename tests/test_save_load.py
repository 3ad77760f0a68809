"""One verb pair for the results irtbayes writes and reads back: ``save``/``load``. The new names round-trip an audit
and a BenchFill round; the old names (``write_audit``, ``load_benchfill_result``, ``Tracking.read``, ...) still
work for a release, each with a DeprecationWarning naming its new name. Simulated fits only: no sampling."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import importlib
import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pandas as pd
import pytest

import irtbayes
from irtbayes.auditing.folder import load_audit, save_audit, write_audit
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.benchfill.aim import choose_aim
from irtbayes.benchfill.calibration import candidate_response_data
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.proposal import load_proposal, read_proposal, write_proposal
from irtbayes.benchfill.result import (
    BenchfillResult,
    load_benchfill,
    load_benchfill_result,
    save_benchfill,
    write_benchfill,
)
from irtbayes.benchfill.run import calibrate_candidates
from irtbayes.benchfill.sources import Proposal
from irtbayes.checks.items import ItemChecks, load_item_checks, load_item_flags, read_item_checks, read_item_flags
from irtbayes.core.errors import DataError
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.selection import Selection
from irtbayes.evaluating.tracking import Tracking
from irtbayes.examples import simulated_candidates
from irtbayes.robustness.conditions import save_conditions, write_conditions

#: (module, old name, new name) of every deprecated module-level name.
RENAMED = [
    ("irtbayes.auditing.folder", "write_audit", "save_audit"),
    ("irtbayes.benchfill.result", "write_benchfill", "save_benchfill"),
    ("irtbayes.benchfill.result", "load_benchfill_result", "load_benchfill"),
    ("irtbayes.benchfill.proposal", "write_proposal", "save_proposal"),
    ("irtbayes.benchfill.proposal", "read_proposal", "load_proposal"),
    ("irtbayes.checks.items", "read_item_checks", "load_item_checks"),
    ("irtbayes.checks.items", "read_item_flags", "load_item_flags"),
    ("irtbayes.robustness.conditions", "write_conditions", "save_conditions"),
    ("irtbayes.benchfill.aim", "choose_target", "choose_aim"),
]


@pytest.fixture(scope="module")
def audited() -> AuditResult:
    data, truth = simulate_responses(20, 40, n_benchmarks=2, n_domains=2, seed=2)
    return audit(posterior_near_truth(data, truth, chains=2, draws=50, seed=3), data, bins=4, seed=2)


@pytest.fixture(scope="module")
def round_() -> tuple[BenchfillResult, list[Candidate]]:
    fit, data, candidates, answers = simulated_candidates()
    aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    new = candidate_response_data(answers, candidates, fit=fit)
    return calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4), candidates


def _same_audit(back: AuditResult, result: AuditResult) -> None:
    for name, table in result.tables().items():
        pd.testing.assert_frame_equal(back.tables()[name], table, check_exact=True, obj=name)
    assert back.target == result.target and back.settings == result.settings
    assert back.summary_dict() == result.summary_dict()


def _same_round(back: BenchfillResult, result: BenchfillResult) -> None:
    assert (back.run_id, back.aim, back.settings) == (result.run_id, result.aim, result.settings)
    assert back.accepted == result.accepted and back.summary_dict() == result.summary_dict()
    assert back.decisions.loc[result.decisions.index, "decision"].tolist() == result.decisions["decision"].tolist()
    for name in ("comparison", "bins", "subjects", "conclusions"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(result, name), check_dtype=False, obj=name)


def test_save_then_load_gives_the_audit_and_the_benchfill_round_back(audited, round_, tmp_path: Path) -> None:
    _same_audit(load_audit(save_audit(audited, tmp_path / "audit")), audited)
    result, candidates = round_
    save_benchfill(result, tmp_path / "benchfill", candidates=candidates)
    _same_round(load_benchfill(tmp_path / "benchfill"), result)


def test_an_audit_of_items_without_domains_loads_back_alike(tmp_path: Path) -> None:
    """Labels a bank leaves out are missing as the saved folder reads them back (NaN in text), not pd.NA in objects."""
    from irtbayes.examples import simulated_audit

    result, _ = simulated_audit(20, 30, chains=1, bins=4)
    assert result.tables()["items"]["domain"].isna().all()
    _same_audit(load_audit(save_audit(result, tmp_path / "audit")), result)


@pytest.mark.parametrize(("module", "old", "new"), RENAMED)
def test_old_names_are_deprecated_aliases_outside_all(module: str, old: str, new: str) -> None:
    mod = importlib.import_module(module)
    alias = getattr(mod, old)
    assert alias.__wrapped__ is getattr(mod, new) and alias.__name__ == old
    assert old not in getattr(mod, "__all__", []) and old not in irtbayes.__all__


def test_the_old_names_still_work_and_warn(audited, round_, tmp_path: Path) -> None:
    """Every old name once: it does what the new one does, and its warning names the new one."""

    def warns(new: str):  # the message names the new name, attributed to this caller
        return pytest.warns(DeprecationWarning, match=rf"is deprecated: use {re.escape(new)} ")

    with warns("save_audit"):
        _same_audit(load_audit(write_audit(audited, tmp_path / "audit")), audited)
    result, candidates = round_
    with warns("save_benchfill"):
        write_benchfill(result, tmp_path / "benchfill", candidates=candidates)
    with warns("load_benchfill"):
        _same_round(load_benchfill_result(tmp_path / "benchfill"), result)

    with warns("save_proposal"):
        write_proposal(tmp_path / "proposal", Proposal(candidates[:2]), result.aim)
    with warns("load_proposal"):
        again, aim, _ = read_proposal(tmp_path / "proposal")
    assert [c.to_dict() for c in again] == [c.to_dict() for c in load_proposal(tmp_path / "proposal")[0]]
    assert len(again) == 2 and aim == result.aim

    (tmp_path / "item_flags.csv").write_text("item,flag,slope_mean\nq1,reversed,-1.2\nq2,,0.9\n")
    with warns("load_item_checks"):
        pd.testing.assert_frame_equal(read_item_checks(tmp_path), load_item_checks(tmp_path))
    with warns("load_item_flags") as caught:
        assert read_item_flags(tmp_path) == load_item_flags(tmp_path) == {"q1": "reversed", "q2": ""}
    assert caught[0].filename == __file__, "the warning points at the caller's line"

    effects = SimpleNamespace(items=pd.DataFrame({"item": ["q1"]}), subjects=pd.DataFrame({"subject": ["s1"]}))
    with warns("save_conditions"):
        assert write_conditions(effects, tmp_path / "c1") == save_conditions(effects, tmp_path / "c1")

    # the methods: a stand-in with the attributes save() uses, and the folder it writes read back
    figure = plt.figure
    checks = SimpleNamespace(items=pd.DataFrame({"item": ["q1"]}), to_text=lambda: "checks", plot_flagged=figure)
    with warns("ItemChecks.save"):
        assert ItemChecks.write(checks, tmp_path / "flags") == ItemChecks.save(checks, tmp_path / "flags")
    changes = pd.DataFrame({"from": ["a"], "to": ["b"], "direction": ["gain"]})
    tracking = SimpleNamespace(changes=changes, abilities=pd.DataFrame({"step": [0]}), to_text=lambda: "t", plot=figure)
    with warns("Tracking.save"):
        assert "changes.csv" in Tracking.write(tracking, tmp_path / "tracking")
    with warns("Tracking.load"):
        back = Tracking.read(tmp_path / "tracking")
    pd.testing.assert_frame_equal(back.changes, Tracking.load(tmp_path / "tracking").changes)
    assert back.changes["direction"].tolist() == ["gain"]
    plt.close("all")
    with warns("Selection.load"), pytest.raises(DataError, match=r"selected_items\.csv"):
        Selection.read(tmp_path / "nothing here")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("write_audit", "save_audit"),
        ("write_benchfill", "save_benchfill"),
        ("load_benchfill_result", "load_benchfill"),
        ("choose_target", "choose_aim"),
    ],
)
def test_old_top_level_names_resolve_with_a_warning(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"irtbayes\.{old} is deprecated: use irtbayes\.{new}"):
        assert getattr(irtbayes, old) is getattr(irtbayes, new)
    assert old not in irtbayes.__all__ and old not in dir(irtbayes)
