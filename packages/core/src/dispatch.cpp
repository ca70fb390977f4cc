#include "flambeau/dispatch.h"

#include <map>
#include <mutex>
#include <set>
#include <string_view>

#include "flambeau/device_backend.h"
#include "flambeau/error.h"

namespace flambeau {

namespace detail {
thread_local uint8_t tls_autograd_excluded = 0;
std::atomic<bool> g_forward_ad_active{false};
}  // namespace detail

const char* dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::CPU:
      return "CPU";
    case DispatchKey::CUDA:
      return "CUDA";
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::Generic:
      return "Generic";
    case DispatchKey::Composite:
      return "Composite";
    case DispatchKey::PrivateUse1:
      return detail::privateuse1_registered() ? detail::privateuse1_name() : "PrivateUse1";
    case DispatchKey::Meta:
      return "Meta";
  }
  return "?";
}

namespace {
// Every op that had a kernel registered, by name; filled from static
// initializers, hence a function-local static.
std::map<std::string_view, const OpBase*>& op_registry() {
  static std::map<std::string_view, const OpBase*> r;
  return r;
}
std::mutex& op_registry_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

const OpBase* OpBase::find(std::string_view name) {
  std::lock_guard lock(op_registry_mutex());
  auto it = op_registry().find(name);
  return it == op_registry().end() ? nullptr : it->second;
}

std::vector<std::string> OpBase::registered_names() {
  std::lock_guard lock(op_registry_mutex());
  std::vector<std::string> out;
  for (const auto& [name, op] : op_registry()) out.emplace_back(name);
  return out;
}

// Note [Kernel trace]
namespace detail {
namespace {
thread_local bool tls_trace_thread = false;
thread_local bool tls_in_device_kernel = false;
std::mutex g_trace_mutex;
std::set<std::vector<std::string>> g_trace_seen;
}  // namespace

KernelTraceScope::KernelTraceScope(const char* op, DeviceType device, bool generic) {
  if (!tls_trace_thread || tls_in_device_kernel) return;
  {
    std::lock_guard lock(g_trace_mutex);
    g_trace_seen.insert({op, Device(device, -1).str(), generic ? "Generic" : "own"});
  }
  if (!generic) {
    tls_in_device_kernel = true;
    entered_ = true;
  }
}
KernelTraceScope::~KernelTraceScope() {
  if (entered_) tls_in_device_kernel = false;
}

void kernel_trace_start() {
  {
    std::lock_guard lock(g_trace_mutex);
    g_trace_seen.clear();
  }
  tls_trace_thread = true;
  tls_in_device_kernel = false;
  g_observe.fetch_or(kObserveKernelTrace);
}

std::vector<std::vector<std::string>> kernel_trace_stop() {
  g_observe.fetch_and(static_cast<uint8_t>(~kObserveKernelTrace));
  tls_trace_thread = false;
  std::lock_guard lock(g_trace_mutex);
  std::vector<std::vector<std::string>> out(g_trace_seen.begin(), g_trace_seen.end());
  g_trace_seen.clear();
  return out;
}
}  // namespace detail

void OpBase::set_kernel(DispatchKey key, void* fn) {
  {
    std::lock_guard lock(op_registry_mutex());
    op_registry()[name_] = this;
  }
  kernels_[static_cast<int>(key)] = fn;
  void* generic = kernels_[static_cast<int>(DispatchKey::Generic)];
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::PrivateUse1, DispatchKey::Meta}) {
    void* own = kernels_[static_cast<int>(k)];
    effective_[device_key_slot(k)] = own ? own : generic;
  }
}

// Note [Structured kernels]: an out kernel makes its device key run the op's adapter (and that of the
// in-place op structured on it); registrations come from static initializers in any order.
void OpBase::set_out_kernel(DispatchKey key, void* fn) {
  const int slot = device_key_slot(key);
  FB_INTERNAL_ASSERT(slot >= 0, "[", name_, "] an out kernel needs a device key, got ", dispatch_key_name(key));
  out_kernels_[slot] = fn;
  if (structured_) set_kernel(key, structured_);
  if (inplace_ && inplace_->structured_) inplace_->set_kernel(key, inplace_->structured_);
}

void OpBase::set_structured(void* adapter, OpBase& base) {
  structured_ = adapter;
  if (&base != this) base.inplace_ = this;
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::PrivateUse1})
    if (base.out_kernels_[device_key_slot(k)]) set_kernel(k, adapter);
}

void OpBase::missing_kernel(DispatchKey k) const {
  if (k == DispatchKey::CUDA)
    throw RuntimeError(
        detail::cat_str("[", name_, "] cannot run on cuda: flambeau-cuda is not installed ",
                        "(flambeau-core is built without CUDA: no CUDA kernel); use device='cpu'"));
  if (k == DispatchKey::Meta)
    throw NotImplementedError(detail::cat_str("[", name_, "] has no meta function yet: it cannot run on the 'meta' ",
                                              "device (no shape and dtype rule in the op table)"));
  throw NotImplementedError(detail::cat_str("[", name_, "] has no kernel for ", dispatch_key_name(k)));
}

}  // namespace flambeau
