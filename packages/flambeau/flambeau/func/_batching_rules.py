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
    _views,
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
        # take_along_dim without a dim indexes the flattened input: each sample's, along the batch's rows
        b = call.batch_size
        x, index = (_expand(a, call).value.reshape(b, -1) for a in args[:2])
        return call.wrap(_apply(call.func, [x, index], {"dim": 1}))
    if call.logical_dim(_expand(args[0], call)) == 0:
        index = args[2] if len(args) > 2 else kwargs.get("index")
        if call.name == "gather" and index is not None and call.logical_dim(index) > 0:
            # gather reads a 0-d input as 1-d (torch's): the result has the index's shape, so only the input
            # is lifted to a 1-element sample and nothing is taken out of the result.
            lifted = _Batched(_expand(args[0], call).value.unsqueeze(1))
            return _all_batched(_with_args(call, [lifted, *args[1:]], kwargs))
        return _scalars_lifted(call, _all_batched)
    return _all_batched(call)


def _index_along(call: _Call) -> Any:
    """index_add/index_copy/index_fill: a 1-d index into one dim; input and source batched, the index not."""
    args, kwargs = list(call.args), dict(call.kwargs)
    index = args[2] if len(args) > 2 else kwargs.get("index")
    value = args[3] if call.name == "index_fill" and len(args) > 3 else kwargs.get("value")
    if call.logical_dim(_expand(args[0], call)) == 0:
        fill_value = (3, "value") if call.name == "index_fill" else ()  # stays 0-d
        return _scalars_lifted(call, _index_along, keep=fill_value)
    if isinstance(index, _Batched) or isinstance(value, _Batched):
        return _index_as_scatter(call, args, kwargs)
    args[0] = _expand(args[0], call)
    if len(args) > 3 and (_is_tensorlike(args[3]) or isinstance(args[3], _Batched)) and call.name != "index_fill":
        args[3] = _expand(args[3], call)
    if _is_tensorlike(kwargs.get("source")) or isinstance(kwargs.get("source"), _Batched):
        kwargs["source"] = _expand(kwargs["source"], call)
    _shift_dims(call, args, kwargs)
    return call.wrap(call.call(args, kwargs))


def _index_as_scatter(call: _Call, args: list, kwargs: dict) -> Any:
    """index_add/index_copy/index_fill with a batched index (or fill value): the scatter that writes the
    same places, its index laid along the dim and expanded over the other dims of the source (of the input
    for fill, whose batched 0-d value is expanded the same way)."""
    bound = dict(zip(("input", "dim", "index", "source"), args, strict=False)) | kwargs
    x, b = _expand(bound["input"], call), call.batch_size
    rank = call.logical_dim(x)
    d = bound["dim"] % rank
    iv = _expand(bound["index"], call).value.reshape(b, -1)
    k = iv.shape[1]
    iv = iv.reshape(b, *(1,) * d, k, *(1,) * (rank - d - 1))
    if call.name == "index_fill":
        shape = list(x.value.shape)
        shape[d + 1] = k
        value = args[3] if len(args) > 3 else kwargs["value"]
        if isinstance(value, _Batched):
            value = value.value.to(x.value.dtype).reshape(b, *(1,) * rank).expand(*shape)
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
    first, in front of the batch dim, so it is moved behind it. A batched q is each sample's own quantiles
    (_quantile_per_sample)."""
    bound = {"dim": None, "keepdim": False, **dict(zip(("input", "q", "dim", "keepdim"), call.args, strict=False))}
    bound.update(call.kwargs)
    x, q, dim = bound["input"], bound["q"], bound["dim"]
    if isinstance(q, _Batched):
        return _quantile_per_sample(call, bound)
    rank = call.logical_dim(x)
    extra = {k: v for k, v in bound.items() if k not in ("input", "q", "dim", "keepdim")}
    if dim is None or rank == 0:  # (a 0-d sample's quantile along its dim is itself, kept 0-d)
        dim = None
        bound["keepdim"] = bound["keepdim"] and rank > 0
        out = _apply(call.func, [x.value.reshape(call.batch_size, -1), q, 1, False], extra)
        out = out.reshape(*out.shape, *(1,) * rank) if bound["keepdim"] else out
    else:
        out = _apply(call.func, [x.value, q, _shift(dim), bound["keepdim"]], extra)
    return call.wrap(out.movedim(0, 1) if _is_tensorlike(q) and q.dim() == 1 else out)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_per_sample(call: _Call, bound: dict) -> Any:
    """quantile/nanquantile with a batched q, as the op computes them on the batch: each row sorted, each
    sample's q scaled by its row's count less one (of values that are not NaN for nanquantile), the values
    at the floor and ceiling of that rank read and interpolated; a row with a NaN (only NaNs) gives NaN. A q
    or an input the op refuses loops (the op's errors)."""
    x, q, dim, b = _expand(bound["input"], call), bound["q"], bound["dim"], call.batch_size
    interpolation, rank = bound.get("interpolation", "linear"), call.logical_dim(x)
    if (
        not x.value.is_floating_point()
        or q.value.dtype != x.value.dtype
        or call.logical_dim(q) > 1
        or interpolation not in _INTERPOLATIONS
        or _any((q.value < 0) | (q.value > 1) | q.value.isnan())
    ):
        return _loop(call)
    f64, v = flambeau_core.float64, x.value
    rows = v.reshape(b, -1) if dim is None or rank == 0 else v.movedim(dim % rank + 1, -1)  # [B, *others, n]
    n, others = rows.shape[-1], rows.dim() - 2
    qs = q.value.reshape(b, *(1,) * others, -1).to(f64)  # [B, 1..., Q]
    shape = (*rows.shape[:-1], qs.shape[-1])
    if n == 0:
        out = flambeau_core.full(shape, float("nan"), dtype=v.dtype, device=v.device)
    else:
        ordered = flambeau_core.sort(rows, -1)[0]
        valid = ordered.isnan().logical_not().sum(-1, keepdim=True).to(v.dtype)
        count = valid if call.name == "nanquantile" else flambeau_core.full_like(valid, n)
        place = qs * (count - 1).clamp(min=0).to(f64)

        def at(r: Any) -> Any:
            return flambeau_core.gather(ordered, -1, r.clamp(0, n - 1).to(flambeau_core.int64).expand(*shape))

        low, high = place.floor(), place.ceil()
        if interpolation in ("lower", "higher", "nearest"):
            out = at({"lower": low, "higher": high, "nearest": place.round()}[interpolation])
        else:
            half = flambeau_core.where(low == high, 0.0, 0.5)
            out = flambeau_core.lerp(
                at(low), at(high), (half if interpolation == "midpoint" else place - low).to(v.dtype)
            )
        empty = valid == 0 if call.name == "nanquantile" else valid < n
        out = flambeau_core.where(empty, float("nan"), out)
    out = out.movedim(-1, 1)  # [B, Q, *others]
    if bound["keepdim"] and rank > 0:
        out = out.reshape(b, -1, *(1,) * rank) if dim is None else out.unsqueeze(dim % rank + 2)
    return call.wrap(out.squeeze(1) if call.logical_dim(q) == 0 else out)


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
    running statistics (an ensemble's, from stack_module_state) in place through that layout (a copy written
    back when they are not contiguous). Shared running statistics the loop updates once per sample, each
    update ``r <- (1 - m) r + m s_i``: the batch computes every ``m s_i`` at once (from zeros) and applies
    the B updates in closed form, ``(1 - m)^B r + sum_i (1 - m)^(B-1-i) m s_i``."""
    names = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps")
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    x, training = _expand(bound["input"], call), bound["training"]
    if call.logical_dim(x) < 2:
        return _loop(call)
    b, v = call.batch_size, x.value  # [B, N, C, ...]
    n, c = v.shape[1], v.shape[2]
    written_back, shared = [], []
    for k in ("weight", "bias", "running_mean", "running_var"):
        p = bound[k]
        if p is None:
            continue
        if training and k.startswith("running") and not isinstance(p, _Batched):
            bound[k] = flambeau_core.zeros(b * c, dtype=p.dtype, device=p.device)
            shared.append((p, bound[k]))
            continue
        # batched contiguous statistics are viewed (the op's update lands in them); an unbatched
        # parameter expanded is copied (a stride-0 view the op may not take)
        bound[k] = _expand(p, call).value.reshape(b * c).contiguous()
        if training and k.startswith("running") and bound[k].data_ptr() != p.value.data_ptr():
            written_back.append((p.value, bound[k]))
    bound["input"] = v.transpose(0, 1).reshape(n, b * c, *v.shape[3:])
    out, mean, invstd = _apply(call.func, [bound[k] for k in names], {})
    for stat, flat in written_back:
        stat.copy_(flat.reshape(b, c))
    keep = 1.0 - bound["momentum"]
    for stat, updates in shared:
        weights = flambeau_core.tensor([keep ** (b - 1 - i) for i in range(b)], dtype=flambeau_core.float64)
        total = (updates.reshape(b, c).to(flambeau_core.float64) * weights.reshape(b, 1)).sum(0)
        stat.mul_(keep**b).add_(total.to(stat.dtype))
    out = out.reshape(n, b, c, *v.shape[3:]).transpose(0, 1)
    return tuple(BatchedTensor(r, call.level) for r in (out, *(s.reshape(b, s.numel() // b) for s in (mean, invstd))))


def _matrix_batch(call: _Call) -> Any:
    """_linalg_solve/_linalg_lstsq/_linalg_pinv, whose arguments share their batch dims: all batched. An
    output that is empty for an empty sample (lstsq's residuals) gets its batch dim too."""
    if call.name == "_linalg_lstsq" and any(isinstance(a, _Batched) and a.value.numel() == 0 for a in call.args):
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
    if rank == 0:  # a 0-d sample is selected from as a 1-element one
        return _scalars_lifted(call, _index_select, keep=(2, "index"))
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
    samples of more dims (x read along dim) is viewed along that dim, where it broadcasts."""
    y, x = call.args[0], call.args[1] if len(call.args) > 1 else call.kwargs.get("x")
    kwargs = {"dim": -1, **call.kwargs}
    rank = call.logical_dim(_expand(y, call))
    if isinstance(x, _Batched) and call.logical_dim(x) == 1 and rank > 1 and isinstance(kwargs["dim"], int):
        d, n = kwargs["dim"] % rank, x.value.shape[1]
        x = _Batched(x.value.reshape(call.batch_size, *(1,) * d, n, *(1,) * (rank - d - 1)))
        args = [_expand(y, call), x, *call.args[2:]] if len(call.args) > 1 else [_expand(y, call)]
        kwargs = {**kwargs, "x": x} if len(call.args) <= 1 else kwargs
        return _elementwise(_with_args(call, args, kwargs))
    return _elementwise(_with_args(call, [_expand(y, call), *call.args[1:]], kwargs))


def _bind(call: _Call, names: tuple[str, ...]) -> dict:
    """The call's arguments by parameter name (``names`` in order; ``self`` read as the first)."""
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    if "self" in bound:
        bound[names[0]] = bound.pop("self")
    return bound


def _value(x: Any) -> Any:
    """An argument's tensor: a batched one's physical value, else itself."""
    return x.value if isinstance(x, _Batched) else x


def _any(condition: Any) -> bool:
    """Whether a condition on the batch holds anywhere (one sync). Under nested vmap the level's values are
    an outer level's BatchedTensors: the condition is read from the tensor under every level."""
    while isinstance(condition, BatchedTensor):
        condition = condition._value
    return condition.numel() > 0 and bool(condition.any())


def _outside(index: Any, low: int, high: int) -> bool:
    """Whether an index of the batch falls outside [low, high) (one sync). A rule that would let such an
    index reach another sample's elements loops instead, so that the op raises its own error."""
    return _any((index < low) | (index >= high))


def _same_in_every_sample(x: Any) -> Any:
    """An argument that sets the shape of the result (repeats, split points) as one value for the batch:
    itself when unbatched, the first sample's when every sample holds the same, else None (the samples'
    results differ in shape, which only the loop can tell, by refusing to stack them)."""
    if not isinstance(x, _Batched):
        return x
    first = x.value[0]
    return None if _any(x.value != first) else first


def _flat_indexed(call: _Call) -> Any:
    """take/put index the flattened sample: one gather (take) or scatter (put, scatter_add to accumulate)
    along the rows of the batch laid out [B, numel], negative indices counted from the sample's end."""
    bound = _bind(call, ("input", "index", "source", "accumulate"))
    x, b = _expand(bound["input"], call), call.batch_size
    flat = x.value.reshape(b, -1)
    index = _expand(bound["index"], call).value
    iv = index.reshape(b, -1)
    if _outside(iv, -flat.shape[1], flat.shape[1]):
        return _loop(call)
    iv = flambeau_core.where(iv < 0, iv + flat.shape[1], iv)
    if call.name == "take":
        return call.wrap(flambeau_core.gather(flat, 1, iv).reshape(index.shape))
    src = _expand(bound["source"], call).value.reshape(b, -1)
    if src.dtype != flat.dtype or src.shape[1] != iv.shape[1]:
        return _loop(call)  # the op's errors
    scatter = flambeau_core.scatter_add if bound.get("accumulate", False) else flambeau_core.scatter
    return call.wrap(scatter(flat, 1, iv, src).reshape(x.value.shape))


def _masked_scatter(call: _Call) -> Any:
    """masked_scatter: sample i's k-th True place takes the k-th element of its source, so the places read
    the source at the mask's running count (one cumsum and one gather on the batch)."""
    bound = _bind(call, ("input", "mask", "source"))
    x, mask = _expand(bound["input"], call), _expand(bound["mask"], call)
    if mask.value.dtype != flambeau_core.bool:
        return _loop(call)  # the op's error
    rank, b = max(call.logical_dim(x), call.logical_dim(mask)), call.batch_size
    xv, mv = _pad(x, rank, call).value, _pad(mask, rank, call).value
    shape = flambeau_core.broadcast_shapes(tuple(xv.shape), tuple(mv.shape))
    xv, mv = xv.expand(*shape), mv.expand(*shape)
    src = _expand(bound["source"], call).value.reshape(b, -1)
    flat_mask = mv.reshape(b, -1)
    if _any(flat_mask.sum(1) > src.shape[1]):
        return _loop(call)  # a source too short for its mask: the op's own error, per sample
    if src.shape[1] == 0:
        return call.wrap(xv.clone())
    places = (flat_mask.to(flambeau_core.int64).cumsum(1) - 1).clamp(0, src.shape[1] - 1)
    taken = flambeau_core.gather(src, 1, places).reshape(shape)
    return call.wrap(flambeau_core.where(mv, taken.to(xv.dtype), xv))


def _index_put(call: _Call) -> Any:
    """index_put with integer tensor indices: the batch's own index (an arange) in front of the samples'
    indices, so one index_put writes every sample; the values padded to the indexed result's rank. A bool
    or None index loops, but for one mask whose values do not depend on how many places it selects (they
    broadcast over them): that is ``where(mask, values, input)`` (``input + where(mask, values, 0)`` to
    accumulate)."""
    bound = _bind(call, ("input", "indices", "values", "accumulate"))
    x, indices, values = _expand(bound["input"], call), list(bound["indices"]), bound["values"]
    if len(indices) == 1 and indices[0] is not None and _value(indices[0]).dtype == flambeau_core.bool:
        return _index_put_mask(call, x, indices[0], values, bound.get("accumulate", False))
    if any(i is None or _value(i).dtype == flambeau_core.bool for i in indices):
        return _loop(call)
    b = call.batch_size
    shapes = [tuple(i.value.shape[1:]) if isinstance(i, _Batched) else tuple(i.shape) for i in indices]
    rank = len(flambeau_core.broadcast_shapes(*shapes))
    own = flambeau_core.arange(b, device=x.value.device).reshape(b, *(1,) * rank)
    padded = [_pad(i, rank, call).value if isinstance(i, _Batched) else i for i in indices]
    if isinstance(values, _Batched):
        values = _pad(values, rank + call.logical_dim(x) - len(indices), call).value
    args = [x.value, [own, *padded], values, bound.get("accumulate", False)]
    return call.wrap(_apply(call.func, args, {}))


def _index_put_mask(call: _Call, x: _Batched, mask: Any, values: Any, accumulate: bool) -> Any:
    """index_put with one bool mask over the sample's leading dims (_index_put)."""
    b, rank, m = call.batch_size, call.logical_dim(x), call.logical_dim(mask)
    trailing = rank - m
    if tuple(_expand(mask, call).value.shape[1:]) != tuple(x.value.shape[1 : m + 1]):
        return _loop(call)  # the op's error
    vshape = tuple(values.value.shape[1:]) if isinstance(values, _Batched) else tuple(values.shape)
    if len(vshape) > trailing + 1 or len(vshape) == trailing + 1 and vshape[0] != 1:
        return _loop(call)  # values per selected place: as many as each sample's mask selects
    vshape = vshape[1:] if len(vshape) == trailing + 1 else vshape
    v = _value(values).to(x.value.dtype)
    v = v.reshape(b, *(1,) * m, *vshape) if isinstance(values, _Batched) else v.reshape(*(1,) * m, *vshape)
    mv = _expand(mask, call).value.reshape(b, *_value(mask).shape[-m:] if m else (), *(1,) * trailing)
    if accumulate:
        return call.wrap(x.value + flambeau_core.where(mv, v, flambeau_core.zeros((), dtype=v.dtype)))
    return call.wrap(flambeau_core.where(mv, v, x.value))


def _kron(call: _Call) -> Any:
    """kron: the samples padded to one rank (leading 1s), each dim of the one interleaved with the other's,
    multiplied and merged pairwise: one broadcast product for the batch."""
    bound = _bind(call, ("input", "other"))
    a, o = _expand(bound["input"], call), _expand(bound["other"], call)
    rank, b = max(call.logical_dim(a), call.logical_dim(o)), call.batch_size
    av, ov = _pad(a, rank, call).value, _pad(o, rank, call).value
    left = av.reshape(b, *(s for n in av.shape[1:] for s in (n, 1)))
    right = ov.reshape(b, *(s for n in ov.shape[1:] for s in (1, n)))
    merged = [p * q for p, q in zip(av.shape[1:], ov.shape[1:], strict=True)]
    return call.wrap(flambeau_core.mul(left, right).reshape(b, *merged))


def _repeat_interleave(call: _Call) -> Any:
    """repeat_interleave with int or shared repeats: along the sample's dim (of its flattened values without
    one), the batch dim untouched. Batched repeats that every sample shares are shared; samples repeated
    differently have results of different lengths, and loop (where torch's vmap refuses them)."""
    bound = _bind(call, ("input", "repeats", "dim"))
    kwargs = {k: v for k, v in bound.items() if k == "output_size"}
    if "repeats" not in bound:  # repeat_interleave(repeats): each index repeated
        repeats = _same_in_every_sample(bound["input"])
        return _loop(call) if repeats is None else _apply(call.func, [repeats], kwargs)
    x, dim = bound["input"], bound.get("dim")
    repeats = _same_in_every_sample(bound["repeats"])
    if repeats is None:
        return _loop(call)
    if not isinstance(x, _Batched):
        return _apply(call.func, [x, repeats, dim], kwargs)
    b, rank = call.batch_size, call.logical_dim(x)
    if dim is None or rank == 0:
        return call.wrap(_apply(call.func, [x.value.reshape(b, -1), repeats, 1], kwargs))
    return call.wrap(_apply(call.func, [x.value, repeats, dim % rank + 1], kwargs))


def _meshgrid(call: _Call) -> Any:
    """_meshgrid/_cartesian_prod of 0-d or 1-d samples: each sample's vector viewed along its own dim of
    the grid and expanded over the others (indexing 'xy' swaps the first two); the cartesian product is the
    'ij' grids flattened and stacked."""
    tensors = call.args[0] if call.args else call.kwargs["tensors"]
    b = call.batch_size
    vectors = [_expand(t, call).value.reshape(b, -1) for t in tensors]
    if len({v.dtype for v in vectors}) > 1 or any(call.logical_dim(_expand(t, call)) > 1 for t in tensors):
        return _loop(call)  # the op's errors
    if call.name == "_cartesian_prod" and len(vectors) == 1:
        return call.wrap(vectors[0])
    sizes = [v.shape[1] for v in vectors]
    indexing = call.kwargs.get("indexing", call.args[1] if len(call.args) > 1 else None)
    place = list(range(len(vectors)))
    if indexing == "xy" and len(vectors) >= 2 and call.name == "_meshgrid":
        place[0], place[1] = 1, 0
    grid = [0] * len(vectors)
    for i, n in zip(place, sizes, strict=True):
        grid[i] = n
    grids = []
    for i, v in zip(place, vectors, strict=True):
        shape = [1] * len(vectors)
        shape[i] = grid[i]
        grids.append(v.reshape(b, *shape).expand(b, *grid))
    if call.name == "_cartesian_prod":
        return call.wrap(flambeau_core.stack([g.reshape(b, -1) for g in grids], 2))
    return call.wrap(tuple(grids))


def _embedding_renorm(call: _Call) -> Any:
    """embedding_renorm_ (embedding's max_norm), in place. A batched table: the batch's tables are one table
    of B*V rows and each sample's indices are offset to its own rows. A shared table: a renormed row's norm
    is just under max_norm, so renorming it again leaves it as it is, and renorming sample after sample (the
    loop) is renorming the rows of every sample's indices at once."""
    bound = _bind(call, ("input", "indices", "max_norm", "norm_type"))
    weight, indices, b = bound["input"], bound["indices"], call.batch_size
    rest = [bound["max_norm"], bound["norm_type"]]
    if not isinstance(weight, _Batched):
        _apply(call.func, [weight, indices.value.reshape(-1), *rest], {})
        return weight
    wv = weight.value  # [B, V, D]
    rows = wv.shape[1]
    own = flambeau_core.arange(b, device=wv.device).reshape(b, 1) * rows
    iv = _expand(indices, call).value.reshape(b, -1)
    if _outside(iv, 0, rows):
        return _loop(call)
    iv = (iv + own).reshape(-1)
    table = wv if wv.is_contiguous() else wv.contiguous()
    _apply(call.func, [table.view(b * rows, *wv.shape[2:]), iv, *rest], {})
    if table is not wv:
        wv.copy_(table)
    return BatchedTensor(wv, call.level)


_embedding_renorm.writes_in_place = True  # type: ignore[attr-defined] (_dispatch: not through _inplace)


def _embedding_bag(call: _Call) -> Any:
    """_embedding_bag: the batch's bags are bags of one call. Each sample's indices and offsets move past
    the samples before it (offsets by B*L); a batched table is one table of B*V rows, each sample's indices
    offset to its own rows (its padding row made one extra row, the padding_idx of the call). The results
    are split back, bag numbers and rows of maxima made the sample's again (an empty bag's -1 kept). Offsets
    that leave indices out of the sample's bags (not starting at 0, or a last offset short of the end with
    include_last_offset) loop."""
    names = ("weight", "indices", "offsets", "scale_grad_by_freq", "mode", "sparse", "per_sample_weights",
             "include_last_offset", "padding_idx")  # fmt: skip
    bound = dict(zip(names, [None, None, None, False, 0, False, None, False, -1], strict=True))
    bound.update(_bind(call, names))
    b, weight, last = call.batch_size, bound["weight"], bound["include_last_offset"]
    if bound["scale_grad_by_freq"] and not isinstance(weight, _Batched):
        return _loop(call)  # in one call a shared row's frequency would count every sample's lookups
    iv, ov = (_expand(bound[k], call).value.reshape(b, -1) for k in ("indices", "offsets"))
    length, bags = iv.shape[1], ov.shape[1] - (1 if last else 0)
    if ov.shape[1] and (_any(ov[:, 0] != 0) or last and _any(ov[:, -1] != length)):
        return _loop(call)
    if _outside(ov, 0, length + 1) or isinstance(weight, _Batched) and _outside(iv, 0, weight.value.shape[1]):
        return _loop(call)  # the op's errors (in one call they would reach another sample's indices or rows)
    own = flambeau_core.arange(b, device=iv.device, dtype=iv.dtype).reshape(b, 1)
    offsets = (ov[:, :bags] + own * length).reshape(-1)
    if last:
        offsets = flambeau_core.cat([offsets, flambeau_core.full((1,), b * length, dtype=ov.dtype)])
    padding, rows = bound["padding_idx"], 0
    table = weight
    if isinstance(weight, _Batched):
        rows, wv = weight.value.shape[1], weight.value
        table = wv.reshape(b * rows, wv.shape[2])
        shifted = iv + own * rows
        if padding is not None and padding >= 0:  # one padding row for the batch, past the others
            table = flambeau_core.cat([table, flambeau_core.zeros(1, wv.shape[2], dtype=wv.dtype, device=wv.device)])
            shifted = flambeau_core.where(iv == padding, b * rows, shifted)
            padding = b * rows
        iv = shifted
    psw = bound["per_sample_weights"]
    psw = None if psw is None else _expand(psw, call).value.reshape(-1)
    args = [table, iv.reshape(-1), offsets, bound["scale_grad_by_freq"], bound["mode"], bound["sparse"], psw, last,
            padding]  # fmt: skip
    out, offset2bag, bag_size, max_indices = _apply(call.func, args, {})
    offset2bag = offset2bag.reshape(b, -1) - own * bags if offset2bag.numel() else offset2bag.reshape(b, 0)
    if max_indices.numel() and rows:
        mine = max_indices.reshape(b, bags, -1) - own.reshape(b, 1, 1) * rows
        max_indices = flambeau_core.where(mine >= 0, mine, -1).reshape(b, bags, *max_indices.shape[1:])
    else:
        max_indices = max_indices.reshape(b, *((bags, *max_indices.shape[1:]) if max_indices.numel() else (0,)))
    results = (out.reshape(b, bags, *out.shape[1:]), offset2bag, bag_size.reshape(b, bags), max_indices)
    return tuple(BatchedTensor(r, call.level) for r in results)


def _dropout_backward(call: _Call) -> Any:
    """native_dropout_backward: the mask may be [N, C, 1, ...] (feature dropout), so the batch joins N; 0-d
    and 1-d samples have a mask of their own shape."""
    bound = _bind(call, ("grad_output", "mask", "scale"))
    g, m = _expand(bound["grad_output"], call), _expand(bound["mask"], call)
    gv, mv = g.value, m.value
    if call.logical_dim(g) < 2:
        return call.wrap(_apply(call.func, [gv, mv, bound["scale"]], {}))
    out = _apply(call.func, [gv.flatten(0, 1), mv.flatten(0, 1), bound["scale"]], {})
    return call.wrap(out.reshape(gv.shape))


def _histc(call: _Call) -> Any:
    """histc of each sample as the op computes it, on the batch: the range given, or each sample's own
    (its min and max, widened by 1 each way when they are equal), each value's bin
    ``floor((v - lo) * (bins / (hi - lo)))`` (the right edge in the last bin), one scatter_add of the values
    inside the range into [B, bins]. A sample whose range is not finite loops (the op's error)."""
    bound = {"bins": 100, "min": 0, "max": 0, **_bind(call, ("input", "bins", "min", "max"))}
    x, bins, b = bound["input"], bound["bins"], call.batch_size
    lo, hi = float(bound["min"]), float(bound["max"])
    if not isinstance(x, _Batched) or not x.value.is_floating_point() or bins <= 0 or lo > hi:
        return _loop(call)  # the op's errors
    f64 = flambeau_core.float64
    v = x.value.reshape(b, -1).to(f64)
    if lo == hi and v.shape[1] > 0:
        low, high = v.amin(1, keepdim=True), v.amax(1, keepdim=True)
    else:
        low, high = flambeau_core.full((b, 1), lo, dtype=f64), flambeau_core.full((b, 1), hi, dtype=f64)
    same = low == high
    low, high = flambeau_core.where(same, low - 1, low), flambeau_core.where(same, high + 1, high)
    if _any(~(low.isfinite() & high.isfinite())):
        return _loop(call)
    inside = (v >= low) & (v <= high)
    place = ((v - low) * (bins / (high - low))).floor().clamp(0, bins - 1)
    place = flambeau_core.where(inside, place, 0).to(flambeau_core.int64)
    counts = flambeau_core.zeros(b, bins, dtype=x.value.dtype, device=v.device)
    return call.wrap(flambeau_core.scatter_add(counts, 1, place, inside.to(x.value.dtype)))


def _block_diag(call: _Call) -> Any:
    """_block_diag of 0-, 1- or 2-d samples (a 1-d one a row): each block's rows padded with zero blocks
    to the full width, the rows of blocks concatenated, in the blocks' promoted dtype."""
    tensors = list(call.args[0] if call.args else call.kwargs["tensors"])
    b = call.batch_size
    blocks = [_expand(t, call).value for t in tensors]
    if any(v.dim() > 3 for v in blocks):
        return _loop(call)  # the op's error
    blocks = [v.reshape(b, 1, -1) if v.dim() <= 2 else v for v in blocks]
    dtype = blocks[0].dtype
    for v in blocks[1:]:
        dtype = flambeau_core.promote_types(dtype, v.dtype)
    width, left, rows = sum(v.shape[2] for v in blocks), 0, []
    for v in blocks:
        n, w = v.shape[1], v.shape[2]
        parts = [flambeau_core.zeros(b, n, left, dtype=dtype, device=v.device), v.to(dtype),
                 flambeau_core.zeros(b, n, width - left - w, dtype=dtype, device=v.device)]  # fmt: skip
        rows.append(flambeau_core.cat(parts, 2))
        left += w
    return call.wrap(flambeau_core.cat(rows, 1))


def _combinations(call: _Call) -> Any:
    """combinations of a 1-d sample: the positions' combinations are the same for every sample (they depend
    on its length only), so they are made once and each sample's elements gathered at them."""
    bound = _bind(call, ("input", "r", "with_replacement"))
    x = bound["input"]
    if call.logical_dim(x) != 1:
        return _loop(call)  # the op's error
    positions = _apply(call.func, [flambeau_core.arange(x.value.shape[1], device=x.value.device)],
                       {k: v for k, v in bound.items() if k != "input"})  # fmt: skip
    picked = x.value.index_select(1, positions.reshape(-1))
    return call.wrap(picked.reshape(call.batch_size, *positions.shape))


def _pool_backward(call: _Call) -> Any:
    """max_pool_backward: an index counts within its plane (the trailing dims), so the batch joins the
    leading dim of the gradient, the indices and input_size."""
    bound = _bind(call, ("grad_output", "indices", "input_size"))
    g, idx, size, b = bound["grad_output"], bound["indices"], list(bound["input_size"]), call.batch_size
    if not size:
        return _loop(call)
    gv, iv = _expand(g, call).value, _expand(idx, call).value
    out = _apply(call.func, [gv.flatten(0, 1), iv.flatten(0, 1), [b * size[0], *size[1:]]], {})
    return call.wrap(out.reshape(b, *size))


def _covariance(call: _Call) -> Any:
    """cov/corrcoef of [vars, obs] (or [obs]) samples as batched products: the (weighted) means removed,
    ``xm @ (xm w)^H`` over the normalizer, as the op computes them; corrcoef divides by the standard
    deviations and clips to [-1, 1]."""
    bound = _bind(call, ("input",))
    x, b = _expand(bound["input"], call), call.batch_size
    fweights, aweights = (bound.get(k) for k in ("fweights", "aweights"))
    if not (x.value.is_floating_point() or x.value.is_complex()) or call.logical_dim(x) > 2:
        return _loop(call)
    integral_fweights = fweights is None or not _value(fweights).dtype.is_floating_point
    floating_aweights = aweights is None or _value(aweights).dtype.is_floating_point
    if not (integral_fweights and floating_aweights):
        return _loop(call)  # the op refuses these dtypes
    v = x.value.reshape(b, -1, x.value.shape[-1]) if call.logical_dim(x) == 2 else x.value.reshape(b, 1, -1)
    obs, correction = v.shape[2], bound.get("correction", 1)
    for weights in (fweights, aweights):
        wv = None if weights is None else _expand(weights, call)
        if wv is not None and (call.logical_dim(wv) > 1 or wv.value[0].numel() != obs or _any(wv.value < 0)):
            return _loop(call)  # the op's errors
    w = None if fweights is None else _expand(fweights, call).value.reshape(b, obs)
    aw = None if aweights is None else _expand(aweights, call).value.reshape(b, obs)
    if aw is not None:
        w = aw if w is None else w * aw
    if w is None:
        mean, norm = v.mean(2, keepdim=True), obs - correction
    else:
        w_sum = w.sum(1).reshape(b, 1, 1)
        mean = (v * w.unsqueeze(1)).sum(2, keepdim=True) / w_sum
        if correction != 0 and aw is not None:
            norm = w_sum - correction * (w * aw).sum(1).reshape(b, 1, 1) / w_sum
        else:
            norm = w_sum - correction
        norm = norm.clamp(min=0)
    norm = max(norm, 0) if isinstance(norm, int) else norm
    centered = v - mean
    weighted = centered if w is None else centered * w.unsqueeze(1)
    c = flambeau_core.matmul(centered, weighted.mT.conj()) / norm
    if call.name == "cov":
        return call.wrap(c.reshape(b) if c.shape[1] == 1 else c)
    if c.shape[1] == 1:
        return call.wrap((c / c).reshape(b))
    d = flambeau_core.diagonal(c, 0, 1, 2)
    std = (d.real if c.is_complex() else d).sqrt()
    c = c / std.unsqueeze(2) / std.unsqueeze(1)
    if c.is_complex():
        return call.wrap(flambeau_core.complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1)))
    return call.wrap(c.clamp(-1, 1))


def _linspace(call: _Call) -> Any:
    """linspace/logspace with batched tensor start or end: each sample's points in float64, as the op
    computes them (the first half counted up from start, the second down from end, integer dtypes from
    truncated ends), in the op's dtype."""
    names = ("start", "end", "steps", "base") if call.name == "logspace" else ("start", "end", "steps")
    bound = _bind(call, names)
    b, steps = call.batch_size, bound["steps"]
    dtype = bound.get("dtype") or flambeau_core.get_default_dtype()
    if steps < 0 or dtype == flambeau_core.bool:
        return _loop(call)  # the op's errors
    device = bound.get("device")
    ends = [
        _expand(bound[k], call).value.reshape(b, 1).to(flambeau_core.float64)
        if isinstance(bound[k], _Batched) or _is_tensorlike(bound[k])
        else flambeau_core.full((b, 1), float(bound[k]), dtype=flambeau_core.float64)
        for k in ("start", "end")
    ]
    if call.name == "linspace" and not (dtype.is_floating_point or dtype.is_complex):
        ends = [e.trunc() for e in ends]
    a, z = ends
    if steps <= 1:
        points = a.expand(b, steps)
    else:
        i = flambeau_core.arange(steps, dtype=flambeau_core.float64, device=a.device).reshape(1, steps)
        step = (z - a) / (steps - 1)
        points = flambeau_core.where(i < steps // 2, a + i * step, z - (steps - 1 - i) * step)
    if call.name == "logspace":
        points = flambeau_core.pow(bound.get("base", 10.0), points)
    out = points.to(dtype)
    return call.wrap(out if device is None else out.to(device))


def _isin(call: _Call) -> Any:
    """isin: a shared test set is elementwise in the elements (the op as is on the batch); a batched one is
    compared with each sample's elements (B x numel x test elements comparisons)."""
    bound = _bind(call, ("elements", "test_elements"))
    elements, test = bound["elements"], bound["test_elements"]
    invert = bound.get("invert", False)
    if not isinstance(test, _Batched):
        options = {k: v for k, v in bound.items() if k not in ("elements", "test_elements")}
        return call.wrap(_apply(call.func, [elements.value, test], options))
    b = call.batch_size
    if not (_is_tensorlike(elements) or isinstance(elements, _Batched)):
        elements = flambeau_core.tensor(elements, device=test.value.device)
    ev = _expand(elements, call).value
    found = (ev.reshape(b, -1, 1) == test.value.reshape(b, 1, -1)).any(2).reshape(ev.shape)
    return call.wrap(found.logical_not() if invert else found)


def _narrow(call: _Call) -> Any:
    """narrow: an int start narrows the sample's dim (a view); a batched tensor start, one per sample, is
    one gather of each sample's positions start..start+length along the dim. A start out of range loops
    (the op's own error)."""
    bound = _bind(call, ("input", "dim", "start", "length"))
    start = bound["start"]
    if not isinstance(start, _Batched):
        if isinstance(start, BatchedTensor):  # an outer level's (nested vmap): a start per sample
            return _narrow(_with_args(call, [bound["input"], bound["dim"], _expand(start, call), bound["length"]], {}))
        if isinstance(start, flambeau_core.Tensor):
            start = int(start)
        return _views(_with_args(call, [bound["input"], bound["dim"], start, bound["length"]], {}))
    x, b, length = _expand(bound["input"], call), call.batch_size, bound["length"]
    rank = call.logical_dim(x)
    if rank == 0:
        return _loop(call)
    d = bound["dim"] % rank
    size = x.value.shape[d + 1]
    s = start.value.reshape(b, 1).to(flambeau_core.int64)
    s = flambeau_core.where(s < 0, s + size, s)
    if length < 0 or _any((s < 0) | (s + length > size)):
        return _loop(call)
    places = s + flambeau_core.arange(length, device=s.device).reshape(1, length)
    shape = list(x.value.shape)
    shape[d + 1] = length
    places = places.reshape(b, *(1,) * d, length, *(1,) * (rank - d - 1)).expand(*shape)
    return call.wrap(flambeau_core.gather(x.value, d + 1, places))


def _fill(call: _Call) -> Any:
    """fill_: a number fills the batch; a batched 0-d value fills each sample with its own."""
    x, value = call.args[0], call.args[1] if len(call.args) > 1 else call.kwargs["value"]
    if not isinstance(value, _Batched):
        return call.wrap(call.call(call.args, call.kwargs))
    if call.logical_dim(value) != 0:
        return _loop(call)  # the op's error
    filled = value.value.to(x.value.dtype).reshape(call.batch_size, *(1,) * call.logical_dim(x))
    return call.wrap(filled.expand(*x.value.shape))


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
    "masked_scatter": _masked_scatter,
    "flat_indexed": _flat_indexed,
    "index_put": _index_put,
    "kron": _kron,
    "repeat_interleave": _repeat_interleave,
    "meshgrid": _meshgrid,
    "embedding_renorm": _embedding_renorm,
    "covariance": _covariance,
    "linspace": _linspace,
    "isin": _isin,
    "embedding_bag": _embedding_bag,
    "dropout_backward": _dropout_backward,
    "histc": _histc,
    "block_diag": _block_diag,
    "combinations": _combinations,
    "pool_backward": _pool_backward,
}
