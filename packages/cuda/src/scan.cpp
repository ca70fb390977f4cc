// CUDA kernels of cumsum and cumprod (Note [CUDA scans]): the input cast to
// the result dtype (bool/int inputs accumulate in int64 unless dtype, as the
// CPU), the dim moved last and made contiguous, one thread per row.
// Result dtypes float32, float64, int64 and int32.
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "structured_out.h"

namespace flambeau::cuda {

int launch_scan_rows(int dtype, const void* in, void* out, int64_t rows, int64_t n, bool product,
                     void* stream);

namespace {

Tensor scan(const char* op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, bool product) {
  const ScalarType t = dtype ? *dtype : is_integral(self.dtype(), true) ? ScalarType::Int64 : self.dtype();
  FB_CHECK_TYPE(t != ScalarType::Bool, "[", op, "] dtype bool is not supported as the result dtype");
  FB_CHECK_TYPE(t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Int64 ||
                    t == ScalarType::Int32,
                "[", op, "] with result dtype ", dtype_name(t),
                " is not yet implemented on CUDA (float32, float64, int64 and int32 are)");
  dim = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  if (self.dim() == 0) return to_dtype(op::clone(self, MemoryFormat::Contiguous), t);
  const int64_t last = self.dim() - 1;
  const Tensor rows = op::contiguous(op::transpose(to_dtype(self, t), dim, last), MemoryFormat::Contiguous);
  Tensor out = op::empty(rows.sizes(), t, self.device());
  if (out.numel() > 0) {
    const int64_t n = rows.sizes()[static_cast<size_t>(last)];
    CudaDeviceSetter guard(self.device().index);
    const int err = launch_scan_rows(static_cast<int>(t), rows.data_ptr(), out.data_ptr(), rows.numel() / n,
                                     n, product, current_cuda_stream(self.device()));
    if (err != 0) throw_cuda_error("scan kernel launch", static_cast<cudaError_t>(err));
  }
  return op::contiguous(op::transpose(out, dim, last), MemoryFormat::Contiguous);
}

Tensor cumsum_cuda(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan("cumsum", self, dim, dtype, false);
}
Tensor cumprod_cuda(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan("cumprod", self, dim, dtype, true);
}

}  // namespace

void register_scan_kernels() {
  register_out_via_copy<cumsum_cuda>(op::cumsum);
  register_out_via_copy<cumprod_cuda>(op::cumprod);
}

}  // namespace flambeau::cuda
