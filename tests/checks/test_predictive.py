"""Model checks on hand-built posteriors (no sampling): quasi-likelihoods are stated, PSIS-LOO keeps its precision,
item-rest correlations of items answered alike are NaN."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.checks.predictive import QUASI_LIKELIHOOD_NOTE, compare_fits, log_likelihood, posterior_predictive_check
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.diagnostics.verdict import Diagnostics
from irtbayes.fitting.result import Fit
from irtbayes.model.spec import ModelSpec

# ------------------------------------------------------------------------------------------- quasi-likelihood
N_SUBJECTS, N_ITEMS = 12, 6


def _data(*, fractional: bool) -> ResponseData:
    rng = np.random.default_rng(21)
    ability = rng.normal(size=N_SUBJECTS)
    difficulty = np.linspace(-1, 1, N_ITEMS)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    y = np.clip(rng.beta(4 * p, 4 * (1 - p)), 0.01, 0.99) if fractional else (rng.random(p.shape) < p).astype(float)
    frame = pd.DataFrame(
        {
            "subject": np.repeat([f"s{i:02d}" for i in range(N_SUBJECTS)], N_ITEMS),
            "item": np.tile([f"q{j}" for j in range(N_ITEMS)], N_SUBJECTS),
            "response": y.ravel(),
            "benchmark": "bench",
        }
    )
    return ResponseData.from_long(frame, source="hand-built")


def _fit(data: ResponseData, *, seed: int, slope: float = 1.0) -> Fit:
    rng = np.random.default_rng(seed)
    chains, draws = 2, 100
    post = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), rng.normal(0, 0.3, size=(chains, draws, N_SUBJECTS))),
            "difficulty": (("chain", "draw", "item"), rng.normal(0, 0.2, size=(chains, draws, N_ITEMS))),
            "discrimination": (("chain", "draw", "item"), np.full((chains, draws, N_ITEMS), slope)),
        },
        coords={"subject": data.subject_ids.to_numpy(dtype=str), "item": data.item_ids.to_numpy(dtype=str)},
    )
    diagnostics = Diagnostics(ok=True, approximate=False, thresholds={"rhat_max": 1.01, "ess_min": 400.0})
    return Fit(
        idata=xr.DataTree.from_dict({"posterior": post}),
        spec=ModelSpec(kind="2pl"),
        sampler={"name": "hand-built", "approximate": False},
        data_checksum=data.checksum(),
        diagnostics=diagnostics,
    )


def test_predictive_check_states_the_quasi_likelihood() -> None:
    data = _data(fractional=True)
    assert not data.is_binary
    with pytest.warns(UserWarning, match="fractional-logit quasi-likelihood") as record:
        check = posterior_predictive_check(_fit(data, seed=1), data, n_draws=50, seed=1)
    assert len(record) == 1
    assert check.quasi_likelihood and len(check.notes) == 1 and check.notes[0].startswith(QUASI_LIKELIHOOD_NOTE)
    assert "LOO/ELPD values are not comparable with fits to binary responses" in check.to_text()
    assert check.items.attrs["likelihood"] == "fractional-logit quasi-likelihood"
    assert check.subjects.attrs["notes"] == check.notes
    # only the item mean flags misfit: 0/1 replications cannot be compared with fractional item-rest relations
    p = check.items["p_value_mean"]
    alpha = check.alpha
    np.testing.assert_array_equal(check.items["misfit"], (p < alpha / 2) | (p > 1 - alpha / 2))


def test_binary_predictive_check_and_loo_say_bernoulli_without_warning() -> None:
    data = _data(fractional=False)
    assert data.is_binary
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        check = posterior_predictive_check(_fit(data, seed=2), data, n_draws=50, seed=1)
        ll = log_likelihood(_fit(data, seed=2), data, n_draws=50)
    assert not check.quasi_likelihood and check.notes == [] and "Note:" not in check.to_text()
    assert check.items.attrs["likelihood"] == "bernoulli"
    assert ll.attrs == {"likelihood": "bernoulli", "quasi_likelihood": 0}


def test_log_likelihood_and_loo_state_the_quasi_likelihood() -> None:
    data = _data(fractional=True)
    with pytest.warns(UserWarning, match="not comparable with fits to binary responses"):
        ll = log_likelihood(_fit(data, seed=3), data, n_draws=50)
    assert ll.attrs["quasi_likelihood"] == 1 and ll.attrs["note"] == QUASI_LIKELIHOOD_NOTE
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        table = compare_fits({"a": _fit(data, seed=4), "b": _fit(data, seed=5, slope=0.5)}, data, n_draws=200)
    quasi = [w for w in record if "quasi-likelihood" in str(w.message)]
    assert len(quasi) == 1, [str(w.message) for w in record]
    assert table.attrs["likelihood"] == "fractional-logit quasi-likelihood"
    assert table.attrs["note"] == QUASI_LIKELIHOOD_NOTE
    assert set(table.index) == {"a", "b"} and np.isfinite(table["elpd"]).all()


def test_compare_fits_keeps_full_precision() -> None:
    """compare_fits reports PSIS-LOO's elpd unrounded (arviz-stats rounds by default), so differences are exact."""
    data = _data(fractional=False)
    fits = {"a": _fit(data, seed=4), "b": _fit(data, seed=5, slope=0.5)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = compare_fits(fits, data, n_draws=200)
    elpd = table["elpd"].astype(float)
    assert (elpd != elpd.round(2)).all(), elpd
    best = elpd.idxmax()
    np.testing.assert_allclose(table["elpd_diff"].abs(), (elpd[best] - elpd).abs(), rtol=0, atol=1e-9)


def test_item_rest_correlation_of_an_item_answered_alike_is_nan_not_infinite() -> None:
    from irtbayes.checks.predictive import _item_rest_corr

    rng = np.random.default_rng(0)
    y = (rng.random((40, 6)) < 0.6).astype(float)
    y[:, 0] = 1.0  # everyone right
    y[:, 1] = 0.0  # everyone wrong
    s, i = np.repeat(np.arange(40), 6), np.tile(np.arange(6), 40)
    corr = _item_rest_corr(y.ravel(), s, i, 40, 6)
    assert np.isnan(corr[:2]).all() and np.isfinite(corr[2:]).all()
    rest = (y.sum(axis=1, keepdims=True) - y) / 5
    expected = [np.corrcoef(y[:, k], rest[:, k])[0, 1] for k in range(2, 6)]
    np.testing.assert_allclose(corr[2:], expected, rtol=1e-12)
