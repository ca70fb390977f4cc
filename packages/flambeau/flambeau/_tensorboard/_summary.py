"""Summary values: the conversions and encodings behind SummaryWriter's add_* methods."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from flambeau_core import FlambeauError

from . import _proto


def to_numpy(value: Any, where: str) -> np.ndarray:
    """A NumPy array of a flambeau or torch tensor, a NumPy array or scalar, a Python number or list."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(
            f"[{where}] expected a tensor, a NumPy array or a number, got {type(value).__name__} {value!r:.40}"
        )
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a flambeau or torch tensor
        value = value.detach()
        if str(getattr(value, "device", "cpu")) != "cpu":
            value = value.cpu()
        if str(value.dtype).endswith("bfloat16"):  # NumPy has no bfloat16
            value = value.float()
        return np.asarray(value.numpy())
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"[{where}] expected a tensor, a NumPy array or a number, got {type(value).__name__}") from e
    if array.dtype == object:
        raise TypeError(f"[{where}] expected a tensor, a NumPy array or a number, got {type(value).__name__}")
    return array


def scalar_of(value: Any, where: str) -> float:
    array = to_numpy(value, where)
    if array.size != 1:
        raise FlambeauError(
            f"[{where}] expected a scalar (a value with one element), got a value of shape {tuple(array.shape)}"
        )
    if np.iscomplexobj(array):
        raise TypeError(f"[{where}] expected a real scalar, got dtype {array.dtype}")
    return float(array.reshape(()))


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> bytes:
    number = scalar_of(value, "SummaryWriter.add_scalar")
    if new_style:
        tensor = _proto.scalar_tensor(number, double_precision)
        return _proto.summary(_proto.summary_value(tag, tensor=tensor, metadata=_proto.plugin_metadata("scalars")))
    return _proto.summary(_proto.summary_value(tag, simple_value=number))


def default_bins() -> list[float]:
    """TensorFlow's histogram buckets: ±1e-12 growing by 10% up to ±1e20, and 0."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-e for e in reversed(positive)] + [0.0] + positive


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> bytes:
    where = "SummaryWriter.add_histogram"
    array = to_numpy(values, where).astype(np.float64).reshape(-1)
    if array.size == 0:
        raise FlambeauError(f"[{where}] expected at least one value, got an empty tensor")
    try:
        counts, limits = np.histogram(array, bins=bins)
    except (ValueError, TypeError) as e:
        raise FlambeauError(f"[{where}] cannot bin the values with bins={bins!r:.60}: {e}") from e
    if max_bins is not None and len(counts) > max_bins:
        # Merge groups of `group` adjacent bins (the last group padded with empty bins).
        group = len(counts) // max_bins
        pad = (-len(counts)) % group
        counts = np.concatenate([counts, np.zeros(pad, counts.dtype)]).reshape(-1, group).sum(axis=1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    # TensorBoard stores each bucket's right edge only: keep the non-empty range
    # and one empty bucket before it, whose right edge is the range's left edge.
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise FlambeauError(
            f"[{where}] no value falls inside the bins (min {array.min()}, max {array.max()}): NaN, or out of range"
        )
    first, last = int(nonzero[0]), int(nonzero[-1])
    if first > 0:
        counts, limits = counts[first - 1 : last + 1], limits[first : last + 2]
    else:
        counts, limits = np.concatenate([[0], counts[: last + 1]]), limits[: last + 2]
    histo = _proto.histogram(
        float(array.min()),
        float(array.max()),
        float(array.size),
        float(array.sum()),
        float(array.dot(array)),
        limits.tolist(),
        counts.tolist(),
    )
    return _proto.summary(_proto.summary_value(tag, histo=histo))


_FORMAT_LETTERS = {2: "HW", 3: "CHW", 4: "NCHW"}


def to_hwc(array: np.ndarray, dataformats: str, where: str) -> np.ndarray:
    """An image (or a batch laid out as a grid) as a height × width × 3 or 4 array."""
    if not isinstance(dataformats, str):
        raise TypeError(f"[{where}] dataformats must be a string such as 'CHW', got {type(dataformats).__name__}")
    fmt = dataformats.upper()
    expected = _FORMAT_LETTERS.get(len(fmt))
    if expected is None or sorted(fmt) != sorted(expected):
        raise FlambeauError(
            f"[{where}] dataformats '{dataformats}' is not valid: expected an arrangement of the letters "
            "'HW' (one grayscale image), 'CHW' (one image) or 'NCHW' (a batch), each letter once"
        )
    if array.ndim != len(fmt):
        raise FlambeauError(
            f"[{where}] an image of shape {tuple(array.shape)} ({array.ndim} dimensions) does not match "
            f"dataformats '{dataformats}' ({len(fmt)} dimensions)"
        )
    if len(fmt) == 2:
        gray = array.transpose([fmt.index(c) for c in "HW"])
        return np.stack([gray, gray, gray], axis=2)
    if len(fmt) == 3:
        image = array.transpose([fmt.index(c) for c in "HWC"])
    else:
        image = make_grid(array.transpose([fmt.index(c) for c in "NCHW"]), where).transpose(1, 2, 0)
    channels = image.shape[2]
    if channels == 1:
        return np.concatenate([image, image, image], axis=2)
    if channels not in (3, 4):
        raise FlambeauError(
            f"[{where}] an image needs 1 (gray), 3 (RGB) or 4 (RGBA) channels, got {channels} "
            f"(shape {tuple(array.shape)}, dataformats '{dataformats}')"
        )
    return image


def make_grid(batch: np.ndarray, where: str, ncols: int = 8) -> np.ndarray:
    """N images (N×C×H×W) side by side, ``ncols`` to a row, as one C×H'×W' image."""
    n, c, h, w = batch.shape
    if n == 0:
        raise FlambeauError(f"[{where}] expected at least one image in the batch, got shape {tuple(batch.shape)}")
    if c == 1:
        batch = np.concatenate([batch, batch, batch], axis=1)
        c = 3
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    padded = np.zeros((nrows * ncols, c, h, w), dtype=batch.dtype)
    padded[:n] = batch
    return padded.reshape(nrows, ncols, c, h, w).transpose(2, 0, 3, 1, 4).reshape(c, nrows * h, ncols * w)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an H×W×3 (RGB) or H×W×4 (RGBA) uint8 array: 8-bit, no filtering, zlib-compressed."""
    height, width, channels = image.shape
    color_type = 2 if channels == 3 else 6

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # each row starts with filter type 0
    rows[:, 1:] = image.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def image(tag: str, img: Any, dataformats: str, where: str) -> bytes:
    array = to_numpy(img, where)
    if not (
        array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise TypeError(f"[{where}] expected an image of bool, integer or floating dtype, got {array.dtype}")
    hwc = to_hwc(array, dataformats, where)
    if hwc.shape[0] == 0 or hwc.shape[1] == 0:
        raise FlambeauError(f"[{where}] the image is empty: shape {tuple(array.shape)}")
    # uint8 images hold 0..255; any other dtype holds 0..1 (PyTorch's rule), scaled then truncated.
    scale = 1 if hwc.dtype == np.uint8 else 255
    pixels = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    encoded = _proto.image(height, width, channels, encode_png(np.ascontiguousarray(pixels)))
    return _proto.summary(_proto.summary_value(tag, image=encoded))


def figure_to_chw(figure: Any, close: bool, where: str) -> np.ndarray:
    """A matplotlib figure rendered to an RGB 3×H×W uint8 array."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ModuleNotFoundError as e:
        raise ImportError(f"[{where}] needs matplotlib to render figures: pip install matplotlib") from e
    if not hasattr(figure, "get_size_inches"):
        raise TypeError(f"[{where}] expected a matplotlib Figure or a list of them, got {type(figure).__name__}")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    if close:
        plt.close(figure)
    return np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))


def text(tag: str, text_string: str) -> bytes:
    if not isinstance(text_string, str):
        raise TypeError(f"[SummaryWriter.add_text] expected text_string to be a str, got {type(text_string).__name__}")
    # TextPluginData(version=0) encodes to no bytes.
    metadata = _proto.plugin_metadata("text")
    tensor = _proto.string_tensor([text_string.encode("utf-8")])
    return _proto.summary(_proto.summary_value(tag + "/text_summary", tensor=tensor, metadata=metadata))


def pr_curve(tag: str, labels: Any, predictions: Any, num_thresholds: int, weights: Any) -> bytes:
    """The pr_curves plugin's 6 × num_thresholds tensor: TP, FP, TN, FN, precision, recall per threshold.

    Threshold i is i / (num_thresholds - 1): a prediction counts as positive at
    every threshold at or below it (TensorBoard's pr_curve summary).
    """
    where = "SummaryWriter.add_pr_curve"
    labels = to_numpy(labels, where).reshape(-1)
    predictions = to_numpy(predictions, where).astype(np.float64).reshape(-1)
    if labels.shape != predictions.shape:
        raise FlambeauError(
            f"[{where}] labels and predictions must have as many elements, got {labels.size} and {predictions.size}"
        )
    if not ((predictions >= 0) & (predictions <= 1)).all():  # NaN fails too
        raise FlambeauError(
            f"[{where}] predictions must lie in [0, 1], got values in [{predictions.min()}, {predictions.max()}]"
        )
    if not isinstance(num_thresholds, int) or num_thresholds < 2:
        raise FlambeauError(f"[{where}] num_thresholds must be an int of at least 2, got {num_thresholds!r}")
    num_thresholds = min(num_thresholds, 127)  # PyTorch's cap
    weight = 1.0 if weights is None else to_numpy(weights, where).astype(np.float64).reshape(-1)
    positive = labels.astype(bool).astype(np.float64) * weight
    negative = (1.0 - labels.astype(bool).astype(np.float64)) * weight
    buckets = np.floor(predictions * (num_thresholds - 1)).astype(np.int64)
    tp = np.bincount(buckets, weights=np.broadcast_to(positive, buckets.shape), minlength=num_thresholds)
    fp = np.bincount(buckets, weights=np.broadcast_to(negative, buckets.shape), minlength=num_thresholds)
    tp, fp = np.cumsum(tp[::-1])[::-1], np.cumsum(fp[::-1])[::-1]  # counts at or above each threshold
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    data = np.stack([tp, fp, tn, fn, precision, recall])
    content = _proto.varint_field(2, num_thresholds)  # PrCurvePluginData(version=0, num_thresholds)
    metadata = _proto.plugin_metadata("pr_curves", content)
    return _proto.summary(_proto.summary_value(tag, tensor=_proto.float_tensor(data), metadata=metadata))


_HPARAMS_PLUGIN = "hparams"


def _hparams_summary(tag: str, content: bytes) -> bytes:
    return _proto.summary(_proto.summary_value(tag, metadata=_proto.plugin_metadata(_HPARAMS_PLUGIN, content)))


def hparams(
    hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any], domains: Mapping[str, Sequence[Any]] | None
) -> tuple[bytes, bytes, bytes]:
    """The hparams plugin's experiment, session-start and session-end summaries."""
    where = "SummaryWriter.add_hparams"
    for kind, names in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict)):
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"[{where}] the keys of {kind} must be str, got {type(name).__name__} {name!r}")
    domains = {} if domains is None else domains
    if not isinstance(domains, Mapping):
        raise TypeError(f"[{where}] hparam_domain_discrete must be a dict, got {type(domains).__name__}")
    for name, values in domains.items():
        if name not in hparam_dict:
            raise TypeError(f"[{where}] hparam_domain_discrete names '{name}', which is not in hparam_dict")
        if not isinstance(values, list) or not all(isinstance(v, type(hparam_dict[name])) for v in values):
            raise TypeError(
                f"[{where}] hparam_domain_discrete['{name}'] must be a list of values of the same type as "
                f"hparam_dict['{name}'] ({type(hparam_dict[name]).__name__})"
            )
    infos, values = [], {}
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, bool):
            data_type = _proto.DATA_TYPE_BOOL
        elif isinstance(value, str):
            data_type = _proto.DATA_TYPE_STRING
        elif isinstance(value, (int, float, np.number)) or hasattr(value, "detach"):
            data_type = _proto.DATA_TYPE_FLOAT64
            value = float(to_numpy(value, where).reshape(-1)[0])
        else:
            raise TypeError(
                f"[{where}] hparam_dict['{name}'] must be a bool, int, float, str, tensor or None, "
                f"got {type(value).__name__}"
            )
        values[name] = value
        infos.append(_proto.hparam_info(name, data_type, domains.get(name)))
    experiment = _proto.hparams_plugin_data(experiment=_proto.experiment(infos, list(metric_dict)))
    start = _proto.hparams_plugin_data(start=_proto.session_start_info(values))
    end = _proto.hparams_plugin_data(end=_proto.session_end_info(_proto.STATUS_SUCCESS))
    return (
        _hparams_summary("_hparams_/experiment", experiment),
        _hparams_summary("_hparams_/session_start_info", start),
        _hparams_summary("_hparams_/session_end_info", end),
    )
