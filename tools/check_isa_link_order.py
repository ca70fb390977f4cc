"""Check: every function shared by baseline and AVX2/AVX-512 objects of libflambeau_core links from the lowest.

Note [Instruction-set objects link last] (packages/core/CMakeLists.txt): an inline function or
template that is not inlined is emitted in every object that calls it, and the linker keeps the copy
of the first object in link order for every caller. A copy emitted by an `*_avx512.cpp` object may
hold AVX-512 instructions; had the library kept it, baseline code calling the function would die of
SIGILL on a CPU without AVX-512. This reads the library's link line in a build directory's
build.ninja and the weak function symbols of each of its objects (nm), and checks that for every
function an instruction-set object emits, the first object in link order is one of the lowest
instruction set among those that emit it (baseline < *_avx2.cpp < *_avx512.cpp).

    python tools/check_isa_link_order.py build/sanitize/core

Run by `nox -s sanitize` after it builds core: at -O0 almost nothing is inlined, so every shared
function is in the objects (a release build inlines most of them away and hides a wrong order).
Exit status 1, with the functions and objects, when the order is wrong.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LEVELS = ("baseline", "AVX2", "AVX-512")


def level(obj: str) -> int:
    """The instruction set CMake compiles an object's source for (by its file name)."""
    if obj.endswith("_avx512.cpp.o"):
        return 2
    return 1 if obj.endswith("_avx2.cpp.o") else 0


def link_order(build: Path) -> list[str]:
    """The objects of libflambeau_core.so, in the order its link line names them."""
    for line in (build / "build.ninja").read_text().splitlines():
        if line.startswith("build libflambeau_core.so:"):
            inputs = shlex.split(line.split(":", 1)[1])[1:]  # after the rule's name
            return [word for word in inputs if word.endswith(".o")]
    raise SystemExit(f"check_isa_link_order: no link line for libflambeau_core.so in {build / 'build.ninja'}")


def weak_functions(path: Path) -> set[str]:
    """The weak (COMDAT) function symbols an object defines."""
    out = subprocess.run(["nm", "--defined-only", str(path)], capture_output=True, text=True, check=True).stdout
    return {parts[2] for parts in map(str.split, out.splitlines()) if len(parts) == 3 and parts[1] in ("W", "w")}


def main(build_dir: str) -> int:
    build = Path(build_dir)
    objects = link_order(build)
    with ThreadPoolExecutor() as pool:
        symbols = list(pool.map(lambda obj: weak_functions(build / obj), objects))
    emitters: dict[str, list[str]] = {}
    for obj, names in zip(objects, symbols, strict=True):
        for name in names:
            emitters.setdefault(name, []).append(obj)
    checked = wrong = 0
    for name, objs in sorted(emitters.items()):
        levels = [level(obj) for obj in objs]
        if max(levels) == 0 or len(objs) == 1:
            continue
        checked += 1
        if levels[0] != min(levels):
            wrong += 1
            lowest = objs[levels.index(min(levels))]
            demangled = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
            print(
                f"{demangled}: linked from {objs[0]} ({LEVELS[levels[0]]}); "
                f"{lowest} ({LEVELS[min(levels)]}) calls it too"
            )
    print(
        f"check_isa_link_order: {len(objects)} objects, {checked} functions shared with an instruction-set "
        f"object, {wrong} linked from a higher instruction set than one of their callers"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
