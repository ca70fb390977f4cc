#pragma once
// Note [GEMM pool]
// gemm() (gemm.h) splits a large GEMM into column or row blocks, one serial
// OpenBLAS call each. Run on the OpenMP pool, every such split pays the
// passive pool's wake-ups (OMP_WAIT_POLICY=PASSIVE, Note [Thread pool
// waiting]): the worker wakes tens of microseconds after the fork, and the
// caller, done with its half first, sleeps in the join barrier and is woken
// as late again. A short MLP forward is two such GEMMs, and both latencies
// sit on its critical path (measured: the no-grad MLP forward ~8% slower than
// with spinning OpenMP workers). This pool runs those blocks instead:
// - blocks are claimed from one shared counter, so the caller starts at once
//   and a worker that wakes late (or never: a loaded machine, a forked child
//   without the threads) only takes what is left; the call never waits for a
//   worker that has not started;
// - the caller waits for the claimed blocks by spinning (they are running on
//   another core), not in a futex;
// - after a job a worker spins for kSpinMicros (yielding the CPU every few
//   microseconds, so another runnable thread on that core still gets it)
//   before it sleeps on a futex, so back-to-back GEMMs (a forward, a
//   backward) find it awake; a bounded spin keeps the protection of passive
//   waiting against stealing the cores of other processes.
// pool_parallel_for puts the short parallel loops of a training step or a
// forward pass (direct conv, eval batch norm, the fused optimizer step) on the
// same pool. A pool job's blocks count as a parallel region
// (in_parallel_region()), so nested loops and GEMMs stay serial in them.
// backends.cpu.gemm_pool = False (Note [Settings]) turns the pool off: OpenMP runs it all.
//
// Note [Affine chunks]
// With one shared counter, which thread runs block i changes from job to job,
// so the part of a tensor one core wrote in op k is often read by the other in
// op k + 1: a cache-line transfer per line, cheap between cores sharing an L3,
// several times dearer between L3 domains (a VM's vCPUs can be either, see
// benchmarks/README.md). backends.cpu.parallel_for_schedule = "affine" gives
// every participant of a job (the caller: share 0, worker i: share i + 1) a
// contiguous share of the blocks, [k n / parts, (k + 1) n / parts), claimed
// from its front, so the same thread takes the same blocks in consecutive jobs
// of the same shape; a participant done with its share takes what is left of
// the others' from their back, so a worker that wakes late (or never) is still
// covered and the caller still starts at once. Each share is one atomic word
// (generation | front | back) on its own cache line; a word of another
// generation reads as empty. The blocks, and so the chunk boundaries of
// parallel_for, are the same as under "dynamic": only who runs them changes.
// It applies to every pool job (GEMM blocks, parallel_for and
// pool_parallel_for chunks); the OpenMP fallback stays dynamic.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>

#include "flambeau/parallel.h"

namespace flambeau::cpu {

/// Calls fn(ctx, i) for every i in [0, n) on the calling thread and up to
/// threads - 1 pool workers; returns when all have run. fn must not throw.
/// Returns false (having run nothing) when the pool is in use by another
/// thread or n is out of range: the caller then runs the blocks itself.
bool gemm_pool_run(int64_t n, int threads, void (*fn)(void*, int64_t), void* ctx);

/// Templated front end: f(i) for i in [0, n).
template <class F>
bool gemm_pool_for(int64_t n, int threads, const F& f) {
  return gemm_pool_run(
      n, threads, [](void* c, int64_t i) { (*static_cast<const F*>(c))(i); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

/// True on a thread running a pool job's block (the caller's too, for the
/// job's duration): nested parallel_for calls stay serial there.
bool in_gemm_pool_job();

/// parallel_for (same chunks of at least `grain`, same serial cases) on the
/// pool: for the short kernels of a forward pass (conv, batch norm) whose
/// fork/join on the passive OpenMP pool costs as much as their work. Each
/// thread's share is cut into two chunks so a late worker takes less.
template <class F>
void pool_parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (begin >= end) return;
  const int64_t n = end - begin;
  const int nt = get_num_threads();
  int64_t threads = nt;
  if (grain > 0) threads = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (threads <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  const int64_t chunks = std::min<int64_t>(n, threads * 2);
  const int64_t per = (n + chunks - 1) / chunks;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto chunk = [&](int64_t i) {
    const int64_t b = begin + i * per, e = std::min(end, b + per);
    if (b >= e) return;
    try {
      f(b, e);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  if (!gemm_pool_for(chunks, static_cast<int>(threads), chunk)) {
    parallel_for(begin, end, grain, f);
    return;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace flambeau::cpu
