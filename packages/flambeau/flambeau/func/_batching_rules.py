"""Batching rules written for op families (Note [vmap on __torch_function__] in ``_vmap.py``): norms, losses,
matrix functions, indexing, stacking, and the layout of conversions. Each takes a ``_Call`` (the op with its
level's BatchedTensors unwrapped into ``_Batched`` markers, batch dim in front) and returns the result at
that level; one that cannot batch a call (a batched argument it has no way to fold in) runs the loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flambeau_core

from flambeau.func._rnn_batching import rnn_layer
from flambeau.func._vmap import (
    BatchedTensor,
    _all_batched,
    _apply,
    _Batched,
    _Call,
    _elementwise,
    _expand,
    _images,
    _is_tensorlike,
    _loop,
    _pad,
    _param_names,
    _scalars_lifted,
    _shift,
    _shift_dims,
    _sizes_arg,
    _tensor_slots,
    _with_args,
)


def _masked_fill(call: _Call) -> Any:
    """masked_fill with a batched mask or value: ``where(mask, value, input)`` on the padded samples."""
    x, mask, value = (list(call.args) + [call.kwargs.get("mask"), call.kwargs.get("value")])[:3]
    if not isinstance(mask, _Batched) and not isinstance(value, _Batched):
        return _elementwise(call)
    rank = max(call.logical_dim(x), call.logical_dim(mask))
    xv = _pad(_expand(x, call), rank, call).value
    mv = _pad(_expand(mask, call), rank, call).value
    if isinstance(value, _Batched):
        value = _pad(value, rank, call).value.to(xv.dtype)
    elif _is_tensorlike(value):
        value = value.to(xv.dtype)
    else:
        value = flambeau_core.scalar_tensor(value, dtype=xv.dtype)
    return call.wrap(flambeau_core.where(mv, value, xv))


def _indexed(call: _Call) -> Any:
    """gather/scatter and kin, whose index has the input's rank: every tensor batched, the dim shifted."""
    args, kwargs = list(call.args), dict(call.kwargs)
    names = _param_names(call, args, kwargs)
    if "dim" not in names[: len(args)] and kwargs.get("dim") is None:
        return _loop(call)  # take_along_dim without a dim indexes the flattened input
    if call.logical_dim(_expand(args[0], call)) == 0:
        return _scalars_lifted(call, _all_batched)
    return _all_batched(call)


def _index_along(call: _Call) -> Any:
    """index_add/index_copy/index_fill: a 1-d index into one dim; input and source batched, the index not."""
    args, kwargs = list(call.args), dict(call.kwargs)
    index = args[2] if len(args) > 2 else kwargs.get("index")
    value = args[3] if call.name == "index_fill" and len(args) > 3 else kwargs.get("value")
    if isinstance(value, _Batched):
        return _loop(call)
    if call.logical_dim(_expand(args[0], call)) == 0:
        fill_value = (3, "value") if call.name == "index_fill" else ()  # stays 0-d
        return _scalars_lifted(call, _index_along, keep=fill_value)
    if isinstance(index, _Batched):
        return _index_as_scatter(call, args, kwargs)
    args[0] = _expand(args[0], call)
    if len(args) > 3 and (_is_tensorlike(args[3]) or isinstance(args[3], _Batched)) and call.name != "index_fill":
        args[3] = _expand(args[3], call)
    if _is_tensorlike(kwargs.get("source")) or isinstance(kwargs.get("source"), _Batched):
        kwargs["source"] = _expand(kwargs["source"], call)
    _shift_dims(call, args, kwargs)
    return call.wrap(call.call(args, kwargs))


def _index_as_scatter(call: _Call, args: list, kwargs: dict) -> Any:
    """index_add/index_copy/index_fill with a batched index: the scatter that writes the same places, its
    index laid along the dim and expanded over the other dims of the source (of the input for fill)."""
    bound = dict(zip(("input", "dim", "index", "source"), args, strict=False)) | kwargs
    x, b = _expand(bound["input"], call), call.batch_size
    rank = call.logical_dim(x)
    d = bound["dim"] % rank
    iv = bound["index"].value.reshape(b, -1)
    k = iv.shape[1]
    iv = iv.reshape(b, *(1,) * d, k, *(1,) * (rank - d - 1))
    if call.name == "index_fill":
        shape = list(x.value.shape)
        shape[d + 1] = k
        value = args[3] if len(args) > 3 else kwargs["value"]
        return call.wrap(flambeau_core.scatter(x.value, d + 1, iv.expand(*shape), value))
    src = _pad(_expand(bound["source"], call), rank, call).value
    iv = iv.expand(*src.shape)
    if call.name == "index_copy":
        return call.wrap(flambeau_core.scatter(x.value, d + 1, iv, src))
    alpha = bound.get("alpha", 1)
    return call.wrap(flambeau_core.scatter_add(x.value, d + 1, iv, src * alpha if alpha != 1 else src))


def _conv_transpose(call: _Call) -> Any:
    """conv_transpose1d/2d: a shared weight is more images (_images); batched weights become groups of
    one transposed convolution (the batch's input channels side by side, each sample's weights a group)."""
    names = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")
    bound = {"bias": None, "stride": 1, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 1}
    bound.update(zip(names, call.args, strict=False))
    bound.update(call.kwargs)
    w, bias = bound["weight"], bound["bias"]
    if not isinstance(w, _Batched):
        return _images(call) if not isinstance(bias, _Batched) else _loop(call)
    spatial = int(call.name[-2])
    b, x = call.batch_size, _expand(bound["input"], call)
    single = call.logical_dim(x) == spatial + 1  # one image [C, ...]
    v = x.value.unsqueeze(1) if single else x.value  # [B, N, C, ...]
    n, wv = v.shape[1], w.value  # weights [B, C_in, C_out / groups, ...]
    c_out = wv.shape[2] * bound["groups"]
    xg = v.transpose(0, 1).reshape(n, b * v.shape[2], *v.shape[3:])
    bg = None if bias is None else _expand(bias, call).value.reshape(b * c_out)
    args = [xg, wv.reshape(b * wv.shape[1], *wv.shape[2:]), bg, bound["stride"], bound["padding"]]
    out = _apply(call.func, [*args, bound["output_padding"], bound["groups"] * b, bound["dilation"]], {})
    out = out.reshape(n, b, c_out, *out.shape[2:]).transpose(0, 1)
    return call.wrap(out.squeeze(1) if single else out)


def _searchsorted(call: _Call) -> Any:
    """searchsorted/bucketize: a shared 1-d sequence serves every sample as is; a batched one (or an N-d
    sequence) searches each sample's values in that sample's sequence, the values flattened to one row."""
    if call.name == "bucketize":
        values, seq = (list(call.args) + [call.kwargs.get("boundaries")])[:2]
        kwargs = {k: v for k, v in call.kwargs.items() if k != "boundaries"}
    else:
        seq, values = (list(call.args) + [call.kwargs.get("input")])[:2]
        kwargs = {k: v for k, v in call.kwargs.items() if k != "input"}
    sorter = kwargs.get("sorter")
    if not isinstance(seq, _Batched) and not isinstance(sorter, _Batched) and seq.dim() == 1:
        v = _expand(values, call).value
        bucketize = call.name == "bucketize"
        return call.wrap(
            flambeau_core.bucketize(v, seq, **kwargs) if bucketize else flambeau_core.searchsorted(seq, v, **kwargs)
        )
    if call.logical_dim(_expand(seq, call)) != 1:
        return _all_batched(call) if call.name == "searchsorted" else _loop(call)
    b, v = call.batch_size, _expand(values, call).value
    if sorter is not None:
        kwargs["sorter"] = _expand(sorter, call).value
    out = flambeau_core.searchsorted(_expand(seq, call).value, v.reshape(b, -1), **kwargs)
    return call.wrap(out.reshape(v.shape))


def _quantile(call: _Call) -> Any:
    """quantile/nanquantile of each sample (of its flattened values when dim is None); a 1-d q puts its dim
    first, in front of the batch dim, so it is moved behind it."""
    bound = {"dim": None, "keepdim": False, **dict(zip(("input", "q", "dim", "keepdim"), call.args, strict=False))}
    bound.update(call.kwargs)
    x, q, dim = bound["input"], bound["q"], bound["dim"]
    rank = call.logical_dim(x) if isinstance(x, _Batched) else 0
    if rank == 0 or isinstance(q, _Batched):
        return _loop(call)
    extra = {k: v for k, v in bound.items() if k not in ("input", "q", "dim", "keepdim")}
    if dim is None:
        out = _apply(call.func, [x.value.reshape(call.batch_size, -1), q, 1, False], extra)
        out = out.reshape(*out.shape, *(1,) * rank) if bound["keepdim"] else out
    else:
        out = _apply(call.func, [x.value, q, _shift(dim), bound["keepdim"]], extra)
    return call.wrap(out.movedim(0, 1) if _is_tensorlike(q) and q.dim() == 1 else out)


def _layout_free(call: _Call) -> Any:
    """to/contiguous: a memory format is a layout of the sample the batch cannot keep (channels_last of a
    5-d physical tensor); the values do not depend on it."""
    kwargs = {k: v for k, v in call.kwargs.items() if k != "memory_format"}
    return _elementwise(_with_args(call, call.args, kwargs))


def _pointwise_loss(call: _Call) -> Any:
    """mse/l1/huber/smooth l1/binary cross entropy: elementwise losses (reduction 'none') reduced per sample."""
    args, kwargs = list(call.args), dict(call.kwargs)
    names = _param_names(call, args, kwargs)
    slot = names.index("reduction") if "reduction" in names else len(args)
    if slot < len(args):
        reduction, args[slot] = args[slot], 0
    else:
        reduction, kwargs["reduction"] = kwargs.get("reduction", 1), 0
    # The losses take an input and target of one shape (no broadcasting): every tensor batched.
    for c, k in _tensor_slots(args, kwargs):
        c[k] = _expand(c[k], call)
    out = _elementwise(_with_args(call, args, kwargs))
    if reduction == 0:
        return out
    flat = out._value.reshape(call.batch_size, -1)
    return BatchedTensor(flat.sum(1) if reduction == 2 else flat.mean(1), call.level)


def _batch_in_front(call: _Call) -> Any:
    """Ops over trailing dims that take any leading ones (layer norm, matrix functions): the batch dim is
    one more, when only the input is batched."""
    x, *rest = call.args
    if not isinstance(x, _Batched) or any(isinstance(a, _Batched) for a in [*rest, *call.kwargs.values()]):
        return _loop(call)
    return call.wrap(call.call(call.args, call.kwargs))


def _embedding(call: _Call) -> Any:
    """embedding(weight, indices): batched indices look up the shared table; a batched table is a gather
    of each sample's rows (padding_idx and the rest only shape the gradient, which the gather's gives)."""
    weight, indices = call.args[0], call.args[1]
    if not isinstance(weight, _Batched):
        return call.wrap(call.call(call.args, call.kwargs))
    b, wv = call.batch_size, weight.value  # [B, V, D]
    iv = _expand(indices, call).value
    flat = iv.reshape(b, -1, 1).expand(b, iv[0].numel(), wv.shape[2])
    return call.wrap(flambeau_core.gather(wv, 1, flat).reshape(*iv.shape, wv.shape[2]))


def _nll_loss(call: _Call) -> Any:
    """nll_loss_nd on [C] or [N, C, ...] samples: the batch joins N, the loss is computed per element
    (reduction 'none') and reduced per sample as the op would (a mean divides by the weights of the
    sample's targets that are not ignored)."""
    names = ("input", "target", "weight", "reduction", "ignore_index")
    bound = {"weight": None, "reduction": 1, "ignore_index": -100}
    bound.update(zip(names, call.args, strict=False))
    bound.update(call.kwargs)
    x, t = _expand(bound["input"], call), _expand(bound["target"], call)
    b, rank = call.batch_size, call.logical_dim(x)
    xv, tv = x.value, t.value
    if rank >= 2:
        xv, tv = xv.flatten(0, 1), tv.flatten(0, 1)
    loss = _apply(call.func, [xv, tv, None, 0, bound["ignore_index"]], {}).reshape(t.value.shape)
    # each target's weight (0 where ignored), the sample's own when the weights are batched
    counted = (t.value != bound["ignore_index"]).to(loss.dtype)
    if bound["weight"] is not None:
        wv = _expand(bound["weight"], call).value  # [B, C]
        safe = t.value.clamp(0, wv.shape[1] - 1).reshape(b, -1)
        counted = counted * flambeau_core.gather(wv, 1, safe).reshape(t.value.shape)
        loss = loss * counted
    reduction = bound["reduction"]
    if reduction == 0:
        return BatchedTensor(loss, call.level)
    total = loss.reshape(b, -1).sum(1)
    if reduction == 2:
        return BatchedTensor(total, call.level)
    return BatchedTensor(total / counted.reshape(b, -1).sum(1), call.level)


def _prelu(call: _Call) -> Any:
    """prelu: ``where(x > 0, x, weight * x)``, the weight along the sample's channel dim (dim 1)."""
    x, weight = (_rewrap(a, call) for a in call.args[:2])
    if x.dim() >= 2 and weight.numel() > 1:
        weight = weight.reshape(weight.shape[0], *(1,) * (x.dim() - 2))
    elif x.dim() == 0:
        weight = weight.reshape(())
    return flambeau_core.where(x > 0, x, weight * x)


def _broadcast_tensors(call: _Call) -> Any:
    """_broadcast_tensors: each sample expanded to the samples' broadcast shape, the batch dim in front."""
    tensors = call.args[0]
    shapes = [tuple(t.value.shape[1:]) if isinstance(t, _Batched) else tuple(t.shape) for t in tensors]
    shape = flambeau_core.broadcast_shapes(*shapes)
    out = [_pad(_expand(t, call), len(shape), call).value.expand(call.batch_size, *shape) for t in tensors]
    return call.wrap(tuple(out))


def _pad_nd(call: _Call) -> Any:
    """Padding of the last dims: a constant pad of any rank is padded as is; the other modes take [C, ...]
    or [N, C, ...], the batch joining N."""
    names = ("input", "pad", "mode", "value")
    bound = {"mode": "constant", **dict(zip(names, call.args, strict=False)), **call.kwargs}
    x = bound["input"]
    if not isinstance(x, _Batched):
        return _loop(call)
    padded = len(bound["pad"]) // 2
    rank = call.logical_dim(x)
    if bound["mode"] == "constant" or rank == padded + 1:
        return call.wrap(call.call(call.args, call.kwargs))
    if rank != padded + 2:
        return _loop(call)
    v = x.value
    out = _apply(call.func, [v.flatten(0, 1), *[bound[k] for k in names[1:] if k in bound]], {})
    return call.wrap(out.unflatten(0, (call.batch_size, v.shape[1])))


def _matrix_entries(call: _Call) -> Any:
    """trace/diag/fliplr/flipud/ravel/tile/rot90/msort/t on the sample, composed of batched views."""
    x = call.args[0]
    if not isinstance(x, _Batched) or any(isinstance(a, _Batched) for a in [*call.args[1:], *call.kwargs.values()]):
        return _loop(call)
    v, rank, name, b = x.value, call.logical_dim(x), call.name, call.batch_size
    rest = list(call.args[1:])
    if name == "t" and rank <= 2:
        return call.wrap(v.transpose(1, 2) if rank == 2 else v)
    if name == "trace" and rank == 2:
        return call.wrap(v.diagonal(0, 1, 2).sum(-1))
    if name == "diag" and rank in (1, 2):
        offset = rest[0] if rest else call.kwargs.get("diagonal", 0)
        return call.wrap(v.diagonal(offset, 1, 2) if rank == 2 else flambeau_core.diag_embed(v, offset))
    if name in ("fliplr", "flipud") and rank >= (2 if name == "fliplr" else 1):
        return call.wrap(v.flip(2 if name == "fliplr" else 1))
    if name == "ravel":
        return call.wrap(v.reshape(b, -1))
    if name == "tile":
        sizes = _sizes_arg(list(call.args), dict(call.kwargs), "dims")
        sizes = (1,) * (rank - len(sizes)) + tuple(sizes)
        return call.wrap(_pad(x, len(sizes), call).value.repeat(1, *sizes))
    if name == "rot90" and rank >= 2:
        k = rest[0] if rest else call.kwargs.get("k", 1)
        dims = rest[1] if len(rest) > 1 else call.kwargs.get("dims", (0, 1))
        return call.wrap(flambeau_core.rot90(v, k, [_shift(d % rank) for d in dims]))
    if name == "msort" and rank >= 1:
        return call.wrap(flambeau_core.sort(v, dim=1)[0])
    return _loop(call)


def _scaled_products(call: _Call) -> Any:
    """addmm/addmv/addr/baddbmm/addbmm: ``beta * input + alpha * product``, the product batched by the
    product's own rule (beta 0 ignores input, NaNs included, as the op does)."""
    names = ("input", "a", "b")
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    beta, alpha = bound.get("beta", 1), bound.get("alpha", 1)
    a, m = (_rewrap(bound[k], call) for k in ("a", "b"))
    if call.name == "addr":
        product = flambeau_core.mul(a.unsqueeze(-1), m)
    else:
        product = flambeau_core.matmul(a, m)
        if call.name == "addbmm":
            product = product.sum(0)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    inp = _rewrap(bound["input"], call)
    return (inp * beta if beta != 1 else inp) + product


def _where(call: _Call) -> Any:
    """where(condition, input, other) is elementwise; where(condition) is nonzero, one shape per sample."""
    if len(call.args) + len(call.kwargs) == 1:
        return _loop(call)
    return _elementwise(call)


def _view_as_complex(call: _Call) -> Any:
    """The batch dim may sit anywhere in memory (in_dims): the samples are laid out as the op needs."""
    x = call.args[0]
    v = x.value
    if v.stride(-1) != 1 or any(st % 2 for st in v.stride()[:-1]):
        v = v.contiguous()
    return call.wrap(_apply(call.func, [v], {}))


def _rewrap(x: Any, call: _Call) -> Any:
    return BatchedTensor(x.value, call.level) if isinstance(x, _Batched) else x


def _layer_norm(call: _Call) -> Any:
    """native_layer_norm: with a batched weight or bias, normalized without them and scaled after."""
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    weight, bias = bound.get("weight"), bound.get("bias")
    if not isinstance(weight, _Batched) and not isinstance(bias, _Batched):
        return _batch_in_front(call)
    xv = _expand(bound["input"], call).value
    out, mean, rstd = _apply(call.func, [xv, bound["normalized_shape"], None, None, bound["eps"]], {})
    y = _affine(BatchedTensor(out, call.level), weight, bias, call, ())
    return y, BatchedTensor(mean, call.level), BatchedTensor(rstd, call.level)


def _affine(y: BatchedTensor, weight: Any, bias: Any, call: _Call, trailing: tuple) -> BatchedTensor:
    """``y * weight + bias`` on the samples, weight and bias viewed with ``trailing`` unit dims."""
    if weight is not None:
        w = _rewrap(weight, call)
        y = y * (w.reshape(*w.shape, *trailing) if trailing else w)
    if bias is not None:
        b = _rewrap(bias, call)
        y = y + (b.reshape(*b.shape, *trailing) if trailing else b)
    return y


def _group_norm(call: _Call) -> Any:
    """native_group_norm on [N, C, ...] samples: the batch joins the N images (the statistics are per
    image); a batched weight or bias is applied after."""
    names = ("input", "weight", "bias", "batch", "channels", "hxw", "group", "eps")
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    x, b, n = _expand(bound["input"], call), call.batch_size, bound["batch"]
    weight, bias = bound["weight"], bound["bias"]
    per_sample = isinstance(weight, _Batched) or isinstance(bias, _Batched)
    if per_sample:
        bound["weight"] = bound["bias"] = None
    bound["input"], bound["batch"] = x.value.flatten(0, 1) if call.logical_dim(x) > 1 else x.value, b * n
    out, mean, rstd = _apply(call.func, [bound[k] for k in names], {})
    y = BatchedTensor(out.reshape(x.value.shape), call.level)
    if per_sample:
        y = _affine(y, weight, bias, call, (1,) * (call.logical_dim(x) - 2))
    return y, BatchedTensor(mean.reshape(b, n, -1), call.level), BatchedTensor(rstd.reshape(b, n, -1), call.level)


def _batch_norm(call: _Call) -> Any:
    """native_batch_norm on [N, C, ...] samples: each sample's channels become channels of one batch norm
    (N images of B*C channels), its parameters and statistics laid out [B, C]. Training updates batched
    running statistics (an ensemble's, from stack_module_state) in place through that layout; shared ones
    it would update once per sample, which the loop does, sample after sample."""
    names = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps")
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    x, training = bound["input"], bound["training"]
    stats = [bound[k] for k in ("running_mean", "running_var")]
    in_place = all(s is None or isinstance(s, _Batched) and s.value.is_contiguous() for s in stats)
    if call.logical_dim(_expand(x, call)) < 2 or training and not in_place:
        return _loop(call)
    b = call.batch_size
    v = _expand(x, call).value  # [B, N, C, ...]
    n, c = v.shape[1], v.shape[2]
    for k in ("weight", "bias", "running_mean", "running_var"):
        p = bound[k]
        if p is not None:
            # batched contiguous statistics are viewed (the op's update lands in them); an unbatched
            # parameter expanded is copied (a stride-0 view the op may not take)
            bound[k] = _expand(p, call).value.reshape(b * c).contiguous()
    bound["input"] = v.transpose(0, 1).reshape(n, b * c, *v.shape[3:])
    out, mean, invstd = _apply(call.func, [bound[k] for k in names], {})
    out = out.reshape(n, b, c, *v.shape[3:]).transpose(0, 1)
    return tuple(BatchedTensor(r, call.level) for r in (out, *(s.reshape(b, s.numel() // b) for s in (mean, invstd))))


def _matrix_batch(call: _Call) -> Any:
    """_linalg_solve/_linalg_lstsq/_linalg_pinv, whose arguments share their batch dims: all batched. An
    output that is empty for an empty sample (lstsq's residuals) gets its batch dim too."""
    if any(isinstance(a, _Batched) and a.value.numel() == 0 for a in call.args):
        return _loop(call)
    if call.name == "_linalg_pinv":  # atol and rtol broadcast against the matrices' batch dims
        rank = call.logical_dim(_expand(call.args[0], call)) - 2
        args = [call.args[0], *(_pad(_expand(a, call), rank, call) for a in call.args[1:3]), *call.args[3:]]
        call = _with_args(call, args, call.kwargs)
    result = _all_batched(call)
    if not isinstance(result, tuple):
        return result
    b = call.batch_size
    parts = [
        BatchedTensor(r._value.reshape(b, 0), call.level) if r._value.numel() == 0 and r._value.dim() < 2 else r
        for r in result
    ]
    return type(result)(*parts) if hasattr(result, "_fields") else tuple(parts)


def _index_select(call: _Call) -> Any:
    """index_select: a shared index selects from each sample; a batched one is a gather, its index laid
    along the dim."""
    bound = dict(zip(("input", "dim", "index"), call.args, strict=False)) | call.kwargs
    x, index = _expand(bound.get("input", bound.get("self")), call), bound["index"]
    rank = call.logical_dim(x)
    if rank == 0:
        return _loop(call)
    if not isinstance(index, _Batched):
        return call.wrap(flambeau_core.index_select(x.value, bound["dim"] % rank + 1, index))
    b, d = call.batch_size, bound["dim"] % rank
    iv = index.value.reshape(b, -1)
    shape = list(x.value.shape)
    shape[d + 1] = iv.shape[1]
    iv = iv.reshape(b, *(1,) * d, iv.shape[1], *(1,) * (rank - d - 1)).expand(*shape)
    return call.wrap(flambeau_core.gather(x.value, d + 1, iv))


def _atleast(call: _Call) -> Any:
    """_atleast_1d/2d/3d: the sample's shape with unit dims added as PyTorch places them."""
    x = call.args[0]
    rank, want, v = call.logical_dim(x), int(call.name[-2]), x.value
    if rank >= want:
        return call.wrap(v)
    # 0-d -> [1]*want; 1-d [n] -> [1, n] (and [1, n, 1]); 2-d [m, n] -> [m, n, 1]
    if rank == 0:
        return call.wrap(v.reshape(call.batch_size, *(1,) * want))
    if rank == 1:
        v = v.unsqueeze(1)
    return call.wrap(v.unsqueeze(-1) if want == 3 else v)


def _stacks(call: _Call) -> Any:
    """hstack/vstack (row_stack)/dstack/column_stack: cat of the samples made 1-, 2- or 3-d, as batched ops."""
    tensors = [_rewrap(t, call) for t in call.args[0]]
    name = call.name
    if name == "column_stack":
        tensors = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors]
        name = "hstack"
    c = flambeau_core._C
    if name in ("vstack", "row_stack"):  # row_stack: vstack's alias
        return flambeau_core.cat([c._atleast_2d(t) for t in tensors], 0)
    if name == "dstack":
        return flambeau_core.cat([c._atleast_3d(t) for t in tensors], 2)
    tensors = [c._atleast_1d(t) for t in tensors]
    return flambeau_core.cat(tensors, 0 if all(t.dim() == 1 for t in tensors) else 1)


def _trapezoid(call: _Call) -> Any:
    """trapezoid/trapz/cumulative_trapezoid along a dim: elementwise over the others; a batched 1-d x with
    samples of more dims (x read along dim) loops."""
    y, x = call.args[0], call.args[1] if len(call.args) > 1 else call.kwargs.get("x")
    if isinstance(x, _Batched) and call.logical_dim(x) == 1 and call.logical_dim(_expand(y, call)) > 1:
        return _loop(call)
    kwargs = {"dim": -1, **call.kwargs}
    return _elementwise(_with_args(call, [_expand(y, call), *call.args[1:]], kwargs))


# This module's rules by name (Note [Batching rules in the table] in core's codegen/model.py): the table's
# `batch:` names them, and _vmap adds them to its _RULE_FUNCTIONS.
RULE_FUNCTIONS: dict[str, Callable] = {
    "rnn_layer": rnn_layer,
    "batch_in_front": _batch_in_front,
    "indexed": _indexed,
    "index_along": _index_along,
    "index_select": _index_select,
    "layout_free": _layout_free,
    "matrix_entries": _matrix_entries,
    "scaled_products": _scaled_products,
    "layer_norm": _layer_norm,
    "group_norm": _group_norm,
    "batch_norm": _batch_norm,
    "embedding": _embedding,
    "conv_transpose": _conv_transpose,
    "searchsorted": _searchsorted,
    "quantile": _quantile,
    "nll_loss": _nll_loss,
    "pointwise_loss": _pointwise_loss,
    "prelu": _prelu,
    "broadcast_tensors": _broadcast_tensors,
    "matrix_batch": _matrix_batch,
    "atleast": _atleast,
    "stacks": _stacks,
    "trapezoid": _trapezoid,
    "pad_nd": _pad_nd,
    "view_as_complex": _view_as_complex,
    "where": _where,
    "masked_fill": _masked_fill,
}
