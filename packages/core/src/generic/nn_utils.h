#pragma once
// Helpers of the device-generic nn kernels (src/generic/losses.cpp,
// nn_ops.cpp), and the argument checks they share with the CPU kernels of the
// same ops (src/cpu/softmax.cpp, linear_backward.cpp). Private to libflambeau_core.
#include <algorithm>
#include <cstdint>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau::detail {

/// A 0-dim float64 wrapped number (it broadcasts against tensors of any device and floating dtype).
inline Tensor number(double v) { return scalar_to_tensor(Scalar(v)); }

/// The device type as the kernel keys name it: "CUDA", a plug-in device's name ("sim"), "Meta".
inline const char* device_kind(const Tensor& t) {
  return dispatch_key_name(device_dispatch_key(t.device().type));
}

/// The generic kernels compute in float32 and float64 only (as every device's kernels they are made of).
inline void check_generic_floating(const Tensor& t, const char* op) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op,
                "] with dtype ", dtype_name(t.dtype()), " is not yet implemented on ", device_kind(t),
                " (float32 and float64 are)");
}

/// A 0-dim integer tensor's value, read on the host (one small copy).
inline int64_t host_int64(const Tensor& t) {
  Tensor h = op::empty(Shape{}, ScalarType::Int64, Device(DeviceType::CPU));
  op::copy_(h, t);
  return h.data<int64_t>()[0];
}

/// Whether the values can be read: the meta device holds none, so a check that reads them is skipped
/// there (as PyTorch's meta functions skip their data-dependent checks).
inline bool has_values(const Tensor& t) { return !t.device().is_meta(); }

/// _linear_backward's checks: 2-D grad_output (n, out), input (n, in) and weight (out, in), float32 or
/// float64, one dtype and one device.
inline void check_linear_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight) {
  const char* op = "_linear_backward";
  FB_CHECK_VALUE(weight.dim() == 2, "[", op, "] weight must be 2-D (out_features, in_features), got shape ",
                 shape_str(weight.sizes()));
  FB_CHECK_VALUE(input.dim() == 2, "[", op, "] input must be 2-D (n, in_features), got shape ",
                 shape_str(input.sizes()));
  FB_CHECK_VALUE(grad_output.dim() == 2, "[", op, "] grad_output must be 2-D (n, out_features), got shape ",
                 shape_str(grad_output.sizes()));
  const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1], n = input.sizes()[0];
  FB_CHECK_VALUE(input.sizes()[1] == in_f, "[", op, "] input shape ", shape_str(input.sizes()),
                 " does not match weight shape ", shape_str(weight.sizes()),
                 ": the last dim of input must be in_features=", in_f);
  FB_CHECK_VALUE(grad_output.sizes()[0] == n && grad_output.sizes()[1] == out_f, "[", op,
                 "] grad_output must have shape (", n, ", ", out_f, ") for input shape ",
                 shape_str(input.sizes()), " and weight shape ", shape_str(weight.sizes()), ", got ",
                 shape_str(grad_output.sizes()));
  const ScalarType dt = grad_output.dtype();
  FB_CHECK_TYPE(dt == ScalarType::Float32 || dt == ScalarType::Float64 || dt == ScalarType::BFloat16, "[", op,
                "] supports float32, float64 and bfloat16, got grad_output of dtype ", dtype_name(dt));
  FB_CHECK_TYPE(input.dtype() == dt && weight.dtype() == dt, "[", op,
                "] grad_output, input and weight must have the same dtype, got ", dtype_name(dt), ", ",
                dtype_name(input.dtype()), " and ", dtype_name(weight.dtype()));
  FB_CHECK(input.device() == grad_output.device() && weight.device() == grad_output.device(), "[", op,
           "] grad_output, input and weight must be on the same device, got ", grad_output.device().str(),
           ", ", input.device().str(), " and ", weight.device().str());
}

/// masked_fill's checks: a bool mask that broadcasts to self, a value that fits self's dtype, and (for a
/// tensor with elements, as PyTorch) a dtype of the kernel's (every dtype but the wide unsigned ones).
inline void check_masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[masked_fill] mask must be a bool tensor, got dtype ",
                dtype_name(mask.dtype()));
  bool fits = mask.dim() <= self.dim();
  for (int64_t k = 1; fits && k <= mask.dim(); ++k) {
    const int64_t ms = mask.sizes()[mask.dim() - k];
    fits = ms == 1 || ms == self.sizes()[self.dim() - k];
  }
  FB_CHECK_VALUE(fits, "[masked_fill] mask of shape ", shape_str(mask.sizes()),
                 " cannot be broadcast to the shape of self ", shape_str(self.sizes()));
  check_scalar_fits(value, self.dtype(), "masked_fill");
  if (self.numel() > 0)
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf | kDtComplex>(self.dtype(), "masked_fill",
                                                                       [](auto) {});
}

inline const int64_t kDim0[1] = {0};
inline const int64_t kDim1[1] = {1};

}  // namespace flambeau::detail
