"""SamplerSettings: fit()'s keywords as one checked value; the same fit either way."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.settings import SamplerSettings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sampler", "gibbs"),
        ("chains", 0),
        ("chains", 2.0),
        ("draws", 0),
        ("tune", -1),
        ("cores", 0),
        ("seed", "1"),
        ("target_accept", 1.0),
        ("rhat_max", 0.99),
        ("ess_min", 0),
        ("budget_s", float("inf")),
        ("progress", "yes"),
        ("keep_partial", None),
        ("until_converged", 1),
        ("warm_start", "no"),
        ("sampler_kwargs", [("adaptation", "low_rank")]),
    ],
)
def test_each_bad_field_is_a_spec_error_naming_it(field, value):
    with pytest.raises(SpecError, match="unknown sampler" if field == "sampler" else field):
        SamplerSettings(**{field: value})
    with pytest.raises(SpecError, match="unknown sampler" if field == "sampler" else field):
        fit(simulate_responses(5, 5, seed=1)[0], **{field: value})  # fit's keywords are checked the same way


def test_to_dict_gives_fits_keywords_and_round_trips():
    settings = SamplerSettings(sampler="approx", chains=2, seed=3, sampler_kwargs={"adaptation": "low_rank"})
    record = settings.to_dict()
    assert record["sampler"] == "approx" and record["sampler_kwargs"] == {"adaptation": "low_rank"}
    assert SamplerSettings(**record) == settings
    assert settings.replace(chains=3).chains == 3 and settings.chains == 2
    with pytest.raises(SpecError, match="chains"):
        settings.replace(chains=-1)


def test_settings_give_the_same_fit_as_keywords():
    data, _ = simulate_responses(30, 20, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # an approximate fit says so
        by_keywords = fit(data, sampler="approx", chains=2, draws=50, seed=5, progress=False)
        settings = SamplerSettings(sampler="approx", chains=2, draws=50, seed=5, progress=False)
        by_object = fit(data, settings=settings)
    for name in ("difficulty", "ability", "discrimination"):
        np.testing.assert_array_equal(by_object.posterior[name].values, by_keywords.posterior[name].values)

    def untimed(record: dict) -> dict:
        out = {k: v for k, v in record.items() if k != "wall_time_s"}
        out["options"] = {k: v for k, v in record["options"].items() if not k.startswith("time_")}
        return out

    assert untimed(by_object.sampler) == untimed(by_keywords.sampler)


def test_settings_and_keywords_together_are_refused():
    data, _ = simulate_responses(5, 5, seed=1)
    with pytest.raises(SpecError, match=r"give settings= or the keywords \['chains', 'seed'\]"):
        fit(data, settings=SamplerSettings(sampler="approx"), chains=2, seed=1)
    with pytest.raises(SpecError, match="settings must be a SamplerSettings"):
        fit(data, settings={"sampler": "approx"})  # type: ignore[arg-type]
