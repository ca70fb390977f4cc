"""Generated C++ for a fused elementwise group: the source, its build through cpp_extension, the loaded function.

Note [Fused kernel]
A group (Note [Elementwise fusion] in ``_fusion.py``) becomes one ``extern "C"`` function that walks the
output's elements once: it reads each external input (``a0[i]`` for a tensor of the output's shape,
``a1[j]`` for a bias along the last dimension, ``j = i - row``, ``a2[r]`` for one value per row, ``r`` the
row's index, one hoisted load for a one-element tensor),
computes the group's ops as a straight line of locals (``const T t2 = fb_gelu(t1);``) and stores only the
values used after the group. The sizes (``n`` elements, ``inner`` for the last dimension) and the Python
numbers of the ops (``x * 0.5``, ``clamp(x, 0, 6)``) are arguments, so another batch size or scale runs the
same machine code; only an op's kind, the dtype, the inputs' broadcast classes and a ``pow`` exponent shape
the text. The loop is a plain ``#pragma omp simd`` loop under core's ``parallel_for`` schedule (threads above a
grain of elements), compiled with ``-O3 -march=native -fno-trapping-math`` (see ``CFLAGS``), no fast-math (NaN
and infinities behave as in eager).
In float32, ``exp`` (and so ``sigmoid`` and ``silu``), ``tanh`` and ``erfc`` (``gelu``) are branch-free
polynomials of the preamble, within a few ulp of the C library (``erfc``: core's fit, 2e-7 relative, on
``e = exp(-z^2)`` that gelu's derivative shares), so the whole loop vectorises; float64 calls the C
library, as eager does, and ``log`` is the C library's in both.

The source includes no heavy header, since parsing one costs more than compiling the kernel: ``<cstdint>``,
``<bit>``, ``<flambeau/parallel_chunks.h>`` (core's thread pool as plain functions; ``flambeau/parallel.h``
pulls in ``<algorithm>`` and ``<atomic>``, ~0.9 s of g++'s time) and ``<flambeau/abi.h>``; the C library's
functions are GCC's builtins, which ``<cmath>``'s (0.3 s) are too (``std::exp(float)`` is
``__builtin_expf``), so a fused kernel compiles in ~0.15 s instead of ~1.2 s. It carries the ABI marker
itself, so ``cpp_extension.load`` checks it; the
library is loaded with ``ctypes`` (no pybind11 module: a call costs well under a microsecond plus one
``data_ptr()`` per tensor). The build is ``cpp_extension.load``'s: cached on disk under a name made of the
hash of the text, which holds the CPU's instruction-set flags in a comment (``-march=native`` means another
ISA on another machine sharing the cache), and keyed there by flags, compiler and ABI; in this process a
text is built and loaded once (:func:`kernel`).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import _disk_cache

# -fno-trapping-math: the kernels never read floating-point exception flags; without it GCC keeps the
# selects of the branch-free exp and tanh (NaN and range checks) as branches on AVX2 (no mask registers) and
# the loop of any kernel with exp, tanh, sigmoid, silu or gelu stays scalar (core's vector kernels take the
# same flag, packages/core/CMakeLists.txt).
CFLAGS = ["-O3", "-march=native", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math"]

# The head of every generated kernel (Note [Fused kernel]): <cstdint>, core's thread pool as plain functions
# (run_chunks_on_pool for the batch norm relu and table kernels, parallel_for_chunks under fb_parallel_for) and
# the ABI marker.
LIGHT_POOL_PREAMBLE = r"""#include <cstdint>

#include <flambeau/parallel_chunks.h>
#include <flambeau/abi.h>

namespace {
[[gnu::used]] constexpr char kAbiMarker[] = "FLAMBEAU_ABI_TAG=" FLAMBEAU_ABI_TAG ";";
}  // namespace
"""


def light_pool_text(what: str, body: str) -> str:
    """A light kernel's whole text: a comment naming it and the ISA (part of its hash), the light preamble,
    ``body``."""
    return f"// fb.compile {what}; isa: {isa()}\n{LIGHT_POOL_PREAMBLE}{body}"


PREAMBLE = (
    "#include <bit>\n"
    + LIGHT_POOL_PREAMBLE
    + r"""
namespace {
// flambeau::parallel_for (flambeau/parallel.h) without its headers: the same schedule, through core's plain
// function. A kernel's loop does not throw, so no exception is carried across the threads.
template <class F> void fb_parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  flambeau::detail::parallel_for_chunks(
      begin, end, grain, [](void* p, int64_t b, int64_t e) { (*static_cast<const F*>(p))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

// The C library's functions as <cmath> gives them, without its parse time: GCC's builtins.
#define FB_LIBM1(name) \
  [[gnu::always_inline]] inline float fb_##name(float a) { return __builtin_##name##f(a); } \
  [[gnu::always_inline]] inline double fb_##name(double a) { return __builtin_##name(a); }
#define FB_LIBM2(name) \
  [[gnu::always_inline]] inline float fb_##name(float a, float b) { return __builtin_##name##f(a, b); } \
  [[gnu::always_inline]] inline double fb_##name(double a, double b) { return __builtin_##name(a, b); }
FB_LIBM1(fabs) FB_LIBM1(sqrt) FB_LIBM1(log) FB_LIBM1(erfc) FB_LIBM2(pow) FB_LIBM2(copysign)
#undef FB_LIBM1
#undef FB_LIBM2
[[gnu::always_inline]] inline double fb_libm_exp(double a) { return __builtin_exp(a); }
[[gnu::always_inline]] inline double fb_libm_tanh(double a) { return __builtin_tanh(a); }

template <class T> [[gnu::always_inline]] inline T fb_exp(T a) { return fb_libm_exp(a); }
template <class T> [[gnu::always_inline]] inline T fb_tanh(T a) { return fb_libm_tanh(a); }

// float32: branch-free (so the loop vectorises), within a few ulp of the C library. Core's vectorised
// loops use the same Cephes polynomials (src/cpu/elementwise/loops.h), but that header is not installed.
// exp: x = k ln2 + r (Cody-Waite split of ln2), a degree-6 polynomial for e^r on |r| <= ln2 / 2 (Cephes'
// coefficients), 2^k applied in two halves so that results down to the subnormals and up to inf come out.
template <> [[gnu::always_inline]] inline float fb_exp<float>(float x) {
  const float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float xs = x == x ? c : 0.0f;  // NaN: computed on 0, returned as NaN below
  // k = round(x / ln2) by adding and removing 1.5 * 2^23 (no std::floor: gcc does not vectorise it here).
  const float k = (xs * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xs - k * 0.693359375f) + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t ki = static_cast<int32_t>(k), k1 = ki / 2, k2 = ki - k1;
  const float s1 = std::bit_cast<float>((k1 + 127) << 23), s2 = std::bit_cast<float>((k2 + 127) << 23);
  const float e = p * s1 * s2;
  return x == x ? e : x;
}
// tanh: an odd polynomial below |x| = 0.625 (Cephes'), 1 - 2 / (e^{2|x|} + 1) with the sign above.
template <> [[gnu::always_inline]] inline float fb_tanh<float>(float x) {
  const float ax = fb_fabs(x), z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float big = fb_copysign(1.0f - 2.0f / (fb_exp(2.0f * ax) + 1.0f), x);
  return ax < 0.625f ? small : big;
}

// NaN propagates as in eager: relu, maximum, minimum and clamp keep a NaN input.
template <class T> inline T fb_relu(T a) { return a < T(0) ? T(0) : a; }
template <class T> inline T fb_sigmoid(T a) { return T(1) / (T(1) + fb_exp(-a)); }
template <class T> inline T fb_silu(T a) { return a / (T(1) + fb_exp(-a)); }
// erfc(z) for z >= 0 given e = exp(-z * z), which gelu's derivative shares with its density (one exp
// per element). float32: t q(t) e with t = 1 / (1 + z / 2) and core's degree-10 fit q (relative error
// below 2e-7; src/cpu/elementwise/vec_act_kernels.inc), evaluated by Estrin's scheme (a short dependency
// chain); float64: the C library.
template <class T> [[gnu::always_inline]] inline T fb_erfc_pos(T z, T) { return fb_erfc(z); }
template <> [[gnu::always_inline]] inline float fb_erfc_pos<float>(float z, float e) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  const float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
  const float q01 = 2.820948023e-01f + 2.820930568e-01f * t;
  const float q23 = 2.469027855e-01f + 1.751068573e-01f * t;
  const float q45 = 9.474984029e-02f - 6.389492145e-02f * t;
  const float q67 = 1.427219973e-01f - 4.698174344e-01f * t;
  const float q89 = 5.064031417e-01f - 2.407826871e-01f * t;
  const float q = (q01 + t2 * q23) + t4 * (q45 + t2 * q67) + t8 * (q89 + 4.442257768e-02f * t2);
  return t * q * e;
}
// gelu(a) = a Phi(a), Phi from z = |a| / sqrt(2) and e = exp(-z^2) (as core's gelu): the backward kernel's
// recomputed gelu and its derivative share z, e and erfc.
template <class T> [[gnu::always_inline]] inline T fb_gelu_cdf(T a, T z, T e) {
  const T c = fb_erfc_pos(z, e);
  return a < T(0) ? T(0.5) * c : T(1) - T(0.5) * c;
}
template <class T> inline T fb_gelu(T a) {
  const T z = fb_fabs(a) * T(0.70710678118654752440);
  return a * fb_gelu_cdf(a, z, fb_exp(-z * z));
}
template <class T> inline T fb_gelu_tanh(T a) {
  return T(0.5) * a * (T(1) + fb_tanh(T(0.79788456080286535588) * (a + T(0.044715) * a * a * a)));
}
template <class T> inline T fb_maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <class T> inline T fb_minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <class T> inline T fb_clamp_min(T a, T lo) { return a < lo ? lo : a; }
template <class T> inline T fb_clamp_max(T a, T hi) { return a > hi ? hi : a; }
template <class T> inline T fb_clamp(T a, T lo, T hi) { return fb_clamp_max(fb_clamp_min(a, lo), hi); }

// Derivatives (Note [Fused backward] in _fusion_grad.py): eager's formulas, {g} the result's gradient.
template <class T> inline T fb_sign(T a) { return a > T(0) ? T(1) : (a < T(0) ? T(-1) : T(0)); }  // 0 at NaN, as eager
template <class T> inline T fb_extremum_grad(T g, bool tie, bool wins) { return tie ? g * T(0.5) : (wins ? g : T(0)); }
template <class T> inline T fb_silu_grad(T g, T a) {
  const T s = fb_sigmoid(a);
  return g * (s * (T(1) + a * (T(1) - s)));
}
// Phi(a) + a phi(a), with z = |a| / sqrt(2), e = exp(-z^2) = sqrt(2 pi) phi(a).
template <class T> inline T fb_gelu_grad(T g, T a) {
  const T z = fb_fabs(a) * T(0.70710678118654752440), e = fb_exp(-z * z);
  return g * (fb_gelu_cdf(a, z, e) + a * (e * T(0.39894228040143267794)));
}
template <class T> inline T fb_gelu_tanh_grad(T g, T a) {
  const T beta = T(0.79788456080286535588), kappa = T(0.044715);
  const T th = fb_tanh(beta * (a + kappa * a * a * a));
  const T left = T(0.5) * a, right = T(1) + th;
  const T inner = beta * (T(1) + T(3) * kappa * a * a);
  return g * (T(0.5) * right + left * (T(1) - th * th) * inner);
}
}  // namespace
"""
)


@functools.cache
def isa() -> str:
    """The machine and a hash of its CPU flags: what ``-march=native`` compiles for (read on first use)."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    flags = line.split(":", 1)[1].strip()
                    break
    except OSError:
        flags = platform.processor()
    return f"{platform.machine()} {hashlib.sha256(flags.encode()).hexdigest()[:12]}"


_LAMBDA = re.compile(r"\[&\]\(int64_t \w+, int64_t \w+\) \{\n")
_POINTER_PARAM = re.compile(r"^(.*\*\s*__restrict)\s+(\w+)$")


def _restrict_in_lambda(body: str, signature: str) -> str:
    """The per-thread lambda reads the array arguments through ``__restrict`` locals of its own.

    Captured by reference, a pointer is loaded from the closure in every iteration (a store through another
    pointer might change it), which keeps GCC from vectorising the loop when it is called through
    ``parallel_for``'s thread pool (a conditional such as relu's gradient then becomes a branch per element,
    ~30x slower); local copies marked ``__restrict`` are loaded once.
    """
    m = _LAMBDA.search(body)
    if not m:
        return body
    params = [_POINTER_PARAM.match(p.strip()) for p in signature.split(",")]
    arrays = [(pm.group(1), pm.group(2)) for pm in params if pm and pm.group(2) != "c"]
    if not arrays:
        return body
    head, tail = body[: m.end()], body[m.end() :]
    names = "|".join(re.escape(name) for _, name in arrays)
    tail = re.sub(rf"\b({names})\[", r"L_\1[", tail)
    locals_ = "".join(f"    [[maybe_unused]] {ty} L_{name} = {name};\n" for ty, name in arrays)
    return head + locals_ + tail


def source(body: str, signature: str, ctype: str) -> tuple[str, str]:
    """The kernel's full text and its function name, from the loop ``body`` and the parameter list."""
    body = _restrict_in_lambda(body, signature)
    text = f"// fb.compile fused elementwise kernel; isa: {isa()}\n{PREAMBLE}\nusing T = {ctype};\n"
    digest = hashlib.sha256((text + signature + body).encode()).hexdigest()[:16]
    name = f"fb_fused_{digest}"
    text += f'\nextern "C" void {name}({signature}) {{\n{body}}}\n'
    return text, name


def loop_body(lines: list[str], hoisted: list[str], heavy: bool, rows: bool) -> str:
    """A kernel's body: the per-element ``lines`` in the loop of Note [Fused kernel], after the ``hoisted`` ones."""
    grain = "flambeau::kGrainSize / 8" if heavy else "flambeau::kGrainSize"
    if rows:
        inner_loop = "".join(f"        {line}\n" for line in lines)
        loop = (
            "    for (int64_t row = b - b % inner; row < e; row += inner) {\n"
            "      const int64_t lo = row > b ? row : b, hi = row + inner < e ? row + inner : e, r = row / inner;\n"
            "#pragma omp simd\n"
            "      for (int64_t i = lo; i < hi; ++i) {\n"
            "        const int64_t j = i - row;\n"
            f"{inner_loop}"
            "      }\n"
            "    }\n"
        )
    else:
        inner_loop = "".join(f"      {line}\n" for line in lines)
        loop = f"#pragma omp simd\n    for (int64_t i = b; i < e; ++i) {{\n{inner_loop}    }}\n"
    body = "  const int64_t n = static_cast<int64_t>(c[0]), inner = static_cast<int64_t>(c[1]);\n"
    body += "".join(f"{line}\n" for line in hoisted)
    body += f"  fb_parallel_for(0, n, {grain}, [&](int64_t b, int64_t e) {{\n{loop}  }});\n"
    return body


_lock = threading.Lock()
_loaded: dict[str, Callable[..., Any]] = {}
_failed: dict[str, str] = {}
builds = 0  # how many kernels this process asked cpp_extension for (a test reads it: no rebuild per batch size)


def kernel(text: str, name: str, argtypes: list[Any]) -> Callable[..., Any]:
    """The loaded function of a kernel text (built on first use); ``RuntimeError`` if it cannot be built."""
    global builds
    fn = _loaded.get(text)
    if fn is not None:
        return fn
    with _lock:
        fn = _loaded.get(text)
        if fn is not None:
            return fn
        if text in _failed:
            raise RuntimeError(_failed[text])
        try:
            builds += 1
            fn = _build(text, name, argtypes)
        except Exception as e:  # a missing compiler, a failed build or load: the group runs eagerly
            _failed[text] = f"{type(e).__name__}: {e}"
            raise RuntimeError(_failed[text]) from None
        _loaded[text] = fn
        return fn


def prebuild(kernels: list[tuple[str, str, list[Any]]]) -> None:
    """Builds the kernels (``(text, name, argtypes)``) not loaded yet side by side, a compiler each up to the
    CPU count, so that a capture's first call waits about the longest build, not their sum; :func:`kernel`
    then finds them (or raises a build's failure).
    """
    global builds
    todo = {text: (name, argtypes) for text, name, argtypes in kernels if text not in _loaded and text not in _failed}
    if len(todo) < 2:
        return  # one build: kernel() makes it when it is needed

    def one(item: tuple[str, tuple[str, list[Any]]]) -> tuple[str, Callable[..., Any] | None, str]:
        text, (name, argtypes) = item
        try:
            return text, _build(text, name, argtypes), ""
        except Exception as e:  # as kernel(): the failure is kept, the group then runs eagerly
            return text, None, f"{type(e).__name__}: {e}"

    with _lock:
        builds += len(todo)
        with ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
            for text, fn, error in pool.map(one, todo.items()):
                if fn is None:
                    _failed[text] = error
                else:
                    _loaded[text] = fn


def _build(text: str, name: str, argtypes: list[Any]) -> Callable[..., Any]:
    from flambeau import _cpp_extension as ext

    folder = os.path.join(ext._extensions_root(), "fused", name)
    src = os.path.join(folder, "kernel.cpp")
    for attempt in range(2):
        try:
            os.makedirs(folder, exist_ok=True)
            ext._write_if_changed(src, text)
            known = set(os.listdir(folder))
            path = ext.load(name, [src], extra_cflags=CFLAGS, build_directory=folder, is_python_module=False)
            lib = ctypes.CDLL(path)
            break
        except Exception:
            # Another process evicted the folder meanwhile (Note [Bounded compile cache]): once more.
            if attempt or os.path.isfile(src):
                raise
    if os.path.basename(path) not in known:
        _disk_cache.wrote(folder)  # a new build
    _disk_cache.used(path, kernel_folder=folder)
    fn = getattr(lib, name)
    fn.argtypes = argtypes
    fn.restype = None
    return fn


def reset() -> None:
    """Forgets the loaded kernels and failures (the libraries stay mapped; a test forces a rebuild with it)."""
    with _lock:
        _loaded.clear()
        _failed.clear()
