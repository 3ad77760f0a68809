"""Ctrl-C during a fit: a FitInterrupted that says how far the run got, one line and exit 130 from the command
line, nothing saved by default, and with keep_partial / --keep-partial a fit marked partial that never passes.

The samplers are replaced by fakes that behave as nutpie 0.16 and PyMC 6 do when interrupted (they catch the
KeyboardInterrupt and return the draws so far; nutpie pads the chains cut short with NaN; PyMC raises when no
draw was kept): the fakes raise a real SIGINT, so the fit's own signal handling is exercised. One slow test
interrupts a real ``irtbayes fit`` process.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import nutpie
import pymc as pm
import pytest
import xarray as xr

import irtbayes.fitting.compiled as compiled_module
import irtbayes.fitting.sampling as sampling
from irtbayes.cli.main import main
from irtbayes.core.errors import FitInterrupted
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.storage import load_fit
from irtbayes.model.spec import ModelSpec

DRAWS = 1000


@pytest.fixture(autouse=True)
def sigint_raises() -> Iterator[None]:
    """Python's own SIGINT handler for each test, whatever the runner was started with.

    A process started with SIGINT ignored (``nohup``, ``trap '' INT``, some CI runners) keeps it ignored, and
    then the real SIGINT these tests send would do nothing. The handler the test found is put back after it.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


@pytest.fixture(scope="module")
def tiny() -> ResponseData:
    data, _ = simulate_responses(12, 8, kind="2pl", missing=0.0, seed=1)
    return data


@pytest.fixture(scope="module")
def tiny_csv(tiny: ResponseData, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "responses.csv"
    tiny.long_frame()[["subject", "item", "response"]].to_csv(path, index=False)
    return path


def fake_trace(model: pm.Model, *, chains: int, draws: int, done: list[int], seed: int = 0) -> xr.DataTree:
    """A trace shaped as nutpie returns it: every free and deterministic variable (chain, draw, ...) with
    independent draws, chains cut short padded with NaN up to the longest one, and NUTS sample stats."""
    rng = np.random.default_rng(seed)
    length = max(done, default=0) if min(done, default=0) < draws else draws
    names = [v.name for v in model.free_RVs] + [v.name for v in model.deterministics]
    dims = {name: model.named_vars_to_dims.get(name) or () for name in names}
    data_vars = {}
    for name in names:
        shape = [len(model.coords[d]) for d in dims[name]]
        values = rng.normal(size=(chains, length, *shape))
        if name.endswith("_sd") or name == "discrimination":
            values = np.abs(values) + 0.1
        for c, n in enumerate(done):
            values[c, n:] = np.nan
        data_vars[name] = (("chain", "draw", *dims[name]), values)
    coords = {"chain": np.arange(chains), "draw": np.arange(length)}
    coords |= {d: list(model.coords[d]) for name in names for d in dims[name]}
    stats = {
        "diverging": (("chain", "draw"), np.zeros((chains, length), dtype=bool)),
        "maxdepth_reached": (("chain", "draw"), np.zeros((chains, length), dtype=bool)),
        "energy": (("chain", "draw"), rng.normal(size=(chains, length))),
        "n_steps": (("chain", "draw"), np.full((chains, length), 7)),
    }
    for c, n in enumerate(done):
        stats["energy"][1][c, n:] = np.nan
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset(data_vars, coords=coords),
            "sample_stats": xr.Dataset(stats, coords={"chain": coords["chain"], "draw": coords["draw"]}),
        }
    )


def interrupt_now() -> None:
    """Deliver a real SIGINT and swallow the KeyboardInterrupt, as nutpie and PyMC do."""
    try:
        signal.raise_signal(signal.SIGINT)
        time.sleep(1)  # the handler runs at the next bytecode; this is never reached in full
    except KeyboardInterrupt:
        return
    raise AssertionError("SIGINT did not raise KeyboardInterrupt")


@dataclasses.dataclass(frozen=True)
class FakeCompiled:
    """What the fake compile returns: the model, and the start that a warm start puts in (as nutpie's has)."""

    model: pm.Model
    initial_point_func: Any = None


def patch_nutpie(
    monkeypatch: pytest.MonkeyPatch, *, done: list[int] | None, signal_first: bool = True, compile_error: bool = False
) -> dict[str, Any]:
    """Replace nutpie's compile and sample; ``done`` None: a complete run. Returns what the fake saw."""
    seen: dict[str, Any] = {}

    def compile_model(model: pm.Model, **kwargs: Any) -> FakeCompiled:
        if compile_error:
            raise KeyboardInterrupt
        return FakeCompiled(model)

    def sample(compiled: FakeCompiled, *, draws: int, tune: int, chains: int, **kwargs: Any) -> xr.DataTree:
        seen.update(draws=draws, tune=tune, chains=chains, start=compiled.initial_point_func)
        if done is not None and signal_first:
            interrupt_now()
        return fake_trace(compiled.model, chains=chains, draws=draws, done=[draws] * chains if done is None else done)

    monkeypatch.setattr(compiled_module, "compile_model", compile_model)
    monkeypatch.setattr(nutpie, "sample", sample)
    # models compiled before (real ones) are not reused, and the fake's are forgotten after the test
    monkeypatch.setattr(sampling, "_COMPILED", OrderedDict())
    return seen


def run_fit(data: ResponseData, **kwargs: Any) -> Any:
    return fit(data, ModelSpec(kind="2pl"), chains=2, draws=DRAWS, tune=50, seed=1, progress=False, **kwargs)


# ---------------------------------------------------------------------------------------------- the library
def test_a_complete_fake_run_converges(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the fake sampler's complete trace passes the checks, so failures below come from the cut."""
    seen = patch_nutpie(monkeypatch, done=None)
    result = run_fit(tiny)
    assert callable(seen["start"])  # the warm start reached the sampler
    assert not result.partial and result.card()["partial"] is False
    assert result.diagnostics.ok, result.diagnostics.to_text()
    assert result.posterior.sizes["draw"] == DRAWS


def test_a_refit_reuses_the_compiled_model_until_it_is_released(
    tiny: ResponseData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a process a refit of the same data and spec skips compilation; release_compiled (what
    ``irtbayes audit`` calls after its one fit) forgets the compiled model."""
    patch_nutpie(monkeypatch, done=None)
    compiled: list[Any] = []
    original = compiled_module.compile_model
    monkeypatch.setattr(compiled_module, "compile_model", lambda model, **kw: compiled.append(model) or original(model))
    run_fit(tiny)
    run_fit(tiny)
    assert len(compiled) == 1 and len(sampling._COMPILED) == 1
    sampling.release_compiled()
    assert len(sampling._COMPILED) == 0
    run_fit(tiny)
    assert len(compiled) == 2


def test_interrupt_while_sampling_raises_and_keeps_nothing(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    patch_nutpie(monkeypatch, done=[800, 700])
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny)
    err = caught.value
    assert (err.phase, err.draws_done, err.draws_requested, err.chains_done, err.chains_requested) == (
        "sampling",
        700,
        DRAWS,
        2,
        2,
    )
    assert err.partial is None
    assert str(err) == "interrupted during sampling after 700 of 1000 draws per chain"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the fit must restore the SIGINT handler"


def test_keep_partial_gives_a_fit_marked_partial_whose_checks_fail(
    tiny: ResponseData, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch_nutpie(monkeypatch, done=[800, 700])
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, keep_partial=True)
    partial = caught.value.partial
    assert partial is not None and partial.partial
    post = partial.posterior
    assert (post.sizes["chain"], post.sizes["draw"]) == (2, 700), "both chains, cut to their common length"
    assert all(bool(np.isfinite(v).all()) for v in post.data_vars.values()), "no NaN padding kept"
    card = partial.card()
    assert card["partial"] is True
    assert card["interrupted"] == {
        "phase": "sampling",
        "draws_done": 700,
        "draws_requested": DRAWS,
        "chains_done": 2,
        "chains_requested": 2,
    }
    diag = partial.diagnostics
    assert not diag.ok and card["diagnostics"]["ok"] is False
    assert diag.problems[0].startswith("partial run: interrupted during sampling after 700 of 1000"), diag.problems
    # 2 x 700 independent draws pass every other check: the partial rule alone fails the fit
    assert diag.problems[1:] == [], diag.problems
    assert "(PARTIAL)" in partial.to_text() and "PARTIAL fit: the run was interrupted" in partial.to_text()
    assert "NOT converged" in partial.to_text()


def test_a_short_trace_is_partial_even_without_a_signal(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sampler that returns fewer draws or chains than asked for is never taken for a complete run."""
    patch_nutpie(monkeypatch, done=[600, 0], signal_first=False)
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, keep_partial=True)
    err = caught.value
    assert (err.phase, err.draws_done, err.chains_done) == ("sampling", 600, 1)
    assert str(err) == "interrupted during sampling after 600 of 1000 draws per chain (in 1 of 2 chains)"
    assert err.partial is not None and err.partial.posterior.sizes["chain"] == 1
    assert not err.partial.diagnostics.ok
    assert any("only 1 chain" in p for p in err.partial.diagnostics.problems)


def test_keep_partial_with_a_single_draw_still_fails_the_checks(
    tiny: ResponseData, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch_nutpie(monkeypatch, done=[1, 1])
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, keep_partial=True)
    partial = caught.value.partial
    assert partial is not None and partial.posterior.sizes["draw"] == 1
    assert not partial.diagnostics.ok and partial.diagnostics.problems[0].startswith("partial run")


def test_interrupt_while_tuning_has_nothing_to_keep(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    patch_nutpie(monkeypatch, done=[0, 0])  # nutpie returns an empty posterior (draw: 0)
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, keep_partial=True)
    err = caught.value
    assert (err.phase, err.draws_done, err.partial) == ("tuning", 0, None)
    assert str(err) == "interrupted during tuning (warm-up), before any of the 1000 draws per chain"


def test_interrupt_while_compiling(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = patch_nutpie(monkeypatch, done=None, compile_error=True)
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, keep_partial=True)
    assert caught.value.phase == "compile" and caught.value.partial is None
    assert seen == {}, "the sampler must not have run"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_with_sigint_ignored_a_fit_runs_to_the_end_and_leaves_it_ignored(
    tiny: ResponseData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that ignores SIGINT (started under ``nohup``) is not interrupted, and keeps ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def ignored() -> None:
        signal.raise_signal(signal.SIGINT)  # discarded by the system: nothing is raised

    monkeypatch.setattr(sys.modules[__name__], "interrupt_now", ignored)
    patch_nutpie(monkeypatch, done=[DRAWS, DRAWS])
    result = run_fit(tiny)
    assert not result.partial and result.posterior.sizes["draw"] == DRAWS
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN, "the fit must leave an ignored SIGINT ignored"


def test_a_handler_of_the_caller_is_called_and_put_back(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit notes the SIGINT and passes it on to the handler that was there, then reinstalls that handler."""
    calls: list[int] = []

    def handler(signum: int, frame: object) -> None:
        calls.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    patch_nutpie(monkeypatch, done=[800, 700])
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny)
    assert caught.value.draws_done == 700 and calls == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is handler


def test_pymc_interrupted_while_tuning(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyMC swallows the interrupt and then raises 'Not enough samples to build a trace'."""

    def sample(*, callback: Any, **kwargs: Any) -> None:
        callback(trace=None, draw=SimpleNamespace(tuning=True))
        interrupt_now()
        raise ValueError("Not enough samples to build a trace.")

    monkeypatch.setattr(pm, "sample", sample)
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, sampler="pymc", keep_partial=True)
    assert (caught.value.phase, caught.value.partial) == ("tuning", None)


def test_pymc_sequential_chains_stop_after_the_interrupt(tiny: ResponseData, monkeypatch: pytest.MonkeyPatch) -> None:
    """With cores=1 PyMC ends only the current chain on Ctrl-C; the fit's callback ends the later ones."""
    lengths: list[int] = []

    def sample(*, model: pm.Model, callback: Any, chains: int, draws: int, tune: int, **kwargs: Any) -> xr.DataTree:
        for chain in range(chains):  # as pymc.sampling.mcmc._sample_many / _sample
            n = 0
            try:
                for i in range(tune + draws):
                    n = i + 1  # the draw is recorded before the callback runs
                    callback(trace=None, draw=SimpleNamespace(chain=chain, tuning=i < tune))
                    if chain == 0 and i == tune + 299:
                        interrupt_now()
                        raise KeyboardInterrupt  # PyMC's loop sees the interrupt at its next step
            except KeyboardInterrupt:
                pass
            lengths.append(n)
        kept = [max(n - tune, 0) for n in lengths]
        best = max(kept)
        return fake_trace(model, chains=1, draws=draws, done=[best])

    monkeypatch.setattr(pm, "sample", sample)
    with pytest.raises(FitInterrupted) as caught:
        run_fit(tiny, sampler="pymc", cores=1)
    assert lengths == [50 + 300, 1], f"later chains must stop at their first draw, got lengths {lengths}"
    assert (caught.value.phase, caught.value.draws_done, caught.value.chains_done) == ("sampling", 300, 1)


# ---------------------------------------------------------------------------------------------- the command line
def one_line(err: str) -> str:
    """stderr less log lines: must be exactly one line, with no traceback."""
    assert "Traceback" not in err, err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith(("INFO ", "DEBUG "))]
    assert len(lines) == 1, lines
    return lines[0]


FIT_ARGS = ["--chains", "2", "--draws", str(DRAWS), "--tune", "50", "--seed", "1", "--no-progress"]


def test_cli_fit_interrupted_saves_nothing(
    tiny_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patch_nutpie(monkeypatch, done=[800, 700])
    out = tmp_path / "fit"
    assert main(["fit", str(tiny_csv), "--out", str(out), *FIT_ARGS]) == 130
    captured = capsys.readouterr()
    assert one_line(captured.err) == (
        "irtbayes: interrupted during sampling after 700 of 1000 draws per chain: nothing saved; rerun, or use "
        "--keep-partial to keep the draws so far"
    )
    assert list(tmp_path.iterdir()) == [], f"left behind: {list(tmp_path.iterdir())}"
    assert "Converged" not in captured.out


@pytest.mark.parametrize(
    ("done", "compile_error", "expected"),
    [
        ([0, 0], False, "interrupted during tuning (warm-up), before any of the 1000 draws per chain"),
        (None, True, "interrupted while building and compiling the model, before sampling"),
    ],
)
def test_cli_fit_interrupted_before_any_draw(
    done: list[int] | None,
    compile_error: bool,
    expected: str,
    tiny_csv: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    patch_nutpie(monkeypatch, done=done, compile_error=compile_error)
    out = tmp_path / "fit"
    assert main(["fit", str(tiny_csv), "--out", str(out), "--keep-partial", *FIT_ARGS]) == 130
    assert one_line(capsys.readouterr().err) == f"irtbayes: {expected}: no draws to keep, nothing saved"
    assert list(tmp_path.iterdir()) == []


def test_cli_keep_partial_saves_a_partial_fit_that_audit_and_report_mark(
    tiny_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patch_nutpie(monkeypatch, done=[800, 700])
    out = tmp_path / "fit"
    assert main(["fit", str(tiny_csv), "--out", str(out), "--keep-partial", *FIT_ARGS]) == 130
    captured = capsys.readouterr()
    assert one_line(captured.err) == (
        f"irtbayes: interrupted during sampling after 700 of 1000 draws per chain: saved the draws so far to {out} "
        "as a PARTIAL fit (its convergence checks fail)"
    )
    assert "(PARTIAL)" in captured.out and "NOT converged" in captured.out
    card = json.loads((out / "card.json").read_text())
    assert card["partial"] is True and card["interrupted"]["draws_done"] == 700
    assert card["interrupted"]["draws_requested"] == DRAWS
    assert card["diagnostics"]["ok"] is False and card["diagnostics"]["problems"][0].startswith("partial run")
    loaded = load_fit(out)
    assert loaded.partial and not loaded.diagnostics.ok and loaded.posterior.sizes["draw"] == 700
    assert "PARTIAL" in loaded.to_text()

    audit_out = tmp_path / "audit"
    assert main(["audit", "--fit", str(out), "--bins", "4", "--out", str(audit_out)]) == 0
    assert "(PARTIAL)" in capsys.readouterr().out
    summary = json.loads((audit_out / "summary.json").read_text())
    assert summary["partial"] is True and summary["converged"] is False
    page = (audit_out / "report" / "report.html").read_text()
    assert "Warning: PARTIAL fit: the run was interrupted during sampling after 700 of 1000" in page


def test_cli_audit_interrupted_while_fitting(
    tiny_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patch_nutpie(monkeypatch, done=[800, 700])
    out = tmp_path / "audit"
    assert main(["audit", str(tiny_csv), "--out", str(out), "--no-report", *FIT_ARGS]) == 130
    assert one_line(capsys.readouterr().err).startswith("irtbayes: interrupted during sampling after 700 of 1000")
    assert list(tmp_path.iterdir()) == []

    assert main(["audit", str(tiny_csv), "--out", str(out), "--no-report", "--keep-partial", *FIT_ARGS]) == 130
    line = one_line(capsys.readouterr().err)
    assert f"saved the draws so far to {out / 'fit'} as a PARTIAL fit" in line and "no audit was run" in line
    assert sorted(p.name for p in out.iterdir()) == ["fit"]
    assert load_fit(out / "fit").partial


# ---------------------------------------------------------------------------------------------- a real process
@pytest.mark.slow
def test_sigint_to_a_real_fit_while_sampling(tmp_path: Path) -> None:
    """``irtbayes fit`` with nutpie, sent SIGINT once sampling runs: exit 130, one line, nothing saved."""
    data, _ = simulate_responses(100, 30, kind="2pl", missing=0.0, seed=3)
    csv = tmp_path / "responses.csv"
    data.long_frame()[["subject", "item", "response"]].to_csv(csv, index=False)
    out = tmp_path / "fit"
    cmd = [sys.executable, "-m", "irtbayes.cli.main", "fit", str(csv), "--out", str(out)]
    cmd += ["--chains", "2", "--tune", "30", "--draws", "1000000", "--seed", "1", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    head = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        head.append(line)
        if "compiled the model" in line:
            break
    assert head and "compiled the model" in head[-1], "".join(head)
    time.sleep(4)  # 30 tuning steps take well under a second: now it samples
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, stderr)
    line = one_line(stderr)
    assert line.startswith("irtbayes: interrupted during sampling after "), line
    assert line.endswith(
        "of 1000000 draws per chain: nothing saved; rerun, or use --keep-partial to keep the draws so far"
    )
    done = int(line.split(" after ")[1].split(" of ")[0])
    assert done > 0, line
    assert "Converged" not in stdout and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.csv"], "no temporary folder left"


def test_cli_audit_waits_for_the_saved_fit_before_removing_its_folder(
    tiny_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``irtbayes audit`` saves the fit while it writes the report: Ctrl-C in the report waits for the save, then
    leaves nothing; an error of the save is the command's error, and leaves nothing either."""
    import irtbayes.fitting.storage as storage
    import irtbayes.reporting.report as report

    finished: list[bool] = []

    def slow_save(fit: object, path: Path, **kwargs: object) -> Path:
        time.sleep(0.5)
        path.mkdir()
        (path / "card.json").write_text("{}")
        finished.append(path.parent.is_dir())  # the audit's folder was still there at the end
        return path

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(storage, "save_fit", slow_save)
    monkeypatch.setattr(report, "build_report", interrupted)
    out = tmp_path / "audit"
    args = ["audit", str(tiny_csv), "--out", str(out), "--sampler", "approx", "--bins", "4", "--no-progress"]
    with pytest.warns(UserWarning, match="approximate method"):
        assert main(args) == 130
    assert finished == [True] and list(tmp_path.iterdir()) == []

    def failing_save(fit: object, path: Path, **kwargs: object) -> Path:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(storage, "save_fit", failing_save)
    with pytest.raises(OSError, match="No space left on device"), pytest.warns(UserWarning, match="approximate"):
        main([*args, "--no-report"])
    assert list(tmp_path.iterdir()) == []
