"""The meta steps of the elementwise ops: unary, binary, comparison and in-place ops in every dtype,
python numbers and alpha, where, clamp, div's rounding_mode, the samplers and the activations'
backwards (Note [Meta step], Note [Dtype coverage] in flambeau/meta.h).

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import itertools

import flambeau_core as fc
import numpy as np
import pytest
import torch
from meta_helpers import (
    ACTIVATION_GRADS,
    BINARY,
    BOOL_UNARY,
    COMPARE,
    DTYPES,
    FLOAT_UNARY,
    INPLACE,
    MATH_BINARY,
    MATH_UNARY,
    SAME_UNARY,
    SAMPLERS,
    SORTING,
    TH,
    agree,
    check_torch,
    cpu_tensor,
    meta_and_cpu,
    outcome,
    torch_fn,
)

# ---- unary and binary ops: meta against cpu and torch ----


@pytest.mark.parametrize("name", FLOAT_UNARY + SAME_UNARY + BOOL_UNARY + MATH_UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(name, dtype):
    for shape in [(), (0,), (3, 4)]:
        x = cpu_tensor(shape, dtype)
        meta, cpu = meta_and_cpu(getattr(fc, name), x)
        assert agree(meta, cpu), (name, dtype, shape, meta, cpu)
        check_torch(torch_fn(name), cpu, torch.empty(shape, dtype=TH[dtype], device="meta"))


@pytest.mark.parametrize("name", BINARY + COMPARE + MATH_BINARY)
@pytest.mark.parametrize(("da", "db"), list(itertools.product(DTYPES, repeat=2)))
def test_binary(name, da, db):
    for sa, sb in [((3, 1), (4,)), ((), (2, 3)), ((2, 3), (3, 2)), ((0, 1), (1, 5))]:
        a, b = cpu_tensor(sa, da), cpu_tensor(sb, db)
        meta, cpu = meta_and_cpu(getattr(fc, name), a, b)
        assert agree(meta, cpu), (name, da, db, sa, sb, meta, cpu)
        ta = torch.empty(sa, dtype=TH[da], device="meta")
        tb = torch.empty(sb, dtype=TH[db], device="meta")
        check_torch(torch_fn(name), cpu, ta, tb)


# Every dtype, beyond the seven above: the simulated device launches an op's cpu kernel asynchronously
# once the meta step accepts the arguments, so an op's `dtypes:` must name exactly the dtypes it has loops
# for (Note [Dtype coverage]).
ALL_DTYPES = """bool uint8 int8 int16 int32 int64 uint16 uint32 uint64 float16 bfloat16 float32 float64 complex64
    complex128""".split()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_is_refused_by_the_meta_step_where_the_cpu_has_no_loop(dtype):
    x = fc.tensor(np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]]), dtype=getattr(fc, dtype))
    disagree = []
    for name in FLOAT_UNARY + SAME_UNARY + BOOL_UNARY + MATH_UNARY + BINARY + COMPARE + MATH_BINARY + SORTING:
        args = (x, x) if name in BINARY + COMPARE + MATH_BINARY else (x, 1) if name == "topk" else (x,)
        meta, cpu = meta_and_cpu(getattr(fc, name), *args)
        if meta != cpu:
            disagree.append((name, meta, cpu))
    assert not disagree, disagree


@pytest.mark.parametrize("name", BINARY + COMPARE)
def test_binary_with_python_numbers(name):
    for dtype in ["int32", "float32", "bool"]:
        for number in [2, 2.5, True]:
            x = cpu_tensor((2, 3), dtype)
            cpu = outcome(getattr(fc, name), x, number)
            assert agree(outcome(getattr(fc, name), x.to("meta"), number), cpu), (name, dtype, number)


@pytest.mark.parametrize("alpha", [1, 2, 1.5, True, 2**40])
@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha_checks(name, alpha):
    for dtype in ["bool", "int32", "int64", "float32"]:
        a, b = cpu_tensor((2,), dtype), cpu_tensor((2,), dtype)
        fn = getattr(fc, name)
        meta, cpu = meta_and_cpu(lambda x, y: fn(x, y, alpha=alpha), a, b)  # noqa: B023
        assert agree(meta, cpu), (name, dtype, alpha, meta, cpu)
        meta, cpu = meta_and_cpu(lambda x, y: getattr(x, name + "_")(y, alpha=alpha), a.clone(), b)  # noqa: B023
        assert agree(meta, cpu), (name + "_", dtype, alpha, meta, cpu)


@pytest.mark.parametrize("name", INPLACE)
@pytest.mark.parametrize(
    ("da", "db"), [("int64", "float32"), ("float32", "int64"), ("bool", "int32"), ("float64", "float32")]
)
def test_inplace(name, da, db):
    for sa, sb in [((2, 3), (3,)), ((3,), (2, 3)), ((2, 3), (4,))]:
        a, b = cpu_tensor(sa, da), cpu_tensor(sb, db)
        meta, cpu = meta_and_cpu(lambda x, y: getattr(x, name)(y), a, b)  # noqa: B023
        assert agree(meta, cpu), (name, da, db, sa, sb, meta, cpu)
    x = fc.empty(2, 3, device="meta")
    assert getattr(x, name)(fc.ones(3, device="meta")) is x


def test_generated_inplace_and_out_forms():
    x = fc.empty(2, 3, device="meta")
    assert x.sin_() is x and x.exp_().shape == (2, 3)
    out = fc.empty(2, 3, device="meta")
    assert fc.sin(x, out=out) is out
    i = fc.empty(2, 3, dtype=fc.int64, device="meta")
    assert outcome(lambda t: t.sin_(), i) == outcome(lambda t: t.sin_(), fc.ones(2, 3, dtype=fc.int64))


def test_where():
    for dc, da, db in [("bool", "int32", "float32"), ("int64", "float32", "float32"), ("bool", "bool", "int64")]:
        c, a, b = cpu_tensor((2, 1), dc), cpu_tensor((3,), da), cpu_tensor((), db)
        meta, cpu = meta_and_cpu(fc.where, c, a, b)
        assert agree(meta, cpu), (dc, da, db, meta, cpu)


# ---- the samplers ----


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_samplers(name, dtype):
    fn = getattr(fc._C, name)
    for shapes in [((3, 4),) * SAMPLERS[name], ((3, 1), (4,))[: SAMPLERS[name]], ((),) * SAMPLERS[name]]:
        xs = [fc.ones(s, dtype=getattr(fc, dtype)) for s in shapes]
        meta, cpu = meta_and_cpu(fn, *xs)
        assert meta == cpu, (name, shapes, meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_checks_moved_to_the_table_keep_their_messages(device):
    i = fc.ones(2, dtype=fc.int64, device=device)
    c = fc.ones(2, dtype=fc.complex64, device=device)
    m = fc.ones(2, 3, device=device)
    with pytest.raises(TypeError, match=r"^\[add\] for int64 tensors, alpha must be an integer, got 1.5"):
        fc.add(i, i, alpha=1.5)
    with pytest.raises(TypeError, match=r"^\[sub_\] a bool alpha is only supported for bool tensors, got int64"):
        i.sub_(i, alpha=True)
    with pytest.raises(TypeError, match=r"^\[lt\] is not supported for complex tensors \(dtype complex64"):
        fc.lt(c, c)
    with pytest.raises(TypeError, match=r"^\[where\] expected a bool condition, got dtype int64"):
        fc.where(i, i, i)
    with pytest.raises(TypeError, match=r"^\[sign\] is not supported for dtype complex64: unlike NumPy"):
        fc.sign(c)
    with pytest.raises(fc.FlambeauError, match=r"^\[gelu\] approximate argument must be either 'none' or 'tanh'"):
        fc.gelu(m, approximate="fast")
    with pytest.raises(TypeError, match=r"^\[atan2\] is not supported for dtype complex64 \(inputs complex64 and"):
        fc.atan2(c, c)
    with pytest.raises(TypeError, match=r"^\[bitwise_and\] is not supported for dtype float32 \(inputs float32 and"):
        fc.bitwise_and(m, m)
    with pytest.raises(TypeError, match=r"^\[neg\] is not supported for bool tensors"):
        fc.neg(fc.ones(2, dtype=fc.bool, device=device))
    with pytest.raises(TypeError, match=r"^\[frac\] is not supported for dtype uint16"):
        fc.frac(fc.ones(2, dtype=fc.uint16, device=device))
    with pytest.raises(fc.FlambeauError, match=r"^\[pow\] integers to negative integer powers are not allowed"):
        i**-1
    with pytest.raises(fc.FlambeauError, match=r"^\[pow\] value 200 cannot be converted to type int8"):
        fc.ones(2, dtype=fc.int8, device=device) ** 200
    with pytest.raises(fc.FlambeauError, match=r"^\[mm\] shapes \(2, 3\) and \(2, 3\) cannot be multiplied: 3 != 2"):
        fc.mm(m, m)
    with pytest.raises(fc.FlambeauError, match=r"^\[bmm\] expected two 3-D tensors, got shapes \(2, 3\)"):
        fc.bmm(m, m)
    with pytest.raises(
        TypeError, match=r"^\[add_\] result type float32 can't be cast to the desired output type int64"
    ):
        i.add_(m[0, :2])
    with pytest.raises(fc.FlambeauError, match=r"^\[mul\] shapes \(2,\) and \(2, 3\) cannot be broadcast"):
        fc.mul(i, m)


# ---- the activations' backwards ----


@pytest.mark.parametrize("name", list(ACTIVATION_GRADS))
@pytest.mark.parametrize(("dg", "dx"), [("float32", "float32"), ("float64", "float32"), ("int64", "float32"),
                                        ("float32", "int64"), ("bool", "bool")])  # fmt: skip
@pytest.mark.parametrize(("sg", "sx"), [((2, 3), (2, 3)), ((3,), (2, 3)), ((), ())])
def test_activation_backwards(name, dg, dx, sg, sx):
    fn = getattr(fc, f"{name}_backward")
    extra = ACTIVATION_GRADS[name]
    meta, cpu = meta_and_cpu(lambda g, x: fn(g, x, *extra), cpu_tensor(sg, dg), cpu_tensor(sx, dx))
    assert meta == cpu, (meta, cpu)
    assert cpu[0] == "ok" or cpu[1] in ("FlambeauError", "TypeError"), cpu


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_activation_backward_checks_keep_their_messages(device):
    x = fc.ones(2, 3, device=device)
    with pytest.raises(TypeError, match=r"^\[silu_backward\] grad_output must be a float16, bfloat16, float32 or"):
        fc.silu_backward(x.to(fc.int64), x)
    with pytest.raises(fc.FlambeauError, match=r"^\[elu_backward\] grad_output shape \(3,\) does not match input"):
        fc.elu_backward(x[0], x, 1.0, 1.0, 1.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[gelu\] approximate argument must be either 'none' or 'tanh'"):
        fc.gelu_backward(x, x, approximate="erf")


# ---- clamp with number bounds ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("lo", "hi"), [(0, 2), (0.5, None), (None, 2), (None, None), (True, None), (-1, 1.5)])
def test_clamp(dtype, lo, hi):
    meta, cpu = meta_and_cpu(lambda x: fc.clamp(x, lo, hi), cpu_tensor((2, 3), dtype))
    assert agree(meta, cpu), (meta, cpu)
    check_torch(lambda x: torch.clamp(x, lo, hi), cpu, torch.ones(2, 3, dtype=TH[dtype]))
    if lo is None and hi is None:
        assert cpu[:2] == ("error", "FlambeauError") and cpu[2].startswith("[clamp] at least one of min and max"), cpu


# ---- div with rounding_mode ----


@pytest.mark.parametrize("mode", [None, "trunc", "floor", "round"])
@pytest.mark.parametrize(
    ("da", "db"), [("int64", "int64"), ("int32", "float32"), ("bool", "bool"), ("float64", "uint8")]
)
def test_div_rounding_mode(mode, da, db):
    for sa, sb in [((3, 1), (4,)), ((), (2, 3)), ((2, 3), (3, 2))]:
        a, b = cpu_tensor(sa, da), cpu_tensor(sb, db)
        meta, cpu = meta_and_cpu(lambda x, y: fc.div(x, y, rounding_mode=mode), a, b)  # noqa: B023
        assert agree(meta, cpu), (mode, da, db, sa, sb, meta, cpu)
        ta, tb = torch.empty(sa, dtype=TH[da], device="meta"), torch.empty(sb, dtype=TH[db], device="meta")
        check_torch(lambda x, y: torch.div(x, y, rounding_mode=mode), cpu, ta, tb)  # noqa: B023
    if mode == "round":
        assert cpu[:2] == ("error", "FlambeauError"), cpu
        assert cpu[2].startswith("[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found"), cpu
