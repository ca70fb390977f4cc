// Process-wide runtime settings: threads, grad mode, the ABI tag, the CPU
// kernels' settings registry (Note [Settings]).
#include "../settings.h"
#include "common.h"
#include "flambeau/abi.h"
#include "flambeau/autocast.h"
#include "flambeau/dispatch.h"
#include "flambeau/elementwise_math.h"
#include "flambeau/error.h"
#include "flambeau/inference_mode.h"
#include "flambeau/parallel.h"
#include "flambeau/random.h"

namespace flambeau::python {

void init_runtime(py::module_& m) {
  m.def("get_num_threads", &get_num_threads,
        "Threads used for intra-op parallelism (kernels and OpenBLAS).\n"
        "\n"
        ">>> flambeau_core.get_num_threads() >= 1\n"
        "True");
  m.def("set_num_threads", &set_num_threads, py::arg("n"),
        "Sets the number of threads for kernels and OpenBLAS.\n"
        "\n"
        ">>> n = flambeau_core.get_num_threads()\n"
        ">>> flambeau_core.set_num_threads(1)\n"
        ">>> flambeau_core.get_num_threads()\n"
        "1\n"
        ">>> flambeau_core.set_num_threads(n)");
  m.def("default_num_threads", &default_num_threads,
        "CPUs in this process's affinity mask, capped by the container's CPU quota (flambeau's; the\n"
        "number of threads used when set_num_threads was not called).\n"
        "\n"
        ">>> flambeau_core.default_num_threads() >= 1\n"
        "True");
  m.def("is_grad_enabled", &grad_mode_enabled,
        "True unless gradients are disabled on this thread (no_grad).\n"
        "\n"
        ">>> flambeau_core.is_grad_enabled()\n"
        "True");
  m.def("_set_grad_enabled", &set_grad_mode_enabled, py::arg("enabled"));
  // Note [Inference tensors]: flambeau_autograd's inference_mode sets this thread's switch.
  m.def("_set_inference_mode", &set_inference_mode, py::arg("enabled"));
  m.def("_is_inference_mode_enabled", &inference_mode_enabled);
  m.def(
      "manual_seed", [](py::handle seed) { manual_seed(as_seed(seed, "manual_seed")); }, py::arg("seed"),
      "Seeds the default random generator (rand, randn, shuffling).");
  m.def("initial_seed", [] { return default_generator().initial_seed(); });
  m.def("_abi_tag", &core_abi_tag, "Note [ABI tag]: the tag core was built with.");
  // Introspection of the dispatcher (Note [Dispatch], Note [Kernel trace]).
  m.def(
      "_has_kernel",
      [](const std::string& name, const std::string& key) {
        static const std::pair<const char*, DispatchKey> keys[] = {{"CPU", DispatchKey::CPU},
                                                                   {"CUDA", DispatchKey::CUDA},
                                                                   {"Autograd", DispatchKey::Autograd},
                                                                   {"Generic", DispatchKey::Generic},
                                                                   {"Composite", DispatchKey::Composite},
                                                                   {"PrivateUse1", DispatchKey::PrivateUse1},
                                                                   {"Meta", DispatchKey::Meta}};
        for (const auto& [n, k] : keys) {
          if (key != n) continue;
          const OpBase* op = OpBase::find(name);
          return op != nullptr && op->has_kernel(k);
        }
        throw ValueError("[_has_kernel] unknown dispatch key '" + key +
                         "' (CPU, CUDA, Autograd, Generic, Composite, PrivateUse1, Meta)");
      },
      py::arg("op"), py::arg("key"),
      "True if a kernel of exactly this dispatch key is registered for the op (by its C++ name).");
  m.def("_registered_ops", &OpBase::registered_names, "The names of the ops with a registered kernel.");
  // Note [Autocast]: the per-thread state flambeau_core.amp.autocast drives.
  m.def("_set_autocast_enabled", &set_autocast_enabled, py::arg("enabled"));
  m.def("_is_autocast_enabled", &is_autocast_enabled);
  m.def(
      "_set_autocast_dtype",
      [](py::handle dtype) { set_autocast_dtype(parse_dtype(dtype, ScalarType::BFloat16, "autocast")); },
      py::arg("dtype"));
  m.def("_get_autocast_dtype", &get_autocast_dtype);
  m.def("_set_autocast_cache_enabled", &set_autocast_cache_enabled, py::arg("enabled"));
  m.def("_is_autocast_cache_enabled", &is_autocast_cache_enabled);
  m.def("_autocast_increment_nesting", &autocast_increment_nesting);
  m.def("_autocast_decrement_nesting", &autocast_decrement_nesting);
  m.def("_clear_autocast_cache", &clear_autocast_cache);
  m.def("_autocast_cache_size", &autocast_cache_size);
  m.def(
      "_autocast_policy",
      [](const std::string& name) -> py::object {
        const OpBase* op = OpBase::find(name);
        if (op == nullptr) throw ValueError("[_autocast_policy] no op named '" + name + "'");
        static const char* const names[] = {"", "lower", "fp32", "promote"};
        const auto p = static_cast<int>(op->autocast_policy());
        return p == 0 ? py::object(py::none()) : py::object(py::str(names[p]));
      },
      py::arg("op"), "Note [Autocast]: the op's policy from the table (lower, fp32, promote), or None.");
  m.def(
      "_elementwise_math_ops",
      [] {
        py::list unary, rounding, binary;
#define FB_LIST_NAME(name, ...) unary.append(#name);
        FB_FLOAT_UNARY_MATH(FB_LIST_NAME)
#undef FB_LIST_NAME
#define FB_LIST_NAME(name, ...) rounding.append(#name);
        FB_FLOAT_ROUNDING(FB_LIST_NAME)
#undef FB_LIST_NAME
#define FB_LIST_NAME(name, kind, ...) binary.append(py::make_tuple(#name, #kind));
        FB_BINARY_MATH(FB_LIST_NAME)
#undef FB_LIST_NAME
        return py::dict(py::arg("float_unary") = unary, py::arg("rounding") = rounding,
                        py::arg("binary") = binary);
      },
      "Note [Elementwise math list]: the ops of the lists every backend expands, as {'float_unary': [name], "
      "'rounding': [name], 'binary': [(name, dtype rule)]}.");
  m.def("_kernel_trace_start", &detail::kernel_trace_start,
        "Note [Kernel trace]: records the ops this thread dispatches to a device kernel.");
  m.def("_kernel_trace_stop", &detail::kernel_trace_stop,
        "Stops the kernel trace; returns [op, device type, 'own' | 'Generic'] rows.");
  m.def(
      "_settings",
      [] {
        py::list out;
        for (const settings::Info& i : settings::list())
          out.append(py::dict(py::arg("name") = i.name, py::arg("env") = i.env, py::arg("values") = i.values,
                              py::arg("is_flag") = i.is_flag, py::arg("settable") = i.settable,
                              py::arg("doc") = i.doc));
        return out;
      },
      "Note [Settings]: every setting of flambeau_core.backends.cpu as a dict (name, env, values, is_flag, "
      "settable, doc).");
  m.def("_get_setting", &settings::get, py::arg("name"),
        "A setting's value by name, as a string ('True'/'False' for a flag).");
  m.def("_set_setting", &settings::set, py::arg("name"), py::arg("value"),
        "Sets a setting by the name of its value; ValueError naming the setting and the allowed values.");
  m.def("_settings_environment_errors", &settings::environment_errors,
        "The FLAMBEAU_* overrides that held an unknown value when core loaded (each ignored).");
}

}  // namespace flambeau::python
