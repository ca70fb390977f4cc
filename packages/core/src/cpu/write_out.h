#pragma once
// How a CPU out kernel whose loops write a contiguous result fills the output the meta step chose
// (Note [Structured kernels]): reductions, scans, softmax, the GEMMs and convolutions.
#include <initializer_list>
#include <utility>

#include "flambeau/ops.h"

namespace flambeau::cpu {

// fill(dst) writes the contiguous result: into out itself when it is contiguous and shares no memory
// with the inputs, else into a new tensor then copied into out (out= may be strided, or a view of an
// input). An input may be null (an absent optional argument).
template <class F>
void write_contiguous(const Tensor& out, std::initializer_list<const Tensor*> inputs, F&& fill) {
  bool direct = out.is_contiguous();
  for (const Tensor* t : inputs) direct = direct && (!t || out.impl()->storage() != t->impl()->storage());
  if (direct) {
    fill(out);
    return;
  }
  const Tensor tmp = op::empty(out.sizes(), out.dtype(), out.device());
  fill(tmp);
  Tensor dst = out;
  op::copy_(dst, tmp);
}

template <class F>
void write_contiguous(const Tensor& out, const Tensor& self, F&& fill) {
  write_contiguous(out, {&self}, std::forward<F>(fill));
}

// An out kernel's result computed by other ops: copied into out.
inline void copy_out(const Tensor& out, const Tensor& result) {
  Tensor dst = out;
  op::copy_(dst, result);
}

}  // namespace flambeau::cpu
