#pragma once
// Custom autograd Functions written in Python (flambeau_autograd.Function),
// and tensor hooks that call Python. The engine runs backward without the GIL
// (Note [Backward without the GIL] in module.cpp), so both take it to call
// Python, and drop their Python objects with it, from whatever thread they die
// on (Note [Python objects in deleters] in core's flambeau/python/bindings.h).
#include "engine.h"
#include "flambeau/python/bindings.h"

namespace flambeau::autograd {

namespace py = pybind11;

using python::release_with_gil;

/// A tensor hook (Tensor.register_hook): fn(grad) -> new grad or None.
class PyTensorHook final : public FunctionPreHook {
 public:
  explicit PyTensorHook(py::object fn) : fn_(std::move(fn)) {}
  ~PyTensorHook() override { release_with_gil(fn_); }
  Tensor operator()(const Tensor& grad) override;

 private:
  py::object fn_;
};

/// A node hook (Node.register_hook): fn(grad_inputs, grad_outputs) -> new grad_inputs or None.
class PyNodePostHook final : public FunctionPostHook {
 public:
  explicit PyNodePostHook(py::object fn) : fn_(std::move(fn)) {}
  ~PyNodePostHook() override { release_with_gil(fn_); }
  variable_list operator()(const variable_list& grad_inputs, const variable_list& grad_outputs) override;

 private:
  py::object fn_;
};

void init_python_function(py::module_& m);

}  // namespace flambeau::autograd
