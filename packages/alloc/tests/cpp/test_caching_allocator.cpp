// The caching allocator (Note [Caching allocator pools]): rounding, pools,
// best fit, splitting and coalescing, empty_cache, statistics, and the retry
// after releasing the cache on out-of-memory. Most tests run it over a fake
// backend that records every segment and can be told to fail; the last ones
// use the real CPU backend and plug the allocator into core.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "caching_allocator.h"
#include "flambeau/error.h"
#include "flambeau/storage.h"
#include "testing.h"  // core's C++ test helpers (packages/core/tests/cpp)

using namespace flambeau;
using namespace flambeau::alloc;

using fbtest::error_message;

namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

/// What the fake backend did; outlives the allocator that owns the backend.
struct BackendLog {
  int allocs = 0;
  int frees = 0;
  int bad_frees = 0;  // deallocate() of an unknown pointer or with a wrong size
  int fail_next = 0;  // the next n allocate() calls return nullptr
  std::vector<size_t> sizes;
  std::map<void*, size_t> live;
  size_t live_bytes() const {
    size_t n = 0;
    for (const auto& [p, size] : live) n += size;
    return n;
  }
  ~BackendLog() {
    for (const auto& [p, size] : live) std::free(p);  // segments a destroyed allocator leaked on purpose
  }
};

/// Segments from posix_memalign, 2 MiB aligned like the CPU backend's. Pages
/// are never touched, so a 20 MiB segment costs address space only.
class FakeBackend final : public RawBackend {
 public:
  explicit FakeBackend(std::shared_ptr<BackendLog> log, size_t granularity = 4 * KiB)
      : log_(std::move(log)), granularity_(granularity) {}
  void* allocate(size_t nbytes) noexcept override {
    if (log_->fail_next > 0) {
      --log_->fail_next;
      return nullptr;
    }
    void* p = nullptr;
    if (posix_memalign(&p, 2 * MiB, nbytes) != 0) return nullptr;
    ++log_->allocs;
    log_->sizes.push_back(nbytes);
    log_->live.emplace(p, nbytes);
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    ++log_->frees;
    auto it = log_->live.find(ptr);
    if (it == log_->live.end() || it->second != nbytes) {
      ++log_->bad_frees;
      return;
    }
    log_->live.erase(it);
    std::free(ptr);
  }
  size_t segment_granularity() const override { return granularity_; }
  DeviceType device_type() const override { return DeviceType::CPU; }
  std::string name() const override { return "fake backend"; }

 private:
  std::shared_ptr<BackendLog> log_;
  size_t granularity_;
};

struct Fixture {
  std::shared_ptr<BackendLog> log = std::make_shared<BackendLog>();
  CachingAllocator a{std::make_unique<FakeBackend>(log), "test"};

  char* alloc(size_t n) { return static_cast<char*>(a.allocate(n)); }
  void free(void* p) { REQUIRE(a.free_block(p)); }
  MemoryStats stats() const { return a.stats(); }
};

/// Blocks tile each segment without gaps, no two free blocks are neighbours,
/// and the sums match the statistics.
void check_invariants(const CachingAllocator& a) {
  const MemoryStats s = a.stats();
  int64_t reserved = 0, allocated = 0, blocks = 0;
  for (const SegmentInfo& seg : a.snapshot()) {
    reserved += static_cast<int64_t>(seg.total_size);
    uintptr_t cursor = seg.address;
    for (size_t i = 0; i < seg.blocks.size(); ++i) {
      const BlockInfo& b = seg.blocks[i];
      CHECK(b.address == cursor);
      CHECK(b.size % kMinBlockSize == 0);
      cursor += b.size;
      if (b.allocated) {
        allocated += static_cast<int64_t>(b.size);
        ++blocks;
      }
      if (i > 0) CHECK((b.allocated || seg.blocks[i - 1].allocated));
    }
    CHECK(cursor == seg.address + seg.total_size);
  }
  CHECK(reserved == s.reserved_bytes[kAggregate].current);
  CHECK(allocated == s.allocated_bytes[kAggregate].current);
  CHECK(blocks == s.allocation[kAggregate].current);
}

}  // namespace

TEST_SUITE("caching_allocator.sizes") {
  TEST_CASE("requests round up to multiples of 512 bytes") {
    CHECK(CachingAllocator::round_size(0) == 512);
    CHECK(CachingAllocator::round_size(1) == 512);
    CHECK(CachingAllocator::round_size(512) == 512);
    CHECK(CachingAllocator::round_size(513) == 1024);
    CHECK(CachingAllocator::round_size(MiB) == MiB);
    CHECK(CachingAllocator::round_size(MiB + 1) == MiB + 512);
  }

  TEST_CASE("segment sizes depend on the pool and the request") {
    CHECK(CachingAllocator::segment_size(512) == 2 * MiB);
    CHECK(CachingAllocator::segment_size(MiB) == 2 * MiB);
    CHECK(CachingAllocator::segment_size(MiB + 512) == 20 * MiB);
    CHECK(CachingAllocator::segment_size(10 * MiB - 512) == 20 * MiB);
    CHECK(CachingAllocator::segment_size(10 * MiB) == 10 * MiB);
    CHECK(CachingAllocator::segment_size(10 * MiB + 512) == 12 * MiB);
    CHECK(CachingAllocator::segment_size(13 * MiB) == 14 * MiB);
  }
}

TEST_SUITE("caching_allocator.pools") {
  TEST_CASE("a small request carves a block out of a 2 MiB segment") {
    Fixture f;
    char* p = f.alloc(100);
    CHECK(reinterpret_cast<uintptr_t>(p) % 512 == 0);
    CHECK(f.log->sizes == std::vector<size_t>{2 * MiB});
    MemoryStats s = f.stats();
    CHECK(s.allocation[kAggregate].current == 1);
    CHECK(s.allocation[kSmallPool].current == 1);
    CHECK(s.allocation[kLargePool].current == 0);
    CHECK(s.allocated_bytes[kAggregate].current == 512);
    CHECK(s.requested_bytes[kAggregate].current == 100);
    CHECK(s.reserved_bytes[kSmallPool].current == static_cast<int64_t>(2 * MiB));
    CHECK(s.segment[kSmallPool].current == 1);
    CHECK(s.inactive_split[kAggregate].current == 1);  // the rest of the segment
    CHECK(s.inactive_split_bytes[kAggregate].current == static_cast<int64_t>(2 * MiB - 512));
    CHECK(s.num_device_alloc == 1);
    check_invariants(f.a);

    f.free(p);
    s = f.stats();
    CHECK(s.allocated_bytes[kAggregate].current == 0);
    CHECK(s.active[kAggregate].current == 0);
    CHECK(s.reserved_bytes[kAggregate].current == static_cast<int64_t>(2 * MiB));  // cached, not returned
    CHECK(s.inactive_split[kAggregate].current == 0);
    CHECK(f.log->frees == 0);
    CHECK_FALSE(f.a.free_block(p));  // a double free is refused
    check_invariants(f.a);
  }

  TEST_CASE("a freed block is reused by a request of its size class") {
    Fixture f;
    char* p = f.alloc(1000);
    f.free(p);
    CHECK(f.alloc(1000) == p);
    char* q = f.alloc(600);  // 1024 too, but p is taken: the next block
    CHECK(q == p + 1024);
    CHECK(f.log->allocs == 1);
    CHECK(f.stats().num_device_alloc == 1);
  }

  TEST_CASE("blocks are split in address order") {
    Fixture f;
    char* a = f.alloc(1024);
    char* b = f.alloc(512);
    char* c = f.alloc(2048);
    CHECK(b == a + 1024);
    CHECK(c == b + 512);
  }

  TEST_CASE("best fit takes the smallest free block that fits") {
    Fixture f;
    char* a = f.alloc(1024);
    char* b = f.alloc(512);
    char* c = f.alloc(2048);
    char* d = f.alloc(512);  // keeps c's hole apart from the free tail
    (void)b;
    (void)d;
    f.free(a);                                                 // a 1024-byte hole
    f.free(c);                                                 // a 2048-byte hole
    CHECK(f.alloc(1536) == c);                                 // a is too small; c's hole is split
    CHECK(f.alloc(1024) == a);                                 // exactly a's hole
    CHECK(f.alloc(512) == c + 1536);                           // the rest of c's hole, not the big tail
    CHECK(f.stats().inactive_split[kAggregate].current == 1);  // only the tail is free now
    check_invariants(f.a);
  }

  TEST_CASE("freed neighbours coalesce into one block") {
    Fixture f;
    char* x = f.alloc(512);
    char* y = f.alloc(512);
    char* z = f.alloc(512);
    f.free(x);
    f.free(z);  // merges with the free tail
    std::vector<SegmentInfo> snap = f.a.snapshot();
    REQUIRE(snap.size() == 1);
    REQUIRE(snap[0].blocks.size() == 3);
    CHECK_FALSE(snap[0].blocks[0].allocated);
    CHECK(snap[0].blocks[1].address == reinterpret_cast<uintptr_t>(y));
    CHECK(snap[0].blocks[2].size == 2 * MiB - 1024);
    CHECK(f.stats().inactive_split[kAggregate].current == 2);
    f.free(y);  // merges with both sides
    snap = f.a.snapshot();
    REQUIRE(snap[0].blocks.size() == 1);
    CHECK(snap[0].blocks[0].size == 2 * MiB);
    CHECK_FALSE(snap[0].blocks[0].allocated);
    CHECK(f.stats().inactive_split[kAggregate].current == 0);
    CHECK(f.stats().inactive_split_bytes[kAggregate].current == 0);
    check_invariants(f.a);
  }

  TEST_CASE("requests over 1 MiB and under 10 MiB share 20 MiB segments of the large pool") {
    Fixture f;
    char* p = f.alloc(2 * MiB);
    CHECK(f.log->sizes == std::vector<size_t>{20 * MiB});
    char* q = f.alloc(3 * MiB);
    CHECK(q == p + 2 * MiB);
    CHECK(f.log->allocs == 1);
    const MemoryStats s = f.stats();
    CHECK(s.allocated_bytes[kLargePool].current == static_cast<int64_t>(5 * MiB));
    CHECK(s.allocated_bytes[kSmallPool].current == 0);
    CHECK(s.segment[kLargePool].current == 1);
    CHECK(s.inactive_split_bytes[kLargePool].current == static_cast<int64_t>(15 * MiB));
    check_invariants(f.a);
  }

  TEST_CASE("requests of 10 MiB or more get their own segment rounded to 2 MiB") {
    Fixture f;
    f.alloc(11 * MiB);
    CHECK(f.log->sizes == std::vector<size_t>{12 * MiB});
    const MemoryStats s = f.stats();
    // The 1 MiB remainder is not worth a block of the large pool: it stays with this one.
    CHECK(s.allocated_bytes[kAggregate].current == static_cast<int64_t>(12 * MiB));
    CHECK(s.requested_bytes[kAggregate].current == static_cast<int64_t>(11 * MiB));
    CHECK(s.inactive_split[kAggregate].current == 0);
    check_invariants(f.a);
  }

  TEST_CASE("a large-pool remainder of 1 MiB or less stays with the block") {
    Fixture f;
    f.alloc(2 * MiB);               // a 20 MiB segment: 2 MiB used, 18 MiB free
    f.alloc(17 * MiB + 512 * KiB);  // best fit is the 18 MiB block; 512 KiB would remain
    CHECK(f.log->allocs == 1);
    const MemoryStats s = f.stats();
    CHECK(s.allocated_bytes[kAggregate].current == static_cast<int64_t>(20 * MiB));
    CHECK(s.inactive_split[kAggregate].current == 0);
    check_invariants(f.a);
  }

  TEST_CASE("the small and large pools never share a segment") {
    Fixture f;
    f.free(f.alloc(2 * MiB));  // 20 MiB of free, cached large-pool memory
    f.alloc(512);
    CHECK(f.log->sizes == std::vector<size_t>{20 * MiB, 2 * MiB});
    f.free(f.alloc(MiB));  // the largest small request fits the small segment
    CHECK(f.log->allocs == 2);
  }

  TEST_CASE("zero-byte requests get distinct minimum blocks") {
    Fixture f;
    char* p = f.alloc(0);
    char* q = f.alloc(0);
    CHECK(p != nullptr);
    CHECK(p != q);
    CHECK(f.stats().allocated_bytes[kAggregate].current == 1024);
    CHECK(f.stats().requested_bytes[kAggregate].current == 0);
  }

  TEST_CASE("pointers the allocator did not hand out are refused") {
    Fixture f;
    char* p = f.alloc(2048);
    int local = 0;
    CHECK_FALSE(f.a.free_block(&local));
    CHECK_FALSE(f.a.free_block(p + 512));  // inside a block
    f.a.deallocate(&local, sizeof local);  // reported on stderr, ignored
    f.a.deallocate(nullptr, 0);
    CHECK(f.stats().allocation[kAggregate].current == 1);
    f.a.deallocate(p, 2048);
    CHECK(f.stats().allocation[kAggregate].current == 0);
  }
}

TEST_SUITE("caching_allocator.cache") {
  TEST_CASE("empty_cache returns wholly free segments only") {
    Fixture f;
    char* keep = f.alloc(512);
    f.free(f.alloc(2 * MiB));
    CHECK(f.stats().reserved_bytes[kAggregate].current == static_cast<int64_t>(22 * MiB));
    f.a.empty_cache();
    MemoryStats s = f.stats();
    CHECK(f.log->frees == 1);
    CHECK(f.log->live_bytes() == 2 * MiB);
    CHECK(s.reserved_bytes[kAggregate].current == static_cast<int64_t>(2 * MiB));
    CHECK(s.segment[kAggregate].current == 1);
    CHECK(s.num_device_free == 1);
    f.free(keep);
    f.a.empty_cache();
    CHECK(f.log->live.empty());
    CHECK(f.stats().reserved_bytes[kAggregate].current == 0);
    CHECK(f.log->bad_frees == 0);
  }

  TEST_CASE("statistics keep current values, peaks and running totals") {
    Fixture f;
    char* p = f.alloc(1000);
    char* q = f.alloc(3000);
    f.free(p);
    MemoryStats s = f.stats();
    const Stat& bytes = s.allocated_bytes[kAggregate];
    CHECK(bytes.current == 3072);
    CHECK(bytes.peak == 4096);
    CHECK(bytes.allocated == 4096);
    CHECK(bytes.freed == 1024);
    CHECK(s.allocation[kAggregate].allocated == 2);
    CHECK(s.allocation[kAggregate].freed == 1);
    CHECK(s.requested_bytes[kAggregate].current == 3000);
    CHECK(s.active_bytes[kAggregate].current == 3072);

    f.a.reset_peak_stats();
    CHECK(f.stats().allocated_bytes[kAggregate].peak == 3072);
    f.a.reset_accumulated_stats();
    s = f.stats();
    CHECK(s.allocated_bytes[kAggregate].allocated == 0);
    CHECK(s.allocated_bytes[kAggregate].freed == 0);
    CHECK(s.num_device_alloc == 0);
    CHECK(s.allocated_bytes[kAggregate].current == 3072);  // current values stay
    f.free(q);
    CHECK(f.stats().allocated_bytes[kAggregate].freed == 3072);
  }

  TEST_CASE("a backend failure releases the cache and retries once") {
    Fixture f;
    f.free(f.alloc(512));  // a cached small segment
    f.log->fail_next = 1;
    char* p = f.alloc(2 * MiB);
    CHECK(p != nullptr);
    const MemoryStats s = f.stats();
    CHECK(s.num_alloc_retries == 1);
    CHECK(s.num_ooms == 0);
    CHECK(s.num_device_free == 1);  // the cached segment went back before the retry
    CHECK(f.log->live_bytes() == 20 * MiB);
  }

  TEST_CASE("out of memory after the retry raises and counts") {
    Fixture f;
    f.log->fail_next = 2;
    const doctest::String msg = error_message<RuntimeError>([&] { f.alloc(100); });
    CHECK(msg == doctest::Contains("[allocate] out of memory: tried to allocate 100 B (a 2.00 MiB segment)"));
    CHECK(msg == doctest::Contains("from the test allocator on fake backend"));
    CHECK(msg == doctest::Contains("The cache was already released and the request retried"));
    const MemoryStats s = f.stats();
    CHECK(s.num_ooms == 1);
    CHECK(s.num_alloc_retries == 1);
    CHECK(s.allocation[kAggregate].current == 0);
    CHECK(f.alloc(100) != nullptr);  // the allocator still works
  }

  TEST_CASE("the memory limit counts as a backend failure") {
    Fixture f;
    f.a.set_memory_limit(21 * MiB);
    CHECK(f.a.memory_limit() == 21 * MiB);
    f.free(f.alloc(512));          // 2 MiB reserved, cached
    char* big = f.alloc(2 * MiB);  // 2 + 20 > 21: the cache goes first, then it fits
    CHECK(big != nullptr);
    CHECK(f.stats().num_alloc_retries == 1);
    CHECK(f.stats().reserved_bytes[kAggregate].current == static_cast<int64_t>(20 * MiB));
    const doctest::String msg = error_message<RuntimeError>([&] { f.alloc(512); });
    CHECK(msg == doctest::Contains("out of memory"));
    CHECK(msg == doctest::Contains("memory limit 21.00 MiB"));
    CHECK(f.stats().num_ooms == 1);
    f.a.set_memory_limit(std::nullopt);
    CHECK(f.alloc(512) != nullptr);
  }

  TEST_CASE("a request no backend could serve fails without asking the backend") {
    Fixture f;
    CHECK(error_message<RuntimeError>([&] { f.alloc(size_t{1} << 61); }) ==
          doctest::Contains("more than any backend can provide"));
    CHECK(f.log->allocs == 0);
    CHECK(f.stats().num_ooms == 1);
  }

  TEST_CASE("destroying the allocator returns free segments and leaks used ones") {
    auto log = std::make_shared<BackendLog>();
    {
      CachingAllocator a(std::make_unique<FakeBackend>(log), "test");
      a.allocate(512);  // never freed
      a.free_block(a.allocate(2 * MiB));
    }
    CHECK(log->frees == 1);
    CHECK(log->live_bytes() == 2 * MiB);  // a dangling pointer stays valid memory
  }
}

TEST_SUITE("caching_allocator.reports") {
  TEST_CASE("snapshot lists each segment's blocks in address order") {
    Fixture f;
    char* p = f.alloc(512);
    f.alloc(1500);
    const std::vector<SegmentInfo> snap = f.a.snapshot();
    REQUIRE(snap.size() == 1);
    const SegmentInfo& seg = snap[0];
    CHECK(seg.address == reinterpret_cast<uintptr_t>(p));
    CHECK(seg.is_small);
    CHECK(seg.total_size == 2 * MiB);
    CHECK(seg.allocated_size == 2048);
    CHECK(seg.requested_size == 2012);
    REQUIRE(seg.blocks.size() == 3);
    CHECK(seg.blocks[1].size == 1536);
    CHECK(seg.blocks[1].requested_size == 1500);
    CHECK(seg.blocks[2].requested_size == 0);
    check_invariants(f.a);
  }

  TEST_CASE("summary is a table of the statistics") {
    Fixture f;
    f.alloc(100);
    const std::string text = f.a.summary();
    const doctest::String s = text.c_str();
    CHECK(s == doctest::Contains("flambeau-alloc memory summary: 'test' allocator on fake backend"));
    CHECK(s == doctest::Contains("Allocated memory"));
    CHECK(s == doctest::Contains("Reserved memory"));
    CHECK(s == doctest::Contains("2.00 MiB"));
    CHECK(s == doctest::Contains("Alloc retries / OOMs"));
    CHECK(s == doctest::Contains("Memory limit"));
  }
}

TEST_SUITE("caching_allocator.backends") {
  TEST_CASE("the constructor checks its backend") {
    CHECK(error_message<ValueError>([] { CachingAllocator a(nullptr); }) ==
          doctest::Contains("[CachingAllocator] the raw backend must not be null"));
    auto log = std::make_shared<BackendLog>();
    CHECK(
        error_message<ValueError>([&] { CachingAllocator a(std::make_unique<FakeBackend>(log, 3000)); }) ==
        doctest::Contains(
            "backend 'fake backend' has a segment granularity of 3000 bytes, which does not divide 2097152"));
  }

  TEST_CASE("the CPU backend maps 2 MiB-aligned pages") {
    std::unique_ptr<RawBackend> b = make_cpu_backend();
    CHECK(b->name() == "cpu pages");
    CHECK(b->device_type() == DeviceType::CPU);
    CHECK(b->segment_granularity() == static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    void* p = b->allocate(4 * MiB);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % (2 * MiB) == 0);
    static_cast<char*>(p)[0] = 1;
    static_cast<char*>(p)[4 * MiB - 1] = 1;
    b->deallocate(p, 4 * MiB);
    CHECK(b->allocate(SIZE_MAX - 1024) == nullptr);  // no overflow in the over-mapping
  }

  TEST_CASE("plugged into core, storages return their blocks to the cache") {
    auto caching = std::make_shared<CachingAllocator>(make_cpu_backend(), "caching");
    const AllocatorPtr previous = get_allocator(DeviceType::CPU);
    set_allocator(DeviceType::CPU, caching);
    Storage s = StorageImpl::allocate(1000, Device());
    CHECK(s->allocator() == caching);
    CHECK(caching->stats().allocated_bytes[kAggregate].current == 1024);
    Storage t = StorageImpl::allocate(3 * MiB, Device());
    set_allocator(DeviceType::CPU, previous);  // swapped out while storages live
    s.reset();
    t.reset();
    const MemoryStats stats = caching->stats();
    CHECK(stats.allocated_bytes[kAggregate].current == 0);
    CHECK(stats.reserved_bytes[kAggregate].current == static_cast<int64_t>(22 * MiB));
    caching->empty_cache();
    CHECK(caching->stats().reserved_bytes[kAggregate].current == 0);
  }

  TEST_CASE("concurrent allocations and frees keep the books balanced") {
    Fixture f;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&f, t] {
        uint32_t state = 12345u + static_cast<uint32_t>(t);  // a fixed seed per thread
        std::vector<void*> held;
        for (int i = 0; i < 2000; ++i) {
          state = state * 1664525u + 1013904223u;
          if (!held.empty() && (state >> 16) % 3 == 0) {
            f.a.deallocate(held.back(), 0);
            held.pop_back();
          } else {
            held.push_back(f.a.allocate((state >> 8) % (64 * KiB) + 1));
          }
        }
        for (void* p : held) f.a.deallocate(p, 0);
      });
    }
    for (std::thread& t : threads) t.join();
    const MemoryStats s = f.stats();
    CHECK(s.allocation[kAggregate].current == 0);
    CHECK(s.allocated_bytes[kAggregate].current == 0);
    CHECK(s.requested_bytes[kAggregate].current == 0);
    check_invariants(f.a);
  }
}
