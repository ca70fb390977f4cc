#pragma once
// Note [Op recorder]
// A recorder sees every op call a Python program makes, at the level the
// program makes it: while a recorder is active on a thread, each op called
// from Python on that thread (a function of flambeau_core, a Tensor method,
// an operator such as `a + b` or `a += b`) is reported to a Python callback
// as (name, args, kwargs, result), after it ran:
//   * name: the Python name (`add`, `add_` for `+=`, `view`, `conv2d`, ...);
//   * args: the Python objects the program passed, `self` first for a
//     method (`x.view(2, 3)` -> (x, 2, 3)); an operator reports its operands
//     in the op's order (`2 - x` -> sub(2, x)); kwargs: a dict or None;
//   * result: the object returned to the program (a Tensor keeps its Python
//     identity, Note [Python Tensor identity], so a later call's argument is
//     recognised as an earlier call's result by `is`); a write that returns
//     None (`x[i] = v`, reported as __setitem__(x, i, v)) reports `self`.
// While the callback runs, _C._op_call_info() tells it (method, before):
// whether the arguments follow the Tensor method's signature (`x.where(c, y)`,
// self first) or the function's (`fb.where(c, x, y)`, and operators, which
// report their operands in the function's order); and, for a write of a
// hand-written binding (kWrite: __setitem__, index_put_, fill_, uniform_,
// normal_), a copy of the written tensor as it was before the write (made only
// while recording), else None. The callback's own signature stays 4 arguments,
// so a recorder that forwards calls to the one it replaced keeps working.
// Ops that C++ runs inside another op (composites, autograd, kernels) are
// not reported: the recorded graph is the program's, which is what an
// exporter (fb.onnx) and a graph capture (fb.compile) want. Calls made by the
// callback itself, and by the op while it runs, are not reported either.
//
// Cost: the generated bindings (gen_core.py) and the hand-written ones
// wrapped by `recorded` begin with op_recorder_on(): one relaxed load of a
// process-wide count of active recorders and a predictable branch while no
// thread records. Only when some thread records is this thread's state read.
// The Python API is flambeau_core._trace (record_ops, OpCall).
#include <Python.h>

#include <atomic>
#include <functional>
#include <type_traits>
#include <utility>

#include "common.h"

namespace flambeau::python {

/// How many threads have a recorder set (Note [Op recorder]).
extern std::atomic<int> g_op_recorders;
/// Whether this thread records and is not inside a recorded call or the callback.
bool op_recorder_this_thread();

/// Note [Op recorder]: the one check at the top of every recordable binding.
inline bool op_recorder_on() {
  return g_op_recorders.load(std::memory_order_relaxed) != 0 && op_recorder_this_thread();
}

using FastcallFn = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);

/// Runs a generated vectorcall binding `fn` (not recorded itself) and reports it;
/// `method`: `self` is the Tensor, reported as the first argument.
PyObject* record_fastcall(const char* name, bool method, FastcallFn fn, PyObject* self, PyObject* const* args,
                          Py_ssize_t nargs, PyObject* kwnames);
/// A binary operator `fn(self, other)`, reported as name(self, other), or name(other, self) if `reflected`.
PyObject* record_binary(const char* name, PyObject* (*fn)(PyObject*, PyObject*), PyObject* self, PyObject* other,
                        bool reflected);
/// A unary operator `fn(self)` (the second parameter is METH_NOARGS' unused one).
PyObject* record_unary(const char* name, PyObject* (*fn)(PyObject*, PyObject*), PyObject* self);
/// How a hand-written binding is reported: a function (`fb.narrow(x, ...)`), a Tensor method (`x.narrow(...)`,
/// self first), and whether it writes args[0] (its value before the write is kept, and a None result is reported
/// as args[0]).
inline constexpr unsigned kFunction = 0, kMethod = 1, kWrite = 2;

/// Runs `call` (not recorded itself) and reports name(*args) -> its result (hand-written bindings).
py::object record_call(const char* name, py::tuple args, const std::function<py::object()>& call,
                       unsigned how = kMethod);

namespace recorder_detail {
template <class T>
py::object to_object(T&& v) {
  if constexpr (std::is_base_of_v<py::handle, std::decay_t<T>>)
    return py::reinterpret_borrow<py::object>(v);
  else
    return py::cast(std::forward<T>(v));
}

template <class T>
void append_reported(py::list& out, const T& v) {
  if constexpr (std::is_same_v<T, py::args>) {
    for (py::handle h : v) out.append(h);
  } else {
    out.append(to_object(v));
  }
}

template <class R, class F, class... A>
py::object invoke(const F& f, A&&... a) {
  if constexpr (std::is_void_v<R>) {
    f(std::forward<A>(a)...);
    return py::none();
  } else {
    return to_object(f(std::forward<A>(a)...));
  }
}

template <class F, class R, class... A>
auto recorded_impl(const char* name, unsigned how, F f, R (F::*)(A...) const) {
  return [name, how, f = std::move(f)](A... a) -> py::object {
    if (!op_recorder_on()) [[likely]]
      return invoke<R>(f, std::forward<A>(a)...);
    py::list reported;
    (append_reported(reported, a), ...);
    return record_call(
        name, py::tuple(reported), [&]() -> py::object { return invoke<R>(f, std::forward<A>(a)...); }, how);
  };
}
}  // namespace recorder_detail

/// A hand-written pybind11 binding (a non-generic lambda) made recordable under
/// `name` (Note [Op recorder]): its converted arguments are reported positionally,
/// a trailing `py::args` spread as the program wrote it (`x.view(2, 3)`); `how`:
/// kMethod for a Tensor method, kFunction for a module function, | kWrite for a write.
template <class F>
auto recorded(const char* name, F f, unsigned how = kMethod) {
  return recorder_detail::recorded_impl(name, how, std::move(f), &F::operator());
}
/// The same for a plain function.
template <class R, class... A>
auto recorded(const char* name, R (*fn)(A...), unsigned how = kMethod) {
  return recorded(name, [fn](A... a) -> R { return fn(std::forward<A>(a)...); }, how);
}

}  // namespace flambeau::python
