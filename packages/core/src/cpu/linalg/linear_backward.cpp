// CPU kernel of _linear_backward: linear's three gradients in one call.
//
// Note [Linear backward]
// For y = x @ W^T + b with x (n, in), W (out, in), grad g (n, out):
//   grad_input  = g @ W       (n x in,  K = out)
//   grad_weight = g^T @ x     (out x in, K = n)
//   grad_bias   = g.sum(0)    (out)
// The two GEMMs have the same number of multiply-adds. Called one after the
// other (the composed backward), each is split into one block per thread by
// gemm() (gemm.h), and each block packs the whole of the operand it shares
// with the other block (g for both) and pays a fork and a join; the bias's
// column sum then runs on one thread. Here all of it is one job on the GEMM
// pool (Note [GEMM pool]): with two threads, one thread computes grad_input
// and the other grad_weight, each as one serial OpenBLAS call (no operand
// packed twice, one join), and grad_bias's columns are summed by the blocks of
// grad_weight (when it is split by its rows, each block sums the columns of g
// that are its rows) or by the first block. With more threads each GEMM is
// split (like gemm()) into about half the threads' blocks; blocks are claimed
// dynamically, so a late thread only takes what is left. Below
// kLinearBackwardPoolMacs the whole call is serial.
//
// The two threads: the two GEMMs have the same multiply-adds but not the same
// cost: grad_weight reads g transposed (its rows are g's columns, copied into
// row panels first) and sums grad_bias, so one block each left the grad_input
// thread idle for a sixth of the call (the LSTM decoder's 700 x 256 -> 10,000:
// 31 ms for grad_input, 38 + 3 ms for grad_weight and grad_bias, per thread's
// CPU time). grad_weight is cut into halving row blocks (a half, a quarter,
// an eighth, the rest) claimed after grad_input's block: the thread done
// first takes the last small ones, and both finish within an eighth of
// grad_weight of each other (the decoder's pieces: 20.5, 10.4, 5.4 and 5.2 ms,
// the same 41 ms in all; the call's span 41 -> 36 ms).
//
// grad_bias is summed in double (vec_table's accumulate_row, as sum(0) does).
// _linear_backward is a structured op: the kernel writes the gradients the meta step allocated (its
// rules in src/meta/nn_layer_rules.cpp).
#include <algorithm>
#include <array>
#include <climits>
#include <tuple>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "cpu/linalg/lowp_gemm.h"
#include "cpu/elementwise/vec_table.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "generic/nn_utils.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

constexpr double kLinearBackwardPoolMacs = double(int64_t{1} << 18);
// Blocks of grad_weight with two threads (Note [Linear backward], the two threads).
constexpr int kHalvingBlocks = 4;

// out[c - c0] = sum over rows r < n of g[r * ldg + c], for c in [c0, c1).
template <class T>
void column_sums(const T* g, int64_t ldg, int64_t n, int64_t c0, int64_t c1, T* out) {
  const cpu::VecTable& vt = cpu::vec_table();
  const auto acc_row = std::is_same_v<T, float> ? vt.accumulate_row_f32 : vt.accumulate_row_f64;
  // 2048 columns a chunk (16 KiB of sums, in L1): each row's run is 8 KiB of g, which the prefetchers
  // stream; runs of 1 KiB read the LSTM decoder's g (700 x 10,000, from L3) in 3.1 ms, runs of 8 KiB in
  // 2.45 ms. The sums are the same (each column adds its rows in order).
  constexpr int64_t kCols = 2048;
  double acc[kCols];
  for (int64_t c = c0; c < c1; c += kCols) {
    const int64_t len = std::min(kCols, c1 - c);
    std::fill(acc, acc + len, 0.0);
    for (int64_t r = 0; r < n; ++r)
      acc_row(acc, reinterpret_cast<const char*>(g + r * ldg + c), len, sizeof(T));
    for (int64_t i = 0; i < len; ++i) out[c - c0 + i] = static_cast<T>(acc[i]);
  }
}

// One block of the job: a part of one GEMM (kind 0: grad_input, 1: grad_weight) along its rows or
// columns, or (kind 2) the whole of grad_bias; with_bias: the block also sums grad_bias[b0, b1).
struct Piece {
  int kind;
  bool rows;  // split along the output's rows (else its columns)
  int lo, hi;
  bool with_bias;
  int b0, b1;
};

// Cuts [0, dim) into up to `parts` parts rounded to align (at least 2 * align each, as gemm()).
std::vector<std::pair<int, int>> cut(int dim, int parts, int align) {
  parts = std::max(1, std::min(parts, dim / (2 * align)));
  const int per = ((dim + parts - 1) / parts + align - 1) / align * align;
  std::vector<std::pair<int, int>> out;
  for (int lo = 0; lo < dim; lo += per) out.emplace_back(lo, std::min(dim, lo + per));
  if (out.empty()) out.emplace_back(0, dim);
  return out;
}

// [0, dim) cut into a half, a quarter, an eighth, ... and the rest: at most `count` parts, each a multiple of
// align (but the last) and at least 2 * align.
std::vector<std::pair<int, int>> halving(int dim, int count, int align) {
  std::vector<std::pair<int, int>> out;
  for (int lo = 0; lo < dim;) {
    const int left = dim - lo;
    int len = left;
    if (static_cast<int>(out.size()) + 1 < count && left >= 4 * align)
      len = (left / 2 + align - 1) / align * align;
    out.emplace_back(lo, lo + len);
    lo += len;
  }
  return out;
}

template <class T>
void linear_backward_impl(const Tensor& grad, const Tensor& input, const Tensor& weight, Tensor* gi,
                          Tensor* gw, Tensor* gb) {
  const int n = static_cast<int>(grad.sizes()[0]), out_f = static_cast<int>(weight.sizes()[0]),
            in_f = static_cast<int>(weight.sizes()[1]);
  const cpu::GemmOperand<T> G = cpu::gemm_operand<T>(grad, false);
  // grad_bias sums rows of g: g's rows must be unit-stride (a transposed g is copied once).
  Tensor g_rows;
  const T* gdata = nullptr;
  int64_t ldg = 0;
  if (gb) {
    if (!G.trans && G.packed.empty()) {
      gdata = G.data;
      ldg = G.ld;
    } else {
      g_rows = op::contiguous(grad, MemoryFormat::Contiguous);
      gdata = g_rows.data<T>();
      ldg = out_f;
    }
  }
  cpu::GemmOperand<T> Wop{nullptr, 0, false, 1, {}}, X{nullptr, 0, false, 1, {}};
  if (gi) Wop = cpu::gemm_operand<T>(weight, false);
  if (gw) X = cpu::gemm_operand<T>(input, false);
  T* pi = gi ? gi->data<T>() : nullptr;
  T* pw = gw ? gw->data<T>() : nullptr;
  T* pb = gb ? gb->data<T>() : nullptr;

  // GEMMs with K == 0 are zeros (OpenBLAS is not asked).
  const bool gi_gemm = gi && int64_t{n} * in_f > 0;
  const bool gw_gemm = gw && int64_t{out_f} * in_f > 0;
  if (gi_gemm && out_f == 0) {
    std::fill(pi, pi + int64_t{n} * in_f, T(0));
  }
  if (gw_gemm && n == 0) {
    std::fill(pw, pw + int64_t{out_f} * in_f, T(0));
  }
  const bool do_gi = gi_gemm && out_f > 0, do_gw = gw_gemm && n > 0;

  auto run = [&](const Piece& p) {
    if (p.kind == 0) {  // grad_input = g @ W
      if (p.rows) {
        const T* a = G.trans ? G.data + p.lo : G.data + int64_t{p.lo} * G.ld;
        cpu::blas_gemm(G.trans, Wop.trans, p.hi - p.lo, in_f, out_f, a, G.ld, Wop.data, Wop.ld,
                       pi + int64_t{p.lo} * in_f, in_f, T(1), T(0));
      } else {
        const T* b = Wop.trans ? Wop.data + int64_t{p.lo} * Wop.ld : Wop.data + p.lo;
        cpu::blas_gemm(G.trans, Wop.trans, n, p.hi - p.lo, out_f, G.data, G.ld, b, Wop.ld, pi + p.lo, in_f,
                       T(1), T(0));
      }
    } else if (p.kind == 1) {  // grad_weight = g^T @ x
      const bool ta = !G.trans;
      if (p.rows) {
        const T* a = ta ? G.data + p.lo : G.data + int64_t{p.lo} * G.ld;
        cpu::blas_gemm(ta, X.trans, p.hi - p.lo, in_f, n, a, G.ld, X.data, X.ld, pw + int64_t{p.lo} * in_f,
                       in_f, T(1), T(0));
      } else {
        const T* b = X.trans ? X.data + int64_t{p.lo} * X.ld : X.data + p.lo;
        cpu::blas_gemm(ta, X.trans, out_f, p.hi - p.lo, n, G.data, G.ld, b, X.ld, pw + p.lo, in_f, T(1),
                       T(0));
      }
    }
    if (p.with_bias && p.b1 > p.b0) column_sums<T>(gdata, ldg, n, p.b0, p.b1, pb + p.b0);
  };

  const int nt = get_num_threads();
  const double macs = double(n) * double(in_f) * double(out_f);
  const double total = (do_gi ? macs : 0.0) + (do_gw ? macs : 0.0);
  const bool serial = nt <= 1 || in_parallel_region() || total < kLinearBackwardPoolMacs;
  constexpr int kAlign = 64 / sizeof(T);
  std::vector<Piece> pieces;
  const int share = serial ? 1 : (do_gi && do_gw ? std::max(1, (nt + 1) / 2) : nt);
  if (do_gi) {
    const bool rows = n > in_f;
    for (auto [lo, hi] : cut(rows ? n : in_f, share, kAlign))
      pieces.push_back({0, rows, lo, hi, false, 0, 0});
  }
  bool bias_done = false;
  if (do_gw) {
    // Split along grad_weight's rows when that leaves as many blocks (each then sums its part of
    // grad_bias), else along its columns like gemm().
    auto by_rows = cut(out_f, share, kAlign);
    const auto by_cols = cut(in_f, share, kAlign);
    const bool rows = by_rows.size() >= by_cols.size() || (gb && by_rows.size() > 1);
    // Two threads and both GEMMs: grad_weight in halving row blocks after grad_input's one block
    // (Note [Linear backward], the two threads).
    if (!serial && share == 1 && do_gi && rows) by_rows = halving(out_f, kHalvingBlocks, kAlign);
    for (auto [lo, hi] : rows ? by_rows : by_cols) {
      Piece p{1, rows, lo, hi, false, 0, 0};
      if (gb && rows) p = {1, true, lo, hi, true, lo, hi};
      pieces.push_back(p);
    }
    if (gb && !rows) {
      pieces.back().with_bias = true;  // the last block (claimed last: it starts after the others)
      pieces.back().b0 = 0;
      pieces.back().b1 = out_f;
    }
    bias_done = gb != nullptr;
  }
  if (gb && !bias_done) pieces.push_back({2, false, 0, 0, true, 0, out_f});

  const cpu::SerialBlasScope serial_blas;  // Note [GEMM threads]
  if (serial || pieces.size() <= 1) {
    for (const Piece& p : pieces) run(p);
    return;
  }
  auto block = [&](int64_t i) { run(pieces[static_cast<size_t>(i)]); };
  if (cpu::gemm_pool_for(static_cast<int64_t>(pieces.size()), nt, block)) return;  // Note [GEMM pool]
  parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) block(i);
  });
}

// Structured (Note [Structured kernels]): meta::check_linear_backward checked the operands, and each
// gradient asked for is an output the meta step allocated (undefined otherwise). The GEMMs and the column
// sums write contiguous outputs: each output itself, or a new tensor copied into it (out strided, or
// sharing memory with an operand: cpu::write_contiguous_outs).
void linear_backward_out_cpu(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                             const Tensor& grad_output, const Tensor& input, const Tensor& weight, bool input_g,
                             bool weight_g, bool bias_g) {
  (void)input_g;
  (void)weight_g;
  (void)bias_g;
  cpu::write_contiguous_outs<3>({grad_input, grad_weight, grad_bias}, {&grad_output, &input, &weight},
                                [&](const std::array<Tensor, 3>& dst) {
                                  Tensor gi = dst[0], gw = dst[1], gb = dst[2];
                                  Tensor* pi = gi.defined() ? &gi : nullptr;
                                  Tensor* pw = gw.defined() ? &gw : nullptr;
                                  Tensor* pb = gb.defined() ? &gb : nullptr;
                                  if (grad_output.dtype() == ScalarType::BFloat16)
                                    cpu::lowp_linear_backward(grad_output, input, weight, pi, pw, pb);
                                  else if (grad_output.dtype() == ScalarType::Float32)
                                    linear_backward_impl<float>(grad_output, input, weight, pi, pw, pb);
                                  else
                                    linear_backward_impl<double>(grad_output, input, weight, pi, pw, pb);
                                });
}

FB_REGISTER_OUT_KERNEL(op::_linear_backward, CPU, linear_backward_out_cpu);

}  // namespace
}  // namespace flambeau
