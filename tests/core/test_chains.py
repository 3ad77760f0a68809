"""The vectorised r-hat and ESS equal arviz-stats' values, parameter by parameter."""

from __future__ import annotations

import warnings

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr

from irtbayes.core import chains
from irtbayes.core.chains import ess_bulk, ess_tail, rank_diagnostics, rhat_rank, tail_probs
from irtbayes.fitting.diagnostics.convergence import rank_diagnostics_datasets


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
        "NaN draws": _with_nan(_ar(rng, 4, 200, 4, 0.5)),
    }


def _with_nan(x: np.ndarray) -> np.ndarray:
    """The draws with a NaN in the second parameter (an interrupted chain padded with NaN) and one in the
    last parameter's first draw: their diagnostics must be NaN, the others' unchanged."""
    x = x.copy()
    x[1, 150:, 1] = np.nan
    x[0, 0, -1] = np.nan
    return x


@pytest.mark.parametrize("name", list(_cases()))
def test_equals_arviz_stats(name: str) -> None:
    """Defaults: tail ESS at the ends of the 90% interval, arviz-stats' ``prob=(0.05, 0.95)``."""
    x = _cases()[name]
    da = xr.DataArray(x, dims=("chain", "draw", "p"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = (
            azs.rhat(da).values,
            azs.ess(da, method="bulk").values,
            azs.ess(da, method="tail", prob=(0.05, 0.95)).values,
        )
        got = (rhat_rank(x), ess_bulk(x), ess_tail(x))
        together = rank_diagnostics(x)
    for label, want, have, joint in zip(("r-hat", "bulk ESS", "tail ESS"), expected, got, together, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-9, err_msg=f"{name}: {label}")
        np.testing.assert_allclose(joint, want, rtol=1e-9, atol=1e-9, err_msg=f"{name}: {label} (together)")


@pytest.mark.parametrize("ci_prob", [0.5, 0.8, 0.89, 0.95, 0.99])
@pytest.mark.parametrize("name", ["strongly autocorrelated", "antithetic, odd draws", "ties (discrete)"])
def test_tail_ess_at_the_ends_of_the_interval_equals_arviz_stats(name: str, ci_prob: float) -> None:
    x = _cases()[name]
    da = xr.DataArray(x, dims=("chain", "draw", "p"))
    low, high = tail_probs(ci_prob)
    assert low == pytest.approx((1 - ci_prob) / 2, abs=1e-12) and high == pytest.approx((1 + ci_prob) / 2, abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = azs.ess(da, method="tail", prob=(low, high)).values
        have, joint = ess_tail(x, ci_prob=ci_prob), rank_diagnostics(x, ci_prob=ci_prob)[2]
    np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-9, err_msg=f"{name}, ci_prob {ci_prob}")
    np.testing.assert_allclose(joint, want, rtol=1e-9, atol=1e-9, err_msg=f"{name}, ci_prob {ci_prob} (together)")


def test_tail_ess_depends_on_the_interval() -> None:
    """The 0.05/0.95 quantiles are not arviz-stats' default 0.11/0.89: the tail ESS differs, and only the
    quantiles of the reported interval match."""
    x = _ar(np.random.default_rng(5), 4, 400, 6, 0.8)
    da = xr.DataArray(x, dims=("chain", "draw", "p"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = azs.ess(da, method="tail").values
    assert not np.allclose(ess_tail(x), default, rtol=1e-6), "tail ESS at 0.05/0.95 equals the 0.11/0.89 one"
    assert not np.allclose(ess_tail(x, ci_prob=0.5), ess_tail(x), rtol=1e-6)


@pytest.mark.parametrize("ci_prob", [0.0, 1.0, -0.2, 1.5])
def test_tail_probs_reject_a_bad_interval(ci_prob: float) -> None:
    with pytest.raises(ValueError, match="ci_prob"):
        tail_probs(ci_prob)


def test_chunks_and_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    x = _ar(rng, 3, 120, 10, 0.6).reshape(3, 120, 2, 5)
    whole = rank_diagnostics(x)
    monkeypatch.setattr(chains, "CHUNK_PARAMETERS", 3)
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


def test_compiled_and_array_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled path (autocovariances lag by lag) and the array path (FFT) give the same values, and a
    parameter goes to the array path only when Geyer's sequence runs past MAX_LAG lags."""
    cases = _cases()
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=(2, 1000, 6)), _ar(rng, 2, 1000, 3, 0.99)], axis=2)
    part = np.ascontiguousarray(np.moveaxis(x, 2, 0))
    out, direct = np.empty((3, part.shape[0])), np.ones(part.shape[0], dtype=bool)
    orders = np.argsort(part.reshape(len(part), -1), axis=1)
    table = chains._rank_table(part.shape[1] * 2 * (part.shape[2] // 2))
    chains._diagnose(part, orders, 0.05, 0.95, table, chains.MAX_LAG, out, direct)
    assert direct[:6].all() and not direct[6:].all()  # independent draws stop early; phi = 0.99 does not
    for name in ("strongly autocorrelated", "antithetic, odd draws", "ties (discrete)", "one chain", "NaN draws"):
        compiled = rank_diagnostics(cases[name])
        monkeypatch.setattr(chains, "MAX_LAG", 0)  # every parameter through the FFT path
        array = rank_diagnostics(cases[name])
        monkeypatch.undo()
        for a, b in zip(compiled, array, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
