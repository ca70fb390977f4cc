// Storage: allocation through the current allocator (remembered per storage),
// external memory with a deleter and a keep-alive, and the version counter
// shared by every view (Note [Version counter]).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "flambeau/storage.h"
#include "testing.h"

using namespace flambeau;
using fbtest::make_tensor;
using fbtest::view_of;

TEST_SUITE("storage") {
  TEST_CASE("allocate takes 64-byte aligned memory from the current allocator") {
    Storage s = StorageImpl::allocate(100, Device());
    REQUIRE(s->data() != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(s->data()) % 64 == 0);
    CHECK(s->nbytes() == 100);
    CHECK(s->device() == Device());
    CHECK_FALSE(s->is_external());
    CHECK(s->allocator() == get_allocator(DeviceType::CPU));
    CHECK(s->version() == 0);
  }

  TEST_CASE("an empty storage holds no memory and asks the allocator for none") {
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    fbtest::AllocatorScope scope(counting);
    {
      Storage s = StorageImpl::allocate(0, Device());
      CHECK(s->data() == nullptr);
      CHECK(s->nbytes() == 0);
    }
    CHECK(counting->allocations == 0);
    CHECK(counting->deallocations == 0);
  }

  TEST_CASE("a storage is freed by the allocator that made it, even after a swap") {
    auto first = std::make_shared<fbtest::CountingAllocator>();
    auto second = std::make_shared<fbtest::CountingAllocator>();
    Storage old_storage, new_storage;
    {
      fbtest::AllocatorScope a(first);
      old_storage = StorageImpl::allocate(256, Device());
      {
        fbtest::AllocatorScope b(second);
        new_storage = StorageImpl::allocate(128, Device());
      }
    }
    CHECK(old_storage->allocator() == first);
    CHECK(new_storage->allocator() == second);
    old_storage.reset();
    CHECK(first->deallocations == 1);
    CHECK(first->live_bytes == 0);
    CHECK(second->deallocations == 0);
    new_storage.reset();
    CHECK(second->deallocations == 1);
    CHECK(second->live_bytes == 0);
  }

  TEST_CASE("the storage keeps its allocator alive") {
    std::weak_ptr<fbtest::CountingAllocator> watch;
    Storage s;
    {
      auto counting = std::make_shared<fbtest::CountingAllocator>();
      watch = counting;
      fbtest::AllocatorScope scope(counting);
      s = StorageImpl::allocate(32, Device());
    }
    CHECK_FALSE(watch.expired());  // the scope restored the previous allocator; s still holds this one
    s.reset();
    CHECK(watch.expired());
  }

  TEST_CASE("external memory runs its deleter once, when the last reference drops") {
    std::vector<float> buffer(8, 1.0f);
    auto keep_alive = std::make_shared<int>(42);
    int calls = 0;
    void* freed = nullptr;
    Storage s = StorageImpl::from_external(buffer.data(), buffer.size() * sizeof(float), Device(),
                                           [&calls, &freed, keep_alive](void* p) {
                                             ++calls;
                                             freed = p;
                                           });
    CHECK(s->is_external());
    CHECK(s->allocator() == nullptr);
    CHECK(s->data() == buffer.data());
    CHECK(s->nbytes() == 32);
    CHECK(keep_alive.use_count() == 2);  // the deleter holds the keep-alive object

    auto impl = std::make_shared<TensorImpl>(s, ScalarType::Float32, Shape{2, 4}, Shape{4, 1}, 0);
    Tensor t(impl);
    impl.reset();
    s.reset();
    CHECK(calls == 0);
    CHECK(t.data<float>()[7] == 1.0f);
    t = Tensor();
    CHECK(calls == 1);
    CHECK(freed == buffer.data());
    CHECK(keep_alive.use_count() == 1);  // the deleter (and what it captured) is gone
  }

  TEST_CASE("replace_data moves a storage's memory for every view; exported memory is kept until the end") {
    Tensor base = make_tensor({2, 4});
    Tensor row = view_of(base, {4}, {1}, 4);
    const Storage& s = base.impl()->storage();
    const StorageImpl* identity = s.get();
    for (int i = 0; i < 8; ++i) base.data<float>()[i] = static_cast<float>(i);
    const uint64_t version = base.impl()->version();

    std::vector<float> shared(8);
    std::copy(base.data<float>(), base.data<float>() + 8, shared.begin());
    int calls = 0;
    s->replace_data(shared.data(), [&calls](void*) { ++calls; });
    CHECK(base.impl()->storage().get() == identity);
    CHECK(s->is_external());
    CHECK(s->data() == shared.data());
    CHECK(row.data<float>() == shared.data() + 4);  // the view follows
    CHECK(row.data<float>()[1] == 5.0f);
    CHECK(base.impl()->version() == version);  // same values: no bump

    // Exported memory stays valid while the storage lives.
    std::vector<float> again(8);
    s->mark_exported();
    CHECK(s->exported());
    s->replace_data(again.data(), nullptr);
    CHECK(calls == 0);  // the replaced deleter is retired, not run
    base = Tensor();
    row = Tensor();
    CHECK(calls == 1);  // run with the storage
  }

  TEST_CASE("external memory without a deleter is left alone") {
    float value = 3.0f;
    Storage s = StorageImpl::from_external(&value, sizeof value, Device(), nullptr);
    CHECK(s->is_external());
    s.reset();  // must not free a stack address
    CHECK(value == 3.0f);
  }

  TEST_CASE("external memory may claim another device") {
    std::vector<char> buffer(16);
    Storage s =
        StorageImpl::from_external(buffer.data(), buffer.size(), Device(DeviceType::CUDA, 0), nullptr);
    CHECK(s->device() == Device(DeviceType::CUDA, 0));
    Tensor t(std::make_shared<TensorImpl>(s, ScalarType::UInt8, Shape{16}, Shape{1}, 0));
    CHECK(t.device().str() == "cuda:0");
  }

  TEST_CASE("the version counter lives in the storage and is shared by views") {
    Tensor base = make_tensor({4, 4});
    Tensor row = view_of(base, {4}, {1}, 4);
    Tensor other = make_tensor({4, 4});
    CHECK(base.impl()->version() == 0);
    row.impl()->bump_version();
    CHECK(base.impl()->version() == 1);
    CHECK(row.impl()->version() == 1);
    base.impl()->bump_version();
    base.impl()->bump_version();
    CHECK(row.impl()->version() == 3);
    CHECK(base.impl()->storage()->version() == 3);
    CHECK(other.impl()->version() == 0);
  }
}
