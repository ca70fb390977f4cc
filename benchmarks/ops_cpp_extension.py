#!/usr/bin/env python
"""C++ extensions compiled on demand: flambeau.utils.cpp_extension vs torch.utils.cpp_extension, in one run.

Builds the same one-function extension with each library's ``load_inline``: ``mul(a, b)`` returning
the core op's result (``flambeau::mul`` / ``torch::mul``; the modules have different names: two extension modules of one
name in one process are one module to Python), so an extension call and the built-in op
(``fb.mul`` / ``torch.mul``) run the same kernel and differ only in the call path. Reports:

* the first build (a fresh extensions folder, so nothing is cached; ``--torch-build`` off skips
  torch's, which parses ``torch/extension.h``);
* a cached re-load: ``load_inline`` again in this process, and in a new process (after the import);
* the per-call time of the built-in op and of the extension function on 1-element float32 tensors
  (min and median over interleaved rounds, 1 intra-op thread), and the extension's overhead.

Only figures from one run count (a shared, noisy machine).

    .nox/dev/bin/python benchmarks/ops_cpp_extension.py [--rounds 9] [--no-torch-build]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import flambeau as fb
import side_by_side  # benchmarks/side_by_side.py: timeit
from flambeau.utils import cpp_extension as fb_ext

FB_SOURCE = "flambeau::Tensor mul(const flambeau::Tensor& a, const flambeau::Tensor& b) { return flambeau::mul(a, b); }"
TORCH_SOURCE = "torch::Tensor mul(const torch::Tensor& a, const torch::Tensor& b) { return torch::mul(a, b); }"

RELOAD = """
import os, sys, time
import flambeau
from flambeau.utils.cpp_extension import load_inline
t0 = time.perf_counter()
load_inline("fb_bench_mul", sys.argv[1], functions=["mul"])
print(time.perf_counter() - t0)
"""


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--no-torch-build", action="store_true", help="skip torch's load_inline")
    ap.add_argument("--root", help="extensions folder to reuse (default: a fresh one, so the first builds compile)")
    args = ap.parse_args()
    root = args.root or tempfile.mkdtemp(prefix="cpp_extension_bench_")
    os.environ["FLAMBEAU_EXTENSIONS_DIR"] = os.path.join(root, "flambeau")
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(root, "torch")

    fb_mod, fb_first = timed(lambda: fb_ext.load_inline("fb_bench_mul", FB_SOURCE, functions=["mul"]))
    _, fb_reload = timed(lambda: fb_ext.load_inline("fb_bench_mul", FB_SOURCE, functions=["mul"]))
    out = subprocess.run([sys.executable, "-c", RELOAD, FB_SOURCE], capture_output=True, text=True, check=True)
    fb_reload_process = float(out.stdout.strip())
    print(f"flambeau load_inline: first build {fb_first:.1f} s, cached re-load {fb_reload * 1e3:.1f} ms in-process, "
          f"{fb_reload_process * 1e3:.1f} ms in a new process")  # fmt: skip

    cases = {"flambeau": {"built-in fb.mul": lambda: fb.mul(fx, fx), "extension mul": lambda: fb_mod.mul(fx, fx)}}
    fx = fb.ones(1)
    fb.set_num_threads(1)
    if not args.no_torch_build:
        import torch
        from torch.utils import cpp_extension as torch_ext

        torch.set_num_threads(1)
        torch_mod, torch_first = timed(lambda: torch_ext.load_inline("bench_mul", TORCH_SOURCE, functions=["mul"]))
        _, torch_reload = timed(lambda: torch_ext.load_inline("bench_mul", TORCH_SOURCE, functions=["mul"]))
        print(
            f"torch load_inline: first build {torch_first:.1f} s, cached re-load {torch_reload * 1e3:.1f} ms in-process"
        )
        tx = torch.ones(1)
        cases["torch"] = {
            "built-in torch.mul": lambda: torch.mul(tx, tx),
            "extension mul": lambda: torch_mod.mul(tx, tx),
        }

    times = {(lib, n): [] for lib in cases for n in cases[lib]}
    reps = {k: max(1, int(0.05 / max(side_by_side.timeit(cases[k[0]][k[1]], 100), 1e-7))) for k in times}
    for r in range(args.rounds):
        for lib in list(cases) if r % 2 == 0 else list(cases)[::-1]:
            for n, f in cases[lib].items():
                times[(lib, n)].append(side_by_side.timeit(f, reps[(lib, n)]))
    print(f"{'per call (us), 1-element float32':40s} {'min':>8s} {'median':>8s}")
    for (lib, n), ts in times.items():
        print(f"{lib + ': ' + n:40s} {min(ts) * 1e6:8.2f} {statistics.median(ts) * 1e6:8.2f}")
    for lib, names in cases.items():
        builtin, ext = (times[(lib, n)] for n in names)
        diffs = [a - b for a, b in zip(ext, builtin, strict=True)]
        print(f"{lib + ': extension - built-in':40s} {(min(ext) - min(builtin)) * 1e6:8.2f} "
              f"{statistics.median(diffs) * 1e6:8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
