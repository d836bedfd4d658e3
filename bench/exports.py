"""An exported million: the AWS requests an export subscription's writer makes per message, measured on moto in
process, and their price at bench/pricing.py's list prices (docs/export.md).

    python -m bench.exports [--messages 6000] [--bytes 1024]

Messages of ``--bytes`` each are published to a topic with one export subscription and fanned out (uncounted: the
same for any subscription). Then the export leg is counted, as deployed: Lambda's SQS poller receives ten at a time
(its requests are billed as ordinary SQS requests) and hands the function batches as the event source mapping
would (:func:`mapping_batch`: up to 10,000 records, within the 6 MB invocation payload); the function writes one
object per batch and deletes the batch ten at a time. The counts are scaled to a million messages.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench import pricing
from bench.environment import environment
from bench.meter import meter
from chalicelib.core.export_files import LAMBDA_MAX_BATCH, LAMBDA_MAX_PAYLOAD
from chalicelib.store.aws import Key, Tally

MILLION = 1_000_000
RECORD_OVERHEAD = 700  # bytes of a Lambda SQS record beyond its body: ids, receipt handle, attributes, ARN
ENVELOPE_OVERHEAD = 1.37  # a queue body holds the data in base64 inside the envelope's JSON (x4/3, and the fields)


@dataclass
class Measured:
    messages: int
    batches: int
    files: int
    counts: dict[Key, Tally]
    invocations: pricing.Invocations

    def calls_per_message(self) -> dict[str, float]:
        return pricing.calls_per_item(self.counts, self.messages)


def mapping_batch(message_bytes: int, max_messages: int = 0) -> int:
    """The records one invocation gets from the event source mapping with a full backlog: BatchSize (maxMessages,
    else 10,000) within Lambda's 6 MB invocation payload."""
    record = int(message_bytes * ENVELOPE_OVERHEAD) + RECORD_OVERHEAD
    return max(1, min(max_messages or LAMBDA_MAX_BATCH, LAMBDA_MAX_BATCH, LAMBDA_MAX_PAYLOAD // record))


def price_per_million(counts: Mapping[Key, Tally], invocations: pricing.Invocations, messages: int) -> dict[str, Any]:
    """Price a measurement of ``messages`` exported messages, scaled to a million: by price key, and the total."""
    return pricing.per_million(counts, "export", invocations, messages)


def _subscription(services: Any, messages: int, message_bytes: int) -> Any:
    """A topic with one export subscription, ``messages`` published and fanned out to its queue."""
    from chalicelib.api.parsing import publish_request
    from chalicelib.core import names
    from chalicelib.core.wire.export import CloudStorageConfig, TextConfig
    from chalicelib.core.wire.models import Subscription, Topic
    from chalicelib.store import aws

    aws.client("s3", services.ctx.config).create_bucket(Bucket="bench-export")
    topic = names.make("bench", "topics", "exported-topic")
    sub = names.make("bench", "subscriptions", "exported")
    services.admin.create_topic(topic, Topic())
    services.admin.create_subscription(sub, Subscription(topic=topic.path, cloud_storage_config=CloudStorageConfig(
        bucket="bench-export", text_config=TextConfig())))
    data = base64.b64encode(b"x" * message_bytes).decode()
    for start in range(0, messages, 1000):
        services.publish.publish(topic, publish_request({"messages": [{"data": data}
                                                                      for _ in range(min(1000, messages - start))]}))
    return services.ctx.resources.require_subscription(sub)


def _drain(services: Any, rec: Any, size: int) -> tuple[pricing.Invocations, int, int, int]:
    """Receive batches of ``size`` as Lambda's poller does and hand each to the export handler; returns the
    invocations, batches, files and messages."""
    from chalicelib.delivery.export import ExportDelivery
    from chalicelib.local.push_pump import lambda_record
    from chalicelib.store import aws
    from chalicelib.store.push_state import queue_arn

    config = services.ctx.config
    arn, sqs, handler = queue_arn(rec.queue_url, config.region), aws.sqs(config), ExportDelivery(services.ctx)
    invocations, batches, files, done = pricing.Invocations(), 0, 0, 0
    while True:
        got: list[Any] = []
        with aws.part("export"):  # Lambda's poller: billed SQS requests
            while len(got) < size:
                resp = sqs.receive_message(QueueUrl=rec.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=300,
                                           MessageSystemAttributeNames=["All"])
                if not resp.get("Messages"):
                    break
                got += resp["Messages"]
        if not got:
            return invocations, batches, files, done
        started = time.perf_counter()
        with aws.part("export"):
            written = handler.queue_batch(arn, [lambda_record(dict(m), arn, config.region) for m in got])
        invocations.add(time.perf_counter() - started)
        batches, files, done = batches + 1, files + len(written.files), done + len(got)


def measure(messages: int = 6_000, message_bytes: int = 1024) -> Measured:
    """Run the export handler over moto in process and count its AWS requests (setup and fan-out uncounted)."""
    from moto import mock_aws

    from chalicelib.config import Config
    from chalicelib.local.bootstrap import bootstrap
    from chalicelib.runtime import Services
    from chalicelib.service.context import Context
    from chalicelib.store import aws

    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "METRO_COUNTER_FLUSH_SECONDS": "-1"}
    with environment(env, removed=("AWS_ENDPOINT_URL",)), mock_aws():
        config = Config()
        bootstrap(config)
        services = Services.build(Context.from_config(config))
        rec = _subscription(services, messages, message_bytes)
        counter = aws.RequestCounter(meter)
        aws.count_requests(counter)
        try:
            invocations, batches, files, done = _drain(services, rec, mapping_batch(message_bytes))
        finally:
            aws.count_requests(None)
        return Measured(done, batches, files, counter.snapshot(), invocations)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Count and price the AWS requests of an exported million.")
    p.add_argument("--messages", type=int, default=6_000)
    p.add_argument("--bytes", type=int, default=1024)
    args = p.parse_args(argv)
    got = measure(args.messages, args.bytes)
    priced = price_per_million(got.counts, got.invocations, got.messages)
    print(json.dumps({"messages": got.messages, "batches": got.batches, "files": got.files,
                      "batch": mapping_batch(args.bytes), "calls_per_message": got.calls_per_message(),
                      "per_million_usd": priced}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
