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
//     cache, so a read after free is visible. The allocator is
//     flambeau-alloc's, reached as flambeau-cuda reaches it: this file
//     implements alloc's RawBackend (raw_backend.h, flambeau_alloc.get_include())
//     and flambeau_sim/__init__.py wraps each in a CachingAllocator through
//     Python, so no code of flambeau-alloc is linked here;
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

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "flambeau/allocator.h"
#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/observe.h"
#include "flambeau/ops.h"
#include "flambeau/tensor_impl.h"
#include "flambeau_alloc/per_device_allocator.h"

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

  /// Enqueues fn; returns its ticket (the number of functions enqueued so far). `kernel`
  /// (a static name): the work is a kernel, an event of the profiler's device activity
  /// on this stream's thread, linked to the op launching it here.
  uint64_t enqueue(std::function<void()> fn, const char* kernel = nullptr) {
    const uint64_t launch = kernel ? profiler::kernel_launch() : 0;
    std::lock_guard lock(m_);
    queue_.push_back({std::move(fn), kernel, launch});
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
  /// The first error of an asynchronous kernel since the last call, or "".
  std::string take_error() {
    std::lock_guard lock(m_);
    return std::exchange(error_, std::string());
  }

 private:
  void loop() {
    for (;;) {
      Work work;
      {
        std::unique_lock lock(m_);
        work_cv_.wait(lock, [&] { return !queue_.empty(); });
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      const int64_t range =
          work.launch ? profiler::kernel_begin(work.kernel, device_, id_, work.launch) : int64_t{-1};
      try {
        work.fn();
        profiler::range_end(range);
      } catch (const std::exception& e) {
        // An asynchronous kernel failed (a bad index found in the data, say):
        // like a CUDA error it is sticky, raised by the next synchronous
        // operation on this stream (take_error), and reported here.
        profiler::range_end(range);
        std::fprintf(stderr, "flambeau sim: a kernel on %s stream %lld failed: %s\n", device_.str().c_str(),
                     static_cast<long long>(id_), e.what());
        std::lock_guard lock(m_);
        if (error_.empty()) error_ = e.what();
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
  struct Work {
    std::function<void()> fn;
    const char* kernel = nullptr;
    uint64_t launch = 0;  // the profiler's id linking the kernel to its launch, 0: not recorded
  };
  std::deque<Work> queue_;
  uint64_t enqueued_ = 0;
  std::atomic<uint64_t> completed_{0};
  std::string error_;
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
    {
      // A poisoning still queued may write into this segment: wait for it.
      std::unique_lock lock(m_);
      poison_cv_.wait(lock, [&] { return pending_poison_ == 0; });
    }
    munmap(ptr, nbytes);
    std::lock_guard lock(m_);
    used_ -= nbytes;
  }
  size_t segment_granularity() const override { return 4096; }
  DeviceType device_type() const override { return DeviceType::PrivateUse1; }
  std::string name() const override { return name_; }
  void on_block_free(void* ptr, size_t nbytes) noexcept override { std::memset(ptr, 0xFF, nbytes); }
  // Note [Stream-ordered reuse]: kernels enqueued on the block's stream before
  // the free may still read it, so the poison is enqueued behind them (the
  // next allocation from that pool is on the same stream, so its kernels run
  // after the poison). Only a stream that did not record_stream may see it.
  void on_block_return(void* ptr, size_t nbytes, int64_t stream) noexcept override {
    SimStream* s = resolve_ ? resolve_(stream) : nullptr;
    if (!s) return on_block_free(ptr, nbytes);
    try {
      {
        std::lock_guard lock(m_);
        ++pending_poison_;
      }
      s->enqueue([this, ptr, nbytes] {
        std::memset(ptr, 0xFF, nbytes);
        {
          std::lock_guard lock(m_);
          --pending_poison_;
        }
        poison_cv_.notify_all();
      });
    } catch (...) {
      {
        std::lock_guard lock(m_);
        --pending_poison_;
      }
      on_block_free(ptr, nbytes);
    }
  }
  /// Finds the stream of an id (set by the backend; unset: poison at once).
  std::function<SimStream*(int64_t)> resolve_;

 private:
  std::string name_;
  std::optional<size_t> capacity_;
  std::mutex m_;
  std::condition_variable poison_cv_;
  size_t used_ = 0;
  size_t pending_poison_ = 0;
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

// ---- the backend ----

class SimBackend final : public DeviceBackend {
 public:
  SimBackend(int n, std::optional<size_t> memory_limit) : n_(n), memory_limit_(memory_limit) {
    for (int i = 0; i < n; ++i) {
      const Device d(DeviceType::PrivateUse1, static_cast<int16_t>(i));
      defaults_.push_back(std::make_shared<SimStream>(d, 0));
      streams_.push_back({defaults_.back()});
    }
  }
  /// Device `index`'s memory: its frees are poisoned in the order of the stream they return to.
  std::unique_ptr<alloc::RawBackend> make_device_memory(int index) {
    auto memory =
        std::make_unique<SimMemory>("sim:" + std::to_string(checked(index)) + " memory", memory_limit_);
    memory->resolve_ = [this, index](int64_t id) { return find_stream(index, id); };
    return memory;
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
    {
      std::lock_guard lock(m_);
      sync_ops_[op] += 1;
    }
    std::exception_ptr error;
    const uint64_t ticket = s.enqueue(
        [&] {
          try {
            fn();
          } catch (...) {
            error = std::current_exception();
          }
        },
        op);
    s.wait_for(ticket);
    if (error) std::rethrow_exception(error);
    raise_async_error(s, op);
  }
  /// Raises the sticky error of an asynchronous kernel that failed on `s`.
  static void raise_async_error(SimStream& s, const char* op) {
    const std::string e = s.take_error();
    FB_CHECK(e.empty(), "[", op, "] an asynchronous kernel failed earlier on ", s.device().str(), " stream ",
             s.id(), ": ", e);
  }
  /// The stream of device `index` with this id, or null.
  SimStream* find_stream(int index, int64_t id) {
    std::lock_guard lock(m_);
    if (index < 0 || index >= n_) return nullptr;
    for (const StreamPtr& p : streams_[static_cast<size_t>(index)])
      if (p->id() == id) return static_cast<SimStream*>(p.get());
    return nullptr;
  }
  /// Test support: how many times each op ran synchronously (the host fallback, blocking copies).
  std::map<std::string, int64_t> sync_ops() {
    std::lock_guard lock(m_);
    return sync_ops_;
  }
  AllocatorPtr pinned_host_allocator() override { return pinned_; }

  AllocatorPtr pinned_;  // set once by install_allocators_and_kernels

 private:
  size_t checked(int index) const {
    FB_CHECK_VALUE(index >= 0 && index < n_, "[sim] invalid device index ", index, " (", n_, " sim devices)");
    return static_cast<size_t>(index);
  }
  int n_;
  std::optional<size_t> memory_limit_;
  std::mutex m_;
  std::vector<StreamPtr> defaults_;
  std::vector<std::vector<StreamPtr>> streams_;
  int64_t next_id_ = 1;
  std::map<std::string, int64_t> sync_ops_;
};

std::mutex g_mutex;
std::shared_ptr<SimBackend> g_backend;
bool g_installed = false;  // allocators set and kernels registered

// ---- kernels ----

// A non-owning cpu view of a tensor's memory: what a kernel "launch" holds.
// The launch does not keep the memory alive (a CUDA kernel does not either):
// Note [Stream-ordered reuse] is what makes freeing it safe.
// `shared`: the views of one launch share one host storage per device storage,
// so that the CPU kernel sees arguments that alias (t[1:].add_(t[:-1])) as
// overlapping and copies first, as it does on the cpu.
using SharedViews = std::vector<std::pair<const StorageImpl*, Storage>>;
Tensor host_view(const Tensor& t, SharedViews* shared = nullptr) {
  const Storage& st = t.impl()->storage();
  Storage view;
  if (shared)
    for (const auto& [dev, host] : *shared)
      if (dev == st.get()) view = host;
  if (!view) {
    view = StorageImpl::from_external(st->data(), st->nbytes(), Device(DeviceType::CPU), nullptr);
    if (shared) shared->emplace_back(st.get(), view);
  }
  const TensorImpl& ti = *t.impl();
  Tensor host(std::make_shared<TensorImpl>(view, ti.dtype(), Shape(ti.sizes().begin(), ti.sizes().end()),
                                           Shape(ti.strides().begin(), ti.strides().end()),
                                           ti.storage_offset()));
  host.impl()->set_wrapped_number(ti.is_wrapped_number());
  return host;
}

// `op`: the op whose result this is (its name in a too-large error).
Tensor empty_sim_for(IntArrayRef sizes, ScalarType dtype, Device device, const char* op) {
  const int64_t nbytes = shape_nbytes(sizes, dtype, op);  // an op's result too large names the op
  auto storage = StorageImpl::allocate(static_cast<size_t>(nbytes), device);
  Shape s(sizes.begin(), sizes.end());
  Shape st = contiguous_strides(s, op);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(s), std::move(st), 0));
}

Tensor empty_sim(IntArrayRef sizes, ScalarType dtype, Device device) {
  return empty_sim_for(sizes, dtype, device, "empty");
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
      SharedViews shared;
      work = [d = host_view(self, &shared), s = host_view(src, &shared)]() mutable {
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
      as_sim(*stream, "copy_").enqueue(std::move(work), "copy_");
    else
      g_backend->run_host_fallback(*stream, "copy_", work);
  }
  self.impl()->bump_version();
  return self;
}

// ---- asynchronous kernels ----
//
// Note [Asynchronous sim kernels]
// An op with shape and dtype rules in core's table (Note [Meta step]; the
// table's generated list FB_FOR_EACH_META_OP, Note [Ops launched from the meta
// step]) gets a kernel of its own here instead of the host fallback (which waits): the
// kernel checks the devices (as the fallback does, with its messages), runs
// the op's meta step on meta stand-ins of the arguments (from_meta), which
// raises the argument errors at the call and gives the results' shapes and
// dtypes, allocates the results on the device, enqueues the CPU kernel on the
// current stream and returns. The enqueued work holds non-owning host views
// of the device tensors, as a CUDA launch holds raw pointers: a tensor freed
// by Python while its kernel is queued keeps its memory because the allocator
// hands the block only to later work of the same stream, and the sim memory's
// poison is enqueued on that stream too (SimMemory::on_block_return).
//
// The dtypes an op computes in are in the table too (Note [Dtype coverage],
// flambeau/meta.h): its check step refuses, at the call and on every device,
// a dtype the CPU kernel has no loop for, so the kernel is enqueued without
// being tried first. Errors that depend on the values (a class index out of
// range) surface at the next synchronous op of the stream
// (SimStream::take_error), as CUDA's do. Ops without rules take the host
// fallback, or their Generic kernel, made of ops that have rules (the fused
// SGD step, _foreach_zero_); composites run their parts. A structured op
// (Note [Structured kernels], dispatch.h) gets an out kernel here instead
// (out_kernel): core's generated code has run the meta step and allocated its
// output on the device (or passes out=, or self), and the CPU out kernel is
// enqueued writing into it; so its functional,
// out= and in-place forms are asynchronous and copy nothing.

// What the enqueued work keeps of an argument: spans become vectors and
// string views strings (the caller's memory is gone when the kernel runs).
template <class T>
struct Held {
  using type = std::remove_cvref_t<T>;
};
template <>
struct Held<IntArrayRef> {
  using type = std::vector<int64_t>;
};
template <>
struct Held<OptionalIntArrayRef> {
  using type = std::optional<std::vector<int64_t>>;
};
template <>
struct Held<std::string_view> {
  using type = std::string;
};
template <>
struct Held<std::optional<std::string_view>> {
  using type = std::optional<std::string>;
};

bool on_sim(const Tensor& t) { return t.defined() && t.device().type == DeviceType::PrivateUse1; }

// The stand-in of a device tensor in the meta step (Note [Meta step]): its
// sizes, strides and dtype on the meta device, no memory.
Tensor meta_of(const Tensor& t) {
  if (!on_sim(t)) return t;
  auto storage = StorageImpl::allocate(t.impl()->storage()->nbytes(), Device(DeviceType::Meta));
  Tensor m(std::make_shared<TensorImpl>(std::move(storage), t.dtype(), Shape(t.sizes().begin(), t.sizes().end()),
                                        Shape(t.strides().begin(), t.strides().end()), t.storage_offset()));
  m.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
  return m;
}

template <class Map, class T>
auto map_arg(Map&& f, const T& v) {
  using H = typename Held<T>::type;
  if constexpr (std::is_same_v<H, Tensor>) {
    return f(v);
  } else if constexpr (std::is_same_v<H, std::optional<Tensor>>) {
    return v ? std::optional<Tensor>(f(*v)) : std::nullopt;
  } else if constexpr (std::is_same_v<H, TensorList>) {
    TensorList out;
    out.reserve(v.size());
    for (const Tensor& t : v) out.push_back(f(t));
    return out;
  } else if constexpr (std::is_same_v<H, OptionalTensorList>) {
    OptionalTensorList out;
    out.reserve(v.size());
    for (const auto& t : v) out.push_back(t ? std::optional<Tensor>(f(*t)) : std::nullopt);
    return out;
  } else if constexpr (std::is_same_v<H, std::vector<int64_t>>) {
    return std::vector<int64_t>(v.begin(), v.end());
  } else if constexpr (std::is_same_v<H, std::optional<std::vector<int64_t>>>) {
    return v ? std::optional<std::vector<int64_t>>(std::vector<int64_t>(v->begin(), v->end())) : std::nullopt;
  } else if constexpr (std::is_same_v<H, std::optional<std::string>>) {
    return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
  } else {
    return H(v);
  }
}

// A held argument as the kernel takes it.
template <class A, class H>
decltype(auto) pass(H& h) {
  if constexpr (std::is_same_v<H, std::vector<int64_t>>)
    return IntArrayRef(h);
  else if constexpr (std::is_same_v<H, std::optional<std::vector<int64_t>>>)
    return h ? OptionalIntArrayRef(IntArrayRef(*h)) : OptionalIntArrayRef();
  else if constexpr (std::is_same_v<H, std::string>)
    return std::string_view(h);
  else if constexpr (std::is_same_v<H, std::optional<std::string>>)
    return h ? std::optional<std::string_view>(std::string_view(*h)) : std::nullopt;
  else
    return static_cast<H&>(h);
}

template <class F>
void each_tensor(F&& f, const Tensor& t) {
  if (t.defined()) f(t);
}
template <class F>
void each_tensor(F&& f, const std::optional<Tensor>& t) {
  if (t && t->defined()) f(*t);
}
template <class F>
void each_tensor(F&& f, const TensorList& ts) {
  for (const Tensor& t : ts) each_tensor(f, t);
}
template <class F>
void each_tensor(F&& f, const OptionalTensorList& ts) {
  for (const auto& t : ts) each_tensor(f, t);
}
template <class F, class T>
void each_tensor(F&&, const T&) {}

Shape sizes_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }

// How many tensors an op returns (a tuple's size, else one).
template <class R>
struct ResultCount : std::integral_constant<size_t, 1> {};
template <class... Ts>
struct ResultCount<std::tuple<Ts...>> : std::integral_constant<size_t, sizeof...(Ts)> {};

template <auto& O, class Sig = typename std::remove_cvref_t<decltype(O)>::Signature>
struct Async;

template <auto& O, class R, class... Args>
struct Async<O, R(Args...)> {
  // A factory (a Device argument, no device tensor): the values are made on
  // the host at the call, where the shape is known, and their copy into the
  // device's memory is enqueued (the cpu result is kept by the queued copy).
  // Random factories draw from the cpu generator at the call, in call order.
  static R factory(Args... args) {
    std::optional<Device> dev;
    (
        [&](const auto& a) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, Device>)
            if (a.type == DeviceType::PrivateUse1) dev = a;
        }(args),
        ...);
    if (!dev || !g_backend) return detail::host_fallback<R, Args...>(O, DeviceType::PrivateUse1, args...);
    const Device d = resolve_device(*dev);
    require_device(d, O.name());
    auto to_cpu = [](const auto& a) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, Device>)
        return a.type == DeviceType::PrivateUse1 ? Device(DeviceType::CPU) : a;
      else
        return a;
    };
    Tensor r = O.call_kernel(DispatchKey::CPU, to_cpu(args)...);
    DeviceGuard guard(d);
    Tensor out = empty_sim(r.sizes(), r.dtype(), d);
    if (r.numel() > 0)
      as_sim(*current_stream(d), O.name())
          .enqueue([dst = host_view(out), src = r]() mutable { op::copy_.call_kernel(DispatchKey::CPU, dst, src); },
                   "copy_");
    return out;
  }

  // Note [Meta step]: an op with rules in the table gets its results' shapes
  // and dtypes, and raises its argument errors at the call, from its meta step
  // run on meta stand-ins of the arguments.
  static R from_meta(Args... args) {
    detail::HostFallback check(O.name(), DeviceType::PrivateUse1);
    (check.see(args), ...);  // the mixed-device errors
    const Tensor* first = nullptr;
    bool overlapping_self = false;
    (each_tensor(
         [&](const Tensor& t) {
           if (first || !on_sim(t)) return;
           first = &t;
           for (int64_t d = 0; d < t.dim(); ++d) overlapping_self |= t.strides()[d] == 0 && t.sizes()[d] > 1;
         },
         args),
     ...);
    // An expanded self of an in-place op waits: the CPU kernel's error is then raised at the call.
    if (!first || !g_backend || (std::is_same_v<R, Tensor&> && overlapping_self))
      return detail::host_fallback<R, Args...>(O, DeviceType::PrivateUse1, args...);
    std::tuple<typename Held<Args>::type...> stand_in(map_arg(meta_of, args)...);
    auto call = [&] {
      return std::apply([&](auto&... a) -> R { return O.call_kernel(DispatchKey::Meta, pass<Args>(a)...); },
                        stand_in);
    };
    // One entry per result; an undefined result (a gradient the output mask does not ask for) is nullopt.
    std::vector<std::optional<std::pair<Shape, ScalarType>>> results;
    auto note = [&results](const Tensor& t) {
      results.push_back(t.defined() ? std::optional(std::pair(sizes_of(t), t.dtype())) : std::nullopt);
    };
    try {
      if constexpr (std::is_void_v<R> || std::is_same_v<R, Tensor&>) {
        call();
      } else if constexpr (std::is_same_v<R, Tensor>) {
        note(call());
      } else {
        const R r = call();
        std::apply([&](const auto&... t) { (note(t), ...); }, r);
      }
    } catch (const NotImplementedError&) {
      // The meta step cannot tell the results' shapes from these arguments (indexing with a bool mask:
      // its row count is in its values): the op waits for the values, as the host fallback does.
      return detail::host_fallback<R, Args...>(O, DeviceType::PrivateUse1, args...);
    }
    return launch(first->device(), results, args...);
  }

  // Note [Structured kernels]: the out kernel of a structured op (R is Tensor): its output is
  // allocated in device memory by the caller (the generated adapter, out=, self of an in-place
  // form), and the CPU out kernel is enqueued on host views of it and of the arguments.
  static void out_kernel(const Tensor& out, Args... args) {
    detail::HostFallback check(O.name(), DeviceType::PrivateUse1);
    check.see(out);
    (check.see(args), ...);  // the mixed-device errors
    if (!g_backend) {
      detail::HostFallback fb(O.name(), DeviceType::PrivateUse1);
      fb.see(out);
      (fb.see(args), ...);
      const Tensor host_out = fb.map(out);
      std::tuple<std::remove_cvref_t<Args>...> host(fb.map(args)...);
      fb.run([&] { std::apply([&](auto&... a) { O.run_out(host_out, a...); }, host); });
      return;
    }
    DeviceGuard guard(out.device());
    StreamPtr stream = current_stream(out.device());
    SimStream& s = as_sim(*stream, O.name());
    SharedViews shared;
    const Tensor host_out = host_view(out, &shared);
    auto host = std::make_shared<std::tuple<typename Held<Args>::type...>>(
        map_arg([&shared](const Tensor& t) { return on_sim(t) ? host_view(t, &shared) : t; }, args)...);
    s.enqueue([host, host_out] { std::apply([&](auto&... a) { O.run_out(host_out, pass<Args>(a)...); }, *host); },
              O.name());
  }
  static constexpr bool kReturnsTensor = std::is_same_v<R, Tensor>;
  static constexpr size_t kResults = ResultCount<R>::value;

  // The same for a structured op with several results (max.dim's values and indices, _rnn_layer's four):
  // one output per result, each allocated by the caller (an undefined one, a result the rules leave out,
  // stays so). OutsKernel<index_sequence<0, ..., N - 1>>::fn is `void(const Tensor&... N outputs, Args...)`,
  // the op's OutKernel for N results.
  template <size_t>
  using OutArg = const Tensor&;
  template <class Seq>
  struct OutsKernel;
  template <size_t... I>
  struct OutsKernel<std::index_sequence<I...>> {
    static void fn(OutArg<I>... outs, Args... args) { outs_kernel<sizeof...(I)>({outs...}, args...); }
  };
  template <size_t N, size_t... I>
  static void run_outs(const std::array<Tensor, N>& outs, std::index_sequence<I...>, Args... args) {
    O.run_out({outs[I]...}, std::forward<Args>(args)...);
  }
  template <size_t N>
  static void outs_kernel(const std::array<Tensor, N>& outs, Args... args) {
    const Tensor* first = nullptr;
    detail::HostFallback check(O.name(), DeviceType::PrivateUse1);
    for (const Tensor& o : outs)
      if (o.defined()) {
        check.see(o);
        if (!first) first = &o;
      }
    (check.see(args), ...);  // the mixed-device errors
    if (!first) return;
    constexpr auto seq = std::make_index_sequence<N>{};
    if (!g_backend) {
      detail::HostFallback fb(O.name(), DeviceType::PrivateUse1);
      for (const Tensor& o : outs)
        if (o.defined()) fb.see(o);
      (fb.see(args), ...);
      std::array<Tensor, N> host_outs;
      for (size_t i = 0; i < N; ++i)
        if (outs[i].defined()) host_outs[i] = fb.map(outs[i]);
      std::tuple<std::remove_cvref_t<Args>...> host(fb.map(args)...);
      fb.run([&] { std::apply([&](auto&... a) { run_outs<N>(host_outs, seq, a...); }, host); });
      return;
    }
    DeviceGuard guard(first->device());
    StreamPtr stream = current_stream(first->device());
    SimStream& s = as_sim(*stream, O.name());
    SharedViews shared;
    std::array<Tensor, N> host_outs;
    for (size_t i = 0; i < N; ++i)
      if (outs[i].defined()) host_outs[i] = host_view(outs[i], &shared);
    auto host = std::make_shared<std::tuple<typename Held<Args>::type...>>(
        map_arg([&shared](const Tensor& t) { return on_sim(t) ? host_view(t, &shared) : t; }, args)...);
    s.enqueue(
        [host, host_outs] {
          std::apply([&](auto&... a) { run_outs<N>(host_outs, std::make_index_sequence<N>{}, pass<Args>(a)...); },
                     *host);
        },
        O.name());
  }

  // Allocates the results on `device` and enqueues the CPU kernel on its current stream.
  static R launch(const Device& device, const std::vector<std::optional<std::pair<Shape, ScalarType>>>& results,
                  Args... args) {
    DeviceGuard guard(device);
    StreamPtr stream = current_stream(device);
    SimStream& s = as_sim(*stream, O.name());
    SharedViews shared;
    auto host = std::make_shared<std::tuple<typename Held<Args>::type...>>(
        map_arg([&shared](const Tensor& t) { return on_sim(t) ? host_view(t, &shared) : t; }, args)...);
    auto run = [host] {
      return std::apply([&](auto&... a) -> R { return O.call_kernel(DispatchKey::CPU, pass<Args>(a)...); },
                        *host);
    };
    if constexpr (std::is_void_v<R> || std::is_same_v<R, Tensor&>) {
      s.enqueue([run] { run(); }, O.name());
      // In-place writes: bump the version of every device tensor argument
      // (as the fallback does for those it wrote; a kernel's writes are not
      // visible before it runs).
      std::vector<const StorageImpl*> bumped;
      auto bump = [&](const Tensor& t) {
        if (!on_sim(t)) return;
        const StorageImpl* st = t.impl()->storage().get();
        for (const StorageImpl* p : bumped)
          if (p == st) return;
        bumped.push_back(st);
        t.impl()->bump_version();
      };
      if constexpr (std::is_same_v<R, Tensor&>) {
        // Only the argument it returns (Tensor(a!)) is written.
        Tensor* self = nullptr;
        (
            [&](auto&& a) {
              if constexpr (std::is_same_v<decltype(a), Tensor&>)
                if (!self) self = &a;
            }(std::forward<Args>(args)),
            ...);
        bump(*self);
        return *self;
      } else {
        (each_tensor(bump, args), ...);  // fused in-place ops write their lists
        return;
      }
    } else {
      std::vector<Tensor> outs;
      for (const auto& result : results)
        outs.push_back(result ? empty_sim_for(result->first, result->second, device, O.name()) : Tensor());
      std::vector<Tensor> out_host;
      for (const Tensor& o : outs) out_host.push_back(o.defined() ? host_view(o) : Tensor());
      s.enqueue([run, out_host]() mutable {
        auto store = [](Tensor& dst, const Tensor& r) {
          FB_CHECK(dst.defined() == r.defined(), "[", O.name(), "] sim: the kernel's result is ",
                   r.defined() ? "defined" : "undefined", " where the meta step's is not");
          if (!dst.defined()) return;
          FB_CHECK(dst.sizes().size() == r.sizes().size() &&
                       std::equal(dst.sizes().begin(), dst.sizes().end(), r.sizes().begin()) &&
                       dst.dtype() == r.dtype(),
                   "[", O.name(), "] sim: the kernel's result of shape ", shape_str(r.sizes()),
                   " differs from the one allocated, ", shape_str(dst.sizes()));
          op::copy_.call_kernel(DispatchKey::CPU, dst, r);
        };
        if constexpr (std::is_same_v<R, Tensor>) {
          store(out_host[0], run());
        } else {
          R r = run();
          size_t i = 0;
          std::apply([&](auto&... t) { (store(out_host[i++], t), ...); }, r);
        }
      }, O.name());
      if constexpr (std::is_same_v<R, Tensor>) {
        return outs[0];
      } else {
        return [&]<size_t... I>(std::index_sequence<I...>) {
          return R(outs[I]...);
        }(std::make_index_sequence<std::tuple_size_v<R>>{});
      }
    }
  }
};

// An op with rules in the table (it has a Meta kernel: Note [Meta step]).
template <auto& O>
void from_meta(DispatchKey key = DispatchKey::PrivateUse1) {
  FB_CHECK(O.has_kernel(DispatchKey::Meta), "[sim] ", O.name(), " has no meta step to launch it asynchronously");
  // Note [Structured kernels]: one out kernel serves a structured op, its out= and its in-place
  // forms (an in-place primitive runs its functional op's out kernel through the generated adapter).
  if (O.is_structured()) {
    if constexpr (Async<O>::kReturnsTensor)
      O.register_out_kernel(key, &Async<O>::out_kernel);
    else if constexpr (Async<O>::kResults > 1)
      O.register_out_kernel(key, &Async<O>::template OutsKernel<std::make_index_sequence<Async<O>::kResults>>::fn);
    return;
  }
  O.register_kernel(key, &Async<O>::from_meta);
}
template <auto& O>
void factory() {
  O.register_kernel(DispatchKey::PrivateUse1, &Async<O>::factory);
}

// A clone is asynchronous when its result is contiguous (the layout the
// results here get); a clone that keeps other strides waits.
Tensor clone_sim(const Tensor& self, MemoryFormat format) {
  const bool contiguous =
      format == MemoryFormat::Contiguous || (format == MemoryFormat::Preserve && self.is_contiguous());
  if (!contiguous) return detail::host_fallback<Tensor, const Tensor&, MemoryFormat>(op::clone, DeviceType::PrivateUse1,
                                                                                      self, format);
  return Async<op::clone>::from_meta(self, format);
}

void register_async_kernels() {
  // Every op the table can launch from its meta step (Note [Ops launched from the meta step]).
#define FB_SIM_FROM_META(name) from_meta<op::name>();
  FB_FOR_EACH_META_OP(FB_SIM_FROM_META)
#undef FB_SIM_FROM_META
  // Kernels with a meta step of their own (not from table rules).
  from_meta<op::cast>();
  from_meta<op::fill_>();
  op::clone.register_kernel(DispatchKey::PrivateUse1, clone_sim);
  // Factories (made on the host, copied in on the stream).
  factory<op::arange>();
  factory<op::linspace>();
  factory<op::logspace>();
  factory<op::eye>();
  factory<op::randint>();
  factory<op::randint_low>();
  factory<op::randperm>();
  factory<op::normal>();
  factory<op::tril_indices>();
  factory<op::triu_indices>();
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

std::unique_ptr<alloc::RawBackend> make_pinned_memory() { return std::make_unique<PinnedMemory>(); }

void register_backend(int num_devices, std::optional<size_t> memory_limit) {
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
  g_backend = backend;
}

std::unique_ptr<alloc::RawBackend> make_device_memory(int index) {
  std::lock_guard lock(g_mutex);
  FB_CHECK(g_backend, "[sim] the sim backend is not registered yet");
  return g_backend->make_device_memory(index);
}

void install_allocators_and_kernels(std::vector<AllocatorPtr> per_device, AllocatorPtr pinned) {
  std::lock_guard lock(g_mutex);
  FB_CHECK(g_backend, "[sim] the sim backend is not registered yet");
  if (g_installed) return;
  FB_CHECK_VALUE(per_device.size() == static_cast<size_t>(g_backend->device_count()), "[sim] expected ",
                 g_backend->device_count(), " device allocators, got ", per_device.size());
  FB_CHECK_VALUE(pinned != nullptr, "[sim] expected a pinned host allocator");
  g_backend->pinned_ = std::move(pinned);
  set_allocator(DeviceType::PrivateUse1,
                std::make_shared<alloc::PerDeviceAllocator>(DeviceType::PrivateUse1, "sim caching",
                                                            std::move(per_device)));
  op::empty.register_kernel(DispatchKey::PrivateUse1, empty_sim);
  op::copy_.register_kernel(DispatchKey::PrivateUse1, copy_sim);
  register_async_kernels();  // Note [Asynchronous sim kernels]
  g_installed = true;
}

bool is_registered() {
  std::lock_guard lock(g_mutex);
  return g_installed;
}

int num_devices() {
  std::lock_guard lock(g_mutex);
  return g_installed ? g_backend->device_count() : 0;
}

std::map<std::string, int64_t> sync_ops() {
  std::lock_guard lock(g_mutex);
  return g_backend ? g_backend->sync_ops() : std::map<std::string, int64_t>{};
}

}  // namespace flambeau::sim
