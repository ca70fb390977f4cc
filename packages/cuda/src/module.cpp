// flambeau_cuda._C: registers the CUDA backend (Note [CUDA backend]) and
// exposes what flambeau_cuda/__init__.py needs to finish the registration.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "advanced_index.h"
#include "backend.h"
#include "cublas.h"
#include "flambeau/meta.h"
#include "flambeau/python/bindings.h"
#include "norm.h"
#include "shape_ops.h"

namespace py = pybind11;
using flambeau::alloc::kRawBackendCapsule;
using flambeau::alloc::RawBackend;

namespace {

void delete_boxed_backend(PyObject* capsule) {
  delete static_cast<std::unique_ptr<RawBackend>*>(PyCapsule_GetPointer(capsule, kRawBackendCapsule));
}

// raw_backend.h: a heap-allocated unique_ptr in a capsule that alloc's
// CachingAllocator._from_raw_backend takes over.
py::object boxed(std::unique_ptr<RawBackend> backend) {
  auto* box = new std::unique_ptr<RawBackend>(std::move(backend));
  PyObject* cap = PyCapsule_New(box, kRawBackendCapsule, &delete_boxed_backend);
  if (!cap) {
    delete box;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

int checked_device(int index, const char* op) {
  const int n = flambeau::cuda::backend()->device_count();
  FB_CHECK_VALUE(index >= 0 && index < n, "[", op, "] invalid CUDA device index ", index, " (", n,
                 " devices)");
  return index;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  flambeau::python::import_core_and_check_abi("flambeau_cuda._C");
  m.doc() = "flambeau-cuda's compiled bindings (use the flambeau_cuda package instead)";

  m.def(
      "_register_backend", [] { return flambeau::cuda::register_backend()->device_count(); },
      "Registers the CUDA backend with core (once); returns the number of devices.");
  m.def(
      "_unavailable_reason", [] { return flambeau::cuda::backend()->unavailable_reason(); },
      "Why cudaGetDeviceCount failed (no driver, no GPU), or ''.");
  m.def(
      "_device_memory", [](int index) { return boxed(flambeau::cuda::make_device_memory(index)); },
      py::arg("index"));
  m.def("_pinned_memory", [] { return boxed(flambeau::cuda::make_pinned_memory()); });
  m.def("_install", &flambeau::cuda::install_allocators_and_kernels, py::arg("device_allocators"),
        py::arg("pinned_allocator"));
  m.def(
      "_get_device_name",
      [](int index) {
        checked_device(index, "get_device_name");
        cudaDeviceProp prop{};
        FBC_CHECK("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, index));
        return std::string(prop.name);
      },
      py::arg("index"));
  m.def(
      "_mem_get_info",
      [](int index) {
        checked_device(index, "mem_get_info");
        const flambeau::cuda::CudaDeviceSetter on(index);  // cudaMemGetInfo answers for the current device
        size_t free = 0;
        size_t total = 0;
        FBC_CHECK("cudaMemGetInfo", cudaMemGetInfo(&free, &total));
        return std::make_pair(free, total);
      },
      py::arg("index"), "(free, total) bytes of GPU `index` as the driver counts them (cudaMemGetInfo).");
  m.def(
      "_manual_seed",
      [](int index, uint64_t seed) { flambeau::cuda::backend()->generator(index).manual_seed(seed); },
      py::arg("index"), py::arg("seed"));
  m.def(
      "_initial_seed", [](int index) { return flambeau::cuda::backend()->generator(index).initial_seed(); },
      py::arg("index"));
  m.def("_set_cublas_search_dirs", &flambeau::cuda::set_cublas_search_dirs, py::arg("dirs"));
  m.def("_load_cublas", &flambeau::cuda::load_cublas, py::arg("search_dirs"),
        "Loads libcublas (Note [cuBLAS loading]); returns its path.");
  m.def("_cublas_path", &flambeau::cuda::cublas_path);
  m.def("_runtime_version", [] {
    int v = 0;
    FBC_CHECK("cudaRuntimeGetVersion", cudaRuntimeGetVersion(&v));
    return v;
  });
  m.def(
      "_stream_handle",
      [](const std::shared_ptr<flambeau::Stream>& s) {
        // __cuda_array_interface__ v3: 1 is the legacy default stream (0 is not allowed).
        cudaStream_t h = flambeau::cuda::as_cuda(*s, "_stream_handle").handle();
        return h == nullptr ? uintptr_t{1} : reinterpret_cast<uintptr_t>(h);
      },
      py::arg("stream"));
  m.def(
      "_host_fallback_error",
      [](const std::string& op) {
        // A stand-in stream: CUDA's run_host_fallback refuses before touching it.
        struct NoStream final : flambeau::Stream {
          flambeau::Device device() const override { return flambeau::Device(flambeau::DeviceType::CUDA, 0); }
          int64_t id() const override { return 0; }
          bool query() const override { return true; }
          void synchronize() override {}
          void wait_event(const flambeau::Event&) override {}
        } stream;
        flambeau::cuda::backend()->run_host_fallback(stream, op.c_str(), [] {});
      },
      py::arg("op"),
      "Test hook: raises what a call of `op` on CUDA tensors raises when flambeau-cuda has no kernel "
      "for it (the host fallback, refused); needs no GPU.");
  m.def(
      "_layer_norm_on_host",
      [](const flambeau::Tensor& x, std::vector<int64_t> shape, std::optional<flambeau::Tensor> w,
         std::optional<flambeau::Tensor> b,
         double eps) {
        flambeau::meta::check_layer_norm("layer_norm", x, shape, w, b);  // the op's check step
        return flambeau::cuda::norm_functions().layer_norm(x, shape, w, b, eps);
      },
      "Test hook: flambeau-cuda's native_layer_norm run on cpu tensors (its ops dispatch to the CPU).");
  m.def("_layer_norm_backward_on_host",
        [](const flambeau::Tensor& g, const flambeau::Tensor& x, std::vector<int64_t> shape,
           const flambeau::Tensor& mean, const flambeau::Tensor& rstd, std::optional<flambeau::Tensor> w,
           bool input_g, bool weight_g, bool bias_g) {
          flambeau::meta::check_layer_norm_grad("layer_norm_backward", g, x, shape, mean, rstd, w);
          return flambeau::cuda::norm_functions().layer_norm_backward(g, x, shape, mean, rstd, w, input_g,
                                                                      weight_g, bias_g);
        });
  m.def("_batch_norm_on_host",
        [](const flambeau::Tensor& x, std::optional<flambeau::Tensor> w, std::optional<flambeau::Tensor> b,
           std::optional<flambeau::Tensor> rm, std::optional<flambeau::Tensor> rv, bool training,
           double momentum, double eps) {
          flambeau::meta::check_batch_norm("batch_norm", x, w, b, rm, rv, training, eps);
          return flambeau::cuda::norm_functions().batch_norm(x, w, b, rm, rv, training, momentum, eps);
        });
  m.def("_batch_norm_backward_on_host",
        [](const flambeau::Tensor& g, const flambeau::Tensor& x, std::optional<flambeau::Tensor> w,
           const flambeau::Tensor& mean, const flambeau::Tensor& invstd, bool train, bool input_g,
           bool weight_g, bool bias_g) {
          flambeau::meta::check_batch_norm_grad("batch_norm_backward", g, x, w, mean, invstd);
          return flambeau::cuda::norm_functions().batch_norm_backward(g, x, w, mean, invstd, train, input_g,
                                                                      weight_g, bias_g);
        });
  m.def(
      "_index_on_host",
      [](const flambeau::Tensor& self, const flambeau::OptionalTensorList& indices) {
        flambeau::meta::check_index("index", self, indices);  // the op's check step
        return flambeau::cuda::index_impl(self, indices);
      },
      "Test hook: flambeau-cuda's index (its plan of dispatched ops) run on cpu tensors.");
  m.def(
      "_index_put_on_host",
      [](flambeau::Tensor self, const flambeau::OptionalTensorList& indices, const flambeau::Tensor& values,
         bool accumulate) {
        // The CUDA write kernel's loop (index_put.cu), on the host.
        const auto put = [](flambeau::Tensor& t, const flambeau::Tensor& offsets, const flambeau::Tensor& v,
                            bool acc) {
          const int64_t* off = offsets.data<int64_t>();
          const size_t isz = flambeau::itemsize(t.dtype());
          auto* dst = static_cast<char*>(t.data_ptr());
          const auto* src = static_cast<const char*>(v.data_ptr());
          for (int64_t i = 0; i < v.numel(); ++i) {
            if (!acc) {
              std::memcpy(dst + off[i] * static_cast<int64_t>(isz), src + i * static_cast<int64_t>(isz), isz);
            } else if (t.dtype() == flambeau::ScalarType::Float64) {
              reinterpret_cast<double*>(dst)[off[i]] += reinterpret_cast<const double*>(src)[i];
            } else if (t.dtype() == flambeau::ScalarType::Float32) {
              reinterpret_cast<float*>(dst)[off[i]] += reinterpret_cast<const float*>(src)[i];
            } else if (t.dtype() == flambeau::ScalarType::Int64) {
              reinterpret_cast<int64_t*>(dst)[off[i]] += reinterpret_cast<const int64_t*>(src)[i];
            } else {
              throw flambeau::TypeError(
                  "[index_put_] host test hook: accumulate takes float32, float64, int64");
            }
          }
        };
        flambeau::meta::check_index_put("index_put_", self, indices, values);  // the op's check step
        flambeau::cuda::index_put_impl(self, indices, values, accumulate, put);
        return self;
      },
      "Test hook: flambeau-cuda's index_put_ (its plan, then its write kernel's loop) run on cpu tensors.");
  m.def(
      "_shape_op_on_host",
      [](const std::string& name, const flambeau::Tensor& self, std::vector<int64_t> args) {
        if (name == "flip") return flambeau::cuda::flip_impl(self, args);
        FB_CHECK_VALUE(args.size() == 1, "[_shape_op_on_host] ", name, " takes one int");
        if (name == "tril") return flambeau::cuda::tril_impl(self, args[0]);
        FB_CHECK_VALUE(name == "triu", "[_shape_op_on_host] unknown op ", name);
        return flambeau::cuda::triu_impl(self, args[0]);
      },
      "Test hook: flambeau-cuda's flip/tril/triu (made of dispatched ops) run on cpu tensors.");
  m.def(
      "_index_fill_on_host",
      [](const flambeau::Tensor& self, int64_t dim, const flambeau::Tensor& index, double value) {
        // The op's check step first, as the dispatcher runs it before the kernel (Note [Meta step]).
        flambeau::meta::check_index_slices("index_fill", self, dim, index, nullptr);
        flambeau::meta::check_value_fits("index_fill", flambeau::Scalar(value), self);
        return flambeau::cuda::index_fill_impl(self, dim, index, flambeau::Scalar(value));
      },
      "Test hook: flambeau-cuda's index_fill (a host-built mask, then where) run on cpu tensors.");
  m.def(
      "_pad_on_host",
      [](const flambeau::Tensor& self, std::vector<int64_t> pad, const std::string& mode, double value) {
        return flambeau::cuda::pad_nd_impl(self, pad, mode, value);
      },
      "Test hook: flambeau-cuda's _pad_nd (core's map, then dispatched ops) run on cpu tensors.");
  m.def(
      "_pad_backward_on_host",
      [](const flambeau::Tensor& grad, std::vector<int64_t> input_size, std::vector<int64_t> pad,
         const std::string& mode) {
        return flambeau::cuda::pad_nd_backward_impl(grad, input_size, pad, mode);
      },
      "Test hook: flambeau-cuda's _pad_nd_backward run on cpu tensors.");
  m.def("_check_error", [](int code, const std::string& call) {
    // Test support: the exception a CUDA error code becomes.
    if (code != 0) flambeau::cuda::throw_cuda_error(call.c_str(), static_cast<cudaError_t>(code));
  });
}
