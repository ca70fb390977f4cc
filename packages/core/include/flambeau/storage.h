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
#include <vector>

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

  /// Note [Moving a storage's memory]: makes this storage use `data` from now
  /// on, memory of nbytes() bytes that the caller filled with this storage's
  /// bytes (Tensor.share_memory_ moves a storage into shared memory this way).
  /// Every tensor and view of the storage sees the new memory at once: a
  /// TensorImpl reads its address from the storage on each access. The storage
  /// becomes external (`deleter(data)` frees it); its identity, size, device and
  /// version counter stay (the values did not change, so saved tensors stay
  /// valid and the version is not bumped). The old memory is freed now, unless
  /// its address was handed out (mark_exported: a NumPy array, memoryview or
  /// DLPack capsule may still point there), in which case it is freed with the
  /// storage. Not thread-safe: no other thread may use the storage meanwhile
  /// (PyTorch's share_memory_ has the same rule).
  void replace_data(void* data, std::function<void(void*)> deleter);
  /// Records that this memory's address left core's control (buffer protocol,
  /// NumPy, DLPack exports). Sticky: replace_data then keeps the old memory.
  void mark_exported() { exported_.store(true, std::memory_order_relaxed); }
  bool exported() const { return exported_.load(std::memory_order_relaxed); }

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
  std::atomic<bool> exported_{false};
  std::vector<std::function<void()>> retired_;  // frees memory replaced while exported
};
using Storage = std::shared_ptr<StorageImpl>;

}  // namespace flambeau
