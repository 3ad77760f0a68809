"""Figures name in their legends only what they draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import pandas as pd

from irtbayes.core.plots import plot_item_person_map


def test_the_item_person_map_names_the_target_range_only_where_it_draws_one() -> None:
    subjects = pd.DataFrame(
        {
            "subject": ["a", "b"],
            "ability_mean": [-1.0, 1.0],
            "ability_ci_low": [-1.5, 0.5],
            "ability_ci_high": [-0.5, 1.5],
        }
    )
    items = pd.DataFrame({"difficulty_mean": [-0.5, 0.2, 1.5], "benchmark": ["x", "x", "y"]})
    plain = plot_item_person_map(subjects, items)
    assert "target range" not in [t.get_text() for t in plain.get_legend().get_texts()]
    marked = plot_item_person_map(subjects, items, target_range=(-1.0, 1.0))
    assert "target range" in [t.get_text() for t in marked.get_legend().get_texts()]
