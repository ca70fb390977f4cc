// When a float32 GEMM runs on flambeau's own kernel (Note [Own sgemm] in
// sgemm.h); the kernel itself is in sgemm_avx512.cpp.
#include "cpu/sgemm.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cpu/vec_table.h"
#include "flambeau/error.h"

namespace flambeau::cpu {
namespace {

// Below these a call stays on OpenBLAS, which is ahead there (benchmarks/ops_sgemm.py, 2 threads:
// 96^3 0.86x, 16 x 128 x 512 0.69x, 4 x 512 x 512 0.48x; 128^3 1.18x, 12 x 512 x 512 1.22x).
constexpr double kMinMacs = double(int64_t{1} << 21);
constexpr int kMinRows = 8;
constexpr int kMinCols = 16;
constexpr int kMinDepth = 16;

bool own_sgemm_possible() { return std::strcmp(cpu_capability(), "avx512") == 0; }

// 1: own kernel, 0: OpenBLAS; first from FLAMBEAU_SGEMM and the CPU, then set_sgemm_backend().
std::atomic<int>& backend_state() {
  static std::atomic<int> state = [] {
    const char* s = std::getenv("FLAMBEAU_SGEMM");
    return (s && std::strcmp(s, "openblas") == 0) || !own_sgemm_possible() ? 0 : 1;
  }();
  return state;
}

bool own_sgemm_enabled() { return backend_state().load(std::memory_order_relaxed) != 0; }

}  // namespace

const char* sgemm_backend() { return own_sgemm_enabled() ? "own" : "openblas"; }

void set_sgemm_backend(std::string_view name) {
  FB_CHECK_VALUE(name == "own" || name == "openblas", "[_sgemm_backend] expected 'own' or 'openblas', got '",
                 name, "'");
  FB_CHECK_VALUE(name == "openblas" || own_sgemm_possible(),
                 "[_sgemm_backend] the own float32 GEMM needs an AVX-512 CPU; this one runs '",
                 cpu_capability(), "' kernels");
  backend_state().store(name == "own" ? 1 : 0, std::memory_order_relaxed);
}

bool own_sgemm_applies(int m, int n, int k, float alpha, float beta) {
  return alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && m >= kMinRows && n >= kMinCols &&
         k >= kMinDepth && double(m) * double(n) * double(k) >= kMinMacs && own_sgemm_enabled();
}

}  // namespace flambeau::cpu
