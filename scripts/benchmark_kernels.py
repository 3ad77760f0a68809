"""Time the fused likelihood kernels per gradient, one core, on one simulated matrix, in one process.

The 3PL's kernel (``_floored_kernel``) is timed against the 2PL's (float32 and float64) and against a scalar
reference in this script: the same sum and gradient with a ``math.log`` per cell and a branch per response, the
form the vectorised kernel replaced. Every kernel's value is checked against the reference before it is timed.

    .venv/bin/python scripts/benchmark_kernels.py [--subjects 245 --items 628 --seconds 3]
"""

from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np

from irtbayes.model.likelihood import _floored_kernel, _fused_kernel, _fused_kernel32


@numba.njit(nogil=True, cache=False)
def scalar_floored(theta, a, b, c, item_dim, y, w):
    """The 3PL's value and gradient with library logs and a branch per cell (the reference)."""
    n, m = y.shape
    d_theta = np.zeros_like(theta)
    d_a, d_b, d_c = np.zeros(m), np.zeros(m), np.zeros(m)
    total = 0.0
    for j in range(n):
        for i in range(m):
            if w[j, i] == 0.0:
                continue
            diff = theta[j, item_dim[i]] - b[i]
            eta = a[i] * diff
            e = math.exp(-abs(eta))
            sig = 1.0 / (1.0 + e) if eta >= 0.0 else e / (1.0 + e)
            p = c[i] + (1.0 - c[i]) * sig
            total += y[j, i] * math.log(p) + (1.0 - y[j, i]) * (math.log1p(-c[i]) - max(eta, 0.0) - math.log1p(e))
            r = y[j, i] * (1.0 - c[i]) * sig * (1.0 - sig) / p - (1.0 - y[j, i]) * sig
            d_theta[j, item_dim[i]] += r * a[i]
            d_a[i] += r * diff
            d_b[i] -= r * a[i]
            d_c[i] += y[j, i] * (1.0 - sig) / p - (1.0 - y[j, i]) / (1.0 - c[i])
    return total, d_theta, d_a, d_b, d_c


def _per_call(function, args, seconds: float) -> float:
    function(*args)
    best = math.inf
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 3:
            function(*args)
            calls += 1
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=245)
    parser.add_argument("--items", type=int, default=628)
    parser.add_argument("--seconds", type=float, default=3.0, help="timing per kernel (best third)")
    args = parser.parse_args()
    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    n, m = args.subjects, args.items
    theta = rng.normal(size=(n, 1))
    a, b, c = np.exp(rng.normal(0, 0.3, m)), rng.normal(size=m), np.full(m, 0.25)
    p = c + (1 - c) / (1 + np.exp(-a * (theta - b)))
    w = (rng.uniform(size=(n, m)) < 0.95).astype(float)
    y = (rng.uniform(size=(n, m)) < p).astype(float) * w
    dims = np.zeros(m, dtype=np.int64)
    reference = scalar_floored(theta, a, b, c, dims, y, w)
    floored = _floored_kernel(theta, a, b, c, dims, y, w)
    assert math.isclose(floored[0], reference[0], rel_tol=1e-12), (floored[0], reference[0])
    for got, want in zip(floored[1:], reference[1:], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    timings = {
        "3PL scalar reference": _per_call(scalar_floored, (theta, a, b, c, dims, y, w), args.seconds),
        "3PL kernel (float64)": _per_call(_floored_kernel, (theta, a, b, c, dims, y, w), args.seconds),
        "2PL kernel (float64)": _per_call(_fused_kernel, (theta, a, b, dims, y, w), args.seconds),
        "2PL kernel (float32)": _per_call(
            _fused_kernel32, (theta, a, b, dims, y.astype(np.float32), w.astype(np.float32)), args.seconds
        ),
    }
    base = timings["3PL kernel (float64)"]
    print(f"{n} subjects x {m} items, one core, best of 3; ratio = time / the 3PL kernel's")
    for name, seconds in timings.items():
        print(f"{name:24s} {seconds * 1e6:9.1f} us per gradient   ratio {seconds / base:5.2f}")


if __name__ == "__main__":
    main()
