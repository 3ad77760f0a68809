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
