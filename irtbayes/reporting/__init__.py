"""The last stage, the report: one folder with ``report.html``, ``report.md``, figures and tables, built from a fit
and its audit, opening with the findings (:mod:`~irtbayes.reporting.findings`), with the sections of BenchFill,
checkpoint tracking and the robustness checks; the document blocks (escaped HTML and Markdown); exports that
other IRT tools read."""
