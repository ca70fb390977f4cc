"""A training batch norm and the relu of its result as one node of a generated kernel (Note [Batch norm relu]).

Note [Batch norm relu]
~~~~~~~~~~~~~~~~~~~~~~
Eager training runs ``relu(batch_norm(x))`` in five passes over the activation forward (the statistics,
the affine result, the relu's read and write) and eight backward (``threshold_backward`` reads the
gradient and the relu's result and writes the masked gradient, the batch norm's backward reads it and
``x`` twice and writes ``dx``): about a quarter of the benchmark MobileNet's compiled training step, whose
activations do not fit in the cache. The two ops here are one ``autograd.Function`` node of a kernel
compiled on demand (its text in ``_KERNEL``, built and cached as Note [Fused kernel] in ``_cpp_kernel.py``):

- forward, per channel: one pass for the mean and variance, one that writes the relu of the affine
  result; the running statistics are updated as eager's, through ``copy_`` so that their version counters
  move (a folded eval convolution then refolds);
- backward, per channel: one pass for the sums of the masked gradient and of its product with ``x - mean``
  (the mask recomputed from ``x`` by the forward's expression, so the same elements pass), one that
  writes ``dx``; the weight's and bias's gradients are those sums.

Each sum, formula and cast is core's (``norm_batch.cpp``, ``norm_kernels.inc``: a row summed in blocks of
2048 in float32, the rows added in double; the loops at core's AVX-512 vector width), so the results,
the statistics and the gradients are eager's bits, and training does not drift from eager over steps.
The epilogue pass (``_epilogue.py``) rewrites a grad-mode ``native_batch_norm(x, w, b, running_mean,
running_var, training=True, momentum, eps)`` of a contiguous float32 4-D ``x`` with all four tensors,
whose result only a following ``relu`` reads (its saved mean and inverse deviation unread), and checks the
node at capture against the eager ops on two images of the recorded input (results, statistics and
gradients; the statistics are copies).
"""

from __future__ import annotations

import ctypes
import hashlib
from typing import Any

import flambeau_autograd as ag
import flambeau_core as fc
from flambeau_autograd import Function
from flambeau_core._C import _set_grad_enabled

from . import _checked, _cpp_kernel

Tensor = fc.Tensor

# One kernel for both directions (c[3]: 0 forward, 1 backward), one channel per call of ``channel``, the
# channels shared by core's thread pool. Its text follows LIGHT_POOL_PREAMBLE (_cpp_kernel.py: no standard
# header but <cstdint>): it builds in about a tenth of a fused kernel's time.
_KERNEL = r"""#pragma GCC target("prefer-vector-width=512")  // core's AVX-512 loops' width: the same order of sums

namespace {
using T = float;

struct Args {
  const T *x, *w, *bb, *rm, *rv;
  T *y, *sm, *si, *st;
  const T* g;
  T *dx, *dw, *db;
  int64_t N, C, HW;
  double M, mom, eps;
};

// The sums of rows as core's row_moments and row_dot2 take them (blocks of kNormBlock = 2048 elements
// summed in T, added in double), so that the statistics, the result and the gradients are eager's bits.
constexpr int64_t kBlock = 2048;

struct Pair {
  T u, v;
};

// s1 and s2 += the sums over i < n of the two terms f(i) gives, as core sums a row. f comes by value and holds
// its pointers by value: a closure reached through a reference (or holding references) stays in memory that the
// reduction's lanes might alias, and GCC then loads each element with a gather.
template <class F>
inline void row_sums(int64_t n, F f, double& s1, double& s2) {
  double a1 = 0, a2 = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = b + kBlock < n ? b + kBlock : n;
    T t1 = 0, t2 = 0;
#pragma omp simd reduction(+ : t1, t2)
    for (int64_t i = b; i < e; ++i) {
      const Pair t = f(i);
      t1 += t.u;
      t2 += t.v;
    }
    a1 += t1;
    a2 += t2;
  }
  s1 += a1;
  s2 += a2;
}

void forward(const Args& a, int64_t ch) {
  const int64_t N = a.N, C = a.C, HW = a.HW;
  const T pivot = a.x[ch * HW];
  double s1 = 0, s2 = 0;
  for (int64_t n = 0; n < N; ++n) {
    const T* __restrict p = a.x + (n * C + ch) * HW;
    row_sums(HW, [p, pivot](int64_t i) {
      const T d = p[i] - pivot;
      return Pair{d, d * d};
    }, s1, s2);
  }
  const double count = a.M, m1 = s1 / count, spread = s2 / count - m1 * m1, var = spread > 0 ? spread : 0.0;
  const T mean = static_cast<T>(static_cast<double>(pivot) + m1);
  const T invstd = static_cast<T>(1.0 / __builtin_sqrt(var + a.eps));
  a.sm[ch] = mean;
  a.si[ch] = invstd;
  const double mom = a.mom, unbias = count > 1 ? count / (count - 1) : __builtin_inf();
  a.st[ch] = static_cast<T>((1.0 - mom) * static_cast<double>(a.rm[ch]) + mom * static_cast<double>(mean));
  a.st[C + ch] = static_cast<T>((1.0 - mom) * static_cast<double>(a.rv[ch]) + mom * var * unbias);
  const T scale = invstd * a.w[ch], shift = a.bb[ch];
  for (int64_t n = 0; n < N; ++n) {
    const T* __restrict p = a.x + (n * C + ch) * HW;
    T* __restrict o = a.y + (n * C + ch) * HW;
#pragma omp simd
    for (int64_t i = 0; i < HW; ++i) {
      const T v = (p[i] - mean) * scale + shift;
      o[i] = v < 0 ? T(0) : v;  // (NaN stays NaN, as relu's)
    }
  }
}

void backward(const Args& a, int64_t ch) {
  const int64_t N = a.N, C = a.C, HW = a.HW;
  const T mean = a.sm[ch], invstd = a.si[ch], scale = invstd * a.w[ch], shift = a.bb[ch];
  double sdy = 0, sdyx = 0;
  for (int64_t n = 0; n < N; ++n) {
    const T* __restrict p = a.x + (n * C + ch) * HW;
    const T* __restrict gp = a.g + (n * C + ch) * HW;
    row_sums(HW, [p, gp, mean, scale, shift](int64_t i) {
      const T y = (p[i] - mean) * scale + shift;  // the forward's expression: the same elements pass
      const T gm = y <= 0 ? T(0) : gp[i];
      return Pair{gm, gm * (p[i] - mean)};
    }, sdy, sdyx);
  }
  const double is = static_cast<double>(invstd), wc = static_cast<double>(a.w[ch]), inv_count = 1.0 / a.M;
  a.dw[ch] = static_cast<T>(sdyx * is);
  a.db[ch] = static_cast<T>(sdy);
  const T k1 = static_cast<T>(is * wc), k2 = static_cast<T>(-is * is * is * wc * sdyx * inv_count);
  const T k3 = static_cast<T>(-is * wc * sdy * inv_count);
  for (int64_t n = 0; n < N; ++n) {
    const T* __restrict p = a.x + (n * C + ch) * HW;
    const T* __restrict gp = a.g + (n * C + ch) * HW;
    T* __restrict o = a.dx + (n * C + ch) * HW;
#pragma omp simd
    for (int64_t i = 0; i < HW; ++i) {
      const T v = (p[i] - mean) * scale + shift;
      const T gm = v <= 0 ? T(0) : gp[i];
      o[i] = gm * k1 + (p[i] - mean) * k2 + k3;
    }
  }
}

void channel(void* ctx, int64_t ch) {
  const Args& a = *static_cast<const Args*>(ctx);
  if (a.g)
    backward(a, ch);
  else
    forward(a, ch);
}
}  // namespace

extern "C" void NAME(const T* x, const T* w, const T* bb, const T* rm, const T* rv, T* y, T* sm, T* si, T* st,
                     const T* g, T* dx, T* dw, T* db, const double* c) {
  Args a{x, w, bb, rm, rv, y, sm, si, st, g, dx, dw, db, static_cast<int64_t>(c[0]), static_cast<int64_t>(c[1]),
         static_cast<int64_t>(c[2]), c[0] * c[2], c[3], c[4]};
  const int threads = flambeau::get_num_threads();
  const int use = static_cast<int64_t>(threads) < a.C ? threads : static_cast<int>(a.C);
  if (use > 1 && !flambeau::in_parallel_region() && flambeau::detail::run_chunks_on_pool(a.C, use, channel, &a)) return;
  for (int64_t ch = 0; ch < a.C; ++ch) channel(&a, ch);
}
"""


def _kernel_named() -> tuple[Any, str]:
    """The kernel and its name (which holds the hash of its text); ``RuntimeError`` if it cannot be built."""
    text = _cpp_kernel.light_pool_text("batch norm relu kernel", _KERNEL)
    name = "fb_bn_relu_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return _cpp_kernel.kernel(text.replace("NAME", name), name, [ctypes.c_void_p] * 14), name


class BatchNormReLU(Function):
    """Note [Batch norm relu]: ``apply(kernel, x, weight, bias, running_mean, running_var, momentum, eps)``."""

    @staticmethod
    def forward(ctx: Any, kernel: Any, x: Tensor, w: Tensor, b: Tensor, rm: Tensor, rv: Tensor, mom: float,
                eps: float) -> Tensor:  # fmt: skip
        n, c, h, wd = x.shape
        y = fc.empty_like(x)
        sm, si, st = fc.empty(c), fc.empty(c), fc.empty(2, c)
        consts = (ctypes.c_double * 5)(n, c, h * wd, mom, eps)
        kernel(x.data_ptr(), w.data_ptr(), b.data_ptr(), rm.data_ptr(), rv.data_ptr(), y.data_ptr(), sm.data_ptr(),
               si.data_ptr(), st.data_ptr(), None, None, None, None, ctypes.addressof(consts))  # fmt: skip
        rm.copy_(st[0])
        rv.copy_(st[1])
        ctx.kernel = kernel
        ctx.save_for_backward(x, w, b, sm, si)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w, b, sm, si = ctx.saved_tensors
        if fc.is_grad_enabled():  # create_graph=True: the eager ops, differentiable
            with ag.enable_grad():
                xs = x.detach().requires_grad_(x.requires_grad)
                y = fc.relu((xs - sm.reshape(1, -1, 1, 1)) * si.reshape(1, -1, 1, 1) * w.reshape(1, -1, 1, 1)
                            + b.reshape(1, -1, 1, 1))  # fmt: skip
                return (None, *ag.grad([y], [xs, w, b], [g], create_graph=True, allow_unused=True), None, None,
                        None, None)  # fmt: skip
        g = g.contiguous()
        dx, dw, db = fc.empty_like(x), fc.empty_like(w), fc.empty_like(b)
        n, c, h, wd = x.shape
        consts = (ctypes.c_double * 5)(n, c, h * wd, 0, 0)
        ctx.kernel(x.data_ptr(), w.data_ptr(), b.data_ptr(), None, None, None, sm.data_ptr(), si.data_ptr(), None,
                   g.data_ptr(), dx.data_ptr(), dw.data_ptr(), db.data_ptr(), ctypes.addressof(consts))  # fmt: skip
        return None, dx, dw, db, None, None, None, None


def batch_norm_relu(
    kernel: Any, x: Tensor, w: Tensor, b: Tensor, rm: Tensor, rv: Tensor, mom: float, eps: float
) -> Tensor:
    """The replayed node: the fused node on the tensors it was made for, else eager's two ops."""
    if x.dtype != fc.float32 or x.dim() != 4 or not x.is_contiguous() or x.numel() == 0:
        return fc.relu(fc.native_batch_norm(x, w, b, rm, rv, True, mom, eps)[0])
    return BatchNormReLU.apply(kernel, x, w, b, rm, rv, mom, eps)


def _suits(t: Any) -> bool:
    return isinstance(t, Tensor) and t.dtype == fc.float32 and t.is_cpu and t.is_contiguous() and t.dim() == 1


def rewrite(bn: Any, tensor_of: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """The target and arguments replacing ``bn`` and ``relu`` (Note [Batch norm relu]), or ``None``."""
    x_ref, w_ref, b_ref, rm_ref, rv_ref, training, mom, eps = bn.args
    if training is not True or type(mom) is not float or type(eps) is not float:
        return None
    if not all(getattr(r, "kind", None) == "const" for r in (w_ref, b_ref, rm_ref, rv_ref)):
        return None
    x, w, b, rm, rv = (tensor_of(r) for r in (x_ref, w_ref, b_ref, rm_ref, rv_ref))
    if not (isinstance(x, Tensor) and x.dtype == fc.float32 and x.is_cpu and x.dim() == 4 and x.is_contiguous()):
        return None
    if x.numel() == 0 or not all(_suits(t) and t.shape[0] == x.shape[1] for t in (w, b, rm, rv)):
        return None
    try:
        kernel, name = _kernel_named()
    except RuntimeError:
        return None
    sample = x[:2].contiguous()  # two images: the check's cost stays small
    digest = _agreement_digest(name, sample, mom, eps)
    if not _checked.agreed_before(digest):
        if not _agrees(kernel, sample, w, b, rm, rv, mom, eps):
            return None
        _checked.record_agreement(digest)
    return batch_norm_relu, (kernel, x_ref, w_ref, b_ref, rm_ref, rv_ref, mom, eps)


# Note [Batch norm relu agreement records]
# ``_agrees`` runs the node and eager's ops once per rewritten batch norm at every capture: on the benchmark
# MobileNet (11 of them) a third of a warm compile, whose graph check a record of an earlier process already
# stands for (Note [Checked captures] in ``_checked.py``). A passed agreement is recorded the same way, in the
# same folder and format, under a fingerprint of what the verdict depends on besides the values: the
# environment of the graph records (Python, the machine and its ISA, every library and Python file of
# flambeau's packages by size and time, so any rebuild or edit voids it), the kernel (its name holds the hash
# of its text), the sample's shape, and the momentum and eps. A later capture with the same fingerprint skips
# the check; as with the graph records, what a record cannot vouch for is the values (the check ran on the
# earlier process's). ``config.reuse_checks`` off checks every time.
def _agreement_digest(name: str, sample: Tensor, mom: float, eps: float) -> str:
    return _checked.agreement_digest("batch norm relu agrees", name, tuple(sample.shape), mom, eps)


def _agrees(kernel: Any, x: Tensor, w: Tensor, b: Tensor, rm: Tensor, rv: Tensor, mom: float, eps: float) -> bool:
    """The node and the eager ops on the recorded input and the current parameters (an optimizer step of the
    captured function may have changed them since), on copies of the statistics: the same result, running
    statistics and gradients within float32 rounding."""
    grad = fc.is_grad_enabled()
    _set_grad_enabled(True)
    try:
        results = []
        for fused in (True, False):
            xs, ws, bs = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
            m, v = rm.clone(), rv.clone()
            if fused:
                y = BatchNormReLU.apply(kernel, xs, ws, bs, m, v, mom, eps)
            else:
                y = fc.relu(fc.native_batch_norm(xs, ws, bs, m, v, True, mom, eps)[0])
            ramp = ((fc.arange(y.numel(), dtype=y.dtype) % 7 - 3) * 0.25).reshape(y.shape)
            results.append([y.detach(), m, v, *ag.grad([y], [xs, ws, bs], [ramp])])
    finally:
        _set_grad_enabled(grad)
    mine, theirs = results
    return all(bool(((a - e).abs() <= 1e-6 + 1e-5 * e.abs()).all()) for a, e in zip(mine, theirs, strict=True))
