"""Acknowledgements leave in DeleteMessageBatch: an entry SQS fails on its own side is deleted again, so an ack
answered OK does not leave its message to come back; an entry refused as the sender's fault (a stale receipt
handle) is reported, not retried."""

from __future__ import annotations

from typing import Any

from chalicelib.config import Config
from chalicelib.store.queues import QueueStore
from chalicelib.store.workers import Workers


class FlakySqs:
    """DeleteMessageBatch that fails the receipts named in ``flaky`` once (InternalError) and the ones in
    ``stale`` always (ReceiptHandleIsInvalid, a sender fault)."""

    def __init__(self, flaky: set[str], stale: set[str]) -> None:
        self.flaky, self.stale = set(flaky), stale
        self.deleted: list[str] = []
        self.calls = 0

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        self.calls += 1
        failed = []
        for entry in Entries:
            receipt = entry["ReceiptHandle"]
            if receipt in self.stale:
                failed.append({"Id": entry["Id"], "SenderFault": True, "Code": "ReceiptHandleIsInvalid"})
            elif receipt in self.flaky:
                self.flaky.discard(receipt)
                failed.append({"Id": entry["Id"], "SenderFault": False, "Code": "InternalError"})
            else:
                self.deleted.append(receipt)
        return {"Successful": [], "Failed": failed}


def test_server_side_failures_are_deleted_again_and_sender_faults_reported() -> None:
    receipts = [f"r{i}" for i in range(15)]
    sqs = FlakySqs(flaky={"r3", "r12"}, stale={"r7"})
    store = QueueStore(Config(), Workers(), client=sqs, sleep=lambda _: None)  # type: ignore[arg-type]
    assert store.delete_batch("url", receipts) == [7]
    assert sorted(sqs.deleted) == sorted(r for r in receipts if r != "r7")
    assert sqs.calls == 4  # two batches of at most ten, each with one retry of its failed entry
