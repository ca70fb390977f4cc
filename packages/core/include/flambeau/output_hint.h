#pragma once
// Note [Output hint]
// The generated in-place forms (`relu_`) and out= bindings of the elementwise
// ops listed in codegen (DIRECT_WRITE_OPS in gen_core.py) arm an OutputHint
// naming the op and the destination tensor, then call the out-of-place op.
// The first TensorIterator built for that op name on this thread takes the
// destination as its given output (instead of allocating one) when it fits
// exactly: same dtype as the iterator's output, same device, the broadcast
// shape of the inputs, and no two elements at one address. The caller sees
// the destination come back as the result and skips the copy; otherwise (any
// mismatch: it copies as before, with the same errors). Only kernels that
// build a single iterator for their result may be listed: a kernel that wrote
// a first pass into the destination and then read its input again would read
// the overwritten values. No hint is armed while autograd records (a backward
// may save the input that the direct write would overwrite).
#include <algorithm>
#include <initializer_list>
#include <span>

#include "flambeau/dispatch.h"
#include "flambeau/macros.h"
#include "flambeau/tensor.h"

namespace flambeau {

class FB_API OutputHint {
 public:
  OutputHint(const char* op, const Tensor& dst);
  ~OutputHint();
  OutputHint(const OutputHint&) = delete;
  OutputHint& operator=(const OutputHint&) = delete;

  /// The armed destination of this thread if it fits an iterator of `op` whose
  /// output has dtype `out_dtype` over `inputs` (their broadcast shape, the
  /// first one's device); disarms it. nullptr otherwise.
  static const Tensor* take(const char* op, ScalarType out_dtype, std::span<const Tensor* const> inputs);

 private:
  const char* op_;
  const Tensor* dst_;
  OutputHint* prev_;
};

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

/// True when writing straight into `dst` is allowed: a CPU tensor and nothing
/// that autograd would record (Note [Output hint]).
inline bool direct_write_ok(const Tensor& dst, std::initializer_list<const Tensor*> inputs) {
  return dst.defined() && dst.device().is_cpu() && structured_write_ok(dst, inputs);
}

/// True when `dst` is exactly the output an op's meta step describes (dtype, device, shape), so its
/// out kernel may write into it (Note [Structured kernels]).
inline bool fits_output(const OutputSpec& spec, const Tensor& dst) {
  return spec.dtype == dst.dtype() && spec.device == dst.device() && std::ranges::equal(spec.shape, dst.sizes());
}

}  // namespace flambeau
