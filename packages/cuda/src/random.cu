// Random fills (reduce.h): core's counter-based generator on the device
// (Note [Random numbers]; draw/to_unit from device_math.h, tested on the host).
#include <cuda_runtime.h>

#include <cstdint>

#include "launch.cuh"
#include "reduce.h"

namespace flambeau::cuda {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

template <class T>
__global__ void uniform_kernel(T* out, OffsetCalculator<1> calc, int64_t n, uint64_t seed, uint64_t base,
                               double low, double high) {
  const double width = high - low;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    T v = static_cast<T>(low + width * to_unit(draw(seed, base + static_cast<uint64_t>(i))));
    if (v >= static_cast<T>(high) && high > low) v = nextafter(static_cast<T>(high), static_cast<T>(low));
    out[calc.get0(i)] = v;
  }
}

template <class T>
__global__ void normal_kernel(T* out, OffsetCalculator<1> calc, int64_t n, uint64_t seed, uint64_t base,
                              double mean, double std) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const uint64_t pair = base + 2 * static_cast<uint64_t>(i / 2);
    const double u1 = 1.0 - to_unit(draw(seed, pair));  // (0, 1]: log is finite
    const double u2 = to_unit(draw(seed, pair + 1));
    const double r = std * sqrt(-2.0 * log(u1));
    const double theta = kTwoPi * u2;
    out[calc.get0(i)] = static_cast<T>(mean + r * ((i & 1) == 0 ? cos(theta) : sin(theta)));
  }
}

}  // namespace

int launch_uniform(void* out, bool is_double, const OffsetCalculator<1>& calc, int64_t n, uint64_t seed,
                   uint64_t base, double low, double high, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    uniform_kernel<double>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<double*>(out), calc, n, seed, base, low, high);
  else
    uniform_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<float*>(out), calc, n, seed, base, low, high);
  return static_cast<int>(cudaGetLastError());
}

int launch_normal(void* out, bool is_double, const OffsetCalculator<1>& calc, int64_t n, uint64_t seed,
                  uint64_t base, double mean, double std, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    normal_kernel<double>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<double*>(out), calc, n, seed, base, mean, std);
  else
    normal_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(static_cast<float*>(out), calc, n, seed, base, mean, std);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace flambeau::cuda
