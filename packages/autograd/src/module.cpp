// flambeau_autograd._C: registers autograd into core (Note [Autograd slot],
// Note [Dispatch]) and attaches the autograd API to core's Tensor class.
#include <algorithm>

#include "python_function.h"

namespace flambeau::autograd {
namespace {

class Factory final : public AutogradMetaFactory {
 public:
  std::unique_ptr<AutogradMetaInterface> make() const override { return std::make_unique<AutogradMeta>(); }
};
const Factory g_factory;

/// Tensor.retain_grad(): stores the gradient flowing into a non-leaf in its .grad.
class RetainGradHook final : public FunctionPreHook {
 public:
  explicit RetainGradHook(std::weak_ptr<TensorImpl> target) : target_(std::move(target)) {}
  Tensor operator()(const Tensor& grad) override {
    auto impl = target_.lock();
    if (!impl) return Tensor();
    AutogradMeta* m = ensure_meta(Tensor(impl));
    m->grad_ = m->grad_.defined() ? op::add(m->grad_, grad, 1) : op::clone(grad, MemoryFormat::Contiguous);
    return Tensor();
  }

 private:
  std::weak_ptr<TensorImpl> target_;
};

struct HookHandle {
  std::shared_ptr<FunctionPreHook> pre;
  std::shared_ptr<FunctionPostHook> post;
  void remove() {
    if (pre) pre->removed = true;
    if (post) post->removed = true;
  }
};

void check_grad_assignable(const Tensor& t, const Tensor& g) {
  FB_CHECK_VALUE(std::ranges::equal(t.sizes(), g.sizes()), "[grad] assigned grad has shape ",
                 shape_str(g.sizes()), " but the tensor has shape ", shape_str(t.sizes()));
  const AutogradMeta* m = meta_of(t);
  const ScalarType want = m != nullptr && m->grad_dtype_ ? *m->grad_dtype_ : t.dtype();
  // PyTorch raises RuntimeError here (not TypeError).
  FB_CHECK((m != nullptr && m->any_grad_dtype_) || g.dtype() == want, "[grad] assigned grad has dtype ",
           dtype_name(g.dtype()), " but the tensor's grad_dtype is ", dtype_name(want),
           " (its dtype unless grad_dtype was set; grad_dtype = None allows any dtype)");
  FB_CHECK(g.device() == t.device(), "[grad] assigned grad is on ", g.device().str(),
           " but the tensor is on ", t.device().str());
}

// Note [Backward without the GIL]
// backward() and autograd.grad() release the GIL for the whole engine run, so
// other Python threads run meanwhile (a data loader thread, a second model's
// backward: PyTorch does the same). Whatever calls back into Python from the
// engine takes the GIL itself: tensor and node hooks, custom Functions
// (python_function.cpp), and every release of a Python object by a tensor,
// node or storage that dies during backward (Note [Python objects in
// deleters] in core's flambeau/python/bindings.h). retain_grad and the
// anomaly check are C++ only. Two threads may run backward at once: each run
// has its own queue and buffers, and AccumulateGrad locks the leaf it writes.
// Arguments are converted before, and results after, with the GIL held.

/// The engine's entry point for backward() and grad().
py::list run_backward_py(const std::vector<Tensor>& outputs,
                         const std::vector<std::optional<Tensor>>& grad_outputs, bool keep_graph,
                         bool create_graph, const std::vector<Tensor>& inputs, bool allow_unused,
                         bool accumulate) {
  FB_CHECK_VALUE(grad_outputs.size() == outputs.size(), "[backward] got ", outputs.size(), " tensors but ",
                 grad_outputs.size(), " gradients");
  std::vector<Edge> roots;
  variable_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    FB_CHECK(out.requires_grad(), "[backward] element ", i,
             " of tensors does not require grad and does not have a grad_fn (", out.describe(), ")");
    roots.push_back(gradient_edge(out));
    if (grad_outputs[i]) {
      Tensor g = *grad_outputs[i];
      FB_CHECK_VALUE(std::ranges::equal(g.sizes(), out.sizes()), "[backward] mismatch in shape: grad_output[",
                     i, "] has shape ", shape_str(g.sizes()), " and output[", i, "] has shape ",
                     shape_str(out.sizes()));
      if (g.dtype() != out.dtype()) g = op::cast(g, out.dtype());
      grads.push_back(std::move(g));
    } else {
      FB_CHECK_VALUE(out.numel() == 1,
                     "[backward] grad can be implicitly created only for scalar outputs, got a tensor "
                     "of shape ",
                     shape_str(out.sizes()), "; pass a gradient of that shape (e.g. ones_like(out))");
      grads.push_back(ones_like(out));
    }
  }
  std::vector<Edge> input_edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    FB_CHECK(inputs[i].requires_grad(), "[grad] one of the differentiated Tensors (input ", i,
             ") does not require grad");
    input_edges.push_back(gradient_edge(inputs[i]));
  }
  variable_list result;
  {
    py::gil_scoped_release no_gil;  // Note [Backward without the GIL]
    result = run_backward(roots, std::move(grads), keep_graph, create_graph, input_edges, accumulate);
    if (accumulate) {
      // Leaves accumulated in the engine; non-leaf inputs get .grad here.
      GradModeGuard mode(create_graph);
      for (size_t i = 0; i < inputs.size(); ++i) {
        AutogradMeta* m = meta_of(inputs[i]);
        if (const Tensor& g = result[i]; g.defined() && m && m->grad_fn_)
          m->grad_ = m->grad_.defined() ? op::add(m->grad_, g, 1) : op::clone(g, MemoryFormat::Contiguous);
      }
    }
  }

  py::list out;
  if (accumulate) return out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& g = result[i];
    FB_CHECK(g.defined() || allow_unused, "[grad] one of the differentiated Tensors (input ", i,
             ") appears to not have been used in the graph. Set allow_unused=True if this is the desired "
             "behavior.");
    out.append(g.defined() ? py::cast(g) : py::none());
  }
  return out;
}

py::object node_or_none(const std::shared_ptr<Node>& fn) { return fn ? py::cast(fn) : py::none(); }

void init_node(py::module_& m) {
  py::class_<Node, std::shared_ptr<Node>>(m, "Node",
                                          "A backward function of the autograd graph (Tensor.grad_fn).\n"
                                          "\n"
                                          "Every Node is of this one class (PyTorch makes a class per "
                                          "function, MulBackward0, ...): name() says\n"
                                          "which function it is.\n"
                                          "\n"
                                          ">>> x = flambeau_core.tensor([1.0, 2.0], requires_grad=True)\n"
                                          ">>> y = x * 3\n"
                                          ">>> isinstance(y.grad_fn, flambeau_autograd.Node), "
                                          "y.grad_fn.name()\n"
                                          "(True, 'MulBackward0')")
      .def("name", &Node::name,
           "The name of the backward function (MulBackward0, AccumulateGrad, ...; PyTorch's\n"
           "AccumulateGrad says torch::autograd::AccumulateGrad).\n"
           "\n"
           ">>> x = flambeau_core.tensor([1.0], requires_grad=True)\n"
           ">>> (x * 2).grad_fn.name(), (x * 2).grad_fn.next_functions[0][0].name()\n"
           "('MulBackward0', 'AccumulateGrad')")
      .def_property_readonly("next_functions",
                             [](const Node& n) {
                               py::tuple t(n.next_edges().size());
                               for (size_t i = 0; i < n.next_edges().size(); ++i) {
                                 const Edge& e = n.next_edges()[i];
                                 t[i] = py::make_tuple(node_or_none(e.function), e.input_nr);
                               }
                               return t;
                             })
      .def_property_readonly("_sequence_nr", &Node::sequence_nr)
      .def(
          "register_prehook",
          [](Node& n, py::object fn) {
            auto hook = std::make_shared<PyTensorHook>(std::move(fn));
            n.pre_hooks().emplace_back(0, hook);
            return HookHandle{hook, nullptr};
          },
          "fn(grad) on the gradient of this node's first output before it runs; may return a new grad.\n"
          "\n"
          "PyTorch's hook takes and returns the tuple of every output's gradient; this one the first "
          "output's\n"
          "gradient alone. Returns a RemovableHandle.\n"
          "\n"
          ">>> x = flambeau_core.tensor([1.0, 2.0], requires_grad=True)\n"
          ">>> y = x * 3\n"
          ">>> handle = y.grad_fn.register_prehook(lambda grad: grad * 2)\n"
          ">>> y.sum().backward()\n"
          ">>> x.grad.tolist()\n"
          "[6.0, 6.0]\n"
          ">>> handle.remove()")
      .def(
          "register_hook",
          [](Node& n, py::object fn) {
            auto hook = std::make_shared<PyNodePostHook>(std::move(fn));
            n.post_hooks().push_back(hook);
            return HookHandle{nullptr, hook};
          },
          "fn(grad_inputs, grad_outputs) after this node ran; may return new grad_inputs.\n"
          "\n"
          "Returns a RemovableHandle.\n"
          "\n"
          ">>> x = flambeau_core.tensor([1.0, 2.0], requires_grad=True)\n"
          ">>> y = x * 3\n"
          ">>> seen = []\n"
          ">>> handle = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: "
          "seen.append(grad_outputs[0].tolist()))\n"
          ">>> y.sum().backward()\n"
          ">>> seen, x.grad.tolist()\n"
          "([[1.0, 1.0]], [3.0, 3.0])")
      .def("__repr__", [](const Node& n) { return "<" + n.name() + " object>"; })
      .def_property_readonly("variable", [](const Node& n) -> py::object {
        if (auto* acc = dynamic_cast<const AccumulateGrad*>(&n)) return py::cast(acc->variable);
        throw py::attribute_error("'" + n.name() + "' has no attribute 'variable'");
      });
}

void init_tensor_methods(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<TensorImpl, std::shared_ptr<TensorImpl>>>(
      py::module_::import("flambeau_core").attr("Tensor"));
  cls.def_property(
         "grad", [](const Tensor& t) { return t.grad(); },
         [](const Tensor& t, py::object g) {
           if (g.is_none()) {
             if (meta_of(t)) meta_of(t)->grad_ = Tensor();
             return;
           }
           Tensor gt = g.cast<Tensor>();
           check_grad_assignable(t, gt);
           ensure_meta(t)->grad_ = gt;
         },
         "The gradient accumulated by backward() (None until then). Assignable.")
      .def_property(
          "grad_dtype",
          [](const Tensor& t) -> py::object {
            const AutogradMeta* m = meta_of(t);
            FB_CHECK(m == nullptr || !m->grad_fn_,
                     "[grad_dtype] can only be accessed on leaf tensors (this one was made by ",
                     m ? m->grad_fn_->name() : "", ")");
            if (m != nullptr && m->any_grad_dtype_) return py::none();
            return py::cast(m != nullptr && m->grad_dtype_ ? *m->grad_dtype_ : t.dtype());
          },
          [](const Tensor& t, py::handle value) {
            FB_CHECK(!meta_of(t) || !meta_of(t)->grad_fn_,
                     "[grad_dtype] can only be set on leaf tensors (this one was made by ",
                     meta_of(t) ? meta_of(t)->grad_fn_->name() : "", ")");
            FB_CHECK(value.is_none() || py::isinstance<ScalarType>(value),
                     "[grad_dtype] grad_dtype must be a dtype or None, but got ",
                     std::string(py::str(py::type::handle_of(value).attr("__name__"))));
            AutogradMeta* m = ensure_meta(t);
            if (value.is_none()) {
              m->grad_dtype_.reset();
              m->any_grad_dtype_ = true;
              return;
            }
            const auto dtype = value.cast<ScalarType>();
            FB_CHECK(!m->grad_.defined() || m->grad_.dtype() == dtype,
                     "[grad_dtype] cannot set grad_dtype to ", dtype_name(dtype),
                     " because there is already a gradient with dtype ", dtype_name(m->grad_.dtype()),
                     ": clear it first (.grad = None), or set the gradient's dtype");
            m->grad_dtype_ = dtype;
            m->any_grad_dtype_ = false;
          },
          "The dtype backward gives this leaf's .grad (Note [Gradient dtype]): the tensor's dtype unless set; "
          "set to a dtype, the engine casts each incoming gradient to it; set to None, gradients keep their "
          "dtype. Leaves only. `.grad = g` must match it.\n"
          "\n"
          ">>> w = flambeau_core.ones(2, dtype=flambeau_core.bfloat16, requires_grad=True)\n"
          ">>> str(w.grad_dtype)\n"
          "'flambeau.bfloat16'\n"
          ">>> w.grad_dtype = flambeau_core.float32\n"
          ">>> (w * 3).sum().backward()\n"
          ">>> str(w.grad.dtype), w.grad.tolist()\n"
          "('flambeau.float32', [3.0, 3.0])")
      .def_property_readonly(
          "grad_fn",
          [](const Tensor& t) { return node_or_none(meta_of(t) ? meta_of(t)->grad_fn_ : nullptr); },
          "The Node that made this tensor (None for leaves).")
      .def_property_readonly(
          "_needs_autograd", [](const Tensor& t) { return t.impl()->needs_autograd(); },
          "requires_grad, or a forward-mode tangent: whether ops on this tensor must be differentiated.")
      .def_property_readonly("is_leaf", [](const Tensor& t) { return !meta_of(t) || !meta_of(t)->grad_fn_; })
      .def_property_readonly("retains_grad",
                             [](const Tensor& t) { return meta_of(t) && meta_of(t)->retains_grad_; })
      .def_property_readonly("output_nr",
                             [](const Tensor& t) { return meta_of(t) ? meta_of(t)->output_nr_ : 0u; })
      .def(
          "retain_grad",
          [](const Tensor& t) {
            FB_CHECK(t.requires_grad(),
                     "[retain_grad] can't retain_grad on a tensor that doesn't require grad");
            AutogradMeta* m = meta_of(t);
            if (!m->grad_fn_ || m->retains_grad_) return;  // leaves keep .grad anyway
            m->retains_grad_ = true;
            m->grad_fn_->pre_hooks().emplace_back(m->output_nr_,
                                                  std::make_shared<RetainGradHook>(t.impl_ptr()));
          },
          "Keep .grad for this non-leaf tensor after backward().\n"
          "\n"
          ">>> x = flambeau_core.tensor([1.0, 2.0], requires_grad=True)\n"
          ">>> y = x * 3\n"
          ">>> y.retain_grad()\n"
          ">>> (y * y).sum().backward()\n"
          ">>> y.grad.tolist()\n"
          "[6.0, 12.0]")
      .def(
          "register_hook",
          [](const Tensor& t, py::object fn) {
            FB_CHECK(t.requires_grad(),
                     "[register_hook] cannot register a hook on a tensor that doesn't require "
                     "gradient");
            auto hook = std::make_shared<PyTensorHook>(std::move(fn));
            AutogradMeta* m = meta_of(t);
            if (m->grad_fn_)
              m->grad_fn_->pre_hooks().emplace_back(m->output_nr_, hook);
            else
              m->leaf_hooks_.push_back(hook);
            return HookHandle{hook, nullptr};
          },
          py::arg("hook"),
          "Calls hook(grad) when the gradient of this tensor is computed; it may return a new grad.\n"
          "\n"
          "Returns a RemovableHandle.\n"
          "\n"
          ">>> x = flambeau_core.tensor([1.0, 2.0], requires_grad=True)\n"
          ">>> handle = x.register_hook(lambda grad: grad * 10)\n"
          ">>> (x * x).sum().backward()\n"
          ">>> x.grad.tolist()\n"
          "[20.0, 40.0]\n"
          ">>> handle.remove()")
      .def_property(
          "data", [](const Tensor& t) { return shallow_alias(t); },
          [](const Tensor& t, py::handle value) {
            // PyTorch's `x.data = y`: this object (its autograd state, .grad, hooks) now stands for y's
            // memory, dtype and shape; y's device type and, for a tensor requiring grad, a float or
            // complex dtype are required, with PyTorch's errors.
            FB_CHECK_TYPE(py::isinstance<TensorImpl>(value), "Variable data has to be a tensor, but got ",
                          std::string(py::str(py::type::handle_of(value).attr("__name__"))));
            const Tensor data = value.cast<Tensor>();
            FB_CHECK(!t.requires_grad() || is_floating(data.dtype()) || is_complex(data.dtype()),
                     "data set to a tensor that requires gradients must be floating point or complex dtype (got ",
                     dtype_name(data.dtype()), ")");
            FB_CHECK(data.device().type == t.device().type,
                     "Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have incompatible "
                     "tensor type (", t.device().str(), " and ", data.device().str(), ")");
            t.impl()->set_data(*data.impl());
          },
          "This tensor's values outside the graph (as detach(); in-place changes are not tracked). Assigning a "
          "tensor of the same device type re-points this tensor at its memory, dtype and shape, keeping its "
          "autograd state (PyTorch's `x.data = y`).")
      .def(
          "detach", [](const Tensor& t) { return shallow_alias(t); },
          "A new tensor sharing this one's memory, cut from the graph (never requires grad).\n"
          "\n"
          ">>> y = flambeau_core.tensor([1.0, 2.0], requires_grad=True) * 2\n"
          ">>> d = y.detach()\n"
          ">>> d.requires_grad, d.data_ptr() == y.data_ptr()\n"
          "(False, True)")
      .def(
          "detach_",
          [](const Tensor& t) {
            if (AutogradMeta* m = meta_of(t)) {
              m->grad_fn_.reset();
              m->requires_grad_ = false;
              m->output_nr_ = 0;
            }
            return t;
          },
          "Cuts this tensor from the graph in place; returns it.\n"
          "\n"
          ">>> y = flambeau_core.tensor([1.0, 2.0], requires_grad=True) * 2\n"
          ">>> y.detach_() is y, y.requires_grad, y.grad_fn\n"
          "(True, False, None)");
}

// Note [Forward-mode AD] (engine.h): the primitives of flambeau_autograd.forward_ad.
void init_forward_ad(py::module_& m) {
  m.def("_enter_dual_level", &enter_dual_level);
  m.def("_exit_dual_level", &exit_dual_level, py::arg("level"));
  m.def("_current_dual_level", &current_dual_level);
  m.def(
      "_make_dual",
      [](const Tensor& primal, const Tensor& tangent) {
        FB_CHECK(current_dual_level() >= 0,
                 "[forward_ad.make_dual] no dual level is active: make dual tensors inside "
                 "`with fb.autograd.forward_ad.dual_level():`");
        FB_CHECK_TYPE(is_floating(primal.dtype()) || is_complex(primal.dtype()),
                      "[forward_ad.make_dual] expected a floating point or complex primal, got dtype ",
                      dtype_name(primal.dtype()));
        Tensor dual;
        {
          ForwardGradDisabled no_fw;  // a view that keeps the primal's reverse-mode history, not its tangent
          dual = op::view(primal, primal.sizes());
        }
        Tensor laid_out;
        {
          ForwardGradDisabled no_fw;
          laid_out = tangent_with_layout_of(primal, tangent);
        }
        set_fw_grad(dual, laid_out, "forward_ad.make_dual");
        return dual;
      },
      py::arg("tensor"), py::arg("tangent"));
  m.def(
      "_unpack_dual",
      [](const Tensor& t) -> py::tuple {
        const Tensor tangent = fw_grad(t);
        if (!tangent.defined()) return py::make_tuple(t, py::none());
        Tensor primal;
        {
          ForwardGradDisabled no_fw;
          primal = op::view(t, t.sizes());
        }
        return py::make_tuple(primal, tangent);
      },
      py::arg("tensor"));
}

}  // namespace
}  // namespace flambeau::autograd

PYBIND11_MODULE(_C, m) {
  using namespace flambeau::autograd;
  flambeau::python::import_core_and_check_abi("flambeau_autograd._C");
  m.doc() = "flambeau-autograd's compiled engine (use the flambeau_autograd package instead)";
  py::class_<HookHandle>(m, "RemovableHandle",
                         "What register_hook and register_prehook return: remove() takes the hook away.\n"
                         "\n"
                         ">>> x = flambeau_core.tensor([1.0], requires_grad=True)\n"
                         ">>> handle = x.register_hook(lambda grad: grad * 10)\n"
                         ">>> isinstance(handle, flambeau_autograd.RemovableHandle)\n"
                         "True\n"
                         ">>> handle.remove()")
      .def("remove", &HookHandle::remove,
           "Removes the hook; removing it again does nothing.\n"
           "\n"
           ">>> x = flambeau_core.tensor([1.0], requires_grad=True)\n"
           ">>> handle = x.register_hook(lambda grad: grad * 10)\n"
           ">>> handle.remove()\n"
           ">>> (x * x).sum().backward()\n"
           ">>> x.grad.tolist()  # the hook did not run\n"
           "[2.0]");
  init_node(m);
  init_tensor_methods(m);
  init_python_function(m);
  init_forward_ad(m);
  m.def("_run_backward", &run_backward_py, py::arg("outputs"), py::arg("grad_outputs"), py::arg("keep_graph"),
        py::arg("create_graph"), py::arg("inputs"), py::arg("allow_unused"), py::arg("accumulate"));
  m.def(
      "_leaf_has_hooks",
      [](const flambeau::Tensor& t) {
        AutogradMeta* meta = meta_of(t);
        if (meta == nullptr) return false;
        // A removed hook stays in its list, flagged (the engine skips it), so count the live ones.
        const auto live = [](const auto& hook) { return !hook->removed; };
        if (std::ranges::any_of(meta->leaf_hooks_, live)) return true;
        const std::shared_ptr<Node> acc = meta->grad_accumulator_.lock();
        return acc != nullptr &&
               (std::ranges::any_of(acc->pre_hooks(), [&](const auto& p) { return live(p.second); }) ||
                std::ranges::any_of(acc->post_hooks(), live));
      },
      py::arg("tensor"),
      "True if backward would run a hook of this leaf: a tensor hook or one on its AccumulateGrad node "
      "(a post-accumulate-grad hook among them). fb.compile's reuse of a gradient buffer is off then.");
  m.def(
      "_holders",
      [](const flambeau::Tensor& t) {
        return t.defined() ? std::make_pair(t.impl_ptr().use_count(), t.impl()->storage().use_count())
                           : std::make_pair(0L, 0L);
      },
      py::arg("tensor"),
      "(handles of this tensor object, owners of its memory): its .grad slot, Python object, a saved tensor "
      "of a graph, a view ... (this call's own argument counts once). fb.compile reuses a gradient buffer "
      "only while nothing but the leaf and itself holds it.");
  m.def("_set_grad_layout_enforcement_enabled", &set_grad_layout_enforced, py::arg("enabled"));
  m.def("_is_grad_layout_enforcement_enabled", &grad_layout_enforced);
  m.def("_set_anomaly_enabled", &set_anomaly_mode_enabled, py::arg("enabled"));
  m.def("is_anomaly_enabled", &anomaly_mode_enabled);
  register_autograd_kernels();
  flambeau::set_autograd_meta_factory(&g_factory);
}
