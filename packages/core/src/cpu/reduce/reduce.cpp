// CPU kernels: sum (over dims, keepdim, dtype), max (all elements), max_dim
// and argmax (out kernels of structured ops: Note [Structured kernels]).
//
// sum walks the input in memory order (dims sorted by stride, neighbours
// merged) into an accumulator per output element: double for floats (so
// float32 sums are accurate to float32 rounding, as NumPy's pairwise sums),
// int64 for integers. An inner reduced dim uses the vectorized blocked-
// pairwise kernel; an inner kept dim adds whole rows into the accumulators.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "cpu/elementwise/loops.h"
#include "cpu/elementwise/vec_table.h"
#include "cpu/elementwise/wrapping.h"
#include "cpu/write_out.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "reduce_common.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {
using namespace cpu;

// Fixed chunks make a parallel full sum independent of the thread count.
constexpr int64_t kSumChunk = 65536;

struct ReduceDim {
  int64_t size, in_stride, out_stride;  // strides in elements; out_stride 0 on reduced dims
};

template <class T, class Acc>
void sum_kernel(const Tensor& in, uint64_t mask, Acc* acc) {
  const int64_t nd = in.dim();
  // Output strides of the keepdim-shaped contiguous result.
  std::vector<ReduceDim> dims;
  int64_t ostride = 1;
  std::vector<int64_t> out_strides(nd);
  for (int64_t d = nd - 1; d >= 0; --d) {
    const bool reduced = mask >> d & 1;
    out_strides[d] = reduced ? 0 : ostride;
    if (!reduced) ostride *= in.sizes()[d];
  }
  for (int64_t d = 0; d < nd; ++d)
    if (in.sizes()[d] != 1) dims.push_back({in.sizes()[d], in.strides()[d], out_strides[d]});
  // Memory order: outermost (largest input stride) first; merge contiguous neighbours.
  std::stable_sort(dims.begin(), dims.end(), [](const ReduceDim& a, const ReduceDim& b) {
    return std::abs(a.in_stride) > std::abs(b.in_stride);
  });
  std::vector<ReduceDim> merged;
  for (const ReduceDim& d : dims) {
    if (!merged.empty()) {
      ReduceDim& m = merged.back();
      if (m.in_stride == d.size * d.in_stride && m.out_stride == d.size * d.out_stride) {
        m.size *= d.size;
        m.in_stride = d.in_stride;
        m.out_stride = d.out_stride;
        continue;
      }
    }
    merged.push_back(d);
  }
  if (merged.empty()) merged.push_back({1, 0, 0});
  const ReduceDim inner = merged.back();
  merged.pop_back();
  const int64_t isz = sizeof(T);
  const char* base_ptr = static_cast<const char*>(in.data_ptr());
  const VecTable& vt = vec_table();

  auto inner_sum = [&](const char* p, int64_t n, int64_t stride_bytes) -> Acc {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (stride_bytes == isz) return reduce_fns<T>().row_sum(reinterpret_cast<const T*>(p), n);
      if constexpr (std::is_same_v<T, float>)
        return vt.sum_f32(p, n, stride_bytes);
      else
        return vt.sum_f64(p, n, stride_bytes);
    } else {
      Acc s = 0;
      for (int64_t i = 0; i < n; ++i)
        s = wrapping_add(s, static_cast<Acc>(*reinterpret_cast<const T*>(p + i * stride_bytes)));
      return s;
    }
  };
  auto inner_rows = [&](Acc* a, const char* p, int64_t n, int64_t stride_bytes, int64_t astride) {
    if constexpr (std::is_same_v<T, float>) {
      if (astride == 1) return vt.accumulate_row_f32(a, p, n, stride_bytes);
    } else if constexpr (std::is_same_v<T, double>) {
      if (astride == 1) return vt.accumulate_row_f64(a, p, n, stride_bytes);
    }
    for (int64_t i = 0; i < n; ++i)
      a[i * astride] =
          wrapping_add(a[i * astride], static_cast<Acc>(*reinterpret_cast<const T*>(p + i * stride_bytes)));
  };

  if (merged.empty() && inner.out_stride == 0 && inner.size > kSumChunk) {
    // One long reduction: fixed-size chunks summed in parallel.
    const int64_t nchunks = (inner.size + kSumChunk - 1) / kSumChunk;
    std::vector<Acc> partial(nchunks);
    parallel_for(0, nchunks, kMemoryBoundGrain / kSumChunk, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        const int64_t b = c * kSumChunk, n = std::min(kSumChunk, inner.size - b);
        partial[c] = inner_sum(base_ptr + b * inner.in_stride * isz, n, inner.in_stride * isz);
      }
    });
    Acc s = 0;
    for (Acc p : partial) s = wrapping_add(s, p);
    acc[0] = wrapping_add(acc[0], s);
    return;
  }

  const int64_t nouter_dims = static_cast<int64_t>(merged.size());
  int64_t outer = 1;
  bool outer_all_kept = true;
  for (const ReduceDim& d : merged) {
    outer *= d.size;
    outer_all_kept &= d.out_stride != 0;
  }
  if (inner.out_stride == 0 && outer_all_kept && outer * inner.size > kGrainSize && outer > 1) {
    // Each outer index owns one accumulator: split them across threads.
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (nouter_dims == 1 && inner.in_stride == 1) {
        // Rows of contiguous values (sum over the last dim): no index arithmetic per row, the
        // row kernel looked up once (1000-element rows are short enough for that to show).
        const auto row_sum = reduce_fns<T>().row_sum;
        const int64_t is = merged[0].in_stride, os = merged[0].out_stride;
        const T* x = reinterpret_cast<const T*>(base_ptr);
        parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / inner.size), [&](int64_t ob, int64_t oe) {
          for (int64_t o = ob; o < oe; ++o) acc[o * os] += row_sum(x + o * is, inner.size);
        });
        return;
      }
    }
    parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / inner.size), [&](int64_t ob, int64_t oe) {
      for (int64_t o = ob; o < oe; ++o) {
        int64_t rem = o, ioff = 0, aoff = 0;
        for (int64_t k = nouter_dims - 1; k >= 0; --k) {
          const int64_t i = rem % merged[k].size;
          rem /= merged[k].size;
          ioff += i * merged[k].in_stride;
          aoff += i * merged[k].out_stride;
        }
        acc[aoff] =
            wrapping_add(acc[aoff], inner_sum(base_ptr + ioff * isz, inner.size, inner.in_stride * isz));
      }
    });
    return;
  }
  std::vector<int64_t> idx(nouter_dims, 0);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t ioff = 0, aoff = 0;
    for (int64_t k = 0; k < nouter_dims; ++k) {
      ioff += idx[k] * merged[k].in_stride;
      aoff += idx[k] * merged[k].out_stride;
    }
    const char* p = base_ptr + ioff * isz;
    if (inner.out_stride == 0)
      acc[aoff] = wrapping_add(acc[aoff], inner_sum(p, inner.size, inner.in_stride * isz));
    else
      inner_rows(acc + aoff, p, inner.size, inner.in_stride * isz, inner.out_stride);
    for (int64_t k = nouter_dims - 1; k >= 0; --k) {
      if (++idx[k] < merged[k].size) break;
      idx[k] = 0;
    }
  }
}

// float16/bfloat16 sum in float32 (then rounded back); complex sums its real pairs.
std::optional<Tensor> sum_other_dtype(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                                      std::optional<ScalarType> dtype) {
  const ScalarType t = self.dtype();
  const ScalarType out_t = dtype.value_or(t);
  if ((t == ScalarType::Float16 || t == ScalarType::BFloat16) && !is_complex(out_t)) {
    Tensor s = op::sum(op::cast(self, ScalarType::Float32), dim, keepdim, std::nullopt);
    return out_t == ScalarType::Float32 ? s : op::cast(s, out_t);
  }
  if ((out_t == ScalarType::Float16 || out_t == ScalarType::BFloat16) && !is_complex(t)) {
    // Into float16/bfloat16: the input cast to it first (PyTorch's CPU sum reads it in the result's
    // dtype), then summed as above.
    return op::sum(op::cast(self, out_t), dim, keepdim, std::nullopt);
  }
  if (dtype && is_integral(out_t, true) && out_t != ScalarType::Int64 && out_t != ScalarType::Int32) {
    // bool/uint8/int8/int16/...: the input cast to it (as PyTorch), summed in int64, then cast back
    // (modular for the integers, any-nonzero for bool, as a sum in that dtype would give).
    return op::cast(op::sum(t == out_t ? self : op::cast(self, out_t), dim, keepdim, ScalarType::Int64),
                    out_t);
  }
  if (!is_complex(t) && !(dtype && is_complex(*dtype))) return std::nullopt;
  FB_CHECK_TYPE(is_complex(out_t), "[sum] cannot sum a ", dtype_name(t), " tensor into dtype ",
                dtype_name(out_t));
  const Tensor z = t == out_t ? self : op::cast(self, out_t);
  const int64_t nd = z.dim();
  if (nd == 0) return op::clone(z, MemoryFormat::Contiguous);
  Shape dims;
  if (!dim || dim->empty()) {
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
  } else {
    for (int64_t d : *dim) dims.push_back(d < 0 && nd > 0 ? d + nd : d);  // sum checks the range
  }
  const Tensor pairs = op::view_as_real(z.is_contiguous() ? z : op::contiguous(z, MemoryFormat::Contiguous));
  Tensor s = op::sum(pairs, dims, keepdim, std::nullopt);
  return op::view_as_complex(op::contiguous(s, MemoryFormat::Contiguous));
}

void sum_out_cpu(const Tensor& out, const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                 std::optional<ScalarType> dtype) {
  if (auto r = sum_other_dtype(self, dim, keepdim, dtype)) return copy_out(out, *r);
  const IntArrayRef dims = dim.value_or(IntArrayRef{});  // none (or empty, as in PyTorch): all dims
  const ScalarType out_t = out.dtype();                  // the meta step's accumulate rule
  FB_CHECK_TYPE(out_t == ScalarType::Int64 || out_t == ScalarType::Int32 || out_t == ScalarType::Float32 ||
                    out_t == ScalarType::Float64,
                "[sum] dtype ", dtype_name(out_t), " is not supported (use int64, float32 or float64)");
  // A floating input summed into an integer dtype is cast first (PyTorch: sum(f, dtype=int64)).
  const uint64_t mask = reduce_mask("sum", dims, self.dim());
  const size_t nout = static_cast<size_t>(out.numel());
  // The input in a dtype the kernel reads: its own float dtype, or the output's.
  const bool read_self =
      ((self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64) && is_floating(out_t)) ||
      self.dtype() == out_t;
  const Tensor in = read_self ? self : op::cast(self, out_t);
  write_contiguous(out, self, [&](const Tensor& dst) {
    if (is_floating(out_t)) {
      std::vector<double> acc(nout, 0.0);
      if (in.numel() > 0)
        visit_dtype(in.dtype(), "sum", [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
            sum_kernel<T, double>(in, mask, acc.data());
        });
      if (out_t == ScalarType::Float32)
        std::copy(acc.begin(), acc.end(), dst.data<float>());
      else
        std::copy(acc.begin(), acc.end(), dst.data<double>());
    } else {
      std::vector<int64_t> acc(nout, 0);
      if (in.numel() > 0)
        visit_dtype(in.dtype(), "sum", [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t>)
            sum_kernel<T, int64_t>(in, mask, acc.data());
        });
      if (out_t == ScalarType::Int64)
        std::copy(acc.begin(), acc.end(), dst.data<int64_t>());
      else
        std::transform(acc.begin(), acc.end(), dst.data<int32_t>(),
                       [](int64_t v) { return static_cast<int32_t>(v); });
    }
  });
}

// ---- max / argmax ----

// max, max.dim, argmax: self is reducible (the meta step's check_reducible: Note [Meta step]).
void max_out_cpu(const Tensor& out, const Tensor& self) {
  const Tensor in = contiguous(self);
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "max", [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, true>(in.data<T>(), 1, in.numel(), 1, dst.data<T>(), nullptr);
    });
  });
}

void max_dim_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim, bool keepdim) {
  dim = wrap_dim(dim, self.dim(), "max");
  const DimSplit s = split_dim(self, dim, keepdim, "max");
  const Tensor in = contiguous(self);
  write_contiguous_outs<2>({values, indices}, self, [&](const std::array<Tensor, 2>& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "max", [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, true>(in.data<T>(), s.outer, s.n, s.inner, dst[0].data<T>(), dst[1].data<int64_t>());
    });
  });
}

void argmax_out_cpu(const Tensor& out, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const Tensor in = contiguous(self);
  DimSplit s;
  if (dim)
    s = split_dim(self, wrap_dim(*dim, self.dim(), "argmax"), keepdim, "argmax");
  else
    s.n = self.numel();
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "argmax", [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, true>(in.data<T>(), s.outer, s.n, s.inner, nullptr, dst.data<int64_t>());
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::sum, CPU, sum_out_cpu);
FB_REGISTER_OUT_KERNEL(op::max, CPU, max_out_cpu);
FB_REGISTER_OUT_KERNEL(op::max_dim, CPU, max_dim_out_cpu);
FB_REGISTER_OUT_KERNEL(op::argmax, CPU, argmax_out_cpu);

}  // namespace
}  // namespace flambeau
