#pragma once
// How a CPU out kernel whose loops write contiguous results fills the outputs the meta step chose
// (Note [Structured kernels]): reductions, scans, softmax, the GEMMs and convolutions, pooling, the
// norms, the losses, the indexing ops (one output: write_contiguous; several: write_contiguous_outs).
#include <array>
#include <cstddef>
#include <initializer_list>
#include <utility>

#include "flambeau/ops.h"

namespace flambeau::cpu {

// True when out shares its storage with one of the inputs (a range of `const Tensor*`; a null pointer
// or an undefined tensor is an absent optional argument).
template <class Range>
bool shares_storage(const Tensor& out, const Range& inputs) {
  for (const Tensor* t : inputs)
    if (t && t->defined() && out.impl()->storage() == t->impl()->storage()) return true;
  return false;
}

// fill(dst) writes the contiguous result: into out itself when it is contiguous and shares no memory
// with the inputs, else into a new tensor then copied into out (out= may be strided, or a view of an
// input the loops would overwrite while reading it).
template <class Range, class F>
void write_contiguous(const Tensor& out, const Range& inputs, F&& fill) {
  if (out.is_contiguous() && !shares_storage(out, inputs)) {
    fill(out);
    return;
  }
  const Tensor tmp = op::empty(out.sizes(), out.dtype(), out.device());
  fill(tmp);
  Tensor dst = out;
  op::copy_(dst, tmp);
}

template <class F>
void write_contiguous(const Tensor& out, std::initializer_list<const Tensor*> inputs, F&& fill) {
  write_contiguous<std::initializer_list<const Tensor*>>(out, inputs, std::forward<F>(fill));
}

template <class F>
void write_contiguous(const Tensor& out, const Tensor& self, F&& fill) {
  write_contiguous(out, {&self}, std::forward<F>(fill));
}

// The several-output form (values and indices; a norm's output and statistics): fill(dst) gets one
// contiguous destination per output, each output itself when it is contiguous and shares memory with
// no input and no other output, else a new tensor copied into the output afterwards (out= may also
// give one tensor twice). An undefined output (a result the op's rules leave out) stays undefined.
template <size_t N, class F>
void write_contiguous_outs(const std::array<Tensor, N>& outs, std::initializer_list<const Tensor*> inputs,
                           F&& fill) {
  std::array<Tensor, N> dst;
  for (size_t i = 0; i < N; ++i) {
    const Tensor& o = outs[i];
    if (!o.defined()) continue;
    bool direct = o.is_contiguous() && !shares_storage(o, inputs);
    for (size_t j = 0; j < N; ++j)
      direct = direct && (j == i || !outs[j].defined() || outs[j].impl()->storage() != o.impl()->storage());
    dst[i] = direct ? o : op::empty(o.sizes(), o.dtype(), o.device());
  }
  fill(dst);
  for (size_t i = 0; i < N; ++i) {
    if (!outs[i].defined() || dst[i].impl() == outs[i].impl()) continue;
    Tensor o = outs[i];
    op::copy_(o, dst[i]);
  }
}

template <size_t N, class F>
void write_contiguous_outs(const std::array<Tensor, N>& outs, const Tensor& self, F&& fill) {
  write_contiguous_outs<N>(outs, {&self}, std::forward<F>(fill));
}

// An out kernel's result computed by other ops: copied into out.
inline void copy_out(const Tensor& out, const Tensor& result) {
  Tensor dst = out;
  op::copy_(dst, result);
}

}  // namespace flambeau::cpu
