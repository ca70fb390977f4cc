#pragma once
// A Python-style number: bool, int64 or double. Used for op arguments such as
// `alpha` and for filling tensors; binary ops turn scalars into 0-dim
// "wrapped number" tensors (see Note [Wrapped numbers] in tensor_impl.h).
#include <cstdint>

#include "flambeau/dtype.h"

namespace flambeau {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Double };

  constexpr Scalar() : kind_(Kind::Int), i_(0) {}
  constexpr Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  constexpr Scalar(int v) : kind_(Kind::Int), i_(v) {}
  constexpr Scalar(int64_t v) : kind_(Kind::Int), i_(v) {}
  constexpr Scalar(double v) : kind_(Kind::Double), d_(v) {}
  constexpr Scalar(float v) : kind_(Kind::Double), d_(v) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Double; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  template <class T>
  T to() const {
    return kind_ == Kind::Double ? static_cast<T>(d_) : static_cast<T>(i_);
  }
  double to_double() const { return to<double>(); }
  int64_t to_int() const { return to<int64_t>(); }

  /// The dtype a tensor made from this scalar gets on its own: bool, int64, float32.
  ScalarType default_dtype() const {
    return kind_ == Kind::Double ? kDefaultFloat : kind_ == Kind::Bool ? ScalarType::Bool : kDefaultInt;
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace flambeau
