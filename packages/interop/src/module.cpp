// flambeau_interop._C: NumPy and DLPack for flambeau tensors.
//
// Importing this module attaches the protocol methods (`numpy`, `__array__`,
// `__array_interface__`, `__dlpack__`, `__dlpack_device__`) to core's Tensor
// class; core itself knows nothing of them (ARCHITECTURE.md, "Interop").
//
// Note [Releasing Python objects from storage deleters]
// A storage that wraps a Python object's memory (a NumPy array) holds a
// reference to that object. The storage may die on any thread (an autograd
// worker, a data-loader thread) with or without the GIL, or during
// interpreter shutdown. The deleter therefore takes the GIL with
// PyGILState_Ensure, which works whether or not this thread holds it, and
// leaks the reference instead of touching Python when the interpreter is gone
// (or finalizing on another thread, where taking the GIL would hang): a leak
// at exit is harmless, a crash is not.
#include <Python.h>

#include "flambeau/error.h"
#include "interop.h"

namespace flambeau::interop {

bool python_is_usable() {
  if (!Py_IsInitialized()) return false;
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  return !finalizing || PyGILState_Check();
}

void decref_with_gil(PyObject* obj) {
  if (!obj || !python_is_usable()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(obj);
  PyGILState_Release(state);
}

int64_t span_elements(IntArrayRef sizes, IntArrayRef strides) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return last + 1;
}

std::string type_name(py::handle obj) {
  py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()));
  std::string mod = py::str(type.attr("__module__"));
  std::string name = py::str(type.attr("__qualname__"));
  return mod == "builtins" ? name : mod + "." + name;
}

}  // namespace flambeau::interop

PYBIND11_MODULE(_C, m) {
  using namespace flambeau::interop;
  flambeau::python::import_core_and_check_abi("flambeau_interop._C");
  m.doc() = "flambeau-interop's compiled protocols (use the flambeau_interop package instead)";

  auto cls = py::reinterpret_borrow<TensorClass>(py::module_::import("flambeau_core").attr("Tensor"));
  init_numpy(m, cls);
  init_dlpack(m, cls);

  // Crosses the module boundary both ways: core's Tensor in, the same Python
  // object out (Note [Python Tensor identity]).
  m.def(
      "_roundtrip", [](const flambeau::Tensor& t) { return t; }, py::arg("tensor"),
      "Returns its argument after converting it to a C++ Tensor and back (for tests).");
  m.def(
      "_storage_use_count", [](const flambeau::Tensor& t) { return t.impl()->storage().use_count(); },
      py::arg("tensor"), "Number of owners of the tensor's storage (for lifetime tests).");
  m.def(
      "_storage_is_external", [](const flambeau::Tensor& t) { return t.impl()->storage()->is_external(); },
      py::arg("tensor"), "True if the tensor wraps memory flambeau does not own.");
}
