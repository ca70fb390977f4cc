#pragma once
// Out kernels for structured ops whose CUDA kernel is still functional (Note [Structured kernels]).
#include <array>
#include <tuple>
#include <utility>

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

/// Several results (values and indices): the out kernel takes one output per result, each copied (an
/// undefined output, a result the op's rules leave out, is skipped). Functions, not lambdas over the
/// packs: nvcc's host pass rejects pack expansions inside lambdas.
inline void copy_result(Tensor& out, const Tensor& r) {
  if (out.defined()) op::copy_(out, r);
}
template <class Result, size_t... I>
void copy_results(std::array<Tensor, sizeof...(I)>& outs, const Result& r, std::index_sequence<I...>) {
  (copy_result(outs[I], std::get<I>(r)), ...);
}
template <class... R, class... A, std::tuple<R...> (*Fn)(A...)>
struct OutViaCopy<Fn> {
  static void run(const R&... outs, A... args) {
    std::array<Tensor, sizeof...(R)> dst{outs...};
    copy_results(dst, Fn(args...), std::index_sequence_for<R...>{});
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
