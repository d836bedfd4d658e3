"""All configuration, read from environment variables in this one module."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class Config:
    region: str = field(default_factory=lambda: _env("AWS_REGION", _env("AWS_DEFAULT_REGION", "us-east-1")))
    endpoint_url: str | None = field(default_factory=lambda: os.environ.get("AWS_ENDPOINT_URL") or None)
    resources_table: str = field(default_factory=lambda: _env("METRO_RESOURCES_TABLE", "metro-resources"))
    messages_table: str = field(default_factory=lambda: _env("METRO_MESSAGES_TABLE", "metro-messages"))
    leases_table: str = field(default_factory=lambda: _env("METRO_LEASES_TABLE", "metro-leases"))
    bucket: str = field(default_factory=lambda: _env("METRO_BUCKET", "metro-messages"))
    queue_prefix: str = field(default_factory=lambda: _env("METRO_QUEUE_PREFIX", "metro"))
    ack_secret: bytes = field(default_factory=lambda: _env("METRO_ACK_SECRET", "metro-local-secret").encode())
    # Bodies up to this many bytes travel inline in the SQS message; larger ones are read from S3.
    inline_max_bytes: int = field(default_factory=lambda: int(_env("METRO_INLINE_MAX_BYTES", str(40 * 1024))))
    # How long a pull without returnImmediately waits for a first message.
    pull_wait_seconds: float = field(default_factory=lambda: float(_env("METRO_PULL_WAIT_SECONDS", "10")))
    deployed: bool = field(default_factory=lambda: _env("METRO_MODE", "local") == "aws")
    log_level: str = field(default_factory=lambda: _env("METRO_LOG_LEVEL", "INFO"))


@dataclass(frozen=True)
class LocalConfig:
    """Settings of the embedded local stack only (``make run``)."""

    host: str = field(default_factory=lambda: _env("METRO_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(_env("METRO_PORT", "8085")))
    emulator_port: int = field(default_factory=lambda: int(_env("METRO_EMULATOR_PORT", "4566")))
    pump_interval: float = field(default_factory=lambda: float(_env("METRO_PUMP_INTERVAL", "0.02")))


def load() -> Config:
    return Config()
