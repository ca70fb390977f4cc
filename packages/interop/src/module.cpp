// flambeau_interop._C: NumPy and DLPack for flambeau tensors.
//
// Importing this module attaches the protocol methods (`numpy`, `__array__`,
// `__array_interface__`, `__dlpack__`, `__dlpack_device__`) to core's Tensor
// class; core itself knows nothing of them (ARCHITECTURE.md, "Interop").
//
// Storages over Python memory (from_numpy, from_dlpack) may die on any thread,
// with or without the GIL: Note [Python objects in deleters] in core's
// flambeau/python/bindings.h gives the rule their deleters follow.
#include <Python.h>

#include "flambeau/error.h"
#include "interop.h"

namespace flambeau::interop {

int64_t span_bytes(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, const char* op) {
  int64_t last = 0;
  bool ok = true;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    int64_t reach = 0;
    ok = ok && !__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) &&
         !__builtin_add_overflow(last, reach, &last);
  }
  int64_t nbytes = 0;
  ok = ok && !__builtin_add_overflow(last, 1, &last) &&
       !__builtin_mul_overflow(last, static_cast<int64_t>(itemsize(dtype)), &nbytes);
  FB_CHECK(ok, "[", op, "] shape ", shape_str(sizes), " and strides ", shape_str(strides), " of dtype ",
           dtype_name(dtype), " span more bytes than int64 can count");
  return nbytes;
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
