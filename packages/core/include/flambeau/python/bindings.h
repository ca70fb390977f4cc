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
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "flambeau/abi.h"
#include "flambeau/tensor.h"

namespace pybind11::detail {
template <>
struct type_caster<flambeau::Tensor> {
 public:
  PYBIND11_TYPE_CASTER(flambeau::Tensor, const_name("Tensor"));

  bool load(handle src, bool convert) {
    if (src.is_none()) return false;
    make_caster<std::shared_ptr<flambeau::TensorImpl>> inner;
    if (!inner.load(src, convert)) return false;
    value = flambeau::Tensor(cast_op<std::shared_ptr<flambeau::TensorImpl>>(std::move(inner)));
    return true;
  }
  static handle cast(const flambeau::Tensor& t, return_value_policy, handle parent) {
    if (!t.defined()) return none().release();
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

}  // namespace flambeau::python
