#pragma once
// The per-thread autocast state (Note [Autocast], dispatch.h): what
// fb.autocast / fb.set_autocast_enabled drive (flambeau_core/amp).
#include "flambeau/dtype.h"
#include "flambeau/macros.h"

namespace flambeau {

/// Turns autocast on or off on this thread (the kObserveAutocast gate follows).
FB_API void set_autocast_enabled(bool enabled);
FB_API bool is_autocast_enabled();
/// The low-precision dtype of the `lower` ops: bfloat16 (default) or float16.
FB_API void set_autocast_dtype(ScalarType dtype);
FB_API ScalarType get_autocast_dtype();
FB_API void set_autocast_cache_enabled(bool enabled);
FB_API bool is_autocast_cache_enabled();
/// Regions open on this thread, after entering (+1) or leaving (-1) one.
FB_API int autocast_increment_nesting();
FB_API int autocast_decrement_nesting();
/// Drops this thread's cached casts of weights.
FB_API void clear_autocast_cache();
/// How many casts the cache holds on this thread (tests).
FB_API int64_t autocast_cache_size();

}  // namespace flambeau
