"""fb.onnx.export of indexing and selection: x[...] (ints, slices with steps, negative indices, None, a tensor
index, a boolean mask, a 0-d boolean index), x[mask] = value, index_put(_) (methods and functions), fill_, gather,
index_select, masked_fill, masked_select, nonzero, where, split, chunk, expand, narrow, select, unbind, expand_as,
the .T and .mT views, tril/triu; checked by ONNX Runtime on other batch sizes and other masks
against flambeau's forward and torch's (the same program run on torch tensors)."""

import re
import warnings

import flambeau as fb
import numpy as np
import onnx
import pytest
import torch
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
        (lambda lib, x, idx: x[idx, None], "a tensor index together with None"),
        (lambda lib, x, idx: x[[True, False, True]], "a list index of bool"),
        (lambda lib, x, idx: x[idx, True], "a tensor index together with None or a 0-d boolean index"),
        (lambda lib, x, idx: x.cumsum(0)[idx], "'cumsum' to ONNX opset version 18 is not supported$"),
    ],
)
def test_unmapped_indexing_raises_naming_the_op(program, words):
    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=words):
        fb.onnx.export(Program(program), (fb.randn(3, 3), fb.tensor([0, 1])))


def test_transpose_properties_export_as_in_torch():
    def program(lib, x, idx):
        return x.mT * 2, x[0].T + 1, (x[:, 0].T @ x[:, 1]).mT

    model = Program(program)
    data = export_checked(model, (fb.rand(3, 4, 6), fb.tensor([0])), ["x", "idx"], {"x": {0: "batch"}})
    for n in (2, 5):
        assert_onnx_matches(data, ["x", "idx"], model, [fb.rand(n, 4, 6), fb.tensor([0])], TorchProgram(program))


def test_a_view_the_recorder_does_not_report_is_refused_not_made_a_constant():
    # x.data is not reported by the op recorder; embedding its values as a constant would write a wrong file.
    with pytest.raises(fb.onnx.OnnxExporterError, match=r"a \(2, 3\) view of a tensor computed from its inputs"):
        fb.onnx.export(Program(lambda lib, x, idx: (x * 2).data + 1), (fb.randn(2, 3), fb.tensor([0])))


def mask_indexing(lib, x, m, r):
    return (
        x[m],  # a mask of x's first two dims (GatherND at its true elements' positions)
        x[r],  # a 1-d mask (Compress)
        x[:, m[0]],  # after ':'
        x[1:, m[1]],  # after a slice
        x[0, m[1]],  # after an int
        x[m, 1],  # before an int
        x[m, lib.tensor([2])],  # with an index tensor, broadcast against the true elements
        x[r, ..., 1:],  # before '...'
    )


def selection_by_mask(lib, x, m, r):
    a, b = lib.nonzero(x[..., 0] > 0.5, as_tuple=True)
    (c,) = lib.where(r)
    return (
        lib.masked_select(x[..., 0], m),
        x[:, :1, 0].masked_select(m[0]),  # both broadcast
        lib.nonzero(m),
        (x > 0.5).nonzero(),
        lib.argwhere(r),
        a,
        b,
        c,
        lib.where(m)[1],
    )


def mask_assignment(lib, x, m, r):
    a = x.clone()
    a[m] = -1.0  # a number: Where
    b = x.clone()
    b[r] = x[0, 0]  # a tensor of the dims after the mask's: Where
    c = x.clone()
    c[m] = x[m] * 2  # one value per true element: ScatterND
    d = x.clone()
    d[:, m[0]] = 5  # after ':'
    e = x.clone()
    e[..., m[1, :3]] = x[..., m[1, :3]] + 1  # after '...', ScatterND between the dims around it
    f = lib.zeros(4, 4, 3)
    f[m] = x[m, 0:1]  # made in forward: its values before the write are the constant
    g = x.clone()
    g.index_put_((m,), x[m] + 1)  # what x[m] = v is in PyTorch
    h = x.index_put((r,), x[0, 0, 0])
    k = x.clone()
    k.fill_(x[1, 1, 1])
    return a, b, c, d, e, f, g, h, k


def masks(seed):
    fb.manual_seed(seed)
    return fb.rand(4, 4, 3), fb.rand(4, 4) > 0.5, fb.rand(4) > 0.5


@pytest.mark.parametrize(
    "program,constant",
    [
        (mask_indexing, r"a \(1,\) tensor filled with 2"),
        (selection_by_mask, None),
        (mask_assignment, r"a \(4, 4, 3\) tensor filled with 0.0"),  # the zeros as they were before the write
    ],
)
@pytest.mark.parametrize("opset", [13, 18])
def test_boolean_masks_export_once_and_run_with_other_counts_of_true_elements(program, constant, opset):
    model, names = Program(program), ["x", "m", "r"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = export_checked(model, masks(0), names, opset_version=opset)
    messages = [str(w.message) for w in caught if "constants in the file" in str(w.message)]
    assert len(messages) == (constant is not None)
    assert constant is None or re.search(constant, messages[0])
    counts = set()
    for seed in (1, 2):
        inputs = masks(seed)
        counts.add((int(inputs[1].sum()), int(inputs[2].sum())))
        assert_onnx_matches(data, names, model, inputs, TorchProgram(program))
    assert len(counts) == 2  # the two runs select different numbers of elements


def test_an_output_whose_size_is_a_count_of_true_elements_is_declared_symbolic():
    proto = onnx.load_from_string(export_checked(Program(selection_by_mask), masks(0), ["x", "m", "r"]))
    dims = [[d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] for out in proto.graph.output]
    assert dims[0] == ["output_0_dynamic_axes_1"]
    assert dims[2] == ["output_2_dynamic_axes_1", 2]  # nonzero(m): [count, rank]
    assert {n.op_type for n in proto.graph.node} >= {"NonZero", "Compress"}


def test_a_mask_from_the_batch_follows_dynamic_axes_and_its_count_sizes_a_reshape():
    def program(lib, x, m):
        y = x[x[:, 0] > 0.5]
        z = x[m]
        return y, y.reshape(y.size(0), 2, 2).sum(1), z.view(z.size(0), -1) * 2

    model, names = Program(program), ["x", "m"]
    # The counts must differ between the example and the second run (x repeated along the batch), as sizes do.
    example = (fb.tensor([[0.9, 0.1, 0.2, 0.3], [0.1, 0.5, 0.6, 0.7], [0.2, 0.0, 0.0, 1.0]]), fb.tensor([1, 0, 1]) > 0)
    data = export_checked(model, example, names, {"x": {0: "batch"}, "m": {0: "batch"}})
    for n, seed in ((5, 1), (7, 2)):
        fb.manual_seed(seed)
        assert_onnx_matches(data, names, model, [fb.rand(n, 4), fb.rand(n) > 0.3], TorchProgram(program))


def test_a_size_equal_to_a_count_of_true_elements_is_not_read_from_it():
    def program(lib, x):
        y = x[x > -1.0]  # all true in the example: its count is b * 3 at both sizes
        return y * 2, x.reshape(x.size(0) * x.size(1)) + 1, y.view(y.size(0), 1)

    model = Program(program)
    data = export_checked(model, (fb.rand(2, 3),), ["x"], {"x": {0: "b"}})
    for n in (3, 5):
        x = fb.rand(n, 3) * 2 - 1.2  # some elements false: the count is no longer b * 3
        assert_onnx_matches(data, ["x"], model, [x], TorchProgram(program))


def test_mask_assignments_follow_dynamic_axes():
    def program(lib, x, m):
        y = x.clone()
        y[x > 0.5] = 0
        y[m] = x[m] * 2
        z = lib.zeros_like(x)
        z[:, x[0] > 0.3] = x[:, x[0] > 0.3]
        return y, z, lib.masked_select(y, m)

    model, names = Program(program), ["x", "m"]
    fb.manual_seed(4)
    data = export_checked(model, (fb.rand(3, 4), fb.rand(3, 4) > 0.5), names, {"x": {0: "b"}, "m": {0: "b"}})
    for n, seed in ((5, 1), (2, 2)):
        fb.manual_seed(seed)
        assert_onnx_matches(data, names, model, [fb.rand(n, 4), fb.rand(n, 4) > 0.5], TorchProgram(program))


def test_a_mask_assignment_to_the_input_itself():
    def program(lib, x, m):
        x[m] = 0.5
        x[x > 0.7] = x[x > 0.7] * 3
        return x * 1

    model, names = Program(program), ["x", "m"]
    data = export_checked(model, (fb.rand(4, 3), fb.rand(4, 3) > 0.5), names)
    for seed in (1, 2):
        fb.manual_seed(seed)
        x, m = fb.rand(4, 3), fb.rand(4, 3) > 0.5
        got = run_onnx(data, names, [x.clone(), m])[0]  # the model writes into its input: each run gets a copy
        np.testing.assert_allclose(got, model(x.clone(), m).numpy(), rtol=1e-6)
        np.testing.assert_allclose(got, program(torch, torch.from_numpy(x.numpy()), torch.from_numpy(m.numpy())))


@pytest.mark.parametrize(
    "program,error,words",
    [
        (lambda lib, x, m: x[m[:2]], IndexError,
         r"\[index\] the shape \(2, 4\) of the mask .* \(4, 4\) of the indexed"),
        (lambda lib, x, m: lib.masked_select(x, m[:, :2]), fb.FlambeauError,
         r"\[masked_select\] shapes \(4, 4\) and \(4, 2\) cannot be broadcast"),
        (lambda lib, x, m: x.clone().__setitem__(m[0, :2], 1.0), IndexError,
         r"\[index_put_\] the shape \(2,\) of the mask .* does not match the shape \(4,\)"),
    ],
)  # fmt: skip
def test_a_mask_whose_shape_does_not_match_raises_at_export_naming_the_op_and_shapes(program, error, words):
    with pytest.raises(error, match=words):
        fb.onnx.export(Program(program), (fb.rand(4, 4), fb.rand(4, 4) > 0.5))


def set_rows(lib, x, m):
    y = x.clone()
    y[0] = 1.0
    return y


def set_through_a_view(lib, x, m):
    y = x.clone()
    y[0][m[0]] = 1.0
    return y


def set_at_true(lib, x, m):
    y = x.clone()
    y[True] = 1.0
    return y


@pytest.mark.parametrize(
    "program,words",
    [
        (set_rows, "'__setitem__' .* a write at an index that is not one boolean mask"),
        (set_through_a_view, "'__setitem__' .* a write into a view of shape \\(4,\\)"),
        (lambda lib, x, m: x.clone().index_put_((m,), x[m], accumulate=True), "'index_put_' .* accumulate=True"),
        (lambda lib, x, m: x.index_put((lib.tensor([0]),), x[0]), "'index_put' .* not one boolean mask"),
        (lambda lib, x, m: x.clone()[1:].fill_(x[0, 0]), "'fill_' .* a write into a view of shape \\(3, 4\\)"),
        (set_at_true, "'__setitem__' .* a write at a 0-d boolean index"),
    ],
)
def test_an_assignment_the_exporter_cannot_write_raises_instead_of_being_left_out(program, words):
    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=words):
        fb.onnx.export(Program(program), (fb.rand(4, 4), fb.rand(4, 4) > 0.5))


def index_put_functions(lib, x, m):
    a = x.clone()
    lib.index_put_(a, (m,), x[m] * 3)  # the function form, reported by the recorder as a write like the method
    b = lib.zeros(4, 4)  # made in forward: the constant is its value before the write
    lib.index_put_(b, (m,), lib.tensor(2.0))
    c = lib.index_put(x, (m[0],), x[1])
    return a, b, c


def test_index_put_called_as_a_function_is_exported():
    model, names = Program(index_put_functions), ["x", "m"]
    fb.manual_seed(3)
    data = export_checked(model, (fb.rand(4, 4), fb.rand(4, 4) > 0.5), names)
    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert {"ScatterND", "Where"} <= ops
    for seed in (1, 2):
        fb.manual_seed(seed)
        assert_onnx_matches(data, names, model, [fb.rand(4, 4), fb.rand(4, 4) > 0.5], TorchProgram(index_put_functions))


def zero_dim_masks(lib, x, s):
    m = x[0, 0] > 0.5  # a 0-d mask the inputs decide
    return (
        x[True],  # a new dim of size 1, as x[None]
        x[False],  # a new dim of size 0
        x[1:, True, 0],
        x[m],  # (1, ...) or (0, ...) by the mask's value
        x[..., m] * 2,
        lib.nonzero(s),  # a 0-d input: (1, 0) or (0, 0) positions
        lib.nonzero(x[0, 1] - 0.5, as_tuple=True)[0],  # PyTorch takes it as a 1-element vector: [0] or []
        lib.argwhere(m),
    )


def test_a_0d_boolean_index_and_nonzero_of_a_0d_tensor_export():
    model, names = Program(zero_dim_masks), ["x", "s"]
    data = export_checked(model, (fb.full((3, 2), 0.75), fb.tensor(1.5)), names)
    cases = [
        (fb.full((3, 2), 0.75), fb.tensor(1.5)),  # the example: every 0-d mask true
        (fb.tensor([[0.25, 0.5], [1.0, 2.0], [3.0, 4.0]]), fb.tensor(0.0)),  # every one false
        (fb.tensor([[0.75, 0.25], [1.0, 2.0], [3.0, 4.0]]), fb.tensor(float("nan"))),  # mixed; NaN is nonzero
    ]
    for x, s in cases:
        assert_onnx_matches(data, names, model, [x, s], TorchProgram(zero_dim_masks))


def recorded_views(lib, x):
    rows = [r * 2 for r in x[:2]]  # iterating over a tensor is unbind(0)
    first, second, third = x.unbind(1)
    return (
        x.narrow(1, 1, 2),
        lib.narrow(x, 0, 1, x.size(0) - 1),  # its end follows the batch size
        x.narrow(-1, -2, 1),
        x.select(1, -1),
        lib.select(x, 0, -1),
        first,
        second + third,
        *rows,
        x[:, :1].expand_as(x),
        x.clone().requires_grad_(False) + 1,
    )


def test_views_the_recorder_reports_export_and_follow_dynamic_axes():
    model, names = Program(recorded_views), ["x"]
    fb.manual_seed(5)
    data = export_checked(model, (fb.rand(4, 3),), names, {"x": {0: "b"}})
    for n in (6, 2):
        assert_onnx_matches(data, names, model, [fb.rand(n, 3)], TorchProgram(recorded_views))


def where_forms(lib, x, y):
    m = x > 0.5
    return lib.where(m, x, y), x.where(m, y), x.where(x <= 0.5, 0.0) * 2


def test_where_as_a_method_exports_with_self_as_the_input():
    # The recorder tells the method form (self first) from the function's (condition first).
    model, names = Program(where_forms), ["x", "y"]
    fb.manual_seed(6)
    data = export_checked(model, (fb.rand(3, 4), fb.rand(3, 4)), names, {"x": {0: "b"}, "y": {0: "b"}})
    for n in (3, 5):
        assert_onnx_matches(data, names, model, [fb.rand(n, 4), fb.rand(n, 4)], TorchProgram(where_forms))
