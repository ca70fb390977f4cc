// flambeau's own float32 GEMM, AVX-512 (Note [Own sgemm] in sgemm.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "cpu/linalg/sgemm.h"

namespace flambeau::cpu {
namespace {

constexpr int kPanel = kOwnSgemmPanel;  // columns of op(B) per panel: 4 zmm
constexpr int kVecs = kPanel / 16;      // zmm per panel row
constexpr int kRows = 6;                // rows of C per kernel call: 6 x 4 = 24 accumulators
constexpr int kMaxDepth = 1024;         // rows of a panel per pass
// Floats of packed panels per column block (512 KiB, in L2 beside op(A)'s rows); a panel of
// kMaxDepth rows takes a sixteenth of it.
constexpr int kBlockFloats = 1 << 17;
// A transposed op(A) whose rows span more than kStridedA bytes is packed kGroupRows rows at a time
// (Note [Own sgemm]); the group's copy (kGroupRows x kMaxDepth floats, 192 KiB) stays in L2.
constexpr int64_t kStridedA = int64_t{1} << 20;
constexpr int kGroupRows = 8 * kRows;
constexpr int kWideBlock = 4;

__mmask16 lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1u);
}

// Rows [r0, r0 + 16) x columns [c0, c0 + 16) of a row-major matrix s (row stride lds), rows >= nrows
// and columns >= ncols read as zero, written transposed: d[c * ldd + r] for c < ncols.
void transpose16(const float* s, int64_t lds, int nrows, int ncols, float* d, int64_t ldd) {
  __m512 r[16], t[16];
  const __mmask16 m = lanes(ncols);
  for (int i = 0; i < 16; ++i) r[i] = i < nrows ? _mm512_maskz_loadu_ps(m, s + i * lds) : _mm512_setzero_ps();
  // Pairs of rows interleaved, then pairs of pairs: r[4g + q] holds, in each 128-bit lane l, element
  // 4l + q of rows 4g..4g+3.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // Then the 128-bit lanes: first across row groups 0/1 and 2/3, then across the halves.
  for (int g = 0; g < 16; g += 8)
    for (int q = 0; q < 4; ++q) {
      t[g + q] = _mm512_shuffle_f32x4(r[g + q], r[g + 4 + q], 0x88);
      t[g + 4 + q] = _mm512_shuffle_f32x4(r[g + q], r[g + 4 + q], 0xDD);
    }
  for (int q = 0; q < 8; ++q) {
    r[q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0x88);
    r[8 + q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0xDD);
  }
  for (int c = 0; c < ncols; ++c) _mm512_storeu_ps(d + c * ldd, r[c]);
}

// The panel of op(B) for columns [p0, p0 + cols) and depth [k0, k0 + depth) into dst (depth rows of
// kPanel floats, columns >= cols zero).
void pack_panel(bool tb, const float* b, int64_t ldb, int64_t p0, int cols, int64_t k0, int depth,
                float* dst) {
  if (!tb) {  // rows of op(B) are rows of b
    for (int k = 0; k < depth; ++k) {
      const float* s = b + (k0 + k) * ldb + p0;
      float* d = dst + int64_t{k} * kPanel;
      for (int v = 0; v < kVecs; ++v)
        _mm512_storeu_ps(d + 16 * v, _mm512_maskz_loadu_ps(lanes(cols - 16 * v), s + 16 * v));
    }
    return;
  }
  // op(B) = b^T: column p0 + j of op(B) is row p0 + j of b, read along k.
  for (int j0 = 0; j0 < kPanel; j0 += 16) {
    const int rows = std::clamp(cols - j0, 0, 16);
    for (int kk = 0; kk < depth; kk += 16) {
      const int ncols = std::min(16, depth - kk);
      float* d = dst + int64_t{kk} * kPanel + j0;
      if (rows == 0) {
        for (int c = 0; c < ncols; ++c) _mm512_storeu_ps(d + c * kPanel, _mm512_setzero_ps());
        continue;
      }
      transpose16(b + (p0 + j0) * ldb + k0 + kk, ldb, rows, ncols, d, kPanel);
    }
  }
}

// R rows of C (R <= kRows) times V vectors of one panel: c[r * ldc + j] (+)= sum_k a(r, k) *
// panel[k * ldp + j] for j < cols (16 * (V - 1) < cols <= 16 * V), a(r, k) = a[r * ars + k * aks].
// The narrower forms serve the last panel of a row (784 = 12 * 64 + 16 columns: a 4-vector kernel
// there would spend a whole panel's FMAs on 16 columns).
// With init (and not accumulate), every row starts from init[0, cols).
template <int R, int V>
void kernel(int depth, const float* a, int64_t ars, int64_t aks, const float* panel, int64_t ldp, float* c,
            int64_t ldc, int cols, bool accumulate, const float* init) {
  __m512 acc[R][V];
  if (init && !accumulate) {
    for (int v = 0; v < V; ++v) {
      const __m512 x = _mm512_maskz_loadu_ps(lanes(cols - 16 * v), init + 16 * v);
      for (int r = 0; r < R; ++r) acc[r][v] = x;
    }
  } else if (accumulate) {
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm512_maskz_loadu_ps(lanes(cols - 16 * v), c + r * ldc + 16 * v);
  } else {
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int k = 0; k < depth; ++k) {
    const float* pk = panel + k * ldp;
    __m512 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(pk + 16 * v);
    const float* ak = a + k * aks;
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(ak[r * ars]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  if (cols == 16 * V) {
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
    return;
  }
  for (int v = 0; v < V; ++v) {
    const __mmask16 m = lanes(cols - 16 * v);
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m, acc[r][v]);
  }
}

using KernelFn = void (*)(int, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, int,
                          bool, const float*);

template <int V>
struct RowKernels {
  static constexpr KernelFn fns[kRows + 1] = {nullptr,      kernel<1, V>, kernel<2, V>, kernel<3, V>,
                                              kernel<4, V>, kernel<5, V>, kernel<6, V>};
};
// kKernels[V][R]: R rows, V vectors.
constexpr const KernelFn* kKernels[kVecs + 1] = {nullptr, RowKernels<1>::fns, RowKernels<2>::fns,
                                                 RowKernels<3>::fns, RowKernels<4>::fns};

// A per-thread buffer of `Floats` floats (64-byte aligned), allocated on first use; one per Floats.
template <int Floats>
float* thread_buffer() {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> buf(
      static_cast<float*>(std::aligned_alloc(64, sizeof(float) * Floats)));
  return buf.get();
}

// Rows [r0, r0 + rows) of a transposed op(A) (a(r, k) = a[k * lda + r]) over depth [k0, k0 + depth),
// packed as 6-row micro-panels: row r's value at k lands at dst[(r / 6) * depth * 6 + k * 6 + r % 6].
// Reads whole runs of `rows` floats per k instead of the kernel's 6.
void pack_rows_transposed(const float* a, int64_t lda, int64_t r0, int rows, int64_t k0, int depth,
                          float* dst) {
  for (int k = 0; k < depth; ++k) {
    const float* src = a + (k0 + k) * lda + r0;
    float* d = dst + k * kRows;
    for (int rb = 0; rb < rows; rb += kRows) {  // 6 floats (fewer at the end) by masked ymm moves
      const __mmask8 m = static_cast<__mmask8>((1u << std::min(kRows, rows - rb)) - 1u);
      _mm256_mask_storeu_ps(d + int64_t{rb} * depth, m, _mm256_maskz_loadu_ps(m, src + rb));
    }
  }
}

void pack_all(bool tb, const float* b, int64_t ldb, int k, int n, float* dst) {
  for (int p0 = 0; p0 < n; p0 += kPanel)
    pack_panel(tb, b, ldb, p0, std::min(kPanel, n - p0), 0, k, dst + int64_t{p0} * k);
}

void run_packed(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc,
                bool accumulate, const float* row_init) {
  if (row_init) accumulate = false;
  for (int p0 = 0; p0 < n; p0 += kPanel) {
    const float* panel = packed + int64_t{p0} * k;
    const int cols = std::min(kPanel, n - p0);
    for (int r0 = 0; r0 < m; r0 += kRows)
      kKernels[(cols + 15) / 16][std::min(kRows, m - r0)](k, a + int64_t{r0} * lda, lda, 1, panel, kPanel,
                                                          c + int64_t{r0} * ldc + p0, ldc, cols, accumulate,
                                                          row_init ? row_init + p0 : nullptr);
  }
}

constexpr PackedSgemm kPackedAvx512{&pack_all, &run_packed};

}  // namespace

bool own_sgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
               float* c, int ldc, bool accumulate, const float* row_init) {
  if (m <= 0 || n <= 0) return true;
  if (row_init) accumulate = false;
  if (k <= 0) {
    for (int r = 0; r < m; ++r) {
      float* row = c + int64_t{r} * ldc;
      if (row_init)
        std::copy(row_init, row_init + n, row);
      else if (!accumulate)
        std::fill(row, row + n, 0.0f);
    }
    return true;
  }
  const int64_t ars = ta ? 1 : lda, aks = ta ? lda : 1;
  // Unpacked panels only where op(B)'s rows are contiguous and their stride cannot alias (Note [Own sgemm]).
  const bool direct = !tb && ldb % 128 != 0;
  float* abuf = nullptr;
  if (ta && m > kRows && int64_t{k} * lda * int64_t{sizeof(float)} > kStridedA) {
    abuf = thread_buffer<kGroupRows * kMaxDepth>();
    if (!abuf) return false;  // no memory for the copies: the caller asks OpenBLAS
  }
  // A packed op(A) is copied once per column block: its blocks may take kWideBlock times as many panels
  // (from L3 rather than L2), so that one block usually covers the whole width.
  const int budget = abuf ? kWideBlock * kBlockFloats : kBlockFloats;
  float* buf = nullptr;
  if (!direct || n % kPanel != 0) {
    buf = abuf ? thread_buffer<kWideBlock * kBlockFloats>() : thread_buffer<kBlockFloats>();
    if (!buf) return false;
  }
  // Depth chunks of at most kMaxDepth, equal in size; column blocks of as many panels as fit the budget.
  const int chunks = (k + kMaxDepth - 1) / kMaxDepth;
  const int per = (k + chunks - 1) / chunks;
  // (per >= 16 bounds the panels of a block by the arrays below.)
  const int block_cols = std::max(1, budget / (std::max(per, 16) * kPanel)) * kPanel;
  for (int k0 = 0; k0 < k; k0 += per) {
    const int depth = std::min(per, k - k0);
    const bool acc = accumulate || k0 > 0;
    const float* ak = a + int64_t{k0} * aks;
    for (int n0 = 0; n0 < n; n0 += block_cols) {
      const int n1 = std::min(n, n0 + block_cols);
      // The block's panels: where each lies (direct) or packed one after the other into buf.
      const float* panels[kWideBlock * kBlockFloats / (kPanel * 16)];
      int64_t ldp[kWideBlock * kBlockFloats / (kPanel * 16)];
      int np = 0;
      for (int p0 = n0; p0 < n1; p0 += kPanel, ++np) {
        const int cols = std::min(kPanel, n1 - p0);
        if (direct && cols == kPanel) {
          panels[np] = b + int64_t{k0} * ldb + p0;
          ldp[np] = ldb;
        } else {
          float* dst = buf + int64_t{np} * depth * kPanel;
          pack_panel(tb, b, ldb, p0, cols, k0, depth, dst);
          panels[np] = dst;
          ldp[np] = kPanel;
        }
      }
      // Rows outer: a block of op(A)'s rows stays in L1 while it meets every panel of the block.
      for (int g0 = 0; g0 < m; g0 += kGroupRows) {
        const int g1 = std::min(m, g0 + kGroupRows);
        if (abuf) pack_rows_transposed(a, lda, g0, g1 - g0, k0, depth, abuf);
        for (int r0 = g0; r0 < g1; r0 += kRows) {
          const int rows = std::min(kRows, m - r0);
          const float* ar = abuf ? abuf + int64_t{r0 - g0} * depth : ak + int64_t{r0} * ars;
          const int64_t rs = abuf ? 1 : ars, ks = abuf ? kRows : aks;
          float* cr = c + int64_t{r0} * ldc;
          for (int i = 0; i < np; ++i) {
            const int p0 = n0 + i * kPanel;
            const int cols = std::min(kPanel, n1 - p0);
            kKernels[(cols + 15) / 16][rows](depth, ar, rs, ks, panels[i], ldp[i], cr + p0, ldc, cols, acc,
                                             row_init ? row_init + p0 : nullptr);
          }
        }
      }
    }
  }
  return true;
}

FB_REGISTER_DISPATCH(own_sgemm_stub, avx512, &own_sgemm);
FB_REGISTER_DISPATCH(packed_sgemm_stub, avx512, &kPackedAvx512);

}  // namespace flambeau::cpu
