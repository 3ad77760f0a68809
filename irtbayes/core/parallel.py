"""Independent tasks mapped over this machine or a Dask cluster: the refits that multiply a fit's cost.

The self-check refits 20 simulated data sets, robustness refits every other population, cross-fitting refits each
fold, and the studies in ``scripts/`` loop over seeds. Each of these is a map of one function over independent
tasks, each seeded by the caller. :func:`map_tasks` runs that map

- on this machine, as the caller chooses (``local="serial"``, ``"threads"`` or ``"processes"``), when no
  scheduler is given; or
- on a ``dask.distributed`` cluster when one is: an address (``tcp://host:8786``), a ``dask.distributed.Client``,
  or the address in the environment variable :data:`SCHEDULER_ENV` (``IRTBAYES_SCHEDULER``). The common
  arguments are scattered to the workers once, the tasks submitted with ``Client.map`` (``pure=False`` by
  default: Dask never merges two random tasks) and collected with ``as_completed``, so the progress bar and the
  caller's ``on_done`` follow the results as they arrive.

Either way the results come back in task order, and each task draws only from the seeds it carries, so the
results equal those of the serial run with the same seeds. Dask does the distribution; irtbayes starts no
scheduler and no worker (``dask scheduler``, ``dask worker``, ``LocalCluster``, dask-jobqueue or the Dask Kubernetes
operator do; see docs/scale.md). Dask is optional (``pip install 'irtbayes[dask]'``): without it every map runs
locally, and naming a scheduler is a one-line error that says what to install.
"""

from __future__ import annotations

import inspect
import logging
import multiprocessing
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from tqdm.auto import tqdm

from irtbayes.core.errors import SpecError
from irtbayes.core.progress import bars_shown

if TYPE_CHECKING:
    from distributed import Client

#: Where a map runs: a scheduler's address, a connected ``dask.distributed.Client``, or None (the address in
#: :data:`SCHEDULER_ENV`, else this machine).
type Scheduler = str | Client | None

__all__ = [
    "CONNECT_TIMEOUT",
    "DASK_EXTRA",
    "LOCAL_MODES",
    "SCHEDULER_ENV",
    "Scheduler",
    "check_scheduler",
    "map_tasks",
    "resolve_scheduler",
    "scheduler_label",
]

log = logging.getLogger(__name__)

#: The environment variable holding a scheduler's address, used where none is given.
SCHEDULER_ENV = "IRTBAYES_SCHEDULER"
#: Seconds to wait for a scheduler named by its address before saying it cannot be reached.
CONNECT_TIMEOUT = 5.0
#: How a map runs on this machine: one task after another, in threads, or in processes (spawned).
LOCAL_MODES = ("serial", "threads", "processes")
#: What to install for Dask.
DASK_EXTRA = "pip install 'irtbayes[dask]'"


def check_scheduler(scheduler: object, where: str = "scheduler") -> Scheduler:
    """``scheduler`` if it can name a cluster (None, an address, a ``dask.distributed.Client``); else :class:`SpecError`.

    Nothing is connected or imported: an address is checked only for being text.

    Examples
    --------
    >>> from irtbayes.core.parallel import check_scheduler
    >>> check_scheduler("tcp://127.0.0.1:8786"), check_scheduler(None)
    ('tcp://127.0.0.1:8786', None)
    >>> check_scheduler(8786)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.SpecError: scheduler must be a Dask scheduler's address (tcp://host:8786) or a dask.distributed.Client, got int
    """
    if scheduler is None:
        return None
    if _is_client(scheduler):
        return cast("Client", scheduler)
    if isinstance(scheduler, str) and scheduler.strip():
        return scheduler.strip()
    raise SpecError(
        f"{where} must be a Dask scheduler's address (tcp://host:8786) or a dask.distributed.Client, got "
        f"{type(scheduler).__name__ if not isinstance(scheduler, str) else repr(scheduler)}"
    )


def resolve_scheduler(scheduler: Scheduler = None) -> Scheduler:
    """The scheduler a map uses: ``scheduler`` when given, else the address in :data:`SCHEDULER_ENV` (unset or
    empty: None, this machine). Inside a Dask worker the environment is not read, so a task never submits
    more tasks to the cluster it runs on.

    Examples
    --------
    >>> import os
    >>> from irtbayes.core.parallel import SCHEDULER_ENV, resolve_scheduler
    >>> os.environ[SCHEDULER_ENV] = "tcp://10.0.0.5:8786"
    >>> resolve_scheduler(), resolve_scheduler("tcp://127.0.0.1:8786")
    ('tcp://10.0.0.5:8786', 'tcp://127.0.0.1:8786')
    >>> del os.environ[SCHEDULER_ENV]
    >>> resolve_scheduler() is None
    True
    """
    if scheduler is not None:
        return check_scheduler(scheduler)
    address = os.environ.get(SCHEDULER_ENV, "").strip()
    if not address or _inside_worker():
        return None
    return address


def scheduler_label(scheduler: Scheduler) -> str | None:
    """A scheduler as text, for logs and records: its address (a Client's scheduler address), or None.

    Examples
    --------
    >>> from irtbayes.core.parallel import scheduler_label
    >>> scheduler_label("tcp://127.0.0.1:8786"), scheduler_label(None)
    ('tcp://127.0.0.1:8786', None)
    """
    if scheduler is None or isinstance(scheduler, str):
        return scheduler
    address = getattr(getattr(scheduler, "scheduler", None), "address", None)
    return str(address) if address else repr(scheduler)


@overload
def map_tasks[T, R](
    func: Callable[..., R],
    tasks: Sequence[T],
    *,
    common: Mapping[str, Any] | None = ...,
    scheduler: Scheduler = ...,
    local: str = ...,
    workers: int | None = ...,
    pure: bool = ...,
    progress: bool = ...,
    desc: str = ...,
    on_done: Callable[[int, Any], None] | None = ...,
    failures: Literal["raise"] = ...,
) -> list[R]: ...


@overload
def map_tasks[T, R](
    func: Callable[..., R],
    tasks: Sequence[T],
    *,
    common: Mapping[str, Any] | None = ...,
    scheduler: Scheduler = ...,
    local: str = ...,
    workers: int | None = ...,
    pure: bool = ...,
    progress: bool = ...,
    desc: str = ...,
    on_done: Callable[[int, Any], None] | None = ...,
    failures: Literal["return"],
) -> list[R | BaseException]: ...


def map_tasks[T, R](
    func: Callable[..., R],
    tasks: Sequence[T],
    *,
    common: Mapping[str, Any] | None = None,
    scheduler: Scheduler = None,
    local: str = "serial",
    workers: int | None = None,
    pure: bool = False,
    progress: bool = False,
    desc: str = "tasks",
    on_done: Callable[[int, Any], None] | None = None,
    failures: Literal["raise", "return"] = "raise",
) -> list[R] | list[R | BaseException]:
    """``[func(task, **common) for task in tasks]``, on this machine or on a ``dask.distributed`` cluster.

    Parameters
    ----------
    func
        A function importable by name (module level; the cluster's workers import it), called as
        ``func(task, **common)``. A random task must draw only from seeds it carries.
    tasks
        The tasks, each picklable.
    common
        Keyword arguments every call shares (the data, settings): sent to each worker once.
    scheduler
        Where the map runs: None (default) reads :data:`SCHEDULER_ENV`, and without it runs on this machine; an
        address (``tcp://host:8786``) connects a Client for this map (within :data:`CONNECT_TIMEOUT` seconds)
        and closes it after; a connected ``dask.distributed.Client`` is used as it is and left open.
    local
        How the map runs without a scheduler (:data:`LOCAL_MODES`): ``"serial"`` (default), ``"threads"`` or
        ``"processes"`` (spawned, so that no sampler's threads are forked).
    workers
        Threads or processes of a local pool (default: the executor's).
    pure
        Dask's ``pure``: False (default) gives every task its own key, so Dask never merges or caches two calls
        with equal arguments; True only for deterministic functions.
    progress, desc
        A progress bar over the tasks, labelled ``desc``, moved as each result arrives (where a terminal shows it).
    on_done
        Called on this machine as ``on_done(index, result)`` as each result arrives (a failure with
        ``failures="return"`` passes its exception), e.g. to log or save it.
    failures
        ``"raise"`` (default): the first task that fails raises its error, and the tasks not yet done are
        cancelled; ``"return"``: the exception takes that task's place in the results.

    Returns
    -------
    list
        One result per task, in the order of ``tasks``.

    Raises
    ------
    SpecError
        A scheduler is given but ``dask.distributed`` is not installed (say what to install), no scheduler
        answers at the address in :data:`CONNECT_TIMEOUT` seconds (say the address), an unknown ``local``, or a
        scheduler of the wrong type.

    Examples
    --------
    >>> from irtbayes.core.parallel import map_tasks
    >>> map_tasks(pow, [1, 2, 3], common={"exp": 2})
    [1, 4, 9]
    >>> map_tasks(int, ["7", "x"], failures="return")
    [7, ValueError("invalid literal for int() with base 10: 'x'")]
    """
    if local not in LOCAL_MODES:
        raise SpecError(f"local must be one of {list(LOCAL_MODES)}, got {local!r}")
    if failures not in ("raise", "return"):
        raise SpecError(f"failures must be 'raise' or 'return', got {failures!r}")
    chosen = resolve_scheduler(scheduler)
    kwargs = dict(common or {})
    results: list[Any] = [None] * len(tasks)

    def done(index: int, value: Any) -> None:
        results[index] = value
        if on_done is not None:
            on_done(index, value)
        bar.update(1)

    with tqdm(total=len(tasks), desc=desc, disable=not bars_shown(progress)) as bar:
        if not tasks:
            return results
        if chosen is not None:
            _on_cluster(func, tasks, kwargs, chosen, pure=pure, failures=failures, done=done, desc=desc)
        elif local == "serial" or (workers == 1 and local == "threads"):
            _serially(func, tasks, kwargs, failures=failures, done=done)
        else:
            _in_pool(func, tasks, kwargs, local=local, workers=workers, failures=failures, done=done)
    return results


# ---------------------------------------------------------------------------------------------- this machine
def _serially(
    func: Callable[..., Any],
    tasks: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    failures: str,
    done: Callable[[int, Any], None],
) -> None:
    for index, task in enumerate(tasks):
        try:
            value = func(task, **kwargs)
        except Exception as error:
            if failures == "raise":
                raise
            value = error
        done(index, value)


def _in_pool(
    func: Callable[..., Any],
    tasks: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    local: str,
    workers: int | None,
    failures: str,
    done: Callable[[int, Any], None],
) -> None:
    pool: Executor
    if local == "processes":
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    else:
        pool = ThreadPoolExecutor(max_workers=workers)
    call = partial(func, **kwargs) if kwargs else func
    with pool:
        futures: dict[Future[Any], int] = {pool.submit(call, task): k for k, task in enumerate(tasks)}
        try:
            for future in as_completed(futures):
                error = future.exception()
                if error is not None and failures == "raise":
                    raise error
                done(futures[future], future.result() if error is None else error)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


# ---------------------------------------------------------------------------------------------- a Dask cluster
def _on_cluster(
    func: Callable[..., Any],
    tasks: Sequence[Any],
    kwargs: dict[str, Any],
    scheduler: Scheduler,
    *,
    pure: bool,
    failures: str,
    done: Callable[[int, Any], None],
    desc: str,
) -> None:
    client_type, completed = _distributed()
    taken = sorted(set(kwargs) & set(inspect.signature(client_type.map).parameters))
    if taken:
        raise SpecError(f"{desc}: common argument(s) {taken} share a name with Client.map's own; rename them")
    own = isinstance(scheduler, str)
    client: Any = _connect(client_type, scheduler) if isinstance(scheduler, str) else scheduler
    try:
        threads = client.nthreads()
        if not threads:
            log.warning(
                "%s: the Dask scheduler at %s has no workers yet; the tasks wait for one", desc, _address(client)
            )
        log.info(
            "%s: %d tasks on the Dask cluster at %s (%d workers, %d threads)",
            *(desc, len(tasks), _address(client), len(threads), sum(threads.values())),
        )
        shared = client.scatter(kwargs, broadcast=True, hash=False) if kwargs else {}
        futures = client.map(func, list(tasks), pure=pure, **shared)
        places: dict[Any, list[int]] = {}
        for index, future in enumerate(futures):
            places.setdefault(future.key, []).append(index)
        try:
            for future in completed(futures, loop=client.loop):
                try:
                    value = future.result()  # a task's error is raised here, with its traceback
                except Exception as error:
                    if failures == "raise":
                        raise
                    value = error
                for index in places.pop(future.key, []):
                    done(index, value)
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        if own:
            client.close()


def _distributed() -> tuple[Any, Any]:
    """``dask.distributed``'s Client and as_completed; :class:`SpecError` naming the extra when it is missing."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise SpecError(
            f"a Dask scheduler was given (scheduler=, --scheduler or {SCHEDULER_ENV}) but dask.distributed is not "
            f"installed: {DASK_EXTRA}"
        ) from None
    return Client, as_completed


def _connect(client_type: Any, address: str) -> Any:
    """A Client of the scheduler at ``address``; :class:`SpecError` naming it when none answers in time."""
    try:
        return client_type(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, ValueError, TypeError):
        raise SpecError(
            f"no Dask scheduler answered at {address} within {CONNECT_TIMEOUT:g} s; start one there (`dask scheduler`, then `dask worker {address}` on each machine) or give another "
            f"address (scheduler=, --scheduler or {SCHEDULER_ENV})"
        ) from None


def _address(client: Any) -> str:
    return scheduler_label(client) or "?"


def _is_client(value: object) -> bool:
    """Whether ``value`` is a ``dask.distributed.Client`` (only checked where distributed is already loaded)."""
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(value, distributed.Client)


def _inside_worker() -> bool:
    """Whether this code runs in a task on a Dask worker."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True
