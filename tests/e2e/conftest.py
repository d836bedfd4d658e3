"""One real local stack per test session (per xdist worker), driven over HTTP."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import googleapiclient.discovery
import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher

from tests.stack import RunningStack, start_stack

_counter = itertools.count()


@pytest.fixture(scope="session", autouse=True)
def _no_emulator_env() -> Iterator[None]:
    """PUBSUB_EMULATOR_HOST would make google-cloud-pubsub ignore client_options (and use gRPC)."""
    mp = pytest.MonkeyPatch()
    mp.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    yield
    mp.undo()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("stack") / "metro.log")
    yield running
    running.stop()


@pytest.fixture
def project() -> str:
    return "e2e-project"


@pytest.fixture
def unique() -> str:
    """A fresh resource id per test, so tests sharing a stack never collide."""
    return f"r{next(_counter)}-{id(object()) % 100000}"


@pytest.fixture(scope="session")
def client_options(stack: RunningStack) -> dict[str, str]:
    return {"api_endpoint": stack.url}


@pytest.fixture(scope="session")
def publisher(client_options: dict[str, str]) -> Any:
    return pubsub_v1.PublisherClient(transport="rest", client_options=client_options,
                                     credentials=AnonymousCredentials())


@pytest.fixture(scope="session")
def subscriber(client_options: dict[str, str]) -> Any:
    # Not closed: SubscriberClient.close() assumes a gRPC channel.
    return pubsub_v1.SubscriberClient(transport="rest", client_options=client_options,
                                      credentials=AnonymousCredentials())


@pytest.fixture(scope="session")
def gapic(client_options: dict[str, str]) -> Any:
    """The plain GAPIC publisher: one call is one PublishRequest, no client-side batching."""
    return GapicPublisher(transport="rest", client_options=client_options, credentials=AnonymousCredentials())


@pytest.fixture(scope="session")
def discovery(client_options: dict[str, str]) -> Any:
    """google-api-python-client with its bundled static pubsub v1 discovery document."""
    return googleapiclient.discovery.build("pubsub", "v1", static_discovery=True, credentials=AnonymousCredentials(),
                                           client_options=client_options, cache_discovery=False)


@pytest.fixture
def topic(publisher: Any, unique: str) -> str:
    """A fresh topic of the test project."""
    name = f"projects/e2e-project/topics/t-{unique}"
    publisher.create_topic(name=name)
    return name


@pytest.fixture
def sub(subscriber: Any, topic: str, unique: str) -> str:
    """A fresh pull subscription of ``topic``."""
    name = f"projects/e2e-project/subscriptions/s-{unique}"
    subscriber.create_subscription(name=name, topic=topic)
    return name
