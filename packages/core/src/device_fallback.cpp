// Note [Device fallback] (dispatch.h): the host fallback's work.
#include <cstring>

#include "flambeau/device_backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/memory_format.h"
#include "flambeau/ops.h"
#include "flambeau/tensor_impl.h"

namespace flambeau::detail {

bool has_device_backend(DeviceType t) { return device_backend(t) != nullptr; }

namespace {
// A tensor on another device seen before the call's device is known is kept
// in aliases_ under this mark until the device is known (the message names both).
constexpr uint64_t kMismatchMark = ~uint64_t{0};

[[noreturn]] void throw_mixed(const char* op, Device a, Device b) {
  throw RuntimeError(cat_str("[", op,
                             "] expected all tensors to be on the same device, but found at least "
                             "two devices, ",
                             a.str(), " and ", b.str(), " (move one with .to(device))"));
}
}  // namespace

void HostFallback::see(const Tensor& t) {
  if (!t.defined()) return;
  const Device d = t.device();
  if (d.type == type_) {
    if (!has_device_) {
      device_ = d;
      has_device_ = true;
      for (const Alias& a : aliases_)
        if (a.host_version == kMismatchMark) throw_mixed(op_, d, a.original.device());
      return;
    }
    if (d == device_) return;
  } else if (d.is_cpu() && t.dim() == 0) {
    return;  // a CPU scalar (e.g. a wrapped number) goes with any device
  }
  if (!has_device_) {
    aliases_.push_back({t, Tensor(), kMismatchMark});
    return;
  }
  throw_mixed(op_, device_, d);
}

Tensor HostFallback::map(const Tensor& t) {
  for (const Alias& a : aliases_)
    if (a.host_version == kMismatchMark) throw_mixed(op_, resolve_device(Device(type_)), a.original.device());
  if (!t.defined() || t.device().type != type_) return t;
  for (const Alias& a : aliases_)
    if (a.original.impl() == t.impl()) return a.host;
  // One host storage per device storage, so that views keep sharing memory.
  Storage host_storage;
  for (const Alias& a : aliases_)
    if (a.original.impl()->storage() == t.impl()->storage()) host_storage = a.host.impl()->storage();
  if (!host_storage) {
    Storage dev = t.impl()->storage();
    host_storage = StorageImpl::from_external(dev->data(), dev->nbytes(), Device(DeviceType::CPU),
                                              [keep = dev](void*) {});
  }
  const TensorImpl& ti = *t.impl();
  Tensor host(
      std::make_shared<TensorImpl>(host_storage, ti.dtype(), Shape(ti.sizes().begin(), ti.sizes().end()),
                                   Shape(ti.strides().begin(), ti.strides().end()), ti.storage_offset()));
  host.impl()->set_wrapped_number(ti.is_wrapped_number());
  aliases_.push_back({t, host, host_storage->version()});
  return host;
}

const Tensor* HostFallback::original_of(const Tensor& host) const {
  for (const Alias& a : aliases_)
    if (a.host.impl() == host.impl()) return &a.original;
  return nullptr;
}

void HostFallback::run(const std::function<void()>& fn) {
  Device d = has_device_ ? device_ : resolve_device(Device(type_));
  DeviceBackend& b = require_device(d, op_);
  DeviceGuard guard(d);
  StreamPtr stream = current_stream(d);
  b.run_host_fallback(*stream, op_, fn);
  // In-place writes bumped the host views' version: bump the device's.
  std::vector<const StorageImpl*> bumped;
  for (const Alias& a : aliases_) {
    const Storage& hs = a.host.impl()->storage();
    if (hs->version() == a.host_version) continue;
    const StorageImpl* ds = a.original.impl()->storage().get();
    bool seen = false;
    for (const StorageImpl* p : bumped) seen |= p == ds;
    if (!seen) {
      a.original.impl()->bump_version();
      bumped.push_back(ds);
    }
  }
  device_ = d;
  has_device_ = true;
}

Tensor HostFallback::unmap(const Tensor& r) {
  if (!r.defined() || !r.device().is_cpu()) return r;
  if (const Tensor* orig = original_of(r)) return *orig;
  const TensorImpl& ri = *r.impl();
  for (const Alias& a : aliases_) {
    if (a.host.impl()->storage() != ri.storage()) continue;
    // A view of an argument: the same view of the device storage.
    Tensor v(std::make_shared<TensorImpl>(
        a.original.impl()->storage(), ri.dtype(), Shape(ri.sizes().begin(), ri.sizes().end()),
        Shape(ri.strides().begin(), ri.strides().end()), ri.storage_offset()));
    v.impl()->set_is_view(true);
    return v;
  }
  // A new tensor: copy it into device memory. The stream is idle up to the
  // kernel that made it (run() waited), so a host copy is ordered.
  // A dense non-contiguous result (clone/empty_like of a transposed or
  // channels-last input: preserve_format) keeps its strides, as on the cpu.
  if (!r.is_contiguous() && r.numel() > 1 && is_non_overlapping_and_dense(r)) {
    const Tensor flat = op::empty(Shape{r.numel()}, r.dtype(), device_);
    std::memcpy(flat.data_ptr(), r.data_ptr(), static_cast<size_t>(r.numel()) * itemsize(r.dtype()));
    Tensor out(std::make_shared<TensorImpl>(flat.impl()->storage(), ri.dtype(),
                                            Shape(ri.sizes().begin(), ri.sizes().end()),
                                            Shape(ri.strides().begin(), ri.strides().end()), 0));
    out.impl()->set_wrapped_number(ri.is_wrapped_number());
    return out;
  }
  const Tensor src =
      r.is_contiguous() ? r : op::clone.call_kernel(DispatchKey::CPU, r, MemoryFormat::Contiguous);
  Tensor out = op::empty(src.sizes(), src.dtype(), device_);
  const size_t n = static_cast<size_t>(src.numel()) * itemsize(src.dtype());
  if (n) std::memcpy(out.data_ptr(), src.data_ptr(), n);
  out.impl()->set_wrapped_number(ri.is_wrapped_number());
  return out;
}

void copy_into_out(const Tensor& out, const Tensor& result) {
  Tensor dst = out;
  op::copy_(dst, result);
}

}  // namespace flambeau::detail
