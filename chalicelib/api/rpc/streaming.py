"""StreamingPull, as google-cloud-pubsub's subscriber and Google's other clients use it.

The first request names the subscription, the stream's ack deadline (10-600 s) and the flow control limits.
The stream then pulls on the client's behalf, through the same pull as REST (long polls of the subscription's
queue), never more than the limits allow: a message counts until it is acknowledged or nacked, on the stream
or by a unary call (api/rpc/outstanding.py). Later requests carry heartbeats (empty), acknowledgements and
deadline changes. Every response tells the client whether the subscription orders messages and delivers
exactly once. The stream stays open until the client closes it; a server that stops ends it UNAVAILABLE,
which makes the client reconnect; NOT_FOUND, PERMISSION_DENIED and INVALID_ARGUMENT end it for good.

One thread serves a stream's responses (blocked in a long poll while the subscription is idle) and one reads
its requests.
"""

from __future__ import annotations

import queue
import threading
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import grpc
from google.pubsub_v1 import types

from chalicelib.api.rpc.outstanding import Outstanding, StreamLeases
from chalicelib.api.rpc.transcoding import response_of
from chalicelib.api.rpc.unary import BY_NAME, abort, run, token_of, unexpected
from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument, MetroError

StreamingPullRequest = types.StreamingPullRequest.pb()
StreamingPullResponse = types.StreamingPullResponse.pb()
_PULL, _ACK, _MODACK, _GET = (BY_NAME[n] for n in ("Pull", "Acknowledge", "ModifyAckDeadline", "GetSubscription"))


class Stream:
    """One open StreamingPull: its subscription, token, deadline and leases, and what its requests settled."""

    def __init__(self, first: Any, token: str, leases: StreamLeases) -> None:
        self.subscription = first.subscription
        self.token = token
        self.deadline = first.stream_ack_deadline_seconds
        self.leases = leases
        self.closed = threading.Event()
        self.confirmations: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def apply(self, request: Any, exactly_once: bool) -> None:
        """A request after the first (or the first's own settlements): acks, deadline changes, a new deadline."""
        if request.stream_ack_deadline_seconds:
            self.deadline = request.stream_ack_deadline_seconds
        if request.ack_ids:
            self._settle(_ACK, {"ack_ids": list(request.ack_ids)}, list(request.ack_ids), exactly_once)
        by_seconds: dict[int, list[str]] = defaultdict(list)
        for ack_id, seconds in zip(request.modify_deadline_ack_ids, request.modify_deadline_seconds, strict=False):
            by_seconds[seconds].append(ack_id)
        for seconds, ids in by_seconds.items():
            self._settle(_MODACK, {"ack_ids": ids, "ack_deadline_seconds": seconds}, ids if seconds == 0 else [],
                         exactly_once)

    def _settle(self, rpc: Any, fields: dict[str, Any], settled: list[str], exactly_once: bool) -> None:
        failed: dict[str, str] = {}
        try:
            run(rpc, rpc.request(subscription=self.subscription, **fields), self.token)
        except MetroError as error:
            failed = {k: v for d in error.details for k, v in dict(d.get("metadata", {})).items()}
        finally:
            self.leases.settle(settled)
        if exactly_once and rpc is _ACK:
            self.confirmations.put(types.StreamingPullResponse.AcknowledgeConfirmation.pb()(
                ack_ids=[a for a in fields["ack_ids"] if a not in failed],
                invalid_ack_ids=[a for a in fields["ack_ids"] if a in failed]))


def _check_first(first: Any) -> None:
    if not first.subscription:
        raise InvalidArgument("The first StreamingPullRequest must name a subscription.")
    seconds = first.stream_ack_deadline_seconds
    if not limits.ACK_DEADLINE_MIN <= seconds <= limits.ACK_DEADLINE_MAX:
        raise InvalidArgument(f"Invalid stream_ack_deadline_seconds ({seconds}): it must be between "
                              f"{limits.ACK_DEADLINE_MIN} and {limits.ACK_DEADLINE_MAX}.")
    if first.max_outstanding_messages < 0 or first.max_outstanding_bytes < 0:
        raise InvalidArgument("max_outstanding_messages and max_outstanding_bytes must not be negative.")


class StreamingPull:
    """The StreamingPull handler of a server; ``outstanding`` is shared with its unary calls."""

    def __init__(self, outstanding: Outstanding) -> None:
        self.outstanding = outstanding

    def __call__(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            first = next(requests, None)
            if first is None:
                return
            _check_first(first)
            stream = Stream(first, token_of(context), StreamLeases(first.max_outstanding_messages,
                                                                   first.max_outstanding_bytes))
            subscription = run(_GET, _GET.request(subscription=first.subscription), stream.token)
            yield from self._serve(stream, first, requests, subscription, context)
        except MetroError as error:
            abort(context, error)
        except Exception:
            unexpected(context)

    def _serve(self, stream: Stream, first: Any, requests: Iterator[Any], subscription: dict[str, Any],
               context: grpc.ServicerContext) -> Iterator[Any]:
        exactly_once = bool(subscription.get("enableExactlyOnceDelivery"))
        properties = types.StreamingPullResponse.SubscriptionProperties.pb()(
            exactly_once_delivery_enabled=exactly_once,
            message_ordering_enabled=bool(subscription.get("enableMessageOrdering")))
        stream.apply(first, exactly_once)
        self.outstanding.open(stream.leases)
        context.add_callback(lambda: _close(stream))
        reader = threading.Thread(target=_read, args=(stream, requests, exactly_once), daemon=True,
                                  name=f"grpc-stream-requests-{first.client_id[:16]}")
        reader.start()
        try:
            while not stream.closed.is_set() and context.is_active():
                yield from _confirmations(stream, properties)
                room = stream.leases.room()
                if not room:
                    stream.leases.wait_for_room(1.0)
                    continue
                received = self._pull(stream, room)
                if received:
                    yield StreamingPullResponse(received_messages=received, subscription_properties=properties)
        finally:
            _close(stream)
            self.outstanding.close(stream.leases)

    def _pull(self, stream: Stream, room: int) -> list[Any]:
        answer = run(_PULL, _PULL.request(subscription=stream.subscription, max_messages=room), stream.token)
        received = list(response_of(_PULL, answer).received_messages)
        for message in received:
            stream.leases.hold(message.ack_id, len(message.message.data))
        return received


def _confirmations(stream: Stream, properties: Any) -> Iterator[Any]:
    confirmations = []
    while not stream.confirmations.empty():
        confirmations.append(stream.confirmations.get_nowait())
    if confirmations:
        merged = types.StreamingPullResponse.AcknowledgeConfirmation.pb()()
        for c in confirmations:
            merged.ack_ids.extend(c.ack_ids)
            merged.invalid_ack_ids.extend(c.invalid_ack_ids)
        yield StreamingPullResponse(acknowledge_confirmation=merged, subscription_properties=properties)


def _read(stream: Stream, requests: Iterator[Any], exactly_once: bool) -> None:
    """Apply the stream's later requests until the client half-closes or the call ends."""
    try:
        for request in requests:
            stream.apply(request, exactly_once)
    except Exception:  # the call ended (cancelled, or the client went away)
        pass
    finally:
        _close(stream)


def _close(stream: Stream) -> None:
    stream.closed.set()
    stream.leases.wake()
