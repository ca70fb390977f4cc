// NumPy <-> flambeau without copies: from_numpy, Tensor.numpy(), __array__,
// __array_interface__.
//
// NumPy's C API is loaded lazily (on the first call that needs it), so that
// `import flambeau_interop` does not import NumPy; from_numpy receives an
// ndarray, so NumPy is already loaded by then.
//
// Note [NumPy lifetimes]
//  * from_numpy: the tensor's storage holds a strong reference to the ndarray
//    (not to its base), dropped when the storage dies (Note [Releasing Python
//    objects from storage deleters]). Views and DLPack exports of the tensor
//    share that storage, so the array lives exactly as long as any of them.
//  * Tensor.numpy(): the ndarray's `base` is the Tensor object itself (as in
//    PyTorch), which keeps the tensor's storage alive as long as the array or
//    any view of it lives.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <bit>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "interop.h"

namespace flambeau::interop {
namespace {

void ensure_numpy() {
  if (PyArray_API) return;
  if (_import_array() < 0) {
    py::error_already_set err;
    throw py::import_error("[numpy] flambeau-interop needs NumPy for this call (pip install numpy): " +
                           std::string(err.what()));
  }
}

constexpr const char* kSupported =
    "bool, uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16, float32, float64, complex64, "
    "complex128";

/// The flambeau dtype of a NumPy dtype, or TypeError naming it.
ScalarType dtype_from_numpy(PyArrayObject* arr, const char* op) {
  const int itemsize = static_cast<int>(PyArray_ITEMSIZE(arr));
  switch (PyArray_TYPE(arr)) {
    case NPY_BOOL:
      return ScalarType::Bool;
    case NPY_UBYTE:
      return ScalarType::UInt8;
    case NPY_BYTE:
      return ScalarType::Int8;
    case NPY_SHORT:
      return ScalarType::Int16;
    // C int/long/long long: pick by width, which differs between platforms.
    case NPY_INT:
    case NPY_LONG:
    case NPY_LONGLONG:
      if (itemsize == 4) return ScalarType::Int32;
      if (itemsize == 8) return ScalarType::Int64;
      break;
    case NPY_USHORT:
      return ScalarType::UInt16;
    case NPY_UINT:
    case NPY_ULONG:
    case NPY_ULONGLONG:
      if (itemsize == 4) return ScalarType::UInt32;
      if (itemsize == 8) return ScalarType::UInt64;
      break;
    case NPY_CFLOAT:
      return ScalarType::ComplexFloat;
    case NPY_CDOUBLE:
      return ScalarType::ComplexDouble;
    case NPY_HALF:
      return ScalarType::Float16;
    case NPY_FLOAT:
      return ScalarType::Float32;
    case NPY_DOUBLE:
      return ScalarType::Float64;
    default:
      break;
  }
  const std::string name = py::str(py::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(arr))));
  throw TypeError(detail::cat_str("[", op, "] can't convert a NumPy array of dtype ", name,
                                  "; supported dtypes: ", kSupported));
}

int numpy_typenum(ScalarType t, const char* op) {
  switch (t) {
    case ScalarType::Bool:
      return NPY_BOOL;
    case ScalarType::UInt8:
      return NPY_UINT8;
    case ScalarType::Int8:
      return NPY_INT8;
    case ScalarType::Int16:
      return NPY_INT16;
    case ScalarType::Int32:
      return NPY_INT32;
    case ScalarType::Int64:
      return NPY_INT64;
    case ScalarType::Float16:
      return NPY_FLOAT16;
    case ScalarType::Float32:
      return NPY_FLOAT32;
    case ScalarType::Float64:
      return NPY_FLOAT64;
    case ScalarType::UInt16:
      return NPY_UINT16;
    case ScalarType::UInt32:
      return NPY_UINT32;
    case ScalarType::UInt64:
      return NPY_UINT64;
    case ScalarType::ComplexFloat:
      return NPY_COMPLEX64;
    case ScalarType::ComplexDouble:
      return NPY_COMPLEX128;
    default:
      break;
  }
  throw TypeError(detail::cat_str("[", op, "] dtype ", dtype_name(t),
                                  " has no NumPy equivalent; cast the tensor to float32 first"));
}

Tensor from_numpy(py::handle obj) {
  ensure_numpy();
  FB_CHECK_TYPE(PyArray_Check(obj.ptr()), "[from_numpy] expected a numpy.ndarray, got ", type_name(obj));
  auto* arr = reinterpret_cast<PyArrayObject*>(obj.ptr());
  const ScalarType dtype = dtype_from_numpy(arr, "from_numpy");
  FB_CHECK_TYPE(PyArray_ISNOTSWAPPED(arr), "[from_numpy] the array's byte order (dtype ",
                py::str(py::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(arr)))).cast<std::string>(),
                ") is not the machine's; convert it first with arr.astype(arr.dtype.newbyteorder('='))");

  const int ndim = PyArray_NDIM(arr);
  const npy_intp* dims = PyArray_DIMS(arr);
  const npy_intp* byte_strides = PyArray_STRIDES(arr);
  const auto isz = static_cast<int64_t>(itemsize(dtype));
  Shape sizes(dims, dims + ndim);
  Shape strides(ndim);
  // as_strided arrays can have shapes a tensor cannot (Note [Size overflow] in flambeau/tensor_impl.h).
  const bool empty = shape_numel(sizes, "from_numpy") == 0;
  for (int d = 0; d < ndim; ++d) {
    const int64_t bs = byte_strides[d];
    if (dims[d] <= 1 || empty) {
      // The stride of a dim that never moves is irrelevant (NumPy may leave any value there).
      strides[d] = bs >= 0 && bs % isz == 0 ? bs / isz : 0;
      continue;
    }
    FB_CHECK_VALUE(bs >= 0, "[from_numpy] the array has a negative stride (", bs, " bytes in dim ", d,
                   ", shape ", shape_str(sizes),
                   "); flambeau tensors don't support negative strides: pass a copy (arr.copy())");
    FB_CHECK_VALUE(bs % isz == 0, "[from_numpy] the array's strides are not a multiple of its element size (",
                   bs, " bytes in dim ", d, " for ", isz, "-byte elements): pass a copy (arr.copy())");
    strides[d] = bs / isz;
  }

  // Kernels (and the compiler's vectorized loops) assume elements at
  // multiples of their size; misaligned memory could fault, so it is refused.
  FB_CHECK_VALUE(reinterpret_cast<uintptr_t>(PyArray_DATA(arr)) % isz == 0 || empty,
                 "[from_numpy] the array's data is not aligned to its ", isz,
                 "-byte elements; pass a copy (arr.copy())");
  if (!PyArray_ISWRITEABLE(arr)) {
    // As PyTorch: share the memory anyway, and say that writing is undefined.
    if (PyErr_WarnEx(PyExc_UserWarning,
                     "[from_numpy] the given NumPy array is not writable, and flambeau tensors are always "
                     "writable: writing to this tensor is undefined behavior. Copy the array "
                     "(arr.copy()) or make it writable to silence this warning.",
                     1) < 0)
      throw py::error_already_set();
  }

  // Note [NumPy lifetimes]. Once the storage exists, it owns the reference.
  PyObject* owner = obj.ptr();
  Py_INCREF(owner);
  Storage storage;
  try {
    const auto nbytes = static_cast<size_t>(span_bytes(sizes, strides, dtype, "from_numpy"));
    storage = StorageImpl::from_external(PyArray_DATA(arr), nbytes, Device(DeviceType::CPU),
                                         [owner](void*) { decref_with_gil(owner); });
  } catch (...) {
    Py_DECREF(owner);
    throw;
  }
  return Tensor(
      std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), 0));
}

void check_exportable(const Tensor& t, bool force, const char* op) {
  FB_CHECK_TYPE(t.device().is_cpu(), "[", op, "] can't convert a tensor on ", t.device().str(),
                " to NumPy; call .cpu() first to copy it to host memory (tensor.cpu().numpy())");
  // PyTorch refuses only while grad mode is on: under no_grad the array cannot enter a graph.
  FB_CHECK(force || !t.requires_grad() || !grad_mode_enabled(), "[", op,
           "] can't convert a tensor that requires grad to NumPy; use tensor.detach().numpy() instead");
}

/// A NumPy array viewing `self`'s memory; its base is `self`.
py::object tensor_to_numpy(py::handle self, bool force, const char* op) {
  FB_CHECK_TYPE(py::isinstance<TensorImpl>(self), "[", op, "] expected a Tensor, got ", type_name(self));
  const Tensor t = self.cast<Tensor>();
  check_exportable(t, force, op);
  const int typenum = numpy_typenum(t.dtype(), op);
  ensure_numpy();

  const int ndim = static_cast<int>(t.dim());
  const auto isz = static_cast<npy_intp>(itemsize(t.dtype()));
  std::vector<npy_intp> dims(t.sizes().begin(), t.sizes().end());
  std::vector<npy_intp> byte_strides(ndim);
  for (int d = 0; d < ndim; ++d) byte_strides[d] = static_cast<npy_intp>(t.strides()[d]) * isz;
  // An empty storage may have no address; NumPy would then allocate memory of
  // its own, so hand it a valid (never read) address instead.
  alignas(16) static char empty_data[16];
  void* data = t.data_ptr() ? t.data_ptr() : static_cast<void*>(empty_data);
  t.impl()->storage()->mark_exported();  // Note [Moving a storage's memory] (storage.h)

  PyObject* arr = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(typenum), ndim, dims.data(),
                                       byte_strides.data(), data, NPY_ARRAY_WRITEABLE, nullptr);
  if (!arr) throw py::error_already_set();
  // Note [NumPy lifetimes]: SetBaseObject steals the reference.
  Py_INCREF(self.ptr());
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), self.ptr()) < 0) {
    Py_DECREF(arr);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(arr);
}

/// NumPy's array-interface type string: '<f4', '|b1', ...
std::string typestr(ScalarType t) {
  const char* kind = nullptr;
  switch (t) {
    case ScalarType::Bool:
      kind = "b";
      break;
    case ScalarType::UInt8:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64:
      kind = "u";
      break;
    case ScalarType::ComplexFloat:
    case ScalarType::ComplexDouble:
      kind = "c";
      break;
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
      kind = "i";
      break;
    case ScalarType::Float16:
    case ScalarType::Float32:
    case ScalarType::Float64:
      kind = "f";
      break;
    default:
      throw TypeError(detail::cat_str("[__array_interface__] dtype ", dtype_name(t),
                                      " has no NumPy equivalent; cast the tensor to float32 first"));
  }
  const size_t n = itemsize(t);
  const char order = n == 1 ? '|' : (std::endian::native == std::endian::little ? '<' : '>');
  return detail::cat_str(order, kind, n);
}

py::dict array_interface(const Tensor& t) {
  check_exportable(t, false, "__array_interface__");
  const auto isz = static_cast<int64_t>(itemsize(t.dtype()));
  py::tuple shape(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) shape[d] = py::int_(t.sizes()[d]);
  py::object strides = py::none();
  if (!t.is_contiguous()) {
    py::tuple s(t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) s[d] = py::int_(t.strides()[d] * isz);
    strides = s;
  }
  py::dict d;
  d["version"] = 3;
  d["shape"] = shape;
  d["typestr"] = typestr(t.dtype());
  t.impl()->storage()->mark_exported();  // Note [Moving a storage's memory] (storage.h)
  d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(t.data_ptr()), false);
  d["strides"] = strides;
  return d;
}

}  // namespace

void init_numpy(py::module_& m, TensorClass& cls) {
  m.def("from_numpy", &from_numpy, py::arg("ndarray"),
        R"(A tensor sharing memory with a NumPy array (no copy).

Writes through either are seen by the other; the array is kept alive as long
as the tensor's memory is in use. Raises TypeError for a dtype flambeau lacks
or a non-native byte order, ValueError for negative strides.

Example:
    >>> import numpy as np, flambeau_interop as fi
    >>> a = np.arange(3.0)
    >>> t = fi.from_numpy(a)
    >>> a[0] = 7.0
    >>> t.tolist()
    [7.0, 1.0, 2.0]
)");

  cls.def(
      "numpy", [](py::handle self, bool force) { return tensor_to_numpy(self, force, "numpy"); },
      py::kw_only(), py::arg("force") = false,
      R"(A NumPy array sharing this tensor's memory (no copy); its ``base`` is the tensor.

Raises RuntimeError for a tensor that requires grad unless ``force=True``.

Example:
    >>> t = flambeau_core.zeros(3)
    >>> a = t.numpy()
    >>> a[0] = 1.0   # also writes t[0]
    >>> t.tolist()
    [1.0, 0.0, 0.0]
)");

  cls.def(
      "__array__",
      [](py::handle self, py::object dtype, py::object copy) -> py::object {
        py::object arr = tensor_to_numpy(self, false, "__array__");
        if (!dtype.is_none()) {
          py::object np = py::module_::import("numpy");
          py::object want = np.attr("dtype")(dtype);
          if (!want.equal(arr.attr("dtype"))) {
            FB_CHECK_VALUE(copy.is_none() || py::bool_(copy), "[__array__] converting ",
                           py::str(arr.attr("dtype")).cast<std::string>(), " to ",
                           py::str(want).cast<std::string>(), " needs a copy, but copy=False was given");
            return arr.attr("astype")(want);
          }
        }
        if (!copy.is_none() && py::bool_(copy)) return arr.attr("copy")();
        return arr;
      },
      py::arg("dtype") = py::none(), py::arg("copy") = py::none());

  cls.def_property_readonly("__array_interface__", &array_interface,
                            "NumPy's array interface (version 3) describing this tensor's memory.");
}

}  // namespace flambeau::interop
