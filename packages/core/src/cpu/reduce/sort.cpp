// CPU kernels of sorting and searching: sort (a stable LSD radix sort on
// order-preserving unsigned keys, one byte per pass, passes whose byte is the
// same for every key skipped), topk (partial sort on the same keys), searchsorted,
// unique (flat, along a dim, consecutive) and nonzero. sort, topk, _sort_values
// and searchsorted are structured ops (Note [Structured kernels]): out kernels
// (sort and topk write values and indices through LastDim::write).
//
// Keys: a float's bits with the sign flipped (negative: all bits flipped), so
// unsigned order is numeric order; -0.0 is keyed as +0.0 (they compare equal,
// so a stable sort keeps their order, as PyTorch's); every NaN gets the
// largest key (NaN sorts last ascending and first descending, as PyTorch).
// Signed integers flip the sign bit. Descending order sorts the complemented
// keys, which keeps equal elements in their original order.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <vector>

#include "cpu/low_precision.h"
#include "cpu/write_out.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "reduce_common.h"

namespace flambeau {
namespace {
using namespace cpu;

template <class T>
using KeyOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

template <class T>
inline KeyOf<T> sort_key(T v) {
  using K = KeyOf<T>;
  constexpr K top = K(1) << (8 * sizeof(K) - 1);
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    // The same sign-magnitude keys on the 16 bits (float16 and bfloat16 both order that way).
    const float f = static_cast<float>(v);
    if (f != f) return static_cast<K>(~K(0));
    if (f == 0) return top;  // -0.0 as +0.0
    const K u = v.x;
    return (u & top) ? static_cast<K>(~u) : static_cast<K>(u | top);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v != v) return static_cast<K>(~K(0));
    if (v == 0) v = 0;  // -0.0 as +0.0
    K u;
    std::memcpy(&u, &v, sizeof(u));
    return (u & top) ? static_cast<K>(~u) : static_cast<K>(u | top);
  } else if constexpr (std::is_same_v<T, bool>) {
    return static_cast<K>(v);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<K>(static_cast<K>(v) ^ top);
  } else {
    return static_cast<K>(v);
  }
}

constexpr unsigned kTopkDtypes = kDtBool | kDtInts | kDtFloats | kDtHalf;

void check_sortable(const char* op, ScalarType t) {
  // visit_dtype names the op and dtype for the dtypes it does not cover (complex, half, ...).
  visit_dtype(t, op, [](auto) {});
}

// Per-thread buffers of a row sort.
template <class K>
struct RowSorter {
  std::vector<K> keys, keys2;
  std::vector<int64_t> idx2, hist;
  std::vector<uint64_t> pa, pb;

  // Sorts idx[0..n) (filled with 0..n-1 here) by keys, stably.
  void sort(int64_t n, int64_t* idx) {
    for (int64_t i = 0; i < n; ++i) idx[i] = i;
    if (n < 2) return;
    K* k = keys.data();
    if (n <= 32) {  // insertion sort: stable, no passes
      for (int64_t i = 1; i < n; ++i) {
        const K kv = k[i];
        const int64_t iv = idx[i];
        int64_t j = i;
        for (; j > 0 && k[j - 1] > kv; --j) {
          k[j] = k[j - 1];
          idx[j] = idx[j - 1];
        }
        k[j] = kv;
        idx[j] = iv;
      }
      return;
    }
    constexpr int kBytes = sizeof(K);
    hist.assign(static_cast<size_t>(kBytes) * 256, 0);
    for (int64_t i = 0; i < n; ++i) {
      K v = k[i];
      for (int b = 0; b < kBytes; ++b) hist[b * 256 + ((v >> (8 * b)) & 255)]++;
    }
    if constexpr (kBytes <= 4) {
      if (n <= int64_t{0xffffffff}) return sort_packed(n, idx);
    }
    keys2.resize(static_cast<size_t>(n));
    idx2.resize(static_cast<size_t>(n));
    K* src_k = k;
    K* dst_k = keys2.data();
    int64_t* src_i = idx;
    int64_t* dst_i = idx2.data();
    for (int b = 0; b < kBytes; ++b) {
      int64_t* h = hist.data() + b * 256;
      if (h[(src_k[0] >> (8 * b)) & 255] == n) continue;  // every key has this byte
      int64_t run = 0;
      for (int d = 0; d < 256; ++d) {
        const int64_t c = h[d];
        h[d] = run;
        run += c;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = h[(src_k[i] >> (8 * b)) & 255]++;
        dst_k[p] = src_k[i];
        dst_i[p] = src_i[i];
      }
      std::swap(src_k, dst_k);
      std::swap(src_i, dst_i);
    }
    if (src_i != idx) std::copy(src_i, src_i + n, idx);
  }

  // Keys of at most 32 bits and fewer than 2^32 elements: (key << 32 | index) moved as one word per pass.
  void sort_packed(int64_t n, int64_t* idx) {
    constexpr int kBytes = sizeof(K);
    const K* k = keys.data();
    pa.resize(static_cast<size_t>(n));
    pb.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pa[i] = uint64_t{k[i]} << 32 | static_cast<uint64_t>(i);
    uint64_t* src = pa.data();
    uint64_t* dst = pb.data();
    for (int b = 0; b < kBytes; ++b) {
      int64_t* h = hist.data() + b * 256;
      if (h[(k[0] >> (8 * b)) & 255] == n) continue;  // every key has this byte
      int64_t run = 0;
      for (int d = 0; d < 256; ++d) {
        const int64_t c = h[d];
        h[d] = run;
        run += c;
      }
      const int shift = 32 + 8 * b;
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t v = src[i];
        dst[h[(v >> shift) & 255]++] = v;
      }
      std::swap(src, dst);
    }
    for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int64_t>(src[i] & 0xffffffffu);
  }
};

// Rows of n contiguous values (outer of them) sorted into values/indices (same layout).
template <class T>
void sort_rows(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, bool descending) {
  using K = KeyOf<T>;
  parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 4 * n)),
               [&](int64_t b, int64_t e) {
                 RowSorter<K> s;
                 s.keys.resize(static_cast<size_t>(n));
                 for (int64_t o = b; o < e; ++o) {
                   const T* r = x + o * n;
                   K* k = s.keys.data();
                   if (descending)
                     for (int64_t i = 0; i < n; ++i) k[i] = static_cast<K>(~sort_key(r[i]));
                   else
                     for (int64_t i = 0; i < n; ++i) k[i] = sort_key(r[i]);
                   int64_t* ix = indices + o * n;
                   s.sort(n, ix);
                   T* v = values + o * n;
                   for (int64_t i = 0; i < n; ++i) v[i] = r[ix[i]];
                 }
               });
}

// The permutation moving `dim` last, and its inverse.
Shape dim_last(int64_t nd, int64_t dim) {
  Shape p;
  for (int64_t d = 0; d < nd; ++d)
    if (d != dim) p.push_back(d);
  p.push_back(dim);
  return p;
}
Shape inverse_perm(const Shape& p) {
  Shape q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[p[i]] = static_cast<int64_t>(i);
  return q;
}

// self with `dim` moved last, contiguous; back() undoes the move on a result of that layout.
struct LastDim {
  Tensor rows;
  Shape perm;
  bool moved = false;
  int64_t outer = 1, n = 1;
  LastDim(const Tensor& self, int64_t dim) {
    const int64_t nd = self.dim();
    if (nd == 0) {
      rows = contiguous(self);
      return;
    }
    moved = dim != nd - 1;
    perm = dim_last(nd, dim);
    rows = contiguous(moved ? op::permute(self, perm) : self);
    n = self.sizes()[dim];
    outer = n == 0 ? 0 : self.numel() / n;
  }
  Tensor back(const Tensor& t) const { return moved ? contiguous(op::permute(t, inverse_perm(perm))) : t; }
  // The out kernels (Note [Structured kernels]): fill(v, ix) writes contiguous results of the rows'
  // layout, `shape` (dim last); straight into values and indices when that is their layout, else into
  // new tensors copied into them with dim moved back.
  template <class F>
  void write(const Tensor& values, const Tensor& indices, const Tensor& self, IntArrayRef shape, F&& fill) const {
    if (!moved) {
      write_contiguous_outs<2>({values, indices}, self, [&](const std::array<Tensor, 2>& d) { fill(d[0], d[1]); });
      return;
    }
    const Tensor v = op::empty(shape, values.dtype(), values.device());
    const Tensor ix = op::empty(shape, indices.dtype(), indices.device());
    fill(v, ix);
    const Shape inv = inverse_perm(perm);
    Tensor dst_v = values, dst_ix = indices;
    op::copy_(dst_v, op::permute(v, inv));
    op::copy_(dst_ix, op::permute(ix, inv));
  }
};

void sort_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim, bool descending,
                  std::optional<bool> stable) {
  (void)stable;  // always stable
  // Every real dtype, as PyTorch (complex raises naming sort and the dtype).
  visit_dtypes<kDtReal>(self.dtype(), "sort", [](auto) {});
  dim = wrap_dim(dim, self.dim(), "sort");
  const LastDim l(self, dim);
  l.write(values, indices, self, l.rows.sizes(), [&](const Tensor& v, const Tensor& ix) {
    if (self.numel() > 0)
      visit_dtypes<kDtReal>(self.dtype(), "sort", [&](auto tag) {
        using T = typename decltype(tag)::type;
        sort_rows<T>(l.rows.data<T>(), v.data<T>(), ix.data<int64_t>(), l.outer, l.n, descending);
      });
  });
}

// ---- the values-only sort (_sort_values) ----
// The same keys as sort, sorted alone (no index payload: half the bytes moved
// per radix pass for 4-byte types), then mapped back to values by the inverse
// of sort_key. sort_key is one to one except on the zeros (-0.0 keyed as
// +0.0) and the NaNs (every NaN the largest key): a stable sort puts the
// elements of one key in their input order, so when a row holds any of those
// keys, their block of the result is refilled with the input's elements of
// that key, in order (the exact bits: -0.0/+0.0 order and NaN payloads as sort's).

template <class T>
constexpr bool kFloatKey =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The value of a key (the inverse of sort_key where it is one to one; a NaN or
// +0.0 for the shared keys, which refill_shared_keys then corrects).
template <class T>
inline T from_key(KeyOf<T> k) {
  using K = KeyOf<T>;
  constexpr K top = K(1) << (8 * sizeof(K) - 1);
  if constexpr (std::is_same_v<T, bool>) {
    return k != 0;
  } else {
    K u;
    if constexpr (kFloatKey<T>)
      u = (k & top) ? static_cast<K>(k & ~top) : static_cast<K>(~k);
    else if constexpr (std::is_signed_v<T>)
      u = static_cast<K>(k ^ top);
    else
      u = k;
    T v;
    std::memcpy(&v, &u, sizeof(v));
    return v;
  }
}

// Per-thread buffers of a values-only row sort.
template <class T>
struct ValueSorter {
  using K = KeyOf<T>;
  static constexpr K kTop = K(1) << (8 * sizeof(K) - 1);
  std::vector<K> keys, keys2;
  std::vector<uint32_t> hist;
  K flip = 0;  // all ones when descending (the keys complemented)

  K key(T v) const { return static_cast<K>(sort_key(v) ^ flip); }

  // Sorts row r[0..n) (n < 2^32) into out, stably.
  void sort_row(const T* r, T* out, int64_t n) {
    // The keys sort_key gives several values: +-0.0 and the NaNs.
    const K zero_key = static_cast<K>(kTop ^ flip), nan_key = static_cast<K>(~K(0) ^ flip);
    K* k = keys.data();
    bool shared = false;
    const K* sorted = k;
    if (n <= 32) {
      for (int64_t i = 0; i < n; ++i) {
        const K v = key(r[i]);
        k[i] = v;
        if constexpr (kFloatKey<T>) shared |= (v == zero_key) | (v == nan_key);
      }
      for (int64_t i = 1; i < n; ++i) {  // insertion sort: stable
        const K kv = k[i];
        int64_t j = i;
        for (; j > 0 && k[j - 1] > kv; --j) k[j] = k[j - 1];
        k[j] = kv;
      }
    } else {
      constexpr int kBytes = sizeof(K);
      hist.assign(static_cast<size_t>(kBytes) * 256, 0);
      uint32_t* h0 = hist.data();
      for (int64_t i = 0; i < n; ++i) {
        const K v = key(r[i]);
        k[i] = v;
        if constexpr (kFloatKey<T>) shared |= (v == zero_key) | (v == nan_key);
        for (int b = 0; b < kBytes; ++b) h0[b * 256 + ((v >> (8 * b)) & 255)]++;
      }
      K* src = k;
      K* dst = keys2.data();
      for (int b = 0; b < kBytes; ++b) {
        uint32_t* h = h0 + b * 256;
        if (h[(src[0] >> (8 * b)) & 255] == static_cast<uint32_t>(n)) continue;  // every key has this byte
        uint32_t run = 0;
        for (int d = 0; d < 256; ++d) {
          const uint32_t c = h[d];
          h[d] = run;
          run += c;
        }
        const int shift = 8 * b;
        for (int64_t i = 0; i < n; ++i) {
          const K v = src[i];
          dst[h[(v >> shift) & 255]++] = v;
        }
        std::swap(src, dst);
      }
      sorted = src;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = from_key<T>(static_cast<K>(sorted[i] ^ flip));
    if constexpr (kFloatKey<T>) {
      if (!shared) return;
      // Refill the blocks of the shared keys with the input's elements of that key, in input order.
      int64_t jz = 0, jn = 0;
      for (int64_t i = 0; i < n; ++i) {
        const K v = sorted[i];
        if (v == zero_key) {
          while (key(r[jz]) != zero_key) ++jz;
          out[i] = r[jz++];
        } else if (v == nan_key) {
          while (key(r[jn]) != nan_key) ++jn;
          out[i] = r[jn++];
        }
      }
    }
  }
};

template <class T>
void sort_values_rows(const T* x, T* values, int64_t outer, int64_t n, bool descending) {
  using K = KeyOf<T>;
  if (n > int64_t{0xffffffff}) {  // beyond the 32-bit counters: the (values, indices) sort
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) sort_rows<T>(x + o * n, values + o * n, idx.data(), 1, n, descending);
    return;
  }
  parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 4 * n)),
               [&](int64_t b, int64_t e) {
                 ValueSorter<T> s;
                 s.flip = descending ? static_cast<K>(~K(0)) : K(0);
                 s.keys.resize(static_cast<size_t>(n));
                 s.keys2.resize(static_cast<size_t>(n));
                 for (int64_t o = b; o < e; ++o) s.sort_row(x + o * n, values + o * n, n);
               });
}

// Note [Structured kernels]: out has self's shape and dtype (the check step checked sort's dtypes and
// dim). The rows are written straight into out when dim is last, else into a new tensor copied back
// with dim moved back.
void sort_values_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, bool descending) {
  dim = wrap_dim(dim, self.dim(), "sort");
  const LastDim l(self, dim);
  const auto fill = [&](const Tensor& values) {
    if (self.numel() > 0)
      visit_dtypes<kDtReal>(self.dtype(), "sort", [&](auto tag) {
        using T = typename decltype(tag)::type;
        sort_values_rows<T>(l.rows.data<T>(), values.data<T>(), l.outer, l.n, descending);
      });
  };
  if (!l.moved) return write_contiguous(out, self, fill);
  const Tensor values = op::empty(l.rows.sizes(), out.dtype(), out.device());
  fill(values);
  copy_out(out, op::permute(values, inverse_perm(l.perm)));
}

void topk_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k, int64_t dim,
                  bool largest, bool sorted) {
  (void)sorted;  // the result is always sorted
  // As PyTorch: float16/bfloat16 yes, uint16/32/64 and complex no (TypeError naming topk and the dtype).
  visit_dtypes<kTopkDtypes>(self.dtype(), "topk", [](auto) {});
  dim = wrap_dim(dim, self.dim(), "topk");
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[dim];
  // A 0-d input gives itself and index 0 for k 0 or 1 (the meta step's range), as PyTorch.
  if (self.dim() == 0) k = 1;
  const LastDim l(self, dim);
  Shape out_shape(l.rows.sizes().begin(), l.rows.sizes().end());
  if (!out_shape.empty()) out_shape.back() = k;
  l.write(values, indices, self, out_shape, [&](const Tensor& values_rows, const Tensor& indices_rows) {
    if (values_rows.numel() > 0)
      visit_dtypes<kTopkDtypes>(self.dtype(), "topk", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using K = KeyOf<T>;
        const T* x = l.rows.data<T>();
        T* v = values_rows.data<T>();
        int64_t* ix = indices_rows.data<int64_t>();
        parallel_for(0, l.outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 4 * n)),
                     [&](int64_t b, int64_t e) {
                       std::vector<std::pair<K, int64_t>> p(static_cast<size_t>(n));
                       for (int64_t o = b; o < e; ++o) {
                         const T* r = x + o * n;
                         for (int64_t i = 0; i < n; ++i)
                           p[i] = {largest ? static_cast<K>(~sort_key(r[i])) : sort_key(r[i]), i};
                         std::partial_sort(p.begin(), p.begin() + k, p.end());
                         for (int64_t j = 0; j < k; ++j) {
                           ix[o * k + j] = p[j].second;
                           v[o * k + j] = r[p[j].second];
                         }
                       }
                     });
      });
  });
}

// Note [Structured kernels]: out has input's shape, int32 with out_int32 else int64; the check step
// checked side and the shapes. The sorter's values are checked here (they are data).
void searchsorted_out_cpu(const Tensor& out, const Tensor& sorted_sequence, const Tensor& self, bool out_int32,
                          bool right, std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  if (side) right = *side == "right";
  const Tensor& seq = sorted_sequence;
  const bool one_d = seq.dim() == 1;
  // float16/bfloat16 compare as their (exact) float32 values.
  const ScalarType pt = promote_types(seq.dtype(), self.dtype());
  const ScalarType t = is_low_precision(pt) ? ScalarType::Float32 : pt;
  const Tensor s = contiguous(to_dtype(to_dtype(seq, pt), t));
  const Tensor v = contiguous(to_dtype(to_dtype(self, pt), t));
  const Tensor srt = sorter ? contiguous(*sorter) : Tensor();
  const int64_t m = seq.sizes()[seq.dim() - 1];
  const int64_t per_row =
      one_d ? std::max<int64_t>(1, v.numel()) : (self.dim() == 0 ? 1 : self.sizes()[self.dim() - 1]);
  const int64_t* so = sorter ? srt.data<int64_t>() : nullptr;
  if (so)
    for (int64_t i = 0; i < srt.numel(); ++i)
      FB_CHECK_INDEX(so[i] >= 0 && so[i] < m, "[searchsorted] sorter index ", so[i],
                     " is out of range for size ", m);
  write_contiguous(out, {&seq, &self, sorter ? &*sorter : nullptr}, [&](const Tensor& result) {
    visit_dtype(t, "searchsorted", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* sp = s.data<T>();
      const T* vp = v.data<T>();
      const int64_t nv = v.numel();
      parallel_for(0, nv, 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t row = one_d ? 0 : i / per_row;
          const T* r = sp + row * m;
          const int64_t* rs = so ? so + row * m : nullptr;
          const T x = vp[i];
          int64_t lo = 0, hi = m;
          while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            const T y = rs ? r[rs[mid]] : r[mid];
            // As PyTorch: left moves right while !(y >= x), right while !(y > x) (so a NaN value lands at the
            // end and a NaN in the sequence counts as smaller).
            const bool go_right = right ? !(y > x) : !(y >= x);
            if (go_right)
              lo = mid + 1;
            else
              hi = mid;
          }
          if (out_int32)
            result.data<int32_t>()[i] = static_cast<int32_t>(lo);
          else
            result.data<int64_t>()[i] = lo;
        }
      });
    });
  });
}

using cpu::is_low_precision;
using cpu::to_float32;
// float16/bfloat16 unique: grouped as their float32 values (exact, in the same order), the values rounded
// back (exactly).
std::tuple<Tensor, Tensor, Tensor> in_float32(const std::tuple<Tensor, Tensor, Tensor>& r,
                                              const Tensor& self) {
  return {to_dtype(std::get<0>(r), self.dtype()), std::get<1>(r), std::get<2>(r)};
}

// Groups of a sorted flat tensor: values, inverse (in self's shape), counts.
std::tuple<Tensor, Tensor, Tensor> unique2_cpu(const Tensor& self, bool sorted, bool return_inverse,
                                               bool return_counts) {
  (void)sorted;  // the result is always sorted (PyTorch leaves the unsorted order unspecified)
  (void)return_inverse;
  (void)return_counts;
  if (is_low_precision(self.dtype()))
    return in_float32(unique2_cpu(to_float32(self), true, true, true), self);
  check_sortable("unique", self.dtype());
  const Tensor flat = contiguous(op::reshape(self, Shape{self.numel()}));
  const int64_t n = flat.numel();
  Tensor inverse = op::empty(self.sizes(), ScalarType::Int64, self.device());
  Tensor values, counts;
  visit_dtype(self.dtype(), "unique", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::unique_ptr<T[]> sv(new T[static_cast<size_t>(n)]);
    std::vector<int64_t> si(static_cast<size_t>(n));
    if (n > 0) sort_rows<T>(flat.data<T>(), sv.get(), si.data(), 1, n, false);
    std::vector<int64_t> starts;
    int64_t* inv = inverse.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || sv[i] != sv[i - 1]) starts.push_back(i);
      inv[si[i]] = static_cast<int64_t>(starts.size()) - 1;
    }
    const int64_t g = static_cast<int64_t>(starts.size());
    values = op::empty(Shape{g}, self.dtype(), self.device());
    counts = op::empty(Shape{g}, ScalarType::Int64, self.device());
    for (int64_t j = 0; j < g; ++j) {
      values.data<T>()[j] = sv[starts[j]];
      counts.data<int64_t>()[j] = (j + 1 < g ? starts[j + 1] : n) - starts[j];
    }
  });
  return {values, inverse, counts};
}

// self with `dim` moved first, as contiguous (n, m) rows.
Tensor dim_rows(const Tensor& self, int64_t dim) {
  Shape p{dim};
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim) p.push_back(d);
  return contiguous(op::permute(self, p));
}

// Rows `rows` of a (n, ...) tensor stacked, and `dim` moved back.
Tensor take_rows(const Tensor& moved, const std::vector<int64_t>& rows, int64_t dim) {
  Shape shape(moved.sizes().begin(), moved.sizes().end());
  const int64_t m = moved.numel() / std::max<int64_t>(1, shape[0]);
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = op::empty(shape, moved.dtype(), moved.device());
  const int64_t isz = static_cast<int64_t>(itemsize(moved.dtype()));
  const char* src = static_cast<const char*>(moved.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (size_t j = 0; j < rows.size(); ++j)
    if (m > 0) std::memcpy(dst + j * m * isz, src + rows[j] * m * isz, static_cast<size_t>(m * isz));
  Shape back(shape.size());
  // moved dims: [dim, 0, 1, ..., dim-1, dim+1, ...]; out dim d comes from moved position pos(d).
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    back[d] = d == dim ? 0 : (d < dim ? d + 1 : d);
  return contiguous(op::permute(out, back));
}

template <class T>
int compare_rows(const T* a, const T* b, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    if (a[i] < b[i]) return -1;
    if (b[i] < a[i]) return 1;
  }
  return 0;
}

template <class T>
bool rows_equal(const T* a, const T* b, int64_t m) {
  for (int64_t i = 0; i < m; ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

std::tuple<Tensor, Tensor, Tensor> unique_dim_cpu(const Tensor& self, int64_t dim, bool sorted,
                                                  bool return_inverse, bool return_counts) {
  (void)sorted;
  (void)return_inverse;
  (void)return_counts;
  if (is_low_precision(self.dtype()))
    return in_float32(unique_dim_cpu(to_float32(self), dim, true, true, true), self);
  check_sortable("unique_dim", self.dtype());
  FB_CHECK_INDEX(self.dim() > 0, "[unique_dim] a 0-dim tensor has no dim ", dim);
  dim = wrap_dim(dim, self.dim(), "unique_dim");
  const Tensor moved = dim_rows(self, dim);
  const int64_t n = self.sizes()[dim];
  const int64_t m = n == 0 ? 0 : moved.numel() / n;
  // inverse first: an n too large for memory (an expanded dim of empty
  // rows) fails there naming the op, before the order vector is sized.
  Tensor inverse = op::empty(Shape{n}, ScalarType::Int64, self.device());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> firsts, cnt;
  visit_dtype(self.dtype(), "unique_dim", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = moved.data<T>();
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return compare_rows(x + a * m, x + b * m, m) < 0; });
    int64_t* inv = inverse.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !rows_equal(x + order[i] * m, x + order[i - 1] * m, m)) {
        firsts.push_back(order[i]);
        cnt.push_back(0);
      }
      cnt.back()++;
      inv[order[i]] = static_cast<int64_t>(firsts.size()) - 1;
    }
  });
  Tensor counts = op::empty(Shape{static_cast<int64_t>(cnt.size())}, ScalarType::Int64, self.device());
  std::copy(cnt.begin(), cnt.end(), counts.data<int64_t>());
  return {take_rows(moved, firsts, dim), inverse, counts};
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive_cpu(const Tensor& self, bool return_inverse,
                                                          bool return_counts, std::optional<int64_t> dim) {
  (void)return_inverse;
  (void)return_counts;
  if (is_low_precision(self.dtype()))
    return in_float32(unique_consecutive_cpu(to_float32(self), true, true, dim), self);
  check_sortable("unique_consecutive", self.dtype());
  Tensor moved;
  int64_t n = 0, m = 1, d = 0;
  if (dim) {
    FB_CHECK_INDEX(self.dim() > 0, "[unique_consecutive] a 0-dim tensor has no dim ", *dim);
    d = wrap_dim(*dim, self.dim(), "unique_consecutive");
    moved = dim_rows(self, d);
    n = self.sizes()[d];
    m = n == 0 ? 0 : moved.numel() / n;
  } else {
    moved = contiguous(op::reshape(self, Shape{self.numel()}));
    n = self.numel();
  }
  Tensor inverse = op::empty(dim ? Shape{n} : Shape(self.sizes().begin(), self.sizes().end()),
                             ScalarType::Int64, self.device());
  std::vector<int64_t> firsts, cnt;
  visit_dtype(self.dtype(), "unique_consecutive", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = moved.data<T>();
    int64_t* inv = inverse.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !rows_equal(x + i * m, x + (i - 1) * m, m)) {
        firsts.push_back(i);
        cnt.push_back(0);
      }
      cnt.back()++;
      inv[i] = static_cast<int64_t>(firsts.size()) - 1;
    }
  });
  Tensor counts = op::empty(Shape{static_cast<int64_t>(cnt.size())}, ScalarType::Int64, self.device());
  std::copy(cnt.begin(), cnt.end(), counts.data<int64_t>());
  Tensor values = dim ? take_rows(moved, firsts, d) : take_rows(moved, firsts, 0);
  return {values, inverse, counts};
}

Tensor nonzero_cpu(const Tensor& self) {
  if (is_complex(self.dtype())) {  // nonzero where the real or the imaginary part is (as PyTorch)
    const int64_t last[1] = {-1};
    return nonzero_cpu(op::any(op::view_as_real(contiguous(self)), IntArrayRef(last, 1), false));
  }
  if (is_low_precision(self.dtype())) return nonzero_cpu(to_float32(self));  // the same zeros
  check_sortable("nonzero", self.dtype());
  const Tensor in = contiguous(self);
  const int64_t n = in.numel(), nd = self.dim();
  constexpr int64_t kChunk = 1 << 16;
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> counts(static_cast<size_t>(nchunks) + 1, 0);
  Tensor out;
  visit_dtype(self.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.data<T>();
    parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t k = 0;
        const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
#pragma omp simd reduction(+ : k)
        for (int64_t i = lo; i < hi; ++i) k += x[i] != T(0);
        counts[c + 1] = k;
      }
    });
    for (int64_t c = 0; c < nchunks; ++c) counts[c + 1] += counts[c];
    out = op::empty(Shape{counts[nchunks], nd}, ScalarType::Int64, self.device());
    int64_t* o = out.data<int64_t>();
    const IntArrayRef sizes = self.sizes();
    parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t w = counts[c] * nd;
        const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
        for (int64_t i = lo; i < hi; ++i) {
          if (x[i] == T(0)) continue;
          int64_t rem = i;
          for (int64_t d = nd - 1; d >= 0; --d) {
            o[w + d] = rem % sizes[d];
            rem /= sizes[d];
          }
          w += nd;
        }
      }
    });
  });
  return out;
}

FB_REGISTER_OUT_KERNEL(op::sort, CPU, sort_out_cpu);
FB_REGISTER_OUT_KERNEL(op::topk, CPU, topk_out_cpu);
FB_REGISTER_OUT_KERNEL(op::searchsorted, CPU, searchsorted_out_cpu);
FB_REGISTER_KERNEL(op::_unique2, CPU, unique2_cpu);
FB_REGISTER_KERNEL(op::unique_dim, CPU, unique_dim_cpu);
FB_REGISTER_KERNEL(op::_unique_consecutive, CPU, unique_consecutive_cpu);
FB_REGISTER_KERNEL(op::nonzero, CPU, nonzero_cpu);
FB_REGISTER_OUT_KERNEL(op::_sort_values, CPU, sort_values_out_cpu);

}  // namespace
}  // namespace flambeau
