"""The AWS default quotas the capacity model checks, each with where Metro meets it.

Figures are the defaults of a new account in us-east-1 (late 2026), from the AWS quota pages named in ``source``.
Most are raisable through Service Quotas; the per-partition DynamoDB figures and the S3 per-prefix rates are not
(they are how the services partition). docs/deploy.md's quota table is generated from :data:`QUOTA_ROWS`
(``python -m bench.capacity --write-docs``; tests/unit/test_capacity_docs.py fails when they disagree).
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
_AWS = "https://docs.aws.amazon.com/"


@dataclass(frozen=True)
class Quotas:
    """AWS default quotas (per account and region unless the name says otherwise)."""

    lambda_concurrency: int = 1_000  # concurrent executions, all functions of the account and region
    lambda_scaling_per_10s: int = 1_000  # new execution environments per function every 10 s
    lambda_timeout_s: float = 30.0  # .chalice/config.json lambda_timeout (the fan-out gets 60 s in prod)
    lambda_payload_mb: int = 6  # a synchronous invocation's request and response
    lambda_async_payload_kb: int = 256  # an asynchronous invocation's event (the classic limit; 1 MB since 2025)
    stream_parallelization_max: int = 10  # concurrent batches per stream shard (ParallelizationFactor)
    apigw_rps: int = 10_000  # requests/s, REST + HTTP + WebSocket APIs of the account and region
    apigw_burst: int = 5_000  # the token bucket's capacity above the steady rate
    apigw_integration_timeout_s: float = 29.0  # REST API integration timeout (raisable for Regional APIs)
    ddb_partition_wcu: int = 1_000  # write units/s one partition serves
    ddb_partition_rcu: int = 3_000  # read units/s one partition serves
    ddb_table_wcu: int = 40_000  # on-demand write request units/s per table (table-level quota)
    ddb_on_demand_initial_wcu: int = 4_000  # a new on-demand table's write units/s
    ddb_on_demand_growth_window_s: float = 1_800.0  # up to twice the previous peak; a new peak counts after 30 min
    s3_put_per_prefix: int = 3_500  # PUT/COPY/POST/DELETE per second per partitioned prefix
    s3_get_per_prefix: int = 5_500  # GET/HEAD per second per partitioned prefix
    sqs_batch_entries: int = 10  # SendMessageBatch / ReceiveMessage / DeleteMessageBatch entries per call
    sqs_batch_bytes: int = 262_144  # what Metro packs per SendMessageBatch (SQS accepts 1 MiB since 2025)
    sqs_fifo_calls_per_queue: int = 300  # API calls/s per FIFO queue per operation (not high-throughput mode)
    sqs_long_poll_max_s: int = 20  # ReceiveMessage WaitTimeSeconds at most
    sqs_in_flight_standard: int = 120_000  # received, not yet deleted, per standard queue


DEFAULT_QUOTAS = Quotas()


@dataclass(frozen=True)
class QuotaRow:
    """One row of docs/deploy.md's quota table."""

    quota: str
    figure: str
    where: str
    source: str  # the AWS page that states the figure


def _n(value: float) -> str:
    return f"{value:,.0f}"


def quota_rows(q: Quotas = DEFAULT_QUOTAS) -> list[QuotaRow]:
    """The quota table's rows, figures from ``q`` (the model's own constants)."""
    return [
        QuotaRow("API Gateway REST throttle", f"{_n(q.apigw_rps)} requests/s, burst {_n(q.apigw_burst)} (token bucket)",
                 "every publish, pull, acknowledge and admin call (push does not pass through it)",
                 _AWS + "apigateway/latest/developerguide/limits.html"),
        QuotaRow("API Gateway REST integration timeout", f"{q.apigw_integration_timeout_s:.0f} s",
                 "a pull's long poll (METRO_PULL_WAIT_SECONDS, 10 s; SQS waits at most "
                 f"{q.sqs_long_poll_max_s} s) must end well inside it",
                 _AWS + "apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html"),
        QuotaRow("Lambda concurrent executions", f"{_n(q.lambda_concurrency)}; {q.lambda_payload_mb} MB synchronous "
                 "payload",
                 "every API request holds one for its duration, and a long pull holds one for up to its wait: "
                 "concurrent long pulls plus publish, ack, push and fan-out invocations must stay under it (the "
                 "payload bounds a request: [Request size](#request-size))",
                 _AWS + "lambda/latest/dg/gettingstarted-limits.html"),
        QuotaRow("Lambda scaling rate", f"{_n(q.lambda_scaling_per_10s)} new environments per function every 10 s",
                 "a cold start or a step in traffic: the API function is one function for publish, pull and ack",
                 _AWS + "lambda/latest/dg/scaling-behavior.html"),
        QuotaRow("Lambda stream event source mapping", "one batch per shard at a time x ParallelizationFactor "
                 f"(<= {q.stream_parallelization_max}; the deploy sets 4), records of one partition key in order",
                 "fan-out from the messages table's stream: one topic's records go through one lane, one after "
                 "another; a topic above METRO_FANOUT_SLICE_SUBSCRIPTIONS (128) subscriptions is handed out in "
                 "slices, so its lane only writes the completion item and invokes",
                 _AWS + "lambda/latest/dg/with-ddb.html"),
        QuotaRow("Lambda asynchronous invocation", f"{q.lambda_async_payload_kb:,} KB payload (1 MB since late "
                 "2025); two retries; events kept up to 6 hours",
                 "one invocation of the fan-out function per slice of a wide topic: a slice carries at most 200 KB "
                 "of subscription records (core/fanout_slices.py); a slice Lambda gave up on leaves its request "
                 "unfanned for the maintenance catch-up",
                 _AWS + "lambda/latest/dg/invocation-async.html"),
        QuotaRow("DynamoDB partition throughput", f"{_n(q.ddb_partition_wcu)} WCU/s and {_n(q.ddb_partition_rcu)} "
                 "RCU/s per partition",
                 "one item per publish request in the messages table; its sort key (the request id) grows "
                 "monotonically within its partition key, so writes always land at the end of the key's range and "
                 "the partition cannot split for throughput. A topic's unordered requests spread over 4 keys, its "
                 "requests with ordering keys stay on one: one topic's publish requests/s <= 4 (or 1) x "
                 f"{_n(q.ddb_partition_wcu)} / the item's write units (1 for the ~170-byte item of a request in S3, "
                 "one per KiB for a small request's bytes kept in the item)",
                 _AWS + "amazondynamodb/latest/developerguide/bp-partition-key-design.html"),
        QuotaRow("DynamoDB on-demand table", f"{_n(q.ddb_on_demand_initial_wcu)} WCU/s when new, then twice the "
                 f"previous peak (a new peak counts after {q.ddb_on_demand_growth_window_s / 60:.0f} min); "
                 f"{_n(q.ddb_table_wcu)} WCU/s per table",
                 "the messages table's writes of all topics together",
                 _AWS + "amazondynamodb/latest/developerguide/on-demand-capacity-mode.html"),
        QuotaRow("S3 request rate", f"{_n(q.s3_put_per_prefix)} PUT/s and {_n(q.s3_get_per_prefix)} GET/s per "
                 "prefix",
                 "one PutObject per publish request above METRO_LOG_INLINE_MAX_BYTES (7,168 raw bytes) under "
                 "`raw/<project>/<topic>/<date>/<hour>/`: one prefix per topic (and hour), which binds before the "
                 "topic's four log partitions",
                 _AWS + "AmazonS3/latest/userguide/optimizing-performance.html"),
        QuotaRow("SQS standard queues", f"no throughput limit; {q.sqs_batch_entries} entries per batch call, one "
                 f"queue per call; Metro packs {_n(q.sqs_batch_bytes)} bytes per SendMessageBatch (SQS accepts "
                 f"1 MiB since 2025); {_n(q.sqs_in_flight_standard)} in flight per queue",
                 "fan-out: a publish request of n messages costs ceil(n / 10) SendMessageBatch per subscription (a "
                 "pull subscription getting more than ten takes them in packs of up to 64 KiB, up to ten packs a "
                 "call), so "
                 "a topic of 10,000 subscriptions makes 10,000 sends per request (publish sends itself for up to "
                 "METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS, 20; above, the stream's fan-out does, one topic's records "
                 "in order in one lane, which hands a topic of more than 128 out in parallel slices)",
                 _AWS + "AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"),
        QuotaRow("SQS FIFO queues", f"{_n(q.sqs_fifo_calls_per_queue)} API calls/s per queue and operation "
                 "(high-throughput mode: more)",
                 "ordered subscriptions (not in the model's profiles)",
                 _AWS + "AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-fifo.html"),
    ]
