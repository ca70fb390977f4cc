// CPU kernels of the "shape" section of the op table: flip, tril/triu,
// repeat_interleave(repeats), index_add/index_copy/index_fill, masked_fill,
// scatter (src, value, reduce) and scatter_reduce.
//
// Ops that only move elements (flip, tril/triu, index_copy, scatter without a
// reduction) are written over the element size, not the dtype: they work for
// every dtype, including those added later. Every index is checked against its
// dim before anything is written (IndexError naming the op, the index and the
// size). index_add, index_copy, index_fill, scatter, scatter_add and scatter_reduce are structured ops
// (Note [Structured kernels]): out kernels whose out starts as a copy of self (cpu::write_over_self), so
// the in-place forms write self itself; flip, tril/triu and masked_fill are structured too (out kernels
// writing contiguous results: cpu::write_contiguous); repeat_interleave returns a fresh tensor.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/elementwise/wrapping.h"
#include "cpu/indexing/out_writes.h"
#include "flambeau/error.h"
#include "flambeau/index_bounds_error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/nn_utils.h"
#include "generic/shape_utils.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {

/// Calls f(type_tag<U>) with an unsigned type of the dtype's size: moving elements needs no more.
template <class F>
void visit_bytes(ScalarType t, const char* op, F&& f) {
  switch (itemsize(t)) {
    case 1:
      return f(type_tag<uint8_t>{});
    case 2:
      return f(type_tag<uint16_t>{});
    case 4:
      return f(type_tag<uint32_t>{});
    case 8:
      return f(type_tag<uint64_t>{});
    case 16: {
      struct alignas(16) B16 {
        uint64_t lo, hi;
      };
      return f(type_tag<B16>{});
    }
    default:
      throw TypeError(detail::cat_str("[", op, "] dtype ", dtype_name(t), " is not supported"));
  }
}

// float16/bfloat16 accumulate in float32 (the result rounded once), as the elementwise ops do.
bool is_half_dtype(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }
Tensor to_f32(const Tensor& t) { return op::cast(t, ScalarType::Float32); }

template <class T>
inline constexpr bool kIsComplexType =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// The bytes of value as one element of dtype t (any dtype: complex, half, ...).
template <class U>
U value_bytes(const Scalar& value, ScalarType t) {
  U v;
  const Tensor vt = scalar_tensor(value, t);
  std::memcpy(static_cast<void*>(&v), vt.data_ptr(), sizeof(U));
  return v;
}

Tensor contiguous_copy(const Tensor& t) { return op::clone(t, MemoryFormat::Contiguous); }
Tensor as_contiguous(const Tensor& t) { return t.is_contiguous() ? t : contiguous_copy(t); }

// ---- flip ----

// Note [Structured kernels]: out has self's shape and dtype; the check step checked dims.
void flip_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dims) {
  const int64_t nd = self.dim();
  const int64_t n = self.numel();
  if (n == 0) return;
  std::vector<bool> flipped(static_cast<size_t>(nd), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1), "flip");
    if (w < nd) flipped[static_cast<size_t>(w)] = true;  // a 0-d tensor's dim 0 moves nothing
  }
  // The source as a view with negative strides along the flipped dims, copied row by row.
  Shape sizes, strides;
  int64_t base = 0;
  for (int64_t k = 0; k < nd; ++k) {
    const int64_t s = self.sizes()[k], st = self.strides()[k];
    if (s == 1) continue;
    if (flipped[k]) base += (s - 1) * st;
    const int64_t sst = flipped[k] ? -st : st;
    if (!sizes.empty() && strides.back() == sst * s) {  // merge with the previous dim
      sizes.back() *= s;
      strides.back() = sst;
    } else {
      sizes.push_back(s);
      strides.push_back(sst);
    }
  }
  if (sizes.empty()) sizes = {1}, strides = {1};
  const int64_t row = sizes.back(), rstride = strides.back();
  const int64_t rows = n / row;
  const auto od = static_cast<int64_t>(sizes.size()) - 1;  // outer dims
  cpu::write_contiguous(out, self, [&](const Tensor& result) {
    visit_bytes(self.dtype(), "flip", [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* src = static_cast<const U*>(self.data_ptr()) + base;
      U* dst = static_cast<U*>(result.data_ptr());
      parallel_for(0, rows, std::max<int64_t>(1, kMemoryBoundGrain / row), [&](int64_t r0, int64_t r1) {
        Shape pos(od, 0);
        int64_t off = 0, q = r0;
        for (int64_t k = od - 1; k >= 0; --k) {
          pos[k] = q % sizes[k];
          q /= sizes[k];
          off += pos[k] * strides[k];
        }
        for (int64_t r = r0; r < r1; ++r) {
          const U* s = src + off;
          U* d = dst + r * row;
          if (rstride == 1) {
            std::memcpy(static_cast<void*>(d), s, static_cast<size_t>(row) * sizeof(U));
          } else if (rstride == -1) {
            for (int64_t i = 0; i < row; ++i) d[i] = s[-i];
          } else {
            for (int64_t i = 0; i < row; ++i) d[i] = s[i * rstride];
          }
          for (int64_t k = od - 1; k >= 0; --k) {
            if (++pos[k] < sizes[k]) {
              off += strides[k];
              break;
            }
            off -= (sizes[k] - 1) * strides[k];
            pos[k] = 0;
          }
        }
      });
    });
  });
}

// ---- tril / triu ----

// Note [Structured kernels]: out has self's shape and dtype (self itself for tril_/triu_: the result is
// written into a new tensor and copied in, as before); the check step checked the dims.
void triangle_out(const Tensor& out, const Tensor& self, int64_t diagonal, bool lower) {
  const int64_t n = self.sizes()[self.dim() - 2], m = self.sizes()[self.dim() - 1];
  if (self.numel() == 0) return;
  const Tensor src = as_contiguous(self);
  const int64_t rows = self.numel() / m;
  const auto isz = static_cast<size_t>(itemsize(self.dtype()));
  const auto* s = static_cast<const char*>(src.data_ptr());
  cpu::write_contiguous(out, self, [&](const Tensor& result) {
    auto* d = static_cast<char*>(result.data_ptr());
    parallel_for(0, rows, std::max<int64_t>(1, kMemoryBoundGrain / m), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % n;
        // lower: columns [0, i + diagonal] kept; upper: [i + diagonal, m) kept (clamped, without overflow).
        const int64_t edge = lower ? (diagonal >= m - i ? m : std::max<int64_t>(0, i + diagonal + 1))
                                   : (diagonal >= m - i ? m : std::max<int64_t>(0, i + diagonal));
        const size_t at = static_cast<size_t>(r * m) * isz, e = static_cast<size_t>(edge) * isz,
                     all = static_cast<size_t>(m) * isz;
        if (lower) {
          std::memcpy(d + at, s + at, e);
          std::memset(d + at + e, 0, all - e);
        } else {
          std::memset(d + at, 0, e);
          std::memcpy(d + at + e, s + at + e, all - e);
        }
      }
    });
  });
}

void tril_out_cpu(const Tensor& out, const Tensor& self, int64_t diagonal) {
  triangle_out(out, self, diagonal, true);
}
void triu_out_cpu(const Tensor& out, const Tensor& self, int64_t diagonal) {
  triangle_out(out, self, diagonal, false);
}

// ---- repeat_interleave(repeats) ----

Tensor repeat_interleave_tensor_cpu(const Tensor& repeats, std::optional<int64_t> output_size) {
  FB_CHECK_TYPE(repeats.dtype() == ScalarType::Int64 || repeats.dtype() == ScalarType::Int32,
                "[repeat_interleave] repeats must be an int64 or int32 tensor, got dtype ",
                dtype_name(repeats.dtype()));
  FB_CHECK_VALUE(repeats.dim() <= 1, "[repeat_interleave] repeats must be 0-d or 1-d, got shape ",
                 shape_str(repeats.sizes()));
  const Tensor r = as_contiguous(to_dtype(repeats, ScalarType::Int64));
  const int64_t* rp = r.data<int64_t>();
  const int64_t n = r.numel();
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    FB_CHECK_VALUE(rp[i] >= 0, "[repeat_interleave] repeats can not be negative, got ", rp[i], " at ", i);
    FB_CHECK_VALUE(!__builtin_add_overflow(total, rp[i], &total),
                   "[repeat_interleave] the repeats overflow int64");
  }
  FB_CHECK_VALUE(!output_size || *output_size == total, "[repeat_interleave] output_size ",
                 output_size.value_or(0), " does not match the sum of repeats ", total);
  shape_nbytes(Shape{total}, ScalarType::Int64, "repeat_interleave");
  Tensor out = op::empty(Shape{total}, ScalarType::Int64, repeats.device());
  int64_t* o = out.data<int64_t>();
  for (int64_t i = 0, at = 0; i < n; ++i)
    for (int64_t k = 0; k < rp[i]; ++k) o[at++] = i;
  return out;
}

// ---- index_add / index_copy / index_fill: slices of self along dim ----

/// The int64 indices (contiguous), each checked in [0, size), or with `wrap_negative` in [-size, size) and
/// a negative one counted from the end (index_fill's rule in PyTorch; index_add and index_copy refuse
/// negatives). Their dtype and rank passed meta::check_index_slices, as did the source's dtype and shape.
/// An index out of range is an IndexOutOfBoundsError where PyTorch raises RuntimeError
/// (`torch_runtime_error`: index_add), else an IndexError.
Tensor checked_index(const char* op, const Tensor& index, int64_t size, int64_t d, bool wrap_negative = false,
                     bool torch_runtime_error = false) {
  Tensor idx = as_contiguous(to_dtype(index, ScalarType::Int64));
  const int64_t lo = wrap_negative ? -size : 0;
  const int64_t* p = idx.data<int64_t>();
  bool negative = false;
  for (int64_t i = 0; i < idx.numel(); ++i) {
    if (p[i] < lo || p[i] >= size) [[unlikely]] {
      std::string msg = detail::cat_str("[", op, "] index ", p[i], " is out of range for dimension ", d,
                                        " with size ", size);
      if (torch_runtime_error) throw IndexOutOfBoundsError(msg);
      throw IndexError(msg);
    }
    negative = negative || p[i] < 0;
  }
  if (negative) {  // idx may be the caller's index itself: wrapped in a copy
    idx = op::clone(idx, MemoryFormat::Contiguous);
    int64_t* q = idx.data<int64_t>();
    for (int64_t i = 0; i < idx.numel(); ++i) q[i] += q[i] < 0 ? size : 0;
  }
  return idx;
}

struct SliceGeometry {
  int64_t d, outer, n, inner;
};

SliceGeometry geometry(const Tensor& self, int64_t dim, const char* op) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  const int64_t d = wrap_dim(dim, nd, op);
  SliceGeometry g{d, 1, self.dim() == 0 ? 1 : self.sizes()[d], 1};
  for (int64_t k = 0; k < d; ++k) g.outer *= self.sizes()[k];
  for (int64_t k = d + 1; k < self.dim(); ++k) g.inner *= self.sizes()[k];
  return g;
}

/// f(dst_slice, src_slice_or_j, count) over every (outer, j) pair, split across threads without two
/// threads writing one element: by outer blocks, or by columns of the inner block when outer is 1.
template <class F>
void for_each_slice(const SliceGeometry& g, int64_t nidx, const int64_t* idx, int64_t src_n, F&& f) {
  if (g.outer > 1 || g.inner < 2) {
    const int64_t grain = std::max<int64_t>(1, kMemoryBoundGrain / std::max<int64_t>(1, nidx * g.inner));
    parallel_for(0, g.outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t j = 0; j < nidx; ++j)
          f((o * g.n + idx[j]) * g.inner, (o * src_n + j) * g.inner, int64_t{0}, g.inner);
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(64, kMemoryBoundGrain / std::max<int64_t>(1, nidx));
  parallel_for(0, g.inner, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t j = 0; j < nidx; ++j) f(idx[j] * g.inner, j * g.inner, c0, c1);
  });
}

/// The float32 result of a float16/bfloat16 op (computed by out_kernel into a float32 tensor), rounded
/// once into out.
template <class F>
void via_float32(const Tensor& out, F&& out_kernel) {
  const Tensor tmp = op::empty(out.sizes(), ScalarType::Float32, out.device());
  out_kernel(tmp);
  Tensor dst = out;
  op::copy_(dst, tmp);
}

void index_add_out_cpu(const Tensor& out_t, const Tensor& self, int64_t dim, const Tensor& index,
                       const Tensor& source, const Scalar& alpha) {
  const SliceGeometry g = geometry(self, dim, "index_add");
  const Tensor idx = checked_index("index_add", index, g.n, g.d, /*wrap_negative=*/false,
                                   /*torch_runtime_error=*/true);
  if (is_half_dtype(self.dtype()))
    return via_float32(out_t, [&](const Tensor& tmp) {
      index_add_out_cpu(tmp, to_f32(self), dim, index, to_f32(source), alpha);
    });
  const Tensor src = as_contiguous(source);
  cpu::write_over_self(out_t, self, {&index, &source}, [&](const Tensor& out) {
    if (out.numel() == 0 || idx.numel() == 0) return;
    // As PyTorch: every dtype but uint16/32/64 (TypeError naming index_add and the dtype).
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtComplex>(self.dtype(), "index_add", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T a = alpha.to<T>();  // alpha fits self's dtype (meta::check_value_fits, the op's check step)
      T* o = out.data<T>();
      const T* s = src.data<T>();
      for_each_slice(g, idx.numel(), idx.data<int64_t>(), idx.numel(),
                     [&](int64_t od, int64_t os, int64_t c0, int64_t c1) {
                       T* dd = o + od;
                       const T* ss = s + os;
                       if constexpr (std::is_same_v<T, bool>) {
                         for (int64_t c = c0; c < c1; ++c) dd[c] = dd[c] || (a && ss[c]);
                       } else {
                         if (a == T(1))
                           for (int64_t c = c0; c < c1; ++c) dd[c] += ss[c];
                         else
                           for (int64_t c = c0; c < c1; ++c) dd[c] += a * ss[c];
                       }
                     });
    });
  });
}

void index_copy_out_cpu(const Tensor& out_t, const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& source) {
  const SliceGeometry g = geometry(self, dim, "index_copy");
  const Tensor idx = checked_index("index_copy", index, g.n, g.d);
  const Tensor src = as_contiguous(source);
  cpu::write_over_self(out_t, self, {&index, &source}, [&](const Tensor& out) {
    if (out.numel() == 0 || idx.numel() == 0) return;
    visit_bytes(self.dtype(), "index_copy", [&](auto tag) {
      using U = typename decltype(tag)::type;
      U* o = static_cast<U*>(out.data_ptr());
      const U* s = static_cast<const U*>(src.data_ptr());
      for_each_slice(g, idx.numel(), idx.data<int64_t>(), idx.numel(),
                     [&](int64_t od, int64_t os, int64_t c0, int64_t c1) {
                       std::memcpy(static_cast<void*>(o + od + c0), s + os + c0,
                                   static_cast<size_t>(c1 - c0) * sizeof(U));
                     });
    });
  });
}

void index_fill_out_cpu(const Tensor& out_t, const Tensor& self, int64_t dim, const Tensor& index,
                        const Scalar& value) {
  const SliceGeometry g = geometry(self, dim, "index_fill");
  const Tensor idx = checked_index("index_fill", index, g.n, g.d, /*wrap_negative=*/true);
  cpu::write_over_self(out_t, self, {&index}, [&](const Tensor& out) {
    if (out.numel() == 0 || idx.numel() == 0) return;
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf | kDtComplex>(self.dtype(), "index_fill",
                                                                       [](auto) {});
    visit_bytes(self.dtype(), "index_fill", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = value_bytes<T>(value, self.dtype());
      T* o = static_cast<T*>(out.data_ptr());
      for_each_slice(
          g, idx.numel(), idx.data<int64_t>(), 0,
          [&](int64_t od, int64_t, int64_t c0, int64_t c1) { std::fill(o + od + c0, o + od + c1, v); });
    });
  });
}

// ---- masked_fill ----

// Note [Structured kernels]: out has self's shape and dtype; the check step checked mask and value.
// masked_fill_ (out is self, contiguous, its mask elsewhere) fills self where it is; otherwise out
// (or a new tensor copied into it) starts as a copy of self.
void masked_fill_out_cpu(const Tensor& out, const Tensor& self, const Tensor& mask, const Scalar& value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Tensor m = as_contiguous(op::expand(mask, self.sizes()));
  const bool* mp = m.data<bool>();
  const auto fill = [&](const Tensor& result) {
    visit_bytes(self.dtype(), "masked_fill", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = value_bytes<T>(value, self.dtype());
      T* o = static_cast<T*>(result.data_ptr());
      parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = mp[i] ? v : o[i];
      });
    });
  };
  const std::initializer_list<const Tensor*> mask_only = {&mask};
  if (out.impl() == self.impl() && out.is_contiguous() && !cpu::shares_storage(out, mask_only)) return fill(out);
  cpu::write_contiguous(out, {&self, &mask}, [&](const Tensor& result) {
    Tensor dst = result;
    op::copy_(dst, self);
    fill(result);
  });
}

// ---- scatter, scatter_reduce ----
// The dim, reduce, index and src passed meta::check_scatter and meta::check_scatter_reduce; the index
// values are checked here.

/// Every position of `index` (row-major): f(index value, offset in out (contiguous, dim d at 0), offset in
/// src). The index values are checked in [0, size) first, so nothing is written for a bad index.
template <class F>
void for_each_scatter(const char* op, const Tensor& out, int64_t d, const Tensor& index, const Tensor* src,
                      F&& f) {
  const int64_t n = index.numel();
  if (n == 0) return;
  const int64_t nd = index.dim();
  const int64_t size = out.dim() == 0 ? 1 : out.sizes()[d];
  const Tensor idx = as_contiguous(to_dtype(index, ScalarType::Int64));  // int32 is accepted, as PyTorch
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    FB_CHECK_INDEX_BOUNDS(ip[i] >= 0 && ip[i] < size, "[", op, "] index ", ip[i],
                          " is out of bounds for dimension ", d, " with size ", size);
  Shape os(nd, 0), ss(nd, 0);
  for (int64_t k = 0; k < nd; ++k) {
    os[k] = k == d || out.dim() == 0 ? 0 : out.strides()[k];
    ss[k] = src && src->dim() > 0 ? src->strides()[k] : 0;
  }
  const int64_t dstride = out.dim() == 0 ? 0 : out.strides()[d];
  // Rows of index's last dim run as a tight loop; an odometer walks the dims before it.
  const int64_t row = nd == 0 ? 1 : index.sizes()[nd - 1];
  const int64_t os_last = nd == 0 ? 0 : os[nd - 1], ss_last = nd == 0 ? 0 : ss[nd - 1];
  const int64_t rows = n / row, od = std::max<int64_t>(nd - 1, 0);
  Shape pos(od, 0);
  int64_t oo = 0, so = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* ir = ip + r * row;
    for (int64_t j = 0; j < row; ++j) f(oo + j * os_last + ir[j] * dstride, so + j * ss_last);
    for (int64_t k = od - 1; k >= 0; --k) {
      if (++pos[k] < index.sizes()[k]) {
        oo += os[k], so += ss[k];
        break;
      }
      oo -= (pos[k] - 1) * os[k], so -= (pos[k] - 1) * ss[k];
      pos[k] = 0;
    }
  }
}

enum class Reduce { None, Sum, Prod, Mean, Max, Min };

Reduce parse_reduce(std::optional<std::string_view> r, const char* op, bool scatter_reduce) {
  if (!r) return Reduce::None;
  if (!scatter_reduce) {
    if (*r == "add") return Reduce::Sum;
    FB_INTERNAL_ASSERT(*r == "multiply", "[", op, "] reduce '", *r, "' passed meta::check_scatter_reduce");
    return Reduce::Prod;
  }
  if (*r == "sum") return Reduce::Sum;
  if (*r == "prod") return Reduce::Prod;
  if (*r == "mean") return Reduce::Mean;
  if (*r == "amax") return Reduce::Max;
  FB_INTERNAL_ASSERT(*r == "amin", "[", op, "] reduce '", *r, "' passed meta::check_scatter_reduce");
  return Reduce::Min;
}

template <class T>
void combine(Reduce r, T& d, T s) {
  if constexpr (std::is_same_v<T, bool>) {
    if (r == Reduce::Sum || r == Reduce::Mean || r == Reduce::Max)
      d = d || s;
    else
      d = d && s;
  } else {
    switch (r) {
      case Reduce::None:
        d = s;
        break;
      case Reduce::Sum:
      case Reduce::Mean:
        d = static_cast<T>(wrapping_add(d, s));  // Note [Integer wrap-around]
        break;
      case Reduce::Prod:
        d = static_cast<T>(wrapping_mul(d, s));
        break;
      case Reduce::Max:
        if constexpr (kIsComplexType<T>) {
          FB_INTERNAL_ASSERT(false, "[scatter_reduce] a complex amax passed meta::check_scatter_reduce");
        } else if constexpr (std::is_floating_point_v<T>) {
          if (s > d || std::isnan(s)) d = s;
        } else {
          d = std::max(d, s);
        }
        break;
      case Reduce::Min:
        if constexpr (kIsComplexType<T>) {
          FB_INTERNAL_ASSERT(false, "[scatter_reduce] a complex amin passed meta::check_scatter_reduce");
        } else if constexpr (std::is_floating_point_v<T>) {
          if (s < d || std::isnan(s)) d = s;
        } else {
          d = std::min(d, s);
        }
        break;
    }
  }
}

template <class T>
T identity(Reduce r) {
  if constexpr (std::is_same_v<T, bool>) {
    return r == Reduce::Prod || r == Reduce::Min;
  } else if constexpr (kIsComplexType<T>) {
    return r == Reduce::Prod ? T(1) : T(0);
  } else {
    switch (r) {
      case Reduce::Prod:
        return T(1);
      case Reduce::Max:
        return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
      case Reduce::Min:
        return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::max();
      default:
        return T(0);
    }
  }
}

void scatter_impl(const Tensor& out_t, const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor* src, const Scalar* value, Reduce reduce, bool include_self) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  if (index.numel() == 0 || reduce == Reduce::None) {
    cpu::write_over_self(out_t, self, {&index, src}, [&](const Tensor& out) {
      if (index.numel() == 0) return;
      visit_bytes(self.dtype(), op, [&](auto tag) {
        using U = typename decltype(tag)::type;
        U* o = static_cast<U*>(out.data_ptr());
        if (src) {
          const U* s = static_cast<const U*>(src->data_ptr());
          for_each_scatter(op, out, d, index, src, [&](int64_t oo, int64_t so) { o[oo] = s[so]; });
        } else {
          U v;
          const Tensor vt = scalar_tensor(*value, self.dtype());
          std::memcpy(static_cast<void*>(&v), vt.data_ptr(), sizeof(U));
          for_each_scatter(op, out, d, index, nullptr, [&](int64_t oo, int64_t) { o[oo] = v; });
        }
      });
    });
    return;
  }
  if (is_half_dtype(self.dtype())) {
    const Tensor s32 = src ? to_f32(*src) : Tensor();
    return via_float32(out_t, [&](const Tensor& tmp) {
      scatter_impl(tmp, op, to_f32(self), dim, index, src ? &s32 : nullptr, value, reduce, include_self);
    });
  }
  cpu::write_over_self(out_t, self, {&index, src}, [&](const Tensor& out) {
    // As PyTorch: no uint16/32/64 (TypeError naming the op and the dtype); complex sums and multiplies.
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtComplex>(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      const T* s = src ? src->data<T>() : nullptr;
      const T v = value ? value->to<T>() : T(0);
      auto get = [&](int64_t so) { return s ? s[so] : v; };
      if (!include_self)
        for_each_scatter(op, out, d, index, src, [&](int64_t oo, int64_t) { o[oo] = identity<T>(reduce); });
      if (reduce != Reduce::Mean) {
        for_each_scatter(op, out, d, index, src,
                         [&](int64_t oo, int64_t so) { combine(reduce, o[oo], get(so)); });
        return;
      }
      std::vector<int64_t> count(static_cast<size_t>(out.numel()), include_self ? 1 : 0);
      for_each_scatter(op, out, d, index, src, [&](int64_t oo, int64_t so) {
        combine(reduce, o[oo], get(so));
        ++count[oo];
      });
      if constexpr (!std::is_same_v<T, bool>) {
        for (size_t i = 0; i < count.size(); ++i) {
          if (count[i] <= 1) continue;
          if constexpr (std::is_floating_point_v<T>) {
            o[i] /= static_cast<T>(count[i]);
          } else if constexpr (kIsComplexType<T>) {
            o[i] /= static_cast<typename T::value_type>(count[i]);
          } else {  // floor division, as PyTorch
            const auto c = static_cast<T>(count[i]);
            T q = o[i] / c;
            if ((o[i] % c != 0) && ((o[i] < 0) != (c < 0))) --q;
            o[i] = q;
          }
        }
      }
    });
  });
}

void scatter_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, std::optional<std::string_view> reduce) {
  scatter_impl(out, "scatter", self, dim, index, &src, nullptr, parse_reduce(reduce, "scatter", false), true);
}

void scatter_value_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                           const Scalar& value, std::optional<std::string_view> reduce) {
  scatter_impl(out, "scatter", self, dim, index, nullptr, &value, parse_reduce(reduce, "scatter", false),
               true);
}

void scatter_reduce_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src, std::string_view reduce, bool include_self) {
  scatter_impl(out, "scatter_reduce", self, dim, index, &src, nullptr,
               parse_reduce(reduce, "scatter_reduce", true), include_self);
}

void scatter_add_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& src) {
  scatter_impl(out, "scatter_add", self, dim, index, &src, nullptr, Reduce::Sum, true);
}

FB_REGISTER_OUT_KERNEL(op::flip, CPU, flip_out_cpu);
FB_REGISTER_OUT_KERNEL(op::scatter_add, CPU, scatter_add_out_cpu);
FB_REGISTER_OUT_KERNEL(op::tril, CPU, tril_out_cpu);
FB_REGISTER_OUT_KERNEL(op::triu, CPU, triu_out_cpu);
FB_REGISTER_KERNEL(op::repeat_interleave_tensor, CPU, repeat_interleave_tensor_cpu);
FB_REGISTER_OUT_KERNEL(op::index_add, CPU, index_add_out_cpu);
FB_REGISTER_OUT_KERNEL(op::index_copy, CPU, index_copy_out_cpu);
FB_REGISTER_OUT_KERNEL(op::index_fill, CPU, index_fill_out_cpu);
FB_REGISTER_OUT_KERNEL(op::masked_fill, CPU, masked_fill_out_cpu);
FB_REGISTER_OUT_KERNEL(op::scatter, CPU, scatter_out_cpu);
FB_REGISTER_OUT_KERNEL(op::scatter_value, CPU, scatter_value_out_cpu);
FB_REGISTER_OUT_KERNEL(op::scatter_reduce, CPU, scatter_reduce_out_cpu);

}  // namespace
}  // namespace flambeau
