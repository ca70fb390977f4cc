// CUDA kernels of max_pool2d_with_indices, max_pool_backward, avg_pool2d,
// adaptive_avg_pool2d and their backwards (the 1-D forms are core's
// composites over these), float32 and float64. The argument checks are the
// ops' meta step (Note [Meta step]: the dispatcher runs them before this
// kernel); the geometry is core's (flambeau/pool_shape.h); the index math is flambeau_cuda/conv_math.h
// (Note [CUDA convolution]), checked on the host against core's CPU kernels.
#include "pool.h"

#include <algorithm>
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "flambeau/pool_shape.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

Tensor dense(const Tensor& t) { return op::contiguous(t, MemoryFormat::Contiguous); }

// max_pool2d takes every dtype but bool on the cpu, and the other poolings float16/bfloat16 too
// (computed in float32); the CUDA kernels cover float32 and float64.
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
  FB_CHECK(indices.device() == grad_output.device(), "[", op,
           "] expected grad_output and indices on the same device, got ", grad_output.device().str(), " and ",
           indices.device().str());
  const int64_t nd = static_cast<int64_t>(input_size.size());
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

Tensor avg_pool2d_backward_cuda(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef kernel_size,
                                IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d_backward";
  check_float(grad_output, op);
  const pool::Pool2d p = pool::check_pool2d(input_size, kernel_size, stride, padding, {}, ceil_mode, op);
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

/// The geometry of an adaptive pooling of `sz` (the shape rule is core's pool::adaptive_out_shape).
ConvGeometry adaptive_geometry(IntArrayRef sz, IntArrayRef output_size, const char* op, Shape& out_shape,
                               int64_t& planes) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  out_shape = pool::adaptive_out_shape(sz, output_size, op);
  ConvGeometry g;
  g.Hb = sz[nd - 2], g.Wb = sz[nd - 1];
  g.Hs = out_shape[nd - 2], g.Ws = out_shape[nd - 1];
  planes = 1;
  for (int64_t i = 0; i < nd - 2; ++i) planes *= sz[i];
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
  Shape out_shape;
  int64_t planes = 0;
  const ConvGeometry g = adaptive_geometry(input_size, grad_output.sizes().last(2), op, out_shape, planes);
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
  // Note [Structured kernels]: out= runs the functional kernel and copies into out.
  register_out_via_copy<max_pool2d_with_indices_cuda>(op::max_pool2d_with_indices);
  register_out_via_copy<max_pool_backward_cuda>(op::max_pool_backward);
  register_out_via_copy<avg_pool2d_cuda>(op::avg_pool2d);
  register_out_via_copy<avg_pool2d_backward_cuda>(op::avg_pool2d_backward);
  register_out_via_copy<adaptive_avg_pool2d_cuda>(op::adaptive_avg_pool2d);
  register_out_via_copy<adaptive_avg_pool2d_backward_cuda>(op::adaptive_avg_pool2d_backward);
}

}  // namespace flambeau::cuda
