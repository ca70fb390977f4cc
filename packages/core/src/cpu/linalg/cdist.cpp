// CPU out kernel of _cdist_euclidean (a structured op: Note [Structured kernels]): cdist's p = 2
// distances by a matrix product (flambeau_core/_distance.py calls it when no gradient is recorded).
//
// Note [Euclidean distances by GEMM]
// |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, as PyTorch's cdist for many rows. The
// rows of x1 are split into one block per thread; each block runs one GEMM
// (a.b for its rows, gemm.h's serial_gemm) and then, while its part of the
// output is still in cache, one pass that adds the squared norms, clamps at
// 0 and takes the square root: the matrix product and a single pass over the
// output, where the composite form makes five. The squared norms are summed
// over the columns in order with fused multiply-adds, as flambeau's own
// float32 GEMM accumulates a.b (Note [Own sgemm]), so there two equal rows come
// out exactly 0 apart (|a|^2 + |a|^2 - 2|a|^2); an OpenBLAS GEMM may sum in
// another order, leaving the rounding PyTorch's form has too.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

// Squared norms of `rows` rows of m values, summed over the columns in order, eight rows at a time
// (independent chains). Fma: multiply-adds fused as the GEMM kernels fuse theirs.
template <class T, bool Fma>
[[gnu::always_inline]] inline void squared_norms_loop(const T* x, int64_t rows, int64_t m, T* out) {
  constexpr int kRows = 8;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    T acc[kRows] = {};
    for (int64_t k = 0; k < m; ++k)
      for (int j = 0; j < kRows; ++j) {
        const T v = x[(r + j) * m + k];
        if constexpr (Fma)
          acc[j] = std::fma(v, v, acc[j]);
        else
          acc[j] += v * v;
      }
    for (int j = 0; j < kRows; ++j) out[r + j] = acc[j];
  }
  for (; r < rows; ++r) {
    T acc = 0;
    for (int64_t k = 0; k < m; ++k) {
      const T v = x[r * m + k];
      if constexpr (Fma)
        acc = std::fma(v, v, acc);
      else
        acc += v * v;
    }
    out[r] = acc;
  }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("fma"))) void squared_norms_fma(const float* x, int64_t rows, int64_t m, float* out) {
  squared_norms_loop<float, true>(x, rows, m, out);
}
__attribute__((target("fma"))) void squared_norms_fma(const double* x, int64_t rows, int64_t m, double* out) {
  squared_norms_loop<double, true>(x, rows, m, out);
}
bool has_fma() {
  static const bool yes = __builtin_cpu_supports("fma");
  return yes;
}
#else
template <class T>
void squared_norms_fma(const T* x, int64_t rows, int64_t m, T* out) {
  squared_norms_loop<T, true>(x, rows, m, out);
}
bool has_fma() { return false; }
#endif

template <class T>
void squared_norms(const T* x, int64_t rows, int64_t m, T* out) {
  if (has_fma())
    squared_norms_fma(x, rows, m, out);
  else
    squared_norms_loop<T, false>(x, rows, m, out);
}

// Rows [r0, r1) of one batch: c = a.b by GEMM, then c = sqrt(max(|a|^2 + |b|^2 - 2 c, 0)) in one pass.
template <class T>
void distance_rows(const T* a, const T* b, const T* nb, T* c, int64_t r0, int64_t r1, int64_t rr, int64_t m) {
  const int rows = static_cast<int>(r1 - r0);
  cpu::serial_gemm<T>(false, true, rows, static_cast<int>(rr), static_cast<int>(m), a + r0 * m,
                      static_cast<int>(m), b, static_cast<int>(m), c + r0 * rr, static_cast<int>(rr), T(1), T(0),
                      nullptr);
  std::vector<T> na(static_cast<size_t>(rows));
  squared_norms(a + r0 * m, rows, m, na.data());
  for (int i = 0; i < rows; ++i) {
    T* ci = c + (r0 + i) * rr;
    const T ni = na[static_cast<size_t>(i)];
    for (int64_t j = 0; j < rr; ++j) {
      const T d2 = (ni + nb[j]) - T(2) * ci[j];
      ci[j] = std::sqrt(d2 < T(0) ? T(0) : d2);  // a NaN stays NaN, as PyTorch's clamp_min
    }
  }
}

// A block of rows at least this many multiply-adds: the own sgemm's minimum (Note [Own sgemm]), so that
// every block runs on the kernel whose sums the squared norms repeat.
constexpr double kBlockMacs = double(int64_t{1} << 21);
// Up to this many blocks per thread, claimed as threads come (Note [Dynamic chunks]): a thread that
// starts late takes fewer.
constexpr int64_t kBlocksPerThread = 2;

// Note [Structured kernels]: out is (B, P, R) of x1's dtype (the check step checked shapes and dtypes).
// The rows are written into out when it is contiguous and shares no input's memory, else into a new
// tensor copied in.
void cdist_euclidean_out_cpu(const Tensor& out_arg, const Tensor& x1, const Tensor& x2) {
  const int64_t nbatch = x1.sizes()[0], p = x1.sizes()[1], r = x2.sizes()[1], m = x1.sizes()[2];
  if (out_arg.numel() == 0) return;
  if (m == 0) {
    Tensor zeros = out_arg;
    op::zero_(zeros);
    return;
  }
  cpu::write_contiguous(out_arg, {&x1, &x2}, [&](const Tensor& out) {
    const Tensor a = op::contiguous(x1, MemoryFormat::Contiguous);
    const Tensor b = op::contiguous(x2, MemoryFormat::Contiguous);
    const auto run = [&](auto tag) {
      using T = decltype(tag);
      const T* ad = a.data<T>();
      const T* bd = b.data<T>();
      T* od = out.data<T>();
      std::vector<T> nb(static_cast<size_t>(r));
      // Blocks of rows across the threads: as many per batch as the work allows, at least 16 rows each.
      const double macs = double(p) * double(r) * double(m);
      const int64_t threads = get_num_threads();
      const int64_t per_batch =
          threads <= 1 ? 1
                       : std::max<int64_t>(1, std::min<int64_t>({threads * kBlocksPerThread,
                                                                 static_cast<int64_t>(macs / kBlockMacs),
                                                                 p / 16}));
      const int64_t block = (p + per_batch - 1) / per_batch;
      const cpu::SerialBlasScope serial;
      for (int64_t i = 0; i < nbatch; ++i) {
        const T* ai = ad + i * p * m;
        const T* bi = bd + i * r * m;
        T* oi = od + i * p * r;
        squared_norms(bi, r, m, nb.data());
        parallel_for(0, per_batch, 1, [&](int64_t k0, int64_t k1) {
          for (int64_t k = k0; k < k1; ++k)
            if (k * block < p)
              distance_rows(ai, bi, nb.data(), oi, k * block, std::min(p, (k + 1) * block), r, m);
        });
      }
    };
    if (x1.dtype() == ScalarType::Float32)
      run(float{});
    else
      run(double{});
  });
}

}  // namespace

FB_REGISTER_OUT_KERNEL(op::_cdist_euclidean, CPU, cdist_euclidean_out_cpu);

}  // namespace flambeau
