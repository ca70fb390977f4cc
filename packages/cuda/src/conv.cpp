// CUDA kernels of convolution (1-D and 2-D, transposed or not, grouped) and
// of the gradient of its weight; the gradient of the input is core's
// composite (a convolution of the other kind) and the bias's a sum.
//
// Note [CUDA convolution] (index math in flambeau_cuda/conv_math.h): as core's
// CPU kernels (Note [Convolution kernels]), per group a GEMM between the
// weight and the columns of the big image, cuBLAS on the current stream:
//   forward:      small = W (Cs_g, K) @ im2col(big)             K = Cb_g * kh * kw
//   transposed:   big   = col2im(W^T (K, Cs_g) @ small)
//   weight grad:  dW   += small (Cs_g, L) @ im2col(big)^T (L, K)
// The columns of a chunk of images are built by one launch; forward and
// transposed run one strided-batched GEMM per group over the chunk; the
// weight gradient accumulates one GEMM per image and group (beta = 1). The
// argument checks and output shapes are core's (flambeau/conv_utils.h).
#include "conv.h"

#include <algorithm>

#include "backend.h"
#include "cublas.h"
#include "flambeau/conv_utils.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

struct Geo {
  ConvGeometry g;
  int64_t N = 0, Cb = 0, Cs = 0, groups = 1;
};

Geo make_geo(const Tensor& input, IntArrayRef wsizes, IntArrayRef out, IntArrayRef stride,
             IntArrayRef padding, IntArrayRef dilation, bool transposed, int64_t groups) {
  Geo r;
  const bool two = input.dim() == 4;
  IntArrayRef big = transposed ? out : input.sizes();
  IntArrayRef small = transposed ? input.sizes() : out;
  r.N = input.sizes()[0];
  r.Cb = big[1];
  r.Cs = small[1];
  r.groups = groups;
  ConvGeometry& g = r.g;
  if (two) {
    g.Hb = big[2], g.Wb = big[3], g.Hs = small[2], g.Ws = small[3];
    g.kh = wsizes[2], g.kw = wsizes[3];
    g.sh = stride[0], g.sw = stride[1], g.ph = padding[0], g.pw = padding[1], g.dh = dilation[0],
    g.dw = dilation[1];
  } else {
    g.Wb = big[2], g.Ws = small[2], g.kw = wsizes[2], g.sw = stride[0], g.pw = padding[0], g.dw = dilation[0];
  }
  return r;
}

Tensor dense(const Tensor& t) { return op::contiguous(t, MemoryFormat::Contiguous); }

/// Images per chunk: the columns of a chunk hold at most ~64 Mi elements.
int64_t chunk_images(const Geo& r) {
  const int64_t per = std::max<int64_t>(1, r.Cb * r.g.kk() * r.g.small_hw());
  return std::clamp<int64_t>((int64_t{1} << 26) / per, 1, std::max<int64_t>(1, r.N));
}

void check_launch(int err, const char* what) {
  if (err != 0) throw_cuda_error(what, static_cast<cudaError_t>(err));
}

void add_bias(Tensor& out, const std::optional<Tensor>& bias) {
  if (!bias) return;
  Shape bs(static_cast<size_t>(out.dim()), 1);
  bs[1] = out.sizes()[1];
  op::add_(out, op::reshape(*bias, bs), Scalar(1));
}

Tensor convolution_cuda(const Tensor& input_, const Tensor& weight_, const std::optional<Tensor>& bias_,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                        IntArrayRef output_padding, int64_t groups) {
  const Shape out_shape = conv::check_and_output_shape("convolution", input_, weight_, bias_, stride, padding,
                                                       dilation, transposed, output_padding, groups);
  if (bias_)
    FB_CHECK(bias_->device() == input_.device(),
             "[convolution] expected input and bias on the same device, got ", input_.device().str(), " and ",
             bias_->device().str());
  Tensor out = op::empty(out_shape, input_.dtype(), input_.device());
  if (out.numel() == 0) return out;
  if (input_.numel() == 0) {  // no input values: the output is the bias
    op::fill_(out, 0);
    add_bias(out, bias_);
    return out;
  }
  const Tensor input = dense(input_), weight = dense(weight_);
  const Geo r = make_geo(input, weight.sizes(), out_shape, stride, padding, dilation, transposed, groups);
  const ConvGeometry& g = r.g;
  const int64_t G = r.groups, Cb_g = r.Cb / G, Cs_g = r.Cs / G;
  const int64_t L = g.small_hw(), K = Cb_g * g.kk(), HW = g.big_hw();
  const bool dbl = input.dtype() == ScalarType::Float64;
  const size_t isz = itemsize(input.dtype());
  const int64_t nb = chunk_images(r);
  const Device dev = input.device();
  CudaDeviceSetter guard(dev.index);
  cudaStream_t stream = current_cuda_stream(dev);
  Tensor cols = op::empty(Shape{nb * r.Cb * g.kk() * L}, input.dtype(), dev);
  auto* xp = static_cast<const char*>(input.data_ptr());
  auto* wp = static_cast<const char*>(weight.data_ptr());
  auto* yp = static_cast<char*>(out.data_ptr());
  auto* cp = static_cast<char*>(cols.data_ptr());
  for (int64_t n0 = 0; n0 < r.N; n0 += nb) {
    const int64_t b = std::min(nb, r.N - n0);
    if (!transposed) {
      check_launch(launch_im2col(dbl, g, r.Cb, xp + n0 * r.Cb * HW * isz, cp, b, stream),
                   "im2col kernel launch");
      for (int64_t gi = 0; gi < G; ++gi)  // out[n, g] (Cs_g, L) = W_g (Cs_g, K) @ cols[n, g] (K, L)
        gemm_strided_batched(dbl, false, false, L, Cs_g, K, 1.0, cp + gi * K * L * isz, L, r.Cb * g.kk() * L,
                             wp + gi * Cs_g * K * isz, K, 0, 0.0, yp + (n0 * r.Cs + gi * Cs_g) * L * isz, L,
                             r.Cs * L, b, stream);
    } else {
      for (int64_t gi = 0; gi < G; ++gi)  // cols[n, g] (K, L) = W_g^T (K, Cs_g) @ x[n, g] (Cs_g, L)
        gemm_strided_batched(dbl, false, true, L, K, Cs_g, 1.0, xp + (n0 * r.Cs + gi * Cs_g) * L * isz, L,
                             r.Cs * L, wp + gi * Cs_g * K * isz, K, 0, 0.0, cp + gi * K * L * isz, L,
                             r.Cb * g.kk() * L, b, stream);
      check_launch(launch_col2im(dbl, g, r.Cb, cp, yp + n0 * r.Cb * HW * isz, b, stream),
                   "col2im kernel launch");
    }
  }
  add_bias(out, bias_);
  return out;
}

Tensor convolution_backward_weight_cuda(const Tensor& grad_output_, const Tensor& input_,
                                        IntArrayRef weight_size, IntArrayRef stride, IntArrayRef padding,
                                        IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                                        int64_t groups) {
  const char* op = "convolution_backward_weight";
  // The other arguments passed the meta step's check_conv_weight_grad (Note [Meta step]).
  (void)output_padding;
  FB_CHECK(grad_output_.device() == input_.device(), "[", op,
           "] expected grad_output and input on the same device, got ", grad_output_.device().str(), " and ",
           input_.device().str());
  const Shape out_shape(grad_output_.sizes().begin(), grad_output_.sizes().end());
  Tensor dw = op::empty(weight_size, input_.dtype(), input_.device());
  if (dw.numel() == 0) return dw;
  if (grad_output_.numel() == 0 || input_.numel() == 0) return op::fill_(dw, 0);
  const Tensor grad = dense(grad_output_), input = dense(input_);
  const Geo r = make_geo(input, weight_size, out_shape, stride, padding, dilation, transposed, groups);
  const ConvGeometry& g = r.g;
  const int64_t G = r.groups, Cb_g = r.Cb / G, Cs_g = r.Cs / G;
  const int64_t L = g.small_hw(), K = Cb_g * g.kk(), HW = g.big_hw();
  const bool dbl = input.dtype() == ScalarType::Float64;
  const size_t isz = itemsize(input.dtype());
  const int64_t nb = chunk_images(r);
  const Device dev = input.device();
  CudaDeviceSetter guard(dev.index);
  cudaStream_t stream = current_cuda_stream(dev);
  Tensor cols = op::empty(Shape{nb * r.Cb * g.kk() * L}, input.dtype(), dev);
  auto* small = static_cast<const char*>(transposed ? input.data_ptr() : grad.data_ptr());
  auto* big = static_cast<const char*>(transposed ? grad.data_ptr() : input.data_ptr());
  auto* dwp = static_cast<char*>(dw.data_ptr());
  auto* cp = static_cast<char*>(cols.data_ptr());
  for (int64_t n0 = 0; n0 < r.N; n0 += nb) {
    const int64_t b = std::min(nb, r.N - n0);
    check_launch(launch_im2col(dbl, g, r.Cb, big + n0 * r.Cb * HW * isz, cp, b, stream),
                 "im2col kernel launch");
    for (int64_t i = 0; i < b; ++i)
      for (int64_t gi = 0; gi < G; ++gi)  // dW_g (Cs_g, K) += small[n, g] (Cs_g, L) @ cols[n, g]^T (L, K)
        gemm_strided_batched(dbl, true, false, K, Cs_g, L, 1.0, cp + (i * r.Cb * g.kk() + gi * K) * L * isz,
                             L, 0, small + ((n0 + i) * r.Cs + gi * Cs_g) * L * isz, L, 0,
                             n0 + i == 0 ? 0.0 : 1.0, dwp + gi * Cs_g * K * isz, K, 0, 1, stream);
  }
  return dw;
}

}  // namespace

void register_conv_kernels() {
  // Structured ops (Note [Structured kernels]): out= runs the functional kernel and copies.
  register_out_via_copy<convolution_cuda>(op::convolution);
  register_out_via_copy<convolution_backward_weight_cuda>(op::convolution_backward_weight);
}

}  // namespace flambeau::cuda
