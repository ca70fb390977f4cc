// CUDA kernels of arange, flip, tril and triu, made of core's kernels and
// flambeau-cuda's own (as src/norm.cpp, they run on cpu tensors too: the host
// tests call them through _C._shape_op_on_host):
//   arange: core's CPU kernel computes the values (every check, the integer
//     and floating rules exactly as on the CPU), then one host-to-device copy;
//   flip: index_select along each flipped dim with the reversed positions;
//   tril/triu: where(column - row <= diagonal (>= for triu), self, 0), the
//     0 a 0-dim tensor of self's dtype (a host scalar), any dtype;
//   _pad_nd (every mode): core's CPU _pad_nd of an int64 arange over self's
//     shape (the constant -1) is the gather map, output element -> flat input
//     element or -1 (so core makes every check and the modes' index rules);
//     on the device an index_select of the flat input through the map, then a
//     where(map >= 0, ., value) for the constant mode. Its backward: a constant
//     pad is cropped by the negated pads (as core); the other modes scatter-add
//     the flat gradient through the map (index_put_ with accumulate);
//   index_fill: the indices copied to the host (one sync) and checked as core
//     does, a bool mask along dim built there and copied to the device, then
//     where(mask, value, self), the value a host scalar of self's dtype.
#include "shape_ops.h"

#include <algorithm>
#include <vector>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

Tensor positions(int64_t n, Device dev, bool reversed) {
  const Tensor host = reversed ? op::arange(Scalar(n - 1), Scalar(int64_t{-1}), Scalar(int64_t{-1}),
                                            ScalarType::Int64, Device(DeviceType::CPU))
                               : op::arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}),
                                            ScalarType::Int64, Device(DeviceType::CPU));
  if (dev.is_cpu()) return host;
  Tensor out = op::empty(host.sizes(), ScalarType::Int64, dev);
  op::copy_(out, host);
  return out;
}

Tensor arange_cuda(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                   Device device) {
  const Tensor host = op::arange(start, end, step, dtype, Device(DeviceType::CPU));
  Tensor out = op::empty(host.sizes(), dtype, device);
  op::copy_(out, host);
  return out;
}

Tensor triangle(const Tensor& self, int64_t diagonal, bool lower, const char* op) {
  FB_CHECK_VALUE(self.dim() >= 2, "[", op, "] input must have at least 2 dims, got shape ",
                 shape_str(self.sizes()));
  const int64_t n = self.sizes()[static_cast<size_t>(self.dim() - 2)];
  const int64_t m = self.sizes()[static_cast<size_t>(self.dim() - 1)];
  if (self.numel() == 0) return op::empty(self.sizes(), self.dtype(), self.device());
  const Tensor rows = op::reshape(positions(n, self.device(), false), Shape{n, 1});
  const Tensor cols = op::reshape(positions(m, self.device(), false), Shape{1, m});
  const Tensor diff = op::sub(cols, rows, Scalar(1));  // column - row, in (-n, m)
  const Tensor d = scalar_to_tensor(Scalar(diagonal));
  const Tensor keep = lower ? op::le(diff, d) : op::ge(diff, d);
  const Tensor zero = zeros(Shape{}, self.dtype(), Device(DeviceType::CPU));  // a host scalar of self's dtype
  return op::contiguous(op::where(keep, self, zero), MemoryFormat::Contiguous);
}

/// The map of padding a tensor of shape `sizes`: an int64 tensor of the output shape on `dev` holding, per
/// output element, the flat input element it reads (-1: the constant), from core's CPU _pad_nd.
Tensor pad_map(IntArrayRef sizes, IntArrayRef pad, std::string_view mode, Device dev) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;  // sizes come from a tensor, or were checked by shape_nbytes
  const Tensor flat = op::arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}), ScalarType::Int64,
                                 Device(DeviceType::CPU));
  const Tensor host = op::_pad_nd(op::reshape(flat, sizes), pad, mode, mode == "constant" ? -1.0 : 0.0);
  if (dev.is_cpu()) return host;
  Tensor out = op::empty(host.sizes(), ScalarType::Int64, dev);
  op::copy_(out, host);
  return out;
}

}  // namespace

Tensor index_fill_impl(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  const char* op = "index_fill";
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  const int64_t d = wrap_dim(dim, nd, op);
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[static_cast<size_t>(d)];
  // The index's dtype and rank and the value passed meta::check_index_slices and meta::check_value_fits.
  FB_CHECK(index.device() == self.device() || index.device().is_cpu(), "[", op,
           "] expected index on the device of self (", self.device().str(), ") or on the CPU, got ",
           index.device().str());
  Tensor host = op::empty(index.sizes(), ScalarType::Int64, Device(DeviceType::CPU));
  op::copy_(host, index);  // int32 -> int64 and device -> host (one sync)
  std::vector<uint8_t> hit(static_cast<size_t>(n), 0);
  const int64_t* p = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    // a negative index counts from the end, as core's CPU kernel and PyTorch's index_fill
    FB_CHECK_INDEX(p[i] >= -n && p[i] < n, "[", op, "] index ", p[i], " is out of range for dimension ", d,
                   " with size ", n);
    hit[static_cast<size_t>(p[i] < 0 ? p[i] + n : p[i])] = 1;
  }
  visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf | kDtComplex>(self.dtype(), op, [](auto) {});
  if (self.numel() == 0 || host.numel() == 0) return op::clone(self, MemoryFormat::Contiguous);
  Tensor mask_host = op::empty(Shape{n}, ScalarType::Bool, Device(DeviceType::CPU));
  std::copy(hit.begin(), hit.end(), mask_host.data<bool>());
  Tensor mask = mask_host;
  if (!self.device().is_cpu()) {
    mask = op::empty(Shape{n}, ScalarType::Bool, self.device());
    op::copy_(mask, mask_host);
  }
  if (self.dim() > 0) {
    Shape bshape(static_cast<size_t>(self.dim()), 1);
    bshape[static_cast<size_t>(d)] = n;
    mask = op::reshape(mask, bshape);
  } else {
    mask = op::reshape(mask, Shape{});
  }
  const Tensor v = full(Shape{}, value, self.dtype(), Device(DeviceType::CPU));  // a host scalar
  return op::contiguous(op::where(mask, v, self), MemoryFormat::Contiguous);
}

Tensor pad_nd_impl(const Tensor& self, IntArrayRef pad, std::string_view mode, double value) {
  visit_dtype(self.dtype(), "pad", [](auto) {});  // the dtypes core's kernel takes, its TypeError
  FB_CHECK_VALUE(mode == "constant" || value == 0.0, "[pad] padding mode '", mode,
                 "' doesn't take in value argument");
  const Tensor map = pad_map(self.sizes(), pad, mode, self.device());
  if (map.numel() == 0) return op::empty(map.sizes(), self.dtype(), self.device());
  const Tensor flat = op::reshape(self, Shape{self.numel()});
  if (mode != "constant")
    return op::reshape(op::index_select(flat, 0, op::reshape(map, Shape{map.numel()})), map.sizes());
  if (self.numel() == 0) return full(map.sizes(), Scalar(value), self.dtype(), self.device());
  const Tensor safe = op::clamp_min(map, Scalar(int64_t{0}));
  const Tensor taken =
      op::reshape(op::index_select(flat, 0, op::reshape(safe, Shape{safe.numel()})), map.sizes());
  const Tensor v = op::cast(scalar_to_tensor(Scalar(value)), self.dtype());  // a host scalar of self's dtype
  return op::contiguous(op::where(op::ge(map, scalar_to_tensor(Scalar(int64_t{0}))), taken, v),
                        MemoryFormat::Contiguous);
}

Tensor pad_nd_backward_impl(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef pad,
                            std::string_view mode) {
  shape_nbytes(input_size, grad_output.dtype(), "pad_backward");
  const Tensor map = pad_map(input_size, pad, mode, grad_output.device());
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), map.sizes()),
                 "[pad_backward] grad_output has shape ", shape_str(grad_output.sizes()),
                 " but padding input shape ", shape_str(input_size), " by ", shape_str(pad), " gives ",
                 shape_str(map.sizes()));
  if (mode == "constant") {  // a crop: the constant pad by the negated pads
    Shape neg(pad.begin(), pad.end());
    for (auto& v : neg) v = -v;
    return pad_nd_impl(grad_output, neg, mode, 0.0);
  }
  FB_CHECK_TYPE(grad_output.dtype() == ScalarType::Float32 || grad_output.dtype() == ScalarType::Float64,
                "[pad_backward] needs a float32 or float64 gradient, got dtype ",
                dtype_name(grad_output.dtype()));
  Tensor gi = zeros(input_size, grad_output.dtype(), grad_output.device());
  if (gi.numel() == 0 || map.numel() == 0) return gi;
  Tensor flat = op::reshape(gi, Shape{gi.numel()});
  op::index_put_(flat, OptionalTensorList{op::reshape(map, Shape{map.numel()})},
                 op::reshape(grad_output, Shape{grad_output.numel()}), true);
  return gi;
}

Tensor flip_impl(const Tensor& self, IntArrayRef dims) {
  const int64_t nd = self.dim();
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1), "flip");
    FB_CHECK_VALUE(!flipped[static_cast<size_t>(w)], "[flip] dim ", w,
                   " appears multiple times in the list of dims");
    flipped[static_cast<size_t>(w)] = true;
  }
  Tensor out = self;
  for (int64_t k = 0; k < nd; ++k) {
    const int64_t s = self.sizes()[static_cast<size_t>(k)];
    if (flipped[static_cast<size_t>(k)] && s > 1)
      out = op::index_select(out, k, positions(s, self.device(), true));
  }
  return op::clone(out, MemoryFormat::Contiguous);  // a new tensor even when nothing moved
}
Tensor tril_impl(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, true, "tril"); }
Tensor triu_impl(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, false, "triu"); }

void register_shape_kernels() {
  op::arange.register_kernel(DispatchKey::CUDA, arange_cuda);
  register_out_via_copy<flip_impl>(op::flip);
  register_out_via_copy<tril_impl>(op::tril);
  register_out_via_copy<triu_impl>(op::triu);
  register_out_via_copy<index_fill_impl>(op::index_fill);
  register_out_via_copy<pad_nd_impl>(op::_pad_nd);
  register_out_via_copy<pad_nd_backward_impl>(op::_pad_nd_backward);
}

}  // namespace flambeau::cuda
