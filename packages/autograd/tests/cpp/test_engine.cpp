// The backward engine (Note [Engine ordering] in src/engine.cpp) on graphs
// built by hand from test nodes: dependency counting and run order,
// accumulation into leaves, retain_graph and released saved tensors,
// `inputs=`, hooks, grad mode during backward, and freeing deep graphs.
// Only engine.cpp is linked: no formula of formulas.cpp is involved.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "engine.h"
#include "testing.h"  // core's C++ test helpers (packages/core/tests/cpp)

using namespace flambeau;
using namespace flambeau::autograd;

using fbtest::error_message;

namespace {

// What flambeau_autograd._C registers at import; here the tests do it.
class MetaFactory final : public AutogradMetaFactory {
 public:
  std::unique_ptr<AutogradMetaInterface> make() const override { return std::make_unique<AutogradMeta>(); }
};
const MetaFactory g_factory;
const bool g_registered = (set_autograd_meta_factory(&g_factory), true);

/// A float64 tensor holding `values` (made without ops).
Tensor vec(const std::vector<double>& values) {
  const auto n = static_cast<int64_t>(values.size());
  Storage s = StorageImpl::allocate(values.size() * sizeof(double), Device());
  Tensor t(std::make_shared<TensorImpl>(std::move(s), ScalarType::Float64, Shape{n}, Shape{1}, 0));
  for (size_t i = 0; i < values.size(); ++i) t.data<double>()[i] = values[i];
  return t;
}

std::vector<double> values(const Tensor& t) {
  REQUIRE(t.defined());
  REQUIRE(t.dtype() == ScalarType::Float64);
  REQUIRE(t.is_contiguous());
  return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
}

Tensor leaf(const std::vector<double>& v) {
  Tensor t = vec(v);
  t.set_requires_grad(true);
  return t;
}

/// A node of a hand-built graph. It logs its name when it runs, sums the
/// gradients it received, and sends `scales[i]` times that sum to next edge i.
class TestNode : public Node {
 public:
  TestNode(std::string name, std::vector<std::string>* log, std::vector<double> scales = {1.0},
           uint32_t num_inputs = 1)
      : name_(std::move(name)), log_(log), scales_(std::move(scales)), num_inputs_(num_inputs) {}

  variable_list apply(variable_list&& grads) override {
    if (log_) log_->push_back(name_);
    ++applied;
    grad_mode_during_apply = grad_mode_enabled();
    std::vector<double> sum;
    for (const Tensor& g : grads) {
      if (!g.defined()) continue;
      const std::vector<double> v = values(g);
      if (sum.empty()) sum.assign(v.size(), 0.0);
      for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
    }
    variable_list out;
    for (double s : scales_) {
      std::vector<double> scaled = sum;
      for (double& x : scaled) x *= s;
      out.push_back(vec(scaled));
    }
    if (!out.empty()) last_output = out[0].data_ptr();
    if (keep_outputs) kept = out;
    return out;
  }
  std::string name() const override { return name_; }
  void release_variables() override { ++released; }
  uint32_t num_inputs() const override { return num_inputs_; }

  int applied = 0;
  int released = 0;
  bool grad_mode_during_apply = false;
  bool keep_outputs = false;  // hold a reference to what apply() returned
  variable_list kept;
  const void* last_output = nullptr;  // data of the first gradient apply() returned

 private:
  std::string name_;
  std::vector<std::string>* log_;
  std::vector<double> scales_;
  uint32_t num_inputs_;
};

std::shared_ptr<TestNode> node(const std::string& name, std::vector<std::string>* log,
                               std::vector<Edge> edges, std::vector<double> scales = {}) {
  if (scales.empty()) scales.assign(edges.size(), 1.0);
  auto n = std::make_shared<TestNode>(name, log, std::move(scales));
  n->set_next_edges(std::move(edges));
  return n;
}

Edge edge(const std::shared_ptr<Node>& n, uint32_t input_nr = 0) { return Edge(n, input_nr); }

/// backward() from one node: seed its single input with `seed`, accumulate into leaves.
void backward(const std::shared_ptr<Node>& root, const Tensor& seed, bool retain_graph = false,
              bool create_graph = false) {
  run_backward({edge(root)}, {seed}, retain_graph, create_graph, {}, /*accumulate=*/true);
}

/// A node saving one tensor for backward, as a formula does.
class SaveNode final : public Node {
 public:
  explicit SaveNode(const Tensor& t) : saved_(t, /*is_output=*/false) {}
  variable_list apply(variable_list&& grads) override {
    (void)saved_.unpack(this);  // raises if released or modified in place
    return {grads[0]};
  }
  std::string name() const override { return "SaveNode"; }
  void release_variables() override { saved_.reset(); }

 private:
  SavedVariable saved_;
};

/// A pass-through node that counts its destructions (deep graphs).
std::atomic<int64_t> g_links_destroyed{0};
class Link final : public Node {
 public:
  ~Link() override { ++g_links_destroyed; }
  variable_list apply(variable_list&& grads) override {
    variable_list out;
    out.push_back(std::move(grads[0]));
    return out;
  }
  std::string name() const override { return "Link"; }
};

std::shared_ptr<Node> chain_of_links(const Edge& bottom, int64_t length) {
  std::shared_ptr<Node> top;
  Edge next = bottom;
  for (int64_t i = 0; i < length; ++i) {
    top = std::make_shared<Link>();
    top->set_next_edges({next});
    next = edge(top);
  }
  return top;
}

}  // namespace

TEST_SUITE("engine.graph") {
  TEST_CASE("a leaf's gradient edge is its accumulator, one per leaf") {
    Tensor x = leaf({1, 2});
    const Edge e = gradient_edge(x);
    REQUIRE(e.valid());
    CHECK(e.input_nr == 0);
    CHECK(e.function->name() == "AccumulateGrad");
    CHECK(gradient_edge(x).function == e.function);
    CHECK(x.impl()->autograd_meta()->is_leaf());
    CHECK_FALSE(gradient_edge(vec({1, 2})).valid());  // needs no gradient
  }

  TEST_CASE("a result's gradient edge is its grad_fn and output number") {
    std::vector<std::string> log;
    auto fn = node("Fn", &log, {});
    Tensor y = vec({1, 2});
    set_history(y, fn, 1);
    const Edge e = gradient_edge(y);
    CHECK(e.function == fn);
    CHECK(e.input_nr == 1);
    CHECK(y.requires_grad());
    CHECK_FALSE(y.impl()->autograd_meta()->is_leaf());
    CHECK(error_message<RuntimeError>([&] { y.set_requires_grad(false); }) ==
          doctest::Contains("you can only change requires_grad flags of leaf tensors"));
  }

  TEST_CASE("integer results never get a history") {
    std::vector<std::string> log;
    Storage s = StorageImpl::allocate(16, Device());
    Tensor i(std::make_shared<TensorImpl>(std::move(s), ScalarType::Int64, Shape{2}, Shape{1}, 0));
    set_history(i, node("Fn", &log, {}));
    CHECK(i.impl()->autograd_meta() == nullptr);
    CHECK_FALSE(i.requires_grad());
  }

  TEST_CASE("sequence numbers grow with creation; leaves and the root come first") {
    std::vector<std::string> log;
    auto a = node("A", &log, {});
    auto b = node("B", &log, {});
    CHECK(b->sequence_nr() > a->sequence_nr());
    Tensor x = leaf({1});
    CHECK(gradient_edge(x).function->sequence_nr() == UINT64_MAX);
  }
}

TEST_SUITE("engine.backward") {
  TEST_CASE("a chain multiplies local gradients into the leaf") {
    std::vector<std::string> log;
    Tensor x = leaf({1, 2});
    auto a = node("A", &log, {gradient_edge(x)}, {2.0});
    auto b = node("B", &log, {edge(a)}, {3.0});
    backward(b, vec({1, 10}));
    CHECK(log == std::vector<std::string>{"B", "A"});
    CHECK(values(x.grad()) == std::vector<double>{6, 60});
  }

  TEST_CASE("a node runs once, after every path to it delivered, in sequence order") {
    // x <- L <- {M1, M2} <- R: L must wait for both, and later nodes run first.
    for (bool reversed : {false, true}) {
      CAPTURE(reversed);
      std::vector<std::string> log;
      Tensor x = leaf({1, 1});
      auto l = node("L", &log, {gradient_edge(x)});
      auto m1 = node("M1", &log, {edge(l)}, {2.0});
      auto m2 = node("M2", &log, {edge(l)}, {3.0});
      auto r = reversed ? node("R", &log, {edge(m2), edge(m1)}) : node("R", &log, {edge(m1), edge(m2)});
      backward(r, vec({1, 1}));
      // The order depends on sequence numbers only, not on the order of the edges.
      CHECK(log == std::vector<std::string>{"R", "M2", "M1", "L"});
      CHECK(l->applied == 1);
      CHECK(values(x.grad()) == std::vector<double>{5, 5});
    }
  }

  TEST_CASE("a short path waits for a long one to the same node") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto l = node("L", &log, {gradient_edge(x)});
    auto a = node("A", &log, {edge(l)}, {10.0});
    auto r = node("R", &log, {edge(l), edge(a)});  // R -> L directly, and R -> A -> L
    backward(r, vec({1}));
    CHECK(log == std::vector<std::string>{"R", "A", "L"});
    CHECK(values(x.grad()) == std::vector<double>{11});
  }

  TEST_CASE("gradients for one node input are summed before it runs") {
    std::vector<std::string> log;
    Tensor x = leaf({0, 0});
    int hook_calls = 0;
    std::vector<double> seen;
    struct Spy final : FunctionPreHook {
      int* calls;
      std::vector<double>* seen;
      Tensor operator()(const Tensor& g) override {
        ++*calls;
        *seen = values(g);
        return Tensor();
      }
    };
    auto spy = std::make_shared<Spy>();
    spy->calls = &hook_calls;
    spy->seen = &seen;
    ensure_meta(x)->leaf_hooks_.push_back(spy);
    auto p = node("P", &log, {gradient_edge(x), gradient_edge(x)}, {1.0, 2.0});  // x used twice
    backward(p, vec({1, 10}));
    CHECK(hook_calls == 1);                     // the leaf's accumulator ran once...
    CHECK(seen == std::vector<double>{3, 30});  // ...with the sum
    CHECK(values(x.grad()) == std::vector<double>{3, 30});
  }

  TEST_CASE("gradients accumulate into .grad across backward calls") {
    std::vector<std::string> log;
    Tensor x = leaf({1, 2});
    auto a = node("A", &log, {gradient_edge(x)}, {2.0});
    backward(a, vec({1, 10}), /*retain_graph=*/true);
    CHECK(values(x.grad()) == std::vector<double>{2, 20});
    const void* first = x.grad().data_ptr();
    backward(a, vec({1, 10}));
    CHECK(values(x.grad()) == std::vector<double>{4, 40});
    CHECK(x.grad().data_ptr() == first);  // added in place under no grad mode
  }

  TEST_CASE("the accumulator takes an unshared gradient as is and copies a shared one") {
    std::vector<std::string> log;
    Tensor x = leaf({1, 2});
    auto a = node("A", &log, {gradient_edge(x)});
    backward(a, vec({1, 1}));
    CHECK(x.grad().data_ptr() == a->last_output);  // taken: nobody else holds it

    Tensor y = leaf({1, 2});
    auto b = node("B", &log, {gradient_edge(y)});
    b->keep_outputs = true;
    backward(b, vec({1, 1}));
    CHECK(y.grad().data_ptr() != b->kept[0].data_ptr());  // copied: the node still holds it
    CHECK(values(y.grad()) == std::vector<double>{1, 1});
  }

  TEST_CASE("a gradient of the wrong shape for a leaf is an error naming both shapes") {
    std::vector<std::string> log;
    Tensor x = leaf({1, 2});
    auto a = node("A", &log, {gradient_edge(x)});
    CHECK(error_message<ValueError>([&] { backward(a, vec({1, 2, 3})); }) ==
          doctest::Contains("[AccumulateGrad] the gradient has shape (3,) but the leaf has shape (2,)"));
  }

  TEST_CASE("a node returning the wrong number of gradients is an internal error") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    Tensor y = leaf({1});
    auto a = node("Broken", &log, {gradient_edge(x), gradient_edge(y)}, {1.0});
    const doctest::String msg = error_message<RuntimeError>([&] { backward(a, vec({1})); });
    CHECK(msg == doctest::Contains("flambeau internal error"));
    CHECK(msg == doctest::Contains("Broken returned 1 gradients for 2 inputs"));
  }

  TEST_CASE("an undefined gradient counts as delivered and runs nothing") {
    struct HalfNode final : Node {
      variable_list apply(variable_list&& grads) override { return {Tensor(), grads[0]}; }
      std::string name() const override { return "Half"; }
    };
    std::vector<std::string> log;
    Tensor x = leaf({1});
    Tensor y = leaf({1});
    auto a = node("A", &log, {gradient_edge(y)});
    auto b = node("B", &log, {gradient_edge(x)});
    auto half = std::make_shared<HalfNode>();
    half->set_next_edges({edge(a), edge(b)});
    backward(half, vec({5}));
    CHECK(log == std::vector<std::string>{"B"});
    CHECK(a->applied == 0);
    CHECK(a->released == 1);  // still released: its part of the graph is done
    CHECK_FALSE(y.grad().defined());
    CHECK(values(x.grad()) == std::vector<double>{5});
  }

  TEST_CASE("nodes run with grad mode set to create_graph, restored afterwards") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto a = node("A", &log, {gradient_edge(x)});
    backward(a, vec({1}), true, /*create_graph=*/false);
    CHECK_FALSE(a->grad_mode_during_apply);
    CHECK(grad_mode_enabled());
    {
      GradModeGuard no_grad(false);
      backward(a, vec({1}), true, /*create_graph=*/true);
      CHECK(a->grad_mode_during_apply);
      CHECK_FALSE(grad_mode_enabled());
    }
  }
}

TEST_SUITE("engine.retain_graph") {
  TEST_CASE("without retain_graph every node that ran releases its saved variables") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto a = node("A", &log, {gradient_edge(x)});
    auto b = node("B", &log, {edge(a)});
    backward(b, vec({1}), /*retain_graph=*/true);
    CHECK(a->released == 0);
    CHECK(b->released == 0);
    backward(b, vec({1}), /*retain_graph=*/false);
    CHECK(a->released == 1);
    CHECK(b->released == 1);
  }

  TEST_CASE("backward through released saved tensors raises and says what to do") {
    Tensor x = leaf({1});
    auto s = std::make_shared<SaveNode>(vec({4}));
    s->set_next_edges({gradient_edge(x)});
    backward(s, vec({1}), /*retain_graph=*/true);
    backward(s, vec({1}));  // frees the saved tensor
    CHECK(values(x.grad()) == std::vector<double>{2});
    const doctest::String msg = error_message<RuntimeError>([&] { backward(s, vec({1})); });
    CHECK(msg == doctest::Contains("[SaveNode] Trying to backward through the graph a second time"));
    CHECK(msg == doctest::Contains("Specify retain_graph=True"));
  }

  TEST_CASE("a saved tensor modified in place raises naming the node and both versions") {
    Tensor x = leaf({1});
    Tensor w = vec({4});
    auto s = std::make_shared<SaveNode>(w);
    s->set_next_edges({gradient_edge(x)});
    w.impl()->bump_version();  // an in-place op after the save
    const doctest::String msg = error_message<RuntimeError>([&] { backward(s, vec({1})); });
    CHECK(msg ==
          doctest::Contains("one of the variables needed for gradient computation has been modified by an "
                            "inplace operation: [SaveNode] saved version 0, now at version 1"));
    CHECK_FALSE(x.grad().defined());
  }
}

TEST_SUITE("engine.inputs") {
  TEST_CASE("inputs= returns the gradients flowing into them and leaves .grad alone") {
    // x <- A <- B -> C -> y: only the path to x runs.
    std::vector<std::string> log;
    Tensor x = leaf({1});
    Tensor y = leaf({1});
    auto a = node("A", &log, {gradient_edge(x)}, {2.0});
    auto c = node("C", &log, {gradient_edge(y)});
    auto b = node("B", &log, {edge(a), edge(c)}, {1.0, 5.0});
    const variable_list grads =
        run_backward({edge(b)}, {vec({3})}, false, false, {gradient_edge(x)}, /*accumulate=*/false);
    REQUIRE(grads.size() == 1);
    CHECK(values(grads[0]) == std::vector<double>{6});
    CHECK(log == std::vector<std::string>{"B", "A"});
    CHECK(c->applied == 0);
    CHECK_FALSE(x.grad().defined());
    CHECK_FALSE(y.grad().defined());
  }

  TEST_CASE("the gradient into a non-leaf is captured without running it") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto a = node("A", &log, {gradient_edge(x)}, {2.0});
    auto b = node("B", &log, {edge(a)}, {7.0});
    const variable_list grads = run_backward({edge(b)}, {vec({1})}, false, false, {edge(a)}, false);
    CHECK(values(grads[0]) == std::vector<double>{7});
    CHECK(a->applied == 0);
  }

  TEST_CASE("backward with inputs= accumulates into the named leaves only") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    Tensor y = leaf({1});
    auto b = node("B", &log, {gradient_edge(x), gradient_edge(y)}, {2.0, 3.0});
    const variable_list grads = run_backward({edge(b)}, {vec({1})}, false, false, {gradient_edge(x)}, true);
    CHECK(values(x.grad()) == std::vector<double>{2});
    CHECK_FALSE(y.grad().defined());
    CHECK_FALSE(grads[0].defined());  // nothing is returned when accumulating
  }
}

TEST_SUITE("engine.hooks") {
  struct Scale final : FunctionPreHook {
    double factor = 1;
    Tensor operator()(const Tensor& g) override {
      std::vector<double> v = values(g);
      for (double& x : v) x *= factor;
      return vec(v);
    }
  };

  TEST_CASE("a pre-hook on a node input replaces the gradient; a removed one is skipped") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto a = node("A", &log, {gradient_edge(x)});
    auto times10 = std::make_shared<Scale>();
    times10->factor = 10;
    auto removed = std::make_shared<Scale>();
    removed->factor = 1000;
    removed->removed = true;
    a->pre_hooks().emplace_back(0, times10);
    a->pre_hooks().emplace_back(0, removed);
    backward(a, vec({2}));
    CHECK(values(x.grad()) == std::vector<double>{20});
  }

  TEST_CASE("a leaf hook runs before accumulation and may replace the gradient") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto half = std::make_shared<Scale>();
    half->factor = 0.5;
    ensure_meta(x)->leaf_hooks_.push_back(half);
    auto a = node("A", &log, {gradient_edge(x)});
    backward(a, vec({8}));
    CHECK(values(x.grad()) == std::vector<double>{4});
  }

  TEST_CASE("a post-hook sees both sides of a node and may replace its outputs") {
    struct Post final : FunctionPostHook {
      std::vector<double> inputs_seen, outputs_seen;
      variable_list operator()(const variable_list& grad_inputs, const variable_list& grad_outputs) override {
        inputs_seen = values(grad_inputs[0]);
        outputs_seen = values(grad_outputs[0]);
        return {vec({-1})};
      }
    };
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto a = node("A", &log, {gradient_edge(x)}, {3.0});
    auto post = std::make_shared<Post>();
    a->post_hooks().push_back(post);
    backward(a, vec({2}));
    CHECK(post->inputs_seen == std::vector<double>{6});   // what A produced for its input
    CHECK(post->outputs_seen == std::vector<double>{2});  // what A received
    CHECK(values(x.grad()) == std::vector<double>{-1});
  }
}

TEST_SUITE("engine.anomaly") {
  TEST_CASE("anomaly mode names the node that produced NaN") {
    std::vector<std::string> log;
    Tensor x = leaf({1});
    auto a = node("NanMaker", &log, {gradient_edge(x)}, {std::numeric_limits<double>::quiet_NaN()});
    set_anomaly_mode_enabled(true);
    const doctest::String msg = error_message<RuntimeError>([&] { backward(a, vec({1}), true); });
    set_anomaly_mode_enabled(false);
    CHECK(msg ==
          doctest::Contains("[detect_anomaly] Function 'NanMaker' returned nan values in its 0th output"));
    backward(a, vec({1}));  // off: no check
    CHECK(std::isnan(values(x.grad())[0]));
  }
}

TEST_SUITE("engine.deep_graphs") {
  TEST_CASE("freeing a chain of a million nodes does not overflow the stack") {
    const int64_t n = 1'000'000;
    g_links_destroyed = 0;
    std::shared_ptr<Node> top = chain_of_links(Edge(), n);
    CHECK(top.use_count() == 1);
    top.reset();  // recursion would need ~100 bytes of stack per level: far more than 8 MiB
    CHECK(g_links_destroyed == n);
  }

  TEST_CASE("a tensor's history of a million nodes is freed with the tensor") {
    const int64_t n = 1'000'000;
    g_links_destroyed = 0;
    Tensor x = leaf({1});
    {
      Tensor y = vec({1});
      set_history(y, chain_of_links(gradient_edge(x), n));
    }
    CHECK(g_links_destroyed == n);
    CHECK(x.requires_grad());  // the leaf outlives its graph
  }

  TEST_CASE("backward through a deep chain runs without recursion") {
    const int64_t n = 100'000;
    Tensor x = leaf({1, 2});
    std::shared_ptr<Node> top = chain_of_links(gradient_edge(x), n);
    backward(top, vec({3, 4}));
    CHECK(values(x.grad()) == std::vector<double>{3, 4});
  }
}
