// Note [Settings]
// The CPU kernels' tuning choices (which float32 GEMM, which convolution
// kernel, how parallel_for splits a range, ...) live in one registry: a small
// typed value per name, set when libflambeau_core loads (defaults, then the
// name's FLAMBEAU_* environment override when one is set), switched at run time
// from Python as attributes of flambeau_core.backends.cpu (PyTorch's
// torch.backends.* flags), and read by the kernels as one relaxed atomic load:
// a plain load, never getenv, on a hot path. The table of names, values and
// overrides is kSpecs in settings.cpp; docs/core.md "Settings" documents it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flambeau/macros.h"

namespace flambeau::settings {

/// One per setting, in kSpecs' order.
enum class Setting : uint8_t {
  Sgemm,
  GemmPool,
  ParallelForSchedule,
  ConvRowBlocks,
  ConvPixelClasses,
  ConvDirectKernel,
  ConvWeightGradKernel,
  ConvTransposedKernel,
  MaxCpuCapability,
  Bf16Amx,
  kCount,
};

// Each setting's values, in the order of its allowed names in kSpecs.
enum class SgemmBackend : uint8_t { Own, OpenBLAS };
enum class Schedule : uint8_t { Dynamic, Static, Affine };
enum class Toggle : uint8_t { Auto, On, Off };
enum class ConvKernel : uint8_t { Auto, Flat, ChannelVectorized };
enum class TransposedKernel : uint8_t { Auto, Gemm };
enum class Capability : uint8_t { Auto, Avx512, Avx2, Base };

namespace detail {
FB_API extern std::atomic<uint8_t> g_values[static_cast<size_t>(Setting::kCount)];
template <class T>
inline T load(Setting s) {
  return static_cast<T>(g_values[static_cast<size_t>(s)].load(std::memory_order_relaxed));
}
}  // namespace detail

/// Where float32 GEMMs go (Note [Own sgemm]).
inline SgemmBackend sgemm() { return detail::load<SgemmBackend>(Setting::Sgemm); }
/// False: every GEMM and parallel_for runs on OpenMP, not the GEMM pool.
inline bool gemm_pool() { return detail::load<uint8_t>(Setting::GemmPool) != 0; }
/// Static: parallel_for's former one-chunk-per-thread OpenMP split; Affine: each pool
/// thread claims its own share of a job's chunks first (Note [Affine chunks] in gemm_pool.h).
inline Schedule parallel_for_schedule() { return detail::load<Schedule>(Setting::ParallelForSchedule); }
/// The direct convolution's row blocks (Note [Direct convolution]): on, off, or by cost.
inline Toggle conv_row_blocks() { return detail::load<Toggle>(Setting::ConvRowBlocks); }
/// The channel-vectorized kernel's pixel classes: off, or by cost (never On).
inline Toggle conv_pixel_classes() { return detail::load<Toggle>(Setting::ConvPixelClasses); }
/// Which AVX-512 direct convolution kernel runs the forward pass.
inline ConvKernel conv_direct_kernel() { return detail::load<ConvKernel>(Setting::ConvDirectKernel); }
/// Which AVX-512 direct convolution kernel computes the weight gradient.
inline ConvKernel conv_weight_grad_kernel() {
  return detail::load<ConvKernel>(Setting::ConvWeightGradKernel);
}
/// Gemm: transposed convolutions stay on GEMM + col2im.
inline TransposedKernel conv_transposed_kernel() {
  return detail::load<TransposedKernel>(Setting::ConvTransposedKernel);
}
/// The widest instruction set the dispatch stubs may pick (Note [CPU capabilities] in
/// cpu/dispatch/dispatch_stub.h); settable at run time.
inline Capability max_cpu_capability() { return detail::load<Capability>(Setting::MaxCpuCapability); }
/// False: bfloat16 convolutions keep their products on vdpbf16ps where the CPU also has AMX-BF16
/// (Note [bfloat16 convolution on AMX] in cpu/conv/conv_bf16_avx512.cpp).
inline bool bf16_amx() { return detail::load<uint8_t>(Setting::Bf16Amx) != 0; }

/// What Python sees of one setting.
struct Info {
  std::string name;
  std::string env;                  // its override, read when the library loads
  std::vector<std::string> values;  // allowed names; {"False", "True"} for a flag
  bool is_flag;                     // a Python bool
  bool settable;                    // at run time (false: only through env)
  std::string doc;
};
FB_API std::vector<Info> list();
/// The value's name ("own", "True", ...); ValueError for an unknown setting.
FB_API std::string get(std::string_view name);
/// Sets it by the value's name; ValueError naming the setting and the allowed values.
FB_API void set(std::string_view name, std::string_view value);
/// The overrides that were set to an unknown value (and ignored): one message each.
FB_API std::vector<std::string> environment_errors();

}  // namespace flambeau::settings
