// The elementwise TensorIterator (Note [TensorIterator], src/tensor_iterator.h):
// broadcasting, type promotion and conversion, coalescing of dims, overlap
// between a given output and its inputs, and the split into loops. The
// kernels here are written in the test, so only the iterator is under test.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include "tensor_iterator.h"
#include "testing.h"

using namespace flambeau;
using fbtest::error_message;
using fbtest::from_values;
using fbtest::make_tensor;
using fbtest::values_of;
using fbtest::view_of;

namespace {

template <class T>
T& at(char* p, int64_t i, int64_t stride) {
  return *reinterpret_cast<T*>(p + i * stride);
}

/// out = in1 + in2, all of type T.
template <class T>
void run_add(const TensorIterator& it) {
  it.for_each([](char** data, const int64_t* strides, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      at<T>(data[0], i, strides[0]) = at<T>(data[1], i, strides[1]) + at<T>(data[2], i, strides[2]);
  });
}

template <class T>
Tensor iota(Shape sizes, T start = 0) {
  std::vector<T> v(static_cast<size_t>(shape_numel(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(start + static_cast<T>(i));
  return from_values<T>(std::move(sizes), v);
}

Shape shape_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }

Tensor wrapped_number(double v) {
  Tensor t = from_values<double>({}, {v});
  t.impl()->set_wrapped_number(true);
  return t;
}

}  // namespace

TEST_SUITE("tensor_iterator") {
  TEST_CASE("contiguous operands of one shape run as one flat loop") {
    Tensor a = iota<float>({2, 3, 4});
    Tensor b = iota<float>({2, 3, 4}, 100);
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
    CHECK(it.ndim() == 1);
    CHECK(it.numel() == 24);
    CHECK(it.ntensors() == 3);
    CHECK(shape_of(it.output()) == Shape{2, 3, 4});
    CHECK(it.output().is_contiguous());
    run_add<float>(it);
    const std::vector<float> out = values_of<float>(it.output());
    for (int i = 0; i < 24; ++i) CHECK(out[i] == static_cast<float>(100 + 2 * i));
  }

  TEST_CASE("inputs broadcast with NumPy's rules") {
    Tensor col = iota<float>({3, 1});         // 0 1 2
    Tensor row = iota<float>({1, 4}, 10.0f);  // 10 11 12 13
    TensorIterator it = TensorIterator::binary("add", col, row, ScalarType::Float32, ScalarType::Float32);
    CHECK(shape_of(it.output()) == Shape{3, 4});
    CHECK(it.ndim() == 2);
    run_add<float>(it);
    const std::vector<float> out = values_of<float>(it.output());
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) CHECK(out[i * 4 + j] == static_cast<float>(i + 10 + j));
  }

  TEST_CASE("a missing leading dim broadcasts and the rest coalesces") {
    Tensor a = iota<double>({2, 3, 4});
    Tensor b = iota<double>({4}, 1000.0);
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float64, ScalarType::Float64);
    CHECK(shape_of(it.output()) == Shape{2, 3, 4});
    // The two outer dims merge (b's stride is 0 on both); the inner one cannot join them.
    CHECK(it.ndim() == 2);
    run_add<double>(it);
    const std::vector<double> out = values_of<double>(it.output());
    for (int i = 0; i < 24; ++i) CHECK(out[i] == static_cast<double>(i + 1000 + i % 4));
  }

  TEST_CASE("a broadcast scalar and size-1 dims do not prevent a flat loop") {
    Tensor a = iota<float>({2, 1, 3, 4});
    Tensor s = from_values<float>({}, {0.5f});
    TensorIterator it = TensorIterator::binary("add", a, s, ScalarType::Float32, ScalarType::Float32);
    CHECK(shape_of(it.output()) == Shape{2, 1, 3, 4});
    CHECK(it.ndim() == 1);
    CHECK(it.numel() == 24);
    run_add<float>(it);
    CHECK(values_of<float>(it.output())[23] == 23.5f);
  }

  TEST_CASE("a transposed input is read through its strides") {
    Tensor base = iota<float>({2, 3});            // [[0 1 2] [3 4 5]]
    Tensor t = view_of(base, {3, 2}, {1, 3}, 0);  // [[0 3] [1 4] [2 5]]
    Tensor z = from_values<float>({3, 2}, {0, 0, 0, 0, 0, 0});
    TensorIterator it = TensorIterator::binary("add", t, z, ScalarType::Float32, ScalarType::Float32);
    CHECK(it.ndim() == 2);
    run_add<float>(it);
    CHECK(values_of<float>(it.output()) == std::vector<float>{0, 3, 1, 4, 2, 5});
  }

  TEST_CASE("a given output is walked in its memory order") {
    Tensor base = iota<float>({2, 3});
    Tensor self_t = view_of(base, {3, 2}, {1, 3}, 0);  // dense, but transposed
    Tensor one = from_values<float>({}, {1.0f});
    TensorIterator it = TensorIterator::inplace("add_", self_t, one);
    // Dims are ordered by the output's strides, so the dense output merges into one loop.
    CHECK(it.ndim() == 1);
    CHECK(it.output().is_same(self_t));
    std::vector<int64_t> inner_strides;
    it.for_each([&](char** data, const int64_t* strides, int64_t n) {
      inner_strides.push_back(strides[0]);
      for (int64_t i = 0; i < n; ++i) at<float>(data[0], i, strides[0]) += at<float>(data[2], i, strides[2]);
    });
    CHECK(inner_strides == std::vector<int64_t>{4});
    CHECK(values_of<float>(base) == std::vector<float>{1, 2, 3, 4, 5, 6});
  }

  TEST_CASE("shapes that do not broadcast name the op and every shape") {
    Tensor a = make_tensor({2, 3}), b = make_tensor({4});
    CHECK(error_message<ValueError>([&] {
            TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
          }) == doctest::Contains("[add] shapes (2, 3) and (4,) cannot be broadcast"));
    Tensor c = make_tensor({5});
    const Tensor* three[3] = {&a, &b, &c};
    CHECK(error_message<ValueError>([&] {
            TensorIterator("where", nullptr, ScalarType::Float32, three, ScalarType::Float32);
          }) == doctest::Contains("[where] shapes (2, 3), (4,) and (5,) cannot be broadcast"));
  }

  TEST_CASE("an input must broadcast to a given output's shape") {
    Tensor self = make_tensor({3}), other = make_tensor({2, 3});
    CHECK(error_message<ValueError>([&] { TensorIterator::inplace("add_", self, other); }) ==
          doctest::Contains("[add_] shape (2, 3) cannot be broadcast to the shape (3,) of self"));
  }

  TEST_CASE("a given output whose elements share memory is refused") {
    Tensor cell = make_tensor({3});
    Tensor expanded = view_of(cell, {2, 3}, {0, 1}, 0);
    Tensor other = make_tensor({2, 3});
    const doctest::String msg =
        error_message<ValueError>([&] { TensorIterator::inplace("add_", expanded, other); });
    CHECK(msg ==
          doctest::Contains("[add_] unsupported operation: more than one element of the written-to tensor"));
    CHECK(msg == doctest::Contains("(shape (2, 3), strides (0, 1), as in an expanded view)"));
    CHECK(msg == doctest::Contains("clone() it first"));
  }

  TEST_CASE("more dims than the iterator supports is a ValueError") {
    Tensor a = make_tensor(Shape(26, 1), ScalarType::Int32);
    Tensor b = make_tensor(Shape(26, 1));
    CHECK(error_message<ValueError>([&] {
            TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
          }) == doctest::Contains("[add] tensors with more than 25 dimensions are not supported, got 26"));
  }

  TEST_CASE("an empty broadcast never calls the loop") {
    Tensor a = make_tensor({0, 3}), b = make_tensor({1, 3});
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
    CHECK(shape_of(it.output()) == Shape{0, 3});
    CHECK(it.numel() == 0);
    int calls = 0;
    it.for_each([&](char**, const int64_t*, int64_t) { ++calls; });
    CHECK(calls == 0);
  }
}

TEST_SUITE("tensor_iterator.promotion") {
  TEST_CASE("result_type: tensors with dims decide the width") {
    using S = ScalarType;
    CHECK(result_type(make_tensor({2}, S::Int32), make_tensor({2}, S::Float64)) == S::Float64);
    CHECK(result_type(make_tensor({2}, S::UInt8), make_tensor({2}, S::Int8)) == S::Int16);
    // A 0-dim tensor only raises the category...
    CHECK(result_type(make_tensor({2}, S::Float32), make_tensor({}, S::Float64)) == S::Float32);
    CHECK(result_type(make_tensor({2}, S::Int8), make_tensor({}, S::Int64)) == S::Int8);
    CHECK(result_type(make_tensor({2}, S::Int64), make_tensor({}, S::Float64)) == S::Float64);
    // ...and between 0-dim tensors the usual table applies.
    CHECK(result_type(make_tensor({}, S::Int32), make_tensor({}, S::Int64)) == S::Int64);
  }

  TEST_CASE("result_type: a wrapped Python number is weak") {
    using S = ScalarType;
    Tensor two_and_a_half = wrapped_number(2.5);
    CHECK(result_type(make_tensor({2}, S::Int32), two_and_a_half) == S::Float32);  // the default float
    CHECK(result_type(make_tensor({2}, S::Float16), two_and_a_half) == S::Float16);
    CHECK(result_type(make_tensor({2}, S::Float64), two_and_a_half) == S::Float64);
    Tensor two = from_values<int64_t>({}, {2});
    two.impl()->set_wrapped_number(true);
    CHECK(result_type(make_tensor({2}, S::UInt8), two) == S::UInt8);
    CHECK(result_type(make_tensor({2}, S::Bool), two) == S::Int64);
    // A wrapped number is weaker than a 0-dim tensor, too.
    CHECK(result_type(make_tensor({}, S::Int16), two_and_a_half) == S::Float32);
    CHECK(result_type(make_tensor({}, S::Float64), two_and_a_half) == S::Float64);
  }

  TEST_CASE("can_cast refuses floating to integral and anything but bool to bool") {
    using S = ScalarType;
    CHECK(can_cast(S::Int64, S::Float32));
    CHECK(can_cast(S::Bool, S::Int8));
    CHECK(can_cast(S::Bool, S::Bool));
    CHECK(can_cast(S::Float64, S::Float16));
    CHECK_FALSE(can_cast(S::Float32, S::Int64));
    CHECK_FALSE(can_cast(S::Int32, S::Bool));
    CHECK(to_float_dtype(S::Int32) == S::Float32);
    CHECK(to_float_dtype(S::Float64) == S::Float64);
  }

  TEST_CASE("convert_element casts like C++ static_cast") {
    double d = -2.75;
    int32_t i = 0;
    convert_element(ScalarType::Float64, &d, ScalarType::Int32, &i);
    CHECK(i == -2);
    bool b = false;
    convert_element(ScalarType::Int32, &i, ScalarType::Bool, &b);
    CHECK(b);
    float f = 0;
    convert_element(ScalarType::Bool, &b, ScalarType::Float32, &f);
    CHECK(f == 1.0f);
  }

  TEST_CASE("inputs of another dtype are read in the compute dtype") {
    Tensor a = iota<int32_t>({2, 2});
    Tensor b = from_values<float>({2, 2}, {0.5f, 0.5f, 0.5f, 0.5f});
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
    CHECK(it.dtype(0) == ScalarType::Float32);
    CHECK(it.dtype(1) == ScalarType::Float32);
    CHECK(it.dtype(2) == ScalarType::Float32);
    run_add<float>(it);
    CHECK(values_of<float>(it.output()) == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f});
  }

  TEST_CASE("a one-element input of another dtype is converted without an allocation") {
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    fbtest::AllocatorScope scope(counting);
    Tensor a = iota<float>({4});
    Tensor big = iota<int64_t>({4}, 10);
    Tensor one = from_values<int64_t>({1}, {7});
    const int before = counting->allocations;
    {
      TensorIterator it = TensorIterator::binary("add", a, one, ScalarType::Float32, ScalarType::Float32);
      CHECK(counting->allocations == before + 1);  // the output only
      run_add<float>(it);
      CHECK(values_of<float>(it.output()) == std::vector<float>{7, 8, 9, 10});
    }
    {
      TensorIterator it = TensorIterator::binary("add", a, big, ScalarType::Float32, ScalarType::Float32);
      CHECK(counting->allocations == before + 3);  // the output and a float32 copy of `big`
      run_add<float>(it);
      CHECK(values_of<float>(it.output()) == std::vector<float>{10, 12, 14, 16});
    }
  }

  TEST_CASE("keep_dtype_mask keeps an input in its own dtype") {
    Tensor cond = from_values<bool>({3}, {true, false, true});
    Tensor x = iota<float>({3});
    const Tensor* inputs[2] = {&cond, &x};
    TensorIterator it("masked", nullptr, ScalarType::Float32, inputs, ScalarType::Float32,
                      /*keep_dtype_mask=*/1);
    CHECK(it.dtype(1) == ScalarType::Bool);
    CHECK(it.dtype(2) == ScalarType::Float32);
    it.for_each([](char** data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        at<float>(data[0], i, strides[0]) =
            at<bool>(data[1], i, strides[1]) ? at<float>(data[2], i, strides[2]) : -1;
    });
    CHECK(values_of<float>(it.output()) == std::vector<float>{0, -1, 2});
  }

  TEST_CASE("in-place ops compute in self's dtype and refuse an unsafe cast") {
    Tensor self = iota<int64_t>({3});
    Tensor f = from_values<float>({3}, {1, 2, 3});
    CHECK(error_message<TypeError>([&] { TensorIterator::inplace("add_", self, f); }) ==
          doctest::Contains("[add_] result type float32 can't be cast to the desired output type int64"));
    Tensor i = iota<int64_t>({3});
    CHECK(
        error_message<TypeError>([&] { TensorIterator::inplace("div_", self, i, /*true_division=*/true); }) ==
        doctest::Contains("[div_] result type float32 can't be cast to the desired output type int64"));
    Tensor fself = iota<float>({3});
    TensorIterator it = TensorIterator::inplace("add_", fself, i);
    CHECK(it.compute_dtype() == ScalarType::Float32);
    CHECK(it.dtype(2) == ScalarType::Float32);
  }
}

TEST_SUITE("tensor_iterator.overlap") {
  TEST_CASE("an input partially overlapping the output is read before it is written") {
    // x[1:] += x[:-1] reads the old values: [0 1 2 3 4] -> [0 1 3 5 7].
    Tensor x = iota<float>({5});
    Tensor tail = view_of(x, {4}, {1}, 1);
    Tensor head = view_of(x, {4}, {1}, 0);
    run_add<float>(TensorIterator::inplace("add_", tail, head));
    CHECK(values_of<float>(x) == std::vector<float>{0, 1, 3, 5, 7});
  }

  TEST_CASE("adding a tensor's own transpose in place reads the old values") {
    Tensor x = iota<float>({2, 2});  // [[0 1] [2 3]]
    Tensor xt = view_of(x, {2, 2}, {1, 2}, 0);
    run_add<float>(TensorIterator::inplace("add_", x, xt));
    CHECK(values_of<float>(x) == std::vector<float>{0, 3, 3, 6});
  }

  TEST_CASE("an input equal to the output needs no copy") {
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    fbtest::AllocatorScope scope(counting);
    Tensor x = iota<float>({2, 3});
    Tensor xt = view_of(x, {3, 2}, {1, 3}, 0);
    const int before = counting->allocations;
    TensorIterator it = TensorIterator::inplace("add_", xt, xt);  // x.t().add_(x.t())
    CHECK(counting->allocations == before);
    run_add<float>(it);
    CHECK(values_of<float>(x) == std::vector<float>{0, 2, 4, 6, 8, 10});
  }

  TEST_CASE("disjoint views of one storage are not copied") {
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    fbtest::AllocatorScope scope(counting);
    Tensor x = iota<float>({2, 3});
    Tensor row0 = view_of(x, {3}, {1}, 0), row1 = view_of(x, {3}, {1}, 3);
    const int before = counting->allocations;
    run_add<float>(TensorIterator::inplace("add_", row1, row0));
    CHECK(counting->allocations == before);
    CHECK(values_of<float>(x) == std::vector<float>{0, 1, 2, 3, 5, 7});
  }
}

TEST_SUITE("tensor_iterator.loops") {
  TEST_CASE("serial_for visits exactly the elements of a sub-range") {
    Tensor a = iota<float>({3, 4});
    Tensor b = iota<float>({3, 1});
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
    REQUIRE(it.ndim() == 2);
    const char* out0 = static_cast<const char*>(it.output().data_ptr());
    std::vector<int64_t> visited;
    it.serial_for(
        [&](char** data, const int64_t* strides, int64_t n) {
          for (int64_t i = 0; i < n; ++i) visited.push_back((data[0] + i * strides[0] - out0) / 4);
        },
        5, 11);
    CHECK(visited == std::vector<int64_t>{5, 6, 7, 8, 9, 10});
  }

  TEST_CASE("for_each covers every element exactly once across threads") {
    const int64_t n = 3 * kGrainSize + 17;
    Tensor a = iota<float>({n});
    Tensor b = from_values<float>({}, {1.0f});
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
    std::atomic<int64_t> total{0};
    std::mutex m;
    std::set<int64_t> starts;
    const char* out0 = static_cast<const char*>(it.output().data_ptr());
    it.for_each([&](char** data, const int64_t* strides, int64_t len) {
      for (int64_t i = 0; i < len; ++i)
        at<float>(data[0], i, strides[0]) = at<float>(data[1], i, strides[1]) + 1;
      total += len;
      std::lock_guard lock(m);
      starts.insert((data[0] - out0) / 4);
    });
    CHECK(total == n);
    // One call per chunk of parallel_for (Note [Dynamic chunks]).
    if (!detail::static_split())
      CHECK(starts.size() ==
            static_cast<size_t>(detail::plan_chunks(n, kGrainSize, get_num_threads()).chunks));
    const std::vector<float> out = values_of<float>(it.output());
    for (int64_t i = 0; i < n; i += 997) CHECK(out[i] == static_cast<float>(i + 1));
    CHECK(out[n - 1] == static_cast<float>(n));
  }

  TEST_CASE("for_each stays on one call below the grain") {
    Tensor a = iota<float>({1000});
    Tensor b = iota<float>({1000});
    TensorIterator it = TensorIterator::binary("add", a, b, ScalarType::Float32, ScalarType::Float32);
    int calls = 0;
    it.for_each([&](char**, const int64_t*, int64_t len) {
      ++calls;
      CHECK(len == 1000);
    });
    CHECK(calls == 1);
  }
}
