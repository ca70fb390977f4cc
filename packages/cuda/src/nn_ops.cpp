// CUDA kernels of the nn primitives the MLP and NCF models train with:
// _log_softmax, mse_loss (+ backward), embedding (+ dense backward) and the
// fused SGD step. The first three are compositions of flambeau-cuda's own
// kernels (elementwise, reductions), each enqueued on the current stream;
// embedding gathers and scatter-adds rows (index.cu) after checking every
// index on the host (one small copy: never a read outside the table).
#include <algorithm>
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "index.h"

namespace flambeau::cuda {
namespace {

Tensor number(double v) { return scalar_to_tensor(Scalar(v)); }

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

Tensor log_softmax_cuda(const Tensor& self, int64_t dim) {
  check_floating(self, "_log_softmax");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "_log_softmax");
  if (self.numel() == 0) return op::clone(self, MemoryFormat::Contiguous);
  if (self.dim() == 0) return op::sub(self, self, Scalar(1));  // log_softmax of one element is 0
  const int64_t dims[1] = {d};
  const Tensor m = op::amax(self, IntArrayRef(dims), true);
  const Tensor shifted = op::sub(self, m, Scalar(1));
  const Tensor lse = op::log(op::sum(op::exp(shifted), IntArrayRef(dims), true, std::nullopt));
  return op::sub(shifted, lse, Scalar(1));
}

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

void check_loss(const char* op, const Tensor& self, const Tensor& target, int64_t reduction) {
  FB_CHECK_VALUE(reduction >= 0 && reduction <= 2, "[", op,
                 "] reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
  check_floating(self, op);
  FB_CHECK_TYPE(target.dtype() == self.dtype(), "[", op, "] input and target must have the same dtype, got ",
                dtype_name(self.dtype()), " and ", dtype_name(target.dtype()));
  FB_CHECK_VALUE(std::ranges::equal(self.sizes(), target.sizes()), "[", op, "] input of shape ",
                 shape_str(self.sizes()), " and target of shape ", shape_str(target.sizes()), " differ");
}

Tensor mse_loss_cuda(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_loss("mse_loss", self, target, reduction);
  const Tensor d = op::sub(self, target, Scalar(1));
  const Tensor sq = op::mul(d, d);
  if (reduction == kNone) return sq;
  return reduction == kMean ? op::mean(sq, std::nullopt, false, std::nullopt)
                            : op::sum(sq, std::nullopt, false, std::nullopt);
}

Tensor mse_loss_backward_cuda(const Tensor& grad, const Tensor& self, const Tensor& target,
                              int64_t reduction) {
  check_loss("mse_loss_backward", self, target, reduction);
  const double scale = reduction == kMean && self.numel() > 0 ? 2.0 / static_cast<double>(self.numel()) : 2.0;
  return op::mul(op::mul(op::sub(self, target, Scalar(1)), number(scale)), grad);
}

/// int64 indices on the weight's device, each checked in [0, num).
Tensor checked_indices(const Tensor& indices, const Tensor& weight, int64_t num, const char* op) {
  FB_CHECK_TYPE(indices.dtype() == ScalarType::Int64 || indices.dtype() == ScalarType::Int32, "[", op,
                "] indices must be int64 or int32, got ", dtype_name(indices.dtype()));
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
  (void)padding_idx;
  (void)scale_grad_by_freq;
  if (sparse) throw NotImplementedError("[embedding] sparse=True (sparse gradients) is not supported");
  FB_CHECK_VALUE(weight.dim() == 2,
                 "[embedding] weight must be 2-D (num_embeddings, embedding_dim), got shape ",
                 shape_str(weight.sizes()));
  const int64_t num = weight.sizes()[0], d = weight.sizes()[1];
  const Tensor idx = checked_indices(indices, weight, num, "embedding");
  Shape oshape(indices.sizes().begin(), indices.sizes().end());
  oshape.push_back(d);
  shape_nbytes(oshape, weight.dtype(), "embedding");
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
  check_floating(grad_output, op);
  FB_CHECK_VALUE(num_weights >= 0, "[", op, "] num_weights must be >= 0, got ", num_weights);
  const int64_t d =
      grad_output.dim() > 0 ? grad_output.sizes()[static_cast<size_t>(grad_output.dim() - 1)] : 1;
  FB_CHECK_VALUE(grad_output.numel() == indices.numel() * d, "[", op, "] grad_output of shape ",
                 shape_str(grad_output.sizes()), " does not match indices of shape ",
                 shape_str(indices.sizes()));
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

// PyTorch's SGD step (torch.optim.sgd._single_tensor_sgd) with CUDA in-place ops.
void fused_sgd_cuda(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
                    double weight_decay, double momentum, double lr, double dampening, bool nesterov,
                    bool maximize, bool is_first_step) {
  const char* op = "_fused_sgd_";
  FB_CHECK_VALUE(grads.size() == params.size(), "[", op, "] got ", params.size(), " parameters and ",
                 grads.size(), " gradients");
  FB_CHECK_VALUE(momentum == 0 || momentum_buffers.size() == params.size(), "[", op, "] momentum=", momentum,
                 " needs one momentum buffer per parameter, got ", momentum_buffers.size(), " for ",
                 params.size(), " parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    Tensor g = maximize ? op::neg(grads[i]) : grads[i];
    if (weight_decay != 0) g = op::add(g, p, Scalar(weight_decay));
    if (momentum != 0) {
      Tensor buf = momentum_buffers[i];
      if (is_first_step) {
        op::copy_(buf, g);
      } else {
        op::mul_(buf, number(momentum));
        op::add_(buf, g, Scalar(1 - dampening));
      }
      g = nesterov ? op::add(g, buf, Scalar(momentum)) : buf;
    }
    op::add_(p, g, Scalar(-lr));
  }
}

}  // namespace

void register_nn_kernels() {
  op::_log_softmax.register_kernel(DispatchKey::CUDA, log_softmax_cuda);
  op::mse_loss.register_kernel(DispatchKey::CUDA, mse_loss_cuda);
  op::mse_loss_backward.register_kernel(DispatchKey::CUDA, mse_loss_backward_cuda);
  op::embedding.register_kernel(DispatchKey::CUDA, embedding_cuda);
  op::embedding_dense_backward.register_kernel(DispatchKey::CUDA, embedding_dense_backward_cuda);
  op::_fused_sgd_.register_kernel(DispatchKey::CUDA, fused_sgd_cuda);
}

}  // namespace flambeau::cuda
