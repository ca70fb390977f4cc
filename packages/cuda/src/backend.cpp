// Note [CUDA backend]
// ===================
// flambeau-cuda plugs CUDA into core through the public device API
// (docs/design/devices.md), as the simulated device does:
//   * CudaBackend (DeviceType::CUDA): device_count from cudaGetDeviceCount
//     (0 when it fails: no driver or no GPU; the reason is kept for messages),
//     one default stream per device (the legacy default stream, id 0) and a
//     pool of kStreamsPerPool non-blocking streams per device and priority
//     class, handed out round-robin (PyTorch's design: streams are never
//     destroyed, so the allocator may hold them); events over cudaEvent_t,
//     created at their first record on the stream's device;
//   * memory: alloc's CachingAllocator (stream-aware, one per device) over
//     cudaMalloc, and one over cudaHostAlloc for pinned host memory; the
//     allocators are made on the Python side (flambeau_alloc is a separate
//     extension module: only its Python API and raw_backend.h are shared) and
//     handed back to install_allocators_and_kernels;
//   * the host fallback is refused: device memory is not addressable by the
//     host, so an op without a CUDA kernel raises NotImplementedError
//     "[op] is not yet implemented on CUDA".
// Every CUDA runtime error becomes a Python exception naming the call and
// cudaGetErrorString (throw_cuda_error).
#include "backend.h"

#include <cstdio>
#include <unordered_map>

#include "flambeau/allocator.h"
#include "flambeau/device_errors.h"

namespace flambeau::cuda {

void throw_cuda_error(const char* call, cudaError_t err) {
  (void)cudaGetLastError();  // clear the (non-sticky) error so the next call starts clean
  std::string msg = std::string("[cuda] ") + call + " failed: " + cudaGetErrorString(err) + " (" +
                    cudaGetErrorName(err) + ")";
  if (err == cudaErrorInvalidValue || err == cudaErrorInvalidDevice) throw ValueError(msg);
  if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(msg);
  throw AcceleratorError(msg);  // torch.AcceleratorError: a failure while executing on the device
}

CudaDeviceSetter::CudaDeviceSetter(int index) {
  if (index < 0) return;
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess) {
    (void)cudaGetLastError();
    cur = -1;
  }
  if (cur == index) return;
  FBC_CHECK("cudaSetDevice", cudaSetDevice(index));
  prev_ = cur;
}

CudaDeviceSetter::~CudaDeviceSetter() {
  if (prev_ >= 0 && cudaSetDevice(prev_) != cudaSuccess) (void)cudaGetLastError();
}

// ---- streams and events ----

bool CudaStream::query() const {
  const cudaError_t e = cudaStreamQuery(handle_);
  if (e == cudaSuccess) return true;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  throw_cuda_error("cudaStreamQuery", e);
}

void CudaStream::synchronize() {
  CudaDeviceSetter guard(device_.index);
  FBC_CHECK("cudaStreamSynchronize", cudaStreamSynchronize(handle_));
}

void CudaStream::wait_event(const Event& event) {
  const auto* e = dynamic_cast<const CudaEvent*>(&event);
  FB_CHECK_TYPE(e, "[Stream.wait_event] expected a cuda event");
  cudaEvent_t h = e->handle();
  if (!h) return;  // never recorded: nothing to wait for
  CudaDeviceSetter guard(device_.index);
  FBC_CHECK("cudaStreamWaitEvent", cudaStreamWaitEvent(handle_, h, 0));
}

CudaStream& as_cuda(Stream& s, const char* op) {
  auto* p = dynamic_cast<CudaStream*>(&s);
  FB_CHECK_TYPE(p, "[", op, "] expected a cuda stream, got a stream of ", s.device().str());
  return *p;
}

CudaEvent::~CudaEvent() {
  if (event_ && cudaEventDestroy(event_) != cudaSuccess) (void)cudaGetLastError();
}

void CudaEvent::record(Stream& stream) {
  CudaStream& s = as_cuda(stream, "Event.record");
  std::lock_guard lock(m_);
  FB_CHECK_VALUE(device_ < 0 || device_ == s.device().index,
                 "[Event.record] the event was recorded on cuda:", device_,
                 " and cannot be recorded on a stream of ", s.device().str());
  CudaDeviceSetter guard(s.device().index);
  if (!event_) {
    FBC_CHECK("cudaEventCreateWithFlags",
              cudaEventCreateWithFlags(&event_, timing_ ? cudaEventDefault : cudaEventDisableTiming));
    device_ = s.device().index;
  }
  FBC_CHECK("cudaEventRecord", cudaEventRecord(event_, s.handle()));
}

cudaEvent_t CudaEvent::handle() const {
  std::lock_guard lock(m_);
  return event_;
}

bool CudaEvent::query() const {
  cudaEvent_t h = handle();
  if (!h) return true;
  const cudaError_t e = cudaEventQuery(h);
  if (e == cudaSuccess) return true;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  throw_cuda_error("cudaEventQuery", e);
}

void CudaEvent::synchronize() {
  cudaEvent_t h = handle();
  if (h) FBC_CHECK("cudaEventSynchronize", cudaEventSynchronize(h));
}

double CudaEvent::elapsed_time(const Event& end_event) const {
  const auto* end = dynamic_cast<const CudaEvent*>(&end_event);
  FB_CHECK_TYPE(end, "[Event.elapsed_time] expected a cuda event");
  FB_CHECK_VALUE(timing_ && end->timing_, "[Event.elapsed_time] both events need enable_timing=True");
  cudaEvent_t a = handle(), b = end->handle();
  FB_CHECK(a && b, "[Event.elapsed_time] both events must be recorded first");
  float ms = 0;
  FBC_CHECK("cudaEventElapsedTime", cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// ---- the backend ----

CudaBackend::CudaBackend() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    reason_ = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    n = 0;
  }
  count_ = n;
  for (int i = 0; i < n; ++i) {
    defaults_.push_back(
        std::make_shared<CudaStream>(Device(DeviceType::CUDA, static_cast<int16_t>(i)), 0, nullptr));
    pools_.push_back(std::vector<std::vector<StreamPtr>>(2));
    next_.push_back(std::vector<size_t>(2, 0));
  }
  generators_.resize(static_cast<size_t>(std::max(n, 1)));
  for (auto& g : generators_) g = std::make_unique<Generator>();
}

size_t CudaBackend::checked(int index) const {
  FB_CHECK_VALUE(index >= 0 && index < count_, "[cuda] invalid device index ", index, " (", count_,
                 " CUDA devices)");
  return static_cast<size_t>(index);
}

StreamPtr CudaBackend::default_stream(int index) { return defaults_.at(checked(index)); }

StreamPtr CudaBackend::new_stream(int index, int priority) {
  const size_t i = checked(index);
  // CUDA: a lower number is a higher priority; PyTorch's priority < 0 is "high".
  const size_t cls = priority < 0 ? 1 : 0;
  std::lock_guard lock(m_);
  auto& pool = pools_[i][cls];
  const size_t slot = next_[i][cls]++ % kStreamsPerPool;
  if (slot < pool.size()) return pool[slot];
  CudaDeviceSetter guard(index);
  int least = 0, greatest = 0;
  FBC_CHECK("cudaDeviceGetStreamPriorityRange", cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t h = nullptr;
  FBC_CHECK("cudaStreamCreateWithPriority",
            cudaStreamCreateWithPriority(&h, cudaStreamNonBlocking, cls ? greatest : least));
  auto s = std::make_shared<CudaStream>(Device(DeviceType::CUDA, static_cast<int16_t>(index)), next_id_++, h);
  pool.push_back(s);  // never destroyed (Note [Device backends])
  return s;
}

EventPtr CudaBackend::new_event(bool enable_timing) { return std::make_shared<CudaEvent>(enable_timing); }

void CudaBackend::synchronize(int index) {
  checked(index);
  CudaDeviceSetter guard(index);
  FBC_CHECK("cudaDeviceSynchronize", cudaDeviceSynchronize());
}

void CudaBackend::run_host_fallback(Stream& stream, const char* op, const std::function<void()>& fn) {
  (void)stream;
  (void)fn;
  throw NotImplementedError(
      std::string("[") + op +
      "] is not yet implemented on CUDA (flambeau-cuda has no kernel for it, and CUDA memory "
      "cannot run the CPU kernel); move the tensors to the cpu with .cpu() for this op");
}

Generator& CudaBackend::generator(int index) {
  FB_CHECK_VALUE(index >= 0 && static_cast<size_t>(index) < generators_.size(),
                 "[cuda] invalid device index ", index);
  return *generators_[static_cast<size_t>(index)];
}

// ---- memory ----

namespace {

class CudaDeviceMemory final : public alloc::RawBackend {
 public:
  explicit CudaDeviceMemory(int index) : index_(index) {}
  void* allocate(size_t nbytes) noexcept override {
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(index_) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    void* p = nullptr;
    if (cudaMalloc(&p, nbytes) != cudaSuccess) {
      (void)cudaGetLastError();  // out of memory: the caching allocator releases its cache and retries
      p = nullptr;
    }
    if (prev != index_) (void)cudaSetDevice(prev);
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    (void)nbytes;
    if (cudaFree(ptr) != cudaSuccess) {
      const cudaError_t e = cudaGetLastError();
      std::fprintf(stderr, "flambeau-cuda: cudaFree(%p) failed: %s\n", ptr, cudaGetErrorString(e));
    }
  }
  size_t segment_granularity() const override { return 512; }
  DeviceType device_type() const override { return DeviceType::CUDA; }
  std::string name() const override { return "cuda:" + std::to_string(index_) + " memory (cudaMalloc)"; }

 private:
  int index_;
};

class CudaPinnedMemory final : public alloc::RawBackend {
 public:
  void* allocate(size_t nbytes) noexcept override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, nbytes, cudaHostAllocDefault) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    (void)nbytes;
    if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
  }
  size_t segment_granularity() const override { return 4096; }
  DeviceType device_type() const override { return DeviceType::CPU; }
  std::string name() const override { return "cuda pinned host (cudaHostAlloc)"; }
};

/// Routes CUDA allocations to the caching allocator of each device
/// (allocate_on by device index; deallocate and record_stream by the owner).
class CudaDeviceAllocator final : public Allocator {
 public:
  explicit CudaDeviceAllocator(std::vector<AllocatorPtr> per_device) : per_device_(std::move(per_device)) {}
  void* allocate(size_t nbytes) override {
    return allocate_on(nbytes,
                       Device(DeviceType::CUDA, static_cast<int16_t>(current_device(DeviceType::CUDA))));
  }
  void* allocate_on(size_t nbytes, Device device) override {
    FB_CHECK_VALUE(device.index >= 0 && static_cast<size_t>(device.index) < per_device_.size(),
                   "[allocate] invalid device ", device.str(), " (", per_device_.size(), " CUDA devices)");
    void* p = per_device_[static_cast<size_t>(device.index)]->allocate_on(nbytes, device);
    std::lock_guard lock(m_);
    owner_[p] = device.index;
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    int index = -1;
    {
      std::lock_guard lock(m_);
      auto it = owner_.find(ptr);
      if (it != owner_.end()) {
        index = it->second;
        owner_.erase(it);
      }
    }
    if (index < 0) {
      std::fprintf(stderr,
                   "flambeau-cuda: asked to free %p (%zu bytes), which no CUDA device allocated; ignored\n",
                   ptr, nbytes);
      return;
    }
    per_device_[static_cast<size_t>(index)]->deallocate(ptr, nbytes);
  }
  void record_stream(void* ptr, Stream& stream) override {
    int index = -1;
    {
      std::lock_guard lock(m_);
      auto it = owner_.find(ptr);
      if (it != owner_.end()) index = it->second;
    }
    if (index >= 0) per_device_[static_cast<size_t>(index)]->record_stream(ptr, stream);
  }
  std::string name() const override { return "cuda caching"; }

 private:
  std::vector<AllocatorPtr> per_device_;
  std::mutex m_;
  std::unordered_map<void*, int> owner_;
};

std::mutex g_mutex;
std::shared_ptr<CudaBackend> g_backend;
bool g_installed = false;

}  // namespace

void CudaBackend::set_allocators(std::vector<AllocatorPtr> per_device, AllocatorPtr pinned) {
  FB_CHECK_VALUE(per_device.size() == static_cast<size_t>(count_), "[flambeau_cuda] expected ", count_,
                 " device allocators, got ", per_device.size());
  pinned_ = std::move(pinned);
  set_allocator(DeviceType::CUDA, std::make_shared<CudaDeviceAllocator>(std::move(per_device)));
}

std::unique_ptr<alloc::RawBackend> make_device_memory(int index) {
  return std::make_unique<CudaDeviceMemory>(index);
}
std::unique_ptr<alloc::RawBackend> make_pinned_memory() { return std::make_unique<CudaPinnedMemory>(); }

std::shared_ptr<CudaBackend> backend() {
  std::lock_guard lock(g_mutex);
  FB_CHECK(g_backend, "[flambeau_cuda] the CUDA backend is not registered (import flambeau_cuda)");
  return g_backend;
}

std::shared_ptr<CudaBackend> register_backend() {
  std::lock_guard lock(g_mutex);
  if (!g_backend) {
    g_backend = std::make_shared<CudaBackend>();
    register_device_backend(DeviceType::CUDA, g_backend);
  }
  return g_backend;
}

void install_allocators_and_kernels(std::vector<AllocatorPtr> per_device, AllocatorPtr pinned) {
  std::shared_ptr<CudaBackend> b = backend();
  std::lock_guard lock(g_mutex);
  if (g_installed) return;
  b->set_allocators(std::move(per_device), std::move(pinned));
  register_copy_kernels();
  register_gemm_kernels();
  register_elementwise_kernels();
  register_reduce_kernels();
  register_nn_kernels();
  register_indexing_kernels();
  register_conv_kernels();
  register_pool_kernels();
  register_norm_kernels();
  register_sort_kernels();
  register_advanced_index_kernels();
  register_shape_kernels();
  register_scan_kernels();
  g_installed = true;
}

cudaStream_t current_cuda_stream(Device device) {
  StreamPtr s = current_stream(device);
  return as_cuda(*s, "current_stream").handle();
}

}  // namespace flambeau::cuda
