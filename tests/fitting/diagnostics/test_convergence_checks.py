"""Convergence checks that cannot pass by accident, on hand-built draws (no sampling).

NaN or missing diagnostics fail with a reason; every informative element of every variable is judged
(correlations and Cholesky factors included, constant elements left out by rule); tail ESS is taken at the
ends of the reported interval; few standardised subjects are stated.
"""

from __future__ import annotations

import warnings

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr

from irtbayes.fitting.diagnostics.convergence import excluded_elements
from irtbayes.fitting.diagnostics.sampler import check_convergence, checked_variables
from irtbayes.fitting.diagnostics.verdict import Diagnostics

CHAINS, DRAWS = 4, 1000


def _stats(rng: np.random.Generator, chains: int = CHAINS, draws: int = DRAWS) -> xr.Dataset:
    return xr.Dataset(
        {
            "diverging": (("chain", "draw"), np.zeros((chains, draws), dtype=bool)),
            "energy": (("chain", "draw"), rng.normal(size=(chains, draws))),
            "maxdepth_reached": (("chain", "draw"), np.zeros((chains, draws), dtype=bool)),
            "n_steps": (("chain", "draw"), np.full((chains, draws), 7.0)),
        }
    )


def _tree(posterior: xr.Dataset, stats: xr.Dataset | None) -> xr.DataTree:
    groups = {"posterior": posterior}
    if stats is not None:
        groups["sample_stats"] = stats
    return xr.DataTree.from_dict(groups)


def _good_posterior(rng: np.random.Generator, chains: int = CHAINS, draws: int = DRAWS) -> xr.Dataset:
    """Independent draws: every check passes."""
    return xr.Dataset(
        {
            "difficulty": (("chain", "draw", "item"), rng.normal(size=(chains, draws, 3))),
            "difficulty_sd": (("chain", "draw"), np.abs(rng.normal(size=(chains, draws))) + 0.1),
        },
        coords={"item": ["i0", "i1", "i2"]},
    )


def _quiet_check(tree: xr.DataTree, **kwargs: object) -> Diagnostics:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # hand-built draws here need no warning; a surprise one fails the test
        return check_convergence(tree, **kwargs)  # type: ignore[arg-type]


def test_independent_draws_pass() -> None:
    rng = np.random.default_rng(0)
    diag = _quiet_check(_tree(_good_posterior(rng), _stats(rng)))
    assert diag.ok, diag.to_text()
    assert diag.to_text().startswith("Converged"), diag.to_text()
    assert np.isfinite(diag.max_rhat) and diag.min_ess_tail >= 400, diag.to_text()


# ------------------------------------------------------------------------------------------ NaN is not a pass
def test_nan_draws_give_nan_rhat_and_fail() -> None:
    rng = np.random.default_rng(1)
    post = _good_posterior(rng)
    values = post["difficulty"].values.copy()
    values[2, 500:, 1] = np.nan  # an interrupted chain padded with NaN
    post["difficulty"] = (("chain", "draw", "item"), values)
    diag = _quiet_check(_tree(post, _stats(rng)))
    assert not diag.ok, diag.to_text()
    assert any("r-hat is not finite (nan) at difficulty[i1]" in p for p in diag.problems), diag.problems
    assert any(
        "500 non-finite (NaN or infinite) draw(s) in difficulty, first at difficulty[i1]" in p for p in diag.problems
    )
    assert np.isnan(diag.max_rhat), "one NaN r-hat must make the largest r-hat NaN, not be skipped"
    assert np.isnan(diag.min_ess_bulk) and np.isnan(diag.min_ess_tail)
    assert "NOT converged (" in diag.to_text() and "max r-hat NaN" in diag.to_text(), diag.to_text()
    worst = {v.name: v for v in diag.variables}["difficulty"]
    assert np.isnan(worst.max_rhat) and worst.worst_rhat == "difficulty[i1]"


def test_a_parameter_stuck_within_each_chain_has_no_finite_rhat_and_fails() -> None:
    rng = np.random.default_rng(2)
    post = _good_posterior(rng)
    post["difficulty_sd"] = (("chain", "draw"), np.repeat(np.arange(1.0, CHAINS + 1)[:, None], DRAWS, axis=1))
    diag = _quiet_check(_tree(post, _stats(rng)))
    assert not diag.ok
    assert any(p.startswith("r-hat is not finite") and "difficulty_sd" in p for p in diag.problems), diag.problems


def test_empty_trace_fails_with_its_reason() -> None:
    rng = np.random.default_rng(3)
    post = _good_posterior(rng, draws=0)
    diag = _quiet_check(_tree(post, _stats(rng, draws=0)))
    assert not diag.ok and diag.n_draws == 0 and diag.n_chains == CHAINS
    assert diag.problems == [
        f"the trace is empty ({CHAINS} chains x 0 draws): no draws were kept, so convergence cannot be checked"
    ]
    assert diag.to_text().startswith("NOT converged (the trace is empty"), diag.to_text()
    assert np.isnan(diag.max_rhat) and diag.to_dict()["max_rhat"] is None


def test_no_chains_fails() -> None:
    post = xr.Dataset({"difficulty": (("chain", "draw"), np.zeros((0, 0)))})
    diag = _quiet_check(_tree(post, None))
    assert not diag.ok and "trace is empty" in diag.problems[0]


def test_posterior_without_chain_and_draw_fails() -> None:
    post = xr.Dataset({"difficulty": (("sample",), np.zeros(10))})
    diag = _quiet_check(_tree(post, None))
    assert not diag.ok and "no chain and draw dims" in diag.problems[0], diag.problems


def test_one_chain_fails_with_its_reason_and_no_nan_noise() -> None:
    rng = np.random.default_rng(4)
    diag = _quiet_check(_tree(_good_posterior(rng, chains=1, draws=2000), _stats(rng, chains=1, draws=2000)))
    assert not diag.ok
    assert diag.problems == ["only 1 chain: r-hat needs at least 2 chains"], diag.problems
    assert "only 1 chain" in diag.to_text().splitlines()[0]


def test_too_few_draws_fail_with_their_reason() -> None:
    rng = np.random.default_rng(5)
    diag = _quiet_check(_tree(_good_posterior(rng, draws=3), _stats(rng, draws=3)))
    assert not diag.ok
    assert "only 3 draws per chain: r-hat and ESS need at least 4" in diag.problems, diag.problems


def test_missing_sample_stats_fail() -> None:
    rng = np.random.default_rng(6)
    diag = _quiet_check(_tree(_good_posterior(rng), None))
    assert not diag.ok
    assert diag.problems == ["no sample_stats group: divergences and E-BFMI are unknown"], diag.problems
    assert diag.to_text().startswith("NOT converged (no sample_stats group")


@pytest.mark.parametrize(
    ("drop", "reason"),
    [
        ("diverging", "the sampler recorded no divergence flags ('diverging'): divergences are unknown"),
        ("energy", "the sampler recorded no energy: E-BFMI is unknown"),
    ],
)
def test_missing_divergences_or_energy_fail(drop: str, reason: str) -> None:
    rng = np.random.default_rng(7)
    diag = _quiet_check(_tree(_good_posterior(rng), _stats(rng).drop_vars(drop)))
    assert not diag.ok and diag.problems == [reason], diag.problems


def test_missing_tree_depth_is_a_note_not_a_pass_of_something_unknown() -> None:
    rng = np.random.default_rng(8)
    diag = _quiet_check(_tree(_good_posterior(rng), _stats(rng).drop_vars("maxdepth_reached")))
    assert diag.ok, diag.to_text()
    assert diag.notes == ["the sampler did not record tree-depth saturation; it is not checked"]
    assert "note: the sampler did not record tree-depth saturation" in diag.to_text()


def test_nan_divergence_flags_and_nan_ebfmi_fail() -> None:
    rng = np.random.default_rng(9)
    stats = _stats(rng)
    flags = np.zeros((CHAINS, DRAWS))
    flags[1, -10:] = np.nan
    stats["diverging"] = (("chain", "draw"), flags)
    stats["energy"] = (("chain", "draw"), np.ones((CHAINS, DRAWS)))  # no energy variance: E-BFMI is 0/0
    diag = _quiet_check(_tree(_good_posterior(rng), stats))
    assert not diag.ok
    assert "divergence flags are missing (NaN) in 10 draw(s)" in diag.problems, diag.problems
    assert "E-BFMI is NaN in chain(s) [0, 1, 2, 3]" in diag.problems, diag.problems


def test_divergences_are_counted_and_fail() -> None:
    rng = np.random.default_rng(10)
    stats = _stats(rng)
    flags = np.zeros((CHAINS, DRAWS), dtype=bool)
    flags[0, :5] = True
    stats["diverging"] = (("chain", "draw"), flags)
    diag = _quiet_check(_tree(_good_posterior(rng), stats))
    assert not diag.ok and diag.divergences == 5 and "5 divergent transition(s)" in diag.problems


# ------------------------------------------------------------------------- every informative element checked
def _corr_posterior(rng: np.random.Generator, *, offset: float) -> xr.Dataset:
    """A 3 x 3 ability correlation built as chol @ chol.T (diagonal 1 up to rounding) and its Cholesky factor;
    ``offset`` shifts the off-diagonal correlations of chain 0 (chains that disagree)."""
    r = np.tanh(rng.normal(0.3, 0.05, size=(CHAINS, DRAWS, 3)))
    r[0] = np.tanh(np.arctanh(r[0]) + offset)
    chol = np.zeros((CHAINS, DRAWS, 3, 3))
    chol[..., 0, 0] = 1.0
    chol[..., 1, 0] = r[..., 0]
    chol[..., 1, 1] = np.sqrt(1 - r[..., 0] ** 2)
    chol[..., 2, 0] = r[..., 1] * 0.6
    chol[..., 2, 1] = r[..., 2] * 0.5
    chol[..., 2, 2] = np.sqrt(1 - chol[..., 2, 0] ** 2 - chol[..., 2, 1] ** 2)
    corr = np.einsum("cdij,cdkj->cdik", chol, chol)
    dims = ["math", "code", "law"]
    return xr.Dataset(
        {
            "ability_corr": (("chain", "draw", "dim", "dim2"), corr),
            "ability_corr_chol": (("chain", "draw", "dim", "dim2"), chol),
            "ability_z": (("chain", "draw", "subject"), np.cumsum(rng.normal(size=(CHAINS, DRAWS, 2)), axis=1)),
        },
        coords={"dim": dims, "dim2": dims, "subject": ["s0", "s1"]},
    )


def test_correlation_diagonal_is_excluded_by_rule_not_by_nan() -> None:
    rng = np.random.default_rng(11)
    post = _corr_posterior(rng, offset=0.0)
    diagonal = post["ability_corr"].values[..., [0, 1, 2], [0, 1, 2]]
    assert np.ptp(diagonal) > 0, "the test needs the rounding noise of chol @ chol.T on the diagonal"
    mask, counts = excluded_elements(post["ability_corr"])
    np.testing.assert_array_equal(mask, np.eye(3, dtype=bool))
    assert counts == {"correlation diagonal": 3, "constant": 0}
    mask, counts = excluded_elements(post["ability_corr_chol"])
    # the first row [1, 0, 0] and the zeros above the diagonal are constant; the rest varies
    np.testing.assert_array_equal(mask, np.array([[1, 1, 1], [0, 0, 1], [0, 0, 0]], dtype=bool))
    assert counts == {"correlation diagonal": 0, "constant": 4}
    diag = _quiet_check(_tree(post, _stats(rng)))
    assert diag.ok, diag.to_text()
    by_name = {v.name: v for v in diag.variables}
    assert set(by_name) == {"ability_corr", "ability_corr_chol"}, "raw *_z coordinates are not judged"
    assert by_name["ability_corr"].n_excluded == 3 and by_name["ability_corr"].n_checked == 6
    assert by_name["ability_corr_chol"].n_excluded == 4 and by_name["ability_corr_chol"].n_checked == 5
    table = diag.parameters
    assert table is not None
    corr_rows = table.loc[table["variable"] == "ability_corr", "index"].tolist()
    assert corr_rows == ["math,code", "math,law", "code,math", "code,law", "law,math", "law,code"], corr_rows
    assert np.isfinite(table[["r_hat", "ess_bulk", "ess_tail"]].to_numpy()).all(), table


def test_correlation_with_chains_that_disagree_fails_at_an_off_diagonal() -> None:
    rng = np.random.default_rng(12)
    diag = _quiet_check(_tree(_corr_posterior(rng, offset=0.5), _stats(rng)))
    assert not diag.ok
    corr = next(v for v in diag.variables if v.name == "ability_corr")
    assert corr.max_rhat > 1.5, diag.to_text()
    assert corr.worst_rhat in {
        f"ability_corr[{a}, {b}]" for a in ("math", "code", "law") for b in ("math", "code", "law") if a != b
    }
    assert any(p.startswith("r-hat") and "ability_corr[" in p for p in diag.problems), diag.problems
    assert any(p.startswith("r-hat") and "ability_corr_chol[" in p for p in diag.problems), diag.problems


def test_diagonal_of_a_correlation_is_excluded_even_when_it_varies() -> None:
    """The diagonal rule is explicit: a correlation's diagonal is never judged, whatever its draws."""
    rng = np.random.default_rng(13)
    corr = np.tile(np.eye(2), (CHAINS, DRAWS, 1, 1)) + rng.normal(0, 0.2, size=(CHAINS, DRAWS, 2, 2))
    da = xr.DataArray(corr, dims=("chain", "draw", "dim", "dim2"), name="ability_corr")
    mask, counts = excluded_elements(da)
    np.testing.assert_array_equal(mask, np.eye(2, dtype=bool))
    assert counts["correlation diagonal"] == 2 and counts["constant"] == 0


def test_constant_rule_keeps_nan_draws_and_informative_elements() -> None:
    x = np.zeros((2, 10, 3))
    x[..., 0] = 2.5  # constant
    x[..., 1] = np.arange(10)  # varies
    x[..., 2] = 2.5
    x[1, 3, 2] = np.nan  # constant except one NaN draw: judged, and fails
    mask, counts = excluded_elements(xr.DataArray(x, dims=("chain", "draw", "p"), name="difficulty"))
    np.testing.assert_array_equal(mask, [True, False, False])
    assert counts == {"correlation diagonal": 0, "constant": 1}
    x[1, 3, 2] = np.inf  # an infinite draw is no constant either
    mask, _ = excluded_elements(xr.DataArray(x, dims=("chain", "draw", "p"), name="difficulty"))
    np.testing.assert_array_equal(mask, [True, False, False])
    x[..., 1] = 1e6 + np.arange(10) * 1e-5  # a spread of 1e-10 of the value: still informative
    mask, _ = excluded_elements(xr.DataArray(x, dims=("chain", "draw", "p"), name="difficulty"))
    assert not mask[1]
    x[..., 0] = 1.0 + np.finfo(float).eps * np.arange(10)  # rounding noise on a fixed value: constant
    mask, counts = excluded_elements(xr.DataArray(x, dims=("chain", "draw", "p"), name="difficulty"))
    assert mask[0] and counts["constant"] == 1


def test_every_variable_but_raw_coordinates_is_checked() -> None:
    post = xr.Dataset(
        {
            name: (("chain", "draw"), np.zeros((2, 5)))
            for name in ("ability_z", "difficulty_z", "ability_corr", "ability_corr_chol", "intercept", "difficulty_sd")
        }
    )
    assert checked_variables(post) == ["ability_corr", "ability_corr_chol", "intercept", "difficulty_sd"]


def test_a_fully_constant_variable_is_noted_and_does_not_hide_the_others() -> None:
    rng = np.random.default_rng(14)
    post = _good_posterior(rng)
    post["fixed"] = (("chain", "draw"), np.full((CHAINS, DRAWS), 0.5))
    diag = _quiet_check(_tree(post, _stats(rng)))
    assert diag.ok, diag.to_text()
    assert "fixed: every element is constant over the draws; nothing to check" in diag.notes
    assert np.isfinite(diag.max_rhat), "a variable with nothing to check must not make the worst r-hat NaN"


# -------------------------------------------------------------------------------------- tail ESS at the interval
@pytest.mark.parametrize("ci_prob", [0.9, 0.5])
def test_tail_ess_is_at_the_ends_of_the_reported_interval(ci_prob: float) -> None:
    rng = np.random.default_rng(15)
    x = np.zeros((CHAINS, 400, 3))
    noise = rng.normal(size=x.shape)
    for t in range(1, 400):
        x[:, t] = 0.85 * x[:, t - 1] + noise[:, t]
    post = xr.Dataset({"difficulty": (("chain", "draw", "item"), x)}, coords={"item": ["a", "b", "c"]})
    diag = _quiet_check(_tree(post, _stats(rng, draws=400)), ci_prob=ci_prob, ess_min=10)
    low = (1 - ci_prob) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = azs.ess(post["difficulty"], method="tail", prob=(round(low, 12), round(1 - low, 12))).values
        arviz_default = azs.ess(post["difficulty"], method="tail").values
    assert diag.parameters is not None
    np.testing.assert_allclose(diag.parameters["ess_tail"].to_numpy(), want, rtol=1e-9)
    assert not np.allclose(want, arviz_default, rtol=1e-6), "the interval ends must differ from 0.11/0.89 here"
    assert diag.min_ess_tail == pytest.approx(want.min(), rel=1e-9)
    assert diag.thresholds["ci_prob"] == ci_prob
    assert f"at the {low:g} and {1 - low:g} quantiles" in diag.to_text(), diag.to_text()


def test_bad_ci_prob_is_refused() -> None:
    rng = np.random.default_rng(16)
    with pytest.raises(Exception, match="ci_prob"):
        check_convergence(_tree(_good_posterior(rng, draws=10), _stats(rng, draws=10)), ci_prob=1.0)


# ------------------------------------------------------------------------------ few standardised subjects
def _abilities(rng: np.random.Generator, n: int, *, standardise: bool) -> xr.Dataset:
    raw = rng.normal(size=(CHAINS, DRAWS, n))
    if standardise:
        raw = (raw - raw.mean(axis=2, keepdims=True)) / raw.std(axis=2, keepdims=True)
    return xr.Dataset({"ability": (("chain", "draw", "subject"), raw)}, coords={"subject": [f"s{i}" for i in range(n)]})


def test_standardised_over_fewer_than_ten_subjects_warns() -> None:
    rng = np.random.default_rng(17)
    tree = _tree(_abilities(rng, 6, standardise=True), _stats(rng))
    with pytest.warns(UserWarning, match="standardised over only 6 subjects"):
        diag = check_convergence(tree)
    assert len(diag.notes) == 1 and "within +-2.24 (sqrt(subjects - 1))" in diag.notes[0], diag.notes
    assert "note: abilities are standardised over only 6 subjects" in diag.to_text()
    restored = Diagnostics.from_dict(diag.to_dict())
    assert restored.notes == diag.notes


@pytest.mark.parametrize(("n", "standardise", "flag"), [(10, True, None), (6, False, None), (6, True, False)])
def test_no_small_sample_warning_otherwise(n: int, standardise: bool, flag: bool | None) -> None:
    rng = np.random.default_rng(18)
    diag = _quiet_check(_tree(_abilities(rng, n, standardise=standardise), _stats(rng)), standardised=flag)
    assert not any("standardised" in note for note in diag.notes), diag.notes


def test_standardised_flag_given_by_the_caller_is_used() -> None:
    rng = np.random.default_rng(19)
    tree = _tree(_abilities(rng, 4, standardise=False), _stats(rng))
    with pytest.warns(UserWarning, match="standardised over only 4 subjects"):
        check_convergence(tree, standardised=True)


def test_empty_trace_still_reports_few_subjects_when_told() -> None:
    post = xr.Dataset(
        {"ability": (("chain", "draw", "subject"), np.zeros((4, 0, 5)))}, coords={"subject": list("abcde")}
    )
    with pytest.warns(UserWarning, match="over only 5 subjects"):
        diag = check_convergence(_tree(post, None), standardised=True)
    assert not diag.ok and "trace is empty" in diag.problems[0]


# ------------------------------------------------------------------------------------------------ round trip
def test_card_round_trip_keeps_exclusions_notes_and_interval() -> None:
    rng = np.random.default_rng(20)
    diag = _quiet_check(_tree(_corr_posterior(rng, offset=0.0), _stats(rng).drop_vars("maxdepth_reached")))
    restored = Diagnostics.from_dict(diag.to_dict())
    assert restored.to_dict() == diag.to_dict()
    assert restored.to_text() == diag.to_text()
    old_card = diag.to_dict()
    old_card["thresholds"].pop("ci_prob")
    old_card.pop("notes")
    for v in old_card["variables"]:
        v.pop("n_excluded")
    old = Diagnostics.from_dict(old_card)
    assert old.notes == [] and "thresholds r-hat <= 1.01, bulk ESS and tail ESS >= 400" in old.to_text()
