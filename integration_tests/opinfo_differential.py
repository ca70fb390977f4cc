"""Differential test of flambeau against PyTorch's own op database (``op_db`` of
``torch.testing._internal.common_methods_invocations``).

For every OpInfo entry that runs on a CPU (quantized, sparse and private ``_`` entries are counted apart),
find flambeau's counterpart (``fb.<name>`` with dotted namespaces, the Tensor method, the in-place form the
OpInfo lists), copy each sample input into flambeau, run both and compare: dtype, shape, values (NaN
positions included) within a per-dtype tolerance; then for float64 samples of differentiable entries, the
gradients of the outputs weighted by a fixed random cotangent, for every floating input that requires grad.

Entries run in worker processes, so a segfault or a hang is reported with the entry's name and the run goes
on with the next entry. Every failure of a sample is classified (the ``KINDS`` below).

Command line (``python integration_tests/opinfo_differential.py ...``):

    --summary             run the CI configuration, print totals and failures, write the JSON report
    --op NAME             one entry (``name`` or ``name.variant``), every failing sample in detail
    --dtypes all          every dtype the entry supports on the CPU (default: float32, float64)
    --max-samples N       samples per entry and dtype (default: the CI's bound)
    --update-baseline     rewrite integration_tests/opinfo_baseline.json from this run
    --json PATH           where the report goes (default build/test-results/opinfo.json)
    --jobs N              worker processes (default 1)
    --timeout S           seconds per entry before it counts as a hang (default 300)

``integration_tests/test_opinfo.py`` runs the CI configuration and compares it with the baseline.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).resolve().parent / "opinfo_baseline.json"
DEFAULT_REPORT = ROOT / "build" / "test-results" / "opinfo.json"

# What a failing sample is, in the order an entry's worst problem is reported.
KINDS = {
    "crash": "the worker process died (segfault, abort) inside this entry",
    "hang": "the entry ran past its time limit",
    "missing": "no flambeau counterpart (function, or the name the OpInfo calls)",
    "missing_method": "the Tensor method the OpInfo lists is missing",
    "missing_inplace": "the in-place Tensor method the OpInfo lists is missing",
    "raises": "flambeau raises on a sample torch takes",
    "value": "forward result differs (type, dtype, shape, values or NaN positions)",
    "variant": "the method or in-place form differs from torch's",
    "grad": "WRONG GRADIENT: backward runs but its values differ from torch's",
    "grad_raises": "backward raises (or the output does not require grad) where torch differentiates",
}

# Gradients that differ from torch's because torch's is the wrong one: each fails torch's own gradcheck
# (torch's OpInfo marks it as an expected failure), and the named test checks flambeau's against finite
# differences. They stay in the baseline as "grad" but are not reported as wrong gradients.
TORCH_GRADIENT_WRONG = {
    "as_strided_scatter": (
        "packages/autograd/tests/test_view_copy_grad.py::test_as_strided_scatter_gradient_is_the_derivative"
    ),
}
# Values that differ from torch's because torch's are the less accurate ones: the named test compares both
# with a high-precision reference (mpmath, or float64 for a float32 result). They stay in the baseline as
# "value", reported as such.
TORCH_VALUE_LESS_ACCURATE = {
    name: "packages/core/tests/test_special_functions.py::"
    "test_pytorch_cephes_port_is_less_accurate_where_flambeau_follows_cephes"
    for name in ("special.bessel_j0", "special.bessel_y1")
} | {
    # float32 computed in float64 (Note [matrix_exp by Pade 13]): torch's float32 squaring loses small entries
    "matrix_exp": "packages/core/tests/test_linalg_matrix_functions.py::"
    "test_matrix_exp_single_precision_keeps_small_entries_of_a_large_result",
}
# Differences that are flambeau's design, not bugs: entry -> (why, the test that pins flambeau's behaviour).
# They stay in the baseline with their kinds; the summary lists each with its reason.
JUSTIFIED_DIFFERENCES = {
    "chalf": (
        "flambeau has no complex32 dtype (PyTorch's CPU complex32 has few kernels: sum, exp and matmul raise "
        "NotImplementedError): Tensor.chalf() raises a TypeError that says so and points to cfloat()",
        "packages/core/tests/test_complex_forms.py::test_chalf_is_a_clear_type_error",
    ),
}
CI_DTYPES = ("float32", "float64")
CI_MAX_SAMPLES = 6
ENTRY_TIMEOUT_S = 300  # every dtype and sample of nn.functional.unfold takes 70 CPU-seconds

# Per-dtype (rtol, atol) for forward values; gradients are compared in float64 with GRAD_TOL.
TOLERANCES = {
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-6, 1e-8),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-6, 1e-8),
}
GRAD_TOL = (1e-5, 1e-7)


def entry_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def skip_reason(op) -> str | None:
    """Why an entry is outside the comparison (counted apart), or None."""
    name = op.name
    if "quantize" in name:
        return "quantized"
    if "sparse" in name:
        return "sparse"
    # `_foo`, `torch._scaled_mm`, `torch.ops.aten._safe_softmax.default`; dunders such as `__radd__` are public
    if any(part.startswith("_") and not part.endswith("__") for part in name.split(".")):
        return "private"
    if not op.supported_dtypes("cpu") or type(op.op).__name__ == "_JittedFunction":  # jiterator: CUDA's
        return "no_cpu"
    return None


def load_op_db():
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


# ----------------------------------------------------------------------------------------------------------
# Worker side: one entry's comparison.


def _resolve(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _TorchAsFlambeau(types.ModuleType):
    """Stands for `torch` in the globals of OpInfo's Python wrappers (lambdas over torch functions), so the
    wrapper calls flambeau's function of the same name; a missing name raises AttributeError (= missing)."""

    def __init__(self, fb, torch_obj, prefix=""):
        super().__init__("torch" + prefix)
        self._fb, self._torch, self._prefix = fb, torch_obj, prefix

    def __getattr__(self, name):
        t = getattr(self._torch, name)
        if isinstance(t, types.ModuleType):
            sub = getattr(self._fb, name, None)
            if sub is None:
                raise AttributeError(f"flambeau has no {self._prefix}{name}")
            return _TorchAsFlambeau(sub, t, f"{self._prefix}{name}.")
        try:
            return getattr(self._fb, name)
        except AttributeError:
            raise AttributeError(f"flambeau has no {self._prefix}{name}") from None


def _rebind(fn, fb, torch):
    """The Python function `fn` with `torch` in its globals replaced by flambeau."""
    if not isinstance(fn, types.FunctionType):
        return None
    g = dict(fn.__globals__)
    g["torch"] = _TorchAsFlambeau(fb, torch)
    out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def counterpart(op, fb, torch):
    """(flambeau callable or None, how it was found)."""
    name = op.name
    if op.op is _resolve(torch, name):
        return _resolve(fb, name), "function"
    if op.op is getattr(torch.Tensor, name, None):
        return getattr(fb.Tensor, name, None), "method"
    fn = _rebind(op.op, fb, torch)
    if fn is not None:
        return fn, "wrapper"
    if "torch._ops" in type(op.op).__module__:  # torch.ops.aten.<name>.<overload>: fb.ops.aten's
        ns, _, qualified = op.op.name().partition("::")
        name, _, overload = qualified.partition(".")
        try:
            return getattr(getattr(getattr(fb.ops, ns), name), overload or "default"), "torch.ops"
        except AttributeError:
            return None, "torch.ops"
    return None, type(op.op).__name__


class _Converter:
    """torch objects in a sample -> flambeau objects; records (torch leaf, flambeau leaf) pairs."""

    def __init__(self, fb, torch):
        self.fb, self.torch = fb, torch
        self.leaves: list[tuple] = []

    def __call__(self, x):
        torch, fb = self.torch, self.fb
        if isinstance(x, torch.Tensor):
            t = x.detach().resolve_conj().resolve_neg()
            n = t.untyped_storage().nbytes() // max(1, t.element_size())
            if t.storage_offset() or n > t.numel():
                # A view into a larger storage (as_strided's samples read outside the view): copy the storage.
                flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,)).clone()
                base = fb.from_dlpack(flat).requires_grad_(x.requires_grad)
                out = fb.as_strided(base, tuple(t.shape), tuple(t.stride()), t.storage_offset())
            else:
                out = fb.from_dlpack(t.clone()).requires_grad_(x.requires_grad)
            if x.requires_grad:
                self.leaves.append((x, out))
            return out
        if isinstance(x, torch.dtype):
            return getattr(fb, str(x).split(".")[-1])
        if isinstance(x, torch.device):
            return str(x)
        if isinstance(x, (torch.memory_format, torch.layout)):
            return getattr(fb, str(x).split(".")[-1], x)
        if isinstance(x, torch.Size):
            return tuple(x)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(self(v) for v in x))
        if isinstance(x, (list, tuple)):
            return type(x)(self(v) for v in x)
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        if isinstance(x, types.FunctionType) and x.__module__.startswith("torch"):
            return _rebind(x, fb, torch)
        if type(x).__module__.startswith("torch"):
            return self._object(x)
        return x

    def _object(self, x):
        """A torch object (an nn.Module such as PairwiseDistance, an options class) as flambeau's class of the
        same name, built from the attributes its constructor names; as it is when flambeau has none."""
        fb = self.fb
        cls = getattr(fb.nn, type(x).__name__, None) or getattr(fb, type(x).__name__, None)
        if not isinstance(cls, type):
            return x
        try:
            params = inspect.signature(cls).parameters
            return cls(**{n: self(getattr(x, n)) for n in params if not n.startswith("_") and hasattr(x, n)})
        except Exception:
            return x


def _flatten(x, fb, torch, out=None):
    """Leaves of a result (tensors and Python scalars), in order."""
    out = [] if out is None else out
    if isinstance(x, (list, tuple)):
        for v in x:
            _flatten(v, fb, torch, out)
    else:
        out.append(x)
    return out


def _to_torch(x, fb, torch):
    if isinstance(x, fb.Tensor):
        d = x.detach()
        try:
            return torch.from_dlpack(d)
        except Exception:
            return torch.from_dlpack(d.contiguous())
    return x


def _compare(expected, got, fb, torch, tol=None) -> str | None:
    """None when equal; else what differs."""
    e_leaves, g_leaves = _flatten(expected, fb, torch), _flatten(got, fb, torch)
    if len(e_leaves) != len(g_leaves):
        return f"{len(g_leaves)} outputs, torch has {len(e_leaves)}"
    for i, (e, g) in enumerate(zip(e_leaves, g_leaves, strict=True)):
        where = f"output {i}: " if len(e_leaves) > 1 else ""
        if isinstance(e, torch.Tensor):
            if not isinstance(g, fb.Tensor):
                return f"{where}{type(g).__name__} where torch gives a Tensor"
            g = _to_torch(g, fb, torch)
            if g.dtype != e.dtype:
                return f"{where}dtype {g.dtype} where torch gives {e.dtype}"
            if g.shape != e.shape:
                return f"{where}shape {list(g.shape)} where torch gives {list(e.shape)}"
            e = e.detach().resolve_conj().resolve_neg()
            rtol, atol = tol or TOLERANCES.get(str(e.dtype).split(".")[-1], (0, 0))
            try:
                torch.testing.assert_close(g, e, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
            except AssertionError as exc:
                return where + " ".join(str(exc).split())[:300]
        elif isinstance(e, (bool, int, float, complex)) and not isinstance(g, fb.Tensor):
            if type(g) is not type(e):
                return f"{where}{type(g).__name__} {g!r} where torch gives {type(e).__name__} {e!r}"
            if isinstance(e, float) and (e != e) and (g != g):
                continue
            if e != g and not (isinstance(e, float) and abs(e - g) <= 1e-6 * max(1.0, abs(e))):
                return f"{where}{g!r} where torch gives {e!r}"
        elif isinstance(e, torch.dtype):
            if str(g).split(".")[-1] != str(e).split(".")[-1]:
                return f"{where}{g} where torch gives {e}"
        elif e is None:
            if g is not None:
                return f"{where}{type(g).__name__} where torch gives None"
        elif type(e).__name__ != type(g).__name__ and not (
            isinstance(e, (bool, int, float)) and isinstance(g, (bool, int, float))
        ):
            return f"{where}{type(g).__name__} where torch gives {type(e).__name__}"
    return None


def _structure_only(expected, got, fb, torch) -> str | None:
    """For random and uninitialised outputs: type, dtype and shape only."""
    e_leaves, g_leaves = _flatten(expected, fb, torch), _flatten(got, fb, torch)
    if len(e_leaves) != len(g_leaves):
        return f"{len(g_leaves)} outputs, torch has {len(e_leaves)}"
    for e, g in zip(e_leaves, g_leaves, strict=True):
        if isinstance(e, torch.Tensor):
            if not isinstance(g, fb.Tensor):
                return f"{type(g).__name__} where torch gives a Tensor"
            g = _to_torch(g, fb, torch)
            if g.dtype != e.dtype or g.shape != e.shape:
                return f"{g.dtype}{list(g.shape)} where torch gives {e.dtype}{list(e.shape)}"
    return None


def _is_random(op, sample, torch) -> bool:
    if op.has_nondeterministic_output:
        return True
    code = getattr(op.op, "__code__", None)
    if code is not None and "wrapper_set_seed" in code.co_names:
        return True
    try:
        outs = []
        for seed in (0, 1):
            torch.manual_seed(seed)
            outs.append(_flatten(op(sample.input, *sample.args, **sample.kwargs), None, torch))
        for a, b in zip(*outs, strict=True):
            if not isinstance(a, torch.Tensor):
                continue
            # A tolerance, not equality: LAPACK's threaded results may differ in the last bits run to run.
            if a.is_floating_point() or a.is_complex():
                if not torch.allclose(a, b, rtol=1e-3, atol=1e-3, equal_nan=True):
                    return True
            elif not torch.equal(a, b):
                return True
    except Exception:
        return False
    return False


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:240]}"


class _Entry:
    def __init__(self, key, detail):
        self.key, self.detail = key, detail
        self.kinds: dict[str, int] = {}
        self.examples: dict[str, str] = {}
        self.details: list[str] = []
        self.forward = [0, 0]  # equal, compared
        self.grad = [0, 0]

    def fail(self, kind, what):
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.examples.setdefault(kind, what)
        if self.detail:
            self.details.append(f"[{kind}] {what}")

    def result(self, present):
        return {
            "key": self.key,
            "present": present,
            "kinds": self.kinds,
            "examples": self.examples,
            "forward": self.forward,
            "grad": self.grad,
            "details": self.details,
        }


def _describe(sample, dtype) -> str:
    def d(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return f"T{list(x.shape)}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(d(v) for v in x) + "]"
        return repr(x)[:40]

    kw = ", ".join(f"{k}={d(v)}" for k, v in sample.kwargs.items())
    return f"{dtype} {d(sample.input)} args={d(list(sample.args))} {kw}".rstrip()


def check_entry(op, dtypes, max_samples, detail=False) -> dict:
    import flambeau as fb
    import torch

    key = entry_key(op)
    entry = _Entry(key, detail)
    fb_fn, how = counterpart(op, fb, torch)
    if fb_fn is None:
        entry.fail("missing", f"no flambeau {op.name} ({how})")
        return entry.result(False)
    fb_wrapper = _rebind(op.gradcheck_wrapper, fb, torch)
    method_name = getattr(op.method_variant, "__name__", None)
    inplace_name = getattr(op.inplace_variant, "__name__", None)
    if method_name == "<lambda>":
        method_name = None
    if inplace_name == "<lambda>":
        inplace_name = None
    if method_name and not hasattr(fb.Tensor, method_name):
        entry.fail("missing_method", f"no flambeau Tensor.{method_name}")
        method_name = None
    if inplace_name and not hasattr(fb.Tensor, inplace_name):
        entry.fail("missing_inplace", f"no flambeau Tensor.{inplace_name}")
        inplace_name = None
    supported = {str(d).split(".")[-1] for d in op.supported_dtypes("cpu")}
    backward = {str(d).split(".")[-1] for d in op.supported_backward_dtypes("cpu")} if op.supports_autograd else set()
    present = how != "wrapper"  # a wrapper's names are only known by running it
    run_dtypes = [d for d in dtypes if d in supported] or [
        d for d in ("int64", "bool", "complex128", "float16") if d in supported
    ][:1]
    for dtype_name in run_dtypes:
        dtype = getattr(torch, dtype_name)
        want_grad = dtype_name == "float64" and "float64" in backward
        torch.manual_seed(0)
        try:
            samples = list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=want_grad), max_samples))
        except Exception:
            continue  # torch's own sample generator refuses this dtype
        for i, sample in enumerate(samples):
            what = f"sample {i} {_describe(sample, dtype_name)}"
            missing_before = entry.kinds.get("missing", 0)
            _check_sample(op, sample, fb_fn, fb_wrapper, want_grad, how == "wrapper", entry, what, fb, torch)
            if entry.kinds.get("missing", 0) > missing_before:
                return entry.result(False)  # the wrapper calls a name flambeau lacks
            present = True
            if i == 0:
                for name in (method_name, inplace_name):
                    if name:
                        _check_variant(op, sample, name, name == inplace_name, entry, what, fb, torch)
    return entry.result(present)


def _call(fn, wrapper, sample_input, args, kwargs):
    if wrapper is not None:
        return wrapper(fn, sample_input, *args, **kwargs)
    return fn(sample_input, *args, **kwargs)


def _check_sample(op, sample, fb_fn, fb_wrapper, want_grad, via_wrapper, entry, what, fb, torch):
    try:
        torch.manual_seed(0)
        expected = _call(op.op, op.gradcheck_wrapper if want_grad else None, sample.input, sample.args, sample.kwargs)
    except Exception:
        return  # torch refuses this sample: nothing to compare
    random = _is_random(op, sample, torch)
    conv = _Converter(fb, torch)
    fb_input, fb_args, fb_kwargs = conv(sample.input), conv(list(sample.args)), conv(dict(sample.kwargs))
    try:
        got = _call(fb_fn, fb_wrapper if want_grad else None, fb_input, fb_args, fb_kwargs)
    except AttributeError as exc:
        if via_wrapper and ("flambeau" in str(exc) or "Tensor" in str(exc)):
            entry.fail("missing", _short(exc))
        else:
            entry.forward[1] += 1
            entry.fail("raises", f"{what}: {_short(exc)}")
        return
    except Exception as exc:
        entry.forward[1] += 1
        entry.fail("raises", f"{what}: {_short(exc)}")
        return
    entry.forward[1] += 1
    diff = (_structure_only if random else _compare)(expected, got, fb, torch)
    if diff and not random and sample.output_process_fn_grad is not None:
        # Outputs defined up to a sign or phase (eigenvectors, singular vectors): the OpInfo's own
        # normalisation of them is what both must agree on.
        with contextlib.suppress(Exception):
            fb_process = _rebind(sample.output_process_fn_grad, fb, torch) or sample.output_process_fn_grad
            processed = _compare(sample.output_process_fn_grad(expected), fb_process(got), fb, torch)
            if processed is None:
                diff = None
    if diff:
        entry.fail("value", f"{what}: {diff}")
    else:
        entry.forward[0] += 1
    if want_grad and not random and not diff:
        _check_grad(sample, expected, got, conv.leaves, entry, what, fb, torch)


def _check_grad(sample, expected, got, leaves, entry, what, fb, torch):
    leaves = [(t, f) for t, f in leaves if t.is_floating_point() or t.is_complex()]
    if not leaves:
        return
    process = sample.output_process_fn_grad
    try:
        e_out = _flatten(process(expected), None, torch)
    except Exception:
        return
    picked = [i for i, e in enumerate(e_out) if isinstance(e, torch.Tensor) and e.requires_grad]
    if not picked:
        return
    g = torch.Generator().manual_seed(1234)
    cots = [torch.randn(e_out[i].shape, dtype=e_out[i].dtype, generator=g) for i in picked]
    try:
        expected_grads = torch.autograd.grad(
            [e_out[i] for i in picked], [t for t, _ in leaves], cots, allow_unused=True
        )
    except Exception:
        return
    entry.grad[1] += 1
    try:
        fb_process = _rebind(process, fb, torch) or process
        g_out = _flatten(fb_process(got), fb, torch)
        outs = [g_out[i] for i in picked]
        use = [k for k, o in enumerate(outs) if isinstance(o, fb.Tensor) and o.requires_grad]
        if not use:
            entry.fail("grad_raises", f"{what}: no output requires grad")
            return
        got_grads = fb.autograd.grad(
            [outs[k] for k in use],
            [f for _, f in leaves],
            [fb.from_dlpack(cots[k].clone()) for k in use],
            allow_unused=True,
        )
    except Exception as exc:
        entry.fail("grad_raises", f"{what}: {_short(exc)}")
        return
    for n, ((t, _), e, gg) in enumerate(zip(leaves, expected_grads, got_grads, strict=True)):
        e = torch.zeros_like(t) if e is None else e
        gg = torch.zeros_like(t) if gg is None else _to_torch(gg, fb, torch)
        diff = _compare(e, fb.from_dlpack(gg.contiguous()), fb, torch, tol=GRAD_TOL)
        if diff:
            entry.fail("grad", f"{what}: input {n} of {len(leaves)} {list(t.shape)}: {diff}")
            return
    entry.grad[0] += 1


def _check_variant(op, sample, name, inplace, entry, what, fb, torch):
    """The Tensor method / in-place method on the sample, detached (in-place on a leaf is refused)."""
    t_in = sample.input.detach().clone() if isinstance(sample.input, torch.Tensor) else sample.input
    if not isinstance(t_in, torch.Tensor):
        return
    args = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in sample.args]
    try:
        torch.manual_seed(0)
        expected = getattr(t_in, name)(*args, **sample.kwargs)
    except Exception:
        return
    if _is_random(op, sample, torch):
        return
    conv = _Converter(fb, torch)
    f_in = conv(sample.input.detach())
    try:
        got = getattr(f_in, name)(*conv(args), **conv(dict(sample.kwargs)))
    except Exception as exc:
        entry.fail("variant", f"Tensor.{name} {what}: {_short(exc)}")
        return
    diff = _compare(expected, got, fb, torch)
    if not diff and inplace:
        after = _compare(t_in, f_in, fb, torch)
        diff = after and f"the input after Tensor.{name}: {after}"
    if diff:
        entry.fail("variant", f"Tensor.{name} {what}: {diff}")


def worker_main() -> None:
    """Reads {"keys": [...], "dtypes": [...], "max_samples": n, "detail": b} on stdin; per entry prints a
    `START key` line, then a `RESULT json` line."""
    import warnings

    warnings.filterwarnings("ignore")
    cfg = json.loads(sys.stdin.readline())
    by_key = {entry_key(op): op for op in load_op_db()}
    import flambeau  # noqa: F401  (import before the first START: its cost is not an entry's)

    out = sys.stdout
    for key in cfg["keys"]:
        print(f"START {key}", file=out, flush=True)
        if os.environ.get("FLAMBEAU_OPINFO_ABORT_AT") == key:  # lets the tests check crash handling
            os.abort()
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sys.stderr):
                res = check_entry(by_key[key], cfg["dtypes"], cfg["max_samples"], cfg.get("detail", False))
        except Exception as exc:  # a bug of this harness, not of flambeau: report it with the entry
            res = {
                "key": key,
                "present": True,
                "kinds": {"harness": 1},
                "examples": {"harness": _short(exc)},
                "forward": [0, 0],
                "grad": [0, 0],
                "details": [traceback.format_exc()],
            }
        res["seconds"] = round(time.perf_counter() - t0, 3)
        print("RESULT " + json.dumps(res), file=out, flush=True)


# ----------------------------------------------------------------------------------------------------------
# Parent side: workers, crash and hang handling, report, baseline.


def _pump(stream, lines) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")  # end of file


def _run_worker_chain(keys, cfg, results, timeout, log, errors):
    try:
        _worker_chain(keys, cfg, results, timeout, log)
    except BaseException as exc:  # re-raised by run(): a thread's exception would otherwise only be printed
        errors.append(exc)


def _worker_chain(keys, cfg, results, timeout, log):
    """Runs `keys` in one worker after another: a worker that dies or hangs is replaced, its entry recorded."""
    pending = list(keys)
    while pending:
        proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        proc.stdin.write(json.dumps({**cfg, "keys": pending}) + "\n")
        proc.stdin.flush()
        stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=stderr_tail.extend, args=(proc.stderr,), daemon=True).start()
        # Lines through a queue, not select() on the pipe: a text pipe's buffer may hold lines select() misses.
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        current, deadline = None, time.monotonic() + 600  # the first deadline covers importing op_db
        while pending:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None or not line:
                dead = line is not None
                if not dead:
                    proc.kill()
                proc.wait()
                if current is None:
                    raise RuntimeError(f"opinfo worker failed to start ({proc.returncode}):\n" + "".join(stderr_tail))
                if dead:
                    tail = "".join(list(stderr_tail)[-12:])[-600:]
                    results[current] = _failure(current, "crash", f"worker exit code {proc.returncode}: {tail}")
                else:
                    results[current] = _failure(current, "hang", f"no result after {timeout} s")
                log(f"{current}: {'CRASH' if dead else 'HANG'} (exit {proc.returncode})")
                pending = pending[pending.index(current) + 1 :]
                break
            if line.startswith("START "):
                current, deadline = line[6:].strip(), time.monotonic() + timeout
            elif line.startswith("RESULT "):
                res = json.loads(line[7:])
                results[res["key"]] = res
                pending = pending[pending.index(res["key"]) + 1 :]
                current, deadline = None, time.monotonic() + 600  # until the next START: no entry is running
        proc.stdout.close()
        if proc.poll() is None:
            proc.wait()


def _failure(key, kind, what):
    return {
        "key": key,
        "present": True,
        "kinds": {kind: 1},
        "examples": {kind: what},
        "forward": [0, 0],
        "grad": [0, 0],
        "details": [what],
    }


def run(
    keys=None,
    dtypes=CI_DTYPES,
    max_samples=CI_MAX_SAMPLES,
    jobs=1,
    detail=False,
    timeout=ENTRY_TIMEOUT_S,
    log=lambda s: None,
) -> dict:
    """The whole comparison; returns the report (see `report`)."""
    t0 = time.perf_counter()
    op_db = load_op_db()
    skipped: dict[str, list[str]] = {}
    runnable = []
    for op in op_db:
        reason = skip_reason(op)
        if reason:
            skipped.setdefault(reason, []).append(entry_key(op))
        else:
            runnable.append(entry_key(op))
    if keys is not None:
        unknown = set(keys) - set(runnable) - {k for v in skipped.values() for k in v}
        if unknown:
            raise SystemExit(f"no OpInfo entry named {sorted(unknown)}")
        runnable = [k for k in runnable if k in keys]
    cfg = {"dtypes": list(dtypes), "max_samples": max_samples, "detail": detail}
    results: dict[str, dict] = {}
    chunks = [runnable[i::jobs] for i in range(jobs)]
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_run_worker_chain, args=(c, cfg, results, timeout, log, errors)) for c in chunks if c
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return report(op_db, runnable, skipped, results, cfg, time.perf_counter() - t0)


def report(op_db, runnable, skipped, results, cfg, seconds) -> dict:
    entries = {k: results[k] for k in runnable if k in results}
    present = [k for k, r in entries.items() if r["present"]]
    fwd = [sum(entries[k]["forward"][i] for k in present) for i in (0, 1)]
    grad = [sum(entries[k]["grad"][i] for k in present) for i in (0, 1)]
    kind_counts: dict[str, int] = {}
    for r in entries.values():
        for kind in r["kinds"]:
            kind_counts[kind] = kind_counts.get(kind, 0) + 1
    return {
        "config": cfg,
        "seconds": round(seconds, 1),
        "totals": {
            "op_db_entries": len(op_db),
            "compared_entries": len(runnable),
            "skipped": {k: len(v) for k, v in skipped.items()},
            "present": len(present),
            "forward_equal": fwd[0],
            "forward_samples": fwd[1],
            "forward_pct": round(100 * fwd[0] / fwd[1], 2) if fwd[1] else 100.0,
            "grad_equal": grad[0],
            "grad_samples": grad[1],
            "grad_pct": round(100 * grad[0] / grad[1], 2) if grad[1] else 100.0,
            "entries_by_kind": dict(sorted(kind_counts.items())),
        },
        "skipped": skipped,
        "entries": entries,
    }


def disagreements(rep: dict) -> dict[str, list[str]]:
    """Entry -> the sorted kinds in which it disagrees: what the baseline holds."""
    return {k: sorted(r["kinds"]) for k, r in sorted(rep["entries"].items()) if r["kinds"]}


def wrong_gradients(rep: dict) -> list[str]:
    """flambeau's wrong gradients: the entries whose gradient differs from torch's, but those where torch's
    is the wrong one (TORCH_GRADIENT_WRONG)."""
    return [
        f"{k}: {r['examples']['grad']}"
        for k, r in sorted(rep["entries"].items())
        if "grad" in r["kinds"] and k not in TORCH_GRADIENT_WRONG
    ]


def load_baseline(path: Path = BASELINE) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"totals": {}, "disagreements": {}}


def write_baseline(rep: dict, path: Path = BASELINE) -> None:
    """One entry a line, so a review sees which entry moved and in which kind."""
    t = rep["totals"]
    totals = {k: t[k] for k in ("present", "forward_equal", "forward_samples", "grad_equal", "grad_samples")}
    lines = [
        "{",
        f' "config": {json.dumps(rep["config"])},',
        f' "totals": {json.dumps(totals)},',
        ' "kinds": ' + json.dumps(KINDS, indent=2).replace("\n", "\n ") + ",",
        ' "disagreements": {',
    ]
    items = list(disagreements(rep).items())
    for i, (k, kinds) in enumerate(items):
        lines.append(f"  {json.dumps(k)}: {json.dumps(kinds)}" + ("," if i < len(items) - 1 else ""))
    lines += [" }", "}"]
    path.write_text("\n".join(lines) + "\n")


def regressions(rep: dict, baseline: dict) -> list[str]:
    """What makes the CI test fail: a new disagreement (an entry that agreed now disagrees, a new crash), a
    baselined disagreement that now agrees (shrink the baseline), lower totals."""
    problems = []
    now, known = disagreements(rep), baseline.get("disagreements", {})
    for key, kinds in now.items():
        new = sorted(set(kinds) - set(known.get(key, [])))
        if new:
            r = rep["entries"][key]
            problems.append(f"NEW {key} [{', '.join(new)}]: " + "; ".join(r["examples"][k] for k in new)[:500])
    for key, kinds in known.items():
        fixed = sorted(set(kinds) - set(now.get(key, [])))
        if fixed and key in rep["entries"]:
            problems.append(
                f"FIXED {key} [{', '.join(fixed)}]: now agrees; shrink the baseline "
                "(python integration_tests/opinfo_differential.py --update-baseline)"
            )
    t, b = rep["totals"], baseline.get("totals", {})
    for name in ("present", "forward_equal", "grad_equal"):
        if name in b and t[name] < b[name]:
            problems.append(f"TOTAL {name} dropped: {t[name]} < baseline {b[name]}")
    return problems


def summary(rep: dict, failures: bool = True) -> str:
    t = rep["totals"]
    skipped = ", ".join(f"{n} {k}" for k, n in sorted(t["skipped"].items()))
    lines = [
        f"op_db: {t['op_db_entries']} entries; {t['compared_entries']} compared ({skipped} skipped); "
        f"config {rep['config']['dtypes']} <= {rep['config']['max_samples']} samples/dtype; {rep['seconds']} s",
        f"present in flambeau: {t['present']} / {t['compared_entries']}",
        f"forward samples equal: {t['forward_equal']} / {t['forward_samples']} ({t['forward_pct']} %)",
        f"gradient samples equal: {t['grad_equal']} / {t['grad_samples']} ({t['grad_pct']} %)",
        "entries by kind: " + ", ".join(f"{k} {n}" for k, n in t["entries_by_kind"].items()),
    ]
    wrong = wrong_gradients(rep)
    lines.append(f"\n*** WRONG GRADIENTS: {len(wrong)} entries ***")
    lines += [f"  {w}" for w in wrong]
    torch_wrong = [k for k, r in sorted(rep["entries"].items()) if "grad" in r["kinds"] and k in TORCH_GRADIENT_WRONG]
    lines += [
        f"differs where torch's gradient is wrong: {k} (checked by {TORCH_GRADIENT_WRONG[k]})" for k in torch_wrong
    ]
    less_accurate = [
        k for k, r in sorted(rep["entries"].items()) if "value" in r["kinds"] and k in TORCH_VALUE_LESS_ACCURATE
    ]
    lines += [
        f"differs where torch's value is less accurate: {k} (checked by {TORCH_VALUE_LESS_ACCURATE[k]})"
        for k in less_accurate
    ]
    lines += [
        f"justified difference: {k} [{', '.join(sorted(r['kinds']))}]: {JUSTIFIED_DIFFERENCES[k][0]} "
        f"(checked by {JUSTIFIED_DIFFERENCES[k][1]})"
        for k, r in sorted(rep["entries"].items())
        if r["kinds"] and k in JUSTIFIED_DIFFERENCES
    ]
    crashes = [k for k, r in rep["entries"].items() if {"crash", "hang"} & set(r["kinds"])]
    lines.append(f"\ncrashes/hangs: {len(crashes)} {crashes}")
    if failures:
        lines.append("\nper-entry failures (kind: first example):")
        for key, r in sorted(rep["entries"].items()):
            for kind in r["kinds"]:
                if kind != "grad":
                    lines.append(f"  {key} [{kind} x{r['kinds'][kind]}] {r['examples'][kind][:200]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--summary", action="store_true", help="totals and wrong gradients only, no per-entry list")
    p.add_argument("--op", action="append", help="one entry (repeatable), with every failing sample")
    p.add_argument("--dtypes", default=",".join(CI_DTYPES), help="comma-separated, or 'all'")
    p.add_argument("--max-samples", type=int, default=CI_MAX_SAMPLES)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--timeout", type=float, default=ENTRY_TIMEOUT_S, help="seconds per entry before a hang")
    p.add_argument("--json", type=Path, default=DEFAULT_REPORT)
    p.add_argument("--update-baseline", action="store_true")
    a = p.parse_args(argv)
    if a.worker:
        worker_main()
        return 0
    if a.update_baseline and (a.op or a.dtypes != ",".join(CI_DTYPES) or a.max_samples != CI_MAX_SAMPLES):
        p.error("--update-baseline runs the CI configuration: no --op, --dtypes, --max-samples")
    dtypes = (
        (
            "bool",
            "uint8",
            "int8",
            "int16",
            "int32",
            "int64",
            "float16",
            "bfloat16",
            "float32",
            "float64",
            "complex64",
            "complex128",
        )
        if a.dtypes == "all"
        else tuple(a.dtypes.split(","))
    )
    rep = run(a.op, dtypes, a.max_samples, a.jobs, bool(a.op), a.timeout, log=lambda s: print(s, flush=True))
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(rep, indent=1))
    if a.op:
        for key in a.op:
            r = rep["entries"].get(key)
            if r is None:
                print(f"{key}: skipped ({[k for k, v in rep['skipped'].items() if key in v]})")
                continue
            print(
                f"{key}: present={r['present']} forward {r['forward'][0]}/{r['forward'][1]} "
                f"grad {r['grad'][0]}/{r['grad'][1]} ({r.get('seconds')} s)"
            )
            print("\n".join("  " + d for d in r["details"]) or "  agrees")
        return 0
    print(summary(rep, failures=not a.summary))
    print(f"\nreport: {a.json}")
    if a.update_baseline:
        write_baseline(rep)
        print(f"baseline rewritten: {BASELINE}")
        return 0
    problems = regressions(rep, load_baseline())
    if problems:
        print(f"\n{len(problems)} differences from {BASELINE.name}:\n  " + "\n  ".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
