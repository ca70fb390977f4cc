#pragma once
// Note [Allocator registry]
// Core keeps one *current* allocator per device type. A Storage remembers the
// allocator that made it (a shared_ptr), so the current allocator can be
// swapped at any time: old storages are freed through the allocator that made
// them, new ones come from the new current allocator. Three ways to provide an
// allocator:
//   1. a C++ subclass of Allocator (what flambeau-alloc does);
//   2. the C ABI below: a table of function pointers, so an allocator compiled
//      separately (C, Rust, ...) can be loaded from a shared library;
//   3. a Python object with malloc(nbytes) -> int and free(ptr, nbytes)
//      (bound in core's Python module; slow, for experiments and tests).
// The default is the system allocator: 64-byte aligned, with transparent huge
// pages requested for large blocks.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "flambeau/device.h"
#include "flambeau/macros.h"

namespace flambeau {

class Stream;

class FB_API Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns memory for nbytes > 0 bytes, aligned to at least 64 bytes.
  /// Throws flambeau::RuntimeError when out of memory.
  virtual void* allocate(size_t nbytes) = 0;
  /// Frees a block this allocator returned; nbytes is the size asked for.
  virtual void deallocate(void* ptr, size_t nbytes) noexcept = 0;
  virtual std::string name() const = 0;
  /// What StorageImpl::allocate calls: `device` has a concrete index. A
  /// device allocator (one pool per device and stream) overrides this; the
  /// default ignores the device.
  virtual void* allocate_on(size_t nbytes, Device device) {
    (void)device;
    return allocate(nbytes);
  }
  /// Tensor.record_stream: the block at `ptr` (a pointer this allocator
  /// returned) is also used by `stream`, so when it is freed it must not be
  /// reused before the work enqueued on `stream` so far has completed
  /// (Note [Stream-ordered reuse] in flambeau-alloc). Default: nothing to do.
  virtual void record_stream(void* ptr, Stream& stream) {
    (void)ptr;
    (void)stream;
  }
};
using AllocatorPtr = std::shared_ptr<Allocator>;

FB_API void set_allocator(DeviceType type, AllocatorPtr allocator);
FB_API AllocatorPtr get_allocator(DeviceType type);
/// Core's default CPU allocator.
FB_API AllocatorPtr system_allocator();

}  // namespace flambeau

extern "C" {
/// C ABI of an allocator (extension point 1, way 2). Version 1.
/// `release` (may be NULL) is called once when core no longer uses the table,
/// i.e. after the last storage made by it has been freed.
struct fb_allocator_v1 {
  uint32_t abi_version;  // must be 1
  void* ctx;
  void* (*allocate)(void* ctx, size_t nbytes);  // NULL on failure
  void (*deallocate)(void* ctx, void* ptr, size_t nbytes);
  void (*release)(void* ctx);
  const char* name;
};
}

namespace flambeau {
/// Wraps a C ABI allocator table (copied) as an Allocator.
FB_API AllocatorPtr allocator_from_c_abi(const fb_allocator_v1* table);
}  // namespace flambeau
