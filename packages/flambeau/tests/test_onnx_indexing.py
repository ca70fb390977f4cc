"""fb.onnx.export of indexing and selection: x[...] (ints, slices with steps, negative indices, None, a tensor
index), gather, index_select, masked_fill, where, split, chunk, expand, tril/triu; checked by ONNX Runtime on
other batch sizes against flambeau's forward and torch's (the same program run on torch tensors)."""

import flambeau as fb
import pytest
from onnx_testing import Program, TorchProgram, assert_onnx_matches, export_checked, run_onnx


def basic_indexing(lib, x, idx):
    a = x[:, 1:5:2]  # a step
    b = x[..., -1]  # a negative index through the Ellipsis
    c = x[:, -3:, None]  # a negative start, a new axis
    d = x[0]  # an int on the dynamic dim
    e = x[:, :-1][:, 2]  # a negative stop, then an int
    f = x[idx]  # a tensor index on the dynamic dim (the rows idx names)
    g = x[:, idx, 1:]  # a tensor index on another dim
    h = x[:, 0, idx]  # an int next to a tensor index
    k = x[1:, ..., 1::3]  # a start on the dynamic dim
    m = x[:, [3, 0]]  # a list is a tensor index
    p = x[[0, -1], [1, 2]]  # two of them
    return a, b, c, d, e, f, g, h, k, m, p


def selection(lib, x, idx):
    mask = x > 0.5
    gathered = lib.gather(x, 2, lib.zeros_like(x[..., :2], dtype=lib.int64) + 1)
    picked = lib.index_select(x, 1, idx)
    filled = x.masked_fill(mask, -1.0)
    chosen = lib.where(mask, x, 0.25 * x)
    first, second = x.split([2, 4], dim=2)
    left, right = x.chunk(2, dim=-1)
    rows = [x[:, i] for i in range(x.shape[1])]
    spread = x[:, :1].expand(-1, 4, -1) + x.tril(1) - x.triu(-1)
    return gathered, picked, filled, chosen, first * 2, second, left - right, lib.stack(rows, 2), x[:, :, -1], spread


@pytest.mark.parametrize("program,new_idx", [(basic_indexing, [3, -1, 1]), (selection, [3, 0, 1])])
def test_indexing_agrees_with_onnxruntime_and_torch_on_other_batch_sizes(program, new_idx):
    fb.manual_seed(20)
    model, reference = Program(program), TorchProgram(program)
    idx = fb.tensor([2, 0, 2])
    data = export_checked(model, (fb.rand(3, 4, 6), idx), ["x", "idx"], {"x": {0: "batch"}})
    for n in (4, 6):
        assert_onnx_matches(data, ["x", "idx"], model, [fb.rand(n, 4, 6), fb.tensor(new_idx)], reference)


def test_an_int_apart_from_a_tensor_index_selects_first_as_in_torch():
    def program(lib, x, idx):
        return x[0, :, idx], x[:, 0, 1:][:, idx]  # torch selects the int first: idx's dims stay in place

    model = Program(program)
    idx = fb.tensor([[1, 0], [2, 2]])
    data = export_checked(model, (fb.rand(2, 3, 4), idx), ["x", "idx"], {"x": {0: "batch"}})
    assert_onnx_matches(data, ["x", "idx"], model, [fb.rand(5, 3, 4), idx], TorchProgram(program))
    assert run_onnx(data, ["x", "idx"], [fb.rand(5, 3, 4), idx])[0].shape == (3, 2, 2)


def test_several_tensor_indices_gather_as_in_torch():
    def program(lib, x, i, j):
        return x[i, j], x[:, i, j], x[i, :, j], x[i, 0, j], x[:, i, 0, j], x[1:, i, j, ::2]

    model = Program(program)
    i, j = fb.tensor([[1, 0, -1]]), fb.tensor([2, 1, 0])
    dynamic = {"x": {0: "batch"}, "i": [0, 1], "j": [0]}
    # i and j must broadcast: the second run grows their dims together, with a warning.
    with pytest.warns(UserWarning, match=r"did not run with its dynamic dims .* grown apart .* only grown together"):
        data = export_checked(model, (fb.rand(3, 4, 5, 6), i, j), ["x", "i", "j"], dynamic)
    for n, (a, b) in ((5, (i, j)), (4, (fb.tensor([[3], [0]]), fb.tensor([3, -2, 0])))):
        assert_onnx_matches(data, ["x", "i", "j"], model, [fb.rand(n, 4, 5, 6), a, b], TorchProgram(program))


def test_a_chunk_of_a_dynamic_dim_splits_into_equal_parts_from_opset_18():
    def program(lib, x, idx):
        a, b = x.chunk(2, dim=0)
        return a + b

    model = Program(program)
    example = (fb.rand(4, 3), fb.tensor([0]))
    data = export_checked(model, example, ["x", "idx"], {"x": {0: "batch"}})
    assert_onnx_matches(data, ["x", "idx"], model, [fb.rand(8, 3), fb.tensor([0])], TorchProgram(program))
    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=r"'chunk' to ONNX opset version 17 .* depend on the"):
        fb.onnx.export(model, example, input_names=["x", "idx"], dynamic_axes={"x": [0]}, opset_version=17)


@pytest.mark.parametrize(
    "program,words",
    [
        (lambda lib, x, idx: x[x > 0], "'__getitem__' to ONNX opset version 18 is not supported: a boolean mask"),
        (lambda lib, x, idx: x[idx, None], "a tensor index together with None"),
        (lambda lib, x, idx: x[[True, False, True]], "a list index of bool"),
        (lambda lib, x, idx: lib.where(x > 0)[0], "'where' .* where\\(condition\\)"),
        (lambda lib, x, idx: x.cumsum(0)[idx], "'cumsum' to ONNX opset version 18 is not supported$"),
    ],
)
def test_unmapped_indexing_raises_naming_the_op(program, words):
    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=words):
        fb.onnx.export(Program(program), (fb.randn(3, 3), fb.tensor([0, 1])))


def test_a_view_the_recorder_does_not_report_is_refused_not_made_a_constant():
    # x.T is not reported by the op recorder; embedding its values as a constant would write a wrong file.
    with pytest.raises(fb.onnx.OnnxExporterError, match=r"a \(3, 2\) view of a tensor computed from its inputs"):
        fb.onnx.export(Program(lambda lib, x, idx: (x * 2).T + 1), (fb.randn(2, 3), fb.tensor([0])))
