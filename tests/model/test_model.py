"""Model structure without sampling: coords, dims, finite log-density and gradient, identification."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest
from scipy import stats

from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.model import build as build_module
from irtbayes.model.build import build_model
from irtbayes.model.inputs import model_inputs
from irtbayes.model.spec import ModelSpec, Priors


@pytest.fixture(scope="module")
def labelled():
    data, _ = simulate_responses(12, 21, n_benchmarks=6, n_domains=3, missing=0.2, seed=3)
    return data


@pytest.fixture(scope="module")
def unlabelled():
    data, _ = simulate_responses(12, 20, missing=0.2, seed=4)
    return data


def _dims(model: pm.Model) -> dict[str, tuple]:
    return {name: tuple(d) for name, d in model.named_vars_to_dims.items()}


#: Python implementations, no C compilation: these models are tiny, and compiling them costs far more
FAST = "FAST_COMPILE"


@pytest.fixture(autouse=True)
def _python_mode():
    """PyMC helpers without a mode argument (initial points) compile in the same fast mode."""
    with pytensor.config.change_flags(mode=FAST, cxx=""):  # no C compiler: FAST_COMPILE would still build C thunks
        yield


def _finite_logp_and_grad(model: pm.Model, point: dict | None = None) -> tuple[float, np.ndarray]:
    point = point or model.initial_point()
    logp = float(model.compile_logp(mode=FAST)(point))
    grad = np.asarray(model.compile_dlogp(mode=FAST)(point))
    return logp, grad


@pytest.mark.parametrize("kind", ["1pl", "2pl", "3pl"])
@pytest.mark.parametrize("layout", ["dense", "long"])
def test_each_kind_has_real_coords_and_finite_logp(labelled, kind, layout):
    model = build_model(labelled, ModelSpec(kind=kind, layout=layout))
    assert list(model.coords["subject"]) == list(labelled.subject_ids)
    assert list(model.coords["item"]) == list(labelled.item_ids)
    assert list(model.coords["benchmark"]) == list(labelled.benchmarks)
    assert list(model.coords["domain"]) == list(labelled.domains)
    dims = _dims(model)
    assert dims["ability"] == ("subject",)
    assert dims["difficulty"] == ("item",)
    assert dims["difficulty_benchmark"] == ("benchmark",)
    assert dims["difficulty_domain"] == ("domain",)
    if kind == "1pl":
        assert "discrimination" not in model.named_vars and "log_discrimination_mu" in model.named_vars
    else:
        assert dims["discrimination"] == ("item",)
        assert dims["log_discrimination_benchmark"] == ("benchmark",)
    assert ("guessing" in model.named_vars) == (kind == "3pl")
    logp, grad = _finite_logp_and_grad(model)
    assert np.isfinite(logp), f"log-density {logp} at the initial point"
    assert np.all(np.isfinite(grad)), f"non-finite gradient entries: {np.flatnonzero(~np.isfinite(grad))}"


def test_dense_and_long_layouts_give_the_same_log_density(labelled):
    for kind in ("2pl", "3pl"):
        dense = build_model(labelled, ModelSpec(kind=kind, layout="dense"))
        long = build_model(labelled, ModelSpec(kind=kind, layout="long"))
        rng = np.random.default_rng(0)
        point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in dense.initial_point().items()}
        a, b = float(dense.compile_logp(mode=FAST)(point)), float(long.compile_logp(mode=FAST)(point))
        assert a == pytest.approx(b, rel=1e-10), f"{kind}: dense {a} vs long {b}"


def test_hierarchy_resolves_to_the_deepest_the_labels_allow(labelled, unlabelled):
    assert model_inputs(labelled, ModelSpec()).spec.hierarchy == "benchmark+domain"
    assert model_inputs(unlabelled, ModelSpec()).spec.hierarchy == "none"
    bench_only, _ = simulate_responses(12, 20, n_benchmarks=3, seed=5)
    assert model_inputs(bench_only, ModelSpec()).spec.hierarchy == "benchmark"
    flat = build_model(unlabelled)
    assert "benchmark" not in flat.coords and "difficulty_benchmark" not in flat.named_vars
    two = build_model(labelled, ModelSpec(hierarchy="benchmark"))
    assert "difficulty_benchmark" in two.named_vars and "difficulty_domain" not in two.named_vars


def test_hierarchy_without_labels_is_a_spec_error(unlabelled):
    with pytest.raises(SpecError, match="at least 2 benchmarks"):
        build_model(unlabelled, ModelSpec(hierarchy="benchmark"))
    with pytest.raises(SpecError, match="dims='domain' needs"):
        build_model(unlabelled, ModelSpec(dims="domain"))


def test_benchmark_in_two_domains_is_refused():
    frame = pd.DataFrame(
        {"subject": ["s1", "s2", "s3"] * 2, "item": ["i1"] * 3 + ["i2"] * 3, "response": [1, 0, 1, 0, 1, 1]}
    )
    items = pd.DataFrame({"item": ["i1", "i2"], "benchmark": ["B", "B"], "domain": ["X", "Y"]})
    data = ResponseData.from_long(frame, items=items)
    with pytest.raises(SpecError, match="benchmark 'B' has items in several domains"):
        build_model(data)


def test_multidimensional_abilities_load_each_item_on_its_domain(labelled):
    model = build_model(labelled, ModelSpec(dims="domain"))
    assert list(model.coords["dim"]) == list(labelled.domains)
    assert _dims(model)["ability"] == ("subject", "dim")
    assert _dims(model)["ability_corr"] == ("dim", "dim2")
    logp, grad = _finite_logp_and_grad(model)
    assert np.isfinite(logp) and np.all(np.isfinite(grad))
    # an item's likelihood must not change when another domain's ability changes
    inputs = model_inputs(labelled, ModelSpec(dims="domain", layout="long"))
    assert set(np.unique(inputs.item_domain)) == set(range(len(labelled.domains)))


def test_standardised_abilities_have_mean_zero_and_sd_one_in_any_draw(labelled):
    for dims in ("one", "domain"):
        model = build_model(labelled, ModelSpec(dims=dims))
        draws = pm.draw(model["ability"], draws=20, random_seed=1, mode=FAST)
        means = draws.mean(axis=1)
        sds = draws.std(axis=1)
        assert np.allclose(means, 0, atol=1e-10), f"{dims}: ability means {means.ravel()[:5]}"
        assert np.allclose(sds, 1, atol=1e-10), f"{dims}: ability sds {sds.ravel()[:5]}"


def test_the_scale_pin_closes_the_point_where_standardised_abilities_turn_round():
    """At sd(z) -> 0 the standardised abilities flip to the opposite direction; the factor that pins the raw scale
    must make that point unreachable (it held 3 subjects' sd 0 within 3 widths when it pinned sd - 1), and leave
    sd 1 free of cost."""
    data, _ = simulate_responses(3, 11, seed=2)
    model = build_model(data, ModelSpec(kind="1pl"))
    pin = model.compile_fn(model["ability_z_scale"], inputs=[model["ability_z"]], mode=FAST)
    direction = np.array([1.0, 0.0, -1.0]) / np.std([1.0, 0.0, -1.0])
    at = {sd: float(pin({"ability_z": sd * direction})) for sd in (1.0, 0.5, 0.05)}
    assert at[1.0] == pytest.approx(0.0, abs=1e-12)
    assert at[0.5] < -1.5 and at[0.05] < -25.0, at  # a pin on sd - 1 gave -0.9 and -3.2 here


def test_noncentred_levels_are_zero_sum_around_one_centre_with_the_prior_unchanged(labelled):
    # six benchmarks of 3-4 items in three domains: both group levels are non-centred
    model = build_model(labelled, ModelSpec(kind="2pl"))
    inputs, priors = model.irtbayes_inputs, model.irtbayes_spec.priors
    for prefix, mu_sd in (
        ("difficulty", priors.difficulty_mu_sd),
        ("log_discrimination", priors.log_discrimination_mu_sd),
    ):
        names = ["mu", "centre", "domain", "benchmark", "domain_sd", "benchmark_sd", "domain_z", "benchmark_z"]
        names += ["benchmark_sd_signed_z"]
        mu, centre, dom, bench, dom_sd, bench_sd, dom_z, bench_z, bench_u = pm.draw(
            [model[f"{prefix}_{n}"] for n in names], draws=4000, random_seed=4, mode=FAST
        )
        # what the likelihood sees: one centre plus zero-sum effects, no ridge between the centre and their mean;
        # the sd of the six benchmarks is sampled as a signed scale whose absolute value is the sd, that of the
        # three domains as its log (a free HalfNormal)
        assert np.allclose(dom_z.sum(axis=1), 0, atol=1e-10) and np.allclose(bench_z.sum(axis=1), 0, atol=1e-10)
        assert np.array_equal(bench_sd, np.abs(bench_u)) and (bench_u < 0).mean() > 0.4, f"{prefix}: not signed"
        free = {v.name for v in model.free_RVs}
        assert f"{prefix}_domain_sd" in free and f"{prefix}_domain_sd_signed_z" not in model.named_vars
        seen = centre[:, None] + dom_sd[:, None] * dom_z[:, inputs.benchmark_domain] + bench_u[:, None] * bench_z
        assert np.allclose(bench, seen, atol=1e-10), f"{prefix}: benchmark means are not centre + zero-sum effects"
        # the sds keep their HalfNormal prior (mean scale * sqrt(2 / pi))
        scale = priors.difficulty_group_sd_scale if prefix == "difficulty" else priors.log_discrimination_group_sd_scale
        for sd in (dom_sd, bench_sd):
            assert abs(sd.mean() / (scale * np.sqrt(2 / np.pi)) - 1) < 0.05, f"{prefix}: sd prior mean {sd.mean():.3f}"
        # the model is unchanged: independent standard-normal effects at each level, mu ~ Normal(., mu_sd)
        e_dom = (dom - mu[:, None]) / dom_sd[:, None]
        e_bench = (bench - dom[:, inputs.benchmark_domain]) / bench_sd[:, None]
        for what, e in (("domain", e_dom), ("benchmark", e_bench)):
            assert abs(e.std() - 1) < 0.03 and abs(e.mean()) < 0.03, f"{prefix} {what}: sd {e.std():.3f}"
            assert abs(np.corrcoef(e[:, 0], e[:, 1])[0, 1]) < 0.05, f"{prefix} {what}: correlated effects"
        assert abs(mu.std() / mu_sd - 1) < 0.05, f"{prefix}_mu: prior sd {mu.std():.3f}, expected {mu_sd}"


@pytest.mark.parametrize("groups", [2, 3, 7])
def test_zero_sum_effects_have_pymcs_zero_sum_normal_density_and_coordinates(groups):
    """The written-out zero-sum effects (build._zero_sum_normal) are pm.ZeroSumNormal(1) in its own free coordinates:
    the same log-density and gradient at the same unconstrained point, the same values, and start values that map
    back to the effects they were made from."""
    coords = {"group": [f"g{k}" for k in range(groups)]}
    with pm.Model(coords=coords) as ours:
        build_module._zero_sum_normal("effect_z", "group")
    with pm.Model(coords=coords) as pymcs:
        pm.ZeroSumNormal("effect_z", 1.0, dims="group")
    (free,) = ours.value_vars
    (theirs,) = pymcs.value_vars
    assert free.name == "effect_zerosum_z" and ours["effect_z"] in ours.deterministics

    def values(model, value_var):  # the effects as a function of the free coordinates
        (effects,) = [v for v in model.unobserved_value_vars if v.name == "effect_z"]
        return pytensor.function([value_var], effects, mode=FAST)

    values_ours, values_theirs = values(ours, free), values(pymcs, theirs)
    pairs = ((ours, free), (pymcs, theirs))
    logps = [(m.compile_logp(mode=FAST), m.compile_dlogp(mode=FAST), v.name) for m, v in pairs]
    rng = np.random.default_rng(groups)
    for _ in range(3):
        u = rng.normal(size=groups - 1)
        lp = [logp({name: u}) for logp, _, name in logps]
        grad = [dlogp({name: u}) for _, dlogp, name in logps]
        assert np.isclose(lp[0], lp[1], rtol=1e-12, atol=1e-12), lp
        assert np.allclose(grad[0], grad[1], rtol=1e-12, atol=1e-12), grad
        effects = values_ours(u)
        assert np.allclose(effects, values_theirs(u), atol=1e-12) and abs(effects.sum()) < 1e-12
        # start values: the free coordinates of given zero-sum effects give those effects back
        assert np.allclose(values_ours(build_module._zero_sum_coordinates(effects)), effects, atol=1e-12)


def test_zero_sum_effects_of_one_group_keep_pymcs_zero_sum_normal():
    """One group has no free coordinate to gather from: the level keeps pm.ZeroSumNormal (its effect is 0), and its
    start value is the effect itself."""
    with pm.Model(coords={"group": ["only"]}) as model:
        build_module._zero_sum_normal("effect_z", "group")
    assert [v.name for v in model.value_vars] == ["effect_z_zerosum__"]
    assert np.isfinite(model.compile_logp(mode=FAST)(model.initial_point()))
    assert build_module._zero_sum_coordinates(np.zeros(1)).tolist() == [0.0]


def test_benchmark_levels_are_centred_only_with_four_benchmarks_or_more_apart():
    """Benchmarks of 30 items or more centre the difficulties' benchmark level, but not two or three of them with a
    sampled sd, nor four whose mean difficulties lie close together (the level's sd is then barely fixed by the data;
    centred, its funnel diverged). By default two or three benchmarks fix the level's sd instead (the next test)."""
    for n_bench, sd, centred in ((2, 1.0, False), (3, 1.0, False), (4, 1.0, True), (4, 0.0, False)):
        data, _ = simulate_responses(100, 30 * n_bench, n_benchmarks=n_bench, benchmark_sd=sd, seed=1)
        model = build_model(data, ModelSpec(kind="2pl", hierarchy="benchmark", benchmark_sd="sampled"))
        free = {v.name for v in model.free_RVs}
        assert ("difficulty_benchmark" in free) == centred, f"{n_bench} benchmarks, sd {sd}: {sorted(free)}"
        # a non-centred level's free coordinates: those of its zero-sum effects (test_zero_sum_effects_...)
        assert ("difficulty_benchmark_zerosum_z" in free) != centred, f"{n_bench} benchmarks, sd {sd}: {sorted(free)}"
        # a non-centred level of two or three groups keeps its sd's log (a signed scale diverged there)
        if n_bench < 4:
            assert "difficulty_benchmark_sd" in free and "difficulty_benchmark_sd_signed_z" not in free
    # what decides "apart": the spread of the benchmarks' empirical mean difficulties against their standard errors
    apart, _ = simulate_responses(100, 120, n_benchmarks=4, benchmark_sd=1.0, seed=1)
    alike, _ = simulate_responses(100, 120, n_benchmarks=4, benchmark_sd=0.0, seed=1)
    spread, error = build_module._benchmark_spread(model_inputs(apart, ModelSpec()))
    assert spread > 2 * error > 0, (spread, error)
    spread, error = build_module._benchmark_spread(model_inputs(alike, ModelSpec()))
    assert spread < 2 * error, (spread, error)


def test_two_or_three_benchmarks_fix_the_level_sd_and_centre_it():
    """``benchmark_sd="auto"``: with 2 or 3 benchmarks (no domain level) the benchmarks' sd is fixed at the prior's
    group scale and the level centred, for difficulties and log-discriminations; 4 or more sample it. The start
    values name exactly the free variables, and the fixed sd is the prior scale in the log-density."""
    for n_bench, fixed in ((2, True), (3, True), (4, False)):
        data, _ = simulate_responses(60, 20 * n_bench, n_benchmarks=n_bench, seed=1)
        inputs = model_inputs(data, ModelSpec())
        assert inputs.spec.benchmark_sd == ("fixed" if fixed else "sampled")
        model = build_model(data)
        free = {v.name for v in model.free_RVs}
        for prefix in ("difficulty", "log_discrimination"):
            assert (f"{prefix}_benchmark" in free) == fixed, sorted(free)
            if fixed:  # no sd of the level to sample
                assert not any(name.startswith(f"{prefix}_benchmark_sd") for name in free), sorted(free)
        start = build_module.start_values(
            inputs,
            ability=np.linspace(-1, 1, 60),
            difficulty=np.zeros(20 * n_bench),
            log_discrimination=np.zeros(20 * n_bench),
        )
        assert sorted(start) == sorted(free)
    # the fixed level: log p(difficulty_benchmark | mu) is Normal(mu, difficulty_group_sd_scale)
    data, _ = simulate_responses(60, 40, n_benchmarks=2, seed=1)
    model = build_model(data, ModelSpec(priors=Priors(difficulty_group_sd_scale=0.7)))
    point = model.initial_point()
    logp = model.compile_logp(vars=[model["difficulty_benchmark"]], sum=True, mode=FAST)
    values = {**point, "difficulty_benchmark": np.array([0.3, -0.4]), "difficulty_mu": np.array(0.1)}
    expected = stats.norm(0.1, 0.7).logpdf([0.3, -0.4]).sum()
    assert logp(values) == pytest.approx(expected, rel=1e-9)
    # asked for explicitly, "sampled" keeps it with 2 benchmarks too
    assert model_inputs(data, ModelSpec(benchmark_sd="sampled")).spec.benchmark_sd == "sampled"


def test_discriminations_are_positive_by_construction(labelled):
    model = build_model(labelled, ModelSpec(kind="2pl"))
    draws = pm.draw(model["discrimination"], draws=50, random_seed=2, mode=FAST)
    assert draws.min() > 0, f"smallest discrimination {draws.min()}"


def test_prior_identification_samples_abilities_directly(labelled):
    model = build_model(labelled, ModelSpec(identification="prior"))
    assert "ability" in [v.name for v in model.free_RVs]
    assert "ability_z" not in model.named_vars


def test_too_few_subjects_to_standardise():
    frame = pd.DataFrame({"subject": ["a", "a", "b", "b"], "item": ["i", "j", "i", "j"], "response": [1, 0, 0, 0]})
    data = ResponseData.from_long(frame)
    with pytest.raises(SpecError, match="at least 3"):
        build_model(data)
    assert np.isfinite(_finite_logp_and_grad(build_model(data, ModelSpec(identification="prior")))[0])


def test_guessing_prior_centred_on_chance_from_n_options():
    data, _ = simulate_responses(10, 200, kind="3pl", n_options=4, seed=6)
    model = build_model(data, ModelSpec(kind="3pl"))
    draws = pm.draw(model["guessing"], draws=400, random_seed=3, mode=FAST)
    assert draws.mean() == pytest.approx(0.25, abs=0.01), f"prior mean of guessing {draws.mean():.3f}, chance 0.25"
    off = build_model(data, ModelSpec(kind="3pl", priors=Priors(guessing_chance=False, guessing_mean=0.1)))
    draws = pm.draw(off["guessing"], draws=400, random_seed=3, mode=FAST)
    assert draws.mean() == pytest.approx(0.1, abs=0.01), f"prior mean {draws.mean():.3f}, set to 0.1"


def test_fractional_responses_use_the_quasi_likelihood_or_are_refused():
    counts, _ = simulate_responses(12, 20, n_trials=4, seed=7)
    build_model(counts, ModelSpec(fractional="error"))  # k of n trials have an exact (binomial) likelihood
    data = counts.without_trials()  # the same shares as scores in [0, 1]
    assert not data.is_binary and data.response_kind == "fraction"
    model = build_model(data)
    assert np.isfinite(_finite_logp_and_grad(model)[0])
    with pytest.raises(SpecError, match="fractional"):
        build_model(data, ModelSpec(fractional="error"))


def test_spec_round_trips_through_json_and_rejects_unknown_keys():
    spec = ModelSpec(kind="3pl", hierarchy="benchmark", dims="domain", priors=Priors(difficulty_sd_scale=3.0))
    again = ModelSpec.from_dict(json.loads(spec.to_json()))
    assert again == spec
    with pytest.raises(SpecError, match="unknown model spec key"):
        ModelSpec.from_dict({"kind": "2pl", "levels": 3})
    with pytest.raises(SpecError, match="kind must be one of"):
        ModelSpec(kind="4pl")
    with pytest.raises(SpecError, match="must be positive"):
        Priors(difficulty_sd_scale=-1.0)
    with pytest.raises(SpecError, match="unknown prior setting"):
        Priors.from_dict({"difficulty_scale": 1.0})


@pytest.mark.parametrize(
    "kind, dims, precision, modes",
    [
        ("2pl", "one", "float64", (FAST,)),  # the numba path is the same Op's, with the other kernel
        ("1pl", "one", "float64", (FAST,)),
        ("2pl", "domain", "float64", (FAST,)),
        # nutpie's path: compiling the Op through numba costs 15-25 s on empty caches; the kernels' own tests below
        # check their values in the default suite, and every real fit samples through this path
        pytest.param("2pl", "one", "auto", ("NUMBA",), marks=pytest.mark.slow),
        ("3pl", "one", "float64", (FAST,)),  # the 3PL's own kernel (float64 only)
        pytest.param("3pl", "one", "float64", ("NUMBA",), marks=pytest.mark.slow),
        ("3pl", "domain", "float64", (FAST,)),
    ],
)
def test_fused_likelihood_matches_the_plain_graph(labelled, kind, dims, precision, modes):
    """The fused Op's value and gradient (numba kernel; Python ``perform``) equal the plain PyTensor graph's (in
    Python): to the last digits in float64, and in float32 (the default) to 1e-7 of the log-density and 1e-5 of
    the largest gradient entry."""
    fused = build_model(labelled, ModelSpec(kind=kind, dims=dims, layout="fused", precision=precision))
    plain = build_model(labelled, ModelSpec(kind=kind, dims=dims, layout="long"))
    single = fused.irtbayes_spec.precision == "float32"
    assert single == (precision != "float64")
    rel, grad_tol = (1e-7, 1e-5) if single else (1e-12, 1e-9)
    rng = np.random.default_rng(1)
    point = {k: v + rng.normal(0, 0.4, np.shape(v)) for k, v in fused.initial_point().items()}
    # the plain graph is the reference, in Python (compiling it through numba too would cost 15 s on empty caches)
    lp, gp = float(plain.compile_logp(mode=FAST)(point)), np.asarray(plain.compile_dlogp(mode=FAST)(point))
    for mode in modes:
        lf, gf = float(fused.compile_logp(mode=mode)(point)), np.asarray(fused.compile_dlogp(mode=mode)(point))
        assert lf == pytest.approx(lp, rel=rel), f"{mode}: fused {lf} vs plain {lp}"
        scale = np.abs(gp).max()
        assert np.abs(gf - gp).max() <= grad_tol * scale + 1e-10, (
            f"{mode}: max gradient difference {np.abs(gf - gp).max()}"
        )


def test_fused_layout_is_the_default_for_dense_data_and_the_3pl_computes_in_float64(labelled):
    assert model_inputs(labelled, ModelSpec()).spec.layout == "fused"
    three = model_inputs(labelled, ModelSpec(kind="3pl")).spec
    assert (three.layout, three.precision) == ("fused", "float64")
    with pytest.raises(SpecError, match="float64"):
        model_inputs(labelled, ModelSpec(kind="3pl", layout="fused", precision="float32"))


def test_guessing_at_chance_is_fixed_per_item_and_matches_the_pooled_model_there(labelled):
    """``guessing="chance"``: each floor is 1 / n_options (an item without options: no floor), no free parameter;
    its log-density equals the pooled model's likelihood with the floors set there (the pooled one adds the
    floors' Beta prior only)."""
    n_options = np.where(np.arange(labelled.n_items) % 3 == 0, 0, 4)
    items = labelled.items.assign(n_options=n_options)
    data = ResponseData(labelled.responses, items, labelled.subjects, source="options")
    fixed = build_model(data, ModelSpec(kind="3pl", guessing="chance"))
    assert "guessing" not in [rv.name for rv in fixed.free_RVs]
    floors = fixed.compile_fn(fixed["guessing"], inputs=[], on_unused_input="ignore", mode=FAST)({})
    assert np.allclose(floors, np.where(n_options == 4, 0.25, 0.0), atol=1e-11)
    pooled = build_model(data, ModelSpec(kind="3pl"))
    point = fixed.initial_point()
    at_floor = {**point, "guessing_logodds__": np.log(floors / (1 - floors))}
    prior = pooled.compile_logp(vars=[pooled["guessing"]], mode=FAST)(at_floor)
    assert float(pooled.compile_logp(mode=FAST)(at_floor)) - float(prior) == pytest.approx(
        float(fixed.compile_logp(mode=FAST)(point)), rel=1e-9
    )


def _extreme_cells(seed: int, n: int, m: int, d: int = 2) -> tuple[np.ndarray, ...]:
    """Kernel inputs: abilities in ``d`` dimensions, three items with |eta| in the hundreds, in the thousands and
    near 0, half the items' responses fractional, 15% of cells unobserved."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, (n, d))
    a = np.exp(rng.normal(0, 0.6, m))
    a[:3] = [400.0, 1000.0, 1e-3]
    b = rng.normal(0, 2, m)
    item_dim = rng.integers(0, d, m).astype("int64")
    y = rng.uniform(size=(n, m))
    y[:, ::2] = (y[:, ::2] < 0.5).astype(float)
    w = (rng.uniform(size=(n, m)) < 0.85).astype(float)
    return theta, a, b, item_dim, y * w, w


@pytest.mark.parametrize("dims", [1, 2])
def test_fused_kernel_exp_and_extreme_linear_predictors(dims):
    """The kernel's own exp matches NumPy's to 2 ulp, and cells with |eta| up to 2,000 (where exp underflows),
    fractional scores, unobserved cells, more than 512 subjects, with one ability dimension (the row's ability
    held as one number) and several, all give NumPy's value and gradient; a NaN parameter gives a NaN
    log-likelihood instead of a finite one."""
    from irtbayes.core import irt
    from irtbayes.model.likelihood import _exp_nonpositive, _fused_kernel

    x = -np.concatenate([np.geomspace(1e-300, 700.0, 4000), np.linspace(0.0, 1.0, 1001)])
    assert np.max(np.abs(np.array([_exp_nonpositive(v) for v in x]) / np.exp(x) - 1)) <= 4.5e-16
    assert 0.0 < _exp_nonpositive(-1e4) < 1e-307  # held at exp(-708): no underflow to a NaN-making 0/0

    theta, a, b, item_dim, y, w = _extreme_cells(3, 1100, 23, dims)
    value, d_theta, d_a, d_b = _fused_kernel(theta, a, b, item_dim, y, w)

    diff = theta[:, item_dim] - b
    eta = a * diff
    assert value == pytest.approx((w * irt.log_likelihood(y, eta)).sum(), rel=1e-12)
    r = w * (y - 0.5 * (1.0 + np.tanh(eta / 2)))  # the logistic function, without overflow
    expected_theta = np.zeros_like(theta)
    np.add.at(expected_theta.T, item_dim, (r * a).T)
    np.testing.assert_allclose(d_theta, expected_theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_a, (r * diff).sum(axis=0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(d_b, -(r * a).sum(axis=0), rtol=1e-10, atol=1e-10)

    theta[5, 0] = np.nan
    assert np.isnan(_fused_kernel(theta, a, b, item_dim, y, w)[0])


@pytest.mark.parametrize("dims", [1, 2])
def test_floored_kernel_log_and_extreme_linear_predictors(dims):
    """The 3PL kernel's own log matches NumPy's to 3 ulp over the float64 range; its value and gradient match
    NumPy's on cells with |eta| in the thousands, fractional scores, unobserved cells, floors from 0 (items without
    options) to 1/2 and more than 512 subjects, in one ability dimension and several; a NaN parameter gives NaN."""
    from irtbayes.core import irt
    from irtbayes.model.likelihood import _floored_kernel, _log_positive

    x = np.concatenate([np.geomspace(2.3e-308, 1e300, 4000), np.linspace(0.5, 2.0, 1001)])
    assert np.max(np.abs(np.array([_log_positive(v) for v in x]) - np.log(x)) / np.spacing(np.abs(np.log(x)))) <= 3

    theta, a, b, item_dim, y, w = _extreme_cells(4, 1100, 23, dims)
    c = np.resize([0.25, 0.1, 0.5, 0.0, 1e-6], len(a))
    c[:2] = [0.25, 0.1]  # |eta| in the thousands: a floor of 0 there would need exp below exp(-708)
    value, d_theta, d_a, d_b, d_c = _floored_kernel(theta, a, b, c, item_dim, y, w)

    diff = theta[:, item_dim] - b
    eta = a * diff
    assert value == pytest.approx((w * irt.log_likelihood(y, eta, c)).sum(), rel=1e-12)
    sig = 0.5 * (1.0 + np.tanh(eta / 2))
    p = c + (1 - c) * sig
    r = w * (y * (1 - c) * sig * (1 - sig) / p - (1 - y) * sig)
    expected_theta = np.zeros_like(theta)
    np.add.at(expected_theta.T, item_dim, (r * a).T)
    np.testing.assert_allclose(d_theta, expected_theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_a, (r * diff).sum(axis=0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(d_b, -(r * a).sum(axis=0), rtol=1e-10, atol=1e-10)
    expected_c = (w * (y * (1 - sig) / p - (1 - y) / (1 - c))).sum(axis=0)
    np.testing.assert_allclose(d_c, expected_c, rtol=1e-10, atol=1e-10)

    theta[5, 0] = np.nan
    assert np.isnan(_floored_kernel(theta, a, b, c, item_dim, y, w)[0])


@pytest.mark.parametrize("dims", [1, 2])
def test_single_precision_kernel_matches_the_double_one(dims):
    """The float32 kernel's own exp is within 4 float32 ulp of NumPy's down to its floor; on cells with |eta| in
    the thousands, fractional scores, unobserved cells, more subjects than its 64-row blocks, in one dimension and
    several, its log-likelihood is within 1e-7 of the float64 kernel's (relative; 3e-8 here, where the terms
    of |eta| ~ 1,000 carry float32's rounding of eta) and its gradient within 1e-5 of the largest entry; a NaN
    parameter still gives a NaN."""
    from irtbayes.model.likelihood import _exp_nonpositive32, _fused_kernel, _fused_kernel32

    x = -np.concatenate([np.geomspace(1e-30, 87.0, 3000), np.linspace(0.0, 1.0, 1001)]).astype("float32")
    got = np.array([_exp_nonpositive32(v) for v in x], dtype="float64")
    assert np.max(np.abs(got / np.exp(x.astype("float64")) - 1)) <= 4 * np.finfo("float32").eps
    assert 0.0 < _exp_nonpositive32(np.float32(-1e4)) < 1e-37  # held at exp(-87): no 0/0

    theta, a, b, item_dim, y, w = _extreme_cells(5, 1100, 37, dims)
    expected = _fused_kernel(theta, a, b, item_dim, y, w)
    got32 = _fused_kernel32(theta, a, b, item_dim, y.astype("float32"), w.astype("float32"))
    assert got32[0] == pytest.approx(expected[0], rel=1e-7)
    for g, e in zip(got32[1:], expected[1:], strict=True):
        assert g.dtype == np.float64 and g.shape == e.shape
        assert np.abs(g - e).max() <= 1e-5 * np.abs(e).max()
    theta[1000, dims - 1] = np.nan  # in the last, partial block
    assert np.isnan(_fused_kernel32(theta, a, b, item_dim, y.astype("float32"), w.astype("float32"))[0])
