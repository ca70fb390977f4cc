// CPU kernels of the nn activations and their fused backward (Note
// [Activation loops] in act_table.h): each op is one pass of the elementwise
// iterator (broadcasting, any strides, threads) over a loop compiled per ISA.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "act_table.h"
#include "cpu/low_precision.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "tensor_iterator.h"
#include "vec_table.h"

namespace flambeau {
namespace cpu {

FB_DEFINE_DISPATCH(act_table_stub);

const ActTable& act_table() { return act_table_stub.get()(); }

}  // namespace cpu

namespace {
using namespace cpu;

void check_float(const char* op, const Tensor& t, const char* what = "input") {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op, "] ", what,
                " must be a float32 or float64 tensor, got dtype ", dtype_name(t.dtype()));
}

// The cheap (memory-bound) loops split across threads only for large tensors
// (Note [Elementwise grain]); the transcendental ones at kGrainSize.
int64_t grain_of(ActOp a) {
  switch (a) {
    case kActLeakyRelu:
    case kActHardtanh:
    case kActHardswish:
    case kActHardsigmoid:
    case kActSoftsign:
    case kActThreshold:
      return kMemoryBoundGrain;
    default:
      return kGrainSize;
  }
}

bool is_half_dtype(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }

// Note [Structured kernels]: out has x's dtype and shape (the `same` rules), or is x itself in place.
// float16/bfloat16 (as PyTorch): computed in float32 on a copy, rounded once into out.
void act_forward_out(const char* op, const Tensor& out, const Tensor& x, ActOp a, double p0 = 0, double p1 = 0,
                     double p2 = 0) {
  if (is_half_dtype(out.dtype())) {
    const Tensor wide = op::cast(x, ScalarType::Float32);
    act_forward_out(op, wide, wide, a, p0, p1, p2);
    Tensor dst = out;
    op::copy_(dst, wide);
    return;
  }
  // float32 or float64: the meta step's check_floating raised for the rest (Note [Meta step]).
  const ScalarType t = out.dtype();
  const ActLoop loop = t == ScalarType::Float32 ? act_table().fwd_f32[a] : act_table().fwd_f64[a];
  TensorIterator it = TensorIterator::into(op, out, x, t);
  const double p[3] = {p0, p1, p2};
  it.for_each([&](char** d, const int64_t* s, int64_t n) { loop(d, s, n, p); }, grain_of(a));
}

// out has self's dtype and shape (`same(self)`); grad and self passed check_activation_grad, so a
// float16/bfloat16 self comes with a grad of its dtype (computed in float32, rounded once).
void act_backward_out(const char* op, const Tensor& out, const Tensor& grad, const Tensor& x, ActOp a,
                      double p0 = 0, double p1 = 0, double p2 = 0) {
  if (is_half_dtype(out.dtype())) {
    const Tensor wide = op::cast(x, ScalarType::Float32);
    act_backward_out(op, wide, op::cast(grad, ScalarType::Float32), wide, a, p0, p1, p2);
    Tensor dst = out;
    op::copy_(dst, wide);
    return;
  }
  const ScalarType t = out.dtype();
  const ActLoop loop = t == ScalarType::Float32 ? act_table().bwd_f32[a] : act_table().bwd_f64[a];
  TensorIterator it = TensorIterator::into(op, out, grad, x, t);
  const double p[3] = {p0, p1, p2};
  it.for_each([&](char** d, const int64_t* s, int64_t n) { loop(d, s, n, p); }, grain_of(a));
}

// approximate is 'none' or 'tanh': the meta step's check_gelu_approximate.
ActOp gelu_kind(std::string_view approximate) { return approximate == "tanh" ? kActGeluTanh : kActGelu; }

void threshold_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& self, const Scalar& th) {
  // bfloat16 (autocast's relu): selected on the 16-bit values, no float32 copies; the result is exact.
  if (out.dtype() == ScalarType::BFloat16 && g.dtype() == ScalarType::BFloat16) {
    TensorIterator it = TensorIterator::into("threshold_backward", out, g, self, ScalarType::BFloat16);
    const double p[1] = {th.to_double()};
    const ActLoop loop = act_table().threshold_bwd_bf16;
    it.for_each([&](char** d, const int64_t* s, int64_t n) { loop(d, s, n, p); }, grain_of(kActThreshold));
    return;
  }
  act_backward_out("threshold_backward", out, g, self, kActThreshold, th.to_double());
}
void gelu_out_cpu(const Tensor& out, const Tensor& x, std::string_view approx) {
  act_forward_out("gelu", out, x, gelu_kind(approx));
}
void gelu_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x, std::string_view approx) {
  act_backward_out("gelu_backward", out, g, x, gelu_kind(approx));
}
void silu_out_cpu(const Tensor& out, const Tensor& x) { act_forward_out("silu", out, x, kActSilu); }
void silu_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out("silu_backward", out, g, x, kActSilu);
}
void mish_out_cpu(const Tensor& out, const Tensor& x) { act_forward_out("mish", out, x, kActMish); }
void mish_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out("mish_backward", out, g, x, kActMish);
}
void leaky_relu_out_cpu(const Tensor& out, const Tensor& x, const Scalar& slope) {
  act_forward_out("leaky_relu", out, x, kActLeakyRelu, slope.to_double());
}
void leaky_relu_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& slope) {
  act_backward_out("leaky_relu_backward", out, g, x, kActLeakyRelu, slope.to_double());
}
void elu_out_cpu(const Tensor& out, const Tensor& x, const Scalar& alpha, const Scalar& scale,
                 const Scalar& input_scale) {
  act_forward_out("elu", out, x, kActElu, alpha.to_double(), scale.to_double(), input_scale.to_double());
}
void elu_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& alpha,
                          const Scalar& scale, const Scalar& input_scale) {
  act_backward_out("elu_backward", out, g, x, kActElu, alpha.to_double(), scale.to_double(),
                   input_scale.to_double());
}
void softplus_out_cpu(const Tensor& out, const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  act_forward_out("softplus", out, x, kActSoftplus, beta.to_double(), threshold.to_double());
}
void softplus_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& beta,
                               const Scalar& threshold) {
  act_backward_out("softplus_backward", out, g, x, kActSoftplus, beta.to_double(), threshold.to_double());
}
void hardtanh_out_cpu(const Tensor& out, const Tensor& x, const Scalar& lo, const Scalar& hi) {
  act_forward_out("hardtanh", out, x, kActHardtanh, lo.to_double(), hi.to_double());
}
void hardtanh_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& lo,
                               const Scalar& hi) {
  act_backward_out("hardtanh_backward", out, g, x, kActHardtanh, lo.to_double(), hi.to_double());
}
void hardswish_out_cpu(const Tensor& out, const Tensor& x) { act_forward_out("hardswish", out, x, kActHardswish); }
void hardswish_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out("hardswish_backward", out, g, x, kActHardswish);
}
void hardsigmoid_out_cpu(const Tensor& out, const Tensor& x) {
  act_forward_out("hardsigmoid", out, x, kActHardsigmoid);
}
void hardsigmoid_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out("hardsigmoid_backward", out, g, x, kActHardsigmoid);
}
void log_sigmoid_out_cpu(const Tensor& out, const Tensor& x) {
  act_forward_out("log_sigmoid", out, x, kActLogSigmoid);
}
void log_sigmoid_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out("log_sigmoid_backward", out, g, x, kActLogSigmoid);
}
void softsign_out_cpu(const Tensor& out, const Tensor& x) { act_forward_out("softsign", out, x, kActSoftsign); }
void softsign_backward_out_cpu(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out("softsign_backward", out, g, x, kActSoftsign);
}

// ---- prelu: x viewed as (outer, C, inner), one weight per channel or one for all ----
// Structured ops (Note [Structured kernels]): meta::check_prelu checked the arguments; the loops write a
// contiguous result, into out itself or a new tensor copied into it (cpu::write_contiguous).

struct PreluShape {
  int64_t outer = 1, channels = 1, inner = 1;
  bool shared = true;  // one weight for every channel
};

// float16/bfloat16 prelu (autocast lowers it, as PyTorch) runs in float32 (Note [Low-precision kernels]):
// the float32 result is computed on float32 copies and rounded once into out.
PreluShape prelu_shape(const Tensor& x, const Tensor& w) {
  PreluShape s;
  const int64_t ch = x.dim() >= 2 ? x.sizes()[1] : 1;
  s.shared = w.numel() == 1;
  if (x.dim() >= 2) {
    s.outer = x.sizes()[0];
    s.channels = ch;
    s.inner = x.numel() / std::max<int64_t>(1, s.outer * ch);
  } else {
    s.inner = x.numel();
  }
  return s;
}

template <class F>
void prelu_blocks(const PreluShape& s, const F& f) {
  const int64_t blocks = s.outer * s.channels;
  const int64_t grain = std::max<int64_t>(1, kMemoryBoundGrain / std::max<int64_t>(1, s.inner));
  parallel_for(0, blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) f(blk, blk % s.channels);
  });
}

// Runs fill(dst, operands...) into out: for float16/bfloat16, on float32 copies of the operands into a
// float32 result rounded into out; else through write_contiguous.
template <class F>
void prelu_write(const Tensor& out, std::initializer_list<const Tensor*> operands, const Tensor& g,
                 const Tensor& x, const Tensor& w, const F& fill) {
  if (cpu::is_low_precision(x.dtype())) {
    const Tensor tmp = op::empty(out.sizes(), ScalarType::Float32, out.device());
    fill(tmp, g.defined() ? cpu::to_float32(g) : g, cpu::to_float32(x), cpu::to_float32(w));
    cpu::copy_out(out, tmp);
    return;
  }
  cpu::write_contiguous(out, operands, [&](const Tensor& dst) { fill(dst, g, x, w); });
}

void prelu_fill(const Tensor& out, const Tensor&, const Tensor& self, const Tensor& weight) {
  const PreluShape s = prelu_shape(self, weight);
  const Tensor x = op::contiguous(self, MemoryFormat::Contiguous);
  const Tensor w = op::contiguous(weight, MemoryFormat::Contiguous);
  if (self.numel() == 0) return;
  visit_dtype(self.dtype(), "prelu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = x.data<T>();
      const T* wp = w.data<T>();
      T* op_ = out.data<T>();
      prelu_blocks(s, [&](int64_t blk, int64_t c) {
        const T wc = wp[s.shared ? 0 : c];
        const T* xr = xp + blk * s.inner;
        T* yr = op_ + blk * s.inner;
#pragma omp simd
        for (int64_t j = 0; j < s.inner; ++j) yr[j] = xr[j] > T(0) ? xr[j] : wc * xr[j];
      });
    }
  });
}

void prelu_out_cpu(const Tensor& out, const Tensor& self, const Tensor& weight) {
  prelu_write(out, {&self, &weight}, Tensor(), self, weight, prelu_fill);
}

void prelu_backward_input_fill(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& weight) {
  const PreluShape s = prelu_shape(self, weight);
  const Tensor x = op::contiguous(self, MemoryFormat::Contiguous);
  const Tensor g = op::contiguous(to_dtype(grad, self.dtype()), MemoryFormat::Contiguous);
  const Tensor w = op::contiguous(weight, MemoryFormat::Contiguous);
  if (self.numel() == 0) return;
  visit_dtype(self.dtype(), "prelu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = x.data<T>();
      const T* gp = g.data<T>();
      const T* wp = w.data<T>();
      T* op_ = out.data<T>();
      prelu_blocks(s, [&](int64_t blk, int64_t c) {
        const T wc = wp[s.shared ? 0 : c];
        const int64_t o = blk * s.inner;
#pragma omp simd
        for (int64_t j = 0; j < s.inner; ++j) op_[o + j] = xp[o + j] > T(0) ? gp[o + j] : wc * gp[o + j];
      });
    }
  });
}

void prelu_backward_input_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& weight) {
  prelu_write(out, {&grad, &self, &weight}, grad, self, weight, prelu_backward_input_fill);
}

void prelu_backward_weight_fill(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& weight) {
  const PreluShape s = prelu_shape(self, weight);
  const Tensor x = op::contiguous(self, MemoryFormat::Contiguous);
  const Tensor g = op::contiguous(to_dtype(grad, self.dtype()), MemoryFormat::Contiguous);
  const int64_t blocks = self.numel() == 0 ? 0 : s.outer * s.channels;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  visit_dtype(self.dtype(), "prelu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if (blocks > 0) {
        const T* xp = x.data<T>();
        const T* gp = g.data<T>();
        prelu_blocks(s, [&](int64_t blk, int64_t) {
          const int64_t o = blk * s.inner;
          double acc = 0;
#pragma omp simd reduction(+ : acc)
          for (int64_t j = 0; j < s.inner; ++j)
            acc += xp[o + j] > T(0) ? 0.0 : double(xp[o + j]) * double(gp[o + j]);
          partial[static_cast<size_t>(blk)] = acc;
        });
      }
      T* wg = out.data<T>();
      const int64_t nw = weight.numel();
      std::vector<double> sums(static_cast<size_t>(nw), 0.0);
      for (int64_t blk = 0; blk < blocks; ++blk)
        sums[static_cast<size_t>(s.shared ? 0 : blk % s.channels)] += partial[static_cast<size_t>(blk)];
      for (int64_t c = 0; c < nw; ++c) wg[c] = static_cast<T>(sums[static_cast<size_t>(c)]);
    }
  });
}

void prelu_backward_weight_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& weight) {
  prelu_write(out, {&grad, &self, &weight}, grad, self, weight, prelu_backward_weight_fill);
}

// ---- glu: the halves a, b of dim; out = a * sigmoid(b) ----
// Structured ops: meta::check_glu checked self and dim (and glu_backward's grad_output shape).

struct GluShape {
  int64_t outer = 1, half = 1, inner = 1, dim = 0;
};

GluShape glu_shape(const char* op, const Tensor& x, int64_t dim) {
  GluShape s;
  s.dim = wrap_dim(dim, x.dim(), op);
  s.half = x.sizes()[s.dim] / 2;
  for (int64_t i = 0; i < s.dim; ++i) s.outer *= x.sizes()[i];
  for (int64_t i = s.dim + 1; i < x.dim(); ++i) s.inner *= x.sizes()[i];
  return s;
}

void glu_out_cpu(const Tensor& out, const Tensor& self, int64_t dim) {
  const GluShape s = glu_shape("glu", self, dim);
  if (out.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype()))  // Note [Low-precision kernels]
    return cpu::copy_out(out, op::glu(cpu::to_float32(self), dim));
  cpu::write_contiguous(out, self, [&](const Tensor& dst) {
    const Tensor x = op::contiguous(self, MemoryFormat::Contiguous);
    const int64_t block = s.half * s.inner;
    const ActLoop loop =
        self.dtype() == ScalarType::Float32 ? act_table().fwd_f32[kActGlu] : act_table().fwd_f64[kActGlu];
    const int64_t es = static_cast<int64_t>(itemsize(self.dtype()));
    char* xp = static_cast<char*>(x.data_ptr());
    char* yp = static_cast<char*>(dst.data_ptr());
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, block));
    parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
      const int64_t strides[3] = {es, es, es};
      for (int64_t o = b; o < e; ++o) {
        char* ptrs[3] = {yp + o * block * es, xp + o * 2 * block * es, xp + (o * 2 + 1) * block * es};
        loop(ptrs, strides, block, nullptr);
      }
    });
  });
}

void glu_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, int64_t dim) {
  const GluShape s = glu_shape("glu_backward", self, dim);
  if (self.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype())) {
    // PyTorch's: sigmoid(b) rounded to the 16-bit dtype first, then s * grad and (1 - s) s a grad (in
    // float32), each rounded once.
    const Tensor a = op::slice(self, s.dim, 0, s.half, 1),
                 sg = op::sigmoid(op::slice(self, s.dim, s.half, 2 * s.half, 1));
    const Tensor g = to_dtype(grad, self.dtype()), s32 = cpu::to_float32(sg);
    const Tensor one = scalar_tensor(1.0, ScalarType::Float32);
    const Tensor gb =
        op::mul(op::mul(op::mul(op::sub(one, s32, 1), s32), cpu::to_float32(a)), cpu::to_float32(g));
    return cpu::copy_out(out, op::cat({op::mul(sg, g), to_dtype(gb, self.dtype())}, s.dim));
  }
  cpu::write_contiguous(out, {&grad, &self}, [&](const Tensor& dst) {
    const Tensor x = op::contiguous(self, MemoryFormat::Contiguous);
    const Tensor g = op::contiguous(to_dtype(grad, self.dtype()), MemoryFormat::Contiguous);
    const int64_t block = s.half * s.inner;
    visit_dtype(self.dtype(), "glu_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* xp = x.data<T>();
        const T* gp = g.data<T>();
        T* rp = dst.data<T>();
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, block));
        parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) {
            const T* a = xp + o * 2 * block;
            const T* bb = a + block;
            const T* go = gp + o * block;
            T* ga = rp + o * 2 * block;
            T* gb = ga + block;
            for (int64_t j = 0; j < block; ++j) {
              const T sg = T(1) / (T(1) + std::exp(-bb[j]));
              ga[j] = go[j] * sg;
              gb[j] = go[j] * a[j] * sg * (T(1) - sg);
            }
          }
        });
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::threshold_backward, CPU, threshold_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::gelu, CPU, gelu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::gelu_backward, CPU, gelu_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::silu, CPU, silu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::silu_backward, CPU, silu_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::mish, CPU, mish_out_cpu);
FB_REGISTER_OUT_KERNEL(op::mish_backward, CPU, mish_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::leaky_relu, CPU, leaky_relu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::leaky_relu_backward, CPU, leaky_relu_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::elu, CPU, elu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::elu_backward, CPU, elu_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::softplus, CPU, softplus_out_cpu);
FB_REGISTER_OUT_KERNEL(op::softplus_backward, CPU, softplus_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::hardtanh, CPU, hardtanh_out_cpu);
FB_REGISTER_OUT_KERNEL(op::hardtanh_backward, CPU, hardtanh_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::hardswish, CPU, hardswish_out_cpu);
FB_REGISTER_OUT_KERNEL(op::hardswish_backward, CPU, hardswish_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::hardsigmoid, CPU, hardsigmoid_out_cpu);
FB_REGISTER_OUT_KERNEL(op::hardsigmoid_backward, CPU, hardsigmoid_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::log_sigmoid, CPU, log_sigmoid_out_cpu);
FB_REGISTER_OUT_KERNEL(op::log_sigmoid_backward, CPU, log_sigmoid_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::softsign, CPU, softsign_out_cpu);
FB_REGISTER_OUT_KERNEL(op::softsign_backward, CPU, softsign_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::prelu, CPU, prelu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_prelu_backward_input, CPU, prelu_backward_input_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_prelu_backward_weight, CPU, prelu_backward_weight_out_cpu);
FB_REGISTER_OUT_KERNEL(op::glu, CPU, glu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::glu_backward, CPU, glu_backward_out_cpu);

}  // namespace
}  // namespace flambeau
