"""The fault run's gRPC edge: unary publishes and StreamingPull through google-cloud-pubsub, on an insecure
channel to the API's port (Metro serves gRPC and REST on one port).

The API process is SIGKILLed and restarted on the same port, or SIGSTOPped for a while, during a run. The
publisher therefore retries nothing itself (the harness's loop does, knowing each attempt's outcome) and makes
a new channel after an attempt without an answer. The subscriber leaves the stream to google-cloud-pubsub, which
reopens it after UNAVAILABLE and the other transient errors; a stream the library gives up on is opened again.
"""

from __future__ import annotations

import base64
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timezone
from typing import Any

import grpc
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1.subscriber import exceptions as sub_exc
from google.cloud.pubsub_v1.types import FlowControl
from google.pubsub_v1 import PublisherClient, PubsubMessage
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

from bench.chaos.edges import Failed, Sink
from bench.chaos.history import ERROR, OK, STREAM, UNKNOWN

# gRPC status -> the HTTP status Google's REST dialect gives it, so Failed.outcome reads both edges alike.
# CANCELLED is the client's own doing: no status, an unknown outcome.
STATUSES = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "ABORTED": 409, "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500, "UNKNOWN": 500, "DATA_LOSS": 500, "UNIMPLEMENTED": 501, "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504, "CANCELLED": 0,
}
# Reconnect soon after the API comes back, rather than after gRPC's default backoff of up to two minutes.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
                   ("grpc.max_reconnect_backoff_ms", 2000), ("grpc.max_send_message_length", -1),
                   ("grpc.max_receive_message_length", -1)]
PUBLISH_TIMEOUT = 30.0
ACK_TIMEOUT = 60.0  # an exactly-once ack still unanswered after this is an unknown outcome


def failed(exc: BaseException) -> Failed:
    """A gRPC failure as the REST client's ``Failed``: kind ``gRPC <CODE>`` and the matching HTTP status."""
    if isinstance(exc, gexc.GoogleAPICallError):
        code = exc.grpc_status_code.name if exc.grpc_status_code is not None else ""
        status = STATUSES.get(code, exc.code if isinstance(exc.code, int) else 500)
        return Failed(f"gRPC {code or type(exc).__name__}", status, exc.message)
    return Failed(type(exc).__name__, 0, str(exc)[:200])


def channel(host: str) -> grpc.Channel:
    return grpc.insecure_channel(host, options=CHANNEL_OPTIONS)


def close(client: PublisherClient) -> None:
    transport: Any = client.transport  # untyped
    transport.close()


def rest_message(message: Any) -> dict[str, Any]:
    """A google-cloud-pubsub ``Message`` in Google's REST JSON shape (publish time with milliseconds, as
    Metro's REST dialect prints it)."""
    published: datetime = message.publish_time.astimezone(timezone.utc)
    return {"messageId": message.message_id, "data": base64.b64encode(message.data).decode(),
            "attributes": dict(message.attributes), "orderingKey": message.ordering_key,
            "publishTime": published.strftime("%Y-%m-%dT%H:%M:%S.") + f"{published.microsecond // 1000:03d}Z"}


def pubsub_message(message: dict[str, Any]) -> PubsubMessage:
    """A REST-shaped message (``data`` in base64) as the protobuf message."""
    return PubsubMessage(data=base64.b64decode(message.get("data", "")), attributes=message.get("attributes") or {},
                         ordering_key=message.get("orderingKey", ""))


class GrpcPublisher:
    """One unary Publish RPC per call, without client-side retries or batching: each call is one attempt whose
    outcome the caller knows."""

    def __init__(self, host: str, project: str, timeout: float = PUBLISH_TIMEOUT) -> None:
        self.host, self.project, self.timeout = host, project, timeout
        self._lock = threading.Lock()
        self._client: PublisherClient | None = None

    def _current(self) -> PublisherClient:
        with self._lock:
            if self._client is None:
                self._client = PublisherClient(transport=PublisherGrpcTransport(host=self.host,
                                                                                channel=channel(self.host)))
            return self._client

    def _discard(self, client: PublisherClient) -> None:
        """Drop a channel that gave no answer: the next call connects afresh."""
        with self._lock:
            if self._client is client:
                self._client = None
        close(client)

    def publish(self, topic: str, messages: list[dict[str, Any]]) -> list[str]:
        """Publish ``messages`` (REST-shaped) to ``topic`` (its id); their ids, or ``Failed``."""
        client = self._current()
        try:
            answer = client.publish(topic=f"projects/{self.project}/topics/{topic}",
                                    messages=[pubsub_message(m) for m in messages], retry=None,
                                    timeout=self.timeout)
        except Exception as exc:  # any failure of the attempt is reported, none retried here
            error = failed(exc)
            if error.outcome == UNKNOWN:
                self._discard(client)
            raise error from exc
        return list(answer.message_ids)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            close(client)


def ack_outcome(future: Any, ack_id: str, timeout: float = ACK_TIMEOUT) -> tuple[str, set[str]]:
    """The outcome of an exactly-once ``ack_with_response``/``nack_with_response`` future, and the ack ids it
    refused: INVALID_ACK_ID, FAILED_PRECONDITION and PERMISSION_DENIED are definite refusals; OTHER, a timeout or
    any other failure leaves the outcome unknown."""
    try:
        future.result(timeout=timeout)
    except sub_exc.AcknowledgeError as exc:
        if exc.error_code == sub_exc.AcknowledgeStatus.OTHER:
            return UNKNOWN, set()
        return ERROR, {ack_id}
    except (FutureTimeout, Exception):
        return UNKNOWN, set()
    return OK, set()


class RetryWatch:
    """The ack ids google-cloud-pubsub sent again after a transient error (exactly-once acks and nacks), seen by
    wrapping its dispatcher's retry methods (private: without them, nothing is seen)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: set[str] = set()

    def watch(self, future: Any) -> None:
        dispatcher = getattr(getattr(future, "_manager", None), "_dispatcher", None)
        for name in ("_retry_acks", "_retry_modacks"):
            original = getattr(dispatcher, name, None)
            if original is not None:
                setattr(dispatcher, name, self._wrap(original))

    def _wrap(self, original: Any) -> Any:
        def retry(requests_to_retry: list[Any]) -> Any:
            with self._lock:
                self._ids.update(r.ack_id for r in requests_to_retry)
            return original(requests_to_retry)
        return retry

    def seen(self, ack_id: str) -> bool:
        with self._lock:
            return ack_id in self._ids


class StreamingSubscriber:
    """StreamingPull on ``sub`` with google-cloud-pubsub's ``subscribe()``, reporting to ``sink``.

    Each message is acknowledged or nacked singly, as the sink decides. On an exactly-once subscription the
    acknowledge and the nack wait for the service's answer (``ack_with_response``). On a plain one Google's
    streaming protocol confirms nothing: the ack or nack is sent on the stream and its outcome is ``unknown``.

    google-cloud-pubsub retries an exactly-once ack or nack that met a transient error (the API killed): a refusal
    of the retry (INVALID_ACK_ID: "already acknowledged") does not mean that nothing happened, since the first
    attempt may have been applied with its answer lost. The subscriber therefore watches the library's retries
    (``RetryWatch``) and reports a refused ack id that was retried as ``unknown``.

    google-cloud-pubsub reopens the stream on UNAVAILABLE and the other transient errors (the API killed and
    restarted, or paused: the stream then stalls until it resumes). Should the library end the stream with an
    error, the subscriber counts ``stream: <kind>`` and opens a new one on a new channel.
    """

    def __init__(self, host: str, project: str, sub: str, sink: Sink, exactly_once: bool,
                 max_messages: int = 100) -> None:
        self.host, self.sub, self.sink, self.exactly_once = host, sub, sink, exactly_once
        self.path = f"projects/{project}/subscriptions/{sub}"
        self.flow = FlowControl(max_messages=max_messages)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._future: Any = None
        self.retried = RetryWatch()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"chaos-stream-{sub}")

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Cancel the stream and wait for it to close."""
        self._stop.set()
        with self._lock:
            future = self._future
        if future is not None:
            future.cancel()
        self._thread.join(timeout)

    def _run(self) -> None:
        delay = 0.5
        while not self._stop.is_set():
            client = pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(host=self.host,
                                                                                  channel=channel(self.host)))
            try:
                with self._lock:
                    if self._stop.is_set():
                        return
                    self._future = client.subscribe(self.path, self._on_message, flow_control=self.flow)
                    self.retried.watch(self._future)
                self._future.result()
            except Exception as exc:  # the stream ended: anything but our own cancel is counted and reopened
                if not self._stop.is_set():
                    self.sink.error(f"stream: {failed(exc).kind}")
            finally:
                client.close()
            if self._stop.wait(delay):
                return
            delay = min(delay * 2, 5.0)

    def _on_message(self, message: Any) -> None:
        try:
            ids = self.sink.received(self.sub, STREAM, message.ack_id, rest_message(message),
                                     message.delivery_attempt or 0)
            if self.sink.should_nack(self.sub):
                self.nack(message)
            else:
                self.acknowledge(message, ids)
        except Exception as exc:  # a failing sink must not wedge the stream's lease on the message
            self.sink.error(f"stream callback: {type(exc).__name__}")
            message.nack()

    def acknowledge(self, message: Any, ids: tuple[str, str]) -> None:
        """Acknowledge one message and report the outcome."""
        t_sent = self.sink.now()
        if self.exactly_once:
            outcome, refused = ack_outcome(message.ack_with_response(), message.ack_id)
            if refused and self.retried.seen(message.ack_id):
                outcome, refused = UNKNOWN, set()
        else:
            message.ack()
            outcome, refused = UNKNOWN, set()
        self.sink.acknowledged(self.sub, STREAM, {message.ack_id: ids}, t_sent, outcome, refused)

    def nack(self, message: Any) -> None:
        """Nack one message (a modify of its deadline to 0 s) and report the outcome."""
        t_sent = self.sink.now()
        if self.exactly_once:
            outcome, refused = ack_outcome(message.nack_with_response(), message.ack_id)
            if refused and self.retried.seen(message.ack_id):
                outcome = UNKNOWN
        else:
            message.nack()
            outcome = UNKNOWN
        self.sink.nacked(self.sub, STREAM, [message.ack_id], t_sent, outcome)
