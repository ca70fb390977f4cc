// Note [Allocator registry] is in flambeau/allocator.h.
#include "flambeau/allocator.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "flambeau/device_errors.h"
#include "flambeau/error.h"

namespace flambeau {

namespace {

// Blocks this large are aligned to 2 MiB and marked for transparent huge
// pages: one fault per 2 MiB instead of one per 4 KiB for fresh outputs.
constexpr size_t kHugePage = size_t{2} << 20;

class SystemAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const size_t align = nbytes >= kHugePage ? kHugePage : 64;
    void* p = nullptr;
    if (posix_memalign(&p, align, nbytes) != 0 || !p)
      throw OutOfMemoryError(detail::cat_str(
          "[allocate] out of memory: the system allocator could not provide ", nbytes, " bytes on cpu"));
    if (align == kHugePage) madvise(p, nbytes, MADV_HUGEPAGE);
    return p;
  }
  void deallocate(void* ptr, size_t) noexcept override { std::free(ptr); }
  std::string name() const override { return "system"; }
};

class CAbiAllocator final : public Allocator {
 public:
  explicit CAbiAllocator(const fb_allocator_v1& t) : t_(t), name_(t.name ? t.name : "c-abi") {}
  ~CAbiAllocator() override {
    if (t_.release) t_.release(t_.ctx);
  }
  void* allocate(size_t nbytes) override {
    void* p = t_.allocate(t_.ctx, nbytes);
    if (!p)
      throw OutOfMemoryError(
          detail::cat_str("[allocate] allocator '", name_, "' returned NULL for ", nbytes, " bytes"));
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override { t_.deallocate(t_.ctx, ptr, nbytes); }
  std::string name() const override { return name_; }

 private:
  fb_allocator_v1 t_;
  std::string name_;
};

std::atomic<std::shared_ptr<Allocator>>& slot(DeviceType type) {
  static std::atomic<std::shared_ptr<Allocator>> slots[kNumDeviceTypes];
  return slots[static_cast<int>(type)];
}

}  // namespace

AllocatorPtr system_allocator() {
  static AllocatorPtr instance = std::make_shared<SystemAllocator>();
  return instance;
}

void set_allocator(DeviceType type, AllocatorPtr allocator) {
  FB_CHECK_TYPE(allocator != nullptr, "[set_allocator] allocator for ", device_type_name(type),
                " must not be None");
  slot(type).store(std::move(allocator));
}

AllocatorPtr get_allocator(DeviceType type) {
  AllocatorPtr a = slot(type).load(std::memory_order_acquire);
  if (a) return a;
  FB_CHECK(type == DeviceType::CPU, "[allocate] no allocator for ", device_type_name(type),
           type == DeviceType::CUDA ? ": flambeau-cuda is not installed (flambeau-core is built without CUDA)"
                                    : ": no backend registered for this device type");
  return system_allocator();
}

AllocatorPtr allocator_from_c_abi(const fb_allocator_v1* table) {
  FB_CHECK_VALUE(table != nullptr, "[allocator_from_c_abi] the allocator table is NULL");
  FB_CHECK_VALUE(table->abi_version == 1, "[allocator_from_c_abi] unsupported allocator ABI version ",
                 table->abi_version, " (this core supports 1)");
  FB_CHECK_VALUE(table->allocate && table->deallocate,
                 "[allocator_from_c_abi] allocate and deallocate must both be set");
  return std::make_shared<CAbiAllocator>(*table);
}

}  // namespace flambeau
