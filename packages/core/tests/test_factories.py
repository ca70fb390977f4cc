"""Factories: tensor(), zeros/ones/empty/full(+_like), arange, rand/randn and the random fills."""

import math
import subprocess
import sys

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy

pytestmark = pytest.mark.on_devices


# ---- tensor(data) ----


@pytest.mark.parametrize(
    "data, dtype, shape",
    [
        (3, fc.int64, ()),
        (3.5, fc.float32, ()),
        (True, fc.bool, ()),
        ([1, 2, 3], fc.int64, (3,)),
        ([1, 2.5], fc.float32, (2,)),
        ([True, 2], fc.int64, (2,)),
        ([[True], [False]], fc.bool, (2, 1)),
        (((1, 2), (3, 4)), fc.int64, (2, 2)),
        ([[1, 2], [3, 4.0]], fc.float32, (2, 2)),
        ([], fc.float32, (0,)),
        ([[], []], fc.float32, (2, 0)),
    ],
)
def test_tensor_inference(data, dtype, shape):
    t = fc.tensor(data)
    assert t.dtype == dtype
    assert t.shape == shape
    want = np.array(data, dtype={fc.int64: np.int64, fc.float32: np.float32, fc.bool: np.bool_}[dtype])
    np.testing.assert_array_equal(to_numpy(t), want)


def test_tensor_dtype_argument_and_numpy_scalars():
    t = fc.tensor([1, 2], dtype=fc.float64)
    assert t.dtype == fc.float64 and t.tolist() == [1.0, 2.0]
    assert fc.tensor([np.float32(1.5), np.int64(2)]).tolist() == [1.5, 2.0]
    assert fc.tensor([1.7, -2.2], dtype=fc.int64).tolist() == [1, -2]
    assert fc.tensor(2, dtype=float).dtype == fc.float64
    assert fc.tensor([fc.tensor(1.0), fc.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert fc.tensor(5.0).item() == 5.0
    assert fc.tensor([np.array([1, 2]), np.array([3, 4])]).tolist() == [[1, 2], [3, 4]]
    assert fc.tensor([fc.tensor([1.0, 2.0]), fc.tensor([3.0, 4.0])]).shape == (2, 2)
    assert fc.tensor([np.float64(2.5), np.array(3.0)]).tolist() == [2.5, 3.0]


def test_tensor_errors():
    with pytest.raises(ValueError, match=r"\[tensor\] expected a sequence of length 2 at dim 1 \(got 3\)"):
        fc.tensor([[1, 2], [3, 4, 5]])
    with pytest.raises(ValueError, match=r"\[tensor\].*dim 1"):
        fc.tensor([[1, 2], 3])
    with pytest.raises(ValueError, match=r"\[tensor\].*dim 1"):
        fc.tensor([1, [2, 3]])
    with pytest.raises(TypeError, match=r"\[tensor\].*str"):
        fc.tensor(["a", "b"])
    with pytest.raises(TypeError, match=r"\[tensor\].*NoneType"):
        fc.tensor([1, None])
    with pytest.raises(TypeError, match="dtype"):
        fc.tensor([1], dtype="float32")
    with pytest.raises(ValueError, match="int64"):
        fc.tensor([2**70])
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nests more than 64 levels"):
        fc.tensor(loop)


def test_tensor_from_numpy_copies_any_layout():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for view in [a, a[:, ::2, 1:], a.transpose(2, 0, 1), a[::-1], a[0, 0, 0]]:
        t = fc.tensor(view)
        assert t.dtype == fc.float64
        assert t.shape == view.shape
        np.testing.assert_array_equal(to_numpy(t), view)
    t = fc.tensor(a)
    a[0, 0, 0] = -1  # a copy, not a view
    assert t[0, 0, 0].item() == 0.0
    for np_dtype, dtype in [
        (np.bool_, fc.bool),
        (np.uint8, fc.uint8),
        (np.int8, fc.int8),
        (np.int16, fc.int16),
        (np.int32, fc.int32),
        (np.int64, fc.int64),
        (np.float32, fc.float32),
        (np.float64, fc.float64),
    ]:
        t = fc.tensor(np.ones(3, dtype=np_dtype))
        assert t.dtype == dtype
    with pytest.raises(TypeError, match=r"\[tensor\] buffer format"):
        fc.tensor(np.ones(3, dtype=np.longdouble))
    with pytest.raises(TypeError, match="big-endian"):
        fc.tensor(np.ones(3, dtype=">f4"))
    assert fc.tensor(np.ones(3, np.int32), dtype=fc.float32).dtype == fc.float32


def test_tensor_from_tensor_copies():
    a = fc.tensor([1.0, 2.0])
    b = fc.tensor(a)
    assert b.data_ptr() != a.data_ptr()
    assert b.tolist() == [1.0, 2.0]
    c = fc.tensor(a, dtype=fc.int64)
    assert c.dtype == fc.int64 and c.tolist() == [1, 2]


# ---- sized factories ----


def test_zeros_ones_empty_full():
    assert fc.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert fc.zeros((2, 3)).shape == (2, 3)
    assert fc.ones([4], dtype=fc.int64).tolist() == [1] * 4
    assert fc.empty(0, 5).shape == (0, 5)
    assert fc.zeros().shape == ()
    t = fc.full((2, 2), 7)
    assert t.dtype == fc.int64 and t.tolist() == [[7, 7], [7, 7]]
    assert fc.full((2,), 1.5).dtype == fc.float32
    assert fc.full((2,), True).dtype == fc.bool
    assert fc.full((2,), 1, dtype=fc.float64).dtype == fc.float64
    assert fc.full(3, 2.0).shape == (3,)
    with pytest.raises(ValueError, match="negative dimension"):
        fc.zeros(2, -1)
    with pytest.raises(TypeError, match=r"\[zeros\]"):
        fc.zeros(2.5)
    with pytest.raises(TypeError, match=r"\[full\]"):
        fc.full((2,), "x")


def test_device_arguments():
    assert fc.zeros(2, device="cpu").device == fc.device("cpu")
    assert fc.tensor([1], device=fc.device("cpu")).tolist() == [1]
    # Without flambeau-cuda: "built without CUDA"; once it is imported in this process (the flambeau
    # meta-package imports it), a machine without a GPU says so.
    missing = "(built without CUDA|no CUDA GPU is available)"
    with pytest.raises(RuntimeError, match=r"\[tensor\].*cuda.*" + missing):
        fc.tensor([1.0], device="cuda")
    with pytest.raises(RuntimeError, match=missing):
        fc.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match=missing):
        fc.ones_like(fc.zeros(2), device="cuda")
    with pytest.raises(ValueError):
        fc.zeros(2, device="tpu")
    with pytest.raises(TypeError, match=r"\[zeros\] device"):
        fc.zeros(2, device=3)


def test_like_factories():
    x = fc.zeros(2, 3, dtype=fc.float64)
    for f in (fc.zeros_like, fc.ones_like, fc.empty_like, fc.rand_like, fc.randn_like):
        y = f(x)
        assert y.shape == (2, 3) and y.dtype == fc.float64
    assert fc.ones_like(x, dtype=fc.int64).tolist() == [[1] * 3] * 2
    assert fc.full_like(x, 3).tolist() == [[3.0] * 3] * 2


# ---- layout= ----

# Every factory PyTorch gives layout=, with arguments: (name, args, kwargs) for both frameworks.
LAYOUT_FACTORIES = [
    ("zeros", (2, 3), {}),
    ("ones", ((2, 3),), {}),
    ("empty", (2,), {}),
    ("full", ((2,), 1.5), {}),
    ("rand", (2, 3), {}),
    ("randn", (2,), {}),
    ("randint", (5, (3,)), {}),
    ("randint", (1, 5, (3,)), {}),
    ("randperm", (4,), {}),
    ("normal", (1.6, 0.3, (2, 2, 2)), {"dtype": "float32", "device": "cpu"}),
    ("arange", (0, 5), {}),
    ("linspace", (0.0, 1.0, 5), {}),
    ("logspace", (0.0, 2.0, 3), {}),
    ("eye", (3, 2), {}),
    ("empty_strided", ((2, 3), (1, 2)), {}),
    ("tril_indices", (3, 3), {}),
    ("triu_indices", (3, 3, 1), {}),
]
LIKE_FACTORIES = ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"]
RANDOM = {"rand", "randn", "randint", "randperm", "normal", "empty", "empty_strided", "empty_like"}


def _args(fw, args, kwargs):
    kw = {k: getattr(fw, v) if k == "dtype" else v for k, v in kwargs.items()}
    return args, kw


@pytest.mark.parametrize("name, args, kwargs", LAYOUT_FACTORIES)
def test_factories_take_the_strided_layout(name, args, kwargs):
    import torch

    a, kw = _args(fc, args, kwargs)
    ta, tkw = _args(torch, args, kwargs)
    want = getattr(torch, name)(*ta, layout=torch.strided, **tkw)
    for layout in (fc.sparse.strided, None):
        fc.manual_seed(0)
        got = getattr(fc, name)(*a, layout=layout, **kw)
        fc.manual_seed(0)
        plain = getattr(fc, name)(*a, **kw)
        assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype).replace("torch", "flambeau")
        if name not in RANDOM:
            np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6)
        elif not name.startswith("empty"):
            assert got.tolist() == plain.tolist()  # the same draws as without layout=


@pytest.mark.parametrize("name, args, kwargs", LAYOUT_FACTORIES)
def test_factories_refuse_other_layouts_naming_the_op(name, args, kwargs):
    a, kw = _args(fc, args, kwargs)
    # PyTorch's error kind where it has no kernel for a layout (torch.normal(..., layout=torch.sparse_coo)):
    # NotImplementedError
    with pytest.raises(
        NotImplementedError,
        match=rf"^\[{name}\] is implemented for strided tensors only \(layout=flambeau.strided\), "
        r"got layout=flambeau.sparse_coo$",
    ):
        getattr(fc, name)(*a, layout=fc.sparse.sparse_coo, **kw)
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        getattr(fc, name)(*a, layout="strided", **kw)


def test_torch_refuses_a_sparse_layout_of_these_factories_with_not_implemented_error():
    import torch

    for fn in (
        lambda: torch.normal(0.0, 1.0, (2,), layout=torch.sparse_coo),
        lambda: torch.arange(3, layout=torch.sparse_coo),
        lambda: torch.linspace(0, 1, 3, layout=torch.sparse_coo),
        lambda: torch.randperm(3, layout=torch.sparse_coo),
    ):
        with pytest.raises(NotImplementedError):
            fn()


@pytest.mark.parametrize("name", [*LIKE_FACTORIES, "full_like", "new_zeros", "new_ones", "new_empty", "new_full"])
def test_like_and_new_factories_take_the_strided_layout(name):
    x = fc.zeros(2, 3, dtype=fc.float64)
    args = {"full_like": (x, 2.0), "new_full": ((2, 3), 2.0)}.get(name, (x,) if name.endswith("_like") else (2, 3))
    call = getattr(fc, name) if name.endswith("_like") else getattr(x, name)
    for layout in (fc.sparse.strided, None):
        y = call(*args, layout=layout)
        assert y.shape == (2, 3) and y.dtype == fc.float64
    with pytest.raises(NotImplementedError, match=rf"^\[{name}\] is implemented for strided tensors only"):
        call(*args, layout=fc.sparse.sparse_coo)


@pytest.mark.parametrize("name", ["fft.fftfreq", "fft.rfftfreq", "range"])
def test_frequency_and_range_factories_check_their_layout(name):
    import warnings

    fn = fc.fft.fftfreq if name == "fft.fftfreq" else fc.fft.rfftfreq if name == "fft.rfftfreq" else fc.range
    args = (0, 4) if name == "range" else (4,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # range is deprecated
        assert fn(*args, layout=fc.sparse.strided).tolist() == fn(*args).tolist()
        with pytest.raises(NotImplementedError, match=rf"^\[{name}\] is implemented for strided tensors only"):
            fn(*args, layout=fc.sparse.sparse_coo)


def test_normal_of_numbers_takes_torch_keywords():
    import torch

    g = fc.Generator(seed=3)
    got = fc.normal(2.7, 0.5, (4, 3), generator=g, dtype=fc.float64, layout=fc.sparse.strided, device="cpu")
    want = torch.normal(2.7, 0.5, (4, 3), dtype=torch.float64, layout=torch.strided, device="cpu")
    assert got.shape == tuple(want.shape) and got.dtype == fc.float64
    out = fc.empty(4, 3, dtype=fc.float64)
    assert fc.normal(2.7, 0.5, (4, 3), generator=fc.Generator(seed=3), out=out, pin_memory=False) is out
    assert out.tolist() == got.tolist()


# ---- arange ----


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((5,), {}),
        ((2, 9), {}),
        ((0, 10, 3), {}),
        ((10, 0, -3), {}),
        ((0.0, 1.0, 0.1), {}),
        ((1, 2.5, 0.5), {}),
        ((5, 5), {}),
        ((0, 1, 0.3), {"dtype": "float64"}),
        ((0, 7, 2), {"dtype": "float32"}),
        ((0.5, 4), {"dtype": "int64"}),
        # An integer dtype converts the bounds and step to int64 first (toward zero).
        ((2.1, -2.9, -1.0), {"dtype": "int64"}),
        ((2.5, -2.9, -1.5), {"dtype": "int64"}),
        ((0.5, 3.2, 1.7), {"dtype": "int64"}),
        ((0.9, 5, 1.5), {"dtype": "int64"}),
        ((-0.5, 3, 1), {"dtype": "int64"}),
    ],
)
def test_arange_matches_torch(args, kwargs):
    import torch

    tk = {k: getattr(torch, v) for k, v in kwargs.items()}
    fk = {k: getattr(fc, v) for k, v in kwargs.items()}
    want = torch.arange(*args, **tk)
    got = fc.arange(*args, **fk)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6)


def test_arange_takes_one_element_tensors_and_refuses_others():
    import torch

    for bound in (5, 2.5):
        want = torch.arange(torch.tensor(bound))
        got = fc.arange(fc.tensor(bound))
        assert got.tolist() == want.tolist() and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    with pytest.raises(
        TypeError, match=r"\[arange\] expected a number or a one-element tensor, got a tensor of shape \(3, 4\)"
    ):
        fc.arange(fc.rand(3, 4))
    with pytest.raises(TypeError, match=r"\[arange\].*shape \(0,\)"):
        fc.arange(0, fc.zeros(0))


def test_int_lists_take_1_d_integer_tensors_only():
    x = fc.rand(2, 3)
    assert fc.permute(x, fc.tensor([1, 0])).shape == (3, 2)
    with pytest.raises(
        TypeError, match=r"\[permute\] dims must be a sequence of ints, got a float32 tensor of shape \(2, 3\)"
    ):
        fc.permute(x, x)


def test_arange_errors():
    with pytest.raises(ValueError, match=r"\[arange\] step must be nonzero"):
        fc.arange(0, 5, 0)
    with pytest.raises(ValueError, match=r"\[arange\].*inconsistent with the sign of step"):
        fc.arange(0, 5, -1)
    with pytest.raises(ValueError, match=r"\[arange\].*inconsistent"):
        fc.arange(-3)
    with pytest.raises(ValueError, match=r"\[arange\].*finite"):
        fc.arange(0, float("inf"))
    with pytest.raises(TypeError, match=r"\[arange\]"):
        fc.arange("5")
    # PyTorch: "step must be nonzero" too, as 0.7 is 0 in int64.
    with pytest.raises(ValueError, match=r"\[arange\] step must be nonzero, got 0.7, which is 0 as dtype int64"):
        fc.arange(0.5, 3.2, 0.7, dtype=fc.int64)


# ---- sizes that overflow int64 (Note [Size overflow]) ----


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: fc.zeros(2**62), r"\[zeros\] shape \(4611686018427387904,\) of dtype float32 is too large"),
        (lambda: fc.arange(2**62), r"\[arange\] shape \(4611686018427387904,\) of dtype int64 is too large"),
        (lambda: fc.randn(2**62), r"\[randn\] shape \(4611686018427387904,\) of dtype float32 is too large"),
        (lambda: fc.ones(2**32, 2**32), r"\[ones\] shape \(4294967296, 4294967296\) is too large"),
        (lambda: fc.empty(2**61 + 1, 8), r"\[empty\] shape \(2305843009213693953, 8\) is too large"),
        (lambda: fc.full((2**62, 4), 1.0), r"\[full\] shape \(4611686018427387904, 4\) is too large"),
        (lambda: fc.zeros(0, 2**62, 2**62), r"\[zeros\] shape \(0, 4611686018427387904, 4611686018427387904\)"),
        (lambda: fc.zeros(3).expand(2**62, 3), r"\[expand\] shape \(4611686018427387904, 3\) is too large"),
        (lambda: fc.zeros(2**66), r"\[zeros\] size 73786976294838206464 does not fit in int64"),
        (lambda: fc.broadcast_shapes(2**66), r"\[broadcast_shapes\] shape 73786976294838206464 does not fit"),
    ],
)
def test_sizes_that_overflow_int64_raise(make, words):
    with pytest.raises(RuntimeError, match=words):
        make()


def test_huge_broadcast_views_refuse_to_copy():
    # A stride-0 view may have more elements than any buffer holds (2**62 float32s are 2**64 bytes).
    v = fc.zeros(1).expand(2**60, 4)
    assert v.numel() == 2**62 and v.stride() == (0, 0)
    with pytest.raises(RuntimeError, match=r"\[clone\] shape \(1152921504606846976, 4\) of dtype float32"):
        v.clone()
    with pytest.raises(RuntimeError, match=r"\[add\] shape \(1152921504606846976, 4\) of dtype float32"):
        v + v
    with pytest.raises(BufferError):
        memoryview(v)


# ---- random ----


def test_rand_randn_statistics():
    fc.manual_seed(0)
    u = to_numpy(fc.rand(200_000))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    n = to_numpy(fc.randn(200_000, dtype=fc.float64))
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01
    # tails: ~4.55% beyond 2 sigma
    assert abs((np.abs(n) > 2).mean() - 0.0455) < 0.003
    x = fc.empty(100_000).normal_(3.0, 0.5)
    assert abs(to_numpy(x).mean() - 3) < 0.01 and abs(to_numpy(x).std() - 0.5) < 0.01
    y = fc.empty(100_000).uniform_(-2, 5)
    assert to_numpy(y).min() >= -2 and to_numpy(y).max() < 5


def test_manual_seed_reproduces_and_sequences_advance():
    fc.manual_seed(123)
    a = fc.rand(5).tolist()
    b = fc.randn(3).tolist()
    fc.manual_seed(123)
    assert fc.rand(5).tolist() == a
    assert fc.randn(3).tolist() == b
    assert fc.rand(5).tolist() != a


def test_random_independent_of_thread_count():
    old = fc.get_num_threads()
    try:
        fc.set_num_threads(1)
        fc.manual_seed(7)
        one = to_numpy(fc.randn(300_001)).copy()
        fc.set_num_threads(2)
        fc.manual_seed(7)
        two = to_numpy(fc.randn(300_001)).copy()
    finally:
        fc.set_num_threads(old)
    np.testing.assert_array_equal(one, two)


def test_generator_object_and_noncontiguous_fill():
    g = fc.Generator().manual_seed(5)
    a = fc.rand(4, generator=g).tolist()
    g.manual_seed(5)
    assert fc.rand(4, generator=g).tolist() == a
    assert g.initial_seed() == 5
    t = fc.zeros(4, 6)
    col = t[:, 1]
    col.uniform_(1, 2)
    arr = to_numpy(t)
    assert (arr[:, 1] >= 1).all() and (arr[:, 0] == 0).all() and (arr[:, 2:] == 0).all()
    with pytest.raises(TypeError, match="generator"):
        fc.rand(3, generator=5)


def test_random_errors():
    with pytest.raises(TypeError, match=r"\[uniform_\].*int64"):
        fc.zeros(3, dtype=fc.int64).uniform_()
    with pytest.raises(TypeError, match=r"\[normal_\].*int64"):
        fc.randn(3, dtype=fc.int64)
    with pytest.raises(ValueError, match=r"\[normal_\] expects std >= 0"):
        fc.zeros(3).normal_(0, -1)
    with pytest.raises(ValueError, match=r"\[uniform_\] expects low <= high"):
        fc.zeros(3).uniform_(2, 1)


def test_requires_grad_without_autograd_names_package():
    # A child where flambeau-autograd cannot be imported (as when only core is installed).
    code = (
        "import sys; sys.modules['flambeau_autograd'] = None\n"
        "import flambeau_core as fc\n"
        "try:\n    fc.zeros(2, requires_grad=True)\nexcept RuntimeError as e:\n    print('ERR', e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ERR [requires_grad] gradients need flambeau-autograd" in r.stdout
    assert math.isfinite(fc.randn(1).item())


def test_random_fill_same_values_for_any_layout():
    for fill in (lambda t: t.normal_(1.0, 2.0), lambda t: t.uniform_(-1.0, 1.0)):
        fc.manual_seed(11)
        dense = fc.empty(5, 3)
        fill(dense)
        fc.manual_seed(11)
        base = fc.empty(3, 5)
        strided = base.T  # (5, 3), column-major
        fill(strided)
        np.testing.assert_array_equal(to_numpy(strided), to_numpy(dense))


def test_manual_seed_seeds_every_registered_device():
    # A device package registers manual_seed_all (flambeau-cuda does); fc.manual_seed
    # calls it after seeding the cpu, as torch.manual_seed seeds CUDA too.
    from flambeau_core import _device_modules

    seen = []
    _device_modules.register_memory_functions("fakedev", {"manual_seed_all": seen.append})
    try:
        fc.manual_seed(123)
        first = fc.rand(3).tolist()
        assert seen == [123]
        with pytest.raises((TypeError, ValueError, OverflowError), match="manual_seed"):
            fc.manual_seed("x")
        assert seen == [123]  # a bad seed never reaches the devices
        fc.manual_seed(123)
        assert fc.rand(3).tolist() == first and seen == [123, 123]
    finally:
        del _device_modules._memory_functions["fakedev"]
