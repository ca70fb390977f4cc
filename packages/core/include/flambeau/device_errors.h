#pragma once
// Failures of memory and devices, PyTorch's two RuntimeError subclasses:
//   OutOfMemoryError -> flambeau_core.OutOfMemoryError (torch.OutOfMemoryError): an allocator could not
//                       provide the memory asked for (the message names the op, the size and the device)
//   AcceleratorError -> flambeau_core.AcceleratorError (torch.AcceleratorError): a device runtime call
//                       failed while executing on a device
// Both derive from RuntimeError in C++ and in Python, so `except RuntimeError` still catches them (Note
// [Errors] in error.h has the other classes). Their own header so that adding them did not rebuild every
// file that includes error.h.
#include "flambeau/error.h"

namespace flambeau {

struct FB_API OutOfMemoryError : RuntimeError {
  using RuntimeError::RuntimeError;
};
struct FB_API AcceleratorError : RuntimeError {
  using RuntimeError::RuntimeError;
};

}  // namespace flambeau
