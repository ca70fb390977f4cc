"""``save``/``load`` in PyTorch's checkpoint format (``torch.save``/``torch.load``).

Files written here load in ``torch.load`` and files written by torch 2.x load
here: the zip format (Note [PyTorch zip archive]) with a protocol-2 pickle
naming torch's rebuild functions (Note [Torch names in checkpoints]), and the
legacy pre-zip format (``_use_new_zipfile_serialization=False``) for reading.
``load(weights_only=True)``, the default as in torch 2.6+, never runs code
from the file (Note [weights_only unpickling]). Safetensors files are
detected by their header and read by the registered safetensors reader
(``flambeau_nn.load`` in the ``flambeau`` meta-package).

Note [Storages in checkpoints]
flambeau has no Python storage objects; a storage is what tensors share, and
``Tensor._storage_id`` tells which tensors share one. Saving writes each
storage once, whole (as torch does: a small view of a big tensor saves the
big tensor's storage), and every tensor as (storage key, offset, size,
stride). Loading makes one 1-D tensor over each storage's elements and every
tensor a view of it (``as_strided``), so tensors that shared a storage when
saved share one again. ``map_location`` moves each such 1-D tensor, so the
views follow it to the device; a callable ``map_location`` receives it in
place of torch's storage object (``lambda storage, loc: storage`` and
``storage.cuda()`` work unchanged).
"""

from __future__ import annotations

import io
import mmap as _mmap
import os
import pickle
import pickletools
import struct
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import IO, Any, BinaryIO, Optional, Union

import flambeau_core as fc
import numpy as np
from flambeau_core import FlambeauError, Tensor

from flambeau_interop import _torch_names
from flambeau_interop._torch_names import TORCH_MODULE_OF, TORCH_NAMES, LoadedStorage, StorageType
from flambeau_interop._weights_only_unpickler import (
    Unpickler as _WeightsOnlyUnpickler,
)
from flambeau_interop._weights_only_unpickler import (
    UnpicklingError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
    unsafe_globals,
)
from flambeau_interop._zip_archive import ArchiveReader, ArchiveWriter, is_zip

__all__ = [
    "UnpicklingError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "get_unsafe_globals_in_checkpoint",
    "load",
    "register_safetensors",
    "safe_globals",
    "save",
]

FileLike = Union[str, os.PathLike, IO[bytes]]  # noqa: UP007  (a runtime alias: Union keeps it valid on 3.10)
MapLocation = Union[None, str, bytes, "fc.device", dict, Callable[[Tensor, str], Optional[Tensor]]]  # noqa: UP007, UP045

DEFAULT_PROTOCOL = 2
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_LEGACY_MAGIC = b"\x8a\x0a" + MAGIC_NUMBER.to_bytes(10, "little")

if sys.byteorder != "little":  # pragma: no cover - every platform we build for is little-endian
    raise ImportError("flambeau_interop.serialization assumes a little-endian machine")

_safetensors: dict[str, Callable[..., Any]] = {}


def register_safetensors(save_fn: Callable[..., None], load_fn: Callable[[str], Mapping[str, Tensor]]) -> None:
    """Lets ``save``/``load`` handle safetensors files through ``save_fn(state_dict, path)``/``load_fn(path)``.

    The ``flambeau`` meta-package registers ``flambeau_nn.save``/``load``; with
    flambeau-interop alone, a safetensors file raises an error naming them.

    Example:
        >>> import flambeau_nn
        >>> register_safetensors(flambeau_nn.save, flambeau_nn.load)
    """
    if not callable(save_fn) or not callable(load_fn):
        raise TypeError("[register_safetensors] expected two callables, save_fn(state_dict, path) and load_fn(path)")
    _safetensors["save"], _safetensors["load"] = save_fn, load_fn


# ---------------------------------------------------------------------------------------------- saving


class _StorageRef:
    """A storage in the pickle being written; pickled as its persistent id."""

    __slots__ = ("pid",)

    def __init__(self, pid: tuple) -> None:
        self.pid = pid


class _StorageTable:
    """Assigns each distinct storage a key, in order of first use (Note [Storages in checkpoints])."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[str, Tensor, _StorageRef]] = {}

    def ref(self, t: Tensor) -> _StorageRef:
        sid = t._storage_id
        entry = self.by_id.get(sid)
        if entry is not None:
            key, first, ref = entry
            if first.dtype != t.dtype:
                raise TypeError(
                    f"[save] two tensors view the same storage as {first.dtype} and {t.dtype}; "
                    "a checkpoint stores one dtype per storage (save a .clone() of one of them)"
                )
            return ref
        name = str(t.dtype).rpartition(".")[2]
        untyped = name in _torch_names.UNTYPED_DTYPES
        storage_type = _torch_names.UntypedStorage if untyped else _torch_names.STORAGE_TYPE_OF_DTYPE.get(name)
        if storage_type is None:
            raise TypeError(f"[save] tensors of dtype {t.dtype} cannot be saved in PyTorch's format")
        if t.device.type == "meta":
            raise FlambeauError("[save] a meta tensor has no data to save; materialize it first")
        key = str(len(self.by_id))
        location = "cpu" if t.is_cpu else str(t.device)
        numel = t._storage_nbytes // (1 if untyped else t.element_size())
        ref = _StorageRef(("storage", storage_type, key, location, numel))
        self.by_id[sid] = (key, Tensor(t), ref)  # the Tensor keeps the storage alive until written
        return ref

    def records(self):
        for key, t, _ in self.by_id.values():
            yield f"data/{key}", _storage_bytes(t, t._storage_nbytes // t.element_size())


def _storage_bytes(t: Tensor, numel: int) -> memoryview:
    """All of ``t``'s storage as bytes, without a copy for cpu tensors."""
    if numel == 0:
        return memoryview(b"")
    whole = t.as_strided((numel,), (1,), 0)
    if not whole.is_cpu:
        whole = whole.to("cpu")
    if whole.dtype == fc.bfloat16:  # no buffer export for bfloat16: copy the bits into memory we can export
        raw = bytearray(numel * 2)
        fc.frombuffer(raw, dtype=fc.bfloat16).copy_(whole)
        return memoryview(raw)
    return memoryview(whole).cast("B")


def _parameter_type() -> type | None:
    # No import: if flambeau_nn was never imported, no Parameter exists to be saved.
    nn = sys.modules.get("flambeau_nn")
    return getattr(nn, "Parameter", None) if nn is not None else None


class _CheckpointPickling:
    """Pickles tensors as torch does (Note [Torch names in checkpoints]); mixed into a Pickler class."""

    def __init__(self, file: BinaryIO, protocol: int, table: _StorageTable) -> None:
        super().__init__(file, protocol=protocol)  # type: ignore[call-arg]
        self._table = table
        self._parameter = _parameter_type()

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, Tensor):
            return NotImplemented
        if type(obj) is Tensor:
            args = (
                self._table.ref(obj),
                obj.storage_offset(),
                tuple(obj.shape),
                tuple(obj.stride()),
                bool(obj.requires_grad),
                OrderedDict(),
            )
            if str(obj.dtype).rpartition(".")[2] in _torch_names.UNTYPED_DTYPES:  # as torch: bytes + dtype
                return (_torch_names._rebuild_tensor_v3, (*args, obj.dtype))
            return (_torch_names._rebuild_tensor_v2, args)
        if self._parameter is not None and type(obj) is self._parameter:
            data = Tensor(obj)  # the same storage, without the Parameter type or grad
            state = obj.__dict__
            if state:
                args = (data, bool(obj.requires_grad), OrderedDict(), state)
                return (_torch_names._rebuild_parameter_with_state, args)
            return (_torch_names._rebuild_parameter, (data, bool(obj.requires_grad), OrderedDict()))
        raise TypeError(
            f"[save] cannot save a {type(obj).__name__} (a Tensor subclass other than Parameter); "
            "save a plain tensor (Tensor(x)) instead"
        )

    def persistent_id(self, obj: Any) -> Any:
        return obj.pid if type(obj) is _StorageRef else None

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        # `t.dtype` is a new object equal to, not identical with, flambeau_core._C.float32,
        # and pickle writes a GLOBAL only for the identical object: save the canonical one.
        if type(obj) is fc.dtype:
            obj = getattr(fc._C, str(obj).rpartition(".")[2])
        elif type(obj) is not dict and isinstance(obj, dict):
            # A dict subclass that pickles as a plain dict (flambeau_nn's optimizer state) is
            # written as one: GLOBAL builtins.dict is not on torch's weights_only allowlist.
            reduced = obj.__reduce_ex__(self.proto)
            if isinstance(reduced, tuple) and reduced[0] is dict and len(reduced[1]) == 1:
                obj = reduced[1][0]
        super().save(obj, save_persistent_id)  # type: ignore[misc]


def _torch_global(module: str, name: str) -> str | None:
    """The torch module a GLOBAL of ours is written under (Note [Torch names in checkpoints])."""
    if module == _torch_names.MODULE:
        return TORCH_MODULE_OF.get(name)
    if module == "flambeau_core._C" and (name == "device" or f"torch.{name}" in TORCH_NAMES):
        return "torch"
    if module == fc.Size.__module__ and name == "Size":  # torch.Size, which torch's weights_only load allows
        return "torch"
    return None


def _with_torch_names(data: bytes) -> bytes:
    out, last = [], 0
    for op, arg, pos in pickletools.genops(data):
        if op.name != "GLOBAL":
            continue
        module, _, name = arg.partition(" ")
        torch_module = _torch_global(module, name)
        if torch_module is None:
            continue
        end = data.index(b"\n", data.index(b"\n", pos) + 1) + 1
        out += [data[last:pos], b"c", torch_module.encode(), b"\n", name.encode(), b"\n"]
        last = end
    out.append(data[last:])
    return b"".join(out)


def _archive_name(f: FileLike) -> str:
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        if stem and "/" not in stem and "\\" not in stem:
            return stem
    return "archive"


def save(
    obj: object,
    f: FileLike,
    pickle_module: Any = pickle,
    pickle_protocol: int = DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    r"""Saves ``obj`` to ``f`` in PyTorch's checkpoint format (``torch.save``).

    The file is a zip archive that ``torch.load`` reads (and ``load`` here):
    tensors, parameters, state dicts, optimizer state dicts, nested
    lists/tuples/dicts, numbers, strings, NumPy arrays and (for
    ``load(weights_only=False)``) any picklable object, such as a whole module.
    Tensors that share a storage share it again after loading.

    A path ending in ``.safetensors`` is written as safetensors instead (a
    dict of name -> Tensor only), which is what ``torch.load`` expects of that
    suffix; this needs the safetensors writer registered by the ``flambeau``
    meta-package (``register_safetensors``).

    Args:
        obj: what to save.
        f: a path (``str`` or ``os.PathLike``; replaced atomically) or a binary file object.
        pickle_module: the module whose ``Pickler`` writes the object graph (``pickle``).
        pickle_protocol: the pickle protocol (2, as torch; torch's ``weights_only`` reader needs 2).

    Example:
        >>> import io, flambeau_core as fc
        >>> buf = io.BytesIO()
        >>> x = fc.arange(6.0)
        >>> save({"x": x, "view": x[2:]}, buf)
        >>> _ = buf.seek(0)
        >>> out = load(buf)
        >>> out["view"].tolist(), out["view"]._storage_id == out["x"]._storage_id
        ([2.0, 3.0, 4.0, 5.0], True)
    """
    if not _use_new_zipfile_serialization:
        raise FlambeauError(
            "[save] flambeau writes only the zip format; the legacy format (_use_new_zipfile_serialization=False) "
            "can be loaded but not written"
        )
    if not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):
        raise TypeError(f"[save] f must be a path or a binary file object with write(), got {type(f).__name__}")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise FlambeauError(
            f"[save] pickle_protocol must be an int from 2 to {pickle.HIGHEST_PROTOCOL}, got {pickle_protocol!r}"
        )
    try:
        _save(obj, f, pickle_module, pickle_protocol, _disable_byteorder_record)
    except (FlambeauError, TypeError) as e:
        name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else f"<{type(f).__name__}>"
        msg = str(e)
        if msg.startswith("[save] ") and not msg.startswith(f"[save] {name}"):
            raise type(e)(f"[save] {name}: {msg[len('[save] ') :]}") from None
        raise


def _save(obj: object, f: FileLike, pickle_module: Any, pickle_protocol: int, no_byteorder: bool) -> None:
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors"):
        _save_safetensors(obj, os.fspath(f))
        return
    table = _StorageTable()
    buf = io.BytesIO()
    # pickle's Python pickler: its save() is a method we extend (the C one's is not).
    base = pickle._Pickler if pickle_module is pickle else pickle_module.Pickler
    pickler_cls = type("CheckpointPickler", (_CheckpointPickling, base), {})
    try:
        pickler_cls(buf, pickle_protocol, table).dump(obj)
    except RecursionError:
        raise FlambeauError("[save] the object nests too deeply to pickle (Python's recursion limit)") from None
    data = buf.getvalue()
    if pickle_protocol == 2:  # GLOBAL opcodes; higher protocols name globals with STACK_GLOBAL (flambeau only)
        data = _with_torch_names(data)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as raw:
                _write_archive(raw, _archive_name(f), data, table, no_byteorder)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    else:
        _write_archive(f, _archive_name(f), data, table, no_byteorder)


def _write_archive(raw: BinaryIO, archive: str, data: bytes, table: _StorageTable, no_byteorder: bool) -> None:
    writer = ArchiveWriter(raw, archive)
    writer.write("data.pkl", data)
    writer.write(".format_version", b"1")
    writer.write(".storage_alignment", b"64")
    if not no_byteorder:
        writer.write("byteorder", sys.byteorder.encode())
    for name, payload in table.records():
        writer.write(name, payload)
    writer.write("version", b"3\n")
    writer.close()


def _save_safetensors(obj: object, path: str) -> None:
    if "save" not in _safetensors:
        raise FlambeauError(
            "[save] writing a .safetensors file needs a safetensors writer (flambeau_nn.save; import "
            "flambeau, or call flambeau_interop.serialization.register_safetensors)"
        )
    if not isinstance(obj, Mapping):
        raise TypeError(
            f"[save] a .safetensors file holds a dict of name -> Tensor, got {type(obj).__name__}; "
            "use another suffix (.pt) for PyTorch's format"
        )
    _safetensors["save"](obj, path)


# ---------------------------------------------------------------------------------------------- loading


def _cuda_available() -> bool:
    cuda = getattr(fc, "cuda", None)
    return bool(cuda is not None and cuda.is_available())


def _to_location(base: Tensor, location: str, record: str) -> Tensor:
    if location == "cpu":
        return base
    if location.startswith("cuda") and not _cuda_available():
        raise FlambeauError(
            f"[load] storage {record} is to be restored on {location!r}, but CUDA is not available (no flambeau-cuda "
            "or no GPU); pass map_location='cpu' (or fb.device('cpu')) to load it on the CPU"
        )
    try:
        return base.to(fc.device(location))
    except (FlambeauError, TypeError, ValueError, RuntimeError) as e:
        raise FlambeauError(f"[load] cannot restore storage {record} to location {location!r}: {e}") from None


def _location_str(loc: object, what: str) -> str:
    if isinstance(loc, bytes):
        loc = loc.decode("ascii", "replace")
    if isinstance(loc, fc.device):
        return str(loc)
    if not isinstance(loc, str):
        raise TypeError(f"[load] {what} must be a str or a device, got {type(loc).__name__}")
    return loc


def _restorer(map_location: MapLocation) -> Callable[[Tensor, str, str], Tensor]:
    if map_location is None:
        return _to_location
    if isinstance(map_location, (str, bytes, fc.device)):
        target = _location_str(map_location, "map_location")
        return lambda base, loc, record: _to_location(base, target, record)
    if isinstance(map_location, dict):
        table = {k: _location_str(v, f"map_location[{k!r}]") for k, v in map_location.items()}
        return lambda base, loc, record: _to_location(base, table.get(loc, loc), record)
    if callable(map_location):

        def restore(base: Tensor, loc: str, record: str) -> Tensor:
            out = map_location(base, loc)
            if out is None:
                return _to_location(base, loc, record)
            if not isinstance(out, Tensor) or tuple(out.shape) != tuple(base.shape) or out.dtype != base.dtype:
                raise TypeError(
                    f"[load] map_location returned {type(out).__name__} for storage {record}; expected None or the "
                    f"storage (a 1-D {base.dtype} tensor of {base.numel()} elements), possibly moved"
                )
            return out

        return restore
    raise TypeError(
        f"[load] map_location must be None, a str, a device, a dict or a callable, got {type(map_location).__name__}"
    )


def _byteswap(raw: memoryview, dtype: object) -> None:
    unit = dtype.itemsize // 2 if dtype.is_complex else dtype.itemsize
    if unit > 1 and raw.nbytes:
        np.frombuffer(raw, dtype=f"u{unit}").byteswap(inplace=True)


def _empty_storage(dtype: object, numel: int) -> tuple[Tensor, memoryview]:
    """A new 1-D tensor of ``numel`` elements and a writable byte view of its memory."""
    if dtype == fc.bfloat16:  # bfloat16 exports no buffer: fill int16 memory, view it as bfloat16
        bits = fc.empty((numel,), dtype=fc.int16)
        raw = memoryview(bits).cast("B")
        return (fc.frombuffer(raw, dtype=fc.bfloat16) if numel else fc.empty((0,), dtype=fc.bfloat16)), raw
    t = fc.empty((numel,), dtype=dtype)
    return t, memoryview(t).cast("B")


def _check_pid(pid: object, length: int) -> tuple[type, str, str, int]:
    if type(pid) is not tuple or len(pid) != length:
        raise FlambeauError(f"[load] a storage persistent id must be a tuple of {length} items, got {pid!r:.80}")
    typename, storage_type, key, location, numel = pid[:5]
    if typename not in ("storage", b"storage"):
        raise FlambeauError(f"[load] unknown persistent id type {typename!r:.40}, expected 'storage'")
    if not (isinstance(storage_type, type) and issubclass(storage_type, StorageType)):
        raise FlambeauError(f"[load] a storage persistent id names {storage_type!r:.60}, not a storage type")
    if isinstance(key, bytes):
        key = key.decode("ascii", "replace")
    if isinstance(location, bytes):
        location = location.decode("ascii", "replace")
    if not isinstance(key, str) or not isinstance(location, str):
        raise FlambeauError(f"[load] a storage's key and location must be str, got {key!r:.40}, {location!r:.40}")
    if type(numel) is not int or numel < 0:
        raise FlambeauError(f"[load] storage {key} declares {numel!r:.40} elements; expected an int >= 0")
    return storage_type, key, location, numel


class _ZipLoader:
    def __init__(self, reader: ArchiveReader, restore: Callable, mapped: _mmap.mmap | None) -> None:
        self.reader = reader
        self.restore = restore
        self.mapped = mapped
        self.storages: dict[str, LoadedStorage] = {}
        order = b"little"
        if reader.has("byteorder"):
            order = reader.read("byteorder")
            if order not in (b"little", b"big"):
                raise reader.error(f"the byteorder record says {order[:20]!r}; expected 'little' or 'big'")
        self.swap = order != sys.byteorder.encode()

    def persistent_load(self, pid: object) -> LoadedStorage:
        storage_type, key, location, numel = _check_pid(pid, 5)
        dtype = storage_type.dtype
        loaded = self.storages.get(key)
        if loaded is not None:
            if loaded.base.dtype != dtype:
                raise self.reader.error(f"storage data/{key} is used both as {loaded.base.dtype} and as {dtype}")
            return loaded
        record = f"data/{key}"
        nbytes = numel * dtype.itemsize
        if not self.reader.has(record):
            missing = self.reader.prefix + record
            raise self.reader.error(f"the pickle refers to storage record {missing}, which the archive lacks")
        size = self.reader.size(record)
        if size != nbytes:
            raise self.reader.error(
                f"storage {record} declares {numel} elements of {dtype} ({nbytes} bytes), but its record holds "
                f"{size} bytes"
            )
        base = self._mapped(record, dtype, numel) if self.mapped is not None else None
        if base is None:
            base, raw = _empty_storage(dtype, numel)
            self.reader.read_into(record, raw)
            if self.swap:
                _byteswap(raw, dtype)
        full_name = self.reader.prefix + record
        loaded = LoadedStorage(self.restore(base, location, full_name), full_name)
        self.storages[key] = loaded
        return loaded

    def _mapped(self, record: str, dtype: object, numel: int) -> Tensor | None:
        start = self.reader.data_offset(record)
        if start is None or numel == 0 or start % dtype.itemsize:
            return None  # compressed, empty or misaligned: read a copy
        if self.swap:
            _byteswap(memoryview(self.mapped)[start : start + numel * dtype.itemsize], dtype)
        return fc.frombuffer(self.mapped, dtype=dtype, count=numel, offset=start)


def _full_unpickler(pickle_module: Any, persistent_load: Callable) -> type:
    class FullUnpickler(pickle_module.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            found = TORCH_NAMES.get(f"{module}.{name}")
            if found is not None:
                return found
            return super().find_class(module, name)

        def persistent_load(self, pid: Any) -> Any:
            return persistent_load(pid)

    return FullUnpickler


def _unpickle(file: BinaryIO, persistent_load: Callable, weights_only: bool, pickle_module: Any, args: dict) -> Any:
    if weights_only:
        return _WeightsOnlyUnpickler(file, persistent_load).load()
    return _full_unpickler(pickle_module, persistent_load)(file, **args).load()


class _Source:
    """The file to load: an open binary file, its name for messages, its size."""

    def __init__(self, f: FileLike) -> None:
        self.path: str | None = None
        if isinstance(f, (str, os.PathLike)):
            self.path = os.fspath(f)
            if isinstance(self.path, bytes):
                self.path = os.fsdecode(self.path)
            self.name = self.path
            self.file: BinaryIO = open(self.path, "rb")  # noqa: SIM115  (closed by close())
            self._owned = True
        elif hasattr(f, "read"):
            self.name = str(getattr(f, "name", None) or f"<{type(f).__name__}>")
            self._owned = False
            seekable = getattr(f, "seekable", None)
            if seekable is not None and seekable():
                self.file = f
            else:  # a pipe or socket: read it whole, as the formats need to seek
                self.file = io.BytesIO(f.read())
        else:
            raise TypeError(f"[load] f must be a path or a binary file object with read(), got {type(f).__name__}")
        start = self.file.tell()
        self.file.seek(0, os.SEEK_END)
        self.size = self.file.tell() - start
        self.file.seek(start)
        self.head = self.file.read(32)
        self.file.seek(start)
        if start:  # a checkpoint inside a bigger stream (torch.load allows it): the formats need offset 0
            self.file = io.BytesIO(self.file.read())
            self.size = len(self.file.getbuffer())

    def close(self) -> None:
        if self._owned:
            self.file.close()


def _retitled(e: Exception, name: str) -> Exception:
    msg = str(e)
    if msg.startswith("[load]") and name not in msg:
        msg = f"[load] {name}: {msg[len('[load] ') :]}"
    elif not msg.startswith("[load]"):
        msg = f"[load] {name}: {msg}"
    if isinstance(e, UnpicklingError):
        return UnpicklingError(msg)
    return type(e)(msg) if isinstance(e, (FlambeauError, TypeError)) else FlambeauError(msg)


def load(
    f: FileLike,
    map_location: MapLocation = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    r"""Loads an object saved with ``save`` or ``torch.save`` (``torch.load``).

    Reads PyTorch's zip format (any torch 2.x file), the legacy pre-zip
    format, and safetensors files (detected by their header; returned as the
    dict ``flambeau_nn.load`` returns).

    With ``weights_only=True`` (the default, as in torch >= 2.6) the pickle in
    the file runs on a restricted machine that only rebuilds tensors,
    parameters, dtypes, devices, numbers, strings and containers, plus the
    globals marked safe with ``add_safe_globals``/``safe_globals``; anything
    else raises ``pickle.UnpicklingError`` naming the global and how to allow
    it, and no code from the file runs. ``weights_only=False`` uses
    ``pickle`` itself: it can load any object (a whole module) and can run any
    code, so use it only for files you trust.

    Args:
        f: a path (``str``/``os.PathLike``) or a binary file object (read from its current position).
        map_location: where storages go, as in torch: None (where they were saved), a device or str
            ('cpu', 'cuda:0'), a dict remapping saved locations (``{'cuda:1': 'cuda:0'}``), or a callable
            ``(storage, location) -> storage or None`` whose storage is a 1-D cpu tensor.
        pickle_module: for ``weights_only=False``, the module whose ``Unpickler`` is used (``pickle``).
        weights_only: restrict unpickling to tensors, containers and allowlisted globals (default True).
        mmap: map the file and use each storage in place, without reading it (paths only; zip format).
            The mapping is private: writes to the tensors do not reach the file.

    Example:
        >>> import io, flambeau_core as fc
        >>> buf = io.BytesIO()
        >>> save({"w": fc.ones(2, 2), "step": 3}, buf)
        >>> _ = buf.seek(0)
        >>> load(buf, map_location="cpu")["step"]
        3
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise FlambeauError(
            "[load] cannot load safely with an explicit pickle_module; pass weights_only=False to use it"
        )
    if pickle_load_args and weights_only:
        raise FlambeauError(f"[load] pickle_load_args {sorted(pickle_load_args)} work only with weights_only=False")
    pickle_module = pickle_module or pickle
    pickle_load_args.setdefault("encoding", "utf-8")
    restore = _restorer(map_location)
    source = _Source(f)
    try:
        try:
            args = (restore, map_location, weights_only, bool(mmap), pickle_module, pickle_load_args)
            return _load_source(source, *args)
        except (FlambeauError, UnpicklingError) as e:
            raise _retitled(e, source.name) from None
    finally:
        source.close()


def _load_source(
    source: _Source,
    restore: Callable,
    map_location: MapLocation,
    weights_only: bool,
    mmap: bool,
    pickle_module: Any,
    args: dict,
) -> Any:
    head = source.head
    if is_zip(head):
        mapped = None
        if mmap:
            if source.path is None:
                raise ValueError("[load] mmap=True needs f to be a file path, not a file object")
            if source.size == 0:
                raise FlambeauError(f"[load] {source.name} is empty")
            mapped = _mmap.mmap(source.file.fileno(), 0, access=_mmap.ACCESS_COPY)
        reader = ArchiveReader(source.file, source.name, source.size)
        loader = _ZipLoader(reader, restore, mapped)
        data = reader.read("data.pkl")
        try:
            return _unpickle(io.BytesIO(data), loader.persistent_load, weights_only, pickle_module, args)
        except UnpicklingError as e:
            raise UnpicklingError(f"[load] {source.name}: weights_only=True load failed: {e}") from None
    if len(head) > 4 and head[0] == 0x80 and head[2:14] == _LEGACY_MAGIC:
        if mmap:
            raise FlambeauError(
                "[load] mmap=True needs the zip format; this file is in the legacy format "
                "(torch.save(..., _use_new_zipfile_serialization=False)); re-save it without that flag"
            )
        return _load_legacy(source, restore, weights_only, pickle_module, args)
    if len(head) >= 9 and head[8:9] == b"{":
        return _load_safetensors(source, map_location)
    if source.size > 262 and _is_tar(source):
        raise FlambeauError(
            "[load] this is a tar checkpoint of PyTorch < 0.4, which flambeau cannot read; "
            "load and re-save it with torch first"
        )
    raise FlambeauError(
        f"[load] not a checkpoint: it starts with {head[:8]!r}; expected a PyTorch zip (b'PK\\x03\\x04'), "
        "a legacy PyTorch pickle, or a safetensors header"
    )


def _is_tar(source: _Source) -> bool:
    source.file.seek(257)
    magic = source.file.read(5)
    source.file.seek(0)
    return magic == b"ustar"


def _load_safetensors(source: _Source, map_location: MapLocation) -> Any:
    if source.path is None:
        raise FlambeauError("[load] this is a safetensors file; pass its path (safetensors are read from paths)")
    if "load" not in _safetensors:
        raise FlambeauError(
            "[load] this is a safetensors file; reading it needs flambeau_nn.load (import flambeau, or call "
            "flambeau_interop.serialization.register_safetensors)"
        )
    if isinstance(map_location, dict) or (callable(map_location) and not isinstance(map_location, fc.device)):
        raise FlambeauError("[load] a safetensors file takes map_location as a device or str only (as torch.load)")
    out = _safetensors["load"](source.path)
    if map_location is not None:
        device = fc.device(_location_str(map_location, "map_location"))
        for k, v in out.items():
            out[k] = v.to(device)
    return out


def _load_legacy(source: _Source, restore: Callable, weights_only: bool, pickle_module: Any, args: dict) -> Any:
    file = source.file
    pending: dict[str, tuple[Tensor, memoryview, LoadedStorage]] = {}
    budget = [source.size]

    def no_storage(pid: object) -> Any:
        raise FlambeauError(f"[load] a persistent id {pid!r:.60} appears in the legacy header")

    def persistent_load(pid: object) -> Any:
        if type(pid) is tuple and pid and pid[0] in ("module", b"module") and not weights_only:
            return pid[1] if len(pid) > 1 else None  # a module's class (its source is not checked)
        storage_type, key, location, numel = _check_pid(pid, 6)
        if pid[5] is not None:
            raise FlambeauError(f"[load] storage {key} is a storage view of a pre-1.0 PyTorch file, not supported")
        dtype = storage_type.dtype
        if key in pending:
            loaded = pending[key][2]
            if loaded.base.dtype != dtype:
                raise FlambeauError(f"[load] storage {key} is used both as {loaded.base.dtype} and as {dtype}")
            return loaded
        nbytes = numel * dtype.itemsize
        if nbytes + 8 > budget[0]:
            raise FlambeauError(
                f"[load] storage {key} declares {numel} elements of {dtype} ({nbytes} bytes), more than the file holds"
            )
        budget[0] -= nbytes + 8
        base, raw = _empty_storage(dtype, numel)
        loaded = LoadedStorage(restore(base, location, f"storage {key}"), f"storage {key}")
        pending[key] = (base, raw, loaded)
        return loaded

    try:
        magic = _unpickle(file, no_storage, True, pickle_module, args)
        protocol = _unpickle(file, no_storage, True, pickle_module, args)
        sys_info = _unpickle(file, no_storage, True, pickle_module, args)
    except UnpicklingError as e:
        raise FlambeauError(f"[load] the legacy header is damaged: {e}") from None
    if magic != MAGIC_NUMBER or protocol != PROTOCOL_VERSION or not isinstance(sys_info, dict):
        raise FlambeauError(
            f"[load] bad legacy header (magic {magic!r:.30}, protocol {protocol!r:.20}); expected {MAGIC_NUMBER}, "
            f"{PROTOCOL_VERSION}"
        )
    little = sys_info.get("little_endian", True)
    try:
        result = _unpickle(file, persistent_load, weights_only, pickle_module, args)
        keys = _unpickle(file, no_storage, True, pickle_module, args)
    except UnpicklingError as e:
        raise UnpicklingError(f"[load] weights_only=True load failed: {e}") from None
    if not isinstance(keys, list) or sorted(map(str, keys)) != sorted(pending) or len(keys) != len(pending):
        raise FlambeauError(
            f"[load] the legacy storage list {keys!r:.80} does not match the storages the pickle uses {sorted(pending)}"
        )
    for key in keys:
        base, raw, loaded = pending[str(key)]
        count = file.read(8)
        if len(count) != 8 or struct.unpack("<q" if little else ">q", count)[0] != base.numel():
            raise FlambeauError(f"[load] storage {key}: its size field is missing or differs from the pickle's")
        if file.readinto(raw) != raw.nbytes:
            raise FlambeauError(f"[load] the file ends inside storage {key}; it is truncated")
        if not little:
            _byteswap(raw, base.dtype)
        if loaded.base is not base:  # restored before its bytes arrived: copy them to the device
            loaded.base.copy_(base)
    return result


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals a checkpoint names that ``weights_only=True`` would refuse
    (``torch.serialization.get_unsafe_globals_in_checkpoint``).

    Found by reading the pickle's opcodes, without running it; each is
    ``"module.name"``, as ``add_safe_globals`` expects it.

    Example:
        >>> import io, collections
        >>> buf = io.BytesIO()
        >>> save(collections.Counter(a=1), buf)
        >>> _ = buf.seek(0)
        >>> get_unsafe_globals_in_checkpoint(buf)
        []
    """
    source = _Source(f)
    try:
        if not is_zip(source.head):
            raise ValueError(f"[get_unsafe_globals_in_checkpoint] {source.name} is not a zip checkpoint of torch.save")
        reader = ArchiveReader(source.file, source.name, source.size)
        try:
            return unsafe_globals(reader.read("data.pkl"))
        except UnpicklingError as e:
            raise UnpicklingError(f"[get_unsafe_globals_in_checkpoint] {source.name}: {e}") from None
    finally:
        source.close()
