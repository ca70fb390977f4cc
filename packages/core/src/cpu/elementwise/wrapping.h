#pragma once
// Note [Integer wrap-around]
// Integer arithmetic wraps modulo 2^bits, as in PyTorch and NumPy: int64 max + 1
// is int64 min. In C++ a signed overflow is undefined behaviour (UBSan stops on
// it; the optimizer may assume it never happens), so the integer kernels
// compute in an unsigned type and convert back (modular since C++20). The
// unsigned type is at least `unsigned int`: uint16 * uint16 would otherwise be
// promoted to (signed) int and overflow there. Other types (floats, Half,
// complex) use their own operators.
#include <cstdint>
#include <type_traits>

namespace flambeau {

template <class T>
inline constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// The unsigned type T's wrapping arithmetic runs in.
template <class T>
using WrapUnsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                        std::make_unsigned_t<std::conditional_t<kWraps<T>, T, int>>>;

// Same-type integer operands wrap; anything else is the plain operator (and its type).
#define FB_WRAPPING_BINARY(name, op)                                                 \
  template <class A, class B>                                                        \
  constexpr auto name(A a, B b) {                                                    \
    if constexpr (kWraps<A> && std::is_same_v<A, B>) {                               \
      using U = WrapUnsigned<A>;                                                     \
      return static_cast<A>(static_cast<U>(static_cast<U>(a) op static_cast<U>(b))); \
    } else {                                                                         \
      return a op b;                                                                 \
    }                                                                                \
  }
FB_WRAPPING_BINARY(wrapping_add, +)
FB_WRAPPING_BINARY(wrapping_sub, -)
FB_WRAPPING_BINARY(wrapping_mul, *)
#undef FB_WRAPPING_BINARY

template <class T>
constexpr auto wrapping_neg(T a) {
  if constexpr (kWraps<T>) {
    using U = WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(U{0} - static_cast<U>(a)));
  } else {
    return -a;
  }
}

}  // namespace flambeau
