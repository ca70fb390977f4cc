// Note [TensorIterator] is in tensor_iterator.h.
#include "tensor_iterator.h"

#include <cstdlib>
#include <cstring>

#include "flambeau/result_layout.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {

namespace {

constexpr int kUndefined = -1;

int update_state(int state, ScalarType t) {
  return state == kUndefined ? static_cast<int>(t)
                             : static_cast<int>(promote_types(static_cast<ScalarType>(state), t));
}

// PyTorch's combine_categories: `lower` only raises the category of `higher`.
int combine_categories(int higher, int lower) {
  if (higher == kUndefined) return lower;
  if (lower == kUndefined) return higher;
  const auto h = static_cast<ScalarType>(higher), l = static_cast<ScalarType>(lower);
  if (is_complex(h)) return higher;
  // float32 tensor + complex number -> complex64, float64 -> complex128 (PyTorch;
  // float16/bfloat16 give complex64 here: flambeau has no complex32).
  if (is_floating(h)) return is_complex(l) ? static_cast<int>(to_complex_dtype(h)) : higher;
  if (h == ScalarType::Bool || is_floating(l) || is_complex(l)) return static_cast<int>(promote_types(h, l));
  return higher;
}

// [lo, hi) bytes a tensor's elements span.
void byte_extent(const Tensor& t, const char*& lo, const char*& hi) {
  const int64_t isz = static_cast<int64_t>(itemsize(t.dtype()));
  int64_t neg = 0, pos = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t span = (t.sizes()[d] - 1) * t.strides()[d];
    (span < 0 ? neg : pos) += span;
  }
  lo = static_cast<const char*>(t.data_ptr()) + neg * isz;
  hi = static_cast<const char*>(t.data_ptr()) + pos * isz + isz;
}

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.dtype() == b.dtype() && std::ranges::equal(a.sizes(), b.sizes()) &&
         std::ranges::equal(a.strides(), b.strides());
}

// True if writing `out` could change elements of `in` not yet read.
bool partially_overlaps(const Tensor& out, const Tensor& in) {
  if (out.impl()->storage() != in.impl()->storage() || out.numel() == 0 || in.numel() == 0) return false;
  if (same_layout(out, in)) return false;
  const char *lo1, *hi1, *lo2, *hi2;
  byte_extent(out, lo1, hi1);
  byte_extent(in, lo2, hi2);
  return lo1 < hi2 && lo2 < hi1;
}

}  // namespace

void check_no_internal_overlap(const Tensor& t, const char* op) {
  // No elements, nothing shared: an empty channels-last result has PyTorch's 0 strides.
  if (t.numel() == 0) return;
  for (int64_t d = 0; d < t.dim(); ++d)
    FB_CHECK_VALUE(t.sizes()[d] <= 1 || t.strides()[d] != 0, "[", op,
                   "] unsupported operation: more than one element of the written-to tensor (shape ",
                   shape_str(t.sizes()), ", strides ", shape_str(t.strides()),
                   ", as in an expanded view) refers to a single memory location; clone() it first");
}

ScalarType result_type(std::span<const Tensor* const> operands) {
  int dim = kUndefined, zero = kUndefined, wrapped = kUndefined;
  for (const Tensor* t : operands) {
    ScalarType cur = t->dtype();
    if (t->impl()->is_wrapped_number()) {
      if (is_floating(cur)) cur = default_float_dtype();
      if (is_complex(cur)) cur = default_complex_dtype();
      wrapped = update_state(wrapped, cur);
    } else if (t->dim() == 0) {
      zero = update_state(zero, cur);
    } else {
      dim = update_state(dim, cur);
    }
  }
  return static_cast<ScalarType>(combine_categories(dim, combine_categories(zero, wrapped)));
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && !is_floating(to) && !is_complex(to)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

void convert_element(ScalarType from, const void* src, ScalarType to, void* dst) {
  visit_dtype_all(from, "cast", [&](auto ftag) {
    using F = typename decltype(ftag)::type;
    const F v = *static_cast<const F*>(src);
    visit_dtype_all(to, "cast", [&](auto ttag) {
      using T = typename decltype(ttag)::type;
      *static_cast<T*>(dst) = convert_element_as<T>(v);
    });
  });
}

namespace detail {
void broadcast_reversed(const char* op, std::span<const Tensor* const> inputs, int64_t* bshape, int nd) {
  for (int d = 0; d < nd; ++d) bshape[d] = 1;
  const int nin = static_cast<int>(inputs.size());
  for (int i = 0; i < nin; ++i) {
    const IntArrayRef s = inputs[i]->sizes();
    const int n = std::min(static_cast<int>(s.size()), nd);
    for (int d = 0; d < n; ++d) {
      const int64_t sz = s[s.size() - 1 - d];
      if (sz == bshape[d] || sz == 1) continue;
      if (bshape[d] == 1) {
        bshape[d] = sz;
        continue;
      }
      std::string shapes;
      for (int j = 0; j < nin; ++j)
        shapes += (j == 0 ? "" : j + 1 == nin ? " and " : ", ") + shape_str(inputs[j]->sizes());
      throw ValueError(cat_str("[", op, "] shapes ", shapes, " cannot be broadcast"));
    }
  }
}

void check_broadcast_to(const char* op, std::span<const Tensor* const> inputs, IntArrayRef shape) {
  const int no = static_cast<int>(shape.size());
  for (const Tensor* t : inputs) {
    const IntArrayRef s = t->sizes();
    const int n = static_cast<int>(s.size());
    bool ok = n <= no;
    for (int d = 0; d < n && ok; ++d) ok = s[n - 1 - d] == 1 || s[n - 1 - d] == shape[no - 1 - d];
    if (!ok)
      throw ValueError(
          cat_str("[", op, "] shape ", shape_str(s), " cannot be broadcast to the shape ", shape_str(shape), " of self"));
  }
}
}  // namespace detail

TensorIterator::TensorIterator(const char* op, const Tensor* out, ScalarType out_dtype,
                               std::span<const Tensor* const> inputs, ScalarType compute_dtype,
                               unsigned keep_dtype_mask)
    : compute_(compute_dtype) {
  const int nin = static_cast<int>(inputs.size());
  FB_INTERNAL_ASSERT(nin >= 1 && nin < kMaxIterOperands, "bad number of inputs ", nin);
  ntensors_ = nin + 1;
  // Device (point 6 of the Note): a given output's, else the first input that
  // is not a 0-dim cpu tensor. On the cpu every operand is a cpu tensor.
  Device dev = inputs[0]->device();
  if (out) {
    dev = out->device();
  } else {
    for (int i = 0; i < nin; ++i) {
      if (inputs[i]->device().is_cpu() && inputs[i]->dim() == 0) continue;
      dev = inputs[i]->device();
      break;
    }
  }
  if (!dev.is_cpu()) {
    for (int i = 0; i < nin; ++i) {
      const Tensor& in = *inputs[i];
      if (in.device() == dev) continue;
      FB_CHECK(in.device().is_cpu() && in.dim() == 0, "[", op,
               "] expected all tensors to be on the same device, but found at least two devices, ", dev.str(),
               " and ", in.device().str());
      host_scalar_[i + 1] = true;
    }
  }

  // Fast path: every operand contiguous with one shape and the right dtype.
  const IntArrayRef shape = out ? out->sizes() : inputs[0]->sizes();
  bool fast = !out || out->is_contiguous();
  for (int i = 0; i < nin && fast; ++i) {
    const Tensor& in = *inputs[i];
    fast = in.is_contiguous() && (in.dtype() == compute_dtype || (keep_dtype_mask >> i & 1)) &&
           std::ranges::equal(in.sizes(), shape) &&
           (!out || in.impl()->storage() != out->impl()->storage() || in.data_ptr() == out->data_ptr());
  }
  if (fast) {
    out_ = out ? *out : op::empty(shape, out_dtype, dev);
    numel_ = out_.numel();
    ndim_ = 1;
    shape_[0] = numel_;
    data_[0] = static_cast<char*>(out_.data_ptr());
    dtypes_[0] = out_.dtype();
    strides_[0][0] = static_cast<int64_t>(itemsize(dtypes_[0]));
    for (int i = 0; i < nin; ++i) {
      data_[i + 1] = static_cast<char*>(inputs[i]->data_ptr());
      dtypes_[i + 1] = inputs[i]->dtype();
      strides_[0][i + 1] = static_cast<int64_t>(itemsize(dtypes_[i + 1]));
    }
    return;
  }

  // Broadcast shape of the inputs (and the output, which must equal it).
  int nd = out ? static_cast<int>(out->dim()) : 0;
  for (int i = 0; i < nin; ++i) nd = std::max(nd, static_cast<int>(inputs[i]->dim()));
  FB_CHECK_VALUE(nd <= kMaxIterDims, "[", op, "] tensors with more than ", kMaxIterDims,
                 " dimensions are not supported, got ", nd);
  int64_t bshape[kMaxIterDims];  // innermost first
  for (int d = 0; d < nd; ++d) bshape[d] = 1;
  if (out) {
    // Inputs must broadcast to the given output's shape.
    const IntArrayRef os = out->sizes();
    const int no = static_cast<int>(os.size());
    for (int d = 0; d < no; ++d) bshape[d] = os[no - 1 - d];
    detail::check_broadcast_to(op, inputs, os);
    check_no_internal_overlap(*out, op);
    out_ = *out;
  } else {
    detail::broadcast_reversed(op, inputs, bshape, nd);
    Shape s(nd);
    for (int d = 0; d < nd; ++d) s[d] = bshape[nd - 1 - d];
    shape_nbytes(s, out_dtype, op);  // Note [Size overflow]: broadcasting may multiply sizes past int64
    out_ = empty_elementwise(s, out_dtype, dev, inputs);  // Note [Result layout]
  }

  // Operands: output first, then inputs converted to the compute dtype.
  const Tensor* ts[kMaxIterOperands];
  ts[0] = &out_;
  for (int i = 0; i < nin; ++i) {
    const Tensor& in = *inputs[i];
    const int k = i + 1;
    ts[k] = &in;
    dtypes_[k] = (keep_dtype_mask >> i & 1) ? in.dtype() : compute_dtype;
    data_[k] = static_cast<char*>(in.data_ptr());
    if (in.dtype() != dtypes_[k]) {
      if (in.numel() == 1 && in.device().is_cpu()) {
        // Every dim is 1, hence broadcast (stride 0): read the converted value.
        convert_element(in.dtype(), in.data_ptr(), dtypes_[k], scalar_buf_[k]);
        data_[k] = scalar_buf_[k];
      } else {
        owned_[k] = op::cast(in, dtypes_[k]);
        ts[k] = &owned_[k];
        data_[k] = static_cast<char*>(owned_[k].data_ptr());
      }
    } else if (out && partially_overlaps(out_, in)) {
      owned_[k] = op::clone(in, MemoryFormat::Contiguous);
      ts[k] = &owned_[k];
      data_[k] = static_cast<char*>(owned_[k].data_ptr());
    }
  }
  data_[0] = static_cast<char*>(out_.data_ptr());
  dtypes_[0] = out_.dtype();

  // Byte strides, innermost dim first; 0 on broadcast dims.
  for (int k = 0; k < ntensors_; ++k) {
    const bool scalar = data_[k] == scalar_buf_[k];
    const IntArrayRef sz = ts[k]->sizes(), st = ts[k]->strides();
    const int n = static_cast<int>(sz.size());
    const int64_t isz = static_cast<int64_t>(itemsize(dtypes_[k]));
    for (int d = 0; d < nd; ++d)
      strides_[d][k] = (scalar || d >= n || sz[n - 1 - d] == 1) ? 0 : st[n - 1 - d] * isz;
  }
  for (int d = 0; d < nd; ++d) shape_[d] = bshape[d];
  ndim_ = nd;
  numel_ = 1;
  for (int d = 0; d < nd; ++d) numel_ *= bshape[d];
  coalesce();
}

void TensorIterator::coalesce() {
  // Order dims by the output's strides (innermost = smallest), so a given
  // output with another layout (a transpose) is still walked in memory order.
  for (int i = 1; i < ndim_; ++i) {
    for (int j = i; j > 0; --j) {
      const int64_t a = std::abs(strides_[j][0]), b = std::abs(strides_[j - 1][0]);
      if (!(a < b && shape_[j] != 1)) break;
      std::swap(shape_[j], shape_[j - 1]);
      std::swap(strides_[j], strides_[j - 1]);
    }
  }
  // Drop size-1 dims, then merge neighbours that are contiguous with each other.
  int n = 0;
  for (int d = 0; d < ndim_; ++d) {
    if (shape_[d] == 1) continue;
    if (n > 0) {
      bool mergeable = true;
      for (int k = 0; k < ntensors_ && mergeable; ++k)
        mergeable = strides_[d][k] == shape_[n - 1] * strides_[n - 1][k];
      if (mergeable) {
        shape_[n - 1] *= shape_[d];
        continue;
      }
    }
    shape_[n] = shape_[d];
    std::copy(strides_[d], strides_[d] + ntensors_, strides_[n]);
    ++n;
  }
  if (n == 0) {
    shape_[0] = numel_ == 0 ? 0 : 1;
    for (int k = 0; k < ntensors_; ++k) strides_[0][k] = 0;
    n = 1;
  }
  ndim_ = n;
}

TensorIterator TensorIterator::unary(const char* op, const Tensor& a, ScalarType compute,
                                     ScalarType out_dtype) {
  const Tensor* in[1] = {&a};
  return TensorIterator(op, nullptr, out_dtype, in, compute);
}

TensorIterator TensorIterator::binary(const char* op, const Tensor& a, const Tensor& b, ScalarType compute,
                                      ScalarType out_dtype) {
  const Tensor* in[2] = {&a, &b};
  return TensorIterator(op, nullptr, out_dtype, in, compute);
}

TensorIterator TensorIterator::into(const char* op, const Tensor& out, const Tensor& a, ScalarType compute) {
  const Tensor* in[1] = {&a};
  return TensorIterator(op, &out, out.dtype(), in, compute);
}

TensorIterator TensorIterator::into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b,
                                    ScalarType compute) {
  const Tensor* in[2] = {&a, &b};
  return TensorIterator(op, &out, out.dtype(), in, compute);
}

TensorIterator TensorIterator::inplace(const char* op, Tensor& self, const Tensor& other,
                                       bool true_division) {
  ScalarType rt = result_type(self, other);
  if (true_division) rt = to_float_dtype(rt);
  FB_CHECK_TYPE(can_cast(rt, self.dtype()), "[", op, "] result type ", dtype_name(rt),
                " can't be cast to the desired output type ", dtype_name(self.dtype()));
  const Tensor* in[2] = {&self, &other};
  return TensorIterator(op, &self, self.dtype(), in, self.dtype());
}

}  // namespace flambeau
