"""NUTS on JAX (NumPyro) with the response matrix sharded over every device: ``sampler="numpyro"``.

The model is the PyMC model of :mod:`irtbayes.model.build` in its ``"dense"`` layout; PyTensor turns its
log-density into a JAX function. The subject x item response matrix and its mask of observed cells enter
that function as *arguments* (a closed-over array would be compiled in as one constant on one device): both
are split over a one-dimensional device mesh along their longer axis, padded with unobserved cells to a
multiple of the device count, while the parameters are replicated. XLA then partitions the likelihood,
the one part whose cost grows with the data, so that each device evaluates its own block of cells and the
sums meet in an all-reduce. The chains are vectorised: one program steps all of them at once.

- One host: every device JAX sees is used (``devices=N`` takes the first N). On a CPU, JAX shows one
  device unless ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` is set before JAX is imported,
  which is how the tests run this path with two devices.
- Several hosts: call ``jax.distributed.initialize()`` in each process (JAX's multi-process runtime; the
  coordinator address, process count and id come from its arguments or environment) before fitting; the
  mesh then spans the devices of every host, and each process places only its own blocks
  (``jax.make_array_from_callback``).
- Precision: float64 (``jax_enable_x64``) unless the spec asks for ``precision="float32"``, where the cells
  and each subject's row sum are computed in float32 and the rows' total in float64 (:mod:`irtbayes.model.likelihood`).

The draws are turned into the model's variables with the same PyTensor graph, in JAX, and returned as a
DataTree with the usual groups (``posterior``, ``sample_stats`` with ``diverging``, ``energy``,
``n_steps``, ``reached_max_treedepth``), so every later step reads them unchanged.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from irtbayes.core.errors import SpecError

if TYPE_CHECKING:
    import pymc as pm

__all__ = ["OBSERVED", "RESPONSES", "TRIALS", "device_mesh", "sample_numpyro"]

log = logging.getLogger("irtbayes.fitting.fit")

#: Names of the response matrix and the mask of observed cells in the ``"dense"`` likelihood graph; of data with
#: repeated trials, the successes and the trials of each cell (0 where missing), which take the mask's place.
RESPONSES = "responses"
OBSERVED = "observed"
TRIALS = "trials"
#: With ``devices=None``, one device per this many cells (at least one, at most all): below it the
#: all-reduce of every gradient costs more than the split saves (measured on docs/performance.md#numpyro-on-a-cpu).
CELLS_PER_DEVICE = 1_000_000
#: NumPyro's default maximum tree depth: trajectories of 2**10 - 1 leapfrog steps hit it.
MAX_TREE_DEPTH = 10


def _import_jax() -> tuple[Any, Any]:
    try:
        import jax
        import numpyro
    except ImportError as err:
        raise SpecError("sampler='numpyro' needs JAX and NumPyro: pip install 'irtbayes[jax]'") from err
    return jax, numpyro


def device_mesh(devices: int | None = None, *, cells: int | None = None) -> Any:
    """A one-dimensional mesh (axis ``"cells"``) over the first ``devices`` devices JAX sees.

    ``devices=None``: every device, or one per :data:`CELLS_PER_DEVICE` of ``cells`` when that is fewer.
    """
    jax, _ = _import_jax()
    from jax.sharding import Mesh

    available = jax.devices()
    if devices is None:
        n = len(available) if cells is None else max(1, min(len(available), cells // CELLS_PER_DEVICE))
    else:
        n = int(devices)
    if not 1 <= n <= len(available):
        raise SpecError(f"devices={devices}: JAX sees {len(available)} device(s): {available}")
    return Mesh(np.array(available[:n]), ("cells",))


def _response_constants(logp: Any) -> dict[str, Any]:
    """The named response matrix and mask in the graph of ``logp`` (the ``"dense"`` layout): shared variables, or
    constants in a graph whose shared values were made constants."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.variable import TensorConstant

    found = {
        v.name: v
        for v in ancestors([logp])
        if isinstance(v, TensorConstant | SharedVariable) and v.name in (RESPONSES, OBSERVED, TRIALS)
    }
    if RESPONSES not in found:
        raise SpecError("sampler='numpyro' needs the 'dense' likelihood layout (ModelSpec(layout='dense'))")
    return found


def _value(variable: Any) -> np.ndarray:
    """A constant's data or a shared variable's value."""
    return np.asarray(variable.get_value(borrow=True) if hasattr(variable, "get_value") else variable.data)


def _data_arguments(logp: Any, mesh: Any) -> tuple[Any, list[Any], list[Any], int]:
    """``logp`` with the response matrices as padded inputs, those inputs and their arrays sharded over ``mesh``.

    Returns ``(logp, inputs, arrays, axis)``: ``axis`` is the axis split over the mesh.
    """
    import jax
    import pytensor.tensor as pt
    from jax.sharding import NamedSharding, PartitionSpec
    from pytensor.graph.replace import clone_replace

    found = _response_constants(logp)
    shape = _value(found[RESPONSES]).shape
    axis = int(np.argmax(shape))
    n_dev = int(mesh.size)
    padded = list(shape)
    padded[axis] = -(-shape[axis] // n_dev) * n_dev
    spec = PartitionSpec("cells", None) if axis == 0 else PartitionSpec(None, "cells")
    sharding = NamedSharding(mesh, spec)
    replace, inputs, arrays = {}, [], []
    for name in (RESPONSES, OBSERVED, TRIALS):
        if name not in found:
            continue  # every cell observed: the mask is left out of the graph
        const = found[name]
        var = pt.tensor(name, dtype=const.dtype, shape=tuple(padded))
        replace[const] = var[: shape[0], : shape[1]]
        inputs.append(var)
        full = np.zeros(padded, dtype=const.dtype)  # padding: unobserved, sliced off inside the graph
        full[: shape[0], : shape[1]] = _value(const)
        # each process places only the blocks of its own devices (several hosts: jax.distributed)
        arrays.append(jax.make_array_from_callback(full.shape, sharding, full.__getitem__))
    (logp,) = clone_replace([logp], replace=replace)
    return logp, inputs, arrays, axis


def _initial_points(model: pm.Model, chains: int, seed: int, logp: Any) -> np.ndarray:
    """Jittered starting points (chains, n) on the unconstrained scale, each with a finite log-density."""
    from pymc.initial_point import make_initial_point_fn

    start = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs), return_transformed=True)
    names = [v.name for v in model.value_vars]
    rng = np.random.default_rng(seed)
    rows = []
    for chain in range(chains):
        for _ in range(10):
            point = start(int(rng.integers(2**31)))
            flat = np.concatenate([np.ravel(point[n]) for n in names]).astype("float64")
            if np.isfinite(logp(flat)):
                break
        else:
            raise SpecError(f"chain {chain}: no starting point with a finite log-density in 10 tries")
        rows.append(flat)
    return np.stack(rows)


def sample_numpyro(
    model: pm.Model,
    *,
    chains: int,
    draws: int,
    tune: int,
    seed: int,
    target_accept: float,
    progress: bool,
    devices: int | None = None,
    nuts_kwargs: dict[str, Any] | None = None,
) -> xr.DataTree:
    """NUTS (NumPyro) on ``model`` with vectorised chains and the responses sharded over ``devices``.

    ``model`` must use the ``"dense"`` likelihood layout. Returns a DataTree with ``posterior`` (the model's
    variables, transforms undone, Deterministics included) and ``sample_stats``; its attributes record the
    devices used (``devices``, ``device_kind``) and the axis split over them (``sharded_axis``).
    """
    jax, numpyro = _import_jax()
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS
    from pymc.sampling.jax import get_jaxified_graph

    jax.config.update("jax_enable_x64", True)
    logp = model.logp()
    mesh = device_mesh(devices, cells=int(_value(_response_constants(logp)[RESPONSES]).size))
    logp, inputs, arrays, axis = _data_arguments(logp, mesh)
    value_vars = model.value_vars
    density = get_jaxified_graph(inputs=[*value_vars, *inputs], outputs=[logp])
    point = model.initial_point()
    shapes = [np.shape(point[v.name]) for v in value_vars]
    sizes = [int(np.prod(shape)) for shape in shapes]
    cuts = np.cumsum(sizes)[:-1].tolist()

    def unravel(x: Any) -> list[Any]:
        return [part.reshape(shape) for part, shape in zip(jnp.split(x, cuts), shapes, strict=True)]

    def flat_logp(x: Any, *data: Any) -> Any:
        return density(*unravel(x), *data)[0]

    checked = jax.jit(flat_logp)
    init = _initial_points(model, chains, seed, lambda x: float(checked(jnp.asarray(x), *arrays)))
    n = int(sum(sizes))

    def numpyro_model(*data: Any) -> None:
        x = numpyro.sample("x", dist.ImproperUniform(dist.constraints.real_vector, (), (n,)))
        numpyro.factor("logp", flat_logp(x, *data))

    options = {"max_tree_depth": MAX_TREE_DEPTH, **(nuts_kwargs or {})}
    kernel = NUTS(numpyro_model, target_accept_prob=target_accept, **options)
    mcmc = MCMC(
        kernel,
        num_warmup=tune,
        num_samples=draws,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=progress and sys.stderr.isatty(),  # elsewhere one line before and one after
        jit_model_args=True,
    )
    log.info(
        "NumPyro NUTS: %d vectorised chains, responses split over %d %s device(s) along the %s axis",
        chains,
        mesh.size,
        mesh.devices.flat[0].platform,
        "subject" if axis == 0 else "item",
    )
    started = time.perf_counter()
    mcmc.run(
        jax.random.PRNGKey(seed),
        *arrays,
        init_params={"x": jnp.asarray(init if chains > 1 else init[0])},  # one chain: no chain axis
        extra_fields=("num_steps", "energy", "diverging", "accept_prob", "adapt_state.step_size", "potential_energy"),
    )
    jax.block_until_ready(mcmc.get_samples())  # JAX returns before the device has finished
    log.info("NumPyro NUTS: %d x %d draws (after %d) in %.1f s", chains, draws, tune, time.perf_counter() - started)
    attrs = {
        "inference_library": "numpyro",
        "devices": int(mesh.size),
        "device_kind": str(mesh.devices.flat[0].device_kind),
        "sharded_axis": "subject" if axis == 0 else "item",
        "max_tree_depth": int(options["max_tree_depth"]),
    }
    return _to_datatree(model, mcmc, unravel, attrs)


def _to_datatree(model: pm.Model, mcmc: Any, unravel: Any, attrs: dict[str, Any]) -> xr.DataTree:
    """The run's draws as the model's variables (transforms undone, Deterministics included) and its statistics."""
    import jax
    from arviz_base import from_dict
    from pymc.backends.arviz import coords_and_dims_for_inferencedata
    from pymc.sampling.jax import get_jaxified_graph
    from pymc.util import get_default_varnames

    flat = mcmc.get_samples(group_by_chain=True)["x"]  # (chain, draw, n)
    wanted = list(get_default_varnames(model.unobserved_value_vars, include_transformed=False))
    to_model = get_jaxified_graph(inputs=model.value_vars, outputs=wanted)
    per_draw = jax.jit(jax.vmap(lambda x: to_model(*unravel(x))))
    per_chain = [per_draw(flat[c]) for c in range(flat.shape[0])]
    posterior = {v.name: np.stack([np.asarray(out[k]) for out in per_chain]) for k, v in enumerate(wanted)}
    fields = mcmc.get_extra_fields(group_by_chain=True)
    steps = np.asarray(fields["num_steps"])
    stats = {
        "diverging": np.asarray(fields["diverging"], dtype=bool),
        "energy": np.asarray(fields["energy"]),
        "n_steps": steps,
        "tree_depth": np.floor(np.log2(np.maximum(steps, 1))).astype(int) + 1,
        "reached_max_treedepth": steps >= 2 ** attrs["max_tree_depth"] - 1,
        "acceptance_rate": np.asarray(fields["accept_prob"]),
        "step_size": np.asarray(fields["adapt_state.step_size"]),
        "lp": -np.asarray(fields["potential_energy"]),
    }
    coords, dims = coords_and_dims_for_inferencedata(model)
    return from_dict(
        {"posterior": posterior, "sample_stats": stats},
        coords=coords,
        dims=dims,
        sample_dims=["chain", "draw"],
        attrs={"posterior": attrs, "sample_stats": attrs},
    )
