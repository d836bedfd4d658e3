"""Baselines on the same emulator, in the same run: raw SQS, and SNS -> SQS fan-out.

raw SQS : one queue; SendMessageBatch of 10 (or as many as fit 256 KiB); ReceiveMessage of 10 with a
          long poll; DeleteMessageBatch. Consumers run concurrently with producers.
SNS->SQS: one topic with N raw-delivery SQS subscriptions; PublishBatch of 10; the same consumers on
          each queue.
Bodies are text of exactly the scenario's message size; each starts with the producer's send time
(``"{epoch:.6f}|"``) so the latency is measured like Metro's.
"""

from __future__ import annotations

import json
import os
import string
import time
from typing import Any

from bench.pricing import google_message_bytes
from bench.workload import ConsumeFactory, Publish, PublishFactory, Pulled
from chalicelib.store import aws

SQS_BATCH_BYTES = 256 * 1024
_ALPHABET = (string.ascii_letters + string.digits).encode()


def per_request(size: int) -> int:
    """Messages per SendMessageBatch/PublishBatch: 10, or fewer when 10 bodies exceed 256 KiB."""
    return max(1, min(10, SQS_BATCH_BYTES // size))


def _body(size: int, ts: str, seed: int) -> str:
    head = ts + "|"
    filler = bytes(_ALPHABET[b % len(_ALPHABET)] for b in os.urandom(64)).decode()
    return head + (filler * (size // 64 + 1))[: max(0, size - len(head))]


def sqs_queue(stack: Any, name: str) -> str:
    sqs = stack.client("sqs")
    return str(sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "20"})["QueueUrl"])


def sqs_publisher(stack: Any, url: str, size: int) -> PublishFactory:
    def factory() -> Publish:
        aws.set_part("baseline")
        sqs = stack.client("sqs")

        def publish(index: int, count: int) -> int:
            ts = f"{time.time():.6f}"
            entries = [{"Id": str(i), "MessageBody": _body(size, ts, index + i)} for i in range(count)]
            resp = sqs.send_message_batch(QueueUrl=url, Entries=entries)
            if resp.get("Failed"):
                raise RuntimeError(f"{len(resp['Failed'])} messages failed: {resp['Failed'][:1]}")
            return count * google_message_bytes(size, {})

        return publish

    return factory


def sns_topic(stack: Any, name: str, queues: list[str]) -> str:
    sns, sqs = stack.client("sns"), stack.client("sqs")
    arn = str(sns.create_topic(Name=name)["TopicArn"])
    for url in queues:
        qarn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        statement = {"Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
                     "Resource": qarn}
        policy = {"Version": "2012-10-17", "Statement": [statement]}
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
        sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=qarn, Attributes={"RawMessageDelivery": "true"})
    return arn


def sns_publisher(stack: Any, arn: str, size: int) -> PublishFactory:
    def factory() -> Publish:
        aws.set_part("baseline")
        sns = stack.client("sns")

        def publish(index: int, count: int) -> int:
            ts = f"{time.time():.6f}"
            entries = [{"Id": str(i), "Message": _body(size, ts, index + i)} for i in range(count)]
            resp = sns.publish_batch(TopicArn=arn, PublishBatchRequestEntries=entries)
            if resp.get("Failed"):
                raise RuntimeError(f"{len(resp['Failed'])} messages failed: {resp['Failed'][:1]}")
            return count * google_message_bytes(size, {})

        return publish

    return factory


def sqs_consumer(stack: Any, urls: dict[str, str], size: int, wait_seconds: int) -> ConsumeFactory:
    """``urls``: subscription label -> queue URL."""

    def factory(sub: str) -> Any:
        aws.set_part("baseline")
        sqs = stack.client("sqs")
        url = urls[sub]

        def consume() -> Pulled:
            resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds)
            now = time.time()
            out = Pulled()
            messages = resp.get("Messages", [])
            if not messages:
                return out
            for m in messages:
                body = m["Body"]
                ts, _, _ = body.partition("|")
                out.ids.append(m["MessageId"])
                out.latencies.append(now - float(ts))
                out.google_bytes += google_message_bytes(len(body.encode()), {})
                out.bad += int(len(body.encode()) != size)
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
            deleted = sqs.delete_message_batch(QueueUrl=url, Entries=entries)
            if deleted.get("Failed"):
                raise RuntimeError(f"{len(deleted['Failed'])} deletes failed")
            return out

        return consume

    return factory
