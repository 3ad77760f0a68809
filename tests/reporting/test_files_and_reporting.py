"""Atomic writes, JSON reading, and the escaped, self-contained report document."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError, FitError
from irtbayes.core.files import atomic_dir, atomic_write_json, atomic_write_text, read_json, read_json_lines
from irtbayes.reporting.document import Document, format_number

EVIL = "<script>alert(1)</script>"


def test_atomic_dir_leaves_nothing_on_failure_and_keeps_the_old_folder(tmp_path: Path) -> None:
    target = tmp_path / "fit"
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("first")
    assert (target / "a.txt").read_text() == "first"

    with pytest.raises(KeyboardInterrupt), atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("half")
        raise KeyboardInterrupt
    assert (target / "a.txt").read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit"], "temporary folders were left behind"


def test_atomic_write_text_replaces_whole_file(tmp_path: Path) -> None:
    path = atomic_write_text(tmp_path / "x" / "y.txt", "hello")
    assert path.read_text() == "hello"
    atomic_write_json(path, {"a": 1})
    assert path.read_text().strip() == '{\n  "a": 1\n}'
    with pytest.raises(ValueError):
        atomic_write_json(path, {"a": float("nan")})
    assert path.read_text().strip() == '{\n  "a": 1\n}'
    assert [p.name for p in path.parent.iterdir()] == ["y.txt"]


def test_read_json_accepts_a_bom_and_checks_the_top_level(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": [1, 2]}')
    assert read_json(path) == {"a": [1, 2]}
    path.write_text("[1, 2]")
    assert read_json(path, top=list) == [1, 2]
    with pytest.raises(DataError, match=r"a\.json: expected an object at the top level, found an array"):
        read_json(path)
    with pytest.raises(DataError, match=r"missing\.json: could not read the file \(No such file"):
        read_json(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'{"a": 1,\n "b": }', r"bad\.json: not valid JSON \(line 2, column 7: Expecting value\)"),
        (b'{"a": "\xff"}', r"bad\.json: not UTF-8 text"),
        (b"", r"bad\.json: not valid JSON \(line 1, column 1"),
    ],
)
def test_read_json_errors_name_file_line_and_column(tmp_path: Path, payload: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(payload)
    with pytest.raises(DataError, match=message):
        read_json(path)
    with pytest.raises(FitError, match=message):
        read_json(path, error=FitError)


def test_read_json_lines_numbers_lines_and_skips_blank_ones(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"i": 1}\n\n  \n{"i": 2}\r\n')
    assert read_json_lines(path) == [(1, {"i": 1}), (4, {"i": 2})]
    path.write_text("")
    assert read_json_lines(path) == []


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'{"i": 1}\n{"i": \n', r"r\.jsonl line 2: not valid JSON \(Expecting value at column 7\)"),
        (b'{"i": 1}\n\n[1]\n', r"r\.jsonl line 3: expected a JSON object, found an array"),
        (b'{"i": 1}\n"x"\n', r"r\.jsonl line 2: expected a JSON object, found a string"),
        (b'{"i": 1}\n{"t": "\xe9"}\n', r"r\.jsonl line 2: not UTF-8 text"),
    ],
)
def test_read_json_lines_errors_name_the_line(tmp_path: Path, payload: bytes, message: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(payload)
    with pytest.raises(DataError, match=message):
        read_json_lines(path)


def test_document_escapes_data_text_everywhere_and_embeds_figures(tmp_path: Path) -> None:
    doc = Document(title=f"Audit of {EVIL}")
    doc.heading(EVIL)
    doc.paragraph(f"item text: {EVIL}")
    doc.bullets([EVIL])
    doc.table(pd.DataFrame({"item": [EVIL], "p": [0.5]}), caption=EVIL)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    doc.figure("line", fig, caption=EVIL)
    doc.write(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "<script>" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 6
    assert "data:image/png;base64," in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page), "the page must not load anything from the network"
    md = (tmp_path / "report.md").read_text()
    assert "<script>" not in md
    assert (tmp_path / "figures" / "line.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "figures" / "line.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (12032, "12,032"),
        (0.12345, "0.123"),
        (1.5e-7, "0.000000150"),
        (-7.92e-3, "-0.00792"),
        (float("nan"), "–"),
        (True, "yes"),
        ("a", "a"),
    ],
)
def test_format_number(value: object, text: str) -> None:
    assert format_number(value) == text


def test_a_lazily_registered_array_library_is_not_imported_by_plotting() -> None:
    """matplotlib asks ``sys.modules["jax"].Array`` of each array it plots; a module registered for a lazy import
    (as arviz-base registers jax) is left unloaded within the block, and put back after."""
    import importlib.abc
    import importlib.util
    import sys
    import types

    import matplotlib.pyplot as plt

    from irtbayes.core.plots import unloaded_lazy_modules_hidden

    loaded: list[str] = []

    class Loader(importlib.abc.Loader):
        def exec_module(self, module: types.ModuleType) -> None:
            loaded.append(module.__name__)
            module.Array = type("Array", (), {})

    spec = importlib.util.spec_from_loader("jax", importlib.util.LazyLoader(Loader()))
    lazy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lazy)  # registered, not loaded: the first attribute asked for loads it
    real = sys.modules.get("jax")
    sys.modules["jax"] = lazy
    try:
        with unloaded_lazy_modules_hidden():
            assert "jax" not in sys.modules
            fig, ax = plt.subplots()
            ax.plot(np.arange(3.0), np.arange(3.0))
            plt.close(fig)
        assert sys.modules["jax"] is lazy and loaded == []
        fig, ax = plt.subplots()
        ax.plot(np.arange(3.0), np.arange(3.0))  # outside the block, matplotlib's question loads it
        plt.close(fig)
        assert loaded == ["jax"]
    finally:
        if real is None:
            sys.modules.pop("jax", None)
        else:
            sys.modules["jax"] = real
