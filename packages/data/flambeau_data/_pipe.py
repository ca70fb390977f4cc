"""The loader's pipe messages, framed as ``multiprocessing.Connection`` frames them, with less per message.

Note [Pipe messages]: every task and every result crosses a pipe as one
``Connection`` message (a 4-byte big-endian length, or -1 and an 8-byte length
past 2 GiB, then the bytes). ``Connection.send`` builds a ``ForkingPickler``
per message, whose constructor copies ``copyreg``'s dispatch table, and
``Connection.recv_bytes`` reads the length and the body with two ``read``
calls through a ``BytesIO``: ~4 us per task on the main side and ~3 us per
message on the reading side, a few percent of a batch of 128 small samples.
Here, with the same bytes on the wire:

* ``Pickler``: one ``ForkingPickler`` per pool, reused; its dispatch table
  is a live ``ChainMap`` of ``ForkingPickler``'s reducers over ``copyreg``'s
  (the same precedence as the copy ``ForkingPickler`` makes, and a reducer
  registered later is seen), so it pickles what ``Connection.send`` would.
* ``write``: the frame in one ``os.write`` (a loop for a partial write).
* ``Reader``: reads whatever the pipe holds (several tasks written before a
  worker starts come in one call) and splits the frames; ``pending()`` says
  whether a whole message is buffered, which a ``poll`` of the pipe no
  longer knows.

A closed ``Connection`` raises ``OSError`` from ``fileno()``, as from
``send``/``recv_bytes``; a peer gone raises ``BrokenPipeError`` on write and
``EOFError`` on read, as ``Connection`` does.

Note [Packed messages]: the two messages of every batch skip pickle. A task
whose indices are plain ints (what the built-in samplers give) is ``T``, the
indices' type code, its task id and slot, then the indices as int32 (or
int64) by one ``struct.Struct`` per batch size, which the worker reads back
into a list of the same ints with one ``memoryview.tolist``: half the main
process's time of pickling them (timeit, 128 ints; ``array.array`` of a list
parses each item with ``PyArg_Parse`` and is slower than pickle), and in the
worker about half of what unpickling them took. A result batch
(``ShmBatch``) is ``B`` and a ``marshal`` (version 2) of its fields, ~3x
quicker to write and ~1.5x to read than pickling the dataclass through its
``__reduce__``. Anything else is pickled as before; a pickle starts with its
PROTO opcode (0x80), so the first byte tells the forms apart.
"""

from __future__ import annotations

import collections
import copyreg
import io
import os
import pickle
import struct
from multiprocessing.reduction import ForkingPickler
from typing import Any

_SMALL = 0x7FFFFFFF
_LEN = struct.Struct("!i")
_LEN64 = struct.Struct("!Q")
_TASK = struct.Struct("=cc6xqq")  # b"T", the indices' type code, task id, slot (Note [Packed messages])
_TASK_TAG = b"T"[0]


_INDEX_STRUCTS: dict[tuple[bytes, int], struct.Struct] = {}  # (type code, count) -> the indices' Struct


def pack_task(task_id: int, indices: list[int], slot: int) -> bytes | None:
    """The task message of ``indices``, plain ints, packed (Note [Packed messages]); None if one does not fit
    in int64."""
    n = len(indices)
    for code in (b"i", b"q"):
        packer = _INDEX_STRUCTS.get((code, n))
        if packer is None:
            if len(_INDEX_STRUCTS) > 64:  # batch sizes that keep changing: no unbounded cache
                _INDEX_STRUCTS.clear()
            packer = _INDEX_STRUCTS[(code, n)] = struct.Struct(f"={n}{code.decode()}")
        try:
            return _TASK.pack(b"T", code, task_id, slot) + packer.pack(*indices)
        except struct.error:  # an index beyond the type's range
            continue
    return None


def loads_task(data: bytes) -> Any:
    """A task message: ``(task_id, indices, slot, None)`` for a packed one, else the unpickled object."""
    if data[0] != _TASK_TAG:
        return pickle.loads(data)
    _, code, task_id, slot = _TASK.unpack_from(data)
    return task_id, memoryview(data)[_TASK.size :].cast(code.decode()).tolist(), slot, None


class Pickler:
    """``ForkingPickler.dumps(obj)``'s bytes, with one pickler reused (Note [Pipe messages])."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        self._pickler = ForkingPickler(self._buf)
        self._pickler.dispatch_table = collections.ChainMap(ForkingPickler._extra_reducers, copyreg.dispatch_table)

    def dumps(self, obj: Any) -> bytes:
        buf = self._buf
        buf.seek(0)
        buf.truncate()
        self._pickler.clear_memo()
        try:
            self._pickler.dump(obj)
        except BaseException:
            # A failed dump may leave the pickler mid-frame: the next message gets a fresh one.
            self.__init__()  # type: ignore[misc]
            raise
        return buf.getvalue()


def write(conn: Any, data: bytes) -> None:
    """Sends ``data`` as one message of ``conn`` (``Connection.send_bytes``' framing)."""
    fd = conn.fileno()
    n = len(data)
    if n > _SMALL:
        frame: Any = memoryview(_LEN.pack(-1) + _LEN64.pack(n) + data)
    else:
        frame = memoryview(_LEN.pack(n) + data)
    while True:
        written = os.write(fd, frame)
        if written == len(frame):
            return
        frame = frame[written:]


class Reader:
    """Messages of one ``Connection``'s read end, read in as few ``read`` calls as the pipe allows."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._buf = bytearray()
        self._pos = 0

    def _frame(self) -> tuple[int, int] | None:
        """(start, end) of the first whole buffered message, or None."""
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return None
        (n,) = _LEN.unpack_from(buf, pos)
        start = pos + 4
        if n == -1:
            if len(buf) - start < 8:
                return None
            (n,) = _LEN64.unpack_from(buf, start)
            start += 8
        if len(buf) - start < n:
            return None
        return start, start + n

    def pending(self) -> bool:
        """Whether a whole message is buffered (``recv_bytes`` returns it without reading the pipe)."""
        return self._frame() is not None

    def recv_bytes(self) -> bytes:
        """The next message; EOFError when the writer closed its end with no message left."""
        while True:
            span = self._frame()
            if span is not None:
                start, end = span
                data = bytes(self._buf[start:end])
                self._pos = end
                if end == len(self._buf):
                    self._buf.clear()
                    self._pos = 0
                return data
            if self._pos:
                del self._buf[: self._pos]
                self._pos = 0
            chunk = os.read(self._conn.fileno(), max(65536, self._missing()))
            if not chunk:
                if self._buf:
                    raise OSError("got end of file during message")
                raise EOFError
            self._buf += chunk

    def _missing(self) -> int:
        """Bytes the first message still lacks (a lower bound while its length is not known)."""
        buf = self._buf
        if len(buf) < 4:
            return 4 - len(buf)
        (n,) = _LEN.unpack_from(buf, 0)
        if n == -1:
            if len(buf) < 12:
                return 12 - len(buf)
            (n,) = _LEN64.unpack_from(buf, 4)
            return 12 + n - len(buf)
        return 4 + n - len(buf)
