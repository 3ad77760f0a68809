"""The report opens with what the audit found, written from the results; shares print as percentages.

Hand-built posteriors (the planted item difficulties plus known scatter), no sampling: one benchmark with a
1.5-logit stretch without items, one without; a passing fit, a failed one and an approximate one.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.result import Fit
from irtbayes.reporting.document import format_probability, format_share
from irtbayes.reporting.findings import CREDIBLE_GAP, audit_findings
from irtbayes.reporting.report import build_report, report

#: The planted stretch without items in the benchmark with a gap, inside the audit's range [-2, 2].
GAP = (0.0, 1.5)
HEADING = "What this audit found"
SCIENTIFIC = re.compile(r"\d\.?\d*e[-+]\d+")


def planted(*, gap: bool, seed: int = 1) -> tuple[Fit, ResponseData]:
    """Two benchmarks of 40 items spread evenly over [-2.2, 2.2]; with ``gap``, bench01's items leave out GAP.

    The posterior is the planted difficulties plus sd 0.1 scatter, 4 chains x 500 independent draws, with
    sampler statistics of a clean run, so that the fit passes its convergence checks.
    """
    data, truth = simulate_responses(60, 80, n_benchmarks=2, missing=0.0, seed=seed)
    benchmark = data.items["benchmark"].to_numpy()
    difficulty = np.empty(data.n_items)
    for name in ("bench00", "bench01"):
        idx = np.flatnonzero(benchmark == name)
        if gap and name == "bench01":
            width = 4.4 - (GAP[1] - GAP[0])
            spots = np.linspace(-2.2, 2.2 - (GAP[1] - GAP[0]), len(idx))
            spots = np.where(spots < GAP[0], spots, spots + (GAP[1] - GAP[0]))
            assert width > 0 and not ((spots > GAP[0]) & (spots < GAP[1])).any()
        else:
            spots = np.linspace(-2.2, 2.2, len(idx))
        difficulty[idx] = np.random.default_rng(seed).permutation(spots)
    truth = truth.assign(difficulty=(("item",), difficulty))
    posterior = posterior_near_truth(data, truth, chains=4, draws=500, seed=seed + 1, sd_difficulty=0.1)
    fit = Fit.from_posterior(posterior, data)
    rng = np.random.default_rng(seed + 2)
    tree = fit.idata.copy()
    tree["sample_stats"] = xr.Dataset(
        {
            "diverging": (("chain", "draw"), np.zeros((4, 500), dtype=bool)),
            "energy": (("chain", "draw"), rng.standard_normal((4, 500))),
        }
    )
    return dataclasses.replace(fit, idata=tree, diagnostics=check_convergence(tree)), data


def audited(fit: Fit, data: ResponseData) -> AuditResult:
    return audit(fit, data, bins=4, range=(-2.0, 2.0), ensemble="draws", max_draws=200, seed=0)


@pytest.fixture(scope="module")
def with_gap() -> tuple[Fit, ResponseData, AuditResult]:
    fit, data = planted(gap=True)
    return fit, data, audited(fit, data)


@pytest.fixture(scope="module")
def without_gap() -> tuple[Fit, ResponseData, AuditResult]:
    fit, data = planted(gap=False)
    return fit, data, audited(fit, data)


@pytest.fixture
def text_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Figures drawn but not rendered (their PNG and SVG are empty), for the tests that read only the report's text:
    rendering them is most of the time a report takes."""
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: None)


def findings_block(md: str) -> str:
    """The Markdown of the findings section: from its heading to the next second-level heading."""
    start = md.index(f"## {HEADING}")
    end = md.index("\n## ", start + 1)
    return md[start:end]


def test_findings_come_first_in_html_and_markdown(
    with_gap: tuple[Fit, ResponseData, AuditResult], tmp_path: Path
) -> None:
    fit, data, result = with_gap
    assert fit.diagnostics.ok, fit.diagnostics.problems
    page = report(fit, tmp_path / "rep", data=data, audit=result).read_text(encoding="utf-8")
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.*)", md, flags=re.MULTILINE)[:3] == [HEADING, "Key figures", "Data"]
    h2 = re.findall(r"<h2[^>]*>(.*?)</h2>", page)
    assert h2[:3] == [HEADING, "Key figures", "Data"], h2
    assert {"Model and settings", "Audit target and settings", "Diagnostics"} <= set(h2[3:]), h2
    # nothing but the title comes before the findings, and the verdict opens them
    assert page.index("<h1>") < page.index(f">{HEADING}</h2>") < page.index("<figure>")
    first = page[page.index(f">{HEADING}</h2>") :]
    assert first.split("</h2>", 1)[1].lstrip().startswith('<p class="verdict-ok">The fit passed its convergence')


def test_a_planted_gap_is_found_where_it_is_and_the_other_benchmark_has_none(
    with_gap: tuple[Fit, ResponseData, AuditResult],
) -> None:
    fit, _, result = with_gap
    rows = result.benchmarks.set_index("scope")
    assert rows.at["bench01", "max_gap_ci_low"] > CREDIBLE_GAP >= rows.at["bench00", "max_gap_ci_low"], rows[
        ["max_gap_mean", "max_gap_ci_low", "max_gap_ci_high"]
    ]
    found = audit_findings(fit, result)
    assert found.trusted and not any(s.startswith("PROVISIONAL") for s in found.found)
    assert "1 of 2 benchmarks have a credible coverage gap: bench01." in found.found, found.found
    (sentence,) = [s for s in found.found if s.startswith("bench01 has a credible coverage gap")]
    lo, hi = (float(v) for v in re.search(r"around \[(-?[\d.]+), (-?[\d.]+)\]", sentence).groups())  # type: ignore[union-attr]
    assert abs(lo - GAP[0]) < 0.25 and abs(hi - GAP[1]) < 0.25, sentence
    assert "between two items" in sentence, sentence
    row = rows.loc["bench01"]
    assert (
        f"{row['max_gap_mean']:.2f} [{row['max_gap_ci_low']:.2f}, {row['max_gap_ci_high']:.2f}] logits wide" in sentence
    )
    assert not any(s.startswith("bench00 has") for s in found.found), found.found
    # the gap is the first place to add items, with the command that targets it
    (where,) = [s for s in found.todo if s.startswith("New items count most")]
    k = int(row["gap_modal_bin"])
    assert f"bench01's gap, difficulty {result.target.bin_label(k)}" in where and "--benchmark bench01" in where


@pytest.mark.usefixtures("text_only")
def test_without_a_planted_gap_the_findings_say_none(without_gap: tuple[Fit, ResponseData, AuditResult]) -> None:
    fit, data, result = without_gap
    assert (result.benchmarks["max_gap_ci_low"] <= CREDIBLE_GAP).all(), result.benchmarks["max_gap_ci_low"]
    md = build_report(fit, data, audit=result).to_markdown()
    block = findings_block(md)
    bench = result.benchmarks.loc[result.benchmarks["scope_kind"] == "benchmark"]
    widest = bench.loc[bench["max_gap_mean"].idxmax()]
    expected = (
        f"No benchmark has a credible coverage gap. The widest is {widest['scope']}'s: "
        f"{widest['max_gap_mean']:.2f} [{widest['max_gap_ci_low']:.2f}, {widest['max_gap_ci_high']:.2f}] logits."
    )
    assert expected in block, block
    assert "has a credible coverage gap:" not in block
    # a bin credibly empty whose stretch does not clear the threshold is named, and not called a credible gap
    bins = result.bins.copy()
    at = (bins["scope"] == "bench00") & (bins["bin"] == 1)
    bins.loc[at, "p_empty"] = 0.95
    found = audit_findings(fit, dataclasses.replace(result, bins=bins)).found
    (narrow,) = [s for s in found if s.startswith("bench00 has no item in")]
    lo, hi = bins.loc[at, ["lo", "hi"]].iloc[0]
    assert f"[{lo:.2f}, {hi:.2f}) (P ≥ 0.9), a stretch too narrow for a credible gap" in narrow, narrow


def test_findings_state_the_distance_from_the_target_and_the_leaderboard(
    with_gap: tuple[Fit, ResponseData, AuditResult],
) -> None:
    fit, _, result = with_gap
    found = audit_findings(fit, result)
    bench = result.benchmarks.loc[result.benchmarks["scope_kind"] == "benchmark"].sort_values("ddm_w1_mean")
    (ddm,) = [s for s in found.found if " is furthest from the target, DDM " in s]
    far, near = bench.iloc[-1], bench.iloc[0]
    for label, row in (("is furthest from the target, DDM", far), ("is closest,", near)):
        value = f"{row.ddm_w1_mean:.2f} [{row.ddm_w1_ci_low:.2f}, {row.ddm_w1_ci_high:.2f}]"
        assert f"{row.scope} {label} {value}" in ddm, ddm
    ranking = result.ranking.loc[result.ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")
    first, second = ranking["subject"].iloc[:2]
    (board,) = [s for s in found.found if s.startswith("Weighting the items to the target")]
    p = format_probability(result.ahead.at[first, second])
    assert f"{first} leads, rank " in board and f"ahead of {second} with P = {p}" in board, board
    # raw ranks shared by ties: a system moves when none of them lies inside its re-weighted interval
    first_rank = ranking["raw_accuracy"].rank(ascending=False, method="min")
    last_rank = ranking["raw_accuracy"].rank(ascending=False, method="max")
    moved = (first_rank > ranking["rank_ci_high"]) | (last_rank < ranking["rank_ci_low"])
    assert ("keeps every one of the" in board) == (not moved.any()), board
    assert any(s.startswith("The raw leaderboard's order holds") for s in found.todo) == (not moved.any())

    # the last system by re-weighted rank given the best raw accuracy: it moves down, behind the system that
    # is most probably ahead of it
    last = ranking.iloc[-1]
    board_table = result.ranking.copy()
    at = (board_table["scope_kind"] == "all") & (board_table["subject"] == last["subject"])
    board_table.loc[at, "raw_accuracy"] = board_table["raw_accuracy"].max() + 0.01
    everyone = board_table["scope_kind"] == "all"
    board_table.loc[everyone, "raw_rank"] = board_table.loc[everyone, "raw_accuracy"].rank(
        ascending=False, method="min"
    )
    changed = audit_findings(fit, dataclasses.replace(result, ranking=board_table))
    (moves,) = [s for s in changed.found if s.startswith("Weighting the items to the target moves")]
    assert f"moves 1 of {len(ranking)} systems" in moves, moves
    ahead = result.ahead.loc[:, last["subject"]].drop(last["subject"])
    raw = board_table.loc[everyone].set_index("subject")["raw_rank"].astype(int)
    behind = min(ahead.index[ahead == ahead.max()], key=lambda s: raw[s])  # the best raw rank among equals
    low, high = int(last["rank_ci_low"]), int(last["rank_ci_high"])
    interval = str(low) if low == high else f"{low}–{high}"
    assert (
        f"{last['subject']} from raw rank 1 to {interval}, behind {behind} (raw rank {raw[behind]}) with "
        f"P = {format_probability(ahead.max())}" in moves
    ), moves
    assert "under this target 1 system change rank beyond its interval" in " ".join(changed.todo), changed.todo


def test_the_ddm_of_a_2pl_fit_of_multiple_choice_items_is_said_to_be_too_narrow(
    with_gap: tuple[Fit, ResponseData, AuditResult],
) -> None:
    """The 2PL leaves out the chance floor, and the study found its DDM intervals too narrow: the DDM finding says
    so where the fit records multiple-choice items, and only there."""
    fit, _, result = with_gap
    chosen = {"items": 80, "options_low": 4, "options_high": 4}

    def ddm_sentence(fitted: Fit) -> str:
        (sentence,) = [s for s in audit_findings(fitted, result).found if " is furthest from the target, DDM " in s]
        return sentence

    caveat = "These DDM intervals are too narrow: the 2PL leaves out the chance floor of the 80 multiple-choice items"
    floored = dataclasses.replace(fit, info={**fit.info, "multiple_choice": chosen})
    assert caveat in ddm_sentence(floored) and "--model 3pl --guessing chance" in ddm_sentence(floored)
    assert "too narrow" not in ddm_sentence(fit)
    three = dataclasses.replace(floored, spec=floored.spec.replace(kind="3pl"))
    assert "too narrow" not in ddm_sentence(three)


@pytest.mark.usefixtures("text_only")
@pytest.mark.parametrize("case", ["unconverged", "approximate"])
def test_an_untrusted_fit_is_said_first_and_every_finding_is_marked(
    with_gap: tuple[Fit, ResponseData, AuditResult], case: str
) -> None:
    fit, data, result = with_gap
    if case == "unconverged":
        bad = Fit.from_posterior(fit.posterior, data)  # no sampler statistics: the checks fail
        assert not bad.diagnostics.ok
        opening = "The fit FAILED its convergence checks"
    else:
        bad = dataclasses.replace(fit, sampler={**fit.sampler, "name": "advi", "approximate": True})
        opening = "The posterior is an approximation (advi)"
    doc = build_report(bad, data, audit=result)
    block = findings_block(doc.to_markdown())
    body = block.split("\n", 2)[2]
    assert body.startswith(opening), body[:300]
    findings, todo = block.split("### What to do")
    bullets = [line for line in findings.splitlines() if line.startswith("- ")]
    assert bullets and all(line.startswith("- PROVISIONAL (") for line in bullets), bullets
    assert todo.split("\n- ", 1)[1].startswith("Act on none of this until a fit passes its convergence checks"), todo
    page = doc.to_html()
    section = page[page.index(f">{HEADING}</h2>") :]
    assert section.split("</h2>", 1)[1].lstrip().startswith(f'<p class="verdict-bad">{opening}')
    verdict = "Verdict: approximate, MCMC checks do not apply" if case == "approximate" else "Verdict: FAIL"
    assert verdict in doc.to_markdown()
    assert case == "unconverged" or "Verdict: FAIL" not in doc.to_markdown()


@pytest.mark.usefixtures("text_only")
def test_no_scientific_notation_for_shares_or_probabilities(
    with_gap: tuple[Fit, ResponseData, AuditResult], tmp_path: Path
) -> None:
    fit, data, result = with_gap
    report(fit, tmp_path / "rep", data=data, audit=result)
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert not SCIENTIFIC.findall(md), SCIENTIFIC.findall(md)[:10]
    # a share small enough that the old formatting wrote 1.31e-04 prints as a percentage in the tables
    tiny = result.benchmarks.copy()
    tiny["mass_above_mean"] = 1.31e-4
    tiny["unrepresented_mean"] = 0.0131
    small = dataclasses.replace(result, benchmarks=tiny)
    md = build_report(fit, data, audit=small).to_markdown()
    assert "1.31e-04" not in md and "0.013%" in md and "1.3%" in md
    lines = md.splitlines()
    start = lines.index("*Per benchmark*")
    header = [c.strip() for c in lines[start + 2].strip("|").split("|")]
    cells = [c.strip() for c in lines[start + 4].strip("|").split("|")]
    row = dict(zip(header, cells, strict=True))
    assert row["mass_above_mean"] == "0.013%" and row["unrepresented_mean"] == "1.3%", row
    assert row["saturated_share"].endswith("%"), row
    # the target's weights, as percentages
    target = lines[lines.index("*Target: the weight of each difficulty bin*") + 4]
    assert target.rstrip().endswith(f"| {format_share(result.target.weights[0])} |"), target


def test_report_reads_the_data_the_fit_records_and_refuses_other_data(tmp_path: Path) -> None:
    import irtbayes as irt
    from irtbayes.core.errors import FitError
    from irtbayes.data.registry import load_dataset

    data = load_dataset("lsat7")
    fit, _ = planted(gap=False)
    with pytest.raises(FitError, match="not the data the fit was made from"):
        irt.report(fit, tmp_path / "other", data=data)
    assert not (tmp_path / "other").exists()
    with pytest.raises(FitError, match="give it as data="):
        irt.report(fit, tmp_path / "none")  # a simulation's source is no file and no registered data set
    assert irt.report is report
    # a fit of a registered data set finds its data by the source it records
    rng = np.random.default_rng(0)
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), rng.standard_normal((2, 50, data.n_subjects))),
            "difficulty": (("chain", "draw", "item"), rng.standard_normal((2, 50, data.n_items))),
            "discrimination": (("chain", "draw", "item"), np.exp(0.1 * rng.standard_normal((2, 50, data.n_items)))),
        }
    )
    html = irt.report(Fit.from_posterior(posterior, data), tmp_path / "lsat7")
    assert "lsat7" in html.read_text(encoding="utf-8") and (tmp_path / "lsat7" / "report.md").is_file()


def test_outside_alike_and_where_to_add_are_read_from_the_tables(
    without_gap: tuple[Fit, ResponseData, AuditResult],
) -> None:
    fit, _, result = without_gap
    everything = result.benchmarks.loc[result.benchmarks["scope_kind"] == "all"].iloc[0]
    # items moved above the range, and two items everyone answered alike, change what is said
    bench = result.benchmarks.copy()
    everyone = bench["scope_kind"] == "all"
    bench.loc[everyone, ["mass_above_mean", "mass_above_ci_low", "mass_above_ci_high"]] = [0.3, 0.25, 0.35]
    bench.loc[everyone, ["mass_below_mean", "mass_below_ci_low", "mass_below_ci_high"]] = [0.0, 0.0, 0.0]
    items = result.items.copy()
    items.loc[items.index[:2], ["answered_alike", "accuracy"]] = [True, 1.0]
    items.loc[items.index[2], ["answered_alike", "accuracy"]] = [True, 0.0]
    items.loc[items.index[3:], "answered_alike"] = False
    found = audit_findings(fit, dataclasses.replace(result, benchmarks=bench, items=items), fit_folder="models/f")
    (outside,) = [s for s in found.found if "of the items lie outside the systems' ability range" in s]
    assert outside.startswith("30% of the items lie outside") and "30% [25%, 35%] above it" in outside, outside
    assert "below it" not in outside, outside
    (alike,) = [s for s in found.found if "answered alike by every system" in s]
    assert alike.startswith(f"3 items ({format_share(3 / len(items))})") and "(2 solved by all, 1 by none)" in alike
    assert found.found.index(outside) < found.found.index(alike)  # the larger share first
    assert any(s.startswith("Leave out or replace the 3 items") for s in found.todo), found.todo
    assert any("the 30% of items outside it" in s for s in found.todo), found.todo
    # where to add: the bin thinnest against the target, with the command that aims there
    bins = result.bins.loc[result.bins["scope_kind"] == "all"]
    ratio = bins["share_in_range_mean"] / bins["target_weight"]
    (where,) = [s for s in found.todo if "count most" in s or "not needed for coverage" in s]
    if ratio.min() < 0.8:
        k = int(bins["bin"].iloc[int(ratio.to_numpy().argmin())])
        assert f"thinnest at difficulty {result.target.bin_label(k)}" in where, where
        assert where.endswith(
            f"`irtbayes benchfill propose --fit models/f --candidates items.csv --out benchfill --aim-bin {k}`."
        ), where
    else:
        assert "new items are not needed for coverage" in where, where
    assert everything["mass_above_mean"] < 0.3  # the planted bank itself is inside the range
    terms = [term for term, _ in found.glossary]
    assert {"DDM", "Maximum Gap", "Credible gap", "Re-weighted accuracy", "Answered alike"} <= set(terms)
    assert "\nGlossary\n" in found.to_text() and found.to_text().startswith("What this audit found")


def test_the_items_table_says_which_items_every_system_answered_alike() -> None:
    data, truth = simulate_responses(30, 12, missing=0.0, seed=3)
    frame = data.responses.copy()
    frame["subject"] = frame["subject"].astype(str)
    frame["item"] = frame["item"].astype(str)
    items = list(dict.fromkeys(frame["item"]))
    frame.loc[frame["item"] == items[0], "response"] = 1.0
    frame.loc[frame["item"] == items[1], "response"] = 0.0
    changed = ResponseData.from_long(frame, source="alike")
    fit = Fit.from_posterior(posterior_near_truth(changed, truth, chains=2, draws=50, seed=1), changed)
    table = audit(fit, changed, bins=3, max_draws=50, ensemble="draws").items.set_index("item")
    assert table["answered_alike"].tolist() == [i in items[:2] for i in table.index]
    expected = frame.groupby("item")["response"].mean()
    np.testing.assert_allclose(table["accuracy"], expected.loc[table.index], rtol=0, atol=1e-12)
