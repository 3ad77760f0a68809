"""Independent tasks on this machine or a Dask cluster (irtbayes.core.parallel), and the callers that refit through it.

One ``dask.distributed.LocalCluster`` per module (2 single-threaded workers in this process, talking TCP on
127.0.0.1, so tasks, arguments and results are serialised as on a real cluster). The cluster's results must equal
the serial run's with the same seeds, exactly, and come back in task order. No NUTS: the refits are approximate
fits of tiny designs, or stand-ins.
"""

from __future__ import annotations

import socket
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest

import irtbayes.auditing.selfcheck as selfcheck_module
import irtbayes.core.parallel as parallel
import irtbayes.robustness.population as population_module
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.auditing.selfcheck import self_check
from irtbayes.core.errors import SpecError
from irtbayes.core.parallel import SCHEDULER_ENV, map_tasks
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed (pip install 'irtbayes[dask]')"
)
# the workers are threads of this process, and Python 3.12's warnings filters are global: a set that ignores the
# approximate tier's warning in one thread can restore the filters while another set is fitting
pytestmark = pytest.mark.filterwarnings("ignore:approx is an approximate method:UserWarning")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def address(cluster) -> str:
    return str(cluster.scheduler_address)


# ---------------------------------------------------------------------------------------------- tasks
def _draw(task: tuple[int, int], *, scale: float) -> float:
    """A random task seeded by what it carries; the first tasks take longest, so they finish out of order."""
    index, seed = task
    time.sleep(0.02 * (6 - index))
    return float(scale * np.random.default_rng(seed).normal())


def _where(task: int) -> str:
    """ "here" outside a Dask worker; on one, the function name of the task it runs in."""
    try:
        worker = distributed.get_worker()
    except ValueError:
        return "here"
    return str(worker.get_current_task()).split("-")[0]


def _nested(task: int) -> list[str]:
    """A task that maps again: inside a worker, IRTBAYES_SCHEDULER is not read, so the inner map stays there."""
    return map_tasks(_where, [task])


def _odd_fails(task: int) -> int:
    if task % 2:
        raise ValueError(f"task {task} fails")
    return task


TASKS = [(k, 100 + k) for k in range(6)]
EXPECTED = [float(2.0 * np.random.default_rng(seed).normal()) for _, seed in TASKS]


def test_results_in_task_order_equal_the_serial_run(address: str) -> None:
    serial = map_tasks(_draw, TASKS, common={"scale": 2.0})
    arrived: list[int] = []
    remote = map_tasks(_draw, TASKS, common={"scale": 2.0}, scheduler=address, on_done=lambda k, _: arrived.append(k))
    assert serial == remote == EXPECTED, (serial, remote)
    assert sorted(arrived) == list(range(len(TASKS)))
    threads = map_tasks(_draw, TASKS, common={"scale": 2.0}, local="threads", workers=2)
    assert threads == EXPECTED


def test_a_connected_client_is_used_and_left_open(cluster) -> None:
    with distributed.Client(cluster, set_as_default=False) as client:
        assert map_tasks(_draw, TASKS, common={"scale": 2.0}, scheduler=client) == EXPECTED
        assert map_tasks(_where, [0, 1, 2], scheduler=client) == ["_where"] * 3
        assert client.status == "running"


def test_the_environment_names_the_scheduler(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert map_tasks(_where, [0, 1]) == ["here", "here"]
    monkeypatch.setenv(SCHEDULER_ENV, address)
    assert map_tasks(_where, [0, 1]) == ["_where", "_where"]
    assert parallel.resolve_scheduler() == address
    assert map_tasks(_nested, [0]) == [["_nested"]]  # ran in the worker's own task, not submitted again


def test_a_failed_task_raises_or_takes_its_place(address: str) -> None:
    for scheduler in (None, address):
        with pytest.raises(ValueError, match="task 1 fails"):
            map_tasks(_odd_fails, [0, 1, 2], scheduler=scheduler)
        got = map_tasks(_odd_fails, [0, 1, 2, 3], scheduler=scheduler, failures="return")
        assert got[0::2] == [0, 2], got
        assert [str(e) for e in got[1::2]] == ["task 1 fails", "task 3 fails"]
        assert all(isinstance(e, ValueError) for e in got[1::2])


def test_a_scheduler_without_dask_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(SpecError, match=r"dask\.distributed is not installed: pip install 'irtbayes\[dask\]'"):
        map_tasks(_where, [0], scheduler="tcp://127.0.0.1:8786")
    assert map_tasks(_where, [0]) == ["here"]  # no scheduler: no Dask needed


def test_an_unreachable_scheduler_is_named_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 1.0)
    started = time.perf_counter()
    with pytest.raises(SpecError, match=rf"no Dask scheduler answered at tcp://127\.0\.0\.1:{port} within 1 s"):
        map_tasks(_where, [0], scheduler=f"tcp://127.0.0.1:{port}")
    assert time.perf_counter() - started < 10
    with pytest.raises(SpecError, match="scheduler must be a Dask scheduler's address"):
        map_tasks(_where, [0], scheduler=8786)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="local must be one of"):
        map_tasks(_where, [0], local="cluster")


# ---------------------------------------------------------------------------------------------- the callers
@pytest.fixture(scope="module")
def design() -> tuple[ResponseData, Fit, AuditResult]:
    data, _ = simulate_responses(60, 40, n_benchmarks=2, missing=0.1, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the approximate tier warns that MCMC checks do not apply
        fitted = fit(data, sampler="approx", chains=2, draws=100, seed=3, progress=False)
    return data, fitted, audit(fitted, data, range=(-2.5, 2.5), bins=5, ensemble="draws")


def test_the_self_check_on_the_cluster_equals_the_serial_one(design, address: str, monkeypatch) -> None:
    data, fitted, audited = design
    options = {"n_sets": 3, "seed": 1, "progress": False, "audit_fn": audit, "max_draws": 20}
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    serial = self_check(fitted, data, audited, **options)
    remote = self_check(fitted, data, audited, scheduler=address, **options)
    assert (serial.n_sets, serial.n_failed) == (remote.n_sets, remote.n_failed) == (3, 0)
    assert serial.sets["set"].drop_duplicates().tolist() == [0, 1, 2]  # in set order
    pd.testing.assert_frame_equal(serial.sets, remote.sets)
    pd.testing.assert_frame_equal(serial.table, remote.table)


def test_the_audit_hands_its_scheduler_to_the_self_check(design, address: str, monkeypatch) -> None:
    data, fitted, _ = design
    seen: dict[str, object] = {}
    real = selfcheck_module.self_check

    def recording(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(selfcheck_module, "self_check", recording)
    checked = audit(
        fitted, data, range=(-2.5, 2.5), bins=5, ensemble="draws", max_draws=20, self_check=2, scheduler=address
    )
    assert seen["scheduler"] == address
    assert checked.settings["self_check"]["n_sets"] == 2
    with pytest.raises(SpecError, match="audit: scheduler must be"):
        audit(fitted, data, self_check=2, scheduler=3)  # type: ignore[arg-type]


def test_the_audit_command_reads_scheduler(monkeypatch) -> None:
    import irtbayes.auditing.run as run_module
    from irtbayes.cli import main as cli_main

    args = cli_main.build_parser().parse_args(["audit", "--fit", "f", "--self-check", "20", "--scheduler", "tcp://h:1"])
    seen: dict[str, object] = {}
    monkeypatch.setattr(run_module, "audit", lambda *a, **k: seen.update(k))
    cli_main._audit_from_args(None, None, args)
    assert (seen["self_check"], seen["scheduler"]) == (20, "tcp://h:1")


def test_population_refits_run_on_the_cluster_in_order(address: str, monkeypatch) -> None:
    from irtbayes.robustness.population import Population, refit_populations

    monkeypatch.setattr(population_module, "_refit_one", lambda task: task[0].name)
    data, _ = simulate_responses(5, 6, seed=1)
    plans = [Population(name, "population", data) for name in ("first", "second", "third")]
    done: list[str] = []
    assert refit_populations(plans, scheduler=address, on_done=done.append) == ["first", "second", "third"]
    assert sorted(done) == ["first", "second", "third"]


def test_cross_fitting_folds_on_the_cluster_equal_the_local_ones(address: str) -> None:
    from irtbayes.evaluating.bank import ItemBank
    from irtbayes.evaluating.crossfit import CrossFit
    from irtbayes.examples import simulated_fit

    fitted, data = simulated_fit(16, 30, n_benchmarks=2, seed=3)
    bank = ItemBank.from_fit(fitted, n_draws=30, data=data)
    here = CrossFit.from_fit(fitted, bank, data=data, folds=2, seed=5)
    there = CrossFit.from_fit(fitted, bank, data=data, folds=2, seed=5, scheduler=address)
    assert here.subjects == there.subjects
    for a, b in zip(here.banks, there.banks, strict=True):
        np.testing.assert_array_equal(a.difficulty, b.difficulty)
        np.testing.assert_array_equal(a.deviation_sd, b.deviation_sd)
    for a, b in zip(here.responses, there.responses, strict=True):
        np.testing.assert_array_equal(a, b)
