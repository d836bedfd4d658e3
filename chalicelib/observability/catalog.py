"""The names of Metro's CloudWatch metrics (pure): what chalicelib/observability/metrics.py emits and what the
alarms and dashboard of infra/observability.py watch, spelled once."""

from __future__ import annotations

NAMESPACE = "Metro"  # the namespace of every Metro metric (service/enqueue.py's and service/deadletter.py's too)
SERVICE = "metro"  # the Powertools service: the ``service`` field of every log line, a dimension of every metric
SERVICE_DIMENSION = "service"
TOPIC_DIMENSION = "Topic"  # per-resource dimensions: only with METRO_METRICS_RESOURCE_DIMENSIONS
SUBSCRIPTION_DIMENSION = "Subscription"

# API use cases: each emits {op}Requests, {op}Latency (ms), {op}Errors (server-side failures) and, where a call
# carries messages, {op}Messages.
PUBLISH, PULL, ACKNOWLEDGE, MODIFY_ACK_DEADLINE = "Publish", "Pull", "Acknowledge", "ModifyAckDeadline"
OPERATIONS = (PUBLISH, PULL, ACKNOWLEDGE, MODIFY_ACK_DEADLINE)


def requests(operation: str) -> str:
    return f"{operation}Requests"


def latency(operation: str) -> str:
    return f"{operation}Latency"


def errors(operation: str) -> str:
    return f"{operation}Errors"


def messages(operation: str) -> str:
    return f"{operation}Messages"


# Push delivery (delivery/push.py): POSTs made, acknowledged by the endpoint, not acknowledged; each POST's time;
# each batch's share of deliveries not acknowledged (percent).
PUSH_DELIVERIES, PUSH_ACKED, PUSH_FAILURES, PUSH_LATENCY = "PushDeliveries", "PushAcked", "PushFailures", "PushLatency"
PUSH_FAILURE_RATE = "PushFailureRate"
# Each pull and push batch: the age of the oldest message it hands out (seconds since its publish), i.e. how long
# the oldest unacknowledged message a consumer is given has waited.
OLDEST_UNACKED_AGE = "OldestUnackedAge"
# The maintenance schedule: one per run that ended without an error (an alarm watches for its absence).
MAINTENANCE_HEARTBEAT = "MaintenanceRuns"
# Background seeks (service/seek_worker.py), each maintenance run: how many run, how many were found stalled, and
# the seconds since the least recently advanced running seek moved (0 with none running).
SEEK_RUNNING, SEEK_STALLED, SEEK_PROGRESS_AGE = "SeekJobsRunning", "SeekJobsStalled", "SeekOldestProgressAge"
# Import topics (service/ingestor.py): messages and bytes published from a source, records refused (schema or
# transform: an IngestionFailureEvent each), per topic with per-resource dimensions.
INGESTED_MESSAGES, INGESTED_BYTES, INGESTION_FAILURES = "IngestedMessages", "IngestedBytes", "IngestionFailures"
