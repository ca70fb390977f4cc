// The dispatcher (Note [Dispatch]): one kernel per key, the Composite and
// device-Generic layers, key selection (device
// key, or Autograd when an argument requires grad and autograd is not
// excluded), the thread-local exclude guards, the missing-kernel errors, and
// the profiler's op events (Note [Observation]).
// The ops here are test-only Op objects, so nothing depends on core's kernels.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "flambeau/dispatch.h"
#include "testing.h"

using namespace flambeau;
using fbtest::error_message;
using fbtest::make_tensor;

namespace {

// Each kernel returns the name of its key, and the Autograd kernel reports the
// key its redispatch below the guard landed on ("Autograd>CPU").
Op<std::string(const Tensor&)> probe("probe");
Op<std::string(const Tensor&)> probe_no_autograd("probe_no_autograd");
Op<std::string(const Tensor&, const Tensor&)> probe2("probe2");
Op<std::string(const std::optional<Tensor>&, const TensorList&)> probe_lists("probe_lists");
Op<std::string(Device)> probe_factory("probe_factory");
Op<std::string(const Tensor&)> probe_unregistered("probe_unregistered");

std::string cpu(const Tensor&) { return "CPU"; }
std::string cuda(const Tensor&) { return "CUDA"; }
std::string autograd(const Tensor& t) {
  AutoExcludeAutograd guard;
  return "Autograd>" + probe(t);
}
std::string cpu2(const Tensor&, const Tensor&) { return "CPU"; }
std::string autograd2(const Tensor&, const Tensor&) { return "Autograd"; }
std::string cpu_lists(const std::optional<Tensor>&, const TensorList&) { return "CPU"; }
std::string autograd_lists(const std::optional<Tensor>&, const TensorList&) { return "Autograd"; }
std::string cpu_factory(Device) { return "CPU"; }

// Registration from static initializers, as kernels of other libraries do.
FB_REGISTER_KERNEL(probe, CPU, cpu);
FB_REGISTER_KERNEL(probe, CUDA, cuda);
FB_REGISTER_KERNEL(probe, Autograd, autograd);
FB_REGISTER_KERNEL(probe_no_autograd, CPU, cpu);
FB_REGISTER_KERNEL(probe2, CPU, cpu2);
FB_REGISTER_KERNEL(probe2, Autograd, autograd2);
FB_REGISTER_KERNEL(probe_lists, CPU, cpu_lists);
FB_REGISTER_KERNEL(probe_lists, Autograd, autograd_lists);
FB_REGISTER_KERNEL(probe_factory, CPU, cpu_factory);

/// A tensor on a (pretend) CUDA device: external host memory that says "cuda:0".
Tensor fake_cuda_tensor() {
  static float cell = 0.0f;
  Storage s = StorageImpl::from_external(&cell, sizeof cell, Device(DeviceType::CUDA, 0), nullptr);
  return Tensor(std::make_shared<TensorImpl>(std::move(s), ScalarType::Float32, Shape{1}, Shape{1}, 0));
}

Tensor requiring_grad(Shape sizes) {
  Tensor t = make_tensor(std::move(sizes));
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST_SUITE("dispatch") {
  TEST_CASE("kernels are registered per key") {
    CHECK(doctest::String(probe.name()) == "probe");
    CHECK(probe.has_kernel(DispatchKey::CPU));
    CHECK(probe.has_kernel(DispatchKey::CUDA));
    CHECK(probe.has_kernel(DispatchKey::Autograd));
    CHECK(probe_no_autograd.has_kernel(DispatchKey::CPU));
    CHECK_FALSE(probe_no_autograd.has_kernel(DispatchKey::Autograd));
    CHECK_FALSE(probe_unregistered.has_kernel(DispatchKey::CPU));
    CHECK(doctest::String(dispatch_key_name(DispatchKey::Autograd)) == "Autograd");
  }

  TEST_CASE("a later registration replaces the kernel of that key only") {
    Op<int(const Tensor&)> op("replaced");
    op.register_kernel(DispatchKey::CPU, [](const Tensor&) { return 1; });
    op.register_kernel(DispatchKey::CUDA, [](const Tensor&) { return 7; });
    Tensor t = make_tensor({1});
    CHECK(op(t) == 1);
    op.register_kernel(DispatchKey::CPU, [](const Tensor&) { return 2; });
    CHECK(op(t) == 2);
    CHECK(op.call_kernel(DispatchKey::CUDA, t) == 7);
  }

  TEST_CASE("the device key comes from the first tensor argument") {
    CHECK(probe(make_tensor({2})) == "CPU");
    CHECK(probe(fake_cuda_tensor()) == "CUDA");
  }

  TEST_CASE("a Device argument selects the key of an op without tensors") {
    CHECK(probe_factory(Device()) == "CPU");
    CHECK(error_message<RuntimeError>([] { probe_factory(Device(DeviceType::CUDA, 0)); }) ==
          doctest::Contains(
              "[probe_factory] cannot run on cuda: flambeau-cuda is not installed (flambeau-core is built "
              "without CUDA: no CUDA kernel); use device='cpu'"));
  }

  TEST_CASE("a tensor that requires grad selects the Autograd kernel, which redispatches below it") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor x = requiring_grad({3});
    CHECK(probe(x) == "Autograd>CPU");
    CHECK(grad_mode_enabled());  // the kernel's guard was undone
    CHECK(probe(make_tensor({3})) == "CPU");
  }

  TEST_CASE("any tensor argument requiring grad counts, including optionals and lists") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor plain = make_tensor({2});
    Tensor x = requiring_grad({2});
    CHECK(probe2(plain, plain) == "CPU");
    CHECK(probe2(plain, x) == "Autograd");
    CHECK(probe2(x, plain) == "Autograd");
    CHECK(probe_lists(std::nullopt, {plain, plain}) == "CPU");
    CHECK(probe_lists(std::nullopt, {plain, x}) == "Autograd");
    CHECK(probe_lists(x, {}) == "Autograd");
    CHECK(probe_lists(plain, {Tensor(), plain}) == "CPU");  // an undefined tensor is skipped
  }

  TEST_CASE("an op without an Autograd kernel runs its device kernel even on tensors requiring grad") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    CHECK(probe_no_autograd(requiring_grad({2})) == "CPU");
  }

  TEST_CASE("AutoExcludeAutograd skips the Autograd layer and nests") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor x = requiring_grad({2});
    {
      AutoExcludeAutograd outer;
      CHECK_FALSE(grad_mode_enabled());
      CHECK(probe(x) == "CPU");
      {
        AutoExcludeAutograd inner;
        CHECK(probe(x) == "CPU");
      }
      CHECK_FALSE(grad_mode_enabled());  // the inner guard restores "excluded", not "enabled"
    }
    CHECK(grad_mode_enabled());
    CHECK(probe(x) == "Autograd>CPU");
  }

  TEST_CASE("GradModeGuard sets grad mode and restores the previous one") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor x = requiring_grad({2});
    {
      GradModeGuard no_grad(false);
      CHECK(probe(x) == "CPU");
      {
        GradModeGuard enable_grad(true);  // enable_grad inside no_grad
        CHECK(grad_mode_enabled());
        CHECK(probe(x) == "Autograd>CPU");
      }
      CHECK_FALSE(grad_mode_enabled());
    }
    CHECK(grad_mode_enabled());
  }

  TEST_CASE("under no_grad a dual level still reaches the Autograd layer, below it nothing does") {
    // Note [Grad mode and below autograd]: no_grad keeps forward mode's tangents, a kernel's own calls do not.
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor x = make_tensor({2});
    struct DualLevel {
      DualLevel() { detail::g_forward_ad_active = true; }
      ~DualLevel() { detail::g_forward_ad_active = false; }
    } level;
    {
      GradModeGuard no_grad(false);
      CHECK_FALSE(grad_mode_enabled());  // kernels record no node
      CHECK(probe(x) == "Autograd>CPU");
      {
        AutoExcludeAutograd below;
        CHECK(probe(x) == "CPU");
        {
          GradModeGuard enable_grad(true);  // enable_grad re-enables recording, as it always did
          CHECK(probe(x) == "Autograd>CPU");
        }
        CHECK(probe(x) == "CPU");  // the guard restores "below", not only "grad mode off"
      }
      CHECK(probe(x) == "Autograd>CPU");
    }
    CHECK(grad_mode_enabled());
  }

  TEST_CASE("grad mode is thread-local") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor x = requiring_grad({2});
    GradModeGuard no_grad(false);
    std::string other_thread;
    bool other_enabled = false;
    std::thread worker([&] {
      other_enabled = grad_mode_enabled();
      other_thread = probe(x);
    });
    worker.join();
    CHECK(other_enabled);
    CHECK(other_thread == "Autograd>CPU");
    CHECK(probe(x) == "CPU");
  }

  TEST_CASE("a missing kernel names the op and the key") {
    Tensor t = make_tensor({1});
    CHECK(error_message<NotImplementedError>([&] { probe_unregistered(t); }) ==
          doctest::Contains("[probe_unregistered] has no kernel for CPU"));
    CHECK(error_message<NotImplementedError>([&] {
            probe_no_autograd.call_kernel(DispatchKey::Autograd, t);
          }) == doctest::Contains("[probe_no_autograd] has no kernel for Autograd"));
  }

  TEST_CASE("a CUDA tensor with no CUDA kernel says flambeau-cuda is not installed") {
    CHECK(error_message<RuntimeError>([] { probe_no_autograd(fake_cuda_tensor()); }) ==
          doctest::Contains(
              "[probe_no_autograd] cannot run on cuda: flambeau-cuda is not installed (flambeau-core "
              "is built without CUDA: no CUDA kernel); use device='cpu'"));
  }

  TEST_CASE("a Generic kernel serves every device without its own kernel") {
    Op<std::string(const Tensor&)> op("generic_probe");
    op.register_kernel(DispatchKey::Generic, [](const Tensor&) { return std::string("Generic"); });
    CHECK(op(make_tensor({1})) == "Generic");
    CHECK(op(fake_cuda_tensor()) == "Generic");
    // A device's own kernel wins over Generic for that device only, whichever is registered first.
    op.register_kernel(DispatchKey::CUDA, [](const Tensor&) { return std::string("CUDA"); });
    CHECK(op(fake_cuda_tensor()) == "CUDA");
    CHECK(op(make_tensor({1})) == "Generic");
    Op<std::string(const Tensor&)> late("generic_late");
    late.register_kernel(DispatchKey::CPU, [](const Tensor&) { return std::string("CPU"); });
    late.register_kernel(DispatchKey::Generic, [](const Tensor&) { return std::string("Generic"); });
    CHECK(late(make_tensor({1})) == "CPU");
    CHECK(late(fake_cuda_tensor()) == "Generic");
  }

  TEST_CASE("run_out on a device with no out kernel runs its Generic kernel, then copies into out") {
    // Note [Structured kernels]: a CPU out kernel and a Generic composition (as the losses have).
    // out= on a device with neither an out kernel nor a kernel of its own runs what the functional
    // form runs there, the Generic kernel, and copies its result into out; the CPU out kernel through
    // the host fallback is only for a device with no kernel at all. The pretend CUDA tensors have no
    // copy kernel in core, so the copy is where this stops: it names copy_, after the Generic ran.
    static int generic_calls = 0;
    Op<Tensor(const Tensor&)> op("out_generic_probe");
    op.register_out_kernel(DispatchKey::CPU,
                           [](const Tensor&, const Tensor&) { FAIL("the CPU out kernel ran"); });
    op.register_kernel(DispatchKey::Generic, [](const Tensor& t) {
      ++generic_calls;
      return t;
    });
    const Tensor out = fake_cuda_tensor();
    CHECK(error_message<RuntimeError>([&] { op.run_out(out, fake_cuda_tensor()); }) ==
          doctest::Contains("[copy_] cannot run on cuda"));
    CHECK(generic_calls == 1);
    // Several results: one copy per defined output.
    using Pair = std::tuple<Tensor, Tensor>;
    static int pair_calls = 0;
    Op<Pair(const Tensor&)> pair("out_generic_pair_probe");
    pair.register_out_kernel(DispatchKey::CPU,
                             [](const Tensor&, const Tensor&, const Tensor&) { FAIL("CPU ran"); });
    pair.register_kernel(DispatchKey::Generic, [](const Tensor& t) {
      ++pair_calls;
      return Pair(t, t);
    });
    const Tensor second = fake_cuda_tensor();
    CHECK(error_message<RuntimeError>([&] { pair.run_out({Tensor(), second}, fake_cuda_tensor()); }) ==
          doctest::Contains("[copy_] cannot run on cuda"));
    CHECK(pair_calls == 1);
    // Without a Generic kernel the device has nothing to run: the op's own error, not copy_'s.
    Op<Tensor(const Tensor&)> cpu_only("out_cpu_only_probe");
    cpu_only.register_out_kernel(DispatchKey::CPU,
                                 [](const Tensor&, const Tensor&) { FAIL("the CPU out kernel ran"); });
    CHECK(error_message<RuntimeError>([&] { cpu_only.run_out(out, fake_cuda_tensor()); }) ==
          doctest::Contains("[out_cpu_only_probe] cannot run on cuda"));
  }

  TEST_CASE("a Composite kernel runs first, on every device and even with autograd on") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Op<std::string(const Tensor&)> op("composite_probe");
    op.register_kernel(DispatchKey::CPU, [](const Tensor&) { return std::string("CPU"); });
    op.register_kernel(DispatchKey::Autograd, [](const Tensor&) { return std::string("Autograd"); });
    op.register_kernel(DispatchKey::Composite, [](const Tensor& t) { return "Composite>" + probe(t); });
    CHECK(op(make_tensor({1})) == "Composite>CPU");
    CHECK(op(requiring_grad({1})) == "Composite>Autograd>CPU");
    CHECK(op(fake_cuda_tensor()) == "Composite>CUDA");
  }

  TEST_CASE("the profiler records op calls, nested, with shapes; the Autograd redispatch is one call") {
    // Note [Observation]
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    CHECK(detail::g_observe.load() == 0);
    Tensor x = requiring_grad({2, 3});
    profiler::start({/*record_shapes=*/true, /*profile_memory=*/false});
    CHECK(detail::observing(kObserveProfiler));
    {
      profiler::RecordScope outer("outer", profiler::EventKind::UserRange);
      CHECK(probe(x) == "Autograd>CPU");
      CHECK(probe2(make_tensor({4}), make_tensor({5})) == "CPU");
    }
    std::vector<profiler::Event> events = profiler::stop();
    CHECK(detail::g_observe.load() == 0);
    REQUIRE(events.size() == 3);
    CHECK(events[0].name == "outer");
    CHECK(events[1].name == "aten::probe");
    CHECK(events[1].parent == 0);
    REQUIRE(events[1].shapes.size() == 1);
    CHECK(events[1].shapes[0] == std::vector<int64_t>{2, 3});
    CHECK(events[2].name == "aten::probe2");
    CHECK(events[2].parent == 0);
    REQUIRE(events[2].shapes.size() == 2);
    CHECK(events[2].shapes[0] == std::vector<int64_t>{4});
    CHECK(events[2].shapes[1] == std::vector<int64_t>{5});
    CHECK(events[2].dtypes == std::vector<std::string>{"float32", "float32"});
    for (const auto& e : events) CHECK(e.start_ns <= e.end_ns);
    CHECK(events[0].start_ns <= events[1].start_ns);
    CHECK(events[2].end_ns <= events[0].end_ns);
    probe(x);  // stopped: nothing recorded
    profiler::start({false, false});
    CHECK(profiler::stop().empty());
    CHECK_THROWS(([] {
      profiler::start({false, false});
      try {
        profiler::start({false, false});
      } catch (...) {
        profiler::stop();
        throw;
      }
    })());
  }

  TEST_CASE("call_kernel bypasses key selection") {
    fbtest::FlagAutogradFactory factory;
    fbtest::AutogradFactoryScope scope(&factory);
    Tensor x = requiring_grad({1});
    CHECK(probe.call_kernel(DispatchKey::CPU, x) == "CPU");
    CHECK(probe.call_kernel(DispatchKey::CUDA, x) == "CUDA");
  }
}
