"""Embedding tables' gradients in a replayed training step: one buffer per table, zeroed only where it was written.

Note [Reused table gradients]
Eager backward gives an embedding table ``W`` (read by one ``embedding(W, idx)``) a fresh dense gradient
each step: ``embedding_dense_backward`` zeroes a ``W``-sized tensor and adds each looked-up row's gradient
into it, though a batch touches few rows (the benchmark NCF: 1,024 lookups into tables of 10,000 and 5,000
rows of 64 floats; zeroing the two 3.8 MB tables is about a tenth of its step). A replayed step (Note
[Replay program] in ``_replay.py``) whose graph has the pattern below keeps the gradient it gave ``W`` last
time and, on the next call, zeroes only the rows it wrote then and adds this step's rows into it:

* the graph's forward reads ``W`` once, by ``embedding(W, idx, padding_idx < 0, scale_grad_by_freq=False,
  sparse=False)`` under grad mode; ``W`` is a contiguous 2-D float32/float64 leaf; the step starts with
  ``W.grad = None`` (``zero_grad(set_to_none=True)``, :func:`~._capture.grads_set_first`), has one
  ``backward()`` (accumulating into the leaves, no ``inputs``, no ``create_graph``), and after it reads ``W``
  only under ``no_grad`` (the optimizer) or through ``W.grad``;
* the replay runs the embedding on ``W.detach()`` with its result made a leaf, so backward stops there
  (it does not compute ``W``'s gradient); right after backward it writes ``W.grad``: the kept buffer with
  last step's rows zeroed (``index_fill_``) or, when there is none, zeros; then ``index_add_`` of the
  result's gradient at ``idx``, in index order, as ``embedding_dense_backward`` adds them (``0 + g1 + g2
  ...`` per row: the same bits);
* it keeps the buffer only while nothing else can see it change: at the next call ``W.grad`` must still be
  that buffer, unchanged (its version counter), with no other holder (no Python reference besides the
  program's, no view, no saved tensor of a graph: autograd's ``_holders``); otherwise the buffer is dropped
  and the step starts from zeros, as eager does. A call where any leaf of the graph has a backward hook
  (a hook could read ``W.grad`` during backward) runs the captured ops as they were.

What the step returns, every ``.grad`` and the optimizer's state are eager's values; only ``W.grad``'s
identity differs (the same tensor from step to step, where eager makes a new one), which nothing can tell
apart while no one else holds it. ``fb.compiler.config.reuse_table_grads = False`` turns this off.

Note [Table SGD]
Where a C++ compiler is at hand the buffer's rows are written by a generated kernel (``_KERNEL``, built once
per dtype, cached on disk as the fused kernels are) in one call: this step's rows in index order (``0 + g1 +
g2 ...``, as above) and the last step's other rows back to 0, with a per-row stamp of the call that last
wrote it (each thread of core's pool owns a range of rows and scans all the indices, so a row's sums keep
their order). The step's ``_fused_sgd_`` then goes through :class:`TableSgd`: a table whose gradient the kernel
wrote this call (and whose momentum buffer is a plain tensor of its shape) is stepped by the kernel, the
other parameters by the captured op. The kernel's update is core's ``sgd_loop``, the same expressions (so
the same contractions and bits), over rows, reading a row's gradient only where its stamp is this call's
and using 0, eager's dense gradient's value, elsewhere: the table's update passes over the parameter and
its momentum buffer (read and written) but not over the 3.8 MB of mostly-zero gradient of the benchmark
NCF's tables. Both tables are one job of core's pool, their rows split evenly among its threads. The
parameter's and buffer's version counters move as the fused op's do (a ``zero_`` of an empty view), so a
graph that saved a table before the step still refuses to backward.

Note [Table cat]
A ``cat([lookup, lookup, ...], 1)`` whose operands are all lookups of the plan's tables, each read by that cat
alone (the benchmark NCF's user and item embeddings), is one gather of the kernel straight into the cat's
rows: :meth:`TableGrad.forward` leaves its lookup to the cat (a sentinel stands for it), :class:`TableCat`
checks every index (one out of range: the ops run and raise eager's error, nothing written), gathers, and
makes the result the leaf backward stops at; each table's finish() reads its columns of that leaf's
gradient (rows of stride the cat's width). No lookup results, no copy into the cat, no copies of the
gradient's column slices into the lookups' leaves. The cat's values and the step's are eager's (copies of
the same rows). Any operand that is not left to the cat (a hook turned the reuse off) has the left ones
made as :meth:`TableGrad.forward` would and the cat run as captured.
"""

from __future__ import annotations

import ctypes
import hashlib
import sys
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_autograd._C import _holders, _leaf_has_hooks

from . import _cpp_kernel
from ._graph import Graph, Ref, refs_in

Tensor = fc.Tensor

_FLOATS = (fc.float32, fc.float64)

# One kernel, two calls (``c[0]``): 0 writes a batch's gradient rows into a table's gradient buffer, 1 steps
# SGD over tables. Its text follows LIGHT_POOL_PREAMBLE (_cpp_kernel.py), as the batch norm relu kernel's.
_KERNEL = r"""namespace {
using T = TYPE;
constexpr int64_t kMaxTables = 8;
constexpr int64_t kGrain = 32768;  // core's kGrainSize: elements per thread at least

// The rows idx[k] of grad get g's rows k in index order, 0 + g1 + g2 ... as embedding_dense_backward adds
// them (a row first written this call, stamp[r] != cur, starts from 0); then the rows of the last call
// (prev) not written now go back to 0. Each thread owns a range of rows [lo, hi) and scans all the indices
// (as core's embedding_dense_backward): a row's additions stay in index order on one thread.
struct Scatter {
  T* grad;
  const T* g;
  const int64_t *idx, *prev;
  int32_t* stamp;
  int64_t n, n_prev, d, per, gs;  // gs: the stride of g's rows
  int32_t cur;
};

inline void prefetch_row(const T* row, int64_t bytes) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 1);
}

// The lookups of tables whose results one cat joins along dim 1, written straight into the cat's rows: row k
// of table t at columns [offset, offset + d) of row k of out (ld columns).
struct Gather {
  T* out;
  const T* w[kMaxTables];
  const int64_t* idx[kMaxTables];
  int64_t d[kMaxTables], offset[kMaxTables];
  int64_t k, n, ld, per;
};

void gather_rows(void* ctx, int64_t chunk) {
  const Gather& s = *static_cast<const Gather*>(ctx);
  const int64_t lo = chunk * s.per, hi = lo + s.per < s.n ? lo + s.per : s.n;
  constexpr int64_t kAhead = 8;
  for (int64_t i = lo; i < hi; ++i) {
    for (int64_t t = 0; t < s.k; ++t) {
      const int64_t d = s.d[t];
      if (i + kAhead < hi) {
        const char* a = reinterpret_cast<const char*>(s.w[t] + s.idx[t][i + kAhead] * d);
        for (int64_t o = 0; o < d * static_cast<int64_t>(sizeof(T)); o += 64) __builtin_prefetch(a + o);
      }
      const T* __restrict src = s.w[t] + s.idx[t][i] * d;
      T* __restrict dst = s.out + i * s.ld + s.offset[t];
      for (int64_t j = 0; j < d; ++j) dst[j] = src[j];
    }
  }
}

void scatter_rows(void* ctx, int64_t chunk) {
  const Scatter& s = *static_cast<const Scatter*>(ctx);
  const int64_t lo = chunk * s.per, hi = lo + s.per, d = s.d, bytes = d * static_cast<int64_t>(sizeof(T));
  constexpr int64_t kAhead = 8;  // indices looked ahead for a prefetch: the rows' writes miss L2 (L3)
  for (int64_t k = 0; k < s.n; ++k) {
    if (k + kAhead < s.n && s.idx[k + kAhead] >= lo && s.idx[k + kAhead] < hi)
      prefetch_row(s.grad + s.idx[k + kAhead] * d, bytes);
    const int64_t r = s.idx[k];
    if (r < lo || r >= hi) continue;
    T* __restrict row = s.grad + r * d;
    const T* __restrict src = s.g + k * s.gs;
    if (s.stamp[r] != s.cur) {
      s.stamp[r] = s.cur;
      for (int64_t j = 0; j < d; ++j) row[j] = T(0) + src[j];
    } else {
      for (int64_t j = 0; j < d; ++j) row[j] = row[j] + src[j];
    }
  }
  for (int64_t k = 0; k < s.n_prev; ++k) {
    if (k + kAhead < s.n_prev) {
      const int64_t a = s.prev[k + kAhead];
      if (a >= lo && a < hi && s.stamp[a] != s.cur) prefetch_row(s.grad + a * d, bytes);
    }
    const int64_t r = s.prev[k];
    if (r < lo || r >= hi || s.stamp[r] == s.cur) continue;
    T* __restrict row = s.grad + r * d;
    for (int64_t j = 0; j < d; ++j) row[j] = T(0);
  }
}

struct Table {
  T *p, *buf;
  const T* grad;
  const int32_t* stamp;
  int64_t rows, d, first;  // first: the table's first row in the rows of all tables
  int32_t cur;
};

struct Sgd {
  Table t[kMaxTables];
  int64_t k, total, per;
  T wd, mom, neg_lr, keep;
  bool decay, maximize, nesterov, first_step;
};

// core's sgd_loop (src/cpu/foreach/foreach_kernels.inc), the same expressions, on n elements whose gradient
// is g, or 0 where g is null (a row no index of the batch named: eager's dense gradient holds 0 there).
inline T effective(T g, T p, T wd, bool maximize, bool decay) {
  if (maximize) g = -g;
  if (decay) g = g + wd * p;
  return g;
}

template <bool kZero>
void sgd_row(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n, const Sgd& h) {
  const T mom = h.mom, neg_lr = h.neg_lr, keep = h.keep, wd = h.wd;
  const bool maximize = h.maximize, decay = h.decay, nesterov = h.nesterov;
  if (h.first_step) {
    for (int64_t i = 0; i < n; ++i) {
      const T d = effective(kZero ? T(0) : g[i], p[i], wd, maximize, decay);
      buf[i] = d;
      p[i] = nesterov ? p[i] + neg_lr * (d + mom * d) : p[i] + neg_lr * d;
    }
  } else if (nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const T d = effective(kZero ? T(0) : g[i], p[i], wd, maximize, decay);
      const T b = buf[i] * mom + keep * d;
      buf[i] = b;
      p[i] = p[i] + neg_lr * (d + mom * b);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T d = effective(kZero ? T(0) : g[i], p[i], wd, maximize, decay);
      const T b = buf[i] * mom + keep * d;
      buf[i] = b;
      p[i] = p[i] + neg_lr * b;
    }
  }
}

void sgd_chunk(void* ctx, int64_t c) {
  const Sgd& h = *static_cast<const Sgd*>(ctx);
  const int64_t lo = c * h.per, hi = lo + h.per < h.total ? lo + h.per : h.total;
  for (int64_t k = 0; k < h.k; ++k) {
    const Table& t = h.t[k];
    const int64_t b = lo > t.first ? lo : t.first, e = hi < t.first + t.rows ? hi : t.first + t.rows;
    for (int64_t r = b - t.first; r < e - t.first; ++r) {
      const int64_t o = r * t.d;
      if (t.stamp[r] == t.cur)
        sgd_row<false>(t.p + o, t.grad + o, t.buf + o, t.d, h);
      else
        sgd_row<true>(t.p + o, nullptr, t.buf + o, t.d, h);
    }
  }
}
}  // namespace

// c: {0, n, n_prev, cur, d, rows, g's row stride} with ptr: {grad, g, idx, prev, stamp}; or {1, k, flags,
// then rows, d, cur per table} with ptr: {p, buf, grad, stamp} per table and h: {weight_decay, momentum, lr,
// dampening}; or the gather's (below).
extern "C" void NAME(void** ptr, int64_t* c, const double* h) {
  if (c[0] == 2) {  // c: {2, k, n, ld, then rows, d, offset per table}; ptr: {out, then w, idx per table}
    Gather s{};
    s.out = static_cast<T*>(ptr[0]), s.k = c[1] < kMaxTables ? c[1] : kMaxTables, s.n = c[2], s.ld = c[3];
    for (int64_t t = 0; t < s.k; ++t) {
      s.w[t] = static_cast<const T*>(ptr[1 + 2 * t]), s.idx[t] = static_cast<const int64_t*>(ptr[2 + 2 * t]);
      s.d[t] = c[5 + 3 * t], s.offset[t] = c[6 + 3 * t];
      for (int64_t i = 0; i < s.n; ++i) {
        if (s.idx[t][i] < 0 || s.idx[t][i] >= c[4 + 3 * t]) {  // the op raises its error: nothing written
          c[0] = -1;
          return;
        }
      }
    }
    int64_t threads = flambeau::in_parallel_region() ? 1 : flambeau::get_num_threads();
    if (threads > s.n * s.ld / kGrain) threads = s.n * s.ld / kGrain;
    s.per = threads > 1 ? (s.n + threads - 1) / threads : s.n;
    const int use = static_cast<int>(threads);
    if (threads > 1 && flambeau::detail::run_chunks_on_pool(threads, use, gather_rows, &s)) return;
    for (int64_t i = 0; i * s.per < s.n; ++i) gather_rows(&s, i);
    return;
  }
  if (c[0] == 0) {
    const int64_t* idx = static_cast<const int64_t*>(ptr[2]);
    for (int64_t k = 0; k < c[1]; ++k) {
      if (idx[k] < 0 || idx[k] >= c[5]) {  // changed since the embedding checked it: nothing written
        c[0] = -1;
        return;
      }
    }
    Scatter s{static_cast<T*>(ptr[0]), static_cast<const T*>(ptr[1]), idx, static_cast<int64_t*>(ptr[3]),
              static_cast<int32_t*>(ptr[4]), c[1], c[2], c[4], c[5], c[6], static_cast<int32_t>(c[3])};
    // Two threads where the rows written and zeroed are a grain of elements or more.
    int64_t threads = flambeau::in_parallel_region() ? 1 : flambeau::get_num_threads();
    if (threads > (s.n + s.n_prev) * s.d / kGrain) threads = (s.n + s.n_prev) * s.d / kGrain;
    if (threads > 1) {
      s.per = (c[5] + threads - 1) / threads;
      if (!flambeau::detail::run_chunks_on_pool(threads, static_cast<int>(threads), scatter_rows, &s))
        for (int64_t i = 0; i < threads; ++i) scatter_rows(&s, i);
    } else {
      scatter_rows(&s, 0);
    }
    int64_t* prev = static_cast<int64_t*>(ptr[3]);
    for (int64_t k = 0; k < s.n; ++k) prev[k] = idx[k];
    return;
  }
  Sgd s{};
  s.k = c[1] < kMaxTables ? c[1] : kMaxTables;
  const int64_t flags = c[2];
  s.decay = h[0] != 0, s.maximize = flags & 1, s.nesterov = flags & 2, s.first_step = flags & 4;
  s.wd = T(h[0]), s.mom = T(h[1]), s.neg_lr = T(-h[2]), s.keep = T(1 - h[3]);
  int64_t elements = 0;
  for (int64_t k = 0; k < s.k; ++k) {
    Table& t = s.t[k];
    t.p = static_cast<T*>(ptr[4 * k]), t.buf = static_cast<T*>(ptr[4 * k + 1]);
    t.grad = static_cast<const T*>(ptr[4 * k + 2]), t.stamp = static_cast<const int32_t*>(ptr[4 * k + 3]);
    t.rows = c[3 + 3 * k], t.d = c[4 + 3 * k], t.cur = static_cast<int32_t>(c[5 + 3 * k]);
    t.first = s.total;
    s.total += t.rows;
    elements += t.rows * t.d;
  }
  if (s.total == 0) return;
  // parallel_for's split (Note [Dynamic chunks]): a thread per grain of elements, up to 4 chunks a thread.
  int64_t threads = flambeau::in_parallel_region() ? 1 : flambeau::get_num_threads();
  if (threads > (elements + kGrain - 1) / kGrain) threads = (elements + kGrain - 1) / kGrain;
  const int64_t want = threads > 1 ? 4 * threads : 1;
  s.per = (s.total + want - 1) / want;
  const int64_t chunks = (s.total + s.per - 1) / s.per;
  if (threads > 1 && flambeau::detail::run_chunks_on_pool(chunks, static_cast<int>(threads), sgd_chunk, &s)) return;
  for (int64_t i = 0; i < chunks; ++i) sgd_chunk(&s, i);
}
"""


_CTYPES = {fc.float32: "float", fc.float64: "double"}
_kernels: dict[Any, Any] = {}  # dtype -> the loaded kernel, or None where it could not be built


def _kernel(dtype: Any) -> Any:
    """The kernel for ``dtype`` (built on first use), or None where it cannot be built (the ops run instead)."""
    try:
        return _kernels[dtype]
    except KeyError:
        pass
    text = _cpp_kernel.light_pool_text("table gradient kernel", _KERNEL).replace("TYPE", _CTYPES[dtype])
    name = "fb_table_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    try:
        fn = _cpp_kernel.kernel(text.replace("NAME", name), name, [ctypes.c_void_p] * 3)
    except RuntimeError:
        fn = None
    _kernels[dtype] = fn
    return fn


def _bump(t: Tensor, views: dict[int, tuple[int, Tensor]]) -> None:
    """Moves ``t``'s version counter, as an in-place op would: a zero_ of an empty view of it (kept per tensor)."""
    ptr = t.data_ptr()
    kept = views.get(id(t))
    if kept is None or kept[0] != ptr:
        kept = views[id(t)] = (ptr, t.view(-1)[:0])
    kept[1].zero_()


class TableStep:
    """The per-call state of a replayed step's reused table gradients (Note [Reused table gradients]).

    ``begin()`` runs first in the replay and decides whether this call takes the reuse path (no backward
    hook on any leaf of the graph); each :class:`TableGrad` then asks ``on``.
    """

    __slots__ = ("leaves", "on")

    def __init__(self, leaves: list[Tensor]) -> None:
        self.leaves = leaves  # every leaf constant of the graph that requires grad
        self.on = False

    def begin(self) -> None:
        self.on = not any(_leaf_has_hooks(t) for t in self.leaves)


class TableGrad:
    """One embedding table's gradient buffer across the calls of a replay (Note [Reused table gradients])."""

    __slots__ = (
        "step", "weight", "buffer", "version", "rows", "out", "idx", "on", "stamp", "cur", "prev", "ready", "cat",
        "deferred", "column",
    )  # fmt: skip

    def __init__(self, step: TableStep, weight: Tensor) -> None:
        self.step, self.weight = step, weight
        self.buffer: Tensor | None = None  # the gradient the last call gave weight
        self.version = -1  # its version counter then
        self.rows: Tensor | None = None  # the rows that call wrote (a copy of its indices)
        self.out: Tensor | None = None  # this call's embedding result, a leaf whose .grad backward fills
        self.idx: Tensor | None = None
        self.on = False
        # With the kernel (Note [Table SGD]): per row of the table, the last call that wrote it (int32), this
        # call's number, the rows the last call wrote (n_prev of them); ready: this call's gradient is written.
        self.stamp: Tensor | None = None
        self.cur = 0
        self.prev: tuple[Tensor, int] | None = None
        self.ready = False
        # Note [Table cat]: the cat that joins this lookup with others (set by plan), the lookup's arguments
        # while the cat has not run it, this call's column in the cat's result (its gradient's columns).
        self.cat: TableCat | None = None
        self.deferred: tuple[Any, ...] | None = None
        self.column = -1

    def clear(self) -> None:
        """Stands for the step's ``W.grad = None``; keeps the buffer only if nothing else can see it."""
        w, buf = self.weight, self.buffer
        self.on = self.step.on
        # References to buf: self.buffer, the local, getrefcount's argument. Handles of the tensor object: the
        # leaf's .grad, the Python object, _holders' argument; one owner of its memory (no view of it).
        if buf is not None and not (
            self.on
            and w.grad is buf
            and buf._version == self.version
            and sys.getrefcount(buf) == 3
            and _holders(buf) == (3, 1)
        ):
            self.buffer = self.rows = self.stamp = self.prev = None
        self.ready, self.deferred, self.column = False, None, -1
        w.grad = None

    def forward(self, fn: Callable[..., Tensor], w: Tensor, idx: Any, *rest: Any) -> Any:
        """The embedding; on the reuse path, of ``w.detach()`` with the result made a leaf, or left to the cat that
        reads it (Note [Table cat])."""
        self.column = -1
        if self.on and isinstance(idx, Tensor) and idx.dim() == 1 and idx.dtype == fc.int64:
            if self.cat is not None and idx.is_contiguous():
                self.deferred = (fn, w, idx, rest)
                return _DEFERRED
            out = fn(w.detach(), idx, *rest)
            out.requires_grad_(True)
            self.out, self.idx = out, idx
            return out
        self.on = False
        return fn(w, idx, *rest)

    def materialize(self) -> Tensor:
        """The lookup the cat left to this table: the embedding made now, as :meth:`forward` would have."""
        fn, w, idx, rest = self.deferred  # type: ignore[misc]
        self.deferred = None
        out = fn(w.detach(), idx, *rest)
        out.requires_grad_(True)
        self.out, self.idx = out, idx
        return out

    def finish(self) -> None:
        """Right after backward: gives the table its gradient, as ``embedding_dense_backward`` would."""
        if not self.on:
            return
        out, idx = self.out, self.idx
        self.out = self.idx = None
        if self.column >= 0:  # the cat's result holds the lookup (Note [Table cat]): its columns of the gradient
            out = self.cat.take()  # type: ignore[union-attr]
            g = out.grad if out is not None else None
            if g is not None:
                g = g[:, self.column : self.column + self.weight.shape[1]]
        else:
            g = out.grad if out is not None else None
        if g is None or idx is None:  # no gradient reached the table: eager leaves its .grad None
            return
        w, buf = self.weight, self.buffer
        kernel = _kernel(w.dtype) if g.dtype == w.dtype and g.dim() == 2 else None
        if kernel is not None and (self.stamp is not None or buf is None):
            self._scatter(kernel, w, g if g.stride(1) == 1 else g.contiguous(), idx)
            return
        # Neither requires grad (the buffer is the program's, g a gradient): autograd records nothing.
        if buf is None:
            buf = fc.zeros(w.shape, dtype=w.dtype)
        elif self.rows is not None:
            buf.index_fill_(0, self.rows, 0)
        elif self.prev is not None:  # the kernel wrote the last call's rows
            buf.index_fill_(0, self.prev[0][: self.prev[1]], 0)
            self.stamp = self.prev = None
        buf.index_add_(0, idx, g)
        self.rows = idx.clone()
        w.grad = buf
        self.buffer, self.version = buf, buf._version

    def _scatter(self, kernel: Any, w: Tensor, g: Tensor, idx: Tensor) -> None:
        """finish() by the kernel: this call's rows written, the last call's others zeroed, in one pass."""
        buf, n = self.buffer, idx.shape[0]
        if buf is None or self.stamp is None or self.prev is None or self.prev[0].shape[0] != n:
            if buf is None:
                buf = fc.zeros(w.shape, dtype=w.dtype)
            elif self.prev is not None:  # a batch of another size: the last rows zeroed as the ops would
                buf.index_fill_(0, self.prev[0][: self.prev[1]], 0)
            self.stamp, self.cur = fc.zeros(w.shape[0], dtype=fc.int32), 1
            self.prev = (fc.empty(n, dtype=fc.int64), 0)
        if self.cur >= 1 << 30:  # the call numbers start again
            self.stamp.zero_()
            self.cur = 1
        self.cur += 1
        prev, n_prev = self.prev
        ptrs = (ctypes.c_void_p * 5)(
            buf.data_ptr(), g.data_ptr(), idx.data_ptr(), prev.data_ptr(), self.stamp.data_ptr()
        )
        ints = (ctypes.c_int64 * 7)(0, n, n_prev, self.cur, w.shape[1], w.shape[0], g.stride(0))
        kernel(ptrs, ints, None)
        if ints[0] < 0:
            raise IndexError("index out of range in self")
        self.prev = (prev, n)
        w.grad = buf
        self.buffer, self.version, self.ready = buf, buf._version, True


_DEFERRED = object()  # a lookup TableGrad.forward left to the cat that reads it (Note [Table cat])


class TableCat:
    """Note [Table cat]: the step's ``cat`` of table lookups along dim 1, made by one gather of the kernel into the
    result's rows (no lookup results, no copy into the cat), the result a leaf whose gradient the tables read."""

    __slots__ = ("tables", "out", "pending")

    def __init__(self, tables: list[TableGrad]) -> None:
        self.tables = tables  # in the cat's order
        self.out: Tensor | None = None
        self.pending = 0  # tables that have not read this call's gradient yet

    def take(self) -> Tensor | None:
        """This call's result, for a table's finish(); dropped after the last table took it."""
        out = self.out
        self.pending -= 1
        if self.pending <= 0:
            self.out = None
        return out

    def __call__(self, op: Callable[..., Tensor], tensors: list[Any], *rest: Any) -> Tensor:
        self.out, self.pending = None, 0
        tables = self.tables
        if len(tensors) == len(tables) and all(x is _DEFERRED for x in tensors):
            out = self._gather()
            if out is not None:
                return out
        tensors = [t.materialize() if x is _DEFERRED else x for t, x in zip(tables, tensors, strict=True)]
        return op(tensors, *rest)

    def _gather(self) -> Tensor | None:
        tables = self.tables
        w0 = tables[0].weight
        if len(tables) > 8 or any(t.weight.dtype != w0.dtype or not t.weight.is_contiguous() for t in tables):
            return None
        n = tables[0].deferred[2].shape[0]  # type: ignore[index]
        if any(t.deferred[2].shape[0] != n for t in tables):  # type: ignore[index]
            return None
        kernel = _kernel(w0.dtype)
        if kernel is None:
            return None
        width = sum(t.weight.shape[1] for t in tables)
        out = fc.empty((n, width), dtype=w0.dtype)
        ptrs = [out.data_ptr()]
        ints = [2, len(tables), n, width]
        column = 0
        for t in tables:
            w, idx = t.weight, t.deferred[2]  # type: ignore[index]
            ptrs += [w.data_ptr(), idx.data_ptr()]
            ints += [w.shape[0], w.shape[1], column]
            column += w.shape[1]
        c = (ctypes.c_int64 * len(ints))(*ints)
        kernel((ctypes.c_void_p * len(ptrs))(*ptrs), c, None)
        if c[0] < 0:  # an index out of range: the ops raise eager's error
            return None
        column = 0
        for t in tables:
            t.idx, t.out, t.column, t.deferred = t.deferred[2], None, column, None  # type: ignore[index]
            column += t.weight.shape[1]
        out.requires_grad_(True)
        self.out, self.pending = out, len(tables)
        return out


class TableSgd:
    """The step's ``_fused_sgd_`` call (Note [Table SGD]): the tables whose gradient this call's kernel wrote step
    by the kernel, reading only their written rows; the other parameters go to ``op`` as captured."""

    __slots__ = ("op", "tables", "views")

    def __init__(self, op: Callable[..., Any], tables: list[TableGrad]) -> None:
        self.op, self.tables = op, tables
        self.views: dict[int, tuple[int, Tensor]] = {}  # for _bump

    def __call__(self, params: list[Tensor], grads: list[Any], bufs: list[Any], **hyper: Any) -> Any:
        done = self._tables(params, grads, bufs, hyper)
        if not done:
            return self.op(params, grads, bufs, **hyper)
        keep = [i for i in range(len(params)) if i not in done]
        if keep:
            self.op([params[i] for i in keep], [grads[i] for i in keep], [bufs[i] for i in keep], **hyper)
        return None

    def _tables(self, params: list[Tensor], grads: list[Any], bufs: list[Any], hyper: dict[str, Any]) -> list[int]:
        """Steps the tables the kernel can take; returns their indices in ``params``."""
        if len(hyper) != 7 or float(hyper["momentum"]) == 0 or len(bufs) != len(params) or fc.is_grad_enabled():
            return []
        done: list[int] = []
        ptrs: list[int] = []
        ints = [1, 0, int(bool(hyper["maximize"])) | 2 * bool(hyper["nesterov"]) | 4 * bool(hyper["is_first_step"])]
        dtype = None
        for t in self.tables:
            if not t.ready or len(done) == 8:
                continue
            w, g = t.weight, t.buffer
            i = next((k for k, p in enumerate(params) if p is w), -1)
            b = bufs[i] if i >= 0 else None
            if (
                i < 0
                or grads[i] is not g
                or type(b) is not Tensor
                or i in done
                or (dtype is not None and w.dtype != dtype)
            ):
                continue
            if not (
                b.dtype == w.dtype and b.shape == w.shape and b.is_contiguous() and b.is_cpu and not b.requires_grad
            ):
                continue
            dtype = w.dtype
            done.append(i)
            ptrs += [w.data_ptr(), b.data_ptr(), g.data_ptr(), t.stamp.data_ptr()]  # type: ignore[union-attr]
            ints += [w.shape[0], w.shape[1], t.cur]
        kernel = _kernel(dtype) if done else None
        if kernel is None:
            return []
        ints[1] = len(done)
        h = (ctypes.c_double * 4)(hyper["weight_decay"], hyper["momentum"], hyper["lr"], hyper["dampening"])
        kernel((ctypes.c_void_p * len(ptrs))(*ptrs), (ctypes.c_int64 * len(ints))(*ints), h)
        for i in done:  # the versions move, as the fused op's
            _bump(params[i], self.views)
            _bump(bufs[i], self.views)
        return done


# What may read a table's embedding result (a leaf on the reuse path): ops that neither write their input in
# place nor make a view of it that a later op could write.
_READERS = ("cat", "stack", "linear", "mul", "add", "sub", "sum", "mean", "matmul", "bmm", "relu")


def plan(
    graph: Graph, dead: list[list[int]]
) -> tuple[TableStep, dict[int, int], dict[int, TableGrad], dict[int, TableCat]] | None:
    """The tables of ``graph`` whose gradient a replay reuses: the step, {embedding node index: constant index},
    their :class:`TableGrad` by constant index and {cat node index: :class:`TableCat`} (Note [Table cat]); None
    when there is none. ``dead`` is
    :func:`~._replay._dead_after` of the graph.
    """
    backward = [i for i, n in enumerate(graph.nodes) if n.name == "backward"]
    if len(backward) != 1:
        return None
    b = graph.nodes[backward[0]]
    # (tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused, accumulate)
    if b.kwargs or len(b.args) != 7 or b.args[3] is not False or b.args[4] != [] or b.args[6] is not True:
        return None
    from ._capture import grads_set_first

    first = grads_set_first(graph)
    readers: dict[int, list[int]] = {}
    for index, node in enumerate(graph.nodes):
        for k in {r.index for r in refs_in((node.args, node.kwargs)) if r.kind == "const"}:
            readers.setdefault(k, []).append(index)
    tables: dict[int, int] = {}
    for k, users in readers.items():
        w = graph.constants[k]
        if id(w) not in first or not _table_like(w):
            continue
        emb = [i for i in users if graph.nodes[i].name not in ("Tensor.grad", "Tensor.grad=")]
        if not emb or emb[0] > backward[0] or not _embedding_of(graph.nodes[emb[0]], k):
            continue
        after = emb[1:]
        if any(i < backward[0] or graph.nodes[i].grad_enabled for i in after):
            continue  # another read of the table in the forward, or one that autograd records
        writes = [i for i in users if graph.nodes[i].name == "Tensor.grad="]
        if any(i > emb[0] for i in writes):
            continue  # the step sets the table's .grad itself
        reads = [i for i in users if graph.nodes[i].name == "Tensor.grad" and i < backward[0]]
        if any(graph.nodes[i].first_value not in dead[i] for i in reads):
            continue  # the step keeps the gradient of the last call (the reuse would overwrite it)
        if not _result_only_read(graph, emb[0]):
            continue
        tables[k] = emb[0]
    if not tables:
        return None
    step = TableStep([c for c in graph.constants if c.requires_grad and c.grad_fn is None])
    grads = {k: TableGrad(step, graph.constants[k]) for k in tables}
    return step, {i: k for k, i in tables.items()}, grads, _cats(graph, tables, grads)


def _cats(graph: Graph, tables: dict[int, int], grads: dict[int, TableGrad]) -> dict[int, TableCat]:
    """Note [Table cat]: {cat node index: its TableCat} for each ``cat([lookup, lookup, ...], 1)`` whose operands
    are all lookups of the plan's tables, read by that cat alone."""
    by_value = {graph.nodes[i].first_value: k for k, i in tables.items()}
    cats: dict[int, TableCat] = {}
    for index, node in enumerate(graph.nodes):
        if node.name != "cat" or node.kwargs or len(node.args) != 2 or node.args[1] not in (1, -1):
            continue
        operands = node.args[0]
        if type(operands) is not list or len(operands) < 2 or not node.grad_enabled:
            continue
        ks = [by_value.get(r.index) if isinstance(r, Ref) and r.kind == "value" else None for r in operands]
        if any(k is None for k in ks) or len(set(ks)) != len(ks):
            continue
        readers = [i for i, n in enumerate(graph.nodes) for r in operands if r in refs_in((n.args, n.kwargs))]
        if len(readers) != len(operands) or set(readers) != {index}:
            continue  # a lookup read by another op besides the cat
        cat = TableCat([grads[k] for k in ks])  # type: ignore[index]
        for k in ks:
            grads[k].cat = cat  # type: ignore[index]
        cats[index] = cat
    return cats


def _result_only_read(graph: Graph, index: int) -> bool:
    """The embedding's result is not returned and only ops of ``_READERS`` read it."""
    ref = Ref("value", graph.nodes[index].first_value)
    if ref in refs_in(graph.output):
        return False
    return all(n.name in _READERS for n in graph.nodes[index + 1 :] if ref in refs_in((n.args, n.kwargs)))


def _table_like(w: Tensor) -> bool:
    return (
        w.requires_grad
        and w.grad_fn is None
        and w.dtype in _FLOATS
        and w.dim() == 2
        and w.is_contiguous()
        and w.device.type == "cpu"
    )


def _embedding_of(node: Any, k: int) -> bool:
    a = node.args
    return (
        node.name == "embedding"
        and node.grad_enabled
        and not node.kwargs
        and node.results == [()]
        and len(a) == 5
        and a[0] == Ref("const", k)
        and isinstance(a[1], Ref)
        and type(a[2]) is int
        and a[2] < 0
        and a[3] is False
        and a[4] is False
        and all(not (isinstance(x, Ref) and x.kind == "const" and x.index == k) for x in a[1:])
    )
