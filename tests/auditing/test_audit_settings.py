"""AuditSettings and the typed keywords of audit(): one list of fields, clear errors for unknown names."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from irtbayes.auditing.settings import AuditFields, AuditSettings
from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import posterior_near_truth, simulate_responses


def test_the_keywords_of_audit_are_the_fields_of_audit_settings():
    fields = {f.name: f.type for f in dataclasses.fields(AuditSettings)}
    keywords = typing.get_type_hints(AuditFields)
    assert set(keywords) == set(fields), set(keywords) ^ set(fields)
    hints = typing.get_type_hints(AuditSettings)
    for name, hint in keywords.items():
        assert hint == hints[name], f"{name}: audit() says {hint}, AuditSettings says {hints[name]}"


def test_an_unknown_setting_is_a_spec_error_with_a_suggestion():
    from irtbayes.auditing.run import audit

    data, truth = simulate_responses(10, 12, seed=1)
    posterior = posterior_near_truth(data, truth, chains=1, draws=20, seed=1)
    with pytest.raises(SpecError, match=r"unknown setting\(s\) 'bin' \(did you mean 'bins'\?\)"):
        audit(posterior, data, bin=5)  # type: ignore[call-arg]
    with pytest.raises(SpecError, match="unknown setting"):
        AuditSettings().replace(nope=1)


def test_to_dict_round_trips():
    settings = AuditSettings(bins=[-2.0, 0.0, 2.0], group=("a", "b"), seed=4)
    record = settings.to_dict()
    assert record["bins"] == [-2.0, 0.0, 2.0] and record["group"] == ["a", "b"] and record["seed"] == 4
    assert AuditSettings(**record).to_dict() == record
