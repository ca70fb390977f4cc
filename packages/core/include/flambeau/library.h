#pragma once
// Note [Operators registered from C++]
// An extension defines operators from C++, as PyTorch's TORCH_LIBRARY:
//
//   FLAMBEAU_LIBRARY(mylib, m) {
//     m.def("mul_add(Tensor a, Tensor b, float alpha=1.0) -> Tensor");
//     m.impl("mul_add", flambeau::kCPU, &mul_add_cpu);   // a kernel per device type
//     m.impl_fake("mul_add", &mul_add_fake);              // shapes and dtypes, on meta tensors
//     m.impl_backward("mul_add", &mul_add_backward);      // (grads..., inputs..., outputs...) -> input grads
//   }
//
// The block runs when the library is loaded (static initialisation: dlopen),
// so it cannot raise: it only records what it declares, each kernel boxed (a
// typed function wrapped into a function over a Stack of IValues, with the
// C++ types of its parameters and results written down). flambeau (the
// Python package, flambeau/library/_cpp.py) takes the records after the load,
// parses the schemas with its schema grammar, checks each kernel's C++
// parameter types against its schema, defines the operators, and reports
// every problem as one Python exception naming the ops. A call of
// `flambeau.ops.mylib.mul_add` runs core's binding (bind_library.cpp): the
// arguments are parsed by the schema straight into the Stack and the kernel
// of the inputs' device runs, with no Python in between unless the call
// needs autograd, a profile records, or no kernel fits (then the Python
// dispatcher runs: Note [Custom operator dispatch]).
//
// The entry point is versioned (register_library_v1) and the block passes the
// ABI tag it was compiled with (Note [ABI tag]): a mismatch is recorded, and
// flambeau refuses the library with the "rebuild" message.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "flambeau/abi.h"
#include "flambeau/device.h"
#include "flambeau/error.h"
#include "flambeau/tensor.h"

namespace flambeau {

// PyTorch's device-type constants (torch::kCPU), for Library::impl.
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMeta = DeviceType::Meta;
inline constexpr DeviceType kPrivateUse1 = DeviceType::PrivateUse1;

namespace library {

/// One boxed value: None (std::monostate), Tensor, int, float, bool, str, int[], Tensor[].
using IValue = std::variant<std::monostate, Tensor, int64_t, double, bool, std::string, std::vector<int64_t>,
                            std::vector<Tensor>>;
/// A boxed call: the arguments in schema order in, the results out.
using Stack = std::vector<IValue>;
using BoxedKernel = std::function<void(Stack&)>;

enum class EntryKind : uint8_t { Def, Impl, Fake, Backward, Error };

/// What one statement of a FLAMBEAU_LIBRARY block declared.
struct Entry {
  Entry() = default;
  Entry(EntryKind k, std::string n, std::string t, DeviceType d = DeviceType::CPU)
      : kind(k), ns(std::move(n)), text(std::move(t)), device(d) {}
  EntryKind kind = EntryKind::Def;
  std::string ns;
  std::string text;  // Def: the schema; Error: the message; otherwise the operator's name
  DeviceType device = DeviceType::CPU;
  std::shared_ptr<const BoxedKernel> kernel;
  std::vector<std::string> arg_types;  // the kernel's C++ parameter types, in schema words ("Tensor", "float?")
  std::vector<std::string> ret_types;  // its results, one per Stack value
  std::string where;                   // "file:line" of the block
};

namespace detail {

template <class T>
struct type_word;  // the schema word of a C++ parameter or result type
template <>
struct type_word<Tensor> {
  static constexpr const char* value = "Tensor";
};
template <>
struct type_word<double> {
  static constexpr const char* value = "float";
};
template <>
struct type_word<float> {
  static constexpr const char* value = "float";
};
template <>
struct type_word<bool> {
  static constexpr const char* value = "bool";
};
template <>
struct type_word<std::string> {
  static constexpr const char* value = "str";
};
template <>
struct type_word<std::string_view> {
  static constexpr const char* value = "str";
};
template <>
struct type_word<std::vector<int64_t>> {
  static constexpr const char* value = "int[]";
};
template <>
struct type_word<std::span<const int64_t>> {
  static constexpr const char* value = "int[]";
};
template <>
struct type_word<std::vector<Tensor>> {
  static constexpr const char* value = "Tensor[]";
};
template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
struct type_word<T> {
  static constexpr const char* value = "int";
};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
std::string word_of() {
  using D = std::remove_cvref_t<T>;
  if constexpr (is_optional<D>::value)
    return std::string(type_word<std::remove_cvref_t<typename D::value_type>>::value) + "?";
  else
    return type_word<D>::value;
}

[[noreturn]] FB_API void bad_boxed_value(const IValue& v, const char* expected);

/// The value a parameter of type T gets from its boxed value (a reference into the Stack where it can).
template <class T>
struct Unbox {
  static decltype(auto) get(IValue& v) {
    using D = std::remove_cvref_t<T>;
    if constexpr (std::is_same_v<D, Tensor>) {
      if (std::holds_alternative<std::monostate>(v)) v = Tensor();  // None for a Tensor? read as Tensor
      if (auto* t = std::get_if<Tensor>(&v)) return static_cast<Tensor&>(*t);
      bad_boxed_value(v, "Tensor");
    } else if constexpr (std::is_same_v<D, bool>) {
      if (auto* b = std::get_if<bool>(&v)) return *b;
      bad_boxed_value(v, "bool");
    } else if constexpr (std::is_integral_v<D>) {
      if (auto* i = std::get_if<int64_t>(&v)) return static_cast<D>(*i);
      bad_boxed_value(v, "int");
    } else if constexpr (std::is_floating_point_v<D>) {
      if (auto* d = std::get_if<double>(&v)) return static_cast<D>(*d);
      bad_boxed_value(v, "float");
    } else if constexpr (std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view>) {
      if (auto* s = std::get_if<std::string>(&v)) return D(*s);
      bad_boxed_value(v, "str");
    } else if constexpr (std::is_same_v<D, std::vector<int64_t>> || std::is_same_v<D, std::span<const int64_t>>) {
      if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return D(*l);
      bad_boxed_value(v, "int[]");
    } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
      if (auto* l = std::get_if<std::vector<Tensor>>(&v)) return static_cast<std::vector<Tensor>&>(*l);
      bad_boxed_value(v, "Tensor[]");
    } else {
      using E = typename D::value_type;  // std::optional<E>
      if (std::holds_alternative<std::monostate>(v)) return D(std::nullopt);
      return D(Unbox<E>::get(v));
    }
  }
};

inline void push_result(Stack& s, Tensor&& t) { s.emplace_back(std::move(t)); }
inline void push_result(Stack& s, std::vector<Tensor>&& l) { s.emplace_back(std::move(l)); }
inline void push_result(Stack& s, std::vector<int64_t>&& l) { s.emplace_back(std::move(l)); }
inline void push_result(Stack& s, std::string&& v) { s.emplace_back(std::move(v)); }
inline void push_result(Stack& s, bool v) { s.emplace_back(v); }
inline void push_result(Stack& s, double v) { s.emplace_back(v); }
template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
void push_result(Stack& s, T v) {
  s.emplace_back(static_cast<int64_t>(v));
}
template <class... Ts>
void push_result(Stack& s, std::tuple<Ts...>&& t) {
  std::apply([&](auto&&... e) { (push_result(s, std::move(e)), ...); }, std::move(t));
}

template <class R>
void result_words(std::vector<std::string>& out) {
  using D = std::remove_cvref_t<R>;
  if constexpr (std::is_void_v<D>) {
    return;
  } else if constexpr (requires { std::tuple_size<D>::value; } && !std::is_same_v<D, std::vector<Tensor>>) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (out.push_back(word_of<std::tuple_element_t<I, D>>()), ...);
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  } else {
    out.push_back(word_of<D>());
  }
}

template <class F>
struct fn_traits : fn_traits<decltype(&std::remove_cvref_t<F>::operator())> {};
template <class R, class... A>
struct fn_traits<R (*)(A...)> {
  using ret = R;
  using args = std::tuple<A...>;
};
template <class R, class... A>
struct fn_traits<R(A...)> : fn_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...) const> : fn_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...)> : fn_traits<R (*)(A...)> {};

[[noreturn]] FB_API void bad_stack_size(size_t got, size_t expected);

/// Wraps a typed kernel (a function, function pointer or lambda) into a BoxedKernel; writes its
/// parameter and result types (schema words) into `entry`.
template <class F>
std::shared_ptr<const BoxedKernel> make_boxed(F f, Entry& entry) {
  using traits = fn_traits<std::remove_pointer_t<std::decay_t<F>>>;
  using Args = typename traits::args;
  using R = typename traits::ret;
  constexpr size_t n = std::tuple_size_v<Args>;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (entry.arg_types.push_back(word_of<std::tuple_element_t<I, Args>>()), ...);
  }(std::make_index_sequence<n>{});
  result_words<R>(entry.ret_types);
  auto fn = std::decay_t<F>(std::move(f));
  return std::make_shared<const BoxedKernel>([fn](Stack& s) {
    if (s.size() != n) bad_stack_size(s.size(), n);
    [&]<size_t... I>(std::index_sequence<I...>) {
      if constexpr (std::is_void_v<R>) {
        fn(Unbox<std::tuple_element_t<I, Args>>::get(s[I])...);
        s.clear();
      } else {
        // A value, not a reference: a kernel returning its Tensor& out= argument refers into the Stack.
        std::remove_cvref_t<R> result = fn(Unbox<std::tuple_element_t<I, Args>>::get(s[I])...);
        s.clear();
        push_result(s, std::move(result));
      }
    }(std::make_index_sequence<n>{});
  });
}

}  // namespace detail

/// What a FLAMBEAU_LIBRARY block writes to: the operators of one namespace and their kernels.
class FB_API Library {
 public:
  Library(std::string ns, std::string where) : ns_(std::move(ns)), where_(std::move(where)) {}

  /// Defines an operator from its schema, "name(Tensor a, float alpha=1.0) -> Tensor".
  Library& def(std::string schema);
  /// Registers `kernel` as the operator's kernel for a device type (kCPU, kCUDA, kPrivateUse1; kMeta is
  /// the fake rule).
  template <class F>
  Library& impl(std::string name, DeviceType device, F kernel) {
    Entry e{device == DeviceType::Meta ? EntryKind::Fake : EntryKind::Impl, ns_, std::move(name), device};
    e.kernel = detail::make_boxed(std::move(kernel), e);
    return add(std::move(e));
  }
  /// As impl(name, DeviceType, kernel) with PyTorch's dispatch-key spelling: "CPU", "CUDA", "Meta",
  /// "PrivateUse1" (or the lower-case device type).
  template <class F>
  Library& impl(std::string name, std::string_view dispatch_key, F kernel) {
    const std::optional<DeviceType> device = device_type_of(dispatch_key);
    if (!device) return unknown_key(name, dispatch_key);  // reported when the library is loaded
    return impl(std::move(name), *device, std::move(kernel));
  }
  /// The fake rule: takes the operator's arguments as meta tensors, returns meta tensors of the results'
  /// shapes and dtypes (no data is computed).
  template <class F>
  Library& impl_fake(std::string name, F rule) {
    return impl(std::move(name), DeviceType::Meta, std::move(rule));
  }
  /// The gradient: takes (grad of each output..., the operator's arguments..., its outputs...) and returns
  /// one gradient per Tensor argument (a Tensor, a std::tuple of them or a std::vector<Tensor>), an
  /// undefined Tensor() where there is none.
  template <class F>
  Library& impl_backward(std::string name, F backward) {
    Entry e{EntryKind::Backward, ns_, std::move(name)};
    e.kernel = detail::make_boxed(std::move(backward), e);
    return add(std::move(e));
  }

  const std::string& ns() const { return ns_; }
  /// The entries declared so far (register_library_v1 hands them to the registry).
  std::vector<Entry>& entries() { return entries_; }

 private:
  Library& add(Entry e);
  static std::optional<DeviceType> device_type_of(std::string_view key);
  Library& unknown_key(const std::string& name, std::string_view key);
  std::string ns_;
  std::string where_;
  std::vector<Entry> entries_;
};

namespace detail {
/// Runs a FLAMBEAU_LIBRARY block and queues what it declared (Note [Operators registered from C++]).
FB_API void register_library_v1(const char* abi_tag, const char* ns, const char* file, int line,
                                void (*init)(Library&));
/// Takes the queued entries (flambeau's Python side calls it after loading a library).
FB_API std::vector<Entry> take_pending_entries();
FB_API size_t pending_entry_count();

struct Registrar {
  Registrar(const char* abi_tag, const char* ns, const char* file, int line, void (*init)(Library&)) {
    register_library_v1(abi_tag, ns, file, line, init);
  }
};
}  // namespace detail
}  // namespace library
}  // namespace flambeau

#define FB_LIBRARY_CAT2(a, b) a##b
#define FB_LIBRARY_CAT(a, b) FB_LIBRARY_CAT2(a, b)
#define FB_LIBRARY_BLOCK(ns, m, uid)                                                                    \
  static void FB_LIBRARY_CAT(fb_library_init_##ns##_, uid)(::flambeau::library::Library&);            \
  static const ::flambeau::library::detail::Registrar FB_LIBRARY_CAT(fb_library_registrar_##ns##_, uid)( \
      FLAMBEAU_ABI_TAG, #ns, __FILE__, __LINE__, &FB_LIBRARY_CAT(fb_library_init_##ns##_, uid));        \
  static void FB_LIBRARY_CAT(fb_library_init_##ns##_, uid)(::flambeau::library::Library & m)

/// Defines operators (and their kernels) in the namespace `ns`: flambeau.ops.ns.<name> once loaded.
/// A namespace may have several blocks, in one library or several (PyTorch's TORCH_LIBRARY_FRAGMENT).
#define FLAMBEAU_LIBRARY(ns, m) FB_LIBRARY_BLOCK(ns, m, __COUNTER__)
#define FLAMBEAU_LIBRARY_FRAGMENT(ns, m) FB_LIBRARY_BLOCK(ns, m, __COUNTER__)
