"""``save``/``load`` of a state dict in the safetensors format.

Note [safetensors]
A safetensors file is: 8 bytes (little-endian uint64) giving the header
length N; N bytes of UTF-8 JSON mapping each tensor name to
``{"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}`` (plus an
optional ``"__metadata__"`` of string -> string); then the raw little-endian
bytes of all tensors, C-contiguous, offsets relative to the end of the
header. The data must be covered exactly: no gaps, no overlaps. We write and
read it here with the standard library only, so a file written by the
``safetensors`` package (or by PyTorch users) loads here and vice versa, and
loading never executes code (unlike pickle).
"""

from __future__ import annotations

import json
import os
import struct
import sys
from collections import OrderedDict
from collections.abc import Mapping
from typing import BinaryIO

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = ["save", "load"]

# safetensors dtype string <-> flambeau dtype name
_TO_ST = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "float16": "F16",
    # BF16 is in the format too; it joins once core's bfloat16 kernels (copy, buffer export) land.
    "float32": "F32",
    "float64": "F64",
}
_FROM_ST = {v: k for k, v in _TO_ST.items()}
_HEADER_LIMIT = 100_000_000  # the safetensors library's own limit

if sys.byteorder != "little":  # pragma: no cover - every platform we build for is little-endian
    raise ImportError("flambeau_nn.save/load assume a little-endian machine")


def _dtype_name(dtype: object) -> str:
    return str(dtype).rpartition(".")[2]


def save(state_dict: Mapping[str, Tensor], path: str | os.PathLike, metadata: Mapping[str, str] | None = None) -> None:
    r"""Writes ``state_dict`` (name -> Tensor) to ``path`` in the safetensors format.

    Args:
        state_dict: e.g. ``model.state_dict()``; every value must be a Tensor.
        path: the file to write (replaced atomically: a crash never leaves half a file).
        metadata: optional string -> string pairs stored in the header.

    Example:
        >>> import tempfile, os
        >>> import flambeau_nn as nn
        >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
        >>> nn.save(nn.Linear(2, 1).state_dict(), path)
        >>> sorted(nn.load(path))
        ['bias', 'weight']
    """
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"[save] expected a dict of name -> Tensor, got {type(state_dict).__name__}")
    header: dict[str, object] = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("[save] metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    chunks: list[bytes] = []
    offset = 0
    for name, t in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"[save] state dict keys must be str, got {type(name).__name__} {name!r}")
        if name == "__metadata__":
            raise FlambeauError("[save] '__metadata__' is reserved by the safetensors format and cannot name a tensor")
        if not isinstance(t, Tensor):
            raise TypeError(
                f"[save] state dict entry {name!r} is a {type(t).__name__}, not a Tensor; "
                "safetensors files hold tensors only"
            )
        dname = _dtype_name(t.dtype)
        if dname not in _TO_ST:
            raise TypeError(f"[save] tensor {name!r} has dtype {t.dtype}, which flambeau_nn.save cannot store yet")
        if not t.is_cpu:
            raise FlambeauError(f"[save] tensor {name!r} is on {t.device}; move it to cpu first")
        data = memoryview(t.detach()).tobytes() if t.numel() > 0 else b""  # C order, any strides
        header[name] = {"dtype": _TO_ST[dname], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # pad so the data starts 8-byte aligned, as the reference writer does
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _fail(path: str, why: str) -> FlambeauError:
    return FlambeauError(f"[load] {path} is not a valid safetensors file: {why}")


def load(path: str | os.PathLike) -> OrderedDict[str, Tensor]:
    r"""Reads a safetensors file into an ordered dict of name -> Tensor (in file order).

    Raises ``FlambeauError`` (a ``ValueError``) naming the file and the problem if
    it is truncated, corrupt or not a safetensors file (e.g. a pickle); never
    runs code from it.

    Example:
        >>> import tempfile, os
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> path = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> nn.save({"x": fc.tensor([1.0, 2.0])}, path)
        >>> nn.load(path)["x"].tolist()
        [1.0, 2.0]
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        return _read(f, path, file_size)


def _read(f: BinaryIO, path: str, file_size: int) -> OrderedDict[str, Tensor]:
    if file_size < 8:
        raise _fail(path, f"the file has {file_size} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", f.read(8))
    if n > _HEADER_LIMIT or 8 + n > file_size:
        raise _fail(
            path,
            f"the header length {n} runs past the end of the file ({file_size} bytes); truncated or not safetensors",
        )
    try:
        header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _fail(path, f"the header is not valid UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise _fail(path, f"the header must be a JSON object, got {type(header).__name__}")
    data_size = file_size - 8 - n
    header.pop("__metadata__", None)
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
            raise _fail(path, f"entry {name!r} must have 'dtype', 'shape' and 'data_offsets'")
        st_dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if st_dtype not in _FROM_ST:
            raise _fail(
                path, f"entry {name!r} has unknown or unsupported dtype {st_dtype!r} (known: {sorted(_FROM_ST)})"
            )
        if not isinstance(shape, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
        ):
            raise _fail(path, f"entry {name!r} has an invalid shape {shape!r}")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]
        ):
            raise _fail(path, f"entry {name!r} has invalid data_offsets {offsets!r}")
        dtype = getattr(fc, _FROM_ST[st_dtype])
        numel = 1
        for s in shape:
            numel *= s
        begin, end = offsets
        if end > data_size:
            raise _fail(
                path, f"entry {name!r} has data_offsets [{begin}, {end}] past the end of the data ({data_size} bytes)"
            )
        if end - begin != numel * dtype.itemsize:
            raise _fail(
                path,
                f"entry {name!r} of dtype {st_dtype} and shape {shape} needs {numel * dtype.itemsize} bytes, "
                f"but data_offsets [{begin}, {end}] span {end - begin}",
            )
        entries.append((begin, end, name, dtype, shape))
    # The data must be covered exactly, as the format requires.
    pos = 0
    for begin, end, name, _, _ in sorted(entries, key=lambda e: (e[0], e[1])):
        if begin != pos:
            raise _fail(path, f"entry {name!r} starts at byte {begin}, expected {pos} (gap or overlap in the data)")
        pos = end
    if pos != data_size:
        raise _fail(path, f"the tensors cover {pos} bytes of data but the file holds {data_size}")
    out: OrderedDict[str, Tensor] = OrderedDict()
    for begin, end, name, dtype, shape in entries:
        t = fc.empty(tuple(shape), dtype=dtype)
        if end > begin:
            # Read straight into the new tensor's memory (buffer protocol): no intermediate copy.
            f.seek(8 + n + begin)
            if f.readinto(memoryview(t).cast("B")) != end - begin:
                raise _fail(path, f"the file ended while reading entry {name!r}")
        out[name] = t
    return out
