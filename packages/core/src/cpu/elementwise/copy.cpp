// CPU kernels: copy_ (broadcast, cast, any strides), clone, cast.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "half_convert.h"
#include "loops.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {

// Note [Transposed copy]
// A same-dtype copy whose two innermost (coalesced) dims are walked contiguously by opposite operands
// (x.t().contiguous(), a permute(0, 2, 1) made contiguous, a channels-last conversion) used to go
// through the iterator's row loop, which reads one operand with a large stride: one cache line per
// element, 1.2 ns an element (512 x 512 float32, 2 threads: 333 us, 3x PyTorch's). Instead the two
// dims are cut into square tiles (kTileBytes of a row each way), each copied through a buffer in L1
// (transpose_block); blocks of tiles (and the outer dims) are split over the threads: 60 us
// (benchmarks/ops_shape.py --only contiguous). The bits are moved as unsigned words of the dtype's size,
// so a NaN's payload or a complex value is copied as it is.
constexpr int64_t kTileBytes = 128;                       // one tile row of the source: two cache lines
constexpr int64_t kTransposedCopyMin = int64_t{1} << 12;  // below this, the row loop is as fast

struct Words16 {
  uint64_t lo, hi;
};

// Rows of the source's contiguous dim per tile: kTileBytes of them, at least 8.
template <class W>
constexpr int64_t tile_rows() {
  return std::max<int64_t>(8, kTileBytes / static_cast<int64_t>(sizeof(W)));
}

// One block (i1 in [r0, r1), at most tile_rows) of one 2-D plane, every i0: dst[i0 + i1 * dst1] <-
// src[i0 * src0 + i1] (strides in elements; dst contiguous along dim 0, src along dim 1). Square
// tiles go through a small buffer: the source's runs are read into its columns, then its rows are
// written out as the destination's runs. Written straight to the destination instead, a power-of-two
// row stride puts the tile's destination rows in the same few L1 sets (512 x 512 float32: 10x slower
// than 784 x 512).
template <class W>
void transpose_block(char* dst_c, const char* src_c, int64_t n0, int64_t r0, int64_t r1, int64_t dst1,
                     int64_t src0) {
  constexpr int64_t kT = tile_rows<W>();
  W buf[kT][kT];
  auto* dst = reinterpret_cast<W*>(dst_c);
  const auto* src = reinterpret_cast<const W*>(src_c);
  const int64_t rows = r1 - r0;
  for (int64_t a0 = 0; a0 < n0; a0 += kT) {
    const int64_t cols = std::min(kT, n0 - a0);
    for (int64_t c = 0; c < cols; ++c) {
      const W* s = src + (a0 + c) * src0 + r0;
      for (int64_t r = 0; r < rows; ++r) buf[r][c] = s[r];
    }
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + (r0 + r) * dst1 + a0, buf[r], cols * sizeof(W));
  }
}

// The copy of Note [Transposed copy] when `it` has that form (same dtypes checked by the caller);
// false otherwise.
template <class W>
bool transposed_copy_as(const TensorIterator& it) {
  const int64_t e = sizeof(W);
  const int64_t n0 = it.shape(0), n1 = it.shape(1);
  const int64_t dst1 = it.stride_bytes(1, 0), src0 = it.stride_bytes(0, 1);
  if (dst1 % e != 0 || src0 % e != 0) return false;
  constexpr int64_t tile = tile_rows<W>();
  const int64_t blocks = (n1 + tile - 1) / tile;
  // The outer dims (2..ndim-1): each task is one block of tile rows of one plane.
  int64_t planes = 1;
  for (int d = 2; d < it.ndim(); ++d) planes *= it.shape(d);
  const int64_t tasks = planes * blocks;
  // Note [Grain size]: about kGrainSize elements per chunk of tasks.
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, n0 * tile));
  parallel_for(0, tasks, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t plane = t / blocks;
      const int64_t block = t % blocks;
      char* d = it.data(0);
      const char* s = it.data(1);
      for (int dim = 2; dim < it.ndim(); ++dim) {
        const int64_t i = plane % it.shape(dim);
        plane /= it.shape(dim);
        d += i * it.stride_bytes(dim, 0);
        s += i * it.stride_bytes(dim, 1);
      }
      transpose_block<W>(d, s, n0, block * tile, std::min(n1, (block + 1) * tile), dst1 / e, src0 / e);
    }
  });
  return true;
}

bool try_transposed_copy(const TensorIterator& it) {
  if (it.ndim() < 2 || it.numel() < kTransposedCopyMin) return false;
  const int64_t e = static_cast<int64_t>(itemsize(it.dtype(0)));
  // dst contiguous along the inner dim, src along the next one and not along (nor broadcast over) the inner.
  if (it.stride_bytes(0, 0) != e || it.stride_bytes(1, 1) != e) return false;
  if (it.stride_bytes(0, 1) == e || it.stride_bytes(0, 1) <= 0 || it.stride_bytes(1, 0) <= 0) return false;
  switch (e) {
    case 1:
      return transposed_copy_as<uint8_t>(it);
    case 2:
      return transposed_copy_as<uint16_t>(it);
    case 4:
      return transposed_copy_as<uint32_t>(it);
    case 8:
      return transposed_copy_as<uint64_t>(it);
    case 16:
      return transposed_copy_as<Words16>(it);
    default:
      return false;
  }
}

// dst <- src elementwise (src broadcast to dst's shape, converted to dst's dtype).
void copy_into(Tensor& dst, const Tensor& src) {
  const Tensor* in[1] = {&src};
  TensorIterator it("copy_", &dst, dst.dtype(), in, src.dtype(), /*keep_dtype_mask=*/1);
  if (dst.dtype() == src.dtype() && try_transposed_copy(it)) return;
  visit_dtype_all(dst.dtype(), "copy_", [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    visit_dtype_all(src.dtype(), "copy_", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      it.for_each(
          [](char** d, const int64_t* s, int64_t n) {
            if constexpr (std::is_same_v<To, From>) {
              if (s[0] == sizeof(To) && s[1] == sizeof(To)) {
                std::memcpy(d[0], d[1], static_cast<size_t>(n) * sizeof(To));
                return;
              }
            } else if constexpr (std::is_same_v<From, float> && is_half_v<To>) {
              // Contiguous float32 -> 16-bit (autocast's casts): the CPU's conversion instructions
              // (half_convert.h), bit for bit the scalar rounding below.
              if (s[0] == 2 && s[1] == 4) {
                const cpu::HalfConvert& c = cpu::half_convert();
                (std::is_same_v<To, BFloat16> ? c.f32_to_bf16 : c.f32_to_f16)(
                    reinterpret_cast<const float*>(d[1]), reinterpret_cast<uint16_t*>(d[0]), n);
                return;
              }
            } else if constexpr (is_half_v<From> && std::is_same_v<To, float>) {
              if (s[0] == 4 && s[1] == 2) {
                const cpu::HalfConvert& c = cpu::half_convert();
                (std::is_same_v<From, BFloat16> ? c.bf16_to_f32 : c.f16_to_f32)(
                    reinterpret_cast<const uint16_t*>(d[1]), reinterpret_cast<float*>(d[0]), n);
                return;
              }
            }
            cpu::base::unary_loop<To, From>(d, s, n, [](From v) { return convert_element_as<To>(v); });
          },
          kMemoryBoundGrain);
    });
  });
}

Tensor& copy_cpu(Tensor& self, const Tensor& src) {
  const bool same = self.data_ptr() == src.data_ptr() && self.dtype() == src.dtype() &&
                    std::ranges::equal(self.sizes(), src.sizes()) &&
                    std::ranges::equal(self.strides(), src.strides());
  if (!same) copy_into(self, src);
  self.impl()->bump_version();
  return self;
}

// Note [Size overflow]: a broadcast (stride-0) view can have more elements
// than any buffer can hold; a copy of it must say so, naming the op.
Tensor clone_cpu(const Tensor& self, MemoryFormat memory_format) {
  shape_nbytes(self.sizes(), self.dtype(), "clone");
  Tensor out = empty_like_in(self, self.dtype(), memory_format);
  copy_into(out, self);
  return out;
}

Tensor cast_cpu(const Tensor& self, ScalarType dtype) {
  shape_nbytes(self.sizes(), dtype, "cast");
  Tensor out = op::empty(self.sizes(), dtype, self.device());
  copy_into(out, self);
  return out;
}

FB_REGISTER_KERNEL(op::copy_, CPU, copy_cpu);
FB_REGISTER_KERNEL(op::clone, CPU, clone_cpu);
FB_REGISTER_KERNEL(op::cast, CPU, cast_cpu);

}  // namespace
}  // namespace flambeau
