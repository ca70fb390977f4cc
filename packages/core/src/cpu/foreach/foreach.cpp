// CPU kernels of the fused optimizer steps and _foreach_zero_: one call updates
// every tensor of a list (Note [Fused optimizer loops] in foreach.h).
//
// A call validates the lists (lengths, dtypes, shapes; clear errors naming the
// op and the list index), increments the 0-d step tensors and derives the
// per-tensor scalars (bias corrections) from them in C++ (no .item() in
// Python), then splits all tensors into chunks of at most kChunk elements and
// runs the chunks in parallel (small lists stay on one thread: Note [Grain
// size]). Non-contiguous tensors are computed in a contiguous copy that is
// written back. Every written tensor's version counter is bumped.
#include "foreach.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/linalg/gemm_pool.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "cpu/elementwise/vec_table.h"

namespace flambeau::cpu {
FB_DEFINE_DISPATCH(foreach_table_stub);
FB_REGISTER_NO_DISPATCH(foreach_table_stub, avx512);
}  // namespace flambeau::cpu

namespace flambeau {
namespace {

using cpu::ForeachLoops;
using cpu::ForeachTable;

constexpr int64_t kChunk = 16384;

const ForeachTable& foreach_table() { return cpu::foreach_table_stub.get()(); }

// One list of an op's arguments: its name (for errors) and whether the op writes it.
struct ListArg {
  const char* name;
  const TensorList* tensors;
  bool written;
  bool optional;  // may be empty (the option that needs it is off)
};

// The contiguous tensors a call computes on, and what to copy back afterwards.
struct Work {
  std::vector<std::vector<Tensor>> lists;             // per ListArg: contiguous tensors
  std::vector<std::pair<Tensor, Tensor>> write_back;  // (original, contiguous copy)
};

void check_not_recording(const char* op, const std::vector<ListArg>& args) {
  if (!grad_mode_enabled()) return;
  for (const ListArg& a : args) {
    for (const Tensor& t : *a.tensors) {
      FB_CHECK(!(a.written && t.requires_grad()), "[", op, "] ", a.name,
               " require grad: a fused optimizer step is not differentiable and writes its tensors in place; "
               "call it under no_grad()");
    }
  }
}

Work prepare(const char* op, const std::vector<ListArg>& args, bool* any_work) {
  const TensorList& params = *args[0].tensors;
  const size_t n = params.size();
  for (const ListArg& a : args) {
    const size_t got = a.tensors->size();
    FB_CHECK_VALUE(got == n || (a.optional && got == 0), "[", op, "] ", a.name, " has ", got,
                   " tensors, expected ", n, " (one per parameter)", a.optional ? " or none" : "");
  }
  check_not_recording(op, args);
  Work w;
  w.lists.resize(args.size());
  *any_work = false;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& p = params[i];
    FB_CHECK(p.defined(), "[", op, "] params[", i, "] is undefined");
    FB_CHECK_TYPE(p.dtype() == ScalarType::Float32 || p.dtype() == ScalarType::Float64, "[", op, "] params[",
                  i, "] has dtype ", dtype_name(p.dtype()), ": only float32 and float64 are supported");
    FB_CHECK(p.device().type == DeviceType::CPU, "[", op, "] params[", i, "] is on ", p.device().str(),
             ", expected cpu");
    if (p.numel() > 0) *any_work = true;
  }
  for (size_t k = 0; k < args.size(); ++k) {
    const ListArg& a = args[k];
    auto& out = w.lists[k];
    out.reserve(a.tensors->size());
    for (size_t i = 0; i < a.tensors->size(); ++i) {
      const Tensor& t = (*a.tensors)[i];
      const Tensor& p = params[i];
      FB_CHECK(t.defined(), "[", op, "] ", a.name, "[", i, "] is undefined");
      FB_CHECK_TYPE(t.dtype() == p.dtype(), "[", op, "] ", a.name, "[", i, "] has dtype ",
                    dtype_name(t.dtype()), " but params[", i, "] has dtype ", dtype_name(p.dtype()));
      FB_CHECK_VALUE(std::ranges::equal(t.sizes(), p.sizes()), "[", op, "] ", a.name, "[", i, "] has shape ",
                     shape_str(t.sizes()), " but params[", i, "] has shape ", shape_str(p.sizes()));
      FB_CHECK(t.device() == p.device(), "[", op, "] ", a.name, "[", i, "] is on ", t.device().str(),
               " but params[", i, "] is on ", p.device().str());
      if (t.is_contiguous()) {
        out.push_back(t);
      } else {
        Tensor c = op::contiguous(t, MemoryFormat::Contiguous);
        if (a.written) w.write_back.emplace_back(t, c);
        out.push_back(std::move(c));
      }
    }
  }
  return w;
}

void finish(Work& w, const std::vector<ListArg>& args) {
  for (auto& [orig, copy] : w.write_back) {
    Tensor o = orig;
    op::copy_(o, copy);  // bumps o's version
  }
  for (size_t k = 0; k < args.size(); ++k) {
    if (!args[k].written) continue;
    for (const Tensor& t : w.lists[k]) t.impl()->bump_version();
  }
}

// The 0-d step tensors: checked, incremented, and read back as doubles.
std::vector<double> advance_steps(const char* op, const TensorList& steps, size_t n) {
  FB_CHECK_VALUE(steps.size() == n, "[", op, "] state_steps has ", steps.size(), " tensors, expected ", n);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& s = steps[i];
    FB_CHECK(s.defined(), "[", op, "] state_steps[", i, "] is undefined");
    FB_CHECK_VALUE(s.numel() == 1, "[", op, "] state_steps[", i, "] must hold one value, got shape ",
                   shape_str(s.sizes()));
    FB_CHECK_TYPE(s.dtype() == ScalarType::Float32 || s.dtype() == ScalarType::Float64, "[", op,
                  "] state_steps[", i, "] must be float32 or float64, got ", dtype_name(s.dtype()));
    FB_CHECK(s.device().type == DeviceType::CPU, "[", op, "] state_steps[", i, "] is on ", s.device().str(),
             ", expected cpu");
  }
  for (size_t i = 0; i < n; ++i) {  // every step checked first: a bad one changes nothing
    const Tensor& s = steps[i];
    if (s.dtype() == ScalarType::Float32) {
      float* v = s.data<float>();
      *v += 1.0f;
      out[i] = *v;
    } else {
      double* v = s.data<double>();
      *v += 1.0;
      out[i] = *v;
    }
    s.impl()->bump_version();
  }
  return out;
}

struct Chunk {
  uint32_t tensor;
  int64_t begin, end;
};

// Runs f(tensor index, begin, end) over chunks of every tensor, in parallel when there is enough work.
template <class F>
void for_each_chunk(const std::vector<Tensor>& params, const F& f) {
  std::vector<Chunk> chunks;
  int64_t total = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t n = params[i].numel();
    total += n;
    for (int64_t b = 0; b < n; b += kChunk)
      chunks.push_back({static_cast<uint32_t>(i), b, std::min(n, b + kChunk)});
  }
  if (chunks.empty()) return;
  // Note [Grain size]: about kGrainSize elements per thread at least.
  const int64_t grain =
      std::max<int64_t>(1, static_cast<int64_t>(chunks.size()) * kGrainSize / std::max<int64_t>(1, total));
  // On the GEMM pool (Note [GEMM pool]): the optimizer step follows the backward's GEMMs.
  cpu::pool_parallel_for(0, static_cast<int64_t>(chunks.size()), grain, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) f(chunks[c].tensor, chunks[c].begin, chunks[c].end);
  });
}

template <class T>
T* ptr(const Tensor& t, int64_t offset) {
  return t.data<T>() + offset;
}
template <class T>
T* ptr_or_null(const std::vector<Tensor>& l, size_t i, int64_t offset) {
  return l.empty() ? nullptr : l[i].data<T>() + offset;
}

template <class F>
void by_dtype(const Tensor& p, const F& f) {
  if (p.dtype() == ScalarType::Float32)
    f(float{}, foreach_table().f32);
  else
    f(double{}, foreach_table().f64);
}

void fused_sgd_cpu(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
                   double weight_decay, double momentum, double lr, double dampening, bool nesterov,
                   bool maximize, bool is_first_step) {
  const char* op = "_fused_sgd_";
  FB_CHECK_VALUE(momentum == 0 || momentum_buffers.size() == params.size(), "[", op, "] momentum=", momentum,
                 " needs one momentum buffer per parameter, got ", momentum_buffers.size(), " for ",
                 params.size(), " params");
  std::vector<ListArg> args{{"params", &params, true, false},
                            {"grads", &grads, false, false},
                            {"momentum_buffers", &momentum_buffers, true, true}};
  bool any = false;
  Work w = prepare(op, args, &any);
  const cpu::SgdHyper h{weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step};
  const bool use_buf = momentum != 0;
  const auto &P = w.lists[0], &G = w.lists[1], &B = w.lists[2];
  if (any) {
    for_each_chunk(P, [&](uint32_t i, int64_t b, int64_t e) {
      by_dtype(P[i], [&](auto tag, const auto& loops) {
        using T = decltype(tag);
        loops.sgd(ptr<T>(P[i], b), ptr<T>(G[i], b), use_buf ? ptr<T>(B[i], b) : nullptr, e - b, h);
      });
    });
  }
  finish(w, args);
}

void fused_adam_cpu(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                    const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs,
                    const TensorList& state_steps, double lr, double beta1, double beta2, double weight_decay,
                    double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  const char* op = "_fused_adam_";
  FB_CHECK_VALUE(!amsgrad || max_exp_avg_sqs.size() == params.size(), "[", op,
                 "] amsgrad=True needs one max_exp_avg_sqs tensor per parameter, got ",
                 max_exp_avg_sqs.size(), " for ", params.size(), " params");
  std::vector<ListArg> args{{"params", &params, true, false},
                            {"grads", &grads, false, false},
                            {"exp_avgs", &exp_avgs, true, false},
                            {"exp_avg_sqs", &exp_avg_sqs, true, false},
                            {"max_exp_avg_sqs", &max_exp_avg_sqs, true, true}};
  bool any = false;
  Work w = prepare(op, args, &any);
  const std::vector<double> steps = advance_steps(op, state_steps, params.size());
  std::vector<double> step_size(steps.size()), bc2_sqrt(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    step_size[i] = lr / (1 - std::pow(beta1, steps[i]));
    bc2_sqrt[i] = std::sqrt(1 - std::pow(beta2, steps[i]));
  }
  const cpu::AdamHyper h{lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay};
  const auto &P = w.lists[0], &G = w.lists[1], &M = w.lists[2], &V = w.lists[3], &X = w.lists[4];
  if (any) {
    for_each_chunk(P, [&](uint32_t i, int64_t b, int64_t e) {
      by_dtype(P[i], [&](auto tag, const auto& loops) {
        using T = decltype(tag);
        loops.adam(ptr<T>(P[i], b), ptr<T>(G[i], b), ptr<T>(M[i], b), ptr<T>(V[i], b),
                   amsgrad ? ptr<T>(X[i], b) : nullptr, e - b, h, step_size[i], bc2_sqrt[i]);
      });
    });
  }
  finish(w, args);
}

void fused_rmsprop_cpu(const TensorList& params, const TensorList& grads, const TensorList& square_avgs,
                       const TensorList& grad_avgs, const TensorList& momentum_buffers,
                       const TensorList& state_steps, double lr, double alpha, double eps,
                       double weight_decay, double momentum, bool centered, bool maximize) {
  const char* op = "_fused_rmsprop_";
  FB_CHECK_VALUE(!centered || grad_avgs.size() == params.size(), "[", op,
                 "] centered=True needs one grad_avgs tensor per parameter, got ", grad_avgs.size(), " for ",
                 params.size(), " params");
  FB_CHECK_VALUE(momentum <= 0 || momentum_buffers.size() == params.size(), "[", op, "] momentum=", momentum,
                 " needs one momentum buffer per parameter, got ", momentum_buffers.size(), " for ",
                 params.size(), " params");
  std::vector<ListArg> args{{"params", &params, true, false},
                            {"grads", &grads, false, false},
                            {"square_avgs", &square_avgs, true, false},
                            {"grad_avgs", &grad_avgs, true, true},
                            {"momentum_buffers", &momentum_buffers, true, true}};
  bool any = false;
  Work w = prepare(op, args, &any);
  advance_steps(op, state_steps, params.size());
  const cpu::RmspropHyper h{lr, alpha, eps, weight_decay, momentum, centered, maximize};
  const auto &P = w.lists[0], &G = w.lists[1], &S = w.lists[2], &A = w.lists[3], &B = w.lists[4];
  if (any) {
    for_each_chunk(P, [&](uint32_t i, int64_t b, int64_t e) {
      by_dtype(P[i], [&](auto tag, const auto& loops) {
        using T = decltype(tag);
        loops.rmsprop(ptr<T>(P[i], b), ptr<T>(G[i], b), ptr<T>(S[i], b), centered ? ptr<T>(A[i], b) : nullptr,
                      momentum > 0 ? ptr<T>(B[i], b) : nullptr, e - b, h);
      });
    });
  }
  finish(w, args);
}

void fused_adagrad_cpu(const TensorList& params, const TensorList& grads, const TensorList& state_sums,
                       const TensorList& state_steps, double lr, double lr_decay, double weight_decay,
                       double eps, bool maximize) {
  const char* op = "_fused_adagrad_";
  std::vector<ListArg> args{{"params", &params, true, false},
                            {"grads", &grads, false, false},
                            {"state_sums", &state_sums, true, false}};
  bool any = false;
  Work w = prepare(op, args, &any);
  const std::vector<double> steps = advance_steps(op, state_steps, params.size());
  std::vector<double> clr(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) clr[i] = lr / (1 + (steps[i] - 1) * lr_decay);
  const cpu::AdagradHyper h{weight_decay, eps, maximize};
  const auto &P = w.lists[0], &G = w.lists[1], &S = w.lists[2];
  if (any) {
    for_each_chunk(P, [&](uint32_t i, int64_t b, int64_t e) {
      by_dtype(P[i], [&](auto tag, const auto& loops) {
        using T = decltype(tag);
        loops.adagrad(ptr<T>(P[i], b), ptr<T>(G[i], b), ptr<T>(S[i], b), e - b, h, clr[i]);
      });
    });
  }
  finish(w, args);
}

void foreach_zero_cpu(const TensorList& tensors) {
  std::vector<Tensor> contiguous;
  contiguous.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    FB_CHECK(t.defined(), "[_foreach_zero_] tensors[", i, "] is undefined");
    FB_CHECK(!(grad_mode_enabled() && t.requires_grad()), "[_foreach_zero_] tensors[", i,
             "] requires grad: zero it under no_grad()");
    if (t.is_contiguous() && t.device().type == DeviceType::CPU) {
      contiguous.push_back(t);
    } else {
      Tensor s = t;
      op::fill_(s, 0);
    }
  }
  const auto zero = [&](uint32_t i, int64_t b, int64_t e) {
    const Tensor& t = contiguous[i];
    const int64_t item = static_cast<int64_t>(itemsize(t.dtype()));
    std::memset(static_cast<char*>(t.data_ptr()) + b * item, 0, static_cast<size_t>((e - b) * item));
  };
  for_each_chunk(contiguous, zero);
  for (const Tensor& t : contiguous) t.impl()->bump_version();
}

FB_REGISTER_KERNEL(op::_fused_sgd_, CPU, fused_sgd_cpu);
FB_REGISTER_KERNEL(op::_fused_adam_, CPU, fused_adam_cpu);
FB_REGISTER_KERNEL(op::_fused_rmsprop_, CPU, fused_rmsprop_cpu);
FB_REGISTER_KERNEL(op::_fused_adagrad_, CPU, fused_adagrad_cpu);
FB_REGISTER_KERNEL(op::_foreach_zero_, CPU, foreach_zero_cpu);

}  // namespace
}  // namespace flambeau
