// TensorImpl (sizes, strides, numel, contiguity, offset), the Tensor handle
// (refcounting, freeing on the last drop, dims and errors), and the small
// value types around them (shapes, dtypes, devices).
#include <doctest/doctest.h>

#include "flambeau/dtype.h"
#include "generic/shape_utils.h"
#include "testing.h"

using namespace flambeau;
using fbtest::error_message;
using fbtest::make_tensor;
using fbtest::view_of;

TEST_SUITE("tensor") {
  TEST_CASE("contiguous strides are row-major and treat size 0 as 1") {
    CHECK(contiguous_strides(Shape{2, 3, 4}) == Shape{12, 4, 1});
    CHECK(contiguous_strides(Shape{5}) == Shape{1});
    CHECK(contiguous_strides(Shape{}).empty());
    CHECK(contiguous_strides(Shape{2, 0, 3}) == Shape{3, 3, 1});  // as PyTorch
  }

  TEST_CASE("shape_numel multiplies sizes and rejects negative ones") {
    CHECK(shape_numel(Shape{}) == 1);
    CHECK(shape_numel(Shape{2, 3, 4}) == 24);
    CHECK(shape_numel(Shape{2, 0, 4}) == 0);
    const Shape bad{2, -1};
    CHECK(error_message<ValueError>([&] { shape_numel(bad); }) ==
          doctest::Contains("[shape] negative dimension -1 in shape (2, -1)"));
  }

  TEST_CASE("shape_str formats like Python tuples") {
    CHECK(shape_str(Shape{}) == "()");
    CHECK(shape_str(Shape{4}) == "(4,)");
    CHECK(shape_str(Shape{2, 3}) == "(2, 3)");
  }

  TEST_CASE("a fresh TensorImpl is contiguous with row-major strides") {
    Tensor t = make_tensor({2, 3, 4});
    CHECK(t.defined());
    CHECK(t.dim() == 3);
    CHECK(t.numel() == 24);
    CHECK(Shape(t.sizes().begin(), t.sizes().end()) == Shape{2, 3, 4});
    CHECK(Shape(t.strides().begin(), t.strides().end()) == Shape{12, 4, 1});
    CHECK(t.is_contiguous());
    CHECK(t.storage_offset() == 0);
    CHECK(t.dtype() == ScalarType::Float32);
    CHECK(t.device() == Device(DeviceType::CPU));
    CHECK(t.impl()->storage()->nbytes() == 24 * sizeof(float));
    CHECK_FALSE(t.impl()->is_view());
    CHECK_FALSE(t.impl()->is_wrapped_number());
  }

  TEST_CASE("a 0-dim tensor has one element and no dims") {
    Tensor t = make_tensor({}, ScalarType::Int64);
    CHECK(t.dim() == 0);
    CHECK(t.numel() == 1);
    CHECK(t.is_contiguous());
    CHECK(error_message<IndexError>([&] { t.size(0); }) ==
          doctest::Contains("[size] a 0-d tensor has no dimension 0"));
    CHECK(error_message<IndexError>([&] { t.stride(0); }) ==
          doctest::Contains("[stride] a 0-d tensor has no dimension 0"));
  }

  TEST_CASE("contiguity follows the strides") {
    Tensor t = make_tensor({2, 3});
    // The transpose (3, 2) with strides (1, 3) is not contiguous.
    CHECK_FALSE(view_of(t, {3, 2}, {1, 3}, 0).is_contiguous());
    // Every other row: sizes (1, 3) is contiguous whatever the stride of the size-1 dim.
    CHECK(view_of(t, {1, 3}, {100, 1}, 3).is_contiguous());
    // An expand (stride 0 on a dim of size > 1) is not.
    CHECK_FALSE(view_of(t, {4, 3}, {0, 1}, 0).is_contiguous());
    // Every other column is not.
    CHECK_FALSE(view_of(t, {2, 2}, {3, 2}, 0).is_contiguous());
    // An empty tensor is contiguous whatever its strides.
    Tensor e = view_of(t, {0, 3}, {7, 5}, 0);
    CHECK(e.numel() == 0);
    CHECK(e.is_contiguous());
  }

  TEST_CASE("data_ptr accounts for the storage offset in elements") {
    Tensor t = make_tensor({4, 4}, ScalarType::Float64);
    Tensor row2 = view_of(t, {4}, {1}, 8);
    CHECK(row2.storage_offset() == 8);
    CHECK(static_cast<char*>(row2.data_ptr()) - static_cast<char*>(t.data_ptr()) == 8 * 8);
    CHECK(row2.data<double>() == t.data<double>() + 8);
  }

  TEST_CASE("set_sizes_and_strides refreshes numel and contiguity") {
    Tensor t = make_tensor({2, 3});
    t.impl()->set_sizes_and_strides(Shape{3, 2}, Shape{1, 3}, 0);
    CHECK(t.numel() == 6);
    CHECK_FALSE(t.is_contiguous());
    t.impl()->set_sizes_and_strides(Shape{6}, Shape{1}, 0);
    CHECK(t.is_contiguous());
    t.impl()->set_sizes_and_strides(Shape{2, 0}, Shape{0, 0}, 0);
    CHECK(t.numel() == 0);
    CHECK(t.is_contiguous());
  }

  // Note [Inline sizes and strides]: 5 dims inline, more on the heap.
  TEST_CASE("set_sizes_and_strides crosses the inline capacity both ways") {
    static_assert(detail::SizesAndStrides::kInlineDims == 5);
    Tensor t = make_tensor({2, 2, 2, 2, 2, 2, 2});  // 7 dims: on the heap
    const auto shape_of = [](IntArrayRef a) { return Shape(a.begin(), a.end()); };
    CHECK(shape_of(t.sizes()) == Shape{2, 2, 2, 2, 2, 2, 2});
    CHECK(shape_of(t.strides()) == Shape{64, 32, 16, 8, 4, 2, 1});
    CHECK(t.size(6) == 2);
    CHECK(t.stride(0) == 64);
    t.impl()->set_sizes_and_strides(Shape{4, 32}, Shape{1, 4}, 0);  // heap -> inline
    CHECK(shape_of(t.sizes()) == Shape{4, 32});
    CHECK(shape_of(t.strides()) == Shape{1, 4});
    CHECK_FALSE(t.is_contiguous());
    t.impl()->set_sizes_and_strides(Shape{2, 1, 2, 1, 2, 1, 4, 1, 2}, Shape{32, 9, 16, 9, 8, 9, 2, 9, 1}, 0);
    CHECK(t.dim() == 9);  // inline -> heap
    CHECK(shape_of(t.strides()) == Shape{32, 9, 16, 9, 8, 9, 2, 9, 1});
    CHECK(t.numel() == 64);
    CHECK(t.is_contiguous());  // the strides of size-1 dims do not matter
    t.impl()->set_sizes_and_strides(Shape{2, 2, 2, 2, 2, 4}, Shape{64, 32, 16, 8, 4, 1}, 0);  // heap -> heap
    CHECK(shape_of(t.sizes()) == Shape{2, 2, 2, 2, 2, 4});
    CHECK(t.stride(5) == 1);
    t.impl()->set_sizes_and_strides(Shape{}, Shape{}, 3);  // -> 0-d
    CHECK(t.dim() == 0);
    CHECK(t.numel() == 1);
    CHECK(t.sizes().empty());
    CHECK(t.strides().empty());
  }

  TEST_CASE("set_sizes_and_strides takes the tensor's own sizes and strides") {
    for (const Shape& sizes : {Shape{3, 4}, Shape{1, 2, 3, 4, 1}, Shape{2, 1, 2, 1, 2, 1, 2}}) {
      Tensor t = make_tensor(sizes);
      const Shape strides(t.strides().begin(), t.strides().end());
      t.impl()->set_sizes_and_strides(t.sizes(), t.strides(), 0);  // the same buffer in and out
      CHECK(Shape(t.sizes().begin(), t.sizes().end()) == sizes);
      CHECK(Shape(t.strides().begin(), t.strides().end()) == strides);
      // A sub-span of its own buffer, shifted by one dim.
      t.impl()->set_sizes_and_strides(t.sizes().subspan(1), t.strides().subspan(1), 0);
      CHECK(Shape(t.sizes().begin(), t.sizes().end()) == Shape(sizes.begin() + 1, sizes.end()));
      CHECK(Shape(t.strides().begin(), t.strides().end()) == Shape(strides.begin() + 1, strides.end()));
    }
  }

  TEST_CASE("SizesAndStrides copies inline and heap shapes") {
    detail::SizesAndStrides heap, small;
    heap.assign(Shape{1, 2, 3, 4, 5, 6}, Shape{720, 360, 120, 30, 6, 1});
    small.assign(Shape{7, 8}, Shape{8, 1});
    CHECK_FALSE(heap.is_inline());
    CHECK(small.is_inline());
    detail::SizesAndStrides copy(heap);
    CHECK(Shape(copy.sizes().begin(), copy.sizes().end()) == Shape{1, 2, 3, 4, 5, 6});
    CHECK(copy.sizes().data() != heap.sizes().data());  // its own buffer
    // heap -> inline
    copy = small;
    CHECK(copy.is_inline());
    CHECK(Shape(copy.strides().begin(), copy.strides().end()) == Shape{8, 1});
    small = heap;  // inline -> heap
    CHECK(Shape(small.strides().begin(), small.strides().end()) == Shape{720, 360, 120, 30, 6, 1});
    const detail::SizesAndStrides& same = small;
    small = same;  // self-assignment keeps it
    CHECK(small.dim() == 6);
    CHECK(small.stride(0) == 720);
  }

  TEST_CASE("DimVector grows past its inline capacity") {
    detail::DimVector v(IntArrayRef(Shape{1, 2, 3}));
    const auto shape_of = [](const detail::DimVector& d) { return Shape(d.begin(), d.end()); };
    for (int64_t i = 4; i <= 12; ++i) v.push_back(i);  // past 8: moves to the heap
    CHECK(v.size() == 12);
    CHECK(shape_of(v) == Shape{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    v.insert(0, 0);
    v.insert(13, 13);
    v.insert(5, -1);
    CHECK(shape_of(v) == Shape{0, 1, 2, 3, 4, -1, 5, 6, 7, 8, 9, 10, 11, 12, 13});
    v.erase(5);
    v.erase(0);
    v.erase(12);
    CHECK(shape_of(v) == Shape{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    const IntArrayRef view = v;
    CHECK(view.size() == 12);
    CHECK(view.back() == 12);
    detail::DimVector inl(8, 7), heap(9, 7);
    inl.insert(8, 1);  // exactly at capacity, then one more
    CHECK(shape_of(inl) == Shape{7, 7, 7, 7, 7, 7, 7, 7, 1});
    CHECK(shape_of(heap) == Shape(9, 7));
    detail::DimVector empty;
    CHECK(empty.empty());
    empty.insert(0, 4);
    CHECK(shape_of(empty) == Shape{4});
  }

  TEST_CASE("sizes and strides of different lengths are an internal error") {
    Tensor t = make_tensor({2, 3});
    const doctest::String msg =
        error_message<RuntimeError>([&] { t.impl()->set_sizes_and_strides(Shape{2, 3}, Shape{1}, 0); });
    CHECK(msg == doctest::Contains("flambeau internal error"));
    CHECK(msg == doctest::Contains("sizes.size() == strides.size()"));
  }

  TEST_CASE("size and stride wrap negative dims and reject out-of-range ones") {
    Tensor t = make_tensor({2, 3, 4});
    CHECK(t.size(-1) == 4);
    CHECK(t.size(-3) == 2);
    CHECK(t.stride(-2) == 4);
    CHECK(error_message<IndexError>([&] { t.size(3); }) ==
          doctest::Contains("[size] dimension 3 out of range for a 3-d tensor (expected in [-3, 2])"));
    CHECK(error_message<IndexError>([&] { t.stride(-4); }) ==
          doctest::Contains("[stride] dimension -4 out of range"));
  }

  TEST_CASE("wrap_dim accepts 0 and -1 on a 0-d tensor as PyTorch does") {
    CHECK(wrap_dim(0, 0, "op") == 0);
    CHECK(wrap_dim(-1, 0, "op") == 0);
    CHECK(wrap_dim(-2, 3, "op") == 1);
    CHECK(error_message<IndexError>([] { wrap_dim(1, 0, "squeeze"); }) ==
          doctest::Contains("[squeeze] dimension 1 out of range for a 0-d tensor"));
  }

  TEST_CASE("describe names shape dtype and device") {
    CHECK(make_tensor({2, 3}).describe() == "Tensor(shape=(2, 3), dtype=float32, device=cpu)");
    CHECK(make_tensor({5}, ScalarType::Int64).describe() == "Tensor(shape=(5,), dtype=int64, device=cpu)");
    CHECK(Tensor().describe() == "Tensor(undefined)");
  }

  TEST_CASE("copying a Tensor copies the handle, not the data") {
    Tensor a = make_tensor({3});
    Tensor b = a;
    CHECK(b.is_same(a));
    CHECK(a.impl_ptr().use_count() == 2);
    CHECK(b.data_ptr() == a.data_ptr());
    Tensor c = make_tensor({3});
    CHECK_FALSE(c.is_same(a));
    b = Tensor();
    CHECK(a.impl_ptr().use_count() == 1);
    Tensor moved = std::move(a);
    CHECK_FALSE(a.defined());  // NOLINT(bugprone-use-after-move): a moved-from handle is empty
    CHECK(moved.impl_ptr().use_count() == 1);
  }

  TEST_CASE("memory is freed the moment the last handle drops") {
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    fbtest::AllocatorScope scope(counting);
    Tensor a = make_tensor({16});
    CHECK(counting->allocations == 1);
    CHECK(counting->live_bytes == 64);
    Tensor b = a;
    a = Tensor();
    CHECK(counting->deallocations == 0);
    b = Tensor();
    CHECK(counting->deallocations == 1);
    CHECK(counting->live_bytes == 0);
  }

  TEST_CASE("a view keeps its base's storage alive") {
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    fbtest::AllocatorScope scope(counting);
    Tensor base = make_tensor({4, 4});
    Tensor row = view_of(base, {4}, {1}, 4);
    CHECK(row.impl()->is_view());
    base = Tensor();
    CHECK(counting->deallocations == 0);
    row.data<float>()[3] = 1.5f;  // still valid memory
    row = Tensor();
    CHECK(counting->deallocations == 1);
  }

  TEST_CASE("requires_grad without autograd names the missing package") {
    fbtest::AutogradFactoryScope no_autograd(nullptr);
    Tensor t = make_tensor({2});
    CHECK_FALSE(t.requires_grad());
    t.set_requires_grad(false);  // a no-op, even without autograd
    CHECK(error_message<RuntimeError>([&] { t.set_requires_grad(true); }) ==
          doctest::Contains("gradients need flambeau-autograd, which is not loaded"));
    CHECK_FALSE(t.grad().defined());
  }

  TEST_CASE("only floating point tensors can require grad") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor f = make_tensor({2}, ScalarType::Float64);
    f.set_requires_grad(true);
    CHECK(f.requires_grad());
    CHECK(f.impl()->autograd_meta() != nullptr);
    Tensor i = make_tensor({2}, ScalarType::Int64);
    CHECK(error_message<TypeError>([&] { i.set_requires_grad(true); }) ==
          doctest::Contains("only floating point tensors can require gradients, got dtype int64"));
    CHECK_FALSE(i.requires_grad());
  }
}

TEST_SUITE("dtype") {
  TEST_CASE("itemsize and names") {
    CHECK(itemsize(ScalarType::Bool) == 1);
    CHECK(itemsize(ScalarType::Int16) == 2);
    CHECK(itemsize(ScalarType::BFloat16) == 2);
    CHECK(itemsize(ScalarType::Float32) == 4);
    CHECK(itemsize(ScalarType::Int64) == 8);
    CHECK(doctest::String(dtype_name(ScalarType::BFloat16)) == "bfloat16");
    CHECK(doctest::String(dtype_name(ScalarType::UInt8)) == "uint8");
    CHECK(is_floating(ScalarType::Float16));
    CHECK_FALSE(is_floating(ScalarType::Int32));
    CHECK(is_integral(ScalarType::Bool, true));
    CHECK_FALSE(is_integral(ScalarType::Bool, false));
  }

  TEST_CASE("promote_types follows PyTorch's table") {
    using S = ScalarType;
    CHECK(promote_types(S::UInt8, S::Int8) == S::Int16);
    CHECK(promote_types(S::Bool, S::Int32) == S::Int32);
    CHECK(promote_types(S::Int64, S::Float16) == S::Float16);
    CHECK(promote_types(S::Float16, S::BFloat16) == S::Float32);
    CHECK(promote_types(S::Int32, S::Float32) == S::Float32);
    CHECK(promote_types(S::Float32, S::Float64) == S::Float64);
    // uint16/32/64, which PyTorch does not promote with other integers, as NumPy and the Array API.
    CHECK(promote_types(S::UInt8, S::UInt16) == S::UInt16);
    CHECK(promote_types(S::Int8, S::UInt16) == S::Int32);
    CHECK(promote_types(S::Int32, S::UInt32) == S::Int64);
    CHECK(promote_types(S::Bool, S::UInt64) == S::UInt64);
    // The table is symmetric, idempotent, and never lowers a category.
    for (int i = 0; i < kNumScalarTypes; ++i) {
      for (int j = 0; j < kNumScalarTypes; ++j) {
        const auto a = static_cast<S>(i), b = static_cast<S>(j);
        CAPTURE(i);
        CAPTURE(j);
        auto is_signed_int = [](S t) { return t == S::Int8 || t == S::Int16 || t == S::Int32 || t == S::Int64; };
        if ((a == S::UInt64 && is_signed_int(b)) || (b == S::UInt64 && is_signed_int(a))) {
          // No integer type holds both: refused, as PyTorch (NumPy would go to float64).
          CHECK_THROWS_AS(promote_types(a, b), TypeError);
          continue;
        }
        CHECK(promote_types(a, b) == promote_types(b, a));
        CHECK(category(promote_types(a, b)) == std::max(category(a), category(b)));
      }
      CHECK(promote_types(static_cast<S>(i), static_cast<S>(i)) == static_cast<S>(i));
    }
  }
}

TEST_SUITE("device") {
  TEST_CASE("parse and str round-trip") {
    CHECK(Device::parse("cpu") == Device(DeviceType::CPU));
    CHECK(Device::parse("cuda:1") == Device(DeviceType::CUDA, 1));
    CHECK(Device::parse("cuda:1").str() == "cuda:1");
    CHECK(Device::parse("cuda").str() == "cuda");
    CHECK(Device().is_cpu());
  }

  TEST_CASE("a bad device string is a ValueError that says what works") {
    CHECK(error_message<ValueError>([] { Device::parse("tpu"); }) ==
          doctest::Contains("[device] unknown device 'tpu': expected 'cpu', 'cuda' or 'cuda:N'"));
    CHECK(error_message<ValueError>([] { Device::parse("cuda:-1"); }) ==
          doctest::Contains("[device] bad device index in 'cuda:-1'"));
    CHECK(error_message<ValueError>([] { Device::parse("cuda:"); }) == doctest::Contains("bad device index"));
  }
}
