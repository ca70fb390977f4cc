#pragma once
// How the CPU out kernels of the indexing ops fill the output the meta step chose (Note [Structured
// kernels]): their loops write a contiguous result, either a fresh one (cat, gather, index, index_select,
// embedding and its backward) or self with some elements replaced (scatter, scatter_add, scatter_reduce,
// index_add, index_copy, index_fill, where out starts as a copy of self).
#include <algorithm>
#include <initializer_list>
#include <utility>

#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau::cpu {

/// True when out shares its storage with one of the inputs (a null pointer is an absent input).
template <class Range>
bool shares_storage(const Tensor& out, const Range& inputs) {
  for (const Tensor* t : inputs)
    if (t && t->defined() && out.impl()->storage() == t->impl()->storage()) return true;
  return false;
}

/// fill(dst) writes the whole contiguous result: into out itself when it is contiguous and shares no
/// memory with the inputs, else into a new tensor copied into out (out= may be strided, or a view of an
/// input, which the loops would overwrite while reading it). write_contiguous decides by one input's
/// memory: the first one sharing out's, if any.
template <class Range, class F>
void write_fresh(const Tensor& out, const Range& inputs, F&& fill) {
  const Tensor* witness = nullptr;  // the first input sharing out's memory, else the first input
  for (const Tensor* t : inputs) {
    if (!t || !t->defined()) continue;
    if (!witness) witness = t;
    if (out.impl()->storage() == t->impl()->storage()) {
      witness = t;
      break;
    }
  }
  FB_INTERNAL_ASSERT(witness, "write_fresh needs an input");
  write_contiguous(out, *witness, std::forward<F>(fill));
}
template <class F>
void write_fresh(const Tensor& out, std::initializer_list<const Tensor*> inputs, F&& fill) {
  write_fresh<std::initializer_list<const Tensor*>>(out, inputs, std::forward<F>(fill));
}

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
