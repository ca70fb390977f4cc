#pragma once
// The seam between the caching allocator and the memory it caches. A backend
// hands out whole segments (large, rarely) and takes them back; the caching
// allocator does everything else (Note [Caching allocator pools]). CPU pages
// are the only backend today; CUDA device memory (cudaMalloc) and pinned host
// memory (cudaHostAlloc) are the planned others. A CUDA backend will also need
// stream-ordered reuse (a freed block waits on events recorded on the streams
// that used it before it returns to a pool); that belongs in the allocator,
// not here.
#include <cstddef>
#include <memory>
#include <string>

#include "flambeau/device.h"

namespace flambeau::alloc {

class RawBackend {
 public:
  virtual ~RawBackend() = default;
  /// A segment of exactly `nbytes` (a multiple of segment_granularity()),
  /// aligned to at least 512 bytes, or nullptr when the system is out of
  /// memory. Must not throw.
  virtual void* allocate(size_t nbytes) noexcept = 0;
  /// Returns a segment `allocate(nbytes)` gave.
  virtual void deallocate(void* ptr, size_t nbytes) noexcept = 0;
  /// Every segment size is a multiple of this (the page size on CPU).
  virtual size_t segment_granularity() const = 0;
  virtual DeviceType device_type() const = 0;
  /// "cpu pages", "cuda", "cuda pinned host", ...
  virtual std::string name() const = 0;
};

/// Anonymous private mappings (mmap), 2 MiB aligned and marked for
/// transparent huge pages.
std::unique_ptr<RawBackend> make_cpu_backend();

}  // namespace flambeau::alloc
