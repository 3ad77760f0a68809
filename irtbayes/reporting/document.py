"""Building blocks for reports: escaped HTML and Markdown, embedded figures, atomic folder writes.

Every piece of text that comes from data (item text, subject and benchmark names) goes through
:func:`html.escape` here, so an item whose text is ``<script>alert(1)</script>`` shows as text.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "TEXT_SHOWN",
    "Document",
    "column_format",
    "format_number",
    "format_probability",
    "format_share",
    "shortened",
]


def format_number(value: object, *, digits: int = 3) -> str:
    """Numbers as short text, never in scientific notation: ``0.123``, ``0.0000120``, ``12,032``, ``2,500,000``;
    other values via ``str``.

    Floats get ``digits`` decimals, or ``digits`` significant ones when they are smaller than that shows (at
    most 9 decimals; a float below that is written ``0.000``), and thousands separators from a million up.

    Examples
    --------
    >>> format_number(0.12345), format_number(1.2e-5), format_number(12032), format_number(float("nan"))
    ('0.123', '0.0000120', '12,032', '–')
    >>> format_number(-0.00792), format_number(2.5e6), format_number(True), format_number("2pl")
    ('-0.00792', '2,500,000', 'yes', '2pl')
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return str(v)
        if abs(v) >= 10**6:
            return f"{v:,.0f}"
        if v != 0 and abs(v) < 10 ** -(digits - 1):
            decimals = digits - 1 - math.floor(math.log10(abs(v)))
            if decimals <= 9:
                return f"{v:.{decimals}f}"
        return f"{v:.{digits}f}"
    return str(value)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(float(value)))


def format_share(value: object) -> str:
    """A share (of items, of a target's weight, of cells) as a percentage with two significant digits.

    Never scientific notation; a share that is not exactly 0 or 1 never prints as ``0%`` or ``100%``.

    Examples
    --------
    >>> format_share(0.000131), format_share(0.0131), format_share(0.456), format_share(0.0), format_share(1.0)
    ('0.013%', '1.3%', '46%', '0%', '100%')
    >>> format_share(0.9996), format_share(2e-9), format_share(float("nan"))
    ('99.96%', '<0.0001%', '–')
    """
    if _missing(value):
        return "–"
    v = float(value)  # type: ignore[arg-type]
    pct = 100 * v
    if v == 0 or v == 1:
        return f"{pct:.0f}%"
    if abs(pct) < 1e-4:
        return "<0.0001%" if pct > 0 else "-<0.0001%"
    # two significant digits, and enough decimals that a share short of 1 does not read as 100%
    decimals = max(0, 1 - math.floor(math.log10(abs(pct))))
    while decimals < 6 and 0 < v < 1 and round(pct, decimals) >= 100:
        decimals += 1
    return f"{pct:.{decimals}f}%"


def format_probability(value: object, *, digits: int = 2) -> str:
    """A probability as fixed decimals: ``0.94``; ``<0.01`` and ``>0.99`` where rounding would read 0 or 1.

    Examples
    --------
    >>> format_probability(0.9412), format_probability(0.0), format_probability(1.0)
    ('0.94', '0.00', '1.00')
    >>> format_probability(1.3e-4), format_probability(0.9996)
    ('<0.01', '>0.99')
    """
    if _missing(value):
        return "–"
    v = float(value)  # type: ignore[arg-type]
    step = 10.0**-digits
    if 0 < v < step / 2:
        return f"<{step:.{digits}f}"
    if 1 - step / 2 <= v < 1:
        return f">{1 - step:.{digits}f}"
    return f"{v:.{digits}f}"


def _fixed(value: object) -> str:
    """Fixed decimals for values on a [0, 1] scale that are neither shares nor probabilities (accuracies)."""
    if _missing(value) or not isinstance(value, (float, np.floating)):
        return format_number(value)
    return f"{float(value):.3f}"


#: Column names read as shares (printed as percentages), probabilities (fixed decimals) and accuracies.
_SHARE_MARKS = ("share", "mass_", "unrepresented", "target_weight")
_ACCURACY_MARKS = ("accuracy", "mean_response", "reweighted_")


def column_format(name: object) -> Callable[[object], str] | None:
    """How a table column is printed, from its name: shares as percentages, probabilities and accuracies as
    fixed decimals; None for every other column (:func:`format_number`).

    Examples
    --------
    >>> column_format("mass_below_mean")(1.31e-4), column_format("p_empty")(0.9412), column_format("raw_accuracy")(0.005)
    ('0.013%', '0.94', '0.005')
    >>> column_format("reweighted_ci_low")(0.25), column_format("ddm_w1_mean") is None
    ('0.250', True)
    """
    text = str(name).lower()
    if any(mark in text for mark in _ACCURACY_MARKS):
        return _fixed
    if any(mark in text for mark in _SHARE_MARKS):
        return format_share
    if text.startswith("p_") or "_p_" in text or text.startswith("prob"):
        return format_probability
    return None


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
        self.html_parts.append(f"<p{cls}>{_html_text(text)}</p>")
        self.md_parts.append(f"{_md_escape(text)}\n")

    def bullets(self, items: Sequence[str]) -> None:
        if not items:
            return
        self.html_parts.append("<ul>" + "".join(f"<li>{_html_text(i)}</li>" for i in items) + "</ul>")
        self.md_parts.append("\n".join(f"- {_md_escape(i)}" for i in items) + "\n")

    def table(
        self,
        frame: pd.DataFrame,
        *,
        caption: str | None = None,
        digits: int = 3,
        max_rows: int = 60,
        formats: Mapping[str, Callable[[object], str]] | None = None,
    ) -> None:
        """A table; each column printed by ``formats[column]``, else by :func:`column_format` of its name, else
        :func:`format_number` with ``digits``."""
        shown = frame.head(max_rows)
        chosen = [
            (formats or {}).get(str(c)) or column_format(c) or (lambda v: format_number(v, digits=digits))
            for c in shown.columns
        ]
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
        rows = []
        # column by column, so that each keeps its dtype (a row of a numeric frame would turn ints into floats)
        columns = [shown.iloc[:, j].tolist() for j in range(shown.shape[1])]
        records = list(zip(*columns, strict=True)) if columns else []
        for row in records:
            cells = "".join(
                f'<td class="{"num" if isinstance(v, (int, float, np.number)) else "txt"}">{html.escape(show(v))}</td>'
                for show, v in zip(chosen, row, strict=True)
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
            "| " + " | ".join(_md_cell(show(v)) for show, v in zip(chosen, row, strict=True)) + " |" for row in records
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


#: Characters of an item's text shown in the report's tables.
TEXT_SHOWN = 160


def shortened(value: object, limit: int = TEXT_SHOWN) -> str:
    """An item's text for a table: at most ``limit`` characters, cut with an ellipsis; "" for a missing one.

    >>> shortened("a" * 200)[-3:], len(shortened("a" * 200)), shortened(None), shortened(float("nan"))
    ('aa…', 160, '', '')
    """
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _html_text(text: str) -> str:
    """Text as HTML: escaped, so data can't inject markup, with `commands` in backticks set as code (as the
    Markdown shows them).

    Examples
    --------
    >>> _html_text("run `irtbayes fit <data>` & wait")
    'run <code>irtbayes fit &lt;data&gt;</code> &amp; wait'
    """
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


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
code{background:#f3f6f9;padding:0 .2rem;font-size:.85rem}
.verdict-ok{background:#e8f4ea;border-left:4px solid #009E73;padding:.5rem .8rem}
.verdict-bad{background:#fdf0e6;border-left:4px solid #D55E00;padding:.5rem .8rem}
"""
