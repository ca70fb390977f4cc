// The allocator registry from Python (Note [Allocator registry]).
#include <cstdint>
#include <optional>

#include "common.h"
#include "flambeau/dispatch.h"
#include "flambeau/error.h"

namespace flambeau::python {
namespace {

/// A Python int as a machine address, or nullopt if it is negative or too
/// large for one. The caller has checked that it is an int.
std::optional<uintptr_t> as_address(py::handle obj) {
  const unsigned long long v = PyLong_AsUnsignedLongLong(obj.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();  // OverflowError: negative, or 2**64 or more
    return std::nullopt;
  }
  if (v > UINTPTR_MAX) return std::nullopt;
  return static_cast<uintptr_t>(v);
}

// An allocator written in Python: obj.malloc(nbytes) -> int address,
// obj.free(address, nbytes). Slow (takes the GIL per call); for tests and
// experiments. malloc and free may be called on any thread, with or without
// the GIL (a tensor freed during the GIL-free backward pass, a kernel that
// allocates a temporary): both take it (Note [Python objects in deleters]).
// A Python exception in malloc becomes a RuntimeError naming the allocator;
// one in free cannot propagate (free is noexcept) and is reported through
// sys.unraisablehook. Once Python is gone, free leaks the block.
class PythonAllocator final : public Allocator {
 public:
  explicit PythonAllocator(py::object obj) : obj_(std::move(obj)) {
    name_ = py::str(py::type::of(obj_).attr("__name__")).cast<std::string>();
  }
  ~PythonAllocator() override { release_with_gil(obj_); }
  void* allocate(size_t nbytes) override {
    FB_CHECK(python_is_usable(), "[allocate] Python allocator ", name_,
             " cannot be called: the interpreter is shutting down");
    py::gil_scoped_acquire gil;
    py::object r;
    try {
      r = obj_.attr("malloc")(nbytes);
    } catch (py::error_already_set& e) {
      throw RuntimeError(
          detail::cat_str("[allocate] Python allocator ", name_, ".malloc(", nbytes, ") raised: ", e.what()));
    }
    FB_CHECK(PyLong_Check(r.ptr()) && !PyBool_Check(r.ptr()), "[allocate] Python allocator ", name_,
             ".malloc must return an int address, got ", py::repr(r).cast<std::string>());
    const std::optional<uintptr_t> addr = as_address(r);
    FB_CHECK(addr.has_value(), "[allocate] Python allocator ", name_, ".malloc(", nbytes, ") returned ",
             py::repr(r).cast<std::string>(), ", which is not an address (an int in [1, 2**64))");
    FB_CHECK(*addr != 0, "[allocate] Python allocator ", name_, ".malloc(", nbytes, ") returned 0");
    FB_CHECK(*addr % 64 == 0, "[allocate] Python allocator ", name_, ".malloc returned address ", *addr,
             " which is not 64-byte aligned");
    return reinterpret_cast<void*>(*addr);
  }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    if (!python_is_usable()) return;  // interpreter shutdown: leak rather than crash
    py::gil_scoped_acquire gil;
    try {
      obj_.attr("free")(reinterpret_cast<uintptr_t>(ptr), nbytes);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(("flambeau: Python allocator " + name_ + ".free").c_str());
    }
  }
  std::string name() const override { return name_; }

 private:
  py::object obj_;
  std::string name_;
};

// A core Allocator, or a Python object with malloc/free wrapped as one.
AllocatorPtr as_allocator(py::object allocator, const char* op) {
  if (py::isinstance<Allocator>(allocator)) return allocator.cast<AllocatorPtr>();
  FB_CHECK_TYPE(
      py::hasattr(allocator, "malloc") && py::hasattr(allocator, "free"), "[", op,
      "] expected a flambeau Allocator or an object with malloc(nbytes) and free(ptr, nbytes) methods, "
      "got ",
      py::repr(allocator).cast<std::string>());
  return std::make_shared<PythonAllocator>(allocator);
}

// Makes a PyCapsule-free handle for C++ allocators other modules register.
py::object allocator_handle(AllocatorPtr a) { return py::cast(std::move(a)); }

}  // namespace

void init_allocator(py::module_& m) {
  py::class_<Allocator, std::shared_ptr<Allocator>>(
      m, "Allocator",
      "A memory allocator registered in core (Note [Allocator registry]); flambeau's, not PyTorch's.\n"
      "\n"
      ">>> a = flambeau_core.system_allocator()\n"
      ">>> isinstance(a, flambeau_core.Allocator), a.name\n"
      "(True, 'system')")
      .def_property_readonly("name", &Allocator::name)
      .def("__repr__", [](const Allocator& a) { return "<flambeau Allocator '" + a.name() + "'>"; });

  m.def(
      "get_allocator",
      [](py::handle device) { return get_allocator(parse_device(device, "get_allocator").type); },
      py::arg("device") = "cpu",
      "The current allocator for a device type.\n"
      "\n"
      ">>> isinstance(flambeau_core.get_allocator(\"cpu\"), flambeau_core.Allocator)\n"
      "True");
  m.def("system_allocator", &system_allocator,
        "Core's default aligned system allocator.\n"
        "\n"
        ">>> flambeau_core.system_allocator().name\n"
        "'system'");
  m.def(
      "set_allocator",
      [](py::object allocator, py::handle device) {
        const DeviceType type = parse_device(device, "set_allocator").type;
        set_allocator(type, as_allocator(allocator, "set_allocator"));
        return get_allocator(type);
      },
      py::arg("allocator"), py::arg("device") = "cpu",
      "Makes `allocator` the current one for `device`; tensors alive now are still freed by the allocator\n"
      "that made them. Accepts an Allocator, or any object with malloc(nbytes) -> int and free(ptr, "
      "nbytes).\n"
      "Returns the allocator now current.\n"
      "\n"
      ">>> before = flambeau_core.get_allocator()\n"
      ">>> flambeau_core.set_allocator(flambeau_core.system_allocator()).name\n"
      "'system'\n"
      ">>> _ = flambeau_core.set_allocator(before)");
  m.def(
      "_clone_with_allocator",
      [](const Tensor& t, py::object allocator) {
        // The registry is left alone: swapping the current allocator around a clone would
        // hand that allocator's memory to whatever other threads allocate meanwhile.
        AllocatorPtr a = as_allocator(std::move(allocator), "_clone_with_allocator");
        FB_CHECK_TYPE(t.device().is_cpu(), "[_clone_with_allocator] expected a cpu tensor, got one on ",
                      t.device().str());
        const Shape sizes(t.sizes().begin(), t.sizes().end());
        const Shape strides = contiguous_strides(sizes, "_clone_with_allocator");
        size_t nbytes = 0;
        FB_CHECK_VALUE(!__builtin_mul_overflow(static_cast<size_t>(t.numel()), itemsize(t.dtype()), &nbytes),
                       "[_clone_with_allocator] a tensor of shape ", shape_str(t.sizes()),
                       " has too many bytes to copy");
        void* p = nbytes ? a->allocate(nbytes) : nullptr;
        auto storage = std::make_shared<StorageImpl>(p, nbytes, t.device(), a, nullptr);
        Tensor out(std::make_shared<TensorImpl>(std::move(storage), t.dtype(), sizes, strides, 0));
        AutoExcludeAutograd no_grad;  // a copy of the values, detached from any graph
        op::copy_(out, t);
        return out;
      },
      py::arg("tensor"), py::arg("allocator"),
      "A contiguous copy of `tensor` in memory from `allocator` (an Allocator, or an object with malloc and "
      "free), without changing the current allocator (DataLoader's pin_memory uses it).");
  // Public as flambeau_core.memory.allocator_from_c_abi (documented there):
  // the address is trusted, so it stays out of the top-level namespace.
  m.def(
      "_allocator_from_c_abi",
      [](py::handle table_address) {
        FB_CHECK_TYPE(PyIndex_Check(table_address.ptr()) && !PyBool_Check(table_address.ptr()),
                      "[allocator_from_c_abi] table_address must be an int address (e.g. "
                      "ctypes.addressof(table)), got ",
                      py::repr(table_address).cast<std::string>());
        const auto as_int = py::reinterpret_steal<py::object>(PyNumber_Index(table_address.ptr()));
        if (!as_int) throw py::error_already_set();
        const std::optional<uintptr_t> addr = as_address(as_int);
        FB_CHECK_VALUE(addr.has_value(), "[allocator_from_c_abi] table_address ",
                       py::repr(as_int).cast<std::string>(), " is not an address (an int in [1, 2**64))");
        return allocator_from_c_abi(reinterpret_cast<const fb_allocator_v1*>(*addr));
      },
      py::arg("table_address"));
  (void)allocator_handle;
}

}  // namespace flambeau::python
