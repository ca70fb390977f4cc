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


def test_nuclear_norm_of_matrix_samples_is_over_their_two_dims(no_loop):
    # norm(x, 'nuc') without dim is over the sample's two dims (not every dim flattened, as the other norms)
    ours, theirs = _pair(5, 3, 4)
    want = torch.stack([torch.norm(t, "nuc") for t in theirs])
    _close(fb.func.vmap(lambda x: fb.norm(x, "nuc"))(ours), want)
    _close(
        fb.func.vmap(lambda x: x.norm("nuc"), in_dims=2)(ours),
        torch.stack([torch.norm(t, "nuc") for t in theirs.movedim(2, 0)]),
    )
    _close(
        fb.func.vmap(lambda x: fb.norm(x, "nuc", dim=(1, 0), keepdim=True))(ours),
        torch.norm(theirs, "nuc", dim=(2, 1), keepdim=True),
    )


def test_nuclear_norm_of_samples_that_are_not_matrices_raises_the_ops_error():
    with pytest.raises(fb.FlambeauError, match=r"p='nuc' without dim needs a 2-D input, got shape \(3, 4, 2\)"):
        fb.func.vmap(lambda x: fb.norm(x, "nuc"))(fb.ones(5, 3, 4, 2))


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


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_gather_of_a_0d_sample_by_a_1d_index_as_torch(in_dims):
    # gather reads a 0-d input as 1-d: each sample's result has the index's shape.
    x = [fb.randn(3), fb.randn(())][in_dims[0] is None]
    index = [fb.zeros(3, 1, dtype=fb.int64), fb.zeros(2, dtype=fb.int64)][in_dims[1] is None]
    ours = fb.func.vmap(lambda s, i: fb.gather(s, 0, i), in_dims=in_dims)(x, index)
    theirs = torch.func.vmap(lambda s, i: torch.gather(s, 0, i), in_dims=in_dims)(
        torch.from_numpy(x.numpy()), torch.from_numpy(index.numpy())
    )
    close(ours, theirs)


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


# --- indexing, linear algebra and shape ops that once fell back to the loop --------------------------


@pytest.fixture
def no_loop(monkeypatch):
    """Fails the test on the loop's "no batching rule" warning (its record of warned ops emptied first)."""
    from flambeau.func import _vmap

    monkeypatch.setattr(_vmap, "_warned", set())
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "flambeau.func.vmap: there is no batching rule", UserWarning)
        yield


def _ints(high, *shape, low=0):
    a = RNG.integers(low, high, shape)
    return fb.tensor(a), torch.tensor(a)


def _torch_loop(f, in_dims, *tensors):
    """The torch oracle where torch.func.vmap has no batching rule: f on each sample, stacked."""
    size = next(t.shape[d] for t, d in zip(tensors, in_dims, strict=True) if d is not None)
    pairs = list(zip(tensors, in_dims, strict=True))
    outs = [f(*(t if d is None else t.select(d, i) for t, d in pairs)) for i in range(size)]
    if isinstance(outs[0], (tuple, list)):
        return type(outs[0])(torch.stack(parts) for parts in zip(*outs, strict=True))
    return torch.stack(outs)


INDEXING = {
    # name: (f, in_dims, the (fb, torch) pairs)
    "index_select_batched_index": (lambda x, i: x.index_select(1, i), (0, 0), [(4, 3, 5), ("int", 3, 4, 2)]),
    "index_select_shared_self": (lambda x, i: x.index_select(-1, i), (None, 0), [(3, 5), ("int", 5, 3, 4)]),
    "index_select_batch_dim_1": (lambda x, i: x.index_select(0, i), (1, None), [(3, 4, 2), ("int", 3, 2)]),
    "index_select_0d_samples": (lambda x, i: x.index_select(0, i), (0, 0), [(4,), ("int", 1, 4, 1)]),
    "take_along_dim_flat": (lambda x, i: lib(x).take_along_dim(x, i), (0, 0), [(4, 3, 5), ("int", 15, 4, 6)]),
    "take_along_dim_dim": (lambda x, i: lib(x).take_along_dim(x, i, 1), (2, 0), [(3, 5, 4), ("int", 5, 4, 3, 2)]),
    "take": (lambda x, i: lib(x).take(x, i), (0, 0), [(4, 3, 5), ("int", 15, 4, 2, 3, "neg")]),
    "take_shared_index": (lambda x, i: lib(x).take(x, i), (1, None), [(3, 4, 5), ("int", 15, 6, "neg")]),
    "put_accumulate": (lambda x, i, s: x.put(i, s, accumulate=True), (0, 0, 0), [(4, 3, 5), ("int", 15, 4, 6), (4, 6)]),
    "put_shared_source": (lambda x, i, s: x.put(i, s), (0, 0, None), [(4, 3, 5), ("perm", 15, 4, 6), (6,)]),
    "index_fill_batched_value": (lambda x, v: x.index_fill(1, lib(x).tensor([0, 2]), v), (0, 0), [(4, 3, 5), (4,)]),
    "index_fill_batched_index": (lambda x, i: x.index_fill(0, i, -1.0), (-1, 0), [(3, 5, 4), ("int", 3, 4, 2)]),
    "index_put_batched_index": (
        lambda x, i, v: x.index_put((i,), v), (0, 0, 0), [(4, 3, 5), ("perm", 3, 4, 2), (4, 2, 5)]),
    "index_put_accumulate": (
        lambda x, i, v: x.index_put((i,), v, accumulate=True), (1, 0, None), [(3, 4, 5), ("int", 3, 4, 6), (5,)]),
    "masked_scatter": (lambda x, m, s: x.masked_scatter(m, s), (0, 0, 0), [(4, 3, 5), ("bool", 4, 3, 5), (4, 15)]),
    "masked_scatter_shared_mask": (
        lambda x, m, s: x.masked_scatter(m, s), (0, None, 1), [(4, 3, 5), ("bool", 5), (15, 4)]),
    "kron": (lambda a, b: lib(a).kron(a, b), (0, 0), [(4, 2, 3), (4, 3)]),
    "kron_shared": (lambda a, b: lib(a).kron(a, b), (None, 1), [(2, 3), (2, 4, 2)]),
    "meshgrid_xy": (lambda a, b: lib(a).meshgrid(a, b, indexing="xy"), (0, None), [(4, 3), (5,)]),
    "meshgrid_ij": (lambda a, b: lib(a).meshgrid([a, b], indexing="ij"), (0, 0), [(4, 3), (4, 2)]),
    "cartesian_prod": (lambda a, b: lib(a).cartesian_prod(a, b), (0, 0), [(4, 3), (4, 2)]),
    "repeat_interleave_dim": (lambda x: x.repeat_interleave(2, dim=1), (1,), [(3, 4, 2)]),
    "repeat_interleave_flat": (lambda x: x.repeat_interleave(3), (0,), [(4, 3, 2)]),
    "corrcoef": (lambda x: lib(x).corrcoef(x), (0,), [(4, 3, 6)]),
    "linalg_solve": (lambda a, b: lib(a).linalg.solve(a, b), (0, 0), [(4, 3, 3), (4, 3)]),
    "linalg_solve_shared_a": (lambda a, b: lib(a).linalg.solve(a, b), (None, -1), [(3, 3), (3, 2, 4)]),
    "linalg_solve_empty": (lambda a, b: lib(a).linalg.solve(a, b), (0, 0), [(4, 0, 3, 3), (4, 0, 3)]),
    "fill_batched_value": (lambda x, v: x.clone().fill_(v), (0, 0), [(4, 3), (4,)]),
}  # fmt: skip


def _make(spec):
    """A (fb, torch) pair from a spec: a float64 shape, or ("int", high, *shape[, "neg"]), ("bool", *shape),
    ("perm", n, *shape): distinct indices below n in each row (put and index_put without repeats)."""
    if spec[0] == "int":
        neg = spec[-1] == "neg"
        shape = spec[2:-1] if neg else spec[2:]
        return _ints(spec[1], *shape, low=-spec[1] if neg else 0)
    if spec[0] == "bool":
        a = RNG.random(spec[1:]) > 0.5
        return fb.tensor(a), torch.tensor(a)
    if spec[0] == "perm":
        n, shape = spec[1], spec[2:]
        rows = [RNG.permutation(n)[: shape[-1]] for _ in range(int(np.prod(shape[:-1])))]
        a = np.array(rows).reshape(shape)
        return fb.tensor(a), torch.tensor(a)
    return _pair(*spec)


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_and_shape_ops_batch_without_the_loop(name, no_loop):
    f, in_dims, specs = INDEXING[name]
    both(f, in_dims, 0, *[_make(s) for s in specs])


def _complex(*shape):
    a = RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    return fb.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("batch_dim", [0, 1])
def test_integer_math_complex_views_and_unravel_batch_without_the_loop(batch_dim, no_loop):
    ints = _ints(50, 4, 4, 3, low=-50), _ints(50, 4, 4, 3)
    both(lambda a, b: lib(a).gcd(a, b) + lib(a).lcm(a, b), (batch_dim, 0), 0, *ints)
    both(lambda z: z.imag * 2 + lib(z).view_as_real(z).sum(-1), batch_dim, 0, _complex(4, 4, 3))
    flat = _ints(20, 4, 4, 3)
    both(lambda i: lib(i).unravel_index(i, (4, 5)), batch_dim, 0, flat)


LOOP_ORACLE = {
    # torch.func.vmap has no batching rule for these: torch's loop is the oracle
    "index_put_mask": (lambda x, m, v: x.index_put((m,), v), (0, 0, 0), [(4, 3, 5), ("bool", 4, 3), (4, 5)]),
    "narrow_batched_start": (lambda x, s: x.narrow(1, s, 2), (0, 0), [(4, 3, 6), "starts"]),
    # (the function: Tensor.narrow is bound with pybind11, so an unbatched self refuses a batched start)
    "narrow_shared_input": (lambda x, s: lib(x).narrow(x, -1, s, 3), (None, 0), [(2, 6), ("int", 4, 5)]),
    "tensor_split_shared_points": (lambda x, i: lib(x).tensor_split(x, i, 1), (0, 0), [(4, 3, 6), "points"]),
    "cov_weighted": (
        lambda x, f, w: lib(x).cov(x, fweights=f, aweights=w), (0, 0, 0), [(4, 3, 5), ("int", 4, 4, 5), "w"]),
    "cov_vector": (lambda x: lib(x).cov(x, correction=0), (1,), [(6, 4)]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LOOP_ORACLE))
def test_ops_torch_vmap_cannot_batch_agree_with_the_loop(name, no_loop):
    f, in_dims, specs = LOOP_ORACLE[name]
    pairs = []
    for s in specs:
        if s == "points":  # the same split points in every sample: parts of one shape
            pairs.append((fb.tensor([[1, 4]] * 4), torch.tensor([[1, 4]] * 4)))
        elif s == "starts":  # in range for length 2 of 6, from the front and from the end
            pairs.append((fb.tensor([0, -3, 4, -6]), torch.tensor([0, -3, 4, -6])))
        elif s == "w":
            a = RNG.random((4, 5)) + 0.1
            pairs.append((fb.tensor(a), torch.tensor(a)))
        else:
            pairs.append(_make(s))
    ours = fb.func.vmap(f, in_dims=in_dims)(*[p[0] for p in pairs])
    _close(ours, _torch_loop(f, in_dims, *[p[1] for p in pairs]))


def test_split_points_and_repeats_that_differ_per_sample_loop():
    """Parts (repeats) of different sizes per sample cannot be one batch: the loop runs, and says so by
    refusing to stack them, where torch's vmap refuses the call."""
    x = fb.zeros(2, 6)
    with pytest.warns(UserWarning, match="no batching rule for 'tensor_split'"), pytest.raises(fb.FlambeauError):
        fb.func.vmap(lambda a, i: fb.tensor_split(a, i))(x, fb.tensor([[1], [2]]))
    with pytest.warns(UserWarning, match="no batching rule for 'repeat_interleave'"), pytest.raises(fb.FlambeauError):
        fb.func.vmap(lambda a, r: a.repeat_interleave(r))(fb.zeros(2, 2), fb.tensor([[1, 2], [2, 2]]))


def test_batch_norm_training_updates_shared_running_stats_as_the_loop(no_loop):
    """Shared running statistics in training mode: the loop updates them once per sample, in order; the
    batched rule applies the same B updates in closed form (torch.func.vmap refuses this call)."""
    x, tx = _pair(3, 4, 2, 5)
    mean, tmean = _pair(2)
    var, tvar = _pair(2)
    var, tvar = var.abs() + 0.5, tvar.abs() + 0.5

    def f(a, m, v):
        return lib(a).nn.functional.batch_norm(a, m, v, training=True, momentum=0.3)

    ours = fb.func.vmap(f, in_dims=(0, None, None))(x, mean, var)
    theirs = _torch_loop(f, (0, None, None), tx, tmean, tvar)
    _close(ours, theirs)
    _close(mean, tmean)
    _close(var, tvar)


@pytest.mark.parametrize("weight_dim", [None, 0])
def test_embedding_max_norm_renorms_rows_as_the_loop(weight_dim, no_loop):
    """embedding with max_norm renorms the looked-up rows in place: a shared table once for every sample's
    rows, a batched one per sample (torch.func.vmap refuses the in-place write)."""
    w, tw = _pair(*((3,) if weight_dim == 0 else ()), 10, 4)
    w, tw = w * 3, tw * 3
    i, ti = _ints(10, 3, 2, 3)

    def f(table, idx):
        return lib(table).nn.functional.embedding(idx, table, max_norm=1.5, norm_type=1.0)

    ours = fb.func.vmap(f, in_dims=(weight_dim, 0))(w, i)
    theirs = _torch_loop(f, (weight_dim, 0), tw, ti)
    _close(ours, theirs)
    _close(w, tw)


def test_linspace_with_batched_tensor_ends(no_loop):
    s, ts = _pair(4)
    both(lambda a: lib(a).linspace(a, 2.0, 7, dtype=a.dtype), 0, 0, (s, ts))
    both(lambda a: lib(a).logspace(-1.0, a, 5, base=2.0, dtype=a.dtype), 0, 0, (s, ts))


def test_isin_with_a_batched_test_set(no_loop):
    e, te = _ints(6, 4, 3, 2)
    t, tt = _ints(6, 4, 3)
    both(lambda a, b: lib(a).isin(a, b), (0, 0), 0, (e, te), (t, tt))
    both(lambda a, b: lib(a).isin(a, b, invert=True), (None, 0), 0, (e[0], te[0]), (t, tt))


EMBEDDING_BAGS = {
    # name: (f of (table, indices[, per-sample weights]), in_dims, table shape, indices shape)
    "max_batched_table_padding": (
        lambda w, i: lib(w).nn.functional.embedding_bag(i, w, mode="max", padding_idx=2), (0, 0), (3, 10, 4),
        (3, 2, 5)),
    "mean_shared_table": (
        lambda w, i: lib(w).nn.functional.embedding_bag(i, w, mode="mean"), (None, 0), (10, 4), (3, 2, 5)),
    "sum_offsets_with_an_empty_bag": (
        lambda w, i: lib(w).nn.functional.embedding_bag(i, w, lib(w).tensor([0, 3, 3, 6]), mode="sum"), (0, 1),
        (3, 10, 4), (8, 3)),
    "sum_shared_indices_last_offset": (
        lambda w, i: lib(w).nn.functional.embedding_bag(i, w, lib(w).tensor([0, 3, 8]), include_last_offset=True),
        (2, None), (10, 4, 3), (8,)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EMBEDDING_BAGS))
def test_embedding_bag_batches_its_bags_without_the_loop(name, no_loop):
    f, in_dims, wshape, ishape = EMBEDDING_BAGS[name]
    both(f, in_dims, 0, _pair(*wshape), _ints(10, *ishape))


def test_embedding_bag_per_sample_weights(no_loop):
    f = lambda w, i, p: lib(w).nn.functional.embedding_bag(i, w, mode="sum", per_sample_weights=p)  # noqa: E731
    both(f, (0, 0, 0), 0, _pair(3, 10, 4), _ints(10, 3, 2, 5), _pair(3, 2, 5))


@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (4, 6)])
def test_feature_dropout_backward_batches_the_mask(shape, no_loop):
    """native_dropout_backward with a feature mask [N, C, 1, ...] (or an elementwise one): the batch joins N."""
    g, tg = _pair(*shape)
    m = RNG.random(shape[:3] + (1,) * (len(shape) - 3)) > 0.5
    ours = fb.func.vmap(lambda a, b: fb.native_dropout_backward(a, b, 2.0))(g, fb.tensor(m))
    _close(ours, tg * torch.tensor(m) * 2.0)


def test_histc_block_diag_combinations_quantile_batch_without_the_loop(no_loop):
    x, tx = _pair(4, 3, 5)
    both(lambda a, b: lib(a).block_diag(a, b), (0, None), 0, (x, tx), _pair(2))
    both(lambda a: lib(a).combinations(a, 2, with_replacement=True), 0, 0, _pair(4, 5))
    both(lambda a: lib(a).quantile(a, 0.3), 0, 0, _pair(4))  # 0-d samples
    both(lambda a: lib(a).nanquantile(a, lib(a).tensor([0.2, 0.9], dtype=a.dtype), dim=1, keepdim=True), 1, 0, (x, tx))
    for kw in ({"bins": 4, "min": -1, "max": 1}, {"bins": 6}):  # a given range, and each sample's own
        f = lambda a, kw=kw: lib(a).histc(a, **kw)  # noqa: E731
        _close(fb.func.vmap(f)(x), _torch_loop(f, (0,), tx))


def test_per_sample_gradients_of_max_pooling(no_loop):
    """vmap(grad) of a max pooling: its backward (max_pool_backward) joins the batch to the images."""
    x, tx = _pair(3, 2, 4, 6)

    def loss(a):
        return lib(a).nn.functional.max_pool2d(a, 2, stride=(2, 3)).pow(2).sum()

    _close(fb.func.vmap(fb.func.grad(loss))(x), torch.func.vmap(torch.func.grad(loss))(tx))


ERRORS = {
    # an argument the op refuses: the rule leaves it to the loop, so the op's own error names it
    "take_index_out_of_range": (
        lambda x, i: fb.take(x, i), (fb.zeros(2, 3), fb.tensor([[0], [3]])), IndexError, r"\[index\] index 3"),
    "put_index_out_of_range": (
        lambda x, i: x.put(i, fb.ones(1)), (fb.zeros(2, 3), fb.tensor([[-4], [0]])), IndexError, "out of bounds"),
    "embedding_max_norm_index_out_of_range": (
        lambda w, i: fb.nn.functional.embedding(i, w, max_norm=1.0), (fb.ones(2, 3, 2), fb.tensor([[0], [3]])),
        IndexError, r"\[embedding_renorm_\] index 3"),
    "meshgrid_of_two_dtypes": (
        lambda a, b: fb.meshgrid(a, b), (fb.ones(2, 3), fb.ones(2, 2, dtype=fb.int64)), TypeError, "same dtype"),
    "masked_scatter_int_mask": (
        lambda x, m: x.masked_scatter(m, fb.ones(3)), (fb.ones(2, 3), fb.ones(2, 3, dtype=fb.int64)), TypeError,
        "mask must be a bool tensor"),
    "cov_negative_fweights": (
        lambda x, f: fb.cov(x, fweights=f), (fb.ones(2, 3), fb.tensor([[1, 1, 1], [1, -1, 1]])), fb.FlambeauError,
        "fweights cannot be negative"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_batched_rules_leave_bad_arguments_to_the_op_s_own_error(name):
    f, args, error, words = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the loop that raises warns first)
        with pytest.raises(error, match=words):
            fb.func.vmap(f)(*args)


def test_rules_that_read_the_batch_s_values_under_nested_vmap(no_loop):
    """Rules that check their indices (take), their mask's counts (masked_scatter), shared split points or
    a data range (histc) read them from the tensor under every level when vmap is nested."""
    x, tx = _pair(2, 3, 4, 5)
    i, ti = _ints(20, 2, 3, 6)
    m = RNG.random((2, 3, 4, 5)) > 0.5
    nested = lambda f, *a: fb.func.vmap(fb.func.vmap(f))(*a)  # noqa: E731
    _close(nested(fb.take, x, i), torch.func.vmap(torch.func.vmap(torch.take))(tx, ti))
    scatter = lambda a, k: a.masked_scatter(k, a.flatten() * 2)  # noqa: E731
    _close(nested(scatter, x, fb.tensor(m)), torch.func.vmap(torch.func.vmap(scatter))(tx, torch.tensor(m)))
    histc = lambda a: lib(a).histc(a, bins=3)  # noqa: E731 (each sample's own range)
    _close(nested(histc, x), torch.stack([_torch_loop(histc, (0,), tx[k]) for k in range(2)]))
    split = lambda a, p: lib(a).tensor_split(a, p, 1)  # noqa: E731
    points = fb.tensor([[[1, 3]] * 3] * 2)
    _close(nested(split, x, points), torch.tensor_split(tx, [1, 3], 3))


def _written(index_of, a, *rest):
    """``a`` copied, then ``copy[index] = value``: the function vmap batches for ``__setitem__``."""
    y = a.clone()
    index, value = index_of(*rest)
    y[index] = value
    return y


SETITEM = {
    # name: (index and value from the other arguments, in_dims, shapes)
    "batched_index_and_value": (lambda i, v: (i, v), (0, 0, 0), [(4, 5, 3), ("perm", 5, 4, 2), (4, 2, 3)]),
    "batched_index_shared_value": (lambda i, v: (i, v), (0, 0, None), [(4, 5, 3), ("perm", 5, 4, 2), (3,)]),
    "two_batched_indices": (lambda i, j, v: ((i, j), v), (0, 0, 0, 0),
                            [(4, 5, 3), ("perm", 5, 4, 2), ("int", 3, 4, 2), (4, 2)]),
    "shared_index_after_a_slice": (lambda i, v: ((slice(None), i), v), (2, None, 0), [(5, 3, 4), ("perm", 3, 2), (4,)]),
    "shared_index_after_an_ellipsis": (
        lambda i, v: ((Ellipsis, i), v), (0, None, 0), [(4, 5, 3), ("perm", 3, 2), (4, 5, 2)]),
    "shared_mask": (lambda m, v: (m, v), (0, None, 0), [(4, 5, 3), ("bool", 5, 3), (4,)]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SETITEM))
def test_setitem_with_tensor_indices_batches_without_the_loop(name, no_loop):
    index_of, in_dims, specs = SETITEM[name]
    both(lambda a, *rest: _written(index_of, a, *rest), in_dims, 0, *[_make(s) for s in specs])


GETITEM = {
    # name: (index from the other arguments, in_dims, shapes)
    "shared_table_batched_columns": (lambda i: (slice(None), i), (None, 0), [(3, 6), ("int", 6, 4, 2, 2)]),
    "batched_index_after_two_slices": (
        lambda i: (slice(None), slice(1, 3), i), (0, 0), [(4, 2, 3, 5), ("int", 5, 4, 3)]),
    "batched_and_shared_indices_after_a_slice": (
        lambda i, j: (slice(None), i, j), (1, 0, None), [(2, 4, 5, 3), ("int", 5, 4, 2), ("int", 3, 2)]),
    "shared_tensor_two_indices": (lambda i, j: (i, j), (None, 0, 0), [(5, 3), ("int", 5, 4, 2), ("int", 3, 4, 1)]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(GETITEM))
def test_getitem_with_batched_indices_after_slices_without_the_loop(name, no_loop):
    index_of, in_dims, specs = GETITEM[name]
    both(lambda a, *rest: a[index_of(*rest)], in_dims, 0, *[_make(s) for s in specs])


@pytest.mark.parametrize("dim", [0, -1])
def test_trapezoid_with_batched_1d_spacing_of_n_d_samples(dim, no_loop):
    """A batched 1-d x spaces each sample's y along dim: viewed along that dim, it broadcasts."""
    x = np.cumsum(RNG.random((4, 5)), 1)
    spacing = (fb.tensor(x), torch.tensor(x))
    both(lambda a, b: lib(a).trapezoid(a, b, dim=dim), (0, 0), 0, _pair(4, 5, 5), spacing)
    both(lambda a, b: lib(a).cumulative_trapezoid(a, x=b, dim=dim), (2, 0), 0, _pair(5, 5, 4), spacing)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_with_a_batched_q_per_sample(interpolation, no_loop):
    """Each sample's own q (torch.func.vmap has no rule: torch's loop is the oracle), NaNs included."""
    a = RNG.standard_normal((4, 3, 5))
    a[1, 0, 2], a[2] = np.nan, np.nan
    x, tx = fb.tensor(a), torch.tensor(a)
    v1, v0 = RNG.random((4, 2)), RNG.random(4)  # a 1-d q per sample, and a 0-d one
    (q1, tq1), (q0, tq0) = (fb.tensor(v1), torch.tensor(v1)), (fb.tensor(v0), torch.tensor(v0))
    for name, dim, keepdim, (q, tq) in [
        ("quantile", 1, True, (q1, tq1)),
        ("nanquantile", None, False, (q1, tq1)),
        ("nanquantile", -1, False, (q0, tq0)),
        ("quantile", None, True, (q0, tq0)),
    ]:
        f = lambda s, p, name=name, dim=dim, keepdim=keepdim: getattr(lib(s), name)(  # noqa: E731
            s, p, dim=dim, keepdim=keepdim, interpolation=interpolation
        )
        _close(fb.func.vmap(f)(x, q), _torch_loop(f, (0, 0), tx, tq))
    with (
        pytest.warns(UserWarning, match="no batching rule for 'quantile'"),
        pytest.raises(fb.FlambeauError, match="q values"),
    ):
        fb.func.vmap(fb.quantile)(x, q0 + 1)  # q outside [0, 1]: the op's own error
