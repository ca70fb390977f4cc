"""The op recorder (flambeau_core._trace, Note [Op recorder]): what it reports, and what it leaves out."""

import threading

import flambeau_core as fc
import pytest
from flambeau_core._trace import OpCall, OpRecorder, call_info, record_ops


def test_functions_methods_and_operators_are_reported_with_their_arguments():
    a, b = fc.ones(2, 3), fc.full((2, 3), 2.0)
    with OpRecorder() as rec:
        c = fc.add(a, b, alpha=2)
        d = c.mul(3)
        e = d - 1
        f = 2 - e
        g = -f
    assert [call.name for call in rec.calls] == ["add", "mul", "sub", "sub", "neg"]
    add, mul, sub, rsub, neg = rec.calls
    assert add.args == (a, b) and add.args[0] is a and add.kwargs == {"alpha": 2} and add.result is c
    assert mul.args[0] is c and mul.args[1] == 3 and mul.kwargs == {} and mul.result is d
    assert sub.args[0] is d and sub.args[1] == 1 and sub.result is e
    # A reflected operator reports its operands in the op's order: 2 - e is sub(2, e).
    assert rsub.args[0] == 2 and rsub.args[1] is e and rsub.result is f
    assert neg.args == (f,) and neg.result is g
    assert g.tolist() == [[12.0] * 3] * 2


def test_in_place_operator_reports_the_in_place_op_and_returns_self():
    a = fc.zeros(3)
    with OpRecorder() as rec:
        a += 1
    assert [(c.name, c.args[0] is a, c.args[1], c.result is a) for c in rec.calls] == [("add_", True, 1, True)]
    assert a.tolist() == [1.0, 1.0, 1.0]


def test_hand_written_view_bindings_report_positional_arguments():
    x = fc.arange(24.0)
    with OpRecorder() as rec:
        y = x.view(2, 3, 4)
        z = fc.flatten(y, 1)
        w = y.permute(2, 0, 1).reshape(4, 6)
        v = fc.transpose(w, 0, 1).unsqueeze(0).squeeze(0)
        u = w[1]
    names = [c.name for c in rec.calls]
    assert names == ["view", "flatten", "permute", "reshape", "transpose", "unsqueeze", "squeeze", "__getitem__"]
    assert rec.calls[0].args[1:] == (2, 3, 4) and rec.calls[0].result is y
    assert rec.calls[1].args[0] is y and rec.calls[1].args[1:] == (1, -1) and rec.calls[1].result is z
    assert rec.calls[2].args[1:] == (2, 0, 1)
    assert rec.calls[-2].result is v and rec.calls[-1].result is u
    assert z.shape == (2, 12) and v.shape == (6, 4) and u.shape == (6,)


def test_ops_run_inside_other_ops_are_not_reported():
    # linear is one op for Python even though C++ composes it from matmul and add.
    x, w, bias = fc.ones(4, 3), fc.ones(5, 3), fc.zeros(5)
    with OpRecorder() as rec:
        y = fc.linear(x, w, bias)
    assert [c.name for c in rec.calls] == ["linear"]
    assert y.tolist() == [[3.0] * 5] * 4


def test_calls_made_by_the_callback_are_not_reported():
    seen = []

    def callback(name, args, kwargs, result):
        seen.append(name)
        result.sum()  # an op inside the callback: not reported

    with record_ops(callback):
        fc.ones(2).exp()
    assert seen == ["exp"]


def test_recorders_nest_and_stop_at_exit():
    outer, inner = OpRecorder(), OpRecorder()
    with outer:
        fc.ones(1).exp()
        with inner:
            fc.ones(1).log()
        fc.ones(1).sin()
    fc.ones(1).cos()
    assert [c.name for c in outer.calls] == ["exp", "sin"]
    assert [c.name for c in inner.calls] == ["log"]
    assert fc._C._op_recorder() is None


def test_recording_is_per_thread():
    other_names = []

    def work():
        with record_ops(lambda name, *rest: other_names.append(name)):
            fc.ones(1).tanh()

    with OpRecorder() as rec:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        fc.ones(1).sigmoid()
    assert other_names == ["tanh"]
    assert [c.name for c in rec.calls] == ["sigmoid"]


def test_a_failing_op_is_not_reported_and_its_error_propagates():
    with OpRecorder() as rec:
        with pytest.raises(fc.FlambeauError, match="mm"):
            fc.mm(fc.ones(2, 3), fc.ones(2, 3))
    assert rec.calls == []


def test_a_callback_error_propagates_from_the_op_call():
    def callback(name, args, kwargs, result):
        raise KeyError(f"no {name}")

    with record_ops(callback):
        with pytest.raises(KeyError, match="no exp"):
            fc.ones(1).exp()
        with pytest.raises(KeyError, match="no view"):
            fc.ones(2).view(1, 2)
        with pytest.raises(KeyError, match="no add"):
            fc.ones(1) + 1
    assert fc._C._op_recorder() is None


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"\[record_ops\] expected a callable, got int"):
        with record_ops(3):
            pass
    with pytest.raises(TypeError, match=r"\[_set_op_recorder\] expected a callable or None"):
        fc._C._set_op_recorder("not callable")
    rec = OpRecorder()
    with rec:
        with pytest.raises(RuntimeError, match=r"\[OpRecorder\] is already recording"):
            rec.__enter__()


def test_op_call_fields():
    call = OpCall("add", (1, 2), {}, 3)
    assert (call.name, call.args, call.kwargs, call.result) == ("add", (1, 2), {}, 3)
    assert (call.method, call.before) == (False, None)


def _one_call(rec: OpRecorder) -> OpCall:
    assert len(rec.calls) == 1, [c.name for c in rec.calls]
    return rec.calls[0]


def test_method_and_function_calls_are_told_apart():
    # where is the op whose two forms order their arguments differently.
    x, y = fc.tensor([1.0, -2.0]), fc.zeros(2)
    with OpRecorder() as rec:
        c = x > 0
        f = fc.where(c, x, y)
        m = x.where(c, y)
        n = x.narrow(0, 0, 1)
        fn = fc.narrow(x, 0, 0, 1)
        r = fc.reshape(x, (2, 1))
        s = 2 - x
    gt, where_f, where_m, narrow_m, narrow_f, reshape_f, rsub = rec.calls
    assert (where_f.name, where_f.method, where_f.args[0] is c, where_f.args[1] is x, where_f.result is f) == (
        "where", False, True, True, True,
    )  # fmt: skip
    assert (where_m.name, where_m.method, where_m.args[0] is x, where_m.args[1] is c, where_m.result is m) == (
        "where", True, True, True, True,
    )  # fmt: skip
    assert f.tolist() == m.tolist() == [1.0, 0.0]
    assert (narrow_m.method, narrow_m.args[1:], narrow_m.result is n) == (True, (0, 0, 1), True)
    assert (narrow_f.method, narrow_f.args[0] is x, narrow_f.args[1:], narrow_f.result is fn) == (
        False, True, (0, 0, 1), True,
    )  # fmt: skip
    assert (reshape_f.method, reshape_f.result is r) == (False, True)
    # Operators report the function's operand order, so they are not method calls.
    assert (gt.method, rsub.method, rsub.args[0], rsub.args[1] is x, rsub.result is s) == (False, False, 2, True, True)


@pytest.mark.parametrize(
    ("name", "write", "expected"),
    [
        ("__setitem__", lambda x: x.__setitem__(1, 5.0), [1.0, 5.0, 3.0]),
        ("fill_", lambda x: x.fill_(7.0), [7.0, 7.0, 7.0]),
        ("index_put_", lambda x: x.index_put_((fc.tensor([2]),), fc.tensor(9.0)), [1.0, 2.0, 9.0]),
    ],
)
def test_writes_report_self_as_their_result_and_the_value_before(name, write, expected):
    x = fc.tensor([1.0, 2.0, 3.0])
    with OpRecorder() as rec:
        write(x)
    call = _one_call(rec)
    assert (call.name, call.args[0] is x, call.result is x, call.method) == (name, True, True, True)
    assert call.before is not x and call.before.tolist() == [1.0, 2.0, 3.0]
    assert x.tolist() == expected


def test_setitem_reports_the_index_and_value_as_written():
    x, mask, v = fc.zeros(2, 3), fc.tensor([True, False]), fc.ones(3)
    with OpRecorder() as rec:
        x[mask] = v
        x[:, 1] = 4.0
    first, second = rec.calls
    assert first.name == "__setitem__" and first.args[1] is mask and first.args[2] is v
    assert second.args[1] == (slice(None), 1) and second.args[2] == 4.0 and second.result is x
    assert x.tolist() == [[1.0, 4.0, 1.0], [0.0, 4.0, 0.0]]


def test_index_put_as_a_function_and_out_of_place():
    x, idx, v = fc.zeros(3), fc.tensor([0, 2]), fc.tensor([1.0, 2.0])
    with OpRecorder() as rec:
        y = x.index_put((idx,), v)
        z = fc.index_put_(x, (idx,), v, accumulate=True)
    put, put_ = rec.calls
    # The out-of-place form is no write: a new tensor, no value before.
    assert (put.name, put.method, put.result is y, put.before, put.args[3]) == ("index_put", True, True, None, False)
    assert (put_.name, put_.method, put_.args[0] is x, put_.result is x, z is x) == (
        "index_put_", False, True, True, True,
    )  # fmt: skip
    assert put_.args[1][0] is idx and put_.args[2] is v and put_.args[3] is True
    assert put_.before.tolist() == [0.0, 0.0, 0.0] and x.tolist() == y.tolist() == [1.0, 0.0, 2.0]


def test_random_fills_and_requires_grad_are_reported():
    x = fc.zeros(4)
    with OpRecorder() as rec:
        x.uniform_(2.0, 3.0)
        x.normal_(0.0, 1.0)
        x.requires_grad_(False)  # core alone (no autograd) keeps tensors without gradients
    uniform, normal, rg = rec.calls
    assert (uniform.name, uniform.args[1:3], uniform.result is x, uniform.before.tolist()) == (
        "uniform_", (2.0, 3.0), True, [0.0] * 4,
    )  # fmt: skip
    assert (normal.name, normal.result is x, normal.method) == ("normal_", True, True)
    assert normal.before.tolist() != [0.0] * 4  # uniform_'s values, which normal_ then replaced
    assert (rg.name, rg.args[0] is x, rg.args[1], rg.result is x, rg.before) == (
        "requires_grad_",
        True,
        False,
        True,
        None,
    )
    assert not x.requires_grad


def test_narrow_select_unbind_expand_as_are_reported():
    x, like = fc.arange(6.0).reshape(2, 3), fc.zeros(4, 2, 3)
    with OpRecorder() as rec:
        n = x.narrow(1, 1, 2)
        s = x.select(0, 1)
        sf = fc.select(x, 1, 0)
        u = x.unbind(1)
        uf = fc.unbind(x)
        e = x.expand_as(like)
    names = [(c.name, c.method) for c in rec.calls]
    assert names == [
        ("narrow", True), ("select", True), ("select", False), ("unbind", True), ("unbind", False), ("expand_as", True),
    ]  # fmt: skip
    results = [c.result for c in rec.calls]
    assert all(r is o for r, o in zip(results, [n, s, sf, u, uf, e], strict=True))
    assert rec.calls[3].args == (x, 1) and rec.calls[4].args == (x, 0) and rec.calls[5].args[1] is like
    assert [t.tolist() for t in u] == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] and s.tolist() == [3.0, 4.0, 5.0]


def test_transpose_properties_are_reported():
    x = fc.arange(24.0).reshape(2, 3, 4)
    with OpRecorder() as rec:
        t = x.T
        mt = x.mT
    assert [(c.name, c.method, c.args, c.result is r) for c, r in zip(rec.calls, [t, mt], strict=True)] == [
        ("T", True, (x,), True),
        ("mT", True, (x,), True),
    ]
    assert t.shape == (4, 3, 2) and mt.shape == (2, 4, 3)


def test_a_failing_write_is_not_reported():
    x = fc.zeros(2)
    with OpRecorder() as rec:
        with pytest.raises(IndexError):
            x[5] = 1.0
        with pytest.raises(TypeError, match=r"\[index_put_\] indices must be a tuple or list"):
            x.index_put_(fc.tensor([0]), fc.tensor(1.0))
    assert rec.calls == [] and x.tolist() == [0.0, 0.0]


def test_call_info_is_none_outside_a_callback():
    assert call_info() is None
    with OpRecorder():
        assert call_info() is None


def test_iterating_over_a_tensor_is_reported_as_unbind():
    x = fc.arange(6.0).reshape(3, 2)
    with OpRecorder() as rec:
        rows = list(x)
    call = _one_call(rec)
    assert (call.name, call.args, call.method) == ("unbind", (x, 0), True)
    assert len(rows) == 3 and all(r is t for r, t in zip(rows, call.result, strict=True))
