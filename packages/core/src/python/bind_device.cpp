// Bindings of Note [Device backends] (device_backend.h): streams, events, the
// current device and stream, Tensor.to(device, non_blocking=...),
// record_stream, pin_memory. flambeau_core/device.py wraps these in the
// PyTorch-shaped device modules (flambeau_core.cuda, flambeau_core.device_module("sim")).
#include <cstring>
#include <optional>
#include <vector>

#include "common.h"
#include "flambeau/device_backend.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau::python {
namespace {

DeviceType parse_device_type(const std::string& name, const char* op) {
  const Device d = Device::parse(name);
  FB_CHECK_VALUE(d.index < 0, "[", op, "] expected a device type name such as 'cuda', got '", name, "'");
  return d.type;
}

// A device from an int (an index of `type`), a string, a device or None (the current device).
Device device_of_type(py::handle obj, DeviceType type, const char* op) {
  if (obj.is_none()) return Device(type, static_cast<int16_t>(current_device(type)));
  if (py::isinstance<py::int_>(obj) && !py::isinstance<py::bool_>(obj)) {
    const int64_t i = obj.cast<int64_t>();
    FB_CHECK_VALUE(i >= 0 && i < 32768, "[", op, "] device index must be >= 0, got ", i);
    return Device(type, static_cast<int16_t>(i));
  }
  const Device d = resolve_device(parse_device(obj, op));
  FB_CHECK_VALUE(d.type == type, "[", op, "] expected a ", device_type_name(type), " device, got ", d.str());
  return d;
}

// Note [Default device]
// ~~~~~~~~~~~~~~~~~~~~~
// PyTorch's torch.set_default_device / `with torch.device(d):`: a factory
// called from Python without device= (tensor, zeros, ones, empty, full, rand,
// randn, arange, linspace, logspace, eye, randint, randperm, normal,
// empty_strided, tril/triu_indices, fft.fftfreq) makes its result on the
// default device. It is per thread, cpu unless set, and applies to the Python
// bindings only (C++ callers pass their device). *_like factories and
// Tensor.new_* keep following their input; from_numpy/frombuffer share host
// memory and stay on the cpu, as in PyTorch. `with fc.device("sim"):` sets it
// for a block (nested blocks restore the outer one); flambeau_core.testing
// uses it to run a whole test module on every device.
thread_local std::optional<Device> tls_default_device;
thread_local std::vector<std::optional<Device>> tls_device_context_stack;

// An event created on the first record() (its device is that of the stream).
struct PyEvent {
  bool enable_timing = false;
  EventPtr event;
  Device device{DeviceType::CPU};
};

}  // namespace

Device default_device() { return tls_default_device.value_or(Device(DeviceType::CPU)); }

Device factory_device(py::handle obj, const char* op) {
  if (obj.is_none()) return default_device();
  return parse_device(obj, op);
}

Tensor to_device_copy(const Tensor& self, Device device, ScalarType dtype, bool non_blocking,
                      const char* op) {
  device = resolve_device(device);
  if (device.has_backend_memory()) require_device(device, op);
  Tensor out = op::empty(self.sizes(), dtype, device);
  detail::NonBlockingGuard nb(non_blocking);
  op::copy_(out, self);
  return out;
}

Tensor to_cpu_for_read(const Tensor& t) {
  if (t.device().is_cpu()) return t;
  py::gil_scoped_release no_gil;
  AutoExcludeAutograd no_grad;
  return to_device_copy(t, Device(DeviceType::CPU), t.dtype(), false, "cpu");
}

void init_device(py::module_& m) {
  py::class_<Stream, std::shared_ptr<Stream>>(m, "_Stream",
                                              "A device stream (use flambeau_core.device_module)")
      .def_property_readonly("device", &Stream::device)
      .def_property_readonly("stream_id", &Stream::id)
      .def("query", &Stream::query, py::call_guard<py::gil_scoped_release>())
      .def("synchronize", &Stream::synchronize, py::call_guard<py::gil_scoped_release>())
      .def(
          "wait_event",
          [](Stream& s, const PyEvent& e) {
            if (e.event) s.wait_event(*e.event);
          },
          py::arg("event"), py::call_guard<py::gil_scoped_release>());

  py::class_<PyEvent, std::shared_ptr<PyEvent>>(m, "_Event",
                                                "A device event (use flambeau_core.device_module)")
      .def(py::init(
               [](bool enable_timing) { return std::make_shared<PyEvent>(PyEvent{enable_timing, nullptr}); }),
           py::arg("enable_timing") = false)
      .def(
          "record",
          [](PyEvent& e, Stream& s) {
            const Device d = s.device();
            if (e.event && !(e.device == d))
              throw ValueError(detail::cat_str("[Event.record] the event was recorded on ", e.device.str(),
                                               " and cannot be recorded on a stream of ", d.str()));
            if (!e.event) {
              e.event = require_device(d, "Event.record").new_event(e.enable_timing);
              e.device = d;
            }
            e.event->record(s);
          },
          py::arg("stream"), py::call_guard<py::gil_scoped_release>())
      .def(
          "query", [](const PyEvent& e) { return !e.event || e.event->query(); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "synchronize",
          [](PyEvent& e) {
            if (e.event) e.event->synchronize();
          },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "elapsed_time",
          [](const PyEvent& e, const PyEvent& end) {
            FB_CHECK(e.event && end.event, "[Event.elapsed_time] both events must be recorded first");
            FB_CHECK(e.enable_timing && end.enable_timing,
                     "[Event.elapsed_time] both events must be created with enable_timing=True");
            return e.event->elapsed_time(*end.event);
          },
          py::arg("end_event"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("_recorded", [](const PyEvent& e) { return static_cast<bool>(e.event); })
      .def_property_readonly("device", [](const PyEvent& e) -> py::object {
        if (!e.event) return py::none();
        return py::cast(e.device);
      });

  m.def(
      "set_default_device",
      [](py::handle device) {
        if (device.is_none()) {
          tls_default_device.reset();
          return;
        }
        const Device d = parse_device(device, "set_default_device");
        if (d.has_backend_memory()) require_device(resolve_device(d), "set_default_device");
        tls_default_device = d;
      },
      py::arg("device"),
      "Sets the device of factories called without device= (this thread; None: back to cpu), as\n"
      "torch.set_default_device. `with flambeau_core.device(d):` does it for a block.\n"
      "\n"
      ">>> flambeau_core.set_default_device(\"meta\")\n"
      ">>> flambeau_core.zeros(2).device\n"
      "device(type='meta')\n"
      ">>> flambeau_core.set_default_device(None)\n"
      ">>> flambeau_core.zeros(2).device\n"
      "device(type='cpu')");
  m.def(
      "get_default_device",
      [] {
        const Device d = default_device();
        // As PyTorch: a device type without an index reads as its current device.
        return d.index < 0 && !d.is_cpu() ? resolve_device(d) : d;
      },
      "The device factories use when called without device= (torch.get_default_device).\n"
      "\n"
      ">>> flambeau_core.get_default_device()\n"
      "device(type='cpu')");
  py::object device_cls = m.attr("device");
  device_cls.attr("__enter__") = py::cpp_function(
      [](const Device& d) {
        if (d.has_backend_memory()) require_device(resolve_device(d), "device.__enter__");
        tls_device_context_stack.push_back(tls_default_device);
        tls_default_device = d;
        return d;
      },
      py::is_method(device_cls), py::name("__enter__"));
  device_cls.attr("__exit__") = py::cpp_function(
      [](const Device&, py::args) {
        if (tls_device_context_stack.empty()) return false;
        tls_default_device = tls_device_context_stack.back();
        tls_device_context_stack.pop_back();
        return false;
      },
      py::is_method(device_cls), py::name("__exit__"));

  m.def(
      "_device_count",
      [](const std::string& type) { return device_count(parse_device_type(type, "device_count")); },
      py::arg("type"));
  m.def("_has_backend", [](const std::string& type) {
    return device_backend(parse_device_type(type, "is_available")) != nullptr;
  });
  m.def("_require_device",
        [](py::handle device) { require_device(resolve_device(parse_device(device, "device")), "device"); });
  m.def("_plugin_device_name", []() -> py::object {
    if (!detail::privateuse1_registered()) return py::none();
    return py::str(detail::privateuse1_name());
  });
  m.def("_current_device", [](const std::string& type) {
    const DeviceType t = parse_device_type(type, "current_device");
    require_device(Device(t), "current_device");
    return current_device(t);
  });
  m.def(
      "_set_device",
      [](const std::string& type, py::handle device) {
        const DeviceType t = parse_device_type(type, "set_device");
        set_current_device(device_of_type(device, t, "set_device"));
      },
      py::arg("type"), py::arg("device"));
  m.def(
      "_current_stream",
      [](const std::string& type, py::handle device) {
        const DeviceType t = parse_device_type(type, "current_stream");
        return current_stream(device_of_type(device, t, "current_stream"));
      },
      py::arg("type"), py::arg("device") = py::none());
  m.def(
      "_default_stream",
      [](const std::string& type, py::handle device) {
        const DeviceType t = parse_device_type(type, "default_stream");
        return default_stream(device_of_type(device, t, "default_stream"));
      },
      py::arg("type"), py::arg("device") = py::none());
  m.def(
      "_new_stream",
      [](const std::string& type, py::handle device, int priority) {
        const DeviceType t = parse_device_type(type, "Stream");
        const Device d = device_of_type(device, t, "Stream");
        return require_device(d, "Stream").new_stream(d.index, priority);
      },
      py::arg("type"), py::arg("device") = py::none(), py::arg("priority") = 0);
  m.def(
      "_set_stream", [](std::shared_ptr<Stream> s) { set_current_stream(std::move(s)); }, py::arg("stream"));
  m.def(
      "_synchronize",
      [](const std::string& type, py::handle device) {
        const DeviceType t = parse_device_type(type, "synchronize");
        const Device d = device_of_type(device, t, "synchronize");
        DeviceBackend& b = require_device(d, "synchronize");
        py::gil_scoped_release no_gil;
        b.synchronize(d.index);
      },
      py::arg("type"), py::arg("device") = py::none());

  auto cls = py::reinterpret_borrow<py::object>(m.attr("Tensor"));
  py::setattr(cls, "record_stream",
              py::cpp_function(
                  [](const Tensor& t, py::handle stream) {
                    py::object s = py::hasattr(stream, "_s") ? stream.attr("_s")
                                                             : py::reinterpret_borrow<py::object>(stream);
                    FB_CHECK_TYPE(py::isinstance<Stream>(s), "[record_stream] expected a Stream, got ",
                                  py::repr(stream).cast<std::string>());
                    auto sp = s.cast<std::shared_ptr<Stream>>();
                    const Storage& st = t.impl()->storage();
                    if (t.device().is_cpu()) {
                      // Only pinned host memory is stream-ordered (device copies use it).
                      DeviceBackend* b = device_backend(sp->device().type);
                      AllocatorPtr pinned = b ? b->pinned_host_allocator() : nullptr;
                      FB_CHECK_VALUE(pinned && st->allocator() == pinned,
                                     "[record_stream] expected a tensor on a device or in pinned memory of ",
                                     sp->device().str(), ", got a cpu tensor that is not pinned");
                    } else {
                      FB_CHECK_VALUE(sp->device().type == t.device().type, "[record_stream] a tensor on ",
                                     t.device().str(), " cannot be used by a stream of ", sp->device().str());
                    }
                    if (!st->allocator() || !st->data()) return;
                    py::gil_scoped_release no_gil;
                    st->allocator()->record_stream(st->data(), *sp);
                  },
                  py::name("record_stream"), py::is_method(cls), py::arg("stream"),
                  "Marks the tensor's memory as used by `stream`: when the tensor is freed, its block is "
                  "reused only after the work enqueued on `stream` so far has completed.\n"
                  "\n"
                  ">>> flambeau_core.zeros(2).record_stream(None)  # a device's Stream: fb.cuda.current_stream()\n"
                  "Traceback (most recent call last):\n"
                  "TypeError: [record_stream] expected a Stream, got None"));
  py::setattr(
      cls, "is_pinned",
      py::cpp_function(
          [](const Tensor& t) {
            if (!t.device().is_cpu()) return false;
            const AllocatorPtr& a = t.impl()->storage()->allocator();
            if (!a) return false;
            for (DeviceType dt : {DeviceType::CUDA, DeviceType::PrivateUse1})
              if (DeviceBackend* b = device_backend(dt))
                if (AllocatorPtr p = b->pinned_host_allocator(); p && p == a) return true;
            return false;
          },
          py::name("is_pinned"), py::is_method(cls),
          "True if the tensor lives in pinned host memory (pin_memory()).\n"
          "\n"
          ">>> flambeau_core.zeros(2).is_pinned()\n"
          "False"));
  py::setattr(
      cls, "pin_memory",
      py::cpp_function(
          [](const Tensor& t, py::handle device) {
            FB_CHECK(t.device().is_cpu(), "[pin_memory] only cpu tensors can be pinned, got one on ",
                     t.device().str());
            DeviceBackend* b = nullptr;
            if (!device.is_none()) {
              Device d = resolve_device(parse_device(device, "pin_memory"));
              b = &require_device(d, "pin_memory");
            } else {
              for (DeviceType dt : {DeviceType::CUDA, DeviceType::PrivateUse1})
                if (!b && device_backend(dt) && device_count(dt) > 0) b = device_backend(dt);
            }
            FB_CHECK(b,
                     "[pin_memory] no device is available to pin memory for: flambeau-cuda is not installed "
                     "and no plug-in device is registered");
            AllocatorPtr a = b->pinned_host_allocator();
            FB_CHECK(a, "[pin_memory] the ", b->name(), " backend has no pinned host memory");
            py::gil_scoped_release no_gil;
            const size_t n = static_cast<size_t>(shape_nbytes(t.sizes(), t.dtype(), "pin_memory"));
            void* p = n ? a->allocate(n) : nullptr;
            auto storage = std::make_shared<StorageImpl>(p, n, Device(DeviceType::CPU), a, nullptr);
            Shape s(t.sizes().begin(), t.sizes().end());
            Tensor out(
                std::make_shared<TensorImpl>(std::move(storage), t.dtype(), s, contiguous_strides(s), 0));
            AutoExcludeAutograd no_grad;
            op::copy_(out, t);
            return out;
          },
          py::name("pin_memory"), py::is_method(cls), py::arg("device") = py::none(),
          "A copy of the tensor in pinned (page-locked) host memory of a device backend (flambeau-cuda, or a\n"
          "plug-in device): copies from it to the device can overlap computation. RuntimeError where no device\n"
          "backend is present.\n"
          "\n"
          ">>> x = flambeau_core.ones(2)\n"
          ">>> try:\n"
          "...     x = x.pin_memory()\n"
          "... except RuntimeError:  # no device backend in this process\n"
          "...     pass\n"
          ">>> x.tolist()\n"
          "[1.0, 1.0]"));
}

}  // namespace flambeau::python
