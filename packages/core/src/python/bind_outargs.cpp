// The out= contract for the ops written in Python (flambeau_core.linalg, _reduce, ...): the same
// checks and resizing as the generated bindings' out= (copy_to_out in arg_parser.cpp).
#include "arg_parser.h"
#include "common.h"
#include "flambeau/error.h"

namespace flambeau::python {

void init_outargs(py::module_& m) {
  m.def(
      "_copy_to_out",
      [](const std::string& op, const Tensor& result, py::object out_obj, bool exact_dtype) -> py::object {
        if (out_obj.is_none()) return py::cast(result);
        FB_CHECK_TYPE(py::isinstance<TensorImpl>(out_obj), "[", op, "] out= must be a Tensor, got ",
                      std::string(py::str(py::type::of(out_obj).attr("__name__"))));
        Tensor out = out_obj.cast<Tensor>();
        {
          py::gil_scoped_release no_gil;
          copy_to_out(op.c_str(), result, out, exact_dtype);
        }
        return out_obj;
      },
      py::arg("op"), py::arg("result"), py::arg("out"), py::arg("exact_dtype") = false,
      "Writes result into out= as the generated bindings do (PyTorch's out= rules: can_cast, or the exact "
      "dtype; resized with a warning unless empty; same device; no autograd); returns out (result if None).");
  m.def(
      "_check_out_autograd",
      [](const std::string& op, const Tensor& result, const Tensor& out) {
        check_out_autograd(op.c_str(), result, out);
      },
      py::arg("op"), py::arg("result"), py::arg("out"),
      "RuntimeError when grad mode records and out= or result requires grad (Note [out= and autograd]).");
}

}  // namespace flambeau::python
