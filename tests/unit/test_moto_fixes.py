"""moto's SQS queue under concurrent deletes and sends (the server runs requests on threads): with the fix of
chalicelib/local/moto_fixes.py no deleted message comes back and no sent message is dropped. Without it this
test fails (deleted messages resurrected, sends lost), which `make race` saw as acknowledged messages
delivered again."""

from __future__ import annotations

import threading

from moto.sqs.models import Message, Queue

from chalicelib.local.moto_fixes import fix_moto

DELETERS = 8


def test_concurrent_deletes_and_sends_neither_resurrect_nor_drop_messages() -> None:
    assert fix_moto()
    queue = Queue("race", region="us-east-1", account_id="123456789012")
    received = [Message(f"old-{i}", "body") for i in range(2000)]
    for message in received:
        message.mark_received()
        queue.add_message(message)
    handles = [m.receipt_handle for m in received]
    sent = [Message(f"new-{i}", "body") for i in range(400)]

    def delete(k: int) -> None:
        for handle in handles[k::DELETERS]:
            assert handle is not None
            queue.delete_message(handle)

    def send() -> None:
        for message in sent:
            queue.add_message(message)

    threads = [threading.Thread(target=delete, args=(k,)) for k in range(DELETERS)] + [threading.Thread(target=send)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    left = {m.id for m in queue._messages}
    assert not left & {m.id for m in received}, "a deleted message came back"
    assert {m.id for m in sent} <= left, "a sent message was dropped"
