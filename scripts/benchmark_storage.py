"""Benchmark: size, save and load time of a saved fit, float64 (as saved before) against today's storage.

Two parts, one tiny real fit behind both:

1. **Audit agreement.** Simulated responses, 60 subjects x 200 items (4 benchmarks, 2 domains), fitted with
   nutpie (2 chains x 200 draws after 200 warm-up draws, seed 1). The fit is saved the old way (every group,
   float64, no compression) and the new way (:func:`irtbayes.fitting.storage.save_fit`: float32, only what
   later steps read), both are loaded back, and each is audited (:func:`irtbayes.auditing.run.audit`, seed 0) beside
   the fit in memory. Printed: the largest absolute and relative difference over every number of the
   ``benchmarks`` table (DDM, Maximum Gap, coverage, ... with their intervals) and the ``ranking`` table
   (ranks and accuracies), and whether any of them differs once rounded to 3 decimals (the precision the
   report shows).
2. **Size at MMLU-Pro's shape.** A hand-built fit with the tiny fit's variables, dims, dtypes and sample
   statistics, grown to 29 subjects x 12,032 items and 4 chains x 1250 draws: each element of a variable
   gets a location drawn from the spread of the tiny fit's posterior means of that variable (on the log
   scale for positive ones) and draws that scatter around it by the tiny fit's mean posterior sd; each
   sampler statistic is resampled from the tiny fit's values. ``constant_data`` comes from simulated
   responses of that size (or, with ``--fit``, a saved fit). Printed: the size of ``posterior.nc``, save (all
   four files, the CSV tables included) and load wall times: float64, float32 as saved now (not compressed),
   and float32 compressed (``save_fit(..., compress=True)``).

Usage:
    python scripts/benchmark_storage.py                          # both parts, MMLU-Pro's shape
    python scripts/benchmark_storage.py --items 2000 --draws 250 # a quicker size check
    python scripts/benchmark_storage.py --skip-audit --fit OUT/fit # the default audit's saved fit
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.auditing.run import audit
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import FORMAT_VERSION, Fit, derived_names, fit_constant_data
from irtbayes.fitting.storage import _card_checksum, _sha256, load_fit, save_fit
from irtbayes.model.build import add_derived


def save_float64(result: Fit, folder: Path) -> Path:
    """Write a fit folder as irtbayes did before float32 storage (every group, float64, not compressed)."""
    folder.mkdir(parents=True)
    post = result.posterior.drop_vars([n for n in derived_names(result.spec) if n in result.posterior])
    groups = {"posterior": post}
    for name in result.idata.children:
        if name != "posterior":
            groups[name] = result.idata[name].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(result.idata.attrs)
    tree.attrs["format_version"] = FORMAT_VERSION
    tree.attrs["data_checksum"] = result.data_checksum
    tree.to_netcdf(folder / "posterior.nc", engine="h5netcdf")
    card = result.card()
    card["posterior_sha256"] = _sha256(folder / "posterior.nc")
    card["card_sha256"] = _card_checksum(card)
    (folder / "card.json").write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    result.items_table().to_csv(folder / "items.csv", index=False)
    result.subjects_table().to_csv(folder / "subjects.csv", index=False)
    return folder


def tiny_fit(seed: int = 1) -> tuple[ResponseData, Fit]:
    data, _ = simulate_responses(60, 200, n_benchmarks=4, n_domains=2, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2 x 200 draws do not pass the convergence checks; that is not measured
        result = fit(data, chains=2, draws=200, tune=200, seed=seed, progress=False)
    return data, result


def _numbers(table: pd.DataFrame) -> pd.DataFrame:
    return table.select_dtypes(include="number").astype("float64")


def compare_audits(reference: Any, other: Any) -> dict[str, float]:
    """Largest absolute and relative difference, and the count differing at 3 decimals, over two tables."""
    out = {"max_abs": 0.0, "max_rel": 0.0, "differ_3dp": 0, "n": 0}
    for name in ("benchmarks", "ranking"):
        a, b = _numbers(getattr(reference, name)), _numbers(getattr(other, name))
        if list(a.columns) != list(b.columns) or a.shape != b.shape:
            raise AssertionError(f"the {name} tables differ in shape or columns")
        x, y = a.to_numpy(), b.to_numpy()
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            raise AssertionError(f"the {name} tables differ in where they hold NaN")
        ok = ~np.isnan(x)
        diff = np.abs(x[ok] - y[ok])
        rel = diff / np.maximum(np.abs(x[ok]), 1e-12)
        out["max_abs"] = max(out["max_abs"], float(diff.max(initial=0.0)))
        out["max_rel"] = max(out["max_rel"], float(rel.max(initial=0.0)))
        out["differ_3dp"] += int((np.round(x[ok], 3) != np.round(y[ok], 3)).sum())
        out["n"] += int(ok.sum())
    return out


def part_audit(data: ResponseData, result: Fit, work: Path) -> None:
    old = load_fit(save_float64(result, work / "old"))
    new = load_fit(save_fit(result, work / "new"))
    size_old = (work / "old" / "posterior.nc").stat().st_size
    size_new = (work / "new" / "posterior.nc").stat().st_size
    print(f"tiny fit 60 x 200, 2 x 200 draws: posterior.nc {size_old / 1e6:.2f} MB -> {size_new / 1e6:.2f} MB")
    ref = audit(result, data, seed=0)
    for label, loaded in (("float64 saved and loaded", old), ("float32 saved and loaded", new)):
        c = compare_audits(ref, audit(loaded, data, seed=0))
        print(
            f"  audit of the {label} fit vs the fit in memory, over {c['n']} numbers (benchmarks, ranking): "
            f"max abs diff {c['max_abs']:.3g}, max rel diff {c['max_rel']:.3g}, "
            f"{c['differ_3dp']} differ at 3 decimals"
        )


def grown_fit(layout: Fit, *, n_subjects: int, n_items: int, chains: int, draws: int, seed: int) -> Fit:
    """A fit with ``layout``'s variables and sample statistics, at the size asked (see the module docstring)."""
    rng = np.random.default_rng(seed)
    data, _ = simulate_responses(n_subjects, n_items, n_benchmarks=14, n_domains=4, missing=0.0, seed=seed)
    sizes = {"chain": chains, "draw": draws, "item": n_items, "subject": n_subjects}
    coords = {
        "chain": np.arange(chains),
        "draw": np.arange(draws),
        "item": data.item_ids.to_numpy(dtype=str),
        "subject": data.subject_ids.to_numpy(dtype=str),
    }
    stored = layout.posterior.drop_vars([n for n in derived_names(layout.spec) if n in layout.posterior])
    post = {}
    for name, var in stored.data_vars.items():
        dims = var.dims
        shape = tuple(sizes.get(d, var.sizes[d]) for d in dims)
        values = var.values
        positive = bool(np.all(values > 0))
        scaled = np.log(values) if positive else values
        means = scaled.mean(axis=(0, 1))
        loc = rng.normal(means.mean(), means.std() + 1e-3, size=shape[2:])
        scatter = float(scaled.std(axis=(0, 1)).mean())
        draws_ = loc + scatter * rng.standard_normal(shape)
        post[name] = (dims, np.exp(draws_) if positive else draws_)
    extra = {d: stored[d].values for d in stored.dims if d not in sizes}
    posterior = add_derived(xr.Dataset(post, coords={**coords, **extra}), layout.spec)
    groups = {"posterior": posterior}
    stats_in = layout.idata["sample_stats"].to_dataset()
    stats = {
        n: (("chain", "draw"), rng.choice(v.values.ravel(), size=(chains, draws)))
        for n, v in stats_in.data_vars.items()
    }
    groups["sample_stats"] = xr.Dataset(stats, coords={"chain": coords["chain"], "draw": coords["draw"]})
    groups["constant_data"] = fit_constant_data(data)
    idata = xr.DataTree.from_dict(groups)
    idata.attrs.update(layout.idata.attrs)
    idata.attrs["data_checksum"] = data.checksum()
    return Fit(
        idata=idata,
        spec=layout.spec,
        sampler={**layout.sampler, "chains": chains, "draws": draws},
        data_checksum=data.checksum(),
        diagnostics=layout.diagnostics,
        info={**layout.info, "n_subjects": n_subjects, "n_items": n_items},
    )


def part_size(big: Fit, work: Path, what: str, *, float64: bool = True) -> None:
    """Size, save and load times; ``float64=False`` leaves out the float64 row (a loaded fit holds float32 items)."""
    print(f"{what}:")
    rows = {}
    compressed = ("float32 zlib", lambda fit, folder: save_fit(fit, folder, compress=True))
    ways = [("float64 (before)", save_float64)] if float64 else []
    for label, save in (*ways, ("float32 (now)", save_fit), compressed):
        folder = work / f"big-{label.split()[1]}"
        t0 = time.perf_counter()
        save(big, folder)
        t_save = time.perf_counter() - t0
        t0 = time.perf_counter()
        loaded = load_fit(folder)
        t_load = time.perf_counter() - t0
        size = (folder / "posterior.nc").stat().st_size
        rows[label] = size
        print(f"  {label:17s} posterior.nc {size / 1e6:8.1f} MB   save {t_save:6.1f} s   load {t_load:6.1f} s")
        del loaded
        shutil.rmtree(folder)
    if float64:
        print(f"  {rows['float64 (before)'] / rows['float32 (now)']:.2f} times smaller than float64")
    print(f"  compressed: {rows['float32 zlib'] / rows['float32 (now)']:.2f} of the size")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subjects", type=int, default=29)
    parser.add_argument("--items", type=int, default=12032)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1250)
    parser.add_argument("--skip-audit", action="store_true", help="only the size part")
    parser.add_argument("--fit", help="a saved fit to time instead of the hand-built one (e.g. make run's OUT/fit)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="irtbayes-storage-") as tmp:
        work = Path(tmp)
        data, result = tiny_fit()
        if not args.skip_audit:
            part_audit(data, result, work)
        if args.fit:
            big = load_fit(args.fit)
            what = f"{args.fit}: {big.posterior.sizes['chain']} x {big.posterior.sizes['draw']} draws"
        else:
            sizes = {"n_subjects": args.subjects, "n_items": args.items, "chains": args.chains, "draws": args.draws}
            big = grown_fit(result, **sizes, seed=2)
            what = f"hand-built fit {args.subjects} x {args.items:,} items, {args.chains} x {args.draws} draws"
        part_size(big, work, what, float64=not args.fit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
