"""Exports: an lm-evaluation-harness task (mirroring the fixture's genuine task YAMLs) and a CSV template."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from irtbayes.benchfill.candidates import Candidate, items_table
from irtbayes.benchfill.export import export_csv_template, export_lm_eval
from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.responses import ResponseData

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval" / "task_definitions"
needs_fixtures = pytest.mark.skipif(not TASKS.is_dir(), reason=f"lm-eval task fixtures not found at {TASKS}")

MC = [
    Candidate("bf-aaaaaaaaaa", "What is the capital of Peru?", "Lima", choices=("Quito", "Lima", "Bogota", "Caracas")),
    Candidate(
        "bf-bbbbbbbbbb", 'Which word means "happy"? {{not a template}}', "glad", choices=("sad", "glad", "mad", "bad")
    ),
]
GEN = [
    Candidate("bf-cccccccccc", "What is 13 * 17?", "221"),
    Candidate("bf-dddddddddd", "Spell 'lol' backwards.", "lol"),
]


def keys(node, prefix=""):
    """Dotted key paths of a YAML document (list items merged)."""
    out = set()
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(prefix + key)
            out |= keys(value, prefix + key + ".")
    elif isinstance(node, list):
        for value in node:
            out |= keys(value, prefix)
    return out


def test_multiple_choice_task_round_trips(tmp_path):
    export = export_lm_eval(MC, tmp_path / "task")
    config = yaml.safe_load(export.yaml_path.read_text())
    assert config["task"] == "irtbayes_benchfill" and config["output_type"] == "multiple_choice"
    assert config["dataset_path"] == "json"
    data_file = Path(config["dataset_kwargs"]["data_files"]["test"])
    assert data_file == export.data_path.resolve() and data_file.is_file()
    assert config["doc_to_text"] == "Question: {{question}}\nAnswer:"
    assert config["doc_to_choice"] == "{{choices}}" and config["doc_to_target"] == "answer"
    assert [m["metric"] for m in config["metric_list"]] == ["acc", "acc_norm"]
    docs = [json.loads(line) for line in export.data_path.read_text().splitlines()]
    assert docs[0] == {
        "id": "bf-aaaaaaaaaa",
        "candidate_id": "bf-aaaaaaaaaa",
        "question": MC[0].text,
        "choices": ["Quito", "Lima", "Bogota", "Caracas"],
        "answer": 1,
    }
    assert docs[1]["question"] == MC[1].text
    assert export.doc_ids == {"bf-aaaaaaaaaa": 0, "bf-bbbbbbbbbb": 1}
    # a --log_samples line carries the doc verbatim and its row as doc_id: both lead back to the candidate
    for doc_id, doc in enumerate(docs):
        sample = json.loads(json.dumps({"doc_id": doc_id, "doc": doc, "target": str(doc["answer"])}))
        assert sample["doc"]["candidate_id"] == MC[doc_id].candidate_id
        assert export.doc_ids[sample["doc"]["id"]] == sample["doc_id"]
    assert not list(export.yaml_path.parent.glob(".*.tmp")), "a temporary file was left behind"


def test_generation_task_round_trips(tmp_path):
    export = export_lm_eval(
        GEN, tmp_path, task_name="bf_gen.v2", output_type="generate_until", data_file="tasks/bf_gen.v2.jsonl"
    )
    assert export.yaml_path.name == "bf_gen.v2.yaml" and export.data_path.name == "bf_gen.v2.jsonl"
    config = yaml.safe_load(export.yaml_path.read_text())
    assert config["dataset_kwargs"]["data_files"]["test"] == "tasks/bf_gen.v2.jsonl"
    assert config["output_type"] == "generate_until" and config["num_fewshot"] == 0
    assert config["doc_to_target"] == "{{answer}}"
    (metric,) = config["metric_list"]
    assert metric["metric"] == "exact_match" and metric["ignore_case"] is True
    assert metric["regexes_to_ignore"] == [r"^\s+", r"\s+$", r"\.$"]
    assert config["generation_kwargs"]["until"] == ["Question:", "\n\n"]
    docs = [json.loads(line) for line in export.data_path.read_text().splitlines()]
    assert docs == [
        {"id": c.candidate_id, "candidate_id": c.candidate_id, "question": c.text, "answer": c.answer} for c in GEN
    ]


@needs_fixtures
@pytest.mark.parametrize(
    ("fixture", "output_type", "candidates"), [("fx_mc", "multiple_choice", MC), ("fx_gen", "generate_until", GEN)]
)
def test_task_mirrors_the_genuine_lm_eval_yaml(tmp_path, fixture, output_type, candidates):
    genuine = yaml.safe_load((TASKS / f"{fixture}.yaml").read_text())
    ours = yaml.safe_load(export_lm_eval(candidates, tmp_path, output_type=output_type).yaml_path.read_text())
    # the export is 0-shot with the default filter: no train split, few-shot settings or filter pipelines
    few_shot_and_filters = {"training_split", "fewshot_split", "num_fewshot", "filter_list"}

    def kept(key):
        return key.split(".")[0] not in few_shot_and_filters and key != "dataset_kwargs.data_files.train"

    expected = {k for k in keys(genuine) if kept(k)}
    got = {k for k in keys(ours) if kept(k)}
    assert got == expected, f"missing {sorted(expected - got)}, extra {sorted(got - expected)}"
    for key in ("dataset_path", "output_type", "test_split", "doc_to_text", "metadata"):
        assert ours[key] == genuine[key], key
    if output_type == "multiple_choice":
        assert ours["metric_list"] == genuine["metric_list"]
        assert (ours["doc_to_choice"], ours["doc_to_target"]) == (genuine["doc_to_choice"], genuine["doc_to_target"])
        genuine_doc = json.loads((TASKS / "fx_mc_test.jsonl").read_text().splitlines()[0])
        our_doc = json.loads((tmp_path / "irtbayes_benchfill.jsonl").read_text().splitlines()[0])
        assert {"id", "question", "choices", "answer"} <= set(our_doc)
        assert {k: type(v) for k, v in our_doc.items() if k in genuine_doc} == {
            k: type(v) for k, v in genuine_doc.items()
        }


@pytest.mark.parametrize(
    ("candidates", "options", "error", "message"),
    [
        (GEN, {}, DataError, "'bf-cccccccccc' has no choices"),
        (MC, {"output_type": "generate_until"}, DataError, "'bf-aaaaaaaaaa' is multiple choice"),
        ([], {}, DataError, "no candidates"),
        ([MC[0], MC[0]], {}, DataError, r"appears twice \(positions 0 and 1\)"),
        (MC, {"task_name": "bad name"}, SpecError, "task name"),
        (MC, {"output_type": "loglikelihood"}, SpecError, "output_type"),
        ([Candidate("x", "Q", "z", choices=("a", "b"))], {}, DataError, "answer 'z' is not one of its choices"),
    ],
)
def test_export_refuses_what_lm_eval_could_not_run(tmp_path, candidates, options, error, message):
    with pytest.raises(error, match=message):
        export_lm_eval(candidates, tmp_path, **options)
    assert not list(tmp_path.iterdir()), "nothing should be written on error"


def test_csv_template_loads_once_filled(tmp_path):
    path = export_csv_template(MC + GEN, ["org/sys-a", "sys-b"], tmp_path / "sub" / "template.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == "subject,item,response"
    assert lines[1] == "org/sys-a,bf-aaaaaaaaaa," and len(lines) == 1 + 2 * 4
    table = pd.read_csv(path, dtype={"response": "float64"})
    assert table["response"].isna().all()
    table["response"] = [1, 0, 1, 1, 0, 0, 1, None]
    data = ResponseData.from_long(table, items=items_table(MC + GEN))
    assert data.n_responses == 7 and data.n_subjects == 2 and data.n_items == 4
    assert not list(path.parent.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("candidates", "subjects", "message"),
    [
        (MC, [], "no subjects"),
        ([], ["a"], "no candidates"),
        (MC, ["a", "a"], r"subject id\(s\) \['a'\]"),
        (MC, [" "], "blank subject"),
    ],
)
def test_csv_template_errors(tmp_path, candidates, subjects, message):
    with pytest.raises(DataError, match=message):
        export_csv_template(candidates, subjects, tmp_path / "t.csv")
