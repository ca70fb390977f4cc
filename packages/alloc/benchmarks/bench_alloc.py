"""What the caching allocator buys on CPU (a benchmark, not a test).

    .nox/dev/bin/python packages/alloc/benchmarks/bench_alloc.py

(a) allocate + free of 64 MiB, timed in C++ (flambeau_alloc._C._bench_alloc_free):
    the system allocator (posix_memalign -> mmap/munmap at this size) against
    the caching allocator; bare, and with one write per 4 KiB page before the
    free, as a fresh op output gets.
(b) ``a + b`` into a fresh 64 MiB float32 output, flambeau with the system
    allocator, with the caching allocator, in place (``a.add_(b)``: no new
    output at all, the ceiling), and PyTorch the same way, in one process.
    GB/s counts 3 x 64 MiB (two reads, one write) per op.
"""

from __future__ import annotations

import os
import timeit

import flambeau_alloc
import flambeau_core as fc
import torch
from flambeau_alloc import _C

MiB = 1 << 20
NBYTES = 64 * MiB
N = NBYTES // 4


def best(fn, number: int, repeat: int = 7) -> float:
    """Seconds per call: the minimum over `repeat` runs of `number` calls."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def raw_alloc_free() -> None:
    system, caching = fc.system_allocator(), flambeau_alloc.CachingAllocator()
    print("(a) allocate + free of 64 MiB, per pair")
    for touch in (False, True):
        per = {}
        for name, a in (("system", system), ("caching", caching)):
            iters = 20 if touch else (200 if name == "system" else 20000)
            _C._bench_alloc_free(a, NBYTES, 3, touch)
            per[name] = min(_C._bench_alloc_free(a, NBYTES, iters, touch) for _ in range(5))
        label = "with a write per 4 KiB page" if touch else "bare"
        print(
            f"    {label:28s} system {per['system'] * 1e6:9.2f} us   caching {per['caching'] * 1e6:9.2f} us"
            f"   ({per['system'] / per['caching']:.0f}x)"
        )


def add_fresh_output() -> None:
    print(
        f"(b) a + b into a fresh 64 MiB float32 output ({fc.get_num_threads()} threads flambeau, "
        f"{torch.get_num_threads()} threads torch; GB/s = 3 x 64 MiB / time)"
    )
    gbps = lambda s: 3 * NBYTES / s / 1e9  # noqa: E731
    rows = []

    def run(label, fn, number=20):
        s = best(fn, number)
        rows.append((label, s))
        print(f"    {label:44s} {s * 1e3:8.2f} ms  {gbps(s):6.1f} GB/s")

    fc.set_allocator(fc.system_allocator())
    a, b = fc.ones(N), fc.ones(N)
    run("flambeau, system allocator", lambda: a + b)
    flambeau_alloc.enable()
    a, b = fc.ones(N), fc.ones(N)
    run("flambeau, caching allocator", lambda: a + b)
    run("flambeau, in place a.add_(b) (no new output)", lambda: a.add_(b))
    flambeau_alloc.disable()
    ta, tb = torch.ones(N), torch.ones(N)
    run("torch 2.13.0, a + b", lambda: ta + tb)
    run("torch 2.13.0, in place ta.add_(tb)", lambda: ta.add_(tb))


if __name__ == "__main__":
    print(
        f"torch {torch.__version__}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}; "
        f"THP: {open('/sys/kernel/mm/transparent_hugepage/enabled').read().strip()}"
    )
    raw_alloc_free()
    add_fresh_output()
