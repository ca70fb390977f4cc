#pragma once
// For a device package whose memory is one flambeau-alloc CachingAllocator per
// device index (made with CachingAllocator._from_raw_backend): the allocator
// it installs for its device type with flambeau::set_allocator. Header-only,
// over core's Allocator interface, so the package links no alloc code.
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flambeau/allocator.h"
#include "flambeau/device_backend.h"
#include "flambeau/error.h"

namespace flambeau::alloc {

/// Routes allocate_on(nbytes, device) to the allocator of device.index (and
/// allocate to the current device's), and deallocate / record_stream to the
/// allocator that made the block.
class PerDeviceAllocator final : public Allocator {
 public:
  PerDeviceAllocator(DeviceType type, std::string name, std::vector<AllocatorPtr> per_device)
      : type_(type), name_(std::move(name)), per_device_(std::move(per_device)) {}
  void* allocate(size_t nbytes) override {
    return allocate_on(nbytes, Device(type_, static_cast<int16_t>(current_device(type_))));
  }
  void* allocate_on(size_t nbytes, Device device) override {
    FB_CHECK_VALUE(device.index >= 0 && static_cast<size_t>(device.index) < per_device_.size(),
                   "[allocate] invalid device ", device.str(), " (", per_device_.size(), " devices)");
    void* p = per_device_[static_cast<size_t>(device.index)]->allocate_on(nbytes, device);
    std::lock_guard lock(m_);
    owner_[p] = device.index;
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    int index = -1;
    {
      std::lock_guard lock(m_);
      auto it = owner_.find(ptr);
      if (it != owner_.end()) {
        index = it->second;
        owner_.erase(it);
      }
    }
    if (index < 0) {
      std::fprintf(stderr, "flambeau %s: asked to free %p (%zu bytes), which no device allocated; ignored\n",
                   name_.c_str(), ptr, nbytes);
      return;
    }
    per_device_[static_cast<size_t>(index)]->deallocate(ptr, nbytes);
  }
  void record_stream(void* ptr, Stream& stream) override {
    int index = -1;
    {
      std::lock_guard lock(m_);
      auto it = owner_.find(ptr);
      if (it != owner_.end()) index = it->second;
    }
    if (index >= 0) per_device_[static_cast<size_t>(index)]->record_stream(ptr, stream);
  }
  std::string name() const override { return name_; }

 private:
  DeviceType type_;
  std::string name_;
  std::vector<AllocatorPtr> per_device_;
  std::mutex m_;
  std::unordered_map<void*, int> owner_;
};

}  // namespace flambeau::alloc
