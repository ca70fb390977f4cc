"""Shared test helpers: build tensors from NumPy arrays (contiguous or not) and
compare flambeau ops against NumPy over shapes and dtypes.

Kept small and stable: other core test files import it (``from helpers import ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import flambeau_core as fc
import numpy as np
from flambeau_core.testing import to_host

#: flambeau dtype <-> NumPy dtype, for the dtypes every kernel supports.
DTYPES: dict[str, tuple[fc.dtype, type]] = {
    "bool": (fc.bool, np.bool_),
    "int64": (fc.int64, np.int64),
    "float32": (fc.float32, np.float32),
    "float64": (fc.float64, np.float64),
}
#: Narrower integer dtypes (elementwise ops and reductions support them too).
SMALL_INTS: dict[str, tuple[fc.dtype, type]] = {
    "uint8": (fc.uint8, np.uint8),
    "int8": (fc.int8, np.int8),
    "int16": (fc.int16, np.int16),
    "int32": (fc.int32, np.int32),
}
NP_TO_FC = {np.dtype(v[1]): v[0] for v in (DTYPES | SMALL_INTS).values()}
FC_TO_NP = {v: k for k, v in NP_TO_FC.items()}

#: Layouts make_tensor can build: the same values with different strides.
LAYOUTS = ("contiguous", "transposed", "sliced")


def random_array(shape: Sequence[int], dtype: str, rng: np.random.Generator, *, positive: bool = False) -> np.ndarray:
    """Values that are exact in every dtype of DTYPES (small integers, or floats)."""
    np_dtype = (DTYPES | SMALL_INTS)[dtype][1]
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if "int" in dtype:
        lo = 1 if positive or dtype == "uint8" else -5
        return rng.integers(lo, 6, size=shape).astype(np_dtype)
    x = rng.standard_normal(shape)
    if positive:
        x = np.abs(x) + 0.1
    return x.astype(np_dtype)


def make_tensor(arr: np.ndarray, layout: str = "contiguous") -> fc.Tensor:
    """A tensor with arr's values and dtype, laid out as `layout`:
    contiguous; transposed (a permuted copy viewed back, so strides are reversed);
    sliced (every other element of a larger buffer along the last dim)."""
    arr = np.asarray(arr)
    dtype = NP_TO_FC[arr.dtype]
    if layout == "contiguous" or arr.ndim == 0:
        return fc.tensor(arr, dtype=dtype)
    if layout == "transposed":
        rev = tuple(range(arr.ndim))[::-1]
        base = fc.tensor(np.ascontiguousarray(arr.transpose(rev)), dtype=dtype)
        t = base.permute(*rev)
        return t
    if layout == "sliced":
        wide = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), dtype=arr.dtype)
        wide[..., ::2] = arr
        return fc.tensor(wide, dtype=dtype)[..., ::2]
    raise ValueError(f"unknown layout {layout!r}")


#: The widest NumPy type of each kind: what ``np.asarray(t.tolist())`` gives.
_WIDEST = {"b": np.bool_, "i": np.int64, "u": np.int64, "f": np.float64, "c": np.complex128}


def to_numpy(t: fc.Tensor, *, widen: bool = False, strided: bool = False) -> np.ndarray:
    """A NumPy copy of t's values (through the buffer protocol; a device tensor is copied to the cpu
    first; bfloat16, which NumPy lacks, as float32).

    ``widen``: every value as the widest type of its kind (int64, float64, complex128), as
    ``tolist()`` gives, so NumPy arithmetic on the result (reconstructing ``Q @ R``) is in double.
    ``strided``: read t's own layout through the buffer protocol (its strides and offset, as
    exported) instead of a contiguous copy; view tests check the exported layout that way."""
    if t.dtype == fc.bfloat16:
        t = t.float()
    t = to_host(t)
    a = np.array(memoryview(t if strided else t.contiguous()))
    return a.astype(_WIDEST[a.dtype.kind]) if widen else a


# ---- PyTorch as the oracle (torch is imported by the test modules that use these) ----


def from_torch(x: Any) -> fc.Tensor:
    """A flambeau tensor with the values and dtype of the torch tensor x (bfloat16 through float32)."""
    if str(x.dtype) == "torch.bfloat16":
        return fc.tensor(x.float().numpy()).to(fc.bfloat16)
    return fc.tensor(x.numpy())


def torch_numpy(x: Any) -> np.ndarray:
    """x's values as NumPy (bfloat16 as float32), to compare with to_numpy of a flambeau result."""
    return (x.float() if str(x.dtype) == "torch.bfloat16" else x).numpy()


def assert_same_as_torch(ours: fc.Tensor, theirs: Any) -> None:
    """ours has theirs' shape, dtype and exactly its values."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(to_numpy(ours), torch_numpy(theirs))


def ordered(v: np.ndarray, dtype: str) -> np.ndarray:
    """The 16-bit patterns of float32 values (exact in dtype) mapped to integers that count ulps
    monotonically across zero (+0 and -0 both 0)."""
    if dtype == "float16":
        b = v.astype(np.float16).view(np.uint16).astype(np.int64)
    else:
        b = (v.astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
    mag = b & 0x7FFF
    return np.where(b & 0x8000, -mag, mag)


def torch_values(
    dtype: str, shape: Sequence[int], seed: int, *, scale: float = 1.0, shift: float = 0.0, low: float | None = None
) -> Any:
    """A torch tensor of `dtype` (a name) holding seeded float32 values rounded to it: normal * scale + shift,
    or uniform in [low, 1 - low] when low is given."""
    import torch

    rng = np.random.default_rng(seed)
    v = rng.uniform(low, 1 - low, shape) if low is not None else rng.standard_normal(shape) * scale + shift
    return torch.from_numpy(np.asarray(v, dtype=np.float32)).to(getattr(torch, dtype))


def assert_within_ulps(ours: fc.Tensor, theirs: Any, ulps: int = 1) -> None:
    """ours has the shape and 16-bit dtype of the torch tensor theirs, and values at most `ulps` units in the
    last place from theirs' (NaN where theirs has NaN; 0: the same bits)."""
    dtype = str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == f"flambeau.{dtype}"
    a, b = to_numpy(ours), torch_numpy(theirs.detach())
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    diff = np.abs(ordered(np.nan_to_num(a), dtype) - ordered(np.nan_to_num(b), dtype))
    assert diff.max(initial=0) <= ulps, (f"{diff.max(initial=0)} units apart", a, b)


def assert_on_device(t: fc.Tensor) -> None:
    """t is on the device of the running case (the default device: flambeau_core.testing's on_devices)."""
    to_host(t)


def assert_matches(t: fc.Tensor, expected: np.ndarray, *, rtol: float | None = None, atol: float = 0.0) -> None:
    """t has expected's shape and dtype, and its values (NaNs equal, rtol by dtype)."""
    expected = np.asarray(expected)
    assert_on_device(t)
    assert t.shape == expected.shape, f"shape {t.shape} != {expected.shape}"
    assert t.dtype == NP_TO_FC[expected.dtype], f"dtype {t.dtype} != {expected.dtype}"
    got = to_numpy(t)
    if rtol is None:
        rtol = 1e-5 if expected.dtype == np.float32 else 1e-12
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def check_op(
    fc_fn: Callable[..., fc.Tensor],
    np_fn: Callable[..., np.ndarray],
    shapes: Iterable[Sequence[Sequence[int]]],
    dtypes: Iterable[str],
    *,
    layouts: Iterable[str] = LAYOUTS,
    positive: bool = False,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
) -> int:
    """Runs fc_fn and np_fn on the same random inputs for every combination of
    `shapes` (a tuple of input shapes per case), `dtypes` and `layouts`, and
    asserts the results match. Returns the number of cases checked."""
    rng = np.random.default_rng(seed)
    n = 0
    for shape_case in shapes:
        for dtype in dtypes:
            arrays = [random_array(s, dtype, rng, positive=positive) for s in shape_case]
            expected = np.asarray(np_fn(*arrays))
            for layout in layouts:
                tensors = [make_tensor(a, layout) for a in arrays]
                got = fc_fn(*tensors)
                try:
                    assert_matches(got, expected, rtol=rtol, atol=atol)
                except AssertionError as e:
                    raise AssertionError(f"shapes {shape_case}, dtype {dtype}, layout {layout}: {e}") from None
                n += 1
    return n


def same_as_torch_or_refused(
    name: str, ours: Callable[..., Any], theirs: Callable[..., Any], our_args: tuple, their_args: tuple
) -> None:
    """For fuzzed arguments: ``ours(*our_args)`` gives PyTorch's result (a tensor or a tuple of them,
    values compared) or, where PyTorch refuses, an error whose message starts with ``[name]``; never a
    crash, never a result where PyTorch has none."""
    try:
        expected = theirs(*their_args)
    except (RuntimeError, IndexError, ValueError, TypeError, OverflowError):
        expected = None
    try:
        got = ours(*our_args)
    except (RuntimeError, IndexError, TypeError, OverflowError) as e:  # FlambeauError is a RuntimeError
        assert str(e).startswith(f"[{name}]"), f"{name}: {e}"
        assert expected is None, f"{name}: flambeau refuses what PyTorch takes ({e})"
        return
    assert expected is not None, f"{name}: flambeau takes what PyTorch refuses"
    got, expected = (got, expected) if isinstance(got, tuple) else ((got,), (expected,))
    assert len(got) == len(expected), name
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(to_numpy(g), torch_numpy(e), rtol=1e-12, err_msg=name)


def run_with_capability(cap: str, script: str) -> str:
    """Runs ``script`` (Python source; ``{here}`` becomes this folder) in a subprocess whose dispatcher picks
    the CPU capability ``cap`` (FLAMBEAU_CPU_CAPABILITY), asserts it exited cleanly and that its last line of
    output, the capability it printed, is ``cap`` or one below it (this machine may lack it: an AVX2 CPU runs
    ``avx512`` as ``avx2``); returns stdout."""
    import os  # noqa: PLC0415  (only the capability tests need these)
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    env = dict(os.environ, FLAMBEAU_CPU_CAPABILITY=cap)
    source = script.format(here=os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", source], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    order = ["base", "avx2", "avx512"]
    assert out.stdout.strip().splitlines()[-1] in order[: order.index(cap) + 1]
    return out.stdout


def assert_unary_layouts(f: Callable[..., fc.Tensor], a: np.ndarray) -> None:
    """A float64 unary op ``f`` (with ``out=`` and an in-place form ``<name>_``) on a 2-D ``a`` transposed,
    broadcast, into ``out=`` and in place gives exactly its result on the contiguous copy."""
    expect = to_numpy(f(fc.tensor(np.ascontiguousarray(a.T))))
    np.testing.assert_array_equal(to_numpy(f(fc.tensor(a).t())), expect)
    row = to_numpy(f(fc.tensor(a[0])))
    np.testing.assert_array_equal(
        to_numpy(f(fc.tensor(a[0]).expand(3, a.shape[1]))), np.broadcast_to(row, (3, a.shape[1]))
    )
    out = fc.empty((a.shape[1], a.shape[0]), dtype=fc.float64)
    assert f(fc.tensor(a).t(), out=out) is out
    np.testing.assert_array_equal(to_numpy(out), expect)
    z = fc.tensor(a)
    getattr(z.t(), f.__name__ + "_")()
    np.testing.assert_array_equal(to_numpy(z), expect.T)
