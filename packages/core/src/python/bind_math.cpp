// Elementwise ops and reductions from Python: operators (+ - * / ** and
// comparisons, in-place forms), Tensor methods and module functions with the
// same names (flambeau_core.add, where, sum, max, ...).
//
// Binary operators accept Tensors, Python numbers (made wrapped-number
// tensors: Note [Wrapped numbers]), nested lists/tuples and NumPy arrays
// (copied into tensors, as in PyTorch) and return NotImplemented for anything
// else, so Python can try the other operand's reflected method. __eq__
// returns a tensor, so __hash__ is kept identity-based (tensors are dict keys,
// e.g. optimizer state).
#include "../cpu/vec_table.h"
#include "../tensor_iterator.h"
#include "common.h"
#include "flambeau/error.h"

namespace flambeau::python {
namespace {

using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
}

// An operand of a binary operator; false if Python should try the other side.
bool try_operand(py::handle obj, const char* op, Tensor& out) {
  if (py::isinstance<TensorImpl>(obj)) {
    out = obj.cast<Tensor>();
    return true;
  }
  if (PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) ||
      (py::hasattr(obj, "__float__") && !py::hasattr(obj, "__len__"))) {
    out = as_operand(obj, op);
    return true;
  }
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()) ||
      (PyObject_CheckBuffer(obj.ptr()) && py::hasattr(obj, "__array_interface__"))) {
    // A nested list/tuple or a NumPy array: a tensor copy of it (as PyTorch
    // does; t == [1, 2] compares elementwise), see __array_priority__.
    out = py::module_::import("flambeau_core").attr("tensor")(obj).cast<Tensor>();
    return true;
  }
  return false;
}

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

template <class F>
py::object binary_operator(const Tensor& self, py::handle other, const char* op, const F& f) {
  Tensor o;
  if (!try_operand(other, op, o)) return not_implemented();
  return py::cast(f(self, o));
}

template <class F>
py::object inplace_operator(py::handle self_obj, py::handle other, const char* op, const F& f) {
  Tensor o;
  if (!try_operand(other, op, o)) return not_implemented();
  Tensor self = self_obj.cast<Tensor>();
  f(self, o);
  return py::reinterpret_borrow<py::object>(self_obj);
}

// dim=None -> all dims; an int; or a sequence of ints.
Shape parse_dims(py::handle dim, const char* op) {
  if (dim.is_none()) return {};
  if (PyIndex_Check(dim.ptr()) && !PyBool_Check(dim.ptr())) return {dim.cast<int64_t>()};
  return parse_int_sequence(dim, op, "dim");
}

py::object max_result(const std::tuple<Tensor, Tensor>& r) {
  // Unpacks like a tuple and has .values / .indices (torch.return_types.max).
  static py::object* cls = new py::object(
      py::module_::import("collections").attr("namedtuple")("max", py::make_tuple("values", "indices")));
  return (*cls)(std::get<0>(r), std::get<1>(r));
}

Tensor sum_py(const Tensor& self, py::handle dim, bool keepdim, py::handle dtype) {
  std::optional<ScalarType> dt;
  if (!dtype.is_none()) dt = parse_dtype(dtype, self.dtype(), "sum");
  return op::sum(self, parse_dims(dim, "sum"), keepdim, dt);
}

Tensor mean_py(const Tensor& self, py::handle dim, bool keepdim, py::handle dtype) {
  const Tensor in = dtype.is_none() ? self : to_dtype(self, parse_dtype(dtype, self.dtype(), "mean"));
  return mean(in, parse_dims(dim, "mean"), keepdim);
}

py::object max_py(const Tensor& self, py::handle dim, bool keepdim) {
  if (py::isinstance<TensorImpl>(dim)) return py::cast(op::maximum(self, dim.cast<Tensor>()));  // max(a, b)
  if (dim.is_none()) {
    FB_CHECK_TYPE(!keepdim, "[max] keepdim=True needs a dim");
    return py::cast(op::max(self));
  }
  FB_CHECK_TYPE(PyIndex_Check(dim.ptr()), "[max] dim must be an int, got ", type_name(dim));
  return max_result(op::max_dim(self, dim.cast<int64_t>(), keepdim));
}

Tensor argmax_py(const Tensor& self, py::handle dim, bool keepdim) {
  std::optional<int64_t> d;
  if (!dim.is_none()) {
    FB_CHECK_TYPE(PyIndex_Check(dim.ptr()), "[argmax] dim must be an int, got ", type_name(dim));
    d = dim.cast<int64_t>();
  }
  return op::argmax(self, d, keepdim);
}

Tensor all_any(const Tensor& self, bool all) {
  const Tensor nonzero = op::ne(self, scalar_to_tensor(Scalar(false)));
  const Tensor count = op::sum(nonzero, {}, false, std::nullopt);
  return all ? op::eq(count, scalar_to_tensor(Scalar(self.numel())))
             : op::gt(count, scalar_to_tensor(Scalar(0)));
}

// Tensor.to(dtype) / to(device) / to(device, dtype) / to(other) / keywords.
Tensor to_py(const Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  std::optional<ScalarType> dtype;
  std::optional<Device> device;
  auto take = [&](py::handle a) {
    if (py::isinstance<ScalarType>(a) || a.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
        a.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type) ||
        a.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type))
      dtype = parse_dtype(a, self.dtype(), "to");
    else if (py::isinstance<py::str>(a) || py::isinstance<Device>(a))
      device = parse_device(a, "to");
    else if (py::isinstance<TensorImpl>(a)) {
      const Tensor o = a.cast<Tensor>();
      dtype = o.dtype();
      device = o.device();
    } else if (!a.is_none())
      throw TypeError(detail::cat_str("[to] expected a dtype, a device or a Tensor, got ", type_name(a)));
  };
  for (py::handle a : args) take(a);
  for (auto item : kwargs) {
    const std::string key = py::str(item.first).cast<std::string>();
    if (key == "dtype" || key == "device" || key == "other")
      take(item.second);
    else if (key != "non_blocking" && key != "copy")
      throw TypeError(detail::cat_str("[to] unexpected keyword argument '", key, "'"));
  }
  if (device && device->type != self.device().type)
    throw RuntimeError(detail::cat_str("[to] moving a tensor from ", self.device().str(), " to ",
                                       device->str(),
                                       " is not supported: flambeau-core was built without CUDA"));
  Tensor out = dtype ? to_dtype(self, *dtype) : self;
  if (kwargs.contains("copy") && py::bool_(kwargs["copy"]) && out.is_same(self)) out = op::clone(self);
  return out;
}

}  // namespace

void init_math(py::module_& m) {
  auto cls = py::reinterpret_borrow<TensorClass>(m.attr("Tensor"));

  // ---- operators ----
  cls.def("__add__",
          [](const Tensor& a, py::handle b) {
            return binary_operator(a, b, "add",
                                   [](const Tensor& x, const Tensor& y) { return op::add(x, y, 1); });
          })
      .def("__radd__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "add",
                                    [](const Tensor& x, const Tensor& y) { return op::add(y, x, 1); });
           })
      .def("__sub__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "sub",
                                    [](const Tensor& x, const Tensor& y) { return op::sub(x, y, 1); });
           })
      .def("__rsub__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "sub",
                                    [](const Tensor& x, const Tensor& y) { return op::sub(y, x, 1); });
           })
      .def("__mul__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "mul",
                                    [](const Tensor& x, const Tensor& y) { return op::mul(x, y); });
           })
      .def("__rmul__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "mul",
                                    [](const Tensor& x, const Tensor& y) { return op::mul(y, x); });
           })
      .def("__truediv__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "div",
                                    [](const Tensor& x, const Tensor& y) { return op::div(x, y); });
           })
      .def("__rtruediv__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "div",
                                    [](const Tensor& x, const Tensor& y) { return op::div(y, x); });
           })
      .def("__pow__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "pow",
                                    [](const Tensor& x, const Tensor& y) { return op::pow(x, y); });
           })
      .def("__rpow__",
           [](const Tensor& a, py::handle b) {
             return binary_operator(a, b, "pow",
                                    [](const Tensor& x, const Tensor& y) { return op::pow(y, x); });
           })
      .def("__eq__", [](const Tensor& a, py::handle b) { return binary_operator(a, b, "eq", op::eq); })
      .def("__ne__", [](const Tensor& a, py::handle b) { return binary_operator(a, b, "ne", op::ne); })
      .def("__lt__", [](const Tensor& a, py::handle b) { return binary_operator(a, b, "lt", op::lt); })
      .def("__le__", [](const Tensor& a, py::handle b) { return binary_operator(a, b, "le", op::le); })
      .def("__gt__", [](const Tensor& a, py::handle b) { return binary_operator(a, b, "gt", op::gt); })
      .def("__ge__", [](const Tensor& a, py::handle b) { return binary_operator(a, b, "ge", op::ge); })
      .def("__neg__", [](const Tensor& a) { return op::neg(a); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return op::abs(a); })
      .def("__iadd__",
           [](py::handle a, py::handle b) {
             return inplace_operator(a, b, "add_", [](Tensor& x, const Tensor& y) { op::add_(x, y, 1); });
           })
      .def("__isub__",
           [](py::handle a, py::handle b) {
             return inplace_operator(a, b, "sub_", [](Tensor& x, const Tensor& y) { op::sub_(x, y, 1); });
           })
      .def("__imul__",
           [](py::handle a, py::handle b) {
             return inplace_operator(a, b, "mul_", [](Tensor& x, const Tensor& y) { op::mul_(x, y); });
           })
      .def("__itruediv__", [](py::handle a, py::handle b) {
        return inplace_operator(a, b, "div_", [](Tensor& x, const Tensor& y) { op::div_(x, y); });
      });
  // NumPy defers to our reflected operators (np.float64(1) + t is a Tensor).
  cls.attr("__array_priority__") = 1000;
  // pybind11 sets __hash__ to None when __eq__ is defined; tensors hash by identity.
  cls.attr("__hash__") = py::module_::import("builtins").attr("object").attr("__hash__");

  // ---- methods ----
  auto operand = [](py::handle h, const char* op) { return as_operand(h, op); };
  cls.def(
         "add",
         [=](const Tensor& a, py::handle b, py::handle alpha) {
           return op::add(a, operand(b, "add"), as_scalar(alpha, "add"));
         },
         py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "sub",
          [=](const Tensor& a, py::handle b, py::handle alpha) {
            return op::sub(a, operand(b, "sub"), as_scalar(alpha, "sub"));
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "mul", [=](const Tensor& a, py::handle b) { return op::mul(a, operand(b, "mul")); },
          py::arg("other"))
      .def(
          "div", [=](const Tensor& a, py::handle b) { return op::div(a, operand(b, "div")); },
          py::arg("other"))
      .def(
          "pow", [=](const Tensor& a, py::handle b) { return op::pow(a, operand(b, "pow")); },
          py::arg("exponent"))
      .def(
          "maximum", [=](const Tensor& a, py::handle b) { return op::maximum(a, operand(b, "maximum")); },
          py::arg("other"))
      .def(
          "minimum", [=](const Tensor& a, py::handle b) { return op::minimum(a, operand(b, "minimum")); },
          py::arg("other"))
      .def(
          "eq", [=](const Tensor& a, py::handle b) { return op::eq(a, operand(b, "eq")); }, py::arg("other"))
      .def(
          "ne", [=](const Tensor& a, py::handle b) { return op::ne(a, operand(b, "ne")); }, py::arg("other"))
      .def(
          "lt", [=](const Tensor& a, py::handle b) { return op::lt(a, operand(b, "lt")); }, py::arg("other"))
      .def(
          "le", [=](const Tensor& a, py::handle b) { return op::le(a, operand(b, "le")); }, py::arg("other"))
      .def(
          "gt", [=](const Tensor& a, py::handle b) { return op::gt(a, operand(b, "gt")); }, py::arg("other"))
      .def(
          "ge", [=](const Tensor& a, py::handle b) { return op::ge(a, operand(b, "ge")); }, py::arg("other"))
      .def("exp", [](const Tensor& a) { return op::exp(a); })
      .def("log", [](const Tensor& a) { return op::log(a); })
      .def("tanh", [](const Tensor& a) { return op::tanh(a); })
      .def("sigmoid", [](const Tensor& a) { return op::sigmoid(a); })
      .def("relu", [](const Tensor& a) { return op::relu(a); })
      .def("sqrt", [](const Tensor& a) { return op::sqrt(a); })
      .def("abs", [](const Tensor& a) { return op::abs(a); })
      .def("neg", [](const Tensor& a) { return op::neg(a); })
      .def(
          "add_",
          [=](Tensor& a, py::handle b, py::handle alpha) -> Tensor& {
            return op::add_(a, operand(b, "add_"), as_scalar(alpha, "add_"));
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "sub_",
          [=](Tensor& a, py::handle b, py::handle alpha) -> Tensor& {
            return op::sub_(a, operand(b, "sub_"), as_scalar(alpha, "sub_"));
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def(
          "mul_", [=](Tensor& a, py::handle b) -> Tensor& { return op::mul_(a, operand(b, "mul_")); },
          py::arg("other"))
      .def(
          "div_", [=](Tensor& a, py::handle b) -> Tensor& { return op::div_(a, operand(b, "div_")); },
          py::arg("other"))
      .def("zero_", [](Tensor& a) -> Tensor& { return zero_(a); })
      .def(
          "fill_",
          [](Tensor& a, py::handle value) -> Tensor& {
            if (py::isinstance<TensorImpl>(value)) {
              const Tensor v = value.cast<Tensor>();
              FB_CHECK_VALUE(v.dim() == 0, "[fill_] only a 0-dim tensor can be a fill value, got shape ",
                             shape_str(v.sizes()));
              return op::copy_(a, v);
            }
            return op::fill_(a, as_scalar(value, "fill_"));
          },
          py::arg("value"))
      .def(
          "copy_", [](Tensor& a, const Tensor& src) -> Tensor& { return op::copy_(a, src); }, py::arg("src"))
      .def("clone", [](const Tensor& a) { return op::clone(a); })
      .def("contiguous", [](const Tensor& a) { return contiguous(a); })
      .def("to", &to_py)
      .def("float", [](const Tensor& a) { return to_dtype(a, ScalarType::Float32); })
      .def("double", [](const Tensor& a) { return to_dtype(a, ScalarType::Float64); })
      .def("long", [](const Tensor& a) { return to_dtype(a, ScalarType::Int64); })
      .def("int", [](const Tensor& a) { return to_dtype(a, ScalarType::Int32); })
      .def("bool", [](const Tensor& a) { return to_dtype(a, ScalarType::Bool); })
      .def(
          "type_as", [](const Tensor& a, const Tensor& other) { return to_dtype(a, other.dtype()); },
          py::arg("other"))
      .def("sum", &sum_py, py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(),
           py::arg("dtype") = py::none())
      .def("mean", &mean_py, py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(),
           py::arg("dtype") = py::none())
      .def("max", &max_py, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmax", &argmax_py, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "where",
          [=](const Tensor& a, py::handle cond, py::handle other) {
            return op::where(operand(cond, "where"), a, operand(other, "where"));
          },
          py::arg("condition"), py::arg("other"))
      .def("all", [](const Tensor& a) { return all_any(a, true); })
      .def("any", [](const Tensor& a) { return all_any(a, false); });

  // ---- module functions ----
  m.def(
      "add",
      [=](py::handle a, py::handle b, py::handle alpha) {
        return op::add(operand(a, "add"), operand(b, "add"), as_scalar(alpha, "add"));
      },
      py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1,
      "input + alpha * other, broadcasting and promoting types.\n\n"
      ">>> flambeau_core.add(flambeau_core.tensor([1., 2.]), 1).tolist()\n[2.0, 3.0]");
  m.def(
      "sub",
      [=](py::handle a, py::handle b, py::handle alpha) {
        return op::sub(operand(a, "sub"), operand(b, "sub"), as_scalar(alpha, "sub"));
      },
      py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1, "input - alpha * other.");
#define FB_BINARY_FN(name, doc)                                                                          \
  m.def(                                                                                                 \
      #name, [=](py::handle a, py::handle b) { return op::name(operand(a, #name), operand(b, #name)); }, \
      py::arg("input"), py::arg("other"), doc)
  FB_BINARY_FN(mul, "input * other, broadcasting and promoting types.");
  FB_BINARY_FN(div, "True division input / other (integer inputs give float32).");
  FB_BINARY_FN(pow, "input ** other.");
  FB_BINARY_FN(maximum, "Elementwise maximum (NaN propagates).");
  FB_BINARY_FN(minimum, "Elementwise minimum (NaN propagates).");
  FB_BINARY_FN(eq, "input == other (bool).");
  FB_BINARY_FN(ne, "input != other (bool).");
  FB_BINARY_FN(lt, "input < other (bool).");
  FB_BINARY_FN(le, "input <= other (bool).");
  FB_BINARY_FN(gt, "input > other (bool).");
  FB_BINARY_FN(ge, "input >= other (bool).");
#undef FB_BINARY_FN
  m.def(
      "where",
      [=](py::handle cond, py::handle a, py::handle b) {
        return op::where(operand(cond, "where"), operand(a, "where"), operand(b, "where"));
      },
      py::arg("condition"), py::arg("input"), py::arg("other"),
      "Elements of input where condition is True, else of other (all three broadcast).\n\n"
      ">>> t = flambeau_core.tensor([1., -2.])\n>>> flambeau_core.where(t > 0, t, 0.).tolist()\n[1.0, 0.0]");
#define FB_UNARY_FN(name, doc) \
  m.def(#name, [](const Tensor& a) { return op::name(a); }, py::arg("input"), doc)
  FB_UNARY_FN(neg, "-input.");
  FB_UNARY_FN(exp, "e ** input (integer inputs give float32).");
  FB_UNARY_FN(log, "Natural logarithm (integer inputs give float32).");
  FB_UNARY_FN(tanh, "Hyperbolic tangent (integer inputs give float32).");
  FB_UNARY_FN(sigmoid, "1 / (1 + exp(-input)) (integer inputs give float32).");
  FB_UNARY_FN(relu, "max(input, 0).");
  FB_UNARY_FN(sqrt, "Square root (integer inputs give float32).");
  FB_UNARY_FN(abs, "|input|.");
  FB_UNARY_FN(clone, "A contiguous copy.");
#undef FB_UNARY_FN
  m.def("sum", &sum_py, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("dtype") = py::none(),
        "Sum over dim (an int or a tuple; all dims if None). bool/int inputs sum in int64.\n\n"
        ">>> flambeau_core.tensor([[1, 2], [3, 4]]).sum(0).tolist()\n[4, 6]");
  m.def("mean", &mean_py, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("dtype") = py::none(),
        "Mean over dim (floating point inputs only, as in PyTorch).");
  m.def("max", &max_py, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        "The maximum of all elements, or (values, indices) along dim.");
  m.def("argmax", &argmax_py, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        "Index of the maximum (of the flattened tensor if dim is None); the first on ties.");
  m.def("all", [](const Tensor& a) { return all_any(a, true); }, py::arg("input"));
  m.def("any", [](const Tensor& a) { return all_any(a, false); }, py::arg("input"));
  m.def(
      "broadcast_shapes",
      [](const py::args& shapes) {
        Shape out;
        for (py::handle s : shapes) {
          const Shape sh = PyIndex_Check(s.ptr()) ? Shape{s.cast<int64_t>()}
                                                  : parse_int_sequence(s, "broadcast_shapes", "shape");
          out = broadcast_shapes(out, sh, "broadcast_shapes");
        }
        return py::tuple(py::cast(out));
      },
      "The shape the given shapes broadcast to.");
  m.def("_cpu_capability", &cpu::cpu_capability,
        "The instruction set the float kernels use here: 'base', 'avx2' or 'avx512' (Note [CPU "
        "capabilities]).");
  m.def(
      "_sum_to",
      [](const Tensor& t, py::handle shape) {
        return sum_to(t, parse_int_sequence(shape, "sum_to", "shape"));
      },
      py::arg("input"), py::arg("shape"),
      "Sums broadcast dims away so the result has `shape` (for backward formulas).");
  m.def(
      "result_type",
      [=](py::handle a, py::handle b) {
        return result_type(operand(a, "result_type"), operand(b, "result_type"));
      },
      py::arg("tensor1"), py::arg("tensor2"),
      "The dtype an op on these operands computes in (Python numbers are weak, as in PyTorch).");
}

}  // namespace flambeau::python
