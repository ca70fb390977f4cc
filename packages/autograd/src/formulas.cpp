// The formula table: one entry per differentiable op of core's ops.h.
//
// Each entry is a backward Node (one expression per input, the gradient of
// that input given `g`, the gradient of the output) and the op's Autograd
// kernel (Note [Dispatch]): compute the result under AutoExcludeAutograd (so
// the call lands on the device kernel), then record the node. The dispatcher
// only calls these kernels when grad mode is on and some input requires grad.
// Formulas are written with core ops, so with create_graph=True they record a
// graph of their own (Note [Engine ordering]). Ops that are composites in
// ops.h (matmul, mean, reshape, softmax, stack, ...) need no entry; ops with
// no differentiable output (comparisons, argmax) have no Autograd kernel.
#include <algorithm>
#include <functional>
#include <numeric>

#include "engine.h"

namespace flambeau::autograd {
namespace {

// ---- helpers shared by the formulas ----

/// An input's shape and dtype, kept to shape its gradient. When the input has
/// the output's shape (no broadcasting: the common case) the shape is not
/// stored, which saves an allocation per recorded op.
struct Meta {
  Shape sizes;
  ScalarType dtype = ScalarType::Float32;
  bool same_as_output = false;
  Meta() = default;
  explicit Meta(const Tensor& t) : sizes(t.sizes().begin(), t.sizes().end()), dtype(t.dtype()) {}
  Meta(const Tensor& t, const Tensor& out) : dtype(t.dtype()) {
    same_as_output = std::ranges::equal(t.sizes(), out.sizes());
    if (!same_as_output) sizes.assign(t.sizes().begin(), t.sizes().end());
  }
  /// For ops whose gradient formula already yields the input's shape (mm, bmm).
  static Meta dtype_only(const Tensor& t) {
    Meta m;
    m.dtype = t.dtype();
    m.same_as_output = true;
    return m;
  }
};

/// Sums a broadcast gradient back to the input's shape and casts it to its dtype.
Tensor reduce(const Tensor& g, const Meta& in) {
  Tensor r = g;
  if (!in.same_as_output && !std::ranges::equal(r.sizes(), in.sizes)) r = sum_to(r, in.sizes);
  if (r.dtype() != in.dtype) r = op::cast(r, in.dtype);
  return r;
}

/// A Python-like ("weak") number: it never changes the dtype of the other operand.
Tensor num(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }

Tensor scale(const Tensor& g, const Scalar& alpha) {
  if (!alpha.is_floating() && alpha.to_int() == 1) return g;
  return op::mul(g, num(alpha.to_double()));
}

Tensor zeros_for(const Meta& m) { return zeros(m.sizes, m.dtype); }

/// Runs an op below the Autograd layer (on the device kernel).
template <class OpT, class... A>
decltype(auto) below(const OpT& op_object, A&&... args) {
  AutoExcludeAutograd guard;
  return op_object(std::forward<A>(args)...);
}

template <class N, class... Ts>
std::shared_ptr<N> make_node(const Ts&... inputs) {
  auto n = std::make_shared<N>();
  std::vector<Edge> edges;
  edges.reserve(sizeof...(Ts));
  (edges.push_back(gradient_edge(inputs)), ...);
  n->set_next_edges(std::move(edges));
  return n;
}

/// The name a node shows as grad_fn.name(): PyTorch's names, so habits carry over.
#define FB_NODE_NAME(Name) \
  std::string name() const override { return #Name; }

// ==================================================================
// The table
// ==================================================================

// ---- add / sub:  a +- alpha * b ----
struct AddBackward0 final : Node {
  FB_NODE_NAME(AddBackward0)
  Meta a, b;
  Scalar alpha;
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(g[0], a) : Tensor(), needs(1) ? reduce(scale(g[0], alpha), b) : Tensor()};
  }
};
struct SubBackward0 final : Node {
  FB_NODE_NAME(SubBackward0)
  Meta a, b;
  Scalar alpha;
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(g[0], a) : Tensor(),
            needs(1) ? reduce(op::neg(scale(g[0], alpha)), b) : Tensor()};
  }
};

// ---- mul / div / pow ----
struct MulBackward0 final : Node {
  FB_NODE_NAME(MulBackward0)
  SavedVariable a, b;
  Meta a_meta, b_meta;
  void release_variables() override {
    a.reset();
    b.reset();
  }
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(op::mul(g[0], b.unpack(this)), a_meta) : Tensor(),
            needs(1) ? reduce(op::mul(g[0], a.unpack(this)), b_meta) : Tensor()};
  }
};
struct DivBackward0 final : Node {
  FB_NODE_NAME(DivBackward0)
  SavedVariable a, b;
  Meta a_meta, b_meta;
  void release_variables() override {
    a.reset();
    b.reset();
  }
  variable_list apply(variable_list&& g) override {
    Tensor bv = b.unpack(this);
    return {needs(0) ? reduce(op::div(g[0], bv), a_meta) : Tensor(),
            needs(1) ? reduce(op::neg(op::div(op::mul(g[0], a.unpack(this)), op::mul(bv, bv))), b_meta)
                     : Tensor()};
  }
};
struct PowBackward0 final : Node {
  FB_NODE_NAME(PowBackward0)
  SavedVariable a, b, result;
  Meta a_meta, b_meta;
  void release_variables() override {
    a.reset();
    b.reset();
    result.reset();
  }
  variable_list apply(variable_list&& g) override {
    Tensor av = a.unpack(this), bv = b.unpack(this);
    Tensor ga, gb;
    if (needs(0)) {  // b * a^(b-1), and 0 where b == 0 (avoids 0 * inf at a == 0)
      Tensor d = op::mul(bv, op::pow(av, op::sub(bv, num(1), 1)));
      ga = reduce(op::where(op::eq(bv, num(0)), num(0), op::mul(g[0], d)), a_meta);
    }
    if (needs(1)) {  // a^b * log(a), and 0 where a == 0 and b >= 0 (PyTorch's convention)
      Tensor d = op::mul(g[0], op::mul(result.unpack(this), op::log(av)));
      gb = reduce(op::where(op::eq(av, num(0)), op::where(op::ge(bv, num(0)), num(0), d), d), b_meta);
    }
    return {ga, gb};
  }
};

// ---- maximum / minimum: ties split the gradient evenly (as PyTorch) ----
Tensor pick(const Tensor& a, const Tensor& b, const Tensor& g, bool max) {
  Tensor wins = max ? op::gt(a, b) : op::lt(a, b);
  return op::where(op::eq(a, b), op::mul(g, num(0.5)), op::where(wins, g, num(0)));
}
// kMax picks maximum's formula, otherwise minimum's: the same node but for the comparison.
template <bool kMax>
struct ExtremumBackward final : Node {
  std::string name() const override { return kMax ? "MaximumBackward0" : "MinimumBackward0"; }
  SavedVariable a, b;
  Meta a_meta, b_meta;
  void release_variables() override {
    a.reset();
    b.reset();
  }
  variable_list apply(variable_list&& g) override {
    Tensor av = a.unpack(this), bv = b.unpack(this);
    return {needs(0) ? reduce(pick(av, bv, g[0], kMax), a_meta) : Tensor(),
            needs(1) ? reduce(pick(bv, av, g[0], kMax), b_meta) : Tensor()};
  }
};
using MaximumBackward0 = ExtremumBackward<true>;
using MinimumBackward0 = ExtremumBackward<false>;

// ---- where(cond, a, b): inputs (cond, a, b); cond has no gradient ----
struct WhereBackward0 final : Node {
  FB_NODE_NAME(WhereBackward0)
  SavedVariable cond;
  Meta a_meta, b_meta;
  void release_variables() override { cond.reset(); }
  variable_list apply(variable_list&& g) override {
    Tensor c = cond.unpack(this);
    return {Tensor(), needs(1) ? reduce(op::where(c, g[0], num(0)), a_meta) : Tensor(),
            needs(2) ? reduce(op::where(c, num(0), g[0]), b_meta) : Tensor()};
  }
};

// ---- unary ----
struct NegBackward0 final : Node {
  FB_NODE_NAME(NegBackward0)
  variable_list apply(variable_list&& g) override { return {op::neg(g[0])}; }
};
struct ExpBackward0 final : Node {
  FB_NODE_NAME(ExpBackward0)
  SavedVariable result;
  void release_variables() override { result.reset(); }
  variable_list apply(variable_list&& g) override { return {op::mul(g[0], result.unpack(this))}; }
};
struct LogBackward0 final : Node {
  FB_NODE_NAME(LogBackward0)
  SavedVariable self;
  void release_variables() override { self.reset(); }
  variable_list apply(variable_list&& g) override { return {op::div(g[0], self.unpack(this))}; }
};
struct TanhBackward0 final : Node {
  FB_NODE_NAME(TanhBackward0)
  SavedVariable result;
  void release_variables() override { result.reset(); }
  variable_list apply(variable_list&& g) override {
    Tensor y = result.unpack(this);
    return {op::mul(g[0], op::sub(num(1), op::mul(y, y), 1))};
  }
};
struct SigmoidBackward0 final : Node {
  FB_NODE_NAME(SigmoidBackward0)
  SavedVariable result;
  void release_variables() override { result.reset(); }
  variable_list apply(variable_list&& g) override {
    Tensor y = result.unpack(this);
    return {op::mul(g[0], op::mul(y, op::sub(num(1), y, 1)))};
  }
};
struct ReluBackward0 final : Node {
  FB_NODE_NAME(ReluBackward0)
  SavedVariable result;
  void release_variables() override { result.reset(); }
  variable_list apply(variable_list&& g) override {
    return {op::where(op::gt(result.unpack(this), num(0)), g[0], num(0))};
  }
};
struct SqrtBackward0 final : Node {
  FB_NODE_NAME(SqrtBackward0)
  SavedVariable result;
  void release_variables() override { result.reset(); }
  variable_list apply(variable_list&& g) override {
    return {op::div(g[0], op::mul(result.unpack(this), num(2)))};
  }
};
struct AbsBackward0 final : Node {
  FB_NODE_NAME(AbsBackward0)
  SavedVariable self;
  void release_variables() override { self.reset(); }
  variable_list apply(variable_list&& g) override {  // sign(x) * g, 0 at x == 0
    Tensor x = self.unpack(this);
    return {op::where(op::gt(x, num(0)), g[0], op::where(op::lt(x, num(0)), op::neg(g[0]), num(0)))};
  }
};

// ---- copies and casts ----
struct ToCopyBackward0 final : Node {
  FB_NODE_NAME(ToCopyBackward0)
  ScalarType self_dtype = ScalarType::Float32;
  variable_list apply(variable_list&& g) override {
    return {g[0].dtype() == self_dtype ? g[0] : op::cast(g[0], self_dtype)};
  }
};
struct CloneBackward0 final : Node {
  FB_NODE_NAME(CloneBackward0)
  variable_list apply(variable_list&& g) override { return {g[0]}; }
};
/// copy_(self, src): the old value of self is overwritten, so it gets zeros.
struct CopyBackwards final : Node {
  FB_NODE_NAME(CopyBackwards)
  Meta self_meta, src_meta;
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? zeros_for(self_meta) : Tensor(), needs(1) ? reduce(g[0], src_meta) : Tensor()};
  }
};
/// fill_, uniform_, normal_: self is overwritten with values that do not depend on it.
struct OverwriteBackward final : Node {
  std::string op_name;
  Meta self_meta;
  std::string name() const override { return op_name; }
  variable_list apply(variable_list&&) override { return {zeros_for(self_meta)}; }
};

// ---- views ----
struct ViewBackward0 final : Node {  // also used for squeeze/unsqueeze: a reshape back
  FB_NODE_NAME(ViewBackward0)
  Meta self_meta;
  variable_list apply(variable_list&& g) override { return {reshape(g[0], self_meta.sizes)}; }
};
struct SqueezeBackward0 final : Node {
  FB_NODE_NAME(SqueezeBackward0)
  Meta self_meta;
  variable_list apply(variable_list&& g) override { return {reshape(g[0], self_meta.sizes)}; }
};
struct UnsqueezeBackward0 final : Node {
  FB_NODE_NAME(UnsqueezeBackward0)
  Meta self_meta;
  variable_list apply(variable_list&& g) override { return {reshape(g[0], self_meta.sizes)}; }
};
struct PermuteBackward0 final : Node {
  FB_NODE_NAME(PermuteBackward0)
  Shape inverse;
  variable_list apply(variable_list&& g) override { return {op::permute(g[0], inverse)}; }
};
struct TransposeBackward0 final : Node {
  FB_NODE_NAME(TransposeBackward0)
  int64_t dim0 = 0, dim1 = 0;
  variable_list apply(variable_list&& g) override { return {op::transpose(g[0], dim0, dim1)}; }
};
struct ExpandBackward0 final : Node {
  FB_NODE_NAME(ExpandBackward0)
  Meta self_meta;
  variable_list apply(variable_list&& g) override { return {sum_to(g[0], self_meta.sizes)}; }
};

/// The gradient of a slice/select: g placed at `index` (int64, g's shape) along
/// `dim` of a zero tensor. Without grad mode a plain copy into a view does it;
/// under create_graph scatter_add keeps it differentiable.
Tensor place(const Meta& self_meta, const Tensor& g, int64_t dim,
             const std::function<Tensor(Tensor&)>& view_of, const std::function<Tensor()>& index) {
  Tensor z = zeros(self_meta.sizes, g.dtype());
  if (!grad_mode_enabled()) {
    Tensor v = view_of(z);
    op::copy_(v, g);
    return z;
  }
  return op::scatter_add(z, dim, index(), g);
}
struct SliceBackward0 final : Node {
  FB_NODE_NAME(SliceBackward0)
  Meta self_meta;
  int64_t dim = 0, start = 0, step = 1, length = 0;
  variable_list apply(variable_list&& g) override {
    const Tensor& gg = g[0];
    return {place(
        self_meta, gg, dim, [&](Tensor& z) { return op::slice(z, dim, start, start + length * step, step); },
        [&] {
          Shape shape(gg.dim(), 1);
          shape[dim] = length;
          Tensor idx = op::arange(start, start + length * step, step, ScalarType::Int64, Device());
          return contiguous(op::expand(op::view(idx, shape), gg.sizes()));
        })};
  }
};
struct SelectBackward0 final : Node {
  FB_NODE_NAME(SelectBackward0)
  Meta self_meta;
  int64_t dim = 0, index = 0;
  variable_list apply(variable_list&& g) override {
    Tensor g1 = op::unsqueeze(g[0], dim);
    return {place(
        self_meta, g1, dim, [&](Tensor& z) { return op::slice(z, dim, index, index + 1, 1); },
        [&] { return full(g1.sizes(), index, ScalarType::Int64); })};
  }
};
/// as_strided of a contiguous tensor, with no two view elements on one memory
/// location: g is written at the view's elements of a zero tensor. Overlapping
/// views (which would need a scatter-add) and create_graph raise.
struct AsStridedBackward0 final : Node {
  FB_NODE_NAME(AsStridedBackward0)
  Meta self_meta;
  Shape sizes, strides;
  int64_t offset = 0;  // relative to self's first element
  bool supported = true;
  variable_list apply(variable_list&& g) override {
    if (!supported)
      throw NotImplementedError(
          "[as_strided] the backward of as_strided is only implemented for a contiguous input and a view "
          "whose elements do not overlap");
    if (grad_mode_enabled() && g[0].requires_grad())
      throw NotImplementedError("[as_strided] create_graph=True through as_strided is not supported yet");
    AutoExcludeAutograd guard;
    Tensor z = zeros(self_meta.sizes, g[0].dtype());
    Tensor region = op::as_strided(z, sizes, strides, offset);
    op::copy_(region, g[0]);
    return {z};
  }
};

/// True if no two elements of a (sizes, strides) view share a memory location.
bool non_overlapping(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with size > 1
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 1) dims.emplace_back(strides[i], sizes[i]);
  std::ranges::sort(dims);
  int64_t extent = 0;  // the largest offset the smaller-stride dims reach
  for (auto [stride, size] : dims) {
    if (stride <= extent) return false;
    extent += (size - 1) * stride;
  }
  return true;
}

// ---- reductions ----
struct SumBackward0 final : Node {
  FB_NODE_NAME(SumBackward0)
  Meta self_meta;
  Shape dims;  // normalized and sorted; all dims if the sum was over all
  bool keepdim = false;
  variable_list apply(variable_list&& g) override {
    Tensor r = g[0];
    if (!keepdim)
      for (int64_t d : dims) r = op::unsqueeze(r, d);
    r = op::expand(r, self_meta.sizes);
    return {r.dtype() == self_meta.dtype ? r : op::cast(r, self_meta.dtype)};
  }
};
/// max over all elements: the gradient is shared evenly among the maxima.
struct MaxBackward1 final : Node {
  FB_NODE_NAME(MaxBackward1)
  SavedVariable self, result;
  void release_variables() override {
    self.reset();
    result.reset();
  }
  variable_list apply(variable_list&& g) override {
    Tensor mask = op::eq(self.unpack(this), result.unpack(this));
    Tensor count = op::sum(mask, {}, false, std::nullopt);
    return {op::where(mask, op::div(g[0], count), num(0))};
  }
};
/// max along a dim: the gradient goes to the index max_dim returned.
struct MaxBackward0 final : Node {
  FB_NODE_NAME(MaxBackward0)
  SavedVariable indices;
  Meta self_meta;
  int64_t dim = 0;
  bool keepdim = false;
  void release_variables() override { indices.reset(); }
  variable_list apply(variable_list&& g) override {
    Tensor gg = g[0], idx = indices.unpack(this);
    if (!keepdim && !self_meta.sizes.empty()) {
      gg = op::unsqueeze(gg, dim);
      idx = op::unsqueeze(idx, dim);
    }
    return {op::scatter_add(zeros(self_meta.sizes, gg.dtype()), dim, idx, gg)};
  }
};

// ---- linear algebra ----
struct MmBackward0 final : Node {
  FB_NODE_NAME(MmBackward0)
  SavedVariable a, b;
  Meta a_meta, b_meta;
  void release_variables() override {
    a.reset();
    b.reset();
  }
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(op::mm(g[0], op::transpose(b.unpack(this), 0, 1)), a_meta) : Tensor(),
            needs(1) ? reduce(op::mm(op::transpose(a.unpack(this), 0, 1), g[0]), b_meta) : Tensor()};
  }
};
struct BmmBackward0 final : Node {
  FB_NODE_NAME(BmmBackward0)
  SavedVariable a, b;
  Meta a_meta, b_meta;
  void release_variables() override {
    a.reset();
    b.reset();
  }
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(op::bmm(g[0], op::transpose(b.unpack(this), 1, 2)), a_meta) : Tensor(),
            needs(1) ? reduce(op::bmm(op::transpose(a.unpack(this), 1, 2), g[0]), b_meta) : Tensor()};
  }
};

// ---- nn primitives ----
struct LogSoftmaxBackward0 final : Node {
  FB_NODE_NAME(LogSoftmaxBackward0)
  SavedVariable result;
  int64_t dim = 0;
  void release_variables() override { result.reset(); }
  variable_list apply(variable_list&& g) override {  // g - exp(out) * g.sum(dim, keepdim)
    const int64_t d[1] = {dim};
    return {op::sub(g[0], op::mul(op::exp(result.unpack(this)), op::sum(g[0], d, true, std::nullopt)), 1)};
  }
};
struct CatBackward0 final : Node {
  FB_NODE_NAME(CatBackward0)
  std::vector<Meta> metas;
  int64_t dim = 0;
  variable_list apply(variable_list&& g) override {
    variable_list out(metas.size());
    int64_t offset = 0;
    for (size_t i = 0; i < metas.size(); ++i) {
      const int64_t n = metas[i].sizes.empty() ? 0 : metas[i].sizes[dim];
      if (needs(i)) out[i] = reduce(op::slice(g[0], dim, offset, offset + n, 1), metas[i]);
      offset += n;
    }
    return out;
  }
};
/// gather(self, dim, index): inputs (self, index).
struct GatherBackward0 final : Node {
  FB_NODE_NAME(GatherBackward0)
  SavedVariable index;
  Meta self_meta;
  int64_t dim = 0;
  void release_variables() override { index.reset(); }
  variable_list apply(variable_list&& g) override {
    return {op::scatter_add(zeros(self_meta.sizes, g[0].dtype()), dim, index.unpack(this), g[0]), Tensor()};
  }
};
/// scatter_add(self, dim, index, src): inputs (self, index, src).
struct ScatterAddBackward0 final : Node {
  FB_NODE_NAME(ScatterAddBackward0)
  SavedVariable index;
  Meta self_meta, src_meta;
  int64_t dim = 0;
  void release_variables() override { index.reset(); }
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(g[0], self_meta) : Tensor(), Tensor(),
            needs(2) ? reduce(op::gather(g[0], dim, index.unpack(this)), src_meta) : Tensor()};
  }
};

// ---- in-place arithmetic: inputs (old self, other); self's history is rebased ----
struct MulBackward0Inplace final : Node {
  SavedVariable other, self_before;
  Meta self_meta, other_meta;
  std::string name() const override { return "MulBackward0"; }
  void release_variables() override {
    other.reset();
    self_before.reset();
  }
  variable_list apply(variable_list&& g) override {
    return {needs(0) ? reduce(op::mul(g[0], other.unpack(this)), self_meta) : Tensor(),
            needs(1) ? reduce(op::mul(g[0], self_before.unpack(this)), other_meta) : Tensor()};
  }
};
struct DivBackward0Inplace final : Node {
  SavedVariable other, result;
  Meta self_meta, other_meta;
  std::string name() const override { return "DivBackward0"; }
  void release_variables() override {
    other.reset();
    result.reset();
  }
  variable_list apply(variable_list&& g) override {  // d(a/b)/db = -(a/b)/b
    Tensor bv = other.unpack(this);
    return {
        needs(0) ? reduce(op::div(g[0], bv), self_meta) : Tensor(),
        needs(1) ? reduce(op::neg(op::div(op::mul(g[0], result.unpack(this)), bv)), other_meta) : Tensor()};
  }
};

// ==================================================================
// Autograd kernels: run the op below autograd, then record its node
// ==================================================================

bool differentiable(const Tensor& out) { return is_floating(out.dtype()); }

Tensor add_ag(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out = below(op::add, a, b, alpha);
  auto n = make_node<AddBackward0>(a, b);
  n->a = Meta(a, out), n->b = Meta(b, out), n->alpha = alpha;
  set_history(out, n);
  return out;
}
Tensor sub_ag(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out = below(op::sub, a, b, alpha);
  auto n = make_node<SubBackward0>(a, b);
  n->a = Meta(a, out), n->b = Meta(b, out), n->alpha = alpha;
  set_history(out, n);
  return out;
}

/// Binary ops saving both inputs (only the one the other's gradient needs).
template <class N, auto& OpObject>
Tensor binary_saving_inputs(const Tensor& a, const Tensor& b) {
  Tensor out = below(OpObject, a, b);
  if (!differentiable(out)) return out;
  auto n = make_node<N>(a, b);
  constexpr bool matmul = std::is_same_v<N, MmBackward0> || std::is_same_v<N, BmmBackward0>;
  if constexpr (matmul) {
    n->a_meta = Meta::dtype_only(a), n->b_meta = Meta::dtype_only(b);
  } else {
    n->a_meta = Meta(a, out), n->b_meta = Meta(b, out);
  }
  const bool both =
      !std::is_same_v<N, MulBackward0> && !std::is_same_v<N, MmBackward0> && !std::is_same_v<N, BmmBackward0>;
  if (both || n->needs(1)) n->a = SavedVariable(a, false);
  if (both || n->needs(0)) n->b = SavedVariable(b, false);
  set_history(out, n);
  return out;
}
Tensor mul_ag(const Tensor& a, const Tensor& b) { return binary_saving_inputs<MulBackward0, op::mul>(a, b); }
Tensor div_ag(const Tensor& a, const Tensor& b) { return binary_saving_inputs<DivBackward0, op::div>(a, b); }
Tensor maximum_ag(const Tensor& a, const Tensor& b) {
  return binary_saving_inputs<MaximumBackward0, op::maximum>(a, b);
}
Tensor minimum_ag(const Tensor& a, const Tensor& b) {
  return binary_saving_inputs<MinimumBackward0, op::minimum>(a, b);
}
Tensor mm_ag(const Tensor& a, const Tensor& b) { return binary_saving_inputs<MmBackward0, op::mm>(a, b); }
Tensor bmm_ag(const Tensor& a, const Tensor& b) { return binary_saving_inputs<BmmBackward0, op::bmm>(a, b); }

Tensor pow_ag(const Tensor& a, const Tensor& b) {
  Tensor out = below(op::pow, a, b);
  if (!differentiable(out)) return out;
  auto n = make_node<PowBackward0>(a, b);
  n->a_meta = Meta(a, out), n->b_meta = Meta(b, out);
  n->a = SavedVariable(a, false);
  n->b = SavedVariable(b, false);
  set_history(out, n);
  if (n->needs(1)) n->result = SavedVariable(out, true);
  return out;
}

Tensor where_ag(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out = below(op::where, cond, a, b);
  if (!differentiable(out)) return out;
  auto n = make_node<WhereBackward0>(cond, a, b);
  n->cond = SavedVariable(cond, false);
  n->a_meta = Meta(a, out), n->b_meta = Meta(b, out);
  set_history(out, n);
  return out;
}

/// Unary ops: N saves either the input (`self`) or the output (`result`).
template <class N, auto& OpObject>
Tensor unary(const Tensor& self) {
  Tensor out = below(OpObject, self);
  if (!differentiable(out)) return out;
  auto n = make_node<N>(self);
  set_history(out, n);
  if constexpr (requires { n->result; }) n->result = SavedVariable(out, true);
  if constexpr (requires { n->self; }) n->self = SavedVariable(self, false);
  return out;
}

Tensor clone_ag(const Tensor& self) {
  Tensor out = below(op::clone, self);
  set_history(out, make_node<CloneBackward0>(self));
  return out;
}
Tensor cast_ag(const Tensor& self, ScalarType dtype) {
  Tensor out = below(op::cast, self, dtype);
  if (!differentiable(out)) return out;
  auto n = make_node<ToCopyBackward0>(self);
  n->self_dtype = self.dtype();
  set_history(out, n);
  return out;
}

// ---- in-place ----
template <class N, auto& OpObject>
Tensor& add_sub_inplace(Tensor& self, const Tensor& other, const Scalar& alpha, const char* name) {
  check_inplace(self, other.requires_grad(), name);
  auto n = make_node<N>(self, other);
  n->a = Meta(self, self), n->b = Meta(other, self), n->alpha = alpha;
  below(OpObject, self, other, alpha);
  rebase_inplace(self, n);
  return self;
}
Tensor& add__ag(Tensor& self, const Tensor& other, const Scalar& alpha) {
  return add_sub_inplace<AddBackward0, op::add_>(self, other, alpha, "add_");
}
Tensor& sub__ag(Tensor& self, const Tensor& other, const Scalar& alpha) {
  return add_sub_inplace<SubBackward0, op::sub_>(self, other, alpha, "sub_");
}
Tensor& mul__ag(Tensor& self, const Tensor& other) {
  check_inplace(self, other.requires_grad(), "mul_");
  auto n = make_node<MulBackward0Inplace>(self, other);
  n->self_meta = Meta(self, self), n->other_meta = Meta(other, self);
  if (n->needs(1)) n->self_before = SavedVariable(below(op::clone, self), false);
  if (n->needs(0)) n->other = SavedVariable(other, false);
  below(op::mul_, self, other);
  rebase_inplace(self, n);
  return self;
}
Tensor& div__ag(Tensor& self, const Tensor& other) {
  check_inplace(self, other.requires_grad(), "div_");
  auto n = make_node<DivBackward0Inplace>(self, other);
  n->self_meta = Meta(self, self), n->other_meta = Meta(other, self);
  below(op::div_, self, other);
  rebase_inplace(self, n);
  n->other = SavedVariable(other, false);
  if (n->needs(1)) n->result = SavedVariable(self, true);
  return self;
}
Tensor& copy__ag(Tensor& self, const Tensor& src) {
  check_inplace(self, src.requires_grad(), "copy_");
  auto n = make_node<CopyBackwards>(self, src);
  n->self_meta = Meta(self), n->src_meta = Meta(src, self);
  below(op::copy_, self, src);
  rebase_inplace(self, n);
  return self;
}
/// After an in-place fill (checked by the caller), self no longer depends on its old value.
Tensor& overwrite(Tensor& self, const char* node_name) {
  auto n = make_node<OverwriteBackward>(self);
  n->op_name = node_name;
  n->self_meta = Meta(self);
  rebase_inplace(self, n);
  return self;
}
Tensor& fill__ag(Tensor& self, const Scalar& value) {
  check_inplace(self, false, "fill_");
  below(op::fill_, self, value);
  return overwrite(self, "FillBackward0");
}
Tensor& uniform__ag(Tensor& self, double low, double high, Generator* gen) {
  check_inplace(self, false, "uniform_");
  below(op::uniform_, self, low, high, gen);
  return overwrite(self, "UniformBackward0");
}
Tensor& normal__ag(Tensor& self, double mean, double std, Generator* gen) {
  check_inplace(self, false, "normal_");
  below(op::normal_, self, mean, std, gen);
  return overwrite(self, "NormalBackward0");
}

// ---- views ----
template <class N>
Tensor record_view(const Tensor& self, Tensor out) {
  auto n = make_node<N>(self);
  n->self_meta = Meta(self);
  set_history(out, n);
  set_view_base(out, self);
  return out;
}
Tensor view_ag(const Tensor& self, IntArrayRef sizes) {
  return record_view<ViewBackward0>(self, below(op::view, self, sizes));
}
Tensor squeeze_ag(const Tensor& self, IntArrayRef dims) {
  return record_view<SqueezeBackward0>(self, below(op::squeeze, self, dims));
}
Tensor unsqueeze_ag(const Tensor& self, int64_t dim) {
  return record_view<UnsqueezeBackward0>(self, below(op::unsqueeze, self, dim));
}
Tensor expand_ag(const Tensor& self, IntArrayRef sizes) {
  return record_view<ExpandBackward0>(self, below(op::expand, self, sizes));
}
Tensor permute_ag(const Tensor& self, IntArrayRef dims) {
  Tensor out = below(op::permute, self, dims);
  auto n = make_node<PermuteBackward0>(self);
  n->inverse.resize(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    n->inverse[wrap_dim(dims[i], self.dim(), "permute")] = static_cast<int64_t>(i);
  set_history(out, n);
  set_view_base(out, self);
  return out;
}
Tensor transpose_ag(const Tensor& self, int64_t dim0, int64_t dim1) {
  Tensor out = below(op::transpose, self, dim0, dim1);
  auto n = make_node<TransposeBackward0>(self);
  n->dim0 = dim0, n->dim1 = dim1;
  set_history(out, n);
  set_view_base(out, self);
  return out;
}
Tensor slice_ag(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                int64_t step) {
  Tensor out = below(op::slice, self, dim, start, end, step);
  auto n = make_node<SliceBackward0>(self);
  n->self_meta = Meta(self);
  n->dim = wrap_dim(dim, self.dim(), "slice");
  const int64_t size = self.sizes()[n->dim];
  int64_t s = start.value_or(0);
  if (s < 0) s += size;
  n->start = std::clamp<int64_t>(s, 0, size);
  n->step = step;
  n->length = out.sizes()[n->dim];
  set_history(out, n);
  set_view_base(out, self);
  return out;
}
Tensor select_ag(const Tensor& self, int64_t dim, int64_t index) {
  Tensor out = below(op::select, self, dim, index);
  auto n = make_node<SelectBackward0>(self);
  n->self_meta = Meta(self);
  n->dim = wrap_dim(dim, self.dim(), "select");
  n->index = index < 0 ? index + self.sizes()[n->dim] : index;
  set_history(out, n);
  set_view_base(out, self);
  return out;
}
Tensor as_strided_ag(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  Tensor out = below(op::as_strided, self, sizes, strides, offset);
  auto n = make_node<AsStridedBackward0>(self);
  n->self_meta = Meta(self);
  n->sizes.assign(sizes.begin(), sizes.end());
  n->strides.assign(strides.begin(), strides.end());
  n->offset = offset - self.storage_offset();
  n->supported = self.is_contiguous() && n->offset >= 0 && non_overlapping(sizes, strides);
  set_history(out, n);
  set_view_base(out, self);
  return out;
}

// ---- reductions ----
Tensor sum_ag(const Tensor& self, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  Tensor out = below(op::sum, self, dims, keepdim, dtype);
  if (!differentiable(out)) return out;
  auto n = make_node<SumBackward0>(self);
  n->self_meta = Meta(self);
  n->keepdim = keepdim;
  if (dims.empty()) {
    n->dims.resize(self.dim());
    std::iota(n->dims.begin(), n->dims.end(), 0);
  } else {
    for (int64_t d : dims) n->dims.push_back(wrap_dim(d, self.dim(), "sum"));
    std::ranges::sort(n->dims);
  }
  if (self.dim() == 0) n->dims.clear();
  set_history(out, n);
  return out;
}
Tensor max_ag(const Tensor& self) {
  Tensor out = below(op::max, self);
  auto n = make_node<MaxBackward1>(self);
  n->self = SavedVariable(self, false);
  set_history(out, n);
  n->result = SavedVariable(out, true);
  return out;
}
std::tuple<Tensor, Tensor> max_dim_ag(const Tensor& self, int64_t dim, bool keepdim) {
  auto [values, indices] = below(op::max_dim, self, dim, keepdim);
  auto n = make_node<MaxBackward0>(self);
  n->self_meta = Meta(self);
  n->dim = wrap_dim(dim, self.dim(), "max");
  n->keepdim = keepdim;
  n->indices = SavedVariable(indices, false);
  set_history(values, n);
  return {values, indices};
}

// ---- nn primitives ----
Tensor log_softmax_ag(const Tensor& self, int64_t dim) {
  Tensor out = below(op::log_softmax, self, dim);
  auto n = make_node<LogSoftmaxBackward0>(self);
  n->dim = wrap_dim(dim, out.dim(), "log_softmax");
  set_history(out, n);
  n->result = SavedVariable(out, true);
  return out;
}
Tensor cat_ag(const TensorList& tensors, int64_t dim) {
  Tensor out = below(op::cat, tensors, dim);
  if (!differentiable(out)) return out;
  auto n = std::make_shared<CatBackward0>();
  std::vector<Edge> edges;
  edges.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    edges.push_back(gradient_edge(t));
    n->metas.emplace_back(t);
  }
  n->set_next_edges(std::move(edges));
  n->dim = wrap_dim(dim, out.dim(), "cat");
  set_history(out, n);
  return out;
}
Tensor gather_ag(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor out = below(op::gather, self, dim, index);
  auto n = make_node<GatherBackward0>(self, index);
  n->self_meta = Meta(self);
  n->dim = wrap_dim(dim, self.dim(), "gather");
  n->index = SavedVariable(index, false);
  set_history(out, n);
  return out;
}
Tensor scatter_add_ag(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = below(op::scatter_add, self, dim, index, src);
  auto n = make_node<ScatterAddBackward0>(self, index, src);
  n->self_meta = Meta(self, out), n->src_meta = Meta(src);
  n->dim = wrap_dim(dim, self.dim(), "scatter_add");
  n->index = SavedVariable(index, false);
  set_history(out, n);
  return out;
}

}  // namespace

void register_autograd_kernels() {
  constexpr auto AG = DispatchKey::Autograd;
  op::add.register_kernel(AG, add_ag);
  op::sub.register_kernel(AG, sub_ag);
  op::mul.register_kernel(AG, mul_ag);
  op::div.register_kernel(AG, div_ag);
  op::pow.register_kernel(AG, pow_ag);
  op::maximum.register_kernel(AG, maximum_ag);
  op::minimum.register_kernel(AG, minimum_ag);
  op::where.register_kernel(AG, where_ag);
  op::neg.register_kernel(AG, unary<NegBackward0, op::neg>);
  op::exp.register_kernel(AG, unary<ExpBackward0, op::exp>);
  op::log.register_kernel(AG, unary<LogBackward0, op::log>);
  op::tanh.register_kernel(AG, unary<TanhBackward0, op::tanh>);
  op::sigmoid.register_kernel(AG, unary<SigmoidBackward0, op::sigmoid>);
  op::relu.register_kernel(AG, unary<ReluBackward0, op::relu>);
  op::sqrt.register_kernel(AG, unary<SqrtBackward0, op::sqrt>);
  op::abs.register_kernel(AG, unary<AbsBackward0, op::abs>);
  op::add_.register_kernel(AG, add__ag);
  op::sub_.register_kernel(AG, sub__ag);
  op::mul_.register_kernel(AG, mul__ag);
  op::div_.register_kernel(AG, div__ag);
  op::copy_.register_kernel(AG, copy__ag);
  op::fill_.register_kernel(AG, fill__ag);
  op::uniform_.register_kernel(AG, uniform__ag);
  op::normal_.register_kernel(AG, normal__ag);
  op::clone.register_kernel(AG, clone_ag);
  op::cast.register_kernel(AG, cast_ag);
  op::view.register_kernel(AG, view_ag);
  op::permute.register_kernel(AG, permute_ag);
  op::transpose.register_kernel(AG, transpose_ag);
  op::unsqueeze.register_kernel(AG, unsqueeze_ag);
  op::squeeze.register_kernel(AG, squeeze_ag);
  op::expand.register_kernel(AG, expand_ag);
  op::slice.register_kernel(AG, slice_ag);
  op::select.register_kernel(AG, select_ag);
  op::as_strided.register_kernel(AG, as_strided_ag);
  op::sum.register_kernel(AG, sum_ag);
  op::max.register_kernel(AG, max_ag);
  op::max_dim.register_kernel(AG, max_dim_ag);
  op::mm.register_kernel(AG, mm_ag);
  op::bmm.register_kernel(AG, bmm_ag);
  op::log_softmax.register_kernel(AG, log_softmax_ag);
  op::cat.register_kernel(AG, cat_ag);
  op::gather.register_kernel(AG, gather_ag);
  op::scatter_add.register_kernel(AG, scatter_add_ag);
}

}  // namespace flambeau::autograd
