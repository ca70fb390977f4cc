// CUDA kernels of max_pool2d_with_indices, max_pool_backward, avg_pool2d,
// adaptive_avg_pool2d and their backwards (the 1-D forms are core's
// composites over these), float32 and float64. Shape rules are core's
// (flambeau/pool_shape.h); the index math is flambeau_cuda/conv_math.h
// (Note [CUDA convolution]), checked on the host against core's CPU kernels.
#include "pool.h"

#include <algorithm>
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "flambeau/pool_shape.h"

namespace flambeau::cuda {
namespace {

Tensor dense(const Tensor& t) { return op::contiguous(t, MemoryFormat::Contiguous); }

void check_float(const Tensor& t, const char* op) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op,
                "] needs a float32 or float64 tensor on CUDA, got dtype ", dtype_name(t.dtype()));
}

void check_launch(int err, const char* what) {
  if (err != 0) throw_cuda_error(what, static_cast<cudaError_t>(err));
}

ConvGeometry pool_geometry(const pool::Pool2d& p) {
  ConvGeometry g;
  g.Hb = p.H, g.Wb = p.W, g.Hs = p.OH, g.Ws = p.OW;
  g.kh = p.kH, g.kw = p.kW, g.sh = p.sH, g.sw = p.sW, g.ph = p.pH, g.pw = p.pW, g.dh = p.dH, g.dw = p.dW;
  return g;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_cuda(const Tensor& self, IntArrayRef kernel_size,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, bool ceil_mode) {
  check_float(self, "max_pool2d");
  const pool::Pool2d p =
      pool::check_pool2d(self.sizes(), kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
  shape_nbytes(p.out_shape, ScalarType::Int64, "max_pool2d");
  Tensor out = op::empty(p.out_shape, self.dtype(), self.device());
  Tensor indices = op::empty(p.out_shape, ScalarType::Int64, self.device());
  if (out.numel() == 0) return {out, indices};
  const Tensor in = dense(self);
  CudaDeviceSetter guard(self.device().index);
  check_launch(
      launch_max_pool2d(self.dtype() == ScalarType::Float64, pool_geometry(p), p.planes, in.data_ptr(),
                        out.data_ptr(), indices.data<int64_t>(), current_cuda_stream(self.device())),
      "max_pool2d kernel launch");
  return {out, indices};
}

Tensor max_pool_backward_cuda(const Tensor& grad_output, const Tensor& indices, IntArrayRef input_size) {
  const char* op = "max_pool_backward";
  check_float(grad_output, op);
  FB_CHECK_TYPE(indices.dtype() == ScalarType::Int64, "[", op, "] indices must be int64, got dtype ",
                dtype_name(indices.dtype()));
  FB_CHECK(indices.device() == grad_output.device(), "[", op,
           "] expected grad_output and indices on the same device, got ", grad_output.device().str(), " and ",
           indices.device().str());
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), indices.sizes()), "[", op, "] grad_output shape ",
                 shape_str(grad_output.sizes()), " must equal indices shape ", shape_str(indices.sizes()));
  const int64_t nd = static_cast<int64_t>(input_size.size());
  FB_CHECK_VALUE(nd >= 2 && nd == indices.dim(), "[", op, "] input_size ", shape_str(input_size),
                 " must have the rank of indices shape ", shape_str(indices.sizes()), " (at least 2)");
  for (int64_t i = 0; i < nd - 2; ++i)
    FB_CHECK_VALUE(input_size[i] == indices.sizes()[i], "[", op, "] input_size ", shape_str(input_size),
                   " and indices shape ", shape_str(indices.sizes()), " differ in the leading dim ", i);
  shape_nbytes(input_size, grad_output.dtype(), op);
  Tensor gi = zeros(input_size, grad_output.dtype(), grad_output.device());
  if (gi.numel() == 0 || indices.numel() == 0) return gi;
  const int64_t in_plane = input_size[nd - 1] * input_size[nd - 2];
  const int64_t planes = gi.numel() / in_plane;
  const int64_t out_plane = indices.numel() / std::max<int64_t>(planes, 1);
  const Tensor ix = dense(indices);
  // No index may be negative (one device sync, as core's CPU kernel checks each); one past the plane comes
  // from a window with no element inside the image and gets no gradient (Note [Empty pooling window]).
  const Tensor bad = op::lt(ix, scalar_to_tensor(Scalar(int64_t{0})));
  Tensor nbad = op::empty(Shape{}, ScalarType::Int64, Device(DeviceType::CPU));
  op::copy_(nbad, op::sum(op::cast(bad, ScalarType::Int64), std::nullopt, false, std::nullopt));
  FB_CHECK_INDEX(nbad.data<int64_t>()[0] == 0, "[", op, "] ", nbad.data<int64_t>()[0],
                 " indices are out of bounds for an input plane of ", in_plane, " elements (input_size ",
                 shape_str(input_size), ")");
  const Tensor go = dense(grad_output);
  CudaDeviceSetter guard(gi.device().index);
  check_launch(
      launch_max_pool_backward(gi.dtype() == ScalarType::Float64, planes, in_plane, out_plane, go.data_ptr(),
                               ix.data<int64_t>(), gi.data_ptr(), current_cuda_stream(gi.device())),
      "max_pool_backward kernel launch");
  return gi;
}

void check_divisor(std::optional<int64_t> divisor, const char* op) {
  FB_CHECK_VALUE(!divisor || *divisor != 0, "[", op, "] divisor_override must be non-zero");
}

AvgPoolGeometry avg_geometry(const pool::Pool2d& p, bool count_include_pad, std::optional<int64_t> divisor) {
  AvgPoolGeometry a;
  a.g = pool_geometry(p);
  a.count_include_pad = count_include_pad;
  a.divisor_override = divisor.value_or(0);
  return a;
}

Tensor avg_pool2d_cuda(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                       bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  check_float(self, "avg_pool2d");
  check_divisor(divisor_override, "avg_pool2d");
  const pool::Pool2d p =
      pool::check_pool2d(self.sizes(), kernel_size, stride, padding, {}, ceil_mode, "avg_pool2d");
  Tensor out = op::empty(p.out_shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Tensor in = dense(self);
  CudaDeviceSetter guard(self.device().index);
  check_launch(launch_avg_pool2d(self.dtype() == ScalarType::Float64,
                                 avg_geometry(p, count_include_pad, divisor_override), p.planes,
                                 in.data_ptr(), out.data_ptr(), current_cuda_stream(self.device())),
               "avg_pool2d kernel launch");
  return out;
}

void check_grad_shape(const Tensor& grad_output, IntArrayRef expected, const char* op) {
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), expected), "[", op, "] grad_output has shape ",
                 shape_str(grad_output.sizes()), " but the forward output has shape ", shape_str(expected));
}

Tensor avg_pool2d_backward_cuda(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef kernel_size,
                                IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d_backward";
  check_float(grad_output, op);
  check_divisor(divisor_override, op);
  shape_nbytes(input_size, grad_output.dtype(), op);
  const pool::Pool2d p = pool::check_pool2d(input_size, kernel_size, stride, padding, {}, ceil_mode, op);
  check_grad_shape(grad_output, p.out_shape, op);
  Tensor gi = op::empty(input_size, grad_output.dtype(), grad_output.device());
  if (gi.numel() == 0) return gi;
  const Tensor go = dense(grad_output);
  CudaDeviceSetter guard(gi.device().index);
  check_launch(launch_avg_pool2d_backward(gi.dtype() == ScalarType::Float64,
                                          avg_geometry(p, count_include_pad, divisor_override), p.planes,
                                          go.data_ptr(), gi.data_ptr(), current_cuda_stream(gi.device())),
               "avg_pool2d_backward kernel launch");
  return gi;
}

/// Core's adaptive pooling checks (src/cpu/pool.cpp): a 3-D or 4-D input with
/// non-zero C, H and W, output_size of 1 or 2 non-negative ints.
ConvGeometry adaptive_geometry(IntArrayRef sz, IntArrayRef output_size, const char* op, Shape& out_shape,
                               int64_t& planes) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  FB_CHECK_VALUE((nd == 3 && sz[0] != 0 && sz[1] != 0 && sz[2] != 0) ||
                     (nd == 4 && sz[1] != 0 && sz[2] != 0 && sz[3] != 0),
                 "[", op,
                 "] expected a 3-D (C, H, W) or 4-D (N, C, H, W) input with non-zero C, H and W (N may be "
                 "0), got shape ",
                 shape_str(sz));
  FB_CHECK_VALUE(output_size.size() == 2 || output_size.size() == 1, "[", op,
                 "] output_size must be a single int or a tuple of 2 ints, got ", shape_str(output_size));
  ConvGeometry g;
  g.Hb = sz[nd - 2], g.Wb = sz[nd - 1];
  g.Hs = output_size[0], g.Ws = output_size.size() == 2 ? output_size[1] : output_size[0];
  FB_CHECK_VALUE(g.Hs >= 0 && g.Ws >= 0, "[", op, "] output_size must be non-negative, got ",
                 shape_str(output_size));
  planes = 1;
  for (int64_t i = 0; i < nd - 2; ++i) planes *= sz[i];
  out_shape.assign(sz.begin(), sz.end() - 2);
  out_shape.push_back(g.Hs);
  out_shape.push_back(g.Ws);
  shape_nbytes(out_shape, ScalarType::Int64, op);
  return g;
}

Tensor adaptive_avg_pool2d_cuda(const Tensor& self, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool2d";
  check_float(self, op);
  Shape out_shape;
  int64_t planes = 0;
  const ConvGeometry g = adaptive_geometry(self.sizes(), output_size, op, out_shape, planes);
  Tensor out = op::empty(out_shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Tensor in = dense(self);
  CudaDeviceSetter guard(self.device().index);
  check_launch(launch_adaptive_avg_pool2d(self.dtype() == ScalarType::Float64, g, planes, in.data_ptr(),
                                          out.data_ptr(), current_cuda_stream(self.device())),
               "adaptive_avg_pool2d kernel launch");
  return out;
}

Tensor adaptive_avg_pool2d_backward_cuda(const Tensor& grad_output, IntArrayRef input_size) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_float(grad_output, op);
  const int64_t nd = grad_output.dim();
  FB_CHECK_VALUE(nd >= 2 && static_cast<int64_t>(input_size.size()) == nd, "[", op, "] input_size ",
                 shape_str(input_size), " must have the rank of grad_output shape ",
                 shape_str(grad_output.sizes()));
  shape_nbytes(input_size, grad_output.dtype(), op);
  Shape out_shape;
  int64_t planes = 0;
  const ConvGeometry g = adaptive_geometry(input_size, grad_output.sizes().last(2), op, out_shape, planes);
  check_grad_shape(grad_output, out_shape, op);
  Tensor gi = op::empty(input_size, grad_output.dtype(), grad_output.device());
  if (gi.numel() == 0) return gi;
  if (grad_output.numel() == 0) return op::fill_(gi, 0);
  const Tensor go = dense(grad_output);
  CudaDeviceSetter guard(gi.device().index);
  check_launch(
      launch_adaptive_avg_pool2d_backward(gi.dtype() == ScalarType::Float64, g, planes, go.data_ptr(),
                                          gi.data_ptr(), current_cuda_stream(gi.device())),
      "adaptive_avg_pool2d_backward kernel launch");
  return gi;
}

}  // namespace

void register_pool_kernels() {
  op::max_pool2d_with_indices.register_kernel(DispatchKey::CUDA, max_pool2d_with_indices_cuda);
  op::max_pool_backward.register_kernel(DispatchKey::CUDA, max_pool_backward_cuda);
  op::avg_pool2d.register_kernel(DispatchKey::CUDA, avg_pool2d_cuda);
  op::avg_pool2d_backward.register_kernel(DispatchKey::CUDA, avg_pool2d_backward_cuda);
  op::adaptive_avg_pool2d.register_kernel(DispatchKey::CUDA, adaptive_avg_pool2d_cuda);
  op::adaptive_avg_pool2d_backward.register_kernel(DispatchKey::CUDA, adaptive_avg_pool2d_backward_cuda);
}

}  // namespace flambeau::cuda
