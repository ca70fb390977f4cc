"""The protocol-buffer messages of TensorBoard's event files, encoded by hand.

Only what a SummaryWriter writes: ``Event``, ``Summary`` (scalar, image,
histogram, tensor values with plugin metadata), ``GraphDef`` and the hparams
plugin's messages. Each builder returns the message's wire bytes; a nested
message is a length-delimited field holding those bytes. Field numbers follow
TensorBoard's ``.proto`` files (``tensorboard/compat/proto`` and
``tensorboard/plugins/hparams``). Encoding them here keeps the ``tensorboard``
package (grpc, protobuf, werkzeug ...) out of a training program's
dependencies: it is needed only to *view* the files.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5

# TensorProto.dtype values (tensorflow/core/framework/types.proto).
DT_FLOAT, DT_DOUBLE, DT_STRING = 1, 2, 7
# hparams DataType and Status values (tensorboard/plugins/hparams/api.proto).
DATA_TYPE_STRING, DATA_TYPE_BOOL, DATA_TYPE_FLOAT64 = 1, 2, 3
STATUS_SUCCESS = 1
SESSION_LOG_START = 1


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten-byte two's complement varints
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def varint_field(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint(int(value))


def double_field(field: int, value: float) -> bytes:
    return _key(field, _FIXED64) + struct.pack("<d", value)


def float_field(field: int, value: float) -> bytes:
    return _key(field, _FIXED32) + struct.pack("<f", value)


def bytes_field(field: int, value: bytes | str) -> bytes:
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:  # bytes(5) would be five zero bytes, not an error
        raise TypeError(f"[SummaryWriter] expected a str or bytes field, got {type(value).__name__} {value!r:.40}")
    return _key(field, _LEN) + _varint(len(data)) + data


def packed_doubles(field: int, values: Iterable[float]) -> bytes:
    return bytes_field(field, np.asarray(list(values), dtype="<f8").tobytes())


def packed_floats(field: int, values: np.ndarray) -> bytes:
    return bytes_field(field, np.ascontiguousarray(values, dtype="<f4").tobytes())


def event(
    wall_time: float,
    step: int | None = None,
    *,
    file_version: str | None = None,
    graph_def: bytes | None = None,
    summary: bytes | None = None,
    session_log_status: int | None = None,
) -> bytes:
    """tensorboard.Event (event.proto)."""
    out = double_field(1, wall_time)
    if step is not None:
        out += varint_field(2, step)
    if file_version is not None:
        out += bytes_field(3, file_version)
    if graph_def is not None:
        out += bytes_field(4, graph_def)
    if summary is not None:
        out += bytes_field(5, summary)
    if session_log_status is not None:
        out += bytes_field(7, varint_field(1, session_log_status))
    return out


def summary(*values: bytes) -> bytes:
    """tensorboard.Summary: its repeated ``value`` field."""
    return b"".join(bytes_field(1, v) for v in values)


def summary_value(
    tag: str,
    *,
    simple_value: float | None = None,
    image: bytes | None = None,
    histo: bytes | None = None,
    tensor: bytes | None = None,
    metadata: bytes | None = None,
) -> bytes:
    """tensorboard.Summary.Value."""
    out = bytes_field(1, tag)
    if simple_value is not None:
        out += float_field(2, simple_value)
    if image is not None:
        out += bytes_field(4, image)
    if histo is not None:
        out += bytes_field(5, histo)
    if tensor is not None:
        out += bytes_field(8, tensor)
    if metadata is not None:
        out += bytes_field(9, metadata)
    return out


def plugin_metadata(plugin_name: str, content: bytes = b"") -> bytes:
    """tensorboard.SummaryMetadata holding one PluginData."""
    data = bytes_field(1, plugin_name)
    if content:
        data += bytes_field(2, content)
    return bytes_field(1, data)


def image(height: int, width: int, colorspace: int, encoded: bytes) -> bytes:
    """tensorboard.Summary.Image."""
    return varint_field(1, height) + varint_field(2, width) + varint_field(3, colorspace) + bytes_field(4, encoded)


def histogram(
    vmin: float,
    vmax: float,
    num: float,
    vsum: float,
    sum_squares: float,
    limits: Sequence[float],
    counts: Sequence[float],
) -> bytes:
    """tensorboard.HistogramProto: bucket i holds the values in (limits[i-1], limits[i]]."""
    return (
        double_field(1, vmin)
        + double_field(2, vmax)
        + double_field(3, num)
        + double_field(4, vsum)
        + double_field(5, sum_squares)
        + packed_doubles(6, limits)
        + packed_doubles(7, counts)
    )


def tensor_shape(dims: Sequence[int]) -> bytes:
    """tensorboard.TensorShapeProto."""
    return b"".join(bytes_field(2, varint_field(1, d)) for d in dims)


def scalar_tensor(value: float, double_precision: bool) -> bytes:
    """A rank-0 tensorboard.TensorProto of DT_FLOAT or DT_DOUBLE."""
    if double_precision:
        return varint_field(1, DT_DOUBLE) + bytes_field(6, struct.pack("<d", value))
    return varint_field(1, DT_FLOAT) + bytes_field(5, struct.pack("<f", value))


def float_tensor(array: np.ndarray) -> bytes:
    """A tensorboard.TensorProto of DT_FLOAT holding ``array`` (any shape) in ``float_val``."""
    return varint_field(1, DT_FLOAT) + bytes_field(2, tensor_shape(array.shape)) + packed_floats(5, array.reshape(-1))


def string_tensor(strings: Sequence[bytes]) -> bytes:
    """A rank-1 tensorboard.TensorProto of DT_STRING."""
    out = varint_field(1, DT_STRING) + bytes_field(2, tensor_shape([len(strings)]))
    return out + b"".join(bytes_field(8, s) for s in strings)


# --- GraphDef (graph.proto, node_def.proto, attr_value.proto) -------------------------------------


def attr_string(value: str) -> bytes:
    return bytes_field(2, value)


def attr_shapes(shapes: Sequence[Sequence[int]]) -> bytes:
    """An AttrValue holding a list of shapes (what TensorBoard reads from ``_output_shapes``)."""
    return bytes_field(1, b"".join(bytes_field(7, tensor_shape(s)) for s in shapes))


def node_def(name: str, op: str, inputs: Sequence[str] = (), attrs: Mapping[str, bytes] | None = None) -> bytes:
    """tensorboard.NodeDef; ``attrs`` maps a name to AttrValue bytes."""
    out = bytes_field(1, name) + bytes_field(2, op)
    out += b"".join(bytes_field(3, i) for i in inputs)
    for key, value in (attrs or {}).items():
        out += bytes_field(5, bytes_field(1, key) + bytes_field(2, value))
    return out


def graph_def(nodes: Sequence[bytes], producer: int = 22) -> bytes:
    """tensorboard.GraphDef with its VersionDef."""
    return b"".join(bytes_field(1, n) for n in nodes) + bytes_field(4, varint_field(1, producer))


# --- hparams plugin (api.proto, plugin_data.proto, google.protobuf.Value) ---------------------------


def struct_value(value: bool | float | str) -> bytes:
    """google.protobuf.Value of a bool, number or string."""
    if isinstance(value, bool):
        return varint_field(4, value)
    if isinstance(value, str):
        return bytes_field(3, value)
    return double_field(2, float(value))


def hparam_info(name: str, data_type: int, domain: Sequence[bool | float | str] | None) -> bytes:
    out = bytes_field(1, name) + varint_field(4, data_type)
    if domain is not None:
        out += bytes_field(5, b"".join(bytes_field(1, struct_value(v)) for v in domain))
    return out


def experiment(hparam_infos: Sequence[bytes], metric_tags: Sequence[str]) -> bytes:
    out = b"".join(bytes_field(4, h) for h in hparam_infos)
    return out + b"".join(bytes_field(5, bytes_field(1, bytes_field(2, tag))) for tag in metric_tags)


def session_start_info(hparams: Mapping[str, bool | float | str]) -> bytes:
    return b"".join(bytes_field(1, bytes_field(1, k) + bytes_field(2, struct_value(v))) for k, v in hparams.items())


def session_end_info(status: int) -> bytes:
    return varint_field(1, status)


def hparams_plugin_data(
    *, experiment: bytes | None = None, start: bytes | None = None, end: bytes | None = None
) -> bytes:
    """HParamsPluginData (version 0) holding one of its three messages."""
    if experiment is not None:
        return bytes_field(2, experiment)
    if start is not None:
        return bytes_field(3, start)
    return bytes_field(4, end or b"")
