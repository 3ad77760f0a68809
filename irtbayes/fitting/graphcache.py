"""PyTensor's rewritten graphs of the model's functions, kept on disk so that a later process skips the rewriting.

Compiling a PyTensor function has two stages: rewriting the graph (canonicalising, fusing elementwise ops,
making ops in place; pure Python) and linking the
rewritten graph to numba, whose compiled code numba's and PyTensor's disk caches already keep. So a process that
loads every callback from those caches (:mod:`irtbayes.fitting.compiled`) still spent most of its compile time
rewriting graphs that an earlier process had rewritten to the same result.

:func:`compile_function` compiles ``inputs -> outputs`` as ``pymc.pytensorf.compile(..., mode="NUMBA")`` does and
writes the rewritten graph to ``<PyTensor's compiledir>/irtbayes_graphs/<key>.pkl``; a later call with the same key
reads it and links it without rewriting. The key (:func:`graph_key`) is a SHA-256 of

- the graph as given: every apply node in topological order, each op by its class and its ``__props__`` (the
  values PyTensor compares ops by, read recursively: the scalar ops inside ``Elemwise``, which compare by their
  class and output-type rule, types, dtypes, slices), each
  constant by its type and the bytes of its value, each shared variable by its type and its place (the data of
  shared variables is not part of the key: models of the same structure share the rewritten graph), each input
  by its type and position;
- every PyTensor configuration value (fast-math, ``floatX``, optimiser flags included; not its C backend's BLAS
  flags), the PyMC bounds check,
  and the versions of Python, NumPy, PyTensor, PyMC, numba and this module (:data:`GRAPH_VERSION`).

A graph holding anything the key cannot read faithfully (an op without ``__props__``, whose instances compare by
identity; a closure; a random generator) is compiled as usual and not kept. The stored graph refers to shared
variables by their place in the given graph, and the loaded one is wired to the caller's own, so it reads the
caller's data. Files are written atomically (a temporary file renamed into place); a file that cannot be read is
compiled again and replaced. Like numba's index files and PyTensor's module keys in the same folder, the files
are pickles this module wrote; nothing is read from anywhere else.

A graph rewritten here is linked from its stored form too, as every later process links it. A graph linked straight
after rewriting orders its nodes otherwise (the order its rewrites left), which is other numba code: numba would
compile it once more in the second process, and the callbacks' keys (:mod:`irtbayes.fitting.compiled`) would
differ. So a first run and every cached run run the same code, and draw the same chains
(``test_a_first_run_and_a_cached_run_compute_the_same_bits``).

Without rewriting, a cached compile takes about half as long (measured on
docs/performance.md#rewritten-graphs-kept-on-disk-2026-12-05-late-night).
"""

from __future__ import annotations

import hashlib
import io
import logging
import pickle
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from irtbayes.core.files import atomic_write_bytes

__all__ = ["GRAPH_VERSION", "compile_function", "graph_folder", "graph_key"]

log = logging.getLogger(__name__)

#: Part of every key: raised whenever what is stored, or how a graph is keyed, changes.
GRAPH_VERSION = 1


class _Unkeyable(Exception):
    """The graph holds something :func:`graph_key` cannot read faithfully."""


def graph_folder() -> Path:
    """Where the rewritten graphs are kept: a folder in PyTensor's compile folder (``PYTENSOR_FLAGS``'s
    ``base_compiledir`` moves both)."""
    from pytensor.configdefaults import config

    return Path(config.compiledir) / "irtbayes_graphs"


def _canonical(value: Any) -> str:
    """Text that two values share only when PyTensor would treat them as the same op property."""
    from pytensor.graph.basic import Variable
    from pytensor.scalar import basic as scalar

    _SCALAR_EQ = (scalar.ScalarOp.__eq__, scalar.LogicalComparison.__eq__, scalar.FixedLogicalComparison.__eq__)

    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise _Unkeyable("an object array")
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array:{value.dtype.str}:{value.shape}:{digest}"
    if isinstance(value, np.generic):
        return f"{value.dtype.str}:{value!r}"
    if isinstance(value, np.dtype):
        return f"dtype:{value.str}"
    if isinstance(value, tuple | list):
        return f"{type(value).__name__}(" + ",".join(_canonical(v) for v in value) + ")"
    if isinstance(value, Mapping):
        items = sorted((_canonical(k), _canonical(v)) for k, v in value.items())
        return "map(" + ",".join(f"{k}={v}" for k, v in items) + ")"
    if isinstance(value, slice):
        return f"slice({_canonical(value.start)},{_canonical(value.stop)},{_canonical(value.step)})"
    if isinstance(value, Variable):
        raise _Unkeyable("a variable among an op's properties")
    if isinstance(value, scalar.ScalarOp) and type(value).__eq__ in _SCALAR_EQ:
        # scalar ops compare by their class and their output types' rule (ScalarOp.__eq__), comparisons also by
        # their ``bool`` (LogicalComparison.__eq__, FixedLogicalComparison.__eq__)
        cls = type(value)
        rule = _canonical(getattr(value, "output_types_preference", None))
        return f"{cls.__module__}.{cls.__qualname__}[{rule},{_canonical(getattr(value, 'bool', False))}]"
    if isinstance(value, type | types.FunctionType | types.BuiltinFunctionType):
        name = f"{value.__module__}.{value.__qualname__}"
        if "<" in name:  # a lambda or a closure: its state is not in its name
            raise _Unkeyable(f"the function {name}")
        return f"fn:{name}"
    props = getattr(type(value), "__props__", None)
    if props is not None:
        cls = type(value)
        return (
            f"{cls.__module__}.{cls.__qualname__}{{"
            + ",".join(f"{p}={_canonical(getattr(value, p))}" for p in props)
            + "}"
        )
    raise _Unkeyable(f"a {type(value).__module__}.{type(value).__qualname__} without __props__")


#: PyTensor settings left out of the key: the BLAS flags of its C backend (the numba backend links no C BLAS), which
#: PyTensor probes for at first use, which a key that read them would pay in every process.
_NOT_KEYED = frozenset({"blas__ldflags"})


def _environment(check_bounds: bool) -> str:
    import numba
    import pymc
    import pytensor
    from pytensor.configdefaults import config

    names = sorted(set(config._config_var_dict) - _NOT_KEYED)
    settings = "\n".join(f"{name}={getattr(config, name, None)!r}" for name in names)
    versions = (sys.version, np.__version__, pytensor.__version__, pymc.__version__, numba.__version__)
    return "\n".join([f"graph {GRAPH_VERSION}", *versions, f"check_bounds={check_bounds}", settings])


def graph_key(inputs: Sequence[Any], outputs: Sequence[Any], *, check_bounds: bool = True) -> tuple[str, list[Any]]:
    """The key of the function ``inputs -> outputs`` (see the module's docstring), and its shared variables in the
    order the key met them. Raises ``_Unkeyable`` for a graph it cannot key."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort
    from pytensor.tensor.type import TensorType

    digest = hashlib.sha256(_environment(check_bounds).encode())
    ids: dict[Any, int] = {}
    shared: list[Any] = []
    positions = {var: k for k, var in enumerate(inputs)}

    def name(var: Any) -> int:
        if var in ids:
            return ids[var]
        if var in positions:
            token = f"input {positions[var]} {_canonical(var.type)}"
        elif isinstance(var, SharedVariable):
            if not isinstance(var.type, TensorType):  # random generators and other states
                raise _Unkeyable(f"the shared {var.type}")
            token = f"shared {len(shared)} {_canonical(var.type)}"
            shared.append(var)
        elif isinstance(var, Constant):
            token = f"constant {_canonical(var.type)} {_canonical(var.data)}"
        elif var.owner is None:
            raise _Unkeyable(f"the free input {var}")
        else:
            raise _Unkeyable(f"{var} before its node")
        ids[var] = len(ids)
        digest.update(f"{token}\n".encode())
        return ids[var]

    for node in io_toposort(list(inputs), list(outputs)):
        args = [name(var) for var in node.inputs]
        digest.update(f"apply {_canonical(node.op)} {args}\n".encode())
        for out in node.outputs:
            ids[out] = len(ids)
            digest.update(f"out {_canonical(out.type)}\n".encode())
    digest.update(f"outputs {[name(var) for var in outputs]}\n".encode())
    return digest.hexdigest(), shared


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, places: dict[int, int]) -> None:
        from pytensor.compile.sharedvalue import SharedVariable

        super().__init__(file, protocol=5)
        self.places = places
        self.shared_type = SharedVariable

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, self.shared_type):
            if id(obj) not in self.places:
                raise _Unkeyable(f"the rewritten graph holds the shared {obj.name!r} the given one lacks")
            return ("shared", self.places[id(obj)])
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, shared: list[Any]) -> None:
        super().__init__(file)
        self.shared = shared

    def persistent_load(self, pid: Any) -> Any:
        kind, place = pid
        if kind != "shared" or not 0 <= place < len(self.shared):
            raise pickle.UnpicklingError(f"an unknown reference {pid!r}")
        return self.shared[place]


def _mode() -> Any:
    from pytensor.compile.mode import get_mode

    return get_mode("NUMBA")


def compile_function(inputs: Sequence[Any], outputs: Sequence[Any], *, model: Any) -> tuple[Any, str]:
    """``pymc.pytensorf.compile(inputs, outputs, mode="NUMBA")`` in ``model``'s context, its rewritten graph read
    from or written to :func:`graph_folder`. Returns the function and what happened: ``"loaded"`` (linked from a
    stored graph), ``"stored"`` (rewritten, and the graph kept) or ``"uncached"`` (a graph :func:`graph_key`
    cannot key, or a folder that cannot be written)."""
    from pymc.pytensorf import compile as compile_pymc

    check_bounds = bool(getattr(model, "check_bounds", True))
    try:
        key, shared = graph_key(inputs, outputs, check_bounds=check_bounds)
    except _Unkeyable as why:
        log.debug("a graph irtbayes cannot key (%s): rewritten in every process", why)
        with model:
            return compile_pymc(list(inputs), list(outputs), mode="NUMBA"), "uncached"
    path = graph_folder() / f"{key}.pkl"
    if path.is_file():
        try:
            function = _link(_Unpickler(io.BytesIO(path.read_bytes()), shared).load())
        except Exception as why:  # a stale or damaged file: rewritten and written again
            log.info("the stored graph %s could not be read (%s); rewriting it", path, why)
        else:
            log.debug("graph %s loaded", key[:12])
            return function, "loaded"
    # rewritten here and linked from the stored form, as every later process links it: the same numba code (a
    # graph linked straight after rewriting orders its nodes otherwise, and numba would compile it once more)
    buffer = io.BytesIO()
    try:
        stored = _stored(_rewritten(inputs, outputs, check_bounds=check_bounds))
        _Pickler(buffer, {id(var): k for k, var in enumerate(shared)}).dump(stored)
    except (_Unkeyable, pickle.PicklingError, TypeError, AttributeError) as why:
        log.debug("graph %s cannot be stored (%s)", key[:12], why)
        with model:
            return compile_pymc(list(inputs), list(outputs), mode="NUMBA"), "uncached"
    function = _link(_Unpickler(io.BytesIO(buffer.getvalue()), shared).load())
    try:
        atomic_write_bytes(path, buffer.getvalue())
    except OSError as why:
        log.debug("graph %s not stored (%s)", key[:12], why)
        return function, "uncached"
    log.debug("graph %s rewritten and stored", key[:12])
    return function, "stored"


def _rewritten(inputs: Sequence[Any], outputs: Sequence[Any], *, check_bounds: bool) -> Any:
    """The rewritten graph of ``inputs -> outputs`` as ``pymc.pytensorf.compile(..., mode="NUMBA")`` rewrites it (the
    numba mode's rewrites with PyMC's two: random generators in place, and parameter checks as ``-inf`` or, with
    ``check_bounds`` off, removed), not linked: PyTensor's ``FunctionMaker`` before ``create``."""
    import pytensor
    from pytensor.compile.maker import FunctionMaker
    from pytensor.compile.mode import Mode

    class Rewriter(FunctionMaker):
        def create(self, input_storage: Any = None, storage_map: Any = None) -> Any:
            return self

    class RewriteOnly(Mode):
        @property
        def function_maker(self) -> type[FunctionMaker]:
            return Rewriter

    check = "local_check_parameter_to_ninf_switch" if check_bounds else "local_remove_check_parameter"
    numba = _mode()
    mode = RewriteOnly(linker=numba.linker, optimizer=numba.provided_optimizer.including("random_make_inplace", check))
    return pytensor.function(list(inputs), list(outputs), mode=mode)


#: What :func:`_stored` keeps of each input of a compiled function.
_INPUT_FLAGS = ("name", "mutable", "strict", "allow_downcast", "implicit", "borrow", "shared")


def _stored(maker: Any) -> dict[str, Any]:
    """What a rewritten graph (a ``FunctionMaker``) is linked from: its inputs (shared variables among them, in the
    function's order) and outputs, and the inputs' and outputs' flags. Updates are not kept (a function with updates
    is not stored)."""
    if maker.fgraph.update_mapping or any(i.update is not None for i in maker.inputs):
        raise _Unkeyable("a function with updates")
    return {
        "inputs": list(maker.fgraph.inputs),
        "outputs": list(maker.fgraph.outputs),
        "flags": [{flag: getattr(i, flag) for flag in _INPUT_FLAGS} for i in maker.inputs],
        "borrow": [bool(o.borrow) for o in maker.outputs],
    }


def _link(stored: dict[str, Any]) -> Any:
    """The function of a graph :func:`_stored` kept, linked to numba without rewriting, as PyTensor's
    ``Function.copy`` links a copy: the same inputs in the same order, so the same numba code (from numba's cache)."""
    from pytensor.compile.io import In, SymbolicOutput
    from pytensor.compile.maker import FunctionMaker
    from pytensor.graph.fg import FunctionGraph

    fgraph = FunctionGraph(stored["inputs"], stored["outputs"], clone=False)
    inputs = []
    for var, flags in zip(stored["inputs"], stored["flags"], strict=True):
        value = var.container if flags["shared"] else None
        inputs.append(In(var, value=value, **flags))
    outputs = [
        SymbolicOutput(var, borrow=borrow) for var, borrow in zip(stored["outputs"], stored["borrow"], strict=True)
    ]
    maker = FunctionMaker(
        inputs=inputs,
        outputs=outputs,
        fgraph=fgraph,
        mode=_mode(),  # its linker only: no_fgraph_prep skips its rewrites
        accept_inplace=True,
        no_fgraph_prep=True,
        on_unused_input="ignore",
    )
    return maker.create([i.value for i in inputs])
