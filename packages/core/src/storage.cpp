#include "flambeau/storage.h"

#include "flambeau/device_backend.h"
#include "flambeau/error.h"

namespace flambeau {

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, AllocatorPtr allocator,
                         std::function<void(void*)> deleter)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      allocator_(std::move(allocator)),
      deleter_(std::move(deleter)) {}

StorageImpl::~StorageImpl() {
  if (allocator_) {
    if (data_) allocator_->deallocate(data_, nbytes_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

std::shared_ptr<StorageImpl> StorageImpl::allocate(size_t nbytes, Device device) {
  if (!device.is_cpu()) {
    // Note [Device backends]: a device storage has a concrete index, checked
    // against the backend ("flambeau-cuda is not installed" without one).
    device = resolve_device(device);
    require_device(device, "allocate");
    AllocatorPtr a = get_allocator(device.type);
    void* p = nbytes ? a->allocate_on(nbytes, device) : nullptr;
    return std::make_shared<StorageImpl>(p, nbytes, device, std::move(a), nullptr);
  }
  AllocatorPtr a = get_allocator(device.type);
  void* p = nbytes ? a->allocate(nbytes) : nullptr;
  return std::make_shared<StorageImpl>(p, nbytes, device, std::move(a), nullptr);
}

std::shared_ptr<StorageImpl> StorageImpl::from_external(void* data, size_t nbytes, Device device,
                                                        std::function<void(void*)> deleter) {
  return std::make_shared<StorageImpl>(data, nbytes, device, nullptr, std::move(deleter));
}

}  // namespace flambeau
