#pragma once
// Shared by core's binding files. One file per topic, each exporting init_<topic>(m).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flambeau/ops.h"
#include "flambeau/python/bindings.h"

namespace py = pybind11;

namespace flambeau::python {
// Note [dtype singletons]
// A dtype returned to Python is the module's object (flambeau_core.float32),
// not a new instance per access, so `t.dtype is fb.float32` holds as in
// PyTorch (programs test dtypes with `is`) and `==` on the same object is an
// identity check (bind_dtype.cpp). Core's casts only: a dtype another
// package's bindings return is equal, not identical.
/// The dtype's module object (borrowed), or nullptr while init_dtype is still making them.
PyObject* dtype_object(ScalarType t);
}  // namespace flambeau::python

namespace pybind11::detail {
template <>
class type_caster<flambeau::ScalarType> : public type_caster_base<flambeau::ScalarType> {
 public:
  static handle cast(const flambeau::ScalarType& t, return_value_policy policy, handle parent) {
    if (PyObject* o = flambeau::python::dtype_object(t)) return handle(o).inc_ref();
    return type_caster_base<flambeau::ScalarType>::cast(t, policy, parent);
  }
  static handle cast(flambeau::ScalarType&& t, return_value_policy policy, handle parent) {
    return cast(static_cast<const flambeau::ScalarType&>(t), policy, parent);
  }
  static handle cast(const flambeau::ScalarType* t, return_value_policy policy, handle parent) {
    return t ? cast(*t, policy, parent) : none().release();
  }
};
}  // namespace pybind11::detail

namespace flambeau::python {

void init_dtype(py::module_& m);      // bind_dtype.cpp: dtype, device, promote_types
void init_size(py::module_& m);       // bind_size.cpp: Size, the tuple subclass shapes are (Note [Size is a C type])
void init_tensor(py::module_& m);     // bind_tensor.cpp: Tensor class, properties, item/tolist/repr, buffer
void init_allocator(py::module_& m);  // bind_allocator.cpp: allocator registry, Python/C-ABI allocators
void init_factories(py::module_& m);  // bind_factories.cpp: tensor(), zeros, ..., random, frombuffer
void init_views(py::module_& m);      // bind_views.cpp: views, __getitem__/__setitem__
void init_math(py::module_& m);       // bind_math.cpp: to/float/..., fill_, broadcast_shapes, result_type
/// python_ops_generated.cpp: every op of codegen/ops.yaml (Note [Python argument parser]).
void init_generated_ops(py::module_& m);
void init_runtime(py::module_& m);  // bind_runtime.cpp: threads, grad mode, abi tag
void init_device(py::module_& m);   // bind_device.cpp: streams, events, current device/stream, pin_memory
void init_profiler(py::module_& m); // bind_profiler.cpp: the profiler's recorder (Note [Observation])
void init_outargs(py::module_& m);  // bind_outargs.cpp: _copy_to_out, the out= contract for Python ops
void init_trace(py::module_& m);    // bind_trace.cpp: the op recorder (Note [Op recorder], op_recorder.h)
void init_conv(py::module_& m);  // bind_conv.cpp: _pack_conv_weight, _conv_packed (fb.compile's eval convs)

// Note [The GIL around kernels]
// Every binding converts its Python arguments with the GIL held, then runs the
// kernel without it, so other Python threads run meanwhile (as PyTorch does);
// the generated bindings do this in gen_core.py, hand-written ones through
// without_gil. Kernels call back into Python only through objects that take
// the GIL themselves (Python allocators, storages over Python memory:
// Note [Python objects in deleters] in flambeau/python/bindings.h). Pure view
// ops (metadata only) keep the GIL: releasing it would cost more than they do.

/// Note [Tensor slots] (bind_views.cpp): the handle a Tensor object (or a subclass instance) holds, read
/// straight from its pybind11 instance; nullptr for another object or one whose C++ part is not made yet.
inline const std::shared_ptr<TensorImpl>* tensor_holder(PyObject* obj) {
  const py::detail::type_info* ti = py::detail::flambeau_tensor_type_info();
  if (!ti || !PyObject_TypeCheck(obj, ti->type)) return nullptr;
  py::detail::value_and_holder v_h =
      reinterpret_cast<py::detail::instance*>(obj)->get_value_and_holder(ti, false);
  if (!v_h || !v_h.holder_constructed()) return nullptr;
  return &v_h.holder<std::shared_ptr<TensorImpl>>();
}

/// A new flambeau.Size of `sizes` (bind_size.cpp); nullptr with a Python error set.
PyObject* make_size(IntArrayRef sizes);

/// Runs f() with the GIL released (Note [The GIL around kernels]).
template <class F>
decltype(auto) without_gil(F&& f) {
  py::gil_scoped_release no_gil;
  return std::forward<F>(f)();
}

/// flambeau_core.FlambeauError, the Python class of flambeau::ValueError
/// (Note [Errors]); created by module.cpp before any binding can raise it.
PyObject* flambeau_error_type();

/// A binary op's operand: a Tensor, or a Python number (bool/int/float, or
/// anything with __index__/__float__) made a 0-dim wrapped-number tensor
/// (Note [Wrapped numbers]). TypeError naming `op` otherwise.
Tensor as_operand(py::handle obj, const char* op);
/// A Python number as a Scalar (bool, int or float kind); TypeError naming `op`.
Scalar as_scalar(py::handle obj, const char* op);
/// A Python int (or anything with __index__) as int64: TypeError naming `op`
/// and `what` for another type, RuntimeError for an int beyond int64.
int64_t as_int64(py::handle obj, const char* op, const char* what);
/// A random seed: a Python int in [-2**63, 2**64 - 1] (negative ones wrap), as PyTorch accepts.
uint64_t as_seed(py::handle obj, const char* op);
/// Sizes given as f(2, 3) or f((2, 3)) or f([2, 3]); TypeError/ValueError naming `op`.
Shape parse_shape(const py::args& args, const char* op);
Shape parse_int_sequence(py::handle obj, const char* op, const char* what);
/// A dtype argument: a flambeau dtype or None (-> fallback).
ScalarType parse_dtype(py::handle obj, ScalarType fallback, const char* op);
/// A device argument: a Device, a string such as "cpu", or None (-> cpu).
Device parse_device(py::handle obj, const char* op);
/// The device of a factory (tensor, zeros, arange, randint, ...): `obj` parsed,
/// or None -> the default device (Note [Default device]).
Device factory_device(py::handle obj, const char* op);
/// Whether `obj` is a flambeau.layout (flambeau.strided, flambeau.sparse_coo: flambeau_core.sparse.layout).
bool is_layout(PyObject* obj);
/// A factory's layout= argument: None or flambeau.strided pass; another layout (sparse_coo) raises
/// NotImplementedError naming `op` (PyTorch's error kind for a layout a factory has no kernel for),
/// anything else TypeError.
void check_layout(py::handle obj, const char* op);
/// The calling thread's default device for factories (cpu unless set).
Device default_device();
/// A copy of `self` on `device` (any pair of devices), cast to dtype.
Tensor to_device_copy(const Tensor& self, Device device, ScalarType dtype, bool non_blocking, const char* op);
/// `t` itself if on the cpu, else a synchronous copy to the cpu (item, tolist).
Tensor to_cpu_for_read(const Tensor& t);
/// A Python range as an int64 cpu tensor, made by arange (no Python list in between);
/// nullopt for anything else, or a range reaching beyond int64 (left to the generic path).
std::optional<Tensor> range_tensor(py::handle obj);
/// tensor(data) on the cpu with the inferred dtype, called from C++ (no Python call in between).
Tensor tensor_from_python(py::handle data);

}  // namespace flambeau::python
