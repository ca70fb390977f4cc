// CUDA kernels of advanced indexing: index (self[indices]) and index_put_
// (self[indices] = values, or += with accumulate), hence also x[idx],
// x[mask], x[idx] = v, masked_select and masked_scatter (core's composites).
//
// Note [CUDA advanced indexing]: as core's Note [Advanced indexing], the
// index tensors (int64/int32, or bool/uint8 masks, replaced by the
// coordinates of their true elements: the mask is read on the host, one
// sync, as PyTorch's nonzero) broadcast to a shape B; the result has shape
// pre + B + post (pre: self's dims before the indexed ones when those are
// adjacent, else none). The plan is a tensor of element offsets into self,
// one per result element, computed with dispatched ops on self's device:
//   offsets = sum_k index_k * stride_k (over B) + pre and post dims' aranges
// after a bounds check (one sync) and the wrap of negative indices. index
// then gathers with index_select over a 1-D view of self's memory;
// index_put_ writes (or atomically adds) values expanded to the result's
// shape at those offsets (index_put.cu), so with duplicate indices one of
// the writes wins, as PyTorch on CUDA. The plan being made of dispatched ops,
// it runs on cpu tensors too: the host tests (_C._index_on_host,
// _C._index_put_on_host) check it against core's CPU kernels. The checks that
// need no values (meta::check_index and meta::check_index_put: index's and
// index_put_'s check steps, which the dispatcher runs before these kernels) and the layout of B among
// self's dims (meta::index_layout) are core's meta step's, written once.
#include "advanced_index.h"

#include <vector>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "kernels.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

bool is_mask(ScalarType t) { return t == ScalarType::Bool || t == ScalarType::UInt8; }

Tensor on_device(const Tensor& t, Device dev) {
  if (t.device() == dev) return t;
  Tensor out = op::empty(t.sizes(), t.dtype(), dev);
  op::copy_(out, t);
  return out;
}

}  // namespace

IndexPlan plan_index(const char* op, const Tensor& self, const OptionalTensorList& indices) {
  const Device dev = self.device();
  const int64_t nd = self.dim();
  // One int64 tensor (or none) per dim of self, on self's device; masks become coordinates.
  std::vector<Tensor> per_dim(static_cast<size_t>(nd));
  int64_t d = 0;
  for (const std::optional<Tensor>& i : indices) {
    if (!i) {
      ++d;
      continue;
    }
    const Tensor& t = *i;
    if (is_mask(t.dtype())) {
      Tensor host = on_device(t, Device(DeviceType::CPU));
      const Tensor coords = op::nonzero(host);  // (count, t.dim()), row-major order: core's CPU kernel
      for (int64_t k = 0; k < t.dim(); ++k)
        per_dim[static_cast<size_t>(d + k)] =
            on_device(op::contiguous(op::select(coords, 1, k), MemoryFormat::Contiguous), dev);
      d += t.dim();
    } else {
      per_dim[static_cast<size_t>(d++)] = on_device(to_dtype(t, ScalarType::Int64), dev);
    }
  }

  IndexPlan p;
  const meta::IndexLayout layout = meta::index_layout(op, per_dim);
  p.index_shape = layout.index_shape;
  p.result_shape = layout.result_shape(self);
  const std::vector<int64_t>& pre_dims = layout.pre;
  const std::vector<int64_t>& post_dims = layout.post;
  (void)shape_nbytes(p.result_shape, ScalarType::Int64, op);  // the offsets must fit

  // Offsets over B: bounds-checked, negative indices wrapped, times self's strides.
  const auto npre = static_cast<int64_t>(pre_dims.size()), nb = static_cast<int64_t>(p.index_shape.size());
  const auto nr = static_cast<int64_t>(p.result_shape.size());
  Tensor offsets = zeros(Shape{}, ScalarType::Int64, dev);
  for (int64_t k = 0; k < nd; ++k) {
    const Tensor& t = per_dim[static_cast<size_t>(k)];
    if (!t.defined()) continue;
    const int64_t size = self.sizes()[static_cast<size_t>(k)];
    const Tensor bad =
        op::logical_or(op::lt(t, scalar_to_tensor(Scalar(-size))), op::ge(t, scalar_to_tensor(Scalar(size))));
    Tensor nbad = op::empty(Shape{}, ScalarType::Int64, Device(DeviceType::CPU));
    op::copy_(nbad, op::sum(to_dtype(bad, ScalarType::Int64), std::nullopt, false, std::nullopt));
    if (nbad.data<int64_t>()[0] != 0) {  // the error path: name the first bad index, as the CPU
      const Tensor host = op::contiguous(on_device(t, Device(DeviceType::CPU)), MemoryFormat::Contiguous);
      const Tensor hbad = op::contiguous(on_device(bad, Device(DeviceType::CPU)), MemoryFormat::Contiguous);
      int64_t v = 0;
      for (int64_t i = 0; i < host.numel(); ++i)
        if (hbad.data<bool>()[i]) {
          v = host.data<int64_t>()[i];
          break;
        }
      FB_CHECK_INDEX(false, "[", op, "] index ", v, " is out of bounds for dimension ", k, " with size ",
                     size);
    }
    const Tensor wrapped = op::where(op::lt(t, scalar_to_tensor(Scalar(int64_t{0}))),
                                     op::add(t, scalar_to_tensor(Scalar(size)), Scalar(1)), t);
    const Tensor term = op::mul(wrapped, scalar_to_tensor(Scalar(self.strides()[static_cast<size_t>(k)])));
    offsets = op::add(offsets, term, Scalar(1));  // broadcasts to B
  }
  // Place B's offsets among the result's dims, then add the pre and post dims' offsets.
  Shape bshape(static_cast<size_t>(nr), 1);
  for (int64_t j = 0; j < nb; ++j)
    bshape[static_cast<size_t>(npre + j)] = p.index_shape[static_cast<size_t>(j)];
  offsets = op::reshape(op::expand(offsets, p.index_shape), bshape);
  const auto add_dim = [&](int64_t self_dim, int64_t result_dim) {
    const int64_t size = self.sizes()[static_cast<size_t>(self_dim)];
    const Tensor steps = on_device(op::arange(Scalar(int64_t{0}), Scalar(size), Scalar(int64_t{1}),
                                              ScalarType::Int64, Device(DeviceType::CPU)),
                                   dev);
    Shape s(static_cast<size_t>(nr), 1);
    s[static_cast<size_t>(result_dim)] = size;
    offsets = op::add(
        offsets,
        op::reshape(op::mul(steps, scalar_to_tensor(Scalar(self.strides()[static_cast<size_t>(self_dim)]))),
                    s),
        Scalar(1));
  };
  for (int64_t j = 0; j < npre; ++j) add_dim(pre_dims[static_cast<size_t>(j)], j);
  for (size_t j = 0; j < post_dims.size(); ++j) add_dim(post_dims[j], npre + nb + static_cast<int64_t>(j));
  p.offsets = op::contiguous(op::expand(offsets, p.result_shape), MemoryFormat::Contiguous);
  return p;
}

Tensor flat_view(const Tensor& self) {
  // A 1-D view of self's memory from its first element: offsets index it.
  int64_t extent = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    FB_INTERNAL_ASSERT(self.strides()[static_cast<size_t>(d)] >= 0, "negative stride");
    if (self.sizes()[static_cast<size_t>(d)] == 0)
      return op::as_strided(self, Shape{0}, Shape{1}, self.storage_offset());
    extent += (self.sizes()[static_cast<size_t>(d)] - 1) * self.strides()[static_cast<size_t>(d)];
  }
  return op::as_strided(self, Shape{extent}, Shape{1}, self.storage_offset());
}

Tensor index_impl(const Tensor& self, const OptionalTensorList& indices) {
  const IndexPlan p = plan_index("index", self, indices);
  if (shape_numel(p.result_shape) == 0) return op::empty(p.result_shape, self.dtype(), self.device());
  const Tensor flat = flat_view(self);
  return op::reshape(op::index_select(flat, 0, op::reshape(p.offsets, Shape{-1})), p.result_shape);
}

Tensor& index_put_impl(Tensor& self, const OptionalTensorList& indices, const Tensor& values, bool accumulate,
                       const PutFn& put) {
  // meta::check_index_put (the check step) has checked the arguments; a mask's result shape is known now.
  const IndexPlan p = plan_index("index_put_", self, indices);
  const Shape& rshape = p.result_shape;
  meta::check_index_put_values("index_put_", values, rshape);
  if (shape_numel(rshape) > 0) {
    // A copy of the values (x[i] = x[j] reads values this op overwrites), expanded to the result's shape.
    Tensor v = op::empty(rshape, self.dtype(), self.device());
    op::copy_(v, values);
    put(self, p.offsets, v, accumulate);
  }
  self.impl()->bump_version();
  return self;
}

namespace {

void check_launch(int err, const char* what) {
  if (err != 0) throw_cuda_error(what, static_cast<cudaError_t>(err));
}

void put_cuda(Tensor& self, const Tensor& offsets, const Tensor& values, bool accumulate) {
  const int dt = static_cast<int>(self.dtype());
  if (accumulate)
    FB_CHECK_TYPE(dt == kFloat32 || dt == kFloat64 || dt == kInt64 || dt == kInt32,
                  "[index_put_] accumulate=True with dtype ", dtype_name(self.dtype()),
                  " is not yet implemented on CUDA (float32, float64, int64 and int32 are)");
  CudaDeviceSetter guard(self.device().index);
  check_launch(launch_index_put(self.data_ptr(), offsets.data<int64_t>(), values.data_ptr(), values.numel(),
                                dt, static_cast<int>(itemsize(self.dtype())), accumulate,
                                current_cuda_stream(self.device())),
               "index_put_ kernel launch");
}

Tensor index_cuda(const Tensor& self, const OptionalTensorList& indices) { return index_impl(self, indices); }
Tensor& index_put__cuda(Tensor& self, const OptionalTensorList& indices, const Tensor& values,
                        bool accumulate) {
  return index_put_impl(self, indices, values, accumulate, put_cuda);
}

}  // namespace

void register_advanced_index_kernels() {
  register_out_via_copy<index_cuda>(op::index);
  op::index_put_.register_kernel(DispatchKey::CUDA, index_put__cuda);
}

}  // namespace flambeau::cuda
