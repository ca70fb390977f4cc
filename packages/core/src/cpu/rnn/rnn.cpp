// CPU kernels of the recurrent layers: _rnn_layer runs one layer and direction
// of an RNN/LSTM/GRU over a whole (packed) sequence, _rnn_layer_backward is its
// backward through time. Both are structured ops (Note [Structured kernels]):
// out kernels writing the outputs their meta step checked the arguments for and
// allocated (src/meta/rnn_rules.cpp).
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
// GEMMs]; float32 on AVX2 or AVX-512: Note [Packed step GEMM]) with the batch rows
// split across flambeau's threads (Note [Batch rows across threads]). Otherwise the cell
// updates run on the calling thread. A step's cell update costs O(B * G * H) against the GEMM's
// O(B * G * H * H), and an OpenMP region per step between two OpenBLAS calls
// made the two thread pools fight over the cores (measured on 2 cores: the
// 2-layer LSTM of 35 steps took seconds instead of tens of milliseconds).
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "cpu/linalg/sgemm.h"
#include "cpu/write_out.h"
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
  explicit SerialBlas(int64_t step_macs)
      : active_(step_macs < kSerialStepMacs && get_num_threads() > 1), scope_(active_) {}
  bool active() const { return active_; }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  bool active_;
  // Sets OpenBLAS's count to 1 and back to what it was (1 since a fork: Note [OpenBLAS count across fork]);
  // inactive, OpenBLAS threads the step GEMMs.
  cpu::SerialBlasScope scope_;
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

// Note [Packed step GEMM]: on AVX2 and AVX-512 CPUs the float32 step GEMMs run
// against the hidden-to-hidden weight packed once per layer call
// (own_sgemm_pack in sgemm.h; the AVX-512 kernel is Note [Own sgemm]'s, the
// AVX2 one a 6 x 16 kernel on the same layout): OpenBLAS would repack all of it
// on every step, for only the batch's few rows.
bool use_packed_step_gemm() { return cpu::packed_sgemm_available(); }

const cpu::RnnKernelTable& rnn_kernels() { return cpu::rnn_kernels_stub.get()(); }

template <class T>
const cpu::RnnKernels<T>& kernels_for() {
  if constexpr (std::is_same_v<T, float>)
    return rnn_kernels().f32;
  else
    return rnn_kernels().f64;
}

int64_t gate_count(int64_t mode) { return mode == kLstm ? 4 : mode == kGru ? 3 : 1; }

int64_t ws_width(int64_t mode) { return mode == kLstm ? 6 : mode == kGru ? 4 : 0; }

// The sizes of a layer call: T steps, B batch, H hidden, G gates, N rows, from arguments the meta step
// checked (meta::check_rnn_layer in src/meta/rnn_rules.cpp).
struct Dims {
  int64_t T, B, H, G, N;
  std::vector<int64_t> offsets;  // first row of each step
};

Dims layer_dims(const Tensor& w_hh, const Tensor& hx, int64_t mode, IntArrayRef batch_sizes) {
  Dims d{};
  d.H = w_hh.sizes()[1];
  d.G = gate_count(mode);
  d.B = hx.sizes()[0];
  d.T = static_cast<int64_t>(batch_sizes.size());
  d.offsets.resize(static_cast<size_t>(d.T) + 1);
  int64_t n = 0;
  for (int64_t t = 0; t < d.T; ++t) {
    d.offsets[static_cast<size_t>(t)] = n;
    n += batch_sizes[static_cast<size_t>(t)];
  }
  d.offsets[static_cast<size_t>(d.T)] = n;
  d.N = n;
  return d;
}

Tensor dense(const Tensor& t) { return t.defined() && !t.is_contiguous() ? contiguous(t) : t; }

// The forward into contiguous outputs that share no memory with the arguments (Note [Recurrent layer kernel]).
void rnn_layer_fill(const Tensor& output, const Tensor& hy, const Tensor& cy, const Tensor& ws,
                    const Tensor& igates_, const Tensor& w_hh_, const Tensor& b_hh_, const Tensor& hx_,
                    const Tensor& cx_, int64_t mode, IntArrayRef batch_sizes, bool reverse) {
  const char* op = "_rnn_layer";
  const Dims d = layer_dims(w_hh_, hx_, mode, batch_sizes);
  const Tensor igates = dense(igates_), w_hh = dense(w_hh_), b_hh = dense(b_hh_), hx = dense(hx_);
  const Tensor cx = mode == kLstm ? dense(cx_) : Tensor();
  const ScalarType dt = igates.dtype();
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
}

// Note [Structured kernels]: the out kernel; output (N, H), hy (B, H), cy (B or 0, H) and the workspace
// (N, W * H) come from the meta step. hy and cy hold the state during the loop.
void rnn_layer_out_cpu(const Tensor& output_, const Tensor& hy_, const Tensor& cy_, const Tensor& ws_,
                       const Tensor& igates_, const Tensor& w_hh_, const Tensor& b_hh_, const Tensor& hx_,
                       const Tensor& cx_, int64_t mode, IntArrayRef batch_sizes, bool reverse) {
  cpu::write_contiguous_outs<4>({output_, hy_, cy_, ws_}, {&igates_, &w_hh_, &b_hh_, &hx_, &cx_},
                                [&](const std::array<Tensor, 4>& dst) {
                                  rnn_layer_fill(dst[0], dst[1], dst[2], dst[3], igates_, w_hh_, b_hh_, hx_, cx_,
                                                 mode, batch_sizes, reverse);
                                });
}

FB_REGISTER_OUT_KERNEL(op::_rnn_layer, CPU, rnn_layer_out_cpu);

// The backward into contiguous outputs that share no memory with the arguments: grad_ig is written
// whole, the others are zeroed first (a state gradient starts from grad_hy / grad_cy, grad_w_hh and
// grad_b_hh are sums).
void rnn_layer_backward_fill(const std::array<Tensor, 5>& grads, const Tensor& grad_output_,
                             const Tensor& grad_hy_, const Tensor& grad_cy_, const Tensor& igates_,
                             const Tensor& w_hh_, const Tensor& hx_, const Tensor& cx_, const Tensor& output_,
                             const Tensor& workspace_, int64_t mode, IntArrayRef batch_sizes, bool reverse) {
  const char* op = "_rnn_layer_backward";
  const Dims d = layer_dims(w_hh_, hx_, mode, batch_sizes);
  const int64_t H = d.H, G = d.G, GH = G * H, N = d.N, B = d.B;
  const Tensor igates = dense(igates_), w_hh = dense(w_hh_), hx = dense(hx_);
  const Tensor cx = mode == kLstm ? dense(cx_) : Tensor();
  const Tensor output = dense(output_), ws = dense(workspace_);
  const Tensor go = grad_output_.defined() && grad_output_.numel() ? dense(grad_output_) : Tensor();
  const Tensor ghy = grad_hy_.defined() && grad_hy_.numel() ? dense(grad_hy_) : Tensor();
  const Tensor gcy = mode == kLstm && grad_cy_.defined() && grad_cy_.numel() ? dense(grad_cy_) : Tensor();
  const ScalarType dt = igates.dtype();
  const Tensor &grad_ig = grads[0], &grad_w = grads[1], &grad_b = grads[2], &grad_hx = grads[3], &grad_cx = grads[4];
  for (size_t i = 1; i < grads.size(); ++i)
    if (grads[i].numel())
      std::memset(grads[i].data_ptr(), 0, static_cast<size_t>(grads[i].numel()) * itemsize(grads[i].dtype()));
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
}

// Note [Structured kernels]: the out kernel; every gradient is computed (the autograd formula has no
// output mask): grad_b_hh is (0,) without a bias, grad_cx (0, H) but for LSTM.
void rnn_layer_backward_out_cpu(const Tensor& grad_igates, const Tensor& grad_w_hh, const Tensor& grad_b_hh,
                                const Tensor& grad_hx, const Tensor& grad_cx, const Tensor& grad_output,
                                const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& igates,
                                const Tensor& w_hh, const Tensor& b_hh, const Tensor& hx, const Tensor& cx,
                                const Tensor& output, const Tensor& workspace, int64_t mode, IntArrayRef batch_sizes,
                                bool reverse) {
  cpu::write_contiguous_outs<5>(
      {grad_igates, grad_w_hh, grad_b_hh, grad_hx, grad_cx},
      {&grad_output, &grad_hy, &grad_cy, &igates, &w_hh, &b_hh, &hx, &cx, &output, &workspace},
      [&](const std::array<Tensor, 5>& dst) {
        rnn_layer_backward_fill(dst, grad_output, grad_hy, grad_cy, igates, w_hh, hx, cx, output, workspace, mode,
                                batch_sizes, reverse);
      });
}

FB_REGISTER_OUT_KERNEL(op::_rnn_layer_backward, CPU, rnn_layer_backward_out_cpu);

}  // namespace
}  // namespace flambeau
