"""Numba code compiled ahead in another process (irtbayes.core.jit) and the warm-ups that use it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from irtbayes.auditing import deconvolve
from irtbayes.core import chains, jit


@pytest.fixture(autouse=True)
def _nothing_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "_WANTED", {})  # what other tests of this process asked for does not count here


def test_a_process_compiles_the_warm_ups_whose_code_the_cache_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a warm-up's code is not in numba's disk cache, one process is started for the missing warm-ups (one
    at a time, let go once done); where every one is, none is. (That the process fills the cache: the slow test.)"""
    chains.warm_numba_cache()  # compiled, or loaded, and so cached
    assert jit.on_disk(chains._diagnose)
    assert jit.compile_in_background([chains.NUMBA_WARMUP]) is None
    monkeypatch.setattr(jit, "on_disk", lambda dispatcher: dispatcher is not chains._diagnose)
    jit.want(deconvolve.NUMBA_WARMUP)  # cached (by on_disk above): not run
    process = jit.compile_in_background([chains.NUMBA_WARMUP])
    assert process is not None and process.args[:2] == [sys.executable, "-P"]
    assert "irtbayes.core.chains:warm_numba_cache" in process.args[-1]
    assert "deconvolve" not in process.args[-1]
    try:
        assert jit.compile_in_background([chains.NUMBA_WARMUP]) is None  # one at a time
    finally:
        process.kill()
        process.wait(timeout=30)
    monkeypatch.setattr(jit, "on_disk", lambda dispatcher: True)
    assert jit.compile_in_background([chains.NUMBA_WARMUP]) is None and not jit._STARTED  # done, so let go
    monkeypatch.setattr(jit, "on_disk", lambda dispatcher: False)
    process = jit.compile_in_background()  # what want() asked for alone
    assert process is not None and "irtbayes.auditing.deconvolve:warm_numba_cache" in process.args[-1]
    process.kill()
    process.wait(timeout=30)
    jit._STARTED.clear()
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # a frozen application: its executable is no Python
    assert jit.compile_in_background([chains.NUMBA_WARMUP]) is None


def test_irtbayes_audit_asks_for_the_deconvolution_before_it_fits(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """`irtbayes audit` without --fit wants the audit's numba code compiled beside the model."""
    from irtbayes.cli import main as cli
    from irtbayes.core.errors import FitError

    seen: list[dict[str, jit.Warmup]] = []

    def no_fit(data: object, args: object) -> object:
        seen.append(dict(jit._WANTED))
        raise FitError("stop here")

    monkeypatch.setattr(cli, "_fit_from_args", no_fit)
    assert cli.main(["audit", "lsat7", "--out", str(tmp_path / "out")]) == 2
    assert seen and deconvolve.NUMBA_WARMUP.function in seen[0]


_SIGNATURES = """
import numpy as np
from irtbayes.auditing.deconvolve import PriorDraws, deconvolved_locations
from irtbayes.fitting.diagnostics.convergence import rank_diagnostics_datasets
import xarray as xr
rng = np.random.default_rng(1)
draws = (rng.normal(size=(400, 60)) * 0.3 + np.linspace(-2, 2, 60)).astype(np.float32)
prior = PriorDraws(loc=np.zeros((400, 1)), sd=np.ones(400), item_group=np.zeros(60, dtype=np.int64))
deconvolved_locations(draws, prior, [np.arange(60)], n_population=8, seed=2)
posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), draws.reshape(4, 100, 60))})
rank_diagnostics_datasets(posterior)
"""


@pytest.mark.slow
def test_the_warm_ups_compile_what_the_audit_and_the_checks_then_load(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """The process started fills an empty cache with the checks' and the deconvolution's code, in the very types
    the real calls use: running them afterwards adds no entry to the cache."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # an empty cache, for the processes started now
    monkeypatch.setattr(jit, "on_disk", lambda dispatcher: False)
    jit.want(deconvolve.NUMBA_WARMUP)
    process = jit.compile_in_background([chains.NUMBA_WARMUP])
    assert process is not None and process.wait(timeout=300) == 0
    compiled = sorted(p.name for p in tmp_path.rglob("*.nbc"))
    for name in ("chains._diagnose", "deconvolve._draw_locations", "support._log_hole_sums"):
        assert any(n.startswith(name) for n in compiled), (name, compiled)
    subprocess.run([sys.executable, "-c", _SIGNATURES], check=True, timeout=300)
    after = sorted(p.name for p in tmp_path.rglob("*.nbc"))
    assert [n for n in after if n not in compiled] == [], "the real calls compiled other signatures"


@pytest.mark.parametrize(("layout", "precision"), [("fused", "float32"), ("fused", "float64"), ("long", "float64")])
def test_a_model_s_compilation_starts_its_likelihood_kernel_first(monkeypatch: pytest.MonkeyPatch, layout, precision):
    """A fused-layout model asks for its precision's kernel ahead of the checks' code (the log-density's compilation
    loads the kernel once the other process has compiled it); other layouts have no kernel to ask for."""
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.fitting import compiled, sampling
    from irtbayes.model.build import build_model
    from irtbayes.model.likelihood import KERNEL_WARMUPS
    from irtbayes.model.spec import ModelSpec

    asked: list[list[jit.Warmup]] = []
    monkeypatch.setattr(jit, "compile_in_background", lambda warmups=(): asked.append(list(warmups)))
    monkeypatch.setattr(compiled, "compile_model", lambda model: "compiled")
    monkeypatch.setattr(sampling, "_COMPILED", type(sampling._COMPILED)())
    data, _ = simulate_responses(20, 30, seed=1)
    model = build_model(data, ModelSpec(layout=layout, precision=precision))
    assert sampling._compiled(model) == "compiled"
    expected = [KERNEL_WARMUPS[precision]] if layout == "fused" else []
    assert asked == [[*expected, chains.NUMBA_WARMUP]]


_KERNEL_MODEL = """
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.compiled import compile_model
from irtbayes.model.build import build_model
compile_model(build_model(simulate_responses(20, 30, seed=1)[0]))
"""


@pytest.mark.slow
def test_the_kernel_warm_up_compiles_what_the_log_density_then_loads(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The kernel's warm-up fills an empty cache with the very signature the compiled log-density calls: compiling a
    model afterwards adds no kernel entry to the cache."""
    from irtbayes.model.likelihood import KERNEL_WARMUPS

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("PYTENSOR_FLAGS", f"base_compiledir={tmp_path / 'pytensor'}")
    monkeypatch.setattr(jit, "on_disk", lambda dispatcher: False)
    process = jit.compile_in_background([KERNEL_WARMUPS["float32"]])
    assert process is not None and process.wait(timeout=300) == 0
    kernel = sorted(p.name for p in tmp_path.rglob("likelihood._fused_kernel32*"))
    assert any(n.endswith(".nbc") for n in kernel), kernel
    subprocess.run([sys.executable, "-c", _KERNEL_MODEL], check=True, timeout=600)
    after = sorted(p.name for p in tmp_path.rglob("likelihood._fused_kernel32*"))
    assert after == kernel, "the log-density compiled another signature of the kernel"
