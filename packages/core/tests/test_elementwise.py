"""Elementwise ops (binary, unary, comparisons, where, in-place, copies) against NumPy."""

from __future__ import annotations

import os
import subprocess
import sys

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import to_host
from helpers import assert_matches, check_op, make_tensor, random_array, to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

pytestmark = pytest.mark.on_devices

BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1, 3), (5, 1)),
    ((), (3, 2)),
    ((1,), (2, 1, 4)),
    ((0, 3), (3,)),
    ((3, 5, 7), (3, 5, 7)),
]
NUMERIC = ["int64", "float32", "float64"]
FLOATS = ["float32", "float64"]


@pytest.mark.parametrize(
    ("fc_fn", "np_fn", "dtypes"),
    [
        (lambda a, b: a + b, np.add, NUMERIC),
        (lambda a, b: a - b, np.subtract, NUMERIC),
        (lambda a, b: a * b, np.multiply, NUMERIC),
        (lambda a, b: fc.add(a, b, alpha=2), lambda a, b: a + 2 * b, NUMERIC),
        (lambda a, b: a.sub(b, alpha=3), lambda a, b: a - 3 * b, NUMERIC),
        (fc.maximum, np.maximum, NUMERIC + ["bool"]),
        (fc.minimum, np.minimum, NUMERIC + ["bool"]),
        (lambda a, b: a + b, np.logical_or, ["bool"]),
        (lambda a, b: a * b, np.logical_and, ["bool"]),
    ],
)
def test_binary_matches_numpy(fc_fn, np_fn, dtypes):
    assert check_op(fc_fn, np_fn, BROADCAST_SHAPES, dtypes) > 0


def test_div_is_true_division():
    check_op(lambda a, b: a / b, np.divide, BROADCAST_SHAPES, FLOATS, positive=True)
    # int / int -> float32 (the default float dtype), like PyTorch
    check_op(lambda a, b: a / b, lambda a, b: (a / b).astype(np.float32), BROADCAST_SHAPES, ["int64"], positive=True)
    assert (fc.tensor([1, 2]) / 2).tolist() == [0.5, 1.0]


def test_pow():
    check_op(lambda a, b: a**b, np.power, BROADCAST_SHAPES[:4], FLOATS, positive=True)
    check_op(lambda a, b: a**b, np.power, BROADCAST_SHAPES[:4], ["int64"], positive=True)
    t = fc.tensor([1.0, 2.0, 3.0])
    assert (t**2).tolist() == [1.0, 4.0, 9.0]
    assert (2**t).tolist() == [2.0, 4.0, 8.0]
    assert (fc.tensor([2, 3]) ** 3).tolist() == [8, 27]
    assert (fc.tensor([2, 1, -1]) ** fc.tensor(-1)).tolist() == [0, 1, -1]  # tensor exponent: computed


@pytest.mark.parametrize(
    ("name", "np_fn", "positive"),
    [
        ("neg", np.negative, False),
        ("abs", np.abs, False),
        ("relu", lambda x: np.maximum(x, 0).astype(x.dtype), False),
    ],
)
def test_unary_same_dtype(name, np_fn, positive):
    shapes = [((2, 3),), ((),), ((4, 1, 5),), ((0,),), ((1000,),)]
    check_op(getattr(fc, name), np_fn, shapes, NUMERIC, positive=positive)
    check_op(lambda t: getattr(t, name)(), np_fn, shapes[:2], NUMERIC, positive=positive)


@pytest.mark.parametrize(
    ("name", "np_fn", "positive"),
    [
        ("exp", np.exp, False),
        ("log", np.log, True),
        ("sqrt", np.sqrt, True),
        ("tanh", np.tanh, False),
        ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), False),
    ],
)
def test_unary_float(name, np_fn, positive):
    shapes = [((2, 3),), ((),), ((4, 1, 5),), ((1031,),)]
    check_op(getattr(fc, name), np_fn, shapes, FLOATS, positive=positive, rtol=2e-6, atol=1e-7)
    # integer and bool inputs compute in float32
    check_op(
        getattr(fc, name),
        lambda x: np_fn(x.astype(np.float64)).astype(np.float32),
        shapes[:2],
        ["int64", "bool"] if not positive else ["int64"],
        positive=positive,
        rtol=2e-6,
    )


def test_unary_special_values():
    x = fc.tensor([0.0, -1.0, float("inf"), float("nan")])
    np.testing.assert_array_equal(to_numpy(x.sqrt())[[0, 2]], [0.0, np.inf])
    assert np.isnan(to_numpy(x.sqrt())[1]) and np.isnan(to_numpy(x.relu())[3])
    assert to_numpy(fc.log(fc.tensor([0.0])))[0] == -np.inf
    assert to_numpy(fc.sigmoid(fc.tensor([-1000.0, 1000.0]))).tolist() == [0.0, 1.0]


def test_maximum_propagates_nan():
    a = fc.tensor([1.0, float("nan"), 3.0])
    b = fc.tensor([float("nan"), 2.0, 1.0])
    got = to_numpy(fc.maximum(a, b))
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 3.0
    assert np.isnan(to_numpy(fc.minimum(a, b))[:2]).all()


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(name):
    np_fn = {
        "eq": np.equal,
        "ne": np.not_equal,
        "lt": np.less,
        "le": np.less_equal,
        "gt": np.greater,
        "ge": np.greater_equal,
    }[name]
    check_op(getattr(fc, name), np_fn, BROADCAST_SHAPES, NUMERIC + ["bool"])
    op = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}[name]
    t = fc.tensor([1, 2, 3])
    assert getattr(t, op)(2).tolist() == np_fn(np.array([1, 2, 3]), 2).tolist()
    # computed in the promoted dtype: int tensor vs 2.5
    assert getattr(t, op)(2.5).tolist() == np_fn(np.array([1, 2, 3]), 2.5).tolist()


def test_where():
    rng = np.random.default_rng(1)
    for cs, xs, ys in [((2, 3), (2, 3), (2, 3)), ((3,), (2, 1), ()), ((2, 1, 4), (4,), (3, 1))]:
        c = rng.random(cs) < 0.5
        for dtype in ["int64", "float32", "float64", "bool"]:
            x, y = random_array(xs, dtype, rng), random_array(ys, dtype, rng)
            for layout in ("contiguous", "transposed"):
                got = fc.where(make_tensor(c, layout), make_tensor(x, layout), make_tensor(y, layout))
                assert_matches(got, np.where(c, x, y))
    # Python numbers and promotion
    t = fc.tensor([1.0, -2.0, 3.0])
    assert fc.where(t > 0, t, 0).tolist() == [1.0, 0.0, 3.0]
    assert fc.where(fc.tensor([True, False]), fc.tensor([1, 2]), 0.5).dtype == fc.float32
    with pytest.raises(TypeError, match=r"\[where\].*bool.*int64"):
        fc.where(fc.tensor([1, 0]), t[:2], t[:2])
    with pytest.raises(ValueError, match=r"\[where\] shapes \(2,\), \(3,\) and \(3,\) cannot be broadcast"):
        fc.where(fc.tensor([True, False]), t, t)


@settings(max_examples=40, deadline=None)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
    dtype=st.sampled_from(["int64", "float32", "float64"]),
    layout=st.sampled_from(["contiguous", "transposed", "sliced"]),
)
def test_broadcasting_property(shapes, dtype, layout):
    rng = np.random.default_rng(0)
    a, b = (random_array(s, dtype, rng) for s in shapes.input_shapes)
    ta, tb = make_tensor(a, layout), make_tensor(b, layout)
    assert_matches(ta + tb, a + b)
    assert_matches(ta * tb, a * b)
    assert_matches(ta > tb, a > b)
    assert (ta - tb).shape == shapes.result_shape


def test_broadcast_error_message():
    with pytest.raises(ValueError, match=r"\[add\] shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        fc.zeros(2, 3) + fc.zeros(4)
    with pytest.raises(ValueError, match=r"\[mul\] shapes \(2, 3\) and \(2,\)"):
        fc.zeros(2, 3) * fc.zeros(2)
    with pytest.raises(ValueError, match=r"broadcast_shapes"):
        fc.broadcast_shapes((2, 3), (4,))
    assert fc.broadcast_shapes((2, 1), (3,), ()) == (2, 3)


def test_broadcast_shapes_returns_a_size():
    for shapes in [((2, 1), (3,), ()), (4, (1, 1)), ((),), ()]:
        got, want = fc.broadcast_shapes(*shapes), torch.broadcast_shapes(*shapes)
        assert type(got) is fc.Size and type(want) is torch.Size
        assert got == want and repr(got) == repr(want).replace("torch", "flambeau")


def test_bad_operands():
    t = fc.tensor([1.0, 2.0])
    with pytest.raises(TypeError):
        _ = t + "a"
    with pytest.raises(TypeError):
        _ = t < "a"
    assert (t == "a") is False
    assert (t == None) is False  # noqa: E711
    with pytest.raises(TypeError, match=r"\[add\] argument 'other' must be a Tensor or a number, got str"):
        fc.add(t, "a")
    with pytest.raises(TypeError, match=r"\[sub\].*bool"):
        fc.tensor([True]) - fc.tensor([False])
    with pytest.raises(TypeError, match=r"\[neg\].*bool"):
        -fc.tensor([True])
    # float16 has kernels; maximum of complex tensors has none (as in PyTorch)
    with pytest.raises(TypeError, match=r"\[maximum\] is not supported for dtype complex64"):
        fc.maximum(fc.empty(2, dtype=fc.complex64), fc.empty(2, dtype=fc.complex64))
    with pytest.raises(TypeError, match=r"\[add\].*alpha must be an integer"):
        fc.add(fc.tensor([1]), fc.tensor([1]), alpha=0.5)


@pytest.mark.parametrize("alpha", [False, True, 0, 1, 2, -1])
@pytest.mark.parametrize("inplace", [False, True])
def test_add_of_bool_tensors_follows_alpha_like_torch(alpha, inplace):
    # a + alpha * b for bools: a | (alpha and b); alpha=False gives a, not a | b.
    import torch

    a, b = [True, False, True, False], [True, True, False, False]
    if inplace:
        got = fc.tensor(a).add_(fc.tensor(b), alpha=alpha)
        want = torch.tensor(a).add_(torch.tensor(b), alpha=alpha)
    else:
        got = fc.add(fc.tensor(a), fc.tensor(b), alpha=alpha)
        want = torch.add(torch.tensor(a), torch.tensor(b), alpha=alpha)
    assert got.dtype == fc.bool and got.tolist() == want.tolist()


def test_alpha_rules_match_torch():
    i8 = fc.tensor([1, 2], dtype=fc.int8)
    with pytest.raises(TypeError, match=r"\[add\] a bool alpha is only supported for bool tensors, got int8"):
        fc.add(i8, i8, alpha=True)
    with pytest.raises(TypeError, match=r"\[sub\] for int8 tensors, alpha must be an integer, got 0.5"):
        fc.sub(i8, i8, alpha=0.5)
    # alpha must fit the result dtype (Note [Scalar overflow]), as in torch
    with pytest.raises(fc.FlambeauError, match=r"\[add\] value 1000 cannot be converted to type int8 without overflow"):
        fc.add(i8, i8, alpha=1000)
    with pytest.raises(RuntimeError, match=r"\[sub_\] value 128 cannot be converted to type int8"):
        i8.clone().sub_(i8, alpha=128)
    assert fc.add(i8, i8, alpha=-128).tolist() == [-127, -254 + 256]


def test_reflected_operators_with_numbers():
    t = fc.tensor([1.0, 2.0, 4.0])
    assert (1 + t).tolist() == [2.0, 3.0, 5.0]
    assert (1 - t).tolist() == [0.0, -1.0, -3.0]
    assert (2 * t).tolist() == [2.0, 4.0, 8.0]
    assert (1 / t).tolist() == [1.0, 0.5, 0.25]
    assert (-t).tolist() == [-1.0, -2.0, -4.0]
    assert abs(fc.tensor([-1, 2])).tolist() == [1, 2]
    assert (t + np.float64(1.0)).tolist() == [2.0, 3.0, 5.0]
    assert (t + True).tolist() == [2.0, 3.0, 5.0]


def test_tensors_hash_by_identity():
    a, b = fc.tensor([1.0]), fc.tensor([1.0])
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b"
    assert hash(a) == object.__hash__(a)


def test_inplace_ops_values_identity_and_version():
    rng = np.random.default_rng(2)
    for name, np_fn in [("add_", np.add), ("sub_", np.subtract), ("mul_", np.multiply), ("div_", np.divide)]:
        for layout in ("contiguous", "transposed", "sliced"):
            x = random_array((3, 4), "float32", rng, positive=True)
            y = random_array((4,), "float32", rng, positive=True)
            t = make_tensor(x, layout)
            v = t._version
            r = getattr(t, name)(make_tensor(y))
            assert r is t
            assert t._version == v + 1
            assert_matches(t, np_fn(x, y).astype(np.float32))
    t = fc.tensor([1.0, 2.0])
    t.add_(fc.tensor([1.0, 1.0]), alpha=2)
    assert t.tolist() == [3.0, 4.0]
    t.sub_(1, alpha=2)
    assert t.tolist() == [1.0, 2.0]


def test_inplace_operators_keep_identity():
    t = fc.tensor([1, 2, 3])
    orig = t
    t += 1
    t *= 2
    t -= fc.tensor([1, 1, 1])
    assert t is orig and t.tolist() == [3, 5, 7]
    f = fc.tensor([1.0, 2.0])
    f /= 2
    assert f.tolist() == [0.5, 1.0]
    # int64 += float64 tensor with dims: result float64 cannot be cast to int64
    with pytest.raises(
        TypeError, match=r"\[add_\] result type float\d+ can't be cast to the desired output type int64"
    ):
        t += fc.tensor([0.5, 0.5, 0.5])
    with pytest.raises(TypeError, match=r"\[div_\] result type float32 can't be cast.*int64"):
        t /= 2
    # float32 += float64 computes in self's dtype
    f += fc.tensor([1.0, 1.0], dtype=fc.float64)
    assert f.dtype == fc.float32 and f.tolist() == [1.5, 2.0]
    # bool self: int other cannot be cast to bool
    with pytest.raises(TypeError, match="bool"):
        fc.tensor([True]).add_(1)


def test_inplace_shape_errors():
    t = fc.zeros(3)
    with pytest.raises(ValueError, match=r"\[add_\] shape \(2, 3\) cannot be broadcast to the shape \(3,\) of self"):
        t.add_(fc.zeros(2, 3))
    e = fc.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match=r"\[mul_\].*single memory location"):
        e.mul_(2)


def _expanded(m):
    return m.zeros(3).expand(2, 3)


WRITES_INTO_EXPANDED = {
    "add_": lambda m, t: t.add_(1),
    "copy_": lambda m, t: t.copy_(m.ones(2, 3)),
    "copy_ broadcast": lambda m, t: t.copy_(m.ones(3)),
    "uniform_": lambda m, t: t.uniform_(),
    "normal_": lambda m, t: t.normal_(),
    "setitem tensor": lambda m, t: t.__setitem__((slice(None), 0), m.ones(2)),
    "setitem 0-d tensor": lambda m, t: t.__setitem__(slice(None), m.tensor(2.0)),
    "fill_": lambda m, t: t.fill_(1.0),
    "zero_": lambda m, t: t.zero_(),
    "setitem one row": lambda m, t: t.__setitem__(0, 1.0),
    "setitem number": lambda m, t: t.__setitem__(slice(None), 1.0),
    "setitem number column": lambda m, t: t.__setitem__((slice(None), 0), 1.0),
}


@pytest.mark.parametrize("name", list(WRITES_INTO_EXPANDED))
def test_writes_into_an_expanded_tensor_like_torch(name):
    """Ops that write a tensor whose elements share memory refuse, as PyTorch's
    do; fill_ and zero_ (one value, written several times) and writes into a
    row that itself does not overlap are allowed, as in PyTorch."""
    import torch

    write = WRITES_INTO_EXPANDED[name]
    try:
        write(torch, _expanded(torch))
        torch_refuses = False
    except RuntimeError as e:
        assert "single memory location" in str(e)
        torch_refuses = True
    t = _expanded(fc)
    if torch_refuses:
        op = name.split()[0]
        op = "copy_" if name.startswith("setitem") and "tensor" in name else op
        with pytest.raises(RuntimeError, match=rf"\[{op}\] unsupported operation: more than one element"):
            write(fc, t)
        assert t.tolist() == [[0.0] * 3] * 2  # nothing written
    else:
        write(fc, t)


def test_inplace_with_overlapping_views():
    x = np.arange(6, dtype=np.float64)
    t = fc.tensor(x)
    t[1:].add_(t[:-1])
    x[1:] += x[:-1].copy()
    assert t.tolist() == x.tolist()
    t = fc.tensor(np.arange(9.0).reshape(3, 3))
    t.add_(t.t())  # reads the old transposed values
    a = np.arange(9.0).reshape(3, 3)
    assert t.tolist() == (a + a.T).tolist()


def test_copy_broadcasts_casts_and_bumps_version():
    t = fc.zeros(2, 3)
    v = t._version
    assert t.copy_(fc.tensor([1, 2, 3])) is t
    assert t._version == v + 1
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2 and t.dtype == fc.float32
    # into a transposed destination, from a sliced source
    dst = fc.zeros(3, 2).t()
    src_np = np.arange(12, dtype=np.float64).reshape(2, 6)
    dst.copy_(fc.tensor(src_np)[:, ::2])
    assert dst.tolist() == src_np[:, ::2].tolist()
    # float -> int truncates, anything -> bool is != 0
    i = fc.zeros(3, dtype=fc.int64)
    i.copy_(fc.tensor([1.7, -2.5, 0.0]))
    assert i.tolist() == [1, -2, 0]
    b = fc.zeros(3, dtype=fc.bool)
    b.copy_(fc.tensor([0.0, 0.5, -3.0]))
    assert b.tolist() == [False, True, True]
    # self copy is a no-op that still counts as a write
    v = i._version
    i.copy_(i)
    assert i.tolist() == [1, -2, 0] and i._version == v + 1
    with pytest.raises(ValueError, match=r"\[copy_\]"):
        fc.zeros(3).copy_(fc.zeros(4))


def test_clone_cast_and_to():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = make_tensor(x, "transposed")
    c = t.clone()  # keeps the layout (preserve_format), as in PyTorch
    assert c.stride() == t.stride() and c.tolist() == x.tolist() and c.data_ptr() != t.data_ptr()
    assert t.clone(memory_format=fc.contiguous_format).is_contiguous()
    assert t.contiguous().is_contiguous()
    ct = fc.tensor([1.0])
    assert ct.contiguous() is ct
    assert t.to(fc.float32) is t
    assert t.to(t.device) is t  # (t.to("cpu") on the cpu)
    assert t.to(fc.device("cpu"), fc.float64).dtype == fc.float64
    assert t.long().tolist() == x.astype(np.int64).tolist()
    assert t.double().dtype == fc.float64 and t.int().dtype == fc.int32
    assert t.bool().tolist() == (x != 0).tolist()
    assert fc.tensor([1, 2]).float().tolist() == [1.0, 2.0]
    assert fc.tensor([1, 2]).type_as(fc.tensor([1.0])).dtype == fc.float32
    assert t.to(dtype=fc.float64).dtype == fc.float64
    with pytest.raises(RuntimeError, match=r"\[to\].*cuda"):
        t.to("cuda")
    with pytest.raises(TypeError, match=r"\[to\]"):
        t.to([1])


def test_fill_and_zero():
    t = fc.ones(2, 2)
    v = t._version
    assert t.zero_() is t and t.tolist() == [[0.0, 0.0]] * 2 and t._version > v
    t.fill_(2.5)
    assert t.tolist() == [[2.5, 2.5]] * 2
    t.fill_(fc.tensor(3.0))
    assert t.tolist() == [[3.0, 3.0]] * 2


def test_all_any():
    assert fc.tensor([1, 2]).all().item() is True
    assert fc.tensor([1, 0]).all().item() is False
    assert fc.tensor([0.0, 0.0]).any().item() is False
    assert fc.tensor([0.0, 0.5]).any().item() is True


@pytest.mark.parametrize("dim", [0, 1, -1, (0, 2), [1, 2], ()])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_any_over_dims_match_torch(dim, keepdim):
    a = np.random.default_rng(4).integers(0, 3, size=(3, 4, 5)) > 0
    t, ref = fc.tensor(a), torch.from_numpy(a)
    for name in ("all", "any"):
        want = getattr(torch, name)(ref, dim=dim, keepdim=keepdim).numpy()
        got = getattr(fc, name)(t, dim=dim, keepdim=keepdim)
        assert got.dtype == fc.bool and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(memoryview(to_host(got))), want)
        np.testing.assert_array_equal(np.asarray(memoryview(to_host(getattr(t, name)(dim, keepdim)))), want)
    with pytest.raises(IndexError, match="dim"):
        fc.all(t, dim=3)


def test_large_tensors_use_threads_and_vector_tails():
    rng = np.random.default_rng(3)
    for n in (600_011, 33):
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        assert_matches(fc.tensor(a) + fc.tensor(b), a + b)
        assert_matches(fc.tensor(a) * 3.0, a * np.float32(3.0))
        assert_matches(fc.exp(fc.tensor(a)), np.exp(a), rtol=2e-6)
    x = rng.standard_normal((1500, 1401))  # above Note [Elementwise grain]: threaded
    assert_matches(make_tensor(x, "transposed") + make_tensor(x, "sliced"), x + x)


# The cpu's kernels per ISA, in child processes: a test of the host.
@pytest.mark.on_devices(types=("cpu",))
def test_every_cpu_capability_gives_the_same_results():
    # Note [CPU capabilities]: each table (base, avx2, avx512) must agree.
    script = (
        "import numpy as np, flambeau_core as fc\n"
        "a = np.linspace(-3, 3, 1037).astype(np.float32)\n"
        "t = fc.tensor(a)\n"
        "r = [t + t * 2, t / 3, fc.maximum(t, -t), t.relu(), t.abs(), t.sqrt(), t.exp(), t.tanh(), t.sigmoid(),"
        " t.double() - 1, t.sum(), t.double().sum()]\n"
        "print(fc._C._cpu_capability())\n"
        "print(repr([np.asarray(memoryview(x)).tolist() for x in r]))\n"
    )
    outputs = []
    allowed = {"base": {"base"}, "avx2": {"base", "avx2"}, "avx512": {"base", "avx2", "avx512"}}
    for cap in ("base", "avx2", "avx512"):
        env = dict(os.environ, FLAMBEAU_CPU_CAPABILITY=cap)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        used, _, values = out.stdout.partition("\n")
        assert used in allowed[cap]
        outputs.append(eval(values, {"nan": float("nan"), "inf": float("inf")}))  # noqa: S307 - our own output
    for other in outputs[1:]:
        for x, y in zip(outputs[0], other, strict=True):
            np.testing.assert_allclose(
                np.asarray(y, dtype=float), np.asarray(x, dtype=float), rtol=1e-6, equal_nan=True
            )


def test_empty_and_zero_dim():
    assert (fc.zeros(0, 3) + fc.zeros(3)).shape == (0, 3)
    r = fc.tensor(2.0) * fc.tensor(3.0)
    assert r.shape == () and r.item() == 6.0
    assert fc.exp(fc.zeros(0)).shape == (0,)


@pytest.mark.parametrize(
    ("name", "np_fn", "max_ulp"),
    [
        ("exp", np.exp, 1.5),
        ("log", np.log, 1.5),
        ("tanh", np.tanh, 2),
        ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), 3),
    ],
)
def test_float32_transcendentals_are_accurate(name, np_fn, max_ulp):
    # The vectorized float32 polynomials against float64 NumPy, in ulps of the
    # float32 result, over the whole range incl. denormals, inf and NaN.
    rng = np.random.default_rng(5)
    x = np.concatenate(
        [
            rng.uniform(-110, 90, 20000),
            rng.standard_normal(20000),
            np.logspace(-45, 38, 2000),
            -np.logspace(-45, 38, 2000),
            [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.3, -103.9],
        ]
    ).astype(np.float32)
    if name == "log":
        x = np.abs(x)
    with np.errstate(all="ignore"):
        ref = np_fn(x.astype(np.float64))
        got = to_numpy(getattr(fc, name)(fc.tensor(x))).astype(np.float64)
        ref32 = ref.astype(np.float32).astype(np.float64)
        same = (got == ref32) | (np.isnan(got) & np.isnan(ref))
        ulp = np.spacing(np.abs(ref32).astype(np.float32)).astype(np.float64)
        err = np.where(same, 0.0, np.abs(got - ref) / np.maximum(ulp, 2.0**-149))
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert err.max() <= max_ulp, (x[np.argmax(err)], err.max())


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
def test_small_integer_dtypes(dtype):
    shapes = BROADCAST_SHAPES[:4]
    for fc_fn, np_fn in [
        (lambda a, b: a + b, np.add),
        (lambda a, b: a - b, np.subtract),
        (lambda a, b: a * b, np.multiply),
        (fc.maximum, np.maximum),
        (fc.minimum, np.minimum),
        (fc.lt, np.less),
        (fc.eq, np.equal),
    ]:
        check_op(fc_fn, np_fn, shapes, [dtype], layouts=("contiguous", "transposed"))
    check_op(lambda a: a.abs(), np.abs, [((3, 4),)], [dtype])
    check_op(lambda a: a.relu(), lambda x: np.maximum(x, 0).astype(x.dtype), [((3, 4),)], [dtype])
    check_op(lambda a, b: a**b, np.power, [((3, 4), (4,))], [dtype], positive=True)
    check_op(lambda a, b: a / b, lambda a, b: (a / b).astype(np.float32), [((3, 4), (4,))], [dtype], positive=True)
    check_op(lambda a: a.sum(0), lambda x: x.sum(0).astype(np.int64), [((3, 4),)], [dtype])
    check_op(lambda a: a.exp(), lambda x: np.exp(x.astype(np.float64)).astype(np.float32), [((3, 4),)], [dtype])
    # wraps around like NumPy
    x = np.array([100, 120], dtype=dtype)
    assert (fc.tensor(x) * 3).tolist() == (x * np.array(3, dtype=dtype)).tolist()


def test_where_accepts_numbers_and_method_form():
    t = fc.tensor([1.0, -2.0])
    assert fc.where(True, t, 0.0).tolist() == [1.0, -2.0]
    assert t.where(t > 0, -1.0).tolist() == [1.0, -1.0]
    with pytest.raises(TypeError, match=r"\[where\]"):
        fc.where("x", t, t)


def test_numpy_operands_give_tensors():
    t = fc.tensor([1.0, 2.0])
    for r in (np.float64(1.0) + t, np.array([1.0, 2.0]) + t, t * np.array([1.0, 2.0]), np.array([1, 3]) > t):
        assert isinstance(r, fc.Tensor)
    assert (np.array([1.0, 2.0]) + t).tolist() == [2.0, 4.0]
    assert (np.float64(1.0) + t).dtype == fc.float32  # a NumPy scalar is a weak number
    assert (np.array([1, 3]) > t).tolist() == [False, True]


def test_integer_tensor_to_a_negative_python_int_is_an_error():
    t = fc.tensor([2, 3])
    with pytest.raises(RuntimeError, match=r"\[pow\] integers to negative integer powers are not allowed"):
        t**-1
    assert (t**2).tolist() == [4, 9]
    assert (t ** fc.tensor([-1, 0])).tolist() == [0, 1]  # a tensor exponent is not checked, as in PyTorch
    assert (t.float() ** -1).tolist() == [0.5, pytest.approx(1 / 3)]


def test_lists_are_operands_like_in_pytorch():
    t = fc.tensor([1, 2, 3])
    assert (t == [1, 0, 3]).tolist() == [True, False, True]
    assert (t + [10, 20, 30]).tolist() == [11, 22, 33]
    assert ([1, 1, 1] - t).tolist() == [0, -1, -2]
    assert (t * (2, 2, 2)).tolist() == [2, 4, 6]
    with pytest.raises(ValueError, match="add"):
        t + [1, 2]  # shapes (3,) and (2,) do not broadcast
    with pytest.raises(TypeError):
        t + ["a", "b", "c"]
    assert (t == "abc") is False  # unrelated types: Python's fallback, no exception
