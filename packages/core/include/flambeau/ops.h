#pragma once
// Every op of core, declared once. Each `op::name` is dispatched (Note
// [Dispatch]); its CPU kernel lives in src/cpu/<family>.cpp and its derivative
// is one entry in flambeau-autograd's formula table. The inline functions
// after the op objects are composites built from ops: they need no kernel and
// no derivative of their own.
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
#include "flambeau/scalar.h"
#include "flambeau/tensor.h"

namespace flambeau {

class Generator;

namespace op {
// ---- factories and filling (src/cpu/factories.cpp) ----
FB_API extern Op<Tensor(IntArrayRef sizes, ScalarType dtype, Device device)> empty;
FB_API extern Op<Tensor&(Tensor& self, const Scalar& value)> fill_;
FB_API extern Op<Tensor(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                        Device device)>
    arange;
/// Uniform on [low, high) from `gen` (nullptr: the default generator).
FB_API extern Op<Tensor&(Tensor& self, double low, double high, Generator* gen)> uniform_;
FB_API extern Op<Tensor&(Tensor& self, double mean, double std, Generator* gen)> normal_;

// ---- views (src/cpu/views.cpp): no copy, share storage ----
FB_API extern Op<Tensor(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset)>
    as_strided;
/// One size may be -1. ValueError if the strides make a view impossible.
FB_API extern Op<Tensor(const Tensor& self, IntArrayRef sizes)> view;
FB_API extern Op<Tensor(const Tensor& self, IntArrayRef dims)> permute;
FB_API extern Op<Tensor(const Tensor& self, int64_t dim0, int64_t dim1)> transpose;
FB_API extern Op<Tensor(const Tensor& self, int64_t dim)> unsqueeze;
/// Removes size-1 dims: the given ones, or all if `dims` is empty.
FB_API extern Op<Tensor(const Tensor& self, IntArrayRef dims)> squeeze;
/// -1 keeps a size; new leading dims may be added.
FB_API extern Op<Tensor(const Tensor& self, IntArrayRef sizes)> expand;
/// Python slice semantics along `dim` (step > 0; start/end clamped).
FB_API extern Op<Tensor(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                        std::optional<int64_t> end, int64_t step)>
    slice;
FB_API extern Op<Tensor(const Tensor& self, int64_t dim, int64_t index)> select;

// ---- copies and casts (src/cpu/copy.cpp) ----
/// Copies src into self (broadcasting src, casting dtype). Bumps self's version.
FB_API extern Op<Tensor&(Tensor& self, const Tensor& src)> copy_;
/// A new contiguous tensor with the same values (any input strides).
FB_API extern Op<Tensor(const Tensor& self)> clone;
/// A new tensor of another dtype (use `to_dtype`, which returns self when equal).
FB_API extern Op<Tensor(const Tensor& self, ScalarType dtype)> cast;

// ---- elementwise (src/cpu/binary.cpp, unary.cpp, compare.cpp) ----
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b, const Scalar& alpha)> add;  // a + alpha*b
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b, const Scalar& alpha)> sub;  // a - alpha*b
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> mul;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> div;  // true division
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> pow;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> maximum;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> minimum;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> eq;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> ne;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> lt;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> le;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> gt;
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> ge;
FB_API extern Op<Tensor(const Tensor& cond, const Tensor& a, const Tensor& b)> where;
FB_API extern Op<Tensor(const Tensor& self)> neg;
FB_API extern Op<Tensor(const Tensor& self)> exp;
FB_API extern Op<Tensor(const Tensor& self)> log;
FB_API extern Op<Tensor(const Tensor& self)> tanh;
FB_API extern Op<Tensor(const Tensor& self)> sigmoid;
FB_API extern Op<Tensor(const Tensor& self)> relu;
FB_API extern Op<Tensor(const Tensor& self)> sqrt;
FB_API extern Op<Tensor(const Tensor& self)> abs;
// In-place: self op= other. Bump self's version; return self.
FB_API extern Op<Tensor&(Tensor& self, const Tensor& other, const Scalar& alpha)> add_;
FB_API extern Op<Tensor&(Tensor& self, const Tensor& other, const Scalar& alpha)> sub_;
FB_API extern Op<Tensor&(Tensor& self, const Tensor& other)> mul_;
FB_API extern Op<Tensor&(Tensor& self, const Tensor& other)> div_;

// ---- reductions (src/cpu/reduce.cpp) ----
/// Sum over `dims` (all dims if empty). bool/int inputs sum in int64 unless `dtype`.
FB_API extern Op<Tensor(const Tensor& self, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype)>
    sum;
/// Maximum of all elements (0-dim). RuntimeError on an empty tensor.
FB_API extern Op<Tensor(const Tensor& self)> max;
/// (values, int64 indices) along dim; the first index on ties.
FB_API extern Op<std::tuple<Tensor, Tensor>(const Tensor& self, int64_t dim, bool keepdim)> max_dim;
/// Index of the maximum: over the flattened tensor if dim is empty.
FB_API extern Op<Tensor(const Tensor& self, std::optional<int64_t> dim, bool keepdim)> argmax;

// ---- linear algebra (src/cpu/linalg.cpp, OpenBLAS) ----
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> mm;   // (n,k) @ (k,m)
FB_API extern Op<Tensor(const Tensor& a, const Tensor& b)> bmm;  // (B,n,k) @ (B,k,m)

// ---- nn primitives (src/cpu/softmax.cpp, indexing.cpp) ----
FB_API extern Op<Tensor(const Tensor& self, int64_t dim)> log_softmax;
FB_API extern Op<Tensor(const TensorList& tensors, int64_t dim)> cat;
FB_API extern Op<Tensor(const Tensor& self, int64_t dim, const Tensor& index)> gather;
/// Out-of-place: a copy of self with src added at index along dim.
FB_API extern Op<Tensor(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src)> scatter_add;
}  // namespace op

// ---- public functions: ops with default arguments, and composites ----
// (implemented in src/composite.cpp unless inline)

FB_API Tensor empty(IntArrayRef sizes, ScalarType dtype = kDefaultFloat, Device device = {});
FB_API Tensor zeros(IntArrayRef sizes, ScalarType dtype = kDefaultFloat, Device device = {});
FB_API Tensor ones(IntArrayRef sizes, ScalarType dtype = kDefaultFloat, Device device = {});
FB_API Tensor full(IntArrayRef sizes, const Scalar& value, ScalarType dtype, Device device = {});
FB_API Tensor empty_like(const Tensor& t);
FB_API Tensor zeros_like(const Tensor& t);
FB_API Tensor ones_like(const Tensor& t);
/// A 0-dim tensor holding `value`; wrapped=true marks a Python number (Note [Wrapped numbers]).
FB_API Tensor scalar_tensor(const Scalar& value, ScalarType dtype, bool wrapped = false);
FB_API Tensor scalar_to_tensor(const Scalar& value, bool wrapped = true);  // dtype from the scalar

inline Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return op::add(a, b, alpha); }
inline Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return op::sub(a, b, alpha); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return op::mul(a, b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return op::div(a, b); }
inline Tensor neg(const Tensor& a) { return op::neg(a); }

/// view when the strides allow it, else a contiguous copy viewed.
FB_API Tensor reshape(const Tensor& self, IntArrayRef sizes);
FB_API Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
FB_API Tensor contiguous(const Tensor& self);
FB_API Tensor to_dtype(const Tensor& self, ScalarType dtype);
FB_API Tensor expand_as(const Tensor& self, const Tensor& other);
/// Sums broadcast dims away so the result has `shape` (used by backward formulas).
FB_API Tensor sum_to(const Tensor& self, IntArrayRef shape);
FB_API Tensor mean(const Tensor& self, IntArrayRef dims = {}, bool keepdim = false);
/// NumPy matmul: 1-D, 2-D and broadcast batched.
FB_API Tensor matmul(const Tensor& a, const Tensor& b);
FB_API Tensor stack(const TensorList& tensors, int64_t dim = 0);
FB_API Tensor softmax(const Tensor& self, int64_t dim);
FB_API Tensor& zero_(Tensor& self);

/// The shape two broadcast shapes make; ValueError naming `op` otherwise.
FB_API Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

}  // namespace flambeau
