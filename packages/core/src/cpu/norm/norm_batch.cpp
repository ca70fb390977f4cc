// CPU kernels: native_batch_norm and its fused backward (Note [Normalization
// kernels] in norm_kernels.h), and the choice of the per-capability loop table.
//
// The input is viewed as (N, C, L) (L = 1 for an (N, C) input). Training
// statistics take one pass over each channel (shifted sums, norm_kernels.h),
// then the output is (x - mean) * a + bias with a = invstd * weight,
// while the channel is still in cache. Threads split the channels; an (N, C)
// input is split in blocks of channels with the rows walked in order, so the
// inner loops run along contiguous memory either way. The backward takes one
// reduction pass (sum(dy), sum(dy * (x - mean))) and, when the input's
// gradient is wanted, one more pass that writes it; grad weight and bias come
// from the same sums. bfloat16 inputs with L > 1 run the float32 loops on
// values widened as they are loaded (Note [Batch norm in bfloat16]); float16 and L <= 1
// bfloat16 inputs run on float32 copies (Note [Low-precision kernels]), with
// float32 parameters too (Note [Batch norm's mixed precision]).
//
// Note [Channels-last batch norm]
// A channels-last float32/float64 input (NHWC in memory, Note [Result layout]) is an (N*H*W, C) input:
// the (N, C) loops run on its memory as it is, forward and backward, and write the NHWC output and
// input gradient the meta step laid out, instead of packing to NCHW and copying the result back.
// Both ops are structured (Note [Structured kernels]): out kernels writing the
// outputs the meta step allocated (evaluation mode's saved statistics are (0,):
// the per-channel coefficients then go to buffers of the kernel, as before).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "cpu/linalg/gemm_pool.h"
#include "cpu/low_precision.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/half.h"
#include "flambeau/memory_format.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "norm_common.h"
#include "norm_kernels.h"
#include "cpu/elementwise/vec_table.h"

namespace flambeau::cpu {

FB_DEFINE_DISPATCH(norm_table_stub);

const NormTable& norm_table() { return norm_table_stub.get()(); }

}  // namespace flambeau::cpu

namespace flambeau {
namespace {

using cpu::contig;

/// Element at i of a 1-D tensor of any stride.
template <class T>
T& at1(const Tensor& t, int64_t i) {
  return t.data<T>()[i * t.strides()[0]];
}

struct BNShape {
  int64_t n, c, l;
};

// (N, C, L) of an input of at least 2 dims (meta::check_batch_norm); a channels-last one is (N*H*W, C, 1)
// (Note [Channels-last batch norm]).
BNShape bn_shape(const Tensor& input, bool nhwc = false) {
  BNShape s{input.sizes()[0], input.sizes()[1], 1};
  for (int64_t d = 2; d < input.dim(); ++d) s.l *= input.sizes()[d];
  if (nhwc) s = {s.n * s.l, s.c, 1};
  return s;
}

// Note [Channels-last batch norm]: a float32/float64 input dense in channels-last order (and not also
// row-major), and `out` (the output or input gradient; undefined: not asked for) likewise, sharing no
// memory with the inputs.
bool channels_last_rows(const Tensor& input, const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  if (input.dim() != 4 || input.is_contiguous() || !is_contiguous_in(input, MemoryFormat::ChannelsLast))
    return false;
  if (input.dtype() != ScalarType::Float32 && input.dtype() != ScalarType::Float64) return false;
  return !out.defined() || (is_contiguous_in(out, MemoryFormat::ChannelsLast) && !cpu::shares_storage(out, inputs));
}

// Running statistics: momentum-weighted, the variance unbiased (count / (count - 1)), as PyTorch.
template <class T>
void update_running(const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                    const T* mean, const std::vector<double>& var, int64_t count, double momentum) {
  if (!running_mean && !running_var) return;
  const double unbias = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1)
                                  : std::numeric_limits<double>::infinity();
  const int64_t channels = static_cast<int64_t>(var.size());
  for (int64_t c = 0; c < channels; ++c) {
    if (running_mean) {
      T& rm = at1<T>(*running_mean, c);
      rm = static_cast<T>((1.0 - momentum) * static_cast<double>(rm) +
                          momentum * static_cast<double>(mean[c]));
    }
    if (running_var) {
      T& rv = at1<T>(*running_var, c);
      rv = static_cast<T>((1.0 - momentum) * static_cast<double>(rv) + momentum * var[c] * unbias);
    }
  }
  if (running_mean) running_mean->impl()->bump_version();
  if (running_var) running_var->impl()->bump_version();
}

// The buffer of a per-channel statistic or gradient (c values of dtype dt): the output itself when it has
// that dtype and size and is contiguous, else a new tensor (evaluation mode's (0,) statistics: the
// coefficients; an output of another dtype: rounded into it by finish_stat).
Tensor stat_buffer(const Tensor& saved, int64_t c, ScalarType dt) {
  if (!saved.defined()) return saved;
  if (saved.dtype() == dt && saved.numel() == c && saved.is_contiguous()) return saved;
  return op::empty(Shape{c}, dt, saved.device());
}
void finish_stat(const Tensor& saved, const Tensor& buf) {
  if (saved.defined() && saved.numel() != 0 && buf.impl() != saved.impl()) cpu::copy_out(saved, buf);
}

void batch_norm_bf16(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& input,
                     const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                     const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                     bool training, double momentum, double eps);
void batch_norm_backward_bf16(const Tensor& gi, const Tensor& gw, const Tensor& gb, const Tensor& grad_out,
                              const Tensor& input, const std::optional<Tensor>& weight, const Tensor& save_mean,
                              const Tensor& save_invstd, bool train);

// The float32/float64 batch norm: out (contiguous, the input's shape and dtype) and the per-channel mean
// and 1/std (c contiguous values of the input's dtype; in evaluation mode the running statistics' own).
void batch_norm_into(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& input,
                     const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                     const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                     bool training, double momentum, double eps, bool nhwc = false) {
  const char* op = "batch_norm";
  const BNShape s = bn_shape(input, nhwc);
  const int64_t count = s.n * s.l;  // values per channel
  visit_dtype(input.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = cpu::norm_fns<T>();
      Tensor hx = nhwc ? input : contig(input), hw, hb;
      const T* x = hx.data<T>();
      T* y = out.data<T>();
      const T* w = cpu::opt_data<T>(weight, hw);
      const T* b = cpu::opt_data<T>(bias, hb);
      T* mean = save_mean.data<T>();
      T* invstd = save_invstd.data<T>();
      std::vector<double> var(static_cast<size_t>(s.c), 0.0);
      if (count == 0) {  // no values: NaN statistics (as 0 / 0), an empty output
        for (int64_t c = 0; c < s.c; ++c) {
          mean[c] = invstd[c] = std::numeric_limits<T>::quiet_NaN();
          var[c] = std::numeric_limits<double>::quiet_NaN();
        }
      } else if (!training) {
        for (int64_t c = 0; c < s.c; ++c) {
          mean[c] = at1<T>(*running_mean, c);
          invstd[c] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(at1<T>(*running_var, c)) + eps));
        }
      }
      auto coef = [&](int64_t c, T& a, T& sh) {  // y = (x - mean) * a + sh
        a = invstd[c] * (w ? w[c] : T(1));
        sh = b ? b[c] : T(0);
      };
      auto finish_stats = [&](int64_t c, double s1, double s2, T pivot) {
        const double m1 = s1 / static_cast<double>(count);
        const double v = std::max(s2 / static_cast<double>(count) - m1 * m1, 0.0);
        mean[c] = static_cast<T>(static_cast<double>(pivot) + m1);
        invstd[c] = static_cast<T>(1.0 / std::sqrt(v + eps));
        var[c] = v;
      };
      if (count == 0) {
        // nothing to normalize
      } else if (s.l == 1) {
        // (N, C): channels along rows. Statistics per block of channels, rows in order.
        if (training) {
          const int64_t grain = std::max<int64_t>(16, kGrainSize / std::max<int64_t>(s.n, 1));
          parallel_for(0, s.c, grain, [&](int64_t c0, int64_t c1) {
            const int64_t nc = c1 - c0;
            std::vector<double> s1(static_cast<size_t>(nc), 0.0), s2(static_cast<size_t>(nc), 0.0);
            const T* pivot = x + c0;
            for (int64_t r = 0; r < s.n; ++r)
              k.col_moments(x + r * s.c + c0, nc, pivot, s1.data(), s2.data());
            for (int64_t j = 0; j < nc; ++j) finish_stats(c0 + j, s1[j], s2[j], pivot[j]);
          });
        }
        std::vector<T> a(static_cast<size_t>(s.c)), sh(static_cast<size_t>(s.c));
        for (int64_t c = 0; c < s.c; ++c) coef(c, a[c], sh[c]);
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.c, 1));
        parallel_for(0, s.n, grain, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r)
            k.vec_affine(x + r * s.c, y + r * s.c, s.c, mean, a.data(), sh.data());
        });
      } else if (training) {
        // One task per channel: statistics, then the output while the channel is in cache.
        const int64_t grain = std::max<int64_t>(1, kGrainSize / count);
        parallel_for(0, s.c, grain, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const T pivot = x[c * s.l];
            double s1 = 0, s2 = 0;
            for (int64_t r = 0; r < s.n; ++r) k.row_moments(x + (r * s.c + c) * s.l, s.l, pivot, &s1, &s2);
            finish_stats(c, s1, s2, pivot);
            T a, sh;
            coef(c, a, sh);
            for (int64_t r = 0; r < s.n; ++r) {
              const int64_t off = (r * s.c + c) * s.l;
              k.row_affine(x + off, y + off, s.l, mean[c], a, sh);
            }
          }
        });
      } else {
        const int64_t grain = std::max<int64_t>(1, kGrainSize / s.l);
        cpu::pool_parallel_for(0, s.n * s.c, grain, [&](int64_t r0, int64_t r1) {  // Note [GEMM pool]
          for (int64_t r = r0; r < r1; ++r) {
            T a, sh;
            coef(r % s.c, a, sh);
            k.row_affine(x + r * s.l, y + r * s.l, s.l, mean[r % s.c], a, sh);
          }
        });
      }
      if (training && count > 0) update_running<T>(running_mean, running_var, mean, var, count, momentum);
    }
  });
}

void batch_norm_out_cpu(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& input,
                        const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                        const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                        bool training, double momentum, double eps) {
  // The arguments passed meta::check_batch_norm (the op's check step).
  const BNShape s = bn_shape(input);
  if (input.dtype() == ScalarType::BFloat16 && s.l > 1)
    return batch_norm_bf16(out, save_mean, save_invstd, input, weight, bias, running_mean, running_var, training,
                           momentum, eps);
  if (cpu::is_low_precision(input.dtype())) {
    // Running statistics of the input's 16-bit dtype are updated through float32 copies.
    const std::optional<Tensor> rm = cpu::to_float32(running_mean), rv = cpu::to_float32(running_var);
    const Tensor out32 = op::empty(input.sizes(), ScalarType::Float32, input.device());
    const Tensor mean32 = stat_buffer(save_mean, s.c, ScalarType::Float32);
    const Tensor invstd32 = stat_buffer(save_invstd, s.c, ScalarType::Float32);
    batch_norm_into(out32, mean32, invstd32, cpu::to_float32(input), cpu::to_float32(weight),
                    cpu::to_float32(bias), rm, rv, training, momentum, eps);
    for (auto [given, used] : {std::pair{running_mean, rm}, std::pair{running_var, rv}})
      if (training && given && given->impl() != used->impl()) op::copy_(*given, *used);
    cpu::copy_out(out, out32);
    finish_stat(save_mean, mean32);
    finish_stat(save_invstd, invstd32);
    return;
  }
  // Evaluation mode saves nothing (PyTorch's (0,) statistics): the backward reads the running ones. The
  // per-channel coefficients are computed in buffers all the same.
  const Tensor mean = stat_buffer(save_mean, s.c, input.dtype());
  const Tensor invstd = stat_buffer(save_invstd, s.c, input.dtype());
  if (channels_last_rows(input, out, {&input})) {  // Note [Channels-last batch norm]
    batch_norm_into(out, mean, invstd, input, weight, bias, running_mean, running_var, training, momentum, eps,
                    true);
    finish_stat(save_mean, mean);
    finish_stat(save_invstd, invstd);
    return;
  }
  cpu::write_contiguous(out, input, [&](const Tensor& dst) {
    batch_norm_into(dst, mean, invstd, input, weight, bias, running_mean, running_var, training, momentum, eps);
  });
  finish_stat(save_mean, mean);
  finish_stat(save_invstd, invstd);
}

// The float32/float64 gradients into contiguous gi, gw, gb (undefined: not asked for).
void batch_norm_backward_into(const Tensor& gi, const Tensor& gw, const Tensor& gb, const Tensor& grad_out,
                              const Tensor& input, const std::optional<Tensor>& weight, const Tensor& save_mean,
                              const Tensor& save_invstd, bool train, bool nhwc = false) {
  const char* op = "batch_norm_backward";
  const bool input_g = gi.defined(), weight_g = gw.defined(), bias_g = gb.defined();
  const BNShape s = bn_shape(input, nhwc);
  const int64_t count = s.n * s.l;
  visit_dtype(input.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = cpu::norm_fns<T>();
      Tensor hx = nhwc ? input : contig(input), hw, hm = contig(save_mean), hi = contig(save_invstd);
      Tensor hdy = nhwc ? op::contiguous(grad_out, MemoryFormat::ChannelsLast) : contig(grad_out);
      const T* x = hx.data<T>();
      const T* dy = hdy.data<T>();
      const T* w = cpu::opt_data<T>(weight, hw);
      const T* mean = hm.data<T>();
      const T* invstd = hi.data<T>();
      T* dx = input_g ? gi.data<T>() : nullptr;
      T* dw = weight_g ? gw.data<T>() : nullptr;
      T* db = bias_g ? gb.data<T>() : nullptr;
      const bool need_sums = weight_g || bias_g || (input_g && train);
      const double inv_count = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
      // dx = dy * a + (x - mean) * k2 + k3 (train: the batch statistics' own gradient; eval: k2 = k3 = 0).
      auto finish = [&](int64_t c, double sdy, double sdyx, T& a, T& k2, T& k3) {
        const double is = static_cast<double>(invstd[c]);
        const double wc = w ? static_cast<double>(w[c]) : 1.0;
        if (dw) dw[c] = static_cast<T>(sdyx * is);
        if (db) db[c] = static_cast<T>(sdy);
        a = static_cast<T>(is * wc);
        k2 = train ? static_cast<T>(-is * is * is * wc * sdyx * inv_count) : T(0);
        k3 = train ? static_cast<T>(-is * wc * sdy * inv_count) : T(0);
      };
      if (s.l == 1) {
        std::vector<double> sdy(static_cast<size_t>(s.c), 0.0), sdyx(static_cast<size_t>(s.c), 0.0);
        if (need_sums && count > 0) {
          const int64_t grain = std::max<int64_t>(16, kGrainSize / std::max<int64_t>(s.n, 1));
          parallel_for(0, s.c, grain, [&](int64_t c0, int64_t c1) {
            for (int64_t r = 0; r < s.n; ++r)
              k.col_dot2(dy + r * s.c + c0, x + r * s.c + c0, c1 - c0, mean + c0, sdy.data() + c0,
                         sdyx.data() + c0);
          });
        }
        std::vector<T> a(static_cast<size_t>(s.c)), k2(static_cast<size_t>(s.c)),
            k3(static_cast<size_t>(s.c));
        for (int64_t c = 0; c < s.c; ++c) finish(c, sdy[c], sdyx[c], a[c], k2[c], k3[c]);
        if (dx) {
          const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.c, 1));
          parallel_for(0, s.n, grain, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
              k.vec_bwd(dy + r * s.c, x + r * s.c, dx + r * s.c, s.c, a.data(), mean, k2.data(), k3.data());
          });
        }
        return;
      }
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(count, 1));
      parallel_for(0, s.c, grain, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          double sdy = 0, sdyx = 0;
          if (need_sums)
            for (int64_t r = 0; r < s.n; ++r) {
              const int64_t off = (r * s.c + c) * s.l;
              k.row_dot2(dy + off, x + off, s.l, mean[c], &sdy, &sdyx);
            }
          T a, k2, k3;
          finish(c, sdy, sdyx, a, k2, k3);
          if (dx)
            for (int64_t r = 0; r < s.n; ++r) {
              const int64_t off = (r * s.c + c) * s.l;
              k.row_bwd(dy + off, x + off, dx + off, s.l, a, mean[c], k2, k3);
            }
        }
      });
    }
  });
}

void batch_norm_backward_out_cpu(const Tensor& gi, const Tensor& gw, const Tensor& gb, const Tensor& grad_out,
                                 const Tensor& input, const std::optional<Tensor>& weight, const Tensor& save_mean,
                                 const Tensor& save_invstd, bool train, bool, bool, bool) {
  // The arguments passed meta::check_batch_norm_grad (the op's check step); the gradients not asked for
  // (input_g, weight_g, bias_g false) are undefined.
  if (input.dtype() == ScalarType::BFloat16 && grad_out.dtype() == ScalarType::BFloat16 &&
      bn_shape(input).l > 1)
    return batch_norm_backward_bf16(gi, gw, gb, grad_out, input, weight, save_mean, save_invstd, train);
  if (cpu::is_low_precision(input.dtype())) {
    // float32 gradients, rounded once into the outputs (the parameters' in the saved statistics' dtype,
    // float32 in mixed precision).
    const int64_t c = bn_shape(input).c;
    const Tensor gi32 = gi.defined() ? op::empty(input.sizes(), ScalarType::Float32, input.device()) : Tensor();
    const Tensor gw32 = stat_buffer(gw, c, ScalarType::Float32), gb32 = stat_buffer(gb, c, ScalarType::Float32);
    batch_norm_backward_into(gi32, gw32, gb32, cpu::to_float32(grad_out), cpu::to_float32(input),
                             cpu::to_float32(weight), cpu::to_float32(save_mean), cpu::to_float32(save_invstd),
                             train);
    if (gi.defined()) cpu::copy_out(gi, gi32);
    finish_stat(gw, gw32);
    finish_stat(gb, gb32);
    return;
  }
  if (channels_last_rows(input, gi, {&grad_out, &input})) {  // Note [Channels-last batch norm]
    const int64_t c = input.sizes()[1];
    const Tensor gw_buf = stat_buffer(gw, c, input.dtype()), gb_buf = stat_buffer(gb, c, input.dtype());
    batch_norm_backward_into(gi, gw_buf, gb_buf, grad_out, input, weight, save_mean, save_invstd, train, true);
    finish_stat(gw, gw_buf);
    finish_stat(gb, gb_buf);
    return;
  }
  cpu::write_contiguous_outs<3>({gi, gw, gb}, {&grad_out, &input}, [&](const std::array<Tensor, 3>& d) {
    batch_norm_backward_into(d[0], d[1], d[2], grad_out, input, weight, save_mean, save_invstd, train);
  });
}

// ---- bfloat16 (autocast), (N, C, L) inputs with L > 1 ----
// Note [Batch norm in bfloat16]: the float32 kernel's loops, in its order, on the bfloat16 values widened
// where they are loaded (exact), each result rounded to bfloat16 once by the loop that computes it
// (NormBf16Fns): the same arithmetic as on float32 copies of the whole tensors, without them, so the
// same bits as the float32 kernel's result rounded. Statistics, parameters and their gradients are
// float32 (the parameters as given when float32, as PyTorch's mixed-precision batch norm; bfloat16
// ones widened).
// The loops once ran on float32 copies of each channel (or of each block of a row) in buffers of the
// thread: the widening pass cost as much as each pass of the float32 kernel (every pass is bound by
// its instructions here, not by memory), and made the bfloat16 batch norm slower than the float32 one
// (ResNet-8's (32, 16, 32, 32), one thread: forward 88 against 61 us, backward 126 against 87 us).

void batch_norm_bf16(const Tensor& out_arg, const Tensor& save_mean_arg, const Tensor& save_invstd_arg,
                     const Tensor& input, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                     const std::optional<Tensor>& running_var, bool training, double momentum, double eps) {
  const BNShape s = bn_shape(input);
  const int64_t count = s.n * s.l;
  const Tensor hx = contig(input);
  // out itself unless strided or sharing the input's memory; float32 statistics (rounded into the saved
  // ones of another dtype; evaluation mode's coefficients in buffers).
  const bool direct = out_arg.is_contiguous() && out_arg.impl()->storage() != input.impl()->storage();
  const Tensor out = direct ? out_arg : op::empty(input.sizes(), input.dtype(), input.device());
  const Tensor save_mean = stat_buffer(save_mean_arg, s.c, ScalarType::Float32);
  const Tensor save_invstd = stat_buffer(save_invstd_arg, s.c, ScalarType::Float32);
  // float32 running statistics are updated in place; bfloat16 ones through float32 copies.
  const std::optional<Tensor> rm = cpu::to_float32(running_mean), rv = cpu::to_float32(running_var);
  Tensor hw, hb;
  const std::optional<Tensor> w32 = cpu::to_float32(weight), b32 = cpu::to_float32(bias);
  const float* w = cpu::opt_data<float>(w32, hw);
  const float* b = cpu::opt_data<float>(b32, hb);
  const auto* x = static_cast<const uint16_t*>(hx.data_ptr());
  auto* y = static_cast<uint16_t*>(out.data_ptr());
  float* mean = save_mean.data<float>();
  float* invstd = save_invstd.data<float>();
  std::vector<double> var(static_cast<size_t>(s.c), std::numeric_limits<double>::quiet_NaN());
  const cpu::NormBf16Fns& kb = cpu::norm_table().bf16;
  if (count == 0) {
    for (int64_t c = 0; c < s.c; ++c) mean[c] = invstd[c] = std::numeric_limits<float>::quiet_NaN();
  } else if (!training) {
    for (int64_t c = 0; c < s.c; ++c) {
      mean[c] = at1<float>(*rm, c);
      invstd[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(at1<float>(*rv, c)) + eps));
    }
  }
  if (count > 0) {
    // One task per channel: statistics, then the output while the channel is in cache.
    const int64_t grain = std::max<int64_t>(1, kGrainSize / count);
    parallel_for(0, s.c, grain, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        if (training) {  // shifted one-pass moments (Note [Normalization kernels])
          const float pivot = detail::bf16_bits_to_fp32(x[c * s.l]);
          double s1 = 0, s2 = 0;
          for (int64_t r = 0; r < s.n; ++r) kb.row_moments(x + (r * s.c + c) * s.l, s.l, pivot, &s1, &s2);
          const double m1 = s1 / static_cast<double>(count);
          const double v = std::max(s2 / static_cast<double>(count) - m1 * m1, 0.0);
          mean[c] = static_cast<float>(static_cast<double>(pivot) + m1);
          invstd[c] = static_cast<float>(1.0 / std::sqrt(v + eps));
          var[static_cast<size_t>(c)] = v;
        }
        const float a = invstd[c] * (w ? w[c] : 1.0f), sh = b ? b[c] : 0.0f;
        for (int64_t r = 0; r < s.n; ++r) {
          const int64_t off = (r * s.c + c) * s.l;
          kb.row_affine(x + off, y + off, s.l, mean[c], a, sh);
        }
      }
    });
  }
  if (training && count > 0) {
    update_running<float>(rm, rv, mean, var, count, momentum);
    for (auto [given, used] : {std::pair{running_mean, rm}, std::pair{running_var, rv}})
      if (given && given->impl() != used->impl()) op::copy_(*given, *used);
  }
  if (!direct) cpu::copy_out(out_arg, out);
  finish_stat(save_mean_arg, save_mean);
  finish_stat(save_invstd_arg, save_invstd);
}

void batch_norm_backward_bf16(const Tensor& gi_arg, const Tensor& gw_arg, const Tensor& gb_arg,
                              const Tensor& grad_out, const Tensor& input,
                              const std::optional<Tensor>& weight, const Tensor& save_mean,
                              const Tensor& save_invstd, bool train) {
  const BNShape s = bn_shape(input);
  const int64_t count = s.n * s.l;
  const bool input_g = gi_arg.defined(), weight_g = gw_arg.defined(), bias_g = gb_arg.defined();
  // gi itself unless strided or sharing an input's memory; float32 parameter gradients (rounded into
  // outputs of the saved statistics' dtype).
  const bool direct =
      !input_g || (gi_arg.is_contiguous() && gi_arg.impl()->storage() != input.impl()->storage() &&
                   gi_arg.impl()->storage() != grad_out.impl()->storage());
  const Tensor gi = direct ? gi_arg : op::empty(input.sizes(), input.dtype(), input.device());
  const Tensor gw = stat_buffer(gw_arg, s.c, ScalarType::Float32);
  const Tensor gb = stat_buffer(gb_arg, s.c, ScalarType::Float32);
  const Tensor hx = contig(input), hdy = contig(grad_out);
  const Tensor hm = contig(cpu::to_float32(save_mean)), hi = contig(cpu::to_float32(save_invstd));
  Tensor hw;
  const std::optional<Tensor> w32 = cpu::to_float32(weight);
  const float* w = cpu::opt_data<float>(w32, hw);
  const auto* x = static_cast<const uint16_t*>(hx.data_ptr());
  const auto* dy = static_cast<const uint16_t*>(hdy.data_ptr());
  auto* dx = input_g ? static_cast<uint16_t*>(gi.data_ptr()) : nullptr;
  float* dw = weight_g ? gw.data<float>() : nullptr;
  float* db = bias_g ? gb.data<float>() : nullptr;
  const float* mean = hm.data<float>();
  const float* invstd = hi.data<float>();
  const bool need_sums = weight_g || bias_g || (input_g && train);
  const double inv_count = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
  const cpu::NormBf16Fns& kb = cpu::norm_table().bf16;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(count, 1));
  parallel_for(0, s.c, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sdy = 0, sdyx = 0;
      if (need_sums)
        for (int64_t r = 0; r < s.n; ++r) {
          const int64_t off = (r * s.c + c) * s.l;
          kb.row_dot2(dy + off, x + off, s.l, mean[c], &sdy, &sdyx);
        }
      // dx = dy * a + (x - mean) * k2 + k3 (train: the batch statistics' own gradient; eval: k2 = k3 = 0).
      const double is = static_cast<double>(invstd[c]);
      const double wc = w ? static_cast<double>(w[c]) : 1.0;
      if (dw) dw[c] = static_cast<float>(sdyx * is);
      if (db) db[c] = static_cast<float>(sdy);
      const auto a = static_cast<float>(is * wc);
      const float k2 = train ? static_cast<float>(-is * is * is * wc * sdyx * inv_count) : 0.0f;
      const float k3 = train ? static_cast<float>(-is * wc * sdy * inv_count) : 0.0f;
      if (dx)
        for (int64_t r = 0; r < s.n; ++r) {
          const int64_t off = (r * s.c + c) * s.l;
          kb.row_bwd(dy + off, x + off, dx + off, s.l, a, mean[c], k2, k3);
        }
    }
  });
  // The parameters' gradients in the dtype of the saved statistics (float32 in mixed precision).
  if (!direct) cpu::copy_out(gi_arg, gi);
  finish_stat(gw_arg, gw);
  finish_stat(gb_arg, gb);
}

FB_REGISTER_OUT_KERNEL(op::native_batch_norm, CPU, batch_norm_out_cpu);
FB_REGISTER_OUT_KERNEL(op::native_batch_norm_backward, CPU, batch_norm_backward_out_cpu);

}  // namespace
}  // namespace flambeau
