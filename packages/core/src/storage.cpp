#include "flambeau/storage.h"

#include <mutex>
#include <unordered_set>

#include "flambeau/device_backend.h"
#include "flambeau/error.h"
#include "flambeau/inference_mode.h"
#include "flambeau/observe.h"

namespace flambeau {

namespace {

// Note [Inference tensors]
thread_local bool t_inference_mode = false;
std::atomic<size_t> g_inference_count{0};

struct InferenceStorages {
  std::mutex mutex;
  std::unordered_set<const StorageImpl*> set;
};
InferenceStorages& inference_storages() {
  static auto* s = new InferenceStorages();  // leaked: storages may die after static destructors ran
  return *s;
}

}  // namespace

void set_inference_mode(bool enabled) { t_inference_mode = enabled; }
bool inference_mode_enabled() { return t_inference_mode; }

bool is_inference_storage(const StorageImpl* storage) {
  if (g_inference_count.load(std::memory_order_relaxed) == 0) return false;
  auto& s = inference_storages();
  std::lock_guard lock(s.mutex);
  return s.set.count(storage) != 0;
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, AllocatorPtr allocator,
                         std::function<void(void*)> deleter)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      allocator_(std::move(allocator)),
      deleter_(std::move(deleter)) {
  if (t_inference_mode) [[unlikely]] {
    auto& s = inference_storages();
    std::lock_guard lock(s.mutex);
    s.set.insert(this);
    g_inference_count.fetch_add(1, std::memory_order_relaxed);
  }
}

namespace {

// What frees `data` as the storage owns it now (its allocator or its deleter).
std::function<void()> releaser(void* data, size_t nbytes, AllocatorPtr allocator,
                               std::function<void(void*)> deleter) {
  if (allocator)
    return [data, nbytes, a = std::move(allocator)] {
      if (data) a->deallocate(data, nbytes);
    };
  if (deleter) return [data, d = std::move(deleter)] { d(data); };
  return nullptr;
}

}  // namespace

StorageImpl::~StorageImpl() {
  if (g_inference_count.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    auto& s = inference_storages();
    std::lock_guard lock(s.mutex);
    if (s.set.erase(this)) g_inference_count.fetch_sub(1, std::memory_order_relaxed);
  }
  if (allocator_) {
    if (data_) {
      if (detail::observing(kObserveProfiler)) [[unlikely]]
        profiler::record_memory(data_, -static_cast<int64_t>(nbytes_), device_);
      allocator_->deallocate(data_, nbytes_);
    }
  } else if (deleter_) {
    deleter_(data_);
  }
  for (auto& f : retired_) f();
}

void StorageImpl::replace_data(void* data, std::function<void(void*)> deleter) {
  FB_CHECK_VALUE(data != nullptr || nbytes_ == 0, "[replace_data] the new memory of a storage of ", nbytes_,
                 " bytes is null");
  auto old = releaser(data_, nbytes_, std::move(allocator_), std::move(deleter_));
  data_ = data;
  allocator_ = nullptr;
  deleter_ = std::move(deleter);
  if (!old) return;
  if (exported()) {
    retired_.push_back(std::move(old));  // Note [Moving a storage's memory]
  } else {
    old();
  }
}

std::shared_ptr<StorageImpl> StorageImpl::allocate(size_t nbytes, Device device) {
  // Note [Meta device]: the size is kept (views are bounds-checked against it), no memory.
  if (device.is_meta()) return std::make_shared<StorageImpl>(nullptr, nbytes, Device(DeviceType::Meta), nullptr, nullptr);
  if (!device.is_cpu()) {
    // Note [Device backends]: a device storage has a concrete index, checked
    // against the backend ("flambeau-cuda is not installed" without one).
    device = resolve_device(device);
    require_device(device, "allocate");
    AllocatorPtr a = get_allocator(device.type);
    void* p = nbytes ? a->allocate_on(nbytes, device) : nullptr;
    if (p && detail::observing(kObserveProfiler)) [[unlikely]]
      profiler::record_memory(p, static_cast<int64_t>(nbytes), device);
    return std::make_shared<StorageImpl>(p, nbytes, device, std::move(a), nullptr);
  }
  AllocatorPtr a = get_allocator(device.type);
  void* p = nbytes ? a->allocate(nbytes) : nullptr;
  if (p && detail::observing(kObserveProfiler)) [[unlikely]]
    profiler::record_memory(p, static_cast<int64_t>(nbytes), device);
  return std::make_shared<StorageImpl>(p, nbytes, device, std::move(a), nullptr);
}

std::shared_ptr<StorageImpl> StorageImpl::from_external(void* data, size_t nbytes, Device device,
                                                        std::function<void(void*)> deleter) {
  return std::make_shared<StorageImpl>(data, nbytes, device, nullptr, std::move(deleter));
}

}  // namespace flambeau
