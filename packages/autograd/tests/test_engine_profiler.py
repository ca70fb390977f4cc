"""The engine's profiler events (Note [Observation]): backward nodes linked to their forward ops, against torch."""

from __future__ import annotations

import json

import flambeau_autograd  # noqa: F401  (registers the Autograd kernels)
import flambeau_core as fc
import torch
from flambeau_core.profiler import profile
from flambeau_core.testing import check_chrome_trace


def _program(lib):
    x = lib.ones(3, 4, requires_grad=True)
    w = lib.ones(4, 2, requires_grad=True)
    y = (x.mm(w) * 2.0).sum()
    y.backward()


def test_backward_nodes_appear_as_in_torch_and_link_to_their_forward_op():
    with profile() as prof:
        _program(fc)
    with torch.profiler.profile() as tprof:
        _program(torch)
    events = prof.events()

    def nodes(evts):
        return sorted(e.name for e in evts if e.name.endswith("Backward0") and not e.name.startswith("autograd::"))

    assert nodes(events) == nodes(tprof.events()) == ["MmBackward0", "MulBackward0", "SumBackward0"]
    evaluations = [e.name for e in events if e.name.startswith("autograd::engine::evaluate_function: ")]
    assert "autograd::engine::evaluate_function: MmBackward0" in evaluations
    forward = {e.name: e for e in events if e.name.startswith("aten::") and e.sequence_nr >= 0}
    backward = {e.name: e for e in events if e.name.endswith("Backward0") and not e.name.startswith("autograd::")}
    # The forward op and the node it made carry one sequence number, as in PyTorch's trace.
    assert forward["aten::mm"].sequence_nr == backward["MmBackward0"].sequence_nr
    assert forward["aten::mul"].sequence_nr == backward["MulBackward0"].sequence_nr
    assert forward["aten::sum"].sequence_nr == backward["SumBackward0"].sequence_nr
    # The backward's own ops nest under the node that ran them.
    mm_node = backward["MmBackward0"]
    assert any(c.name.startswith("aten::") for c in mm_node.cpu_children)
    assert mm_node.cpu_parent.name == "autograd::engine::evaluate_function: MmBackward0"


def test_the_autograd_kernels_second_call_is_one_op():
    x = fc.ones(3, requires_grad=True)
    with profile() as prof:
        x.mul(2.0)
    with torch.profiler.profile() as tprof:
        torch.ones(3, requires_grad=True).mul(2.0)
    assert [e.name for e in prof.events()].count("aten::mul") == 1
    assert [e.name for e in tprof.events()].count("aten::mul") == 1


def test_trace_has_forward_backward_flows(tmp_path):
    with profile() as prof:
        _program(fc)
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    trace = check_chrome_trace(json.loads((tmp_path / "t.json").read_text()))
    starts = {e["id"] for e in trace if e["ph"] == "s" and e["cat"] == "fwdbwd"}
    ends = {e["id"] for e in trace if e["ph"] == "f" and e["cat"] == "fwdbwd"}
    assert starts == ends and len(starts) >= 3
