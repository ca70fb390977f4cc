"""Every public function of flambeau_core and every Tensor method, called with arguments of the wrong
kind: a tensor of many elements where a number, a bool or a list of ints is expected, a string, a ragged
list, an int beyond int64's range.

Each call must raise a Python exception or return: never crash the process, never leave the error
half-reported (a SystemError "returned a result with an exception set", or pybind11's internal cast
messages), and never fail on the argument's missing attributes (an AttributeError: it was not checked).
The calls run in a child process with a capped address space, in a temporary folder (some functions
write files); a crash fails the test with its signal and the last call it made.
Run this file directly to see every call: python test_fuzz_arg_types.py --child
"""

from __future__ import annotations

import argparse
import inspect
import resource
import subprocess
import sys
import warnings

ADDRESS_SPACE = 8 << 30  # bytes
# Functions that change the process's global state (the default dtype or device, the RNG, threads).
GLOBAL_STATE = {
    "manual_seed",
    "seed",
    "set_default_device",
    "set_default_dtype",
    "set_default_tensor_type",
    "set_num_threads",
    "set_num_interop_threads",
    "set_printoptions",
    "set_rng_state",
    "set_flush_denormal",
    "use_deterministic_algorithms",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_warn_always",
}
# An internal error reported as a Python exception: the binding lost the real message.
INTERNAL = ("Unable to cast", "returned a result with an exception set", "pybind11::", "std::")


def arguments(fc):
    """Name -> a maker of a fresh argument of that kind."""
    return {
        "matrix": lambda: fc.rand(3, 4),
        "text": lambda: "x",
        "ragged": lambda: [[1, 2], [3]],
        "huge": lambda: 2**70,
    }


def combinations(kinds):
    single = [(k,) for k in kinds]
    return single + [("matrix", "matrix"), ("huge", "huge"), ("text", "matrix"), ("matrix", "huge")]


def callables(fc):
    """(label, call(args)) for each public function (with and without a tensor first) and Tensor method."""
    out = []
    for name in sorted(dir(fc)):
        f = getattr(fc, name)
        if name.startswith("_") or name in GLOBAL_STATE or inspect.isclass(f) or inspect.ismodule(f):
            continue
        if callable(f):
            out.append((f"flambeau_core.{name}", lambda args, f=f: f(fc.rand(2, 3), *args)))
            out.append((f"flambeau_core.{name}", lambda args, f=f: f(*args)))
    for name in sorted(dir(fc.Tensor)):
        if not name.startswith("_"):
            out.append((f"Tensor.{name}", lambda args, name=name: getattr(fc.rand(2, 3), name)(*args)))
    return out


def run_child() -> int:
    from flambeau_core.testing import running_under_asan

    # Under AddressSanitizer (whose shadow memory needs the address space) its own allocation limit caps.
    if not running_under_asan():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    warnings.simplefilter("ignore")
    import flambeau_core as fc

    makers = arguments(fc)
    internal = []
    calls = 0
    for label, call in callables(fc):
        for combo in combinations(makers):
            print(label, *combo, flush=True)
            calls += 1
            try:
                call([makers[k]() for k in combo])
            except (SystemError, AttributeError) as e:  # a lost error; an argument never type-checked
                internal.append(f"{label}{combo}: {type(e).__name__}: {e}")
            except Exception as e:  # noqa: BLE001  (any Python exception is a clean refusal here)
                if any(words in str(e) for words in INTERNAL):
                    internal.append(f"{label}{combo}: {type(e).__name__}: {str(e)[:200]}")
    print(f"calls {calls}", flush=True)
    for line in internal:
        print("INTERNAL", line, flush=True)
    return 1 if internal else 0


def test_wrong_argument_kinds_raise_cleanly(tmp_path):
    proc = subprocess.run(
        [sys.executable, __file__, "--child"], capture_output=True, text=True, cwd=tmp_path, timeout=1800
    )
    lines = proc.stdout.splitlines()
    internal = [line for line in lines if line.startswith("INTERNAL")]
    assert not internal, "\n".join(internal[:30])
    last = [line for line in lines if not line.startswith(("calls", "INTERNAL"))][-1:]
    assert proc.returncode == 0, f"child exited with {proc.returncode} during {last}\n{proc.stderr[-3000:]}"
    calls = int(next(line for line in lines if line.startswith("calls")).split()[1])
    assert calls > 10000  # every public name was reached


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", action="store_true", help="make the calls in this process")
    a = p.parse_args(argv)
    if a.child:
        return run_child()
    return subprocess.call([sys.executable, __file__, "--child"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
