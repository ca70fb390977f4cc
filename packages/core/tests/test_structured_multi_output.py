"""Note [Structured kernels] for ops with several results (flambeau/dispatch.h, codegen gen_meta.py and
gen_core.py): max.dim, min.dim, mode, sort and topk run their meta step and ONE out kernel taking the
values and indices outputs (src/cpu/reduce/reduce.cpp, reduce_extra.cpp, mode_frexp.cpp, sort.cpp) in
the functional, method and out=(values, indices) forms, on every device (cpu, the simulated device,
cuda) and on the meta device. Values, indices, dtypes, shapes, out= resizing, out= dtype errors,
strided and aliasing outs, empty and 0-d inputs against PyTorch 2.13; the table's rules for such ops
(codegen/model.py)."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import devices, kernel_trace
from test_structured_reductions import npy

RNG = np.random.default_rng(11)

# name -> (call(lib, x) list): the argument variants each form is run with (after the tensor).
VARIANTS = {
    "max": [((1,), {}), ((0, True), {}), ((-1,), {"keepdim": False})],
    "min": [((2,), {}), ((1, True), {})],
    "mode": [((), {}), ((0,), {}), ((1, True), {})],
    "sort": [((), {}), ((0,), {}), ((1, True), {}), ((), {"dim": 2, "descending": True, "stable": True})],
    "topk": [((2,), {}), ((3, 0), {}), ((1, 1, False), {}), ((4,), {"dim": 2, "largest": False})],
}
DTYPES = {
    "max": ["float32", "float64", "int32", "int64", "bool", "uint8", "float16", "bfloat16"],
    "min": ["float32", "int16", "bool", "float16"],
    "mode": ["float32", "float64", "int64", "int8", "bool"],
    "sort": ["float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16"],
    "topk": ["float32", "float64", "int64", "int16", "float16"],
}
CASES = [(n, d) for n in VARIANTS for d in DTYPES[n]]


def sample(name: str, dtype: str, shape=(3, 4, 5)) -> np.ndarray:
    """Distinct values for sort and topk (torch orders ties of an unstable sort as it likes); small
    integers with ties elsewhere (the first index of an extremum, the mode's rule)."""
    n = int(np.prod(shape))
    if name in ("sort", "topk") and dtype not in ("bool", "uint8", "int8"):
        a = RNG.permutation(n).reshape(shape) - n // 2
    else:
        a = RNG.integers(0, 4, shape)
    if dtype == "bool":
        return (a % 2).astype(bool)
    return a.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


def make(a: np.ndarray, dtype: str, device: str = "cpu"):
    return fc.tensor(a).to(getattr(fc, dtype)).to(device), torch.from_numpy(np.array(a)).to(getattr(torch, dtype))


def assert_same(got, expected: torch.Tensor) -> None:
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(npy(got), npy(expected))


def assert_pair(got, expected) -> None:
    assert_same(got[0], expected[0])
    assert_same(got[1], expected[1])


def call(lib, name, x, args, kw, **extra):
    if name == "sort" and lib is torch:  # flambeau's sort is always stable (torch's stable= is keyword-only)
        kw = {**dict(zip(("dim", "descending"), args, strict=False)), **kw, "stable": True}
        args = ()
    return getattr(lib, name)(x, *args, **kw, **extra)


def empty_outs(got, device, shape=(0,)):
    return (fc.empty(shape, dtype=got[0].dtype, device=device), fc.empty(shape, dtype=fc.int64, device=device))


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_forms_match_torch(name, dtype, device):
    x, t = make(sample(name, dtype), dtype, device)
    if device == "cuda" and name == "mode":
        # flambeau-cuda has no mode kernel; CUDA memory cannot run the CPU one, and it says so.
        with pytest.raises(NotImplementedError, match=r"\[mode\] is not yet implemented on CUDA"):
            fc.mode(x)
        return
    for args, kw in VARIANTS[name]:
        expected = call(torch, name, t, args, kw)
        got = call(fc, name, x, args, kw)
        assert got.values.device.type == device and got.indices.device.type == device
        assert type(got).__name__ == name
        assert_pair(got, expected)
        assert_pair(getattr(x, name)(*args, **kw), expected)
        # out= of the results' shapes and dtypes is written in place and returned as the named tuple.
        outs = empty_outs(got, device, tuple(expected[0].shape))
        ptrs = [o.data_ptr() for o in outs]
        r = call(fc, name, x, args, kw, out=outs)
        assert r.values is outs[0] and r.indices is outs[1] and type(r).__name__ == name
        assert [o.data_ptr() for o in outs] == ptrs
        assert_pair(outs, expected)
        # Empty outs are resized (silently, as torch).
        outs = empty_outs(got, device)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            call(fc, name, x, args, kw, out=outs)
        assert_pair(outs, expected)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_out_is_written_by_the_one_out_kernel(name):
    x, _ = make(sample(name, "float32"), "float32")
    args, kw = VARIANTS[name][-1]
    expected = call(fc, name, x, args, kw)
    outs = empty_outs(expected, "cpu", tuple(expected[0].shape))
    with kernel_trace() as rows:
        call(fc, name, x, args, kw, out=outs)
    names = [r[0] for r in rows]
    op = {"max": "max_dim", "min": "min_dim"}.get(name, name)
    assert names.count(op) == 1  # one kernel wrote both outputs
    assert "copy_" not in names and "empty" not in names  # nothing computed elsewhere and copied
    assert_pair(outs, [torch.from_numpy(npy(e)) for e in expected])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_strided_and_aliasing_outs(name):
    a = sample(name, "float64", (4, 6))
    x, t = make(a, "float64")
    args = (1,) if name in ("max", "min", "mode") else (2, 0) if name == "topk" else (0,)
    expected = call(torch, name, t, args, {})
    if expected[0].dim() == 2:
        # Transposed outs: the values land in their elements.
        shape = tuple(expected[0].shape)[::-1]
        outs = (fc.zeros(shape, dtype=fc.float64).t(), fc.zeros(shape, dtype=fc.int64).t())
    else:
        # Strided outs (every other element of a buffer).
        bufs = (
            fc.zeros(2 * expected[0].shape[0], dtype=fc.float64),
            fc.zeros(2 * expected[0].shape[0], dtype=fc.int64),
        )
        outs = (bufs[0][::2], bufs[1][::2])
    r = call(fc, name, x, args, {}, out=outs)
    assert r.values is outs[0] and r.indices is outs[1]
    assert_pair(outs, expected)
    if expected[0].dim() == 1:
        np.testing.assert_array_equal(npy(bufs[0])[1::2], 0)
        np.testing.assert_array_equal(npy(bufs[1])[1::2], 0)
    # values= a view of the input: every element is read before it is written (torch leaves such
    # aliasing undefined; its result on an untouched copy is the oracle).
    y = fc.tensor(a)
    view = y[:, 0] if expected[0].dim() == 1 and expected[0].shape[0] == 4 else y[:, :2] if name == "topk" else y
    if tuple(view.shape) == tuple(expected[0].shape):
        idx = fc.empty(0, dtype=fc.int64)
        call(fc, name, y, args, {}, out=(view, idx))
        assert_same(view, expected[0])
        assert_same(idx, expected[1])


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_meta_device_shapes_and_dtypes(name, dtype):
    for args, kw in VARIANTS[name]:
        t = torch.empty((3, 4, 5), dtype=getattr(torch, dtype), device="meta")
        x = fc.empty((3, 4, 5), dtype=getattr(fc, dtype), device="meta")
        expected = call(torch, name, t, args, kw)
        got = call(fc, name, x, args, kw)
        for g, e in zip(got, expected, strict=True):
            assert g.is_meta
            assert str(g.dtype).removeprefix("flambeau.") == str(e.dtype).removeprefix("torch.")
            assert tuple(g.shape) == tuple(e.shape)
        outs = empty_outs(got, "meta")
        r = call(fc, name, x, args, kw, out=outs)
        assert r.values is outs[0] and r.indices is outs[1]
        assert [tuple(o.shape) for o in outs] == [tuple(e.shape) for e in expected]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_out_dtype_and_count_errors_name_the_op(name):
    x, t = make(sample(name, "float32"), "float32")
    args, kw = VARIANTS[name][0]
    for bad in [(torch.float64, torch.int64), (torch.float32, torch.int32)]:
        with pytest.raises(RuntimeError, match="(?i)expected (out tensor to have dtype|scalar type)"):
            call(torch, name, t, args, kw, out=(torch.empty(0, dtype=bad[0]), torch.empty(0, dtype=bad[1])))
        outs = tuple(fc.empty(0, dtype=getattr(fc, str(b).removeprefix("torch."))) for b in bad)
        # As the single-result ops: TypeError naming the op and both dtypes.
        with pytest.raises(TypeError, match=rf"\[{name}\] expected out tensor to have dtype"):
            call(fc, name, x, args, kw, out=outs)
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 1"):
        call(torch, name, t, args, kw, out=(torch.empty(0),))
    with pytest.raises(TypeError, match=rf"\[{name}\] out= must be a tuple of 2 tensors, got 1"):
        call(fc, name, x, args, kw, out=(fc.empty(0),))


def test_out_resize_warning_as_torch():
    x, t = make(sample("max", "float32"), "float32")
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        torch.max(t, 0, out=(torch.empty(7), torch.empty(7, dtype=torch.int64)))
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        outs = (fc.empty((7,)), fc.empty((7,), dtype=fc.int64))
        fc.max(x, 0, out=outs)
    assert len(tw) == len(fw) == 2  # one per resized output
    assert [tuple(o.shape) for o in outs] == [(4, 5), (4, 5)]


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 4)])
def test_empty_and_0d_inputs_as_torch(shape, device):
    a = RNG.integers(0, 4, shape).astype(np.float32)
    x, t = make(a, "float32", device)
    nd = len(shape)
    calls = [("max", (-1,)), ("min", (0, True)), ("mode", (-1,)), ("sort", (-1,)), ("sort", (0, True))]
    calls += [("topk", (0,)), ("topk", (1,)), ("topk", (0, 0))]
    for name, args in calls:
        try:
            expected = getattr(torch, name)(t, *args)
        except (RuntimeError, IndexError) as e:
            with pytest.raises(type(e), match=rf"\[{name}\]"):
                getattr(fc, name)(x, *args)
            continue
        assert_pair(getattr(fc, name)(x, *args), expected)
        outs = (fc.empty(3, device=device), fc.empty(3, dtype=fc.int64, device=device))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resizing a non-empty out warns (torch too)
            getattr(fc, name)(x, *args, out=outs)
        assert_pair(outs, expected)
    # A dim out of range: IndexError naming the op (torch's type).
    for name in ("max", "sort", "topk"):
        with pytest.raises(IndexError):
            getattr(torch, name)(t, 0, nd + 1) if name == "topk" else getattr(torch, name)(t, nd + 1)
        with pytest.raises(IndexError, match=rf"\[{name}\]"):
            getattr(fc, name)(x, 0, nd + 1) if name == "topk" else getattr(fc, name)(x, nd + 1)


# ---- the table's rules (codegen/model.py) ----


@pytest.fixture(scope="module")
def model():
    pytest.importorskip("yaml")
    name = "flambeau_core_codegen_model_multi"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "codegen" / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[name]


def test_the_table_takes_structured_ops_with_several_results(model, tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(
        """
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dtype: [same, int64]
  shape: reduce_dim
  structured: true
  out: true
"""
    )
    (op,) = model.load_ops(path)
    assert op.structured and [r.name for r in op.returns] == ["values", "indices"]
    # Results that may be absent (a norm backward's masks) take no out=; a non-tensor result is refused.
    path.write_text(
        """
- func: nb(Tensor self, bool input_g=True, bool weight_g=True, bool bias_g=True) -> (Tensor a, Tensor b, Tensor c)
  dtype: [same, same, same]
  shape: batch_norm_backward(self, input_g, weight_g, bias_g)
  structured: true
  out: true
"""
    )
    with pytest.raises(model.TableError, match="a structured op whose results may be absent has no out="):
        model.load_ops(path)
    path.write_text(path.read_text().replace("  out: true\n", ""))
    (op,) = model.load_ops(path)
    assert op.structured
    path.write_text(
        """
- func: f(Tensor self) -> (Tensor values, int count)
  dtype: [same, int64]
  shape: same
  structured: true
"""
    )
    with pytest.raises(model.TableError, match="a structured op returns one Tensor or a tuple of Tensors"):
        model.load_ops(path)
