// Note [CUDA scans] on the host: the row scan of flambeau_cuda/scan_math.h
// (what each CUDA thread runs) against core's CPU cumsum and cumprod:
// float32/float64 (double accumulation), int64/int32 (wrapping), many lengths.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "flambeau/ops.h"
#include "flambeau_cuda/scan_math.h"
#include "testing.h"

using namespace flambeau;
namespace fcu = flambeau::cuda;

namespace {

template <class T>
void check(ScalarType dt, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t n : {1, 2, 7, 64, 1000}) {
    Tensor x = zeros(Shape{n}, dt, Device(DeviceType::CPU));
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        x.data<T>()[i] = static_cast<T>(std::uniform_real_distribution<double>(0.5, 1.5)(rng));
      else
        x.data<T>()[i] = static_cast<T>(static_cast<int64_t>(rng() % 2000001) - 1000000);
    }
    for (bool product : {false, true}) {
      const Tensor expected = product ? op::cumprod(x, 0, dt) : op::cumsum(x, 0, dt);
      std::vector<T> y(static_cast<size_t>(n));
      fcu::scan_row(x.data<T>(), y.data(), n, product);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T>)
          REQUIRE(static_cast<double>(y[static_cast<size_t>(i)]) ==
                  doctest::Approx(static_cast<double>(expected.data<T>()[i]))
                      .epsilon(sizeof(T) == 4 ? 1e-5 : 1e-12));
        else
          REQUIRE(y[static_cast<size_t>(i)] == expected.data<T>()[i]);
      }
    }
  }
}

}  // namespace

TEST_CASE("scan math: a row scanned as core's CPU cumsum and cumprod") {
  check<float>(ScalarType::Float32, 1);
  check<double>(ScalarType::Float64, 2);
  check<int64_t>(ScalarType::Int64, 3);
  check<int32_t>(ScalarType::Int32, 4);
}
