// matmul/mm/bmm, log_softmax/softmax, cat/stack, gather/scatter_add from Python.
#include "common.h"
#include "flambeau/error.h"

namespace flambeau::python {
namespace {

using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

TensorList parse_tensor_list(py::handle obj, const char* op) {
  FB_CHECK_TYPE(
      py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj) && !py::isinstance<TensorImpl>(obj),
      "[", op, "] expected a list or tuple of tensors, got ",
      py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  TensorList out;
  size_t i = 0;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
    FB_CHECK_TYPE(py::isinstance<TensorImpl>(item), "[", op, "] expected a sequence of tensors, but element ",
                  i, " is a ", py::str(py::type::of(item).attr("__name__")).cast<std::string>());
    out.push_back(item.cast<Tensor>());
    ++i;
  }
  return out;
}

}  // namespace

void init_nn(py::module_& m) {
  auto cls = py::reinterpret_borrow<TensorClass>(m.attr("Tensor"));

  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, py::arg("input"),
      py::arg("other"),
      "Matrix product with NumPy semantics (1-D, 2-D, broadcast batches).\n\n"
      ">>> flambeau_core.matmul(flambeau_core.ones(2, 3), flambeau_core.ones(3)).tolist()\n[3.0, 3.0]");
  m.def(
      "mm", [](const Tensor& a, const Tensor& b) { return op::mm(a, b); }, py::arg("input"), py::arg("mat2"));
  m.def(
      "bmm", [](const Tensor& a, const Tensor& b) { return op::bmm(a, b); }, py::arg("input"),
      py::arg("mat2"));
  m.def(
      "log_softmax", [](const Tensor& t, int64_t dim) { return op::log_softmax(t, dim); }, py::arg("input"),
      py::arg("dim"));
  m.def(
      "softmax", [](const Tensor& t, int64_t dim) { return softmax(t, dim); }, py::arg("input"),
      py::arg("dim"));
  m.def(
      "cat", [](py::handle tensors, int64_t dim) { return op::cat(parse_tensor_list(tensors, "cat"), dim); },
      py::arg("tensors"), py::arg("dim") = 0, "Concatenates tensors along an existing dim.");
  m.def(
      "stack",
      [](py::handle tensors, int64_t dim) { return stack(parse_tensor_list(tensors, "stack"), dim); },
      py::arg("tensors"), py::arg("dim") = 0, "Stacks same-shape tensors along a new dim.");
  m.def(
      "gather", [](const Tensor& t, int64_t dim, const Tensor& index) { return op::gather(t, dim, index); },
      py::arg("input"), py::arg("dim"), py::arg("index"));
  m.def(
      "scatter_add",
      [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
        return op::scatter_add(t, dim, index, src);
      },
      py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("src"));

  cls.def(
         "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, py::arg("other"))
      .def(
          "mm", [](const Tensor& a, const Tensor& b) { return op::mm(a, b); }, py::arg("mat2"))
      .def(
          "bmm", [](const Tensor& a, const Tensor& b) { return op::bmm(a, b); }, py::arg("mat2"))
      .def("__matmul__",
           [](const Tensor& a, py::handle b) -> py::object {
             if (!py::isinstance<TensorImpl>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::cast(matmul(a, b.cast<Tensor>()));
           })
      .def("__rmatmul__",
           [](const Tensor& a, py::handle b) -> py::object {
             if (!py::isinstance<TensorImpl>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::cast(matmul(b.cast<Tensor>(), a));
           })
      .def(
          "log_softmax", [](const Tensor& t, int64_t dim) { return op::log_softmax(t, dim); }, py::arg("dim"))
      .def(
          "softmax", [](const Tensor& t, int64_t dim) { return softmax(t, dim); }, py::arg("dim"))
      .def(
          "gather",
          [](const Tensor& t, int64_t dim, const Tensor& index) { return op::gather(t, dim, index); },
          py::arg("dim"), py::arg("index"))
      .def(
          "scatter_add",
          [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
            return op::scatter_add(t, dim, index, src);
          },
          py::arg("dim"), py::arg("index"), py::arg("src"));
}

}  // namespace flambeau::python
