#pragma once
// The LAPACK routines of scipy-openblas32 that the linalg kernels call
// (src/cpu/linalg/lapack.cpp). Like its cblas (gemm.h), the library prefixes every
// symbol with scipy_; the Fortran interface takes every argument by pointer,
// 32-bit integers (the "32" of scipy-openblas32), and one hidden length per
// character argument at the end (gfortran's convention, passed explicitly so
// that callee and caller agree whatever the library was built with).
//
// Note [LAPACK layout]: LAPACK reads column-major matrices. A row-major
// contiguous (m, n) buffer is the column-major (n, m) matrix A^T, so each
// kernel either uses that transpose on purpose (slogdet, cholesky, svd, eigh:
// the identity it needs holds for A^T too) or copies A transposed first.
#include <complex>
#include <cstddef>

extern "C" {
// LU with partial pivoting, inverse from LU, solve from LU.
void scipy_sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void scipy_dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void scipy_sgetri_(const int* n, float* a, const int* lda, const int* ipiv, float* work, const int* lwork,
                   int* info);
void scipy_dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work, const int* lwork,
                   int* info);
void scipy_sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
                   const int* ipiv, float* b, const int* ldb, int* info, size_t trans_len);
void scipy_dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
                   const int* ipiv, double* b, const int* ldb, int* info, size_t trans_len);
// The complex LU family.
void scipy_cgetrf_(const int* m, const int* n, std::complex<float>* a, const int* lda, int* ipiv, int* info);
void scipy_zgetrf_(const int* m, const int* n, std::complex<double>* a, const int* lda, int* ipiv, int* info);
void scipy_cgetri_(const int* n, std::complex<float>* a, const int* lda, const int* ipiv,
                   std::complex<float>* work, const int* lwork, int* info);
void scipy_zgetri_(const int* n, std::complex<double>* a, const int* lda, const int* ipiv,
                   std::complex<double>* work, const int* lwork, int* info);
void scipy_cgetrs_(const char* trans, const int* n, const int* nrhs, const std::complex<float>* a,
                   const int* lda, const int* ipiv, std::complex<float>* b, const int* ldb, int* info,
                   size_t trans_len);
void scipy_zgetrs_(const char* trans, const int* n, const int* nrhs, const std::complex<double>* a,
                   const int* lda, const int* ipiv, std::complex<double>* b, const int* ldb, int* info,
                   size_t trans_len);
// Cholesky.
void scipy_spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t uplo_len);
void scipy_dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t uplo_len);
void scipy_cpotrf_(const char* uplo, const int* n, std::complex<float>* a, const int* lda, int* info,
                   size_t uplo_len);
void scipy_zpotrf_(const char* uplo, const int* n, std::complex<double>* a, const int* lda, int* info,
                   size_t uplo_len);
// QR: Householder factorization and the explicit Q.
void scipy_sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
                   const int* lwork, int* info);
void scipy_dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
                   const int* lwork, int* info);
void scipy_sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
                   float* work, const int* lwork, int* info);
void scipy_dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
                   double* work, const int* lwork, int* info);
// SVD by divide and conquer.
void scipy_sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
                   const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork,
                   int* info, size_t jobz_len);
void scipy_dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
                   double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
                   int* iwork, int* info, size_t jobz_len);
// Symmetric eigendecomposition by divide and conquer.
void scipy_ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
                   float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
                   size_t uplo_len);
void scipy_dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                   double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
                   size_t uplo_len);
// Hermitian eigendecomposition by divide and conquer (complex).
void scipy_cheevd_(const char* jobz, const char* uplo, const int* n, std::complex<float>* a, const int* lda,
                   float* w, std::complex<float>* work, const int* lwork, float* rwork, const int* lrwork,
                   int* iwork, const int* liwork, int* info, size_t jobz_len, size_t uplo_len);
void scipy_zheevd_(const char* jobz, const char* uplo, const int* n, std::complex<double>* a, const int* lda,
                   double* w, std::complex<double>* work, const int* lwork, double* rwork, const int* lrwork,
                   int* iwork, const int* liwork, int* info, size_t jobz_len, size_t uplo_len);
// Least squares by SVD (divide and conquer).
void scipy_sgelsd_(const int* m, const int* n, const int* nrhs, float* a, const int* lda, float* b,
                   const int* ldb, float* s, const float* rcond, int* rank, float* work, const int* lwork,
                   int* iwork, int* info);
void scipy_dgelsd_(const int* m, const int* n, const int* nrhs, double* a, const int* lda, double* b,
                   const int* ldb, double* s, const double* rcond, int* rank, double* work, const int* lwork,
                   int* iwork, int* info);
// General eigendecomposition (right eigenvectors), real and complex.
void scipy_sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
                  float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work,
                  const int* lwork, int* info, size_t jobvl_len, size_t jobvr_len);
void scipy_dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr,
                  double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr, double* work,
                  const int* lwork, int* info, size_t jobvl_len, size_t jobvr_len);
void scipy_cgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<float>* a, const int* lda,
                  std::complex<float>* w, std::complex<float>* vl, const int* ldvl, std::complex<float>* vr,
                  const int* ldvr, std::complex<float>* work, const int* lwork, float* rwork, int* info,
                  size_t jobvl_len, size_t jobvr_len);
void scipy_zgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<double>* a, const int* lda,
                  std::complex<double>* w, std::complex<double>* vl, const int* ldvl,
                  std::complex<double>* vr, const int* ldvr, std::complex<double>* work, const int* lwork,
                  double* rwork, int* info, size_t jobvl_len, size_t jobvr_len);
// Complex SVD, QR and least squares.
void scipy_cgesdd_(const char* jobz, const int* m, const int* n, std::complex<float>* a, const int* lda,
                   float* s, std::complex<float>* u, const int* ldu, std::complex<float>* vt, const int* ldvt,
                   std::complex<float>* work, const int* lwork, float* rwork, int* iwork, int* info,
                   size_t jobz_len);
void scipy_zgesdd_(const char* jobz, const int* m, const int* n, std::complex<double>* a, const int* lda,
                   double* s, std::complex<double>* u, const int* ldu, std::complex<double>* vt,
                   const int* ldvt, std::complex<double>* work, const int* lwork, double* rwork, int* iwork,
                   int* info, size_t jobz_len);
void scipy_cgeqrf_(const int* m, const int* n, std::complex<float>* a, const int* lda,
                   std::complex<float>* tau, std::complex<float>* work, const int* lwork, int* info);
void scipy_zgeqrf_(const int* m, const int* n, std::complex<double>* a, const int* lda,
                   std::complex<double>* tau, std::complex<double>* work, const int* lwork, int* info);
void scipy_cungqr_(const int* m, const int* n, const int* k, std::complex<float>* a, const int* lda,
                   const std::complex<float>* tau, std::complex<float>* work, const int* lwork, int* info);
void scipy_zungqr_(const int* m, const int* n, const int* k, std::complex<double>* a, const int* lda,
                   const std::complex<double>* tau, std::complex<double>* work, const int* lwork, int* info);
void scipy_cgelsd_(const int* m, const int* n, const int* nrhs, std::complex<float>* a, const int* lda,
                   std::complex<float>* b, const int* ldb, float* s, const float* rcond, int* rank,
                   std::complex<float>* work, const int* lwork, float* rwork, int* iwork, int* info);
void scipy_zgelsd_(const int* m, const int* n, const int* nrhs, std::complex<double>* a, const int* lda,
                   std::complex<double>* b, const int* ldb, double* s, const double* rcond, int* rank,
                   std::complex<double>* work, const int* lwork, double* rwork, int* iwork, int* info);
// Symmetric / Hermitian indefinite factorization (Bunch-Kaufman LDL^T) and its solve.
void scipy_ssytrf_(const char* uplo, const int* n, float* a, const int* lda, int* ipiv, float* work,
                   const int* lwork, int* info, size_t uplo_len);
void scipy_dsytrf_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, double* work,
                   const int* lwork, int* info, size_t uplo_len);
void scipy_csytrf_(const char* uplo, const int* n, std::complex<float>* a, const int* lda, int* ipiv,
                   std::complex<float>* work, const int* lwork, int* info, size_t uplo_len);
void scipy_zsytrf_(const char* uplo, const int* n, std::complex<double>* a, const int* lda, int* ipiv,
                   std::complex<double>* work, const int* lwork, int* info, size_t uplo_len);
void scipy_chetrf_(const char* uplo, const int* n, std::complex<float>* a, const int* lda, int* ipiv,
                   std::complex<float>* work, const int* lwork, int* info, size_t uplo_len);
void scipy_zhetrf_(const char* uplo, const int* n, std::complex<double>* a, const int* lda, int* ipiv,
                   std::complex<double>* work, const int* lwork, int* info, size_t uplo_len);
void scipy_ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda,
                   const int* ipiv, float* b, const int* ldb, int* info, size_t uplo_len);
void scipy_dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda,
                   const int* ipiv, double* b, const int* ldb, int* info, size_t uplo_len);
void scipy_csytrs_(const char* uplo, const int* n, const int* nrhs, const std::complex<float>* a,
                   const int* lda, const int* ipiv, std::complex<float>* b, const int* ldb, int* info,
                   size_t uplo_len);
void scipy_zsytrs_(const char* uplo, const int* n, const int* nrhs, const std::complex<double>* a,
                   const int* lda, const int* ipiv, std::complex<double>* b, const int* ldb, int* info,
                   size_t uplo_len);
void scipy_chetrs_(const char* uplo, const int* n, const int* nrhs, const std::complex<float>* a,
                   const int* lda, const int* ipiv, std::complex<float>* b, const int* ldb, int* info,
                   size_t uplo_len);
void scipy_zhetrs_(const char* uplo, const int* n, const int* nrhs, const std::complex<double>* a,
                   const int* lda, const int* ipiv, std::complex<double>* b, const int* ldb, int* info,
                   size_t uplo_len);
// Multiply by the Q of a Householder QR (ormqr; unmqr for complex).
void scipy_sormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
                   const float* a, const int* lda, const float* tau, float* c, const int* ldc, float* work,
                   const int* lwork, int* info, size_t side_len, size_t trans_len);
void scipy_dormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
                   const double* a, const int* lda, const double* tau, double* c, const int* ldc,
                   double* work, const int* lwork, int* info, size_t side_len, size_t trans_len);
void scipy_cunmqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
                   const std::complex<float>* a, const int* lda, const std::complex<float>* tau,
                   std::complex<float>* c, const int* ldc, std::complex<float>* work, const int* lwork,
                   int* info, size_t side_len, size_t trans_len);
void scipy_zunmqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
                   const std::complex<double>* a, const int* lda, const std::complex<double>* tau,
                   std::complex<double>* c, const int* ldc, std::complex<double>* work, const int* lwork,
                   int* info, size_t side_len, size_t trans_len);
}

namespace flambeau::cpu::lapack {

// Overloads by element type, so that the kernels are written once as templates.

inline void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) {
  scipy_sgetrf_(&m, &n, a, &lda, ipiv, info);
}
inline void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) {
  scipy_dgetrf_(&m, &n, a, &lda, ipiv, info);
}
inline void getri(int n, float* a, int lda, const int* ipiv, float* work, int lwork, int* info) {
  scipy_sgetri_(&n, a, &lda, ipiv, work, &lwork, info);
}
inline void getri(int n, double* a, int lda, const int* ipiv, double* work, int lwork, int* info) {
  scipy_dgetri_(&n, a, &lda, ipiv, work, &lwork, info);
}
inline void getrs(char trans, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b, int ldb,
                  int* info) {
  scipy_sgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void getrs(char trans, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b, int ldb,
                  int* info) {
  scipy_dgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void getrf(int m, int n, std::complex<float>* a, int lda, int* ipiv, int* info) {
  scipy_cgetrf_(&m, &n, a, &lda, ipiv, info);
}
inline void getrf(int m, int n, std::complex<double>* a, int lda, int* ipiv, int* info) {
  scipy_zgetrf_(&m, &n, a, &lda, ipiv, info);
}
inline void getri(int n, std::complex<float>* a, int lda, const int* ipiv, std::complex<float>* work,
                  int lwork, int* info) {
  scipy_cgetri_(&n, a, &lda, ipiv, work, &lwork, info);
}
inline void getri(int n, std::complex<double>* a, int lda, const int* ipiv, std::complex<double>* work,
                  int lwork, int* info) {
  scipy_zgetri_(&n, a, &lda, ipiv, work, &lwork, info);
}
inline void getrs(char trans, int n, int nrhs, const std::complex<float>* a, int lda, const int* ipiv,
                  std::complex<float>* b, int ldb, int* info) {
  scipy_cgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void getrs(char trans, int n, int nrhs, const std::complex<double>* a, int lda, const int* ipiv,
                  std::complex<double>* b, int ldb, int* info) {
  scipy_zgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void potrf(char uplo, int n, float* a, int lda, int* info) {
  scipy_spotrf_(&uplo, &n, a, &lda, info, 1);
}
inline void potrf(char uplo, int n, double* a, int lda, int* info) {
  scipy_dpotrf_(&uplo, &n, a, &lda, info, 1);
}
inline void potrf(char uplo, int n, std::complex<float>* a, int lda, int* info) {
  scipy_cpotrf_(&uplo, &n, a, &lda, info, 1);
}
inline void potrf(char uplo, int n, std::complex<double>* a, int lda, int* info) {
  scipy_zpotrf_(&uplo, &n, a, &lda, info, 1);
}
inline void geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info) {
  scipy_sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info) {
  scipy_dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork,
                  int* info) {
  scipy_sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork,
                  int* info) {
  scipy_dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt,
                  int ldvt, float* work, int lwork, int* iwork, int* info) {
  scipy_sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
inline void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt,
                  int ldvt, double* work, int lwork, int* iwork, int* info) {
  scipy_dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
inline void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* work, int lwork,
                  int* iwork, int liwork, int* info) {
  scipy_ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
inline void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* work, int lwork,
                  int* iwork, int liwork, int* info) {
  scipy_dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
inline void heevd(char jobz, char uplo, int n, std::complex<float>* a, int lda, float* w,
                  std::complex<float>* work, int lwork, float* rwork, int lrwork, int* iwork, int liwork,
                  int* info) {
  scipy_cheevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info, 1, 1);
}
inline void heevd(char jobz, char uplo, int n, std::complex<double>* a, int lda, double* w,
                  std::complex<double>* work, int lwork, double* rwork, int lrwork, int* iwork, int liwork,
                  int* info) {
  scipy_zheevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info, 1, 1);
}
inline void gelsd(int m, int n, int nrhs, float* a, int lda, float* b, int ldb, float* s, float rcond,
                  int* rank, float* work, int lwork, int* iwork, int* info) {
  scipy_sgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, iwork, info);
}
inline void gelsd(int m, int n, int nrhs, double* a, int lda, double* b, int ldb, double* s, double rcond,
                  int* rank, double* work, int lwork, int* iwork, int* info) {
  scipy_dgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, iwork, info);
}

inline void geev(char jobvr, int n, float* a, int lda, float* wr, float* wi, float* vr, int ldvr, float* work,
                 int lwork, int* info) {
  const char jobvl = 'N';
  const int one = 1;
  scipy_sgeev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, info, 1, 1);
}
inline void geev(char jobvr, int n, double* a, int lda, double* wr, double* wi, double* vr, int ldvr,
                 double* work, int lwork, int* info) {
  const char jobvl = 'N';
  const int one = 1;
  scipy_dgeev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, info, 1, 1);
}
inline void geev(char jobvr, int n, std::complex<float>* a, int lda, std::complex<float>* w,
                 std::complex<float>* vr, int ldvr, std::complex<float>* work, int lwork, float* rwork,
                 int* info) {
  const char jobvl = 'N';
  const int one = 1;
  scipy_cgeev_(&jobvl, &jobvr, &n, a, &lda, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
}
inline void geev(char jobvr, int n, std::complex<double>* a, int lda, std::complex<double>* w,
                 std::complex<double>* vr, int ldvr, std::complex<double>* work, int lwork, double* rwork,
                 int* info) {
  const char jobvl = 'N';
  const int one = 1;
  scipy_zgeev_(&jobvl, &jobvr, &n, a, &lda, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
}

// Complex overloads: the real arguments (s, rcond) and the extra real
// workspace rwork follow LAPACK's c/z signatures.
inline void geqrf(int m, int n, std::complex<float>* a, int lda, std::complex<float>* tau,
                  std::complex<float>* work, int lwork, int* info) {
  scipy_cgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void geqrf(int m, int n, std::complex<double>* a, int lda, std::complex<double>* tau,
                  std::complex<double>* work, int lwork, int* info) {
  scipy_zgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
/// orgqr's complex counterpart is ungqr (the explicit unitary Q).
inline void orgqr(int m, int n, int k, std::complex<float>* a, int lda, const std::complex<float>* tau,
                  std::complex<float>* work, int lwork, int* info) {
  scipy_cungqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void orgqr(int m, int n, int k, std::complex<double>* a, int lda, const std::complex<double>* tau,
                  std::complex<double>* work, int lwork, int* info) {
  scipy_zungqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void gesdd(char jobz, int m, int n, std::complex<float>* a, int lda, float* s, std::complex<float>* u,
                  int ldu, std::complex<float>* vt, int ldvt, std::complex<float>* work, int lwork,
                  float* rwork, int* iwork, int* info) {
  scipy_cgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, 1);
}
inline void gesdd(char jobz, int m, int n, std::complex<double>* a, int lda, double* s,
                  std::complex<double>* u, int ldu, std::complex<double>* vt, int ldvt,
                  std::complex<double>* work, int lwork, double* rwork, int* iwork, int* info) {
  scipy_zgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, 1);
}
inline void gelsd(int m, int n, int nrhs, std::complex<float>* a, int lda, std::complex<float>* b, int ldb,
                  float* s, float rcond, int* rank, std::complex<float>* work, int lwork, float* rwork,
                  int* iwork, int* info) {
  scipy_cgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, rwork, iwork, info);
}
inline void gelsd(int m, int n, int nrhs, std::complex<double>* a, int lda, std::complex<double>* b, int ldb,
                  double* s, double rcond, int* rank, std::complex<double>* work, int lwork, double* rwork,
                  int* iwork, int* info) {
  scipy_zgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, rwork, iwork, info);
}

// sytrf/sytrs: symmetric (complex symmetric too); hetrf/hetrs: Hermitian (complex only).
inline void sytrf(char uplo, int n, float* a, int lda, int* ipiv, float* work, int lwork, int* info) {
  scipy_ssytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void sytrf(char uplo, int n, double* a, int lda, int* ipiv, double* work, int lwork, int* info) {
  scipy_dsytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void sytrf(char uplo, int n, std::complex<float>* a, int lda, int* ipiv, std::complex<float>* work,
                  int lwork, int* info) {
  scipy_csytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void sytrf(char uplo, int n, std::complex<double>* a, int lda, int* ipiv,
                  std::complex<double>* work, int lwork, int* info) {
  scipy_zsytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void hetrf(char uplo, int n, std::complex<float>* a, int lda, int* ipiv, std::complex<float>* work,
                  int lwork, int* info) {
  scipy_chetrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void hetrf(char uplo, int n, std::complex<double>* a, int lda, int* ipiv,
                  std::complex<double>* work, int lwork, int* info) {
  scipy_zhetrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void sytrs(char uplo, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b, int ldb,
                  int* info) {
  scipy_ssytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void sytrs(char uplo, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b, int ldb,
                  int* info) {
  scipy_dsytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void sytrs(char uplo, int n, int nrhs, const std::complex<float>* a, int lda, const int* ipiv,
                  std::complex<float>* b, int ldb, int* info) {
  scipy_csytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void sytrs(char uplo, int n, int nrhs, const std::complex<double>* a, int lda, const int* ipiv,
                  std::complex<double>* b, int ldb, int* info) {
  scipy_zsytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void hetrs(char uplo, int n, int nrhs, const std::complex<float>* a, int lda, const int* ipiv,
                  std::complex<float>* b, int ldb, int* info) {
  scipy_chetrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void hetrs(char uplo, int n, int nrhs, const std::complex<double>* a, int lda, const int* ipiv,
                  std::complex<double>* b, int ldb, int* info) {
  scipy_zhetrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
/// ormqr, and its complex counterpart unmqr (trans 'C' there, 'T' for real).
inline void ormqr(char side, char trans, int m, int n, int k, const float* a, int lda, const float* tau,
                  float* c, int ldc, float* work, int lwork, int* info) {
  scipy_sormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, 1, 1);
}
inline void ormqr(char side, char trans, int m, int n, int k, const double* a, int lda, const double* tau,
                  double* c, int ldc, double* work, int lwork, int* info) {
  scipy_dormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, 1, 1);
}
inline void ormqr(char side, char trans, int m, int n, int k, const std::complex<float>* a, int lda,
                  const std::complex<float>* tau, std::complex<float>* c, int ldc, std::complex<float>* work,
                  int lwork, int* info) {
  scipy_cunmqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, 1, 1);
}
inline void ormqr(char side, char trans, int m, int n, int k, const std::complex<double>* a, int lda,
                  const std::complex<double>* tau, std::complex<double>* c, int ldc,
                  std::complex<double>* work, int lwork, int* info) {
  scipy_zunmqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, 1, 1);
}

}  // namespace flambeau::cpu::lapack
