"""The optimizers' per-tensor steps for tensors their fused core ops do not take (Note [Unfused optimizer steps]):
float16/bfloat16 parameters, a leaf whose grad_dtype differs from its dtype, and groups mixing those with
float32 parameters, against PyTorch 2.13's single-tensor algorithms (its CPU default)."""

from __future__ import annotations

from types import SimpleNamespace

import flambeau_core as fc
import flambeau_nn
import numpy as np
import pytest
import torch

# flambeau under torch's spellings used here
fb = SimpleNamespace(
    nn=flambeau_nn,
    optim=flambeau_nn.optim,
    tensor=fc.tensor,
    ones=fc.ones,
    float32=fc.float32,
    bfloat16=fc.bfloat16,
    float16=fc.float16,
)

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, maximize=True)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, weight_decay=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.1, weight_decay=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, maximize=True)),
]
VALUES = np.linspace(-1.5, 2.0, 12, dtype=np.float32).reshape(3, 4)


def run(lib, name, kwargs, dtypes, grad_dtype=None, steps=4):
    """Steps parameters of ``dtypes`` (a loss of their squares and cubes); returns their values and state."""
    params = [lib.nn.Parameter(lib.tensor(VALUES + k).to(getattr(lib, d))) for k, d in enumerate(dtypes)]
    if grad_dtype is not None:
        for p in params:
            p.grad_dtype = getattr(lib, grad_dtype)
    opt = getattr(lib.optim, name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        sum((p.float() ** 2 + 0.1 * p.float() ** 3).sum() for p in params).backward()
        opt.step()
    values = [np.array(p.detach().float().tolist()) for p in params]
    state = [
        {k: str(v.dtype).split(".")[-1] for k, v in opt.state[p].items() if hasattr(v, "dtype") and v.dim() > 0}
        for p in params
    ]
    return values, state


def close(a, b, dtypes):
    for x, y, d in zip(a, b, dtypes, strict=True):
        # a few units of the dtype: a 16-bit intermediate may round one unit apart from torch's
        unit = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-23}[d]
        np.testing.assert_allclose(x, y, rtol=8 * unit, atol=8 * unit)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(("name", "kwargs"), CASES)
def test_16_bit_parameters_step_as_torch(name, kwargs, dtype):
    ours, our_state = run(fb, name, kwargs, [dtype])
    theirs, their_state = run(torch, name, kwargs, [dtype])
    close(ours, theirs, [dtype])
    assert our_state == their_state  # the state in the parameter's dtype, as torch keeps it


@pytest.mark.parametrize(("name", "kwargs"), CASES)
def test_a_group_mixing_float32_and_bfloat16(name, kwargs):
    dtypes = ["float32", "bfloat16", "float32"]
    ours, our_state = run(fb, name, kwargs, dtypes)
    theirs, their_state = run(torch, name, kwargs, dtypes)
    close(ours, theirs, dtypes)
    assert our_state == their_state


@pytest.mark.parametrize(("name", "kwargs"), CASES)
def test_bfloat16_parameters_with_float32_gradients(name, kwargs):
    if name in ("Adam", "AdamW") or kwargs.get("centered"):
        # torch's lerp_ of a bfloat16 state towards a float32 gradient refuses ("expected dtype c10::BFloat16
        # for `end`"), and so does flambeau's
        with pytest.raises(RuntimeError, match="expected dtype"):
            run(torch, name, kwargs, ["bfloat16"], grad_dtype="float32")
        with pytest.raises(TypeError, match=r"\[lerp\] expected floating point input and end of one dtype"):
            run(fb, name, kwargs, ["bfloat16"], grad_dtype="float32")
        return
    ours, our_state = run(fb, name, kwargs, ["bfloat16"], grad_dtype="float32")
    theirs, their_state = run(torch, name, kwargs, ["bfloat16"], grad_dtype="float32")
    close(ours, theirs, ["bfloat16"])
    assert our_state == their_state  # SGD's momentum buffer is the gradient's dtype, Adam's state the parameter's


def test_float32_parameters_still_take_the_fused_step(monkeypatch):
    from flambeau_nn.optim import sgd as sgd_module

    called = []
    monkeypatch.setattr(sgd_module, "sgd_one", lambda *a, **k: called.append(1))
    w = fb.nn.Parameter(fb.ones(3))
    opt = fb.optim.SGD([w], lr=0.5)
    w.grad = fb.ones(3)
    opt.step()
    assert called == [] and w.tolist() == [0.5, 0.5, 0.5]
