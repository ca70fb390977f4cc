#pragma once
// Intra-op parallelism. Note [Grain size]: a loop is split across threads only
// when it has more than `grain` elements per thread to give; below that the
// fork/join costs more than it saves, so small tensors stay single-threaded.
//
// Note [Dynamic chunks]
// parallel_for cuts [begin, end) into chunks a few times smaller than
// n / threads (never smaller than grain, unless there are fewer grains than
// threads) and lets the threads claim them from a shared counter. The caller
// starts on the first chunk at once and keeps claiming while the other threads
// wake up: with passive waiting (Note [Thread pool waiting]) a sleeping worker
// needs tens of microseconds to wake, which a static one-chunk-per-thread
// split put on the critical path of every ~100 us op, and a worker that wakes
// late only takes what is left. The chunks run on the GEMM pool (Note [GEMM
// pool]: the caller waits for running chunks awake, the workers spin briefly
// after a job so back-to-back ops find them awake); when another thread holds
// that pool they run on OpenMP with the same chunks, claimed dynamically.
// Which thread runs a chunk is unspecified; the chunk boundaries depend only on
// (begin, end, grain, get_num_threads()), so a kernel that combines per-chunk
// partial results in chunk order gives bitwise the same result on every run at
// a given thread count. Inside a parallel region (a chunk of parallel_for or a
// GEMM pool job) the loop runs serially on the calling thread, as one chunk.
// backends.cpu.parallel_for_schedule = "static" (Note [Settings]) restores
// the former split, one chunk per thread on OpenMP, for comparisons; "affine"
// keeps these chunks but has each pool thread claim those of its own
// contiguous share first (Note [Affine chunks] in src/cpu/linalg/gemm_pool.h).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>

#include "flambeau/parallel_chunks.h"

namespace flambeau {

namespace detail {

/// Chunks per thread of a parallel_for (Note [Dynamic chunks]).
inline constexpr int64_t kChunksPerThread = 4;

/// How parallel_for splits a loop of n > 0 elements: `threads` threads share
/// `chunks` chunks of `per` elements (the last one shorter). threads == 1: one
/// serial call f(begin, end).
struct ChunkPlan {
  int64_t threads;
  int64_t chunks;
  int64_t per;
};

inline ChunkPlan plan_chunks(int64_t n, int64_t grain, int64_t nthreads) {
  grain = std::max<int64_t>(grain, 1);
  // Note [Grain size]: a thread only for each grain of work.
  const int64_t threads = std::min<int64_t>(std::max<int64_t>(nthreads, 1), (n + grain - 1) / grain);
  if (threads <= 1) return {1, 1, n};
  // At least one chunk per thread; more, of at least a grain each, up to kChunksPerThread per thread.
  const int64_t want = std::max(threads, std::min(threads * kChunksPerThread, n / grain));
  const int64_t per = (n + want - 1) / want;
  return {threads, (n + per - 1) / per, per};
}

/// backends.cpu.parallel_for_schedule = "static" (Note [Settings]): the former
/// split, one chunk per thread on OpenMP, for comparisons and as an escape hatch.
FB_API bool static_split();

}  // namespace detail

/// Calls f(b, e) on disjoint chunks covering [begin, end), on up to
/// get_num_threads() threads (Note [Dynamic chunks]). The first exception a
/// chunk throws is rethrown after every running chunk has finished (chunks
/// not yet started are then skipped).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (begin >= end) return;
  if (detail::plan_chunks(end - begin, grain, get_num_threads()).threads <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  // An exception must not escape a worker (it would terminate): keep the
  // first one and rethrow it after the join.
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto part = [&](int64_t b, int64_t e) {
    if (failed.load(std::memory_order_relaxed)) return;
    try {
      f(b, e);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  using Part = decltype(part);
  detail::parallel_for_chunks(
      begin, end, grain, [](void* p, int64_t b, int64_t e) { (*static_cast<Part*>(p))(b, e); }, &part);
  if (error) std::rethrow_exception(error);
}

}  // namespace flambeau
