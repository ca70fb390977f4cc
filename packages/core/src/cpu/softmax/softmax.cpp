// CPU kernels: softmax and log_softmax along any dim, and their fused
// backward (Note [Softmax rows] in softmax_rows.h). Numerically stable: each
// row is shifted by its maximum before exp, so exp never overflows, and
// log_softmax(x) = (x - max) - log(sum(exp(x - max))).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "softmax_rows.h"
#include "cpu/elementwise/vec_table.h"
#include "cpu/write_out.h"

namespace flambeau {
namespace cpu {

FB_DEFINE_DISPATCH(softmax_rows_stub);

const SoftmaxRowTable& softmax_rows() { return softmax_rows_stub.get()(); }

}  // namespace cpu

namespace {

enum class Kind { Softmax, LogSoftmax };

const char* name_of(Kind k) { return k == Kind::Softmax ? "softmax" : "log_softmax"; }

// Rows per parallel chunk: about kGrainSize elements (exp costs several
// times a memory-bound op per element, Note [Grain size]).
int64_t row_grain(int64_t n, int64_t inner = 1) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * inner, 1));
}

// The view of a tensor as (outer, n, inner) around dim d.
struct RowShape {
  int64_t outer, n, inner;
};

RowShape row_shape(const Tensor& t, int64_t d) {
  const int64_t n = t.dim() == 0 ? 1 : t.sizes()[d];
  int64_t inner = 1;
  for (int64_t i = d + 1; i < t.dim(); ++i) inner *= t.sizes()[i];
  return {t.numel() / (n * inner), n, inner};
}

// inner > 1: the dim is strided. Each chunk takes whole (outer, inner-block)
// tiles and walks the n rows of the tile, vectorizing across `inner`.
constexpr int64_t kInnerBlock = 256;

template <class T>
void forward_strided(Kind kind, const T* x, T* y, RowShape s) {
  const int64_t blocks = (s.inner + kInnerBlock - 1) / kInnerBlock;
  parallel_for(0, s.outer * blocks, row_grain(s.n, kInnerBlock), [&](int64_t begin, int64_t end) {
    T mx[kInnerBlock], sum[kInnerBlock];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / blocks, i0 = (t % blocks) * kInnerBlock;
      const int64_t w = std::min(kInnerBlock, s.inner - i0);
      const T* xb = x + o * s.n * s.inner + i0;
      T* yb = y + o * s.n * s.inner + i0;
      for (int64_t i = 0; i < w; ++i) {
        mx[i] = -std::numeric_limits<T>::infinity();
        sum[i] = 0;
      }
      for (int64_t j = 0; j < s.n; ++j) {
        const T* xr = xb + j * s.inner;
#pragma omp simd
        for (int64_t i = 0; i < w; ++i) mx[i] = xr[i] > mx[i] ? xr[i] : mx[i];
      }
      for (int64_t j = 0; j < s.n; ++j) {
        const T* xr = xb + j * s.inner;
        T* yr = yb + j * s.inner;
        for (int64_t i = 0; i < w; ++i) {
          const T e = std::exp(xr[i] - mx[i]);
          if (kind == Kind::Softmax) yr[i] = e;
          sum[i] += e;
        }
      }
      if (kind == Kind::Softmax) {
        for (int64_t i = 0; i < w; ++i) sum[i] = T(1) / sum[i];
        for (int64_t j = 0; j < s.n; ++j) {
          T* yr = yb + j * s.inner;
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) yr[i] *= sum[i];
        }
      } else {
        for (int64_t i = 0; i < w; ++i) sum[i] = std::log(sum[i]);
        for (int64_t j = 0; j < s.n; ++j) {
          const T* xr = xb + j * s.inner;
          T* yr = yb + j * s.inner;
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) yr[i] = (xr[i] - mx[i]) - sum[i];
        }
      }
    }
  });
}

template <class T>
void backward_strided(Kind kind, const T* g, const T* y, T* gi, RowShape s) {
  const int64_t blocks = (s.inner + kInnerBlock - 1) / kInnerBlock;
  parallel_for(0, s.outer * blocks, row_grain(s.n, kInnerBlock), [&](int64_t begin, int64_t end) {
    T sum[kInnerBlock];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / blocks, i0 = (t % blocks) * kInnerBlock;
      const int64_t w = std::min(kInnerBlock, s.inner - i0);
      const int64_t off = o * s.n * s.inner + i0;
      for (int64_t i = 0; i < w; ++i) sum[i] = 0;
      for (int64_t j = 0; j < s.n; ++j) {
        const T* gr = g + off + j * s.inner;
        const T* yr = y + off + j * s.inner;
        if (kind == Kind::Softmax) {
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) sum[i] += gr[i] * yr[i];
        } else {
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) sum[i] += gr[i];
        }
      }
      for (int64_t j = 0; j < s.n; ++j) {
        const T* gr = g + off + j * s.inner;
        const T* yr = y + off + j * s.inner;
        T* out = gi + off + j * s.inner;
        if (kind == Kind::Softmax) {
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) out[i] = yr[i] * (gr[i] - sum[i]);
        } else {
          for (int64_t i = 0; i < w; ++i) out[i] = gr[i] - std::exp(yr[i]) * sum[i];
        }
      }
    }
  });
}

// out has self's dtype and shape (the `same` rules); dim is valid and self floating (meta::check_softmax).
void forward_out(Kind kind, const Tensor& out, const Tensor& self, int64_t dim) {
  const char* op = name_of(kind);
  // float16/bfloat16 (as PyTorch): computed in float32, rounded once into out.
  if (self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16) {
    const Tensor wide = op::empty(self.sizes(), ScalarType::Float32, self.device());
    forward_out(kind, wide, op::cast(self, ScalarType::Float32), dim);
    return cpu::copy_out(out, wide);
  }
  if (self.numel() == 0) return;
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const RowShape s = row_shape(self, d);
  const Tensor x = self.is_contiguous() ? self : op::contiguous(self, MemoryFormat::Contiguous);
  cpu::write_contiguous(out, self, [&](const Tensor& y) {
    visit_dtype(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const T* xp = x.data<T>();
        T* yp = y.data<T>();
        if (s.inner == 1) {
          const auto& rt = cpu::softmax_rows();
          cpu::SoftmaxFwd<T> f;
          if constexpr (std::is_same_v<T, float>)
            f = kind == Kind::Softmax ? rt.softmax_f32 : rt.log_softmax_f32;
          else
            f = kind == Kind::Softmax ? rt.softmax_f64 : rt.log_softmax_f64;
          parallel_for(0, s.outer, row_grain(s.n), [&](int64_t begin, int64_t end) {
            f(xp + begin * s.n, yp + begin * s.n, end - begin, s.n);
          });
        } else {
          forward_strided<T>(kind, xp, yp, s);
        }
      }
    });
  });
}

// out has output's dtype (float32 or float64, grad_output's too) and shape: meta::check_softmax_grad.
void backward_out(Kind kind, const Tensor& gi, const Tensor& grad, const Tensor& output, int64_t dim) {
  if (output.numel() == 0) return;
  const std::string op = std::string("_") + name_of(kind) + "_backward_data";
  const int64_t d = wrap_dim(dim, output.dim(), op.c_str());
  const RowShape s = row_shape(output, d);
  const Tensor g = grad.is_contiguous() ? grad : op::contiguous(grad, MemoryFormat::Contiguous);
  const Tensor y = output.is_contiguous() ? output : op::contiguous(output, MemoryFormat::Contiguous);
  cpu::write_contiguous(gi, output, [&](const Tensor& r) {
    visit_dtype(output.dtype(), op.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const T* gp = g.data<T>();
        const T* yp = y.data<T>();
        T* op_ = r.data<T>();
        if (s.inner == 1) {
          const auto& rt = cpu::softmax_rows();
          cpu::SoftmaxBwd<T> f;
          if constexpr (std::is_same_v<T, float>)
            f = kind == Kind::Softmax ? rt.softmax_bwd_f32 : rt.log_softmax_bwd_f32;
          else
            f = kind == Kind::Softmax ? rt.softmax_bwd_f64 : rt.log_softmax_bwd_f64;
          parallel_for(0, s.outer, row_grain(s.n), [&](int64_t begin, int64_t end) {
            f(gp + begin * s.n, yp + begin * s.n, op_ + begin * s.n, end - begin, s.n);
          });
        } else {
          backward_strided<T>(kind, gp, yp, op_, s);
        }
      }
    });
  });
}

void softmax_out_cpu(const Tensor& out, const Tensor& self, int64_t dim) {
  forward_out(Kind::Softmax, out, self, dim);
}
void log_softmax_out_cpu(const Tensor& out, const Tensor& self, int64_t dim) {
  forward_out(Kind::LogSoftmax, out, self, dim);
}
void softmax_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& output, int64_t dim) {
  backward_out(Kind::Softmax, out, grad, output, dim);
}
void log_softmax_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& output, int64_t dim) {
  backward_out(Kind::LogSoftmax, out, grad, output, dim);
}

FB_REGISTER_OUT_KERNEL(op::_softmax, CPU, softmax_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_log_softmax, CPU, log_softmax_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_softmax_backward_data, CPU, softmax_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_log_softmax_backward_data, CPU, log_softmax_backward_out_cpu);

}  // namespace
}  // namespace flambeau
