// Note [CUDA convolution] on the host: the pooling index math of
// flambeau_cuda/conv_math.h (the code the CUDA pooling kernels run per output
// or input element) against core's CPU kernels: max_pool2d (values and
// indices, dilation, ceil_mode, padding, NaN and -inf), its backward through
// the indices, avg_pool2d forward/backward (count_include_pad,
// divisor_override, ceil_mode) and adaptive_avg_pool2d forward/backward
// (shrinking and growing).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "flambeau/ops.h"
#include "flambeau/pool_shape.h"
#include "flambeau_cuda/conv_math.h"
#include "testing.h"

using namespace flambeau;
namespace fcu = flambeau::cuda;

namespace {

Tensor random_tensor(IntArrayRef shape, std::mt19937_64& rng, bool specials = false) {
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t = zeros(shape, ScalarType::Float64, Device(DeviceType::CPU));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(rng);
    if (specials && rng() % 11 == 0) v = rng() % 2 ? std::numeric_limits<double>::quiet_NaN() : -INFINITY;
    if (!specials && rng() % 5 == 0) v = 0.25;  // ties: the first maximum wins
    t.data<double>()[i] = v;
  }
  return t;
}

int64_t r(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

fcu::ConvGeometry geometry(const pool::Pool2d& p) {  // as src/pool.cpp
  fcu::ConvGeometry g;
  g.Hb = p.H, g.Wb = p.W, g.Hs = p.OH, g.Ws = p.OW;
  g.kh = p.kH, g.kw = p.kW, g.sh = p.sH, g.sw = p.sW, g.ph = p.pH, g.pw = p.pW, g.dh = p.dH, g.dw = p.dW;
  return g;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("pool math: max_pool2d values and indices, and its backward, as core's CPU kernels") {
  std::mt19937_64 rng(31);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Shape k{r(rng, 1, 4), r(rng, 1, 4)}, s{r(rng, 1, 3), r(rng, 1, 3)};
    const Shape p{r(rng, 0, k[0] / 2), r(rng, 0, k[1] / 2)}, d{r(rng, 1, 2), r(rng, 1, 2)};
    const bool ceil_mode = rng() % 2;
    const Shape shape{r(rng, 1, 2), r(rng, 1, 3), r(rng, 1, 9), r(rng, 1, 9)};
    pool::Pool2d pg;
    try {
      pg = pool::check_pool2d(shape, k, s, p, d, ceil_mode, "max_pool2d");
    } catch (const ValueError&) {
      continue;
    }
    ++checked;
    const Tensor x = random_tensor(shape, rng, trial % 2 == 0);
    const auto [vals, idx] = op::max_pool2d_with_indices(x, k, s, p, d, ceil_mode);
    const fcu::ConvGeometry g = geometry(pg);
    const int64_t op = g.small_hw();
    for (int64_t i = 0; i < vals.numel(); ++i) {
      int64_t arg = -1;
      const double v = fcu::max_pool_window(g, x.data<double>() + (i / op) * g.big_hw(), (i % op) / g.Ws,
                                            (i % op) % g.Ws, &arg);
      REQUIRE(same(v, vals.data<double>()[i]));
      REQUIRE(arg == idx.data<int64_t>()[i]);
    }
    // Backward: the kernel's scatter through the indices (atomicAdd there).
    const Tensor grad = random_tensor(vals.sizes(), rng);
    // A dilated window with no element inside the image (core and PyTorch give -inf and the index of its
    // first position, past the plane) sends no gradient (Note [Empty pooling window]), on the CPU as on CUDA.
    const Tensor expected = op::max_pool_backward(grad, idx, shape);
    std::vector<double> gi(static_cast<size_t>(x.numel()), 0.0);
    for (int64_t i = 0; i < grad.numel(); ++i)
      if (idx.data<int64_t>()[i] < g.big_hw())
        gi[static_cast<size_t>((i / op) * g.big_hw() + idx.data<int64_t>()[i])] += grad.data<double>()[i];
    for (int64_t i = 0; i < x.numel(); ++i)
      REQUIRE(gi[static_cast<size_t>(i)] == doctest::Approx(expected.data<double>()[i]).epsilon(1e-12));
  }
  CHECK(checked > 150);
}

TEST_CASE("pool math: avg_pool2d forward and backward (gathered per input element) as core's CPU kernels") {
  std::mt19937_64 rng(37);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Shape k{r(rng, 1, 4), r(rng, 1, 4)}, s{r(rng, 1, 3), r(rng, 1, 3)};
    const Shape p{r(rng, 0, k[0] / 2), r(rng, 0, k[1] / 2)};
    const bool ceil_mode = rng() % 2, count_include_pad = rng() % 2;
    const std::optional<int64_t> divisor =
        rng() % 4 == 0 ? std::optional<int64_t>(r(rng, 1, 7)) : std::nullopt;
    const Shape shape{r(rng, 1, 2), r(rng, 1, 3), r(rng, 1, 9), r(rng, 1, 9)};
    pool::Pool2d pg;
    try {
      pg = pool::check_pool2d(shape, k, s, p, {}, ceil_mode, "avg_pool2d");
    } catch (const ValueError&) {
      continue;
    }
    ++checked;
    const Tensor x = random_tensor(shape, rng);
    const Tensor out = op::avg_pool2d(x, k, s, p, ceil_mode, count_include_pad, divisor);
    fcu::AvgPoolGeometry a;
    a.g = geometry(pg);
    a.count_include_pad = count_include_pad;
    a.divisor_override = divisor.value_or(0);
    const int64_t op = a.g.small_hw(), ip = a.g.big_hw();
    for (int64_t i = 0; i < out.numel(); ++i) {
      const double v = a.forward(x.data<double>() + (i / op) * ip, (i % op) / a.g.Ws, (i % op) % a.g.Ws);
      REQUIRE(v == doctest::Approx(out.data<double>()[i]).epsilon(1e-12));
    }
    const Tensor grad = random_tensor(out.sizes(), rng);
    const Tensor expected =
        op::avg_pool2d_backward(grad, shape, k, s, p, ceil_mode, count_include_pad, divisor);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = a.backward(grad.data<double>() + (i / ip) * op, (i % ip) / a.g.Wb, (i % ip) % a.g.Wb);
      REQUIRE(v == doctest::Approx(expected.data<double>()[i]).epsilon(1e-12));
    }
  }
  CHECK(checked > 150);
}

TEST_CASE("pool math: adaptive_avg_pool2d forward and backward as core's CPU kernels") {
  std::mt19937_64 rng(41);
  for (int trial = 0; trial < 200; ++trial) {
    const Shape shape{r(rng, 1, 3), r(rng, 1, 9), r(rng, 1, 9)};
    const Shape out_size{r(rng, 1, 11), r(rng, 1, 11)};  // smaller or larger than the input
    const Tensor x = random_tensor(shape, rng);
    const Tensor out = op::adaptive_avg_pool2d(x, out_size);
    fcu::ConvGeometry g;
    g.Hb = shape[1], g.Wb = shape[2], g.Hs = out_size[0], g.Ws = out_size[1];
    const int64_t op = g.small_hw(), ip = g.big_hw();
    for (int64_t i = 0; i < out.numel(); ++i) {
      const double v =
          fcu::adaptive_avg_window(g, x.data<double>() + (i / op) * ip, (i % op) / g.Ws, (i % op) % g.Ws);
      REQUIRE(v == doctest::Approx(out.data<double>()[i]).epsilon(1e-12));
    }
    const Tensor grad = random_tensor(out.sizes(), rng);
    const Tensor expected = op::adaptive_avg_pool2d_backward(grad, shape);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = fcu::adaptive_avg_backward(g, grad.data<double>() + (i / ip) * op, (i % ip) / g.Wb,
                                                  (i % ip) % g.Wb);
      REQUIRE(v == doctest::Approx(expected.data<double>()[i]).epsilon(1e-12));
    }
  }
}
