"""The HELM loader on genuine ``helm-run`` / ``helm-summarize`` output (tests/fixtures/helm)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from irtbayes.cli.main import main
from irtbayes.core.errors import DataError
from irtbayes.data.io.helm import is_helm_folder, load_helm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "helm"

SUITE = FIXTURES / "benchmark_output" / "runs" / "fixture-v1"
MCQA_B = "simple_mcqa:model=fixture-org_tiny-parity-b"
CLASS_B = "simple_classification:model=fixture-org_tiny-parity-b"
#: Per-instance exact_match in instance order, as documented in the fixture README.
README_EXACT_MATCH = {
    ("simple_mcqa", "simple/model1"): "0000000000",
    ("simple_mcqa", "fixture-org/tiny-parity-a"): "0000000000",
    ("simple_mcqa", "fixture-org/tiny-parity-b"): "0010001110",
    ("simple_classification", "simple/model1"): "0000000000",
    ("simple_classification", "fixture-org/tiny-parity-a"): "0000000000",
    ("simple_classification", "fixture-org/tiny-parity-b"): "1101110001",
}


# ---------------------------------------------------------------------- helpers reading the raw files
def run_folders(suite: Path = SUITE) -> list[Path]:
    return sorted(p for p in suite.iterdir() if (p / "run_spec.json").is_file())


def read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def raw_scores(folder: Path, metric: str = "exact_match", split: str = "test") -> dict[str, float]:
    """instance_id -> mean of the named stat, straight from per_instance_stats.json."""
    out = {}
    for entry in read(folder / "per_instance_stats.json"):
        for stat in entry["stats"]:
            if stat["name"]["name"] == metric and stat["name"].get("split") == split:
                out[entry["instance_id"]] = stat["mean"]
    return out


def copy_tree(source: Path, target: Path) -> Path:
    """Copy a fixture folder with writable files (the fixtures themselves are read-only)."""
    for file in sorted(source.rglob("*")):
        if file.is_file():
            out = target / file.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(file.read_bytes())
    return target


def value_of(data, subject: str, item: str, condition: str | None = None) -> float:
    frame = data.long_frame()
    mask = (frame["subject"] == subject) & (frame["item"] == item)
    if condition is not None:
        mask &= frame["condition"] == condition
    picked = frame.loc[mask, "response"]
    assert len(picked) == 1, f"{subject} {item} {condition}: {len(picked)} responses"
    return float(picked.iloc[0])


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    return copy_tree(SUITE, tmp_path / "benchmark_output" / "runs" / "fixture-v1")


# ---------------------------------------------------------------------- detection and loading
def test_detects_helm_folders_at_every_level(tmp_path: Path) -> None:
    for folder in (FIXTURES, FIXTURES / "benchmark_output", SUITE.parent, SUITE, SUITE / MCQA_B):
        assert is_helm_folder(folder), folder
    assert not is_helm_folder(FIXTURES / "inputs")
    assert not is_helm_folder(tmp_path)
    assert not is_helm_folder(SUITE / MCQA_B / "per_instance_stats.json")


@pytest.mark.parametrize("where", [FIXTURES, SUITE], ids=["top", "suite"])
def test_counts_and_values_match_per_instance_stats(where: Path) -> None:
    data = load_helm(where)
    expected = {}
    for folder in run_folders():
        spec = read(folder / "run_spec.json")
        for instance_id, value in raw_scores(folder).items():
            expected[(spec["adapter_spec"]["model"], f"{spec['name'].split(':')[0]}/{instance_id}")] = value
    assert data.n_responses == len(expected) == 60, (data.n_responses, len(expected))
    assert sorted(data.subject_ids) == ["fixture-org/tiny-parity-a", "fixture-org/tiny-parity-b", "simple/model1"]
    assert data.n_items == 20
    assert data.items.groupby("benchmark").size().to_dict() == {"simple_classification": 10, "simple_mcqa": 10}
    for (subject, item), value in expected.items():
        assert value_of(data, subject, item) == value, (subject, item)
    assert "condition" not in data.responses.columns
    assert data.is_binary


@pytest.mark.parametrize(("scenario", "subject"), list(README_EXACT_MATCH), ids=lambda x: x)
def test_per_instance_correctness_matches_the_readme(scenario: str, subject: str) -> None:
    data = load_helm(SUITE)
    folder = SUITE / f"{scenario}:model={subject.replace('/', '_')}"
    order = [entry["instance_id"] for entry in read(folder / "per_instance_stats.json")]
    assert order == ["id60", "id38", "id41", "id74", "id56", "id80", "id85", "id87", "id59", "id68"]
    loaded = "".join(str(int(value_of(data, subject, f"{scenario}/{i}"))) for i in order)
    assert loaded == README_EXACT_MATCH[(scenario, subject)], f"{scenario} {subject}: {loaded}"


def test_item_metadata_comes_from_the_instances() -> None:
    data = load_helm(SUITE)
    mcqa = data.items.loc["simple_mcqa/id60"]
    assert mcqa["benchmark"] == "simple_mcqa"
    assert mcqa["text"] == "Is 70 even or odd?"
    assert mcqa["answer"] == "Even"
    assert mcqa["n_options"] == 2
    assert mcqa["instance_id"] == "id60" and mcqa["split"] == "test"
    classification = data.items.loc["simple_classification/id60"]
    assert classification["text"] == "70"
    assert classification["answer"] == "Even"
    assert classification.isna()["n_options"], "a generation adapter has no fixed options"


def test_text_falls_back_to_scenario_state(suite_copy: Path) -> None:
    for instances in suite_copy.glob("*/instances.json"):
        instances.unlink()
    data = load_helm(suite_copy)
    reference = load_helm(SUITE)
    assert data.items["text"].tolist() == reference.items["text"].tolist()
    assert data.items["answer"].tolist() == reference.items["answer"].tolist()


def test_other_metric_and_split() -> None:
    data = load_helm(SUITE, metric="quasi_exact_match", split=None)
    for folder in run_folders():
        model = read(folder / "run_spec.json")["adapter_spec"]["model"]
        for instance_id, value in raw_scores(folder, "quasi_exact_match").items():
            assert value_of(data, model, f"{folder.name.split(':')[0]}/{instance_id}") == value
    per_benchmark = load_helm(SUITE, metric={"simple_mcqa": "prefix_exact_match"})
    mcqa_b = raw_scores(SUITE / MCQA_B, "prefix_exact_match")
    assert [value_of(per_benchmark, "fixture-org/tiny-parity-b", f"simple_mcqa/{i}") for i in mcqa_b] == list(
        mcqa_b.values()
    )


def test_unknown_metric_split_and_suite() -> None:
    with pytest.raises(DataError, match=r"per_instance_stats\.json: no per-instance stat named 'f1'.*'exact_match'"):
        load_helm(SUITE, metric="f1")
    with pytest.raises(DataError, match=r"instance 'id\d+', stat 'num_prompt_tokens' has mean \d+\.0, which is not"):
        load_helm(SUITE, metric="num_prompt_tokens")
    with pytest.raises(DataError, match=r"no per-instance stats on split 'valid'; the splits are \['test'\]"):
        load_helm(SUITE, split="valid")
    with pytest.raises(DataError, match=r"no suite 'v2'; the suites are \['fixture-v1'\]"):
        load_helm(FIXTURES, suite="v2")


def rename_model(run: Path, model: str) -> Path:
    """Give a copied run folder another model (``adapter_spec`` and the folder name, as helm-run names it)."""
    spec = read(run / "run_spec.json")
    spec["adapter_spec"]["model"] = spec["adapter_spec"]["model_deployment"] = model
    spec["name"] = spec["name"].split(":")[0] + ":model=" + model.replace("/", "_")
    (run / "run_spec.json").write_text(json.dumps(spec), encoding="utf-8")
    return run.rename(run.parent / spec["name"])


def perturbed(entries: list[dict], flip: bool = True) -> list[dict]:
    """Typo-perturbed copies of per-instance stats (exact_match flipped when ``flip``), as data augmentation writes."""
    typos = {"name": "typos", "robustness": True, "fairness": False, "prob": 0.1}
    out = []
    for entry in entries:
        copy = json.loads(json.dumps(entry))
        copy["perturbation"] = typos
        for stat in copy["stats"]:
            stat["name"]["perturbation"] = typos
            if flip and stat["name"]["name"] == "exact_match":
                stat["mean"] = stat["min"] = stat["max"] = stat["sum"] = 1.0 - stat["mean"]
        out.append(copy)
    return out


def test_a_runs_tree_of_several_suites_is_one_data_set(suite_copy: Path) -> None:
    runs = suite_copy.parent
    renamed = rename_model(copy_tree(SUITE / MCQA_B, runs / "fixture-v2" / MCQA_B), "fixture-org/tiny-parity-c")
    assert renamed.name == "simple_mcqa:model=fixture-org_tiny-parity-c"
    data = load_helm(runs.parent.parent)  # the folder holding benchmark_output
    assert sorted(data.subject_ids) == [
        "fixture-org/tiny-parity-a",
        "fixture-org/tiny-parity-b",
        "fixture-org/tiny-parity-c",
        "simple/model1",
    ]
    assert (data.n_responses, data.n_items) == (70, 20), "one scenario in two suites gives the same items"
    for instance_id, value in raw_scores(SUITE / MCQA_B).items():
        assert value_of(data, "fixture-org/tiny-parity-c", f"simple_mcqa/{instance_id}") == value
    only_v2 = load_helm(runs, suite="fixture-v2")
    assert list(only_v2.subject_ids) == ["fixture-org/tiny-parity-c"] and only_v2.n_responses == 10
    assert load_helm(runs, suite=["fixture-v1", "fixture-v2"]).checksum() == data.checksum()
    assert load_helm(runs, suite="fixture-v1").checksum() == load_helm(SUITE).checksum()


def test_the_same_score_in_two_suites_names_both_runs(suite_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = suite_copy.parent
    copy_tree(suite_copy / MCQA_B, runs / "fixture-v2" / MCQA_B)
    both = (
        rf"fixture-v2/{re.escape(MCQA_B)}: subject 'fixture-org/tiny-parity-b' already has a score for item "
        rf"'simple_mcqa/id\d+' from \S*fixture-v1/{re.escape(MCQA_B)}; in suites 'fixture-v1' and 'fixture-v2'; "
        r"choose suites with suite= \(--suite\)"
    )
    with pytest.raises(DataError, match=both):
        load_helm(runs)
    v2 = load_helm(runs, suite="fixture-v2")
    for instance_id, value in raw_scores(SUITE / MCQA_B).items():
        assert value_of(v2, "fixture-org/tiny-parity-b", f"simple_mcqa/{instance_id}") == value
    with pytest.raises(DataError, match=r"no suite 'v3'; the suites are \['fixture-v1', 'fixture-v2'\]"):
        load_helm(runs, suite=["fixture-v1", "v3"])
    assert main(["data", "summary", str(runs)]) == 2
    assert "choose suites with suite= (--suite)" in capsys.readouterr().err
    assert main(["data", "summary", str(runs), "--suite", "fixture-v1,fixture-v2", "--json"]) == 2
    capsys.readouterr()
    assert main(["data", "summary", str(runs), "--suite", "fixture-v1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_responses"] == 60


def test_perturbed_copies_in_another_suite_stay_a_separate_condition(suite_copy: Path) -> None:
    runs = suite_copy.parent
    robustness = copy_tree(SUITE / MCQA_B, runs / "fixture-robustness" / MCQA_B)
    path = robustness / "per_instance_stats.json"
    path.write_text(json.dumps(perturbed(read(path))), encoding="utf-8")
    data = load_helm(runs)
    assert list(data.conditions) == ["original", "typos(prob=0.1)"]
    assert data.n_responses == 60 + 10 and data.n_items == 20
    for instance_id, value in raw_scores(SUITE / MCQA_B).items():
        item = f"simple_mcqa/{instance_id}"
        assert value_of(data, "fixture-org/tiny-parity-b", item, "original") == value
        assert value_of(data, "fixture-org/tiny-parity-b", item, "typos(prob=0.1)") == 1.0 - value
    original = data.subset(conditions=["original"])
    assert original.n_responses == 60
    with pytest.raises(DataError, match=r"several conditions give more than one response"):
        data.to_matrix()


# ---------------------------------------------------------------------- conditions and trials
def test_perturbations_become_conditions(suite_copy: Path) -> None:
    path = suite_copy / MCQA_B / "per_instance_stats.json"
    entries = read(path)
    typos = {"name": "typos", "robustness": True, "fairness": False, "prob": 0.1}
    worst = json.loads(json.dumps(entries[0]))  # a worst-case stat is no instance score
    worst["stats"] = [
        {**s, "name": {**s["name"], "perturbation": {**typos, "computed_on": "worst"}}} for s in worst["stats"]
    ]
    path.write_text(json.dumps(entries + perturbed(entries) + [worst]), encoding="utf-8")
    data = load_helm(suite_copy)
    assert list(data.conditions) == ["original", "typos(prob=0.1)"]
    assert data.n_responses == 60 + 10
    raw = raw_scores(SUITE / MCQA_B)
    for instance_id, value in raw.items():
        item = f"simple_mcqa/{instance_id}"
        assert value_of(data, "fixture-org/tiny-parity-b", item, "original") == value
        assert value_of(data, "fixture-org/tiny-parity-b", item, "typos(prob=0.1)") == 1.0 - value


def test_train_trials_are_averaged(suite_copy: Path) -> None:
    path = suite_copy / CLASS_B / "per_instance_stats.json"
    entries = read(path)
    second = json.loads(json.dumps(entries))
    for entry in second:
        entry["train_trial_index"] = 1
        for stat in entry["stats"]:
            if stat["name"]["name"] == "exact_match":
                stat["mean"] = 0.0
    path.write_text(json.dumps(entries + second), encoding="utf-8")
    data = load_helm(suite_copy)
    for instance_id, value in raw_scores(SUITE / CLASS_B).items():
        got = value_of(data, "fixture-org/tiny-parity-b", f"simple_classification/{instance_id}")
        assert got == value / 2, (instance_id, got, value)
    averaged = rf"{CLASS_B}/per_instance_stats\.json: instance 'id\d+', stat 'exact_match' averages 0\.5 over 2 "
    with pytest.raises(DataError, match=averaged + "train trials, but binary"):
        load_helm(suite_copy, scoring="binary")


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("missing", ["per_instance_stats.json", "run_spec.json"])
def test_run_folder_missing_a_file(suite_copy: Path, missing: str) -> None:
    (suite_copy / MCQA_B / missing).unlink()
    with pytest.raises(DataError, match=rf"tiny-parity-b: HELM run folder without {missing}"):
        load_helm(suite_copy)


def test_folder_without_runs(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no HELM run folders"):
        load_helm(tmp_path)


def test_broken_json_names_the_file(suite_copy: Path) -> None:
    path = suite_copy / CLASS_B / "per_instance_stats.json"
    path.write_text(path.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    with pytest.raises(DataError, match=rf"{CLASS_B}/per_instance_stats\.json: not valid JSON"):
        load_helm(suite_copy)
    spec = suite_copy / MCQA_B / "run_spec.json"
    spec.write_text("{", encoding="utf-8")
    with pytest.raises(DataError, match=r"run_spec\.json: not valid JSON"):
        load_helm(suite_copy / MCQA_B)


def test_stat_without_mean(suite_copy: Path) -> None:
    path = suite_copy / MCQA_B / "per_instance_stats.json"
    entries = read(path)
    stat = next(s for s in entries[3]["stats"] if s["name"]["name"] == "exact_match")
    del stat["mean"]
    path.write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(DataError, match=r"instance 'id74', stat 'exact_match' has no 'mean'"):
        load_helm(suite_copy)
    stat["count"] = 0  # HELM writes count-0 stats without a mean: no value for that instance
    path.write_text(json.dumps(entries), encoding="utf-8")
    data = load_helm(suite_copy)
    assert data.n_responses == 59
    assert np.isnan(data.to_dataset().response.sel(subject="fixture-org/tiny-parity-b", item="simple_mcqa/id74"))


def test_run_spec_without_model(suite_copy: Path) -> None:
    path = suite_copy / MCQA_B / "run_spec.json"
    spec = read(path)
    del spec["adapter_spec"]["model"], spec["adapter_spec"]["model_deployment"]
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(DataError, match=r"run_spec\.json: 'adapter_spec' has no 'model'"):
        load_helm(suite_copy)


def test_two_runs_scoring_the_same_item_for_one_subject(suite_copy: Path) -> None:
    shutil.copytree(suite_copy / MCQA_B, suite_copy / "simple_mcqa:model=fixture-org_tiny-parity-b,copy=1")
    with pytest.raises(
        DataError,
        match=r"subject 'fixture-org/tiny-parity-b' already has a score for item "
        r"'simple_mcqa/id\d+'",
    ):
        load_helm(suite_copy)


def test_one_item_id_with_different_inputs(suite_copy: Path) -> None:
    path = suite_copy / MCQA_B / "instances.json"
    instances = read(path)
    instances[0]["input"]["text"] = "Is 71 even or odd?"
    path.write_text(json.dumps(instances), encoding="utf-8")
    with pytest.raises(DataError, match=r"item 'simple_mcqa/id60' has input 'Is 71 even or odd\?' here"):
        load_helm(suite_copy)
