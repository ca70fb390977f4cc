#pragma once
// A caching allocator in the design of PyTorch's CUDA caching allocator,
// generic over a RawBackend (raw_backend.h). See Note [Caching allocator pools]
// in caching_allocator.cpp for rounding, pools, splitting and coalescing.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "flambeau/allocator.h"
#include "flambeau/device_backend.h"
#include "flambeau_alloc/raw_backend.h"

namespace flambeau::alloc {

// Sizes of Note [Caching allocator pools].
inline constexpr size_t kMinBlockSize = 512;              // every block size is a multiple of this
inline constexpr size_t kSmallSize = size_t{1} << 20;     // requests up to 1 MiB use the small pool
inline constexpr size_t kSmallBuffer = size_t{2} << 20;   // segment size of the small pool
inline constexpr size_t kLargeBuffer = size_t{20} << 20;  // segment for large requests under kMinLargeAlloc
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;
inline constexpr size_t kRoundLarge = size_t{2} << 20;  // segments of big requests round to this

/// One statistic, as in PyTorch's memory_stats(): the current value, its peak
/// since the last reset, and the running totals of increases and decreases.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
  void update(int64_t delta) {
    current += delta;
    if (delta > 0)
      allocated += delta;
    else
      freed -= delta;
    if (current > peak) peak = current;
  }
};

enum StatType : int { kAggregate = 0, kSmallPool = 1, kLargePool = 2, kNumStatTypes = 3 };
/// Indexed by StatType: all, small_pool, large_pool.
using StatArray = std::array<Stat, kNumStatTypes>;

struct MemoryStats {
  StatArray allocation;       // number of allocated blocks
  StatArray segment;          // number of segments from the backend
  StatArray active;           // blocks in use (on CPU: == allocation; CUDA adds pending frees)
  StatArray inactive_split;   // free blocks inside a partly used segment (not releasable)
  StatArray allocated_bytes;  // sum of allocated block sizes (rounded)
  StatArray reserved_bytes;   // sum of segment sizes
  StatArray active_bytes;
  StatArray inactive_split_bytes;
  StatArray requested_bytes;      // sum of the sizes callers asked for (before rounding)
  int64_t num_alloc_retries = 0;  // backend failures retried after releasing the cache
  int64_t num_ooms = 0;           // allocations that failed even after the retry
  int64_t num_device_alloc = 0;   // segments taken from the backend (PyTorch's name; "device" = backend)
  int64_t num_device_free = 0;    // segments returned to the backend
};

/// Where a block was allocated: Python frames (innermost first), captured only
/// while memory history is recorded (Note [Memory history]).
struct Frame {
  std::string filename;
  std::string name;
  int line = 0;
};
using AllocContext = std::shared_ptr<const std::vector<Frame>>;
/// Captures the context of an allocation; called without the allocator's
/// lock, on the allocating thread. Set by the Python module.
using ContextRecorder = AllocContext (*)();

struct BlockInfo {
  uintptr_t address;
  size_t size;
  size_t requested_size;  // 0 for a free block
  bool allocated;
  bool pending_free = false;  // freed, waiting for events of other streams
  AllocContext context;       // while allocated and recorded
};

struct SegmentInfo {
  uintptr_t address;
  size_t total_size;
  size_t allocated_size;
  size_t requested_size;
  bool is_small;                  // from the small pool
  int64_t stream = 0;             // the stream whose pool the segment belongs to
  std::vector<BlockInfo> blocks;  // in address order, covering the segment
};

/// One event of Note [Memory history]: what happened to which block, when.
struct TraceEntry {
  enum Action : int { kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kOom };
  Action action;
  uintptr_t address;
  size_t size;
  int64_t stream;
  int64_t time_us;  // since the epoch of the steady clock
  AllocContext context;
};

/// Per-pool figures for an out-of-memory message.
struct PoolReport {
  size_t allocated = 0;
  size_t reserved = 0;
  size_t largest_free = 0;
};

class CachingAllocator final : public Allocator {
 public:
  /// With a non-cpu `device`, the allocator is stream-aware (Note
  /// [Stream-ordered reuse]): blocks are pooled per stream of that device.
  explicit CachingAllocator(std::unique_ptr<RawBackend> backend, std::string name = "caching",
                            std::optional<size_t> memory_limit = std::nullopt,
                            Device device = Device(DeviceType::CPU));
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// Never returns null; nbytes == 0 gives a distinct minimum block. Throws
  /// flambeau::OutOfMemoryError ("out of memory") when the backend fails even
  /// after the cache was released.
  void* allocate(size_t nbytes) override;
  /// allocate() from the pool of the current stream of the allocator's device.
  void* allocate_on(size_t nbytes, Device device) override;
  /// Note [Stream-ordered reuse]: the block at ptr is also used by `stream`.
  void record_stream(void* ptr, Stream& stream) override;
  /// True if `ptr` is an allocated block of this allocator.
  bool owns(void* ptr) const;
  Device device() const { return device_; }
  /// Frees through free_block; a pointer this allocator did not hand out is
  /// reported on stderr and ignored (deallocate cannot throw).
  void deallocate(void* ptr, size_t nbytes) noexcept override;
  std::string name() const override { return name_; }

  /// Returns the block at `ptr` to its pool; false if `ptr` is not an
  /// allocated block of this allocator.
  bool free_block(void* ptr) noexcept;
  /// Returns every wholly free segment to the backend.
  void empty_cache();

  MemoryStats stats() const;
  /// Peaks := current values.
  void reset_peak_stats();
  /// Running totals (allocated/freed, counters) := 0.
  void reset_accumulated_stats();
  std::vector<SegmentInfo> snapshot() const;
  /// Note [Memory history]: the trace recorded so far (oldest first).
  std::vector<TraceEntry> trace() const;
  /// Largest free block, allocated and reserved bytes of a pool.
  PoolReport pool_report(bool is_small) const;
  /// Number of freed blocks still waiting for events of other streams.
  size_t pending_frees() const;

  // Note [Memory history]: process-wide switch (all instances), as PyTorch's
  // torch.cuda.memory._record_memory_history.
  static void set_history(bool enabled, ContextRecorder recorder, size_t max_entries);
  static bool history_enabled();
  /// A human-readable table of stats(), like torch.cuda.memory_summary().
  std::string summary() const;

  /// Upper bound on reserved bytes (nullopt: none). A segment that would
  /// exceed it is treated as a backend failure (retry, then out of memory).
  void set_memory_limit(std::optional<size_t> limit);
  std::optional<size_t> memory_limit() const;
  const RawBackend& backend() const { return *backend_; }

  /// Block size for a request (Note [Caching allocator pools]).
  static size_t round_size(size_t nbytes);
  /// Segment size for a rounded block size.
  static size_t segment_size(size_t block_size);

  // Note [Caching allocator and fork]: called around fork() for every live
  // instance, so that a child never inherits a mutex held by another thread.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

 private:
  struct Segment;
  struct Block {
    char* ptr;
    size_t size;
    Segment* segment;
    Block* prev = nullptr;  // neighbours in the same segment, by address
    Block* next = nullptr;
    size_t requested = 0;
    bool allocated = false;
    int64_t stream = 0;                    // its segment's stream
    std::vector<StreamPtr> stream_uses{};  // other streams (record_stream)
    int event_count = 0;                   // outstanding events of a pending free
    AllocContext context{};
    Block* bin_next = nullptr;  // Note [Exact-size bins]: the next block of its bin
    bool binned = false;        // free, in a bin, not in a pool
    bool is_split() const { return prev || next; }
  };
  struct Segment {
    char* ptr;
    size_t size;
    bool is_small;
    Block* head;  // the block at ptr
    int64_t stream = 0;
  };
  // Per stream, best fit: smallest size first, then lowest address.
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using FreeBlocks = std::set<Block*, BySizeThenAddress>;

  FreeBlocks& pool_of(bool is_small) { return is_small ? small_free_ : large_free_; }
  void* allocate_impl(size_t nbytes, const StreamPtr& stream, AllocContext context);
  Block* take_free_block(FreeBlocks& pool, size_t size, int64_t stream);
  Block* new_segment(bool is_small, size_t size, size_t requested, int64_t stream);
  Block* try_new_segment(bool is_small, size_t seg_size, int64_t stream);
  void* finish_allocation(Block* block, size_t size, size_t requested);
  // Note [Stream-ordered reuse]
  void return_to_pool(Block* block);
  /// The bookkeeping of a block becoming free (stats, trace, backend hook); return_to_pool's first half.
  void release_block(Block* block);
  /// Merges a free block with its free neighbours and puts it in its pool; return_to_pool's second half.
  void insert_free(Block* block);
  // Note [Exact-size bins]
  bool try_bin(Block* block);
  Block* take_binned(size_t size);
  void flush_bins();
  void process_events();
  void synchronize_and_free_events();
  void add_trace(TraceEntry::Action action, uintptr_t address, size_t size, int64_t stream,
                 const AllocContext& context);
  PoolReport pool_report_locked(bool is_small) const;
  void merge_into(Block* dst, Block* src);
  void release_free_segments();
  void update(StatArray& s, bool is_small, int64_t delta);
  [[noreturn]] void throw_oom(size_t requested, size_t seg_size);

  std::unique_ptr<RawBackend> backend_;
  std::string name_;
  mutable std::mutex mutex_;
  std::optional<size_t> memory_limit_;
  FreeBlocks small_free_;
  FreeBlocks large_free_;
  // Allocated blocks by address, and binned ones (Note [Exact-size bins]): Block::allocated tells them apart.
  std::unordered_map<void*, Block*> allocated_;
  // Note [Exact-size bins]: per size class of the small pool (size / kMinBlockSize), a LIFO list of freed
  // blocks of exactly that size; only for an allocator that is not stream-aware.
  static constexpr size_t kBinCount = kSmallSize / kMinBlockSize + 1;
  static constexpr uint8_t kBinDepth = 8;
  std::array<Block*, kBinCount> bins_{};
  std::array<uint8_t, kBinCount> bin_fill_{};
  std::array<uint64_t, (kBinCount + 63) / 64> bin_used_{};  // bit i: bins_[i] is not empty
  size_t binned_ = 0;
  std::map<char*, std::unique_ptr<Segment>> segments_;  // by address
  MemoryStats stats_;
  Device device_;
  bool stream_aware_;
  struct PendingEvent {
    EventPtr event;
    Block* block;
  };
  std::deque<PendingEvent> pending_events_;
  size_t pending_blocks_ = 0;
  std::deque<TraceEntry> trace_;
};

/// The process-wide instance (CPU pages) that flambeau_alloc.enable() installs.
std::shared_ptr<CachingAllocator> default_caching_allocator();

}  // namespace flambeau::alloc
