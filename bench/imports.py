"""An imported million: the AWS requests a Kinesis import topic makes per record, measured on moto in process, and
their price at bench/pricing.py's list prices (docs/import.md).

    python -m bench.imports [--batches 20] [--batch 100] [--bytes 1024] [--subscriptions 1]

Records of ``--bytes`` each are put into a one-shard stream and handed to the ingest handler in batches of
``--batch`` (what the event source mapping gives), then scaled to a million records. Kinesis's own charges (shard
hours, PUT payload units, or on-demand bytes) are not requests Metro makes: :func:`kinesis_per_million` prices them
apart.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench import pricing
from bench.environment import environment
from bench.meter import meter
from chalicelib.store.aws import Key, Tally

MILLION = 1_000_000
# Kinesis Data Streams list prices, us-east-1, late 2026 (not requests Metro makes; noted apart)
KINESIS_PUT_UNIT_USD = 0.014 / MILLION  # provisioned: per 25 KiB PUT payload unit
KINESIS_SHARD_HOUR_USD = 0.015  # provisioned: per shard hour (1 MiB/s or 1,000 records/s in)
KINESIS_ON_DEMAND_IN_GIB_USD = 0.08  # on-demand: per GiB written
KINESIS_ON_DEMAND_OUT_GIB_USD = 0.04  # on-demand: per GiB read
GIB = 1024**3


@dataclass
class Measured:
    records: int
    batches: int
    counts: dict[Key, Tally]
    invocations: pricing.Invocations

    def calls_per_record(self) -> dict[str, float]:
        return pricing.calls_per_item(self.counts, self.records)


def price_per_million(counts: Mapping[Key, Tally], invocations: pricing.Invocations, records: int) -> dict[str, Any]:
    """Price a measurement of ``records`` imported records, scaled to a million: by price key, and the total."""
    return pricing.per_million(counts, "ingest", invocations, records)


def kinesis_per_million(record_bytes: int, records_per_second: float = 1000.0) -> dict[str, float]:
    """Kinesis's own charge for a million records: provisioned (PUT units, and the shard hours the million takes at
    ``records_per_second`` on as few shards as carry it) and on-demand (bytes written and read once)."""
    units = MILLION * max(1, -(-record_bytes // (25 * 1024)))
    shards = max(1, -(-int(records_per_second) // 1000), -(-int(records_per_second * record_bytes) // (1024 * 1024)))
    hours = MILLION / records_per_second / 3600
    gib = MILLION * record_bytes / GIB
    return {"provisioned": units * KINESIS_PUT_UNIT_USD + shards * hours * KINESIS_SHARD_HOUR_USD,
            "on_demand": gib * (KINESIS_ON_DEMAND_IN_GIB_USD + KINESIS_ON_DEMAND_OUT_GIB_USD)}


def measure(batches: int = 20, batch: int = 100, record_bytes: int = 1024, subscriptions: int = 1) -> Measured:
    """Run the ingest handler over moto in process and count its AWS requests (setup uncounted)."""
    from moto import mock_aws

    from chalicelib.config import Config
    from chalicelib.core import ingestion, names
    from chalicelib.core.wire.ingestion import AwsKinesis, IngestionDataSourceSettings
    from chalicelib.core.wire.models import Subscription, Topic
    from chalicelib.delivery.ingest import IngestHandler
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
        kinesis = aws.client("kinesis", config)
        kinesis.create_stream(StreamName="bench", ShardCount=1)
        arn = kinesis.describe_stream_summary(StreamName="bench")["StreamDescriptionSummary"]["StreamARN"]
        topic = names.make("bench", "topics", "imported")
        services.admin.create_topic(topic, Topic(ingestion_data_source_settings=IngestionDataSourceSettings(
            aws_kinesis=AwsKinesis(stream_arn=arn))))
        for i in range(subscriptions):
            services.admin.create_subscription(names.make("bench", "subscriptions", f"sub-{i}"),
                                               Subscription(topic=topic.path))
        handler = IngestHandler(services.ctx)
        body = b"x" * record_bytes
        events = []
        for b in range(batches):
            raw = [{"PartitionKey": f"k{b}-{i}", "SequenceNumber": f"{b * batch + i + 1:020d}", "Data": body}
                   for i in range(batch)]
            events.append(ingestion.kinesis_event(arn, "shardId-000000000000", raw, config.region))
        handler.handle(events[0])  # warm: the topic and the registry cached as in a warm Lambda
        counter = aws.RequestCounter(meter)
        aws.count_requests(counter)
        invocations = pricing.Invocations()
        try:
            for event in events[1:]:
                started = time.perf_counter()
                with aws.part("ingest"):
                    handler.handle(event)
                invocations.add(time.perf_counter() - started)
        finally:
            aws.count_requests(None)
        return Measured((batches - 1) * batch, batches - 1, counter.snapshot(), invocations)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Count and price the AWS requests of an imported million.")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--bytes", type=int, default=1024)
    p.add_argument("--subscriptions", type=int, default=1)
    args = p.parse_args(argv)
    got = measure(args.batches, args.batch, args.bytes, args.subscriptions)
    priced = price_per_million(got.counts, got.invocations, got.records)
    print(json.dumps({"records": got.records, "calls_per_record": got.calls_per_record(),
                      "per_million_usd": priced, "kinesis_per_million_usd": kinesis_per_million(args.bytes)},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
