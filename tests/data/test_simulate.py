"""Simulated responses: shapes, labels, missing share, the truth's scale, seeding."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import simulate_responses


def test_shapes_labels_and_missing_share():
    data, truth = simulate_responses(50, 100, n_benchmarks=5, n_domains=2, missing=0.2, seed=1)
    assert (data.n_subjects, data.n_items) == (50, 100)
    share = 1 - data.n_responses / (50 * 100)
    assert 0.17 < share < 0.23, f"missing share {share:.3f}, asked 0.2"
    assert data.is_binary
    assert list(data.benchmarks) == [f"bench{k:02d}" for k in range(5)]
    assert list(data.domains) == ["domain0", "domain1"]
    per_bench = data.items.groupby("benchmark")["domain"].nunique()
    assert (per_bench == 1).all(), "each benchmark must sit in one domain"
    assert list(truth["item"].values) == list(data.item_ids)
    assert list(truth["subject"].values) == list(data.subject_ids)
    assert np.allclose(truth["intercept"], -truth["discrimination"] * truth["difficulty"])


def test_truth_abilities_are_standardised_and_seeded():
    _, truth = simulate_responses(40, 10, seed=2)
    ability = truth["ability"].values
    assert abs(ability.mean()) < 1e-12 and abs(ability.std() - 1) < 1e-12, (ability.mean(), ability.std())
    again, truth2 = simulate_responses(40, 10, seed=2)
    other, _ = simulate_responses(40, 10, seed=3)
    assert np.array_equal(truth["difficulty"], truth2["difficulty"])
    assert not np.array_equal(again.values, other.values) or again.n_responses != other.n_responses


def test_kinds_dims_and_fractions():
    _, t1 = simulate_responses(20, 30, kind="1pl", seed=4)
    assert np.ptp(t1["discrimination"].values) == 0, "1PL items share one discrimination"
    _, t3 = simulate_responses(20, 30, kind="3pl", n_options=5, seed=4)
    assert 0.1 < float(t3["guessing"].mean()) < 0.3, float(t3["guessing"].mean())
    _, t2 = simulate_responses(30, 40, n_benchmarks=4, n_domains=2, dims="domain", seed=5)
    assert t2["ability"].dims == ("subject", "dim") and list(t2["dim"].values) == ["domain0", "domain1"]
    frac, _ = simulate_responses(20, 30, n_trials=4, seed=6)
    assert not frac.is_binary and set(np.unique(frac.values)) <= {0, 0.25, 0.5, 0.75, 1}


def test_accuracy_follows_difficulty():
    data, truth = simulate_responses(300, 40, missing=0.0, seed=7)
    p = data.to_matrix().mean(axis=0)
    rho = np.corrcoef(p, truth["difficulty"].values)[0, 1]
    assert rho < -0.8, f"item accuracy vs difficulty correlation {rho:.2f}"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "4pl"}, "kind"),
        ({"missing": 0.95}, "missing"),
        ({"n_benchmarks": 2, "n_domains": 3}, "n_domains"),
        ({"dims": "domain"}, "n_domains >= 2"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(SpecError, match=message):
        simulate_responses(10, 10, **kwargs)
