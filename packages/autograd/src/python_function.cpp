// PyNode: the graph node of a custom Function written in Python. Its
// forward ran under no_grad inside Function.apply; its apply() takes the GIL
// (the engine runs without it) and calls the class's static
// backward(ctx, *grads).
#include "python_function.h"

#include <algorithm>

namespace flambeau::autograd {

Tensor PyTensorHook::operator()(const Tensor& grad) {
  py::gil_scoped_acquire gil;
  py::object r = fn_(grad);
  if (r.is_none()) return Tensor();
  FB_CHECK_TYPE(py::isinstance<TensorImpl>(r), "[hook] a tensor hook must return a Tensor or None, got ",
                py::str(py::type::of(r).attr("__name__")).cast<std::string>());
  Tensor t = r.cast<Tensor>();
  FB_CHECK_VALUE(std::ranges::equal(t.sizes(), grad.sizes()), "[hook] the hook returned a gradient of shape ",
                 shape_str(t.sizes()), " for a gradient of shape ", shape_str(grad.sizes()));
  return t;
}

namespace {
py::tuple to_py_tuple(const variable_list& ts) {
  py::tuple t(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) t[i] = ts[i].defined() ? py::cast(ts[i]) : py::none();
  return t;
}
}  // namespace

variable_list PyNodePostHook::operator()(const variable_list& grad_inputs,
                                         const variable_list& grad_outputs) {
  py::gil_scoped_acquire gil;
  py::object r = fn_(to_py_tuple(grad_inputs), to_py_tuple(grad_outputs));
  if (r.is_none()) return {};
  py::tuple t = py::isinstance<py::tuple>(r) ? py::reinterpret_borrow<py::tuple>(r) : py::make_tuple(r);
  FB_CHECK_VALUE(t.size() == grad_inputs.size(), "[hook] a node hook must return ", grad_inputs.size(),
                 " gradients (or None), got ", t.size());
  variable_list out(t.size());
  for (size_t i = 0; i < t.size(); ++i)
    if (!t[i].is_none()) out[i] = t[i].cast<Tensor>();
  return out;
}

namespace {

struct TensorMeta {
  Shape sizes;
  ScalarType dtype = ScalarType::Float32;
  Device device{DeviceType::CPU};  // materialized zero grads go on the output's device
  bool is_tensor = false;
};

/// True if `from` broadcasts to `to` (so sum_to(to-shaped, from) works).
bool expandable(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

class PyNode final : public Node {
 public:
  ~PyNode() override {
    release_with_gil(ctx);
    release_with_gil(cls);
  }
  std::string name() const override { return name_; }
  uint32_t num_inputs() const override { return static_cast<uint32_t>(outputs.size()); }

  void release_variables() override {
    py::gil_scoped_acquire gil;
    if (ctx) {
      ctx.attr("_saved") = py::none();
      ctx.attr("_freed") = true;
    }
  }

  variable_list apply(variable_list&& grads) override {
    py::gil_scoped_acquire gil;
    const bool materialize = py::cast<bool>(ctx.attr("materialize_grads"));
    py::tuple args(grads.size() + 1);
    args[0] = ctx;
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor g = grads[i];
      if (!g.defined() && materialize && outputs[i].is_tensor)
        g = zeros(outputs[i].sizes, outputs[i].dtype, outputs[i].device);
      args[i + 1] = g.defined() ? py::cast(g) : py::none();
    }
    py::object res = cls.attr("backward")(*args);
    py::tuple r =
        py::isinstance<py::tuple>(res) ? py::reinterpret_borrow<py::tuple>(res) : py::make_tuple(res);
    const size_t n = next_edges_.size();
    if (r.size() < n)
      throw ValueError(detail::cat_str("[", name_, "] backward returned ", r.size(),
                                       " gradients, but forward had ", n, " inputs"));
    for (size_t i = n; i < r.size(); ++i)
      if (!r[i].is_none())
        throw ValueError(detail::cat_str("[", name_, "] backward returned ", r.size(),
                                         " gradients, but forward had ", n, " inputs"));
    variable_list out(n);
    for (size_t i = 0; i < n; ++i) {
      py::handle gi = r[i];
      if (gi.is_none()) continue;
      if (!inputs[i].is_tensor)
        throw RuntimeError(detail::cat_str("[", name_,
                                           "] backward returned a gradient different from None at "
                                           "position ",
                                           i, ", but forward input ", i, " is not a Tensor"));
      FB_CHECK_TYPE(py::isinstance<TensorImpl>(gi), "[", name_,
                    "] backward must return Tensors or None, got ",
                    py::str(py::type::of(gi).attr("__name__")).cast<std::string>(), " at position ", i);
      if (!needs(i)) continue;
      Tensor g = gi.cast<Tensor>();
      const TensorMeta& m = inputs[i];
      if (!std::ranges::equal(g.sizes(), m.sizes)) {
        FB_CHECK_VALUE(expandable(m.sizes, g.sizes()), "[", name_,
                       "] backward returned an invalid gradient at index ", i, ": got shape ",
                       shape_str(g.sizes()), " but expected a shape compatible with ", shape_str(m.sizes));
        g = sum_to(g, m.sizes);
      }
      // A leaf's gradient is cast by the engine, to its grad_dtype (Note [Gradient dtype]).
      if (g.dtype() != m.dtype && !dynamic_cast<AccumulateGrad*>(next_edges_[i].function.get()))
        g = op::cast(g, m.dtype);
      out[i] = std::move(g);
    }
    return out;
  }

  py::object ctx, cls;
  std::string name_;
  std::vector<TensorMeta> inputs, outputs;
};

TensorMeta meta_of_arg(py::handle obj) {
  TensorMeta m;
  if (py::isinstance<TensorImpl>(obj)) {
    Tensor t = obj.cast<Tensor>();
    m.sizes.assign(t.sizes().begin(), t.sizes().end());
    m.dtype = t.dtype();
    m.device = t.device();
    m.is_tensor = true;
  }
  return m;
}

bool contains(const py::object& seq, const Tensor& t) {
  if (seq.is_none()) return false;
  for (py::handle h : seq)
    if (py::isinstance<TensorImpl>(h) && h.cast<Tensor>().is_same(t)) return true;
  return false;
}

/// Calls cls.jvp(ctx, *tangents) (zeros for a tensor input without a tangent, None for other arguments)
/// and gives each tensor output its tangent; an output that is an input is first made a new tensor.
void set_output_tangents(const py::object& cls, const py::object& ctx, const py::args& args,
                         const std::vector<Tensor>& tensors, const std::vector<Tensor>& tangents, py::list& outs) {
  const std::string name = py::str(cls.attr("__name__")).cast<std::string>();
  py::object base = py::module_::import("flambeau_autograd.function").attr("Function").attr("jvp");
  if (py::object(cls.attr("jvp")).is(base))
    throw NotImplementedError(detail::cat_str(
        "[", name, "] a dual tensor (forward-mode AD) reached this custom Function, which defines no jvp: "
        "implement the staticmethod jvp(ctx, *input_tangents) returning the outputs' tangents"));
  // A tensor input without a tangent gets zeros, or None after ctx.set_materialize_grads(False) (as backward).
  const bool materialize = py::cast<bool>(ctx.attr("materialize_grads"));
  py::tuple tangent_args(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!tensors[i].defined() || (!tangents[i].defined() && !materialize))
      tangent_args[i] = py::none();
    else
      tangent_args[i] = py::cast(tangents[i].defined() ? tangents[i] : zeros_like(tensors[i]));
  }
  py::object res;
  {
    ForwardGradDisabled no_fw;
    res = cls.attr("jvp")(ctx, *tangent_args);
  }
  py::tuple out_tangents = py::isinstance<py::tuple>(res) ? py::tuple(res) : py::make_tuple(res);
  FB_CHECK_VALUE(out_tangents.size() == outs.size(), "[", name, ".jvp] returned ", out_tangents.size(),
                 " tangents but forward returned ", outs.size(), " outputs");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!py::isinstance<TensorImpl>(outs[i]) || out_tangents[i].is_none()) continue;
    FB_CHECK_TYPE(py::isinstance<TensorImpl>(out_tangents[i]), "[", name, ".jvp] tangent ", i,
                  " must be a Tensor or None");
    Tensor t = outs[i].cast<Tensor>();
    if (std::ranges::any_of(tensors, [&](const Tensor& x) { return x.is_same(t); })) {
      t = shallow_alias(t);  // never overwrite an input's own tangent
      outs[i] = py::cast(t);
    }
    const std::string where = name + ".jvp";
    set_fw_grad(t, out_tangents[i].cast<Tensor>(), where.c_str());
  }
}

/// Function.apply(*args): runs cls.forward(ctx, *args) under no_grad and, if
/// an input requires grad, makes the outputs the outputs of a PyNode.
py::object function_apply(py::object cls, py::object ctx, py::args args) {
  const size_t n = args.size();
  std::vector<Tensor> tensors(n);
  bool any_requires_grad = false;
  for (size_t i = 0; i < n; ++i) {
    if (py::isinstance<TensorImpl>(args[i])) {
      tensors[i] = args[i].cast<Tensor>();
      any_requires_grad |= tensors[i].requires_grad();
    }
  }
  const bool executable = grad_mode_enabled() && any_requires_grad;
  py::tuple needs_input_grad(n);
  for (size_t i = 0; i < n; ++i)
    needs_input_grad[i] = py::bool_(executable && tensors[i].defined() && tensors[i].requires_grad());
  ctx.attr("needs_input_grad") = needs_input_grad;

  // Note [Forward-mode AD]: a dual input makes Function.jvp(ctx, *tangents) give the outputs' tangents.
  std::vector<Tensor> tangents(n);
  bool fw = false;
  if (forward_grad_enabled())
    for (size_t i = 0; i < n; ++i)
      if (tensors[i].defined()) fw |= (tangents[i] = fw_grad(tensors[i])).defined();

  py::object result;
  {
    AutoExcludeAutograd guard;
    result = cls.attr("forward")(ctx, *args);
  }
  if (!executable && !fw) return result;

  const bool is_tuple = py::isinstance<py::tuple>(result);
  py::list outs = is_tuple ? py::list(result) : py::list(py::make_tuple(result));
  if (!executable) {
    set_output_tangents(cls, ctx, args, tensors, tangents, outs);
    return is_tuple ? py::object(py::tuple(outs)) : py::object(outs[0]);
  }

  auto node = std::make_shared<PyNode>();
  node->ctx = ctx;
  node->cls = cls;
  node->name_ = py::str(cls.attr("__name__")).cast<std::string>() + "Backward";
  std::vector<Edge> edges(n);
  for (size_t i = 0; i < n; ++i) {
    if (tensors[i].defined()) edges[i] = gradient_edge(tensors[i]);
    node->inputs.push_back(meta_of_arg(args[i]));
  }
  node->set_next_edges(std::move(edges));

  py::object dirty = ctx.attr("_dirty"), non_diff = ctx.attr("_non_differentiable");
  for (size_t i = 0; i < outs.size(); ++i) {
    node->outputs.push_back(meta_of_arg(outs[i]));
    if (!py::isinstance<TensorImpl>(outs[i])) continue;
    Tensor t = outs[i].cast<Tensor>();
    if (contains(non_diff, t)) continue;
    const bool is_input = std::ranges::any_of(tensors, [&](const Tensor& x) { return x.is_same(t); });
    if (contains(dirty, t)) {
      FB_CHECK(is_input, "[", node->name_,
               "] mark_dirty() was given a tensor that is not an input of forward");
      check_inplace(t, true, node->name_.c_str());
      if (AutogradMeta* m = meta_of(t); m && m->view_base_.defined())
        throw NotImplementedError(
            detail::cat_str("[", node->name_, "] mark_dirty() on a view is not supported yet"));
      rebase_history(t, node);
      ensure_meta(t)->output_nr_ = static_cast<uint32_t>(i);
    } else {
      if (is_input) {  // an input returned as is: the output is a new tensor object with its own history
        t = shallow_alias(t);
        outs[i] = py::cast(t);
      }
      set_history(t, node, static_cast<uint32_t>(i));
    }
  }

  // Saved tensors: version-checked on access (ctx.saved_tensors).
  py::object to_save = ctx.attr("_to_save");
  if (!to_save.is_none()) {
    py::list saved;
    py::module_ C = py::module_::import("flambeau_autograd._C");
    for (py::handle h : to_save) {
      if (h.is_none()) {
        saved.append(py::none());
        continue;
      }
      FB_CHECK_TYPE(py::isinstance<TensorImpl>(h), "[", node->name_,
                    "] save_for_backward() takes Tensors or None, got ",
                    py::str(py::type::of(h).attr("__name__")).cast<std::string>());
      Tensor t = h.cast<Tensor>();
      bool is_output = false;
      for (py::handle o : outs)
        if (py::isinstance<TensorImpl>(o) && o.cast<Tensor>().is_same(t)) is_output = true;
      saved.append(C.attr("_SavedTensor")(t, is_output, node->name_));
    }
    ctx.attr("_saved") = saved;
    ctx.attr("_to_save") = py::none();
  }
  if (fw) set_output_tangents(cls, ctx, args, tensors, tangents, outs);
  return is_tuple ? py::object(py::tuple(outs)) : py::object(outs[0]);
}

struct PySavedTensor {
  SavedVariable var;
  std::string name;
};

}  // namespace

void init_python_function(py::module_& m) {
  py::class_<PySavedTensor>(m, "_SavedTensor")
      .def(py::init([](const Tensor& t, bool is_output, std::string name) {
        return PySavedTensor{SavedVariable(t, is_output), std::move(name)};
      }))
      .def("unpack", [](const PySavedTensor& s) { return s.var.unpack_named(s.name); });
  m.def("_function_apply", &function_apply, py::arg("cls"), py::arg("ctx"));
}

}  // namespace flambeau::autograd
