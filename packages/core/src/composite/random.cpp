// Random composites of the op table (randint, normal with tensor or number
// parameters, bernoulli): an empty tensor filled by the random primitives
// (src/cpu/random/random.cpp, src/cpu/random/factories.cpp).
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "host_read.h"
#include "tensor_iterator.h"

namespace flambeau {

Tensor composite::randint_low(int64_t low, int64_t high, IntArrayRef size, Generator* generator,
                              ScalarType dtype, Device device) {
  FB_CHECK_VALUE(low < high, "[randint] expects 'from' to be less than 'to', but got from=", low,
                 " >= to=", high);
  Tensor out = op::empty(size, dtype, device);
  return op::random_(out, low, high, generator);
}

Tensor composite::randint(int64_t high, IntArrayRef size, Generator* generator, ScalarType dtype,
                          Device device) {
  return op::randint_low(0, high, size, generator, dtype, device);
}

namespace {
// mean + std * N(0, 1) over the broadcast shape, in the promoted floating dtype.
Tensor normal_from(const Tensor& mean, const Tensor& std, Generator* generator) {
  const ScalarType t = result_type(mean, std);
  FB_CHECK_TYPE(is_floating(t), "[normal] expected floating point mean and std, got ",
                dtype_name(mean.dtype()), " and ", dtype_name(std.dtype()));
  FB_CHECK_VALUE(
      !composite_detail::read_first<bool>(flambeau::any(op::lt(std, scalar_to_tensor(Scalar(0.0))))),
      "[normal] expects all elements of std >= 0");
  // A number (a wrapped cpu scalar) on one side: the noise goes on the tensor's device.
  const Device device = mean.device().is_cpu() ? std.device() : mean.device();
  Tensor noise = op::empty(broadcast_shapes(mean.sizes(), std.sizes(), "normal"), t, device);
  op::normal_(noise, 0.0, 1.0, generator);
  return op::add(mean, op::mul(std, noise), 1);
}
}  // namespace

Tensor composite::normal_tensor_tensor(const Tensor& mean, const Tensor& std, Generator* generator) {
  return normal_from(mean, std, generator);
}
Tensor composite::normal_tensor_float(const Tensor& mean, double std, Generator* generator) {
  return normal_from(mean, scalar_tensor(std, ScalarType::Float64, /*wrapped=*/true), generator);
}
Tensor composite::normal_float_tensor(double mean, const Tensor& std, Generator* generator) {
  return normal_from(scalar_tensor(mean, ScalarType::Float64, /*wrapped=*/true), std, generator);
}

Tensor composite::normal(double mean, double std, IntArrayRef size, Generator* generator,
                         std::optional<ScalarType> dtype, Device device) {
  Tensor out = op::empty(size, dtype.value_or(default_float_dtype()), device);
  return op::normal_(out, mean, std, generator);
}

Tensor composite::bernoulli(const Tensor& self, Generator* generator) {
  Tensor out = op::empty(self.sizes(), self.dtype(), self.device());
  return op::bernoulli__tensor(out, self, generator);
}

Tensor composite::bernoulli_p(const Tensor& self, double p, Generator* generator) {
  Tensor out = op::empty(self.sizes(), self.dtype(), self.device());
  return op::bernoulli_(out, p, generator);
}

}  // namespace flambeau
