// CPU out kernel of linear: y = x @ W^T + b as ONE GEMM call. The bias is
// broadcast into the output rows first (by each GEMM block, for its part of
// the output, just before its GEMM) and the GEMM accumulates onto it
// (beta = 1), so there is no separate add pass over the output. Leading dims
// of x are folded into the GEMM's rows. float32/float64 go to OpenBLAS
// (gemm.h); bfloat16/float16 to the low-precision GEMM, whose accumulators
// start from the bias (Note [Low-precision GEMM]: one rounding, as PyTorch's
// bf16 addmm); other dtypes fall back to matmul + add.
#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <optional>

#include "cpu/linalg/gemm.h"
#include "cpu/linalg/lowp_gemm.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

// linear is structured (Note [Structured kernels]): the meta step checked the arguments (check_linear)
// and allocated out, of the input's dtype and shape (*, out_features); the GEMM writes out itself, or a
// contiguous buffer copied into out when out is strided or shares memory with an argument.
void linear_out_cpu(const Tensor& out, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias) {
  const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1];
  const ScalarType dt = input.dtype();
  const bool row_bias = bias && bias->dim() == 1 && bias->sizes()[0] == out_f;
  const bool lowp = (dt == ScalarType::BFloat16 || dt == ScalarType::Float16) && weight.dtype() == dt &&
                    (!bias || bias->dtype() == dt);
  if ((dt != ScalarType::Float32 && dt != ScalarType::Float64 && !lowp) || (bias && !row_bias)) {
    // Integer dtypes, or a bias that only broadcasts: the composed form (its errors name matmul/add).
    const Tensor product = op::matmul(input, op::transpose(weight, 0, 1));
    cpu::copy_out(out, bias ? op::add(product, *bias, 1) : product);
    return;
  }
  // x as (n, in_f): a view where the layout allows (reshape copies otherwise).
  Tensor x = input;
  if (input.dim() == 1) {
    x = op::unsqueeze(input, 0);
  } else if (input.dim() > 2) {
    // The leading dims' product, not -1: with in_features == 0 the -1 would be ambiguous.
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < input.dim(); ++d)
      FB_CHECK_VALUE(!__builtin_mul_overflow(rows, input.sizes()[d], &rows), "[linear] input shape ",
                     shape_str(input.sizes()), " has more rows than int64 can count");
    const int64_t shape[2] = {rows, in_f};
    x = op::reshape(input, IntArrayRef(shape));
  }
  const int64_t n = x.sizes()[0];
  if (out.numel() == 0) return;
  const std::initializer_list<const Tensor*> args = {&input, &weight, bias ? &*bias : nullptr};
  if (lowp) {
    cpu::write_contiguous(out, args, [&](const Tensor& dst) {
      Tensor out2d = op::view(dst, IntArrayRef(std::array<int64_t, 2>{n, out_f}));
      cpu::lowp_matmul_into(x, op::transpose(weight, 0, 1), out2d, bias ? &*bias : nullptr);
    });
    return;
  }
  FB_CHECK(n <= INT_MAX && in_f <= INT_MAX && out_f <= INT_MAX,
           "[linear] matrix dims above 2^31 are not supported");
  cpu::write_contiguous(out, args, [&](const Tensor& dst) {
    visit_dtype(dt, "linear", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        T* c = dst.data<T>();
        Tensor b;
        const T* pb = nullptr;
        if (bias) {
          b = bias->is_contiguous() ? *bias : op::contiguous(*bias, MemoryFormat::Contiguous);
          pb = b.data<T>();
        }
        if (in_f == 0) {
          for (int64_t i = 0; i < n; ++i) {
            if (pb)
              std::memcpy(c + i * out_f, pb, sizeof(T) * static_cast<size_t>(out_f));
            else
              std::fill(c + i * out_f, c + (i + 1) * out_f, T(0));
          }
          return;
        }
        const cpu::GemmOperand<T> A = cpu::gemm_operand<T>(x, false);
        const cpu::GemmOperand<T> B = cpu::gemm_operand<T>(weight, false);
        // op(B) must be W^T (in_f x out_f): flip the layout gemm_operand found for W.
        cpu::gemm(A.trans, !B.trans, static_cast<int>(n), static_cast<int>(out_f), static_cast<int>(in_f),
                  A.data, A.ld, B.data, B.ld, c, static_cast<int>(out_f), T(1), bias ? T(1) : T(0), pb);
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::linear, CPU, linear_out_cpu);

}  // namespace
}  // namespace flambeau
