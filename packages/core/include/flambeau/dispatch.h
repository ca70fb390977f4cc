#pragma once
// Note [Dispatch]
// Every op is one `Op<Signature>` object, declared once in the op table
// (codegen/ops.yaml; the generated flambeau/ops_generated.h declares it and
// src/ops_generated.cpp defines it). It holds one kernel per dispatch key:
//   * Composite: the op is written once from other ops (no kernel, no
//     derivative of its own: autograd sees the ops it calls). If set, it is
//     always called, on every device, in every grad mode.
//   * Autograd: records the graph (flambeau-autograd registers these). Chosen
//     when autograd is not excluded on this thread and some tensor argument
//     requires grad or carries a forward-mode tangent (needs_autograd), or a
//     forward-mode dual level is active (g_forward_ad_active); under no_grad
//     only in the latter case, for the tangents (Note [Grad mode and below
//     autograd]). It calls the same op again under AutoExcludeAutograd, which
//     lands on the device kernel.
//   * CPU, CUDA, PrivateUse1 (a plug-in device, Note [Device types]): the
//     device kernels, chosen from the device type of the tensor (or Device)
//     arguments: the first non-CPU one, else CPU. A CPU argument can thus
//     only reach a device kernel, which checks it (0-dim CPU tensors, e.g.
//     wrapped numbers, are allowed; anything else names both devices).
//   * Generic: a device-generic kernel (views, shape ops, fills written once
//     for every device). It serves every device that has no kernel of its
//     own, so a second backend registers only its own kernels.
//   * Meta: the kernel of the meta device (Note [Meta device], meta.h): the
//     op's meta step alone, generated from its shape and dtype rules in the
//     table; it makes storage-less outputs and computes nothing.
// Note [Meta step]: an op whose table row has rules also gets a check step
// (set_meta_check), called on the device path before the device kernel (and
// before the Meta kernel): the argument checks and the dtype rule, written once
// for every backend, so a kernel may assume checked arguments.
// Note [Structured kernels]: an op marked `structured: true` in the table has
// one *out kernel* per backend, `void(const Tensor& out, args...)`
// (register_out_kernel, FB_REGISTER_OUT_KERNEL), that only computes: out has
// the dtype, shape and device of the result, the arguments passed the check
// step. The generated code runs the meta step and chooses out: the functional
// form allocates it (the op's *structured adapter*, installed as the device
// kernel of every device key with an out kernel, so has_kernel and the kernel
// trace read as before); out= passes the user's tensor (checked, resized as
// PyTorch) and the in-place forms pass self (`sin_` through its generated
// composite, `add_` through an adapter running add's out kernel on
// (self, self, other)). So `sin`, `sin(out=)` and `sin_` reach one kernel, with
// no copy. A device with no out kernel of its own runs what its functional
// form runs there, its own kernel or the Generic composition (CUDA's losses),
// and copies the result into out; only a device with neither, but a
// host-addressable backend, runs the CPU out kernel on host views (run_out,
// Note [Device fallback]); on the meta device the meta step is all.
// An op returning several tensors, `(Tensor values, Tensor indices)`, may be
// structured too: its out kernel takes one output per result, in order, before
// the arguments, `void(const Tensor& values, const Tensor& indices, args...)`
// (detail::OutKernelOf), and run_out takes them as one tuple of references,
// `op::max_dim.run_out({values, indices}, self, dim, keepdim)`. The meta step
// gives every result's dtype and shape and the adapter allocates them all; a
// result its rules leave out (a norm backward's gradient whose mask is false)
// reaches the kernel as an undefined Tensor, which the kernel must skip. The
// device is the first defined output's; with none defined nothing runs.
// out=(a, b) passes the user's tensors when each has its result's dtype and
// device (resized as PyTorch), else computes and copies as before.
// Note [Device fallback]: a call for a non-CPU device type whose op has
// neither a kernel of that key nor a Generic one goes to the host fallback
// (detail::host_fallback below), if a backend is registered for that type:
// every tensor argument becomes a CPU alias of the same memory, the CPU
// kernel runs in order on the device's current stream through
// DeviceBackend::run_host_fallback (which waits for it), and results are
// copied into device memory. A backend whose memory the host can address
// (the simulated device) gets every op this way; CUDA refuses it.
// Calls are unboxed (a typed function pointer): the whole dispatch is a few
// loads and one indirect call. Op objects are constant-initialized, so
// kernels can be registered from static initializers of any translation unit
// or library.
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "flambeau/device.h"
#include "flambeau/macros.h"
#include "flambeau/observe.h"
#include "flambeau/tensor.h"

namespace flambeau {

enum class DispatchKey : uint8_t {
  CPU = 0,
  CUDA = 1,
  Autograd = 2,
  Generic = 3,
  Composite = 4,
  PrivateUse1 = 5,
  Meta = 6
};
inline constexpr int kNumDispatchKeys = 7;
// The keys device_dispatch_key returns, one per DeviceType (indexed by it).
inline constexpr int kNumDeviceKeys = kNumDeviceTypes;
FB_API const char* dispatch_key_name(DispatchKey k);

inline DispatchKey device_dispatch_key(DeviceType t) {
  switch (t) {
    case DeviceType::CUDA:
      return DispatchKey::CUDA;
    case DeviceType::PrivateUse1:
      return DispatchKey::PrivateUse1;
    case DeviceType::Meta:
      return DispatchKey::Meta;
    default:
      return DispatchKey::CPU;
  }
}
/// The device type a device key serves, as an index of OpBase::effective_; -1
/// for the other keys.
inline int device_key_slot(DispatchKey k) {
  switch (k) {
    case DispatchKey::CPU:
      return static_cast<int>(DeviceType::CPU);
    case DispatchKey::CUDA:
      return static_cast<int>(DeviceType::CUDA);
    case DispatchKey::PrivateUse1:
      return static_cast<int>(DeviceType::PrivateUse1);
    case DispatchKey::Meta:
      return static_cast<int>(DeviceType::Meta);
    default:
      return -1;
  }
}

namespace detail {
// Note [Grad mode and below autograd]
// Two reasons keep a call out of the Autograd layer, kept as two bits of one
// thread-local byte so the dispatcher's common test stays one compare with 0:
//   * kGradModeOff: no_grad / set_grad_enabled(False). No backward graph is
//     recorded, but while a forward-mode dual level is active the Autograd
//     layer still runs to compute tangents, as PyTorch does under no_grad
//     (its kernels then record no node: grad_mode_enabled() is false);
//   * kBelowAutograd: an Autograd kernel (or a custom Function's forward)
//     calling ops below the layer (AutoExcludeAutograd): neither graph nor
//     tangents, which the kernel gives its outputs itself.
// enable_grad clears both, as it always re-enabled recording.
inline constexpr uint8_t kGradModeOff = 1;
inline constexpr uint8_t kBelowAutograd = 2;
FB_API extern thread_local uint8_t tls_autograd_excluded;
/// Set while a forward-mode dual level is active (flambeau-autograd's enter/exit_dual_level): every call
/// then goes through the Autograd layer, whose view kernels record each view's base, so an in-place write
/// into a view of a tensor without a tangent can give that base one (Note [Forward-mode AD]).
FB_API extern std::atomic<bool> g_forward_ad_active;
}  // namespace detail

// Note [Kernel trace]
// A debug recorder of the ops that reach a device kernel (a device's own or
// the Generic one), for coverage checks: "does every op one training step
// needs on the CPU have a CUDA kernel?" (packages/cuda/tests/
// test_kernel_coverage.py). On (_C._kernel_trace_start), only the thread
// that started it records, and only top-level device-kernel calls: ops a
// device's own kernel calls inside itself are its private business (another
// device's kernel may not need them), while the ops a Generic kernel calls are
// recorded, since on every device they dispatch again.
// It is a client of the observation gate (Note [Observation]): its flag is
// kObserveKernelTrace, tested only on the observed path.
namespace detail {
class FB_API KernelTraceScope {
 public:
  KernelTraceScope(const char* op, DeviceType device, bool generic);
  ~KernelTraceScope();
  KernelTraceScope(const KernelTraceScope&) = delete;
  KernelTraceScope& operator=(const KernelTraceScope&) = delete;

 private:
  bool entered_ = false;
};
FB_API void kernel_trace_start();
/// Stops recording; returns the (op name, device type name, "own"|"Generic") seen, sorted.
FB_API std::vector<std::vector<std::string>> kernel_trace_stop();
}  // namespace detail

/// True unless autograd is excluded on this thread (no_grad / inference, or below the Autograd layer):
/// whether an op records a backward graph.
inline bool grad_mode_enabled() { return detail::tls_autograd_excluded == 0; }
inline void set_grad_mode_enabled(bool enabled) {
  detail::tls_autograd_excluded = enabled ? 0 : (detail::tls_autograd_excluded | detail::kGradModeOff);
}

/// RAII: ops below this guard skip the Autograd layer (Note [Grad mode and below autograd]).
class AutoExcludeAutograd {
 public:
  AutoExcludeAutograd() : prev_(detail::tls_autograd_excluded) {
    detail::tls_autograd_excluded = prev_ | detail::kBelowAutograd;
  }
  ~AutoExcludeAutograd() { detail::tls_autograd_excluded = prev_; }
  AutoExcludeAutograd(const AutoExcludeAutograd&) = delete;
  AutoExcludeAutograd& operator=(const AutoExcludeAutograd&) = delete;

 private:
  uint8_t prev_;
};

/// RAII: sets grad mode (enable_grad / set_grad_enabled).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(detail::tls_autograd_excluded) { set_grad_mode_enabled(enabled); }
  ~GradModeGuard() { detail::tls_autograd_excluded = prev_; }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  uint8_t prev_;
};

namespace detail {
struct KeyState {
  bool needs_autograd = false;
  bool has_device = false;
  DeviceType device = DeviceType::CPU;
  void see_device(DeviceType t) {
    if (!has_device || (device == DeviceType::CPU && t != DeviceType::CPU)) {
      device = t;
      has_device = true;
    }
  }
};
inline void visit_arg(KeyState& s, const Tensor& t) {
  if (t.defined()) {
    s.see_device(t.device().type);
    s.needs_autograd |= t.impl()->needs_autograd();
  }
}
inline void visit_arg(KeyState& s, const std::optional<Tensor>& t) {
  if (t) visit_arg(s, *t);
}
inline void visit_arg(KeyState& s, const TensorList& ts) {
  for (const auto& t : ts) visit_arg(s, t);
}
inline void visit_arg(KeyState& s, const OptionalTensorList& ts) {
  for (const auto& t : ts) visit_arg(s, t);
}
inline void visit_arg(KeyState& s, const Device& d) { s.see_device(d.type); }
template <class T>
inline void visit_arg(KeyState&, const T&) {}
}  // namespace detail

// Note [Autocast]
// Mixed precision (fb.autocast, PyTorch's CPU autocast): inside a region, an
// op whose table row has `autocast: lower` (the GEMM and convolution family)
// runs on its floating tensor arguments cast to the region's dtype (bfloat16
// or float16); `fp32` (the losses, prod) on them cast to float32; `promote`
// (cat, stack, index_copy) on them cast to the widest floating dtype among
// them. float64 tensors are never cast (as PyTorch). The cast is op::cast,
// which is differentiable, so gradients reach the float32 leaves in float32.
// Inside a region the casts of leaf tensors that require grad (the weights)
// are cached, keyed by the tensor, until the outermost region exits.
// The op then runs with autocast excluded on this thread (its own inner ops
// are not cast again), as PyTorch's Autocast key. The state is per thread;
// while any thread has a region open the kObserveAutocast flag of the
// observation gate is set, so ops reach observed_call, which tests the
// thread's state: outside every region autocast costs nothing per op.
enum class AutocastPolicy : uint8_t { None = 0, Lower = 1, Fp32 = 2, Promote = 3 };

namespace detail {
struct AutocastState {
  bool enabled = false;
  bool cache_enabled = true;
  ScalarType dtype = ScalarType::BFloat16;
  int excluded = 0;  // > 0 inside an op autocast already cast for
  int nesting = 0;   // open regions (the cache is cleared when it falls to 0)
};
FB_API extern thread_local AutocastState tls_autocast;
inline bool autocast_active() { return tls_autocast.enabled && tls_autocast.excluded == 0; }
/// `t` cast for autocast to `target` when eligible (a floating tensor but float64, another
/// dtype than target), through the weight cache; else `t` itself.
FB_API Tensor autocast_cast(const Tensor& t, ScalarType target);
/// RAII: the op autocast cast for runs without autocast on this thread.
struct AutocastExcluded {
  AutocastExcluded() { ++tls_autocast.excluded; }
  ~AutocastExcluded() { --tls_autocast.excluded; }
  AutocastExcluded(const AutocastExcluded&) = delete;
  AutocastExcluded& operator=(const AutocastExcluded&) = delete;
};
// How each argument type is cast: tensors (and optional tensors and lists of
// them) that are not written in place; everything else passes as it is.
template <class A>
struct AutocastArg {
  static A apply(A a, ScalarType) { return std::forward<A>(a); }
  static void widen(const std::remove_cvref_t<A>&, std::optional<ScalarType>&) {}
};
inline void autocast_widen(const Tensor& t, std::optional<ScalarType>& widest) {
  if (!t.defined() || !is_floating(t.dtype()) || t.device().type != DeviceType::CPU) return;
  widest = widest ? promote_types(*widest, t.dtype()) : t.dtype();
}
template <>
struct AutocastArg<const Tensor&> {
  static Tensor apply(const Tensor& t, ScalarType target) { return autocast_cast(t, target); }
  static void widen(const Tensor& t, std::optional<ScalarType>& w) { autocast_widen(t, w); }
};
template <>
struct AutocastArg<const std::optional<Tensor>&> {
  static std::optional<Tensor> apply(const std::optional<Tensor>& t, ScalarType target) {
    if (!t) return std::nullopt;
    return autocast_cast(*t, target);
  }
  static void widen(const std::optional<Tensor>& t, std::optional<ScalarType>& w) {
    if (t) autocast_widen(*t, w);
  }
};
template <>
struct AutocastArg<const TensorList&> {
  static TensorList apply(const TensorList& ts, ScalarType target) {
    TensorList out;
    out.reserve(ts.size());
    for (const auto& t : ts) out.push_back(autocast_cast(t, target));
    return out;
  }
  static void widen(const TensorList& ts, std::optional<ScalarType>& w) {
    for (const auto& t : ts) autocast_widen(t, w);
  }
};
}  // namespace detail

/// Note [Structured kernels]: the result of an op's meta step, for a caller
/// that brings its own output (out=, an in-place form).
struct OutputSpec {
  ScalarType dtype;
  Device device;
  Shape shape;
};

namespace detail {
/// Note [Structured kernels]: the outputs an op's out kernel receives for its result R (Outs, what
/// run_out takes) and the kernel's type. One tensor (or an in-place op's Tensor&): `const Tensor& out`.
template <class R, class... Args>
struct OutKernelOf {
  static constexpr size_t kOuts = 1;
  using Outs = const Tensor&;
  using type = void (*)(const Tensor&, Args...);
};
/// Several tensors: one `const Tensor&` per result before the arguments; run_out takes them as a tuple.
template <class... Rs, class... Args>
struct OutKernelOf<std::tuple<Rs...>, Args...> {
  static_assert((std::is_same_v<Rs, Tensor> && ...), "a structured op's results are tensors");
  static constexpr size_t kOuts = sizeof...(Rs);
  using Outs = std::tuple<const Rs&...>;
  using type = void (*)(const Rs&..., Args...);
};
/// The first defined output (whose device chooses the out kernel), or null when the rules left out all.
inline const Tensor* first_defined_out(const Tensor& out) { return &out; }
template <class Tup, size_t... I>
const Tensor* first_defined_out(const Tup& outs, std::index_sequence<I...>) {
  const Tensor* found = nullptr;
  ((found = found ? found : (std::get<I>(outs).defined() ? &std::get<I>(outs) : nullptr)), ...);
  return found;
}
template <class... Rs>
const Tensor* first_defined_out(const std::tuple<const Rs&...>& outs) {
  return first_defined_out(outs, std::index_sequence_for<Rs...>{});
}
/// Calls an out kernel on the outputs (one, or a tuple's in order) and the arguments.
template <class K, class... Args>
void call_out_kernel(K k, const Tensor& out, Args&&... args) {
  k(out, std::forward<Args>(args)...);
}
template <class K, class Tup, size_t... I, class... Args>
void call_out_kernel_at(K k, const Tup& outs, std::index_sequence<I...>, Args&&... args) {
  k(std::get<I>(outs)..., std::forward<Args>(args)...);
}
template <class K, class... Rs, class... Args>
void call_out_kernel(K k, const std::tuple<const Rs&...>& outs, Args&&... args) {
  call_out_kernel_at(k, outs, std::index_sequence_for<Rs...>{}, std::forward<Args>(args)...);
}
/// out <- result on out's device (src/device_fallback.cpp): run_out on a device whose only kernel is
/// functional (its own or Generic) copies that kernel's results into the outputs.
FB_API void copy_into_out(const Tensor& out, const Tensor& result);
inline void copy_results_into_outs(const Tensor& out, const Tensor& result) { copy_into_out(out, result); }
template <class Tup, class Result, size_t... I>
void copy_results_into_outs_at(const Tup& outs, const Result& r, std::index_sequence<I...>) {
  ((std::get<I>(outs).defined() ? copy_into_out(std::get<I>(outs), std::get<I>(r)) : void()), ...);
}
template <class... Rs, class Result>
void copy_results_into_outs(const std::tuple<const Rs&...>& outs, const Result& r) {
  copy_results_into_outs_at(outs, r, std::index_sequence_for<Rs...>{});
}
}  // namespace detail

class FB_API OpBase {
 public:
  constexpr explicit OpBase(const char* name, AutocastPolicy autocast = AutocastPolicy::None)
      : name_(name), kernels_{}, effective_{}, check_(nullptr), autocast_(autocast), out_kernels_{},
        structured_(nullptr), inplace_(nullptr) {}
  const char* name() const { return name_; }
  /// The op's autocast policy, from its table row (Note [Autocast]).
  AutocastPolicy autocast_policy() const { return autocast_; }
  /// True if the table gave the op a meta step (Note [Meta step]).
  bool has_meta_check() const { return check_ != nullptr; }
  /// True if the op is structured (Note [Structured kernels]).
  bool is_structured() const { return structured_ != nullptr; }
  /// True if a kernel was registered for exactly this key.
  bool has_kernel(DispatchKey k) const { return kernels_[static_cast<int>(k)] != nullptr; }
  /// The op with this name (OpBase::name) among those with a registered
  /// kernel of any key, or nullptr (introspection: _C._has_kernel).
  static const OpBase* find(std::string_view name);
  /// The names of every op with a registered kernel, sorted.
  static std::vector<std::string> registered_names();
  /// Raises NotImplementedError: "[name] has no kernel for CUDA".
  [[noreturn]] void missing_kernel(DispatchKey k) const;

 protected:
  void set_kernel(DispatchKey key, void* fn);
  void set_out_kernel(DispatchKey key, void* fn);
  void set_structured(void* adapter, OpBase& base);
  const char* name_;
  void* kernels_[kNumDispatchKeys];  // as registered
  // What a call uses per device type: the device's own kernel, else Generic.
  void* effective_[kNumDeviceKeys];
  void* check_;  // Note [Meta step]: the generated checks, or null
  AutocastPolicy autocast_;
  // Note [Structured kernels]: the out kernels per device type, the generated
  // adapter (or null), and the in-place op whose adapter runs these out kernels.
  void* out_kernels_[kNumDeviceKeys];
  void* structured_;
  OpBase* inplace_;
};

template <class Sig>
class Op;

namespace detail {
/// True if a backend is registered for `t` (the fallback is then tried).
FB_API bool has_device_backend(DeviceType t);
template <class R, class... Args>
R host_fallback(const Op<R(Args...)>& op, DeviceType type, Args... args);
template <class... Args>
void host_fallback_out(const char* op, DeviceType type, void (*cpu)(const Tensor&, Args...), const Tensor& out,
                       Args... args);
template <class Kernel, class... Rs, class... Args>
void host_fallback_out(const char* op, DeviceType type, Kernel cpu, const std::tuple<const Rs&...>& outs,
                       Args... args);
}  // namespace detail

template <class R, class... Args>
class Op<R(Args...)> : public OpBase {
 public:
  using Signature = R(Args...);
  using Kernel = R (*)(Args...);
  // The host fallback (Note [Device fallback]) is reached through a pointer so
  // that only the translation unit defining the op instantiates it.
  using Fallback = R (*)(const Op&, DeviceType, Args...);
  constexpr explicit Op(const char* name, AutocastPolicy autocast = AutocastPolicy::None)
      : OpBase(name, autocast), fallback_(&detail::host_fallback<R, Args...>) {}

  void register_kernel(DispatchKey key, Kernel fn) { set_kernel(key, reinterpret_cast<void*>(fn)); }
  /// Note [Meta step]: the checks every device path runs first (generated from the table).
  using Check = void (*)(Args...);
  void set_meta_check(Check fn) { check_ = reinterpret_cast<void*>(fn); }

  /// Note [Structured kernels]: a backend's kernel of a structured op, writing the result into out
  /// (`void(const Tensor& out, args...)`; one output per result for several: detail::OutKernelOf).
  using OutKernel = typename detail::OutKernelOf<R, Args...>::type;
  /// What run_out takes: `const Tensor& out`, or a tuple of one output per result.
  using Outs = typename detail::OutKernelOf<R, Args...>::Outs;
  void register_out_kernel(DispatchKey key, OutKernel fn) { set_out_kernel(key, reinterpret_cast<void*>(fn)); }
  /// The generated adapter (meta step, output, out kernel) of this op, running `base`'s out kernels.
  void set_structured(Kernel adapter, OpBase& base) { OpBase::set_structured(reinterpret_cast<void*>(adapter), base); }
  void set_structured(Kernel adapter) { set_structured(adapter, *this); }
  /// Runs the out kernel of out's device: `out` has the result's dtype, shape and device, and the
  /// arguments passed the meta step (Note [Structured kernels]). Several results: `run_out({a, b}, args...)`,
  /// on the device of the first defined output; nothing runs when every output is undefined.
  void run_out(Outs out, Args... args) const {
    const Tensor* first = detail::first_defined_out(out);
    if constexpr (detail::OutKernelOf<R, Args...>::kOuts > 1)
      if (!first) return;
    void* k = out_kernels_[static_cast<int>(first->device().type)];
    if (!k || detail::g_observe.load(std::memory_order_relaxed)) [[unlikely]]
      return run_out_elsewhere(out, *first, std::forward<Args>(args)...);
    detail::call_out_kernel(reinterpret_cast<OutKernel>(k), out, std::forward<Args>(args)...);
  }

  R operator()(Args... args) const {
    // Note [Observation]: the one branch observation costs while nothing observes.
    if (detail::g_observe.load(std::memory_order_relaxed)) [[unlikely]]
      return observed_call(std::forward<Args>(args)...);
    return call<false>(std::forward<Args>(args)...);
  }

  /// Calls the kernel of one key directly (tests, and layers that know the key);
  /// a device key falls back to the Generic kernel as a call does.
  R call_kernel(DispatchKey key, Args... args) const {
    const int slot = device_key_slot(key);
    void* k = slot >= 0 ? effective_[slot] : kernels_[static_cast<int>(key)];
    if (!k) [[unlikely]]
      missing_kernel(key);
    if (slot >= 0 && check_) reinterpret_cast<Check>(check_)(args...);
    return reinterpret_cast<Kernel>(k)(std::forward<Args>(args)...);
  }

 private:
  [[gnu::noinline]] R observed_call(Args... args) const {
    if (autocast_ != AutocastPolicy::None && detail::observing(kObserveAutocast) && detail::autocast_active())
      return autocast_call(std::forward<Args>(args)...);
    profiler::OpScope scope(name_);
    if (!scope.wants_inputs()) return call<true>(std::forward<Args>(args)...);
    (scope.add_input(args), ...);
    if constexpr (std::is_same_v<R, Tensor>) {
      Tensor out = call<true>(std::forward<Args>(args)...);
      scope.add_output(out);
      return out;
    } else {
      return call<true>(std::forward<Args>(args)...);
    }
  }

  // Note [Autocast]: the arguments cast by the op's policy, then the op again without autocast.
  [[gnu::noinline]] R autocast_call(Args... args) const {
    ScalarType target = ScalarType::Float32;
    if (autocast_ == AutocastPolicy::Lower) {
      target = detail::tls_autocast.dtype;
    } else if (autocast_ == AutocastPolicy::Promote) {
      std::optional<ScalarType> widest;
      (detail::AutocastArg<Args>::widen(args, widest), ...);
      if (!widest) {
        detail::AutocastExcluded excluded;
        return (*this)(std::forward<Args>(args)...);
      }
      target = *widest;
    }
    detail::AutocastExcluded excluded;
    return (*this)(detail::AutocastArg<Args>::apply(std::forward<Args>(args), target)...);
  }

  template <bool Observed>
  R call(Args... args) const {
    if (void* c = kernels_[static_cast<int>(DispatchKey::Composite)])
      return reinterpret_cast<Kernel>(c)(std::forward<Args>(args)...);
    detail::KeyState s;
    (detail::visit_arg(s, args), ...);
    const bool forward_ad = detail::g_forward_ad_active.load(std::memory_order_relaxed);
    // Note [Grad mode and below autograd]: under no_grad only forward mode still needs the layer.
    if ((s.needs_autograd || forward_ad) &&
        (detail::tls_autograd_excluded == 0 || (forward_ad && detail::tls_autograd_excluded == detail::kGradModeOff))) {
      if (void* a = kernels_[static_cast<int>(DispatchKey::Autograd)])
        return reinterpret_cast<Kernel>(a)(std::forward<Args>(args)...);
    }
    if (check_) reinterpret_cast<Check>(check_)(args...);
    void* k = effective_[static_cast<int>(s.device)];
    if (!k) [[unlikely]] {
      if (s.device != DeviceType::CPU && detail::has_device_backend(s.device)) {
        // A structured op allocates on the device and runs the CPU out kernel on host views.
        if (structured_) return reinterpret_cast<Kernel>(structured_)(std::forward<Args>(args)...);
        return fallback_(*this, s.device, std::forward<Args>(args)...);
      }
      missing_kernel(device_dispatch_key(s.device));
    }
    if constexpr (Observed) {
      if (detail::observing(kObserveKernelTrace)) {
        detail::KernelTraceScope trace(name_, s.device, k == kernels_[static_cast<int>(DispatchKey::Generic)]);
        return reinterpret_cast<Kernel>(k)(std::forward<Args>(args)...);
      }
    }
    return reinterpret_cast<Kernel>(k)(std::forward<Args>(args)...);
  }

  // run_out without an out kernel of out's device, or while observed: out= and the in-place forms
  // reach the kernel without the dispatcher, so the kernel trace records them here.
  // `first`: the first defined output, whose device is the call's.
  // A device with no out kernel runs what its functional form runs when it has one (its own kernel or
  // the Generic composition) and copies the results into the outputs; only a device with neither gets
  // the CPU out kernel through the host fallback.
  [[gnu::noinline]] void run_out_elsewhere(Outs out, const Tensor& first, Args... args) const {
    const DeviceType type = first.device().type;
    if (type == DeviceType::Meta) return;  // the meta step was all there is to do
    void* own_out = out_kernels_[static_cast<int>(type)];
    void* functional = own_out || type == DeviceType::CPU ? nullptr : effective_[static_cast<int>(type)];
    std::optional<detail::KernelTraceScope> trace;
    if (detail::observing(kObserveKernelTrace))
      trace.emplace(name_, type, functional && functional == kernels_[static_cast<int>(DispatchKey::Generic)]);
    if (own_out) return detail::call_out_kernel(reinterpret_cast<OutKernel>(own_out), out, std::forward<Args>(args)...);
    if (functional) return detail::copy_results_into_outs(out, reinterpret_cast<Kernel>(functional)(args...));
    void* cpu = out_kernels_[static_cast<int>(DeviceType::CPU)];
    if (type == DeviceType::CPU || !cpu || !detail::has_device_backend(type)) missing_kernel(device_dispatch_key(type));
    if constexpr (detail::OutKernelOf<R, Args...>::kOuts > 1)
      detail::host_fallback_out<OutKernel>(name_, type, reinterpret_cast<OutKernel>(cpu), out,
                                           std::forward<Args>(args)...);
    else
      detail::host_fallback_out<Args...>(name_, type, reinterpret_cast<OutKernel>(cpu), out,
                                         std::forward<Args>(args)...);
  }

  Fallback fallback_;
};

/// Registers `fn` for `key` on `op` from a static initializer:
///   FB_REGISTER_KERNEL(op::add, CPU, add_cpu);
#define FB_REGISTER_KERNEL(op_object, key, fn)                     \
  static const bool FB_CONCAT(fb_reg_, __COUNTER__) = [] {         \
    (op_object).register_kernel(::flambeau::DispatchKey::key, fn); \
    return true;                                                   \
  }()
/// Registers the out kernel of a structured op (Note [Structured kernels]):
///   FB_REGISTER_OUT_KERNEL(op::sin, CPU, sin_out_cpu);
#define FB_REGISTER_OUT_KERNEL(op_object, key, fn)                     \
  static const bool FB_CONCAT(fb_reg_, __COUNTER__) = [] {             \
    (op_object).register_out_kernel(::flambeau::DispatchKey::key, fn); \
    return true;                                                       \
  }()
#define FB_CONCAT_INNER(a, b) a##b
#define FB_CONCAT(a, b) FB_CONCAT_INNER(a, b)

}  // namespace flambeau

#include "flambeau/device_fallback.h"
