// The meta step's rules of the spatial ops (Note [Meta step], flambeau/meta.h): im2col and col2im
// (F.unfold/F.fold), _pad_nd and its backward, and the 2-D nearest and bilinear resizing and their
// backwards. Their CPU kernels (src/cpu/conv/conv.cpp, src/cpu/pool/pool_pad.cpp,
// src/cpu/pool/resample.cpp) are out kernels that assume these checks passed. The messages, and the order
// in which a call with several bad arguments meets them, are the ones those kernels raised before they
// became structured; a dtype their loops do not cover (visit_dtype's TypeError) is refused here too, after
// the shape errors and only when there is something to compute, as the kernels did, so that every device
// (the simulated one enqueues the CPU kernel) raises it at the call.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "flambeau/conv_utils.h"
#include "flambeau/meta.h"
#include "flambeau/type_dispatch.h"
#include "meta/pad_mode.h"

namespace flambeau::meta {

namespace {

bool has_zero(IntArrayRef sizes) {
  return std::ranges::any_of(sizes, [](int64_t s) { return s == 0; });
}

/// visit_dtype's TypeError ("[op] dtype float16 is not supported yet") for a dtype the CPU loops lack.
void check_loop_dtype(const char* op, ScalarType t) {
  visit_dtype(t, op, [](auto) {});
}

/// pad's loops copy elements: every dtype of visit_dtype and float16/bfloat16 (as PyTorch's).
void check_pad_dtype(ScalarType t) {
  visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(t, "pad", [](auto) {});
}

}  // namespace

// ---- im2col / col2im ----

void check_blocks_input(const char* op, const Tensor& self, int64_t batched_dim) {
  if (self.dim() != batched_dim - 1 && self.dim() != batched_dim) {
    const std::string msg =
        detail::cat_str("[", op, "] expected a ", batched_dim - 1, "-D (unbatched) or ", batched_dim,
                        "-D (batched) input, got input of size ", conv::bracket_shape(self.sizes()));
    // PyTorch's im2col reads dims 1 to 3 before it checks the rank: fewer dims are its IndexError (a dim
    // out of range); more, and col2im's wrong ranks, its RuntimeError.
    if (batched_dim == 4 && self.dim() < 3) throw IndexError(msg);
    throw ValueError(msg);
  }
  FB_CHECK_TYPE(is_floating(self.dtype()), "[", op,
                "] expected a float16, bfloat16, float32 or float64 input, got ", dtype_name(self.dtype()));
}

Shape im2col(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation,
             IntArrayRef padding, IntArrayRef stride) {
  const conv::BlockArgs a = conv::block_args(op, kernel_size, dilation, padding, stride);
  const bool batched = self.dim() == 4;
  const int64_t N = batched ? self.sizes()[0] : 1, C = self.sizes()[batched ? 1 : 0];
  const int64_t H = self.sizes()[self.dim() - 2], W = self.sizes()[self.dim() - 1];
  const auto [Hs, Ws] = conv::block_counts(op, a, H, W);
  int64_t rows = 0, L = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(C, a.kk, &rows) && !__builtin_mul_overflow(Hs, Ws, &L), "[", op,
                 "] the output size overflows");
  Shape out = batched ? Shape{N, rows, L} : Shape{rows, L};
  shape_nbytes(out, self.dtype(), op);
  return out;
}

Shape col2im(const char* op, const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size,
             IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  const std::array<int64_t, 2> osz = conv::expand_pair(output_size, op, "output_size");
  FB_CHECK_VALUE(osz[0] > 0 && osz[1] > 0, "[", op, "] output_size must be positive, got ",
                 conv::list_str(osz));
  const conv::BlockArgs a = conv::block_args(op, kernel_size, dilation, padding, stride);
  const bool batched = self.dim() == 3;
  const int64_t N = batched ? self.sizes()[0] : 1;
  const int64_t rows = self.sizes()[batched ? 1 : 0], L = self.sizes()[batched ? 2 : 1];
  const int64_t kk = a.kk;
  FB_CHECK_VALUE(rows % kk == 0, "[", op, "] expected size of input's dimension ", batched ? 1 : 0,
                 " to be divisible by the product of kernel_size (", a.kh, " * ", a.kw, " = ", kk,
                 "), got input of size ", conv::bracket_shape(self.sizes()));
  const auto [Hs, Ws] = conv::block_counts(op, a, osz[0], osz[1]);
  int64_t blocks = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(Hs, Ws, &blocks), "[", op, "] the number of blocks overflows");
  FB_CHECK_VALUE(blocks == L, "[", op, "] given output_size ", conv::list_str(osz), ", kernel_size (", a.kh,
                 ", ", a.kw, "), dilation (", a.dh, ", ", a.dw, "), padding (", a.ph, ", ", a.pw,
                 "), stride (", a.sh, ", ", a.sw, "), expected the input's last dimension to be ", blocks,
                 " (", Hs, " * ", Ws, " blocks), got input of size ", conv::bracket_shape(self.sizes()));
  const int64_t C = rows / kk;
  Shape out = batched ? Shape{N, C, osz[0], osz[1]} : Shape{C, osz[0], osz[1]};
  shape_nbytes(out, self.dtype(), op);
  return out;
}

// ---- _pad_nd and its backward (F.pad; their messages name pad and pad_backward) ----

namespace {

/// The shape of padding an input of shape `sz` by `pad`, checked as PyTorch's F.pad does.
Shape pad_shape(IntArrayRef sz, IntArrayRef pad, PadMode mode, std::string_view mode_name) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  const int64_t np = static_cast<int64_t>(pad.size());
  FB_CHECK_VALUE(np % 2 == 0, "[pad] padding length must be divisible by 2, got ", np, " values ",
                 shape_str(pad));
  FB_CHECK_VALUE(np <= 2 * nd,
                 "[pad] padding length should be less than or equal to two times the input dimension, ",
                 "but got padding length ", np, " and an input of shape ", shape_str(sz));
  const int64_t k = np / 2;
  if (mode != PadMode::Constant) {
    const bool ok = (k == 1 && (nd == 2 || nd == 3)) || (k == 2 && (nd == 3 || nd == 4)) ||
                    (k == 3 && (nd == 4 || nd == 5));
    if (!ok)
      throw NotImplementedError(
          detail::cat_str("[pad] mode '", mode_name, "' with padding of length ", np,
                          " is not supported for an input of shape ", shape_str(sz),
                          ": non-constant padding pads the last dim of a 2-D or 3-D input (length 2), the "
                          "last 2 dims of a 3-D "
                          "or 4-D input (length 4), or the last 3 dims of a 4-D or 5-D input (length 6)"));
    for (int64_t d = 1; d < nd - k; ++d)  // a zero batch dim is fine, other zero dims are not
      FB_CHECK_VALUE(sz[d] != 0, "[pad] mode '", mode_name,
                     "' needs non-zero dims except the batch dim, got input shape ", shape_str(sz));
  }
  Shape out(sz.begin(), sz.end());
  for (int64_t j = 0; j < k; ++j) {
    const int64_t d = nd - k + j;            // the tensor dim
    const int64_t l = pad[2 * (k - 1 - j)];  // pads list the last dim first
    const int64_t r = pad[2 * (k - 1 - j) + 1];
    const int64_t n = sz[d];
    const __int128 o = static_cast<__int128>(n) + l + r;
    FB_CHECK_VALUE(o >= 0, "[pad] the input size ", n, " plus padding (", l, ", ", r,
                   ") gives a negative output size in dim ", d, " of input shape ", shape_str(sz));
    FB_CHECK_VALUE(o <= INT64_MAX, "[pad] the output size overflows int64 in dim ", d, " of input shape ",
                   shape_str(sz), " with padding (", l, ", ", r, ")");
    if (mode == PadMode::Reflect)
      FB_CHECK_VALUE(l < n && r < n, "[pad] reflect padding must be less than the input size: got padding (",
                     l, ", ", r, ") in dim ", d, " of input shape ", shape_str(sz));
    if (mode == PadMode::Circular) {
      // Negative pads crop first; the positive ones wrap around what is left, at most once.
      const int64_t kept = n - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0);
      FB_CHECK_VALUE(l <= n && r <= n && (o == 0 || (l <= kept && r <= kept)), "[pad] circular padding may ",
                     "wrap around at most once: got padding (", l, ", ", r, ") in dim ", d,
                     " of input shape ", shape_str(sz));
    }
    if (mode == PadMode::Reflect || mode == PadMode::Replicate)
      FB_CHECK_VALUE(n > 0 && o > 0, "[pad] mode '", mode_name, "' gives an empty dim ", d, " (input shape ",
                     shape_str(sz), ", padding (", l, ", ", r, "))");
    out[d] = static_cast<int64_t>(o);
  }
  shape_nbytes(out, ScalarType::Float64, "pad");  // Note [Size overflow]
  return out;
}

}  // namespace

void check_pad_mode(const char*, std::string_view mode, double value) {
  const PadMode m = pad_mode(mode);
  FB_CHECK_VALUE(m == PadMode::Constant || value == 0.0, "[pad] padding mode '", mode,
                 "' doesn't take in value argument");
}

Shape pad_nd(const char*, const Tensor& self, IntArrayRef pad, std::string_view mode) {
  Shape out = pad_shape(self.sizes(), pad, pad_mode(mode), mode);
  if (!pad.empty() && !has_zero(out)) check_pad_dtype(self.dtype());
  return out;
}

void check_pad_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size, IntArrayRef pad,
                    std::string_view mode) {
  const PadMode m = pad_mode(mode);
  shape_nbytes(input_size, grad_output.dtype(), op);
  const Shape padded = pad_shape(input_size, pad, m, mode);
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), padded), "[", op, "] grad_output has shape ",
                 shape_str(grad_output.sizes()), " but padding input shape ", shape_str(input_size), " by ",
                 shape_str(pad), " gives ", shape_str(padded));
  if (m == PadMode::Constant) {  // the kernel crops grad_output: the constant pad by the negated pads
    pad_shape(grad_output.sizes(), negated_pads(pad), PadMode::Constant, mode);
    if (!pad.empty() && !has_zero(input_size)) check_pad_dtype(grad_output.dtype());
    return;
  }
  FB_CHECK_TYPE(is_floating(grad_output.dtype()), "[", op,
                "] needs a float16, bfloat16, float32 or float64 gradient, got dtype ",
                dtype_name(grad_output.dtype()));
}

// ---- upsample_nearest2d, upsample_bilinear2d and their backwards ----

namespace {

/// A (N, C, H, W) input shape resized to output_size (H, W), every size positive.
Shape resize_shape(IntArrayRef sz, IntArrayRef output_size, const char* op) {
  FB_CHECK_VALUE(sz.size() == 4, "[", op, "] expected a 4-D (N, C, H, W) input, got shape ", shape_str(sz));
  FB_CHECK_VALUE(output_size.size() == 2, "[", op, "] output_size must have 2 elements (H, W), got ",
                 shape_str(output_size));
  FB_CHECK_VALUE(sz[2] > 0 && sz[3] > 0 && output_size[0] > 0 && output_size[1] > 0, "[", op,
                 "] input and output sizes should be greater than 0, but got input shape ", shape_str(sz),
                 " and output_size ", shape_str(output_size));
  Shape out{sz[0], sz[1], output_size[0], output_size[1]};
  shape_nbytes(out, ScalarType::Float64, op);  // Note [Size overflow]
  return out;
}

}  // namespace

void check_resample_dtype(const char* op, const Tensor& t) {
  FB_CHECK_TYPE(is_floating(t.dtype()), "[", op,
                "] needs a float16, bfloat16, float32 or float64 tensor, got dtype ", dtype_name(t.dtype()));
}

Shape upsample2d(const char* op, const Tensor& self, IntArrayRef output_size) {
  Shape out = resize_shape(self.sizes(), output_size, op);
  // float16/bfloat16 run the float32 loops (Note [Low-precision kernels]).
  if (out[0] != 0 && out[1] != 0 && dtype_set_of(self.dtype()) != kDtHalf) check_loop_dtype(op, self.dtype());
  return out;
}

void check_upsample2d_grad(const char* op, const Tensor& grad_output, IntArrayRef input_size,
                           IntArrayRef output_size) {
  check_resample_dtype(op, grad_output);
  const Shape expected = resize_shape(input_size, output_size, op);
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), expected), "[", op, "] grad_output has shape ",
                 shape_str(grad_output.sizes()), " but the forward output has shape ", shape_str(expected));
  shape_nbytes(input_size, grad_output.dtype(), op);
}

}  // namespace flambeau::meta
