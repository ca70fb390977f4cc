#pragma once
// Note [Meta device]
// PyTorch's meta device: a tensor on `meta` has sizes, strides and a dtype but
// no memory (its storage knows its byte size, so views are bounds-checked as
// usual, and its data pointer is null). An op on meta tensors runs only its
// meta step, the Meta kernel that codegen/gen_core.py writes from the op's
// `shape:` and `dtype:` rules in ops.yaml (src/meta_generated.cpp), so shape
// and dtype inference costs no memory and no arithmetic: a model's output
// shapes, a compiler's plan, an extension's checks. An op without rules raises
// NotImplementedError naming the op and "meta". Views (the Generic kernels)
// and composites work unchanged, since they only compose other ops. The
// factories (empty, fill_, the random fills) and copy_/clone/cast have
// hand-written meta kernels (src/meta/meta_device.cpp): copying *into* a meta
// tensor checks the shapes and copies nothing, copying *out of* one raises
// NotImplementedError ("Cannot copy out of meta tensor; no data!", PyTorch's
// words), which is also what item()/tolist()/numpy() of a meta tensor hit.
//
// Note [Meta step]
// One op's rules, written once in the table (docs/design/ops.md, "Shape and
// dtype rules"):
//   dtype: promote | float | same | bool | accumulate | <dtype name> | arg:<name>
//   shape: broadcast | same | reduce | reduce_dim | scalar | mm | bmm | size:<name>
//   checks: [name(arg, ...), ...]: calls of the meta::check_<name> below
// generate two functions per op: the *check step* (the checks and the dtype
// rule), which the dispatcher calls on every device path before the device
// kernel (Op::set_meta_check), so a backend's kernel may assume its arguments
// passed them and does not repeat them; and the *Meta kernel* (the shape rule,
// then storage-less outputs of the computed shapes and dtypes). The functions
// below are the vocabulary those generated functions call; a backend or an
// extension calls the same ones instead of re-deriving a rule.
#include <initializer_list>
#include <optional>
#include <span>

#include "flambeau/macros.h"
#include "flambeau/scalar.h"
#include "flambeau/tensor.h"

namespace flambeau::meta {

using Tensors = std::initializer_list<const Tensor*>;

// ---- outputs ----
/// A contiguous meta tensor (no memory); the shape is checked as op::empty's.
FB_API Tensor empty(IntArrayRef sizes, ScalarType dtype, const char* op = "empty");

// ---- dtype rules ----
/// `promote`: PyTorch's result_type over the tensor arguments (Note [Wrapped numbers]).
FB_API ScalarType promote(Tensors ts);
/// `float`: promote, then integer and bool results become the default float dtype.
FB_API ScalarType float_valued(Tensors ts);
/// `accumulate`: `dtype` if given, else integer and bool inputs sum in int64, others keep theirs.
FB_API ScalarType accumulate(const Tensor& self, std::optional<ScalarType> dtype);

// ---- shape rules ----
/// `broadcast`: the NumPy broadcast shape; ValueError "[op] shapes (2,) and (3,) cannot be broadcast".
FB_API Shape broadcast(const char* op, Tensors ts);
/// `reduce`: a reduction over `dims` (all if none or empty), kept as size 1 with keepdim.
FB_API Shape reduce(const char* op, const Tensor& self, OptionalIntArrayRef dims, bool keepdim);
/// `reduce_dim`: a reduction over one (optional: all) dim; 0-d tensors accept dim 0 and -1.
FB_API Shape reduce_dim(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim);
/// `mm`: (n, k) @ (k, m) -> (n, m), after check_matmul.
FB_API Shape mm(const char* op, const Tensor& a, const Tensor& b);
/// `bmm`: (b, n, k) @ (b, k, m) -> (b, n, m), after check_matmul.
FB_API Shape bmm(const char* op, const Tensor& a, const Tensor& b);

// ---- checks (the `checks:` vocabulary of the table) ----
/// Every tensor on one device; a 0-dim cpu tensor (a wrapped number) goes with any device.
FB_API void check_same_device(const char* op, Tensors ts);
/// PyTorch's alpha rules for the promoted dtype of `ts`: bool alpha only for bool results, no float
/// alpha for integer results, the value fits the dtype.
FB_API void check_alpha_value(const char* op, Tensors ts, const Scalar& alpha);
/// check_alpha_value, except for the default alpha (1), which always fits: it returns inline, without
/// promoting (add is the hottest op).
inline void check_alpha(const char* op, Tensors ts, const Scalar& alpha) {
  if (alpha.kind() == Scalar::Kind::Int && alpha.to_int() == 1) [[likely]]
    return;
  check_alpha_value(op, ts, alpha);
}
/// lt/le/gt/ge: TypeError when a and b promote to a complex dtype, which has no order.
FB_API void check_ordered(const char* op, const Tensor& a, const Tensor& b);
/// TypeError unless `t` has dtype bool (where's condition).
FB_API void check_bool(const char* op, const Tensor& t, const char* what);
/// TypeError unless `t` is a real floating tensor (the activations): "[gelu] input must be a float16,
/// bfloat16, float32 or float64 tensor, got dtype int64".
FB_API void check_floating(const char* op, const Tensor& t, const char* what);
/// TypeError for a complex dtype (sign: use sgn).
FB_API void check_real(const char* op, ScalarType t, const char* hint);
/// mm/bmm/linear operands: `want_dim`-D, one dtype, one device, matching inner (and batch) sizes.
FB_API void check_matmul(const char* op, const Tensor& a, const Tensor& b, int64_t want_dim);
/// IndexError unless `dim` is a dim of self (wrap_dim's message).
FB_API void check_dim(const char* op, const Tensor& self, int64_t dim);
/// A reduction with no identity (max, argmin, max.dim): along `dim`, that dim must not be empty
/// (IndexError "cannot reduce over dim 1 of size 0"); over everything (no dim), self must not be empty
/// (RuntimeError "[max] max() of an empty tensor (shape (0,)) is undefined" + `hint`).
FB_API void check_reducible(const char* op, const Tensor& self, std::optional<int64_t> dim, const char* hint);
/// amax/amin: valid, distinct `dims` (all if empty), none of them empty.
FB_API void check_reducible_dims(const char* op, const Tensor& self, IntArrayRef dims);
/// An in-place op: the result dtype must cast to self's (TypeError: "result type X can't be cast to
/// the desired output type Y").
FB_API void check_inplace_dtype(const char* op, const Tensor& self, ScalarType result);
/// An in-place op: the inputs must broadcast to self's shape (ValueError naming both shapes).
FB_API void check_broadcasts_to(const char* op, Tensors inputs, const Tensor& self);

}  // namespace flambeau::meta
