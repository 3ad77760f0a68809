"""IRT numerics (irtbayes.core.irt): exact values, stability at extreme predictors, grid posteriors."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.core import irt


def test_probability_is_the_3pl_formula_and_broadcasts() -> None:
    theta = np.linspace(-3, 3, 7)[:, None]
    b, a, c = np.array([-1.0, 0.5]), np.array([0.8, 2.0]), np.array([0.2, 0.0])
    expected = c + (1 - c) / (1 + np.exp(-a * (theta - b)))
    got = irt.probability(theta, b, a, c)
    assert got.shape == (7, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)
    np.testing.assert_allclose(irt.probability(theta, b), 1 / (1 + np.exp(-(theta - b))), rtol=1e-14)


def test_log_probabilities_are_exact_and_finite_at_extremes() -> None:
    eta = np.array([-800.0, -30.0, 0.0, 30.0, 800.0])
    log_p, log_q = irt.log_probabilities(eta)
    assert np.all(np.isfinite(log_p)) and np.all(np.isfinite(log_q))
    assert log_p[0] == -800.0 and log_q[-1] == -800.0  # log sigmoid(eta) -> eta far in the tail
    np.testing.assert_allclose(np.exp(log_p) + np.exp(log_q), 1.0, rtol=1e-15)
    c = 0.25
    log_p3, log_q3 = irt.log_probabilities(eta, c)
    np.testing.assert_allclose(np.exp(log_p3), irt.sigmoid_mix(eta, c), rtol=1e-14)
    assert log_p3[0] == pytest.approx(np.log(c)) and log_q3[0] == pytest.approx(np.log1p(-c))


def test_log_likelihood_weights_fractional_scores() -> None:
    eta, y = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.0, 0.4])
    p = 1 / (1 + np.exp(-eta))
    expected = y * np.log(p) + (1 - y) * np.log1p(-p)
    np.testing.assert_allclose(irt.log_likelihood(y, eta), expected, rtol=1e-13)


def test_grid_posterior_matches_a_conjugate_case_and_sampling_follows_it() -> None:
    grid = np.linspace(-6, 6, 1201)
    # a Gaussian "likelihood" N(x | theta, 0.5^2) with x = 1 under the N(0, 1) prior: posterior N(0.8, 0.2)
    log_lik = (-0.5 * ((grid - 1.0) / 0.5) ** 2)[:, None]
    prob = irt.grid_posterior(log_lik, grid)
    assert prob.shape == (1201, 1) and prob.sum() == pytest.approx(1.0)
    mean = float((prob[:, 0] * grid).sum())
    var = float((prob[:, 0] * (grid - mean) ** 2).sum())
    assert mean == pytest.approx(0.8, abs=1e-6) and var == pytest.approx(0.2, abs=1e-5)
    rng = np.random.default_rng(4)
    draws = np.array([irt.sample_grid(prob, grid, rng)[0] for _ in range(4000)])
    assert draws.mean() == pytest.approx(0.8, abs=0.03), draws.mean()
    assert draws.var() == pytest.approx(0.2, abs=0.02), draws.var()


@pytest.mark.parametrize("n_draws", [3, 500])  # compared at once, and searched row by row
def test_sample_cells_draws_the_cells_numpy_choice_draws(n_draws: int) -> None:
    weights = np.random.default_rng(1).random((4, 30)) ** 6
    weights[1, :10] = 0.0  # cells of probability 0 are never drawn
    ours, theirs = np.random.default_rng(2), np.random.default_rng(2)
    cells = irt.sample_cells(weights * 7.0, n_draws, ours)
    expected = [theirs.choice(30, size=n_draws, p=w / w.sum()) for w in weights]
    np.testing.assert_array_equal(cells, np.stack(expected))
    assert cells[1].min() >= 10
    assert ours.random() == theirs.random(), "one uniform per draw, as numpy's choice"


def test_grid_draws_follow_a_two_dimensional_grid_posterior_within_its_cells() -> None:
    # one grid per row, each on its own points: independent N(1, 0.5^2) x N(-2, 1), and N(1.5, 0.5^2) x N(-2, 1)
    b = np.linspace(-1.5, 3.5, 51)[None, :] + np.array([[0.0], [0.5]])
    a = np.linspace(-7.0, 3.0, 41)[None, :].repeat(2, axis=0)
    centre = np.array([1.0, 1.5])[:, None, None]
    log_post = -0.5 * ((b[:, :, None] - centre) / 0.5) ** 2 - 0.5 * (a[:, None, :] + 2.0) ** 2
    prob = irt.grid_probabilities(log_post, axis=(1, 2))
    np.testing.assert_allclose(prob.sum(axis=(1, 2)), 1.0, rtol=1e-14)
    draws_b, draws_a = irt.grid_draws(prob.reshape(2, -1), (b, a), 20_000, np.random.default_rng(3))
    assert draws_b.shape == draws_a.shape == (2, 20_000)
    np.testing.assert_allclose(draws_b.mean(axis=1), [1.0, 1.5], atol=0.02)
    np.testing.assert_allclose(draws_a.mean(axis=1), -2.0, atol=0.04)
    np.testing.assert_allclose(draws_b.std(axis=1), np.sqrt(0.25 + 0.1**2 / 12), rtol=0.03)  # grid + jitter
    np.testing.assert_allclose(draws_a.std(axis=1), np.sqrt(1.0 + 0.25**2 / 12), rtol=0.03)
    assert abs(np.corrcoef(draws_b[0], draws_a[0])[0, 1]) < 0.03
    assert draws_b[1].min() >= b[1, 0] - 0.05 and draws_b[1].max() <= b[1, -1] + 0.05  # within the row's cells


def test_jitter_cells_uses_the_widths_it_is_given() -> None:
    points = np.array([[0.0, 1.0, 3.0]])
    index = np.array([[2] * 2000])
    values = irt.jitter_cells(points, index, np.random.default_rng(5), width=np.array([1.0, 1.5, 2.0]))
    assert 2.0 <= values.min() and values.max() <= 4.0 and values.max() - values.min() > 1.9
    fixed = irt.jitter_cells(np.array([[0.7]]), np.zeros((1, 5), dtype=int), np.random.default_rng(5))
    assert np.all(fixed == 0.7), "a grid of one point has cells of width 0"
