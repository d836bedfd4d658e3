"""bench/pricing.py, which turns counted requests into every cost figure: the list prices against the design's
(us-east-1, late 2026), and the arithmetic of small windows worked out by hand."""

from __future__ import annotations

import pytest

from bench import meter, pricing
from bench.pricing import PRICES, Invocations, cost, request_cost
from chalicelib.store.aws import Tally

# Dollars per unit, as the design states them (DESIGN.md section 4: API Gateway REST $3.50 per million requests,
# Lambda $0.20 per million invocations, S3 $0.005 per 1,000 PUTs and $0.0004 per 1,000 GETs, DynamoDB on-demand
# $0.625 per million write units and $0.125 per million read units, SQS $0.40 per million requests (FIFO $0.50),
# Google Pub/Sub $40 per TiB).
DESIGN = {
    "apigw_rest": 3.50 / 1e6,
    "lambda_invocation": 0.20 / 1e6,
    "s3_put_class": 0.005 / 1e3,
    "s3_get_class": 0.0004 / 1e3,
    "ddb_write_unit": 0.625 / 1e6,
    "ddb_read_unit": 0.125 / 1e6,
    "sqs_request": 0.40 / 1e6,
    "sqs_fifo_request": 0.50 / 1e6,
    "google_tib": 40.0 / 1024**4,
}
# The design names no figure for these: AWS's list prices (docs/decisions/cost-model.md).
LAMBDA_GB_S = 0.0000166667
# The default front door, an API Gateway HTTP API: $1.00 per million requests (each started 512 KB one).
OTHERS = {"lambda_gb_s": LAMBDA_GB_S, "sns_publish": 0.50 / 1e6, "ddb_streams_lambda": 0.0, "apigw_http": 1.00 / 1e6}


def test_every_price_is_the_list_price() -> None:
    assert set(PRICES) == set(DESIGN) | set(OTHERS)
    for key, each in {**DESIGN, **OTHERS}.items():
        assert PRICES[key].each == pytest.approx(each, rel=1e-12, abs=0.0), key
    assert pricing.REGION == "us-east-1" and pricing.LAMBDA_MEMORY_GB == 0.5


def ten(**units: float) -> Tally:
    """Ten calls with these units (and no measured time)."""
    return Tally(10, 10, 0, dict(units))


def test_a_thousand_messages_cost_what_the_hand_computation_says() -> None:
    # 1,000 messages: 10 publishes of 100, 10 pulls of 100, 10 acknowledges; each handler 100 ms measured locally.
    counts = {("api:publish", "s3", "PutObject"): ten(put_class=10), ("api:publish", "dynamodb", "PutItem"): ten(wu=10),
              ("api:publish", "sqs", "SendMessageBatch"): ten(billed=10),
              ("api:pull", "sqs", "ReceiveMessage"): ten(billed=10),
              ("api:acknowledge", "sqs", "DeleteMessageBatch"): ten(billed=10)}
    api = {verb: Invocations(10, 1000.0) for verb in ("publish", "pull", "acknowledge")}
    report = cost(counts, api)
    # Duration model: the measured time (no AWS time measured here) + 25 ms per PutObject, 5 per DynamoDB call,
    # 10 per SQS call + 0.5 ms of rounding per invocation: publish 1000 + 250 + 50 + 100 + 5, pull and
    # acknowledge 1000 + 100 + 5 each: 3,615 ms at 0.5 GB.
    expected = {
        "apigw_http": 30 * 1.00 / 1e6,
        "lambda_invocation": 30 * 0.20 / 1e6,
        "lambda_gb_s": 3.615 * 0.5 * LAMBDA_GB_S,
        "s3_put_class": 10 * 0.005 / 1e3,
        "ddb_write_unit": 10 * 0.625 / 1e6,
        "sqs_request": 30 * 0.40 / 1e6,
    }
    assert report.by_price == pytest.approx(expected, rel=1e-9)
    assert report.total == pytest.approx(sum(expected.values()), rel=1e-9)
    assert report.per_million(1000) == pytest.approx(0.134375, rel=1e-4)  # $0.134 per million messages
    assert report.per_million(1000) == pytest.approx(report.total * 1000, rel=1e-12)
    local = report.total - expected["lambda_gb_s"] + 3.0 * 0.5 * LAMBDA_GB_S  # the 3,000 ms measured instead
    assert report.total_local_durations == pytest.approx(local, rel=1e-9)
    assert report.requests == pytest.approx({
        "apigw_requests": 30, "lambda_invocations": 30, "lambda_gb_s": 1.8075, "lambda_gb_s_local": 1.5,
        "s3_put": 10, "s3_get": 0, "ddb_wu": 10, "ddb_ru": 0, "sqs_billed": 30, "sqs_fifo_billed": 0,
        "sns_billed": 0})
    assert cost({}, {}).per_million(0) == 0.0


def test_the_designs_sketch_of_a_million_1_kib_messages() -> None:
    """DESIGN.md section 4: API Gateway 30k requests ($0.105), S3 10k PUT + 10k GET ($0.054), DynamoDB ~70k write
    units (~$0.045), SQS ~300k requests ($0.12)."""
    k = 1000
    counts = {("api:publish", "s3", "PutObject"): Tally(10 * k, units={"put_class": 10 * k}),
              ("api:pull", "s3", "GetObject"): Tally(10 * k, units={"get_class": 10 * k}),
              ("api:publish", "dynamodb", "PutItem"): Tally(10 * k, units={"wu": 10 * k}),
              ("api:pull", "dynamodb", "PutItem"): Tally(30 * k, units={"wu": 30 * k}),
              ("api:acknowledge", "dynamodb", "UpdateItem"): Tally(30 * k, units={"wu": 30 * k}),
              ("api:publish", "sqs", "SendMessageBatch"): Tally(100 * k, units={"billed": 100 * k}),
              ("api:pull", "sqs", "ReceiveMessage"): Tally(100 * k, units={"billed": 100 * k}),
              ("api:acknowledge", "sqs", "DeleteMessageBatch"): Tally(100 * k, units={"billed": 100 * k})}
    api = {verb: Invocations(10 * k) for verb in ("publish", "pull", "acknowledge")}
    by_price = cost(counts, api, front_door="apigw_rest").by_price
    assert by_price["apigw_rest"] == pytest.approx(0.105)
    assert cost(counts, api).by_price["apigw_http"] == pytest.approx(0.030)
    assert by_price["s3_put_class"] + by_price["s3_get_class"] == pytest.approx(0.054)
    assert by_price["ddb_write_unit"] == pytest.approx(0.04375)
    assert by_price["sqs_request"] == pytest.approx(0.12)
    assert by_price["lambda_invocation"] == pytest.approx(0.006)


def test_sqs_is_billed_per_64_kib_chunk_and_dynamodb_per_kib() -> None:
    body = "x" * (130 * 1024)  # 3 chunks of 64 KiB
    for url, key, price in (("https://sqs/q", "sqs_request", 0.40), ("https://sqs/q.fifo", "sqs_fifo_request", 0.50)):
        units = meter.sqs("SendMessage", {"QueueUrl": url, "MessageBody": body}, {})
        assert request_cost("api:publish", "sqs", Tally(1, 1, 0, units)) == pytest.approx({key: 3 * price / 1e6})
    put = meter.dynamodb("PutItem", {"Item": {"k": {"S": "x" * 3583}}}, {})  # 3,584 bytes: 3.5 KiB, 4 units
    assert request_cost("api:publish", "dynamodb", Tally(1, 1, 0, put)) == pytest.approx(
        {"ddb_write_unit": 4 * 0.625 / 1e6})
    get = meter.dynamodb("GetItem", {}, {"Item": {"k": {"S": "x"}}})  # eventually consistent: half a unit
    assert request_cost("api:pull", "dynamodb", Tally(1, 1, 0, get)) == pytest.approx(
        {"ddb_read_unit": 0.5 * 0.125 / 1e6})
    s3 = request_cost("api:publish", "s3", Tally(2, 2, 0, {"put_class": 1, "get_class": 1}))
    assert s3 == pytest.approx({"s3_put_class": 0.005 / 1e3, "s3_get_class": 0.0004 / 1e3})


def test_the_pump_is_free_and_the_push_pump_pays_only_its_sqs_receives() -> None:
    ru = Tally(10, 10, 0, {"ru": 10})
    assert request_cost("pump", "dynamodb", ru) == {}
    assert request_cost("push-pump", "dynamodb", ru) == {}
    assert request_cost("push-pump", "sqs", Tally(10, 10, 0, {"billed": 10})) == pytest.approx(
        {"sqs_request": 10 * 0.40 / 1e6})
    counts = {("pump", "dynamodbstreams", "GetRecords"): Tally(50, 50), ("push-pump", "dynamodb", "Query"): ru,
              ("fanout", "sqs", "SendMessageBatch"): Tally(4, 4, 0, {"billed": 4})}
    report = cost(counts, {}, {"fanout": Invocations(4, 400.0), "push": Invocations()})
    # fan-out: a Lambda invocation each but no API Gateway request; 400 ms + 4 SQS calls x 10 ms + 4 x 0.5 ms
    assert report.by_price == pytest.approx({"apigw_http": 0.0, "lambda_invocation": 4 * 0.20 / 1e6,
                                             "lambda_gb_s": 0.442 * 0.5 * LAMBDA_GB_S,
                                             "sqs_request": 4 * 0.40 / 1e6})
    assert report.requests["ddb_ru"] == 0 and report.requests["lambda_invocations"] == 4


def test_an_http_api_bills_each_started_512_kb_and_only_known_front_doors_are_priced() -> None:
    assert [pricing.http_api_requests(n) for n in (0, 140_000, 512 * 1024, 512 * 1024 + 1)] == [1, 1, 1, 2]
    with pytest.raises(ValueError):
        cost({}, {}, front_door="apigw_websocket")


def test_invocations_bill_whole_milliseconds() -> None:
    inv = Invocations()
    inv.add(0.0101)
    inv.add(0.002)
    assert (inv.count, inv.billed_ms) == (2, 11 + 2)
    assert pricing.lambda_cost(Invocations(2, 1000.0)) == pytest.approx(
        {"lambda_invocation": 2 * 0.20 / 1e6, "lambda_gb_s": 1.0 * 0.5 * LAMBDA_GB_S})


def test_google_bills_bytes_with_a_floor_per_request() -> None:
    assert pricing.google_message_bytes(1024, {"k": "vv"}) == 1024 + 1 + 2 + 20 + 16  # + timestamp + message id
    assert pricing.google_billed_bytes([10, 5000]) == 1000 + 5000  # each request at least 1,000 bytes
    per_request = 100 * (1024 + 20 + 16)  # 100 messages of 1 KiB without attributes
    million = pricing.google_cost([per_request] * 10_000, [per_request] * 10_000)
    assert million == pytest.approx(2 * 10_000 * per_request * 40 / 1024**4)  # about $0.077 per million


def test_a_window_is_the_difference_of_two_snapshots() -> None:
    a, b = ("api:pull", "sqs", "ReceiveMessage"), ("fanout", "sqs", "SendMessageBatch")
    before = {a: Tally(2, 3, 0, {"billed": 2}, 0.25), b: Tally(1, 1, 0, {"billed": 1}, 0.5)}
    after = {a: Tally(5, 7, 1, {"billed": 6, "messages": 9}, 1.0), b: Tally(1, 1, 0, {"billed": 1}, 0.5),
             ("api:publish", "s3", "PutObject"): Tally(1, 1, 0, {"put_class": 1}, 0.125)}
    assert pricing.subtract(after, before) == {
        a: Tally(3, 4, 1, {"billed": 4, "messages": 9}, 0.75),
        ("api:publish", "s3", "PutObject"): Tally(1, 1, 0, {"put_class": 1}, 0.125),
    }  # b did nothing in the window
