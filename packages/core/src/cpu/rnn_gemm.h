#pragma once
// The recurrent layers' per-step GEMM with the weights packed once per layer
// call (rnn_gemm_avx512.cpp; Note [Packed step GEMM] in rnn.cpp): float32,
// AVX-512 only (rnn.cpp checks cpu_capability() before calling).
#include <cstdint>

namespace flambeau::cpu::rnn_avx512 {

/// Columns per packed panel.
inline constexpr int64_t kPanel = 64;

/// Floats the packed copy of a K x N operand takes (N rounded up to panels).
inline int64_t packed_size(int64_t K, int64_t N) { return (N + kPanel - 1) / kPanel * kPanel * K; }

/// Packs B (K x N, element (k, n) at src[k * sk + n * sn]) into panels of
/// kPanel columns, each panel K rows of kPanel contiguous values, zero-padded.
void pack_b(const float* src, int64_t sk, int64_t sn, int64_t K, int64_t N, float* dst);

/// c (M x N, row stride ldc) = a (M x K, row stride lda) @ B, or += when
/// accumulate; B as packed by pack_b. Runs on the calling thread.
void gemm_packed(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* packed, float* c,
                 int64_t ldc, bool accumulate);

}  // namespace flambeau::cpu::rnn_avx512
