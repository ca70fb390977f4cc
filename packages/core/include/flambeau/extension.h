#pragma once
// The one header an extension author includes (`#include <flambeau/extension.h>`),
// for code compiled by flambeau.utils.cpp_extension or its setuptools classes.
// It brings the Tensor handle, every core op as a function (`flambeau::add(a,
// b)`), TensorIterator, parallel_for, the dtype and device types and FB_CHECK,
// and nothing of Python: it parses in a fraction of a second, unlike a header
// that pulls in pybind11. Python bindings include <flambeau/python/bindings.h>
// as well (load_inline's functions= writes them).
//
// Note [Extension ABI marker]
// An extension compiled against another flambeau-core (another version,
// compiler, C++ library ABI or pybind11: Note [ABI tag]) would fail at import
// with "undefined symbol", or worse, crash later. Every extension that
// includes this header carries its tag as a string in its binary,
// "FLAMBEAU_ABI_TAG=<tag>;", which cpp_extension's loader reads from the file
// *before* dlopen, so a mismatch is an ImportError that says to rebuild. The
// variable is inline (one copy however many files include the header) and
// `used` (kept by the compiler and linker though nothing reads it).
#include <cstdint>

#include "flambeau/abi.h"
#include "flambeau/device.h"
#include "flambeau/dtype.h"
#include "flambeau/error.h"
#include "flambeau/library.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/scalar.h"
#include "flambeau/tensor.h"
#include "flambeau/tensor_iterator.h"

namespace flambeau::extension_detail {
[[gnu::used]] inline constexpr char kAbiMarker[] = "FLAMBEAU_ABI_TAG=" FLAMBEAU_ABI_TAG ";";
}  // namespace flambeau::extension_detail

namespace flambeau {

// PyTorch's spellings that core spells otherwise: `t.contiguous()` is
// `contiguous(t)` (an op, in ops_generated.h). `t.data_ptr<float>()`,
// sizes(), strides(), numel(), dtype(), device() are members, and empty,
// zeros, empty_like, zeros_like are functions. Operators are registered with
// FLAMBEAU_LIBRARY (flambeau/library.h).

/// The first element of `t`, typed: `t.data_ptr<T>()` as a function (extensions written before the member).
template <class T>
inline T* data_ptr(const Tensor& t) {
  return t.template data<T>();
}

}  // namespace flambeau
