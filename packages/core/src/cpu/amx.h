#pragma once
// The AMX-BF16 tiles shared by the bfloat16 convolutions (Note [bfloat16 convolution on AMX]) and the
// bfloat16 GEMM (Note [Low-precision GEMM]): whether this process may use them, the tile configuration
// of a panel, and a panel's float32 sums. The functions are compiled for AMX per function
// (FB_AMX_TARGET) and are run only where amx_usable() (and the setting backends.cpu.bf16_amx) says so;
// the templates are included by the AVX-512 kernel files only.
//
// A panel's tiles: tmm0-3 the float32 sums (16 rows x 16 outputs each: rows 0-15 / 16-31 by outputs
// 0-15 / 16-31), tmm4-5 the left operand's rows (16 rows x kc pairs of bfloat16, 4 * kc bytes a row),
// tmm6-7 kc pair rows of the right operand (16 outputs x 2 values, 64 bytes a row) for the two halves
// of 32 outputs: the pair layout vdpbf16ps reads too. tdpbf16ps adds 16 x 16 x kc pair products into
// a float32 tile, each pair's sum rounded like float32 arithmetic, so the sums differ from
// vdpbf16ps' only by float32 summation order.
//
// GCC 12's AVX-512 shuffle intrinsics pass an "undefined" vector that it then warns about once
// inlined (GCC bug 105593); the warnings point into the header, where they are switched off.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>

#define FB_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

namespace flambeau::cpu {

/// Whether this CPU has AMX-BF16 tiles and the kernel lets this process use them (Linux asks each
/// process to request the tile data state once, arch_prctl ARCH_REQ_XCOMP_PERM; a kernel or
/// hypervisor that refuses leaves the vdpbf16ps tiles). Checked once.
bool amx_usable();

/// Loads the panel configuration above on the calling thread, for kc pairs (1 to 16) per step.
void amx_configure(int64_t kc);

/// The pairs a step of the tiles takes over a depth of kp pairs (or runs of kp): the largest divisor of
/// kp up to 16 (16 for none).
inline int64_t amx_step_pairs(int64_t kp) {
  int64_t kc = kp > 0 && kp < 16 ? kp : 16;
  while (kp % kc != 0) --kc;
  return kc;
}

/// Releases the calling thread's tile state (after amx_configure, once its panels are done).
void amx_release();

/// The float32 sums of 16 * MR rows x 32 * NP outputs on AMX (MR * NP <= 2): over `steps` steps of
/// kc pairs (amx_configure(kc)), row r's pairs of step k at a + r * lda + as[k], the pair rows at
/// b + bs[k] + p * ldb (uint16 units; the second panel of 32 outputs 64 further). The sums start from
/// `init` (float32 [16 * MR][32]: the bias; null: zeros, tiles zeroed without a load) and are stored to
/// c, [16 * MR * NP][32] (the second panel as rows 16-31). Prefetch (NP == 1, the steps' pair rows
/// following each other, ldb = 64: the GEMM's panels): each step first asks for the next step's rows of
/// both operands in L1.
template <int MR, int NP = 1, bool Prefetch = false>
FB_AMX_TARGET void amx_panel(int64_t steps, const int64_t* as, const int64_t* bs, const uint16_t* a,
                             int64_t lda, const uint16_t* b, int64_t ldb, const float* init, float* c) {
  static_assert(MR * NP <= 2 && (!Prefetch || NP == 1));
  // GCC 12's tile intrinsics are asm statements that name no memory: the barriers keep the writes of
  // init before the loads, and the reads of c after the stores.
  __asm__ volatile("" ::: "memory");
  if (init) {
    _tile_loadd(0, init, 128);
    _tile_loadd(1, init + 16, 128);
    if constexpr (MR == 2 || NP == 2) {
      _tile_loadd(2, init + (MR == 2 ? 512 : 0), 128);
      _tile_loadd(3, init + (MR == 2 ? 528 : 16), 128);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (MR == 2 || NP == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  for (int64_t k = 0; k < steps; ++k) {
    const uint16_t* bt = b + bs[k];
    const uint16_t* at = a + as[k];
    if constexpr (Prefetch) {
      if (k + 1 < steps) {
        const char* an = reinterpret_cast<const char*>(a + as[k + 1]);
        for (int r = 0; r < 16 * MR; ++r) _mm_prefetch(an + r * 2 * lda, _MM_HINT_T0);
        const char* bn = reinterpret_cast<const char*>(b + bs[k + 1]);
        for (int64_t off = 0; off < 2 * (bs[k + 1] - bs[k]); off += 64) _mm_prefetch(bn + off, _MM_HINT_T0);
      }
    }
    _tile_loadd(6, bt, 2 * ldb);
    _tile_loadd(7, bt + 32, 2 * ldb);
    _tile_loadd(4, at, 2 * lda);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (MR == 2) {
      _tile_loadd(5, at + 16 * lda, 2 * lda);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    } else if constexpr (NP == 2) {
      _tile_loadd(6, bt + 64, 2 * ldb);
      _tile_loadd(7, bt + 96, 2 * ldb);
      _tile_dpbf16ps(2, 4, 6);
      _tile_dpbf16ps(3, 4, 7);
    }
  }
  _tile_stored(0, c, 128);
  _tile_stored(1, c + 16, 128);
  if constexpr (MR == 2 || NP == 2) {
    _tile_stored(2, c + 512, 128);
    _tile_stored(3, c + 528, 128);
  }
  __asm__ volatile("" ::: "memory");
}

/// Rounds rows x 32 float32 sums (row stride 32) to bfloat16 once, into c (row stride ldc) under the
/// masks of the two halves.
FB_AMX_TARGET inline void amx_round_rows(const float* sums, int64_t rows, uint16_t* c, int64_t ldc,
                                         const __mmask16* m) {
  for (int64_t r = 0; r < rows; ++r)
    for (int v = 0; v < 2; ++v)
      _mm256_mask_storeu_epi16(c + r * ldc + 16 * v, m[v],
                               (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(sums + r * 32 + 16 * v)));
}

}  // namespace flambeau::cpu
