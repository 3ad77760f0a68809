"""Warm start: the model's free variables at given abilities and item parameters, and chains started from them."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.warmstart import supports, warm_start
from irtbayes.model.build import build_model, start_values
from irtbayes.model.spec import ModelSpec

SPECS = [
    ModelSpec(kind="2pl"),  # benchmark+domain, non-centred levels
    ModelSpec(kind="2pl", centring="centred"),  # centred benchmark level under a non-centred domain level
    ModelSpec(kind="2pl", hierarchy="benchmark"),
    ModelSpec(kind="2pl", hierarchy="benchmark", centring="centred"),
    ModelSpec(kind="2pl", hierarchy="none", item_centring="centred"),
    ModelSpec(kind="2pl", hierarchy="none", item_centring="noncentred", discrimination_sd="sampled"),
    ModelSpec(kind="2pl", hierarchy="none", discrimination_sd="fixed"),
    ModelSpec(kind="1pl"),
    ModelSpec(kind="2pl", identification="prior"),
]


@pytest.fixture(scope="module")
def simulated():
    return simulate_responses(60, 90, kind="2pl", n_benchmarks=7, n_domains=3, seed=3)  # domains of unequal size


def _evaluate(model, names: list[str], point: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's variables ``names`` at ``point`` (unconstrained values by value-variable name)."""
    import pytensor

    outs = model.replace_rvs_by_values([model[n] for n in names])
    fn = pytensor.function(model.value_vars, outs, on_unused_input="ignore", mode="FAST_COMPILE")
    return fn(*(point[v.name] for v in model.value_vars))


def _split(model, flat: np.ndarray) -> dict[str, np.ndarray]:
    """A flat unconstrained vector (free variables in PyMC's order) as a point keyed by value-variable name."""
    shapes = model.initial_point()
    point, start = {}, 0
    for rv in model.free_RVs:
        name = model.rvs_to_values[rv].name
        size = shapes[name].size
        point[name] = flat[start : start + size].reshape(shapes[name].shape)
        start += size
    assert start == len(flat)
    return point


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.kind}-{s.hierarchy}-{s.centring}-{s.item_centring}")
def test_start_values_reproduce_the_given_parameters(simulated, spec):
    """Evaluated through the model's own graph, the start gives back exactly the abilities, difficulties and
    discriminations it was made from, and the hierarchy's means are the means of their members."""
    data, truth = simulated
    model = build_model(data, spec)
    inputs = model.irtbayes_inputs
    rng = np.random.default_rng(0)
    theta = truth["ability"].values * 1.3 + 0.4  # not standardised: the start standardises it
    b = truth["difficulty"].values + rng.normal(0, 0.1, data.n_items)
    alpha = np.log(truth["discrimination"].values)
    values = start_values(inputs, ability=theta, difficulty=b, log_discrimination=alpha)
    assert sorted(values) == sorted(rv.name for rv in model.free_RVs)

    from irtbayes.fitting.warmstart import _unconstrained

    point = _split(model, _unconstrained(model)(values))
    names = ["difficulty", "ability", "difficulty_mu", "log_discrimination_mu"]
    names += [n for n in ("discrimination", "difficulty_benchmark", "difficulty_domain") if n in model.named_vars]
    outputs = _evaluate(model, names, point)
    got = dict(zip(names, outputs, strict=True))
    np.testing.assert_allclose(got["difficulty"], b, rtol=1e-10, atol=1e-12)
    expected_theta = (theta - theta.mean()) / theta.std() if spec.identification == "standardise" else theta
    np.testing.assert_allclose(got["ability"], expected_theta, rtol=1e-10, atol=1e-12)
    if spec.kind == "2pl":
        np.testing.assert_allclose(got["discrimination"], np.exp(alpha), rtol=1e-10)
    else:
        np.testing.assert_allclose(got["log_discrimination_mu"], alpha.mean(), rtol=1e-10)
    if "difficulty_benchmark" in got:
        codes = inputs.item_benchmark
        means = np.bincount(codes, weights=b) / np.bincount(codes)
        np.testing.assert_allclose(got["difficulty_benchmark"], means, rtol=1e-10, atol=1e-12)
        if "difficulty_domain" in got:
            doms = np.bincount(inputs.benchmark_domain, weights=means) / np.bincount(inputs.benchmark_domain)
            np.testing.assert_allclose(got["difficulty_domain"], doms, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(got["difficulty_mu"], doms.mean(), rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_allclose(got["difficulty_mu"], means.mean(), rtol=1e-10, atol=1e-12)
    logp = model.compile_logp(mode="FAST_COMPILE")(point)  # the value only has to be finite: no numba compile
    assert np.isfinite(logp)


def test_warm_start_points_are_dispersed_draws_near_the_truth(simulated):
    """Each seed gives its own start; starts scatter on the scale of the posterior around the truth."""
    data, truth = simulated
    model = build_model(data)
    start = warm_start(model, data)
    assert start.info["modes_converged"] in (True, False) and start.info["rounds"] >= 1
    points = [_split(model, start.point(seed)) for seed in (1, 2, 3, 4)]
    names = ["difficulty", "ability"]
    values = [_evaluate(model, names, p) for p in points]
    b = np.array([v[0] for v in values])
    theta = np.array([v[1] for v in values])
    assert np.corrcoef(b.mean(axis=0), truth["difficulty"].values)[0, 1] > 0.9
    assert np.corrcoef(theta.mean(axis=0), truth["ability"].values)[0, 1] > 0.9
    spread = b.std(axis=0, ddof=1)
    assert 0.05 < np.median(spread) < 1.5  # dispersed, on the scale of a difficulty's posterior sd
    assert start.point(5).tolist() == start.point(5).tolist()  # the same seed, the same start


def test_supports_one_dimensional_binary_models(simulated):
    from irtbayes.core.errors import SpecError
    from irtbayes.fitting.approx import empirical_bayes

    assert supports(ModelSpec(kind="2pl")) and supports(ModelSpec(kind="1pl")) and supports(ModelSpec(kind="3pl"))
    assert not supports(ModelSpec(kind="2pl", dims="domain")) and not supports(ModelSpec(kind="grm"))
    with pytest.raises(SpecError, match="not kind='2pl', dims='domain'"):
        empirical_bayes(simulated[0], ModelSpec(kind="2pl", dims="domain"))


def test_a_nutpie_fit_starts_each_chain_at_its_own_warm_point(monkeypatch):
    """fit() hands the warm start to nutpie, which asks it for one point per chain; the card records it."""
    import warnings

    from irtbayes.fitting import warmstart
    from irtbayes.fitting.fit import fit

    data, _ = simulate_responses(30, 8, kind="2pl", n_benchmarks=2, seed=3)
    seeds: list[int] = []
    made = warmstart.warm_start

    def counted(model, data):
        start = made(model, data)

        def point(seed):
            seeds.append(seed)
            return start.point(seed)

        return warmstart.WarmStart(point=point, info=start.info)

    monkeypatch.setattr(warmstart, "warm_start", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 20 draws cannot pass the checks
        warm = fit(data, chains=3, draws=20, seed=5, progress=False)
        cold = fit(data, chains=3, draws=20, seed=5, progress=False, warm_start=False)
    assert len(seeds) >= 3 and len(set(seeds)) == len(seeds)  # one call, with its own seed, per chain
    record = warm.sampler["warm_start"]
    assert record["modes_converged"] in (True, False) and record["rounds"] >= 1 and record["seconds"] >= 0
    assert warm.sampler["tune"] == warmstart.WARM_TUNE and cold.sampler["tune"] == 500
    assert "warm_start" not in cold.sampler
    assert warm.card()["sampler"]["warm_start"] == record


def test_warm_start_settings_are_checked():
    from irtbayes.core.errors import SpecError
    from irtbayes.fitting.fit import fit

    data, _ = simulate_responses(30, 8, kind="2pl", n_benchmarks=2, seed=3)
    with pytest.raises(SpecError, match="warm_start must be True, False or None"):
        fit(data, warm_start="yes")
    with pytest.raises(SpecError, match="warm_start needs sampler='nutpie'"):
        fit(data, ModelSpec(kind="2pl", dims="domain"), warm_start=True)
    with pytest.raises(SpecError, match="warm_start needs sampler='nutpie'"):
        fit(data, sampler="pymc", warm_start=True)


def test_item_factors_match_cholesky_and_survive_indefinite_covariances():
    from irtbayes.fitting.warmstart import _cholesky_2x2

    rng = np.random.default_rng(1)
    m = rng.normal(size=(50, 2, 2))
    cov = m @ m.transpose(0, 2, 1) + 0.01 * np.eye(2)
    np.testing.assert_allclose(_cholesky_2x2(cov), np.linalg.cholesky(cov), rtol=1e-12, atol=1e-14)
    bad = np.array([[[1.0, 2.0], [2.0, 1.0]], [[-0.5, 0.0], [0.0, 0.2]]])  # indefinite; a negative variance
    factors = _cholesky_2x2(bad)
    assert np.isfinite(factors).all() and (factors[:, [0, 1], [0, 1]] > 0).all()
    np.testing.assert_allclose(factors[0], np.diag([1.0, 1.0]))


def test_warm_start_on_items_everyone_solves_or_fails():
    """Items answered alike by every subject have no finite MLE; their starts are finite all the same."""
    data, _ = simulate_responses(40, 30, kind="2pl", n_benchmarks=3, seed=2)
    frame = data.long_frame()[["subject", "item", "response"]].copy()
    first, second = data.item_ids[:2]
    frame.loc[frame["item"] == first, "response"] = 1.0
    frame.loc[frame["item"] == second, "response"] = 0.0
    from irtbayes.data.responses import ResponseData

    constant = ResponseData.from_long(frame, items=data.items.reset_index())
    model = build_model(constant)
    point = warm_start(model, constant).point(3)
    assert np.isfinite(point).all()
    assert np.isfinite(model.compile_logp(mode="FAST_COMPILE")(_split(model, point)))


def test_a_fit_whose_modes_fail_starts_cold_and_says_so(monkeypatch, caplog):
    import logging
    import warnings

    from irtbayes.fitting import approx, warmstart
    from irtbayes.fitting.fit import fit

    data, _ = simulate_responses(30, 8, kind="2pl", n_benchmarks=2, seed=3)
    real = approx.empirical_bayes

    def broken(*args, **kwargs):
        modes = real(*args, **kwargs)
        return approx.Modes(**{**modes.__dict__, "difficulty": modes.difficulty * np.nan})

    monkeypatch.setattr(warmstart, "empirical_bayes", broken)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="irtbayes.fitting.fit"):
        warnings.simplefilter("ignore", UserWarning)
        result = fit(data, chains=2, draws=20, seed=5, progress=False)
    assert result.sampler["warm_start"] == {"skipped": "the empirical-Bayes modes are not finite"}
    assert result.sampler["tune"] == warmstart.COLD_TUNE
    assert "no warm start (the empirical-Bayes modes are not finite)" in caplog.text


def test_items_drifting_along_a_ridge_start_from_their_share_of_correct_answers(simulated):
    """A mode out of bounds (a -> 0, b -> -infinity) is replaced by -logit(p) / a at the typical discrimination."""
    from irtbayes.fitting.approx import Modes
    from irtbayes.fitting.warmstart import BOUNDED_SD, _bounded
    from irtbayes.model.inputs import model_inputs

    data, truth = simulated
    inputs = model_inputs(data, ModelSpec())
    n = data.n_items
    b, alpha = truth["difficulty"].values.copy(), np.full(n, 0.2)
    b[3], alpha[3] = -66_000.0, -11.0
    cov = np.tile(np.diag([0.04, 0.01]), (n, 1, 1))
    modes = Modes(np.zeros(60), np.full(60, 0.01), b, alpha, cov, rounds=200, converged=False, seconds=0.0)
    start_b, start_alpha, chol, moved = _bounded(modes, inputs)
    assert moved == 1
    np.testing.assert_array_equal(np.delete(start_b, 3), np.delete(b, 3))
    answers = inputs.response[inputs.item_code == 3]
    p = (answers.sum() + 0.5) / (len(answers) + 1.0)
    assert start_alpha[3] == 0.2 and start_b[3] == pytest.approx(-np.log(p / (1 - p)) / np.exp(0.2))
    np.testing.assert_allclose(chol[3], np.diag(BOUNDED_SD))
    np.testing.assert_allclose(chol[0], np.diag([0.2, 0.1]))


def test_the_command_line_switches_the_warm_start_off(monkeypatch):
    """``--no-warm-start`` reaches fit() as warm_start=False; without it fit() decides (None)."""
    import argparse

    import irtbayes.fitting.fit as fit_module
    from irtbayes.cli.main import _fit_from_args
    from irtbayes.cli.parser import add_fit_options

    parser = argparse.ArgumentParser()
    add_fit_options(parser)
    seen: list[object] = []
    monkeypatch.setattr(fit_module, "fit", lambda data, spec, **kwargs: seen.append(kwargs["warm_start"]))
    for argv in (["--model", "2pl"], ["--model", "2pl", "--no-warm-start"]):
        _fit_from_args(object(), parser.parse_args(argv))
    assert seen == [None, False]


@pytest.mark.parametrize("guessing", ["pooled", "chance"])
def test_a_3pl_starts_on_the_floored_curves_near_the_truth(guessing):
    """3PL data with four options: each chain's floors lie around (or, fixed, at) 1/4, and the start's difficulties,
    moved from the 2PL's modes to the floored curve, lie nearer the truth than the 2PL's modes themselves."""
    from irtbayes.fitting.approx import empirical_bayes

    data, truth = simulate_responses(200, 60, kind="3pl", n_options=4, seed=5, missing=0.0)
    model = build_model(data, ModelSpec(kind="3pl", hierarchy="none", guessing=guessing))
    start = warm_start(model, data)
    names = ["difficulty", "guessing"]
    starts = [_evaluate(model, names, _split(model, start.point(seed))) for seed in (1, 2)]
    floors = np.array([got[1] for got in starts])
    if guessing == "chance":
        np.testing.assert_allclose(floors, 0.25)
    else:
        assert abs(np.median(floors) - 0.25) < 0.03 and (floors[0] != floors[1]).all()
    b_true = truth["difficulty"].values
    b_start = np.mean([got[0] for got in starts], axis=0)
    b_2pl = empirical_bayes(data, ModelSpec(kind="2pl", hierarchy="none")).difficulty
    assert np.median(np.abs(b_start - b_true)) < np.median(np.abs(b_2pl - b_true))


def test_the_warm_start_reuses_the_models_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The empirical-Bayes modes read the inputs the model was built from; they are not built a second time."""
    import irtbayes.fitting.approx as approx_module
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.fitting.warmstart import warm_start
    from irtbayes.model.build import build_model

    data, _ = simulate_responses(30, 40, n_benchmarks=2, seed=2)
    model = build_model(data)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("model_inputs built again")

    monkeypatch.setattr(approx_module, "model_inputs", refuse)
    assert np.isfinite(warm_start(model, data).point(1)).all()
