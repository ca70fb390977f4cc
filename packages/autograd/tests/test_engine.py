"""The engine: accumulation, retain_graph, create_graph, inputs=, hooks, errors."""

from __future__ import annotations

import gc
import weakref

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch


def test_accumulates_into_leaves_over_two_backward_calls():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    g1 = x.grad
    (x * 3.0).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    # like PyTorch, the second backward accumulates in place into the same tensor
    assert x.grad is g1
    x.grad = None
    (x * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_is_not_an_alias_of_the_incoming_gradient():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    g = fb_tensor([1.0, 1.0])
    (x * 1.0).backward(g)
    x.grad.add_(fb_tensor([10.0, 10.0]))
    assert g.tolist() == [1.0, 1.0]


def test_leaf_used_twice_sums_gradients():
    x = fb_tensor([3.0], requires_grad=True)
    y = x * x + x.exp() + x
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [6.0 + np.exp(3.0) + 1.0])


def test_retain_graph_error_and_retained_second_backward():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time.*retain_graph=True"):
        y.backward()
    x.grad = None
    z = (x.exp()).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(to_np(x.grad), 2 * np.exp([1.0, 2.0]))


def test_create_graph_second_derivative_matches_torch():
    vals = [0.3, -1.2, 2.0]
    x = fb_tensor(vals, requires_grad=True)
    tx = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    for fn in (
        lambda t: (t * t * t).sum(),
        lambda t: t.tanh().sum(),
        lambda t: (t.sigmoid() * t.exp()).sum(),
        lambda t: t.log_softmax(0).max(),
    ):
        (g,) = ag.grad(fn(x), x, create_graph=True)
        (tg,) = torch.autograd.grad(fn(tx), tx, create_graph=True)
        np.testing.assert_allclose(to_np(g), tg.detach().numpy(), rtol=1e-10)
        assert g.requires_grad
        (gg,) = ag.grad(g.sum(), x)
        (tgg,) = torch.autograd.grad(tg.sum(), tx)
        np.testing.assert_allclose(to_np(gg), tgg.numpy(), rtol=1e-9, atol=1e-12)


def test_backward_create_graph_leaves_grad_with_history():
    x = fb_tensor([2.0], requires_grad=True)
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = ag.grad(x.grad.sum(), x)
    assert gg.tolist() == [12.0]


def test_gradgradcheck():
    x = fb_tensor([0.5, 1.5, -0.3], requires_grad=True)
    w = fb_tensor([[0.2, -0.1], [0.4, 0.3], [1.0, -2.0]], requires_grad=True)
    assert ag.gradgradcheck(lambda a, b: (a.unsqueeze(0).matmul(b)).tanh(), (x, w))
    assert ag.gradgradcheck(lambda a: (a * a).log_softmax(0), (x,))


def test_gradcheck_detects_a_wrong_gradient():
    class Wrong(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    x = fb_tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ag.GradcheckError, match="mismatch"):
        ag.gradcheck(Wrong.apply, (x,))
    assert ag.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_grad_with_inputs_does_not_touch_dot_grad():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    w = fb_tensor([3.0, 4.0], requires_grad=True)
    (gx,) = ag.grad((x * w).sum(), [x])
    assert gx.tolist() == [3.0, 4.0]
    assert x.grad is None and w.grad is None


def test_grad_of_intermediate_and_multiple_outputs():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    y1, y2 = (h * h).sum(), h.exp().sum()
    gh, gx = ag.grad([y1, y2], [h, x], retain_graph=True)
    np.testing.assert_allclose(to_np(gh), 2 * to_np(h) + np.exp(to_np(h)))
    np.testing.assert_allclose(to_np(gx), 2 * to_np(gh))


def test_allow_unused():
    x = fb_tensor([1.0], requires_grad=True)
    z = fb_tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        ag.grad((x * 2.0).sum(), [x, z], retain_graph=True)
    gx, gz = ag.grad((x * 2.0).sum(), [x, z], allow_unused=True)
    assert gx.tolist() == [2.0] and gz is None
    gx, gz = ag.grad((x * 2.0).sum(), [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0]


def test_grad_input_that_does_not_require_grad():
    x = fb_tensor([1.0], requires_grad=True)
    c = fb_tensor([1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        ag.grad((x * c).sum(), [c])


def test_backward_inputs_restricts_accumulation():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    w = fb_tensor([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0]


def test_non_scalar_backward_needs_a_gradient():
    x = fb_tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs.*\(3,\)"):
        (x * 2.0).backward()
    (x * 2.0).backward(fb_tensor([1.0, 0.0, 2.0]))
    assert x.grad.tolist() == [2.0, 0.0, 4.0]
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2.0).backward(fb_tensor([1.0, 0.0]))


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        fb_tensor([1.0]).sum().backward()


def test_version_counter_error_names_op_and_versions():
    a = fb_tensor([1.0, 2.0], requires_grad=True)
    b = a * 1.0
    c = b * b
    b.mul_(2.0)  # b was saved by c's MulBackward0
    msg = r"modified by an inplace operation: \[MulBackward0\] saved version 0, now at version 1"
    with pytest.raises(RuntimeError, match=msg):
        c.sum().backward()


def test_version_counter_error_for_saved_output():
    a = fb_tensor([1.0, 2.0], requires_grad=True)
    y = a.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[ExpBackward0\] saved version 0, now at version 1"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad():
    a = fb_tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.add_(1.0)
    with ag.no_grad():
        a.add_(1.0)  # allowed: optimizer updates
    assert a.tolist() == [2.0, 3.0] and a.is_leaf


def test_inplace_on_untracked_view_not_supported_yet():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    buf = fc.zeros(2, 2, dtype=fc.float64)  # its views are not recorded: buf needs no grad
    with pytest.raises(NotImplementedError, match="view that autograd did not record"):
        buf[0].copy_(x)
    with pytest.raises(NotImplementedError, match="view that autograd did not record"):
        buf[0] = x


def test_inplace_on_view_of_leaf_requiring_grad():
    x = fb_tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2.0)


def _both(fn, *arrays):
    fb_in = [fb_tensor(a, requires_grad=True) for a in arrays]
    th_in = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    fo, to = fn(fb_in, fc), fn(th_in, torch)
    np.testing.assert_allclose(to_np(fo), to.detach().numpy())
    fo.sum().backward()
    to.sum().backward()
    for a, b in zip(fb_in, th_in, strict=True):
        if b.grad is None:
            assert a.grad is None
        else:
            np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-14)


def test_inplace_on_views_matches_torch():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 2))

    def row_mul(t, lib):
        h = t[0] * 2.0
        h[1].mul_(t[0][1:].sum())
        return h * h

    def column_add(t, lib):
        h = t[0] * 2.0  # (exp would save h: modifying it must raise, as in PyTorch)
        h[:, 1:3].add_(t[1])
        return h * t[0]

    def setitem(t, lib):
        h = t[0] * 1.0
        h[:, 0:2] = t[1] * 3.0
        return h.tanh()

    def div_on_transposed(t, lib):
        h = t[0] * 1.0
        h.t()[1].div_(t[0][:, 0].exp())
        return h.sigmoid()

    def base_modified_after_view(t, lib):
        h = t[0] * 1.0
        v = h[1]
        h.mul_(3.0)  # v sees the new values; its history must follow
        return (v * v).sum() + h.sum()

    for fn in (row_mul, column_add, setitem, div_on_transposed):
        _both(fn, x, y)
    _both(base_modified_after_view, x)


def test_inplace_on_view_create_graph_not_supported_yet():
    x = fb_tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1.0
    h[1:].mul_(x[1:])
    with pytest.raises(NotImplementedError, match="create_graph"):
        ag.grad((h * h).sum(), x, create_graph=True)


def test_requires_grad_on_non_leaf_and_int():
    a = fb_tensor([1.0], requires_grad=True)
    b = a * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        b.requires_grad = False
    with pytest.raises(TypeError, match="only floating point tensors can require gradients.*int64"):
        fc.tensor([1, 2]).requires_grad_()
    with pytest.raises(TypeError, match="int64"):
        fc.tensor([1, 2], requires_grad=True)


def test_grad_setter_validates():
    a = fb_tensor([1.0, 2.0], requires_grad=True)
    a.grad = fb_tensor([5.0, 6.0])
    assert a.grad.tolist() == [5.0, 6.0]
    with pytest.raises(RuntimeError, match="shape"):
        a.grad = fb_tensor([1.0])
    with pytest.raises(RuntimeError, match="dtype"):  # RuntimeError, as torch's
        a.grad = fc.tensor([1.0, 2.0], dtype=fc.float32)
    a.grad = None
    assert a.grad is None


def test_grad_fn_graph_structure():
    a = fb_tensor([1.0], requires_grad=True)
    b = fb_tensor([2.0])
    y = (a * b).exp()
    assert y.grad_fn.name() == "ExpBackward0"
    ((mul, nr),) = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and nr == 0
    acc, none = mul.next_functions
    assert acc[0].name() == "AccumulateGrad" and acc[0].variable is a
    assert none == (None, 0)
    assert a.is_leaf and not y.is_leaf and a.grad_fn is None


def test_retain_grad_and_hooks():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.tolist()))
    handle = x.register_hook(lambda g: g * 10.0)
    (h * h).sum().backward()
    assert h.grad.tolist() == [6.0, 12.0]
    assert seen == [[6.0, 12.0]]
    assert x.grad.tolist() == [180.0, 360.0]
    handle.remove()
    x.grad = None
    (x * 1.0).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="doesn't require"):
        fb_tensor([1.0]).register_hook(lambda g: g)


def test_detach():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    d.add_(1.0)  # shares memory with y, bumps the shared version counter
    assert y.tolist() == [3.0, 5.0]
    z = x * 2.0
    z.detach_()
    assert not z.requires_grad and z.grad_fn is None


def test_engine_order_is_by_sequence_number():
    x = fb_tensor([1.0], requires_grad=True)
    order = []
    a = x * 2.0
    b = x * 3.0
    a.register_hook(lambda g: order.append("a"))
    b.register_hook(lambda g: order.append("b"))
    (a + b).sum().backward()
    assert order == ["b", "a"]  # created later, runs first


def test_graph_is_freed_with_its_output():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).exp()
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None


def test_deep_graph_does_not_overflow():
    x = fb_tensor([1.0], requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.5 if _ % 2 else y / 1.5
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [1.0])


def test_node_hooks():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    calls = []

    def post(grad_inputs, grad_outputs):
        calls.append((grad_inputs[0].tolist(), grad_outputs[0].tolist()))
        return (grad_inputs[0] * 2.0, grad_inputs[1])

    handle = y.grad_fn.register_hook(post)
    y.grad_fn.register_prehook(lambda g: g + 1.0)
    y.sum().backward()
    assert calls == [([6.0, 6.0], [2.0, 2.0])]
    assert x.grad.tolist() == [12.0, 12.0]
    handle.remove()


def test_detect_anomaly_names_the_node():
    x = fb_tensor([0.0, 1.0], requires_grad=True)
    with ag.detect_anomaly():
        assert ag.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match=r"SqrtBackward0.*nan"):
            (x.sqrt() * 0.0).sum().backward()
    assert not ag.is_anomaly_enabled()
    (x.sqrt() * 0.0).sum().backward()  # without it, NaN flows silently (as in PyTorch)
    assert np.isnan(to_np(x.grad)[0])


def test_freeing_a_very_deep_graph_does_not_overflow_the_stack():
    x = fb_tensor([1.0], requires_grad=True)
    y = x
    for _ in range(200_000):
        y = y * 1.0
    del y  # would recurse 200k levels deep without the iterative free
    assert x.grad is None


def test_backward_several_outputs_and_non_leaf_inputs():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    y1, y2 = h * h, h.exp()
    ag.backward([y1, y2], [fb_tensor([1.0, 1.0]), fb_tensor([0.5, 0.5])], inputs=[h, x])
    expected_h = 2 * to_np(h) + 0.5 * np.exp(to_np(h))
    np.testing.assert_allclose(to_np(h.grad), expected_h)
    np.testing.assert_allclose(to_np(x.grad), 2 * expected_h)
    with pytest.raises(ValueError, match="2 tensors but 1"):
        ag.backward([y1, y2], [fb_tensor([1.0, 1.0])])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        y1.sum().backward(inputs=[])


def test_data_is_detached_alias():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    d.mul_(2.0)
    assert x.tolist() == [2.0, 4.0] and x.is_leaf


def test_data_assignment_repoints_the_tensor_as_torch():
    # `x.data = y` (weight init, tying, clamping in place of the parameter): x keeps its identity, its autograd
    # state and .grad, and now stands for y's memory, shape and dtype, as in PyTorch
    for lib in (fc, torch):
        x = lib.zeros(2, requires_grad=True)
        (x * 2).sum().backward()
        y = lib.ones(3, dtype=lib.float64)
        x.data = y
        y.add_(1.0)
        assert x.tolist() == [2.0, 2.0, 2.0] and x.dtype == lib.float64
        assert x.requires_grad and x.is_leaf and x.grad.tolist() == [2.0, 2.0]
        x.grad = None  # the old float32 (2,) gradient would not accumulate with the new shape (torch neither)
        (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0, 3.0] and x.grad.dtype == lib.float64
        q = lib.zeros(2)
        q.data = lib.tensor([1, 2])
        assert q.tolist() == [1, 2] and not q.requires_grad
    # the errors, with PyTorch's words
    x = fc.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        x.data = 5
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        x.data = fc.tensor([1, 2])
    with pytest.raises(RuntimeError, match="incompatible tensor type.*cpu and meta"):
        x.data = fc.ones(2, device="meta")
    assert x.tolist() == [0.0, 0.0]


def test_custom_function_with_retain_graph():
    class Square(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2.0 * g * x

    x = fb_tensor([3.0], requires_grad=True)
    y = Square.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [12.0]


def test_inplace_on_expanded_view_raises():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    e = (x * 1.0).unsqueeze(0).expand(3, 2)
    with pytest.raises(RuntimeError, match="expanded view"):
        e.mul_(2.0)


def test_python_api_bad_arguments():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(TypeError, match="tensors must be a Tensor"):
        ag.backward("y")
    with pytest.raises(ValueError, match="1 tensors but 2 grad_outputs"):
        ag.grad(y, x, grad_outputs=[fb_tensor(1.0), fb_tensor(1.0)])
    with pytest.raises(TypeError, match="hook must return a Tensor or None"):
        h = x * 2.0
        h.register_hook(lambda g: "not a tensor")
        h.sum().backward()
    with pytest.raises(RuntimeError, match=r"hook returned a gradient of shape \(3,\)"):
        h = x * 2.0
        h.register_hook(lambda g: fc.ones(3, dtype=fc.float64))
        h.sum().backward()
    with pytest.raises(RuntimeError, match="retain_grad on a tensor that doesn't require grad"):
        fb_tensor([1.0]).retain_grad()
