// Tensor creation from Python: tensor(), zeros/ones/empty/full(+_like),
// arange, rand/randn, uniform_/normal_, and frombuffer (zero-copy).
#include <algorithm>
#include <cstring>

#include "arg_parser.h"
#include "common.h"
#include "op_recorder.h"
#include "flambeau/device_backend.h"
#include "flambeau/error.h"
#include "flambeau/observe.h"
#include "flambeau/random.h"
#include "flambeau/type_dispatch.h"

namespace flambeau::python {
namespace {

using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
}

/// Checks that a new tensor of `shape` and `dtype` can be counted in bytes
/// (Note [Size overflow]) so that the error names the factory, not `empty`.
const Shape& checked(const Shape& shape, ScalarType dtype, const char* op) {
  shape_nbytes(shape, dtype, op);
  return shape;
}

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

// Note [Factory out=]: as PyTorch, zeros/ones/empty/full/rand/randn/arange(..., out=t) make their
// result in out's dtype (a dtype= that differs is a TypeError) and on out's device unless device=
// says otherwise (then copy_to_out refuses it), write it into out (resized to the result's shape,
// Note [out= resizing]) and return out itself.
ScalarType factory_dtype(py::handle out, py::handle dtype, ScalarType fallback, const char* op) {
  if (out.is_none()) return parse_dtype(dtype, fallback, op);
  FB_CHECK_TYPE(py::isinstance<TensorImpl>(out), "[", op, "] out= must be a Tensor, got ",
                std::string(py::str(py::type::of(out).attr("__name__"))));
  const ScalarType t = out.cast<Tensor>().dtype();
  if (!dtype.is_none()) {
    const ScalarType d = parse_dtype(dtype, t, op);
    FB_CHECK_TYPE(d == t, "[", op, "] dtype ", dtype_name(d), " does not match the dtype of out= (",
                  dtype_name(t), ")");
  }
  return t;
}

Device factory_out_device(py::handle out, py::handle device, const char* op) {
  if (!out.is_none() && device.is_none()) return out.cast<Tensor>().device();
  return factory_device(device, op);
}

/// An out= of exactly the result's shape, dtype and device is written in place (no new tensor and
/// copy): set `o` to it and return true (after the autograd check of copy_to_out).
bool out_fits(py::handle out, const Shape& sizes, ScalarType t, Device d, const char* op, Tensor& o) {
  if (out.is_none()) return false;
  o = out.cast<Tensor>();
  check_out_autograd(op, Tensor(), o);
  return std::ranges::equal(o.sizes(), sizes) && o.dtype() == t && o.device() == d;
}

py::object finish_out(const char* op, const Tensor& result, py::handle out, bool requires_grad) {
  if (out.is_none()) return py::cast(finish(result, requires_grad));
  Tensor o = out.cast<Tensor>();
  if (result.impl() != o.impl()) {  // (else out_fits wrote out itself)
    py::gil_scoped_release no_gil;
    copy_to_out(op, result, o, true);
  }
  if (requires_grad) o.set_requires_grad(true);
  return py::reinterpret_borrow<py::object>(out);
}

// ---- buffer protocol ----

/// The dtype of a struct-module format such as "f", "<d", "=q"; TypeError naming op.
ScalarType dtype_from_format(const char* fmt, Py_ssize_t item_bytes, const char* op) {
  std::string f = fmt ? fmt : "B";
  char order = '@';
  if (!f.empty() && std::strchr("@=<>!", f[0])) {
    order = f[0];
    f = f.substr(1);
  }
  FB_CHECK_TYPE(order != '>' && order != '!', "[", op, "] big-endian buffers (format '", fmt,
                "') are not supported");
  ScalarType t;
  if (f == "?")
    t = ScalarType::Bool;
  else if (f == "b")
    t = ScalarType::Int8;
  else if (f == "B" || f == "c")
    t = ScalarType::UInt8;
  else if (f == "h")
    t = ScalarType::Int16;
  else if (f == "H")
    t = ScalarType::UInt16;
  else if (f == "I")
    t = ScalarType::UInt32;
  else if ((f == "L" || f == "Q" || f == "N") && item_bytes == 8)
    t = ScalarType::UInt64;
  else if (f == "L" && item_bytes == 4)
    t = ScalarType::UInt32;
  else if (f == "Zf")
    t = ScalarType::ComplexFloat;
  else if (f == "Zd")
    t = ScalarType::ComplexDouble;
  else if (f == "i")
    t = ScalarType::Int32;
  else if ((f == "l" || f == "q" || f == "n") && item_bytes == 8)
    t = ScalarType::Int64;
  else if (f == "l" && item_bytes == 4)
    t = ScalarType::Int32;
  else if (f == "e")
    t = ScalarType::Float16;
  else if (f == "f")
    t = ScalarType::Float32;
  else if (f == "d")
    t = ScalarType::Float64;
  else
    throw TypeError(
        detail::cat_str("[", op, "] buffer format '", fmt,
                        "' has no flambeau dtype (supported: bool, int8, uint8, int16, int32, int64, uint16, "
                        "uint32, uint64, float16, float32, float64, complex64, complex128)"));
  FB_CHECK_TYPE(static_cast<Py_ssize_t>(itemsize(t)) == item_bytes, "[", op, "] buffer format '", fmt,
                "' has item size ", item_bytes, ", expected ", itemsize(t));
  return t;
}

// RAII owner of a Py_buffer.
struct BufferView {
  Py_buffer view{};
  bool held = false;
  BufferView() = default;
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  ~BufferView() {
    if (held) PyBuffer_Release(&view);
  }
};

/// Copies any buffer-protocol object (any strides, e.g. a NumPy view) into a new tensor.
Tensor tensor_from_buffer_copy(py::handle obj) {
  BufferView b;
  if (PyObject_GetBuffer(obj.ptr(), &b.view, PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
  b.held = true;
  const ScalarType dtype = dtype_from_format(b.view.format, b.view.itemsize, "tensor");
  Shape shape(b.view.shape, b.view.shape + b.view.ndim);
  if (b.view.ndim == 0) shape.clear();
  Tensor out = op::empty(shape, dtype, Device(DeviceType::CPU));
  char* dst = static_cast<char*>(out.data_ptr());
  const auto isz = static_cast<size_t>(b.view.itemsize);
  if (PyBuffer_IsContiguous(&b.view, 'C')) {
    // An empty tensor may have no data pointer; memcpy's arguments must not be null even for 0 bytes.
    if (out.numel() > 0) std::memcpy(dst, b.view.buf, static_cast<size_t>(out.numel()) * isz);
    return out;
  }
  // Strided (possibly negative strides): walk it in row-major order.
  const int64_t nd = b.view.ndim;
  Shape idx(nd, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const char* src = static_cast<const char*>(b.view.buf);
    for (int64_t d = 0; d < nd; ++d) src += idx[d] * b.view.strides[d];
    std::memcpy(dst + i * isz, src, isz);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Note [frombuffer lifetime]
// The tensor's Storage wraps the exporter's memory and owns a Py_buffer on it,
// which keeps the exporter alive (and, for NumPy/bytearray/mmap, locks it from
// being resized) until the last tensor or view drops. The deleter may run on
// any thread, with or without the GIL (Note [Python objects in deleters]).
//
// Note [frombuffer of read-only buffers]
// flambeau tensors are always writable. Sharing a read-only buffer, as
// PyTorch does (with a warning), would let `t.fill_(66)` rewrite a `bytes`
// object, which Python assumes immutable: CPython shares equal constants and
// caches one-byte bytes objects, so b"A" would change everywhere in the
// program; and a read-only mmap would crash the process (SIGSEGV). So a
// read-only buffer is copied into a new tensor instead, with a UserWarning
// saying so (the user asked for shared memory and does not get it). Writable
// buffers (bytearray, NumPy arrays, writable memoryviews and mmaps) are shared.
Tensor frombuffer(py::handle buffer, py::handle dtype_obj, int64_t count, int64_t offset) {
  const ScalarType dtype = parse_dtype(dtype_obj, default_float_dtype(), "frombuffer");
  FB_CHECK_TYPE(PyObject_CheckBuffer(buffer.ptr()),
                "[frombuffer] expected an object with the buffer protocol "
                "(bytearray, memoryview, NumPy array, mmap, ...), got ",
                type_name(buffer));
  auto* view = new Py_buffer{};
  bool read_only = false;
  if (PyObject_GetBuffer(buffer.ptr(), view, PyBUF_WRITABLE) != 0) {
    PyErr_Clear();  // read-only exporters (bytes, read-only memoryviews): copied below
    if (PyObject_GetBuffer(buffer.ptr(), view, PyBUF_SIMPLE) != 0) {
      delete view;
      PyErr_Clear();
      throw ValueError(detail::cat_str("[frombuffer] the buffer of a ", type_name(buffer),
                                       " is not C-contiguous; pass a contiguous buffer"));
    }
    read_only = true;
  }
  auto release = [](Py_buffer* v) {
    PyBuffer_Release(v);
    delete v;
  };
  try {
    const auto isz = static_cast<int64_t>(itemsize(dtype));
    const int64_t len = view->len;
    FB_CHECK_VALUE(offset >= 0 && (offset < len || (len == 0 && offset == 0)), "[frombuffer] offset (",
                   offset, " bytes) must be non-negative and less than the buffer length (", len, " bytes)");
    FB_CHECK_VALUE(count != 0 && len != 0, "[frombuffer] both the buffer length (", len, ") and count (",
                   count, ") must not be 0");
    if (count < 0) {
      FB_CHECK_VALUE(count == -1, "[frombuffer] count must be -1 or positive, got ", count);
      FB_CHECK_VALUE((len - offset) % isz == 0, "[frombuffer] buffer length (", len - offset,
                     " bytes after offset) is not a multiple of the element size (", isz, ") of ",
                     dtype_name(dtype));
      count = (len - offset) / isz;
    } else {
      FB_CHECK_VALUE(count <= (len - offset) / isz, "[frombuffer] requested ", count, " elements of ",
                     dtype_name(dtype), " but the buffer has only ", len - offset, " bytes after offset ",
                     offset);
    }
  } catch (...) {
    release(view);
    throw;
  }
  void* data = static_cast<char*>(view->buf) + offset;
  const size_t nbytes = static_cast<size_t>(count) * itemsize(dtype);
  if (read_only) {  // Note [frombuffer of read-only buffers]
    Tensor copy;
    try {
      copy = op::empty(Shape{count}, dtype, Device(DeviceType::CPU));
      if (nbytes > 0) std::memcpy(copy.data_ptr(), data, nbytes);
    } catch (...) {
      release(view);
      throw;
    }
    release(view);
    const std::string msg = detail::cat_str(
        "[frombuffer] the given buffer of type ", type_name(buffer),
        " is not writable, and flambeau tensors are always writable: the tensor holds a copy of its ", nbytes,
        " bytes instead of sharing them, so that writing to it cannot change a read-only object. Pass a "
        "writable buffer (bytearray, a writable memoryview or mmap) to share memory.");
    if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) throw py::error_already_set();
    return copy;
  }
  auto storage = StorageImpl::from_external(data, nbytes, Device(DeviceType::CPU), [view](void*) {
    release_buffer_with_gil(view);  // Note [frombuffer lifetime]
  });
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, Shape{count}, Shape{1}, 0));
}

/// as_tensor of a writable C-contiguous buffer (a NumPy array): a cpu tensor sharing its memory
/// (Note [frombuffer lifetime]); nullopt for a read-only, strided or empty one (copied instead).
std::optional<Tensor> share_writable_buffer(py::handle obj) {
  auto* view = new Py_buffer{};
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    delete view;
    return std::nullopt;
  }
  auto release = [](Py_buffer* v) {
    PyBuffer_Release(v);
    delete v;
  };
  try {
    const ScalarType dtype = dtype_from_format(view->format, view->itemsize, "as_tensor");
    const Shape shape(view->shape, view->shape + view->ndim);
    if (view->len == 0) {
      release(view);
      return std::nullopt;
    }
    Shape strides = contiguous_strides(shape, "as_tensor");
    void* data = view->buf;
    auto storage = StorageImpl::from_external(data, static_cast<size_t>(view->len), Device(DeviceType::CPU),
                                              [view](void*) { release_buffer_with_gil(view); });
    return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, shape, std::move(strides), 0));
  } catch (...) {
    release(view);
    throw;
  }
}

// ---- tensor(data) from nested sequences ----

// Any sequence but a str or bytes (list, tuple, range, deque, ...), and (nested
// inside them) tensors or arrays with at least one dim, as PyTorch's tensor() reads.
bool is_sequence(py::handle obj) {
  PyObject* p = obj.ptr();
  if (PyList_Check(p) || PyTuple_Check(p) || PyRange_Check(p)) return true;
  if (py::isinstance<TensorImpl>(obj)) return obj.cast<Tensor>().dim() > 0;
  if (PyUnicode_Check(p) || PyBytes_Check(p) || PyByteArray_Check(p)) return false;
  if (PyObject_CheckBuffer(p))
    return py::memoryview(py::reinterpret_borrow<py::object>(obj)).attr("ndim").cast<int>() > 0;
  return PySequence_Check(p) != 0;
}

py::object as_list(py::handle obj) {
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) return py::reinterpret_borrow<py::object>(obj);
  if (py::hasattr(obj, "tolist")) return obj.attr("tolist")();
  if (PyObject_CheckBuffer(obj.ptr()))
    return py::memoryview(py::reinterpret_borrow<py::object>(obj)).attr("tolist")();
  py::object list = py::reinterpret_steal<py::object>(PySequence_List(obj.ptr()));
  if (!list) throw py::error_already_set();
  return list;
}

struct NestedData {
  Shape shape;
  std::vector<Scalar> leaves;
  TypeCategory category = TypeCategory::Bool;
};

Scalar leaf_scalar(py::handle obj) {
  if (py::isinstance<TensorImpl>(obj)) return as_scalar(obj.attr("item")(), "tensor");
  if (PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) ||
      PyComplex_Check(obj.ptr()))
    return as_scalar(obj, "tensor");
  if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj) || obj.is_none() ||
      !(PyIndex_Check(obj.ptr()) || PyNumber_Check(obj.ptr())))
    throw TypeError(
        detail::cat_str("[tensor] expected numbers or nested sequences of numbers, got an element of "
                        "type ",
                        type_name(obj)));
  return as_scalar(obj, "tensor");
}

void collect(py::handle obj, size_t depth, NestedData& out) {
  if (!is_sequence(obj)) {
    FB_CHECK_VALUE(depth == out.shape.size(), "[tensor] expected a sequence at dim ", depth,
                   " (like the first element), got a ", type_name(obj));
    const Scalar s = leaf_scalar(obj);
    const TypeCategory c = s.is_complex()    ? TypeCategory::Complex
                           : s.is_floating() ? TypeCategory::Floating
                           : s.is_bool()     ? TypeCategory::Bool
                                             : TypeCategory::Integer;
    out.category = std::max(out.category, c);
    out.leaves.push_back(s);
    return;
  }
  py::object seq = as_list(obj);
  const auto n = static_cast<int64_t>(py::len(seq));
  FB_CHECK_VALUE(depth < out.shape.size(), "[tensor] expected a number at dim ", depth,
                 " (like the first element), got a sequence of length ", n);
  FB_CHECK_VALUE(n == out.shape[depth], "[tensor] expected a sequence of length ", out.shape[depth],
                 " at dim ", depth, " (got ", n, "): nested sequences must be rectangular");
  for (py::handle item : seq) collect(item, depth + 1, out);
}

Tensor tensor_from_data(py::handle data, py::handle dtype_obj) {
  // (An empty range is left to the generic path: it is float32, as torch.tensor([]).)
  if (std::optional<Tensor> r = range_tensor(data); r && r->numel() > 0) {
    const ScalarType dt = parse_dtype(dtype_obj, ScalarType::Int64, "tensor");
    return dt == ScalarType::Int64 ? *r : op::cast(*r, dt);
  }
  if (py::isinstance<TensorImpl>(data)) {
    AutoExcludeAutograd no_grad;  // a copy of the values, detached from any graph
    const Tensor src = data.cast<Tensor>();
    const ScalarType dt = parse_dtype(dtype_obj, src.dtype(), "tensor");
    return without_gil(
        [&] { return dt == src.dtype() ? op::clone(src, MemoryFormat::Contiguous) : op::cast(src, dt); });
  }
  if (!PyList_Check(data.ptr()) && !PyTuple_Check(data.ptr()) && PyObject_CheckBuffer(data.ptr()) &&
      !py::isinstance<py::str>(data)) {
    Tensor t = tensor_from_buffer_copy(data);
    const ScalarType dt = parse_dtype(dtype_obj, t.dtype(), "tensor");
    return dt == t.dtype() ? t : without_gil([&] { return op::cast(t, dt); });
  }
  NestedData nd;
  // The shape comes from the first element at each depth; collect() checks the rest.
  py::handle cur = data;
  py::object keep;
  while (is_sequence(cur)) {
    FB_CHECK_VALUE(nd.shape.size() < 64,
                   "[tensor] data nests more than 64 levels deep (a list containing itself?)");
    if (!PyList_Check(cur.ptr()) && !PyTuple_Check(cur.ptr())) {
      keep = as_list(cur);
      cur = keep;
    }
    const auto n = static_cast<int64_t>(py::len(cur));
    nd.shape.push_back(n);
    if (n == 0) break;
    keep = py::reinterpret_borrow<py::object>(cur)[py::int_(0)];
    cur = keep;
  }
  collect(data, 0, nd);
  const ScalarType inferred = nd.category == TypeCategory::Complex    ? default_complex_dtype()
                              : nd.category == TypeCategory::Floating ? default_float_dtype()
                              : nd.category == TypeCategory::Integer  ? kDefaultInt
                              : nd.leaves.empty()                     ? default_float_dtype()
                                                                      : ScalarType::Bool;
  const ScalarType dtype = parse_dtype(dtype_obj, inferred, "tensor");
  // Note [Scalar overflow], for integer dtypes only: as PyTorch's tensor(),
  // a float too large for a floating dtype becomes inf.
  if (!is_floating(dtype) && !is_complex(dtype))
    for (const Scalar& s : nd.leaves) check_scalar_fits(s, dtype, "tensor");
  Tensor out = op::empty(nd.shape, dtype, Device(DeviceType::CPU));
  visit_dtype_all(dtype, "tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for (size_t i = 0; i < nd.leaves.size(); ++i) p[i] = nd.leaves[i].to<T>();
  });
  return out;
}

// ---- keyword arguments shared by factories ----

/// The device of a *_like factory: `device` if given, else the input's.
Device like_device(py::handle device, const Tensor& t, const char* op) {
  return device.is_none() ? t.device() : parse_device(device, op);
}

Generator* parse_generator(py::handle gen) {
  if (gen.is_none()) return nullptr;
  FB_CHECK_TYPE(py::isinstance<Generator>(gen), "[random] generator must be a flambeau.Generator, got ",
                type_name(gen));
  return gen.cast<Generator*>();
}

ScalarType dtype_of_scalar(const Scalar& s) { return s.default_dtype(); }

// Note [Generator state bytes]
// A generator's state (Note [Random numbers]) is its seed and its offset, as
// two little-endian uint64: 16 bytes in a uint8 tensor (PyTorch's Mersenne
// Twister state has 5056). Restoring it replays the same draws; the seed read
// back is still the one the program set (initial_seed()).
constexpr int64_t kGeneratorStateBytes = 16;

Tensor generator_state(Generator& g) {
  const Generator::State s = g.state();
  Tensor out = op::empty(Shape{kGeneratorStateBytes}, ScalarType::UInt8, Device(DeviceType::CPU));
  uint8_t* p = out.data<uint8_t>();
  for (int i = 0; i < 8; ++i) {
    p[i] = static_cast<uint8_t>(s.seed >> (8 * i));
    p[8 + i] = static_cast<uint8_t>(s.offset >> (8 * i));
  }
  return out;
}

void set_generator_state(Generator& g, py::handle state, const char* op, const char* getter) {
  FB_CHECK_TYPE(py::isinstance<TensorImpl>(state), "[", op, "] expected a uint8 Tensor, got ",
                type_name(state));
  const Tensor t_in = state.cast<Tensor>();
  FB_CHECK_TYPE(t_in.dtype() == ScalarType::UInt8, "[", op, "] expected a uint8 Tensor (the state ", getter,
                " returns), got dtype flambeau.", dtype_name(t_in.dtype()));
  FB_CHECK_VALUE(t_in.dim() == 1 && t_in.numel() == kGeneratorStateBytes, "[", op, "] expected the ",
                 kGeneratorStateBytes, "-byte state that ", getter,
                 " returns (seed and offset, two little-endian uint64), got shape ", shape_str(t_in.sizes()));
  const Tensor t = to_cpu_for_read(t_in);
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  const int64_t stride = t.strides()[0];
  Generator::State s{0, 0};
  for (int i = 0; i < 8; ++i) {
    s.seed |= static_cast<uint64_t>(p[i * stride]) << (8 * i);
    s.offset |= static_cast<uint64_t>(p[(8 + i) * stride]) << (8 * i);
  }
  g.set_state(s);
}

/// An uninitialised tensor for a *_like factory: `like`'s sizes, laid out per
/// `format` on `like`'s device (another device gets a contiguous tensor).
Tensor new_like(const Tensor& like, ScalarType dtype, Device device, MemoryFormat format, const char* op) {
  if (format != MemoryFormat::Preserve && format != MemoryFormat::Contiguous)
    (void)strides_for_memory_format(like.sizes(), format, op);  // raises for the wrong rank
  if (device == like.device()) return empty_like_in(like, dtype, format);
  return empty(like.sizes(), dtype, device);
}

}  // namespace

std::optional<Tensor> range_tensor(py::handle obj) {
  if (!PyRange_Check(obj.ptr())) return std::nullopt;
  int64_t v[3];
  const char* names[3] = {"start", "stop", "step"};
  for (int i = 0; i < 3; ++i) {
    py::object a = obj.attr(names[i]);
    int overflow = 0;
    v[i] = PyLong_AsLongLongAndOverflow(a.ptr(), &overflow);
    if (overflow) return std::nullopt;
  }
  const Py_ssize_t n = PyObject_Length(obj.ptr());
  if (n < 0) {  // a length beyond Py_ssize_t
    PyErr_Clear();
    return std::nullopt;
  }
  // arange refuses a step that points away from stop; such a range is just empty.
  if (n == 0) return op::empty(Shape{0}, ScalarType::Int64, Device(DeviceType::CPU));
  return op::arange(Scalar(v[0]), Scalar(v[1]), Scalar(v[2]), ScalarType::Int64, Device(DeviceType::CPU));
}

Tensor tensor_from_python(py::handle data) { return tensor_from_data(data, py::none()); }

void init_factories(py::module_& m) {
  py::class_<Generator, std::shared_ptr<Generator>>(
      m, "Generator",
      "A counter-based random generator (Note [Random numbers]).\n"
      "\n"
      "Generator(device=\"cpu\", seed=None): factories and in-place fills take it as generator=. The "
      "same seed gives\n"
      "other numbers than PyTorch's generator (a counter-based one, not a Mersenne Twister).\n"
      "\n"
      ">>> g = flambeau_core.Generator(seed=0)\n"
      ">>> a = flambeau_core.rand(3, generator=g)\n"
      ">>> bool((flambeau_core.rand(3, generator=flambeau_core.Generator(seed=0)) == a).all())\n"
      "True")
      .def(py::init([](py::handle device, py::object seed) {
             (void)parse_device(device, "Generator");
             auto g = std::make_shared<Generator>();
             if (!seed.is_none()) g->manual_seed(as_seed(seed, "Generator"));
             return g;
           }),
           py::arg("device") = "cpu", py::arg("seed") = py::none())
      .def(
          "manual_seed",
          [](std::shared_ptr<Generator> g, py::handle seed) {
            g->manual_seed(as_seed(seed, "manual_seed"));
            return g;
          },
          py::arg("seed"),
          "Reseeds the generator (its offset back to 0); returns the generator.\n"
          "\n"
          ">>> g = flambeau_core.Generator()\n"
          ">>> g.manual_seed(5) is g, g.initial_seed()\n"
          "(True, 5)")
      .def("initial_seed", &Generator::initial_seed,
           "The seed the generator was created or last seeded with.\n"
           "\n"
           ">>> flambeau_core.Generator(seed=5).initial_seed()\n"
           "5")
      .def(
          "get_state", [](Generator& g) { return generator_state(g); },
          "The generator's state as a 16-byte uint8 tensor (seed and offset, Note [Generator state "
          "bytes]); reading it draws nothing.\n\n>>> g = flambeau_core.Generator(seed=0)\n"
          ">>> s = g.get_state(); a = flambeau_core.rand(3, generator=g)\n"
          ">>> _ = g.set_state(s); bool((flambeau_core.rand(3, generator=g) == a).all())\nTrue")
      .def(
          "set_state",
          [](std::shared_ptr<Generator> g, py::handle state) {
            set_generator_state(*g, state, "set_state", "get_state()");
            return g;
          },
          py::arg("new_state"),
          "Restores a state from get_state(): the same random numbers come again. Returns the generator.\n"
          "\n"
          ">>> g = flambeau_core.Generator(seed=0)\n"
          ">>> state = g.get_state()\n"
          ">>> a = flambeau_core.rand(2, generator=g)\n"
          ">>> g.set_state(state) is g, bool((flambeau_core.rand(2, generator=g) == a).all())\n"
          "(True, True)");

  m.def(
      "_get_rng_state", [] { return generator_state(default_generator()); },
      "The default CPU generator's state (Generator.get_state).");
  m.def(
      "_set_rng_state",
      [](py::handle state) {
        set_generator_state(default_generator(), state, "set_rng_state", "get_rng_state()");
      },
      py::arg("new_state"), "Restores the default CPU generator's state (Generator.set_state).");

  m.def(
      "tensor",
      [](py::handle data, py::handle dtype, py::handle device, bool requires_grad) {
        const Device d = factory_device(device, "tensor");
        if (d.is_cpu()) return finish(tensor_from_data(data, dtype), requires_grad);
        // Built on the cpu, then copied (Note [Device backends]).
        if (d.has_backend_memory()) require_device(resolve_device(d), "tensor");
        Tensor host = tensor_from_data(data, dtype);
        Tensor out;
        {
          py::gil_scoped_release no_gil;
          out = to_device_copy(host, d, host.dtype(), false, "tensor");
        }
        return finish(out, requires_grad);
      },
      py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false,
      "A new tensor holding a copy of data: a number, nested lists/tuples, a buffer-protocol object (NumPy "
      "array) or a Tensor. dtype is inferred (bool < int64 < float32) unless given.\n\n"
      ">>> flambeau_core.tensor([[1, 2], [3, 4]]).shape\nflambeau.Size([2, 2])");

  m.def(
      "as_tensor",
      [](py::handle data, py::handle dtype, py::handle device) -> py::object {
        if (py::isinstance<TensorImpl>(data)) {
          const Tensor t = data.cast<Tensor>();
          const ScalarType dt = parse_dtype(dtype, t.dtype(), "as_tensor");
          const Device d = device.is_none() ? t.device() : parse_device(device, "as_tensor");
          if (dt == t.dtype() && d == t.device()) return py::reinterpret_borrow<py::object>(data);
          return data.attr("to")(py::arg("device") = py::cast(d), py::arg("dtype") = py::cast(dt));
        }
        // As torch.as_tensor: a NumPy array of the asked dtype on the cpu shares its memory.
        PyObject* p = data.ptr();
        if (PyObject_CheckBuffer(p) && !PyBytes_Check(p) && !PyByteArray_Check(p) &&
            factory_device(device, "as_tensor").is_cpu())
          if (std::optional<Tensor> shared = share_writable_buffer(data)) {
            const ScalarType dt = parse_dtype(dtype, shared->dtype(), "as_tensor");
            return py::cast(dt == shared->dtype() ? *shared : op::cast(*shared, dt));
          }
        return py::module_::import("flambeau_core._C")
            .attr("tensor")(data, py::arg("dtype") = dtype, py::arg("device") = device);
      },
      py::arg("data"), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      "data as a tensor: a Tensor of the asked dtype and device is returned itself (else converted with "
      "to(), keeping the autograd graph); a writable C-contiguous NumPy array (any buffer) of that dtype "
      "is shared, not copied; anything else tensor() reads (numbers, nested sequences, ranges, strided or "
      "read-only arrays) becomes a new tensor.\n\n>>> flambeau_core.as_tensor(range(3)).tolist()\n[0, 1, 2]");

  auto sized = [&m](const char* name, auto make, auto fill, const char* doc) {
    m.def(
        name,
        [make, fill, name](py::args size, py::handle out, py::handle dtype, py::handle layout,
                           py::handle device, bool requires_grad) -> py::object {
          // Note [Observation]: a factory is not dispatched, but PyTorch's profiler shows it as an op.
          profiler::RecordScope scope(name, profiler::EventKind::Op);
          check_layout(layout, name);
          const Shape shape = parse_shape(size, name);
          const ScalarType t = factory_dtype(out, dtype, default_float_dtype(), name);
          const Device d = factory_out_device(out, device, name);
          const Shape sizes = checked(shape, t, name);
          if (Tensor o; out_fits(out, sizes, t, d, name, o)) {
            without_gil([&] { fill(o); });
            return finish_out(name, o, out, requires_grad);
          }
          return finish_out(name, without_gil([&] { return make(sizes, t, d); }), out, requires_grad);
        },
        py::kw_only(), py::arg("out") = py::none(), py::arg("dtype") = py::none(),
        py::arg("layout") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false,
        doc);
  };
  sized(
      "zeros", [](const Shape& s, ScalarType t, Device d) { return zeros(s, t, d); },
      [](Tensor& o) { op::fill_(o, Scalar(int64_t{0})); },
      "A tensor of zeros: zeros(2, 3) or zeros((2, 3)); float32 unless dtype is given.\n"
      "\n"
      ">>> flambeau_core.zeros(2, 3).tolist()\n"
      "[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]\n"
      ">>> flambeau_core.zeros((2,), dtype=flambeau_core.int64).tolist()\n"
      "[0, 0]");
  sized(
      "ones", [](const Shape& s, ScalarType t, Device d) { return ones(s, t, d); },
      [](Tensor& o) { op::fill_(o, Scalar(int64_t{1})); },
      "A tensor of ones: ones(2, 3) or ones((2, 3)); float32 unless dtype is given.\n"
      "\n"
      ">>> flambeau_core.ones(2, 2).tolist()\n"
      "[[1.0, 1.0], [1.0, 1.0]]\n"
      ">>> flambeau_core.ones(3, dtype=flambeau_core.bool).tolist()\n"
      "[True, True, True]");
  sized(
      "empty", [](const Shape& s, ScalarType t, Device d) { return empty(s, t, d); }, [](Tensor&) {},
      "An uninitialized tensor: empty(2, 3) or empty((2, 3)); its values are whatever the memory held.\n"
      "\n"
      ">>> x = flambeau_core.empty(2, 3)\n"
      ">>> x.shape, x.dtype == flambeau_core.float32\n"
      "(flambeau.Size([2, 3]), True)");
  // rand/randn with an explicit generator: a keyword the shared helper does not take.
  for (const char* name : {"rand", "randn"}) {
    const bool normal = std::string(name) == "randn";
    m.def(
        name,
        [normal, name](py::args size, py::handle generator, py::handle out, py::handle dtype,
                       py::handle layout, py::handle device, bool requires_grad) -> py::object {
          profiler::RecordScope scope(name, profiler::EventKind::Op);
          check_layout(layout, name);
          const Shape shape = parse_shape(size, name);
          const ScalarType t = factory_dtype(out, dtype, default_float_dtype(), name);
          const Device d = factory_out_device(out, device, name);
          const Shape sizes = checked(shape, t, name);
          Generator* g = parse_generator(generator);
          if (Tensor o; out_fits(out, sizes, t, d, name, o)) {
            without_gil([&] { normal ? op::normal_(o, 0.0, 1.0, g) : op::uniform_(o, 0.0, 1.0, g); });
            return finish_out(name, o, out, requires_grad);
          }
          Tensor x = without_gil([&] {
            Tensor r = empty(sizes, t, d);
            return normal ? op::normal_(r, 0.0, 1.0, g) : op::uniform_(r, 0.0, 1.0, g);
          });
          return finish_out(name, x, out, requires_grad);
        },
        py::kw_only(), py::arg("generator") = py::none(), py::arg("out") = py::none(),
        py::arg("dtype") = py::none(), py::arg("layout") = py::none(), py::arg("device") = py::none(),
        py::arg("requires_grad") = false,
        normal ? "Standard normal samples: randn(2, 3, generator=None, dtype=None).\n"
                 "\n"
                 "The numbers differ from PyTorch's for the same seed (a counter-based generator, Note "
                 "[Random numbers]);\n"
                 "a seeded Generator gives the same numbers on every run.\n"
                 "\n"
                 ">>> g = flambeau_core.Generator(seed=0)\n"
                 ">>> x = flambeau_core.randn(1000, generator=g)\n"
                 ">>> x.shape, abs(x.mean().item()) < 0.2, abs(x.std().item() - 1) < 0.2\n"
                 "(flambeau.Size([1000]), True, True)"
               : "Uniform samples on [0, 1): rand(2, 3, generator=None, dtype=None).\n"
                 "\n"
                 "The numbers differ from PyTorch's for the same seed (a counter-based generator, Note "
                 "[Random numbers]);\n"
                 "a seeded Generator gives the same numbers on every run.\n"
                 "\n"
                 ">>> g = flambeau_core.Generator(seed=0)\n"
                 ">>> x = flambeau_core.rand(2, 3, generator=g)\n"
                 ">>> x.shape, bool(((x >= 0) & (x < 1)).all())\n"
                 "(flambeau.Size([2, 3]), True)\n"
                 ">>> bool((flambeau_core.rand(2, 3, generator=flambeau_core.Generator(seed=0)) == "
                 "x).all())\n"
                 "True");
  }

  m.def(
      "full",
      [](py::handle size, py::handle fill_value, py::handle out, py::handle dtype, py::handle layout,
         py::handle device, bool requires_grad) -> py::object {
        check_layout(layout, "full");
        const Shape shape = PyIndex_Check(size.ptr()) ? Shape{as_int64(size, "full", "size")}
                                                      : parse_int_sequence(size, "full", "size");
        const Scalar v = as_scalar(fill_value, "full");
        const ScalarType t = factory_dtype(out, dtype, dtype_of_scalar(v), "full");
        const Device d = factory_out_device(out, device, "full");
        const Shape sizes = checked(shape, t, "full");
        if (Tensor o; out_fits(out, sizes, t, d, "full", o)) {
          without_gil([&] { op::fill_(o, v); });
          return finish_out("full", o, out, requires_grad);
        }
        return finish_out("full", without_gil([&] { return full(sizes, v, t, d); }), out, requires_grad);
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("out") = py::none(),
      py::arg("dtype") = py::none(), py::arg("layout") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false,
      "A tensor filled with fill_value; dtype inferred from it (bool, int64 or float32).\n"
      "\n"
      ">>> flambeau_core.full((2, 2), 7).tolist()\n"
      "[[7, 7], [7, 7]]\n"
      ">>> flambeau_core.full([3], 0.5).tolist()\n"
      "[0.5, 0.5, 0.5]");

  // The *_like factories: a new tensor shaped like `input`, laid out per
  // memory_format (preserve_format by default: Note [Preserving a layout]).
  auto like = [&m](const char* name, auto make, const char* doc) {
    m.def(
        name,
        [make, name](const Tensor& t, py::handle dtype, py::handle layout, py::handle device,
                     bool requires_grad, MemoryFormat memory_format) {
          profiler::RecordScope scope(name, profiler::EventKind::Op);
          check_layout(layout, name);
          const ScalarType dt = parse_dtype(dtype, t.dtype(), name);
          const Device d = like_device(device, t, name);
          // A broadcast (stride-0) input may have more elements than a new buffer can hold.
          shape_nbytes(t.sizes(), dt, name);
          return finish(without_gil([&] {
                          Tensor x = new_like(t, dt, d, memory_format, name);
                          return make(x);
                        }),
                        requires_grad);
        },
        py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("layout") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false,
        py::arg("memory_format") = MemoryFormat::Preserve, doc);
  };
  like("zeros_like", [](Tensor& x) -> Tensor { return op::fill_(x, Scalar(int64_t{0})); },
       "A tensor of zeros with input's shape, dtype and device (unless given).\n"
       "\n"
       ">>> x = flambeau_core.ones(2, 3, dtype=flambeau_core.int32)\n"
       ">>> y = flambeau_core.zeros_like(x)\n"
       ">>> y.tolist(), y.dtype == flambeau_core.int32\n"
       "([[0, 0, 0], [0, 0, 0]], True)");
  like("ones_like", [](Tensor& x) -> Tensor { return op::fill_(x, Scalar(int64_t{1})); },
       "A tensor of ones with input's shape, dtype and device (unless given).\n"
       "\n"
       ">>> flambeau_core.ones_like(flambeau_core.zeros(2), dtype=flambeau_core.int64).tolist()\n"
       "[1, 1]");
  like("empty_like", [](Tensor& x) -> Tensor { return x; },
       "An uninitialized tensor with input's shape, dtype and device (unless given).\n"
       "\n"
       ">>> x = flambeau_core.empty_like(flambeau_core.zeros(2, 3, dtype=flambeau_core.float64))\n"
       ">>> x.shape, x.dtype == flambeau_core.float64\n"
       "(flambeau.Size([2, 3]), True)");
  like("rand_like", [](Tensor& x) -> Tensor { return op::uniform_(x, 0.0, 1.0, nullptr); },
       "Uniform samples on [0, 1) with input's shape, dtype and device (the default generator).\n"
       "\n"
       ">>> _ = flambeau_core.manual_seed(0)\n"
       ">>> x = flambeau_core.rand_like(flambeau_core.zeros(2, 2))\n"
       ">>> x.shape, bool(((x >= 0) & (x < 1)).all())\n"
       "(flambeau.Size([2, 2]), True)");
  like("randn_like", [](Tensor& x) -> Tensor { return op::normal_(x, 0.0, 1.0, nullptr); },
       "Standard normal samples with input's shape, dtype and device (the default generator).\n"
       "\n"
       ">>> _ = flambeau_core.manual_seed(0)\n"
       ">>> x = flambeau_core.randn_like(flambeau_core.zeros(2, 3, dtype=flambeau_core.float64))\n"
       ">>> x.shape, x.dtype == flambeau_core.float64\n"
       "(flambeau.Size([2, 3]), True)");
  m.def(
      "full_like",
      [](const Tensor& t, py::handle fill_value, py::handle dtype, py::handle layout, py::handle device,
         bool requires_grad, MemoryFormat memory_format) {
        check_layout(layout, "full_like");
        const Scalar v = as_scalar(fill_value, "full_like");
        const ScalarType dt = parse_dtype(dtype, t.dtype(), "full_like");
        const Device d = like_device(device, t, "full_like");
        shape_nbytes(t.sizes(), dt, "full_like");
        return finish(without_gil([&] {
                        Tensor x = new_like(t, dt, d, memory_format, "full_like");
                        return op::fill_(x, v);
                      }),
                      requires_grad);
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("layout") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false,
      py::arg("memory_format") = MemoryFormat::Preserve,
      "A tensor filled with fill_value, with input's shape, dtype and device (unless given).\n"
      "\n"
      ">>> flambeau_core.full_like(flambeau_core.zeros(2), 5).tolist()\n"
      "[5.0, 5.0]");

  m.def(
      "_check_layout", [](py::handle layout, const std::string& op) { check_layout(layout, op.c_str()); },
      py::arg("layout"), py::arg("op"),
      "The layout= check of the factories: None or flambeau.strided pass; another layout raises "
      "NotImplementedError naming op, anything else TypeError.");
  m.def(
      "arange",
      [](py::handle start, py::handle end, py::handle step, py::handle out, py::handle dtype,
         py::handle layout, py::handle device, bool requires_grad) -> py::object {
        check_layout(layout, "arange");
        Scalar s = as_scalar(start, "arange");
        Scalar e = end.is_none() ? s : as_scalar(end, "arange");
        if (end.is_none()) s = Scalar(int64_t{0});
        const Scalar st = as_scalar(step, "arange");
        const bool any_float = s.is_floating() || e.is_floating() || st.is_floating();
        const ScalarType dt =
            factory_dtype(out, dtype, any_float ? default_float_dtype() : kDefaultInt, "arange");
        const Device d = factory_out_device(out, device, "arange");
        return finish_out("arange", op::arange(s, e, st, dt, d), out, requires_grad);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(),
      py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("layout") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "Values from start (default 0) to end (exclusive) by step. int64 unless an argument is a float.\n\n"
      ">>> flambeau_core.arange(3).tolist()\n[0, 1, 2]");

  m.def(
      "frombuffer", &frombuffer, py::arg("buffer"), py::kw_only(), py::arg("dtype"), py::arg("count") = -1,
      py::arg("offset") = 0,
      "A 1-D tensor sharing the memory of a buffer-protocol object (no copy): writes through either side are "
      "seen by the other, and the object stays alive while the tensor (or a view of it) does. offset is in "
      "bytes; count = -1 takes every element after it. A read-only buffer (bytes, a read-only memoryview or "
      "mmap) is copied instead, with a UserWarning: flambeau tensors are always writable, and writing "
      "through would change an immutable object.\n\n"
      ">>> flambeau_core.frombuffer(bytearray(b'AB'), dtype=flambeau_core.uint8).tolist()\n[65, 66]");

  auto cls = py::reinterpret_borrow<TensorClass>(m.attr("Tensor"));
  cls.def(
      "uniform_",
      recorded(
          "uniform_",
          [](Tensor& t, double a, double b, py::handle gen) -> Tensor& {
            Generator* g = parse_generator(gen);
            return without_gil([&]() -> Tensor& { return op::uniform_(t, a, b, g); });
          },
          kMethod | kWrite),
      py::arg("a") = 0.0, py::arg("b") = 1.0, py::kw_only(), py::arg("generator") = py::none(),
      "Fills self with uniform samples on [a, b); returns self.\n"
      "\n"
      ">>> x = flambeau_core.empty(3).uniform_(2.0, 3.0, generator=flambeau_core.Generator(seed=0))\n"
      ">>> bool(((x >= 2) & (x < 3)).all())\n"
      "True");
  cls.def(
      "normal_",
      recorded(
          "normal_",
          [](Tensor& t, double mean, double std, py::handle gen) -> Tensor& {
            Generator* g = parse_generator(gen);
            return without_gil([&]() -> Tensor& { return op::normal_(t, mean, std, g); });
          },
          kMethod | kWrite),
      py::arg("mean") = 0.0, py::arg("std") = 1.0, py::kw_only(), py::arg("generator") = py::none(),
      "Fills self with normal samples of the given mean and std; returns self.\n"
      "\n"
      ">>> x = flambeau_core.empty(1000).normal_(5.0, 0.1, generator=flambeau_core.Generator(seed=0))\n"
      ">>> abs(x.mean().item() - 5.0) < 0.05\n"
      "True");
}

}  // namespace flambeau::python
