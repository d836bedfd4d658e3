"""The cost model: AWS list prices (with their date) applied to the requests the benchmark counted.

Prices are us-east-1 list prices of late 2026 (docs/decisions/cost-model.md lists them); free tiers are ignored.
What is priced, per scenario window:

- The front door: one request per HTTP call the clients made (publish, pull, acknowledge), at the HTTP API's
  price (``make deploy``'s default) unless ``front_door`` names the REST API's; an HTTP API meters each started
  512 KB of a request as one request, which the benchmark's requests stay below.
- Lambda: one invocation per API request plus one per fan-out batch, at ``LAMBDA_MEMORY_GB``. GB-seconds
  by a stated duration model (``MODEL_CALL_MS``): the handler time measured locally, less the time its
  AWS calls took against moto, plus an assumed in-region latency per call. Locally each call goes to
  moto in the same GIL-bound process and takes 30-60 ms under load, which would bill the emulator's
  slowness; the total at the raw local durations is reported too (``usd_per_million_local_durations``).
- S3, DynamoDB, SQS, SNS: from the counted requests and the units bench/meter.py derived from them.
- The pump (reading the DynamoDB stream, its checkpoints) costs nothing: on AWS, Lambda's event source
  poller reads DynamoDB Streams for free and keeps its own checkpoints. Fan-out itself is priced.
- Push: one Lambda invocation per push batch (part ``push``, priced like fan-out, with its requests).
  The push pump's SQS receives stand for Lambda's SQS poller, whose requests AWS bills as ordinary SQS
  requests: priced. Its DynamoDB reads (listing push subscriptions, reading the throttle before a
  receive) have no AWS counterpart (the push handler reads the throttle itself): not priced.
- Not priced: storage (S3 raw objects $0.023/GB-month for the retention window, DynamoDB items), data
  transfer (in-region is free; internet egress is billed by both clouds alike), CloudWatch logs.

Google Pub/Sub (https://cloud.google.com/pubsub/pricing): $40 per TiB of throughput, publish plus
delivery. A message's billed volume is its data + attribute keys and values + 20 bytes of timestamp +
its message id (we assume Google's 16-digit ids); each publish request and each non-empty pull response
is billed at least 1000 bytes. The first 10 GiB a month are free (ignored here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.store.aws import Key, Tally

PRICES_AS_OF = "2026-11 (late 2026)"
REGION = "us-east-1"
SOURCE = "aws.amazon.com pricing pages, us-east-1 list prices (AWS); cloud.google.com/pubsub/pricing (Google)"
LAMBDA_MEMORY_GB = 0.5
GOOGLE_MESSAGE_ID_BYTES = 16
GOOGLE_TIMESTAMP_BYTES = 20
GOOGLE_MIN_REQUEST_BYTES = 1000
TIB = 1024**4
FRONT_DOORS = ("apigw_http", "apigw_rest")  # the price keys of the front doors `make deploy` offers
HTTP_API_METERED_BYTES = 512 * 1024


@dataclass(frozen=True)
class Price:
    usd: float
    per: float
    unit: str

    @property
    def each(self) -> float:
        return self.usd / self.per


PRICES: dict[str, Price] = {
    "apigw_http": Price(1.00, 1e6, "API Gateway HTTP API requests (per started 512 KB)"),
    "apigw_rest": Price(3.50, 1e6, "API Gateway REST requests"),
    "lambda_invocation": Price(0.20, 1e6, "Lambda invocations"),
    "lambda_gb_s": Price(0.0000166667, 1, "Lambda GB-seconds"),
    "s3_put_class": Price(0.005, 1e3, "S3 PUT/COPY/POST/LIST requests"),
    "s3_get_class": Price(0.0004, 1e3, "S3 GET/HEAD requests"),
    "ddb_write_unit": Price(0.625, 1e6, "DynamoDB on-demand write units (1 KiB)"),
    "ddb_read_unit": Price(0.125, 1e6, "DynamoDB on-demand read units (4 KiB, consistent)"),
    "sqs_request": Price(0.40, 1e6, "SQS standard requests (per 64 KiB chunk)"),
    "sqs_fifo_request": Price(0.50, 1e6, "SQS FIFO requests (per 64 KiB chunk)"),
    "sns_publish": Price(0.50, 1e6, "SNS publish requests (per 64 KiB chunk); SQS deliveries free"),
    "ddb_streams_lambda": Price(0.0, 1, "DynamoDB Streams GetRecords by a Lambda trigger (free)"),
    "google_tib": Price(40.0, TIB, "Google Pub/Sub throughput bytes (publish + delivery)"),
}

FREE_PARTS = ("pump",)  # Lambda's stream poller: free on AWS
LOCAL_ONLY_PARTS = ("push-pump",)  # Lambda's SQS poller: its receives are billed, the local bookkeeping is not


def http_api_requests(request_bytes: int) -> int:
    """How many requests an HTTP API bills for one request of ``request_bytes``: one per started 512 KB."""
    return max(1, math.ceil(request_bytes / HTTP_API_METERED_BYTES))


def price_table() -> list[dict[str, Any]]:
    return [{"key": k, "usd": p.usd, "per": p.per, "unit": p.unit} for k, p in PRICES.items()]


# -- AWS requests -> dollars -----------------------------------------------------------------------


def billable(part: str, service: str) -> bool:
    """Whether AWS would bill this part's requests to this service (see the module docstring)."""
    return part not in FREE_PARTS and not (part in LOCAL_ONLY_PARTS and service != "sqs")


def request_cost(part: str, service: str, tally: Tally) -> dict[str, float]:
    """Dollars by price key for one (part, service, operation) tally."""
    if not billable(part, service):
        return {}
    u = tally.units
    out: dict[str, float] = {}
    if service == "s3":
        out["s3_put_class"] = u.get("put_class", 0.0) * PRICES["s3_put_class"].each
        out["s3_get_class"] = u.get("get_class", 0.0) * PRICES["s3_get_class"].each
    elif service == "dynamodb":
        out["ddb_write_unit"] = u.get("wu", 0.0) * PRICES["ddb_write_unit"].each
        out["ddb_read_unit"] = u.get("ru", 0.0) * PRICES["ddb_read_unit"].each
    elif service == "sqs":
        out["sqs_request"] = u.get("billed", 0.0) * PRICES["sqs_request"].each
        out["sqs_fifo_request"] = u.get("billed_fifo", 0.0) * PRICES["sqs_fifo_request"].each
    elif service == "sns":
        out["sns_publish"] = u.get("billed", 0.0) * PRICES["sns_publish"].each
    return {k: v for k, v in out.items() if v}


@dataclass
class Invocations:
    """Lambda invocations of one kind, with their summed billed duration."""

    count: int = 0
    billed_ms: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.billed_ms += math.ceil(seconds * 1000)


def lambda_cost(inv: Invocations, billed_ms: float | None = None) -> dict[str, float]:
    gb_s = (inv.billed_ms if billed_ms is None else billed_ms) / 1000 * LAMBDA_MEMORY_GB
    return {"lambda_invocation": inv.count * PRICES["lambda_invocation"].each,
            "lambda_gb_s": gb_s * PRICES["lambda_gb_s"].each}


# Lambda duration model: assumed in-region AWS latency of one call (ms), plus transfer at 100 MB/s for S3.
# A handler's modelled duration = (measured local handler time - measured local time in AWS calls)
#                               + the sum of its calls' modelled latencies.
# Locally every call goes to moto in the same GIL-bound process (30-60 ms under load); the model keeps
# the measured compute and replaces the emulator's latency. Empty long-poll waits are not billed by it.
MODEL_CALL_MS = {"dynamodb": 5.0, "sqs": 10.0, "s3:PutObject": 25.0, "s3": 15.0, "sns": 15.0}
MODEL_S3_BYTES_PER_MS = 100e6 / 1000


def model_call_ms(service: str, operation: str, tally: Tally) -> float:
    per_call = MODEL_CALL_MS.get(f"{service}:{operation}", MODEL_CALL_MS.get(service, 10.0))
    transfer = (tally.units.get("bytes_in", 0.0) + tally.units.get("bytes_out", 0.0)) / MODEL_S3_BYTES_PER_MS
    return tally.calls * per_call + transfer


def modelled_ms(part: str, inv: Invocations, counts: Mapping[Key, Tally]) -> float:
    """Billed milliseconds of a part's invocations under the duration model (see MODEL_CALL_MS)."""
    local_aws = sum(t.seconds * 1000 for (p, _, _), t in counts.items() if p == part)
    model_aws = sum(model_call_ms(s, o, t) for (p, s, o), t in counts.items() if p == part)
    return max(0.0, inv.billed_ms - local_aws) + model_aws + 0.5 * inv.count  # + rounding up to 1 ms


@dataclass
class CostReport:
    total: float
    by_price: dict[str, float]  # price key -> dollars
    by_operation: list[dict[str, Any]]  # one row per (part, service, operation), with dollars
    requests: dict[str, float]  # billed quantities: API requests, invocations, units
    total_local_durations: float  # the total with Lambda GB-s at the measured local durations

    def per_million(self, messages: int) -> float:
        return self.total * 1e6 / messages if messages else 0.0


def cost(counts: Mapping[Key, Tally], api: Mapping[str, Invocations],
         events: Mapping[str, Invocations] | None = None, front_door: str = "apigw_http") -> CostReport:
    """Price one measurement window: AWS requests by part/service/operation plus API and event handler
    (``fanout``, ``push``) invocations, the API requests at the price of ``front_door`` (a key of FRONT_DOORS)."""
    if front_door not in FRONT_DOORS:
        raise ValueError(f"front_door must be one of {FRONT_DOORS}, not {front_door!r}")
    events = {k: v for k, v in (events or {}).items() if v.count}
    by_price: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    local_gb_s_usd = 0.0

    def add(key: str, usd: float) -> None:
        by_price[key] = by_price.get(key, 0.0) + usd

    api_requests = sum(i.count for i in api.values())
    add(front_door, api_requests * PRICES[front_door].each)
    invoked = [(f"api:{verb}", "apigateway+lambda", inv) for verb, inv in sorted(api.items())]
    invoked += [(kind, "lambda", inv) for kind, inv in sorted(events.items())]
    model_ms_total = 0.0
    for part, service, inv in invoked:
        ms = modelled_ms(part, inv, counts)
        model_ms_total += ms
        lam = lambda_cost(inv, ms)
        local_gb_s_usd += lambda_cost(inv)["lambda_gb_s"]
        for k, v in lam.items():
            add(k, v)
        gateway = inv.count * PRICES[front_door].each if service.startswith("apigateway") else 0.0
        rows.append({"part": part, "service": service, "operation": "invoke", "calls": inv.count,
                     "usd": gateway + sum(lam.values()),
                     "units": {"billed_ms": ms, "local_ms": inv.billed_ms}})
    for (part, service, op), tally in sorted(counts.items()):
        dollars = request_cost(part, service, tally)
        for k, v in dollars.items():
            add(k, v)
        rows.append({"part": part, "service": service, "operation": op, "calls": tally.calls,
                     "attempts": tally.attempts, "errors": tally.errors, "usd": sum(dollars.values()),
                     "ms_per_call": round(tally.seconds * 1000 / tally.calls, 2) if tally.calls else 0.0,
                     "units": dict(tally.units)})
    quantities = {
        "apigw_requests": float(api_requests),
        "lambda_invocations": float(api_requests + sum(i.count for i in events.values())),
        "lambda_gb_s": model_ms_total / 1000 * LAMBDA_MEMORY_GB,
        "lambda_gb_s_local": (sum(i.billed_ms for i in api.values()) + sum(i.billed_ms for i in events.values()))
        / 1000 * LAMBDA_MEMORY_GB,
    }
    for key, service, unit in (("s3_put", "s3", "put_class"), ("s3_get", "s3", "get_class"),
                               ("ddb_wu", "dynamodb", "wu"), ("ddb_ru", "dynamodb", "ru"),
                               ("sqs_billed", "sqs", "billed"), ("sqs_fifo_billed", "sqs", "billed_fifo"),
                               ("sns_billed", "sns", "billed")):
        quantities[key] = sum(t.units.get(unit, 0.0) for (p, s, _), t in counts.items()
                              if s == service and billable(p, s))
    total = sum(by_price.values())
    return CostReport(total, by_price, rows, quantities, total - by_price.get("lambda_gb_s", 0.0) + local_gb_s_usd)


def calls_per_item(counts: Mapping[Key, Tally], items: int) -> dict[str, float]:
    """AWS calls per message (or record) by ``service:operation``, over every part."""
    out: dict[str, float] = {}
    for (_, service, op), t in counts.items():
        out[f"{service}:{op}"] = out.get(f"{service}:{op}", 0.0) + t.calls / items
    return dict(sorted(out.items()))


def per_million(counts: Mapping[Key, Tally], part: str, invocations: Invocations, items: int) -> dict[str, Any]:
    """A measurement of ``items`` handled by ``part``'s invocations, priced and scaled to a million: the total, by
    price key and the billed quantities."""
    report = cost(counts, {}, {part: invocations})
    scale = 1e6 / items if items else 0.0
    return {"total": report.total * scale, "by_price": {k: v * scale for k, v in sorted(report.by_price.items()) if v},
            "quantities": {k: v * scale for k, v in report.requests.items() if v}}


# -- Google Pub/Sub --------------------------------------------------------------------------------


def google_message_bytes(data_len: int, attributes: Mapping[str, str]) -> int:
    attrs = sum(len(k.encode()) + len(v.encode()) for k, v in attributes.items())
    return data_len + attrs + GOOGLE_TIMESTAMP_BYTES + GOOGLE_MESSAGE_ID_BYTES


def google_billed_bytes(requests: Iterable[int]) -> int:
    """Billed volume of publish requests / non-empty pull responses, given each one's message bytes."""
    return sum(max(GOOGLE_MIN_REQUEST_BYTES, b) for b in requests)


def google_cost(publish_requests: Iterable[int], delivery_responses: Iterable[int]) -> float:
    billed = google_billed_bytes(publish_requests) + google_billed_bytes(delivery_responses)
    return billed * PRICES["google_tib"].each


def subtract(after: Mapping[Key, Tally], before: Mapping[Key, Tally]) -> dict[Key, Tally]:
    """The counts of a window: ``after - before``."""
    out: dict[Key, Tally] = {}
    for key, t in after.items():
        b = before.get(key, Tally())
        delta = Tally(t.calls - b.calls, t.attempts - b.attempts, t.errors - b.errors,
                      {k: v - b.units.get(k, 0.0) for k, v in t.units.items()}, t.seconds - b.seconds)
        if delta.calls or delta.attempts:
            out[key] = delta
    return out
