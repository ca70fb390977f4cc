#pragma once
// Out kernels for structured ops whose CUDA kernel is still functional (Note [Structured kernels]).
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"

namespace flambeau::cuda {

/// out= (and the in-place form) run the functional kernel Fn and copy its result into out.
template <auto Fn>
struct OutViaCopy;
template <class... A, Tensor (*Fn)(A...)>
struct OutViaCopy<Fn> {
  static void run(const Tensor& out, A... args) {
    Tensor dst = out;
    op::copy_(dst, Fn(args...));
  }
};

/// Registers Fn's out kernel, then Fn itself: registered after the out kernel, the functional
/// kernel stays what the functional form calls (instead of the structured adapter).
template <auto Fn, class OpT>
void register_out_via_copy(OpT& op_object) {
  op_object.register_out_kernel(DispatchKey::CUDA, OutViaCopy<Fn>::run);
  op_object.register_kernel(DispatchKey::CUDA, Fn);
}

}  // namespace flambeau::cuda
