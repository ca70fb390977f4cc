// Note [CUDA launcher on TensorIterator] on the host: the OffsetCalculator
// that flambeau-cuda's elementwise launcher builds from core's TensorIterator
// (flambeau_cuda/iterator_offsets.h) visits, for linear index i, exactly the
// operand elements core's CPU loop (TensorIterator::serial_for) visits i-th,
// and computing an op through it gives core's CPU result: broadcast (size-1
// dims), permuted, sliced (steps, offsets) and 0-stride (expanded) operands,
// promoted dtypes, in-place outputs and the where's 4 operands.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "flambeau/ops.h"
#include "flambeau/tensor_iterator.h"
#include "flambeau_cuda/iterator_offsets.h"
#include "testing.h"

using namespace flambeau;
namespace fcu = flambeau::cuda;

namespace {

Tensor random_storage(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-4, 4);
  Tensor t = op::arange(Scalar(0), Scalar(n), Scalar(1), ScalarType::Float64, Device(DeviceType::CPU));
  for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = u(rng);
  return t;
}

/// A float64 view of shape `shape` (or broadcastable to it) over its own
/// storage: per dim size 1 (broadcast) or full, a stride 0 (expanded) or a
/// positive one in a random dim order (permuted), a step of 1 or 2 and an
/// offset (sliced).
Tensor random_operand(const Shape& shape, std::mt19937_64& rng, bool allow_broadcast = true) {
  const size_t nd = shape.size();
  Shape sizes(shape), strides(nd, 0);
  std::vector<bool> expanded(nd, false);
  for (size_t d = 0; d < nd; ++d) {
    const int kind = allow_broadcast ? static_cast<int>(rng() % 6) : 5;
    if (kind == 0) sizes[d] = 1;
    if (kind == 1) expanded[d] = true;
  }
  std::vector<size_t> order(nd);
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  int64_t running = 1;
  for (size_t j = nd; j-- > 0;) {  // order[nd-1] innermost
    const size_t d = order[j];
    if (expanded[d]) continue;
    const int64_t step = 1 + static_cast<int64_t>(rng() % 2);
    strides[d] = running * step;
    running *= sizes[d] * step;
  }
  const int64_t offset = static_cast<int64_t>(rng() % 3);
  const Tensor base = random_storage(running + offset, rng);
  return op::as_strided(base, sizes, strides, offset);
}

Shape random_shape(std::mt19937_64& rng) {
  Shape s(rng() % 6);
  for (auto& x : s) x = 1 + static_cast<int64_t>(rng() % 4);
  return s;
}

/// The element pointers of every operand, in the order core's CPU loop visits them.
std::vector<std::vector<const char*>> cpu_visits(const TensorIterator& it) {
  std::vector<std::vector<const char*>> visits;
  it.serial_for(
      [&](char** data, const int64_t* strides, int64_t n) {
        for (int64_t j = 0; j < n; ++j) {
          std::vector<const char*> ptrs;
          for (int k = 0; k < it.ntensors(); ++k) ptrs.push_back(data[k] + j * strides[k]);
          visits.push_back(std::move(ptrs));
        }
      },
      0, it.numel());
  return visits;
}

/// The same pointers from the OffsetCalculator<N> of the iterator.
template <int N>
void check_same_visits(const TensorIterator& it) {
  const auto calc = fcu::offset_calculator<N>(it, "test");
  const auto visits = cpu_visits(it);
  REQUIRE(static_cast<int64_t>(visits.size()) == it.numel());
  for (int64_t i = 0; i < it.numel(); ++i) {
    int64_t off[N];
    calc.get(i, off);
    for (int k = 0; k < it.ntensors(); ++k)
      REQUIRE(it.data(k) + off[k] * static_cast<int64_t>(itemsize(it.dtype(k))) ==
              visits[static_cast<size_t>(i)][static_cast<size_t>(k)]);
  }
  if (it.is_contiguous())  // the kernels' fast path reads element i of every operand
    for (int64_t i = 0; i < it.numel(); ++i) {
      int64_t off[N];
      calc.get(i, off);
      for (int k = 0; k < it.ntensors(); ++k) REQUIRE(off[k] == i);
    }
}

/// out[o0] = a[o1] * b[o2] through the OffsetCalculator, as a CUDA kernel does.
void mul_through_calc(const TensorIterator& it) {
  const auto calc = fcu::offset_calculator<3>(it, "mul");
  auto* out = reinterpret_cast<double*>(it.data(0));
  const auto* a = reinterpret_cast<const double*>(it.data(1));
  const auto* b = reinterpret_cast<const double*>(it.data(2));
  for (int64_t i = 0; i < it.numel(); ++i) {
    int64_t off[3];
    calc.get(i, off);
    out[off[0]] = a[off[1]] * b[off[2]];
  }
}

void require_equal(const Tensor& got, const Tensor& expected) {
  REQUIRE(std::ranges::equal(got.sizes(), expected.sizes()));
  const Tensor g = op::contiguous(got, MemoryFormat::Contiguous);
  const Tensor e = op::contiguous(expected, MemoryFormat::Contiguous);
  for (int64_t i = 0; i < e.numel(); ++i) REQUIRE(g.data<double>()[i] == e.data<double>()[i]);
}

}  // namespace

TEST_CASE("OffsetCalculator of a TensorIterator: broadcast, permuted, sliced and expanded operands") {
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 300; ++trial) {
    const Shape shape = random_shape(rng);
    const Tensor a = random_operand(shape, rng), b = random_operand(shape, rng);
    const TensorIterator it = TensorIterator::binary("mul", a, b, ScalarType::Float64, ScalarType::Float64);
    check_same_visits<3>(it);
    mul_through_calc(it);
    require_equal(it.output(), op::mul(a, b));
  }
}

TEST_CASE("OffsetCalculator of a TensorIterator: named layouts") {
  std::mt19937_64 rng(5);
  const Tensor x = random_storage(2 * 3 * 4, rng);
  const Tensor y = random_storage(64, rng);
  struct Case {
    const char* name;
    Tensor a, b;
  };
  const std::vector<Case> cases = {
      {"contiguous, one shape (the fast path)", op::reshape(x, Shape{2, 3, 4}),
       op::reshape(op::mul(x, x), Shape{2, 3, 4})},
      {"broadcast (3, 1) against (2, 1, 4)", op::as_strided(y, Shape{3, 1}, Shape{1, 1}, 0),
       op::as_strided(x, Shape{2, 1, 4}, Shape{4, 4, 1}, 0)},
      {"permuted (4, 2, 3) view and contiguous", op::as_strided(x, Shape{4, 2, 3}, Shape{1, 12, 4}, 0),
       op::as_strided(y, Shape{4, 2, 3}, Shape{6, 3, 1}, 1)},
      {"sliced: steps and an offset", op::as_strided(y, Shape{3, 5}, Shape{16, 3}, 2),
       op::as_strided(y, Shape{3, 5}, Shape{2, 7}, 1)},
      {"0-stride (expanded) operands", op::as_strided(y, Shape{3, 4}, Shape{0, 1}, 5),
       op::as_strided(y, Shape{3, 4}, Shape{1, 0}, 7)},
      {"a 0-dim operand", op::as_strided(y, Shape{}, Shape{}, 3),
       op::as_strided(x, Shape{2, 3}, Shape{3, 1}, 0)},
      {"empty", op::as_strided(x, Shape{0, 3}, Shape{3, 1}, 0),
       op::as_strided(y, Shape{1, 3}, Shape{0, 1}, 0)},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const TensorIterator it =
        TensorIterator::binary("mul", c.a, c.b, ScalarType::Float64, ScalarType::Float64);
    check_same_visits<3>(it);
    mul_through_calc(it);
    require_equal(it.output(), op::mul(c.a, c.b));
  }
}

TEST_CASE("OffsetCalculator of a TensorIterator: promoted inputs are read in the compute dtype") {
  std::mt19937_64 rng(9);
  const Tensor a =
      op::cast(op::as_strided(random_storage(40, rng), Shape{4, 5}, Shape{1, 8}, 0), ScalarType::Int64);
  const Tensor b = random_operand(Shape{4, 5}, rng);
  const TensorIterator it = TensorIterator::binary("mul", a, b, ScalarType::Float64, ScalarType::Float64);
  CHECK(it.dtype(1) == ScalarType::Float64);  // the int64 input was cast
  check_same_visits<3>(it);
  mul_through_calc(it);
  require_equal(it.output(), op::mul(a, b));
}

TEST_CASE("OffsetCalculator of an in-place TensorIterator: a transposed self and a broadcast other") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    const Shape shape = random_shape(rng);
    Tensor self = random_operand(shape, rng, /*allow_broadcast=*/false);
    const Tensor other = random_operand(shape, rng);
    const Tensor expected = op::mul(self, other);
    const TensorIterator it = TensorIterator::inplace("mul_", self, other);
    CHECK(it.data(0) == static_cast<char*>(self.data_ptr()));
    check_same_visits<3>(it);
    mul_through_calc(it);
    require_equal(self, expected);
  }
}

TEST_CASE("OffsetCalculator<4> of a where's TensorIterator (a bool condition kept)") {
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 100; ++trial) {
    const Shape shape = random_shape(rng);
    const Tensor cond = op::gt(random_operand(shape, rng), scalar_to_tensor(Scalar(0.0)));
    const Tensor a = random_operand(shape, rng), b = random_operand(shape, rng);
    const Tensor* ins[3] = {&cond, &a, &b};
    const TensorIterator it("where", nullptr, ScalarType::Float64, ins, ScalarType::Float64, 1);
    CHECK(it.dtype(1) == ScalarType::Bool);
    check_same_visits<4>(it);
    const auto calc = fcu::offset_calculator<4>(it, "where");
    for (int64_t i = 0; i < it.numel(); ++i) {
      int64_t off[4];
      calc.get(i, off);
      const bool c = reinterpret_cast<const bool*>(it.data(1))[off[1]];
      reinterpret_cast<double*>(it.data(0))[off[0]] =
          reinterpret_cast<const double*>(it.data(c ? 2 : 3))[off[c ? 2 : 3]];
    }
    require_equal(it.output(), op::where(cond, a, b));
  }
}

TEST_CASE("offset_calculator refuses more dims than the kernels handle, after coalescing") {
  // 20 dims of size 2 read in reverse order into a row-major out=: nothing coalesces (a new result
  // would take the input's order, Note [Result layout], and coalesce with it).
  const int nd = 20;
  Shape sizes(nd, 2), strides(nd);
  for (int d = 0; d < nd; ++d) strides[static_cast<size_t>(d)] = int64_t{1} << d;
  const Tensor base = zeros(Shape{int64_t{1} << nd}, ScalarType::Float32, Device(DeviceType::CPU));
  const Tensor rev = op::as_strided(base, sizes, strides, 0);
  const Tensor out =
      op::reshape(zeros(Shape{int64_t{1} << nd}, ScalarType::Float32, Device(DeviceType::CPU)), sizes);
  const TensorIterator it = TensorIterator::into("neg", out, rev, ScalarType::Float32);
  CHECK(it.ndim() == nd);
  CHECK_THROWS_WITH_AS(fcu::offset_calculator<2>(it, "neg"),
                       doctest::Contains("[neg] CUDA kernels handle up to 16 dims"), ValueError);
  // Contiguous 20-dim operands coalesce to one dim.
  const TensorIterator it2 =
      TensorIterator::unary("neg", op::reshape(base, sizes), ScalarType::Float32, ScalarType::Float32);
  CHECK(fcu::offset_calculator<2>(it2, "neg").ndim == 1);
}
