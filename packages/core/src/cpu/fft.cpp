// CPU kernels of the FFT primitives _fft_c2c, _fft_r2c and _fft_c2r
// (ops.yaml, section fft) over pocketfft (third_party/pocketfft, vendored
// from NumPy); their derivatives are in src/composite/fft_backward.cpp. The public transforms
// (flambeau.fft.fft ... ihfftn) are Python composites in flambeau_core/fft.py
// that pad or trim to n/s and pick the normalization.
//
// Note [FFT batches]: the transformed dims are moved last (a permuted view,
// copied only when it is not contiguous), so the tensor reads as a batch
// (B, *signal) of contiguous signals. Our threads split the batch
// (parallel_for); pocketfft runs single-threaded (POCKETFFT_NO_MULTITHREADING)
// on each chunk, vectorizing across the signals of a chunk. Plans are cached
// (POCKETFFT_CACHE_SIZE, guarded by pocketfft's own mutex), so a repeated
// size is planned once. The result is written contiguously in the permuted
// order and permuted back, made contiguous when the dims were not trailing.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "generic/shape_utils.h"

#define POCKETFFT_NO_MULTITHREADING
#define POCKETFFT_CACHE_SIZE 16
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#endif
#include "../../third_party/pocketfft/pocketfft_hdronly.h"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace flambeau {
namespace {

/// The transformed dims wrapped and checked: non-empty, in range, distinct.
std::vector<int64_t> fft_dims(const Tensor& x, IntArrayRef dim, const char* op) {
  FB_CHECK_VALUE(!dim.empty(), "[", op, "] expected at least one dim to transform, got none (input shape ",
                 shape_str(x.sizes()), ")");
  std::vector<int64_t> dims;
  for (int64_t d : dim) {
    FB_CHECK_INDEX(d >= -x.dim() && d < x.dim(), "[", op,
                   "] Dimension out of range (expected to be in range of [", -x.dim(), ", ", x.dim() - 1,
                   "], but got ", d, ") for input of shape ", shape_str(x.sizes()));
    const int64_t w = d < 0 ? d + x.dim() : d;
    FB_CHECK_VALUE(std::find(dims.begin(), dims.end(), w) == dims.end(), "[", op, "] dim ", d,
                   " appears more than once in dim (input shape ", shape_str(x.sizes()), ")");
    dims.push_back(w);
  }
  return dims;
}

/// The permutation putting the batch dims first (in order) and `dims` last (in their order).
std::vector<int64_t> batch_then(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < ndim; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
  perm.insert(perm.end(), dims.begin(), dims.end());
  return perm;
}

std::vector<int64_t> inverse_perm(const std::vector<int64_t>& p) {
  std::vector<int64_t> inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return inv;
}

bool is_identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

template <class T>
T norm_factor(int64_t normalization, double n, const char* op) {
  FB_CHECK_VALUE(normalization >= 0 && normalization <= 2, "[", op,
                 "] normalization must be 0 (none), 1 (by sqrt(n)) or 2 (by n), got ", normalization);
  if (normalization == 0 || n == 0) return T(1);
  return static_cast<T>(normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n);
}

/// Everything a transform needs about its batched, contiguous layout.
struct Plan {
  Tensor in;                           // permuted, contiguous: (batch dims..., signal dims...)
  std::vector<int64_t> perm;           // the permutation applied to the input
  Shape out_perm_shape;                // the output's shape in the permuted order
  int64_t batch = 1;                   // product of the batch dims
  pocketfft::shape_t in_sig, out_sig;  // signal shapes (input, output)
};

Plan make_plan(const Tensor& x, const std::vector<int64_t>& dims) {
  Plan p;
  p.perm = batch_then(dims, x.dim());
  p.in = op::contiguous(op::permute(x, p.perm), MemoryFormat::Contiguous);
  const int64_t nb = x.dim() - static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < x.dim(); ++i) {
    const int64_t s = p.in.sizes()[i];
    if (i < nb)
      p.batch *= s;
    else
      p.in_sig.push_back(static_cast<size_t>(s));
    p.out_perm_shape.push_back(s);
  }
  p.out_sig = p.in_sig;
  return p;
}

/// The result in the input's dim order (contiguous).
Tensor unpermute(const Tensor& out, const std::vector<int64_t>& perm) {
  if (is_identity(perm)) return out;
  return op::contiguous(op::permute(out, inverse_perm(perm)), MemoryFormat::Contiguous);
}

pocketfft::stride_t byte_strides(const pocketfft::shape_t& shape, size_t elem) {
  pocketfft::stride_t s(shape.size() + 1);
  ptrdiff_t acc = static_cast<ptrdiff_t>(elem);
  for (size_t i = shape.size(); i-- > 0;) {
    s[i + 1] = acc;
    acc *= static_cast<ptrdiff_t>(shape[i]);
  }
  s[0] = acc;  // one signal
  return s;
}

/// Runs f(b0, count) over chunks of the batch (Note [FFT batches]).
template <class F>
void for_batch(int64_t batch, int64_t signal_numel, const F& f) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, signal_numel));
  parallel_for(0, batch, grain, [&](int64_t b, int64_t e) { f(b, e - b); });
}

pocketfft::shape_t with_batch(size_t count, const pocketfft::shape_t& sig) {
  pocketfft::shape_t s{count};
  s.insert(s.end(), sig.begin(), sig.end());
  return s;
}

pocketfft::shape_t signal_axes(size_t k) {
  pocketfft::shape_t a;
  for (size_t i = 1; i <= k; ++i) a.push_back(i);
  return a;
}

double prod(const pocketfft::shape_t& s) {
  double r = 1;
  for (size_t v : s) r *= static_cast<double>(v);
  return r;
}

int64_t prod_i(const pocketfft::shape_t& s) {
  int64_t r = 1;
  for (size_t v : s) r *= static_cast<int64_t>(v);
  return r;
}

void check_complex(const Tensor& x, const char* op) {
  FB_CHECK_TYPE(x.dtype() == ScalarType::ComplexFloat || x.dtype() == ScalarType::ComplexDouble, "[", op,
                "] expected a complex64 or complex128 tensor, got ", dtype_name(x.dtype()), " (shape ",
                shape_str(x.sizes()), ")");
}

Tensor fft_c2c_cpu(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward) {
  const char* op = "_fft_c2c";
  check_complex(self, op);
  const auto dims = fft_dims(self, dim, op);
  Plan p = make_plan(self, dims);
  Tensor out = op::empty(p.out_perm_shape, self.dtype(), self.device());
  if (out.numel() == 0) return unpermute(out, p.perm);
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = norm_factor<R>(normalization, prod(p.in_sig), op);
    const C* src = p.in.data<C>();
    C* dst = out.data<C>();
    const int64_t sn = prod_i(p.in_sig);
    for_batch(p.batch, sn, [&](int64_t b0, int64_t count) {
      const auto shape = with_batch(static_cast<size_t>(count), p.in_sig);
      const auto st = byte_strides(p.in_sig, sizeof(C));
      pocketfft::c2c<R>(shape, st, st, signal_axes(p.in_sig.size()), forward, src + b0 * sn, dst + b0 * sn,
                        fct);
    });
  };
  if (self.dtype() == ScalarType::ComplexFloat)
    run(float{});
  else
    run(double{});
  return unpermute(out, p.perm);
}

Tensor fft_r2c_cpu(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  const char* op = "_fft_r2c";
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64, "[", op,
                "] expected a float32 or float64 tensor, got ", dtype_name(self.dtype()), " (shape ",
                shape_str(self.sizes()), ")");
  const auto dims = fft_dims(self, dim, op);
  if (!onesided) {
    // The full spectrum of a real signal: the complex transform of its complex copy.
    return fft_c2c_cpu(op::cast(self, to_complex_dtype(self.dtype())), dim, normalization, true);
  }
  Plan p = make_plan(self, dims);
  const size_t k = p.in_sig.size();
  p.out_sig.back() = p.in_sig.back() / 2 + 1;
  p.out_perm_shape.back() = static_cast<int64_t>(p.out_sig.back());
  Tensor out = op::empty(p.out_perm_shape, to_complex_dtype(self.dtype()), self.device());
  if (out.numel() == 0) return unpermute(out, p.perm);
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = norm_factor<R>(normalization, prod(p.in_sig), op);
    const R* src = p.in.data<R>();
    C* dst = out.data<C>();
    const int64_t in_n = prod_i(p.in_sig), out_n = prod_i(p.out_sig);
    for_batch(p.batch, in_n, [&](int64_t b0, int64_t count) {
      const auto shape = with_batch(static_cast<size_t>(count), p.in_sig);
      pocketfft::r2c<R>(shape, byte_strides(p.in_sig, sizeof(R)), byte_strides(p.out_sig, sizeof(C)),
                        signal_axes(k), true, src + b0 * in_n, dst + b0 * out_n, fct);
    });
  };
  if (self.dtype() == ScalarType::Float32)
    run(float{});
  else
    run(double{});
  return unpermute(out, p.perm);
}

Tensor fft_c2r_cpu(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  const char* op = "_fft_c2r";
  check_complex(self, op);
  const auto dims = fft_dims(self, dim, op);
  FB_CHECK_VALUE(last_dim_size >= 1, "[", op, "] Invalid number of data points (", last_dim_size,
                 ") specified");
  const int64_t half = self.sizes()[dims.back()];
  FB_CHECK_VALUE(half == last_dim_size / 2 + 1, "[", op, "] expected the last transformed dim (", dims.back(),
                 ") of size last_dim_size / 2 + 1 = ", last_dim_size / 2 + 1, ", got ", half,
                 " (input shape ", shape_str(self.sizes()), ")");
  Plan p = make_plan(self, dims);
  const size_t k = p.in_sig.size();
  p.out_sig.back() = static_cast<size_t>(last_dim_size);
  p.out_perm_shape.back() = last_dim_size;
  Tensor out = op::empty(p.out_perm_shape, to_real_dtype(self.dtype()), self.device());
  if (out.numel() == 0) return unpermute(out, p.perm);
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = norm_factor<R>(normalization, prod(p.out_sig), op);
    const C* src = p.in.data<C>();
    R* dst = out.data<R>();
    const int64_t in_n = prod_i(p.in_sig), out_n = prod_i(p.out_sig);
    for_batch(p.batch, out_n, [&](int64_t b0, int64_t count) {
      const auto shape = with_batch(static_cast<size_t>(count), p.out_sig);
      pocketfft::c2r<R>(shape, byte_strides(p.in_sig, sizeof(C)), byte_strides(p.out_sig, sizeof(R)),
                        signal_axes(k), false, src + b0 * in_n, dst + b0 * out_n, fct);
    });
  };
  if (self.dtype() == ScalarType::ComplexFloat)
    run(float{});
  else
    run(double{});
  return unpermute(out, p.perm);
}

}  // namespace

FB_REGISTER_KERNEL(op::_fft_c2c, CPU, fft_c2c_cpu);
FB_REGISTER_KERNEL(op::_fft_r2c, CPU, fft_r2c_cpu);
FB_REGISTER_KERNEL(op::_fft_c2r, CPU, fft_c2r_cpu);

}  // namespace flambeau
