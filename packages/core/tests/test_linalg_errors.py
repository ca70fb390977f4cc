"""linalg.LinAlgError (flambeau_core/_linalg_errors.py) against PyTorch 2.13: the failures on a matrix's
values that torch raises as torch.linalg.LinAlgError raise it here too (and stay FlambeauError /
RuntimeError), from linalg and the top-level spellings; shape and dtype errors keep their types."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch

SINGULAR = [[1.0, 2.0], [2.0, 4.0]]
NOT_POSITIVE = [[-1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda m: m.linalg.inv(m.tensor(SINGULAR)), "singular"),
        (lambda m: m.inverse(m.zeros(2, 2)), "singular"),
        (lambda m: m.linalg.solve(m.zeros(2, 2), m.ones(2)), "singular"),
        (lambda m: m.linalg.solve_ex(m.zeros(2, 2), m.ones(2), check_errors=True), "singular"),
        (lambda m: m.linalg.inv_ex(m.zeros(3, 3), check_errors=True), "singular"),
        (lambda m: m.linalg.cholesky(m.tensor(NOT_POSITIVE)), "not positive-definite"),
        (lambda m: m.linalg.cholesky_ex(m.tensor(NOT_POSITIVE), check_errors=True), "not positive-definite"),
        (lambda m: m.linalg.matrix_power(m.zeros(2, 2), -1), "singular"),
        (lambda m: m.linalg.tensorinv(m.zeros(4, 2, 2), ind=1), "singular"),
    ],
)
def test_numerical_failures_raise_linalg_error_as_torch(call, words):
    with pytest.raises(torch.linalg.LinAlgError, match=words):
        call(torch)
    with pytest.raises(fc.linalg.LinAlgError, match=words) as info:
        call(fc)
    assert isinstance(info.value, fc.FlambeauError) and isinstance(info.value, RuntimeError)


def test_batched_failure_names_the_batch_element():
    a = torch.stack([torch.eye(2), torch.zeros(2, 2)])
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        torch.linalg.inv(a)
    with pytest.raises(fc.linalg.LinAlgError, match=r"Batch element 1"):
        fc.linalg.inv(fc.stack([fc.eye(2), fc.zeros(2, 2)]))


def test_other_errors_keep_their_type():
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.inv(torch.zeros(2, 3))
    assert not isinstance(theirs.value, torch.linalg.LinAlgError)
    with pytest.raises(fc.FlambeauError, match="square matrices") as ours:
        fc.linalg.inv(fc.zeros(2, 3))
    assert not isinstance(ours.value, fc.linalg.LinAlgError)
    with pytest.raises(TypeError):
        fc.linalg.inv(fc.zeros(2, 2, dtype=fc.int64))


def test_the_wrapped_functions_keep_their_names_and_docs():
    assert fc.linalg.inv.__name__ == "inv" and "Inverse" in fc.linalg.inv.__doc__
    assert fc.inverse.__name__ == "inverse"
    assert fc.linalg.LinAlgError.__module__ == "flambeau.linalg" and "LinAlgError" in fc.linalg.__all__
