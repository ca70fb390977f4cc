#pragma once
// Note [Device backends]
// ======================
// Core holds only the device-generic parts of a device: the Stream and Event
// interfaces, the current device and current stream per device type (thread
// local, as in CUDA), guards, and a registry of backends. A backend (the
// flambeau-cuda package, the simulated device of flambeau-alloc, an
// out-of-tree plug-in) implements DeviceBackend and registers it:
//   * register_device_backend(DeviceType::CUDA, backend) for CUDA;
//   * register_device_backend("sim", backend) for a plug-in type: it takes the
//     PrivateUse1 slot (Note [Device types]) under that name.
// It also registers, as for any device: an allocator for its type
// (set_allocator, allocator.h), kernels under its dispatch key
// (DispatchKey::CUDA or DispatchKey::PrivateUse1, FB_REGISTER_KERNEL or
// Op::register_kernel), and may leave every other op to the host fallback
// (Note [Device fallback] in dispatch.h). docs/design/devices.md walks through
// adding one.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "flambeau/allocator.h"
#include "flambeau/device.h"
#include "flambeau/macros.h"

namespace flambeau {

class Event;

/// A queue of work on one device: work enqueued on one stream runs in order;
/// different streams may run concurrently.
class FB_API Stream {
 public:
  virtual ~Stream();
  virtual Device device() const = 0;
  /// Unique among the live streams of the backend; the default stream of a
  /// device has id 0.
  virtual int64_t id() const = 0;
  /// True when every piece of work enqueued so far has completed.
  virtual bool query() const = 0;
  /// Blocks until every piece of work enqueued so far has completed.
  virtual void synchronize() = 0;
  /// Work enqueued on this stream after this call waits for `event`'s work.
  virtual void wait_event(const Event& event) = 0;
};
using StreamPtr = std::shared_ptr<Stream>;

/// A marker in a stream: completes when the work enqueued before record() did.
class FB_API Event {
 public:
  virtual ~Event();
  virtual void record(Stream& stream) = 0;
  /// True when the recorded work has completed (or nothing was recorded).
  virtual bool query() const = 0;
  virtual void synchronize() = 0;
  /// Milliseconds from this event to `end` (both recorded, completed, timed).
  virtual double elapsed_time(const Event& end) const = 0;
};
using EventPtr = std::shared_ptr<Event>;

class FB_API DeviceBackend {
 public:
  virtual ~DeviceBackend();
  /// "cuda", "sim": the device type's name.
  virtual std::string name() const = 0;
  virtual int device_count() const = 0;
  virtual StreamPtr default_stream(int index) = 0;
  virtual StreamPtr new_stream(int index, int priority) = 0;
  virtual EventPtr new_event(bool enable_timing) = 0;
  /// Waits for every stream of device `index`.
  virtual void synchronize(int index) = 0;
  /// Runs `fn` in order on `stream` and waits for it (the host fallback,
  /// Note [Device fallback]); a backend whose memory the host cannot address
  /// throws NotImplementedError naming the op.
  virtual void run_host_fallback(Stream& stream, const char* op, const std::function<void()>& fn) = 0;
  /// The allocator of page-locked host memory (Tensor.pin_memory()), or null.
  virtual AllocatorPtr pinned_host_allocator() { return nullptr; }
};
using DeviceBackendPtr = std::shared_ptr<DeviceBackend>;

/// Registers the backend of a built-in device type (CUDA).
FB_API void register_device_backend(DeviceType type, DeviceBackendPtr backend);
/// Registers a plug-in device type named `name` in the PrivateUse1 slot and
/// returns DeviceType::PrivateUse1. Registering the same name again replaces
/// the backend; another name while one is registered is a RuntimeError.
FB_API DeviceType register_device_backend(const std::string& name, DeviceBackendPtr backend);
/// The backend of a device type, or null if none is registered.
FB_API DeviceBackend* device_backend(DeviceType type);
/// The backend, or the error a user sees when asking for that device:
/// "[op] cannot use cuda: flambeau-cuda is not installed ..." or
/// "[op] no CUDA GPU is available" (device_count() == 0), or an index out of
/// range.
FB_API DeviceBackend& require_device(Device device, const char* op);
/// Number of devices of a type (0 if no backend; 1 for CPU).
FB_API int device_count(DeviceType type);

/// The current device index of a type on this thread (0 unless set).
FB_API int current_device(DeviceType type);
FB_API void set_current_device(Device device);
/// `device` with index -1 replaced by the current device of its type.
FB_API Device resolve_device(Device device);

/// The current stream of a device on this thread (its default stream unless
/// set); `device` index -1 means the current device.
FB_API StreamPtr current_stream(Device device);
/// Makes `stream` current for its device on this thread.
FB_API void set_current_stream(StreamPtr stream);
FB_API StreamPtr default_stream(Device device);

/// RAII: makes `device` the current device of its type.
class FB_API DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  DeviceType type_;
  int prev_;
};

/// RAII: makes `stream` current for its device (and its device current).
class FB_API StreamGuard {
 public:
  explicit StreamGuard(StreamPtr stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  StreamPtr prev_stream_;
  DeviceGuard device_guard_;
};

namespace detail {
FB_API const char* privateuse1_name();
FB_API bool privateuse1_registered();
/// Set by Tensor.to(..., non_blocking=True) around its copy: a copy between
/// pinned host memory and a device may then return before it completes.
FB_API extern thread_local bool tls_non_blocking;
class NonBlockingGuard {
 public:
  explicit NonBlockingGuard(bool v) : prev_(tls_non_blocking) { tls_non_blocking = v; }
  ~NonBlockingGuard() { tls_non_blocking = prev_; }
  NonBlockingGuard(const NonBlockingGuard&) = delete;
  NonBlockingGuard& operator=(const NonBlockingGuard&) = delete;

 private:
  bool prev_;
};
}  // namespace detail

}  // namespace flambeau
