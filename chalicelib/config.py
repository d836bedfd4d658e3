"""All configuration, read from environment variables in this one module."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def flag(name: str, default: bool) -> bool:
    """A boolean variable: 1/0, true/false, yes/no or on/off in any case; unset or empty means ``default``.

    Anything else refuses to start, naming the variable: a mistyped switch must not quietly mean on (or off)."""
    raw = _env(name, "").strip()
    if not raw:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError(f"{name} must be one of 1/0, true/false, yes/no, on/off (any case), not {raw!r}")


def messages_stream_arn() -> str:
    """METRO_MESSAGES_STREAM_ARN: the messages table's stream, which drives fan-out (set by the deploy)."""
    return _env("METRO_MESSAGES_STREAM_ARN", "arn:aws:dynamodb:local")


def iam_record_dir() -> str:
    """METRO_IAM_RECORD: a directory where each process appends the AWS calls it makes, by acting function, for
    the IAM conformance gate of ``make test`` (chalicelib/store/call_record.py, infra/iam_gate.py); empty: off."""
    return _env("METRO_IAM_RECORD", "").strip()


def log_level() -> str:
    """METRO_LOG_LEVEL: the level of Metro's loggers (``metro.*``)."""
    return _env("METRO_LOG_LEVEL", "INFO").strip().upper()


def deployed() -> bool:
    """METRO_MODE=aws: running as the deployed functions (the deploy sets it), not the local stack."""
    return _env("METRO_MODE", "local") == "aws"


def log_format() -> str:
    """METRO_LOG_FORMAT: ``json`` (Powertools' structured lines, one JSON object per record) or ``text``; json when
    deployed (METRO_MODE=aws), text locally."""
    raw = _env("METRO_LOG_FORMAT", "").strip().lower() or ("json" if deployed() else "text")
    if raw not in ("json", "text"):
        raise ValueError(f"METRO_LOG_FORMAT must be json or text, not {raw!r}")
    return raw


def metrics_enabled() -> bool:
    """METRO_METRICS: emit Metro's CloudWatch metrics (embedded metric format lines on stdout); on when deployed."""
    return flag("METRO_METRICS", deployed())


def metrics_resource_dimensions() -> bool:
    """METRO_METRICS_RESOURCE_DIMENSIONS: also emit the message counts per topic and per subscription (one custom
    metric per resource and metric name: docs/operations.md has the cost); off by default."""
    return flag("METRO_METRICS_RESOURCE_DIMENSIONS", False)


MAX_AUTH_CACHE_SECONDS = 60.0
LOCAL_ACK_SECRET = "metro-local-secret"  # local open mode only: keys mode and a deployed Metro refuse it


def _auth_mode() -> str:
    """``open`` (everyone is service_admin) or ``keys`` (a token on every route); keys when deployed."""
    deployed = _env("METRO_MODE", "local") == "aws"
    return _env("METRO_AUTH", "keys" if deployed else "open").strip().lower()


def _auth_cache_seconds() -> float:
    return min(max(float(_env("METRO_AUTH_CACHE_SECONDS", "30")), 0.0), MAX_AUTH_CACHE_SECONDS)


def _push_strict() -> bool:
    """METRO_PUSH_STRICT when it is set (``0`` opts a keys-mode stack out); otherwise on whenever keys are on."""
    return flag("METRO_PUSH_STRICT", _auth_mode() == "keys")


def _own_ports() -> tuple[int, ...]:
    """The ports of the local stack: the API, the AMS dialect's HTTPS endpoint and the AWS emulator."""
    return tuple(int(_env(name, default)) for name, default in
                 (("METRO_PORT", "8085"), ("METRO_AMS_PORT", "8443"), ("METRO_EMULATOR_PORT", "4566")))


@dataclass(frozen=True)
class Quotas:
    """Per-project resource quotas (docs/security.md); 0 switches one off. Google's defaults where it has them."""

    topics: int = field(default_factory=lambda: int(_env("METRO_QUOTA_TOPICS", "10000")))
    subscriptions: int = field(default_factory=lambda: int(_env("METRO_QUOTA_SUBSCRIPTIONS", "10000")))
    subscriptions_per_topic: int = field(default_factory=lambda: int(_env("METRO_QUOTA_SUBSCRIPTIONS_PER_TOPIC",
                                                                          "10000")))
    # Each push subscription is a Lambda event source mapping that polls its queue (a thread locally).
    push_subscriptions: int = field(default_factory=lambda: int(_env("METRO_QUOTA_PUSH_SUBSCRIPTIONS", "100")))


@dataclass(frozen=True)
class Config:
    region: str = field(default_factory=lambda: _env("AWS_REGION", _env("AWS_DEFAULT_REGION", "us-east-1")))
    endpoint_url: str | None = field(default_factory=lambda: os.environ.get("AWS_ENDPOINT_URL") or None)
    resources_table: str = field(default_factory=lambda: _env("METRO_RESOURCES_TABLE", "metro-resources"))
    messages_table: str = field(default_factory=lambda: _env("METRO_MESSAGES_TABLE", "metro-messages"))
    leases_table: str = field(default_factory=lambda: _env("METRO_LEASES_TABLE", "metro-leases"))
    bucket: str = field(default_factory=lambda: _env("METRO_BUCKET", "metro-messages"))
    queue_prefix: str = field(default_factory=lambda: _env("METRO_QUEUE_PREFIX", "metro"))
    ack_secret: bytes = field(default_factory=lambda: _env("METRO_ACK_SECRET", LOCAL_ACK_SECRET).encode())
    # Bodies up to this many bytes travel inline in the SQS message; larger ones are read from S3.
    inline_max_bytes: int = field(default_factory=lambda: int(_env("METRO_INLINE_MAX_BYTES", str(40 * 1024))))
    # A publish request whose raw bytes (header and bodies) are at most this many is kept in its log item, with no
    # S3 object of its own (docs/decisions/log-inline-bodies.md); 0 stores every request in S3.
    log_inline_max_bytes: int = field(default_factory=lambda: int(_env("METRO_LOG_INLINE_MAX_BYTES", str(7 * 1024))))
    # Up to this many messages of a publish request share one SQS message for a plain pull subscription (a pack,
    # core/queueing/packs.py); 1 sends each message alone.
    pack_max_messages: int = field(default_factory=lambda: max(1, int(_env("METRO_PACK_MAX_MESSAGES", "100"))))
    # A pack of a request stored in S3 carries pointers into its object, not the bodies: less SQS payload, one S3
    # range GET per pull (docs/decisions/sqs-packs.md); off by default.
    pack_pointers: bool = field(default_factory=lambda: flag("METRO_PACK_POINTERS", False))
    # How long a pull without returnImmediately waits for a first message.
    pull_wait_seconds: float = field(default_factory=lambda: float(_env("METRO_PULL_WAIT_SECONDS", "10")))
    # Topic and subscription records are cached this long on the data path (publish, pull, ack) of a warm
    # process; a change made through another instance is seen after at most this delay. 0 = no cache.
    metadata_cache_seconds: float = field(default_factory=lambda: float(_env("METRO_METADATA_CACHE_SECONDS", "5")))
    # Live usage counters: each process writes its tally at most this often (-1 turns them off; core/live.py).
    counter_flush_seconds: float = field(default_factory=lambda: float(_env("METRO_COUNTER_FLUSH_SECONDS", "10")))
    # Publish enqueues into the subscriptions' queues itself (the stream fans out only what it could not).
    direct_fanout: bool = field(default_factory=lambda: flag("METRO_DIRECT_FANOUT", True))
    # Topics with more subscriptions than this are fanned out by the stream handler, not by publish.
    direct_fanout_max_subscriptions: int = field(
        default_factory=lambda: int(_env("METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS", "20")))
    # The maintenance run fans out again what is still unfanned this long after its publish (a fan-out outage),
    # at most fanout_catchup_batch publish requests per run.
    fanout_catchup_seconds: float = field(default_factory=lambda: float(_env("METRO_FANOUT_CATCHUP_SECONDS", "900")))
    fanout_catchup_batch: int = field(default_factory=lambda: int(_env("METRO_FANOUT_CATCHUP_BATCH", "500")))
    # The stream's fan-out hands a topic of more than this many subscriptions to parallel slices of at most this
    # many, each an asynchronous invocation of the fan-out function (docs/decisions/wide-fanout.md); 0 = never.
    fanout_slice_subscriptions: int = field(
        default_factory=lambda: int(_env("METRO_FANOUT_SLICE_SUBSCRIPTIONS", "128")))
    fanout_function: str = field(default_factory=lambda: _env("METRO_FANOUT_FUNCTION", "metro-dev-fanout"))
    # A pull that holds messages collects until an empty receive, and then keeps polling until this long
    # after its first message (fuller pulls, higher latency).
    pull_linger_seconds: float = field(default_factory=lambda: float(_env("METRO_PULL_LINGER_MS", "0")) / 1000)
    deployed: bool = field(default_factory=lambda: _env("METRO_MODE", "local") == "aws")
    log_level: str = field(default_factory=log_level)
    # How long a message waits before Metro retries forwarding it when its dead-letter topic is missing.
    dead_letter_retry_seconds: int = field(default_factory=lambda: int(_env("METRO_DEAD_LETTER_RETRY_SECONDS",
                                                                           "300")))
    # How long a last delivery attempt (maxDeliveryAttempts) stays hidden after its ack deadline, so that the
    # dead-letter sweep can still claim and forward it (docs/policies.md); at least twice the sweep's interval.
    dead_letter_grace_seconds: int = field(default_factory=lambda: int(_env("METRO_DEAD_LETTER_GRACE_SECONDS",
                                                                           "150")))
    quotas: Quotas = field(default_factory=Quotas)
    # --- seek (docs/decisions/seek.md) ---
    # A seek whose log holds more messages than this fills its new queue generation in the background: the call
    # returns once it has read this many, and the seek worker goes on, reading seek_chunk_messages per
    # invocation (progress at GET .../subscriptions/{s}:seekStatus).
    seek_inline_max_messages: int = field(default_factory=lambda: int(_env("METRO_SEEK_INLINE_MAX_MESSAGES",
                                                                           "20000")))
    seek_chunk_messages: int = field(default_factory=lambda: int(_env("METRO_SEEK_CHUNK_MESSAGES", "100000")))
    # The seek worker Lambda (deployed mode) and how long one invocation may hold a seek (above its timeout).
    seek_function: str = field(default_factory=lambda: _env("METRO_SEEK_FUNCTION", "metro-dev-seek_worker"))
    # The function that runs message transforms' JavaScript, deployed (store/transformer.py, docs/transforms.md)
    transform_function: str = field(default_factory=lambda: _env("METRO_TRANSFORM_FUNCTION", "metro-dev-transform"))
    # One message transform call's time limit (ms) and the memory cap of a transform's V8 context (bytes)
    transform_call_ms: float = field(default_factory=lambda: float(_env("METRO_TRANSFORM_CALL_MS", "500")))
    transform_memory_bytes: int = field(default_factory=lambda: int(_env("METRO_TRANSFORM_MEMORY_BYTES",
                                                                        str(64 * 1024 * 1024))))
    seek_lease_seconds: float = field(default_factory=lambda: float(_env("METRO_SEEK_LEASE_SECONDS", "960")))
    # The largest request body the deployed path carries (Lambda's 6 MB payload less headroom; the deploy sets
    # it); 0 = only Google's own limits.
    max_request_bytes: int = field(default_factory=lambda: int(_env("METRO_MAX_REQUEST_BYTES", "0")))
    # --- identity and access (docs/security.md) ---
    auth_mode: str = field(default_factory=_auth_mode)
    # The service admin's token (the bootstrap principal); required in keys mode, never defaulted.
    admin_key: str = field(default_factory=lambda: _env("METRO_ADMIN_KEY", ""))
    # Deployed: the SSM Parameter Store path of the stage's secrets (SecureString parameters ack-secret,
    # admin-key and push-signing-key, created by the deploy); they replace the variables above at start.
    secrets_path: str = field(default_factory=lambda: _env("METRO_SECRETS_SSM_PATH", ""))
    # How long a token's principal and a resource's ACL are cached in a warm process (at most 60 s):
    # a refreshed or revoked token, or a changed ACL, takes effect through other instances within it.
    auth_cache_seconds: float = field(default_factory=_auth_cache_seconds)
    # How many times one message may be dead-lettered (each forward adds a hop); past this it is dropped, so
    # dead-letter topics that feed each other in a cycle cannot multiply a message without end.
    dead_letter_max_hops: int = field(default_factory=lambda: int(_env("METRO_DEAD_LETTER_MAX_HOPS", "5")))
    # --- push delivery ---
    # Hostnames and CIDRs that push endpoints may use although they are not public (comma separated).
    push_allow_list: tuple[str, ...] = field(default_factory=lambda: tuple(
        e.strip() for e in _env("METRO_PUSH_ALLOW_LIST", "").split(",") if e.strip()))
    # PEM private key (RSA >= 2048) that signs push tokens; local mode generates one per process if unset.
    push_signing_key: str = field(default_factory=lambda: _env("METRO_PUSH_SIGNING_KEY", ""))
    # Metro's public base URL: the issuer of push tokens (the JWKS is at {public_url}/v1/jwks).
    public_url: str = field(default_factory=lambda: _env(
        "METRO_PUBLIC_URL", f"http://{_env('METRO_HOST', '127.0.0.1')}:{_env('METRO_PORT', '8085')}"))
    # Caps the push request timeout (normally the subscription's ack deadline); 0 = no cap.
    push_timeout_seconds: float = field(default_factory=lambda: float(_env("METRO_PUSH_TIMEOUT_SECONDS", "0")))
    # The push Lambda that event source mappings feed (deployed mode only), and their settings.
    push_function: str = field(default_factory=lambda: _env("METRO_PUSH_FUNCTION", "metro-dev-push"))
    push_batch_size: int = field(default_factory=lambda: int(_env("METRO_PUSH_BATCH_SIZE", "10")))
    push_max_concurrency: int = field(default_factory=lambda: int(_env("METRO_PUSH_MAX_CONCURRENCY", "5")))
    # The deployed push-endpoint rules in local mode too: https only, public addresses only (the allow list
    # aside), and service accounts only from push_service_accounts (docs/security.md). On by default in keys mode.
    push_strict: bool = field(default_factory=_push_strict)
    # Ports no push endpoint may use, whatever the rules (core/access/endpoints.Reserved; the AWS endpoint's too).
    own_ports: tuple[int, ...] = field(default_factory=_own_ports)
    # Service accounts that oidcToken.serviceAccountEmail may name (comma separated): ``project=email`` assigns
    # one to a project, a plain ``email`` lets any project name it in open mode only (core/access/push_identities.py).
    # Empty: any in local open mode without METRO_PUSH_STRICT, none deployed or strict.
    push_service_accounts: tuple[str, ...] = field(default_factory=lambda: _service_accounts(
        _env("METRO_PUSH_SERVICE_ACCOUNTS", "")))
    # How long resolving a push endpoint's host may take (API requests and deliveries).
    push_dns_timeout_seconds: float = field(default_factory=lambda: float(_env("METRO_PUSH_DNS_TIMEOUT_SECONDS",
                                                                                "3")))
    # --- export subscriptions (cloudStorageConfig, docs/export.md) ---
    # The S3 buckets export subscriptions may name (comma separated; fnmatch patterns such as ``acme-export-*``).
    # Deployed: only these (empty = none). Locally, empty = any existing bucket of the emulator.
    export_buckets: tuple[str, ...] = field(default_factory=lambda: tuple(
        e.strip() for e in _env("METRO_EXPORT_BUCKETS", "").split(",") if e.strip()))
    # serviceAccountEmail -> the IAM role ARN the export writer assumes (``email=arn`` pairs, comma separated);
    # an email not listed is refused.
    export_roles: tuple[tuple[str, str], ...] = field(default_factory=lambda: tuple(
        (k.strip().lower(), v.strip()) for k, _, v in (i.partition("=") for i in
                                                       _env("METRO_EXPORT_ROLES", "").split(",")) if k.strip()))
    # The export Lambda that event source mappings feed (deployed mode only).
    export_function: str = field(default_factory=lambda: _env("METRO_EXPORT_FUNCTION", "metro-dev-export"))
    # --- import topics (ingestionDataSourceSettings, docs/import.md) ---
    # The Kinesis stream ARNs, MSK cluster ARNs and S3 buckets import topics may read (comma separated; fnmatch
    # patterns such as ``arn:aws:kinesis:*:123456789012:stream/acme-*``). Deployed: only these (empty = none).
    # Locally, empty = any the emulator has.
    ingestion_sources: tuple[str, ...] = field(default_factory=lambda: tuple(
        e.strip() for e in _env("METRO_INGESTION_SOURCES", "").split(",") if e.strip()))
    # The role ARNs awsRoleArn may name (fnmatch patterns); deployed, empty = none; locally, empty = any.
    ingestion_roles: tuple[str, ...] = field(default_factory=lambda: tuple(
        e.strip() for e in _env("METRO_INGESTION_ROLES", "").split(",") if e.strip()))
    # The ingest Lambda that Kinesis and MSK event source mappings feed (deployed mode only), and their batch size.
    ingest_function: str = field(default_factory=lambda: _env("METRO_INGEST_FUNCTION", "metro-dev-ingest"))
    ingest_batch_size: int = field(default_factory=lambda: int(_env("METRO_INGEST_BATCH_SIZE", "100")))


def _service_accounts(raw: str) -> tuple[str, ...]:
    """``email`` and ``project=email`` entries (comma separated), the emails in lower case."""
    out = []
    for item in (i.strip() for i in raw.split(",")):
        project, _, email = item.rpartition("=")
        if email.strip():
            out.append(f"{project.strip()}={email.strip().lower()}" if project.strip() else email.strip().lower())
    return tuple(out)


def _pubsub_projects() -> tuple[tuple[str, str], ...]:
    """PUBSUB_PROJECT1, PUBSUB_PROJECT2, ... (up to the first one unset, as the emulator wrappers read them):
    (variable, value) pairs, each ``project,topicA:subA1:subA2,topicB`` (docs/init.md)."""
    out = []
    n = 1
    while (value := os.environ.get(f"PUBSUB_PROJECT{n}")) is not None:
        if value.strip():
            out.append((f"PUBSUB_PROJECT{n}", value))
        n += 1
    return tuple(out)


@dataclass(frozen=True)
class LocalConfig:
    """Settings of the embedded local stack only (``make run``)."""

    host: str = field(default_factory=lambda: _env("METRO_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(_env("METRO_PORT", "8085")))
    emulator_port: int = field(default_factory=lambda: int(_env("METRO_EMULATOR_PORT", "4566")))
    pump_interval: float = field(default_factory=lambda: float(_env("METRO_PUMP_INTERVAL", "0.02")))
    # How often the local push pump re-reads the list of push subscriptions.
    push_refresh: float = field(default_factory=lambda: float(_env("METRO_PUSH_REFRESH_SECONDS", "1.0")))
    # Patch the in-process moto server's SQS clock (chalicelib/local/moto_speedups.py): same behaviour, faster.
    moto_speedup: bool = field(default_factory=lambda: flag("METRO_MOTO_SPEEDUP", True))
    maintenance_interval: float = field(default_factory=lambda: float(_env("METRO_MAINTENANCE_INTERVAL", "60")))
    # How often the local dead-letter sweep runs (deployed: every minute, with the maintenance function).
    dead_letter_sweep_interval: float = field(default_factory=lambda: float(_env("METRO_DEAD_LETTER_SWEEP_SECONDS",
                                                                                 "2")))
    # The AMS dialect's HTTPS endpoint (argo-ams-library only speaks https) and where its certificate is kept.
    ams_port: int = field(default_factory=lambda: int(_env("METRO_AMS_PORT", "8443")))
    ams_cert_dir: str = field(default_factory=lambda: _env("METRO_AMS_CERT_DIR", ".metro/tls"))
    # Fault injection (chalicelib/local/faults.py): this share of AWS calls fails (throttling, 500s, timeouts).
    fault_rate: float = field(default_factory=lambda: float(_env("METRO_FAULT_RATE", "0")))
    # gRPC on the REST port (chalicelib/local/grpc_edge.py); 0 answers HTTP/2 clients with a GOAWAY instead.
    grpc: bool = field(default_factory=lambda: flag("METRO_GRPC", True))
    # Resources declared at start (docs/init.md): a YAML or JSON file, and the emulator wrappers' variables.
    init_file: str = field(default_factory=lambda: _env("METRO_INIT", "").strip())
    pubsub_projects: tuple[tuple[str, str], ...] = field(default_factory=_pubsub_projects)
    # Metro's own AWS calls reach the embedded emulator in the process, not over its HTTP port (local/inprocess.py).
    inprocess: bool = field(default_factory=lambda: flag("METRO_LOCAL_INPROCESS", True))
    # Durable local state (docs/local-state.md): the directory of the emulator's snapshot and journal ("" or
    # unset: in memory, as the test suites want; `make run` sets .metro/data). METRO_DATA_SYNC=1 adds an fsync per
    # journal record (a power loss too; without it an answered call survives the stack's kill -9, not the machine's).
    data_dir: str = field(default_factory=lambda: _env("METRO_DATA_DIR", "").strip())
    data_sync: bool = field(default_factory=lambda: flag("METRO_DATA_SYNC", False))
    # The journal is folded into a new snapshot once it holds this many bytes (and at every clean stop).
    snapshot_bytes: int = field(default_factory=lambda: int(_env("METRO_DATA_SNAPSHOT_BYTES", str(256 * 1024 * 1024))))


GRPC_UNARY_RESERVE = 64  # threads of the gRPC edge's pool that streams leave to unary calls and health checks


def _grpc_workers() -> int:
    return int(_env("METRO_GRPC_WORKERS", "256"))


@dataclass(frozen=True)
class GrpcEdgeConfig:
    """Settings of the gRPC edge's container (``python -m chalicelib.container``; infra/grpc_stack.py runs it)."""

    # The port it listens on, on every interface (the load balancer's target port).
    port: int = field(default_factory=lambda: int(_env("METRO_GRPC_PORT", "8085")))
    # Its thread pool: every call in progress holds one thread (an open StreamingPull for as long as it is open).
    workers: int = field(default_factory=_grpc_workers)
    # StreamingPulls open at once, at most: a stream beyond ends UNAVAILABLE at once (clients retry), so that the
    # rest of the pool serves unary calls and health checks (chalicelib/container/streams.py).
    max_streams: int = field(default_factory=lambda: int(_env("METRO_GRPC_MAX_STREAMS",
                                                              str(max(1, _grpc_workers() - GRPC_UNARY_RESERVE)))))
    # On SIGTERM: how long calls in progress may go on before every call still open ends UNAVAILABLE.
    grace_seconds: float = field(default_factory=lambda: float(_env("METRO_GRPC_GRACE_SECONDS", "15")))


def load() -> Config:
    return Config()


def ams_api_id() -> str:
    """METRO_AMS_API_ID: the id of the HTTP API serving the AMS dialect (set by the deploy, infra/http_api.py); a
    payload 2.0 event from that API is served as ``dialect=ams`` (chalicelib/api/front_door.py). Empty: none."""
    return _env("METRO_AMS_API_ID", "").strip()
