#pragma once
// Note [Dispatch]
// Every op is one `Op<Signature>` object (declared in ops.h, defined in
// src/ops.cpp) holding one kernel per dispatch key. A call computes its key
// from the arguments:
//   * Autograd, if an Autograd kernel is registered, autograd is not excluded
//     on this thread (no_grad), and some tensor argument requires grad;
//   * otherwise the device type of the first tensor (or Device) argument.
// The Autograd kernel records the graph and calls the same op again under an
// AutoExcludeAutograd guard, which lands on the device kernel. Calls are
// unboxed (a typed function pointer), so the whole dispatch is a few loads and
// one indirect call. Op objects are constant-initialized, so kernels can be
// registered from static initializers of any translation unit or library.
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "flambeau/device.h"
#include "flambeau/macros.h"
#include "flambeau/tensor.h"

namespace flambeau {

enum class DispatchKey : uint8_t { CPU = 0, CUDA = 1, Autograd = 2 };
inline constexpr int kNumDispatchKeys = 3;
FB_API const char* dispatch_key_name(DispatchKey k);

inline DispatchKey device_dispatch_key(DeviceType t) {
  return t == DeviceType::CUDA ? DispatchKey::CUDA : DispatchKey::CPU;
}

namespace detail {
FB_API extern thread_local bool tls_autograd_excluded;
}

/// True unless autograd is excluded on this thread (no_grad / inference).
inline bool grad_mode_enabled() { return !detail::tls_autograd_excluded; }
inline void set_grad_mode_enabled(bool enabled) { detail::tls_autograd_excluded = !enabled; }

/// RAII: ops below this guard skip the Autograd layer (no_grad).
class AutoExcludeAutograd {
 public:
  AutoExcludeAutograd() : prev_(detail::tls_autograd_excluded) { detail::tls_autograd_excluded = true; }
  ~AutoExcludeAutograd() { detail::tls_autograd_excluded = prev_; }
  AutoExcludeAutograd(const AutoExcludeAutograd&) = delete;
  AutoExcludeAutograd& operator=(const AutoExcludeAutograd&) = delete;

 private:
  bool prev_;
};

/// RAII: sets grad mode (enable_grad / set_grad_enabled).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(grad_mode_enabled()) { set_grad_mode_enabled(enabled); }
  ~GradModeGuard() { set_grad_mode_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

namespace detail {
struct KeyState {
  bool requires_grad = false;
  bool has_device = false;
  DeviceType device = DeviceType::CPU;
  void see_device(DeviceType t) {
    if (!has_device) {
      device = t;
      has_device = true;
    }
  }
};
inline void visit_arg(KeyState& s, const Tensor& t) {
  if (t.defined()) {
    s.see_device(t.device().type);
    s.requires_grad |= t.requires_grad();
  }
}
inline void visit_arg(KeyState& s, const std::optional<Tensor>& t) {
  if (t) visit_arg(s, *t);
}
inline void visit_arg(KeyState& s, const TensorList& ts) {
  for (const auto& t : ts) visit_arg(s, t);
}
inline void visit_arg(KeyState& s, const Device& d) { s.see_device(d.type); }
template <class T>
inline void visit_arg(KeyState&, const T&) {}
}  // namespace detail

class FB_API OpBase {
 public:
  constexpr explicit OpBase(const char* name) : name_(name), kernels_{} {}
  const char* name() const { return name_; }
  bool has_kernel(DispatchKey k) const { return kernels_[static_cast<int>(k)] != nullptr; }
  /// Raises NotImplementedError: "[name] has no kernel for CUDA".
  [[noreturn]] void missing_kernel(DispatchKey k) const;

 protected:
  const char* name_;
  void* kernels_[kNumDispatchKeys];
};

template <class Sig>
class Op;

template <class R, class... Args>
class Op<R(Args...)> : public OpBase {
 public:
  using Signature = R(Args...);
  using Kernel = R (*)(Args...);
  constexpr explicit Op(const char* name) : OpBase(name) {}

  void register_kernel(DispatchKey key, Kernel fn) {
    kernels_[static_cast<int>(key)] = reinterpret_cast<void*>(fn);
  }

  R operator()(Args... args) const {
    detail::KeyState s;
    (detail::visit_arg(s, args), ...);
    DispatchKey key = device_dispatch_key(s.device);
    if (s.requires_grad && !detail::tls_autograd_excluded &&
        kernels_[static_cast<int>(DispatchKey::Autograd)])
      key = DispatchKey::Autograd;
    return call_kernel(key, std::forward<Args>(args)...);
  }

  /// Calls the kernel of one key directly (tests, and layers that know the key).
  R call_kernel(DispatchKey key, Args... args) const {
    void* k = kernels_[static_cast<int>(key)];
    if (!k) [[unlikely]]
      missing_kernel(key);
    return reinterpret_cast<Kernel>(k)(std::forward<Args>(args)...);
  }
};

/// Registers `fn` for `key` on `op` from a static initializer:
///   FB_REGISTER_KERNEL(op::add, CPU, add_cpu);
#define FB_REGISTER_KERNEL(op_object, key, fn)                     \
  static const bool FB_CONCAT(fb_reg_, __COUNTER__) = [] {         \
    (op_object).register_kernel(::flambeau::DispatchKey::key, fn); \
    return true;                                                   \
  }()
#define FB_CONCAT_INNER(a, b) a##b
#define FB_CONCAT(a, b) FB_CONCAT_INNER(a, b)

}  // namespace flambeau
