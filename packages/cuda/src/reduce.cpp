// CUDA kernels of the reductions (sum, mean, prod, max, min, amax, amin,
// max.dim, min.dim, argmax, argmin) and the random fills (uniform_, normal_).
//
// A reduction casts its input to the compute dtype (float32, float64, int64;
// sum/prod of bool and integers give int64 as on the CPU), splits the
// index space into kept and reduced dims (ReduceSplit, Note [CUDA index
// math]) and writes a contiguous output of the kept dims (size 1 where
// keepdim). Random fills draw from the CUDA device's generator
// (fb.cuda.manual_seed), which is core's counter-based Generator: the same
// seed gives the same numbers as on the CPU.
#include "reduce.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

int compute_code(ScalarType t, const char* op) {
  if (t == ScalarType::Float32) return 0;
  if (t == ScalarType::Float64) return 1;
  if (t == ScalarType::Int64) return 2;
  throw TypeError(std::string("[") + op + "] with dtype " + dtype_name(t) +
                  " is not yet implemented on CUDA (float32, float64 and int64 are)");
}

struct Plan {
  Tensor input;  // in the compute dtype
  ReduceSplit split;
  Shape out_shape;
};

/// dims: the reduced dims (empty: all); duplicates are an error.
Plan plan(const Tensor& self, IntArrayRef dims, bool keepdim, ScalarType compute, const char* op) {
  const int64_t nd = self.dim();
  FB_CHECK_VALUE(nd <= kMaxDims, "[", op, "] CUDA kernels handle up to ", kMaxDims, " dims, got ", nd);
  bool reduced[kMaxDims] = {};
  if (dims.empty()) {
    for (int64_t d = 0; d < nd; ++d) reduced[d] = true;
  } else {
    for (int64_t d : dims) {
      const int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1), op);
      if (nd == 0) continue;
      FB_CHECK_VALUE(!reduced[w], "[", op, "] dim ", w, " appears multiple times in the list of dims");
      reduced[w] = true;
    }
  }
  Plan p;
  p.input = to_dtype(self, compute);
  const auto sizes = p.input.sizes();
  const auto strides = p.input.strides();
  p.split = ReduceSplit::make(static_cast<int>(nd), sizes.data(), strides.data(), reduced);
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d])
      p.out_shape.push_back(sizes[static_cast<size_t>(d)]);
    else if (keepdim)
      p.out_shape.push_back(1);
  }
  return p;
}

void launch(int rop, int compute, const Plan& p, void* out, int64_t* indices, double scale, Device dev) {
  CudaDeviceSetter guard(dev.index);
  const int err =
      launch_reduce(rop, compute, p.input.data_ptr(), p.split, out, indices, scale, current_cuda_stream(dev));
  if (err != 0) throw_cuda_error("reduction kernel launch", static_cast<cudaError_t>(err));
}

ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_floating(self.dtype()) || is_complex(self.dtype()) ? self.dtype() : ScalarType::Int64;
}

Tensor sum_like(int rop, const char* op, const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                std::optional<ScalarType> dtype, bool mean) {
  const ScalarType out_dtype = sum_dtype(self, dtype);
  if (mean)
    FB_CHECK_TYPE(is_floating(out_dtype),
                  "[mean] could not infer output dtype: input dtype must be floating point, got ",
                  dtype_name(out_dtype));
  const int code = compute_code(out_dtype, op);
  const IntArrayRef dims = dim ? *dim : IntArrayRef();
  Plan p = plan(self, dims, keepdim, out_dtype, op);
  Tensor out = op::empty(p.out_shape, out_dtype, self.device());
  const double scale = mean ? 1.0 / static_cast<double>(p.split.reduce_size) : 1.0;
  launch(rop, code, p, out.data_ptr(), nullptr, scale, self.device());
  return out;
}

Tensor sum_cuda(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sum_like(kRedSum, "sum", self, dim, keepdim, dtype, false);
}
Tensor mean_cuda(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sum_like(kRedSum, "mean", self, dim, keepdim, dtype, true);
}
Tensor prod_cuda(const Tensor& self, std::optional<ScalarType> dtype) {
  return sum_like(kRedProd, "prod", self, std::nullopt, false, dtype, false);
}

// max/min/argmax/amax have no identity: the op's check step (meta::check_reducible, Note [Meta step]) raises
// before these kernels for an empty reduction.
Tensor extreme(int rop, const char* op, const Tensor& self, IntArrayRef dims, bool keepdim) {
  const int code = compute_code(self.dtype(), op);
  Plan p = plan(self, dims, keepdim, self.dtype(), op);
  Tensor out = op::empty(p.out_shape, self.dtype(), self.device());
  launch(rop, code, p, out.data_ptr(), nullptr, 1.0, self.device());
  return out;
}

Tensor max_cuda(const Tensor& self) { return extreme(kRedMax, "max", self, {}, false); }
Tensor min_cuda(const Tensor& self) { return extreme(kRedMin, "min", self, {}, false); }
Tensor amax_cuda(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return extreme(kRedMax, "amax", self, dim, keepdim);
}
Tensor amin_cuda(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return extreme(kRedMin, "amin", self, dim, keepdim);
}

std::tuple<Tensor, Tensor> with_indices(int rop, const char* op, const Tensor& self, int64_t dim,
                                        bool keepdim) {
  const int code = compute_code(self.dtype(), op);
  const int64_t d[1] = {dim};
  Plan p = plan(self, IntArrayRef(d), keepdim, self.dtype(), op);
  Tensor values = op::empty(p.out_shape, self.dtype(), self.device());
  Tensor indices = op::empty(p.out_shape, ScalarType::Int64, self.device());
  launch(rop, code, p, values.data_ptr(), indices.data<int64_t>(), 1.0, self.device());
  return {values, indices};
}

std::tuple<Tensor, Tensor> max_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return with_indices(kRedArgMax, "max", self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return with_indices(kRedArgMin, "min", self, dim, keepdim);
}

Tensor arg(int rop, const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) return std::get<1>(with_indices(rop, op, self, *dim, keepdim));
  // Over the flattened tensor (its row-major index); keepdim gives all-ones dims.
  const int code = compute_code(self.dtype(), op);
  Plan p = plan(self, {}, keepdim, self.dtype(), op);
  Tensor indices = op::empty(p.out_shape, ScalarType::Int64, self.device());
  launch(rop, code, p, nullptr, indices.data<int64_t>(), 1.0, self.device());
  return indices;
}

Tensor argmax_cuda(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg(kRedArgMax, "argmax", self, dim, keepdim);
}
Tensor argmin_cuda(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg(kRedArgMin, "argmin", self, dim, keepdim);
}

// ---- random fills ----

Generator& generator_for(const Tensor& self, Generator* gen) {
  return gen ? *gen : backend()->generator(self.device().index);
}

OffsetCalculator<1> calc_of(const Tensor& self) {
  FB_CHECK_VALUE(self.dim() <= kMaxDims, "[random] CUDA kernels handle up to ", kMaxDims, " dims");
  OffsetCalculator<1> c;
  c.ndim = static_cast<int>(self.dim());
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = self.sizes()[static_cast<size_t>(d)];
    c.strides[0][d] = self.strides()[static_cast<size_t>(d)];
  }
  coalesce(c);
  if (c.ndim == 0) {
    c.ndim = 1;
    c.sizes[0] = 1;
    c.strides[0][0] = 1;
  }
  return c;
}

void check_random(const Tensor& self, const char* op) {
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64, "[", op,
                "] with dtype ", dtype_name(self.dtype()),
                " is not yet implemented on CUDA (float32 and float64 are)");
  check_no_internal_overlap(self, op);
}

Tensor& uniform_cuda(Tensor& self, double low, double high, Generator* gen) {
  FB_CHECK_VALUE(low <= high, "[uniform_] expects low <= high, got low=", low, ", high=", high);
  check_random(self, "uniform_");
  Generator& g = generator_for(self, gen);
  const uint64_t base = g.reserve(static_cast<uint64_t>(self.numel()));
  CudaDeviceSetter guard(self.device().index);
  const int err =
      launch_uniform(self.data_ptr(), self.dtype() == ScalarType::Float64, calc_of(self), self.numel(),
                     g.initial_seed(), base, low, high, current_cuda_stream(self.device()));
  if (err != 0) throw_cuda_error("uniform_ kernel launch", static_cast<cudaError_t>(err));
  self.impl()->bump_version();
  return self;
}

Tensor& normal_cuda(Tensor& self, double mean, double std, Generator* gen) {
  FB_CHECK_VALUE(std >= 0, "[normal_] expects std >= 0, got ", std);
  check_random(self, "normal_");
  Generator& g = generator_for(self, gen);
  const int64_t n = self.numel();
  const uint64_t base = g.reserve(static_cast<uint64_t>(n + (n & 1)));
  CudaDeviceSetter guard(self.device().index);
  const int err = launch_normal(self.data_ptr(), self.dtype() == ScalarType::Float64, calc_of(self), n,
                                g.initial_seed(), base, mean, std, current_cuda_stream(self.device()));
  if (err != 0) throw_cuda_error("normal_ kernel launch", static_cast<cudaError_t>(err));
  self.impl()->bump_version();
  return self;
}

}  // namespace

void register_reduce_kernels() {
  register_out_via_copy<sum_cuda>(op::sum);
  op::mean.register_kernel(DispatchKey::CUDA, mean_cuda);
  op::prod.register_kernel(DispatchKey::CUDA, prod_cuda);
  register_out_via_copy<max_cuda>(op::max);
  register_out_via_copy<min_cuda>(op::min);
  register_out_via_copy<amax_cuda>(op::amax);
  register_out_via_copy<amin_cuda>(op::amin);
  register_out_via_copy<max_dim_cuda>(op::max_dim);
  register_out_via_copy<min_dim_cuda>(op::min_dim);
  register_out_via_copy<argmax_cuda>(op::argmax);
  register_out_via_copy<argmin_cuda>(op::argmin);
  op::uniform_.register_kernel(DispatchKey::CUDA, uniform_cuda);
  op::normal_.register_kernel(DispatchKey::CUDA, normal_cuda);
}

}  // namespace flambeau::cuda
