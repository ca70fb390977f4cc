// The backward engine and the graph bookkeeping of engine.h.
//
// Note [Engine ordering]
// backward runs on the calling thread, in three steps:
//  1. Dependencies: a depth-first walk from the roots counts, for every node
//     reachable from them, how many edges point at it. A node is ready once
//     all of them have delivered their gradient (or delivered nothing).
//  2. Ready queue: a priority queue ordered by sequence number, highest first.
//     Sequence numbers grow with creation time, so a node always runs before
//     the nodes that made its inputs, and the order does not depend on
//     pointer values or hash order: the same program runs its backward in the
//     same order every time. AccumulateGrad nodes have the largest number, so
//     a leaf's .grad is written as soon as it is complete; ties (several
//     AccumulateGrads) are broken by the order they became ready.
//  3. Gradients delivered to one node input are summed in that node's input
//     buffer (with core's add, so under create_graph the sum is itself
//     differentiable). A gradient that is undefined means "zero, and nothing
//     was computed": it is not added, but still counts as delivered.
// With `inputs` (autograd.grad, backward(inputs=...)) only nodes on a path to
// one of the inputs run: a node is needed if one of its next nodes is needed,
// or if it is the AccumulateGrad of an input that should accumulate. The
// gradient flowing into an input is captured when its node becomes ready,
// after the tensor hooks ran.
// Formulas run with grad mode set to `create_graph` (GradModeGuard), so with
// create_graph=True they record a graph of their own: higher-order gradients.
#include "engine.h"

#include "flambeau/memory_format.h"
#include "flambeau/observe.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace flambeau::autograd {

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  // Note [Observation]: links the forward op being recorded to this node's backward event.
  if (detail::observing(kObserveProfiler)) [[unlikely]]
    profiler::note_sequence_nr(static_cast<int64_t>(n));
  return n;
}

namespace {
// Note [Freeing deep graphs]: a node's destructor drops its next edges, which
// may destroy the next nodes, recursively. Up to kMaxFreeDepth levels that is
// plain recursion (no allocation: the common case); deeper, the children are
// handed to a "graveyard" that the outermost deep destructor empties in a loop.
constexpr int kMaxFreeDepth = 256;
thread_local int t_free_depth = 0;
thread_local std::vector<std::shared_ptr<Node>>* t_graveyard = nullptr;
}  // namespace

Node::~Node() {
  if (t_graveyard) {
    for (Edge& e : next_edges_)
      if (e.function) t_graveyard->push_back(std::move(e.function));
    return;
  }
  if (t_free_depth < kMaxFreeDepth) {
    ++t_free_depth;
    next_edges_.clear();
    --t_free_depth;
    return;
  }
  std::vector<std::shared_ptr<Node>> graveyard;
  for (Edge& e : next_edges_)
    if (e.function) graveyard.push_back(std::move(e.function));
  t_graveyard = &graveyard;
  while (!graveyard.empty()) {
    std::shared_ptr<Node> n = std::move(graveyard.back());
    graveyard.pop_back();
    n.reset();  // if this was the last reference, its children land in the graveyard
  }
  t_graveyard = nullptr;
}

// ---- metadata ----

void AutogradMeta::set_requires_grad(bool value, TensorImpl*) {
  if (!value && grad_fn_)
    throw RuntimeError(
        "[requires_grad] you can only change requires_grad flags of leaf tensors; to use a computed "
        "tensor in a part of the program that needs no gradient, use t.detach()");
  requires_grad_ = value;
}

Tensor shallow_alias(const Tensor& t) {
  const TensorImpl* src = t.impl();
  auto impl = std::make_shared<TensorImpl>(
      src->storage(), src->dtype(), Shape(src->sizes().begin(), src->sizes().end()),
      Shape(src->strides().begin(), src->strides().end()), src->storage_offset());
  impl->set_wrapped_number(src->is_wrapped_number());
  return Tensor(std::move(impl));
}

// ---- forward-mode AD (Note [Forward-mode AD]) ----

namespace {
std::mutex g_level_mutex;
std::vector<std::weak_ptr<ForwardGrad>> g_level_slots;  // the slots of the active level
size_t g_prune_at = 1024;  // dead slots are dropped when the list reaches this size (then twice the live ones)
thread_local bool t_forward_grad_disabled = false;
}  // namespace

int64_t enter_dual_level() {
  std::lock_guard lock(g_level_mutex);
  FB_CHECK(!detail::g_forward_ad_active.load(), "[forward_ad.enter_dual_level] nested forward-mode AD is not supported: "
           "exit the active dual level first");
  detail::g_forward_ad_active = true;
  return 0;
}

void exit_dual_level(int64_t level) {
  std::vector<std::weak_ptr<ForwardGrad>> slots;
  {
    std::lock_guard lock(g_level_mutex);
    FB_CHECK(detail::g_forward_ad_active.load() && level == 0, "[forward_ad.exit_dual_level] level ", level,
             " is not the active dual level");
    detail::g_forward_ad_active = false;
    slots.swap(g_level_slots);
    g_prune_at = 1024;
  }
  // Tangents are reset outside the lock: freeing one may run arbitrary deleters.
  for (auto& w : slots)
    if (auto slot = w.lock()) slot->tangent = Tensor();
}

int64_t current_dual_level() { return detail::g_forward_ad_active.load(std::memory_order_relaxed) ? 0 : -1; }

bool forward_grad_enabled() { return !t_forward_grad_disabled && detail::g_forward_ad_active.load(std::memory_order_relaxed); }

ForwardGradDisabled::ForwardGradDisabled() : prev_(t_forward_grad_disabled) { t_forward_grad_disabled = true; }
ForwardGradDisabled::~ForwardGradDisabled() { t_forward_grad_disabled = prev_; }

Tensor fw_grad(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (!m || !m->fw_ || !forward_grad_enabled()) return Tensor();
  return m->fw_->tangent;
}

void set_fw_grad_inplace(const Tensor& self, const Tensor& tangent, const char* op) {
  AutogradMeta* m = meta_of(self);
  if (self.impl()->is_view() && m && m->fw_ && m->fw_->tangent.defined()) {
    Tensor current = m->fw_->tangent;
    if (tangent.defined())
      op::copy_(current, tangent);
    else
      op::zero_(current);
    return;
  }
  set_fw_grad(self, tangent, op);
}

Tensor tangent_with_layout_of(const Tensor& primal, const Tensor& tangent) {
  const TensorImpl* p = primal.impl();
  const TensorImpl* t = tangent.impl();
  if (!p->storage() || !t->storage()) return tangent;  // storage-less (meta) tensors have no layout to match
  for (size_t d = 0; d < p->sizes().size(); ++d)
    if (p->strides()[d] == 0 && p->sizes()[d] > 1)
      return tangent;  // an expanded primal (one value for many, as vmap shares it): each row's tangent its own
  const size_t item = itemsize(primal.dtype());
  const bool same = std::ranges::equal(p->strides(), t->strides()) && p->storage_offset() == t->storage_offset() &&
                    p->storage()->nbytes() / item == t->storage()->nbytes() / itemsize(tangent.dtype());
  if (same || !std::ranges::equal(p->sizes(), t->sizes()) || primal.dtype() != tangent.dtype()) return tangent;
  const int64_t n = static_cast<int64_t>(p->storage()->nbytes() / item);
  const int64_t flat_size[1] = {n};
  Tensor storage = zeros(IntArrayRef(flat_size), primal.dtype(), primal.device());
  Tensor out = op::as_strided(storage, p->sizes(), p->strides(), p->storage_offset());
  op::copy_(out, tangent);
  return out;
}

void record_fw_view(const Tensor& view, const Tensor& self) {
  const AutogradMeta* m = meta_of(self);
  ensure_meta(view)->fw_view_base_ = m && m->fw_view_base_.defined() ? m->fw_view_base_ : self;
}

namespace {
bool same_layout(const Tensor& a, const Tensor& b) {
  const TensorImpl* x = a.impl();
  const TensorImpl* y = b.impl();
  return x->storage() && y->storage() && std::ranges::equal(x->sizes(), y->sizes()) &&
         std::ranges::equal(x->strides(), y->strides()) && x->storage_offset() == y->storage_offset() &&
         x->storage()->nbytes() == y->storage()->nbytes() && a.dtype() == b.dtype();
}
}  // namespace

Tensor prepare_inplace_forward(const Tensor& self, const Tensor& self_tan, const char* op) {
  if (self_tan.defined() || !self.impl()->is_view()) return self_tan;
  const AutogradMeta* m = meta_of(self);
  const Tensor base = m ? m->fw_view_base_ : Tensor();
  if (!base.defined())
    throw NotImplementedError(detail::cat_str(
        "[", op, "] forward-mode AD of an in-place op on a view (", self.describe(),
        ") made outside the dual level is not supported: its base would not get the tangent; take the view "
        "inside the level, or use the out-of-place op"));
  ForwardGradDisabled no_fw;
  Tensor base_t = meta_of(base) && meta_of(base)->fw_ ? meta_of(base)->fw_->tangent : Tensor();
  if (!base_t.defined()) {
    base_t = tangent_with_layout_of(base, zeros_like(base));
    if (!same_layout(base_t, base)) base_t = Tensor();  // a base that overlaps itself (expanded)
    else set_fw_grad(base, base_t, op);
  }
  if (!base_t.defined() || !same_layout(base_t, base))
    throw NotImplementedError(detail::cat_str(
        "[", op, "] forward-mode AD of an in-place op on a view (", self.describe(),
        ") whose base's tangent is laid out differently from the base is not supported; use the out-of-place op"));
  const TensorImpl* v = self.impl();
  Tensor view_t = op::as_strided(base_t, v->sizes(), v->strides(), v->storage_offset());
  // Recorded as a view of base_t, so writing a tangent that requires grad into it rebases base_t's history
  // (reverse over forward), as an in-place op on any recorded view does (Note [In-place on views]).
  ensure_meta(view_t);
  set_view_base(view_t, base_t);
  set_fw_grad(self, view_t, op);
  return view_t;
}

void ensure_fw_slot(const Tensor& t) {
  AutogradMeta* m = ensure_meta(t);
  if (!m->fw_) m->fw_ = std::make_shared<ForwardGrad>();
}

void set_fw_grad(const Tensor& t, const Tensor& tangent, const char* op) {
  FB_CHECK(detail::g_forward_ad_active.load(), "[", op, "] forward-mode AD needs an active dual level "
           "(with fb.autograd.forward_ad.dual_level(): ...)");
  if (tangent.defined()) {
    FB_CHECK_VALUE(std::ranges::equal(tangent.sizes(), t.sizes()), "[", op, "] the tangent has shape ",
                   shape_str(tangent.sizes()), " but the primal has shape ", shape_str(t.sizes()));
    FB_CHECK_TYPE(tangent.dtype() == t.dtype(), "[", op, "] the tangent has dtype ", dtype_name(tangent.dtype()),
                  " but the primal has dtype ", dtype_name(t.dtype()));
    FB_CHECK(tangent.device() == t.device(), "[", op, "] the tangent is on ", tangent.device().str(),
             " but the primal is on ", t.device().str());
  }
  AutogradMeta* m = ensure_meta(t);
  if (!m->fw_) {
    if (!tangent.defined()) return;
    m->fw_ = std::make_shared<ForwardGrad>();
  }
  if (!m->fw_->tangent.defined() && tangent.defined()) {
    std::lock_guard lock(g_level_mutex);
    if (g_level_slots.size() >= g_prune_at) {
      std::erase_if(g_level_slots, [](const std::weak_ptr<ForwardGrad>& w) { return w.expired(); });
      g_prune_at = std::max<size_t>(1024, 2 * g_level_slots.size());
    }
    g_level_slots.push_back(m->fw_);
  }
  m->fw_->tangent = tangent;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta* m = ensure_meta(t);
  if (auto acc = m->grad_accumulator_.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  m->grad_accumulator_ = acc;
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (!m) return Edge();
  if (m->view_base_.defined() && m->view_version_ != t.impl()->version()) refresh_view_history(t, m);
  if (m->grad_fn_) return Edge(m->grad_fn_, m->output_nr_);
  if (!m->requires_grad_) return Edge();
  return Edge(grad_accumulator(t), 0);
}

void set_history(const Tensor& out, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  if (!is_floating(out.dtype()) && !is_complex(out.dtype()))
    return;  // integer and bool results never require grad
  AutogradMeta* m = ensure_meta(out);
  m->grad_fn_ = fn;
  m->output_nr_ = output_nr;
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn) {
  AutogradMeta* m = ensure_meta(self);
  m->grad_fn_ = fn;
  m->output_nr_ = 0;
  m->grad_accumulator_.reset();
}

namespace {
// Note [In-place on views]: a base whose elements fill one block starting at its first element (dense,
// no negative stride).
bool starts_at_lowest_address(const Tensor& base) {
  if (base.is_contiguous()) return true;
  for (int64_t s : base.strides())
    if (s < 0) return false;
  return is_non_overlapping_and_dense(base);
}
}  // namespace

void check_inplace(const Tensor& self, bool other_requires_grad, const char* op) {
  AutogradMeta* m = meta_of(self);
  if (m && m->requires_grad_ && !m->grad_fn_)
    throw RuntimeError(detail::cat_str(
        "[", op, "] a leaf Variable that requires grad is being used in an in-place operation (",
        self.describe(), "); do it under no_grad(), or on a clone"));
  if (!self.impl()->is_view() || !(self.requires_grad() || other_requires_grad)) return;
  if (!m || !m->view_base_.defined())
    throw NotImplementedError(detail::cat_str(
        "[", op, "] in-place operation on a view that autograd did not record (", self.describe(),
        "; it was taken under no_grad or from a tensor that did not require grad); use the out-of-place "
        "op, or clone the view first"));
  const Tensor& base = m->view_base_;
  AutogradMeta* bm = meta_of(base);
  if (bm && bm->requires_grad_ && !bm->grad_fn_)
    throw RuntimeError(detail::cat_str("[", op,
                                       "] a view of a leaf Variable that requires grad is being used in an "
                                       "in-place operation (",
                                       self.describe(), "); do it under no_grad(), or on a clone"));
  check_no_internal_overlap(self, op);
  if (!starts_at_lowest_address(base))
    throw NotImplementedError(
        detail::cat_str("[", op, "] in-place operation on a view of a tensor that is not dense (",
                        base.describe(), ") is not supported yet; clone the base first"));
}

// Note [In-place on views]
// A view op records, in the view's metadata, the root of its view chain (the
// base) and the storage version. An in-place op on such a view changes the
// base too, so the base's history is rebased onto a CopySlices node: its
// backward clones the base's gradient, runs the in-place op's own backward on
// the view's region of it, and writes the result back into that region. The
// view's history becomes "a view of the base's new history". Any other view
// of the same base whose stored version is stale (the storage was written
// since) gets that same history the next time it is used (gradient_edge).
// The base's gradient is laid out as the base (its strides): the view's
// geometry, relative to the base's first element, then picks the same
// elements in it. Limits: the base must be dense with no negative stride
// (contiguous, channels-last, any permutation of dims: its first element is
// its lowest address), and create_graph through these nodes raises
// NotImplementedError.

namespace {

struct ViewGeometry {
  Shape sizes, strides;
  int64_t offset = 0;  // relative to the base's first element
};

// A tensor laid out as the base (its sizes and strides, first element at offset 0).
struct BaseLayout {
  Shape sizes, strides;
};

BaseLayout layout_of(const Tensor& base) {
  return {Shape(base.sizes().begin(), base.sizes().end()), Shape(base.strides().begin(), base.strides().end())};
}

Tensor empty_like_base(const BaseLayout& b, const Tensor& like) {
  return op::empty_strided(b.sizes, b.strides, like.dtype(), like.device());
}

ViewGeometry geometry_of(const Tensor& view, const Tensor& base) {
  return {Shape(view.sizes().begin(), view.sizes().end()),
          Shape(view.strides().begin(), view.strides().end()), view.storage_offset() - base.storage_offset()};
}

void refuse_double_backward(const Tensor& g, const char* node) {
  if (grad_mode_enabled() && g.defined() && g.requires_grad())
    throw NotImplementedError(detail::cat_str(
        "[", node, "] create_graph=True through an in-place operation on a view is not supported yet"));
}

/// The history of a view of the base: g placed at the view's elements of a zero base.
class AsStridedViewBackward final : public Node {
 public:
  AsStridedViewBackward(BaseLayout base, ViewGeometry geo) : base_(std::move(base)), geo_(std::move(geo)) {}
  std::string name() const override { return "AsStridedBackward0"; }
  variable_list apply(variable_list&& g) override {
    refuse_double_backward(g[0], "AsStridedBackward0");
    AutoExcludeAutograd guard;
    Tensor z = empty_like_base(base_, g[0]);
    op::zero_(z);
    Tensor region = op::as_strided(z, geo_.sizes, geo_.strides, geo_.offset);
    op::copy_(region, g[0]);
    return {z};
  }

 private:
  BaseLayout base_;
  ViewGeometry geo_;
};

/// The base's history after an in-place op `fn` on one of its views.
class CopySlices final : public Node {
 public:
  CopySlices(BaseLayout base, ViewGeometry geo, std::shared_ptr<Node> fn)
      : base_(std::move(base)), geo_(std::move(geo)), fn_(std::move(fn)) {}
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }
  variable_list apply(variable_list&& g) override {
    refuse_double_backward(g[0], "CopySlices");
    AutoExcludeAutograd guard;
    Tensor result = empty_like_base(base_, g[0]);
    op::copy_(result, g[0]);
    Tensor region = op::as_strided(result, geo_.sizes, geo_.strides, geo_.offset);
    variable_list res = fn_->apply({op::clone(region, MemoryFormat::Contiguous)});
    if (res[0].defined())
      op::copy_(region, res[0]);
    else
      op::fill_(region, 0);
    res[0] = std::move(result);
    return res;
  }

 private:
  BaseLayout base_;
  ViewGeometry geo_;
  std::shared_ptr<Node> fn_;
};

void set_view_of_base_history(const Tensor& view, AutogradMeta* m, Edge base_edge) {
  const Tensor& base = m->view_base_;
  auto v = std::make_shared<AsStridedViewBackward>(layout_of(base), geometry_of(view, base));
  std::vector<Edge> edges;
  edges.push_back(std::move(base_edge));
  v->set_next_edges(std::move(edges));
  m->grad_fn_ = std::move(v);
  m->output_nr_ = 0;
  m->view_version_ = view.impl()->version();
}

}  // namespace

void refresh_view_history(const Tensor& view, AutogradMeta* m) {
  m->view_version_ = view.impl()->version();
  Edge base_edge = gradient_edge(m->view_base_);
  if (!base_edge.valid()) return;
  if (!starts_at_lowest_address(m->view_base_))
    throw NotImplementedError(detail::cat_str("[autograd] the base of this view (", m->view_base_.describe(),
                                              ") was modified in place and is not dense; recomputing "
                                              "the view's history is not supported yet"));
  set_view_of_base_history(view, m, std::move(base_edge));
}

void set_view_base(const Tensor& view, const Tensor& self) {
  AutogradMeta* vm = meta_of(view);
  if (!vm) return;  // an integer view: no history
  AutogradMeta* sm = meta_of(self);
  vm->view_base_ = sm && sm->view_base_.defined() ? sm->view_base_ : self;
  vm->view_version_ = view.impl()->version();
}

void rebase_inplace(const Tensor& self, const std::shared_ptr<Node>& fn) {
  AutogradMeta* m = meta_of(self);
  if (!m || !m->view_base_.defined()) {
    rebase_history(self, fn);
    return;
  }
  const Tensor base = m->view_base_;
  auto copy_slices = std::make_shared<CopySlices>(layout_of(base), geometry_of(self, base), fn);
  std::vector<Edge> edges;
  edges.push_back(gradient_edge(base));
  for (size_t i = 1; i < fn->next_edges().size(); ++i) edges.push_back(fn->next_edges()[i]);
  copy_slices->set_next_edges(std::move(edges));
  rebase_history(base, copy_slices);
  set_view_of_base_history(self, m, Edge(copy_slices, 0));
}

// ---- saved variables ----

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_defined_ = true;
  version_ = t.impl()->version();
  is_output_ = is_output;
  if (is_output) {
    data_ = shallow_alias(t);
    AutogradMeta* m = meta_of(t);
    output_requires_grad_ = m && m->grad_fn_;
    output_nr_ = m ? m->output_nr_ : 0;
    // Note [Forward-mode AD]: the alias shares the output's tangent slot, so a formula differentiated
    // in forward mode (forward over reverse) sees the saved output as the dual tensor it is.
    if (m && m->fw_) ensure_meta(data_)->fw_ = m->fw_;
  } else {
    data_ = t;
  }
}

void throw_backward_twice(const std::string& node_name) {
  throw RuntimeError(detail::cat_str(
      "[", node_name,
      "] Trying to backward through the graph a second time (or directly access saved tensors after "
      "they have already been freed). Saved intermediate values of the graph are freed when you call "
      ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
      "graph a second time or if you need to access saved tensors after calling backward."));
}

void SavedVariable::check(const std::string& name) const {
  if (was_released_) throw_backward_twice(name);
  const uint64_t now = data_.impl()->version();
  if (now != version_)
    throw RuntimeError(detail::cat_str(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [",
        name, "] saved version ", version_, ", now at version ", now, " (", data_.describe(),
        "). Hint: the in-place op ran after this tensor was saved for backward; "
        "use its out-of-place form or clone() before modifying it."));
}

Tensor SavedVariable::unpack_named(const std::string& name) const {
  if (!was_defined_) return Tensor();
  check(name);
  return data_;
}

Tensor SavedVariable::unpack(Node* owner) const {
  if (!was_defined_) return Tensor();
  // Fast path: names are only built for an error.
  if (was_released_ || data_.impl()->version() != version_) check(owner ? owner->name() : "backward");
  if (is_output_ && output_requires_grad_ && owner && grad_mode_enabled()) {
    // create_graph: give the saved output its history back (see engine.h).
    Tensor t = shallow_alias(data_);
    set_history(t, owner->shared_from_this(), output_nr_);
    if (AutogradMeta* dm = meta_of(data_); dm && dm->fw_) ensure_meta(t)->fw_ = dm->fw_;
    return t;
  }
  return data_;
}

// ---- leaves ----

namespace {
// Note [Gradient layout]: as PyTorch's layout contract, a leaf's .grad has the leaf's strides when the
// leaf is dense in some order (a channels-last weight or input gets a channels-last gradient), else
// row-major strides; an incoming gradient in another layout is copied into that one.
bool obeys_layout(const Tensor& grad, const Tensor& variable) {
  if (!is_non_overlapping_and_dense(variable)) return grad.is_contiguous();
  for (int64_t d = 0; d < grad.dim(); ++d) {
    const int64_t stride = grad.strides()[d];
    if (grad.sizes()[d] != 1 ? stride != variable.strides()[d] : stride == 0) return false;
  }
  return true;
}

// enforce_grad_layout_policy(False), per thread as PyTorch's: a stealable gradient is kept in its own layout.
thread_local bool t_enforce_grad_layout = true;

/// A copy of grad in the leaf's layout (recorded under create_graph: copy_ is differentiable).
Tensor copy_in_layout(const Tensor& grad, const Tensor& variable) {
  if (variable.is_contiguous() || !is_non_overlapping_and_dense(variable))
    return op::clone(grad, MemoryFormat::Contiguous);
  Tensor out = empty_like_in(variable, grad.dtype(), MemoryFormat::Preserve);
  op::copy_(out, grad);
  return out;
}
}  // namespace

bool grad_layout_enforced() { return t_enforce_grad_layout; }
void set_grad_layout_enforced(bool enabled) { t_enforce_grad_layout = enabled; }

Tensor cast_to_grad_dtype(Tensor grad, const Tensor& variable) {
  const AutogradMeta* m = meta_of(variable);
  if (m != nullptr && m->any_grad_dtype_) return grad;
  const ScalarType want = m != nullptr && m->grad_dtype_ ? *m->grad_dtype_ : variable.dtype();
  return grad.dtype() == want ? grad : op::cast(grad, want);
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  // Two threads' backward may reach one leaf (Note [Backward without the GIL]).
  std::lock_guard<std::mutex> lock(mutex_);
  AutogradMeta* m = ensure_meta(variable);
  if (!std::ranges::equal(g.sizes(), variable.sizes()))
    throw ValueError(detail::cat_str("[AccumulateGrad] the gradient has shape ", shape_str(g.sizes()),
                                     " but the leaf has shape ", shape_str(variable.sizes())));
  g = cast_to_grad_dtype(std::move(g), variable);  // the engine cast it already (then a no-op)
  if (!m->grad_.defined()) {
    // Steal the incoming gradient only if nobody else can see or mutate it:
    // one handle, its own storage, in the leaf's layout, and no graph to keep.
    const bool exclusive = g.impl_ptr().use_count() == 1 && g.impl()->storage().use_count() == 1 &&
                           !g.impl()->is_view() && (!t_enforce_grad_layout || obeys_layout(g, variable)) &&
                           !g.requires_grad() && !g.impl()->is_wrapped_number();
    if (!grad_mode_enabled() && exclusive)
      m->grad_ = std::move(g);
    else
      m->grad_ = copy_in_layout(g, variable);  // recorded under create_graph
  } else if (!grad_mode_enabled()) {
    op::add_(m->grad_, g, 1);
  } else {
    m->grad_ = op::add(m->grad_, g, 1);
  }
  return {};
}

// ---- the engine ----

namespace {

/// Feeds the user's output gradients into the graph.
class GraphRoot final : public Node {
 public:
  GraphRoot(std::vector<Edge> roots, variable_list grads) : Node(UINT64_MAX), grads_(std::move(grads)) {
    next_edges_ = std::move(roots);
  }
  variable_list apply(variable_list&&) override { return std::move(grads_); }
  std::string name() const override { return "GraphRoot"; }
  uint32_t num_inputs() const override { return 0; }

 private:
  variable_list grads_;
};

struct Capture {
  uint32_t input_nr;
  size_t output_index;
};

struct ReadyItem {
  uint64_t sequence_nr;
  uint64_t order;  // when it became ready (ties: first ready runs first)
  Node* fn;
  bool operator<(const ReadyItem& o) const {
    // std::priority_queue pops the largest: highest sequence_nr, then lowest order.
    return std::tie(sequence_nr, o.order) < std::tie(o.sequence_nr, order);
  }
};

void accumulate_into(variable_list& buffer, uint32_t pos, Tensor&& g) {
  Tensor& slot = buffer[pos];
  if (!slot.defined())
    slot = std::move(g);
  else
    slot = op::add(slot, g, 1);
}

std::atomic<bool> g_anomaly_mode{false};

void check_anomaly(const Node& fn, const variable_list& out) {
  AutoExcludeAutograd guard;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined() || (!is_floating(out[i].dtype()) && !is_complex(out[i].dtype()))) continue;
    Tensor nan_count = op::sum(op::ne(out[i], out[i]), {}, false, ScalarType::Int64);
    if (*nan_count.data<int64_t>() != 0)
      throw RuntimeError(detail::cat_str("[detect_anomaly] Function '", fn.name(),
                                         "' returned nan values in its ", i, "th output (", out[i].describe(),
                                         ")"));
  }
}

}  // namespace

bool anomaly_mode_enabled() { return g_anomaly_mode; }
void set_anomaly_mode_enabled(bool enabled) { g_anomaly_mode = enabled; }

variable_list run_backward(const std::vector<Edge>& roots, variable_list grads, bool keep_graph,
                           bool create_graph, const std::vector<Edge>& inputs, bool accumulate) {
  GradModeGuard mode(create_graph);
  auto root = std::make_shared<GraphRoot>(roots, std::move(grads));

  // 1. dependency counts (Note [Engine ordering]); `order` lists nodes in DFS discovery order.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> discovered{root.get()};
  {
    std::unordered_set<Node*> seen{root.get()};
    std::vector<Node*> stack{root.get()};
    while (!stack.empty()) {
      Node* fn = stack.back();
      stack.pop_back();
      for (const Edge& e : fn->next_edges()) {
        if (!e.valid()) continue;
        Node* next = e.function.get();
        ++deps[next];
        if (seen.insert(next).second) {
          stack.push_back(next);
          discovered.push_back(next);
        }
      }
    }
  }

  // Which nodes run, and which gradients are captured (only when `inputs` is given).
  std::unordered_map<Node*, std::vector<Capture>> captures;
  std::unordered_set<Node*> needed;
  const bool filtered = !inputs.empty();
  if (filtered) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Edge& e = inputs[i];
      Node* fn = e.function.get();
      if (accumulate && dynamic_cast<AccumulateGrad*>(fn)) {
        needed.insert(fn);
      } else {
        captures[fn].push_back({e.input_nr, i});
      }
    }
    // A node is needed if any next node is: iterate to a fixed point in
    // reverse discovery order (children are usually discovered after parents).
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = discovered.rbegin(); it != discovered.rend(); ++it) {
        Node* fn = *it;
        if (needed.count(fn)) continue;
        for (const Edge& e : fn->next_edges()) {
          Node* next = e.function.get();
          // a captured node is a target even if it does not run itself
          if (next && (needed.count(next) || captures.count(next))) {
            needed.insert(fn);
            changed = true;
            break;
          }
        }
      }
    }
  }
  auto is_needed = [&](Node* fn) { return !filtered || needed.count(fn) > 0; };
  auto is_target = [&](Node* fn) { return !filtered || needed.count(fn) > 0 || captures.count(fn) > 0; };

  variable_list captured(inputs.size());
  std::unordered_map<Node*, variable_list> buffers;
  std::priority_queue<ReadyItem> ready;
  uint64_t order = 0;
  ready.push({root->sequence_nr(), order++, root.get()});

  while (!ready.empty()) {
    Node* fn = ready.top().fn;
    ready.pop();
    variable_list in;
    if (auto it = buffers.find(fn); it != buffers.end()) {
      in = std::move(it->second);
      buffers.erase(it);
    }
    in.resize(fn->num_inputs());

    // tensor hooks: a leaf's hooks, then the hooks registered on this node's inputs
    if (auto* acc = dynamic_cast<AccumulateGrad*>(fn)) {
      if (AutogradMeta* m = meta_of(acc->variable)) {
        for (auto& hook : m->leaf_hooks_) {
          if (hook->removed || !in[0].defined()) continue;
          Tensor r = (*hook)(in[0]);
          if (r.defined()) in[0] = std::move(r);
        }
      }
    }
    for (auto& [nr, hook] : fn->pre_hooks()) {
      if (hook->removed || nr >= in.size() || !in[nr].defined()) continue;
      Tensor r = (*hook)(in[nr]);
      if (r.defined()) in[nr] = std::move(r);
    }
    if (filtered) {
      if (auto it = captures.find(fn); it != captures.end())
        for (const Capture& c : it->second)
          if (c.input_nr < in.size()) captured[c.output_index] = in[c.input_nr];
      if (!is_needed(fn)) continue;
    }

    const bool any_defined =
        fn == root.get() || std::ranges::any_of(in, [](const Tensor& t) { return t.defined(); });
    variable_list out;
    if (any_defined) {
      // Note [Observation]: named as PyTorch's profiler names a node's evaluation and the node.
      std::optional<profiler::RecordScope> evaluate, node;
      if (detail::observing(kObserveProfiler)) [[unlikely]] {
        const auto seq = static_cast<int64_t>(fn->sequence_nr());
        evaluate.emplace("autograd::engine::evaluate_function: " + fn->name(), profiler::EventKind::Backward, seq);
        node.emplace(fn->name(), profiler::EventKind::Backward, seq);
      }
      if (fn->post_hooks().empty()) {
        out = fn->apply(std::move(in));
      } else {
        variable_list received = in;
        out = fn->apply(std::move(in));
        for (auto& hook : fn->post_hooks()) {
          if (hook->removed) continue;
          variable_list r = (*hook)(out, received);
          if (!r.empty()) out = std::move(r);
        }
      }
      if (g_anomaly_mode) check_anomaly(*fn, out);
    }
    if (!keep_graph) fn->release_variables();
    const auto& edges = fn->next_edges();
    if (any_defined)
      FB_INTERNAL_ASSERT(out.size() == edges.size() || edges.empty(), fn->name(), " returned ", out.size(),
                         " gradients for ", edges.size(), " inputs");
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.function.get();
      if (!is_target(next)) continue;
      if (any_defined && i < out.size() && out[i].defined()) {
        // Note [Gradient dtype]: cast before the sum of several producers' gradients, as PyTorch.
        if (next->sequence_nr() == UINT64_MAX)
          if (auto* acc = dynamic_cast<AccumulateGrad*>(next))
            out[i] = cast_to_grad_dtype(std::move(out[i]), acc->variable);
        auto [it, inserted] = buffers.try_emplace(next);
        if (inserted) it->second.resize(next->num_inputs());
        accumulate_into(it->second, e.input_nr, std::move(out[i]));
      }
      if (--deps[next] == 0) {
        ready.push({next->sequence_nr(), order++, next});
      }
    }
  }
  return captured;
}

}  // namespace flambeau::autograd
