// CUDA kernels of sort and topk (argsort, msort and kthvalue are core's
// composites over them): the dim is moved last and made contiguous, then each
// row is sorted by one thread (Note [CUDA sort] in flambeau_cuda/sort_math.h)
// in core's order (NaN largest, ties in index order, always stable).
// float32, float64, int64, int32, int16, int8, uint8 and bool.
#include "sort.h"

#include <optional>
#include <tuple>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

void check_dtype(const char* op, ScalarType t) {
  switch (t) {
    case ScalarType::Float32:
    case ScalarType::Float64:
    case ScalarType::Int64:
    case ScalarType::Int32:
    case ScalarType::Int16:
    case ScalarType::Int8:
    case ScalarType::UInt8:
    case ScalarType::Bool:
      return;
    default:
      throw TypeError(
          detail::cat_str("[", op, "] with dtype ", dtype_name(t),
                          " is not yet implemented on CUDA (float32, float64, int64, int32, int16, int8, "
                          "uint8 and bool are)"));
  }
}

/// values/indices of the k first elements of each row of `self` along `dim`, in order.
std::tuple<Tensor, Tensor> sorted_rows(const char* op, const Tensor& self, int64_t dim, bool descending,
                                       int64_t k) {
  const int64_t last = self.dim() - 1;
  const Tensor rows = op::contiguous(op::transpose(self, dim, last), MemoryFormat::Contiguous);
  const int64_t n = rows.sizes()[static_cast<size_t>(last)];
  Shape out_shape(rows.sizes().begin(), rows.sizes().end());
  out_shape.back() = k;
  Tensor values = op::empty(out_shape, self.dtype(), self.device());
  Tensor indices = op::empty(out_shape, ScalarType::Int64, self.device());
  if (values.numel() > 0) {
    const int64_t m = rows.numel() / n;
    int64_t scratch_n = 0;
    FB_CHECK_VALUE(!__builtin_mul_overflow(4 * m, n, &scratch_n), "[", op,
                   "] scratch size overflows for shape ", shape_str(self.sizes()));
    Tensor scratch =
        op::empty(Shape{scratch_n}, ScalarType::Int64, self.device());  // 2 m n keys, 2 m n indices
    auto* keys = static_cast<uint64_t*>(scratch.data_ptr());
    int64_t* idx = scratch.data<int64_t>() + 2 * m * n;
    CudaDeviceSetter guard(self.device().index);
    const int err = launch_sort_rows(static_cast<int>(self.dtype()), rows.data_ptr(), m, n, descending, k,
                                     values.data_ptr(), indices.data<int64_t>(), keys, idx,
                                     current_cuda_stream(self.device()));
    if (err != 0) throw_cuda_error("sort kernel launch", static_cast<cudaError_t>(err));
  }
  const auto back = [&](const Tensor& t) {
    return op::contiguous(op::transpose(t, dim, last), MemoryFormat::Contiguous);
  };
  return {back(values), back(indices)};
}

std::tuple<Tensor, Tensor> sort_cuda(const Tensor& self, int64_t dim, bool descending,
                                     std::optional<bool> stable) {
  (void)stable;  // always stable, as the CPU
  check_dtype("sort", self.dtype());
  if (self.dim() == 0) {
    wrap_dim(dim, 1, "sort");
    return {op::clone(self, MemoryFormat::Contiguous), zeros(Shape{}, ScalarType::Int64, self.device())};
  }
  dim = wrap_dim(dim, self.dim(), "sort");
  return sorted_rows("sort", self, dim, descending, self.sizes()[static_cast<size_t>(dim)]);
}

std::tuple<Tensor, Tensor> topk_cuda(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // the result is always sorted, as the CPU
  check_dtype("topk", self.dtype());
  dim = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "topk");  // k is checked by the meta step
  if (self.dim() == 0)  // itself and index 0 for k 0 or 1, as PyTorch (and the CPU)
    return {op::clone(self, MemoryFormat::Contiguous), zeros(Shape{}, ScalarType::Int64, self.device())};
  return sorted_rows("topk", self, dim, largest, k);
}

}  // namespace

void register_sort_kernels() {
  register_out_via_copy<sort_cuda>(op::sort);
  register_out_via_copy<topk_cuda>(op::topk);
}

}  // namespace flambeau::cuda
