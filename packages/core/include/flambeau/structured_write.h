#pragma once
// Note [Structured kernels] (flambeau/dispatch.h): when the generated in-place
// forms (`sin_`) and out= bindings of a structured op may hand the op's out
// kernel the destination itself: autograd does not record, and the destination
// is exactly the output the op's meta step describes.
#include <algorithm>
#include <initializer_list>

#include "flambeau/dispatch.h"
#include "flambeau/tensor.h"

namespace flambeau {

/// True when an op may write its result straight into `dst` (out=, self): it is
/// defined and autograd would not record the op (Note [Structured kernels]).
inline bool structured_write_ok(const Tensor& dst, std::initializer_list<const Tensor*> inputs) {
  if (!dst.defined()) return false;
  if (!grad_mode_enabled()) return true;
  if (dst.impl()->needs_autograd()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->impl()->needs_autograd()) return false;
  return true;
}

/// True when `dst` is exactly the output an op's meta step describes (dtype, device, shape), so its
/// out kernel may write into it (Note [Structured kernels]).
inline bool fits_output(const OutputSpec& spec, const Tensor& dst) {
  return spec.dtype == dst.dtype() && spec.device == dst.device() && std::ranges::equal(spec.shape, dst.sizes());
}

}  // namespace flambeau
