// The meta step's rules for the nn ops (Note [Meta step], flambeau/meta.h):
// the shape rules, dtype rules and checks of pooling, linear, convolution,
// the norms, the losses and embedding. The general rules (elementwise,
// reductions, indexing, matmul) are in rules.cpp.
#include <algorithm>

#include "flambeau/conv_utils.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/pool_shape.h"
#include "flambeau/type_dispatch.h"
#include "meta/bool_products.h"

namespace flambeau::meta {

namespace {
bool is_half(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }
}  // namespace

// ---- dtype rules ----

// Note [Batch norm's mixed precision]: as PyTorch's CPU kernel, a float16/bfloat16 input may come with
// float32 weight, bias and running statistics (autocast: a lowered convolution feeds a batch norm whose
// parameters stay float32). The saved statistics and the parameters' gradients are then float32, and
// the running statistics are updated in float32; the output keeps the input's dtype. Otherwise every
// given parameter has the input's dtype (check_batch_norm).
ScalarType batch_norm_stats(const Tensor& input, const std::optional<Tensor>& weight,
                            const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                            const std::optional<Tensor>& running_var) {
  if (is_half(input.dtype()))
    for (const std::optional<Tensor>* p : {&weight, &bias, &running_mean, &running_var})
      if (*p && (*p)->defined() && (*p)->dtype() == ScalarType::Float32) return ScalarType::Float32;
  return input.dtype();
}

// ---- shape rules ----

Shape pool2d(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
             IntArrayRef dilation, bool ceil_mode) {
  return pool::check_pool2d(self.sizes(), kernel_size, stride, padding, dilation, ceil_mode, op).out_shape;
}

Shape pool2d(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
             bool ceil_mode) {
  return pool2d(op, self, kernel_size, stride, padding, {}, ceil_mode);
}

Shape adaptive_pool2d(const char* op, const Tensor& self, IntArrayRef output_size) {
  return pool::adaptive_out_shape(self.sizes(), output_size, op);
}

Shape linear(const char*, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  Shape out(input.sizes().begin(), input.sizes().end() - 1);
  out.push_back(weight.sizes()[0]);
  // No bias, or one value per output feature (nn.Linear's): the product's shape. This runs on every
  // call (linear is structured), so it allocates no meta tensor to broadcast with.
  if (!bias || !bias->defined() || (bias->dim() == 1 && bias->sizes()[0] == weight.sizes()[0])) return out;
  // A bias that is not one value per output feature is added as add does (its errors name add).
  return broadcast_shapes(out, bias->sizes(), "add");
}

Shape loss(const char* op, const Tensor& self, const Tensor& target, int64_t reduction) {
  return reduction == 0 ? broadcast_shapes(self.sizes(), target.sizes(), op) : Shape{};
}

Shape loss_grad(const char* op, const Tensor& self, const Tensor& target) {
  return broadcast_shapes(self.sizes(), target.sizes(), op);
}

LayerNormRows layer_norm_rows(const char* op, const Tensor& input, IntArrayRef normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  FB_CHECK_VALUE(k >= 1, "[", op, "] normalized_shape must have at least one dim, got ()");
  bool ok = input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.sizes()[input.dim() - k + i] == normalized_shape[i];
  if (!ok) {
    std::string expected = "(*";
    for (int64_t v : normalized_shape) expected += ", " + std::to_string(v);
    expected += ")";
    FB_CHECK_VALUE(false, "[", op, "] Given normalized_shape=", shape_str(normalized_shape),
                   ", expected input with shape ", expected, ", but got input of shape ", shape_str(input.sizes()));
  }
  LayerNormRows r;
  for (int64_t i = 0; i < input.dim() - k; ++i) {
    r.m *= input.sizes()[i];
    r.stat_shape.push_back(input.sizes()[i]);
  }
  for (int64_t i = 0; i < k; ++i) {
    r.d *= normalized_shape[i];
    r.stat_shape.push_back(1);
  }
  return r;
}

std::vector<Shape> layer_norm(const char* op, const Tensor& input, IntArrayRef normalized_shape) {
  const Shape stats = layer_norm_rows(op, input, normalized_shape).stat_shape;
  return {Shape(input.sizes().begin(), input.sizes().end()), stats, stats};
}

std::vector<Shape> batch_norm(const char*, const Tensor& input, bool training) {
  // Evaluation mode saves no statistics (PyTorch's (0,)): its backward reads the running ones.
  const Shape channels{training ? input.sizes()[1] : 0};
  return {Shape(input.sizes().begin(), input.sizes().end()), channels, channels};
}

std::vector<Shape> group_norm(const char*, const Tensor& input, int64_t batch, int64_t group) {
  const Shape stats{batch, group};
  return {Shape(input.sizes().begin(), input.sizes().end()), stats, stats};
}

namespace {
OptionalShapes norm_grads(const Tensor& input, IntArrayRef param, bool input_g, bool weight_g, bool bias_g) {
  const auto when = [](bool asked, Shape s) { return asked ? std::optional<Shape>(std::move(s)) : std::nullopt; };
  const Shape p(param.begin(), param.end());
  return {when(input_g, Shape(input.sizes().begin(), input.sizes().end())), when(weight_g, p), when(bias_g, p)};
}
}  // namespace

OptionalShapes batch_norm_backward(const char*, const Tensor& input, bool input_g, bool weight_g, bool bias_g) {
  return norm_grads(input, Shape{input.sizes()[1]}, input_g, weight_g, bias_g);
}

OptionalShapes layer_norm_backward(const char*, const Tensor& input, IntArrayRef normalized_shape, bool input_g,
                                   bool weight_g, bool bias_g) {
  return norm_grads(input, normalized_shape, input_g, weight_g, bias_g);
}

OptionalShapes group_norm_backward(const char*, const Tensor& input, int64_t channels, bool input_g, bool weight_g,
                                   bool bias_g) {
  return norm_grads(input, Shape{channels}, input_g, weight_g, bias_g);
}

Shape conv(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
           int64_t groups) {
  return conv::check_and_output_shape(op, input, weight, bias, stride, padding, dilation, transposed,
                                      output_padding, groups);
}

ClassLossRows class_loss_rows(const Tensor& self) {
  ClassLossRows s;
  const bool batched = self.dim() >= 2;
  s.classes = self.sizes()[batched ? 1 : 0];
  if (batched) {
    s.outer = self.sizes()[0];
    s.out_shape.push_back(s.outer);
    for (int64_t i = 2; i < self.dim(); ++i) {
      s.inner *= self.sizes()[i];
      s.out_shape.push_back(self.sizes()[i]);
    }
  }
  s.rows = s.outer * s.inner;
  return s;
}

Shape class_loss(const char*, const Tensor& self, int64_t reduction) {
  return reduction == 0 ? class_loss_rows(self).out_shape : Shape{};
}

std::vector<Shape> cross_entropy(const char* op, const Tensor& self, int64_t reduction) {
  return {class_loss(op, self, reduction), Shape{class_loss_rows(self).rows}};
}

Shape embedding(const char*, const Tensor& weight, const Tensor& indices) {
  Shape out(indices.sizes().begin(), indices.sizes().end());
  out.push_back(weight.sizes()[1]);
  return out;
}

Shape embedding_backward(const char*, const Tensor& grad_output, int64_t num_weights) {
  return {num_weights, grad_output.dim() > 0 ? grad_output.sizes()[grad_output.dim() - 1] : 0};
}

// ---- checks ----

namespace {
// A dtype's name in PyTorch's "not implemented for" errors (c10's ScalarType names).
const char* torch_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "Bool";
    case ScalarType::UInt8:
      return "Byte";
    case ScalarType::Int8:
      return "Char";
    case ScalarType::Int16:
      return "Short";
    case ScalarType::Int32:
      return "Int";
    case ScalarType::Int64:
      return "Long";
    case ScalarType::UInt16:
      return "UInt16";
    case ScalarType::UInt32:
      return "UInt32";
    case ScalarType::UInt64:
      return "UInt64";
    case ScalarType::Float16:
      return "Half";
    case ScalarType::BFloat16:
      return "BFloat16";
    case ScalarType::Float32:
      return "Float";
    case ScalarType::Float64:
      return "Double";
    case ScalarType::ComplexFloat:
      return "ComplexFloat";
    default:
      return "ComplexDouble";
  }
}
}  // namespace

void check_pool_dtype(const char* op, const Tensor& t, const char* kernel, PoolIntegers integers) {
  const ScalarType st = t.dtype();
  const bool takes = is_floating(st) || (integers == PoolIntegers::Int64 && st == ScalarType::Int64) ||
                     (integers == PoolIntegers::All && dtype_set_of(st) == kDtInts);
  FB_CHECK_IMPL(NotImplementedError, takes, "[", op, "] \"", kernel, "\" not implemented for '",
                torch_type_name(st), "' (dtype ", dtype_name(st), ")");
}

void check_divisor(const char* op, std::optional<int64_t> divisor) {
  FB_CHECK_VALUE(!divisor || *divisor != 0, "[", op, "] divisor_override must be non-zero");
}

void check_max_pool_grad(const char* op, const Tensor& grad_output, const Tensor& indices, IntArrayRef input_size) {
  FB_CHECK_TYPE(indices.dtype() == ScalarType::Int64, "[", op, "] indices must be int64, got dtype ",
                dtype_name(indices.dtype()));
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), indices.sizes()), "[", op, "] grad_output shape ",
                 shape_str(grad_output.sizes()), " must equal indices shape ", shape_str(indices.sizes()));
  const int64_t nd = static_cast<int64_t>(input_size.size());
  FB_CHECK_VALUE(nd >= 2 && nd == indices.dim(), "[", op, "] input_size ", shape_str(input_size),
                 " must have the rank of indices shape ", shape_str(indices.sizes()), " (at least 2)");
  for (int64_t i = 0; i < nd - 2; ++i)
    FB_CHECK_VALUE(input_size[i] == indices.sizes()[i], "[", op, "] input_size ", shape_str(input_size),
                   " and indices shape ", shape_str(indices.sizes()), " differ in the leading dim ", i);
  shape_nbytes(input_size, grad_output.dtype(), op);
}

namespace {
// A backward's grad_output against the shape its forward gives.
void check_grad_shape(const char* op, const Tensor& grad_output, IntArrayRef expected) {
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), expected), "[", op, "] grad_output has shape ",
                 shape_str(grad_output.sizes()), " but the forward output has shape ", shape_str(expected));
}
}  // namespace

void check_pool2d_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size, IntArrayRef kernel_size,
                       IntArrayRef stride, IntArrayRef padding, bool ceil_mode) {
  shape_nbytes(input_size, grad_output.dtype(), op);
  check_grad_shape(op, grad_output,
                   pool::check_pool2d(input_size, kernel_size, stride, padding, {}, ceil_mode, op).out_shape);
}

void check_adaptive_pool2d_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size) {
  const int64_t nd = grad_output.dim();
  FB_CHECK_VALUE(nd >= 2 && static_cast<int64_t>(input_size.size()) == nd, "[", op, "] input_size ",
                 shape_str(input_size), " must have the rank of grad_output shape ",
                 shape_str(grad_output.sizes()));
  shape_nbytes(input_size, grad_output.dtype(), op);
  check_grad_shape(op, grad_output, pool::adaptive_out_shape(input_size, grad_output.sizes().last(2), op));
}

void check_linear(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  FB_CHECK_VALUE(weight.dim() == 2, "[", op, "] weight must be 2-D (out_features, in_features), got shape ",
                 shape_str(weight.sizes()));
  const int64_t in_f = weight.sizes()[1];
  FB_CHECK_VALUE(input.dim() >= 1 && input.sizes()[input.dim() - 1] == in_f, "[", op, "] input shape ",
                 shape_str(input.sizes()), " does not match weight shape ", shape_str(weight.sizes()),
                 ": the last dim of input must be in_features=", in_f);
  FB_CHECK_TYPE(input.dtype() == weight.dtype(), "[", op, "] input and weight must have the same dtype, got ",
                dtype_name(input.dtype()), " and ", dtype_name(weight.dtype()));
  FB_CHECK(input.device() == weight.device(), "[", op, "] input and weight must be on the same device, got ",
           input.device().str(), " and ", weight.device().str());
  // Note [Bool products]: with in_f > 0 the result is empty exactly when input or weight is.
  check_bool_product(op, input.dtype(), input.numel() == 0 || weight.numel() == 0 ? 0 : 1, in_f);
  if (!bias || !bias->defined()) return;
  // The table's device check reads the required tensors only: the bias's is made here, for every backend
  // (a cpu 0-dim bias goes with any device, as a wrapped number does).
  check_same_device(op, {&input, &*bias});
  FB_CHECK_TYPE(bias->dtype() == input.dtype(), "[", op, "] bias must have the dtype of input and weight (",
                dtype_name(input.dtype()), "), got ", dtype_name(bias->dtype()));
}

void check_reduction(const char* op, int64_t reduction) {
  FB_CHECK_VALUE(reduction == 0 || reduction == 1 || reduction == 2, "[", op,
                 "] reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}

void check_loss_param(const char* op, bool ok, const char* what, double value) {
  FB_CHECK_VALUE(ok, "[", op, "] ", what, ", got ", value);
}

namespace {
void check_float_arg(const char* op, const Tensor& t, const char* what) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op, "] ", what,
                " must be a float32 or float64 tensor, got dtype ", dtype_name(t.dtype()));
}

// A loss's gradient: floating, of the unreduced loss's shape, or one element when reduced.
void check_loss_grad(const char* op, const Tensor& grad_output, IntArrayRef shape, int64_t reduction) {
  check_floating(op, grad_output, "grad_output");
  if (reduction == 0)
    FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), shape), "[", op, "] grad_output shape ",
                   shape_str(grad_output.sizes()), " does not match the loss shape ", shape_str(shape));
  else
    FB_CHECK_VALUE(grad_output.numel() == 1, "[", op,
                   "] grad_output of a reduced loss must have one element, got shape ",
                   shape_str(grad_output.sizes()));
}

// The shape of a pointwise loss's elements, after its input and target checks.
Shape pointwise_loss_shape(const char* op, const Tensor& self, const Tensor& target,
                           const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                           bool binary) {
  check_floating(op, self, "input");  // float16/bfloat16 too: Note [16-bit losses] (cpu/loss/loss.cpp)
  if (binary)
    FB_CHECK_TYPE(is_floating(target.dtype()), "[", op, "] target must be a floating point tensor, got dtype ",
                  dtype_name(target.dtype()));
  Shape shape;
  if (binary) {
    FB_CHECK_VALUE(std::ranges::equal(self.sizes(), target.sizes()), "[", op, "] target shape ",
                   shape_str(target.sizes()), " must be the same as input shape ", shape_str(self.sizes()));
    shape.assign(self.sizes().begin(), self.sizes().end());
  } else {
    shape = broadcast_shapes(self.sizes(), target.sizes(), op);
  }
  const auto check_weight = [&](const std::optional<Tensor>& w, const char* what) {
    if (!w || !w->defined()) return;
    check_floating(op, *w, what);
    const int64_t nd = static_cast<int64_t>(shape.size()), wd = w->dim();
    bool ok = wd <= nd;
    for (int64_t i = 1; ok && i <= wd; ++i) {
      const int64_t ws = w->sizes()[wd - i];
      ok = ws == 1 || ws == shape[nd - i];
    }
    FB_CHECK_VALUE(ok, "[", op, "] ", what, " shape ", shape_str(w->sizes()),
                   " does not broadcast to the input shape ", shape_str(shape));
  };
  check_weight(weight, "weight");
  check_weight(pos_weight, "pos_weight");
  return shape;
}
}  // namespace

void check_pointwise_loss(const char* op, const Tensor& self, const Tensor& target,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight, bool binary,
                          int64_t reduction) {
  pointwise_loss_shape(op, self, target, weight, pos_weight, binary);
  check_reduction(op, reduction);
}

void check_pointwise_loss_grad(const char* op, const Tensor& grad_output, const Tensor& self, const Tensor& target,
                               const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                               bool binary, int64_t reduction) {
  const Shape shape = pointwise_loss_shape(op, self, target, weight, pos_weight, binary);
  check_reduction(op, reduction);
  check_loss_grad(op, grad_output, shape, reduction);
}

namespace {
// A norm's parameter of dtype `dtype`: the input's, or float32 for batch norm's mixed precision.
void check_param_of(const char* op, const std::optional<Tensor>& p, const Tensor& input, ScalarType dtype,
                    IntArrayRef shape, const char* what, const char* why) {
  if (!p || !p->defined()) return;
  if (dtype == input.dtype())
    FB_CHECK_TYPE(p->dtype() == dtype, "[", op, "] ", what, " must have the input's dtype ",
                  dtype_name(dtype), ", got ", dtype_name(p->dtype()));
  else
    FB_CHECK_TYPE(p->dtype() == dtype, "[", op, "] ", what, " must be ", dtype_name(dtype), " as the other ",
                  "parameters of this ", dtype_name(input.dtype()), " input are (mixed precision), or ",
                  "every parameter ", dtype_name(input.dtype()), "; got ", dtype_name(p->dtype()));
  FB_CHECK_VALUE(std::ranges::equal(p->sizes(), shape), "[", op, "] ", what, " must have shape ", shape_str(shape),
                 " ", why, " (input shape ", shape_str(input.sizes()), "), got shape ", shape_str(p->sizes()));
}
}  // namespace

void check_norm_param(const char* op, const std::optional<Tensor>& p, const Tensor& input, IntArrayRef shape,
                      const char* what, const char* why) {
  check_param_of(op, p, input, input.dtype(), shape, what, why);
}

void check_layer_norm(const char* op, const Tensor& input, IntArrayRef normalized_shape,
                      const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  const ScalarType t = input.dtype();
  if (t != ScalarType::Float16 && t != ScalarType::BFloat16)
    FB_CHECK_TYPE(t == ScalarType::Float32 || t == ScalarType::Float64, "[", op,
                  "] input must be a float32 or float64 tensor, got dtype ", dtype_name(t));
  layer_norm_rows(op, input, normalized_shape);
  check_norm_param(op, weight, input, normalized_shape, "weight", "(normalized_shape)");
  check_norm_param(op, bias, input, normalized_shape, "bias", "(normalized_shape)");
}

namespace {
// A group norm's input: floating (float16/bfloat16 computed in float32), (N, C, ...).
void check_channels_input(const char* op, const Tensor& input) {
  check_floating(op, input, "input");
  FB_CHECK_VALUE(input.dim() >= 2, "[", op, "] expected an input of at least 2 dims (N, C, ...), got shape ",
                 shape_str(input.sizes()));
}

// A norm's backward: grad_out of input's shape and dtype.
void check_norm_grad_out(const char* op, const Tensor& grad_out, const Tensor& input) {
  FB_CHECK_VALUE(std::ranges::equal(grad_out.sizes(), input.sizes()), "[", op, "] grad_out shape ",
                 shape_str(grad_out.sizes()), " does not match input shape ", shape_str(input.sizes()));
  FB_CHECK_TYPE(grad_out.dtype() == input.dtype(), "[", op, "] grad_out dtype ", dtype_name(grad_out.dtype()),
                " does not match input dtype ", dtype_name(input.dtype()));
}

void check_group_shape(const char* op, const Tensor& input, int64_t n, int64_t c, int64_t hxw, int64_t group) {
  check_channels_input(op, input);
  FB_CHECK_VALUE(group > 0, "[", op, "] num_groups must be positive, got ", group);
  FB_CHECK_VALUE(c % group == 0, "[", op, "] Expected number of channels in input to be divisible by num_groups, ",
                 "but got input of shape ", shape_str(input.sizes()), " and num_groups=", group);
  int64_t total = 0;
  const bool overflow = __builtin_mul_overflow(n, c, &total) || __builtin_mul_overflow(total, hxw, &total);
  FB_CHECK_VALUE(!overflow && n >= 0 && c >= 0 && hxw >= 0 && n == input.sizes()[0] && c == input.sizes()[1] &&
                     total == input.numel(),
                 "[", op, "] N=", n, ", C=", c, ", HxW=", hxw, " do not describe an input of shape ",
                 shape_str(input.sizes()));
}
}  // namespace

namespace {
// Batch norm's input: float16, bfloat16 (computed in float32), float32 or float64, (N, C, ...).
void check_batch_norm_input(const char* op, const Tensor& input) {
  check_floating(op, input, "input");
  FB_CHECK_VALUE(input.dim() >= 2, "[", op, "] expected an input of at least 2 dims (N, C, ...), got shape ",
                 shape_str(input.sizes()));
}
}  // namespace

void check_batch_norm(const char* op, const Tensor& input, const std::optional<Tensor>& weight,
                      const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                      const std::optional<Tensor>& running_var, bool training, double eps) {
  check_batch_norm_input(op, input);
  const Shape channels{input.sizes()[1]};
  const char* why = "(one value per channel, C = input.shape[1])";
  // Note [Batch norm's mixed precision]
  const ScalarType pt = batch_norm_stats(input, weight, bias, running_mean, running_var);
  check_param_of(op, weight, input, pt, channels, "weight", why);
  check_param_of(op, bias, input, pt, channels, "bias", why);
  check_param_of(op, running_mean, input, pt, channels, "running_mean", why);
  check_param_of(op, running_var, input, pt, channels, "running_var", why);
  FB_CHECK_VALUE(training || (running_mean && running_var), "[", op,
                 "] running_mean and running_var must be given in evaluation mode (training=False)");
  FB_CHECK_VALUE(eps >= 0, "[", op, "] eps must be non-negative, got ", eps);
  if (running_mean) check_no_internal_overlap(*running_mean, op);
  if (running_var) check_no_internal_overlap(*running_var, op);
}

void check_batch_norm_grad(const char* op, const Tensor& grad_out, const Tensor& input,
                           const std::optional<Tensor>& weight, const Tensor& save_mean, const Tensor& save_invstd) {
  check_batch_norm_input(op, input);
  check_norm_grad_out(op, grad_out, input);
  const Shape channels{input.sizes()[1]};
  const char* why = "(one value per channel)";
  // Note [Batch norm's mixed precision]: the forward saved its statistics in the parameters' dtype.
  const ScalarType pt = batch_norm_stats(input, weight, save_mean, std::nullopt, std::nullopt);
  check_param_of(op, weight, input, pt, channels, "weight", why);
  check_param_of(op, save_mean, input, pt, channels, "save_mean", why);
  check_param_of(op, save_invstd, input, pt, channels, "save_invstd", why);
}

void check_layer_norm_grad(const char* op, const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                           const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight) {
  // float16/bfloat16 is computed in float32 when grad_out has input's dtype too.
  const bool half = input.dtype() == ScalarType::Float16 || input.dtype() == ScalarType::BFloat16;
  if (!half || grad_out.dtype() != input.dtype()) check_float_arg(op, input, "input");
  const LayerNormRows rows = layer_norm_rows(op, input, normalized_shape);
  check_norm_grad_out(op, grad_out, input);
  check_norm_param(op, weight, input, normalized_shape, "weight", "(normalized_shape)");
  FB_CHECK_VALUE(mean.numel() == rows.m && rstd.numel() == rows.m, "[", op, "] mean and rstd must hold ", rows.m,
                 " values, got shapes ", shape_str(mean.sizes()), " and ", shape_str(rstd.sizes()));
}

void check_group_norm(const char* op, const Tensor& input, const std::optional<Tensor>& weight,
                      const std::optional<Tensor>& bias, int64_t batch, int64_t channels, int64_t hxw, int64_t group) {
  check_group_shape(op, input, batch, channels, hxw, group);
  check_norm_param(op, weight, input, Shape{channels}, "weight", "(one value per channel)");
  check_norm_param(op, bias, input, Shape{channels}, "bias", "(one value per channel)");
}

void check_group_norm_grad(const char* op, const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                           const Tensor& rstd, const std::optional<Tensor>& weight, int64_t batch, int64_t channels,
                           int64_t hxw, int64_t group) {
  check_group_shape(op, input, batch, channels, hxw, group);
  check_norm_grad_out(op, grad_out, input);
  check_norm_param(op, weight, input, Shape{channels}, "weight", "(one value per channel)");
  FB_CHECK_VALUE(mean.numel() == batch * group && rstd.numel() == batch * group, "[", op,
                 "] mean and rstd must hold ", batch * group, " values");
}

void check_conv(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                IntArrayRef output_padding, int64_t groups) {
  conv::check_and_output_shape(op, input, weight, bias, stride, padding, dilation, transposed, output_padding,
                               groups);
}

void check_conv_weight_grad(const char* op, const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                            IntArrayRef output_padding, int64_t groups) {
  FB_CHECK_VALUE(static_cast<int64_t>(weight_size.size()) == input.dim(), "[", op, "] weight_size ",
                 conv::bracket_shape(weight_size), " does not match the input ", conv::bracket_shape(input.sizes()));
  FB_CHECK_TYPE(grad_output.dtype() == input.dtype(), "[", op, "] grad_output type (",
                dtype_name(grad_output.dtype()), ") and input type (", dtype_name(input.dtype()),
                ") should be the same");
  // The geometry, with a weight-shaped stand-in on input's device (one element, expanded).
  const Tensor weight = op::expand(op::empty(Shape{}, input.dtype(), input.device()), weight_size);
  const Shape out_shape = conv::check_and_output_shape(op, input, weight, std::nullopt, stride, padding, dilation,
                                                       transposed, output_padding, groups);
  FB_CHECK_VALUE(std::ranges::equal(out_shape, grad_output.sizes()), "[", op, "] expected grad_output of size ",
                 conv::bracket_shape(out_shape), ", got ", conv::bracket_shape(grad_output.sizes()));
}

void check_class_loss(const char* op, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                      int64_t reduction, bool allow_probs) {
  check_reduction(op, reduction);
  check_floating(op, self, "input");  // float16/bfloat16 too: Note [16-bit losses] (cpu/loss/loss.cpp)
  FB_CHECK_VALUE(self.dim() >= 1, "[", op, "] input must have at least 1 dim, (C,) or (N, C, d1, ...), got shape ",
                 shape_str(self.sizes()));
  const ClassLossRows s = class_loss_rows(self);
  if (is_floating(target.dtype()) && allow_probs && target.dim() == self.dim()) {
    FB_CHECK_VALUE(std::ranges::equal(target.sizes(), self.sizes()), "[", op,
                   "] a class-probability target must have the input's shape ", shape_str(self.sizes()), ", got ",
                   shape_str(target.sizes()));
  } else {
    FB_CHECK_TYPE(target.dtype() == ScalarType::Int64, "[", op, "] target must hold int64 class indices",
                  allow_probs ? " (or class probabilities of the input's shape and a floating dtype)" : "",
                  ", got dtype ", dtype_name(target.dtype()), " of shape ", shape_str(target.sizes()));
    FB_CHECK_VALUE(std::ranges::equal(target.sizes(), s.out_shape), "[", op, "] input shape ",
                   shape_str(self.sizes()), " needs target shape ", shape_str(s.out_shape), ", got ",
                   shape_str(target.sizes()));
  }
  if (weight && weight->defined()) {
    check_floating(op, *weight, "weight");
    FB_CHECK_VALUE(weight->dim() == 1 && weight->sizes()[0] == s.classes, "[", op, "] weight must have shape (",
                   s.classes, ",) (one weight per class), got ", shape_str(weight->sizes()));
  }
}

void check_cross_entropy_lse(const char* op, const Tensor& self, const Tensor& lse) {
  const int64_t rows = class_loss_rows(self).rows;
  FB_CHECK_VALUE(lse.numel() == rows && lse.dtype() == self.dtype(), "[", op, "] lse must hold ", rows,
                 " values of dtype ", dtype_name(self.dtype()), ", got shape ", shape_str(lse.sizes()), " dtype ",
                 dtype_name(lse.dtype()));
}

void check_class_loss_grad(const char* op, const Tensor& grad_output, const Tensor& self, int64_t reduction) {
  check_loss_grad(op, grad_output, class_loss_rows(self).out_shape, reduction);
}

namespace {
void check_embedding_indices(const char* op, const Tensor& indices) {
  FB_CHECK_TYPE(indices.dtype() == ScalarType::Int64 || indices.dtype() == ScalarType::Int32, "[", op,
                "] indices must be an int64 or int32 tensor, got dtype ", dtype_name(indices.dtype()));
}
}  // namespace

void check_embedding(const char* op, const Tensor& weight, const Tensor& indices, bool sparse) {
  // float16/bfloat16 tables too (as PyTorch): the forward only copies rows.
  if (!is_half(weight.dtype())) check_float_arg(op, weight, "weight");
  FB_CHECK_VALUE(weight.dim() == 2, "[", op, "] weight must be 2-D (num_embeddings, embedding_dim), got shape ",
                 shape_str(weight.sizes()));
  check_embedding_indices(op, indices);
  if (sparse) throw NotImplementedError(detail::cat_str("[", op, "] sparse=True (sparse gradients) is not supported"));
}

void check_embedding_backward(const char* op, const Tensor& grad_output, const Tensor& indices,
                              int64_t num_weights) {
  if (!is_half(grad_output.dtype())) check_float_arg(op, grad_output, "grad_output");
  check_embedding_indices(op, indices);
  FB_CHECK_VALUE(num_weights >= 0, "[", op, "] num_weights must be non-negative, got ", num_weights);
  FB_CHECK_VALUE(grad_output.dim() == indices.dim() + 1 &&
                     std::equal(indices.sizes().begin(), indices.sizes().end(), grad_output.sizes().begin()),
                 "[", op, "] grad_output shape ", shape_str(grad_output.sizes()),
                 " must be the indices' shape plus one trailing dim; indices shape ", shape_str(indices.sizes()));
}

}  // namespace flambeau::meta
