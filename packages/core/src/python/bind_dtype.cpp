// dtypes, memory formats and devices as Python objects: flambeau_core.float32,
// flambeau_core.channels_last, flambeau_core.device("cpu").
#include "../tensor_iterator.h"
#include "common.h"
#include "flambeau/error.h"

namespace flambeau::python {

namespace {
PyObject* g_dtype_objects[kNumScalarTypes] = {};  // Note [dtype singletons]; strong references, never freed
richcmpfunc g_enum_richcompare = nullptr;

// The same dtype object is equal to itself without a call into pybind11's enum __eq__ (~0.3 us).
PyObject* dtype_richcompare(PyObject* a, PyObject* b, int op) {
  if (a == b && (op == Py_EQ || op == Py_NE)) return PyBool_FromLong(op == Py_EQ);
  return g_enum_richcompare(a, b, op);
}
}  // namespace

PyObject* dtype_object(ScalarType t) {
  const auto i = static_cast<int>(t);
  return i >= 0 && i < kNumScalarTypes ? g_dtype_objects[i] : nullptr;
}

void init_dtype(py::module_& m) {
  py::enum_<ScalarType> dtype(m, "dtype",
                              "The data type of a tensor's elements (flambeau_core.float32, ...).\n"
                              "\n"
                              ">>> d = flambeau_core.float32\n"
                              ">>> isinstance(d, flambeau_core.dtype), d.itemsize, d.is_floating_point, "
                              "d.is_signed\n"
                              "(True, 4, True, True)\n"
                              ">>> flambeau_core.zeros(2).dtype == flambeau_core.float32\n"
                              "True");
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    dtype.value(dtype_name(t), t);
  }
  // Set, not def()'d: def() would chain after enum_'s own __repr__, which then wins (<dtype.float64: 9>).
  auto dtype_str = [](ScalarType t) { return std::string("flambeau.") + dtype_name(t); };
  py::setattr(dtype, "__repr__", py::cpp_function(dtype_str, py::name("__repr__"), py::is_method(dtype)));
  py::setattr(dtype, "__str__", py::cpp_function(dtype_str, py::name("__str__"), py::is_method(dtype)));
  dtype.def_property_readonly("itemsize", [](ScalarType t) { return itemsize(t); })
      .def_property_readonly("is_floating_point", [](ScalarType t) { return is_floating(t); })
      .def_property_readonly("is_complex", [](ScalarType t) { return is_complex(t); })
      .def_property_readonly("is_signed", [](ScalarType t) { return !is_unsigned(t); })
      .def(
          "to_real", [](ScalarType t) { return to_real_dtype(t); },
          "The real dtype of a complex one (complex64 -> float32); a real dtype is returned as it is.\n"
          "\n"
          ">>> str(flambeau_core.complex64.to_real()), str(flambeau_core.float64.to_real())\n"
          "('flambeau.float32', 'flambeau.float64')")
      .def("to_complex",
           [](ScalarType t) {
             FB_CHECK_TYPE(is_floating(t) || is_complex(t),
                           "[to_complex] expects a floating or complex dtype, got ", dtype_name(t));
             return to_complex_dtype(t);
           },
           "The complex dtype of a floating one (float32 -> complex64); TypeError for an integer dtype.\n"
           "\n"
           ">>> str(flambeau_core.float32.to_complex()), str(flambeau_core.float64.to_complex())\n"
           "('flambeau.complex64', 'flambeau.complex128')")
      .def("__reduce__",
           // A string means "the global of that name in the type's module":
           // flambeau_core._C.float32 (exported below), so dtypes pickle.
           [](ScalarType t) { return std::string(dtype_name(t)); });
  dtype.export_values();
  for (int i = 0; i < kNumScalarTypes; ++i)
    g_dtype_objects[i] = py::object(dtype.attr(dtype_name(static_cast<ScalarType>(i)))).release().ptr();
  auto* dtype_type = reinterpret_cast<PyTypeObject*>(dtype.ptr());
  g_enum_richcompare = dtype_type->tp_richcompare;
  if (g_enum_richcompare != nullptr) {
    dtype_type->tp_richcompare = dtype_richcompare;
    PyType_Modified(dtype_type);
  }

  py::enum_<MemoryFormat> memory_format(
      m, "memory_format",
      "How a dense tensor's elements are ordered in memory (flambeau_core.channels_last, ...).\n"
      "\n"
      ">>> x = flambeau_core.zeros(1, 3, 2, 2).contiguous(memory_format=flambeau_core.channels_last)\n"
      ">>> x.is_contiguous(memory_format=flambeau_core.channels_last), x.stride()\n"
      "(True, (12, 1, 6, 3))");
  for (int i = 0; i < kNumMemoryFormats; ++i) {
    auto f = static_cast<MemoryFormat>(i);
    memory_format.value(memory_format_name(f), f);
  }
  auto format_str = [](MemoryFormat f) { return std::string("flambeau.") + memory_format_name(f); };
  py::setattr(memory_format, "__repr__",
              py::cpp_function(format_str, py::name("__repr__"), py::is_method(memory_format)));
  py::setattr(memory_format, "__str__",
              py::cpp_function(format_str, py::name("__str__"), py::is_method(memory_format)));
  memory_format.def("__reduce__", [](MemoryFormat f) { return std::string(memory_format_name(f)); });
  memory_format.export_values();

  m.def("promote_types", &promote_types, py::arg("type1"), py::arg("type2"),
        "The dtype that an op on tensors of dtypes type1 and type2 computes in.\n"
        "\n"
        ">>> str(flambeau_core.promote_types(flambeau_core.int32, flambeau_core.float32))\n"
        "'flambeau.float32'\n"
        ">>> str(flambeau_core.promote_types(flambeau_core.uint8, flambeau_core.int8))\n"
        "'flambeau.int16'");
  m.def("_get_default_dtype", &default_float_dtype);
  m.def("_set_default_dtype", &set_default_float_dtype, py::arg("d"));
  m.def("_can_cast", &can_cast, py::arg("from_"), py::arg("to"));

  py::class_<Device>(m, "device",
                    "A device: flambeau_core.device('cpu'), device('cuda', 0) or device('cuda:0').\n"
                    "\n"
                    "Unlike PyTorch's, a device compares equal to its string: device('cpu') == 'cpu' is "
                    "True (False in\n"
                    "PyTorch).\n"
                    "\n"
                    ">>> d = flambeau_core.device(\"cpu\")\n"
                    ">>> d, d.type, d.index, d == \"cpu\"\n"
                    "(device(type='cpu'), 'cpu', None, True)\n"
                    ">>> flambeau_core.zeros(2).device == d\n"
                    "True")
      .def(py::init([](const std::string& s) { return Device::parse(s); }), py::arg("type"))
      .def(py::init([](const std::string& s, int index) {
             FB_CHECK_VALUE(index >= 0, "[device] index must be >= 0, got ", index);
             Device d = Device::parse(s);
             FB_CHECK_VALUE(d.index < 0, "[device] '", s, "' already has an index");
             return Device(d.type, static_cast<int16_t>(index));
           }),
           py::arg("type"), py::arg("index"))
      .def_property_readonly("type", [](const Device& d) { return device_type_name(d.type); })
      .def_property_readonly("index",
                             [](const Device& d) -> py::object {
                               if (d.index < 0) return py::none();
                               return py::int_(d.index);
                             })
      .def("__repr__",
           [](const Device& d) {
             return "device(type='" + std::string(device_type_name(d.type)) +
                    (d.index >= 0 ? "', index=" + std::to_string(d.index) : "'") + ")";
           })
      .def("__str__", &Device::str)
      .def("__eq__",
           [](const Device& a, py::handle b) {
             if (py::isinstance<py::str>(b)) return a == Device::parse(b.cast<std::string>());
             if (py::isinstance<Device>(b)) return a == b.cast<Device>();
             return false;
           })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.str())); })
      .def("__reduce__", [](const Device& d) {
        return py::make_tuple(py::module_::import("flambeau_core").attr("device"), py::make_tuple(d.str()));
      });
}

}  // namespace flambeau::python
