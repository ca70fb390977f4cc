// Operators registered from C++ (Note [Operators registered from C++], flambeau/library.h): the queue of
// what FLAMBEAU_LIBRARY blocks declared, and _CppOp, the callable a call of such an operator runs.
#include "arg_parser.h"
#include "common.h"
#include "flambeau/dispatch.h"
#include "flambeau/library.h"
#include "flambeau/observe.h"
#include "op_recorder.h"

namespace flambeau::python {
namespace {

using library::BoxedKernel;
using library::IValue;
using library::Stack;

/// A boxed kernel, as Python holds it (opaque: it is only handed back to _cpp_op).
struct KernelHandle {
  std::shared_ptr<const BoxedKernel> fn;
};

// Note [C++ operator call]
// A _CppOp is one overload of an operator: its ArgParser (the schema's
// arguments), their defaults as Python objects, a kernel per device type (the
// Meta slot holds the fake rule) and the Python dispatcher's call of the same
// operator (`fallback`). A call parses its arguments straight into a Stack,
// and runs the kernel of the first tensor's device type with the GIL
// released. It hands the call to `fallback` (which records, goes through
// autograd, or says what is missing) when a profile or the op recorder is on,
// when grad mode is on and a tensor argument requires grad, when an argument
// overrides the function (__torch_function__), or when no kernel fits. A
// _CppOp without a fallback is one kernel's direct call (the Python
// dispatcher's kernel for that device, and the backward): no redirection.
struct CppOpObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  ArgParser* parser;
  PyObject* defaults;  // tuple: each argument's default, nullptr-free (None for "no default" too)
  std::shared_ptr<const BoxedKernel> kernels[kNumDeviceTypes];
  std::shared_ptr<const BoxedKernel> no_device;  // the kernel of a call without a tensor argument
  PyObject* fallback;                            // nullptr: a direct call
  bool as_tuple;                                 // "-> (Tensor)": one result, returned as a tuple
  std::string* name;
};

PyObject* to_python(IValue& v) {
  switch (v.index()) {
    case 0:
      Py_RETURN_NONE;
    case 1: {
      Tensor& t = std::get<Tensor>(v);
      if (!t.defined()) Py_RETURN_NONE;
      return wrap(t);
    }
    case 2:
      return PyLong_FromLongLong(std::get<int64_t>(v));
    case 3:
      return PyFloat_FromDouble(std::get<double>(v));
    case 4:
      return PyBool_FromLong(std::get<bool>(v));
    case 5: {
      const std::string& s = std::get<std::string>(v);
      return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
    }
    case 6: {
      const auto& l = std::get<std::vector<int64_t>>(v);
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, i, PyLong_FromLongLong(l[i]));
      return out;
    }
    default: {
      auto& l = std::get<std::vector<Tensor>>(v);
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, i, l[i].defined() ? wrap(l[i]) : Py_NewRef(Py_None));
      return out;
    }
  }
}

PyObject* results_to_python(Stack& s, bool as_tuple) {
  if (s.empty()) Py_RETURN_NONE;
  if (s.size() == 1 && !as_tuple) return to_python(s[0]);
  PyObject* out = PyTuple_New(static_cast<Py_ssize_t>(s.size()));
  for (size_t i = 0; i < s.size(); ++i) {
    PyObject* item = to_python(s[i]);
    if (!item) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i, item);
  }
  return out;
}

PyObject* cpp_op_call(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<CppOpObject*>(self_);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (self->fallback && (op_recorder_on() || detail::observing(kObserveProfiler))) [[unlikely]]
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
  FB_PY_BEGIN
  ParsedArgs r = self->parser->parse(args, nargs, kwnames);
  if (r.index == kOverridden) {
    if (self->fallback) return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    throw TypeError(detail::cat_str("[", *self->name, "] a kernel's direct call takes Tensors, not objects that "
                                    "override __torch_function__"));
  }
  const auto& params = r.sig->params;
  const size_t n = params.size();
  Stack stack;
  stack.reserve(n);
  bool needs_grad = false;
  int device = -1;
  for (size_t i = 0; i < n; ++i) {
    const int ii = static_cast<int>(i);
    if (!r.args[i]) r.args[i] = PyTuple_GET_ITEM(self->defaults, ii);
    const ParamSpec& p = params[i];
    if (r.args[i] == Py_None) {
      stack.emplace_back(std::monostate());
      continue;
    }
    switch (p.kind) {
      case ArgKind::Tensor: {
        Tensor t = r.tensor(ii);
        needs_grad = needs_grad || t.requires_grad();
        if (device < 0) device = static_cast<int>(t.device().type);
        stack.emplace_back(std::move(t));
        break;
      }
      case ArgKind::TensorList: {
        TensorList l = r.tensor_list(ii);
        for (const Tensor& t : l) {
          needs_grad = needs_grad || t.requires_grad();
          if (device < 0) device = static_cast<int>(t.device().type);
        }
        stack.emplace_back(std::move(l));
        break;
      }
      case ArgKind::Int:
        stack.emplace_back(r.int64(ii));
        break;
      case ArgKind::IntList:
        stack.emplace_back(r.int_list(ii));
        break;
      case ArgKind::Float:
        stack.emplace_back(r.float64(ii));
        break;
      case ArgKind::Bool:
        stack.emplace_back(r.boolean(ii));
        break;
      case ArgKind::Str:
        stack.emplace_back(r.string(ii));
        break;
      default:
        throw TypeError(detail::cat_str("[", *self->name, "] internal: argument '", p.name, "' has type ",
                                        p.type_text, ", which a C++ operator cannot take"));
    }
  }
  const BoxedKernel* kernel = device >= 0 ? self->kernels[device].get() : self->no_device.get();
  if (self->fallback && (kernel == nullptr || (needs_grad && grad_mode_enabled())))
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
  if (kernel == nullptr)
    throw RuntimeError(detail::cat_str("[", *self->name, "] has no kernel for the ",
                                       device_type_name(static_cast<DeviceType>(device)), " device"));
  {
    py::gil_scoped_release no_gil;
    (*kernel)(stack);
  }
  return results_to_python(stack, self->as_tuple);
  FB_PY_END
}

void cpp_op_dealloc(PyObject* self_) {
  auto* self = reinterpret_cast<CppOpObject*>(self_);
  delete self->parser;
  delete self->name;
  Py_XDECREF(self->defaults);
  Py_XDECREF(self->fallback);
  for (auto& k : self->kernels) k.~shared_ptr();
  self->no_device.~shared_ptr();
  Py_TYPE(self_)->tp_free(self_);
}

PyObject* cpp_op_repr(PyObject* self_) {
  auto* self = reinterpret_cast<CppOpObject*>(self_);
  return PyUnicode_FromFormat("<C++ operator %s%s>", self->name->c_str(), self->fallback ? "" : " (one kernel)");
}

PyTypeObject cpp_op_type = [] {
  PyTypeObject t{};  // zeroed; the header PyVarObject_HEAD_INIT(nullptr, 0) would write:
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
  t.tp_name = "flambeau_core._C._CppOp";
  t.tp_basicsize = sizeof(CppOpObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_vectorcall_offset = offsetof(CppOpObject, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_dealloc = cpp_op_dealloc;
  t.tp_repr = cpp_op_repr;
  t.tp_doc = "An operator registered from C++ (FLAMBEAU_LIBRARY): Note [C++ operator call].";
  return t;
}();

std::shared_ptr<const BoxedKernel> kernel_of(py::handle h) {
  if (h.is_none()) return nullptr;
  return h.cast<KernelHandle&>().fn;
}

py::object make_cpp_op(const std::string& name, const std::string& signature, const py::tuple& defaults,
                       const py::list& kernels, py::handle no_device, py::handle fallback, bool as_tuple) {
  if (PyType_Ready(&cpp_op_type) < 0) throw py::error_already_set();
  FB_CHECK(static_cast<int>(kernels.size()) == kNumDeviceTypes, "[_cpp_op] expected ", kNumDeviceTypes,
           " kernels, one per device type");
  auto parser = std::make_unique<ArgParser>(name.c_str(), std::initializer_list<const char*>{signature.c_str()});
  PyObject* obj = cpp_op_type.tp_alloc(&cpp_op_type, 0);
  if (!obj) throw py::error_already_set();
  auto* self = reinterpret_cast<CppOpObject*>(obj);
  new (&self->kernels) std::shared_ptr<const BoxedKernel>[kNumDeviceTypes];
  new (&self->no_device) std::shared_ptr<const BoxedKernel>();
  self->vectorcall = cpp_op_call;
  self->parser = parser.release();
  self->name = new std::string(name);
  self->defaults = py::tuple(defaults).release().ptr();
  self->fallback = fallback.is_none() ? nullptr : fallback.inc_ref().ptr();
  self->as_tuple = as_tuple;
  for (int i = 0; i < kNumDeviceTypes; ++i) self->kernels[i] = kernel_of(kernels[i]);
  self->no_device = kernel_of(no_device);
  return py::reinterpret_steal<py::object>(obj);
}

const char* kind_name(library::EntryKind k) {
  switch (k) {
    case library::EntryKind::Def:
      return "def";
    case library::EntryKind::Impl:
      return "impl";
    case library::EntryKind::Fake:
      return "fake";
    case library::EntryKind::Backward:
      return "backward";
    case library::EntryKind::Error:
      return "error";
  }
  return "?";
}

}  // namespace

void init_library(py::module_& m);
void init_library(py::module_& m) {
  py::class_<KernelHandle>(m, "_BoxedKernel", "A kernel registered from C++ (FLAMBEAU_LIBRARY), boxed.");
  m.def(
      "_library_take_pending",
      [] {
        py::list out;
        for (auto& e : library::detail::take_pending_entries()) {
          py::object kernel = e.kernel ? py::cast(KernelHandle{e.kernel}) : py::none();
          out.append(py::make_tuple(kind_name(e.kind), e.ns, e.text, device_type_name(e.device), kernel,
                                    py::cast(e.arg_types), py::cast(e.ret_types), e.where));
        }
        return out;
      },
      "Note [Operators registered from C++]: takes what the FLAMBEAU_LIBRARY blocks loaded so far declared, as "
      "(kind, ns, text, device, kernel, arg_types, ret_types, where) tuples.");
  m.def("_library_pending_count", &library::detail::pending_entry_count);
  m.def("_cpp_op", &make_cpp_op, py::arg("name"), py::arg("signature"), py::arg("defaults"), py::arg("kernels"),
        py::arg("no_device"), py::arg("fallback"), py::arg("as_tuple"),
        "Note [C++ operator call]: the callable of one overload of a C++ operator.");
}

}  // namespace flambeau::python
