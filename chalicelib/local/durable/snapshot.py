"""Snapshots of the emulator: every moto backend in use, pickled, written whole or not at all.

A snapshot names the journal generation that continues it: loading it and replaying that journal gives the
state the emulator had. Locks inside moto's models are pickled as new locks; the few lambdas moto keeps as
``defaultdict`` factories are pickled by name (``_FACTORIES``), so that an unknown one fails the snapshot
loudly rather than losing data.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import sys
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _nested_tags() -> defaultdict[str, dict[str, str]]:
    return defaultdict(dict)


# moto's defaultdict factories that are lambdas, by qualified name: what each builds.
_FACTORIES: dict[str, Callable[[], Any]] = {
    "SimpleSystemManagerBackend.__init__.<locals>.<lambda>": _nested_tags,
}


def _defaultdict(factory: str, items: dict[Any, Any]) -> defaultdict[Any, Any]:
    return defaultdict(_FACTORIES[factory], items)


def _rlock() -> Any:
    return threading.RLock()


def _lock() -> Any:
    return threading.Lock()


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _LOCK_TYPES):
            return (_rlock if isinstance(obj, _LOCK_TYPES[1]) else _lock), ()
        if isinstance(obj, defaultdict) and getattr(obj.default_factory, "__name__", "") == "<lambda>":
            name = obj.default_factory.__qualname__  # type: ignore[union-attr]
            if name not in _FACTORIES:
                raise pickle.PicklingError(f"moto keeps a defaultdict of an unknown lambda: {name}")
            return _defaultdict, (name, dict(obj))
        return NotImplemented


@dataclass(frozen=True)
class Snapshot:
    generation: int  # the journal that continues it
    moto_version: str
    backends: dict[tuple[str, str], dict[str, dict[str, Any]]]  # (module, attribute) -> account -> region -> model


def capture(generation: int, moto_version: str) -> Snapshot:
    """Every moto backend in use (those that served a call) in this process."""
    from moto.core.base_backend import BackendDict

    found: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    instances: list[Any] = list(BackendDict._instances)  # type: ignore[misc]  # moto's registry of those in use
    for backends in instances:
        location = _location(backends)
        found[location] = {account: dict(regions) for account, regions in backends.items()}
    return Snapshot(generation, moto_version, found)


def _location(backends: Any) -> tuple[str, str]:
    """The module attribute that holds this BackendDict (e.g. ``moto.sqs.models``, ``sqs_backends``)."""
    module = sys.modules[backends.backend.__module__]
    for name, value in vars(module).items():
        if value is backends:
            return module.__name__, name
    raise LookupError(f"no module attribute holds moto's {backends.service_name} backends")


def restore(snapshot: Snapshot) -> None:
    """Put the snapshot's backends in place of this process's (before the emulator serves a call)."""
    for (module, attribute), accounts in snapshot.backends.items():
        backends = getattr(importlib.import_module(module), attribute)
        for account, regions in accounts.items():
            holder = backends[account]  # created as moto would on a first call
            for region, model in regions.items():
                dict.__setitem__(holder, region, model)


def write(path: Path, snapshot: Snapshot, sync: bool = True) -> int:
    """Write the snapshot beside ``path`` and rename it into place (whole or not at all); returns its size."""
    temporary = path.with_suffix(".tmp")
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((FORMAT, snapshot))
    with open(temporary, "wb") as out:
        out.write(buffer.getbuffer())
        out.flush()
        if sync:
            os.fsync(out.fileno())
    os.replace(temporary, path)
    if sync:
        _sync_directory(path.parent)
    return buffer.getbuffer().nbytes


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(path: Path) -> Snapshot | None:
    if not path.exists():
        return None
    with open(path, "rb") as src:
        version, snapshot = pickle.load(src)
    if version != FORMAT or not isinstance(snapshot, Snapshot):
        raise ValueError(f"{path} is not a snapshot this Metro can read (format {version})")
    return snapshot
