"""The report and the fit/audit/report/score commands, end to end on a tiny seeded fit with hostile names."""

from __future__ import annotations

import html
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.cli.main import main
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.storage import load_fit
from irtbayes.model.spec import ModelSpec
from irtbayes.reporting.document import format_number

EVIL_ITEM = "<script>alert(1)</script>"
EVIL_SUBJECT = "<img src=x onerror=alert(2)>"
EVIL_BENCH = "bench<b>&amp;"


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Simulated responses where one subject, one benchmark and every item text carry markup; a CSV and a fit."""
    data, _ = simulate_responses(24, 30, kind="2pl", n_benchmarks=3, n_domains=1, missing=0.0, seed=7)
    frame = data.long_frame().join(data.items[["benchmark", "domain"]], on="item")
    frame["subject"] = frame["subject"].replace({"subject000": EVIL_SUBJECT})
    frame["benchmark"] = frame["benchmark"].replace({"bench00": EVIL_BENCH})
    # one item every subject solves, so the flagged-items table (which shows item text) is not empty
    frame.loc[frame["item"] == "item00000", "response"] = 1.0
    frame["text"] = EVIL_ITEM
    folder = tmp_path_factory.mktemp("hostile")
    csv = folder / "responses.csv"
    frame.to_csv(csv, index=False)
    hostile_data = ResponseData.from_long(pd.read_csv(csv), source=str(csv))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(hostile_data, ModelSpec(kind="2pl"), chains=2, draws=200, tune=200, seed=3, progress=False)
    return {"csv": csv, "data": hostile_data, "fit": result, "folder": folder}


@pytest.fixture
def text_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Figures drawn but not rendered (their PNG and SVG are empty), for the tests that read only the report's text
    and tables: rendering them is most of the time a report takes (the report of ``reported`` renders them)."""
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: None)


@dataclass(frozen=True)
class Reported:
    """The hostile fit's audit, the folder of its report, and the fit's summaries the report called, by name."""

    audit: AuditResult
    folder: Path
    calls: list[str]


@pytest.fixture(scope="module")
def reported(hostile: dict[str, object], tmp_path_factory: pytest.TempPathFactory) -> Reported:
    """The hostile fit audited (6 bins) and reported once, for the tests that read that report; the fit's
    summaries (``items_table``, ``subjects_table``) are counted while it is written."""
    from irtbayes.fitting.result import Fit
    from irtbayes.reporting.report import report

    data, result = hostile["data"], hostile["fit"]
    audited = audit(result, data, bins=6)
    calls: list[str] = []

    def counted(name: str):
        summarise = getattr(Fit, name)
        return lambda self, *args, **kwargs: calls.append(name) or summarise(self, *args, **kwargs)

    folder = tmp_path_factory.mktemp("reported") / "rep"
    with pytest.MonkeyPatch.context() as patch:
        for name in ("items_table", "subjects_table"):
            patch.setattr(Fit, name, counted(name))
        report(result, folder, data=data, audit=audited)  # type: ignore[arg-type]
    return Reported(audited, folder, calls)


def test_report_escapes_data_text_and_is_self_contained(reported: Reported) -> None:
    folder = reported.folder
    page = (folder / "report.html").read_text()
    for raw in (EVIL_ITEM, EVIL_SUBJECT, "bench<b>"):
        assert raw not in page, f"unescaped {raw!r} in report.html"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, "the item text should appear, escaped"
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "bench&lt;b&gt;&amp;amp;" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "report.html must not load anything"
    n_embedded = page.count("data:image/png;base64,")
    assert n_embedded >= 8, n_embedded
    md = (folder / "report.md").read_text()
    assert EVIL_ITEM not in md and EVIL_SUBJECT not in md
    for name in re.findall(r"\(figures/([\w-]+)\.png\)", md):
        assert (folder / "figures" / f"{name}.png").is_file()
        assert (folder / "figures" / f"{name}.svg").is_file()


def test_report_numbers_equal_the_tables(hostile: dict[str, object], reported: Reported) -> None:
    result, audited, folder = hostile["fit"], reported.audit, reported.folder
    # each summarised once for the figures and the CSV files (seconds apiece at leaderboard sizes)
    assert sorted(reported.calls) == ["items_table", "subjects_table"]
    subjects = result.subjects_table(audited.ci_prob)  # type: ignore[attr-defined]
    written = pd.read_csv(folder / "tables" / "subjects.csv")
    assert list(written.columns) == list(subjects.columns)
    np.testing.assert_allclose(written["ability_mean"], subjects["ability_mean"])
    items = pd.read_csv(folder / "tables" / "items.csv")  # the audit's table of that name
    assert list(items.columns) == list(audited.items.columns)
    md = (folder / "report.md").read_text()
    bench = pd.read_csv(folder / "tables" / "benchmarks.csv")
    pd.testing.assert_frame_equal(
        bench[["scope", "ddm_w1_mean"]], audited.benchmarks[["scope", "ddm_w1_mean"]].reset_index(drop=True)
    )
    lines = md.splitlines()
    start = lines.index("*Per benchmark*")
    table_lines = lines[start + 2 :]
    table_lines = table_lines[: next(i for i, ln in enumerate(table_lines) if not ln.startswith("|"))]
    assert len(table_lines) == 2 + len(bench), "header, rule and one row per scope"
    for row, line in zip(bench.itertuples(), table_lines[2:], strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == html.escape(str(row.scope), quote=False)
        assert cells[2:5] == [format_number(v) for v in (row.ddm_w1_mean, row.ddm_w1_ci_low, row.ddm_w1_ci_high)]
        assert cells[6:9] == [format_number(v) for v in (row.max_gap_mean, row.max_gap_ci_low, row.max_gap_ci_high)]
    ranking = pd.read_csv(folder / "tables" / "ranking.csv")
    top = ranking.loc[ranking["scope_kind"] == "all"].sort_values("rank_mean").iloc[0]
    assert f"{format_number(top['reweighted_mean'])}" in md


@pytest.mark.usefixtures("text_only")
def test_cli_fit_audit_report_score_round_trip(hostile: dict[str, object], tmp_path: Path) -> None:
    csv = hostile["csv"]
    fit_dir = tmp_path / "fit"
    common = ["--chains", "2", "--draws", "150", "--tune", "150", "--seed", "5", "--no-progress"]
    assert main(["fit", str(csv), "--out", str(fit_dir), "--target-accept", "0.9", *common]) == 0
    card = json.loads((fit_dir / "card.json").read_text())
    assert card["spec"]["kind"] == "2pl" and card["sampler"]["seed"] == 5
    assert card["sampler"]["target_accept"] == 0.9  # not the default 0.8
    items = pd.read_csv(fit_dir / "items.csv")
    assert {"item", "difficulty_mean", "difficulty_sd", "difficulty_ci_low", "difficulty_ci_high",
            "intercept_mean", "discrimination_mean"} <= set(items.columns)  # fmt: skip

    out = tmp_path / "audit"
    # with a self-check of 2 simulated data sets (the fewest it takes): one audit for the report and the self-check
    argv = ["audit", "--fit", str(fit_dir), "--bins", "5", "--ci", "0.8", "--self-check", "2", "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ci_prob"] == 0.8
    for key in ("ddm", "max_gap"):
        block = summary["overall"][key] if "overall" in summary else summary["all"][key]
        assert block["ci_low"] <= block["mean"] <= block["ci_high"]
    assert (out / "bins.csv").is_file() and (out / "ranking.csv").is_file()
    assert (out / "report" / "report.html").is_file()
    # audit.txt opens with the findings and what to do, its commands naming the saved fit, then the tables
    text = (out / "audit.txt").read_text()
    assert text.startswith("What this audit found\n") and "\nWhat to do\n" in text and "\nGlossary\n" in text
    assert text.index("Glossary") < text.index("Audit of ")
    assert f"--fit {fit_dir}" in text or "No gap needs filling, and inside the range" in text, text[:3000]
    bench = pd.read_csv(out / "benchmarks.csv")
    assert (bench["max_gap_ci_high"] >= bench["max_gap_posterior_ci_high"]).all()  # recalibrated, never narrower
    assert summary["settings"]["calibrated_intervals"] is True
    assert summary["settings"]["self_check"]["n_sets"] + summary["settings"]["self_check"]["n_failed"] == 2
    assert "max_gap_self_check_coverage" in bench.columns
    assert "Self-check on this design" in text

    plain = tmp_path / "audit_plain"
    assert (
        main(
            ["audit", "--fit", str(fit_dir), "--bins", "5", "--posterior-intervals", "--no-report", "--out", str(plain)]
        )
        == 0
    )
    bench = pd.read_csv(plain / "benchmarks.csv")
    np.testing.assert_allclose(bench["max_gap_ci_high"], bench["max_gap_posterior_ci_high"])

    rep = tmp_path / "report"
    assert main(["report", "--fit", str(fit_dir), "--audit", str(out), "--out", str(rep)]) == 0
    assert (rep / "report.html").is_file() and (rep / "tables" / "bins.csv").is_file()
    again = pd.read_csv(rep / "tables" / "benchmarks.csv")
    first = pd.read_csv(out / "report" / "tables" / "benchmarks.csv")
    np.testing.assert_allclose(again["ddm_w1_mean"], first["ddm_w1_mean"])

    new = pd.read_csv(csv)
    new = new.loc[new["subject"].isin(["subject001", "subject002"])].assign(subject=lambda f: f["subject"] + "_new")
    new_csv = tmp_path / "new.csv"
    new.to_csv(new_csv, index=False)
    assert main(["score", "--fit", str(fit_dir), str(new_csv)]) == 0
    assert load_fit(fit_dir).spec.kind == "2pl"


def test_cli_refuses_a_fit_of_other_data_and_bad_targets(
    hostile: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from irtbayes.fitting.storage import save_fit

    fit_dir = save_fit(hostile["fit"], tmp_path / "fit")  # type: ignore[arg-type]
    assert main(["audit", "lsat7", "--fit", str(fit_dir), "--out", str(tmp_path / "a")]) == 2
    assert "these are not the data the fit was made from" in capsys.readouterr().err
    assert main(["audit", "--fit", str(fit_dir), "--bins", "0", "--out", str(tmp_path / "a")]) == 2
    assert "bin" in capsys.readouterr().err
    assert main(["audit", "--fit", str(fit_dir), "--range", "50", "60", "--out", str(tmp_path / "a")]) == 2
    assert "no subject" in capsys.readouterr().err
    assert (
        main(["audit", "--fit", str(fit_dir), "--target", "1,-1,1", "--bins", "3", "--out", str(tmp_path / "a")]) == 2
    )
    assert "negative" in capsys.readouterr().err
    assert not (tmp_path / "a").exists(), "a failed audit must leave no output folder"
    (fit_dir / "card.json").unlink()
    assert main(["audit", "--fit", str(fit_dir), "--out", str(tmp_path / "a")]) == 2
    assert "card.json" in capsys.readouterr().err


@pytest.mark.usefixtures("text_only")
def test_report_reads_the_saved_audit_and_never_reruns_it(
    hostile: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    import irtbayes.auditing.run
    from irtbayes.auditing.folder import load_audit, save_audit
    from irtbayes.fitting.storage import save_fit

    data, result = hostile["data"], hostile["fit"]
    fit_dir = save_fit(result, tmp_path / "fit")  # type: ignore[arg-type]
    settings = {"bins": 6, "ci_prob": 0.8, "seed": 11, "top_k": 2, "max_draws": 120}
    # audited in memory, reported from the saved fit (as `irtbayes audit` without --fit leaves them)
    saved = audit(result, data, group=["subject001", "subject002"], **settings)  # type: ignore[arg-type]
    audit_dir = save_audit(saved, tmp_path / "audit")

    def rerun(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report must read the saved audit, not run it again")

    monkeypatch.setattr(irtbayes.auditing.run, "audit", rerun)  # the one module that defines it
    rep = tmp_path / "report"
    assert main(["report", "--fit", str(fit_dir), "--audit", str(audit_dir), "--out", str(rep)]) == 0
    for name in ("bins", "benchmarks", "ranking", "information", "items"):
        pd.testing.assert_frame_equal(
            pd.read_csv(rep / "tables" / f"{name}.csv"), pd.read_csv(audit_dir / f"{name}.csv")
        )
    md = (rep / "report.md").read_text()
    assert "seed 11" in md and "top 2 subjects" in md and "target from the group subject001, subject002" in md
    assert "under three scorings, with 80% intervals" in md, "re-weighted, raw and ability ranks, as audited"
    assert f"check-items --fit {fit_dir} --out flags" in md, "the actions name the saved fit, not a placeholder"
    # the leaderboard table shows the audit's own rank intervals (one quantile rule: the audit's)
    lines = md.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("*Leaderboard:"))
    rows = lines[start + 2 :]
    rows = rows[: next(i for i, ln in enumerate(rows) if not ln.startswith("|"))]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    ranking = load_audit(audit_dir).ranking
    board = ranking.loc[ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")
    assert len(rows) - 2 == min(len(board), 30)
    for line, row in zip(rows[2:], board.itertuples(), strict=False):
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        got = [cells["rank_mean"], cells["rank_ci_low"], cells["rank_ci_high"]]
        assert got == [format_number(v) for v in (row.rank_mean, row.rank_ci_low, row.rank_ci_high)], (got, row)

    # an audit of another fit of the same data is refused, naming the audit's summary
    tree = result.idata.copy(deep=True)  # type: ignore[attr-defined]
    posterior = tree["posterior"].to_dataset()
    posterior["ability"] = posterior["ability"] + 1e-3
    tree["posterior"] = posterior
    other_dir = save_fit(dataclasses.replace(result, idata=tree), tmp_path / "other")  # type: ignore[call-overload]
    capsys.readouterr()
    out = tmp_path / "refused"
    assert main(["report", "--fit", str(other_dir), "--audit", str(audit_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "another fit" in err and "summary.json" in err, err
    assert not out.exists()
    (audit_dir / "ranking.csv").unlink()
    assert main(["report", "--fit", str(fit_dir), "--audit", str(audit_dir), "--out", str(out)]) == 2
    assert "ranking.csv: no such file" in capsys.readouterr().err
