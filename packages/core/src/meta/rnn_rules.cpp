// The meta step's rules of the recurrent layer primitives _rnn_layer and _rnn_layer_backward (Note [Meta
// step], flambeau/meta.h; Note [Recurrent layer kernel] in src/cpu/rnn/rnn.cpp): the checks their CPU kernel
// made before they became structured ops (same order, same messages), and the shapes of their results.
#include <cstdint>

#include "flambeau/meta.h"

namespace flambeau::meta {

namespace {
// _rnn_layer's modes: 0 RNN_TANH, 1 RNN_RELU, 2 LSTM, 3 GRU.
constexpr int64_t kLstm = 2, kGru = 3, kRelu = 1;

int64_t gate_count(int64_t mode) { return mode == kLstm ? 4 : mode == kGru ? 3 : 1; }

const char* mode_name(int64_t mode) {
  return mode == kLstm ? "LSTM" : mode == kGru ? "GRU" : mode == kRelu ? "RNN_RELU" : "RNN_TANH";
}

/// The saved values per row and hidden unit the backward reads (Note [Recurrent layer kernel]).
int64_t ws_width(int64_t mode) { return mode == kLstm ? 6 : mode == kGru ? 4 : 0; }

struct LayerDims {
  int64_t B, H, N;
};

/// The checks forward and backward share; returns the batch B, the hidden size H and the rows N.
LayerDims check_layer(const char* op, const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh,
                      const Tensor& hx, const Tensor& cx, int64_t mode, IntArrayRef batch_sizes) {
  FB_CHECK_VALUE(mode >= 0 && mode <= 3, "[", op,
                 "] mode must be 0 (RNN_TANH), 1 (RNN_RELU), 2 (LSTM) or 3 (GRU), got ", mode);
  const ScalarType dt = igates.dtype();
  FB_CHECK_TYPE(dt == ScalarType::Float32 || dt == ScalarType::Float64, "[", op,
                "] expected a float32 or float64 input, got dtype ", dtype_name(dt));
  for (const Tensor* t : {&w_hh, &b_hh, &hx, &cx}) {
    if (!t->defined() || (t == &cx && mode != kLstm) || (t == &b_hh && t->numel() == 0)) continue;
    FB_CHECK_TYPE(t->dtype() == dt, "[", op, "] expected all tensors to have dtype ", dtype_name(dt), ", got ",
                  dtype_name(t->dtype()));
  }
  FB_CHECK_VALUE(w_hh.dim() == 2, "[", op, "] w_hh must be 2-D, got shape ", shape_str(w_hh.sizes()));
  const int64_t H = w_hh.sizes()[1], G = gate_count(mode);
  FB_CHECK_VALUE(w_hh.sizes()[0] == G * H, "[", op, "] ", mode_name(mode), " expects w_hh of shape (", G * H, ", ",
                 H, "), got ", shape_str(w_hh.sizes()));
  FB_CHECK_VALUE(b_hh.numel() == 0 || (b_hh.dim() == 1 && b_hh.sizes()[0] == G * H), "[", op,
                 "] expected b_hh of shape (", G * H, ") or empty, got ", shape_str(b_hh.sizes()));
  FB_CHECK_VALUE(igates.dim() == 2 && igates.sizes()[1] == G * H, "[", op, "] expected igates of shape (N, ",
                 G * H, "), got ", shape_str(igates.sizes()));
  FB_CHECK_VALUE(hx.dim() == 2 && hx.sizes()[1] == H, "[", op, "] expected hx of shape (B, ", H, "), got ",
                 shape_str(hx.sizes()));
  const int64_t B = hx.sizes()[0];
  if (mode == kLstm)
    FB_CHECK_VALUE(cx.dim() == 2 && cx.sizes()[0] == B && cx.sizes()[1] == H, "[", op, "] expected cx of shape (",
                   B, ", ", H, "), got ", shape_str(cx.sizes()));
  const auto T = static_cast<int64_t>(batch_sizes.size());
  int64_t n = 0;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t b = batch_sizes[static_cast<size_t>(t)];
    const int64_t prev = t == 0 ? B : batch_sizes[static_cast<size_t>(t - 1)];
    FB_CHECK_VALUE(b >= 1 && b <= prev, "[", op,
                   "] batch_sizes must be positive, non-increasing and at most the batch size ", B, ", got ", b,
                   " at step ", t);
    n += b;  // at most T * B: no overflow for sizes that fit in memory
  }
  FB_CHECK_VALUE(T == 0 || batch_sizes[0] == B, "[", op, "] batch_sizes[0] = ", T ? batch_sizes[0] : 0,
                 " does not match the batch size of hx, ", B);
  FB_CHECK_VALUE(igates.sizes()[0] == n, "[", op, "] igates has ", igates.sizes()[0], " rows but batch_sizes sum to ",
                 n);
  FB_CHECK_VALUE(G * H <= INT32_MAX && n <= INT32_MAX && H <= INT32_MAX, "[", op, "] sizes too large for BLAS");
  return {B, H, n};
}
}  // namespace

void check_rnn_layer(const char* op, const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh, const Tensor& hx,
                     const Tensor& cx, int64_t mode, IntArrayRef batch_sizes) {
  check_layer(op, igates, w_hh, b_hh, hx, cx, mode, batch_sizes);
}

void check_rnn_layer_backward(const char* op, const Tensor& grad_output, const Tensor& grad_hy,
                              const Tensor& grad_cy, const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh,
                              const Tensor& hx, const Tensor& cx, const Tensor& output, const Tensor& workspace,
                              int64_t mode, IntArrayRef batch_sizes) {
  const LayerDims d = check_layer(op, igates, w_hh, b_hh, hx, cx, mode, batch_sizes);
  const int64_t N = d.N, H = d.H, B = d.B;
  // An undefined or empty gradient is zero.
  auto check_shape = [&](const Tensor& t, const char* what, int64_t r, int64_t c) {
    if (!t.defined() || t.numel() == 0) return;
    FB_CHECK_VALUE(t.dim() == 2 && t.sizes()[0] == r && t.sizes()[1] == c, "[", op, "] expected ", what,
                   " of shape (", r, ", ", c, "), got ", shape_str(t.sizes()));
    FB_CHECK_TYPE(t.dtype() == igates.dtype(), "[", op, "] expected ", what, " of dtype ",
                  dtype_name(igates.dtype()), ", got ", dtype_name(t.dtype()));
  };
  check_shape(grad_output, "grad_output", N, H);
  check_shape(grad_hy, "grad_hy", B, H);
  if (mode == kLstm) check_shape(grad_cy, "grad_cy", B, H);
  check_shape(output, "output", N, H);
  FB_CHECK_VALUE(output.defined() && output.numel() == N * H, "[", op, "] expected output of shape (", N, ", ", H,
                 ")");
  check_shape(workspace, "workspace", N, ws_width(mode) * H);
  FB_CHECK_VALUE(
      ws_width(mode) == 0 || N * H == 0 || (workspace.defined() && workspace.numel() == N * ws_width(mode) * H),
      "[", op, "] expected a workspace of shape (", N, ", ", ws_width(mode) * H, ")");
}

std::vector<Shape> rnn_layer(const char*, const Tensor& igates, const Tensor& w_hh, const Tensor& hx, int64_t mode) {
  const int64_t N = igates.sizes()[0], H = w_hh.sizes()[1], B = hx.sizes()[0];
  return {Shape{N, H}, Shape{B, H}, Shape{mode == kLstm ? B : 0, H}, Shape{N, ws_width(mode) * H}};
}

std::vector<Shape> rnn_layer_backward(const char*, const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh,
                                      const Tensor& hx, int64_t mode) {
  const int64_t N = igates.sizes()[0], H = w_hh.sizes()[1], B = hx.sizes()[0], GH = gate_count(mode) * H;
  return {Shape{N, GH}, Shape{GH, H}, Shape{b_hh.numel() ? GH : 0}, Shape{B, H}, Shape{mode == kLstm ? B : 0, H}};
}

}  // namespace flambeau::meta
