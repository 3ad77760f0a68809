"""Audit targets: the default range rule, the target kinds, target files, and clear errors for bad settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irtbayes.auditing.targets import (
    Target,
    bin_edges,
    check_range_holds_subjects,
    default_range,
    group_target,
    read_target,
    uniform_target,
    weights_target,
)
from irtbayes.core.errors import SpecError


def test_default_range_is_pooled_quantiles_widened_and_rounded_outward() -> None:
    draws = np.linspace(-1.0, 1.0, 4001)  # 2.5% and 97.5% quantiles: -0.95 and 0.95
    lo, hi = default_range(draws.reshape(4001, 1))
    assert (lo, hi) == (-1.5, 1.5), (lo, hi)
    lo, hi = default_range(np.linspace(-1.03, 1.21, 4001))  # quantiles -0.974, 1.154 -> widened -1.474, 1.654
    assert (lo, hi) == (-1.5, 1.7), (lo, hi)


def test_uniform_target_has_equal_weights_and_unequal_edges_get_width_weights() -> None:
    t = uniform_target(-2, 2, bins=8)
    assert t.n_bins == 8 and t.weights == pytest.approx((0.125,) * 8) and t.lo == -2 and t.hi == 2
    uneven = uniform_target(0, 4, bins=[0, 1, 4])
    assert uneven.weights == pytest.approx((0.25, 0.75)), uneven.weights
    d = t.to_dict()
    assert set(d) == {"kind", "description", "range", "bins", "edges", "weights"} and d["kind"] == "uniform"


def test_weights_are_normalised_and_labelled() -> None:
    t = weights_target([1, 3], lo=0, hi=1)
    assert t.weights == pytest.approx((0.25, 0.75)) and t.edges == pytest.approx((0.0, 0.5, 1.0))
    assert t.bin_label(0) == "[0.00, 0.50)" and t.bin_label(1) == "[0.50, 1.00]"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: uniform_target(0, 1, bins=0), "at least 1"),
        (lambda: uniform_target(1, 1), "L < U"),
        (lambda: uniform_target(2, 1), "L < U"),
        (lambda: weights_target([0, 0, 0], lo=0, hi=1), "sum to a positive"),
        (lambda: weights_target([1, -1, 1], lo=0, hi=1), "negative"),
        (lambda: weights_target([1, float("nan")], lo=0, hi=1), "finite"),
        (lambda: weights_target([1, 1], lo=0, hi=1, bins=3), "2 target weight"),
        (lambda: bin_edges(0, 1, [0, 0.5, 0.5, 1]), "increase strictly"),
        (lambda: bin_edges(0, 1, [0, 0.5, 2]), "span"),
        (lambda: Target(edges=(0.0,), weights=()), "at least two"),
    ],
)
def test_bad_target_settings_raise_spec_errors(make: object, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        make()  # type: ignore[operator]


def test_a_range_with_no_subject_is_refused() -> None:
    t = uniform_target(3, 5)
    with pytest.raises(SpecError, match=r"holds no subject.*\[-1, 1\]"):
        check_range_holds_subjects(t, np.array([-1.0, 0.0, 1.0]), ["a", "b", "c"])
    check_range_holds_subjects(t, np.array([-1.0, 4.0]), ["a", "b"])  # one inside is enough


def test_group_target_is_the_pooled_share_of_the_groups_draws_per_bin() -> None:
    draws = np.array([[0.1, 0.6], [0.2, 0.7], [0.3, 1.6], [-0.5, 0.8]])  # (draw, subject); two draws outside
    t = group_target(draws, lo=0, hi=1, bins=2, names=["x", "y"])
    assert t.kind == "group" and t.weights == pytest.approx((0.5, 0.5)), t.weights
    with pytest.raises(SpecError, match="no posterior ability draw"):
        group_target(np.full((3, 2), 5.0), lo=0, hi=1, bins=2, names=["x", "y"])


def test_target_file_round_trip_and_errors_name_the_line(tmp_path: Path) -> None:
    t = weights_target([1, 2, 3, 4], lo=-1, hi=1)
    path = tmp_path / "target.csv"
    t.to_frame().to_csv(path, index=False)
    back = read_target(path)
    assert back.edges == pytest.approx(t.edges) and back.weights == pytest.approx(t.weights) and back.kind == "file"

    (tmp_path / "gap.csv").write_text("lo,hi,weight\n0,1,1\n1.5,2,1\n")
    with pytest.raises(SpecError, match=r"gap.csv: line 3.*does not meet"):
        read_target(tmp_path / "gap.csv")
    (tmp_path / "word.csv").write_text("lo,hi,weight\n0,1,one\n")
    with pytest.raises(SpecError, match=r"line 2, column 'weight'"):
        read_target(tmp_path / "word.csv")
    (tmp_path / "cols.csv").write_text("a,b\n0,1\n")
    with pytest.raises(SpecError, match=r"missing column"):
        read_target(tmp_path / "cols.csv")
    (tmp_path / "neg.csv").write_text("lo,hi,weight\n0,1,-1\n1,2,2\n")
    with pytest.raises(SpecError, match=r"neg.csv: .*negative"):
        read_target(tmp_path / "neg.csv")
    (tmp_path / "noweight.csv").write_text("lo,hi\n0,1\n1,3\n")
    assert read_target(tmp_path / "noweight.csv").weights == pytest.approx((0.5, 0.5))
    with pytest.raises(SpecError, match="no such target file"):
        read_target(tmp_path / "absent.csv")
