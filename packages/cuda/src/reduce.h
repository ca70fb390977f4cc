#pragma once
// Reductions and random fills (reduce.cu, random.cu): plain launchers as kernels.h.
#include <cstdint>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

enum ReduceOp : int { kRedSum, kRedProd, kRedMax, kRedMin, kRedArgMax, kRedArgMin };

/// out[o] = reduce_r in[split.offset(o, r)] (times `scale` for sum: mean),
/// for o < split.num_outputs; argmax/argmin write the int64 index r to
/// `indices` (and the value to `out` when non-null). First index on ties;
/// NaN wins max and min. compute: 0 float32, 1 float64, 2 int64.
int launch_reduce(int op, int compute, const void* in, const ReduceSplit& split, void* out, int64_t* indices,
                  double scale, void* stream);

/// Element i (row-major) of the strided output gets core's uniform / normal
/// draw i (Note [Random numbers]: counter base + i; normal: Box-Muller pairs
/// from draws base + 2j and base + 2j + 1). is_double: float64 else float32.
int launch_uniform(void* out, bool is_double, const OffsetCalculator<1>& calc, int64_t n, uint64_t seed,
                   uint64_t base, double low, double high, void* stream);
int launch_normal(void* out, bool is_double, const OffsetCalculator<1>& calc, int64_t n, uint64_t seed,
                  uint64_t base, double mean, double std, void* stream);

}  // namespace flambeau::cuda
