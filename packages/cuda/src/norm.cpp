// CUDA kernels of native_layer_norm and native_batch_norm and their
// backwards, float32 and float64, written with flambeau-cuda's reduction and
// elementwise kernels (each step a device kernel: sums over dims, then
// broadcast arithmetic through the TensorIterator launcher). Being made of
// dispatched ops, the same functions run on cpu tensors: the host tests
// (tests/test_norm_host.py, through _C._norm_on_host) check them against
// core's CPU kernels without a GPU. Semantics as core's CPU kernels
// (src/cpu/norm_layer.cpp, norm_batch.cpp); the checks are the op's check
// step (Note [Meta step]), run before either kernel:
//   layer_norm: rows of d = prod(normalized_shape) values; mean and rstd of
//     shape (*leading, 1, ..., 1); the variance biased (two passes: the
//     centred values are summed, not the raw squares);
//   batch_norm: per channel over (N, *); training uses the batch statistics
//     and updates running_mean/running_var in place with momentum (the
//     variance unbiased, count / (count - 1)); evaluation uses the running
//     statistics, which save_mean/save_invstd then hold;
//   backwards: dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w
//     (layer_norm; batch_norm in training), dx = dy w invstd (batch_norm
//     evaluation); dw = sum(dy xhat), db = sum(dy).
#include "norm.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

Tensor dense(const Tensor& t) { return op::contiguous(t, MemoryFormat::Contiguous); }
Tensor number(double v) { return scalar_to_tensor(Scalar(v)); }
Tensor sum_dims(const Tensor& t, std::vector<int64_t> dims) {
  return op::sum(t, IntArrayRef(dims), true, std::nullopt);
}

void check_floating(const Tensor& t, const char* op) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op,
                "] input must be a float32 or float64 tensor on CUDA, got dtype ", dtype_name(t.dtype()));
}

/// A parameter on the input's device (its shape and dtype passed the op's check step, Note [Meta step]).
void check_on_device(const std::optional<Tensor>& p, const Tensor& input, const char* op, const char* what) {
  if (!p) return;
  FB_CHECK(p->device() == input.device(), "[", op,
           "] expected all tensors to be on the same device, but found ", input.device().str(), " and ",
           p->device().str(), " (", what, ")");
}

// ---- layer_norm ----

std::tuple<Tensor, Tensor, Tensor> layer_norm_cuda(const Tensor& input, IntArrayRef normalized_shape,
                                                   const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias, double eps) {
  const char* op = "layer_norm";
  check_floating(input, op);  // no float16/bfloat16 here, unlike the CPU
  const meta::LayerNormRows s = meta::layer_norm_rows(op, input, normalized_shape);
  check_on_device(weight, input, op, "weight");
  check_on_device(bias, input, op, "bias");
  if (s.d == 0) {  // empty rows: NaN statistics, an empty output (as the CPU)
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {op::empty(input.sizes(), input.dtype(), input.device()),
            full(s.stat_shape, Scalar(nan), input.dtype(), input.device()),
            full(s.stat_shape, Scalar(nan), input.dtype(), input.device())};
  }
  const Tensor x = op::reshape(dense(input), Shape{s.m, s.d});
  const double inv_d = 1.0 / static_cast<double>(s.d);
  const Tensor mean = op::mul(sum_dims(x, {1}), number(inv_d));
  const Tensor xc = op::sub(x, mean, Scalar(1));
  const Tensor var = op::mul(sum_dims(op::mul(xc, xc), {1}), number(inv_d));
  const Tensor rstd = op::rsqrt(op::add(var, number(eps), Scalar(1)));
  Tensor y = op::mul(xc, rstd);
  if (weight) y = op::mul(y, op::reshape(*weight, Shape{1, s.d}));
  if (bias) y = op::add(y, op::reshape(*bias, Shape{1, s.d}), Scalar(1));
  return {op::reshape(y, input.sizes()), op::reshape(mean, s.stat_shape), op::reshape(rstd, s.stat_shape)};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                            IntArrayRef normalized_shape, const Tensor& mean,
                                                            const Tensor& rstd,
                                                            const std::optional<Tensor>& weight, bool input_g,
                                                            bool weight_g, bool bias_g) {
  const char* op = "layer_norm_backward";
  check_floating(input, op);  // no float16/bfloat16 here, unlike the CPU
  const meta::LayerNormRows s = meta::layer_norm_rows(op, input, normalized_shape);
  check_on_device(weight, input, op, "weight");
  Tensor gi, gw, gb;
  if (s.d == 0 || s.m == 0) {
    if (input_g) gi = zeros(input.sizes(), input.dtype(), input.device());
    if (weight_g) gw = zeros(normalized_shape, input.dtype(), input.device());
    if (bias_g) gb = zeros(normalized_shape, input.dtype(), input.device());
    return {gi, gw, gb};
  }
  const Tensor x = op::reshape(dense(input), Shape{s.m, s.d});
  const Tensor dy = op::reshape(dense(grad_out), Shape{s.m, s.d});
  const Tensor r = op::reshape(rstd, Shape{s.m, 1});
  const Tensor xhat = op::mul(op::sub(x, op::reshape(mean, Shape{s.m, 1}), Scalar(1)), r);
  if (input_g) {
    const Tensor g = weight ? op::mul(dy, op::reshape(*weight, Shape{1, s.d})) : dy;
    const double inv_d = 1.0 / static_cast<double>(s.d);
    const Tensor mg = op::mul(sum_dims(g, {1}), number(inv_d));
    const Tensor mgx = op::mul(sum_dims(op::mul(g, xhat), {1}), number(inv_d));
    const Tensor inner = op::sub(op::sub(g, mg, Scalar(1)), op::mul(xhat, mgx), Scalar(1));
    gi = op::reshape(op::mul(inner, r), input.sizes());
  }
  if (weight_g)
    gw = op::reshape(op::sum(op::mul(dy, xhat), IntArrayRef(std::vector<int64_t>{0}), false, std::nullopt),
                     normalized_shape);
  if (bias_g)
    gb =
        op::reshape(op::sum(dy, IntArrayRef(std::vector<int64_t>{0}), false, std::nullopt), normalized_shape);
  return {gi, gw, gb};
}

// ---- batch_norm ----

struct BNShape {
  int64_t n, c, l;
};

// (N, C, L) of an input of at least 2 dims (meta::check_batch_norm).
BNShape bn_shape(const Tensor& input) {
  BNShape s{input.sizes()[0], input.sizes()[1], 1};
  for (int64_t d = 2; d < input.dim(); ++d) s.l *= input.sizes()[d];
  return s;
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_cuda(const Tensor& input, const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias,
                                                   const std::optional<Tensor>& running_mean,
                                                   const std::optional<Tensor>& running_var, bool training,
                                                   double momentum, double eps) {
  // The arguments passed meta::check_batch_norm (the op's check step).
  const char* op = "batch_norm";
  check_floating(input, op);  // no float16/bfloat16 here, unlike the CPU
  const BNShape s = bn_shape(input);
  const Shape cshape{s.c};
  check_on_device(weight, input, op, "weight");
  check_on_device(bias, input, op, "bias");
  check_on_device(running_mean, input, op, "running_mean");
  check_on_device(running_var, input, op, "running_var");
  const int64_t count = s.n * s.l;  // values per channel
  const Shape c3{1, s.c, 1};
  // Evaluation mode saves no statistics (shape (0,), as PyTorch and the CPU kernel): the backward reads the
  // running ones (meta::batch_norm).
  const Shape saved = training ? cshape : Shape{0};
  if (count == 0) {  // no values: NaN statistics (as 0 / 0), an empty output, running stats untouched
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {op::empty(input.sizes(), input.dtype(), input.device()),
            full(saved, Scalar(nan), input.dtype(), input.device()),
            full(saved, Scalar(nan), input.dtype(), input.device())};
  }
  const Tensor x = op::reshape(dense(input), Shape{s.n, s.c, s.l});
  Tensor mean, invstd;
  if (training) {
    const double inv_count = 1.0 / static_cast<double>(count);
    mean = op::mul(sum_dims(x, {0, 2}), number(inv_count));
    const Tensor xc = op::sub(x, mean, Scalar(1));
    const Tensor var = op::mul(sum_dims(op::mul(xc, xc), {0, 2}), number(inv_count));
    invstd = op::rsqrt(op::add(var, number(eps), Scalar(1)));
    if (running_mean) {
      Tensor rm = *running_mean;  // a handle: updated in place
      op::mul_(rm, number(1.0 - momentum));
      op::add_(rm, op::reshape(mean, cshape), Scalar(momentum));
    }
    if (running_var) {
      const double unbias = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1)
                                      : std::numeric_limits<double>::infinity();
      Tensor rv = *running_var;
      op::mul_(rv, number(1.0 - momentum));
      op::add_(rv, op::mul(op::reshape(var, cshape), number(unbias)), Scalar(momentum));
    }
  } else {
    mean = op::reshape(dense(*running_mean), c3);
    invstd = op::rsqrt(op::add(op::reshape(*running_var, c3), number(eps), Scalar(1)));
  }
  Tensor a = weight ? op::mul(invstd, op::reshape(*weight, c3)) : invstd;
  Tensor y = op::mul(op::sub(x, mean, Scalar(1)), a);
  if (bias) y = op::add(y, op::reshape(*bias, c3), Scalar(1));
  if (!training)
    return {op::reshape(y, input.sizes()), op::empty(saved, input.dtype(), input.device()),
            op::empty(saved, input.dtype(), input.device())};
  return {op::reshape(y, input.sizes()), op::reshape(mean, cshape), op::reshape(invstd, cshape)};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                            const std::optional<Tensor>& weight,
                                                            const Tensor& save_mean,
                                                            const Tensor& save_invstd, bool train,
                                                            bool input_g, bool weight_g, bool bias_g) {
  // The arguments passed meta::check_batch_norm_grad (the op's check step).
  const char* op = "batch_norm_backward";
  check_floating(input, op);
  const BNShape s = bn_shape(input);
  const Shape cshape{s.c}, c3{1, s.c, 1};
  check_on_device(weight, input, op, "weight");
  check_on_device(save_mean, input, op, "save_mean");
  check_on_device(save_invstd, input, op, "save_invstd");
  const int64_t count = s.n * s.l;
  Tensor gi, gw, gb;
  if (count == 0) {
    if (input_g) gi = op::empty(input.sizes(), input.dtype(), input.device());
    if (weight_g) gw = zeros(cshape, input.dtype(), input.device());
    if (bias_g) gb = zeros(cshape, input.dtype(), input.device());
    return {gi, gw, gb};
  }
  const Tensor x = op::reshape(dense(input), Shape{s.n, s.c, s.l});
  const Tensor dy = op::reshape(dense(grad_out), Shape{s.n, s.c, s.l});
  const Tensor is = op::reshape(save_invstd, c3);
  const Tensor xc = op::sub(x, op::reshape(save_mean, c3), Scalar(1));
  const bool need_sums = weight_g || bias_g || (input_g && train);
  Tensor sdy, sdyx;
  if (need_sums) {
    sdy = sum_dims(dy, {0, 2});
    sdyx = sum_dims(op::mul(dy, xc), {0, 2});
  }
  if (weight_g) gw = op::reshape(op::mul(sdyx, is), cshape);
  if (bias_g) gb = op::reshape(sdy, cshape);
  if (input_g) {
    const Tensor wis = weight ? op::mul(is, op::reshape(*weight, c3)) : is;
    Tensor dx = op::mul(dy, wis);
    if (train) {
      // dx = dy a + (x - mean) k2 + k3: k2 = -is^3 w sdyx / count, k3 = -is w sdy / count.
      const double inv_count = 1.0 / static_cast<double>(count);
      const Tensor k2 = op::mul(op::mul(op::mul(wis, op::mul(is, is)), sdyx), number(-inv_count));
      const Tensor k3 = op::mul(op::mul(wis, sdy), number(-inv_count));
      dx = op::add(op::add(dx, op::mul(xc, k2), Scalar(1)), k3, Scalar(1));
    }
    gi = op::reshape(dx, input.sizes());
  }
  return {gi, gw, gb};
}

}  // namespace

NormFunctions norm_functions() {
  return {layer_norm_cuda, layer_norm_backward_cuda, batch_norm_cuda, batch_norm_backward_cuda};
}

void register_norm_kernels() {
  // Note [Structured kernels]: out kernels run the functional kernel and copy each result (the gradients
  // not asked for are undefined outputs, skipped).
  register_out_via_copy<layer_norm_cuda>(op::native_layer_norm);
  register_out_via_copy<layer_norm_backward_cuda>(op::native_layer_norm_backward);
  register_out_via_copy<batch_norm_cuda>(op::native_batch_norm);
  register_out_via_copy<batch_norm_backward_cuda>(op::native_batch_norm_backward);
}

}  // namespace flambeau::cuda
