// CUDA kernels of mm, bmm (out kernels) and linear: cuBLAS (Note [cuBLAS loading]) on the
// current stream, float32 and float64.
//
// Layouts: cuBLAS is column-major. A row-major (r, c) operand with strides
// (ld, 1) is the column-major (c, r) matrix with leading dimension ld, so
// out = a @ b (row-major, contiguous) is computed as out^T = b^T a^T, i.e.
// gemm(m, n, k) with B first. A transposed view (strides (1, ld)) is passed
// with CUBLAS_OP_T and no copy; any other strides are made contiguous first.
// Batches use the strided-batched GEMM (batch stride 0 for an expanded batch).
#include <algorithm>

#include "backend.h"
#include "cublas.h"
#include "flambeau/dispatch.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

struct Operand {
  Tensor keep;  // the tensor read (the input, or a contiguous copy)
  bool trans;   // CUBLAS_OP_T in the column-major call
  int64_t ld;
  int64_t batch_stride;
};

/// A (rows, cols) matrix (the last two dims of t) as cuBLAS sees it.
Operand operand(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t rows = t.sizes()[nd - 2], cols = t.sizes()[nd - 1];
  const int64_t s0 = t.strides()[nd - 2], s1 = t.strides()[nd - 1];
  const int64_t bs = nd == 3 ? t.strides()[0] : 0;
  if ((s1 == 1 || cols == 1) && (s0 >= std::max<int64_t>(1, cols) || rows == 1))
    return {t, false, rows == 1 ? std::max<int64_t>(1, cols) : s0, bs};
  if ((s0 == 1 || rows == 1) && (s1 >= std::max<int64_t>(1, rows) || cols == 1))
    return {t, true, cols == 1 ? std::max<int64_t>(1, rows) : s1, bs};
  Tensor c = op::contiguous(t, MemoryFormat::Contiguous);
  return {c, false, std::max<int64_t>(1, cols), nd == 3 ? rows * cols : 0};
}

// The operands passed the meta step's check_matmul (Note [Meta step]); what
// remains is this backend's own limit.
void check_gemm_dtype(const char* op, const Tensor& a) {
  FB_CHECK_TYPE(a.dtype() == ScalarType::Float32 || a.dtype() == ScalarType::Float64, "[", op,
                "] with dtype ", dtype_name(a.dtype()),
                " is not yet implemented on CUDA (float32 and float64 are)");
}

/// out (contiguous (batch, n, m) or (n, m)) = a @ b + beta * out.
void gemm_into(const Tensor& a, const Tensor& b, Tensor& out, double beta, const char* op) {
  const int64_t nd = a.dim();
  const int64_t batch = nd == 3 ? a.sizes()[0] : 1;
  const int64_t n = a.sizes()[nd - 2], k = a.sizes()[nd - 1], m = b.sizes()[nd - 1];
  if (out.numel() == 0) return;
  if (k == 0) {
    if (beta == 0) op::fill_(out, 0);
    return;
  }
  const Operand A = operand(a), B = operand(b);
  CudaDeviceSetter guard(out.device().index);
  (void)op;
  gemm_strided_batched(out.dtype() == ScalarType::Float64, B.trans, A.trans, m, n, k, 1.0, B.keep.data_ptr(),
                       B.ld, B.batch_stride, A.keep.data_ptr(), A.ld, A.batch_stride, beta, out.data_ptr(), m,
                       n * m, batch, current_cuda_stream(out.device()));
}

// mm and bmm are structured (Note [Structured kernels]): the meta step allocated out; cuBLAS writes
// it directly when it is contiguous and shares no memory with an operand, else a buffer copied into it.
void gemm_out(const Tensor& a, const Tensor& b, const Tensor& out, const char* op) {
  check_gemm_dtype(op, a);
  const auto shares = [&](const Tensor& t) { return out.impl()->storage() == t.impl()->storage(); };
  Tensor dst = out;
  if (out.is_contiguous() && !shares(a) && !shares(b)) {
    gemm_into(a, b, dst, 0.0, op);
    return;
  }
  Tensor tmp = op::empty(out.sizes(), out.dtype(), out.device());
  gemm_into(a, b, tmp, 0.0, op);
  op::copy_(dst, tmp);
}

void mm_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b) { gemm_out(a, b, out, "mm"); }

void bmm_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b) { gemm_out(a, b, out, "bmm"); }

Tensor linear_cuda(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  // The arguments, the bias's device too, passed the meta step's check_linear (Note [Meta step]).
  const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1];
  Tensor x = input;
  if (input.dim() == 1) {
    x = op::unsqueeze(input, 0);
  } else if (input.dim() > 2) {
    const int64_t shape[2] = {-1, in_f};
    x = op::reshape(input, IntArrayRef(shape));
  }
  const Tensor wt = op::transpose(weight, 0, 1);
  meta::check_matmul("linear", x, wt, 2);
  check_gemm_dtype("linear", x);
  Tensor out = op::empty(Shape{x.sizes()[0], out_f}, input.dtype(), input.device());
  double beta = 0.0;
  if (bias) {
    op::copy_(out, *bias);  // broadcast into every row; the GEMM adds to it (beta = 1)
    beta = 1.0;
  }
  gemm_into(x, wt, out, beta, "linear");
  Shape out_shape(input.sizes().begin(), input.sizes().end() - 1);
  out_shape.push_back(out_f);
  return op::reshape(out, out_shape);
}

}  // namespace

void register_gemm_kernels() {
  op::mm.register_out_kernel(DispatchKey::CUDA, mm_out_cuda);
  op::bmm.register_out_kernel(DispatchKey::CUDA, bmm_out_cuda);
  register_out_via_copy<linear_cuda>(op::linear);
}

}  // namespace flambeau::cuda
