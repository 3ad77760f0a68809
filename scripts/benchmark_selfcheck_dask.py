"""The audit's self-check serially and on local Dask clusters of 1 and 2 workers: wall times and ratios.

One simulated design (``--subjects`` x ``--items``, ``--benchmarks`` benchmarks, 10% of cells missing) is fitted
with the approximate tier and audited with the default settings; its self-check (``--sets`` simulated data sets,
each an approximate refit and an audit) then runs

1. serially in this process (``scheduler=None``: the baseline),
2. on a ``dask.distributed.LocalCluster`` of N single-threaded worker processes, for each N of ``--workers``.

Each cluster is started, and every worker has imported irtbayes, before the clock starts: the times are those of
the check alone (the start is printed beside them). Dask's workers run with one BLAS thread each, its default; the
serial run keeps this process's. Every run's per-set table must equal the serial one (the sets carry their seeds),
which the script checks. Printed: one row per run with its seconds and its ratio to the serial run.

    .venv/bin/python scripts/benchmark_selfcheck_dask.py                       # 200 x 400, 20 sets, 1 and 2 workers
    .venv/bin/python scripts/benchmark_selfcheck_dask.py --sets 4 --subjects 60 --items 80   # a look
"""

from __future__ import annotations

import argparse
import time
import warnings

import pandas as pd


def _warm() -> str:
    """Run on each worker before timing: the imports a self-check set needs."""
    import irtbayes.auditing.run
    import irtbayes.auditing.selfcheck  # noqa: F401

    return "ready"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subjects", type=int, default=200)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--benchmarks", type=int, default=4)
    parser.add_argument("--sets", type=int, default=20, help="simulated data sets of the self-check (default 20)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="cluster sizes (default 1 2)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster

    from irtbayes.auditing.run import audit
    from irtbayes.auditing.selfcheck import self_check
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.fitting.fit import fit

    data, _ = simulate_responses(args.subjects, args.items, n_benchmarks=args.benchmarks, missing=0.1, seed=args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the approximate tier warns that MCMC checks do not apply
        fitted = fit(data, sampler="approx", seed=args.seed, progress=False)
    audited = audit(fitted, data)
    print(
        f"design: {args.subjects} systems x {args.items} items ({args.benchmarks} benchmarks, {data.n_responses:,} "
        f"responses), approximate fit of {fitted.sampler.get('chains')} x {fitted.sampler.get('draws')} draws; "
        f"self-check of {args.sets} sets",
        flush=True,
    )
    options = {"n_sets": args.sets, "seed": args.seed, "progress": False, "audit_fn": audit}
    started = time.perf_counter()
    baseline = self_check(fitted, data, audited, **options)
    rows = [{"run": "serial (this process)", "start_s": 0.0, "seconds": time.perf_counter() - started}]
    print(f"{rows[-1]['run']}: {rows[-1]['seconds']:.1f} s", flush=True)
    for n in args.workers:
        t0 = time.perf_counter()
        with (
            LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster, set_as_default=False) as client,
        ):
            client.run(_warm)
            start = time.perf_counter() - t0
            t1 = time.perf_counter()
            checked = self_check(fitted, data, audited, scheduler=client, **options)
            seconds = time.perf_counter() - t1
        pd.testing.assert_frame_equal(checked.sets, baseline.sets)  # the same sets, wherever they ran
        rows.append({"run": f"LocalCluster, {n} worker{'s' if n > 1 else ''}", "start_s": start, "seconds": seconds})
        print(
            f"{rows[-1]['run']}: {seconds:.1f} s (cluster start {start:.1f} s); sets equal the serial run's", flush=True
        )
    table = pd.DataFrame(rows)
    table["ratio_to_serial"] = table["seconds"] / table["seconds"].iloc[0]
    print("\n" + table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
