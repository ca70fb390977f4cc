// CPU kernels: eq, ne, lt, le, gt, ge (structured; bool results, computed in the
// promoted dtype) and where(cond, a, b).
#include <cstring>

#include "elementwise.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {
using namespace cpu;

template <class T, class F>
void compare_loop(char** d, const int64_t* s, int64_t n, const F& f) {
  base::binary_loop<bool, T>(d, s, n, f);
}

// Ordered: lt/le/gt/ge, which complex numbers do not have (the meta step's
// check_ordered raised for them already: Note [Meta step]).
// Note [Structured kernels]: out is the bool output the meta step made (or out=).
template <bool Ordered, class Cmp>
void compare(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, Cmp cmp) {
  const ScalarType t = result_type(a, b);
  const TensorIterator it = TensorIterator::into(op, out, a, b, t);
  visit_dtype_all(t, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!(Ordered && is_complex_v<T>)) {
      if constexpr (is_half_v<T>) {
        it.for_each(
            [&](char** d, const int64_t* s, int64_t n) {
              compare_loop<T>(d, s, n,
                              [&](T x, T y) { return cmp(static_cast<float>(x), static_cast<float>(y)); });
            },
            kMemoryBoundGrain);
      } else {
        it.for_each([&](char** d, const int64_t* s,
                        int64_t n) { compare_loop<T>(d, s, n, [&](T x, T y) { return cmp(x, y); }); },
                    kMemoryBoundGrain);
      }
    }
  });
}

void eq_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  compare<false>("eq", out, a, b, [](auto x, auto y) { return x == y; });
}
void ne_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  compare<false>("ne", out, a, b, [](auto x, auto y) { return x != y; });
}
void lt_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  compare<true>("lt", out, a, b, [](auto x, auto y) { return x < y; });
}
void le_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  compare<true>("le", out, a, b, [](auto x, auto y) { return x <= y; });
}
void gt_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  compare<true>("gt", out, a, b, [](auto x, auto y) { return x > y; });
}
void ge_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  compare<true>("ge", out, a, b, [](auto x, auto y) { return x >= y; });
}

template <class T>
void where_loop(char** d, const int64_t* s, int64_t n) {
  if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {
    T* out = reinterpret_cast<T*>(d[0]);
    const bool* c = reinterpret_cast<const bool*>(d[1]);
    const T* a = reinterpret_cast<const T*>(d[2]);
    const T* b = reinterpret_cast<const T*>(d[3]);
    // A bit mask instead of a branch: conditions are often unpredictable.
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const T mask = static_cast<T>(-static_cast<T>(c[i]));
      out[i] = static_cast<T>((a[i] & mask) | (b[i] & static_cast<T>(~mask)));
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool c = *reinterpret_cast<const bool*>(d[1] + i * s[1]);
    *reinterpret_cast<T*>(d[0] + i * s[0]) = *reinterpret_cast<const T*>(d[c ? 2 : 3] + i * s[c ? 2 : 3]);
  }
}

// cond is bool: the meta step checked it (Note [Meta step]). Note [Structured kernels]: out has the
// promoted dtype of a and b, which they are read in.
void where_out_cpu(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  const ScalarType t = out.dtype();
  const Tensor* in[3] = {&cond, &a, &b};
  TensorIterator it("where", &out, t, in, t, /*keep_dtype_mask=*/1);
  // Selecting copies bytes, so one loop per element size serves every dtype.
  switch (itemsize(t)) {
    case 1:
      it.for_each([](char** d, const int64_t* s, int64_t n) { where_loop<uint8_t>(d, s, n); },
                  kMemoryBoundGrain);
      break;
    case 2:
      it.for_each([](char** d, const int64_t* s, int64_t n) { where_loop<uint16_t>(d, s, n); },
                  kMemoryBoundGrain);
      break;
    case 4:
      it.for_each([](char** d, const int64_t* s, int64_t n) { where_loop<uint32_t>(d, s, n); },
                  kMemoryBoundGrain);
      break;
    case 8:
      it.for_each([](char** d, const int64_t* s, int64_t n) { where_loop<uint64_t>(d, s, n); },
                  kMemoryBoundGrain);
      break;
    case 16:  // complex128
      it.for_each([](char** d, const int64_t* s, int64_t n) { where_loop<unsigned __int128>(d, s, n); },
                  kMemoryBoundGrain);
      break;
    default:
      unsupported_dtype("where", t);
  }
}

FB_REGISTER_OUT_KERNEL(op::eq, CPU, eq_out_cpu);
FB_REGISTER_OUT_KERNEL(op::ne, CPU, ne_out_cpu);
FB_REGISTER_OUT_KERNEL(op::lt, CPU, lt_out_cpu);
FB_REGISTER_OUT_KERNEL(op::le, CPU, le_out_cpu);
FB_REGISTER_OUT_KERNEL(op::gt, CPU, gt_out_cpu);
FB_REGISTER_OUT_KERNEL(op::ge, CPU, ge_out_cpu);
FB_REGISTER_OUT_KERNEL(op::where, CPU, where_out_cpu);

}  // namespace
}  // namespace flambeau
