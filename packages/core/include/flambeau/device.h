#pragma once
#include <cstdint>
#include <string>

#include "flambeau/macros.h"

namespace flambeau {

// Note [Device types]
// CPU and CUDA are built in; PrivateUse1 is the slot of a plug-in device type
// whose name is chosen at run time (PyTorch's PrivateUse1): an out-of-tree
// backend, or flambeau's simulated device "sim", calls
// register_device_backend("sim", backend) (device_backend.h) and from then on
// "sim", "sim:1" parse to DeviceType::PrivateUse1 and print as "sim:1".
// Meta is PyTorch's meta device (Note [Meta device], include/flambeau/meta.h):
// tensors with a shape and a dtype but no memory, on which an op runs only its
// meta step. It has no backend, no index and no streams.
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, PrivateUse1 = 2, Meta = 3 };
inline constexpr int kNumDeviceTypes = 4;

struct FB_API Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;  // -1: the current device of that type

  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i = -1) : type(t), index(i) {}
  /// Parses "cpu", "cuda", "cuda:1", "meta" and a registered plug-in name ("sim:0");
  /// raises ValueError otherwise.
  static Device parse(const std::string& s);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_meta() const { return type == DeviceType::Meta; }
  /// True for a device whose memory a registered backend owns (cuda, a plug-in):
  /// neither the cpu nor meta, which has no memory.
  bool has_backend_memory() const { return type == DeviceType::CUDA || type == DeviceType::PrivateUse1; }
  bool has_index() const { return index >= 0; }
  std::string str() const;  // "cpu", "cuda:0", "sim:1"
  friend bool operator==(const Device& a, const Device& b) { return a.type == b.type && a.index == b.index; }
};

/// "cpu", "cuda", or the name the plug-in device type was registered under
/// ("privateuseone" while none is).
FB_API const char* device_type_name(DeviceType t);

}  // namespace flambeau
