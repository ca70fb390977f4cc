"""flambeau.utils.tensorboard.SummaryWriter: event files read back with the tensorboard package's reader and
compared with what torch.utils.tensorboard.SummaryWriter writes for the same calls."""

import glob
import io
import os
import re
import socket
import struct
import subprocess
import sys

import flambeau as fb
import matplotlib
import numpy as np
import pytest
import torch
import torch.utils.tensorboard as torch_tb
from flambeau.utils.tensorboard import SummaryWriter
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
from tensorboard.plugins.hparams import plugin_data_pb2

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rng = np.random.default_rng(1234)


def events(log_dir):
    """The Event messages of the one event file directly in log_dir, in order, as written (no migration)."""
    files = glob.glob(os.path.join(str(log_dir), "events.out.tfevents.*"))
    assert len(files) == 1, files
    return list(LegacyEventFileLoader(files[0]).Load())


def values(log_dir):
    """(tag, step, Summary.Value) of every summary value in log_dir's event file."""
    return [(v.tag, e.step, v) for e in events(log_dir) if e.HasField("summary") for v in e.summary.value]


def both(tmp_path, calls, **kwargs):
    """Runs calls(writer) on a flambeau writer and on torch's; returns their log dirs."""
    fb_dir, torch_dir = tmp_path / "fb", tmp_path / "torch"
    with SummaryWriter(str(fb_dir), **kwargs) as w:
        calls(w, fb)
    with torch_tb.SummaryWriter(str(torch_dir), **kwargs) as w:
        calls(w, torch)
    return fb_dir, torch_dir


def subdirs(log_dir):
    return sorted(p.name for p in log_dir.iterdir() if p.is_dir())


# --- scalars ---------------------------------------------------------------------------------------


def test_add_scalar_values_steps_tags_match_torch(tmp_path):
    losses = rng.standard_normal(6).astype(np.float32)

    def calls(w, lib):
        for step, loss in enumerate(losses):
            w.add_scalar("loss/train", lib.tensor(float(loss)), step)
        w.add_scalar("python_int", 7, 10)
        w.add_scalar("python_float", 0.125, 11)
        w.add_scalar("numpy", np.float64(2.5), 12)
        w.add_scalar("one_element", lib.tensor([[3.0]]), 13)
        w.add_scalar("no_step", 1.0)
        w.add_scalar("at_walltime", 4.0, 14, walltime=1234.5)

    fb_dir, torch_dir = both(tmp_path, calls)
    got, want = values(fb_dir), values(torch_dir)
    assert [(t, s) for t, s, _ in got] == [(t, s) for t, s, _ in want]
    assert [v.simple_value for *_, v in got] == [v.simple_value for *_, v in want]
    assert [v.simple_value for t, _, v in got if t == "loss/train"] == losses.tolist()
    walltimes = [e.wall_time for e in events(fb_dir) if e.HasField("summary")]
    assert walltimes[-1] == 1234.5
    acc = EventAccumulator(str(fb_dir))
    acc.Reload()
    assert [(s.step, s.value) for s in acc.Scalars("loss/train")] == list(enumerate(losses.tolist()))


def test_add_scalar_takes_a_torch_tensor_and_bfloat16(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("torch", torch.tensor(1.5, requires_grad=True), 0)
        w.add_scalar("bf16", fb.tensor(0.75, dtype=fb.bfloat16), 1)
        w.add_scalar("requires_grad", fb.tensor(2.0, requires_grad=True) * 2, 2)
    assert [(t, s, v.simple_value) for t, s, v in values(tmp_path)] == [
        ("torch", 0, 1.5),
        ("bf16", 1, 0.75),
        ("requires_grad", 2, 4.0),
    ]


@pytest.mark.parametrize("double_precision", [False, True])
def test_add_scalar_new_style_matches_torch(tmp_path, double_precision):
    def calls(w, lib):
        w.add_scalar("x", 1 / 3, 5, new_style=True, double_precision=double_precision)

    fb_dir, torch_dir = both(tmp_path, calls)
    (tag, step, got), (_, _, want) = values(fb_dir)[0], values(torch_dir)[0]
    assert (tag, step) == ("x", 5)
    assert got.tensor == want.tensor and got.metadata == want.metadata
    assert got.metadata.plugin_data.plugin_name == "scalars"


def test_add_scalars_writes_one_run_per_key_as_torch(tmp_path):
    def calls(w, lib):
        for i in range(3):
            w.add_scalars("run/14h", {"xsinx": i * np.sin(i / 5), "xcosx": lib.tensor(i * np.cos(i / 5))}, i)

    fb_dir, torch_dir = both(tmp_path, calls)
    assert subdirs(fb_dir) == subdirs(torch_dir) == ["run_14h_xcosx", "run_14h_xsinx"]
    for sub in ("run_14h_xsinx", "run_14h_xcosx"):
        got, want = values(fb_dir / sub), values(torch_dir / sub)
        assert [(t, s, v.simple_value) for t, s, v in got] == [(t, s, v.simple_value) for t, s, v in want]
        assert {t for t, _, _ in got} == {"run/14h"}


# --- histograms ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bins, max_bins", [("tensorflow", None), ("auto", None), (10, None), (64, 7), ([-1.0, 0.0, 0.5, 4.0], None)]
)
def test_add_histogram_buckets_match_torch(tmp_path, bins, max_bins):
    data = rng.standard_normal((40, 25)).astype(np.float32)

    def calls(w, lib):
        w.add_histogram("weights", lib.from_numpy(data), 3, bins=bins, max_bins=max_bins)
        w.add_histogram("numpy_input", data[0], 4, bins=bins, max_bins=max_bins)

    fb_dir, torch_dir = both(tmp_path, calls)
    got, want = values(fb_dir), values(torch_dir)
    assert [(t, s) for t, s, _ in got] == [("weights", 3), ("numpy_input", 4)]
    for (_, _, g), (_, _, t) in zip(got, want, strict=True):
        assert g.histo == t.histo
    histo = got[0][2].histo
    inside = data.size if bins == "tensorflow" else np.histogram(data, bins=bins)[0].sum()
    assert histo.num == data.size and sum(histo.bucket) == inside
    assert histo.min == float(data.min()) and histo.max == float(data.max())
    np.testing.assert_allclose(histo.sum, data.astype(np.float64).sum())
    acc = EventAccumulator(str(fb_dir))
    acc.Reload()
    assert acc.Histograms("weights")[0].histogram_value.num == data.size


def test_default_bins_are_tensorflows(tmp_path):
    with SummaryWriter(str(tmp_path / "fb")) as w, torch_tb.SummaryWriter(str(tmp_path / "torch")) as t:
        assert w.default_bins == t.default_bins


# --- images ----------------------------------------------------------------------------------------


def decoded(value):
    image = Image.open(io.BytesIO(value.image.encoded_image_string))
    image.load()
    return image


IMAGE_CASES = [
    ("add_image", (3, 12, 20), np.float32, "CHW"),
    ("add_image", (12, 20, 3), np.uint8, "HWC"),
    ("add_image", (12, 20, 4), np.float64, "HWC"),
    ("add_image", (1, 9, 7), np.float32, "CHW"),
    ("add_image", (9, 7), np.float32, "HW"),
    ("add_image", (7, 9), np.uint8, "WH"),
    ("add_images", (10, 3, 5, 6), np.float32, "NCHW"),
    ("add_images", (3, 5, 6, 1), np.uint8, "NHWC"),
    ("add_image", (2, 3, 4, 4), np.float32, "NCHW"),
    ("add_image", (5, 6), np.bool_, "HW"),
    ("add_image", (3, 5, 6), np.int64, "CHW"),
]


@pytest.mark.parametrize("method, shape, dtype, dataformats", IMAGE_CASES)
def test_images_decode_to_torchs_pixels(tmp_path, method, shape, dtype, dataformats):
    if dtype in (np.uint8, np.int64, np.bool_):
        data = rng.integers(0, 256 if dtype != np.bool_ else 2, shape).astype(dtype)
    else:  # some values outside 0..1 check the clipping
        data = rng.uniform(-0.1, 1.1, shape).astype(dtype)

    def calls(w, lib):
        image = lib.from_numpy(data)
        getattr(w, method)("picture", image, 2, dataformats=dataformats)

    fb_dir, torch_dir = both(tmp_path, calls)
    (tag, step, got), (_, _, want) = values(fb_dir)[0], values(torch_dir)[0]
    assert (tag, step) == ("picture", 2)
    assert (got.image.height, got.image.width, got.image.colorspace) == (
        want.image.height,
        want.image.width,
        want.image.colorspace,
    )
    mine, theirs = decoded(got), decoded(want)
    assert mine.format == "PNG" and mine.mode == theirs.mode
    np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    acc = EventAccumulator(str(fb_dir))
    acc.Reload()
    assert (acc.Images("picture")[0].width, acc.Images("picture")[0].height) == mine.size


def test_add_images_grid_has_eight_columns(tmp_path):
    batch = np.zeros((10, 3, 4, 5), np.float32)
    batch[9] = 1.0  # the 10th image: second row, second column
    with SummaryWriter(str(tmp_path)) as w:
        w.add_images("grid", batch)
    pixels = np.asarray(decoded(values(tmp_path)[0][2]))
    assert pixels.shape == (8, 40, 3)
    assert (pixels[4:8, 5:10] == 255).all() and pixels.sum() == 255 * 4 * 5 * 3


def test_add_figure_matches_torch(tmp_path):
    def figure():
        fig = plt.figure(figsize=(3, 2), dpi=50)
        plt.plot([0, 1, 2], [0, 1, 4])
        return fig

    def calls(w, lib):
        w.add_figure("single", figure(), 0)
        w.add_figure("pair", [figure(), figure()], 1)

    fb_dir, torch_dir = both(tmp_path, calls)
    got, want = values(fb_dir), values(torch_dir)
    assert [(t, s) for t, s, _ in got] == [("single", 0), ("pair", 1)]
    for (_, _, g), (_, _, t) in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(decoded(g)), np.asarray(decoded(t)))
    assert decoded(got[0][2]).size == (150, 100)
    assert plt.get_fignums() == []  # close=True closed them


def test_add_figure_keeps_the_figure_open_with_close_false(tmp_path):
    fig = plt.figure(figsize=(1, 1), dpi=20)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_figure("open", fig, close=False)
    assert plt.fignum_exists(fig.number)
    plt.close(fig)


# --- text, hparams ---------------------------------------------------------------------------------


def test_add_text_matches_torch(tmp_path):
    def calls(w, lib):
        w.add_text("notes", "**lr** = 0.1, ünïcödé", 3)

    fb_dir, torch_dir = both(tmp_path, calls)
    (tag, step, got), (_, _, want) = values(fb_dir)[0], values(torch_dir)[0]
    assert (tag, step) == ("notes/text_summary", 3)
    assert got.tensor == want.tensor and got.metadata == want.metadata
    assert got.tensor.string_val[0].decode() == "**lr** = 0.1, ünïcödé"


def plugin_data(value):
    data = plugin_data_pb2.HParamsPluginData()
    data.ParseFromString(value.metadata.plugin_data.content)
    return data


def test_add_hparams_matches_torch(tmp_path):
    hparams = {"lr": 0.01, "batch": 32, "optimizer": "adam", "skipped": None}
    domains = {"optimizer": ["adam", "sgd"], "batch": [16, 32]}
    metrics = {"hparam/accuracy": 0.875, "hparam/loss": 0.25}

    def calls(w, lib):
        w.add_hparams(hparams, metrics, hparam_domain_discrete=domains, run_name="trial", global_step=4)

    fb_dir, torch_dir = both(tmp_path, calls)
    assert subdirs(fb_dir) == subdirs(torch_dir) == ["trial"]
    got, want = values(fb_dir / "trial"), values(torch_dir / "trial")
    assert [(t, s) for t, s, _ in got] == [(t, s) for t, s, _ in want]
    assert [t for t, _, _ in got] == [
        "_hparams_/experiment",
        "_hparams_/session_start_info",
        "_hparams_/session_end_info",
        "hparam/accuracy",
        "hparam/loss",
    ]
    for (_, _, g), (_, _, t) in zip(got[:3], want[:3], strict=True):
        assert g.metadata.plugin_data.plugin_name == "hparams"
        assert plugin_data(g) == plugin_data(t)
    assert [v.simple_value for *_, v in got[3:]] == [0.875, 0.25]
    start = plugin_data(got[1][2]).session_start_info
    assert set(start.hparams) == {"lr", "batch", "optimizer"}
    assert start.hparams["optimizer"].string_value == "adam" and start.hparams["batch"].number_value == 32


def test_add_hparams_stores_a_bool_as_a_bool(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_hparams({"nesterov": True, "lr": fb.tensor(0.5)}, {"m": 1.0}, run_name="r")
    experiment = plugin_data(values(tmp_path / "r")[0][2]).experiment
    start = plugin_data(values(tmp_path / "r")[1][2]).session_start_info
    assert start.hparams["nesterov"].bool_value is True
    assert start.hparams["lr"].number_value == 0.5
    assert [(h.name, h.type) for h in experiment.hparam_infos] == [("nesterov", 2), ("lr", 3)]
    assert [m.name.tag for m in experiment.metric_infos] == ["m"]


# --- pr curves, embeddings ---------------------------------------------------------------------------


@pytest.mark.parametrize("num_thresholds, weighted", [(127, False), (11, True), (300, False)])
def test_add_pr_curve_matches_torch(tmp_path, num_thresholds, weighted):
    labels = rng.integers(0, 2, 200)
    predictions = rng.uniform(0, 1, 200).astype(np.float32)
    predictions[:3] = [0.0, 1.0, 0.5]
    weights = rng.uniform(0.5, 2.0, 200) if weighted else None

    def calls(w, lib):
        w.add_pr_curve("pr", lib.from_numpy(labels), lib.from_numpy(predictions), 7, num_thresholds, weights)

    fb_dir, torch_dir = both(tmp_path, calls)
    (tag, step, got), (_, _, want) = values(fb_dir)[0], values(torch_dir)[0]
    assert (tag, step) == ("pr", 7)
    assert got.metadata == want.metadata and got.metadata.plugin_data.plugin_name == "pr_curves"
    assert got.tensor.tensor_shape == want.tensor.tensor_shape
    assert [d.size for d in got.tensor.tensor_shape.dim] == [6, min(num_thresholds, 127)]
    np.testing.assert_allclose(got.tensor.float_val, want.tensor.float_val, rtol=1e-6)
    acc = EventAccumulator(str(fb_dir), size_guidance={"tensors": 0})
    acc.Reload()
    assert acc.Tensors("pr")[0].step == 7


def projector_config(log_dir):
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

    return text_format.Parse((log_dir / "projector_config.pbtxt").read_text(), ProjectorConfig())


def test_add_embedding_files_match_torch(tmp_path):
    mat = rng.standard_normal((10, 4)).astype(np.float32)
    images = rng.uniform(0, 1, (10, 3, 6, 6)).astype(np.float32)
    table = [[str(i), i % 3] for i in range(10)]

    def calls(w, lib):
        w.add_embedding(lib.from_numpy(mat), metadata=list("abcdefghij"), label_img=lib.from_numpy(images))
        w.add_embedding(mat, metadata=table, metadata_header=["name", "class"], global_step=3, tag="a/b 'c'")
        w.add_embedding(lib.from_numpy(mat[:, :2]), tag="bare", global_step=4)

    fb_dir, torch_dir = both(tmp_path, calls)
    assert projector_config(fb_dir) == projector_config(torch_dir)
    for sub in ("00000/default", "00003/a%2fb 'c'", "00004/bare"):
        names = sorted(os.listdir(fb_dir / sub))
        assert names == sorted(os.listdir(torch_dir / sub))
        for name in names:
            if name == "sprite.png":
                mine, theirs = Image.open(fb_dir / sub / name), Image.open(torch_dir / sub / name)
                assert mine.size == theirs.size == (24, 24)
                np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
            else:
                assert (fb_dir / sub / name).read_text() == (torch_dir / sub / name).read_text(), name


# --- graph -----------------------------------------------------------------------------------------


class Net(fb.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = fb.nn.Sequential(fb.nn.Conv2d(1, 4, 3), fb.nn.BatchNorm2d(4))
        self.fc = fb.nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = fb.nn.functional.relu(self.features(x))
        return self.fc(x.flatten(1))


def graph_nodes(log_dir):
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {n.name: n for n in acc.Graph().node}


def shapes(node):
    return [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]


def test_add_graph_module_tree_with_dataflow(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(Net(), fb.randn(2, 1, 8, 8))
    nodes = graph_nodes(tmp_path)
    conv, bn, fc = "Net/Sequential[features]/Conv2d[0]", "Net/Sequential[features]/BatchNorm2d[1]", "Net/Linear[fc]"
    assert shapes(nodes[f"{conv}/weight"]) == [[4, 1, 3, 3]] and nodes[f"{conv}/weight"].op == "Parameter"
    assert shapes(nodes[f"{bn}/running_mean"]) == [[4]] and nodes[f"{bn}/running_mean"].op == "Buffer"
    assert nodes[f"{conv}/forward"].op == "Conv2d"
    assert list(nodes[f"{conv}/forward"].input) == ["input/input.0", f"{conv}/weight", f"{conv}/bias"]
    assert nodes[f"{bn}/forward"].input[0] == f"{conv}/forward"
    # relu and flatten run between BatchNorm2d and Linear: attributed to the module that ran last.
    assert nodes[f"{fc}/forward"].input[0] == f"{bn}/forward"
    assert shapes(nodes[f"{conv}/forward"]) == [[2, 4, 6, 6]] and shapes(nodes[f"{fc}/forward"]) == [[2, 10]]
    assert list(nodes["output/output.0"].input) == [f"{fc}/forward"]
    assert shapes(nodes["input/input.0"]) == [[2, 1, 8, 8]]
    assert "in_features=144, out_features=10" in nodes[f"{fc}/forward"].attr["attr"].s.decode()


def test_add_graph_runs_in_eval_mode_and_restores_each_modules_mode(tmp_path):
    model = Net()
    model.fc.eval()  # a mixed state: the rest trains
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, fb.randn(2, 1, 8, 8))
    assert model.training and model.features[1].training and not model.fc.training
    for key, value in model.state_dict().items():  # BatchNorm's running statistics untouched
        assert fb.equal(value, before[key]), key


def test_add_graph_without_input_shows_the_tree(tmp_path, capsys):
    model = fb.nn.Sequential(fb.nn.Linear(3, 5), fb.nn.ReLU())
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, verbose=True)
    nodes = graph_nodes(tmp_path)
    assert set(nodes) == {
        "Sequential/Linear[0]/weight",
        "Sequential/Linear[0]/bias",
        "Sequential/Linear[0]/forward",
        "Sequential/ReLU[1]/forward",
    }
    assert "Sequential/Linear[0]/forward = Linear(" in capsys.readouterr().out


def test_add_graph_a_module_called_twice_gets_two_nodes(tmp_path):
    class Twice(fb.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = fb.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(self.lin(x))

    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(Twice(), (fb.randn(1, 3),))
    nodes = graph_nodes(tmp_path)
    assert nodes["Twice/Linear[lin]/forward.1"].input[0] == "Twice/Linear[lin]/forward"


# --- files, queue, purge_step, default log dir -------------------------------------------------------


def test_event_file_name_and_version_event(tmp_path):
    with SummaryWriter(str(tmp_path), filename_suffix=".v2") as w:
        w.add_scalar("a", 1.0, 0)
    (path,) = os.listdir(tmp_path)
    assert re.fullmatch(
        rf"events\.out\.tfevents\.\d{{10}}\.{re.escape(socket.gethostname())}\.{os.getpid()}\.\d+\.v2", path
    )
    first = events(tmp_path)[0]
    assert first.file_version == "brain.Event:2"


def test_file_writer_takes_tensorboards_protobuf_messages(tmp_path):
    from flambeau.utils.tensorboard import FileWriter
    from tensorboard.compat.proto import event_pb2, summary_pb2

    w = FileWriter(str(tmp_path))
    w.add_summary(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="s", simple_value=2.5)]), 4, 10.0)
    w.add_event(event_pb2.Event(file_version="custom"), step=5)
    w.close()
    summary_event, custom = events(tmp_path)[1:]
    assert (summary_event.step, summary_event.wall_time, summary_event.summary.value[0].simple_value) == (4, 10.0, 2.5)
    assert (custom.step, custom.file_version) == (5, "custom")


def test_crc32c_known_answer():
    from flambeau._tensorboard import _events

    assert _events.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert _events.crc32c(b"") == 0


def test_every_record_carries_tensorboards_checksums(tmp_path):
    # TensorBoard's reader skips the checks: check the framing here against its checksum function.
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("a", 1.0, 0)
        w.add_image("noise", rng.uniform(size=(3, 96, 96)).astype(np.float32), 0)  # a PNG of ~27 KiB
        w.add_text("t", "x" * 100, 0)
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    data = open(path, "rb").read()
    offset, sizes = 0, []
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        (header_crc,) = struct.unpack_from("<I", data, offset + 8)
        (data_crc,) = struct.unpack_from("<I", data, offset + 12 + length)
        assert header_crc == masked_crc32c(data[offset : offset + 8])
        assert data_crc == masked_crc32c(data[offset + 12 : offset + 12 + length])
        sizes.append(length)
        offset += 16 + length
    assert offset == len(data) and len(sizes) == 4 and max(sizes) > 8 * 1024


@pytest.mark.parametrize("n", [8191, 8192, 8193, 70001, 1 << 20])
def test_crc32c_of_long_data_lane_by_lane_equals_byte_by_byte(n):
    from flambeau._tensorboard import _events

    data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    assert _events.crc32c(data) == _events._crc_bytes(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    # tensorboard's own (pure-Python) checksum agrees
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    assert _events.masked_crc32c(data) == masked_crc32c(data)


def test_events_wait_in_the_queue_until_flush(tmp_path):
    w = SummaryWriter(str(tmp_path), max_queue=3, flush_secs=3600)
    w.add_scalar("a", 1.0, 0)
    w.add_scalar("a", 2.0, 1)
    assert values(tmp_path) == []
    w.add_scalar("a", 3.0, 2)  # the third fills the queue
    assert [v.simple_value for *_, v in values(tmp_path)] == [1.0, 2.0, 3.0]
    w.add_scalar("a", 4.0, 3)
    w.flush()
    assert len(values(tmp_path)) == 4
    w.close()
    w.close()  # a second close does nothing


def test_events_are_flushed_every_flush_secs(tmp_path):
    import time

    with SummaryWriter(str(tmp_path), flush_secs=0.05) as w:
        w.add_scalar("a", 1.0, 0)
        deadline = time.monotonic() + 10
        while not values(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(values(tmp_path)) == 1


def test_writing_after_close_starts_a_new_file(tmp_path):
    w = SummaryWriter(str(tmp_path))
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.add_scalar("a", 2.0, 1)
    w.close()
    assert len(glob.glob(str(tmp_path / "events.out.tfevents.*"))) == 2
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(s.step, s.value) for s in acc.Scalars("a")] == [(0, 1.0), (1, 2.0)]


def test_purge_step_hides_the_crashed_runs_later_steps(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    with SummaryWriter(str(tmp_path), purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 100.0 + step, step)
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(s.step, s.value) for s in acc.Scalars("loss")] == [(s, float(s)) for s in range(5)] + [
        (s, 100.0 + s) for s in range(5, 8)
    ]


def test_default_log_dir_is_runs_date_host_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        log_dir = w.get_logdir()
    assert re.fullmatch(rf"runs/[A-Z][a-z]{{2}}\d\d_\d\d-\d\d-\d\d_{re.escape(socket.gethostname())}_lr0\.1", log_dir)
    assert os.listdir(tmp_path / log_dir)
    with SummaryWriter(str(tmp_path / "given"), comment="ignored") as w:
        assert w.get_logdir() == str(tmp_path / "given")


def test_torch_import_hook_gives_this_writer():
    # A fresh process: the hook refuses to install once the real torch is imported (as here).
    script = (
        "from flambeau import torch_import_hook as hook; hook.install()\n"
        "from torch.utils.tensorboard import SummaryWriter\n"
        "import flambeau\n"
        "assert SummaryWriter is flambeau.utils.tensorboard.SummaryWriter, SummaryWriter\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


# --- bad input -------------------------------------------------------------------------------------


def test_log_dir_under_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match=r"^\[SummaryWriter\] cannot write event files to log_dir '.*a_file/run'"):
        SummaryWriter(str(blocker / "run"))
    with pytest.raises(FileExistsError, match=r"^\[SummaryWriter\] cannot write event files to log_dir '.*a_file'"):
        SummaryWriter(str(blocker))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_log_dir_is_a_clear_error(tmp_path):
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o500)
    try:
        with pytest.raises(PermissionError, match=r"^\[SummaryWriter\] cannot write event files to log_dir '.*ro'"):
            SummaryWriter(str(read_only))
    finally:
        read_only.chmod(0o700)


def test_bad_values_are_clear_errors(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_scalar\] expected a scalar .* shape \(3,\)"):
            w.add_scalar("x", fb.tensor([1.0, 2.0, 3.0]), 0)
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_scalar\] expected a tensor, a NumPy array or a num"):
            w.add_scalar("x", "1.0", 0)
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_scalar\] expected tag to be a str, got int"):
            w.add_scalar(3, 1.0)
        with pytest.raises(
            TypeError, match=r"^\[SummaryWriter.add_image\] expected an image of bool, integer or float"
        ):
            w.add_image("img", np.zeros((3, 4, 4), np.complex64))
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_image\] dataformats 'CWX' is not valid"):
            w.add_image("img", fb.rand(3, 4, 4), dataformats="CWX")
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_image\] an image of shape \(4, 4\) .* 'CHW'"):
            w.add_image("img", fb.rand(4, 4))
        with pytest.raises(
            fb.FlambeauError, match=r"^\[SummaryWriter.add_image\] .* 1 \(gray\), 3 \(RGB\) or 4 \(RGBA\)"
        ):
            w.add_image("img", fb.rand(2, 4, 4))
        with pytest.raises(
            fb.FlambeauError, match=r"^\[SummaryWriter.add_images\] an image of shape \(2, 3, 4, 4\) .* 'CHW'"
        ):
            w.add_images("img", fb.rand(2, 3, 4, 4), dataformats="CHW")
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_histogram\] expected at least one value"):
            w.add_histogram("h", fb.zeros(0))
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_histogram\] no value falls inside"):
            w.add_histogram("h", np.array([5.0, 6.0]), bins=[0.0, 1.0])
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_hparams\] hparam_dict\['opt'\] must be a bool"):
            w.add_hparams({"opt": object()}, {})
        with pytest.raises(
            TypeError, match=r"^\[SummaryWriter.add_hparams\] the keys of metric_dict must be str, got int"
        ):
            w.add_hparams({"lr": 0.1}, {5: 1.0})
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_hparams\] expected hparam_dict and metric_dict"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_hparams\] hparam_domain_discrete\['lr'\]"):
            w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_text\] expected text_string to be a str"):
            w.add_text("t", 3)
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_graph\] expected an nn.Module, got int"):
            w.add_graph(3)
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_graph\] running the model on input_to_model"):
            w.add_graph(fb.nn.Linear(3, 2), fb.randn(1, 4))
        with pytest.raises(TypeError, match=r"^\[SummaryWriter.add_figure\] expected a matplotlib Figure"):
            w.add_figure("f", np.zeros((3, 3)))
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_pr_curve\] predictions must lie in \[0, 1\]"):
            w.add_pr_curve("pr", np.array([0, 1]), np.array([0.5, 1.5]))
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_pr_curve\] labels and predictions must"):
            w.add_pr_curve("pr", np.array([0, 1, 1]), np.array([0.5, 0.5]))
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_embedding\] mat must be 2-D"):
            w.add_embedding(fb.randn(3, 2, 2))
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_embedding\] metadata has 2 labels for 3"):
            w.add_embedding(fb.randn(3, 2), metadata=["a", "b"])
        with pytest.raises(fb.FlambeauError, match=r"^\[SummaryWriter.add_embedding\] label_img must be N.C.H.W"):
            w.add_embedding(fb.randn(3, 2), label_img=fb.rand(3, 2, 4, 4))
    assert values(tmp_path) == []  # nothing half-written
    assert sorted(os.listdir(tmp_path))[0].startswith("events.out") and len(os.listdir(tmp_path)) == 1


def test_add_figure_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with SummaryWriter(str(tmp_path)) as w, pytest.raises(ImportError, match=r"pip install matplotlib"):
        w.add_figure("f", object())
