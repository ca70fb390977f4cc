// Device-generic kernels of nn primitives (Note [Dispatch]: the Generic key),
// composed of dispatched ops: every device without a kernel of its own runs
// them (CUDA, a plug-in device; the meta device gets their shapes and dtypes),
// while the CPU keeps its one-pass kernels. So autograd, nn and the composites
// call these ops on any device and the dispatcher picks the kernel:
//   * softmax rows (src/cpu/softmax.cpp on the CPU): _log_softmax as
//     x - max - log(sum(exp(x - max))), _softmax as exp(_log_softmax), and
//     the backwards from the output y: g - exp(y) sum(g) and y (g - sum(g y));
//   * _linear_backward (src/cpu/linear_backward.cpp on the CPU): two mm and a
//     column sum;
//   * masked_fill, and the optimizer's _fused_sgd_ and _foreach_zero_ as
//     in-place elementwise ops.
// Each checks its arguments with the CPU kernel's messages.
#include <algorithm>
#include <tuple>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "nn_utils.h"

namespace flambeau {
namespace {
using detail::number;

// ---- softmax rows ----

Tensor log_softmax_generic(const Tensor& self, int64_t dim) {
  detail::check_generic_floating(self, "_log_softmax");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "_log_softmax");
  if (self.numel() == 0) return op::clone(self, MemoryFormat::Contiguous);
  if (self.dim() == 0) return op::sub(self, self, Scalar(1));  // log_softmax of one element is 0
  const int64_t dims[1] = {d};
  const Tensor m = op::amax(self, IntArrayRef(dims), true);
  const Tensor shifted = op::sub(self, m, Scalar(1));
  const Tensor lse = op::log(op::sum(op::exp(shifted), IntArrayRef(dims), true, std::nullopt));
  return op::sub(shifted, lse, Scalar(1));
}

Tensor softmax_generic(const Tensor& self, int64_t dim) { return op::exp(op::_log_softmax(self, dim)); }

Tensor log_softmax_backward_generic(const Tensor& grad, const Tensor& output, int64_t dim) {
  const int64_t d[1] = {wrap_dim(dim, output.dim(), "_log_softmax_backward_data")};  // checked by meta::check_softmax_grad
  return op::sub(grad, op::mul(op::exp(output), op::sum(grad, IntArrayRef(d), true, std::nullopt)),
                 Scalar(1));
}

Tensor softmax_backward_generic(const Tensor& grad, const Tensor& output, int64_t dim) {
  const int64_t d[1] = {wrap_dim(dim, output.dim(), "_softmax_backward_data")};  // checked by meta::check_softmax_grad
  const Tensor dot = op::sum(op::mul(grad, output), IntArrayRef(d), true, std::nullopt);
  return op::mul(output, op::sub(grad, dot, Scalar(1)));
}

// ---- linear's backward ----

std::tuple<Tensor, Tensor, Tensor> linear_backward_generic(const Tensor& grad_output, const Tensor& input,
                                                           const Tensor& weight, bool input_g, bool weight_g,
                                                           bool bias_g) {
  detail::check_linear_backward(grad_output, input, weight);
  Tensor gi, gw, gb;
  if (input_g) gi = op::mm(grad_output, weight);
  if (weight_g) gw = op::mm(op::transpose(grad_output, 0, 1), input);
  if (bias_g) gb = op::sum(grad_output, IntArrayRef(detail::kDim0), false, std::nullopt);
  return {gi, gw, gb};
}

// ---- masked_fill: where(mask, value, self), the value cast to self's dtype first ----

Tensor masked_fill_generic(const Tensor& self, const Tensor& mask, const Scalar& value) {
  detail::check_masked_fill(self, mask, value);
  return op::where(mask, to_dtype(scalar_to_tensor(value), self.dtype()), self);
}

// ---- optimizer steps ----

// PyTorch's SGD step (torch.optim.sgd._single_tensor_sgd) with in-place ops.
void fused_sgd_generic(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
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

void foreach_zero_generic(const TensorList& tensors) {
  for (const Tensor& t : tensors) {
    Tensor x = t;
    op::fill_(x, Scalar(int64_t{0}));
  }
}

FB_REGISTER_KERNEL(op::_log_softmax, Generic, log_softmax_generic);
FB_REGISTER_KERNEL(op::_softmax, Generic, softmax_generic);
FB_REGISTER_KERNEL(op::_log_softmax_backward_data, Generic, log_softmax_backward_generic);
FB_REGISTER_KERNEL(op::_softmax_backward_data, Generic, softmax_backward_generic);
FB_REGISTER_KERNEL(op::_linear_backward, Generic, linear_backward_generic);
FB_REGISTER_KERNEL(op::masked_fill, Generic, masked_fill_generic);
FB_REGISTER_KERNEL(op::_fused_sgd_, Generic, fused_sgd_generic);
FB_REGISTER_KERNEL(op::_foreach_zero_, Generic, foreach_zero_generic);

}  // namespace
}  // namespace flambeau
