"""Saved fits: float32 posterior draws, only what later steps read, old float64 fits still load.

No sampling: a hand-built fit (simulated 2PL responses, draws = truth + known scatter) with the groups and the
sample statistics nutpie records.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.auditing.run import audit
from irtbayes.core.errors import FitError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.result import FORMAT_VERSION, Fit, as_held, derived_names, fit_constant_data
from irtbayes.fitting.storage import _card_checksum, _sha256, load_fit, save_fit
from irtbayes.model.build import add_derived
from irtbayes.model.spec import ModelSpec

KEPT_STATS = ["diverging", "energy", "maxdepth_reached", "n_steps"]
OTHER_STATS = ["step_size", "logp", "tuning", "divergence_message"]


@pytest.fixture(scope="module")
def hand_built() -> tuple[ResponseData, Fit]:
    data, truth = simulate_responses(40, 120, kind="2pl", n_benchmarks=2, n_domains=1, seed=5)
    chains, draws = 2, 150
    shape = (chains, draws)
    rng = np.random.default_rng(7)
    posterior = posterior_near_truth(data, truth, chains=chains, draws=draws, seed=6)
    spec = ModelSpec(kind="2pl", hierarchy="none")
    posterior = add_derived(posterior, spec)
    stats = xr.Dataset(
        {
            "diverging": (("chain", "draw"), rng.random(shape) < 0.01),
            "maxdepth_reached": (("chain", "draw"), np.zeros(shape, dtype=bool)),
            # nutpie's energies are large numbers whose differences matter (E-BFMI)
            "energy": (("chain", "draw"), 1.0e5 + rng.normal(0.0, 20.0, shape)),
            "n_steps": (("chain", "draw"), np.full(shape, 15, dtype="uint64")),
            "step_size": (("chain", "draw"), np.full(shape, 0.21)),
            "logp": (("chain", "draw"), -1.0e5 + rng.normal(0.0, 20.0, shape)),
            "tuning": (("chain", "draw"), np.zeros(shape, dtype=bool)),
            "divergence_message": (("chain", "draw"), np.full(shape, "", dtype=object)),
        },
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )
    tree = xr.DataTree.from_dict(
        {"posterior": posterior, "sample_stats": stats, "constant_data": fit_constant_data(data)}
    )
    tree.attrs.update({"sampler": "nutpie", "approximate": 0, "data_checksum": data.checksum()})
    fitted = Fit(
        idata=tree,
        spec=spec,
        sampler={"name": "nutpie", "chains": chains, "draws": draws, "tune": 0, "seed": 6, "approximate": False},
        data_checksum=data.checksum(),
        diagnostics=check_convergence(tree),
    )
    return data, fitted


def save_float64(result: Fit, folder: Path) -> Path:
    """A fit written as irtbayes wrote it before float32 storage: every group, float64, no ``storage`` in the card."""
    folder.mkdir(parents=True)
    post = result.posterior.drop_vars([n for n in derived_names(result.spec) if n in result.posterior])
    groups = {"posterior": post} | {n: result.idata[n].to_dataset() for n in result.idata.children if n != "posterior"}
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(result.idata.attrs)
    tree.attrs["format_version"] = FORMAT_VERSION
    tree.attrs["data_checksum"] = result.data_checksum
    tree.to_netcdf(folder / "posterior.nc", engine="h5netcdf")
    card = result.card()
    card["posterior_sha256"] = _sha256(folder / "posterior.nc")
    card["card_sha256"] = _card_checksum(card)
    (folder / "card.json").write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    return folder


def on_disk(path: Path, group: str) -> xr.Dataset:
    with xr.open_dataset(path / "posterior.nc", group=group, engine="h5netcdf") as ds:
        return ds.load()


def test_round_trip_keeps_the_draws_to_float32_precision(hand_built: tuple[ResponseData, Fit], tmp_path: Path) -> None:
    _, fitted = hand_built
    loaded = load_fit(save_fit(fitted, tmp_path / "fit"))
    stored = on_disk(tmp_path / "fit", "posterior")
    assert sorted(stored.data_vars) == sorted(v for v in fitted.posterior.data_vars if v != "intercept")
    for name, var in fitted.posterior.data_vars.items():
        if name != "intercept":
            assert stored[name].dtype == np.float32, (name, stored[name].dtype)
        got = loaded.posterior[name]
        held = np.float32 if "item" in var.dims else np.float64  # as a fit holds its draws (as_held)
        assert got.dtype == held, (name, got.dtype)
        assert got.dims == var.dims
        assert list(got["chain"].values) == list(var["chain"].values)
        if name == "intercept":  # recomputed on load from the stored float32 values
            expected = add_derived(as_held(stored), fitted.spec)["intercept"].values
            np.testing.assert_array_equal(got.values, expected)
            np.testing.assert_allclose(got.values, var.values, rtol=4 * np.finfo(np.float32).eps)
        else:  # exactly the float32 rounding of each value
            np.testing.assert_array_equal(got.values, var.values.astype(np.float32).astype(held), err_msg=name)
    # the CSV tables summarise the draws as stored: they agree with the loaded fit, not only with the original
    saved_items = pd.read_csv(tmp_path / "fit" / "items.csv")
    saved_subjects = pd.read_csv(tmp_path / "fit" / "subjects.csv")
    for column in ("difficulty_mean", "difficulty_ci_low", "discrimination_sd", "intercept_mean"):
        np.testing.assert_array_equal(saved_items[column], loaded.items_table()[column], err_msg=column)
    np.testing.assert_array_equal(saved_subjects["ability_mean"], loaded.subjects_table()["ability_mean"])
    np.testing.assert_array_equal(loaded.item_ids, fitted.item_ids)
    np.testing.assert_array_equal(loaded.subject_ids, fitted.subject_ids)
    xr.testing.assert_identical(loaded.constant_data, fitted.constant_data)


def test_the_card_records_the_storage_and_its_checksum_holds(
    hand_built: tuple[ResponseData, Fit], tmp_path: Path
) -> None:
    _, fitted = hand_built
    folder = save_fit(fitted, tmp_path / "fit")
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert card["storage"] == {
        "dtype": "float32",
        "compression": "none",
        "dropped": [f"sample_stats/{n}" for n in OTHER_STATS],
    }, card["storage"]
    packed = save_fit(fitted, tmp_path / "packed", compress=True)  # the same draws, zlib-compressed
    assert json.loads((packed / "card.json").read_text(encoding="utf-8"))["storage"]["compression"] == (
        "zlib level 1, shuffle"
    )
    assert (packed / "posterior.nc").stat().st_size < (folder / "posterior.nc").stat().st_size
    xr.testing.assert_identical(load_fit(packed).posterior, load_fit(folder).posterior)
    assert card["posterior_sha256"] == _sha256(folder / "posterior.nc")
    loaded = load_fit(folder)
    assert loaded.info["storage"] == card["storage"]
    with (folder / "posterior.nc").open("r+b") as handle:  # a changed byte is still caught
        handle.seek(-100, 2)
        byte = handle.read(1)
        handle.seek(-100, 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(FitError, match="truncated or edited after it was saved"):
        load_fit(folder)


def test_what_no_later_step_reads_is_not_saved(hand_built: tuple[ResponseData, Fit], tmp_path: Path) -> None:
    _, fitted = hand_built
    extra = Fit(
        idata=fitted.idata.copy(),
        spec=fitted.spec,
        sampler=fitted.sampler,
        data_checksum=fitted.data_checksum,
        diagnostics=fitted.diagnostics,
    )
    extra.idata["warmup_posterior"] = xr.DataTree(fitted.posterior[["ability"]])
    folder = save_fit(extra, tmp_path / "fit")
    with xr.open_datatree(folder / "posterior.nc", engine="h5netcdf") as tree:
        assert sorted(tree.children) == ["constant_data", "posterior", "sample_stats"]
        assert sorted(tree["sample_stats"].data_vars) == sorted(KEPT_STATS)
        assert tree["sample_stats"]["energy"].dtype == np.float64  # differences of ~1e5 values: kept float64
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert card["storage"]["dropped"] == [f"sample_stats/{n}" for n in OTHER_STATS] + ["warmup_posterior/"]
    loaded = load_fit(folder)
    assert sorted(loaded.idata.children) == ["constant_data", "posterior", "sample_stats"]
    # the convergence checks read the same answers from the saved statistics
    before, after = check_convergence(fitted.idata), check_convergence(loaded.idata)
    assert after.divergences == before.divergences > 0, (before.divergences, after.divergences)
    np.testing.assert_array_equal(after.ebfmi, before.ebfmi)
    assert after.mean_steps == before.mean_steps == 15


def test_an_old_float64_fit_still_loads_and_resaves_smaller(
    hand_built: tuple[ResponseData, Fit], tmp_path: Path
) -> None:
    _, fitted = hand_built
    old = load_fit(save_float64(fitted, tmp_path / "old"))
    assert "storage" not in old.info
    # item draws held as float32, the intercept computed from them (as a fit computes it, irtbayes.fitting.fit)
    expected = add_derived(as_held(fitted.posterior.drop_vars("intercept")), fitted.spec)
    xr.testing.assert_identical(old.posterior, expected[list(fitted.posterior.data_vars)])
    xr.testing.assert_identical(old.idata["sample_stats"].to_dataset(), fitted.idata["sample_stats"].to_dataset())
    new = save_fit(old, tmp_path / "new")
    assert json.loads((new / "card.json").read_text(encoding="utf-8"))["storage"]["dtype"] == "float32"
    size_old = (tmp_path / "old" / "posterior.nc").stat().st_size
    size_new = (new / "posterior.nc").stat().st_size
    assert size_new < size_old / 1.8, (size_old, size_new)


def test_an_audit_of_the_reloaded_fit_matches_the_fit_in_memory(
    hand_built: tuple[ResponseData, Fit], tmp_path: Path
) -> None:
    data, fitted = hand_built
    loaded = load_fit(save_fit(fitted, tmp_path / "fit"))
    before = audit(fitted, data, seed=0, information_draws=20)
    after = audit(loaded, data, seed=0, information_draws=20)
    headline = [f"{m}_{s}" for m in ("ddm_w1", "ddm_tv", "max_gap") for s in ("mean", "ci_low", "ci_high")]
    assert np.all(np.isfinite(before.benchmarks[headline].to_numpy(dtype=float)))
    np.testing.assert_allclose(
        after.benchmarks[headline].to_numpy(dtype=float), before.benchmarks[headline].to_numpy(dtype=float), rtol=1e-6
    )
    ranks = ["rank_mean", "rank_ci_low", "rank_ci_high", "ability_rank_mean", "ability_rank_ci_low"]
    assert (after.ranking["subject"] == before.ranking["subject"]).all()
    np.testing.assert_allclose(
        after.ranking[ranks].to_numpy(dtype=float), before.ranking[ranks].to_numpy(dtype=float), rtol=1e-6
    )
    np.testing.assert_allclose(
        after.ranking["ability_mean"].to_numpy(dtype=float),
        before.ranking["ability_mean"].to_numpy(dtype=float),
        rtol=1e-6,
    )
