#pragma once
#include <cstdint>
#include <string>

#include "flambeau/macros.h"

namespace flambeau {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct FB_API Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;  // -1: the current device of that type

  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i = -1) : type(t), index(i) {}
  /// Parses "cpu", "cuda", "cuda:1"; raises ValueError otherwise.
  static Device parse(const std::string& s);

  bool is_cpu() const { return type == DeviceType::CPU; }
  std::string str() const;  // "cpu", "cuda:0"
  friend bool operator==(const Device& a, const Device& b) { return a.type == b.type && a.index == b.index; }
};

FB_API const char* device_type_name(DeviceType t);

}  // namespace flambeau
