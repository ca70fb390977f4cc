"""Memory formats (contiguous_format, preserve_format, channels_last) against PyTorch."""

import pickle

import flambeau_core as fc
import numpy as np
import pytest
import torch

FORMATS = {
    "contiguous_format": (fc.contiguous_format, torch.contiguous_format),
    "channels_last": (fc.channels_last, torch.channels_last),
    "channels_last_3d": (fc.channels_last_3d, torch.channels_last_3d),
}


def pair(shape, layout):
    """The same values as a flambeau and a torch tensor, laid out by `layout`."""
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    f, t = fc.tensor(a), torch.empty(shape).copy_(torch.from_numpy(a))
    return layout(f), layout(t)


LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, -1),
    "permuted": lambda x: x.permute(2, 0, 3, 1) if x.dim() == 4 else x.transpose(0, 1),
    "channels_last": lambda x: (
        x.contiguous(memory_format=fc.channels_last if isinstance(x, fc.Tensor) else torch.channels_last)
        if x.dim() == 4
        else x
    ),
    "sliced": lambda x: x[..., ::2],
    "channels_last_sliced": lambda x: x.contiguous(
        memory_format=fc.channels_last if isinstance(x, fc.Tensor) else torch.channels_last
    )[:, ::2, :, 1:],
    "transposed_sliced": lambda x: x.transpose(1, 2)[..., 1:],
    "expanded": lambda x: x[:1].expand(*x.shape),
    "size_one_dims": lambda x: x[:1, :, :1],
}


def test_the_formats_are_objects_with_pytorch_names():
    assert str(fc.channels_last) == "flambeau.channels_last" == str(fc.channels_last).replace("torch", "")
    assert str(fc.preserve_format) == "flambeau.preserve_format"
    assert isinstance(fc.contiguous_format, fc.memory_format)
    assert pickle.loads(pickle.dumps(fc.channels_last)) == fc.channels_last


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 1, 1), (2, 1, 3, 3), (0, 3, 2, 2)])
@pytest.mark.parametrize("fmt", ["contiguous_format", "channels_last"])
def test_contiguous_in_a_format_matches_torch(shape, fmt):
    f, t = pair(shape, LAYOUTS["contiguous"])
    ff, tf = FORMATS[fmt]
    got, want = f.contiguous(memory_format=ff), t.contiguous(memory_format=tf)
    assert got.stride() == want.stride()
    assert got.tolist() == want.tolist()
    for name, (g, w) in FORMATS.items():
        if name != "channels_last_3d":
            assert got.is_contiguous(memory_format=g) == want.is_contiguous(memory_format=w), name
    assert got.contiguous(memory_format=ff) is got  # already laid out so: no copy


def test_channels_last_3d():
    f, t = pair((2, 3, 2, 4, 5), LAYOUTS["contiguous"])
    got = f.contiguous(memory_format=fc.channels_last_3d)
    assert got.stride() == t.contiguous(memory_format=torch.channels_last_3d).stride()
    assert got.is_contiguous(memory_format=fc.channels_last_3d) and not got.is_contiguous()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_clone_and_conversions_preserve_the_layout_as_torch(layout):
    f, t = pair((2, 3, 4, 6), LAYOUTS[layout])
    for fn in (
        lambda x: x.clone(),
        lambda x: (fc if isinstance(x, fc.Tensor) else torch).zeros_like(x),
        lambda x: (fc if isinstance(x, fc.Tensor) else torch).full_like(x, 2.5),
        lambda x: x.double(),
        lambda x: x.to(torch.float64 if isinstance(x, torch.Tensor) else fc.float64),
        lambda x: x.int(),
    ):
        got, want = fn(f), fn(t)
        assert got.stride() == want.stride(), layout
        assert got.tolist() == want.tolist()
    assert f.clone(memory_format=fc.contiguous_format).is_contiguous()
    got = f.to(fc.float64, memory_format=fc.channels_last)
    assert got.stride() == t.to(torch.float64, memory_format=torch.channels_last).stride()
    assert f.float(memory_format=fc.contiguous_format).is_contiguous()


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
def test_like_factories_take_a_memory_format(name):
    f, t = pair((2, 3, 4, 5), LAYOUTS["channels_last"])
    for ff, tf in FORMATS.values():
        if ff == fc.channels_last_3d:
            continue
        got, want = getattr(fc, name)(f, memory_format=ff), getattr(torch, name)(t, memory_format=tf)
        assert got.stride() == want.stride() and got.shape == f.shape
    assert getattr(fc, name)(f).stride() == getattr(torch, name)(t).stride()  # preserve_format
    with pytest.raises(RuntimeError, match=rf"\[{name}\] channels_last needs a 4-d tensor"):
        getattr(fc, name)(fc.zeros(3), memory_format=fc.channels_last)


def test_to_copy_and_same_dtype():
    f, _ = pair((2, 3, 4, 5), LAYOUTS["transposed"])
    assert f.to(fc.float32) is f and f.float() is f
    c = f.to(fc.float32, copy=True)
    assert c.data_ptr() != f.data_ptr() and c.stride() == f.stride()
    assert f.to(memory_format=fc.contiguous_format).is_contiguous()


def test_bad_formats_raise():
    x = fc.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"\[contiguous\] channels_last needs a 4-d tensor, got shape \(2, 3, 4\)"):
        x.contiguous(memory_format=fc.channels_last)
    with pytest.raises(ValueError, match=r"\[contiguous\] preserve_format"):
        x.contiguous(memory_format=fc.preserve_format)
    with pytest.raises(TypeError, match=r"\[to\] memory_format must be a memory_format, got str"):
        x.to(memory_format="channels_last")
    with pytest.raises(TypeError, match="memory_format"):
        x.clone(memory_format=fc.float32)
    assert not x.is_contiguous(memory_format=fc.channels_last)  # wrong rank: just False, as torch
