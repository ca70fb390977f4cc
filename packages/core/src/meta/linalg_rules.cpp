// The meta step's rules for the LAPACK-backed linalg primitives (Note [Meta step], flambeau/meta.h;
// declared in flambeau/meta_linalg.h): the checks the CPU kernels of src/cpu/linalg/lapack.cpp,
// lapack_lu.cpp and linalg_pinv.cpp made before computing (same order, same messages), and the shape
// functions their results share. The checks that read values (LU and LDL pivots, a singular matrix's
// LAPACK info) stay in the kernels.
#include <algorithm>
#include <string>

#include "cpu/linalg/lapack_batch.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"

namespace flambeau::meta {

namespace {

using cpu::lapack_batch::batch_shape;
using cpu::lapack_batch::check_lapack_size;
using cpu::lapack_batch::check_matrix;
using cpu::lapack_batch::with_tail;

int64_t rows(const Tensor& t) { return t.sizes()[t.dim() - 2]; }
int64_t cols(const Tensor& t) { return t.sizes()[t.dim() - 1]; }

void check_same_batch(const char* op, const Tensor& a, const char* an, int64_t a_tail, const Tensor& b,
                      const char* bn, int64_t b_tail) {
  const bool same = a.dim() - a_tail == b.dim() - b_tail &&
                    std::equal(a.sizes().begin(), a.sizes().end() - a_tail, b.sizes().begin());
  FB_CHECK_VALUE(same, "[", op, "] expected ", an, " and ", bn, " to have the same batch dimensions, got ", an,
                 " of shape ", shape_str(a.sizes()), " and ", bn, " of shape ", shape_str(b.sizes()));
}

void check_pivots_tensor(const char* op, const Tensor& pivots) {
  FB_CHECK_TYPE(pivots.dtype() == ScalarType::Int32, "[", op, "] expected pivots to be an int32 tensor, got ",
                dtype_name(pivots.dtype()), " (shape ", shape_str(pivots.sizes()), ")");
  FB_CHECK_VALUE(pivots.dim() >= 1, "[", op, "] expected pivots to have at least 1 dimension, got shape ",
                 shape_str(pivots.sizes()));
}

/// A float32/float64/complex64/complex128 A of at least 2 dims (the message of eig and pinv).
void check_float_or_complex(const char* op, const Tensor& A) {
  const ScalarType t = A.dtype();
  FB_CHECK_TYPE(t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::ComplexFloat ||
                    t == ScalarType::ComplexDouble,
                "[", op, "] expected a float32, float64, complex64 or complex128 tensor for A, got ",
                dtype_name(t), " (shape ", shape_str(A.sizes()), ")");
  FB_CHECK_VALUE(A.dim() >= 2, "[", op, "] A must have at least 2 dimensions, got shape ", shape_str(A.sizes()));
}

Shape sizes_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }

}  // namespace

// ---- checks ----

void check_linalg_square(const char* op, const Tensor& A) {
  check_matrix(A, op, true, "A", true);
  const int64_t n = cols(A);
  check_lapack_size(op, {n, n});
}

void check_linalg_solve(const char* op, const Tensor& A, const Tensor& B) {
  check_matrix(A, op, true, "A", true);
  check_matrix(B, op, false, "B", true);
  FB_CHECK_TYPE(A.dtype() == B.dtype(), "[", op, "] expected A and B to have the same dtype, got ",
                dtype_name(A.dtype()), " and ", dtype_name(B.dtype()));
  const int64_t n = cols(A), k = cols(B);
  FB_CHECK_VALUE(A.dim() == B.dim() && std::equal(A.sizes().begin(), A.sizes().end() - 2, B.sizes().begin()) &&
                     rows(B) == n,
                 "[", op, "] incompatible shapes of A and B for the equation AX = B (", shape_str(A.sizes()),
                 " and ", shape_str(B.sizes()), ")");
  check_lapack_size(op, {n, n});
  check_lapack_size(op, {n, k});
}

void check_linalg_qr(const char* op, const Tensor& A, std::string_view mode) {
  check_matrix(A, op, false, "A", true);
  FB_CHECK_VALUE(mode == "reduced" || mode == "complete" || mode == "r", "[", op,
                 "] qr received unrecognized mode '", mode,
                 "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = rows(A), n = cols(A);
  check_lapack_size(op, {m, n});
  check_lapack_size(op, {m, m});
}

void check_linalg_svd(const char* op, const Tensor& A) {
  check_matrix(A, op, false, "A", true);
  const int64_t m = rows(A), n = cols(A);
  check_lapack_size(op, {m, n});
  check_lapack_size(op, {m, m});
  check_lapack_size(op, {n, n});
}

void check_linalg_eigh(const char* op, const Tensor& A, std::string_view uplo) {
  check_matrix(A, op, true, "A", true);
  FB_CHECK_VALUE(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", "[", op,
                 "] Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const int64_t n = cols(A);
  check_lapack_size(op, {n, n});
}

void check_linalg_eig(const char*, const Tensor& A, bool compute_v) {
  const char* op = compute_v ? "linalg.eig" : "linalg.eigvals";
  check_float_or_complex(op, A);
  FB_CHECK_VALUE(rows(A) == cols(A), "[", op, "] A must be batches of square matrices, but they are ", rows(A),
                 " by ", cols(A), " matrices (shape ", shape_str(A.sizes()), ")");
  const int64_t n = cols(A);
  check_lapack_size(op, {n, n});
}

void check_linalg_pinv(const char* op, const Tensor& A, bool hermitian) {
  check_float_or_complex(op, A);
  if (hermitian)
    FB_CHECK_VALUE(rows(A) == cols(A), "[", op, "] hermitian=True needs batches of square matrices, but they are ",
                   rows(A), " by ", cols(A), " matrices (shape ", shape_str(A.sizes()), ")");
}

void check_linalg_lu_factor(const char* op, const Tensor& A, bool pivot) {
  check_matrix(A, op, false, "A", true);
  FB_CHECK_VALUE(pivot, "[", op, "] LU without pivoting is not implemented on the CPU");
  check_lapack_size(op, {rows(A), cols(A)});
}

void check_linalg_lu_solve(const char* op, const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left) {
  check_matrix(LU, op, true, "LU", true);
  check_matrix(B, op, false, "B", true);
  check_pivots_tensor(op, pivots);
  FB_CHECK_TYPE(LU.dtype() == B.dtype(), "[", op, "] expected LU and B to have the same dtype, got ",
                dtype_name(LU.dtype()), " and ", dtype_name(B.dtype()));
  const int64_t n = cols(LU);
  FB_CHECK_VALUE(pivots.sizes()[pivots.dim() - 1] == n, "[", op, "] expected pivots of shape (*, n) with n = ", n,
                 " (LU of shape ", shape_str(LU.sizes()), "), got shape ", shape_str(pivots.sizes()));
  check_same_batch(op, LU, "LU", 2, pivots, "pivots", 1);
  check_same_batch(op, LU, "LU", 2, B, "B", 2);
  FB_CHECK_VALUE((left ? rows(B) : cols(B)) == n, "[", op, "] incompatible shapes of LU and B for the equation ",
                 left ? "AX = B" : "XA = B", " (", shape_str(LU.sizes()), " and ", shape_str(B.sizes()), ")");
  // The solve runs on B (left) or B^H: k right-hand sides.
  check_lapack_size(op, {n, n});
  check_lapack_size(op, {n, left ? cols(B) : rows(B)});
}

void check_linalg_ldl_solve(const char* op, const Tensor& LD, const Tensor& pivots, const Tensor& B) {
  check_matrix(LD, op, true, "LD", true);
  check_matrix(B, op, false, "B", true);
  check_pivots_tensor(op, pivots);
  FB_CHECK_TYPE(LD.dtype() == B.dtype(), "[", op, "] expected LD and B to have the same dtype, got ",
                dtype_name(LD.dtype()), " and ", dtype_name(B.dtype()));
  const int64_t n = cols(LD), k = cols(B);
  FB_CHECK_VALUE(pivots.sizes()[pivots.dim() - 1] == n, "[", op, "] expected pivots of shape (*, n) with n = ", n,
                 " (LD of shape ", shape_str(LD.sizes()), "), got shape ", shape_str(pivots.sizes()));
  check_same_batch(op, LD, "LD", 2, pivots, "pivots", 1);
  check_same_batch(op, LD, "LD", 2, B, "B", 2);
  FB_CHECK_VALUE(rows(B) == n, "[", op, "] incompatible shapes of LD and B for the equation AX = B (",
                 shape_str(LD.sizes()), " and ", shape_str(B.sizes()), ")");
  check_lapack_size(op, {n, n});
  check_lapack_size(op, {n, k});
}

void check_lu_permutation(const char* op, const Tensor& pivots, int64_t m) {
  check_pivots_tensor(op, pivots);
  FB_CHECK_VALUE(m >= pivots.sizes()[pivots.dim() - 1], "[", op,
                 "] expected at least as many rows as pivots, got ", m, " rows and pivots of shape ",
                 shape_str(pivots.sizes()));
}

void check_geqrf(const char* op, const Tensor& A) {
  check_matrix(A, op, false, "input", true);
  check_lapack_size(op, {rows(A), cols(A)});
}

void check_ormqr(const char* op, const Tensor& input, const Tensor& tau, const Tensor& other, bool left) {
  check_matrix(input, op, false, "input", true);
  check_matrix(other, op, false, "other", true);
  FB_CHECK_VALUE(tau.dim() >= 1, "[", op, "] expected tau to have at least 1 dimension, got shape ",
                 shape_str(tau.sizes()));
  FB_CHECK_TYPE(tau.dtype() == input.dtype() && other.dtype() == input.dtype(), "[", op,
                "] expected input, tau and other to have the same dtype, got ", dtype_name(input.dtype()), ", ",
                dtype_name(tau.dtype()), " and ", dtype_name(other.dtype()));
  check_same_batch(op, input, "input", 2, tau, "tau", 1);
  check_same_batch(op, input, "input", 2, other, "other", 2);
  const int64_t mn = rows(input), c = cols(input), m = rows(other), n = cols(other);
  const int64_t k = tau.sizes()[tau.dim() - 1];
  FB_CHECK_VALUE(mn == (left ? m : n), "[", op, "] input.shape[-2] must equal other.shape[", left ? -2 : -1, "] (",
                 left ? "left" : "right", "=True), got input of shape ", shape_str(input.sizes()),
                 " and other of shape ", shape_str(other.sizes()));
  FB_CHECK_VALUE(k <= c, "[", op,
                 "] tau.shape[-1] must be less than or equal to input.shape[-1], got tau of shape ",
                 shape_str(tau.sizes()), " and input of shape ", shape_str(input.sizes()));
  FB_CHECK_VALUE(k <= mn, "[", op,
                 "] tau.shape[-1] must be less than or equal to input.shape[-2], got tau of shape ",
                 shape_str(tau.sizes()), " and input of shape ", shape_str(input.sizes()));
  check_lapack_size(op, {mn, c});
  check_lapack_size(op, {m, n});
}

// ---- shape functions ----

Shape matrix_batch(const char*, const Tensor& A) { return batch_shape(A); }

std::vector<Shape> linalg_factor(const char*, const Tensor& A) {
  const Shape bs = batch_shape(A);
  return {sizes_of(A), with_tail(bs, {std::min(rows(A), cols(A))}), bs};
}

std::vector<Shape> linalg_qr(const char*, const Tensor& A, std::string_view mode) {
  const int64_t m = rows(A), n = cols(A), k = std::min(m, n);
  const bool complete = mode == "complete";
  const Shape bs = batch_shape(A);
  return {mode == "r" ? Shape{0} : with_tail(bs, {m, complete ? m : k}), with_tail(bs, {complete ? m : k, n})};
}

std::vector<Shape> linalg_svd(const char*, const Tensor& A, bool full_matrices, bool compute_uv) {
  const int64_t m = rows(A), n = cols(A), k = std::min(m, n);
  const Shape bs = batch_shape(A);
  if (!compute_uv) return {Shape{0}, with_tail(bs, {k}), Shape{0}};
  return {with_tail(bs, {m, full_matrices ? m : k}), with_tail(bs, {k}), with_tail(bs, {full_matrices ? n : k, n})};
}

std::vector<Shape> linalg_eig(const char*, const Tensor& A, bool compute_v) {
  return {with_tail(batch_shape(A), {cols(A)}), compute_v ? sizes_of(A) : Shape{0}};
}

Shape lu_permutation(const char*, const Tensor& pivots, int64_t m) {
  Shape s(pivots.sizes().begin(), pivots.sizes().end() - 1);
  s.push_back(m);
  return s;
}

// The kernel computes tol = maximum(atol[..., None], rtol[..., None] * s_max) and the pseudo-inverse of each
// matrix of the broadcast batch (a tolerance of its own per matrix): the shapes broadcast as those products
// do, with their messages.
Shape linalg_pinv(const char*, const Tensor& A, const Tensor& atol, const Tensor& rtol) {
  const int64_t m = rows(A), n = cols(A);
  const Shape bs = batch_shape(A);
  if (m == 0 || n == 0) return with_tail(bs, {n, m});
  auto stand_in = [](Shape s) { return meta::empty(s, ScalarType::Float32); };
  const Tensor at = stand_in(with_tail(sizes_of(atol), {1}));
  const Tensor rt = stand_in(with_tail(sizes_of(rtol), {1}));
  const Tensor smax = stand_in(with_tail(bs, {1}));
  const Tensor scaled = stand_in(broadcast("mul", {&rt, &smax}));
  const Tensor tol = stand_in(broadcast("maximum", {&at, &scaled}));
  const Tensor s = stand_in(with_tail(bs, {std::min(m, n)}));
  Shape inv = broadcast("gt", {&s, &tol});
  inv.insert(inv.end() - 1, 1);
  const Tensor inv_row = stand_in(inv);
  const Tensor v = stand_in(with_tail(bs, {n, std::min(m, n)}));
  Shape out = broadcast("mul", {&v, &inv_row});
  out.back() = m;
  return out;
}

}  // namespace flambeau::meta
