"""Building blocks for reports: escaped HTML and Markdown, embedded figures, atomic folder writes.

Every piece of text that comes from data (item text, subject and benchmark names) goes through
:func:`html.escape` here, so an item whose text is ``<script>alert(1)</script>`` shows as text.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Document", "format_number"]


def format_number(value: object, *, digits: int = 3) -> str:
    """Numbers as short text: ``0.123``, ``1.2e-05``, ``12,032``; other values via ``str``.

    Examples
    --------
    >>> format_number(0.12345), format_number(1.2e-5), format_number(12032), format_number(float("nan"))
    ('0.123', '1.20e-05', '12,032', '–')
    >>> format_number(True), format_number("2pl")
    ('yes', '2pl')
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v != 0 and (abs(v) < 10 ** -(digits - 1) or abs(v) >= 10**6):
            return f"{v:.{digits - 1}e}"
        return f"{v:.{digits}f}"
    return str(value)


@dataclass
class Document:
    """A report kept as HTML and Markdown side by side; figures embedded in HTML, saved beside the Markdown.

    Examples
    --------
    >>> import tempfile
    >>> doc = Document(title="Demo")
    >>> doc.heading("Data")
    >>> doc.paragraph("20 subjects < 30 items.")
    >>> doc.table(pd.DataFrame({"x": [1, 2]}))
    >>> print(doc.to_markdown(), end="")
    # Demo
    <BLANKLINE>
    ## Data
    <BLANKLINE>
    20 subjects &lt; 30 items.
    <BLANKLINE>
    | x |
    |---|
    | 1 |
    | 2 |
    >>> "20 subjects &lt; 30 items." in doc.to_html()  # text is escaped in HTML too
    True
    >>> folder = Path(tempfile.mkdtemp())
    >>> doc.write(folder)
    >>> sorted(path.name for path in folder.iterdir())
    ['figures', 'report.html', 'report.md']
    """

    title: str
    html_parts: list[str] = field(default_factory=list)
    md_parts: list[str] = field(default_factory=list)
    figures: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)  # name -> (png, svg)
    #: Tables the report was built from (name -> table), kept so that whoever writes their CSV files next to the
    #: report need not compute them again; :meth:`write` does not write them.
    data_tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def heading(self, text: str, *, level: int = 2) -> None:
        anchor = "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")
        self.html_parts.append(f'<h{level} id="{html.escape(anchor)}">{html.escape(text)}</h{level}>')
        self.md_parts.append(f"{'#' * level} {_md_escape(text)}\n")

    def paragraph(self, text: str, *, css: str | None = None) -> None:
        cls = f' class="{html.escape(css)}"' if css else ""
        self.html_parts.append(f"<p{cls}>{html.escape(text)}</p>")
        self.md_parts.append(f"{_md_escape(text)}\n")

    def bullets(self, items: Sequence[str]) -> None:
        if not items:
            return
        self.html_parts.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")
        self.md_parts.append("\n".join(f"- {_md_escape(i)}" for i in items) + "\n")

    def table(self, frame: pd.DataFrame, *, caption: str | None = None, digits: int = 3, max_rows: int = 60) -> None:
        shown = frame.head(max_rows)
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
        rows = []
        for _, row in shown.iterrows():
            cells = "".join(
                f'<td class="{"num" if isinstance(v, (int, float, np.number)) else "txt"}">'
                f"{html.escape(format_number(v, digits=digits))}</td>"
                for v in row.tolist()
            )
            rows.append(f"<tr>{cells}</tr>")
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        more = f'<p class="note">{len(frame) - max_rows} more rows in the CSV.</p>' if len(frame) > max_rows else ""
        self.html_parts.append(
            f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
        )
        md_head = "| " + " | ".join(_md_cell(str(c)) for c in shown.columns) + " |"
        md_rule = "|" + "---|" * len(shown.columns)
        md_rows = [
            "| " + " | ".join(_md_cell(format_number(v, digits=digits)) for v in row.tolist()) + " |"
            for _, row in shown.iterrows()
        ]
        cap_md = f"*{_md_escape(caption)}*\n\n" if caption else ""
        more_md = f"\n{len(frame) - max_rows} more rows in the CSV.\n" if len(frame) > max_rows else ""
        self.md_parts.append(cap_md + "\n".join([md_head, md_rule, *md_rows]) + "\n" + more_md)

    def figure(self, name: str, fig: object, *, caption: str) -> None:
        """Embed a matplotlib figure (PNG in the HTML; PNG and SVG files beside the Markdown)."""
        import matplotlib.pyplot as plt

        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=150, bbox_inches="tight")  # type: ignore[attr-defined]
        fig.savefig(svg, format="svg", bbox_inches="tight")  # type: ignore[attr-defined]
        plt.close(fig)  # type: ignore[arg-type]
        self.figures[name] = (png.getvalue(), svg.getvalue())
        data = base64.b64encode(png.getvalue()).decode("ascii")
        self.html_parts.append(
            f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
        self.md_parts.append(f"![{_md_escape(caption)}](figures/{name}.png)\n\n*{_md_escape(caption)}*\n")

    def to_html(self) -> str:
        body = "\n".join(self.html_parts)
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(self.title)}</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{_CSS}</style></head><body><main>"
            f"<h1>{html.escape(self.title)}</h1>\n{body}\n</main></body></html>\n"
        )

    def to_markdown(self) -> str:
        return f"# {_md_escape(self.title)}\n\n" + "\n".join(self.md_parts)

    def write(self, folder: Path) -> None:
        """Write report.html, report.md and figures/*.png|svg into ``folder`` (an already temporary folder)."""
        figures = folder / "figures"
        figures.mkdir(parents=True, exist_ok=True)
        for name, (png, svg) in self.figures.items():
            (figures / f"{name}.png").write_bytes(png)
            (figures / f"{name}.svg").write_bytes(svg)
        (folder / "report.html").write_text(self.to_html(), encoding="utf-8")
        (folder / "report.md").write_text(self.to_markdown(), encoding="utf-8")


def _md_escape(text: str) -> str:
    """Markdown text with HTML-significant characters escaped, so data can't inject markup."""
    return html.escape(text, quote=False)


def _md_cell(text: str) -> str:
    return _md_escape(text).replace("|", "\\|").replace("\n", " ")


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1b1b1b;background:#fff;margin:0}
main{max-width:1100px;margin:0 auto;padding:1.5rem 2rem 4rem;line-height:1.45}
h1{font-size:1.7rem;border-bottom:2px solid #0072B2;padding-bottom:.3rem}
h2{font-size:1.3rem;margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
h3{font-size:1.1rem;margin-top:1.5rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.85rem;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:.25rem .5rem;white-space:nowrap}
th{background:#f3f6f9;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3rem 0}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85rem;color:#555}
.note{color:#555;font-size:.85rem}
.verdict-ok{background:#e8f4ea;border-left:4px solid #009E73;padding:.5rem .8rem}
.verdict-bad{background:#fdf0e6;border-left:4px solid #D55E00;padding:.5rem .8rem}
"""
