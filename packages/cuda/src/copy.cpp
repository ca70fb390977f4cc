// CUDA kernels of the factories and copies: empty, fill_, copy_
// (docs/design/devices.md: the minimum a device registers). Each enqueues on
// the current stream of its device (current_cuda_stream).
//
// copy_ paths:
//   * cuda -> same cuda device: one launch of the strided cast-copy kernel
//     (broadcast source strides are 0), or cudaMemcpyAsync when both sides
//     are contiguous with one dtype;
//   * between two cuda devices: the destination's stream first waits for the
//     source device's current stream (an event), the source is made
//     contiguous on its device and copied with cudaMemcpyPeerAsync, then cast
//     and scattered on the destination device;
//   * host <-> cuda: cudaMemcpyAsync of a contiguous buffer. A non-contiguous
//     or other-dtype host side is staged through a contiguous host tensor
//     (cast on the host by the CPU kernel); a non-contiguous device side
//     through a contiguous device tensor (the strided kernel). The copy waits
//     for its stream unless non_blocking is set and the host side is pinned
//     memory of this backend (then the pinned block is record_stream'ed, so
//     it is not reused before the copy ran: Note [Stream-ordered reuse]).
#include <algorithm>
#include <cstring>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/memory_format.h"
#include "flambeau/ops.h"
#include "flambeau/tensor_impl.h"
#include "kernels.h"

namespace flambeau::cuda {

static_assert(static_cast<int>(ScalarType::Bool) == kBool &&
                  static_cast<int>(ScalarType::Float16) == kFloat16 &&
                  static_cast<int>(ScalarType::Float64) == kFloat64 &&
                  static_cast<int>(ScalarType::UInt64) == kUInt64 &&
                  static_cast<int>(ScalarType::ComplexDouble) == kComplexDouble,
              "kernels.h's dtype codes must be the values of ScalarType");

namespace {

void check_launch(const char* what, int err) {
  if (err != 0) throw_cuda_error(what, static_cast<cudaError_t>(err));
}

template <int N>
OffsetCalculator<N> make_calc(IntArrayRef sizes, const IntArrayRef (&strides)[N], const char* op) {
  OffsetCalculator<N> c;
  FB_CHECK_VALUE(sizes.size() <= static_cast<size_t>(kMaxDims), "[", op, "] CUDA kernels handle up to ",
                 kMaxDims, " dims, got a tensor of ", sizes.size());
  c.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = sizes[static_cast<size_t>(d)];
    for (int k = 0; k < N; ++k) c.strides[k][d] = strides[k][static_cast<size_t>(d)];
  }
  coalesce(c);
  if (c.ndim == 0) {  // one element (or all dims of size 1)
    c.ndim = 1;
    c.sizes[0] = 1;
    for (int k = 0; k < N; ++k) c.strides[k][0] = 1;
  }
  return c;
}

/// The strides of `src` broadcast to `sizes` (0 on broadcast dims).
Shape broadcast_strides(const Tensor& src, IntArrayRef sizes) {
  Shape out(sizes.size(), 0);
  const auto ss = src.sizes();
  const auto st = src.strides();
  const size_t lead = sizes.size() - ss.size();
  for (size_t i = 0; i < ss.size(); ++i) out[lead + i] = ss[i] == 1 ? 0 : st[i];
  return out;
}

Tensor empty_cuda(IntArrayRef sizes, ScalarType dtype, Device device) {
  require_device(device, "empty");
  const int64_t nbytes = shape_nbytes(sizes, dtype, "empty");
  auto storage = StorageImpl::allocate(static_cast<size_t>(nbytes), device);
  Shape s(sizes.begin(), sizes.end());
  Shape st = contiguous_strides(s, "empty");
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(s), std::move(st), 0));
}

Tensor& fill_cuda(Tensor& self, const Scalar& value) {
  // The element's bytes come from the CPU kernel (its checks and conversions).
  Tensor one = op::empty(Shape{}, self.dtype(), Device(DeviceType::CPU));
  op::fill_.call_kernel(DispatchKey::CPU, one, value);
  if (self.numel() > 0) {
    CudaDeviceSetter guard(self.device().index);
    const IntArrayRef strides[1] = {self.strides()};
    const auto calc = make_calc<1>(self.sizes(), strides, "fill_");
    check_launch("fill_ kernel launch",
                 launch_fill(self.data_ptr(), static_cast<int>(itemsize(self.dtype())), one.data_ptr(), calc,
                             self.numel(), current_cuda_stream(self.device())));
  }
  self.impl()->bump_version();
  return self;
}

void check_copy_shapes(const Tensor& self, const Tensor& src) {
  const auto ds = self.sizes();
  const auto ss = src.sizes();
  bool ok = ss.size() <= ds.size();
  for (size_t i = 0; ok && i < ss.size(); ++i) {
    const int64_t a = ss[ss.size() - 1 - i], b = ds[ds.size() - 1 - i];
    ok = a == b || a == 1;
  }
  FB_CHECK_VALUE(ok, "[copy_] the source of shape ", shape_str(ss),
                 " cannot be broadcast to the destination of shape ", shape_str(ds));
  check_no_internal_overlap(self, "copy_");
}

bool complex_mismatch(ScalarType a, ScalarType b) { return a != b && (is_complex(a) || is_complex(b)); }

/// dst (cuda) <- src (cuda, same device), any strides/dtypes, src broadcast.
void copy_same_device(Tensor& dst, const Tensor& src) {
  FB_CHECK_TYPE(!complex_mismatch(dst.dtype(), src.dtype()), "[copy_] copying between ",
                dtype_name(src.dtype()), " and ", dtype_name(dst.dtype()), " is not yet implemented on CUDA");
  CudaDeviceSetter guard(dst.device().index);
  cudaStream_t s = current_cuda_stream(dst.device());
  const bool same_shape = src.sizes().size() == dst.sizes().size() &&
                          std::equal(src.sizes().begin(), src.sizes().end(), dst.sizes().begin());
  if (dst.dtype() == src.dtype() && same_shape && dst.is_contiguous() && src.is_contiguous()) {
    FBC_CHECK("cudaMemcpyAsync", cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(),
                                                 static_cast<size_t>(dst.numel()) * itemsize(dst.dtype()),
                                                 cudaMemcpyDeviceToDevice, s));
    return;
  }
  const Shape sst = broadcast_strides(src, dst.sizes());
  const IntArrayRef strides[2] = {dst.strides(), IntArrayRef(sst)};
  const auto calc = make_calc<2>(dst.sizes(), strides, "copy_");
  check_launch("copy_ kernel launch",
               launch_copy(dst.data_ptr(), static_cast<int>(dst.dtype()), src.data_ptr(),
                           static_cast<int>(src.dtype()), calc, dst.numel(), s));
}

bool is_pinned(const Tensor& t) {
  const AllocatorPtr& p = backend()->pinned();
  return p && t.device().is_cpu() && t.impl()->storage()->allocator() == p;
}

Tensor& copy_cuda(Tensor& self, const Tensor& src) {
  check_copy_shapes(self, src);
  if (self.numel() == 0) {
    self.impl()->bump_version();
    return self;
  }
  const Device dd = self.device(), sd = src.device();
  const bool nb = detail::tls_non_blocking;
  if (dd.type == DeviceType::CUDA && sd.type == DeviceType::CUDA) {
    const bool same = self.data_ptr() == src.data_ptr() && self.dtype() == src.dtype() &&
                      std::ranges::equal(self.sizes(), src.sizes()) &&
                      std::ranges::equal(self.strides(), src.strides());
    if (same) {
      // x.copy_(x): nothing to do
    } else if (dd == sd) {
      copy_same_device(self, src);
    } else {
      // After the work enqueued on the source device so far.
      EventPtr e = backend()->new_event(false);
      e->record(*current_stream(sd));
      current_stream(dd)->wait_event(*e);
      Tensor packed = src.is_contiguous() ? src : op::contiguous(src, MemoryFormat::Contiguous);
      Tensor landed = op::empty(packed.sizes(), packed.dtype(), dd);
      {
        CudaDeviceSetter guard(dd.index);
        FBC_CHECK("cudaMemcpyPeerAsync",
                  cudaMemcpyPeerAsync(landed.data_ptr(), dd.index, packed.data_ptr(), sd.index,
                                      static_cast<size_t>(packed.numel()) * itemsize(packed.dtype()),
                                      current_cuda_stream(dd)));
      }
      // The source's block is read on dd's stream (Note [Stream-ordered reuse]).
      if (const AllocatorPtr& a = packed.impl()->storage()->allocator())
        a->record_stream(packed.impl()->storage()->data(), *current_stream(dd));
      copy_same_device(self, landed);
    }
  } else if (dd.type == DeviceType::CUDA) {
    FB_CHECK_VALUE(sd.is_cpu(), "[copy_] cannot copy from ", sd.str(), " to ", dd.str());
    // host -> device: a contiguous host buffer of self's dtype and shape.
    const bool same_shape = src.sizes().size() == self.sizes().size() &&
                            std::equal(src.sizes().begin(), src.sizes().end(), self.sizes().begin());
    Tensor host = src;
    if (!(same_shape && src.dtype() == self.dtype() && src.is_contiguous())) {
      host = op::empty(self.sizes(), self.dtype(), Device(DeviceType::CPU));
      op::copy_.call_kernel(DispatchKey::CPU, host, src);
    }
    Tensor target = self.is_contiguous() ? self : op::empty(self.sizes(), self.dtype(), dd);
    CudaDeviceSetter guard(dd.index);
    cudaStream_t s = current_cuda_stream(dd);
    FBC_CHECK("cudaMemcpyAsync", cudaMemcpyAsync(target.data_ptr(), host.data_ptr(),
                                                 static_cast<size_t>(host.numel()) * itemsize(host.dtype()),
                                                 cudaMemcpyHostToDevice, s));
    if (!target.is_same(self)) copy_same_device(self, target);
    if (nb && host.is_same(src) && is_pinned(src)) {
      backend()->pinned()->record_stream(src.impl()->storage()->data(), *current_stream(dd));
    } else {
      FBC_CHECK("cudaStreamSynchronize", cudaStreamSynchronize(s));  // the host buffer may go away
    }
  } else {
    FB_CHECK_VALUE(dd.is_cpu() && sd.type == DeviceType::CUDA, "[copy_] cannot copy from ", sd.str(), " to ",
                   dd.str());
    // device -> host: a contiguous device buffer of self's dtype and shape.
    const bool same_shape = src.sizes().size() == self.sizes().size() &&
                            std::equal(src.sizes().begin(), src.sizes().end(), self.sizes().begin());
    Tensor dev = src;
    if (!(same_shape && src.dtype() == self.dtype() && src.is_contiguous())) {
      dev = op::empty(self.sizes(), self.dtype(), sd);
      copy_same_device(dev, src);
    }
    Tensor host =
        self.is_contiguous() ? self : op::empty(self.sizes(), self.dtype(), Device(DeviceType::CPU));
    CudaDeviceSetter guard(sd.index);
    cudaStream_t s = current_cuda_stream(sd);
    FBC_CHECK("cudaMemcpyAsync", cudaMemcpyAsync(host.data_ptr(), dev.data_ptr(),
                                                 static_cast<size_t>(dev.numel()) * itemsize(dev.dtype()),
                                                 cudaMemcpyDeviceToHost, s));
    if (nb && host.is_same(self) && is_pinned(self)) {
      backend()->pinned()->record_stream(self.impl()->storage()->data(), *current_stream(sd));
    } else {
      FBC_CHECK("cudaStreamSynchronize", cudaStreamSynchronize(s));
      if (!host.is_same(self)) op::copy_.call_kernel(DispatchKey::CPU, self, host);
    }
  }
  self.impl()->bump_version();
  return self;
}

// clone: a contiguous copy (preserve_format too), or channels_last when asked.
Tensor clone_cuda(const Tensor& self, MemoryFormat memory_format) {
  shape_nbytes(self.sizes(), self.dtype(), "clone");
  Tensor out = op::empty(self.sizes(), self.dtype(), self.device());
  if (memory_format == MemoryFormat::ChannelsLast || memory_format == MemoryFormat::ChannelsLast3d)
    out =
        op::as_strided(out, self.sizes(), strides_for_memory_format(self.sizes(), memory_format, "clone"), 0);
  if (out.numel() > 0) copy_same_device(out, self);
  return out;
}

Tensor cast_cuda(const Tensor& self, ScalarType dtype) {
  shape_nbytes(self.sizes(), dtype, "cast");
  Tensor out = op::empty(self.sizes(), dtype, self.device());
  if (out.numel() > 0) copy_same_device(out, self);
  return out;
}

}  // namespace

void register_copy_kernels() {
  op::empty.register_kernel(DispatchKey::CUDA, empty_cuda);
  op::fill_.register_kernel(DispatchKey::CUDA, fill_cuda);
  op::copy_.register_kernel(DispatchKey::CUDA, copy_cuda);
  op::clone.register_kernel(DispatchKey::CUDA, clone_cuda);
  op::cast.register_kernel(DispatchKey::CUDA, cast_cuda);
}

}  // namespace flambeau::cuda
