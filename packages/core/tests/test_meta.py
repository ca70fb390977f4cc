"""The meta device and the ops' meta steps (Note [Meta device], Note [Meta step] in flambeau/meta.h).

Every op with a meta rule in ops.yaml runs here on meta tensors, and its shape and dtype
are compared with the same op on cpu tensors and with PyTorch's meta device; the errors a
meta step raises are the cpu's, word for word."""

from __future__ import annotations

import itertools

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as tf
from flambeau_core import _C

DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex64"]
FC = {n: getattr(fc, n) for n in [*DTYPES, "float16"]}
TH = {n: getattr(torch, n) for n in [*DTYPES, "float16"]}

# The ops migrated to table rules, by family (their Meta kernels are generated).
# The float unary ops of the shared list come from it (Note [Elementwise math list]).
FLOAT_UNARY = "exp log tanh sigmoid sqrt".split() + fc._C._elementwise_math_ops()["float_unary"]
SAME_UNARY = "neg relu floor ceil trunc round frac sign abs".split()
BOOL_UNARY = "isnan isinf isfinite".split()
BINARY = "add sub mul div pow maximum minimum".split()
COMPARE = "eq ne lt le gt ge".split()
INPLACE = "add_ sub_ mul_ div_".split()
MATMUL = "mm bmm".split()
REDUCTIONS = "sum prod_dim_int cumsum cumprod max min max_dim min_dim argmax argmin amax amin".split()
# (and the binary ops of the shared list)
MATH_BINARY = (
    """bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift logical_and logical_or
    logical_xor""".split()
    + [name for name, _kind in fc._C._elementwise_math_ops()["binary"]]
)
MATH_UNARY = """logical_not signbit bitwise_not sgn conj_physical nan_to_num gelu silu mish hardswish hardsigmoid
    log_sigmoid softsign leaky_relu elu softplus hardtanh""".split()
POOLING = """max_pool2d_with_indices max_pool_backward avg_pool2d avg_pool2d_backward adaptive_avg_pool2d
    adaptive_avg_pool2d_backward adaptive_max_pool2d""".split()
# Their backwards, (name, extra arguments).
ACTIVATION_GRADS = {
    "threshold": (0.5,), "gelu": (), "silu": (), "mish": (), "leaky_relu": (0.1,), "elu": (1.0, 1.0, 1.0),
    "softplus": (1.0, 20.0), "hardtanh": (-1.0, 1.0), "hardswish": (), "hardsigmoid": (), "log_sigmoid": (),
    "softsign": (),
}  # fmt: skip
MIGRATED = (
    FLOAT_UNARY + SAME_UNARY + BOOL_UNARY + MATH_UNARY + BINARY + COMPARE + MATH_BINARY + INPLACE + MATMUL + REDUCTIONS
)
SORTING = "sort topk".split()
LOSSES = """mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits""".split()
MIGRATED += (
    POOLING
    + SORTING
    + ["linear", "native_layer_norm", "convolution", "convolution_backward_weight"]
    + LOSSES
    + [f"{n}_backward" for n in LOSSES]
    + ["_cross_entropy", "_cross_entropy_backward", "nll_loss_nd", "nll_loss_nd_backward"]
    + [f"{n}_backward" for n in ACTIVATION_GRADS]
    + ["clamp"]
)
MIGRATED += ["where"]
INDEXING = """cat gather index_select index_add index_copy index_fill scatter scatter_value scatter_add scatter_reduce
    embedding embedding_dense_backward""".split()
MIGRATED += INDEXING + ["index", "index_put_"]
NORMS = """native_batch_norm native_batch_norm_backward native_layer_norm_backward native_group_norm
    native_group_norm_backward""".split()
SOFTMAX = "_softmax _log_softmax _softmax_backward_data _log_softmax_backward_data".split()
MIGRATED += NORMS + SOFTMAX + ["var_correction", "mode", "div_mode"]
# the samplers (src/cpu/random/distributions.cpp): shapes and dtypes only, no draws on meta
SAMPLERS = {"_standard_gamma": 1, "_standard_gamma_grad": 2, "poisson": 1, "binomial": 2}
MIGRATED += list(SAMPLERS)


def cpu_tensor(shape: tuple[int, ...], dtype: str) -> fc.Tensor:
    rng = np.random.default_rng(len(shape) * 31 + (DTYPES.index(dtype) if dtype in DTYPES else len(DTYPES)))
    values = rng.integers(1, 4, size=shape)
    return fc.tensor(values.astype(np.float64), dtype=FC[dtype])


def outcome(fn, *args):
    """("ok", shape, dtype name, ...) with a shape and dtype per result, or ("error", exception type, message)."""
    try:
        r = fn(*args)
    except Exception as e:  # noqa: BLE001  (any error must be the same on both devices)
        return ("error", type(e).__name__, str(e))
    results = tuple(r) if isinstance(r, tuple) else (r,)
    return ("ok", *[None if t is None else (tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1]) for t in results])


def torch_meta_outcome(fn, *tensors):
    """PyTorch's meta answer, where PyTorch's cpu runs the op too (its meta functions skip some dtype
    checks: pow of two bool tensors is int64 on meta and an error on the cpu); else None."""
    try:
        fn(*[torch.zeros(t.shape, dtype=t.dtype) for t in tensors])
        r = fn(*tensors)
    except Exception:  # noqa: BLE001
        return None
    results = tuple(r) if isinstance(r, tuple) else (r,)
    return ("ok", *[(tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1]) for t in results])


def torch_fn(name: str):
    """The torch function of an op: torch.<name>, torch.special.<name without special_>, else
    torch.nn.functional.<name> (the activations)."""
    name = {"log_sigmoid": "logsigmoid"}.get(name, name)
    return (
        getattr(torch, name, None)
        or getattr(torch.special, name.removeprefix("special_"), None)
        or getattr(torch.nn.functional, name)
    )


def check_torch(fn, cpu, *tensors):
    theirs = torch_meta_outcome(fn, *tensors)
    assert theirs is None or cpu[0] != "ok" or theirs == cpu, (theirs, cpu)


def agree(meta, cpu) -> bool:
    """The meta step's outcome is the cpu's, errors word for word: the dtypes an op computes in are in the
    table too (Note [Dtype coverage]), so the meta device refuses what the cpu kernel has no loop for."""
    return meta == cpu


def meta_and_cpu(fn, *tensors):
    cpu = outcome(fn, *tensors)
    meta = outcome(fn, *[t.to("meta") if isinstance(t, fc.Tensor) else t for t in tensors])
    return meta, cpu


# ---- the device and its tensors ----


def test_factories_make_storage_less_meta_tensors():
    t = fc.empty(2, 3, device="meta")
    assert t.device.type == "meta" and str(t.device) == "meta" and t.is_meta
    assert t.shape == (2, 3) and t.dtype == fc.float32 and t.stride() == (3, 1)
    assert outcome(fc.add, t, t) == ("ok", ((2, 3), "float32"))
    for make in (fc.zeros, fc.ones, fc.rand, fc.randn):
        u = make(4, 5, dtype=fc.float64, device="meta")
        assert u.is_meta and u.shape == (4, 5) and u.dtype == fc.float64
    assert fc.full((2,), 7, device="meta").shape == (2,)
    assert fc.device("meta").type == "meta"
    # No memory: 4 TiB of float32 costs nothing, and neither does adding two of them.
    huge = fc.empty(2**20, 2**20, device="meta")
    s = huge + huge
    assert s.shape == (2**20, 2**20) and s.is_meta


def test_to_meta_keeps_shape_dtype_and_views_work():
    x = fc.arange(12).reshape(3, 4).to("meta")
    assert x.is_meta and x.shape == (3, 4) and x.dtype == fc.int64
    assert x.t().shape == (4, 3) and x[1].shape == (4,) and x[:, 1:3].shape == (3, 2)
    assert x.reshape(2, 6).shape == (2, 6) and x.unsqueeze(0).shape == (1, 3, 4)
    assert x.to("meta") is x or x.to("meta").is_meta


def test_repr_is_pytorchs():
    cases = [((3,), "float32"), ((2, 3), "int32"), ((0,), "float32"), ((), "float32"), ((2,), "bool")]
    for shape, dt in cases:
        ours = repr(fc.empty(shape, dtype=FC[dt], device="meta"))
        theirs = repr(torch.empty(shape, dtype=TH[dt], device="meta"))
        assert ours == theirs.replace("torch.", "flambeau.")


def test_copying_out_of_meta_raises():
    x = fc.ones(2, 3, device="meta")
    for read in (lambda: x.cpu(), lambda: x.tolist(), lambda: x.to("cpu"), lambda: x[0, 0].item()):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            read()
    with pytest.raises(NotImplementedError):
        torch.ones(2, 3, device="meta").cpu()


def test_copy_into_meta_checks_shapes():
    x = fc.empty(2, 3, device="meta")
    assert x.copy_(fc.ones(3)) is x
    with pytest.raises(fc.FlambeauError, match=r"\[copy_\] shape \(4,\) cannot be broadcast to the shape \(2, 3\)"):
        x.copy_(fc.ones(4))


def test_op_without_rule_names_op_and_meta():
    x = fc.ones(3, device="meta")
    # nonzero's shape depends on the values: it can never have a meta rule.
    with pytest.raises(NotImplementedError, match=r"^\[nonzero\] .*'meta'"):
        fc.nonzero(x)


def test_mixed_devices():
    x = fc.ones(2, 3, device="meta")
    assert (x + fc.tensor(2.0)).is_meta  # a 0-dim cpu tensor goes with any device
    assert (x * 2).is_meta
    with pytest.raises(RuntimeError, match=r"\[add\] expected all tensors to be on the same device.*meta.*cpu"):
        x + fc.ones(2, 3)


# ---- every migrated op: meta against cpu and torch ----


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


@pytest.mark.parametrize(
    ("name", "sa", "sb", "da", "db"),
    [
        ("mm", (2, 3), (3, 4), "float32", "float32"),
        ("mm", (2, 3), (4, 5), "float32", "float32"),
        ("mm", (2, 3), (3, 4), "float32", "float64"),
        ("mm", (2, 3, 1), (3, 4), "float32", "float32"),
        ("mm", (0, 3), (3, 0), "int64", "int64"),
        ("bmm", (5, 2, 3), (5, 3, 4), "float64", "float64"),
        ("bmm", (5, 2, 3), (4, 3, 4), "float64", "float64"),
        ("bmm", (5, 2, 3), (5, 2, 4), "float64", "float64"),
    ],
)
def test_matmul(name, sa, sb, da, db):
    a, b = cpu_tensor(sa, da), cpu_tensor(sb, db)
    meta, cpu = meta_and_cpu(getattr(fc, name), a, b)
    assert agree(meta, cpu), (meta, cpu)
    ta, tb = torch.empty(sa, dtype=TH[da], device="meta"), torch.empty(sb, dtype=TH[db], device="meta")
    check_torch(torch_fn(name), cpu, ta, tb)


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_samplers(name, dtype):
    fn = getattr(fc._C, name)
    for shapes in [((3, 4),) * SAMPLERS[name], ((3, 1), (4,))[: SAMPLERS[name]], ((),) * SAMPLERS[name]]:
        xs = [fc.ones(s, dtype=getattr(fc, dtype)) for s in shapes]
        meta, cpu = meta_and_cpu(fn, *xs)
        assert meta == cpu, (name, shapes, meta, cpu)


def test_every_op_with_a_meta_kernel_is_tested_here():
    hand_written = {"empty", "fill_", "copy_", "clone", "cast", "uniform_", "normal_", "random_", "bernoulli_",
                    "bernoulli__tensor"}  # fmt: skip
    with_meta = {n for n in fc._C._registered_ops() if fc._C._has_kernel(n, "Meta")}
    assert with_meta - hand_written == set(MIGRATED)


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


# name: (function, positional arguments after the input, keyword arguments), called alike on
# flambeau_core and torch (a dtype keyword names the module's dtype).
REDUCTION_CALLS = {
    "sum": ("sum", (), {}),
    "sum dim": ("sum", (0,), {}),
    "sum dims keepdim": ("sum", ((0, -1),), {"keepdim": True}),
    "sum dtype": ("sum", (-1,), {"dtype": "float64"}),
    "sum bad dim": ("sum", (3,), {}),
    "sum repeated dim": ("sum", ((0, 0),), {}),
    "prod dim": ("prod", (0,), {}),
    "prod dim keepdim": ("prod", (-1,), {"keepdim": True}),
    "cumsum": ("cumsum", (0,), {}),
    "cumsum dtype": ("cumsum", (-1,), {"dtype": "float32"}),
    "cumprod bad dim": ("cumprod", (4,), {}),
    "max": ("max", (), {}),
    "min": ("min", (), {}),
    "max dim": ("max", (0,), {}),
    "min dim keepdim": ("min", (-1,), {"keepdim": True}),
    "argmax": ("argmax", (), {}),
    "argmin dim": ("argmin", (0,), {"keepdim": True}),
    "amax": ("amax", (), {}),
    "amin dims": ("amin", ((0, -1),), {}),
    "var": ("var", (), {}),
    "var dim correction": ("var", (0,), {"correction": 0}),
    "var bad dim": ("var", (2,), {}),
    "std dims keepdim": ("std", ((0, -1),), {"keepdim": True}),
    "var_mean dim": ("var_mean", (-1,), {}),
    "std_mean keepdim": ("std_mean", (0,), {"keepdim": True, "correction": 2}),
    "var unbiased": ("var", (False,), {}),
    "std dim unbiased": ("std", (0, False), {}),
    "var_mean dims unbiased": ("var_mean", ((0, -1),), {"unbiased": False, "keepdim": True}),
    "std_mean correction": ("std_mean", (), {"correction": 0}),
    "mode": ("mode", (), {}),
    "mode dim keepdim": ("mode", (0,), {"keepdim": True}),
    "kthvalue": ("kthvalue", (1,), {}),
    "kthvalue dim keepdim": ("kthvalue", (2, 0), {"keepdim": True}),
    "kthvalue k too large": ("kthvalue", (4, -1), {}),
    "kthvalue bad dim": ("kthvalue", (1, 2), {}),
}


def reduction(module, call):
    name, args, kwargs = REDUCTION_CALLS[call]
    kwargs = {k: getattr(module, v) if k == "dtype" else v for k, v in kwargs.items()}
    return lambda x: getattr(module, name)(x, *args, **kwargs)


@pytest.mark.parametrize("call", list(REDUCTION_CALLS))
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_reductions(call, dtype):
    for shape in [(), (0,), (3, 4), (2, 0, 3)]:
        x = cpu_tensor(shape, dtype)
        meta, cpu = meta_and_cpu(reduction(fc, call), x)
        assert agree(meta, cpu), (call, dtype, shape, meta, cpu)
        check_torch(reduction(torch, call), cpu, torch.empty(shape, dtype=TH[dtype], device="meta"))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_reduction_checks_keep_their_messages(device):
    e = fc.ones(2, 0, device=device)
    with pytest.raises(
        RuntimeError, match=r"^\[max\] max\(\) of an empty tensor \(shape \(2, 0\)\) is undefined; pass a dim"
    ):
        fc.max(e)
    with pytest.raises(IndexError, match=r"^\[argmin\] cannot reduce over dim 1 of size 0 \(shape \(2, 0\)\)"):
        fc.argmin(e, 1)
    with pytest.raises(IndexError, match=r"^\[amax\] cannot reduce over dim 1 of size 0"):
        fc.amax(e, 1)
    with pytest.raises(IndexError, match=r"^\[cumsum\]"):
        fc.cumsum(e, 2)


# ---- pooling: one shape rule (pool::check_pool2d) for every backend ----

# name: (flambeau_core call, torch call or None); both take the input x.
POOL_CALLS = {
    "max 2x2": (
        lambda x: fc.max_pool2d_with_indices(x, [2], [], [0], [1]),
        lambda x: tf.max_pool2d(x, 2, return_indices=True),
    ),
    "max dilated ceil": (
        lambda x: fc.max_pool2d_with_indices(x, [3, 2], [2, 1], [1, 0], [2, 1], True),
        lambda x: tf.max_pool2d(x, (3, 2), (2, 1), (1, 0), (2, 1), True, return_indices=True),
    ),
    "max pad too large": (lambda x: fc.max_pool2d_with_indices(x, [2], [], [2], [1]), None),
    "max kernel too large": (lambda x: fc.max_pool2d_with_indices(x, [9], [], [0], [1]), None),
    "max bad kernel_size": (lambda x: fc.max_pool2d_with_indices(x, [2, 2, 2], [], [0], [1]), None),
    "avg": (lambda x: fc.avg_pool2d(x, [3], [2], [1]), lambda x: tf.avg_pool2d(x, 3, 2, 1)),
    "avg ceil": (lambda x: fc.avg_pool2d(x, [2], [2], [0], True), lambda x: tf.avg_pool2d(x, 2, 2, 0, True)),
    "avg zero divisor": (lambda x: fc.avg_pool2d(x, [2], [2], [0], False, True, 0), None),
    "avg zero stride": (lambda x: fc.avg_pool2d(x, [2], [0], [0]), None),
    "adaptive avg": (lambda x: fc.adaptive_avg_pool2d(x, [3, 2]), lambda x: tf.adaptive_avg_pool2d(x, (3, 2))),
    "adaptive avg global": (lambda x: fc.adaptive_avg_pool2d(x, [1]), lambda x: tf.adaptive_avg_pool2d(x, 1)),
    "adaptive avg negative": (lambda x: fc.adaptive_avg_pool2d(x, [-1, 2]), None),
    "adaptive max": (
        lambda x: fc.adaptive_max_pool2d(x, [2, 3]),
        lambda x: tf.adaptive_max_pool2d(x, (2, 3), return_indices=True),
    ),
    "adaptive max three sizes": (lambda x: fc.adaptive_max_pool2d(x, [2, 3, 4]), None),
}


@pytest.mark.parametrize("call", list(POOL_CALLS))
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5), (0, 2, 4, 4), (2, 0, 4, 4), (4, 4)])
def test_pooling(call, dtype, shape):
    ours, theirs = POOL_CALLS[call]
    meta, cpu = meta_and_cpu(ours, cpu_tensor(shape, dtype))
    assert meta == cpu, (call, dtype, shape, meta, cpu)
    if theirs is not None and dtype.startswith("float"):
        check_torch(theirs, cpu, torch.ones(shape, dtype=TH[dtype]))


def pool_grads(device):
    """The pooling backwards on good and bad arguments: (name, call) pairs."""
    g = fc.ones(2, 3, 3, 3, device=device)
    i = fc.zeros(2, 3, 3, 3, dtype=fc.int64, device=device)
    return [
        ("max", lambda: fc.max_pool_backward(g, i, [2, 3, 6, 6])),
        ("max int grad", lambda: fc.max_pool_backward(i, i, [2, 3, 6, 6])),
        ("max float indices", lambda: fc.max_pool_backward(g, g, [2, 3, 6, 6])),
        ("max rank", lambda: fc.max_pool_backward(g, i, [6, 6])),
        ("max leading", lambda: fc.max_pool_backward(g, i, [2, 4, 6, 6])),
        ("max shapes", lambda: fc.max_pool_backward(g, i[:, :, :2], [2, 3, 6, 6])),
        ("avg", lambda: fc.avg_pool2d_backward(g, [2, 3, 6, 6], [2], [2], [0], False, True, None)),
        ("avg wrong grad", lambda: fc.avg_pool2d_backward(g, [2, 3, 8, 8], [2], [2], [0], False, True, None)),
        ("avg divisor", lambda: fc.avg_pool2d_backward(g, [2, 3, 6, 6], [2], [2], [0], False, True, 0)),
        ("adaptive", lambda: fc.adaptive_avg_pool2d_backward(g, [2, 3, 7, 5])),
        ("adaptive rank", lambda: fc.adaptive_avg_pool2d_backward(g, [3, 7, 5])),
        ("adaptive int", lambda: fc.adaptive_avg_pool2d_backward(i, [2, 3, 7, 5])),
    ]


def test_pooling_backwards():
    for (name, on_cpu), (_, on_meta) in zip(pool_grads("cpu"), pool_grads("meta"), strict=True):
        assert outcome(on_meta) == outcome(on_cpu), name


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_pooling_checks_keep_their_messages(device):
    x = fc.ones(1, 2, 5, 5, device=device)
    with pytest.raises(TypeError, match=r"^\[max_pool2d\] is not supported for dtype bool"):
        fc.max_pool2d_with_indices(x.to(fc.bool), [2], [], [0], [1])
    with pytest.raises(fc.FlambeauError, match=r"^\[max_pool2d\] pad should be at most half"):
        fc.max_pool2d_with_indices(x, [2], [], [2], [1])
    with pytest.raises(
        TypeError,
        match=r"^\[avg_pool2d\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64",
    ):
        fc.avg_pool2d(x.to(fc.int64), [2], [], [0])
    with pytest.raises(fc.FlambeauError, match=r"^\[avg_pool2d\] divisor_override must be non-zero"):
        fc.avg_pool2d(x, [2], [], [0], False, True, 0)
    with pytest.raises(fc.FlambeauError, match=r"^\[adaptive_max_pool2d\] output_size must be non-negative"):
        fc.adaptive_max_pool2d(x, [-1])
    with pytest.raises(TypeError, match=r"^\[max_pool_backward\] indices must be int64, got dtype float32"):
        fc.max_pool_backward(x, x, [1, 2, 10, 10])
    with pytest.raises(
        fc.FlambeauError,
        match=r"^\[avg_pool2d_backward\] grad_output has shape \(1, 2, 5, 5\) but the forward output has shape",
    ):
        fc.avg_pool2d_backward(x, [1, 2, 4, 4], [2], [2], [0], False, True, None)


# ---- sort and topk ----

SORT_CALLS = {
    "sort": ("sort", (), {}),
    "sort dim 0 descending": ("sort", (0, True), {}),
    "sort bad dim": ("sort", (3,), {}),
    "topk": ("topk", (1,), {}),
    "topk dim 0": ("topk", (2, 0), {}),
    "topk k 0": ("topk", (0,), {}),
    "topk k too large": ("topk", (5,), {}),
    "topk negative k": ("topk", (-1,), {}),
    "topk bad dim": ("topk", (1, 2), {}),
}


@pytest.mark.parametrize("call", list(SORT_CALLS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_topk(call, dtype):
    name, args, kwargs = SORT_CALLS[call]
    for shape in [(), (0,), (3, 4), (2, 0)]:
        meta, cpu = meta_and_cpu(lambda x: getattr(fc, name)(x, *args, **kwargs), cpu_tensor(shape, dtype))
        assert agree(meta, cpu), (call, dtype, shape, meta, cpu)
        check_torch(lambda x: tuple(getattr(torch, name)(x, *args, **kwargs)), cpu, torch.ones(shape, dtype=TH[dtype]))


# ---- linear ----

LINEAR_SHAPES = [
    ((2, 3), (4, 3), None),
    ((5, 2, 3), (4, 3), (4,)),
    ((3,), (4, 3), (4,)),
    ((2, 3), (4, 3), (2, 1, 4)),  # a bias that broadcasts the result
    ((2, 3), (4, 3), (3,)),  # a bias that does not broadcast
    ((2, 3), (4, 2), None),  # in_features mismatch
    ((2, 3), (3,), None),  # a 1-D weight
    ((), (4, 3), None),
    ((0, 3), (4, 3), (4,)),
]


@pytest.mark.parametrize(("sx", "sw", "sb"), LINEAR_SHAPES)
@pytest.mark.parametrize(("dx", "dw"), [("float32", "float32"), ("float64", "float64"), ("int64", "int64"),
                                        ("float32", "float64")])  # fmt: skip
def test_linear(sx, sw, sb, dx, dw):
    args = [cpu_tensor(sx, dx), cpu_tensor(sw, dw)] + ([] if sb is None else [cpu_tensor(sb, dx)])
    meta, cpu = meta_and_cpu(fc.linear, *args)
    assert agree(meta, cpu), (meta, cpu)
    check_torch(tf.linear, cpu, *[torch.ones(a.shape, dtype=TH[str(a.dtype).rsplit(".", 1)[-1]]) for a in args])


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_linear_checks_keep_their_messages(device):
    x, w = fc.ones(2, 3, device=device), fc.ones(4, 3, device=device)
    with pytest.raises(fc.FlambeauError, match=r"^\[linear\] weight must be 2-D \(out_features, in_features\)"):
        fc.linear(x, w[0])
    with pytest.raises(fc.FlambeauError, match=r"^\[linear\] input shape \(2, 3\) does not match weight shape"):
        fc.linear(x, w[:, :2])
    with pytest.raises(TypeError, match=r"^\[linear\] input and weight must have the same dtype, got float32 and"):
        fc.linear(x, w.to(fc.float64))
    with pytest.raises(TypeError, match=r"^\[linear\] bias must have the dtype of input and weight \(float32\)"):
        fc.linear(x, w, fc.ones(4, dtype=fc.float64, device=device))
    with pytest.raises(RuntimeError, match=r"^\[linear\] input and weight must be on the same device"):
        fc.linear(x, fc.ones(4, 3, device="cpu" if device == "meta" else "meta"))


# ---- pointwise losses and their gradients ----


def loss_calls(name):
    """(description, call of x, target, weight) for the loss `name` and its gradient."""
    extra = {"smooth_l1_loss": (1.0,), "huber_loss": (1.0,)}.get(name, ())
    binary = name.startswith("binary")
    fwd = getattr(fc, name)
    bwd = getattr(fc, f"{name}_backward")
    weights = (lambda w: (w,)) if name == "binary_cross_entropy" else (lambda w: (w, None)) if binary else None

    def forward(x, t, w, r):
        return fwd(x, t, *weights(w), r) if binary else fwd(x, t, r, *extra)

    def backward(g, x, t, w, r):
        return bwd(g, x, t, *weights(w), r) if binary else bwd(g, x, t, r, *extra)

    return forward, backward


LOSS_SHAPES = [((2, 3), (2, 3), None), ((2, 3), (3,), None), ((2, 3), (2, 3), (3,)), ((2, 3), (4,), None),
               ((2, 3), (2, 3), (4,)), ((0, 3), (0, 3), None)]  # fmt: skip


# Only the binary cross entropies take a weight.
LOSS_CASES = [(n, *shapes) for n in LOSSES for shapes in LOSS_SHAPES if shapes[2] is None or n.startswith("binary")]


@pytest.mark.parametrize(("name", "sx", "st", "sw"), LOSS_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3])
def test_pointwise_losses(name, sx, st, sw, dtype, reduction):
    forward, backward = loss_calls(name)
    x = cpu_tensor(sx, dtype) / 4 if dtype != "int64" else cpu_tensor(sx, dtype)
    t, w = cpu_tensor(st, dtype) / 4, None if sw is None else cpu_tensor(sw, "float32")
    meta, cpu = meta_and_cpu(lambda x, t, w: forward(x, t, w, reduction), x, t, w)
    assert meta == cpu, (meta, cpu)
    for g in [cpu_tensor(sx, "float32"), cpu_tensor((), "float32"), cpu_tensor((), "int64")]:
        meta, cpu = meta_and_cpu(lambda g, x, t, w: backward(g, x, t, w, reduction), g, x, t, w)
        assert meta == cpu, (meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_loss_checks_keep_their_messages(device):
    x = fc.ones(2, 3, device=device) / 2
    with pytest.raises(TypeError, match=r"^\[mse_loss\] input must be a float32 or float64 tensor, got dtype int64"):
        fc.mse_loss(x.to(fc.int64), x, 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[l1_loss\] reduction must be 0 \(none\), 1 \(mean\) or 2"):
        fc.l1_loss(x, x, 5)
    with pytest.raises(fc.FlambeauError, match=r"^\[smooth_l1_loss\] smooth_l1_loss does not support negative"):
        fc.smooth_l1_loss(x, x, 1, -1.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[huber_loss\] huber_loss does not support non-positive"):
        fc.huber_loss(x, x, 1, 0.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[binary_cross_entropy\] target shape \(3,\) must be the same"):
        fc.binary_cross_entropy(x, x[0], None, 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[mse_loss_backward\] grad_output of a reduced loss must have one"):
        fc.mse_loss_backward(x, x, x, 1)


# ---- layer_norm: one rows rule (meta::layer_norm_rows) for the cpu, CUDA and meta ----

LAYER_NORM_CASES = [
    ((2, 3, 4), [4], None),
    ((2, 3, 4), [3, 4], (3, 4)),
    ((5,), [5], (5,)),
    ((0, 4), [4], None),
    ((2, 3), [4], None),  # normalized_shape does not match
    ((2, 3), [], None),
    ((2, 3), [3], (4,)),  # a weight of the wrong shape
]


@pytest.mark.parametrize(("shape", "normalized", "wshape"), LAYER_NORM_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("wdtype", ["float32", "float64"])
def test_layer_norm(shape, normalized, wshape, dtype, wdtype):
    w = None if wshape is None else cpu_tensor(wshape, wdtype)
    meta, cpu = meta_and_cpu(lambda x, w, b: fc.native_layer_norm(x, normalized, w, b, 1e-5),
                             cpu_tensor(shape, dtype), w, w)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        theirs = torch.native_layer_norm(
            torch.ones(shape, dtype=TH[dtype]),
            normalized,
            None if w is None else torch.ones(wshape, dtype=TH[wdtype]),
            None,
            1e-5,
        )
        assert [tuple(t.shape) for t in theirs] == [s for s, _ in cpu[1:]]


# ---- convolution: one rule (conv::check_and_output_shape) for the cpu, CUDA and meta ----

# (input shape, weight shape, bias, stride, padding, dilation, transposed, output_padding, groups)
CONV_CASES = [
    ((2, 4, 7, 6), (6, 4, 3, 3), True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), False, [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
    ((2, 4, 9), (4, 3, 3), True, [2], [1], [1], True, [1], 1),
    ((1, 4, 5, 5), (4, 2, 2, 2), False, [2, 2], [0, 0], [1, 1], True, [0, 1], 2),
    ((2, 4, 2, 2), (6, 4, 3, 3), False, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # kernel too large
    ((2, 4, 7, 6), (6, 3, 3, 3), False, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # channels
    ((2, 4, 7, 6), (6, 4, 3, 3), False, [0, 1], [0, 0], [1, 1], False, [0, 0], 1),  # stride 0
    ((4, 7, 6), (6, 4, 3, 3), False, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # unbatched
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_convolution(case, dtype):
    sx, sw, has_bias, *params = case
    out_channels = sw[1] * params[-1] if params[3] else sw[0]
    b = cpu_tensor((out_channels,), dtype) if has_bias else None
    meta, cpu = meta_and_cpu(lambda x, w, b: fc.convolution(x, w, b, *params), cpu_tensor(sx, dtype),
                             cpu_tensor(sw, dtype), b)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        theirs = torch.convolution(torch.ones(sx), torch.ones(sw), None, *params)
        assert tuple(theirs.shape) == cpu[1][0]
        for grad_shape, expected in [(cpu[1][0], ("ok", (sw, dtype))), ((1, 1, 1), ("error", "FlambeauError"))]:
            meta, cpu_grad = meta_and_cpu(lambda g, x: fc._C._convolution_backward_weight(g, x, list(sw), *params),
                                          cpu_tensor(grad_shape, dtype), cpu_tensor(sx, dtype))  # fmt: skip
            assert meta == cpu_grad, (meta, cpu_grad)
            assert cpu_grad[:2] == expected, cpu_grad


def test_convolution_backward_weight_checks():
    x, g = fc.ones(2, 4, 7, 6), fc.ones(2, 6, 5, 4)
    for device in ["cpu", "meta"]:
        x, g = x.to(device), g.to(device)
        with pytest.raises(fc.FlambeauError, match=r"^\[convolution_backward_weight\] weight_size \[6, 4, 3\]"):
            fc._C._convolution_backward_weight(g, x, [6, 4, 3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        with pytest.raises(TypeError, match=r"^\[convolution_backward_weight\] grad_output type \(float64\)"):
            fc._C._convolution_backward_weight(
                g.to(fc.float64), x, [6, 4, 3, 3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1
            )
        with pytest.raises(fc.FlambeauError, match=r"expected grad_output of size \[2, 6, 5, 4\], got \[2, 6, 5, 5\]"):
            fc._C._convolution_backward_weight(g[..., :1].expand(2, 6, 5, 5), x, [6, 4, 3, 3], [1, 1], [0, 0], [1, 1],
                                           False, [0, 0], 1)  # fmt: skip


# ---- class losses (nll_loss, cross_entropy) over dim 1 of (N, C, d1, ...) ----

# (input shape, target shape, target dtype, weight shape)
CLASS_LOSS_CASES = [
    ((4, 3), (4,), "int64", None),
    ((4, 3, 2), (4, 2), "int64", (3,)),
    ((3,), (), "int64", None),
    ((4, 3), (4, 3), "float32", None),  # class probabilities (cross_entropy only)
    ((4, 3), (3,), "int64", None),  # a target of the wrong shape
    ((4, 3), (4,), "int32", None),
    ((4, 3), (4,), "int64", (4,)),  # one weight per class
    ((), (), "int64", None),
    ((0, 3), (0,), "int64", None),
]


@pytest.mark.parametrize(("sx", "st", "dt", "sw"), CLASS_LOSS_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("reduction", [0, 1, 2, 5])
def test_class_losses(sx, st, dt, sw, dtype, reduction):
    x = cpu_tensor(sx, dtype)
    t = fc.zeros(st, dtype=FC[dt]) if dt != "float32" else fc.ones(st) / 3
    w = None if sw is None else fc.ones(sw)
    ce, cpu_ce = meta_and_cpu(lambda x, t, w: fc._C._cross_entropy(x, t, w, reduction), x, t, w)
    assert ce == cpu_ce, (ce, cpu_ce)
    nll, cpu_nll = meta_and_cpu(lambda x, t, w: fc.nll_loss_nd(x, t, w, reduction), x, t, w)
    assert nll == cpu_nll, (nll, cpu_nll)
    for result in (cpu_ce, cpu_nll):  # the op ran (or raised one of its own errors)
        assert result[0] == "ok" or result[1] in ("FlambeauError", "TypeError"), result
    if cpu_ce[0] == "ok":
        loss_shape, lse_shape = cpu_ce[1][0], cpu_ce[2][0]
        lse = fc.zeros(lse_shape, dtype=FC[dtype])
        for g in [fc.ones(loss_shape, dtype=FC[dtype]), fc.ones(2, 2), fc.ones((), dtype=fc.int64)]:
            meta, cpu = meta_and_cpu(
                lambda g, x, t, lse, w: fc._C._cross_entropy_backward(g, x, t, lse, w, reduction, -100, 0.0),
                g,
                x,
                t,
                lse,
                w,
            )
            assert meta == cpu, (meta, cpu)
            if cpu_nll[0] == "ok":
                meta, cpu = meta_and_cpu(
                    lambda g, x, t, w: fc.nll_loss_nd_backward(g, x, t, w, reduction, -100), g, x, t, w
                )
                assert meta == cpu, (meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_class_loss_checks_keep_their_messages(device):
    x, t = fc.ones(4, 3, device=device), fc.zeros(4, dtype=fc.int64, device=device)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[cross_entropy\] label_smoothing must be between 0.0 and 1.0, got 1.5"
    ):
        fc._C._cross_entropy(x, t, None, 1, -100, 1.5)
    with pytest.raises(fc.FlambeauError, match=r"^\[nll_loss\] input shape \(4, 3\) needs target shape \(4,\), got"):
        fc.nll_loss_nd(x, t[:2], None, 1, -100)
    with pytest.raises(TypeError, match=r"^\[nll_loss\] target must hold int64 class indices, got dtype float32"):
        fc.nll_loss_nd(x, t.to(fc.float32), None, 1, -100)
    with pytest.raises(fc.FlambeauError, match=r"^\[cross_entropy_backward\] lse must hold 4 values of dtype float32"):
        fc._C._cross_entropy_backward(fc.ones((), device=device), x, t, fc.ones(3, device=device), None, 1, -100, 0.0)


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


# ---- indexing along a dim, cat, embedding ----
# name: (call(module, x, index, src) alike on flambeau_core and torch, x's shape, index's shape and dtype,
# src's shape and dtype ("x": x's dtype)). The indices hold 0: their values are the kernels' to check.
INDEX_CALLS = {
    "gather": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((3, 2), "int64"), None),
    "gather dim 0": (lambda m, x, i, s: m.gather(x, 0, i), (3, 4), ((5, 4), "int64"), None),
    "gather 0-d": (lambda m, x, i, s: m.gather(x, 0, i), (), ((), "int64"), None),
    "gather empty": (lambda m, x, i, s: m.gather(x, -1, i), (0, 4), ((0, 2), "int64"), None),
    "gather int32 index": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((3, 2), "int32"), None),
    "gather rank": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((3,), "int64"), None),
    "gather larger": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((4, 2), "int64"), None),
    "gather bad dim": (lambda m, x, i, s: m.gather(x, 2, i), (3, 4), ((3, 2), "int64"), None),
    "index_select": (lambda m, x, i, s: m.index_select(x, 1, i), (3, 4), ((5,), "int64"), None),
    "index_select int32": (lambda m, x, i, s: m.index_select(x, -2, i), (3, 4), ((2,), "int32"), None),
    "index_select 0-d index": (lambda m, x, i, s: m.index_select(x, 0, i), (3, 4), ((), "int64"), None),
    "index_select 2-d index": (lambda m, x, i, s: m.index_select(x, 0, i), (3, 4), ((2, 2), "int64"), None),
    "index_select float index": (lambda m, x, i, s: m.index_select(x, 0, i), (3, 4), ((2,), "float32"), None),
    "index_select bad dim": (lambda m, x, i, s: m.index_select(x, 2, i), (3, 4), ((2,), "int64"), None),
    "index_add": (lambda m, x, i, s: m.index_add(x, 0, i, s), (3, 4), ((2,), "int64"), ((2, 4), "x")),
    "index_add dim 1": (lambda m, x, i, s: m.index_add(x, 1, i, s), (3, 4), ((5,), "int32"), ((3, 5), "x")),
    "index_add bad source": (lambda m, x, i, s: m.index_add(x, 0, i, s), (3, 4), ((2,), "int64"), ((2, 3), "x")),
    "index_add source dtype": (lambda m, x, i, s: m.index_add(x, 0, i, s), (3, 4), ((2,), "int64"),
                               ((2, 4), "float64")),
    "index_add alpha overflows": (lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=2**40), (3, 4), ((2,), "int64"),
                                  ((2, 4), "x")),
    "index_add float alpha": (lambda m, x, i, s: m.index_add(x, 1, i, s, alpha=1e39), (3, 4), ((2,), "int64"),
                              ((3, 2), "x")),
    "index_copy": (lambda m, x, i, s: m.index_copy(x, 1, i, s), (3, 4), ((2,), "int64"), ((3, 2), "x")),
    "index_copy bad source": (lambda m, x, i, s: m.index_copy(x, 1, i, s), (3, 4), ((2,), "int64"), ((2, 2), "x")),
    "index_fill": (lambda m, x, i, s: m.index_fill(x, 1, i, 1), (3, 4), ((2,), "int64"), None),
    "index_fill bad index": (lambda m, x, i, s: m.index_fill(x, 1, i, 1), (3, 4), ((2,), "bool"), None),
    "scatter": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((3, 2), "int64"), ((3, 3), "x")),
    "scatter value": (lambda m, x, i, s: m.scatter(x, 0, i, 1), (3, 4), ((2, 4), "int64"), None),
    "scatter add": (lambda m, x, i, s: m.scatter(x, 1, i, s, reduce="add"), (3, 4), ((3, 2), "int64"),
                    ((3, 2), "x")),
    "scatter bad reduce": (lambda m, x, i, s: m.scatter(x, 1, i, s, reduce="max"), (3, 4), ((3, 2), "int64"),
                           ((3, 2), "x")),
    "scatter src smaller": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((3, 2), "int64"), ((3, 1), "x")),
    "scatter src dtype": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((3, 2), "int64"), ((3, 2), "bool")),
    "scatter index larger": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((4, 2), "int64"), ((4, 2), "x")),
    "scatter_add": (lambda m, x, i, s: m.scatter_add(x, 0, i, s), (3, 4), ((2, 4), "int64"), ((2, 4), "x")),
    "scatter_add int32 index": (lambda m, x, i, s: m.scatter_add(x, 0, i, s), (3, 4), ((2, 4), "int32"),
                                ((2, 4), "x")),
    "scatter_reduce amax": (lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amax"), (3, 4), ((2, 4), "int64"),
                            ((2, 4), "x")),
    "scatter_reduce mean": (lambda m, x, i, s: m.scatter_reduce(x, 1, i, s, "mean", include_self=False), (3, 4),
                            ((3, 2), "int64"), ((3, 2), "x")),
    "scatter_reduce bad": (lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "max"), (3, 4), ((2, 4), "int64"),
                           ((2, 4), "x")),
    "cat": (lambda m, x, i, s: m.cat([x, s], 0), (3, 4), None, ((2, 4), "x")),
    "cat dim 1 promotes": (lambda m, x, i, s: m.cat([x, s, x], 1), (3, 4), None, ((3, 1), "float64")),
    "cat skips 1-d empty": (lambda m, x, i, s: m.cat([s, x], -1), (3, 4), None, ((0,), "int32")),
    "cat only empty": (lambda m, x, i, s: m.cat([s, s]), (0,), None, ((0,), "x")),
    "cat sizes differ": (lambda m, x, i, s: m.cat([x, s], 0), (3, 4), None, ((2, 3), "x")),
    "cat ranks differ": (lambda m, x, i, s: m.cat([x, s], 0), (3, 4), None, ((4,), "x")),
    "cat 0-d": (lambda m, x, i, s: m.cat([x, x]), (), None, None),
    "cat bad dim": (lambda m, x, i, s: m.cat([x, x], 2), (3, 4), None, None),
    "cat empty list": (lambda m, x, i, s: m.cat([]), (3,), None, None),
    "stack": (lambda m, x, i, s: m.stack([x, s], -1), (3, 4), None, ((3, 4), "x")),
    "stack promotes": (lambda m, x, i, s: m.stack([x, s, x]), (3, 4), None, ((3, 4), "float64")),
    "stack 0-d": (lambda m, x, i, s: m.stack([x, x]), (), None, None),
    "stack empty": (lambda m, x, i, s: m.stack([x, s], 1), (0, 2), None, ((0, 2), "x")),
    "stack shapes differ": (lambda m, x, i, s: m.stack([x, s]), (3, 4), None, ((4, 3), "x")),
    "stack bad dim": (lambda m, x, i, s: m.stack([x, x], 3), (3, 4), None, None),
    "stack empty list": (lambda m, x, i, s: m.stack([]), (3,), None, None),
    "take_along_dim": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((3, 2), "int64"), None),
    "take_along_dim broadcasts": (lambda m, x, i, s: m.take_along_dim(x, i, -1), (3, 4), ((1, 5), "int64"), None),
    "take_along_dim flat": (lambda m, x, i, s: m.take_along_dim(x, i), (3, 4), ((5,), "int64"), None),
    "take_along_dim 0-d": (lambda m, x, i, s: m.take_along_dim(x, i, 0), (), ((), "int64"), None),
    "take_along_dim int32": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((3, 2), "int32"), None),
    "take_along_dim rank": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((2,), "int64"), None),
    "take_along_dim bad dim": (lambda m, x, i, s: m.take_along_dim(x, i, 2), (3, 4), ((3, 2), "int64"), None),
    "take_along_dim no broadcast": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((2, 2), "int64"),
                                    None),
    "embedding": (lambda m, x, i, s: m.embedding(x, i), (5, 3), ((2, 4), "int64"), None),
    "embedding int32": (lambda m, x, i, s: m.embedding(x, i), (5, 3), ((7,), "int32"), None),
    "embedding float indices": (lambda m, x, i, s: m.embedding(x, i), (5, 3), ((7,), "float32"), None),
    "embedding 1-d weight": (lambda m, x, i, s: m.embedding(x, i), (5,), ((7,), "int64"), None),
}  # fmt: skip


def index_inputs(module, call, dtype, device):
    """x, index, src of a call of INDEX_CALLS: x from cpu_tensor's values, index zeros, src ones."""
    _, xshape, ispec, sspec = INDEX_CALLS[call]
    if module is fc:
        x = cpu_tensor(xshape, dtype).to(device)
        make = lambda shape, dt, v: fc.full(shape, v, dtype=FC[dt], device=device)  # noqa: E731
    else:
        x = torch.empty(xshape, dtype=TH[dtype], device=device)
        make = lambda shape, dt, v: torch.full(shape, v, dtype=TH[dt], device=device)  # noqa: E731
    i = make(ispec[0], ispec[1], 0) if ispec else None
    s = make(sspec[0], dtype if sspec[1] == "x" else sspec[1], 1) if sspec else None
    return x, i, s


@pytest.mark.parametrize("call", list(INDEX_CALLS))
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64", "complex64"])
def test_indexing(call, dtype):
    fn = INDEX_CALLS[call][0]
    meta = outcome(lambda: fn(fc, *index_inputs(fc, call, dtype, "meta")))
    cpu = outcome(lambda: fn(fc, *index_inputs(fc, call, dtype, "cpu")))
    assert agree(meta, cpu), (call, dtype, meta, cpu)
    tensors = [t for t in index_inputs(torch, call, dtype, "meta") if t is not None]
    check_torch(lambda *ts: fn(torch, *index_inputs(torch, call, dtype, ts[0].device)), cpu, *tensors)


def test_embedding_dense_backward():
    g, i = fc.ones(2, 4, 3), fc.zeros(2, 4, dtype=fc.int64)
    cases = [
        (g, i, 5),
        (g.to(fc.float64), i.to(fc.int32), 1),
        (g.to(fc.float16), i, 5),
        (g.to(fc.int64), i, 5),  # an integer gradient
        (g, i.to(fc.float32), 5),  # float indices
        (g, i, -1),  # negative num_weights
        (g[0], i, 5),  # not indices' shape plus one dim
        (fc.ones(3), fc.zeros((), dtype=fc.int64), 4),
    ]
    for grad, idx, num in cases:
        call = lambda a, b, num=num: fc.embedding_dense_backward(a, b, num, -1, False)  # noqa: E731
        meta, cpu = meta_and_cpu(call, grad, idx)
        assert meta == cpu, (meta, cpu)
        theirs = torch_meta_outcome(
            lambda a, b, num=num: torch.ops.aten.embedding_dense_backward(a, b, num, -1, False),
            *[torch.empty(t.shape, dtype=getattr(torch, str(t.dtype).rsplit(".", 1)[-1]), device="meta")
              for t in (grad, idx)],
        )  # fmt: skip
        assert theirs is None or cpu[0] != "ok" or theirs == cpu, (theirs, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_indexing_checks_keep_their_messages(device):
    x = fc.ones(3, 4, device=device)
    i = fc.zeros(3, 2, dtype=fc.int64, device=device)
    with pytest.raises(IndexError, match=r"^\[gather\] dimension 2 out of range for a 2-d tensor"):
        fc.gather(x, 2, i)
    with pytest.raises(TypeError, match=r"^\[gather\] index must be an int64 or int32 tensor, got dtype float32"):
        fc.gather(x, 1, i.to(fc.float32))
    assert fc.gather(x, 1, i.to(fc.int32)).shape == (3, 2)
    with pytest.raises(fc.FlambeauError, match=r"^\[gather\] index shape \(4, 2\) is larger than self shape"):
        fc.gather(x, 1, fc.zeros(4, 2, dtype=fc.int64, device=device))
    with pytest.raises(TypeError, match=r"^\[index_select\] index must be an int64 or int32 tensor, got dtype"):
        fc.index_select(x, 0, x)
    with pytest.raises(fc.FlambeauError, match=r"^\[index_select\] index must be 0-d or 1-d, got shape \(3, 2\)"):
        fc.index_select(x, 0, i)
    with pytest.raises(
        fc.FlambeauError,
        match=r"^\[index_add\] source of shape \(3, 4\) must have the shape of self \(3, 4\) except in dimension 0",
    ):
        fc.index_add(x, 0, i[:, 0][:2], x)
    with pytest.raises(TypeError, match=r"^\[index_copy\] source dtype float64 must match self dtype float32"):
        fc.index_copy(x, 0, i[:2, 0], x[:2].to(fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"^\[index_add\] value 300 cannot be converted to type int8 without"):
        fc.index_add(x.to(fc.int8), 0, i[:2, 0], x[:2].to(fc.int8), alpha=300)
    with pytest.raises(fc.FlambeauError, match=r"^\[index_add\] value 1e\+05 cannot be converted to type float16"):
        fc.index_add(x.to(fc.float16), 0, i[:2, 0], x[:2].to(fc.float16), alpha=1e5)
    with pytest.raises(ValueError, match=r"^\[scatter\] reduce must be 'add' or 'multiply', got 'max'"):
        fc.scatter(x, 1, i, x, reduce="max")
    with pytest.raises(ValueError, match=r"^\[scatter_reduce\] reduce must be one of 'sum', 'prod', 'mean'"):
        fc.scatter_reduce(x, 1, i, x, "max")
    with pytest.raises(TypeError, match=r"^\[scatter_reduce\] reduce 'amax' and 'amin' are not supported for dtype"):
        fc.scatter_reduce(x.to(fc.complex64), 1, i, x.to(fc.complex64), "amin")
    with pytest.raises(fc.FlambeauError, match=r"^\[scatter_add\] index shape \(3, 2\) is larger than src shape"):
        fc.scatter_add(x, 1, i, x[:, :1])
    with pytest.raises(fc.FlambeauError, match=r"^\[cat\] sizes must match except in dimension 0"):
        fc.cat([x, x[:, :2]])
    with pytest.raises(fc.FlambeauError, match=r"^\[cat\] zero-dimensional tensor cannot be concatenated"):
        fc.cat([x[0, 0], x[0, 0]])
    with pytest.raises(fc.FlambeauError, match=r"^\[cat\] expected a non-empty list of tensors"):
        fc.cat([])
    with pytest.raises(fc.FlambeauError, match=r"^\[embedding\] weight must be 2-D"):
        fc.embedding(x[0], i)
    with pytest.raises(TypeError, match=r"^\[embedding\] indices must be an int64 or int32 tensor"):
        fc.embedding(x, x)
    with pytest.raises(NotImplementedError, match=r"^\[embedding\] sparse=True"):
        fc.embedding(x, i, sparse=True)
    with pytest.raises(fc.FlambeauError, match=r"^\[embedding_backward\] num_weights must be non-negative"):
        fc.embedding_dense_backward(x, i[:, 0], -1, -1, False)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_composite_checks_keep_their_messages(device):
    """kthvalue, stack, take_along_dim and std/var_mean/std_mean are composites: their own checks read only
    shapes and dtypes, so they raise on meta as on the cpu, and the ops they call (sort, cat, gather,
    var.correction) bring their rules."""
    x = fc.ones(3, 4, device=device)
    i = fc.zeros(3, 2, dtype=fc.int64, device=device)
    with pytest.raises(
        IndexError, match=r"^\[kthvalue\] k \(5\) is out of range for dim 1 of size 4 \(shape \(3, 4\)\)"
    ):
        fc.kthvalue(x, 5, 1)
    with pytest.raises(IndexError, match=r"^\[kthvalue\] dimension 2 out of range for a 2-d tensor"):
        fc.kthvalue(x, 1, 2)
    with pytest.raises(TypeError, match=r"^\[kthvalue\] is not supported for dtype uint16 \(as in PyTorch\)"):
        fc.kthvalue(x.to(fc.uint16), 1)
    with pytest.raises(
        fc.FlambeauError,
        match=r"^\[stack\] all tensors must have the same shape: tensor 0 has shape \(3, 4\) but tensor 1 has shape",
    ):
        fc.stack([x, x.t()])
    with pytest.raises(IndexError, match=r"^\[stack\] dimension -4 out of range for stacking 2-d tensors"):
        fc.stack([x, x], -4)
    with pytest.raises(fc.FlambeauError, match=r"^\[stack\] expected a non-empty list of tensors"):
        fc.stack([])
    with pytest.raises(TypeError, match=r"^\[take_along_dim\] indices must be an int64 tensor, got dtype int32"):
        fc.take_along_dim(x, i.to(fc.int32), 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[take_along_dim\] input and indices must have the same number"):
        fc.take_along_dim(x, i[0], 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[take_along_dim\] shapes \(3, 2\) and \(2, 2\) cannot be broadcast"):
        fc.take_along_dim(x, i[:2], 1)
    # std and the _mean forms raise var.correction's dtype error under their own names
    for name in ("std", "var_mean", "std_mean"):
        with pytest.raises(
            TypeError,
            match=rf"^\[{name}\] var and std only support floating point and complex dtypes, got int64 \(shape \(3, 4",
        ):
            getattr(fc, name)(x.to(fc.int64), 1)
    values, indices = fc.kthvalue(x, 2, 0, keepdim=True)
    assert values.device.type == indices.device.type == device
    assert (values.shape, values.dtype, indices.dtype) == ((1, 4), fc.float32, fc.int64)


def test_index_values_are_left_to_the_kernels():
    """An index out of range needs the index's values: the cpu kernels raise IndexError, the meta step cannot
    tell (as PyTorch's meta device) and gives the shape."""
    x = fc.ones(3, 4)
    bad = fc.full((3, 2), 7, dtype=fc.int64)
    for call in (
        lambda x, i: fc.gather(x, 1, i),
        lambda x, i: fc.index_select(x, 1, i[0]),
        lambda x, i: fc.scatter(x, 1, i, 2.0),
        lambda x, i: fc.embedding(x, i),
        lambda x, i: x[:, i],
        lambda x, i: fc.take(x, i * 2),
    ):
        meta, cpu = meta_and_cpu(call, x, bad)
        assert cpu[:2] == ("error", "IndexError") and "out of" in cpu[2], cpu
        assert meta[0] == "ok", meta


# ---- advanced indexing: x[idx, :, idx2] (op index) ----
# name: (x's shape, the index items: None for `:`, (shape, dtype) for an index tensor of zeros, or a list).
ADVANCED_INDEX = {
    "one index": ((2, 3, 4, 5), [((2,), "int64")]),
    "adjacent": ((2, 3, 4, 5), [None, ((2,), "int64"), ((2,), "int64")]),
    "adjacent, trailing whole dim": ((2, 3, 4, 5), [None, ((4,), "int64"), ((4,), "int64"), None]),
    "separated": ((2, 3, 4, 5), [((2,), "int64"), None, ((2,), "int64")]),
    "separated by two": ((2, 3, 4, 5), [((3,), "int64"), None, None, ((3,), "int32")]),
    "None gaps": ((2, 3, 4, 5), [None, None, ((3,), "int64")]),
    "broadcast": ((2, 3, 4, 5), [((2, 1), "int64"), ((1, 3), "int32")]),
    "broadcast separated": ((2, 3, 4, 5), [((4, 1, 2), "int64"), None, ((3, 1), "int64")]),
    "int32": ((3, 4), [None, ((6,), "int32")]),
    "2-d index": ((3, 4), [((2, 5), "int64")]),
    "list": ((3, 4), [[0, 2], [1]]),
    "empty index": ((2, 3, 4, 5), [((0,), "int64")]),
    "empty broadcast": ((2, 3, 4, 5), [None, ((0, 1), "int64"), ((1, 3), "int64")]),
    "empty self": ((0, 3), [None, ((2,), "int64")]),
    "mask": ((3, 4), [((3,), "bool")]),
    "mask and index": ((3, 4, 2), [((3, 4), "uint8"), ((1,), "int64")]),
    "float index": ((3, 4), [((2,), "float32")]),
    "int16 index": ((3, 4), [None, ((2,), "int16")]),
    "no broadcast": ((3, 4), [((2,), "int64"), ((3,), "int64")]),
    "mask of the wrong shape": ((3, 4), [None, ((3,), "bool")]),
    "too many": ((3, 4), [((1,), "int64")] * 3),
}  # fmt: skip


def advanced_index(module, name, device):
    """x and the index tuple of an ADVANCED_INDEX case on `device`, in flambeau_core or torch."""
    shape, items = ADVANCED_INDEX[name]
    x = (cpu_tensor(shape, "float32") if module is fc else torch.ones(shape)).to(device)
    index = tuple(
        slice(None)
        if it is None
        else it
        if isinstance(it, list)
        else module.zeros(it[0], dtype=getattr(module, it[1])).to(device)
        for it in items
    )
    return x, index


def torch_index_outcome(name):
    """PyTorch's cpu answer (and its meta one where it has one): shape and dtype, or the error's type."""
    x, index = advanced_index(torch, name, "cpu")
    try:
        r = x[index]
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__)
    cpu = ("ok", (tuple(r.shape), "float32"))
    if not any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in index):
        xm, im = advanced_index(torch, name, "meta")
        r = xm[im]
        assert ("ok", (tuple(r.shape), "float32")) == cpu, name
    return cpu


@pytest.mark.parametrize("name", list(ADVANCED_INDEX))
def test_advanced_indexing(name):
    """x[index] on meta tensors: the cpu's shape and dtype, or its error word for word (PyTorch's type)."""
    meta = outcome(lambda: (lambda x, i: x[i])(*advanced_index(fc, name, "meta")))
    cpu = outcome(lambda: (lambda x, i: x[i])(*advanced_index(fc, name, "cpu")))
    theirs = torch_index_outcome(name)
    assert cpu[:2] == theirs[:2], (name, cpu, theirs)
    masks = [it for it in ADVANCED_INDEX[name][1] if isinstance(it, tuple) and it[1] in ("bool", "uint8")]
    if masks and cpu[0] == "ok":
        assert meta[:2] == ("error", "NotImplementedError"), meta
        assert "mask" in meta[2] and "'meta'" in meta[2], meta
    else:
        assert meta == cpu, (name, meta, cpu)
    if cpu[0] == "error" and name != "too many":  # too many: getitem's own check, before the op
        assert cpu[2].startswith("[index] "), cpu


@pytest.mark.parametrize("dtype", DTYPES)
def test_advanced_indexing_keeps_the_dtype(dtype):
    x, i = cpu_tensor((3, 4, 5), dtype), fc.zeros(2, 1, dtype=fc.int64)
    meta, cpu = meta_and_cpu(lambda x, i: x[i, :, None, i.view(2)], x, i)
    theirs = torch.empty(3, 4, 5, device="meta")[torch.zeros(2, 1, dtype=torch.long), :, None, torch.zeros(2).long()]
    assert meta == cpu == ("ok", (tuple(theirs.shape), dtype)), (meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_advanced_indexing_checks_keep_their_messages(device):
    x = fc.ones(3, 4, device=device)
    i = fc.zeros(2, dtype=fc.int64, device=device)
    with pytest.raises(IndexError, match=r"^\[index\] tensors used as indices must be int64, int32, bool or uint8 "
                       r"tensors, got float64 for index 1$"):  # fmt: skip
        x[i, i.to(fc.float64)]
    with pytest.raises(
        IndexError, match=r"^\[index\] shape mismatch: indexing tensors could not be broadcast together with shapes "
        r"\(2,\), \(3,\)$"
    ):  # fmt: skip
        x[i, fc.zeros(3, dtype=fc.int32, device=device)]
    with pytest.raises(IndexError, match=r"^\[index\] the shape \(2,\) of the mask at index 0 does not match"):
        x[fc.ones(2, dtype=fc.bool, device=device)]
    other = "cpu" if device == "meta" else "meta"
    with pytest.raises(RuntimeError, match=rf"^\[index\] index 0 is on {other} but self is on {device}$"):
        fc.take(x, fc.zeros(2, dtype=fc.int64, device=other))
    # the result of an index shape too large to count raises under the op's name, without allocating
    with pytest.raises(RuntimeError, match=r"^\[index\] shape \(4611686018427387904,.* is too large"):
        x[i[:1].expand(2**62)]


def test_advanced_indexing_on_meta_reads_no_values():
    """A mask's result shape is its count of true elements, which a meta tensor has not: NotImplementedError, as
    PyTorch's meta device (masked_select too). A 0-d bool or integer index tensor is read as a Python bool or int
    (as PyTorch does), so a meta one cannot be read either; a 0-d cpu one goes with a meta self."""
    x = fc.ones(2, 3, 4, device="meta")
    i = fc.zeros(2, dtype=fc.int64, device="meta")
    with pytest.raises(NotImplementedError, match=r"^\[index\] indexing with a bool mask of shape \(2, 3\) .*'meta'"):
        x[fc.ones(2, 3, dtype=fc.bool, device="meta")]
    with pytest.raises(NotImplementedError, match=r"^\[index\] indexing with a bool mask"):
        fc.masked_select(x, fc.ones(4, dtype=fc.bool, device="meta"))
    for zero_d in (fc.tensor(True), fc.tensor(1)):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            x[zero_d.to("meta"), i]
    assert outcome(lambda: x[fc.tensor(1), i]) == ("ok", ((2, 4), "float32"))
    # a cpu bool is read: True is a new dim of size 1, indexed by [0] (the cpu's and PyTorch's cpu's shape)
    assert outcome(lambda: x[fc.tensor(True), :, i]) == ("ok", ((2, 2, 4), "float32"))
    assert tuple(torch.ones(2, 3, 4)[torch.tensor(True), :, torch.zeros(2, dtype=torch.long)].shape) == (2, 2, 4)


@pytest.mark.parametrize(("xshape", "ishape"), [((3, 4), (2, 5)), ((3, 4), ()), ((0,), (0, 2)), ((), (3,))])
def test_take_on_meta(xshape, ishape):
    """take is a composite over index: it runs on meta tensors with index's rule."""
    x, i = cpu_tensor(xshape, "float64"), fc.zeros(ishape, dtype=fc.int64)
    meta, cpu = meta_and_cpu(fc.take, x, i)
    theirs = torch_meta_outcome(
        torch.take, torch.ones(xshape, dtype=torch.float64), torch.zeros(ishape, dtype=torch.long)
    )
    assert meta == cpu == theirs, (meta, cpu, theirs)


# x[index] = values: index_put_'s rule (its check step runs on every device; meta computes nothing).
INDEX_PUT = {
    "rows": ((4, 3), [((2,), "int64")], (3,), "float32"),
    "rows, values per row": ((4, 3), [((2,), "int64")], (2, 3), "float32"),
    "two dims": ((4, 3), [((2,), "int64"), ((2,), "int32")], (), "float32"),
    "after a slice": ((4, 3, 2), [None, ((5,), "int64")], (5, 2), "float32"),
    "a mask": ((4, 3), [((4,), "bool")], (3,), "float32"),
    "values too wide": ((4, 3), [((2,), "int64")], (4,), "float32"),
    "values of another dtype": ((4, 3), [((2,), "int64")], (3,), "float64"),
    "float index": ((4, 3), [((2,), "float32")], (3,), "float32"),
    "too many": ((4, 3), [((1,), "int64")] * 3, (), "float32"),
}  # fmt: skip


def index_put_args(module, name, device):
    shape, items, vshape, vdtype = INDEX_PUT[name]
    x = module.zeros(shape, device=device)
    index = [None if it is None else module.zeros(it[0], dtype=getattr(module, it[1]), device=device) for it in items]
    values = module.ones(vshape, dtype=getattr(module, vdtype), device=device)
    return x, index, values


@pytest.mark.parametrize("name", list(INDEX_PUT))
def test_index_put_on_meta(name):
    """index_put_ on meta tensors: the cpu's outcome (self back, or the error word for word), and PyTorch's."""

    def put(module, device):
        x, index, values = index_put_args(module, name, device)
        if module is fc:
            return fc._C.index_put_(x, index, values)
        x[tuple(slice(None) if i is None else i for i in index)] = values
        return x

    meta, cpu = outcome(lambda: put(fc, "meta")), outcome(lambda: put(fc, "cpu"))
    assert meta == cpu, (name, meta, cpu)
    theirs = outcome(lambda: put(torch, "cpu"))
    # FlambeauError is a RuntimeError; a dtype error is a TypeError here, a RuntimeError in PyTorch
    same_kind = {("FlambeauError", "RuntimeError"), ("TypeError", "RuntimeError")}
    assert cpu[:2] == theirs[:2] or (cpu[1], theirs[1]) in same_kind, (name, cpu, theirs)
    if cpu[0] == "error" and name != "float index":
        assert cpu[2].startswith("[index_put_] "), cpu


def test_put_runs_on_meta():
    """put is a composite over index_put_: it runs on meta tensors with index_put_'s rule (PyTorch's too)."""
    x, i, v = fc.zeros(5, 2), fc.tensor([1, 3]), fc.ones(2)
    meta, cpu = meta_and_cpu(fc.put, x, i, v)
    theirs = torch_meta_outcome(torch.put, torch.zeros(5, 2), torch.tensor([1, 3]), torch.ones(2))
    assert meta == cpu == theirs == ("ok", ((5, 2), "float32")), (meta, cpu, theirs)


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


# ---- batch_norm, layer_norm's backward, group_norm (the norm kernels' checks, one per family) ----

# (input shape, parameter shape, dtype, training)
BATCH_NORM_CASES = [
    ((4, 3, 5), (3,), "float32", True),
    ((4, 3), (3,), "float64", False),
    ((0, 2, 3), (2,), "float32", True),
    ((4, 3, 5), (4,), "float32", True),  # parameters of the wrong shape
    ((3,), (3,), "float32", True),  # no channel dim
    ((4, 3), (3,), "int64", True),
]
MASKS = [(True, True, True), (True, False, False), (False, True, True)]


def torch_meta(shape, dtype):
    return None if shape is None else torch.empty(shape, dtype=TH[dtype], device="meta")


def shapes_of(results) -> list:
    return [None if t is None else tuple(t.shape) for t in results]


def asked_shapes(results, mask) -> list:
    """The shapes of the gradients a norm's backward was asked for (PyTorch's meta functions give all three)."""
    return [tuple(t.shape) if t is not None and asked else None for t, asked in zip(results, mask, strict=True)]


@pytest.mark.parametrize(("shape", "pshape", "dtype", "training"), BATCH_NORM_CASES)
def test_batch_norm(shape, pshape, dtype, training):
    w = cpu_tensor(pshape, dtype)
    rm, rv = cpu_tensor(pshape, dtype), cpu_tensor(pshape, dtype)
    meta, cpu = meta_and_cpu(lambda x, w, rm, rv: fc.native_batch_norm(x, w, w, rm, rv, training, 0.1, 1e-5),
                             cpu_tensor(shape, dtype), w, rm, rv)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok" and training:  # PyTorch's cpu gives empty saved statistics in evaluation mode
        m = [torch_meta(s, dtype) for s in (shape, pshape, pshape, pshape)]
        theirs = torch.native_batch_norm(m[0], m[1], m[1], m[2], m[3], training, 0.1, 1e-5)
        assert shapes_of(theirs) == [s for s, _ in cpu[1:]]
    for mask in MASKS:

        def call(g, x, w, m, i):
            return _C._native_batch_norm_backward(g, x, w, m, i, training, *mask)  # noqa: B023

        meta, cpu_grad = meta_and_cpu(call, cpu_tensor(shape, dtype), cpu_tensor(shape, dtype), w, rm, rv)
        assert meta == cpu_grad, (meta, cpu_grad)
        assert (cpu_grad[0] == "ok") == (cpu[0] == "ok"), (cpu, cpu_grad)
        if cpu_grad[0] == "ok" and 0 not in shape:  # PyTorch's meta function divides by the count
            m = [torch_meta(s, dtype) for s in (shape, pshape)]
            theirs = torch.ops.aten.native_batch_norm_backward(m[0], m[0], m[1], m[1], m[1], m[1], m[1], training,
                                                               1e-5, list(mask))  # fmt: skip
            assert asked_shapes(theirs, mask) == [None if r is None else r[0] for r in cpu_grad[1:]]


@pytest.mark.parametrize("param_dtype", ["float32", "bfloat16", None])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_mixed_precision_dtypes(param_dtype, training):
    # Note [Batch norm's mixed precision]: the meta step's dtypes are the cpu kernel's and PyTorch's.
    x = fc.ones(4, 3, 2).to(fc.bfloat16)
    p = None if param_dtype is None else fc.ones(3).to(FC.get(param_dtype, fc.bfloat16))
    stats = fc.ones(3).to(fc.bfloat16 if param_dtype == "bfloat16" else fc.float32)
    meta, cpu = meta_and_cpu(lambda x, p, s: fc.native_batch_norm(x, p, p, s, s, training, 0.1, 1e-5), x, p, stats)
    assert meta == cpu, (meta, cpu)
    saved = "bfloat16" if param_dtype == "bfloat16" else "float32"
    assert [r[1] for r in cpu[1:]] == ["bfloat16", saved, saved]
    t = torch.ones(4, 3, 2, dtype=torch.bfloat16)
    tp = None if param_dtype is None else torch.ones(3, dtype=getattr(torch, param_dtype))
    ts = torch.ones(3, dtype=getattr(torch, saved))
    assert [str(r.dtype) for r in torch.native_batch_norm(t, tp, tp, ts, ts, training, 0.1, 1e-5)] == [
        "torch.bfloat16",
        f"torch.{saved}",
        f"torch.{saved}",
    ]
    out = fc.native_batch_norm(x, p, p, stats.clone(), stats.clone(), True, 0.1, 1e-5)
    meta, cpu = meta_and_cpu(
        lambda g, x, p, m, i: _C._native_batch_norm_backward(g, x, p, m, i, training, True, True, True),
        x, x, p if p is not None else stats, out[1], out[2],
    )  # fmt: skip
    assert meta == cpu, (meta, cpu)
    assert [r[1] for r in cpu[1:]] == ["bfloat16", saved, saved]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_batch_norm_checks_keep_their_messages(device):
    x, c = fc.ones(4, 3, device=device), fc.ones(3, device=device)
    with pytest.raises(fc.FlambeauError, match=r"^\[batch_norm\] running_mean and running_var must be given"):
        fc.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(fc.FlambeauError, match=r"^\[batch_norm\] eps must be non-negative, got -1"):
        fc.native_batch_norm(x, None, None, None, None, True, 0.1, -1.0)
    with pytest.raises(
        TypeError, match=r"^\[batch_norm\] running_var must have the input's dtype float32, got float64"
    ):
        fc.native_batch_norm(x, None, None, c, c.to(fc.float64), True, 0.1, 1e-5)
    with pytest.raises(fc.FlambeauError, match=r"^\[batch_norm_backward\] grad_out shape \(3,\) does not match input"):
        _C._native_batch_norm_backward(c, x, None, c, c, True, True, True, True)
    with pytest.raises(
        TypeError, match=r"^\[batch_norm_backward\] input must be a float16, bfloat16, float32 or float64 tensor"
    ):
        _C._native_batch_norm_backward(x, x.to(fc.int64), None, c, c, True, True, True, True)
    with pytest.raises(TypeError, match=r"^\[batch_norm\] running_var must be float32 as the other parameters"):
        fc.native_batch_norm(x.to(fc.bfloat16), c, None, c, c.to(fc.bfloat16), True, 0.1, 1e-5)


# (input shape, normalized_shape, mean/rstd shape)
LAYER_NORM_BACKWARD_CASES = [
    ((2, 3, 4), [4], (2, 3, 1)),
    ((2, 3, 4), [3, 4], (2, 1, 1)),
    ((0, 4), [4], (0, 1)),
    ((2, 3, 4), [4], (2, 3)),  # mean and rstd of the wrong size
    ((2, 3), [4], (2, 1)),  # normalized_shape does not match
]


@pytest.mark.parametrize(("shape", "normalized", "sshape"), LAYER_NORM_BACKWARD_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("mask", MASKS)
def test_layer_norm_backward(shape, normalized, sshape, dtype, mask):
    w = cpu_tensor(normalized, dtype if dtype != "int64" else "float32")

    def call(g, x, m, r, w):
        return _C._native_layer_norm_backward(g, x, normalized, m, r, w, *mask)

    args = cpu_tensor(shape, dtype), cpu_tensor(shape, dtype), cpu_tensor(sshape, dtype), cpu_tensor(sshape, dtype), w
    meta, cpu = meta_and_cpu(call, *args)
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        m = [torch_meta(s, dtype) for s in (shape, sshape, normalized)]
        theirs = torch.ops.aten.native_layer_norm_backward(m[0], m[0], normalized, m[1], m[1], m[2], m[2], list(mask))
        assert asked_shapes(theirs, mask) == [None if r is None else r[0] for r in cpu[1:]]


def test_layer_norm_backward_checks_keep_their_messages():
    for device in ["cpu", "meta"]:
        x, s = fc.ones(2, 3, device=device), fc.ones(2, 1, device=device)
        with pytest.raises(fc.FlambeauError, match=r"^\[layer_norm_backward\] mean and rstd must hold 2 values, got"):
            _C._native_layer_norm_backward(x, x, [3], x, x, None, True, True, True)
        with pytest.raises(TypeError, match=r"^\[layer_norm_backward\] grad_out dtype float64 does not match input"):
            _C._native_layer_norm_backward(x.to(fc.float64), x, [3], s, s, None, True, True, True)


# (input shape, N, C, HxW, group)
GROUP_NORM_CASES = [
    ((2, 6, 5), 2, 6, 5, 3),
    ((2, 4, 2, 3), 2, 4, 6, 1),
    ((0, 4, 3), 0, 4, 3, 2),
    ((2, 6, 5), 2, 6, 5, 4),  # channels not divisible by group
    ((2, 6, 5), 2, 6, 4, 3),  # N, C, HxW do not describe the input
    ((2, 6, 5), 2, 6, 5, 0),
]


@pytest.mark.parametrize(("shape", "n", "c", "hxw", "group"), GROUP_NORM_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_group_norm(shape, n, c, hxw, group, dtype):
    w = cpu_tensor((c,), dtype)
    meta, cpu = meta_and_cpu(lambda x, w: fc.native_group_norm(x, w, w, n, c, hxw, group, 1e-5),
                             cpu_tensor(shape, dtype), w)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        x = torch_meta(shape, dtype)
        theirs = torch.native_group_norm(x, torch_meta((c,), dtype), None, n, c, hxw, group, 1e-5)
        assert shapes_of(theirs) == [s for s, _ in cpu[1:]]
    for mask in MASKS:

        def call(g, x, m, r, w):
            return _C._native_group_norm_backward(g, x, m, r, w, n, c, hxw, group, *mask)  # noqa: B023

        stats = cpu_tensor((n, max(group, 1)), dtype)
        meta, cpu_grad = meta_and_cpu(call, cpu_tensor(shape, dtype), cpu_tensor(shape, dtype), stats, stats, w)
        assert meta == cpu_grad, (meta, cpu_grad)
        assert (cpu_grad[0] == "ok") == (cpu[0] == "ok"), (cpu, cpu_grad)
        if cpu_grad[0] == "ok":
            x, s = torch_meta(shape, dtype), torch_meta((n, group), dtype)
            theirs = torch.ops.aten.native_group_norm_backward(x, x, s, s, torch_meta((c,), dtype), n, c, hxw, group,
                                                               list(mask))  # fmt: skip
            assert asked_shapes(theirs, mask) == [None if r is None else r[0] for r in cpu_grad[1:]]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_group_norm_and_reduction_checks_keep_their_messages(device):
    x = fc.ones(2, 6, 5, device=device)
    with pytest.raises(fc.FlambeauError, match=r"^\[group_norm\] Expected number of channels in input to be divisible"):
        fc.native_group_norm(x, None, None, 2, 6, 5, 4, 1e-5)
    with pytest.raises(fc.FlambeauError, match=r"^\[group_norm_backward\] mean and rstd must hold 6 values"):
        _C._native_group_norm_backward(x, x, x, x, None, 2, 6, 5, 3, True, True, True)
    with pytest.raises(
        TypeError, match=r"^\[var\] var and std only support floating point and complex dtypes, got int64"
    ):
        fc.var(x.to(fc.int64), 1)
    with pytest.raises(IndexError, match=r"^\[mode\] Expected reduction dim 1 to have non-zero size"):
        fc.mode(x[:, :0], 1)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[div\] expected rounding_mode to be one of None, 'trunc', or 'floor'"
    ):
        fc.div(x, x, rounding_mode="half")


# ---- softmax rows (the _softmax/_log_softmax kernels and their backwards) ----


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "float16", "float32", "float64"])
def test_softmax(name, dtype):
    for shape, dim in [((3, 4), 1), ((3, 4), -2), ((), 0), ((0, 2), 0), ((3, 4), 2)]:
        meta, cpu = meta_and_cpu(lambda x: getattr(_C, name)(x, dim), cpu_tensor(shape, dtype))  # noqa: B023
        assert meta == cpu, (name, dtype, shape, dim, meta, cpu)
        check_torch(lambda x: getattr(torch, name)(x, dim, False), cpu, torch.empty(shape, dtype=TH[dtype]))  # noqa: B023
    if dtype == "int64":
        assert cpu[0] == "error" and cpu[2].startswith(f"[{name[1:]}] needs a floating point tensor, got dtype int64")


@pytest.mark.parametrize("name", ["_softmax_backward_data", "_log_softmax_backward_data"])
@pytest.mark.parametrize(("dg", "dy"), [("float32", "float32"), ("float64", "float64"), ("float32", "float64"),
                                        ("int64", "int64")])  # fmt: skip
def test_softmax_backward(name, dg, dy):
    for sg, sy, dim in [((3, 4), (3, 4), 1), ((3, 4), (3, 4), -1), ((3,), (3, 4), 0), ((3, 4), (3, 4), 3)]:
        meta, cpu = meta_and_cpu(lambda g, y: getattr(_C, name)(g, y, dim), cpu_tensor(sg, dg), cpu_tensor(sy, dy))  # noqa: B023
        assert meta == cpu, (name, dg, dy, sg, sy, meta, cpu)
        if cpu[0] == "ok":
            theirs = getattr(torch, name)(torch.empty(sg, dtype=TH[dg], device="meta"),
                                          torch.empty(sy, dtype=TH[dy], device="meta"), dim, TH[dy])  # fmt: skip
            assert ("ok", (tuple(theirs.shape), str(theirs.dtype)[6:])) == cpu
