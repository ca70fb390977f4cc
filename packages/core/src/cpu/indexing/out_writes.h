#pragma once
// How the CPU out kernels of the indexing ops that replace some elements of self (scatter, scatter_add,
// scatter_reduce, index_add, index_copy, index_fill: out starts as a copy of self) fill the output the
// meta step chose (Note [Structured kernels]); those writing a fresh result (cat, gather, index,
// index_select, embedding and its backward) use write_contiguous (cpu/write_out.h).
#include <algorithm>
#include <initializer_list>

#include "cpu/write_out.h"
#include "flambeau/ops.h"

namespace flambeau::cpu {

/// The one place where out becomes a copy of self before fill(dst) writes the replaced elements into
/// the contiguous dst. out may be self itself (the in-place forms: nothing to copy); the loops run on
/// a new copy of self, then copied into out, when out is not contiguous, shares memory with self
/// without being it, or shares memory with the other inputs (the index, src: read while out is written).
template <class F>
void write_over_self(const Tensor& out, const Tensor& self, std::initializer_list<const Tensor*> others,
                     F&& fill) {
  const bool is_self =
      out.impl() == self.impl() ||
      (out.impl()->storage() == self.impl()->storage() && out.data_ptr() == self.data_ptr() &&
       std::ranges::equal(out.sizes(), self.sizes()) && std::ranges::equal(out.strides(), self.strides()));
  if (out.is_contiguous() && !shares_storage(out, others) &&
      (is_self || out.impl()->storage() != self.impl()->storage())) {
    if (!is_self) {
      Tensor dst = out;
      op::copy_(dst, self);
    }
    fill(out);
    return;
  }
  const Tensor tmp = op::clone(self, MemoryFormat::Contiguous);
  fill(tmp);
  Tensor dst = out;
  op::copy_(dst, tmp);
}

}  // namespace flambeau::cpu
