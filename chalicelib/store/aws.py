"""boto3 clients, built once per process from configuration, with botocore's own retry mode."""

from __future__ import annotations

import functools
from typing import Any

import boto3
from botocore.config import Config as BotoConfig

from chalicelib.config import Config


@functools.cache
def _session() -> boto3.session.Session:
    return boto3.session.Session()


def client(service: str, config: Config) -> Any:
    return _client(service, config.region, config.endpoint_url)


@functools.cache
def _client(service: str, region: str, endpoint_url: str | None) -> Any:
    boto_config = BotoConfig(
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=64,
        connect_timeout=5,
        read_timeout=30,
        tcp_keepalive=True,
    )
    session: Any = _session()
    return session.client(service, region_name=region, endpoint_url=endpoint_url, config=boto_config)


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints between runs)."""
    _client.cache_clear()
    _session.cache_clear()
