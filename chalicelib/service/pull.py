"""Pull, acknowledge and modifyAckDeadline over the subscription's SQS queue and its leases.

pull    : ReceiveMessage (long poll for the first batch, then short polls while batches come
          back full) -> one lease item per response (conditional put) -> bodies (inline, or
          one S3 range GET per raw object, or the Parquet archive once compaction deleted it).
ack     : one conditional lease update per lease -> DeleteMessageBatch.
modack  : one conditional lease update per lease -> ChangeMessageVisibilityBatch (0 = nack).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from chalicelib.core import envelope, limits
from chalicelib.core.ackids import AckId
from chalicelib.core.errors import FailedPrecondition, InvalidArgument
from chalicelib.core.messages import received_message
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.requests import AcknowledgeRequest, ModifyAckDeadlineRequest, PullRequest
from chalicelib.core.timefmt import format_timestamp, parse_timestamp
from chalicelib.service.context import Context
from chalicelib.service.deadletter import Attempts, expiry_visibility, forward, max_attempts, nack_delay, parked_seconds
from chalicelib.store.queues import Received

ACTIVITY_MARK_SECONDS = 3600.0
LINGER_STEP_SECONDS = 0.01


def _attempts(received: list[Received], envs: list[envelope.Envelope], skips: dict[str, int]) -> list[int]:
    """Delivery attempt of each received message: SQS's receive count less the receives that were not deliveries."""
    return [r.receive_count - skips.get(e.message_id, 0) for r, e in zip(received, envs)]


class PullService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.exact = ctx.exact
        self.attempts = Attempts(ctx)
        self._marked: dict[str, float] = {}

    def _subscription(self, name: Name) -> SubscriptionRecord:
        rec = self.ctx.resources.cached_subscription(name)
        if rec.spec.detached:
            raise FailedPrecondition(f"Subscription {name.path} is detached.")
        now = self.ctx.clock()
        if now - self._marked.get(name.path, 0.0) > ACTIVITY_MARK_SECONDS:  # one write per hour, not per call
            self._marked[name.path] = now
            self.ctx.resources.mark_active(name, now)
        return rec

    # -- pull -------------------------------------------------------------------------------
    def pull(self, name: Name, request: PullRequest) -> dict[str, Any]:
        max_messages, immediate = request.max_messages, request.return_immediately
        rec = self._subscription(name)
        deadline_s = rec.spec.ack_deadline
        # Visibility = ack deadline + the retry policy's backoff, so an expiry is followed by that backoff.
        received = self._receive(rec, max_messages, 0 if immediate else int(self.ctx.config.pull_wait_seconds),
                                 expiry_visibility(rec, deadline_s, 1))
        envs = [envelope.decode(r.body) for r in received]
        skips = self.attempts.skips(rec, [(e.message_id, r.receive_count) for r, e in zip(received, envs)])
        received, envs = self._dead_letter(rec, received, envs, skips)
        now = self.ctx.clock()
        lease_id = self.ctx.ids.token()
        if rec.spec.enable_exactly_once_delivery:
            received, envs = self._claim(rec, lease_id, received, envs, now, skips)
        if not received:
            return {}
        attempts = _attempts(received, envs, skips)
        later = [(r.receipt, expiry_visibility(rec, deadline_s, a)) for r, a in zip(received, attempts)
                 if a > 1 and nack_delay(rec, a) != nack_delay(rec, 1)]
        if later:  # redeliveries: a longer backoff after their expiry
            self.ctx.queues.change_visibility_batch(rec.queue_url, later)
        self.ctx.leases.open(name.path, lease_id, len(received), now + deadline_s,
                             int(now + deadline_s + limits.RETENTION_DEFAULT))
        bodies = self._bodies(envs)
        codec = self.ctx.ack_ids
        report_attempts = max_attempts(rec) > 0
        out = []
        for r, env, data, attempt in zip(received, envs, bodies, attempts):
            ack = codec.encode(AckId(name.path, lease_id, env.message_id, r.receipt, rec.queue_gen, attempt))
            out.append(received_message(ack, env.message_id, self._publish_time(env.publish_time), data,
                                        env.attributes, env.ordering_key, attempt if report_attempts else None))
        return {"receivedMessages": out}

    def _dead_letter(self, rec: SubscriptionRecord, received: list[Received], envs: list[envelope.Envelope],
                     skips: dict[str, int]) -> tuple[list[Received], list[envelope.Envelope]]:
        """Forward messages past maxDeliveryAttempts to the dead-letter topic instead of delivering them."""
        limit = max_attempts(rec)
        attempt = _attempts(received, envs, skips)
        dead = [i for i in range(len(received)) if limit and attempt[i] > limit]
        if not dead:
            return received, envs
        bodies = self._bodies([envs[i] for i in dead])
        done: list[str] = []
        parked: list[int] = []
        for i, data in zip(dead, bodies):
            env = envs[i]
            ok = forward(self.ctx, rec, data, env.attributes, env.ordering_key, attempt[i] - 1, env.publish_time)
            if ok:
                done.append(received[i].receipt)
            else:
                parked.append(i)
        if done:
            self.ctx.queues.delete_batch(rec.queue_url, done)
        if parked:  # not a delivery: the attempt count stays where it is
            self.attempts.skipped(rec, {envs[i].message_id: skips.get(envs[i].message_id, 0) for i in parked})
            self.ctx.queues.change_visibility_batch(rec.queue_url,
                                                   [(received[i].receipt, parked_seconds(self.ctx)) for i in parked])
        keep = [i for i in range(len(received)) if i not in set(dead)]
        return [received[i] for i in keep], [envs[i] for i in keep]

    def _claim(self, rec: SubscriptionRecord, token: str, received: list[Received], envs: list[envelope.Envelope],
               now: float, skips: dict[str, int]) -> tuple[list[Received], list[envelope.Envelope]]:
        """Exactly-once: lease each message by conditional write; drop acked duplicates and held ones."""
        keep, acked, held = [], [], {}
        deadline = now + rec.spec.ack_deadline
        for r, env in zip(received, envs):
            state = self.exact.claim(rec.name, env.message_id, token, deadline, now,
                                     int(now + rec.spec.retention_seconds))
            if state == "ok":
                keep.append((r, env))
            elif state == "acked":
                acked.append(r.receipt)
            else:  # another delivery holds it: this receive was not a delivery
                held[env.message_id] = skips.get(env.message_id, 0)
        if acked:  # an already acknowledged duplicate: remove it for good
            self.ctx.queues.delete_batch(rec.queue_url, acked)
        self.attempts.skipped(rec, held)
        return [k[0] for k in keep], [k[1] for k in keep]

    def _receive(self, rec: SubscriptionRecord, max_messages: int, wait: int, visibility: int) -> list[Received]:
        """Long-poll for a first batch, then keep receiving until maxMessages or an empty receive (a publish
        request lands in the queue over a few concurrent sends, and a fuller pull saves a whole pull and
        ack request); after an empty receive, keep polling until the linger (METRO_PULL_LINGER_MS, default
        0) since the first message has passed. Cost decision: docs/decisions/cost-model.md."""
        got: list[Received] = []
        size = 0
        linger_until = 0.0
        while len(got) < max_messages:
            want = min(10, max_messages - len(got))
            batch = self.ctx.queues.receive(rec.queue_url, want, wait if not got else 0, visibility)
            keep: list[Received] = []
            for r in batch:
                size += len(r.body) if '"d":' in r.body else envelope.decode(r.body).length
                if size > limits.MAX_PULL_RESPONSE_BYTES and (got or keep):
                    break
                keep.append(r)
            if keep and not got:
                linger_until = time.monotonic() + self.ctx.config.pull_linger_seconds
            got.extend(keep)
            if len(keep) < len(batch):  # over the response byte cap: hand the rest back at once
                self.ctx.queues.change_visibility_batch(rec.queue_url, [(r.receipt, 0) for r in batch[len(keep):]])
                break
            if not batch:
                if not got or time.monotonic() >= linger_until:
                    break
                time.sleep(LINGER_STEP_SECONDS)
        return got

    def _bodies(self, envs: list[envelope.Envelope]) -> list[bytes]:
        """Inline bodies as they are; S3 bodies with one range GET per raw object."""
        spans: dict[str, tuple[int, int]] = {}
        for e in envs:
            if not e.inline:
                lo, hi = spans.get(e.s3_key, (e.offset, e.offset + e.length))
                spans[e.s3_key] = (min(lo, e.offset), max(hi, e.offset + e.length))
        blobs = {key: (lo, self.ctx.log.read_range(key, lo, hi)) for key, (lo, hi) in spans.items()}
        archived = self._archived(envs, {key for key, (_, blob) in blobs.items() if blob is None})
        out = []
        for e in envs:
            if e.data is not None:
                out.append(e.data)
                continue
            lo, blob = blobs[e.s3_key]
            if blob is None:
                if e.message_id not in archived:
                    raise FailedPrecondition(f"The body of message {e.message_id} is no longer stored.")
                out.append(archived[e.message_id])
                continue
            out.append(blob[e.offset - lo : e.offset - lo + e.length])
        return out

    def _archived(self, envs: list[envelope.Envelope], gone: set[str]) -> dict[str, bytes]:
        """Bodies whose raw object compaction has deleted: read from the Parquet archive."""
        wanted: dict[str, list[str]] = defaultdict(list)
        for e in envs:
            if not e.inline and e.s3_key in gone:
                wanted[e.s3_key].append(e.message_id)
        found: dict[str, bytes] = {}
        for key, ids in wanted.items():
            found.update(self.ctx.log.read_archived(key, ids))
        return found

    @staticmethod
    def _publish_time(stored: str) -> str:
        return format_timestamp(parse_timestamp(stored, "publish_time"))

    # -- ack / modack ------------------------------------------------------------------------
    def _open(self, name: Name, raw: tuple[str, ...]) -> tuple[SubscriptionRecord, list[tuple[str, AckId]]]:
        rec = self._subscription(name)
        codec = self.ctx.ack_ids
        acks = [(text, codec.decode(text, name.path)) for text in raw]
        # Ids of a deleted incarnation of the subscription are ignored.
        return rec, [(t, a) for t, a in acks if a.queue_gen == rec.queue_gen]

    def _settle(self, name: Name, rec: SubscriptionRecord, acks: list[tuple[str, AckId]], seconds: int | None,
                transition: Callable[[AckId], bool]) -> tuple[list[AckId], dict[str, str]]:
        """Apply per-message exactly-once transitions; raise the per-ack-id error after the good ones ran."""
        good: list[AckId] = []
        failed: dict[str, str] = {}
        for text, ack in acks:
            if not rec.spec.enable_exactly_once_delivery or transition(ack):
                good.append(ack)
            else:
                failed[text] = "PERMANENT_FAILURE_INVALID_ACK_ID"
        by_lease: dict[str, int] = defaultdict(int)
        for ack in good:
            by_lease[ack.lease_id] += 1
        now = self.ctx.clock()
        for lease_id, count in by_lease.items():
            self.ctx.leases.settle(name.path, lease_id, count if seconds is None else 0,
                                   None if seconds is None else now + seconds)
        return good, failed

    @staticmethod
    def _raise_failures(failed: dict[str, str]) -> None:
        if failed:
            raise InvalidArgument("Some acknowledgement ids failed: they are expired, already acknowledged or "
                                  "unknown.", details=[{
                                      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                      "reason": "EXACTLY_ONCE_ACKID_FAILURE",
                                      "domain": "pubsub.googleapis.com",
                                      "metadata": failed,
                                  }])

    def acknowledge(self, name: Name, request: AcknowledgeRequest) -> dict[str, Any]:
        rec, acks = self._open(name, request.ack_ids)
        now = self.ctx.clock()
        good, failed = self._settle(name, rec, acks, None,
                                    lambda a: self.exact.ack(name.path, a.message_id, a.lease_id, now))
        if good:
            self.ctx.queues.delete_batch(rec.queue_url, [a.receipt for a in good])
        self._raise_failures(failed)
        return {}

    def modify_ack_deadline(self, name: Name, request: ModifyAckDeadlineRequest) -> dict[str, Any]:
        seconds = request.ack_deadline_seconds
        rec, acks = self._open(name, request.ack_ids)
        now = self.ctx.clock()
        until = now + seconds if seconds else now - 0.001
        good, failed = self._settle(name, rec, acks, seconds,
                                    lambda a: self.exact.extend(name.path, a.message_id, a.lease_id, until, now))
        # A nack (deadline 0) redelivers at once, or after the retry policy's backoff; a new deadline keeps
        # the backoff that follows its expiry.
        changes = [(a.receipt, expiry_visibility(rec, seconds, a.attempt) if seconds else nack_delay(rec, a.attempt))
                   for a in good]
        if changes:
            self.ctx.queues.change_visibility_batch(rec.queue_url, changes)
        self._raise_failures(failed)
        return {}
