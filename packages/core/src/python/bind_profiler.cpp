// The profiler's recorder (Note [Observation]) for flambeau_core/profiler.py.
#include "common.h"
#include "flambeau/observe.h"

namespace flambeau::python {

void init_profiler(py::module_& m) {
  m.def(
      "_profiler_start",
      [](bool record_shapes, bool profile_memory) {
        profiler::start(profiler::ProfilerConfig{record_shapes, profile_memory});
      },
      py::arg("record_shapes"), py::arg("profile_memory"),
      "Note [Observation]: starts recording ops, ranges, backward nodes and (profile_memory) allocations.");
  m.def(
      "_profiler_stop",
      [] {
        std::vector<profiler::Event> events = profiler::stop();
        py::list out(events.size());
        for (size_t i = 0; i < events.size(); ++i) {
          profiler::Event& e = events[i];
          py::list shapes(e.shapes.size());
          for (size_t j = 0; j < e.shapes.size(); ++j) shapes[j] = py::cast(e.shapes[j]);
          out[i] = py::make_tuple(e.name, static_cast<int>(e.kind), e.start_ns, e.end_ns, e.thread, e.parent,
                                  e.sequence_nr, e.self_cpu_memory, e.self_device_memory, e.bytes,
                                  e.total_allocated, e.device, shapes, py::cast(e.dtypes), e.address,
                                  py::cast(e.output_shape), e.thread_index);
        }
        return out;
      },
      "Stops recording; returns (name, kind, start_ns, end_ns, thread, parent, sequence_nr, self_cpu_memory, "
      "self_device_memory, bytes, total_allocated, device, shapes, dtypes, address, output_shape, thread_index) per event.");
  m.def("_profiler_enabled", &profiler::is_active, "True while a profiler session records.");
  m.def("_profiler_now_ns", &profiler::now_ns, "The clock of the profiler's event times, in nanoseconds.");
  m.def(
      "_record_function_enter",
      [](const std::string& name, int kind) {
        return profiler::range_begin(name, static_cast<profiler::EventKind>(kind));
      },
      py::arg("name"), py::arg("kind") = 1, "Opens a range on this thread; returns the token for the exit.");
  m.def("_record_function_exit", &profiler::range_end, py::arg("token"), "Closes a range _record_function_enter opened.");
}

}  // namespace flambeau::python
