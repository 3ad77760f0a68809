"""The notebooks run end to end in fast mode (tiny sizes, ADVI) and write what they promise.

Each notebook is run as a script in a subprocess, in order, with ``IRTBAYES_NB_MODE=fast`` and its outputs in a
temporary folder shared by the five (notebooks 4 and 5 reuse the fits notebook 3 saved). They need the shared
data sets; without them the tests skip, saying so. Notebook 1 only reads data and runs by default; the others fit
models on real data, end to end, and are slow checks (``pytest -m slow``, ``make test-slow``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ORDER = (
    "01_data_tour",
    "02_validation",
    "03_audit",
    "04_measure_mismatch",
    "05_benchfill",
    "06_model_checks",
    "07_robustness",
    "08_report",
    "09_evaluation",
    "10_graded",
    "11_tracking",
    "12_item_flags",
)

needs_data = pytest.mark.skipif(
    not (SHARED_DATA / "INDEX.md").is_file(),
    reason=f"the shared data sets are not at {SHARED_DATA}; the notebooks audit real data and need them",
)


@pytest.fixture(scope="module")
def nb_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebooks")


def run_notebook(name: str, out: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRTBAYES_NB_")}
    env.update(
        IRTBAYES_DATA_DIR=str(SHARED_DATA),
        IRTBAYES_NB_MODE="fast",
        IRTBAYES_NB_OUT=str(out),
        MPLBACKEND="Agg",
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(NOTEBOOKS / f"{name}.py")],
        cwd=NOTEBOOKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    seconds = time.perf_counter() - start
    (out / f"{name}.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    assert proc.returncode == 0, (
        f"{name}.py exited with {proc.returncode} after {seconds:.0f}s\n--- stdout (tail) ---\n{proc.stdout[-3000:]}"
        f"\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    )
    return proc, seconds


def test_notebooks_are_percent_scripts_with_parameters_and_versions() -> None:
    jupytext = pytest.importorskip("jupytext")
    for name in ORDER:
        nb = jupytext.read(NOTEBOOKS / f"{name}.py")
        kinds = [c.cell_type for c in nb.cells]
        assert kinds[0] == "markdown", f"{name}: the first cell is {kinds[0]}, expected the narrative"
        assert kinds.count("markdown") >= 4, f"{name}: only {kinds.count('markdown')} markdown cells"
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), f"{name}: the first code cell is not tagged"
        assert "settings()" in code[0].source, f"{name}: the parameters cell does not read the settings"
        assert "versions()" in code[-1].source, f"{name}: the last cell does not print versions"


@needs_data
def test_01_data_tour(nb_out: Path) -> None:
    proc, _ = run_notebook("01_data_tour", nb_out)
    tour = pd.read_csv(nb_out / "data_tour.csv")
    assert len(tour) >= 25 and tour["domain"].nunique() >= 7, (len(tour), tour["domain"].nunique())
    assert (tour["missing_share"].between(0, 1)).all(), tour["missing_share"].describe()
    assert (nb_out / "figures" / "item_accuracy.png").stat().st_size > 0
    assert "benchmarks in" in proc.stdout


@pytest.mark.slow
@needs_data
def test_02_validation(nb_out: Path) -> None:
    run_notebook("02_validation", nb_out)
    published = pd.read_csv(nb_out / "validation_published.csv")
    # LSAT7 2PL: a and d of 5 items; LSAT6 Rasch: 5 d and the latent variance; published Bayesian Rasch: 5 items
    assert published.groupby("check").size().to_dict() == {
        "LSAT7 2PL vs mirt": 10,
        "LSAT6 Rasch vs mirt": 6,
        "LSAT6 Rasch vs published Bayesian fit": 5,
    }, published.groupby("check").size()
    assert published["posterior_mean"].notna().all()
    recovery = pd.read_csv(nb_out / "validation_recovery.csv")
    assert set(recovery["parameter"]) == {"difficulty", "discrimination", "ability"}
    # even a tiny approximate fit recovers difficulties and abilities far better than chance
    assert (recovery.set_index("parameter").loc[["difficulty", "ability"], "correlation"] > 0.5).all(), recovery


@pytest.mark.slow
@needs_data
def test_03_audit(nb_out: Path) -> None:
    proc, _ = run_notebook("03_audit", nb_out)
    table = pd.read_csv(nb_out / "benchmark_audit.csv", keep_default_na=False)
    for column in (
        "population",
        "benchmark",
        "sub_benchmark",
        "level",
        "domain",
        "converged",
        "approximate",
        "verdict",
    ):
        assert column in table.columns, column
    # counted honestly: distinct benchmarks (a benchmark in two populations once; sub-benchmarks not at all)
    benchmarks = table.loc[table["level"] == "benchmark"]
    assert benchmarks["benchmark"].nunique() >= 25, benchmarks["benchmark"].nunique()
    assert benchmarks.groupby("benchmark")["domain"].first().nunique() >= 7
    assert table["population"].nunique() == 6, table["population"].unique()
    assert not table.duplicated(["population", "benchmark", "sub_benchmark"]).any()
    assert set(benchmarks.groupby("benchmark")["population"].nunique().loc[lambda s: s > 1].index) >= {
        "arc_challenge",
        "hellaswag",
        "winogrande",
    }
    # MMLU-Pro is one benchmark whose 14 categories are sub-benchmarks holding all its items
    mmlu = table.loc[table["benchmark"] == "mmlu_pro"]
    subs = mmlu.loc[mmlu["level"] == "sub-benchmark"]
    assert len(subs) == 14 and (mmlu["level"] == "benchmark").sum() == 1
    assert subs["items"].sum() == mmlu.loc[mmlu["level"] == "benchmark", "items"].item()
    # the leaderboard rows are subsets of larger test sets, and say so
    board = table.loc[table["population"] == "openllm"]
    assert (board["items_benchmark"] > board["items"]).all() and board["item_set"].str.contains("tinyBenchmarks").all()
    # each row's verdict agrees with its flags; fast mode is ADVI, so every row is approximate
    verdicts = table["verdict"].map(
        {"converged": (True, False), "NOT CONVERGED": (False, False), "approximate": (False, True)}
    )
    assert (
        verdicts == list(zip(table["converged"].astype(bool), table["approximate"].astype(bool), strict=True))
    ).all()
    assert (table["verdict"] == "approximate").all()
    for prefix in ("ddm", "max_gap", "max_gap_rel"):
        lo, mean, hi = table[f"{prefix}_ci_low"], table[f"{prefix}_mean"], table[f"{prefix}_ci_high"]
        assert ((lo <= mean + 1e-9) & (mean <= hi + 1e-9)).all(), table[["label", f"{prefix}_ci_low", f"{prefix}_mean"]]
    assert table["ddm_mean"].between(0, 1).all() and table["max_gap_rel_mean"].between(0, 1).all()
    assert (table["gap_lo"] < table["gap_hi"]).all()
    assert table["sampler"].str.len().gt(0).all() and "subsample" in table.columns
    for fig in (
        "forest_ddm.png",
        "forest_max_gap.png",
        "coverage_heatmap.png",
        "difficulty_vs_ability.png",
        "benchmarks_in_two_populations.png",
        "mmlu_pro_coverage.png",
    ):
        assert (nb_out / "figures" / fig).stat().st_size > 0, fig
    assert sorted(p.name for p in (nb_out / "fits").iterdir()) == sorted(
        ["mmlu_pro", "openllm", "nlu", "chembench", "jailbreakbench", "xstest"]
    )
    assert "distinct benchmarks in" in proc.stdout


def test_figures_mark_every_row_that_is_not_converged() -> None:
    """Notebook 3's figures: a row from an approximate or unconverged fit carries its mark in every label."""
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import _figures
    finally:
        sys.path.remove(str(NOTEBOOKS))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from irtbayes.core.plots import domain_palette

    rows = []
    for pop, verdict in (("a", "converged"), ("b", "approximate"), ("c", "NOT CONVERGED")):
        for k, bench in enumerate(("x", "y")):
            rows.append(
                {"population": pop, "benchmark": bench, "sub_benchmark": "", "level": "benchmark", "domain": f"d{k}",
                 "verdict": verdict, "sampler": f"s {verdict}", "subjects_total": 10, "label": f"{pop}:{bench}",
                 "scope_kind": "benchmark", "scope": bench, "ddm_mean": 0.2 + k / 10, "ddm_ci_low": 0.1,
                 "ddm_ci_high": 0.5, "mass_below_mean": 0.1, "mass_above_mean": 0.0, "max_gap_rel_mean": 0.3,
                 "max_gap_rel_ci_low": 0.2, "max_gap_rel_ci_high": 0.4, "items": 5}
            )  # fmt: skip
    results = pd.DataFrame(rows)
    colours, markers = domain_palette(results["domain"])
    fig = _figures.plot_forests(results, "ddm", "DDM", colours, markers)
    labels = {ax.get_title(loc="left").split(":")[0]: [t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes}
    assert labels["a"] == ["x", "y"] and labels["b"] == ["x ≈", "y ≈"] and labels["c"] == ["x †", "y †"], labels
    plt.close(fig)
    bins = pd.DataFrame(
        [
            {"population": r["population"], "scope_kind": "benchmark", "scope": r["scope"], "bin": b,
             "share_mean": 0.3, "p_empty": 0.0}
            for r in rows
            for b in range(3)
        ]
    )  # fmt: skip
    fig = _figures.plot_coverage_with_outside(results, bins, colours)
    shown = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert shown == ["a:x", "a:y", "b:x ≈", "b:y ≈", "c:x †", "c:y †"], shown
    assert fig.axes[0].images[0].get_array().shape == (6, 5)  # below, 3 bins, above
    plt.close(fig)


@pytest.mark.slow
@needs_data
def test_04_measure_mismatch(nb_out: Path) -> None:
    had_fits = (nb_out / "fits" / "mmlu_pro").is_dir()
    proc, _ = run_notebook("04_measure_mismatch", nb_out)
    sens = pd.read_csv(nb_out / "sensitivity_leaderboard.csv")
    assert len(sens) == 12, sens  # 2 populations x 2 targets x 3 bin counts
    assert set(sens["bins"]) == {5, 10, 20} and set(sens["target"]) == {"uniform", "frontier"}
    board = pd.read_csv(nb_out / "leaderboard_mmlu_pro.csv")
    assert len(board) == 29 and board["rank_ci_low_frontier"].le(board["rank_ci_high_frontier"]).all()
    if had_fits:
        assert "reused the saved fit" in proc.stdout, "notebook 4 refitted instead of reusing notebook 3's fits"


@pytest.mark.slow
@needs_data
def test_05_benchfill(nb_out: Path) -> None:
    run_notebook("05_benchfill", nb_out)
    ledger = pd.read_csv(nb_out / "benchfill_ledger.csv")
    # 12 candidates, decided after the fixed-bank calibration (and the full refit, which fast mode skips)
    assert ledger["stage"].value_counts().to_dict() == {"fixed bank": 12}, ledger["stage"].value_counts()
    assert set(ledger["decision"]) <= {"accepted", "rejected"}
    few = ledger.loc[ledger["kind"] == "inside, few answers"]
    assert (few["reason"] == "not enough responses").all(), few[["stage", "reason"]]
    before_after = pd.read_csv(nb_out / "benchfill_before_after.csv", index_col=0)
    assert list(before_after.columns) == ["before", "after"]
    # the after column holds the accepted candidates: as many more items as the ledger accepted
    n_accepted = int((ledger["decision"] == "accepted").sum())
    counts = before_after.loc["items"].astype(int)
    assert counts["after"] == counts["before"] + n_accepted, (counts.to_dict(), n_accepted)
    assert int(before_after.loc["accepted candidates added", "after"]) == n_accepted
    assert "fixed-bank candidates" in before_after.loc["posterior", "after"]
    assert (nb_out / "benchfill" / "ledger.jsonl").is_file()


@pytest.mark.slow
@needs_data
def test_06_model_checks(nb_out: Path) -> None:
    run_notebook("06_model_checks", nb_out)
    checks = pd.read_csv(nb_out / "model_checks.csv")
    assert sorted(checks["population"]) == sorted(
        ["mmlu_pro", "openllm", "nlu", "chembench", "jailbreakbench", "xstest"]
    )
    assert checks["items_misfit_share"].between(0, 1).all() and checks["verdict"].eq("approximate").all()
    loo = pd.read_csv(nb_out / "loo_comparison.csv")
    assert set(loo["model"]) == {"1PL", "2PL", "3PL"} and np.isfinite(loo["elpd"]).all()
    assert (loo["elpd"] != loo["elpd"].round(2)).all(), "compare_fits rounded the elpd"
    info = pd.read_csv(nb_out / "information_saturation.csv", keep_default_na=False)
    lo, mean, hi = info["saturation_ci_low"], info["saturation_mean"], info["saturation_ci_high"]
    assert ((lo <= mean + 1e-9) & (mean <= hi + 1e-9) & lo.between(0, 1) & hi.between(0, 1)).all()
    for population in checks["population"]:
        assert (nb_out / "figures" / f"information_{population}.png").stat().st_size > 0


@pytest.mark.slow
@needs_data
def test_07_robustness(nb_out: Path) -> None:
    run_notebook("07_robustness", nb_out)
    refits = pd.read_csv(nb_out / "robustness_population.csv")
    assert (refits["kind"] == "reference").sum() == 1 and (refits["kind"] != "reference").sum() >= 3
    assert refits["verdict"].isin(["converged", "NOT CONVERGED", "approximate"]).all()
    stability = pd.read_csv(nb_out / "robustness_stability.csv")
    assert stability["share_agree"].between(0, 1).all() and stability["label"].str.len().gt(0).all()
    revision = pd.read_csv(nb_out / "robustness_revision.csv")
    assert list(revision["benchmark"]) == ["mutual", "mutual_plus"], revision["benchmark"]
    conditions = pd.read_csv(nb_out / "robustness_conditions.csv")
    assert {"verdict", "ci_low", "ci_high"} <= set(conditions.columns)
    assert (conditions["ci_low"] <= conditions["ci_high"]).all()


@pytest.mark.slow
@needs_data
def test_08_report(nb_out: Path) -> None:
    run_notebook("08_report", nb_out)
    report = (nb_out / "REPORT.md").read_text()
    table = pd.read_csv(nb_out / "benchmark_audit.csv", keep_default_na=False)
    n_distinct = table.loc[table["level"] == "benchmark", "benchmark"].nunique()
    assert f"**Count.** {n_distinct} distinct benchmarks" in report
    # every DDM quoted comes with its interval, and approximate rows are marked where they are quoted
    top = table.loc[table["level"] == "benchmark"].sort_values("ddm_mean", ascending=False).iloc[0]
    assert f"{top['ddm_mean']:.2f} [{top['ddm_ci_low']:.2f}, {top['ddm_ci_high']:.2f}]" in report
    assert f"{top['label']} ({top['domain']}) (approximate tier)" in report
    for section in (
        "## Data and calibration",
        "## Measure mismatch",
        "## Coverage gaps",
        "## BenchFill",
        "What differs",
    ):
        assert section in report, section


def test_notebook_pages_share_one_copy_of_their_head_styles(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "run_notebooks", Path(__file__).parents[1] / "scripts/run_notebooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = "<html><head><style>a { color: red }</style></head><body><style>.out {}</style></body></html>"
    first, second = module.shared_styles(page, tmp_path), module.shared_styles(page, tmp_path)
    (css,) = tmp_path.glob("styles-*.css")  # one file for both pages
    assert css.read_text() == "a { color: red }"
    assert (
        first
        == second
        == (f'<html><head><link rel="stylesheet" href="{css.name}"></head><body><style>.out {{}}</style></body></html>')
    )


@pytest.mark.slow  # about 80 s in fast mode alone (2 cores); the evaluation verbs have their own tests in tests/evaluating
def test_09_evaluation(nb_out: Path) -> None:
    """Notebook 9 needs no external data: a simulated leaderboard, and in fast mode a tiny study of its own."""
    proc, _ = run_notebook("09_evaluation", nb_out)
    study = pd.read_csv(nb_out / "evaluation_study_fast.csv")
    assert set(study["method"]) == {
        "posterior",
        "random+posterior",
        "random+mean",
        "anchors+pirt",
        "adaptive",
        "adaptive/2",
    }
    scored = study[study["method"] != "anchors+pirt"]
    assert scored["coverage"].between(0, 1).all() and scored["width"].gt(0).all(), scored
    assert (nb_out / "figures" / "evaluation_adaptive_trace.png").stat().st_size > 0
    assert (nb_out / "figures" / "evaluation_predicted_accuracy.png").stat().st_size > 0
    assert "Adaptive test of" in proc.stdout and "posterior MAE" in proc.stdout


@pytest.mark.slow
@needs_data
def test_10_graded(nb_out: Path) -> None:
    """Notebook 10: Science beside mirt's graded estimates, GRM vs GPCM by LOO, XSTest's three labels as categories."""
    proc, _ = run_notebook("10_graded", nb_out)
    science = pd.read_csv(nb_out / "graded_science_vs_mirt.csv")
    assert len(science) == 16 and set(science["parameter"]) == {"a1", "d1", "d2", "d3"}
    # short chains in fast mode: nearly all of mirt's estimates inside (the full-mode check is a slow unit test)
    assert science["inside"].sum() >= 14, science
    loo = pd.read_csv(nb_out / "graded_science_loo.csv", index_col=0)
    assert set(loo.index) == {"grm", "gpcm"} and loo["elpd"].lt(0).all()
    prompts = pd.read_csv(nb_out / "graded_xstest_prompts.csv")
    assert len(prompts) == 450 and prompts["verdict"].isin(["converged", "NOT CONVERGED"]).all()
    # unsafe prompts draw refusals more readily than safe ones: lower locations on the refusal scale
    means = prompts.groupby("benchmark")["difficulty_mean"].mean()
    assert means["unsafe prompts"] < means["safe prompts"], means
    setups = pd.read_csv(nb_out / "graded_xstest_setups.csv")
    assert len(setups) == 5 and setups["ability_mean"].is_monotonic_increasing
    for fig in ("graded_science_vs_mirt.png", "graded_xstest_locations.png"):
        assert (nb_out / "figures" / fig).stat().st_size > 0, fig
    assert "published estimates lie inside" in proc.stdout


@pytest.mark.slow
def test_11_tracking(nb_out: Path) -> None:
    """Runs on the embedded MMLU-Pro (no shared data needed): the planted changes and the Llama line, written."""
    proc, _ = run_notebook("11_tracking", nb_out)
    planted = pd.read_csv(nb_out / "tracking_planted" / "changes.csv", keep_default_na=False)
    whole = planted[(planted["scope"] == "all") & (planted["region"] == "whole range")].set_index("from")
    assert bool(whole.loc["c0", "credible"]) and not planted[planted["from"] == "c2"]["credible"].astype(bool).any()
    llama = pd.read_csv(nb_out / "tracking_llama8b" / "abilities.csv")
    assert llama["checkpoint"].tolist()[0] == "Llama-2-7b-hf" and llama["ability_mean"].is_monotonic_increasing
    assert "Llama-2-7b-hf -> Meta-Llama-3-8B" in proc.stdout


@pytest.mark.slow
def test_12_item_flags(nb_out: Path) -> None:
    """Runs on the embedded MMLU-Pro (no shared data needed): the planted faults flagged as their kind, sound items
    left alone, MMLU-Pro's flags written and the audit without them."""
    proc, _ = run_notebook("12_item_flags", nb_out)
    planted = pd.read_csv(nb_out / "item_flags_planted" / "item_flags.csv", keep_default_na=False)
    assert (planted["flag"] == "reversed").sum() >= 6 and (planted["flag"] == "dif").sum() >= 6
    assert "sound items flagged: 0 of" in proc.stdout
    mmlu = pd.read_csv(nb_out / "item_flags_mmlu_pro" / "item_flags.csv", keep_default_na=False)
    assert len(mmlu) > 2000 and (mmlu["flag"] == "reversed").any()
    assert "are left out of every measure" in proc.stdout or "is left out of every measure" in proc.stdout
