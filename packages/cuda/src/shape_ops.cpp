// CUDA kernels of arange, flip, tril and triu, made of core's kernels and
// flambeau-cuda's own (as src/norm.cpp, they run on cpu tensors too: the host
// tests call them through _C._shape_op_on_host):
//   arange: core's CPU kernel computes the values (every check, the integer
//     and floating rules exactly as on the CPU), then one host-to-device copy;
//   flip: index_select along each flipped dim with the reversed positions;
//   tril/triu: where(column - row <= diagonal (>= for triu), self, 0), the
//     0 a 0-dim tensor of self's dtype (a host scalar), any dtype.
#include "shape_ops.h"

#include <algorithm>
#include <vector>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"

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

}  // namespace

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
  op::flip.register_kernel(DispatchKey::CUDA, flip_impl);
  op::tril.register_kernel(DispatchKey::CUDA, tril_impl);
  op::triu.register_kernel(DispatchKey::CUDA, triu_impl);
}

}  // namespace flambeau::cuda
