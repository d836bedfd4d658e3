"""chalicelib/local/moto_fixes.py: the emulator keeps SQS's FIFO order when a group's leases expire together."""

from __future__ import annotations

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
