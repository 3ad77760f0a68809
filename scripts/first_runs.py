"""How often the default fit's first run ends in divergences on one data set, over many seeds.

The table of the validation page's section on a handful of systems
(docs/validation.md#a-handful-of-systems-the-scale-of-the-raw-abilities) comes from this script. Each seed fits the
data with the defaults of :func:`irtbayes.fitting.fit.fit` and prints one line: the model, whether the fit passed its
checks, and each run of its remedies (target acceptance, outcome, divergent transitions); a first run that passed
has no runs. The last line counts the first runs that diverged.

Usage::

    .venv/bin/python scripts/first_runs.py tests/fixtures/inspect/logs --seeds 0-129
"""

from __future__ import annotations

import argparse
import time
import warnings


def seeds(text: str) -> list[int]:
    """``"0-129"`` or ``"1,2,5"``."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-"))
        return list(range(first, last + 1))
    return [int(part) for part in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="anything irtbayes.data.io.load reads")
    parser.add_argument("--seeds", type=seeds, default=seeds("0-29"), help="e.g. 0-129 or 1,2,5")
    args = parser.parse_args()

    from irtbayes.data import io
    from irtbayes.fitting.fit import fit

    data = io.load(args.data)
    diverged = 0
    for seed in args.seeds:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = fit(data, seed=seed, progress=False)
        runs = [(r["target_accept"], r["outcome"], r.get("divergences")) for r in fitted.sampler.get("remedies", [])]
        diverged += bool(runs)
        took = time.perf_counter() - start
        print(f"seed {seed}: {fitted.spec.kind}, passed {fitted.diagnostics.ok}, runs {runs}, {took:.1f} s", flush=True)
    print(f"first runs that diverged: {diverged} of {len(args.seeds)}")


if __name__ == "__main__":
    main()
