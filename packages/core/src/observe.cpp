// Note [Observation] (flambeau/observe.h): the gate and the profiler's recorder.
#include "flambeau/observe.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <memory>
#include <mutex>

#include "flambeau/error.h"

namespace flambeau {

namespace detail {
std::atomic<uint8_t> g_observe{0};
}

namespace profiler {
namespace {

struct OpenEntry {
  int32_t index;
  const char* op;  // the op's name for an op call (compared by address), else null
};

struct ThreadBuffer {
  std::mutex mu;
  uint64_t session = 0;  // 0 once stop() collected it; guarded by mu
  uint64_t tid = 0;
  std::vector<Event> events;  // parent: an index into `events`
  std::vector<OpenEntry> open;
};

std::mutex g_mu;  // guards g_buffers and session changes
std::atomic<uint64_t> g_session{0};  // the active session, 0 when none
uint64_t g_last_session = 0;
std::atomic<bool> g_shapes{false};
std::atomic<bool> g_memory{false};
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
  auto fresh = std::make_shared<ThreadBuffer>();
  fresh->session = s;
  fresh->tid = os_thread_id();
  {
    std::lock_guard lock(g_mu);
    if (g_session.load(std::memory_order_relaxed) != s) return nullptr;
    g_buffers.push_back(fresh);
  }
  tls_buffer = std::move(fresh);
  return tls_buffer.get();
}

// Opens an event; returns its index in this thread's buffer (and the session), or -1.
int64_t begin_event(std::string&& name, EventKind kind, int64_t sequence_nr, const char* op, uint64_t* session) {
  ThreadBuffer* b = buffer();
  if (!b) return -1;
  const int64_t t = now_ns();
  std::lock_guard lock(b->mu);
  if (b->session == 0) return -1;
  if (op && !b->open.empty() && b->open.back().op == op) return -1;
  const auto index = static_cast<int32_t>(b->events.size());
  Event& e = b->events.emplace_back();
  e.name = std::move(name);
  e.kind = kind;
  e.start_ns = t;
  e.thread = b->tid;
  e.parent = b->open.empty() ? -1 : b->open.back().index;
  e.sequence_nr = sequence_nr;
  b->open.push_back({index, op});
  *session = b->session;
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

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start(const ProfilerConfig& config) {
  std::lock_guard lock(g_mu);
  if (g_session.load(std::memory_order_relaxed) != 0)
    throw RuntimeError("[profiler] a profiler is already running in this process: stop it before starting another");
  g_buffers.clear();
  for (auto& a : g_allocated) a.store(0, std::memory_order_relaxed);
  g_shapes.store(config.record_shapes, std::memory_order_relaxed);
  g_memory.store(config.profile_memory, std::memory_order_relaxed);
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
  for (auto& b : buffers) {
    std::lock_guard lock(b->mu);
    b->session = 0;
    const auto offset = static_cast<int32_t>(out.size());
    for (const OpenEntry& o : b->open) b->events[o.index].end_ns = t;
    b->open.clear();
    int32_t local = 0;
    for (Event& e : b->events) {
      e.thread_index = local++;
      if (e.parent >= 0) e.parent += offset;
      if (e.kind == EventKind::Op) e.name.insert(0, "aten::");
      out.push_back(std::move(e));
    }
    b->events.clear();
  }
  return out;
}

bool is_active() { return g_session.load(std::memory_order_relaxed) != 0; }
bool recording_shapes() { return g_shapes.load(std::memory_order_relaxed); }

RecordScope::RecordScope(const char* name, EventKind kind, int64_t sequence_nr) {
  if (detail::observing(kObserveProfiler)) index_ = begin_event(std::string(name), kind, sequence_nr, nullptr, &session_);
}
RecordScope::RecordScope(std::string name, EventKind kind, int64_t sequence_nr) {
  if (detail::observing(kObserveProfiler)) index_ = begin_event(std::move(name), kind, sequence_nr, nullptr, &session_);
}
void RecordScope::end() {
  end_event(index_, session_);
  index_ = -1;
}

OpScope::OpScope(const char* op_name) {
  if (!detail::observing(kObserveProfiler)) return;
  index_ = begin_event(std::string(op_name), EventKind::Op, -1, op_name, &session_);
  wants_inputs_ = index_ >= 0 && g_shapes.load(std::memory_order_relaxed);
}
OpScope::~OpScope() { end_event(index_, session_); }

void OpScope::add_input(const Tensor& t) {
  ThreadBuffer* b = tls_buffer.get();
  if (!b || index_ < 0) return;
  std::lock_guard lock(b->mu);
  if (b->session != session_) return;
  Event& e = b->events[index_];
  if (!t.defined()) {
    e.shapes.emplace_back();
    e.dtypes.emplace_back();
    return;
  }
  const IntArrayRef sizes = t.sizes();
  e.shapes.emplace_back(sizes.begin(), sizes.end());
  e.dtypes.emplace_back(dtype_name(t.dtype()));
}

void OpScope::add_output(const Tensor& t) {
  ThreadBuffer* b = tls_buffer.get();
  if (!b || index_ < 0 || !t.defined()) return;
  std::lock_guard lock(b->mu);
  if (b->session != session_) return;
  const IntArrayRef sizes = t.sizes();
  b->events[index_].output_shape.assign(sizes.begin(), sizes.end());
}

int64_t range_begin(const std::string& name, EventKind kind, int64_t sequence_nr) {
  if (!detail::observing(kObserveProfiler)) return -1;
  uint64_t session = 0;
  const int64_t index = begin_event(std::string(name), kind, sequence_nr, nullptr, &session);
  if (index < 0) return -1;
  return static_cast<int64_t>(session << 32) | index;
}

void range_end(int64_t token) {
  if (token < 0) return;
  end_event(token & 0xffffffff, static_cast<uint64_t>(token) >> 32);
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
    Event& p = b->events[parent];
    (device.is_cpu() ? p.self_cpu_memory : p.self_device_memory) += bytes;
  }
  Event& e = b->events.emplace_back();
  e.name = "[memory]";
  e.kind = EventKind::Memory;
  e.start_ns = e.end_ns = t;
  e.thread = b->tid;
  e.parent = parent;
  e.bytes = bytes;
  e.total_allocated = total;
  e.address = reinterpret_cast<uintptr_t>(ptr);
  e.device = device.str();
}

void note_sequence_nr(int64_t sequence_nr) {
  ThreadBuffer* b = buffer();
  if (!b) return;
  std::lock_guard lock(b->mu);
  if (b->session == 0 || b->open.empty() || b->open.back().op == nullptr) return;
  Event& e = b->events[b->open.back().index];
  if (e.sequence_nr < 0) e.sequence_nr = sequence_nr;
}

}  // namespace profiler
}  // namespace flambeau
