// Views from Python: view/reshape/transpose/permute/..., and basic indexing
// (__getitem__/__setitem__ with ints, slices, None, ...).
#include "common.h"
#include "flambeau/error.h"

namespace flambeau::python {
namespace {

using TensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
}

template <class F>
void detail_for_each_offset(const Tensor& t, F&& f) {
  const int64_t nd = t.dim();
  Shape idx(nd, 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = 0;
    for (int64_t k = 0; k < nd; ++k) off += idx[k] * t.strides()[k];
    f(off);
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++idx[k] < t.sizes()[k]) break;
      idx[k] = 0;
    }
  }
}

bool is_int_index(py::handle obj) {
  if (PyBool_Check(obj.ptr())) return false;
  if (PyLong_Check(obj.ptr())) return true;
  if (py::isinstance<TensorImpl>(obj)) {
    const Tensor t = obj.cast<Tensor>();
    return t.dim() == 0 && is_integral(t.dtype(), false);
  }
  return PyIndex_Check(obj.ptr());
}

int64_t as_index(py::handle obj) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  FB_CHECK_INDEX(!overflow, "[getitem] index ", py::str(obj).cast<std::string>(), " does not fit in int64");
  return v;
}

// Note [Basic indexing]
// An index is a tuple of items; ints and slices consume one dim each, None
// inserts a size-1 dim, and one Ellipsis stands for as many full slices as
// needed. Every item maps to one view op (select, slice, unsqueeze), so the
// result always shares self's storage and autograd sees ordinary ops.
// One advanced item is supported on top (an integer tensor or list, or a bool
// mask): the basic items are applied first with the advanced one kept as full
// slices, then the advanced dims are replaced by the index's shape through
// gather, so the result is a copy (as in PyTorch) and differentiable.
struct AdvancedIndex {
  Tensor index;         // int64 or bool
  int64_t dim = 0;      // first dim of the view it applies to
  int64_t src_dim = 0;  // the same dim counted in self (for messages)
};

bool is_advanced(py::handle it) {
  return (py::isinstance<TensorImpl>(it) && !is_int_index(it)) || PyList_Check(it.ptr());
}

Tensor as_index_tensor(py::handle it) {
  if (py::isinstance<TensorImpl>(it)) return it.cast<Tensor>();
  py::object make = py::module_::import("flambeau_core._C").attr("tensor");
  if (py::len(it) == 0) return make(it, py::arg("dtype") = ScalarType::Int64).cast<Tensor>();  // t[[]]
  return make(it).cast<Tensor>();
}

/// Dims an advanced index consumes: the mask's dims for bool, else 1.
int64_t advanced_dims(const Tensor& idx) {
  return idx.dtype() == ScalarType::Bool ? std::max<int64_t>(idx.dim(), 1) : 1;
}

// An advanced index resolved against the view `base` it applies to: the
// positions along `dim` it selects, and the shape they take in the result.
struct ResolvedIndex {
  Tensor base;  // cur, with a multi-dim mask's dims merged into one
  int64_t dim;
  std::vector<int64_t> flat;
  Shape idx_shape;
  Shape out_shape;  // base.sizes()[:dim] + idx_shape + base.sizes()[dim+1:]
};

ResolvedIndex resolve_advanced(const Tensor& cur, const AdvancedIndex& adv, const char* op) {
  const Tensor& idx = adv.index;
  const int64_t d = adv.dim;
  ResolvedIndex r{cur, d, {}, {}, {}};
  if (idx.dtype() == ScalarType::Bool) {
    const int64_t k = advanced_dims(idx);
    const auto covered = cur.sizes().subspan(d, k);
    const bool match =
        idx.dim() == 0 || std::equal(covered.begin(), covered.end(), idx.sizes().begin(), idx.sizes().end());
    FB_CHECK_INDEX(idx.dim() > 0 && match, "[", op, "] the shape ", shape_str(idx.sizes()),
                   " of the mask does not match the shape ", shape_str(covered),
                   " of the indexed tensor at dimension ", adv.src_dim);
    Shape merged(cur.sizes().begin(), cur.sizes().begin() + d);
    merged.push_back(idx.numel());
    merged.insert(merged.end(), cur.sizes().begin() + d + k, cur.sizes().end());
    // setitem must write through: a view (ValueError if the layout forbids it), never a copy.
    r.base = k == 1 ? cur : std::string_view(op) == "setitem" ? op::view(cur, merged) : reshape(cur, merged);
    const bool* m = idx.data<bool>();
    int64_t pos = 0;
    detail_for_each_offset(idx, [&](int64_t off) {
      if (m[off]) r.flat.push_back(pos);
      ++pos;
    });
    r.idx_shape = {static_cast<int64_t>(r.flat.size())};
  } else {
    FB_CHECK_INDEX(is_integral(idx.dtype(), false), "[", op,
                   "] tensors used as indices must be integer or bool, got ", dtype_name(idx.dtype()));
    const Tensor i64 = idx.dtype() == ScalarType::Int64 ? idx : op::cast(idx, ScalarType::Int64);
    const int64_t n = cur.sizes()[d];
    const int64_t* p = i64.data<int64_t>();
    detail_for_each_offset(i64, [&](int64_t off) {
      const int64_t v = p[off];
      FB_CHECK_INDEX(v >= -n && v < n, "[", op, "] index ", v, " is out of bounds for dimension ",
                     adv.src_dim, " with size ", n);
      r.flat.push_back(v < 0 ? v + n : v);
    });
    r.idx_shape.assign(idx.sizes().begin(), idx.sizes().end());
  }
  r.out_shape.assign(r.base.sizes().begin(), r.base.sizes().begin() + d);
  r.out_shape.insert(r.out_shape.end(), r.idx_shape.begin(), r.idx_shape.end());
  r.out_shape.insert(r.out_shape.end(), r.base.sizes().begin() + d + 1, r.base.sizes().end());
  return r;
}

Tensor apply_advanced(const Tensor& cur, const AdvancedIndex& adv) {
  const ResolvedIndex r = resolve_advanced(cur, adv, "getitem");
  const auto m = static_cast<int64_t>(r.flat.size());
  Tensor flat_t = op::empty(Shape{m}, ScalarType::Int64, cur.device());
  std::copy(r.flat.begin(), r.flat.end(), flat_t.data<int64_t>());
  Shape view_shape(r.base.dim(), 1), target(r.base.sizes().begin(), r.base.sizes().end());
  view_shape[r.dim] = m;
  target[r.dim] = m;
  const Tensor gathered = op::gather(r.base, r.dim, op::expand(op::view(flat_t, view_shape), target));
  return op::view(gathered, r.out_shape);
}

struct IndexedView {
  Tensor view;                       // the basic indices applied
  std::optional<AdvancedIndex> adv;  // still to apply (a copy for getitem, writes for setitem)
};

IndexedView index_basic(const Tensor& self, py::handle index) {
  std::vector<py::handle> items;
  std::vector<py::object> keep;  // index tensors made from lists
  if (PyTuple_Check(index.ptr())) {
    for (py::handle it : py::reinterpret_borrow<py::tuple>(index)) items.push_back(it);
  } else {
    items.push_back(index);
  }
  int64_t consuming = 0;
  bool seen_ellipsis = false;
  std::optional<AdvancedIndex> adv;
  for (py::handle& it : items) {
    if (it.ptr() == Py_Ellipsis) {
      FB_CHECK_INDEX(!seen_ellipsis, "[getitem] an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    } else if (is_int_index(it) || PySlice_Check(it.ptr())) {
      ++consuming;
    } else if (is_advanced(it)) {
      if (adv)
        throw NotImplementedError(
            "[getitem] indexing with more than one tensor or list is not supported yet");
      keep.push_back(py::cast(as_index_tensor(it)));
      it = keep.back();
      adv = AdvancedIndex{it.cast<Tensor>()};
      consuming += advanced_dims(adv->index);
    } else if (!it.is_none()) {
      if (PyBool_Check(it.ptr()))
        throw NotImplementedError("[getitem] indexing with a Python bool is not supported yet");
      throw TypeError(
          detail::cat_str("[getitem] only integers, slices (`:`), ellipsis (`...`), None and integer or "
                          "bool tensors are valid indices, got ",
                          type_name(it)));
    }
  }
  FB_CHECK_INDEX(consuming <= self.dim(), "[getitem] too many indices for a tensor of dimension ", self.dim(),
                 " (got ", consuming, ")");
  Tensor cur = self;
  int64_t d = 0;      // dim of `cur` the next item applies to
  int64_t src_d = 0;  // the same dim counted in self (for messages)
  for (py::handle it : items) {
    if (it.ptr() == Py_Ellipsis) {
      d += self.dim() - consuming;
      src_d += self.dim() - consuming;
    } else if (it.is_none()) {
      cur = op::unsqueeze(cur, d);
      ++d;
    } else if (PySlice_Check(it.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(it.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
      FB_CHECK_VALUE(step > 0, "[getitem] slice step must be greater than zero, got ", step);
      auto* sl = reinterpret_cast<PySliceObject*>(it.ptr());
      std::optional<int64_t> b, e;
      if (sl->start != Py_None) b = start;
      if (sl->stop != Py_None) e = stop;
      cur = op::slice(cur, d, b, e, step);
      ++d;
      ++src_d;
    } else if (adv && it.ptr() == keep.back().ptr()) {
      adv->dim = d;
      adv->src_dim = src_d;
      d += advanced_dims(adv->index);
      src_d += advanced_dims(adv->index);
    } else {
      const int64_t i = as_index(it);
      const int64_t n = cur.sizes()[d];
      FB_CHECK_INDEX(i >= -n && i < n, "[getitem] index ", i, " is out of bounds for dimension ", src_d,
                     " with size ", n);
      cur = op::select(cur, d, i);
      ++src_d;
    }
  }
  return {cur, adv};
}

Tensor index_view(const Tensor& self, py::handle index) {
  IndexedView r = index_basic(self, index);
  if (r.adv) return apply_advanced(r.view, *r.adv);
  // t[...] and t[()] still return a new view, as in PyTorch.
  if (r.view.is_same(self)) return op::as_strided(self, self.sizes(), self.strides(), self.storage_offset());
  return r.view;
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
         (py::hasattr(value, "__float__") && !py::hasattr(value, "__len__"));
}

// Basic indices write into the view with one copy_/fill_. With an advanced
// index, each selected position along its dim is written with one copy_/fill_
// into a select() view (duplicate positions: the last write wins), so the
// writes are ordinary in-place ops on views of self.
void index_assign(Tensor& self, py::handle index, py::handle value) {
  const bool tensor_value = py::isinstance<TensorImpl>(value);
  if (!tensor_value && !is_number(value))
    throw TypeError(detail::cat_str("[setitem] can assign a Tensor or a number, got ", type_name(value)));
  IndexedView iv = index_basic(self, index);
  if (!iv.adv) {
    Tensor target = iv.view;
    if (tensor_value)
      op::copy_(target, broadcast_value(value.cast<Tensor>(), target.sizes()));
    else
      op::fill_(target, as_scalar(value, "setitem"));
    return;
  }
  const ResolvedIndex r = resolve_advanced(iv.view, *iv.adv, "setitem");
  const auto m = static_cast<int64_t>(r.flat.size());
  if (tensor_value) {
    Shape per_position(r.base.sizes().begin(), r.base.sizes().end());
    per_position[r.dim] = m;
    const Tensor v = reshape(broadcast_value(value.cast<Tensor>(), r.out_shape), per_position);
    for (int64_t k = 0; k < m; ++k) {
      Tensor dst = op::select(r.base, r.dim, r.flat[k]);
      op::copy_(dst, op::select(v, r.dim, k));
    }
  } else {
    const Scalar s = as_scalar(value, "setitem");
    for (int64_t k = 0; k < m; ++k) {
      Tensor dst = op::select(r.base, r.dim, r.flat[k]);
      op::fill_(dst, s);
    }
  }
}

Shape parse_dims_arg(const py::args& args, const char* op) { return parse_shape(args, op); }

Tensor squeeze_py(const Tensor& t, py::handle dim) {
  if (dim.is_none()) return op::squeeze(t, Shape{});
  if (PyIndex_Check(dim.ptr())) return op::squeeze(t, Shape{dim.cast<int64_t>()});
  Shape dims = parse_int_sequence(dim, "squeeze", "dim");
  if (dims.empty()) return op::as_strided(t, t.sizes(), t.strides(), t.storage_offset());
  return op::squeeze(t, dims);
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  FB_CHECK_INDEX(t.dim() > 0, "[narrow] cannot narrow a 0-d tensor");
  const int64_t d = wrap_dim(dim, t.dim(), "narrow");
  const int64_t n = t.sizes()[d];
  FB_CHECK_INDEX(start >= -n && start <= n, "[narrow] start ", start, " is out of range for dimension ", d,
                 " with size ", n);
  if (start < 0) start += n;
  FB_CHECK_VALUE(length >= 0 && start + length <= n, "[narrow] start (", start, ") + length (", length,
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
  const int64_t off = offset.is_none() ? t.storage_offset() : offset.cast<int64_t>();
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
         "view", [](const Tensor& t, py::args shape) { return op::view(t, parse_dims_arg(shape, "view")); },
         "A view with another shape (one size may be -1); shares memory. ValueError if the strides do not "
         "allow it (use reshape).")
      .def(
          "reshape",
          [](const Tensor& t, py::args shape) { return reshape(t, parse_dims_arg(shape, "reshape")); },
          "Like view, but copies when the memory layout requires it.")
      .def(
          "transpose", [](const Tensor& t, int64_t d0, int64_t d1) { return op::transpose(t, d0, d1); },
          py::arg("dim0"), py::arg("dim1"),
          "A view with dims dim0 and dim1 swapped.\n\n>>> flambeau_core.zeros(2, 3).transpose(0, "
          "1).shape\n(3, 2)")
      .def("t",
           [](const Tensor& t) {
             FB_CHECK_VALUE(t.dim() <= 2, "[t] expects a tensor with <= 2 dims, got shape ",
                            shape_str(t.sizes()));
             return t.dim() < 2 ? op::as_strided(t, t.sizes(), t.strides(), t.storage_offset())
                                : op::transpose(t, 0, 1);
           })
      .def_property_readonly("T", &reverse_dims)
      .def_property_readonly("mT", &matrix_transpose)
      .def(
          "permute",
          [](const Tensor& t, py::args dims) { return op::permute(t, parse_dims_arg(dims, "permute")); },
          "A view with the dims reordered.\n\n>>> flambeau_core.zeros(2, 3, 4).permute(2, 0, 1).shape\n(4, "
          "2, 3)")
      .def(
          "unsqueeze", [](const Tensor& t, int64_t dim) { return op::unsqueeze(t, dim); }, py::arg("dim"),
          "A view with a size-1 dim inserted at dim.\n\n>>> flambeau_core.zeros(3).unsqueeze(0).shape\n(1, "
          "3)")
      .def("squeeze", &squeeze_py, py::arg("dim") = py::none(),
           "A view without size-1 dims (all, or the given dim(s); a dim of another size is kept).\n\n"
           ">>> flambeau_core.zeros(1, 3, 1).squeeze().shape\n(3,)")
      .def(
          "expand",
          [](const Tensor& t, py::args sizes) { return op::expand(t, parse_dims_arg(sizes, "expand")); },
          "A broadcast view (stride 0) to a larger shape; -1 keeps a size.\n\n"
          ">>> flambeau_core.zeros(3, 1).expand(2, 3, 4).shape\n(2, 3, 4)")
      .def(
          "expand_as", [](const Tensor& t, const Tensor& other) { return expand_as(t, other); },
          py::arg("other"))
      .def(
          "flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); },
          py::arg("start_dim") = 0, py::arg("end_dim") = -1,
          "Merges dims start_dim..end_dim into one (a view when possible).\n\n"
          ">>> flambeau_core.zeros(2, 3, 4).flatten(1).shape\n(2, 12)")
      .def("narrow", &narrow, py::arg("dim"), py::arg("start"), py::arg("length"),
           "The view t[..., start:start+length, ...] along dim.")
      .def(
          "select", [](const Tensor& t, int64_t dim, int64_t index) { return op::select(t, dim, index); },
          py::arg("dim"), py::arg("index"), "The view at `index` along dim (that dim removed).")
      .def("unbind", &unbind, py::arg("dim") = 0, "A tuple of the views select(dim, i) for every i.")
      .def("as_strided", &as_strided_py, py::arg("size"), py::arg("stride"),
           py::arg("storage_offset") = py::none(),
           "A view with explicit sizes, strides (in elements) and storage offset; ValueError if it would "
           "reach outside the storage.")
      .def(
          "__getitem__", [](const Tensor& t, py::handle index) { return index_view(t, index); },
          "Basic indexing (ints, slices with step > 0, None, ...) returns a view; one integer/bool tensor "
          "or list index returns a copy, as in PyTorch.")
      .def("__setitem__",
           [](Tensor& t, py::handle index, py::handle value) { index_assign(t, index, value); });

  m.def(
      "reshape",
      [](const Tensor& t, py::handle shape) {
        return reshape(t, parse_int_sequence(shape, "reshape", "shape"));
      },
      py::arg("input"), py::arg("shape"));
  m.def(
      "transpose", [](const Tensor& t, int64_t d0, int64_t d1) { return op::transpose(t, d0, d1); },
      py::arg("input"), py::arg("dim0"), py::arg("dim1"));
  m.def(
      "permute",
      [](const Tensor& t, py::handle dims) {
        return op::permute(t, parse_int_sequence(dims, "permute", "dims"));
      },
      py::arg("input"), py::arg("dims"));
  m.def(
      "unsqueeze", [](const Tensor& t, int64_t dim) { return op::unsqueeze(t, dim); }, py::arg("input"),
      py::arg("dim"));
  m.def("squeeze", &squeeze_py, py::arg("input"), py::arg("dim") = py::none());
  m.def(
      "flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); }, py::arg("input"),
      py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  m.def("narrow", &narrow, py::arg("input"), py::arg("dim"), py::arg("start"), py::arg("length"));
  m.def(
      "select", [](const Tensor& t, int64_t dim, int64_t index) { return op::select(t, dim, index); },
      py::arg("input"), py::arg("dim"), py::arg("index"));
  m.def("unbind", &unbind, py::arg("input"), py::arg("dim") = 0);
  m.def("as_strided", &as_strided_py, py::arg("input"), py::arg("size"), py::arg("stride"),
        py::arg("storage_offset") = py::none());
}

}  // namespace flambeau::python
