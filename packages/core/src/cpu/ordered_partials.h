#pragma once
// Note [Partial sums in slice order]
// A parallel loop that reduces into one buffer (a convolution's weight gradient summed over images, layer
// norm's weight gradient summed over rows) gives each piece of the loop a partial buffer of its own. The
// partials used to be added into the result as the threads finished, so the order of the additions, and
// with it the rounding, changed from run to run: the same ResNet-8 step's gradients differed by ~1e-9
// between two runs, and two identical training runs drifted ~1e-3 apart within a few steps (a max-pool or
// ReLU tie flips). Here the loop is cut into slices that depend only on (n, grain, get_num_threads()), each
// slice reduces into its own zeroed buffer, whichever thread runs it, and the buffers are added in slice
// order after the loop: bitwise the same result on every run at a given thread count, as PyTorch's CPU
// reductions are. The price is one buffer per slice (two slices per thread) instead of one per thread.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/linalg/gemm_pool.h"
#include "flambeau/parallel.h"

namespace flambeau::cpu {

/// out[0, size) = the sum over slices of [0, n) of body(begin, end, acc), where body adds its slice's
/// contribution into acc (size elements, zeroed). Serial (one call on out, zeroed) below two grains of
/// work or inside a parallel region; `on_pool`: the slices run on the GEMM pool (Note [GEMM pool]),
/// else on parallel_for.
template <class T, class Body>
void sum_in_slice_order(int64_t n, int64_t grain, int64_t size, T* out, bool on_pool, const Body& body) {
  const int64_t threads =
      std::min<int64_t>(get_num_threads(), (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1));
  if (n <= 0 || threads <= 1 || in_parallel_region()) {
    std::fill(out, out + size, T(0));
    if (n > 0) body(int64_t{0}, n, out);
    return;
  }
  const int64_t per = (n + threads * 2 - 1) / (threads * 2);
  const int64_t slices = (n + per - 1) / per;
  std::vector<T> partial(static_cast<size_t>(slices * size), T(0));
  auto run = [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) body(s * per, std::min(n, (s + 1) * per), partial.data() + s * size);
  };
  if (on_pool)
    pool_parallel_for(0, slices, 1, run);
  else
    parallel_for(0, slices, 1, run);
  std::copy(partial.begin(), partial.begin() + size, out);
  for (int64_t s = 1; s < slices; ++s) {
    const T* p = partial.data() + s * size;
#pragma omp simd
    for (int64_t i = 0; i < size; ++i) out[i] += p[i];
  }
}

}  // namespace flambeau::cpu
