// CPU out kernels: mm and bmm. float32/float64/complex64/complex128 go to OpenBLAS
// (scipy-openblas32, symbols prefixed scipy_); integers and bool use a plain loop.
//
// The GEMM helpers are in gemm.h (Note [GEMM operands]).

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "cpu/linalg/lowp_gemm.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "cpu/elementwise/wrapping.h"

namespace flambeau {
namespace {

using cpu::gemm;
using cpu::gemm_operand;
using cpu::GemmOperand;

// out[batch] = a[batch] @ b[batch]; a (B, n, k), b (B, k, m), out contiguous (B, n, m).
// Works on 2-D operands too (batch = 1).
void matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, const char* op) {
  const int64_t nd = a.dim();
  const bool batched = nd == 3;
  const int64_t batch = batched ? a.sizes()[0] : 1;
  const int64_t n = a.sizes()[nd - 2], k = a.sizes()[nd - 1], m = b.sizes()[nd - 1];
  if (out.numel() == 0) return;
  if (k == 0) {
    Tensor dst = out;
    op::fill_(dst, 0);
    return;
  }
  if (a.dtype() == ScalarType::BFloat16 || a.dtype() == ScalarType::Float16) {
    Tensor dst = out;
    cpu::lowp_matmul_into(a, b, dst);  // Note [Low-precision GEMM]
    return;
  }
  visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtComplex>(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* c = out.data<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_complex_v<T>) {
      FB_CHECK(n <= INT_MAX && k <= INT_MAX && m <= INT_MAX, "[", op,
               "] matrix dims above 2^31 are not supported");
      const GemmOperand<T> A = gemm_operand<T>(a, batched), B = gemm_operand<T>(b, batched);
      auto one = [&](int64_t i) {
        gemm(A.trans, B.trans, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
             A.data + i * A.batch_stride, A.ld, B.data + i * B.batch_stride, B.ld, c + i * n * m,
             static_cast<int>(m));
      };
      // gemm() splits one large product over the threads (Note [GEMM threads]);
      // a batch of products each too small for that (attention's heads), or
      // at least one per thread, is split by matrix instead, each a serial
      // OpenBLAS call.
      const double macs_each = double(n) * double(m) * double(k);
      const int nt = get_num_threads();
      if (batch > 1 && nt > 1 && (macs_each < cpu::kOwnThreadsMacs || batch >= nt) && !in_parallel_region()) {
        const cpu::SerialBlasScope serial;
        constexpr double kMacsPerTask = double(int64_t{1} << 16);
        const int64_t grain =
            std::max<int64_t>(1, static_cast<int64_t>(kMacsPerTask / std::max(1.0, macs_each)));
        parallel_for(0, batch, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) one(i);
        });
      } else {
        for (int64_t i = 0; i < batch; ++i) one(i);
      }
    } else {
      // Integer and bool: a plain triple loop in the output type, rows in parallel.
      const int64_t sab = batched ? a.strides()[0] : 0, sbb = batched ? b.strides()[0] : 0;
      const int64_t sa0 = a.strides()[nd - 2], sa1 = a.strides()[nd - 1];
      const int64_t sb0 = b.strides()[nd - 2], sb1 = b.strides()[nd - 1];
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, k * m));
      parallel_for(0, batch * n, grain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t bi = r / n, i = r % n;
          T* crow = c + r * m;
          std::fill(crow, crow + m, T(0));
          for (int64_t p = 0; p < k; ++p) {
            const T av = pa[bi * sab + i * sa0 + p * sa1];
            const T* brow = pb + bi * sbb + p * sb0;
            if constexpr (std::is_same_v<T, bool>) {
              for (int64_t j = 0; j < m; ++j) crow[j] = crow[j] || (av && brow[j * sb1]);
            } else {
              // Wraps on overflow (Note [Integer wrap-around]).
              for (int64_t j = 0; j < m; ++j)
                crow[j] = static_cast<T>(wrapping_add(crow[j], wrapping_mul(av, brow[j * sb1])));
            }
          }
        }
      });
    }
  });
}

// mm and bmm are structured (Note [Structured kernels]): the meta step checked the operands
// (check_matmul), chose the result's dtype and shape and allocated out; the GEMM writes out itself, or a
// contiguous buffer copied into out when out is strided or shares memory with an operand.
void mm_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  cpu::write_contiguous(out, {&a, &b}, [&](const Tensor& dst) { matmul_into(a, b, dst, "mm"); });
}

void bmm_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  cpu::write_contiguous(out, {&a, &b}, [&](const Tensor& dst) { matmul_into(a, b, dst, "bmm"); });
}

FB_REGISTER_OUT_KERNEL(op::mm, CPU, mm_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bmm, CPU, bmm_out_cpu);

}  // namespace
}  // namespace flambeau
