#pragma once
// Note [Low-precision GEMM]
// mm/bmm/matmul (and linear, through matmul) on bfloat16 and float16 operands: float32
// accumulation, one rounding of each result to the operands' dtype (as PyTorch).
// - bfloat16 on a CPU with AVX512-BF16 (vdpbf16ps: 2 bf16 products added into each float32
//   lane per instruction): op(A) is read in place when its rows are contiguous and its depth even,
//   else copied row-major with its depth padded to even; op(B) is copied into
//   panels of 32 columns in the instruction's pair layout (lane j of pair p holds B[2p, j] and
//   B[2p+1, j]), zero-padded (row-major or transposed op(B) by whole-register word permutations
//   and 16 x 16 transposes of pairs, bf16_pack_stub; other strides by a loop); the kernel
//   (lowp_gemm_avx512.cpp) holds 8 rows x 32 columns of C in 16 zmm accumulators, and the tiles
//   (panel-major, so a panel stays in cache while the row blocks pass over it) are split over the
//   threads.
// - bfloat16 on a CPU with AMX-BF16 that Linux lets the process use (amx.h), with
//   backends.cpu.bf16_amx on (the default) and at least 16 rows: the same panels are the right
//   operand tdpbf16ps reads (a tile row is 16 columns of a pair, 64 bytes), and op(A)'s rows, read
//   in place or packed as above, are its left tiles of 16 rows x kc pairs. The depth runs in steps
//   of kc pairs, the largest divisor of the pairs up to 16 (amx_step_pairs, amx.h); where that is below 8
//   (a prime number of pairs...) the depth is padded with zeros to whole steps of 16 pairs, in both
//   operands (0 * 0: no NaN from an infinity). The tiles (lowp_gemm_avx512.cpp) hold 32 rows x 32
//   columns of C in four float32 tiles started from the bias, stored and rounded once; the last
//   rows (below 16) go to the vdpbf16ps tiles. The sums differ from vdpbf16ps' only by float32
//   summation order. A transposed op(B) wider than op(A) has rows (linear's W^T with fewer samples
//   than out_features, a multiple of 16 of them, an even depth needing no padding) is multiplied as
//   C^T = op(B)^T op(A)^T: op(B)^T's rows (W's) read in place and the narrower op(A)^T packed
//   instead of op(B), the tiles started from each row's bias and written back by 16 x 16 transposes
//   of the float32 sums before the one rounding (bf16_amx_tiles_t_stub). The MLP's forward
//   784 -> 512 and 512 -> 512 at 128 samples: 320 -> 290 us thread CPU time (one thread).
// - otherwise (float16, or a CPU without AVX512-BF16, or a capability capped below AVX-512):
//   both operands converted to float32, the float32 GEMM (gemm.h), the result rounded back.
// The instruction rounds each pair's sum like float32 arithmetic, so the result is that of a
// float32 GEMM of the same (already low-precision) values, up to summation order.
// - A bias row (linear, addmm's use in linear): the float32 accumulators start from the bias, so
//   out = round(x @ W^T + b) with one rounding, as PyTorch's bf16 addmm (beta = 1 on a float32
//   accumulation), and no second pass over the output.
#include <cstdint>

#include "../dispatch/dispatch_stub.h"
#include "flambeau/tensor.h"

namespace flambeau::cpu {

/// out[i] = a[i] @ b[i] (+ bias) for bfloat16 or float16 a (B, n, k) or (n, k), b likewise, any
/// strides; out contiguous of a's dtype; bias, when given, of a's dtype with b's last size elements
/// (any stride), added to every row before the one rounding. k may be 0 (out = bias or zeros).
void lowp_matmul_into(const Tensor& a, const Tensor& b, Tensor& out, const Tensor* bias = nullptr);

// Note [bfloat16 linear backward]
// _linear_backward on bfloat16 operands (autocast's linear backward): grad_input = g @ W and grad_weight =
// g^T @ x by the GEMM above (each rounded once from float32 sums, as PyTorch's bf16 mm), grad_bias = g's
// column sums in double rounded once. With two threads or more and both products asked for, they run as the
// two tasks of one parallel_for, each product serial on its thread (the weight's task also sums grad_bias),
// instead of each product split over the threads in turn: one fork and one join instead of three of each per
// product (the packing of each operand and the tiles).
/// linear's gradients for bfloat16 grad (n, out_f), input (n, in_f) and weight (out_f, in_f), any strides,
/// into the contiguous bfloat16 gi, gw, gb (each null when not asked for).
void lowp_linear_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, Tensor* gi,
                          Tensor* gw, Tensor* gb);

/// Whether the AVX512-BF16 kernel runs bfloat16 products now (the CPU has it and the capability
/// setting allows AVX-512) (flambeau_core._C._bf16_gemm_kernel(), for tests and benchmarks).
FB_API bool bf16_gemm_kernel_available();

/// c rows [r0, r1) x panels [p0, p1) of 32 columns = ap @ bp (+ bias): ap row-major (depth kk,
/// even; row stride lda, any), bp the pair panels of Note [Low-precision GEMM]; c bf16 bits, row
/// stride ldc, n columns; bias null or float32 with one value per column, padded with zeros to
/// whole panels.
using Bf16TilesFn = void (*)(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t kk, int64_t n,
                             const uint16_t* ap, int64_t lda, const uint16_t* bp, const float* bias,
                             uint16_t* c, int64_t ldc);
FB_DECLARE_DISPATCH(Bf16TilesFn, bf16_tiles_stub);

/// The bf16_tiles_stub's AMX counterpart (Note [Low-precision GEMM]): the depth in steps of
/// amx_step_pairs(kk / 2) pairs (amx.h); rows past a multiple of 16 are left to the vdpbf16ps tiles.
/// Runs only where amx_usable().
FB_DECLARE_DISPATCH(Bf16TilesFn, bf16_amx_tiles_stub);

/// C^T on AMX, for a transposed op(B) wider than op(A) has rows: rows [r0, r1) of C' = op(B)^T op(A)^T
/// (a multiple of 16; op(B)^T's rows read in place as ap) x panels [p0, p1) of its n columns (op(A)^T's
/// pair panels, bp), written transposed: C'(i, j) to c[j * ldc + i]; bias null or float32 with one value
/// per row of C' (per column of C). Runs only where amx_usable().
FB_DECLARE_DISPATCH(Bf16TilesFn, bf16_amx_tiles_t_stub);

/// One panel of op(B) in the pair layout (dst[pair][column][2], pairs (k + 1) / 2, 32 columns; zeros
/// past `width` columns and past depth k) from the columns [j0, j0 + width) of op(B), element (r, c)
/// at pb[r * s0 + c * s1]. Takes the two layouts the GEMM's callers give (row-major op(B), s1 == 1,
/// and transposed, s0 == 1: linear's W^T) and returns false for any other, which the caller packs.
using Bf16PackFn = bool (*)(const uint16_t* pb, int64_t s0, int64_t s1, int64_t k, int64_t j0, int64_t width,
                            uint16_t* dst);
FB_DECLARE_DISPATCH(Bf16PackFn, bf16_pack_stub);

}  // namespace flambeau::cpu
