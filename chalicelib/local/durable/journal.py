"""The journal: an append-only file of the emulator's state-changing AWS calls, each framed so that a torn last
record (the stack killed in the middle of a write) is found and dropped, never half-applied.

A file opens with ``MAGIC``; each record is ``<length:u32><crc32:u32><payload>``, the payload a pickled
:class:`Call`. Reading stops at the first record whose frame is short or whose checksum fails: everything
before it is whole (one ``write`` per record, appended in order under the recorder's lock), and what follows it
can only be the tail a crash cut. Opening for appends truncates that tail first.
"""

from __future__ import annotations

import os
import pickle
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"METRO-JOURNAL 1\n"
_FRAME = struct.Struct("<II")


@dataclass(frozen=True)
class Call:
    """One AWS call as the emulator received it, with what made its answer: the clock and the random seed."""

    at: float  # the emulator's clock while the call ran (seconds since the epoch)
    seed: int  # moto's random generator was seeded with this before the call (ids, receipt handles); 0: a read
    environ: dict[str, Any]  # the WSGI environment's request fields (method, path, query, headers)
    body: bytes


@dataclass(frozen=True)
class Reading:
    calls: list[Call]
    whole_bytes: int  # where the last whole record ends
    torn_bytes: int  # what follows it (a crash's cut record), dropped


def encode(call: Call) -> bytes:
    payload = pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def read(path: Path) -> Reading:
    """Every whole record of the journal at ``path`` (none if it does not exist), in the order they were written."""
    if not path.exists():
        return Reading([], 0, 0)
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        if MAGIC.startswith(data):  # a crash while the file was being created
            return Reading([], 0, len(data))
        raise ValueError(f"{path} is not a Metro journal")
    calls, offset = [], len(MAGIC)
    for call, end in _records(data, offset):
        calls.append(call)
        offset = end
    return Reading(calls, offset, len(data) - offset)


def _records(data: bytes, offset: int) -> Iterator[tuple[Call, int]]:
    while offset + _FRAME.size <= len(data):
        length, crc = _FRAME.unpack_from(data, offset)
        start, end = offset + _FRAME.size, offset + _FRAME.size + length
        payload = data[start:end]
        if end > len(data) or zlib.crc32(payload) != crc:
            return
        call = pickle.loads(payload)
        if not isinstance(call, Call):
            return
        yield call, end
        offset = end


class Journal:
    """The open journal: appends whole records, one ``write`` each (``sync``: and an fsync)."""

    def __init__(self, path: Path, whole_bytes: int, sync: bool) -> None:
        self.path = path
        self._sync = sync
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if whole_bytes < len(MAGIC):  # new, or cut while it was being created
            os.ftruncate(fd, 0)
            os.write(fd, MAGIC)
            whole_bytes = len(MAGIC)
        else:
            os.ftruncate(fd, whole_bytes)  # a torn last record goes before anything follows it
        os.lseek(fd, 0, os.SEEK_END)
        self._fd = fd
        self.size = whole_bytes
        if sync:
            os.fsync(fd)

    def append(self, call: Call) -> None:
        record = encode(call)
        written = os.write(self._fd, record)
        while written < len(record):  # a regular file takes a write whole, except on a full disk
            more = os.write(self._fd, record[written:])
            if more <= 0:
                raise OSError(f"the journal {self.path} could not be written (disk full?)")
            written += more
        if self._sync:
            os.fsync(self._fd)
        self.size += len(record)

    def close(self) -> None:
        os.close(self._fd)
