#pragma once
// How a CPU out kernel of a structured op with several results (values and indices: max.dim, min.dim,
// mode, sort, topk) fills the outputs the meta step chose (Note [Structured kernels]); write_out.h is
// the one-output form.
#include <array>
#include <cstddef>
#include <initializer_list>
#include <utility>

#include "flambeau/ops.h"

namespace flambeau::cpu {

// fill(dst) writes contiguous results into dst, one tensor per output with its shape and dtype: each
// output itself when it is contiguous and shares memory with no input and no other output, else a new
// tensor copied into the output afterwards (out= may be strided, a view of an input, or one tensor given
// twice). An undefined output (a result the op's rules leave out) stays undefined in dst; an input may
// be null or undefined (an absent optional argument).
template <size_t N, class F>
void write_contiguous_outs(const std::array<Tensor, N>& outs, std::initializer_list<const Tensor*> inputs,
                           F&& fill) {
  std::array<Tensor, N> dst;
  for (size_t i = 0; i < N; ++i) {
    const Tensor& o = outs[i];
    if (!o.defined()) continue;
    bool direct = o.is_contiguous();
    for (const Tensor* t : inputs)
      direct = direct && (!t || !t->defined() || t->impl()->storage() != o.impl()->storage());
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

}  // namespace flambeau::cpu
