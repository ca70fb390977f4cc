#pragma once
// A Python-style number: bool, int64 or double. Used for op arguments such as
// `alpha` and for filling tensors; binary ops turn scalars into 0-dim
// "wrapped number" tensors (see Note [Wrapped numbers] in tensor_impl.h).
//
// Note [Scalar overflow]
// Where a Scalar becomes an element of a dtype (fill_, full, zeros/ones,
// scalar_tensor, `t[i] = v`, tensor([...]), alpha, an integer exponent), a
// value the dtype cannot hold raises "[op] value 1000 cannot be converted to
// type int8 without overflow" (flambeau::ValueError), as PyTorch's
// checked_convert does, instead of wrapping silently. The rule (PyTorch's):
//  * a bool, or any value into bool, always fits;
//  * an integer fits an integer dtype within its range; unsigned dtypes also
//    take negatives down to -max, which wrap (uint8: -1 -> 255), so that
//    `a - b` can be computed as `a + 255 * b`;
//  * a float fits an integer dtype if it is a number within the range (it is
//    then truncated: 1.5 -> 1); NaN and infinities do not fit;
//  * into a floating dtype, infinities and NaN fit, finite values must lie
//    within [lowest, max] of the dtype.
// Wrapped numbers in binary ops are converted without this check, as in
// PyTorch (`int8_tensor + 1000` wraps): promotion already chose the dtype.
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "flambeau/dtype.h"
#include "flambeau/macros.h"

namespace flambeau {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Double, Complex };

  constexpr Scalar() : kind_(Kind::Int), i_(0) {}
  constexpr Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  constexpr Scalar(int v) : kind_(Kind::Int), i_(v) {}
  constexpr Scalar(int64_t v) : kind_(Kind::Int), i_(v) {}
  constexpr Scalar(double v) : kind_(Kind::Double), d_(v) {}
  constexpr Scalar(float v) : kind_(Kind::Double), d_(v) {}
  /// A Python complex number: its real part is to_double().
  Scalar(std::complex<double> v) : kind_(Kind::Complex), d_(v.real()), im_(v.imag()) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Double; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_complex() const { return kind_ == Kind::Complex; }

  /// The value as T; a complex value becomes its real part unless T is std::complex.
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      using R = typename T::value_type;
      if (kind_ == Kind::Complex) return T(static_cast<R>(d_), static_cast<R>(im_));
      return T(kind_ == Kind::Double ? static_cast<R>(d_) : static_cast<R>(i_), R(0));
    } else {
      return kind_ == Kind::Double || kind_ == Kind::Complex ? static_cast<T>(d_) : static_cast<T>(i_);
    }
  }
  std::complex<double> to_complex() const { return to<std::complex<double>>(); }
  /// The imaginary part (0 unless complex).
  double imag() const { return kind_ == Kind::Complex ? im_ : 0.0; }
  double to_double() const { return to<double>(); }
  int64_t to_int() const { return to<int64_t>(); }

  /// The value as Python would print it: True, 1000, 2.5.
  FB_API std::string str() const;

  /// The dtype a tensor made from this scalar gets on its own: bool, int64, float32.
  ScalarType default_dtype() const {
    return kind_ == Kind::Complex  ? default_complex_dtype()
           : kind_ == Kind::Double ? default_float_dtype()
           : kind_ == Kind::Bool   ? ScalarType::Bool
                                   : kDefaultInt;
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
  double im_ = 0.0;
};

/// True if `value` converts to dtype `t` without overflow (Note [Scalar overflow]).
FB_API bool scalar_fits(const Scalar& value, ScalarType t);
/// ValueError naming `op`, the value and the dtype unless scalar_fits(value, t).
FB_API void check_scalar_fits(const Scalar& value, ScalarType t, const char* op);

}  // namespace flambeau
