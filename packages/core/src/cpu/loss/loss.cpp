// CPU kernels of the nn losses, forward and backward:
//  * pointwise losses (binary_cross_entropy[_with_logits], mse, l1, smooth_l1,
//    huber): one pass over contiguous operands, the reduction fused in
//    (fixed blocks summed in double, in order: the result does not depend on
//    the thread count);
//  * cross entropy: one pass per row of (N, C, d1, ...) logits computes the
//    log-sum-exp and the loss (class indices with weights, ignore_index and
//    label smoothing, or class probabilities); backward is one pass per row
//    from the saved log-sum-exp;
//  * nll_loss over (N, C, d1, ...) log-probabilities.
// All are structured (Note [Structured kernels]): out kernels writing the outputs the meta step
// allocated (a 0-d one for a reduced loss; _cross_entropy's loss and log-sum-exp), through contiguous
// buffers when an output is strided or shares memory with an input (cpu::write_contiguous_outs).
// Every class index is checked before it is used to read (IndexError naming
// the target and the class count).
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

#include "cpu/elementwise/act_table.h"
#include "cpu/low_precision.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {
using namespace cpu;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

bool present(const std::optional<Tensor>& t) { return t && t->defined(); }

Tensor dense(const Tensor& t, IntArrayRef shape, ScalarType dtype) {
  Tensor r = to_dtype(t, dtype);
  if (!std::ranges::equal(r.sizes(), shape)) r = op::expand(r, shape);
  return op::contiguous(r, MemoryFormat::Contiguous);
}

// Note [16-bit losses]
// A float16/bfloat16 loss runs the float32 kernel on float32 copies of its operands and rounds once, as
// PyTorch's CPU kernels compute a 16-bit loss element in float32 (Note [Low-precision kernels]). PyTorch
// reduces a pointwise loss by summing its 16-bit loss tensor (in float32, rounded once; a mean divides that
// float32 sum by the count), so a reduced pointwise loss rounds each element first, then its float32 sum. The
// class losses (cross entropy, nll) and every gradient round the float32 result once. PyTorch rounds some
// intermediates of its own to 16 bits as well (mse_loss's difference, bfloat16 huber_loss's), where the two
// differ by at most a unit or two of the last place.
using cpu::to_float32;
bool is_half(const Tensor& t) { return cpu::is_low_precision(t.dtype()); }
// A constant of PyTorch's 16-bit arithmetic (its scalar_t): the value rounded to dt.
Tensor h(double v, ScalarType dt) { return scalar_tensor(v, dt); }
Tensor as(const Tensor& t, const Tensor& like) { return to_dtype(t, like.dtype()); }
std::optional<Tensor> as(const std::optional<Tensor>& t, const Tensor& like) {
  return present(t) ? std::optional<Tensor>(as(*t, like)) : std::nullopt;
}
// g / count in float32, rounded once: PyTorch's grad_input.div_(numel) of a mean's gradient.
Tensor div_count(const Tensor& g, int64_t count) {
  return to_dtype(op::div(to_float32(g), scalar_tensor(static_cast<double>(count), ScalarType::Float32)),
                  g.dtype());
}
// A pointwise loss of 16-bit operands from its float32 elements `loss` (reduction none).
void write_half_loss(const Tensor& out, const Tensor& loss, int64_t reduction) {
  if (reduction == kNone) return copy_out(out, loss);
  const Tensor rounded = to_float32(to_dtype(loss, out.dtype()));
  copy_out(out, reduction == kMean ? op::mean(rounded, std::nullopt, false, std::nullopt)
                                   : op::sum(rounded, std::nullopt, false, std::nullopt));
}

// ---- pointwise losses ----

struct Pointwise {
  Tensor x, t, w, pw;  // contiguous, all of `shape` (w, pw undefined when absent)
  Shape shape;
  ScalarType dtype;
  int64_t numel = 0;
};

Pointwise prepare(const char* op, const Tensor& self, const Tensor& target,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                  bool same_shape) {
  // The arguments passed the meta step's check_pointwise_loss (Note [Meta step]).
  Pointwise p;
  p.dtype = self.dtype();
  if (same_shape)
    p.shape.assign(self.sizes().begin(), self.sizes().end());
  else
    p.shape = broadcast_shapes(self.sizes(), target.sizes(), op);
  p.x = dense(self, p.shape, p.dtype);
  p.t = dense(target, p.shape, p.dtype);
  if (present(weight)) p.w = dense(*weight, p.shape, p.dtype);
  if (present(pos_weight)) p.pw = dense(*pos_weight, p.shape, p.dtype);
  p.numel = p.x.numel();
  return p;
}

constexpr int64_t kLossBlock = 16384;

// Runs f(x, t, w, pw) over the elements; reduction none writes each value to
// `out` (if given), otherwise returns the sum (in double). With an `aux`
// (a callable (x, a, len) writing a[j] for x[0, len)), each block first fills a
// buffer from its x and f gets that element's value as a fifth argument: a
// transcendental of x computed by a vectorised table loop instead of per
// element by the C library (Note [Logits losses]).
struct NoAux {};
// The make_aux of pointwise_forward / pointwise_backward for every loss but the logits one.
struct NoMakeAux {
  template <class Tag>
  NoAux operator()(Tag) const {
    return {};
  }
};

template <class T, class F, class Aux = NoAux>
double pointwise_run(const Pointwise& p, T* out, const F& f, const Aux& aux = {}) {
  constexpr bool kAux = !std::is_same_v<Aux, NoAux>;
  const int64_t n = p.numel;
  const T* x = p.x.template data<T>();
  const T* t = p.t.template data<T>();
  const T* w = p.w.defined() ? p.w.template data<T>() : nullptr;
  const T* pw = p.pw.defined() ? p.pw.template data<T>() : nullptr;
  const int64_t blocks = (n + kLossBlock - 1) / kLossBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  auto body = [&]<bool HW, bool HPW>(int64_t blk) {
    const int64_t b = blk * kLossBlock, e = std::min(n, b + kLossBlock);
    std::vector<T> abuf;
    const T* a = nullptr;
    if constexpr (kAux) {
      abuf.resize(static_cast<size_t>(e - b));
      aux(x + b, abuf.data(), e - b);
      a = abuf.data();  // a[i - b] for i in [b, e)
    }
    auto value = [&](int64_t i) {
      if constexpr (kAux)
        return f(x[i], t[i], HW ? w[i] : T(1), HPW ? pw[i] : T(1), a[i - b]);
      else
        return f(x[i], t[i], HW ? w[i] : T(1), HPW ? pw[i] : T(1));
    };
    if (out) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) out[i] = value(i);
    } else {
      double acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = b; i < e; ++i) acc += value(i);
      partial[static_cast<size_t>(blk)] = acc;
    }
  };
  parallel_for(0, blocks, std::max<int64_t>(1, kGrainSize / kLossBlock), [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      if (w && pw)
        body.template operator()<true, true>(blk);
      else if (w)
        body.template operator()<true, false>(blk);
      else if (pw)
        body.template operator()<false, true>(blk);
      else
        body.template operator()<false, false>(blk);
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

// make_aux(tag): the aux of pointwise_run for the dtype of `tag`, or NoAux{}.
// out: p's shape (none) or 0-d, p's dtype (the meta step's `loss` rule).
template <class F, class MakeAux = NoMakeAux>
void pointwise_forward(const Tensor& out, const char* op, const Pointwise& p, int64_t reduction, const F& f,
                       MakeAux make_aux = {}) {
  visit_dtype(p.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if (reduction == kNone) {
        write_contiguous_outs<1>({out}, {&p.x, &p.t, &p.w, &p.pw}, [&](const std::array<Tensor, 1>& outs) {
          const Tensor& dst = outs[0];
          pointwise_run<T>(
              p, dst.data<T>(), [&](T x, T t, T w, T pw, auto... a) { return f(x, t, w, pw, a...); },
              make_aux(tag));
        });
      } else {
        double s = pointwise_run<T>(
            p, nullptr, [&](T x, T t, T w, T pw, auto... a) { return f(x, t, w, pw, a...); }, make_aux(tag));
        if (reduction == kMean)
          s /= static_cast<double>(p.numel);  // 0 / 0 = nan for an empty input, as PyTorch
        out.data<T>()[0] = static_cast<T>(s);
      }
    }
  });
}

// grad_input = grad * scale * df(x, t, w, pw), grad of the output's shape (none) or 0-d; out of
// p's shape and dtype.
template <class F, class MakeAux = NoMakeAux>
void pointwise_backward(const Tensor& out, const char* op, const Tensor& grad, const Pointwise& p,
                        int64_t reduction, const F& df, MakeAux make_aux = {}) {
  if (p.numel == 0) return;
  const Tensor g = op::contiguous(to_dtype(grad, p.dtype), MemoryFormat::Contiguous);
  visit_dtype(p.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* gp = g.data<T>();
      write_contiguous_outs<1>({out}, {&p.x, &p.t, &p.w, &p.pw, &g}, [&](const std::array<Tensor, 1>& outs) {
        const Tensor& dst = outs[0];
        T* o = dst.data<T>();
        if (reduction == kNone) {
          // df at each element, then times the matching gradient.
          pointwise_run<T>(
              p, o, [&](T x, T t, T w, T pw, auto... a) { return df(x, t, w, pw, a...); }, make_aux(tag));
          const int64_t n = p.numel;
          parallel_for(0, n, kMemoryBoundGrain, [&](int64_t b, int64_t e) {
#pragma omp simd
            for (int64_t i = b; i < e; ++i) o[i] *= gp[i];
          });
        } else {
          const T s = reduction == kMean
                          ? static_cast<T>(static_cast<double>(gp[0]) / static_cast<double>(p.numel))
                          : gp[0];
          pointwise_run<T>(
              p, o, [&](T x, T t, T w, T pw, auto... a) { return s * df(x, t, w, pw, a...); }, make_aux(tag));
        }
      });
    }
  });
}

// Note [Logits losses]
// binary_cross_entropy_with_logits needs log1p(exp(-|x|)) + max(-x, 0) =
// -log_sigmoid(x) per element (forward) and sigmoid(x) (backward). Computed
// per element with the C library's exp and log1p they cost more than all the
// rest of the loss (about 30 ns an element in float32); instead each block
// first runs the activation table's log_sigmoid loops over x (vectorised
// polynomials in float32, about 1 ulp; the C library in float64, so float64
// values are unchanged): log_sigmoid's forward at x, and its backward at -x
// with a unit gradient, which is sigmoid(x) (1 / (1 + e) for x > 0, e / (1 + e)
// otherwise, with e = exp(-|x|), as before).
template <class T>
auto act_aux(ActOp which, bool backward_at_neg) {
  return [which, backward_at_neg](const T* x, T* a, int64_t len) {
    constexpr bool f32 = std::is_same_v<T, float>;
    const ActTable& at = act_table();
    const double params[3] = {0, 0, 0};
    if (!backward_at_neg) {
      char* data[2] = {reinterpret_cast<char*>(a), const_cast<char*>(reinterpret_cast<const char*>(x))};
      const int64_t strides[2] = {sizeof(T), sizeof(T)};
      (f32 ? at.fwd_f32 : at.fwd_f64)[which](data, strides, len, params);
      return;
    }
    for (int64_t j = 0; j < len; ++j) a[j] = -x[j];  // in place: the loop reads a[j] before writing it
    const T one = T(1);
    char* data[3] = {reinterpret_cast<char*>(a), const_cast<char*>(reinterpret_cast<const char*>(&one)),
                     reinterpret_cast<char*>(a)};
    const int64_t strides[3] = {sizeof(T), 0, sizeof(T)};
    (f32 ? at.bwd_f32 : at.bwd_f64)[which](data, strides, len, params);
  };
}

// binary_cross_entropy: PyTorch clamps each log at -100; the gradient's
// denominator at 1e-12.
void check_probabilities(const Pointwise& p) {
  bool bad = false;
  visit_dtype(p.dtype, "binary_cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = p.x.data<T>();
      int64_t count = 0;
#pragma omp simd reduction(+ : count)
      for (int64_t i = 0; i < p.numel; ++i) count += !(x[i] >= T(0) && x[i] <= T(1));
      bad = count > 0;
    }
  });
  FB_CHECK_VALUE(!bad, "[binary_cross_entropy] all elements of input should be between 0 and 1");
}

void bce_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target,
                 const std::optional<Tensor>& weight, int64_t reduction) {
  if (is_half(self)) {
    // Each step rounds to the 16-bit dtype, as PyTorch's kernel computes in scalar_t.
    check_probabilities(
        prepare("binary_cross_entropy", to_float32(self), target, std::nullopt, std::nullopt, true));
    const ScalarType dt = self.dtype();
    const Tensor t = as(target, self);
    const Tensor lx = op::maximum(op::log(self), h(-100, dt));
    const Tensor l1x = op::maximum(op::log1p(op::neg(self)), h(-100, dt));
    Tensor loss = op::sub(op::mul(op::sub(t, h(1, dt), 1), l1x), op::mul(t, lx), 1);
    if (present(weight)) loss = op::mul(loss, as(*weight, self));
    return write_half_loss(out, loss, reduction);
  }
  const Pointwise p = prepare("binary_cross_entropy", self, target, weight, std::nullopt, true);
  check_probabilities(p);
  pointwise_forward(out, "binary_cross_entropy", p, reduction, [](auto x, auto t, auto w, auto) {
    using T = decltype(x);
    const T lx = std::max(std::log(x), T(-100));
    const T l1x = std::max(std::log1p(-x), T(-100));
    return w * ((t - T(1)) * l1x - t * lx);
  });
}
void bce_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& target,
                          const std::optional<Tensor>& weight, int64_t reduction) {
  if (is_half(self)) {  // grad * (x - t) / max((1 - x) x, eps), each step rounded (PyTorch's kernel)
    const ScalarType dt = self.dtype();
    const Tensor den = op::maximum(op::mul(op::sub(h(1, dt), self, 1), self), h(1e-12, dt));
    Tensor gi = op::div(op::mul(as(grad, self), op::sub(self, as(target, self), 1)), den);
    if (present(weight)) gi = op::mul(gi, as(*weight, self));
    return copy_out(out, reduction == kMean ? div_count(gi, gi.numel()) : gi);
  }
  const Pointwise p = prepare("binary_cross_entropy_backward", self, target, weight, std::nullopt, true);
  pointwise_backward(out, "binary_cross_entropy_backward", grad, p, reduction,
                     [](auto x, auto t, auto w, auto) {
                       using T = decltype(x);
                       return w * (x - t) / std::max((T(1) - x) * x, T(1e-12));
                     });
}

// With logits: (1 - t) x + lw (log1p(exp(-|x|)) + max(-x, 0)), lw = (pw - 1) t + 1.
void bce_logits_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target,
                        const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight,
                        int64_t reduction) {
  if (is_half(self)) {
    // PyTorch's composition in the 16-bit dtype: (1 - t) x - log_sigmoid(x) ((pw - 1) t + 1), times w.
    const ScalarType dt = self.dtype();
    const Tensor t = as(target, self);
    Tensor ls = op::log_sigmoid(self);
    if (present(pos_weight))
      ls = op::mul(ls, op::add(op::mul(op::sub(as(*pos_weight, self), h(1, dt), 1), t), h(1, dt), 1));
    Tensor loss = op::sub(op::mul(op::sub(h(1, dt), t, 1), self), ls, 1);
    if (present(weight)) loss = op::mul(loss, as(*weight, self));
    return write_half_loss(out, loss, reduction);
  }
  const Pointwise p = prepare("binary_cross_entropy_with_logits", self, target, weight, pos_weight, true);
  pointwise_forward(
      out, "binary_cross_entropy_with_logits", p, reduction,
      [](auto x, auto t, auto w, auto pw, auto log_sig) {
        using T = decltype(x);
        const T lw = (pw - T(1)) * t + T(1);
        // -log_sig = log1p(exp(-|x|)) + max(-x, 0), exactly (the negation is exact).
        return w * ((T(1) - t) * x - lw * log_sig);
      },
      [](auto tag) { return act_aux<typename decltype(tag)::type>(kActLogSigmoid, false); });
}
void bce_logits_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self,
                                 const Tensor& target, const std::optional<Tensor>& weight,
                                 const std::optional<Tensor>& pos_weight, int64_t reduction) {
  if (is_half(self)) {  // PyTorch's: ((pw t + 1 - t) sigmoid(x) - pw t) grad w, or (sigmoid(x) - t) grad w
    const ScalarType dt = self.dtype();
    const Tensor t = as(target, self);
    Tensor gi;
    if (present(pos_weight)) {
      const Tensor pt = op::mul(as(*pos_weight, self), t);
      gi = op::sub(op::mul(op::sub(op::add(pt, h(1, dt), 1), t, 1), op::sigmoid(self)), pt, 1);
    } else {
      gi = op::sub(op::sigmoid(self), t, 1);
    }
    gi = op::mul(gi, as(grad, self));
    if (present(weight)) gi = op::mul(gi, as(*weight, self));
    return copy_out(out, reduction == kMean ? div_count(gi, gi.numel()) : gi);
  }
  const Pointwise p =
      prepare("binary_cross_entropy_with_logits_backward", self, target, weight, pos_weight, true);
  pointwise_backward(
      out, "binary_cross_entropy_with_logits_backward", grad, p, reduction,
      [](auto x, auto t, auto w, auto pw, auto sg) {
        (void)x;
        using T = decltype(x);
        const T pt = pw * t;
        return w * ((pt + T(1) - t) * sg - pt);
      },
      [](auto tag) { return act_aux<typename decltype(tag)::type>(kActLogSigmoid, true); });
}

void mse_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target, int64_t reduction) {
  if (is_half(self)) {  // (x - t) rounded, squared and rounded again, as PyTorch's 16-bit kernel
    const Tensor d = op::sub(self, as(target, self), 1);
    return write_half_loss(out, op::mul(d, d), reduction);
  }
  const Pointwise p = prepare("mse_loss", self, target, std::nullopt, std::nullopt, false);
  pointwise_forward(out, "mse_loss", p, reduction,
                    [](auto x, auto t, auto, auto) { return (x - t) * (x - t); });
}
void mse_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& target,
                          int64_t reduction) {
  if (is_half(self)) {  // PyTorch's norm * (x - t) * grad in the 16-bit dtype, norm = 2 (/ count) rounded
    const Tensor d = op::sub(self, as(target, self), 1);
    const double norm = reduction == kMean ? 2.0 / static_cast<double>(d.numel()) : 2.0;
    return copy_out(out, op::mul(op::mul(h(norm, self.dtype()), d), as(grad, self)));
  }
  const Pointwise p = prepare("mse_loss_backward", self, target, std::nullopt, std::nullopt, false);
  pointwise_backward(out, "mse_loss_backward", grad, p, reduction, [](auto x, auto t, auto, auto) {
    using T = decltype(x);
    return T(2) * (x - t);
  });
}

void l1_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target, int64_t reduction) {
  if (is_half(self))
    return write_half_loss(out, op::l1_loss(to_float32(self), to_float32(target), kNone), reduction);
  const Pointwise p = prepare("l1_loss", self, target, std::nullopt, std::nullopt, false);
  pointwise_forward(out, "l1_loss", p, reduction, [](auto x, auto t, auto, auto) {
    const auto d = x - t;
    return d < 0 ? -d : d;
  });
}
void l1_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& target,
                         int64_t reduction) {
  if (is_half(self))
    return copy_out(out,
                    op::l1_loss_backward(to_float32(grad), to_float32(self), to_float32(target), reduction));
  const Pointwise p = prepare("l1_loss_backward", self, target, std::nullopt, std::nullopt, false);
  pointwise_backward(out, "l1_loss_backward", grad, p, reduction, [](auto x, auto t, auto, auto) {
    using T = decltype(x);
    const T d = x - t;
    return d != d ? d : T((d > T(0)) - (d < T(0)));
  });
}

void smooth_l1_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target, int64_t reduction,
                       double beta) {
  if (is_half(self)) {  // PyTorch's float16 kernel rounds x - t first; its bfloat16 one does not
    const Tensor x =
        to_float32(self.dtype() == ScalarType::Float16 ? op::sub(self, as(target, self), 1) : self);
    const Tensor t = self.dtype() == ScalarType::Float16 ? h(0, ScalarType::Float32) : to_float32(target);
    return write_half_loss(out, op::smooth_l1_loss(x, t, kNone, beta), reduction);
  }
  const Pointwise p = prepare("smooth_l1_loss", self, target, std::nullopt, std::nullopt, false);
  pointwise_forward(out, "smooth_l1_loss", p, reduction, [beta](auto x, auto t, auto, auto) {
    using T = decltype(x);
    const T b = static_cast<T>(beta);
    const T d = x - t;
    const T ad = d < T(0) ? -d : d;
    return ad < b ? T(0.5) * d * d / b : ad - T(0.5) * b;
  });
}
void smooth_l1_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self,
                                const Tensor& target, int64_t reduction, double beta) {
  if (is_half(self))
    return copy_out(out, op::smooth_l1_loss_backward(to_float32(grad), to_float32(self), to_float32(target),
                                                     reduction, beta));
  const Pointwise p = prepare("smooth_l1_loss_backward", self, target, std::nullopt, std::nullopt, false);
  pointwise_backward(out, "smooth_l1_loss_backward", grad, p, reduction, [beta](auto x, auto t, auto, auto) {
    using T = decltype(x);
    const T b = static_cast<T>(beta);
    const T d = x - t;
    return d <= -b ? T(-1) : (d >= b ? T(1) : d / b);
  });
}

void huber_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target, int64_t reduction,
                   double delta) {
  if (is_half(self)) {  // PyTorch's bfloat16 kernel rounds x - t first; its float16 one does not
    const Tensor x =
        to_float32(self.dtype() == ScalarType::BFloat16 ? op::sub(self, as(target, self), 1) : self);
    const Tensor t = self.dtype() == ScalarType::BFloat16 ? h(0, ScalarType::Float32) : to_float32(target);
    return write_half_loss(out, op::huber_loss(x, t, kNone, delta), reduction);
  }
  const Pointwise p = prepare("huber_loss", self, target, std::nullopt, std::nullopt, false);
  pointwise_forward(out, "huber_loss", p, reduction, [delta](auto x, auto t, auto, auto) {
    using T = decltype(x);
    const T dl = static_cast<T>(delta);
    const T d = x - t;
    const T ad = d < T(0) ? -d : d;
    return ad < dl ? T(0.5) * d * d : dl * (ad - T(0.5) * dl);
  });
}
void huber_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self, const Tensor& target,
                            int64_t reduction, double delta) {
  if (is_half(self)) {  // PyTorch's norm * clamp(x - t, -delta, delta) * grad, each step rounded
    const Tensor d = op::clamp(op::sub(self, as(target, self), 1), Scalar(-delta), Scalar(delta));
    const double norm = reduction == kMean ? 1.0 / static_cast<double>(d.numel()) : 1.0;
    return copy_out(out, op::mul(op::mul(h(norm, self.dtype()), d), as(grad, self)));
  }
  const Pointwise p = prepare("huber_loss_backward", self, target, std::nullopt, std::nullopt, false);
  pointwise_backward(out, "huber_loss_backward", grad, p, reduction, [delta](auto x, auto t, auto, auto) {
    using T = decltype(x);
    const T dl = static_cast<T>(delta);
    const T d = x - t;
    return d < -dl ? -dl : (d > dl ? dl : d);
  });
}

// ---- cross entropy and nll_loss over (N, C, d1, ...) ----

struct ClassShape {
  int64_t outer = 1, classes = 1, inner = 1, rows = 0;
  bool probs = false;  // target holds class probabilities (input's shape)
  Shape out_shape;     // the unreduced loss: input's shape without the class dim
  Tensor x, target, weight;
};

// The arguments passed the meta step's check_class_loss (Note [Meta step]).
ClassShape class_check(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                       bool allow_probs) {
  ClassShape s;
  const meta::ClassLossRows r = meta::class_loss_rows(self);
  s.outer = r.outer, s.classes = r.classes, s.inner = r.inner, s.rows = r.rows, s.out_shape = r.out_shape;
  if (is_floating(target.dtype()) && allow_probs && target.dim() == self.dim()) {
    s.probs = true;
    s.target = op::contiguous(to_dtype(target, self.dtype()), MemoryFormat::Contiguous);
  } else {
    s.target = op::contiguous(target, MemoryFormat::Contiguous);
  }
  if (present(weight)) s.weight = op::contiguous(to_dtype(*weight, self.dtype()), MemoryFormat::Contiguous);
  s.x = op::contiguous(self, MemoryFormat::Contiguous);
  return s;
}

// Class indices as they are, class probabilities in float32 (Note [16-bit losses]).
Tensor class_target(const Tensor& target) {
  return is_floating(target.dtype()) ? to_float32(target) : target;
}

inline void check_class(const char* op, int64_t k, int64_t classes) {
  if (k < 0 || k >= classes)
    throw IndexError(detail::cat_str(op, ": target ", k, " is out of bounds for ", classes, " classes"));
}

int64_t row_grain(int64_t classes) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, classes));
}

template <class T>
T row_max(const T* xr, int64_t n, int64_t stride) {
  T mx = -std::numeric_limits<T>::infinity();
  if (stride == 1) {
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
  } else {
    for (int64_t j = 0; j < n; ++j) mx = xr[j * stride] > mx ? xr[j * stride] : mx;
  }
  // A NaN anywhere makes the row NaN (as log_softmax); all -inf: avoid -inf - -inf.
  return std::isinf(mx) && mx < 0 ? T(0) : mx;
}

template <class T>
T row_lse(const T* xr, int64_t n, int64_t stride) {
  const T mx = row_max(xr, n, stride);
  double s = 0;
  if (stride == 1) {
    s = std::is_same_v<T, float>
            ? act_table().sum_exp_f32(reinterpret_cast<const float*>(xr), n, float(mx))
            : act_table().sum_exp_f64(reinterpret_cast<const double*>(xr), n, double(mx));
  } else {
    for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(xr[j * stride] - mx));
  }
  return static_cast<T>(static_cast<double>(mx) + std::log(s));
}

// Sum of the per-row values in order (deterministic).
double ordered_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// out: the loss (the rows' shape, or 0-d when reduced); lse: (rows,); both of self's dtype.
void cross_entropy_out_cpu(const Tensor& out, const Tensor& lse_out, const Tensor& self, const Tensor& target,
                           const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                           double label_smoothing) {
  const char* op = "cross_entropy";
  if (is_half(self)) {
    const auto [loss, lse] = op::_cross_entropy(to_float32(self), class_target(target), to_float32(weight),
                                                reduction, ignore_index, label_smoothing);
    copy_out(out, loss);
    return copy_out(lse_out, lse);
  }
  const ClassShape s = class_check(self, target, weight, true);
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      write_contiguous_outs<2>({out, lse_out}, {&s.x, &s.target, &s.weight}, [&](const auto& dst) {
        const Tensor& lse = dst[1];
        const int64_t C = s.classes, inner = s.inner;
        const T* x = s.x.data<T>();
        const T* w = s.weight.defined() ? s.weight.data<T>() : nullptr;
        const double eps = label_smoothing;
        double wsum = static_cast<double>(C);
        if (w) {
          wsum = 0;
          for (int64_t c = 0; c < C; ++c) wsum += w[c];
        }
        T* lp = lse.data<T>();
        std::vector<double> loss(static_cast<size_t>(s.rows)), rw(static_cast<size_t>(s.rows));
        parallel_for(0, s.rows, row_grain(C), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const T* xr = x + (r / inner) * C * inner + r % inner;
            double l = 0, weight_r = 1;
            if (s.probs) {
              const T* yr = s.target.data<T>() + (r / inner) * C * inner + r % inner;
              const T m = row_lse(xr, C, inner);
              lp[r] = m;
              double S = 0, Sx = 0;
              for (int64_t c = 0; c < C; ++c) {
                const double y =
                    static_cast<double>(yr[c * inner]) * (1 - eps) + eps / static_cast<double>(C);
                const double wy = (w ? static_cast<double>(w[c]) : 1.0) * y;
                S += wy;
                Sx += wy * static_cast<double>(xr[c * inner]);
              }
              l = S * static_cast<double>(m) - Sx;
            } else {
              const int64_t k = s.target.data<int64_t>()[r];
              if (k == ignore_index) {
                lp[r] = T(0);
                loss[static_cast<size_t>(r)] = 0;
                rw[static_cast<size_t>(r)] = 0;
                continue;
              }
              check_class(op, k, C);
              const T m = row_lse(xr, C, inner);
              lp[r] = m;
              weight_r = w ? static_cast<double>(w[k]) : 1.0;
              l = (1 - eps) * weight_r * (static_cast<double>(m) - static_cast<double>(xr[k * inner]));
              if (eps > 0) {
                double wx = 0;
                for (int64_t c = 0; c < C; ++c) wx += (w ? static_cast<double>(w[c]) : 1.0) * xr[c * inner];
                l += eps / static_cast<double>(C) * (wsum * static_cast<double>(m) - wx);
              }
            }
            loss[static_cast<size_t>(r)] = l;
            rw[static_cast<size_t>(r)] = weight_r;
          }
        });
        T* o = dst[0].template data<T>();
        if (reduction == kNone) {
          for (int64_t r = 0; r < s.rows; ++r) o[r] = static_cast<T>(loss[static_cast<size_t>(r)]);
        } else {
          double total = ordered_sum(loss);
          if (reduction == kMean) total /= ordered_sum(rw);
          o[0] = static_cast<T>(total);
        }
      });
    }
  });
}

// The gradient's scale per row: grad[r] (none), grad / total weight (mean) or grad (sum).
template <class T>
std::vector<double> row_scales(const char* op, const Tensor& grad, const ClassShape& s, int64_t reduction,
                               int64_t ignore_index, const T* w) {
  // grad passed the meta step's check_class_loss_grad.
  std::vector<double> sc(static_cast<size_t>(s.rows));
  const Tensor g = op::contiguous(to_dtype(grad, s.x.dtype()), MemoryFormat::Contiguous);
  if (reduction == kNone) {
    const T* gp = g.data<T>();
    for (int64_t r = 0; r < s.rows; ++r) sc[static_cast<size_t>(r)] = static_cast<double>(gp[r]);
    return sc;
  }
  double v = static_cast<double>(g.data<T>()[0]);
  if (reduction == kMean) {
    double total = 0;
    if (s.probs) {
      total = static_cast<double>(s.rows);
    } else {
      const int64_t* tg = s.target.data<int64_t>();
      for (int64_t r = 0; r < s.rows; ++r) {
        const int64_t k = tg[r];
        if (k == ignore_index) continue;
        check_class(op, k, s.classes);
        total += w ? static_cast<double>(w[k]) : 1.0;
      }
    }
    v /= total;
  }
  std::fill(sc.begin(), sc.end(), v);
  return sc;
}

void cross_entropy_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self,
                                    const Tensor& target, const Tensor& lse,
                                    const std::optional<Tensor>& weight, int64_t reduction,
                                    int64_t ignore_index, double label_smoothing) {
  const char* op = "cross_entropy_backward";
  if (is_half(self)) {
    // The float32 log-sum-exp again: the saved one was rounded to 16 bits.
    const Tensor x = to_float32(self), t = class_target(target);
    const std::optional<Tensor> w = to_float32(weight);
    const Tensor lse32 = std::get<1>(op::_cross_entropy(x, t, w, kNone, ignore_index, label_smoothing));
    return copy_out(out, op::_cross_entropy_backward(to_float32(grad), x, t, lse32, w, reduction,
                                                     ignore_index, label_smoothing));
  }
  const ClassShape s = class_check(self, target, weight, true);
  if (self.numel() == 0) return;
  const Tensor lsec = op::contiguous(lse, MemoryFormat::Contiguous);
  const std::initializer_list<const Tensor*> inputs = {&s.x, &s.target, &s.weight, &lsec, &grad};
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      write_contiguous_outs<1>({out}, inputs, [&](const std::array<Tensor, 1>& outs) {
        const Tensor& dst = outs[0];
        const int64_t C = s.classes, inner = s.inner;
        const T* x = s.x.data<T>();
        const T* w = s.weight.defined() ? s.weight.data<T>() : nullptr;
        const T* lp = lsec.data<T>();
        T* o = dst.data<T>();
        const double eps = label_smoothing;
        const std::vector<double> sc = row_scales<T>(op, grad, s, reduction, ignore_index, w);
        double wsum = static_cast<double>(C);
        if (w) {
          wsum = 0;
          for (int64_t c = 0; c < C; ++c) wsum += w[c];
        }
        const double smooth = eps / static_cast<double>(C);
        parallel_for(0, s.rows, row_grain(C), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const int64_t base = (r / inner) * C * inner + r % inner;
            const T* xr = x + base;
            T* orow = o + base;
            const double sn = sc[static_cast<size_t>(r)];
            double coef;
            int64_t k = -1;
            if (s.probs) {
              const T* yr = s.target.data<T>() + base;
              double S = 0;
              for (int64_t c = 0; c < C; ++c)
                S += (w ? static_cast<double>(w[c]) : 1.0) *
                     (static_cast<double>(yr[c * inner]) * (1 - eps) + smooth);
              coef = sn * S;
            } else {
              k = s.target.data<int64_t>()[r];
              if (k == ignore_index) {
                for (int64_t c = 0; c < C; ++c) orow[c * inner] = T(0);
                continue;
              }
              check_class(op, k, C);
              const double wt = w ? static_cast<double>(w[k]) : 1.0;
              coef = sn * ((1 - eps) * wt + smooth * wsum);
            }
            // softmax * coef
            if (inner == 1) {
              if constexpr (std::is_same_v<T, float>)
                act_table().scaled_exp_f32(orow, xr, C, lp[r], static_cast<float>(coef));
              else
                act_table().scaled_exp_f64(orow, xr, C, lp[r], coef);
            } else {
              for (int64_t c = 0; c < C; ++c)
                orow[c * inner] = static_cast<T>(coef * std::exp(static_cast<double>(xr[c * inner] - lp[r])));
            }
            if (s.probs) {
              const T* yr = s.target.data<T>() + base;
              for (int64_t c = 0; c < C; ++c)
                orow[c * inner] -= static_cast<T>(sn * (w ? static_cast<double>(w[c]) : 1.0) *
                                                  (static_cast<double>(yr[c * inner]) * (1 - eps) + smooth));
            } else {
              if (eps > 0)
                for (int64_t c = 0; c < C; ++c)
                  orow[c * inner] -= static_cast<T>(sn * smooth * (w ? static_cast<double>(w[c]) : 1.0));
              orow[k * inner] -= static_cast<T>(sn * (1 - eps) * (w ? static_cast<double>(w[k]) : 1.0));
            }
          }
        });
      });
    }
  });
}

void nll_loss_out_cpu(const Tensor& out, const Tensor& self, const Tensor& target,
                      const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index) {
  const char* op = "nll_loss";
  if (is_half(self))
    return copy_out(out,
                    op::nll_loss_nd(to_float32(self), target, to_float32(weight), reduction, ignore_index));
  const ClassShape s = class_check(self, target, weight, false);
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const int64_t C = s.classes, inner = s.inner;
      const T* x = s.x.data<T>();
      const T* w = s.weight.defined() ? s.weight.data<T>() : nullptr;
      const int64_t* tg = s.target.data<int64_t>();
      std::vector<double> loss(static_cast<size_t>(s.rows)), rw(static_cast<size_t>(s.rows));
      for (int64_t r = 0; r < s.rows; ++r) {
        const int64_t k = tg[r];
        if (k == ignore_index) {
          loss[static_cast<size_t>(r)] = 0;
          rw[static_cast<size_t>(r)] = 0;
          continue;
        }
        check_class(op, k, C);
        const double wt = w ? static_cast<double>(w[k]) : 1.0;
        loss[static_cast<size_t>(r)] =
            -wt * static_cast<double>(x[(r / inner) * C * inner + k * inner + r % inner]);
        rw[static_cast<size_t>(r)] = wt;
      }
      if (reduction == kNone) {
        // Every value is read before out is written: out may be any view (contiguous ones get it directly).
        write_contiguous_outs<1>({out}, {}, [&](const std::array<Tensor, 1>& outs) {
          const Tensor& dst = outs[0];
          T* o = dst.data<T>();
          for (int64_t r = 0; r < s.rows; ++r) o[r] = static_cast<T>(loss[static_cast<size_t>(r)]);
        });
      } else {
        double total = ordered_sum(loss);
        if (reduction == kMean) total /= ordered_sum(rw);
        out.data<T>()[0] = static_cast<T>(total);
      }
    }
  });
}

void nll_loss_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& self,
                               const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                               int64_t ignore_index) {
  const char* op = "nll_loss_backward";
  if (is_half(self))
    return copy_out(out, op::nll_loss_nd_backward(to_float32(grad), to_float32(self), target,
                                                  to_float32(weight), reduction, ignore_index));
  const ClassShape s = class_check(self, target, weight, false);
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const int64_t C = s.classes, inner = s.inner;
      const T* w = s.weight.defined() ? s.weight.data<T>() : nullptr;
      const int64_t* tg = s.target.data<int64_t>();
      const std::vector<double> sc = row_scales<T>(op, grad, s, reduction, ignore_index, w);
      write_contiguous_outs<1>({out}, {&s.x, &s.target, &s.weight, &grad},
                               [&](const std::array<Tensor, 1>& outs) {
                                 const Tensor& dst = outs[0];
                                 T* o = dst.data<T>();
                                 std::fill(o, o + dst.numel(), T(0));
                                 for (int64_t r = 0; r < s.rows; ++r) {
                                   const int64_t k = tg[r];
                                   if (k == ignore_index) continue;
                                   check_class(op, k, C);
                                   const double wt = w ? static_cast<double>(w[k]) : 1.0;
                                   o[(r / inner) * C * inner + k * inner + r % inner] =
                                       static_cast<T>(-sc[static_cast<size_t>(r)] * wt);
                                 }
                               });
    }
  });
}

FB_REGISTER_OUT_KERNEL(op::binary_cross_entropy, CPU, bce_out_cpu);
FB_REGISTER_OUT_KERNEL(op::binary_cross_entropy_backward, CPU, bce_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::binary_cross_entropy_with_logits, CPU, bce_logits_out_cpu);
FB_REGISTER_OUT_KERNEL(op::binary_cross_entropy_with_logits_backward, CPU, bce_logits_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::mse_loss, CPU, mse_out_cpu);
FB_REGISTER_OUT_KERNEL(op::mse_loss_backward, CPU, mse_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::l1_loss, CPU, l1_out_cpu);
FB_REGISTER_OUT_KERNEL(op::l1_loss_backward, CPU, l1_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::smooth_l1_loss, CPU, smooth_l1_out_cpu);
FB_REGISTER_OUT_KERNEL(op::smooth_l1_loss_backward, CPU, smooth_l1_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::huber_loss, CPU, huber_out_cpu);
FB_REGISTER_OUT_KERNEL(op::huber_loss_backward, CPU, huber_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_cross_entropy, CPU, cross_entropy_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_cross_entropy_backward, CPU, cross_entropy_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::nll_loss_nd, CPU, nll_loss_out_cpu);
FB_REGISTER_OUT_KERNEL(op::nll_loss_nd_backward, CPU, nll_loss_backward_out_cpu);

}  // namespace
}  // namespace flambeau
