"""The acceptance rule on hand-built posterior draws: every reason and every boundary, exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes import DataError, FitError, ResponseData, SpecError
from irtbayes.benchfill import REASONS, decide, decide_all

LO, HI = 0.0, 1.0


def draws(below=0, inside=0, above=0, *, at_edges=False):
    """10-ish difficulty draws with exact counts below, inside and above [0, 1)."""
    inner = [0.0] * inside if at_edges else [0.5] * inside
    return np.array([-1.0] * below + inner + ([1.0] * above if at_edges else [2.0] * above))


def run(b, a=None, n=20, **options):
    a = np.ones_like(b) if a is None else a
    return decide(b, a, target_lo=LO, target_hi=HI, n_responses=n, **options)


def test_accepted_when_tau_is_met_exactly():
    decision = run(draws(below=2, inside=8))
    assert decision.accepted and decision.decision == "accepted" and decision.reason == "in target"
    assert decision.p_in_target == 0.8 and decision.failed == ()
    assert "P(0 <= b < 1) = 0.800 >= tau 0.8" in decision.detail, decision.detail


def test_just_short_of_tau_is_uncertain():
    decision = run(draws(below=3, inside=7))
    assert not decision.accepted and decision.reason == "uncertain", decision
    assert decision.p_in_target == pytest.approx(0.7) and decision.p_below == pytest.approx(0.3)
    assert "0.700 < tau 0.8" in decision.detail and "P(b < 0) = 0.300" in decision.detail


@pytest.mark.parametrize(
    ("counts", "reason"),
    [
        ({"below": 6, "inside": 4}, "too easy"),
        ({"below": 10}, "too easy"),
        ({"above": 6, "inside": 4}, "too hard"),
        ({"above": 10}, "too hard"),
        ({"below": 5, "inside": 5}, "uncertain"),  # exactly half below is not "most"
        ({"below": 4, "inside": 2, "above": 4}, "uncertain"),
        ({"above": 5, "below": 5}, "uncertain"),
    ],
)
def test_location_reasons(counts, reason):
    decision = run(draws(**counts))
    assert decision.reason == reason, f"{counts}: got {decision.reason} ({decision.detail})"
    assert decision.failed == (reason,)


def test_interval_is_half_open():
    inside_at_lo = run(draws(inside=10, at_edges=True))
    assert inside_at_lo.p_in_target == 1.0, "b == lo lies inside"
    at_hi = run(draws(above=10, at_edges=True))
    assert at_hi.p_in_target == 0.0 and at_hi.p_above == 1.0 and at_hi.reason == "too hard", "b == hi lies above"


def test_uninformative_and_its_boundary():
    b = draws(inside=10)
    nine = np.array([1.0] * 9 + [-0.5])
    eight = np.array([1.0] * 8 + [-0.5, -0.1])
    assert run(b, nine).accepted, "P(a > 0) = 0.9 meets discrimination_prob 0.9"
    decision = run(b, eight)
    assert decision.reason == "uninformative" and decision.p_discrimination_positive == pytest.approx(0.8)
    assert "P(a > 0) = 0.800 < 0.9" in decision.detail


def test_discrimination_threshold_is_strict():
    b = draws(inside=10)
    a = np.full(10, 0.5)
    assert run(b, a, min_discrimination=0.5).reason == "uninformative", "a == min_discrimination is not above it"
    assert run(b, a, min_discrimination=0.49).accepted


def test_not_enough_responses_and_its_boundary():
    b = draws(inside=10)
    assert run(b, n=10, min_responses=10).accepted
    decision = run(b, n=9, min_responses=10)
    assert decision.reason == "not enough responses" and "9 responses, fewer than 10" in decision.detail


def test_every_failure_is_listed_in_order():
    decision = run(draws(below=7, inside=3), np.full(10, -1.0), n=2)
    assert decision.failed == ("not enough responses", "too easy", "uninformative")
    assert decision.reason == "not enough responses"
    assert decision.to_record()["failed"] == "not enough responses; too easy; uninformative"
    assert set(decision.failed) < set(REASONS)


def test_tau_changes_the_verdict():
    b = draws(below=1, inside=9)
    assert run(b, tau=0.9).accepted
    assert run(b, tau=0.95).reason == "uncertain"
    assert run(b, tau=1.0).reason == "uncertain"
    assert run(draws(inside=10), tau=1.0).accepted


def test_summaries_are_exact():
    b = np.arange(101, dtype=float) / 100  # 0.00 .. 1.00
    a = np.linspace(1.0, 2.0, 101)
    decision = decide(b.reshape(1, 101), a, target_lo=0.25, target_hi=0.75, n_responses=30, ci_prob=0.9)
    assert decision.difficulty_mean == pytest.approx(0.5)
    assert decision.difficulty_ci_low == pytest.approx(0.05) and decision.difficulty_ci_high == pytest.approx(0.95)
    assert decision.discrimination_mean == pytest.approx(1.5)
    assert decision.p_in_target == pytest.approx(50 / 101) and decision.p_below == pytest.approx(25 / 101)
    assert decision.ci_prob == 0.9 and decision.n_responses == 30


def test_no_discrimination_means_a_fixed_at_one():
    decision = decide(draws(inside=10), None, target_lo=LO, target_hi=HI, n_responses=20)
    assert decision.accepted and decision.p_discrimination_positive == 1.0 and decision.discrimination_mean == 1.0


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"tau": 0.0}, SpecError, "tau"),
        ({"tau": 1.2}, SpecError, "tau"),
        ({"discrimination_prob": 0.0}, SpecError, "discrimination_prob"),
        ({"target_lo": 1.0}, SpecError, "lo < hi"),
        ({"min_responses": -1}, SpecError, "min_responses"),
        ({"ci_prob": 1.0}, SpecError, "ci_prob"),
        ({"n_responses": -3}, SpecError, "n_responses"),
        ({"difficulty_draws": np.array([0.5, np.nan])}, FitError, "NaN"),
        ({"difficulty_draws": np.array([])}, FitError, "no posterior draws"),
        ({"discrimination_draws": np.array([np.inf])}, FitError, "discrimination"),
    ],
)
def test_bad_settings_and_draws(options, error, message):
    settings = {
        "difficulty_draws": draws(inside=10),
        "discrimination_draws": np.ones(10),
        "target_lo": LO,
        "target_hi": HI,
        "n_responses": 20,
    } | options
    b, a = settings.pop("difficulty_draws"), settings.pop("discrimination_draws")
    with pytest.raises(error, match=message):
        decide(b, a, **settings)


# ------------------------------------------------------------------------------------------ decide_all
PLANTED = {
    "accept": (draws(below=2, inside=8), np.ones(10)),
    "easy": (draws(below=6, inside=4), np.ones(10)),
    "hard": (draws(above=7, inside=3), np.ones(10)),
    "spread": (draws(below=3, inside=4, above=3), np.ones(10)),
    "flat": (draws(inside=10), np.array([1.0] * 8 + [-1.0] * 2)),
}


def posterior(planted=PLANTED):
    """(chain=2, draw=5, item) arrays from 10 draws per item: draws 0-4 in chain 0, 5-9 in chain 1."""
    items = list(planted)
    b = np.stack([planted[i][0] for i in items], axis=-1).reshape(2, 5, len(items))
    a = np.stack([planted[i][1] for i in items], axis=-1).reshape(2, 5, len(items))
    return xr.Dataset(
        {"difficulty": (("chain", "draw", "item"), b), "discrimination": (("chain", "draw", "item"), a)},
        coords={"chain": [0, 1], "draw": np.arange(5), "item": items},
    )


def test_decide_all_matches_decide_item_by_item():
    counts = {"accept": 20, "easy": 20, "hard": 20, "spread": 20, "flat": 20}
    table = decide_all(posterior(), target_lo=LO, target_hi=HI, n_responses=counts)
    assert list(table.index) == list(PLANTED) and table.index.name == "item"
    assert dict(table["reason"]) == {
        "accept": "in target",
        "easy": "too easy",
        "hard": "too hard",
        "spread": "uncertain",
        "flat": "uninformative",
    }
    assert list(table["decision"]) == ["accepted"] + ["rejected"] * 4
    for item, (b, a) in PLANTED.items():
        one = decide(b, a, target_lo=LO, target_hi=HI, n_responses=20)
        row = table.loc[item]
        for key in (
            "p_in_target",
            "p_below",
            "p_above",
            "p_discrimination_positive",
            "difficulty_mean",
            "difficulty_ci_low",
            "difficulty_ci_high",
            "discrimination_mean",
        ):
            assert row[key] == pytest.approx(getattr(one, key)), f"{item} {key}: {row[key]} vs {getattr(one, key)}"
        assert row["detail"] == one.detail
    assert table.attrs["ci_prob"] == 0.9 and table.attrs["tau"] == 0.8


def test_decide_all_response_counts():
    ds = posterior()
    by_int = decide_all(ds, target_lo=LO, target_hi=HI, n_responses=5)
    assert set(by_int["reason"]) == {"not enough responses"} and (by_int["n_responses"] == 5).all()
    responses = pd.DataFrame({"subject": [f"s{k}" for k in range(12)], "item": "accept", "response": 1.0})
    data = ResponseData.from_long(responses)
    by_data = decide_all(ds, target_lo=LO, target_hi=HI, n_responses=data, items=["accept", "easy"])
    assert dict(by_data["n_responses"]) == {"accept": 12, "easy": 0}
    assert dict(by_data["reason"]) == {"accept": "in target", "easy": "not enough responses"}
    series = pd.Series({"accept": 30, "easy": 30})
    assert list(
        decide_all(ds, target_lo=LO, target_hi=HI, n_responses=series, items=["accept", "easy"])["n_responses"]
    ) == [30, 30]
    with pytest.raises(DataError, match=r"no response count for item\(s\) \['easy'\]"):
        decide_all(ds, target_lo=LO, target_hi=HI, n_responses={"accept": 30}, items=["accept", "easy"])


def test_decide_all_inputs():
    ds = posterior()
    tree = xr.DataTree.from_dict({"posterior": ds})
    assert decide_all(tree, target_lo=LO, target_hi=HI, n_responses=20).equals(
        decide_all(ds, target_lo=LO, target_hi=HI, n_responses=20)
    )
    rasch = ds.drop_vars("discrimination")
    assert decide_all(rasch, target_lo=LO, target_hi=HI, n_responses=20).loc["flat", "decision"] == "accepted"
    shared = ds.assign(discrimination=ds["discrimination"].isel(item=0))
    assert decide_all(shared, target_lo=LO, target_hi=HI, n_responses=20).loc["flat", "decision"] == "accepted"
    with pytest.raises(DataError, match=r"\['nope'\] are not in the posterior"):
        decide_all(ds, target_lo=LO, target_hi=HI, n_responses=20, items=["accept", "nope"])
    multidim = ds.assign(discrimination=ds["discrimination"].expand_dims({"dim": [0, 1]}, axis=-1))
    with pytest.raises(SpecError, match="extra dims \\['dim'\\]"):
        decide_all(multidim, target_lo=LO, target_hi=HI, n_responses=20)
    with pytest.raises(FitError, match="no 'difficulty'"):
        decide_all(ds.drop_vars("difficulty"), target_lo=LO, target_hi=HI, n_responses=20)
    with pytest.raises(FitError, match="no 'posterior' group"):
        decide_all(xr.DataTree.from_dict({"prior": ds}), target_lo=LO, target_hi=HI, n_responses=20)
