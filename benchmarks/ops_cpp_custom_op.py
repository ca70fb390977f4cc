#!/usr/bin/env python
"""The per-call cost of an operator registered from C++, FLAMBEAU_LIBRARY vs TORCH_LIBRARY, in one process.

The op is ``bench_cpp::add(Tensor a, Tensor b) -> Tensor`` whose C++ kernel calls the library's own
``add`` on 1-element float32 tensors, so its cost over the built-in ``add`` is the call of a C++
operator (Note [C++ operator call] in packages/core/src/python/bind_library.cpp). Five rows per
library: the built-in (``fb.add`` / ``torch.add``), the C++ operator through ``ops.bench_cpp.add``,
the same with an input that requires grad (the autograd path: the C++ backward is called from an
autograd Function), and a Python ``custom_op`` whose body calls ``add``. Both extensions are built
with the library's ``load_inline(..., is_python_module=False)`` into a temporary folder (the first
run compiles them: a minute or more). Rounds interleave the libraries, 1 intra-op thread each;
prints min and median per call in microseconds and each row's overhead over the built-in (the
min row: the difference of the mins; the median row: the median of the per-round differences).

    .nox/dev/bin/python benchmarks/ops_cpp_custom_op.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import flambeau as fb
import torch
import torch.utils.cpp_extension
from flambeau.utils import cpp_extension
from ops_custom_op import print_table, time_cases  # the interleaved rounds and the table

FB_SOURCE = r"""
using flambeau::Tensor;
Tensor add_kernel(const Tensor& a, const Tensor& b) { return flambeau::add(a, b); }
std::tuple<Tensor, Tensor> add_backward(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return {g, g}; }
FLAMBEAU_LIBRARY(bench_cpp, m) {
  m.def("add(Tensor a, Tensor b) -> Tensor");
  m.impl("add", flambeau::kCPU, &add_kernel);
  m.impl_backward("add", &add_backward);
}
"""

TORCH_SOURCE = r"""
#include <torch/library.h>
#include <torch/autograd.h>
at::Tensor add_kernel(const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }
struct AddFunction : torch::autograd::Function<AddFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& a, const at::Tensor& b) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return add_kernel(a, b);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*, torch::autograd::tensor_list g) {
    return {g[0], g[0]};
  }
};
at::Tensor add_autograd(const at::Tensor& a, const at::Tensor& b) { return AddFunction::apply(a, b); }
TORCH_LIBRARY(bench_cpp, m) { m.def("add(Tensor a, Tensor b) -> Tensor"); }
TORCH_LIBRARY_IMPL(bench_cpp, CPU, m) { m.impl("add", &add_kernel); }
TORCH_LIBRARY_IMPL(bench_cpp, Autograd, m) { m.impl("add", &add_autograd); }
"""


def definitions(build_dir: str) -> dict[str, dict[str, object]]:
    os.environ.setdefault("FLAMBEAU_EXTENSIONS_DIR", os.path.join(build_dir, "flambeau"))
    cpp_extension.load_inline("bench_cpp_fb", FB_SOURCE, is_python_module=False)
    torch_dir = os.path.join(build_dir, "torch")
    os.makedirs(torch_dir, exist_ok=True)
    torch.utils.cpp_extension.load_inline(
        "bench_cpp_torch", TORCH_SOURCE, is_python_module=False, build_directory=torch_dir
    )

    @fb.library.custom_op("bench_py::add", mutates_args=())
    def fb_py(a: fb.Tensor, b: fb.Tensor) -> fb.Tensor:
        return fb.add(a, b)

    @torch.library.custom_op("bench_py::add", mutates_args=())
    def torch_py(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.add(a, b)

    fx, tx = fb.ones(1), torch.ones(1)
    fg, tg = fb.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
    fb_op, torch_op = fb.ops.bench_cpp.add, torch.ops.bench_cpp.add
    return {
        "flambeau": {
            "built-in add": lambda: fb.add(fx, fx),
            "C++ op (ops.bench_cpp.add)": lambda: fb_op(fx, fx),
            "C++ op, requires_grad": lambda: fb_op(fg, fx),
            "Python custom_op": lambda: fb_py(fx, fx),
        },
        "torch": {
            "built-in add": lambda: torch.add(tx, tx),
            "C++ op (ops.bench_cpp.add)": lambda: torch_op(tx, tx),
            "C++ op, requires_grad": lambda: torch_op(tg, tx),
            "Python custom_op": lambda: torch_py(tx, tx),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--build-dir", default=os.path.join(tempfile.gettempdir(), "bench_cpp_custom_op"))
    args = ap.parse_args()
    fb.set_num_threads(1)
    torch.set_num_threads(1)
    cases = definitions(args.build_dir)
    names = list(cases["flambeau"])
    print_table(time_cases(cases, args.rounds), names, "built-in add", names[1:])


if __name__ == "__main__":
    main()
