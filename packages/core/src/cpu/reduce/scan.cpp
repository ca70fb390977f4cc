// CPU kernels of the scans: cumsum, cumprod (bool/int inputs accumulate in
// int64, floats in double, float16/bfloat16 in float), cummax/cummin (values and indices) and
// logcumsumexp. A scan along dim runs over the contiguous (outer, n, inner)
// layout: inner == 1 scans rows (cumsum eight rows at a time through
// vec_reduce's loop; one long row is cut into chunks scanned side by side,
// then offset), inner > 1 scans whole rows of `inner` columns at once.
// The scans are structured ops (Note [Structured kernels]): out kernels.
#include <cmath>
#include <limits>

#include "cpu/elementwise/wrapping.h"
#include "cpu/low_precision.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "reduce_common.h"

namespace flambeau {
namespace {
using namespace cpu;

ScalarType scan_dtype(const char* op, const Tensor& self, std::optional<ScalarType> dtype) {
  const ScalarType t = dtype ? *dtype : is_integral(self.dtype(), true) ? ScalarType::Int64 : self.dtype();
  FB_CHECK_TYPE(t != ScalarType::Bool, "[", op, "] dtype bool is not supported as the result dtype");
  return t;
}

// Calls f(o, c0, nc) for every outer index and block of at most kCols columns, in parallel.
constexpr int64_t kCols = 256;
template <class F>
void for_column_blocks(int64_t outer, int64_t n, int64_t inner, const F& f) {
  const int64_t nblk = (inner + kCols - 1) / kCols;
  parallel_for(0, outer * nblk, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, n * kCols)),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t o = t / nblk, c0 = (t % nblk) * kCols;
                   f(o, c0, std::min(kCols, inner - c0));
                 }
               });
}

// A scan with accumulator Acc: acc = step(acc, x); y = acc. init is the identity.
template <class T, class Acc, class Step>
void scan_loop(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, Acc init, const Step& step) {
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, n)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o) {
                     Acc acc = init;
                     for (int64_t i = 0; i < n; ++i) {
                       acc = step(acc, x[o * n + i]);
                       y[o * n + i] = static_cast<T>(acc);
                     }
                   }
                 });
    return;
  }
  for_column_blocks(outer, n, inner, [&](int64_t o, int64_t c0, int64_t nc) {
    Acc acc[kCols];
    std::fill(acc, acc + nc, init);
    for (int64_t k = 0; k < n; ++k) {
      const T* xr = x + (o * n + k) * inner + c0;
      T* yr = y + (o * n + k) * inner + c0;
      for (int64_t i = 0; i < nc; ++i) {
        acc[i] = step(acc[i], xr[i]);
        yr[i] = static_cast<T>(acc[i]);
      }
    }
  });
}

// cumsum of float rows through the vectorized loop.
template <class T>
void cumsum_float_rows(const T* x, T* y, int64_t outer, int64_t n) {
  const auto& fns = reduce_fns<T>();
  const int64_t threads = get_num_threads();
  if (outer >= 8 * threads || n < 4 * kGrainSize) {
    const int64_t groups = (outer + 7) / 8;
    parallel_for(0, groups, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 8 * n)),
                 [&](int64_t b, int64_t e) {
                   const int64_t r0 = b * 8, r1 = std::min(outer, e * 8);
                   fns.cumsum_rows(x + r0 * n, y + r0 * n, r1 - r0, n, n);
                 });
    return;
  }
  // Few long rows: each cut into chunks scanned eight at a time, then offset by the sums before them.
  for (int64_t o = 0; o < outer; ++o) {
    const T* xr = x + o * n;
    T* yr = y + o * n;
    const int64_t nchunks = 8 * threads;
    const int64_t len = n / nchunks;  // >= 4 * kGrainSize / (8 * threads) > 0
    parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
      fns.cumsum_rows(xr + b * 8 * len, yr + b * 8 * len, (e - b) * 8, len, len);
    });
    const int64_t tail = nchunks * len;
    fns.cumsum_rows(xr + tail, yr + tail, 1, n - tail, n - tail);
    std::vector<T> offset(nchunks + 1);
    double run = 0;
    for (int64_t c = 0; c < nchunks; ++c) {
      offset[c] = static_cast<T>(run);
      run += static_cast<double>(yr[(c + 1) * len - 1]);
    }
    offset[nchunks] = static_cast<T>(run);
    parallel_for(1, nchunks + 1, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const int64_t cb = c * len, ce = c == nchunks ? n : cb + len;
        fns.add_const(yr + cb, ce - cb, offset[c]);
      }
    });
  }
}

void cumsum_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType out_t = scan_dtype("cumsum", self, dtype);
  dim = wrap_dim(dim, self.dim(), "cumsum");
  if (out.numel() == 0) return;
  const DimSplit s = split_dim(self, dim, true, "cumsum", true);
  const Tensor in = contiguous(to_dtype(self, out_t));
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf | kDtComplex>(out_t, "cumsum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_complex_v<T>) {  // accumulated in complex128, as the real dtypes in double
        scan_loop<T, complex128>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, complex128(0),
                                 [](complex128 a, T v) { return a + complex128(v); });
      } else if constexpr (kIsHalfType<T>) {  // in float32, each result rounded (PyTorch's CPU cumsum)
        scan_loop<T, float>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, 0.0f,
                            [](float a, T v) { return a + static_cast<float>(v); });
      } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (s.inner == 1)
          cumsum_float_rows<T>(in.data<T>(), dst.data<T>(), s.outer, s.n);
        else
          scan_loop<T, double>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, 0.0,
                               [](double a, T v) { return a + static_cast<double>(v); });
      } else if constexpr (!std::is_same_v<T, bool>) {
        scan_loop<T, T>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, T{0},
                        [](T a, T v) { return wrapping_add(a, v); });  // Note [Integer wrap-around]
      }
    });
  });
}

void cumprod_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType out_t = scan_dtype("cumprod", self, dtype);
  dim = wrap_dim(dim, self.dim(), "cumprod");
  if (out.numel() == 0) return;
  const DimSplit s = split_dim(self, dim, true, "cumprod", true);
  const Tensor in = contiguous(to_dtype(self, out_t));
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf | kDtComplex>(out_t, "cumprod", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_complex_v<T>) {
        scan_loop<T, complex128>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, complex128(1),
                                 [](complex128 a, T v) { return a * complex128(v); });
      } else if constexpr (kIsHalfType<T>) {  // in float32, each result rounded (PyTorch's CPU cumprod)
        scan_loop<T, float>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, 1.0f,
                            [](float a, T v) { return a * static_cast<float>(v); });
      } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        scan_loop<T, double>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, 1.0,
                             [](double a, T v) { return a * static_cast<double>(v); });
      } else if constexpr (!std::is_same_v<T, bool>) {
        scan_loop<T, T>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner, T{1},
                        [](T a, T v) { return wrapping_mul(a, v); });
      }
    });
  });
}

// cummax/cummin as PyTorch: a NaN, or a value >= (<=) the running one, takes over (so ties give
// the last index); after a NaN only NaNs update the index.
// Note [Structured kernels]: values and indices have self's shape (the check step checked dim and dtype).
template <bool IsMax>
void cum_extremum(const char* op, const Tensor& values_out, const Tensor& indices_out, const Tensor& self,
                  int64_t dim) {
  dim = wrap_dim(dim, self.dim(), op);
  if (self.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype())) {  // compared as their (exact) float32 values
    const auto [v, i] =
        IsMax ? op::cummax(cpu::to_float32(self), dim) : op::cummin(cpu::to_float32(self), dim);
    cpu::copy_out(values_out, v);
    return cpu::copy_out(indices_out, i);
  }
  const DimSplit s = split_dim(self, dim, true, op, true);
  const Tensor in = contiguous(self);
  write_contiguous_outs<2>({values_out, indices_out}, self, [&](const std::array<Tensor, 2>& dst) {
    visit_dtype(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = in.data<T>();
      T* y = dst[0].data<T>();
      int64_t* ix = dst[1].data<int64_t>();
      auto takes = [](T v, T cur) {
        if constexpr (std::is_floating_point_v<T>) {
          if (v != v) return true;
          if (cur != cur) return false;
        }
        return IsMax ? v >= cur : v <= cur;
      };
      for_column_blocks(s.outer, s.n, s.inner, [&](int64_t o, int64_t c0, int64_t nc) {
        T cur[kCols];
        int64_t at[kCols];
        for (int64_t k = 0; k < s.n; ++k) {
          const int64_t off = (o * s.n + k) * s.inner + c0;
          for (int64_t i = 0; i < nc; ++i) {
            const T v = x[off + i];
            if (k == 0 || takes(v, cur[i])) {
              cur[i] = v;
              at[i] = k;
            }
            y[off + i] = cur[i];
            ix[off + i] = at[i];
          }
        }
      });
    });
  });
}

void cummax_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim) {
  cum_extremum<true>("cummax", values, indices, self, dim);
}
void cummin_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim) {
  cum_extremum<false>("cummin", values, indices, self, dim);
}

// log(exp(a) + exp(b)) without overflow; -inf is the identity.
inline double log_add_exp(double a, double b) {
  if (a != a || b != b) return std::numeric_limits<double>::quiet_NaN();
  const double m = std::max(a, b), l = std::min(a, b);
  if (l == -std::numeric_limits<double>::infinity() || m == std::numeric_limits<double>::infinity()) return m;
  return m + std::log1p(std::exp(l - m));
}

// Note [Structured kernels]: out has self's shape and (floating, checked) dtype.
void logcumsumexp_out_cpu(const Tensor& out, const Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), "logcumsumexp");
  if (out.numel() == 0) return;
  // float16/bfloat16: accumulated in float32 (here double), each output rounded once, as PyTorch.
  if (cpu::is_low_precision(self.dtype()))
    return cpu::copy_out(out, op::logcumsumexp(cpu::to_float32(self), dim));
  const DimSplit s = split_dim(self, dim, true, "logcumsumexp", true);
  const Tensor in = contiguous(self);
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtype(self.dtype(), "logcumsumexp", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>)
        scan_loop<T, double>(in.data<T>(), dst.data<T>(), s.outer, s.n, s.inner,
                             -std::numeric_limits<double>::infinity(),
                             [](double a, T v) { return log_add_exp(a, static_cast<double>(v)); });
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::cumsum, CPU, cumsum_out_cpu);
FB_REGISTER_OUT_KERNEL(op::cumprod, CPU, cumprod_out_cpu);
FB_REGISTER_OUT_KERNEL(op::cummax, CPU, cummax_out_cpu);
FB_REGISTER_OUT_KERNEL(op::cummin, CPU, cummin_out_cpu);
FB_REGISTER_OUT_KERNEL(op::logcumsumexp, CPU, logcumsumexp_out_cpu);

}  // namespace
}  // namespace flambeau
