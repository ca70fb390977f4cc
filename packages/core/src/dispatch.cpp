#include "flambeau/dispatch.h"

#include "flambeau/device_backend.h"
#include "flambeau/error.h"

namespace flambeau {

namespace detail {
thread_local bool tls_autograd_excluded = false;
}

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
  }
  return "?";
}

void OpBase::set_kernel(DispatchKey key, void* fn) {
  kernels_[static_cast<int>(key)] = fn;
  void* generic = kernels_[static_cast<int>(DispatchKey::Generic)];
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::PrivateUse1}) {
    void* own = kernels_[static_cast<int>(k)];
    effective_[device_key_slot(k)] = own ? own : generic;
  }
}

void OpBase::missing_kernel(DispatchKey k) const {
  if (k == DispatchKey::CUDA)
    throw RuntimeError(
        detail::cat_str("[", name_, "] cannot run on cuda: flambeau-cuda is not installed ",
                        "(flambeau-core is built without CUDA: no CUDA kernel); use device='cpu'"));
  throw NotImplementedError(detail::cat_str("[", name_, "] has no kernel for ", dispatch_key_name(k)));
}

}  // namespace flambeau
