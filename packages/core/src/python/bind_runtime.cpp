// Process-wide runtime settings: threads, grad mode, the ABI tag.
#include "common.h"
#include "flambeau/abi.h"
#include "flambeau/parallel.h"
#include "flambeau/random.h"

namespace flambeau::python {

void init_runtime(py::module_& m) {
  m.def("get_num_threads", &get_num_threads, "Threads used for intra-op parallelism (kernels and OpenBLAS).");
  m.def("set_num_threads", &set_num_threads, py::arg("n"),
        "Sets the number of threads for kernels and OpenBLAS.");
  m.def("default_num_threads", &default_num_threads,
        "CPUs in this process's affinity mask, capped by the container's CPU quota.");
  m.def("is_grad_enabled", &grad_mode_enabled);
  m.def("_set_grad_enabled", &set_grad_mode_enabled, py::arg("enabled"));
  m.def(
      "manual_seed", [](py::handle seed) { manual_seed(as_seed(seed, "manual_seed")); }, py::arg("seed"),
      "Seeds the default random generator (rand, randn, shuffling).");
  m.def("initial_seed", [] { return default_generator().initial_seed(); });
  m.def("_abi_tag", &core_abi_tag, "Note [ABI tag]: the tag core was built with.");
}

}  // namespace flambeau::python
