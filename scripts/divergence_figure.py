"""Where the default fit's divergences came from on multi-benchmark data: the figure of the validation page.

The figure is shown, with what it found, on docs/validation.md#where-the-divergences-of-the-earlier-default-came-from.

A plain 2PL simulation (200 systems x 900 items in 3 benchmarks, difficulties uniform on [-3, 3], discriminations
log-normal with sd 0.3 and no benchmark effect) is fitted with nutpie twice: with the benchmarks' sd sampled
(``ModelSpec(benchmark_sd="sampled")``, the earlier default) and with it fixed (the default for 2 or 3 benchmarks).
nutpie stores where each divergent trajectory started (``store_divergences``); the figure shows those starts in the
coordinates the sampler moves, the log of the log-discriminations' benchmark sd against one of the level's zero-sum
effects, over the posterior draws, and the posterior of that sd on a log scale.

Usage::

    .venv/bin/python scripts/divergence_figure.py --out docs/figures/divergence_funnel.png
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd


def simulate(seed: int):
    from irtbayes.data.responses import ResponseData

    rng = np.random.default_rng(seed)
    n_sub, n_item, n_bench = 200, 900, 3
    theta = rng.normal(size=n_sub)
    b = rng.uniform(-3, 3, n_item)
    a = np.exp(rng.normal(0, 0.3, n_item))
    y = (rng.uniform(size=(n_sub, n_item)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    rows, cols = np.nonzero(np.ones_like(y, dtype=bool))
    frame = pd.DataFrame(
        {"subject": [f"s{j}" for j in rows], "item": [f"i{i:03d}" for i in cols], "response": y[rows, cols]}
    )
    items = pd.DataFrame(
        {"item": [f"i{i:03d}" for i in range(n_item)], "benchmark": [f"b{i % n_bench}" for i in range(n_item)]}
    )
    return ResponseData.from_long(frame, items=items, source="plain 2PL, 3 benchmarks")


def sample(data, spec, seed: int):
    """nutpie on the model as irtbayes builds it, with the divergences' starting points stored."""
    import nutpie

    from irtbayes.model.build import build_model

    model = build_model(data, spec)
    compiled = nutpie.compile_pymc_model(model)
    return nutpie.sample(
        compiled, draws=1000, tune=500, chains=4, seed=seed, target_accept=0.8,
        store_divergences=True, store_unconstrained=True, progress_bar=False,
    )  # fmt: skip


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from irtbayes.model.spec import ModelSpec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("docs/figures/divergence_funnel.png"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    data = simulate(args.seed)
    sampled = sample(data, ModelSpec(benchmark_sd="sampled"), args.seed)
    fixed = sample(data, ModelSpec(), args.seed)
    stats = sampled.sample_stats
    draws = stats["unconstrained_draw"]
    names = list(draws.coords[draws.dims[-1]].values)
    x_name, y_name = "log_discrimination_benchmark_sd_log__", "log_discrimination_benchmark_zerosum_z_0"
    ix, iy = names.index(x_name), names.index(y_name)
    flat = draws.values.reshape(-1, len(names))
    divergent = stats["diverging"].values.reshape(-1).astype(bool)
    starts = stats["divergence_start"].values.reshape(-1, len(names))[divergent]
    n_fixed = int(fixed.sample_stats["diverging"].values.sum())

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.scatter(flat[:, ix], flat[:, iy], s=2, alpha=0.25, color="0.5", label="posterior draws")
    left.scatter(
        starts[:, ix], starts[:, iy], s=28, color="tab:red", label=f"divergences start ({int(divergent.sum())})"
    )
    left.set_xlabel("log of the log-discriminations' benchmark sd")
    left.set_ylabel("a zero-sum benchmark effect (sd units)")
    left.set_title("sd sampled: a funnel where the sd is large")
    left.legend(loc="upper right", fontsize=8)
    sd = np.exp(flat[:, ix])
    right.hist(np.log10(sd), bins=60, color="tab:blue", alpha=0.8)
    right.set_xlabel("log10 of the benchmark sd (posterior draws)")
    right.set_ylabel("draws")
    q = np.quantile(sd, [0.01, 0.99])
    right.set_title(f"three means: the sd spans {q[0]:.0e} to {q[1]:.2f}")
    right.text(
        0.02, 0.95, f"sd fixed (the default with 2-3 benchmarks):\n{n_fixed} divergences",
        transform=right.transAxes, va="top", fontsize=8,
    )  # fmt: skip
    fig.suptitle("200 systems x 900 items in 3 benchmarks, nutpie at target acceptance 0.8", fontsize=10)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}: {int(divergent.sum())} divergences with the sd sampled, {n_fixed} with it fixed")


if __name__ == "__main__":
    main()
