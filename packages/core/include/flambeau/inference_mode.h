#pragma once
// Note [Inference tensors]
// PyTorch calls a tensor made while inference_mode is on (on its thread) an inference tensor, and so are
// the views of it made later; a view made in inference_mode of an ordinary tensor stays ordinary, and an
// in-place op there keeps its tensor ordinary. All of these follow the storage: a tensor is an inference
// tensor exactly when its storage was made in inference mode (allocated, or wrapped external memory).
// Core keeps the per-thread switch and, beside the storages (not in them, so StorageImpl's layout did not
// change), the set of the storages made while it was on: StorageImpl's constructor adds itself when the
// switch is on, its destructor removes itself only while the set is not empty (one relaxed load
// otherwise). flambeau_autograd's inference_mode sets the switch; Tensor.is_inference reads the set.
// Only the reporting is PyTorch's: the restrictions on inference tensors outside inference mode (no
// in-place update, not saved for backward) are not enforced.
#include "flambeau/macros.h"

namespace flambeau {

class StorageImpl;

/// Turns inference mode on or off on this thread.
FB_API void set_inference_mode(bool enabled);
/// True while inference mode is on on this thread.
FB_API bool inference_mode_enabled();
/// True if `storage` was made while inference mode was on on the thread that made it.
FB_API bool is_inference_storage(const StorageImpl* storage);

}  // namespace flambeau
