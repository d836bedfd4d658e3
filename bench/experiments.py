"""Proposed changes, tried in the benchmark process only (``python -m bench.run --patch NAME,...``).

Each patch monkeypatches one class of chalicelib for this process, so a proposal can be measured on
the same harness before anyone edits the real module. None is applied unless asked for; the results
JSON records which were.

pull-until-empty  PullService._receive keeps short-polling until maxMessages or an *empty* receive,
                  instead of stopping at the first partial (< 10) batch.
pull-linger       like pull-until-empty, but an empty receive ends the pull only after 100 ms spent
                  collecting (sleeping 20 ms between receives): fewer, fuller pulls for a little latency.
cache-metadata    ResourceStore.get_topic / get_subscription answer from a 5 s per-process cache.
no-lease          LeaseStore.open / settle do nothing (today nothing reads a lease back).
parallel-fanout   QueueStore.send sends its SendMessageBatch calls concurrently (8 threads).
pump-discover-1s  the local pump re-lists stream shards once a second, not before every poll.
direct-fanout     publish sends to the subscriptions' queues itself (S3 put, SQS sends, then the log item);
                  the stream handler skips requests already delivered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PATCHES: dict[str, Callable[[Any], None]] = {}


def patch(name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        PATCHES[name] = fn
        return fn

    return register


def apply(names: list[str], stack: Any) -> list[str]:
    unknown = [n for n in names if n not in PATCHES]
    if unknown:
        raise SystemExit(f"unknown patch(es) {unknown}; known: {sorted(PATCHES)}")
    for n in names:
        PATCHES[n](stack)
    return names


@patch("pull-until-empty")
def _pull_until_empty(stack: Any) -> None:
    from chalicelib.core import envelope, limits
    from chalicelib.service.pull import PullService

    def _receive(self: Any, rec: Any, max_messages: int, wait: int, visibility: int) -> list[Any]:
        got: list[Any] = []
        size = 0
        while len(got) < max_messages:
            want = min(10, max_messages - len(got))
            batch = self.ctx.queues.receive(rec.queue_url, want, wait if not got else 0, visibility)
            keep: list[Any] = []
            for r in batch:
                size += len(r.body) if '"d":' in r.body else envelope.decode(r.body).length
                if size > limits.MAX_PULL_RESPONSE_BYTES and (got or keep):
                    break
                keep.append(r)
            got.extend(keep)
            if len(keep) < len(batch):
                self.ctx.queues.change_visibility_batch(rec.queue_url, [(r.receipt, 0) for r in batch[len(keep):]])
                break
            if not batch:  # the only change: stop on an empty receive, not on a partial one
                break
        return got

    PullService._receive = _receive  # type: ignore[method-assign]


@patch("pull-linger")
def _pull_linger(stack: Any, linger: float = 0.1, step: float = 0.02) -> None:
    from chalicelib.core import envelope, limits
    from chalicelib.service.pull import PullService

    def _receive(self: Any, rec: Any, max_messages: int, wait: int, visibility: int) -> list[Any]:
        got: list[Any] = []
        size = 0
        first = 0.0
        while len(got) < max_messages:
            want = min(10, max_messages - len(got))
            batch = self.ctx.queues.receive(rec.queue_url, want, wait if not got else 0, visibility)
            keep: list[Any] = []
            for r in batch:
                size += len(r.body) if '"d":' in r.body else envelope.decode(r.body).length
                if size > limits.MAX_PULL_RESPONSE_BYTES and (got or keep):
                    break
                keep.append(r)
            if keep and not got:
                first = time.monotonic()
            got.extend(keep)
            if len(keep) < len(batch):
                self.ctx.queues.change_visibility_batch(rec.queue_url, [(r.receipt, 0) for r in batch[len(keep):]])
                break
            if not got:
                break
            if len(batch) < want:  # partial or empty: linger a little for more, within the budget
                if time.monotonic() - first >= linger:
                    break
                time.sleep(step)
        return got

    PullService._receive = _receive  # type: ignore[method-assign]


@patch("cache-metadata")
def _cache_metadata(stack: Any) -> None:
    from chalicelib.store.resources import ResourceStore

    ttl = 5.0
    lock = threading.Lock()
    for method in ("get_topic", "get_subscription"):
        original = getattr(ResourceStore, method)
        cache: dict[str, tuple[float, Any]] = {}

        def cached(self: Any, name: Any, _orig: Any = original, _cache: Any = cache) -> Any:
            now = time.monotonic()
            with lock:
                hit = _cache.get(name.path)
            if hit is not None and now - hit[0] < ttl:
                return hit[1]
            value = _orig(self, name)
            if value is not None:
                with lock:
                    _cache[name.path] = (now, value)
            return value

        setattr(ResourceStore, method, cached)


@patch("no-lease")
def _no_lease(stack: Any) -> None:
    from chalicelib.store.leases import LeaseStore

    LeaseStore.open = lambda self, *a, **k: None  # type: ignore[method-assign]
    LeaseStore.settle = lambda self, *a, **k: True  # type: ignore[method-assign]


@patch("parallel-fanout")
def _parallel_fanout(stack: Any) -> None:
    from chalicelib.store import aws
    from chalicelib.store.queues import SQS_BATCH, QueueStore

    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="fanout-send")
    original = QueueStore.send

    def send(self: Any, url: str, messages: Any) -> list[int]:
        if len(messages) <= SQS_BATCH:
            return list(original(self, url, messages))
        part = aws.current_part()

        def one(start: int) -> list[int]:
            with aws.part(part):
                return [start + i for i in original(self, url, messages[start : start + SQS_BATCH])]

        failed: list[int] = []
        for f in [pool.submit(one, s) for s in range(0, len(messages), SQS_BATCH)]:
            failed.extend(f.result())
        return failed

    QueueStore.send = send  # type: ignore[method-assign]


@patch("pump-discover-1s")
def _pump_discover(stack: Any) -> None:
    pump = stack.pump
    original = pump._discover
    last = [0.0]

    def discover() -> None:
        now = time.monotonic()
        if pump._iterators and now - last[0] < 1.0:
            return
        last[0] = now
        original()

    pump._discover = discover


@patch("direct-fanout")
def _direct_fanout(stack: Any) -> None:
    """Publish enqueues to the subscriptions' queues itself, between the S3 put and the log item put;
    the stream handler skips requests publish already delivered (here: a process-local set, in the
    proposal: an attribute of the log item)."""
    from chalicelib.core import payload
    from chalicelib.core.errors import Unavailable
    from chalicelib.delivery import fanout as fan
    from chalicelib.runtime import services
    from chalicelib.store.log import MessageLog

    delivered: set[str] = set()
    lock = threading.Lock()

    def append(self: Any, entry: Any, blob: bytes) -> None:
        self._s3.put_object(Bucket=self._bucket, Key=entry.key, Body=blob)
        ctx = services().ctx
        subs, _ = ctx.resources.topic_subscriptions(entry.topic)
        header, messages = payload.decode(blob)
        for sub in subs:
            if not fan.wants(sub, entry):
                continue
            out = [fan.to_outgoing(sub, entry, m, e.offset, ctx.config.inline_max_bytes)
                   for m, e in zip(messages, header.entries) if fan.wants(sub, entry, m.attributes)]
            if out and ctx.queues.send(sub.queue_url, out):
                raise Unavailable("some messages were not enqueued")
        with lock:
            delivered.add(entry.request_id)
        self._ddb.put_item(TableName=self._table, Item=entry.to_item())

    original = fan.FanOut.deliver

    def deliver(self: Any, entry: Any, subs: Any) -> int:
        with lock:
            if entry.request_id in delivered:
                return 0
        return int(original(self, entry, subs))

    MessageLog.append = append  # type: ignore[method-assign]
    fan.FanOut.deliver = deliver  # type: ignore[method-assign]
