// Core's allocator registry (Note [Allocator registry]): the system
// allocator, the current allocator per device type, and allocators provided
// through the C ABI (fb_allocator_v1).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "flambeau/allocator.h"
#include "testing.h"

using namespace flambeau;
using fbtest::error_message;

namespace {

// A C allocator: the kind of table a separately compiled library hands to core.
struct CState {
  int allocations = 0;
  int deallocations = 0;
  int releases = 0;
  size_t last_size = 0;
  bool fail = false;
};

void* c_allocate(void* ctx, size_t nbytes) {
  auto* s = static_cast<CState*>(ctx);
  s->last_size = nbytes;
  if (s->fail) return nullptr;
  ++s->allocations;
  return std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
}
void c_deallocate(void* ctx, void* ptr, size_t nbytes) {
  auto* s = static_cast<CState*>(ctx);
  ++s->deallocations;
  s->last_size = nbytes;
  std::free(ptr);
}
void c_release(void* ctx) { ++static_cast<CState*>(ctx)->releases; }

fb_allocator_v1 c_table(CState* state, const char* name = "c-test") {
  return fb_allocator_v1{1, state, c_allocate, c_deallocate, c_release, name};
}

}  // namespace

TEST_SUITE("allocator") {
  TEST_CASE("the system allocator aligns to 64 bytes, and large blocks to 2 MiB") {
    AllocatorPtr a = system_allocator();
    CHECK(a == system_allocator());  // one instance
    CHECK(a->name() == "system");
    void* small = a->allocate(100);
    CHECK(reinterpret_cast<uintptr_t>(small) % 64 == 0);
    std::memset(small, 1, 100);
    a->deallocate(small, 100);
    const size_t big_size = size_t{4} << 20;
    void* big = a->allocate(big_size);
    CHECK(reinterpret_cast<uintptr_t>(big) % (size_t{2} << 20) == 0);
    static_cast<char*>(big)[big_size - 1] = 1;
    a->deallocate(big, big_size);
  }

  TEST_CASE("the system allocator reports out of memory as a RuntimeError") {
    const size_t absurd = SIZE_MAX / 2;
    const doctest::String msg = error_message<RuntimeError>([&] { system_allocator()->allocate(absurd); });
    CHECK(msg == doctest::Contains("[allocate] out of memory: the system allocator could not provide"));
    CHECK(msg == doctest::Contains(std::to_string(absurd).c_str()));
  }

  TEST_CASE("the current CPU allocator is the system one until another is set") {
    AllocatorPtr before = get_allocator(DeviceType::CPU);
    CHECK(before->name() == "system");
    auto counting = std::make_shared<fbtest::CountingAllocator>();
    {
      fbtest::AllocatorScope scope(counting);
      CHECK(get_allocator(DeviceType::CPU) == counting);
      Storage s = StorageImpl::allocate(40, Device());
      CHECK(counting->allocations == 1);
      CHECK(counting->live_bytes == 40);
    }
    CHECK(get_allocator(DeviceType::CPU) == before);
    CHECK(counting->deallocations == 1);
  }

  TEST_CASE("set_allocator refuses a null allocator") {
    CHECK(error_message<TypeError>([] { set_allocator(DeviceType::CPU, nullptr); }) ==
          doctest::Contains("[set_allocator] allocator for cpu must not be None"));
    CHECK(get_allocator(DeviceType::CPU) != nullptr);
  }

  TEST_CASE("without CUDA there is no CUDA allocator") {
    CHECK(error_message<RuntimeError>([] { get_allocator(DeviceType::CUDA); }) ==
          doctest::Contains("[allocate] no allocator for cuda: flambeau-cuda is not installed"));
    CHECK(error_message<RuntimeError>([] { StorageImpl::allocate(16, Device(DeviceType::CUDA, 0)); }) ==
          doctest::Contains("[allocate] cannot use cuda:0: flambeau-cuda is not installed"));
  }

  TEST_CASE("a C ABI allocator serves storages and is released after the last one") {
    CState state;
    fb_allocator_v1 table = c_table(&state);
    AllocatorPtr a = allocator_from_c_abi(&table);
    table.allocate = nullptr;  // the table was copied
    CHECK(a->name() == "c-test");
    Storage s;
    {
      fbtest::AllocatorScope scope(a);
      s = StorageImpl::allocate(100, Device());
    }
    CHECK(state.allocations == 1);
    CHECK(state.last_size == 100);
    CHECK(s->allocator() == a);
    a.reset();
    CHECK(state.releases == 0);  // the storage still uses it
    s.reset();
    CHECK(state.deallocations == 1);
    CHECK(state.last_size == 100);  // freed with the size asked for
    CHECK(state.releases == 1);
  }

  TEST_CASE("a C ABI allocator that returns NULL raises naming it") {
    CState state;
    state.fail = true;
    fb_allocator_v1 table = c_table(&state);
    AllocatorPtr a = allocator_from_c_abi(&table);
    CHECK(error_message<RuntimeError>([&] { a->allocate(1000); }) ==
          doctest::Contains("[allocate] allocator 'c-test' returned NULL for 1000 bytes"));
  }

  TEST_CASE("a C ABI table without a name or release is accepted") {
    CState state;
    fb_allocator_v1 table = c_table(&state, nullptr);
    table.release = nullptr;
    AllocatorPtr a = allocator_from_c_abi(&table);
    CHECK(a->name() == "c-abi");
    void* p = a->allocate(8);
    a->deallocate(p, 8);
    a.reset();
    CHECK(state.releases == 0);
  }

  TEST_CASE("a bad C ABI table is a ValueError") {
    CHECK(error_message<ValueError>([] { allocator_from_c_abi(nullptr); }) ==
          doctest::Contains("[allocator_from_c_abi] the allocator table is NULL"));
    CState state;
    fb_allocator_v1 table = c_table(&state);
    table.abi_version = 2;
    CHECK(error_message<ValueError>([&] { allocator_from_c_abi(&table); }) ==
          doctest::Contains("unsupported allocator ABI version 2 (this core supports 1)"));
    table = c_table(&state);
    table.deallocate = nullptr;
    CHECK(error_message<ValueError>([&] { allocator_from_c_abi(&table); }) ==
          doctest::Contains("allocate and deallocate must both be set"));
    CHECK(state.releases == 0);  // a refused table is not released
  }
}
