// Note [Python argument parser] (arg_parser.h).
#include "arg_parser.h"

#include <array>
#include <cctype>
#include <cstring>
#include <new>
#include <unordered_map>
#include <utility>

#include "../tensor_iterator.h"
#include "flambeau/device_errors.h"
#include "flambeau/error.h"
#include "flambeau/index_bounds_error.h"
#include "flambeau/random.h"

namespace flambeau::python {
namespace {

PyTypeObject* tensor_type() {
  static PyTypeObject* t = reinterpret_cast<PyTypeObject*>(py::type::of<TensorImpl>().ptr());
  return t;
}

std::string type_name(PyObject* o) {
  const char* full = Py_TYPE(o)->tp_name;  // "flambeau_core._C.Tensor" -> "Tensor"
  const char* dot = std::strrchr(full, '.');
  return dot ? dot + 1 : full;
}

bool is_number(PyObject* o) {
  if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o)) return true;
  if (PyObject_TypeCheck(o, tensor_type()) || PySequence_Check(o)) return false;
  return PyObject_HasAttrString(o, "__float__") || PyIndex_Check(o);
}

bool is_int(PyObject* o) {
  if (PyBool_Check(o)) return false;
  if (PyLong_Check(o)) return true;
  if (PyObject_TypeCheck(o, tensor_type())) {
    const Tensor t = py::handle(o).cast<Tensor>();
    return t.dim() == 0 && is_integral(t.dtype(), false);
  }
  return PyIndex_Check(o);
}

bool is_int_list(PyObject* o) {
  if (is_int(o)) return true;
  if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!is_int(items[i])) return false;
  return true;
}

bool is_tensor_list(PyObject* o) {
  if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!PyObject_TypeCheck(items[i], tensor_type())) return false;
  return true;
}

bool is_dtype(PyObject* o) {
  return py::isinstance<ScalarType>(o) || o == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
         o == reinterpret_cast<PyObject*>(&PyLong_Type) || o == reinterpret_cast<PyObject*>(&PyBool_Type);
}

bool accepts(const ParamSpec& p, PyObject* o) {
  if (o == Py_None) return p.optional;
  switch (p.kind) {
    case ArgKind::Tensor:
      return PyObject_TypeCheck(o, tensor_type());
    case ArgKind::TensorOrNumber:
      return PyObject_TypeCheck(o, tensor_type()) || is_number(o);
    case ArgKind::TensorList:
      return is_tensor_list(o);
    case ArgKind::Scalar:
      if (PyObject_TypeCheck(o, tensor_type())) return py::handle(o).cast<Tensor>().numel() == 1;
      return is_number(o);
    case ArgKind::Int:
      return is_int(o);
    case ArgKind::IntList:
      return is_int_list(o);
    case ArgKind::Float:
      return PyFloat_Check(o) || is_int(o) || (is_number(o) && !PyBool_Check(o));
    case ArgKind::Bool:
      return PyBool_Check(o);
    case ArgKind::Dtype:
      return is_dtype(o);
    case ArgKind::MemoryFormat:
      return py::isinstance<MemoryFormat>(o);
    case ArgKind::Device:
      return PyUnicode_Check(o) || py::isinstance<Device>(o);
    case ArgKind::Generator:
      return py::isinstance<Generator>(o);
    case ArgKind::Str:
      return PyUnicode_Check(o);
    case ArgKind::Layout:
      return is_layout(o);
  }
  return false;
}

const char* kind_name(const ParamSpec& p) {
  switch (p.kind) {
    case ArgKind::Tensor:
      return "a Tensor";
    case ArgKind::TensorOrNumber:
      return "a Tensor or a number";
    case ArgKind::TensorList:
      return "a list or tuple of Tensors";
    case ArgKind::Scalar:
      return "a number";
    case ArgKind::Int:
      return "an int";
    case ArgKind::IntList:
      return "an int or a sequence of ints";
    case ArgKind::Float:
      return "a float";
    case ArgKind::Bool:
      return "a bool";
    case ArgKind::Dtype:
      return "a dtype";
    case ArgKind::MemoryFormat:
      return "a memory_format";
    case ArgKind::Device:
      return "a device";
    case ArgKind::Generator:
      return "a Generator";
    case ArgKind::Str:
      return "a str";
    case ArgKind::Layout:
      return "a layout (flambeau.strided)";
  }
  return "?";
}

ParamSpec parse_param(const std::string& text, bool kw_only) {
  ParamSpec p;
  p.kw_only = kw_only;
  std::string decl = text;
  if (const size_t eq = decl.find('='); eq != std::string::npos) {
    p.has_default = true;
    p.default_text = decl.substr(eq + 1);
    decl = decl.substr(0, eq);
  }
  const size_t sp = decl.rfind(' ');
  FB_INTERNAL_ASSERT(sp != std::string::npos, "bad parameter '", text, "'");
  std::string ty = decl.substr(0, sp);
  p.name = decl.substr(sp + 1);
  if (const size_t a = ty.find("(a!)"); a != std::string::npos) ty.erase(a, 4);
  p.type_text = ty;
  if (!ty.empty() && ty.back() == '?') {
    p.optional = true;
    ty.pop_back();
  }
  static const std::unordered_map<std::string, ArgKind> kinds = {{"Tensor", ArgKind::Tensor},
                                                                 {"TensorOrNumber", ArgKind::TensorOrNumber},
                                                                 {"Tensor[]", ArgKind::TensorList},
                                                                 {"Scalar", ArgKind::Scalar},
                                                                 {"int", ArgKind::Int},
                                                                 {"int[]", ArgKind::IntList},
                                                                 {"float", ArgKind::Float},
                                                                 {"bool", ArgKind::Bool},
                                                                 {"ScalarType", ArgKind::Dtype},
                                                                 {"MemoryFormat", ArgKind::MemoryFormat},
                                                                 {"Device", ArgKind::Device},
                                                                 {"Generator", ArgKind::Generator},
                                                                 {"str", ArgKind::Str},
                                                                 {"Layout", ArgKind::Layout}};
  auto it = kinds.find(ty);
  FB_INTERNAL_ASSERT(it != kinds.end(), "unknown parameter type '", ty, "'");
  p.kind = it->second;
  return p;
}

FunctionSignature parse_signature(const char* name, const char* text) {
  FunctionSignature s;
  s.name = name;
  s.text = std::string(name) + "(" + text + ")";
  std::string cur;
  int depth = 0;
  bool kw_only = false;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(' '), e = cur.find_last_not_of(' ');
    if (b == std::string::npos) return;
    const std::string item = cur.substr(b, e - b + 1);
    cur.clear();
    if (item == "*") {
      kw_only = true;
      return;
    }
    s.params.push_back(parse_param(item, kw_only));
    if (!kw_only) ++s.num_positional;
  };
  for (const char* c = text; *c; ++c) {
    if (*c == '[' || *c == '(') ++depth;
    if (*c == ']' || *c == ')') --depth;
    if (*c == ',' && depth == 0)
      flush();
    else
      cur += *c;
  }
  flush();
  FB_INTERNAL_ASSERT(s.params.size() <= kMaxParsedArgs, "too many parameters in ", s.text);
  return s;
}

std::string describe_call(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  std::string out = "(";
  for (Py_ssize_t i = 0; i < nargs; ++i) out += (i ? ", " : "") + type_name(args[i]);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k)
    out += ((nargs + k) ? ", " : "") + std::string(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k))) + "=" +
           type_name(args[nargs + k]);
  return out + ")";
}

}  // namespace

bool is_tensor(PyObject* obj) { return PyObject_TypeCheck(obj, tensor_type()); }

ArgParser::ArgParser(const char* py_name, std::initializer_list<const char*> signatures) : name_(py_name) {
  for (const char* s : signatures) sigs_.push_back(parse_signature(py_name, s));
}

bool ArgParser::try_bind(const FunctionSignature& s, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames, ParsedArgs& out, std::string* why) const {
  std::fill(std::begin(out.args), std::end(out.args), nullptr);
  out.owned = py::object();
  const size_t np = s.params.size();
  // zeros(2, 3): an int[] first parameter also takes the sizes as separate ints.
  // Only when there are more ints than positional parameters: x.roll(1, 0) is shifts=1, dims=0.
  if (s.num_positional >= 1 && s.params[0].kind == ArgKind::IntList && nargs > 1 && is_int(args[0]) &&
      nargs > static_cast<Py_ssize_t>(s.num_positional)) {
    bool all_ints = true;
    Py_ssize_t n = nargs;
    for (Py_ssize_t i = 0; i < nargs; ++i) {
      if (!is_int(args[i])) {
        n = i;
        all_ints = false;
        break;
      }
    }
    (void)all_ints;
    py::tuple sizes(n);
    for (Py_ssize_t i = 0; i < n; ++i) sizes[i] = py::reinterpret_borrow<py::object>(args[i]);
    out.owned = sizes;
    out.args[0] = out.owned.ptr();
    if (nargs - n > static_cast<Py_ssize_t>(s.num_positional) - 1) {
      if (why) *why = detail::cat_str("takes sizes and ", s.num_positional - 1, " more positional arguments");
      return false;
    }
    for (Py_ssize_t i = n; i < nargs; ++i) out.args[1 + (i - n)] = args[i];
  } else {
    if (nargs > static_cast<Py_ssize_t>(s.num_positional)) {
      if (why)
        *why = detail::cat_str("takes ", s.num_positional, " positional argument",
                               s.num_positional == 1 ? "" : "s", " but ", nargs, " were given");
      return false;
    }
    for (Py_ssize_t i = 0; i < nargs; ++i) out.args[i] = args[i];
  }
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    size_t j = 0;
    while (j < np && s.params[j].name != key) ++j;
    if (j == np) {
      if (why) *why = detail::cat_str("got an unexpected keyword argument '", key, "'");
      return false;
    }
    if (out.args[j]) {
      if (why) *why = detail::cat_str("got multiple values for argument '", key, "'");
      return false;
    }
    out.args[j] = args[nargs + k];
  }
  for (size_t j = 0; j < np; ++j) {
    const ParamSpec& p = s.params[j];
    if (!out.args[j]) {
      if (!p.has_default) {
        if (why) *why = detail::cat_str("missing required argument '", p.name, "'");
        return false;
      }
      continue;
    }
    if (!accepts(p, out.args[j])) {
      if (why) {
        PyObject* o = out.args[j];
        *why = detail::cat_str("argument '", p.name, "' must be ", kind_name(p), p.optional ? " or None" : "",
                               ", got ", type_name(o));
        if (p.kind == ArgKind::TensorList && (PyList_Check(o) || PyTuple_Check(o))) {
          for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(o); ++k) {
            if (!is_tensor(PySequence_Fast_ITEMS(o)[k])) {
              *why += detail::cat_str(" whose element ", k, " is ", type_name(PySequence_Fast_ITEMS(o)[k]));
              break;
            }
          }
        }
      }
      return false;
    }
  }
  out.sig = &s;
  return true;
}

ParsedArgs ArgParser::parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) const {
  ParsedArgs out;
  for (size_t i = 0; i < sigs_.size(); ++i) {
    if (try_bind(sigs_[i], args, nargs, kwnames, out, nullptr)) {
      out.index = static_cast<int>(i);
      return out;
    }
  }
  if (has_torch_function(args, nargs, kwnames)) {
    out.index = kOverridden;  // Note [__torch_function__]
    return out;
  }
  if (sigs_.size() == 1) {
    std::string why;
    try_bind(sigs_[0], args, nargs, kwnames, out, &why);
    throw TypeError(detail::cat_str("[", name_, "] ", why, "; expected ", sigs_[0].text));
  }
  std::string msg = detail::cat_str("[", name_, "] received an invalid combination of arguments: got ",
                                    describe_call(args, nargs, kwnames), "; expected one of:");
  for (const auto& s : sigs_) msg += "\n * " + s.text;
  throw TypeError(msg);
}

// ---- __torch_function__ (Note [__torch_function__]) ----

namespace {
/// An argument that overrides flambeau functions: not a flambeau Tensor, and its type defines
/// __torch_function__. PyTorch's own tensors define it too, but their default implementation calls
/// the function again with the same arguments (an endless recursion here), so they are not overrides:
/// passing one still raises the TypeError that says a flambeau Tensor was expected.
bool overrides(PyObject* obj) {
  if (obj == nullptr || obj == Py_None || is_tensor(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) ||
      PyBool_Check(obj) || PyUnicode_Check(obj))
    return false;
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  if (!PyObject_HasAttrString(type, "__torch_function__")) return false;
  py::object module = py::reinterpret_steal<py::object>(PyObject_GetAttrString(type, "__module__"));
  if (!module) {
    PyErr_Clear();
    return true;
  }
  const char* m = PyUnicode_Check(module.ptr()) ? PyUnicode_AsUTF8(module.ptr()) : nullptr;
  return !(m && (std::strcmp(m, "torch") == 0 || std::strncmp(m, "torch.", 6) == 0));
}

/// Calls f(obj) for each argument, and for the items of list and tuple arguments (a TensorList).
template <class F>
void for_each_argument(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const F& f) {
  const Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  for (Py_ssize_t i = 0; i < total; ++i) {
    PyObject* a = args[i];
    if (PyList_Check(a) || PyTuple_Check(a)) {
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(a);
      PyObject** items = PySequence_Fast_ITEMS(a);
      for (Py_ssize_t k = 0; k < n; ++k) f(items[k]);
    } else {
      f(a);
    }
  }
}
}  // namespace

bool has_torch_function(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool found = false;
  for_each_argument(args, nargs, kwnames, [&](PyObject* a) { found = found || overrides(a); });
  return found;
}

PyObject* handle_torch_function(const char* name, bool method, PyObject* self, PyObject* const* args,
                                Py_ssize_t nargs, PyObject* kwnames) {
  FB_PY_BEGIN
  // The overriding arguments, one per type, in order of appearance (PyTorch's rule: a subclass
  // before its base class).
  std::vector<py::handle> overloaded;
  for_each_argument(args, nargs, kwnames, [&](PyObject* a) {
    if (!overrides(a)) return;
    for (auto it = overloaded.begin(); it != overloaded.end(); ++it) {
      if (Py_TYPE(it->ptr()) == Py_TYPE(a)) return;
      if (PyType_IsSubtype(Py_TYPE(a), Py_TYPE(it->ptr()))) {
        overloaded.insert(it, a);
        return;
      }
    }
    overloaded.emplace_back(a);
  });
  py::tuple types(overloaded.size());
  for (size_t i = 0; i < overloaded.size(); ++i)
    types[i] = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(overloaded[i].ptr())));
  // The function as Python code names it: the Tensor method, or the module's function.
  py::object func = method ? py::getattr(py::handle(reinterpret_cast<PyObject*>(Py_TYPE(self))), name)
                           : py::getattr(py::handle(self), name);
  const Py_ssize_t first = method ? 1 : 0;
  py::tuple call_args(nargs + first);
  if (method) call_args[0] = py::reinterpret_borrow<py::object>(self);
  for (Py_ssize_t i = 0; i < nargs; ++i) call_args[i + first] = py::reinterpret_borrow<py::object>(args[i]);
  py::dict kwargs;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k)
    kwargs[py::handle(PyTuple_GET_ITEM(kwnames, k))] = py::reinterpret_borrow<py::object>(args[nargs + k]);
  for (py::handle arg : overloaded) {
    py::object result = arg.attr("__torch_function__")(func, types, call_args, kwargs);
    if (!result.is(py::handle(Py_NotImplemented))) return result.release().ptr();
  }
  std::string names;
  for (size_t i = 0; i < overloaded.size(); ++i) names += (i ? ", " : "") + type_name(overloaded[i].ptr());
  throw TypeError(detail::cat_str("[", name, "] no implementation found for '", name,
                                  "' on types that implement __torch_function__: [", names, "]"));
  FB_PY_END
}

// ---- __torch_function__ for functions bound with pybind11 ----

namespace {
// Note [__torch_function__] for the module functions bound with pybind11 (views, *_like factories, ...):
// pybind11 raises its own TypeError when no overload accepts the arguments, so each is replaced by a
// vectorcall function (the module as `self`, so it pickles by name as before) that calls it and, only
// when that raises TypeError and an argument overrides, hands the call to __torch_function__. The
// C function has no other way to know which function it stands for than being its own instantiation:
// a fixed pool of slots.
constexpr int kOverridableSlots = 48;
struct OverridableSlot {
  PyObject* original = nullptr;  // the pybind11 function (strong reference, never freed)
  PyMethodDef def{};
  std::string name, doc;
};
OverridableSlot g_overridable[kOverridableSlots];
int g_overridable_used = 0;

template <int I>
PyObject* overridable_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const OverridableSlot& slot = g_overridable[I];
  PyObject* result = PyObject_Vectorcall(slot.original, args, static_cast<size_t>(nargs), kwnames);
  if (result != nullptr || !PyErr_ExceptionMatches(PyExc_TypeError)) return result;
  // Looking for an override calls into Python (attribute lookups): pybind11's TypeError is set aside meanwhile.
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  bool overridden = false;
  try {
    overridden = has_torch_function(args, nargs, kwnames);
  } catch (...) {
  }
  PyErr_Clear();
  if (!overridden) {
    PyErr_Restore(type, value, traceback);  // pybind11's TypeError stands
    return nullptr;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return handle_torch_function(slot.name.c_str(), false, self, args, nargs, kwnames);
}

template <int... I>
constexpr std::array<_PyCFunctionFastWithKeywords, sizeof...(I)> overridable_table(
    std::integer_sequence<int, I...>) {
  return {&overridable_call<I>...};
}
}  // namespace

void make_overridable(py::module_& m, std::initializer_list<const char*> names) {
  static constexpr auto table = overridable_table(std::make_integer_sequence<int, kOverridableSlots>());
  py::object module_name = py::str(PyModule_GetName(m.ptr()));
  for (const char* name : names) {
    FB_INTERNAL_ASSERT(g_overridable_used < kOverridableSlots, "make_overridable: raise kOverridableSlots");
    const int i = g_overridable_used++;
    OverridableSlot& slot = g_overridable[i];
    slot.original = py::object(m.attr(name)).release().ptr();
    slot.name = name;
    py::object doc = py::getattr(py::handle(slot.original), "__doc__", py::none());
    slot.doc = doc.is_none() ? std::string() : doc.cast<std::string>();
    slot.def = PyMethodDef{slot.name.c_str(), reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(table[i])),
                           METH_FASTCALL | METH_KEYWORDS, slot.doc.empty() ? nullptr : slot.doc.c_str()};
    PyObject* f = PyCFunction_NewEx(&slot.def, m.ptr(), module_name.ptr());
    if (!f) throw py::error_already_set();
    m.attr(name) = py::reinterpret_steal<py::object>(f);
  }
}

// ---- accessors ----

const char* ParsedArgs::op() const { return sig->name.c_str(); }

namespace {
/// The default of a parameter as a Python object (the table writes Python literals).
py::object default_value(const ParamSpec& p) {
  const std::string& d = p.default_text;
  if (d == "None") return py::none();
  if (d == "True") return py::bool_(true);
  if (d == "False") return py::bool_(false);
  if (d == "[]") return py::tuple();
  if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d[0])) || d[0] == '-')) {
    if (d.find_first_of(".eE") != std::string::npos && d.find("0x") == std::string::npos)
      return py::float_(std::stod(d));
    return py::int_(std::stoll(d));
  }
  if (d.size() >= 2 && d.front() == '"') return py::str(d.substr(1, d.size() - 2));
  // The table spells dtypes as C++ does (Int64) and devices bare (cpu).
  if (p.kind == ArgKind::Dtype) {
    std::string name = d;
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    return py::module_::import("flambeau_core").attr(name.c_str());
  }
  if (p.kind == ArgKind::MemoryFormat) return py::module_::import("flambeau_core").attr(d.c_str());
  if (p.kind == ArgKind::Device) return py::str(d);
  throw RuntimeError(detail::cat_str("internal: cannot read default '", d, "' of ", p.name));
}
}  // namespace

namespace {
// flambeau_core.sparse's layout class and its strided value, imported once (under the GIL; a race
// imports twice and keeps one).
PyObject* g_layout_class = nullptr;
PyObject* g_strided = nullptr;
void load_layouts() {
  if (g_strided) return;
  py::module_ sparse = py::module_::import("flambeau_core.sparse");
  py::object cls = sparse.attr("layout"), strided = sparse.attr("strided");
  if (g_strided) return;
  g_layout_class = cls.release().ptr();
  g_strided = strided.release().ptr();
}
}  // namespace

bool is_layout(PyObject* obj) {
  load_layouts();
  const int r = PyObject_IsInstance(obj, g_layout_class);
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

void check_layout(py::handle obj, const char* op) {
  if (obj.is_none()) return;
  if (!is_layout(obj.ptr()))
    throw TypeError(detail::cat_str("[", op, "] layout must be a flambeau layout (flambeau.strided), got ",
                                    Py_TYPE(obj.ptr())->tp_name));
  if (obj.ptr() == g_strided) return;
  throw NotImplementedError(detail::cat_str("[", op, "] is implemented for strided tensors only ",
                                            "(layout=flambeau.strided), got layout=",
                                            py::str(obj).cast<std::string>()));
}

#define FB_ARG_OR_DEFAULT(i)          \
  py::object holder;                  \
  PyObject* o = args[i];              \
  if (!o) {                           \
    holder = default_value(param(i)); \
    o = holder.ptr();                 \
  }

Tensor ParsedArgs::tensor(int i) const { return py::handle(args[i]).cast<Tensor>(); }
Tensor ParsedArgs::tensor_or_number(int i) const {
  FB_ARG_OR_DEFAULT(i);
  return as_operand(o, op());
}
std::optional<Tensor> ParsedArgs::optional_tensor(int i) const {
  if (is_none(i)) return std::nullopt;
  return tensor(i);
}
TensorList ParsedArgs::tensor_list(int i) const {
  TensorList out;
  PyObject* o = args[i];
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  out.reserve(n);
  for (Py_ssize_t k = 0; k < n; ++k) out.push_back(py::handle(PySequence_Fast_ITEMS(o)[k]).cast<Tensor>());
  return out;
}
Scalar ParsedArgs::scalar(int i) const {
  FB_ARG_OR_DEFAULT(i);
  if (is_tensor(o)) return as_scalar(py::handle(o).attr("item")(), op());
  return as_scalar(o, op());
}
std::optional<Scalar> ParsedArgs::optional_scalar(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return scalar(i);
}
int64_t ParsedArgs::int64(int i) const {
  FB_ARG_OR_DEFAULT(i);
  py::object idx = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!idx) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
  FB_CHECK_VALUE(!overflow, "[", op(), "] argument '", param(i).name, "' = ", py::str(o).cast<std::string>(),
                 " does not fit in int64");
  return v;
}
std::optional<int64_t> ParsedArgs::optional_int64(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return int64(i);
}
Shape ParsedArgs::int_list(int i) const {
  FB_ARG_OR_DEFAULT(i);
  if (is_int(o)) {
    ParsedArgs one = *this;
    one.args[i] = o;
    return Shape{one.int64(i)};
  }
  Shape out;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  out.reserve(n);
  ParsedArgs item = *this;
  for (Py_ssize_t k = 0; k < n; ++k) {
    item.args[i] = PySequence_Fast_ITEMS(o)[k];
    out.push_back(item.int64(i));
  }
  return out;
}
std::optional<Shape> ParsedArgs::optional_int_list(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return int_list(i);
}
double ParsedArgs::float64(int i) const {
  FB_ARG_OR_DEFAULT(i);
  const double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}
std::optional<double> ParsedArgs::optional_float64(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return float64(i);
}
bool ParsedArgs::boolean(int i) const {
  FB_ARG_OR_DEFAULT(i);
  return o == Py_True;
}
std::optional<bool> ParsedArgs::optional_boolean(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return boolean(i);
}
ScalarType ParsedArgs::dtype(int i) const {
  FB_ARG_OR_DEFAULT(i);
  return parse_dtype(o, default_float_dtype(), op());
}
std::optional<ScalarType> ParsedArgs::optional_dtype(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return dtype(i);
}
MemoryFormat ParsedArgs::memory_format(int i) const {
  FB_ARG_OR_DEFAULT(i);
  return py::handle(o).cast<MemoryFormat>();
}
std::optional<MemoryFormat> ParsedArgs::optional_memory_format(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return memory_format(i);
}
Device ParsedArgs::device(int i) const {
  // Every op with a Device argument is a factory: omitted or None means the
  // default device (Note [Default device]).
  if (is_none(i)) return default_device();
  return parse_device(args[i], op());
}
std::optional<Device> ParsedArgs::optional_device(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return device(i);
}
Generator* ParsedArgs::generator(int i) const {
  if (is_none(i)) return nullptr;
  return py::handle(args[i]).cast<Generator*>();
}
void ParsedArgs::check_layout(int i) const {
  if (!is_none(i)) python::check_layout(args[i], op());
}
std::string ParsedArgs::string(int i) const {
  FB_ARG_OR_DEFAULT(i);
  return py::handle(o).cast<std::string>();
}
std::optional<std::string> ParsedArgs::optional_string(int i) const {
  if (is_none(i) && (args[i] || param(i).default_text == "None")) return std::nullopt;
  return string(i);
}
#undef FB_ARG_OR_DEFAULT

bool operator_operand(PyObject* obj, const char* op, bool strict, Tensor& out) {
  if (is_tensor(obj)) {
    out = py::handle(obj).cast<Tensor>();
    return true;
  }
  if (strict) return false;
  if (PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj) ||
      (PyObject_HasAttrString(obj, "__float__") && !PyObject_HasAttrString(obj, "__len__"))) {
    out = as_operand(obj, op);
    return true;
  }
  if (PyList_Check(obj) || PyTuple_Check(obj) ||
      (PyObject_CheckBuffer(obj) && PyObject_HasAttrString(obj, "__array_interface__"))) {
    out = py::module_::import("flambeau_core").attr("tensor")(py::handle(obj)).cast<Tensor>();
    return true;
  }
  return false;
}

// ---- results ----

PyObject* wrap(const Tensor& t) { return py::cast(t).release().ptr(); }
PyObject* wrap(const TensorList& ts) {
  py::tuple out(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) out[i] = py::cast(ts[i]);
  return out.release().ptr();
}
PyObject* wrap(bool v) { return py::bool_(v).release().ptr(); }
PyObject* wrap(int64_t v) { return py::int_(v).release().ptr(); }
PyObject* wrap(double v) { return py::float_(v).release().ptr(); }

PyObject* wrap_named(const char* type_name, std::initializer_list<const char*> fields,
                     std::initializer_list<Tensor> values) {
  // One named-tuple class per result kind (like torch.return_types.max), made once.
  static std::unordered_map<std::string, py::object>* classes =
      new std::unordered_map<std::string, py::object>();
  auto it = classes->find(type_name);
  if (it == classes->end()) {
    py::tuple names(fields.size());
    size_t i = 0;
    for (const char* f : fields) names[i++] = py::str(f);
    it = classes->emplace(type_name, py::module_::import("collections").attr("namedtuple")(type_name, names))
             .first;
  }
  py::tuple items(values.size());
  size_t i = 0;
  for (const Tensor& t : values) items[i++] = py::cast(t);
  return it->second(*items).release().ptr();
}

/// The Python class of flambeau::IndexOutOfBoundsError (module.cpp), borrowed.
PyObject* index_out_of_bounds_error_type();
/// The Python classes of flambeau::OutOfMemoryError and AcceleratorError (module.cpp), borrowed.
PyObject* out_of_memory_error_type();
PyObject* accelerator_error_type();

void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const IndexOutOfBoundsError& e) {
    PyErr_SetString(index_out_of_bounds_error_type(), e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(flambeau_error_type(), e.what());
  } catch (const OutOfMemoryError& e) {
    PyErr_SetString(out_of_memory_error_type(), e.what());
  } catch (const AcceleratorError& e) {
    PyErr_SetString(accelerator_error_type(), e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const std::bad_alloc&) {
    // Host memory for a kernel's own bookkeeping (tensor memory fails in the
    // allocator with its own message); pybind11 and PyErr_NoMemory would say nothing.
    PyErr_SetString(PyExc_MemoryError,
                    "out of memory: a kernel could not allocate its working memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

// Note [out= resizing]: as PyTorch, an out= tensor of another shape is resized to the result's
// (contiguous strides; in place when its storage holds enough bytes past its offset, else onto new
// memory), keeping its identity. An out= with elements gets a UserWarning first (PyTorch's
// deprecation of that case); an empty one (numel 0) is resized silently.
void resize_out(const char* op, Tensor& out, IntArrayRef sizes) {
  if (out.numel() != 0) {
    const std::string msg = detail::cat_str(
        "[", op, "] An output with one or more elements was resized since it had shape ",
        shape_str(out.sizes()), ", which does not match the required output shape ", shape_str(sizes),
        ". This behavior is deprecated (as in PyTorch): resize an out tensor to zero elements to reuse it.");
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) throw py::error_already_set();
  }
  const int64_t nbytes = shape_nbytes(sizes, out.dtype(), op);
  TensorImpl* impl = out.impl();
  const auto need =
      static_cast<size_t>(out.storage_offset() * static_cast<int64_t>(itemsize(out.dtype())) + nbytes);
  if (impl->storage() && need <= impl->storage()->nbytes()) {
    impl->set_sizes_and_strides(Shape(sizes.begin(), sizes.end()), contiguous_strides(sizes, op),
                                out.storage_offset());
  } else {
    const Tensor fresh = op::empty(sizes, out.dtype(), out.device());
    impl->set_data(*fresh.impl());
  }
}

void check_out_count(const char* op, const TensorList& outs, size_t n) {
  FB_CHECK_TYPE(outs.size() == n, "[", op, "] out= must be a tuple of ", n, " tensors, got ", outs.size());
}

// Note [out= and autograd]: as PyTorch, an op called with out= is not differentiable: when grad
// mode records and out= or an input the result depends on requires grad (the result then requires
// grad too), it raises a RuntimeError instead of silently recording a copy_ into out.
void check_out_autograd(const char* op, const Tensor& result, const Tensor& out) {
  if (!grad_mode_enabled() || !(out.requires_grad() || (result.defined() && result.requires_grad()))) return;
  throw RuntimeError(
      detail::cat_str("[", op,
                      "] functions with out=... arguments don't support automatic differentiation, "
                      "but one of the arguments requires grad (call it under no_grad(), or without out=)"));
}

void check_out_cast(const char* op, ScalarType from, ScalarType to) {
  FB_CHECK_TYPE(can_cast(from, to), "[", op, "] result type ", dtype_name(from),
                " can't be cast to the desired output type ", dtype_name(to));
}

void check_out_logical(const char* op, const Tensor& out) {
  FB_CHECK_TYPE(out.dtype() == ScalarType::Bool || out.dtype() == ScalarType::UInt8, "[", op, "] ", op,
                " only supports a bool (or uint8) out= tensor, got ", dtype_name(out.dtype()));
}

void copy_to_out(const char* op, const Tensor& result, Tensor& out, bool exact_dtype) {
  check_out_autograd(op, result, out);
  FB_CHECK_TYPE(!exact_dtype || result.dtype() == out.dtype(), "[", op,
                "] expected out tensor to have dtype ", dtype_name(result.dtype()), ", but got ",
                dtype_name(out.dtype()), " instead");
  check_out_cast(op, result.dtype(), out.dtype());
  FB_CHECK(result.device() == out.device(), "[", op, "] out= is on ", out.device().str(),
           " but the result is on ", result.device().str());
  if (!std::ranges::equal(result.sizes(), out.sizes())) resize_out(op, out, result.sizes());
  op::copy_(out, result);
}

void add_function(py::module_& m, PyMethodDef* def) {
  py::object name = py::str(PyModule_GetName(m.ptr()));
  // The module is the function's `self`, so __torch_function__ can name the function (Note [__torch_function__]).
  PyObject* f = PyCFunction_NewEx(def, m.ptr(), name.ptr());
  if (!f) throw py::error_already_set();
  m.attr(def->ml_name) = py::reinterpret_steal<py::object>(f);
}

void add_method(py::handle cls, PyMethodDef* def) {
  PyObject* d = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def);
  if (!d) throw py::error_already_set();
  if (PyObject_SetAttrString(cls.ptr(), def->ml_name, d) != 0) {
    Py_DECREF(d);
    throw py::error_already_set();
  }
  Py_DECREF(d);
}

}  // namespace flambeau::python
