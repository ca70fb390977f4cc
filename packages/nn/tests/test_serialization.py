"""save/load in the safetensors format: round trips, interop with the safetensors package, corrupt files."""

from __future__ import annotations

import json
import pickle
import struct

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch
from nn_testing import from_torch, to_numpy


def test_module_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    path = tmp_path / "model.safetensors"
    nn.save(model.state_dict(), path)
    loaded = nn.load(path)
    assert list(loaded) == list(model.state_dict())
    fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    fresh.load_state_dict(loaded)
    x = fc.randn(3, 4)
    assert (to_numpy(fresh(x)) == to_numpy(model(x))).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "int32", "uint8", "int8", "int16", "float16"])
def test_dtypes_shapes_and_views(tmp_path, dtype):
    rng = np.random.default_rng(0)
    arrays = {
        "matrix": (rng.standard_normal((3, 5)) * 10).astype(dtype),
        "scalar": np.array(7, dtype=dtype),
        "empty": np.zeros((0, 4), dtype=dtype),
        "vector": (rng.standard_normal(6) > 0).astype(dtype),
    }
    sd = {k: fc.tensor(v) for k, v in arrays.items()}
    sd["transposed"] = sd["matrix"].transpose(0, 1)  # non-contiguous: saved in C order
    path = tmp_path / "t.safetensors"
    nn.save(sd, path)
    back = nn.load(path)
    for k, t in sd.items():
        assert back[k].dtype == t.dtype and tuple(back[k].shape) == tuple(t.shape)
        np.testing.assert_array_equal(to_numpy(back[k]), to_numpy(t))
    # the reference implementation reads our file ...
    ref = safetensors.numpy.load_file(str(path))
    np.testing.assert_array_equal(ref["transposed"], arrays["matrix"].T)


def test_reads_files_written_by_the_safetensors_package(tmp_path):
    tensors = {
        "w": torch.randn(3, 4),
        "b": torch.arange(5),
        "m": torch.tensor([True, False]),
        "d": torch.randn(2, dtype=torch.float64),
    }
    path = tmp_path / "ref.safetensors"
    safetensors.torch.save_file(tensors, str(path), metadata={"format": "pt"})
    back = nn.load(path)
    assert sorted(back) == sorted(tensors)
    for k, v in tensors.items():
        np.testing.assert_array_equal(to_numpy(back[k]), v.numpy())


def test_loaded_tensors_are_independent_and_writable(tmp_path):
    path = tmp_path / "x.safetensors"
    nn.save({"x": fc.ones(3)}, path)
    a, b = nn.load(path)["x"], nn.load(path)["x"]
    a.add_(fc.ones(3))
    assert a.tolist() == [2.0, 2.0, 2.0] and b.tolist() == [1.0, 1.0, 1.0]


def test_metadata_is_written(tmp_path):
    path = tmp_path / "m.safetensors"
    nn.save({"x": fc.zeros(1)}, path, metadata={"epoch": "3"})
    with safetensors.safe_open(str(path), "np") as f:
        assert f.metadata() == {"epoch": "3"}
    with pytest.raises(TypeError, match="metadata must map str to str"):
        nn.save({"x": fc.zeros(1)}, path, metadata={"epoch": 3})


def test_save_rejects_non_tensors(tmp_path):
    path = tmp_path / "bad.safetensors"
    with pytest.raises(TypeError, match="entry 'lr' is a float, not a Tensor"):
        nn.save({"w": fc.zeros(1), "lr": 0.1}, path)
    with pytest.raises(TypeError, match="keys must be str"):
        nn.save({1: fc.zeros(1)}, path)
    with pytest.raises(TypeError, match="expected a dict"):
        nn.save([fc.zeros(1)], path)
    with pytest.raises(TypeError, match="dtype flambeau.bfloat16, which flambeau_nn.save cannot store"):
        nn.save({"h": fc.empty(2, dtype=fc.bfloat16)}, path)
    with pytest.raises(ValueError, match="reserved"):
        nn.save({"__metadata__": fc.zeros(1)}, path)
    assert not path.exists()


def _write(path, header, data=b""):
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_truncated_files(tmp_path):
    good = tmp_path / "good.safetensors"
    nn.save({"w": fc.ones(4, 4)}, good)
    blob = good.read_bytes()
    short = tmp_path / "short.safetensors"
    short.write_bytes(blob[:5])
    with pytest.raises(ValueError, match=r"short.safetensors is not a valid safetensors file: .*fewer than the 8"):
        nn.load(short)
    short.write_bytes(blob[:20])
    with pytest.raises(ValueError, match="header length .* runs past the end of the file"):
        nn.load(short)
    short.write_bytes(blob[:-4])
    with pytest.raises(ValueError, match="past the end of the data"):
        nn.load(short)


def test_corrupt_headers(tmp_path):
    p = tmp_path / "c.safetensors"
    with pytest.raises(ValueError, match="not valid UTF-8 JSON"):
        nn.load(_write(p, b"{not json"))
    with pytest.raises(ValueError, match="must be a JSON object"):
        nn.load(_write(p, [1, 2]))
    with pytest.raises(ValueError, match="unknown or unsupported dtype 'F33'"):
        nn.load(_write(p, {"x": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4))
    with pytest.raises(ValueError, match="past the end of the data"):
        nn.load(_write(p, {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8))
    with pytest.raises(ValueError, match="needs 16 bytes"):
        nn.load(_write(p, {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, b"\0" * 8))
    with pytest.raises(ValueError, match="invalid shape"):
        nn.load(_write(p, {"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4))
    with pytest.raises(ValueError, match="invalid data_offsets"):
        nn.load(_write(p, {"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\0" * 4))
    with pytest.raises(ValueError, match="must have 'dtype', 'shape' and 'data_offsets'"):
        nn.load(_write(p, {"x": {"dtype": "F32"}}))
    with pytest.raises(ValueError, match="gap or overlap"):
        nn.load(_write(p, {"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8))
    with pytest.raises(ValueError, match="cover 4 bytes of data but the file holds 12"):
        nn.load(_write(p, {"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 12))


def test_pickle_file_is_rejected_without_running_it(tmp_path):
    class Boom:
        def __reduce__(self):
            return (exec, (f"import pathlib; pathlib.Path({str(tmp_path / 'ran')!r}).write_text('ran')",))

    p = tmp_path / "model.pt"
    p.write_bytes(pickle.dumps({"w": Boom()}))
    with pytest.raises(ValueError, match=r"model.pt is not a valid safetensors file"):
        nn.load(p)
    assert not (tmp_path / "ran").exists()
    t = tmp_path / "torch.pt"
    torch.save({"w": torch.zeros(2)}, t)  # a zip of pickles
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        nn.load(t)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        nn.load(tmp_path / "nope.safetensors")


def test_optimizer_state_tensors_save(tmp_path):
    model = nn.Linear(2, 1)
    opt = nn.optim.Adam(model.parameters())
    model(fc.ones(1, 2)).sum().backward()
    opt.step()
    flat = {f"{i}.{k}": v for i, s in opt.state_dict()["state"].items() for k, v in s.items()}
    nn.save(flat, tmp_path / "opt.safetensors")
    back = nn.load(tmp_path / "opt.safetensors")
    assert back["0.step"].item() == 1.0
    np.testing.assert_array_equal(to_numpy(back["1.exp_avg"]), to_numpy(flat["1.exp_avg"]))
    assert from_torch(torch.zeros(1)).dtype == fc.float32
