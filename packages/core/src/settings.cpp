// The settings registry (Note [Settings] in settings.h): the table, the
// environment overrides (the only getenv calls in core, each read once), and
// the by-name access Python uses.
#include "settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "cpu/dispatch/dispatch_stub.h"
#include "cpu/linalg/sgemm.h"
#include "flambeau/error.h"

namespace flambeau::settings {

namespace {

constexpr size_t kCount = static_cast<size_t>(Setting::kCount);

struct Spec {
  const char* name;
  const char* env;
  std::vector<std::string> values;  // index = the stored value
  uint8_t fallback;                 // the default (sgemm's depends on the CPU: see apply_environment)
  bool is_flag;
  bool settable;
  const char* doc;
};

const std::array<Spec, kCount>& specs() {
  static const std::array<Spec, kCount> table = {{
      {"sgemm",
       "FLAMBEAU_SGEMM",
       {"own", "openblas"},
       0,
       false,
       true,
       "Where float32 matrix products go: 'own' (flambeau's AVX-512 kernel, the default on AVX-512 CPUs, "
       "for products of at least 2**21 multiply-adds) or 'openblas' (every call; the default elsewhere)."},
      {"gemm_pool",
       "FLAMBEAU_GEMM_POOL",
       {"False", "True"},
       1,
       true,
       true,
       "Whether GEMM blocks and parallel_for chunks run on flambeau's spinning worker pool (True) or "
       "on OpenMP alone (False)."},
      {"parallel_for_schedule",
       "FLAMBEAU_PARALLEL_FOR",
       {"dynamic", "static", "affine"},
       0,
       false,
       true,
       "How parallel kernels split a range: 'dynamic' (small chunks claimed by idle threads), "
       "'static' (one contiguous chunk per thread) or 'affine' (the same small chunks, each thread "
       "first taking those of its own contiguous share, then what is left of the others')."},
      {"conv_row_blocks",
       "FLAMBEAU_CONV_ROWS",
       {"auto", "on", "off"},
       0,
       false,
       true,
       "Whether the AVX-512 direct convolution walks output rows in blocks that skip padding: 'auto' "
       "(when its cost model says it is cheaper), 'on' or 'off'."},
      {"conv_pixel_classes",
       "FLAMBEAU_CONV_CLASSES",
       {"auto", "off"},
       0,
       false,
       true,
       "Whether the channel-vectorized direct convolution groups border pixels by the taps they "
       "read: 'auto' (when cheaper) or 'off'."},
      {"conv_direct_kernel",
       "FLAMBEAU_CONV_DIRECT",
       {"auto", "flat", "cv"},
       0,
       false,
       true,
       "Which AVX-512 direct convolution kernel runs float32 forward passes: 'auto' (by channel count "
       "and kernel size), 'flat' or 'cv' (channel-vectorized)."},
      {"conv_weight_grad_kernel",
       "FLAMBEAU_CONV_WGRAD",
       {"auto", "flat", "cv"},
       0,
       false,
       true,
       "Which AVX-512 direct kernel computes float32 convolution weight gradients: 'auto', 'flat' or "
       "'cv' (channel-vectorized)."},
      {"conv_transposed_kernel",
       "FLAMBEAU_CONV_TRANSPOSED",
       {"auto", "gemm"},
       0,
       false,
       true,
       "How stride-1 transposed convolutions run: 'auto' (as a direct convolution on AVX-512) or "
       "'gemm' (GEMM + col2im, as every other transposed convolution)."},
      {"max_cpu_capability",
       "FLAMBEAU_CPU_CAPABILITY",
       {"auto", "avx512", "avx2", "base"},
       0,
       false,
       true,
       "The widest instruction set the CPU kernels may use: 'auto' (the widest the CPU has), 'avx512', "
       "'avx2' or 'base'; each kernel family chooses its variant again on its next call (below 'avx512' "
       "an 'own' sgemm runs on OpenBLAS). get_cpu_capability() says which one runs."},
      {"bf16_amx",
       "FLAMBEAU_BF16_AMX",
       {"False", "True"},
       1,
       true,
       true,
       "Whether bfloat16 products (mm, matmul, linear) and convolutions multiply on AMX tiles where the CPU "
       "has AMX-BF16 (True) or on AVX512-BF16 vdpbf16ps instructions (False); the sums are float32 and "
       "rounded once either way."},
  }};
  return table;
}

std::string join_values(const Spec& s) {
  std::string out;
  for (const std::string& v : s.values) out += (out.empty() ? "'" : ", '") + v + "'";
  return out;
}

int find_value(const Spec& s, std::string_view value) {
  for (size_t i = 0; i < s.values.size(); ++i)
    if (s.values[i] == value) return static_cast<int>(i);
  return -1;
}

/// A flag's override also takes 0/1, on/off and true/false in any case.
int parse_override(const Spec& s, const char* text) {
  if (!s.is_flag) return find_value(s, text);
  std::string low(text);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (low == "1" || low == "on" || low == "true") return 1;
  if (low == "0" || low == "off" || low == "false") return 0;
  return -1;
}

/// Each override's value index (-1: unset), from the environment, once.
struct Overrides {
  std::array<int, kCount> index{};
  std::vector<std::string> errors;
};

const Overrides& overrides() {
  static const Overrides o = [] {
    Overrides r;
    for (size_t i = 0; i < kCount; ++i) {
      const Spec& s = specs()[i];
      const char* text = std::getenv(s.env);
      r.index[i] = text && *text ? parse_override(s, text) : -1;
      if (text && *text && r.index[i] < 0)
        r.errors.push_back(
            std::string(s.env) + "='" + text + "' is not " +
            (s.is_flag ? std::string("a flag (0/1, on/off, true/false)") : "one of " + join_values(s)) +
            " (backends.cpu." + s.name + "): ignored");
    }
    return r;
  }();
  return o;
}

bool own_sgemm_possible() { return cpu::own_sgemm_available(); }

const Spec& spec_named(std::string_view name, size_t& index) {
  for (index = 0; index < kCount; ++index)
    if (name == specs()[index].name) return specs()[index];
  std::string names;
  for (const Spec& s : specs()) names += (names.empty() ? "" : ", ") + std::string(s.name);
  FB_CHECK_VALUE(false, "[backends.cpu] no setting named '", name, "'; the settings are: ", names);
  return specs()[0];  // unreachable
}

/// Why `value` cannot be stored for setting i now, or "" when it can.
std::string refusal(size_t i, int value) {
  if (static_cast<Setting>(i) == Setting::Sgemm && value == static_cast<int>(SgemmBackend::Own) &&
      !own_sgemm_possible())
    return std::string("the own float32 GEMM needs an AVX-512 CPU; this one runs '") + cpu::cpu_capability() +
           "' kernels";
  return "";
}

// Defaults, then each override: when the library loads. The capability first: sgemm's
// default and refusal depend on it.
std::vector<std::string> apply_environment() {
  std::vector<std::string> errors = overrides().errors;
  const size_t cap = static_cast<size_t>(Setting::MaxCpuCapability);
  const int cap_value = std::max(overrides().index[cap], 0);
  detail::g_values[cap].store(static_cast<uint8_t>(cap_value), std::memory_order_relaxed);
  cpu::invalidate_dispatch_stubs();
  for (size_t i = 0; i < kCount; ++i) {
    if (i == cap) continue;
    const Spec& s = specs()[i];
    int v = s.fallback;
    if (static_cast<Setting>(i) == Setting::Sgemm && !own_sgemm_possible())
      v = static_cast<int>(SgemmBackend::OpenBLAS);
    const int o = overrides().index[i];
    if (o >= 0) {
      const std::string why = refusal(i, o);
      if (why.empty())
        v = o;
      else
        errors.push_back(std::string(s.env) + "='" + s.values[o] + "': " + why + ": ignored");
    }
    detail::g_values[i].store(static_cast<uint8_t>(v), std::memory_order_relaxed);
  }
  return errors;
}

const std::vector<std::string> g_environment_errors = apply_environment();

}  // namespace

// Constant-initialized to the defaults (sgemm's as on AVX-512), so a kernel running before this
// file's initializer still reads a valid value; apply_environment() then sets the real ones.
std::atomic<uint8_t> detail::g_values[kCount] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 1};

std::vector<Info> list() {
  std::vector<Info> out;
  for (const Spec& s : specs()) out.push_back({s.name, s.env, s.values, s.is_flag, s.settable, s.doc});
  return out;
}

std::string get(std::string_view name) {
  size_t i = 0;
  const Spec& s = spec_named(name, i);
  return s.values[detail::g_values[i].load(std::memory_order_relaxed)];
}

void set(std::string_view name, std::string_view value) {
  size_t i = 0;
  const Spec& s = spec_named(name, i);
  FB_CHECK_VALUE(s.settable, "[backends.cpu.", s.name, "] is fixed when flambeau_core loads: set ", s.env,
                 " before importing it");
  const int v = find_value(s, value);
  FB_CHECK_VALUE(v >= 0, "[backends.cpu.", s.name, "] expected one of ", join_values(s), ", got '", value,
                 "'");
  const std::string why = refusal(i, v);
  FB_CHECK_VALUE(why.empty(), "[backends.cpu.", s.name, "] ", why);
  detail::g_values[i].store(static_cast<uint8_t>(v), std::memory_order_relaxed);
  if (static_cast<Setting>(i) == Setting::MaxCpuCapability) {
    // Note [CPU capabilities]: every stub resolves again on its next call.
    cpu::invalidate_dispatch_stubs();
  }
}

std::vector<std::string> environment_errors() { return g_environment_errors; }

}  // namespace flambeau::settings
