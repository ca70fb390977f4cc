// Note [CUDA convolution] on the host: the im2col/col2im index math of
// flambeau_cuda/conv_math.h, with the layouts and per-group GEMMs of the CUDA
// convolution (src/conv.cpp, done here with plain loops), against core's CPU
// convolution, transposed convolution and weight gradient: 1-D and 2-D,
// groups, strides, padding, dilation and output_padding.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "flambeau/ops.h"
#include "flambeau_cuda/conv_math.h"
#include "testing.h"

using namespace flambeau;
namespace fcu = flambeau::cuda;

namespace {

Tensor random_tensor(IntArrayRef shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t = zeros(shape, ScalarType::Float64, Device(DeviceType::CPU));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(rng);
  return t;
}

struct Case {
  bool two_d, transposed;
  int64_t N, groups, Cb_g, Cs_g;
  int64_t Hsz, Wsz, kh, kw, sh, sw, ph, pw, dh, dw, oph, opw;
};

Case random_case(std::mt19937_64& rng) {
  auto r = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  Case c{};
  c.two_d = rng() % 2;
  c.transposed = rng() % 2;
  c.N = r(1, 3), c.groups = r(1, 3), c.Cb_g = r(1, 3), c.Cs_g = r(1, 3);
  c.Hsz = c.two_d ? r(1, 7) : 1, c.Wsz = r(1, 8);
  c.kh = c.two_d ? r(1, 3) : 1, c.kw = r(1, 3);
  c.sh = c.two_d ? r(1, 3) : 1, c.sw = r(1, 3);
  c.ph = c.two_d ? r(0, 2) : 0, c.pw = r(0, 2);
  c.dh = c.two_d ? r(1, 2) : 1, c.dw = r(1, 2);
  c.oph = c.transposed && c.two_d ? r(0, std::max(c.sh, c.dh) - 1) : 0;
  c.opw = c.transposed ? r(0, std::max(c.sw, c.dw) - 1) : 0;
  return c;
}

Shape spatial(const Case& c, int64_t h, int64_t w) { return c.two_d ? Shape{h, w} : Shape{w}; }

fcu::ConvGeometry geometry(const Case& c, const Tensor& big, const Tensor& small) {
  fcu::ConvGeometry g;
  const int64_t nd = big.dim();
  g.Hb = c.two_d ? big.sizes()[2] : 1, g.Wb = big.sizes()[static_cast<size_t>(nd - 1)];
  g.Hs = c.two_d ? small.sizes()[2] : 1, g.Ws = small.sizes()[static_cast<size_t>(nd - 1)];
  g.kh = c.kh, g.kw = c.kw, g.sh = c.sh, g.sw = c.sw, g.ph = c.ph, g.pw = c.pw, g.dh = c.dh, g.dw = c.dw;
  return g;
}

/// The im2col kernel's loop over one image (C channels): cols (C * kk, L).
std::vector<double> im2col(const fcu::ConvGeometry& g, int64_t C, const double* img) {
  const int64_t L = g.small_hw();
  std::vector<double> cols(static_cast<size_t>(C * g.kk() * L));
  for (int64_t i = 0; i < static_cast<int64_t>(cols.size()); ++i) {
    const int64_t src = g.im2col_source(i / L, i % L);
    cols[static_cast<size_t>(i)] = src < 0 ? 0.0 : img[src];
  }
  return cols;
}

}  // namespace

TEST_CASE(
    "conv_math: forward, transposed and weight gradient as the CUDA kernels compute them, against core") {
  std::mt19937_64 rng(17);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Case c = random_case(rng);
    const int64_t G = c.groups;
    // Forward: input big (N, Cb, *), weight (Cs, Cb_g, *k). Transposed: input small (N, Cs, *), weight (Cs,
    // Cb_g, *k).
    const int64_t in_ch = c.transposed ? G * c.Cs_g : G * c.Cb_g;
    Shape in_shape{c.N, in_ch}, w_shape{G * c.Cs_g, c.Cb_g};
    for (int64_t s : spatial(c, c.Hsz, c.Wsz)) in_shape.push_back(s);
    for (int64_t s : spatial(c, c.kh, c.kw)) w_shape.push_back(s);
    const Tensor x = random_tensor(in_shape, rng), w = random_tensor(w_shape, rng);
    const Shape stride = spatial(c, c.sh, c.sw), padding = spatial(c, c.ph, c.pw),
                dilation = spatial(c, c.dh, c.dw), out_pad = spatial(c, c.oph, c.opw);
    Tensor expected;
    try {
      expected = op::convolution(x, w, std::nullopt, stride, padding, dilation, c.transposed, out_pad, G);
    } catch (const ValueError&) {
      continue;  // the kernel does not fit: core raises, so does CUDA (the same checks)
    }
    ++checked;
    CAPTURE(trial);
    CAPTURE(c.two_d);
    CAPTURE(c.transposed);
    CAPTURE(c.groups);
    CAPTURE(c.Cb_g);
    CAPTURE(c.Cs_g);
    CAPTURE(c.Hsz);
    CAPTURE(c.Wsz);
    CAPTURE(c.kh);
    CAPTURE(c.kw);
    CAPTURE(c.sh);
    CAPTURE(c.sw);
    CAPTURE(c.ph);
    CAPTURE(c.pw);
    CAPTURE(c.dh);
    CAPTURE(c.dw);
    CAPTURE(c.oph);
    CAPTURE(c.opw);
    const Tensor& big = c.transposed ? expected : x;
    const Tensor& small = c.transposed ? x : expected;
    const fcu::ConvGeometry g = geometry(c, big, small);
    const int64_t Cb = G * c.Cb_g, Cs = G * c.Cs_g, L = g.small_hw(), K = c.Cb_g * g.kk(), HW = g.big_hw();
    const double* W = w.data<double>();
    std::vector<double> got(static_cast<size_t>(expected.numel()), 0.0);
    for (int64_t n = 0; n < c.N; ++n) {
      if (!c.transposed) {
        const auto cols = im2col(g, Cb, x.data<double>() + n * Cb * HW);
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t o = 0; o < c.Cs_g; ++o)
            for (int64_t l = 0; l < L; ++l) {
              double acc = 0;
              for (int64_t k = 0; k < K; ++k)
                acc += W[(gi * c.Cs_g + o) * K + k] * cols[static_cast<size_t>((gi * K + k) * L + l)];
              got[static_cast<size_t>((n * Cs + gi * c.Cs_g + o) * L + l)] = acc;
            }
      } else {
        std::vector<double> cols(static_cast<size_t>(Cb * g.kk() * L), 0.0);
        const double* X = x.data<double>() + n * Cs * L;
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t k = 0; k < K; ++k)
            for (int64_t l = 0; l < L; ++l) {
              double acc = 0;
              for (int64_t o = 0; o < c.Cs_g; ++o)
                acc += W[(gi * c.Cs_g + o) * K + k] * X[(gi * c.Cs_g + o) * L + l];
              cols[static_cast<size_t>((gi * K + k) * L + l)] = acc;
            }
        for (int64_t i = 0; i < Cb * HW; ++i)
          got[static_cast<size_t>(n * Cb * HW + i)] = g.col2im_sum(cols.data(), L, i);
      }
    }
    for (int64_t i = 0; i < expected.numel(); ++i)
      REQUIRE(got[static_cast<size_t>(i)] == doctest::Approx(expected.data<double>()[i]).epsilon(1e-10));

    // Weight gradient: dW_g += small[n, g] @ im2col(big[n])_g^T, for a random grad_output.
    const Tensor grad = random_tensor(expected.sizes(), rng);
    const Tensor dw_expected = op::convolution_backward_weight(grad, x, w.sizes(), stride, padding, dilation,
                                                               c.transposed, out_pad, G);
    const Tensor& big_t = c.transposed ? grad : x;
    const Tensor& small_t = c.transposed ? x : grad;
    std::vector<double> dw(static_cast<size_t>(w.numel()), 0.0);
    for (int64_t n = 0; n < c.N; ++n) {
      const auto cols = im2col(g, Cb, big_t.data<double>() + n * Cb * HW);
      const double* S = small_t.data<double>() + n * Cs * L;
      for (int64_t gi = 0; gi < G; ++gi)
        for (int64_t o = 0; o < c.Cs_g; ++o)
          for (int64_t k = 0; k < K; ++k) {
            double acc = 0;
            for (int64_t l = 0; l < L; ++l)
              acc += S[(gi * c.Cs_g + o) * L + l] * cols[static_cast<size_t>((gi * K + k) * L + l)];
            dw[static_cast<size_t>((gi * c.Cs_g + o) * K + k)] += acc;
          }
    }
    for (int64_t i = 0; i < w.numel(); ++i)
      REQUIRE(dw[static_cast<size_t>(i)] == doctest::Approx(dw_expected.data<double>()[i]).epsilon(1e-10));
  }
  CHECK(checked > 200);
}

TEST_CASE("conv_math: col2im is the adjoint of im2col (<im2col(x), y> == <x, col2im(y)>)") {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 100; ++trial) {
    const Case c = random_case(rng);
    fcu::ConvGeometry g;
    g.Hb = c.Hsz + 2, g.Wb = c.Wsz + 2, g.kh = c.kh, g.kw = c.kw, g.sh = c.sh, g.sw = c.sw, g.ph = c.ph,
    g.pw = c.pw, g.dh = c.dh, g.dw = c.dw;
    const int64_t span_h = g.dh * (g.kh - 1) + 1, span_w = g.dw * (g.kw - 1) + 1;
    if (g.Hb + 2 * g.ph < span_h || g.Wb + 2 * g.pw < span_w) continue;
    g.Hs = (g.Hb + 2 * g.ph - span_h) / g.sh + 1, g.Ws = (g.Wb + 2 * g.pw - span_w) / g.sw + 1;
    const int64_t C = c.Cb_g;
    const Tensor x = random_tensor(Shape{C * g.big_hw()}, rng);
    const Tensor y = random_tensor(Shape{C * g.kk() * g.small_hw()}, rng);
    const auto cols = im2col(g, C, x.data<double>());
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < cols.size(); ++i) lhs += cols[i] * y.data<double>()[i];
    for (int64_t i = 0; i < C * g.big_hw(); ++i)
      rhs += x.data<double>()[i] * g.col2im_sum(y.data<double>(), g.small_hw(), i);
    REQUIRE(lhs == doctest::Approx(rhs).epsilon(1e-12));
  }
}
