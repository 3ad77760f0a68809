"""Graded IRT numerics (irtbayes.core.irt, GRM and GPCM): direct formulas, stability, information, location."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.core import irt
from irtbayes.core.errors import SpecError

KINDS = ("grm", "gpcm")

#: Three items of 4, 2 and 3 categories, NaN-padded (GRM-ordered, so both kinds accept them).
A = np.array([1.3, 0.7, 2.1])
B = np.array([[-1.2, 0.1, 0.9], [0.4, np.nan, np.nan], [-0.5, 1.5, np.nan]])
K = np.array([4, 2, 3])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _direct_grm(theta: float, a: float, b: np.ndarray) -> np.ndarray:
    """P(Y = k) as the difference of cumulative sigmoids (fine at moderate values)."""
    b = b[~np.isnan(b)]
    above = np.concatenate([[1.0], _sigmoid(a * (theta - b)), [0.0]])
    return above[:-1] - above[1:]


def _direct_gpcm(theta: float, a: float, b: np.ndarray) -> np.ndarray:
    """P(Y = k) as a softmax of the cumulative step scores."""
    b = b[~np.isnan(b)]
    score = np.concatenate([[0.0], np.cumsum(a * (theta - b))])
    e = np.exp(score)
    return e / e.sum()


@pytest.mark.parametrize("kind", KINDS)
def test_probabilities_sum_to_one_and_vanish_on_padding(kind: str) -> None:
    theta = np.linspace(-4, 4, 9)[:, None]
    p = irt.graded_probabilities(theta, A, B, kind=kind)
    assert p.shape == (9, 3, 4)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
    padded = np.arange(4) >= K[:, None]  # (item, Kmax)
    assert np.all(p[:, padded] == 0.0), p[:, padded]
    assert np.all(p[:, ~padded] > 0.0)
    log_p = irt.graded_log_probabilities(theta, A, B, kind=kind)
    assert np.all(np.isneginf(log_p[:, padded])) and np.all(np.isfinite(log_p[:, ~padded]))


@pytest.mark.parametrize("kind", KINDS)
def test_broadcasting_over_draws(kind: str) -> None:
    rng = np.random.default_rng(0)
    n_draws, n_subjects = 5, 7
    theta = rng.normal(size=(n_draws, n_subjects))
    a = A * np.exp(0.1 * rng.normal(size=(n_draws, 3)))
    b = B + 0.05 * rng.normal(size=(n_draws, 3, 1))  # NaN padding kept, order kept
    log_p = irt.graded_log_probabilities(theta[..., None], a[:, None, :], b[:, None, :, :], kind=kind)
    assert log_p.shape == (n_draws, n_subjects, 3, 4)
    for d, s, i in [(0, 0, 0), (4, 6, 2), (2, 3, 1)]:
        expected = irt.graded_log_probabilities(theta[d, s], a[d, i], b[d, i], kind=kind)
        np.testing.assert_array_equal(log_p[d, s, i], expected)
    info = irt.graded_information(theta[..., None], a[:, None, :], b[:, None, :, :], kind=kind)
    score = irt.graded_expected_score(theta[..., None], a[:, None, :], b[:, None, :, :], kind=kind)
    assert info.shape == score.shape == (n_draws, n_subjects, 3)
    location = irt.graded_location(a, b, kind=kind)
    assert location.shape == (n_draws, 3)
    np.testing.assert_allclose(location[1, 2], irt.graded_location(a[1, 2], b[1, 2], kind=kind), atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_binary_item_is_the_2pl(kind: str) -> None:
    theta = np.linspace(-30, 30, 121)
    a, b = 1.7, 0.4
    p = irt.graded_probabilities(theta, a, [b], kind=kind)
    two_pl = irt.probability(theta, b, a)
    np.testing.assert_allclose(p[:, 1], two_pl, rtol=1e-13, atol=0)
    np.testing.assert_allclose(p[:, 0], irt.probability(-theta, -b, a), rtol=1e-13, atol=0)  # sigmoid(-eta)
    y = (theta > 0).astype(float)
    log_p, log_q = irt.log_probabilities(irt.linear_predictor(theta, b, a))
    got = irt.graded_log_likelihood(y, theta, a, [b], kind=kind)
    np.testing.assert_allclose(got, np.where(y == 1, log_p, log_q), rtol=1e-13, atol=0)
    # log_likelihood's y eta - log(1 + e^eta) agrees to rounding (absolute: it cancels where P is near 1)
    np.testing.assert_allclose(got, irt.log_likelihood(y, irt.linear_predictor(theta, b, a)), rtol=1e-13, atol=1e-14)
    q = irt.probability(-theta, -b, a)  # 1 - p without its cancellation
    np.testing.assert_allclose(irt.graded_information(theta, a, [b], kind=kind), a**2 * two_pl * q, rtol=1e-12)
    assert irt.graded_location(a, [b], kind=kind) == pytest.approx(b, abs=1e-9)


@pytest.mark.parametrize(("kind", "direct"), [("grm", _direct_grm), ("gpcm", _direct_gpcm)])
def test_probabilities_match_the_direct_formulas(kind: str, direct) -> None:
    b = B if kind == "grm" else np.array([[0.8, -0.6, 1.1], [0.4, np.nan, np.nan], [1.5, -0.5, np.nan]])  # reversed
    for theta in (-3.0, -0.7, 0.0, 0.5, 2.5):
        p = irt.graded_probabilities(theta, A, b, kind=kind)
        for i in range(3):
            np.testing.assert_allclose(p[i, : K[i]], direct(theta, A[i], b[i]), rtol=1e-12, atol=1e-15)


def test_grm_is_exact_and_finite_far_out() -> None:
    b = np.array([-1.0, 0.0, 2.0])
    for theta in (-40.0, 40.0, -400.0, 400.0):
        log_p = irt.graded_log_probabilities(theta, 1.0, b, kind="grm")
        assert np.all(np.isfinite(log_p)), (theta, log_p)
    # theta = 40: log P(Y = 2) = log(sigmoid(40) - sigmoid(38)) = -38 + log(1 - e^-2) + O(e^-38)
    log_p = irt.graded_log_probabilities(40.0, 1.0, b, kind="grm")
    assert log_p[2] == pytest.approx(-38.0 + np.log1p(-np.exp(-2.0)), rel=1e-14)
    assert log_p[1] == pytest.approx(-40.0 + np.log1p(-np.exp(-1.0)), rel=1e-14)
    log_p = irt.graded_log_probabilities(-40.0, 1.0, b, kind="grm")
    assert log_p[1] == pytest.approx(-39.0 + np.log1p(-np.exp(-1.0)), rel=1e-14)
    # thresholds a hair apart: the middle category's probability is the gap's, not cancellation noise
    log_p = irt.graded_log_probabilities(0.0, 1.0, [0.0, 1e-9], kind="grm")
    assert np.exp(log_p[1]) == pytest.approx(0.25 * 1e-9, rel=1e-6)


def test_gpcm_is_finite_far_out() -> None:
    for theta in (-40.0, 40.0, -400.0, 400.0):
        log_p = irt.graded_log_probabilities(theta, 1.5, [0.3, -0.2, 1.0], kind="gpcm")
        assert np.all(np.isfinite(log_p)), (theta, log_p)
        assert np.exp(log_p).sum() == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("kind", KINDS)
def test_expected_score_is_the_mean_category(kind: str) -> None:
    theta = np.linspace(-5, 5, 41)[:, None]
    p = irt.graded_probabilities(theta, A, B, kind=kind)
    score = irt.graded_expected_score(theta, A, B, kind=kind)
    np.testing.assert_allclose(score, (np.arange(4) * p).sum(axis=-1), rtol=1e-12, atol=1e-14)
    assert np.all(np.diff(score, axis=0) > 0) and np.all(score >= 0) and np.all(score <= K - 1)


@pytest.mark.parametrize("kind", KINDS)
def test_information_matches_finite_differences(kind: str) -> None:
    b = B if kind == "grm" else np.array([[0.8, -0.6, 1.1], [0.4, np.nan, np.nan], [1.5, -0.5, np.nan]])
    h = 1e-4
    for theta in (-2.5, -0.3, 0.0, 1.2, 3.0):
        info = irt.graded_information(theta, A, b, kind=kind)
        log_p = [irt.graded_log_probabilities(theta + d, A, b, kind=kind) for d in (-h, 0.0, h)]
        p = np.exp(log_p[1])
        with np.errstate(invalid="ignore"):  # -inf - -inf on padded categories, which have P = 0
            first = (log_p[2] - log_p[0]) / (2 * h)
            second = (log_p[2] - 2 * log_p[1] + log_p[0]) / h**2
        score_variance = np.where(p > 0, p * first**2, 0.0).sum(axis=-1)  # E[(d log P / d theta)^2]
        curvature = -np.where(p > 0, p * second, 0.0).sum(axis=-1)  # -E[d^2 log P / d theta^2]
        np.testing.assert_allclose(info, score_variance, rtol=1e-6, err_msg=f"theta={theta}")
        np.testing.assert_allclose(info, curvature, rtol=1e-4, err_msg=f"theta={theta}")
    # GPCM: a^2 Var(Y)
    if kind == "gpcm":
        p = irt.graded_probabilities(0.4, A, b, kind=kind)
        k = np.arange(4)
        mean = (k * p).sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(irt.graded_information(0.4, A, b, kind=kind), A**2 * (p * (k - mean) ** 2).sum(-1))


def test_information_stays_finite_where_probabilities_underflow() -> None:
    info = irt.graded_information(np.array([-900.0, 0.0, 900.0]), 1.0, [-1.0, 0.0, 1.0], kind="grm")
    assert np.all(np.isfinite(info)) and info[0] == 0.0 and info[2] == 0.0 and info[1] > 0


@pytest.mark.parametrize("kind", KINDS)
def test_location_is_where_the_expected_score_is_half_the_maximum(kind: str) -> None:
    rng = np.random.default_rng(3)
    n = 200
    a = np.exp(rng.normal(0.0, 0.8, n))
    steps = rng.lognormal(0.0, 0.5, (n, 4)) if kind == "grm" else rng.normal(0.5, 1.5, (n, 4))
    b = rng.normal(0.0, 2.0, (n, 1)) + np.cumsum(steps, axis=1)
    n_cat = rng.integers(2, 6, n)
    b[np.arange(4) >= (n_cat - 1)[:, None]] = np.nan
    location = irt.graded_location(a, b, kind=kind)
    score = irt.graded_expected_score(location, a, b, kind=kind)
    np.testing.assert_allclose(score, (n_cat - 1) / 2, rtol=0, atol=1e-9)
    # a root to 1e-8: the expected score crosses half its maximum within 1e-8 of the location
    below = irt.graded_expected_score(location - 1e-8, a, b, kind=kind)
    above = irt.graded_expected_score(location + 1e-8, a, b, kind=kind)
    assert np.all(below < (n_cat - 1) / 2) and np.all(above > (n_cat - 1) / 2)
    binary = n_cat == 2
    np.testing.assert_allclose(location[binary], b[binary, 0], atol=1e-9)


def test_location_of_symmetric_grm_thresholds_is_their_mean() -> None:
    centre = np.array([-1.3, 0.0, 2.2])
    b = centre[:, None] + np.array([[-1.5, -0.2, 0.2, 1.5], [-0.5, 0.5, np.nan, np.nan], [-2.0, 0.0, 2.0, np.nan]])
    location = irt.graded_location(np.array([0.5, 1.0, 3.0]), b, kind="grm")
    np.testing.assert_allclose(location, centre, atol=1e-9)
    # and the GPCM's too (its category probabilities are then symmetric about the mean)
    np.testing.assert_allclose(irt.graded_location(np.array([0.5, 1.0, 3.0]), b, kind="gpcm"), centre, atol=1e-9)


def test_location_widens_its_bracket_for_reversed_steps_and_flat_items() -> None:
    b = np.array([[3.0, -3.0, 2.5], [0.0, 0.1, -0.2]])
    a = np.array([0.05, 0.01])
    location = irt.graded_location(a, b, kind="gpcm")
    np.testing.assert_allclose(irt.graded_expected_score(location, a, b, kind="gpcm"), 1.5, atol=1e-9)
    assert np.isnan(irt.graded_location(np.array([0.0, np.nan]), b, kind="gpcm")).all()


@pytest.mark.parametrize("kind", KINDS)
def test_log_likelihood_indexes_the_categories(kind: str) -> None:
    theta = np.array([[-1.0], [0.5]])
    y = np.array([[3, 1, 0], [2, 0, 2]])
    log_p = irt.graded_log_probabilities(theta, A, B, kind=kind)
    got = irt.graded_log_likelihood(y, theta, A, B, kind=kind)
    np.testing.assert_array_equal(got, np.take_along_axis(log_p, y[..., None], axis=-1)[..., 0])
    np.testing.assert_array_equal(irt.graded_log_likelihood(y.astype(float), theta, A, B, kind=kind), got)
    assert irt.graded_log_likelihood(3, 0.0, A, B, kind=kind)[1] == -np.inf  # a code the item does not have
    with pytest.raises(ValueError, match="whole category codes"):
        irt.graded_log_likelihood(np.array([0.5, np.nan]), 0.0, 1.0, [0.0], kind=kind)
    with pytest.raises(ValueError, match=r"0\.\.3"):
        irt.graded_log_likelihood(4, 0.0, A, B, kind=kind)


def test_bad_thresholds_and_kinds_are_refused() -> None:
    with pytest.raises(SpecError, match="kind must be 'grm' or 'gpcm'"):
        irt.graded_probabilities(0.0, 1.0, [0.0], kind="2pl")
    with pytest.raises(ValueError, match="padding"):
        irt.graded_probabilities(0.0, 1.0, [0.0, np.nan, 1.0], kind="gpcm")
    with pytest.raises(ValueError, match="at least its first threshold"):
        irt.graded_probabilities(0.0, 1.0, [[0.0, 1.0], [np.nan, np.nan]], kind="gpcm")
    with pytest.raises(ValueError, match="must increase"):
        irt.graded_probabilities(0.0, 1.0, [1.0, 0.0], kind="grm")
    with pytest.raises(ValueError, match="last axis"):
        irt.graded_location(1.0, 0.5, kind="grm")
    # reversed steps are fine for the GPCM; tied GRM thresholds give an empty category
    assert np.isfinite(irt.graded_log_probabilities(0.0, 1.0, [1.0, 0.0], kind="gpcm")).all()
    assert irt.graded_probabilities(0.0, 1.0, [0.5, 0.5], kind="grm")[1] == 0.0


@pytest.mark.parametrize("kind", ["grm", "gpcm"])
def test_the_expected_score_s_slope_is_its_derivative(kind: str) -> None:
    theta = np.linspace(-3, 3, 13)[:, None]  # (grid, 1) against two items of 4 and 3 categories
    a = np.array([1.3, 0.7])
    b = np.array([[-1.0, 0.2, 1.5], [0.4, 0.9, np.nan]])
    score, slope = irt.graded_expected_score_slope(theta, a, b, kind=kind)
    np.testing.assert_allclose(score, irt.graded_expected_score(theta, a, b, kind=kind))
    h = 1e-5
    numeric = (
        irt.graded_expected_score(theta + h, a, b, kind=kind) - irt.graded_expected_score(theta - h, a, b, kind=kind)
    ) / (2 * h)
    np.testing.assert_allclose(slope, numeric, rtol=1e-6, atol=1e-9)
