#pragma once
// Shared by the elementwise kernel files (binary.cpp, unary.cpp): choosing a
// 1-D loop for a compute dtype. float32/float64 loops come from the
// run-time-selected vector table (Note [CPU capabilities]); bool and integer
// loops are the baseline instantiations passed in `ints` (IntLoops).
#include <algorithm>
#include <type_traits>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "loops.h"
#include "tensor_iterator.h"
#include "vec_table.h"

namespace flambeau::cpu {

/// Loops for the integer dtypes and bool: bool, uint8, int8, int16, int32, int64, then uint16,
/// uint32, uint64 (nullptr: the op does not support that dtype). This is the one list of the
/// integer family the elementwise kernels instantiate: a loop written for it covers every
/// integer dtype (unsigned ones wrap as uint8 does, Note [Integer wrap-around]).
struct IntLoops {
  Loop1D by_type[9];
};
#define FB_INT_LOOPS_FROM(first, fn)                                                             \
  ::flambeau::cpu::IntLoops {                                                                    \
    {                                                                                            \
      first, &fn<uint8_t>, &fn<int8_t>, &fn<int16_t>, &fn<int32_t>, &fn<int64_t>, &fn<uint16_t>, \
          &fn<uint32_t>, &fn<uint64_t>                                                           \
    }                                                                                            \
  }
#define FB_INT_LOOPS(fn) FB_INT_LOOPS_FROM(&fn<bool>, fn)
#define FB_INT_LOOPS_NO_BOOL(fn) FB_INT_LOOPS_FROM(nullptr, fn)
inline constexpr IntLoops kNoIntLoops{};

/// The loop of `ints` for dtype t, or nullptr (t is not bool or an integer, or the op lacks it).
inline Loop1D int_loop(const IntLoops& ints, ScalarType t) {
  const int i = static_cast<int>(t);
  if (i <= static_cast<int>(ScalarType::Int64)) return ints.by_type[i];  // bool .. int64
  if (t == ScalarType::UInt16 || t == ScalarType::UInt32 || t == ScalarType::UInt64)
    return ints.by_type[6 + i - static_cast<int>(ScalarType::UInt16)];
  return nullptr;
}

[[noreturn]] inline void unsupported_dtype(const char* op, ScalarType t) {
  if (t == ScalarType::Bool) throw TypeError(detail::cat_str("[", op, "] is not supported for bool tensors"));
  if (is_complex(t) || t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::UInt16 ||
      t == ScalarType::UInt32 || t == ScalarType::UInt64)
    throw TypeError(detail::cat_str("[", op, "] is not supported for dtype ", dtype_name(t)));
  throw TypeError(detail::cat_str("[", op, "] dtype ", dtype_name(t), " is not supported yet"));
}

/// The float16/bfloat16 loop of a vector-table op (half_loops.cpp): blocks
/// converted to float32, computed by the float32 loop, converted back.
Loop1D half_loop(ScalarType t, VecOp op);
/// The float16/bfloat16 loop of mul or div by a float32 number: out = a op float(param) over a unary
/// iterator, each element rounded once (Note [16-bit op and a number] in binary.cpp); else nullptr.
Loop1D half_scalar_loop(ScalarType t, VecOp op);
/// The complex64/complex128 loop of an op (complex_loops.cpp), or nullptr.
Loop1D complex_loop(ScalarType t, VecOp op);
/// Writes |z| of a complex tensor into out, of the matching real dtype (complex_loops.cpp).
void complex_abs_into(const Tensor& out, const Tensor& a);
/// Note [Structured kernels]: out = a, for an op that is the identity on some dtypes (nan_to_num of
/// integers, conj_physical of reals): nothing to do in place (out is a), else a copy.
inline void identity_into(const Tensor& out, const Tensor& a) {
  if (out.impl() == a.impl()) return;
  Tensor dst = out;
  op::copy_(dst, a);
}

inline Loop1D pick_loop(const char* op, ScalarType t, VecOp vop, const IntLoops& ints) {
  Loop1D f = nullptr;
  switch (t) {
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      f = half_loop(t, vop);
      break;
    case ScalarType::ComplexFloat:
    case ScalarType::ComplexDouble:
      f = complex_loop(t, vop);
      break;
    case ScalarType::Float32:
      f = vec_table().f32[vop];
      break;
    case ScalarType::Float64:
      f = vec_table().f64[vop];
      break;
    default:
      f = int_loop(ints, t);
      break;
  }
  if (!f) unsupported_dtype(op, t);
  return f;
}

/// The dtype classes of binary_typed, as sets of type_dispatch.h: kInts is the whole integer
/// family (uint8 .. int64 and uint16, uint32, uint64).
inline constexpr unsigned kFloats = kDtFloats, kInts = kDtInts | kDtUInts, kBool = kDtBool;

/// Runs f(x, y) over a binary iterator into out (Note [Structured kernels]), computing in dtype t,
/// for the dtype classes in Allow (else a TypeError naming the op and the dtypes). out has dtype t,
/// or bool when BoolResult (logical ops): a template parameter, so each op instantiates one loop
/// per dtype.
template <unsigned Allow, bool BoolResult = false, class F>
void binary_typed_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, ScalarType t, F f) {
  if (!(Allow & dtype_set_of(t)))
    throw TypeError(detail::cat_str("[", op, "] is not supported for dtype ", dtype_name(t), " (inputs ",
                                    dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")"));
  TensorIterator it = TensorIterator::into(op, out, a, b, t);
  visit_dtypes<Allow>(t, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<BoolResult, bool, T>;
    it.for_each(
        [&](char** d, const int64_t* s, int64_t n) {
          base::binary_loop<R, T>(d, s, n, [&](T x, T y) { return static_cast<R>(f(x, y)); });
        },
        kGrainSize);
  });
}

/// Grain of the float16/bfloat16 loops (half_loops.cpp): each element is converted to float32
/// and back around the float32 loop, several times the work per byte of a float32 add, so a
/// second thread pays off well below kMemoryBoundGrain (half moves bytes at >= 0.9x
/// the float32 rate). parallel_for's dynamic chunks (Note [Dynamic chunks]) keep a late worker
/// off the critical path.
inline constexpr int64_t kHalfLoopGrain = 4 * kGrainSize;

/// grain: Note [Elementwise grain]; float16/bfloat16 outputs use at most kHalfLoopGrain.
inline void run_loop(const TensorIterator& it, Loop1D loop, double param, int64_t grain = kMemoryBoundGrain) {
  const ScalarType t = it.dtype(0);
  if (t == ScalarType::Float16 || t == ScalarType::BFloat16) grain = std::min(grain, kHalfLoopGrain);
  it.for_each([loop, param](char** d, const int64_t* s, int64_t n) { loop(d, s, n, param); }, grain);
}

}  // namespace flambeau::cpu
