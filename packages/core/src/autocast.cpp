// Note [Autocast] (dispatch.h): the per-thread state, the gate and the cache of cast weights.
#include "flambeau/autocast.h"

#include <map>
#include <mutex>
#include <utility>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/tensor_impl.h"

namespace flambeau {

namespace detail {
thread_local AutocastState tls_autocast;
}

namespace {
// Threads with autocast on; the observation flag is set while there is one.
std::mutex g_autocast_mutex;
int g_autocast_threads = 0;

struct CacheEntry {
  Tensor source;  // held so that its address is not reused while the entry lives
  Tensor cast;
};
thread_local std::map<std::pair<const TensorImpl*, ScalarType>, CacheEntry> tls_cache;

bool cacheable(const Tensor& t, ScalarType target) {
  if (!detail::tls_autocast.cache_enabled || target != detail::tls_autocast.dtype) return false;
  if (t.dtype() != ScalarType::Float32 || !t.requires_grad() || t.impl()->is_view()) return false;
  const AutogradMetaInterface* meta = t.impl()->autograd_meta();
  return meta && meta->is_leaf();
}
}  // namespace

namespace detail {
Tensor autocast_cast(const Tensor& t, ScalarType target) {
  if (!t.defined() || t.dtype() == target || t.dtype() == ScalarType::Float64 || !is_floating(t.dtype()) ||
      t.device().type != DeviceType::CPU)
    return t;
  if (!cacheable(t, target)) return op::cast(t, target);
  const auto key = std::make_pair(static_cast<const TensorImpl*>(t.impl()), target);
  auto it = tls_cache.find(key);
  if (it != tls_cache.end()) return it->second.cast;
  Tensor cast = op::cast(t, target);
  tls_cache.emplace(key, CacheEntry{t, cast});
  return cast;
}
}  // namespace detail

void set_autocast_enabled(bool enabled) {
  auto& s = detail::tls_autocast;
  if (s.enabled == enabled) return;
  s.enabled = enabled;
  std::lock_guard lock(g_autocast_mutex);
  g_autocast_threads += enabled ? 1 : -1;
  if (g_autocast_threads > 0)
    detail::g_observe.fetch_or(kObserveAutocast);
  else
    detail::g_observe.fetch_and(static_cast<uint8_t>(~kObserveAutocast));
}

bool is_autocast_enabled() { return detail::tls_autocast.enabled; }

void set_autocast_dtype(ScalarType dtype) {
  FB_CHECK_TYPE(dtype == ScalarType::BFloat16 || dtype == ScalarType::Float16,
                "[autocast] In CPU autocast, but the target dtype is not supported: CPU autocast supports "
                "torch.bfloat16 and torch.float16, got ",
                dtype_name(dtype));
  detail::tls_autocast.dtype = dtype;
}

ScalarType get_autocast_dtype() { return detail::tls_autocast.dtype; }
void set_autocast_cache_enabled(bool enabled) { detail::tls_autocast.cache_enabled = enabled; }
bool is_autocast_cache_enabled() { return detail::tls_autocast.cache_enabled; }
int autocast_increment_nesting() { return ++detail::tls_autocast.nesting; }
int autocast_decrement_nesting() { return --detail::tls_autocast.nesting; }
void clear_autocast_cache() { tls_cache.clear(); }
int64_t autocast_cache_size() { return static_cast<int64_t>(tls_cache.size()); }

}  // namespace flambeau
