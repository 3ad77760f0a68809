"""Numba code compiled ahead, in another process, while a model compiles: :func:`compile_in_background`.

A first run on a machine compiles the model on one CPU, which leaves the others idle. The numba code that runs
after it would then compile while the chains or the audit wait: the convergence checks' pass (at the first check)
and, in ``irtbayes audit``, the deconvolution's draws (each measured on docs/performance.md#sampling-until-converged
and docs/performance.md#memory-the-checks-garbage-and-the-fits-views-2026-12-05-later). Each module with
such code names a :class:`Warmup`, a function of no arguments that runs the code on small inputs of the types it
meets and so fills numba's disk cache, with the dispatchers it fills; where the cache lacks any of them,
:func:`compile_in_background` runs those warm-ups in one process on the CPU the model's compilation leaves idle,
and the later calls load the code from the cache.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Warmup", "compile_in_background", "on_disk", "run_warmups", "want"]


@dataclass(frozen=True)
class Warmup:
    """``function`` ("package.module:name", called with no arguments) compiles ``dispatchers`` (numba functions
    with ``cache=True``) into numba's disk cache."""

    function: str
    dispatchers: tuple[object, ...]


def on_disk(dispatcher: object) -> bool:
    """Whether numba's disk cache holds code of ``dispatcher`` compiled from its current source. Read through numba's
    own cache objects; True where they cannot be read (another numba), so that nothing is started."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())  # type: ignore[attr-defined]
    except Exception:
        return True


def want(warmup: Warmup) -> None:
    """Have the next :func:`compile_in_background` of this process run ``warmup`` too (where its code is not
    cached): for code that runs later in the same process, as the audit after ``irtbayes audit``'s fit."""
    _WANTED[warmup.function] = warmup


def run_warmups(functions: Sequence[str]) -> None:
    """Call each ``"package.module:name"`` of ``functions`` (what the process started by
    :func:`compile_in_background` runs)."""
    for function in functions:
        module, name = function.split(":")
        getattr(importlib.import_module(module), name)()


def compile_in_background(warmups: Sequence[Warmup] = ()) -> subprocess.Popen[bytes] | None:
    """Run ``warmups`` and those :func:`want` asked for, where numba's disk cache lacks their code, in another process.

    Returns the process (not waited for; it exits by itself once done), or None where the cache holds every one
    already or an earlier process still runs. Its output is discarded: should it fail, the code compiles where it
    is first called, as without it.
    """
    for process in list(_STARTED):  # reap those done
        if process.poll() is not None:
            _STARTED.remove(process)
    chosen = {w.function: w for w in (*warmups, *_WANTED.values())}
    missing = [name for name, w in chosen.items() if not all(on_disk(d) for d in w.dispatchers)]
    if not missing or _STARTED or not sys.executable or getattr(sys, "frozen", False):
        return None  # cached, one already running, or no Python interpreter to start (an embedded or frozen one)
    code = f"from irtbayes.core.jit import run_warmups; run_warmups({missing!r})"
    # this irtbayes, whatever the working folder holds (-P: not the working folder first on the path)
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p)}
    try:
        process = subprocess.Popen(
            [sys.executable, "-P", "-c", code],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    _STARTED.append(process)  # held until done: a process object collected while its process runs warns
    return process


#: Warm-ups :func:`want` asked for.
_WANTED: dict[str, Warmup] = {}
#: Processes :func:`compile_in_background` started that may still run (one at a time).
_STARTED: list[subprocess.Popen[bytes]] = []
