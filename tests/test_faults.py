"""Fault injection: killed and racing saves, a full disk, damaged fit files, bad CSV lines, hostile text, umask.

Fast tests run by default; those that start Python subprocesses or write a million-row file are marked
``slow`` (``pytest -m slow tests/test_faults.py``).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import irtbayes.fitting.storage as storage_module
from irtbayes.core.errors import DataError, FitError
from irtbayes.core.files import atomic_dir, atomic_write_text
from irtbayes.data.io.tabular import load_long
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.result import Fit, fit_constant_data
from irtbayes.fitting.storage import load_fit, save_fit
from irtbayes.model.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ hand-built fits
def tiny_data(
    *, item_ids: list[str] | None = None, texts: list[str] | None = None, n_subjects: int = 12
) -> ResponseData:
    """Seeded 0/1 responses of ``n_subjects`` subjects to the given items (default: six plain ids)."""
    item_ids = item_ids or [f"item{i}" for i in range(6)]
    rng = np.random.default_rng(5)
    subjects = [f"s{j:02d}" for j in range(n_subjects)]
    ability = np.linspace(-1.5, 1.5, n_subjects)
    difficulty = np.linspace(-1, 1, len(item_ids))
    rows = [
        (s, i, float(rng.random() < 1 / (1 + np.exp(-(a - b)))))
        for s, a in zip(subjects, ability, strict=True)
        for i, b in zip(item_ids, difficulty, strict=True)
    ]
    frame = pd.DataFrame(rows, columns=["subject", "item", "response"])
    items = pd.DataFrame({"item": item_ids, "benchmark": "bank", "text": texts or [f"question {i}" for i in item_ids]})
    return ResponseData.from_long(frame, items=items, source="<faults>")


def hand_fit(data: ResponseData, *, seed: int = 0, name: str = "hand-built") -> Fit:
    """A Fit from known random draws (2 chains x 50 draws), with the data's counts: no sampling."""
    rng = np.random.default_rng(seed)
    shape = (2, 50)
    n_s, n_i = data.n_subjects, data.n_items
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), rng.normal(size=(*shape, n_s))),
            "difficulty": (("chain", "draw", "item"), rng.normal(size=(*shape, n_i))),
            "discrimination": (("chain", "draw", "item"), np.exp(0.2 * rng.normal(size=(*shape, n_i)))),
            "difficulty_mu": (("chain", "draw"), rng.normal(size=shape)),
            "difficulty_sd": (("chain", "draw"), 1 + 0.1 * rng.random(shape)),
            "log_discrimination_mu": (("chain", "draw"), 0.1 * rng.normal(size=shape)),
        },
        coords={"subject": [str(s) for s in data.subject_ids], "item": [str(i) for i in data.item_ids]},
    )
    posterior = posterior.assign(intercept=-posterior["discrimination"] * posterior["difficulty"])
    tree = xr.DataTree.from_dict({"posterior": posterior, "constant_data": fit_constant_data(data)})
    tree.attrs["data_checksum"] = data.checksum()
    return Fit(
        idata=tree,
        spec=ModelSpec(kind="2pl", hierarchy="none", layout="long", discrimination_sd="fixed"),
        sampler={"name": name, "chains": 2, "draws": 50, "seed": seed, "approximate": False},
        data_checksum=data.checksum(),
        diagnostics=check_convergence(tree, ess_min=50),
        info={"source": data.source},
    )


def same_fit(a: Fit, b: Fit) -> bool:
    """Same sampler name and the same difficulty draws at the float32 precision ``save_fit`` stores."""
    return a.sampler["name"] == b.sampler["name"] and bool(
        np.array_equal(
            a.posterior["difficulty"].values.astype(np.float32), b.posterior["difficulty"].values.astype(np.float32)
        )
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module")
def data() -> ResponseData:
    return tiny_data()


# ------------------------------------------------------------------------------------------ umask
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(tmp_path, data, umask):
    old = os.umask(umask)
    try:
        fit_dir = save_fit(hand_fit(data), tmp_path / "fit")
        text = atomic_write_text(tmp_path / "note.txt", "x")
        with atomic_dir(tmp_path / "report") as tmp:
            (tmp / "report.html").write_text("<p>x</p>", encoding="utf-8")
    finally:
        os.umask(old)
    want_file, want_dir = 0o666 & ~umask, 0o777 & ~umask
    modes = {str(p.relative_to(tmp_path)): p.stat().st_mode & 0o777 for p in tmp_path.rglob("*")}
    expected = {name: want_dir if (tmp_path / name).is_dir() else want_file for name in modes}
    assert modes == expected, {k: oct(v) for k, v in modes.items()}
    assert text.name == "note.txt" and (fit_dir / "card.json").is_file()


# ------------------------------------------------------------------------------------------ full disk
def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "posterior.nc")


@pytest.mark.parametrize("where", ["posterior", "tables"])
def test_full_disk_keeps_the_previous_fit_and_names_the_path(tmp_path, data, monkeypatch, where):
    target = tmp_path / "models" / "fit"
    old = hand_fit(data, seed=1, name="old")
    save_fit(old, target)
    if where == "posterior":
        monkeypatch.setattr(xr.DataTree, "to_netcdf", _no_space)
    else:
        monkeypatch.setattr(pd.DataFrame, "to_csv", _no_space)
    with pytest.raises(FitError, match=rf"{target}: the fit could not be saved: No space left on device.*unchanged"):
        save_fit(hand_fit(data, seed=2, name="new"), target, overwrite=True)
    with pytest.raises(FitError, match=rf"{tmp_path / 'models' / 'other'}: .*No space left.*nothing was saved"):
        save_fit(hand_fit(data, seed=2, name="new"), tmp_path / "models" / "other")
    monkeypatch.undo()
    assert same_fit(load_fit(target, data=data), old)
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["fit"]


def test_an_interrupted_save_keeps_the_previous_fit(tmp_path, data, monkeypatch):
    target = tmp_path / "fit"
    old = hand_fit(data, seed=1, name="old")
    save_fit(old, target)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_csv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_fit(hand_fit(data, seed=2, name="new"), target, overwrite=True)
    monkeypatch.undo()
    assert same_fit(load_fit(target), old) and leftovers(tmp_path) == []


# ------------------------------------------------------------------------------------------ damaged files
@pytest.fixture
def saved(tmp_path, data) -> Path:
    return save_fit(hand_fit(data, seed=3), tmp_path / "fit")


def test_an_intact_fit_loads_with_its_checksums(saved, data):
    card = json.loads((saved / "card.json").read_text(encoding="utf-8"))
    assert len(card["posterior_sha256"]) == 64 and len(card["card_sha256"]) == 64
    loaded = load_fit(saved, data=data)
    assert "posterior_sha256" not in loaded.card() and same_fit(loaded, hand_fit(data, seed=3))


def test_a_truncated_posterior_is_named(saved):
    path = saved / "posterior.nc"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FitError, match=rf"{path}: truncated or edited after it was saved"):
        load_fit(saved)


def test_an_edited_posterior_is_named(saved):
    path = saved / "posterior.nc"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte, which netCDF may well read without complaint
    path.write_bytes(bytes(raw))
    with pytest.raises(FitError, match=rf"{path}: truncated or edited after it was saved"):
        load_fit(saved)


def test_an_edited_card_is_named(saved):
    path = saved / "card.json"
    card = json.loads(path.read_text(encoding="utf-8"))
    card["spec"]["kind"] = "1pl"
    path.write_text(json.dumps(card, indent=2), encoding="utf-8")
    with pytest.raises(FitError, match=rf"{path}: edited after it was saved"):
        load_fit(saved)


def test_a_truncated_card_is_named(saved):
    path = saved / "card.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(FitError, match=rf"{path}: not valid JSON \(line \d+, column \d+"):
        load_fit(saved)


@pytest.mark.parametrize("field", ["spec", "diagnostics"])
def test_a_card_whose_records_are_not_mappings_is_named(saved, field):
    path = saved / "card.json"
    card = json.loads(path.read_text(encoding="utf-8"))
    del card["posterior_sha256"], card["card_sha256"]  # a hand-written card, not an edited one
    card[field] = 5
    path.write_text(json.dumps(card, indent=2), encoding="utf-8")
    with pytest.raises(FitError, match=rf"{path}: bad 'spec' or 'diagnostics'"):
        load_fit(saved)


def test_a_card_without_checksums_still_loads(saved, data):
    path = saved / "card.json"
    card = json.loads(path.read_text(encoding="utf-8"))
    del card["posterior_sha256"], card["card_sha256"]
    path.write_text(json.dumps(card, indent=2), encoding="utf-8")
    assert same_fit(load_fit(saved, data=data), hand_fit(data, seed=3))


# ------------------------------------------------------------------------------------------ racing saves
def test_a_fit_saved_by_another_writer_meanwhile_is_kept_or_replaced_whole(tmp_path, data, monkeypatch):
    """A second save completes while the first is still writing its files: the outcome is one whole fit."""
    target = tmp_path / "fit"
    first, second = hand_fit(data, seed=1, name="first"), hand_fit(data, seed=2, name="second")
    write = storage_module._write_fit_files

    def write_then_race(result, folder, **options):
        write(result, folder, **options)
        if result is first:
            save_fit(second, target, overwrite=True)

    monkeypatch.setattr(storage_module, "_write_fit_files", write_then_race)
    with pytest.raises(FitError, match=rf"{target}: another process saved a fit here .* was kept"):
        save_fit(first, target)
    assert same_fit(load_fit(target), second) and leftovers(tmp_path) == []
    # with overwrite, the writer that finishes last replaces the other's fit whole
    save_fit(first, target, overwrite=True)
    assert same_fit(load_fit(target), first) and leftovers(tmp_path) == []


def test_overwrite_without_an_atomic_exchange(tmp_path, data, monkeypatch):
    """Where renameat2 is unavailable the old folder is moved aside and removed after the new one is in place."""
    monkeypatch.setattr(storage_module, "_exchange", lambda a, b: False)
    target = tmp_path / "fit"
    save_fit(hand_fit(data, seed=1, name="old"), target)
    save_fit(hand_fit(data, seed=2, name="new"), target, overwrite=True)
    assert same_fit(load_fit(target), hand_fit(data, seed=2, name="new")) and leftovers(tmp_path) == []


def test_an_interrupt_while_the_previous_fit_is_aside_puts_it_back(tmp_path, data, monkeypatch):
    """Without an atomic exchange the old folder is moved aside first; an interrupt right then restores it."""
    monkeypatch.setattr(storage_module, "_exchange", lambda a, b: False)
    target = tmp_path / "fit"
    old = hand_fit(data, seed=1, name="old")
    save_fit(old, target)
    real = os.rename
    moments = []

    def rename(src, dst):
        if Path(dst) == target and ".tmp-" in Path(src).name and not target.exists():
            moments.append(sorted(p.name for p in tmp_path.iterdir()))
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(KeyboardInterrupt):
        save_fit(hand_fit(data, seed=2, name="new"), target, overwrite=True)
    monkeypatch.undo()
    assert len(moments) == 1 and any(".fit.old-" in n for n in moments[0]), moments
    assert same_fit(load_fit(target), old) and leftovers(tmp_path) == []


def test_no_fit_here_points_at_a_previous_fit_left_aside(tmp_path, data):
    """A save killed while the previous fit was aside (no atomic exchange) leaves it under a hidden name."""
    target = save_fit(hand_fit(data), tmp_path / "fit")
    aside = tmp_path / ".fit.old-0123abcd"
    target.rename(aside)
    with pytest.raises(FitError, match=rf"{target}: no saved fit here .* left the previous fit at {aside}"):
        load_fit(target)
    with pytest.raises(FitError, match=r"no saved fit here \(not a folder\)$"):
        load_fit(tmp_path / "elsewhere")


# subprocess helpers: a child that saves a hand-built fit
CHILD = """
import sys, time
sys.path.insert(0, {tests!r})
import numpy as np, pandas as pd
from pathlib import Path
from test_faults import tiny_data, hand_fit
from irtbayes.fitting.storage import save_fit
from irtbayes.core.errors import FitError
mode, target, name, seed = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
data = tiny_data()
if mode == "slow":  # stall in the middle of writing the folder, after posterior.nc and card.json
    real = pd.DataFrame.to_csv
    def stalled(self, path, *args, **kwargs):
        real(self, path, *args, **kwargs)
        Path(str(target) + ".stalled").touch()
        time.sleep(600)
    pd.DataFrame.to_csv = stalled
    save_fit(hand_fit(data, seed=seed, name=name), target, overwrite=True)
else:  # race: wait for the go signal, then save several times
    go = Path(sys.argv[5])
    fits = [hand_fit(data, seed=seed + k, name=name) for k in range(3 if mode == "overwrite" else 1)]
    while not go.exists():
        time.sleep(0.001)
    try:
        for f in fits:
            save_fit(f, target, overwrite=mode == "overwrite")
    except FitError as err:
        print("FitError:", err)
        sys.exit(3)
"""


def _child(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    if not script.exists():
        script.write_text(textwrap.dedent(CHILD.format(tests=str(ROOT / "tests"))), encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("previous", [True, False])
def test_sigkill_during_a_save_never_leaves_a_readable_half_fit(tmp_path, data, previous):
    target = tmp_path / "fit"
    old = hand_fit(data, seed=1, name="old")
    if previous:
        save_fit(old, target)
    child = _child(tmp_path, "slow", str(target), "new", "2")
    stalled = Path(str(target) + ".stalled")
    deadline = time.monotonic() + 120
    while not stalled.exists():
        assert child.poll() is None, child.communicate()[0]
        assert time.monotonic() < deadline, "the child never reached the stalled write"
        time.sleep(0.05)
    # the half-written folder exists beside the target ...
    partial = [p for p in tmp_path.iterdir() if p.name.startswith(".fit.tmp-")]
    assert len(partial) == 1 and (partial[0] / "posterior.nc").is_file(), leftovers(tmp_path)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    # ... and is never read as the fit
    if previous:
        assert same_fit(load_fit(target, data=data), old)
    else:
        with pytest.raises(FitError, match=rf"{target}: no saved fit here"):
            load_fit(target)
    # a later save goes through, and replaces whatever was there whole
    save_fit(hand_fit(data, seed=5, name="later"), target, overwrite=True)
    assert load_fit(target).sampler["name"] == "later"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["overwrite", "keep"])
def test_two_processes_saving_to_one_folder(tmp_path, mode):
    target = tmp_path / "fit"
    go = tmp_path / "go"
    children = [_child(tmp_path, mode, str(target), name, str(seed), str(go)) for name, seed in (("A", 10), ("B", 20))]
    time.sleep(0.5)
    go.touch()
    outputs = [c.communicate(timeout=300)[0] for c in children]
    codes = [c.returncode for c in children]
    result = load_fit(target)  # checks card and posterior against each other: never a mix
    assert result.sampler["name"] in ("A", "B")
    items = pd.read_csv(target / "items.csv")
    np.testing.assert_allclose(items["difficulty_mean"], result.items_table()["difficulty_mean"])
    if mode == "overwrite":
        assert codes == [0, 0], outputs
    else:  # exactly one writer saved; the other was told the folder exists, with the path
        assert sorted(codes) == [0, 3], outputs
        loser = outputs[codes.index(3)]
        assert f"FitError: {target}:" in loser, loser
        assert "already exists" in loser or "another process saved a fit here" in loser, loser
        winner = "AB"[codes.index(0)]
        assert result.sampler["name"] == winner and result.sampler["seed"] == {"A": 10, "B": 20}[winner]
    assert [n for n in leftovers(tmp_path) if n.startswith(".fit.")] == []


# ------------------------------------------------------------------------------------------ bad CSV lines
BAD_LAST_LINES = {
    "extra field": ("s0,i0,1,surplus", r"Expected 3 fields in line {line}, saw 4"),
    "open quote": ('s0,"i0,1', r"EOF inside string starting at line {line}"),
    "not a number": ("s0,i0,yes", r"column 'response' at line {line} holds 'yes', which is not a number"),
    "out of range": ("s0,i0,2", r"column 'response' at line {line} holds 2, outside \[0, 1\]"),
}


def _csv_with_bad_last_line(path: Path, n_rows: int, bad: str) -> int:
    n_items = 1000
    subjects = np.repeat(np.arange(n_rows // n_items + 1), n_items)[:n_rows]
    items = np.tile(np.arange(n_items), n_rows // n_items + 1)[:n_rows]
    body = pd.DataFrame(
        {"subject": "x" + pd.Series(subjects).astype(str), "item": "i" + pd.Series(items).astype(str)}
    ).assign(response=(subjects + items) % 2)
    body.to_csv(path, index=False)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(bad + "\n")
    return n_rows + 2  # the header is line 1


@pytest.mark.parametrize("case", sorted(BAD_LAST_LINES))
def test_a_bad_last_line_is_named(tmp_path, case):
    bad, message = BAD_LAST_LINES[case]
    path = tmp_path / "responses.csv"
    line = _csv_with_bad_last_line(path, 3000, bad)
    with pytest.raises(DataError, match=rf"{path}: .*" + message.format(line=line)):
        load_long(path)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["extra field", "not a number"])
def test_a_bad_last_line_of_a_million_rows_is_named(tmp_path, case):
    bad, message = BAD_LAST_LINES[case]
    path = tmp_path / "responses.csv"
    line = _csv_with_bad_last_line(path, 1_000_000, bad)
    assert line == 1_000_002
    with pytest.raises(DataError, match=rf"{path}: .*" + message.format(line=line)):
        load_long(path)


# ------------------------------------------------------------------------------------------ hostile text
HOSTILE_IDS = [
    "q-😀-emoji",
    "سؤال-عربي",  # right to left
    "<script>alert('id')</script>",
    "long-" + "x" * 10_000,
    'quote"and,comma',
    "plain",
]
HOSTILE_TEXTS = [
    "🧪" * 2_000,
    "מה התשובה? " + "ש" * 10_000,
    "<script>alert('text')</script> & <b>bold</b>",
    "line one\nline two, with \"quotes\" and 'apostrophes'",
    "ü" * 10_000,
    "plain text",
]


def test_hostile_ids_and_texts_survive_loading_saving_auditing_and_reporting(tmp_path):
    # through a CSV file, as a user would give them
    long = tiny_data(item_ids=HOSTILE_IDS).long_frame()[["subject", "item", "response"]]
    long.to_csv(tmp_path / "responses.csv", index=False)
    pd.DataFrame({"item": HOSTILE_IDS, "benchmark": "bänk ⚖", "text": HOSTILE_TEXTS}).to_csv(
        tmp_path / "items.csv", index=False
    )
    data = load_long(tmp_path / "responses.csv", items=tmp_path / "items.csv")
    assert sorted(map(str, data.item_ids)) == sorted(HOSTILE_IDS)
    assert dict(zip(data.items.index.astype(str), data.items["text"], strict=True)) == dict(
        zip(HOSTILE_IDS, HOSTILE_TEXTS, strict=True)
    )
    result = hand_fit(data, seed=4)
    loaded = load_fit(save_fit(result, tmp_path / "fit ⚙ 😀"), data=data)
    assert list(loaded.item_ids) == list(result.item_ids)
    assert pd.read_csv(tmp_path / "fit ⚙ 😀" / "items.csv")["item"].tolist() == list(result.item_ids)

    from irtbayes.auditing.run import audit
    from irtbayes.reporting.report import report

    audited = audit(loaded, data, seed=0)
    assert set(audited.items["item"].astype(str)) == set(HOSTILE_IDS)
    assert "bänk ⚖" in set(audited.benchmarks["scope"].astype(str))
    html = report(loaded, tmp_path / "report", data=data, audit=audited).read_text(encoding="utf-8")
    assert "<script>alert(" not in html, "an id or text reached the HTML unescaped"
    assert "&lt;script&gt;alert(" in html and "bänk ⚖" in html
    assert (tmp_path / "report" / "report.md").stat().st_size < 20_000_000


def test_hostile_ids_go_through_the_benchfill_ledger(tmp_path):
    from irtbayes.benchfill.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.jsonl", run_id="run-ü")
    records = [
        {"candidate_id": cid, "source": text[:50], "decision": "accepted", "prompt_hash": "h"}
        for cid, text in zip(HOSTILE_IDS, HOSTILE_TEXTS, strict=True)
    ]
    assert ledger.append(records) == len(records)
    back = Ledger(tmp_path / "ledger.jsonl").read()
    assert back["candidate_id"].tolist() == HOSTILE_IDS
    assert back["source"].tolist() == [text[:50] for text in HOSTILE_TEXTS]


# ------------------------------------------------------------------------------------------ small banks
def test_a_small_single_group_bank_fixes_the_spread_of_discriminations():
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.model.build import build_model
    from irtbayes.model.spec import SMALL_BANK_ITEMS

    small, _ = simulate_responses(30, 5, seed=1)  # LSAT-like: one bank of five items
    model = build_model(small)
    names = {v.name for v in model.free_RVs}
    assert model.irtbayes_spec.discrimination_sd == "fixed"
    assert "log_discrimination_sd" not in model.named_vars and "discrimination" in names, names
    assert "log_discrimination_mu" in names and "difficulty_sd" in names  # the audit's difficulty prior stays
    kept = build_model(small, ModelSpec(discrimination_sd="sampled"))
    assert {"log_discrimination_sd", "discrimination_z"} <= {v.name for v in kept.free_RVs}
    # a bank of SMALL_BANK_ITEMS items, or several benchmarks, keeps the sampled hyper-sd
    large, _ = simulate_responses(12, SMALL_BANK_ITEMS, seed=2)
    several, _ = simulate_responses(12, 20, n_benchmarks=2, seed=3)
    for data in (large, several):
        spec = build_model(data).irtbayes_spec
        assert spec.discrimination_sd == "sampled", (data.n_items, spec.hierarchy)
    # the fixed spread is the documented prior scale: the log-density of the discriminations says so
    point = model.initial_point()
    la = np.array([-0.6, -0.1, 0.0, 0.3, 0.9])
    point["discrimination_log__"] = la
    point["log_discrimination_mu"] = np.array(0.2)
    logp = model.compile_logp(vars=[model["discrimination"]], sum=False, mode="FAST_COMPILE")(point)[0]
    scale = ModelSpec().priors.log_discrimination_sd_scale
    expected = -0.5 * ((la - 0.2) / scale) ** 2 - np.log(
        scale * np.sqrt(2 * np.pi)
    )  # with the log-transform's Jacobian
    np.testing.assert_allclose(logp, expected, rtol=1e-7)


def test_benchfill_calibrates_candidates_against_a_bank_with_a_fixed_spread(data):
    """A small bank's fit has no ``log_discrimination_sd`` draws: BenchFill uses the fixed spread instead."""
    from irtbayes.benchfill.calibration import calibrate_fixed, candidate_response_data
    from irtbayes.benchfill.candidates import Candidate

    bank = hand_fit(data, seed=6)
    assert "log_discrimination_sd" not in bank.posterior
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"subject": list(map(str, data.subject_ids)), "item": HOSTILE_IDS[0]})
    frame["response"] = (rng.random(len(frame)) < 0.6).astype(float)
    candidates = [Candidate(candidate_id=HOSTILE_IDS[0], text=HOSTILE_TEXTS[2], answer="a")]
    new = candidate_response_data(frame, candidates, fit=bank)
    post = calibrate_fixed(bank, new, n_draws=400, seed=1, prior="bank")
    # the same bank with the spread as (constant) draws gives the same posterior
    spread = ModelSpec().priors.log_discrimination_sd_scale
    tree = bank.idata.copy()
    tree["posterior"] = tree["posterior"].assign(
        log_discrimination_sd=xr.full_like(bank.posterior["log_discrimination_mu"], spread)
    )
    explicit = calibrate_fixed(dataclasses.replace(bank, idata=tree), new, n_draws=400, seed=1, prior="bank")
    for name in ("difficulty", "discrimination"):
        np.testing.assert_array_equal(post[name].values, explicit[name].values)
    assert np.isfinite(post["discrimination"].values).all()
    assert str(post["item"].values[0]) == HOSTILE_IDS[0]
