// example::lstm_cell: the pointwise half of an LSTM cell, fused into one pass.
//
//   i, f, g, o = gates.chunk(4, dim=1)
//   c_next     = sigmoid(f) * c + sigmoid(i) * tanh(g)
//   h          = sigmoid(o) * tanh(c_next)
//
// Composed from flambeau ops this is nine kernels and eight temporaries of
// (N, H); here it is one loop that reads each gate once. The gate matmuls stay
// outside (flambeau::matmul), as in cuDNN's and PyTorch's fused cells.
#include "lstm_cell.h"

#include <cmath>
#include <cstdint>
#include <tuple>

using flambeau::Tensor;

void example::check_lstm_cell_inputs(const Tensor& gates, const Tensor& c) {
  FB_CHECK_VALUE(gates.dim() == 2 && c.dim() == 2, "[example::lstm_cell] expected gates of shape (N, 4*H) and c of ",
                 "shape (N, H), got ", flambeau::shape_str(gates.sizes()), " and ", flambeau::shape_str(c.sizes()));
  FB_CHECK_VALUE(gates.size(0) == c.size(0) && gates.size(1) == 4 * c.size(1),
                 "[example::lstm_cell] expected gates of shape (N, 4*H) and c of shape (N, H), got ",
                 flambeau::shape_str(gates.sizes()), " and ", flambeau::shape_str(c.sizes()));
  FB_CHECK_TYPE(gates.dtype() == c.dtype() && (gates.dtype() == flambeau::ScalarType::Float32 ||
                                               gates.dtype() == flambeau::ScalarType::Float64),
                "[example::lstm_cell] expected gates and c of one dtype, float32 or float64, got ", gates.describe(),
                " and ", c.describe());
  FB_CHECK_VALUE(gates.device() == c.device(), "[example::lstm_cell] expected gates and c on one device, got ",
                 gates.describe(), " and ", c.describe());
}

namespace {

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

template <class T>
void lstm_cell_loop(const Tensor& gates, const Tensor& c, Tensor& h, Tensor& c_next) {
  const int64_t hidden = c.size(1);
  const T* pg = gates.data_ptr<T>();
  const T* pc = c.data_ptr<T>();
  T* ph = h.data_ptr<T>();
  T* pn = c_next.data_ptr<T>();
  flambeau::parallel_for(0, c.numel(), flambeau::kGrainSize / 8, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t row = k / hidden, j = k % hidden;
      const T* g = pg + row * 4 * hidden;
      const T cn = sigmoid(g[hidden + j]) * pc[k] + sigmoid(g[j]) * std::tanh(g[2 * hidden + j]);
      pn[k] = cn;
      ph[k] = sigmoid(g[3 * hidden + j]) * std::tanh(cn);
    }
  });
}

std::tuple<Tensor, Tensor> lstm_cell_cpu(const Tensor& gates, const Tensor& c) {
  example::check_lstm_cell_inputs(gates, c);
  const Tensor g = flambeau::contiguous(gates), cc = flambeau::contiguous(c);
  Tensor h = flambeau::empty_like(cc), c_next = flambeau::empty_like(cc);
  if (gates.dtype() == flambeau::ScalarType::Float32)
    lstm_cell_loop<float>(g, cc, h, c_next);
  else
    lstm_cell_loop<double>(g, cc, h, c_next);
  return {h, c_next};
}

// On meta tensors: two (N, H) results of c's dtype, no data.
std::tuple<Tensor, Tensor> lstm_cell_fake(const Tensor& gates, const Tensor& c) {
  example::check_lstm_cell_inputs(gates, c);
  return {flambeau::empty_like(c), flambeau::empty_like(c)};
}

// The gradients of gates and c from those of h and c_next (either may be
// undefined: that output got no gradient). Composed of flambeau ops, so it
// runs on every device that has the forward and is itself differentiable.
std::tuple<Tensor, Tensor> lstm_cell_backward(const Tensor& grad_h, const Tensor& grad_c_next, const Tensor& gates,
                                              const Tensor& c, const Tensor& /*h*/, const Tensor& c_next) {
  const auto parts = flambeau::chunk(gates, 4, 1);
  const Tensor si = flambeau::sigmoid(parts[0]), sf = flambeau::sigmoid(parts[1]);
  const Tensor tg = flambeau::tanh(parts[2]), so = flambeau::sigmoid(parts[3]);
  const Tensor tc = flambeau::tanh(c_next);
  const Tensor one = flambeau::full({}, 1.0, c.dtype(), c.device());
  // d sigmoid(x) = s (1 - s), d tanh(x) = 1 - t^2.
  const auto dsig = [&](const Tensor& s) { return flambeau::mul(s, flambeau::sub(one, s)); };
  const auto dtanh = [&](const Tensor& t) { return flambeau::sub(one, flambeau::square(t)); };
  // The gradient reaching c_next: its own plus the one through h = so * tanh(c_next).
  Tensor gc = grad_c_next.defined() ? grad_c_next : flambeau::zeros_like(c);
  Tensor d_o = flambeau::zeros_like(c);
  if (grad_h.defined()) {
    gc = flambeau::add(gc, flambeau::mul(flambeau::mul(grad_h, so), dtanh(tc)));
    d_o = flambeau::mul(flambeau::mul(grad_h, tc), dsig(so));
  }
  const Tensor d_i = flambeau::mul(flambeau::mul(gc, tg), dsig(si));
  const Tensor d_f = flambeau::mul(flambeau::mul(gc, c), dsig(sf));
  const Tensor d_g = flambeau::mul(flambeau::mul(gc, si), dtanh(tg));
  return {flambeau::cat({d_i, d_f, d_g, d_o}, 1), flambeau::mul(gc, sf)};
}

}  // namespace

FLAMBEAU_LIBRARY(example, m) {
  m.def("lstm_cell(Tensor gates, Tensor c) -> (Tensor, Tensor)");
  m.impl("lstm_cell", flambeau::kCPU, &lstm_cell_cpu);
#ifdef FLAMBEAU_EXAMPLE_WITH_CUDA
  m.impl("lstm_cell", flambeau::kCUDA, &example::lstm_cell_cuda);
#endif
  m.impl_fake("lstm_cell", &lstm_cell_fake);
  m.impl_backward("lstm_cell", &lstm_cell_backward);
}
