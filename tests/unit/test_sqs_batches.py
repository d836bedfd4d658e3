"""SendMessageBatch requests within SQS's limits: the pure rules and packer, the queue store's sends
(against an SQS double that enforces AWS's rules), and a property: whatever Google accepts in a publish,
every call the fan-out makes is one SQS accepts, and the queue bodies read back exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chalicelib.config import Config
from chalicelib.core import ids, limits
from chalicelib.core.payload import StoredMessage
from chalicelib.core.queueing import envelope, sqs_batches, sqs_limits
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.models import Subscription
from chalicelib.service.enqueue import to_outgoing
from chalicelib.store.log import LogEntry
from chalicelib.store.queues import Outgoing, QueueStore
from chalicelib.store.workers import Workers
from tests.functional.strict_sqs import StrictSqs, batch_error, entry_error, refused

INLINE_MAX = 40 * 1024
REQUEST_ID = "1800000000000123456"
ENTRY = LogEntry(topic="projects/p/topics/t", request_id=REQUEST_ID, key="raw/p/t/2027/01/15/08/r.mpub",
                 body_start=100, count=1, size=1, publish_time="2027-01-15T08:00:00.000000Z", expires=0)


def record(ordered: bool) -> SubscriptionRecord:
    spec = Subscription(name="projects/p/subscriptions/s", topic="projects/p/topics/t",
                        enable_message_ordering=ordered)
    return SubscriptionRecord(spec, 0.0, "https://sqs/q.fifo" if ordered else "https://sqs/q", 1)


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (never inside a character)."""
    return text.encode()[:limit].decode(errors="ignore")


# --- the rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\uffff", "\ufffe", "\ud800", "\x0b", "\x00"])
def test_refused_characters_are_escaped_losslessly(char: str) -> None:
    text = json.dumps({"a": {f"k{char}": f"v{char}\\u{char}"}}, ensure_ascii=False)
    escaped = sqs_batches.entry("0", Outgoing(text))["MessageBody"]
    assert sqs_limits.valid_body(escaped) and entry_error({"MessageBody": escaped}) == ""
    assert json.loads(escaped) == json.loads(text)


def test_allowed_text_is_left_as_it_is() -> None:
    text = json.dumps({"a": "\t\n\r é \ud7ff \ue000 \ufffd \U0001f600 \U0010ffff"}, ensure_ascii=False)
    assert sqs_limits.escape_body(text) == text
    assert sqs_limits.body_bytes(text) == len(text.encode())
    assert sqs_limits.body_bytes('"\uffff"') == len('"\\uffff"')


@pytest.mark.parametrize("key", ["k" * 128, "order-1", "a!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~z"])
def test_valid_ids_are_kept(key: str) -> None:
    assert sqs_limits.safe_id(key) == key


@pytest.mark.parametrize("key", ["k" * 129, "with space", "clé", "ключ" * 300, "\uffff", "tab\t"])
def test_other_ids_become_a_stable_hash(key: str) -> None:
    got = sqs_limits.safe_id(key)
    assert got.startswith("h-") and len(got) == 66 and sqs_limits.valid_id(got)
    assert got == sqs_limits.safe_id(key) != sqs_limits.safe_id(key + "x")
    assert sqs_limits.group_id("", "1234") == "1234" and sqs_limits.group_id(key, "1234") == got


def test_plan_packs_by_count_and_bytes_in_order() -> None:
    assert sqs_batches.plan([1] * 25) == [list(range(10)), list(range(10, 20)), list(range(20, 25))]
    assert sqs_batches.plan([100_000] * 5) == [[0, 1], [2, 3], [4]]
    assert sqs_batches.plan([262_144, 1, 262_143, 1]) == [[0], [1, 2], [3]]
    assert sqs_batches.plan([500_000, 10, 10]) == [[0], [1, 2]]  # a message too big for a batch goes alone
    assert sqs_batches.plan([5, 300_000, 5, 5], indexes=[0, 2, 3]) == [[0, 2, 3]]
    assert sqs_batches.plan([]) == []


# --- the store's sends -------------------------------------------------------------------------


def store(sqs: StrictSqs) -> QueueStore:
    return QueueStore(Config(), Workers(), client=sqs, sleep=lambda _: None)


def bodies(sqs: StrictSqs) -> list[str]:
    return [json.loads(e["MessageBody"])["id"] for e in sqs.sent]


def wide(i: int, value: str = "v") -> Outgoing:
    """A message of 100 attributes with 250-byte keys and 1 KB values (about 128 KB of JSON)."""
    attrs = {f"{j:03d}".ljust(250, "k"): value * (1024 // len(value.encode())) for j in range(100)}
    return Outgoing(envelope.encode(envelope.Envelope(str(i), "t", attrs, data=b"x")))


def small(i: int) -> Outgoing:
    return Outgoing(envelope.encode(envelope.Envelope(str(i), "t", data=b"x")), group_id=f"g{i}", dedup_id=str(i))


def test_ten_wide_messages_go_in_calls_sqs_accepts() -> None:
    sqs = StrictSqs()
    result = store(sqs).send("https://sqs/q", [wide(i) for i in range(10)])
    assert (result.failed, result.dropped) == ([], [])
    assert sorted(bodies(sqs), key=int) == [str(i) for i in range(10)]
    assert all(batch_error(call) == "" for call in sqs.calls) and len(sqs.calls) == 5


def test_ordinary_messages_still_go_ten_per_call() -> None:
    sqs = StrictSqs()
    store(sqs).send("https://sqs/q", [small(i) for i in range(100)])
    assert [len(call) for call in sqs.calls] == [10] * 10


def test_only_the_entries_that_failed_are_sent_again() -> None:
    sqs = StrictSqs()
    sqs.transient = {'"id":"3"': 2, '"id":"7"': 1}
    result = store(sqs).send("https://sqs/q", [small(i) for i in range(10)])
    assert (result.failed, result.dropped) == ([], [])
    assert sorted(bodies(sqs), key=int) == [str(i) for i in range(10)]  # each exactly once
    assert [len(call) for call in sqs.calls] == [10, 2, 1]


def test_an_entry_failing_every_round_is_reported_failed_and_the_rest_of_a_fifo_job_waits() -> None:
    sqs = StrictSqs()
    sqs.transient = {'"id":"3"': 100}
    msgs = [small(i) for i in range(25)]
    result = store(sqs).send("https://sqs/q.fifo", msgs)
    assert result.failed == [3, *range(10, 25)] and result.dropped == []
    assert sorted(bodies(sqs), key=int) == [str(i) for i in range(10) if i != 3]
    assert len(sqs.calls) == 1 + 4  # the first batch, then the failing entry alone each round


@pytest.mark.parametrize("whole_call", [False, True])
def test_a_refused_entry_is_dropped_and_the_others_are_sent_once(whole_call: bool) -> None:
    sqs = StrictSqs(whole_call=whole_call)
    sqs.poison = {'"id":"4"'}
    result = store(sqs).send("https://sqs/q.fifo", [small(i) for i in range(12)])
    assert (result.failed, result.dropped) == ([], [4])
    assert sorted(bodies(sqs), key=int) == [str(i) for i in range(12) if i != 4]


def test_a_deleted_queue_fails_the_job_at_once() -> None:
    class Gone(StrictSqs):
        def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            self.calls.append(Entries)
            raise refused("AWS.SimpleQueueService.NonExistentQueue")

    sqs = Gone()
    result = store(sqs).send("https://sqs/q", [small(i) for i in range(3)])
    assert (result.failed, result.dropped, len(sqs.calls)) == ([0, 1, 2], [], 1)


def test_an_envelope_too_big_for_sqs_goes_as_a_pointer() -> None:
    # 40,000 bytes of data would go inline alone; with 100 attributes of U+FFFF (escaped: 6 bytes each) the
    # inline envelope is over 262,144 bytes, while its pointer form (about 230 KB) fits.
    attrs = {f"{j:03d}".ljust(256, "k"): "\uffff" * 341 for j in range(100)}
    msg = StoredMessage(ids.message_id(REQUEST_ID, 0), b"x" * 40_000, attrs, "")
    body = to_outgoing(record(False), ENTRY, msg, 7, INLINE_MAX).body
    assert sqs_limits.body_bytes(body) <= sqs_limits.BATCH_BYTES
    env = envelope.decode(sqs_limits.escape_body(body))
    assert not env.inline and (env.s3_key, env.offset, env.length) == (ENTRY.key, 7, 40_000)
    assert env.attributes == attrs
    plain = StoredMessage(msg.message_id, b"x" * 40_000)
    assert envelope.decode(to_outgoing(record(False), ENTRY, plain, 7, INLINE_MAX).body).data == plain.data


# --- the property ------------------------------------------------------------------------------

TEXT = st.characters(codec="utf-8")  # any code point but a lone surrogate: U+FFFE, U+FFFF too
PAD = st.sampled_from(["\uffff", "\ufffe", "\x01", '"', "\\", "é", "\U0001f600", " ", "k"])
SIZES = st.sampled_from([0, 1, INLINE_MAX, INLINE_MAX + 1, 300_000, limits.MAX_MESSAGE_BYTES])


@st.composite
def message_shapes(draw: st.DrawFn) -> list[tuple[dict[str, str], str, int]]:
    """Up to three distinct messages (attributes, ordering key, data size), each within Google's limits."""
    shapes = []
    for _ in range(draw(st.integers(1, 3))):
        full, pad = draw(st.booleans()), draw(PAD)
        attrs = {}
        for j in range(draw(st.integers(0, limits.MAX_ATTRIBUTES))):
            key = cut(f"{j}:" + draw(st.text(TEXT, max_size=4)) + pad * 256 * full, limits.MAX_ATTRIBUTE_KEY_BYTES)
            attrs[key] = cut(draw(st.text(TEXT, max_size=4)) + pad * 1024 * full, limits.MAX_ATTRIBUTE_VALUE_BYTES)
        key = cut(draw(st.text(TEXT, max_size=8)) + draw(PAD) * draw(st.sampled_from([0, 130, 1024])),
                  limits.MAX_ORDERING_KEY_BYTES)
        shapes.append((attrs, key, draw(SIZES)))
    return shapes


def publish(shapes: list[tuple[dict[str, str], str, int]], count: int) -> list[StoredMessage]:
    datas = {size: b"\x00" * size for _, _, size in shapes}
    return [StoredMessage(ids.message_id(REQUEST_ID, i), datas[shapes[i % len(shapes)][2]],
                          *shapes[i % len(shapes)][:2]) for i in range(count)]


def shape_bytes(shape: tuple[dict[str, str], str, int]) -> int:
    attrs, key, size = shape
    return sum(len(k) + len(v) for k, v in attrs.items()) + len(key) + (size if size <= INLINE_MAX else 0) + 100


def check_calls(out: list[Outgoing], msgs: list[StoredMessage]) -> None:
    sizes = sqs_batches.body_sizes(out)
    for batch in sqs_batches.plan(sizes):
        entries = [sqs_batches.entry(str(i), out[i]) for i in batch]
        assert batch_error(entries) == "" and len(entries) <= sqs_limits.BATCH_ENTRIES
        assert [entry_error(e) for e in entries] == [""] * len(entries)
        total = sum(len(e["MessageBody"].encode()) for e in entries)
        assert total <= sqs_limits.BATCH_BYTES or (len(batch) == 1 and not envelope.decode(out[batch[0]].body).inline)
        for i, e in zip(batch, entries):
            env = envelope.decode(e["MessageBody"])
            assert (env.message_id, env.attributes, env.ordering_key) == (msgs[i].message_id, msgs[i].attributes,
                                                                          msgs[i].ordering_key)
            assert env.data in (None, msgs[i].data)


Shapes = list[tuple[dict[str, str], str, int]]
ISSUE_WIDE: tuple[Shapes, int] = ([({f"{j:03d}".ljust(250, "k"): "v" * 1024 for j in range(100)}, "", 10)], 10)
ISSUE_KEY: tuple[Shapes, int] = ([({}, "ключ упорядочения " * 10, 3)], 3)
ISSUE_CHAR: tuple[Shapes, int] = ([({"a\uffff": "\uffff\ufffe", "b": "x"}, "", 3)], 2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shapes=message_shapes(), count=st.integers(1, limits.MAX_MESSAGES_PER_PUBLISH))
@example(*ISSUE_WIDE)
@example(*ISSUE_KEY)
@example(*ISSUE_CHAR)
@example([({}, "k", 1)], limits.MAX_MESSAGES_PER_PUBLISH)
def test_every_fan_out_call_is_one_sqs_accepts(shapes: list[tuple[dict[str, str], str, int]], count: int) -> None:
    # Big messages: enough of them for many batches, few enough to run fast (small ones: up to 1000).
    count = min(count, max(25, 1_000_000 // max(map(shape_bytes, shapes))))
    msgs = publish(shapes, count)
    for ordered in (False, True):
        out = [to_outgoing(record(ordered), ENTRY, m, i, INLINE_MAX) for i, m in enumerate(msgs)]
        check_calls(out, msgs)
        if ordered:
            groups = {sqs_batches.entry("0", o)["MessageGroupId"] for o in out}
            assert len(groups) == len({m.ordering_key or m.message_id for m in msgs})
