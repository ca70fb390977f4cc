// CPU pages as a RawBackend (raw_backend.h).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "flambeau_alloc/raw_backend.h"

namespace flambeau::alloc {
namespace {

// Transparent huge pages need 2 MiB-aligned virtual ranges. With THP a fresh
// segment takes one page fault per 2 MiB instead of one per 4 KiB, and the
// TLB covers 512 times more memory per entry.
constexpr size_t kHugePage = size_t{2} << 20;

class CpuBackend final : public RawBackend {
 public:
  void* allocate(size_t nbytes) noexcept override {
    // Over-map by one huge page, then unmap the unaligned head and tail.
    if (nbytes > SIZE_MAX - kHugePage) return nullptr;
    const size_t mapped = nbytes + kHugePage;
    void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto base = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (base + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
    const size_t head = aligned - base;
    const size_t tail = mapped - head - nbytes;
    if (head) munmap(raw, head);
    if (tail) munmap(reinterpret_cast<void*>(aligned + nbytes), tail);
    void* p = reinterpret_cast<void*>(aligned);
    // Advisory only: with THP "never" (or an old kernel) this fails harmlessly.
    if (nbytes >= kHugePage) madvise(p, nbytes, MADV_HUGEPAGE);
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override { munmap(ptr, nbytes); }
  size_t segment_granularity() const override {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }
  DeviceType device_type() const override { return DeviceType::CPU; }
  std::string name() const override { return "cpu pages"; }
};

}  // namespace

std::unique_ptr<RawBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace flambeau::alloc
