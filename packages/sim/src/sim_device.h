#pragma once
// The simulated device "sim" (Note [Simulated device] in sim_device.cpp).
// Registration has three steps, as flambeau-cuda's: register_backend (streams,
// events, the device count), then flambeau_sim/__init__.py wraps
// make_device_memory(i) and make_pinned_memory() in flambeau-alloc's
// CachingAllocator, then install_allocators_and_kernels.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flambeau/allocator.h"
#include "flambeau/device_backend.h"
#include "flambeau_alloc/raw_backend.h"

namespace flambeau::sim {

/// Registers the "sim" device type through core's public plug-in API with
/// `num_devices` devices, each with `memory_limit` bytes (nullopt: no limit).
/// Registering again with the same count is a no-op.
void register_backend(int num_devices, std::optional<size_t> memory_limit);
/// Device `index`'s memory (after register_backend), for a CachingAllocator.
std::unique_ptr<alloc::RawBackend> make_device_memory(int index);
/// Pinned host memory (Tensor.pin_memory()), for a CachingAllocator.
std::unique_ptr<alloc::RawBackend> make_pinned_memory();
/// Routes sim allocations to the per-device allocators and registers the
/// sim kernels (once); afterwards the device is usable.
void install_allocators_and_kernels(std::vector<AllocatorPtr> per_device, AllocatorPtr pinned);
/// Whether install_allocators_and_kernels ran.
bool is_registered();
int num_devices();
/// Test support: how many times each op ran synchronously (the host
/// fallback, blocking copies) since registration.
std::map<std::string, int64_t> sync_ops();

/// Host pages (mmap) poisoned with 0xFF on free, at most `capacity` bytes in
/// segments (nullopt: unlimited): the sim device's memory, also usable alone
/// as a capacity-limited backend (tests of out-of-memory).
std::unique_ptr<alloc::RawBackend> make_sim_memory(std::string name, std::optional<size_t> capacity);

/// Test support: blocks `stream` until release() (Python: Latch).
class Latch {
 public:
  void release();
  void wait();
  bool released() const;

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool released_ = false;
};
void block_stream(Stream& stream, std::shared_ptr<Latch> latch);
void sleep_on_stream(Stream& stream, double seconds);

}  // namespace flambeau::sim
