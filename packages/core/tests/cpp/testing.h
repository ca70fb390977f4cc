#pragma once
// Helpers shared by core's C++ unit tests: tensors made without ops (so the
// tests of the tensor, storage and dispatcher do not depend on any kernel),
// reading values through strides, and RAII scopes that restore the global
// registries a test changes.
#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "flambeau/allocator.h"
#include "flambeau/autograd_meta.h"
#include "flambeau/error.h"
#include "flambeau/storage.h"
#include "flambeau/tensor.h"

/// Failed checks on vectors (shapes, values) print the elements.
template <class T>
struct doctest::StringMaker<std::vector<T>> {
  static doctest::String convert(const std::vector<T>& v) {
    std::ostringstream os;
    os << "{";
    for (size_t i = 0; i < v.size(); ++i) {
      os << (i ? ", " : "");
      if constexpr (std::is_arithmetic_v<T>)
        os << +v[i];  // int8/uint8 print as numbers
      else
        os << v[i];
    }
    os << "}";
    return os.str().c_str();
  }
};

namespace fbtest {

using namespace flambeau;

/// A contiguous tensor of `sizes` from the current CPU allocator (values uninitialized).
inline Tensor make_tensor(Shape sizes, ScalarType dtype = ScalarType::Float32, Device device = {}) {
  const auto nbytes = static_cast<size_t>(shape_numel(sizes)) * itemsize(dtype);
  Storage storage = StorageImpl::allocate(nbytes, device);
  Shape strides = contiguous_strides(sizes);
  return Tensor(
      std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), 0));
}

/// A contiguous tensor holding `values` (row-major), of T's dtype.
template <class T>
Tensor from_values(Shape sizes, const std::vector<T>& values) {
  Tensor t = make_tensor(std::move(sizes), CppTypeToScalarType<T>::value);
  REQUIRE(static_cast<size_t>(t.numel()) == values.size());
  T* data = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];  // (std::vector<bool> has no data())
  return t;
}

/// A view of t's storage with other sizes, strides and offset (no checks: tests build odd layouts).
inline Tensor view_of(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>(t.impl()->storage(), t.dtype(), std::move(sizes),
                                           std::move(strides), offset);
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}

/// The elements of t in row-major order, read through its strides.
template <class T>
std::vector<T> values_of(const Tensor& t) {
  REQUIRE(t.dtype() == CppTypeToScalarType<T>::value);
  std::vector<T> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  const auto* base = static_cast<const T*>(t.impl()->storage()->data()) + t.storage_offset();
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
    out.push_back(base[off]);
    for (int64_t d = t.dim() - 1; d >= 0 && ++idx[d] == t.sizes()[d]; --d) idx[d] = 0;
  }
  return out;
}

/// The message of the `E` that f() throws; a placeholder naming what happened otherwise,
/// so that `CHECK(msg == doctest::Contains("..."))` fails with a useful value.
template <class E, class F>
doctest::String error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return (std::string("<another exception type: ") + e.what() + ">").c_str();
  }
  return "<no exception>";
}

/// Makes `allocator` core's current CPU allocator for the scope's lifetime.
class AllocatorScope {
 public:
  explicit AllocatorScope(AllocatorPtr allocator) : previous_(get_allocator(DeviceType::CPU)) {
    set_allocator(DeviceType::CPU, std::move(allocator));
  }
  ~AllocatorScope() { set_allocator(DeviceType::CPU, previous_); }
  AllocatorScope(const AllocatorScope&) = delete;
  AllocatorScope& operator=(const AllocatorScope&) = delete;

 private:
  AllocatorPtr previous_;
};

/// Sets core's autograd-meta factory (nullptr: "autograd not installed") for the scope's lifetime.
class AutogradFactoryScope {
 public:
  explicit AutogradFactoryScope(const AutogradMetaFactory* factory) : previous_(autograd_meta_factory()) {
    set_autograd_meta_factory(factory);
  }
  ~AutogradFactoryScope() { set_autograd_meta_factory(previous_); }
  AutogradFactoryScope(const AutogradFactoryScope&) = delete;
  AutogradFactoryScope& operator=(const AutogradFactoryScope&) = delete;

 private:
  const AutogradMetaFactory* previous_;
};

/// The smallest autograd metadata: a requires_grad flag and a grad (enough for
/// the dispatcher's key selection; flambeau-autograd's is the real one).
class FlagAutogradMeta final : public AutogradMetaInterface {
 public:
  bool requires_grad() const override { return requires_grad_; }
  void set_requires_grad(bool value, TensorImpl*) override { requires_grad_ = value; }
  const Tensor& grad() const override { return grad_; }
  void set_grad(const Tensor& grad) override { grad_ = grad; }
  bool is_leaf() const override { return true; }

 private:
  bool requires_grad_ = false;
  Tensor grad_;
};

class FlagAutogradFactory final : public AutogradMetaFactory {
 public:
  std::unique_ptr<AutogradMetaInterface> make() const override {
    return std::make_unique<FlagAutogradMeta>();
  }
};

/// An allocator over the system one that counts its calls.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    ++allocations;
    live_bytes += nbytes;
    return system_allocator()->allocate(nbytes);
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    ++deallocations;
    live_bytes -= nbytes;
    system_allocator()->deallocate(ptr, nbytes);
  }
  std::string name() const override { return "counting"; }

  int allocations = 0;
  int deallocations = 0;
  size_t live_bytes = 0;
};

}  // namespace fbtest
