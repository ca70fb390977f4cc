// flambeau's own float32 GEMM (Note [Own sgemm], src/cpu/linalg/sgemm.h) called
// directly, for what the Python tests cannot reach: accumulate (beta == 1) at
// the entry, which conv's im2col path uses, alone and with depth chunks, and
// the zero-depth cases. Reference: a double-precision triple loop. The kernel
// runs on AVX-512 CPUs only; elsewhere each case says so and checks nothing. The
// packed form (Note [Packed step GEMM]) has an AVX2 kernel too: each one the CPU has is run.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "cpu/elementwise/vec_table.h"
#include "cpu/linalg/sgemm.h"

namespace {

bool own_kernel_here() { return std::strcmp(flambeau::cpu::cpu_capability(), "avx512") == 0; }

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// c0 + op(a) @ op(b) in double, row-major m x n.
std::vector<double> reference(bool ta, bool tb, int m, int n, int k, const std::vector<float>& a, int lda,
                              const std::vector<float>& b, int ldb, const std::vector<float>& c0) {
  std::vector<double> out(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = c0[static_cast<size_t>(i) * n + j];
      for (int p = 0; p < k; ++p) {
        const double x = ta ? a[static_cast<size_t>(p) * lda + i] : a[static_cast<size_t>(i) * lda + p];
        const double y = tb ? b[static_cast<size_t>(j) * ldb + p] : b[static_cast<size_t>(p) * ldb + j];
        s += x * y;
      }
      out[static_cast<size_t>(i) * n + j] = s;
    }
  return out;
}

void check_accumulate(bool ta, bool tb, int m, int n, int k) {
  const int lda = ta ? m : k, ldb = tb ? k : n;
  const auto a = random_values(static_cast<size_t>(m) * k, 1);
  const auto b = random_values(static_cast<size_t>(k) * n, 2);
  auto c = random_values(static_cast<size_t>(m) * n, 3);
  const auto want = reference(ta, tb, m, n, k, a, lda, b, ldb, c);
  REQUIRE(flambeau::cpu::own_sgemm(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), n, true));
  const double tol = 4e-6 * std::sqrt(double(k)) * 8.0;
  for (size_t i = 0; i < c.size(); ++i) REQUIRE(std::abs(c[i] - want[i]) <= tol * (1.0 + std::abs(want[i])));
}

}  // namespace

TEST_CASE("own sgemm: accumulate adds onto c, every transpose form and tail") {
  if (!own_kernel_here()) {
    MESSAGE("the own sgemm needs an AVX-512 CPU; this one runs " << flambeau::cpu::cpu_capability());
    return;
  }
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      check_accumulate(ta, tb, 13, 130, 70);
      check_accumulate(ta, tb, 64, 128, 33);
      check_accumulate(ta, tb, 7, 784, 2100);  // two depth chunks, the second adding onto the first
    }
}

TEST_CASE("own sgemm: zero depth writes zeros, or leaves c with accumulate, or the row start") {
  if (!own_kernel_here()) {
    MESSAGE("the own sgemm needs an AVX-512 CPU; this one runs " << flambeau::cpu::cpu_capability());
    return;
  }
  const float dummy = 0.0f;
  std::vector<float> c(6, 5.0f);
  REQUIRE(flambeau::cpu::own_sgemm(false, false, 2, 3, 0, &dummy, 1, &dummy, 3, c.data(), 3, true));
  CHECK(c == std::vector<float>(6, 5.0f));
  REQUIRE(flambeau::cpu::own_sgemm(false, false, 2, 3, 0, &dummy, 1, &dummy, 3, c.data(), 3, false));
  CHECK(c == std::vector<float>(6, 0.0f));
  const float row[3] = {1.0f, 2.0f, 3.0f};
  REQUIRE(flambeau::cpu::own_sgemm(false, false, 2, 3, 0, &dummy, 1, &dummy, 3, c.data(), 3, true, row));
  CHECK(c == std::vector<float>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("own sgemm: applies only where it is ahead of OpenBLAS") {
  using flambeau::cpu::own_sgemm_applies;
  if (!own_kernel_here()) {
    CHECK_FALSE(own_sgemm_applies(512, 512, 512, 1.0f, 0.0f));
    return;
  }
  CHECK(own_sgemm_applies(128, 512, 784, 1.0f, 0.0f));
  CHECK(own_sgemm_applies(128, 512, 784, 1.0f, 1.0f));
  CHECK_FALSE(own_sgemm_applies(128, 512, 784, 2.0f, 0.0f));  // alpha != 1
  CHECK_FALSE(own_sgemm_applies(128, 512, 784, 1.0f, 0.5f));  // beta not 0 or 1
  CHECK_FALSE(own_sgemm_applies(4, 512, 512, 1.0f, 0.0f));    // too few rows
  CHECK_FALSE(own_sgemm_applies(512, 10, 512, 1.0f, 0.0f));   // too narrow
  CHECK_FALSE(own_sgemm_applies(64, 64, 64, 1.0f, 0.0f));     // too small
}

namespace {

// One instruction set's packed GEMM (Note [Packed step GEMM]) against the double reference: op(B)
// packed from b (b^T when tb) with padded row strides, then c = a @ B, c += a @ B and c = row + a @ B.
void check_packed(const flambeau::cpu::PackedSgemm& impl, bool tb, int m, int n, int k) {
  const int lda = k + 3, ldb = (tb ? k : n) + 5;
  const auto a = random_values(static_cast<size_t>(m) * lda, 4);
  const auto b = random_values(static_cast<size_t>(tb ? n : k) * ldb, 5);
  const auto row = random_values(static_cast<size_t>(n), 6);
  std::vector<float> packed(static_cast<size_t>(flambeau::cpu::own_sgemm_packed_size(k, n)), NAN);
  impl.pack(tb, b.data(), ldb, k, n, packed.data());
  const double tol = 4e-6 * std::sqrt(double(k)) * 8.0;
  for (int mode = 0; mode < 3; ++mode) {  // plain, accumulate, row start
    CAPTURE(mode);
    const auto c0 = mode == 1 ? random_values(static_cast<size_t>(m) * n, 7)
                              : std::vector<float>(static_cast<size_t>(m) * n, 0.0f);
    std::vector<float> start = c0;
    if (mode == 2)
      for (int i = 0; i < m; ++i)
        std::copy(row.begin(), row.end(), start.begin() + static_cast<ptrdiff_t>(i) * n);
    const auto want = reference(false, tb, m, n, k, a, lda, b, ldb, start);
    // c has two more columns than n, which must stay untouched (a masked tail store).
    const int ldc = n + 2;
    std::vector<float> c(static_cast<size_t>(m) * ldc, -7.0f);
    for (int i = 0; i < m; ++i)
      std::copy(c0.begin() + static_cast<ptrdiff_t>(i) * n, c0.begin() + static_cast<ptrdiff_t>(i + 1) * n,
                c.begin() + static_cast<ptrdiff_t>(i) * ldc);
    impl.run(m, n, k, a.data(), lda, packed.data(), c.data(), ldc, mode == 1,
             mode == 2 ? row.data() : nullptr);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        const double w = want[static_cast<size_t>(i) * n + j];
        REQUIRE(std::abs(c[static_cast<size_t>(i) * ldc + j] - w) <= tol * (1.0 + std::abs(w)));
      }
      REQUIRE(c[static_cast<size_t>(i) * ldc + n] == -7.0f);
      REQUIRE(c[static_cast<size_t>(i) * ldc + n + 1] == -7.0f);
    }
  }
}

}  // namespace

TEST_CASE("packed sgemm: each instruction set's kernel, every row count, panel tail and B form") {
  using flambeau::cpu::Isa;
  using Stub = flambeau::cpu::packed_sgemm_stub_type;
  const std::pair<const char*, const flambeau::cpu::PackedSgemm*> impls[] = {
      {"base", Stub::base},
      {"avx2", flambeau::cpu::hardware_isa() >= Isa::Avx2 ? Stub::avx2 : nullptr},
      {"avx512", flambeau::cpu::hardware_isa() >= Isa::Avx512 ? Stub::avx512 : nullptr}};
  int ran = 0;
  for (const auto& [name, impl] : impls) {
    if (!impl) {
      MESSAGE("no " << name << " on this CPU: its packed GEMM is not run");
      continue;
    }
    ++ran;
    CAPTURE(name);
    for (bool tb : {false, true})
      for (auto [m, n, k] : {std::array<int, 3>{1, 1, 1},
                             {5, 17, 3},
                             {6, 64, 16},
                             {7, 130, 33},
                             {13, 200, 70},
                             {20, 1024, 256},
                             {10, 256, 1024}}) {
        CAPTURE(tb);
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        check_packed(*impl, tb, m, n, k);
      }
  }
  // The dispatch runs the widest of them the CPU has (capped by backends.cpu.max_cpu_capability).
  CHECK(flambeau::cpu::packed_sgemm_available() == (flambeau::cpu::active_isa() >= Isa::Avx2));
  CHECK(ran >= 1);  // the base slot runs everywhere
}
