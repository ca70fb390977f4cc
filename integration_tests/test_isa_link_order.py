"""tools/check_isa_link_order.py (Note [Instruction-set objects link last]): on objects the compiler builds,
a link line that names an AVX-512 object before a baseline one calling the same inline function fails,
with the function and both objects named; the order CMake uses (baseline, AVX2, AVX-512) passes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "check_isa_link_order.py"
SHARED = (
    "inline long scaled_sum(const long* v, long n) {\n"
    "  long s = 0;\n  for (long i = 0; i < n; ++i) s += 3 * v[i];\n  return s;\n}\n"
)
SOURCES = {
    "src/cpu/sum.cpp": SHARED + "long sum_base(const long* v, long n) { return scaled_sum(v, n); }\n",
    "src/cpu/sum_avx2.cpp": SHARED + "long sum_avx2(const long* v, long n) { return scaled_sum(v, n); }\n",
    "src/cpu/sum_avx512.cpp": SHARED + "long sum_avx512(const long* v, long n) { return scaled_sum(v, n); }\n",
    "src/cpu/own_avx512.cpp": "inline int only_here(int x) { return x + 1; }\nint f(int x) { return only_here(x); }\n",
}
FLAGS = {"sum_avx2.cpp": ["-mavx2", "-mfma"], "sum_avx512.cpp": ["-mavx512f"], "own_avx512.cpp": ["-mavx512f"]}


@pytest.fixture(scope="module")
def objects(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    if shutil.which("g++") is None or shutil.which("nm") is None:
        pytest.skip("needs g++ and nm (binutils), which build flambeau_core")
    build = tmp_path_factory.mktemp("isa_build")
    objs = {}
    for rel, text in SOURCES.items():
        src = build / rel
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
        obj = f"CMakeFiles/flambeau_core.dir/{rel}.o"
        (build / obj).parent.mkdir(parents=True, exist_ok=True)
        # -O0, as the sanitized build: the inline function stays out of line in every object.
        subprocess.run(["g++", "-O0", "-c", *FLAGS.get(src.name, []), str(src), "-o", str(build / obj)], check=True)
        objs[src.name] = obj
    return build, objs


def _check(build: Path, order: list[str]) -> subprocess.CompletedProcess:
    line = "build libflambeau_core.so: CXX_SHARED_LIBRARY_LINKER__flambeau_core_Release " + " ".join(order)
    (build / "build.ninja").write_text(f"rule CXX_SHARED_LIBRARY_LINKER__flambeau_core_Release\n{line} || codegen\n")
    return subprocess.run([sys.executable, str(TOOL), str(build)], capture_output=True, text=True)


def test_an_avx512_copy_linked_before_its_baseline_caller_fails(objects):
    build, objs = objects
    got = _check(build, [objs["sum_avx512.cpp"], objs["sum.cpp"], objs["sum_avx2.cpp"], objs["own_avx512.cpp"]])
    assert got.returncode == 1, got.stdout + got.stderr
    assert "scaled_sum(long const*, long): linked from" in got.stdout
    assert "sum_avx512.cpp.o (AVX-512)" in got.stdout and "sum.cpp.o (baseline) calls it too" in got.stdout
    assert "1 linked from a higher instruction set" in got.stdout
    assert "only_here" not in got.stdout  # emitted by one object only: nothing to choose


def test_an_avx2_copy_linked_before_its_baseline_caller_fails(objects):
    build, objs = objects
    got = _check(build, [objs["sum_avx2.cpp"], objs["sum.cpp"], objs["sum_avx512.cpp"]])
    assert got.returncode == 1 and "sum_avx2.cpp.o (AVX2)" in got.stdout, got.stdout + got.stderr


def test_baseline_then_avx2_then_avx512_passes(objects):
    build, objs = objects
    got = _check(build, [objs["sum.cpp"], objs["sum_avx2.cpp"], objs["sum_avx512.cpp"], objs["own_avx512.cpp"]])
    assert got.returncode == 0, got.stdout + got.stderr
    assert "4 objects, 1 functions shared with an instruction-set object, 0 linked" in got.stdout


def test_a_build_directory_without_the_link_line_is_refused(tmp_path):
    (tmp_path / "build.ninja").write_text("rule cc\n")
    got = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True, text=True)
    assert got.returncode != 0 and "no link line for libflambeau_core.so" in got.stderr
