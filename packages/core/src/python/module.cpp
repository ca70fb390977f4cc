// flambeau_core._C: thin bindings over libflambeau_core.so.
#include "arg_parser.h"
#include "common.h"
#include "flambeau/device_errors.h"
#include "flambeau/error.h"
#include "flambeau/index_bounds_error.h"

namespace flambeau::python {
namespace {

constexpr const char* kFlambeauErrorDoc =
    "A shape or value error: an argument of the right type whose shape, size, value or memory layout\n"
    "the op cannot take (\"[add] shapes (2, 3) and (4,) cannot be broadcast\", \"[fill_] value 1000\n"
    "cannot be converted to type int8 without overflow\").\n"
    "\n"
    "It derives from both RuntimeError and ValueError, as NumPy's AxisError derives from both\n"
    "ValueError and IndexError: PyTorch raises RuntimeError for these errors, so code written for\n"
    "PyTorch catches it, and `except ValueError` (Python's convention for a bad value) works too.\n"
    "\n"
    "Why this name: the class covers more than shapes (a fill value out of a dtype's range, a negative\n"
    "size, a probability outside [0, 1], a write into an expanded tensor), so a name such as ShapeError\n"
    "would mislead; it is flambeau's answer to PyTorch's catch-all RuntimeError. It is not the base of\n"
    "every flambeau exception: wrong types and dtypes raise TypeError and bad indices IndexError (the\n"
    "Python classes, as in PyTorch and NumPy), and failures that are not the caller's input (out of\n"
    "memory, a missing package) raise plain RuntimeError.\n"
    "\n"
    "Example:\n"
    "    >>> import flambeau_core as fc\n"
    "    >>> try:\n"
    "    ...     fc.ones(2, 3) + fc.ones(4)\n"
    "    ... except RuntimeError as e:  # or: except ValueError, except fc.FlambeauError\n"
    "    ...     print(type(e).__name__, isinstance(e, ValueError))\n"
    "    FlambeauError True\n";

// The Python class of flambeau::ValueError; created once, alive until exit.
PyObject* g_flambeau_error = nullptr;

constexpr const char* kIndexOutOfBoundsErrorDoc =
    "An index tensor holds a value outside the range of the dim it indexes, in an op for which PyTorch\n"
    "raises RuntimeError (gather, scatter, scatter_add, scatter_reduce, index_select, index_add).\n"
    "\n"
    "It derives from both IndexError (Python's class for an index out of range, what flambeau raises\n"
    "for the other indexing ops, as PyTorch does for take, index_copy and t[i]) and RuntimeError, so\n"
    "code written for PyTorch (`except RuntimeError`) and code that expects IndexError both catch it.\n"
    "\n"
    "Example:\n"
    "    >>> import flambeau_core as fc\n"
    "    >>> try:\n"
    "    ...     fc.gather(fc.zeros(2, 3), 1, fc.tensor([[5]]))\n"
    "    ... except RuntimeError as e:  # or: except IndexError\n"
    "    ...     print(type(e).__name__, isinstance(e, IndexError))\n"
    "    IndexOutOfBoundsError True\n";

// The Python class of flambeau::IndexOutOfBoundsError; created once, alive until exit.
PyObject* g_index_out_of_bounds_error = nullptr;

constexpr const char* kOutOfMemoryErrorDoc =
    "Exception raised when device is out of memory: an allocator could not provide the memory an op\n"
    "asked for (PyTorch's torch.OutOfMemoryError). The message names the op, the size and the device.\n"
    "A subclass of RuntimeError, so code that catches RuntimeError still catches it.\n"
    "\n"
    "Example:\n"
    "    >>> import flambeau_core as fc\n"
    "    >>> try:\n"
    "    ...     fc.empty(2**60, dtype=fc.uint8)  # one exbibyte\n"
    "    ... except fc.OutOfMemoryError as e:\n"
    "    ...     print(isinstance(e, RuntimeError), str(e).startswith('[allocate] out of memory'))\n"
    "    True True\n";

constexpr const char* kAcceleratorErrorDoc =
    "Exception raised while executing on device: a device runtime call failed (PyTorch's\n"
    "torch.AcceleratorError; flambeau-cuda raises it for CUDA errors other than a bad argument). A\n"
    "subclass of RuntimeError.\n"
    "\n"
    "Example:\n"
    "    >>> import flambeau_core as fc\n"
    "    >>> issubclass(fc.AcceleratorError, RuntimeError)\n"
    "    True\n";

// The Python classes of flambeau::OutOfMemoryError and AcceleratorError; created once, alive until exit.
PyObject* g_out_of_memory_error = nullptr;
PyObject* g_accelerator_error = nullptr;

PyObject* new_runtime_error_class(py::module_& m, const char* name, const char* qualified, const char* doc) {
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified, doc, PyExc_RuntimeError, nullptr);
  if (!cls) throw py::error_already_set();
  m.attr(name) = py::handle(cls);
  return cls;
}

void add_flambeau_error(py::module_& m) {
  py::tuple bases = py::make_tuple(py::handle(PyExc_RuntimeError), py::handle(PyExc_ValueError));
  g_flambeau_error =
      PyErr_NewExceptionWithDoc("flambeau_core.FlambeauError", kFlambeauErrorDoc, bases.ptr(), nullptr);
  if (!g_flambeau_error) throw py::error_already_set();
  m.attr("FlambeauError") = py::handle(g_flambeau_error);
  py::tuple index_bases = py::make_tuple(py::handle(PyExc_IndexError), py::handle(PyExc_RuntimeError));
  g_index_out_of_bounds_error = PyErr_NewExceptionWithDoc(
      "flambeau_core.IndexOutOfBoundsError", kIndexOutOfBoundsErrorDoc, index_bases.ptr(), nullptr);
  if (!g_index_out_of_bounds_error) throw py::error_already_set();
  m.attr("IndexOutOfBoundsError") = py::handle(g_index_out_of_bounds_error);
  g_out_of_memory_error =
      new_runtime_error_class(m, "OutOfMemoryError", "flambeau_core.OutOfMemoryError", kOutOfMemoryErrorDoc);
  g_accelerator_error =
      new_runtime_error_class(m, "AcceleratorError", "flambeau_core.AcceleratorError", kAcceleratorErrorDoc);
}

// Note [Errors]: registered once here, applies to every module sharing
// pybind11's internals (alloc, autograd, interop included).
void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(g_flambeau_error, e.what());
    } catch (const IndexOutOfBoundsError& e) {
      PyErr_SetString(g_index_out_of_bounds_error, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(g_out_of_memory_error, e.what());
    } catch (const AcceleratorError& e) {
      PyErr_SetString(g_accelerator_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}
}  // namespace

PyObject* flambeau_error_type() { return g_flambeau_error; }
PyObject* index_out_of_bounds_error_type() { return g_index_out_of_bounds_error; }
PyObject* out_of_memory_error_type() { return g_out_of_memory_error; }
PyObject* accelerator_error_type() { return g_accelerator_error; }

}  // namespace flambeau::python

namespace flambeau::python {
void init_library(py::module_& m);  // bind_library.cpp: operators registered from C++ (FLAMBEAU_LIBRARY)
}

PYBIND11_MODULE(_C, m) {
  using namespace flambeau::python;
  m.doc() = "flambeau-core's compiled bindings (use the flambeau_core package instead)";
  add_flambeau_error(m);
  register_error_translator();
  init_dtype(m);
  init_size(m);
  init_tensor(m);
  init_allocator(m);
  init_factories(m);
  init_views(m);
  init_generated_ops(m);
  init_math(m);
  init_runtime(m);
  init_device(m);
  init_outargs(m);
  init_profiler(m);
  init_trace(m);
  init_conv(m);
  init_library(m);
  // Note [__torch_function__]: the functions bound with pybind11 that take tensors.
  make_overridable(m, {"reshape", "transpose", "permute", "unsqueeze", "squeeze", "flatten", "narrow", "select",
                       "unbind", "index_put", "index_put_", "as_strided", "zeros_like", "ones_like", "empty_like",
                       "full_like", "rand_like", "randn_like", "as_tensor", "result_type", "_copy_to_out"});
}
