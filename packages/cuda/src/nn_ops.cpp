// CUDA kernels of embedding and its dense backward: rows gathered and
// scatter-added (index.cu) after every index is checked on the host (one
// small copy: never a read outside the table). The nn compositions of
// dispatched ops (log_softmax, the losses, masked_fill, the SGD step) are
// core's Generic kernels (src/generic/nn_ops.cpp, losses.cpp), which CUDA
// runs as every other device (out= of a structured loss on CUDA: the host fallback of Note
// [Structured kernels]).
#include <algorithm>
#include <vector>

#include "backend.h"
#include "flambeau/dispatch.h"
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

void check_floating(const Tensor& t, const char* op) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op,
                "] with dtype ", dtype_name(t.dtype()),
                " is not yet implemented on CUDA (float32 and float64 are)");
}

/// int64 indices on the weight's device, each checked in [0, num) (their dtype passed the meta step).
Tensor checked_indices(const Tensor& indices, const Tensor& weight, int64_t num, const char* op) {
  // The table's device check lets a cpu 0-dim tensor through (a wrapped number): the kernel reads the
  // indices on the device.
  FB_CHECK(indices.device() == weight.device(), "[", op,
           "] expected all tensors to be on the same device, but found at least two devices, ",
           weight.device().str(), " and ", indices.device().str());
  Tensor idx = op::contiguous(to_dtype(indices, ScalarType::Int64), MemoryFormat::Contiguous);
  if (idx.numel() > 0) {
    const int64_t lo = item_int64(op::min(idx)), hi = item_int64(op::max(idx));
    FB_CHECK_INDEX(lo >= 0 && hi < num, "[", op, "] index ", lo < 0 ? lo : hi, " is out of range for ", num,
                   " embeddings (indices must be in [0, ", num, "))");
  }
  return idx;
}

Tensor embedding_cuda(const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                      bool scale_grad_by_freq, bool sparse) {
  // weight (2-D), the indices' dtype and sparse passed meta::check_embedding, the output's size the meta
  // step's shape_nbytes.
  (void)padding_idx;
  (void)scale_grad_by_freq;
  (void)sparse;
  const int64_t num = weight.sizes()[0], d = weight.sizes()[1];
  const Tensor idx = checked_indices(indices, weight, num, "embedding");
  Shape oshape(indices.sizes().begin(), indices.sizes().end());
  oshape.push_back(d);
  Tensor out = op::empty(oshape, weight.dtype(), weight.device());
  const Tensor w = op::contiguous(weight, MemoryFormat::Contiguous);
  CudaDeviceSetter guard(weight.device().index);
  const int err = launch_gather_rows(out.data_ptr(), w.data_ptr(), idx.data<int64_t>(), idx.numel(),
                                     d * static_cast<int64_t>(itemsize(weight.dtype())),
                                     current_cuda_stream(weight.device()));
  if (err != 0) throw_cuda_error("embedding kernel launch", static_cast<cudaError_t>(err));
  return out;
}

Tensor embedding_dense_backward_cuda(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                     int64_t padding_idx, bool scale_grad_by_freq) {
  const char* op = "embedding_dense_backward";
  if (scale_grad_by_freq)
    throw NotImplementedError(
        "[embedding_dense_backward] scale_grad_by_freq=True is not yet implemented on CUDA");
  check_floating(grad_output, op);  // this backend's own limit
  // num_weights, the indices' dtype and grad_output's shape (indices' plus one trailing dim) passed
  // meta::check_embedding_backward.
  const int64_t d = grad_output.sizes()[static_cast<size_t>(grad_output.dim() - 1)];
  const Tensor idx = checked_indices(indices, grad_output, num_weights, op);
  Tensor out = op::empty(Shape{num_weights, d}, grad_output.dtype(), grad_output.device());
  op::fill_(out, Scalar(0));
  const Tensor g = op::contiguous(grad_output, MemoryFormat::Contiguous);
  CudaDeviceSetter guard(out.device().index);
  const int err =
      launch_scatter_add_rows(out.data_ptr(), g.data_ptr(), idx.data<int64_t>(), idx.numel(), d, padding_idx,
                              out.dtype() == ScalarType::Float64, current_cuda_stream(out.device()));
  if (err != 0) throw_cuda_error("embedding_dense_backward kernel launch", static_cast<cudaError_t>(err));
  return out;
}

}  // namespace

void register_nn_kernels() {
  register_out_via_copy<embedding_cuda>(op::embedding);
  register_out_via_copy<embedding_dense_backward_cuda>(op::embedding_dense_backward);
}

}  // namespace flambeau::cuda
