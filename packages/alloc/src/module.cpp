// flambeau_alloc._C: Python bindings of the caching allocator.
// CachingAllocator is bound as a subclass of core's flambeau_core.Allocator
// (registered by core with a shared_ptr holder), so flambeau_core.set_allocator
// accepts it and every Storage can hold it (Note [Allocator registry]).
#include <Python.h>
#include <frameobject.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "caching_allocator.h"
#include "flambeau/device_backend.h"
#include "flambeau/error.h"
#include "flambeau/python/bindings.h"

namespace py = pybind11;
using flambeau::alloc::CachingAllocator;

namespace {

void add_stat_array(py::dict& d, const char* name, const flambeau::alloc::StatArray& a) {
  static const char* pools[] = {"all", "small_pool", "large_pool"};
  for (int i = 0; i < flambeau::alloc::kNumStatTypes; ++i) {
    const std::string prefix = std::string(name) + "." + pools[i] + ".";
    d[py::str(prefix + "current")] = a[i].current;
    d[py::str(prefix + "peak")] = a[i].peak;
    d[py::str(prefix + "allocated")] = a[i].allocated;
    d[py::str(prefix + "freed")] = a[i].freed;
  }
}

// Flat keys in the order and spelling of torch.cuda.memory_stats().
py::dict stats_dict(const CachingAllocator& a) {
  const flambeau::alloc::MemoryStats s = a.stats();
  py::dict d;
  add_stat_array(d, "active", s.active);
  add_stat_array(d, "active_bytes", s.active_bytes);
  add_stat_array(d, "allocated_bytes", s.allocated_bytes);
  add_stat_array(d, "allocation", s.allocation);
  add_stat_array(d, "inactive_split", s.inactive_split);
  add_stat_array(d, "inactive_split_bytes", s.inactive_split_bytes);
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  d["num_ooms"] = s.num_ooms;
  add_stat_array(d, "requested_bytes", s.requested_bytes);
  add_stat_array(d, "reserved_bytes", s.reserved_bytes);
  add_stat_array(d, "segment", s.segment);
  return d;
}

// Note [Memory history]: the Python stack of the allocating thread, innermost
// first. Only a thread Python knows is inspected (a stream worker has no
// Python frames), and the allocator's lock is not held here.
flambeau::alloc::AllocContext record_python_context() {
  if (!Py_IsInitialized() || _Py_IsFinalizing() || PyGILState_GetThisThreadState() == nullptr) return nullptr;
  PyGILState_STATE state = PyGILState_Ensure();
  auto frames = std::make_shared<std::vector<flambeau::alloc::Frame>>();
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  for (int depth = 0; f && depth < 64; ++depth) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* filename = PyUnicode_AsUTF8(code->co_filename);
    if (!filename) PyErr_Clear();
    const char* name = PyUnicode_AsUTF8(code->co_name);
    if (!name) PyErr_Clear();
    frames->push_back({filename ? filename : "?", name ? name : "?", PyFrame_GetLineNumber(f)});
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  PyGILState_Release(state);
  return frames;
}

py::list frames_list(const flambeau::alloc::AllocContext& ctx) {
  py::list out;
  if (!ctx) return out;
  for (const auto& fr : *ctx) {
    py::dict d;
    d["filename"] = fr.filename;
    d["name"] = fr.name;
    d["line"] = fr.line;
    out.append(d);
  }
  return out;
}

py::list trace_list(const CachingAllocator& a) {
  static const char* actions[] = {"alloc",         "free_requested", "free_completed",
                                  "segment_alloc", "segment_free",   "oom"};
  py::list out;
  for (const auto& t : a.trace()) {
    py::dict d;
    d["action"] = actions[t.action];
    d["addr"] = t.address;
    d["size"] = t.size;
    d["stream"] = t.stream;
    d["time_us"] = t.time_us;
    d["frames"] = frames_list(t.context);
    out.append(d);
  }
  return out;
}

py::list snapshot_list(const CachingAllocator& a) {
  py::list segments;
  for (const auto& seg : a.snapshot()) {
    py::list blocks;
    for (const auto& b : seg.blocks) {
      py::dict block;
      block["address"] = b.address;
      block["size"] = b.size;
      block["requested_size"] = b.requested_size;
      block["allocated"] = b.allocated;
      block["state"] =
          b.allocated ? "active_allocated" : (b.pending_free ? "active_pending_free" : "inactive");
      block["frames"] = frames_list(b.context);
      blocks.append(block);
    }
    py::dict d;
    d["address"] = seg.address;
    d["total_size"] = seg.total_size;
    d["allocated_size"] = seg.allocated_size;
    d["active_size"] = seg.allocated_size;
    d["requested_size"] = seg.requested_size;
    d["segment_type"] = seg.is_small ? "small" : "large";
    d["stream"] = seg.stream;
    d["device"] = a.device().is_cpu() ? py::object(py::str("cpu")) : py::object(py::str(a.device().str()));
    d["blocks"] = blocks;
    segments.append(d);
  }
  return segments;
}

std::optional<size_t> checked_limit(std::optional<int64_t> limit, const char* op) {
  if (!limit) return std::nullopt;
  FB_CHECK_VALUE(*limit >= 0, "[", op, "] memory_limit must be None or >= 0 bytes, got ", *limit);
  return static_cast<size_t>(*limit);
}

// Seconds per allocate + deallocate pair of any core allocator, timed in C++
// (benchmarks only). With touch_pages, one byte per 4 KiB page is written
// before the free, as a fresh op output would be: that is where the page
// faults of a new mapping show.
double bench_alloc_free(const flambeau::AllocatorPtr& a, int64_t nbytes, int64_t iterations,
                        bool touch_pages) {
  FB_CHECK_VALUE(nbytes > 0 && iterations > 0, "[_bench_alloc_free] nbytes and iterations must be > 0, got ",
                 nbytes, " and ", iterations);
  py::gil_scoped_release release;
  const auto n = static_cast<size_t>(nbytes);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    auto* p = static_cast<volatile char*>(a->allocate(n));
    if (touch_pages)
      for (size_t off = 0; off < n; off += 4096) p[off] = 1;
    a->deallocate(const_cast<char*>(p), n);
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / static_cast<double>(iterations);
}

// A stress test in C++ (tests only): `threads` threads each run `iterations`
// random allocate/free steps over all pools against one allocator, stamp the
// first and last bytes of every block with the owner's tag and check them at
// free time. Returns the number of corrupted blocks (0 if the allocator never
// handed the same bytes to two owners).
int64_t stress(const std::shared_ptr<CachingAllocator>& a, int64_t iterations, int64_t threads,
               uint64_t seed) {
  FB_CHECK_VALUE(iterations >= 0 && threads >= 1 && threads <= 64,
                 "[_stress] need iterations >= 0 and 1 <= threads <= 64, got ", iterations, " and ", threads);
  py::gil_scoped_release release;
  std::atomic<int64_t> corrupted{0};
  auto work = [&](int64_t id) {
    std::mt19937_64 rng(seed + static_cast<uint64_t>(id));
    struct Live {
      unsigned char* p;
      size_t n;
      unsigned char tag;
    };
    std::vector<Live> live;
    auto check_and_free = [&](const Live& l) {
      const size_t k = std::min<size_t>(l.n, 64);
      for (size_t i = 0; i < k; ++i)
        if (l.p[i] != l.tag || l.p[l.n - 1 - i] != l.tag) {
          corrupted.fetch_add(1);
          break;
        }
      a->deallocate(l.p, l.n);
    };
    for (int64_t it = 0; it < iterations; ++it) {
      if (live.size() >= 16 || (!live.empty() && rng() % 100 < 50)) {
        const size_t i = rng() % live.size();
        check_and_free(live[i]);
        live[i] = live.back();
        live.pop_back();
        continue;
      }
      size_t n;
      switch (rng() % 4) {
        case 0:
          n = rng() % 600;
          break;  // tiny, several size classes
        case 1:
          n = 512 + rng() % (size_t{1} << 20);
          break;  // small pool
        case 2:
          n = (size_t{1} << 20) + rng() % (size_t{9} << 20);
          break;  // shared large segments
        default:
          n = (size_t{10} << 20) + rng() % (size_t{8} << 20);
          break;  // own segments
      }
      n = std::max<size_t>(n, 1);
      auto* p = static_cast<unsigned char*>(a->allocate(n));
      const auto tag = static_cast<unsigned char>(1 + (id * 37 + it) % 255);
      const size_t k = std::min<size_t>(n, 64);
      std::memset(p, tag, k);
      std::memset(p + n - k, tag, k);
      live.push_back({p, n, tag});
    }
    for (const Live& l : live) check_and_free(l);
  };
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& t : pool) t.join();
  return corrupted.load();
}

// The raw backend by name (raw_backend.h). A device package's backends
// (device memory, pinned host memory) come through _from_raw_backend instead.
std::unique_ptr<flambeau::alloc::RawBackend> make_backend(const std::string& backend) {
  if (backend == "cpu") return flambeau::alloc::make_cpu_backend();
  if (backend == "cuda" || backend == "pinned")
    throw flambeau::NotImplementedError("[CachingAllocator] the '" + backend +
                                        "' backend is not implemented yet; available: 'cpu'");
  throw flambeau::ValueError("[CachingAllocator] unknown backend '" + backend +
                             "'; expected 'cpu' ('cuda' and 'pinned' are planned)");
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  flambeau::python::import_core_and_check_abi("flambeau_alloc._C");
  m.doc() = "flambeau-alloc's compiled bindings (use the flambeau_alloc package instead)";
  m.attr("kMinBlockSize") = flambeau::alloc::kMinBlockSize;
  m.attr("kSmallSize") = flambeau::alloc::kSmallSize;
  m.attr("kSmallBuffer") = flambeau::alloc::kSmallBuffer;
  m.attr("kLargeBuffer") = flambeau::alloc::kLargeBuffer;
  m.attr("kMinLargeAlloc") = flambeau::alloc::kMinLargeAlloc;
  m.attr("kRoundLarge") = flambeau::alloc::kRoundLarge;

  py::class_<CachingAllocator, flambeau::Allocator, std::shared_ptr<CachingAllocator>>(
      m, "CachingAllocator",
      R"doc(A caching allocator for CPU memory (Note [Caching allocator pools]).

Freed blocks stay cached in a small pool (<= 1 MiB, carved from 2 MiB
segments) and a large pool; new requests are served best-fit from the cache,
so large temporaries skip mmap/munmap and page faults. A subclass of
flambeau_core.Allocator: pass it to flambeau_core.set_allocator.

Args:
    memory_limit: optional cap on reserved bytes; exceeding it behaves like
        the system running out of memory (release the cache, retry, then
        RuntimeError "out of memory").
    name: the allocator's name (what ``Tensor._allocator`` reports).
    backend: where segments come from: ``"cpu"`` (anonymous mmap, 2 MiB
        aligned, transparent huge pages). A device package passes its own
        raw backends to ``_from_raw_backend`` instead.

Example:
    >>> import flambeau_core, flambeau_alloc
    >>> a = flambeau_alloc.CachingAllocator()
    >>> flambeau_core.set_allocator(a) is a
    True
    >>> t = flambeau_core.empty(1000)
    >>> a.memory_allocated()
    4096
    >>> del t; a.memory_allocated(), a.memory_reserved()
    (0, 2097152)
    >>> _ = flambeau_core.set_allocator(flambeau_core.system_allocator())
)doc")
      .def(py::init([](std::optional<int64_t> memory_limit, std::string name, const std::string& backend) {
             return std::make_shared<CachingAllocator>(make_backend(backend), std::move(name),
                                                       checked_limit(memory_limit, "CachingAllocator"));
           }),
           py::kw_only(), py::arg("memory_limit") = py::none(), py::arg("name") = "caching",
           py::arg("backend") = "cpu")
      .def_static(
          "_from_raw_backend",
          [](py::capsule capsule, std::string name, flambeau::Device device) {
            // raw_backend.h: a device package's backend, boxed in a capsule.
            FB_CHECK_TYPE(std::strcmp(capsule.name(), flambeau::alloc::kRawBackendCapsule) == 0,
                          "[CachingAllocator._from_raw_backend] expected a capsule named '",
                          flambeau::alloc::kRawBackendCapsule, "', got '", capsule.name(), "'");
            auto* box = capsule.get_pointer<std::unique_ptr<flambeau::alloc::RawBackend>>();
            FB_CHECK_VALUE(box && *box,
                           "[CachingAllocator._from_raw_backend] the capsule's backend was taken already");
            return std::make_shared<CachingAllocator>(std::move(*box), std::move(name), std::nullopt, device);
          },
          py::arg("capsule"), py::arg("name"), py::arg("device"),
          "A stream-aware allocator (for a non-cpu device) over a raw backend implemented by another package "
          "(raw_backend.h, flambeau_alloc.get_include()).")
      .def_property_readonly(
          "backend", [](const CachingAllocator& a) { return a.backend().name(); },
          "Name of the raw backend segments come from (\"cpu pages\").")
      .def_property(
          "memory_limit", [](const CachingAllocator& a) { return a.memory_limit(); },
          [](CachingAllocator& a, std::optional<int64_t> limit) {
            a.set_memory_limit(checked_limit(limit, "CachingAllocator.memory_limit"));
          },
          "Cap on reserved bytes, or None.")
      .def("memory_stats", &stats_dict,
           "Statistics as a flat dict with torch.cuda.memory_stats() keys, e.g. "
           "'allocated_bytes.all.current',\n"
           "'reserved_bytes.large_pool.peak', 'num_device_alloc' (segments taken from the raw backend),\n"
           "'num_device_free', 'num_alloc_retries', 'num_ooms'.\n"
           "\n"
           ">>> a = flambeau_alloc.CachingAllocator()\n"
           ">>> before = flambeau_core.get_allocator()\n"
           ">>> _ = flambeau_core.set_allocator(a)\n"
           ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
           ">>> stats = a.memory_stats()\n"
           ">>> stats[\"allocated_bytes.all.current\"], stats[\"num_device_alloc\"]\n"
           "(4096, 1)\n"
           ">>> _ = flambeau_core.set_allocator(before)")
      .def(
          "memory_allocated",
          [](const CachingAllocator& a) {
            return a.stats().allocated_bytes[flambeau::alloc::kAggregate].current;
          },
          "Bytes in allocated blocks (rounded sizes), as torch.cuda.memory_allocated for this allocator.\n"
          "\n"
          ">>> a = flambeau_alloc.CachingAllocator()\n"
          ">>> before = flambeau_core.get_allocator()\n"
          ">>> _ = flambeau_core.set_allocator(a)\n"
          ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
          ">>> a.memory_allocated()\n"
          "4096\n"
          ">>> del t\n"
          ">>> a.memory_allocated()\n"
          "0\n"
          ">>> _ = flambeau_core.set_allocator(before)")
      .def(
          "max_memory_allocated",
          [](const CachingAllocator& a) {
            return a.stats().allocated_bytes[flambeau::alloc::kAggregate].peak;
          },
          "Peak of memory_allocated() since the last reset_peak_memory_stats().\n"
          "\n"
          ">>> a = flambeau_alloc.CachingAllocator()\n"
          ">>> before = flambeau_core.get_allocator()\n"
          ">>> _ = flambeau_core.set_allocator(a)\n"
          ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
          ">>> del t\n"
          ">>> a.memory_allocated(), a.max_memory_allocated()\n"
          "(0, 4096)\n"
          ">>> _ = flambeau_core.set_allocator(before)")
      .def(
          "memory_reserved",
          [](const CachingAllocator& a) {
            return a.stats().reserved_bytes[flambeau::alloc::kAggregate].current;
          },
          "Bytes in segments held from the backend (allocated + cached).\n"
          "\n"
          ">>> a = flambeau_alloc.CachingAllocator()\n"
          ">>> before = flambeau_core.get_allocator()\n"
          ">>> _ = flambeau_core.set_allocator(a)\n"
          ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
          ">>> del t\n"
          ">>> a.memory_reserved()  # the freed block stays cached\n"
          "2097152\n"
          ">>> _ = flambeau_core.set_allocator(before)")
      .def(
          "max_memory_reserved",
          [](const CachingAllocator& a) {
            return a.stats().reserved_bytes[flambeau::alloc::kAggregate].peak;
          },
          "Peak of memory_reserved() since the last reset_peak_memory_stats().\n"
          "\n"
          ">>> a = flambeau_alloc.CachingAllocator()\n"
          ">>> before = flambeau_core.get_allocator()\n"
          ">>> _ = flambeau_core.set_allocator(a)\n"
          ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
          ">>> del t\n"
          ">>> a.empty_cache()\n"
          ">>> a.memory_reserved(), a.max_memory_reserved()\n"
          "(0, 2097152)\n"
          ">>> _ = flambeau_core.set_allocator(before)")
      .def("empty_cache", &CachingAllocator::empty_cache, py::call_guard<py::gil_scoped_release>(),
           "Returns every wholly free segment to the backend. Tensors alive keep their memory.\n"
           "\n"
           ">>> a = flambeau_alloc.CachingAllocator()\n"
           ">>> before = flambeau_core.get_allocator()\n"
           ">>> _ = flambeau_core.set_allocator(a)\n"
           ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
           ">>> a.empty_cache()\n"
           ">>> a.memory_reserved()  # t's segment is in use: kept\n"
           "2097152\n"
           ">>> del t\n"
           ">>> a.empty_cache()\n"
           ">>> a.memory_reserved()\n"
           "0\n"
           ">>> _ = flambeau_core.set_allocator(before)")
      .def("reset_peak_memory_stats", &CachingAllocator::reset_peak_stats,
           "Sets every peak to its current value.\n"
           "\n"
           ">>> a = flambeau_alloc.CachingAllocator()\n"
           ">>> before = flambeau_core.get_allocator()\n"
           ">>> _ = flambeau_core.set_allocator(a)\n"
           ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
           ">>> del t\n"
           ">>> a.reset_peak_memory_stats()\n"
           ">>> a.max_memory_allocated()\n"
           "0\n"
           ">>> _ = flambeau_core.set_allocator(before)")
      .def("reset_accumulated_memory_stats", &CachingAllocator::reset_accumulated_stats,
           "Sets the running totals (allocated/freed, raw allocs/frees, retries, OOMs) to zero.\n"
           "\n"
           ">>> a = flambeau_alloc.CachingAllocator()\n"
           ">>> before = flambeau_core.get_allocator()\n"
           ">>> _ = flambeau_core.set_allocator(a)\n"
           ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
           ">>> a.reset_accumulated_memory_stats()\n"
           ">>> a.memory_stats()[\"num_device_alloc\"], a.memory_allocated()  # the current values stay\n"
           "(0, 4096)\n"
           ">>> _ = flambeau_core.set_allocator(before)")
      .def("memory_snapshot", &snapshot_list,
           "Segments in address order, each a dict (address, total_size, allocated_size, requested_size,\n"
           "segment_type 'small'/'large', blocks); each block a dict (address, size, requested_size, "
           "allocated,\n"
           "state 'active_allocated'/'inactive'). Blocks cover their segment without gaps.\n"
           "\n"
           ">>> a = flambeau_alloc.CachingAllocator()\n"
           ">>> before = flambeau_core.get_allocator()\n"
           ">>> _ = flambeau_core.set_allocator(a)\n"
           ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
           ">>> [(s[\"segment_type\"], s[\"total_size\"], s[\"allocated_size\"]) for s in "
           "a.memory_snapshot()]\n"
           "[('small', 2097152, 4096)]\n"
           ">>> _ = flambeau_core.set_allocator(before)")
      .def("memory_summary", &CachingAllocator::summary,
           "A human-readable table of memory_stats().\n"
           "\n"
           ">>> a = flambeau_alloc.CachingAllocator()\n"
           ">>> before = flambeau_core.get_allocator()\n"
           ">>> _ = flambeau_core.set_allocator(a)\n"
           ">>> t = flambeau_core.empty(1000)  # 4000 bytes, rounded to 4096 in a 2 MiB segment\n"
           ">>> print(a.memory_summary())  # doctest: +ELLIPSIS\n"
           "|===...\n"
           "| flambeau-alloc memory summary: 'caching' allocator on cpu pages ...\n"
           ">>> _ = flambeau_core.set_allocator(before)")
      .def("_trace", &trace_list,
           "Note [Memory history]: the recorded events (action, addr, size, stream, time_us, frames), oldest "
           "first; empty unless history is recorded.")
      .def("_pending_frees", &CachingAllocator::pending_frees,
           "Freed blocks waiting for events of other streams (Note [Stream-ordered reuse]).")
      .def(
          "_pool_report",
          [](const CachingAllocator& a) {
            py::dict d;
            for (bool small : {true, false}) {
              const auto r = a.pool_report(small);
              py::dict p;
              p["allocated"] = r.allocated;
              p["reserved"] = r.reserved;
              p["largest_free_block"] = r.largest_free;
              d[small ? "small_pool" : "large_pool"] = p;
            }
            return d;
          },
          "Per pool: allocated and reserved bytes, and the largest free block.")
      .def_property_readonly("device", [](const CachingAllocator& a) { return a.device(); })
      .def("__repr__",
           [](const CachingAllocator& a) {
             const auto s = a.stats();
             return "<flambeau_alloc.CachingAllocator '" + a.name() + "' on " + a.backend().name() +
                    ": allocated=" + std::to_string(s.allocated_bytes[0].current) +
                    " reserved=" + std::to_string(s.reserved_bytes[0].current) + ">";
           })
      // Test-only raw access (no tensor needed); the GIL is released so that
      // threads really run concurrently.
      .def(
          "_allocate",
          [](CachingAllocator& a, int64_t nbytes) {
            FB_CHECK_VALUE(nbytes >= 0, "[_allocate] nbytes must be >= 0, got ", nbytes);
            py::gil_scoped_release release;
            return reinterpret_cast<uintptr_t>(a.allocate(static_cast<size_t>(nbytes)));
          },
          py::arg("nbytes"))
      .def(
          "_free",
          [](CachingAllocator& a, uintptr_t address) {
            bool ok;
            {
              py::gil_scoped_release release;
              ok = a.free_block(reinterpret_cast<void*>(address));
            }
            FB_CHECK_VALUE(ok, "[_free] address ", address, " is not a block allocated by the '", a.name(),
                           "' caching allocator");
          },
          py::arg("address"));

  m.def(
      "_record_memory_history",
      [](bool enabled, int64_t max_entries) {
        FB_CHECK_VALUE(max_entries >= 0, "[_record_memory_history] max_entries must be >= 0, got ",
                       max_entries);
        CachingAllocator::set_history(enabled, &record_python_context, static_cast<size_t>(max_entries));
      },
      py::arg("enabled"), py::arg("max_entries"));
  m.def("_history_enabled", &CachingAllocator::history_enabled);

  m.def("caching_allocator", &flambeau::alloc::default_caching_allocator,
        "The process-wide CachingAllocator that enable() installs (import flambeau does).\n"
        "\n"
        ">>> a = flambeau_alloc.caching_allocator()\n"
        ">>> isinstance(a, flambeau_alloc.CachingAllocator), a is flambeau_alloc.caching_allocator()\n"
        "(True, True)");
  m.def("_bench_alloc_free", &bench_alloc_free, py::arg("allocator"), py::arg("nbytes"),
        py::arg("iterations"), py::arg("touch_pages") = false);
  m.def("_stress", &stress, py::arg("allocator"), py::arg("iterations"), py::arg("threads"),
        py::arg("seed") = 0);
  m.def("_round_size", &CachingAllocator::round_size, py::arg("nbytes"));
  m.def("_segment_size", &CachingAllocator::segment_size, py::arg("block_size"));
}
