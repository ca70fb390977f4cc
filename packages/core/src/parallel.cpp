#include "flambeau/parallel.h"

#include <omp.h>
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
}  // namespace

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
  scipy_openblas_set_num_threads(n);
}

bool in_parallel_region() { return omp_in_parallel() || cpu::in_gemm_pool_job(); }

// backends.cpu.parallel_for_schedule (Note [Settings]).
bool detail::static_split() { return settings::parallel_for_schedule() == settings::Schedule::Static; }

// Note [Dynamic chunks]: parallel_for's chunks run on the GEMM pool.
bool detail::run_chunks_on_pool(int64_t chunks, int threads, void (*fn)(void*, int64_t), void* ctx) {
  return cpu::gemm_pool_run(chunks, threads, fn, ctx);
}

}  // namespace flambeau
