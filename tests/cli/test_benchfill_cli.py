"""The ``irtbayes benchfill`` verbs end to end on the shared bank: propose, export, calibrate, and bad input.

The verbs are run through a parser built with :func:`irtbayes.cli.benchfill.add_parser` and the same
error handling as ``irtbayes.cli.main.main`` (an ``IrtbayesError`` becomes one line on stderr and exit code 2).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fake_openai import FakeOpenAI

from irtbayes.benchfill.ledger import CSV_COLUMNS, Ledger
from irtbayes.benchfill.result import load_benchfill
from irtbayes.cli import benchfill as commands
from irtbayes.core.errors import IrtbayesError
from irtbayes.reporting.benchfill import benchfill_section
from irtbayes.reporting.document import Document

# tests/ is not a package: the bank is built by tests/benchfill/test_benchfill_calibration.py, imported from its folder
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchfill"))
from test_benchfill_calibration import Bank, shared_bank

TASK = "irtbayes_benchfill"


@pytest.fixture(scope="session")
def bank() -> Bank:
    return shared_bank()


def _invoke(argv: list[str]) -> int:
    """Run ``irtbayes <argv>`` as the command line does and return its exit code."""
    parser = argparse.ArgumentParser(prog="irtbayes")
    commands.add_parser(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except IrtbayesError as err:
        print(f"irtbayes: error: {err}", file=sys.stderr)
        return 2


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``irtbayes <argv>`` as the command line does; return (exit code, stdout, stderr)."""
    code = _invoke(argv)
    out, err = capsys.readouterr()
    return code, out, err


def calibrate_argv(bank: Bank, out: Path, *extra: str, responses: Path | None = None) -> list[str]:
    return ["benchfill", "calibrate", "--fit", str(bank.fit_dir), "--candidates", str(bank.candidates_path),
            "--responses", str(responses or bank.responses_path), "--mode", "fixed", "--out", str(out), *extra]  # fmt: skip


@pytest.fixture(scope="module")
def default_round(bank: Bank, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One fixed-mode round with the aim [-0.5, 1.5) and its stdout, for the tests that only read it."""
    out = tmp_path_factory.mktemp("default_round") / "round"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = _invoke(calibrate_argv(bank, out, "--aim", "-0.5", "1.5"))
    assert code == 0, stderr.getvalue()
    return out, stdout.getvalue()


def propose_argv(bank: Bank, out: Path, *extra: str) -> list[str]:
    return ["benchfill", "propose", "--fit", str(bank.fit_dir), "--benchmark", "bench00", "--candidates",
            str(bank.candidates_path), "--out", str(out), *extra]  # fmt: skip


def propose_from_file(bank: Bank, out: Path, capsys, *extra: str) -> tuple[int, str, str]:
    return run_cli(propose_argv(bank, out, *extra), capsys)


@pytest.fixture(scope="module")
def proposed(bank: Bank, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    """One proposal from the candidates file for bench00 (``propose_from_file`` without extra arguments): its
    folder, exit code, stdout and stderr; tests that add files to the folder copy it first."""
    out = tmp_path_factory.mktemp("proposed") / "bf"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = _invoke(propose_argv(bank, out))
    return out, code, stdout.getvalue(), stderr.getvalue()


def calibrate(bank: Bank, out: Path, capsys, *extra: str, responses: Path | None = None) -> tuple[int, str, str]:
    return run_cli(calibrate_argv(bank, out, *extra, responses=responses), capsys)


# ---------------------------------------------------------------------------------------------- propose
def test_propose_from_a_file_aims_at_the_widest_gap(bank, proposed):
    folder, code, out, err = proposed
    assert code == 0, err
    aim = json.loads((folder / "aim.json").read_text())
    gap = aim["gap"]
    assert aim["benchmark"] == "bench00"
    assert aim["aim_bin"] == gap["modal_bin"], aim
    edges = aim["audit_target"]["edges"]
    assert (aim["aim_lo"], aim["aim_hi"]) == (edges[gap["modal_bin"]], edges[gap["modal_bin"] + 1])
    assert "widest gap of benchmark 'bench00'" in aim["how"]
    assert Path(aim["fit"]) == bank.fit_dir.resolve()
    lines = (folder / "candidates.jsonl").read_text().splitlines()
    assert [json.loads(line)["candidate_id"] for line in lines] == [c.candidate_id for c in bank.candidates]
    assert (folder / "rejections.jsonl").read_text() == ""
    assert "6 candidate(s)" in out


def test_propose_with_the_gap_interval_and_with_a_given_bin(bank, tmp_path, capsys):
    code, _, err = propose_from_file(bank, tmp_path / "gap", capsys, "--gap-interval")
    assert code == 0, err
    aim = json.loads((tmp_path / "gap" / "aim.json").read_text())
    assert (aim["aim_lo"], aim["aim_hi"]) == (aim["gap"]["gap_lo"], aim["gap"]["gap_hi"])
    code, _, err = propose_from_file(bank, tmp_path / "bin", capsys, "--aim-bin", "2", "--bins", "5")
    assert code == 0, err
    aim = json.loads((tmp_path / "bin" / "aim.json").read_text())
    edges = aim["audit_target"]["edges"]
    assert aim["aim_bin"] == 2 and len(edges) == 6
    assert (aim["aim_lo"], aim["aim_hi"]) == (edges[2], edges[3])


def test_propose_with_an_llm_records_its_rejections(bank, tmp_path, capsys):
    choices = ["red", "green", "blue", "white"]
    items = [
        {"text": "Which colour is grass?", "answer": "green", "choices": choices},
        {"text": "Which colour is snow?", "answer": "white", "choices": choices},
        {"text": "Which colour is the sky at noon?", "choices": choices},  # no answer
    ]
    server = FakeOpenAI()
    server.default = {"content": json.dumps({"items": items})}
    try:
        code, _, err = run_cli(
            ["benchfill", "propose", "--fit", str(bank.fit_dir), "--benchmark", "bench01", "--llm", server.url,
             "--llm-model", "gen-1", "--api-key-env", "IRTBAYES_TEST_NO_KEY", "--n", "3", "--n-choices", "4",
             "--out", str(tmp_path / "bf")],
            capsys,
        )  # fmt: skip
    finally:
        server.close()
    assert code == 0, err
    cands = [json.loads(line) for line in (tmp_path / "bf" / "candidates.jsonl").read_text().splitlines()]
    assert [c["answer"] for c in cands] == ["green", "white"]
    assert all(c["benchmark"] == "bench01" and c["source"] == "llm:gen-1" for c in cands), cands
    rejections = [json.loads(line) for line in (tmp_path / "bf" / "rejections.jsonl").read_text().splitlines()]
    assert len(rejections) == 1 and "has no 'answer'" in rejections[0]["reason"], rejections
    assert 1 < len(server.requests) <= 3, f"{len(server.requests)} requests"
    assert "benchmark 'bench01'" in server.bodies[0]["messages"][1]["content"]


# ---------------------------------------------------------------------------------------------- export
def test_export_writes_an_lm_eval_task_and_a_csv_template(bank, proposed, tmp_path, capsys):
    assert proposed[1] == 0, proposed[3]
    shutil.copytree(proposed[0], tmp_path / "bf")
    code, _, err = run_cli(["benchfill", "export", str(tmp_path / "bf"), "--format", "lm-eval"], capsys)
    assert code == 0, err
    docs = [json.loads(line) for line in (tmp_path / "bf" / "export" / f"{TASK}.jsonl").read_text().splitlines()]
    assert [d["candidate_id"] for d in docs] == [c.candidate_id for c in bank.candidates]
    assert "output_type: multiple_choice" in (tmp_path / "bf" / "export" / f"{TASK}.yaml").read_text()
    code, _, err = run_cli(["benchfill", "export", str(tmp_path / "bf"), "--format", "csv"], capsys)
    assert code == 0, err
    template = pd.read_csv(tmp_path / "bf" / "export" / "responses_template.csv")
    assert len(template) == 40 * 6
    assert set(template["subject"]) == set(bank.fit.subject_ids)
    assert template["response"].isna().all()


# ---------------------------------------------------------------------------------------------- calibrate
def test_calibrate_writes_the_ledger_and_the_before_after_audit(bank, default_round, tmp_path, capsys):
    # the module's round (this command: `calibrate ... --aim -0.5 1.5`, exit code 0), copied to be continued
    out = shutil.copytree(default_round[0], tmp_path / "round")
    text = default_round[1]
    ledger_csv = pd.read_csv(out / "ledger.csv")
    assert list(ledger_csv.columns[: len(CSV_COLUMNS)]) == list(CSV_COLUMNS)
    assert ledger_csv["candidate_id"].tolist() == [c.candidate_id for c in bank.candidates]
    decisions = ledger_csv.set_index("candidate_id")["decision"]
    assert decisions.tolist() == ["rejected", "rejected", "accepted", "accepted", "rejected", "rejected"], text
    assert ledger_csv["reason"].tolist()[:2] == ["too easy", "too easy"]
    assert ledger_csv["reason"].tolist()[-2:] == ["too hard", "too hard"]
    assert (ledger_csv["aim_lo"] == -0.5).all() and (ledger_csv["aim_hi"] == 1.5).all()

    comparison = pd.read_csv(out / "before_after.csv")
    assert set(zip(comparison["scope"], comparison["version"], strict=True)) == {
        ("all", "before"), ("all", "added"), ("all", "after"), ("bench00", "before"), ("bench00", "added"),
        ("bench00", "after"),
    }  # fmt: skip
    after = comparison.set_index(["scope", "version"])
    assert after.loc[("bench00", "after"), "n_items"] == after.loc[("bench00", "before"), "n_items"] + 2
    assert after.loc[("bench00", "after"), "n_added"] == 2
    for column in ("max_gap_mean", "max_gap_ci_low", "max_gap_ci_high", "ddm_w1_mean", "ddm_w1_ci_low"):
        assert comparison[column].notna().all(), column
    summary = json.loads((out / "before_after.json").read_text())
    assert summary["accepted"] == ["cand2", "cand3"]
    bins = pd.DataFrame(summary["bins"])
    added = bins.loc[bins["scope"] == "all", "count_added_mean"].sum()
    assert added == pytest.approx(2.0, abs=0.05), bins[["bin", "count_added_mean"]]  # a few draws leave [L, U]
    original = bins.loc[bins["scope"] == "all"]
    assert np.allclose(original["count_before_mean"], original["count_original_after_mean"]), (
        "fixed mode keeps the original items' posterior"
    )
    subjects = pd.DataFrame(summary["subjects"])
    assert (subjects["n_original"] == 60).all() and (subjects["n_added"] == 2).all()

    # a rerun continues the ledger; a failed run leaves it as it was
    code, _, err = calibrate(bank, out, capsys, "--aim", "-0.5", "1.5", "--seed", "7")
    assert code == 0, err
    records = Ledger(out / "ledger.jsonl").read()
    assert len(records) == 12 and records["run_id"].nunique() == 2
    before_bytes = (out / "ledger.jsonl").read_bytes()
    bad = tmp_path / "bad.csv"
    bank.responses.assign(subject=lambda f: f["subject"].str.replace("subject00", "stranger")).to_csv(bad, index=False)
    code, _, err = calibrate(bank, out, capsys, "--aim", "-0.5", "1.5", responses=bad)
    assert code == 2 and "stranger0" in err, err
    assert (out / "ledger.jsonl").read_bytes() == before_bytes

    result = load_benchfill(out)
    assert result.run_id == records["run_id"].iloc[-1]
    assert result.accepted == ["cand2", "cand3"]
    doc = Document(title="t")
    benchfill_section(result, doc, lambda name, ax, caption: doc.figure(name, ax.figure, caption=caption))
    markdown = doc.to_markdown()
    assert "BenchFill" in markdown and "Maximum Gap" in markdown
    assert set(doc.figures) == {"benchfill_candidates", "benchfill_coverage"}


def _write_lm_eval_logs(root: Path, docs_path: Path, responses: pd.DataFrame) -> Path:
    """lm-eval ``--log_samples`` output of the exported task, one folder per subject."""
    docs = [json.loads(line) for line in docs_path.read_text().splitlines()]
    date = "2026-11-30T10-00-00.000001"
    for subject, group in responses.groupby("subject"):
        folder = root / str(subject).replace("/", "__")
        folder.mkdir(parents=True)
        config = {"model_name": subject, "configs": {TASK: {"output_type": "multiple_choice"}}}
        (folder / f"results_{date}.json").write_text(json.dumps(config))
        scores = dict(zip(group["item"], group["response"], strict=True))
        lines = []
        for doc_id, doc in enumerate(docs):
            acc = float(scores[doc["candidate_id"]])
            lines.append(
                {
                    "doc_id": doc_id,
                    "doc": doc,
                    "target": str(doc["answer"]),
                    "arguments": {
                        f"gen_args_{k}": {"arg_0": f"Question: {doc['question']}\nAnswer:", "arg_1": f" {c}"}
                        for k, c in enumerate(doc["choices"])
                    },
                    "filter": "none",
                    "metrics": ["acc", "acc_norm"],
                    "doc_hash": hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest(),
                    "acc": acc,
                    "acc_norm": acc,
                }
            )
        (folder / f"samples_{TASK}_{date}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def test_calibrate_reads_lm_eval_logs_through_candidate_ids(bank, proposed, tmp_path, capsys):
    assert proposed[1] == 0, proposed[3]
    shutil.copytree(proposed[0], tmp_path / "bf")
    assert run_cli(["benchfill", "export", str(tmp_path / "bf"), "--format", "lm-eval"], capsys)[0] == 0
    logs = _write_lm_eval_logs(tmp_path / "logs", tmp_path / "bf" / "export" / f"{TASK}.jsonl", bank.responses)
    aim = ["--aim-json", str(tmp_path / "bf")]
    code, _, err = calibrate(bank, tmp_path / "lm", capsys, *aim, responses=logs)
    assert code == 0, err
    code, _, err = calibrate(bank, tmp_path / "csv", capsys, *aim)
    assert code == 0, err
    from_logs = pd.read_csv(tmp_path / "lm" / "ledger.csv").set_index("candidate_id")
    from_csv = pd.read_csv(tmp_path / "csv" / "ledger.csv").set_index("candidate_id")
    assert from_logs["n_responses"].tolist() == [40] * 6
    assert from_logs["decision"].tolist() == from_csv["decision"].tolist()
    assert np.allclose(from_logs["difficulty_mean"], from_csv["difficulty_mean"], atol=0.05), (
        from_logs["difficulty_mean"].to_numpy(),
        from_csv["difficulty_mean"].to_numpy(),
    )
    aim_bin = json.loads((tmp_path / "bf" / "aim.json").read_text())["aim_bin"]
    assert (from_logs["aim_bin"] == aim_bin).all()

    # a logged document whose question is no candidate's text is an unknown item, named
    broken = tmp_path / "broken"
    shutil.copytree(logs, broken)
    for path in broken.glob("*/samples_*.jsonl"):
        lines = path.read_text().splitlines()
        first = json.loads(lines[0])
        first["doc"]["question"] = "A question no candidate asks?"
        path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    code, _, err = calibrate(bank, tmp_path / "broken_out", capsys, *aim, responses=broken)
    assert code == 2 and "of unknown items" in err and f"{TASK}/{first['doc_hash']}" in err, err
    sample = next(broken.glob("*/samples_*.jsonl"))
    lines = sample.read_text().splitlines()

    # a line that is JSON but not an object is named by file and line (it used to raise AttributeError)
    sample.write_text("\n".join([*lines[:2], "[1, 2]", *lines[2:]]) + "\n")
    code, _, err = calibrate(bank, tmp_path / "broken_out", capsys, *aim, responses=broken)
    assert code == 2 and f"{sample.name} line 3: expected a JSON object, found an array" in err, err


def test_calibrate_exposes_the_least_slope(bank, default_round, tmp_path, capsys):
    """--min-discrimination is the least sign-free slope; by default a quarter of the bank's typical one."""
    from irtbayes.benchfill.calibration import typical_discrimination

    default, text = default_round
    typical = typical_discrimination(bank.fit)
    assert f"Least slope {0.25 * typical:.3g}: 0.25 of the bank's typical discrimination" in text, text
    ledger = pd.read_csv(default / "ledger.csv")
    assert ledger["min_discrimination"].to_numpy() == pytest.approx(0.25 * typical)
    # the default lives in the library: the API gives the same least slope and records its rule
    settings = load_benchfill(default).settings
    assert settings["min_discrimination"] == pytest.approx(0.25 * typical)
    assert settings["min_discrimination_rule"].startswith("0.25 of the bank's typical discrimination")
    for column in ("failed", "slope_mean", "slope_ci_low", "slope_ci_high", "p_slope_above_min", "p_in_aim_data"):
        assert column in ledger.columns, column
    near = ledger["candidate_id"].isin(["cand2", "cand3"])  # simulated with slope 1.2 near the abilities
    assert (ledger.loc[near, "slope_ci_low"] > 0).all(), ledger[["candidate_id", "slope_mean", "slope_ci_low"]]

    # no candidate's slope is credibly above 20: every one is rejected, "flat" among its failed checks
    code, text, err = calibrate(bank, tmp_path / "steep", capsys, "--aim", "-0.5", "1.5", "--min-discrimination", "20")
    assert code == 0, err
    assert "Least slope" not in text, text
    ledger = pd.read_csv(tmp_path / "steep" / "ledger.csv")
    assert (ledger["decision"] == "rejected").all(), ledger[["candidate_id", "decision", "failed"]]
    assert ledger["failed"].str.split("; ").map(lambda f: "flat" in f).all(), ledger["failed"]
    assert ledger.loc[ledger["candidate_id"].isin(["cand2", "cand3"]), "reason"].eq("flat").all()
    assert (ledger["min_discrimination"] == 20).all()

    code, _, err = calibrate(bank, tmp_path / "bad", capsys, "--aim", "-0.5", "1.5", "--min-discrimination", "-1")
    assert code == 2 and "--min-discrimination must be a number >= 0" in err, err


def test_unanswered_candidates_are_rejected_for_want_of_responses(bank, tmp_path, capsys):
    path = tmp_path / "responses.csv"
    partial = bank.responses.loc[bank.responses["item"] != "cand5"].copy()
    partial.loc[partial["item"] == "cand4", "response"] = np.nan  # a template row left blank is a missing cell
    partial.to_csv(path, index=False)
    code, _, err = calibrate(bank, tmp_path / "o", capsys, "--aim", "-0.5", "1.5", responses=path)
    assert code == 0, err
    ledger = pd.read_csv(tmp_path / "o" / "ledger.csv").set_index("candidate_id")
    assert ledger.loc[["cand4", "cand5"], "reason"].tolist() == ["not enough responses"] * 2
    assert ledger.loc[["cand4", "cand5"], "n_responses"].tolist() == [0, 0]
    assert ledger.loc[["cand2", "cand3"], "decision"].tolist() == ["accepted", "accepted"]


# ---------------------------------------------------------------------------------------------- bad input
def _bad_candidates(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.jsonl"
    rows = [{"candidate_id": "x1", "text": "Q1?", "answer": "a"}, {"candidate_id": "x2", "text": "Q2?", "answer": "b"}]
    if kind == "no_answer":
        del rows[1]["answer"]
    else:
        rows[1]["candidate_id"] = "x1"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("kind", "message"),
    [("no_answer", "line 2: the candidate has no answer"), ("duplicate", "candidate_id 'x1' appears twice")],
)
def test_bad_candidate_files_are_refused(bank, tmp_path, capsys, kind, message):
    path = _bad_candidates(tmp_path, kind)
    code, _, err = run_cli(
        ["benchfill", "propose", "--fit", str(bank.fit_dir), "--candidates", str(path), "--out", str(tmp_path / "o")],
        capsys,
    )
    assert code == 2 and message in err, err
    assert not (tmp_path / "o").exists()
    code, _, err = run_cli(
        ["benchfill", "calibrate", "--fit", str(bank.fit_dir), "--candidates", str(path), "--responses",
         str(bank.responses_path), "--aim-bin", "3", "--mode", "fixed", "--out", str(tmp_path / "c")],
        capsys,
    )  # fmt: skip
    assert code == 2 and message in err, err


def test_responses_to_unknown_items_are_refused(bank, tmp_path, capsys):
    path = tmp_path / "responses.csv"
    extra = pd.DataFrame({"subject": ["subject001", "subject002"], "item": ["cand9", "item00001"], "response": [1, 0]})
    pd.concat([bank.responses, extra]).to_csv(path, index=False)
    code, _, err = calibrate(bank, tmp_path / "o", capsys, "--aim-bin", "3", responses=path)
    assert code == 2, err
    assert "2 item(s) that are not candidates: cand9, item00001" in err, err
    assert not (tmp_path / "o" / "ledger.jsonl").exists()


def test_responses_from_unknown_subjects_are_listed(bank, tmp_path, capsys):
    path = tmp_path / "responses.csv"
    extra = pd.DataFrame({"subject": ["new-model-a", "new-model-b"], "item": ["cand0", "cand1"], "response": [1, 0]})
    pd.concat([bank.responses, extra]).to_csv(path, index=False)
    code, _, err = calibrate(bank, tmp_path / "o", capsys, "--aim-bin", "3", responses=path)
    assert code == 2, err
    assert "2 subject(s) are not among the fit's 40 subjects: new-model-a, new-model-b" in err, err


def test_a_fit_folder_without_its_card_is_refused(bank, tmp_path, capsys):
    broken = tmp_path / "fit"
    shutil.copytree(bank.fit_dir, broken)
    (broken / "card.json").unlink()
    code, _, err = run_cli(
        ["benchfill", "propose", "--fit", str(broken), "--candidates", str(bank.candidates_path), "--out",
         str(tmp_path / "o")],
        capsys,
    )  # fmt: skip
    assert code == 2 and "card.json: missing" in err, err


@pytest.mark.parametrize("verb", ["propose", "calibrate"])
def test_an_aim_bin_out_of_range_is_refused(bank, tmp_path, capsys, verb):
    if verb == "propose":
        code, _, err = propose_from_file(bank, tmp_path / "o", capsys, "--aim-bin", "10")
    else:
        code, _, err = calibrate(bank, tmp_path / "o", capsys, "--aim-bin", "-1")
    assert code == 2, err
    assert "out of range: the audit's target has 10 bins, numbered 0 to 9" in err, err


def test_the_old_target_flags_still_work_hidden_and_warn(bank, proposed, tmp_path, capsys, caplog):
    """--target-bin, --target and --target-json (the aim's old flags) do what --aim-bin, --aim and --aim-json do, each
    with a warning naming its new flag, and the help shows only the new ones; --target-json reads an old folder."""
    code, _, err = propose_from_file(bank, tmp_path / "bin", capsys, "--target-bin", "2", "--bins", "5")
    assert code == 0, err
    assert "--target-bin is deprecated and will be removed in the next release: use --aim-bin" in caplog.text
    assert json.loads((tmp_path / "bin" / "aim.json").read_text())["aim_bin"] == 2
    code, _, err = propose_from_file(bank, tmp_path / "interval", capsys, "--target", "-0.5", "1.5")
    assert code == 0, err
    assert "--target is deprecated and will be removed in the next release: use --aim" in caplog.text
    aim = json.loads((tmp_path / "interval" / "aim.json").read_text())
    assert (aim["aim_lo"], aim["aim_hi"], aim["how"]) == (-0.5, 1.5, "the interval [-0.5, 1.5) given by the user")
    with pytest.raises(SystemExit):  # argparse refuses an old and a new flag together, as it does two new ones
        propose_from_file(bank, tmp_path / "both", capsys, "--target-bin", "2", "--aim", "0", "1")
    assert "argument --aim: not allowed with argument --target-bin" in capsys.readouterr().err

    # a proposal folder as older versions wrote it: target.json with target_* keys
    old = shutil.copytree(proposed[0], tmp_path / "old")
    record = json.loads((old / "aim.json").read_text())
    record = {
        {"aim_lo": "target_lo", "aim_hi": "target_hi", "aim_bin": "target_bin"}.get(k, k): v for k, v in record.items()
    }
    (old / "target.json").write_text(json.dumps(record))
    (old / "aim.json").unlink()
    caplog.clear()
    code, text, err = calibrate(bank, tmp_path / "cal", capsys, "--target-json", str(old))
    assert code == 0, err
    assert "--target-json is deprecated and will be removed in the next release: use --aim-json" in caplog.text
    ledger = pd.read_csv(tmp_path / "cal" / "ledger.csv")
    assert (ledger["aim_bin"] == record["target_bin"]).all() and (ledger["aim_lo"] == record["target_lo"]).all()
    assert not [c for c in ledger.columns if "target" in c], ledger.columns.tolist()
    assert f"BenchFill aim [{record['target_lo']:.2f}, {record['target_hi']:.2f})" in text, text

    for verb in ("propose", "calibrate"):
        with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()) as help_text:
            _invoke(["benchfill", verb, "--help"])
        assert "--aim-bin" in help_text.getvalue() and "--target" not in help_text.getvalue(), help_text.getvalue()
    capsys.readouterr()


def test_an_unknown_benchmark_is_refused(bank, tmp_path, capsys):
    code, _, err = propose_from_file(bank, tmp_path / "o", capsys, "--benchmark", "bench99")
    assert code == 2 and "benchmark 'bench99' is not in" in err, err


# ---------------------------------------------------------------------------------------------- full mode
@pytest.mark.slow
def test_calibrate_full_mode_refits(bank, tmp_path, capsys):
    out = tmp_path / "full"
    code, text, err = run_cli(
        ["benchfill", "calibrate", "--fit", str(bank.fit_dir), "--candidates", str(bank.candidates_path),
         "--responses", str(bank.responses_path), "--aim", "-0.5", "1.5", "--mode", "full", "--no-progress",
         "--out", str(out)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    decisions = pd.read_csv(out / "ledger.csv")["decision"].tolist()
    assert decisions == ["rejected", "rejected", "accepted", "accepted", "rejected", "rejected"], text
    summary = json.loads((out / "before_after.json").read_text())
    assert summary["settings"]["mode"] == "full" and summary["settings"]["refit"]["chains"] == 2
    # the refit fits the candidates in their own group; the after audit still counts the accepted in bench00
    comparison = pd.read_csv(out / "before_after.csv").set_index(["scope", "version"])
    for scope in ("all", "bench00"):
        assert comparison.loc[(scope, "after"), "n_items"] == comparison.loc[(scope, "before"), "n_items"] + 2
    assert set(pd.read_csv(out / "before_after_conclusions.csv")["cause"]) == {"composition", "re-estimation"}


def test_decisions_say_when_the_fit_behind_them_failed_its_checks(bank, default_round):
    from irtbayes.benchfill.result import unconverged_note
    from irtbayes.fitting.storage import load_fit

    out, text = default_round
    records = Ledger(out / "ledger.jsonl").read()
    bank_ok = load_fit(bank.fit_dir).diagnostics.ok
    assert (records["bank_converged"] == bank_ok).all()
    assert ("WARNING: the bank's fit did not pass" in text) == (not bank_ok), text
    # a missing record is a failure, never a pass
    assert unconverged_note({"mode": "full"}).startswith("the refit did not pass")
    assert unconverged_note({"mode": "fixed"}).startswith("the bank's fit did not pass")
    assert unconverged_note({"mode": "full", "refit_converged": True}) == ""
    assert unconverged_note({"mode": "fixed", "bank_converged": True}) == ""


def test_propose_reads_a_saved_audit_instead_of_auditing_again(bank, tmp_path, capsys, monkeypatch):
    from irtbayes.auditing.folder import save_audit
    from irtbayes.auditing.run import audit
    from irtbayes.benchfill import aim as aim_module
    from irtbayes.fitting.storage import load_fit, load_fit_data

    fit = load_fit(bank.fit_dir)
    data = load_fit_data(fit)
    save_audit(audit(fit, data, seed=0), tmp_path / "audit")

    def no_audit(*args, **kwargs):
        raise AssertionError("audited again")

    monkeypatch.setattr(aim_module, "audit", no_audit)
    code, _, err = propose_from_file(bank, tmp_path / "bf", capsys, "--audit", str(tmp_path / "audit"))
    assert code == 0, err
    aim = json.loads((tmp_path / "bf" / "aim.json").read_text())
    assert aim["benchmark"] == "bench00" and Path(aim["audit"]) == (tmp_path / "audit").resolve()
    code, _, err = propose_from_file(bank, tmp_path / "bf2", capsys, "--audit", str(tmp_path / "audit"), "--bins", "4")
    assert code == 2 and "--audit brings its own bins and range" in err
    # calibrate reads the audit aim.json records as the bank's "before" and does not audit the bank again
    import irtbayes.benchfill.result as result_module

    audited = []
    real = result_module.audit
    monkeypatch.setattr(result_module, "audit", lambda *a, **k: audited.append(len(a[1].item_ids)) or real(*a, **k))
    code, _, err = calibrate(bank, tmp_path / "cal", capsys, "--aim-json", str(tmp_path / "bf"))
    assert code == 0, err
    # nothing was accepted: one audit, the extended bank's (re-auditing the bank would have made it two)
    assert audited == [data.n_items], audited
    before = pd.read_csv(tmp_path / "cal" / "before_after.csv").query("scope == 'all' and version == 'before'")
    saved = pd.read_csv(tmp_path / "audit" / "benchmarks.csv").query("scope_kind == 'all'")
    np.testing.assert_allclose(before["ddm_w1_mean"].to_numpy(), saved["ddm_w1_mean"].to_numpy(), rtol=1e-12)
