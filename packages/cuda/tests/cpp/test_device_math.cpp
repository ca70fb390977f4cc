// Note [CUDA index math] on the host: the offset calculator, the reduction
// split and the random draws of flambeau_cuda/device_math.h (the code the CUDA
// kernels run) against core's CPU kernels: copy (contiguous), sum over dims
// and the counter-based generator (uniform_).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "flambeau/ops.h"
#include "flambeau/random.h"
#include "flambeau_cuda/device_math.h"
#include "testing.h"

using namespace flambeau;
namespace fcu = flambeau::cuda;

namespace {

struct View {
  Shape sizes;
  Shape strides;
  int64_t offset;
};

/// Random views of a storage of `storage_numel` elements: any dims (0-6),
/// sizes 1-4, strides 0 (broadcast), positive, permuted, with an offset.
std::vector<View> random_views(int count, uint64_t seed, int64_t& storage_numel) {
  std::mt19937_64 rng(seed);
  std::vector<View> views;
  storage_numel = 1;
  for (int v = 0; v < count; ++v) {
    View view;
    const int ndim = static_cast<int>(rng() % 7);
    int64_t extent = 0;
    for (int d = 0; d < ndim; ++d) {
      view.sizes.push_back(1 + static_cast<int64_t>(rng() % 4));
      const int kind = static_cast<int>(rng() % 4);
      view.strides.push_back(kind == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 7));
      extent += (view.sizes.back() - 1) * view.strides.back();
    }
    view.offset = static_cast<int64_t>(rng() % 5);
    storage_numel = std::max(storage_numel, view.offset + extent + 1);
    views.push_back(std::move(view));
  }
  return views;
}

template <int N>
fcu::OffsetCalculator<N> calc_of(const Shape& sizes, const Shape (&strides)[N]) {
  fcu::OffsetCalculator<N> c;
  c.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = sizes[static_cast<size_t>(d)];
    for (int k = 0; k < N; ++k) c.strides[k][d] = strides[k][static_cast<size_t>(d)];
  }
  return c;
}

Tensor iota(int64_t n) {  // float64 0, 1, ..., n-1: each element holds its own offset
  return op::arange(Scalar(0), Scalar(n), Scalar(1), ScalarType::Float64, Device(DeviceType::CPU));
}

}  // namespace

TEST_CASE("OffsetCalculator gives the offsets core's CPU copy reads, in the same order") {
  int64_t storage_numel = 0;
  const auto views = random_views(200, 7, storage_numel);
  const Tensor base = iota(storage_numel);
  for (const View& v : views) {
    const Tensor view = op::as_strided(base, v.sizes, v.strides, v.offset);
    const Tensor packed = op::contiguous(view, MemoryFormat::Contiguous);
    const double* expected = packed.data<double>();
    const Shape strides[1] = {v.strides};
    auto calc = calc_of<1>(v.sizes, strides);
    auto coalesced = calc;
    fcu::coalesce(coalesced);
    CHECK(coalesced.ndim <= calc.ndim);
    for (int64_t i = 0; i < view.numel(); ++i) {
      const int64_t off = v.offset + (calc.ndim ? calc.get0(i) : 0);
      REQUIRE(static_cast<double>(off) == expected[i]);
      // Coalescing changes the dims walked, never the offsets.
      REQUIRE(v.offset + (coalesced.ndim ? coalesced.get0(i) : 0) == off);
    }
  }
}

TEST_CASE("OffsetCalculator<2> walks a destination and a broadcast source together") {
  // dst (2, 3, 4) transposed in memory, src (3, 1) broadcast: the pairs core's copy_ makes.
  const Shape sizes{2, 3, 4};
  const Tensor dst_base = iota(24);
  const Tensor dst = op::as_strided(dst_base, sizes, Shape{1, 8, 2}, 0);
  const Tensor src = op::as_strided(iota(3), Shape{3, 1}, Shape{1, 1}, 0);
  const Shape strides[2] = {Shape{1, 8, 2}, Shape{0, 1, 0}};  // src broadcast to dst's shape
  auto calc = calc_of<2>(sizes, strides);
  fcu::coalesce(calc);
  Tensor out = op::contiguous(dst, MemoryFormat::Contiguous);
  op::copy_(out, src);  // core: out[i, j, k] = src[j, 0]
  const Tensor dst_offsets = op::contiguous(dst, MemoryFormat::Contiguous);
  for (int64_t i = 0; i < 24; ++i) {
    int64_t off[2];
    calc.get(i, off);
    REQUIRE(static_cast<double>(off[0]) == dst_offsets.data<double>()[i]);
    REQUIRE(static_cast<double>(off[1]) == out.data<double>()[i]);
  }
}

TEST_CASE("ReduceSplit sums what core's sum over dims sums") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 60; ++trial) {
    int64_t storage_numel = 0;
    const View v = random_views(1, 100 + static_cast<uint64_t>(trial), storage_numel)[0];
    Tensor base = iota(storage_numel);
    for (int64_t i = 0; i < storage_numel; ++i) base.data<double>()[i] = u(rng);
    const Tensor view = op::as_strided(base, v.sizes, v.strides, v.offset);
    const int ndim = static_cast<int>(v.sizes.size());
    if (ndim == 0) continue;
    bool reduced[fcu::kMaxDims] = {};
    Shape dims;
    for (int d = 0; d < ndim; ++d)
      if (rng() % 2) {
        reduced[d] = true;
        dims.push_back(d);
      }
    if (dims.empty()) {
      reduced[0] = true;
      dims.push_back(0);
    }
    const Tensor expected =
        op::contiguous(op::sum(view, IntArrayRef(dims), false, std::nullopt), MemoryFormat::Contiguous);
    const auto split = fcu::ReduceSplit::make(ndim, v.sizes.data(), v.strides.data(), reduced);
    REQUIRE(split.num_outputs == expected.numel());
    const double* data = base.data<double>() + v.offset;
    for (int64_t o = 0; o < split.num_outputs; ++o) {
      double acc = 0;
      for (int64_t r = 0; r < split.reduce_size; ++r) acc += data[split.offset(o, r)];
      REQUIRE(acc == doctest::Approx(expected.data<double>()[o]).epsilon(1e-12));
    }
  }
}

TEST_CASE("draw and to_unit are core's generator: uniform_ gives the same numbers") {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{67280421310721ULL}, ~uint64_t{0}})
    for (uint64_t counter : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, ~uint64_t{0} - 1})
      REQUIRE(fcu::draw(seed, counter) == Generator::draw(seed, counter));
  Generator gen(42);
  Tensor t = fbtest::make_tensor(Shape{1000}, ScalarType::Float64);
  op::uniform_(t, -2.0, 3.0, &gen);
  for (int64_t i = 0; i < 1000; ++i) {
    const double expected = -2.0 + 5.0 * fcu::to_unit(fcu::draw(42, static_cast<uint64_t>(i)));
    REQUIRE(t.data<double>()[i] == expected);
  }
}
