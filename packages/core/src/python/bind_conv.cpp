// _pack_conv_weight and _conv_packed (src/cpu/conv/conv_packed.h): fb.compile's eval convolutions on a
// weight packed once, with the residual add and relu in the kernel's stores. Not ops of the table (no
// autograd, no meta rule): a private pair for the compiler, as torch's mkldnn prepacking is.
#include "../cpu/conv/conv_packed.h"
#include "common.h"

namespace flambeau::python {

void init_conv(py::module_& m) {
  m.def("_pack_conv_weight", &cpu::pack_conv_weight, py::arg("weight"), py::arg("groups") = 1,
        "A float32 2-D convolution weight packed for _conv_packed (1-D), or an empty tensor where the "
        "direct kernel does not run it (no AVX-512, another dtype or shape).");
  m.def(
      "_conv_packed",
      [](const Tensor& input, const Tensor& weight, const Tensor& packed, const std::optional<Tensor>& bias,
         std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation,
         int64_t groups, const std::optional<Tensor>& residual, bool relu) {
        return without_gil([&] {
          return cpu::conv_packed(input, weight, packed, bias, stride, padding, dilation, groups, residual,
                                  relu);
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("packed"), py::arg("bias"), py::arg("stride"),
      py::arg("padding"), py::arg("dilation"), py::arg("groups"), py::arg("residual") = py::none(),
      py::arg("relu") = false,
      "relu?(conv2d(input, weight, bias, stride, padding, dilation, groups) + residual?) with packed = "
      "_pack_conv_weight(weight, groups): the separate ops' values (they run where the kernel does not "
      "take the call).");
}

}  // namespace flambeau::python
