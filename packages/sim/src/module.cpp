// flambeau_sim._C: registers the simulated device (Note [Simulated device])
// and exposes what flambeau_sim/__init__.py needs to finish the registration:
// the raw backends it wraps in flambeau-alloc's CachingAllocator.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/python/bindings.h"
#include "flambeau_alloc/raw_backend_capsule.h"
#include "sim_device.h"

namespace py = pybind11;
using flambeau::alloc::RawBackend;

namespace {

// raw_backend.h: a backend boxed for alloc's CachingAllocator._from_raw_backend.
py::object boxed(std::unique_ptr<RawBackend> backend) {
  PyObject* capsule = flambeau::alloc::box_raw_backend(std::move(backend));
  if (!capsule) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(capsule);
}

std::optional<size_t> checked_bytes(std::optional<int64_t> n, const char* op, const char* what) {
  if (!n) return std::nullopt;
  FB_CHECK_VALUE(*n >= 0, "[", op, "] ", what, " must be None or >= 0 bytes, got ", *n);
  return static_cast<size_t>(*n);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  flambeau::python::import_core_and_check_abi("flambeau_sim._C");
  m.doc() = "flambeau-sim's compiled bindings (use the flambeau_sim package instead)";

  m.def(
      "_register_backend",
      [](int num_devices, std::optional<int64_t> memory_limit) {
        flambeau::sim::register_backend(num_devices,
                                        checked_bytes(memory_limit, "sim.register", "memory_limit"));
      },
      py::arg("num_devices"), py::arg("memory_limit") = py::none(),
      "Registers the sim backend with core (once; again with the same count: nothing).");
  m.def(
      "_device_memory", [](int index) { return boxed(flambeau::sim::make_device_memory(index)); },
      py::arg("index"));
  m.def("_pinned_memory", [] { return boxed(flambeau::sim::make_pinned_memory()); });
  m.def(
      "_sim_memory",
      [](std::string name, std::optional<int64_t> capacity) {
        return boxed(flambeau::sim::make_sim_memory(
            std::move(name), checked_bytes(capacity, "sim.capped_allocator", "capacity")));
      },
      py::arg("name"), py::arg("capacity") = py::none(),
      "Host pages poisoned on free, at most `capacity` bytes: a raw backend that runs out as a device does.");
  m.def("_install", &flambeau::sim::install_allocators_and_kernels, py::arg("device_allocators"),
        py::arg("pinned_allocator"));
  m.def("_is_registered", &flambeau::sim::is_registered);
  m.def("_device_count", &flambeau::sim::num_devices);
  m.def("_sync_ops", &flambeau::sim::sync_ops,
        "Test support: how many times each op ran synchronously on sim (host fallback, blocking copies).");

  py::class_<flambeau::sim::Latch, std::shared_ptr<flambeau::sim::Latch>>(
      m, "_Latch", "Test support: a sim stream blocked on this latch waits until release().")
      .def("release", &flambeau::sim::Latch::release)
      .def_property_readonly("released", &flambeau::sim::Latch::released);
  m.def(
      "_block_stream",
      [](const std::shared_ptr<flambeau::Stream>& s) {
        auto latch = std::make_shared<flambeau::sim::Latch>();
        flambeau::sim::block_stream(*s, latch);
        return latch;
      },
      py::arg("stream"));
  m.def(
      "_sleep",
      [](const std::shared_ptr<flambeau::Stream>& s, double seconds) {
        flambeau::sim::sleep_on_stream(*s, seconds);
      },
      py::arg("stream"), py::arg("seconds"));
}
