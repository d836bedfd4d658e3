"""The local export pump: plays the event source mappings of export subscription queues (docs/export.md).

Every ``refresh`` seconds it lists the export subscriptions (one Query of the push index, where they are
indexed as not pushing) and keeps one poller thread per subscription. A poller receives up to ten messages at a
time, holding them invisible for the batch's whole life (maxDuration and a margin), and gathers them into one
batch until ``maxMessages``, ``maxBytes`` (counted by queue body), Lambda's 10,000 records or 6 MB, or
``maxDuration`` since the batch's first message (the pump's injected clock) is reached; then it calls the very
same handler the export Lambda runs with a Lambda-shaped SQS event. Like Lambda, it never deletes or hands back a
message itself: the handler does. Its receives are the mapping's, made with the export function's role.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib.config import Config
from chalicelib.core import export_files, names
from chalicelib.core.records import SubscriptionRecord
from chalicelib.local.push_pump import lambda_record
from chalicelib.local.refreshing import RefreshingPump
from chalicelib.service.context import Clock, Context
from chalicelib.service.exports import is_export
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.push_state import queue_arn

log = logging.getLogger("metro.export_pump")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
LONG_POLL = 1  # seconds
HOLD_MARGIN = 60  # seconds a batch's messages stay invisible beyond maxDuration (the write and its retries)


@dataclass
class Pending:
    """The batch a poller is gathering."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    size: int = 0
    started: float = 0.0


class ExportPoller:
    def __init__(self, pump: ExportPump, rec: SubscriptionRecord) -> None:
        self.pump = pump
        self.rec = rec
        self.stop = threading.Event()
        self.pending = Pending()
        self.thread = threading.Thread(target=self.run, name=f"metro-export-{rec.name[-40:]}", daemon=True)

    def run(self) -> None:
        while not self.stop.is_set() and not self.pump.stopped.is_set():
            try:
                self.poll_once()
            except Exception:
                log.exception("export poller for %s failed; retrying", self.rec.name)
                self.stop.wait(1.0)

    def settings(self) -> export_files.Settings:
        cfg = self.rec.spec.cloud_storage_config
        assert cfg is not None
        return export_files.settings(cfg)

    def poll_once(self, wait: int = LONG_POLL) -> int:
        """One receive into the pending batch, then the batch handed to the handler if it is due; returns the
        messages handed over (0 while it gathers)."""
        s = self.settings()
        room = min(10, export_files.batch_size(s) - len(self.pending.messages))
        if room > 0:
            with acting_as("export"):  # what the event source mapping does with the export function's role
                resp = self.pump.sqs.receive_message(
                    QueueUrl=self.rec.queue_url, MaxNumberOfMessages=room, WaitTimeSeconds=wait,
                    VisibilityTimeout=int(s.max_seconds) + HOLD_MARGIN, MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"])
            got: list[dict[str, Any]] = [dict(m) for m in resp.get("Messages", [])]
            if got and not self.pending.messages:
                self.pending.started = self.pump.clock()
            self.pending.messages.extend(got)
            self.pending.size += sum(len(m["Body"]) for m in got)
        if not self.due(s):
            return 0
        batch, self.pending = self.pending.messages, Pending()
        arn = queue_arn(self.rec.queue_url, self.pump.config.region)
        self.pump.handler({"Records": [lambda_record(m, arn, self.pump.config.region) for m in batch]}, None)
        return len(batch)

    def due(self, s: export_files.Settings) -> bool:
        p = self.pending
        if not p.messages:
            return False
        return (export_files.batch_full(s, len(p.messages), p.size) or len(p.messages) >= export_files.batch_size(s)
                or p.size >= export_files.LAMBDA_MAX_PAYLOAD - 256 * 1024
                or self.pump.clock() - p.started >= s.max_seconds)


class ExportPump(RefreshingPump):
    name = "metro-export-pump"

    def __init__(self, config: Config, handler: Handler, refresh: float = 1.0, clock: Clock = time.time) -> None:
        self.config = config
        self.handler = handler
        self.refresh = refresh
        self.clock = clock
        stores = Context.from_config(config, clock)
        self.push = stores.push
        self.resources = stores.resources
        self.sqs = aws.sqs(config)
        self.stopped = threading.Event()
        self.pollers: dict[str, ExportPoller] = {}

    def export_subscriptions(self) -> list[SubscriptionRecord]:
        out = []
        for name in self.push.index_list(push_only=False):
            rec = self.resources.get_subscription(names.parse(name, "subscriptions"))
            if rec is not None and is_export(rec.spec):
                out.append(rec)
        return out

    def refresh_once(self, start: bool = True) -> None:
        current = {rec.name: rec for rec in self.export_subscriptions()}
        for name in list(self.pollers):
            poller = self.pollers[name]
            rec = current.get(name)
            if rec is None or rec.queue_url != poller.rec.queue_url:
                poller.stop.set()
                del self.pollers[name]
            else:
                poller.rec = rec
        for name, rec in current.items():
            if name not in self.pollers:
                poller = ExportPoller(self, rec)
                self.pollers[name] = poller
                if start:
                    poller.thread.start()
