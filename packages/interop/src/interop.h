#pragma once
// Shared by flambeau_interop._C's source files: one file per protocol
// (numpy.cpp, dlpack.cpp), each exporting init_<protocol>(m, tensor_class).
#include <pybind11/pybind11.h>

#include <memory>

#include "flambeau/python/bindings.h"
#include "flambeau/tensor.h"

namespace py = pybind11;

namespace flambeau::interop {

/// core's Python Tensor class, to attach protocol methods to (never re-bound).
using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

void init_numpy(py::module_& m, TensorClass& cls);   // numpy.cpp
void init_dlpack(py::module_& m, TensorClass& cls);  // dlpack.cpp

// GIL-safe releases from storage deleters: flambeau::python::python_is_usable
// and decref_with_gil (Note [Python objects in deleters], core's bindings.h).
using flambeau::python::decref_with_gil;
using flambeau::python::python_is_usable;

/// Bytes of a tensor's memory span given sizes and strides in elements: from
/// the first to the end of the last reachable element (0 for an empty tensor).
/// Strides must be non-negative. RuntimeError naming `op` if that overflows
/// int64 (a malformed producer; Note [Size overflow] in flambeau/tensor_impl.h).
int64_t span_bytes(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, const char* op);

/// Python truth of obj (raises what bool(obj) raises).
inline bool is_true(py::handle obj) {
  const int r = PyObject_IsTrue(obj.ptr());
  if (r < 0) throw py::error_already_set();
  return r != 0;
}

/// The Python type name of obj ("list", "numpy.ndarray") for messages.
std::string type_name(py::handle obj);

}  // namespace flambeau::interop
