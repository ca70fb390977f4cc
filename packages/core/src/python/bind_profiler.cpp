// The profiler's recorder (Note [Observation]) for flambeau_core/profiler.py.
#include <map>
#include <utility>

#include "common.h"  // Python.h first
#include "flambeau/observe.h"

#include <frameobject.h>

namespace flambeau::python {
namespace {

// Note [Cheap recording]: with_stack keeps each frame's code object (a new
// reference) and line; they become "file(line): function" strings at stop.
int walk_frames(uintptr_t* out, int max_frames) {
  PyFrameObject* f = PyThreadState_GetFrame(PyThreadState_Get());
  int n = 0;
  while (f && n < max_frames) {
    out[2 * n] = reinterpret_cast<uintptr_t>(PyFrame_GetCode(f));
    out[2 * n + 1] = static_cast<uintptr_t>(PyFrame_GetLineNumber(f));
    ++n;
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return n;
}

// Most ops run with the GIL released by their binding: the thread's Python
// frames cannot change meanwhile, but reading them takes the GIL again.
int capture_python_stack(uintptr_t* out, int max_frames) {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) return 0;  // a thread with no Python
  if (PyGILState_Check()) return walk_frames(out, max_frames);
  const PyGILState_STATE state = PyGILState_Ensure();
  const int n = walk_frames(out, max_frames);
  PyGILState_Release(state);
  return n;
}

// The frames as strings; releases the code objects the hook took.
py::list symbolise(const std::vector<uintptr_t>& words, std::map<std::pair<uintptr_t, uintptr_t>, py::str>& cache) {
  py::list frames(words.size() / 2);
  for (size_t i = 0; i + 1 < words.size(); i += 2) {
    auto key = std::make_pair(words[i], words[i + 1]);
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto* code = reinterpret_cast<PyCodeObject*>(words[i]);
      py::str filename = py::reinterpret_borrow<py::str>(code->co_filename);
      py::str name = py::reinterpret_borrow<py::str>(code->co_name);
      it = cache.emplace(key, py::str("{}({}): {}").format(filename, words[i + 1], name)).first;
    }
    frames[i / 2] = it->second;
    Py_DECREF(reinterpret_cast<PyObject*>(words[i]));
  }
  return frames;
}

}  // namespace

void init_profiler(py::module_& m) {
  profiler::set_stack_hook(&capture_python_stack);
  m.def(
      "_profiler_start",
      [](bool record_shapes, bool profile_memory, bool with_stack) {
        profiler::start(profiler::ProfilerConfig{record_shapes, profile_memory, with_stack});
      },
      py::arg("record_shapes"), py::arg("profile_memory"), py::arg("with_stack") = false,
      "Note [Observation]: starts recording ops, ranges, backward nodes, device kernels and (profile_memory) "
      "allocations; with_stack: each op's and range's Python stack.");
  m.def(
      "_profiler_stop",
      [] {
        std::vector<profiler::Event> events = profiler::stop();
        std::map<std::pair<uintptr_t, uintptr_t>, py::str> frame_names;
        py::list out(events.size());
        for (size_t i = 0; i < events.size(); ++i) {
          profiler::Event& e = events[i];
          py::list shapes(e.shapes.size());
          for (size_t j = 0; j < e.shapes.size(); ++j) shapes[j] = py::cast(e.shapes[j]);
          out[i] = py::make_tuple(e.name, static_cast<int>(e.kind), e.start_ns, e.end_ns, e.thread, e.parent,
                                  e.sequence_nr, e.self_cpu_memory, e.self_device_memory, e.bytes,
                                  e.total_allocated, e.device, shapes, py::cast(e.dtypes), e.address,
                                  py::cast(e.output_shape), e.thread_index, symbolise(e.stack, frame_names),
                                  e.stream, e.correlation, e.launched_by);
        }
        return out;
      },
      "Stops recording; returns (name, kind, start_ns, end_ns, thread, parent, sequence_nr, self_cpu_memory, "
      "self_device_memory, bytes, total_allocated, device, shapes, dtypes, address, output_shape, thread_index, "
      "stack, stream, correlation, launched_by) per event.");
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
