#pragma once
// Every op of core is declared once, in the op table (codegen/ops.yaml), from
// which the build generates flambeau/ops_generated.h: the dispatched op
// objects `op::<name>` (Note [Dispatch]) and an inline function per op with
// its defaults (`flambeau::add(a, b)`). A primitive's CPU kernel lives in
// src/cpu/<family>.cpp, a device-generic one in src/generic/, a composite in
// src/composite/; a derivative is one entry in flambeau-autograd's
// derivatives.yaml. This header adds the helpers that are not ops.
//
// Shape and dtype rules, once:
//  * elementwise binary ops broadcast (NumPy rules) and promote types
//    (promote_types, wrapped numbers are weak: Note [Wrapped numbers]);
//    comparisons return bool; div and true-valued unary ops (exp, log, tanh,
//    sigmoid, sqrt) return the default float dtype for integer/bool inputs;
//  * in-place ops keep self's shape and dtype: `other` must broadcast to self,
//    and the promoted type must be castable to self's dtype (no float -> int);
//  * reductions drop reduced dims unless keepdim; sum of bool/int gives int64;
//  * views share storage and never copy.
#include <optional>
#include <tuple>
#include <utility>

#include "flambeau/dispatch.h"
#include "flambeau/ops_generated.h"
#include "flambeau/scalar.h"
#include "flambeau/tensor.h"

namespace flambeau {

// ---- helpers built from ops (src/composite/) ----

FB_API Tensor zeros(IntArrayRef sizes, ScalarType dtype = default_float_dtype(), Device device = {});
FB_API Tensor ones(IntArrayRef sizes, ScalarType dtype = default_float_dtype(), Device device = {});
FB_API Tensor full(IntArrayRef sizes, const Scalar& value, ScalarType dtype, Device device = {});
FB_API Tensor empty_like(const Tensor& t);
FB_API Tensor zeros_like(const Tensor& t);
FB_API Tensor ones_like(const Tensor& t);
/// A 0-dim tensor holding `value`; wrapped=true marks a Python number (Note [Wrapped numbers]).
FB_API Tensor scalar_tensor(const Scalar& value, ScalarType dtype, bool wrapped = false);
FB_API Tensor scalar_to_tensor(const Scalar& value, bool wrapped = true);  // dtype from the scalar

/// self if it has `dtype` already, else a cast copy.
FB_API Tensor to_dtype(const Tensor& self, ScalarType dtype);
/// Sums broadcast dims away so the result has `shape` (used by backward formulas).
FB_API Tensor sum_to(const Tensor& self, IntArrayRef shape);
/// The shape two broadcast shapes make; ValueError naming `op` otherwise.
FB_API Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

}  // namespace flambeau
