"""Shared by every stage, importing none: errors, atomic files, IRT numerics, posterior summaries, generic
tables and figures, progress reporting."""
