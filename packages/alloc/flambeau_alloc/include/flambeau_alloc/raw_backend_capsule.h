#pragma once
// A RawBackend boxed for flambeau_alloc.CachingAllocator._from_raw_backend
// (raw_backend.h): a PyCapsule named kRawBackendCapsule whose pointer is a
// heap-allocated std::unique_ptr<RawBackend>, deleted with the capsule unless
// the allocator took the backend. Header-only (the Python C API and
// raw_backend.h), for a device package's bindings.
#include <Python.h>

#include <memory>

#include "flambeau_alloc/raw_backend.h"

namespace flambeau::alloc {

inline void delete_boxed_raw_backend(PyObject* capsule) {
  delete static_cast<std::unique_ptr<RawBackend>*>(PyCapsule_GetPointer(capsule, kRawBackendCapsule));
}

/// A new reference to the capsule, or nullptr with a Python error set.
inline PyObject* box_raw_backend(std::unique_ptr<RawBackend> backend) {
  auto* box = new std::unique_ptr<RawBackend>(std::move(backend));
  PyObject* capsule = PyCapsule_New(box, kRawBackendCapsule, &delete_boxed_raw_backend);
  if (!capsule) delete box;
  return capsule;
}

}  // namespace flambeau::alloc
