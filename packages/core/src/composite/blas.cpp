// The BLAS-style fused forms of PyTorch (addmm, addmv, addr, baddbmm, addbmm):
// beta * input + alpha * product, built from mm/bmm/matmul/mul/add, so autograd
// differentiates them through those ops. As in PyTorch, beta = 0 ignores input
// (NaN and inf in it do not propagate) and input only needs to broadcast to the
// product's shape.
#include <string>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "meta/bool_products.h"

namespace flambeau {
namespace {

bool is_value(const Scalar& s, double v) { return !s.is_complex() && s.to_double() == v; }

// input must broadcast to the product's shape (not the other way round: the result has the product's shape).
void check_broadcasts_to(const char* op, const Tensor& self, IntArrayRef target) {
  const IntArrayRef have = self.sizes();
  bool ok = have.size() <= target.size();
  for (size_t i = 0; ok && i < have.size(); ++i) {
    const int64_t s = have[have.size() - 1 - i];
    ok = s == 1 || s == target[target.size() - 1 - i];
  }
  FB_CHECK_VALUE(ok, "[", op, "] input of shape ", shape_str(have), " cannot be broadcast to the product's shape ",
                 shape_str(target));
}

void check_same_dtype(const char* op, const Tensor& self, const Tensor& a, const Tensor& b, const char* a_name,
                      const char* b_name) {
  FB_CHECK_TYPE(self.dtype() == a.dtype() && a.dtype() == b.dtype(), "[", op, "] expected input, ", a_name, " and ",
                b_name, " to have the same dtype, got ", dtype_name(self.dtype()), ", ", dtype_name(a.dtype()),
                " and ", dtype_name(b.dtype()));
}

void check_dim(const char* op, const Tensor& t, int64_t dim, const char* name) {
  FB_CHECK_VALUE(t.dim() == dim, "[", op, "] expected ", name, " to be ", dim, "-D, got a ", t.dim(),
                 "-D tensor of shape ", shape_str(t.sizes()));
}

// beta * self + alpha * prod, prod having the result's shape.
Tensor fuse(const char* op, const Tensor& self, const Tensor& prod, const Scalar& beta, const Scalar& alpha) {
  check_broadcasts_to(op, self, prod.sizes());
  const Tensor scaled = is_value(alpha, 1.0) ? prod : op::mul(prod, scalar_to_tensor(alpha));
  if (is_value(beta, 0.0)) return to_dtype(scaled, promote_types(self.dtype(), scaled.dtype()));
  return flambeau::add(scaled, self, beta);
}

}  // namespace

Tensor composite::addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                        const Scalar& alpha) {
  check_dim("addmm", mat1, 2, "mat1");
  check_dim("addmm", mat2, 2, "mat2");
  FB_CHECK_VALUE(mat1.sizes()[1] == mat2.sizes()[0], "[addmm] mat1 and mat2 shapes cannot be multiplied (",
                 mat1.sizes()[0], "x", mat1.sizes()[1], " and ", mat2.sizes()[0], "x", mat2.sizes()[1], ")");
  check_same_dtype("addmm", self, mat1, mat2, "mat1", "mat2");
  meta::check_bool_product("addmm", mat1.dtype(), mat1.sizes()[0] == 0 || mat2.sizes()[1] == 0 ? 0 : 1,
                           mat1.sizes()[1]);
  return fuse("addmm", self, op::mm(mat1, mat2), beta, alpha);
}

Tensor composite::addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta,
                        const Scalar& alpha) {
  check_dim("addmv", mat, 2, "mat");
  check_dim("addmv", vec, 1, "vec");
  FB_CHECK_VALUE(mat.sizes()[1] == vec.sizes()[0], "[addmv] size mismatch: mat of shape ", shape_str(mat.sizes()),
                 " and vec of shape ", shape_str(vec.sizes()));
  check_same_dtype("addmv", self, mat, vec, "mat", "vec");
  meta::check_bool_product("addmv", mat.dtype(), mat.sizes()[0], mat.sizes()[1]);
  return fuse("addmv", self, op::matmul(mat, vec), beta, alpha);
}

Tensor composite::addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta,
                       const Scalar& alpha) {
  check_dim("addr", vec1, 1, "vec1");
  check_dim("addr", vec2, 1, "vec2");
  return fuse("addr", self, op::mul(op::unsqueeze(vec1, 1), op::unsqueeze(vec2, 0)), beta, alpha);
}

namespace {
void check_batches(const char* op, const Tensor& self, const Tensor& batch1, const Tensor& batch2) {
  check_dim(op, batch1, 3, "batch1");
  check_dim(op, batch2, 3, "batch2");
  const IntArrayRef a = batch1.sizes(), b = batch2.sizes();
  FB_CHECK_VALUE(a[0] == b[0], "[", op, "] batch1 and batch2 must have the same number of batches, got ", a[0],
                 " and ", b[0]);
  FB_CHECK_VALUE(a[2] == b[1], "[", op, "] batch1 and batch2 shapes cannot be multiplied (", shape_str(a), " and ",
                 shape_str(b), ")");
  check_same_dtype(op, self, batch1, batch2, "batch1", "batch2");
  meta::check_bool_product(op, batch1.dtype(), a[0] == 0 || a[1] == 0 || b[2] == 0 ? 0 : 1, a[2]);
}
}  // namespace

Tensor composite::baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                          const Scalar& alpha) {
  check_batches("baddbmm", self, batch1, batch2);
  return fuse("baddbmm", self, op::bmm(batch1, batch2), beta, alpha);
}

Tensor composite::addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                         const Scalar& alpha) {
  check_batches("addbmm", self, batch1, batch2);
  // sum_i batch1[i] @ batch2[i] is one (n, b*k) @ (b*k, m) product.
  const int64_t b = batch1.sizes()[0], n = batch1.sizes()[1], k = batch1.sizes()[2], m = batch2.sizes()[2];
  const Tensor lhs = op::reshape(op::transpose(batch1, 0, 1), Shape{n, b * k});
  const Tensor rhs = op::reshape(batch2, Shape{b * k, m});
  return fuse("addbmm", self, op::mm(lhs, rhs), beta, alpha);
}

}  // namespace flambeau
