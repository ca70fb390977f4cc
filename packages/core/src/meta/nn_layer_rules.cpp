// The meta step's rules of prelu, glu, dropout, embedding_bag and _linear_backward (Note [Meta step],
// flambeau/meta.h): the checks their CPU kernels made before they became structured ops (same order, same
// messages), and the shapes of their results. What only the values tell (an embedding_bag offset or index
// out of range) stays with the kernels.
#include <algorithm>
#include <climits>

#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "generic/nn_utils.h"

namespace flambeau::meta {

namespace {
void check_float32_64(const char* op, const Tensor& t, const char* what) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op, "] ", what,
                " must be a float32 or float64 tensor, got dtype ", dtype_name(t.dtype()));
}

void check_index_dtype(const char* op, const Tensor& t, const char* what) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Int64 || t.dtype() == ScalarType::Int32, "[", op, "] ", what,
                " must be an int64 or int32 tensor, got dtype ", dtype_name(t.dtype()));
}

void check_bag_weight(const char* op, const Tensor& weight) {
  check_float32_64(op, weight, "weight");
  FB_CHECK_VALUE(weight.dim() == 2, "[", op, "] weight must be 2-D (num_embeddings, embedding_dim), got shape ",
                 shape_str(weight.sizes()));
}
}  // namespace

// ---- prelu ----

void check_prelu(const char* op, const Tensor& self, const Tensor& weight) {
  FB_CHECK_TYPE(is_floating(self.dtype()), "[", op, "] input must be a float16, bfloat16, float32 or float64 ",
                "tensor, got dtype ", dtype_name(self.dtype()));
  FB_CHECK_TYPE(weight.dtype() == self.dtype(), "[", op, "] weight dtype ", dtype_name(weight.dtype()),
                " must match the input dtype ", dtype_name(self.dtype()));
  const int64_t ch = self.dim() >= 2 ? self.sizes()[1] : 1;
  FB_CHECK_VALUE(weight.dim() <= 1, "[", op, "] weight must be 0-D or 1-D, got shape ", shape_str(weight.sizes()));
  FB_CHECK_VALUE(weight.numel() == 1 || weight.numel() == ch, "[", op,
                 "] mismatch of parameter numbers and input channel size: ", "weight has ", weight.numel(),
                 " elements, input shape ", shape_str(self.sizes()), " has ", ch, " channels (dim 1)");
}

void check_prelu_grad(const char* op, const Tensor& grad_output, const Tensor& self, const Tensor& weight) {
  check_prelu(op, self, weight);
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), self.sizes()), "[", op, "] grad_output shape ",
                 shape_str(grad_output.sizes()), " does not match input shape ", shape_str(self.sizes()));
}

// ---- glu ----

void check_glu(const char* op, const Tensor& self, int64_t dim) {
  check_floating(op, self, "input");  // float16/bfloat16 computed in float32
  FB_CHECK_VALUE(self.dim() > 0, "[", op, "] glu does not support scalars because halving size must be even");
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const int64_t n = self.sizes()[d];
  FB_CHECK_VALUE(n % 2 == 0, "[", op, "] halving dimension must be even, but dimension ", d, " is size ", n,
                 " (input shape ", shape_str(self.sizes()), ")");
}

Shape glu(const char* op, const Tensor& self, int64_t dim) {
  Shape out(self.sizes().begin(), self.sizes().end());
  out[wrap_dim(dim, self.dim(), op)] /= 2;
  return out;
}

void check_glu_grad(const char* op, const Tensor& grad_output, const Tensor& self, int64_t dim) {
  check_glu(op, self, dim);
  const Shape out_shape = glu(op, self, dim);
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), out_shape), "[", op, "] grad_output shape ",
                 shape_str(grad_output.sizes()), " does not match the output shape ", shape_str(out_shape));
}

// ---- dropout ----

void check_dropout(const char* op, const Tensor& input, double p) {
  check_floating(op, input,
                 "input");  // float16/bfloat16 too: Note [16-bit dropout] (cpu/norm/norm_dropout.cpp)
  FB_CHECK_VALUE(p >= 0 && p <= 1, "[", op, "] dropout probability has to be between 0 and 1, but got ", p);
}

void check_feature_dropout(const char* op, const Tensor& input, double p) {
  check_dropout(op, input, p);
  FB_CHECK_VALUE(input.dim() >= 2, "[", op,
                 "] Feature dropout requires at least 2 dimensions in the input (N, C, ...), got shape ",
                 shape_str(input.sizes()));
}

std::vector<Shape> feature_dropout(const char*, const Tensor& input) {
  Shape mask{input.sizes()[0], input.sizes()[1]};
  mask.resize(static_cast<size_t>(input.dim()), 1);
  return {Shape(input.sizes().begin(), input.sizes().end()), std::move(mask)};
}

void check_dropout_grad(const char* op, const Tensor& grad_output, const Tensor& mask) {
  check_floating(op, grad_output, "grad_output");
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[", op, "] mask must be a bool tensor, got dtype ",
                dtype_name(mask.dtype()));
  // The mask has grad's shape, or (N, C, 1, ...) for feature dropout.
  const bool same = std::ranges::equal(mask.sizes(), grad_output.sizes());
  bool feature = !same && mask.dim() == grad_output.dim() && mask.dim() >= 2 &&
                 mask.sizes()[0] == grad_output.sizes()[0] && mask.sizes()[1] == grad_output.sizes()[1];
  for (int64_t d = 2; feature && d < mask.dim(); ++d) feature = mask.sizes()[d] == 1;
  FB_CHECK_VALUE(same || feature, "[", op, "] mask shape ", shape_str(mask.sizes()), " does not match grad shape ",
                 shape_str(grad_output.sizes()));
}

// ---- embedding_bag ----

void check_embedding_bag(const char* op, const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                         int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
                         bool include_last_offset) {
  check_bag_weight(op, weight);
  check_index_dtype(op, indices, "indices");
  check_index_dtype(op, offsets, "offsets");
  if (sparse) throw NotImplementedError(detail::cat_str("[", op, "] sparse=True (sparse gradients) is not supported"));
  FB_CHECK_VALUE(mode >= 0 && mode <= 2, "[", op, "] mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  FB_CHECK_VALUE(indices.dim() == 1, "[", op, "] input has to be 1-D (with offsets) here, got shape ",
                 shape_str(indices.sizes()));
  FB_CHECK_VALUE(offsets.dim() == 1, "[", op, "] offsets has to be a 1-D tensor, got shape ",
                 shape_str(offsets.sizes()));
  if (per_sample_weights) {
    FB_CHECK_VALUE(
        mode == 0, "[", op,
        "] per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode=",
        mode == 1 ? "'mean'" : "'max'", ")");
    FB_CHECK_TYPE(per_sample_weights->dtype() == weight.dtype(), "[", op, "] per_sample_weights dtype ",
                  dtype_name(per_sample_weights->dtype()), " must match weight dtype ", dtype_name(weight.dtype()));
    FB_CHECK_VALUE(std::ranges::equal(per_sample_weights->sizes(), indices.sizes()), "[", op,
                   "] per_sample_weights shape ", shape_str(per_sample_weights->sizes()), " must match input shape ",
                   shape_str(indices.sizes()));
  }
  FB_CHECK_VALUE(!include_last_offset || offsets.numel() >= 1, "[", op,
                 "] include_last_offset=True needs at least one offset (the end of the last bag)");
}

std::vector<Shape> embedding_bag(const char*, const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                                 int64_t mode, bool include_last_offset) {
  const int64_t bags = include_last_offset ? offsets.numel() - 1 : offsets.numel(), d = weight.sizes()[1];
  return {Shape{bags, d}, Shape{indices.numel()}, Shape{bags}, mode == 2 ? Shape{bags, d} : Shape{0}};
}

void check_embedding_bag_grad(const char* op, const Tensor& grad, const Tensor& indices, const Tensor& offset2bag,
                              const Tensor& bag_size) {
  check_float32_64(op, grad, "grad");
  check_index_dtype(op, indices, "indices");
  FB_CHECK_VALUE(
      grad.dim() == 2 && bag_size.numel() == grad.sizes()[0] && offset2bag.numel() == indices.numel(), "[", op,
      "] inconsistent shapes: grad ", shape_str(grad.sizes()), ", bag_size ", shape_str(bag_size.sizes()),
      ", indices ", shape_str(indices.sizes()), ", offset2bag ", shape_str(offset2bag.sizes()));
}

Shape embedding_bag_backward(const char*, const Tensor& grad, int64_t num_weights) {
  return Shape{num_weights, grad.sizes()[1]};
}

void check_embedding_bag_psw_grad(const char* op, const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                  const Tensor& offset2bag, int64_t mode) {
  FB_CHECK_VALUE(mode == 0, "[", op, "] per_sample_weights are only supported for mode='sum'");
  check_float32_64(op, grad, "grad");  // the kernel computes float32 and float64 only
  check_bag_weight(op, weight);
  FB_CHECK_VALUE(grad.dim() == 2 && grad.sizes()[1] == weight.sizes()[1] && offset2bag.numel() == indices.numel(),
                 "[", op, "] inconsistent shapes: grad ", shape_str(grad.sizes()), ", weight ",
                 shape_str(weight.sizes()));
}

// ---- _linear_backward ----

void check_linear_backward(const char* op, const Tensor& grad_output, const Tensor& input, const Tensor& weight) {
  detail::check_linear_backward(grad_output, input, weight);
  const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1], n = input.sizes()[0];
  FB_CHECK_VALUE(n <= INT_MAX && in_f <= INT_MAX && out_f <= INT_MAX, "[", op,
                 "] matrix dims above 2^31 - 1 are not supported, got input shape ", shape_str(input.sizes()),
                 " and weight shape ", shape_str(weight.sizes()));
}

OptionalShapes linear_backward(const char*, const Tensor& input, const Tensor& weight, bool input_g, bool weight_g,
                               bool bias_g) {
  OptionalShapes out(3);
  if (input_g) out[0] = Shape{input.sizes()[0], weight.sizes()[1]};
  if (weight_g) out[1] = Shape(weight.sizes().begin(), weight.sizes().end());
  if (bias_g) out[2] = Shape{weight.sizes()[0]};
  return out;
}

}  // namespace flambeau::meta
