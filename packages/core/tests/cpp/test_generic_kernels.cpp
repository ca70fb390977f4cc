// The Generic kernels of the nn ops (src/generic/losses.cpp, nn_ops.cpp)
// against the CPU kernels of the same ops, both called by key on CPU tensors:
// every device without a kernel of its own runs these compositions, so each
// must give the CPU's values, including for the ops a device under test here
// (the sim) overrides with its own kernel.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "flambeau/dispatch.h"
#include "flambeau/ops.h"
#include "testing.h"

namespace fbtest {
namespace {

/// Deterministic float64 values of `sizes`: lo + (hi - lo) * (sin(7 i + seed) + 1) / 2.
Tensor values(Shape sizes, double lo, double hi, int seed = 0) {
  std::vector<double> v(static_cast<size_t>(shape_numel(sizes)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = lo + (hi - lo) * (std::sin(7.0 * static_cast<double>(i) + seed) + 1) / 2;
  return from_values<double>(std::move(sizes), v);
}

void check_close(const Tensor& generic, const Tensor& cpu) {
  REQUIRE(generic.defined() == cpu.defined());
  if (!cpu.defined()) return;
  CHECK(std::ranges::equal(generic.sizes(), cpu.sizes()));
  REQUIRE(generic.dtype() == cpu.dtype());
  const std::vector<double> g = values_of<double>(generic), c = values_of<double>(cpu);
  for (size_t i = 0; i < c.size(); ++i) CHECK(g[i] == doctest::Approx(c[i]).epsilon(1e-12));
}
void check_close(const std::tuple<Tensor, Tensor>& g, const std::tuple<Tensor, Tensor>& c) {
  check_close(std::get<0>(g), std::get<0>(c));
  check_close(std::get<1>(g), std::get<1>(c));
}
void check_close(const std::tuple<Tensor, Tensor, Tensor>& g, const std::tuple<Tensor, Tensor, Tensor>& c) {
  check_close(std::get<0>(g), std::get<0>(c));
  check_close(std::get<1>(g), std::get<1>(c));
  check_close(std::get<2>(g), std::get<2>(c));
}

/// The op's Generic kernel and its CPU kernel on the same arguments give the same values.
template <class O, class... A>
void same_as_cpu(const O& op, const A&... args) {
  CAPTURE(std::string(op.name()));
  REQUIRE(op.has_kernel(DispatchKey::Generic));
  REQUIRE(op.has_kernel(DispatchKey::CPU));
  check_close(op.call_kernel(DispatchKey::Generic, args...), op.call_kernel(DispatchKey::CPU, args...));
}

}  // namespace

TEST_SUITE("generic nn kernels") {
  TEST_CASE("pointwise losses and their backward") {
    const Tensor x = values({4, 5}, -2, 2), t = values({4, 5}, -2, 2, 1), row = values({5}, -1, 1, 2);
    const Tensor p = values({4, 5}, 0.05, 0.95, 3), q = values({4, 5}, 0, 1, 4);
    const std::optional<Tensor> w = values({5}, 0.5, 2, 5), pw = values({4, 1}, 0.5, 2, 6), none;
    for (int64_t r : {0, 1, 2}) {
      CAPTURE(r);
      const Tensor g = r == 0 ? values({4, 5}, -1, 1, 7) : values({}, 1.5, 1.5);
      same_as_cpu(op::mse_loss, x, t, r);
      same_as_cpu(op::mse_loss_backward, g, x, t, r);
      same_as_cpu(op::l1_loss, x, row, r);
      same_as_cpu(op::l1_loss_backward, g, x, t, r);
      same_as_cpu(op::smooth_l1_loss, x, row, r, 0.5);
      same_as_cpu(op::smooth_l1_loss_backward, g, x, t, r, 0.5);
      same_as_cpu(op::huber_loss, x, t, r, 0.7);
      same_as_cpu(op::huber_loss_backward, g, x, t, r, 0.7);
      same_as_cpu(op::binary_cross_entropy, p, q, w, r);
      same_as_cpu(op::binary_cross_entropy_backward, g, p, q, none, r);
      same_as_cpu(op::binary_cross_entropy_with_logits, x, q, w, pw, r);
      same_as_cpu(op::binary_cross_entropy_with_logits_backward, g, x, q, none, pw, r);
    }
  }

  TEST_CASE("cross entropy and nll over (N, C) with class indices") {
    const Tensor x = values({4, 5}, -2, 2);
    const Tensor target = from_values<int64_t>({4}, {1, 4, -100, 0});  // one row ignored
    const std::optional<Tensor> w = values({5}, 0.5, 2, 1), none;
    for (int64_t r : {0, 1, 2}) {
      CAPTURE(r);
      const Tensor grad = r == 0 ? values({4}, -1, 1, 2) : values({}, 1.5, 1.5);
      for (const std::optional<Tensor>& weight : {w, none}) {
        // The loss, and the log-sum-exp of the rows not ignored (the CPU leaves an ignored row's at 0).
        const auto [gl, glse] =
            op::_cross_entropy.call_kernel(DispatchKey::Generic, x, target, weight, r, -100, 0.0);
        const auto [cl, clse] =
            op::_cross_entropy.call_kernel(DispatchKey::CPU, x, target, weight, r, -100, 0.0);
        check_close(gl, cl);
        const std::vector<double> g = values_of<double>(glse), c = values_of<double>(clse);
        for (size_t row : {0, 1, 3}) CHECK(g[row] == doctest::Approx(c[row]).epsilon(1e-12));
        const Tensor lse = std::get<1>(op::_cross_entropy(x, target, weight, r, -100, 0.0));
        same_as_cpu(op::_cross_entropy_backward, grad, x, target, lse, weight, r, int64_t{-100}, 0.0);
        same_as_cpu(op::nll_loss_nd, x, target, weight, r, int64_t{-100});
        same_as_cpu(op::nll_loss_nd_backward, grad, x, target, weight, r, int64_t{-100});
      }
    }
  }

  TEST_CASE("softmax rows, linear's backward and masked_fill") {
    const Tensor x = values({3, 4, 5}, -3, 3), g = values({3, 4, 5}, -1, 1, 1);
    for (int64_t dim : {0, 1, -1}) {
      CAPTURE(dim);
      same_as_cpu(op::_log_softmax, x, dim);
      same_as_cpu(op::_softmax, x, dim);
      same_as_cpu(op::_log_softmax_backward_data, g, op::_log_softmax(x, dim), dim);
      same_as_cpu(op::_softmax_backward_data, g, op::_softmax(x, dim), dim);
    }
    const Tensor input = values({6, 4}, -1, 1, 2), weight = values({3, 4}, -1, 1, 3);
    const Tensor grad = values({6, 3}, -1, 1, 4);
    same_as_cpu(op::_linear_backward, grad, input, weight, true, true, true);
    same_as_cpu(op::_linear_backward, grad, input, weight, false, true, false);
    same_as_cpu(op::masked_fill, x, op::gt(x, scalar_to_tensor(Scalar(0.5))), Scalar(2.0));
  }

  TEST_CASE("the SGD step and zeroing, in place") {
    for (bool nesterov : {false, true}) {
      CAPTURE(nesterov);
      std::vector<Tensor> params[2], grads, bufs[2];
      for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < 2; ++i) {
          params[k].push_back(values({3, 4}, -1, 1, i));
          bufs[k].push_back(values({3, 4}, -1, 1, 10 + i));
        }
      }
      for (int i = 0; i < 2; ++i) grads.push_back(values({3, 4}, -1, 1, 20 + i));
      for (bool first : {true, false}) {
        op::_fused_sgd_.call_kernel(DispatchKey::Generic, params[0], grads, bufs[0], 0.1, 0.9, 0.5, 0.2,
                                    nesterov, false, first);
        op::_fused_sgd_.call_kernel(DispatchKey::CPU, params[1], grads, bufs[1], 0.1, 0.9, 0.5, 0.2, nesterov,
                                    false, first);
      }
      for (int i = 0; i < 2; ++i) {
        check_close(params[0][i], params[1][i]);
        check_close(bufs[0][i], bufs[1][i]);
      }
      op::_foreach_zero_.call_kernel(DispatchKey::Generic, params[0]);
      for (const Tensor& p : params[0])
        for (double v : values_of<double>(p)) CHECK(v == 0.0);
    }
  }
}

}  // namespace fbtest
