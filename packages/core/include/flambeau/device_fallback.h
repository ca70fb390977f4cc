#pragma once
// Note [Device fallback] (dispatch.h): the host fallback of a plug-in device.
// Included at the end of dispatch.h; the template only maps arguments and
// results, the work is in HostFallback (src/device_fallback.cpp).
#include <array>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "flambeau/device.h"
#include "flambeau/macros.h"
#include "flambeau/tensor.h"

namespace flambeau::detail {

class FB_API HostFallback {
 public:
  HostFallback(const char* op, DeviceType type) : op_(op), type_(type) {}
  HostFallback(const HostFallback&) = delete;
  HostFallback& operator=(const HostFallback&) = delete;

  // Pass 1: find the device and check every tensor is on it.
  void see(const Tensor& t);
  void see(const std::optional<Tensor>& t) {
    if (t) see(*t);
  }
  void see(const TensorList& ts) {
    for (const auto& t : ts) see(t);
  }
  void see(const OptionalTensorList& ts) {
    for (const auto& t : ts) see(t);
  }
  template <class T>
  void see(const T&) {}

  // Pass 2: host views of the arguments.
  Tensor map(const Tensor& t);
  std::optional<Tensor> map(const std::optional<Tensor>& t) {
    return t ? std::optional<Tensor>(map(*t)) : std::nullopt;
  }
  TensorList map(const TensorList& ts) {
    TensorList out;
    out.reserve(ts.size());
    for (const auto& t : ts) out.push_back(map(t));
    return out;
  }
  OptionalTensorList map(const OptionalTensorList& ts) {
    OptionalTensorList out;
    out.reserve(ts.size());
    for (const auto& t : ts) out.push_back(map(t));
    return out;
  }
  Device map(const Device& d) { return d.type == type_ ? Device(DeviceType::CPU) : d; }
  template <class T>
  T map(const T& v) {
    return v;
  }

  /// Runs `fn` (the CPU kernel on host views) on the device's current stream
  /// and waits; then bumps the version of every device storage it wrote.
  void run(const std::function<void()>& fn);
  /// A result of the CPU kernel as a device tensor: the original argument if
  /// it is one of them, a view of an argument's storage if it shares one, else
  /// a copy in device memory.
  Tensor unmap(const Tensor& r);

  /// The original argument of a host view (by identity), or null.
  const Tensor* original_of(const Tensor& host) const;

 private:
  struct Alias {
    Tensor original;
    Tensor host;
    uint64_t host_version;
  };
  const char* op_;
  DeviceType type_;
  bool has_device_ = false;
  Device device_;
  std::vector<Alias> aliases_;
};

template <class T>
struct is_tensor_tuple : std::false_type {};
template <class... Ts>
struct is_tensor_tuple<std::tuple<Ts...>> : std::bool_constant<(std::is_same_v<Ts, Tensor> && ...)> {};

// A tuple of host results mapped back to the device tensors they stand for. A function, not a lambda over
// a parameter pack: nvcc's host pass rejects pack expansions inside lambdas, and this header must compile in
// CUDA extension sources.
template <class R, class Fallback, size_t... I>
R unmap_each(Fallback& fb, const R& host, std::index_sequence<I...>) {
  return R(fb.unmap(std::get<I>(host))...);
}

template <class R, class... Args>
R host_fallback(const Op<R(Args...)>& op, DeviceType type, Args... args) {
  HostFallback fb(op.name(), type);
  (fb.see(args), ...);
  std::tuple<std::remove_cvref_t<Args>...> host(fb.map(args)...);
  auto call = [&]() -> decltype(auto) {
    return std::apply([&](auto&... a) -> decltype(auto) { return op.call_kernel(DispatchKey::CPU, a...); },
                      host);
  };
  if constexpr (std::is_void_v<R>) {
    fb.run([&] { call(); });
  } else if constexpr (std::is_same_v<R, Tensor&>) {
    Tensor* result = nullptr;
    fb.run([&] { result = &call(); });
    // An in-place op returns one of its Tensor& arguments: give back the original.
    Tensor* found = nullptr;
    auto originals = std::forward_as_tuple(args...);
    [&]<size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if constexpr (std::is_same_v<std::tuple_element_t<I, std::tuple<Args...>>, Tensor&>)
              if (!found && result == &std::get<I>(host)) found = &std::get<I>(originals);
          }(),
          ...);
    }(std::index_sequence_for<Args...>{});
    if (!found) {
      // Not an argument (should not happen): return the first Tensor& argument.
      [&]<size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
              if constexpr (std::is_same_v<std::tuple_element_t<I, std::tuple<Args...>>, Tensor&>)
                if (!found) found = &std::get<I>(originals);
            }(),
            ...);
      }(std::index_sequence_for<Args...>{});
    }
    return *found;
  } else if constexpr (std::is_same_v<R, Tensor>) {
    std::optional<Tensor> result;
    fb.run([&] { result = call(); });
    return fb.unmap(*result);
  } else if constexpr (is_tensor_tuple<R>::value) {
    std::optional<R> result;
    fb.run([&] { result = call(); });
    return unmap_each(fb, *result, std::make_index_sequence<std::tuple_size_v<R>>{});
  } else {
    // Not a tensor (a count, a name): returned as the CPU kernel gave it.
    std::optional<R> result;
    fb.run([&] { result = call(); });
    return std::move(*result);
  }
}

/// Note [Structured kernels]: the CPU out kernel of a structured op on host views of `out` (in device
/// memory, allocated by the caller) and the arguments; no result to copy back.
template <class... Args>
void host_fallback_out(const char* op, DeviceType type, void (*cpu)(const Tensor&, Args...), const Tensor& out,
                       Args... args) {
  HostFallback fb(op, type);
  fb.see(out);
  (fb.see(args), ...);
  const Tensor host_out = fb.map(out);
  std::tuple<std::remove_cvref_t<Args>...> host(fb.map(args)...);
  fb.run([&] { std::apply([&](auto&... a) { cpu(host_out, a...); }, host); });
}

// The CPU out kernel of a structured op with several results on host views of its outputs (an undefined
// output stays undefined) and arguments. Functions, not lambdas over the packs (nvcc, above).
template <class Kernel, size_t N, class Host, size_t... I, size_t... J>
void call_host_out(Kernel cpu, const std::array<Tensor, N>& outs, Host& host, std::index_sequence<I...>,
                   std::index_sequence<J...>) {
  cpu(outs[I]..., std::get<J>(host)...);
}
template <class Tup, size_t... I>
void see_outs(HostFallback& fb, const Tup& outs, std::index_sequence<I...>) {
  ((std::get<I>(outs).defined() ? fb.see(std::get<I>(outs)) : void()), ...);
}
template <class Tup, size_t... I>
std::array<Tensor, sizeof...(I)> map_outs(HostFallback& fb, const Tup& outs, std::index_sequence<I...>) {
  return {(std::get<I>(outs).defined() ? fb.map(std::get<I>(outs)) : Tensor())...};
}
template <class Kernel, class... Rs, class... Args>
void host_fallback_out(const char* op, DeviceType type, Kernel cpu, const std::tuple<const Rs&...>& outs,
                       Args... args) {
  HostFallback fb(op, type);
  see_outs(fb, outs, std::index_sequence_for<Rs...>{});
  (fb.see(args), ...);
  const std::array<Tensor, sizeof...(Rs)> host_outs = map_outs(fb, outs, std::index_sequence_for<Rs...>{});
  std::tuple<std::remove_cvref_t<Args>...> host(fb.map(args)...);
  const auto out_seq = std::index_sequence_for<Rs...>{};
  const auto arg_seq = std::index_sequence_for<Args...>{};
  fb.run([&] { call_host_out(cpu, host_outs, host, out_seq, arg_seq); });
}

}  // namespace flambeau::detail
