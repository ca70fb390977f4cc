// CPU kernels of the recurrent layers: _rnn_layer runs one layer and direction
// of an RNN/LSTM/GRU over a whole (packed) sequence, _rnn_layer_backward is its
// backward through time.
//
// Note [Recurrent layer kernel]
// The input projection x @ w_ih^T + b_ih of every step is one GEMM done by the
// caller (flambeau_nn's rnn module): `igates`, rows laid out as a
// PackedSequence (step t holds batch_sizes[t] rows, sequences sorted by
// decreasing length, so step t's rows are the first batch_sizes[t] of the
// batch). The loop over time lives here: per step one GEMM h @ w_hh^T into a
// scratch buffer and one fused pass (rnn_kernels.h) for the gates and the
// state update, with no per-step allocation. A row past batch_sizes[t] keeps
// its state, so a finished sequence's hy is its last state (forward), and a
// sequence joining late in the reverse direction starts from hx.
// Backward walks the steps the other way with the state gradients dh, dc
// (initialised with grad_hy, grad_cy) and writes the gate gradients of every
// step; grad_w_hh and grad_b_hh are then one GEMM and one column sum over all
// steps, with the h_prev rows gathered into one matrix.
// Threads: the big GEMMs are split over flambeau's threads by gemm.h (Note
// [GEMM threads]); small step GEMMs run on one thread each (Note [Serial step
// GEMMs]; float32 with AVX-512: Note [Packed step GEMM]) with the batch rows
// split across flambeau's threads (Note [Batch rows across threads]). Otherwise the cell
// updates run on the calling thread. A step's cell update costs O(B * G * H) against the GEMM's
// O(B * G * H * H), and an OpenMP region per step between two OpenBLAS calls
// made the two thread pools fight over the cores (measured on 2 cores: the
// 2-layer LSTM of 35 steps took seconds instead of tens of milliseconds).
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "cpu/linalg/sgemm.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "cpu/elementwise/vec_table.h"

#define FB_CPU_CAPABILITY base
#define FB_FILL_RNN_KERNELS fill_rnn_kernels_base
#include "rnn_kernels.inc"

namespace flambeau::cpu {
FB_DEFINE_DISPATCH(rnn_kernels_stub);
FB_REGISTER_DISPATCH(rnn_kernels_stub, base, (&table_of<RnnKernelTable, fill_rnn_kernels_base>));
FB_REGISTER_NO_DISPATCH(rnn_kernels_stub, avx512);
}  // namespace flambeau::cpu

namespace flambeau {
namespace {

// Note [Serial step GEMMs]: a step's GEMM (B x G*H x H) is small, and OpenBLAS
// forks and joins its threads on every call: on a loaded machine a worker not
// scheduled at once stalls the step for a whole time slice (measured on 2
// busy cores: a 35-step 2-layer LSTM took seconds with 2 BLAS threads, tens of
// milliseconds with 1). Below this many multiply-adds per step the time loop
// runs OpenBLAS on one thread; the big GEMMs around the loop keep them all.
constexpr int64_t kSerialStepMacs = int64_t{1} << 24;

// Note [Batch rows across threads]: the rows of a batch are independent
// recurrences (row r of step t depends only on row r of step t - 1), so when
// the step GEMMs run on one OpenBLAS thread, the rows are split across
// flambeau's threads, each running the whole time loop (its own GEMMs on its
// rows and their cell updates) without a barrier between steps. At least
// this many rows per thread.
constexpr int64_t kMinRowsPerThread = 4;

/// Runs f(r0, r1) over the batch rows [0, B): split across threads when the
/// step GEMMs are serial (SerialBlas active) and there are enough rows.
template <class F>
void over_rows(int64_t B, bool serial_blas, const F& f) {
  if (serial_blas && get_num_threads() > 1 && B >= 2 * kMinRowsPerThread && !in_parallel_region())
    parallel_for(0, B, kMinRowsPerThread, f);
  else
    f(0, B);
}

class SerialBlas {
 public:
  explicit SerialBlas(int64_t step_macs) : active_(step_macs < kSerialStepMacs && get_num_threads() > 1) {
    if (active_) scipy_openblas_set_num_threads(1);
  }
  ~SerialBlas() {
    if (active_) scipy_openblas_set_num_threads(get_num_threads());
  }
  bool active() const { return active_; }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  bool active_;
};

/// A per-thread working buffer of at least n values, kept between calls: no
/// allocation (and no fresh pages to fault in) per call in steady state.
template <class T, int Slot>
T* scratch(int64_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

enum Mode : int64_t { kTanh = 0, kRelu = 1, kLstm = 2, kGru = 3 };

// Note [Packed step GEMM]: with AVX-512 the float32 step GEMMs run against the
// hidden-to-hidden weight packed once per layer call (own_sgemm_pack in
// sgemm.h, the kernel of Note [Own sgemm]): OpenBLAS
// would repack all of it on every step, for only the batch's few rows.
bool use_packed_step_gemm() { return cpu::own_sgemm_available(); }

const cpu::RnnKernelTable& rnn_kernels() { return cpu::rnn_kernels_stub.get()(); }

template <class T>
const cpu::RnnKernels<T>& kernels_for() {
  if constexpr (std::is_same_v<T, float>)
    return rnn_kernels().f32;
  else
    return rnn_kernels().f64;
}

int64_t gate_count(int64_t mode) { return mode == kLstm ? 4 : mode == kGru ? 3 : 1; }

const char* mode_name(int64_t mode) {
  return mode == kLstm ? "LSTM" : mode == kGru ? "GRU" : mode == kRelu ? "RNN_RELU" : "RNN_TANH";
}

int64_t ws_width(int64_t mode) { return mode == kLstm ? 6 : mode == kGru ? 4 : 0; }

// Checks the arguments shared by forward and backward; returns (T steps, B batch, H hidden).
struct Dims {
  int64_t T, B, H, G, N;
  std::vector<int64_t> offsets;  // first row of each step
};

Dims check_layer(const char* op, const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh,
                 const Tensor& hx, const Tensor& cx, int64_t mode, IntArrayRef batch_sizes) {
  FB_CHECK_VALUE(mode >= 0 && mode <= 3, "[", op,
                 "] mode must be 0 (RNN_TANH), 1 (RNN_RELU), 2 (LSTM) or 3 (GRU), got ", mode);
  const ScalarType dt = igates.dtype();
  FB_CHECK_TYPE(dt == ScalarType::Float32 || dt == ScalarType::Float64, "[", op,
                "] expected a float32 or float64 input, got dtype ", dtype_name(dt));
  for (const Tensor* t : {&w_hh, &b_hh, &hx, &cx}) {
    if (!t->defined() || (t == &cx && mode != kLstm) || (t == &b_hh && t->numel() == 0)) continue;
    FB_CHECK_TYPE(t->dtype() == dt, "[", op, "] expected all tensors to have dtype ", dtype_name(dt),
                  ", got ", dtype_name(t->dtype()));
  }
  FB_CHECK_VALUE(w_hh.dim() == 2, "[", op, "] w_hh must be 2-D, got shape ", shape_str(w_hh.sizes()));
  Dims d{};
  d.H = w_hh.sizes()[1];
  d.G = gate_count(mode);
  FB_CHECK_VALUE(w_hh.sizes()[0] == d.G * d.H, "[", op, "] ", mode_name(mode), " expects w_hh of shape (",
                 d.G * d.H, ", ", d.H, "), got ", shape_str(w_hh.sizes()));
  FB_CHECK_VALUE(b_hh.numel() == 0 || (b_hh.dim() == 1 && b_hh.sizes()[0] == d.G * d.H), "[", op,
                 "] expected b_hh of shape (", d.G * d.H, ") or empty, got ", shape_str(b_hh.sizes()));
  FB_CHECK_VALUE(igates.dim() == 2 && igates.sizes()[1] == d.G * d.H, "[", op,
                 "] expected igates of shape (N, ", d.G * d.H, "), got ", shape_str(igates.sizes()));
  FB_CHECK_VALUE(hx.dim() == 2 && hx.sizes()[1] == d.H, "[", op, "] expected hx of shape (B, ", d.H,
                 "), got ", shape_str(hx.sizes()));
  d.B = hx.sizes()[0];
  if (mode == kLstm)
    FB_CHECK_VALUE(cx.dim() == 2 && cx.sizes()[0] == d.B && cx.sizes()[1] == d.H, "[", op,
                   "] expected cx of shape (", d.B, ", ", d.H, "), got ", shape_str(cx.sizes()));
  d.T = static_cast<int64_t>(batch_sizes.size());
  d.offsets.resize(static_cast<size_t>(d.T) + 1);
  int64_t n = 0;
  for (int64_t t = 0; t < d.T; ++t) {
    const int64_t b = batch_sizes[static_cast<size_t>(t)];
    const int64_t prev = t == 0 ? d.B : batch_sizes[static_cast<size_t>(t - 1)];
    FB_CHECK_VALUE(b >= 1 && b <= prev, "[", op,
                   "] batch_sizes must be positive, non-increasing and at most the batch size ", d.B,
                   ", got ", b, " at step ", t);
    d.offsets[static_cast<size_t>(t)] = n;
    n += b;
  }
  d.offsets[static_cast<size_t>(d.T)] = n;
  FB_CHECK_VALUE(d.T == 0 || batch_sizes[0] == d.B, "[", op, "] batch_sizes[0] = ", d.T ? batch_sizes[0] : 0,
                 " does not match the batch size of hx, ", d.B);
  FB_CHECK_VALUE(igates.sizes()[0] == n, "[", op, "] igates has ", igates.sizes()[0],
                 " rows but batch_sizes sum to ", n);
  d.N = n;
  FB_CHECK_VALUE(d.G * d.H <= INT32_MAX && d.N <= INT32_MAX && d.H <= INT32_MAX, "[", op,
                 "] sizes too large for BLAS");
  return d;
}

Tensor dense(const Tensor& t) { return t.defined() && !t.is_contiguous() ? contiguous(t) : t; }

std::tuple<Tensor, Tensor, Tensor, Tensor> rnn_layer_cpu(const Tensor& igates_, const Tensor& w_hh_,
                                                         const Tensor& b_hh_, const Tensor& hx_,
                                                         const Tensor& cx_, int64_t mode,
                                                         IntArrayRef batch_sizes, bool reverse) {
  const char* op = "_rnn_layer";
  const Dims d = check_layer(op, igates_, w_hh_, b_hh_, hx_, cx_, mode, batch_sizes);
  const Tensor igates = dense(igates_), w_hh = dense(w_hh_), b_hh = dense(b_hh_), hx = dense(hx_);
  const Tensor cx = mode == kLstm ? dense(cx_) : Tensor();
  const ScalarType dt = igates.dtype();
  const Device dev = igates.device();
  Tensor output = op::empty(Shape{d.N, d.H}, dt, dev);
  Tensor hy = op::empty(Shape{d.B, d.H}, dt, dev);
  Tensor cy = op::empty(Shape{mode == kLstm ? d.B : 0, d.H}, dt, dev);
  Tensor ws = op::empty(Shape{d.N, ws_width(mode) * d.H}, dt, dev);
  visit_dtype(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = kernels_for<T>();
      const int64_t H = d.H, GH = d.G * d.H;
      T* h = hy.data<T>();
      std::memcpy(h, hx.data<T>(), sizeof(T) * static_cast<size_t>(d.B * H));
      T* c = nullptr;
      if (mode == kLstm) {
        c = cy.data<T>();
        std::memcpy(c, cx.data<T>(), sizeof(T) * static_cast<size_t>(d.B * H));
      }
      std::vector<T> zeros_b;
      const T* b = nullptr;
      if (b_hh.numel() != 0) {
        b = b_hh.data<T>();
      } else {
        zeros_b.assign(static_cast<size_t>(GH), T(0));
        b = zeros_b.data();
      }
      // h @ w_hh^T of one step, rows as h (each thread writes only its own rows).
      T* hg = scratch<T, 0>(d.B * GH);
      const T* ig = igates.data<T>();
      const T* w = w_hh.data<T>();
      T* out = output.data<T>();
      T* wsp = ws.data<T>();
      const int64_t wsw = ws_width(mode) * H;
      const float* packed = nullptr;  // Note [Packed step GEMM]
      if constexpr (std::is_same_v<T, float>) {
        if (use_packed_step_gemm() && H > 0 && d.T > 1) {
          float* p = scratch<float, 4>(cpu::own_sgemm_packed_size(H, GH));
          cpu::own_sgemm_pack(true, w, H, static_cast<int>(H), static_cast<int>(GH), p);  // B = w_hh^T
          packed = p;
        }
      }
      const SerialBlas serial(d.B * GH * H);
      over_rows(d.B, serial.active(), [&](int64_t r0, int64_t r1) {
        for (int64_t s = 0; s < d.T; ++s) {
          const int64_t t = reverse ? d.T - 1 - s : s;
          const int64_t bs = batch_sizes[static_cast<size_t>(t)], off = d.offsets[static_cast<size_t>(t)];
          const int64_t e = std::min(r1, bs);  // this step's rows of [r0, r1)
          if (e <= r0) continue;               // (reverse: a short sequence joins later)
          if (packed) {
            if constexpr (std::is_same_v<T, float>)
              cpu::own_sgemm_packed(static_cast<int>(e - r0), static_cast<int>(GH), static_cast<int>(H),
                                    h + r0 * H, H, packed, hg + r0 * GH, GH, false);
          } else if (H > 0)
            cpu::gemm(false, true, static_cast<int>(e - r0), static_cast<int>(GH), static_cast<int>(H),
                      h + r0 * H, static_cast<int>(H), w, static_cast<int>(H), hg + r0 * GH,
                      static_cast<int>(GH));
          else
            std::fill(hg + r0 * GH, hg + e * GH, T(0));
          const T* igt = ig + off * GH;
          T* ot = out + off * H;
          T* wt = wsp + off * wsw;
          if (mode == kLstm)
            k.lstm_fwd(r0, e, H, igt, hg, b, h, c, ot, wt);
          else if (mode == kGru)
            k.gru_fwd(r0, e, H, igt, hg, b, h, ot, wt);
          else
            k.rnn_fwd(r0, e, H, igt, hg, b, h, ot, mode == kRelu);
        }
      });
    }
  });
  return {output, hy, cy, ws};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> rnn_layer_backward_cpu(
    const Tensor& grad_output_, const Tensor& grad_hy_, const Tensor& grad_cy_, const Tensor& igates_,
    const Tensor& w_hh_, const Tensor& b_hh_, const Tensor& hx_, const Tensor& cx_, const Tensor& output_,
    const Tensor& workspace_, int64_t mode, IntArrayRef batch_sizes, bool reverse) {
  const char* op = "_rnn_layer_backward";
  const Dims d = check_layer(op, igates_, w_hh_, b_hh_, hx_, cx_, mode, batch_sizes);
  const int64_t H = d.H, G = d.G, GH = G * H, N = d.N, B = d.B;
  auto check_shape = [&](const Tensor& t, const char* what, int64_t r, int64_t c) {
    if (!t.defined() || t.numel() == 0) return;
    FB_CHECK_VALUE(t.dim() == 2 && t.sizes()[0] == r && t.sizes()[1] == c, "[", op, "] expected ", what,
                   " of shape (", r, ", ", c, "), got ", shape_str(t.sizes()));
    FB_CHECK_TYPE(t.dtype() == igates_.dtype(), "[", op, "] expected ", what, " of dtype ",
                  dtype_name(igates_.dtype()), ", got ", dtype_name(t.dtype()));
  };
  check_shape(grad_output_, "grad_output", N, H);
  check_shape(grad_hy_, "grad_hy", B, H);
  if (mode == kLstm) check_shape(grad_cy_, "grad_cy", B, H);
  check_shape(output_, "output", N, H);
  FB_CHECK_VALUE(output_.defined() && output_.numel() == N * H, "[", op, "] expected output of shape (", N,
                 ", ", H, ")");
  check_shape(workspace_, "workspace", N, ws_width(mode) * H);
  FB_CHECK_VALUE(ws_width(mode) == 0 || N * H == 0 ||
                     (workspace_.defined() && workspace_.numel() == N * ws_width(mode) * H),
                 "[", op, "] expected a workspace of shape (", N, ", ", ws_width(mode) * H, ")");
  const Tensor igates = dense(igates_), w_hh = dense(w_hh_), hx = dense(hx_);
  const Tensor cx = mode == kLstm ? dense(cx_) : Tensor();
  const Tensor output = dense(output_), ws = dense(workspace_);
  const Tensor go = grad_output_.defined() && grad_output_.numel() ? dense(grad_output_) : Tensor();
  const Tensor ghy = grad_hy_.defined() && grad_hy_.numel() ? dense(grad_hy_) : Tensor();
  const Tensor gcy = mode == kLstm && grad_cy_.defined() && grad_cy_.numel() ? dense(grad_cy_) : Tensor();
  const ScalarType dt = igates.dtype();
  const Device dev = igates.device();
  Tensor grad_ig = op::empty(Shape{N, GH}, dt, dev);
  Tensor grad_w = zeros(Shape{GH, H}, dt, dev);
  Tensor grad_b = zeros(Shape{b_hh_.numel() ? GH : 0}, dt, dev);
  Tensor grad_hx = zeros(Shape{B, H}, dt, dev);
  Tensor grad_cx = zeros(Shape{mode == kLstm ? B : 0, H}, dt, dev);
  visit_dtype(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = kernels_for<T>();
      T* dh = grad_hx.data<T>();
      if (ghy.defined()) std::memcpy(dh, ghy.data<T>(), sizeof(T) * static_cast<size_t>(B * H));
      T* dc = nullptr;
      if (mode == kLstm) {
        dc = grad_cx.data<T>();
        if (gcy.defined()) std::memcpy(dc, gcy.data<T>(), sizeof(T) * static_cast<size_t>(B * H));
      }
      const T* y = output.data<T>();
      const T* wsp = ws.numel() ? ws.data<T>() : nullptr;
      const int64_t wsw = ws_width(mode) * H;
      const T* h0 = hx.data<T>();
      const T* c0 = mode == kLstm ? cx.data<T>() : nullptr;
      const T* gop = go.defined() ? go.data<T>() : nullptr;
      T* dig = grad_ig.data<T>();
      // GRU: the gradient of h @ w_hh^T + b_hh differs from that of igates (the n gate).
      // (Per-thread buffers kept between calls: a std::vector of this size per
      // call was mapped and page-faulted afresh every time.)
      T* dhg = mode == kGru ? scratch<T, 1>(N * GH) : dig;
      // h_prev (and c_prev) of every row, gathered: for grad_w_hh, GRU and LSTM backward.
      T* hprev = scratch<T, 2>(N * H);
      T* cprev = mode == kLstm ? scratch<T, 3>(N * H) : nullptr;
      for (int64_t t = 0; t < d.T; ++t) {
        const int64_t bs = batch_sizes[static_cast<size_t>(t)], off = d.offsets[static_cast<size_t>(t)];
        // The step that ran just before t, and how many of t's rows it had.
        const int64_t pt = reverse ? t + 1 : t - 1;
        const int64_t prev_rows =
            (pt < 0 || pt >= d.T) ? 0 : std::min(bs, batch_sizes[static_cast<size_t>(pt)]);
        const int64_t poff = prev_rows ? d.offsets[static_cast<size_t>(pt)] : 0;
        for (int64_t r = 0; r < bs; ++r) {
          const bool from_prev = r < prev_rows;
          std::memcpy(hprev + (off + r) * H, from_prev ? y + (poff + r) * H : h0 + r * H,
                      sizeof(T) * static_cast<size_t>(H));
          if (mode == kLstm)
            std::memcpy(cprev + (off + r) * H, from_prev ? wsp + (poff + r) * wsw + 4 * H : c0 + r * H,
                        sizeof(T) * static_cast<size_t>(H));
        }
      }
      const T* w = w_hh.data<T>();
      const float* packed = nullptr;  // Note [Packed step GEMM]: B = w_hh
      if constexpr (std::is_same_v<T, float>) {
        if (use_packed_step_gemm() && H > 0 && d.T > 1) {
          float* p = scratch<float, 4>(cpu::own_sgemm_packed_size(GH, H));
          cpu::own_sgemm_pack(false, w, H, static_cast<int>(GH), static_cast<int>(H), p);
          packed = p;
        }
      }
      std::optional<SerialBlas> serial(std::in_place, B * GH * H);
      // Note [Batch rows across threads]: each thread walks back over its rows.
      over_rows(B, serial->active(), [&](int64_t r0, int64_t r1) {
        for (int64_t s = 0; s < d.T; ++s) {
          const int64_t t = reverse ? s : d.T - 1 - s;
          const int64_t bs = batch_sizes[static_cast<size_t>(t)], off = d.offsets[static_cast<size_t>(t)];
          const int64_t e = std::min(r1, bs);
          if (e <= r0) continue;
          const T* got = gop ? gop + off * H : nullptr;
          T* digt = dig + off * GH;
          T* dhgt = dhg + off * GH;
          if (mode == kLstm)
            k.lstm_bwd(r0, e, H, wsp + off * wsw, cprev + off * H, got, dh, dc, digt);
          else if (mode == kGru)
            k.gru_bwd(r0, e, H, wsp + off * wsw, hprev + off * H, got, dh, digt, dhgt);
          else
            k.rnn_bwd(r0, e, H, y + off * H, got, dh, digt, mode == kRelu);
          // dh_prev = dhg @ w_hh (+ the direct part GRU left in dh).
          if (packed) {
            if constexpr (std::is_same_v<T, float>)
              cpu::own_sgemm_packed(static_cast<int>(e - r0), static_cast<int>(H), static_cast<int>(GH),
                                    dhgt + r0 * GH, GH, packed, dh + r0 * H, H, mode == kGru);
          } else if (H > 0)
            cpu::gemm(false, false, static_cast<int>(e - r0), static_cast<int>(H), static_cast<int>(GH),
                      dhgt + r0 * GH, static_cast<int>(GH), w, static_cast<int>(H), dh + r0 * H,
                      static_cast<int>(H), T(1), mode == kGru ? T(1) : T(0));
        }
      });
      serial.reset();  // the GEMM over all steps takes every thread
      if (N > 0 && H > 0)
        cpu::gemm(true, false, static_cast<int>(GH), static_cast<int>(H), static_cast<int>(N), dhg,
                  static_cast<int>(GH), hprev, static_cast<int>(H), grad_w.data<T>(), static_cast<int>(H));
      if (grad_b.numel()) {
        T* gb = grad_b.data<T>();
        parallel_for(0, GH, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, N)),
                     [&](int64_t j0, int64_t j1) {
                       for (int64_t n = 0; n < N; ++n) {
                         const T* row = dhg + n * GH;
                         for (int64_t j = j0; j < j1; ++j) gb[j] += row[j];
                       }
                     });
      }
    }
  });
  return {grad_ig, grad_w, grad_b, grad_hx, grad_cx};
}

FB_REGISTER_KERNEL(op::_rnn_layer, CPU, rnn_layer_cpu);
FB_REGISTER_KERNEL(op::_rnn_layer_backward, CPU, rnn_layer_backward_cpu);

}  // namespace
}  // namespace flambeau
