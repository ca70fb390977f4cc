// Views from Python: view/reshape/transpose/permute/..., and indexing
// (__getitem__/__setitem__, basic and advanced; index_put_/index_put).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "arg_parser.h"
#include "common.h"
#include "flambeau/error.h"
#include "op_recorder.h"

namespace flambeau::python {
namespace {

using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
}

int64_t as_index(py::handle obj, const char* op) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  FB_CHECK_INDEX(!overflow, "[", op, "] index ", py::str(obj).cast<std::string>(), " does not fit in int64");
  return v;
}

// Note [Indexing from Python]
// An index is a tuple of items (a lone item is a 1-tuple). Basic items become
// view ops on self, in order: an int selects (its dim goes), a slice slices,
// None inserts a size-1 dim, one Ellipsis stands for as many whole dims as
// needed. Advanced items (an integer tensor, a bool or uint8 mask, or a list,
// tuple, range, array or other non-str sequence made into one) are collected into the list that op::index and
// op::index_put_ take for that view (Note [Advanced indexing]); a Python bool
// or 0-dim bool tensor inserts a size-1 dim indexed by [0] (True) or [] (False).
// Without advanced items the result is the view itself; with them it is a copy
// (getitem) or a write through the view (setitem). Where NumPy and PyTorch
// differ, this follows PyTorch: an int next to advanced items is applied as a
// view first, so for x of shape (2, 3, 4), x[0, :, [0, 1]] has shape (3, 2)
// (NumPy: (2, 3)); a list of floats is truncated to int64 as PyTorch does. A
// list is always one index (x[[[0, 1]]] is x[tensor([[0, 1]])]), as in NumPy
// and as PyTorch has announced; PyTorch 2.x still reads a short list holding
// sequences, slices or None as a tuple, with a deprecation warning.
enum class ItemKind { kEllipsis, kNone, kSlice, kInt, kBool, kTensor };

struct Item {
  ItemKind kind;
  py::handle obj;
  Tensor tensor;          // kTensor: the index or mask
  bool value = false;     // kBool
  int64_t dims() const {  // dims of self it consumes
    if (kind == ItemKind::kInt || kind == ItemKind::kSlice) return 1;
    if (kind != ItemKind::kTensor) return 0;
    const ScalarType t = tensor.dtype();
    return t == ScalarType::Bool || t == ScalarType::UInt8 ? tensor.dim() : 1;
  }
};

// Any sequence but a str or bytes (a list, tuple, range, deque, array.array, an
// n-d NumPy array) is one index tensor, as in PyTorch. A NumPy integer scalar or
// 0-d array (a sequence that is also an int) is an int. Only reached for items
// that are none of the common kinds, so the int/slice/tensor path pays nothing.
bool is_array_like(py::handle obj) {
  PyObject* p = obj.ptr();
  if (PyList_Check(p) || PyTuple_Check(p) || PyRange_Check(p)) return true;
  if (PyUnicode_Check(p) || PyBytes_Check(p) || PyByteArray_Check(p)) return false;
  if (!PySequence_Check(p) && !PyObject_CheckBuffer(p)) return false;
  if (!PyIndex_Check(p)) return true;
  py::object ndim = py::getattr(obj, "ndim", py::none());
  return PyLong_Check(ndim.ptr()) && ndim.cast<int64_t>() > 0;
}

/// A sequence (list, tuple, range, array, ...) as an index tensor: bool and uint8 stay masks,
/// anything else becomes int64 (floats truncated), as PyTorch's indexing does.
Tensor index_tensor_from(py::handle obj, const char* op) {
  if (std::optional<Tensor> r = range_tensor(obj)) return *r;
  Tensor r;
  // A wrong element type stays a TypeError, a wrong value (an int beyond int64, a ragged
  // nesting) a ValueError (FlambeauError), as PyTorch raises them.
  auto wrapped = [&](const std::string& why) {
    return detail::cat_str("[", op, "] a ", type_name(obj),
                           " index must hold only ints or bools (one index tensor; use a tuple to index "
                           "several dims): ",
                           why);
  };
  try {
    r = tensor_from_python(obj);
  } catch (const TypeError& e) {
    throw TypeError(wrapped(e.what()));
  } catch (const ValueError& e) {
    throw ValueError(wrapped(e.what()));
  } catch (py::error_already_set& e) {  // from the sequence itself (its __len__ or __getitem__)
    if (e.matches(PyExc_TypeError)) throw TypeError(wrapped(py::str(e.value()).cast<std::string>()));
    if (e.matches(PyExc_ValueError)) throw ValueError(wrapped(py::str(e.value()).cast<std::string>()));
    throw;
  }
  const ScalarType dt = r.dtype();
  if (dt == ScalarType::Bool || dt == ScalarType::UInt8 || dt == ScalarType::Int64) return r;
  return op::cast(r, ScalarType::Int64);
}

Item classify(py::handle it, const char* op) {
  if (it.ptr() == Py_Ellipsis) return {ItemKind::kEllipsis, it};
  if (it.is_none()) return {ItemKind::kNone, it};
  if (PyBool_Check(it.ptr())) return {ItemKind::kBool, it, Tensor(), it.ptr() == Py_True};
  if (PyLong_Check(it.ptr())) return {ItemKind::kInt, it};
  if (PySlice_Check(it.ptr())) return {ItemKind::kSlice, it};
  if (py::isinstance<TensorImpl>(it)) {
    Tensor t = it.cast<Tensor>();
    const ScalarType dt = t.dtype();
    if (t.dim() == 0 && (dt == ScalarType::Bool || dt == ScalarType::UInt8)) {
      // Tensor.__bool__ reads the value from any device (a meta tensor has none: NotImplementedError, as
      // PyTorch's item()); its memory may not be host-addressable.
      const int v =
          t.device().is_cpu() ? *static_cast<const uint8_t*>(t.data_ptr()) != 0 : PyObject_IsTrue(it.ptr());
      if (v < 0) throw py::error_already_set();
      return {ItemKind::kBool, it, Tensor(), v != 0};
    }
    if (t.dim() == 0 && is_integral(dt, false)) return {ItemKind::kInt, it};
    if (dt == ScalarType::UInt8 &&
        PyErr_WarnEx(
            PyExc_UserWarning,
            detail::cat_str("[", op,
                            "] indexing with a uint8 tensor is deprecated: it is read as a mask, as in "
                            "PyTorch; use a bool tensor instead")
                .c_str(),
            1) < 0)
      throw py::error_already_set();
    return {ItemKind::kTensor, it, std::move(t)};
  }
  if (is_array_like(it)) {
    Tensor t = index_tensor_from(it, op);
    if (t.dim() == 0 && t.dtype() == ScalarType::Bool)
      return {ItemKind::kBool, it, Tensor(), t.data<bool>()[0]};
    return {ItemKind::kTensor, it, std::move(t)};
  }
  if (PyIndex_Check(it.ptr()) && !PyUnicode_Check(it.ptr())) return {ItemKind::kInt, it};
  throw TypeError(detail::cat_str("[", op,
                                  "] only integers, slices (`:`), ellipsis (`...`), None, bools, integer or "
                                  "bool tensors and sequences of them are valid indices, got ",
                                  type_name(it)));
}

struct ParsedIndex {
  Tensor view;             // self with the basic items applied
  OptionalTensorList adv;  // op::index's list for `view`; empty if no advanced item
  Shape flip_dims;         // dims of `view` a negative slice step reverses (Note [Negative slice steps])
};

// Note [Negative slice steps]
// PyTorch refuses a slice with a negative step ("step must be greater than zero"); NumPy and the
// Array API standard take it. A strided view cannot hold it (strides are never negative here: every
// kernel and the storage bounds checks assume so), so parse_index slices the same elements with the
// positive step and records the dim in `flip_dims`: getitem returns op::flip of the view (a copy,
// which the standard allows: whether a result shares memory is left to the library), setitem writes
// the value flipped along those dims into the view (a number needs no flip). A tensor value with
// advanced items as well is refused (the flipped dims move in op::index's result). No PyTorch
// program changes: each of these raised before.

/// Note [Indexing from Python]. `keep_full_slices` = false skips `:` items (setitem writes through
/// self itself then, not through a view of it).
ParsedIndex parse_index(const Tensor& self, py::handle index, const char* op, bool keep_full_slices) {
  std::vector<Item> items;
  if (PyTuple_Check(index.ptr())) {
    for (py::handle it : py::reinterpret_borrow<py::tuple>(index)) items.push_back(classify(it, op));
  } else {
    items.push_back(classify(index, op));
  }
  int64_t consumed = 0;
  bool seen_ellipsis = false;
  for (const Item& it : items) {
    if (it.kind == ItemKind::kEllipsis) {
      FB_CHECK_INDEX(!seen_ellipsis, "[", op, "] an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    }
    consumed += it.dims();
  }
  FB_CHECK_INDEX(consumed <= self.dim(), "[", op, "] too many indices for a tensor of dimension ", self.dim(),
                 " (got ", consumed, ")");
  ParsedIndex r{self, {}};
  Tensor& cur = r.view;
  int64_t d = 0;        // the dim of `cur` the next item applies to
  int64_t src_d = 0;    // the same dim counted in self (for messages)
  int64_t covered = 0;  // dims of `cur` the entries of r.adv cover
  auto record = [&](Tensor t, int64_t dims) {
    for (; covered < d; ++covered) r.adv.emplace_back(std::nullopt);
    // Indices made from Python (and cpu index tensors, as PyTorch allows) go to self's device.
    if (!(t.device() == self.device()) && t.device().is_cpu())
      t = to_device_copy(t, self.device(), t.dtype(), false, op);
    r.adv.emplace_back(std::move(t));
    covered += dims;
  };
  for (const Item& it : items) {
    switch (it.kind) {
      case ItemKind::kEllipsis:
        d += self.dim() - consumed;
        src_d += self.dim() - consumed;
        break;
      case ItemKind::kNone:
        cur = op::unsqueeze(cur, d++);
        break;
      case ItemKind::kBool: {  // a new size-1 dim, taken (True) or not (False)
        cur = op::unsqueeze(cur, d);
        Tensor taken = op::empty(Shape{it.value ? 1 : 0}, ScalarType::Int64, Device(DeviceType::CPU));
        if (it.value) taken.data<int64_t>()[0] = 0;
        record(std::move(taken), 1);
        ++d;
        break;
      }
      case ItemKind::kSlice: {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(it.obj.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
        if (step < 0) {
          // Note [Negative slice steps]: the same elements by a positive step, reversed later.
          const Py_ssize_t len = PySlice_AdjustIndices(cur.sizes()[d], &start, &stop, step);
          if (len == 0) {
            cur = op::slice(cur, d, int64_t{0}, int64_t{0}, 1);
          } else {
            const int64_t last = start + (len - 1) * step;
            cur = op::slice(cur, d, last, static_cast<int64_t>(start) + 1, -static_cast<int64_t>(step));
            r.flip_dims.push_back(d);
          }
          ++d;
          ++src_d;
          break;
        }
        auto* sl = reinterpret_cast<PySliceObject*>(it.obj.ptr());
        std::optional<int64_t> b, e;
        if (sl->start != Py_None) b = start;
        if (sl->stop != Py_None) e = stop;
        if (keep_full_slices || b || e || step != 1) cur = op::slice(cur, d, b, e, step);
        ++d;
        ++src_d;
        break;
      }
      case ItemKind::kTensor:
        record(it.tensor, it.dims());
        d += it.dims();
        src_d += it.dims();
        break;
      case ItemKind::kInt: {
        const int64_t i = as_index(it.obj, op);
        const int64_t n = cur.sizes()[d];
        FB_CHECK_INDEX(i >= -n && i < n, "[", op, "] index ", i, " is out of bounds for dimension ", src_d,
                       " with size ", n);
        cur = op::select(cur, d, i);
        ++src_d;
        break;
      }
    }
  }
  return r;
}

Tensor getitem(const Tensor& self, py::handle index) {
  // x[i] with a plain int (a Dataset's per-sample read): the view along dim 0, without parsing an index.
  if (PyLong_CheckExact(index.ptr()) && self.dim() > 0) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    const int64_t n = self.sizes()[0];
    if (!overflow && i >= -n && i < n) return op::select(self, 0, i);
  }
  ParsedIndex r = parse_index(self, index, "getitem", /*keep_full_slices=*/true);
  if (!r.flip_dims.empty()) r.view = without_gil([&] { return op::flip(r.view, r.flip_dims); });
  if (!r.adv.empty()) return without_gil([&] { return op::index(r.view, r.adv); });
  // t[...] and t[()] still return a new view, as in PyTorch.
  if (r.view.is_same(self)) return op::as_strided(self, self.sizes(), self.strides(), self.storage_offset());
  return r.view;
}

// Note [__torch_function__]: an index or value that overrides (vmap's BatchedTensor) makes the parse or the
// write fail; then, and only then, the call goes to its __torch_function__ with Tensor.__getitem__/__setitem__.
py::object overridden_index_call(const char* name, const Tensor& self, PyObject* const* args, Py_ssize_t nargs) {
  py::object me = py::cast(self);
  PyObject* r = handle_torch_function(name, true, me.ptr(), args, nargs, nullptr);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

py::object getitem_overridable(const Tensor& self, py::handle index) {
  try {
    return py::cast(getitem(self, index));
  } catch (...) {
    PyObject* args[] = {index.ptr()};
    if (!has_torch_function(args, 1, nullptr)) throw;
  }
  PyObject* args[] = {index.ptr()};
  return overridden_index_call("__getitem__", self, args, 1);
}

// Note [Tensor slots]
// `x[i]` with a Python int is a map-style Dataset's per-sample read, made
// hundreds of times per batch, so the Tensor type's mp_subscript slot is a C
// function of its own rather than CPython's generic slot (which looks up
// `__getitem__`, binds a method object and enters pybind11's overload
// dispatch, which converts the arguments). For an exact int in range on a
// tensor with dims, while no op recorder is on (Note [Op recorder]), it calls
// op::select (so autograd records select's backward, and the profiler and
// autocast observe the op, Note [Observation]) and wraps the new view without
// looking it up in pybind11's instance registry (no Python object can hold an
// impl just made; it is registered as any other, Note [Python Tensor
// identity]). Everything else (an int out of range: the generic path raises
// the IndexError; a 0-d tensor; bools, None, slices, tensors, ...), and every
// call while recording, goes to the generic slot, i.e. the bound `__getitem__`. Subclasses of
// Tensor defined in Python get CPython's generic slot, as before. len() and
// `.shape` are C slots the same way (bind_tensor.cpp).
binaryfunc g_generic_subscript = nullptr;

/// `t` as a new Python Tensor object; `t`'s impl must be one no Python object holds yet.
/// pybind11's own path (allocate_layout, then init_instance) looks the type up three times per object
/// (all_type_info twice, get_type_info(typeid) once); the exact Tensor type's layout is the simple one
/// (one type, the shared_ptr holder inline), found by the first object made, so later ones set it directly.
PyObject* wrap_fresh_tensor(const Tensor& t) {
  const py::detail::type_info* ti = py::detail::flambeau_tensor_type_info();
  if (t.impl_ptr().use_count() != 1) return py::cast(t).release().ptr();  // shared: identity lookup
  PyObject* obj = ti->type->tp_alloc(ti->type, 0);
  if (!obj) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  static bool simple_layout = false;  // under the GIL
  if (simple_layout) {
    inst->simple_layout = true;
    inst->simple_value_holder[0] = nullptr;
    inst->simple_holder_constructed = false;
    inst->simple_instance_registered = false;
  } else {
    inst->allocate_layout();
    simple_layout = inst->simple_layout;
  }
  inst->owned = true;
  py::detail::value_and_holder v_h = inst->get_value_and_holder(ti, false);  // exact type: no lookup
  v_h.value_ptr() = t.impl();
  py::detail::register_instance(inst, v_h.value_ptr(), ti);  // Note [Python Tensor identity]
  v_h.set_instance_registered();
  new (std::addressof(v_h.holder<std::shared_ptr<TensorImpl>>())) std::shared_ptr<TensorImpl>(t.impl_ptr());
  v_h.set_holder_constructed();
  return obj;
}

// Note [Tensor dealloc]
// Each x[i] view a Dataset returns is freed a moment later (once default_collate has copied it), so the
// exact Tensor type's tp_dealloc is a C function of its own too, as its mp_subscript (Note [Tensor
// slots]). pybind11's (pybind11_object_dealloc) walks the instance's values and holders (a type-info
// cache lookup), reads the dict pointer and checks patients and weak references; an exact Tensor object
// has no dict and the simple layout, so for one with its holder made, no weak reference and no patient,
// this does what that path does for it and nothing else: deregister it (Note [Python Tensor identity]),
// destroy the shared_ptr holder with any pending Python error kept aside (as pybind11's error_scope),
// free the object and drop the type's reference. Anything else (a subclass instance, a weak reference,
// a holder not made) takes pybind11's function, kept in g_generic_dealloc.
destructor g_generic_dealloc = nullptr;

void tensor_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  const py::detail::type_info* ti = py::detail::flambeau_tensor_type_info();
  if (!ti || type != ti->type || !inst->simple_layout || !inst->simple_holder_constructed || inst->weakrefs ||
      inst->has_patients || PyType_HasFeature(type, Py_TPFLAGS_HAVE_GC)) [[unlikely]] {
    g_generic_dealloc(self);
    return;
  }
  py::detail::value_and_holder v_h(inst, ti, 0, 0);
  if (inst->simple_instance_registered && !py::detail::deregister_instance(inst, v_h.value_ptr(), ti))
    py::pybind11_fail("pybind11_object_dealloc(): Tried to deallocate unregistered instance!");
  {
    py::error_scope scope;  // a deleter of the storage may run Python code
    v_h.holder<std::shared_ptr<TensorImpl>>().~shared_ptr();
    v_h.set_holder_constructed(false);
    v_h.value_ptr() = nullptr;
  }
  type->tp_free(self);
  Py_DECREF(type);
}

// Note [Prefetching a sample]
// x[i] with an int is, nearly always, a Dataset reading one sample whose bytes are read next: by
// default_collate's copy into the batch (Note [Stacking samples]) or by the first op on it. A shuffled
// sample of a large dataset is cold in every cache, and that copy then waits on memory row after row
// (about half of a 0-worker epoch of 1x28x28 samples). So the fast path below asks the cpu to start
// loading the view's bytes into the cache (a prefetch: no fault, no effect on the results, nothing for
// an address that is not mapped) and returns: the loads proceed while Python runs the rest of the
// Dataset's code and reads the other samples, and the copy finds them in cache. Only a contiguous cpu
// view of at most kPrefetchBytes (MNIST's 3 KB, CIFAR's 12 KB samples), so a large row is not pulled
// in whole for nothing.
constexpr size_t kPrefetchBytes = size_t{16} << 10;

void prefetch_view(const TensorImpl& v) {
  if (!v.is_contiguous() || !v.device().is_cpu()) return;
  const auto* p = static_cast<const char*>(v.data());
  const size_t n = static_cast<size_t>(v.numel()) * itemsize(v.dtype());
  if (!p || n == 0 || n > kPrefetchBytes) return;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  for (uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}; a < end; a += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 1);  // read, into L2 (not L1)
}

PyObject* tensor_subscript(PyObject* self, PyObject* index) {
  if (PyLong_CheckExact(index) && !op_recorder_on()) [[likely]] {
    const std::shared_ptr<TensorImpl>* holder = tensor_holder(self);
    if (holder && (*holder)->dim() > 0) {
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(index, &overflow);
      const int64_t n = (*holder)->sizes()[0];
      if (!overflow && i >= -n && i < n) {
        try {
          Tensor v = op::select(Tensor(*holder), 0, i);
          prefetch_view(*v.impl());  // Note [Prefetching a sample]
          return wrap_fresh_tensor(v);
        } catch (...) {
          set_python_error();
          return nullptr;
        }
      }
    }
  }
  return g_generic_subscript(self, index);
}

// Note [Stacking samples]
// A DataLoader batch of the usual map-style Dataset is a list of many small
// tensors of one shape (views `x[i]` of one dataset tensor, 0-d labels
// `y[i]`), which default_collate stacks. stack (and cat) make a tensor
// iterator, or a view per sample, and dispatch per input; here each sample's
// bytes are copied straight into the batch: one allocation, a memcpy per
// sample (without the GIL), no Python object made per sample. Only for the
// plain case: exact Tensor samples (not subclasses), on the cpu, contiguous,
// one dtype and shape, none needing autograd, while neither the profiler nor
// autocast (Note [Observation]) nor an op recorder watches; anything else
// returns None and the caller stacks, so errors, promotion and recorded graphs
// stay stack's.
// `field` < 0: the samples are objs[0..n); else field `field` of each tuple objs[i] (checked by the caller).
PyObject* sample_at(PyObject* const* objs, int64_t i, Py_ssize_t field) {
  return field < 0 ? objs[i] : PyTuple_GET_ITEM(objs[i], field);
}

/// The stacked samples, or an undefined Tensor where Note [Stacking samples] does not apply.
Tensor stack_sample_column(PyObject* const* objs, int64_t n, Py_ssize_t field) {
  const py::detail::type_info* ti = py::detail::flambeau_tensor_type_info();
  std::vector<Tensor> items;  // owning: another thread may change the list while the GIL is released
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    PyObject* obj = sample_at(objs, i, field);
    if (Py_TYPE(obj) != ti->type) return Tensor();
    const std::shared_ptr<TensorImpl>* h = tensor_holder(obj);
    if (!h) return Tensor();
    const TensorImpl& t = **h;
    if (!t.device().is_cpu() || !t.is_contiguous() || t.needs_autograd()) return Tensor();
    if (i > 0 && (t.dtype() != items[0].dtype() || !std::ranges::equal(t.sizes(), items[0].sizes())))
      return Tensor();
    items.emplace_back(*h);
  }
  const Tensor& first = items[0];
  Shape shape{n};
  shape.insert(shape.end(), first.sizes().begin(), first.sizes().end());
  Tensor out = op::empty(shape, first.dtype(), Device(DeviceType::CPU));
  const size_t nbytes = static_cast<size_t>(first.numel()) * itemsize(first.dtype());
  if (nbytes) {
    py::gil_scoped_release no_gil;
    auto* dst = static_cast<char*>(out.data_ptr());
    for (const Tensor& t : items) {
      std::memcpy(dst, t.data_ptr(), nbytes);
      dst += nbytes;
    }
  }
  return out;
}

bool stacking_applies(py::handle samples, int64_t n) {
  return (PyList_Check(samples.ptr()) || PyTuple_Check(samples.ptr())) && n > 0 &&
         !detail::g_observe.load(std::memory_order_relaxed) && !op_recorder_on();
}

py::object stack_samples(py::handle samples) {
  if (!PyList_Check(samples.ptr()) && !PyTuple_Check(samples.ptr())) return py::none();
  const auto n = static_cast<int64_t>(PySequence_Fast_GET_SIZE(samples.ptr()));
  if (!stacking_applies(samples, n)) return py::none();
  Tensor out = stack_sample_column(PySequence_Fast_ITEMS(samples.ptr()), n, -1);
  return out.defined() ? py::cast(out) : py::none();
}

// The x[i], y[i] Dataset's batch: a list of same-length tuples of tensors. default_collate transposes it
// and stacks each position; here each position is stacked as stack_samples does, straight from the
// tuples: a list of the stacked tensors, or None (nothing made) where any position does not apply.
py::object stack_sample_fields(py::handle samples) {
  if (!PyList_Check(samples.ptr()) && !PyTuple_Check(samples.ptr())) return py::none();
  const auto n = static_cast<int64_t>(PySequence_Fast_GET_SIZE(samples.ptr()));
  if (!stacking_applies(samples, n)) return py::none();
  // Each column's copy releases the GIL: another thread changing the list meanwhile would move its item
  // array under the next column, so the items are read from a tuple of them (a tuple is itself).
  auto frozen = py::reinterpret_steal<py::tuple>(PySequence_Tuple(samples.ptr()));
  if (!frozen) throw py::error_already_set();
  PyObject* const* objs = PySequence_Fast_ITEMS(frozen.ptr());
  if (!PyTuple_CheckExact(objs[0])) return py::none();
  const Py_ssize_t k = PyTuple_GET_SIZE(objs[0]);
  if (k == 0) return py::none();
  for (int64_t i = 1; i < n; ++i)
    if (!PyTuple_CheckExact(objs[i]) || PyTuple_GET_SIZE(objs[i]) != k) return py::none();
  std::vector<Tensor> columns;
  columns.reserve(static_cast<size_t>(k));
  for (Py_ssize_t f = 0; f < k; ++f) {
    columns.push_back(stack_sample_column(objs, n, f));
    if (!columns.back().defined()) return py::none();
  }
  py::list out(k);
  for (Py_ssize_t f = 0; f < k; ++f) out[f] = py::cast(columns[static_cast<size_t>(f)]);
  return out;
}

/// `value` as a tensor broadcast to `shape` (leading size-1 dims of the value may be dropped, as in PyTorch).
Tensor broadcast_value(const Tensor& value, IntArrayRef shape) {
  Tensor v = value;
  const auto nd = static_cast<int64_t>(shape.size());
  while (v.dim() > nd && v.sizes()[0] == 1) v = op::squeeze(v, Shape{0});
  bool ok = v.dim() <= nd;
  for (int64_t i = 1; ok && i <= v.dim(); ++i) {
    const int64_t vs = v.sizes()[v.dim() - i], ts = shape[nd - i];
    ok = vs == ts || vs == 1;
  }
  FB_CHECK_VALUE(ok, "[setitem] shape mismatch: value of shape ", shape_str(value.sizes()),
                 " cannot be broadcast to the indexed shape ", shape_str(shape));
  return op::expand(v, shape);
}

bool is_number(py::handle value) {
  return PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
         PyComplex_Check(value.ptr()) || (py::hasattr(value, "__float__") && !py::hasattr(value, "__len__"));
}

// Basic indices write into the view with one copy_/fill_. Advanced ones call
// index_put_ on the view, with the value cast to self's dtype and its leading
// size-1 dims dropped (as PyTorch does), so it broadcasts to the indexed shape.
void setitem(Tensor& self, py::handle index, py::handle value) {
  const bool tensor_value = py::isinstance<TensorImpl>(value);
  if (!tensor_value && !is_number(value))
    throw TypeError(detail::cat_str("[setitem] can assign a Tensor or a number, got ", type_name(value)));
  ParsedIndex r = parse_index(self, index, "setitem", /*keep_full_slices=*/false);
  Tensor& target = r.view;
  // Python is done with here: the writes run without the GIL (Note [The GIL around kernels]).
  const Tensor tv = tensor_value ? value.cast<Tensor>() : Tensor();
  Scalar s = tensor_value ? Scalar() : as_scalar(value, "setitem");
  if (s.is_complex() && !is_complex(target.dtype())) {
    // As PyTorch: a complex number goes into a bool tensor as its truth value, into another real
    // dtype only with a zero imaginary part (RuntimeError naming the value and the dtype otherwise).
    if (target.dtype() == ScalarType::Bool)
      s = Scalar(s.to_double() != 0.0 || s.imag() != 0.0);
    else
      check_scalar_fits(s, target.dtype(), "setitem");
  }
  if (tensor_value && !r.flip_dims.empty() && !r.adv.empty())
    throw NotImplementedError(
        "[setitem] a slice with a negative step together with tensor indices takes only a number as the "
        "value");
  py::gil_scoped_release no_gil;
  if (r.adv.empty()) {
    if (tensor_value) {
      Tensor v = broadcast_value(tv, target.sizes());
      op::copy_(target, r.flip_dims.empty() ? v : op::flip(v, r.flip_dims));
    } else {
      // fill_ accepts an expanded tensor (as PyTorch's does); setitem refuses, as PyTorch's.
      check_no_internal_overlap(target, "setitem");
      op::fill_(target, s);
    }
    return;
  }
  Tensor v;
  if (tensor_value) {
    v = tv;
    if (v.dtype() != target.dtype()) v = op::cast(v, target.dtype());
    Shape leading_ones;
    while (static_cast<int64_t>(leading_ones.size()) < v.dim() && v.sizes()[leading_ones.size()] == 1)
      leading_ones.push_back(static_cast<int64_t>(leading_ones.size()));
    if (!leading_ones.empty()) v = op::squeeze(v, leading_ones);
  } else {
    v = scalar_tensor(s, target.dtype());  // Note [Scalar overflow]: via fill_
  }
  op::index_put_(target, r.adv, v, false);
}

void setitem_overridable(Tensor& self, py::handle index, py::handle value) {
  try {
    setitem(self, index, value);
    return;
  } catch (...) {
    PyObject* args[] = {index.ptr(), value.ptr()};
    if (!has_torch_function(args, 2, nullptr)) throw;
  }
  PyObject* args[] = {index.ptr(), value.ptr()};
  overridden_index_call("__setitem__", self, args, 2);
}

/// index_put_'s `indices`: a tuple or list of tensors (None: a whole dim).
OptionalTensorList parse_index_list(py::handle obj, const char* op) {
  if (!PyTuple_Check(obj.ptr()) && !PyList_Check(obj.ptr()))
    throw TypeError(
        detail::cat_str("[", op, "] indices must be a tuple or list of tensors, got ", type_name(obj)));
  OptionalTensorList out;
  size_t i = 0;
  for (py::handle it : obj) {
    if (it.is_none())
      out.emplace_back(std::nullopt);
    else if (py::isinstance<TensorImpl>(it))
      out.emplace_back(it.cast<Tensor>());
    else
      throw TypeError(detail::cat_str("[", op, "] indices must be tensors (or None), element ", i, " is a ",
                                      type_name(it)));
    ++i;
  }
  return out;
}

Tensor& index_put_py(Tensor& self, py::handle indices, const Tensor& values, bool accumulate) {
  return op::index_put_(self, parse_index_list(indices, "index_put_"), values, accumulate);
}

Tensor index_put_out_of_place(const Tensor& self, py::handle indices, const Tensor& values, bool accumulate) {
  return index_put(self, parse_index_list(indices, "index_put"), values, accumulate);
}

Shape parse_dims_arg(const py::args& args, const char* op) { return parse_shape(args, op); }

Tensor squeeze_py(const Tensor& t, py::handle dim) {
  if (dim.is_none()) return op::squeeze(t, Shape{});
  if (PyIndex_Check(dim.ptr())) return op::squeeze(t, Shape{as_int64(dim, "squeeze", "dim")});
  Shape dims = parse_int_sequence(dim, "squeeze", "dim");
  if (dims.empty()) return op::as_strided(t, t.sizes(), t.strides(), t.storage_offset());
  return op::squeeze(t, dims);
}

Tensor narrow_py(const Tensor& t, py::handle dim_arg, py::handle start_arg, py::handle length_arg) {
  const int64_t dim = as_int64(dim_arg, "narrow", "dim");
  int64_t start = as_int64(start_arg, "narrow", "start");
  const int64_t length = as_int64(length_arg, "narrow", "length");
  FB_CHECK_INDEX(t.dim() > 0, "[narrow] cannot narrow a 0-d tensor");
  const int64_t d = wrap_dim(dim, t.dim(), "narrow");
  const int64_t n = t.sizes()[d];
  FB_CHECK_INDEX(start >= -n && start <= n, "[narrow] start ", start, " is out of range for dimension ", d,
                 " with size ", n);
  if (start < 0) start += n;
  FB_CHECK_VALUE(length >= 0 && length <= n - start, "[narrow] start (", start, ") + length (", length,
                 ") exceeds dimension ", d, " of size ", n);
  return op::slice(t, d, start, start + length, 1);
}

py::tuple unbind(const Tensor& t, int64_t dim) {
  FB_CHECK_INDEX(t.dim() > 0, "[unbind] cannot unbind a 0-d tensor");
  const int64_t d = wrap_dim(dim, t.dim(), "unbind");
  py::tuple out(t.sizes()[d]);
  for (int64_t i = 0; i < t.sizes()[d]; ++i) out[i] = py::cast(op::select(t, d, i));
  return out;
}

Tensor as_strided_py(const Tensor& t, py::handle size, py::handle stride, py::handle offset) {
  const Shape sizes = parse_int_sequence(size, "as_strided", "size");
  const Shape strides = parse_int_sequence(stride, "as_strided", "stride");
  const int64_t off =
      offset.is_none() ? t.storage_offset() : as_int64(offset, "as_strided", "storage_offset");
  return op::as_strided(t, sizes, strides, off);
}

Tensor matrix_transpose(const Tensor& t) {
  FB_CHECK_VALUE(t.dim() >= 2, "[mT] needs a tensor with at least 2 dims, got shape ", shape_str(t.sizes()));
  return op::transpose(t, -2, -1);
}

Tensor reverse_dims(const Tensor& t) {
  Shape dims(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) dims[i] = t.dim() - 1 - i;
  return op::permute(t, dims);
}

}  // namespace

void init_views(py::module_& m) {
  auto cls = py::reinterpret_borrow<TensorClass>(m.attr("Tensor"));
  cls.def(
         "view",
         recorded("view",
                  [](const Tensor& t, py::args shape) {
                    // view(dtype): the same memory as another dtype (a dtype is an int to pybind11, so first).
                    if (shape.size() == 1 && py::isinstance<ScalarType>(shape[0]))
                      return op::view_dtype(t, shape[0].cast<ScalarType>());
                    return op::view(t, parse_dims_arg(shape, "view"));
                  }),
         "A view with another shape (one size may be -1), or view(dtype): the same memory read as another\n"
         "dtype; shares memory. ValueError if the strides do not allow it (use reshape).\n"
         "\n"
         ">>> x = flambeau_core.arange(6)\n"
         ">>> x.view(2, 3).tolist()\n"
         "[[0, 1, 2], [3, 4, 5]]\n"
         ">>> flambeau_core.tensor([0.0, 1.0]).view(flambeau_core.int32).tolist()\n"
         "[0, 1065353216]")
      .def(
          "reshape",
          recorded("reshape",
                   [](const Tensor& t, py::args shape) { return reshape(t, parse_dims_arg(shape, "reshape")); }),
          "Like view, but copies when the memory layout requires it.\n"
          "\n"
          ">>> flambeau_core.arange(6).reshape(3, -1).tolist()\n"
          "[[0, 1], [2, 3], [4, 5]]\n"
          ">>> flambeau_core.zeros(2, 3).t().reshape(6).shape  # not viewable: a copy\n"
          "flambeau.Size([6])")
      .def(
          "transpose",
          recorded("transpose", [](const Tensor& t, int64_t d0, int64_t d1) { return op::transpose(t, d0, d1); }),
          py::arg("dim0"), py::arg("dim1"),
          "A view with dims dim0 and dim1 swapped.\n\n>>> flambeau_core.zeros(2, 3).transpose(0, 1).shape\n"
          "flambeau.Size([3, 2])")
      .def("t",
           recorded("t", [](const Tensor& t) {
             FB_CHECK_VALUE(t.dim() <= 2, "[t] expects a tensor with <= 2 dims, got shape ",
                            shape_str(t.sizes()));
             return t.dim() < 2 ? op::as_strided(t, t.sizes(), t.strides(), t.storage_offset())
                                : op::transpose(t, 0, 1);
           }),
           "The transpose of a tensor of <= 2 dims (a view; a 0-d or 1-d tensor as it is).\n"
           "\n"
           ">>> flambeau_core.arange(6).reshape(2, 3).t().tolist()\n"
           "[[0, 3], [1, 4], [2, 5]]")
      .def_property_readonly("T", recorded("T", &reverse_dims))
      .def_property_readonly("mT", recorded("mT", &matrix_transpose))
      .def(
          "permute",
          recorded("permute",
                   [](const Tensor& t, py::args dims) { return op::permute(t, parse_dims_arg(dims, "permute")); }),
          "A view with the dims reordered.\n\n>>> flambeau_core.zeros(2, 3, 4).permute(2, 0, 1).shape\n"
          "flambeau.Size([4, 2, 3])")
      .def(
          "unsqueeze", recorded("unsqueeze", [](const Tensor& t, int64_t dim) { return op::unsqueeze(t, dim); }),
          py::arg("dim"),
          "A view with a size-1 dim inserted at dim.\n\n>>> flambeau_core.zeros(3).unsqueeze(0).shape\n"
          "flambeau.Size([1, 3])")
      .def("squeeze", recorded("squeeze", &squeeze_py), py::arg("dim") = py::none(),
           "A view without size-1 dims (all, or the given dim(s); a dim of another size is kept).\n\n"
           ">>> flambeau_core.zeros(1, 3, 1).squeeze().shape\nflambeau.Size([3])")
      .def(
          "expand",
          recorded("expand",
                   [](const Tensor& t, py::args sizes) { return op::expand(t, parse_dims_arg(sizes, "expand")); }),
          "A broadcast view (stride 0) to a larger shape; -1 keeps a size.\n\n"
          ">>> flambeau_core.zeros(3, 1).expand(2, 3, 4).shape\nflambeau.Size([2, 3, 4])")
      .def(
          "expand_as",
          recorded("expand_as", [](const Tensor& t, const Tensor& other) { return expand_as(t, other); }),
          py::arg("other"),
          "self.expand(other.shape): a broadcast view (stride 0) to other's shape.\n"
          "\n"
          ">>> flambeau_core.tensor([[1], [2]]).expand_as(flambeau_core.zeros(2, 3)).tolist()\n"
          "[[1, 1, 1], [2, 2, 2]]")
      .def(
          "flatten", recorded("flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); }),
          py::arg("start_dim") = 0, py::arg("end_dim") = -1,
          "Merges dims start_dim..end_dim into one (a view when possible).\n\n"
          ">>> flambeau_core.zeros(2, 3, 4).flatten(1).shape\nflambeau.Size([2, 12])")
      .def("narrow", recorded("narrow", &narrow_py), py::arg("dim"), py::arg("start"), py::arg("length"),
           "The view t[..., start:start+length, ...] along dim.\n"
           "\n"
           ">>> flambeau_core.arange(5).narrow(0, 1, 3).tolist()\n"
           "[1, 2, 3]")
      .def(
          "select",
          recorded("select", [](const Tensor& t, int64_t dim, int64_t index) { return op::select(t, dim, index); }),
          py::arg("dim"), py::arg("index"),
          "The view at `index` along dim (that dim removed).\n"
          "\n"
          ">>> flambeau_core.arange(6).reshape(2, 3).select(0, 1).tolist()\n"
          "[3, 4, 5]")
      .def("unbind", recorded("unbind", &unbind), py::arg("dim") = 0,
           "A tuple of the views select(dim, i) for every i.\n"
           "\n"
           ">>> [t.tolist() for t in flambeau_core.arange(4).reshape(2, 2).unbind(1)]\n"
           "[[0, 2], [1, 3]]")
      .def("as_strided", &as_strided_py, py::arg("size"), py::arg("stride"),
           py::arg("storage_offset") = py::none(),
           "A view with explicit sizes, strides (in elements) and storage offset; ValueError if it would\n"
           "reach outside the storage.\n"
           "\n"
           ">>> flambeau_core.arange(6).as_strided((2, 2), (2, 1), 1).tolist()\n"
           "[[1, 2], [3, 4]]")
      .def(
          "__getitem__", recorded("__getitem__", &getitem_overridable),
          "Basic indexing (ints, slices with step > 0, None, ...) returns a view; advanced indexing (integer "
          "or bool tensors, lists, ranges, arrays or other sequences, bools; any number of them, mixed with "
          "basic items) returns a copy, as in PyTorch.\n\n>>> x = flambeau_core.arange(12).reshape(3, 4)\n"
          ">>> x[[0, 2], [1, 3]].tolist()\n[1, 11]\n>>> x[range(3), [0, 1, 2]].tolist()\n[0, 5, 10]")
      .def("__setitem__", recorded("__setitem__", &setitem_overridable, kMethod | kWrite),
           "Writes value (a tensor or number, broadcast and cast to self's dtype) at the indexed positions.")
      .def("index_put_", recorded("index_put_", &index_put_py, kMethod | kWrite), py::arg("indices"),
           py::arg("values"), py::arg("accumulate") = false,
           "self[indices] = values with indices a tuple of index tensors (or None for a whole dim); "
           "values must have self's dtype and broadcast to the indexed shape. With accumulate=True, "
           "values at repeated indices are summed into self.\n\n>>> x = flambeau_core.zeros(3)\n"
           ">>> x.index_put_((flambeau_core.tensor([0, 0, 2]),), flambeau_core.tensor([1.0, 2.0, 3.0]), "
           "accumulate=True).tolist()\n[3.0, 0.0, 3.0]")
      .def("index_put", recorded("index_put", &index_put_out_of_place), py::arg("indices"), py::arg("values"),
           py::arg("accumulate") = false,
           "The out-of-place index_put_: a copy of self with values put at indices.\n"
           "\n"
           ">>> x = flambeau_core.zeros(3)\n"
           ">>> x.index_put((flambeau_core.tensor([1]),), flambeau_core.tensor([5.0])).tolist(), "
           "x.tolist()\n"
           "([0.0, 5.0, 0.0], [0.0, 0.0, 0.0])");

  m.def(
      "reshape",
      recorded("reshape",
               [](const Tensor& t, py::handle shape) {
                 return reshape(t, parse_int_sequence(shape, "reshape", "shape"));
               },
               kFunction),
      py::arg("input"), py::arg("shape"),
      "reshape(input, shape) -> Tensor\n"
      "\n"
      "input with another shape (one size may be -1): a view when the strides allow it, else a copy.\n"
      "\n"
      ">>> flambeau_core.reshape(flambeau_core.arange(6), (2, -1)).tolist()\n"
      "[[0, 1, 2], [3, 4, 5]]");
  m.def(
      "transpose",
      recorded(
          "transpose", [](const Tensor& t, int64_t d0, int64_t d1) { return op::transpose(t, d0, d1); }, kFunction),
      py::arg("input"), py::arg("dim0"), py::arg("dim1"),
      "transpose(input, dim0, dim1) -> Tensor\n"
      "\n"
      "A view of input with dims dim0 and dim1 swapped.\n"
      "\n"
      ">>> flambeau_core.transpose(flambeau_core.zeros(2, 3), 0, 1).shape\n"
      "flambeau.Size([3, 2])");
  m.def(
      "permute",
      recorded("permute",
               [](const Tensor& t, py::handle dims) {
                 return op::permute(t, parse_int_sequence(dims, "permute", "dims"));
               },
               kFunction),
      py::arg("input"), py::arg("dims"),
      "permute(input, dims) -> Tensor\n"
      "\n"
      "A view of input with its dims reordered.\n"
      "\n"
      ">>> flambeau_core.permute(flambeau_core.zeros(2, 3, 4), (2, 0, 1)).shape\n"
      "flambeau.Size([4, 2, 3])");
  m.def(
      "unsqueeze",
      recorded("unsqueeze", [](const Tensor& t, int64_t dim) { return op::unsqueeze(t, dim); }, kFunction),
      py::arg("input"), py::arg("dim"),
      "unsqueeze(input, dim) -> Tensor\n"
      "\n"
      "A view of input with a size-1 dim inserted at dim.\n"
      "\n"
      ">>> flambeau_core.unsqueeze(flambeau_core.zeros(3), 1).shape\n"
      "flambeau.Size([3, 1])");
  m.def("squeeze", recorded("squeeze", &squeeze_py, kFunction), py::arg("input"), py::arg("dim") = py::none(),
      "squeeze(input, dim=None) -> Tensor\n"
      "\n"
      "A view of input without size-1 dims (all, or the given dim(s); a dim of another size is kept).\n"
      "\n"
      ">>> flambeau_core.squeeze(flambeau_core.zeros(1, 3, 1)).shape\n"
      "flambeau.Size([3])\n"
      ">>> flambeau_core.squeeze(flambeau_core.zeros(1, 3, 1), 0).shape\n"
      "flambeau.Size([3, 1])");
  m.def(
      "flatten",
      recorded("flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); }, kFunction),
      py::arg("input"), py::arg("start_dim") = 0, py::arg("end_dim") = -1,
      "flatten(input, start_dim=0, end_dim=-1) -> Tensor\n"
      "\n"
      "Merges dims start_dim..end_dim into one (a view when possible).\n"
      "\n"
      ">>> flambeau_core.flatten(flambeau_core.zeros(2, 3, 4)).shape\n"
      "flambeau.Size([24])\n"
      ">>> flambeau_core.flatten(flambeau_core.zeros(2, 3, 4), 1).shape\n"
      "flambeau.Size([2, 12])");
  m.def("narrow", recorded("narrow", &narrow_py, kFunction), py::arg("input"), py::arg("dim"), py::arg("start"),
        py::arg("length"),
      "narrow(input, dim, start, length) -> Tensor\n"
      "\n"
      "The view input[..., start:start+length, ...] along dim.\n"
      "\n"
      ">>> flambeau_core.narrow(flambeau_core.arange(6).reshape(2, 3), 1, 1, 2).tolist()\n"
      "[[1, 2], [4, 5]]");
  m.def(
      "select",
      recorded(
          "select", [](const Tensor& t, int64_t dim, int64_t index) { return op::select(t, dim, index); }, kFunction),
      py::arg("input"), py::arg("dim"), py::arg("index"),
      "select(input, dim, index) -> Tensor\n"
      "\n"
      "The view at index along dim (that dim removed).\n"
      "\n"
      ">>> flambeau_core.select(flambeau_core.arange(6).reshape(2, 3), 1, 0).tolist()\n"
      "[0, 3]");
  m.def("unbind", recorded("unbind", &unbind, kFunction), py::arg("input"), py::arg("dim") = 0,
      "unbind(input, dim=0) -> tuple\n"
      "\n"
      "A tuple of the views select(input, dim, i) for every i.\n"
      "\n"
      ">>> [t.tolist() for t in flambeau_core.unbind(flambeau_core.arange(6).reshape(2, 3))]\n"
      "[[0, 1, 2], [3, 4, 5]]");
  m.def("index_put_", recorded("index_put_", &index_put_py, kFunction | kWrite), py::arg("input"),
        py::arg("indices"), py::arg("values"),
        py::arg("accumulate") = false,
      "index_put_(input, indices, values, accumulate=False) -> Tensor\n"
      "\n"
      "input[indices] = values, in place (see Tensor.index_put_); returns input.\n"
      "\n"
      ">>> x = flambeau_core.zeros(3)\n"
      ">>> flambeau_core.index_put_(x, (flambeau_core.tensor([0, 2]),), flambeau_core.tensor([1.0, "
      "2.0])) is x\n"
      "True\n"
      ">>> x.tolist()\n"
      "[1.0, 0.0, 2.0]");
  m.def("index_put", recorded("index_put", &index_put_out_of_place, kFunction), py::arg("input"),
        py::arg("indices"), py::arg("values"),
        py::arg("accumulate") = false,
      "index_put(input, indices, values, accumulate=False) -> Tensor\n"
      "\n"
      "A copy of input with values put at indices (see Tensor.index_put_); input is left as it is.\n"
      "\n"
      ">>> x = flambeau_core.zeros(3)\n"
      ">>> idx = (flambeau_core.tensor([0, 0]),)\n"
      ">>> flambeau_core.index_put(x, idx, flambeau_core.tensor([1.0, 2.0]), accumulate=True).tolist(), "
      "x.tolist()\n"
      "([3.0, 0.0, 0.0], [0.0, 0.0, 0.0])");
  m.def("as_strided", &as_strided_py, py::arg("input"), py::arg("size"), py::arg("stride"),
        py::arg("storage_offset") = py::none(),
      "as_strided(input, size, stride, storage_offset=None) -> Tensor\n"
      "\n"
      "A view of input's storage with explicit sizes, strides (in elements) and storage offset (input's "
      "by\n"
      "default); ValueError if it would reach outside the storage.\n"
      "\n"
      ">>> flambeau_core.as_strided(flambeau_core.arange(6), (2, 2), (1, 2)).tolist()\n"
      "[[0, 2], [1, 3]]");

  m.def("_stack_samples", &stack_samples, py::arg("samples"),
        "stack(samples, 0) of a list of same-shape contiguous cpu tensors, by one copy per sample; None "
        "where that does not apply (Note [Stacking samples]: the caller stacks). For default_collate.");
  m.def("_stack_sample_fields", &stack_sample_fields, py::arg("samples"),
        "[stack([s[j] for s in samples], 0) for j in range(len(samples[0]))] for a list of same-length "
        "tuples of tensors, each position as _stack_samples; None where any position does not apply (the "
        "caller collates). For default_collate.");

  // Note [Tensor slots]: after `__getitem__` is bound, so the generic slot it replaces calls that method.
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  g_generic_subscript = type->tp_as_mapping->mp_subscript;
  type->tp_as_mapping->mp_subscript = &tensor_subscript;
  // Note [Tensor dealloc]: subclasses defined later reach it through their base's slot.
  g_generic_dealloc = type->tp_dealloc;
  type->tp_dealloc = &tensor_dealloc;
}

}  // namespace flambeau::python
