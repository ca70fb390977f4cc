// The meta step's rules for the FFT primitives _fft_c2c, _fft_r2c, _fft_c2r and _stft_r2c (Note [Meta
// step], flambeau/meta.h; ops.yaml, section fft): the checks their CPU kernels (src/cpu/fft/fft.cpp) made
// before they became out kernels, with the same messages, and their output shapes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>

#include "flambeau/error.h"
#include "flambeau/meta.h"
#include "generic/shape_utils.h"

namespace flambeau::meta {

namespace {

/// The last transformed dim, wrapped (check_fft_dims has checked it).
int64_t last_fft_dim(const Tensor& self, IntArrayRef dim) {
  const int64_t d = dim.back();
  return d < 0 ? d + self.dim() : d;
}

/// self's shape with the last transformed dim of `size`.
Shape with_last_dim(const Tensor& self, IntArrayRef dim, int64_t size) {
  Shape s(self.sizes().begin(), self.sizes().end());
  s[static_cast<size_t>(last_fft_dim(self, dim))] = size;
  return s;
}

}  // namespace

void check_fft_complex(const char* op, const Tensor& self) {
  FB_CHECK_TYPE(self.dtype() == ScalarType::ComplexFloat || self.dtype() == ScalarType::ComplexDouble, "[",
                op, "] expected a complex64 or complex128 tensor, got ", dtype_name(self.dtype()), " (shape ",
                shape_str(self.sizes()), ")");
}

void check_fft_real(const char* op, const Tensor& self) {
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64, "[", op,
                "] expected a float32 or float64 tensor, got ", dtype_name(self.dtype()), " (shape ",
                shape_str(self.sizes()), ")");
}

void check_fft_dims(const char* op, const Tensor& self, IntArrayRef dim) {
  FB_CHECK_VALUE(!dim.empty(), "[", op, "] expected at least one dim to transform, got none (input shape ",
                 shape_str(self.sizes()), ")");
  const int64_t nd = self.dim();
  for (size_t i = 0; i < dim.size(); ++i) {
    const int64_t d = dim[i];
    FB_CHECK_INDEX(d >= -nd && d < nd, "[", op, "] Dimension out of range (expected to be in range of [", -nd,
                   ", ", nd - 1, "], but got ", d, ") for input of shape ", shape_str(self.sizes()));
    const int64_t w = d < 0 ? d + nd : d;
    for (size_t j = 0; j < i; ++j)
      FB_CHECK_VALUE((dim[j] < 0 ? dim[j] + nd : dim[j]) != w, "[", op, "] dim ", d,
                     " appears more than once in dim (input shape ", shape_str(self.sizes()), ")");
  }
}

void check_fft_norm(const char* op, int64_t normalization) {
  FB_CHECK_VALUE(normalization >= 0 && normalization <= 2, "[", op,
                 "] normalization must be 0 (none), 1 (by sqrt(n)) or 2 (by n), got ", normalization);
}

void check_fft_c2r_size(const char* op, const Tensor& self, IntArrayRef dim, int64_t last_dim_size) {
  FB_CHECK_VALUE(last_dim_size >= 1, "[", op, "] Invalid number of data points (", last_dim_size,
                 ") specified");
  const int64_t last = last_fft_dim(self, dim);
  const int64_t half = self.sizes()[last];
  FB_CHECK_VALUE(half == last_dim_size / 2 + 1, "[", op, "] expected the last transformed dim (", last,
                 ") of size last_dim_size / 2 + 1 = ", last_dim_size / 2 + 1, ", got ", half,
                 " (input shape ", shape_str(self.sizes()), ")");
}

Shape fft_r2c(const char* /*op*/, const Tensor& self, IntArrayRef dim, bool onesided) {
  const int64_t n = self.sizes()[last_fft_dim(self, dim)];
  return with_last_dim(self, dim, onesided ? n / 2 + 1 : n);
}

Shape fft_c2r(const char* /*op*/, const Tensor& self, IntArrayRef dim, int64_t last_dim_size) {
  return with_last_dim(self, dim, last_dim_size);
}

void check_stft(const char* op, const Tensor& signal, const Tensor& window, int64_t n_fft, int64_t hop_length,
                int64_t pad, std::string_view pad_mode) {
  FB_CHECK_TYPE((signal.dtype() == ScalarType::Float32 || signal.dtype() == ScalarType::Float64) &&
                    window.dtype() == signal.dtype(),
                "[", op, "] expected a float32 or float64 signal and window of its dtype, got ",
                dtype_name(signal.dtype()), " and ", dtype_name(window.dtype()));
  const bool reflect = pad_mode == "reflect", circular = pad_mode == "circular",
             replicate = pad_mode == "replicate";
  FB_CHECK_VALUE(pad_mode == "constant" || reflect || replicate || circular, "[", op,
                 "] Unrecognised padding mode ", pad_mode);
  FB_CHECK_VALUE(
      signal.dim() == 2 && window.dim() == 1 && window.sizes()[0] == n_fft && hop_length > 0 && pad >= 0, "[",
      op, "] expected a (B, L) signal and a window of n_fft values, got shapes ", shape_str(signal.sizes()),
      " and ", shape_str(window.sizes()), " (n_fft ", n_fft, ", hop_length ", hop_length, ", pad ", pad, ")");
  const int64_t len = signal.sizes()[1];
  FB_CHECK_VALUE(pad <= (std::numeric_limits<int64_t>::max() - len) / 2, "[", op, "] padding of ", pad,
                 " samples is too long");
  const int64_t padded = len + 2 * pad;
  FB_CHECK_VALUE(n_fft > 0 && n_fft <= padded, "[", op, "] expected 0 < n_fft < ", padded,
                 ", but got n_fft=", n_fft);
  FB_CHECK_VALUE(!reflect || pad < len || pad == 0, "[", op, "] reflect padding of ", pad,
                 " needs a signal longer than ", pad, " samples, got ", len);
  FB_CHECK_VALUE(!circular || pad <= len, "[", op, "] circular padding of ", pad,
                 " needs a signal of at least ", pad, " samples, got ", len);
  // Replicating the end samples of an empty signal has nothing to read (the kernel read past it).
  FB_CHECK_VALUE(!replicate || pad == 0 || len > 0, "[", op, "] replicate padding of ", pad,
                 " needs a non-empty signal, got 0 samples");
}

Shape stft(const char* /*op*/, const Tensor& signal, int64_t n_fft, int64_t hop_length, int64_t pad) {
  const int64_t frames = (signal.sizes()[1] + 2 * pad - n_fft) / hop_length + 1;
  return Shape{signal.sizes()[0], frames, n_fft / 2 + 1};
}

}  // namespace flambeau::meta
