#pragma once
// pybind11 glue shared by every flambeau extension module (core's _C and the
// _C of alloc, autograd, interop). Include it in binding code only.
//
// Note [Python Tensor identity]
// The Python class `flambeau_core.Tensor` is bound to TensorImpl with a
// std::shared_ptr holder, registered once by core's module. The caster below
// converts between that class and the C++ handle flambeau::Tensor. Because
// pybind11 keeps a registry of live instances, returning a Tensor whose impl
// already has a Python object returns *that* object (`x.add_(1) is x`, and a
// Parameter stays a Parameter), across every module that uses this header.
#include <pybind11/gil.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "flambeau/abi.h"
#include "flambeau/tensor.h"

namespace pybind11::detail {
// Note [Tensor caster fast path]: every op call converts its tensor arguments and result through the
// caster below, and pybind11's generic path looks the C++ type up by name each time (a hash of the mangled
// name, string compares) before it reaches the instance. The Tensor class is registered once, so its
// type_info is looked up once and kept; an argument that is a Tensor (or a subclass, found through the
// same type_info) yields its holder directly, and a result goes to type_caster_generic with its type
// resolved. Identity (Note [Python Tensor identity]) and every other case are pybind11's own path.
inline const type_info* flambeau_tensor_type_info() {
  static const type_info* cached = nullptr;  // set under the GIL, once core has registered the class
  if (!cached) cached = get_type_info(typeid(flambeau::TensorImpl));
  return cached;
}

template <>
struct type_caster<flambeau::Tensor> {
 public:
  PYBIND11_TYPE_CASTER(flambeau::Tensor, const_name("Tensor"));

  bool load(handle src, bool convert) {
    if (src.is_none()) return false;
    if (const type_info* ti = flambeau_tensor_type_info(); ti && PyObject_TypeCheck(src.ptr(), ti->type)) {
      value_and_holder v_h = reinterpret_cast<instance*>(src.ptr())->get_value_and_holder(ti, false);
      if (v_h && v_h.holder_constructed()) {
        value = flambeau::Tensor(v_h.template holder<std::shared_ptr<flambeau::TensorImpl>>());
        return true;
      }
    }
    make_caster<std::shared_ptr<flambeau::TensorImpl>> inner;
    if (!inner.load(src, convert)) return false;
    value = flambeau::Tensor(cast_op<std::shared_ptr<flambeau::TensorImpl>>(std::move(inner)));
    return true;
  }
  static handle cast(const flambeau::Tensor& t, return_value_policy, handle parent) {
    if (!t.defined()) return none().release();
    if (const type_info* ti = flambeau_tensor_type_info()) {
      const std::shared_ptr<flambeau::TensorImpl>& holder = t.impl_ptr();
      return type_caster_generic::cast(cast_sources{holder.get(), ti}, return_value_policy::take_ownership,
                                       {}, nullptr, nullptr, &holder);
    }
    return make_caster<std::shared_ptr<flambeau::TensorImpl>>::cast(
        t.impl_ptr(), return_value_policy::take_ownership, parent);
  }
};
}  // namespace pybind11::detail

namespace flambeau::python {

/// Imports flambeau_core (loading libflambeau_core.so and registering the
/// Tensor type) and checks Note [ABI tag]. Call first in a dependent's
/// PYBIND11_MODULE; raises ImportError naming both tags on a mismatch.
inline void import_core_and_check_abi(const char* module_name) {
  pybind11::module_::import("flambeau_core");
  const std::string ours = FLAMBEAU_ABI_TAG;
  const std::string core = ::flambeau::core_abi_tag();
  if (ours != core) {
    PyErr_SetString(PyExc_ImportError, (std::string(module_name) + " was built for flambeau-core ABI '" +
                                        ours + "' but the installed flambeau-core has ABI '" + core +
                                        "'; install matching versions of all flambeau packages")
                                           .c_str());
    throw pybind11::error_already_set();
  }
}

// Note [Python objects in deleters]
// C++ objects that hold a Python reference may be destroyed on any thread,
// with or without the GIL: the backward pass runs without it (so a saved
// tensor, a hook or a graph node can die there), and so may any other thread.
// That covers storages over Python memory (frombuffer's Py_buffer, from_numpy's
// array, a DLPack producer's deleter), Python allocators, and autograd's
// Python hooks and Functions. Each such release takes the GIL
// (gil_scoped_acquire also works on a thread that already holds it, or that
// Python has never seen), and leaks the reference instead once Python is no
// longer usable: the interpreter is gone, or finalizing on another thread,
// where taking the GIL would hang or end the thread. A leak at exit is
// harmless; a crash is not.

/// True if this thread may take the GIL and touch Python objects
/// (Note [Python objects in deleters]).
inline bool python_is_usable() {
  if (!Py_IsInitialized()) return false;
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  return !finalizing || PyGILState_Check();
}

/// Drops one reference to `obj` from any thread (Note [Python objects in deleters]).
inline void decref_with_gil(PyObject* obj) {
  if (!obj || !python_is_usable()) return;
  pybind11::gil_scoped_acquire gil;
  Py_DECREF(obj);
}

/// Resets `obj` from any thread (Note [Python objects in deleters]).
inline void release_with_gil(pybind11::object& obj) {
  if (!obj) return;
  if (!python_is_usable()) {
    (void)obj.release();  // leak
    return;
  }
  pybind11::gil_scoped_acquire gil;
  obj = pybind11::object();
}

/// Releases and deletes a heap-allocated Py_buffer from any thread
/// (Note [Python objects in deleters]).
inline void release_buffer_with_gil(Py_buffer* view) {
  if (!python_is_usable()) return;  // leak
  pybind11::gil_scoped_acquire gil;
  PyBuffer_Release(view);
  delete view;
}

}  // namespace flambeau::python
