"""Snapshots of the emulator: every moto backend in use, pickled, written whole or not at all.

A snapshot names the journal generation that continues it: loading it and replaying that journal gives the
state the emulator had. It holds every account's and region's models and what a service keeps across them (S3's
registry of bucket names: without it, a restored bucket could be created again, empty). Locks inside moto's
models are pickled as new locks; the few lambdas moto keeps as ``defaultdict`` factories are pickled by name
(``_FACTORIES``), so that an unknown one fails the snapshot loudly rather than losing data.
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

FORMAT = 2
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


Location = tuple[str, str]  # the module attribute that holds a BackendDict: (``moto.sqs.models``, ``sqs_backends``)
# A BackendDict's own attributes; any other is state kept across accounts (S3's bucket-name registry) and is kept.
_BACKEND_DICT_FIELDS = frozenset({"backend", "service_name", "_use_boto3_regions", "_additional_regions", "_id"})


@dataclass(frozen=True)
class Snapshot:
    generation: int  # the journal that continues it
    moto_version: str
    backends: dict[Location, dict[str, dict[str, Any]]]  # -> account -> region -> model
    shared: dict[Location, dict[str, Any]]  # -> the BackendDict's other attributes


def capture(generation: int, moto_version: str) -> Snapshot:
    """Every moto backend in use (those that served a call) in this process."""
    from moto.core.base_backend import BackendDict

    found: dict[Location, dict[str, dict[str, Any]]] = {}
    shared: dict[Location, dict[str, Any]] = {}
    instances: list[Any] = list(BackendDict._instances)  # type: ignore[misc]  # moto's registry of those in use
    for backends in instances:
        location = _location(backends)
        found[location] = {account: dict(regions) for account, regions in backends.items()}
        shared[location] = {k: v for k, v in vars(backends).items() if k not in _BACKEND_DICT_FIELDS}
    return Snapshot(generation, moto_version, found, shared)


def _location(backends: Any) -> Location:
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
        for name, value in snapshot.shared.get((module, attribute), {}).items():
            setattr(backends, name, value)


def write(path: Path, snapshot: Snapshot, sync: bool = True) -> int:
    """Write the snapshot beside ``path`` and rename it into place (whole or not at all); returns its size."""
    temporary = path.with_suffix(".tmp")
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((FORMAT, snapshot))
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
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
