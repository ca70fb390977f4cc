// flambeau_core._C: thin bindings over libflambeau_core.so.
#include "common.h"
#include "flambeau/error.h"

namespace flambeau::python {
namespace {
// Note [Errors]: registered once here, applies to every module sharing
// pybind11's internals (alloc, autograd, interop included).
void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}
}  // namespace
}  // namespace flambeau::python

PYBIND11_MODULE(_C, m) {
  using namespace flambeau::python;
  m.doc() = "flambeau-core's compiled bindings (use the flambeau_core package instead)";
  register_error_translator();
  init_dtype(m);
  init_tensor(m);
  init_allocator(m);
  init_factories(m);
  init_views(m);
  init_generated_ops(m);
  init_math(m);
  init_runtime(m);
}
