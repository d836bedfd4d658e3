"""What one publish request, pull, acknowledge, push batch or fan-out record asks of AWS, and what that costs.

The arithmetic follows the code paths (docs/architecture.md) and bench's meter (bench/meter.py) so that the model
and the benchmark count alike:

- publish: one consistent Query for the topic's subscriptions (about 460 bytes per subscription item), the
  sends per subscription when publish fans out itself, and the log item's PutItem. A request whose raw bytes fit
  ``METRO_LOG_INLINE_MAX_BYTES`` (7,168; a quarter of it when the stream fans the request out) keeps them in its
  log item: no S3 object, an item of about 170 bytes plus the request's, ``ceil(bytes / 1 KiB)`` write units
  (docs/decisions/log-inline-bodies.md); a larger one keeps the S3 PutObject and the small item. The topic's log
  spreads over ``LOG_SHARDS`` partition keys, the requests with ordering keys on one (core/log_keys.py);
- sends to one subscription: ``ceil(n / 10)`` SendMessageBatch of one message per queue message, or, for a request
  of more than ten messages to a pull subscription, packs of up to 64 KiB of queue bodies sent ten (and 256 KiB)
  to a call, each call billed per started 64 KiB (core/queueing/packs.py);
- pull of m messages: a ReceiveMessage per ten queue messages (packs count as one) plus the empty receive that
  ends it (none when it reached maxMessages), one S3 range GET per raw object when bodies are not inline; a pull
  that splits a pack sends its rest back, which the model leaves out;
- acknowledge of m ids: a DeleteMessageBatch per ten queue messages (one per delivered pack);
- push batch: the mapping's ReceiveMessage, Metro's DeleteMessageBatch, the mapping's own delete of the
  batch, the throttle GetItem (eventually consistent: half a read unit);
- fan-out of one stream record (topics above the direct fan-out threshold): one S3 GetObject, the
  subscriptions Query (per batch of records), the sends, the UpdateItem that marks the item fanned out;
- above ``METRO_FANOUT_SLICE_SUBSCRIPTIONS`` subscriptions the record is sliced (docs/decisions/wide-fanout.md): the
  lane writes the completion item and makes one asynchronous Invoke per slice; each slice is an invocation with
  its own GetObject, its sends and the UpdateItem that counts it done; the last one marks the item fanned out.

Prices come from bench/pricing.py (``PRICES``, ``LAMBDA_MEMORY_GB``), never copied. Lambda GB-seconds are
concurrency x seconds x memory, so a long pull bills its whole wait (bench's duration model leaves empty waits
out: its clients never wait on an empty queue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from bench.capacity.quotas import DEFAULT_QUOTAS, KIB, Quotas
from bench.pricing import LAMBDA_MEMORY_GB, MODEL_CALL_MS, PRICES
from chalicelib.core.log_keys import LOG_SHARDS
from chalicelib.core.queueing.packs import PACK_BYTES, PACK_FROM

SQS_CHUNK = 64 * KIB  # SQS bills one request per started 64 KiB of payload
ENVELOPE_OVERHEAD = 109  # queue body bytes around the base64 data (bench/results.json A: 1,477 for 1 KiB)
POINTER_ENVELOPE = 185  # a queue body that points into the raw object (bench/results.json C)
SUBSCRIPTION_ITEM_BYTES = 460  # a subscription item as the publish Query reads it (bench/results.json A)
LOG_ITEM_BYTES = 170  # the messages table's item of one publish request (bench/results.json A: 164)
LOG_INLINE_MAX_BYTES = 7 * KIB  # METRO_LOG_INLINE_MAX_BYTES: a request's raw bytes kept in its log item up to this
STREAMED_INLINE_SHARE = 4  # service/publish.py STREAM_ITEM_WRITES: a streamed request keeps a quarter of the limit
REQUEST_BYTES_PER_MESSAGE = 64  # a message's raw bytes besides its data (attributes, id, the line's framing)
PACK_MAX_MESSAGES = 100  # METRO_PACK_MAX_MESSAGES
MAX_PULL_RESPONSE_BYTES = 4_000_000  # chalicelib/core/limits.py
PULL_RESPONSE_OVERHEAD = 200  # bytes of a received message around its base64 data
HANDLER_COMPUTE_MS = 5.0  # a handler's own time besides its AWS calls
DDB_MS = MODEL_CALL_MS["dynamodb"]
SQS_MS = MODEL_CALL_MS["sqs"]
S3_GET_MS = MODEL_CALL_MS["s3"]
S3_PUT_MS = MODEL_CALL_MS["s3:PutObject"]
S3_BYTES_PER_MS = 100e6 / 1000  # bench's transfer model, 100 MB/s
LAMBDA_INVOKE_MS = 15.0  # an asynchronous Invoke: Lambda queues the event and answers 202
# The lane's own work per subscription of a sliced record (the filter, the cut, the events' JSON): 20 ms for 10,000
# subscriptions, measured on the development machine; the records' encoding, once per batch, is about 3.5 times that.
SLICE_LANE_MS_PER_SUBSCRIPTION = 0.002
SLICE_ID_BYTES = 19  # a slice id in the completion item's string set (16 hex digits and the set's overhead)
COMPLETION_ITEM_BYTES = 60  # the completion item's key and ttl


@dataclass
class Usage:
    """Billed AWS quantities (requests and units), summed over any number of operations."""

    apigw: float = 0.0  # API Gateway REST requests
    invocations: float = 0.0  # Lambda invocations
    gb_s: float = 0.0  # Lambda GB-seconds
    s3_put: float = 0.0  # S3 PUT-class requests
    s3_get: float = 0.0  # S3 GET-class requests
    ddb_calls: float = 0.0  # DynamoDB requests (GetItem, Query, PutItem, ...)
    ddb_wu: float = 0.0
    ddb_ru: float = 0.0
    sqs_calls: float = 0.0  # SQS API calls
    sqs: float = 0.0  # SQS billed requests (per started 64 KiB)

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def scaled(self, k: float) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) * k for f in fields(self)})

    def add(self, other: Usage, k: float = 1.0) -> None:
        """In place: ``self += k * other``."""
        for name in _FIELDS:
            setattr(self, name, getattr(self, name) + k * getattr(other, name))

    @property
    def aws_calls(self) -> float:
        """AWS requests besides API Gateway and Lambda: what bench reports as ``aws_requests_per_message``."""
        return self.s3_put + self.s3_get + self.ddb_calls + self.sqs_calls

    def by_service(self) -> dict[str, float]:
        return {"API Gateway": self.apigw, "Lambda": self.invocations, "S3": self.s3_put + self.s3_get,
                "DynamoDB": self.ddb_calls, "SQS": self.sqs_calls}

    def cost_by_price(self, gateway: str = "apigw_http") -> dict[str, float]:
        """Dollars by bench.pricing price key (``gateway``: the front door's price, the HTTP API's by default)."""
        quantities = {gateway: self.apigw, "lambda_invocation": self.invocations, "lambda_gb_s": self.gb_s,
                      "s3_put_class": self.s3_put, "s3_get_class": self.s3_get, "ddb_write_unit": self.ddb_wu,
                      "ddb_read_unit": self.ddb_ru, "sqs_request": self.sqs}
        return {key: q * PRICES[key].each for key, q in quantities.items()}

    def cost(self, gateway: str = "apigw_http") -> float:
        return sum(self.cost_by_price(gateway).values())


_FIELDS = tuple(f.name for f in fields(Usage))


# -- sizes ------------------------------------------------------------------------------------------------------


def base64_bytes(n: int) -> int:
    return 4 * math.ceil(n / 3)


def envelope_bytes(message_bytes: int, inline_max: int = 40 * KIB) -> int:
    """A queue body: the data inline (base64) when the envelope fits ``inline_max``, else a pointer."""
    inline = base64_bytes(message_bytes) + ENVELOPE_OVERHEAD
    return inline if inline <= inline_max else POINTER_ENVELOPE


def is_inline(message_bytes: int, inline_max: int = 40 * KIB) -> bool:
    return envelope_bytes(message_bytes, inline_max) != POINTER_ENVELOPE


def request_bytes(n: int, message_bytes: int) -> int:
    """A publish request's raw bytes (what goes to S3, or into the log item)."""
    return n * (message_bytes + REQUEST_BYTES_PER_MESSAGE)


def logged_inline(n: int, message_bytes: int, *, streamed: bool = False, log_max: int = LOG_INLINE_MAX_BYTES,
                  inline_max: int = 40 * KIB) -> bool:
    """Whether a request's bytes stay in its log item (no S3 object): they fit the limit (a quarter of it when the
    stream fans the request out) and every body travels inline in the queue message."""
    limit = log_max // (STREAMED_INLINE_SHARE if streamed else 1)
    return request_bytes(n, message_bytes) <= limit and is_inline(message_bytes, inline_max)


def log_item_bytes(n: int, message_bytes: int, inline: bool) -> int:
    return LOG_ITEM_BYTES + (request_bytes(n, message_bytes) if inline else 0)


def log_partitions(ordered: bool) -> int:
    """Partition keys a topic's requests spread over: the topic's own for requests with ordering keys."""
    return 1 if ordered else LOG_SHARDS


def packed(n: int) -> bool:
    """Whether a request's ``n`` messages reach a pull subscription in packs (more than one send's ten)."""
    return n >= PACK_FROM


def pack_members(message_bytes: int, inline_max: int = 40 * KIB) -> int:
    """Messages one pack holds: its bodies (each with a separator) within 64 KiB, at most METRO_PACK_MAX_MESSAGES."""
    return max(1, min(PACK_MAX_MESSAGES, (PACK_BYTES - 1) // (envelope_bytes(message_bytes, inline_max) + 1)))


def queue_messages(n: int, message_bytes: int, in_packs: bool, inline_max: int = 40 * KIB) -> int:
    """SQS messages a request's ``n`` messages make for one subscription."""
    return math.ceil(n / pack_members(message_bytes, inline_max)) if in_packs and packed(n) else n


def subscription_sends(n: int, message_bytes: int, in_packs: bool, inline_max: int = 40 * KIB,
                       q: Quotas = DEFAULT_QUOTAS) -> tuple[int, int]:
    """SendMessageBatch calls (and the SQS requests they bill) for a request's ``n`` messages to one subscription:
    one message per queue message, or packs for a pull subscription getting more than ten."""
    envelope = envelope_bytes(message_bytes, inline_max)
    count = queue_messages(n, message_bytes, in_packs, inline_max)
    if count == n:
        return send_calls(n, envelope, q)
    return send_calls(count, math.ceil((n * (envelope + 1) + count) / count), q)


def fan_sends(n: int, message_bytes: int, subscriptions: int, pull: int | None, inline_max: int,
              q: Quotas) -> tuple[int, int]:
    """The sends of one request to ``subscriptions`` subscriptions, ``pull`` of them (None: all) pull ones."""
    pulls = subscriptions if pull is None else min(pull, subscriptions)
    pc, pb = subscription_sends(n, message_bytes, True, inline_max, q)
    oc, ob = subscription_sends(n, message_bytes, False, inline_max, q)
    return pc * pulls + oc * (subscriptions - pulls), pb * pulls + ob * (subscriptions - pulls)


def send_calls(n: int, envelope: int, q: Quotas = DEFAULT_QUOTAS) -> tuple[int, int]:
    """SendMessageBatch calls for ``n`` messages to one queue and the SQS requests they bill."""
    per_call = max(1, min(q.sqs_batch_entries, q.sqs_batch_bytes // envelope))
    full, rest = divmod(n, per_call)
    billed = full * max(1, math.ceil(per_call * envelope / SQS_CHUNK))
    if rest:
        billed += max(1, math.ceil(rest * envelope / SQS_CHUNK))
    return full + (1 if rest else 0), billed


def max_pull(message_bytes: int, max_messages: int) -> int:
    """Messages one pull can return: maxMessages, or fewer when the response's byte cap comes first."""
    return max(1, min(max_messages, MAX_PULL_RESPONSE_BYTES // (base64_bytes(message_bytes) + PULL_RESPONSE_OVERHEAD)))


def write_units(item_bytes: int) -> int:
    return max(1, math.ceil(item_bytes / KIB))


def partition_writes(wide: bool, item_bytes: int = LOG_ITEM_BYTES) -> int:
    """Write units one publish request costs its topic's log partitions: the log item, and for a topic the stream
    fans out, the fan-out's UpdateItem of the same item (billed by the item's size)."""
    return write_units(item_bytes) * (2 if wide else 1)


def _query_ru(subscriptions: int) -> float:
    return float(max(1, math.ceil(subscriptions * SUBSCRIPTION_ITEM_BYTES / (4 * KIB))))


def _query_pages(subscriptions: int) -> int:
    return max(1, math.ceil(subscriptions * SUBSCRIPTION_ITEM_BYTES / 1e6))


def _rounds(calls: int, threads: int) -> int:
    return math.ceil(calls / threads) if calls else 0


def _gb_s(ms: float) -> float:
    return ms / 1000 * LAMBDA_MEMORY_GB


# -- operations -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One operation: what it bills and how long it holds its Lambda (ms)."""

    usage: Usage
    ms: float


def publish(n: int, message_bytes: int, subscriptions: int, *, direct_max: int = 20, threads: int = 32,
            inline_max: int = 40 * KIB, log_inline_max: int = LOG_INLINE_MAX_BYTES, pull: int | None = None,
            q: Quotas = DEFAULT_QUOTAS) -> Operation:
    """One publish request of ``n`` messages to a topic of ``subscriptions`` subscriptions (``pull`` of them pull
    subscriptions, which get packs; None: all)."""
    direct = subscriptions <= direct_max
    inline = logged_inline(n, message_bytes, streamed=not direct, log_max=log_inline_max, inline_max=inline_max)
    sends, sqs = fan_sends(n, message_bytes, subscriptions, pull, inline_max, q) if direct else (0, 0)
    put_ms = 0.0 if inline else S3_PUT_MS + request_bytes(n, message_bytes) / S3_BYTES_PER_MS
    ms = HANDLER_COMPUTE_MS + put_ms + _rounds(sends, threads) * SQS_MS + DDB_MS  # the Query overlaps the PutObject
    # an item publish did not fan out also goes into the sparse ``unfanned`` index (one more write unit)
    usage = Usage(apigw=1, invocations=1, s3_put=0 if inline else 1, ddb_calls=_query_pages(subscriptions) + 1,
                  ddb_wu=write_units(log_item_bytes(n, message_bytes, inline)) + (0 if direct else 1),
                  ddb_ru=_query_ru(subscriptions), sqs_calls=sends, sqs=sqs)
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def fanout_record(n: int, message_bytes: int, subscriptions: int, *, threads: int = 32,
                  inline_max: int = 40 * KIB, q: Quotas = DEFAULT_QUOTAS) -> Operation:
    """The stream's fan-out of one publish request (topics above the direct fan-out threshold): the S3 GetObject,
    the sends of one record, and the UpdateItem that marks the log item fanned out (and drops it from the
    ``unfanned`` index: two write units). The invocation and the subscriptions Query are per batch:
    :func:`fanout_batch`."""
    blob = request_bytes(n, message_bytes)
    sends, sqs = fan_sends(n, message_bytes, subscriptions, None, inline_max, q)
    ms = S3_GET_MS + blob / S3_BYTES_PER_MS + _rounds(sends, threads) * SQS_MS + DDB_MS
    usage = Usage(s3_get=1, ddb_calls=1, ddb_wu=2, sqs_calls=sends, sqs=sqs)
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def fanout_batch(subscriptions: int) -> Operation:
    """A fan-out invocation's own part: the invocation and one consistent Query for the topic's subscriptions."""
    pages = _query_pages(subscriptions)
    ms = HANDLER_COMPUTE_MS + pages * DDB_MS
    usage = Usage(invocations=1, ddb_calls=pages, ddb_ru=_query_ru(subscriptions))
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def slice_count(subscriptions: int, per_slice: int) -> int:
    """Slices of a record of a topic of ``subscriptions`` (none: the lane sends them all itself)."""
    return 0 if per_slice <= 0 or subscriptions <= per_slice else math.ceil(subscriptions / per_slice)


def fanout_dispatch(subscriptions: int, slices: int, threads: int = 32) -> Operation:
    """The lane's part of a sliced record (no subscription ordering by key, so the lane sends nothing itself): its
    own work on the subscription list, the completion item's UpdateItem, one asynchronous Invoke per slice in rounds
    of ``threads``, and the UpdateItem that marks the log item fanned out (made by the last slice, billed here once
    per record: two write units)."""
    ms = subscriptions * SLICE_LANE_MS_PER_SUBSCRIPTION + DDB_MS + _rounds(slices, threads) * LAMBDA_INVOKE_MS
    usage = Usage(ddb_calls=2, ddb_wu=write_units(COMPLETION_ITEM_BYTES + slices * SLICE_ID_BYTES) + 2)
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def fanout_slice(n: int, message_bytes: int, subscriptions: int, slices: int, *, threads: int = 32,
                 inline_max: int = 40 * KIB, q: Quotas = DEFAULT_QUOTAS) -> Operation:
    """One slice of ``subscriptions`` subscriptions of a record of a topic cut in ``slices``: its invocation, the
    GetObject, the sends and the UpdateItem that counts it done (the completion item's size in write units)."""
    blob = request_bytes(n, message_bytes)
    sends, sqs = fan_sends(n, message_bytes, subscriptions, None, inline_max, q)
    ms = HANDLER_COMPUTE_MS + S3_GET_MS + blob / S3_BYTES_PER_MS + _rounds(sends, threads) * SQS_MS + DDB_MS
    usage = Usage(invocations=1, s3_get=1, ddb_calls=1,
                  ddb_wu=write_units(COMPLETION_ITEM_BYTES + slices * SLICE_ID_BYTES), sqs_calls=sends, sqs=sqs)
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


@dataclass(frozen=True)
class SlicedRecord:
    """A sliced record: the lane's part, every slice together (``ms``: one full slice's time), their number."""

    lane: Operation
    slices: Operation
    count: int


def fanout_sliced(n: int, message_bytes: int, subscriptions: int, per_slice: int, *, threads: int = 32,
                  inline_max: int = 40 * KIB, q: Quotas = DEFAULT_QUOTAS) -> SlicedRecord:
    count = slice_count(subscriptions, per_slice)
    full = fanout_slice(n, message_bytes, per_slice, count, threads=threads, inline_max=inline_max, q=q)
    total = Usage()
    for size in [per_slice] * (count - 1) + [subscriptions - per_slice * (count - 1)]:
        total.add(fanout_slice(n, message_bytes, size, count, threads=threads, inline_max=inline_max, q=q).usage)
    return SlicedRecord(fanout_dispatch(subscriptions, count, threads), Operation(total, full.ms), count)


def messages_per_queue_message(n: int, message_bytes: int, inline_max: int = 40 * KIB) -> float:
    """A pull subscription's mean messages per SQS message, for publish requests of ``n``."""
    return n / queue_messages(n, message_bytes, True, inline_max)


def pull(m: float, message_bytes: int, max_messages: int, *, per_request: int = 10, wait_s: float = 0.0,
         inline_max: int = 40 * KIB, per_queue_message: float = 1.0) -> Operation:
    """A pull that returns ``m`` messages (a mean: fractions allowed; 0 is an empty long poll of ``wait_s``), from
    queue messages of ``per_queue_message`` messages each (packs)."""
    full = m >= max_pull(message_bytes, max_messages)
    taken = m / per_queue_message  # queue messages received
    bringing = max(1.0, taken / 10) if m else 0.0  # receives that bring messages, up to ten queue messages each
    receives = bringing + (0 if full else 1)
    body = per_queue_message * (envelope_bytes(message_bytes, inline_max) + 1)
    per_receive = max(1, math.ceil(min(10.0, taken) * body / SQS_CHUNK))
    gets = 0.0 if is_inline(message_bytes, inline_max) or not m else min(m, m / per_request + 1)
    ms = HANDLER_COMPUTE_MS + receives * SQS_MS + gets * S3_GET_MS + wait_s * 1000
    usage = Usage(apigw=1, invocations=1, s3_get=gets, sqs_calls=receives,
                  sqs=bringing * per_receive + (0 if full else 1))
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def acknowledge(m: float, per_queue_message: float = 1.0) -> Operation:
    """An acknowledge request of ``m`` ack ids, of queue messages of ``per_queue_message`` messages each (a pack
    all of whose delivered messages are acknowledged is one delete)."""
    deletes = max(1.0, m / per_queue_message / 10)
    ms = HANDLER_COMPUTE_MS + deletes * SQS_MS
    usage = Usage(apigw=1, invocations=1, sqs_calls=deletes, sqs=deletes)
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def push_batch(endpoint_ms: float = 20.0, mapping_deletes: bool = True) -> Operation:
    """One push invocation (a batch of up to 10 messages, one POST each, concurrently)."""
    sqs = 3.0 if mapping_deletes else 2.0
    ms = HANDLER_COMPUTE_MS + DDB_MS + endpoint_ms + SQS_MS
    usage = Usage(invocations=1, ddb_calls=1, ddb_ru=0.5, sqs_calls=sqs, sqs=sqs)
    usage.gb_s = _gb_s(ms)
    return Operation(usage, ms)


def idle_receive() -> Usage:
    """An empty long poll of a push mapping's poller (billed SQS request, no invocation)."""
    return Usage(sqs_calls=1, sqs=1)


def per_message(n: int, message_bytes: int, subscriptions: int, messages_per_pull: float, max_messages: int,
                q: Quotas = DEFAULT_QUOTAS) -> Usage:
    """Steady-state usage per published message: publish in requests of ``n``, every subscription pulled in pulls of
    ``messages_per_pull`` and acknowledged in as many requests (no waiting, no empty pulls)."""
    pub = publish(n, message_bytes, subscriptions, q=q).usage.scaled(1 / n)
    m = messages_per_pull
    k = messages_per_queue_message(n, message_bytes)
    consume = (pull(m, message_bytes, max_messages, per_request=n, per_queue_message=k).usage
               + acknowledge(m, k).usage).scaled(1 / m)
    return pub + consume.scaled(subscriptions)
