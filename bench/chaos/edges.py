"""The client edges of the fault run beside REST: what they report to and how they fail.

A consumer edge hands every delivery and the answer to every acknowledge or nack to a ``Sink`` (the harness's
bookkeeping, ``traffic.Traffic``); a publisher edge raises ``Failed`` (the REST client's, bench/chaos/rest.py)
so that the publisher loop treats all edges alike. The edges themselves:

- bench/chaos/edge_grpc.py: ``GrpcPublisher`` (unary Publish) and ``StreamingSubscriber`` (StreamingPull), with
  google-cloud-pubsub on an insecure channel;
- bench/chaos/edge_ams.py: ``AmsClient`` and ``AmsPuller``, the ARGO Messaging Service dialect over ``requests``.
"""

from __future__ import annotations

from typing import Any, Protocol

from bench.chaos.rest import Failed

__all__ = ["Failed", "Sink"]


class Sink(Protocol):
    """Where a consumer edge reports; every time is the harness's (``now``), every outcome one of
    bench/chaos/history.py's ``ok``, ``error`` or ``unknown``."""

    def now(self) -> float:
        """Harness seconds since the run started (monotonic)."""

    def should_nack(self, sub: str) -> bool:
        """Whether the delivery just reported is to be nacked rather than acknowledged."""

    def received(self, sub: str, edge: str, ack_id: str, message: dict[str, Any], attempt: int) -> tuple[str, str]:
        """One delivery, ``message`` in Google's REST JSON shape; returns (message id, key)."""

    def acknowledged(self, sub: str, edge: str, acks: dict[str, tuple[str, str]], t_sent: float, outcome: str,
                     refused: set[str]) -> None:
        """The answer to one acknowledge of ``acks`` (ack id -> (message id, key)); ``refused``: the ack ids the
        answer refused (exactly-once)."""

    def nacked(self, sub: str, edge: str, ack_ids: list[str], t_sent: float, outcome: str) -> None:
        """The answer to one nack (a modify of the deadline to 0 s)."""

    def error(self, kind: str) -> None:
        """Count a client-side error by kind."""
