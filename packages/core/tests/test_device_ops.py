"""Core ops on every device (flambeau_core.testing.devices: cpu, sim, cuda).

Each case is one op family's call written once; it runs on the device under
test and on the cpu, and the results must agree in device, shape, dtype and
value. Families: elementwise (unary, binary with broadcasting and type
promotion, comparisons, in place), reductions, indexing, shape ops, creation.
"""

import flambeau_core as fc
import numpy as np
import pytest
from flambeau_core.testing import assert_close_on, devices

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 5))
B = RNG.standard_normal((5,))
C = RNG.standard_normal((3, 4, 5))
POS = np.abs(RNG.standard_normal((4, 5))) + 0.1
IDX = np.array([[0, 2, 1, 4, 3], [1, 1, 0, 0, 2], [3, 0, 4, 2, 1], [4, 3, 2, 1, 0]])


def _inputs(device, dtype=fc.float32):
    t = {
        "a": fc.tensor(A.tolist(), dtype=dtype),
        "b": fc.tensor(B.tolist(), dtype=dtype),
        "c": fc.tensor(C.tolist(), dtype=dtype),
        "pos": fc.tensor(POS.tolist(), dtype=dtype),
        "i": fc.arange(5),
        "idx": fc.tensor(IDX.tolist()),
        "mask": fc.tensor((A > 0).tolist()),
    }
    return {k: v.to(device) for k, v in t.items()}


def _inplace(fn):
    def run(t):
        x = t["a"].clone()
        r = fn(x, t)
        assert r is x
        return x

    return run


ELEMENTWISE = {
    "neg": lambda t: -t["a"],
    "exp": lambda t: t["a"].exp(),
    "log": lambda t: t["pos"].log(),
    "sqrt": lambda t: t["pos"].sqrt(),
    "abs": lambda t: t["a"].abs(),
    "sigmoid": lambda t: t["a"].sigmoid(),
    "tanh": lambda t: t["a"].tanh(),
    "sin_cos": lambda t: t["a"].sin() + t["a"].cos(),
    "relu": lambda t: t["a"].relu(),
    "floor_round": lambda t: (t["a"] * 3).floor() + (t["a"] * 3).round(),
    "add_broadcast": lambda t: t["a"] + t["b"],
    "sub_alpha": lambda t: fc.sub(t["a"], t["b"], alpha=2),
    "mul_3d": lambda t: t["c"] * t["b"],
    "div": lambda t: t["a"] / t["pos"],
    "pow_scalar": lambda t: t["pos"] ** 1.5,
    "pow_tensor": lambda t: fc.pow(t["pos"], t["a"]),
    "scalar_ops": lambda t: 2 - t["a"] * 0.5 + 1,
    "int_float_promotion": lambda t: t["i"] + t["b"],
    "int_div_true": lambda t: t["i"] / 2,
    "int_floor_divide": lambda t: t["i"] // 2,
    "int_remainder": lambda t: t["i"] % 3,
    "float64_promotion": lambda t: t["a"] + t["b"].double(),
    "maximum": lambda t: fc.maximum(t["a"], t["b"]),
    "atan2": lambda t: fc.atan2(t["a"], t["pos"]),
    "compare": lambda t: t["a"] > t["b"],
    "compare_scalar": lambda t: t["a"] <= 0.1,
    "eq_int": lambda t: t["i"] == 3,
    "logical": lambda t: (t["a"] > 0) & (t["b"] < 0) | ~(t["a"] > 1),
    "where": lambda t: fc.where(t["mask"], t["a"], t["b"]),
    "clamp": lambda t: t["a"].clamp(-0.5, 0.5),
    "lerp": lambda t: fc.lerp(t["a"], t["pos"], 0.3),
    "isnan": lambda t: (t["a"] / 0).isnan(),
    "non_contiguous": lambda t: t["a"].t().exp() + t["b"][:, None],
    "add_": _inplace(lambda x, t: x.add_(t["b"], alpha=3)),
    "mul_": _inplace(lambda x, t: x.mul_(2)),
    "clamp_": _inplace(lambda x, t: x.clamp_(min=0)),
    "fill_": _inplace(lambda x, t: x.fill_(1.5)),
    "zero_": _inplace(lambda x, t: x.zero_()),
    "masked_fill_": _inplace(lambda x, t: x.masked_fill_(t["mask"], -1.0)),
    "relu_view": _inplace(lambda x, t: (x[1:3].relu_(), x)[1]),
}

REDUCTIONS = {
    "sum_all": lambda t: t["a"].sum(),
    "sum_dim": lambda t: t["c"].sum(dim=1),
    "sum_dims_keepdim": lambda t: t["c"].sum(dim=(0, 2), keepdim=True),
    "sum_int": lambda t: t["i"].sum(),
    "sum_dtype": lambda t: t["a"].sum(0, dtype=fc.float64),
    "mean": lambda t: t["c"].mean(dim=-1),
    "prod": lambda t: t["pos"].prod(),
    "amax_amin": lambda t: t["c"].amax(dim=1) - t["c"].amin(dim=1),
    "max_dim": lambda t: tuple(t["c"].max(dim=2)),
    "min_all": lambda t: t["a"].min(),
    "argmax": lambda t: t["c"].argmax(dim=0),
    "var_std": lambda t: (t["a"].var(), t["a"].std(dim=1)),
    "logsumexp": lambda t: t["c"].logsumexp(dim=2),
    "cumsum": lambda t: t["a"].cumsum(1),
    "any_all": lambda t: ((t["a"] > 1).any(), (t["a"] > -5).all()),
    "norm": lambda t: t["a"].norm(),
    "softmax": lambda t: fc.softmax(t["c"], 1),
    "log_softmax": lambda t: fc.log_softmax(t["c"], -1),
}

INDEXING = {
    "getitem_int_slice": lambda t: t["c"][1, 1:3],
    "getitem_step": lambda t: t["a"][::2, 1::2],
    "getitem_tensor": lambda t: t["a"][t["i"][:3]],
    "getitem_mask": lambda t: t["a"][t["mask"]],
    "getitem_none_ellipsis": lambda t: t["c"][..., None, 0],
    "index_select": lambda t: t["a"].index_select(1, t["i"][1:4]),
    "gather": lambda t: t["a"].gather(1, t["idx"]),
    "scatter": lambda t: fc.zeros(4, 5, device=t["a"].device).scatter(1, t["idx"], t["a"]),
    "scatter_add": lambda t: fc.zeros(4, 5, device=t["a"].device).scatter_add(1, t["idx"], t["a"]),
    "masked_select": lambda t: t["a"].masked_select(t["mask"]),
    "nonzero": lambda t: t["mask"].nonzero(),
    "take_along_dim": lambda t: fc.take_along_dim(t["a"], t["idx"], dim=1),
    "setitem_scalar": _inplace(lambda x, t: (x.__setitem__((slice(None), 1), 7.0), x)[1]),
    "setitem_tensor": _inplace(lambda x, t: (x.__setitem__(t["mask"], 0.0), x)[1]),
    "index_put_": _inplace(lambda x, t: x.index_put_((t["i"][:2],), fc.ones(5, device=x.device), accumulate=True)),
    "index_add_": _inplace(lambda x, t: x.index_add_(0, t["i"][:2], t["a"][:2])),
    "sort": lambda t: tuple(t["a"].sort(dim=1)),
    "topk": lambda t: tuple(t["a"].topk(2, dim=1)),
}

SHAPES = {
    "reshape": lambda t: t["c"].reshape(5, 12),
    "view": lambda t: t["c"].view(-1, 5),
    "permute_contiguous": lambda t: t["c"].permute(2, 0, 1).contiguous(),
    "transpose": lambda t: t["c"].transpose(0, 2) * 1,
    "cat": lambda t: fc.cat([t["a"], t["a"] * 2], dim=0),
    "stack": lambda t: fc.stack([t["a"], t["pos"]], dim=1),
    "split": lambda t: tuple(t["c"].split(2, dim=2)),
    "chunk": lambda t: tuple(t["a"].chunk(2)),
    "squeeze_unsqueeze": lambda t: t["a"].unsqueeze(0).unsqueeze(-1).squeeze(0),
    "flatten": lambda t: t["c"].flatten(1),
    "flip": lambda t: t["c"].flip(0, 2),
    "roll": lambda t: t["a"].roll(2, 1),
    "expand": lambda t: t["b"].expand(3, 5) + 0,
    "repeat": lambda t: t["b"].repeat(2, 3),
    "narrow": lambda t: t["a"].narrow(1, 1, 3),
    "tril": lambda t: t["a"].tril(),
    "pad": lambda t: fc.constant_pad_nd(t["a"], [1, 2]) if hasattr(fc, "constant_pad_nd") else t["a"],
    "to_dtype": lambda t: t["a"].to(fc.float64),
    "to_int": lambda t: (t["a"] * 10).to(fc.int32),
}

CREATION = {
    "zeros": lambda d: fc.zeros(2, 3, device=d),
    "ones_int": lambda d: fc.ones(4, dtype=fc.int64, device=d),
    "full": lambda d: fc.full((2, 2), 3.5, device=d),
    "arange": lambda d: fc.arange(2, 11, 3, device=d),
    "linspace": lambda d: fc.linspace(0, 1, 7, device=d),
    "eye": lambda d: fc.eye(3, 4, device=d),
    "empty_fill": lambda d: fc.empty(3, device=d).fill_(2.0),
    "tensor": lambda d: fc.tensor([[1, 2], [3, 4]], device=d),
    "like": lambda d: fc.zeros_like(fc.ones(2, 3, device=d)) + fc.ones_like(fc.ones(2, 3, device=d)),
    "full_like": lambda d: fc.full_like(fc.ones(2, 3, device=d), 4.0),
}


def _case(table, name, device):
    fn = table[name]
    assert_close_on(device, fn(_inputs(device)), fn(_inputs("cpu")), rtol=1e-5, atol=1e-6)


@devices
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_on_device(device, name):
    _case(ELEMENTWISE, name, device)


@devices
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_on_device(device, name):
    _case(REDUCTIONS, name, device)


@devices
@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_on_device(device, name):
    _case(INDEXING, name, device)


@devices
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_op_on_device(device, name):
    _case(SHAPES, name, device)


@devices
@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_on_device(device, name):
    assert_close_on(device, CREATION[name](device), CREATION[name]("cpu"))


@devices
def test_float64_on_device(device):
    fn = lambda t: (t["a"] @ t["a"].t()).exp().sum(dim=1) + t["b"].sum()  # noqa: E731
    assert_close_on(device, fn(_inputs(device, fc.float64)), fn(_inputs("cpu", fc.float64)), rtol=1e-12)


@devices
def test_views_share_the_device_storage(device):
    x = fc.zeros(3, 4, device=device)
    v = x[1]
    v.fill_(2.0)
    x.t()[0].add_(1.0)
    assert v.device == x.device and x.t().device == x.device
    expected = fc.zeros(3, 4)
    expected[1] = 2.0
    expected[:, 0] += 1.0
    assert_close_on(device, x, expected)


@devices(types=("sim", "cuda"))
def test_mixing_devices_names_both(device):
    x = fc.ones(3, device=device)
    name = str(x.device)
    with pytest.raises(RuntimeError, match=rf"\[add\] expected all tensors to be on the same device.*{name} and cpu"):
        x + fc.ones(3)
    with pytest.raises(RuntimeError, match=rf"same device.*(cpu and {name}|{name} and cpu)"):
        fc.ones(3).mul(x)
    with pytest.raises(RuntimeError, match=r"same device"):
        fc.cat([x, fc.ones(3)])
    with pytest.raises(RuntimeError, match=r"same device"):
        x.index_select(0, fc.tensor([0]))
    assert_close_on(device, x + fc.tensor(2.0), fc.full((3,), 3.0))  # a cpu scalar goes with any device
