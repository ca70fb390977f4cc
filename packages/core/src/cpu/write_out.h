#pragma once
// How a CPU out kernel whose loops write a contiguous result fills the output the meta step chose
// (Note [Structured kernels]): reductions, scans, softmax.
#include "flambeau/ops.h"

namespace flambeau::cpu {

// fill(dst) writes the contiguous result: into out itself when it is contiguous and shares no memory
// with self, else into a new tensor then copied into out (out= may be strided, or a view of the input).
template <class F>
void write_contiguous(const Tensor& out, const Tensor& self, F&& fill) {
  if (out.is_contiguous() && out.impl()->storage() != self.impl()->storage()) {
    fill(out);
    return;
  }
  const Tensor tmp = op::empty(out.sizes(), out.dtype(), out.device());
  fill(tmp);
  Tensor dst = out;
  op::copy_(dst, tmp);
}

// An out kernel's result computed by other ops: copied into out.
inline void copy_out(const Tensor& out, const Tensor& result) {
  Tensor dst = out;
  op::copy_(dst, result);
}

}  // namespace flambeau::cpu
