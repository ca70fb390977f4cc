// The instruction set the dispatch stubs resolve against (Note [CPU capabilities] in dispatch_stub.h).
#include "cpu/dispatch/dispatch_stub.h"

#include <algorithm>

#include "settings.h"

namespace flambeau::cpu {

std::atomic<uint32_t> isa_detail::g_isa_epoch{1};

Isa hardware_isa() {
  static const Isa isa = [] {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
      return Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
#endif
    return Isa::Base;  // other architectures: the portable kernels
  }();
  return isa;
}

Isa active_isa() {
  Isa cap = Isa::Avx512;
  switch (settings::max_cpu_capability()) {
    case settings::Capability::Auto:
    case settings::Capability::Avx512:
      break;
    case settings::Capability::Avx2:
      cap = Isa::Avx2;
      break;
    case settings::Capability::Base:
      cap = Isa::Base;
      break;
  }
  return std::min(hardware_isa(), cap);
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Base:
      break;
  }
  return "base";
}

const char* cpu_capability() { return isa_name(active_isa()); }

namespace {
std::vector<std::pair<const char*, const char* (*)()>>& stub_list() {
  static std::vector<std::pair<const char*, const char* (*)()>> list;
  return list;
}
}  // namespace

bool register_dispatch_stub(const char* name, const char* (*chosen)()) {
  stub_list().emplace_back(name, chosen);
  return true;
}

std::vector<std::pair<std::string, std::string>> dispatch_choices() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, chosen] : stub_list()) out.emplace_back(name, chosen());
  return out;
}

void invalidate_dispatch_stubs() { isa_detail::g_isa_epoch.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace flambeau::cpu
