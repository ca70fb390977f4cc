// Note [Operators registered from C++] (flambeau/library.h): the queue of what
// FLAMBEAU_LIBRARY blocks declared, until flambeau's Python side takes it.
#include "flambeau/library.h"

#include <cctype>
#include <exception>
#include <mutex>

namespace flambeau::library {
namespace {

std::mutex& pending_mutex() {
  static std::mutex m;
  return m;
}

std::vector<Entry>& pending() {
  static std::vector<Entry> v;  // constructed on first use: blocks run during other libraries' static init
  return v;
}

const char* held_type(const IValue& v) {
  static const char* const names[] = {"None", "Tensor", "int", "float", "bool", "str", "int[]", "Tensor[]"};
  return names[v.index()];
}

}  // namespace

Library& Library::def(std::string schema) {
  Entry e{EntryKind::Def, ns_, std::move(schema)};
  return add(std::move(e));
}

Library& Library::add(Entry e) {
  e.where = where_;
  entries_.push_back(std::move(e));
  return *this;
}

std::optional<DeviceType> Library::device_type_of(std::string_view key) {
  std::string k(key);
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k == "cpu") return DeviceType::CPU;
  if (k == "cuda") return DeviceType::CUDA;
  if (k == "meta") return DeviceType::Meta;
  if (k == "privateuse1") return DeviceType::PrivateUse1;
  return std::nullopt;
}

Library& Library::unknown_key(const std::string& name, std::string_view key) {
  return add(Entry(EntryKind::Error, ns_,
                   ::flambeau::detail::cat_str("[", ns_, "::", name, "] unknown dispatch key '", key,
                                               "' in m.impl; use CPU, CUDA, Meta or PrivateUse1")));
}

namespace detail {

void bad_boxed_value(const IValue& v, const char* expected) {
  throw TypeError(::flambeau::detail::cat_str("[FLAMBEAU_LIBRARY] a kernel parameter of type ", expected, " was given a boxed ",
                          held_type(v), " (the kernel's C++ parameter types disagree with its schema)"));
}

void bad_stack_size(size_t got, size_t expected) {
  throw TypeError(::flambeau::detail::cat_str("[FLAMBEAU_LIBRARY] a kernel taking ", expected, " parameters was called with ", got,
                          " values (the kernel's C++ parameters disagree with its schema)"));
}

void register_library_v1(const char* abi_tag, const char* ns, const char* file, int line, void (*init)(Library&)) {
  const std::string where = ::flambeau::detail::cat_str(file, ":", line);
  Library lib(ns, where);
  std::vector<Entry> out;
  if (std::string_view(abi_tag) != core_abi_tag()) {
    Entry e{EntryKind::Error, ns, ::flambeau::detail::cat_str("was built for flambeau ABI '", abi_tag, "'")};
    e.where = where;
    out.push_back(std::move(e));
  } else {
    // Nothing may escape a static initialiser: an exception becomes an entry that flambeau reports.
    try {
      init(lib);
      out = std::move(lib.entries());
    } catch (const std::exception& ex) {
      Entry e{EntryKind::Error, ns, ::flambeau::detail::cat_str("the FLAMBEAU_LIBRARY block threw: ", ex.what())};
      e.where = where;
      out.push_back(std::move(e));
    }
  }
  std::lock_guard<std::mutex> lock(pending_mutex());
  for (auto& e : out) pending().push_back(std::move(e));
}

std::vector<Entry> take_pending_entries() {
  std::lock_guard<std::mutex> lock(pending_mutex());
  std::vector<Entry> out = std::move(pending());
  pending().clear();
  return out;
}

size_t pending_entry_count() {
  std::lock_guard<std::mutex> lock(pending_mutex());
  return pending().size();
}

}  // namespace detail
}  // namespace flambeau::library
