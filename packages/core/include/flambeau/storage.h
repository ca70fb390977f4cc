#pragma once
// A Storage is a refcounted flat buffer. It either owns its memory through the
// allocator that made it (Note [Allocator registry]) or wraps external memory
// with a deleter and keep-alive (extension point 4: NumPy/DLPack/shared
// memory). It also holds the version counter shared by every tensor viewing
// it (Note [Version counter] in tensor_impl.h).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "flambeau/allocator.h"
#include "flambeau/device.h"
#include "flambeau/macros.h"

namespace flambeau {

class FB_API StorageImpl {
 public:
  /// Allocates nbytes on `device` from the current allocator of its type.
  static std::shared_ptr<StorageImpl> allocate(size_t nbytes, Device device);
  /// Wraps memory core does not own. `deleter(data)` runs when the last
  /// reference drops; it may capture a keep-alive object.
  static std::shared_ptr<StorageImpl> from_external(void* data, size_t nbytes, Device device,
                                                    std::function<void(void*)> deleter);

  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool is_external() const { return !allocator_; }
  /// The allocator that made this storage (null for external memory).
  const AllocatorPtr& allocator() const { return allocator_; }

  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  StorageImpl(void* data, size_t nbytes, Device device, AllocatorPtr allocator,
              std::function<void(void*)> deleter);

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  AllocatorPtr allocator_;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
};
using Storage = std::shared_ptr<StorageImpl>;

}  // namespace flambeau
