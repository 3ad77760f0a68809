"""Benchmark: the default irtbayes 2PL fit against a straightforward PyMC 2PL, on simulated data.

Data: simulated 2PL responses, 10% of cells missing, items in 25 benchmarks across 7 domains.
Straightforward model: long-format indexing, abilities N(0, 1), non-centred difficulties
``b = mu + sigma * z``, log-normal discriminations, ``pm.Bernoulli(logit_p=...)``, sampled with the same
sampler (nutpie) and settings. Each fit runs in its own subprocess, so that peak memory (max RSS) is its own.

Prints, per size and model: wall time (compile + sampling), sampling time, min bulk ESS over all
parameters and over the abilities, the difficulties and the discriminations, ESS per second (all
parameters), max r-hat, divergences, mean leapfrog steps, peak memory, the settings and the parameter with the
least ESS; then the ratios default / straightforward.

Usage:
    python scripts/benchmark_fit.py                   # 100x1000 and 400x5000, 4 chains x 1000 draws
    python scripts/benchmark_fit.py --quick           # 100x1000 only, 2 chains x 300 draws (a few minutes)
    python scripts/benchmark_fit.py --sizes 100x1000 --chains 4 --draws 1000 --tune 1000
    python scripts/benchmark_fit.py --sizes 400x5000 --models default --draws auto --tune auto
                                                      # the default fit with irtbayes' own draws and tune

``--draws auto`` and ``--tune auto`` let :func:`irtbayes.fit.fit` choose (1000 draws, or 1250 for models of
more than 5,000 free parameters; tune 500 with nutpie); the straightforward model's numbers are resolved by
the same rule from its own count of free parameters.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings


def _straightforward_model(data):  # type: ignore[no-untyped-def]
    import numpy as np
    import pymc as pm

    coords = {"subject": list(data.subject_ids), "item": list(data.item_ids)}
    s, i, y = data.subject_codes, data.item_codes, data.values.astype("int64")
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("theta", 0.0, 1.0, dims="subject")
        mu = pm.Normal("difficulty_mu", 0.0, 2.0)
        sigma = pm.HalfNormal("difficulty_sd", 2.0)
        z = pm.Normal("difficulty_z", 0.0, 1.0, dims="item")
        b = pm.Deterministic("difficulty", mu + sigma * z, dims="item")
        a = pm.LogNormal("discrimination", 0.0, 0.5, dims="item")
        pm.Bernoulli("y", logit_p=a[i] * (theta[s] - b[i]), observed=np.asarray(y))
    return model


def _worker(config: dict) -> dict:
    """Run one fit and return its numbers (called in a subprocess)."""
    import numpy as np
    import nutpie

    from irtbayes.convergence import ess_bulk
    from irtbayes.diagnostics import check_convergence
    from irtbayes.fit import LARGE_MODEL, LARGE_MODEL_DRAWS, fit
    from irtbayes.simulate import simulate_responses

    warnings.simplefilter("ignore")
    n_subjects, n_items = config["size"]
    data, _ = simulate_responses(
        n_subjects, n_items, kind="2pl", n_benchmarks=25, n_domains=7, missing=0.1, seed=config["seed"]
    )
    chains, draws, tune = config["chains"], config["draws"], config["tune"]
    start = time.perf_counter()
    if config["model"] == "default":
        result = fit(data, chains=chains, draws=draws, tune=tune, seed=config["seed"], progress=False)
        wall = time.perf_counter() - start
        sampling = result.sampler["wall_time_s"]
        draws, tune = result.sampler["draws"], result.sampler["tune"]
        diag = result.diagnostics
        post = result.posterior
        groups = {name: post[name] for name in ("ability", "difficulty", "discrimination")}
    else:
        model = _straightforward_model(data)
        if draws is None or tune is None:
            n_free = sum(v.size for v in model.initial_point().values())
            draws = draws or (LARGE_MODEL_DRAWS if n_free > LARGE_MODEL else 1000)
            tune = 500 if tune is None else tune
        compiled = nutpie.compile_pymc_model(model)
        t0 = time.perf_counter()
        tree = nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=min(chains, 2),
            seed=config["seed"],
            progress_bar=False,
            save_warmup=False,
        )
        sampling = time.perf_counter() - t0
        wall = time.perf_counter() - start
        post = tree["posterior"].to_dataset()
        diag = check_convergence(tree)  # raw *_z variables are left out, as for the default model
        groups = {"ability": post["theta"], "difficulty": post["difficulty"], "discrimination": post["discrimination"]}
    group_ess = {
        name: float(np.nanmin(ess_bulk(da.transpose("chain", "draw", ...).to_numpy()))) for name, da in groups.items()
    }
    return {
        "model": config["model"],
        "size": f"{n_subjects}x{n_items}",
        "responses": data.n_responses,
        "chains": chains,
        "draws": draws,
        "tune": tune,
        "wall_s": wall,
        "sampling_s": sampling,
        "min_ess_bulk": diag.min_ess_bulk,
        "worst": min(diag.variables, key=lambda v: v.min_ess_bulk).worst_ess_bulk,
        "min_ess_core": min(group_ess["ability"], group_ess["difficulty"]),
        "min_ess_ability": group_ess["ability"],
        "min_ess_difficulty": group_ess["difficulty"],
        "min_ess_discrimination": group_ess["discrimination"],
        "max_rhat": diag.max_rhat,
        "divergences": diag.divergences,
        "mean_steps": diag.mean_steps,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _run(config: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(config)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark worker failed for {config}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _count_or_auto(text: str) -> int | None:
    if text == "auto":
        return None
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100x1000,400x5000", help="comma-separated SUBJECTSxITEMS")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=_count_or_auto, default=1000, help="draws per chain, or 'auto'")
    parser.add_argument("--tune", type=_count_or_auto, default=1000, help="warm-up draws per chain, or 'auto'")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--models", default="default,straightforward")
    parser.add_argument("--quick", action="store_true", help="100x1000 only, 2 chains x 300 draws, tune 300")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(json.loads(args.worker))))
        return 0
    if args.quick:
        args.sizes, args.chains, args.draws, args.tune = "100x1000", 2, 300, 300
    sizes = [tuple(int(x) for x in s.lower().split("x")) for s in args.sizes.split(",") if s]
    models = [m for m in args.models.split(",") if m]
    draws, tune = ("auto" if n is None else n for n in (args.draws, args.tune))
    print(f"chains {args.chains} x draws {draws} (tune {tune}), seed {args.seed}", flush=True)
    header = (
        f"{'size':>9} {'model':>15} {'wall s':>8} {'sample s':>8} {'minESS':>7} {'ability':>7} {'diffic.':>7} "
        f"{'discr.':>7} {'ESS/s':>7} {'max rhat':>8} {'div':>4} {'steps':>6} {'peak MB':>8} "
        f"{'chains x draws+tune':>19}  least ESS"
    )
    print(header)
    for size in sizes:
        rows = {}
        for model in models:
            config = {
                "size": size,
                "model": model,
                "chains": args.chains,
                "draws": args.draws,
                "tune": args.tune,
                "seed": args.seed,
            }
            print(
                f"[{time.strftime('%H:%M:%S')}] fitting {size[0]}x{size[1]} with the {model} model ...",
                file=sys.stderr,
                flush=True,
            )
            r = _run(config)
            r["ess_per_s"] = r["min_ess_bulk"] / r["wall_s"]
            r["core_ess_per_s"] = r["min_ess_core"] / r["wall_s"]
            rows[model] = r
            print(
                f"{r['size']:>9} {model:>15} {r['wall_s']:8.1f} {r['sampling_s']:8.1f} {r['min_ess_bulk']:7.0f} "
                f"{r['min_ess_ability']:7.0f} {r['min_ess_difficulty']:7.0f} {r['min_ess_discrimination']:7.0f} "
                f"{r['ess_per_s']:7.2f} {r['max_rhat']:8.3f} {r['divergences']:4d} "
                f"{r['mean_steps'] or float('nan'):6.1f} {r['peak_mb']:8.0f} "
                f"{str(r['chains']) + ' x ' + str(r['draws']) + '+' + str(r['tune']):>19}  {r['worst']}",
                flush=True,
            )
        if {"default", "straightforward"} <= rows.keys():
            d, s = rows["default"], rows["straightforward"]
            print(
                f"{'':>9} {'ratio':>15} wall {s['wall_s'] / d['wall_s']:.1f}x faster; ESS/s (all parameters) "
                f"{d['ess_per_s'] / s['ess_per_s']:.1f}x; ESS/s (abilities, difficulties) "
                f"{d['core_ess_per_s'] / s['core_ess_per_s']:.1f}x",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
