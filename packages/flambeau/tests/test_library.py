"""flambeau.library (custom operators in Python) against torch.library on the same definitions."""

from __future__ import annotations

import subprocess
import sys
import typing
from collections.abc import Sequence
from typing import Optional  # noqa: UP035  (the spelling under test, as T | None)

import flambeau as fb
import flambeau_sim
import numpy as np
import pytest
import torch
from flambeau.library import Library, OpCheckError, custom_op, infer_schema, opcheck
from flambeau.library._schema import parse_schema
from flambeau_core._trace import OpRecorder

flambeau_sim.register(num_devices=2)


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else fb.Tensor.numpy(t.detach().cpu())


def _pair(values):
    """The same numbers as a flambeau tensor and a torch tensor."""
    a = np.asarray(values, dtype=np.float32)
    return fb.tensor(a), torch.from_numpy(a.copy())


def define_numpy_sin(lib, name="numpy_sin", *, with_fake=True, with_autograd=True):
    """PyTorch's tutorial op, for either library (`lib` is flambeau or torch)."""
    T = lib.Tensor

    def numpy_sin(x: T) -> T:
        return lib.from_numpy(np.sin(x.cpu().numpy())).to(x.device)

    numpy_sin.__annotations__ = {"x": T, "return": T}
    op = lib.library.custom_op(f"testlib::{name}", mutates_args=())(numpy_sin)
    if with_fake:
        op.register_fake(lambda x: lib.empty_like(x))
    if with_autograd:

        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        op.register_autograd(backward, setup_context=setup_context)
    return op


# --- custom_op: calls, the meta device, autograd, opcheck ---------------------------------


def test_numpy_sin_matches_torch_values_grads_and_meta_shapes():
    fop, top = define_numpy_sin(fb), define_numpy_sin(torch)
    fx, tx = _pair([[0.1, -1.2, 2.0], [3.0, 0.5, -0.7]])
    np.testing.assert_allclose(_np(fop(fx)), _np(top(tx)), rtol=1e-6)
    np.testing.assert_allclose(_np(fb.ops.testlib.numpy_sin(fx)), _np(torch.ops.testlib.numpy_sin(tx)), rtol=1e-6)
    fx.requires_grad_(True)
    tx.requires_grad_(True)
    fy, ty = fop(fx), top(tx)
    assert fy.requires_grad and ty.requires_grad
    (fy * fy).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(_np(fx.grad), _np(tx.grad), rtol=1e-5)
    fm = fop(fb.empty(4, 5, device="meta"))
    tm = top(torch.empty(4, 5, device="meta"))
    assert (
        fm.is_meta and tuple(fm.shape) == tuple(tm.shape) and str(fm.dtype).split(".")[1] == str(tm.dtype).split(".")[1]
    )
    with fb.no_grad():
        assert not fop(fx).requires_grad


def test_numpy_sin_passes_opcheck_as_in_torch_and_gradcheck():
    fop, top = define_numpy_sin(fb), define_numpy_sin(torch)
    fx, tx = _pair([0.3, -0.9, 1.7])
    assert set(opcheck(fop, (fx.requires_grad_(True),)).values()) == {"SUCCESS"}
    assert set(torch.library.opcheck(top, (tx.requires_grad_(True),)).values()) == {"SUCCESS"}
    x64 = fb.tensor([0.3, -0.9, 1.7], dtype=fb.float64, requires_grad=True)
    assert fb.autograd.gradcheck(fop, (x64,))
    # PyTorch's check names are accepted (flambeau has no compiler: aot_dispatch checks the gradient).
    assert opcheck(fop, (fx,), test_utils="test_aot_dispatch_dynamic") == {"test_aot_dispatch_dynamic": "SUCCESS"}


def test_backward_without_formula_raises_as_torch():
    fop = define_numpy_sin(fb, "no_grad_formula", with_autograd=False)
    top = define_numpy_sin(torch, "no_grad_formula", with_autograd=False)
    fx, tx = _pair([1.0, 2.0])
    fy, ty = fop(fx.requires_grad_(True)), top(tx.requires_grad_(True))
    assert fy.requires_grad and ty.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match=r"\[testlib::no_grad_formula\].*no autograd formula was registered"):
        fy.sum().backward()
    result = opcheck(fop, (fx,), raise_exception=False)
    assert isinstance(result["test_gradcheck"], RuntimeError)


def test_meta_without_fake_rule_raises_as_torch():
    fop = define_numpy_sin(fb, "no_fake", with_fake=False)
    top = define_numpy_sin(torch, "no_fake", with_fake=False)
    with pytest.raises(RuntimeError):  # NotImplementedError is a RuntimeError
        top(torch.empty(2, device="meta"))
    with pytest.raises(NotImplementedError, match=r"\[testlib::no_fake\] has no fake rule.*'meta' device"):
        fop(fb.empty(2, device="meta"))


def test_keyword_only_argument_reaches_setup_context_as_in_torch():
    def define(lib):
        T = lib.Tensor

        def numpy_mul(x: T, *, val: float) -> T:
            return lib.from_numpy(x.cpu().numpy() * val)

        numpy_mul.__annotations__ = {"x": T, "val": float, "return": T}
        op = lib.library.custom_op("testlib::numpy_mul", mutates_args=())(numpy_mul)

        def setup_context(ctx, inputs, keyword_only_inputs, output):
            ctx.val = keyword_only_inputs["val"]

        op.register_autograd(lambda ctx, grad: grad * ctx.val, setup_context=setup_context)
        return op

    ops = {"flambeau": define(fb), "torch": define(torch)}
    fx, tx = _pair([1.0, -2.0, 3.0])
    fx.requires_grad_(True)
    tx.requires_grad_(True)
    ops["flambeau"](fx, val=2.5).sum().backward()
    ops["torch"](tx, val=2.5).sum().backward()
    np.testing.assert_allclose(_np(fx.grad), _np(tx.grad))
    assert str(ops["flambeau"]._opoverload._schema) == "testlib::numpy_mul(Tensor x, *, float val) -> Tensor"


def test_tuple_outputs_and_tensor_list_inputs_differentiate_as_torch():
    grads = {}
    for lib in (fb, torch):
        T = lib.Tensor

        def weighted(xs: list[T], w: T) -> tuple[T, T]:
            total = xs[0] * w
            for x in xs[1:]:
                total = total + x * w
            return total, w * 2

        weighted.__annotations__ = {"xs": list[T], "w": T, "return": tuple[T, T]}
        op = lib.library.custom_op("testlib::weighted", mutates_args=())(weighted)

        def setup_context(ctx, inputs, output):
            xs, w = inputs
            ctx.save_for_backward(w, *xs)

        def backward(ctx, g_total, g_twice):
            w, *xs = ctx.saved_tensors
            total = xs[0]
            for x in xs[1:]:
                total = total + x
            return [g_total * w for _ in xs], g_total * total + 2 * g_twice

        op.register_autograd(backward, setup_context=setup_context)
        vals = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]]
        xs = [lib.tensor(v, requires_grad=True) for v in vals]
        w = lib.tensor([2.0, -3.0], requires_grad=True)
        a, b = op(xs, w)
        (a * a).sum().add((b * b).sum()).backward()
        grads[lib.__name__] = [_np(t.grad) for t in [*xs, w]]
    for f, t in zip(grads["flambeau"], grads["torch"], strict=True):
        np.testing.assert_allclose(f, t, rtol=1e-6)


def test_mutating_op_as_torch_and_its_schema():
    results = {}
    for lib in (fb, torch):
        T = lib.Tensor

        def numpy_add_(x: T, y: T) -> None:
            np.add(x.numpy(), y.numpy(), out=x.numpy())

        numpy_add_.__annotations__ = {"x": T, "y": T, "return": None}
        op = lib.library.custom_op("testlib::numpy_add_", mutates_args=["x"])(numpy_add_)
        x = lib.tensor([1.0, 2.0])
        assert op(x, lib.tensor([10.0, 20.0])) is None
        results[lib.__name__] = _np(x)
        with pytest.raises(RuntimeError):
            op.register_autograd(lambda ctx, g: g)
        assert lib.library.opcheck(op, (lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])), test_utils="test_schema")
    np.testing.assert_array_equal(results["flambeau"], results["torch"])
    assert str(fb.ops.testlib.numpy_add_.default._schema) == "testlib::numpy_add_(Tensor(a0!) x, Tensor y) -> ()"
    # A mutating op that returns nothing needs no fake rule on meta (as PyTorch).
    assert fb.ops.testlib.numpy_add_(fb.empty(2, device="meta"), fb.empty(2, device="meta")) is None


def test_custom_op_redefinition_replaces_the_earlier_one_as_torch():
    for lib in (fb, torch):
        T = lib.Tensor
        first = lib.library.custom_op("testlib::again", mutates_args=(), schema="(Tensor x) -> Tensor")(lambda x: x + 1)
        second = lib.library.custom_op("testlib::again", mutates_args=(), schema="(Tensor x) -> Tensor")(
            lambda x: x + 2
        )
        assert lib.ops.testlib.again(lib.zeros(1)).tolist() == [2.0]
        assert second(lib.zeros(1)).tolist() == [2.0]
        del first, T


def test_explicit_schema_must_agree_with_mutates_args_as_torch():
    for lib in (fb, torch):
        with pytest.raises(ValueError):
            lib.library.custom_op("testlib::disagree", mutates_args=(), schema="(Tensor(a!) x) -> ()")(lambda x: None)


# --- schema inference ------------------------------------------------------------------------


def _signatures(T, dtype_default):
    """Functions with the same hints over either library's Tensor (one per supported form)."""

    def f1(x: T) -> T: ...
    def f2(x: T, w: T | None, xs: list[T], n: int, f: float, b: bool, s: str, dims: Sequence[int]) -> tuple[T, T]: ...  # noqa: E501
    def f3(x: T, *, alpha: float = 1.5, n: int = 3, flag: bool = True, name: str = "abc", w: T | None = None) -> T: ...  # noqa: E501
    def f4(xs: list[T | None], dims: Sequence[int] | None, fs: list[float]) -> list[T]: ...
    def f5(x: T, y: T) -> None: ...
    def f6(x: T) -> int: ...
    def f7(x: T, dims: typing.List[int], scale: float | None = None) -> tuple[T]: ...  # noqa: UP006

    hints = {
        f1: {"x": T, "return": T},
        f2: {
            "x": T,
            "w": Optional[T],  # noqa: UP045
            "xs": list[T],
            "n": int,
            "f": float,
            "b": bool,
            "s": str,
            "dims": Sequence[int],
            "return": tuple[T, T],
        },  # fmt: skip
        f3: {"x": T, "alpha": float, "n": int, "flag": bool, "name": str, "w": Optional[T], "return": T},  # noqa: UP045
        f4: {"xs": list[T | None], "dims": Optional[Sequence[int]], "fs": list[float], "return": list[T]},  # noqa: UP045
        f5: {"x": T, "y": T, "return": None},
        f6: {"x": T, "return": int},
        f7: {"x": T, "dims": typing.List[int], "scale": Optional[float], "return": tuple[T]},  # noqa: UP006, UP045
    }
    for fn, h in hints.items():
        fn.__annotations__ = h
    return list(hints)


@pytest.mark.parametrize("index", range(7))
@pytest.mark.parametrize("mutates", [(), "unknown"])
def test_infer_schema_matches_torch(index, mutates):
    f = _signatures(fb.Tensor, fb.float32)[index]
    t = _signatures(torch.Tensor, torch.float32)[index]
    ours = infer_schema(f, mutates_args=mutates, op_name="op")
    theirs = torch.library.infer_schema(t, mutates_args=mutates, op_name="op")
    # The same schema, up to how the two print a one-element tuple return.
    assert ours == theirs.replace("-> ((Tensor))", "-> (Tensor)")
    # And it parses to the arguments torch's own parser sees.
    parsed, ref = parse_schema(ours), torch._C.parse_schema(theirs)
    assert [(a.name, a.kwarg_only, a.is_write) for a in parsed.arguments] == [
        (a.name, a.kwarg_only, bool(a.alias_info and a.alias_info.is_write)) for a in ref.arguments
    ]
    assert len(parsed.returns) == len(ref.returns)


def test_unsupported_hints_raise_value_error_as_torch():
    def with_dict(x: dict) -> fb.Tensor: ...
    def with_tuple(x: tuple[int, int]) -> fb.Tensor: ...
    def unannotated(x) -> fb.Tensor: ...
    def varargs(*xs: fb.Tensor) -> fb.Tensor: ...
    def bad_return(x: fb.Tensor) -> dict: ...

    cases = [
        (with_dict, "parameter 'x' has the unsupported type"),
        (with_tuple, "parameter 'x' has the unsupported type .*tuples are not argument types"),
        (unannotated, "parameter 'x' must have a type annotation"),
        (varargs, "parameter 'xs' is positional-only, \\*args or \\*\\*kwargs"),
        (bad_return, "the return type .* is not supported"),
    ]
    for fn, words in cases:
        with pytest.raises(ValueError, match=r"\[infer_schema\] " + words):
            infer_schema(fn, mutates_args=())
        with pytest.raises(ValueError):
            torch.library.infer_schema(fn, mutates_args=())
    with pytest.raises(ValueError, match="only Tensors"):
        infer_schema(_int_arg, mutates_args=["n"])
    with pytest.raises(ValueError, match="not parameters"):
        infer_schema(_int_arg, mutates_args=["nope"])


def _int_arg(n: int) -> fb.Tensor: ...


# --- schema strings: Library.define / impl ---------------------------------------------------


SCHEMAS = [
    "foo(Tensor x, int n, *, float alpha=1.0) -> Tensor",
    "bar.out(Tensor self, SymInt[2] size, *, Tensor(a!) out) -> Tensor(a!)",
    'baz(Tensor? w, Tensor[] xs, Tensor?[] ys, int[]? dims=None, str mode="mean", bool flag=False) -> (Tensor, Tensor)',
    "qux(Tensor(a) self, ScalarType? dtype=None, Scalar s=2, float[] fs=[1.0, 2.5]) -> Tensor(a)",
    "nothing(Tensor(a!) x) -> ()",
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_parse_schema_matches_torch_parser(schema):
    ours, ref = parse_schema(schema), torch._C.parse_schema(schema)
    assert ours.name == ref.name and ours.overload_name == ref.overload_name
    assert [(a.name, a.kwarg_only, a.has_default, a.is_write) for a in ours.arguments] == [
        (a.name, a.kwarg_only, a.has_default_value(), bool(a.alias_info and a.alias_info.is_write))
        for a in ref.arguments
    ]
    for a, r in zip(ours.arguments, ref.arguments, strict=True):
        if a.has_default and not isinstance(a.default, fb.dtype):
            assert a.default == r.default_value
    assert len(ours.returns) == len(ref.returns)
    assert parse_schema(str(ours)) == ours  # prints back to what it parses from


@pytest.mark.parametrize(
    ("schema", "position", "words", "torch_refuses"),
    [
        ("bar(Tensor x, int n -> Tensor", 20, "expected ',' or '\\)' but found '->'", True),
        ("bar(Tensr x) -> Tensor", 4, "unknown type 'Tensr'", True),
        ("bar(Tensor x) Tensor", 14, "expected '->'", True),
        ("bar(Tensor x) -> Tensor $", 24, "unexpected character '\\$'", True),
        # torch's parser takes these two; its dispatcher would bind the call wrongly
        ("bar(Tensor x, Tensor x) -> Tensor", 0, "argument 'x' appears twice", False),
        ("bar(Tensor x=1, Tensor y) -> Tensor", 0, "argument 'y' without a default follows 'x' with one", False),
    ],
)
def test_bad_schema_names_the_op_and_the_position(schema, position, words, torch_refuses):
    lib = Library("badschema", "FRAGMENT")
    try:
        with pytest.raises(
            fb.FlambeauError,
            match=rf"\[Library.define\] cannot parse the schema of 'badschema::bar' at position {position}: {words}",
        ):  # noqa: E501
            lib.define(schema)
        if torch_refuses:
            with pytest.raises(RuntimeError):
                torch._C.parse_schema(schema)
    finally:
        lib._destroy()


@pytest.fixture
def libs():
    made = []

    def make(lib, ns, kind="DEF"):
        made.append(lib.library.Library(ns, kind))
        return made[-1]

    yield make
    for lib in made:
        lib._destroy()


def test_library_define_and_impl_call_as_torch(libs):
    for lib in (fb, torch):
        m = libs(lib, "deflib")
        assert m.define("foo(Tensor x, int n, *, float alpha=1.0) -> Tensor") == "foo"
        m.impl("foo", lambda x, n, *, alpha=1.0: x * n * alpha, "CPU")
        assert lib.ops.deflib.foo(lib.ones(2), 3).tolist() == [3.0, 3.0]
        assert lib.ops.deflib.foo(lib.ones(2), 3, alpha=0.5).tolist() == [1.5, 1.5]
        assert lib.ops.deflib.foo.default(lib.ones(1), n=2).tolist() == [2.0]
    with pytest.raises(TypeError, match=r"\[deflib::foo\] argument 'n' \(position 1\) must be int, got str"):
        fb.ops.deflib.foo(fb.ones(2), "a")
    with pytest.raises(TypeError, match=r"\[deflib::foo\] deflib::foo\(\) missing 1 required positional argument: 'n'"):
        fb.ops.deflib.foo(fb.ones(2))
    with pytest.raises(TypeError, match=r"\[deflib::foo\] .*takes 2 positional arguments but 3 were given"):
        fb.ops.deflib.foo(fb.ones(2), 1, 2.0)
    with pytest.raises(RuntimeError):  # torch refuses the same calls (with RuntimeError)
        torch.ops.deflib.foo(torch.ones(2), "a")
    # No kernel for the device: both say so with NotImplementedError.
    with pytest.raises(NotImplementedError):
        torch.ops.deflib.foo(torch.ones(2, device="meta"), 1)
    with pytest.raises(
        NotImplementedError, match=r"\[deflib::foo\] has no kernel for the 'sim' device \(it has kernels for: cpu\)"
    ):  # noqa: E501
        fb.ops.deflib.foo(fb.ones(2, device="sim"), 1)


def test_duplicate_definitions_raise_as_torch(libs):
    for lib in (fb, torch):
        m = libs(lib, "duplib")
        m.define("foo(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError):
            m.define("foo(Tensor x, int n) -> Tensor")
        with pytest.raises(RuntimeError):
            lib.library.Library("duplib", "DEF")
        libs(lib, "duplib", "FRAGMENT").define("foo2(Tensor x) -> Tensor")  # a fragment may add more
    with pytest.raises(RuntimeError, match=r"'duplib::foo' \(overload 'default'\) is defined already"):
        fb.library.Library("duplib", "FRAGMENT").define("foo(Tensor y) -> Tensor")
    with pytest.raises(ValueError, match="reserved namespace"):
        fb.library.Library("aten", "DEF")
    with pytest.raises(ValueError, match="kind must be"):
        fb.library.Library("x", "DEFINE")


def test_dispatch_keys_composite_implicit_meta_and_unknown(libs):
    m = libs(fb, "keylib")
    m.define("double(Tensor x) -> Tensor")
    m.impl("double", lambda x: x + x)  # CompositeImplicitAutograd: every device, differentiable through x + x
    x = fb.tensor([1.0, 2.0], requires_grad=True)
    fb.ops.keylib.double(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert fb.ops.keylib.double(fb.ones(2, device="sim")).cpu().tolist() == [2.0, 2.0]
    assert fb.ops.keylib.double(fb.empty(3, device="meta")).shape == (3,)
    m.define("rows(Tensor x) -> Tensor")
    m.impl("rows", lambda x: x.sum(1), "CPU")
    m.impl("rows", lambda x: x.new_empty(x.shape[0]), "Meta")
    assert fb.ops.keylib.rows(fb.empty(5, 2, device="meta")).shape == (5,)
    with pytest.raises(ValueError, match=r"\[Library.impl\] unknown dispatch key 'XLAish' for 'keylib::rows'"):
        m.impl("rows", lambda x: x, "XLAish")


def test_destroy_removes_the_operators(libs):
    m = fb.library.Library("gone", "DEF")
    m.define("f(Tensor x) -> Tensor")
    m.impl("f", lambda x: x * 1, "CPU")
    assert fb.ops.gone.f(fb.ones(1)).tolist() == [1.0]
    m._destroy()
    with pytest.raises(AttributeError, match=r"\[flambeau.ops\] there is no operator 'gone::f'"):
        fb.ops.gone.f  # noqa: B018
    fb.library.Library("gone", "DEF")._destroy()  # the namespace is free again


# --- kernels per device, module-level registration --------------------------------------------


def test_register_kernel_for_sim_and_missing_device_kernel():
    @custom_op("testlib::scaled", mutates_args=(), device_types="cpu")
    def scaled(x: fb.Tensor, k: float) -> fb.Tensor:
        return fb.from_numpy(x.numpy() * np.float32(k))

    with pytest.raises(NotImplementedError, match=r"\[testlib::scaled\] has no kernel for the 'sim' device"):
        scaled(fb.ones(2, device="sim:1"), 2.0)

    @scaled.register_kernel("sim")
    def _(x, k):
        return x * k

    y = scaled(fb.ones(2, device="sim:1"), 2.0)
    assert y.device == fb.device("sim:1") and y.cpu().tolist() == [2.0, 2.0]
    scaled.register_fake(lambda x, k: fb.empty_like(x))
    assert opcheck(scaled, (fb.tensor([1.0, 2.0]), 3.0))["test_devices"] == "SUCCESS"

    @scaled.register_kernel("sim")
    def _(x, k):  # disagrees with the CPU kernel
        return x * (k + 1)

    with pytest.raises(
        OpCheckError, match=r"test_devices failed .*output 0 of the 'sim' kernel differs from the 'cpu'"
    ):
        opcheck(scaled, (fb.tensor([1.0, 2.0]), 3.0))


def test_module_level_register_functions():
    @custom_op("testlib::modlevel", mutates_args=(), device_types="cpu")
    def modlevel(x: fb.Tensor) -> fb.Tensor:
        return x * x

    fb.library.register_fake("testlib::modlevel", lambda x: fb.empty_like(x))

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    fb.library.register_autograd("testlib::modlevel", lambda ctx, g: 2 * g * ctx.saved_tensors[0], setup_context=setup)
    fb.library.register_kernel("testlib::modlevel", "sim", lambda x: x * x)
    x = fb.tensor([3.0], requires_grad=True)
    modlevel(x).backward()
    assert x.grad.tolist() == [6.0]
    assert modlevel(fb.empty(2, 2, device="meta")).shape == (2, 2)
    assert modlevel(fb.tensor([2.0], device="sim")).cpu().tolist() == [4.0]
    assert set(opcheck("testlib::modlevel", (fb.tensor([1.5, -2.0], requires_grad=True),)).values()) == {"SUCCESS"}
    with pytest.raises(ValueError, match=r"\[register_fake\] there is no operator 'testlib::nothere'"):
        fb.library.register_fake("testlib::nothere", lambda x: x)


def test_define_and_impl_functions():
    fb.library.define("fnlib::mul3", "(Tensor x) -> Tensor")
    fb.library.impl("fnlib::mul3", "cpu", lambda x: x * 3)
    fb.library.impl("fnlib::mul3", "Meta", lambda x: fb.empty_like(x))
    assert fb.ops.fnlib.mul3(fb.ones(1)).tolist() == [3.0]
    assert fb.ops.fnlib.mul3(fb.empty(4, device="meta")).shape == (4,)


def test_set_kernel_enabled():
    @custom_op("testlib::toggled", mutates_args=())
    def toggled(x: fb.Tensor) -> fb.Tensor:
        return x + 1

    @toggled.register_kernel("cpu")
    def _(x):
        return x + 2

    with toggled.set_kernel_enabled("cpu", False):
        assert toggled(fb.zeros(1)).tolist() == [1.0]
    assert toggled(fb.zeros(1)).tolist() == [2.0]


# --- opcheck's failures ------------------------------------------------------------------------


def test_opcheck_reports_an_undeclared_mutation_as_torch():
    for lib in (fb, torch):
        T = lib.Tensor

        def sneaky(x: T) -> T:
            x.add_(1)
            return x.clone()

        sneaky.__annotations__ = {"x": T, "return": T}
        op = lib.library.custom_op("testlib::sneaky", mutates_args=())(sneaky)
        op.register_fake(lambda x, lib=lib: lib.empty_like(x))
        with pytest.raises(Exception, match="test_schema failed") as info:
            lib.library.opcheck(op, (lib.ones(3),))
        assert type(info.value).__name__ == "OpCheckError"
    with pytest.raises(
        OpCheckError, match=r"testlib::sneaky mutated its argument 'x', which its schema does not declare"
    ):
        opcheck("testlib::sneaky", (fb.ones(3),))


def test_opcheck_reports_wrong_fake_shape_and_dtype_with_both():
    for lib in (fb, torch):
        T = lib.Tensor

        def plain(x: T) -> T:
            return x.sin()

        plain.__annotations__ = {"x": T, "return": T}
        op = lib.library.custom_op("testlib::wrongfake", mutates_args=())(plain)
        op.register_fake(lambda x: x.new_empty(x.shape[0] + 1))
        with pytest.raises(Exception, match="test_faketensor failed"):
            lib.library.opcheck(op, (lib.ones(3),))
    with pytest.raises(
        OpCheckError, match=r"output 0 of the 'cpu' kernel has shape \(3,\) but the fake rule says \(4,\)"
    ):
        opcheck("testlib::wrongfake", (fb.ones(3),))
    fb.library.register_fake("testlib::wrongfake", lambda x: fb.empty_like(x, dtype=fb.float64))
    with pytest.raises(OpCheckError, match=r"has dtype flambeau.float32 but the fake rule says flambeau.float64"):
        opcheck("testlib::wrongfake", (fb.ones(3),))
    fb.library.register_fake("testlib::wrongfake", lambda x: fb.empty(x.shape))  # a CPU tensor, not a meta one
    with pytest.raises(OpCheckError, match=r"the fake rule's output 0 is on 'cpu'"):
        opcheck("testlib::wrongfake", (fb.ones(3),))


def test_opcheck_reports_a_wrong_gradient_and_an_aliasing_output():
    @custom_op("testlib::badgrad", mutates_args=())
    def badgrad(x: fb.Tensor) -> fb.Tensor:
        return x * x

    badgrad.register_fake(lambda x: fb.empty_like(x))
    badgrad.register_autograd(lambda ctx, g: g * 3, setup_context=lambda ctx, inputs, output: None)
    with pytest.raises(OpCheckError, match=r"test_gradcheck failed .*disagrees with finite differences"):
        opcheck(badgrad, (fb.tensor([1.0, 2.0]),))

    @custom_op("testlib::aliasing", mutates_args=())
    def aliasing(x: fb.Tensor) -> fb.Tensor:
        return x.view(-1)

    aliasing.register_fake(lambda x: x.new_empty(x.numel()))
    with pytest.raises(OpCheckError, match=r"output 0 shares memory with its argument 'x'"):
        opcheck(aliasing, (fb.ones(2, 2),), test_utils=["test_schema"])
    with pytest.raises(ValueError, match=r"\[opcheck\] unknown test_utils \['test_nope'\]"):
        opcheck(aliasing, (fb.ones(2),), test_utils="test_nope")


# --- fb.ops, the profiler, torch.library through the import hook -----------------------------


def test_ops_namespace_and_packet():
    op = define_numpy_sin(fb, "in_ops")
    packet = fb.ops.testlib.in_ops
    assert packet.overloads() == ["default"] and packet.default is op._opoverload
    assert repr(packet) == "testlib.in_ops" and repr(packet.default) == "testlib.in_ops.default"
    with pytest.raises(
        AttributeError, match=r"there is no operator 'testlib::absent' \(the namespace 'testlib' has: .*in_ops"
    ):
        fb.ops.testlib.absent  # noqa: B018
    with pytest.raises(AttributeError, match="has no overload 'out'"):
        packet.out  # noqa: B018


def test_profiler_records_one_event_per_call():
    op = define_numpy_sin(fb, "profiled")
    x = fb.ones(3)
    with fb.profiler.profile() as prof:
        for _ in range(3):
            op(x)
        fb.ops.testlib.profiled(x)
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["testlib::profiled"] == 4
    # Each call is a range around its kernel's own work, at the top level of this thread.
    ranges = [e for e in prof.events() if e.name == "testlib::profiled"]
    assert all(e.cpu_parent is None and e.time_range.end >= e.time_range.start for e in ranges)


def test_recorder_compile_and_onnx_see_a_custom_op_as_one_op(tmp_path):
    op = define_numpy_sin(fb, "recorded")
    x = fb.randn(5)
    with OpRecorder() as rec:
        y = op(x)
        fb.ops.testlib.recorded(x * 2)
    # Its body (numpy, from_numpy, to) is not reported: the op is one call, as torch's tracers see it.
    assert [c.name for c in rec.calls] == ["testlib::recorded", "mul", "testlib::recorded"]
    assert rec.calls[0].args == (x,) and rec.calls[0].result is y and not rec.calls[0].method
    # fb.compile keeps it as one node of the graph (its numpy body alone would break the graph) and replays it.
    g = fb.compile(lambda t: op(t.relu()) * 2)
    for _ in range(3):
        np.testing.assert_allclose(g(x).numpy(), np.sin(np.maximum(x.numpy(), 0)) * 2, rtol=1e-6)
    assert g.break_reasons == [] and [n.name for n in g.graphs[0].nodes] == ["relu", "testlib::recorded", "mul"]
    xg = fb.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    for _ in range(2):  # captured, then replayed: its registered backward runs
        xg.grad = None
        g(xg).sum().backward()
        np.testing.assert_allclose(xg.grad.numpy(), [0.0, 2 * np.cos(0.5), 2 * np.cos(2.0)], rtol=1e-6)
    # ONNX has no mapping for it: the export names the operator.
    with pytest.raises(fb.onnx.UnsupportedOperatorError, match="testlib::recorded"):
        fb.onnx.export(_OpModule(), (x,), str(tmp_path / "custom.onnx"))


class _OpModule(fb.nn.Module):
    def forward(self, x):
        return fb.ops.testlib.recorded(x) + 1


def test_torch_library_through_the_import_hook():
    program = (
        "from flambeau import torch_import_hook as hook; hook.install()\n"
        "import torch, torch.library\n"
        "@torch.library.custom_op('hooklib::twice', mutates_args=())\n"
        "def twice(x: torch.Tensor) -> torch.Tensor:\n"
        "    return x * 2\n"
        "print(torch.ops.hooklib.twice(torch.ones(2)).tolist(), torch.library.custom_op is __import__('flambeau').library.custom_op)\n"  # noqa: E501
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[2.0, 2.0] True"


def test_out_overload_and_impl_library_as_torch(libs):
    for lib in (fb, torch):
        m = libs(lib, "outlib")
        assert m.define("scale(Tensor x, float k) -> Tensor") == "scale"
        assert m.define("scale.out(Tensor x, float k, *, Tensor(a!) out) -> Tensor(a!)") == "scale"
        impl_lib = libs(lib, "outlib", "IMPL")
        impl_lib.impl("scale", lambda x, k: x * k, "CPU")
        impl_lib.impl("scale.out", lambda x, k, *, out: out.copy_(x * k), "CPU")
        out = lib.zeros(2)
        result = lib.ops.outlib.scale.out(lib.ones(2), 3.0, out=out)
        assert result is out and out.tolist() == [3.0, 3.0]
        assert lib.ops.outlib.scale(lib.ones(2), 2.0).tolist() == [2.0, 2.0]
        assert sorted(lib.ops.outlib.scale.overloads()) == ["default", "out"]
        # The packet picks the overload by the arguments, as torch's does: out= reaches scale.out.
        out = lib.zeros(2)
        assert lib.ops.outlib.scale(lib.ones(2), 4.0, out=out) is out and out.tolist() == [4.0, 4.0]
    # The out= overload declares its mutation, so opcheck's schema check passes; an IMPL library defines nothing.
    assert opcheck(fb.ops.outlib.scale.out, (fb.ones(2), 2.0), {"out": fb.zeros(2)}, test_utils="test_schema")
    with pytest.raises(RuntimeError, match=r"\[Library.define\] a Library\('outlib', 'IMPL'\) cannot define"):
        fb.library.Library("outlib", "IMPL").define("other(Tensor x) -> Tensor")


def test_op_without_tensor_arguments_dispatches_on_its_device_argument():
    @custom_op("testlib::arange3", mutates_args=(), device_types="cpu")
    def arange3(device: fb.device) -> fb.Tensor:
        return fb.arange(3.0)

    @arange3.register_kernel("sim")
    def _(device):
        return fb.arange(3.0, device=device) * 10

    arange3.register_fake(lambda device: fb.empty(3, device="meta"))
    assert str(arange3._opoverload._schema) == "testlib::arange3(Device device) -> Tensor"
    assert arange3(fb.device("cpu")).tolist() == [0.0, 1.0, 2.0]
    assert arange3("sim:1").cpu().tolist() == [0.0, 10.0, 20.0]
    assert arange3("meta").shape == (3,)
    with pytest.raises(ValueError, match=r"\[testlib::no_args\] an operator without Tensor arguments needs a `device"):

        @custom_op("testlib::no_args", mutates_args=(), device_types="cpu")
        def no_args(n: int) -> fb.Tensor:
            return fb.zeros(n)


def test_packet_picks_the_overload_by_the_arguments(libs):
    # Overloads told apart by a tensor or a number in one slot, and no default among them: torch's packet
    # resolves each call by its arguments; so does flambeau's.
    for lib in (fb, torch):
        m = libs(lib, "pick")
        m.define("shift.Tensor(Tensor x, Tensor other) -> Tensor")
        m.define("shift.Scalar(Tensor x, float other) -> Tensor")
        m.impl("shift.Tensor", lambda x, other: x + other, "CPU")
        m.impl("shift.Scalar", lambda x, other: x - other, "CPU")
        assert lib.ops.pick.shift(lib.ones(2), lib.ones(2)).tolist() == [2.0, 2.0]
        assert lib.ops.pick.shift(lib.ones(2), 3.0).tolist() == [-2.0, -2.0]
        assert lib.ops.pick.shift(lib.ones(2), other=lib.ones(2)).tolist() == [2.0, 2.0]
        # With a default among them, told apart from another overload by a value's kind only.
        m.define("scale(Tensor x, Tensor k) -> Tensor")
        m.define("scale.Scalar(Tensor x, float k) -> Tensor")
        m.impl("scale", lambda x, k: x * k, "CPU")
        m.impl("scale.Scalar", lambda x, k: x * k + 1, "CPU")
        assert lib.ops.pick.scale(lib.ones(2), lib.ones(2) * 3).tolist() == [3.0, 3.0]
        assert lib.ops.pick.scale(lib.ones(2), 3.0).tolist() == [4.0, 4.0]
    # A number slot given a string: that overload's own binding names the argument.
    with pytest.raises(TypeError, match=r"\[pick::shift\] argument 'other' \(position 1\) must be float, got str"):
        fb.ops.pick.shift(fb.ones(2), "a")
    with pytest.raises(
        TypeError,
        match=r"\[pick::shift\] no overload takes the arguments \(Tensor, Tensor, scale=float\); its overloads "
        r"are: pick::shift.Tensor\(Tensor x, Tensor other\) -> Tensor; pick::shift.Scalar\(Tensor x, float other\)",
    ):
        fb.ops.pick.shift(fb.ones(2), fb.ones(2), scale=1.0)


# ---- register_autocast ----


def _autocast_op(lib, ns):
    """An op recording the dtypes its kernel sees, registered for cpu autocast to float16."""
    seen = []

    @lib.library.custom_op(f"{ns}::f", mutates_args=(), schema="(Tensor x, Tensor n, Tensor[] ys) -> Tensor")
    def f(x, n, ys):
        seen.append((x.dtype, n.dtype, [y.dtype for y in ys], lib.is_autocast_enabled("cpu")))
        return x.clone()

    lib.library.register_autocast(f"{ns}::f", "cpu", lib.float16)
    return f, seen


def test_register_autocast_casts_floating_inputs_as_torch():
    def run(lib, ns):
        f, seen = _autocast_op(lib, ns)
        x, n = lib.ones(2), lib.ones(2, dtype=lib.int64)
        dtypes = [f(x, n, [x, x.double()]).dtype]
        with lib.autocast("cpu", dtype=lib.bfloat16):
            dtypes.append(f(x, n, [x, x.double()]).dtype)
            with lib.autocast("cpu", enabled=False):
                dtypes.append(f(x, n, [x]).dtype)
        with lib.autocast("cpu", dtype=lib.bfloat16):  # grad mode on and an input requiring grad
            dtypes.append(f(lib.ones(2, requires_grad=True), n, []).dtype)

        def name(d):
            return str(d).split(".")[1]

        return [name(d) for d in dtypes], [(name(a), name(b), [name(c) for c in cs], on) for a, b, cs, on in seen]

    ours, theirs = run(fb, "fb_autocast_ns"), run(torch, "th_autocast_ns")
    assert ours == theirs
    assert ours[0] == ["float32", "float16", "float32", "float16"]


def test_register_autocast_errors_and_library_destroy():
    lib = Library("fb_autocast_lib", "DEF")
    lib.define("g(Tensor x) -> Tensor")
    lib.impl("g", lambda x: x * 1, "CPU")
    with pytest.raises(ValueError, match="Device type 'sim' does not support autocast."):
        fb.library.register_autocast("fb_autocast_lib::g", "sim", fb.float16)
    with pytest.raises(TypeError, match="cast_inputs must be a dtype"):
        fb.library.register_autocast("fb_autocast_lib::g", "cpu", 3)
    fb.library.register_autocast("fb_autocast_lib::g", "cpu", fb.bfloat16, lib=lib)
    g = fb.ops.fb_autocast_lib.g
    with fb.autocast("cpu", dtype=fb.bfloat16):
        assert g(fb.ones(1)).dtype == fb.bfloat16
    lib._destroy()
    lib2 = Library("fb_autocast_lib", "DEF")
    lib2.define("g(Tensor x) -> Tensor")
    lib2.impl("g", lambda x: x * 1, "CPU")
    with fb.autocast("cpu", dtype=fb.bfloat16):
        assert fb.ops.fb_autocast_lib.g(fb.ones(1)).dtype == fb.float32  # the rule went with its library
    lib2._destroy()
