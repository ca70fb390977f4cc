// Note [Caching allocator pools]
// ==============================
// The allocator keeps memory it got from the backend (a *segment*: one mmap on
// CPU, one cudaMalloc on CUDA) and hands out *blocks* carved from segments. A
// freed block goes back to a pool, not to the backend, so the next request of
// a similar size costs a set lookup instead of mmap + munmap + a page fault
// per 4 KiB page of the fresh mapping. The design is PyTorch's CUDA caching
// allocator (c10/cuda/CUDACachingAllocator.cpp), without streams.
//
// Rounding. A request of n bytes becomes a block of round_size(n): n rounded
// up to a multiple of 512 (kMinBlockSize), at least 512. Segments start on a
// 2 MiB boundary, so every block is 512-byte aligned (core asks for 64), and
// small odd sizes share a few size classes, which makes reuse likely.
//
// Pools. Blocks of at most 1 MiB (kSmallSize) live in the small pool, carved
// from 2 MiB segments (kSmallBuffer): many small tensors share one mapping.
// Larger blocks live in the large pool. A large request under 10 MiB gets a
// 20 MiB segment (kLargeBuffer) so that a few mid-size tensors share it; a
// request of 10 MiB or more gets its own segment rounded up to 2 MiB
// (kRoundLarge), the huge-page size. Keeping the pools apart stops small
// long-lived tensors from pinning large segments (fragmentation). On CPU an
// untouched part of a segment costs address space only, never RSS.
//
// Best fit. Each pool is a std::set of free blocks ordered by (size, address);
// lower_bound(size) finds the smallest block that fits, lowest address first.
//
// Splitting. When the best fit is bigger than needed, the block is split and
// the remainder goes back to the pool, if it is worth keeping: in the small
// pool any remainder of at least 512 bytes; in the large pool only one over
// 1 MiB (a smaller one would serve small requests better from the small pool;
// the few extra bytes stay with the allocated block and count as allocated).
//
// Coalescing. Blocks of a segment form a doubly linked list in address order
// (prev/next). A freed block merges with a free neighbour on either side, so
// a segment whose blocks are all free is again one block (no prev, no next):
// that is exactly what empty_cache() returns to the backend.
//
// Out of memory. When the backend fails (or the memory limit would be
// exceeded), the allocator releases every wholly free cached segment and
// retries once (num_alloc_retries); if that fails too it counts num_ooms and
// throws OutOfMemoryError("[allocate] out of memory ...", a RuntimeError).
//
// Note [Exact-size bins]
// Most tensors are freed and made again at the same size (a training step, a
// loop of small ops), and the pool round trip costs more than the op itself on
// small tensors: a freed block merges with its free neighbours (set erase,
// Block delete), the next request splits it again (set lookup, Block new, set
// insert) and the allocated map drops and re-adds its node. So a freed block
// of the small pool first goes to a bin of its exact size (a LIFO list of at
// most kBinDepth blocks, through Block::bin_next), unmerged and still in the
// allocated map (with allocated == false), and a request of that rounded size
// takes it back from there: a few loads and stores under the lock. A block of
// exactly the rounded size is a best fit, so the choice stays best fit; only
// the tie between equal sizes goes to the most recently freed block, not the
// lowest address. A binned block is free in every statistic (the same updates
// as a block put in the pool unmerged) and is never merged into by a
// neighbour. The bins are flushed into their pool (each block merged, as any
// freed block) before anything that needs the pool whole: a small request its
// bin cannot serve (so best fit sees every free block), releasing free
// segments (empty_cache() and the out-of-memory retry, whatever the pool of
// the failed request), stats(), snapshot() and pool_report(). A loop that makes the same sizes
// again hits its bins; a new size pays one flush. Only an
// allocator that is not stream-aware bins (a stream-aware one keeps Note
// [Stream-ordered reuse] exact), and not while memory history is recorded (its
// trace shows every free as the pool sees it).
//
// Note [Stream-ordered reuse]
// An allocator made for a device (not the cpu) is stream-aware, as PyTorch's
// CUDA caching allocator: every segment belongs to the stream that was current
// when it was created, and blocks carved from it serve only that stream (the
// free sets order blocks by stream first). Work on one stream runs in order,
// so a block freed by the host can be handed to the next allocation on the
// same stream at once: that allocation's kernels queue behind the ones still
// reading the old tensor. Another stream has no such order. Tensor.record_stream(s)
// notes that stream s uses the block too; when the block is freed, an event
// is recorded on each such stream, the block stays "active" (not allocated,
// not in a pool) and returns to its pool only once every event has completed
// (checked at the next allocation; synchronized on empty_cache and before an
// out-of-memory retry). Without record_stream, a block read by another stream
// may be reused while that stream still reads it: on the simulated device,
// whose backend poisons a block when it returns to the pool, the reader sees
// NaN. The cpu allocator has a single pool "stream" 0 and never waits; the
// pinned host allocator of a device (cpu memory used by device copies) is
// given record_stream by the copies themselves.
//
// Note [Memory history]
// While enabled (set_history, Python: _record_memory_history), every
// allocation captures its Python stack (innermost first) through a recorder
// the Python module installs, kept with the block for memory_snapshot(), and
// a bounded trace records alloc / free / segment / oom events with a time
// stamp (flambeau.memory turns it into a timeline by allocation site).
//
// Statistics follow PyTorch's memory_stats(): per pool and in aggregate, the
// current value, peak, and totals of allocations, segments, allocated,
// reserved, active, requested and "inactive split" (free but not releasable)
// bytes. Every public method takes one mutex: tensors die on any thread
// (data-loader threads, autograd), and segments are rare, so contention is
// a lock per allocation.
#include "caching_allocator.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>

#include "flambeau/device_errors.h"
#include "flambeau/error.h"

namespace flambeau::alloc {
namespace {

// Requests beyond this cannot be rounded without overflow; no backend could
// serve them anyway.
constexpr size_t kMaxRequest = size_t{1} << 60;

// Note [Memory history]
std::atomic<bool> g_history{false};
std::atomic<ContextRecorder> g_recorder{nullptr};
std::atomic<size_t> g_max_entries{0};

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

AllocContext capture_context() {
  if (!g_history.load(std::memory_order_relaxed)) return nullptr;
  ContextRecorder r = g_recorder.load(std::memory_order_acquire);
  return r ? r() : nullptr;
}

bool should_split(size_t block_size, size_t size, bool is_small) {
  const size_t remaining = block_size - size;
  return is_small ? remaining >= kMinBlockSize : remaining > kSmallSize;
}

std::string format_size(int64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (n < 0) return "-" + format_size(-n);
  if (n < (int64_t{1} << 10))
    std::snprintf(buf, sizeof buf, "%" PRId64 " B", n);
  else if (n < (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.2f KiB", v / (1 << 10));
  else if (n < (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / (int64_t{1} << 30));
  return buf;
}

// ---- Note [Caching allocator and fork] ----
// Data-loader workers are forked. If another thread held an allocator's mutex
// at that instant, the child would inherit it locked and deadlock on its first
// allocation. Like glibc's malloc, every live instance is locked before fork
// and unlocked on both sides after it.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex;  // leaked: usable during static destruction
  return *m;
}
std::set<CachingAllocator*>& registry() {
  static auto* s = new std::set<CachingAllocator*>;
  return *s;
}
void prepare_fork() {
  registry_mutex().lock();
  for (CachingAllocator* a : registry()) a->lock_for_fork();
}
void after_fork() {
  for (CachingAllocator* a : registry()) a->unlock_after_fork();
  registry_mutex().unlock();
}
void register_instance(CachingAllocator* a) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(prepare_fork, after_fork, after_fork); });
  std::lock_guard lock(registry_mutex());
  registry().insert(a);
}
void unregister_instance(CachingAllocator* a) {
  std::lock_guard lock(registry_mutex());
  registry().erase(a);
}

}  // namespace

size_t CachingAllocator::round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t CachingAllocator::segment_size(size_t block_size) {
  if (block_size <= kSmallSize) return kSmallBuffer;
  if (block_size < kMinLargeAlloc) return kLargeBuffer;
  return (block_size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

CachingAllocator::CachingAllocator(std::unique_ptr<RawBackend> backend, std::string name,
                                   std::optional<size_t> memory_limit, Device device)
    : backend_(std::move(backend)),
      name_(std::move(name)),
      memory_limit_(memory_limit),
      device_(device),
      stream_aware_(!device.is_cpu()) {
  FB_CHECK_VALUE(backend_ != nullptr, "[CachingAllocator] the raw backend must not be null");
  FB_CHECK_VALUE(kRoundLarge % backend_->segment_granularity() == 0, "[CachingAllocator] backend '",
                 backend_->name(), "' has a segment granularity of ", backend_->segment_granularity(),
                 " bytes, which does not divide ", kRoundLarge);
  register_instance(this);
}

CachingAllocator::~CachingAllocator() {
  unregister_instance(this);
  // Storages keep their allocator alive, so only misuse of the raw API can
  // leave a block allocated here. Such segments are leaked, not unmapped: a
  // dangling pointer into live memory beats one into an unmapped range.
  for (auto& [ptr, seg] : segments_) {
    bool any_allocated = false;
    for (Block* b = seg->head; b; b = b->next) any_allocated |= b->allocated;
    if (!any_allocated) backend_->deallocate(seg->ptr, seg->size);
    for (Block* b = seg->head; b;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

void CachingAllocator::update(StatArray& s, bool is_small, int64_t delta) {
  s[kAggregate].update(delta);
  s[is_small ? kSmallPool : kLargePool].update(delta);
}

void* CachingAllocator::allocate(size_t nbytes) {
  if (stream_aware_) return allocate_on(nbytes, device_);
  return allocate_impl(nbytes, nullptr, capture_context());
}

void* CachingAllocator::allocate_on(size_t nbytes, Device device) {
  if (!stream_aware_) return allocate_impl(nbytes, nullptr, capture_context());
  const Device d(device_.type, device.index >= 0 ? device.index : device_.index);
  return allocate_impl(nbytes, current_stream(d), capture_context());
}

void* CachingAllocator::allocate_impl(size_t nbytes, const StreamPtr& stream_ptr, AllocContext context) {
  const int64_t stream = stream_ptr ? stream_ptr->id() : 0;
  std::lock_guard lock(mutex_);
  process_events();
  if (nbytes > kMaxRequest) {
    stats_.num_ooms += 1;
    throw OutOfMemoryError(detail::cat_str("[allocate] out of memory: tried to allocate ",
                                           format_size(nbytes), " (", nbytes, " bytes) from the ", name_,
                                           " allocator on ", backend_->name(),
                                           ", more than any backend can provide"));
  }
  const size_t size = round_size(nbytes);
  const bool is_small = size <= kSmallSize;
  Block* block = is_small && binned_ ? take_binned(size) : nullptr;
  if (!block && is_small) flush_bins();  // Note [Exact-size bins]: best fit over every free block
  if (!block) block = take_free_block(pool_of(is_small), size, stream);
  if (!block) block = new_segment(is_small, size, nbytes, stream);
  void* p = finish_allocation(block, size, nbytes);
  block->context = std::move(context);
  if (g_history.load(std::memory_order_relaxed))
    add_trace(TraceEntry::kAlloc, reinterpret_cast<uintptr_t>(p), block->size, stream, block->context);
  return p;
}

CachingAllocator::Block* CachingAllocator::take_free_block(FreeBlocks& pool, size_t size, int64_t stream) {
  Block key{nullptr, size, nullptr};
  key.stream = stream;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  if (block->is_split()) {
    update(stats_.inactive_split, block->segment->is_small, -1);
    update(stats_.inactive_split_bytes, block->segment->is_small, -static_cast<int64_t>(block->size));
  }
  return block;
}

CachingAllocator::Block* CachingAllocator::try_new_segment(bool is_small, size_t seg_size, int64_t stream) {
  if (memory_limit_ &&
      static_cast<size_t>(stats_.reserved_bytes[kAggregate].current) + seg_size > *memory_limit_)
    return nullptr;
  void* p = backend_->allocate(seg_size);
  if (!p) return nullptr;
  auto seg = std::make_unique<Segment>(Segment{static_cast<char*>(p), seg_size, is_small, nullptr, stream});
  seg->head = new Block{seg->ptr, seg_size, seg.get()};
  seg->head->stream = stream;
  if (g_history.load(std::memory_order_relaxed))
    add_trace(TraceEntry::kSegmentAlloc, reinterpret_cast<uintptr_t>(p), seg_size, stream, nullptr);
  Block* head = seg->head;
  segments_.emplace(seg->ptr, std::move(seg));
  stats_.num_device_alloc += 1;
  update(stats_.segment, is_small, 1);
  update(stats_.reserved_bytes, is_small, static_cast<int64_t>(seg_size));
  return head;
}

CachingAllocator::Block* CachingAllocator::new_segment(bool is_small, size_t size, size_t requested,
                                                       int64_t stream) {
  const size_t seg_size = segment_size(size);
  if (Block* b = try_new_segment(is_small, seg_size, stream)) return b;
  // The backend failed: wait for pending frees, give the cache back and try
  // once more.
  synchronize_and_free_events();
  if (Block* b = take_free_block(pool_of(is_small), size, stream)) return b;
  release_free_segments();
  stats_.num_alloc_retries += 1;
  if (Block* b = try_new_segment(is_small, seg_size, stream)) return b;
  stats_.num_ooms += 1;
  if (g_history.load(std::memory_order_relaxed))
    add_trace(TraceEntry::kOom, 0, requested, stream, capture_context());
  throw_oom(requested, seg_size);
}

PoolReport CachingAllocator::pool_report_locked(bool is_small) const {
  PoolReport r;
  const int i = is_small ? kSmallPool : kLargePool;
  r.allocated = static_cast<size_t>(stats_.allocated_bytes[i].current);
  r.reserved = static_cast<size_t>(stats_.reserved_bytes[i].current);
  for (const Block* b : is_small ? small_free_ : large_free_)
    r.largest_free = std::max(r.largest_free, b->size);
  return r;
}

PoolReport CachingAllocator::pool_report(bool is_small) const {
  std::lock_guard lock(mutex_);
  const_cast<CachingAllocator*>(this)->flush_bins();  // Note [Exact-size bins]: the largest block merged
  return pool_report_locked(is_small);
}

void CachingAllocator::throw_oom(size_t requested, size_t seg_size) {
  std::string limit = memory_limit_ ? detail::cat_str(", memory limit ", format_size(*memory_limit_)) : "";
  auto pool = [&](const char* label, bool is_small) {
    const PoolReport r = pool_report_locked(is_small);
    return detail::cat_str(label, " pool: ", format_size(static_cast<int64_t>(r.allocated)), " allocated, ",
                           format_size(static_cast<int64_t>(r.reserved)), " reserved, largest free block ",
                           format_size(static_cast<int64_t>(r.largest_free)));
  };
  throw OutOfMemoryError(detail::cat_str(
      "[allocate] out of memory: tried to allocate ", format_size(requested), " (a ", format_size(seg_size),
      " segment) from the ", name_, " allocator on ", backend_->name(), "; ",
      format_size(stats_.allocated_bytes[kAggregate].current), " allocated, ",
      format_size(stats_.reserved_bytes[kAggregate].current), " reserved", limit, " (", pool("small", true),
      "; ", pool("large", false),
      "). The cache was already released and the request retried; free some tensors, or call empty_cache() "
      "if another allocator needs the memory"));
}

void* CachingAllocator::finish_allocation(Block* block, size_t size, size_t requested) {
  const bool is_small = block->segment->is_small;
  if (should_split(block->size, size, is_small)) {
    auto* rest = new Block{block->ptr + size, block->size - size, block->segment};
    rest->stream = block->stream;  // a segment serves one stream
    rest->prev = block;
    rest->next = block->next;
    if (block->next) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    pool_of(is_small).insert(rest);
    update(stats_.inactive_split, is_small, 1);
    update(stats_.inactive_split_bytes, is_small, static_cast<int64_t>(rest->size));
  }
  if (block->binned)
    block->binned = false;  // still in allocated_ (Note [Exact-size bins])
  else
    allocated_.emplace(block->ptr, block);
  block->allocated = true;
  block->requested = requested;
  const auto bytes = static_cast<int64_t>(block->size);
  update(stats_.allocation, is_small, 1);
  update(stats_.active, is_small, 1);
  update(stats_.allocated_bytes, is_small, bytes);
  update(stats_.active_bytes, is_small, bytes);
  update(stats_.requested_bytes, is_small, static_cast<int64_t>(requested));
  return block->ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t) noexcept {
  if (!ptr) return;
  if (!free_block(ptr))
    std::fprintf(stderr,
                 "flambeau-alloc: %s allocator asked to free %p, which it did not allocate; ignored\n",
                 name_.c_str(), ptr);
}

bool CachingAllocator::owns(void* ptr) const {
  std::lock_guard lock(mutex_);
  auto it = allocated_.find(ptr);
  return it != allocated_.end() && it->second->allocated;
}

void CachingAllocator::record_stream(void* ptr, Stream& stream) {
  std::lock_guard lock(mutex_);
  auto it = allocated_.find(ptr);
  FB_CHECK_VALUE(it != allocated_.end() && it->second->allocated, "[record_stream] address ", ptr,
                 " is not a block allocated by the '", name_, "' caching allocator");
  Block* block = it->second;
  if (stream_aware_ && stream.device() == Device(device_.type, device_.index) && stream.id() == block->stream)
    return;  // its own stream: ordered already
  for (const StreamPtr& s : block->stream_uses)
    if (s.get() == &stream) return;
  // Note [Device backends]: a backend's streams live as long as the backend
  // (as CUDA's pooled streams do), so a non-owning pointer is safe.
  block->stream_uses.push_back(StreamPtr(StreamPtr{}, &stream));
}

bool CachingAllocator::free_block(void* ptr) noexcept {
  std::lock_guard lock(mutex_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end() || !it->second->allocated) return false;  // not ours, or freed already (binned)
  Block* block = it->second;
  const bool is_small = block->segment->is_small;
  const auto bytes = static_cast<int64_t>(block->size);
  update(stats_.allocation, is_small, -1);
  update(stats_.allocated_bytes, is_small, -bytes);
  update(stats_.requested_bytes, is_small, -static_cast<int64_t>(block->requested));
  block->allocated = false;
  block->requested = 0;
  const bool history = g_history.load(std::memory_order_relaxed);
  if (block->stream_uses.empty() && !history && try_bin(block)) return true;
  allocated_.erase(it);
  if (history)
    add_trace(TraceEntry::kFreeRequested, reinterpret_cast<uintptr_t>(block->ptr), block->size, block->stream,
              block->context);
  if (!block->stream_uses.empty()) {
    // Note [Stream-ordered reuse]: wait for the other streams' work.
    std::vector<StreamPtr> uses = std::move(block->stream_uses);
    block->stream_uses.clear();
    try {
      for (const StreamPtr& s : uses) {
        DeviceBackend* b = device_backend(s->device().type);
        if (!b) continue;
        EventPtr e = b->new_event(false);
        e->record(*s);
        pending_events_.push_back({std::move(e), block});
        block->event_count += 1;
      }
    } catch (...) {
      // An event that cannot be made: wait for the streams instead.
      for (const StreamPtr& s : uses) s->synchronize();
    }
    if (block->event_count > 0) {
      pending_blocks_ += 1;
      return true;
    }
  }
  return_to_pool(block);
  return true;
}

void CachingAllocator::return_to_pool(Block* block) {
  release_block(block);
  insert_free(block);
}

void CachingAllocator::release_block(Block* block) {
  const bool is_small = block->segment->is_small;
  const auto bytes = static_cast<int64_t>(block->size);
  update(stats_.active, is_small, -1);
  update(stats_.active_bytes, is_small, -bytes);
  if (g_history.load(std::memory_order_relaxed))
    add_trace(TraceEntry::kFreeCompleted, reinterpret_cast<uintptr_t>(block->ptr), block->size, block->stream,
              block->context);
  block->context = nullptr;
  backend_->on_block_return(block->ptr, block->size, block->stream);
}

void CachingAllocator::insert_free(Block* block) {
  const bool is_small = block->segment->is_small;
  FreeBlocks& pool = pool_of(is_small);
  for (Block* neighbour : {block->prev, block->next}) {
    if (!neighbour || neighbour->allocated || neighbour->binned) continue;
    // A free neighbour is in the pool and, sharing a segment, is split.
    pool.erase(neighbour);
    update(stats_.inactive_split, is_small, -1);
    update(stats_.inactive_split_bytes, is_small, -static_cast<int64_t>(neighbour->size));
    merge_into(block, neighbour);
  }
  if (block->is_split()) {
    update(stats_.inactive_split, is_small, 1);
    update(stats_.inactive_split_bytes, is_small, static_cast<int64_t>(block->size));
  }
  pool.insert(block);
}

// Note [Exact-size bins]: a freed block (already out of the allocation stats) to the bin of its size.
bool CachingAllocator::try_bin(Block* block) {
  if (stream_aware_ || !block->segment->is_small) return false;
  const size_t i = block->size / kMinBlockSize;
  if (bin_fill_[i] == kBinDepth) return false;
  release_block(block);
  if (block->is_split()) {  // counted as a free block of a partly used segment, as in the pool
    update(stats_.inactive_split, true, 1);
    update(stats_.inactive_split_bytes, true, static_cast<int64_t>(block->size));
  }
  block->binned = true;
  block->bin_next = bins_[i];
  bins_[i] = block;
  bin_fill_[i] += 1;
  binned_ += 1;
  bin_used_[i / 64] |= uint64_t{1} << (i % 64);
  return true;
}

CachingAllocator::Block* CachingAllocator::take_binned(size_t size) {
  const size_t i = size / kMinBlockSize;
  Block* block = bins_[i];
  if (!block) return nullptr;
  bins_[i] = block->bin_next;
  block->bin_next = nullptr;
  if (--bin_fill_[i] == 0) bin_used_[i / 64] &= ~(uint64_t{1} << (i % 64));
  binned_ -= 1;
  if (block->is_split()) {
    update(stats_.inactive_split, true, -1);
    update(stats_.inactive_split_bytes, true, -static_cast<int64_t>(block->size));
  }
  return block;  // still binned: finish_allocation keeps its allocated_ entry
}

void CachingAllocator::flush_bins() {
  if (!binned_) return;
  for (size_t word = 0; word < bin_used_.size(); ++word) {
    for (uint64_t bits = bin_used_[word]; bits; bits &= bits - 1) {
      const size_t i = word * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      while (Block* block = bins_[i]) {
        bins_[i] = block->bin_next;
        block->bin_next = nullptr;
        block->binned = false;
        allocated_.erase(block->ptr);
        if (block->is_split()) {  // insert_free counts it again, merged
          update(stats_.inactive_split, true, -1);
          update(stats_.inactive_split_bytes, true, -static_cast<int64_t>(block->size));
        }
        insert_free(block);
      }
      bin_fill_[i] = 0;
    }
    bin_used_[word] = 0;
  }
  binned_ = 0;
}

void CachingAllocator::process_events() {
  // Events complete in order per stream, not across streams: check them all.
  for (auto it = pending_events_.begin(); it != pending_events_.end();) {
    if (!it->event->query()) {
      ++it;
      continue;
    }
    Block* block = it->block;
    it = pending_events_.erase(it);
    if (--block->event_count == 0) {
      pending_blocks_ -= 1;
      return_to_pool(block);
    }
  }
}

void CachingAllocator::synchronize_and_free_events() {
  for (PendingEvent& p : pending_events_) p.event->synchronize();
  process_events();
}

size_t CachingAllocator::pending_frees() const {
  std::lock_guard lock(mutex_);
  return pending_blocks_;
}

void CachingAllocator::add_trace(TraceEntry::Action action, uintptr_t address, size_t size, int64_t stream,
                                 const AllocContext& context) {
  const size_t max = g_max_entries.load(std::memory_order_relaxed);
  if (max == 0) return;
  while (trace_.size() >= max) trace_.pop_front();
  trace_.push_back({action, address, size, stream, now_us(), context});
}

std::vector<TraceEntry> CachingAllocator::trace() const {
  std::lock_guard lock(mutex_);
  return {trace_.begin(), trace_.end()};
}

void CachingAllocator::set_history(bool enabled, ContextRecorder recorder, size_t max_entries) {
  g_recorder.store(recorder, std::memory_order_release);
  g_max_entries.store(enabled ? max_entries : 0, std::memory_order_relaxed);
  g_history.store(enabled, std::memory_order_release);
  if (!enabled) {
    std::lock_guard lock(registry_mutex());
    for (CachingAllocator* a : registry()) {
      std::lock_guard l(a->mutex_);
      a->trace_.clear();
    }
  }
}

bool CachingAllocator::history_enabled() { return g_history.load(std::memory_order_relaxed); }

void CachingAllocator::merge_into(Block* dst, Block* src) {
  if (src == dst->prev) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev)
      dst->prev->next = dst;
    else
      dst->segment->head = dst;
  } else {
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  dst->size += src->size;
  delete src;
}

void CachingAllocator::release_free_segments() {
  flush_bins();  // Note [Exact-size bins]: a binned block keeps its segment from looking free
  const bool history = g_history.load(std::memory_order_relaxed);
  for (FreeBlocks* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->is_split()) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      Segment* seg = b->segment;
      if (history)
        add_trace(TraceEntry::kSegmentFree, reinterpret_cast<uintptr_t>(seg->ptr), seg->size, seg->stream,
                  nullptr);
      backend_->deallocate(seg->ptr, seg->size);
      stats_.num_device_free += 1;
      update(stats_.segment, seg->is_small, -1);
      update(stats_.reserved_bytes, seg->is_small, -static_cast<int64_t>(seg->size));
      delete b;
      segments_.erase(seg->ptr);
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  synchronize_and_free_events();
  release_free_segments();  // flushes the exact-size bins first
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  // Note [Exact-size bins]: merged, binned blocks count as the pool would count them.
  const_cast<CachingAllocator*>(this)->flush_bins();
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  for (StatArray* s :
       {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split, &stats_.allocated_bytes,
        &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes, &stats_.requested_bytes})
    for (Stat& st : *s) st.peak = st.current;
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard lock(mutex_);
  for (StatArray* s :
       {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split, &stats_.allocated_bytes,
        &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes, &stats_.requested_bytes})
    for (Stat& st : *s) st.allocated = st.freed = 0;
  stats_.num_alloc_retries = stats_.num_ooms = stats_.num_device_alloc = stats_.num_device_free = 0;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard lock(mutex_);
  const_cast<CachingAllocator*>(this)->flush_bins();  // Note [Exact-size bins]: blocks as the pools hold them
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (const auto& [ptr, seg] : segments_) {
    SegmentInfo info{reinterpret_cast<uintptr_t>(seg->ptr), seg->size, 0, 0, seg->is_small, seg->stream, {}};
    for (const Block* b = seg->head; b; b = b->next) {
      info.blocks.push_back({reinterpret_cast<uintptr_t>(b->ptr), b->size, b->requested, b->allocated,
                             b->event_count > 0, b->context});
      if (b->allocated) {
        info.allocated_size += b->size;
        info.requested_size += b->requested;
      }
    }
    out.push_back(std::move(info));
  }
  return out;
}

void CachingAllocator::set_memory_limit(std::optional<size_t> limit) {
  std::lock_guard lock(mutex_);
  memory_limit_ = limit;
}

std::optional<size_t> CachingAllocator::memory_limit() const {
  std::lock_guard lock(mutex_);
  return memory_limit_;
}

std::string CachingAllocator::summary() const {
  const MemoryStats s = stats();
  const std::optional<size_t> limit = memory_limit();
  std::string out;
  char line[160];
  const char* rule = "|===============================================================================|\n";
  const char* thin = "|-------------------------------------------------------------------------------|\n";
  auto row = [&](const char* label, const Stat& st, bool bytes) {
    auto f = [&](int64_t v) { return bytes ? format_size(v) : std::to_string(v); };
    std::snprintf(line, sizeof line, "| %-25s | %10s | %10s | %10s | %10s |\n", label, f(st.current).c_str(),
                  f(st.peak).c_str(), f(st.allocated).c_str(), f(st.freed).c_str());
    out += line;
  };
  auto group = [&](const char* label, const StatArray& a, bool bytes) {
    row(label, a[kAggregate], bytes);
    row("      from large pool", a[kLargePool], bytes);
    row("      from small pool", a[kSmallPool], bytes);
    out += thin;
  };
  out += rule;
  std::snprintf(line, sizeof line, "| %-77s |\n",
                ("flambeau-alloc memory summary: '" + name_ + "' allocator on " + backend_->name()).c_str());
  out += line;
  out += thin;
  std::snprintf(line, sizeof line, "| %-25s | %10s | %10s | %10s | %10s |\n", "Metric", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed");
  out += line;
  out += rule;
  group("Allocated memory", s.allocated_bytes, true);
  group("Active memory", s.active_bytes, true);
  group("Requested memory", s.requested_bytes, true);
  group("Reserved memory", s.reserved_bytes, true);
  group("Non-releasable memory", s.inactive_split_bytes, true);
  group("Allocations", s.allocation, false);
  group("Active allocs", s.active, false);
  group("Reserved segments", s.segment, false);
  group("Non-releasable allocs", s.inactive_split, false);
  auto text_row = [&](const char* label, const std::string& text) {
    std::snprintf(line, sizeof line, "| %-25s | %49s |\n", label, text.c_str());
    out += line;
  };
  text_row("Raw allocations / frees", detail::cat_str(s.num_device_alloc, " / ", s.num_device_free));
  text_row("Alloc retries / OOMs", detail::cat_str(s.num_alloc_retries, " / ", s.num_ooms));
  text_row("Memory limit", limit ? format_size(static_cast<int64_t>(*limit)) : "none");
  out += rule;
  return out;
}

std::shared_ptr<CachingAllocator> default_caching_allocator() {
  static std::shared_ptr<CachingAllocator> instance = std::make_shared<CachingAllocator>(make_cpu_backend());
  return instance;
}

}  // namespace flambeau::alloc
