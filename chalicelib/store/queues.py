"""Per-subscription SQS queues: every call here is a batch call where SQS has one."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.errors import MetroError, NotFound
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors

_GONE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
SQS_BATCH = 10
_BACKLOG = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
SQS_MAX_WAIT = 20
SQS_MIN_RETENTION = 60
SQS_MAX_RETENTION = 14 * 24 * 3600
# SendMessageBatch calls of one fan-out run concurrently on this shared pool (botocore clients are thread-safe).
_SEND_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="metro-sqs-send")


@contextlib.contextmanager
def _queue_errors(what: str) -> Iterator[None]:
    """A queue deleted under a caller (its subscription deleted elsewhere) is the subscription's NotFound."""
    try:
        with aws_errors(what, allow=_GONE):
            yield
    except ClientError:
        raise NotFound("Subscription does not exist") from None


@dataclass(frozen=True)
class Outgoing:
    body: str
    group_id: str = ""  # FIFO queues only
    dedup_id: str = ""
    delay: int = 0


@dataclass(frozen=True)
class Received:
    body: str
    receipt: str
    receive_count: int
    sent_at: float  # epoch seconds


def queue_name(prefix: str, subscription: str, gen: int, fifo: bool) -> str:
    """SQS allows 80 characters of [A-Za-z0-9_-]: hash the subscription name."""
    digest = hashlib.sha256(subscription.encode()).hexdigest()[:40]
    name = f"{prefix[:24]}-{digest}-{gen}"
    return name + ".fifo" if fifo else name


class QueueStore:
    def __init__(self, config: Config) -> None:
        self._sqs = aws.client("sqs", config)
        self._prefix = config.queue_prefix

    def create(self, subscription: str, gen: int, fifo: bool, visibility: int, retention: float) -> str:
        attrs = {
            "VisibilityTimeout": str(visibility),
            "MessageRetentionPeriod": str(int(min(max(retention, SQS_MIN_RETENTION), SQS_MAX_RETENTION))),
            "ReceiveMessageWaitTimeSeconds": "0",
        }
        if fifo:
            attrs.update({"FifoQueue": "true", "DeduplicationScope": "messageGroup",
                          "FifoThroughputLimit": "perMessageGroupId"})
        with aws_errors("CreateQueue"):
            resp = self._sqs.create_queue(QueueName=queue_name(self._prefix, subscription, gen, fifo), Attributes=attrs)
        return str(resp["QueueUrl"])

    def set_visibility_default(self, url: str, visibility: int) -> None:
        with aws_errors("SetQueueAttributes"):
            self._sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": str(visibility)})

    def delete(self, url: str) -> None:
        try:
            with aws_errors("DeleteQueue", allow=_GONE):
                self._sqs.delete_queue(QueueUrl=url)
        except ClientError:  # already gone is fine
            pass

    def send(self, url: str, messages: Sequence[Outgoing]) -> list[int]:
        """Send in batches of 10; return the indexes of messages that failed."""
        return self.send_all([(url, messages)])[0]

    def send_all(self, jobs: Sequence[tuple[str, Sequence[Outgoing]]]) -> list[list[int]]:
        """Send every job's messages, ten per SendMessageBatch, batches concurrently.

        A FIFO queue's batches go one after another (so each message group keeps its order), and
        after a failed batch the rest of that job is not sent. Returns, per job, the indexes of its
        messages that were not enqueued (a failed call counts all its messages).
        """
        tasks: list[tuple[int, list[int]]] = []
        for j, (url, msgs) in enumerate(jobs):
            starts = list(range(0, len(msgs), SQS_BATCH))
            if url.endswith(".fifo"):
                tasks.append((j, starts))
            else:
                tasks.extend((j, [start]) for start in starts)

        def run(task: tuple[int, list[int]]) -> list[int]:
            url, msgs = jobs[task[0]]
            for n, start in enumerate(task[1]):
                bad = self._send_batch(url, msgs, start)
                if bad and len(task[1]) > 1:
                    rest = [i for s in task[1][n + 1 :] for i in range(s, min(s + SQS_BATCH, len(msgs)))]
                    return bad + rest
                if bad:
                    return bad
            return []

        results = [run(t) for t in tasks] if len(tasks) <= 1 else list(_SEND_POOL.map(aws.in_callers_part(run), tasks))
        failed: list[list[int]] = [[] for _ in jobs]
        for (j, _), bad in zip(tasks, results):
            failed[j].extend(bad)
        return failed

    def _send_batch(self, url: str, messages: Sequence[Outgoing], start: int) -> list[int]:
        entries = []
        chunk = messages[start : start + SQS_BATCH]
        for i, m in enumerate(chunk, start):
            entry: dict[str, Any] = {"Id": str(i), "MessageBody": m.body}
            if m.group_id:
                entry["MessageGroupId"] = m.group_id
                entry["MessageDeduplicationId"] = m.dedup_id
            if m.delay:
                entry["DelaySeconds"] = m.delay
            entries.append(entry)
        try:
            with aws_errors("SendMessageBatch"):
                resp = self._sqs.send_message_batch(QueueUrl=url, Entries=entries)
        except MetroError:
            return list(range(start, start + len(chunk)))
        return [int(f["Id"]) for f in resp.get("Failed", [])]

    def backlog(self, url: str) -> int:
        """Messages in the queue, waiting or leased (SQS's approximate counts); 0 if the queue is gone."""
        try:
            with aws_errors("SQS GetQueueAttributes", allow=_GONE):
                attrs = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(_BACKLOG))["Attributes"]
        except ClientError:
            return 0
        return sum(int(attrs.get(name, 0)) for name in _BACKLOG)

    def receive(self, url: str, max_messages: int, wait: int, visibility: int) -> list[Received]:
        with _queue_errors("ReceiveMessage"):
            resp = self._sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(max_messages, SQS_BATCH),
                WaitTimeSeconds=min(wait, SQS_MAX_WAIT),
                VisibilityTimeout=visibility,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            )
        return [
            Received(
                body=m["Body"],
                receipt=m["ReceiptHandle"],
                receive_count=int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
                sent_at=int(m.get("Attributes", {}).get("SentTimestamp", "0")) / 1000,
            )
            for m in resp.get("Messages", [])
        ]

    def delete_batch(self, url: str, receipts: Sequence[str]) -> list[int]:
        """Delete messages by receipt handle; return the indexes that failed."""
        failed: list[int] = []
        for start in range(0, len(receipts), SQS_BATCH):
            entries = [{"Id": str(i), "ReceiptHandle": r}
                       for i, r in enumerate(receipts[start : start + SQS_BATCH], start)]
            with _queue_errors("DeleteMessageBatch"):
                resp = self._sqs.delete_message_batch(QueueUrl=url, Entries=entries)
            failed.extend(int(f["Id"]) for f in resp.get("Failed", []))
        return failed

    def change_visibility_batch(self, url: str, changes: Sequence[tuple[str, int]]) -> list[int]:
        """Set the visibility timeout of messages by receipt handle; return the indexes that failed."""
        failed: list[int] = []
        for start in range(0, len(changes), SQS_BATCH):
            entries = [{"Id": str(i), "ReceiptHandle": r, "VisibilityTimeout": t}
                       for i, (r, t) in enumerate(changes[start : start + SQS_BATCH], start)]
            with _queue_errors("ChangeMessageVisibilityBatch"):
                resp = self._sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)
            failed.extend(int(f["Id"]) for f in resp.get("Failed", []))
        return failed
