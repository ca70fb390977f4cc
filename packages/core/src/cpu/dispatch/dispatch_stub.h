#pragma once
// Note [CPU capabilities]
// The hot loops are compiled once per instruction set: baseline x86-64, AVX2+FMA and AVX-512
// (F, VL, BW, DQ). CMake gives files named *_avx2.cpp / *_avx512.cpp their -m flags; every other
// file is baseline, so the build never depends on the build machine's CPU. Which copy runs is
// decided at run time by one mechanism, the dispatch stub (PyTorch's DispatchStub):
//  * a kernel family declares its stub in its header, FB_DECLARE_DISPATCH(fn_type, name), and
//    defines it in one baseline file, FB_DEFINE_DISPATCH(name);
//  * the translation unit compiled for an instruction set fills that set's slot,
//    FB_REGISTER_DISPATCH(name, avx2, fn) (base, avx2 or avx512); a family without a variant for
//    a set says so, FB_REGISTER_NO_DISPATCH(name, avx512), and the next narrower variant runs
//    there. The slots are constants, set before any code runs (no static-initialization order);
//  * name.get() returns the variant for active_isa(): the widest set the CPU has
//    (__builtin_cpu_supports), capped by the setting backends.cpu.max_cpu_capability (Note
//    [Settings]; FLAMBEAU_CPU_CAPABILITY at import). It resolves once and keeps the answer
//    until the setting changes: setting it bumps an epoch, and each stub resolves again on its
//    next call. nullptr: the family has no variant that narrow (the AVX-512 direct convolution,
//    the own GEMM); callers then take their portable route.
// A family whose kernels are a table of loops (the vector table, the activation, softmax,
// reduction, normalization, foreach and recurrent tables) registers table_of<Table, fill>: a
// function returning that set's table, filled once.
// Code compiled for AVX2/AVX-512 must never be merged with the baseline copy of the same inline
// function by the linker: the per-set files keep their loops in a namespace of their own (loops.h)
// and never call get() (only baseline code does). What they share and cannot rename (parallel.h's
// helpers, the standard library's templates): wherever a baseline file emits it too, that file
// links first and the library keeps its copy (Note [Instruction-set objects link last],
// CMakeLists.txt; tools/check_isa_link_order.py checks it).
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flambeau/macros.h"

namespace flambeau::cpu {

/// The instruction sets the kernels are compiled for, narrowest first.
enum class Isa : uint8_t { Base = 0, Avx2 = 1, Avx512 = 2 };

/// The widest set the running CPU supports (asked once).
FB_API Isa hardware_isa();
/// The set the kernels use now: hardware_isa() capped by backends.cpu.max_cpu_capability.
FB_API Isa active_isa();
/// "base", "avx2" or "avx512".
FB_API const char* isa_name(Isa isa);
/// isa_name(active_isa()) (flambeau_core._C._cpu_capability()).
FB_API const char* cpu_capability();
/// Makes every stub resolve again on its next call (the capability setting changed).
void invalidate_dispatch_stubs();
/// Each stub's name and the set of the variant it runs now ("none": no variant that narrow), in
/// the order they were defined (flambeau_core._C._dispatch_choices(), for tests).
FB_API std::vector<std::pair<std::string, std::string>> dispatch_choices();
/// Called by FB_DEFINE_DISPATCH.
bool register_dispatch_stub(const char* name, const char* (*chosen)());

namespace isa_detail {
/// Starts at 1 and grows with each invalidate_dispatch_stubs(); a stub remembers the value it
/// resolved under (0: never).
extern std::atomic<uint32_t> g_isa_epoch;
}  // namespace isa_detail

template <class FnPtr, class Tag>
class DispatchStub {
 public:
  using Fn = FnPtr;
  // One slot per instruction set, each defined once: by FB_REGISTER_DISPATCH in the file compiled
  // for that set, or as nullptr by FB_REGISTER_NO_DISPATCH.
  static Fn base;
  static Fn avx2;
  static Fn avx512;

  constexpr DispatchStub() = default;
  DispatchStub(const DispatchStub&) = delete;
  DispatchStub& operator=(const DispatchStub&) = delete;

  /// The variant for active_isa(): the widest registered one not wider than it (nullptr if none).
  Fn get() const {
    if (epoch_.load(std::memory_order_acquire) == isa_detail::g_isa_epoch.load(std::memory_order_relaxed))
      return chosen_.load(std::memory_order_relaxed);
    return resolve();
  }

  /// The set of get()'s variant: "avx512", "avx2", "base" or "none".
  const char* chosen_name() const {
    const Fn f = get();
    return !f ? "none" : f == avx512 ? "avx512" : f == avx2 ? "avx2" : "base";
  }

 private:
  Fn resolve() const {
    // The epoch first: a setting changed after this load bumps it again, so the next call resolves anew.
    const uint32_t epoch = isa_detail::g_isa_epoch.load(std::memory_order_acquire);
    const Isa isa = active_isa();
    Fn f = nullptr;
    if (isa >= Isa::Avx512) f = avx512;
    if (!f && isa >= Isa::Avx2) f = avx2;
    if (!f) f = base;
    chosen_.store(f, std::memory_order_relaxed);
    epoch_.store(epoch, std::memory_order_release);
    return f;
  }

  mutable std::atomic<Fn> chosen_{nullptr};
  mutable std::atomic<uint32_t> epoch_{0};
};

/// A table family's variant: the table of one instruction set, filled by `Fill` on first use.
template <class Table, void (*Fill)(Table&)>
const Table& table_of() {
  static const Table table = [] {
    Table t{};
    Fill(t);
    return t;
  }();
  return table;
}

}  // namespace flambeau::cpu

// In namespace flambeau::cpu. fn_type is a function pointer type (or a pointer to a
// table of them, as packed_sgemm_stub in sgemm.h).
#define FB_DECLARE_DISPATCH(fn_type, name)                                \
  struct name##_tag;                                                      \
  using name##_type = ::flambeau::cpu::DispatchStub<fn_type, name##_tag>; \
  template <>                                                             \
  name##_type::Fn name##_type::base;                                      \
  template <>                                                             \
  name##_type::Fn name##_type::avx2;                                      \
  template <>                                                             \
  name##_type::Fn name##_type::avx512;                                    \
  extern name##_type name

#define FB_DEFINE_DISPATCH(name)                     \
  constinit name##_type name;                        \
  [[maybe_unused]] static const bool name##_listed = \
      ::flambeau::cpu::register_dispatch_stub(#name, [] { return name.chosen_name(); })

// isa: base, avx2 or avx512 (the set the calling file is compiled for).
#define FB_REGISTER_DISPATCH(name, isa, fn) \
  template <>                               \
  name##_type::Fn name##_type::isa = fn

#define FB_REGISTER_NO_DISPATCH(name, isa) FB_REGISTER_DISPATCH(name, isa, nullptr)
