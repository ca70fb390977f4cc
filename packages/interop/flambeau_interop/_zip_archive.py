"""The zip container of PyTorch checkpoints: aligned writing, bounds-checked reading.

Note [PyTorch zip archive]
``torch.save`` writes an uncompressed zip whose records all sit under one
folder, ``<archive>/`` (the file's stem, ``archive`` for a buffer):
``data.pkl`` (the pickle), ``.format_version``, ``.storage_alignment``
(``64``), ``byteorder`` (``little``/``big``), one ``data/<key>`` per
storage (its raw bytes, in the byte order named by ``byteorder``), and
``version`` (``3``). Every record's data starts at a multiple of 64 bytes:
the local header's extra field is padded (id ``FB``), so a reader can map
the file and use each storage in place (``load(mmap=True)``). We write
through a byte-counting, non-seekable wrapper, so every record carries a
data descriptor after its bytes, as torch's writer does, and the file
streams in one pass (no seeking back to patch headers).

Reading trusts nothing: a record's size must be what the pickle declares
before any memory is allocated for it, and it must fit in the file (stored)
or within deflate's maximum ratio of its compressed size (deflated), which
is what bounds a zip bomb: nothing is decompressed beyond what the pickle
asks for and the archive can hold.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import BinaryIO

from flambeau_core import FlambeauError

ALIGNMENT = 64
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_MAGIC = 0x04034B50
# deflate's largest expansion is 1032:1; anything claiming more is lying.
_MAX_DEFLATE_RATIO = 1032
_CHUNK = 16 << 20
# What zipfile raises for damaged archives (an unknown "zip file version" is NotImplementedError).
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    OSError,
    ValueError,
    OverflowError,
    struct.error,
    zlib.error,
    NotImplementedError,
)


class _CountingWriter:
    """Write-only, tells how many bytes went through; no seek, so zipfile streams with data descriptors."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._count = 0

    def write(self, data: bytes | memoryview) -> int:
        n = memoryview(data).nbytes
        self._raw.write(data)
        self._count += n
        return n

    def tell(self) -> int:
        return self._count

    def flush(self) -> None:
        if hasattr(self._raw, "flush"):
            self._raw.flush()


class ArchiveWriter:
    """Writes the records of one checkpoint, each 64-byte aligned (Note [PyTorch zip archive])."""

    def __init__(self, raw: BinaryIO, archive: str) -> None:
        self._out = _CountingWriter(raw)
        self._zip = zipfile.ZipFile(self._out, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self._archive = archive

    def write(self, name: str, data: bytes | memoryview) -> None:
        nbytes = memoryview(data).nbytes
        info = zipfile.ZipInfo(f"{self._archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = nbytes
        zip64 = nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a 20-byte zip64 extra field
        encoded = info.filename.encode("ascii" if info.filename.isascii() else "utf-8")
        fixed = _LOCAL_HEADER.size + len(encoded) + (20 if zip64 else 0) + 4
        pad = -(self._out.tell() + fixed) % ALIGNMENT
        info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        with self._zip.open(info, mode="w", force_zip64=zip64) as dst:
            if nbytes:
                dst.write(data)

    def close(self) -> None:
        self._zip.close()
        self._out.flush()


class ArchiveReader:
    """The records of a checkpoint zip, read with every size checked against the file."""

    def __init__(self, file: BinaryIO, name: str, size: int) -> None:
        self.name = name
        self._file = file
        self._size = size
        try:
            self._zip = zipfile.ZipFile(file)
            names = self._zip.namelist()
        except _ZIP_ERRORS as e:
            raise self.error(f"the zip archive is damaged or truncated ({e})") from None
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            if any(n.endswith("constants.pkl") for n in names):
                raise self.error("this is a TorchScript archive (torch.jit.save); flambeau cannot load TorchScript")
            raise self.error("the zip archive has no <archive>/data.pkl record; it is not a torch.save checkpoint")
        self.prefix = pkl[0][: -len("data.pkl")]

    def error(self, why: str) -> FlambeauError:
        return FlambeauError(f"[load] {self.name}: {why}")

    def has(self, record: str) -> bool:
        try:
            self._zip.getinfo(self.prefix + record)
        except KeyError:
            return False
        return True

    def _info(self, record: str) -> zipfile.ZipInfo:
        try:
            info = self._zip.getinfo(self.prefix + record)
        except KeyError:
            raise self.error(f"the archive has no record {self.prefix + record!r}") from None
        if info.flag_bits & 0x1:
            raise self.error(f"record {info.filename!r} is encrypted; checkpoints are not")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise self.error(
                    f"record {info.filename!r} is stored uncompressed but declares {info.file_size} bytes in "
                    f"{info.compress_size}"
                )
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if info.file_size > info.compress_size * _MAX_DEFLATE_RATIO + 1024:
                raise self.error(
                    f"record {info.filename!r} claims {info.file_size} bytes from {info.compress_size} compressed "
                    "bytes, more than deflate can expand (a zip bomb or a corrupt archive)"
                )
        else:
            raise self.error(
                f"record {info.filename!r} uses zip compression method {info.compress_type}; "
                "checkpoints are stored uncompressed (or deflated)"
            )
        if info.header_offset < 0:
            raise self.error(f"record {info.filename!r} has a negative offset; the central directory is damaged")
        if info.header_offset + _LOCAL_HEADER.size + info.compress_size > self._size:
            raise self.error(
                f"record {info.filename!r} ({info.compress_size} bytes at offset {info.header_offset}) runs past "
                f"the end of the file ({self._size} bytes); the file is truncated"
            )
        return info

    def size(self, record: str) -> int:
        return self._info(record).file_size

    def read(self, record: str) -> bytes:
        info = self._info(record)
        buf = bytearray(info.file_size)
        self.read_into(record, memoryview(buf))
        return bytes(buf)

    def read_into(self, record: str, out: memoryview) -> None:
        """Fills ``out`` (exactly the record's size) with the record's bytes, checking the CRC."""
        info = self._info(record)
        if out.nbytes != info.file_size:
            raise self.error(f"record {info.filename!r} holds {info.file_size} bytes, expected {out.nbytes}")
        start = self.data_offset(record)
        if start is not None:  # stored: straight from the file into `out` (5x faster than zipfile's reads)
            self._file.seek(start)
            pos = 0
            while pos < out.nbytes:
                n = self._file.readinto(out[pos:])
                if not n:
                    raise self.error(f"record {info.filename!r} ends after {pos} of its {out.nbytes} bytes")
                pos += n
            if zlib.crc32(out) != info.CRC:
                raise self.error(f"record {info.filename!r} is damaged (its CRC-32 does not match)")
            return
        try:
            with self._zip.open(info) as src:
                pos = 0
                while pos < out.nbytes:
                    chunk = src.read(min(_CHUNK, out.nbytes - pos))
                    if not chunk:
                        break
                    out[pos : pos + len(chunk)] = chunk
                    pos += len(chunk)
                if pos != out.nbytes:
                    raise self.error(f"record {info.filename!r} ends after {pos} of its {out.nbytes} bytes")
                src.read(1)  # reaching the end makes zipfile check the CRC
        except _ZIP_ERRORS as e:
            raise self.error(f"record {info.filename!r} is damaged ({e})") from None

    def data_offset(self, record: str) -> int | None:
        """Where an uncompressed record's bytes start in the file (None if it is compressed)."""
        info = self._info(record)
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        self._file.seek(info.header_offset)
        header = self._file.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise self.error(f"record {info.filename!r} has a truncated local header")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != _LOCAL_MAGIC:
            raise self.error(f"record {info.filename!r} has no local header at offset {info.header_offset}")
        start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]
        if start + info.file_size > self._size:
            raise self.error(f"record {info.filename!r} runs past the end of the file; the file is truncated")
        return start


def is_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"
