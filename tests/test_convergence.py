"""The vectorised r-hat and ESS equal arviz-stats' values, parameter by parameter."""

from __future__ import annotations

import warnings

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr

from irtbayes import convergence
from irtbayes.convergence import ess_bulk, ess_tail, rank_diagnostics, rhat_rank
from irtbayes.diagnostics import rank_diagnostics_datasets


def _ar(rng: np.random.Generator, chains: int, draws: int, params: int, phi: float) -> np.ndarray:
    x = np.zeros((chains, draws, params))
    noise = rng.normal(size=x.shape)
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "strongly autocorrelated": _ar(rng, 4, 500, 12, 0.9),
        "antithetic, odd draws": _ar(rng, 4, 301, 8, -0.3),
        "independent": rng.normal(size=(2, 100, 6)),
        "chains disagree": _ar(rng, 4, 200, 6, 0.5) + np.arange(4)[:, None, None] * 0.3,
        "ties (discrete)": rng.integers(0, 3, size=(4, 200, 6)).astype(float),
        "constant": np.ones((4, 50, 3)),
        "one chain": _ar(rng, 1, 400, 4, 0.7),
        "very short": rng.normal(size=(2, 9, 4)),
        "nearly stuck": _ar(rng, 4, 1000, 4, 0.99),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_equals_arviz_stats(name: str) -> None:
    x = _cases()[name]
    da = xr.DataArray(x, dims=("chain", "draw", "p"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = (azs.rhat(da).values, azs.ess(da, method="bulk").values, azs.ess(da, method="tail").values)
        got = (rhat_rank(x), ess_bulk(x), ess_tail(x))
        together = rank_diagnostics(x)
    for label, want, have, joint in zip(("r-hat", "bulk ESS", "tail ESS"), expected, got, together, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-9, err_msg=f"{name}: {label}")
        np.testing.assert_allclose(joint, want, rtol=1e-9, atol=1e-9, err_msg=f"{name}: {label} (together)")


def test_chunks_and_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    x = _ar(rng, 3, 120, 10, 0.6).reshape(3, 120, 2, 5)
    whole = rank_diagnostics(x)
    monkeypatch.setattr(convergence, "CHUNK_PARAMETERS", 3)
    chunked = rank_diagnostics(x)
    for a, b in zip(whole, chunked, strict=True):
        assert a.shape == (2, 5)
        np.testing.assert_array_equal(a, b)


def test_datasets_keep_dims_and_coords() -> None:
    rng = np.random.default_rng(2)
    post = xr.Dataset(
        {
            "difficulty": (("chain", "draw", "item"), rng.normal(size=(2, 50, 3))),
            "mu": (("chain", "draw"), rng.normal(size=(2, 50))),
        },
        coords={"item": ["a", "b", "c"]},
    )
    rhat, bulk, tail = rank_diagnostics_datasets(post)
    assert list(rhat["difficulty"]["item"].values) == ["a", "b", "c"]
    assert rhat["mu"].shape == () and bulk["mu"].shape == () and tail["difficulty"].dims == ("item",)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(bulk["difficulty"].values, azs.ess(post["difficulty"], method="bulk").values)
