// The bfloat16 / float16 GEMM driver (Note [Low-precision GEMM] in lowp_gemm.h).
#include "cpu/linalg/lowp_gemm.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/amx.h"
#include "cpu/elementwise/half_convert.h"
#include "cpu/linalg/gemm.h"
#include "flambeau/half.h"
#include "flambeau/parallel.h"
#include "settings.h"

namespace flambeau::cpu {

FB_DEFINE_DISPATCH(bf16_tiles_stub);
FB_REGISTER_NO_DISPATCH(bf16_tiles_stub, base);
FB_REGISTER_NO_DISPATCH(bf16_tiles_stub, avx2);
FB_DEFINE_DISPATCH(bf16_amx_tiles_stub);
FB_REGISTER_NO_DISPATCH(bf16_amx_tiles_stub, base);
FB_REGISTER_NO_DISPATCH(bf16_amx_tiles_stub, avx2);
FB_DEFINE_DISPATCH(bf16_amx_tiles_t_stub);
FB_REGISTER_NO_DISPATCH(bf16_amx_tiles_t_stub, base);
FB_REGISTER_NO_DISPATCH(bf16_amx_tiles_t_stub, avx2);
FB_DEFINE_DISPATCH(bf16_pack_stub);
FB_REGISTER_NO_DISPATCH(bf16_pack_stub, base);
FB_REGISTER_NO_DISPATCH(bf16_pack_stub, avx2);

namespace {

constexpr int64_t kPanel = 32;
constexpr int64_t kRows = 8;      // rows of a vdpbf16ps tile
constexpr int64_t kAmxRows = 32;  // rows of an AMX tile

bool cpu_has_avx512bf16() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has;
}

// Element (r, c) of matrix `batch` of a 2-D or 3-D tensor, any strides.
struct StridedMatrix {
  const uint16_t* base;
  int64_t sb, s0, s1;
  StridedMatrix(const Tensor& t, bool batched)
      : base(static_cast<const uint16_t*>(t.data_ptr())),
        sb(batched ? t.strides()[0] : 0),
        s0(t.strides()[t.dim() - 2]),
        s1(t.strides()[t.dim() - 1]) {}
  const uint16_t* at(int64_t batch) const { return base + batch * sb; }
  StridedMatrix transposed() const {
    StridedMatrix t = *this;
    std::swap(t.s0, t.s1);
    return t;
  }
};

template <class T>
float to_float(uint16_t bits) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return detail::bf16_bits_to_fp32(bits);
  else
    return detail::fp16_bits_to_fp32(bits);
}

// The fallback: float32 copies, the float32 GEMM (its rows starting from the bias), one rounding back.
// An operand whose rows or columns are contiguous is widened a run at a time by the vector converters
// (core's casts) and handed to the GEMM as stored, transposed or not; any other stride, one element at a
// time. The copies hold the same values either way, so the products do not depend on the layout.
template <class T>
void via_float32(const StridedMatrix& A, const StridedMatrix& B, const float* bias, uint16_t* out,
                 int64_t batch, int64_t n, int64_t k, int64_t m) {
  const HalfConvert& hc = half_convert();
  const auto widen = std::is_same_v<T, BFloat16> ? hc.bf16_to_f32 : hc.f16_to_f32;
  const auto narrow = std::is_same_v<T, BFloat16> ? hc.f32_to_bf16 : hc.f32_to_f16;
  // op(X) (rows x cols, strides s0, s1) into dst as a float32 matrix the GEMM reads: returns (transposed,
  // leading dimension).
  const auto copy = [&](const uint16_t* src, int64_t s0, int64_t s1, int64_t rows, int64_t cols, float* dst) {
    if (s1 == 1 || cols == 1) {  // rows contiguous: dst row-major
      for (int64_t r = 0; r < rows; ++r) widen(src + r * s0, dst + r * cols, cols);
      return std::pair<bool, int>{false, static_cast<int>(std::max<int64_t>(cols, 1))};
    }
    if (s0 == 1 || rows == 1) {  // columns contiguous: dst holds op(X)^T row-major, the GEMM transposes it
      for (int64_t c = 0; c < cols; ++c) widen(src + c * s1, dst + c * rows, rows);
      return std::pair<bool, int>{true, static_cast<int>(std::max<int64_t>(rows, 1))};
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = to_float<T>(src[r * s0 + c * s1]);
    return std::pair<bool, int>{false, static_cast<int>(std::max<int64_t>(cols, 1))};
  };
  std::vector<float> a(static_cast<size_t>(n * k)), b(static_cast<size_t>(k * m)),
      c(static_cast<size_t>(n * m));
  for (int64_t bi = 0; bi < batch; ++bi) {
    const auto [ta, lda] = copy(A.at(bi), A.s0, A.s1, n, k, a.data());
    const auto [tb, ldb] = copy(B.at(bi), B.s0, B.s1, k, m, b.data());
    gemm<float>(ta, tb, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), a.data(), lda, b.data(),
                ldb, c.data(), static_cast<int>(m), 1.0f, bias ? 1.0f : 0.0f, bias);
    narrow(c.data(), out + bi * n * m, n * m);
  }
}

// A buffer of n values (of a trivial type) left uninitialised (every element the kernels read is written
// first), on a cache-line boundary: a row of a panel, which the AMX tiles load, is one 64-byte line.
struct AlignedDelete {
  void operator()(void* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
template <class V>
std::unique_ptr<V[], AlignedDelete> scratch(int64_t n) {
  const size_t bytes = sizeof(V) * static_cast<size_t>(std::max<int64_t>(n, 1));
  return std::unique_ptr<V[], AlignedDelete>(static_cast<V*>(::operator new[](bytes, std::align_val_t{64})));
}

// dst[r * ldd + p] = src[p * lds + r] (uint16) for rows r < 8 and depths p < depth (a multiple of 8):
// 8 x 8 blocks, each 8 loads of 8 values, three rounds of unpacks and 8 stores.
void transpose_8x8_blocks(const uint16_t* src, int64_t lds, int64_t depth, uint16_t* dst, int64_t ldd) {
  for (int64_t p = 0; p < depth; p += 8) {
    __m128i r[8], t[8];
    for (int j = 0; j < 8; ++j) r[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (p + j) * lds));
    for (int j = 0; j < 4; ++j) {
      t[2 * j] = _mm_unpacklo_epi16(r[2 * j], r[2 * j + 1]);      // columns 0-3 of depths 2j, 2j+1
      t[2 * j + 1] = _mm_unpackhi_epi16(r[2 * j], r[2 * j + 1]);  // columns 4-7
    }
    for (int h = 0; h < 2; ++h) {  // h: columns 0-3 or 4-7
      const __m128i a0 = _mm_unpacklo_epi32(t[h], t[2 + h]), a1 = _mm_unpackhi_epi32(t[h], t[2 + h]);
      const __m128i b0 = _mm_unpacklo_epi32(t[4 + h], t[6 + h]), b1 = _mm_unpackhi_epi32(t[4 + h], t[6 + h]);
      uint16_t* d = dst + 4 * h * ldd + p;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm_unpacklo_epi64(a0, b0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + ldd), _mm_unpackhi_epi64(a0, b0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * ldd), _mm_unpacklo_epi64(a1, b1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * ldd), _mm_unpackhi_epi64(a1, b1));
    }
  }
}

// The AVX512-BF16 and AMX routes: pack op(A) row-major with depth kk (k or more, even, zero-padded)
// and op(B) into pair panels of that depth; `tiles` takes `rows` rows of C at a time and writes them into
// out with row stride ldc (m; n for bf16_amx_tiles_t, which writes C^T).
void bf16_packed(Bf16TilesFn tiles, int64_t rows, int64_t kk, const StridedMatrix& A, const StridedMatrix& B,
                 const float* bias, uint16_t* out, int64_t batch, int64_t n, int64_t k, int64_t m,
                 int64_t ldc) {
  const int64_t panels = (m + kPanel - 1) / kPanel;
  // Rows of op(A) already in the layout the kernel reads (contiguous, even depth) are not copied.
  const bool a_in_place = A.s1 == 1 && kk == k;
  const auto ap = scratch<uint16_t>(a_in_place ? 0 : n * kk), bp = scratch<uint16_t>(panels * kk * kPanel);
  const int64_t row_blocks = (n + rows - 1) / rows;
  for (int64_t bi = 0; bi < batch; ++bi) {
    const uint16_t* pa = A.at(bi);
    const uint16_t* pb = B.at(bi);
    // The packing is split over the threads too (rows of op(A), panels of op(B)): at the MLP's sizes
    // it is as long as the products.
    const int64_t row_grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(kk, 1));
    if (!a_in_place)
      parallel_for(0, n, row_grain, [&](int64_t i0, int64_t i1) {
        if (A.s1 == 1) {
          for (int64_t i = i0; i < i1; ++i)
            std::memcpy(ap.get() + i * kk, pa + i * A.s0, static_cast<size_t>(k) * sizeof(uint16_t));
        } else {
          // Strided rows. A transposed operand (grad_weight's g^T, A.s0 == 1): 8 x 8 blocks transposed
          // in SSE registers; the rest (and other strides): blocks of 16 rows, each read along its stored
          // rows and written down the block's columns.
          int64_t i_rest = i0;
          if (A.s0 == 1) {
            const int64_t k8 = k / 8 * 8;
            for (; i_rest + 8 <= i1; i_rest += 8) {
              transpose_8x8_blocks(pa + i_rest, A.s1, k8, ap.get() + i_rest * kk, kk);
              for (int64_t p = k8; p < k; ++p)
                for (int64_t i = i_rest; i < i_rest + 8; ++i) ap[i * kk + p] = pa[i + p * A.s1];
            }
          }
          constexpr int64_t kBlock = 16;
          for (int64_t ib = i_rest; ib < i1; ib += kBlock) {
            const int64_t ie = std::min(i1, ib + kBlock);
            for (int64_t p = 0; p < k; ++p) {
              const uint16_t* src = pa + p * A.s1;
              uint16_t* dst = ap.get() + p;
              for (int64_t i = ib; i < ie; ++i) dst[i * kk] = src[i * A.s0];
            }
          }
        }
        if (kk != k)
          for (int64_t i = i0; i < i1; ++i)
            std::fill(ap.get() + i * kk + k, ap.get() + (i + 1) * kk, uint16_t{0});
      });
    // bp[panel][pair][column][2]: the pair layout vdpbf16ps reads, written in order.
    const int64_t panel_grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(kk * kPanel, 1));
    const Bf16PackFn pack = bf16_pack_stub.get();
    parallel_for(0, panels, panel_grain, [&](int64_t q0, int64_t q1) {
      for (int64_t panel = q0; panel < q1; ++panel) {
        uint16_t* dst = bp.get() + panel * kk * kPanel;
        const int64_t j0 = panel * kPanel, width = std::min(kPanel, m - j0);
        // Row-major and transposed op(B) (linear's W^T): the AVX-512 copies; other strides: value by value.
        // Pairs past the depth (the AMX route's padding) are zeros.
        const int64_t pairs = (k + 1) / 2;
        std::fill(dst + pairs * 2 * kPanel, dst + kk * kPanel, uint16_t{0});
        if (pack && pack(pb, B.s0, B.s1, k, j0, width, dst)) continue;
        for (int64_t pair = 0; pair < pairs; ++pair, dst += 2 * kPanel) {
          const int64_t r = 2 * pair;
          const uint16_t* row0 = pb + r * B.s0 + j0 * B.s1;
          const uint16_t* row1 = r + 1 < k ? row0 + B.s0 : nullptr;
          for (int64_t c = 0; c < width; ++c) {
            dst[2 * c] = row0[c * B.s1];
            dst[2 * c + 1] = row1 ? row1[c * B.s1] : uint16_t{0};
          }
          for (int64_t c = width; c < kPanel; ++c) dst[2 * c] = dst[2 * c + 1] = 0;
        }
      }
    });
    uint16_t* po = out + bi * n * m;
    const uint16_t* a_rows = a_in_place ? pa : ap.get();
    const int64_t lda = a_in_place ? A.s0 : kk;
    const int64_t tiles_total = panels * row_blocks;
    const double macs_per_tile = double(rows) * double(kPanel) * double(kk);
    const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(double(1 << 17) / macs_per_tile));
    parallel_for(0, tiles_total, grain, [&](int64_t t0, int64_t t1) {
      // Panel-major: consecutive tiles share a panel.
      for (int64_t t = t0; t < t1;) {
        const int64_t panel = t / row_blocks, rb0 = t % row_blocks;
        const int64_t rb1 = std::min(row_blocks, rb0 + (t1 - t));
        tiles(rb0 * rows, std::min(n, rb1 * rows), panel, panel + 1, kk, m, a_rows, lda, bp.get(), bias, po,
              ldc);
        t += rb1 - rb0;
      }
    });
  }
}

}  // namespace

bool bf16_gemm_kernel_available() { return bf16_tiles_stub.get() != nullptr && cpu_has_avx512bf16(); }

void lowp_matmul_into(const Tensor& a, const Tensor& b, Tensor& out, const Tensor* bias) {
  const int64_t nd = a.dim();
  const bool batched = nd == 3;
  const int64_t batch = batched ? a.sizes()[0] : 1;
  const int64_t n = a.sizes()[nd - 2], k = a.sizes()[nd - 1], m = b.sizes()[nd - 1];
  const StridedMatrix A(a, batched), B(b, batched);
  auto* o = static_cast<uint16_t*>(out.data_ptr());
  const bool bf16 = a.dtype() == ScalarType::BFloat16;
  if (out.numel() == 0) return;
  // The bias widened to float32 (exact), zero-padded to whole panels of the kernel.
  std::vector<float> bias32;
  if (bias) {
    bias32.assign(static_cast<size_t>((m + kPanel - 1) / kPanel * kPanel), 0.0f);
    const auto* pb = static_cast<const uint16_t*>(bias->data_ptr());
    const int64_t sb = bias->strides()[0];
    for (int64_t j = 0; j < m; ++j)
      bias32[j] = bf16 ? to_float<BFloat16>(pb[j * sb]) : to_float<Half>(pb[j * sb]);
  }
  const float* bias_f = bias ? bias32.data() : nullptr;
  if (k == 0) {  // no products: each row is the bias (exact in the dtype), or zeros
    for (int64_t r = 0; r < batch * n; ++r)
      for (int64_t j = 0; j < m; ++j)
        o[r * m + j] =
            bias ? static_cast<const uint16_t*>(bias->data_ptr())[j * bias->strides()[0]] : uint16_t{0};
    return;
  }
  const Bf16TilesFn amx_tiles = bf16_amx_tiles_stub.get();
  if (bf16 && bf16_gemm_kernel_available() && amx_tiles && n >= 16 && settings::bf16_amx() && amx_usable()) {
    // AMX: the depth in whole steps of amx_step_pairs pairs, padded to steps of 16 where those are short.
    int64_t kp = (k + 1) / 2;
    if (kp > 16 && amx_step_pairs(kp) < 8) kp = (kp + 15) / 16 * 16;
    // A transposed op(B) wider than op(A) has rows (linear's W^T, with fewer samples than out_features):
    // C^T = op(B)^T op(A)^T, op(B)^T's rows read in place and the narrower op(A)^T packed instead of op(B)
    // (Note [Low-precision GEMM]).
    const Bf16TilesFn amx_tiles_t = bf16_amx_tiles_t_stub.get();
    if (amx_tiles_t && B.s0 == 1 && 2 * kp == k && n < m && m % 16 == 0)
      bf16_packed(amx_tiles_t, kAmxRows, k, B.transposed(), A.transposed(), bias_f, o, batch, m, k, n, m);
    else
      bf16_packed(amx_tiles, kAmxRows, 2 * kp, A, B, bias_f, o, batch, n, k, m, m);
  } else if (bf16 && bf16_gemm_kernel_available()) {
    bf16_packed(bf16_tiles_stub.get(), kRows, (k + 1) / 2 * 2, A, B, bias_f, o, batch, n, k, m, m);
  } else if (bf16) {
    via_float32<BFloat16>(A, B, bias_f, o, batch, n, k, m);
  } else {
    via_float32<Half>(A, B, bias_f, o, batch, n, k, m);
  }
}

}  // namespace flambeau::cpu
