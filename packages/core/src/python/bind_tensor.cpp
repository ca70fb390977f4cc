// The Python Tensor class (Note [Python Tensor identity]) and the argument
// conversions every binding file shares.
#include <cmath>
#include <cstring>

#include "common.h"
#include "op_recorder.h"
#include "flambeau/error.h"
#include "flambeau/inference_mode.h"
#include "flambeau/type_dispatch.h"

namespace flambeau::python {

// ---- argument conversions (declared in common.h) ----

Scalar as_scalar(py::handle obj, const char* op) {
  if (PyBool_Check(obj.ptr())) return Scalar(obj.ptr() == Py_True);
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    FB_CHECK_VALUE(!overflow, "[", op, "] integer ", py::str(obj).cast<std::string>(),
                   " does not fit in int64");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(obj.ptr())) return Scalar(PyFloat_AS_DOUBLE(obj.ptr()));
  if (PyComplex_Check(obj.ptr()))
    return Scalar(std::complex<double>(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr())));
  // A one-element tensor is a number (PyTorch's `arange(torch.tensor(3))`); any other is refused here,
  // before its __index__ could be asked.
  if (py::isinstance<TensorImpl>(obj)) {
    const Tensor t = obj.cast<Tensor>();
    FB_CHECK_TYPE(t.numel() == 1, "[", op, "] expected a number or a one-element tensor, got a tensor of shape ",
                  shape_str(t.sizes()));
    return as_scalar(obj.attr("item")(), op);
  }
  // NumPy scalars and other number-likes
  if (py::hasattr(obj, "dtype") && py::hasattr(obj, "item")) return as_scalar(obj.attr("item")(), op);
  if (PyIndex_Check(obj.ptr())) {
    PyObject* index = PyNumber_Index(obj.ptr());
    if (index == nullptr) throw py::error_already_set();  // __index__ raised
    return as_scalar(py::reinterpret_steal<py::object>(index), op);
  }
  throw TypeError(detail::cat_str("[", op, "] expected a number, got ",
                                  py::str(py::type::of(obj).attr("__name__")).cast<std::string>()));
}

Tensor as_operand(py::handle obj, const char* op) {
  if (py::isinstance<TensorImpl>(obj)) return obj.cast<Tensor>();
  if (PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) ||
      PyComplex_Check(obj.ptr()))
    return scalar_to_tensor(as_scalar(obj, op), /*wrapped=*/true);
  if (py::hasattr(obj, "__float__") && !py::hasattr(obj, "__len__"))
    return scalar_to_tensor(as_scalar(obj, op), true);
  throw TypeError(detail::cat_str("[", op, "] expected a Tensor or a number, got ",
                                  py::str(py::type::of(obj).attr("__name__")).cast<std::string>()));
}

int64_t as_int64(py::handle obj, const char* op, const char* what) {
  FB_CHECK_TYPE(PyIndex_Check(obj.ptr()) && !PyBool_Check(obj.ptr()), "[", op, "] ", what,
                " must be an int, got ", py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  const auto i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  FB_CHECK(!overflow, "[", op, "] ", what, " ", py::str(i).cast<std::string>(), " does not fit in int64");
  return v;
}

uint64_t as_seed(py::handle obj, const char* op) {
  FB_CHECK_TYPE(PyIndex_Check(obj.ptr()) && !PyBool_Check(obj.ptr()), "[", op, "] seed must be an int, got ",
                py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  const auto i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  // PyTorch's range: a negative seed is taken modulo 2**64, as its two's complement.
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (!overflow) return static_cast<uint64_t>(v);
  const unsigned long long u = overflow > 0 ? PyLong_AsUnsignedLongLong(i.ptr()) : 0;
  if (overflow > 0 && !PyErr_Occurred()) return u;
  PyErr_Clear();
  FB_CHECK(false, "[", op, "] seed ", py::str(i).cast<std::string>(), " is out of range [-2**63, 2**64 - 1]");
  return 0;
}

Shape parse_int_sequence(py::handle obj, const char* op, const char* what) {
  // A tensor iterates as a sequence of tensors; only a 1-D integer one is a list of ints.
  if (py::isinstance<TensorImpl>(obj)) {
    const Tensor t = obj.cast<Tensor>();
    FB_CHECK_TYPE(t.dim() == 1 && is_integral(t.dtype(), /*include_bool=*/false), "[", op, "] ", what,
                  " must be a sequence of ints, got a ", dtype_name(t.dtype()), " tensor of shape ",
                  shape_str(t.sizes()));
    return parse_int_sequence(obj.attr("tolist")(), op, what);
  }
  FB_CHECK_TYPE(py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj), "[", op, "] ", what,
                " must be a sequence of ints, got ",
                py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  Shape out;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
    FB_CHECK_TYPE(PyIndex_Check(item.ptr()) && !PyBool_Check(item.ptr()), "[", op, "] ", what,
                  " must contain ints, got ",
                  py::str(py::type::of(item).attr("__name__")).cast<std::string>());
    out.push_back(as_int64(item, op, what));
  }
  return out;
}

Shape parse_shape(const py::args& args, const char* op) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr())) return parse_int_sequence(args[0], op, "size");
  return parse_int_sequence(args, op, "size");
}

ScalarType parse_dtype(py::handle obj, ScalarType fallback, const char* op) {
  if (obj.is_none()) return fallback;
  if (py::isinstance<ScalarType>(obj)) return obj.cast<ScalarType>();
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return ScalarType::Float64;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return ScalarType::Int64;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return ScalarType::Bool;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return ScalarType::ComplexDouble;
  throw TypeError(detail::cat_str("[", op, "] dtype must be a flambeau dtype such as flambeau.float32, got ",
                                  py::repr(obj).cast<std::string>()));
}

Device parse_device(py::handle obj, const char* op) {
  if (obj.is_none()) return Device(DeviceType::CPU);
  if (py::isinstance<Device>(obj)) return obj.cast<Device>();
  if (py::isinstance<py::str>(obj)) return Device::parse(obj.cast<std::string>());
  throw TypeError(detail::cat_str("[", op,
                                  "] device must be a string such as 'cpu' or a flambeau device, got ",
                                  py::repr(obj).cast<std::string>()));
}

// ---- element access ----
namespace {

py::object element_to_python(ScalarType t, const void* p) {
  return visit_dtype_all(t, "item", [&](auto tag) -> py::object {
    using T = typename decltype(tag)::type;
    T v = *static_cast<const T*>(p);
    if constexpr (std::is_same_v<T, bool>)
      return py::bool_(v);
    else if constexpr (is_half_v<T>)
      return py::float_(static_cast<double>(static_cast<float>(v)));
    else if constexpr (std::is_floating_point_v<T>)
      return py::float_(static_cast<double>(v));
    else if constexpr (is_complex_v<T>)
      return py::reinterpret_steal<py::object>(
          PyComplex_FromDoubles(static_cast<double>(v.real()), static_cast<double>(v.imag())));
    else if constexpr (std::is_same_v<T, uint64_t>)
      return py::reinterpret_steal<py::object>(PyLong_FromUnsignedLongLong(v));
    else
      return py::int_(static_cast<int64_t>(v));
  });
}

void check_cpu(const Tensor& t, const char* op) {
  FB_CHECK(t.device().is_cpu(), "[", op, "] needs a cpu tensor, got one on ", t.device().str());
}

py::object tolist_rec(const Tensor& t, int64_t d, const char* p) {
  if (d == t.dim()) return element_to_python(t.dtype(), p);
  const int64_t n = t.sizes()[d];
  py::list out(n);
  // The stride of a dim of size 1 is never applied (and may be any value).
  const int64_t step = n > 1 ? t.strides()[d] * static_cast<int64_t>(itemsize(t.dtype())) : 0;
  for (int64_t i = 0; i < n; ++i) out[i] = tolist_rec(t, d + 1, p + i * step);
  return out;
}

const char* buffer_format(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "?";
    case ScalarType::UInt8:
      return "B";
    case ScalarType::Int8:
      return "b";
    case ScalarType::Int16:
      return "h";
    case ScalarType::Int32:
      return "i";
    case ScalarType::Int64:
      return "q";
    case ScalarType::Float16:
      return "e";
    case ScalarType::Float32:
      return "f";
    case ScalarType::Float64:
      return "d";
    case ScalarType::UInt16:
      return "H";
    case ScalarType::UInt32:
      return "I";
    case ScalarType::UInt64:
      return "Q";
    case ScalarType::ComplexFloat:
      return "Zf";
    case ScalarType::ComplexDouble:
      return "Zd";
    default:
      break;
  }
  throw TypeError(detail::cat_str("[buffer] dtype ", dtype_name(t), " has no buffer-protocol format"));
}

// Note [Tensor slots] (bind_views.cpp): len() and `.shape` read the sizes straight from the instance.
lenfunc g_generic_length = nullptr;

Py_ssize_t tensor_length(PyObject* self) {
  if (const std::shared_ptr<TensorImpl>* h = tensor_holder(self); h && (*h)->dim() > 0)
    return (*h)->sizes()[0];
  return g_generic_length(self);  // the bound __len__: its TypeError for a 0-d tensor
}

PyObject* tensor_shape(PyObject* self, void*) {
  const std::shared_ptr<TensorImpl>* h = tensor_holder(self);
  if (!h) {
    PyErr_Format(PyExc_TypeError, "[shape] expected a Tensor, got %s", Py_TYPE(self)->tp_name);
    return nullptr;
  }
  return make_size((*h)->sizes());
}

PyGetSetDef g_shape_getset = {"shape", &tensor_shape, nullptr,
                              "The sizes of the dims, as a flambeau.Size (a tuple; PyTorch's torch.Size).\n"
                              "\n"
                              ">>> flambeau_core.zeros(2, 3).shape\n"
                              "flambeau.Size([2, 3])",
                              nullptr};

}  // namespace

py::object tensor_item(const Tensor& t_in) {
  const Tensor t = to_cpu_for_read(t_in);
  check_cpu(t, "item");
  FB_CHECK_VALUE(t.numel() == 1,
                 "[item] only a tensor with one element can be converted to a Python number, got shape ",
                 shape_str(t.sizes()));
  return element_to_python(t.dtype(), t.data_ptr());
}

void init_tensor(py::module_& m) {
  py::class_<TensorImpl, std::shared_ptr<TensorImpl>> cls(
      m, "Tensor", py::buffer_protocol(),
      "A multi-dimensional array of one dtype on one device.\n"
      "\n"
      "Made by factories (tensor, zeros, arange, ...), not by calling the class (Tensor(t) makes a new\n"
      "Tensor object sharing t's memory, as nn.Parameter does). Its shape is a flambeau.Size, a tuple\n"
      "(PyTorch's torch.Size).\n"
      "\n"
      ">>> x = flambeau_core.tensor([[1.0, 2.0], [3.0, 4.0]])\n"
      ">>> isinstance(x, flambeau_core.Tensor), x.shape, str(x.dtype), str(x.device)\n"
      "(True, flambeau.Size([2, 2]), 'flambeau.float32', 'cpu')\n"
      ">>> (x * 2).tolist()\n"
      "[[2.0, 4.0], [6.0, 8.0]]");
  cls.def(py::init([](const Tensor& other) {
            // A new Tensor object sharing other's storage (used by nn.Parameter).
            auto impl = std::make_shared<TensorImpl>(
                other.impl()->storage(), other.dtype(), Shape(other.sizes().begin(), other.sizes().end()),
                Shape(other.strides().begin(), other.strides().end()), other.storage_offset());
            return impl;
          }),
          py::arg("data"))
      .def(
          "_set_data",
          [](const Tensor& self, const Tensor& other) {
            // Another device is fine (Module.to(device) moves parameters in place).
            self.impl()->set_data(*other.impl());
          },
          py::arg("data"),
          "Re-points this tensor at `data`'s memory, dtype and shape, keeping this object and its autograd "
          "state (PyTorch's `_set_data`; Module.to converts parameters with it).")
      .def(
          "size",
          [](const Tensor& t, py::object dim) -> py::object {
            if (dim.is_none()) {
              PyObject* s = make_size(t.sizes());
              if (!s) throw py::error_already_set();
              return py::reinterpret_steal<py::object>(s);
            }
            return py::int_(t.size(as_int64(dim, "size", "dim")));
          },
          py::arg("dim") = py::none(),
          "The shape as a flambeau.Size (PyTorch's torch.Size), or the size of dim (negative dims count\n"
          "from the end).\n"
          "\n"
          ">>> x = flambeau_core.zeros(2, 3)\n"
          ">>> x.size(), x.size(1), x.size(-2)\n"
          "(flambeau.Size([2, 3]), 3, 2)")
      .def(
          "stride",
          [](const Tensor& t, py::object dim) -> py::object {
            if (dim.is_none()) return py::tuple(py::cast(Shape(t.strides().begin(), t.strides().end())));
            return py::int_(t.stride(as_int64(dim, "stride", "dim")));
          },
          py::arg("dim") = py::none(),
          "The strides (in elements) as a tuple, or the stride of dim.\n"
          "\n"
          ">>> x = flambeau_core.zeros(2, 3)\n"
          ">>> x.stride(), x.t().stride(), x.stride(0)\n"
          "((3, 1), (1, 3), 3)")
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype(); })
      .def_property_readonly("device", [](const Tensor& t) { return t.device(); })
      .def_property_readonly("ndim", [](const Tensor& t) { return t.dim(); })
      .def("dim", [](const Tensor& t) { return t.dim(); },
           "The number of dims (ndim).\n"
           "\n"
           ">>> flambeau_core.zeros(2, 3).dim(), flambeau_core.tensor(1.0).dim()\n"
           "(2, 0)")
      .def("numel", [](const Tensor& t) { return t.numel(); },
           "The number of elements.\n"
           "\n"
           ">>> flambeau_core.zeros(2, 3).numel()\n"
           "6")
      .def(
          "is_contiguous", [](const Tensor& t, MemoryFormat f) { return is_contiguous_in(t, f); },
          py::arg("memory_format") = MemoryFormat::Contiguous,
          "True if the elements are laid out in memory in the order memory_format says (row-major by "
          "default).\n"
          "\n"
          ">>> x = flambeau_core.zeros(2, 3)\n"
          ">>> x.is_contiguous(), x.t().is_contiguous()\n"
          "(True, False)")
      .def("storage_offset", [](const Tensor& t) { return t.storage_offset(); },
           "The index, in elements, of the tensor's first element in its storage.\n"
           "\n"
           ">>> x = flambeau_core.arange(6)\n"
           ">>> x.storage_offset(), x[2:].storage_offset()\n"
           "(0, 2)")
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); },
           "The address of the tensor's first element (an int; 0 for an empty storage).\n"
           "\n"
           ">>> x = flambeau_core.arange(4, dtype=flambeau_core.int64)\n"
           ">>> x[1:].data_ptr() - x.data_ptr()  # one int64 further\n"
           "8")
      .def("element_size", [](const Tensor& t) { return itemsize(t.dtype()); },
           "The size of one element in bytes (dtype.itemsize).\n"
           "\n"
           ">>> flambeau_core.zeros(2).element_size(), flambeau_core.zeros(2, "
           "dtype=flambeau_core.float64).element_size()\n"
           "(4, 8)")
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); },
           "True if the dtype is a floating-point one (float16, bfloat16, float32, float64).\n"
           "\n"
           ">>> flambeau_core.zeros(1).is_floating_point(), flambeau_core.arange(3).is_floating_point()\n"
           "(True, False)")
      .def("is_complex", [](const Tensor& t) { return is_complex(t.dtype()); })
      .def_property_readonly("is_cpu", [](const Tensor& t) { return t.device().is_cpu(); })
      .def_property_readonly("is_meta", [](const Tensor& t) { return t.device().is_meta(); })
      .def_property_readonly("_version", [](const Tensor& t) { return t.impl()->version(); })
      .def_property_readonly("_is_view", [](const Tensor& t) { return t.impl()->is_view(); })
      .def_property_readonly(
          "_allocator",
          [](const Tensor& t) -> py::object {
            const auto& a = t.impl()->storage()->allocator();
            return a ? py::str(a->name()) : py::object(py::none());
          },
          "Name of the allocator that made this tensor's memory (None for external memory).")
      .def_property_readonly(
          "_storage_nbytes", [](const Tensor& t) { return t.impl()->storage()->nbytes(); },
          "Size in bytes of the storage this tensor views (Note [View bounds]; for tests).")
      .def_property_readonly(
          "_storage_ptr",
          [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()->storage()->data()); },
          "Address of the first byte of this tensor's storage (0 for an empty one).")
      .def_property_readonly(
          "_storage_id",
          [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()->storage().get()); },
          "Identity of this tensor's storage: equal for every tensor viewing the same Storage while it "
          "lives.")
      .def(
          "is_inference", [](const Tensor& t) { return is_inference_storage(t.impl()->storage().get()); },
          "True if this is an inference tensor: made inside inference_mode, or a view of such a tensor "
          "(Note [Inference tensors]).\n"
          "\n"
          ">>> import flambeau as fb\n"
          ">>> x = fb.ones(2)\n"
          ">>> with fb.inference_mode():\n"
          "...     y = x * 2\n"
          "...     v = x[:1]  # a view of an ordinary tensor stays ordinary\n"
          ">>> x.is_inference(), y.is_inference(), y[1:].is_inference(), v.is_inference()\n"
          "(False, True, True, False)")
      .def(
          "_move_storage_",
          [](const Tensor& t, py::handle buffer) {
            // Note [Moving a storage's memory] (storage.h); Tensor.share_memory_ is built on it.
            FB_CHECK_TYPE(t.device().is_cpu(), "[_move_storage_] only a cpu tensor's storage can move, got ",
                          t.device().str());
            FB_CHECK_TYPE(PyObject_CheckBuffer(buffer.ptr()),
                          "[_move_storage_] expected a writable object with the buffer protocol, got ",
                          Py_TYPE(buffer.ptr())->tp_name);
            const Storage& storage = t.impl()->storage();
            auto* view = new Py_buffer();
            if (PyObject_GetBuffer(buffer.ptr(), view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
              delete view;
              throw py::error_already_set();
            }
            if (static_cast<size_t>(view->len) < storage->nbytes()) {
              const auto len = view->len;
              PyBuffer_Release(view);
              delete view;
              throw ValueError(detail::cat_str("[_move_storage_] the storage has ", storage->nbytes(),
                                               " bytes, the new memory only ", len));
            }
            if (storage->nbytes()) std::memcpy(view->buf, storage->data(), storage->nbytes());
            storage->replace_data(view->buf, [view](void*) { release_buffer_with_gil(view); });
          },
          py::arg("buffer"),
          "Copies this tensor's storage into `buffer` (writable, C-contiguous, at least as large) and makes "
          "the storage use that memory from now on, for every tensor viewing it; the storage keeps `buffer` "
          "alive. Not thread-safe (Note [Moving a storage's memory]).")
      .def_property(
          "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
          [](Tensor& t, bool v) { t.set_requires_grad(v); })
      .def(
          "requires_grad_",
          recorded("requires_grad_",
                   [](Tensor& t, bool v) {
                     t.set_requires_grad(v);
                     return t;
                   }),
          py::arg("requires_grad") = true,
          "Sets requires_grad (True by default) and returns self: autograd records ops on it.\n"
          "\n"
          ">>> x = flambeau_core.zeros(2).requires_grad_()\n"
          ">>> x.requires_grad, x.requires_grad_(False).requires_grad\n"
          "(True, False)")
      .def("item", recorded("item", &tensor_item),
           "The value of a one-element tensor as a Python number (bool, int, float or complex).\n"
           "\n"
           ">>> flambeau_core.tensor([2.5]).item(), flambeau_core.tensor(3).item()\n"
           "(2.5, 3)")
      .def("tolist",
           recorded("tolist", [](const Tensor& t_in) {
             const Tensor t = to_cpu_for_read(t_in);
             check_cpu(t, "tolist");
             return tolist_rec(t, 0, static_cast<const char*>(t.data_ptr()));
           }),
           "The values as nested Python lists of numbers (a number for a 0-d tensor).\n"
           "\n"
           ">>> flambeau_core.tensor([[1, 2], [3, 4]]).tolist(), flambeau_core.tensor(1.5).tolist()\n"
           "([[1, 2], [3, 4]], 1.5)")
      .def("__len__",
           [](const Tensor& t) {
             FB_CHECK_TYPE(t.dim() > 0, "[len] len() of a 0-d tensor");
             return t.sizes()[0];
           })
      // Note [Op recorder]: reading a value is reported, so a tracer can refuse data-dependent control flow.
      .def("__float__", recorded("__float__", [](const Tensor& t) { return py::float_(tensor_item(t)); }))
      .def("__int__", recorded("__int__", [](const Tensor& t) { return py::int_(tensor_item(t)); }))
      .def("__bool__",
           recorded("__bool__", [](const Tensor& t) {
             FB_CHECK_VALUE(t.numel() == 1, "[bool] the truth value of a tensor with ", t.numel(),
                            " elements is ambiguous; use .any() or .all()");
             return tensor_item(t).cast<bool>();
           }))
      .def("__index__",
           [](const Tensor& t) -> py::object {
             // As PyTorch: one element of any shape, integer or bool; a TypeError otherwise.
             FB_CHECK_TYPE(t.numel() == 1 && is_integral(t.dtype(), true),
                           "[index] only integer tensors of a single element can be converted to an index, "
                           "got a ",
                           dtype_name(t.dtype()), " tensor of shape ", shape_str(t.sizes()));
             py::object v = tensor_item(t);
             // A bool is an int subclass: returned as is, Python would warn (DeprecationWarning).
             if (PyBool_Check(v.ptr()))
               return py::reinterpret_steal<py::object>(PyLong_FromLong(v.ptr() == Py_True));
             return v;
           })
      .def_buffer([](TensorImpl& t) -> py::buffer_info {
        FB_CHECK(t.device().is_cpu(), "[buffer] only cpu tensors export the buffer protocol, got ",
                 t.device().str());
        // As PyTorch's numpy(): writes through the buffer would bypass autograd.
        FB_CHECK(!t.requires_grad(),
                 "[buffer] can't export the memory of a tensor that requires grad (np.asarray, memoryview); "
                 "use tensor.detach() first");
        // Note [Size overflow]: a consumer computes numel * itemsize (memoryview's
        // len, NumPy's nbytes); a broadcast view may have more elements than that can count.
        const auto isz = static_cast<int64_t>(itemsize(t.dtype()));
        int64_t nbytes = 0;
        FB_CHECK(
            !__builtin_mul_overflow(t.numel(), isz, &nbytes), "[buffer] a tensor of shape ",
            shape_str(t.sizes()), " and dtype ", dtype_name(t.dtype()),
            " has too many elements to export: its size in bytes overflows int64; export a smaller slice");
        // pybind11 computes the length as itemsize * size[0] * size[1] * ... in that order, so an
        // empty tensor with a huge dim before its 0 would overflow there (undefined behaviour).
        int64_t running = isz;
        for (int64_t s : t.sizes())
          FB_CHECK(
              !__builtin_mul_overflow(running, s, &running), "[buffer] a tensor of shape ",
              shape_str(t.sizes()), " and dtype ", dtype_name(t.dtype()),
              " has too many elements to export: its size in bytes overflows int64; export a smaller slice");
        std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
        std::vector<py::ssize_t> strides;
        for (int64_t s : t.strides()) {
          // Only the stride of a dim of size <= 1 can overflow here, and it is never applied.
          int64_t bytes = 0;
          strides.push_back(__builtin_mul_overflow(s, isz, &bytes) ? 0 : bytes);
        }
        t.storage()->mark_exported();  // Note [Moving a storage's memory]
        return py::buffer_info(t.data(), isz, buffer_format(t.dtype()), t.dim(), shape, strides);
      });

  // Note [Tensor slots] (bind_views.cpp): after `__len__` is bound, so the generic slot calls that method.
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  g_generic_length = type->tp_as_sequence->sq_length;
  type->tp_as_sequence->sq_length = &tensor_length;
  type->tp_as_mapping->mp_length = &tensor_length;
  py::object shape = py::reinterpret_steal<py::object>(PyDescr_NewGetSet(type, &g_shape_getset));
  if (!shape) throw py::error_already_set();
  cls.attr("shape") = shape;
}

}  // namespace flambeau::python
