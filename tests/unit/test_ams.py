"""The AMS dialect's pure parts: push settings, names and shapes (core/wire/ams.py), offsets
(core/replay/offsets.py), live counters (core/live.py), AMS's push bodies and batches (delivery), the verification
gate, the certificate."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

from chalicelib.config import Config
from chalicelib.core import live
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.queueing.backoff import PushThrottle, ThrottleState
from chalicelib.core.queueing.envelope import Envelope
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.replay import offsets
from chalicelib.core.wire import ams
from chalicelib.core.wire.models import AmsPush, PushConfig, Subscription
from chalicelib.delivery import ams_batches
from chalicelib.delivery.push_request import Item, build_batch_request, build_request
from chalicelib.delivery.scheduler import ACKED, Batch, Outcome
from chalicelib.local.tls import ensure_certificate
from chalicelib.service.ams import push_ready
from chalicelib.service.delivery import Delivery

NAME = "projects/p/subscriptions/s"


def sub_rec(push: AmsPush | None = None, ordered: bool = False) -> SubscriptionRecord:
    spec = Subscription(name=NAME, topic="projects/p/topics/t", enable_message_ordering=ordered,
                        push_config=PushConfig(push_endpoint="https://example.com/in"), ams_push=push)
    return SubscriptionRecord(spec, 0.0, "https://sqs/1/q-1", 1)


# -- core/wire/ams.py ----------------------------------------------------------------------------------------------
def test_push_config_as_ams_clients_send_it_with_string_numbers() -> None:
    got = ams.push_request({"type": "http_endpoint", "pushEndpoint": "https://h/in", "maxMessages": "5",
                            "retryPolicy": {"type": "slowstart", "period": "2000"},
                            "authorizationHeader": {"type": "disabled"}})
    assert got == ams.AmsPushRequest("https://h/in", 5, "slowstart", 2000, "disabled")
    assert ams.push_request({"pushEndpoint": "https://h/in"}) == ams.AmsPushRequest("https://h/in")  # AMS defaults
    assert ams.push_request({}) == ams.AmsPushRequest() and ams.push_request(None).endpoint == ""
    assert ams.push_request({"pushEndpoint": "https://h/", "maxMessages": 0}).max_messages == 1  # 0: unset


@pytest.mark.parametrize("bad", [
    {"pushEndpoint": "https://h/", "type": "mattermost"},
    {"pushEndpoint": "https://h/", "retryPolicy": {"type": "exponential"}},
    {"pushEndpoint": "https://h/", "retryPolicy": "linear"},
    {"pushEndpoint": "https://h/", "maxMessages": "many"},
    {"pushEndpoint": "https://h/", "retryPolicy": {"period": 10**9}},
    {"pushEndpoint": "https://h/", "authorizationHeader": {"type": "basic"}},
    {"pushEndpoint": 5},
    "not an object",
])
def test_bad_push_configs_are_invalid_argument(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        ams.push_request(bad)


def test_retry_policies_map_onto_googles() -> None:
    linear = ams.retry_policy(ams.AmsPushRequest("https://h/", retry_type="linear", retry_period_ms=1500))
    assert (linear.minimum_backoff, linear.maximum_backoff) == ("1.5s", "1.5s")
    slow = ams.retry_policy(ams.AmsPushRequest("https://h/", retry_type="slowstart"))
    assert (slow.minimum_backoff, slow.maximum_backoff) == ("1s", "600s")


def test_names_and_shapes() -> None:
    assert ams.ams_name("projects/p/topics/t") == "/projects/p/topics/t"
    assert ams.ams_name("_deleted-topic_") == "_deleted-topic_"
    assert ams.google_name("/projects/p/topics/t") == "projects/p/topics/t" == ams.google_name("projects/p/topics/t")
    pull = ams.push_config_wire("", None)
    assert pull["pushEndpoint"] == "" and pull["verified"] is False
    autogen = AmsPush(authorization_type="autogen", authorization_value="v")
    push = ams.push_config_wire("https://h/", autogen, show_secret=True)
    assert push["authorizationHeader"] == {"type": "autogen", "value": "v"} and push["type"] == "http_endpoint"
    assert ams.push_config_wire("https://h/", autogen)["authorizationHeader"] == {"type": "autogen"}  # by default
    received = ams.received_wire({"receivedMessages": [{"ackId": "a", "deliveryAttempt": 2, "message": {
        "messageId": "1", "publishTime": "t", "data": "ZA==", "orderingKey": "k", "attributes": {"x": "y"}}}]})
    assert received == {"receivedMessages": [{"ackId": "a", "message": {
        "attributes": {"x": "y"}, "data": "ZA==", "messageId": "1", "publishTime": "t"}}]}
    assert ams.received_wire({}) == {"receivedMessages": []}


def test_googles_dialect_neither_shows_nor_takes_ams_settings() -> None:
    spec = sub_rec(AmsPush(verified=True)).spec.model_copy(update={"ams_offset_ms": 5})
    assert "amsPush" not in spec.reported().to_wire() and "amsOffsetMs" not in spec.reported().to_wire()


# -- core/replay/offsets.py ------------------------------------------------------------------------------------------
def test_offsets_are_publish_times() -> None:
    assert offsets.offsets(100, None, 0, 50, 0) == offsets.Offsets(100, 100, 100)  # an empty topic
    assert offsets.offsets(100, 500, 0, 50, 0) == offsets.Offsets(100, 501, 501)  # nothing waiting: current = max
    assert offsets.offsets(100, 500, 300, 50, 2) == offsets.Offsets(100, 501, 300)  # moved to 300
    assert offsets.offsets(100, 500, 0, 200, 2).current == 200  # never moved: its creation
    assert offsets.offsets(100, 500, 0, 50, 2).current == 100  # ... or the retention floor
    bounds = offsets.Offsets(100, 501, 300)
    assert offsets.check_offset(100, bounds) == 100 and offsets.check_offset(501, bounds) == 501
    for bad in (99, 502):
        with pytest.raises(InvalidArgument):
            offsets.check_offset(bad, bounds)


def test_offset_and_time_parameters() -> None:
    assert offsets.offset_value("42") == 42 == offsets.offset_value(42)
    for bad in (True, 1.5, "x", None):
        with pytest.raises(InvalidArgument):
            offsets.offset_value(bad)
    assert offsets.time_ms("2019-09-02T13:39:11.100Z") == 1567431551100
    assert offsets.time_ms("2019-09-02 13:39:11.000Z") == 1567431551000  # the library's form for whole seconds
    with pytest.raises(InvalidArgument):
        offsets.time_ms("")


# -- core/live.py ---------------------------------------------------------------------------------------------
def test_tally_and_rates() -> None:
    tally = live.Tally(10.0)
    tally.add("p", "topic#t", {live.PUBLISHED: 2, live.BYTES: 10})
    tally.add("p", "topic#t", {live.PUBLISHED: 3})
    assert tally.counts == {("p", "topic#t"): {live.PUBLISHED: 5, live.BYTES: 10}}
    assert live.rate({"rate_n": 30, "rate_span": 10}) == 3.0 and live.rate({}) == 0.0
    metric = live.metric("subscription.consumption_rate", "subscription", "s", 1.23456, "ts")
    assert (metric["metric_type"], metric["value_type"], metric["timeseries"]) == (
        "rate", "float64", [{"timestamp": "ts", "value": 1.235}])
    assert live.metric("topic.number_of_published_bytes", "topic", "t", 7, "ts")["value_type"] == "int64"


# -- push -----------------------------------------------------------------------------------------------------
def item(mid: str, data: bytes) -> Item:
    return Item(mid, "receipt", 1, mid, Envelope(mid, "2021-02-26T19:13:55.749123Z", data=data), data)


def test_the_generated_authorization_value_is_sent_and_a_batch_body_holds_every_message() -> None:
    autogen = sub_rec(AmsPush(authorization_type="autogen", authorization_value="secret-value"))
    _, headers = build_request(autogen, item("1", b"a"), None)
    assert headers["Authorization"] == "secret-value"
    _, headers = build_request(sub_rec(AmsPush(authorization_type="disabled")), item("1", b"a"), None)
    assert "Authorization" not in headers
    _, headers = build_request(autogen, item("1", b"a"), "jwt")
    assert headers["Authorization"] == "Bearer jwt"  # an OIDC token wins
    body, headers = build_batch_request(autogen, [item("1", b"a"), item("2", b"b")], None)
    messages = json.loads(body)["messages"]
    assert [m["message"]["messageId"] for m in messages] == ["1", "2"]
    assert all(m["subscription"] == NAME for m in messages) and headers["Content-Type"] == "application/json"


def delivery(key: str) -> Delivery:
    return Delivery(f"r-{key}", 1, Envelope(key, "2021-02-26T19:13:55Z", data=b"x"), key=key, group=key, data=b"x")


def test_chunks_travel_as_their_first_message_and_share_its_outcome() -> None:
    rec = sub_rec(AmsPush(max_messages=2))
    assert ams_batches.chunk_size(rec) == 2
    assert ams_batches.chunk_size(sub_rec(AmsPush(max_messages=2), ordered=True)) == 1
    assert ams_batches.chunk_size(sub_rec(None)) == 1
    ds = [delivery(k) for k in "abcde"]
    batch = Batch(rec, PushThrottle(ThrottleState()), ds, 0.0, 1.0, 1.0)
    lanes = ams_batches.group(batch, {d.key: deque([d]) for d in ds}, 2)
    assert list(lanes) == ["a", "c", "e"] and [d.key for d in batch.chunks["a"]] == ["a", "b"]
    batch.results.update({"a": ACKED, "c": Outcome(False, 3)})
    batch.pushed.update({"a", "c"})
    ams_batches.spread(batch)
    assert batch.results["b"] == ACKED and batch.results["d"] == Outcome(False, 3) and "e" not in batch.results
    assert batch.pushed == {"a", "b", "c", "d"}


@dataclass
class _Ctx:
    config: Config


def test_an_unverified_endpoint_waits_only_under_the_deployed_rules() -> None:
    strict, relaxed = _Ctx(Config(deployed=False, push_strict=True)), _Ctx(Config(deployed=False, push_strict=False))
    unverified, verified = sub_rec(AmsPush(verified=False)), sub_rec(AmsPush(verified=True))
    assert not push_ready(strict, unverified)  # type: ignore[arg-type]
    assert push_ready(strict, verified) and push_ready(strict, sub_rec(None))  # type: ignore[arg-type]
    assert push_ready(relaxed, unverified)  # type: ignore[arg-type]


# -- local/tls.py ---------------------------------------------------------------------------------------------
def test_the_certificate_is_made_once_and_kept(tmp_path: Path) -> None:
    from cryptography import x509

    cert, key = ensure_certificate(tmp_path / "tls")
    first = cert.read_bytes()
    assert (key.stat().st_mode & 0o777) == 0o600
    names = x509.load_pem_x509_certificate(first).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert "localhost" in names.value.get_values_for_type(x509.DNSName)
    assert ensure_certificate(tmp_path / "tls") == (cert, key) and cert.read_bytes() == first
