"""The log-likelihood of the responses as a PyTensor graph, in three layouts.

``"long"`` (one term per response), ``"dense"`` (a subject x item matrix, masked where missing) and
``"fused"`` (1PL/2PL only: :class:`FusedBernoulliLogit`, value and gradient in one numba pass). Fractional
scores enter the same Bernoulli-logit terms (the fractional-logit quasi-likelihood); k successes of n repeated
trials the binomial terms ``k*eta - n*softplus(eta)`` (long or dense layout: the fused kernel has no weights other
than 0 and 1). Graded responses
(category codes) have their own terms, :func:`graded_terms` (long or dense layout).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key

from irtbayes.core.errors import SpecError
from irtbayes.core.jit import Warmup
from irtbayes.model.inputs import ModelInputs

__all__ = [
    "KERNEL_WARMUPS",
    "FusedBernoulliLogit",
    "fused_bernoulli_logit",
    "graded_terms",
    "response_loglik",
    "warm_kernel",
    "warm_kernel32",
]


def _bernoulli_terms(y: Any, eta: Any, guessing: Any, trials: Any = None) -> Any:
    """Per-cell log-likelihood: ``y*eta - softplus(eta)`` (2PL), or the 3PL mixture form.

    With ``trials`` n, ``y`` holds the successes k and the terms are the binomial kernel, ``k*eta - n*softplus(eta)``
    (3PL: ``k log p + (n - k) log(1 - p)``), without the constant log C(n, k); without, the graph is the Bernoulli
    one (no multiplication by ones).
    """
    if guessing is None:
        return y * eta - (pt.softplus(eta) if trials is None else trials * pt.softplus(eta))
    log_c = pt.log(guessing)
    log_1mc = pt.log1p(-guessing)
    log_p = pt.logaddexp(log_c, log_1mc - pt.softplus(-eta))
    log_q = log_1mc - pt.softplus(eta)
    return y * log_p + ((1 - y) if trials is None else (trials - y)) * log_q


def graded_terms(y: Any, theta: Any, discrimination: Any, thresholds: Any, n_categories: Any, *, kind: str) -> Any:
    """Per-response log P(Y = y) of a graded model, broadcast over the leading axes.

    ``y`` holds category codes (0..K-1, any float or int type), ``theta`` and ``discrimination`` broadcast to
    ``y``'s shape, ``thresholds`` to that shape plus a last axis of length Kmax - 1 (the item's thresholds
    b_1 < ... < b_{K-1}, padded with *finite* values beyond an item's own: padding never enters a term, but a
    NaN there would reach the gradient), ``n_categories`` (K per item) to ``y``'s shape.

    - ``kind="grm"``: P(Y >= k) = sigmoid(a (theta - b_k)); log P(Y = k) = log sigmoid(x) + log sigmoid(-z) +
      log(1 - exp(-a (b_{k+1} - b_k))) with x = a (theta - b_k), z = a (theta - b_{k+1}); the lowest
      category has only the second term and the highest only the first (so K = 2 is the 2PL). The last term
      depends on the gap between the thresholds only, not on theta: it stays exact where the two cumulative
      probabilities are nearly equal.
    - ``kind="gpcm"``: P(Y = k) proportional to exp(sum_{v <= k} a (theta - b_v)), normalised over the
      item's K categories.

    The same probabilities in numpy are :func:`irtbayes.core.irt.graded_log_probabilities`.
    """
    n_thresholds = thresholds.shape[-1]
    ks = pt.arange(n_thresholds)
    y = pt.cast(y, "int64")
    n_categories = pt.cast(n_categories, "int64")
    eta = discrimination[..., None] * (theta[..., None] - thresholds)  # (..., Kmax - 1): a (theta - b_k)
    if kind == "grm":
        at_low = pt.eq(ks, y[..., None] - 1)  # b_y, the threshold below y (none for y = 0)
        at_high = pt.eq(ks, y[..., None])  # b_{y+1}, the one above (none for y = K - 1)
        x = pt.switch(at_low, eta, 0.0).sum(axis=-1)
        z = pt.switch(at_high, eta, 0.0).sum(axis=-1)
        return _grm_terms(x, z, pt.ge(y, 1), pt.lt(y, n_categories - 1))
    if kind != "gpcm":
        raise SpecError(f"graded_terms: kind must be 'grm' or 'gpcm', got {kind!r}")
    zero = pt.zeros_like(eta[..., :1])
    cumulative = pt.concatenate([zero, pt.cumsum(eta, axis=-1)], axis=-1)  # (..., Kmax): category k's score
    valid = pt.lt(pt.arange(n_thresholds + 1), n_categories[..., None])
    chosen = pt.switch(pt.eq(pt.arange(n_thresholds + 1), y[..., None]), cumulative, 0.0).sum(axis=-1)
    return chosen - pt.logsumexp(pt.switch(valid, cumulative, -np.inf), axis=-1)


# ---------------------------------------------------------------------------------------------- fused likelihood
# The kernel is written so that LLVM vectorises its inner loop over items (4 doubles per AVX2 instruction):
# no calls (exp is the polynomial below), no branches (selects), no Python division check
# (``error_model="numpy"``), and reductions that may be reassociated. NaN and infinities still propagate:
# the fast-math flags leave out ``nnan`` and ``ninf``.
_FAST = {"reassoc", "contract", "nsz", "arcp"}
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k * _LN2_HI is exact for |k| < 2^11
_LN2_LO = 1.90821492927058770002e-10
#: Taylor coefficients 1/k! of exp on |r| <= ln(2)/2, k = 13 down to 2 (truncation error < 2e-17, relative).
_C13, _C12, _C11, _C10, _C9, _C8, _C7, _C6, _C5, _C4, _C3, _C2 = (1.0 / math.factorial(k) for k in range(13, 1, -1))


def _bitcast(source: Any, target: Any, llvm_target: Any) -> Any:
    """An intrinsic giving the ``target`` value (a float or an integer) whose bit pattern is its ``source``
    argument's (an LLVM bitcast, vectorisable). Its signature is fixed: numba widens int32 arithmetic to int64, so
    the argument is cast to ``source``."""

    def typer(typingctx: Any, bits: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.bitcast(args[0], llvm_target)

        return target(source), codegen

    return intrinsic(typer)


#: The float64 whose bit pattern is the int64 argument.
_bits_as_float = _bitcast(types.int64, types.float64, ir.DoubleType())
#: The float32 whose bit pattern is the int32 argument.
_bits_as_float32 = _bitcast(types.int32, types.float32, ir.FloatType())
#: The bit pattern of the float64 argument, as an int64.
_float_bits = _bitcast(types.float64, types.int64, ir.IntType(64))
_MANTISSA = (1 << 52) - 1
_ONE_BITS = 1023 << 52  # the exponent bits of 1.0
_TWO52_BITS = 0x4330000000000000  # the bits of 2^52: or-ing an integer below 2^52 into them gives 2^52 + it
_TWO52_BIAS = 4503599627370496.0 + 1023.0
_SQRT2 = math.sqrt(2.0)
#: 2 / (2k + 1), k = 9 down to 0: log(m) = s (2 + 2 z / 3 + ... ), s = (m - 1) / (m + 1), z = s^2.
_G19, _G17, _G15, _G13, _G11, _G9, _G7, _G5, _G3, _G1 = (2.0 / (2 * k + 1) for k in range(9, -1, -1))


@numba.njit(inline="always", fastmath={"contract"}, error_model="numpy", cache=True)
def _exp_nonpositive(x: float) -> float:
    """exp(x) for x <= 0, to 2 ulp, with no call or branch; x below -708 gives exp(-708) (about 3e-308).

    exp(x) = 2^k exp(r) with k the nearest integer to x / ln 2 and |r| <= ln(2) / 2; exp(r) by Horner's rule,
    2^k by writing k + 1023 into the exponent bits.
    """
    x = max(x, -708.0)
    k = math.floor(x * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _C13
    p = p * r + _C12
    p = p * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + 1.0
    p = p * r + 1.0
    return p * _bits_as_float((np.int64(k) + 1023) << 52)


@numba.njit(inline="always", fastmath={"contract"}, error_model="numpy", cache=True)
def _log_positive(x: float) -> float:
    """log(x) for a positive normal float64, to 3 ulp, with no call or branch.

    x = 2^k m with m in [sqrt(1/2), sqrt(2)) read from the bits; log(m) = 2 atanh(s), s = (m - 1) / (m + 1), by
    its series to s^19 (|s| <= 0.172: truncation error below 3e-17, relative); k is made a float from the bits too
    (2^52 + k's bits), which vectorises where an integer conversion may not.
    """
    bits = _float_bits(x)
    m = _bits_as_float((bits & _MANTISSA) | _ONE_BITS)
    k = _bits_as_float((bits >> 52) | _TWO52_BITS) - _TWO52_BIAS
    big = m > _SQRT2
    m = m * 0.5 if big else m
    k = k + 1.0 if big else k
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    p = _G19
    p = p * z + _G17
    p = p * z + _G15
    p = p * z + _G13
    p = p * z + _G11
    p = p * z + _G9
    p = p * z + _G7
    p = p * z + _G5
    p = p * z + _G3
    p = p * z + _G1
    return k * _LN2_HI + (s * p + k * _LN2_LO)


_F32 = np.float32
_LOG2E_32 = _F32(_LOG2E)
_LN2_HI_32 = _F32(0.693145751953125)  # ln 2 split so that k * _LN2_HI_32 is exact for |k| < 2^8
_LN2_LO_32 = _F32(1.428606765330187e-06)
#: Taylor coefficients 1/k! of exp on |r| <= ln(2)/2, k = 7 down to 2, in float32 (truncation error < 2e-8).
_S7, _S6, _S5, _S4, _S3, _S2 = (_F32(1.0 / math.factorial(k)) for k in range(7, 1, -1))
_ONE32, _ZERO32 = _F32(1.0), _F32(0.0)


@numba.njit(inline="always", fastmath={"contract"}, error_model="numpy", cache=True)
def _exp_nonpositive32(x: np.float32) -> np.float32:
    """exp(x) in float32 for x <= 0 (to a few float32 ulp), as :func:`_exp_nonpositive`; x below -87 gives
    exp(-87) (about 1.6e-38, the smallest normal float32's order)."""
    x = max(x, _F32(-87.0))
    k = _F32(math.floor(x * _LOG2E_32 + _F32(0.5)))
    r = (x - k * _LN2_HI_32) - k * _LN2_LO_32
    p = _S7
    p = p * r + _S6
    p = p * r + _S5
    p = p * r + _S4
    p = p * r + _S3
    p = p * r + _S2
    p = p * r + _F32(1.0)
    p = p * r + _F32(1.0)
    return p * _bits_as_float32((np.int32(k) + np.int32(127)) << np.int32(23))


def _theta_at(t: Any, i: Any) -> Any:
    """The ability of a row's cell ``i``: ``t[i]`` for an array of them, ``t`` itself for one ability."""
    return t[i] if isinstance(t, np.ndarray) else t


@overload(_theta_at, inline="always")
def _theta_at_numba(t: Any, i: Any) -> Any:
    """:func:`_theta_at` in numba, resolved when the kernel is compiled (no branch in the loop)."""

    def indexed(t: Any, i: Any) -> Any:
        return t[i]

    def scalar(t: Any, i: Any) -> Any:
        return t

    return indexed if isinstance(t, types.Array) else scalar


def _exp_cell(x: Any) -> Any:
    """exp(x) for x <= 0 in the precision of ``x``: :func:`_exp_nonpositive` or :func:`_exp_nonpositive32`."""
    return _exp_nonpositive32(x) if isinstance(x, np.float32) else _exp_nonpositive(x)


@overload(_exp_cell, inline="always")
def _exp_cell_numba(x: Any) -> Any:
    """:func:`_exp_cell` in numba, chosen by the type of ``x`` when the kernel is compiled."""

    def single(x: Any) -> Any:
        return _exp_nonpositive32(x)

    def double(x: Any) -> Any:
        return _exp_nonpositive(x)

    return single if x == types.float32 else double


@numba.njit(nogil=True, fastmath=_FAST, error_model="numpy", cache=True)
def _fused_row(
    t: Any,
    a: np.ndarray,
    b: np.ndarray,
    y_j: np.ndarray,
    w_j: np.ndarray,
    prod: np.ndarray,
    g_row: np.ndarray,
    d_a: np.ndarray,
    d_b: np.ndarray,
    one: Any,
    zero: Any,
) -> tuple[Any, Any]:
    """One subject's cells: accumulates the items' running products and gradients, writes the cells' gradients
    in ability to ``g_row``, returns (the row's gradient in ability, its linear terms).

    ``t`` is the subject's one ability (a number) or each item's (an array): numba compiles each case apart, and
    with one ability the loop reads no array for it (a fifth faster in float32). Every cell is computed in the precision of
    ``one`` and ``zero`` (1 and 0 as float64 for :func:`_fused_kernel`, as float32 for
    :func:`_fused_kernel32`, whose arrays are float32 too)."""
    acc = zero
    lin = zero
    for i in range(y_j.shape[0]):
        w_ji = w_j[i]
        diff = _theta_at(t, i) - b[i]
        eta = a[i] * diff
        e = _exp_cell(-abs(eta))
        prod[i] *= one + w_ji * e
        lin += w_ji * (y_j[i] * eta - max(eta, zero))
        inv = one / (one + e)
        sig = inv if eta >= zero else e * inv
        r = w_ji * (y_j[i] - sig)
        g = r * a[i]
        acc += g
        g_row[i] = g
        d_a[i] += r * diff
        d_b[i] -= g
    return acc, lin


@numba.njit(nogil=True, fastmath=_FAST, error_model="numpy", cache=True)
def _fused_kernel(
    theta: np.ndarray, a: np.ndarray, b: np.ndarray, item_dim: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Value and gradient of sum_ij w_ij (y_ij eta_ij - softplus(eta_ij)), eta_ij = a_i (theta_j,k(i) - b_i).

    One pass over the cells, subject by subject, items innermost (:func:`_fused_row`), with one exp per cell:
    softplus(eta) = max(eta, 0) + log(1 + e) with e = exp(-|eta|), and sigmoid(eta) reuses e. The logs of
    ``1 + e`` are summed as the log of a running product per item (each factor is in [1, 2], so 512 of them
    cannot overflow), which keeps the inner loop free of calls. Unobserved cells (``w`` = 0; ``w`` must be 0
    or 1) are computed and multiplied by 0, which costs less than a branch.
    """
    n, m = y.shape
    d_theta = np.zeros_like(theta)
    d_a = np.zeros(m)
    d_b = np.zeros(m)
    prod = np.ones(m)
    t = np.empty(m)
    g_row = np.empty(m)
    lin = 0.0
    logs = 0.0
    one_dim = theta.shape[1] == 1
    for j in range(n):
        if one_dim:
            acc, lin_j = _fused_row(theta[j, 0], a, b, y[j], w[j], prod, g_row, d_a, d_b, 1.0, 0.0)
            d_theta[j, 0] = acc
        else:
            for i in range(m):
                t[i] = theta[j, item_dim[i]]
            acc, lin_j = _fused_row(t, a, b, y[j], w[j], prod, g_row, d_a, d_b, 1.0, 0.0)
            for i in range(m):
                d_theta[j, item_dim[i]] += g_row[i]
        lin += lin_j
        if j % 512 == 511:
            for i in range(m):
                logs += math.log(prod[i])
                prod[i] = 1.0
    for i in range(m):
        logs += math.log(prod[i])
    return lin - logs, d_theta, d_a, d_b


#: Rows of cells a single-precision kernel accumulates before adding to its float64 totals.
_BLOCK32 = 64


@numba.njit(nogil=True, fastmath=_FAST, error_model="numpy", cache=True)
def _fused_kernel32(
    theta: np.ndarray, a64: np.ndarray, b64: np.ndarray, item_dim: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_fused_kernel` with each cell computed in float32 (twice the cells per vector instruction) and
    every sum over cells carried in float64: a row's terms and its gradient in ability are summed in float32
    over its items, the items' gradients and running products over at most :data:`_BLOCK32` rows, then added to
    float64 totals. ``y`` and ``w`` are float32; ``theta``, ``a``, ``b`` and the results float64. The
    log-likelihood differs from the float64 kernel's by about 1e-8 of its value (up to 3e-8 where |eta| reaches
    the thousands, from float32's rounding of eta), the gradient by about 1e-6 of its largest entry: far below
    what moves a posterior (a log-density off by 1e-3 at MMLU-Pro's size changes a sampler's acceptance
    probabilities by a thousandth).
    """
    n, m = y.shape
    a = a64.astype(np.float32)
    b = b64.astype(np.float32)
    d_theta = np.zeros_like(theta)
    d_a = np.zeros(m)
    d_b = np.zeros(m)
    d_a32 = np.zeros(m, dtype=np.float32)
    d_b32 = np.zeros(m, dtype=np.float32)
    prod = np.ones(m, dtype=np.float32)
    t = np.empty(m, dtype=np.float32)
    g_row = np.empty(m, dtype=np.float32)
    lin = 0.0
    logs = 0.0
    one_dim = theta.shape[1] == 1
    for j in range(n):
        if one_dim:
            acc, lin_j = _fused_row(_F32(theta[j, 0]), a, b, y[j], w[j], prod, g_row, d_a32, d_b32, _ONE32, _ZERO32)
            d_theta[j, 0] = acc
        else:
            for i in range(m):
                t[i] = _F32(theta[j, item_dim[i]])
            acc, lin_j = _fused_row(t, a, b, y[j], w[j], prod, g_row, d_a32, d_b32, _ONE32, _ZERO32)
            for i in range(m):
                d_theta[j, item_dim[i]] += g_row[i]
        lin += float(lin_j)
        if j % _BLOCK32 == _BLOCK32 - 1 or j == n - 1:  # 64 factors in [1, 2] cannot overflow a float32
            for i in range(m):
                logs += math.log(prod[i])
                prod[i] = 1.0
                d_a[i] += d_a32[i]
                d_b[i] += d_b32[i]
                d_a32[i] = 0.0
                d_b32[i] = 0.0
    return lin - logs, d_theta, d_a, d_b


class _FusedLoglik(Op):
    """A log-likelihood whose outputs are its value and its gradient with respect to its first ``n_params`` inputs
    (the parameters), then three data inputs (``item_dim``, ``y``, ``w``); the gradient of the value is read from
    the other outputs, so the logp and gradient of a model share one evaluation. No second derivatives."""

    n_params = 0

    def infer_shape(self, node: Apply, shapes: list[Any]) -> list[Any]:
        return [(), *shapes[: self.n_params]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        outputs = self.n_params + 1
        return [[True] * outputs] * self.n_params + [[False] * outputs] * 3

    def pullback(self, inputs: Sequence[Any], outputs: Sequence[Any], output_grads: Sequence[Any]) -> list[Any]:
        if any(not isinstance(g.type, DisconnectedType) for g in output_grads[1:]):
            raise NotImplementedError(f"{type(self).__name__} has no second derivatives")
        g = output_grads[0]
        disconnected = [DisconnectedType()() for _ in range(3)]
        return [g * out for out in outputs[1:]] + disconnected


class FusedBernoulliLogit(_FusedLoglik):
    """Log-likelihood of 1PL/2PL responses on a dense matrix, value and gradient in one pass.

    Inputs ``theta`` (subject, dim), ``a``, ``b`` (item), ``item_dim`` (int, item), ``y`` and ``w``
    (subject, item; w = 1 where observed). Outputs the log-likelihood and its gradient with respect to
    ``theta``, ``a`` and ``b``; the gradient of the first output is read from the others, so the logp
    and gradient of a model share one evaluation. Second derivatives are not available. ``single=True``
    computes the cells in float32 with float64 sums (:func:`_fused_kernel32`; ``y`` and ``w`` then float32).

    Examples
    --------
    >>> import pytensor
    >>> from irtbayes.core import irt
    >>> rng = np.random.default_rng(0)
    >>> theta, a, b = rng.normal(size=(5, 1)), np.exp(rng.normal(0, 0.2, 4)), rng.normal(size=4)
    >>> y, w = (rng.uniform(size=(5, 4)) < 0.5).astype(float), np.ones((5, 4))
    >>> w[0, 0] = 0.0  # one cell not observed
    >>> node = FusedBernoulliLogit().make_node(theta, a, b, np.zeros(4, dtype="int64"), y, w)
    >>> value, d_theta, d_a, d_b = pytensor.function([], node.outputs)()
    >>> expected = (w * irt.log_likelihood(y, irt.linear_predictor(theta, b, a))).sum()
    >>> bool(np.isclose(value, expected)), d_theta.shape, d_a.shape, d_b.shape
    (True, (5, 1), (4,), (4,))
    >>> step = np.array([0.0, 1e-6, 0.0, 0.0])  # the gradient in b matches a finite difference
    >>> moved = (w * irt.log_likelihood(y, irt.linear_predictor(theta, b + step, a))).sum()
    >>> bool(np.isclose(d_b[1], (moved - expected) / 1e-6, rtol=1e-4))
    True
    """

    __props__ = ("single",)
    n_params = 3

    def __init__(self, single: bool = False) -> None:
        self.single = bool(single)

    def make_node(self, *inputs: Any) -> Apply:
        theta, a, b, item_dim, y, w = inputs
        theta = pt.as_tensor_variable(theta).astype("float64")
        a = pt.as_tensor_variable(a).astype("float64")
        b = pt.as_tensor_variable(b).astype("float64")
        item_dim = pt.as_tensor_variable(item_dim).astype("int64")
        cells = "float32" if self.single else "float64"
        y = pt.as_tensor_variable(y).astype(cells)
        w = pt.as_tensor_variable(w).astype(cells)
        outputs = [pt.dscalar(), pt.dmatrix(), pt.dvector(), pt.dvector()]
        return Apply(self, [theta, a, b, item_dim, y, w], outputs)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        theta, a, b, item_dim, y, w = inputs
        kernel = _fused_kernel32 if self.single else _fused_kernel
        value, d_theta, d_a, d_b = kernel(
            np.ascontiguousarray(theta), a, b, item_dim, np.ascontiguousarray(y), np.ascontiguousarray(w)
        )
        output_storage[0][0] = np.asarray(value, dtype="float64")
        output_storage[1][0] = d_theta
        output_storage[2][0] = d_a
        output_storage[3][0] = d_b


fused_bernoulli_logit = FusedBernoulliLogit()
#: Bumped whenever the kernels change, so PyTensor's numba cache does not serve a stale one.
_FUSED_VERSION = 7


@register_funcify_default_op_cache_key(FusedBernoulliLogit)
def _numba_fused(op: FusedBernoulliLogit, node: Apply, **kwargs: Any) -> Any:
    kernel = _fused_kernel32 if op.single else _fused_kernel

    @numba_njit
    def fused(theta, a, b, item_dim, y, w):
        value, d_theta, d_a, d_b = kernel(theta, a, b, item_dim, y, w)
        return np.array(value), d_theta, d_a, d_b

    return fused, _FUSED_VERSION  # the key holds the Op's props too, so each precision has its own


@numba.njit(inline="always", error_model="numpy", cache=True)
def _take_logs(prod: np.ndarray, logs: float) -> float:
    """``logs`` plus the logs of the items' running products, which start again at 1 (the 2PL's kernels do the same
    in their own loops, which stay apart: with these helpers the float64 one ran 4% slower)."""
    for i in range(prod.shape[0]):
        logs += math.log(prod[i])
        prod[i] = 1.0
    return logs


@numba.njit(inline="always", error_model="numpy", cache=True)
def _row_abilities(theta: np.ndarray, j: int, item_dim: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Subject ``j``'s ability for each item (several ability dimensions), written to ``t``."""
    for i in range(t.shape[0]):
        t[i] = theta[j, item_dim[i]]
    return t


@numba.njit(inline="always", error_model="numpy", cache=True)
def _add_row(d_theta: np.ndarray, j: int, item_dim: np.ndarray, g_row: np.ndarray) -> None:
    """Adds the cells' gradients in ability of subject ``j`` to its dimensions'."""
    for i in range(g_row.shape[0]):
        d_theta[j, item_dim[i]] += g_row[i]


@numba.njit(nogil=True, fastmath=_FAST, error_model="numpy", cache=True)
def _floored_row(
    t: Any,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    log_1mc: np.ndarray,
    inv_1mc: np.ndarray,
    y_j: np.ndarray,
    w_j: np.ndarray,
    prod: np.ndarray,
    g_row: np.ndarray,
    grads: np.ndarray,
) -> tuple[float, float]:
    """One subject's cells of :func:`_floored_kernel`, as :func:`_fused_row`: accumulates the items' running
    products of 1 + e and their gradients (``grads``: rows a, b, c), writes the cells' gradients in ability to
    ``g_row``, returns (the row's gradient in ability, its terms other than -log(1 + e)). No call and no branch, so
    that the loop over items vectorises: e = exp(-|eta|) and the log of N are polynomials (:func:`_exp_nonpositive`,
    :func:`_log_positive`)."""
    acc = 0.0
    lin = 0.0
    for i in range(y_j.shape[0]):
        w_ji = w_j[i]
        y_ji = y_j[i]
        c_i = c[i]
        diff = _theta_at(t, i) - b[i]
        eta = a[i] * diff
        e = _exp_nonpositive(-abs(eta))
        prod[i] *= 1.0 + w_ji * e
        inv = 1.0 / (1.0 + e)
        up = eta >= 0.0
        sig = inv if up else e * inv
        n = c_i * (1.0 + e) + (1.0 - c_i) * (1.0 if up else e)  # p (1 + e): in [c, 1 + c], never 0 where c > 0
        inv_n = 1.0 / n
        lin += w_ji * (y_ji * _log_positive(n) + (1.0 - y_ji) * (log_1mc[i] - max(eta, 0.0)))
        r = w_ji * (y_ji * (1.0 - c_i) * e * inv * inv_n - (1.0 - y_ji) * sig)
        g = r * a[i]
        acc += g
        g_row[i] = g
        grads[0, i] += r * diff
        grads[1, i] -= g
        grads[2, i] += w_ji * (y_ji * (e if up else 1.0) * inv_n - (1.0 - y_ji) * inv_1mc[i])
    return acc, lin


@numba.njit(nogil=True, fastmath=_FAST, error_model="numpy", cache=True)
def _floored_kernel(
    theta: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    item_dim: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Value and gradient of the 3PL's sum_ij w_ij (y log p + (1 - y) log(1 - p)), p = c_i + (1 - c_i) sigmoid(eta),
    eta = a_i (theta_j,k(i) - b_i), in one pass (float64), subject by subject, items innermost
    (:func:`_floored_row`).

    With e = exp(-|eta|) and N = p (1 + e) = c (1 + e) + (1 - c) (1 if eta >= 0 else e): log p = log N - log(1 + e)
    and log(1 - p) = log(1 - c) - max(eta, 0) - log(1 + e), so a cell adds y log N + (1 - y) (log(1 - c) -
    max(eta, 0)) - log(1 + e), the last summed as the log of a running product per item (as in
    :func:`_fused_kernel`). The gradient in eta is y (1 - c) e / ((1 + e) N) - (1 - y) sigmoid(eta), in c
    y (1 - sigmoid(eta)) (1 + e) / N - (1 - y) / (1 - c). A floor of 0 (an item without options) with |eta| past
    708 takes e = exp(-708), the polynomial's least value.
    """
    n, m = y.shape
    d_theta = np.zeros_like(theta)
    grads = np.zeros((3, m))
    prod = np.ones(m)
    t = np.empty(m)
    g_row = np.empty(m)
    log_1mc = np.log1p(-c)
    inv_1mc = 1.0 / (1.0 - c)
    lin = 0.0
    logs = 0.0
    one_dim = theta.shape[1] == 1
    for j in range(n):
        if one_dim:
            acc, lin_j = _floored_row(theta[j, 0], a, b, c, log_1mc, inv_1mc, y[j], w[j], prod, g_row, grads)
            d_theta[j, 0] = acc
        else:
            row = _row_abilities(theta, j, item_dim, t)
            acc, lin_j = _floored_row(row, a, b, c, log_1mc, inv_1mc, y[j], w[j], prod, g_row, grads)
            _add_row(d_theta, j, item_dim, g_row)
        lin += lin_j
        if j % 512 == 511:
            logs = _take_logs(prod, logs)
    return lin - _take_logs(prod, logs), d_theta, grads[0].copy(), grads[1].copy(), grads[2].copy()


class FusedFlooredLogit(_FusedLoglik):
    """Log-likelihood of 3PL responses on a dense matrix, value and gradient in one pass (:func:`_floored_kernel`).

    Inputs ``theta`` (subject, dim), ``a``, ``b``, ``c`` (item), ``item_dim`` (int, item), ``y`` and ``w``
    (subject, item; w = 1 where observed). Outputs the log-likelihood and its gradient with respect to
    ``theta``, ``a``, ``b`` and ``c``; second derivatives are not available.

    Examples
    --------
    >>> import pytensor
    >>> from irtbayes.core import irt
    >>> rng = np.random.default_rng(0)
    >>> theta, a, b = rng.normal(size=(5, 1)), np.exp(rng.normal(0, 0.2, 4)), rng.normal(size=4)
    >>> c = np.array([0.25, 0.1, 0.2, 1e-12])
    >>> y, w = (rng.uniform(size=(5, 4)) < 0.5).astype(float), np.ones((5, 4))
    >>> w[0, 0] = 0.0
    >>> node = FusedFlooredLogit().make_node(theta, a, b, c, np.zeros(4, dtype="int64"), y, w)
    >>> value, d_theta, d_a, d_b, d_c = pytensor.function([], node.outputs)()
    >>> expected = (w * irt.log_likelihood(y, irt.linear_predictor(theta, b, a), c)).sum()
    >>> bool(np.isclose(value, expected))
    True
    >>> step = np.array([0.0, 1e-6, 0.0, 0.0])  # the gradients in b and c match finite differences
    >>> moved_b = (w * irt.log_likelihood(y, irt.linear_predictor(theta, b + step, a), c)).sum()
    >>> moved_c = (w * irt.log_likelihood(y, irt.linear_predictor(theta, b, a), c + step)).sum()
    >>> bool(np.isclose(d_b[1], (moved_b - expected) / 1e-6, rtol=1e-4))
    True
    >>> bool(np.isclose(d_c[1], (moved_c - expected) / 1e-6, rtol=1e-4))
    True
    """

    __props__ = ()
    n_params = 4

    def make_node(self, *inputs: Any) -> Apply:
        theta, a, b, c, item_dim, y, w = inputs
        floats = [pt.as_tensor_variable(x).astype("float64") for x in (theta, a, b, c)]
        item_dim = pt.as_tensor_variable(item_dim).astype("int64")
        y = pt.as_tensor_variable(y).astype("float64")
        w = pt.as_tensor_variable(w).astype("float64")
        outputs = [pt.dscalar(), pt.dmatrix(), pt.dvector(), pt.dvector(), pt.dvector()]
        return Apply(self, [*floats, item_dim, y, w], outputs)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        theta, a, b, c, item_dim, y, w = inputs
        results = _floored_kernel(
            np.ascontiguousarray(theta), a, b, c, item_dim, np.ascontiguousarray(y), np.ascontiguousarray(w)
        )
        output_storage[0][0] = np.asarray(results[0], dtype="float64")
        for k in range(1, 5):
            output_storage[k][0] = results[k]


@register_funcify_default_op_cache_key(FusedFlooredLogit)
def _numba_floored(op: FusedFlooredLogit, node: Apply, **kwargs: Any) -> Any:
    @numba_njit
    def floored(theta, a, b, c, item_dim, y, w):
        value, d_theta, d_a, d_b, d_c = _floored_kernel(theta, a, b, c, item_dim, y, w)
        return np.array(value), d_theta, d_a, d_b, d_c

    return floored, _FUSED_VERSION


def _warm_inputs(dtype: type) -> tuple[np.ndarray, ...]:
    """Small inputs of the types the compiled log-density passes the fused kernel (C-contiguous arrays; ``y`` and
    ``w`` of ``dtype``)."""
    y: np.ndarray = np.zeros((2, 3), dtype=dtype)
    return np.zeros((2, 1)), np.ones(3), np.zeros(3), np.zeros(3, dtype=np.int64), y, np.ones_like(y)


def warm_kernel32() -> None:
    """Compile :func:`_fused_kernel32` into numba's disk cache (:data:`KERNEL_WARMUPS`)."""
    _fused_kernel32(*_warm_inputs(np.float32))


def warm_kernel() -> None:
    """Compile :func:`_fused_kernel` into numba's disk cache (:data:`KERNEL_WARMUPS`)."""
    _fused_kernel(*_warm_inputs(np.float64))


#: The fused kernel of each precision (``ModelSpec.precision``), compiled in another process while a model that uses
#: it compiles on a first run (:func:`irtbayes.core.jit.compile_in_background`), so that the log-density's
#: compilation loads the kernel from the cache instead of compiling it (what that saves is measured on
#: docs/performance.md#a-cheaper-graph-to-compile-2026-12-06-night).
KERNEL_WARMUPS = {
    "float32": Warmup("irtbayes.model.likelihood:warm_kernel32", (_fused_kernel32,)),
    "float64": Warmup("irtbayes.model.likelihood:warm_kernel", (_fused_kernel,)),
}


def response_loglik(
    inputs: ModelInputs,
    ability: Any,
    difficulty: Any,
    discrimination: Any,
    guessing: Any,
    *,
    n_subjects: int,
) -> Any:
    """The summed log-likelihood of ``inputs.response`` (float64), in the layout of ``inputs.spec``: Bernoulli (the
    fractional-logit quasi-likelihood for scores in [0, 1]), or binomial where ``inputs.trials`` gives each response's
    number of trials (long or dense layout).

    Graded models (``spec.kind`` ``"grm"`` or ``"gpcm"``) pass their thresholds (item, Kmax - 1) as
    ``difficulty`` (see :func:`graded_terms`) and no guessing.
    """
    spec = inputs.spec
    if spec.kind in ("grm", "gpcm"):
        return _graded_loglik(inputs, ability, difficulty, discrimination, n_subjects=n_subjects)
    n_items = len(inputs.coords["item"])
    dtype = "float32" if spec.precision == "float32" else "float64"

    def cast(x: Any) -> Any:
        return pt.cast(x, dtype) if dtype == "float32" else x

    if spec.layout == "fused":
        if inputs.trials is not None:
            raise SpecError("layout='fused' weighs each cell 0 or 1; k successes of n trials use 'dense' or 'long'")
        single = spec.precision == "float32"
        y = np.zeros((n_subjects, n_items), dtype="float32" if single else "float64")
        w = np.zeros_like(y)
        y[inputs.subject_code, inputs.item_code] = inputs.response
        w[inputs.subject_code, inputs.item_code] = 1.0
        theta = ability if spec.dims == "domain" else ability[:, None]
        item_dim = inputs.item_domain if spec.dims == "domain" else np.zeros(n_items, dtype="int64")
        # shared, not constants: the compiled log-density then takes them as arguments, and PyTensor's and numba's
        # disk caches keep it whatever their size (numba will not cache code holding an array over 1 MB)
        responses = pytensor.shared(y, name="fused_responses", borrow=True)
        observed = pytensor.shared(w, name="fused_observed", borrow=True)
        dims = pytensor.shared(np.asarray(item_dim, dtype="int64"), name="item_dim")
        if guessing is not None:
            node = FusedFlooredLogit().make_node(theta, discrimination, difficulty, guessing, dims, responses, observed)
            return node.outputs[0]
        op = FusedBernoulliLogit(single=single)
        return op.make_node(theta, discrimination, difficulty, dims, responses, observed).outputs[0]
    if spec.layout == "dense":
        y = np.zeros((n_subjects, n_items), dtype=dtype)
        w = np.zeros((n_subjects, n_items), dtype=dtype)
        y[inputs.subject_code, inputs.item_code] = inputs.successes
        w[inputs.subject_code, inputs.item_code] = 1.0 if inputs.trials is None else inputs.trials
        if spec.dims == "domain":
            onehot = np.zeros((len(inputs.coords["dim"]), n_items), dtype=dtype)
            onehot[inputs.item_domain, np.arange(n_items)] = 1.0
            theta = cast(ability) @ pt.as_tensor(onehot)
        else:
            theta = cast(ability)[:, None]
        eta = cast(discrimination)[None, :] * (theta - cast(difficulty)[None, :])
        g = None if guessing is None else cast(guessing)[None, :]
        # shared (so one structure's compiled code serves any data) and named, so that the JAX sampler can pass
        # them as sharded arguments (:mod:`irtbayes.fitting.jaxnuts`)
        if inputs.trials is not None:  # k of n trials; a missing cell has n = 0 = k and adds nothing
            terms = _bernoulli_terms(pytensor.shared(y, name="responses"), eta, g, pytensor.shared(w, name="trials"))
        else:
            terms = _bernoulli_terms(pytensor.shared(y, name="responses"), eta, g)
            if not w.all():
                terms = pytensor.shared(w, name="observed") * terms
        # sum each subject's row in the working precision, the rows in float64
        return pt.cast(terms.sum(axis=1), "float64").sum()
    # shared, not constants: the compiled code then serves every data set of the model's structure
    s = pytensor.shared(inputs.subject_code, name="subject_code")
    i = pytensor.shared(inputs.item_code, name="item_code")
    if spec.dims == "domain":
        if inputs.item_domain is None:
            raise SpecError("dims='domain' needs each item's domain; build the inputs with model_inputs")
        theta = ability[s, pytensor.shared(inputs.item_domain[inputs.item_code], name="response_dim")]
    else:
        theta = ability[s]
    eta = cast(discrimination[i]) * (cast(theta) - cast(difficulty[i]))
    g = None if guessing is None else cast(guessing[i])
    n = None if inputs.trials is None else pytensor.shared(inputs.trials.astype(dtype), name="trials")
    terms = _bernoulli_terms(pytensor.shared(inputs.successes.astype(dtype), name="response"), eta, g, n)
    return pt.cast(terms, "float64").sum()


def _grm_terms(x: Any, z: Any, has_low: Any, has_high: Any) -> Any:
    """log P(Y = y) of the GRM from x = a (theta - b_y), z = a (theta - b_{y+1}) and whether each threshold exists
    (:func:`graded_terms` gives the formula)."""
    both = has_low & has_high
    gap = pt.switch(both, x - z, 1.0)  # a (b_{y+1} - b_y) > 0 when both exist
    terms = pt.switch(has_low, -pt.softplus(-x), 0.0) + pt.switch(has_high, -pt.softplus(z), 0.0)
    return terms + pt.switch(both, pt.log1mexp(-gap), 0.0)


def _grm_gathered(inputs: ModelInputs, theta: Any, discrimination: Any, thresholds: Any) -> Any:
    """The GRM's terms of :func:`graded_terms`, one per response, with the two thresholds around each response
    gathered by their place in the flattened (item, Kmax - 1) thresholds instead of picked from every threshold by
    a comparison: the same value from a graph of vectors, which compiles faster."""
    assert inputs.n_categories is not None
    width = len(inputs.coords["boundary"])  # the thresholds' columns, Kmax - 1
    y = inputs.response.astype("int64")
    top = np.asarray(inputs.n_categories, dtype="int64")[inputs.item_code] - 1
    base = inputs.item_code.astype("int64") * width
    has_low, has_high = y >= 1, y < top
    # b_y (below y) and b_{y+1} (above y); where one is absent, the item's first threshold stands in unused
    low = pytensor.shared(base + np.where(has_low, y - 1, 0), name="response_threshold_below")
    high = pytensor.shared(base + np.where(has_high, y, 0), name="response_threshold_above")
    flat = thresholds.reshape((-1,))
    return _grm_terms(
        discrimination * (theta - flat[low]),
        discrimination * (theta - flat[high]),
        pytensor.shared(has_low, name="response_has_below"),
        pytensor.shared(has_high, name="response_has_above"),
    )


def _graded_loglik(inputs: ModelInputs, ability: Any, thresholds: Any, discrimination: Any, *, n_subjects: int) -> Any:
    """The summed log-likelihood of graded responses, long or dense (the numpyro sampler's layout)."""
    spec = inputs.spec
    assert inputs.n_categories is not None
    n_items = len(inputs.coords["item"])
    if spec.precision == "float32":
        raise SpecError("graded models are fitted in float64 (precision='float32' is for the binary dense layout)")
    item_dim = inputs.item_domain if spec.dims == "domain" else None
    if spec.dims == "domain" and item_dim is None:
        raise SpecError("dims='domain' needs each item's domain; build the inputs with model_inputs")
    if spec.layout == "dense":
        y = np.zeros((n_subjects, n_items))
        w = np.zeros((n_subjects, n_items))
        y[inputs.subject_code, inputs.item_code] = inputs.response
        w[inputs.subject_code, inputs.item_code] = 1.0
        theta = ability[:, item_dim] if item_dim is not None else ability[:, None]
        terms = graded_terms(
            pt.constant(y, name="responses"),
            theta,
            discrimination[None, :],
            thresholds[None, :, :],
            inputs.n_categories[None, :],
            kind=spec.kind,
        )
        return (pt.constant(w, name="observed") * terms).sum()
    # shared, not constants: the compiled code then serves every data set of the model's structure
    s = pytensor.shared(inputs.subject_code, name="subject_code")
    i = pytensor.shared(inputs.item_code, name="item_code")
    if item_dim is not None:
        theta = ability[s, pytensor.shared(item_dim[inputs.item_code], name="response_dim")]
    else:
        theta = ability[s]
    if spec.kind == "grm":
        return _grm_gathered(inputs, theta, discrimination[i], thresholds).sum()
    terms = graded_terms(
        pytensor.shared(inputs.response.astype("int64"), name="response"),
        theta,
        discrimination[i],
        thresholds[i],
        pytensor.shared(inputs.n_categories[inputs.item_code], name="response_categories"),
        kind=spec.kind,
    )
    return terms.sum()
