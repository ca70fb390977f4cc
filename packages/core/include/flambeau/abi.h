#pragma once
// Note [ABI tag]
// flambeau's C++ packages share one ABI domain: alloc, autograd and interop are
// compiled against core's installed headers and call into
// libflambeau_core.so. FLAMBEAU_ABI_TAG is expanded by *each* compiler that
// includes this header, so a dependent built with another core version,
// another compiler, or another C++ standard-library ABI carries a different
// tag. At import, a dependent compares its tag with core_abi_tag() (expanded
// when core was built) and raises ImportError naming both if they differ.
// FB_ABI_LAYOUT is the revision of the public classes' memory layout
// (TensorImpl, Storage, the dispatcher's tables): bump it in any change that
// moves a field, so that a dependent or a cached fb.compile kernel built
// against the old layout is refused (and rebuilt) instead of misreading
// shapes, while the version string stays the same between releases.
#include "flambeau/macros.h"
#include "flambeau/version.h"

#define FB_ABI_STR2(x) #x
#define FB_ABI_STR(x) FB_ABI_STR2(x)
#if defined(__clang__)
#define FB_ABI_COMPILER "clang-" FB_ABI_STR(__clang_major__)
#elif defined(__GNUC__)
#define FB_ABI_COMPILER "gcc-" FB_ABI_STR(__GNUC__)
#else
#define FB_ABI_COMPILER "unknown-compiler"
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI)
#define FB_ABI_CXX11 FB_ABI_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define FB_ABI_CXX11 "na"
#endif

// 2: TensorImpl's sizes and strides inline (detail::SizesAndStrides)
#define FB_ABI_LAYOUT "2"

#define FLAMBEAU_ABI_TAG                                                                                     \
  "flambeau-" FLAMBEAU_VERSION_STRING "/layout-" FB_ABI_LAYOUT "/" FB_ABI_COMPILER "/cxx11abi-" FB_ABI_CXX11 \
  "/pybind11-" FLAMBEAU_PYBIND11_VERSION_STRING

namespace flambeau {
/// The tag core was compiled with.
FB_API const char* core_abi_tag();
}  // namespace flambeau
