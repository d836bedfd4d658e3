"""The fault run's accounting (bench/chaos/ledger.py, timeline.py) and the fault choice (chalicelib/local/faults.py)."""

from __future__ import annotations

import json

from bench.chaos.ledger import EXACTLY_ONCE, ORDERED, PULL, PUSH, Ledger
from bench.chaos.timeline import Timeline
from chalicelib.local.faults import KINDS, choose, error_response


def ledger() -> Ledger:
    return Ledger({"plain": PULL, "ordered": ORDERED, "exact": EXACTLY_ONCE, "pushed": PUSH})


def test_clean_run_passes() -> None:
    book = ledger()
    book.publish_acknowledged(["a", "b"])
    for sub in ("plain", "ordered", "exact", "pushed"):
        for seq, key in enumerate(("a", "b")):
            book.delivered(sub, f"id-{key}", key, "k", seq)
            book.acknowledged(sub, f"id-{key}", key)
    summary = book.summary()
    assert summary["passed"] and book.drained() and book.outstanding() == 0
    assert summary["subscriptions"]["ordered"]["duplicates"] == 0


def test_acknowledged_publish_never_delivered_is_lost() -> None:
    book = ledger()
    book.publish_acknowledged(["a", "b"])
    book.delivered("plain", "id-a", "a")
    book.acknowledged("plain", "id-a", "a")
    verdict = book.verdict("plain")
    assert (verdict.lost, verdict.stuck, verdict.passed) == (1, 0, False)
    assert not book.drained()


def test_delivered_but_never_acknowledged_is_stuck() -> None:
    book = ledger()
    book.publish_acknowledged(["a"])
    book.delivered("plain", "id-a", "a")
    assert (book.verdict("plain").lost, book.verdict("plain").stuck) == (0, 1)


def test_acknowledgement_in_doubt_is_unconfirmed_not_stuck() -> None:
    book = ledger()
    book.publish_acknowledged(["a", "b"])
    for key in "ab":
        book.delivered("exact", f"id-{key}", key)
    book.acknowledge_unconfirmed("exact", "a")  # the API died before answering
    book.acknowledge_unconfirmed("exact", "b")
    book.acknowledged("exact", "id-b", "b")  # b came back and was acknowledged
    verdict = book.verdict("exact")
    assert (verdict.stuck, verdict.unconfirmed, verdict.passed) == (0, 1, True)
    assert not book.drained()  # the other subscriptions have nothing yet


def test_duplicates_count_redeliveries_and_publish_copies() -> None:
    book = ledger()
    book.publish_acknowledged(["a"])
    book.delivered("plain", "id-a", "a")  # first delivery
    book.delivered("plain", "id-a", "a")  # redelivery of the same message
    book.delivered("plain", "id-a2", "a")  # a copy from a retried publish
    book.acknowledged("plain", "id-a2", "a")
    verdict = book.verdict("plain")
    assert (verdict.duplicates, verdict.redeliveries, verdict.after_ack, verdict.passed) == (2, 1, 0, True)


def test_redelivery_after_a_confirmed_ack_fails_only_exactly_once() -> None:
    book = ledger()
    book.publish_acknowledged(["a"])
    for sub in ("plain", "exact"):
        book.delivered(sub, "id-a", "a")
        book.acknowledged(sub, "id-a", "a")
        book.delivered(sub, "id-a", "a")
    assert book.verdict("plain").after_ack == 1 and book.verdict("plain").passed
    assert book.verdict("exact").after_ack == 1 and not book.verdict("exact").passed


def test_first_delivery_behind_a_later_message_of_its_key_is_an_order_violation() -> None:
    book = ledger()
    book.publish_acknowledged(["a", "b", "c"])
    book.delivered("ordered", "id-a", "a", "k", 0)
    book.delivered("ordered", "id-c", "c", "k", 2)
    book.delivered("ordered", "id-b", "b", "k", 1)
    verdict = book.verdict("ordered")
    assert verdict.order_violations == 1 and not verdict.passed
    assert verdict.examples == ["k: b (seq 1) first delivered after seq 2"]


def test_redelivery_after_a_nack_and_other_keys_are_not_order_violations() -> None:
    book = ledger()
    book.publish_acknowledged(["a", "b", "x"])
    book.delivered("ordered", "id-a", "a", "k", 0)
    book.delivered("ordered", "id-b", "b", "k", 1)
    book.delivered("ordered", "id-a", "a", "k", 0)  # nacked, redelivered with what follows it
    book.delivered("ordered", "id-b", "b", "k", 1)
    book.delivered("ordered", "id-x", "x", "other", 0)
    book.delivered("plain", "id-b", "b", "k", 1)  # no ordering on a plain subscription
    book.delivered("plain", "id-a", "a", "k", 0)
    assert book.verdict("ordered").order_violations == 0
    assert book.verdict("plain").order_violations == 0


def published_abc_acked_on(*subs: str) -> Ledger:
    """Keys a, b, c published and acknowledged on ``subs``; the other subscriptions have none acknowledged."""
    book = ledger()
    book.publish_acknowledged(["a", "b", "c"])
    for sub in subs:
        for key in "abc":
            book.acknowledged(sub, f"id-{key}", key)
    return book


def test_outstanding_follows_the_slowest_subscription() -> None:
    book = published_abc_acked_on("plain", "ordered", "exact")
    book.acknowledged("pushed", "id-a", "a")
    assert book.outstanding() == 2


def test_an_unconfirmed_acknowledgement_is_not_outstanding() -> None:
    """Such a message may never come back: counting it stalled a 100,000-message run at 2,008 unconfirmed."""
    book = published_abc_acked_on("plain", "ordered", "pushed")
    book.acknowledged("exact", "id-a", "a")
    book.acknowledge_unconfirmed("exact", "b")
    assert book.outstanding() == 1
    book.acknowledged("exact", "id-b", "b")  # confirmed later: still counted once
    assert book.outstanding() == 1


def test_timeline_buckets_by_minute() -> None:
    timeline = Timeline()
    timeline.published(1.0, 10, 0.02)
    for i in range(100):
        timeline.delivered(5.0, (i + 1) / 1000)
    timeline.delivered(61.0, 0.5)
    timeline.error(62.0, "pull: HTTP 503")
    rows = timeline.rows()
    assert [r["minute"] for r in rows] == [0, 1]
    assert rows[0]["published"] == 10 and rows[0]["delivered"] == 100 and rows[0]["errors"] == 0
    assert (rows[0]["latency_p50_ms"], rows[0]["latency_p99_ms"], rows[0]["publish_p50_ms"]) == (50.0, 100.0, 20.0)
    assert rows[1]["errors"] == 1 and rows[1]["latency_p95_ms"] == 500.0
    assert timeline.error_kinds == {"pull: HTTP 503": 1}


def test_fault_choice_follows_the_rate_and_spreads_the_kinds() -> None:
    assert choose(0.05, 0.0, 0.05) is None
    assert choose(0.049, 0.0, 0.05) == "throttle"
    assert [choose(0.0, pick, 0.05) for pick in (0.1, 0.3, 0.6, 0.9999)] == list(KINDS)
    assert choose(0.0, 0.5, 0.0) is None


def test_injected_errors_speak_each_services_protocol() -> None:
    status, headers, body = error_response("dynamodb", "throttle")
    assert (status, headers["x-amzn-ErrorType"], json.loads(body)["__type"]) == (400, "ThrottlingException",
                                                                                  "ThrottlingException")
    status, _, body = error_response("sqs", "server_error")
    assert status == 500 and json.loads(body)["__type"] == "InternalFailure"
    status, headers, body = error_response("s3", "throttle")
    assert status == 503 and b"<Code>SlowDown</Code>" in body and headers["Content-Type"] == "application/xml"


def test_a_filtered_book_expects_only_the_keys_its_filter_matches() -> None:
    book = Ledger({"plain": PULL, "lane-a": PULL}, {"lane-a": {"lane": "a"}})
    book.publish_acknowledged(["a1", "b1"], [{"lane": "a"}, {"lane": "b"}])
    for key in ("a1", "b1"):
        book.delivered("plain", f"id-{key}", key)
        book.acknowledged("plain", f"id-{key}", key)
    assert book.outstanding() == 1  # lane-a has a1 to settle; b1 is none of its business
    book.delivered("lane-a", "id-a1", "a1")
    book.acknowledged("lane-a", "id-a1", "a1")
    assert book.drained() and book.outstanding() == 0
    assert book.verdict("lane-a").lost == 0 and book.verdict("lane-a").delivered_keys == 1


def test_a_filtered_book_counts_a_missing_match_as_lost() -> None:
    book = Ledger({"lane-a": PULL}, {"lane-a": {"lane": "a"}})
    book.publish_acknowledged(["a1", "a2", "b1"], [{"lane": "a"}, {"lane": "a"}, {"lane": "b"}])
    book.delivered("lane-a", "id-a1", "a1")
    book.acknowledged("lane-a", "id-a1", "a1")
    assert book.verdict("lane-a").lost == 1 and not book.drained()


T0, T1, T2 = "2026-01-01T00:00:01.5Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03.25Z"


def test_a_seek_to_a_time_settles_the_keys_published_before_it() -> None:
    book = Ledger({"replay": PULL, "plain": PULL})
    book.publish_acknowledged(["old"], sent=1.0)
    book.publish_acknowledged(["new"], sent=1.0)
    book.delivered("plain", "id-old", "old", publish_time=T0)
    book.delivered("plain", "id-new", "new", publish_time=T2)
    for key in ("old", "new"):
        book.acknowledged("plain", f"id-{key}", key)
    book.delivered("replay", "id-new", "new", publish_time=T2)
    book.acknowledged("replay", "id-new", "new")
    assert not book.drained()  # "old" never reached the replay subscription
    book.seeked_to_time("replay", T1, answered=2.0)
    verdict = book.verdict("replay")
    assert book.drained() and (verdict.lost, verdict.stuck, verdict.acked_by_seek) == (0, 0, 1)
    assert book.outstanding() == 0


def test_a_seek_settles_nothing_published_after_it_answered_or_after_its_time() -> None:
    book = Ledger({"replay": PULL})
    book.seeked_to_time("replay", T1, answered=2.0)
    book.publish_acknowledged(["late"], sent=3.0)  # sent after the seek answered, stamped before its time
    book.publish_acknowledged(["after"], sent=1.0)  # sent before, stamped after its time
    book.delivered("replay", "id-late-0", "late", publish_time=T0)
    book.delivered("replay", "id-after", "after", publish_time=T2)
    verdict = book.verdict("replay")
    assert (verdict.lost, verdict.stuck, verdict.acked_by_seek) == (0, 2, 0) and not book.drained()


def test_a_later_copy_published_after_the_seeks_time_is_owed_again() -> None:
    book = Ledger({"replay": PULL, "plain": PULL})
    book.publish_acknowledged(["k"], sent=1.0)
    book.delivered("plain", "id-1", "k", publish_time=T0)
    book.seeked_to_time("replay", T1, answered=2.0)
    assert book.verdict("replay").acked_by_seek == 1
    book.delivered("plain", "id-2", "k", publish_time=T2)  # the retried publish's second copy
    assert book.verdict("replay").acked_by_seek == 0 and book.verdict("replay").lost == 1
