// Note [Reading a device value in a composite]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A composite that needs a value on the host (a count that sizes its result,
// a check of the values) must not read a device tensor's memory directly: a
// device's kernels may still be running (the simulated device's asynchronous
// kernels) or its memory may not be host-addressable (CUDA). read_first copies
// the first element to the cpu (synchronously, as item() does) when the tensor
// is on another device.
#pragma once

#include "flambeau/ops.h"

namespace flambeau::composite_detail {

template <class T>
T read_first(const Tensor& t) {
  if (t.device().is_cpu()) return t.data<T>()[0];
  Tensor one = t.dim() == 0 ? t : op::reshape(op::flatten(t, 0, -1), Shape{t.numel()});
  if (one.dim() > 0) one = op::select(one, 0, 0);
  Tensor host = empty(Shape{}, t.dtype(), Device(DeviceType::CPU));
  op::copy_(host, one);
  return host.data<T>()[0];
}

}  // namespace flambeau::composite_detail
