// Note [CUDA sort] on the host: the row sort of flambeau_cuda/sort_math.h
// (what each CUDA thread runs on its row) against core's CPU sort and topk:
// values and indices, ascending and descending, ties (stable), NaN, -0.0 and
// infinities, float32/float64/int64/int32/uint8/bool rows of many lengths.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "flambeau/ops.h"
#include "flambeau_cuda/sort_math.h"
#include "testing.h"

using namespace flambeau;
namespace fcu = flambeau::cuda;

namespace {

template <class T>
Tensor random_row(int64_t n, ScalarType dt, std::mt19937_64& rng) {
  Tensor t = zeros(Shape{n}, dt, Device(DeviceType::CPU));
  T* p = t.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      const int kind = static_cast<int>(rng() % 12);
      p[i] = kind == 0   ? std::numeric_limits<T>::quiet_NaN()
             : kind == 1 ? -T(0)
             : kind == 2 ? T(0)
             : kind == 3 ? std::numeric_limits<T>::infinity()
             : kind == 4 ? -std::numeric_limits<T>::infinity()
             : kind < 8  ? static_cast<T>(static_cast<int>(rng() % 5) - 2)  // ties
                         : static_cast<T>(std::uniform_real_distribution<double>(-3, 3)(rng));
    } else if constexpr (std::is_same_v<T, bool>) {
      p[i] = rng() % 2;
    } else if constexpr (std::is_signed_v<T>) {
      p[i] = static_cast<T>(static_cast<int64_t>(rng() % 7) - 3 +
                            (rng() % 9 == 0 ? std::numeric_limits<T>::min() / 2 : 0));
    } else {
      p[i] = static_cast<T>(rng() % 256);
    }
  }
  return t;
}

template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
  else
    return a == b;
}

template <class T>
void check_dtype(ScalarType dt, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t n : {1, 2, 3, 5, 8, 17, 32, 33, 100, 257}) {
    for (int rep = 0; rep < 4; ++rep) {
      const Tensor row = random_row<T>(n, dt, rng);
      std::vector<uint64_t> keys(static_cast<size_t>(2 * n));
      std::vector<int64_t> idx(static_cast<size_t>(2 * n)), out_idx(static_cast<size_t>(n));
      std::unique_ptr<T[]> out_buf(new T[static_cast<size_t>(n)]);
      T* out = out_buf.get();
      for (bool desc : {false, true}) {
        const auto [ev, ei] = op::sort(row, 0, desc, true);
        fcu::sort_row(row.data<T>(), n, desc, n, out, out_idx.data(), keys.data(), keys.data() + n,
                      idx.data(), idx.data() + n);
        for (int64_t j = 0; j < n; ++j) {
          REQUIRE(out_idx[static_cast<size_t>(j)] == ei.data<int64_t>()[j]);
          REQUIRE(same<T>(out[j], ev.data<T>()[j]));
        }
        const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1));
        const auto [tv, ti] = op::topk(row, k, 0, desc, true);
        fcu::sort_row(row.data<T>(), n, desc, k, out, out_idx.data(), keys.data(), keys.data() + n,
                      idx.data(), idx.data() + n);
        for (int64_t j = 0; j < k; ++j) {
          REQUIRE(out_idx[static_cast<size_t>(j)] == ti.data<int64_t>()[j]);
          REQUIRE(same<T>(out[j], tv.data<T>()[j]));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("sort math: a row sorted as core's CPU sort and topk (float32, float64)") {
  check_dtype<float>(ScalarType::Float32, 1);
  check_dtype<double>(ScalarType::Float64, 2);
}

TEST_CASE("sort math: integer and bool rows as core's CPU sort and topk") {
  check_dtype<int64_t>(ScalarType::Int64, 3);
  check_dtype<int32_t>(ScalarType::Int32, 4);
  check_dtype<uint8_t>(ScalarType::UInt8, 5);
  check_dtype<bool>(ScalarType::Bool, 6);
}
