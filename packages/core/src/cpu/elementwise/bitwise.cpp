// CPU out kernels (Note [Structured kernels]): logical_and/or/xor/not (bool results, any dtype) and the
// bitwise ops and shifts (bool and integer dtypes, uint16/uint32/uint64 included; TypeError for floats).
#include <type_traits>
#include <utility>

#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
using namespace cpu;

constexpr unsigned kIntegers = kInts | kBool;

// A complex value is true where its real or imaginary part is nonzero (as PyTorch).
bool any_complex(const Tensor& a, const Tensor& b) { return is_complex(a.dtype()) || is_complex(b.dtype()); }
Tensor truth(const Tensor& a) {
  if (!is_complex(a.dtype())) return a;
  const int64_t last[1] = {-1};
  return op::any(op::view_as_real(op::contiguous(a, MemoryFormat::Contiguous)), IntArrayRef(last, 1), false);
}

// Whether a value is true depends on its bits only, so the logical ops read an integer of each width as
// the unsigned type of that width (int16 and uint16 share one loop); floats keep their type (-0.0 is false).
template <class F>
void visit_truth(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Bool:
      return f(type_tag<bool>{});
    case ScalarType::UInt8:
    case ScalarType::Int8:
      return f(type_tag<uint8_t>{});
    case ScalarType::Int16:
    case ScalarType::UInt16:
      return f(type_tag<uint16_t>{});
    case ScalarType::Int32:
    case ScalarType::UInt32:
      return f(type_tag<uint32_t>{});
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return f(type_tag<uint64_t>{});
    default:
      return visit_dtypes<kDtFloats | kDtHalf>(t, op, std::forward<F>(f));
  }
}

// Note [Structured kernels]: out is bool (the `bool` rule); the inputs are read in their promoted dtype.
template <class F>
void logical_binary(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  const ScalarType t = result_type(a, b);
  TensorIterator it = TensorIterator::into(op, out, a, b, t);
  visit_truth(t, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each([&](char** d, const int64_t* s,
                    int64_t n) { base::binary_loop<bool, T>(d, s, n, [&](T x, T y) { return f(bool(x), bool(y)); }); },
                kGrainSize);
  });
}

// A complex input is read through its truth (a bool tensor), then the same kernel runs.
void logical_and_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (any_complex(a, b)) return logical_and_out_cpu(out, truth(a), truth(b));
  logical_binary("logical_and", out, a, b, [](bool x, bool y) { return x && y; });
}
void logical_or_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (any_complex(a, b)) return logical_or_out_cpu(out, truth(a), truth(b));
  logical_binary("logical_or", out, a, b, [](bool x, bool y) { return x || y; });
}
void logical_xor_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (any_complex(a, b)) return logical_xor_out_cpu(out, truth(a), truth(b));
  logical_binary("logical_xor", out, a, b, [](bool x, bool y) { return x != y; });
}

void logical_not_out_cpu(const Tensor& out, const Tensor& a) {
  if (is_complex(a.dtype())) return logical_not_out_cpu(out, truth(a));
  TensorIterator it = TensorIterator::into("logical_not", out, a, a.dtype());
  visit_truth(a.dtype(), "logical_not", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each([](char** d, const int64_t* s,
                   int64_t n) { base::unary_loop<bool, T>(d, s, n, [](T x) { return !x; }); },
                kMemoryBoundGrain);
  });
}

// Note [Structured kernels]: out has the promoted dtype (or self's, in place), which the loops compute in.
void bitwise_and_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_typed_into<kIntegers>("bitwise_and", out, a, b, out.dtype(), [](auto x, auto y) { return x & y; });
}
void bitwise_or_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_typed_into<kIntegers>("bitwise_or", out, a, b, out.dtype(), [](auto x, auto y) { return x | y; });
}
void bitwise_xor_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_typed_into<kIntegers>("bitwise_xor", out, a, b, out.dtype(), [](auto x, auto y) { return x ^ y; });
}

void bitwise_not_out_cpu(const Tensor& out, const Tensor& a) {
  TensorIterator it = TensorIterator::into("bitwise_not", out, a, a.dtype());
  visit_dtypes<kIntegers>(a.dtype(), "bitwise_not", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      it.for_each([](char** d, const int64_t* s,
                     int64_t n) { base::unary_loop<T, T>(d, s, n, [](T x) { return !x; }); },
                  kMemoryBoundGrain);
    } else {
      it.for_each([](char** d, const int64_t* s,
                     int64_t n) { base::unary_loop<T, T>(d, s, n, [](T x) { return static_cast<T>(~x); }); },
                  kMemoryBoundGrain);
    }
  });
}

// Shifts as PyTorch: a shift by the bit width or more (or a negative one)
// gives 0 to the left, and the sign fill to the right; never C's undefined behaviour.
template <class T>
T left_shift(T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr U bits = sizeof(T) * 8;
  return static_cast<U>(y) >= bits ? T(0) : static_cast<T>(static_cast<U>(x) << static_cast<U>(y));
}
template <class T>
T right_shift(T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr U bits = sizeof(T) * 8;
  if (static_cast<U>(y) >= bits) {
    if constexpr (std::is_signed_v<T>) return x < 0 ? T(-1) : T(0);
    return T(0);
  }
  return static_cast<T>(x >> y);
}

void bitwise_left_shift_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_typed_into<kInts>("bitwise_left_shift", out, a, b, out.dtype(),
                           [](auto x, auto y) { return left_shift(x, y); });
}
void bitwise_right_shift_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_typed_into<kInts>("bitwise_right_shift", out, a, b, out.dtype(),
                           [](auto x, auto y) { return right_shift(x, y); });
}

FB_REGISTER_OUT_KERNEL(op::logical_and, CPU, logical_and_out_cpu);
FB_REGISTER_OUT_KERNEL(op::logical_or, CPU, logical_or_out_cpu);
FB_REGISTER_OUT_KERNEL(op::logical_xor, CPU, logical_xor_out_cpu);
FB_REGISTER_OUT_KERNEL(op::logical_not, CPU, logical_not_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bitwise_and, CPU, bitwise_and_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bitwise_or, CPU, bitwise_or_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bitwise_xor, CPU, bitwise_xor_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bitwise_not, CPU, bitwise_not_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bitwise_left_shift, CPU, bitwise_left_shift_out_cpu);
FB_REGISTER_OUT_KERNEL(op::bitwise_right_shift, CPU, bitwise_right_shift_out_cpu);

}  // namespace
}  // namespace flambeau
