"""The C callbacks nutpie samples through, generated and cached on disk by :mod:`irtbayes.fitting.compiled`."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.compiled import compile_model
from irtbayes.model.build import build_model
from irtbayes.model.spec import ModelSpec

_DOUBLE = ctypes.POINTER(ctypes.c_double)


def _logp(compiled, x: np.ndarray) -> tuple[int, float, np.ndarray]:
    """The log-density callback at ``x``, called as nutpie calls it: (return code, log-density, gradient)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    grad, value = np.zeros(compiled.n_dim), np.zeros(())
    code = compiled.compiled_logp_func.ctypes(
        compiled.n_dim,
        x.ctypes.data_as(_DOUBLE),
        grad.ctypes.data_as(_DOUBLE),
        value.ctypes.data_as(_DOUBLE),
        ctypes.c_void_p(compiled.user_data.ctypes.data),
    )
    return code, float(value), grad


def _expand(compiled, x: np.ndarray) -> tuple[int, np.ndarray]:
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.zeros(compiled.n_expanded)
    code = compiled.compiled_expand_func.ctypes(
        compiled.n_dim,
        compiled.n_expanded,
        x.ctypes.data_as(_DOUBLE),
        out.ctypes.data_as(_DOUBLE),
        ctypes.c_void_p(compiled.user_data.ctypes.data),
    )
    return code, out


def _data(answers: int):
    """Simulated responses (``answers`` 3), or the same subjects, items and cells with random answers drawn with
    seed ``answers``: the same shapes and constants in the model, other shared responses."""
    data, _ = simulate_responses(30, 8, kind="2pl", n_benchmarks=2, seed=3)
    if answers == 3:
        return data
    frame = data.long_frame()
    frame["response"] = np.random.default_rng(answers).integers(0, 2, len(frame)).astype(float)
    return ResponseData.from_long(frame[["subject", "item", "response"]], items=data.items)


@pytest.fixture(scope="module")
def compiled_pair():
    spec = ModelSpec(benchmark_sd="sampled")  # a non-centred benchmark level (two or three fix its sd by default)
    return compile_model(build_model(_data(3), spec)), compile_model(build_model(_data(4), spec))


def test_the_callbacks_compute_what_pytensor_computes(compiled_pair):
    compiled, _ = compiled_pair
    assert compiled.shared_data, "the fused likelihood's responses reach the callbacks as shared values"
    rng = np.random.default_rng(0)
    for x in (np.asarray(compiled.initial_point_func(1)), rng.normal(0, 0.5, compiled.n_dim)):
        code, value, grad = _logp(compiled, x)
        expected_value, expected_grad = compiled.logp_func(x)
        assert code == 0
        assert value == float(expected_value)
        np.testing.assert_array_equal(grad, expected_grad)
        code, out = _expand(compiled, x)
        assert code == 0
        np.testing.assert_array_equal(out, compiled.expand_func(x)[0])
    # nutpie's codes for a log-density or gradient that is not finite
    assert _logp(compiled, np.full(compiled.n_dim, 1e308))[0] in (3, 4)
    # a point of another length is refused before it is read (the lengths are in the user data)
    user_data = ctypes.c_void_p(compiled.user_data.ctypes.data)
    assert compiled.compiled_logp_func.ctypes(compiled.n_dim + 1, None, None, None, user_data) == -1
    assert compiled.compiled_expand_func.ctypes(compiled.n_dim, compiled.n_expanded + 1, None, None, user_data) == -1


def test_only_the_model_s_own_variables_are_stored(compiled_pair):
    """The expanded draw holds the model's variables, not the sampler's coordinates (``*_z``, ``*__``), each at
    its slice: the abilities are the standardised raw normals of the same point."""
    compiled, _ = compiled_pair
    names, slices, shapes = compiled.shape_info
    assert "ability" in names and "discrimination" in names
    assert not [name for name in names if name.endswith(("__", "_z", "_chol"))]
    assert compiled.n_expanded == sum(int(np.prod(shape)) for shape in shapes) == slices[-1].stop
    model = build_model(_data(3), ModelSpec(benchmark_sd="sampled"))
    point = model.initial_point()
    starts = np.cumsum([0] + [point[model.rvs_to_values[v].name].size for v in model.free_RVs])
    bounds = zip(model.free_RVs, starts[:-1], starts[1:], strict=True)
    where = {model.rvs_to_values[v].name: slice(a, b) for v, a, b in bounds}
    x = np.random.default_rng(3).normal(0, 0.5, compiled.n_dim)
    code, out = _expand(compiled, x)
    assert code == 0
    z = x[where["ability_z"]]
    np.testing.assert_allclose(out[slices[names.index("ability")]], (z - z.mean()) / z.std(), rtol=1e-12)


def test_a_second_model_of_the_same_structure_loads_the_cached_callbacks_and_reads_its_own_data(compiled_pair):
    """Other answers in the same cells: the same compiled code (from numba's disk cache), each model's own
    responses reaching it through the pointers in its user data."""
    first, second = compiled_pair
    assert second.compiled_logp_func.cache_hits == 1 and second.compiled_expand_func.cache_hits == 1
    x = np.asarray(first.initial_point_func(2))
    _, value_first, grad_first = _logp(first, x)
    _, value_second, grad_second = _logp(second, x)
    assert value_first != value_second
    assert value_second == float(second.logp_func(x)[0])
    np.testing.assert_array_equal(grad_second, second.logp_func(x)[1])
    # the first model's values were not overwritten
    assert value_first == float(first.logp_func(x)[0])
    np.testing.assert_array_equal(grad_first, first.logp_func(x)[1])


def test_a_model_of_the_same_structure_and_other_shapes_loads_the_cached_code(compiled_pair):
    """Other subjects and items under the same hierarchy: the same compiled code, its lengths read from the user
    data; the callbacks compute what PyTensor computes for the new model, and a point of the old length is
    refused."""
    first, _ = compiled_pair
    data, _ = simulate_responses(41, 13, kind="2pl", n_benchmarks=2, seed=4)
    other = compile_model(build_model(data, ModelSpec()))
    assert other.n_dim != first.n_dim and other.n_expanded != first.n_expanded
    assert other.compiled_logp_func.cache_hits == 1 and other.compiled_expand_func.cache_hits == 1
    x = np.random.default_rng(5).normal(0, 0.5, other.n_dim)
    code, value, grad = _logp(other, x)
    expected_value, expected_grad = other.logp_func(x)
    assert code == 0 and value == float(expected_value)
    np.testing.assert_array_equal(grad, expected_grad)
    code, out = _expand(other, x)
    assert code == 0 and len(out) == other.n_expanded
    np.testing.assert_array_equal(out, other.expand_func(x)[0])
    assert (
        other.compiled_logp_func.ctypes(first.n_dim, None, None, None, ctypes.c_void_p(other.user_data.ctypes.data))
        == -1
    )


@pytest.mark.parametrize(
    ("kind", "layout", "categories"),
    [
        ("2pl", "long", (None, None)),
        # each compiles a structure that no other default test compiles (12-14 s on empty caches); the 2PL case
        # checks the same loading path in the default suite
        pytest.param("grm", "auto", (4, [2, 3, 4, 5, 3, 4, 2, 5]), marks=pytest.mark.slow),
        pytest.param("3pl", "auto", (None, None), marks=pytest.mark.slow),
    ],
)
def test_other_layouts_and_kinds_of_other_data_load_the_cached_code_too(kind, layout, categories):
    """Sparse data's layout (one row per response), graded models (whose layout it is) and the 3PL (dense): the
    subject and item codes, responses, masks and category counts are data of the compiled code, so another data set
    of the same structure (other subjects, items and category counts) loads it."""
    spec = ModelSpec(kind=kind, layout=layout)
    first_data, _ = simulate_responses(30, 9, kind=kind, n_categories=categories[0], n_benchmarks=3, seed=6)
    first = compile_model(build_model(first_data, spec))
    data, _ = simulate_responses(37, 8, kind=kind, n_categories=categories[1], n_benchmarks=3, missing=0.3, seed=7)
    other = compile_model(build_model(data, spec))
    assert other.n_dim != first.n_dim
    assert other.compiled_logp_func.cache_hits == 1
    x = np.random.default_rng(8).normal(0, 0.5, other.n_dim)
    code, value, grad = _logp(other, x)
    expected_value, expected_grad = other.logp_func(x)
    assert code == 0 and value == float(expected_value)
    np.testing.assert_array_equal(grad, expected_grad)


def test_a_model_compiled_again_gives_the_same_chains(compiled_pair):
    """A model compiled again in the same process (its callbacks from the disk cache) draws the same chains."""
    import nutpie

    first, _ = compiled_pair
    again = compile_model(build_model(_data(3), ModelSpec(benchmark_sd="sampled")))
    assert again.compiled_logp_func.cache_hits == 1
    runs = [nutpie.sample(c, draws=30, tune=30, chains=1, cores=1, seed=7, progress_bar=False) for c in (first, again)]
    np.testing.assert_array_equal(runs[0].posterior["difficulty"].values, runs[1].posterior["difficulty"].values)


_FRESH_AND_CACHED = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.compiled import compile_model
from irtbayes.model.build import build_model
sys.path.insert(0, sys.argv[1])
from test_compiled import _logp
data, _ = simulate_responses(10, 2000, kind="2pl", n_benchmarks=3, seed=5)
compiled = compile_model(build_model(data))
code, value, grad = _logp(compiled, np.asarray(compiled.initial_point_func(3)))
print(json.dumps({"hits": compiled.compiled_logp_func.cache_hits, "value": value.hex(), "grad": grad.tobytes().hex()}))
"""


@pytest.mark.slow
def test_a_first_run_and_a_cached_run_compute_the_same_bits(tmp_path):
    """With empty caches, then with the caches the first process left: the same log-density and gradient to the
    last bit (PyTensor's fast-math flags, left on, made them differ at 2,000 items: -17638.42320639059 against
    ...062), so a first run draws the chains every later run draws."""
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'pytensor'}",
    }
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", _FRESH_AND_CACHED, os.path.dirname(__file__)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [run["hits"] for run in runs] == [0, 1]
    assert runs[0]["value"] == runs[1]["value"] and runs[0]["grad"] == runs[1]["grad"]


def test_another_nutpie_without_the_helpers_compiles_with_nutpie(monkeypatch, caplog):
    """nutpie's private helpers changed (another release): nutpie's own compile, said in the log."""
    import logging

    import nutpie
    import nutpie.compile_pymc as npc

    def changed(fn, *, order):  # the helper with other arguments
        raise AssertionError("not to be called")

    monkeypatch.setattr(npc, "_rv_dict_to_flat_array_wrapper", changed)
    monkeypatch.setattr(nutpie, "compile_pymc_model", lambda model, **kwargs: ("nutpie's", model))
    with caplog.at_level(logging.INFO, logger="irtbayes.fitting.compiled"):
        assert compile_model("the model") == ("nutpie's", "the model")
    assert "lacks the helpers" in caplog.text


def test_the_log_density_compiles_without_general_reductions_or_splits(compiled_pair):
    """What makes a first run's compilation slow: a reduction over some axes of a matrix compiles numba's general
    reducer (argsort of strides, shape errors; about 5 s at MMLU-Pro's shape) and the gradient of a concatenation
    a split. One ability dimension and the written-out zero-sum effects (irtbayes.model.build) leave neither in the
    log-density's graph of a hierarchical model (two benchmarks: a non-centred level)."""
    from pytensor.tensor.basic import Split
    from pytensor.tensor.elemwise import CAReduce

    free = {var.name for var in build_model(_data(3), ModelSpec(benchmark_sd="sampled")).free_RVs}
    assert "difficulty_benchmark_zerosum_z" in free, sorted(free)  # the non-centred level this test is about
    compiled, _ = compiled_pair
    nodes = compiled.logp_func.maker.fgraph.toposort()
    general = [n for n in nodes if isinstance(n.op, CAReduce) and n.inputs[0].type.ndim > 1]
    splits = [n for n in nodes if isinstance(n.op, Split)]
    assert not general and not splits, (general, splits)
