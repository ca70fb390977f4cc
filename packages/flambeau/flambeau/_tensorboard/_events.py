"""Event files: TFRecord framing with masked CRC-32C, a queue flushed by size and by time."""

from __future__ import annotations

import functools
import itertools
import os
import socket
import struct
import threading
import time
import weakref

import numpy as np

from . import _proto

_CRC32C_POLY = 0x82F63B78  # Castagnoli, bit-reversed


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


_NP_TABLE = np.array(_TABLE, dtype=np.uint32)
_LANE_BYTES = 256


def _crc_bytes(crc: int, data: bytes | memoryview) -> int:
    """The CRC register after feeding ``data`` one byte at a time (no initial or final inversion)."""
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


@functools.cache
def _zero_bytes_operator(n: int) -> tuple[list[int], ...]:
    """The register's change when n zero bytes are fed (a linear map over GF(2)), as 4 byte-indexed tables."""
    # Columns of the map for one zero byte: where each single set bit of the register goes.
    columns = [_TABLE[(1 << i) & 0xFF] ^ ((1 << i) >> 8) for i in range(32)]
    result = [1 << i for i in range(32)]  # identity

    def apply(cols: list[int], v: int) -> int:
        out = 0
        i = 0
        while v:
            if v & 1:
                out ^= cols[i]
            v >>= 1
            i += 1
        return out

    while n:  # square-and-multiply: result = one-byte map ** n
        if n & 1:
            result = [apply(columns, c) for c in result]
        columns = [apply(columns, c) for c in columns]
        n >>= 1
    tables = []
    for part in range(4):
        table = [0] * 256
        for b in range(1, 256):
            low = b & -b
            table[b] = table[b ^ low] ^ result[8 * part + low.bit_length() - 1]
        tables.append(table)
    return tuple(tables)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, the checksum TFRecord files use.

    Long data (an encoded image) is cut into equal lanes whose CRCs NumPy
    computes side by side, one byte of every lane per step; the lanes' CRCs are
    then chained with the zero-bytes operator (CRC is linear over GF(2)), and the
    tail that does not fill a lane is fed byte by byte.
    """
    n = len(data)
    lanes = n // _LANE_BYTES
    if lanes < 32:  # below 8 KiB the byte loop is as fast
        return _crc_bytes(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    body = np.frombuffer(data, dtype=np.uint8, count=lanes * _LANE_BYTES).reshape(lanes, _LANE_BYTES)
    regs = np.zeros(lanes, dtype=np.uint32)
    for j in range(_LANE_BYTES):
        regs = _NP_TABLE[(regs ^ body[:, j]) & 0xFF] ^ (regs >> 8)
    t0, t1, t2, t3 = _zero_bytes_operator(_LANE_BYTES)
    crc = 0xFFFFFFFF
    for lane_crc in regs.tolist():  # crc = shift(crc over one lane of zeros) ^ the lane's own CRC from 0
        crc = t0[crc & 0xFF] ^ t1[(crc >> 8) & 0xFF] ^ t2[(crc >> 16) & 0xFF] ^ t3[crc >> 24] ^ lane_crc
    return _crc_bytes(crc, memoryview(data)[lanes * _LANE_BYTES :]) ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked checksum: rotated right by 15 bits plus a constant, so CRCs of CRCs stay distinct."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data: bytes) -> bytes:
    """One TFRecord: length (u64), its masked CRC (u32), the data, the data's masked CRC (u32), little-endian."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


_file_counter = itertools.count()  # tells apart files one process opens in the same second


class _EventFile:
    """The open file, its pending records and the thread that flushes them every ``flush_secs``.

    Kept apart from :class:`EventFileWriter` so that the flushing thread and the
    finalizer hold this state, never the writer: a writer nobody references is
    collected, and its pending events are flushed then (or at interpreter exit).
    """

    def __init__(self, path: str, max_queue: int, flush_secs: float) -> None:
        self.file = open(path, "wb")  # noqa: SIM115  (closed by close(), at the latest by the finalizer)
        self.pending: list[bytes] = []
        self.max_queue = max(1, int(max_queue))
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._flush_periodically, args=(float(flush_secs),), daemon=True)
        self.thread.start()

    def _flush_periodically(self, flush_secs: float) -> None:
        while not self.stop.wait(flush_secs):
            self.flush()

    def add(self, record: bytes) -> None:
        with self.lock:
            if self.file.closed:
                return
            self.pending.append(record)
            if len(self.pending) >= self.max_queue:
                self._write_pending()

    def _write_pending(self) -> None:
        self.file.write(b"".join(self.pending))
        self.pending.clear()
        self.file.flush()

    def flush(self) -> None:
        with self.lock:
            if not self.file.closed:
                self._write_pending()

    def close(self) -> None:
        self.stop.set()
        with self.lock:
            if not self.file.closed:
                self._write_pending()
                self.file.close()


class EventFileWriter:
    """Writes ``Event`` messages (wire bytes) to a new event file in ``log_dir``.

    The file is named as TensorBoard's writers name theirs
    (``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``) and starts with the
    ``brain.Event:2`` version event.
    """

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.log_dir = log_dir
        name = (
            f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
            f"{next(_file_counter)}{filename_suffix}"
        )
        path = os.path.join(log_dir, name)
        try:
            os.makedirs(log_dir, exist_ok=True)
            self._file = _EventFile(path, max_queue, flush_secs)
        except OSError as e:
            reason = e.strerror or str(e)
            # Same OSError subclass (PermissionError, NotADirectoryError ...), the message naming the directory.
            raise type(e)(f"[SummaryWriter] cannot write event files to log_dir '{log_dir}': {reason}") from e
        self.path = path
        self._finalizer = weakref.finalize(self, self._file.close)
        self.add_event(_proto.event(time.time(), file_version="brain.Event:2"))
        self.flush()

    def add_event(self, event: bytes) -> None:
        self._file.add(tfrecord(event))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._finalizer()
