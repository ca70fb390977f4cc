// CPU kernels of the reduce section of the op table: min (all elements, along
// a dim), argmin, amax/amin over several dims, prod along a dim, var with a
// correction (out kernels of structured ops: Note [Structured kernels]);
// and the table of their vectorized row loops (Note [Reduction kernels] in
// vec_reduce.h).
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "cpu/elementwise/vec_table.h"
#include "cpu/elementwise/wrapping.h"
#include "cpu/write_out.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "reduce_common.h"

namespace flambeau::cpu {

FB_DEFINE_DISPATCH(reduce_table_stub);

const ReduceTable& reduce_table() { return reduce_table_stub.get()(); }

}  // namespace flambeau::cpu

namespace flambeau {
namespace {
using namespace cpu;

// min, min.dim, argmin, amax, amin: self is reducible (the meta step's
// check_reducible and check_reducible_dims: Note [Meta step]).
void min_out_cpu(const Tensor& out, const Tensor& self) {
  const Tensor in = contiguous(self);
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "min", [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, false>(in.data<T>(), 1, in.numel(), 1, dst.data<T>(), nullptr);
    });
  });
}

void min_dim_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim, bool keepdim) {
  dim = wrap_dim(dim, self.dim(), "min");
  const DimSplit s = split_dim(self, dim, keepdim, "min");
  const Tensor in = contiguous(self);
  write_contiguous_outs<2>({values, indices}, self, [&](const std::array<Tensor, 2>& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "min", [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, false>(in.data<T>(), s.outer, s.n, s.inner, dst[0].data<T>(), dst[1].data<int64_t>());
    });
  });
}

void argmin_out_cpu(const Tensor& out, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const Tensor in = contiguous(self);
  DimSplit s;
  if (dim)
    s = split_dim(self, wrap_dim(*dim, self.dim(), "argmin"), keepdim, "argmin");
  else
    s.n = self.numel();
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "argmin", [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, false>(in.data<T>(), s.outer, s.n, s.inner, nullptr, dst.data<int64_t>());
    });
  });
}

template <bool IsMax>
void amax_amin(const char* op, const Tensor& out, const Tensor& self, IntArrayRef dim) {
  if (out.numel() == 0) return;
  const uint64_t mask = reduce_mask(op, dim, self.dim());
  int64_t outer = 1, n = 1;
  const Tensor rows = as_rows(self, mask, outer, n);
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      extremum_over<T, IsMax>(rows.data<T>(), outer, n, 1, dst.data<T>(), nullptr);
    });
  });
}

void amax_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dim, bool) {
  amax_amin<true>("amax", out, self, dim);
}

void amin_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dim, bool) {
  amax_amin<false>("amin", out, self, dim);
}

// The accumulation dtype of sum-like reductions: dtype if given, int64 for bool/int inputs. A
// floating input reduced into an integer dtype is cast first, as PyTorch (prod(f, dtype=int64)).
ScalarType accumulate_dtype(const char* op, const Tensor& self, std::optional<ScalarType> dtype) {
  (void)op;
  return dtype ? *dtype : is_integral(self.dtype(), true) ? ScalarType::Int64 : self.dtype();
}

void prod_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, bool, std::optional<ScalarType> dtype) {
  const ScalarType out_t = accumulate_dtype("prod", self, dtype);
  dim = wrap_dim(dim, self.dim(), "prod");
  const uint64_t mask = self.dim() == 0 ? 0 : uint64_t{1} << dim;
  if (out.numel() == 0) return;
  int64_t outer = 1, n = 1;
  const Tensor rows = as_rows(to_dtype(self, out_t), mask, outer, n);
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf | kDtComplex>(out_t, "prod", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = rows.data<T>();
      T* y = dst.data<T>();
      parallel_for(
          0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
            for (int64_t o = b; o < e; ++o) {
              const T* r = x + o * n;
              if constexpr (is_complex_v<T>) {  // in complex128, as the real ones in double
                // The plain product formula: std::complex's operator* calls __muldc3 (C99's
                // inf/NaN recovery), ~4x slower; PyTorch's CPU kernel multiplies plainly too.
                using R = typename T::value_type;
                double qr = 1, qi = 0;
                reduce_fns<R>().row_cprod(reinterpret_cast<const R*>(r), n, &qr, &qi);
                y[o] = T(static_cast<typename T::value_type>(qr), static_cast<typename T::value_type>(qi));
              } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
                y[o] = static_cast<T>(reduce_fns<T>().row_prod(r, n));
              } else if constexpr (is_half_v<T>) {
                // float16/bfloat16: each multiply rounds to the 16-bit dtype, in order, as PyTorch's CPU
                // product of a row (the same bits for every row whose product it computes in order).
                T p = T(1.0f);
                for (int64_t i = 0; i < n; ++i) p = T(static_cast<float>(p) * static_cast<float>(r[i]));
                y[o] = p;
              } else if constexpr (std::is_same_v<T, bool>) {
                bool p = true;
                for (int64_t i = 0; i < n; ++i) p = p && r[i];
                y[o] = p;
              } else {
                T p = 1;  // wraps on overflow, as PyTorch's integer product (Note [Integer wrap-around])
                for (int64_t i = 0; i < n; ++i) p = wrapping_mul(p, r[i]);
                y[o] = p;
              }
            }
          });
    });
  });
}

void var_out_cpu(const Tensor& out, const Tensor& self, OptionalIntArrayRef dim,
                 const std::optional<Scalar>& correction, bool keepdim) {
  // Complex input: the real result var(real) + var(imag), as PyTorch's E|x - mean|^2.
  if (is_complex(self.dtype()))
    return copy_out(out, op::add(op::var_correction(op::real(self), dim, correction, keepdim),
                                 op::var_correction(op::imag(self), dim, correction, keepdim), 1));
  // float16/bfloat16: the float32 variance rounded once, as PyTorch's CPU kernel computes it in float32.
  if (self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16)
    return copy_out(
        out, to_dtype(op::var_correction(to_dtype(self, ScalarType::Float32), dim, correction, keepdim),
                      self.dtype()));
  // self is floating (meta::check_var, the op's check step).
  const uint64_t mask = reduce_mask("var", dim.value_or(IntArrayRef{}), self.dim());
  const double c = correction ? correction->to_double() : 1.0;
  if (out.numel() == 0) return;
  int64_t outer = 1, n = 1;
  const Tensor rows = as_rows(self, mask, outer, n);
  const double denom = std::max(0.0, static_cast<double>(n) - c);
  write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtype(self.dtype(), "var", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const T* x = rows.data<T>();
        T* y = dst.data<T>();
        const auto& fns = reduce_fns<T>();
        parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)),
                     [&](int64_t b, int64_t e) {
                       for (int64_t o = b; o < e; ++o) {
                         if (n == 0) {
                           y[o] = std::numeric_limits<T>::quiet_NaN();
                           continue;
                         }
                         double mean = 0, m2 = 0;
                         fns.row_moments(x + o * n, n, &mean, &m2);
                         y[o] = static_cast<T>(std::max(m2, 0.0) / denom);
                       }
                     });
      } else {
        throw TypeError(detail::cat_str("[var] dtype ", dtype_name(self.dtype()), " is not supported"));
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::min, CPU, min_out_cpu);
FB_REGISTER_OUT_KERNEL(op::min_dim, CPU, min_dim_out_cpu);
FB_REGISTER_OUT_KERNEL(op::argmin, CPU, argmin_out_cpu);
FB_REGISTER_OUT_KERNEL(op::amax, CPU, amax_out_cpu);
FB_REGISTER_OUT_KERNEL(op::amin, CPU, amin_out_cpu);
FB_REGISTER_OUT_KERNEL(op::prod_dim_int, CPU, prod_out_cpu);
FB_REGISTER_OUT_KERNEL(op::var_correction, CPU, var_out_cpu);

}  // namespace
}  // namespace flambeau
