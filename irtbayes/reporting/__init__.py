"""Stage 6, the report: one folder with ``report.html``, ``report.md``, figures and tables, built from a fit and
its audit; the document blocks (escaped HTML and Markdown); exports that other IRT tools read."""
