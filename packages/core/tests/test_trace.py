"""The op recorder (flambeau_core._trace, Note [Op recorder]): what it reports, and what it leaves out."""

import threading

import flambeau_core as fc
import pytest
from flambeau_core._trace import OpCall, OpRecorder, record_ops


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
