// CPU kernels: embedding (a row gather), its dense backward, embedding_renorm_,
// and embedding_bag (sum / mean / max over bags) with its backward.
//
// Every index is checked against the table before its row is touched
// (an error naming the index and the table size: IndexError, or RuntimeError for the
// embedding_bag ops, as PyTorch raises them). Backward kernels never
// race on a weight row: each thread owns a contiguous range of rows, zeroes
// it, and adds the gradient rows of the indices that fall in it (every
// thread scans the indices, which are few next to the rows of the table).
// embedding, embedding_dense_backward and the embedding_bag ops are structured ops (Note [Structured
// kernels]): out kernels writing the outputs the meta step chose (cpu::write_contiguous[_outs]).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/indexing/out_writes.h"
#include "cpu/norm/norm_common.h"
#include "cpu/norm/norm_kernels.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"

namespace flambeau {
namespace {

using cpu::contig;
using cpu::NormFns;

void check_indices_dtype(const Tensor& indices, const char* op, const char* what = "indices") {
  FB_CHECK_TYPE(indices.dtype() == ScalarType::Int64 || indices.dtype() == ScalarType::Int32, "[", op, "] ",
                what, " must be an int64 or int32 tensor, got dtype ", dtype_name(indices.dtype()));
}

/// Indices as a contiguous int64 vector-like tensor.
Tensor as_int64(const Tensor& t) {
  return contig(t.dtype() == ScalarType::Int64 ? t : op::cast(t, ScalarType::Int64));
}

void check_weight(const Tensor& weight, const char* op) {
  cpu::check_floating(weight, op, "weight");
  FB_CHECK_VALUE(weight.dim() == 2, "[", op,
                 "] weight must be 2-D (num_embeddings, embedding_dim), got shape ",
                 shape_str(weight.sizes()));
}

// An index out of range is PyTorch's IndexError for embedding (and embedding_renorm_) and its RuntimeError
// for the embedding_bag ops: BagIndexError, flambeau's ValueError (FlambeauError, a RuntimeError).
using BagIndexError = ValueError;

template <class Error = IndexError>
[[noreturn]] void index_error(const char* op, int64_t idx, int64_t num) {
  throw Error(detail::cat_str("[", op, "] index ", idx, " is out of range for an embedding table of ", num,
                              " rows (valid indices: 0..", num - 1, ")"));
}

template <class Error = IndexError>
inline void check_index(const char* op, int64_t idx, int64_t num) {
  if (idx < 0 || idx >= num) [[unlikely]]
    index_error<Error>(op, idx, num);
}

/// The indices as a contiguous int64 tensor, every one checked against a table of `num` rows before the
/// kernel writes anything (the first one out of range is the error).
template <class Error = IndexError>
Tensor checked_indices(const char* op, const Tensor& indices, int64_t num) {
  Tensor idx = as_int64(indices);
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t i = 0, k = idx.numel(); i < k; ++i) check_index<Error>(op, ip[i], num);
  return idx;
}

// The weight, the indices' dtype and sparse passed meta::check_embedding; the index values are checked here.
// The output (indices.shape + (embedding_dim,)) is the meta step's.
void embedding_out_cpu(const Tensor& out, const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                       bool scale_grad_by_freq, bool sparse) {
  const char* op = "embedding";
  (void)padding_idx;
  (void)scale_grad_by_freq;
  (void)sparse;
  const int64_t num = weight.sizes()[0], d = weight.sizes()[1];
  const Tensor idx = as_int64(indices);
  const int64_t k = idx.numel();
  if (k == 0) return;
  const int64_t* ip = idx.data<int64_t>();
  if (d == 0) {
    for (int64_t i = 0; i < k; ++i) check_index(op, ip[i], num);
    return;
  }
  const Tensor w = contig(weight);
  const size_t row = static_cast<size_t>(d) * itemsize(weight.dtype());
  const char* src = static_cast<const char*>(w.data_ptr());
  cpu::write_contiguous(out, {&weight, &indices}, [&](const Tensor& dst_t) {
    char* dst = static_cast<char*>(dst_t.data_ptr());
    const int64_t grain = std::max<int64_t>(1, kGrainSize / d);
    parallel_for(0, k, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t r = ip[i];
        check_index(op, r, num);
        std::memcpy(dst + static_cast<size_t>(i) * row, src + static_cast<size_t>(r) * row, row);
      }
    });
  });
}

/// Per-row counts of the indices (for scale_grad_by_freq).
std::vector<int64_t> index_counts(const int64_t* ip, int64_t k, int64_t num) {
  std::vector<int64_t> counts(static_cast<size_t>(num), 0);
  for (int64_t i = 0; i < k; ++i) ++counts[static_cast<size_t>(ip[i])];
  return counts;
}

/// Calls add(row_begin, row_end) per thread on disjoint row ranges of a fresh
/// (num, d) gradient that it first zeroes there.
template <class T, class F>
void accumulate_rows(const Tensor& grad_weight, int64_t num, int64_t d, const F& add) {
  T* gw = grad_weight.data<T>();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(d, 1));
  parallel_for(0, num, grain, [&](int64_t r0, int64_t r1) {
    std::memset(gw + r0 * d, 0, static_cast<size_t>((r1 - r0) * d) * sizeof(T));
    add(r0, r1);
  });
}

// The output (num_weights, embedding_dim) is the meta step's.
void embedding_backward_out_cpu(const Tensor& out, const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  const char* op = "embedding_backward";
  if (grad_output.dtype() == ScalarType::Float16 || grad_output.dtype() == ScalarType::BFloat16) {
    // Computed in float32, rounded once into out.
    const Tensor tmp = op::empty(out.sizes(), ScalarType::Float32, out.device());
    embedding_backward_out_cpu(tmp, op::cast(grad_output, ScalarType::Float32), indices, num_weights,
                               padding_idx, scale_grad_by_freq);
    Tensor dst = out;
    op::copy_(dst, tmp);
    return;
  }
  // grad_output, the indices' dtype and num_weights passed meta::check_embedding_backward.
  const int64_t k = indices.numel();
  const int64_t d = grad_output.sizes()[grad_output.dim() - 1];
  const Tensor idx = checked_indices(op, indices, num_weights);
  const int64_t* ip = idx.data<int64_t>();
  std::vector<int64_t> counts;
  if (scale_grad_by_freq) counts = index_counts(ip, k, num_weights);
  cpu::write_contiguous(out, {&grad_output, &indices}, [&](const Tensor& gw) {
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& kf = cpu::norm_fns<T>();
        // A 2-D gradient with unit-stride rows (a column slice of cat's gradient, as when the
        // embeddings were concatenated) is read in place, row i at g + i * ldg; else a contiguous copy.
        const bool rows_in_place = grad_output.dim() == 2 && grad_output.strides()[1] == 1;
        const Tensor hg = rows_in_place ? grad_output : contig(grad_output);
        const T* g = hg.data<T>();
        const int64_t ldg = rows_in_place ? grad_output.strides()[0] : d;
        T* w = gw.data<T>();
        accumulate_rows<T>(gw, num_weights, d, [&](int64_t r0, int64_t r1) {
          for (int64_t i = 0; i < k; ++i) {
            const int64_t r = ip[i];
            if (r < r0 || r >= r1 || r == padding_idx) continue;
            const T s = scale_grad_by_freq ? static_cast<T>(1.0 / static_cast<double>(counts[r])) : T(1);
            kf.row_axpy(w + r * d, g + i * ldg, d, s);
          }
        });
      }
    });
  });
}

Tensor& embedding_renorm_cpu(Tensor& self, const Tensor& indices, double max_norm, double norm_type) {
  const char* op = "embedding_renorm_";
  check_weight(self, op);
  check_indices_dtype(indices, op);
  FB_CHECK_VALUE(max_norm >= 0, "[", op, "] max_norm must be non-negative, got ", max_norm);
  FB_CHECK_VALUE(self.is_contiguous() || self.strides()[1] == 1, "[", op,
                 "] weight rows must be contiguous, got strides ", shape_str(self.strides()));
  const int64_t num = self.sizes()[0], d = self.sizes()[1];
  const Tensor idx = as_int64(indices);
  const int64_t* ip = idx.data<int64_t>();
  std::vector<int64_t> rows(ip, ip + idx.numel());
  for (int64_t r : rows) check_index(op, r, num);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* base = self.data<T>();
      const int64_t rs = self.strides()[0];
      for (int64_t r : rows) {
        T* row = base + r * rs;
        double norm = 0;
        if (std::isinf(norm_type)) {
          for (int64_t j = 0; j < d; ++j) norm = std::max(norm, std::abs(static_cast<double>(row[j])));
        } else if (norm_type == 1) {
          for (int64_t j = 0; j < d; ++j) norm += std::abs(static_cast<double>(row[j]));
        } else if (norm_type == 2) {
          for (int64_t j = 0; j < d; ++j) norm += static_cast<double>(row[j]) * static_cast<double>(row[j]);
          norm = std::sqrt(norm);
        } else {
          for (int64_t j = 0; j < d; ++j) norm += std::pow(std::abs(static_cast<double>(row[j])), norm_type);
          norm = std::pow(norm, 1.0 / norm_type);
        }
        if (norm > max_norm) {
          const T scale = static_cast<T>(max_norm / (norm + 1e-7));
          for (int64_t j = 0; j < d; ++j) row[j] *= scale;
        }
      }
    }
  });
  self.impl()->bump_version();
  return self;
}

constexpr int64_t kModeSum = 0, kModeMean = 1, kModeMax = 2;

/// The embedding_bag loops run in float32 and float64 (the meta step refuses other dtypes):
/// body(kf, psw) with T's row kernels and per_sample_weights' contiguous data, or null.
template <class Body>
void visit_bag_dtype(ScalarType dtype, const char* op, const std::optional<Tensor>& per_sample_weights,
                     const Body& body) {
  visit_dtype(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      Tensor held;
      body(cpu::norm_fns<T>(), cpu::opt_data<T>(per_sample_weights, held));
    }
  });
}

// Structured (Note [Structured kernels]): meta::check_embedding_bag checked what the shapes and dtypes tell
// and the meta step allocated the four results ((bags, dim), (indices,), (bags,), (bags, dim) or (0,));
// the offsets' and indices' values are checked here, before anything is written.
void embedding_bag_out_cpu(const Tensor& out, const Tensor& offset2bag, const Tensor& bag_size,
                           const Tensor& max_indices, const Tensor& weight, const Tensor& indices,
                           const Tensor& offsets, bool scale_grad_by_freq, int64_t mode, bool sparse,
                           const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
                           int64_t padding_idx) {
  const char* op = "embedding_bag";
  (void)scale_grad_by_freq;
  (void)sparse;
  const int64_t num = weight.sizes()[0], d = weight.sizes()[1], k = indices.numel();
  const Tensor off = as_int64(offsets);
  const int64_t no = off.numel();
  const int64_t* op_ = off.data<int64_t>();
  const int64_t nbags = include_last_offset ? no - 1 : no;
  if (no > 0)
    FB_CHECK_VALUE(
        op_[0] == 0, "[", op,
        "] offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
        "However, got ",
        op_[0]);
  for (int64_t b = 1; b < no; ++b)
    FB_CHECK_VALUE(op_[b] >= op_[b - 1], "[", op, "] offsets must be non-decreasing, got offsets[", b - 1,
                   "]=", op_[b - 1], " > offsets[", b, "]=", op_[b]);
  if (no > 0)
    FB_CHECK_VALUE(op_[no - 1] <= k, "[", op, "] offsets[-1]=", op_[no - 1],
                   " can not be greater than input's length ", k);
  const Tensor idx = checked_indices<BagIndexError>(op, indices, num);
  const int64_t* ip = idx.data<int64_t>();
  const Tensor w = contig(weight);
  const Tensor* psw_t = per_sample_weights ? &*per_sample_weights : nullptr;
  const int64_t grain = std::max<int64_t>(
      1, kGrainSize / std::max<int64_t>(d * std::max<int64_t>(k, 1) / std::max<int64_t>(nbags, 1), 1));
  visit_bag_dtype(weight.dtype(), op, per_sample_weights, [&]<class T>(const NormFns<T>& kf, const T* psw) {
    cpu::write_contiguous_outs<4>(
        {out, offset2bag, bag_size, max_indices}, {&weight, &indices, &offsets, psw_t},
        [&](const std::array<Tensor, 4>& dst) {
          int64_t* o2b = dst[1].data<int64_t>();
          int64_t* bs = dst[2].data<int64_t>();
          int64_t* mi = mode == kModeMax ? dst[3].data<int64_t>() : nullptr;
          std::fill(o2b, o2b + k, -1);
          const T* wp = w.data<T>();
          T* y = dst[0].data<T>();
          parallel_for(0, nbags, grain, [&](int64_t b0, int64_t b1) {
            for (int64_t b = b0; b < b1; ++b) {
              const int64_t start = op_[b], end = (b + 1 < no) ? op_[b + 1] : k;
              T* yb = y + b * d;
              std::fill(yb, yb + d, T(0));
              int64_t cnt = 0;
              if (mi) std::fill(mi + b * d, mi + (b + 1) * d, int64_t(-1));
              for (int64_t i = start; i < end; ++i) {
                o2b[i] = b;
                const int64_t r = ip[i];
                if (r == padding_idx) continue;
                const T* wr = wp + r * d;
                if (mode == kModeMax) {
                  int64_t* mb = mi + b * d;
                  for (int64_t j = 0; j < d; ++j)
                    if (cnt == 0 || wr[j] > yb[j]) {
                      yb[j] = wr[j];
                      mb[j] = r;
                    }
                } else {
                  kf.row_axpy(yb, wr, d, psw ? psw[i] : T(1));
                }
                ++cnt;
              }
              bs[b] = cnt;
              if (mode == kModeMean && cnt > 0)
                kf.row_scale(yb, yb, d, static_cast<T>(1.0 / static_cast<double>(cnt)));
            }
          });
        });
  });
}

// meta::check_embedding_bag_grad checked grad and the shapes; the output is (num_weights, dim).
void embedding_bag_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& indices,
                                    const Tensor& offset2bag, const Tensor& bag_size, const Tensor& max_indices,
                                    int64_t num_weights, bool scale_grad_by_freq, int64_t mode,
                                    const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  const char* op = "embedding_bag_backward";
  const int64_t d = grad.sizes()[1], nbags = grad.sizes()[0], k = indices.numel();
  const Tensor idx = checked_indices<BagIndexError>(op, indices, num_weights), o2b = as_int64(offset2bag),
               bs = as_int64(bag_size);
  const int64_t* ip = idx.data<int64_t>();
  const int64_t* ob = o2b.data<int64_t>();
  const int64_t* bp = bs.data<int64_t>();
  std::vector<int64_t> counts;
  if (scale_grad_by_freq) counts = index_counts(ip, k, num_weights);
  Tensor mx;
  if (mode == kModeMax) {
    FB_CHECK_VALUE(max_indices.dim() == 2 && max_indices.sizes()[0] == nbags && max_indices.sizes()[1] == d,
                   "[", op, "] max_indices must have shape ", shape_str(grad.sizes()));
    mx = as_int64(max_indices);
  }
  const Tensor* psw_t = per_sample_weights ? &*per_sample_weights : nullptr;
  const Tensor hg = contig(grad);
  visit_bag_dtype(grad.dtype(), op, per_sample_weights, [&]<class T>(const NormFns<T>& kf, const T* psw) {
    const T* g = hg.data<T>();
    const auto accumulate = [&](const Tensor& gw) {
      T* w = gw.data<T>();
      accumulate_rows<T>(gw, num_weights, d, [&](int64_t r0, int64_t r1) {
        if (mode == kModeMax) {
          const int64_t* m = mx.data<int64_t>();
          for (int64_t b = 0; b < nbags; ++b)
            for (int64_t j = 0; j < d; ++j) {
              const int64_t r = m[b * d + j];
              if (r >= r0 && r < r1) w[r * d + j] += g[b * d + j];
            }
          return;
        }
        for (int64_t i = 0; i < k; ++i) {
          const int64_t r = ip[i], b = ob[i];
          if (r < r0 || r >= r1 || r == padding_idx || b < 0 || b >= nbags) continue;
          double s = psw ? static_cast<double>(psw[i]) : 1.0;
          if (mode == kModeMean) s /= static_cast<double>(std::max<int64_t>(bp[b], 1));
          if (scale_grad_by_freq) s /= static_cast<double>(counts[r]);
          kf.row_axpy(w + r * d, g + b * d, d, static_cast<T>(s));
        }
      });
    };
    cpu::write_contiguous(out, {&grad, &indices, &offset2bag, &bag_size, &max_indices, psw_t}, accumulate);
  });
}

// meta::check_embedding_bag_psw_grad checked mode, weight and the shapes; the output has indices' shape.
void embedding_bag_psw_backward_out_cpu(const Tensor& out, const Tensor& grad, const Tensor& weight,
                                        const Tensor& indices, const Tensor& offset2bag, int64_t mode,
                                        int64_t padding_idx) {
  const char* op = "embedding_bag_per_sample_weights_backward";
  (void)mode;
  const int64_t k = indices.numel(), d = weight.sizes()[1];
  const Tensor idx = as_int64(indices), o2b = as_int64(offset2bag);
  const int64_t* ip = idx.data<int64_t>();
  const int64_t* ob = o2b.data<int64_t>();
  const int64_t num = weight.sizes()[0], nbags = grad.sizes()[0];
  cpu::write_contiguous(out, {&grad, &weight, &indices, &offset2bag}, [&](const Tensor& dst) {
    visit_dtype(grad.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& kf = cpu::norm_fns<T>();
        const Tensor hg = contig(grad), hw = contig(to_dtype(weight, grad.dtype()));
        const T* g = hg.data<T>();
        const T* w = hw.data<T>();
        T* o = dst.data<T>();
        for (int64_t i = 0; i < k; ++i) {
          const int64_t r = ip[i], b = ob[i];
          check_index<BagIndexError>(op, r, num);
          o[i] = (r == padding_idx || b < 0 || b >= nbags) ? T(0)
                                                           : static_cast<T>(kf.row_dot(g + b * d, w + r * d, d));
        }
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::embedding, CPU, embedding_out_cpu);
FB_REGISTER_OUT_KERNEL(op::embedding_dense_backward, CPU, embedding_backward_out_cpu);
FB_REGISTER_KERNEL(op::embedding_renorm_, CPU, embedding_renorm_cpu);
FB_REGISTER_OUT_KERNEL(op::_embedding_bag, CPU, embedding_bag_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_embedding_bag_backward, CPU, embedding_bag_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_embedding_bag_per_sample_weights_backward, CPU, embedding_bag_psw_backward_out_cpu);

}  // namespace
}  // namespace flambeau
