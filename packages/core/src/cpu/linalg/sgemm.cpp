// When a float32 GEMM runs on flambeau's own kernel (Note [Own sgemm] in
// sgemm.h); the kernel itself is in sgemm_avx512.cpp.
#include "cpu/linalg/sgemm.h"

#include <algorithm>

#include "settings.h"

namespace flambeau::cpu {
namespace {

// Below these a call stays on OpenBLAS, which is ahead there (benchmarks/ops_sgemm.py, 2 threads:
// 96^3 0.86x, 16 x 128 x 512 0.69x, 4 x 512 x 512 0.48x; 128^3 1.18x, 12 x 512 x 512 1.22x).
constexpr double kMinMacs = double(int64_t{1} << 21);
constexpr int kMinRows = 8;
constexpr int kMinCols = 16;
constexpr int kMinDepth = 16;

}  // namespace

FB_DEFINE_DISPATCH(own_sgemm_stub);
FB_REGISTER_NO_DISPATCH(own_sgemm_stub, base);
FB_REGISTER_NO_DISPATCH(own_sgemm_stub, avx2);

bool own_sgemm_available() { return own_sgemm_stub.get() != nullptr; }

void own_sgemm_pack_portable(bool tb, const float* b, int64_t ldb, int k, int n, float* dst) {
  for (int p0 = 0; p0 < n; p0 += kOwnSgemmPanel) {
    const int cols = std::min(kOwnSgemmPanel, n - p0);
    float* panel = dst + int64_t{p0} * k;
    if (!tb) {  // rows of op(B) are rows of b
      for (int kk = 0; kk < k; ++kk) {
        float* d = panel + int64_t{kk} * kOwnSgemmPanel;
        std::copy(b + kk * ldb + p0, b + kk * ldb + p0 + cols, d);
        std::fill(d + cols, d + kOwnSgemmPanel, 0.0f);
      }
      continue;
    }
    // op(B) = b^T: column p0 + j of op(B) is row p0 + j of b. Blocks of 16 k's: the block's 16 panel
    // rows (4 KiB) stay in L1 while each of b's rows gives its 16 contiguous values.
    for (int k0 = 0; k0 < k; k0 += 16) {
      const int depth = std::min(16, k - k0);
      for (int j = 0; j < kOwnSgemmPanel; ++j) {
        float* d = panel + int64_t{k0} * kOwnSgemmPanel + j;
        const float* s = b + (p0 + j) * ldb + k0;
        for (int kk = 0; kk < depth; ++kk) d[kk * kOwnSgemmPanel] = j < cols ? s[kk] : 0.0f;
      }
    }
  }
}

namespace {

// The base slot: a plain loop over the packed layout, so that own_sgemm_pack{,ed} always have a variant
// (a capability capped between a caller's packed_sgemm_available() and its call still finds one).
void run_packed_portable(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                         int64_t ldc, bool accumulate, const float* row_init) {
  if (row_init) accumulate = false;
  for (int p0 = 0; p0 < n; p0 += kOwnSgemmPanel) {
    const float* panel = packed + int64_t{p0} * k;
    const int cols = std::min(kOwnSgemmPanel, n - p0);
    for (int r = 0; r < m; ++r) {
      float* cr = c + int64_t{r} * ldc + p0;
      float acc[kOwnSgemmPanel] = {};
      for (int j = 0; j < cols; ++j) acc[j] = row_init ? row_init[p0 + j] : accumulate ? cr[j] : 0.0f;
      for (int kk = 0; kk < k; ++kk) {
        const float x = a[int64_t{r} * lda + kk];
        const float* pr = panel + int64_t{kk} * kOwnSgemmPanel;
        for (int j = 0; j < kOwnSgemmPanel; ++j) acc[j] += x * pr[j];  // zero-padded past cols
      }
      std::copy(acc, acc + cols, cr);
    }
  }
}

constexpr PackedSgemm kPackedPortable{&own_sgemm_pack_portable, &run_packed_portable};

}  // namespace

FB_DEFINE_DISPATCH(packed_sgemm_stub);
FB_REGISTER_DISPATCH(packed_sgemm_stub, base, &kPackedPortable);

bool packed_sgemm_available() { return packed_sgemm_stub.get() != packed_sgemm_stub_type::base; }

void own_sgemm_pack(bool tb, const float* b, int64_t ldb, int k, int n, float* dst) {
  packed_sgemm_stub.get()->pack(tb, b, ldb, k, n, dst);
}

void own_sgemm_packed(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                      int64_t ldc, bool accumulate, const float* row_init) {
  packed_sgemm_stub.get()->run(m, n, k, a, lda, packed, c, ldc, accumulate, row_init);
}

bool own_sgemm_applies(int m, int n, int k, float alpha, float beta) {
  return alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && m >= kMinRows && n >= kMinCols &&
         k >= kMinDepth && double(m) * double(n) * double(k) >= kMinMacs &&
         settings::sgemm() == settings::SgemmBackend::Own && own_sgemm_available();
}

}  // namespace flambeau::cpu
