// DLPack for flambeau tensors, both ways: Tensor.__dlpack__ and
// __dlpack_device__ (producer), from_dlpack (consumer). Note [DLPack capsules]
// in dlpack.h gives the ownership rules both sides follow.
//
// Note [DLPack lifetimes]
//  * Export: the managed tensor's context holds a reference to the tensor's
//    Storage (plus its own copy of shape and strides), so the memory lives
//    until the consumer calls our deleter, even if every flambeau Tensor is
//    gone; an unconsumed capsule calls the deleter when it is collected.
//  * Import: the new tensor's Storage wraps the producer's memory and calls
//    the producer's deleter exactly once, when the last flambeau owner of that
//    storage (tensor, view, NumPy array, re-export) dies.
//
// Read-only imports: DLPack 1.x producers may flag a tensor read-only (NumPy
// does for a non-writable array). flambeau has no read-only tensors; like
// PyTorch we share the memory anyway (no copy) and, like PyTorch's
// from_numpy, warn that writing to it is undefined behavior.
#include "dlpack.h"

#include <Python.h>

#include <cstring>

#include "flambeau/device_backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "interop.h"

namespace flambeau::interop {
namespace {

constexpr bool is_versioned_v(const DLManagedTensorVersioned*) { return true; }
constexpr bool is_versioned_v(const DLManagedTensor*) { return false; }
template <class Managed>
constexpr bool kVersioned = is_versioned_v(static_cast<const Managed*>(nullptr));

template <class Managed>
constexpr const char* unused_name() {
  return kVersioned<Managed> ? kCapsuleVersioned : kCapsuleLegacy;
}
template <class Managed>
constexpr const char* used_name() {
  return kVersioned<Managed> ? kCapsuleVersionedUsed : kCapsuleLegacyUsed;
}

// ---- dtypes ----

DLDataType to_dl_dtype(ScalarType t) {
  const auto bits = static_cast<uint8_t>(itemsize(t) * 8);
  switch (t) {
    case ScalarType::Bool:
      return {kDLBool, 8, 1};
    case ScalarType::UInt8:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64:
      return {kDLUInt, bits, 1};
    case ScalarType::ComplexFloat:
    case ScalarType::ComplexDouble:
      return {kDLComplex, bits, 1};
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
      return {kDLInt, bits, 1};
    case ScalarType::Float16:
    case ScalarType::Float32:
    case ScalarType::Float64:
      return {kDLFloat, bits, 1};
    case ScalarType::BFloat16:
      return {kDLBfloat, 16, 1};
  }
  throw TypeError(detail::cat_str("[__dlpack__] dtype ", dtype_name(t), " has no DLPack equivalent"));
}

std::string dl_dtype_str(DLDataType dt) {
  static const char* const names[] = {"int", "uint", "float", "opaque_handle", "bfloat", "complex", "bool"};
  std::string s = dt.code < 7 ? names[dt.code] : detail::cat_str("type_code_", int(dt.code), "_");
  s += std::to_string(int(dt.bits));
  if (dt.lanes != 1) s += "x" + std::to_string(int(dt.lanes));
  return s;
}

ScalarType from_dl_dtype(DLDataType dt) {
  if (dt.lanes == 1) {
    switch (dt.code) {
      case kDLBool:
        if (dt.bits == 8) return ScalarType::Bool;
        break;
      case kDLUInt:
        switch (dt.bits) {
          case 8:
            return ScalarType::UInt8;
          case 16:
            return ScalarType::UInt16;
          case 32:
            return ScalarType::UInt32;
          case 64:
            return ScalarType::UInt64;
        }
        break;
      case kDLComplex:
        if (dt.bits == 64) return ScalarType::ComplexFloat;
        if (dt.bits == 128) return ScalarType::ComplexDouble;
        break;
      case kDLInt:
        switch (dt.bits) {
          case 8:
            return ScalarType::Int8;
          case 16:
            return ScalarType::Int16;
          case 32:
            return ScalarType::Int32;
          case 64:
            return ScalarType::Int64;
        }
        break;
      case kDLFloat:
        switch (dt.bits) {
          case 16:
            return ScalarType::Float16;
          case 32:
            return ScalarType::Float32;
          case 64:
            return ScalarType::Float64;
        }
        break;
      case kDLBfloat:
        if (dt.bits == 16) return ScalarType::BFloat16;
        break;
      default:
        break;
    }
  }
  throw TypeError(
      detail::cat_str("[from_dlpack] unsupported DLPack dtype ", dl_dtype_str(dt),
                      "; flambeau supports bool, uint8, int8, int16, int32, int64, uint16, uint32, "
                      "uint64, float16, bfloat16, float32, float64, complex64, complex128"));
}

const char* dl_device_name(int32_t type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLROCM:
      return "rocm";
    case kDLMetal:
      return "metal";
    case kDLOneAPI:
      return "oneapi";
    default:
      return "other";
  }
}

DLDevice to_dl_device(Device d) {
  const int32_t index = d.index < 0 ? 0 : d.index;
  switch (d.type) {
    case DeviceType::CPU:
      return {kDLCPU, 0};
    case DeviceType::CUDA:
      return {kDLCUDA, index};
    default:
      // A plug-in device (PrivateUse1, e.g. sim) is none of DLPack's named
      // types: kDLExtDev, as PyTorch exports its PrivateUse1, so no consumer
      // mistakes its memory for a GPU's.
      return {kDLExtDev, index};
  }
}

// ---- export ----

template <class Managed>
struct ExportContext {
  Storage storage;  // Note [DLPack lifetimes]
  Shape shape;
  Shape strides;
  Managed managed{};
};

template <class Managed>
void delete_export(Managed* self) {
  delete static_cast<ExportContext<Managed>*>(self->manager_ctx);
}

template <class Managed>
void capsule_destructor(PyObject* capsule) {
  // Note [DLPack capsules]: a consumed capsule was renamed; only an unused one
  // still owns its managed tensor. IsValid never sets a Python error.
  if (!PyCapsule_IsValid(capsule, unused_name<Managed>())) return;
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, unused_name<Managed>()));
  if (managed && managed->deleter) managed->deleter(managed);
}

template <class Managed>
py::capsule export_capsule(const Tensor& t, uint64_t flags) {
  auto ctx = std::make_unique<ExportContext<Managed>>();
  ctx->storage = t.impl()->storage();
  ctx->shape.assign(t.sizes().begin(), t.sizes().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  // A 0-d tensor still gets valid (never read) shape/strides pointers.
  ctx->shape.reserve(1);
  ctx->strides.reserve(1);

  Managed& m = ctx->managed;
  DLTensor& dl = m.dl_tensor;
  dl.data = t.data_ptr();
  t.impl()->storage()->mark_exported();  // Note [Moving a storage's memory] (storage.h)
  dl.device = to_dl_device(t.device());
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl_dtype(t.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  m.manager_ctx = ctx.get();
  m.deleter = &delete_export<Managed>;
  if constexpr (kVersioned<Managed>) {
    m.version = {kDLPackMajor, kDLPackMinor};
    m.flags = flags;
  }

  PyObject* cap = PyCapsule_New(&m, unused_name<Managed>(), &capsule_destructor<Managed>);
  if (!cap) throw py::error_already_set();
  ctx.release();  // owned by the capsule now
  return py::reinterpret_steal<py::capsule>(cap);
}

std::pair<int64_t, int64_t> parse_pair(py::handle obj, const char* op, const char* what) {
  FB_CHECK_TYPE(py::isinstance<py::tuple>(obj) && py::len(obj) == 2, "[", op, "] ", what,
                " must be a tuple of two ints, got ", py::repr(obj).cast<std::string>());
  py::tuple t = py::reinterpret_borrow<py::tuple>(obj);
  return {py::int_(t[0]).cast<int64_t>(), py::int_(t[1]).cast<int64_t>()};
}

py::capsule tensor_dlpack(const Tensor& t, py::handle stream, py::handle max_version, py::handle dl_device,
                          py::handle copy) {
  if (t.requires_grad())
    throw py::buffer_error("[__dlpack__] can't export a tensor that requires grad; use tensor.detach()");
  const DLDevice here = to_dl_device(t.device());
  FB_CHECK_VALUE(stream.is_none() || !t.device().is_cpu(),
                 "[__dlpack__] stream must be None for a cpu tensor, got ",
                 py::repr(stream).cast<std::string>());
  if (t.device().type == DeviceType::CUDA &&
      !(py::isinstance<py::int_>(stream) && stream.cast<int64_t>() == -1)) {
    // The consumer reads on its stream (an int, or None: the legacy default
    // stream); flambeau has no handle of it here, so the work enqueued on the
    // tensor's current stream is waited for instead (stronger, and correct).
    FB_CHECK_TYPE(stream.is_none() || py::isinstance<py::int_>(stream),
                  "[__dlpack__] stream must be None or an int for a cuda tensor, got ",
                  py::repr(stream).cast<std::string>());
    py::gil_scoped_release release;
    current_stream(t.device())->synchronize();
  }
  if (!dl_device.is_none()) {
    auto [type, id] = parse_pair(dl_device, "__dlpack__", "dl_device");
    if (type != here.device_type || id != here.device_id)
      throw py::buffer_error(detail::cat_str("[__dlpack__] can't export a tensor on ", t.device().str(),
                                             " to DLPack device (", type, ", ", id, "): only (",
                                             int(here.device_type), ", ", here.device_id, ") is supported"));
  }
  bool versioned = false;
  if (!max_version.is_none()) versioned = parse_pair(max_version, "__dlpack__", "max_version").first >= 1;

  Tensor out = t;
  uint64_t flags = 0;
  if (!copy.is_none() && is_true(copy)) {
    AutoExcludeAutograd no_grad;
    out = op::clone(t, MemoryFormat::Contiguous);
    flags |= kDLPackFlagIsCopied;
  }
  return versioned ? export_capsule<DLManagedTensorVersioned>(out, flags)
                   : export_capsule<DLManagedTensor>(out, flags);
}

// ---- import ----

template <class Managed>
Tensor import_managed(PyObject* capsule) {
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, unused_name<Managed>()));
  if (!m) throw py::error_already_set();
  bool read_only = false;
  if constexpr (kVersioned<Managed>) {
    if (m->version.major > kDLPackMajor)
      throw py::buffer_error(detail::cat_str("[from_dlpack] the capsule uses DLPack ", m->version.major, ".",
                                             m->version.minor, ", newer than the ", kDLPackMajor,
                                             ".x flambeau supports"));
    read_only = (m->flags & kDLPackFlagReadOnly) != 0;
  }
  // Everything is checked before taking ownership: on an error the capsule
  // still owns the managed tensor and frees it when collected.
  const DLTensor& dl = m->dl_tensor;
  Device device(DeviceType::CPU);
  if (dl.device.device_type == kDLCUDA && device_count(DeviceType::CUDA) > dl.device.device_id &&
      dl.device.device_id >= 0)
    device = Device(DeviceType::CUDA, static_cast<int16_t>(dl.device.device_id));  // flambeau-cuda's GPU
  else if (dl.device.device_type == kDLCUDA)
    throw py::buffer_error(detail::cat_str(
        "[from_dlpack] this DLPack tensor is on cuda:", dl.device.device_id, ", but ",
        device_backend(DeviceType::CUDA) ? "flambeau-cuda sees no such CUDA GPU"
                                         : "flambeau-cuda is not installed (pip install flambeau-cuda)",
        ": move it to the cpu first"));
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDA)
    throw py::buffer_error(
        detail::cat_str("[from_dlpack] flambeau tensors live on the cpu; this DLPack tensor is on ",
                        dl_device_name(dl.device.device_type), " (device type ", int(dl.device.device_type),
                        ", id ", dl.device.device_id, "): move it to the cpu first"));
  const ScalarType dtype = from_dl_dtype(dl.dtype);
  FB_CHECK_VALUE(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape), "[from_dlpack] malformed DLTensor: ndim ",
                 dl.ndim);
  Shape sizes(dl.shape, dl.shape + dl.ndim);
  for (int64_t s : sizes)
    FB_CHECK_VALUE(s >= 0, "[from_dlpack] malformed DLTensor: negative size in shape ", shape_str(sizes));
  Shape strides =
      dl.strides ? Shape(dl.strides, dl.strides + dl.ndim) : contiguous_strides(sizes, "from_dlpack");
  const bool empty = shape_numel(sizes, "from_dlpack") == 0;
  for (int32_t d = 0; d < dl.ndim; ++d) {
    if (sizes[d] <= 1 || empty) {
      strides[d] = std::max<int64_t>(strides[d], 0);
      continue;
    }
    FB_CHECK_VALUE(strides[d] >= 0, "[from_dlpack] the DLPack tensor has a negative stride (", strides[d],
                   " in dim ", d, ", shape ", shape_str(sizes),
                   "); flambeau tensors don't support negative strides: pass a copy");
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  // As in from_numpy: misaligned elements could fault in vectorized kernels.
  FB_CHECK_VALUE(reinterpret_cast<uintptr_t>(data) % itemsize(dtype) == 0 || empty,
                 "[from_dlpack] the DLPack tensor's data is not aligned to its ", itemsize(dtype),
                 "-byte elements; pass a copy");
  const auto nbytes = static_cast<size_t>(span_bytes(sizes, strides, dtype, "from_dlpack"));

  // Note [DLPack lifetimes]: the storage calls the producer's deleter once, on
  // whatever thread drops it last. A producer's deleter may need Python
  // (NumPy's releases the array), so it runs with the GIL held (older NumPy
  // releases did not take it themselves), and is skipped once the interpreter
  // is gone (Note [Python objects in deleters]).
  Storage storage = StorageImpl::from_external(data, nbytes, device, [m](void*) {
    if (!m->deleter || !python_is_usable()) return;
    py::gil_scoped_acquire gil;
    m->deleter(m);
  });
  // Ownership is ours from here: mark the capsule consumed before anything else can throw.
  if (PyCapsule_SetName(capsule, used_name<Managed>()) != 0) throw py::error_already_set();
  Tensor t(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), 0));

  if (read_only &&
      PyErr_WarnEx(PyExc_UserWarning,
                   "[from_dlpack] the DLPack tensor is read-only, and flambeau tensors are always writable: "
                   "writing to this tensor is undefined behavior. Pass a copy (or copy=True) to silence "
                   "this warning.",
                   1) < 0)
    throw py::error_already_set();
  return t;
}

Tensor from_capsule(py::handle obj) {
  PyObject* capsule = obj.ptr();
  const char* name = PyCapsule_GetName(capsule);
  if (!name && PyErr_Occurred()) throw py::error_already_set();
  const std::string n = name ? name : "";
  if (n == kCapsuleVersioned) return import_managed<DLManagedTensorVersioned>(capsule);
  if (n == kCapsuleLegacy) return import_managed<DLManagedTensor>(capsule);
  FB_CHECK_VALUE(
      n != kCapsuleVersionedUsed && n != kCapsuleLegacyUsed,
      "[from_dlpack] this DLPack capsule was already consumed; a capsule can be consumed only once");
  throw TypeError(
      detail::cat_str("[from_dlpack] expected a DLPack capsule (named 'dltensor' or "
                      "'dltensor_versioned'), got a capsule named '",
                      n, "'"));
}

Tensor clone_no_grad(const Tensor& t) {
  AutoExcludeAutograd no_grad;
  return op::clone(t, MemoryFormat::Contiguous);
}

Tensor from_dlpack(py::handle obj, py::handle device, py::handle copy) {
  if (!device.is_none()) {
    const std::string d = py::str(device);
    FB_CHECK_VALUE(d == "cpu" || d == "cpu:0", "[from_dlpack] device must be None or 'cpu', got ", d,
                   " (a cuda producer's tensor stays on its GPU when device is None)");
  }
  const bool want_copy = !copy.is_none() && is_true(copy);

  if (PyCapsule_CheckExact(obj.ptr())) {
    Tensor t = from_capsule(obj);
    return want_copy ? clone_no_grad(t) : t;
  }
  FB_CHECK_TYPE(py::hasattr(obj, "__dlpack__"),
                "[from_dlpack] expected an object with __dlpack__ (a tensor or ",
                "array of another library) or a DLPack capsule, got ", type_name(obj));

  py::dict kwargs;
  if (py::hasattr(obj, "__dlpack_device__")) {
    auto [type, id] = parse_pair(obj.attr("__dlpack_device__")(), "from_dlpack", "__dlpack_device__()");
    const bool on_our_gpu =
        type == kDLCUDA && device.is_none() && id >= 0 && device_count(DeviceType::CUDA) > id;
    if (on_our_gpu) {
      kwargs["stream"] = py::none();  // the legacy default stream: flambeau's default stream
    } else if (type != kDLCPU) {
      // DLPack lets a consumer ask the producer for a copy on the cpu.
      if (!copy.is_none() && !want_copy)
        throw py::buffer_error(detail::cat_str("[from_dlpack] the tensor is on ",
                                               dl_device_name(int32_t(type)), " (device type ", type, ", id ",
                                               id,
                                               "); flambeau tensors live on the cpu, which needs a copy, but "
                                               "copy=False was given"));
      kwargs["dl_device"] = py::make_tuple(int(kDLCPU), 0);
      kwargs["copy"] = true;
    }
  }
  if (!copy.is_none() && !kwargs.contains("copy")) kwargs["copy"] = py::bool_(is_true(copy));
  kwargs["max_version"] = py::make_tuple(kDLPackMajor, kDLPackMinor);

  py::object dlpack = obj.attr("__dlpack__");
  py::object capsule;
  bool producer_copied = kwargs.contains("copy") && is_true(kwargs["copy"]);
  try {
    capsule = dlpack(**kwargs);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    // A producer from before DLPack 1.0 knows none of the new keywords.
    if (kwargs.contains("dl_device")) throw;
    capsule = dlpack();
    producer_copied = false;
  }
  FB_CHECK_TYPE(PyCapsule_CheckExact(capsule.ptr()), "[from_dlpack] ", type_name(obj),
                ".__dlpack__() returned ", type_name(capsule), ", not a capsule");
  Tensor t = from_capsule(capsule);
  return want_copy && !producer_copied ? clone_no_grad(t) : t;
}

}  // namespace

void init_dlpack(py::module_& m, TensorClass& cls) {
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"), py::kw_only(), py::arg("device") = py::none(),
        py::arg("copy") = py::none(),
        R"(A tensor sharing memory with another library's tensor or array, through DLPack.

``ext_tensor`` is any object with ``__dlpack__`` (a PyTorch tensor, a NumPy
array, ...) or a DLPack capsule (legacy "dltensor" or "dltensor_versioned").
No copy is made unless ``copy=True``; the producer's memory is released when
the last flambeau tensor using it dies. A read-only producer (flag set by
DLPack 1.x) is shared anyway with a UserWarning, as PyTorch does.

Example:
    >>> import torch, flambeau_interop as fi
    >>> src = torch.arange(4.0)
    >>> t = fi.from_dlpack(src)
    >>> src[0] = 9.0
    >>> t.tolist()
    [9.0, 1.0, 2.0, 3.0]
)");

  cls.def(
      "__dlpack__",
      [](const Tensor& t, py::handle stream, py::handle max_version, py::handle dl_device, py::handle copy) {
        return tensor_dlpack(t, stream, max_version, dl_device, copy);
      },
      py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
      py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
      R"(Exports this tensor as a DLPack capsule (the consumer side is ``from_dlpack``).

Returns a "dltensor_versioned" capsule when ``max_version >= (1, 0)``, a legacy
"dltensor" one otherwise. Shares memory unless ``copy=True``. ``stream`` must
be None on the cpu; a ``dl_device`` other than the tensor's raises BufferError,
and so does a tensor that requires grad.
)");

  cls.def(
      "__dlpack_device__",
      [](const Tensor& t) {
        const DLDevice d = to_dl_device(t.device());
        return py::make_tuple(int(d.device_type), d.device_id);
      },
      "The DLPack (device_type, device_id) of this tensor: (1, 0) on the cpu.");
}

}  // namespace flambeau::interop
