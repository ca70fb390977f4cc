// CUDA kernels of the indexing ops along a dim: gather, index_select,
// scatter_add; and clamp (a composition of maximum/minimum, so NaN
// propagates as in PyTorch). Every index is checked on the host first (one
// small copy of the index's min and max): a kernel never reads or writes
// outside a storage.
#include <algorithm>
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "index.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

int64_t item_int64(const Tensor& t) {
  Tensor h = op::empty(Shape{}, ScalarType::Int64, Device(DeviceType::CPU));
  op::copy_(h, t);
  return h.data<int64_t>()[0];
}

/// int64 index on self's device, each value in [0, size) (its dtype and shape passed the op's meta step).
Tensor checked_index(const Tensor& index, const Tensor& self, int64_t size, const char* op) {
  FB_CHECK(index.device() == self.device(), "[", op,
           "] expected all tensors to be on the same device, but found at least two devices, ",
           self.device().str(), " and ", index.device().str());
  Tensor idx = to_dtype(index, ScalarType::Int64);
  if (idx.numel() > 0) {
    const int64_t lo = item_int64(op::min(idx)), hi = item_int64(op::max(idx));
    FB_CHECK_INDEX(lo >= 0 && hi < size, "[", op, "] index ", lo < 0 ? lo : hi,
                   " is out of bounds for dimension of size ", size);
  }
  return idx;
}

OffsetCalculator<3> calc3(IntArrayRef sizes, IntArrayRef s0, IntArrayRef s1, IntArrayRef s2, const char* op) {
  FB_CHECK_VALUE(sizes.size() <= static_cast<size_t>(kMaxDims), "[", op, "] CUDA kernels handle up to ",
                 kMaxDims, " dims");
  OffsetCalculator<3> c;
  c.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < c.ndim; ++d) {
    const auto k = static_cast<size_t>(d);
    c.sizes[d] = sizes[k];
    c.strides[0][d] = s0[k];
    c.strides[1][d] = s1[k];
    c.strides[2][d] = s2[k];
  }
  coalesce(c);
  if (c.ndim == 0) {
    c.ndim = 1;
    c.sizes[0] = 1;
  }
  return c;
}

void check_launch(const char* what, int err) {
  if (err != 0) throw_cuda_error(what, static_cast<cudaError_t>(err));
}

Tensor gather_cuda(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t nd = self.dim();
  const int64_t d = wrap_dim(dim, std::max<int64_t>(nd, 1), "gather");
  const Tensor idx = checked_index(index, self, nd == 0 ? 1 : self.sizes()[d], "gather");
  Tensor out = op::empty(index.sizes(), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  Shape ss(self.strides().begin(), self.strides().end());
  const int64_t dim_stride = nd == 0 ? 0 : ss[d];
  if (nd > 0) ss[d] = 0;
  ss.resize(out.sizes().size(), 0);
  const auto calc = calc3(out.sizes(), out.strides(), ss, idx.strides(), "gather");
  CudaDeviceSetter guard(self.device().index);
  check_launch(
      "gather kernel launch",
      launch_gather_dim(out.data_ptr(), self.data_ptr(), idx.data<int64_t>(), calc, dim_stride, out.numel(),
                        static_cast<int>(itemsize(self.dtype())), current_cuda_stream(self.device())));
  return out;
}

Tensor index_select_cuda(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t nd = self.dim();
  const int64_t d = wrap_dim(dim, std::max<int64_t>(nd, 1), "index_select");
  const Tensor idx = checked_index(index, self, nd == 0 ? 1 : self.sizes()[d], "index_select");
  Tensor out = op::empty(meta::index_select("index_select", self, dim, index), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  Shape ss(self.strides().begin(), self.strides().end());
  Shape is(static_cast<size_t>(nd), 0);
  const int64_t dim_stride = nd == 0 ? 0 : ss[d];
  if (nd > 0) {
    ss[d] = 0;
    is[d] = idx.dim() == 0 ? 0 : idx.strides()[0];
  }
  const auto calc = calc3(out.sizes(), out.strides(), ss, is, "index_select");
  CudaDeviceSetter guard(self.device().index);
  check_launch(
      "index_select kernel launch",
      launch_gather_dim(out.data_ptr(), self.data_ptr(), idx.data<int64_t>(), calc, dim_stride, out.numel(),
                        static_cast<int>(itemsize(self.dtype())), current_cuda_stream(self.device())));
  return out;
}

// The dim, index and src passed meta::check_scatter; 0-d tensors go as (1,) (the offsets need one
// stride per dim of index).
Tensor scatter_add_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (self.dim() == 0 || index.dim() == 0 || src.dim() == 0) {
    const auto one_d = [](const Tensor& t) { return t.dim() == 0 ? op::view(t, Shape{1}) : t; };
    const Tensor out = scatter_add_cuda(one_d(self), self.dim() == 0 ? 0 : dim, one_d(index), one_d(src));
    return self.dim() == 0 ? op::view(out, Shape{}) : out;
  }
  const int64_t nd = self.dim();
  const int64_t d = wrap_dim(dim, nd, "scatter_add");
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
                "[scatter_add] with dtype ", dtype_name(self.dtype()),
                " is not yet implemented on CUDA (float32 and float64 are)");
  FB_CHECK(src.device() == self.device(), "[scatter_add] expected all tensors to be on the same device, got ",
           self.device().str(), " and ", src.device().str());
  Tensor out = op::clone(self, MemoryFormat::Contiguous);
  if (index.numel() == 0) return out;  // an empty index may have another rank
  const Tensor idx = checked_index(index, self, self.sizes()[d], "scatter_add");
  Shape os(out.strides().begin(), out.strides().end());
  const int64_t dim_stride = nd == 0 ? 0 : os[d];
  if (nd > 0) os[d] = 0;
  const auto calc = calc3(idx.sizes(), os, src.strides(), idx.strides(), "scatter_add");
  CudaDeviceSetter guard(self.device().index);
  check_launch("scatter_add kernel launch",
               launch_scatter_add_dim(out.data_ptr(), src.data_ptr(), idx.data<int64_t>(), calc, dim_stride,
                                      idx.numel(), self.dtype() == ScalarType::Float64,
                                      current_cuda_stream(self.device())));
  return out;
}

// Note [Structured kernels]: out has clamp's dtype (self promoted with the bounds as Python numbers),
// or is self in place; a bound is given (the meta step's check_clamp_bounds). maximum's and minimum's
// out kernels compute in out's dtype.
void clamp_out_cuda(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                    const std::optional<Scalar>& max) {
  const Tensor* src = &self;
  if (min) {
    op::maximum.run_out(out, self, scalar_to_tensor(*min));
    src = &out;
  }
  if (max) op::minimum.run_out(out, *src, scalar_to_tensor(*max));
}

Tensor clamp_tensor_cuda(const Tensor& self, const std::optional<Tensor>& min,
                         const std::optional<Tensor>& max) {
  FB_CHECK_VALUE(min || max, "[clamp] at least one of min and max must not be None");
  Tensor out = self;
  if (min) out = op::maximum(out, *min);
  if (max) out = op::minimum(out, *max);
  return out.is_same(self) ? op::clone(self, MemoryFormat::Contiguous) : out;
}

// cat: the output allocated once, each part copied into its slice by the
// strided copy kernel (with the dtype cast); the checks and the shape are the
// meta step's (meta::check_cat, meta::cat), as on the CPU.
Tensor cat_cuda(const TensorList& tensors, int64_t dim) {
  // As in PyTorch, 1-D empty tensors are skipped (legacy: they act as "nothing").
  TensorList parts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  const ScalarType dtype = meta::promote_list(tensors);
  const Device dev = parts.empty() ? tensors[0].device() : parts[0].device();
  if (parts.empty()) return op::empty(Shape{0}, dtype, dev);
  const int64_t d = wrap_dim(dim, parts[0].dim(), "cat");
  const Shape out_shape = meta::cat("cat", tensors, dim);
  Tensor out = op::empty(out_shape, dtype, dev);
  if (out.numel() == 0) return out;
  int64_t at = 0;
  for (const auto& t : parts) {
    const int64_t n = t.sizes()[static_cast<size_t>(d)];
    if (n == 0) continue;
    Tensor dst = op::slice(out, d, at, at + n, 1);
    op::copy_(dst, t);
    at += n;
  }
  return out;
}

}  // namespace

void register_indexing_kernels() {
  register_out_via_copy<gather_cuda>(op::gather);
  register_out_via_copy<index_select_cuda>(op::index_select);
  register_out_via_copy<scatter_add_cuda>(op::scatter_add);
  op::clamp.register_out_kernel(DispatchKey::CUDA, clamp_out_cuda);
  op::clamp_tensor.register_kernel(DispatchKey::CUDA, clamp_tensor_cuda);
  register_out_via_copy<cat_cuda>(op::cat);
}

}  // namespace flambeau::cuda
