"""Exports for mirt and tinyBenchmarks on hand-built posteriors (exact values), and a saved fit read by ArviZ alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.cli import main as cli
from irtbayes.core.errors import SpecError
from irtbayes.data import io
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.diagnostics.sampler import check_convergence
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit, fit_constant_data
from irtbayes.fitting.storage import save_fit
from irtbayes.model.spec import ModelSpec
from irtbayes.reporting.interchange import (
    MIRT_IRT_COLUMNS,
    MIRT_SI_COLUMNS,
    mirt_items,
    mirt_subjects,
    tinybenchmarks_anchors,
    write_mirt,
    write_tinybenchmarks,
)

SHAPE = (2, 50)


def _data(n_subjects: int = 6, n_items: int = 5, *, domains: bool = False) -> ResponseData:
    rng = np.random.default_rng(3)
    y = (rng.random((n_subjects, n_items)) < 0.5).astype(float)
    y[0] = 1.0 - y[1]  # no constant item
    frame = pd.DataFrame(y, index=[f"s{j}" for j in range(n_subjects)], columns=[f"i{i}" for i in range(n_items)])
    items = pd.DataFrame(
        {
            "item": frame.columns,
            "benchmark": ["alpha"] * 3 + ["beta"] * (n_items - 3),
            "domain": (["maths"] * 3 + ["reading"] * (n_items - 3)) if domains else [None] * n_items,
        }
    )
    return ResponseData.from_wide(frame, items=items)


def _fit(data: ResponseData, posterior: xr.Dataset, spec: ModelSpec) -> Fit:
    coords = {"subject": data.subject_ids.to_numpy(dtype=str), "item": data.item_ids.to_numpy(dtype=str)}
    tree = xr.DataTree.from_dict(
        {"posterior": posterior.assign_coords(coords), "constant_data": fit_constant_data(data)}
    )
    return Fit(
        idata=tree,
        spec=spec,
        sampler={"name": "hand-built", "chains": SHAPE[0], "draws": SHAPE[1]},
        data_checksum=data.checksum(),
        diagnostics=check_convergence(tree),
    )


def _draws(rng: np.random.Generator, centre: np.ndarray, scale: float, *, positive: bool = False) -> np.ndarray:
    noise = scale * rng.standard_normal((*SHAPE, len(centre)))
    return centre * np.exp(noise) if positive else centre + noise


@pytest.fixture
def fit_2pl() -> Fit:
    data = _data()
    rng = np.random.default_rng(0)
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), _draws(rng, np.linspace(-1, 1, data.n_subjects), 0.3)),
            "difficulty": (("chain", "draw", "item"), _draws(rng, np.array([-1.0, -0.5, 0.0, 0.5, 1.0]), 0.2)),
            "discrimination": (
                ("chain", "draw", "item"),
                _draws(rng, np.array([0.5, 1, 1.5, 2, 2.5]), 0.1, positive=True),
            ),
        }
    )
    return _fit(data, posterior, ModelSpec(kind="2pl", hierarchy="none"))


def _mean(fitted: Fit, name: str) -> np.ndarray:
    return fitted.posterior[name].mean(dim=("chain", "draw")).values


def _sd(fitted: Fit, name: str) -> np.ndarray:
    return fitted.posterior[name].std(dim=("chain", "draw"), ddof=1).values


# ---------------------------------------------------------------------------------------------- mirt
def test_mirt_irt_layout_has_exactly_mirts_columns_and_the_posterior_means(fit_2pl: Fit) -> None:
    table = mirt_items(fit_2pl, layout="irt")
    assert tuple(table.columns) == MIRT_IRT_COLUMNS == ("a", "b", "g", "u")
    assert table.index.name == "item" and list(table.index) == ["i0", "i1", "i2", "i3", "i4"]
    np.testing.assert_allclose(table["a"], _mean(fit_2pl, "discrimination"), rtol=1e-12)
    np.testing.assert_allclose(table["b"], _mean(fit_2pl, "difficulty"), rtol=1e-12)
    assert (table["g"] == 0).all() and (table["u"] == 1).all()
    sds = mirt_items(fit_2pl, layout="irt", stat="sd")
    np.testing.assert_allclose(sds["a"], _sd(fit_2pl, "discrimination"), rtol=1e-12)
    np.testing.assert_allclose(sds["b"], _sd(fit_2pl, "difficulty"), rtol=1e-12)
    assert sds["g"].isna().all() and sds["u"].isna().all()  # fixed by the model: NA, not a zero sd


def test_mirt_slope_intercept_layout_has_d_equal_to_minus_a_b(fit_2pl: Fit) -> None:
    table = mirt_items(fit_2pl, layout="si")
    assert tuple(table.columns) == MIRT_SI_COLUMNS == ("a1", "d", "g", "u")
    a = fit_2pl.posterior["discrimination"]
    b = fit_2pl.posterior["difficulty"]
    np.testing.assert_allclose(table["a1"], _mean(fit_2pl, "discrimination"), rtol=1e-12)
    np.testing.assert_allclose(table["d"], (-a * b).mean(dim=("chain", "draw")).values, rtol=1e-12)
    np.testing.assert_allclose(
        mirt_items(fit_2pl, layout="si", stat="sd")["d"], (-a * b).std(dim=("chain", "draw"), ddof=1).values
    )


def test_d_is_exactly_minus_a_times_b_when_the_slopes_are_known() -> None:
    data = _data()
    rng = np.random.default_rng(1)
    a = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), rng.standard_normal((*SHAPE, data.n_subjects))),
            "difficulty": (("chain", "draw", "item"), _draws(rng, np.array([-2.0, -1, 0, 1, 2]), 0.3)),
            "discrimination": (("chain", "draw", "item"), np.broadcast_to(a, (*SHAPE, 5)).copy()),
        }
    )
    fitted = _fit(data, posterior, ModelSpec(kind="2pl", hierarchy="none"))
    irt = mirt_items(fitted, layout="irt")
    si = mirt_items(fitted, layout="si")
    np.testing.assert_allclose(si["d"], -irt["a"] * irt["b"], rtol=1e-12)
    np.testing.assert_allclose(si["a1"], a)


def test_3pl_exports_guessing_and_1pl_the_shared_slope() -> None:
    data = _data()
    rng = np.random.default_rng(2)
    common = {
        "ability": (("chain", "draw", "subject"), rng.standard_normal((*SHAPE, data.n_subjects))),
        "difficulty": (("chain", "draw", "item"), _draws(rng, np.zeros(5), 0.5)),
    }
    guessing = rng.uniform(0.1, 0.3, (*SHAPE, 5))
    three = _fit(
        data,
        xr.Dataset(
            {
                **common,
                "discrimination": (("chain", "draw", "item"), _draws(rng, np.ones(5), 0.1, positive=True)),
                "guessing": (("chain", "draw", "item"), guessing),
            }
        ),
        ModelSpec(kind="3pl", hierarchy="none"),
    )
    table = mirt_items(three, layout="irt")
    np.testing.assert_allclose(table["g"], guessing.mean(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(mirt_items(three, stat="sd")["g"], guessing.reshape(-1, 5).std(axis=0, ddof=1))
    with pytest.raises(SpecError, match="no guessing parameter"):
        tinybenchmarks_anchors(three)

    log_mu = 0.2 * rng.standard_normal(SHAPE)
    one = _fit(
        data,
        xr.Dataset({**common, "log_discrimination_mu": (("chain", "draw"), log_mu)}),
        ModelSpec(kind="1pl", hierarchy="none"),
    )
    table = mirt_items(one, layout="irt")
    np.testing.assert_allclose(table["a"], np.full(5, np.exp(log_mu).mean()), rtol=1e-12)
    assert (table["g"] == 0).all()


def test_abilities_by_domain_give_one_slope_column_per_dimension() -> None:
    data = _data(domains=True)
    rng = np.random.default_rng(4)
    ability = rng.standard_normal((*SHAPE, data.n_subjects, 2))
    a = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject", "dim"), ability),
            "difficulty": (("chain", "draw", "item"), _draws(rng, np.zeros(5), 0.3)),
            "discrimination": (("chain", "draw", "item"), np.broadcast_to(a, (*SHAPE, 5)).copy()),
        },
        coords={"dim": ["maths", "reading"]},
    )
    fitted = _fit(data, posterior, ModelSpec(kind="2pl", dims="domain", hierarchy="none"))
    table = mirt_items(fitted, layout="si")
    assert list(table.columns) == ["a1", "a2", "d", "g", "u"]
    np.testing.assert_allclose(table["a1"], [0.5, 1.0, 1.5, 0, 0])
    np.testing.assert_allclose(table["a2"], [0, 0, 0, 2.0, 2.5])
    with pytest.raises(SpecError, match="slope-intercept"):
        mirt_items(fitted, layout="irt")
    subjects = mirt_subjects(fitted)
    assert list(subjects.columns) == ["subject", "F1", "F2", "SE_F1", "SE_F2"]
    np.testing.assert_allclose(subjects["F2"], ability[..., 1].mean(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(subjects["SE_F1"], ability[..., 0].reshape(-1, data.n_subjects).std(axis=0, ddof=1))
    suite = tinybenchmarks_anchors(fitted)["irtbayes"]
    big_a = np.asarray(suite["irt_parameters"]["A"])
    assert big_a.shape == (1, 2, 5)
    np.testing.assert_allclose(big_a[0], [[0.5, 1.0, 1.5, 0, 0], [0, 0, 0, 2.0, 2.5]])


def test_subjects_follow_fscores_layout(fit_2pl: Fit) -> None:
    table = mirt_subjects(fit_2pl)
    assert list(table.columns) == ["subject", "F1", "SE_F1"]
    assert list(table["subject"]) == list(fit_2pl.subject_ids)
    np.testing.assert_allclose(table["F1"], _mean(fit_2pl, "ability"), rtol=1e-12)
    np.testing.assert_allclose(table["SE_F1"], _sd(fit_2pl, "ability"), rtol=1e-12)


def test_write_mirt_files_read_back_with_mirts_columns(fit_2pl: Fit, tmp_path: Path) -> None:
    paths = write_mirt(fit_2pl, tmp_path / "mirt", layout="si")
    assert {k: p.name for k, p in paths.items()} == {
        "items": "items.csv",
        "items_sd": "items_sd.csv",
        "subjects": "subjects.csv",
    }
    items = pd.read_csv(paths["items"], index_col=0)  # R: read.csv(path, row.names = 1)
    assert list(items.columns) == ["a1", "d", "g", "u"]
    pd.testing.assert_frame_equal(items, mirt_items(fit_2pl, layout="si"), check_dtype=False, rtol=1e-9)
    sds = pd.read_csv(paths["items_sd"], index_col=0)
    assert sds["u"].isna().all() and sds["d"].notna().all()
    assert paths["items_sd"].read_text().splitlines()[1].endswith(",,")  # fixed g and u are empty cells
    subjects = pd.read_csv(paths["subjects"], dtype={"subject": str})
    assert list(subjects.columns) == ["subject", "F1", "SE_F1"]


# ---------------------------------------------------------------------------------------------- tinyBenchmarks
def _tiny_item_curve(theta: np.ndarray, big_a: np.ndarray, big_b: np.ndarray) -> np.ndarray:
    """tinyBenchmarks' item_curve: sigmoid(sum over dims of (A theta - B))."""
    z = (big_a * theta - big_b).sum(axis=1)
    return 1 / (1 + np.exp(-z))


def test_tinybenchmarks_parameters_reproduce_the_2pl_curve(fit_2pl: Fit) -> None:
    suite = tinybenchmarks_anchors(fit_2pl, n_anchors=100)["irtbayes"]
    big_a = np.asarray(suite["irt_parameters"]["A"])
    big_b = np.asarray(suite["irt_parameters"]["B"])
    assert big_a.shape == big_b.shape == (1, 1, 5)
    a = fit_2pl.posterior["discrimination"]
    b = fit_2pl.posterior["difficulty"]
    np.testing.assert_allclose(big_a[0, 0], a.mean(dim=("chain", "draw")).values, rtol=1e-12)
    np.testing.assert_allclose(big_b[0, 0], (a * b).mean(dim=("chain", "draw")).values, rtol=1e-12)
    si = mirt_items(fit_2pl, layout="si")
    theta = 0.7
    expected = 1 / (1 + np.exp(-(si["a1"].to_numpy() * theta + si["d"].to_numpy())))
    np.testing.assert_allclose(_tiny_item_curve(np.full((1, 1, 1), theta), big_a, big_b)[0], expected, rtol=1e-12)
    # every item is an anchor when a benchmark has no more than n_anchors items; weights are shares
    assert suite["scenarios_position"] == {"alpha": [0, 1, 2], "beta": [3, 4]}
    assert suite["seen_examples"] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(suite["examples_weights"]["alpha"], [1 / 3] * 3)
    assert suite["item_ids"] == ["i0", "i1", "i2", "i3", "i4"]


def test_tinybenchmarks_anchors_pick_one_item_per_cluster_weighted_by_its_share(tmp_path: Path) -> None:
    data = _data(n_subjects=4, n_items=40)
    rng = np.random.default_rng(5)
    # two well separated groups of difficulties within each benchmark
    centre = np.where(np.arange(40) % 2 == 0, -2.0, 2.0)
    centre[:3] = [-2.0, -2.0, 2.0]
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), rng.standard_normal((*SHAPE, 4))),
            "difficulty": (("chain", "draw", "item"), _draws(rng, centre, 0.01)),
            "discrimination": (("chain", "draw", "item"), np.ones((*SHAPE, 40))),
        }
    )
    fitted = _fit(data, posterior, ModelSpec(kind="2pl", hierarchy="none"))
    suite = tinybenchmarks_anchors(fitted, n_anchors=2, seed=0)["irtbayes"]
    positions = suite["scenarios_position"]
    assert len(positions["alpha"]) == 3 and len(positions["beta"]) == 37
    for scenario, weights in suite["examples_weights"].items():
        anchors = [p for p in suite["seen_examples"] if p in positions[scenario]]
        assert len(anchors) == len(weights) == 2
        assert np.isclose(sum(weights), 1.0)
        assert sorted(np.sign(centre[anchors])) == [-1, 1], "one anchor per difficulty group"
    beta_b = centre[positions["beta"]]
    expected = sorted([np.mean(beta_b < 0), np.mean(beta_b > 0)])
    np.testing.assert_allclose(sorted(suite["examples_weights"]["beta"]), expected)

    path = write_tinybenchmarks(fitted, tmp_path / "anchors.json", n_anchors=2)
    assert json.loads(path.read_text()) == json.loads(json.dumps(tinybenchmarks_anchors(fitted, n_anchors=2)))
    table = pd.read_csv(write_tinybenchmarks(fitted, tmp_path / "anchors.csv", n_anchors=2))
    assert list(table.columns) == ["item", "benchmark", "position", "A", "B", "anchor", "anchor_weight"]
    assert table["anchor"].sum() == 4 and table.loc[table["anchor"], "anchor_weight"].sum() == pytest.approx(2.0)
    assert table["anchor_weight"].isna().sum() == 36
    with pytest.raises(SpecError, match=r"\.json or \.csv"):
        write_tinybenchmarks(fitted, tmp_path / "anchors.pkl")


def test_items_with_equal_parameters_share_one_anchor() -> None:
    data = _data(n_subjects=4, n_items=8)
    difficulty = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0])
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), np.random.default_rng(6).standard_normal((*SHAPE, 4))),
            "difficulty": (("chain", "draw", "item"), np.broadcast_to(difficulty, (*SHAPE, 8)).copy()),
            "discrimination": (("chain", "draw", "item"), np.ones((*SHAPE, 8))),
        }
    )
    fitted = _fit(data, posterior, ModelSpec(kind="2pl", hierarchy="none"))
    suite = tinybenchmarks_anchors(fitted, n_anchors=4)["irtbayes"]
    # beta holds items 3-7: difficulties 1, -1, 1, 1, 1, so two distinct items whatever n_anchors allows
    assert [p for p in suite["seen_examples"] if p >= 3] == [3, 4]
    np.testing.assert_allclose(suite["examples_weights"]["beta"], [4 / 5, 1 / 5])


# ---------------------------------------------------------------------------------------------- a real saved fit
def _simulated() -> tuple[ResponseData, Fit]:
    """Simulated data (12 subjects x 8 items, 2 benchmarks) and a hand-built 2PL fit around the truth."""
    data, truth = simulate_responses(12, 8, kind="2pl", n_benchmarks=2, seed=7)
    rng = np.random.default_rng(7)
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), _draws(rng, truth["ability"].values, 0.3)),
            "difficulty": (("chain", "draw", "item"), _draws(rng, truth["difficulty"].values, 0.2)),
            "discrimination": (
                ("chain", "draw", "item"),
                _draws(rng, truth["discrimination"].values, 0.1, positive=True),
            ),
        }
    )
    return data, _fit(data, posterior, ModelSpec(kind="2pl", hierarchy="none"))


@pytest.fixture(scope="module")
def saved_fit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ResponseData]:
    data, fitted = _simulated()
    folder = tmp_path_factory.mktemp("fits") / "fit"
    save_fit(fitted, folder)
    return folder, data


READ_WITHOUT_IRTBAYES = """
import sys, json
import arviz as az
import xarray as xr
path = sys.argv[1]
tree = xr.open_datatree(path, engine="h5netcdf")
idata = az.from_netcdf(path)
post = idata["posterior"]
out = {
    "groups": sorted(idata.children),
    "vars": sorted(post.data_vars),
    "sizes": {k: int(v) for k, v in post.sizes.items()},
    "items": [str(i) for i in post["item"].values],
    "difficulty_mean": [float(x) for x in post["difficulty"].astype("float64").mean(dim=("chain", "draw")).values],
    "same": bool(tree["posterior"]["ability"].equals(post["ability"])),
    "summary_rows": int(len(az.summary(idata, var_names=["difficulty"]))),
    "irtbayes_imported": any(m.split(".")[0] == "irtbayes" for m in sys.modules),
}
print(json.dumps(out))
"""


def _read_without_irtbayes(folder: Path) -> dict:
    """Run READ_WITHOUT_IRTBAYES on ``folder/posterior.nc`` in a fresh interpreter that cannot import irtbayes."""
    env = {**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", READ_WITHOUT_IRTBAYES, str(folder / "posterior.nc")],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _check_read(out: dict, folder: Path, data: ResponseData, *, draws: int) -> None:
    from irtbayes.fitting.storage import load_fit

    assert not out["irtbayes_imported"]
    assert {"posterior", "constant_data"} <= set(out["groups"])
    assert {"ability", "difficulty", "discrimination"} <= set(out["vars"])
    assert out["sizes"]["chain"] == 2 and out["sizes"]["draw"] == draws
    assert out["sizes"]["subject"] == 12 and out["sizes"]["item"] == 8
    assert out["items"] == list(data.item_ids)
    assert out["same"]
    assert out["summary_rows"] == 8
    expected = load_fit(folder).posterior["difficulty"].astype("float64").mean(dim=("chain", "draw")).values
    np.testing.assert_allclose(out["difficulty_mean"], expected, rtol=1e-12)


def test_saved_posterior_is_read_by_arviz_and_xarray_without_irtbayes(saved_fit: tuple[Path, ResponseData]) -> None:
    folder, data = saved_fit
    _check_read(_read_without_irtbayes(folder), folder, data, draws=SHAPE[1])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:the fit did not pass the convergence checks")  # 2 x 100 draws: reading only
def test_a_sampled_fit_is_read_by_arviz_without_irtbayes(tmp_path: Path) -> None:
    data, _ = simulate_responses(12, 8, kind="2pl", n_benchmarks=2, seed=7)
    result = fit(data, ModelSpec(kind="2pl"), chains=2, draws=100, tune=100, seed=7, progress=False)
    folder = save_fit(result, tmp_path / "fit")
    out = _read_without_irtbayes(folder)
    _check_read(out, folder, data, draws=100)
    assert "sample_stats" in out["groups"]


@pytest.mark.parametrize("fmt", ["mirt", "mirt-si", "tinybenchmarks", "pyirt"])
def test_export_verb_writes_each_format(
    fmt: str, saved_fit: tuple[Path, ResponseData], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, data = saved_fit
    source = tmp_path / "data.csv"
    labels = data.items[["benchmark", "domain"]]
    data.long_frame()[["subject", "item", "response"]].join(labels, on="item").to_csv(source, index=False)
    out = tmp_path / {"mirt": "m", "mirt-si": "s", "tinybenchmarks": "t.json", "pyirt": "p.jsonl"}[fmt]
    extra = ["--data", str(source)] if fmt == "pyirt" else []
    code = cli.main(["export", "--fit", str(folder), "--format", fmt, "--out", str(out), *extra])
    assert code == 0
    assert str(out) in capsys.readouterr().out
    if fmt in ("mirt", "mirt-si"):
        items = pd.read_csv(out / "items.csv", index_col=0)
        assert tuple(items.columns) == (MIRT_IRT_COLUMNS if fmt == "mirt" else MIRT_SI_COLUMNS)
        assert list(items.index) == list(data.item_ids)
    elif fmt == "tinybenchmarks":
        assert np.asarray(json.loads(out.read_text())["irtbayes"]["irt_parameters"]["A"]).shape == (1, 1, 8)
    else:
        pd.testing.assert_frame_equal(io.load(out).long_frame(), io.load(source).long_frame())


def test_export_pyirt_refuses_data_the_fit_was_not_made_from(
    saved_fit: tuple[Path, ResponseData], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = saved_fit
    other = tmp_path / "other.jsonl"
    other.write_text('{"subject_id": "a", "responses": {"x": 1}}\n', encoding="utf-8")
    code = cli.main(["export", "--fit", str(folder), "--format", "pyirt", "--data", str(other), "--out", "x.jsonl"])
    assert code == 2
    assert "not the data the fit was made from" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- against mirt
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "model"), [("2pl", "2PL"), ("1pl", "1PL equal slopes")])
def test_lsat7_mirt_export_lies_in_mirts_intervals(kind: str, model: str, tmp_path: Path) -> None:
    """The exported slope-intercept table, column by column, against mirt's published LSAT7 estimates."""
    wide = pd.read_csv(FIXTURES / "lsat7_responses.csv")
    wide.insert(0, "person", [f"p{i:04d}" for i in range(len(wide))])
    data = ResponseData.from_wide(wide, id_column="person")
    result = fit(data, ModelSpec(kind=kind), chains=4, draws=1000, tune=1000, seed=7, progress=False)
    items = pd.read_csv(write_mirt(result, tmp_path / "mirt", layout="si")["items"], index_col=0)
    ref = pd.read_csv(FIXTURES / "published_reference_estimates.csv")
    ref = ref.loc[(ref["dataset"] == "LSAT7") & ref["model"].str.startswith(model)].drop_duplicates(
        ["item", "parameter"]
    )
    misses = []
    for _, row in ref.iterrows():
        column = {"a": "a1", "d": "d"}[row["parameter"]]
        rows = items.index if row["item"] == "all" else [f"item{row['item']}"]
        for item in rows:
            est = items.loc[item, column]
            if not row["ci95_low"] <= est <= row["ci95_high"]:
                misses.append(
                    f"{item} {column}: {est:.3f} not in [{row['ci95_low']}, {row['ci95_high']}] (mirt {row['estimate']})"
                )
    assert len(ref) >= 6 and not misses, "\n".join(misses)


def test_export_to_a_path_that_cannot_be_written_is_one_line_naming_it(
    saved_fit: tuple[Path, ResponseData], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = saved_fit
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    code = cli.main(["export", "--fit", str(folder), "--format", "mirt", "--out", str(blocker / "mirt")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{blocker / 'mirt'}: cannot be written" in err and "Traceback" not in err
