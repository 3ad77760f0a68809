"""Progress lines for long sampler runs: the arithmetic on a fake clock, and a real tiny nutpie fit."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

import irtbayes.fitting.sampling as sampling_module
from irtbayes.core.progress import SamplingProgress, format_duration
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.model.spec import ModelSpec


def chains(done: list[int], *, total: int = 1000, tuning: bool = False, divergences: int = 0) -> list[SimpleNamespace]:
    return [SimpleNamespace(finished_draws=d, total_draws=total, tuning=tuning, divergences=divergences) for d in done]


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 59.4, 75, 3599, 4000)] == [
        "0 s",
        "59 s",
        "1 min 15 s",
        "59 min 59 s",
        "1 h 6 min",
    ]
    assert format_duration(float("nan")) == "unknown"


def test_lines_give_rate_and_time_left_every_interval_and_once_at_the_end(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    phases: list[str] = []
    progress = SamplingProgress(every=10, clock=lambda: now[0], on_phase=phases.append)
    with caplog.at_level(logging.INFO, logger="irtbayes.core.progress"):
        progress(chains([0, 0], tuning=True))  # the start
        now[0] = 5.0
        progress(chains([100, 100], tuning=True))  # too soon for a line
        now[0] = 20.0
        progress(chains([250, 250], divergences=1))  # 500 of 2000 draws in 20 s: 25 draws/s, 60 s left
        now[0] = 80.0
        progress(chains([1000, 1000], divergences=1))
        now[0] = 95.0
        progress(chains([1000, 1000], divergences=1))  # already said it ended
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "sampling: 500 of 2,000 draws (25%), 25.0 draws/s, about 1 min 0 s left; 2 divergences",
        "2 chains finished 2,000 draws (warm-up included) in 1 min 20 s; 2 divergences",
    ], lines
    assert phases[:2] == ["tuning", "tuning"] and phases[-1] == "sampling"
    assert progress.least_finished == 1000  # what sampling until converged reads instead of the draws
    # sampling until converged: the draws asked for are the most, and so is the time left
    most = SamplingProgress.line(500, 2000, 20.0, "sampling", chains([250, 250]), most=True)
    assert most == "sampling: 500 of at most 2,000 draws (25%), 25.0 draws/s, at most 1 min 0 s left; 0 divergences"


def test_a_fit_whose_output_is_not_a_terminal_logs_progress(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    data, _ = simulate_responses(20, 10, kind="1pl", seed=3)
    monkeypatch.setattr(sampling_module, "PROGRESS_EVERY", 0.0)
    # output that is not a terminal, also when pytest runs with -s in one
    monkeypatch.setattr(sampling_module, "sys", SimpleNamespace(stderr=SimpleNamespace(isatty=lambda: False)))
    with caplog.at_level(logging.INFO, logger="irtbayes.core.progress"), pytest.warns(UserWarning):
        fit(data, ModelSpec(kind="1pl"), chains=2, draws=50, tune=50, seed=1, progress=True)
    lines = [r.getMessage() for r in caplog.records if r.name == "irtbayes.core.progress"]
    assert lines and "2 chains finished 200 draws" in lines[-1], lines
    assert any("draws/s" in line for line in lines), lines
