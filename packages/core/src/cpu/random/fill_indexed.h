#pragma once
// fill_indexed: the loop of the CPU factories and random fills that compute
// each element from its index alone (arange, uniform_, randint, bernoulli_).
#include <cstdint>

#include "flambeau/parallel.h"
#include "flambeau/tensor.h"
#include "generic/shape_utils.h"

namespace flambeau::cpu {

/// Writes gen(i) for element i (row-major order) of self, in parallel chunks
/// when self is contiguous; any thread count gives the same values.
template <class T, class G>
void fill_indexed(Tensor& self, const G& gen) {
  T* p = self.data<T>();
  if (self.is_contiguous()) {
    parallel_for(0, self.numel(), kGrainSize / 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = gen(i);
    });
  } else {
    int64_t i = 0;
    detail::for_each_offset(self.sizes(), self.strides(), [&](int64_t off) { p[off] = gen(i++); });
  }
}

}  // namespace flambeau::cpu
