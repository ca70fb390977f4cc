#pragma once
// Note [Python argument parser]
// The generated bindings (python_ops_generated.cpp, from codegen/ops.yaml)
// are plain CPython vectorcall functions, not pybind11 lambdas: each Python
// name has one ArgParser holding the signatures of its overloads, written as
// in the table ("max(Tensor self, int dim, bool keepdim=False)"). parse()
// binds positional and keyword arguments to the first signature whose
// parameter types accept them, so `max(t)`, `max(t, 0)` and `max(t, other)`
// are three overloads of one name, and an error names the op and what would
// have worked. Accessors convert a bound argument to its C++ type (a Python
// number becomes a wrapped-number tensor for TensorOrNumber: Note [Wrapped
// numbers]). Cheap type checks only: the conversion happens once, after
// matching.
#include <Python.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common.h"

namespace flambeau {
class Generator;
}

namespace flambeau::python {

enum class ArgKind : uint8_t {
  Tensor,
  TensorOrNumber,
  TensorList,
  Scalar,
  Int,
  IntList,
  Float,
  Bool,
  Dtype,
  MemoryFormat,
  Device,
  Generator,
  Str,
  Layout,  // a factory's layout=: Python only (check_layout)
};

struct ParamSpec {
  std::string name;
  ArgKind kind = ArgKind::Tensor;
  bool optional = false;  // None accepted ("Tensor?")
  bool kw_only = false;
  bool has_default = false;
  std::string default_text;  // as written in the table
  std::string type_text;     // "Tensor?", "int[]", ...
};

struct FunctionSignature {
  std::string name;
  std::vector<ParamSpec> params;
  size_t num_positional = 0;
  std::string text;  // "(Tensor input, int dim, bool keepdim=False)"
};

inline constexpr int kMaxParsedArgs = 16;  // the fused optimizer steps take 14
/// ParsedArgs::index when no signature matched and an argument overrides the function.
inline constexpr int kOverridden = -1;

class ArgParser;

/// The arguments of one call, bound to the parameters of the matched signature.
class ParsedArgs {
 public:
  int index = 0;  // which overload matched, or kOverridden
  PyObject* args[kMaxParsedArgs] = {};
  const FunctionSignature* sig = nullptr;
  py::object owned;  // a tuple made from varargs sizes (zeros(2, 3))

  bool is_none(int i) const { return !args[i] || args[i] == Py_None; }
  Tensor tensor(int i) const;
  Tensor tensor_or_number(int i) const;
  std::optional<Tensor> optional_tensor(int i) const;
  TensorList tensor_list(int i) const;
  Scalar scalar(int i) const;
  std::optional<Scalar> optional_scalar(int i) const;
  int64_t int64(int i) const;
  std::optional<int64_t> optional_int64(int i) const;
  Shape int_list(int i) const;
  std::optional<Shape> optional_int_list(int i) const;
  double float64(int i) const;
  std::optional<double> optional_float64(int i) const;
  bool boolean(int i) const;
  std::optional<bool> optional_boolean(int i) const;
  ScalarType dtype(int i) const;
  std::optional<ScalarType> optional_dtype(int i) const;
  MemoryFormat memory_format(int i) const;
  std::optional<MemoryFormat> optional_memory_format(int i) const;
  Device device(int i) const;
  std::optional<Device> optional_device(int i) const;
  Generator* generator(int i) const;
  /// layout=: None (omitted) or flambeau.strided; another layout raises NotImplementedError naming the op.
  void check_layout(int i) const;
  std::string string(int i) const;
  std::optional<std::string> optional_string(int i) const;

 private:
  const char* op() const;
  const ParamSpec& param(int i) const { return sig->params[i]; }
};

class ArgParser {
 public:
  /// `signatures`: parameter lists as in the table, without the op name.
  ArgParser(const char* py_name, std::initializer_list<const char*> signatures);
  /// Binds (args, nargs, kwnames) of a vectorcall; TypeError naming the op if nothing matches,
  /// unless an argument defines __torch_function__: then index is kOverridden.
  ParsedArgs parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) const;
  const char* name() const { return name_.c_str(); }

 private:
  bool try_bind(const FunctionSignature& s, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                ParsedArgs& out, std::string* why) const;
  std::string name_;
  std::vector<FunctionSignature> sigs_;
};

/// Whether a Python object is a flambeau Tensor (a cached type check).
bool is_tensor(PyObject* obj);

// Note [__torch_function__]
// PyTorch's override protocol: an argument whose type defines
// `__torch_function__(cls, func, types, args=(), kwargs=None)` takes over a
// function it is passed to (flambeau.func.vmap's batched tensors use it, as
// do user types that wrap tensors). flambeau looks for one only when no
// signature accepts the arguments, so the protocol costs a call nothing
// (one compare of the matched index); a Tensor subclass is a Tensor and
// is not intercepted. Arguments and the items of list arguments are
// searched; each overriding type is asked in turn (subclasses first) until
// one returns something other than NotImplemented.
/// Whether an argument of the call (or an item of a list argument) overrides the function.
bool has_torch_function(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
/// Wraps the module's pybind11 functions `names` so that a call no overload accepts goes to an overriding
/// argument's __torch_function__ (the pybind11 TypeError otherwise); a successful call pays one C call.
void make_overridable(py::module_& m, std::initializer_list<const char*> names);
/// Calls the overriding arguments' __torch_function__ with the function (`self`'s method `name` when
/// `method`, else `self` module's function `name`), the types, args and kwargs; new reference.
PyObject* handle_torch_function(const char* name, bool method, PyObject* self, PyObject* const* args,
                                Py_ssize_t nargs, PyObject* kwnames);
/// The other operand of a binary operator: a Tensor; unless `strict`, also a
/// Python number (a wrapped-number tensor), a nested list/tuple or a NumPy
/// array (copied, as in PyTorch: t == [1, 2] compares elementwise). False if
/// Python should try the other operand's reflected method.
bool operator_operand(PyObject* obj, const char* op, bool strict, Tensor& out);
/// Returns a Tensor to Python (new reference); identity is kept (Note [Python Tensor identity]).
PyObject* wrap(const Tensor& t);
PyObject* wrap(const TensorList& ts);
PyObject* wrap(bool v);
PyObject* wrap(int64_t v);
PyObject* wrap(double v);
/// A named tuple (like torch.return_types.max) of the given tensors.
PyObject* wrap_named(const char* type_name, std::initializer_list<const char*> fields,
                     std::initializer_list<Tensor> values);
/// Translates the C++ exception being handled into a Python error (call in a catch block).
void set_python_error();
/// The `out=` contract: `out` must have the result's shape and a dtype the result casts to.
/// Writes result into out= (resized to it as PyTorch, Note [out= resizing]); exact_dtype for the
/// tensors of out=(a, b) (PyTorch wants their dtypes exactly), else out's dtype must hold result's.
void copy_to_out(const char* op, const Tensor& result, Tensor& out, bool exact_dtype = false);
/// Resizes out= to `sizes` as PyTorch (Note [out= resizing]): silently when empty, else with a UserWarning.
void resize_out(const char* op, Tensor& out, IntArrayRef sizes);
/// RuntimeError when grad mode records and out= or the result requires grad (Note [out= and autograd]).
void check_out_autograd(const char* op, const Tensor& result, const Tensor& out);
/// Note [out= dtypes] (gen_core.py): TypeError unless the result dtype `from` casts to out's `to`.
void check_out_cast(const char* op, ScalarType from, ScalarType to);
/// Note [out= dtypes]: all/any write a bool or uint8 out= only (TypeError otherwise).
void check_out_logical(const char* op, const Tensor& out);
/// out=(a, b, ...) holds as many tensors as the op returns (TypeError naming op otherwise).
void check_out_count(const char* op, const TensorList& outs, size_t n);

/// Registers a generated function (METH_FASTCALL | METH_KEYWORDS) on a module or the Tensor type.
void add_function(py::module_& m, PyMethodDef* def);
void add_method(py::handle cls, PyMethodDef* def);

}  // namespace flambeau::python

// Wraps the body of a generated binding: C++ errors become Python exceptions.
#define FB_PY_BEGIN try {
#define FB_PY_END                           \
  }                                         \
  catch (...) {                             \
    ::flambeau::python::set_python_error(); \
    return nullptr;                         \
  }
