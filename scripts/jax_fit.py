"""NUTS on JAX with the responses split over every device: one timed fit, or float32 against float64.

Fits the default 2PL with ``sampler="numpyro"`` (:mod:`irtbayes.fitting.jaxnuts`: vectorised chains, the response
matrix sharded over the devices JAX sees) and prints the devices, wall and sampling time, the convergence
checks and, with ``--precision both``, how far the float32 fit's difficulties are from the float64 fit's (in
posterior sds) and the ratio of times.

Usage:
    # CPU, two forced host devices (JAX fixes the count at import, so the script sets XLA_FLAGS first)
    python scripts/jax_fit.py --simulate 100x1000 --cpu-devices 2 --precision both
    # a GPU host (the jax extra with CUDA: pip install -e '.[jax]' 'jax[cuda12]'); all 29 NLU sets unsampled
    XLA_PYTHON_CLIENT_PREALLOCATE=false python scripts/jax_fit.py --data nlu_vania2021 --chains 4 \\
        --draws 500 --tune 500 --json out/jax_nlu.json
    # no copy of the NLU data: a simulated matrix of the same shape (90 x 82,756, 25 benchmarks)
    python scripts/jax_fit.py --simulate 90x82756

``--data`` takes a registered data set name or a path that ``irtbayes data summary`` reads (the NLU data are
external: ``scripts/convert_data.py`` writes them, and ``IRTBAYES_DATA_DIR`` points at them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings


def _load(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from irtbayes.data.simulate import simulate_responses

    if args.simulate:
        n, m = (int(x) for x in args.simulate.lower().split("x"))
        data, truth = simulate_responses(
            n, m, kind="2pl", n_benchmarks=min(25, max(1, m // 20)), n_domains=7, missing=0.1, seed=args.seed
        )
        return data, truth
    from irtbayes.data.io import load
    from irtbayes.data.registry import load_dataset, manifests

    return (load_dataset(args.data) if args.data in manifests() else load(args.data)), None


def _one(data, args: argparse.Namespace, precision: str) -> dict:  # type: ignore[no-untyped-def]
    from irtbayes.fitting.fit import fit
    from irtbayes.model.spec import ModelSpec

    start = time.perf_counter()
    result = fit(
        data,
        ModelSpec(layout="dense", precision=precision),
        sampler="numpyro",
        chains=args.chains,
        draws=args.draws,
        tune=args.tune,
        seed=args.seed,
        progress=args.progress,
        sampler_kwargs={"devices": args.devices},
    )
    wall = time.perf_counter() - start
    diag = result.diagnostics
    post = result.posterior["difficulty"]
    return {
        "precision": precision,
        "devices": result.sampler.get("devices"),
        "device_kind": result.sampler.get("device_kind"),
        "sharded_axis": result.sampler.get("sharded_axis"),
        "wall_s": round(wall, 1),
        "sampling_s": round(float(result.sampler["wall_time_s"]), 1),
        "max_rhat": round(float(diag.max_rhat), 4),
        "min_ess_bulk": round(float(diag.min_ess_bulk)),
        "min_ess_tail": round(float(diag.min_ess_tail)),
        "divergences": int(diag.divergences),
        "mean_steps": None if diag.mean_steps is None else round(float(diag.mean_steps), 1),
        "converged": bool(diag.ok),
        "problems": diag.problems[:3],
        "_mean": post.mean(("chain", "draw")).values,
        "_sd": post.std(("chain", "draw")).values,
        "_width": (post.quantile(0.95, ("chain", "draw")) - post.quantile(0.05, ("chain", "draw"))).values,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="a registered data set or a response file")
    source.add_argument("--simulate", metavar="SUBJECTSxITEMS", help="simulated 2PL data of this size")
    parser.add_argument("--precision", choices=("float64", "float32", "both"), default="float64")
    parser.add_argument("--devices", type=int, help="JAX devices to split the responses over (default: all)")
    parser.add_argument("--cpu-devices", type=int, help="force this many CPU host devices (sets XLA_FLAGS)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--progress", action="store_true", help="NumPyro's progress bar")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    if args.cpu_devices:
        if "jax" in sys.modules:
            raise SystemExit("--cpu-devices must be set before JAX is imported")
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.cpu_devices} " + os.environ.get(
            "XLA_FLAGS", ""
        )
    warnings.simplefilter("ignore")
    import numpy as np

    data, _ = _load(args)
    print(f"{data.n_subjects} subjects x {data.n_items} items, {data.n_responses} responses", flush=True)
    precisions = ("float64", "float32") if args.precision == "both" else (args.precision,)
    runs = [_one(data, args, p) for p in precisions]
    for run in runs:
        shown = {k: v for k, v in run.items() if not k.startswith("_")}
        print(json.dumps(shown), flush=True)
    out = {
        "data": args.data or f"simulated {args.simulate}",
        "runs": [{k: v for k, v in r.items() if k[0] != "_"} for r in runs],
    }
    if len(runs) == 2:
        f64, f32 = runs
        shift = np.abs(f32["_mean"] - f64["_mean"]) / f64["_sd"]
        out["float32_vs_float64"] = {
            "max_mean_shift_in_sds": round(float(shift.max()), 3),
            "median_mean_shift_in_sds": round(float(np.median(shift)), 3),
            "interval_width_ratio": round(float(np.median(f32["_width"] / f64["_width"])), 3),
            "time_ratio": round(f32["sampling_s"] / f64["sampling_s"], 2),
        }
        print(json.dumps(out["float32_vs_float64"]), flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
