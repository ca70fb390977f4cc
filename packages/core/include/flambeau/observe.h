#pragma once
// Note [Observation]
// One gate for everything that watches the runtime: `detail::g_observe`, a
// set of flags read with one relaxed load. The dispatcher tests it once at
// the top of every op call (Note [Dispatch]); while it is zero that branch is
// the whole cost of observation. Its clients:
//   * kObserveKernelTrace: the debug kernel trace (Note [Kernel trace]);
//   * kObserveProfiler: the profiler's recorder below, which `fb.profiler`
//     drives (flambeau_core/profiler/);
//   * kObserveAutocast: set while some thread has an autocast region open
//     (Note [Autocast], dispatch.h), so that autocast costs nothing outside one.
// The autograd engine (backward nodes), the storage allocation path (bytes
// allocated and freed, whatever allocator is current), the DataLoader and
// user code (`record_function`) report to the same recorder through
// RecordScope / record_memory, each behind the same gate. A device backend's
// streams report the kernels they run (kernel_launch on the launching thread,
// kernel_begin on the stream's own), linked to the op open at the launch; with
// with_stack, the Python binding's stack hook gives each op and range its
// call site. How records are kept cheaply: Note [Cheap recording], observe.cpp.
//
// The recorder: every thread appends to a buffer of its own (registered once
// per session; a per-buffer mutex is only contended while stop() collects it),
// so threads never share a cache line on the hot path. Events nest: each
// keeps the index of the innermost event open on its thread when it began,
// from which self time (total minus the children's totals) follows. An op the
// Autograd kernel calls again under AutoExcludeAutograd (Note [Dispatch]) is
// the same call, not a child: it is not recorded twice.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flambeau/device.h"
#include "flambeau/macros.h"
#include "flambeau/tensor.h"

namespace flambeau {

inline constexpr uint8_t kObserveKernelTrace = 1;
inline constexpr uint8_t kObserveProfiler = 2;
inline constexpr uint8_t kObserveAutocast = 4;

namespace detail {
FB_API extern std::atomic<uint8_t> g_observe;
inline bool observing(uint8_t flag) { return (g_observe.load(std::memory_order_relaxed) & flag) != 0; }
}  // namespace detail

namespace profiler {

enum class EventKind : uint8_t {
  Op = 0,         // an op through the dispatcher
  UserRange = 1,  // record_function
  Backward = 2,   // a node the autograd engine runs
  Memory = 3,     // an allocation (bytes > 0) or a free (bytes < 0), an instant
  DataLoader = 4,  // fetching a batch
  Kernel = 5       // work a device stream ran (device activity), on the stream's thread
};

struct ProfilerConfig {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;  // the Python stack of each op and range, through the stack hook
};

/// One recorded event. Times are steady-clock nanoseconds.
struct Event {
  std::string name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t thread = 0;  // the OS thread id
  int32_t parent = -1;  // index (in the collected list) of the enclosing event, -1 at top level
  int32_t thread_index = 0;  // its index among its thread's events (range_begin's token names it)
  int64_t sequence_nr = -1;
  // Op: bytes allocated minus bytes freed while it was the innermost open
  // event, per device type (CPU, other). Memory: the bytes, the device and
  // the bytes allocated in total (since start) after it.
  int64_t self_cpu_memory = 0;
  int64_t self_device_memory = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0;
  uint64_t address = 0;  // Memory: the block's address (pairs a free with its allocation)
  std::string device;
  std::vector<std::vector<int64_t>> shapes;  // record_shapes: one per tensor argument
  std::vector<std::string> dtypes;
  std::vector<int64_t> output_shape;  // record_shapes, for an op returning one tensor
  // with_stack: the call site's frames, innermost first, as (code, line) word pairs the stack
  // hook wrote; whoever reads them owns what the hook took (the binding symbolises them).
  std::vector<uintptr_t> stack;
  // Kernel: the stream it ran on, its launch's id and the event (index in the collected list)
  // of the op that launched it (-1: none recorded).
  int64_t stream = -1;
  uint64_t correlation = 0;
  int32_t launched_by = -1;
};

/// with_stack: writes the calling thread's Python stack, innermost frame first, as at most
/// `max_frames` (code, line) pairs into `out`; returns the number of pairs. Installed by the
/// Python binding; called (on the recording thread) only while with_stack is on.
using StackHook = int (*)(uintptr_t* out, int max_frames);
FB_API void set_stack_hook(StackHook hook);

/// Starts a session (clears what a previous one left). Throws if one is active.
FB_API void start(const ProfilerConfig& config);
/// Ends the session; returns every event of every thread, parents before
/// children (parent indices refer to this list). Events still open end now.
FB_API std::vector<Event> stop();
FB_API bool is_active();
FB_API bool recording_shapes();
/// The steady clock of the event times, in nanoseconds.
FB_API int64_t now_ns();

/// RAII: one range on this thread's buffer (nothing when no session).
class FB_API RecordScope {
 public:
  RecordScope(const char* name, EventKind kind, int64_t sequence_nr = -1);
  RecordScope(std::string name, EventKind kind, int64_t sequence_nr = -1);
  ~RecordScope() { end(); }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;
  /// True if the range was recorded (a session is active).
  bool recorded() const { return index_ >= 0; }
  void end();

 private:
  int64_t index_ = -1;
  uint64_t session_ = 0;
};

/// The op-call range the dispatcher opens (Note [Observation]). Not recorded
/// when the innermost open event is a call of the same op (the Autograd
/// kernel's call again).
class FB_API OpScope {
 public:
  explicit OpScope(const char* op_name);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  /// True if input shapes are wanted (record_shapes and recorded).
  bool wants_inputs() const { return wants_inputs_; }
  void add_input(const Tensor& t);
  void add_input(const std::optional<Tensor>& t) {
    if (t) add_input(*t);
  }
  void add_input(const TensorList& ts) {
    for (const auto& t : ts) add_input(t);
  }
  void add_input(const OptionalTensorList& ts) {
    for (const auto& t : ts) add_input(t);
  }
  template <class T>
  void add_input(const T&) {}
  /// The result's shape (FLOP counts of convolutions need it).
  void add_output(const Tensor& t);

 private:
  int64_t index_ = -1;
  uint64_t session_ = 0;
  void* buffer_ = nullptr;  // this thread's buffer, while recorded
  bool wants_inputs_ = false;
};

/// Range API for bindings that cannot hold an RAII object (Python's
/// record_function): returns a token for range_end, or -1 if nothing recorded.
FB_API int64_t range_begin(const std::string& name, EventKind kind, int64_t sequence_nr = -1);
FB_API void range_end(int64_t token);

/// Device activity. A launch from the calling thread: returns the id that links the kernel's
/// range to the op open here (the launching op), or 0 when nothing records.
FB_API uint64_t kernel_launch();
/// A kernel's range on the thread that runs it (a stream's worker thread): a token for
/// range_end, or -1. `name` must outlive the session (an op's name).
FB_API int64_t kernel_begin(const char* name, Device device, int64_t stream, uint64_t correlation);
/// A kernel whose device-side times were measured afterwards (device timing events).
FB_API void kernel_record(const char* name, Device device, int64_t stream, uint64_t correlation, int64_t start_ns,
                          int64_t end_ns);

/// An allocation (bytes > 0) or a free (bytes < 0) of device memory, when
/// profile_memory is on. Called from the storage allocation path.
FB_API void record_memory(const void* ptr, int64_t bytes, Device device);
/// The autograd engine gives a new node's sequence number: it becomes the
/// sequence number of the innermost open op on this thread (the forward op
/// that made the node), linking it to the node's backward event.
FB_API void note_sequence_nr(int64_t sequence_nr);

}  // namespace profiler
}  // namespace flambeau
