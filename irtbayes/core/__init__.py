"""Shared by every stage, importing none: errors, atomic files, IRT numerics, test information per draw,
posterior summaries, figures of tables, progress reporting."""
