"""bench/meter.py, the billing units of each AWS call, and the request counter it feeds (chalicelib/store/aws.py):
every figure is computed by hand here from AWS's rules (DynamoDB: a write unit per started KiB of item, a read
unit per started 4 KiB, half when eventually consistent; SQS and SNS: a request per started 64 KiB of payload)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config as BotoConfig
from botocore.exceptions import ClientError

from bench import meter
from chalicelib.store import aws

KIB = 1024


def s(text_bytes: int, name: str = "k") -> dict[str, Any]:
    """An item of ``len(name) + text_bytes`` bytes: one string attribute."""
    return {name: {"S": "x" * text_bytes}}


# -- DynamoDB ---------------------------------------------------------------------------------------


def test_item_size_is_names_plus_values() -> None:
    assert meter.item_size({"pk": {"S": "abc"}, "n": {"N": "12345"}}) == 2 + 3 + 1 + 4  # 5 digits: 3 bytes + 1
    assert meter.item_size({"n": {"N": "-1.50"}, "b": {"B": b"\0" * 7}, "t": {"BOOL": True}}) == 1 + 2 + 1 + 7 + 1 + 1
    assert meter.item_size({"m": {"M": {"a": {"S": "xy"}}}, "l": {"L": [{"S": "z"}]}}) == (1 + 3 + 1 + 2 + 1) + (
        1 + 3 + 1 + 1)


@pytest.mark.parametrize(("item", "units"), [
    (s(1), 1.0),  # a tiny item still costs one write unit
    (s(1023), 1.0),  # exactly 1 KiB
    (s(1024), 2.0),  # 1 byte more: a second unit
    (s(3 * KIB + 511), 4.0),  # 3.5 KiB
])
def test_a_put_costs_a_write_unit_per_started_kib(item: dict[str, Any], units: float) -> None:
    got = meter.meter("dynamodb", "PutItem", {"TableName": "t", "Item": item}, {})
    assert got == {"wu": units, "item_bytes_written": float(meter.item_size(item))}


def test_a_batch_write_rounds_each_item_up_on_its_own() -> None:
    puts = [{"PutRequest": {"Item": s(size)}} for size in (9, 1499, 2999)]  # 10, 1500 and 3000 bytes
    delete = {"DeleteRequest": {"Key": {"k": {"S": "a"}}}}  # 2 bytes
    got = meter.dynamodb("BatchWriteItem", {"RequestItems": {"t": [*puts, delete]}}, {})
    assert got == {"wu": 1 + 2 + 3 + 1, "item_bytes_written": 10 + 1500 + 3000 + 2}


def test_an_update_is_sized_by_its_key_and_values_and_a_transaction_counts_double() -> None:
    update = {"Key": {"pk": {"S": "p"}}, "ExpressionAttributeValues": {":n": {"N": "5"}}}
    assert meter.dynamodb("UpdateItem", update, {}) == {"wu": 1.0, "item_bytes_written": 3 + 1 + 2}
    big_update = {"Key": {"k": {"S": "a"}}, "ExpressionAttributeValues": {":v": {"S": "x" * 2000}}}  # 2003 bytes
    transaction = {"TransactItems": [{"Put": {"Item": s(1023)}}, {"Update": big_update}]}
    assert meter.dynamodb("TransactWriteItems", transaction, {}) == {"wu": 2 * 1 + 2 * 2,
                                                                     "item_bytes_written": 1024 + 2003}


@pytest.mark.parametrize(("size", "consistent", "units"), [
    (4095, True, 1.0), (4096, True, 2.0), (4095, False, 0.5), (4096, False, 1.0)])
def test_a_get_costs_a_read_unit_per_started_4_kib_and_half_eventually_consistent(
    size: int, consistent: bool, units: float
) -> None:
    got = meter.dynamodb("GetItem", {"ConsistentRead": consistent}, {"Item": s(size)})
    assert got == {"ru": units, "item_bytes_read": size + 1.0}


def test_a_query_rounds_the_sum_of_its_items_and_a_batch_get_each_item() -> None:
    items = [s(1999) for _ in range(3)]  # 6,000 bytes: 2 units together, 3 one by one
    assert meter.dynamodb("Query", {"ConsistentRead": True}, {"Items": items}) == {"ru": 2.0, "item_bytes_read": 6000}
    assert meter.dynamodb("Query", {}, {"Items": items})["ru"] == 1.0
    assert meter.dynamodb("Query", {}, {"Items": []})["ru"] == 0.5  # an empty answer is still billed
    batch = {"RequestItems": {"t": {"ConsistentRead": True, "Keys": []}, "u": {"Keys": []}}}
    got = meter.dynamodb("BatchGetItem", batch, {"Responses": {"t": items[:2], "u": items[:1]}})
    assert got == {"ru": 1 + 1 + 0.5, "item_bytes_read": 6000}
    transaction = meter.dynamodb("TransactGetItems", {}, {"Responses": [{"Item": s(4999)}]})
    assert transaction == {"ru": 2 * 2, "item_bytes_read": 5000}


def test_control_plane_calls_are_not_billed_per_request() -> None:
    assert meter.dynamodb("DescribeTable", {"TableName": "t"}, {"Table": {}}) == {}
    assert meter.meter("lambda", "Invoke", {}, {}) == {}


# -- SQS and SNS: one request per started 64 KiB -----------------------------------------------------------


def send(body: str, **attributes: dict[str, Any]) -> dict[str, Any]:
    return {"QueueUrl": "https://sqs/q", "MessageBody": body, "MessageAttributes": attributes}


@pytest.mark.parametrize(("body", "billed"), [(0, 1.0), (64 * KIB, 1.0), (64 * KIB + 1, 2.0), (192 * KIB, 3.0)])
def test_sqs_bills_a_request_per_started_64_kib(body: int, billed: float) -> None:
    assert meter.sqs("SendMessage", send("x" * body), {}) == {"billed": billed, "payload_bytes": body, "messages": 1}


def test_sqs_attributes_count_towards_the_payload() -> None:
    text = {"DataType": "String", "StringValue": "x"}  # 3 + 6 + 1 bytes with its name "abc"
    assert meter.sqs("SendMessage", send("x" * (64 * KIB - 10), abc=text), {})["billed"] == 1.0
    assert meter.sqs("SendMessage", send("x" * (64 * KIB - 9), abc=text), {})["billed"] == 2.0
    binary = {"DataType": "Binary", "BinaryValue": b"\0" * 10}  # 1 + 6 + 10 bytes
    assert meter.sqs("SendMessage", send("", b=binary), {})["payload_bytes"] == 17


def test_sqs_batches_are_billed_by_their_summed_payload_and_fifo_apart() -> None:
    entries = [{"Id": str(i), "MessageBody": "x" * 10_000} for i in range(10)]  # 100,000 bytes: 2 chunks
    got = meter.sqs("SendMessageBatch", {"QueueUrl": "https://sqs/q", "Entries": entries}, {})
    assert got == {"billed": 2.0, "payload_bytes": 100_000, "messages": 10}
    fifo = meter.sqs("SendMessageBatch", {"QueueUrl": "https://sqs/q.fifo", "Entries": entries}, {})
    assert fifo == {"billed_fifo": 2.0, "payload_bytes": 100_000, "messages": 10}
    deletes = meter.sqs("DeleteMessageBatch", {"QueueUrl": "https://sqs/q", "Entries": entries}, {})
    assert deletes == {"billed": 1.0, "payload_bytes": 0, "messages": 10}


def test_a_receive_is_billed_by_what_it_returned_and_an_empty_one_once() -> None:
    got = meter.sqs("ReceiveMessage", {"QueueUrl": "q"}, {"Messages": [{"Body": "x" * 30_000}] * 3})
    assert got == {"billed": 2.0, "payload_bytes": 90_000, "messages": 3}
    assert meter.sqs("ReceiveMessage", {"QueueUrl": "q"}, {}) == {"billed": 1.0, "payload_bytes": 0, "messages": 0}


def test_sns_publishes_are_billed_per_started_64_kib() -> None:
    assert meter.sns("Publish", {"Message": "x" * (64 * KIB + 1)}, {}) == {"billed": 2.0, "messages": 1}
    entries = [{"Id": str(i), "Message": "x" * 30_000} for i in range(3)]
    assert meter.sns("PublishBatch", {"PublishBatchRequestEntries": entries}, {}) == {"billed": 2.0, "messages": 3}


# -- S3 -----------------------------------------------------------------------------------------------


def test_s3_requests_fall_in_the_put_or_get_class_and_deletes_are_free() -> None:
    assert meter.s3("PutObject", {"Bucket": "b", "Key": "k", "Body": b"x" * 100}, {}) == {
        "put_class": 1.0, "bytes_in": 100.0}
    assert meter.s3("ListObjectsV2", {"Bucket": "b"}, {}) == {"put_class": 1.0}
    assert meter.s3("GetObject", {"Bucket": "b", "Key": "k", "Range": "bytes=0-9"}, {"ContentLength": 10}) == {
        "get_class": 1.0, "bytes_out": 10.0}
    assert meter.s3("HeadObject", {"Bucket": "b", "Key": "k"}, {}) == {"get_class": 1.0}
    assert meter.s3("DeleteObject", {"Bucket": "b", "Key": "k"}, {}) == {"free": 1.0}


# -- the counter: requests by part, service and operation, where they leave botocore -----------------------


class Answers:
    """A ``before-send`` handler that answers each HTTP attempt in turn, as AWS would (nothing leaves the process)."""

    def __init__(self, *answers: tuple[int, dict[str, Any]]) -> None:
        self.answers = list(answers)

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        status, body = self.answers.pop(0)
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        if status >= 300:
            headers["x-amzn-ErrorType"] = body["__type"]
        return AWSResponse(request.url, status, headers, _Raw(json.dumps(body).encode()))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> list[bytes]:
        return [self._body]


def instrumented(service: str, answers: Answers) -> Any:
    client = boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x",
                          config=BotoConfig(retries={"mode": "standard", "max_attempts": 3}))
    aws.instrument(client)  # what every client Metro builds gets
    client.meta.events.register("before-send", answers)  # after the counter's own handler
    # a 5xx is retried at once (botocore's standard mode would first wait up to a second)
    client.meta.events.register_first("needs-retry", lambda response=None, **_: 0 if response and
                                      response[0].status_code >= 500 else None)
    return client


def counts(counter: aws.RequestCounter) -> dict[aws.Key, tuple[int, int, int, dict[str, float]]]:
    """(calls, HTTP attempts, errors, units) by (part, service, operation): all but the measured seconds."""
    return {key: (t.calls, t.attempts, t.errors, t.units) for key, t in counter.snapshot().items()}


@pytest.fixture()
def counter() -> Iterator[aws.RequestCounter]:
    installed = aws.RequestCounter(meter.meter)
    aws.count_requests(installed)
    yield installed
    aws.count_requests(None)


def test_calls_are_counted_by_part_service_and_operation_with_their_units(counter: aws.RequestCounter) -> None:
    conflict = {"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": "no"}
    ddb = instrumented("dynamodb", Answers((200, {}), (200, {}), (500, {"__type": "InternalFailure"}),
                                           (200, {"Item": s(4999)}), (400, conflict), (200, {})))
    sqs = instrumented("sqs", Answers((200, {"Successful": [], "Failed": []}),
                                      (200, {"Messages": [{"MessageId": "m", "ReceiptHandle": "r",
                                                           "Body": "x" * 70_000}]})))
    entries = [{"Id": str(i), "MessageBody": "x" * 10_000} for i in range(10)]
    with aws.part("api:publish"):
        for _ in range(2):
            ddb.put_item(TableName="t", Item=s(1500))
        sqs.send_message_batch(QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q", Entries=entries)
    with aws.part("fanout"):
        ddb.get_item(TableName="t", Key={"k": {"S": "a"}}, ConsistentRead=True)  # a 500, then the answer
    with aws.part("api:pull"):
        sqs.receive_message(QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q")
        with pytest.raises(ClientError):
            ddb.update_item(TableName="t", Key={"k": {"S": "a"}}, UpdateExpression="SET v = :v",
                            ConditionExpression="attribute_exists(k)", ExpressionAttributeValues={":v": {"S": "b"}})
    ddb.delete_table(TableName="t")

    assert counts(counter) == {
        ("api:publish", "dynamodb", "PutItem"): (2, 2, 0, {"wu": 4.0, "item_bytes_written": 3002.0}),
        ("api:publish", "sqs", "SendMessageBatch"): (1, 1, 0, {"billed": 2.0, "payload_bytes": 100_000,
                                                               "messages": 10}),
        ("fanout", "dynamodb", "GetItem"): (1, 2, 0, {"ru": 2.0, "item_bytes_read": 5000}),  # two HTTP attempts
        ("api:pull", "sqs", "ReceiveMessage"): (1, 1, 0, {"billed": 2.0, "payload_bytes": 70_000, "messages": 1}),
        ("api:pull", "dynamodb", "UpdateItem"): (1, 1, 1, {"wu": 1.0, "item_bytes_written": 4.0}),  # billed too
        ("other", "dynamodb", "DeleteTable"): (1, 1, 0, {}),
    }


def test_nothing_is_counted_without_a_counter_and_a_meter_error_never_breaks_a_call() -> None:
    ddb = instrumented("dynamodb", Answers((200, {}), (200, {})))
    ddb.put_item(TableName="t", Item=s(1))  # no counter installed: nothing to count into

    def broken(*_: Any) -> dict[str, float]:
        raise ValueError("a meter bug")

    counter = aws.RequestCounter(broken)
    aws.count_requests(counter)
    try:
        ddb.put_item(TableName="t", Item=s(1))
    finally:
        aws.count_requests(None)
    assert counts(counter) == {("other", "dynamodb", "PutItem"): (1, 1, 0, {"meter_errors": 1.0})}
