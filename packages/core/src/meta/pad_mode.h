#pragma once
// F.pad's modes as _pad_nd and _pad_nd_backward take them (a string), parsed once for the meta step
// (src/meta/spatial_rules.cpp), which refuses an unknown mode, and the CPU kernels
// (src/cpu/pool/pool_pad.cpp), which run after it. Private to libflambeau_core.
#include <cstdint>
#include <string_view>

#include "flambeau/error.h"
#include "flambeau/tensor_impl.h"

namespace flambeau::meta {

enum class PadMode { Constant, Reflect, Replicate, Circular };

inline PadMode pad_mode(std::string_view mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  if (mode == "circular") return PadMode::Circular;
  // PyTorch's NotImplementedError (its F.pad's and torch._C._nn.pad's), with F.pad's message.
  throw NotImplementedError(
      detail::cat_str("[pad] unsupported padding mode '", mode,
                      "': use one of 'constant', 'reflect', 'replicate' or 'circular'"));
}

/// A constant pad's gradient is the crop by the negated pads (two's complement: INT64_MIN stays itself,
/// and the meta step refuses its crop).
inline Shape negated_pads(IntArrayRef pad) {
  Shape neg(pad.begin(), pad.end());
  for (int64_t& v : neg) v = static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(v));
  return neg;
}

}  // namespace flambeau::meta
