"""The price of an exported million (bench/exports.py): the mapping's batch, and requests priced at bench/pricing.py's
list prices, scaled to a million."""

from __future__ import annotations

import pytest

from bench import exports, pricing
from chalicelib.store.aws import Tally


def test_the_mapping_batch_is_bounded_by_the_invocation_payload_and_batch_size() -> None:
    assert exports.mapping_batch(1024) == 6 * 1024 * 1024 // (int(1024 * 1.37) + 700)  # about 3,000
    # small messages: a record's own ~700 bytes (ids, receipt handle, attributes) bound it below Lambda's 10,000
    assert exports.mapping_batch(10) == 6 * 1024 * 1024 // (13 + 700) < 10_000
    assert exports.mapping_batch(1024, max_messages=1000) == 1000  # maxMessages is the mapping's BatchSize
    assert exports.mapping_batch(10 * 1024 * 1024) == 1  # one huge message still makes a batch


def test_a_batch_of_3000_priced_per_million() -> None:
    # one invocation of 3,000 messages: 300 receives and 300 deletes of ten, one PutObject, one counter write
    counts = {
        ("export", "sqs", "ReceiveMessage"): Tally(calls=300, units={"billed": 300.0}),
        ("export", "sqs", "DeleteMessageBatch"): Tally(calls=300, units={"billed": 300.0}),
        ("export", "s3", "PutObject"): Tally(calls=1, units={"put_class": 1.0}),
        ("export", "dynamodb", "UpdateItem"): Tally(calls=1, units={"wu": 1.0}),
    }
    inv = pricing.Invocations()
    inv.add(0.0)
    priced = exports.price_per_million(counts, inv, 3000)
    by = priced["by_price"]
    assert by["sqs_request"] == pytest.approx(200_000 * 0.40 / 1e6)  # 0.2 requests a message
    assert by["s3_put_class"] == pytest.approx(1e6 / 3000 * 0.005 / 1000)
    assert by["lambda_invocation"] == pytest.approx(1e6 / 3000 * 0.20 / 1e6)
    assert priced["total"] == pytest.approx(sum(by.values()))
    assert 0.08 < priced["total"] < 0.1  # SQS is nearly all of it
