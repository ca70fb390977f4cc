// CPU kernels: cat, gather, index_select, and advanced indexing (index, index_put_). cat, gather, index and
// index_select are structured ops (Note [Structured kernels]): out kernels writing the output the meta step
// chose (out_writes.h); index_put_ writes self.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cpu/elementwise/wrapping.h"
#include "cpu/indexing/out_writes.h"
#include "flambeau/error.h"
#include "flambeau/index_bounds_error.h"
#include "flambeau/memory_format.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {

/// complex128's element: 16 bytes, copied as a whole.
struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

/// Calls f(type_tag<U>) with an unsigned type of the dtype's size: copies need no more.
template <class F>
void visit_itemsize(ScalarType t, F&& f) {
  switch (itemsize(t)) {
    case 1:
      return f(type_tag<uint8_t>{});
    case 2:
      return f(type_tag<uint16_t>{});
    case 4:
      return f(type_tag<uint32_t>{});
    case 8:
      return f(type_tag<uint64_t>{});
    case 16:
      return f(type_tag<Bytes16>{});
    default:
      FB_INTERNAL_ASSERT(false, "unexpected item size ", itemsize(t), " of ", dtype_name(t));
  }
}

// The checks, the output's dtype (promote_list) and shape are the meta step's (meta::check_cat, meta::cat).
void cat_out_cpu(const Tensor& out, const TensorList& tensors, int64_t dim) {
  // Nothing to copy; the loops below would still walk every outer index (up to 2**62 of them).
  if (out.numel() == 0) return;
  // As in PyTorch, 1-D empty tensors are skipped (legacy: they act as "nothing").
  TensorList parts;
  std::vector<const Tensor*> inputs;
  for (const auto& t : tensors) {
    inputs.push_back(&t);
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  }
  const ScalarType dtype = out.dtype();
  const Tensor& ref = parts[0];  // out has elements: some part does
  const int64_t d = wrap_dim(dim, ref.dim(), "cat");
  // A dense out in another order (channels-last, Note [Result layout]): the same cat on the
  // permuted views that make out contiguous, so parts in out's layout are copied as blocks.
  if (!out.is_contiguous() && is_non_overlapping_and_dense(out)) {
    const Shape order = layout_order(out);
    const Tensor permuted_out = op::permute(out, order);
    if (permuted_out.is_contiguous()) {
      TensorList permuted;
      for (const auto& t : tensors)
        permuted.push_back(t.dim() == 1 && t.numel() == 0 ? t : op::permute(t, order));
      const int64_t permuted_dim = std::ranges::find(order, d) - order.begin();
      cat_out_cpu(permuted_out, permuted, permuted_dim);
      return;
    }
  }
  const IntArrayRef out_shape = out.sizes();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= out_shape[k];
  for (int64_t k = d + 1; k < ref.dim(); ++k) inner *= out_shape[k];
  const int64_t out_row = out_shape[d] * inner;  // elements per outer index in out
  cpu::write_contiguous(out, inputs, [&](const Tensor& dst_out) {
    visit_itemsize(dtype, [&](auto tag) {  // copies only: every dtype
      using T = typename decltype(tag)::type;
      T* o = dst_out.data<T>();
      int64_t at = 0;  // offset along dim
      for (const auto& t : parts) {
        const Tensor src = t.dtype() == dtype ? t : op::cast(t, dtype);
        const int64_t chunk = src.sizes()[d] * inner;
        if (chunk == 0) continue;  // nothing to copy (and an empty part may have no data pointer)
        if (src.is_contiguous()) {
          const T* s = src.data<T>();
          if (outer == 1) {  // one block: split the copy itself across threads
            T* dst = o + at * inner;
            parallel_for(0, chunk, kGrainSize * 4, [&](int64_t b, int64_t e) {
              std::memcpy(dst + b, s + b, static_cast<size_t>(e - b) * sizeof(T));
            });
          } else {
            const int64_t grain = std::max<int64_t>(1, kGrainSize * 4 / std::max<int64_t>(chunk, 1));
            parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
              for (int64_t i = b; i < e; ++i)
                std::memcpy(o + i * out_row + at * inner, s + i * chunk,
                            static_cast<size_t>(chunk) * sizeof(T));
            });
          }
        } else {
          // A strided part (a transposed or sliced tensor, roll's halves): the copy kernel writes it
          // into its slice of out, vectorized and multi-threaded.
          Tensor dst = op::slice(dst_out, d, at, at + src.sizes()[d], 1);
          op::copy_(dst, src);
        }
        at += src.sizes()[d];
      }
    });
  });
}

// Walks every position of `index` (row-major), calling f(index_off, pos) where
// pos holds the coordinates.
template <class F>
void for_each_position(const Tensor& index, F&& f) {
  const int64_t nd = index.dim();
  Shape pos(nd, 0);
  const int64_t n = index.numel();
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(off, pos);
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++pos[k] < index.sizes()[k]) {
        off += index.strides()[k];
        break;
      }
      off -= (index.sizes()[k] - 1) * index.strides()[k];
      pos[k] = 0;
    }
  }
}

// The index's dtype (int64 or int32) and shape passed meta::check_gather; its values are checked here.
void gather_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(dim, self.dim(), "gather");
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  const int64_t total = index.numel();
  if (total == 0) return;
  // An int32 index (accepted as PyTorch does) is widened once; the loops below read int64.
  const Tensor wide = to_dtype(index, ScalarType::Int64);
  const Tensor idx_c = wide.is_contiguous() ? wide : op::clone(wide, MemoryFormat::Contiguous);
  const int64_t* idx = idx_c.data<int64_t>();
  // Row-major walk of index's positions; the innermost dim is a tight loop. Each row's indices
  // are checked before any of its elements is read (nothing is read outside self).
  const int64_t nd = index.dim();
  const int64_t row = nd == 0 ? 1 : index.sizes()[nd - 1];
  const int64_t rows = total / row;
  Shape st(nd, 0);
  for (int64_t k = 0; k < nd; ++k) st[k] = k == d ? 0 : self.strides()[k];
  const int64_t dstride = self.dim() == 0 ? 0 : self.strides()[d];
  const int64_t inner_st = nd == 0 ? 0 : st[nd - 1];
  auto bad_index = [&](const int64_t* ip, int64_t m) {
    for (int64_t j = 0; j < m; ++j)
      FB_CHECK_INDEX_BOUNDS(ip[j] >= 0 && ip[j] < n, "[gather] index ", ip[j],
                            " is out of bounds for dimension ", d, " with size ", n);
  };
  cpu::write_contiguous(out, {&self, &index}, [&](const Tensor& dst_out) {
    visit_itemsize(self.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* s = static_cast<const U*>(self.data_ptr());
      U* o = static_cast<U*>(dst_out.data_ptr());
      // Random reads of one element each: a thread needs a few tens of thousands to pay its start.
      parallel_for(0, rows, std::max<int64_t>(1, 2 * kGrainSize / row), [&](int64_t r0, int64_t r1) {
        Shape pos(static_cast<size_t>(std::max<int64_t>(nd - 1, 0)), 0);
        int64_t off = 0, q = r0;
        auto next_row = [&] {
          for (int64_t k = nd - 2; k >= 0; --k) {
            off += st[k];
            if (++pos[k] < index.sizes()[k]) break;
            off -= pos[k] * st[k];
            pos[k] = 0;
          }
        };
        for (int64_t k = nd - 2; k >= 0; --k) {
          pos[k] = q % index.sizes()[k];
          q /= index.sizes()[k];
          off += pos[k] * st[k];
        }
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t* ip = idx + r * row;
          U* dst = o + r * row;
          if (inner_st == 0 && dstride == 1 && n > 0) {  // gathering along a contiguous last dim
            // (n > 0: an empty dim has no element 0 to read; the checking path below raises.)
            // One pass: an index out of range reads element 0 instead (never outside self) and
            // flags the row, which then raises before anything is returned.
            const U* base = s + off;
            const auto un = static_cast<uint64_t>(n);
            uint64_t bad = 0;
            for (int64_t j = 0; j < row; ++j) {
              const auto u = static_cast<uint64_t>(ip[j]);
              const bool ok = u < un;
              bad |= !ok;
              dst[j] = base[ok ? u : 0];
            }
            if (bad) bad_index(ip, row);
            next_row();
            continue;
          }
          // The row's indices are checked first (a vectorized pass over a few L1 lines), then the
          // copy runs without a check per element.
          int bad = 0;
#pragma omp simd reduction(| : bad)
          for (int64_t j = 0; j < row; ++j) bad |= static_cast<uint64_t>(ip[j]) >= static_cast<uint64_t>(n);
          if (bad) bad_index(ip, row);
          if (inner_st == 0) {
            const U* base = s + off;
            for (int64_t j = 0; j < row; ++j) dst[j] = base[ip[j] * dstride];
          } else {
            for (int64_t j = 0; j < row; ++j) dst[j] = s[off + j * inner_st + ip[j] * dstride];
          }
          next_row();
        }
      });
    });
  });
}

// ---- advanced indexing ----

// Note [Advanced indexing]
// op::index(self, indices) is NumPy/PyTorch advanced indexing; the caller has
// already applied the basic items (ints, slices, None, ...) as views. Entry i
// of `indices` is nullopt (the whole dim), an int64/int32 tensor (one dim), or
// a bool/uint8 mask (as many dims as it has, replaced by the coordinates of
// its true elements, in the order nonzero() gives them). After that:
//  * the index tensors broadcast together to one shape B;
//  * if the indexed dims are adjacent, B replaces them in place; otherwise (a
//    whole dim between two of them) B goes first, then the other dims in order;
//  * negative indices wrap; an index outside its dim raises IndexError.
// What needs no values is written once in the meta step (flambeau/meta.h):
// meta::check_index (index's check step, run before every device's kernel;
// index_put_ calls it itself) and meta::index_layout (B and the dims around
// it), which this kernel, the CUDA kernel and the meta device share (the meta
// step counts a mask's true elements for the result's shape); a mask's
// coordinates and the bounds of the index values are the kernels' own.
// Both kernels reduce this to a plan: the element offset in self of every
// position of B (computed and bounds-checked once), and the other dims of
// self split into those before B in the result (pre) and after it (post).
// Row r of the result is (pre position r / |B|, index position r % |B|) and
// holds one block of post dims: a memcpy when the block is contiguous.

bool is_mask(ScalarType t) { return t == ScalarType::Bool || t == ScalarType::UInt8; }

/// The coordinates of the true elements of `mask` (row-major order), one int64 tensor per dim.
TensorList mask_coordinates(const Tensor& mask) {
  const auto* m = static_cast<const uint8_t*>(mask.data_ptr());  // bool and uint8: one byte each
  int64_t count = 0;
  detail::for_each_offset(mask.sizes(), mask.strides(), [&](int64_t off) { count += m[off] != 0; });
  TensorList coords;
  std::vector<int64_t*> out;
  for (int64_t k = 0; k < mask.dim(); ++k) {
    coords.push_back(op::empty(Shape{count}, ScalarType::Int64, mask.device()));
    out.push_back(coords.back().data<int64_t>());
  }
  int64_t i = 0;
  for_each_position(mask, [&](int64_t off, const Shape& pos) {
    if (!m[off]) return;
    for (size_t k = 0; k < out.size(); ++k) out[k][i] = pos[k];
    ++i;
  });
  return coords;
}

struct IndexPlan {
  Shape index_shape;               // B
  std::vector<int64_t> offsets;    // per position of B (row-major): its element offset in self
  Shape pre_sizes, pre_strides;    // self's dims placed before B in the result (strides in self)
  Shape post_sizes, post_strides;  // and after it
  Shape result_shape() const {
    Shape r = pre_sizes;
    r.insert(r.end(), index_shape.begin(), index_shape.end());
    r.insert(r.end(), post_sizes.begin(), post_sizes.end());
    return r;
  }
  int64_t rows() const { return shape_numel(pre_sizes) * static_cast<int64_t>(offsets.size()); }
};

/// Note [Advanced indexing]: computes the plan of `indices`, which passed meta::check_index (index's check
/// step; index_put_ calls it).
IndexPlan plan_index(const char* op, const Tensor& self, const OptionalTensorList& indices) {
  const int64_t nd = self.dim();
  // One int64 tensor (or none) per dim of self, masks replaced by their coordinates.
  TensorList per_dim(nd);
  int64_t d = 0;
  for (const std::optional<Tensor>& i : indices) {
    if (!i) {
      ++d;
      continue;
    }
    const Tensor& t = *i;
    if (is_mask(t.dtype())) {
      TensorList coords = mask_coordinates(t);
      for (int64_t k = 0; k < t.dim(); ++k) per_dim[d + k] = std::move(coords[k]);
      d += t.dim();
    } else {
      per_dim[d++] = t.dtype() == ScalarType::Int64 ? t : op::cast(t, ScalarType::Int64);
    }
  }

  IndexPlan p;
  meta::IndexLayout layout = meta::index_layout(op, per_dim);
  p.index_shape = std::move(layout.index_shape);
  for (int64_t k : layout.pre) {
    p.pre_sizes.push_back(self.sizes()[k]);
    p.pre_strides.push_back(self.strides()[k]);
  }
  for (int64_t k : layout.post) {
    p.post_sizes.push_back(self.sizes()[k]);
    p.post_strides.push_back(self.strides()[k]);
  }

  // The offset of each position of B, walking every index tensor broadcast to B.
  struct Walk {
    const int64_t* data;
    Shape strides;  // along B (0 where broadcast)
    int64_t size, self_stride, dim, off = 0;
  };
  std::vector<Walk> walks;
  const auto bn = static_cast<int64_t>(p.index_shape.size());
  for (int64_t k = 0; k < nd; ++k) {
    const Tensor& t = per_dim[k];
    if (!t.defined()) continue;
    Walk w{t.data<int64_t>(), Shape(bn, 0), self.sizes()[k], self.strides()[k], k};
    for (int64_t j = 0; j < t.dim(); ++j)
      if (t.sizes()[j] != 1) w.strides[bn - t.dim() + j] = t.strides()[j];
    walks.push_back(std::move(w));
  }
  const int64_t nb = shape_numel(p.index_shape, "index");
  (void)shape_nbytes(p.index_shape, ScalarType::Int64, "index");  // the offset table below must fit
  p.offsets.resize(nb);
  Shape pos(bn, 0);
  for (int64_t b = 0; b < nb; ++b) {
    int64_t off = 0;
    for (Walk& w : walks) {
      int64_t v = w.data[w.off];
      FB_CHECK_INDEX(v >= -w.size && v < w.size, "[", op, "] index ", v, " is out of bounds for dimension ",
                     w.dim, " with size ", w.size);
      if (v < 0) v += w.size;
      off += v * w.self_stride;
    }
    p.offsets[b] = off;
    for (int64_t j = bn - 1; j >= 0; --j) {  // next position of B
      if (++pos[j] < p.index_shape[j]) {
        for (Walk& w : walks) w.off += w.strides[j];
        break;
      }
      for (Walk& w : walks) w.off -= (pos[j] - 1) * w.strides[j];
      pos[j] = 0;
    }
  }
  return p;
}

/// The offset of row r's first element in an operand: its pre dims' part plus the table entry of r % nb.
int64_t row_offset(int64_t r, const std::vector<int64_t>& table, IntArrayRef pre_sizes,
                   IntArrayRef pre_strides) {
  const auto nb = static_cast<int64_t>(table.size());
  int64_t off = table[r % nb];
  int64_t q = r / nb;
  for (auto k = static_cast<int64_t>(pre_sizes.size()) - 1; k >= 0 && q > 0; --k) {
    off += (q % pre_sizes[k]) * pre_strides[k];
    q /= pre_sizes[k];
  }
  return off;
}

/// Merges the dims of a block (shared sizes, one stride list per operand) that
/// are contiguous with their neighbour in both operands, and drops size-1 dims.
void coalesce(Shape& sizes, Shape& a, Shape& b) {
  Shape s2, a2, b2;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 1) continue;
    if (!s2.empty() && a2.back() == a[k] * sizes[k] && b2.back() == b[k] * sizes[k]) {
      s2.back() *= sizes[k];
      a2.back() = a[k];
      b2.back() = b[k];
    } else {
      s2.push_back(sizes[k]);
      a2.push_back(a[k]);
      b2.push_back(b[k]);
    }
  }
  sizes = std::move(s2), a = std::move(a2), b = std::move(b2);
}

/// Calls f(a_offset, b_offset) for each element of a block, in row-major order.
template <class F>
void for_each_in_block(IntArrayRef sizes, IntArrayRef sa, IntArrayRef sb, F&& f) {
  const auto nd = static_cast<int64_t>(sizes.size());
  const int64_t n = shape_numel(sizes);
  Shape pos(nd, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(oa, ob);
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++pos[k] < sizes[k]) {
        oa += sa[k], ob += sb[k];
        break;
      }
      oa -= (sizes[k] - 1) * sa[k], ob -= (sizes[k] - 1) * sb[k];
      pos[k] = 0;
    }
  }
}

// Note [Gather grain]: a row gather moves memory and computes nothing, so it
// splits across threads only above kMemoryBoundGrain elements, like copy_.
int64_t rows_grain(int64_t block) {
  return std::max<int64_t>(1, kMemoryBoundGrain / std::max<int64_t>(block, 1));
}

// x[mask] with one bool mask over self's leading dims (masked_select's case): the mask is
// counted and compacted in one go, without the coordinate tables of the general plan. Chunks of the
// mask are counted in parallel, then each thread writes its chunk's selected blocks at its offset into
// out (contiguous, of the shape the meta step counted). False when the general path handles it.
bool index_by_mask(const Tensor& out, const Tensor& self, const Tensor& mask) {
  const int64_t md = mask.dim();
  if (md == 0 || md > self.dim() || mask.device() != self.device()) return false;
  const auto covered = self.sizes().subspan(0, md);
  if (!std::ranges::equal(covered, mask.sizes())) return false;  // the general path raises
  const Tensor m = contiguous(mask);
  const Tensor src = contiguous(self);
  const int64_t nm = m.numel();
  const int64_t block = shape_numel(self.sizes().subspan(md));
  const auto* mp = static_cast<const uint8_t*>(m.data_ptr());
  constexpr int64_t kChunk = 1 << 16;
  const int64_t nchunks = (nm + kChunk - 1) / kChunk;
  std::vector<int64_t> counts(static_cast<size_t>(nchunks) + 1, 0);
  const int64_t grain = std::max<int64_t>(1, kMemoryBoundGrain / 4 / kChunk);
  parallel_for(0, nchunks, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = c * kChunk, e = std::min(nm, b + kChunk);
      int64_t k = 0;
#pragma omp simd reduction(+ : k)
      for (int64_t i = b; i < e; ++i) k += mp[i] != 0;
      counts[c + 1] = k;
    }
  });
  for (int64_t c = 0; c < nchunks; ++c) counts[c + 1] += counts[c];
  // The meta step counted the same mask: its rows are out's (never a write past out).
  FB_INTERNAL_ASSERT(out.dim() > 0 && counts[nchunks] == out.sizes()[0], "[index] the mask has ",
                     counts[nchunks], " true elements, the output ", shape_str(out.sizes()));
  if (out.numel() == 0) return true;
  visit_itemsize(self.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* sp = static_cast<const U*>(src.data_ptr());
    U* op_ = static_cast<U*>(out.data_ptr());
    const int64_t wgrain = std::max<int64_t>(1, kMemoryBoundGrain / 4 / (kChunk * block));
    parallel_for(0, nchunks, wgrain, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t b = c * kChunk, e = std::min(nm, b + kChunk);
        U* dst = op_ + counts[c] * block;
        if (block == 1) {
          // Branch-free: every element is written at the cursor, which moves only past the selected
          // ones; the loop stops once the chunk's count is reached, so no write lands past the
          // chunk's part of out.
          const int64_t cnt = counts[c + 1] - counts[c];
          int64_t k = 0;
          for (int64_t i = b; i < e && k < cnt; ++i) {
            dst[k] = sp[i];
            k += mp[i] != 0;
          }
        } else {
          int64_t k = 0;
          for (int64_t i = b; i < e; ++i)
            if (mp[i]) {
              std::memcpy(dst + k * block, sp + i * block, static_cast<size_t>(block) * sizeof(U));
              ++k;
            }
        }
      }
    });
  });
  return true;
}

/// self[indices] into the contiguous out of the meta step's shape.
void index_into(const Tensor& out, const Tensor& self, const OptionalTensorList& indices) {
  if (indices.size() == 1 && indices[0] && indices[0]->dtype() == ScalarType::Bool)
    if (index_by_mask(out, self, *indices[0])) return;
  const IndexPlan p = plan_index("index", self, indices);
  const int64_t rows = p.rows();
  Shape block = p.post_sizes, src_strides = p.post_strides, dst_strides = contiguous_strides(p.post_sizes);
  const int64_t block_numel = shape_numel(block);
  FB_INTERNAL_ASSERT(std::ranges::equal(p.result_shape(), out.sizes()),
                     "[index] the indexing result has shape ", shape_str(p.result_shape()), ", the output ",
                     shape_str(out.sizes()));
  if (rows == 0 || block_numel == 0) return;
  coalesce(block, src_strides, dst_strides);
  const bool contiguous_block = block.empty() || (src_strides[0] == 1 && block.size() == 1);
  visit_itemsize(self.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(self.data_ptr());
    U* dst = static_cast<U*>(out.data_ptr());
    parallel_for(0, rows, rows_grain(block_numel), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const U* s = src + row_offset(r, p.offsets, p.pre_sizes, p.pre_strides);
        U* d = dst + r * block_numel;
        if (!contiguous_block)
          for_each_in_block(block, dst_strides, src_strides, [&](int64_t od, int64_t os) { d[od] = s[os]; });
        else if (block_numel == 1)
          *d = *s;
        else
          std::memcpy(d, s, static_cast<size_t>(block_numel) * sizeof(U));
      }
    });
  });
}

void index_out_cpu(const Tensor& out, const Tensor& self, const OptionalTensorList& indices) {
  std::vector<const Tensor*> inputs{&self};
  for (const std::optional<Tensor>& i : indices)
    if (i) inputs.push_back(&*i);
  cpu::write_contiguous(out, inputs, [&](const Tensor& dst) { index_into(dst, self, indices); });
}

Tensor& index_put_cpu(Tensor& self, const OptionalTensorList& indices, const Tensor& values,
                      bool accumulate) {
  // meta::check_index_put (the check step) has checked the arguments; a mask's result shape is known now.
  const IndexPlan p = plan_index("index_put_", self, indices);
  const Shape rshape = p.result_shape();
  meta::check_index_put_values("index_put_", values, rshape);
  const int64_t rows = p.rows();
  if (rows == 0 || shape_numel(p.post_sizes) == 0) {
    self.impl()->bump_version();
    return self;
  }
  // x[i] = x[j] style aliasing reads values that this op overwrites: read a copy.
  const Tensor src = values.impl()->storage() == self.impl()->storage()
                         ? op::clone(values, MemoryFormat::Contiguous)
                         : values;
  const Tensor v = op::expand(src, rshape);

  // values' offsets: its pre dims, a table over B, and its post dims (all of v's shape is rshape).
  const auto npre = static_cast<int64_t>(p.pre_sizes.size()),
             nbd = static_cast<int64_t>(p.index_shape.size());
  const Shape v_pre_strides(v.strides().begin(), v.strides().begin() + npre);
  std::vector<int64_t> v_table(p.offsets.size());
  {
    int64_t i = 0;
    detail::for_each_offset(p.index_shape, v.strides().subspan(npre, nbd),
                            [&](int64_t off) { v_table[i++] = off; });
  }
  Shape block = p.post_sizes, dst_strides = p.post_strides;
  Shape src_strides(v.strides().begin() + npre + nbd, v.strides().end());
  coalesce(block, dst_strides, src_strides);

  // Rows run in order, so with duplicate indices the last write wins (accumulate: all add up).
  // A large block is split by columns across threads: no two threads write one element.
  auto run = [&](auto tag, auto&& write) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(self.data_ptr());
    const T* val = static_cast<const T*>(v.data_ptr());
    if (block.size() <= 1) {
      const int64_t n = block.empty() ? 1 : block[0];
      const int64_t sd = block.empty() ? 0 : dst_strides[0], sv = block.empty() ? 0 : src_strides[0];
      const int64_t grain = std::max<int64_t>(1, kMemoryBoundGrain / rows);
      parallel_for(0, n, grain, [&](int64_t c0, int64_t c1) {
        for (int64_t r = 0; r < rows; ++r) {
          T* d = dst + row_offset(r, p.offsets, p.pre_sizes, p.pre_strides);
          const T* s = val + row_offset(r, v_table, p.pre_sizes, v_pre_strides);
          for (int64_t c = c0; c < c1; ++c) write(d[c * sd], s[c * sv]);
        }
      });
      return;
    }
    for (int64_t r = 0; r < rows; ++r) {
      T* d = dst + row_offset(r, p.offsets, p.pre_sizes, p.pre_strides);
      const T* s = val + row_offset(r, v_table, p.pre_sizes, v_pre_strides);
      for_each_in_block(block, dst_strides, src_strides,
                        [&](int64_t od, int64_t os) { write(d[od], s[os]); });
    }
  };
  if (accumulate) {
    visit_dtype_all(self.dtype(), "index_put_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      run(tag, [](T& d, T s) {
        if constexpr (std::is_same_v<T, bool>)
          d = d || s;
        else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
          d = T(static_cast<float>(d) + static_cast<float>(s));
        else
          d = wrapping_add(d, s);  // Note [Integer wrap-around]
      });
    });
  } else {
    visit_itemsize(self.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      run(tag, [](U& d, U s) { d = s; });
    });
  }
  self.impl()->bump_version();
  return self;
}

// index_select(self, dim, index) is self[:, ..., index] with the index checked in [0, size) (no wrapping,
// as PyTorch): the advanced-indexing kernel's row copy (Note [Advanced indexing]) does the rest. The
// index's dtype and rank passed meta::check_index_slices.
void index_select_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "index_select");
  const Tensor src = self.dim() == 0 ? op::view(self, Shape{1}) : self;
  const int64_t n = src.sizes()[d];
  const Tensor idx =
      op::view(index.is_contiguous() ? index : op::clone(index, MemoryFormat::Contiguous), Shape{-1});
  const int64_t k = idx.numel();
  visit_dtype(idx.dtype(), "index_select", [&](auto tag) {
    using I = typename decltype(tag)::type;
    if constexpr (std::is_same_v<I, int64_t> || std::is_same_v<I, int32_t>) {
      const I* p = idx.data<I>();
      for (int64_t i = 0; i < k; ++i)
        FB_CHECK_INDEX_BOUNDS(p[i] >= 0 && static_cast<int64_t>(p[i]) < n, "[index_select] index ",
                              static_cast<int64_t>(p[i]), " is out of range for dimension ", d, " with size ",
                              n);
    }
  });
  if (k == 0 || src.numel() == 0) return;
  OptionalTensorList indices(static_cast<size_t>(d), std::nullopt);
  indices.emplace_back(idx);
  // A 0-d self takes one index and gives a 0-d result: the row gather writes it as one element.
  index_out_cpu(self.dim() == 0 ? op::view(out, Shape{1}) : out, src, indices);
}

FB_REGISTER_OUT_KERNEL(op::index_select, CPU, index_select_out_cpu);
FB_REGISTER_OUT_KERNEL(op::cat, CPU, cat_out_cpu);
FB_REGISTER_OUT_KERNEL(op::gather, CPU, gather_out_cpu);
FB_REGISTER_OUT_KERNEL(op::index, CPU, index_out_cpu);
FB_REGISTER_KERNEL(op::index_put_, CPU, index_put_cpu);

}  // namespace
}  // namespace flambeau
