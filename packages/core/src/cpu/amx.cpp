// The AMX plumbing of amx.h: the permission check and the tile configuration.
#include "cpu/amx.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace flambeau::cpu {
namespace {

/// The tile configuration (ldtilecfg's 64-byte operand).
struct alignas(64) AmxConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

}  // namespace

bool amx_usable() {
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool tile = (edx >> 24) & 1u, bf16 = (edx >> 22) & 1u;
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return tile && bf16 && syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return usable;
}

FB_AMX_TARGET void amx_configure(int64_t kc) {
  AmxConfig c;
  for (int i = 0; i < 4; ++i) c.rows[i] = 16, c.colsb[i] = 64;
  for (int i = 4; i < 6; ++i) c.rows[i] = 16, c.colsb[i] = static_cast<uint16_t>(4 * kc);
  for (int i = 6; i < 8; ++i) c.rows[i] = static_cast<uint8_t>(kc), c.colsb[i] = 64;
  // Not _tile_loadconfig: GCC 12's builtin does not read the struct as an input, and drops its stores.
  __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

FB_AMX_TARGET void amx_release() { _tile_release(); }

}  // namespace flambeau::cpu
