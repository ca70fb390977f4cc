// Tensor conversions and helpers from Python that are not ops of the table:
// to/float/double/... (with memory_format=), fill_ (a number or a 0-dim tensor), broadcast_shapes,
// result_type. The ops themselves (functions, methods, operators) are
// generated from codegen/ops.yaml into python_ops_generated.cpp.
//
// __eq__ returns a tensor, so __hash__ is kept identity-based (tensors are dict
// keys, e.g. optimizer state); NumPy defers to our reflected operators.

#include "../cpu/dispatch/dispatch_stub.h"
#include "../cpu/linalg/lowp_gemm.h"
#include "../tensor_iterator.h"
#include "common.h"
#include "op_recorder.h"
#include "flambeau/device_backend.h"
#include "flambeau/error.h"

namespace flambeau::python {
namespace {

using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
}

/// A conversion of `self` to `dtype` laid out in `format` (Note [Preserving a layout]): only
/// differentiable ops, so `x.t().double()` backpropagates and is again transposed.
Tensor convert(const Tensor& self, ScalarType dtype, MemoryFormat format, bool copy) {
  if (format != MemoryFormat::Preserve) {
    Tensor out = dtype == self.dtype() ? self : op::cast(self, dtype);
    out = op::contiguous(out, format);
    return copy && out.is_same(self) ? op::clone(self, format) : out;
  }
  if (dtype == self.dtype()) return copy ? op::clone(self, format) : self;
  // A cast writes a contiguous result: cast self permuted into its layout
  // order (outermost dim first) and permute the result back.
  if (self.is_contiguous()) return op::cast(self, dtype);
  const Shape order = layout_order(self);
  Shape inverse(order.size());
  for (size_t k = 0; k < order.size(); ++k) inverse[order[k]] = static_cast<int64_t>(k);
  return op::permute(op::cast(op::permute(self, order), dtype), inverse);
}

// Tensor.to(dtype) / to(device) / to(device, dtype) / to(other) / keywords.
Tensor to_py(const Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  std::optional<ScalarType> dtype;
  std::optional<Device> device;
  MemoryFormat format = MemoryFormat::Preserve;
  bool copy = false;
  bool non_blocking = false;
  int positional_bools = 0;
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
  for (py::handle a : args) {
    // to(device, dtype, non_blocking, copy): trailing positional bools.
    if (py::isinstance<py::bool_>(a)) {
      (positional_bools++ == 0 ? non_blocking : copy) = a.cast<bool>();
      continue;
    }
    take(a);
  }
  for (auto item : kwargs) {
    const std::string key = py::str(item.first).cast<std::string>();
    if (key == "dtype" || key == "device" || key == "other")
      take(item.second);
    else if (key == "memory_format") {
      if (!py::isinstance<MemoryFormat>(item.second))
        throw TypeError(
            detail::cat_str("[to] memory_format must be a memory_format, got ", type_name(item.second)));
      format = item.second.cast<MemoryFormat>();
    } else if (key == "copy" || key == "non_blocking") {
      const int truth = PyObject_IsTrue(item.second.ptr());
      if (truth < 0) throw py::error_already_set();  // e.g. a tensor of many elements
      (key == "copy" ? copy : non_blocking) = truth == 1;
    }
    else
      throw TypeError(detail::cat_str("[to] unexpected keyword argument '", key, "'"));
  }
  if (device) {
    // Note [Device backends]: a copy to another device (or another index).
    const Device to = resolve_device(*device);
    if (to.has_backend_memory()) require_device(to, "to");
    const Device from = self.device();
    if (!(to.type == from.type && (to.is_cpu() || to.index == from.index))) {
      py::gil_scoped_release no_gil;
      return to_device_copy(self, to, dtype.value_or(self.dtype()), non_blocking, "to");
    }
  }
  py::gil_scoped_release no_gil;
  return convert(self, dtype.value_or(self.dtype()), format, copy);
}

/// Tensor.float(memory_format=preserve_format) and its siblings.
void def_conversion(py::class_<TensorImpl, std::shared_ptr<TensorImpl>>& cls, const char* name,
                    ScalarType dtype, const char* example) {
  cls.def(
      name,
      recorded(name,
               [dtype](const Tensor& self, MemoryFormat format) {
                 return without_gil([&] { return convert(self, dtype, format, false); });
               }),
      py::kw_only(), py::arg("memory_format") = MemoryFormat::Preserve,
      detail::cat_str("self.to(", dtype_name(dtype), ", memory_format=memory_format)\n\n", example).c_str());
}

}  // namespace

void init_math(py::module_& m) {
  auto cls = py::reinterpret_borrow<TensorClass>(m.attr("Tensor"));
  cls.attr("__array_priority__") = 1000;
  cls.attr("__hash__") = py::module_::import("builtins").attr("object").attr("__hash__");
  cls.def("__pos__", [](const Tensor& a) { return a; })
      .def(
          "fill_",
          recorded(
              "fill_",
              [](Tensor& a, py::handle value) -> Tensor& {
            if (py::isinstance<TensorImpl>(value)) {
              const Tensor v = value.cast<Tensor>();
              FB_CHECK_VALUE(v.dim() == 0, "[fill_] only a 0-dim tensor can be a fill value, got shape ",
                             shape_str(v.sizes()));
              py::gil_scoped_release no_gil;
              return op::copy_(a, v);
            }
            const Scalar s = as_scalar(value, "fill_");
            py::gil_scoped_release no_gil;
            return op::fill_(a, s);
              },
              kMethod | kWrite),
          py::arg("value"),
          "Fills self with value (a number or a 0-d tensor, cast to self's dtype); returns self.\n"
          "\n"
          ">>> flambeau_core.zeros(3).fill_(2).tolist()\n"
          "[2.0, 2.0, 2.0]")
      .def("to", recorded("to", &to_py),
           "A tensor of another dtype and/or device: to(dtype), to(device), to(device, dtype), to(other)\n"
           "(other's dtype and device), with non_blocking=, copy= and memory_format= keywords. Returns "
           "self when\n"
           "nothing changes (unless copy=True).\n"
           "\n"
           ">>> x = flambeau_core.tensor([1, 2])\n"
           ">>> x.to(flambeau_core.float64).tolist(), x.to(\"cpu\") is x\n"
           "([1.0, 2.0], True)\n"
           ">>> x.to(\"cpu\", flambeau_core.int32).dtype == flambeau_core.int32\n"
           "True")
      .def(
          "type_as",
          recorded("type_as",
                   [](const Tensor& a, const Tensor& other) {
                     return without_gil([&] { return to_dtype(a, other.dtype()); });
                   }),
          py::arg("other"),
          "self.to(other.dtype).\n"
          "\n"
          ">>> flambeau_core.tensor([1, 2]).type_as(flambeau_core.zeros(1)).tolist()\n"
          "[1.0, 2.0]");
  def_conversion(cls, "float", ScalarType::Float32,
                 ">>> flambeau_core.tensor([1, 2]).float().tolist()\n"
                 "[1.0, 2.0]");
  def_conversion(cls, "double", ScalarType::Float64,
                 ">>> flambeau_core.tensor([1, 2]).double().dtype == flambeau_core.float64\n"
                 "True");
  def_conversion(cls, "half", ScalarType::Float16,
                 ">>> flambeau_core.tensor([1.5, 2.0]).half().tolist()\n"
                 "[1.5, 2.0]");
  def_conversion(cls, "bfloat16", ScalarType::BFloat16,
                 ">>> flambeau_core.tensor([1.5, 2.0]).bfloat16().tolist()\n"
                 "[1.5, 2.0]");
  def_conversion(cls, "long", ScalarType::Int64,
                 ">>> flambeau_core.tensor([1.7, -2.7]).long().tolist()  # truncates toward 0\n"
                 "[1, -2]");
  def_conversion(cls, "int", ScalarType::Int32,
                 ">>> flambeau_core.tensor([1.7, -2.7]).int().tolist()\n"
                 "[1, -2]");
  def_conversion(cls, "short", ScalarType::Int16,
                 ">>> flambeau_core.tensor([1.7, -2.7]).short().tolist()\n"
                 "[1, -2]");
  def_conversion(cls, "char", ScalarType::Int8,
                 ">>> flambeau_core.tensor([1.7, -2.7]).char().tolist()\n"
                 "[1, -2]");
  def_conversion(cls, "byte", ScalarType::UInt8,
                 ">>> flambeau_core.tensor([1.7, 200.0]).byte().tolist()\n"
                 "[1, 200]");
  def_conversion(cls, "bool", ScalarType::Bool,
                 ">>> flambeau_core.tensor([0.0, 0.5]).bool().tolist()\n"
                 "[False, True]");
  m.def(
      "broadcast_shapes",
      [](const py::args& shapes) {
        Shape out;
        for (py::handle s : shapes) {
          const Shape sh = PyIndex_Check(s.ptr()) ? Shape{as_int64(s, "broadcast_shapes", "shape")}
                                                  : parse_int_sequence(s, "broadcast_shapes", "shape");
          out = broadcast_shapes(out, sh, "broadcast_shapes");
        }
        PyObject* size = make_size(out);
        if (!size) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(size);
      },
      "The shape the given shapes broadcast to, as a Size (PyTorch's torch.Size).\n"
      "\n"
      ">>> flambeau_core.broadcast_shapes((2, 1), (3,))\n"
      "flambeau.Size([2, 3])");
  m.def("_cpu_capability", &cpu::cpu_capability,
        "The instruction set the float kernels use here: 'base', 'avx2' or 'avx512' (Note [CPU "
        "capabilities]).");
  m.def("_bf16_gemm_kernel", &cpu::bf16_gemm_kernel_available,
        "True when bfloat16 products run on the AVX512-BF16 kernel, False on the float32 fallback "
        "(Note [Low-precision GEMM]).");
  m.def("_dispatch_choices", &cpu::dispatch_choices,
        "Each CPU kernel family's dispatch stub and the instruction set of the variant it runs now: "
        "'avx512', 'avx2', 'base' or 'none' (Note [CPU capabilities]).");
  m.def(
      "_sum_to",
      [](const Tensor& t, py::handle shape) {
        const Shape s = parse_int_sequence(shape, "sum_to", "shape");
        return without_gil([&] { return sum_to(t, s); });
      },
      py::arg("input"), py::arg("shape"),
      "Sums broadcast dims away so the result has `shape` (for backward formulas).");
  m.def(
      "result_type",
      [=](py::handle a, py::handle b) {
        return result_type(as_operand(a, "result_type"), as_operand(b, "result_type"));
      },
      py::arg("tensor1"), py::arg("tensor2"),
      "The dtype an op on these operands computes in (Python numbers are weak, as in PyTorch).\n"
      "\n"
      ">>> flambeau_core.result_type(flambeau_core.tensor([1, 2]), 1.0) == flambeau_core.float32\n"
      "True\n"
      ">>> flambeau_core.result_type(flambeau_core.tensor([1, 2], dtype=flambeau_core.int8), 1) == "
      "flambeau_core.int8\n"
      "True");
}

}  // namespace flambeau::python
