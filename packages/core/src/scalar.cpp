// Scalar printing and the overflow rule of Note [Scalar overflow] (scalar.h).
#include "flambeau/scalar.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "flambeau/error.h"

namespace flambeau {

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::Bool:
      return i_ ? "True" : "False";
    case Kind::Int:
      return std::to_string(i_);
    case Kind::Double:
      break;
    case Kind::Complex: {
      // Python's repr: (1+2j), 2j when the real part is +0.
      auto num = [](double v) {
        char b[32];
        const auto [e, ec] = std::to_chars(b, b + sizeof b, v);
        return std::string(b, ec == std::errc() ? e : b);
      };
      const std::string im = num(im_) + "j";
      if (d_ == 0.0 && !std::signbit(d_)) return im;
      return "(" + num(d_) + (im_ >= 0 || std::isnan(im_) ? "+" : "") + im + ")";
    }
  }
  // The shortest form that reads back the same double, written as Python's repr.
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d_);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 1000 -> 1000.0; not inf, nan, 1e+19
  return s;
}

namespace {

template <class T>
bool int_fits(int64_t v) {
  using L = std::numeric_limits<T>;
  if constexpr (!L::is_signed) {
    // Negatives down to -max wrap (Note [Scalar overflow]).
    return v <= static_cast<int64_t>(L::max()) && v >= -static_cast<int64_t>(L::max());
  } else {
    return v >= static_cast<int64_t>(L::lowest()) && v <= static_cast<int64_t>(L::max());
  }
}

template <class T>
bool double_fits_int(double v) {
  using L = std::numeric_limits<T>;
  if (std::isnan(v)) return false;
  // PyTorch's bounds, [lowest, max]; int64's max rounds up to 2^63 in double,
  // which itself does not fit (converting it would be undefined behaviour).
  const double hi = static_cast<double>(L::max());
  return v >= static_cast<double>(L::lowest()) && (sizeof(T) < 8 ? v <= hi : v < hi);
}

// Largest finite value of a floating dtype.
double float_max(ScalarType t) {
  switch (t) {
    case ScalarType::Float16:
      return 65504.0;
    case ScalarType::BFloat16:
      return 3.3895313892515355e38;
    case ScalarType::Float32:
    case ScalarType::ComplexFloat:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace

bool scalar_fits(const Scalar& value, ScalarType t) {
  if (value.is_complex() && !is_complex(t))
    return value.imag() == 0.0 && scalar_fits(Scalar(value.to_double()), t);
  if (value.is_bool() || t == ScalarType::Bool) return true;
  if (is_floating(t) || is_complex(t)) {
    const double v = value.to_double(), w = value.imag();
    return (!std::isfinite(v) || std::abs(v) <= float_max(t)) &&
           (!std::isfinite(w) || std::abs(w) <= float_max(t));
  }
  if (!value.is_floating()) {
    const int64_t v = value.to_int();
    switch (t) {
      case ScalarType::UInt8:
        return int_fits<uint8_t>(v);
      case ScalarType::Int8:
        return int_fits<int8_t>(v);
      case ScalarType::Int16:
        return int_fits<int16_t>(v);
      case ScalarType::Int32:
        return int_fits<int32_t>(v);
      case ScalarType::UInt16:
        return int_fits<uint16_t>(v);
      case ScalarType::UInt32:
        return int_fits<uint32_t>(v);
      default:
        return true;  // int64, uint64 (an int64 always fits; negatives wrap)
    }
  }
  const double v = value.to_double();
  switch (t) {
    case ScalarType::UInt8:
      return double_fits_int<uint8_t>(v);
    case ScalarType::Int8:
      return double_fits_int<int8_t>(v);
    case ScalarType::Int16:
      return double_fits_int<int16_t>(v);
    case ScalarType::Int32:
      return double_fits_int<int32_t>(v);
    case ScalarType::UInt16:
      return double_fits_int<uint16_t>(v);
    case ScalarType::UInt32:
      return double_fits_int<uint32_t>(v);
    case ScalarType::UInt64:
      return double_fits_int<uint64_t>(v);
    default:
      return double_fits_int<int64_t>(v);
  }
}

void check_scalar_fits(const Scalar& value, ScalarType t, const char* op) {
  FB_CHECK_VALUE(scalar_fits(value, t), "[", op, "] value ", value.str(), " cannot be converted to type ",
                 dtype_name(t), " without overflow");
}

}  // namespace flambeau
