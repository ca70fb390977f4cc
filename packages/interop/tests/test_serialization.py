"""save/load in PyTorch's checkpoint format, checked against torch 2.x itself:
files written by flambeau load in torch.load, files written by torch.save load
here, and weights_only=True refuses what torch's allowlist refuses."""

from __future__ import annotations

import collections
import dataclasses
import importlib
import io
import os
import pathlib
import pickle
import struct
import zipfile

import flambeau_core as fc
import flambeau_interop  # noqa: F401  (Tensor.numpy)
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from flambeau_interop import _C as interop_c
from flambeau_interop import serialization as ser

# flambeau dtype name == torch dtype name for every dtype flambeau has.
DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def values(n: int, dtype: str) -> list:
    """n distinct values exact in ``dtype`` (as Python numbers)."""
    if dtype == "bool":
        return [i % 3 == 0 for i in range(n)]
    base = [(i * 7) % 23 - (0 if dtype.startswith("u") else 9) for i in range(n)]
    if dtype.startswith("complex"):
        return [complex(v, -v / 2) for v in base]
    return base


def fb_tensor(vals: list, dtype: str, shape: tuple[int, ...]) -> fc.Tensor:
    kind = fc.complex128 if dtype.startswith("complex") else fc.float64 if dtype != "bool" else fc.bool
    return fc.tensor(vals, dtype=kind).to(getattr(fc, dtype)).reshape(shape)


def th_tensor(vals: list, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    kind = torch.complex128 if dtype.startswith("complex") else torch.float64 if dtype != "bool" else torch.bool
    return torch.tensor(vals, dtype=kind).to(getattr(torch, dtype)).reshape(shape)


def fb_np(t: fc.Tensor) -> np.ndarray:
    if t.dtype == fc.bfloat16:
        t = t.to(fc.float32)
    return np.asarray(t.numpy())


def th_np(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def assert_same(fb: fc.Tensor, th: torch.Tensor) -> None:
    assert str(fb.dtype).rpartition(".")[2] == str(th.dtype).rpartition(".")[2]
    assert tuple(fb.shape) == tuple(th.shape)
    assert tuple(fb.stride()) == tuple(th.stride())
    assert fb.storage_offset() == th.storage_offset()
    np.testing.assert_array_equal(fb_np(fb), th_np(th))


def saved(obj: object, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    ser.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


def torch_saved(obj: object, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


# ------------------------------------------------------------------------------ interchange with torch


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_flambeau_to_torch(dtype):
    x = fb_tensor(values(12, dtype), dtype, (3, 4))
    out = torch.load(saved({"x": x, "view": x[1:, ::2]}), weights_only=True)
    assert_same(x, out["x"])
    assert_same(x[1:, ::2], out["view"])
    assert out["view"].untyped_storage().data_ptr() == out["x"].untyped_storage().data_ptr()


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_torch_to_flambeau(dtype):
    x = th_tensor(values(12, dtype), dtype, (3, 4))
    out = ser.load(torch_saved({"x": x, "t": x.t(), "row": x[2]}))
    for name in ("x", "t", "row"):
        assert_same(out[name], {"x": x, "t": x.t(), "row": x[2]}[name])
    assert out["t"]._storage_id == out["x"]._storage_id == out["row"]._storage_id


@pytest.mark.parametrize("writer", ["torch", "flambeau"])
def test_layouts_views_offsets_0d_and_empty(writer):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    cases = {
        "base": lambda m, t: t,
        "permuted": lambda m, t: t.permute(2, 0, 1),
        "sliced": lambda m, t: t[1:, 1:3, ::2],
        "narrow_offset": lambda m, t: t.reshape(-1)[7:19],
        "scalar": lambda m, t: t[1, 2, 3],
        "expanded": lambda m, t: t[0, 0, :1].expand(4, 3),
    }
    own = {
        "zero_d": (fc.tensor(2.5), torch.tensor(2.5)),
        "empty": (fc.empty((0,)), torch.empty((0,))),
        "empty_2d": (fc.zeros((2, 0)), torch.zeros((2, 0))),
        "int_scalar": (fc.tensor(7), torch.tensor(7)),
    }
    fb_base, th_base = fc.tensor(base.tolist()), torch.from_numpy(base.copy())
    fb_obj = {k: f(fc, fb_base) for k, f in cases.items()} | {k: v[0] for k, v in own.items()}
    th_obj = {k: f(torch, th_base) for k, f in cases.items()} | {k: v[1] for k, v in own.items()}
    if writer == "torch":
        out = ser.load(torch_saved(th_obj))
        for k in th_obj:
            assert_same(out[k], th_obj[k])
        assert len({out[k]._storage_id for k in cases}) == 1
    else:
        out = torch.load(saved(fb_obj))
        for k in fb_obj:
            assert_same(fb_obj[k], out[k])
        assert len({out[k].untyped_storage().data_ptr() for k in cases}) == 1


def test_storage_sharing_survives_and_writes_are_shared():
    x = fc.arange(10.0)
    out = ser.load(saved([x, x[3:7], x]))
    assert out[0] is out[2]  # one object saved twice is one object loaded
    out[1].fill_(-1.0)
    assert out[0].tolist() == [0.0, 1.0, 2.0, -1.0, -1.0, -1.0, -1.0, 7.0, 8.0, 9.0]


def test_containers_numbers_and_strings_both_ways():
    obj = {
        "list": [1, 2.5, None, True, "s", b"\x00\xffbytes"],
        "tuple": (1, (2, (3,)), ()),
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
        "set": {1, 2, 3},
        "complex": 1 + 2j,
        "big": 2**70,
        "neg": -(2**40),
        "unicode": "héllo ✓",
        "counter": collections.Counter(a=2),
    }
    assert ser.load(torch_saved(obj)) == obj
    assert torch.load(saved(obj), weights_only=True) == obj
    assert ser.load(saved(obj)) == obj
    assert type(ser.load(saved(obj))["ordered"]) is collections.OrderedDict


def test_dtypes_and_devices_as_values():
    out = torch.load(saved({"dt": fc.bfloat16, "dev": fc.device("cpu")}), weights_only=True)
    assert out == {"dt": torch.bfloat16, "dev": torch.device("cpu")}
    back = ser.load(torch_saved({"dt": torch.int16, "dev": torch.device("cuda", 1)}))
    assert back["dt"] == fc.int16 and str(back["dev"]) == "cuda:1"


def test_paths_pathlike_and_file_objects(tmp_path):
    x = fc.arange(4, dtype=fc.int32)
    ser.save(x, str(tmp_path / "a.pt"))
    ser.save(x, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as f:
        ser.save(x, f)
    for name in ("a.pt", "b.pt", "c.pt"):
        assert ser.load(pathlib.Path(tmp_path / name)).tolist() == [0, 1, 2, 3]
        assert torch.load(tmp_path / name).tolist() == [0, 1, 2, 3]
        with open(tmp_path / name, "rb") as f:
            assert ser.load(f).tolist() == [0, 1, 2, 3]
    assert zipfile.ZipFile(tmp_path / "a.pt").namelist()[0] == "a/data.pkl"  # torch names the archive by the stem


def test_archive_layout_is_torchs():
    buf = saved({"w": fc.ones(3), "b": fc.zeros(2, dtype=fc.int64)})
    with zipfile.ZipFile(buf) as z:
        names = z.namelist()
        assert names == [
            "archive/data.pkl",
            "archive/.format_version",
            "archive/.storage_alignment",
            "archive/byteorder",
            "archive/data/0",
            "archive/data/1",
            "archive/version",
        ]
        assert z.read("archive/byteorder") == b"little" and z.read("archive/version") == b"3\n"
        raw = buf.getvalue()
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename


def test_big_endian_byteorder_is_swapped_on_load(tmp_path):
    src = {
        "f": torch.tensor([1.5, -2.25, 3e10]),
        "i": torch.tensor([1, -2, 70000], dtype=torch.int32),
        "c": torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
        "h": torch.tensor([0.5, 2.0], dtype=torch.bfloat16),
        "b": torch.tensor([True, False]),
    }
    little = torch_saved(src).getvalue()
    loaded = list(torch.load(io.BytesIO(little)).values())  # data/<i> holds the storage of the i-th tensor
    # Rewrite as a big-endian machine writes it: each storage byteswapped, byteorder 'big'.
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(little)) as z, zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            data = z.read(info)
            if info.filename == "archive/byteorder":
                data = b"big"
            elif "/data/" in info.filename:
                t = loaded[int(info.filename.rsplit("/", 1)[1])]
                unit = t.element_size() // (2 if t.is_complex() else 1)
                if unit > 1:
                    data = np.frombuffer(data, dtype=f"<u{unit}").byteswap().tobytes()
            w.writestr(info.filename, data)
    path = tmp_path / "big.pt"
    path.write_bytes(out.getvalue())
    oracle = torch.load(path)  # torch swaps back too
    for mmap in (False, True):
        got = ser.load(path, mmap=mmap)
        for k in src:
            assert_same(got[k], oracle[k])
            assert_same(got[k], src[k])


def test_legacy_format_loads():
    x = torch.arange(12, dtype=torch.int16).reshape(3, 4)
    obj = {"x": x, "view": x[1:, 1:], "d": torch.ones(2, dtype=torch.float64), "n": [1, "two"]}
    for weights_only in (True, False):
        out = ser.load(torch_saved(obj, _use_new_zipfile_serialization=False), weights_only=weights_only)
        assert_same(out["x"], x)
        assert_same(out["view"], x[1:, 1:])
        assert_same(out["d"], obj["d"])
        assert out["n"] == [1, "two"]
        assert out["view"]._storage_id == out["x"]._storage_id


def test_save_refuses_the_legacy_format_and_bad_arguments():
    with pytest.raises(FlambeauError, match=r"\[save\] flambeau writes only the zip format"):
        ser.save(fc.ones(1), io.BytesIO(), _use_new_zipfile_serialization=False)
    with pytest.raises(TypeError, match=r"\[save\] f must be a path or a binary file object"):
        ser.save(fc.ones(1), 3)
    c = fc.tensor([1 + 2j])
    with pytest.raises(TypeError, match=r"\[save\] <BytesIO>: two tensors view the same storage as .*complex64"):
        ser.save([c, fc.view_as_real(c)], io.BytesIO())


# ------------------------------------------------------------------------------ map_location and mmap


def _with_location(buf: io.BytesIO, location: str) -> io.BytesIO:
    """The same checkpoint, its storages tagged with another location (as if saved on that device)."""
    out = io.BytesIO()
    old = b"X\x03\x00\x00\x00cpu"
    new = b"X" + struct.pack("<I", len(location)) + location.encode()
    with zipfile.ZipFile(buf) as z, zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            data = z.read(info)
            if info.filename.endswith("data.pkl"):
                assert old in data
                data = data.replace(old, new)
            w.writestr(info.filename, data)
    out.seek(0)
    return out


def test_cuda_checkpoint_loads_with_map_location_cpu():
    cuda_file = _with_location(torch_saved({"w": torch.arange(6.0).reshape(2, 3)}), "cuda:0")
    oracle = torch.load(io.BytesIO(cuda_file.getvalue()), map_location="cpu")
    if not fc.cuda.is_available():
        with pytest.raises(FlambeauError, match=r"restored on 'cuda:0', but CUDA is not available.*map_location='cpu'"):
            ser.load(io.BytesIO(cuda_file.getvalue()))
    seen = []
    for map_location in (
        "cpu",
        b"cpu",
        fc.device("cpu"),
        {"cuda:0": "cpu"},
        {"cuda:0": fc.device("cpu")},
        lambda storage, loc: seen.append(loc) or storage,
        lambda storage, loc: None if loc == "cpu" else storage.cpu(),
    ):
        out = ser.load(io.BytesIO(cuda_file.getvalue()), map_location=map_location)
        assert_same(out["w"], oracle["w"])
        assert out["w"].is_cpu
    assert seen == ["cuda:0"]


def test_map_location_errors():
    buf = saved(fc.ones(2))
    with pytest.raises(TypeError, match=r"\[load\] map_location must be None, a str, a device, a dict or a callable"):
        ser.load(io.BytesIO(buf.getvalue()), map_location=3)
    with pytest.raises(TypeError, match=r"map_location returned int for storage archive/data/0; expected None or"):
        ser.load(io.BytesIO(buf.getvalue()), map_location=lambda s, loc: 1)
    with pytest.raises(FlambeauError, match=r"cannot restore storage archive/data/0 to location 'xla:0'"):
        ser.load(io.BytesIO(buf.getvalue()), map_location="xla:0")


def test_mmap_maps_storages_from_the_file(tmp_path):
    path = tmp_path / "m.pt"
    x = fc.arange(1000, dtype=fc.float32)
    ser.save({"x": x, "tail": x[500:], "bf": fc.ones(3, dtype=fc.bfloat16), "e": fc.empty((0,))}, path)
    out = ser.load(path, mmap=True)
    assert out["x"].tolist() == x.tolist() and out["tail"]._storage_id == out["x"]._storage_id
    assert interop_c._storage_is_external(out["x"])  # file memory, not a copy
    assert not interop_c._storage_is_external(ser.load(path)["x"])
    before = path.read_bytes()
    out["x"].fill_(7.0)  # a private mapping: the file does not change
    assert path.read_bytes() == before
    assert torch.load(path, mmap=True)["x"].tolist() == x.tolist()
    torch_path = tmp_path / "t.pt"  # torch aligns its records too: mapped in place
    torch.save({"w": torch.arange(100, dtype=torch.int64)}, torch_path)
    w = ser.load(torch_path, mmap=True)["w"]
    assert w.tolist() == list(range(100)) and interop_c._storage_is_external(w)
    with pytest.raises(ValueError, match=r"\[load\] mmap=True needs f to be a file path"):
        ser.load(io.BytesIO(before), mmap=True)
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.ones(2), legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(FlambeauError, match=r"mmap=True needs the zip format; this file is in the legacy format"):
        ser.load(legacy, mmap=True)


# ------------------------------------------------------------------------------ weights_only


class _Marker:
    """Pickles as a call of os.system, the classic hostile checkpoint."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


@dataclasses.dataclass
class Config:
    lr: float
    name: str


def test_weights_only_refuses_code_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    for buf in (saved({"w": fc.ones(1), "x": _Marker(str(marker))}), torch_saved({"x": _Marker(str(marker))})):
        with pytest.raises(pickle.UnpicklingError, match=r"\[load\] .*GLOBAL posix.system is refused: module posix"):
            ser.load(buf)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError):  # torch refuses it too
        torch.load(saved({"x": _Marker(str(marker))}))
    assert not marker.exists()
    ser.load(saved({"x": _Marker(str(marker))}), weights_only=False)  # trusted: it runs
    assert marker.exists()


def test_weights_only_allowlist_and_safe_globals():
    name = f"{Config.__module__}.{Config.__qualname__}"
    buf = saved({"cfg": Config(0.1, "adam"), "w": fc.ones(2)})
    raw = buf.getvalue()
    assert ser.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == [name]
    assert torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == [name]
    with pytest.raises(
        pickle.UnpicklingError, match=rf"GLOBAL {name} was not an allowed global by default.*add_safe_globals"
    ):
        ser.load(io.BytesIO(raw))
    with ser.safe_globals([Config]):
        assert ser.get_safe_globals() == [Config]
        assert ser.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == []
        assert ser.load(io.BytesIO(raw))["cfg"] == Config(0.1, "adam")
    assert ser.get_safe_globals() == []
    ser.add_safe_globals([(Config, name)])
    try:
        assert ser.load(io.BytesIO(raw))["cfg"] == Config(0.1, "adam")
    finally:
        ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    assert ser.load(io.BytesIO(raw), weights_only=False)["cfg"] == Config(0.1, "adam")
    with pytest.raises(TypeError, match=r"\[add_safe_globals\] expected a list"):
        ser.add_safe_globals(Config)
    # os/posix/sys/nt stay refused even when allowlisted.
    with ser.safe_globals([(os.getcwd, f"{os.getcwd.__module__}.getcwd")]):
        with pytest.raises(pickle.UnpicklingError, match=r"module (posix|nt) is blocked .* cannot be allowlisted"):
            ser.load(saved(os.getcwd))
    assert ser.get_safe_globals() == []


def test_numpy_arrays_need_weights_only_false_or_an_allowlist_as_in_torch():
    arr = np.arange(6.0).reshape(2, 3)
    raw = saved({"a": arr}).getvalue()
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL numpy\.\S+ was not an allowed global"):
        ser.load(io.BytesIO(raw))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(raw))
    np.testing.assert_array_equal(ser.load(io.BytesIO(raw), weights_only=False)["a"], arr)
    np.testing.assert_array_equal(ser.load(torch_saved({"a": arr}), weights_only=False)["a"], arr)
    unsafe = ser.get_unsafe_globals_in_checkpoint(io.BytesIO(raw))
    assert unsafe == sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)))
    # What a user does, as torch documents it: the globals the checkpoint names, and the
    # dtype's class (BUILD sets the state of a numpy.dtypes.Float64DType instance).
    allow: list = [type(arr.dtype)]
    for full in unsafe:
        module, _, name = full.rpartition(".")
        allow.append((getattr(importlib.import_module(module), name), full))
    with ser.safe_globals(allow[1:]), pytest.raises(pickle.UnpicklingError, match="BUILD can only set the state"):
        ser.load(io.BytesIO(raw))
    with ser.safe_globals(allow):
        np.testing.assert_array_equal(ser.load(io.BytesIO(raw))["a"], arr)
    with torch.serialization.safe_globals(allow):
        np.testing.assert_array_equal(torch.load(io.BytesIO(raw))["a"], arr)


def test_weights_only_with_pickle_module_is_refused():
    with pytest.raises(FlambeauError, match=r"cannot load safely with an explicit pickle_module"):
        ser.load(saved(1), pickle_module=pickle)
    assert ser.load(saved(1), pickle_module=pickle, weights_only=False) == 1


# ------------------------------------------------------------------------------ hostile and broken files


def _rezip(buf: io.BytesIO, edit) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(buf) as z, zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            data = edit(info.filename, z.read(info))
            if data is not None:
                w.writestr(info.filename, data)
    out.seek(0)
    return out


def test_storage_larger_than_its_record():
    buf = _rezip(saved(fc.arange(8.0)), lambda n, d: d[:-4] if n.endswith("data/0") else d)
    with pytest.raises(
        FlambeauError, match=r"\[load\] <BytesIO>: storage data/0 declares 8 elements .* holds 28 bytes"
    ):
        ser.load(buf)


def test_missing_storage_record():
    buf = _rezip(saved(fc.arange(8.0)), lambda n, d: None if n.endswith("data/0") else d)
    with pytest.raises(FlambeauError, match=r"refers to storage record archive/data/0, which the archive lacks"):
        ser.load(buf)


def test_truncated_and_garbage_files(tmp_path):
    raw = saved({"w": fc.ones(100)}).getvalue()
    for cut in (10, len(raw) // 2, len(raw) - 5):
        with pytest.raises(FlambeauError, match=r"\[load\] <BytesIO>: .*(damaged|truncated)"):
            ser.load(io.BytesIO(raw[:cut]))
    with pytest.raises(FlambeauError, match=r"\[load\] .*not a checkpoint: it starts with b'garbage!'"):
        ser.load(io.BytesIO(b"garbage!" * 100))
    with pytest.raises(FlambeauError, match=r"zip archive is damaged"):
        ser.load(io.BytesIO(b"PK\x03\x04" + bytes(range(256)) * 40))
    plain_zip = io.BytesIO()
    with zipfile.ZipFile(plain_zip, "w") as z:
        z.writestr("notes.txt", "hello")
    with pytest.raises(FlambeauError, match=r"no <archive>/data.pkl record; it is not a torch.save checkpoint"):
        ser.load(io.BytesIO(plain_zip.getvalue()))
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(FlambeauError, match=r"\[load\] .*empty.pt: not a checkpoint"):
        ser.load(empty)


def test_deflated_checkpoint_loads_and_a_zip_bomb_does_not():
    src = saved({"w": fc.zeros(1000), "v": fc.arange(5)})
    deflated = io.BytesIO()
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as w:
        for info in z.infolist():
            w.writestr(info.filename, z.read(info))
    assert ser.load(io.BytesIO(deflated.getvalue()))["v"].tolist() == [0, 1, 2, 3, 4]
    # A bomb: data/0 claims 4 GiB from a few hundred compressed bytes (patched in the central directory).
    raw = bytearray(deflated.getvalue())
    entry = raw.find(b"archive/data/0", raw.find(b"PK\x01\x02")) - 46  # its central directory header
    assert raw[entry : entry + 4] == b"PK\x01\x02"
    struct.pack_into("<I", raw, entry + 24, 0xFFFFFFF0)  # the uncompressed size
    with pytest.raises(FlambeauError, match=r"claims 4294967280 bytes from \d+ compressed bytes.*zip bomb"):
        ser.load(io.BytesIO(bytes(raw)))


def _pickle_zip(pkl: bytes) -> io.BytesIO:
    return _rezip(saved(0), lambda n, d: pkl if n.endswith("data.pkl") else d)


def test_deeply_nested_containers_are_refused():
    deep = b"\x80\x02" + b"]" * 5000 + b"a" * 4999 + b"."  # [[[[...]]]] 5000 levels
    with pytest.raises(pickle.UnpicklingError, match=r"nests containers more than 1000 levels deep"):
        ser.load(_pickle_zip(deep))
    marks = b"\x80\x02" + b"(" * 5000
    with pytest.raises(pickle.UnpicklingError, match=r"nests more than 1000 MARKs"):
        ser.load(_pickle_zip(marks))
    shallow = b"\x80\x02" + b"]" * 50 + b"a" * 49 + b"."
    out = ser.load(_pickle_zip(shallow))
    for _ in range(49):
        (out,) = out
    assert out == []


@pytest.mark.parametrize(
    ("pkl", "words"),
    [
        (b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.", "GLOBAL builtins.eval was not an allowed global"),
        (b"\x80\x02csubprocess\ncall\n.", "GLOBAL subprocess.call was not an allowed global"),
        (b"\x80\x02(X\x07\x00\x00\x00storageK\x01tQ.", "a storage persistent id must be a tuple of 5 items"),
        (b"\x80\x02X\x03\x00\x00\x00fooQ.", "only ('storage', ...) persistent ids are allowed"),
        (b"\x80\x02h\x05.", "KeyError"),
        (b"\x80\x02a.", "IndexError"),
        (b"\x80\x02X\xff\x00\x00\x00ab", "ends after"),
        (b"\x80\x02\x95", "unsupported opcode"),
        (b"\x80\x02ccollections\nOrderedDict\n)R]b.", "BUILD of an OrderedDict needs a dict state"),
        (b"\x80\x02K\x01K\x02a.", "APPEND only works on lists, got int"),
        (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x02K\x03K\x04K\x05K\x06tR.", "rebuilt from a storage"),
        (b"\x80\x02ctorch._utils\n_rebuild_qtensor\n)R.", "quantized tensors are not supported by flambeau"),
    ],
)
def test_malformed_and_hostile_pickles(pkl, words):
    with pytest.raises((pickle.UnpicklingError, FlambeauError)) as info:
        ser.load(_pickle_zip(pkl))
    assert str(info.value).startswith("[load] <BytesIO>:")
    assert words in str(info.value)


def test_tensor_reaching_outside_its_storage():
    good = saved(fc.arange(6.0)).getvalue()
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        pkl = z.read("archive/data.pkl")
    # size (6,) -> (60,): the same storage of 6 elements.
    bad = pkl.replace(b"K\x06\x85", b"K<\x85", 1)
    assert bad != pkl
    with pytest.raises(FlambeauError, match=r"reaches element 59, outside its storage archive/data/0 of 6 elements"):
        ser.load(_rezip(io.BytesIO(good), lambda n, d: bad if n.endswith("data.pkl") else d))


def test_safetensors_needs_the_registered_reader(tmp_path, monkeypatch):
    path = tmp_path / "x.safetensors"
    header = b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    path.write_bytes(struct.pack("<Q", len(header)) + header + struct.pack("<2f", 1.0, 2.0))
    monkeypatch.setattr(ser, "_safetensors", {})
    with pytest.raises(FlambeauError, match=r"this is a safetensors file; reading it needs flambeau_nn.load"):
        ser.load(path)
    with pytest.raises(FlambeauError, match=r"writing a .safetensors file needs a safetensors writer"):
        ser.save({"x": fc.ones(1)}, path)
    calls = []
    ser.register_safetensors(lambda sd, p: calls.append(("save", p)), lambda p: {"x": fc.ones(2)})
    assert ser.load(path)["x"].tolist() == [1.0, 1.0]
    ser.save({"x": fc.ones(1)}, str(path))
    assert calls == [("save", str(path))]
    with pytest.raises(TypeError, match=r"a .safetensors file holds a dict of name -> Tensor, got list"):
        ser.save([fc.ones(1)], path)


def test_a_whole_torch_module_is_refused_by_weights_only():
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL torch\.nn\.modules\.linear\.Linear was not an allowed"):
        ser.load(torch_saved(torch.nn.Linear(2, 2)))


def test_other_pickle_protocols_load_with_weights_only_false():
    raw = saved({"x": fc.arange(3.0)}, pickle_protocol=4).getvalue()
    assert ser.load(io.BytesIO(raw), weights_only=False)["x"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(pickle.UnpicklingError, match=r"unsupported opcode .*protocol-2 opcodes torch.save writes"):
        ser.load(io.BytesIO(raw))
    with pytest.raises(FlambeauError, match=r"\[save\] pickle_protocol must be an int from 2"):
        ser.save(1, io.BytesIO(), pickle_protocol=1)


def test_legacy_format_hostile_pickle_is_refused(tmp_path):
    marker = tmp_path / "ran"
    buf = torch_saved({"x": _Marker(str(marker))}, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match=r"\[load\] <BytesIO>: .*GLOBAL posix.system is refused"):
        ser.load(buf)
    assert not marker.exists()


def test_torch_size_and_tensor_attributes():
    out = ser.load(torch_saved({"size": torch.Size([2, 3]), "empty": torch.Size([])}))
    assert out == {"size": (2, 3), "empty": ()}
    assert type(out["size"]) is fc.Size and type(out["empty"]) is fc.Size  # as torch.load gives torch.Size
    out = ser.load(torch_saved({"shape": torch.ones(2, 5).shape}), weights_only=False)
    assert type(out["shape"]) is fc.Size and out["shape"] == (2, 5)
    t = torch.ones(2)
    t.note = "hello"  # torch pickles Python attributes with _rebuild_from_type_v2
    with pytest.raises(FlambeauError, match=r"gives a tensor Python attributes \['note'\]"):
        ser.load(torch_saved(t))


@pytest.mark.parametrize("weights_only", [True, False])
def test_a_flambeau_size_loads_in_torch_as_torch_size(weights_only):
    x = fc.ones(2, 3)
    out = torch.load(saved({"shape": x.shape, "size": fc.Size([4]), "empty": fc.Size()}), weights_only=weights_only)
    assert out == {"shape": torch.Size([2, 3]), "size": torch.Size([4]), "empty": torch.Size([])}
    assert all(type(v) is torch.Size for v in out.values())
    back = ser.load(saved({"shape": x.shape}))  # and round-trips as a Size
    assert type(back["shape"]) is fc.Size and back["shape"] == (2, 3)


def test_saving_too_deep_a_structure_is_a_clean_error():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(FlambeauError, match=r"\[save\] <BytesIO>: the object nests too deeply to pickle"):
        ser.save(deep, io.BytesIO())
