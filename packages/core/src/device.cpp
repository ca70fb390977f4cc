#include "flambeau/device.h"

#include <string>

#include "flambeau/device_backend.h"
#include "flambeau/error.h"

namespace flambeau {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::CUDA:
      return "cuda";
    case DeviceType::PrivateUse1:
      return detail::privateuse1_name();
    case DeviceType::Meta:
      return "meta";
  }
  return "?";
}

std::string Device::str() const {
  std::string s = device_type_name(type);
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

Device Device::parse(const std::string& s) {
  auto colon = s.find(':');
  std::string kind = s.substr(0, colon);
  DeviceType t;
  const char* plugin = detail::privateuse1_registered() ? detail::privateuse1_name() : nullptr;
  if (kind == "cpu")
    t = DeviceType::CPU;
  else if (kind == "cuda")
    t = DeviceType::CUDA;
  else if (kind == "meta")
    t = DeviceType::Meta;
  else if (plugin && kind == plugin)
    t = DeviceType::PrivateUse1;
  else
    throw ValueError("[device] unknown device '" + s + "': expected 'cpu', 'cuda' or 'cuda:N'" +
                     (plugin ? std::string(", '") + plugin + "' or '" + plugin + ":N'" : std::string()));
  int16_t index = -1;
  if (colon != std::string::npos) {
    std::string num = s.substr(colon + 1);
    bool ok = !num.empty() && num.size() < 5 && num.find_first_not_of("0123456789") == std::string::npos;
    if (!ok)
      throw ValueError("[device] bad device index in '" + s + "': expected '" + kind + ":N' with N >= 0");
    index = static_cast<int16_t>(std::stoi(num));
    FB_CHECK_VALUE(t != DeviceType::Meta || index == 0, "[device] bad device index in '", s,
                   "': the meta device has only index 0");
    if (t == DeviceType::Meta) index = -1;  // one meta device: printed "meta"
  }
  return Device(t, index);
}

}  // namespace flambeau
