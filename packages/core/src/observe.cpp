// Note [Observation] (flambeau/observe.h): the gate and the profiler's recorder.
#include "flambeau/observe.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>

#include "flambeau/error.h"

namespace flambeau {

namespace detail {
std::atomic<uint8_t> g_observe{0};
}

namespace profiler {
namespace {

// Note [Cheap recording]: the hot path writes plain records into the thread's
// own buffers (events, shape words, stack words, memory records), whose
// capacity is kept from one session to the next; names of ops are their
// static strings, shapes and dtypes raw words, stacks the hook's raw words.
// Strings and the public Event are made only when stop() collects.
struct RawEvent {
  const char* name;  // an op's static name, or null: names[name_id]
  int64_t start_ns;
  int64_t end_ns;
  int64_t sequence_nr;
  int64_t self_cpu_memory;
  int64_t self_device_memory;
  uint64_t correlation;  // Kernel: its launch
  int64_t stream;
  int32_t parent;
  int32_t name_id;
  uint32_t dims_begin;  // record_shapes: the inputs' words in dims (ndim or -1, dtype, sizes...)
  uint32_t out_begin;   // the output's words (ndim, sizes...), kNone if none
  uint32_t stack_begin;
  uint16_t n_inputs;
  uint8_t stack_pairs;
  EventKind kind;
  DeviceType device_type;
  int16_t device_index;
};
constexpr uint32_t kNone = UINT32_MAX;
constexpr int kMaxStackFrames = 64;

struct RawMemory {
  int64_t t;
  int64_t bytes;
  int64_t total;
  uintptr_t address;
  int32_t parent;
  DeviceType device_type;
  int16_t device_index;
};

struct RawLaunch {
  uint64_t correlation;
  int32_t op;  // the event open on the launching thread, or -1
};

struct OpenEntry {
  int32_t index;
  const char* op;  // the op's name for an op call (compared by address), else null
};

struct ThreadBuffer {
  std::mutex mu;
  uint64_t session = 0;  // 0 once stop() collected it; guarded by mu
  uint64_t tid = 0;
  std::vector<RawEvent> events;  // parent: an index into `events`
  std::vector<std::string> names;
  std::vector<int64_t> dims;
  std::vector<uintptr_t> stack;
  std::vector<RawMemory> memory;
  std::vector<RawLaunch> launches;
  std::vector<OpenEntry> open;

  // What stop() leaves: empty, keeping at most kKeptEvents events' worth of capacity.
  void release_excess() {
    constexpr size_t kKeptEvents = size_t{1} << 16;
    auto trim = [](auto& v, size_t keep) {
      v.clear();
      if (v.capacity() > keep) std::remove_reference_t<decltype(v)>().swap(v);
    };
    trim(events, kKeptEvents);
    trim(names, kKeptEvents);
    trim(dims, 8 * kKeptEvents);
    trim(stack, 32 * kKeptEvents);
    trim(memory, kKeptEvents);
    trim(launches, kKeptEvents);
  }

  void reset(uint64_t s) {
    session = s;
    events.clear();
    names.clear();
    dims.clear();
    stack.clear();
    memory.clear();
    launches.clear();
    open.clear();
  }
};

std::mutex g_mu;  // guards g_buffers and session changes
std::atomic<uint64_t> g_session{0};  // the active session, 0 when none
uint64_t g_last_session = 0;
std::atomic<bool> g_shapes{false};
std::atomic<bool> g_memory{false};
std::atomic<bool> g_stack{false};
std::atomic<StackHook> g_stack_hook{nullptr};
std::atomic<uint64_t> g_next_correlation{1};
std::vector<std::shared_ptr<ThreadBuffer>> g_buffers;
std::array<std::atomic<int64_t>, kNumDeviceTypes> g_allocated{};
thread_local std::shared_ptr<ThreadBuffer> tls_buffer;

uint64_t os_thread_id() { return static_cast<uint64_t>(::syscall(SYS_gettid)); }

// This thread's buffer of the active session (registered on first use), or null.
ThreadBuffer* buffer() {
  const uint64_t s = g_session.load(std::memory_order_acquire);
  if (s == 0) return nullptr;
  ThreadBuffer* b = tls_buffer.get();
  if (b && b->session == s) return b;
  std::shared_ptr<ThreadBuffer> fresh = tls_buffer;
  if (fresh) {
    // Collected by the previous session's stop(): reused, capacity and all.
    std::lock_guard lock(fresh->mu);
    if (fresh->session != 0) return nullptr;
  } else {
    fresh = std::make_shared<ThreadBuffer>();
    fresh->tid = os_thread_id();
    fresh->events.reserve(4096);
    fresh->dims.reserve(4096);
  }
  std::lock_guard lock(g_mu);
  if (g_session.load(std::memory_order_relaxed) != s) return nullptr;
  {
    std::lock_guard block(fresh->mu);
    fresh->reset(s);
  }
  g_buffers.push_back(fresh);
  tls_buffer = std::move(fresh);
  return tls_buffer.get();
}

// Opens an event; returns its index in this thread's buffer (and the session, the buffer), or -1.
// `name` is static; `dynamic` names it otherwise.
int64_t begin_event(const char* name, std::string* dynamic, EventKind kind, int64_t sequence_nr, const char* op,
                    uint64_t* session, ThreadBuffer** out = nullptr) {
  ThreadBuffer* b = buffer();
  if (!b) return -1;
  const int64_t t = now_ns();
  int32_t index = 0;
  {
    std::lock_guard lock(b->mu);
    if (b->session == 0) return -1;
    if (op && !b->open.empty() && b->open.back().op == op) return -1;
    index = static_cast<int32_t>(b->events.size());
    RawEvent& e = b->events.emplace_back();
    e.name = name;
    e.name_id = -1;
    if (dynamic) {
      e.name_id = static_cast<int32_t>(b->names.size());
      b->names.push_back(std::move(*dynamic));
    }
    e.start_ns = t;
    e.end_ns = 0;
    e.sequence_nr = sequence_nr;
    e.self_cpu_memory = e.self_device_memory = 0;
    e.correlation = 0;
    e.stream = -1;
    e.parent = b->open.empty() ? -1 : b->open.back().index;
    e.dims_begin = static_cast<uint32_t>(b->dims.size());
    e.out_begin = kNone;
    e.n_inputs = 0;
    e.stack_pairs = 0;
    e.stack_begin = 0;
    e.kind = kind;
    e.device_type = DeviceType::CPU;
    e.device_index = -1;
    b->open.push_back({index, op});
    *session = b->session;
  }
  if (out) *out = b;
  if (kind != EventKind::Kernel && g_stack.load(std::memory_order_relaxed)) {
    // Outside the lock: the hook may run Python (a frame object made, a collection freeing tensors).
    if (StackHook hook = g_stack_hook.load(std::memory_order_relaxed)) {
      uintptr_t words[2 * kMaxStackFrames];
      const int n = hook(words, kMaxStackFrames);
      std::lock_guard lock(b->mu);
      if (b->session == *session) {
        RawEvent& e = b->events[index];
        e.stack_begin = static_cast<uint32_t>(b->stack.size());
        e.stack_pairs = static_cast<uint8_t>(n);
        b->stack.insert(b->stack.end(), words, words + 2 * n);
      } else {
        // The session ended meanwhile: the hook's references are dropped (leaked), a rare race.
      }
    }
  }
  return index;
}

void end_event(int64_t index, uint64_t session) {
  if (index < 0) return;
  const int64_t t = now_ns();
  ThreadBuffer* b = tls_buffer.get();
  if (!b) return;
  std::lock_guard lock(b->mu);
  if (b->session != session || index >= static_cast<int64_t>(b->events.size())) return;
  b->events[index].end_ns = t;
  // Ranges close innermost first; one left open inside (a Python range whose
  // exit never ran) ends with its parent.
  while (!b->open.empty()) {
    const int32_t top = b->open.back().index;
    b->open.pop_back();
    if (top == index) break;
    b->events[top].end_ns = t;
  }
}

std::vector<int64_t> shape_at(const std::vector<int64_t>& dims, size_t at) {
  const int64_t n = dims[at];
  return {dims.begin() + static_cast<ptrdiff_t>(at) + 1, dims.begin() + static_cast<ptrdiff_t>(at) + 1 + n};
}

// The public event of a raw one (strings and shapes made here, off the hot path).
Event make_event(ThreadBuffer& b, RawEvent& r, int32_t offset) {
  Event e;
  if (r.name) {
    e.name = r.kind == EventKind::Op ? std::string("aten::") + r.name : std::string(r.name);
  } else {
    e.name = std::move(b.names[r.name_id]);
  }
  e.kind = r.kind;
  e.start_ns = r.start_ns;
  e.end_ns = r.end_ns;
  e.thread = b.tid;
  e.parent = r.parent >= 0 ? r.parent + offset : -1;
  e.sequence_nr = r.sequence_nr;
  e.self_cpu_memory = r.self_cpu_memory;
  e.self_device_memory = r.self_device_memory;
  size_t at = r.dims_begin;
  for (uint16_t i = 0; i < r.n_inputs; ++i) {
    if (b.dims[at] < 0) {
      e.shapes.emplace_back();
      e.dtypes.emplace_back();
      at += 1;
      continue;
    }
    const int64_t ndim = b.dims[at];
    e.dtypes.emplace_back(dtype_name(static_cast<ScalarType>(b.dims[at + 1])));
    e.shapes.emplace_back(b.dims.begin() + static_cast<ptrdiff_t>(at) + 2,
                          b.dims.begin() + static_cast<ptrdiff_t>(at) + 2 + ndim);
    at += 2 + static_cast<size_t>(ndim);
  }
  if (r.out_begin != kNone) e.output_shape = shape_at(b.dims, r.out_begin);
  e.stack.assign(b.stack.begin() + r.stack_begin, b.stack.begin() + r.stack_begin + 2 * r.stack_pairs);
  e.stream = r.stream;
  e.correlation = r.correlation;
  if (r.kind == EventKind::Kernel) e.device = Device{r.device_type, r.device_index}.str();
  return e;
}

// A forked child (a DataLoader worker, say) does not go on recording its
// parent's session: it starts with none. The parent's buffers are left alone
// (leaked): another thread of the parent may have held one's mutex at the fork.
void forget_session_in_child() {
  detail::g_observe.fetch_and(static_cast<uint8_t>(~kObserveProfiler));
  g_session.store(0, std::memory_order_relaxed);
  new (&g_mu) std::mutex;
  new std::vector<std::shared_ptr<ThreadBuffer>>(std::move(g_buffers));
  g_buffers = {};
  if (tls_buffer) new std::shared_ptr<ThreadBuffer>(std::move(tls_buffer));
}

[[maybe_unused]] const int g_fork_handler = ::pthread_atfork(nullptr, nullptr, &forget_session_in_child);

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void set_stack_hook(StackHook hook) { g_stack_hook.store(hook); }

void start(const ProfilerConfig& config) {
  std::lock_guard lock(g_mu);
  if (g_session.load(std::memory_order_relaxed) != 0)
    throw RuntimeError("[profiler] a profiler is already running in this process: stop it before starting another");
  g_buffers.clear();
  for (auto& a : g_allocated) a.store(0, std::memory_order_relaxed);
  g_shapes.store(config.record_shapes, std::memory_order_relaxed);
  g_memory.store(config.profile_memory, std::memory_order_relaxed);
  g_stack.store(config.with_stack, std::memory_order_relaxed);
  g_session.store(++g_last_session, std::memory_order_release);
  detail::g_observe.fetch_or(kObserveProfiler);
}

std::vector<Event> stop() {
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard lock(g_mu);
    detail::g_observe.fetch_and(static_cast<uint8_t>(~kObserveProfiler));
    g_session.store(0, std::memory_order_release);
    buffers.swap(g_buffers);
  }
  const int64_t t = now_ns();
  std::vector<Event> out;
  std::vector<std::pair<uint64_t, int32_t>> launches;  // correlation -> launching op (index in out)
  for (auto& b : buffers) {
    std::lock_guard lock(b->mu);
    b->session = 0;
    const auto offset = static_cast<int32_t>(out.size());
    for (const OpenEntry& o : b->open) b->events[o.index].end_ns = t;
    b->open.clear();
    int32_t local = 0;
    for (RawEvent& r : b->events) {
      Event& e = out.emplace_back(make_event(*b, r, offset));
      e.thread_index = local++;
    }
    for (const RawLaunch& l : b->launches) launches.emplace_back(l.correlation, l.op >= 0 ? l.op + offset : -1);
    for (const RawMemory& m : b->memory) {
      Event& e = out.emplace_back();
      e.name = "[memory]";
      e.kind = EventKind::Memory;
      e.start_ns = e.end_ns = m.t;
      e.thread = b->tid;
      e.thread_index = local++;
      e.parent = m.parent >= 0 ? m.parent + offset : -1;
      e.bytes = m.bytes;
      e.total_allocated = m.total;
      e.address = m.address;
      e.device = Device{m.device_type, m.device_index}.str();
    }
    // Capacity stays for the thread's next session, up to a bound (a long session's does not).
    b->release_excess();
  }
  if (!launches.empty()) {
    std::sort(launches.begin(), launches.end());
    for (Event& e : out) {
      if (e.kind != EventKind::Kernel || e.correlation == 0) continue;
      auto it = std::lower_bound(launches.begin(), launches.end(), std::make_pair(e.correlation, INT32_MIN));
      if (it != launches.end() && it->first == e.correlation) e.launched_by = it->second;
    }
  }
  return out;
}

bool is_active() { return g_session.load(std::memory_order_relaxed) != 0; }
bool recording_shapes() { return g_shapes.load(std::memory_order_relaxed); }

RecordScope::RecordScope(const char* name, EventKind kind, int64_t sequence_nr) {
  if (detail::observing(kObserveProfiler)) index_ = begin_event(name, nullptr, kind, sequence_nr, nullptr, &session_);
}
RecordScope::RecordScope(std::string name, EventKind kind, int64_t sequence_nr) {
  if (detail::observing(kObserveProfiler)) index_ = begin_event(nullptr, &name, kind, sequence_nr, nullptr, &session_);
}
void RecordScope::end() {
  end_event(index_, session_);
  index_ = -1;
}

OpScope::OpScope(const char* op_name) {
  if (!detail::observing(kObserveProfiler)) return;
  ThreadBuffer* b = nullptr;
  index_ = begin_event(op_name, nullptr, EventKind::Op, -1, op_name, &session_, &b);
  buffer_ = b;
  wants_inputs_ = index_ >= 0 && g_shapes.load(std::memory_order_relaxed);
}
OpScope::~OpScope() { end_event(index_, session_); }

void OpScope::add_input(const Tensor& t) {
  auto* b = static_cast<ThreadBuffer*>(buffer_);
  if (!b || index_ < 0) return;
  std::lock_guard lock(b->mu);
  if (b->session != session_) return;
  RawEvent& e = b->events[index_];
  ++e.n_inputs;
  if (!t.defined()) {
    b->dims.push_back(-1);
    return;
  }
  const IntArrayRef sizes = t.sizes();
  b->dims.push_back(static_cast<int64_t>(sizes.size()));
  b->dims.push_back(static_cast<int64_t>(t.dtype()));
  b->dims.insert(b->dims.end(), sizes.begin(), sizes.end());
}

void OpScope::add_output(const Tensor& t) {
  auto* b = static_cast<ThreadBuffer*>(buffer_);
  if (!b || index_ < 0 || !t.defined()) return;
  std::lock_guard lock(b->mu);
  if (b->session != session_) return;
  const IntArrayRef sizes = t.sizes();
  b->events[index_].out_begin = static_cast<uint32_t>(b->dims.size());
  b->dims.push_back(static_cast<int64_t>(sizes.size()));
  b->dims.insert(b->dims.end(), sizes.begin(), sizes.end());
}

int64_t range_begin(const std::string& name, EventKind kind, int64_t sequence_nr) {
  if (!detail::observing(kObserveProfiler)) return -1;
  uint64_t session = 0;
  std::string copy = name;
  const int64_t index = begin_event(nullptr, &copy, kind, sequence_nr, nullptr, &session);
  if (index < 0) return -1;
  return static_cast<int64_t>(session << 32) | index;
}

void range_end(int64_t token) {
  if (token < 0) return;
  end_event(token & 0xffffffff, static_cast<uint64_t>(token) >> 32);
}

uint64_t kernel_launch() {
  if (!detail::observing(kObserveProfiler)) return 0;
  ThreadBuffer* b = buffer();
  if (!b) return 0;
  const uint64_t id = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(b->mu);
  if (b->session == 0) return 0;
  b->launches.push_back({id, b->open.empty() ? -1 : b->open.back().index});
  return id;
}

int64_t kernel_begin(const char* name, Device device, int64_t stream, uint64_t correlation) {
  if (!detail::observing(kObserveProfiler)) return -1;
  uint64_t session = 0;
  ThreadBuffer* b = nullptr;
  const int64_t index = begin_event(name, nullptr, EventKind::Kernel, -1, nullptr, &session, &b);
  if (index < 0) return -1;
  {
    std::lock_guard lock(b->mu);
    RawEvent& e = b->events[index];
    e.device_type = device.type;
    e.device_index = device.index;
    e.stream = stream;
    e.correlation = correlation;
  }
  return static_cast<int64_t>(session << 32) | index;
}

void kernel_record(const char* name, Device device, int64_t stream, uint64_t correlation, int64_t start_ns,
                   int64_t end_ns) {
  const int64_t token = kernel_begin(name, device, stream, correlation);
  if (token < 0) return;
  ThreadBuffer* b = tls_buffer.get();
  {
    std::lock_guard lock(b->mu);
    RawEvent& e = b->events[token & 0xffffffff];
    e.start_ns = start_ns;
  }
  range_end(token);
  std::lock_guard lock(b->mu);
  if (b->session == (static_cast<uint64_t>(token) >> 32)) b->events[token & 0xffffffff].end_ns = end_ns;
}

void record_memory(const void* ptr, int64_t bytes, Device device) {
  if (!g_memory.load(std::memory_order_relaxed)) return;
  ThreadBuffer* b = buffer();
  if (!b) return;
  const int64_t t = now_ns();
  const int64_t total =
      g_allocated[static_cast<int>(device.type)].fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::lock_guard lock(b->mu);
  if (b->session == 0) return;
  const int32_t parent = b->open.empty() ? -1 : b->open.back().index;
  if (parent >= 0) {
    RawEvent& p = b->events[parent];
    (device.is_cpu() ? p.self_cpu_memory : p.self_device_memory) += bytes;
  }
  b->memory.push_back({t, bytes, total, reinterpret_cast<uintptr_t>(ptr), parent, device.type, device.index});
}

void note_sequence_nr(int64_t sequence_nr) {
  ThreadBuffer* b = buffer();
  if (!b) return;
  std::lock_guard lock(b->mu);
  if (b->session == 0 || b->open.empty() || b->open.back().op == nullptr) return;
  RawEvent& e = b->events[b->open.back().index];
  if (e.sequence_nr < 0) e.sequence_nr = sequence_nr;
}

}  // namespace profiler
}  // namespace flambeau
