"""Pull, acknowledge and modifyAckDeadline over the subscription's SQS queue and its leases.

pull    : ReceiveMessage (long poll for the first batch, then short polls while batches come
          back full) -> one lease item per response (conditional put) -> bodies (inline, or
          one S3 range GET per raw object).
ack     : one conditional lease update per lease -> DeleteMessageBatch.
modack  : one conditional lease update per lease -> ChangeMessageVisibilityBatch (0 = nack).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chalicelib.core import envelope, limits
from chalicelib.core.ackids import AckId
from chalicelib.core.errors import FailedPrecondition, InvalidArgument
from chalicelib.core.messages import received_message
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import format_timestamp, parse_timestamp
from chalicelib.service.context import Context
from chalicelib.store.queues import Received


def _int_field(body: dict[str, Any], camel: str, snake: str, default: int = 0) -> int:
    raw = body.get(camel, body.get(snake, default))
    try:
        if isinstance(raw, bool) or raw is None:
            raise ValueError
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(f"Invalid value at '{snake}': {raw!r} is not an integer") from None


def _ack_ids(body: Any) -> list[str]:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    raw = body.get("ackIds", body.get("ack_ids"))
    if not isinstance(raw, list) or not raw:
        raise InvalidArgument("No ack ids were given (ack_ids must not be empty).")
    return raw


class PullService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def _subscription(self, name: Name) -> SubscriptionRecord:
        rec = self.ctx.resources.require_subscription(name)
        if rec.spec.detached:
            raise FailedPrecondition(f"Subscription {name.path} is detached.")
        return rec

    # -- pull -------------------------------------------------------------------------------
    def pull(self, name: Name, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
        max_messages = _int_field(body, "maxMessages", "max_messages")
        if not 0 < max_messages <= limits.MAX_PULL_MESSAGES:
            raise InvalidArgument(f"max_messages must be between 1 and {limits.MAX_PULL_MESSAGES}.")
        immediate = bool(body.get("returnImmediately", body.get("return_immediately", False)))
        rec = self._subscription(name)
        deadline_s = rec.spec.ack_deadline
        received = self._receive(rec, max_messages, 0 if immediate else int(self.ctx.config.pull_wait_seconds),
                                 deadline_s)
        if not received:
            return {}
        now = self.ctx.clock()
        lease_id = self.ctx.ids.token()
        self.ctx.leases.open(name.path, lease_id, len(received), now + deadline_s,
                             int(now + deadline_s + limits.RETENTION_DEFAULT))
        envs = [envelope.decode(r.body) for r in received]
        bodies = self._bodies(envs)
        codec = self.ctx.ack_ids
        dead_letter = bool(rec.spec.dead_letter_policy and rec.spec.dead_letter_policy.dead_letter_topic)
        out = []
        for r, env, data in zip(received, envs, bodies):
            ack = codec.encode(AckId(name.path, lease_id, env.message_id, r.receipt, rec.queue_gen))
            out.append(received_message(ack, env.message_id, self._publish_time(env.publish_time), data,
                                        env.attributes, env.ordering_key, r.receive_count if dead_letter else None))
        return {"receivedMessages": out}

    def _receive(self, rec: SubscriptionRecord, max_messages: int, wait: int, visibility: int) -> list[Received]:
        got: list[Received] = []
        size = 0
        while len(got) < max_messages:
            want = min(10, max_messages - len(got))
            batch = self.ctx.queues.receive(rec.queue_url, want, wait if not got else 0, visibility)
            keep: list[Received] = []
            for r in batch:
                size += len(r.body) if '"d":' in r.body else envelope.decode(r.body).length
                if size > limits.MAX_PULL_RESPONSE_BYTES and (got or keep):
                    break
                keep.append(r)
            got.extend(keep)
            if len(keep) < len(batch):  # over the response byte cap: hand the rest back at once
                self.ctx.queues.change_visibility_batch(rec.queue_url, [(r.receipt, 0) for r in batch[len(keep):]])
                break
            if len(batch) < want:
                break
        return got

    def _bodies(self, envs: list[envelope.Envelope]) -> list[bytes]:
        """Inline bodies as they are; S3 bodies with one range GET per raw object."""
        spans: dict[str, tuple[int, int]] = {}
        for e in envs:
            if not e.inline:
                lo, hi = spans.get(e.s3_key, (e.offset, e.offset + e.length))
                spans[e.s3_key] = (min(lo, e.offset), max(hi, e.offset + e.length))
        blobs = {key: (lo, self.ctx.log.read_range(key, lo, hi)) for key, (lo, hi) in spans.items()}
        out = []
        for e in envs:
            if e.data is not None:
                out.append(e.data)
                continue
            lo, blob = blobs[e.s3_key]
            if blob is None:
                raise FailedPrecondition(f"The body of message {e.message_id} is no longer stored.")
            out.append(blob[e.offset - lo : e.offset - lo + e.length])
        return out

    @staticmethod
    def _publish_time(stored: str) -> str:
        return format_timestamp(parse_timestamp(stored, "publish_time"))

    # -- ack / modack ------------------------------------------------------------------------
    def _open(self, name: Name, body: Any) -> tuple[SubscriptionRecord, dict[str, list[AckId]]]:
        raw = _ack_ids(body)
        rec = self._subscription(name)
        codec = self.ctx.ack_ids
        by_lease: dict[str, list[AckId]] = defaultdict(list)
        for text in raw:
            ack = codec.decode(text, name.path)
            if ack.queue_gen == rec.queue_gen:  # ids of a deleted incarnation are ignored
                by_lease[ack.lease_id].append(ack)
        return rec, by_lease

    def acknowledge(self, name: Name, body: Any) -> dict[str, Any]:
        rec, by_lease = self._open(name, body)
        for lease_id, acks in by_lease.items():
            self.ctx.leases.settle(name.path, lease_id, len(acks), None)
        receipts = [a.receipt for acks in by_lease.values() for a in acks]
        if receipts:
            self.ctx.queues.delete_batch(rec.queue_url, receipts)
        return {}

    def modify_ack_deadline(self, name: Name, body: Any) -> dict[str, Any]:
        seconds = _int_field(body if isinstance(body, dict) else {}, "ackDeadlineSeconds", "ack_deadline_seconds")
        if not 0 <= seconds <= limits.MODIFY_DEADLINE_MAX:
            raise InvalidArgument(f"ack_deadline_seconds must be between 0 and {limits.MODIFY_DEADLINE_MAX}.")
        rec, by_lease = self._open(name, body)
        now = self.ctx.clock()
        for lease_id in by_lease:
            self.ctx.leases.settle(name.path, lease_id, 0, now + seconds)
        changes = [(a.receipt, seconds) for acks in by_lease.values() for a in acks]
        if changes:
            self.ctx.queues.change_visibility_batch(rec.queue_url, changes)
        return {}
