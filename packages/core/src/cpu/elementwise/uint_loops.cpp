// uint16/uint32/uint64 loops of the integer elementwise ops (wrapping
// arithmetic, as the other unsigned dtype uint8), handed to the kernels through
// pick_loop (elementwise.h). Kept apart from IntLoops (bool .. int64) so the
// loop tables other kernel files pass stay as they are.
#include "elementwise.h"

namespace flambeau::cpu {
namespace {

template <class T>
void identity_loop(char** d, const int64_t* s, int64_t n, double) {
  base::unary_loop<T, T>(d, s, n, [](T a) { return a; });
}

template <class T>
Loop1D loop_for(VecOp op) {
  switch (op) {
    case kVecAdd:
      return &base::add_loop<T>;
    case kVecSub:
      return &base::sub_loop<T>;
    case kVecMul:
      return &base::mul_loop<T>;
    case kVecMaximum:
      return &base::maximum_loop<T>;
    case kVecMinimum:
      return &base::minimum_loop<T>;
    case kVecAbs:  // |x| and relu(x) of an unsigned x are x
    case kVecRelu:
    case kVec_floor:
    case kVec_ceil:
    case kVec_trunc:
    case kVec_round:
      return &identity_loop<T>;
    default:
      return nullptr;
  }
}

}  // namespace

Loop1D uint_loop(ScalarType t, VecOp op) {
  switch (t) {
    case ScalarType::UInt16:
      return loop_for<uint16_t>(op);
    case ScalarType::UInt32:
      return loop_for<uint32_t>(op);
    case ScalarType::UInt64:
      return loop_for<uint64_t>(op);
    default:
      return nullptr;
  }
}

}  // namespace flambeau::cpu
