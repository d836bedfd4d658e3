"""Per-subscription SQS queues: every call here is a batch call where SQS has one.

Sends keep within SQS's limits (core/queueing/sqs_limits.py): batches packed by count and bytes, bodies escaped,
group and deduplication ids made valid, so a message Google accepts is one SQS accepts.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.config import Config
from chalicelib.core.errors import NotFound
from chalicelib.core.queueing import sqs_batches
from chalicelib.core.queueing.sqs_batches import Outgoing
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, code_of
from chalicelib.store.workers import Workers

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import (
        ChangeMessageVisibilityBatchRequestEntryTypeDef,
        DeleteMessageBatchRequestEntryTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )

__all__ = ["Outgoing", "QueueStore", "Received", "SendResult", "queue_name"]

log = logging.getLogger(__name__)

QUEUE_GONE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
# Whole-call errors that refuse what was sent (the last part of the code): narrowed down entry by entry.
_CONTENT_REFUSALS = {"InvalidParameterValue", "InvalidMessageContents", "BatchRequestTooLong",
                     "InvalidParameterValueException", "InvalidMessageContentsException",
                     "BatchRequestTooLongException"}
SQS_BATCH = 10
SEND_ROUNDS = 4  # entries that failed for a passing reason are sent again this often, 50 ms doubling
SEND_BACKOFF = 0.05
_BACKLOG: tuple[QueueAttributeNameType, ...] = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
SQS_MAX_WAIT = 20
DRAIN_MISSES = 3  # empty receives in a row (with messages still counted) before a drain stops
SQS_MIN_RETENTION = 60
SQS_MAX_RETENTION = 14 * 24 * 3600


@contextlib.contextmanager
def _queue_errors(what: str) -> Iterator[None]:
    """A queue deleted under a caller (its subscription deleted elsewhere) is the subscription's NotFound."""
    try:
        with aws_errors(what, allow=QUEUE_GONE):
            yield
    except ClientError:
        raise NotFound("Subscription does not exist") from None


@dataclass
class SendResult:
    """Per job of :meth:`QueueStore.send_all`: indexes not enqueued (worth another try) and refused ones."""

    failed: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)


@dataclass
class _Outcome:
    retry: list[int] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)
    final: bool = False  # no point sending again now (the queue is gone)


def _passing(code: str) -> bool:
    """A per-entry sender fault that may pass: throttling, or the queue's KMS key (not the message)."""
    return "Throttl" in code or code.startswith("Kms") or code.endswith("OverLimit")


@dataclass(frozen=True)
class Received:
    body: str
    receipt: str
    receive_count: int
    sent_at: float  # epoch seconds


def _retention_period(seconds: float) -> str:
    return str(int(min(max(seconds, SQS_MIN_RETENTION), SQS_MAX_RETENTION)))


def queue_name(prefix: str, subscription: str, gen: int, fifo: bool) -> str:
    """SQS allows 80 characters of [A-Za-z0-9_-]: hash the subscription name."""
    digest = hashlib.sha256(subscription.encode()).hexdigest()[:40]
    name = f"{prefix[:24]}-{digest}-{gen}"
    return name + ".fifo" if fifo else name


class QueueStore:
    def __init__(self, config: Config, workers: Workers, client: SQSClient | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._sqs = client if client is not None else aws.sqs(config)
        self._prefix = config.queue_prefix
        self._sleep = sleep
        self._workers = workers  # the SendMessageBatch calls of one fan-out run concurrently on it

    def create(self, subscription: str, gen: int, fifo: bool, visibility: int, retention: float) -> str:
        attrs: dict[QueueAttributeNameType, str] = {
            "VisibilityTimeout": str(visibility),
            "MessageRetentionPeriod": _retention_period(retention),
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

    def set_retention(self, url: str, retention: float) -> None:
        with aws_errors("SetQueueAttributes"):
            self._sqs.set_queue_attributes(QueueUrl=url, Attributes={"MessageRetentionPeriod":
                                                                     _retention_period(retention)})

    def delete(self, url: str) -> None:
        try:
            with aws_errors("DeleteQueue", allow=QUEUE_GONE):
                self._sqs.delete_queue(QueueUrl=url)
        except ClientError:  # already gone is fine
            pass

    def send(self, url: str, messages: Sequence[Outgoing]) -> SendResult:
        """Send ``messages`` to one queue (see :meth:`send_all`)."""
        return self.send_all([(url, messages)])[0]

    def send_all(self, jobs: Sequence[tuple[str, Sequence[Outgoing]]]) -> list[SendResult]:
        """Send every job's messages in SendMessageBatch calls within SQS's limits, calls concurrently.

        Batches are packed by count and bytes (core/queueing/sqs_batches.py). A FIFO queue's batches go one after
        another (so each message group keeps its order), and after a batch that still fails the rest of
        that job is not sent. Entries SQS fails for a passing reason are sent again, alone, a few times;
        the ones that succeeded are not. Returns, per job, the indexes of its messages not enqueued
        (``failed``: worth a later try) and of those SQS refused as invalid (``dropped``: never
        enqueueable; logged here).
        """
        tasks: list[tuple[int, list[list[int]]]] = []
        for j, (url, msgs) in enumerate(jobs):
            batches = sqs_batches.plan(sqs_batches.body_sizes(msgs))
            if url.endswith(".fifo"):
                tasks.append((j, batches))
            else:
                tasks.extend((j, [batch]) for batch in batches)

        def run(task: tuple[int, list[list[int]]]) -> SendResult:
            url, msgs = jobs[task[0]]
            return self._send_in_turn(url, msgs, task[1])

        results = self._workers.map(aws.in_callers_part(run), tasks)
        out = [SendResult() for _ in jobs]
        for (j, _), result in zip(tasks, results):
            out[j].failed.extend(result.failed)
            out[j].dropped.extend(result.dropped)
        return out

    def _send_in_turn(self, url: str, msgs: Sequence[Outgoing], batches: list[list[int]]) -> SendResult:
        result = SendResult()
        for n, batch in enumerate(batches):
            failed, dropped = self._send_batch(url, msgs, batch)
            result.dropped.extend(dropped)
            if failed:
                result.failed.extend(failed + [i for later in batches[n + 1 :] for i in later])
                break
        return result

    def _send_batch(self, url: str, msgs: Sequence[Outgoing], batch: list[int]) -> tuple[list[int], list[int]]:
        """One planned batch, its passing failures sent again: (indexes failed, indexes refused)."""
        pending, dropped = batch, []
        for round_no in range(SEND_ROUNDS + 1):
            outcome = self._call(url, msgs, pending)
            dropped.extend(outcome.refused)
            pending = outcome.retry
            if not pending or outcome.final or round_no == SEND_ROUNDS:
                break
            self._sleep(SEND_BACKOFF * 2**round_no)
        return pending, dropped

    def _call(self, url: str, msgs: Sequence[Outgoing], idxs: list[int]) -> _Outcome:
        entries = cast("list[SendMessageBatchRequestEntryTypeDef]", [sqs_batches.entry(str(i), msgs[i]) for i in idxs])
        try:
            resp = self._sqs.send_message_batch(QueueUrl=url, Entries=entries)
        except ClientError as exc:
            return self._call_failed(url, msgs, idxs, exc)
        except BotoCoreError as exc:
            log.warning("SendMessageBatch to %s failed: %s", url, exc)
            return _Outcome(retry=idxs)
        outcome = _Outcome()
        for failure in resp.get("Failed", []):
            index = int(failure["Id"])
            if failure.get("SenderFault") and not _passing(str(failure.get("Code", ""))):
                log.error("SQS refused message %s for %s: %s %s", index, url, failure.get("Code"),
                          failure.get("Message", ""))
                outcome.refused.append(index)
            else:
                outcome.retry.append(index)
        return outcome

    def _call_failed(self, url: str, msgs: Sequence[Outgoing], idxs: list[int], exc: ClientError) -> _Outcome:
        """A whole call failed: a refusal of content is narrowed down entry by entry, anything else retried."""
        code = code_of(exc)
        log.warning("SendMessageBatch to %s failed: %s", url, exc)
        if code in QUEUE_GONE:
            return _Outcome(retry=idxs, final=True)
        if code.rsplit(".", 1)[-1] not in _CONTENT_REFUSALS:
            return _Outcome(retry=idxs)
        if len(idxs) == 1:
            log.error("SQS refused message %s for %s: %s", idxs[0], url, code)
            return _Outcome(refused=idxs)
        outcome = _Outcome()
        for i in idxs:
            single = self._call(url, msgs, [i])
            outcome.retry.extend(single.retry)
            outcome.refused.extend(single.refused)
        return outcome

    def backlog(self, url: str) -> int:
        """Messages in the queue, waiting or leased (SQS's approximate counts); 0 if the queue is gone."""
        return sum(self.counts(url))

    def drain(self, url: str, hold: int) -> Iterator[list[Received]]:
        """Every visible message of a queue, ten per ReceiveMessage, each hidden for ``hold`` seconds.

        Ends when a receive comes back empty and the queue counts no visible message (a short poll of a
        standard queue may miss messages that are there). Messages leased by a subscriber are not visible.
        """
        misses = 0
        while misses < DRAIN_MISSES:
            batch = self.receive(url, SQS_BATCH, 0, hold)
            if batch:
                misses = 0
                yield batch
                continue
            misses += 1
            if self.visible(url) == 0:
                return

    def visible(self, url: str) -> int:
        """Messages waiting to be received (SQS's approximate count)."""
        with _queue_errors("SQS GetQueueAttributes"):
            attrs = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attrs["Attributes"].get("ApproximateNumberOfMessages", "0"))

    def counts(self, url: str) -> tuple[int, int]:
        """(waiting, in flight): SQS's approximate counts of the queue; (0, 0) if the queue is gone."""
        try:
            with aws_errors("SQS GetQueueAttributes", allow=QUEUE_GONE):
                attrs = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(_BACKLOG))["Attributes"]
        except ClientError:
            return 0, 0
        return int(attrs.get(_BACKLOG[0], "0")), int(attrs.get(_BACKLOG[1], "0"))

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
        """Delete messages by receipt handle; return the indexes that failed. Entries SQS failed on its side
        (not a sender fault, e.g. an InternalError) are deleted again, up to SEND_ROUNDS times: an ack answered
        OK must not leave its message to come back."""
        failed: list[int] = []
        for start in range(0, len(receipts), SQS_BATCH):
            pending = list(range(start, min(start + SQS_BATCH, len(receipts))))
            for round_no in range(SEND_ROUNDS + 1):
                refused, pending = self._delete(url, receipts, pending)
                failed.extend(refused)
                if not pending or round_no == SEND_ROUNDS:
                    break
                self._sleep(SEND_BACKOFF * 2**round_no)
            failed.extend(pending)
        return sorted(failed)

    def _delete(self, url: str, receipts: Sequence[str], idxs: list[int]) -> tuple[list[int], list[int]]:
        """One DeleteMessageBatch: (indexes refused for good, indexes worth another try)."""
        entries: list[DeleteMessageBatchRequestEntryTypeDef] = [{"Id": str(i), "ReceiptHandle": receipts[i]}
                                                                for i in idxs]
        with _queue_errors("DeleteMessageBatch"):
            resp = self._sqs.delete_message_batch(QueueUrl=url, Entries=entries)
        refused: list[int] = []
        again: list[int] = []
        for failure in resp.get("Failed", []):
            (refused if failure.get("SenderFault") else again).append(int(failure["Id"]))
        return refused, again

    def change_visibility_batch(self, url: str, changes: Sequence[tuple[str, int]]) -> list[int]:
        """Set the visibility timeout of messages by receipt handle; return the indexes that failed."""
        failed: list[int] = []
        for start in range(0, len(changes), SQS_BATCH):
            entries: list[ChangeMessageVisibilityBatchRequestEntryTypeDef] = [
                {"Id": str(i), "ReceiptHandle": r, "VisibilityTimeout": t}
                       for i, (r, t) in enumerate(changes[start : start + SQS_BATCH], start)]
            with _queue_errors("ChangeMessageVisibilityBatch"):
                resp = self._sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)
            failed.extend(int(f["Id"]) for f in resp.get("Failed", []))
        return failed
