"""Atomic writes and the escaped, self-contained report document."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from irtbayes.files import atomic_dir, atomic_write_json, atomic_write_text
from irtbayes.reporting import Document, format_number

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
    [(12032, "12,032"), (0.12345, "0.123"), (1.5e-7, "1.50e-07"), (float("nan"), "–"), (True, "yes"), ("a", "a")],
)
def test_format_number(value: object, text: str) -> None:
    assert format_number(value) == text
