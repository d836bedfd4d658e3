"""Single message transforms: JavaScript functions that rewrite or drop a message (docs/transforms.md).

A transform's code is compiled once per process into its own V8 context (mini-racer), with the timers mini-racer
installs removed: V8 alone has no network, file system or timers, so a function sees only its arguments. Each call
has a time limit and the context a memory cap; a context that went past either is thrown away.

Google's calling convention: ``fn(message, metadata)`` with ``message = {data: string, attributes: {k: v}}`` and
``metadata = {message_id, publish_time, ordering_key}``; it returns ``{data, attributes?}`` (no ``attributes``
keeps them, ``{}`` removes them all) or ``null`` to drop the message. ``data`` travels as UTF-8 text: a message
whose data is not UTF-8 fails the transform rather than being altered.

This module imports V8 only when a transform runs (``_racer``): deployed, only the transform function carries it
(infra/v8_layer.py), and every other function reaches it through chalicelib/store/transformer.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument

# mini-racer's timers are non-configurable globals: made undefined and read-only, so a UDF can neither call nor
# restore them.
_SANDBOX = ("for (const k of ['setTimeout', 'clearTimeout', '__timer_manager']) "
            "Object.defineProperty(globalThis, k, {value: undefined, writable: false}); delete Atomics.waitAsync;")
_CACHE_SIZE = 64


class TransformFailed(Exception):
    """A transform threw, timed out, ran out of memory or returned something that is not a message."""


@dataclass(frozen=True)
class Udf:
    function_name: str
    code: str

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.function_name}\0{self.code}".encode()).hexdigest()


@dataclass(frozen=True)
class Message:
    data: bytes
    attributes: dict[str, str]
    message_id: str = ""
    publish_time: str = ""  # YYYY-MM-DDTHH:MM:SSZ, as Google passes it
    ordering_key: str = ""


@dataclass(frozen=True)
class Limits:
    call_ms: float = 500.0
    memory_bytes: int = 64 * 1024 * 1024


class _Compiled:
    """One transform's V8 context; calls are serialized (a context runs one call at a time)."""

    def __init__(self, udf: Udf, caps: Limits) -> None:
        racer = _racer()
        self.ctx = racer.MiniRacer()
        self.ctx.set_hard_memory_limit(caps.memory_bytes)
        self.udf, self.caps, self.lock = udf, caps, threading.Lock()
        self.broken = False
        try:
            kind = self._load()
        except Exception:
            self.close()
            raise
        if kind != "function":
            self.close()
            raise InvalidArgument(f"The JavaScript UDF defines no function named '{udf.function_name}'")

    def _load(self) -> Any:
        racer, udf, caps = _racer(), self.udf, self.caps
        try:
            self.ctx.eval(_SANDBOX)
            self.ctx.eval(udf.code, timeout=caps.call_ms)
            return self.ctx.eval(f"typeof globalThis[{json.dumps(udf.function_name)}]", timeout=caps.call_ms)
        except racer.JSParseException as exc:
            raise InvalidArgument(f"The JavaScript UDF does not compile: {_first_line(exc)}") from None
        except (racer.JSTimeoutException, racer.JSOOMException):
            raise InvalidArgument("The JavaScript UDF's top-level code does not finish within the time and "
                                  "memory limits") from None
        except racer.JSEvalException as exc:
            raise InvalidArgument(f"The JavaScript UDF's top-level code throws: {_first_line(exc)}") from None

    def close(self) -> None:
        """Free the context (one left open after a timeout keeps the process from exiting)."""
        self.ctx.close()

    def call(self, message: dict[str, Any], metadata: dict[str, str]) -> Any:
        racer = _racer()
        with self.lock:
            try:
                return self.ctx.call(self.udf.function_name, message, metadata, timeout=self.caps.call_ms)
            except racer.JSTimeoutException:
                self.broken = True
                raise TransformFailed(f"{self.udf.function_name} ran longer than {self.caps.call_ms:g} ms") from None
            except racer.JSOOMException:
                self.broken = True
                raise TransformFailed(f"{self.udf.function_name} used more than its memory cap") from None
            except racer.JSEvalException as exc:
                raise TransformFailed(f"{self.udf.function_name} threw: {_first_line(exc)}") from None


class Engine:
    """The compiled transforms of this process (at most ``_CACHE_SIZE``, least recently used dropped)."""

    def __init__(self, caps: Limits | None = None) -> None:
        self.caps = caps or Limits()
        self._compiled: OrderedDict[str, _Compiled] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, udfs: Sequence[Udf]) -> None:
        """Compile each; INVALID_ARGUMENT naming the first that does not compile or lacks its function."""
        for i, udf in enumerate(udfs):
            try:
                self._get(udf)
            except InvalidArgument as exc:
                raise InvalidArgument(f"message_transforms[{i}]: {exc.message}") from None

    def apply(self, udfs: Sequence[Udf], message: Message) -> Message | None:
        """``message`` through each transform in turn; None once one drops it. Raises TransformFailed."""
        for udf in udfs:
            compiled = self._get(udf)
            if compiled is None:
                raise TransformFailed(f"{udf.function_name} does not compile")
            try:
                data = message.data.decode("utf-8")
            except UnicodeDecodeError:
                raise TransformFailed("the message's data is not UTF-8 text, which JavaScript transforms "
                                      "take") from None
            try:
                out = compiled.call({"data": data, "attributes": dict(message.attributes)},
                                    {"message_id": message.message_id, "publish_time": message.publish_time,
                                     "ordering_key": message.ordering_key})
            finally:
                if compiled.broken:
                    self._forget(udf)
            if out is None:
                return None
            message = _returned(udf, out, message)
        return message

    def _get(self, udf: Udf) -> _Compiled | None:
        with self._lock:
            hit = self._compiled.get(udf.key)
            if hit is not None:
                self._compiled.move_to_end(udf.key)
                return hit
        compiled = _Compiled(udf, self.caps)  # raises InvalidArgument
        with self._lock:
            self._compiled[udf.key] = compiled
            evicted = [self._compiled.popitem(last=False)[1] for _ in range(len(self._compiled) - _CACHE_SIZE)]
        for old in evicted:
            with old.lock:
                old.close()
        return compiled

    def _forget(self, udf: Udf) -> None:
        with self._lock:
            gone = self._compiled.pop(udf.key, None)
        if gone is not None:
            with gone.lock:
                gone.close()


_engines: dict[Limits, Engine] = {}
_engines_lock = threading.Lock()


def engine(caps: Limits) -> Engine:
    """This process's engine for ``caps`` (its compiled transforms kept by code hash)."""
    with _engines_lock:
        if caps not in _engines:
            _engines[caps] = Engine(caps)
        return _engines[caps]


def run_batch(caps: Limits, event: dict[str, Any]) -> dict[str, Any]:
    """One batch of the transform function (chalicelib/store/transformer.py): ``{"transforms": [{"javascriptUdf":
    {functionName, code}}], "messages": [{data (base64), attributes, messageId, publishTime, orderingKey}]}`` ->
    ``{"results": [...]}`` with, per message, ``{data, attributes}``, ``{"dropped": true}`` or ``{"error": ...}``;
    ``{"invalid": ...}`` when a transform does not compile or lacks its function."""
    udfs = [Udf(str(t["javascriptUdf"]["functionName"]), str(t["javascriptUdf"]["code"]))
            for t in event.get("transforms", [])]
    eng = engine(caps)
    try:
        eng.check(udfs)
    except InvalidArgument as exc:
        return {"invalid": exc.message}
    results: list[dict[str, Any]] = []
    for m in event.get("messages", []):
        message = Message(base64.b64decode(m.get("data", "")), dict(m.get("attributes") or {}),
                          str(m.get("messageId", "")), str(m.get("publishTime", "")), str(m.get("orderingKey", "")))
        try:
            out = eng.apply(udfs, message)
        except TransformFailed as exc:
            results.append({"error": str(exc)})
            continue
        results.append({"dropped": True} if out is None else
                       {"data": base64.b64encode(out.data).decode(), "attributes": out.attributes})
    return {"results": results}


def _returned(udf: Udf, out: Any, before: Message) -> Message:
    """The message a transform returned: ``{data: string, attributes?: {string: string}}``."""
    data = _get(out, "data")
    if not isinstance(data, str):
        raise TransformFailed(f"{udf.function_name} returned no string 'data'")
    attributes = _get(out, "attributes")
    if attributes is None:
        attrs = dict(before.attributes)
    else:
        attrs = {str(k): v for k, v in dict(attributes).items()}
        if not all(isinstance(v, str) for v in attrs.values()):
            raise TransformFailed(f"{udf.function_name} returned attributes that are not strings")
        if len(attrs) > limits.MAX_ATTRIBUTES:
            raise TransformFailed(f"{udf.function_name} returned more than {limits.MAX_ATTRIBUTES} attributes")
    return Message(data.encode("utf-8"), attrs, before.message_id, before.publish_time, before.ordering_key)


def _get(obj: Any, key: str) -> Any:
    try:
        return obj[key]
    except (KeyError, TypeError, IndexError):
        return None
    except Exception:  # a JS object mini-racer cannot index that way
        return None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _racer() -> Any:
    import py_mini_racer  # only where transforms run: see the module docstring

    return py_mini_racer
