"""NUTS on JAX with the responses sharded over devices (:mod:`irtbayes.fitting.jaxnuts`).

Needs the ``jax`` extra (JAX and NumPyro, installed by ``make test``). The two-device checks run in a
subprocess, since JAX fixes its CPU device count when it is first imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.model.build import build_model
from irtbayes.model.spec import ModelSpec

jax = pytest.importorskip("jax", reason="the jax extra is not installed (pip install -e '.[jax]')")
pytest.importorskip("numpyro", reason="the jax extra is not installed (pip install -e '.[jax]')")

from irtbayes.fitting.jaxnuts import _data_arguments, device_mesh  # noqa: E402

TWO_DEVICES = textwrap.dedent(
    """
    import json, os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from pymc.sampling.jax import get_jaxified_graph
    from irtbayes.fitting.jaxnuts import _data_arguments, device_mesh
    from irtbayes.model.spec import ModelSpec
    from irtbayes.model.build import build_model
    from irtbayes.data.simulate import simulate_responses

    out = {}
    # 37 subjects (odd: padded to 38 and split by subject) and 23 x 61 (split by item, padded to 62)
    for n, m in ((37, 23), (23, 61)):
        data, _ = simulate_responses(n, m, kind="2pl", n_benchmarks=3, missing=0.2, seed=3)
        model = build_model(data, ModelSpec(layout="dense"))
        mesh = device_mesh(2)
        logp, inputs, arrays, axis = _data_arguments(model.logp(), mesh)
        f = get_jaxified_graph(inputs=[*model.value_vars, *inputs], outputs=[logp])
        point = model.initial_point(random_seed=5)
        rng = np.random.default_rng(1)
        point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in point.items()}
        values = [jnp.asarray(point[v.name]) for v in model.value_vars]
        value, grads = jax.jit(jax.value_and_grad(lambda vs, *d: f(*vs, *d)[0]))(values, *arrays)
        expected = model.compile_logp()(point)
        dlogp = model.compile_dlogp()(point)
        flat = np.concatenate([np.ravel(g) for g in grads])
        out[f"{n}x{m}"] = {
            "value": float(value),
            "expected": float(expected),
            "grad_err": float(np.max(np.abs(flat - dlogp))),
            "grad_scale": float(np.max(np.abs(dlogp))),
            "axis": axis,
            "devices": [len(a.sharding.device_set) for a in arrays],
            "shards": [[list(s.data.shape) for s in a.addressable_shards] for a in arrays],
        }
    print(json.dumps(out))
    """
)


@pytest.mark.slow  # a subprocess with two virtual devices compiles JAX afresh every run (10-26 s)
def test_sharded_density_equals_the_model_on_two_devices():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", TWO_DEVICES], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    by_subject, by_item = out["37x23"], out["23x61"]
    for case in (by_subject, by_item):
        assert case["value"] == pytest.approx(case["expected"], rel=1e-12, abs=1e-9)
        assert case["grad_err"] <= 1e-9 * max(1.0, case["grad_scale"])
        assert case["devices"] == [2, 2]  # responses and mask, each over both devices
    # the longer axis is split, padded to a multiple of the device count
    assert by_subject["axis"] == 0 and by_subject["shards"][0] == [[19, 23], [19, 23]]
    assert by_item["axis"] == 1 and by_item["shards"][0] == [[23, 31], [23, 31]]


def test_device_mesh_uses_one_device_per_million_cells_unless_told():
    assert device_mesh(cells=10).size == 1
    assert device_mesh(1).size == 1
    with pytest.raises(SpecError, match="JAX sees"):
        device_mesh(len(jax.devices()) + 1)


def test_data_arguments_need_the_dense_layout():
    data, _ = simulate_responses(10, 8, seed=0)
    model = build_model(data, ModelSpec(layout="long"))
    with pytest.raises(SpecError, match="dense"):
        _data_arguments(model.logp(), device_mesh(1))


@pytest.mark.slow  # a real JAX fit (about 30 s)
def test_numpyro_fit_converges_and_recovers_difficulties():
    data, truth = simulate_responses(50, 30, kind="2pl", n_benchmarks=2, missing=0.1, seed=11)
    result = fit(data, sampler="numpyro", chains=4, draws=1000, tune=500, seed=11, progress=False)
    diag = result.diagnostics
    assert diag.ok, diag.problems
    assert diag.divergences == 0
    post = result.posterior["difficulty"]
    low = post.quantile(0.05, dim=("chain", "draw")).values
    high = post.quantile(0.95, dim=("chain", "draw")).values
    true = truth["difficulty"].sel(item=post["item"].values).values
    inside = np.mean((true >= low) & (true <= high))
    assert inside >= 0.75, inside  # 90% intervals: P(fewer than 23 of 30 inside) < 0.01
    assert result.sampler["name"] == "numpyro"
    assert result.spec.layout == "dense"
    # 1,500 cells: one device, split along the longer axis (subjects), recorded on the card
    assert (result.sampler["devices"], result.sampler["sharded_axis"]) == (1, "subject")


def test_cli_devices_is_refused_with_another_sampler(tmp_path, capsys):
    from irtbayes.cli.main import main

    out = tmp_path / "fit"
    assert main(["fit", "lsat7", "--sampler", "nutpie", "--devices", "2", "--out", str(out)]) == 2
    assert "--devices is for --sampler numpyro, not --sampler nutpie" in capsys.readouterr().err
    assert not out.exists()


def test_the_fused_layout_is_refused_with_the_layout_to_ask_for():
    """The fused likelihood has no JAX form: its response matrices (shared, like the dense layout's) are not taken
    for the dense layout's, and the error says which layout to ask for."""
    data, _ = simulate_responses(20, 8, kind="2pl", seed=2)
    fused = build_model(data, ModelSpec(layout="fused"))
    with pytest.raises(SpecError, match="layout='dense'"):
        _data_arguments(fused.logp(), device_mesh(1))
