"""moto's SQS queue under concurrent requests (the server runs them on threads), with the fixes of
chalicelib/local/moto_fixes.py: no deleted message comes back and no sent message is dropped (without the fix,
`make race` saw acknowledged messages delivered again), and the groups in flight can be read while other
requests change them (without the fix, a receive failed with a 500 now and then in `make chaos`)."""

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


def test_groups_in_flight_read_while_other_requests_change_them() -> None:
    assert fix_moto()
    queue = Queue("groups", region="us-east-1", account_id="123456789012")
    messages = [Message(f"m{i}", "body") for i in range(200)]
    for i, message in enumerate(messages):
        message.group_id = f"g{i % 7}"
    done = threading.Event()

    def churn() -> None:  # deletes and visibility changes on other server threads
        while not done.is_set():
            for message in messages:
                queue.pending_messages.add(message)
            for message in messages:
                queue.pending_messages.discard(message)

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(3000):
            assert queue.pending_message_groups <= {f"g{k}" for k in range(7)}
    finally:
        done.set()
        thread.join()
