"""Running a sampler on a built model: NUTS (nutpie, PyMC, NumPyro) or an approximation (ADVI, Pathfinder).

:func:`run_sampler` returns the sampler's DataTree and records in a :class:`RunState` how far it got;
:class:`InterruptWatch` notes a Ctrl-C whatever the sampler does with it; :mod:`irtbayes.fitting.trace` finds the
complete part of a run cut short. :func:`irtbayes.fitting.fit.fit` puts these together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pymc as pm
import pytensor
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.core.progress import SamplingProgress, bars_shown

if TYPE_CHECKING:
    from irtbayes.fitting.until_converged import StopRule

__all__ = [
    "APPROXIMATE_SAMPLERS",
    "SAMPLERS",
    "InterruptWatch",
    "RunState",
    "Sampler",
    "release_compiled",
    "run_sampler",
]

log = logging.getLogger("irtbayes.fitting.fit")
#: Seconds between progress log lines when no progress bar can be drawn (output not a terminal).
PROGRESS_EVERY = 30.0

Sampler = Literal["auto", "nutpie", "pymc", "numpyro", "approx", "advi", "pathfinder"]
SAMPLERS: tuple[str, ...] = ("auto", "nutpie", "pymc", "numpyro", "approx", "advi", "pathfinder")
APPROXIMATE_SAMPLERS: tuple[str, ...] = ("approx", "advi", "pathfinder")


@dataclass
class RunState:
    """How far a fit has got: ``compile``, ``tuning``, ``sampling``, ``optimisation`` or ``running``; and how long
    compiling the model took (seconds; 0 when a model compiled before in the process was reused)."""

    phase: str = "compile"
    compile_s: float | None = None


class InterruptWatch:
    """Notes a SIGINT (Ctrl-C) during a fit and passes it on to the handler that was installed.

    nutpie and PyMC catch the ``KeyboardInterrupt`` and return the draws so far; this records that the
    interrupt happened, whatever the sampler does with it. Outside the main thread (where Python handles
    no signals) or when SIGINT is not handled by a Python function, it records nothing.
    """

    def __init__(self) -> None:
        self.seen = False
        self._previous: Callable[..., Any] | None = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.seen = True
        if self._previous is not None:
            self._previous(signum, frame)

    def __enter__(self) -> InterruptWatch:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):
                self._previous = previous
                signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


def run_sampler(
    model: pm.Model,
    *,
    sampler: str,
    chains: int,
    draws: int,
    tune: int,
    seed: int,
    progress: bool,
    cores: int,
    target_accept: float,
    extra: dict[str, Any],
    state: RunState | None = None,
    watch: InterruptWatch | None = None,
    stop: StopRule | None = None,
    start_at: Callable[[int], np.ndarray] | None = None,
) -> xr.DataTree:
    """Run ``sampler`` on ``model``, recording the phase reached in ``state``.

    With ``stop`` (nutpie only), ``draws`` is the most per chain and sampling ends as soon as the
    convergence checks pass (:func:`irtbayes.fitting.until_converged.sample_until_converged`). ``start_at`` (nutpie only):
    each chain's start, a flat unconstrained vector from a seed (:class:`irtbayes.fitting.warmstart.WarmStart`).

    On Ctrl-C, nutpie and PyMC return the draws so far (PyMC raises when there are none); with ``watch``,
    PyMC's sequential chains stop too instead of running on after the first one is cut short.
    """
    state = state or RunState()
    settings: dict[str, Any] = {
        "chains": chains,
        "draws": draws,
        "tune": tune,
        "seed": seed,
        "target_accept": target_accept,
    }
    if sampler == "nutpie":
        return _run_nutpie(
            model, **settings, cores=cores, progress=progress, extra=extra, state=state, stop=stop, start_at=start_at
        )
    if start_at is not None:
        raise SpecError(f"a warm start is for nutpie, not {sampler!r}")
    if sampler == "numpyro":
        from irtbayes.fitting.jaxnuts import sample_numpyro

        state.phase = "running"
        devices = extra.pop("devices", None)
        return sample_numpyro(model, **settings, progress=progress, devices=devices, nuts_kwargs=extra)
    if sampler == "pymc":
        # numba: pip installs of PyTensor often have no BLAS for its C backend
        extra.setdefault("compile_kwargs", {"mode": "NUMBA"})
        extra["callback"] = pymc_callback(state, watch, extra.get("callback"))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*ravel_inputs.*")
            return pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                random_seed=seed,
                progressbar=bars_shown(progress),
                model=model,
                target_accept=target_accept,
                compute_convergence_checks=False,
                nuts_sampler="pymc",
                **extra,
            )
    state.phase = "optimisation"
    return _run_approximation(
        model, sampler, chains=chains, draws=draws, tune=tune, seed=seed, progress=progress, extra=extra
    )


def _run_nutpie(
    model: pm.Model,
    *,
    chains: int,
    draws: int,
    tune: int,
    seed: int,
    target_accept: float,
    cores: int,
    progress: bool,
    extra: dict[str, Any],
    state: RunState,
    stop: StopRule | None,
    start_at: Callable[[int], np.ndarray] | None = None,
) -> xr.DataTree:
    """nutpie: compile, then tune and sample with a progress bar (a terminal) or progress log lines."""
    import nutpie

    started = time.perf_counter()
    compiled = _compiled(model)
    state.compile_s = time.perf_counter() - started
    if start_at is not None:  # nutpie calls it with each chain's seed
        compiled = dataclasses.replace(compiled, initial_point_func=start_at)
    with _trace_store(compiled, chains=chains, stop=stop) as store, warnings.catch_warnings():
        if store is not None:
            extra = {**extra, "zarr_store": store}
        state.phase = "tuning"
        # ArviZ's guess about dimension names, raised for a run cut short with fewer draws than chains
        warnings.filterwarnings("ignore", message="Found chain dimension to be longer than draw dimension")
        # a bar where one can be drawn; log lines with draws/s and the time left everywhere else
        bar = progress and sys.stderr.isatty()
        phase_only = not progress or bar
        progress_log = SamplingProgress(
            every=float("inf") if phase_only else PROGRESS_EVERY, on_phase=lambda p: setattr(state, "phase", p)
        )
        progress_log.most = stop is not None
        run = nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            seed=seed,
            save_warmup=False,
            progress_bar=bar,
            progress_callback=progress_log,
            target_accept=target_accept,
            blocking=stop is None,
            **extra,
        )
        if stop is None:
            return run
        from irtbayes.fitting.until_converged import sample_until_converged

        return sample_until_converged(
            run, stop, draws_done=lambda: max(0, progress_log.least_finished - tune), stored=store is not None
        )


#: A run until converged (:mod:`irtbayes.fitting.until_converged`) whose usual draws would take more memory than this
#: (bytes, in nutpie's float64 trace) writes them to a Zarr store on disk (a temporary folder, removed when the
#: run ends) instead of memory. Writing costs some sampling speed (the store compresses), so smaller runs
#: keep their trace in memory. MMLU-Pro's default fit goes to disk, which lowered its peak memory while sampling and
#: checking (measured on docs/performance.md#memory-2026-12-03).
TRACE_IN_MEMORY_MAX = 512 * 2**20


@contextlib.contextmanager
def _trace_store(compiled: Any, *, chains: int, stop: StopRule | None) -> Iterator[Any]:
    """nutpie's Zarr store in a temporary folder for a run until converged whose usual draws would take more than
    :data:`TRACE_IN_MEMORY_MAX` (every value nutpie stores, in float64), removed (by a thread) on leaving; else None
    (the trace stays in memory). The checks read what they need from the store, where a trace in memory and the
    copy each check read from it were the peak of a large fit's memory (docs/performance.md#memory-2026-12-03)."""
    if stop is None or int(getattr(compiled, "n_expanded", 0)) * chains * stop.planned * 8 <= TRACE_IN_MEMORY_MAX:
        yield None
        return
    import nutpie

    folder = tempfile.mkdtemp(prefix="irtbayes-draws-")
    try:
        yield nutpie.zarr_store.LocalStore(folder)
    finally:
        # its tens of thousands of chunk files take seconds to remove at MMLU-Pro's size (measured on
        # docs/performance.md#sampling-until-converged): removed in a thread while the fit goes on (not a daemon:
        # a process ending meanwhile waits for it)
        remover = threading.Thread(
            target=shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, name="irtbayes-remove-draws"
        )
        remover.start()
        _REMOVING[:] = [t for t in _REMOVING if t.is_alive()] + [remover]


#: Threads removing the folders of finished runs' stores (:func:`_trace_store`).
_REMOVING: list[threading.Thread] = []


#: nutpie's compiled models of this process by the key of their inputs (:meth:`ModelInputs.key`), newest last.
_COMPILED: OrderedDict[str, Any] = OrderedDict()
#: How many compiled models are kept: a refit of the same data and spec (another seed, more draws, a higher
#: target acceptance) then starts sampling at once instead of compiling again (seconds to a minute).
COMPILED_KEPT = 4
#: Models of more responses are not kept (each holds its data; their compilation is a small part of a fit).
COMPILED_MAX_RESPONSES = 1_000_000


def release_compiled() -> None:
    """Drop the compiled models this process keeps for refits, and hand freed memory back to the system.

    For a process that fits once and then does other work (``irtbayes audit``: the audit, the saved fit and the
    report): the compiled model and what the sampler's trace left on the heap are not needed any more. On
    glibc, ``malloc_trim`` returns the heap's free pages (the trace's many small buffers leave much of the heap
    free but held); elsewhere only the cache is cleared. What this returns in MMLU-Pro's audit (``make run``) is
    measured on docs/performance.md#memory-2026-12-04.
    """
    import ctypes
    import ctypes.util
    import gc

    _COMPILED.clear()
    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        trim = getattr(libc, "malloc_trim", None)
    except OSError:
        trim = None
    if trim is not None:
        trim(0)


def _compiled(model: pm.Model) -> Any:
    """nutpie's compiled ``model``: the one compiled before for the same inputs, or a new one (its C callbacks from
    the disk cache where an earlier process compiled them: :mod:`irtbayes.fitting.compiled`)."""
    from irtbayes.fitting.compiled import compile_model

    inputs = getattr(model, "irtbayes_inputs", None)
    key = inputs.key() if inputs is not None and len(inputs.response) <= COMPILED_MAX_RESPONSES else None
    if key is not None and key in _COMPILED:
        _COMPILED.move_to_end(key)
        log.info("reusing the model compiled before for the same data and spec; tuning and sampling")
        return _COMPILED[key]
    from irtbayes.core.chains import NUMBA_WARMUP
    from irtbayes.core.jit import compile_in_background
    from irtbayes.model.likelihood import KERNEL_WARMUPS

    # on a first run, the likelihood's kernel (first: the log-density's compilation loads it once compiled), the
    # checks' numba code and what a caller asked for (irtbayes.core.jit.want) compile on the CPU the model's
    # compilation leaves idle
    warmups = [NUMBA_WARMUP]
    spec = inputs.spec if inputs is not None else None
    if spec is not None and spec.layout == "fused" and spec.kind != "3pl" and spec.precision in KERNEL_WARMUPS:
        warmups.insert(0, KERNEL_WARMUPS[spec.precision])
    compile_in_background(warmups)
    started = time.perf_counter()
    compiled = compile_model(model)
    log.info("compiled the model in %.1f s; tuning and sampling", time.perf_counter() - started)
    if key is not None:
        _COMPILED[key] = compiled
        while len(_COMPILED) > COMPILED_KEPT:
            _COMPILED.popitem(last=False)
    return compiled


def _run_approximation(
    model: pm.Model,
    sampler: str,
    *,
    chains: int,
    draws: int,
    tune: int,
    seed: int,
    progress: bool,
    extra: dict[str, Any],
) -> xr.DataTree:
    """ADVI (``tune`` x 10 steps, at least 2,000) or Pathfinder (pymc-extras), ``draws`` x ``chains`` draws."""
    if sampler == "advi":
        n_steps = int(extra.pop("n", max(10 * tune, 2000)))
        with pytensor.config.change_flags(mode="NUMBA"):
            approx = pm.fit(
                n=n_steps, method="advi", model=model, random_seed=seed, progressbar=bars_shown(progress), **extra
            )
            return approx.sample(draws=draws * chains, random_seed=seed)
    try:
        import pymc_extras as pmx
    except ImportError as err:
        raise SpecError("sampler='pathfinder' needs pymc-extras: pip install pymc-extras") from err
    return pmx.fit(method="pathfinder", model=model, num_draws=draws * chains, random_seed=seed, **extra)


def pymc_callback(
    state: RunState, watch: InterruptWatch | None, user: Callable[..., Any] | None
) -> Callable[..., None]:
    """A ``pm.sample`` callback that records the phase and, once Ctrl-C has been seen, stops every chain.

    PyMC samples chains one after the other when ``cores=1`` and, on Ctrl-C, only ends the current one;
    raising ``KeyboardInterrupt`` here ends each later chain at its first draw.
    """

    def callback(trace: Any, draw: Any) -> None:
        state.phase = "tuning" if draw.tuning else "sampling"
        if user is not None:
            user(trace=trace, draw=draw)
        if watch is not None and watch.seen:
            raise KeyboardInterrupt

    return callback
