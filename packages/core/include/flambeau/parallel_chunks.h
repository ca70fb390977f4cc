#pragma once
// The plain functions of flambeau's intra-op threads: no template, no
// standard header beyond <cstdint>. parallel.h builds parallel_for on them;
// code that must compile fast includes only this (fb.compile's generated
// kernels, Note [Fused kernel] in flambeau/compiler/_cpp_kernel.py: <algorithm>
// and <atomic> alone take ~0.9 s of g++'s time, this header ~0.01 s).
#include <cstdint>

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

namespace detail {

/// Runs fn(ctx, i) for every i in [0, chunks) on the calling thread and up to
/// threads - 1 workers of the GEMM pool; false (having run nothing) when the
/// pool is held by another thread, turned off (backends.cpu.gemm_pool) or the
/// count is out of its range. fn must not throw.
FB_API bool run_chunks_on_pool(int64_t chunks, int threads, void (*fn)(void*, int64_t), void* ctx);

/// parallel_for's schedule (Note [Dynamic chunks] in parallel.h) as a plain
/// function: calls fn(ctx, b, e) on disjoint chunks covering [begin, end), on
/// up to get_num_threads() threads; serially, as one chunk, when the loop is
/// below two grains or the caller is already in a parallel region. fn must
/// not throw (parallel_for wraps a callable that may).
FB_API void parallel_for_chunks(int64_t begin, int64_t end, int64_t grain,
                                void (*fn)(void*, int64_t, int64_t), void* ctx);

}  // namespace detail
}  // namespace flambeau
