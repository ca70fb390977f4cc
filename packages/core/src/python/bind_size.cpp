// flambeau.Size: the tuple subclass that Tensor.shape and Tensor.size() return (PyTorch's torch.Size).
//
// Note [Size is a C type]
// `x.shape` and `x.shape[0]` run on every layer call of a model, so Size is a static C type whose base is
// tuple (as torch.Size is): indexing, len, iteration, hashing and comparison are tuple's own slots, and the
// getters build one with tp_alloc and PyTuple_SET_ITEM (make_size). A Python subclass of tuple that
// overrides __getitem__ made `s[0]` 16x slower than a tuple's (179 ns against 11 ns, measured here), and
// `x.shape[0]` is the commonest use of a shape. Only slicing, `+`, `*`, repr, pickling and numel() differ
// from tuple; as torch.Size, the type cannot be subclassed and its instances take no attributes.
#include <Python.h>

#include <string>

#include "common.h"

namespace flambeau::python {
namespace {

PyTypeObject g_size_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

/// A Size holding `n` new references taken from `items` (a tuple, borrowed); nullptr with an error set.
PyObject* size_from_tuple(PyObject* items) {
  const Py_ssize_t n = PyTuple_GET_SIZE(items);
  PyObject* out = g_size_type.tp_alloc(&g_size_type, n);
  if (!out) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* v = PyTuple_GET_ITEM(items, i);
    Py_INCREF(v);
    PyTuple_SET_ITEM(out, i, v);
  }
  return out;
}

/// Size(sizes=()): each item through __index__, as torch.Size (a 0-d integer tensor counts).
PyObject* size_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  PyObject* sizes = nullptr;
  static const char* kwlist[] = {"sizes", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Size", const_cast<char**>(kwlist), &sizes))
    return nullptr;
  if (!sizes) return g_size_type.tp_alloc(&g_size_type, 0);
  PyObject* seq = PySequence_Tuple(sizes);  // TypeError "'int' object is not iterable" for Size(3), as torch
  if (!seq) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(seq);
  PyObject* out = g_size_type.tp_alloc(&g_size_type, n);
  if (!out) {
    Py_DECREF(seq);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(seq, i);
    PyObject* v = PyIndex_Check(item) ? PyNumber_Index(item) : nullptr;  // always an exact int
    if (!v) {
      if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "[Size] takes an iterable of 'int' (item %zd is '%s')", i,
                     Py_TYPE(item)->tp_name);
      }
      Py_DECREF(seq);
      Py_DECREF(out);
      return nullptr;
    }
    int overflow = 0;
    PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
      // torch.Size keeps int64 sizes: a larger item is a ValueError there too.
      PyErr_Format(PyExc_ValueError, "[Size] item %zd (%S) does not fit in int64", i, v);
      Py_DECREF(v);
      Py_DECREF(seq);
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i, v);
  }
  Py_DECREF(seq);
  return out;
}

PyObject* size_repr(PyObject* self) {
  std::string s = "flambeau.Size([";
  const Py_ssize_t n = PyTuple_GET_SIZE(self);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* r = PyObject_Str(PyTuple_GET_ITEM(self, i));
    if (!r) return nullptr;
    const char* c = PyUnicode_AsUTF8(r);
    if (!c) {
      Py_DECREF(r);
      return nullptr;
    }
    if (i) s += ", ";
    s += c;
    Py_DECREF(r);
  }
  s += "])";
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
}

/// Tuple's result, as a Size: `result` is a new reference (or nullptr), consumed.
PyObject* as_size(PyObject* result) {
  if (!result || Py_IS_TYPE(result, &g_size_type)) return result;
  PyObject* out = size_from_tuple(result);
  Py_DECREF(result);
  return out;
}

PyObject* size_subscript(PyObject* self, PyObject* index) {
  PyObject* out = PyTuple_Type.tp_as_mapping->mp_subscript(self, index);
  return PySlice_Check(index) ? as_size(out) : out;
}

/// `size + tuple` and `tuple + size` are Sizes; anything else falls back to tuple's concatenation and its
/// TypeError ("can only concatenate tuple (not "list") to tuple").
PyObject* size_add(PyObject* a, PyObject* b) {
  if (!PyTuple_Check(a) || !PyTuple_Check(b)) Py_RETURN_NOTIMPLEMENTED;
  return as_size(PyTuple_Type.tp_as_sequence->sq_concat(a, b));
}

/// `size * n` and `n * size` are Sizes; a non-integer n falls back to tuple's TypeError.
PyObject* size_multiply(PyObject* a, PyObject* b) {
  PyObject* seq = PyTuple_Check(a) ? a : b;
  PyObject* count = seq == a ? b : a;
  if (!PyIndex_Check(count)) Py_RETURN_NOTIMPLEMENTED;
  const Py_ssize_t n = PyNumber_AsSsize_t(count, PyExc_OverflowError);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  return as_size(PyTuple_Type.tp_as_sequence->sq_repeat(seq, n));
}

PyObject* size_numel(PyObject* self, PyObject*) {
  const Py_ssize_t n = PyTuple_GET_SIZE(self);
  long long prod = 1;
  bool fits = true;
  for (Py_ssize_t i = 0; i < n && fits; ++i) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));  // every item fits (size_new)
    fits = !__builtin_mul_overflow(prod, v, &prod);
  }
  if (fits) return PyLong_FromLongLong(prod);
  // Beyond int64 (a Size of sizes no tensor can have): the exact product in Python ints.
  PyObject* acc = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; acc && i < n; ++i) {
    PyObject* next = PyNumber_Multiply(acc, PyTuple_GET_ITEM(self, i));
    Py_DECREF(acc);
    acc = next;
  }
  return acc;
}

PyObject* size_reduce(PyObject* self, PyObject*) {
  PyObject* items = PyTuple_GetSlice(self, 0, PyTuple_GET_SIZE(self));  // a plain tuple
  if (!items) return nullptr;
  return Py_BuildValue("(O(N))", reinterpret_cast<PyObject*>(&g_size_type), items);
}

PyMethodDef g_size_methods[] = {{"numel", &size_numel, METH_NOARGS,
                                 "The number of elements a tensor of these sizes holds (1 for Size([])).\n"
                                 "\n"
                                 ">>> import flambeau as fb\n"
                                 ">>> fb.Size([2, 3]).numel(), fb.Size([]).numel()\n"
                                 "(6, 1)"},
                                {"__reduce__", &size_reduce, METH_NOARGS, "Pickles as Size(tuple)."},
                                {nullptr, nullptr, 0, nullptr}};

PyMappingMethods g_size_as_mapping = {nullptr, &size_subscript, nullptr};
PyNumberMethods g_size_as_number = {};

}  // namespace

PyObject* make_size(IntArrayRef sizes) {
  const auto n = static_cast<Py_ssize_t>(sizes.size());
  PyObject* out = g_size_type.tp_alloc(&g_size_type, n);
  if (!out) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* v = PyLong_FromLongLong(sizes[static_cast<size_t>(i)]);
    if (!v) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i, v);
  }
  return out;
}

void init_size(py::module_& m) {
  PyTypeObject& t = g_size_type;
  // The module path of the Python class it replaces, so pickles made before load, and typename() holds.
  t.tp_name = "flambeau_core._size.Size";
  t.tp_basicsize = PyTuple_Type.tp_basicsize;
  t.tp_itemsize = PyTuple_Type.tp_itemsize;
  t.tp_flags = Py_TPFLAGS_DEFAULT;  // no Py_TPFLAGS_BASETYPE: torch.Size is final too
  t.tp_base = &PyTuple_Type;
  t.tp_new = &size_new;
  t.tp_repr = &size_repr;
  t.tp_str = &size_repr;
  t.tp_methods = g_size_methods;
  g_size_as_number.nb_add = &size_add;
  g_size_as_number.nb_multiply = &size_multiply;
  t.tp_as_number = &g_size_as_number;
  t.tp_as_mapping = &g_size_as_mapping;
  t.tp_doc =
      "Size(sizes=())\n"
      "--\n"
      "\n"
      "A tensor's sizes (PyTorch's torch.Size): a tuple of ints with numel(); slicing and +/* with a tuple\n"
      "keep the type. Tensor.shape and Tensor.size() return one.\n"
      "\n"
      ">>> import flambeau as fb\n"
      ">>> s = fb.Size([2, 3])\n"
      ">>> s, s[1:], s + (4,), s == (2, 3), fb.zeros(s).shape\n"
      "(flambeau.Size([2, 3]), flambeau.Size([3]), flambeau.Size([2, 3, 4]), True, flambeau.Size([2, 3]))";
  if (PyType_Ready(&t) < 0) throw py::error_already_set();
  Py_INCREF(&t);
  m.attr("Size") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&t));
}

}  // namespace flambeau::python
