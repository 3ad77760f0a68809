"""A saved audit read back: every table, the target and the settings equal the written ones; bad folders fail."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_audit_run import fake_posterior

from irtbayes.auditing.draws import fit_identity
from irtbayes.auditing.folder import load_audit, save_audit
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.core.errors import DataError, FitError
from irtbayes.data.responses import ResponseData

# ids that a careless CSV reader turns into numbers or missing values
SUBJECTS = ["NA", "007", "1", "null", "a,b", "True", "s6", "s7"]
ITEMS = [f"{i}" for i in range(12)] + ["NaN", "q,13", '"q14"', "1e3"]


@pytest.fixture(scope="module")
def awkward() -> tuple[ResponseData, np.ndarray, np.ndarray]:
    """Rasch responses with ids that look like numbers, missing values and CSV syntax; one unlabelled item."""
    rng = np.random.default_rng(3)
    difficulty = np.linspace(-1.8, 1.8, len(ITEMS))
    ability = np.linspace(-1.2, 1.4, len(SUBJECTS))
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    frame = pd.DataFrame(
        {"subject": np.repeat(SUBJECTS, len(ITEMS)), "item": np.tile(ITEMS, len(SUBJECTS)), "response": y.ravel()}
    )
    benchmarks = ["1"] * 8 + ["NA bench"] * 7 + [None]
    meta = pd.DataFrame({"item": ITEMS, "benchmark": benchmarks, "domain": ["d"] * 15 + [None]})
    return ResponseData.from_long(frame, items=meta, source="awkward ids"), difficulty, ability


@pytest.fixture(scope="module")
def written(
    awkward: tuple[ResponseData, np.ndarray, np.ndarray], tmp_path_factory: pytest.TempPathFactory
) -> tuple[AuditResult, Path]:
    data, difficulty, ability = awkward
    post = fake_posterior(data, difficulty, ability, scatter=0.2, draws=60)
    result = audit(post, data, range=(-2, 2), bins=5, group=["007", "a,b"], ci_prob=0.8, seed=17, top_k=3, max_draws=50)
    return result, save_audit(result, tmp_path_factory.mktemp("audit") / "saved")


def test_load_audit_gives_back_the_written_result(written: tuple[AuditResult, Path]) -> None:
    result, folder = written
    back = load_audit(folder)
    for name, table in result.tables().items():
        pd.testing.assert_frame_equal(back.tables()[name], table, check_exact=True, obj=name)
        assert back.tables()[name].attrs == table.attrs, name
    assert set(back.ranking["subject"]) == set(SUBJECTS), "ids such as 'NA' and '007' stay text"
    assert list(back.ahead.index) == list(result.ahead.index) and back.ahead.columns.name == "behind"
    assert back.target == result.target and back.target.kind == "group"
    assert back.ci_prob == 0.8
    assert back.settings == result.settings
    s = back.settings
    assert (s["seed"], s["max_draws"], s["top_k"], s["group"]) == (17, 50, 3, ["007", "a,b"])
    assert s["n_samples_ranking"] == 50 and s["converged"] is None and s["partial"] is False
    assert s["ensemble"] == "draws" and s["data_checksum"] and len(s["fit_identity"]) == 64
    assert back.to_text() == result.to_text()
    assert back.summary_dict() == result.summary_dict()


def test_load_audit_checks_the_data_and_the_fit(
    awkward: tuple[ResponseData, np.ndarray, np.ndarray], written: tuple[AuditResult, Path], tmp_path: Path
) -> None:
    data, difficulty, ability = awkward
    _, folder = written
    post = fake_posterior(data, difficulty, ability, scatter=0.2, draws=60)
    assert fit_identity(post, data) == load_audit(folder, fit=post, data=data).settings["fit_identity"]
    # the same draws with the items in another order are the same fit
    shuffled = post.isel(item=np.random.default_rng(0).permutation(post.sizes["item"]))
    load_audit(folder, fit=shuffled, data=data)
    other = post.copy(deep=True)
    other["ability"][0, 0, 0] += 1e-3
    with pytest.raises(FitError, match="another fit"):
        load_audit(folder, fit=other, data=data)
    changed = ResponseData.from_long(
        data.long_frame().assign(response=lambda f: 1.0 - f["response"]), items=data.items.reset_index(), source="flip"
    )
    with pytest.raises(FitError, match="other data"):
        load_audit(folder, data=changed)
    # an audit that records neither (written before they were recorded) cannot be vouched for
    old = tmp_path / "old"
    old.mkdir()
    for path in folder.iterdir():
        (old / path.name).write_bytes(path.read_bytes())
    summary = json.loads((old / "summary.json").read_text())
    del summary["settings"]["fit_identity"]
    (old / "summary.json").write_text(json.dumps(summary))
    assert load_audit(old, data=data).settings["seed"] == 17
    with pytest.raises(FitError, match="no fit identity"):
        load_audit(old, fit=post, data=data)


def _copy(folder: Path, to: Path) -> Path:
    to.mkdir()
    for path in folder.iterdir():
        (to / path.name).write_bytes(path.read_bytes())
    return to


def test_load_audit_names_the_missing_or_broken_file(written: tuple[AuditResult, Path], tmp_path: Path) -> None:
    _, folder = written
    with pytest.raises(DataError, match="no such folder"):
        load_audit(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"summary.json: no such file; .* is not an audit folder"):
        load_audit(tmp_path / "empty")

    missing = _copy(folder, tmp_path / "missing")
    (missing / "ranking.csv").unlink()
    with pytest.raises(DataError, match=r"ranking.csv: no such file"):
        load_audit(missing)

    truncated = _copy(folder, tmp_path / "truncated")
    text = (truncated / "bins.csv").read_text()
    (truncated / "bins.csv").write_text(text[: len(text) // 2])
    with pytest.raises(DataError, match=r"bins.csv: its content differs from what summary.json records"):
        load_audit(truncated)

    bad_json = _copy(folder, tmp_path / "bad_json")
    (bad_json / "summary.json").write_text('{"settings": {')
    with pytest.raises(DataError, match=r"summary.json: not valid JSON \(line 1"):
        load_audit(bad_json)

    not_audit = _copy(folder, tmp_path / "not_audit")
    (not_audit / "summary.json").write_text(json.dumps({"format_version": 1, "spec": {}}))
    with pytest.raises(DataError, match=r"summary.json: not an audit summary"):
        load_audit(not_audit)

    target = _copy(folder, tmp_path / "target")
    summary = json.loads((target / "summary.json").read_text())
    del summary["files"]  # no checksums to catch it: the target file is still compared with the summary
    (target / "summary.json").write_text(json.dumps(summary))
    frame = pd.read_csv(target / "target.csv")
    frame.loc[0, "weight"] += 0.5
    frame.to_csv(target / "target.csv", index=False)
    with pytest.raises(DataError, match=r"target.csv: the bins or weights differ"):
        load_audit(target)
