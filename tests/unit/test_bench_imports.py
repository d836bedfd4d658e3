"""The price of an imported million (bench/imports.py): requests priced at bench/pricing.py's list prices, scaled."""

from __future__ import annotations

import pytest

from bench import imports, pricing
from chalicelib.store.aws import Tally


def test_a_batch_of_100_priced_per_million() -> None:
    # one batch of 100 records: a checkpoint read, two checkpoint writes, the log item, the subscriptions' Query, one
    # S3 object and one SQS batch of two 64 KiB chunks
    counts = {
        ("ingest", "dynamodb", "GetItem"): Tally(calls=1, units={"ru": 1.0}),
        ("ingest", "dynamodb", "UpdateItem"): Tally(calls=2, units={"wu": 2.0}),
        ("ingest", "dynamodb", "PutItem"): Tally(calls=1, units={"wu": 1.0}),
        ("ingest", "dynamodb", "Query"): Tally(calls=1, units={"ru": 1.0}),
        ("ingest", "s3", "PutObject"): Tally(calls=1, units={"put_class": 1.0}),
        ("ingest", "sqs", "SendMessageBatch"): Tally(calls=1, units={"billed": 2.0}),
    }
    inv = pricing.Invocations()
    inv.add(0.0)
    priced = imports.price_per_million(counts, inv, 100)
    by = priced["by_price"]
    assert by["s3_put_class"] == pytest.approx(10_000 * 0.005 / 1000)
    assert by["ddb_write_unit"] == pytest.approx(30_000 * 0.625 / 1e6)
    assert by["ddb_read_unit"] == pytest.approx(20_000 * 0.125 / 1e6)
    assert by["sqs_request"] == pytest.approx(20_000 * 0.40 / 1e6)
    assert by["lambda_invocation"] == pytest.approx(10_000 * 0.20 / 1e6)
    assert priced["total"] == pytest.approx(sum(by.values()))
    assert priced["quantities"]["s3_put"] == pytest.approx(10_000)


def test_kinesis_own_cost_is_apart_and_grows_with_record_size() -> None:
    small, large = imports.kinesis_per_million(1024), imports.kinesis_per_million(30 * 1024)
    assert small["provisioned"] == pytest.approx(0.014 + 1000 / 3600 * 0.015)  # one PUT unit each, one shard
    assert large["provisioned"] > small["provisioned"] and large["on_demand"] > small["on_demand"]
    assert small["on_demand"] == pytest.approx(1e6 * 1024 / 1024**3 * 0.12)
