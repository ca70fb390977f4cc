#pragma once
// Note [Fused optimizer loops]
// The per-element bodies of the fused optimizer steps (_fused_sgd_,
// _fused_adam_, _fused_rmsprop_, _fused_adagrad_: foreach.cpp), one function
// per optimizer and dtype over a contiguous run of elements. They are compiled
// twice from foreach_kernels.inc, for baseline x86-64 (vec_foreach_base.cpp) and
// AVX2+FMA (vec_foreach_avx2.cpp), and foreach_table_stub picks one (Note [CPU
// capabilities] in dispatch_stub.h); named vec_* so that CMake
// gives them -fno-trapping-math like the other vector kernels. Each loop reads its
// hyperparameters once, converted to the element type (PyTorch's CPU kernels
// compute float32 tensors in float32), so the loop bodies vectorize.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

struct SgdHyper {
  double weight_decay, momentum, lr, dampening;
  bool nesterov, maximize, first_step;
};
struct AdamHyper {
  double lr, beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize, decoupled;
};
struct RmspropHyper {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};
struct AdagradHyper {
  double weight_decay, eps;
  bool maximize;
};

template <class T>
struct ForeachLoops {
  // param, grad, momentum buffer (null when momentum == 0)
  void (*sgd)(T* p, const T* g, T* buf, int64_t n, const SgdHyper& h);
  // step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t); max_sq null unless amsgrad
  void (*adam)(T* p, const T* g, T* m, T* v, T* max_sq, int64_t n, const AdamHyper& h, double step_size,
               double bc2_sqrt);
  // grad_avg null unless centered, buf null unless momentum > 0
  void (*rmsprop)(T* p, const T* g, T* sq, T* grad_avg, T* buf, int64_t n, const RmspropHyper& h);
  // clr = lr / (1 + (t - 1) * lr_decay)
  void (*adagrad)(T* p, const T* g, T* sum, int64_t n, const AdagradHyper& h, double clr);
};

struct ForeachTable {
  ForeachLoops<float> f32;
  ForeachLoops<double> f64;
};

void fill_foreach_table_base(ForeachTable& t);
void fill_foreach_table_avx2(ForeachTable& t);

/// AVX-512 CPUs run the AVX2 loops (foreach.cpp registers none of their own).
FB_DECLARE_DISPATCH(const ForeachTable& (*)(), foreach_table_stub);

}  // namespace flambeau::cpu
