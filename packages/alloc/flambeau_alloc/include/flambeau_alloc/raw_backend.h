#pragma once
// The seam between the caching allocator and the memory it caches. A backend
// hands out whole segments (large, rarely) and takes them back; the caching
// allocator does everything else (Note [Caching allocator pools]). CPU pages
// and the simulated device's host pages (flambeau-sim) exist today; CUDA
// device memory (cudaMalloc) and pinned host memory (cudaHostAlloc) are the
// planned others. Stream-ordered reuse (a freed block waits on events recorded
// on the streams that used it before it returns to a pool) is the allocator's
// business, not the backend's (Note [Stream-ordered reuse]).
//
// Installed with the Python package (flambeau_alloc.get_include()) so that a
// device package (flambeau-cuda) implements its own backends against it and
// hands them to alloc's CachingAllocator without linking alloc's code: it
// passes a PyCapsule named kRawBackendCapsule whose pointer is a heap-allocated
// `std::unique_ptr<RawBackend>` (the capsule's destructor deletes that box;
// raw_backend_capsule.h makes one) to
// `flambeau_alloc.CachingAllocator._from_raw_backend(capsule, name, device)`,
// which moves the backend out of the box. Only virtual calls cross the module
// boundary, so both sides need nothing but this header and core's.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "flambeau/device.h"

namespace flambeau::alloc {

inline constexpr const char* kRawBackendCapsule = "flambeau_alloc.RawBackend";

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
  /// Called when a block of a segment returns to the cache (freed, and no
  /// stream still uses it): the simulated device poisons it here, so that a
  /// read after free shows up as NaN/0xFF bytes. Default: nothing.
  virtual void on_block_free(void* ptr, size_t nbytes) noexcept {
    (void)ptr;
    (void)nbytes;
  }
  /// What the allocator calls when a block returns to the cache: `stream` is
  /// the id of the stream whose pool it joins. Work already enqueued on that
  /// stream may still read the block (Note [Stream-ordered reuse]), so a
  /// backend that writes freed memory must do it in that stream's order (the
  /// simulated device enqueues its poisoning there). Default: on_block_free.
  virtual void on_block_return(void* ptr, size_t nbytes, int64_t stream) noexcept {
    (void)stream;
    on_block_free(ptr, nbytes);
  }
};

/// Anonymous private mappings (mmap), 2 MiB aligned and marked for
/// transparent huge pages.
std::unique_ptr<RawBackend> make_cpu_backend();

}  // namespace flambeau::alloc
