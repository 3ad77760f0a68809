"""Graded models (GRM, GPCM) without sampling: the PyMC graph against the numpy numerics, thresholds, refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytensor
import pytest

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.model.build import build_model
from irtbayes.model.inputs import model_inputs
from irtbayes.model.spec import ModelSpec

MIXED = [2, 3, 4, 5] * 2  # categories per item: binary items beside graded ones
#: Python implementations: these graphs are tiny, and compiling each through numba costs 20-30 s on empty caches.
#: The numba path of the graded models is what the graded fits (tests/fitting/test_graded_fit.py) sample through.
FAST = "FAST_COMPILE"


@pytest.fixture(autouse=True)
def _python_mode():
    """PyMC helpers without a mode argument (initial points) compile in the same fast mode."""
    with pytensor.config.change_flags(mode=FAST, cxx=""):  # no C compiler: FAST_COMPILE would still build C thunks
        yield


@pytest.fixture(scope="module")
def graded() -> dict[str, ResponseData]:
    return {
        kind: simulate_responses(40, 8, kind=kind, n_categories=MIXED, n_benchmarks=2, missing=0.2, seed=3)[0]
        for kind in ("grm", "gpcm")
    }


def _random_point(model, seed: int) -> dict[str, np.ndarray]:
    """The model's initial point moved by N(0, 0.5) in every unconstrained coordinate."""
    rng = np.random.default_rng(seed)
    return {k: v + 0.5 * rng.standard_normal(np.shape(v)) for k, v in model.initial_point().items()}


def _evaluate(model, names: list[str], point: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The named variables at ``point`` (values of the model's value variables, by name)."""
    outputs = model.replace_rvs_by_values([model.named_vars[n] for n in names])
    fn = pytensor.function(model.value_vars, outputs, on_unused_input="ignore", mode=FAST)
    return fn(*[point[v.name] for v in model.value_vars])


@pytest.mark.parametrize("kind", ["grm", "gpcm"])
@pytest.mark.parametrize("layout", ["long", "dense"])
def test_graph_log_likelihood_is_the_numpy_one(graded, kind, layout):
    data = graded[kind]
    model = build_model(data, ModelSpec(kind=kind, layout=layout))
    assert model.irtbayes_spec.layout == layout
    point = _random_point(model, seed=1)
    loglik, theta, a, b = _evaluate(model, ["response_loglik", "ability", "discrimination", "threshold"], point)
    s, i = data.subject_codes, data.item_codes
    expected = irt.graded_log_likelihood(data.values, theta[s], a[i], b[i], kind=kind).sum()
    assert np.isfinite(loglik)
    np.testing.assert_allclose(loglik, expected, rtol=1e-10)
    grad = model.compile_dlogp(mode=FAST)(point)
    assert np.all(np.isfinite(grad))


def test_thresholds_are_ordered_around_the_difficulty_and_absent_past_an_item_s_categories(graded):
    data = graded["grm"]
    model = build_model(data, ModelSpec(kind="grm"))
    assert model.coords["boundary"] == ("1", "2", "3", "4")
    assert model.coords["item_step"][:3] == ("item00001[1]", "item00002[1]", "item00002[2]")
    b, difficulty = _evaluate(model, ["threshold", "difficulty"], _random_point(model, seed=2))
    k = np.asarray(MIXED) - 1  # thresholds per item
    for item, n in enumerate(k):
        own = b[item, :n]
        assert np.all(np.isnan(b[item, n:]))
        assert np.all(np.diff(own) > 0)  # the GRM's thresholds are ordered
        assert own.mean() == pytest.approx(difficulty[item])


def test_gpcm_step_difficulties_may_be_reversed(graded):
    model = build_model(graded["gpcm"], ModelSpec(kind="gpcm"))
    point = model.initial_point()
    point["step_z"] = -3.0 * np.ones_like(point["step_z"])  # gaps 3 sds below their mean, with sd 1: below 0
    point["step_sd_log__"] = np.zeros_like(point["step_sd_log__"])
    (b,) = _evaluate(model, ["threshold"], point)
    assert np.nanmin(np.diff(b[3, :4])) < 0


def test_binary_items_under_the_grm_are_the_2pl():
    data, _ = simulate_responses(30, 10, kind="2pl", missing=0.1, seed=4)
    twopl = build_model(data, ModelSpec(kind="2pl", layout="long"))
    grm = build_model(data, ModelSpec(kind="grm"))
    assert sorted(v.name for v in grm.free_RVs) == sorted(v.name for v in twopl.free_RVs)
    point = _random_point(twopl, seed=3)
    (expected,) = _evaluate(twopl, ["response_loglik"], point)
    (value,) = _evaluate(grm, ["response_loglik"], point)
    np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_graded_models_refuse_what_they_cannot_fit(graded):
    ordinal = graded["grm"]
    with pytest.raises(SpecError, match=r"ordinal .* fit them with model 'grm' or 'gpcm'"):
        model_inputs(ordinal, ModelSpec(kind="2pl"))
    with pytest.raises(SpecError, match="layout='fused' is for 1PL and 2PL"):
        model_inputs(ordinal, ModelSpec(kind="grm", layout="fused"))
    with pytest.raises(SpecError, match="graded models are fitted in float64"):
        build_model(ordinal, ModelSpec(kind="grm", layout="dense", precision="float32"))
    frame = pd.DataFrame({"subject": list("aabbcc"), "item": ["q1", "q2"] * 3, "response": [0.5, 1, 0, 1, 1, 0]})
    fractional = ResponseData.from_long(frame)
    with pytest.raises(SpecError, match="fractional scores, but model 'gpcm' is for ordinal categories"):
        model_inputs(fractional, ModelSpec(kind="gpcm"))


def test_graded_log_likelihood_has_a_jax_form(graded):
    """The numpyro sampler runs the dense graph through JAX: it must compile there and agree with numpy."""
    pytest.importorskip("jax")
    from pymc.sampling.jax import get_jaxified_graph

    data = graded["gpcm"]
    model = build_model(data, ModelSpec(kind="gpcm", layout="dense"))
    point = _random_point(model, seed=4)
    outputs = model.replace_rvs_by_values([model.named_vars["response_loglik"]])
    fn = get_jaxified_graph(inputs=model.value_vars, outputs=outputs)
    (value,) = fn(*[point[v.name] for v in model.value_vars])
    (expected,) = _evaluate(model, ["response_loglik"], point)
    np.testing.assert_allclose(float(value), expected, rtol=1e-9)
