#pragma once
// flambeau-autograd's graph: nodes, edges, saved variables, the autograd
// metadata of a tensor, and the engine that runs backward.
//
// A tensor that requires grad either is a leaf (no grad_fn; gradients
// accumulate into its `.grad` through an AccumulateGrad node) or was made by
// a differentiable op (its grad_fn is the Node that op recorded, and
// output_nr says which output of that node it is). A Node's next_edges point
// to the grad_fn (or AccumulateGrad) of each forward input, in the order of
// the op's inputs; an invalid edge means "this input needs no gradient".
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/tensor.h"

namespace flambeau::autograd {

using variable_list = std::vector<Tensor>;
class Node;

struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  Edge() = default;
  Edge(std::shared_ptr<Node> fn, uint32_t nr) : function(std::move(fn)), input_nr(nr) {}
  bool valid() const { return function != nullptr; }
};

/// Called with the gradient flowing into one input of a node (a tensor hook,
/// retain_grad). Returns the gradient to use instead, or an undefined Tensor
/// to keep it.
class FunctionPreHook {
 public:
  virtual ~FunctionPreHook() = default;
  virtual Tensor operator()(const Tensor& grad) = 0;
  bool removed = false;
};

/// Called after a node ran: (gradients it produced for its forward inputs,
/// gradients it received for its forward outputs). May return replacements
/// for the produced gradients (empty: keep them).
class FunctionPostHook {
 public:
  virtual ~FunctionPostHook() = default;
  virtual variable_list operator()(const variable_list& grad_inputs, const variable_list& grad_outputs) = 0;
  bool removed = false;
};

/// Process-wide counter giving every node its creation order (Note [Engine ordering]).
uint64_t next_sequence_nr();

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node() : sequence_nr_(next_sequence_nr()) {}
  explicit Node(uint64_t sequence_nr) : sequence_nr_(sequence_nr) {}
  /// Frees the subgraph iteratively: a chain of a million nodes must not overflow the stack.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Gradients of the forward inputs (one per next edge) from the gradients
  /// of the forward outputs (one per input of this node).
  virtual variable_list apply(variable_list&& grads) = 0;
  virtual std::string name() const = 0;
  /// Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}
  /// Number of gradients apply() takes (forward outputs that carry history).
  virtual uint32_t num_inputs() const { return 1; }

  uint64_t sequence_nr() const { return sequence_nr_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  void set_next_edges(std::vector<Edge>&& edges) { next_edges_ = std::move(edges); }
  /// True if forward input i needs a gradient (its edge is valid).
  bool needs(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }

  std::vector<std::pair<uint32_t, std::shared_ptr<FunctionPreHook>>>& pre_hooks() { return pre_hooks_; }
  std::vector<std::shared_ptr<FunctionPostHook>>& post_hooks() { return post_hooks_; }

 protected:
  uint64_t sequence_nr_;
  std::vector<Edge> next_edges_;
  std::vector<std::pair<uint32_t, std::shared_ptr<FunctionPreHook>>> pre_hooks_;
  std::vector<std::shared_ptr<FunctionPostHook>> post_hooks_;
};

// ---- forward-mode AD ----

// Note [Forward-mode AD]
// A dual tensor carries a tangent (its forward gradient) beside its value,
// for the active *dual level* (fb.autograd.forward_ad.dual_level; one level
// at a time, as PyTorch: nesting raises). The tangent lives in the tensor's
// AutogradMeta (a ForwardGrad slot), so a dual tensor is an ordinary Tensor
// and every call on it goes through the Autograd layer (needs_autograd, Note
// [Dispatch] in core). Each generated Autograd kernel computes the result's
// tangent from its inputs' tangents by the op's forward formula
// (derivatives.yaml's `result:`; Note [Forward formulas] in gen_autograd.py).
// The formula runs with forward grad disabled on the thread
// (ForwardGradDisabled): it sees its inputs as plain values, so a tangent
// never gets a tangent of its own; grad mode stays as it was, so a tangent
// that requires grad records reverse-mode history (reverse over forward).
// Exiting the level resets every tangent made in it (the level keeps weak
// references to the slots). While a level is active every call goes through
// the Autograd layer (core's g_forward_ad_active), and each view op records
// its result's base (fw_view_base_), so an in-place op writing a tangent into
// a view of a tensor without one first gives the base a zero tangent laid out
// as its storage and the view the same view of it (prepare_inplace_forward):
// `out = zeros(n); out[i] = dual` leaves `out` with the tangent. Composites are differentiated through the ops
// they call; an op with a backward but no forward formula raises
// NotImplementedError naming it; ops with no entry (comparisons, argmax)
// give results without tangents. Forward grads are not computed under
// no_grad (PyTorch computes them there too: a known difference).
struct ForwardGrad {
  Tensor tangent;
};

/// Enters a dual level and returns its number (0: one level at a time).
int64_t enter_dual_level();
/// Exits `level` (the active one), resetting every tangent made in it.
void exit_dual_level(int64_t level);
/// The active level, or -1.
int64_t current_dual_level();
/// True while a level is active and forward grads are not disabled on this thread.
bool forward_grad_enabled();

/// While alive, tangents are invisible on this thread: forward formulas run on plain values.
class ForwardGradDisabled {
 public:
  ForwardGradDisabled();
  ~ForwardGradDisabled();
  ForwardGradDisabled(const ForwardGradDisabled&) = delete;
  ForwardGradDisabled& operator=(const ForwardGradDisabled&) = delete;

 private:
  bool prev_;
};

/// t's tangent at the active level (undefined when it has none or forward grads are disabled).
Tensor fw_grad(const Tensor& t);
/// The tangent of an in-place op's self: written into self's own tangent when self is a view that has
/// one (a view of its base's tangent, so the base follows), else set as set_fw_grad.
void set_fw_grad_inplace(const Tensor& self, const Tensor& tangent, const char* op);
/// A tangent laid out as `primal` (same strides, storage offset and storage size): what make_dual
/// gives a dual tensor, so as_strided reads the tangent where it reads the primal.
Tensor tangent_with_layout_of(const Tensor& primal, const Tensor& tangent);
/// Records that `view`, made by a view op from `self`, views self's base (forward mode).
void record_fw_view(const Tensor& view, const Tensor& self);
/// The tangent an in-place op on self updates: self's own, or for a view without one, the same view of
/// its base's tangent (made zero, laid out as the base, if the base has none); raises NotImplementedError
/// for a view whose base is unknown or whose base's tangent is laid out otherwise.
Tensor prepare_inplace_forward(const Tensor& self, const Tensor& self_tan, const char* op);
/// Gives t an empty tangent slot (if it has none), which a SavedVariable of t then shares.
void ensure_fw_slot(const Tensor& t);
/// Gives t a tangent at the active level (an undefined one removes it); checks its shape and dtype.
void set_fw_grad(const Tensor& t, const Tensor& tangent, const char* op);

// ---- per-tensor metadata (Note [Autograd slot] in core's autograd_meta.h) ----

class AutogradMeta final : public AutogradMetaInterface {
 public:
  bool requires_grad() const override { return requires_grad_ || grad_fn_ != nullptr; }
  bool needs_autograd() const override {
    return requires_grad_ || grad_fn_ != nullptr || (fw_ && fw_->tangent.defined() && forward_grad_enabled());
  }
  void set_requires_grad(bool value, TensorImpl* self) override;
  const Tensor& grad() const override { return grad_; }
  void set_grad(const Tensor& grad) override { grad_ = grad; }
  bool is_leaf() const override { return grad_fn_ == nullptr; }

  bool requires_grad_ = false;  // the leaf flag
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  uint32_t output_nr_ = 0;
  std::weak_ptr<Node> grad_accumulator_;
  bool retains_grad_ = false;
  /// Hooks of a leaf, run by its AccumulateGrad before accumulating.
  std::vector<std::shared_ptr<FunctionPreHook>> leaf_hooks_;
  // Note [Gradient dtype]: Tensor.grad_dtype of a leaf, PyTorch's: unset (nullopt, any_grad_dtype_ false),
  // gradients are cast to the leaf's own dtype; set to a dtype, they are cast to that one; set to None
  // (any_grad_dtype_), they keep theirs. The engine casts each gradient on its way into the leaf (before
  // gradients from several producers are summed, and before the leaf's hooks see it), for backward and
  // autograd.grad alike; `.grad = g` must have that dtype.
  std::optional<ScalarType> grad_dtype_;
  bool any_grad_dtype_ = false;
  // Note [In-place on views]: set for a view recorded by a view op.
  Tensor view_base_;           // the tensor at the root of the view chain
  uint64_t view_version_ = 0;  // the storage's version when grad_fn_ was last right
  // Note [Forward-mode AD]: the tangent slot (shared with the level, which resets it at exit), and for a
  // view made while a level was active, the tensor at the root of its view chain.
  std::shared_ptr<ForwardGrad> fw_;
  Tensor fw_view_base_;
};

/// The metadata of t, or null if it has none.
inline AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}
/// The metadata of t, created if missing.
inline AutogradMeta* ensure_meta(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.impl()->ensure_autograd_meta());
}

/// Whether AccumulateGrad keeps a gradient it takes over in the leaf's layout (Note [Gradient layout]); per
/// thread, true unless enforce_grad_layout_policy(False) turned it off (PyTorch's switch).
bool grad_layout_enforced();
void set_grad_layout_enforced(bool enabled);

/// A gradient arriving at leaf `variable`, cast to its gradient dtype (Note [Gradient dtype]).
Tensor cast_to_grad_dtype(Tensor grad, const Tensor& variable);

/// Accumulates into a leaf's `.grad` (Note [Engine ordering]: runs first among ready nodes).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable) : Node(UINT64_MAX), variable(std::move(variable)) {}
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  Tensor variable;

 private:
  std::mutex mutex_;  // serializes writes to variable's .grad from concurrent backward runs
};

/// The edge a gradient for `t` flows into: its grad_fn, or its leaf accumulator
/// (created on first use). Invalid if t does not require grad.
Edge gradient_edge(const Tensor& t);
/// Gives a view whose storage was written since its history was recorded the
/// history "view of its base's current history" (Note [In-place on views]).
void refresh_view_history(const Tensor& view, AutogradMeta* m);
std::shared_ptr<Node> grad_accumulator(const Tensor& t);

/// Makes `out` the output `output_nr` of `fn` (a fresh result of a differentiable op).
void set_history(const Tensor& out, const std::shared_ptr<Node>& fn, uint32_t output_nr = 0);
/// The same for a tensor modified in place: its old history becomes fn's input.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn);
/// For the result of an in-place op `fn` on self: rebase_history, or, if self
/// is a recorded view, rebase its base (Note [In-place on views]).
void rebase_inplace(const Tensor& self, const std::shared_ptr<Node>& fn);
/// Records that `view` (made by a view op from `self`) views self's base.
void set_view_base(const Tensor& view, const Tensor& self);
/// RuntimeError for in-place ops on leaves that require grad (or views of
/// them) outside no_grad; NotImplementedError for in-place ops on views that
/// autograd did not record (a view taken in no_grad, or of a tensor that did
/// not require grad then) or whose base is not contiguous.
void check_inplace(const Tensor& self, bool other_requires_grad, const char* op);

/// A new TensorImpl viewing the same memory as t, with no autograd metadata.
Tensor shallow_alias(const Tensor& t);

// ---- saved tensors ----

/// A tensor saved for backward. Records the version counter at save time
/// (Note [Version counter] in core's tensor_impl.h); unpacking after an
/// in-place change raises. An output of the saving node is stored as an alias
/// without history (saving the output itself would make a reference cycle
/// output -> grad_fn -> output); unpack() gives it the node back as grad_fn
/// when grad mode is on, so create_graph differentiates through it.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  /// `owner` is the node this was saved for (its name goes into errors).
  Tensor unpack(Node* owner) const;
  /// For tensors saved by a Python Function: checks only (no history re-attached).
  Tensor unpack_named(const std::string& name) const;
  void reset() {
    data_ = Tensor();
    was_released_ = true;
  }
  bool defined() const { return data_.defined(); }

 private:
  void check(const std::string& name) const;
  Tensor data_;
  uint64_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool was_defined_ = false;
  bool was_released_ = false;
  bool output_requires_grad_ = false;
};

[[noreturn]] void throw_backward_twice(const std::string& node_name);

// ---- the engine ----

/// Anomaly detection: when on, the engine checks every gradient a node
/// produces for NaN and raises naming the node.
bool anomaly_mode_enabled();
void set_anomaly_mode_enabled(bool enabled);

/// Runs backward from `roots` (edges of the outputs) seeded with `grads`.
/// If `inputs` is non-empty, only the gradients flowing into those edges are
/// computed; with accumulate=false they are returned (autograd.grad) and no
/// leaf accumulates, with accumulate=true the leaves among them accumulate
/// into .grad (backward(inputs=...)) and non-leaves get .grad set.
variable_list run_backward(const std::vector<Edge>& roots, variable_list grads, bool keep_graph,
                           bool create_graph, const std::vector<Edge>& inputs, bool accumulate);

/// Registers the Autograd-key kernel of every differentiable op (formulas.cpp).
void register_autograd_kernels();

}  // namespace flambeau::autograd
