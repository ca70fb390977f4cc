// Device-generic kernels of the nn losses (Note [Dispatch]: the Generic key),
// forward and backward, composed of dispatched elementwise ops and reductions:
// every device without a kernel of its own runs them (CUDA, a plug-in device;
// the meta device gets their shapes and dtypes). The CPU keeps its fused
// kernels (src/cpu/loss.cpp), whose formulas these follow:
//   * pointwise losses (mse, l1, smooth_l1, huber, binary_cross_entropy[_with_logits]);
//   * cross entropy and nll over (N, C) logits with (N,) class indices: a
//     one-hot of the targets (an eq against the class indices) picks each
//     row's logit and class weight; ignored rows get weight 0; the rows'
//     log-sum-exp lse (N,) goes to the backward. Other forms (spatial dims,
//     class probabilities, label smoothing) raise NotImplementedError.
// The checks that read values (class indices in range, probabilities in
// [0, 1]) copy one count to the host; the meta device skips them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "nn_utils.h"

namespace flambeau {
namespace {
using detail::check_generic_floating;
using detail::host_int64;
using detail::number;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

void check_reduction(const char* op, int64_t reduction) {
  FB_CHECK_VALUE(reduction >= 0 && reduction <= 2, "[", op,
                 "] reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}

Tensor reduce_loss(const Tensor& loss, int64_t reduction) {
  if (reduction == kNone) return loss;
  return reduction == kMean ? op::mean(loss, std::nullopt, false, std::nullopt)
                            : op::sum(loss, std::nullopt, false, std::nullopt);
}

/// w broadcasts to self's shape (not only with it): the loss keeps the input's shape. binary_cross_entropy
/// first names shapes that do not broadcast at all (as its CPU kernel).
Tensor side_weight(const char* op, const Tensor& self, const std::optional<Tensor>& w, const char* what,
                   bool broadcast_first = false) {
  if (!w || !w->defined()) return Tensor();
  check_generic_floating(*w, op);
  if (broadcast_first) broadcast_shapes(self.sizes(), w->sizes(), op);
  const int64_t nd = self.dim(), wd = w->dim();
  bool ok = wd <= nd;
  for (int64_t i = 1; ok && i <= wd; ++i) {
    const int64_t ws = w->sizes()[static_cast<size_t>(wd - i)];
    ok = ws == 1 || ws == self.sizes()[static_cast<size_t>(nd - i)];
  }
  FB_CHECK_VALUE(ok, "[", op, "] ", what, " shape ", shape_str(w->sizes()),
                 " does not broadcast to the input shape ", shape_str(self.sizes()));
  return to_dtype(*w, self.dtype());
}

/// grad_input = d * grad (none), d * grad / numel (mean) or d * grad (sum), grad of one element.
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

// ---- mse ----

void check_same_dtype_and_shape(const char* op, const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction(op, reduction);
  check_generic_floating(self, op);
  FB_CHECK_TYPE(target.dtype() == self.dtype(), "[", op, "] input and target must have the same dtype, got ",
                dtype_name(self.dtype()), " and ", dtype_name(target.dtype()));
  FB_CHECK_VALUE(std::ranges::equal(self.sizes(), target.sizes()), "[", op, "] input of shape ",
                 shape_str(self.sizes()), " and target of shape ", shape_str(target.sizes()), " differ");
}

Tensor mse_loss_generic(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_same_dtype_and_shape("mse_loss", self, target, reduction);
  const Tensor d = op::sub(self, target, Scalar(1));
  return reduce_loss(op::mul(d, d), reduction);
}

Tensor mse_loss_backward_generic(const Tensor& grad, const Tensor& self, const Tensor& target,
                                 int64_t reduction) {
  check_same_dtype_and_shape("mse_loss_backward", self, target, reduction);
  const double scale = reduction == kMean && self.numel() > 0 ? 2.0 / static_cast<double>(self.numel()) : 2.0;
  return op::mul(op::mul(op::sub(self, target, Scalar(1)), number(scale)), grad);
}

// ---- l1, smooth_l1, huber: self and target broadcast ----

void check_pointwise(const char* op, const Tensor& self, const Tensor& target, int64_t reduction,
                     bool broadcast = true) {
  check_reduction(op, reduction);
  check_generic_floating(self, op);
  FB_CHECK_TYPE(is_floating(target.dtype()), "[", op, "] target must be a floating point tensor, got dtype ",
                dtype_name(target.dtype()));
  if (broadcast) broadcast_shapes(self.sizes(), target.sizes(), op);
}

Tensor diff(const Tensor& self, const Tensor& target) {
  return op::sub(self, to_dtype(target, self.dtype()), Scalar(1));
}

Tensor l1_loss_generic(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_pointwise("l1_loss", self, target, reduction);
  return reduce_loss(op::abs(diff(self, target)), reduction);
}
Tensor l1_loss_backward_generic(const Tensor& grad, const Tensor& self, const Tensor& target,
                                int64_t reduction) {
  check_pointwise("l1_loss_backward", self, target, reduction);
  const Tensor d = diff(self, target);
  return scale_by_grad("l1_loss_backward", op::where(op::isnan(d), d, op::sign(d)), grad, reduction);
}

Tensor smooth_l1_loss_generic(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  FB_CHECK_VALUE(beta >= 0, "[smooth_l1_loss] smooth_l1_loss does not support negative values for beta, got ",
                 beta);
  check_pointwise("smooth_l1_loss", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor ad = op::abs(d);
  const Tensor quad = op::div(op::mul(op::mul(d, d), number(0.5)), number(beta));
  const Tensor lin = op::sub(ad, number(0.5 * beta), Scalar(1));
  return reduce_loss(op::where(op::lt(ad, number(beta)), quad, lin), reduction);
}
Tensor smooth_l1_loss_backward_generic(const Tensor& grad, const Tensor& self, const Tensor& target,
                                       int64_t reduction, double beta) {
  check_pointwise("smooth_l1_loss_backward", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor inner = op::where(op::ge(d, number(beta)), number(1), op::div(d, number(beta)));
  return scale_by_grad("smooth_l1_loss_backward", op::where(op::le(d, number(-beta)), number(-1), inner),
                       grad, reduction);
}

Tensor huber_loss_generic(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  FB_CHECK_VALUE(delta > 0, "[huber_loss] huber_loss does not support non-positive values for delta, got ",
                 delta);
  check_pointwise("huber_loss", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor ad = op::abs(d);
  const Tensor quad = op::mul(op::mul(d, d), number(0.5));
  const Tensor lin = op::mul(op::sub(ad, number(0.5 * delta), Scalar(1)), number(delta));
  return reduce_loss(op::where(op::lt(ad, number(delta)), quad, lin), reduction);
}
Tensor huber_loss_backward_generic(const Tensor& grad, const Tensor& self, const Tensor& target,
                                   int64_t reduction, double delta) {
  check_pointwise("huber_loss_backward", self, target, reduction);
  const Tensor d = diff(self, target);
  const Tensor inner = op::where(op::gt(d, number(delta)), number(delta), d);
  return scale_by_grad("huber_loss_backward", op::where(op::lt(d, number(-delta)), number(-delta), inner),
                       grad, reduction);
}

// ---- binary_cross_entropy on probabilities: each log clamped at -100, the
// gradient's denominator at 1e-12; an input outside [0, 1] is an error (one sync).

void check_bce(const char* op, const Tensor& self, const Tensor& target, int64_t reduction,
               bool broadcast = true) {
  check_pointwise(op, self, target, reduction, broadcast);
  FB_CHECK_VALUE(std::ranges::equal(self.sizes(), target.sizes()), "[", op, "] target shape ",
                 shape_str(target.sizes()), " must be the same as input shape ", shape_str(self.sizes()));
}

Tensor bce_generic(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                   int64_t reduction) {
  const char* op = "binary_cross_entropy";
  check_bce(op, self, target, reduction);
  const Tensor w = side_weight(op, self, weight, "weight", true);
  if (self.numel() > 0 && detail::has_values(self)) {
    // !(0 <= x <= 1), NaN included
    const Tensor ok = op::logical_and(op::ge(self, number(0)), op::le(self, number(1)));
    const Tensor bad =
        op::sum(to_dtype(op::logical_not(ok), ScalarType::Int64), std::nullopt, false, std::nullopt);
    FB_CHECK_VALUE(host_int64(bad) == 0,
                   "[binary_cross_entropy] all elements of input should be between 0 and 1");
  }
  const Tensor t = to_dtype(target, self.dtype());
  const Tensor lx = op::maximum(op::log(self), number(-100));
  const Tensor l1x = op::maximum(op::log1p(op::neg(self)), number(-100));
  Tensor loss = op::sub(op::mul(op::sub(t, number(1), Scalar(1)), l1x), op::mul(t, lx), Scalar(1));
  if (w.defined()) loss = op::mul(w, loss);
  return reduce_loss(loss, reduction);
}
Tensor bce_backward_generic(const Tensor& grad, const Tensor& self, const Tensor& target,
                            const std::optional<Tensor>& weight, int64_t reduction) {
  const char* op = "binary_cross_entropy_backward";
  check_bce(op, self, target, reduction);
  const Tensor w = side_weight(op, self, weight, "weight", true);
  const Tensor t = to_dtype(target, self.dtype());
  const Tensor den = op::maximum(op::mul(op::sub(number(1), self, Scalar(1)), self), number(1e-12));
  Tensor d = op::div(op::sub(self, t, Scalar(1)), den);
  if (w.defined()) d = op::mul(w, d);
  return scale_by_grad(op, d, grad, reduction);
}

// ---- binary_cross_entropy_with_logits: loss = w ((1 - t) x + lw (log1p(exp(-|x|)) + max(-x, 0)))
// with lw = (pw - 1) t + 1; d loss / dx = w ((pw t + 1 - t) sigmoid(x) - pw t).

struct BceLogits {
  Tensor t, w, pw;  // in x's dtype (w, pw undefined when absent)
};

BceLogits bce_logits_prepare(const char* op, const Tensor& self, const Tensor& target,
                             const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                             int64_t reduction) {
  check_bce(op, self, target, reduction, false);
  return {to_dtype(target, self.dtype()), side_weight(op, self, weight, "weight"),
          side_weight(op, self, pos_weight, "pos_weight")};
}

Tensor bce_logits_generic(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& pos_weight, int64_t reduction) {
  const BceLogits a =
      bce_logits_prepare("binary_cross_entropy_with_logits", x, target, weight, pos_weight, reduction);
  const Tensor one = number(1);
  // log1p(exp(-|x|)) + max(-x, 0)
  const Tensor soft = op::add(op::log1p(op::exp(op::neg(op::abs(x)))), op::relu(op::neg(x)), Scalar(1));
  const Tensor lw =
      a.pw.defined() ? op::add(op::mul(op::sub(a.pw, one, Scalar(1)), a.t), one, Scalar(1)) : Tensor();
  Tensor loss =
      op::add(op::mul(op::sub(one, a.t, Scalar(1)), x), lw.defined() ? op::mul(lw, soft) : soft, Scalar(1));
  if (a.w.defined()) loss = op::mul(a.w, loss);
  return reduce_loss(loss, reduction);
}

Tensor bce_logits_backward_generic(const Tensor& grad, const Tensor& x, const Tensor& target,
                                   const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& pos_weight, int64_t reduction) {
  const char* op = "binary_cross_entropy_with_logits_backward";
  const BceLogits a = bce_logits_prepare(op, x, target, weight, pos_weight, reduction);
  const Tensor pt = a.pw.defined() ? op::mul(a.pw, a.t) : a.t;
  // (pt + 1 - t) sigmoid(x) - pt
  Tensor d = op::sub(op::mul(op::add(op::sub(pt, a.t, Scalar(1)), number(1), Scalar(1)), op::sigmoid(x)), pt,
                     Scalar(1));
  if (a.w.defined()) d = op::mul(a.w, d);
  return scale_by_grad(op, d, grad, reduction);
}

// ---- cross entropy and nll over (N, C) with class indices ----

struct ClassTargets {
  Tensor onehot;  // (N, C) in the logits' dtype
  Tensor weight;  // (N,) per-row weight, 0 where ignored
};

void check_class_args(const char* op, const Tensor& self, const Tensor& target,
                      const std::optional<Tensor>& weight, int64_t reduction, double label_smoothing) {
  check_generic_floating(self, op);
  check_reduction(op, reduction);
  if (self.dim() != 2 || target.dim() != 1 || label_smoothing != 0.0 ||
      (target.dtype() != ScalarType::Int64 && target.dtype() != ScalarType::Int32))
    throw NotImplementedError(detail::cat_str(
        "[", op, "] on ", detail::device_kind(self),
        " is implemented for (N, C) logits with (N,) int64 class indices and no label smoothing; ",
        "got input ", shape_str(self.sizes()), " and target ", shape_str(target.sizes()), " of dtype ",
        dtype_name(target.dtype()), ": this form is not yet implemented on ", detail::device_kind(self)));
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

ClassTargets class_targets(const char* op, const Tensor& self, const Tensor& target,
                           const std::optional<Tensor>& weight, int64_t ignore_index) {
  const int64_t n = self.sizes()[0], c = self.sizes()[1];
  const Tensor t = to_dtype(target, ScalarType::Int64);
  const Tensor valid = op::ne(t, scalar_to_tensor(Scalar(ignore_index)));
  if (n > 0 && detail::has_values(t)) {  // every target not ignored is a class index (one small copy)
    const Tensor in_range = op::mul(to_dtype(op::ge(t, number(0)), ScalarType::Int64),
                                    to_dtype(op::lt(t, scalar_to_tensor(Scalar(c))), ScalarType::Int64));
    const Tensor ok = op::maximum(in_range, to_dtype(op::eq(valid, number(0)), ScalarType::Int64));
    const int64_t good = host_int64(op::sum(ok, std::nullopt, false, std::nullopt));
    FB_CHECK_INDEX(good == n, "[", op, "] ", n - good,
                   " target(s) out of bounds: class indices must be in [0, ", c,
                   ") or ignore_index=", ignore_index);
  }
  const Tensor host_classes =
      op::arange(Scalar(0), Scalar(c), Scalar(1), ScalarType::Int64, Device(DeviceType::CPU));  // (C,)
  Tensor classes = op::empty(host_classes.sizes(), ScalarType::Int64, self.device());
  op::copy_(classes, host_classes);
  const Tensor onehot = to_dtype(op::eq(op::unsqueeze(t, 1), op::unsqueeze(classes, 0)), self.dtype());
  Tensor w = to_dtype(valid, self.dtype());
  if (weight)
    w = op::mul(w, op::sum(op::mul(onehot, op::unsqueeze(*weight, 0)), IntArrayRef(detail::kDim1), false,
                           std::nullopt));
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

std::tuple<Tensor, Tensor> cross_entropy_generic(const Tensor& self, const Tensor& target,
                                                 const std::optional<Tensor>& weight, int64_t reduction,
                                                 int64_t ignore_index, double label_smoothing) {
  check_class_args("_cross_entropy", self, target, weight, reduction, label_smoothing);
  const ClassTargets ct = class_targets("_cross_entropy", self, target, weight, ignore_index);
  const IntArrayRef dim1(detail::kDim1);
  Tensor lse;
  if (self.sizes()[1] == 0 || self.sizes()[0] == 0) {
    lse = op::empty(Shape{self.sizes()[0]}, self.dtype(), self.device());
    op::fill_(lse, Scalar(-INFINITY));
  } else {
    const Tensor m = op::amax(self, dim1, true);
    lse =
        op::add(op::amax(self, dim1, false),
                op::log(op::sum(op::exp(op::sub(self, m, Scalar(1))), dim1, false, std::nullopt)), Scalar(1));
  }
  const Tensor picked = op::sum(op::mul(self, ct.onehot), dim1, false, std::nullopt);
  const Tensor loss = op::mul(op::sub(lse, picked, Scalar(1)), ct.weight);
  return {reduce_rows(loss, ct.weight, reduction), lse};
}

Tensor cross_entropy_backward_generic(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                      const Tensor& lse, const std::optional<Tensor>& weight,
                                      int64_t reduction, int64_t ignore_index, double label_smoothing) {
  check_class_args("_cross_entropy_backward", self, target, weight, reduction, label_smoothing);
  const ClassTargets ct = class_targets("_cross_entropy_backward", self, target, weight, ignore_index);
  const Tensor softmax = op::exp(op::sub(self, op::unsqueeze(lse, 1), Scalar(1)));
  const Tensor scale = op::mul(row_scale(grad_output, ct.weight, reduction), ct.weight);  // (N,)
  return op::mul(op::sub(softmax, ct.onehot, Scalar(1)), op::unsqueeze(scale, 1));
}

Tensor nll_loss_generic(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                        int64_t reduction, int64_t ignore_index) {
  check_class_args("nll_loss_nd", self, target, weight, reduction, 0.0);
  const ClassTargets ct = class_targets("nll_loss_nd", self, target, weight, ignore_index);
  const Tensor loss = op::mul(
      op::neg(op::sum(op::mul(self, ct.onehot), IntArrayRef(detail::kDim1), false, std::nullopt)), ct.weight);
  return reduce_rows(loss, ct.weight, reduction);
}

Tensor nll_loss_backward_generic(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                 const std::optional<Tensor>& weight, int64_t reduction,
                                 int64_t ignore_index) {
  check_class_args("nll_loss_nd_backward", self, target, weight, reduction, 0.0);
  const ClassTargets ct = class_targets("nll_loss_nd_backward", self, target, weight, ignore_index);
  const Tensor scale = op::mul(row_scale(grad_output, ct.weight, reduction), ct.weight);
  return op::mul(op::neg(ct.onehot), op::unsqueeze(scale, 1));
}

FB_REGISTER_KERNEL(op::mse_loss, Generic, mse_loss_generic);
FB_REGISTER_KERNEL(op::mse_loss_backward, Generic, mse_loss_backward_generic);
FB_REGISTER_KERNEL(op::l1_loss, Generic, l1_loss_generic);
FB_REGISTER_KERNEL(op::l1_loss_backward, Generic, l1_loss_backward_generic);
FB_REGISTER_KERNEL(op::smooth_l1_loss, Generic, smooth_l1_loss_generic);
FB_REGISTER_KERNEL(op::smooth_l1_loss_backward, Generic, smooth_l1_loss_backward_generic);
FB_REGISTER_KERNEL(op::huber_loss, Generic, huber_loss_generic);
FB_REGISTER_KERNEL(op::huber_loss_backward, Generic, huber_loss_backward_generic);
FB_REGISTER_KERNEL(op::binary_cross_entropy, Generic, bce_generic);
FB_REGISTER_KERNEL(op::binary_cross_entropy_backward, Generic, bce_backward_generic);
FB_REGISTER_KERNEL(op::binary_cross_entropy_with_logits, Generic, bce_logits_generic);
FB_REGISTER_KERNEL(op::binary_cross_entropy_with_logits_backward, Generic, bce_logits_backward_generic);
FB_REGISTER_KERNEL(op::_cross_entropy, Generic, cross_entropy_generic);
FB_REGISTER_KERNEL(op::_cross_entropy_backward, Generic, cross_entropy_backward_generic);
FB_REGISTER_KERNEL(op::nll_loss_nd, Generic, nll_loss_generic);
FB_REGISTER_KERNEL(op::nll_loss_nd_backward, Generic, nll_loss_backward_generic);

}  // namespace
}  // namespace flambeau
