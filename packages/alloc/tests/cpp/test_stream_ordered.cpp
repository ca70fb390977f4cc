// Note [Stream-ordered reuse]: a stream-aware CachingAllocator over a fake
// device backend (registered in the CUDA slot of this test process, as
// flambeau-cuda would) whose events complete only when the test says so.
#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "caching_allocator.h"
#include "flambeau/device_backend.h"
#include "flambeau/error.h"

using namespace flambeau;
using namespace flambeau::alloc;

namespace {

constexpr size_t MiB = size_t{1} << 20;

struct FakeStream final : Stream {
  FakeStream(int64_t id) : id_(id) {}
  Device device() const override { return Device(DeviceType::CUDA, 0); }
  int64_t id() const override { return id_; }
  bool query() const override { return true; }
  void synchronize() override { done = true; }
  void wait_event(const Event&) override {}
  int64_t id_;
  bool done = false;  // set by synchronize, or by the test: the stream's work so far completed
};

struct FakeEvent final : Event {
  void record(Stream& s) override { stream = static_cast<FakeStream*>(&s); }
  bool query() const override { return !stream || stream->done; }
  void synchronize() override {
    if (stream) stream->done = true;
  }
  double elapsed_time(const Event&) const override { return 0; }
  FakeStream* stream = nullptr;
};

struct FakeDevice final : DeviceBackend {
  std::shared_ptr<FakeStream> def = std::make_shared<FakeStream>(0);
  std::shared_ptr<FakeStream> side = std::make_shared<FakeStream>(1);
  std::string name() const override { return "cuda"; }
  int device_count() const override { return 1; }
  StreamPtr default_stream(int) override { return def; }
  StreamPtr new_stream(int, int) override { return side; }
  EventPtr new_event(bool) override { return std::make_shared<FakeEvent>(); }
  void synchronize(int) override {}
  void run_host_fallback(Stream&, const char* op, const std::function<void()>&) override {
    throw NotImplementedError(op);
  }
};

struct HeapBackend final : RawBackend {
  void* allocate(size_t nbytes) noexcept override {
    void* p = nullptr;
    return posix_memalign(&p, 2 * MiB, nbytes) == 0 ? p : nullptr;
  }
  void deallocate(void* ptr, size_t) noexcept override { std::free(ptr); }
  size_t segment_granularity() const override { return 4096; }
  DeviceType device_type() const override { return DeviceType::CUDA; }
  std::string name() const override { return "fake device memory"; }
  void on_block_free(void*, size_t) noexcept override { ++poisoned; }
  int poisoned = 0;
};

}  // namespace

TEST_SUITE("stream-ordered reuse") {
  TEST_CASE("a block used by another stream returns to its pool after that stream's event") {
    auto dev = std::make_shared<FakeDevice>();
    register_device_backend(DeviceType::CUDA, dev);
    auto raw = std::make_unique<HeapBackend>();
    HeapBackend* backend = raw.get();
    CachingAllocator a(std::move(raw), "test", std::nullopt, Device(DeviceType::CUDA, 0));
    const Device d(DeviceType::CUDA, 0);

    void* p = a.allocate_on(4096, d);  // default stream
    a.record_stream(p, *dev->side);
    a.free_block(p);
    CHECK(a.pending_frees() == 1);
    CHECK(backend->poisoned == 0);
    MemoryStats s = a.stats();
    CHECK(s.allocated_bytes[kAggregate].current == 0);
    CHECK(s.active_bytes[kAggregate].current == 4096);

    void* q = a.allocate_on(4096, d);
    CHECK(q != p);  // the side stream's work may still read p
    dev->side->done = true;
    void* r = a.allocate_on(4096, d);  // the event completed: p is back in the pool
    CHECK(a.pending_frees() == 0);
    CHECK(r == p);
    CHECK(backend->poisoned == 1);

    // Its own stream needs no event.
    a.record_stream(r, *dev->def);
    a.free_block(r);
    CHECK(a.pending_frees() == 0);

    // Pools are per stream.
    {
      StreamGuard g(dev->side);
      void* t = a.allocate_on(4096, d);
      CHECK(t != p);
      bool side_segment = false;
      for (const SegmentInfo& seg : a.snapshot())
        if (seg.address <= reinterpret_cast<uintptr_t>(t) &&
            reinterpret_cast<uintptr_t>(t) < seg.address + seg.total_size)
          side_segment = seg.stream == 1;
      CHECK(side_segment);
      a.free_block(t);
    }

    // empty_cache waits for pending frees.
    dev->side->done = false;
    void* u = a.allocate_on(4096, d);
    a.record_stream(u, *dev->side);
    a.free_block(u);
    CHECK(a.pending_frees() == 1);
    a.free_block(q);
    a.empty_cache();
    CHECK(a.pending_frees() == 0);
    CHECK(a.stats().reserved_bytes[kAggregate].current == 0);
  }
}
