"""The local push pump: plays the Lambda event source mappings of push subscription queues.

Every ``refresh`` seconds it lists the push subscriptions (one Query of the push index) and
keeps one poller thread per subscription. A poller waits out the subscription's throttle delay
(read from its stored state), receives a batch (one message while the throttle backs off,
``batch_size`` otherwise) with a short long-poll, and calls the very same handler the push
Lambda runs with a Lambda-shaped SQS event. Like Lambda, it never deletes or hands back a
message itself: the handler acks (deletes) and nacks (changes visibility); a record reported in
``batchItemFailures`` stays as the handler left it. Its receives are the mapping's, made with the push
function's role: the IAM call recorder counts them as ``push``'s (store/call_record.py).

Like the event source mapping, it scales with the backlog: a full batch starts another poller
for the subscription, up to ``push_max_concurrency`` (the mapping's maximum concurrency), and
an extra poller ends when it receives nothing. An idle subscription costs one long poll.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from chalicelib.config import Config
from chalicelib.core import names
from chalicelib.core.queueing.backoff import PushThrottle
from chalicelib.core.records import SubscriptionRecord
from chalicelib.local.refreshing import RefreshingPump
from chalicelib.service.context import Clock, Context
from chalicelib.service.push_config import token_signer
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.push_state import PushStore, queue_arn

log = logging.getLogger("metro.push_pump")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
LONG_POLL = 1  # seconds: how quickly a poller notices a config change or a stop


def lambda_record(message: dict[str, Any], arn: str, region: str) -> dict[str, Any]:
    """An SQS message as Lambda's SQS event source hands it to the function."""
    body = message["Body"]
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": dict(message.get("MessageAttributes", {})),
        "md5OfBody": message.get("MD5OfBody") or hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": region,
    }


class Source(Protocol):
    """What a poller reads from its pump (a test passes its own)."""

    @property
    def part(self) -> str: ...

    @property
    def handler(self) -> Handler: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def concurrency(self) -> int: ...

    @property
    def config(self) -> Config: ...

    @property
    def stopped(self) -> threading.Event: ...

    @property
    def push(self) -> PushStore: ...

    @property
    def sqs(self) -> Any: ...


class Poller:
    """Delivers one push subscription's queue, one batch at a time per thread: a main thread for as long as the
    subscription is push, and extra ones while there is a backlog."""

    def __init__(self, pump: Source, rec: SubscriptionRecord) -> None:
        self.pump = pump
        self.rec = rec
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"metro-push-{rec.name[-40:]}", daemon=True)
        self._extra: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _running(self) -> bool:
        return not self.stop.is_set() and not self.pump.stopped.is_set()

    def run(self) -> None:
        if self.pump.part:
            aws.set_part(self.pump.part)
        while self._running():
            try:
                self.poll_once()
            except Exception:
                log.exception("push poller for %s failed; retrying", self.rec.name)
                self.stop.wait(1.0)

    def scale_up(self) -> None:
        """One more poller thread while the backlog lasts, up to the pump's concurrency."""
        with self._lock:
            self._extra = [t for t in self._extra if t.is_alive()]
            if 1 + len(self._extra) >= self.pump.concurrency:
                return
            extra = threading.Thread(target=self._run_extra, name=f"{self.thread.name}-{len(self._extra) + 1}",
                                     daemon=True)
            self._extra.append(extra)
        extra.start()

    def _run_extra(self) -> None:
        if self.pump.part:
            aws.set_part(self.pump.part)
        try:
            while self._running() and self.poll_once():
                pass
        except Exception:  # the main thread carries on
            log.exception("extra push poller for %s failed", self.rec.name)

    def poll_once(self) -> int:
        """Wait for the throttle, receive one batch and deliver it; returns the records handled."""
        rec, pump = self.rec, self.pump
        throttle = PushThrottle(pump.push.load_throttle(rec.name))
        wait = throttle.delay(pump.clock())
        if wait > 0:
            self.stop.wait(min(wait, LONG_POLL))  # re-read: another batch (or Lambda) may have changed it
            return 0
        count = 1 if throttle.backing_off() else pump.batch_size
        with acting_as("push"):  # what the event source mapping does with the push function's role
            resp = pump.sqs.receive_message(
                QueueUrl=rec.queue_url, MaxNumberOfMessages=count, WaitTimeSeconds=LONG_POLL,
                VisibilityTimeout=rec.spec.ack_deadline, MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"])
        messages = resp.get("Messages", [])
        if not messages:
            return 0
        if len(messages) >= pump.batch_size:  # a backlog: another poller takes the next batch meanwhile
            self.scale_up()
        arn = queue_arn(rec.queue_url, pump.config.region)
        event = {"Records": [lambda_record(m, arn, pump.config.region) for m in messages]}
        pump.handler(event, None)
        return len(messages)


class PushPump(RefreshingPump):
    name = "metro-push-pump"

    def __init__(self, config: Config, handler: Handler, refresh: float = 1.0, clock: Clock = time.time,
                 part: str = "") -> None:
        self.config = config
        self.part = part  # label of the pollers' AWS requests (the benchmark counts requests by part)
        self.handler = handler
        self.refresh = refresh
        self.clock = clock
        self.batch_size = max(1, min(config.push_batch_size, 10))
        self.concurrency = max(1, min(config.push_max_concurrency, 10))
        stores = Context.from_config(config, clock)
        self.push = stores.push
        self.resources = stores.resources
        self.sqs = aws.sqs(config)
        self.stopped = threading.Event()
        self.pollers: dict[str, Poller] = {}
        token_signer(config)  # local mode: make the process's signing key now, not on the first push

    def push_subscriptions(self) -> list[SubscriptionRecord]:
        """The push subscriptions now (index first, then each record for its current settings)."""
        out = []
        for name in self.push.index_list():
            rec = self.resources.get_subscription(names.parse(name, "subscriptions"))
            if rec is not None and rec.spec.is_push and not rec.spec.detached:
                out.append(rec)
        return out

    def refresh_once(self) -> None:
        current = {rec.name: rec for rec in self.push_subscriptions()}
        for name in list(self.pollers):
            poller = self.pollers[name]
            rec = current.get(name)
            if rec is None or rec.queue_url != poller.rec.queue_url:
                poller.stop.set()
                del self.pollers[name]
            else:
                poller.rec = rec  # new settings (deadline, endpoint) take effect on the next batch
        for name, rec in current.items():
            if name not in self.pollers:
                poller = Poller(self, rec)
                self.pollers[name] = poller
                poller.thread.start()
