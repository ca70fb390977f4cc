// The op recorder (Note [Op recorder] in op_recorder.h) for flambeau_core/_trace.py.
#include "op_recorder.h"

namespace flambeau::python {

std::atomic<int> g_op_recorders{0};

namespace {

struct RecorderState {
  PyObject* callback = nullptr;  // owned; nullptr when this thread does not record
  bool busy = false;             // inside a recorded call or the callback: nothing is reported
  // The call being reported, for _op_call_info() while the callback runs (Note [Op recorder]).
  bool reporting = false;
  bool method = false;
  PyObject* before = nullptr;  // borrowed: the written tensor's copy from before a kWrite call
};

thread_local RecorderState tl_recorder;

/// Marks this thread busy for its lifetime, so the op being recorded and the callback are not reported.
class BusyScope {
 public:
  BusyScope() { tl_recorder.busy = true; }
  ~BusyScope() { tl_recorder.busy = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

/// Calls the callback with (name, args, kwargs, result); steals nothing. Returns false with the Python error set.
bool report(const char* name, PyObject* args, PyObject* kwargs, PyObject* result, bool method,
            PyObject* before = nullptr) {
  PyObject* cb = tl_recorder.callback;
  if (!cb) return true;  // the callback unset itself meanwhile
  Py_INCREF(cb);
  RecorderState& st = tl_recorder;
  const bool was_reporting = st.reporting, was_method = st.method;
  PyObject* was_before = st.before;
  st.reporting = true;
  st.method = method;
  st.before = before;
  PyObject* r = PyObject_CallFunction(cb, "sOOO", name, args, kwargs ? kwargs : Py_None, result);
  st.reporting = was_reporting;
  st.method = was_method;
  st.before = was_before;
  Py_DECREF(cb);
  if (!r) return false;
  Py_DECREF(r);
  return true;
}

/// Reports and hands `result` back (new reference), or nullptr if the callback raised.
PyObject* finish(const char* name, PyObject* args, PyObject* kwargs, PyObject* result, bool method) {
  if (!result) return nullptr;
  if (!report(name, args, kwargs, result, method)) {
    Py_DECREF(result);
    return nullptr;
  }
  return result;
}

/// finish() for positional arguments only; steals `args` (nullptr: packing failed) and `result`.
PyObject* finish_packed(const char* name, PyObject* args, PyObject* result) {
  if (!args) {
    Py_DECREF(result);
    return nullptr;
  }
  PyObject* out = finish(name, args, nullptr, result, /*method=*/false);  // operators: the function's order
  Py_DECREF(args);
  return out;
}

/// Installs `callback` (None: stops) on this thread; returns the one it replaces (or None).
py::object set_op_recorder(py::handle callback) {
  if (!callback.is_none() && !PyCallable_Check(callback.ptr()))
    throw py::type_error("[_set_op_recorder] expected a callable or None, got " +
                         std::string(Py_TYPE(callback.ptr())->tp_name));
  PyObject* previous = tl_recorder.callback;
  PyObject* next = callback.is_none() ? nullptr : callback.ptr();
  Py_XINCREF(next);
  tl_recorder.callback = next;
  if (!previous && next) g_op_recorders.fetch_add(1, std::memory_order_relaxed);
  if (previous && !next) g_op_recorders.fetch_sub(1, std::memory_order_relaxed);
  return previous ? py::reinterpret_steal<py::object>(previous) : py::none();
}

}  // namespace

bool op_recorder_this_thread() { return tl_recorder.callback && !tl_recorder.busy; }

PyObject* record_fastcall(const char* name, bool method, FastcallFn fn, PyObject* self, PyObject* const* args,
                          Py_ssize_t nargs, PyObject* kwnames) {
  BusyScope busy;
  PyObject* result = fn(self, args, nargs, kwnames);
  if (!result) return nullptr;
  const Py_ssize_t first = method ? 1 : 0;
  PyObject* positional = PyTuple_New(nargs + first);
  PyObject* kwargs = nullptr;
  if (!positional) {
    Py_DECREF(result);
    return nullptr;
  }
  if (method) {
    Py_INCREF(self);
    PyTuple_SET_ITEM(positional, 0, self);
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(positional, first + i, args[i]);
  }
  if (kwnames && PyTuple_GET_SIZE(kwnames) > 0) {
    kwargs = PyDict_New();
    for (Py_ssize_t i = 0; kwargs && i < PyTuple_GET_SIZE(kwnames); ++i) {
      if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) Py_CLEAR(kwargs);
    }
    if (!kwargs) {
      Py_DECREF(positional);
      Py_DECREF(result);
      return nullptr;
    }
  }
  PyObject* out = finish(name, positional, kwargs, result, method);
  Py_DECREF(positional);
  Py_XDECREF(kwargs);
  return out;
}

PyObject* record_binary(const char* name, PyObject* (*fn)(PyObject*, PyObject*), PyObject* self, PyObject* other,
                        bool reflected) {
  BusyScope busy;
  PyObject* result = fn(self, other);
  // NotImplemented: Python tries the other operand's method, which reports itself if it is ours.
  if (!result || result == Py_NotImplemented) return result;
  return finish_packed(name, reflected ? PyTuple_Pack(2, other, self) : PyTuple_Pack(2, self, other), result);
}

PyObject* record_unary(const char* name, PyObject* (*fn)(PyObject*, PyObject*), PyObject* self) {
  BusyScope busy;
  PyObject* result = fn(self, nullptr);
  if (!result) return nullptr;
  return finish_packed(name, PyTuple_Pack(1, self), result);
}

py::object record_call(const char* name, py::tuple args, const std::function<py::object()>& call, unsigned how) {
  py::object result;
  {
    BusyScope busy;
    const bool write = (how & kWrite) && args.size() > 0;
    // The written tensor's values before the write: a tracer with no value of its own for it (a tensor made by an
    // unreported factory) needs them.
    py::object before = write ? args[0].attr("clone")() : py::object();
    result = call();
    py::object reported = write && result.is_none() ? py::reinterpret_borrow<py::object>(args[0]) : result;
    if (!report(name, args.ptr(), nullptr, reported.ptr(), (how & kMethod) != 0, before.ptr()))
      throw py::error_already_set();
  }
  return result;
}

void init_trace(py::module_& m) {
  m.def("_set_op_recorder", &set_op_recorder, py::arg("callback"),
        "Note [Op recorder]: makes callback(name, args, kwargs, result) see every op this thread calls from "
        "Python (None stops); returns the callback it replaces. Use flambeau_core._trace.record_ops.");
  m.def(
      "_op_recorder",
      [] {
        PyObject* cb = tl_recorder.callback;
        return cb ? py::reinterpret_borrow<py::object>(cb) : py::object(py::none());
      },
      "This thread's op recorder callback, or None.");
  m.def(
      "_op_recorder_on", [] { return op_recorder_on(); },
      "Whether an op called now would be reported (a recorder is set on this thread and no recorded call runs).");
  m.def(
      "_record_call",
      [](const std::string& name, py::handle fn, py::tuple args, py::object kwargs) -> py::object {
        if (!op_recorder_on()) return fn(*args, **kwargs.cast<py::dict>());
        py::object result;
        {
          BusyScope busy;
          result = fn(*args, **kwargs.cast<py::dict>());
          if (!report(name.c_str(), args.ptr(), PyDict_GET_SIZE(kwargs.ptr()) ? kwargs.ptr() : nullptr,
                      result.ptr(), /*method=*/false))
            throw py::error_already_set();
        }
        return result;
      },
      py::arg("name"), py::arg("fn"), py::arg("args"), py::arg("kwargs"),
      "Note [Op recorder]: runs fn(*args, **kwargs) (its own ops not reported) and reports it as the op `name`, "
      "called as a function; how an operator defined outside core (flambeau.library) is recorded.");
  m.def(
      "_op_call_info",
      []() -> py::object {
        const RecorderState& st = tl_recorder;
        if (!st.reporting) return py::none();
        return py::make_tuple(st.method, st.before ? py::reinterpret_borrow<py::object>(st.before) : py::none());
      },
      "Note [Op recorder]: while a recorder callback runs, (method, before) of the call it is told about: whether "
      "the arguments follow the Tensor method's signature (self first) rather than the function's, and a copy of "
      "the written tensor from before a write (None for other calls). None outside a callback.");
}

}  // namespace flambeau::python
