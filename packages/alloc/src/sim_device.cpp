// Note [Simulated device]
// =======================
// "sim" is a device type that exists only in software, so that everything
// device-generic (asynchronous launch, streams, events, per-device current
// streams, the caching allocator's stream-ordered reuse, copies between host
// and device) runs and is tested on a machine without a GPU. It is registered
// exactly as an out-of-tree backend would be (docs/design/devices.md), through
// core's public plug-in API only:
//   * register_device_backend("sim", backend): the PrivateUse1 slot, so that
//     "sim", "sim:1" parse as devices (Note [Device types]);
//   * set_allocator(PrivateUse1, ...): one stream-aware CachingAllocator per
//     device (Note [Stream-ordered reuse]) over host pages (mmap) that are
//     poisoned with 0xFF bytes (NaN as floats) when a block returns to the
//     cache, so a read after free is visible;
//   * kernels under DispatchKey::PrivateUse1: `empty` and `copy_` (the
//     asynchronous ones); every other op reaches the host fallback of core
//     (Note [Device fallback]), which runs the CPU kernel in order on the
//     current stream and waits for it.
// A stream is a worker thread running its queue of host functions in order;
// an event is a ticket in that queue. Device memory is host memory, so a
// kernel is a host function: asynchronous in the same way a CUDA launch is
// (copies between devices, and from/to pinned host memory with
// non_blocking=True, return before the work is done).
#include "sim_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/tensor_impl.h"

namespace flambeau::sim {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---- streams and events ----

class SimStream final : public Stream {
 public:
  SimStream(Device device, int64_t id) : device_(device), id_(id) {
    worker_ = std::thread([this] { loop(); });
    worker_.detach();  // streams live as long as the process (Note [Device backends])
  }
  Device device() const override { return device_; }
  int64_t id() const override { return id_; }

  /// Enqueues fn; returns its ticket (the number of functions enqueued so far).
  uint64_t enqueue(std::function<void()> fn) {
    std::lock_guard lock(m_);
    queue_.push_back(std::move(fn));
    const uint64_t ticket = ++enqueued_;
    work_cv_.notify_one();
    return ticket;
  }
  uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  void wait_for(uint64_t ticket) {
    std::unique_lock lock(m_);
    done_cv_.wait(lock, [&] { return completed_.load(std::memory_order_acquire) >= ticket; });
  }
  bool query() const override {
    std::lock_guard lock(m_);
    return completed_.load(std::memory_order_acquire) >= enqueued_;
  }
  void synchronize() override {
    uint64_t ticket;
    {
      std::lock_guard lock(m_);
      ticket = enqueued_;
    }
    wait_for(ticket);
  }
  void wait_event(const Event& event) override;

 private:
  void loop() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(m_);
        work_cv_.wait(lock, [&] { return !queue_.empty(); });
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        fn();
      } catch (const std::exception& e) {
        // Work that can fail is checked before it is enqueued; this is a bug.
        std::fprintf(stderr, "flambeau sim: a kernel on %s stream %lld failed: %s\n", device_.str().c_str(),
                     static_cast<long long>(id_), e.what());
      }
      {
        std::lock_guard lock(m_);
        completed_.fetch_add(1, std::memory_order_release);
      }
      done_cv_.notify_all();
    }
  }

  Device device_;
  int64_t id_;
  mutable std::mutex m_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0;
  std::atomic<uint64_t> completed_{0};
  std::thread worker_;
};

SimStream& as_sim(Stream& s, const char* op) {
  auto* p = dynamic_cast<SimStream*>(&s);
  FB_CHECK_TYPE(p, "[", op, "] expected a sim stream, got a stream of ", s.device().str());
  return *p;
}

class SimEvent final : public Event {
 public:
  explicit SimEvent(bool timing) : timing_(timing) {}
  void record(Stream& s) override {
    SimStream& ss = as_sim(s, "Event.record");
    auto cell = std::make_shared<std::atomic<int64_t>>(0);
    std::lock_guard lock(m_);
    time_ = cell;
    stream_ = &ss;
    ticket_ = ss.enqueue([cell] { cell->store(now_ns(), std::memory_order_release); });
  }
  bool query() const override {
    auto [s, t] = target();
    return !s || s->completed() >= t;
  }
  void synchronize() override {
    auto [s, t] = target();
    if (s) s->wait_for(t);
  }
  double elapsed_time(const Event& end_event) const override {
    const auto* end = dynamic_cast<const SimEvent*>(&end_event);
    FB_CHECK_TYPE(end, "[Event.elapsed_time] expected a sim event");
    FB_CHECK(query() && end->query(),
             "[Event.elapsed_time] both events must have completed (synchronize first)");
    std::shared_ptr<std::atomic<int64_t>> a, b;
    {
      std::lock_guard lock(m_);
      a = time_;
    }
    {
      std::lock_guard lock(end->m_);
      b = end->time_;
    }
    FB_CHECK(a && b, "[Event.elapsed_time] both events must be recorded first");
    return static_cast<double>(b->load() - a->load()) / 1e6;
  }
  std::pair<SimStream*, uint64_t> target() const {
    std::lock_guard lock(m_);
    return {stream_, ticket_};
  }

 private:
  bool timing_;
  mutable std::mutex m_;
  SimStream* stream_ = nullptr;
  uint64_t ticket_ = 0;
  std::shared_ptr<std::atomic<int64_t>> time_;
};

void SimStream::wait_event(const Event& event) {
  const auto* e = dynamic_cast<const SimEvent*>(&event);
  FB_CHECK_TYPE(e, "[Stream.wait_event] expected a sim event");
  auto [s, t] = e->target();
  if (!s || s == this) return;  // nothing recorded, or already in order
  enqueue([s = s, t = t] { s->wait_for(t); });
}

// ---- memory ----

class SimMemory final : public alloc::RawBackend {
 public:
  SimMemory(std::string name, std::optional<size_t> capacity) : name_(std::move(name)), capacity_(capacity) {}
  void* allocate(size_t nbytes) noexcept override {
    {
      std::lock_guard lock(m_);
      if (capacity_ && used_ + nbytes > *capacity_) return nullptr;
      used_ += nbytes;
    }
    void* p = mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::lock_guard lock(m_);
      used_ -= nbytes;
      return nullptr;
    }
    std::memset(p, 0xFF, nbytes);  // fresh device memory is garbage, never zeros
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    munmap(ptr, nbytes);
    std::lock_guard lock(m_);
    used_ -= nbytes;
  }
  size_t segment_granularity() const override { return 4096; }
  DeviceType device_type() const override { return DeviceType::PrivateUse1; }
  std::string name() const override { return name_; }
  void on_block_free(void* ptr, size_t nbytes) noexcept override { std::memset(ptr, 0xFF, nbytes); }

 private:
  std::string name_;
  std::optional<size_t> capacity_;
  std::mutex m_;
  size_t used_ = 0;
};

class PinnedMemory final : public alloc::RawBackend {
 public:
  void* allocate(size_t nbytes) noexcept override {
    void* p = mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override { munmap(ptr, nbytes); }
  size_t segment_granularity() const override { return 4096; }
  DeviceType device_type() const override { return DeviceType::CPU; }
  std::string name() const override { return "sim pinned host"; }
};

/// Routes to the caching allocator of each device.
class SimDeviceAllocator final : public Allocator {
 public:
  explicit SimDeviceAllocator(std::vector<std::shared_ptr<alloc::CachingAllocator>> per_device)
      : per_device_(std::move(per_device)) {}
  void* allocate(size_t nbytes) override {
    return allocate_on(nbytes, Device(DeviceType::PrivateUse1,
                                      static_cast<int16_t>(current_device(DeviceType::PrivateUse1))));
  }
  void* allocate_on(size_t nbytes, Device device) override {
    FB_CHECK_VALUE(device.index >= 0 && static_cast<size_t>(device.index) < per_device_.size(),
                   "[allocate] invalid device ", device.str());
    return per_device_[static_cast<size_t>(device.index)]->allocate_on(nbytes, device);
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    for (const auto& a : per_device_)
      if (a->free_block(ptr)) return;
    std::fprintf(stderr,
                 "flambeau sim: asked to free %p (%zu bytes), which no sim device allocated; ignored\n", ptr,
                 nbytes);
  }
  void record_stream(void* ptr, Stream& stream) override {
    for (const auto& a : per_device_)
      if (a->owns(ptr)) return a->record_stream(ptr, stream);
  }
  std::string name() const override { return "sim caching"; }
  const std::vector<std::shared_ptr<alloc::CachingAllocator>>& per_device() const { return per_device_; }

 private:
  std::vector<std::shared_ptr<alloc::CachingAllocator>> per_device_;
};

// ---- the backend ----

class SimBackend final : public DeviceBackend {
 public:
  SimBackend(int n, std::optional<size_t> memory_limit) : n_(n) {
    std::vector<std::shared_ptr<alloc::CachingAllocator>> per;
    for (int i = 0; i < n; ++i) {
      const Device d(DeviceType::PrivateUse1, static_cast<int16_t>(i));
      defaults_.push_back(std::make_shared<SimStream>(d, 0));
      streams_.push_back({defaults_.back()});
      per.push_back(std::make_shared<alloc::CachingAllocator>(
          std::make_unique<SimMemory>("sim:" + std::to_string(i) + " memory", memory_limit), "sim",
          std::nullopt, d));
    }
    device_allocator_ = std::make_shared<SimDeviceAllocator>(per);
    pinned_ = std::make_shared<alloc::CachingAllocator>(std::make_unique<PinnedMemory>(), "sim pinned");
  }
  std::string name() const override { return "sim"; }
  int device_count() const override { return n_; }
  StreamPtr default_stream(int index) override { return defaults_.at(checked(index)); }
  StreamPtr new_stream(int index, int priority) override {
    (void)priority;
    std::lock_guard lock(m_);
    auto s = std::make_shared<SimStream>(
        Device(DeviceType::PrivateUse1, static_cast<int16_t>(checked(index))), next_id_++);
    streams_[static_cast<size_t>(index)].push_back(s);  // kept: streams live as long as the backend
    return s;
  }
  EventPtr new_event(bool enable_timing) override { return std::make_shared<SimEvent>(enable_timing); }
  void synchronize(int index) override {
    std::vector<StreamPtr> all;
    {
      std::lock_guard lock(m_);
      all = streams_.at(checked(index));
    }
    for (auto& s : all) s->synchronize();
  }
  void run_host_fallback(Stream& stream, const char* op, const std::function<void()>& fn) override {
    SimStream& s = as_sim(stream, op);
    std::exception_ptr error;
    const uint64_t ticket = s.enqueue([&] {
      try {
        fn();
      } catch (...) {
        error = std::current_exception();
      }
    });
    s.wait_for(ticket);
    if (error) std::rethrow_exception(error);
  }
  AllocatorPtr pinned_host_allocator() override { return pinned_; }

  std::shared_ptr<SimDeviceAllocator> device_allocator_;
  std::shared_ptr<alloc::CachingAllocator> pinned_;

 private:
  size_t checked(int index) const {
    FB_CHECK_VALUE(index >= 0 && index < n_, "[sim] invalid device index ", index, " (", n_, " sim devices)");
    return static_cast<size_t>(index);
  }
  int n_;
  std::mutex m_;
  std::vector<StreamPtr> defaults_;
  std::vector<std::vector<StreamPtr>> streams_;
  int64_t next_id_ = 1;
};

std::mutex g_mutex;
std::shared_ptr<SimBackend> g_backend;

// ---- kernels ----

// A non-owning cpu view of a tensor's memory: what a kernel "launch" holds.
// The launch does not keep the memory alive (a CUDA kernel does not either):
// Note [Stream-ordered reuse] is what makes freeing it safe.
Tensor host_view(const Tensor& t) {
  const Storage& st = t.impl()->storage();
  Storage view = StorageImpl::from_external(st->data(), st->nbytes(), Device(DeviceType::CPU), nullptr);
  const TensorImpl& ti = *t.impl();
  return Tensor(std::make_shared<TensorImpl>(view, ti.dtype(), Shape(ti.sizes().begin(), ti.sizes().end()),
                                             Shape(ti.strides().begin(), ti.strides().end()),
                                             ti.storage_offset()));
}

Tensor empty_sim(IntArrayRef sizes, ScalarType dtype, Device device) {
  const int64_t nbytes = shape_nbytes(sizes, dtype, "empty");
  auto storage = StorageImpl::allocate(static_cast<size_t>(nbytes), device);
  Shape s(sizes.begin(), sizes.end());
  Shape st = contiguous_strides(s, "empty");
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(s), std::move(st), 0));
}

bool is_pinned(const Tensor& t) {
  return g_backend && t.device().is_cpu() && t.impl()->storage()->allocator() == g_backend->pinned_;
}

void check_copy_shapes(const Tensor& self, const Tensor& src) {
  const auto ds = self.sizes();
  const auto ss = src.sizes();
  bool ok = ss.size() <= ds.size();
  for (size_t i = 0; ok && i < ss.size(); ++i) {
    const int64_t a = ss[ss.size() - 1 - i], b = ds[ds.size() - 1 - i];
    ok = a == b || a == 1;
  }
  FB_CHECK_VALUE(ok, "[copy_] the source of shape ", shape_str(ss),
                 " cannot be broadcast to the destination of shape ", shape_str(ds));
  check_no_internal_overlap(self, "copy_");
}

Tensor& copy_sim(Tensor& self, const Tensor& src) {
  check_copy_shapes(self, src);
  const Device dd = self.device(), sd = src.device();
  const bool nb = detail::tls_non_blocking;
  StreamPtr stream;
  bool async;
  std::function<void()> work;
  if (dd.type == DeviceType::PrivateUse1) {
    stream = current_stream(dd);
    if (sd.type == DeviceType::PrivateUse1) {
      if (!(sd == dd)) {
        // Another sim device: after the work enqueued there so far.
        EventPtr e = g_backend->new_event(false);
        e->record(*current_stream(sd));
        stream->wait_event(*e);
        // The source's block belongs to sd's pool but is read on dd's stream:
        // it must not be reused or poisoned before that read (Note [Stream-ordered reuse]).
        if (const AllocatorPtr& a = src.impl()->storage()->allocator())
          a->record_stream(src.impl()->storage()->data(), *stream);
      }
      async = true;
      work = [d = host_view(self), s = host_view(src)]() mutable {
        op::copy_.call_kernel(DispatchKey::CPU, d, s);
      };
    } else {
      FB_CHECK_VALUE(sd.is_cpu(), "[copy_] cannot copy from ", sd.str(), " to ", dd.str());
      async = nb && is_pinned(src);
      if (async) {
        g_backend->pinned_->record_stream(src.impl()->storage()->data(), *stream);
        work = [d = host_view(self), s = host_view(src)]() mutable {
          op::copy_.call_kernel(DispatchKey::CPU, d, s);
        };
      } else {
        work = [d = host_view(self), s = src]() mutable { op::copy_.call_kernel(DispatchKey::CPU, d, s); };
      }
    }
  } else {
    FB_CHECK_VALUE(dd.is_cpu(), "[copy_] cannot copy from ", sd.str(), " to ", dd.str());
    stream = current_stream(sd);
    async = nb && is_pinned(self);
    if (async) {
      g_backend->pinned_->record_stream(self.impl()->storage()->data(), *stream);
      work = [d = host_view(self), s = host_view(src)]() mutable {
        op::copy_.call_kernel(DispatchKey::CPU, d, s);
      };
    } else {
      work = [d = self, s = host_view(src)]() mutable { op::copy_.call_kernel(DispatchKey::CPU, d, s); };
    }
  }
  if (self.numel() > 0) {
    if (async)
      as_sim(*stream, "copy_").enqueue(std::move(work));
    else
      g_backend->run_host_fallback(*stream, "copy_", work);
  }
  self.impl()->bump_version();
  return self;
}

}  // namespace

std::unique_ptr<alloc::RawBackend> make_sim_memory(std::string name, std::optional<size_t> capacity) {
  return std::make_unique<SimMemory>(std::move(name), capacity);
}

void Latch::release() {
  {
    std::lock_guard lock(m_);
    released_ = true;
  }
  cv_.notify_all();
}
void Latch::wait() {
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] { return released_; });
}
bool Latch::released() const {
  std::lock_guard lock(m_);
  return released_;
}

void block_stream(Stream& stream, std::shared_ptr<Latch> latch) {
  as_sim(stream, "block_stream").enqueue([latch] { latch->wait(); });
}

void sleep_on_stream(Stream& stream, double seconds) {
  FB_CHECK_VALUE(seconds >= 0 && seconds <= 60, "[sleep] seconds must be in [0, 60], got ", seconds);
  as_sim(stream, "sleep").enqueue([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  });
}

void register_sim(int num_devices, std::optional<size_t> memory_limit) {
  std::lock_guard lock(g_mutex);
  if (g_backend) {
    FB_CHECK_VALUE(g_backend->device_count() == num_devices,
                   "[sim.register] the sim device is registered with ", g_backend->device_count(),
                   " devices already; cannot change it to ", num_devices);
    return;
  }
  FB_CHECK_VALUE(num_devices >= 1 && num_devices <= 16, "[sim.register] num_devices must be in [1, 16], got ",
                 num_devices);
  auto backend = std::make_shared<SimBackend>(num_devices, memory_limit);
  // The public plug-in API, exactly as an out-of-tree backend uses it.
  register_device_backend("sim", backend);
  set_allocator(DeviceType::PrivateUse1, backend->device_allocator_);
  op::empty.register_kernel(DispatchKey::PrivateUse1, empty_sim);
  op::copy_.register_kernel(DispatchKey::PrivateUse1, copy_sim);
  g_backend = backend;
}

bool is_registered() {
  std::lock_guard lock(g_mutex);
  return g_backend != nullptr;
}

int num_devices() {
  std::lock_guard lock(g_mutex);
  return g_backend ? g_backend->device_count() : 0;
}

std::shared_ptr<alloc::CachingAllocator> device_allocator(int index) {
  std::lock_guard lock(g_mutex);
  FB_CHECK(g_backend, "[sim] the sim device is not registered: call flambeau_alloc.sim.register() first");
  const auto& per = g_backend->device_allocator_->per_device();
  FB_CHECK_VALUE(index >= 0 && static_cast<size_t>(index) < per.size(), "[sim] invalid device index ", index);
  return per[static_cast<size_t>(index)];
}

std::shared_ptr<alloc::CachingAllocator> pinned_allocator() {
  std::lock_guard lock(g_mutex);
  FB_CHECK(g_backend, "[sim] the sim device is not registered: call flambeau_alloc.sim.register() first");
  return g_backend->pinned_;
}

}  // namespace flambeau::sim
