// When a float32 GEMM runs on flambeau's own kernel (Note [Own sgemm] in
// sgemm.h); the kernel itself is in sgemm_avx512.cpp.
#include "cpu/linalg/sgemm.h"

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

FB_DEFINE_DISPATCH(packed_sgemm_stub);
FB_REGISTER_NO_DISPATCH(packed_sgemm_stub, base);

bool packed_sgemm_available() { return packed_sgemm_stub.get() != nullptr; }

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
