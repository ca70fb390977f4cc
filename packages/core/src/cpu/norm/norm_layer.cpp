// CPU kernels: native_layer_norm and native_group_norm, forward and fused
// backward (Note [Normalization kernels] in norm_kernels.h).
//
// Layer norm: M rows of D = prod(normalized_shape) contiguous elements; one
// pass of shifted sums per row gives mean and rstd, a second writes the
// output. Backward per row: sum(dy * w) and sum(dy * w * (x - mean)), then dx;
// grad weight/bias are column sums over the rows, accumulated per thread in
// double and added up at the end.
// Group norm: an (N, C, HxW) input; group (n, g) is one contiguous segment of
// C / group * HxW elements (its statistics), written per channel as
// (x - mean) * a + b. Backward: per channel sums of dy and dy * (x - mean) give grad
// weight/bias and, combined over the group, dx.
// All four ops are structured (Note [Structured kernels]): out kernels writing the
// outputs the meta step allocated (a gradient not asked for is undefined).
#include <algorithm>
#include <cmath>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "cpu/low_precision.h"
#include "cpu/ordered_partials.h"
#include "cpu/write_out.h"
#include "norm_common.h"
#include "norm_kernels.h"

namespace flambeau {
namespace {

using cpu::contig;

using LNShape = meta::LayerNormRows;
// The rows (m) and row length (d) of a layer norm whose arguments the meta step checked
// (meta::layer_norm_rows): counted without making its statistics' shape again.
LNShape ln_shape(const Tensor& input, IntArrayRef normalized_shape) {
  LNShape s;
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  for (int64_t i = 0; i < input.dim() - k; ++i) s.m *= input.sizes()[i];
  for (const int64_t v : normalized_shape) s.d *= v;
  return s;
}

// float16/bfloat16 layer_norm (as PyTorch): computed in float32, each result rounded once
// (Note [Low-precision kernels]).
using cpu::is_low_precision;
using cpu::to_float32;

// A float16/bfloat16 op's results (undefined: not asked for), computed in float32 by `run` into float32
// tensors of their shapes and rounded once into them.
template <size_t N, class F>
void in_float32(const std::array<Tensor, N>& outs, F&& run) {
  std::array<Tensor, N> tmp;
  for (size_t i = 0; i < N; ++i)
    if (outs[i].defined()) tmp[i] = op::empty(outs[i].sizes(), ScalarType::Float32, outs[i].device());
  run(tmp);
  for (size_t i = 0; i < N; ++i)
    if (outs[i].defined()) {
      Tensor o = outs[i];
      op::copy_(o, tmp[i]);
    }
}

void layer_norm_out_cpu(const Tensor& out_arg, const Tensor& mean_arg, const Tensor& rstd_arg, const Tensor& input,
                        IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                        const std::optional<Tensor>& bias, double eps) {
  const char* op = "layer_norm";
  // The arguments passed the meta step's check_layer_norm (Note [Meta step]).
  if (is_low_precision(input.dtype()))
    return in_float32<3>({out_arg, mean_arg, rstd_arg}, [&](const std::array<Tensor, 3>& t) {
      layer_norm_out_cpu(t[0], t[1], t[2], to_float32(input), normalized_shape, to_float32(weight),
                         to_float32(bias), eps);
    });
  const LNShape s = ln_shape(input, normalized_shape);
  cpu::write_contiguous_outs<3>({out_arg, mean_arg, rstd_arg}, input, [&](const std::array<Tensor, 3>& d) {
    const Tensor &out = d[0], &mean = d[1], &rstd = d[2];
    visit_dtype(input.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& k = cpu::norm_fns<T>();
        Tensor hx = contig(input), hw, hb;
        const T* x = hx.data<T>();
        T* y = out.data<T>();
        const T* w = cpu::opt_data<T>(weight, hw);
        const T* b = cpu::opt_data<T>(bias, hb);
        T* mu = mean.data<T>();
        T* rs = rstd.data<T>();
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.d, 1));
        parallel_for(0, s.m, grain, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const T* xr = x + r * s.d;
            if (s.d == 0) {
              mu[r] = rs[r] = std::numeric_limits<T>::quiet_NaN();
              continue;
            }
            double s1 = 0, s2 = 0;
            k.row_moments(xr, s.d, xr[0], &s1, &s2);
            const double m1 = s1 / static_cast<double>(s.d);
            const double v = std::max(s2 / static_cast<double>(s.d) - m1 * m1, 0.0);
            mu[r] = static_cast<T>(static_cast<double>(xr[0]) + m1);
            rs[r] = static_cast<T>(1.0 / std::sqrt(v + eps));
            k.ln_row(xr, y + r * s.d, s.d, mu[r], rs[r], w, b);
          }
        });
      }
    });
  });
}

void layer_norm_backward_out_cpu(const Tensor& gi_arg, const Tensor& gw_arg, const Tensor& gb_arg,
                                 const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                 const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight, bool,
                                 bool, bool) {
  // The arguments passed meta::check_layer_norm_grad (the op's check step); the gradients not asked for
  // are undefined.
  const char* op = "layer_norm_backward";
  if (is_low_precision(input.dtype()) && grad_out.dtype() == input.dtype())
    return in_float32<3>({gi_arg, gw_arg, gb_arg}, [&](const std::array<Tensor, 3>& t) {
      layer_norm_backward_out_cpu(t[0], t[1], t[2], op::cast(grad_out, ScalarType::Float32),
                                  op::cast(input, ScalarType::Float32), normalized_shape,
                                  op::cast(mean, ScalarType::Float32), op::cast(rstd, ScalarType::Float32),
                                  to_float32(weight), true, true, true);
    });
  const LNShape s = ln_shape(input, normalized_shape);
  cpu::write_contiguous_outs<3>({gi_arg, gw_arg, gb_arg}, {&grad_out, &input}, [&](const std::array<Tensor, 3>& d) {
    const Tensor &gi = d[0], &gw = d[1], &gb = d[2];
    const bool input_g = gi.defined(), weight_g = gw.defined(), bias_g = gb.defined();
    visit_dtype(input.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& k = cpu::norm_fns<T>();
        Tensor hx = contig(input), hdy = contig(grad_out), hw, hm = contig(mean), hr = contig(rstd);
        const T* x = hx.data<T>();
        const T* dy = hdy.data<T>();
        const T* w = cpu::opt_data<T>(weight, hw);
        const T* mu = hm.data<T>();
        const T* rs = hr.data<T>();
        T* dx = input_g ? gi.data<T>() : nullptr;
        // The weight and bias gradients, summed over rows (Note [Partial sums in slice order]): [0, d) for
        // the weight, [d, 2d) for the bias.
        const int64_t nacc = (weight_g || bias_g) ? 2 * s.d : 0;
        std::vector<double> acc(static_cast<size_t>(nacc), 0.0);
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.d, 1));
        const double inv_d = s.d > 0 ? 1.0 / static_cast<double>(s.d) : 0.0;
        cpu::sum_in_slice_order(s.m, grain, nacc, acc.data(), false, [&](int64_t r0, int64_t r1, double* part) {
          for (int64_t r = r0; r < r1; ++r) {
            const T* xr = x + r * s.d;
            const T* dyr = dy + r * s.d;
            if (dx) {
              double s1 = 0, s2 = 0;
              k.ln_row_sums(dyr, xr, w, s.d, mu[r], &s1, &s2);
              const double rr = static_cast<double>(rs[r]);
              const T k2 = static_cast<T>(-rr * rr * rr * s2 * inv_d);
              const T k3 = static_cast<T>(-rr * s1 * inv_d);
              k.ln_row_bwd(dyr, xr, w, dx + r * s.d, s.d, mu[r], rs[r], k2, k3);
            }
            if (weight_g || bias_g)
              k.ln_accum_wb(dyr, xr, s.d, mu[r], rs[r], weight_g ? part : nullptr, bias_g ? part + s.d : nullptr);
          }
        });
        const double* acc_w = acc.data();
        const double* acc_b = acc.data() + s.d;
        if (weight_g)
          for (int64_t j = 0; j < s.d; ++j) gw.data<T>()[j] = static_cast<T>(acc_w[j]);
        if (bias_g)
          for (int64_t j = 0; j < s.d; ++j) gb.data<T>()[j] = static_cast<T>(acc_b[j]);
      }
    });
  });
}

void group_norm_out_cpu(const Tensor& out_arg, const Tensor& mean_arg, const Tensor& rstd_arg, const Tensor& input,
                        const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, int64_t n,
                        int64_t c, int64_t hxw, int64_t group, double eps) {
  // The arguments passed meta::check_group_norm (the op's check step).
  const char* op = "group_norm";
  if (is_low_precision(input.dtype()))  // as layer_norm's
    return in_float32<3>({out_arg, mean_arg, rstd_arg}, [&](const std::array<Tensor, 3>& t) {
      group_norm_out_cpu(t[0], t[1], t[2], to_float32(input), to_float32(weight), to_float32(bias), n, c, hxw,
                         group, eps);
    });
  const int64_t cpg = c / group, seg = cpg * hxw;
  cpu::write_contiguous_outs<3>({out_arg, mean_arg, rstd_arg}, input, [&](const std::array<Tensor, 3>& d) {
    const Tensor &out = d[0], &mean = d[1], &rstd = d[2];
    visit_dtype(input.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& k = cpu::norm_fns<T>();
        Tensor hx = contig(input), hw, hb;
        const T* x = hx.data<T>();
        T* y = out.data<T>();
        const T* w = cpu::opt_data<T>(weight, hw);
        const T* b = cpu::opt_data<T>(bias, hb);
        T* mu = mean.data<T>();
        T* rs = rstd.data<T>();
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(seg, 1));
        parallel_for(0, n * group, grain, [&](int64_t g0, int64_t g1) {
          for (int64_t gi = g0; gi < g1; ++gi) {
            const T* xs = x + gi * seg;
            if (seg == 0) {
              mu[gi] = rs[gi] = std::numeric_limits<T>::quiet_NaN();
              continue;
            }
            double s1 = 0, s2 = 0;
            k.row_moments(xs, seg, xs[0], &s1, &s2);
            const double m1 = s1 / static_cast<double>(seg);
            const double v = std::max(s2 / static_cast<double>(seg) - m1 * m1, 0.0);
            mu[gi] = static_cast<T>(static_cast<double>(xs[0]) + m1);
            rs[gi] = static_cast<T>(1.0 / std::sqrt(v + eps));
            const int64_t g = gi % group;
            for (int64_t j = 0; j < cpg; ++j) {
              const int64_t ch = g * cpg + j;
              const T a = rs[gi] * (w ? w[ch] : T(1));
              k.row_affine(xs + j * hxw, y + gi * seg + j * hxw, hxw, mu[gi], a, b ? b[ch] : T(0));
            }
          }
        });
      }
    });
  });
}

void group_norm_backward_out_cpu(const Tensor& gi_arg, const Tensor& gw_arg, const Tensor& gb_arg,
                                 const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                 const std::optional<Tensor>& weight, int64_t n, int64_t c, int64_t hxw,
                                 int64_t group, bool, bool, bool) {
  // The arguments passed meta::check_group_norm_grad (the op's check step); the gradients not asked for
  // are undefined.
  const char* op = "group_norm_backward";
  if (is_low_precision(input.dtype()))  // from the saved 16-bit mean and 1/std, as PyTorch's CPU kernel
    return in_float32<3>({gi_arg, gw_arg, gb_arg}, [&](const std::array<Tensor, 3>& t) {
      group_norm_backward_out_cpu(t[0], t[1], t[2], to_float32(grad_out), to_float32(input), to_float32(mean),
                                  to_float32(rstd), to_float32(weight), n, c, hxw, group, true, true, true);
    });
  const int64_t cpg = c / group, seg = cpg * hxw;
  cpu::write_contiguous_outs<3>({gi_arg, gw_arg, gb_arg}, {&grad_out, &input}, [&](const std::array<Tensor, 3>& d) {
    const Tensor &gi = d[0], &gw = d[1], &gb = d[2];
    const bool input_g = gi.defined(), weight_g = gw.defined(), bias_g = gb.defined();
    visit_dtype(input.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& k = cpu::norm_fns<T>();
        Tensor hx = contig(input), hdy = contig(grad_out), hw, hm = contig(mean), hr = contig(rstd);
        const T* x = hx.data<T>();
        const T* dy = hdy.data<T>();
        const T* w = cpu::opt_data<T>(weight, hw);
        const T* mu = hm.data<T>();
        const T* rs = hr.data<T>();
        T* dx = input_g ? gi.data<T>() : nullptr;
        // Per (n, channel): sum(dy), sum(dy * (x - mean)); reduced over n at the end (in order).
        std::vector<double> sdy(static_cast<size_t>(n * c), 0.0), sdyx(static_cast<size_t>(n * c), 0.0);
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(seg, 1));
        const double inv_seg = seg > 0 ? 1.0 / static_cast<double>(seg) : 0.0;
        parallel_for(0, n * group, grain, [&](int64_t g0, int64_t g1) {
          for (int64_t gi = g0; gi < g1; ++gi) {
            const int64_t g = gi % group, base = gi * seg;
            double su = 0, sux = 0;
            for (int64_t j = 0; j < cpg; ++j) {
              const int64_t ch = g * cpg + j, nc = (gi / group) * c + ch;
              k.row_dot2(dy + base + j * hxw, x + base + j * hxw, hxw, mu[gi], &sdy[nc], &sdyx[nc]);
              const double wc = w ? static_cast<double>(w[ch]) : 1.0;
              su += wc * sdy[nc];
              sux += wc * sdyx[nc];
            }
            if (!dx) continue;
            const double r = static_cast<double>(rs[gi]);
            const T k2 = static_cast<T>(-r * r * r * sux * inv_seg);
            const T k3 = static_cast<T>(-r * su * inv_seg);
            for (int64_t j = 0; j < cpg; ++j) {
              const int64_t ch = g * cpg + j;
              const T a = rs[gi] * (w ? w[ch] : T(1));
              k.row_bwd(dy + base + j * hxw, x + base + j * hxw, dx + base + j * hxw, hxw, a, mu[gi], k2, k3);
            }
          }
        });
        for (int64_t ch = 0; ch < c; ++ch) {
          double aw = 0, ab = 0;
          for (int64_t i = 0; i < n; ++i) {
            aw += sdyx[i * c + ch] * static_cast<double>(rs[i * group + ch / cpg]);
            ab += sdy[i * c + ch];
          }
          if (weight_g) gw.data<T>()[ch] = static_cast<T>(aw);
          if (bias_g) gb.data<T>()[ch] = static_cast<T>(ab);
        }
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::native_layer_norm, CPU, layer_norm_out_cpu);
FB_REGISTER_OUT_KERNEL(op::native_layer_norm_backward, CPU, layer_norm_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::native_group_norm, CPU, group_norm_out_cpu);
FB_REGISTER_OUT_KERNEL(op::native_group_norm_backward, CPU, group_norm_backward_out_cpu);

}  // namespace
}  // namespace flambeau
