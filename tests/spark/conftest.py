"""Fixtures of the Spark tests: one moto server and one local[2] SparkSession for the whole run.

The AWS environment (fake credentials, the moto endpoint) is set per test with monkeypatch, so it
never leaks into other test directories run in the same process; the Spark Python workers get
theirs through ``spark.executorEnv.*`` (and the jobs pass the endpoint to their tasks anyway).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: tests that start a Spark session")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    from chalicelib.local.moto_speedups import speed_up_moto

    speed_up_moto()
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(autouse=True)
def aws_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Fake credentials and the moto endpoint for the duration of one test."""
    for k, v in FAKE_AWS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return moto_endpoint


@pytest.fixture(scope="session")
def spark(moto_endpoint: str) -> Iterator[Any]:
    """One shared local[2] session for every Spark test."""
    from spark_emr import common

    extra = {f"spark.executorEnv.{k}": v for k, v in FAKE_AWS.items()}
    extra["spark.executorEnv.AWS_ENDPOINT_URL"] = moto_endpoint
    extra["spark.sql.shuffle.partitions"] = "4"
    saved = {k: os.environ.get(k) for k in FAKE_AWS}
    os.environ.update(FAKE_AWS)  # the JVM is launched with the current environment
    try:
        session = common.get_spark("metro-tests", "local[2]", extra)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield session
    session.stop()


@pytest.fixture()
def s3(moto_endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture()
def bucket(s3: Any) -> str:
    name = f"metro-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name
