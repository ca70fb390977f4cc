// CPU out kernels of the FFT primitives _fft_c2c, _fft_r2c, _fft_c2r and
// _stft_r2c (ops.yaml, section fft; structured: their checks and output
// shapes are the meta step's, src/meta/fft_rules.cpp) over pocketfft
// (third_party/pocketfft, vendored from NumPy); their derivatives are in
// src/composite/fft_backward.cpp. The public transforms
// (flambeau.fft.fft ... ihfftn) are Python composites in flambeau_core/fft.py
// that pad or trim to n/s and pick the normalization.
// Note [FFT batches] (below) says how a batch is threaded.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>
#include <vector>

#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"

#define POCKETFFT_NO_MULTITHREADING
#define POCKETFFT_CACHE_SIZE 16
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#endif
#include "../../../third_party/pocketfft/pocketfft_hdronly.h"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace flambeau {
namespace {

// pocketfft allocates its plans and scratch arrays itself, outside the tensor
// allocator: a length whose output the allocator accepted can still exhaust
// host memory there. Say which op ran out instead of a bare std::bad_alloc.
template <class Run>
void run_in_precision(const char* op, bool single, Run&& run) {
  try {
    if (single)
      run(float{});
    else
      run(double{});
  } catch (const std::bad_alloc&) {
    throw RuntimeError(
        detail::cat_str("[", op, "] out of memory: the FFT could not allocate its plan or scratch memory"));
  }
}

/// The transformed dims wrapped (the check step checked them: non-empty, in range, distinct).
std::vector<int64_t> fft_dims(const Tensor& x, IntArrayRef dim) {
  std::vector<int64_t> dims;
  for (int64_t d : dim) dims.push_back(d < 0 ? d + x.dim() : d);
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

/// The scale of `normalization` (0, 1 or 2: the check step checked it) for n points.
template <class T>
T norm_factor(int64_t normalization, double n) {
  if (normalization == 0 || n == 0) return T(1);
  return static_cast<T>(normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n);
}

/// Note [FFT batches]: pocketfft reads and writes any strides, so the input
/// is never copied: the dims are listed batch first, transformed last
/// (`perm`), with the input's own strides and those of the output, which is
/// allocated contiguous in the input's dim order. Our threads split the first
/// batch dim (parallel_for); pocketfft runs single-threaded on each chunk
/// (POCKETFFT_NO_MULTITHREADING), treating the other batch dims as more
/// signals and vectorizing across them. Plans are cached (POCKETFFT_CACHE_SIZE,
/// under pocketfft's own mutex).
struct Layout {
  pocketfft::shape_t shape;     // the real-domain (c2c: the) shape, in perm order
  pocketfft::stride_t in, out;  // byte strides, in perm order
  pocketfft::shape_t axes;      // the transformed positions (the last k)
  size_t nbatch = 0;            // how many leading positions are batch dims
};

Layout make_layout(const Tensor& in, const Tensor& out, const std::vector<int64_t>& dims, IntArrayRef shape) {
  Layout l;
  const auto perm = batch_then(dims, in.dim());
  const int64_t ib = static_cast<int64_t>(itemsize(in.dtype())),
                ob = static_cast<int64_t>(itemsize(out.dtype()));
  for (int64_t d : perm) {
    l.shape.push_back(static_cast<size_t>(shape[static_cast<size_t>(d)]));
    l.in.push_back(static_cast<ptrdiff_t>(in.strides()[d] * ib));
    l.out.push_back(static_cast<ptrdiff_t>(out.strides()[d] * ob));
  }
  l.nbatch = perm.size() - dims.size();
  for (size_t i = l.nbatch; i < perm.size(); ++i) l.axes.push_back(i);
  return l;
}

/// Runs f(shape, in_offset_bytes, out_offset_bytes) over chunks of the first batch dim.
template <class F>
void for_chunks(const Layout& l, const F& f) {
  if (l.nbatch == 0) {
    f(l.shape, ptrdiff_t{0}, ptrdiff_t{0});
    return;
  }
  double per = 1;
  for (size_t i = 1; i < l.shape.size(); ++i) per *= static_cast<double>(l.shape[i]);
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(16384.0 / std::max(1.0, per)));
  parallel_for(0, static_cast<int64_t>(l.shape[0]), grain, [&](int64_t b, int64_t e) {
    pocketfft::shape_t s = l.shape;
    s[0] = static_cast<size_t>(e - b);
    f(s, static_cast<ptrdiff_t>(b) * l.in[0], static_cast<ptrdiff_t>(b) * l.out[0]);
  });
}

/// Runs f(shape, in_offset_bytes, out_offset_bytes) over chunks of position
/// `split` of shape (one call when split is npos): a single multi-dim signal
/// (no batch dims) is transformed one axis at a time, each pass split across
/// our threads along another axis (Note [FFT batches]).
template <class F>
void for_split(const pocketfft::shape_t& shape, const pocketfft::stride_t& in, const pocketfft::stride_t& out,
               size_t split, const F& f) {
  if (split >= shape.size()) {
    f(shape, ptrdiff_t{0}, ptrdiff_t{0});
    return;
  }
  double per = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (i != split) per *= static_cast<double>(shape[i]);
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(16384.0 / std::max(1.0, per)));
  parallel_for(0, static_cast<int64_t>(shape[split]), grain, [&](int64_t b, int64_t e) {
    pocketfft::shape_t s = shape;
    s[split] = static_cast<size_t>(e - b);
    f(s, static_cast<ptrdiff_t>(b) * in[split], static_cast<ptrdiff_t>(b) * out[split]);
  });
}

/// The axis a one-axis pass over `ax` of a batch-free signal splits across threads.
size_t other_axis(size_t ax) { return ax == 0 ? 1 : 0; }

/// One multi-dim signal, no batch dims: transformed axis by axis (for_split).
bool per_axis(const Layout& l) { return l.nbatch == 0 && l.axes.size() >= 2; }

double signal_size(const Tensor& t, const std::vector<int64_t>& dims) {
  double r = 1;
  for (int64_t d : dims) r *= static_cast<double>(t.sizes()[d]);
  return r;
}

template <class T>
const T* in_ptr(const Tensor& t, ptrdiff_t off) {
  return reinterpret_cast<const T*>(static_cast<const char*>(t.data_ptr()) + off);
}
template <class T>
T* out_ptr(const Tensor& t, ptrdiff_t off) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data_ptr()) + off);
}

/// The c2c transform of self into `out` (contiguous, of self's shape and dtype, not overlapping self).
void c2c_into(const Tensor& out, const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
              bool forward) {
  const char* op = "_fft_c2c";
  if (out.numel() == 0) return;
  const Layout l = make_layout(self, out, dims, self.sizes());
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = norm_factor<R>(normalization, signal_size(self, dims));
    if (per_axis(l)) {  // the first pass reads the input, the others work in place in out
      for (size_t i = 0; i < l.axes.size(); ++i) {
        const size_t ax = l.axes[i];
        const bool first = i == 0;
        const R f = i + 1 == l.axes.size() ? fct : R(1);
        for_split(l.shape, first ? l.in : l.out, l.out, other_axis(ax),
                  [&](const auto& s, ptrdiff_t io, ptrdiff_t oo) {
                    const C* src = first ? in_ptr<C>(self, io) : out_ptr<C>(out, io);
                    pocketfft::c2c<R>(s, first ? l.in : l.out, l.out, {ax}, forward, src, out_ptr<C>(out, oo),
                                      f);
                  });
      }
      return;
    }
    for_chunks(l, [&](const pocketfft::shape_t& s, ptrdiff_t io, ptrdiff_t oo) {
      pocketfft::c2c<R>(s, l.in, l.out, l.axes, forward, in_ptr<C>(self, io), out_ptr<C>(out, oo), fct);
    });
  };
  run_in_precision(op, self.dtype() == ScalarType::ComplexFloat, run);
}

void fft_c2c_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dim, int64_t normalization,
                     bool forward) {
  const auto dims = fft_dims(self, dim);
  cpu::write_contiguous(out, self,
                        [&](const Tensor& dst) { c2c_into(dst, self, dims, normalization, forward); });
}

/// The onesided r2c transform of self into `out` (contiguous, not overlapping self).
void r2c_into(const Tensor& out, const Tensor& self, const std::vector<int64_t>& dims,
              int64_t normalization) {
  const char* op = "_fft_r2c";
  if (out.numel() == 0) return;
  if (self.numel() == 0) {  // a signal of no points (the last dim 0): its one bin sums nothing
    Tensor dst = out;
    op::fill_(dst, Scalar(0.0));
    return;
  }
  const Layout l = make_layout(self, out, dims, self.sizes());
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = norm_factor<R>(normalization, signal_size(self, dims));
    if (per_axis(l)) {  // r2c over the last axis, then c2c in place over the others
      const size_t last = l.axes.back();
      for_split(l.shape, l.in, l.out, other_axis(last), [&](const auto& s, ptrdiff_t io, ptrdiff_t oo) {
        pocketfft::r2c<R>(s, l.in, l.out, last, true, in_ptr<R>(self, io), out_ptr<C>(out, oo), R(1));
      });
      pocketfft::shape_t half = l.shape;
      half[last] = half[last] / 2 + 1;
      for (size_t i = 0; i + 1 < l.axes.size(); ++i) {
        const size_t ax = l.axes[i];
        const R f = i + 2 == l.axes.size() ? fct : R(1);
        for_split(half, l.out, l.out, other_axis(ax), [&](const auto& s, ptrdiff_t io, ptrdiff_t oo) {
          pocketfft::c2c<R>(s, l.out, l.out, {ax}, true, out_ptr<C>(out, io), out_ptr<C>(out, oo), f);
        });
      }
      return;
    }
    for_chunks(l, [&](const pocketfft::shape_t& s, ptrdiff_t io, ptrdiff_t oo) {
      pocketfft::r2c<R>(s, l.in, l.out, l.axes, true, in_ptr<R>(self, io), out_ptr<C>(out, oo), fct);
    });
  };
  run_in_precision(op, self.dtype() == ScalarType::Float32, run);
}

void fft_r2c_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dim, int64_t normalization,
                     bool onesided) {
  const auto dims = fft_dims(self, dim);
  if (!onesided) {
    // The full spectrum of a real signal: the complex transform of its complex copy.
    const Tensor x = op::cast(self, to_complex_dtype(self.dtype()));
    cpu::write_contiguous(out, self, [&](const Tensor& dst) { c2c_into(dst, x, dims, normalization, true); });
    return;
  }
  cpu::write_contiguous(out, self, [&](const Tensor& dst) { r2c_into(dst, self, dims, normalization); });
}

/// The c2r transform of self into `out` (contiguous, not overlapping self).
void c2r_into(const Tensor& out, const Tensor& self, const std::vector<int64_t>& dims,
              int64_t normalization) {
  const char* op = "_fft_c2r";
  if (out.numel() == 0) return;
  // pocketfft's multi-axis c2r writes its intermediate c2c result into a
  // scratch array; its single-axis c2r reads the input as is.
  const Layout l = make_layout(self, out, dims, out.sizes());
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = norm_factor<R>(normalization, signal_size(out, dims));
    if (per_axis(l)) {  // c2c over all but the last axis into a scratch tensor, then c2r over the last
      Tensor tmp = op::empty(self.sizes(), self.dtype(), self.device());
      const Layout lt = make_layout(self, tmp, dims, self.sizes());
      for (size_t i = 0; i + 1 < lt.axes.size(); ++i) {
        const size_t ax = lt.axes[i];
        const bool first = i == 0;
        for_split(lt.shape, first ? lt.in : lt.out, lt.out, other_axis(ax),
                  [&](const auto& s, ptrdiff_t io, ptrdiff_t oo) {
                    const C* src = first ? in_ptr<C>(self, io) : out_ptr<C>(tmp, io);
                    pocketfft::c2c<R>(s, first ? lt.in : lt.out, lt.out, {ax}, false, src,
                                      out_ptr<C>(tmp, oo), R(1));
                  });
      }
      const size_t last = l.axes.back();
      for_split(l.shape, lt.out, l.out, other_axis(last), [&](const auto& s, ptrdiff_t io, ptrdiff_t oo) {
        pocketfft::c2r<R>(s, lt.out, l.out, last, false, out_ptr<C>(tmp, io), out_ptr<R>(out, oo), fct);
      });
      return;
    }
    for_chunks(l, [&](const pocketfft::shape_t& s, ptrdiff_t io, ptrdiff_t oo) {
      pocketfft::c2r<R>(s, l.in, l.out, l.axes, false, in_ptr<C>(self, io), out_ptr<R>(out, oo), fct);
    });
  };
  run_in_precision(op, self.dtype() == ScalarType::ComplexFloat, run);
}

void fft_c2r_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dim, int64_t normalization,
                     int64_t /*last_dim_size: out's size along the last dim*/) {
  const auto dims = fft_dims(self, dim);
  cpu::write_contiguous(out, self, [&](const Tensor& dst) { c2r_into(dst, self, dims, normalization); });
}

/// Note [stft frames]: stft of a real signal in one kernel. The composite form
/// pads the signal (a copy), multiplies its unfolded frames by the window
/// (another copy) and transforms those. Here each thread takes chunks of
/// frames (over all batch rows): it writes a chunk's frames, times the window,
/// into a scratch block that stays in cache, reading the samples beyond the
/// signal's ends through the pad mode's index map (no padded copy), then runs
/// one onesided pocketfft transform of the block straight into the output.
constexpr int64_t kStftChunkBytes = 64 * 1024;  // scratch per chunk: in L2

enum class StftPad { Constant, Reflect, Replicate, Circular };

/// The pad mode (check_stft checked it is one of the four).
StftPad stft_pad_mode(std::string_view mode) {
  if (mode == "constant") return StftPad::Constant;
  if (mode == "reflect") return StftPad::Reflect;
  if (mode == "replicate") return StftPad::Replicate;
  return StftPad::Circular;
}

/// The sample at position j of the padded signal (x: the L samples), or nothing (0) for constant padding.
template <class R>
R padded_sample(const R* x, int64_t len, int64_t j, StftPad mode) {
  if (j >= 0 && j < len) return x[j];
  switch (mode) {
    case StftPad::Constant:
      return R(0);
    case StftPad::Reflect:  // the caller checked pad < len: one reflection
      return x[j < 0 ? -j : 2 * (len - 1) - j];
    case StftPad::Replicate:
      return x[j < 0 ? 0 : len - 1];
    case StftPad::Circular:
      return x[((j % len) + len) % len];
  }
  return R(0);
}

/// The frames' onesided transforms into `out` ((batch, frames, bins), contiguous, not overlapping the inputs;
/// check_stft checked the arguments).
void stft_into(const Tensor& out, const Tensor& signal, const Tensor& window, int64_t n_fft,
               int64_t hop_length, int64_t pad, StftPad mode, bool normalized) {
  const char* op = "stft";
  const int64_t len = signal.sizes()[1];
  const int64_t batch = out.sizes()[0], frames = out.sizes()[1], bins = out.sizes()[2];
  if (out.numel() == 0) return;
  const Tensor x = signal.is_contiguous() ? signal : op::contiguous(signal, MemoryFormat::Contiguous);
  const Tensor w = window.is_contiguous() ? window : op::contiguous(window, MemoryFormat::Contiguous);
  auto run = [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    const R fct = normalized ? static_cast<R>(1.0 / std::sqrt(static_cast<double>(n_fft))) : R(1);
    const R* xs = x.data<R>();
    const R* ws = w.data<R>();
    C* os = out.data<C>();
    const int64_t per_chunk = std::max<int64_t>(1, kStftChunkBytes / static_cast<int64_t>(n_fft * sizeof(R)));
    const int64_t total = batch * frames;
    parallel_for(0, total, per_chunk, [&](int64_t b, int64_t e) {
      std::vector<R> scratch(static_cast<size_t>(std::min(per_chunk, e - b) * n_fft));
      for (int64_t g0 = b; g0 < e; g0 += per_chunk) {
        const int64_t g1 = std::min(e, g0 + per_chunk);
        for (int64_t g = g0; g < g1; ++g) {
          const R* row = xs + (g / frames) * len;
          const int64_t start = (g % frames) * hop_length - pad;  // first sample, in the signal's positions
          R* dst = scratch.data() + (g - g0) * n_fft;
          if (start >= 0 && start + n_fft <= len) {
            const R* src = row + start;
            for (int64_t k = 0; k < n_fft; ++k) dst[k] = src[k] * ws[k];
          } else {
            for (int64_t k = 0; k < n_fft; ++k) dst[k] = padded_sample(row, len, start + k, mode) * ws[k];
          }
        }
        const pocketfft::shape_t shape{static_cast<size_t>(g1 - g0), static_cast<size_t>(n_fft)};
        const pocketfft::stride_t in_strides{static_cast<ptrdiff_t>(n_fft * sizeof(R)),
                                             static_cast<ptrdiff_t>(sizeof(R))};
        const pocketfft::stride_t out_strides{static_cast<ptrdiff_t>(bins * sizeof(C)),
                                              static_cast<ptrdiff_t>(sizeof(C))};
        pocketfft::r2c<R>(shape, in_strides, out_strides, 1, true, scratch.data(), os + g0 * bins, fct);
      }
    });
  };
  run_in_precision(op, signal.dtype() == ScalarType::Float32, run);
}

void stft_r2c_out_cpu(const Tensor& out, const Tensor& signal, const Tensor& window, int64_t n_fft,
                      int64_t hop_length, int64_t pad, std::string_view pad_mode, bool normalized) {
  const StftPad mode = stft_pad_mode(pad_mode);
  cpu::write_contiguous(out, {&signal, &window}, [&](const Tensor& dst) {
    stft_into(dst, signal, window, n_fft, hop_length, pad, mode, normalized);
  });
}

}  // namespace

FB_REGISTER_OUT_KERNEL(op::_fft_c2c, CPU, fft_c2c_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_fft_r2c, CPU, fft_r2c_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_fft_c2r, CPU, fft_c2r_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_stft_r2c, CPU, stft_r2c_out_cpu);

}  // namespace flambeau
