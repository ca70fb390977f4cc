#pragma once
// Note [Meta device]
// PyTorch's meta device: a tensor on `meta` has sizes, strides and a dtype but
// no memory (its storage knows its byte size, so views are bounds-checked as
// usual, and its data pointer is null). An op on meta tensors runs only its
// meta step, the Meta kernel that codegen/gen_core.py writes from the op's
// `shape:` and `dtype:` rules in ops.yaml (src/meta_generated.cpp), so shape
// and dtype inference costs no memory and no arithmetic: a model's output
// shapes, a compiler's plan, an extension's checks. An op without rules raises
// NotImplementedError naming the op and "meta". Views (the Generic kernels)
// and composites work unchanged, since they only compose other ops. The
// factories (empty, fill_, the random fills) and copy_/clone/cast have
// hand-written meta kernels (src/meta/meta_device.cpp): copying *into* a meta
// tensor checks the shapes and copies nothing, copying *out of* one raises
// NotImplementedError ("Cannot copy out of meta tensor; no data!", PyTorch's
// words), which is also what item()/tolist()/numpy() of a meta tensor hit.
//
// Note [Meta step]
// One op's rules, written once in the table (docs/design/ops.md, "Shape and
// dtype rules"):
//   dtype: promote | float | same | bool | accumulate | <dtype name> | arg:<name>
//   shape: broadcast | same | reduce | reduce_dim | scalar | mm | bmm, or a named
//          shape function over the op's arguments: sizes(input_size) |
//          pool2d(self, kernel_size, ...) | adaptive_pool2d(self, output_size) |
//          cat(tensors, dim) | index_select(self, dim, index) | ... (model.py's SHAPE_FUNCTIONS)
//   checks: [name(arg, ...), ...]: calls of the meta::check_<name> below
// generate two functions per op: the *check step* (the checks and the dtype
// rule), which the dispatcher calls on every device path before the device
// kernel (Op::set_meta_check), so a backend's kernel may assume its arguments
// passed them and does not repeat them; and the *Meta kernel* (the shape rule,
// then storage-less outputs of the computed shapes and dtypes). The functions
// below are the vocabulary those generated functions call; a backend or an
// extension calls the same ones instead of re-deriving a rule.
#include <algorithm>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/macros.h"
#include "flambeau/scalar.h"
#include "flambeau/tensor.h"

namespace flambeau::meta {

using Tensors = std::initializer_list<const Tensor*>;

// ---- outputs ----
/// A contiguous meta tensor (no memory); the shape is checked as op::empty's.
FB_API Tensor empty(IntArrayRef sizes, ScalarType dtype, const char* op = "empty");

/// The device of an op's output: that of the first tensor that is not a 0-dim cpu tensor (a wrapped
/// number goes with any device), else the first one's (Note [TensorIterator], point 6). An undefined tensor (a
/// backward's absent gradient, zero) has none: it is skipped.
inline Device output_device(Tensors ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (!(t->device().is_cpu() && t->dim() == 0)) return t->device();
    if (!first) first = t;
  }
  return first->device();
}

// ---- dtype rules ----
/// `promote`: PyTorch's result_type over the tensor arguments (Note [Wrapped numbers]).
FB_API ScalarType promote(Tensors ts);
/// `float`: promote, then integer and bool results become the default float dtype.
FB_API ScalarType float_valued(Tensors ts);
/// `accumulate`: `dtype` if given, else integer and bool inputs sum in int64, others keep theirs.
FB_API ScalarType accumulate(const Tensor& self, std::optional<ScalarType> dtype);
/// `div_mode`: div with a rounding_mode: `float` without one (true division), else `promote`.
FB_API ScalarType div_mode_dtype(Tensors ts, std::optional<std::string_view> rounding_mode);
/// `clamp`: self promoted with the bounds as Python numbers (an int64 tensor clamped to 0.5 gives float32).
FB_API ScalarType clamp_dtype(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
/// `promote_list`: promote_types over a Tensor[] argument's dtypes (cat; none of them is a wrapped number).
FB_API ScalarType promote_list(const TensorList& ts);
/// `batch_norm_stats`: float32 for a float16/bfloat16 input given float32 parameters (mixed precision,
/// Note [Batch norm's mixed precision] in src/meta/rules.cpp), else the input's dtype.
FB_API ScalarType batch_norm_stats(const Tensor& input, const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& bias,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var);

// ---- shape rules ----
/// `broadcast`: the NumPy broadcast shape; ValueError "[op] shapes (2,) and (3,) cannot be broadcast".
FB_API Shape broadcast(const char* op, Tensors ts);
/// `broadcast` without allocating when every tensor has one shape (`a + b`, the common case): that
/// shape, else the broadcast shape, kept in `storage`.
inline IntArrayRef broadcast_into(const char* op, Tensors ts, Shape& storage) {
  const IntArrayRef first = (*ts.begin())->sizes();
  for (const Tensor* t : ts)
    if (!std::ranges::equal(t->sizes(), first)) {
      storage = broadcast(op, ts);
      return storage;
    }
  return first;
}
/// `reduce`: a reduction over `dims` (all if none or empty), kept as size 1 with keepdim.
FB_API Shape reduce(const char* op, const Tensor& self, OptionalIntArrayRef dims, bool keepdim);
/// `reduce_dim`: a reduction over one (optional: all) dim; 0-d tensors accept dim 0 and -1.
FB_API Shape reduce_dim(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim);
/// `mm`: (n, k) @ (k, m) -> (n, m), after check_matmul.
FB_API Shape mm(const char* op, const Tensor& a, const Tensor& b);
/// `bmm`: (b, n, k) @ (b, k, m) -> (b, n, m), after check_matmul.
FB_API Shape bmm(const char* op, const Tensor& a, const Tensor& b);

/// `sizes(input_size)`: the int[] argument itself (a backward's input_size).
FB_API Shape sizes(const char* op, IntArrayRef sizes);
/// `pool2d`: the output of a 2-D pooling of a (N, C, H, W) or (C, H, W) input (pool::check_pool2d's
/// checks and shape; without `dilation`, 1).
FB_API Shape pool2d(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
FB_API Shape pool2d(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, bool ceil_mode);
/// `adaptive_pool2d`: a (N, C, H, W) or (C, H, W) input pooled to output_size (pool::adaptive_out_shape).
FB_API Shape adaptive_pool2d(const char* op, const Tensor& self, IntArrayRef output_size);
/// `linear`: (*, in) x (out, in) -> (*, out), broadcast with a bias (its error names add), after check_linear.
FB_API Shape linear(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias);
/// `loss`: a pointwise loss, the broadcast shape of self and target for reduction 0 (none), else 0-d.
FB_API Shape loss(const char* op, const Tensor& self, const Tensor& target, int64_t reduction);
/// `loss_grad`: the gradient of a pointwise loss, the broadcast shape of self and target.
FB_API Shape loss_grad(const char* op, const Tensor& self, const Tensor& target);
/// Layer norm's rows: m rows of d = prod(normalized_shape) values; the mean and rstd have stat_shape,
/// (*leading, 1, ..., 1). ValueError unless input's trailing dims are normalized_shape (PyTorch's words).
struct LayerNormRows {
  int64_t m = 1, d = 1;
  Shape stat_shape;
};
FB_API LayerNormRows layer_norm_rows(const char* op, const Tensor& input, IntArrayRef normalized_shape);
/// `layer_norm`: input's shape, then stat_shape twice (mean, rstd).
FB_API std::vector<Shape> layer_norm(const char* op, const Tensor& input, IntArrayRef normalized_shape);
/// `batch_norm`: input's shape, then (C,) twice (the saved mean and 1/std), C = input.shape[1]; (0,) twice in
/// evaluation mode (training false), as PyTorch: nothing is saved, the backward reads the running statistics.
FB_API std::vector<Shape> batch_norm(const char* op, const Tensor& input, bool training);
/// `group_norm`: input's shape, then (batch, group) twice (mean, rstd).
FB_API std::vector<Shape> group_norm(const char* op, const Tensor& input, int64_t batch, int64_t group);
/// A norm's backward (grad_input, grad_weight, grad_bias): input's shape and `param` twice, each only when
/// asked (nullopt: an undefined result).
using OptionalShapes = std::vector<std::optional<Shape>>;
/// `batch_norm_backward`: the gradients, param (C,).
FB_API OptionalShapes batch_norm_backward(const char* op, const Tensor& input, bool input_g, bool weight_g,
                                          bool bias_g);
/// `layer_norm_backward`: the gradients, param normalized_shape.
FB_API OptionalShapes layer_norm_backward(const char* op, const Tensor& input, IntArrayRef normalized_shape,
                                          bool input_g, bool weight_g, bool bias_g);
/// `group_norm_backward`: the gradients, param (channels,).
FB_API OptionalShapes group_norm_backward(const char* op, const Tensor& input, int64_t channels, bool input_g,
                                          bool weight_g, bool bias_g);
/// `conv`: the output of a 1-D or 2-D convolution or its transpose (conv::check_and_output_shape, the
/// checks and shape of the cpu, CUDA and meta).
FB_API Shape conv(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                  IntArrayRef output_padding, int64_t groups);
/// A class loss (nll_loss, cross_entropy) over dim 1 of (N, C, d1, ...), or dim 0 of (C,): C classes,
/// rows = N * d1 * ... values, out_shape (N, d1, ...) unreduced.
struct ClassLossRows {
  int64_t outer = 1, classes = 1, inner = 1, rows = 0;
  Shape out_shape;
};
FB_API ClassLossRows class_loss_rows(const Tensor& self);
/// `class_loss`: out_shape for reduction 0 (none), else 0-d.
FB_API Shape class_loss(const char* op, const Tensor& self, int64_t reduction);
/// `cross_entropy`: class_loss's shape, then (rows,) for the per-row log-sum-exp.
FB_API std::vector<Shape> cross_entropy(const char* op, const Tensor& self, int64_t reduction);
/// `topk`: self's shape with `dim` of size k (a 0-d self stays 0-d), after check_topk.
FB_API Shape topk(const char* op, const Tensor& self, int64_t k, int64_t dim);
/// `cat`: the tensors' shape with the sizes along `dim` added up, after check_cat's checks (which it runs: a
/// backend's cat kernel calls it for its output's shape). 1-D empty tensors are skipped (PyTorch's legacy);
/// (0,) when every tensor is.
FB_API Shape cat(const char* op, const TensorList& tensors, int64_t dim);
/// `index_select`: self's shape with `dim` of the index's length (a 0-d self: 0-d, and one index).
FB_API Shape index_select(const char* op, const Tensor& self, int64_t dim, const Tensor& index);
/// Advanced indexing's result layout (Note [Advanced indexing], src/cpu/indexing/indexing.cpp): the index
/// tensors' broadcast shape B, and self's other dims split into those placed before B in the result (the dims
/// before the indexed ones, when these are adjacent) and those after it.
struct IndexLayout {
  Shape index_shape;                // B
  std::vector<int64_t> pre, post;   // self's dims before and after B in the result
  Shape result_shape(const Tensor& self) const;
};
/// The layout for `per_dim`, one entry per dim of self in order: that dim's integer index (a mask already turned into
/// the coordinates of its true elements) or an undefined tensor (the whole dim). IndexError when the index
/// tensors do not broadcast together (PyTorch's "shape mismatch: indexing tensors could not be broadcast").
FB_API IndexLayout index_layout(const char* op, std::span<const Tensor> per_dim);
/// `index`: self[indices]'s shape from index_layout, after check_index. A bool/uint8 mask's result has as
/// many rows as it has true elements, which only its values tell: NotImplementedError on the meta device
/// (as PyTorch's).
FB_API Shape index(const char* op, const Tensor& self, const OptionalTensorList& indices);
/// `embedding`: indices' shape, then weight's embedding_dim.
FB_API Shape embedding(const char* op, const Tensor& weight, const Tensor& indices);
/// `embedding_backward`: (num_weights, embedding_dim), grad_output's last dim.
FB_API Shape embedding_backward(const char* op, const Tensor& grad_output, int64_t num_weights);

// ---- the FFT primitives (src/meta/fft_rules.cpp) ----
/// _fft_c2c/_fft_c2r: a complex64 or complex128 self (TypeError).
FB_API void check_fft_complex(const char* op, const Tensor& self);
/// _fft_r2c: a float32 or float64 self (TypeError).
FB_API void check_fft_real(const char* op, const Tensor& self);
/// The transformed dims: at least one, each in range (IndexError), none twice.
FB_API void check_fft_dims(const char* op, const Tensor& self, IntArrayRef dim);
/// normalization 0 (none), 1 (by sqrt(n)) or 2 (by n).
FB_API void check_fft_norm(const char* op, int64_t normalization);
/// _fft_c2r: last_dim_size >= 1, the last transformed dim of size last_dim_size / 2 + 1.
FB_API void check_fft_c2r_size(const char* op, const Tensor& self, IntArrayRef dim, int64_t last_dim_size);
/// `fft_r2c`: self's shape, the last of dim (checked) of size n / 2 + 1 when onesided.
FB_API Shape fft_r2c(const char* op, const Tensor& self, IntArrayRef dim, bool onesided);
/// `fft_c2r`: self's shape, the last of dim (checked) of size last_dim_size.
FB_API Shape fft_c2r(const char* op, const Tensor& self, IntArrayRef dim, int64_t last_dim_size);
/// _stft_r2c (Note [stft frames]): a float32/float64 (B, L) signal, a window of its dtype and n_fft values,
/// hop_length > 0, a pad the pad mode can read.
FB_API void check_stft(const char* op, const Tensor& signal, const Tensor& window, int64_t n_fft,
                       int64_t hop_length, int64_t pad, std::string_view pad_mode);
/// `stft`: (B, frames, n_fft / 2 + 1), after check_stft.
FB_API Shape stft(const char* op, const Tensor& signal, int64_t n_fft, int64_t hop_length, int64_t pad);

// ---- checks (the `checks:` vocabulary of the table) ----
/// Every tensor on one device; a 0-dim cpu tensor (a wrapped number) goes with any device.
FB_API void check_same_device(const char* op, Tensors ts);
/// PyTorch's alpha rules for the promoted dtype of `ts`: bool alpha only for bool results, no float
/// alpha for integer results, the value fits the dtype.
FB_API void check_alpha_value(const char* op, Tensors ts, const Scalar& alpha);
/// check_alpha_value, except for the default alpha (1), which always fits: it returns inline, without
/// promoting (add is the hottest op).
inline void check_alpha(const char* op, Tensors ts, const Scalar& alpha) {
  if (alpha.kind() == Scalar::Kind::Int && alpha.to_int() == 1) [[likely]]
    return;
  check_alpha_value(op, ts, alpha);
}
/// lt/le/gt/ge: TypeError when a and b promote to a complex dtype, which has no order.
FB_API void check_ordered(const char* op, const Tensor& a, const Tensor& b);
/// TypeError unless `t` has dtype bool (where's condition).
FB_API void check_bool(const char* op, const Tensor& t, const char* what);
/// TypeError unless `t` is a real floating tensor (the activations, the poolings): "[gelu] input must be a
/// float16, bfloat16, float32 or float64 tensor, got dtype int64".
FB_API void check_floating(const char* op, const Tensor& t, const char* what);
/// TypeError for a bool tensor: "[max_pool2d] is not supported for dtype bool".
FB_API void check_not_bool(const char* op, const Tensor& t);
/// The integer dtypes a pooling's CPU kernel takes besides the floating ones (PyTorch's: max pooling all of
/// uint8..int64, average pooling int64 only, adaptive max pooling none).
enum class PoolIntegers : uint8_t { None, Int64, All };
/// A pooling input of a dtype PyTorch's CPU kernel `kernel` computes (floating, and `integers`), else
/// NotImplementedError in PyTorch's words:
/// "[avg_pool2d] \"avg_pool2d\" not implemented for 'Int' (dtype int32)".
FB_API void check_pool_dtype(const char* op, const Tensor& t, const char* kernel, PoolIntegers integers);
/// avg_pool2d: a given divisor_override is non-zero.
FB_API void check_divisor(const char* op, std::optional<int64_t> divisor);
/// max_pool_backward: int64 indices of grad_output's shape, input_size of their rank (at least 2) with the
/// same leading dims.
FB_API void check_max_pool_grad(const char* op, const Tensor& grad_output, const Tensor& indices,
                                IntArrayRef input_size);
/// avg_pool2d_backward: grad_output has the shape the forward gives for input_size.
FB_API void check_pool2d_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size,
                              IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode);
/// adaptive_avg_pool2d_backward: grad_output has the rank of input_size and the forward's shape.
FB_API void check_adaptive_pool2d_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size);
// -- im2col/col2im, _pad_nd and the 2-D resizing (src/meta/spatial_rules.cpp): shape rules and checks --
/// im2col (batched_dim 4) and col2im (3): a float32/float64 input of batched_dim or batched_dim - 1 dims.
FB_API void check_blocks_input(const char* op, const Tensor& self, int64_t batched_dim);
/// `im2col`: (N, C * kH * kW, L) (or unbatched (C * kH * kW, L)), L the number of sliding blocks.
FB_API Shape im2col(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation,
                    IntArrayRef padding, IntArrayRef stride);
/// `col2im`: (N, C, *output_size) (or (C, *output_size)), self's columns being (C * kH * kW, L).
FB_API Shape col2im(const char* op, const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size,
                    IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride);
/// _pad_nd: mode constant, reflect, replicate or circular; a value only for constant.
FB_API void check_pad_mode(const char* op, std::string_view mode, double value);
/// `pad_nd`: self's shape with the trailing len(pad) / 2 dims padded (F.pad's checks).
FB_API Shape pad_nd(const char* op, const Tensor& self, IntArrayRef pad, std::string_view mode);
/// _pad_nd_backward: a valid mode and pads for input_size, grad_output of the padded shape (float32/float64
/// but for a constant pad, whose gradient is a crop).
FB_API void check_pad_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size, IntArrayRef pad,
                           std::string_view mode);
/// upsample_bilinear2d and the resizing backwards: a float32 or float64 tensor.
FB_API void check_resample_dtype(const char* op, const Tensor& t);
/// `upsample2d`: a (N, C, H, W) input resized to output_size (H, W), every size positive.
FB_API Shape upsample2d(const char* op, const Tensor& self, IntArrayRef output_size);
/// The resizing backwards: check_resample_dtype, then grad_output of the forward's shape for input_size.
FB_API void check_upsample2d_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size,
                                  IntArrayRef output_size);
/// linear: a 2-D weight whose in_features is input's last dim; input, weight and bias of one dtype, input
/// and weight on one device.
FB_API void check_linear(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias);
/// A loss's reduction: 0 (none), 1 (mean) or 2 (sum).
FB_API void check_reduction(const char* op, int64_t reduction);
/// A loss's scalar parameter (smooth_l1's beta, huber's delta): ValueError "[op] <what>, got <value>" unless ok.
FB_API void check_loss_param(const char* op, bool ok, const char* what, double value);
/// A pointwise loss (mse, l1, smooth_l1, huber; `binary`: the binary cross entropies): a float32/64 input,
/// a target that broadcasts with it (binary: a floating target of input's shape), weight and pos_weight
/// float32/64 and broadcasting to that shape, a valid reduction.
FB_API void check_pointwise_loss(const char* op, const Tensor& self, const Tensor& target,
                                 const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                                 bool binary, int64_t reduction);
/// Its gradient: as check_pointwise_loss, then a float32/64 grad_output of the loss's shape (one element
/// when reduced).
FB_API void check_pointwise_loss_grad(const char* op, const Tensor& grad_output, const Tensor& self,
                                      const Tensor& target, const std::optional<Tensor>& weight,
                                      const std::optional<Tensor>& pos_weight, bool binary, int64_t reduction);
/// A per-channel (or per-feature) parameter of a norm: absent, or of `shape` and input's dtype
/// ("[batch_norm] weight must have shape (3,) (one value per channel, ...)": `why` is the parenthesis).
FB_API void check_norm_param(const char* op, const std::optional<Tensor>& p, const Tensor& input, IntArrayRef shape,
                             const char* what, const char* why);
/// layer_norm: a float32/float64 (or float16/bfloat16, computed in float32) input whose trailing dims are
/// normalized_shape, weight and bias of that shape and input's dtype.
FB_API void check_layer_norm(const char* op, const Tensor& input, IntArrayRef normalized_shape,
                             const std::optional<Tensor>& weight, const std::optional<Tensor>& bias);
/// batch_norm: a float16/bfloat16/float32/float64 input of at least 2 dims (N, C, ...), weight, bias and the
/// running statistics (C,) of its dtype (or all float32 for a float16/bfloat16 input: batch_norm_stats), the
/// running statistics given in evaluation mode and without internal overlap (updated in place), eps >= 0.
FB_API void check_batch_norm(const char* op, const Tensor& input, const std::optional<Tensor>& weight,
                             const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                             const std::optional<Tensor>& running_var, bool training, double eps);
/// batch_norm_backward: as check_batch_norm's input, grad_out of input's shape and dtype, weight, save_mean and
/// save_invstd (C,) of the forward's batch_norm_stats dtype.
FB_API void check_batch_norm_grad(const char* op, const Tensor& grad_out, const Tensor& input,
                                  const std::optional<Tensor>& weight, const Tensor& save_mean,
                                  const Tensor& save_invstd);
/// layer_norm_backward: check_layer_norm's input and weight (float16/bfloat16 when grad_out has that dtype
/// too), grad_out of input's shape and dtype, mean and rstd of one value per row.
FB_API void check_layer_norm_grad(const char* op, const Tensor& grad_out, const Tensor& input,
                                  IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd,
                                  const std::optional<Tensor>& weight);
/// group_norm: a float32/float64 input described by (batch, channels, hxw), channels divisible by group > 0,
/// weight and bias (channels,) of its dtype.
FB_API void check_group_norm(const char* op, const Tensor& input, const std::optional<Tensor>& weight,
                             const std::optional<Tensor>& bias, int64_t batch, int64_t channels, int64_t hxw,
                             int64_t group);
/// group_norm_backward: as check_group_norm, grad_out of input's shape and dtype, mean and rstd of
/// batch * group values.
FB_API void check_group_norm_grad(const char* op, const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                  const Tensor& rstd, const std::optional<Tensor>& weight, int64_t batch,
                                  int64_t channels, int64_t hxw, int64_t group);
/// _softmax/_log_softmax: a floating input ("[log_softmax] needs a floating point tensor, got dtype int64")
/// and a valid dim.
FB_API void check_softmax(const char* op, const Tensor& self, int64_t dim);
/// Their backwards: a float32/float64 output, grad_output of its dtype and shape, a valid dim.
FB_API void check_softmax_grad(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim);
/// var/std: TypeError unless self is floating or complex.
FB_API void check_var(const char* op, const Tensor& self);
/// mode: IndexError unless `dim` is a dim of self of non-zero size ("Expected reduction dim 0 to have
/// non-zero size", PyTorch's words).
FB_API void check_nonempty_dim(const char* op, const Tensor& self, int64_t dim);
/// div: rounding_mode is None, 'trunc' or 'floor'.
FB_API void check_rounding_mode(const char* op, std::optional<std::string_view> rounding_mode);
/// convolution: every argument (conv::check_and_output_shape).
FB_API void check_conv(const char* op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                       IntArrayRef output_padding, int64_t groups);
/// convolution_backward_weight: weight_size of input's rank, grad_output of input's dtype and of the shape
/// the forward gives for a weight of weight_size.
FB_API void check_conv_weight_grad(const char* op, const Tensor& grad_output, const Tensor& input,
                                   IntArrayRef weight_size, IntArrayRef stride, IntArrayRef padding,
                                   IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups);
/// A class loss: a valid reduction, a float32/64 input of at least 1 dim, int64 class indices of
/// out_shape (or, `allow_probs`, class probabilities of input's shape and a floating dtype), a float32/64
/// weight of one value per class.
FB_API void check_class_loss(const char* op, const Tensor& self, const Tensor& target,
                             const std::optional<Tensor>& weight, int64_t reduction, bool allow_probs);
/// cross_entropy_backward: lse holds one value per row, of input's dtype.
FB_API void check_cross_entropy_lse(const char* op, const Tensor& self, const Tensor& lse);
/// A class loss's gradient: float32/64, of the loss's shape (one element when reduced).
FB_API void check_class_loss_grad(const char* op, const Tensor& grad_output, const Tensor& self, int64_t reduction);
/// An activation's backward (silu_backward, ...): a floating input and grad_output of its shape (float16 and
/// bfloat16 when both have that dtype, else float32 or float64).
FB_API void check_activation_grad(const char* op, const Tensor& grad_output, const Tensor& self);
/// gelu: approximate is 'none' or 'tanh'.
FB_API void check_gelu_approximate(const char* op, std::string_view approximate);
/// clamp: at least one bound.
FB_API void check_clamp_bounds(const char* op, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
/// pow of an integer tensor to a Python int (a wrapped number; a tensor of exponents is not checked element by
/// element, as in PyTorch): the exponent is not negative and fits the result's dtype (int8 ** 128 raises).
FB_API void check_int_pow_exponent(const char* op, const Tensor& self, const Tensor& exponent, ScalarType result);
/// round: decimals != 0 only for a floating tensor.
FB_API void check_round_decimals(const char* op, const Tensor& self, int64_t decimals);
/// hardtanh: min_val <= max_val.
FB_API void check_hardtanh_bounds(const char* op, const Scalar& min_val, const Scalar& max_val);
/// topk: a valid dim and 0 <= k <= its size.
FB_API void check_topk(const char* op, const Tensor& self, int64_t k, int64_t dim);
// Note [Dtype coverage]
// Which dtypes an op computes in is part of its rule, written once in the table (`dtypes:`, a union of
// type_dispatch.h's sets; absent: all), not found out by calling a kernel: the check step refuses any
// other dtype at the call on every device, so a kernel may assume it has a loop for the dtype it gets, the
// meta device refuses what the cpu refuses, and the simulated device enqueues its cpu kernel without
// trying it first on size-1 stand-ins (what it did before). test_meta.py holds the table to the cpu
// kernels: every elementwise, sorting and comparison op in each dtype, same outcome on cpu and meta.
/// TypeError unless `computed`, the dtype the op computes in, is in `allowed`: "[atan2] is not supported
/// for dtype complex64", "[sub] is not supported for bool tensors", with the inputs' dtypes when there are
/// several.
FB_API void check_dtypes(const char* op, ScalarType computed, unsigned allowed, Tensors inputs);
/// TypeError for a complex dtype (sign: use sgn).
FB_API void check_real(const char* op, ScalarType t, const char* hint);
/// mm/bmm/linear operands: `want_dim`-D, one dtype, one device, matching inner (and batch) sizes.
FB_API void check_matmul(const char* op, const Tensor& a, const Tensor& b, int64_t want_dim);
/// IndexError unless `dim` is a dim of self (wrap_dim's message).
FB_API void check_dim(const char* op, const Tensor& self, int64_t dim);
/// A reduction with no identity (max, argmin, max.dim): along `dim`, that dim must not be empty
/// (IndexError "cannot reduce over dim 1 of size 0"); over everything (no dim), self must not be empty
/// (RuntimeError "[max] max() of an empty tensor (shape (0,)) is undefined" + `hint`).
FB_API void check_reducible(const char* op, const Tensor& self, std::optional<int64_t> dim, const char* hint);
/// argmax, argmin: a bool input is refused, as PyTorch (RuntimeError "argmax(): does not support bool input").
inline void check_no_bool_input(const char* op, const Tensor& self) {
  FB_CHECK(self.dtype() != ScalarType::Bool, "[", op, "] ", op, "(): does not support bool input");
}
/// amax/amin: valid, distinct `dims` (all if empty), none of them empty.
FB_API void check_reducible_dims(const char* op, const Tensor& self, IntArrayRef dims);
// The indexing family. Only what the shapes and dtypes tell is checked here; an index value out of range
// needs the values, which only the device kernel reads (IndexError there).
/// cat: a non-empty list, tensors (other than the skipped 1-D empty ones) of one device and rank, at least
/// 1-D, of the same sizes except along `dim`, whose sizes there add up within int64.
FB_API void check_cat(const char* op, const TensorList& tensors, int64_t dim);
/// gather: a valid dim, an int64 index of self's rank no larger than self outside `dim`.
FB_API void check_gather(const char* op, const Tensor& self, int64_t dim, const Tensor& index);
/// scatter, scatter_add, scatter_reduce: a valid dim (0-d self: as 1-D), an int64 index of self's rank (or
/// empty) no larger than self outside `dim`; a src (if any) of self's dtype, of index's rank and no
/// smaller than index.
FB_API void check_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src);
/// scatter's and scatter_reduce's `reduce`: 'add'/'multiply' (scatter), else 'sum', 'prod', 'mean', 'amax'
/// or 'amin', and no amax/amin of complex values (ValueError, TypeError).
FB_API void check_scatter_reduce(const char* op, std::optional<std::string_view> reduce, bool scatter_reduce,
                                 const Tensor& self);
/// index_select, index_add, index_copy, index_fill: an int64/int32 index of at most 1 dim, a valid dim (0-d
/// self: as 1-D), and a source (if any) of self's dtype and shape but for index's length along `dim`.
FB_API void check_index_slices(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor* source);
/// index and index_put_ (advanced indexing): each index None (a whole dim) or a tensor on self's device (a
/// 0-dim cpu one goes with any), int64/int32 (one dim) or a bool/uint8 mask of at least 1 dim with the shape
/// of the dims of self it covers; at least one tensor, covering no more dims than self has. IndexError for
/// each, but RuntimeError for the device and ValueError for only None (PyTorch's types).
FB_API void check_index(const char* op, const Tensor& self, const OptionalTensorList& indices);
/// index_put_ (`self[indices] = values`): values of self's dtype, on its device (or a 0-d cpu tensor), self
/// not expanded (its elements would share memory), check_index, and values broadcasting to the indexing
/// result's shape, which with a bool mask only the kernel knows (it calls check_index_put_values then).
FB_API void check_index_put(const char* op, const Tensor& self, const OptionalTensorList& indices,
                            const Tensor& values);
/// values broadcast to `result_shape`, the shape of self[indices].
FB_API void check_index_put_values(const char* op, const Tensor& values, IntArrayRef result_shape);
/// A Python number stored into self (scatter's and index_fill's value): it must fit self's dtype.
FB_API void check_value_fits(const char* op, const Scalar& value, const Tensor& self);
/// embedding: a 2-D float weight (float16/bfloat16 too), int64/int32 indices, sparse=False.
FB_API void check_embedding(const char* op, const Tensor& weight, const Tensor& indices, bool sparse);
/// embedding_dense_backward: a float grad_output (float16/bfloat16 too) of indices' shape plus one dim,
/// int64/int32 indices, num_weights >= 0.
FB_API void check_embedding_backward(const char* op, const Tensor& grad_output, const Tensor& indices,
                                     int64_t num_weights);
// ---- prelu, glu, dropout, embedding_bag and _linear_backward (src/meta/nn_layer_rules.cpp) ----
/// prelu: a floating input (float16/bfloat16 computed in float32), a weight of its dtype, 0-D or 1-D, of one
/// element or one per channel (dim 1).
FB_API void check_prelu(const char* op, const Tensor& self, const Tensor& weight);
/// Its backwards: check_prelu, then grad_output of input's shape.
FB_API void check_prelu_grad(const char* op, const Tensor& grad_output, const Tensor& self, const Tensor& weight);
/// glu: a float32/float64 input of at least 1 dim whose `dim` has an even size.
FB_API void check_glu(const char* op, const Tensor& self, int64_t dim);
/// glu_backward: check_glu, then grad_output of the forward's shape.
FB_API void check_glu_grad(const char* op, const Tensor& grad_output, const Tensor& self, int64_t dim);
/// `glu`: self's shape with `dim` halved, after check_glu.
FB_API Shape glu(const char* op, const Tensor& self, int64_t dim);
/// native_dropout: a float32/float64 input, 0 <= p <= 1.
FB_API void check_dropout(const char* op, const Tensor& input, double p);
/// _feature_dropout: check_dropout, and an (N, C, ...) input of at least 2 dims.
FB_API void check_feature_dropout(const char* op, const Tensor& input, double p);
/// `feature_dropout`: input's shape, then (N, C, 1, ...) for the mask.
FB_API std::vector<Shape> feature_dropout(const char* op, const Tensor& input);
/// native_dropout_backward: a float32/float64 grad_output, a bool mask of its shape or (N, C, 1, ...).
FB_API void check_dropout_grad(const char* op, const Tensor& grad_output, const Tensor& mask);
/// _embedding_bag: what the shapes and dtypes tell (the offsets' and indices' values are the kernel's): a 2-D
/// float32/float64 weight, int64/int32 1-D indices and offsets, sparse=False, mode 0, 1 or 2, per_sample_weights
/// only with mode sum, of weight's dtype and indices' shape, an offset to end the last bag if
/// include_last_offset.
FB_API void check_embedding_bag(const char* op, const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                                int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
                                bool include_last_offset);
/// `embedding_bag`: (bags, dim) output, (indices,) offset2bag, (bags,) bag_size, max_indices (bags, dim) for
/// mode max else (0,).
FB_API std::vector<Shape> embedding_bag(const char* op, const Tensor& weight, const Tensor& indices,
                                        const Tensor& offsets, int64_t mode, bool include_last_offset);
/// _embedding_bag_backward: a float32/float64 2-D grad of one row per bag, int64/int32 indices, one
/// offset2bag entry per index.
FB_API void check_embedding_bag_grad(const char* op, const Tensor& grad, const Tensor& indices,
                                     const Tensor& offset2bag, const Tensor& bag_size);
/// `embedding_bag_backward`: (num_weights, grad's last dim).
FB_API Shape embedding_bag_backward(const char* op, const Tensor& grad, int64_t num_weights);
/// _embedding_bag_per_sample_weights_backward: mode sum, embedding_bag's weight, a 2-D grad of weight's
/// dim, one offset2bag entry per index.
FB_API void check_embedding_bag_psw_grad(const char* op, const Tensor& grad, const Tensor& weight,
                                         const Tensor& indices, const Tensor& offset2bag, int64_t mode);
/// _linear_backward: 2-D grad_output (n, out), input (n, in) and weight (out, in) of one float32/float64
/// dtype and one device, each dim below 2^31.
FB_API void check_linear_backward(const char* op, const Tensor& grad_output, const Tensor& input,
                                  const Tensor& weight);
/// `linear_backward`: (n, in), weight's shape and (out,), each only when asked.
FB_API OptionalShapes linear_backward(const char* op, const Tensor& input, const Tensor& weight, bool input_g,
                                      bool weight_g, bool bias_g);
// ---- _rnn_layer and _rnn_layer_backward (src/meta/rnn_rules.cpp) ----
/// _rnn_layer: mode 0-3, float32/float64 igates and tensors of its dtype, w_hh (G*H, H), b_hh (G*H) or empty,
/// igates (N, G*H), hx (B, H), cx (B, H) for LSTM, batch_sizes positive, non-increasing, from B, summing to N.
FB_API void check_rnn_layer(const char* op, const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh,
                            const Tensor& hx, const Tensor& cx, int64_t mode, IntArrayRef batch_sizes);
/// _rnn_layer_backward: check_rnn_layer, then the gradients (undefined or empty: zero), output and workspace
/// of the forward's shapes and dtype.
FB_API void check_rnn_layer_backward(const char* op, const Tensor& grad_output, const Tensor& grad_hy,
                                     const Tensor& grad_cy, const Tensor& igates, const Tensor& w_hh,
                                     const Tensor& b_hh, const Tensor& hx, const Tensor& cx, const Tensor& output,
                                     const Tensor& workspace, int64_t mode, IntArrayRef batch_sizes);
/// `rnn_layer`: output (N, H), hy (B, H), cy (B, H) for LSTM else (0, H), workspace (N, W * H) (W: 6 LSTM, 4
/// GRU, 0 RNN).
FB_API std::vector<Shape> rnn_layer(const char* op, const Tensor& igates, const Tensor& w_hh, const Tensor& hx,
                                    int64_t mode);
/// `rnn_layer_backward`: the gradients of igates (N, G*H), w_hh (G*H, H), b_hh (G*H, or (0,) without a bias),
/// hx (B, H) and cx (B, H) for LSTM else (0, H): all of them, always.
FB_API std::vector<Shape> rnn_layer_backward(const char* op, const Tensor& igates, const Tensor& w_hh,
                                             const Tensor& b_hh, const Tensor& hx, int64_t mode);
/// An in-place op: the result dtype must cast to self's (TypeError: "result type X can't be cast to
/// the desired output type Y").
FB_API void check_inplace_dtype(const char* op, const Tensor& self, ScalarType result);
/// An in-place op: the inputs must broadcast to self's shape (ValueError naming both shapes).
FB_API void check_broadcasts_to(const char* op, Tensors inputs, const Tensor& self);

// ---- flip, tril/triu, masked_fill, cummax/cummin/logcumsumexp, angle/complex/frexp, searchsorted,
// _cdist_euclidean, _sort_values and _dot_small (src/meta/shape_op_rules.cpp): their kernels' checks ----
/// flip: every dim in range (a 0-d tensor takes 0 and -1), none twice.
FB_API void check_flip_dims(const char* op, const Tensor& self, IntArrayRef dims);
/// tril/triu: at least 2 dims.
FB_API void check_triangle(const char* op, const Tensor& self);
/// masked_fill: a bool mask that broadcasts to self, a value that fits self's dtype, a dtype of the kernel's.
FB_API void check_masked_fill(const char* op, const Tensor& self, const Tensor& mask, const Scalar& value);
/// cummax/cummin: a dtype of the kernel's (bool, integers, float32/float64) when self has elements.
FB_API void check_cum_extremum(const char* op, const Tensor& self);
/// logcumsumexp: a floating point tensor.
FB_API void check_logcumsumexp(const char* op, const Tensor& self);
/// complex: real and imag of one dtype, float32 or float64.
FB_API void check_complex_parts(const char* op, const Tensor& real, const Tensor& imag);
/// frexp: a floating point tensor (float16, bfloat16, float32, float64).
FB_API void check_frexp(const char* op, const Tensor& self);
/// searchsorted: side, sorted_sequence's dims against input's, sorter's shape and dtype (its values, read
/// from the data, are the kernel's to check).
FB_API void check_searchsorted(const char* op, const Tensor& sorted_sequence, const Tensor& self, bool right,
                               std::optional<std::string_view> side, const std::optional<Tensor>& sorter);
/// _cdist_euclidean: (B, P, M) and (B, R, M) float32/float64 rows (at most INT_MAX rows and columns).
FB_API void check_cdist(const char* op, const Tensor& x1, const Tensor& x2);
/// `cdist(x1, x2)`: (B, P, R), after check_cdist.
FB_API Shape cdist(const char* op, const Tensor& x1, const Tensor& x2);
/// _sort_values: sort's dtypes and dim.
FB_API void check_sort_values(const char* op, const Tensor& self, int64_t dim);
/// _dot_small: two 1-D float32 or float64 tensors of one size and dtype.
FB_API void check_dot_small(const char* op, const Tensor& self, const Tensor& tensor);
/// `real_float`: angle's result, the float dtype of an integer or bool input, the real one of a complex.
FB_API ScalarType real_float(const Tensor& self);

}  // namespace flambeau::meta
#include "flambeau/meta_linalg.h"  // IWYU pragma: export (the linalg primitives)
