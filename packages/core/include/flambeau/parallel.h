#pragma once
// Intra-op parallelism. Note [Grain size]: a loop is split across threads only
// when it has more than `grain` elements per thread to give; below that the
// fork/join costs more than it saves, so small tensors stay single-threaded.
#include <algorithm>
#include <cstdint>
#include <exception>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "flambeau/macros.h"

namespace flambeau {

/// Threads used by kernels and by OpenBLAS.
FB_API int get_num_threads();
/// Sets both OpenMP's and OpenBLAS's thread count. ValueError if n < 1.
FB_API void set_num_threads(int n);
/// Default: CPUs in this process's affinity mask, capped by the cgroup CPU quota.
FB_API int default_num_threads();
FB_API bool in_parallel_region();

/// Elementwise work below this many elements runs on one thread.
inline constexpr int64_t kGrainSize = 32768;

/// Calls f(begin, end) on disjoint chunks covering [begin, end).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (begin >= end) return;
  const int64_t n = end - begin;
  int64_t nthreads = get_num_threads();
  if (grain > 0) nthreads = std::min<int64_t>(nthreads, (n + grain - 1) / grain);
  if (nthreads <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
#ifdef _OPENMP
  // An exception must not escape an OpenMP region (it would terminate):
  // keep the first one and rethrow it after the join.
  std::exception_ptr error;
#pragma omp parallel num_threads(nthreads)
  {
    const int64_t tid = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = begin + tid * chunk;
    const int64_t e = std::min(end, b + chunk);
    try {
      if (b < e) f(b, e);
    } catch (...) {
#pragma omp critical(flambeau_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
#else
  f(begin, end);
#endif
}

}  // namespace flambeau
