// CPU kernel of _addcmul_fused: input + (value * tensor1) * tensor2 for floating dtypes, with the sum
// and the second product in one rounding (a fused multiply-add), computed in float32 for
// float16/bfloat16 and rounded once to the result's dtype (Note [Fused addcmul]).
#include <cmath>

#include "cpu/dispatch/dispatch_stub.h"
#include "elementwise.h"
#include "flambeau/half.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {

// Note [Fused addcmul]: PyTorch's CPU addcmul computes self + (value * t1) * t2 with the last multiply
// and the add contracted into one fused multiply-add, in float32 for 16-bit operands (its opmath) with
// one rounding at the end; lerp is a fused multiply-add of the same kind (ATen's lerp_vec: fmadd(coeff,
// end - start, base)). Built from mul and add, both would round the product on its own and, in
// float16/bfloat16, round every step to 16 bits: 18 % of float32 results and a quarter of bfloat16 ones
// differed from PyTorch's. The composites addcmul and lerp call this kernel on the CPU (pointwise_extra.cpp,
// elementwise.cpp); its gradient is the product rule (derivatives.yaml).
template <class Op>
void fused_loop(char** d, const int64_t* s, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) op(d[0] + i * s[0], d[1] + i * s[1], d[2] + i * s[2], d[3] + i * s[3]);
}

template <class T, class M>
inline void contiguous_fused(T* out, const T* a, const T* b, const T* c, M v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(std::fma(static_cast<M>(b[i]) * v, static_cast<M>(c[i]), static_cast<M>(a[i])));
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
// Without the fma target std::fma is a libm call per element; with it the compiler inlines one vfmadd per
// element and vectorizes the loop. Every CPU of the AVX2 dispatch level has FMA (hardware_isa).
__attribute__((target("fma"))) void contiguous_fma(float* o, const float* a, const float* b, const float* c,
                                                   float v, int64_t n) {
  contiguous_fused<float, float>(o, a, b, c, v, n);
}
__attribute__((target("fma"))) void contiguous_fma(double* o, const double* a, const double* b,
                                                   const double* c, double v, int64_t n) {
  contiguous_fused<double, double>(o, a, b, c, v, n);
}
bool has_fma() { return cpu::active_isa() >= cpu::Isa::Avx2; }
#else
template <class T>
void contiguous_fma(T* o, const T* a, const T* b, const T* c, T v, int64_t n) {
  contiguous_fused<T, T>(o, a, b, c, v, n);
}
bool has_fma() { return false; }
#endif

void addcmul_fused_out_cpu(const Tensor& out, const Tensor& self, const Tensor& tensor1,
                           const Tensor& tensor2, const Scalar& value) {
  const ScalarType t = out.dtype();
  const Tensor* in[3] = {&self, &tensor1, &tensor2};
  TensorIterator it("_addcmul_fused", &out, t, in, t);
  visit_dtypes<kDtFloats | kDtHalf>(t, "_addcmul_fused", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = std::conditional_t<std::is_same_v<T, double>, double, float>;  // PyTorch's opmath
    const M v = value.to<M>();
    it.for_each(
        [v](char** d, const int64_t* s, int64_t n) {
          constexpr int64_t w = sizeof(T);
          if (s[0] == w && s[1] == w && s[2] == w && s[3] == w) {
            T* o = reinterpret_cast<T*>(d[0]);
            const T* a = reinterpret_cast<const T*>(d[1]);
            const T* b = reinterpret_cast<const T*>(d[2]);
            const T* c = reinterpret_cast<const T*>(d[3]);
            if constexpr (std::is_same_v<T, M>) {
              if (has_fma()) return contiguous_fma(o, a, b, c, v, n);
            }
            return contiguous_fused<T, M>(o, a, b, c, v, n);
          }
          fused_loop(d, s, n, [v](char* o, const char* a, const char* b, const char* c) {
            const M x = static_cast<M>(*reinterpret_cast<const T*>(b)) * v;
            *reinterpret_cast<T*>(o) =
                static_cast<T>(std::fma(x, static_cast<M>(*reinterpret_cast<const T*>(c)),
                                        static_cast<M>(*reinterpret_cast<const T*>(a))));
          });
        },
        kMemoryBoundGrain);
  });
}

FB_REGISTER_OUT_KERNEL(op::_addcmul_fused, CPU, addcmul_fused_out_cpu);

}  // namespace
}  // namespace flambeau
