"""The binomial likelihood of k successes of n trials, checked without sampling: the model's log-likelihood against
scipy's binomial pmf, against the same trials given as 0/1 rows, the layouts it takes, and the graphs of binary data
left as they were."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.traversal import ancestors
from scipy import special, stats

from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.model.build import build_model
from irtbayes.model.inputs import ModelInputs, model_inputs
from irtbayes.model.spec import ModelSpec

FAST = "FAST_COMPILE"


@pytest.fixture(autouse=True)
def _python_mode():
    with pytensor.config.change_flags(mode=FAST, cxx=""):
        yield


@pytest.fixture(scope="module")
def counts() -> ResponseData:
    """12 systems x 9 items, a fifth of the cells missing, 1 to 6 trials per cell."""
    rng = np.random.default_rng(11)
    rows = [
        (f"s{s:02d}", f"q{i}", n, int(rng.integers(0, n + 1)))
        for s in range(12)
        for i in range(9)
        if rng.random() > 0.2
        for n in [int(rng.integers(1, 7))]
    ]
    frame = pd.DataFrame(rows, columns=["subject", "item", "trials", "successes"])
    frame["benchmark"] = np.where(frame["item"].isin(["q0", "q1", "q2", "q3"]), "b1", "b2")
    return ResponseData.from_long(frame)


def binary_rows(data: ResponseData) -> ResponseData:
    """The same trials as one 0/1 row each (k rows of 1 and n - k of 0 per cell): repeated (subject, item) rows, which
    only the constructor takes and only the long layout reads as separate terms."""
    frame = data.responses
    reps = data.trials
    position = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    rows = frame.loc[frame.index.repeat(reps), ["subject", "item"]].reset_index(drop=True)
    rows["response"] = (position < np.repeat(data.successes, reps)).astype("float64")
    return ResponseData(responses=rows, items=data.items, subjects=data.subjects, source="binary rows")


def jittered(model: pm.Model, seed: int = 0) -> dict[str, np.ndarray]:
    """The initial point moved off its symmetric values, so that every response has its own probability."""
    rng = np.random.default_rng(seed)
    return {k: v + rng.normal(0, 0.3, size=np.shape(v)) for k, v in model.initial_point().items()}


def probabilities(model: pm.Model, data: ResponseData, point: dict[str, np.ndarray]) -> np.ndarray:
    """P(success) of each response at ``point``, from the model's own ability, difficulty, discrimination, guessing."""
    one_pl = "discrimination" not in model.named_vars  # the 1PL's one discrimination is exp(log_discrimination_mu)
    names = ["ability", "difficulty", "log_discrimination_mu" if one_pl else "discrimination"]
    names += ["guessing"] if "guessing" in model.named_vars else []
    outputs = model.replace_rvs_by_values([model[n] for n in names])  # functions of the point, not prior draws
    compiled = model.compile_fn(outputs, inputs=model.value_vars, on_unused_input="ignore", mode=FAST)
    values = dict(zip(names, compiled(point), strict=True))
    if one_pl:
        values["discrimination"] = np.full(data.n_items, np.exp(values["log_discrimination_mu"]))
    s, i = data.subject_codes, data.item_codes
    p = 1 / (1 + np.exp(-values["discrimination"][i] * (values["ability"][s] - values["difficulty"][i])))
    c = values.get("guessing")
    return p if c is None else c[i] + (1 - c[i]) * p


@pytest.mark.parametrize("kind", ["1pl", "2pl", "3pl"])
@pytest.mark.parametrize("layout", ["long", "dense"])
def test_the_likelihood_is_the_binomial_pmf_less_its_constant(counts: ResponseData, kind: str, layout: str) -> None:
    model = build_model(counts, ModelSpec(kind=kind, layout=layout))
    assert model.irtbayes_spec.layout == layout
    point = jittered(model)
    loglik = float(model.compile_logp(vars=[model["response_loglik"]], mode=FAST)(point))
    k, n, p = counts.successes, counts.trials, probabilities(model, counts, point)
    expected = float((stats.binom.logpmf(k, n, p) - np.log(special.comb(n, k))).sum())
    assert loglik == pytest.approx(expected, rel=1e-10, abs=1e-9), (loglik, expected)
    grad = model.compile_dlogp(mode=FAST)(point)
    assert np.all(np.isfinite(grad))


@pytest.mark.parametrize("kind", ["1pl", "2pl", "3pl"])
def test_counts_and_the_same_trials_as_binary_rows_have_one_log_density(counts: ResponseData, kind: str) -> None:
    """Priors and likelihood alike: the model of k of n is the model of the n 0/1 trials. (The factor that pins the
    scale of the raw abilities, ``ability_z_scale``, is left out: its width follows the responses per system, not
    the trials, and it does not change the model, :func:`irtbayes.model.build._pin_scale`.)"""
    model = build_model(counts, ModelSpec(kind=kind, layout="long"))
    rows = build_model(binary_rows(counts), ModelSpec(kind=kind, layout="long"))
    assert rows.irtbayes_inputs.trials is None and len(rows.irtbayes_inputs.response) == counts.trials.sum()
    assert model.initial_point().keys() == rows.initial_point().keys()
    for seed in (1, 2):
        point = jittered(model, seed)
        a, b = (
            float(m.compile_logp(vars=[*m.free_RVs, m["response_loglik"]], mode=FAST)(point)) for m in (model, rows)
        )
        assert a == pytest.approx(b, rel=1e-11), (a, b)


def test_the_auto_layout_carries_the_trials(counts: ResponseData) -> None:
    assert model_inputs(counts, ModelSpec()).spec.layout == "dense"  # four fifths of the cells: dense, not fused
    assert model_inputs(counts, ModelSpec(kind="3pl")).spec.precision == "float64"
    sparse = counts.subset(items=["q0", "q1", "q2", "q3", "q4"], subjects=[f"s{s:02d}" for s in range(6)])
    sparse = ResponseData.from_long(sparse.long_frame().iloc[::3], trials="trials")
    assert sparse.has_trials and model_inputs(sparse, ModelSpec()).spec.layout == "long"
    with pytest.raises(SpecError, match="layout='fused' has no per-cell trials"):
        model_inputs(counts, ModelSpec(layout="fused"))
    binary, _ = simulate_responses(12, 20, missing=0.2, seed=4)
    assert model_inputs(binary, ModelSpec()).spec.layout == "fused"


def test_graded_models_refuse_counts_and_fractional_error_accepts_them(counts: ResponseData) -> None:
    with pytest.raises(SpecError, match="k successes of n trials, but model 'grm' is for ordinal categories"):
        build_model(counts, ModelSpec(kind="grm"))
    model = build_model(counts, ModelSpec(fractional="error"))  # an exact likelihood: nothing to refuse
    assert "response_loglik" in model.named_vars
    with pytest.raises(SpecError, match="fractional"):
        build_model(counts.without_trials(), ModelSpec(fractional="error"))


def _shared_names(model: pm.Model) -> set[str]:
    return {v.name for v in ancestors([model["response_loglik"]]) if isinstance(v, SharedVariable)}


@pytest.mark.parametrize("layout", ["long", "dense"])
def test_only_data_with_trials_put_trials_in_the_graph(counts: ResponseData, layout: str) -> None:
    assert "trials" in _shared_names(build_model(counts, ModelSpec(layout=layout)))
    binary, _ = simulate_responses(12, 20, missing=0.2, seed=4)
    names = _shared_names(build_model(binary, ModelSpec(layout=layout)))
    assert "trials" not in names and ("observed" in names) == (layout == "dense")


def test_binary_data_keep_their_model_keys(counts: ResponseData) -> None:
    """The key of inputs without trials hashes exactly the fields it hashed before trials existed, so compiled
    models cached under those keys are found again; a trials column of ones changes nothing."""
    binary, _ = simulate_responses(12, 20, missing=0.2, seed=4)
    inputs = model_inputs(binary, ModelSpec())
    digest = hashlib.sha256(repr(inputs.spec).encode())
    digest.update(json.dumps(inputs.coords, sort_keys=True, default=str).encode())
    for field in fields(ModelInputs):
        if field.name in ("spec", "coords", "trials"):
            continue
        value = getattr(inputs, field.name)
        digest.update(field.name.encode())
        if value is not None:
            value = np.ascontiguousarray(value)
            digest.update(f"{value.dtype}{value.shape}".encode())
            digest.update(value.tobytes())
    assert inputs.key() == digest.hexdigest()
    ones = ResponseData.from_long(
        binary.long_frame().assign(trials=1), trials="trials", items=binary.items.reset_index()
    )
    assert model_inputs(ones, ModelSpec()).key() == inputs.key()
    assert model_inputs(counts, ModelSpec()).key() != model_inputs(counts.without_trials(), ModelSpec()).key()
