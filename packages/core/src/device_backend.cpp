// Note [Device backends] (device_backend.h): the registry, the current device
// and the current stream per device, guards.
#include "flambeau/device_backend.h"

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "flambeau/error.h"

namespace flambeau {

Stream::~Stream() = default;
Event::~Event() = default;
DeviceBackend::~DeviceBackend() = default;

namespace detail {
thread_local bool tls_non_blocking = false;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::array<std::atomic<std::shared_ptr<DeviceBackend>>, kNumDeviceTypes> backends;
  std::string privateuse1_name = "privateuseone";
  std::atomic<bool> privateuse1_registered{false};
};
Registry& registry() {
  static auto* r = new Registry;  // leaked: usable during static destruction
  return *r;
}

std::shared_ptr<DeviceBackend> backend_ptr(DeviceType type) {
  return registry().backends[static_cast<int>(type)].load(std::memory_order_acquire);
}

// Per thread: the current device index per type, and the current stream per
// (type, index) that was set (absent: the default stream).
thread_local std::array<int, kNumDeviceTypes> tls_current_device{};
thread_local std::map<std::pair<int, int>, StreamPtr>* tls_streams = nullptr;

std::map<std::pair<int, int>, StreamPtr>& current_streams() {
  if (!tls_streams) tls_streams = new std::map<std::pair<int, int>, StreamPtr>;  // freed at thread exit below
  static thread_local struct Cleanup {
    ~Cleanup() {
      delete tls_streams;
      tls_streams = nullptr;
    }
  } cleanup;
  return *tls_streams;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return name[0] >= 'a' && name[0] <= 'z';
}

}  // namespace

namespace detail {
const char* privateuse1_name() { return registry().privateuse1_name.c_str(); }
bool privateuse1_registered() { return registry().privateuse1_registered.load(std::memory_order_acquire); }
}  // namespace detail

void register_device_backend(DeviceType type, DeviceBackendPtr backend) {
  FB_CHECK_VALUE(backend != nullptr, "[register_device_backend] the backend must not be null");
  FB_CHECK_VALUE(type != DeviceType::CPU,
                 "[register_device_backend] the cpu device has no backend to register");
  FB_CHECK_VALUE(type != DeviceType::PrivateUse1,
                 "[register_device_backend] a plug-in device type is registered by name");
  registry().backends[static_cast<int>(type)].store(std::move(backend), std::memory_order_release);
}

DeviceType register_device_backend(const std::string& name, DeviceBackendPtr backend) {
  FB_CHECK_VALUE(backend != nullptr, "[register_device_backend] the backend must not be null");
  FB_CHECK_VALUE(valid_name(name), "[register_device_backend] bad device type name '", name,
                 "': expected lowercase letters, digits and '_', starting with a letter");
  FB_CHECK_VALUE(name != "cpu" && name != "cuda" && name != "privateuseone", "[register_device_backend] '",
                 name, "' is a built-in device type name");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.privateuse1_registered.load()) {
    FB_CHECK(r.privateuse1_name == name, "[register_device_backend] cannot register '", name,
             "': the plug-in device slot is taken by '", r.privateuse1_name, "'");
  } else {
    r.privateuse1_name = name;  // written once, before the flag publishes it
  }
  r.backends[static_cast<int>(DeviceType::PrivateUse1)].store(std::move(backend), std::memory_order_release);
  r.privateuse1_registered.store(true, std::memory_order_release);
  return DeviceType::PrivateUse1;
}

DeviceBackend* device_backend(DeviceType type) { return backend_ptr(type).get(); }

DeviceBackend& require_device(Device device, const char* op) {
  DeviceBackend* b = device_backend(device.type);
  if (!b) {
    if (device.type == DeviceType::CUDA)
      throw RuntimeError(detail::cat_str("[", op, "] cannot use ", device.str(),
                                         ": flambeau-cuda is not installed (flambeau-core is built without "
                                         "CUDA; pip install 'flambeau[cuda]' on a machine with a GPU)"));
    throw RuntimeError(detail::cat_str("[", op, "] cannot use ", device.str(), ": no ",
                                       device_type_name(device.type), " backend is registered"));
  }
  const int n = b->device_count();
  if (n == 0) {
    if (device.type == DeviceType::CUDA)
      throw RuntimeError(detail::cat_str("[", op, "] cannot use ", device.str(),
                                         ": no CUDA GPU is available (flambeau-cuda is installed, but the "
                                         "CUDA driver reports no device)"));
    throw RuntimeError(detail::cat_str("[", op, "] cannot use ", device.str(), ": no ",
                                       device_type_name(device.type), " device is available"));
  }
  const int index = device.index >= 0 ? device.index : current_device(device.type);
  FB_CHECK_VALUE(index < n, "[", op, "] invalid device ", device.str(), ": there ", n == 1 ? "is " : "are ",
                 n, " ", device_type_name(device.type), " device", n == 1 ? "" : "s", " (indices 0 to ",
                 n - 1, ")");
  return *b;
}

int device_count(DeviceType type) {
  if (type == DeviceType::CPU) return 1;
  DeviceBackend* b = device_backend(type);
  return b ? b->device_count() : 0;
}

int current_device(DeviceType type) { return tls_current_device[static_cast<int>(type)]; }

void set_current_device(Device device) {
  if (device.is_cpu()) return;
  FB_CHECK_VALUE(device.index >= 0, "[set_device] expected a device with an index, got ", device.str());
  require_device(device, "set_device");
  tls_current_device[static_cast<int>(device.type)] = device.index;
}

Device resolve_device(Device device) {
  if (!device.has_backend_memory() || device.index >= 0) return device;
  return Device(device.type, static_cast<int16_t>(current_device(device.type)));
}

StreamPtr default_stream(Device device) {
  device = resolve_device(device);
  FB_CHECK_VALUE(!device.is_cpu(), "[default_stream] the cpu device has no streams");
  return require_device(device, "default_stream").default_stream(device.index);
}

StreamPtr current_stream(Device device) {
  device = resolve_device(device);
  FB_CHECK_VALUE(!device.is_cpu(), "[current_stream] the cpu device has no streams");
  auto& m = current_streams();
  auto it = m.find({static_cast<int>(device.type), device.index});
  if (it != m.end()) return it->second;
  return require_device(device, "current_stream").default_stream(device.index);
}

void set_current_stream(StreamPtr stream) {
  FB_CHECK_VALUE(stream != nullptr, "[set_stream] the stream must not be None");
  const Device d = stream->device();
  current_streams()[{static_cast<int>(d.type), d.index}] = std::move(stream);
}

DeviceGuard::DeviceGuard(Device device) : type_(device.type), prev_(current_device(device.type)) {
  if (!device.is_cpu() && device.index >= 0) set_current_device(device);
}
DeviceGuard::~DeviceGuard() {
  if (type_ != DeviceType::CPU) tls_current_device[static_cast<int>(type_)] = prev_;
}

StreamGuard::StreamGuard(StreamPtr stream)
    : prev_stream_(current_stream(stream->device())), device_guard_(stream->device()) {
  set_current_stream(std::move(stream));
}
StreamGuard::~StreamGuard() { set_current_stream(std::move(prev_stream_)); }

}  // namespace flambeau
