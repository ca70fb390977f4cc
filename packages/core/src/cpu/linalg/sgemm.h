#pragma once
// flambeau's own float32 GEMM for AVX-512 CPUs (sgemm_avx512.cpp), and its packed
// form for AVX-512 and AVX2 (Note [Packed step GEMM]).
//
// Note [Own sgemm]
// blas_gemm() (gemm.h) sends a float32 call here instead of OpenBLAS when
// own_sgemm_applies(): an AVX-512 CPU, alpha == 1 and beta 0 or 1, and an
// output and a depth large enough that the register-blocked kernel is ahead.
// Why not OpenBLAS at these sizes: its sgemm packs both operands on every
// call into its own layout and, for beta == 0, first zeroes C in a separate
// pass; at the benchmark MLP's shapes (128 x 512 x 784 and the like, one
// block per thread as gemm() splits them) that is ~10% of the call. Here:
// - op(B) is cut into panels of 64 columns; a panel is used where it lies when
//   op(B)'s rows are contiguous and its row stride does not alias the caches
//   (multiples of 512 bytes do), and is otherwise packed (transposed with
//   16 x 16 in-register transposes when op(B) = B^T) into a per-thread buffer
//   of at most kMaxDepth rows (256 KiB, in L2) right before it is used;
// - op(A) is read where it lies: each k broadcasts one value per row; a
//   transposed op(A) spanning more than 1 MiB (the LSTM's grad_weight of
//   its 10,000-word projection: g^T with rows 40 KB apart) is first copied
//   48 rows at a time, so each k reads whole cache lines instead of 6 floats
//   of a line the hardware prefetcher never sees coming;
// - the kernel holds up to 6 rows x 64 columns of C in 24 zmm accumulators
//   (per k: 4 panel loads, 6 broadcasts, 24 FMAs), starts from zero or from
//   C (beta == 1) and stores once; the last partial panel is zero-padded, so
//   only its stores are masked.
// Each element's sum runs over k in order, in kMaxDepth chunks (the later
// chunks add onto C), whatever the call's split into blocks: the result of
// an element does not depend on the thread count.
// The setting backends.cpu.sgemm = 'openblas' (Note [Settings]; override
// FLAMBEAU_SGEMM) sends every call to OpenBLAS again, at run time too (tests,
// A/B benchmarks in one process).
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"
#include "flambeau/macros.h"

namespace flambeau::cpu {

/// True when own_sgemm runs this call: see Note [Own sgemm].
FB_API bool own_sgemm_applies(int m, int n, int k, float alpha, float beta);

/// Row-major c (m x n, row stride ldc) = op(a) @ op(b), or += when
/// accumulate, or row_init + op(a) @ op(b) with row_init (n values added to
/// every row: linear's bias, taken as the accumulators' start, so there is no
/// pass over c before); op(a) is m x k (a^T when ta: a stored k x m), op(b)
/// k x n (b^T when tb). Runs on the calling thread. AVX-512 only. Returns false,
/// having written nothing, when its per-thread panel buffer cannot be
/// allocated: the caller then runs the call on OpenBLAS. (FB_API for the
/// C++ tests.)
FB_API bool own_sgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, bool accumulate, const float* row_init = nullptr);

using OwnSgemmFn = bool (*)(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
                            int ldb, float* c, int ldc, bool accumulate, const float* row_init);
/// The own GEMM exists for AVX-512 only: the stub's avx512 slot is own_sgemm (sgemm_avx512.cpp), the
/// narrower ones are empty (Note [CPU capabilities] in dispatch_stub.h).
FB_DECLARE_DISPATCH(OwnSgemmFn, own_sgemm_stub);
/// Whether own_sgemm may run now: an AVX-512 CPU, not capped below it.
FB_API bool own_sgemm_available();

// Note [Packed step GEMM] (rnn.cpp): the recurrent layers multiply a few
// batch rows by the same hidden-to-hidden weight at every step, so they pack
// it once per layer call and run each step on the packed copy. The packed
// form has an AVX-512 kernel (sgemm_avx512.cpp) and an AVX2 one
// (sgemm_packed_avx2.cpp), chosen at run time.

/// Columns of op(B) per panel of the kernel (4 zmm) and of own_sgemm_pack's layout.
inline constexpr int kOwnSgemmPanel = 64;
/// Floats own_sgemm_pack writes for a k x n op(B): n rounded up to whole panels.
inline int64_t own_sgemm_packed_size(int64_t k, int64_t n) {
  return (n + kOwnSgemmPanel - 1) / kOwnSgemmPanel * kOwnSgemmPanel * k;
}

/// One instruction set's own_sgemm_pack and own_sgemm_packed.
struct PackedSgemm {
  void (*pack)(bool tb, const float* b, int64_t ldb, int k, int n, float* dst);
  void (*run)(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc,
              bool accumulate, const float* row_init);
};
/// Slots avx512 (sgemm_avx512.cpp), avx2 (sgemm_packed_avx2.cpp) and base (a plain loop, sgemm.cpp):
/// every packed copy has the one layout, so any slot runs what any other packed.
FB_DECLARE_DISPATCH(const PackedSgemm*, packed_sgemm_stub);
/// Whether a vector kernel runs own_sgemm_pack{,ed} now: an AVX2 or AVX-512 CPU, not capped below
/// AVX2 (below, the base slot's plain loop still runs them correctly, slowly).
FB_API bool packed_sgemm_available();
/// The base slot's pack (sgemm.cpp), which the AVX2 slot shares (it has no transposes to speed up).
void own_sgemm_pack_portable(bool tb, const float* b, int64_t ldb, int k, int n, float* dst);

/// Packs the whole of op(B) (k x n; b^T when tb, row stride ldb) into dst:
/// panels of 64 columns, each k rows of 64 floats, zero-padded.
FB_API void own_sgemm_pack(bool tb, const float* b, int64_t ldb, int k, int n, float* dst);

/// c (m x n, row stride ldc) = a (m x k, row stride lda) @ B, or += when
/// accumulate, or row_init + a @ B (as own_sgemm), B as own_sgemm_pack left
/// it. Runs on the calling thread; panels outer (each step has few rows: the
/// packed copy is read once).
FB_API void own_sgemm_packed(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                             int64_t ldc, bool accumulate, const float* row_init = nullptr);

}  // namespace flambeau::cpu
