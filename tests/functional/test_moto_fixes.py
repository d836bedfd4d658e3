"""chalicelib/local/moto_fixes.py: the emulator keeps SQS's FIFO order when a group's leases expire together."""

from __future__ import annotations

import socket
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chalicelib.local.moto_fixes import fix_moto


def test_fifo_group_comes_back_in_order_after_its_visibility_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    import moto.sqs.models as sqs_models

    clock = {"ms": 1_800_000_000_000.0}
    monkeypatch.setattr(sqs_models, "unix_time_millis", lambda dt=None: clock["ms"])
    fix_moto()
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="ordered.fifo", Attributes={
            "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "MessageBody": f"m{i}", "MessageGroupId": "key"} for i in range(3)])
        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5)["Messages"]
        assert [m["Body"] for m in first] == ["m0", "m1", "m2"]
        assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)  # the group is held
        clock["ms"] += 6_000  # the three leases expire together (a lost answer, a dead puller)
        again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5)["Messages"]
        assert [m["Body"] for m in again] == ["m0", "m1", "m2"]


def test_a_lease_ending_during_a_receive_does_not_let_the_group_jump_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leases of one receive end a clock tick apart (moto reads the clock per message). Whatever instant
    the next receive starts at, relative to those ends, the group's first message leads."""
    import moto.sqs.models as sqs_models

    clock = {"ms": 1_800_000_000_000.0}

    def ticking(dt: Any = None) -> float:  # every reading advances the clock a little, as the real one does
        clock["ms"] += 0.01
        return clock["ms"]

    monkeypatch.setattr(sqs_models, "unix_time_millis", ticking)
    fix_moto()
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        for early in range(0, 60):  # start the receive this many ticks before the last lease ends
            url = sqs.create_queue(QueueName=f"ordered-{early}.fifo", Attributes={
                "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
            sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "MessageBody": f"m{i}", "MessageGroupId": "key"} for i in range(10)])
            sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "MessageBody": f"m{i}", "MessageGroupId": "key"} for i in range(10, 14)])
            lost = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5)["Messages"]
            assert len(lost) == 10  # an answer that never arrived: the ten leases end one by one
            queue = sqs_models.sqs_backends["123456789012"]["us-east-1"].get_queue(url.rsplit("/", 1)[1])
            last_end = max(m.visible_at for m in queue._messages)
            clock["ms"] = last_end - early * 0.01
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5).get("Messages", [])
            bodies = [m["Body"] for m in got]
            assert not bodies or bodies[0] == "m0", f"{early} ticks early: {bodies}"


def test_concurrent_receives_never_split_a_fifo_group(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import moto.sqs.models as sqs_models

    fix_moto()
    original = sqs_models.Message.mark_received

    def slow_mark(self: Any, *args: Any, **kwargs: Any) -> None:  # widen moto's race window: receives interleave
        original(self, *args, **kwargs)
        time.sleep(0.01)

    monkeypatch.setattr(sqs_models.Message, "mark_received", slow_mark)
    groups = sqs_models.Queue.pending_message_groups

    def slow_groups(self: Any) -> Any:  # and between a receive's look at the groups in flight and its scan
        held = groups.fget(self)
        time.sleep(0.05)
        return held

    monkeypatch.setattr(sqs_models.Queue, "pending_message_groups", property(slow_groups))
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)  # receives on real threads
    server.start()
    try:
        assert one_holder(f"http://127.0.0.1:{port}")
    finally:
        server.stop()


def one_holder(endpoint: str) -> bool:
    """Four receives at once on a FIFO queue of one group: does exactly one of them get the group?"""
    import threading

    def client() -> Any:
        return boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                            aws_secret_access_key="testing")

    url = client().create_queue(QueueName="split.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    client().send_message_batch(QueueUrl=url, Entries=[
        {"Id": str(i), "MessageBody": f"m{i}", "MessageGroupId": "key"} for i in range(10)])
    got: list[list[str]] = []
    clients = [client() for _ in range(4)]
    start = threading.Barrier(4)

    def receive(sqs: Any) -> None:
        start.wait()
        resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)
        got.append([m["Body"] for m in resp.get("Messages", [])])

    threads = [threading.Thread(target=receive, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [bodies for bodies in got if bodies] == [[f"m{i}" for i in range(10)]]


def test_a_send_to_a_mapped_queue_survives_the_send_speedup() -> None:
    """moto receives inside a send to a queue with an enabled event source mapping (its stand-in for Lambda's poller);
    the speed-up that hides a queue's attributes during sends must not hide them from that receive."""
    import io
    import json
    import zipfile

    import boto3
    from moto import mock_aws

    from chalicelib.local.moto_speedups import speed_up_moto

    speed_up_moto()
    with mock_aws(config={"lambda": {"use_docker": False}}):
        sqs, lam, iam = (boto3.client(s, region_name="us-east-1") for s in ("sqs", "lambda", "iam"))
        url = sqs.create_queue(QueueName="mapped", Attributes={"ReceiveMessageWaitTimeSeconds": "0"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17",
                               "Statement": []}))["Role"]["Arn"]
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as z:
            z.writestr("app.py", "def handler(event, context):\n    return {}\n")
        lam.create_function(FunctionName="f", Runtime="python3.12", Role=role, Handler="app.handler",
                            Code={"ZipFile": code.getvalue()})
        lam.create_event_source_mapping(EventSourceArn=arn, FunctionName="f", BatchSize=10)
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "x"}])
        sqs.send_message(QueueUrl=url, MessageBody="y")
