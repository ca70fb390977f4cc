// CUDA kernels of the nn primitives the MLP and NCF models train with:
// _log_softmax, mse_loss (+ backward), embedding (+ dense backward) and the
// fused SGD step. The first three are compositions of flambeau-cuda's own
// kernels (elementwise, reductions), each enqueued on the current stream;
// embedding gathers and scatter-adds rows (index.cu) after checking every
// index on the host (one small copy: never a read outside the table).
#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

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

// ---- cross entropy and nll over (N, C) with class indices ----
// Composed of CUDA kernels: a one-hot of the targets (an eq against the
// class indices) picks each row's logit and class weight; ignored rows get
// weight 0. lse (the rows' log-sum-exp, shape (N,)) goes to the backward.
// Other forms (spatial dims, class probabilities, label smoothing) raise.

struct ClassTargets {
  Tensor onehot;  // (N, C) in the logits' dtype
  Tensor weight;  // (N,) per-row weight, 0 where ignored
};

Tensor to_device(const Tensor& cpu, Device dev) {
  Tensor out = op::empty(cpu.sizes(), cpu.dtype(), dev);
  op::copy_(out, cpu);
  return out;
}

void check_nll_args(const char* op, const Tensor& self, const Tensor& target,
                    const std::optional<Tensor>& weight, int64_t reduction, double label_smoothing) {
  check_floating(self, op);
  FB_CHECK_VALUE(reduction >= 0 && reduction <= 2, "[", op,
                 "] reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
  if (self.dim() != 2 || target.dim() != 1 || label_smoothing != 0.0 ||
      (target.dtype() != ScalarType::Int64 && target.dtype() != ScalarType::Int32))
    throw NotImplementedError(detail::cat_str(
        "[", op,
        "] on CUDA is implemented for (N, C) logits with (N,) int64 class indices and no label smoothing; ",
        "got input ", shape_str(self.sizes()), " and target ", shape_str(target.sizes()), " of dtype ",
        dtype_name(target.dtype()), ": this form is not yet implemented on CUDA"));
  FB_CHECK_VALUE(self.sizes()[0] == target.sizes()[0], "[", op, "] expected input batch size ",
                 self.sizes()[0], " to match target batch size ", target.sizes()[0]);
  FB_CHECK(target.device() == self.device() && (!weight || weight->device() == self.device()), "[", op,
           "] expected all tensors to be on the same device, got ", self.device().str(), " and ",
           target.device().str());
  if (weight) {
    FB_CHECK_VALUE(weight->dim() == 1 && weight->sizes()[0] == self.sizes()[1], "[", op,
                   "] weight must be a 1-D tensor of the ", self.sizes()[1], " classes, got shape ",
                   shape_str(weight->sizes()));
    FB_CHECK_TYPE(weight->dtype() == self.dtype(), "[", op, "] weight must have the input's dtype ",
                  dtype_name(self.dtype()), ", got ", dtype_name(weight->dtype()));
  }
}

IntArrayRef kDim1() {
  static const int64_t d[1] = {1};
  return IntArrayRef(d);
}

ClassTargets class_targets(const char* op, const Tensor& self, const Tensor& target,
                           const std::optional<Tensor>& weight, int64_t ignore_index) {
  const int64_t n = self.sizes()[0], c = self.sizes()[1];
  const Device dev = self.device();
  const Tensor t = to_dtype(target, ScalarType::Int64);
  const Tensor valid = op::ne(t, scalar_to_tensor(Scalar(ignore_index)));
  if (n > 0) {  // every target not ignored is a class index (checked on the host: one small copy)
    const Tensor in_range = op::mul(to_dtype(op::ge(t, number(0)), ScalarType::Int64),
                                    to_dtype(op::lt(t, scalar_to_tensor(Scalar(c))), ScalarType::Int64));
    const Tensor ok = op::maximum(in_range, to_dtype(op::eq(valid, number(0)), ScalarType::Int64));
    const int64_t good = item_int64(op::sum(ok, std::nullopt, false, std::nullopt));
    FB_CHECK_INDEX(good == n, "[", op, "] ", n - good,
                   " target(s) out of bounds: class indices must be in [0, ", c,
                   ") or ignore_index=", ignore_index);
  }
  const Tensor classes = to_device(
      op::arange(Scalar(0), Scalar(c), Scalar(1), ScalarType::Int64, Device(DeviceType::CPU)), dev);  // (C,)
  const Tensor onehot = to_dtype(op::eq(op::unsqueeze(t, 1), op::unsqueeze(classes, 0)), self.dtype());
  Tensor w = to_dtype(valid, self.dtype());
  if (weight)
    w = op::mul(w, op::sum(op::mul(onehot, op::unsqueeze(*weight, 0)), kDim1(), false, std::nullopt));
  return {onehot, w};
}

Tensor reduce_rows(const Tensor& loss, const Tensor& w, int64_t reduction) {
  if (reduction == kNone) return loss;
  const Tensor total = op::sum(loss, std::nullopt, false, std::nullopt);
  return reduction == kSum ? total : op::div(total, op::sum(w, std::nullopt, false, std::nullopt));
}

/// d(loss)/d(row i) factor: grad_output (none: per row), / sum(w) for mean.
Tensor row_scale(const Tensor& grad_output, const Tensor& w, int64_t reduction) {
  if (reduction == kMean) return op::div(grad_output, op::sum(w, std::nullopt, false, std::nullopt));
  return grad_output;  // (N,) for none, 0-dim for sum: broadcast below
}

std::tuple<Tensor, Tensor> cross_entropy_cuda(const Tensor& self, const Tensor& target,
                                              const std::optional<Tensor>& weight, int64_t reduction,
                                              int64_t ignore_index, double label_smoothing) {
  check_nll_args("_cross_entropy", self, target, weight, reduction, label_smoothing);
  const ClassTargets ct = class_targets("_cross_entropy", self, target, weight, ignore_index);
  Tensor lse;
  if (self.sizes()[1] == 0 || self.sizes()[0] == 0) {
    lse = op::empty(Shape{self.sizes()[0]}, self.dtype(), self.device());
    op::fill_(lse, Scalar(-INFINITY));
  } else {
    const Tensor m = op::amax(self, kDim1(), true);
    lse = op::add(op::amax(self, kDim1(), false),
                  op::log(op::sum(op::exp(op::sub(self, m, Scalar(1))), kDim1(), false, std::nullopt)),
                  Scalar(1));
  }
  const Tensor picked = op::sum(op::mul(self, ct.onehot), kDim1(), false, std::nullopt);
  const Tensor loss = op::mul(op::sub(lse, picked, Scalar(1)), ct.weight);
  return {reduce_rows(loss, ct.weight, reduction), lse};
}

Tensor cross_entropy_backward_cuda(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                   const Tensor& lse, const std::optional<Tensor>& weight, int64_t reduction,
                                   int64_t ignore_index, double label_smoothing) {
  check_nll_args("_cross_entropy_backward", self, target, weight, reduction, label_smoothing);
  const ClassTargets ct = class_targets("_cross_entropy_backward", self, target, weight, ignore_index);
  const Tensor softmax = op::exp(op::sub(self, op::unsqueeze(lse, 1), Scalar(1)));
  Tensor scale = op::mul(row_scale(grad_output, ct.weight, reduction), ct.weight);  // (N,)
  return op::mul(op::sub(softmax, ct.onehot, Scalar(1)), op::unsqueeze(scale, 1));
}

Tensor nll_loss_cuda(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                     int64_t reduction, int64_t ignore_index) {
  check_nll_args("nll_loss_nd", self, target, weight, reduction, 0.0);
  const ClassTargets ct = class_targets("nll_loss_nd", self, target, weight, ignore_index);
  const Tensor loss =
      op::mul(op::neg(op::sum(op::mul(self, ct.onehot), kDim1(), false, std::nullopt)), ct.weight);
  return reduce_rows(loss, ct.weight, reduction);
}

Tensor nll_loss_backward_cuda(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index) {
  check_nll_args("nll_loss_nd_backward", self, target, weight, reduction, 0.0);
  const ClassTargets ct = class_targets("nll_loss_nd_backward", self, target, weight, ignore_index);
  const Tensor scale = op::mul(row_scale(grad_output, ct.weight, reduction), ct.weight);
  return op::mul(op::neg(ct.onehot), op::unsqueeze(scale, 1));
}

// binary_cross_entropy_with_logits (+ backward) as the CPU kernel, composed of
// CUDA elementwise ops: loss = w ((1 - t) x + lw (log1p(exp(-|x|)) + max(-x, 0)))
// with lw = (pw - 1) t + 1; d loss / dx = w ((pw t + 1 - t) sigmoid(x) - pw t).
struct BceArgs {
  Tensor x, t, w, pw;  // t, w, pw in x's dtype (w, pw undefined when absent)
};

BceArgs bce_prepare(const char* op, const Tensor& self, const Tensor& target,
                    const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                    int64_t reduction) {
  FB_CHECK_VALUE(reduction >= 0 && reduction <= 2, "[", op,
                 "] reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
  check_floating(self, op);
  FB_CHECK_TYPE(is_floating(target.dtype()), "[", op, "] target must be a floating point tensor, got dtype ",
                dtype_name(target.dtype()));
  FB_CHECK_VALUE(std::ranges::equal(self.sizes(), target.sizes()), "[", op, "] target shape ",
                 shape_str(target.sizes()), " must be the same as input shape ", shape_str(self.sizes()));
  BceArgs a;
  a.x = self;
  a.t = to_dtype(target, self.dtype());
  auto side = [&](const std::optional<Tensor>& w, const char* what) -> Tensor {
    if (!w || !w->defined()) return Tensor();
    check_floating(*w, op);
    const int64_t nd = self.dim(), wd = w->dim();
    bool ok = wd <= nd;
    for (int64_t i = 1; ok && i <= wd; ++i) {
      const int64_t ws = w->sizes()[static_cast<size_t>(wd - i)];
      ok = ws == 1 || ws == self.sizes()[static_cast<size_t>(nd - i)];
    }
    FB_CHECK_VALUE(ok, "[", op, "] ", what, " shape ", shape_str(w->sizes()),
                   " does not broadcast to the input shape ", shape_str(self.sizes()));
    return to_dtype(*w, self.dtype());
  };
  a.w = side(weight, "weight");
  a.pw = side(pos_weight, "pos_weight");
  return a;
}

Tensor bce_logits_cuda(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                       const std::optional<Tensor>& pos_weight, int64_t reduction) {
  const char* op = "binary_cross_entropy_with_logits";
  const BceArgs a = bce_prepare(op, self, target, weight, pos_weight, reduction);
  const Tensor& x = a.x;
  const Tensor one = number(1);
  // log1p(exp(-|x|)) + max(-x, 0)
  const Tensor soft = op::add(op::log1p(op::exp(op::neg(op::abs(x)))), op::relu(op::neg(x)), Scalar(1));
  const Tensor lw =
      a.pw.defined() ? op::add(op::mul(op::sub(a.pw, one, Scalar(1)), a.t), one, Scalar(1)) : Tensor();
  Tensor loss =
      op::add(op::mul(op::sub(one, a.t, Scalar(1)), x), lw.defined() ? op::mul(lw, soft) : soft, Scalar(1));
  if (a.w.defined()) loss = op::mul(a.w, loss);
  if (reduction == kNone) return loss;
  return reduction == kMean ? op::mean(loss, std::nullopt, false, std::nullopt)
                            : op::sum(loss, std::nullopt, false, std::nullopt);
}

Tensor bce_logits_backward_cuda(const Tensor& grad, const Tensor& self, const Tensor& target,
                                const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                                int64_t reduction) {
  const char* op = "binary_cross_entropy_with_logits_backward";
  const BceArgs a = bce_prepare(op, self, target, weight, pos_weight, reduction);
  FB_CHECK_TYPE(is_floating(grad.dtype()), "[", op,
                "] grad_output must be a float32 or float64 tensor, got dtype ", dtype_name(grad.dtype()));
  if (reduction == kNone)
    FB_CHECK_VALUE(std::ranges::equal(grad.sizes(), self.sizes()), "[", op, "] grad_output shape ",
                   shape_str(grad.sizes()), " does not match the loss shape ", shape_str(self.sizes()));
  else
    FB_CHECK_VALUE(grad.numel() == 1, "[", op,
                   "] grad_output of a reduced loss must have one element, got shape ",
                   shape_str(grad.sizes()));
  const Tensor one = number(1);
  const Tensor pt = a.pw.defined() ? op::mul(a.pw, a.t) : a.t;
  // (pt + 1 - t) sigmoid(x) - pt
  Tensor d =
      op::sub(op::mul(op::add(op::sub(pt, a.t, Scalar(1)), one, Scalar(1)), op::sigmoid(a.x)), pt, Scalar(1));
  if (a.w.defined()) d = op::mul(a.w, d);
  const Tensor g = to_dtype(grad, self.dtype());
  if (reduction == kNone) return op::mul(d, g);
  Tensor s = op::sum(g, std::nullopt, false, std::nullopt);  // the one element, as a 0-d tensor
  if (reduction == kMean && self.numel() > 0) s = op::div(s, number(static_cast<double>(self.numel())));
  return op::mul(d, s);
}

// ---- pointwise losses (l1, smooth_l1, huber, binary_cross_entropy) as the
// CPU kernels, composed of CUDA elementwise ops; self and target broadcast.
void check_pointwise(const char* op, const Tensor& self, const Tensor& target, int64_t reduction) {
  FB_CHECK_VALUE(reduction >= 0 && reduction <= 2, "[", op,
                 "] reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
  check_floating(self, op);
  FB_CHECK_TYPE(is_floating(target.dtype()), "[", op, "] target must be a floating point tensor, got dtype ",
                dtype_name(target.dtype()));
  broadcast_shapes(self.sizes(), target.sizes(), op);
}

Tensor reduce_loss(const Tensor& loss, int64_t reduction) {
  if (reduction == kNone) return loss;
  return reduction == kMean ? op::mean(loss, std::nullopt, false, std::nullopt)
                            : op::sum(loss, std::nullopt, false, std::nullopt);
}

/// grad_input = d * grad (none) or d * grad / numel (mean) or d * grad (sum), grad of one element.
Tensor scale_by_grad(const char* op, const Tensor& d, const Tensor& grad, int64_t reduction) {
  FB_CHECK_TYPE(is_floating(grad.dtype()), "[", op,
                "] grad_output must be a float32 or float64 tensor, got dtype ", dtype_name(grad.dtype()));
  const Tensor g = to_dtype(grad, d.dtype());
  if (reduction == kNone) {
    FB_CHECK_VALUE(std::ranges::equal(grad.sizes(), d.sizes()), "[", op, "] grad_output shape ",
                   shape_str(grad.sizes()), " does not match the loss shape ", shape_str(d.sizes()));
    return op::mul(d, g);
  }
  FB_CHECK_VALUE(grad.numel() == 1, "[", op,
                 "] grad_output of a reduced loss must have one element, got shape ",
                 shape_str(grad.sizes()));
  Tensor s = op::sum(g, std::nullopt, false, std::nullopt);  // the one element, 0-d
  if (reduction == kMean && d.numel() > 0) s = op::div(s, number(static_cast<double>(d.numel())));
  return op::mul(d, s);
}

Tensor diff(const Tensor& self, const Tensor& target) {
  return op::sub(self, to_dtype(target, self.dtype()), Scalar(1));
}

Tensor l1_loss_cuda(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_pointwise("l1_loss", self, target, reduction);
  return reduce_loss(op::abs(diff(self, target)), reduction);
}
Tensor l1_loss_backward_cuda(const Tensor& grad, const Tensor& self, const Tensor& target,
                             int64_t reduction) {
  check_pointwise("l1_loss_backward", self, target, reduction);
  const Tensor d = diff(self, target);
  return scale_by_grad("l1_loss_backward", op::where(op::isnan(d), d, op::sign(d)), grad, reduction);
}

Tensor smooth_l1_loss_cuda(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  FB_CHECK_VALUE(beta >= 0, "[smooth_l1_loss] smooth_l1_loss does not support negative values for beta, got ",
                 beta);
  check_pointwise("smooth_l1_loss", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor ad = op::abs(d);
  const Tensor quad = op::div(op::mul(op::mul(d, d), number(0.5)), number(beta));
  const Tensor lin = op::sub(ad, number(0.5 * beta), Scalar(1));
  return reduce_loss(op::where(op::lt(ad, number(beta)), quad, lin), reduction);
}
Tensor smooth_l1_loss_backward_cuda(const Tensor& grad, const Tensor& self, const Tensor& target,
                                    int64_t reduction, double beta) {
  check_pointwise("smooth_l1_loss_backward", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor inner = op::where(op::ge(d, number(beta)), number(1), op::div(d, number(beta)));
  return scale_by_grad("smooth_l1_loss_backward", op::where(op::le(d, number(-beta)), number(-1), inner),
                       grad, reduction);
}

Tensor huber_loss_cuda(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  FB_CHECK_VALUE(delta > 0, "[huber_loss] huber_loss does not support non-positive values for delta, got ",
                 delta);
  check_pointwise("huber_loss", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor ad = op::abs(d);
  const Tensor quad = op::mul(op::mul(d, d), number(0.5));
  const Tensor lin = op::mul(op::sub(ad, number(0.5 * delta), Scalar(1)), number(delta));
  return reduce_loss(op::where(op::lt(ad, number(delta)), quad, lin), reduction);
}
Tensor huber_loss_backward_cuda(const Tensor& grad, const Tensor& self, const Tensor& target,
                                int64_t reduction, double delta) {
  check_pointwise("huber_loss_backward", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor inner = op::where(op::gt(d, number(delta)), number(delta), d);
  return scale_by_grad("huber_loss_backward", op::where(op::lt(d, number(-delta)), number(-delta), inner),
                       grad, reduction);
}

// binary_cross_entropy on probabilities: each log clamped at -100, the
// gradient's denominator at 1e-12; an input outside [0, 1] is an error (one sync).
void check_same_shape(const char* op, const Tensor& self, const Tensor& target) {
  FB_CHECK_VALUE(std::ranges::equal(self.sizes(), target.sizes()), "[", op, "] target shape ",
                 shape_str(target.sizes()), " must be the same as input shape ", shape_str(self.sizes()));
}
Tensor bce_weight(const char* op, const Tensor& self, const std::optional<Tensor>& weight) {
  if (!weight || !weight->defined()) return Tensor();
  check_floating(*weight, op);
  broadcast_shapes(self.sizes(), weight->sizes(), op);
  const int64_t nd = self.dim(), wd = weight->dim();
  bool ok = wd <= nd;
  for (int64_t i = 1; ok && i <= wd; ++i) {
    const int64_t ws = weight->sizes()[static_cast<size_t>(wd - i)];
    ok = ws == 1 || ws == self.sizes()[static_cast<size_t>(nd - i)];
  }
  FB_CHECK_VALUE(ok, "[", op, "] weight shape ", shape_str(weight->sizes()),
                 " does not broadcast to the input shape ", shape_str(self.sizes()));
  return to_dtype(*weight, self.dtype());
}
Tensor bce_cuda(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                int64_t reduction) {
  const char* op = "binary_cross_entropy";
  check_pointwise(op, self, target, reduction);
  check_same_shape(op, self, target);
  const Tensor w = bce_weight(op, self, weight);
  if (self.numel() > 0) {
    // !(0 <= x <= 1), NaN included
    const Tensor ok = op::logical_and(op::ge(self, number(0)), op::le(self, number(1)));
    const Tensor bad =
        op::sum(to_dtype(op::logical_not(ok), ScalarType::Int64), std::nullopt, false, std::nullopt);
    FB_CHECK_VALUE(item_int64(bad) == 0,
                   "[binary_cross_entropy] all elements of input should be between 0 and 1");
  }
  const Tensor t = to_dtype(target, self.dtype());
  const Tensor lx = op::maximum(op::log(self), number(-100));
  const Tensor l1x = op::maximum(op::log1p(op::neg(self)), number(-100));
  Tensor loss = op::sub(op::mul(op::sub(t, number(1), Scalar(1)), l1x), op::mul(t, lx), Scalar(1));
  if (w.defined()) loss = op::mul(w, loss);
  return reduce_loss(loss, reduction);
}
Tensor bce_backward_cuda(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction) {
  const char* op = "binary_cross_entropy_backward";
  check_pointwise(op, self, target, reduction);
  check_same_shape(op, self, target);
  const Tensor w = bce_weight(op, self, weight);
  const Tensor t = to_dtype(target, self.dtype());
  const Tensor den = op::maximum(op::mul(op::sub(number(1), self, Scalar(1)), self), number(1e-12));
  Tensor d = op::div(op::sub(self, t, Scalar(1)), den);
  if (w.defined()) d = op::mul(w, d);
  return scale_by_grad(op, d, grad, reduction);
}

// masked_fill: where(mask, value, self), the value cast to self's dtype first.
Tensor masked_fill_cuda(const Tensor& self, const Tensor& mask, const Scalar& value) {
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[masked_fill] mask must be a bool tensor, got dtype ",
                dtype_name(mask.dtype()));
  bool fits = mask.dim() <= self.dim();
  for (int64_t k = 1; fits && k <= mask.dim(); ++k) {
    const int64_t ms = mask.sizes()[static_cast<size_t>(mask.dim() - k)];
    fits = ms == 1 || ms == self.sizes()[static_cast<size_t>(self.dim() - k)];
  }
  FB_CHECK_VALUE(fits, "[masked_fill] mask of shape ", shape_str(mask.sizes()),
                 " cannot be broadcast to the shape of self ", shape_str(self.sizes()));
  check_scalar_fits(value, self.dtype(), "masked_fill");
  return op::where(mask, to_dtype(scalar_to_tensor(value), self.dtype()), self);
}

void foreach_zero_cuda(const TensorList& tensors) {
  for (const Tensor& t : tensors) {
    Tensor x = t;
    op::fill_(x, Scalar(int64_t{0}));
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
  op::_cross_entropy.register_kernel(DispatchKey::CUDA, cross_entropy_cuda);
  op::_cross_entropy_backward.register_kernel(DispatchKey::CUDA, cross_entropy_backward_cuda);
  op::nll_loss_nd.register_kernel(DispatchKey::CUDA, nll_loss_cuda);
  op::nll_loss_nd_backward.register_kernel(DispatchKey::CUDA, nll_loss_backward_cuda);
  op::binary_cross_entropy_with_logits.register_kernel(DispatchKey::CUDA, bce_logits_cuda);
  op::binary_cross_entropy_with_logits_backward.register_kernel(DispatchKey::CUDA, bce_logits_backward_cuda);
  op::l1_loss.register_kernel(DispatchKey::CUDA, l1_loss_cuda);
  op::l1_loss_backward.register_kernel(DispatchKey::CUDA, l1_loss_backward_cuda);
  op::smooth_l1_loss.register_kernel(DispatchKey::CUDA, smooth_l1_loss_cuda);
  op::smooth_l1_loss_backward.register_kernel(DispatchKey::CUDA, smooth_l1_loss_backward_cuda);
  op::huber_loss.register_kernel(DispatchKey::CUDA, huber_loss_cuda);
  op::huber_loss_backward.register_kernel(DispatchKey::CUDA, huber_loss_backward_cuda);
  op::binary_cross_entropy.register_kernel(DispatchKey::CUDA, bce_cuda);
  op::binary_cross_entropy_backward.register_kernel(DispatchKey::CUDA, bce_backward_cuda);
  op::masked_fill.register_kernel(DispatchKey::CUDA, masked_fill_cuda);
  op::_foreach_zero_.register_kernel(DispatchKey::CUDA, foreach_zero_cuda);
}

}  // namespace flambeau::cuda
