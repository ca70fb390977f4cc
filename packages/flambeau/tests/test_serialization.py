"""fb.save/fb.load with everything a PyTorch program saves: parameters, model
and optimizer state dicts, whole modules; checked against torch 2.x."""

from __future__ import annotations

import io
import pickle

import flambeau as fb
import flambeau_nn
import numpy as np
import pytest
import torch


def _saved(obj: object) -> io.BytesIO:
    buf = io.BytesIO()
    fb.save(obj, buf)
    buf.seek(0)
    return buf


def _torch_saved(obj: object) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameters_both_ways_keep_requires_grad(requires_grad):
    p = fb.nn.Parameter(fb.arange(6.0).reshape(2, 3), requires_grad=requires_grad)
    out = torch.load(_saved({"p": p, "view": fb.Tensor(p)[1]}))
    assert type(out["p"]) is torch.nn.Parameter and out["p"].requires_grad is requires_grad
    assert out["p"].tolist() == p.tolist()
    assert out["view"].untyped_storage().data_ptr() == out["p"].untyped_storage().data_ptr()

    tp = torch.nn.Parameter(torch.arange(4.0), requires_grad=requires_grad)
    back = fb.load(_torch_saved({"p": tp}))["p"]
    assert type(back) is flambeau_nn.Parameter and back.requires_grad is requires_grad
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_plain_tensor_requires_grad_both_ways():
    x = fb.ones(3, requires_grad=True)
    assert torch.load(_saved(x)).requires_grad
    y = fb.load(_torch_saved(torch.ones(2, requires_grad=True)))
    assert y.requires_grad and y.is_leaf


def test_model_state_dicts_move_between_frameworks():
    fb.manual_seed(0)
    model = fb.nn.Sequential(fb.nn.Linear(4, 8), fb.nn.ReLU(), fb.nn.Linear(8, 3))
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    twin.load_state_dict(torch.load(_saved(model.state_dict())))
    x = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    with fb.no_grad():
        ours = model(fb.tensor(x.tolist())).numpy()
    np.testing.assert_allclose(twin(torch.from_numpy(x)).detach().numpy(), ours, rtol=1e-6, atol=1e-6)

    torch.manual_seed(1)
    source = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    model.load_state_dict(fb.load(_torch_saved(source.state_dict())))
    with fb.no_grad():
        ours = model(fb.tensor(x.tolist())).numpy()
    np.testing.assert_allclose(source(torch.from_numpy(x)).detach().numpy(), ours, rtol=1e-6, atol=1e-6)


def test_optimizer_state_dict_round_trip_and_torch_reads_it():
    model = fb.nn.Linear(3, 2)
    opt = fb.optim.Adam(model.parameters(), lr=0.01)
    model(fb.ones(4, 3)).sum().backward()
    opt.step()
    state = opt.state_dict()
    back = fb.load(_saved(state))
    assert back["param_groups"] == state["param_groups"]
    for i, s in state["state"].items():
        for k, v in s.items():
            got = back["state"][i][k]
            if isinstance(v, fb.Tensor):
                np.testing.assert_array_equal(got.numpy(), v.numpy())
            else:
                assert got == v
    in_torch = torch.load(_saved(state))  # weights_only=True: plain containers and tensors
    assert in_torch["param_groups"][0]["lr"] == 0.01
    assert in_torch["state"][0]["exp_avg"].shape == (2, 3)
    fresh = fb.optim.Adam(fb.nn.Linear(3, 2).parameters(), lr=0.01)
    fresh.load_state_dict(back)


def test_whole_module_needs_weights_only_false():
    model = fb.nn.Sequential(fb.nn.Linear(2, 2), fb.nn.Tanh())
    raw = _saved(model).getvalue()
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL flambeau_nn\.\S+ was not an allowed global"):
        fb.load(io.BytesIO(raw))
    back = fb.load(io.BytesIO(raw), weights_only=False)
    x = fb.ones(3, 2)
    with fb.no_grad():
        np.testing.assert_array_equal(back(x).numpy(), model(x).numpy())
    assert all(type(p) is flambeau_nn.Parameter and p.requires_grad for p in back.parameters())


def test_safetensors_suffix_and_detection(tmp_path):
    sd = fb.nn.Linear(3, 2).state_dict()
    path = tmp_path / "m.safetensors"
    fb.save(sd, path)
    assert path.read_bytes()[8:9] == b"{"  # safetensors, as torch.load expects of this suffix
    expected = flambeau_nn.load(path)
    for loaded in (fb.load(path), fb.load(str(path), map_location="cpu")):
        assert list(loaded) == list(expected)
        for k in expected:
            np.testing.assert_array_equal(loaded[k].numpy(), expected[k].numpy())
    renamed = tmp_path / "m.bin"  # detected by its header, not its name
    renamed.write_bytes(path.read_bytes())
    assert list(fb.load(renamed)) == ["weight", "bias"]
    pt = tmp_path / "m.pt"
    fb.save(sd, pt)
    assert pt.read_bytes()[:4] == b"PK\x03\x04"
    assert list(torch.load(pt)) == ["weight", "bias"]


def test_serialization_namespace():
    assert fb.serialization.add_safe_globals is fb.serialization.add_safe_globals
    import flambeau.serialization as s  # noqa: PLC0415

    assert s.load is fb.load and s.save is fb.save
    assert fb.serialization.get_safe_globals() == []


def test_device_tensors_go_back_to_their_device_or_where_map_location_says():
    fb.utils.register_sim()  # the simulated device: a non-cpu device on any machine
    x = fb.arange(6.0).to("sim")
    raw = _saved({"x": x, "tail": x[2:]}).getvalue()
    out = fb.load(io.BytesIO(raw))
    assert str(out["x"].device) == "sim:0" and str(out["tail"].device) == "sim:0"
    assert out["tail"]._storage_id == out["x"]._storage_id
    assert out["tail"].cpu().tolist() == [2.0, 3.0, 4.0, 5.0]
    for map_location in ("cpu", {"sim:0": "cpu"}, fb.device("cpu")):
        moved = fb.load(io.BytesIO(raw), map_location=map_location)
        assert moved["x"].is_cpu and moved["tail"]._storage_id == moved["x"]._storage_id
    assert torch.load(io.BytesIO(raw), map_location="cpu")["tail"].tolist() == [2.0, 3.0, 4.0, 5.0]
    assert str(fb.load(_saved(fb.ones(2)), map_location="sim").device) == "sim:0"
