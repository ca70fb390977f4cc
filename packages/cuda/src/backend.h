#pragma once
// flambeau-cuda's backend objects (Note [CUDA backend] in backend.cpp).
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flambeau/device_backend.h"
#include "flambeau/error.h"
#include "flambeau/random.h"
#include "flambeau_alloc/raw_backend.h"

namespace flambeau::cuda {

/// Throws flambeau::AcceleratorError "[cuda] <call> failed: <cudaGetErrorString> (<name>)"
/// (and clears the sticky last error), OutOfMemoryError for cudaErrorMemoryAllocation, or
/// ValueError for an invalid argument.
[[noreturn]] void throw_cuda_error(const char* call, cudaError_t err);
#define FBC_CHECK(call_name, expr)                                                        \
  do {                                                                                    \
    const cudaError_t fbc_err_ = (expr);                                                  \
    if (fbc_err_ != cudaSuccess) ::flambeau::cuda::throw_cuda_error(call_name, fbc_err_); \
  } while (0)

/// RAII: makes CUDA device `index` cudart's current device (cudaSetDevice)
/// and restores the previous one; does nothing for index < 0.
class CudaDeviceSetter {
 public:
  explicit CudaDeviceSetter(int index);
  ~CudaDeviceSetter();
  CudaDeviceSetter(const CudaDeviceSetter&) = delete;
  CudaDeviceSetter& operator=(const CudaDeviceSetter&) = delete;

 private:
  int prev_ = -1;
};

class CudaStream final : public Stream {
 public:
  CudaStream(Device device, int64_t id, cudaStream_t handle) : device_(device), id_(id), handle_(handle) {}
  Device device() const override { return device_; }
  int64_t id() const override { return id_; }
  bool query() const override;
  void synchronize() override;
  void wait_event(const Event& event) override;
  cudaStream_t handle() const { return handle_; }

 private:
  Device device_;
  int64_t id_;
  cudaStream_t handle_;  // nullptr: the legacy default stream
};

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(bool timing) : timing_(timing) {}
  ~CudaEvent() override;
  void record(Stream& stream) override;
  bool query() const override;
  void synchronize() override;
  double elapsed_time(const Event& end) const override;
  /// The event, or nullptr if never recorded.
  cudaEvent_t handle() const;

 private:
  bool timing_;
  mutable std::mutex m_;
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

CudaStream& as_cuda(Stream& s, const char* op);

class CudaBackend final : public DeviceBackend {
 public:
  /// Number of streams in each device's pool (per priority), as PyTorch.
  static constexpr int kStreamsPerPool = 32;

  CudaBackend();
  std::string name() const override { return "cuda"; }
  int device_count() const override { return count_; }
  StreamPtr default_stream(int index) override;
  StreamPtr new_stream(int index, int priority) override;
  EventPtr new_event(bool enable_timing) override;
  void synchronize(int index) override;
  void run_host_fallback(Stream& stream, const char* op, const std::function<void()>& fn) override;
  AllocatorPtr pinned_host_allocator() override { return count_ > 0 ? pinned_ : nullptr; }

  /// What cudaGetDeviceCount said when it failed (no driver, no GPU), or "".
  const std::string& unavailable_reason() const { return reason_; }
  /// Set once by the Python side (flambeau_cuda/__init__.py) with alloc's allocators.
  void set_allocators(std::vector<AllocatorPtr> per_device, AllocatorPtr pinned);
  const AllocatorPtr& pinned() const { return pinned_; }
  /// The generator of device `index` (Note [Random numbers]).
  Generator& generator(int index);

 private:
  size_t checked(int index) const;
  int count_ = 0;
  std::string reason_;
  std::mutex m_;
  std::vector<StreamPtr> defaults_;
  // pools_[device][priority class 0 low / 1 high]: created lazily, kept forever
  std::vector<std::vector<std::vector<StreamPtr>>> pools_;
  std::vector<std::vector<size_t>> next_;
  std::vector<std::unique_ptr<Generator>> generators_;
  int64_t next_id_ = 1;
  AllocatorPtr pinned_;
};

/// The process's backend (created by register_backend).
std::shared_ptr<CudaBackend> backend();
/// Registers the backend for DeviceType::CUDA (once).
std::shared_ptr<CudaBackend> register_backend();
/// After set_allocators: routes CUDA allocations to the per-device allocators
/// and registers the kernels (copy.cpp and the others).
void install_allocators_and_kernels(std::vector<AllocatorPtr> per_device, AllocatorPtr pinned);

/// Raw backends for alloc's CachingAllocator (raw_backend.h).
std::unique_ptr<alloc::RawBackend> make_device_memory(int index);
std::unique_ptr<alloc::RawBackend> make_pinned_memory();

/// Registers empty, fill_ and copy_ under DispatchKey::CUDA (copy.cpp).
void register_copy_kernels();
/// Registers mm, bmm and linear under DispatchKey::CUDA (gemm.cpp).
void register_gemm_kernels();
/// Registers the elementwise ops under DispatchKey::CUDA (elementwise.cpp).
void register_elementwise_kernels();
/// Registers the reductions and random fills under DispatchKey::CUDA (reduce.cpp).
void register_reduce_kernels();
/// Registers embedding and embedding_dense_backward under DispatchKey::CUDA (nn_ops.cpp).
void register_nn_kernels();
/// Registers gather, index_select, scatter_add and clamp under DispatchKey::CUDA (indexing.cpp).
void register_indexing_kernels();
/// Registers convolution and convolution_backward_weight under DispatchKey::CUDA (conv.cpp).
void register_conv_kernels();
/// Registers max/avg/adaptive-avg 2-D pooling and their backwards under DispatchKey::CUDA (pool.cpp).
void register_pool_kernels();
/// Registers native_layer_norm, native_batch_norm and their backwards under DispatchKey::CUDA (norm.cpp).
void register_norm_kernels();
/// Registers sort and topk under DispatchKey::CUDA (sort.cpp).
void register_sort_kernels();
/// Registers index and index_put_ (advanced indexing) under DispatchKey::CUDA (advanced_index.cpp).
void register_advanced_index_kernels();
/// Registers arange, flip, tril and triu under DispatchKey::CUDA (shape_ops.cpp).
void register_shape_kernels();
/// Registers cumsum and cumprod under DispatchKey::CUDA (scan.cpp).
void register_scan_kernels();

/// The current cudaStream_t of a CUDA device (its default stream unless set).
cudaStream_t current_cuda_stream(Device device);

}  // namespace flambeau::cuda
