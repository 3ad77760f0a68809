"""The acceptance rule on hand-built posterior draws: every reason and every boundary, exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.benchfill.acceptance import REASONS, AcceptanceRule, decide, decide_all
from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.data.responses import ResponseData

LO, HI = 0.0, 1.0


def draws(below=0, inside=0, above=0, *, at_edges=False):
    """10-ish difficulty draws with exact counts below, inside and above [0, 1)."""
    inner = [0.0] * inside if at_edges else [0.5] * inside
    return np.array([-1.0] * below + inner + ([1.0] * above if at_edges else [2.0] * above))


def run(b, a=None, n=20, *, slope=None, data=None, **rule):
    """Decide with a clearly rising slope (1.0) and data-alone draws equal to ``b`` unless given; ``rule``: the
    fields of the AcceptanceRule."""
    a = np.ones_like(b) if a is None else a
    slope = np.ones_like(b) if slope is None else slope
    data = b if data is None else data
    return decide(
        b,
        a,
        aim_lo=LO,
        aim_hi=HI,
        n_responses=n,
        slope_draws=slope,
        data_difficulty_draws=data,
        rule=AcceptanceRule(**rule),
    )


def test_accepted_when_tau_is_met_exactly():
    decision = run(draws(below=2, inside=8))
    assert decision.accepted and decision.decision == "accepted" and decision.reason == "in aim"
    assert decision.p_in_aim == 0.8 and decision.failed == ()
    assert "P(0 <= b < 1) = 0.800 (0.800 from the data alone) >= tau 0.8" in decision.detail, decision.detail


def test_just_short_of_tau_is_uncertain():
    decision = run(draws(below=3, inside=7))
    assert not decision.accepted and decision.reason == "uncertain", decision
    assert decision.p_in_aim == pytest.approx(0.7) and decision.p_below == pytest.approx(0.3)
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
    assert inside_at_lo.p_in_aim == 1.0, "b == lo lies inside"
    at_hi = run(draws(above=10, at_edges=True))
    assert at_hi.p_in_aim == 0.0 and at_hi.p_above == 1.0 and at_hi.reason == "too hard", "b == hi lies above"


def test_flat_and_its_boundary():
    b = draws(inside=10)
    nine = np.array([1.0] * 9 + [0.0])
    eight = np.array([1.0] * 8 + [0.0, -0.1])
    assert run(b, slope=nine).accepted, "P(slope > 0) = 0.9 meets discrimination_prob 0.9"
    decision = run(b, slope=eight)
    assert decision.reason == "flat" and decision.p_slope_above_min == pytest.approx(0.8), decision
    assert "flat: no credible relation to ability" in decision.detail and "P(slope > 0) = 0.800" in decision.detail


def test_slope_threshold_is_strict_and_the_model_discrimination_is_not_checked():
    b = draws(inside=10)
    slope = np.full(10, 0.5)
    assert run(b, slope=slope, min_discrimination=0.5).reason == "flat", "slope == min_discrimination is not above"
    assert run(b, slope=slope, min_discrimination=0.49).accepted
    # a = exp(.) > 0 always: a flat item whose prior gives it a = 0.42 must still fail on its slope
    decision = run(b, np.full(10, 0.42), slope=np.linspace(-0.2, 0.3, 10), min_discrimination=0.25)
    assert decision.reason == "flat" and decision.discrimination_mean == pytest.approx(0.42)


def test_mis_keyed_is_the_mirror_of_acceptance():
    b = draws(inside=10)
    falling = np.array([-1.0] * 9 + [0.5])
    decision = run(b, slope=falling, min_discrimination=0.25)
    assert decision.reason == "mis-keyed" and decision.failed == ("mis-keyed",), decision
    assert decision.p_slope_below_min == pytest.approx(0.9) and decision.p_discrimination_positive == pytest.approx(0.1)
    assert "mis-keyed: responses fall with ability (P(slope < -0.25) = 0.900" in decision.detail
    # negative but not credibly below -min_discrimination: flat, not mis-keyed
    slightly = np.array([-0.2] * 10)
    assert run(b, slope=slightly, min_discrimination=0.25).reason == "flat"
    assert run(b, slope=slightly, min_discrimination=0.0).reason == "mis-keyed"
    assert decision.slope_mean == pytest.approx(-0.85) and decision.min_discrimination == 0.25


@pytest.mark.parametrize("slope", [None, np.array([1.0] * 9 + [np.nan])])
def test_a_missing_slope_rejects(slope):
    b = draws(inside=10)
    decision = decide(b, np.ones(10), aim_lo=LO, aim_hi=HI, n_responses=20, slope_draws=slope, data_difficulty_draws=b)
    assert not decision.accepted and decision.reason == "slope missing", decision
    assert np.isnan(decision.p_slope_above_min) and "relation to ability is unchecked" in decision.detail


@pytest.mark.parametrize("data", [None, np.array([0.5] * 9 + [np.nan])])
def test_a_missing_data_alone_piece_rejects(data):
    b = draws(inside=10)
    decision = decide(
        b, np.ones(10), aim_lo=LO, aim_hi=HI, n_responses=20, slope_draws=np.ones(10), data_difficulty_draws=data
    )
    assert not decision.accepted and decision.reason == "data-alone missing", decision
    assert decision.p_in_aim == 1.0 and np.isnan(decision.p_in_aim_data)
    assert "data-alone draws (flat prior on b) are missing" in decision.detail


def test_prior_driven():
    decision = run(draws(inside=10), data=draws(below=3, inside=7))
    assert decision.reason == "prior-driven" and decision.p_in_aim_data == pytest.approx(0.7)
    assert "0.700 < tau 0.8 from the data alone" in decision.detail


def test_not_enough_responses_and_its_boundary():
    b = draws(inside=10)
    assert run(b, n=10, min_responses=10).accepted
    decision = run(b, n=9, min_responses=10)
    assert decision.reason == "not enough responses" and "9 responses, fewer than 10" in decision.detail


def test_every_failure_is_listed_in_order():
    decision = run(draws(below=7, inside=3), slope=np.full(10, -1.0), n=2)
    assert decision.failed == ("not enough responses", "mis-keyed", "too easy")
    assert decision.reason == "not enough responses"
    assert decision.to_record()["failed"] == "not enough responses; mis-keyed; too easy"
    assert set(decision.failed) < set(REASONS)
    # mis-keyed is named before the location, flat after it
    assert run(draws(below=7, inside=3), slope=np.zeros(10)).failed == ("too easy", "flat")
    assert run(draws(inside=10), slope=np.zeros(10), data=None).failed == ("flat",)


def test_tau_changes_the_verdict():
    b = draws(below=1, inside=9)
    assert run(b, tau=0.9).accepted
    assert run(b, tau=0.95).reason == "uncertain"
    assert run(b, tau=1.0).reason == "uncertain"
    assert run(draws(inside=10), tau=1.0).accepted


def test_summaries_are_exact():
    b = np.arange(101, dtype=float) / 100  # 0.00 .. 1.00
    a = np.linspace(1.0, 2.0, 101)
    decision = decide(
        b.reshape(1, 101),
        a,
        aim_lo=0.25,
        aim_hi=0.75,
        n_responses=30,
        rule=AcceptanceRule(ci_prob=0.9),
        slope_draws=a - 1.0,
        data_difficulty_draws=b,
    )
    assert decision.difficulty_mean == pytest.approx(0.5)
    assert decision.difficulty_ci_low == pytest.approx(0.05) and decision.difficulty_ci_high == pytest.approx(0.95)
    assert decision.discrimination_mean == pytest.approx(1.5)
    assert decision.p_in_aim == pytest.approx(50 / 101) and decision.p_below == pytest.approx(25 / 101)
    assert decision.ci_prob == 0.9 and decision.n_responses == 30
    assert decision.slope_mean == pytest.approx(0.5) and decision.slope_ci_low == pytest.approx(0.05)
    assert decision.p_discrimination_positive == pytest.approx(100 / 101), "P(slope > 0): 0.00 is not above"


def test_no_discrimination_means_a_fixed_at_one():
    b = draws(inside=10)
    decision = decide(b, None, aim_lo=LO, aim_hi=HI, n_responses=20, slope_draws=np.ones(10), data_difficulty_draws=b)
    assert decision.accepted and decision.discrimination_mean == 1.0


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"tau": 0.0}, SpecError, "tau"),
        ({"tau": 1.2}, SpecError, "tau"),
        ({"discrimination_prob": 0.0}, SpecError, "discrimination_prob"),
        ({"aim_lo": 1.0}, SpecError, "lo < hi"),
        ({"min_responses": -1}, SpecError, "min_responses"),
        ({"ci_prob": 1.0}, SpecError, "ci_prob"),
        ({"n_responses": -3}, SpecError, "n_responses"),
        ({"difficulty_draws": np.array([0.5, np.nan])}, FitError, "NaN"),
        ({"difficulty_draws": np.array([])}, FitError, "no posterior draws"),
        ({"discrimination_draws": np.array([np.inf])}, FitError, "discrimination"),
        ({"min_discrimination": -0.1}, SpecError, "min_discrimination"),
        ({"min_discrimination": float("nan")}, SpecError, "min_discrimination"),
    ],
)
def test_bad_settings_and_draws(options, error, message):
    settings = {
        "difficulty_draws": draws(inside=10),
        "discrimination_draws": np.ones(10),
        "aim_lo": LO,
        "aim_hi": HI,
        "n_responses": 20,
        "slope_draws": np.ones(10),
        "data_difficulty_draws": draws(inside=10),
    } | options
    b, a = settings.pop("difficulty_draws"), settings.pop("discrimination_draws")
    rule = {key: settings.pop(key) for key in list(settings) if key in AcceptanceRule.__dataclass_fields__}
    with pytest.raises(error, match=message):
        decide(b, a, **settings, rule=AcceptanceRule(**rule))


# ------------------------------------------------------------------------------------------ decide_all
PLANTED = {
    "accept": (draws(below=2, inside=8), np.ones(10)),
    "easy": (draws(below=6, inside=4), np.ones(10)),
    "hard": (draws(above=7, inside=3), np.ones(10)),
    "spread": (draws(below=3, inside=4, above=3), np.ones(10)),
    "flat": (draws(inside=10), np.array([1.0] * 8 + [0.1] * 2)),
    "mis-keyed": (draws(inside=10), np.full(10, -1.0)),
}


def posterior(planted=PLANTED):
    """(chain=2, draw=5, item) arrays from 10 draws per item: draws 0-4 in chain 0, 5-9 in chain 1; the second
    array is the sign-free slope, the model's discrimination its absolute value, the data-alone draws b's."""
    items = list(planted)
    b = np.stack([planted[i][0] for i in items], axis=-1).reshape(2, 5, len(items))
    s = np.stack([planted[i][1] for i in items], axis=-1).reshape(2, 5, len(items))
    dims = ("chain", "draw", "item")
    return xr.Dataset(
        {
            "difficulty": (dims, b),
            "discrimination": (dims, np.abs(s)),
            "slope": (dims, s),
            "difficulty_data": (dims, b),
        },
        coords={"chain": [0, 1], "draw": np.arange(5), "item": items},
    )


def test_decide_all_matches_decide_item_by_item():
    counts = dict.fromkeys(PLANTED, 20)
    rule = AcceptanceRule(min_discrimination=0.25)
    table = decide_all(posterior(), aim_lo=LO, aim_hi=HI, n_responses=counts, rule=rule)
    assert list(table.index) == list(PLANTED) and table.index.name == "item"
    assert dict(table["reason"]) == {
        "accept": "in aim",
        "easy": "too easy",
        "hard": "too hard",
        "spread": "uncertain",
        "flat": "flat",
        "mis-keyed": "mis-keyed",
    }
    assert list(table["decision"]) == ["accepted"] + ["rejected"] * 5
    for item, (b, s) in PLANTED.items():
        one = decide(
            b,
            np.abs(s),
            aim_lo=LO,
            aim_hi=HI,
            n_responses=20,
            slope_draws=s,
            data_difficulty_draws=b,
            rule=rule,
        )
        row = table.loc[item]
        for key in (
            "p_in_aim",
            "p_in_aim_data",
            "p_below",
            "p_above",
            "p_discrimination_positive",
            "p_slope_above_min",
            "p_slope_below_min",
            "slope_mean",
            "difficulty_mean",
            "difficulty_ci_low",
            "difficulty_ci_high",
            "discrimination_mean",
        ):
            assert row[key] == pytest.approx(getattr(one, key)), f"{item} {key}: {row[key]} vs {getattr(one, key)}"
        assert row["detail"] == one.detail and row["failed"] == "; ".join(one.failed)
    assert table.attrs["ci_prob"] == 0.9 and table.attrs["tau"] == 0.8
    assert table.attrs["min_discrimination"] == 0.25 and (table["min_discrimination"] == 0.25).all()


@pytest.mark.parametrize("piece", ["slope", "difficulty_data"])
def test_decide_all_rejects_when_a_piece_is_missing(piece):
    ds = posterior()
    reason = {"slope": "slope missing", "difficulty_data": "data-alone missing"}[piece]
    table = decide_all(ds.drop_vars(piece), aim_lo=LO, aim_hi=HI, n_responses=20)
    assert (table["decision"] == "rejected").all() and table.loc["accept", "reason"] == reason, table
    # NaN in one item's draws rejects that item only
    values = ds[piece].values.copy()
    values[0, 0, 0] = np.nan
    table = decide_all(ds.assign({piece: (ds[piece].dims, values)}), aim_lo=LO, aim_hi=HI, n_responses=20)
    assert table.loc["accept", "reason"] == reason, table
    assert table.loc["accept", "decision"] == "rejected"
    with pytest.raises(FitError, match=f"'{piece}' has no 'item' dim"):
        decide_all(ds.assign({piece: ds[piece].isel(item=0)}), aim_lo=LO, aim_hi=HI, n_responses=20)


def test_decide_all_response_counts():
    ds = posterior()
    by_int = decide_all(ds, aim_lo=LO, aim_hi=HI, n_responses=5)
    assert set(by_int["reason"]) == {"not enough responses"} and (by_int["n_responses"] == 5).all()
    responses = pd.DataFrame({"subject": [f"s{k}" for k in range(12)], "item": "accept", "response": 1.0})
    data = ResponseData.from_long(responses)
    by_data = decide_all(ds, aim_lo=LO, aim_hi=HI, n_responses=data, items=["accept", "easy"])
    assert dict(by_data["n_responses"]) == {"accept": 12, "easy": 0}
    assert dict(by_data["reason"]) == {"accept": "in aim", "easy": "not enough responses"}
    series = pd.Series({"accept": 30, "easy": 30})
    assert list(decide_all(ds, aim_lo=LO, aim_hi=HI, n_responses=series, items=["accept", "easy"])["n_responses"]) == [
        30,
        30,
    ]
    with pytest.raises(DataError, match=r"no response count for item\(s\) \['easy'\]"):
        decide_all(ds, aim_lo=LO, aim_hi=HI, n_responses={"accept": 30}, items=["accept", "easy"])


def test_decide_all_inputs():
    ds = posterior()
    tree = xr.DataTree.from_dict({"posterior": ds})
    assert decide_all(tree, aim_lo=LO, aim_hi=HI, n_responses=20).equals(
        decide_all(ds, aim_lo=LO, aim_hi=HI, n_responses=20)
    )
    rasch = decide_all(
        ds.drop_vars("discrimination"),
        aim_lo=LO,
        aim_hi=HI,
        n_responses=20,
        rule=AcceptanceRule(min_discrimination=0.25),
    )
    assert rasch.loc["accept", "decision"] == "accepted" and rasch.loc["flat", "reason"] == "flat"
    assert (rasch["discrimination_mean"] == 1.0).all()
    shared = decide_all(
        ds.assign(discrimination=ds["discrimination"].isel(item=0)), aim_lo=LO, aim_hi=HI, n_responses=20
    )
    assert shared.loc["accept", "decision"] == "accepted" and shared.loc["mis-keyed", "reason"] == "mis-keyed"
    with pytest.raises(DataError, match=r"\['nope'\] are not in the posterior"):
        decide_all(ds, aim_lo=LO, aim_hi=HI, n_responses=20, items=["accept", "nope"])
    multidim = ds.assign(discrimination=ds["discrimination"].expand_dims({"dim": [0, 1]}, axis=-1))
    with pytest.raises(SpecError, match="extra dims \\['dim'\\]"):
        decide_all(multidim, aim_lo=LO, aim_hi=HI, n_responses=20)
    with pytest.raises(FitError, match="no 'difficulty'"):
        decide_all(ds.drop_vars("difficulty"), aim_lo=LO, aim_hi=HI, n_responses=20)
    with pytest.raises(FitError, match="no 'posterior' group"):
        decide_all(xr.DataTree.from_dict({"prior": ds}), aim_lo=LO, aim_hi=HI, n_responses=20)


# ------------------------------------------------------------------------------------------ the rule
def test_the_acceptance_rule_is_one_checked_value():
    rule = AcceptanceRule(tau=0.9, min_responses=5)
    assert rule.to_dict() == {
        "tau": 0.9,
        "min_discrimination": None,
        "discrimination_prob": 0.9,
        "min_responses": 5,
        "ci_prob": 0.9,
    }
    assert rule.resolved(0.3).min_discrimination == 0.3, "a rule without a least slope takes the one given"
    assert AcceptanceRule(min_discrimination=0.1).resolved(0.3).min_discrimination == 0.1, "a given one is kept"
    with pytest.raises(AttributeError):
        rule.tau = 0.5  # frozen
    for field, bad in (("tau", "0.8"), ("min_responses", 2.5), ("min_responses", True), ("ci_prob", None)):
        with pytest.raises(SpecError, match=field):
            AcceptanceRule(**{field: bad})
    with pytest.raises(SpecError, match="rule must be an AcceptanceRule"):
        decide_all(posterior(), aim_lo=LO, aim_hi=HI, n_responses=20, rule={"tau": 1})  # type: ignore[arg-type]


def test_no_least_slope_reads_as_zero_without_a_bank():
    table = decide_all(posterior(), aim_lo=LO, aim_hi=HI, n_responses=20)
    zero = decide_all(posterior(), aim_lo=LO, aim_hi=HI, n_responses=20, rule=AcceptanceRule(min_discrimination=0))
    assert table.equals(zero) and (table["min_discrimination"] == 0.0).all()


def test_the_candidates_table_names_every_rule_a_candidate_failed():
    """A candidate rejected as too easy and flat reads "too easy; flat" in the table, as in the ledger; one rejected
    for one reason, and an accepted one, keep theirs."""
    from types import SimpleNamespace

    import pandas as pd

    from irtbayes.benchfill.result import BenchfillResult

    decisions = pd.DataFrame(
        {"decision": ["rejected", "rejected", "accepted"], "reason": ["too easy", "too hard", "in aim"],
         "failed": ["too easy; flat", "too hard", ""]},
        index=pd.Index(["a", "b", "c"], name="item"),
    )  # fmt: skip
    table = BenchfillResult.with_every_reason(SimpleNamespace(decisions=decisions))
    assert table["reason"].tolist() == ["too easy; flat", "too hard", "in aim"]
