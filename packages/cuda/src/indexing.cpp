// CUDA kernels of the indexing ops along a dim: gather, index_select,
// scatter_add; and clamp (a composition of maximum/minimum, so NaN
// propagates as in PyTorch). Every index is checked on the host first (one
// small copy of the index's min and max): a kernel never reads or writes
// outside a storage.
#include <algorithm>
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "index.h"

namespace flambeau::cuda {
namespace {

int64_t item_int64(const Tensor& t) {
  Tensor h = op::empty(Shape{}, ScalarType::Int64, Device(DeviceType::CPU));
  op::copy_(h, t);
  return h.data<int64_t>()[0];
}

/// int64 index on self's device, each value in [0, size).
Tensor checked_index(const Tensor& index, const Tensor& self, int64_t size, const char* op) {
  FB_CHECK_TYPE(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, "[", op,
                "] index must be int64 or int32, got ", dtype_name(index.dtype()));
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
  FB_CHECK_VALUE(index.dim() == nd || (nd == 0 && index.dim() <= 1),
                 "[gather] index must have as many dims as input (", nd, "), got ", index.dim());
  for (int64_t k = 0; k < nd; ++k)
    FB_CHECK_VALUE(k == d || index.sizes()[k] <= self.sizes()[k], "[gather] index ", shape_str(index.sizes()),
                   " is larger than input ", shape_str(self.sizes()), " in dim ", k);
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
  FB_CHECK_VALUE(index.dim() <= 1, "[index_select] index must be 0-D or 1-D, got shape ",
                 shape_str(index.sizes()));
  const Tensor idx = checked_index(index, self, nd == 0 ? 1 : self.sizes()[d], "index_select");
  Shape oshape(self.sizes().begin(), self.sizes().end());
  if (nd > 0) oshape[d] = idx.numel();
  Tensor out = op::empty(oshape, self.dtype(), self.device());
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

Tensor scatter_add_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t nd = self.dim();
  const int64_t d = wrap_dim(dim, std::max<int64_t>(nd, 1), "scatter_add");
  FB_CHECK_TYPE(src.dtype() == self.dtype(), "[scatter_add] src must have self's dtype ",
                dtype_name(self.dtype()), ", got ", dtype_name(src.dtype()));
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
                "[scatter_add] with dtype ", dtype_name(self.dtype()),
                " is not yet implemented on CUDA (float32 and float64 are)");
  FB_CHECK(src.device() == self.device(), "[scatter_add] expected all tensors to be on the same device, got ",
           self.device().str(), " and ", src.device().str());
  FB_CHECK_VALUE(index.dim() == nd && src.dim() == nd,
                 "[scatter_add] index and src must have as many dims as self (", nd, "), got ", index.dim(),
                 " and ", src.dim());
  for (int64_t k = 0; k < nd; ++k)
    FB_CHECK_VALUE(index.sizes()[k] <= src.sizes()[k] && (k == d || index.sizes()[k] <= self.sizes()[k]),
                   "[scatter_add] index ", shape_str(index.sizes()), " is larger than src ",
                   shape_str(src.sizes()), " or self ", shape_str(self.sizes()), " in dim ", k);
  const Tensor idx = checked_index(index, self, nd == 0 ? 1 : self.sizes()[d], "scatter_add");
  Tensor out = op::clone(self, MemoryFormat::Contiguous);
  if (idx.numel() == 0) return out;
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

Tensor clamp_cuda(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  FB_CHECK_VALUE(min || max, "[clamp] at least one of min and max must not be None");
  Tensor out = self;
  if (min) out = op::maximum(out, scalar_to_tensor(*min));
  if (max) out = op::minimum(out, scalar_to_tensor(*max));
  return out.is_same(self) ? op::clone(self, MemoryFormat::Contiguous) : out;
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
// strided copy kernel (with the dtype cast); checks as the CPU kernel.
Tensor cat_cuda(const TensorList& tensors, int64_t dim) {
  FB_CHECK_VALUE(!tensors.empty(), "[cat] expected a non-empty list of tensors");
  // As in PyTorch, 1-D empty tensors are skipped (legacy: they act as "nothing").
  TensorList parts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  ScalarType dtype = tensors[0].dtype();
  for (const auto& t : tensors) dtype = promote_types(dtype, t.dtype());
  Device dev = tensors[0].device();
  for (const auto& t : tensors)
    if (t.device().type == DeviceType::CUDA) dev = t.device();
  for (const auto& t : tensors)
    FB_CHECK(t.device() == dev, "[cat] expected all tensors to be on the same device, but found ", dev.str(),
             " and ", t.device().str());
  if (parts.empty()) return op::empty(Shape{0}, dtype, dev);
  const Tensor& ref = parts[0];
  FB_CHECK_VALUE(ref.dim() > 0, "[cat] zero-dimensional tensor cannot be concatenated");
  const int64_t d = wrap_dim(dim, ref.dim(), "cat");
  Shape out_shape(ref.sizes().begin(), ref.sizes().end());
  out_shape[static_cast<size_t>(d)] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = parts[i];
    FB_CHECK_VALUE(t.dim() == ref.dim(), "[cat] tensors must have the same number of dims: shape ",
                   shape_str(ref.sizes()), " and shape ", shape_str(t.sizes()));
    for (int64_t k = 0; k < ref.dim(); ++k)
      FB_CHECK_VALUE(k == d || t.sizes()[static_cast<size_t>(k)] == ref.sizes()[static_cast<size_t>(k)],
                     "[cat] sizes must match except in dimension ", d, ": shapes ", shape_str(ref.sizes()),
                     " and ", shape_str(t.sizes()), " differ in dimension ", k);
    FB_CHECK(!__builtin_add_overflow(out_shape[static_cast<size_t>(d)], t.sizes()[static_cast<size_t>(d)],
                                     &out_shape[static_cast<size_t>(d)]),
             "[cat] the sizes in dimension ", d, " of the tensors add up to more than int64 can count");
  }
  shape_nbytes(out_shape, dtype, "cat");
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
  op::gather.register_kernel(DispatchKey::CUDA, gather_cuda);
  op::index_select.register_kernel(DispatchKey::CUDA, index_select_cuda);
  op::scatter_add.register_kernel(DispatchKey::CUDA, scatter_add_cuda);
  op::clamp.register_kernel(DispatchKey::CUDA, clamp_cuda);
  op::clamp_tensor.register_kernel(DispatchKey::CUDA, clamp_tensor_cuda);
  op::cat.register_kernel(DispatchKey::CUDA, cat_cuda);
}

}  // namespace flambeau::cuda
