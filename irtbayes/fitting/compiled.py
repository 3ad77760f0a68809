"""nutpie's compiled model, compiled once per model structure, with the C callbacks it samples through cached on disk.

nutpie (0.16) samples a PyMC model through two numba C callbacks: one around PyTensor's log-density and gradient,
one around the function that expands a draw into the stored variables. nutpie compiles them for the model's
shapes (the flat point's length and each variable's slice are constants of the code) and builds the callbacks
afresh in every process, where numba links and optimises the log-density's code again.

:func:`compile_model` makes the same sampler input as ``nutpie.compile_pymc_model(model)`` (the numba backend, its
default initial points), with three differences:

- Shapes are data, not code. The flat point's length is free and each free variable's offset and shape are read
  from a shared variable; the model's sizes are PyMC's dimension lengths and its data (responses, benchmark and
  domain codes, :mod:`irtbayes.model.build`) shared variables. Two models of the same structure (the same
  variables and hierarchy, other subjects, items or answers) therefore compile to the same code: the second,
  in this process or a later one, loads it from PyTensor's and numba's disk caches and its rewritten graphs from
  :mod:`irtbayes.fitting.graphcache` (seconds instead of half a minute or more, measured on
  docs/performance.md#compiled-models-and-their-caches), which refits of other data
  (BenchFill's, robustness checks, calibration runs) and new data sets of a known structure gain.
- The callbacks are generated as source that numba caches in PyTensor's numba cache folder, each under a key
  made of PyTensor's cache keys of the functions it calls, the callbacks' own source, the numba and PyTensor
  versions and this module's :data:`CALLBACK_VERSION`; the lengths and the shared values' addresses and shapes
  reach them in ``user_data``. Where PyTensor has no cache key for a function (a graph it cannot cache), the
  callbacks are compiled without a disk cache, as nutpie does.
- The draws nutpie stores hold the model's own variables only (:func:`_functions`): not the sampler's
  coordinates (``*_z``, ``*_chol``, ``*__``), which no part of irtbayes reads.

The model's PyTensor functions are compiled without PyTensor's numba fast-math flags: with them, the code numba
loads from its cache and the code it has just compiled in memory could round differently (in the log-density's last
digit), so a first run on empty caches drew other chains than every later run of the same seed. Without them the
two agree to the bit and the gradient costs the same (measured on
docs/performance.md#cached-callbacks-and-the-same-chains-on-a-first-run-2026-12-05-later). The
likelihood kernels keep their own flags (:mod:`irtbayes.model.likelihood`), which round alike either way.

It uses nutpie's helpers for the model's shapes, initial points and coordinates (``nutpie.compile_pymc``); where
those are missing (another nutpie), it falls back to ``nutpie.compile_pymc_model`` and logs so.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["CALLBACK_VERSION", "compile_model"]

log = logging.getLogger(__name__)

#: Part of every callback's cache key: raised whenever the generated source or its calling convention changes.
CALLBACK_VERSION = 3

_LOGP_SOURCE = """
def irtbayes_logp_callback(dim, x_, out_, logp_, user_data_):
    u = numba.carray(user_data_, ({n_fields},), np.uint64)
    if dim != u[0]:
        return -1
    try:
        x = numba.carray(x_, (dim,))
        out = numba.carray(out_, (dim,))
        logp = numba.carray(logp_, ())
{unpack}
        logp_value, grad = inner(x{args})
        if len(grad) != dim:
            return 1
        logp[()] = logp_value
        for i in range(dim):  # not out[...] = grad: its shape error compiles numba's string formatting (2-4 s)
            out[i] = grad[i]
        if not np.all(np.isfinite(out)):
            return 3
        if not np.isfinite(logp_value):
            return 4
    except Exception:  # noqa: BLE001
        return 1
    return 0
"""

_EXPAND_SOURCE = """
def irtbayes_expand_callback(dim, expanded, x_, out_, user_data_):
    u = numba.carray(user_data_, ({n_fields},), np.uint64)
    if dim != u[0] or expanded != u[1]:
        return -1
    try:
        x = numba.carray(x_, (dim,))
        out = numba.carray(out_, (expanded,))
{unpack}
        (values,) = inner(x{args})
        if len(values) != expanded:
            return -2
        for i in range(expanded):
            out[i] = values[i]
    except Exception:  # noqa: BLE001
        return -2
    return 0
"""


def compile_model(model: Any) -> Any:
    """The nutpie model of ``model`` (a ``pm.Model``) for ``nutpie.sample``, its callbacks cached on disk.

    The same sampler input as ``nutpie.compile_pymc_model(model)``; the callbacks come from numba's disk cache when an
    earlier process compiled the same functions (see the module's docstring). Its ``user_data`` holds the point's and
    the stored draw's lengths and each shared value's address and shape, not nutpie's record, so nutpie's
    ``with_data`` does not apply to it: build the model again with the new data instead."""
    import nutpie
    import nutpie.compile_pymc as npc

    if not _helpers_fit(npc):
        log.info(
            "this nutpie (%s) lacks the helpers irtbayes' cached callbacks need; compiling with nutpie",
            nutpie.__version__,
        )
        return nutpie.compile_pymc_model(model)
    import pytensor

    initial_point_fn = _initial_point(model)
    with pytensor.config.change_flags(numba__fastmath=False):  # the same bits from the cache as compiled afresh
        n_dim, n_expanded, logp_pt, expand_pt, initial_point, shape_info, reparameterized = _functions(
            model, initial_point_fn
        )
    shared_vars: list[Any] = []
    for var in [*logp_pt.get_shared(), *expand_pt.get_shared()]:
        if var not in shared_vars:
            shared_vars.append(var)
    shared_data = {f"shared{i}": np.array(var.get_value(), order="C", copy=True) for i, var in enumerate(shared_vars)}
    if any(value.dtype.kind not in "biuf" for value in shared_data.values()):
        log.info("a shared variable of the model is not numeric; compiling with nutpie")
        return nutpie.compile_pymc_model(model)
    for value in shared_data.values():
        value.flags.writeable = False
    user_data = _user_data(list(shared_data.values()), n_dim=n_dim, n_expanded=n_expanded)
    logp_cfunc = _callback("logp", logp_pt, [shared_vars.index(v) for v in logp_pt.get_shared()], shared_data)
    expand_cfunc = _callback("expand", expand_pt, [shared_vars.index(v) for v in expand_pt.get_shared()], shared_data)
    dims, coords = npc._prepare_dims_and_coords(model, shape_info, reparameterized)
    return npc.CompiledPyMCModel(
        _n_dim=n_dim,
        dims=dims,
        _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info, strict=True)},
        compiled_logp_func=logp_cfunc,
        compiled_expand_func=expand_cfunc,
        initial_point_func=initial_point,
        shared_data=shared_data,
        shared_var_keys={var: f"shared{i}" for i, var in enumerate(shared_vars)},
        user_data=user_data,
        n_expanded=n_expanded,
        shape_info=shape_info,
        logp_func=logp_pt,
        expand_func=expand_pt,
        reparameterized_names=reparameterized,
    )


def _initial_point(model: Any) -> Callable[[Any], dict[str, np.ndarray]]:
    """nutpie's initial points for the numba backend (no frozen data, support points jittered for every free
    variable), as ``make_initial_point_fn`` makes them, compiled at the first call: a warm-started fit
    (:mod:`irtbayes.fitting.warmstart`) replaces them and never pays the compilation (measured on
    docs/performance.md#rewritten-graphs-kept-on-disk-2026-12-05-late-night)."""
    lock = threading.Lock()
    made: list[Callable[[Any], dict[str, np.ndarray]]] = []

    def initial_point(seed: Any = None) -> dict[str, np.ndarray]:
        with lock:  # nutpie starts its chains from several threads
            if not made:
                from pymc.initial_point import make_initial_point_fn

                made.append(
                    make_initial_point_fn(
                        model=model,
                        overrides=None,
                        default_strategy="support_point",
                        jitter_rvs=set(model.free_RVs),
                        return_transformed=True,
                    )
                )
            return made[0](seed)

    return initial_point


def _functions(model: Any, initial_point_fn: Any) -> tuple[Any, ...]:
    """The log-density with its gradient and the function that expands a draw, as nutpie's ``_make_functions``
    makes them, compiled for any data of the model's structure; and the sampler's layout for this model.

    nutpie compiles a flat point of a fixed length whose slices are constants, so every shape of data compiles
    anew. Here the point's length is free and each free variable's offset and shape are read from a shared
    variable (``_layout``), so two models of the same structure (the same variables and graph, other sizes and
    values of their shared data) compile to the same code, and the second loads it from the disk caches.

    The draws nutpie stores hold the model's own variables only: not the sampler's coordinates (raw normals
    ``*_z``, Cholesky factors ``*_chol``, transformed values ``*__``), which no part of irtbayes reads (left out,
    they are neither computed, written nor read at every check: at MMLU-Pro's size 24,000 stored values per draw
    instead of 36,000).

    Returns ``(n_dim, n_expanded, logp_fn, expand_fn, initial_point, (names, slices, shapes), reparameterized)``,
    nutpie's tuple with the stored variables only.
    """
    from math import prod

    import nutpie.compile_pymc as npc
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph import clone_replace, rewrite_graph

    from irtbayes.fitting.graphcache import compile_function
    from irtbayes.fitting.trace import sampler_variable

    shapes = npc._compute_shapes(model)
    free = list(model.free_RVs)
    free_names = [model.rvs_to_values[var].name for var in free]
    free_shapes = [tuple(int(n) for n in shapes[name]) for name in free_names]
    starts = np.cumsum([0] + [prod(shape) for shape in free_shapes]).tolist()
    n_dim = int(starts[-1])
    layout = pytensor.shared(
        np.array([*starts, *(n for shape in free_shapes for n in shape)], dtype="int64"), "_layout"
    )

    logp: Any = rewrite_graph(
        model.logp(),
        include=["canonicalize", "stabilize"] + ([] if model.check_bounds else ["local_remove_check_parameter"]),
    )
    value_vars = [model.rvs_to_values[var] for var in free]
    grads: Any = pt.grad(logp, value_vars)
    grad = pt.concatenate([pt.as_tensor(g, allow_xtensor_conversion=True).ravel() for g in grads])

    joined = pt.dvector("_unconstrained_point")
    values, at = [], len(starts)
    for k, (var, shape) in enumerate(zip(free, free_shapes, strict=True)):
        if not shape:  # a scalar: no slice, no reshape (each is a node of the compiled graph)
            piece = joined[layout[k]]
        elif len(shape) == 1:
            piece = joined[layout[k] : layout[k + 1]]
        else:
            sizes = pt.stack([layout[at + axis] for axis in range(len(shape))])
            piece = joined[layout[k] : layout[k + 1]].reshape(sizes, ndim=len(shape))
        at += len(shape)
        values.append(piece.astype(var.dtype))
    replacements = dict(zip(value_vars, values, strict=True))
    logp, grad = clone_replace([logp, grad], replacements)
    logp_fn, _ = compile_function((joined,), (logp, grad), model=model)

    remaining = [var for var in model.unobserved_value_vars if var.name not in free_names]
    names = free_names + [var.name for var in remaining]
    keep = [k for k, name in enumerate(names) if not sampler_variable(str(name))]
    outputs, kept_slices, kept_shapes, count = [], [], [], 0
    for k in keep:
        expression = values[k] if k < len(free) else remaining[k - len(free)]
        outputs.append(pt.as_tensor(expression, allow_xtensor_conversion=True).ravel())
        shape = tuple(int(n) for n in shapes[names[k]])
        kept_shapes.append(shape)
        kept_slices.append(slice(count, count + prod(shape)))
        count += prod(shape)
    (expanded,) = clone_replace([pt.concatenate(outputs)], replacements)
    expand_fn, _ = compile_function((joined,), (expanded,), model=model)

    initial_point = npc._rv_dict_to_flat_array_wrapper(initial_point_fn, names=free_names, shapes=free_shapes)
    reparameterized = [model.rvs_to_values[var].name for var in free if model.rvs_to_transforms.get(var) is not None]
    shape_info = ([names[k] for k in keep], kept_slices, kept_shapes)
    return n_dim, count, logp_fn, expand_fn, initial_point, shape_info, reparameterized


def _helpers_fit(npc: Any) -> bool:
    """Whether nutpie's private helpers are there with the arguments and fields :func:`compile_model` uses."""
    import dataclasses
    import inspect

    needed = (
        "_compute_shapes",
        "_rv_dict_to_flat_array_wrapper",
        "_prepare_dims_and_coords",
        "CompiledPyMCModel",
    )
    if not all(hasattr(npc, name) for name in (*needed, "address_as_void_pointer")):
        return False
    arguments = set(inspect.signature(npc._rv_dict_to_flat_array_wrapper).parameters)
    fields = {field.name for field in dataclasses.fields(npc.CompiledPyMCModel)}
    used_arguments = {"fn", "names", "shapes"}
    used_fields = {
        "compiled_logp_func",
        "compiled_expand_func",
        "initial_point_func",
        "shared_data",
        "shared_var_keys",
        "user_data",
        "n_expanded",
        "shape_info",
        "logp_func",
        "expand_func",
        "_n_dim",
        "_shapes",
        "_coords",
        "dims",
        "reparameterized_names",
    }
    return used_arguments <= arguments and used_fields <= fields


def _user_data(values: list[np.ndarray], *, n_dim: int, n_expanded: int) -> np.ndarray:
    """What the callbacks get as ``user_data``: the point's and the stored draw's lengths, then for each shared
    value its address and its shape."""
    fields: list[int] = [n_dim, n_expanded]
    for value in values:
        fields.append(value.ctypes.data)
        fields.extend(int(n) for n in value.shape)
    return np.array(fields, dtype=np.uint64)


def _callback(kind: str, function: Any, used: list[int], shared: dict[str, np.ndarray]) -> Any:
    """The numba C callback of ``kind`` ("logp" or "expand") around PyTensor's compiled ``function``, whose
    shared inputs are ``used`` (positions in ``shared``, in the function's order). Lengths and addresses come
    from ``user_data`` (:func:`_user_data`), so the source depends on the model's structure only."""
    import numba
    import nutpie.compile_pymc as npc
    import pytensor
    from pytensor.configdefaults import config
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, compile_numba_function_src

    inner = function.vm.jit_fn
    values = list(shared.values())
    offsets = np.cumsum([2] + [1 + v.ndim for v in values]).tolist()
    unpack, args = [], []
    for position in used:
        value, at = values[position], offsets[position]
        shape = "".join(f"int(u[{at + 1 + axis}]), " for axis in range(value.ndim))
        unpack.append(f"        s{position} = numba.carray(as_void_pointer(u[{at}]), ({shape}), np.{value.dtype.name})")
        args.append(f", s{position}")
    template = _LOGP_SOURCE if kind == "logp" else _EXPAND_SOURCE
    source = template.format(n_fields=offsets[-1], unpack="\n".join(unpack), args="".join(args))
    name = f"irtbayes_{kind}_callback"
    if kind == "logp":
        signature = numba.types.int64(
            numba.types.uint64,
            numba.types.CPointer(numba.types.double),
            numba.types.CPointer(numba.types.double),
            numba.types.CPointer(numba.types.double),
            numba.types.voidptr,
        )
    else:
        signature = numba.types.int64(
            numba.types.uint64,
            numba.types.uint64,
            numba.types.CPointer(numba.types.double),
            numba.types.CPointer(numba.types.double),
            numba.types.voidptr,
        )
    py_func = getattr(inner, "py_func", None)
    inner_key = CACHED_SRC_FUNCTIONS.get(py_func) if py_func is not None else None
    key = None
    if inner_key is not None and config.numba__cache:
        # the source holds the shapes' layout, the dimensions and the shared values' dtypes
        parts = [inner_key, source, numba.__version__, pytensor.__version__, str(CALLBACK_VERSION)]
        key = f"irtbayes_{kind}_" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    # numba's cache rebuilds the function's environment from the module named here: an importable one
    environment = {
        "__name__": __name__,
        "numba": numba,
        "np": np,
        "inner": inner,
        "as_void_pointer": npc.address_as_void_pointer,
    }
    python = compile_numba_function_src(source, name, global_env=environment, cache_key=key)
    with warnings.catch_warnings():
        # a graph with large constants cannot be cached (numba's "dynamic globals"): compiled in each process
        warnings.filterwarnings("ignore", message="Cannot cache compiled function", category=numba.NumbaWarning)
        cfunc = numba.cfunc(signature, cache=key is not None)(python)
    log.debug("%s callback: %s", kind, "loaded from the disk cache" if cfunc.cache_hits else "compiled")
    return cfunc
