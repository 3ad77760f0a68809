"""Benchmark: the default irtbayes 2PL fit against a straightforward PyMC 2PL, on simulated data.

Data: simulated 2PL responses, 10% of cells missing, items in 25 benchmarks across 7 domains.
Straightforward model: long-format indexing, abilities N(0, 1), non-centred difficulties
``b = mu + sigma * z``, log-normal discriminations, ``pm.Bernoulli(logit_p=...)``, sampled with the same
sampler (nutpie) and settings. Each fit runs in its own subprocess, so that peak memory (max RSS) is its own.

Prints, per size and model: wall time (compile + sampling), sampling time, min bulk ESS over all
parameters and over the abilities, the difficulties and the discriminations, ESS per second (all
parameters), max r-hat, divergences, mean leapfrog steps, peak memory, the settings, the parameter with the
least ESS, whether the fit passed its convergence checks and how long compiling took; then the ratios default /
straightforward.

Recovery, per fit, against the simulated truth: RMSE of difficulties and abilities (posterior means, or
py-irt's point estimates) on the raw scale and after mean/sigma linking on the abilities (a fit's scale is
its own: the default standardises the evaluated subjects, py-irt's abilities have an N(0, 1) prior), and
the Spearman correlation of difficulties.

``--models default,cached``: the default fit runs first with empty compile caches (numba's and PyTensor's, in a
folder of its own, so it pays every compilation as a first run on a new machine does), then ``cached`` runs the
same fit again in a new process with those caches, as a second ``irtbayes fit`` of the same model shape would;
the ratio cached / default is printed, and cached / py-irt beside default / py-irt. Each model's process wall
time (interpreter start, imports, data and fit) is printed too. ``--models ...,double`` (after ``default``)
fits the same model with the likelihood's cells in float64 (``ModelSpec(precision="float64")``; the default
computes them in float32, :mod:`irtbayes.model.likelihood`), and prints the sampling time per gradient of each
against it and how far the posterior means of the difficulties lie apart, in Monte Carlo standard errors (the
same for ``default`` against ``cached``, two runs of one model).

``--models ...,reshaped`` (after ``default``) fits the same design a tenth smaller each way (90 x 900 for 100 x
1,000: another shape of the same model structure) in a new process with the caches the default's first run left,
and prints its compile time against the first run's and the cached run's: a model of another shape loads the
compiled code of its structure (``irtbayes.fitting.compiled``).

``--models ...,logsd`` (after ``default``) fits the same model with the sds of the non-centred benchmark and domain
levels sampled as their logs (``ModelSpec(group_sd="log")``; the default samples them as signed scales,
:mod:`irtbayes.model.build`), and prints the draws and the sampling time (compiling left out) of each against it and
how far the posterior means of the difficulties lie apart, in Monte Carlo standard errors.

``--models approx`` fits irtbayes' approximate tier (``sampler="approx"``; time and recovery only, as it has no
MCMC diagnostics). ``--models pyirt`` fits py-irt's 2PL (Pyro SVI, point estimates; 2,000 epochs, its defaults) to the same
data. py-irt 0.7.1 needs Python < 3.12, so it runs as a subprocess in its own environment:
``--pyirt-python PATH`` names its interpreter, and ``--make-pyirt-venv`` creates ``.venv-pyirt`` with a
Python 3.11 (``python3.11``, or pyenv's) and ``pip install py-irt==0.7.1`` first.

Usage:
    python scripts/benchmark_fit.py                   # 100x1000 and 400x5000, 4 chains x 1000 draws
    python scripts/benchmark_fit.py --sizes 100x1000 --models default,cached,approx,pyirt --draws auto \
        --tune auto --make-pyirt-venv                 # first and cached runs, the approximate tier and py-irt
    python scripts/benchmark_fit.py --quick           # 100x1000 only, 2 chains x 300 draws (a few minutes)
    python scripts/benchmark_fit.py --sizes 100x1000 --chains 4 --draws 1000 --tune 1000
    python scripts/benchmark_fit.py --sizes 100x1000 --models default,logsd --draws auto --tune auto
                                                      # signed scales against log sds: draws, time, agreement
    python scripts/benchmark_fit.py --sizes 400x5000 --models default --draws auto --tune auto
                                                      # the default fit with irtbayes' own draws and tune

``--draws auto`` and ``--tune auto`` let :func:`irtbayes.fitting.fit.fit` choose (1000 draws, or 1250 for models of
more than 5,000 free parameters; tune 200 with nutpie's warm start, the default for the 1PL and 2PL, else 500); the straightforward model's numbers are resolved by
the same rule from its own count of free parameters.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

PYIRT_VENV = Path(__file__).resolve().parent.parent / ".venv-pyirt"
#: Run by py-irt's interpreter: train its 2PL on a JSON Lines file and write the estimates as JSON.
PYIRT_DRIVER = """
import json, sys, time
from py_irt.config import IrtConfig
from py_irt.dataset import Dataset
from py_irt.training import IrtModelTrainer
path, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
dataset = Dataset.from_jsonlines(path)
trainer = IrtModelTrainer(data_path=path, config=IrtConfig(model_type="2pl", seed=seed), dataset=dataset, verbose=False)
trainer.train(device="cpu")
p = trainer.best_params
items = [p["item_ids"][i] for i in range(len(p["diff"]))]
subjects = [p["subject_ids"][i] for i in range(len(p["ability"]))]
json.dump({"seconds": time.perf_counter() - start, "item": items, "difficulty": p["diff"],
           "discrimination": p["disc"], "subject": subjects, "ability": p["ability"]}, open(out, "w"))
"""


def _recovery(truth, difficulty, ability) -> dict:  # type: ignore[no-untyped-def]
    """RMSE of difficulties and abilities, raw and after mean/sigma linking on the abilities; Spearman of b."""
    import numpy as np
    from scipy.stats import spearmanr

    b_true = truth["difficulty"].sel(item=difficulty.index.to_numpy()).values
    t_true = truth["ability"].sel(subject=ability.index.to_numpy()).values
    b, t = difficulty.to_numpy(dtype=float), ability.to_numpy(dtype=float)
    scale = t_true.std() / t.std()
    shift = t_true.mean() - scale * t.mean()
    rmse = lambda x, y: float(np.sqrt(np.mean((x - y) ** 2)))  # noqa: E731
    return {
        "rmse_difficulty": rmse(b, b_true),
        "rmse_ability": rmse(t, t_true),
        "rmse_difficulty_linked": rmse(scale * b + shift, b_true),
        "rmse_ability_linked": rmse(scale * t + shift, t_true),
        "spearman_difficulty": float(spearmanr(b, b_true).statistic),
    }


def _pyirt_python(args: argparse.Namespace) -> str:
    """py-irt's interpreter: ``--pyirt-python``, or ``.venv-pyirt`` (created with ``--make-pyirt-venv``)."""
    if args.pyirt_python:
        return args.pyirt_python
    python = PYIRT_VENV / "bin" / "python"
    if python.exists():
        return str(python)
    if not args.make_pyirt_venv:
        raise SystemExit(f"py-irt: no {python}; pass --make-pyirt-venv to create it, or --pyirt-python PATH")
    candidates = [shutil.which("python3.11"), str(Path.home() / ".pyenv/versions/3.11.7/bin/python3.11")]
    candidates += [str(p) for p in sorted((Path.home() / ".pyenv/versions").glob("3.1[01].*/bin/python3"))]
    base = next((c for c in candidates if c and Path(c).exists()), None)
    if base is None:
        raise SystemExit("py-irt 0.7.1 needs Python < 3.12 and none was found (python3.11 or pyenv's 3.10/3.11)")
    print(f"creating {PYIRT_VENV} with {base} and installing py-irt 0.7.1 ...", file=sys.stderr, flush=True)
    subprocess.run([base, "-m", "venv", str(PYIRT_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "torch==2.13.0"], check=False)  # a CPU build where one lies on disk; else pip's choice
    subprocess.run([*pip, "py-irt==0.7.1"], check=True)
    return str(python)


def _pyirt(data, truth, config: dict) -> dict:  # type: ignore[no-untyped-def]
    """Fit py-irt's 2PL in its own interpreter; its time and recovery."""
    import pandas as pd

    from irtbayes.data.io.pyirt import write_pyirt

    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "responses.jsonl", Path(tmp) / "estimates.json"
        write_pyirt(data, path)
        start = time.perf_counter()
        proc = subprocess.run(
            [config["pyirt_python"], "-c", PYIRT_DRIVER, str(path), str(out), str(config["seed"])],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"py-irt failed:\n{proc.stderr[-3000:]}")
        est = json.loads(out.read_text())
    difficulty = pd.Series(est["difficulty"], index=est["item"])
    ability = pd.Series(est["ability"], index=est["subject"])
    return {"wall_s": wall, "sampling_s": est["seconds"], **_recovery(truth, difficulty, ability)}


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


#: The models that are irtbayes' default fit or a variant of it (the compile caches of the default's first run).
NUTS_MODELS = ("default", "cached", "double", "reshaped", "logsd")


def _worker(config: dict) -> dict:
    """Run one fit and return its numbers (called in a subprocess)."""
    import numpy as np
    import nutpie

    from irtbayes.core.chains import ess_bulk
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.fitting.diagnostics.sampler import check_convergence
    from irtbayes.fitting.fit import LARGE_MODEL, LARGE_MODEL_DRAWS, fit

    warnings.simplefilter("ignore")
    n_subjects, n_items = config["size"]
    if config["model"] == "reshaped":  # the same design a tenth smaller each way: another shape, the same structure
        n_subjects, n_items = n_subjects - n_subjects // 10, n_items - n_items // 10
    data, truth = simulate_responses(
        n_subjects, n_items, kind="2pl", n_benchmarks=25, n_domains=7, missing=0.1, seed=config["seed"]
    )
    if config["model"] == "pyirt":
        return {
            "model": "pyirt",
            "size": f"{n_subjects}x{n_items}",
            "responses": data.n_responses,
            **_pyirt(data, truth, config),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    if config["model"] == "approx":  # the approximate tier: draws, but no MCMC diagnostics
        start = time.perf_counter()
        result = fit(data, sampler="approx", seed=config["seed"], progress=False)
        wall = time.perf_counter() - start
        post = result.posterior
        means = {name: post[name].mean(("chain", "draw")).to_series() for name in ("ability", "difficulty")}
        return {
            "model": "approx",
            "size": f"{n_subjects}x{n_items}",
            "responses": data.n_responses,
            "wall_s": wall,
            "sampling_s": result.sampler["wall_time_s"],
            **_recovery(truth, means["difficulty"], means["ability"].rename(index=str)),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    chains, draws, tune = config["chains"], config["draws"], config["tune"]
    start = time.perf_counter()
    if config["model"] in NUTS_MODELS:
        # NUTS, whatever sampler="auto" would choose for this size (the approximate tier has its own model name);
        # "double": the same with the likelihood's cells in float64 instead of float32; "logsd": the group levels'
        # sds sampled as their logs
        from irtbayes.model.spec import ModelSpec

        spec = {"double": ModelSpec(precision="float64"), "logsd": ModelSpec(group_sd="log")}.get(config["model"])
        result = fit(
            data, spec, sampler="nutpie", chains=chains, draws=draws, tune=tune, seed=config["seed"], progress=False
        )
        wall = time.perf_counter() - start
        sampling = result.sampler["wall_time_s"]
        draws, tune = result.sampler["draws"], result.sampler["tune"]
        compile_s = result.sampler.get("compile_s")
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
        compile_s = t0 - start
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
    means = {name: da.mean(("chain", "draw")).to_series() for name, da in groups.items()}
    recovery = _recovery(truth, means["difficulty"], means["ability"].rename(index=str))
    b = groups["difficulty"].transpose("chain", "draw", ...).to_numpy().astype("float64")
    b_mcse = b.reshape(-1, b.shape[-1]).std(axis=0) / np.sqrt(ess_bulk(b))
    return {
        **recovery,
        "b_mean": b.mean(axis=(0, 1)).tolist(),
        "b_mcse": b_mcse.tolist(),
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
        "converged": bool(diag.ok),
        "compile_s": compile_s,
        "divergences": diag.divergences,
        "mean_steps": diag.mean_steps,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _run(config: dict, caches: Path | None = None) -> dict:
    """One fit in its own process; ``caches``: the folder of its compile caches (numba's and PyTensor's), so that a
    first run starts cold and a second run of the same model finds what the first compiled."""
    env = dict(os.environ)
    if caches is not None:
        env["NUMBA_CACHE_DIR"] = str(caches / "numba")
        env["PYTENSOR_FLAGS"] = ",".join(
            f for f in (env.get("PYTENSOR_FLAGS", ""), f"base_compiledir={caches / 'pytensor'}") if f
        )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(config)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark worker failed for {config}:\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_s": time.perf_counter() - start}


def _per_gradient(row: dict) -> float:
    """Seconds per gradient evaluation: the sampler's wall time less compiling, over the leapfrog steps of every
    chain's warm-up and draws (the checks' pauses included)."""
    return (row["sampling_s"] - (row["compile_s"] or 0.0)) / (
        row["mean_steps"] * row["chains"] * (row["draws"] + row["tune"])
    )


def _agreement(one: dict, other: dict, name_one: str, name_other: str) -> str:
    """How far two NUTS fits' posterior means of the difficulties are apart, in Monte Carlo standard errors."""
    import numpy as np

    diff = np.asarray(one["b_mean"]) - np.asarray(other["b_mean"])
    z = diff / np.hypot(np.asarray(one["b_mcse"]), np.asarray(other["b_mcse"]))
    return (
        f"posterior means of the difficulties, {name_one} - {name_other}: max |difference| {np.abs(diff).max():.4f}, "
        f"in Monte Carlo errors |z| > 2 for {np.mean(np.abs(z) > 2):.3f} of items (0.046 expected by chance), "
        f"max |z| {np.abs(z).max():.2f} over {len(z)} items"
    )


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
    parser.add_argument("--pyirt-python", help="interpreter with py-irt 0.7.1 installed (for --models pyirt)")
    parser.add_argument("--make-pyirt-venv", action="store_true", help=f"create {PYIRT_VENV.name} for py-irt")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(json.loads(args.worker))))
        return 0
    if args.quick:
        args.sizes, args.chains, args.draws, args.tune = "100x1000", 2, 300, 300
    sizes = [tuple(int(x) for x in s.lower().split("x")) for s in args.sizes.split(",") if s]
    models = [m for m in args.models.split(",") if m]
    pyirt_python = _pyirt_python(args) if "pyirt" in models else None
    draws, tune = ("auto" if n is None else n for n in (args.draws, args.tune))
    print(f"chains {args.chains} x draws {draws} (tune {tune}), seed {args.seed}", flush=True)
    header = (
        f"{'size':>9} {'model':>15} {'wall s':>8} {'sample s':>8} {'minESS':>7} {'ability':>7} {'diffic.':>7} "
        f"{'discr.':>7} {'ESS/s':>7} {'max rhat':>8} {'div':>4} {'steps':>6} {'peak MB':>8} "
        f"{'chains x draws+tune':>19}  least ESS"
    )
    print(header)
    if set(NUTS_MODELS[1:]) & set(models) and "default" not in models:
        raise SystemExit(
            "--models cached, double, reshaped and logsd run after the default model: list default before them"
        )
    for size in sizes:
        rows = {}
        caches = Path(tempfile.mkdtemp(prefix="irtbayes-bench-caches-"))  # the default model's first run: cold
        for model in models:
            config = {
                "size": size,
                "model": model,
                "chains": args.chains,
                "draws": args.draws,
                "tune": args.tune,
                "seed": args.seed,
                "pyirt_python": pyirt_python,
            }
            print(
                f"[{time.strftime('%H:%M:%S')}] fitting {size[0]}x{size[1]} with the {model} model ...",
                file=sys.stderr,
                flush=True,
            )
            r = _run(config, caches if model in NUTS_MODELS else None)
            rows[model] = r
            if model in ("pyirt", "approx"):
                what = (
                    "point estimates (SVI), no posterior draws" if model == "pyirt" else "approximate posterior draws"
                )
                print(f"{r['size']:>9} {model:>15} {r['wall_s']:8.1f} {r['sampling_s']:8.1f}   {what}", flush=True)
                continue
            r["ess_per_s"] = r["min_ess_bulk"] / r["wall_s"]
            r["core_ess_per_s"] = r["min_ess_core"] / r["wall_s"]
            print(
                f"{r['size']:>9} {model:>15} {r['wall_s']:8.1f} {r['sampling_s']:8.1f} {r['min_ess_bulk']:7.0f} "
                f"{r['min_ess_ability']:7.0f} {r['min_ess_difficulty']:7.0f} {r['min_ess_discrimination']:7.0f} "
                f"{r['ess_per_s']:7.2f} {r['max_rhat']:8.3f} {r['divergences']:4d} "
                f"{r['mean_steps'] or float('nan'):6.1f} {r['peak_mb']:8.0f} "
                f"{str(r['chains']) + ' x ' + str(r['draws']) + '+' + str(r['tune']):>19}  {r['worst']}; "
                f"{'converged' if r['converged'] else 'NOT CONVERGED'}, compiled in {r['compile_s'] or 0:.1f} s",
                flush=True,
            )
        print(
            f"{'':>9} {'process':>15} wall of each model's process (start, imports, data, fit): "
            + ", ".join(f"{m} {r['process_s']:.1f} s" for m, r in rows.items()),
            flush=True,
        )
        print(
            f"{'':>9} {'recovery':>15} RMSE of difficulty / ability, raw and [linked on the abilities]; Spearman of "
            "difficulty",
            flush=True,
        )
        for model, r in rows.items():
            print(
                f"{'':>9} {model:>15} b {r['rmse_difficulty']:.3f} [{r['rmse_difficulty_linked']:.3f}]  theta "
                f"{r['rmse_ability']:.3f} [{r['rmse_ability_linked']:.3f}]  rho_b {r['spearman_difficulty']:.4f}",
                flush=True,
            )
        for name in ("default", "cached"):
            if {name, "pyirt"} <= rows.keys():
                d, p = rows[name], rows["pyirt"]
                print(
                    f"{'':>9} {'ratio':>15} wall: {name} / py-irt {d['wall_s'] / p['wall_s']:.2f}; linked RMSE of "
                    f"difficulty: py-irt / {name} {p['rmse_difficulty_linked'] / d['rmse_difficulty_linked']:.2f}",
                    flush=True,
                )
        if {"default", "cached"} <= rows.keys():
            print(
                f"{'':>9} {'ratio':>15} wall: cached / default (first run, cold caches) "
                f"{rows['cached']['wall_s'] / rows['default']['wall_s']:.2f}",
                flush=True,
            )
        if {"default", "reshaped"} <= rows.keys():
            r = rows["reshaped"]
            print(
                f"{'':>9} {'ratio':>15} compiling: reshaped ({r['size']}, the caches of {rows['default']['size']}) / "
                f"default (first run, cold caches) {(r['compile_s'] or 0) / (rows['default']['compile_s'] or 1):.2f}"
                + (
                    f"; reshaped / cached {(r['compile_s'] or 0) / (rows['cached']['compile_s'] or 1):.2f}"
                    if "cached" in rows
                    else ""
                ),
                flush=True,
            )
        if "double" in rows:
            d = rows["double"]
            print(
                f"{'':>9} {'ratio':>15} time per gradient, compiling left out: default (float32 cells) / double (float64) "
                f"{_per_gradient(rows['default']) / _per_gradient(d):.2f}"
                + (
                    f", cached / double {_per_gradient(rows['cached']) / _per_gradient(d):.2f}"
                    if "cached" in rows
                    else ""
                ),
                flush=True,
            )
            for other in ("default", "cached"):
                if other in rows:
                    print(f"{'':>9} {'agreement':>15} {_agreement(rows[other], d, other, 'double')}", flush=True)
        if "logsd" in rows:
            g = rows["logsd"]
            for other in ("default", "cached"):
                if other in rows:
                    o = rows[other]
                    print(
                        f"{'':>9} {'ratio':>15} {other} (signed scales) / logsd (log sds): draws per chain "
                        f"{o['draws'] / g['draws']:.2f}, sampling time, compiling left out "
                        f"{(o['sampling_s'] - (o['compile_s'] or 0)) / (g['sampling_s'] - (g['compile_s'] or 0)):.2f}",
                        flush=True,
                    )
                    print(f"{'':>9} {'agreement':>15} {_agreement(o, g, other, 'logsd')}", flush=True)
        if {"default", "cached"} <= rows.keys():
            print(f"{'':>9} {'agreement':>15} {_agreement(rows['default'], rows['cached'], 'default', 'cached')}")
        shutil.rmtree(caches, ignore_errors=True)
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
