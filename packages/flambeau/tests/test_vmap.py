"""flambeau.func.vmap against torch.func.vmap on the same functions, in float64: elementwise ops with
broadcasting, reductions, views and indexing, matmul in every batched/unbatched combination, nn layers,
in_dims/out_dims/chunk_size, nesting, the loop fallback, per-sample gradients (vmap of grad) of an MLP
and a LeNet-style CNN, an ensemble through stack_module_state, and the error paths. Also the
``__torch_function__`` protocol vmap is built on."""

from __future__ import annotations

import warnings

import flambeau as fb
import numpy as np
import pytest
import torch
from func_testing import close, pair

RNG = np.random.default_rng(71)


def _pair(*shape):
    return pair(RNG, *shape)


_close = close


def lib(t):
    """torch inside torch.func.vmap, flambeau inside flambeau's (a BatchedTensor is not an fb.Tensor)."""
    return torch if isinstance(t, torch.Tensor) else fb


def both(f, in_dims=0, out_dims=0, *args_pairs, **kw):
    """Runs vmap(f) on the flambeau and torch halves of each (fb, torch) pair and compares."""
    ours = fb.func.vmap(f, in_dims=in_dims, out_dims=out_dims, **kw)(*[p[0] for p in args_pairs])
    theirs = torch.func.vmap(f, in_dims=in_dims, out_dims=out_dims, **kw)(*[p[1] for p in args_pairs])
    _close(ours, theirs)
    return ours


# --- elementwise, reductions, views ------------------------------------------------------------

ELEMENTWISE = {
    "unary": lambda x, y: lib(x).sin(x) * x.exp() - x.abs().sqrt(),
    "broadcast_rank": lambda x, y: x + y,  # x's sample [3], y's [2, 3]
    "scalar": lambda x, y: x * 2.5 - 1 + 3 / (x.abs() + 1),
    "where": lambda x, y: lib(x).where(x > 0, x, y),
    "clamp": lambda x, y: x.clamp(-0.5, 0.5) + lib(x).maximum(x, y),
    "softmax": lambda x, y: lib(x).softmax(y, dim=1) + lib(x).log_softmax(y, -1),
    "cumsum": lambda x, y: y.cumsum(0) + y.cumsum(dim=-1),
    "comparison": lambda x, y: ((x > y) | (y < 0)).to(x.dtype),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_ops_batch_as_torch(name):
    f = ELEMENTWISE[name]
    both(f, (0, 0), 0, _pair(4, 3), _pair(4, 2, 3))
    both(f, (1, None), 0, _pair(3, 4), _pair(2, 3))  # batch in dim 1 of x, y shared


REDUCTIONS = {
    "sum_all": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1) + x.sum(dim=-1, keepdim=True).squeeze(-1),
    "mean_keepdim": lambda x: x.mean(keepdim=True, dim=(0, 1)),
    "max_all": lambda x: x.max(),
    "max_dim": lambda x: x.max(dim=0)[0] + x.max(-1).values.sum(),
    "argmax": lambda x: lib(x).argmax(x, dim=1).to(x.dtype),
    "std_var": lambda x: x.std() + x.var(dim=0).sum(),
    "amax": lambda x: x.amax(dim=1) - x.amin(),
    "logsumexp": lambda x: lib(x).logsumexp(x, dim=1),
    "norm": lambda x: x.norm() + lib(x).linalg.vector_norm(x, dim=1).sum(),
    "prod": lambda x: x.prod(),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_reduce_the_sample_dims(name):
    both(REDUCTIONS[name], 0, 0, _pair(5, 3, 4))


VIEWS = {
    "view": lambda x: x.view(-1) + x.reshape(12).flip(0),
    "permute_T": lambda x: x.permute(1, 0).sum(0) + x.T.sum(0) + x.mT.sum(0),
    "transpose_unsqueeze": lambda x: x.transpose(0, 1).unsqueeze(0).unsqueeze(-1).squeeze(),
    "expand": lambda x: x[:, :1].expand(3, 4) + x.unsqueeze(0).expand(2, -1, -1).sum(0),
    "getitem": lambda x: x[1] + x[:, 2].sum() + x[..., ::2].sum() + x[None, 0, 1:3].sum(),
    "flatten_unflatten": lambda x: x.flatten().unflatten(0, (2, 6)),
    "cat_stack": lambda x: lib(x).cat([x, x * 2], dim=1) + lib(x).stack([x, x], dim=0).sum(0).repeat(1, 2),
    "unbind_split": lambda x: x.unbind(0)[1] + x.split(2, dim=1)[0].sum(),
    "narrow_select": lambda x: x.narrow(1, 1, 2).sum() + x.select(0, 2),
    "movedim": lambda x: x.movedim(0, 1).reshape(-1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_and_indexing_see_the_sample(name):
    both(VIEWS[name], 0, 0, _pair(2, 3, 4))


def test_shape_and_len_are_the_samples():
    seen = {}

    def f(x):
        seen["shape"], seen["len"], seen["dim"] = tuple(x.shape), len(x), x.dim()
        seen["size1"] = x.size(1)
        return x

    fb.func.vmap(f)(fb.zeros(7, 3, 2))
    assert seen == {"shape": (3, 2), "len": 3, "dim": 2, "size1": 2}


# --- matmul and nn ops ---------------------------------------------------------------------------


@pytest.mark.parametrize("a_shape", [(3,), (2, 3)])
@pytest.mark.parametrize("b_shape", [(3,), (3, 4)])
@pytest.mark.parametrize("dims", [(0, 0), (0, None), (None, 0)])
def test_matmul_every_batched_combination(a_shape, b_shape, dims):
    a = _pair(*((5, *a_shape) if dims[0] == 0 else a_shape))
    b = _pair(*((5, *b_shape) if dims[1] == 0 else b_shape))
    both(lambda x, y: x @ y, dims, 0, a, b)


def test_bmm_of_batched_batches():
    both(lambda x, y: lib(x).bmm(x, y), (0, 0), 0, _pair(4, 2, 3, 5), _pair(4, 2, 5, 3))


def test_linear_conv_pool_of_one_sample():
    w, tw = _pair(6, 3)
    cw, tcw = _pair(4, 2, 3, 3)

    def f(x, img):
        nn = fb.nn.functional if isinstance(x, fb.func._vmap.BatchedTensor) else torch.nn.functional
        ww, cc = (w, cw) if nn is fb.nn.functional else (tw, tcw)
        h = nn.relu(nn.linear(x, ww))
        c = nn.max_pool2d(nn.conv2d(img, cc, padding=1), 2)
        return h.sum() + c.sum()

    both(f, (0, 0), 0, _pair(5, 3), _pair(5, 2, 6, 6))


def test_per_sample_weights_linear_and_conv():
    """Batched weights (an ensemble): linear as a batched matmul, conv as one grouped conv."""

    def f(x, w, b, img, cw):
        nn = torch.nn.functional if isinstance(x, torch.Tensor) else fb.nn.functional
        return nn.linear(x, w, b).sum() + nn.conv2d(img, cw, stride=1, padding=1).sum()

    both(f, 0, 0, _pair(3, 4, 5), _pair(3, 2, 5), _pair(3, 2), _pair(3, 1, 2, 5, 5), _pair(3, 4, 2, 3, 3))


# --- in_dims, out_dims, chunk_size, nesting, pytrees --------------------------------------------


def test_in_dims_out_dims_and_pytrees():
    x, tx = _pair(3, 4)
    y, ty = _pair(3)

    def f(d, s):
        return d["x"] * s, {"e": d["x"].exp(), "s": s}

    # batch in dim 1 of x; out_dims per output: the first's batch in dim 1, the dict's in dim 0 (its
    # unbatched `s` broadcast along the batch)
    ours = fb.func.vmap(f, in_dims=({"x": 1}, None), out_dims=(1, 0))({"x": x}, y)
    theirs = torch.func.vmap(f, in_dims=({"x": 1}, None), out_dims=(1, 0))({"x": tx}, ty)
    _close(ours[0], theirs[0])
    _close(ours[1], theirs[1])


def test_chunk_size_gives_the_same_result():
    x, tx = _pair(7, 3)
    f = lambda v: (v.sin() @ v.cos()).exp()  # noqa: E731
    _close(fb.func.vmap(f, chunk_size=3)(x), torch.func.vmap(f, chunk_size=3)(tx))


def test_nested_vmap_is_an_outer_product_of_batches():
    x, tx = _pair(3, 4)
    y, ty = _pair(5, 4)
    f = lambda a, b: (a * b).sum()  # noqa: E731
    ours = fb.func.vmap(fb.func.vmap(f, in_dims=(None, 0)), in_dims=(0, None))(x, y)
    theirs = torch.func.vmap(torch.func.vmap(f, in_dims=(None, 0)), in_dims=(0, None))(tx, ty)
    _close(ours, theirs)


def test_an_op_without_a_rule_loops_and_warns_once(monkeypatch):
    from flambeau.func import _vmap

    monkeypatch.delitem(_vmap._table_rules(), "matmul")  # matmul as an op with no batching rule
    monkeypatch.setattr(_vmap, "_warned", set())
    x, tx = _pair(4, 3, 3)
    f = lambda m: m @ m.mT + m  # noqa: E731
    with pytest.warns(UserWarning, match="no batching rule for 'matmul'"):
        ours = fb.func.vmap(f)(x)
    _close(ours, torch.func.vmap(f)(tx))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per op
        _close(fb.func.vmap(f)(x), torch.func.vmap(f)(tx))


def test_every_batching_rule_the_table_names_has_a_function():
    """_C._op_batch_rules (the table's `batch:`, else its shape rule's) names rules of _RULE_FUNCTIONS; the
    Python-level names are not table names (a table name's rule wins, so one there would never run)."""
    import flambeau_core
    from flambeau.func import _vmap

    table = dict(flambeau_core._C._op_batch_rules)
    assert set(table.values()) <= set(_vmap._RULE_FUNCTIONS), set(table.values()) - set(_vmap._RULE_FUNCTIONS)
    assert not set(table) & set(_vmap._PYTHON_LEVEL_RULES), set(table) & set(_vmap._PYTHON_LEVEL_RULES)
    # declared (view: views, matmul: matmul, vstack and its alias row_stack: stacks), derived from the shape
    # rule (sum: reduce, sin: same), and hand-bound ops (python: []) by their op's name
    expected = {"view": "views", "matmul": "matmul", "row_stack": "stacks", "vstack": "stacks", "sum": "reduction"}
    assert {k: table.get(k) for k in [*expected, "sin"]} == {**expected, "sin": "elementwise"}


def test_table_rules_batch_aliases_and_in_place_forms_without_the_loop():
    x, tx = _pair(4, 3)
    y, ty = _pair(4, 2, 3)
    stacked = lambda a, b: lib(a).row_stack([a, b])  # noqa: E731 (vstack's alias)
    in_place = lambda a: a.clone().clip_(-0.5, 0.5) + a.clone().zero_()  # noqa: E731 (clamp_'s alias, zero_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the loop's warning would raise
        ours = fb.func.vmap(stacked)(x, y), fb.func.vmap(in_place)(x)
    _close(ours, (torch.func.vmap(stacked)(tx, ty), torch.func.vmap(in_place)(tx)))


def test_a_shared_table_indexed_by_batched_indices():
    """table[i] with a batched i: one gather (Tensor.__getitem__ hands the call to the index's override)."""
    table, ttable = _pair(10, 4)
    labels = RNG.integers(0, 10, (3, 2))
    idx, tidx = fb.tensor(labels), torch.tensor(labels)

    def pick(i):
        return (ttable if isinstance(i, torch.Tensor) else table)[i, 1:3]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop
        both(pick, 0, 0, (idx, tidx))
    with pytest.raises(fb.FlambeauError, match=r"setitem\(self, \*extra_args\) is not possible"):
        fb.func.vmap(lambda r: fb.zeros(4).__setitem__(0, r[0]))(fb.zeros(3, 4))


def test_inplace_on_a_batched_tensor():
    def f(x, y):
        z = x.clone()
        z.mul_(2).add_(y)
        z[0] = 5.0
        return z

    both(f, (0, 0), 0, _pair(3, 4), _pair(3, 4))


# --- per-sample gradients ----------------------------------------------------------------------


def _mlp_params(torch_too=True):
    shapes = {"w1": (16, 8), "b1": (16,), "w2": (3, 16), "b2": (3,)}
    pairs = {k: _pair(*s) for k, s in shapes.items()}
    return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}


def mlp_loss(p, x, y):
    nn = torch.nn.functional if isinstance(p["w1"], torch.Tensor) else fb.nn.functional
    h = nn.relu(nn.linear(x, p["w1"], p["b1"]))
    logits = nn.linear(h, p["w2"], p["b2"])
    return nn.cross_entropy(logits.unsqueeze(0), y.unsqueeze(0))


def test_per_sample_gradients_of_an_mlp():
    p, tp = _mlp_params()
    x, tx = _pair(6, 8)
    labels = RNG.integers(0, 3, 6)
    y, ty = fb.tensor(labels), torch.tensor(labels)
    ours = fb.func.vmap(fb.func.grad(mlp_loss), in_dims=(None, 0, 0))(p, x, y)
    theirs = torch.func.vmap(torch.func.grad(mlp_loss), in_dims=(None, 0, 0))(tp, tx, ty)
    _close(ours, theirs)
    # The same as differentiating each sample on its own.
    for i in range(6):
        one = fb.func.grad(mlp_loss)(p, x[i], y[i])
        _close({k: v[i] for k, v in ours.items()}, {k: torch.tensor(v.numpy()) for k, v in one.items()})


def test_per_sample_gradients_of_a_cnn():
    shapes = {"c": (4, 1, 3, 3), "cb": (4,), "w": (2, 4 * 3 * 3)}
    pairs = {k: _pair(*s) for k, s in shapes.items()}
    p, tp = {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}

    def loss(q, img):
        nn = torch.nn.functional if isinstance(q["c"], torch.Tensor) else fb.nn.functional
        h = nn.max_pool2d(nn.relu(nn.conv2d(img.unsqueeze(0), q["c"], q["cb"])), 2)
        return nn.linear(h.flatten(), q["w"]).pow(2).sum()

    img, timg = _pair(5, 1, 8, 8)
    ours = fb.func.vmap(fb.func.grad(loss), in_dims=(None, 0))(p, img)
    theirs = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(tp, timg)
    _close(ours, theirs, rtol=1e-9)


def test_grad_and_value_inside_vmap_with_batched_argument():
    x, tx = _pair(4, 3)
    f = lambda v: (v.sin() ** 2).sum()  # noqa: E731
    _close(fb.func.vmap(fb.func.grad_and_value(f))(x), torch.func.vmap(torch.func.grad_and_value(f))(tx))


def test_ensemble_through_stack_module_state():
    fb.manual_seed(0)
    models = [fb.nn.Linear(4, 2).double() for _ in range(3)]
    tmodels = [torch.nn.Linear(4, 2).double() for _ in range(3)]
    for m, t in zip(models, tmodels, strict=True):
        t.weight.data = torch.tensor(m.weight.detach().numpy())
        t.bias.data = torch.tensor(m.bias.detach().numpy())
    params, buffers = fb.func.stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    x, tx = _pair(5, 4)
    base = models[0]

    def run(p, b, inp):
        return fb.func.functional_call(base, (p, b), (inp,))

    def trun(p, b, inp):
        return torch.func.functional_call(tmodels[0], (p, b), (inp,))

    _close(
        fb.func.vmap(run, in_dims=(0, 0, None))(params, buffers, x),
        torch.func.vmap(trun, in_dims=(0, 0, None))(tparams, tbuffers, tx),
    )


# --- errors ------------------------------------------------------------------------------------


def test_errors_name_the_problem():
    x = fb.zeros(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        fb.func.vmap(lambda a, b: a + b)(x, fb.zeros(4, 2))
    with pytest.raises(ValueError, match="at least one input must be a Tensor to vmap"):
        fb.func.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="Got in_dim=2 for some input"):
        fb.func.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        fb.func.vmap(lambda a, n: a * n, in_dims=(0, 0))(x, 3)
    with pytest.raises(ValueError, match="Only allowed values for randomness"):
        fb.func.vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(fb.FlambeauError, match=r"calling \.item\(\)"):
        fb.func.vmap(lambda a: a.sum().item())(x)
    with pytest.raises(fb.FlambeauError, match="random operation 'bernoulli'"):
        fb.func.vmap(lambda a: fb.bernoulli(a.sigmoid()))(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        fb.func.vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        fb.func.vmap(lambda a: a, chunk_size=0)


def test_randomness_different_draws_per_sample():
    fb.manual_seed(1)
    out = fb.func.vmap(lambda a: fb.nn.functional.dropout(a, 0.5), randomness="different")(fb.ones(64, 32))
    rows = {tuple(r) for r in out.numpy().tolist()}
    assert len(rows) == 64  # each sample its own mask
    assert set(np.unique(out.numpy())) <= {0.0, 2.0}


def _same_across_samples(out) -> bool:
    rows = out.numpy().reshape(out.shape[0], -1)
    return bool((rows == rows[0]).all())


@pytest.mark.parametrize(
    "name, fn",
    [
        ("rand_like", lambda a: fb.rand_like(a)),
        ("randn_like", lambda a: fb.randn_like(a) + 0 * a),
        ("normal_", lambda a: a.clone().normal_()),
        ("uniform_", lambda a: a.clone().uniform_(-1, 1)),
        ("bernoulli_", lambda a: a.clone().bernoulli_(0.5)),
    ],
)
def test_randomness_same_shares_one_draw_as_torch(name, fn):
    """torch.func.vmap(randomness='same') gives every sample the same values: so must flambeau's."""
    x, xt = fb.rand(5, 8), torch.rand(5, 8)
    torch_fn = {
        "rand_like": lambda a: torch.rand_like(a),
        "randn_like": lambda a: torch.randn_like(a) + 0 * a,
        "normal_": lambda a: a.clone().normal_(),
        "uniform_": lambda a: a.clone().uniform_(-1, 1),
        "bernoulli_": lambda a: a.clone().bernoulli_(0.5),
    }[name]
    theirs = torch.func.vmap(torch_fn, randomness="same")(xt)
    assert bool((theirs == theirs[0]).all())  # the oracle's property
    fb.manual_seed(3)
    ours = fb.func.vmap(fn, randomness="same")(x)
    assert tuple(ours.shape) == tuple(theirs.shape) and _same_across_samples(ours)
    fb.manual_seed(3)
    assert not _same_across_samples(fb.func.vmap(fn, randomness="different")(x))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: fb.nn.functional.dropout(a, 0.5),
        lambda a: fb.nn.functional.dropout(a.clone(), 0.5, True, True),
        lambda a: fb.nn.functional.dropout1d(a, 0.5),
    ],
)
def test_randomness_same_gives_every_sample_one_dropout_mask(fn):
    x = fb.rand(6, 4, 16) + 0.5  # no zeros of its own
    fb.manual_seed(4)
    out = fb.func.vmap(fn, randomness="same")(x)
    zeros = out.numpy() == 0
    assert zeros.any() and (zeros == zeros[0]).all()
    kept = ~zeros
    assert np.allclose(out.numpy()[kept], 2 * x.numpy()[kept])


def test_randomness_same_refuses_a_draw_from_batched_values_as_torch():
    with pytest.raises(RuntimeError, match="same randomness with a batched tensor input"):
        torch.func.vmap(lambda a: torch.bernoulli(a), randomness="same")(torch.rand(3, 4))
    with pytest.raises(fb.FlambeauError, match=r"randomness='same' is not supported for 'bernoulli' with a batched"):
        fb.func.vmap(lambda a: fb.bernoulli(a), randomness="same")(fb.rand(3, 4))


def _multinomial_rows_valid(draws, weights, replacement):
    """Each row's draws are categories of positive weight; without replacement, distinct."""
    rows, weight_rows = draws.reshape(-1, draws.shape[-1]).tolist(), weights.reshape(-1, weights.shape[-1]).tolist()
    for row, w in zip(rows, weight_rows, strict=True):
        assert all(w[c] > 0 for c in row), (row, w)
        assert replacement or len(set(row)) == len(row)


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_under_vmap_draws_per_sample_with_torch_s_shapes(replacement):
    w = fb.tensor([[0.0, 1.0, 2.0, 3.0, 0.5]]).expand(8, 5).contiguous()  # the same weights in every sample
    w3 = fb.rand(4, 2, 5) + 0.1
    wt, w3t = torch.tensor(w.tolist()), torch.tensor(w3.tolist())
    fb.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one batched draw: no per-sample loop
        ours = fb.func.vmap(lambda r: fb.multinomial(r, 3, replacement), randomness="different")(w)
        ours3 = fb.func.vmap(lambda r: r.multinomial(2, replacement), randomness="different")(w3)
    theirs = torch.func.vmap(lambda r: torch.multinomial(r, 3, replacement), randomness="different")(wt)
    theirs3 = torch.func.vmap(lambda r: r.multinomial(2, replacement), randomness="different")(w3t)
    assert tuple(ours.shape) == tuple(theirs.shape) and tuple(ours3.shape) == tuple(theirs3.shape)
    assert ours.dtype == fb.int64
    _multinomial_rows_valid(ours, w, replacement)
    _multinomial_rows_valid(ours3, w3, replacement)
    assert not _same_across_samples(ours)  # 'different': each sample its own draw, though the weights agree


def test_multinomial_under_vmap_same_randomness_and_errors_as_torch():
    wu, x = fb.tensor([0.5, 1.0, 2.0, 0.0]), fb.zeros(6, 1, dtype=fb.int64)
    fb.manual_seed(6)
    ours = fb.func.vmap(lambda a: fb.multinomial(wu, 5, True) + a, randomness="same")(x)
    theirs = torch.func.vmap(lambda a: torch.multinomial(torch.tensor(wu.tolist()), 5, True) + a, randomness="same")(
        torch.zeros(6, 1, dtype=torch.long)
    )
    assert tuple(ours.shape) == tuple(theirs.shape) and _same_across_samples(ours)
    _multinomial_rows_valid(ours, wu.expand(6, 4), True)
    w = fb.rand(3, 4) + 0.1
    with pytest.raises(RuntimeError, match="same randomness with a batched tensor input"):
        torch.func.vmap(lambda r: torch.multinomial(r, 2), randomness="same")(torch.rand(3, 4))
    with pytest.raises(fb.FlambeauError, match=r"randomness='same' is not supported for 'multinomial' with a batched"):
        fb.func.vmap(lambda r: fb.multinomial(r, 2), randomness="same")(w)
    with pytest.raises(fb.FlambeauError, match="random operation 'multinomial' while in randomness error mode"):
        fb.func.vmap(lambda r: fb.multinomial(r, 2))(w)
    with pytest.raises(fb.FlambeauError, match=r"\[multinomial\] expected finite non-negative weights"):
        fb.func.vmap(lambda r: fb.multinomial(r, 1), randomness="different")(fb.tensor([[1.0, 1.0], [1.0, -1.0]]))
    nested = fb.func.vmap(fb.func.vmap(lambda r: fb.multinomial(r, 2), randomness="different"), randomness="different")
    draws = nested(fb.rand(2, 3, 5) + 0.1)
    assert tuple(draws.shape) == (2, 3, 2)
    _multinomial_rows_valid(draws, fb.ones(2, 3, 5), False)


# --- the protocol underneath -------------------------------------------------------------------


class Logged:
    """A tensor-like that records what flambeau hands its __torch_function__."""

    calls: list = []

    def __init__(self, t):
        self.t = t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append((func.__name__, types))

        def unwrap(a):
            if isinstance(a, (list, tuple)):
                return type(a)(unwrap(x) for x in a)
            return a.t if isinstance(a, Logged) else a

        return Logged(func(*unwrap(args), **{k: unwrap(v) for k, v in (kwargs or {}).items()}))


def test_torch_function_protocol_for_functions_methods_and_lists():
    Logged.calls = []
    a = Logged(fb.tensor([1.0, 2.0]))
    r = fb.add(a, fb.tensor([3.0, 4.0]), alpha=2)
    assert r.t.tolist() == [7.0, 10.0]
    r = fb.tensor([1.0, 1.0]).mul(a)  # a Tensor method given the override as an argument
    assert r.t.tolist() == [1.0, 2.0]
    r = fb.cat([fb.tensor([0.0]), a])
    assert r.t.tolist() == [0.0, 1.0, 2.0]
    assert [c[0] for c in Logged.calls] == ["add", "mul", "cat"]
    assert Logged.calls[0][1] == (Logged,)


def test_torch_function_protocol_for_functions_bound_with_pybind11():
    """reshape, transpose, zeros_like, ... are pybind11 functions: a call their overloads refuse reaches the
    override; accepted calls, their errors and pickling are as before."""
    import pickle

    Logged.calls = []
    a = Logged(fb.tensor([[1.0, 2.0]]))
    assert fb.reshape(a, (2,)).t.tolist() == [1.0, 2.0]
    assert fb.zeros_like(a).t.tolist() == [[0.0, 0.0]]
    assert fb.transpose(a, 0, 1).t.tolist() == [[1.0], [2.0]]
    assert [c[0] for c in Logged.calls] == ["reshape", "zeros_like", "transpose"]
    assert pickle.loads(pickle.dumps(fb.reshape)) is fb.reshape
    with pytest.raises(TypeError, match="incompatible function arguments"):
        fb.select(fb.zeros(2), "a", 0)


def test_torch_function_returning_not_implemented_is_a_type_error():
    class Refuses:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    with pytest.raises(TypeError, match=r"\[sin\] no implementation found for 'sin'.*Refuses"):
        fb.sin(Refuses())


def test_plain_wrong_arguments_still_raise_the_usual_type_error():
    with pytest.raises(TypeError, match=r"\[sin\] argument 'input' must be a Tensor"):
        fb.sin(object())
    # PyTorch's own tensors define __torch_function__ too; they are not flambeau tensors and stay an error.
    with pytest.raises(TypeError, match=r"\[sin\] argument 'input' must be a Tensor"):
        fb.sin(torch.zeros(2))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rows", [None, 3])
@pytest.mark.parametrize("target_kind", ["index", "weighted", "ignored", "probabilities"])
def test_cross_entropy_per_sample(reduction, rows, target_kind):
    shape = (5, 4) if rows is None else (5, rows, 4)
    x, tx = _pair(*shape)
    w, tw = _pair(4)
    w, tw = w.abs() + 0.1, tw.abs() + 0.1
    if target_kind == "probabilities":
        t, tt = _pair(*shape)
        t, tt = t.softmax(-1), tt.softmax(-1)
    else:
        labels = RNG.integers(0, 4, shape[:-1])
        if target_kind == "ignored":
            labels.reshape(-1)[::3] = 2
        t, tt = fb.tensor(labels), torch.tensor(labels)
    kw = {"reduction": reduction, "label_smoothing": 0.1}
    if target_kind == "weighted":
        kw_fb, kw_t = {**kw, "weight": w}, {**kw, "weight": tw}
    elif target_kind == "ignored":
        kw_fb = kw_t = {**kw, "ignore_index": 2}
    else:
        kw_fb = kw_t = kw
    if rows is None and target_kind == "ignored" and reduction == "mean":
        kw_fb = kw_t = {**kw, "ignore_index": 3}  # a single ignored sample's mean is 0/0
    ours = fb.func.vmap(lambda a, b: fb.nn.functional.cross_entropy(a, b, **kw_fb))(x, t)
    if target_kind in ("ignored", "weighted"):  # torch.func.vmap cannot batch these means: a loop is the oracle
        theirs = torch.stack([torch.nn.functional.cross_entropy(a, b, **kw_t) for a, b in zip(tx, tt, strict=True)])
    else:
        theirs = torch.func.vmap(lambda a, b: torch.nn.functional.cross_entropy(a, b, **kw_t))(tx, tt)
    _close(ours, theirs)


def test_batch_norm_training_updates_batched_running_stats_in_place(monkeypatch):
    """An ensemble's batch norm in training mode (stack_module_state gives batched buffers): one batch norm
    over the batch's channels (no per-sample loop), each sample's running statistics updated as
    torch.func.vmap does."""
    from flambeau.func import _vmap

    monkeypatch.setattr(_vmap, "_warned", set())
    x, tx = _pair(3, 4, 2, 5)
    w, tw = _pair(3, 2)
    mean, tmean = _pair(3, 2)
    var, tvar = _pair(3, 2)
    var, tvar = var.abs() + 0.5, tvar.abs() + 0.5

    def f(a, m, v, g):
        return lib(a).nn.functional.batch_norm(a, m, v, g, training=True, momentum=0.3)

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the loop's "no batching rule" warning
        ours = fb.func.vmap(f)(x, mean, var, w)
    theirs = torch.func.vmap(f)(tx, tmean, tvar, tw)
    _close(ours, theirs)
    _close(mean, tmean)
    _close(var, tvar)
