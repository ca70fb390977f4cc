"""Asynchronous kernels on the simulated device (Note [Asynchronous sim kernels]).

Each covered op family is launched while its stream is held on a latch
(`sim.block_stream`): the call must return at once (an op that waited would
hang here, and `_sync_ops` would count it), the stream must still be busy,
and after `synchronize` the results must match the same op on the cpu (values,
shape, dtype, device). Freed inputs of queued kernels must stay valid (Note
[Stream-ordered reuse]: the sim memory's poison is enqueued in stream order).
"""

import flambeau_core as fc
import flambeau_sim as sim
import numpy as np
import pytest
from flambeau_sim import _C

S = sim.register(num_devices=2)


@pytest.fixture(autouse=True)
def _quiet_streams():
    yield
    for i in range(S.device_count()):
        S.synchronize(i)
    S.set_device(0)
    for i in range(S.device_count()):
        S.set_stream(S.default_stream(i))


def _sync_counts():
    return dict(_C._sync_ops())


def _launched_async(fn, *args, device="sim:0"):
    """Runs fn(*args) while the device's current stream is latched; returns its result after synchronize."""
    stream = S.current_stream(device)
    before = _sync_counts()
    latch = sim.block_stream(stream)
    try:
        result = fn(*args)
        waited = {k: v - before.get(k, 0) for k, v in _sync_counts().items() if v != before.get(k, 0)}
        assert waited == {}, f"ran synchronously: {waited}"
        assert stream.query() is False  # the work is queued behind the latch
    finally:
        latch.release()
    S.synchronize()
    return result


def _check(result, expected, rtol=1e-6, atol=1e-6):
    assert result.device == "sim:0", result.device
    assert result.dtype == expected.dtype and tuple(result.shape) == tuple(expected.shape)
    got = np.array(result.cpu().tolist(), dtype=np.float64)
    want = np.array(expected.tolist(), dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    assert not np.isnan(got).any() or np.isnan(want).any()


def _rand(*shape, dtype=fc.float32, seed=0):
    rng = np.random.default_rng(seed)
    return fc.tensor(rng.standard_normal(shape).tolist(), dtype=dtype)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_elementwise_unary_and_binary_with_broadcasting_and_promotion(dtype):
    a, b = _rand(4, 1, 5, dtype=dtype), _rand(3, 1, seed=1, dtype=dtype)
    i = fc.arange(5)  # int64: promotes to the float dtype
    sa, sb, si = a.to("sim"), b.to("sim"), i.to("sim")
    cases = [
        (lambda x, y, k: x.exp(), (a, b, i)),
        (lambda x, y, k: (x + y).relu(), (a, b, i)),
        (lambda x, y, k: x * y - k, (a, b, i)),
        (lambda x, y, k: x / 3 + 2.5, (a, b, i)),  # wrapped numbers keep the tensor's dtype
        (lambda x, y, k: fc.where(x > y, x, k), (a, b, i)),
        (lambda x, y, k: (x >= 0) & (y < 0.5), (a, b, i)),
        (lambda x, y, k: fc.sigmoid(x).tanh().clamp(-0.5, 0.5), (a, b, i)),
        (lambda x, y, k: x.transpose(0, 2).abs(), (a, b, i)),  # non-contiguous input
        (lambda x, y, k: fc.div(x, y, rounding_mode="floor"), (a, b, i)),
        (lambda x, y, k: fc.div(k, 2, rounding_mode="trunc"), (a, b, i)),  # int64 stays int64
    ]
    for fn, (x, y, k) in cases:
        expected = fn(x, y, k)
        _check(_launched_async(fn, sa, sb, si), expected)


def test_fills_and_in_place_ops():
    def run(t):
        t.fill_(2.0)
        t.mul_(3)
        t.add_(fc.arange(4, dtype=fc.float32, device=t.device), alpha=2)
        t[1].zero_()  # a view: the kernel writes through it
        return t

    t = fc.empty(3, 4, device="sim")
    v = t._version
    out = _launched_async(run, t)
    assert out is t and t._version > v
    _check(t, run(fc.empty(3, 4)))


def test_structured_ops_write_their_output_asynchronously():
    # Note [Structured kernels]: the functional, out= and in-place forms enqueue one out kernel.
    a, b = _rand(3, 4), _rand(4, seed=1)
    sa, sb = a.to("sim"), b.to("sim")
    _check(_launched_async(lambda x: fc.sin(x), sa), fc.sin(a))
    out = fc.empty(3, 4, device="sim")
    assert _launched_async(lambda x, y: fc.add(x, y, alpha=2, out=out), sa, sb) is out
    _check(out, fc.add(a, b, alpha=2))
    flags = fc.empty(3, 4, dtype=fc.bool, device="sim")
    _check(_launched_async(lambda x, y: fc.lt(x, y, out=flags), sa, sb), fc.lt(a, b))
    t = a.clone().to("sim")
    v = t._version
    assert _launched_async(lambda x: x.erf_(), t) is t and t._version > v
    _check(t, fc.erf(a))
    assert _launched_async(lambda x, y: x.div_(y), t, sb) is t
    _check(t, fc.erf(a) / b)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_matrix_products(dtype):
    a, b = _rand(5, 7, dtype=dtype), _rand(7, 3, seed=1, dtype=dtype)
    ba, bb = _rand(2, 5, 7, seed=2, dtype=dtype), _rand(2, 7, 3, seed=3, dtype=dtype)
    v = _rand(7, seed=4, dtype=dtype)
    w, bias = _rand(3, 7, seed=5, dtype=dtype), _rand(3, seed=6, dtype=dtype)
    tol = 1e-5 if dtype == fc.float32 else 1e-12
    for fn, args in (
        (fc.mm, (a, b)),
        (fc.bmm, (ba, bb)),
        (fc.matmul, (ba, b)),  # batch broadcast
        (fc.matmul, (a, v)),  # matrix @ vector
        (fc.matmul, (v, v)),  # dot: 0-dim
        (lambda x, y: x.t() @ y.t(), (b, a)),  # non-contiguous operands
        (fc.linear, (ba, w, bias)),
    ):
        expected = fn(*args)
        _check(_launched_async(fn, *(t.to("sim") for t in args)), expected, rtol=tol, atol=tol)


def test_reductions_over_dims():
    x = _rand(4, 5, 6)
    sx = x.to("sim")
    for fn in (
        lambda t: t.sum(),
        lambda t: t.sum(dim=1),
        lambda t: t.sum(dim=(0, 2), keepdim=True),
        lambda t: t.mean(dim=-1),
        lambda t: t.sum(dim=0, dtype=fc.float64),
        lambda t: t.amax(dim=(1,)),
        lambda t: t.amin(dim=2, keepdim=True),
        lambda t: t.logsumexp(dim=1),
        lambda t: (t > 0).sum(dim=1),  # bool -> int64
        lambda t: t.var(dim=1),
        lambda t: t.std(dim=(0, 2), keepdim=True, correction=0),
    ):
        _check(_launched_async(fn, sx), fn(x), rtol=1e-5, atol=1e-5)


def test_softmax_and_log_softmax():
    x = _rand(3, 4, 5)
    for fn in (
        lambda t: fc.softmax(t, 1),
        lambda t: fc.log_softmax(t, -1),
        lambda t: fc.log_softmax(t, 0, dtype=fc.float64),
        lambda t: t.cumsum(2),
    ):
        _check(_launched_async(fn, x.to("sim")), fn(x), rtol=1e-5, atol=1e-6)


def test_losses_and_their_backward_ops():
    logits, target = _rand(6, 4), fc.tensor([0, 3, 1, 1, 2, 0])
    y = _rand(6, 4, seed=9)
    sl, st, sy = logits.to("sim"), target.to("sim"), y.to("sim")
    loss, lse = fc._C._cross_entropy(logits, target)
    sloss, slse = _launched_async(fc._C._cross_entropy, sl, st)
    _check(sloss, loss, rtol=1e-5)
    _check(slse, lse, rtol=1e-5)
    grad = fc.tensor(1.0)
    fn = fc._C._cross_entropy_backward
    _check(
        _launched_async(fn, grad.to("sim"), sl, st, slse, None, 1, -100, 0.0),
        fn(grad, logits, target, lse, None, 1, -100, 0.0),
        rtol=1e-5,
    )
    _check(_launched_async(fc.mse_loss, sl, sy), fc.mse_loss(logits, y), rtol=1e-5)
    _check(_launched_async(fc.mse_loss, sl, sy, 0), fc.mse_loss(logits, y, 0), rtol=1e-5)
    _check(_launched_async(fc.threshold_backward, sy, sl, 0.0), fc.threshold_backward(y, logits, 0.0), rtol=1e-6)


def test_a_freed_input_is_read_before_its_block_is_reused_on_the_same_stream():
    x = fc.full((4096,), 2.0, device="sim")
    address = x.data_ptr()
    latch = sim.block_stream(S.current_stream())
    try:
        y = x.exp()  # queued: reads x
        del x  # the block returns to the stream's pool; its poison is queued behind exp
        z = fc.empty(4096, device="sim")
        assert z.data_ptr() == address  # same stream: reused at once, as CUDA's allocator does
        z.fill_(7.0)  # queued after the poison
    finally:
        latch.release()
    S.synchronize()
    assert np.allclose(y.cpu().tolist(), np.exp(2.0)) and z.cpu().tolist() == [7.0] * 4096


def test_a_freed_block_is_still_poisoned_for_later_readers():
    x = fc.full((1024,), 1.0, device="sim")
    view = x[:8]
    address = x.data_ptr()
    del x, view
    S.synchronize()
    z = fc.empty(1024, device="sim")
    assert z.data_ptr() == address
    assert all(np.isnan(z.cpu().tolist()))  # fresh-from-cache memory is garbage, not the old values


def test_errors_that_do_not_depend_on_values_are_raised_at_the_call():
    a = fc.ones(2, 3, device="sim")
    with pytest.raises(ValueError, match=r"mm"):
        fc.mm(a, a)
    with pytest.raises((IndexError, ValueError), match=r"dim"):
        a.sum(dim=5)
    with pytest.raises(RuntimeError, match=r"\[add\] .*same device.*sim:0 and sim:1"):
        a + fc.ones(2, 3, device="sim:1")
    with pytest.raises(TypeError):
        fc.bitwise_and(a, a)
    with pytest.raises(ValueError, match=r"\[div\] expected rounding_mode"):
        fc.div(a, a, rounding_mode="up")
    with pytest.raises(TypeError, match=r"\[var\] var and std only support floating point"):
        fc.var(fc.ones(3, dtype=fc.int64, device="sim"))
    with pytest.raises(RuntimeError, match=r"add_"):
        fc.ones(3, device="sim").expand(2, 3).add_(1)  # overlapping elements: checked at the call


def test_an_error_found_in_the_data_is_raised_by_the_next_synchronous_op(capfd):
    logits, bad = fc.ones(2, 3, device="sim"), fc.tensor([0, 7], device="sim")
    loss, _ = fc._C._cross_entropy(logits, bad)  # the index is checked by the kernel, on the stream
    with pytest.raises(RuntimeError, match=r"asynchronous kernel failed earlier on sim:0.*cross_entropy"):
        loss.item()
    assert "flambeau sim: a kernel on sim:0" in capfd.readouterr().err
    assert fc.ones(2, device="sim").sum().item() == 2.0  # reported once; the stream goes on


def test_work_on_a_side_stream_runs_on_that_stream():
    side = S.Stream()
    x = fc.ones(100, device="sim")
    S.synchronize()
    with S.stream(side):
        latch = sim.block_stream(side)
        try:
            y = x * 3  # queued on the side stream, the current one
            assert side.query() is False and S.default_stream(0).query() is True
        finally:
            latch.release()
    side.synchronize()
    assert y.cpu().tolist() == [3.0] * 100


def test_ops_reading_indices_from_values_wait_and_raise_at_the_call():
    # index_values: in the table (gather, index_select, embedding, ...): an index out of range is an
    # IndexError at the call, as on the cpu, not a later error of the stream.
    x = fc.tensor([[3.0, 1.0, 2.0]], device="sim")
    before = _sync_counts().get("gather", 0)
    assert fc.gather(x, 1, fc.tensor([[2, 0]], device="sim")).cpu().tolist() == [[2.0, 3.0]]
    assert _sync_counts().get("gather", 0) == before + 1
    with pytest.raises(IndexError, match=r"^\[gather\] index 3 is out of bounds"):
        fc.gather(x, 1, fc.tensor([[3]], device="sim"))


def test_lapack_ops_raising_for_their_values_wait_and_raise_at_the_call():
    # value_errors: in the table (the LAPACK ops whose kernels raise for a singular matrix, one that is not
    # positive-definite, ...): the error is raised at the call, with the cpu's type and message (and by
    # PyTorch's CUDA linalg), and the _ex forms catch it to report the info. _linalg_qr raises for no value:
    # it is launched without waiting.
    singular = [[1.0, 2.0], [2.0, 4.0]]
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(np.array(singular))
    a, host = fc.tensor(singular, dtype=fc.float64, device="sim"), fc.tensor(singular, dtype=fc.float64)
    calls = (
        ("_linalg_inv", lambda x: fc.linalg.inv(x)),
        ("_linalg_cholesky", lambda x: fc.linalg.cholesky(x)),
        ("_linalg_solve", lambda x: fc.linalg.solve(x, x)),
    )
    for name, call in calls:
        with pytest.raises(RuntimeError) as on_cpu:
            call(host)
        before = _sync_counts().get(name, 0)
        with pytest.raises(type(on_cpu.value)) as on_sim:
            call(a)
        assert str(on_sim.value) == str(on_cpu.value)
        assert _sync_counts().get(name, 0) == before + 1, name  # it waited: the host fallback
    before = _sync_counts().get("_linalg_lu_factor_ex", 0)
    _, pivots, info = fc.linalg.lu_factor_ex(a)
    assert _sync_counts().get("_linalg_lu_factor_ex", 0) == before + 1
    assert info.cpu().tolist() == 2 and pivots.cpu().tolist() == [2, 2]  # LAPACK's: U[1, 1] is zero
    q, r = _launched_async(fc.linalg.qr, a)
    nq, nr = np.linalg.qr(np.array(singular))
    np.testing.assert_allclose(np.array(q.cpu().tolist()), nq, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.array(r.cpu().tolist()), nr, rtol=1e-12, atol=1e-12)


def test_uncovered_ops_still_run_through_the_host_fallback():
    # nonzero's result shape depends on the values: it has no meta step to launch from.
    x = fc.tensor([3.0, 0.0, 2.0], device="sim")
    before = _sync_counts().get("nonzero", 0)
    assert fc.nonzero(x).cpu().tolist() == [[0], [2]]
    assert _sync_counts().get("nonzero", 0) == before + 1


def test_every_op_with_a_meta_step_is_launched_without_waiting():
    # Note [Ops launched from the meta step]: sort, the reductions with indices, the norms and
    # cumprod are launched from the table's list, not from a hand-kept one.
    x = fc.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], device="sim")
    before = dict(_sync_counts())
    values, indices = fc.sort(x, dim=1)
    m = fc.max(x, dim=1)
    ln = fc.native_layer_norm(x, [3], None, None, 1e-5)[0]
    c = fc.cumprod(x, 1)
    assert _sync_counts() == before  # nothing waited
    assert values.cpu().tolist() == [[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]]
    assert indices.cpu().tolist() == [[1, 2, 0], [2, 0, 1]]
    assert m[0].cpu().tolist() == [3.0, 4.0] and m[1].cpu().tolist() == [0, 1]
    assert c.cpu().tolist() == [[3.0, 3.0, 6.0], [0.5, 2.0, -2.0]]
    expected = fc.native_layer_norm(x.cpu(), [3], None, None, 1e-5)[0]
    assert fc.allclose(ln.cpu(), expected)
