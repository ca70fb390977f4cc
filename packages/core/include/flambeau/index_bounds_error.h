#pragma once
// IndexOutOfBoundsError: an index tensor's value out of the range of the dim it indexes, in the ops where
// PyTorch raises RuntimeError for it (gather, scatter, scatter_add, scatter_reduce, index_select,
// index_add). Python's flambeau_core.IndexOutOfBoundsError derives from both IndexError and RuntimeError,
// so `except RuntimeError` (PyTorch code) and `except IndexError` both catch it (Note [Errors] in
// error.h has the other classes). Its own header so that adding it did not rebuild every file that
// includes error.h.
#include "flambeau/error.h"

namespace flambeau {

struct FB_API IndexOutOfBoundsError : IndexError {
  using IndexError::IndexError;
};

}  // namespace flambeau

/// FB_CHECK_INDEX_BOUNDS(i >= 0 && i < n, "[gather] index ", i, " is out of bounds for dimension ", d, ...);
#define FB_CHECK_INDEX_BOUNDS(cond, ...) FB_CHECK_IMPL(IndexOutOfBoundsError, cond, __VA_ARGS__)
