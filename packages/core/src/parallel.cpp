#include "flambeau/parallel.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cpu/linalg/gemm_pool.h"
#include "flambeau/error.h"
#include "settings.h"

extern "C" void scipy_openblas_set_num_threads(int num_threads);
extern "C" int scipy_openblas_get_num_threads(void);

namespace flambeau {

namespace {
std::atomic<int> g_num_threads{0};  // 0: not yet decided

// The CPU quota of this container (cgroup v2 cpu.max "quota period"), or 0.
int cgroup_cpu_limit() {
  std::ifstream f("/sys/fs/cgroup/cpu.max");
  std::string quota, period;
  if (!(f >> quota >> period) || quota == "max") return 0;
  double q = std::stod(quota), p = std::stod(period);
  if (q <= 0 || p <= 0) return 0;
  return std::max(1, static_cast<int>(std::ceil(q / p)));
}

// Note [OpenBLAS count across fork]
// OpenBLAS's pthread_atfork prepare handler stops its thread pool before a
// fork, and the first openblas_set_num_threads after it (whatever the count,
// 1 included), as its first threaded call, starts a whole new pool, whose
// threads spin ~0.1 s before they sleep: 40-50 ms of CPU in each DataLoader
// worker that sets 1 thread, and in the parent at its next GEMM (whose
// SerialBlasScope sets 1). A BLAS call with OpenBLAS's count at 1 runs on the
// caller without touching the pool. So these handlers (registered after
// OpenBLAS's, at this library's load: our prepare runs before its shutdown,
// while the pool still runs) set OpenBLAS's count to 1 for the fork, and both
// processes keep it at 1 afterwards, with the count it had pending:
// set_num_threads replaces the pending count (or clears it, for 1) without
// calling OpenBLAS, and a call that lets OpenBLAS thread applies it first
// (apply_pending_blas_threads), which is when a pool is needed anyway.
// get_num_threads() is unchanged by a fork, and flambeau's GEMMs, which split
// products on their own threads with OpenBLAS serial (Note [GEMM threads]),
// use the same threads as before it.
std::atomic<int> g_blas_pending{0};  // > 1: the count OpenBLAS's 1 stands for since a fork
int g_blas_at_fork = 0;              // OpenBLAS's count when the fork began (its thread only)

void blas_before_fork() {
  g_blas_at_fork = scipy_openblas_get_num_threads();
  if (g_blas_at_fork > 1) scipy_openblas_set_num_threads(1);  // the pool still runs: no thread starts
}

void blas_after_fork() {
  if (g_blas_at_fork > 1) g_blas_pending.store(g_blas_at_fork, std::memory_order_relaxed);
}

[[maybe_unused]] const int g_blas_fork_handlers =
    ::pthread_atfork(&blas_before_fork, &blas_after_fork, &blas_after_fork);
}  // namespace

void apply_pending_blas_threads() {
  if (g_blas_pending.load(std::memory_order_relaxed) == 0) return;
  if (const int n = g_blas_pending.exchange(0, std::memory_order_relaxed); n > 1)
    scipy_openblas_set_num_threads(n);
}

int default_num_threads() {
  cpu_set_t set;
  int n = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = std::max(1, CPU_COUNT(&set));
  if (int limit = cgroup_cpu_limit(); limit > 0) n = std::min(n, limit);
  return n;
}

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = default_num_threads();
    g_num_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

void set_num_threads(int n) {
  FB_CHECK_VALUE(n >= 1, "[set_num_threads] expected a positive number of threads, got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
  // Note [OpenBLAS count across fork]: since a fork OpenBLAS is at 1, and any call would start its pool.
  int pending = g_blas_pending.load(std::memory_order_relaxed);
  while (pending != 0 &&
         !g_blas_pending.compare_exchange_weak(pending, n > 1 ? n : 0, std::memory_order_relaxed)) {
  }
  if (pending != 0) return;
  if (n != scipy_openblas_get_num_threads()) scipy_openblas_set_num_threads(n);
}

bool in_parallel_region() { return omp_in_parallel() || cpu::in_gemm_pool_job(); }

// backends.cpu.parallel_for_schedule (Note [Settings]).
bool detail::static_split() { return settings::parallel_for_schedule() == settings::Schedule::Static; }

// Note [Dynamic chunks]: parallel_for's chunks run on the GEMM pool.
bool detail::run_chunks_on_pool(int64_t chunks, int threads, void (*fn)(void*, int64_t), void* ctx) {
  return cpu::gemm_pool_run(chunks, threads, fn, ctx);
}

// Note [Dynamic chunks] in parallel.h: the one place parallel_for's schedule is decided.
void detail::parallel_for_chunks(int64_t begin, int64_t end, int64_t grain,
                                 void (*fn)(void*, int64_t, int64_t), void* ctx) {
  if (begin >= end) return;
  const int64_t n = end - begin;
  const ChunkPlan plan = plan_chunks(n, grain, get_num_threads());
  if (plan.threads <= 1 || in_parallel_region()) {
    fn(ctx, begin, end);
    return;
  }
  if (static_split()) {
#pragma omp parallel num_threads(static_cast<int>(plan.threads))
    {
      const int64_t nt = omp_get_num_threads(), chunk = (n + nt - 1) / nt;
      const int64_t b = begin + omp_get_thread_num() * chunk, e = std::min(end, b + chunk);
      if (b < e) fn(ctx, b, e);
    }
    return;
  }
  struct Chunks {
    int64_t begin, end, per;
    void (*fn)(void*, int64_t, int64_t);
    void* ctx;
  } chunks{begin, end, plan.per, fn, ctx};
  auto one = [](void* c, int64_t i) {
    const Chunks& s = *static_cast<const Chunks*>(c);
    const int64_t b = s.begin + i * s.per;
    s.fn(s.ctx, b, std::min(s.end, b + s.per));
  };
  if (!run_chunks_on_pool(plan.chunks, static_cast<int>(plan.threads), one, &chunks)) {
#pragma omp parallel for num_threads(static_cast<int>(plan.threads)) schedule(dynamic, 1)
    for (int64_t i = 0; i < plan.chunks; ++i) one(&chunks, i);
  }
}

}  // namespace flambeau
