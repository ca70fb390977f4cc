// Picks the widest kernel table the running CPU supports (Note [CPU capabilities]).
#include "settings.h"
#include "cpu/elementwise/vec_table.h"

namespace flambeau::cpu {

namespace {
VecTable make_table() {
  VecTable t{};
  // backends.cpu.max_cpu_capability (FLAMBEAU_CPU_CAPABILITY), Note [Settings].
  const settings::Capability cap = settings::max_cpu_capability();
  const bool allow512 = cap == settings::Capability::Auto || cap == settings::Capability::Avx512;
  const bool allow2 = allow512 || cap == settings::Capability::Avx2;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (allow512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    fill_vec_table_avx512(t);
  else if (allow2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    fill_vec_table_avx2(t);
  else
    fill_vec_table_base(t);
#else
  (void)allow2;
  fill_vec_table_base(t);  // other architectures: the portable table
#endif
  return t;
}
}  // namespace

const VecTable& vec_table() {
  static const VecTable table = make_table();
  return table;
}

const char* cpu_capability() { return vec_table().name; }

}  // namespace flambeau::cpu
